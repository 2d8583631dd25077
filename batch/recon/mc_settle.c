/*
 * Copyright (C) mt5-credit
 *
 * Provider settlement files, one row at a time; see mc_settle.h.
 *
 * The generic format (MC_SETTLE_GENERIC): CSV (RFC 4180, UTF-8, LF or
 * CRLF), a header row, columns found by name (case-insensitive, spaces
 * around a name ignored, any order, unknown columns ignored):
 *
 *   id                  required; the row's own id, unique in the file
 *   type                required; payment | refund | chargeback |
 *                       chargeback_reversal | fee | payout | other
 *   payment_id          the paid payment; required for payment, refund,
 *                       chargeback and chargeback_reversal
 *   movement_id         the refund's or chargeback's id; required for
 *                       refund, chargeback and chargeback_reversal
 *   deposit_reference   optional; our deposit reference (dep_000123)
 *   currency            required; the run's currency, any case
 *   amount              required; major units, signed, exact ("500.00",
 *                       "-25.5", "5000" for JPY): payment and
 *                       chargeback_reversal > 0, refund and chargeback < 0
 *   fee                 optional; major units, empty or absent is 0
 *   created_at          required; UTC, "YYYY-MM-DDTHH:MM:SSZ" or
 *                       "YYYY-MM-DD HH:MM:SS", with "Z", "+00:00" or no
 *                       suffix (it is UTC all the same)
 *   payout_id           optional; the payout the row settled in
 *
 * A row has gross = amount, fee as given, net = amount - fee, and the key
 * our generic webhook gives the same movement, so the two join:
 *   payment               <payment_id>
 *   refund                refund:<movement_id>
 *   chargeback            chargeback:<movement_id>
 *   chargeback_reversal   chargeback:<movement_id>:reversed
 *   fee, payout, other    "" (no MT5 movement)
 *
 * For example (each record is one line, wrapped here):
 *
 *   id,type,payment_id,movement_id,deposit_reference,currency,amount,
 *     fee,created_at,payout_id
 *   r1,payment,acme-77001,,dep_000123,USD,500.00,4.50,
 *     2024-05-01T10:00:00Z,po_9
 *   r2,refund,acme-77001,rf-1,,USD,-100.00,0,2024-05-02T08:30:00Z,po_9
 *
 * Control totals (mc_settle_control_open): the same CSV with payout_id
 * (required), currency (required), amount (required, major units, signed)
 * and count (optional, a non-negative integer; absent or empty: -1).
 *
 * Every id is at most 255 bytes (a deposit reference 63) without control
 * characters, and so is a key (mt5_credit.provider_payment_id holds
 * 1..255 bytes): a longer one is an error, never cut.  Row ids are not
 * checked for uniqueness here (that takes memory in the number of rows):
 * the caller's table does it.
 */


#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc_csv.h"
#include "mc_money.h"
#include "mc_settle.h"


#define MC_SETTLE_ID_MAX     255   /* provider_payment_id's length */
#define MC_SETTLE_COLS_MAX   16
#define MC_SETTLE_SHOW_MAX   40    /* bytes of a value quoted in an error */
#define MC_SETTLE_SHOWN_SIZE (4 * MC_SETTLE_SHOW_MAX + 8)  /* escaped */


typedef enum {
    MC_SETTLE_KIND_STRIPE = 0,
    MC_SETTLE_KIND_GENERIC,
    MC_SETTLE_KIND_CONTROL
} mc_settle_kind_e;


typedef struct {
    const char  *name;
    int          required;
} mc_settle_column_t;


/* indexes into the column tables below */
enum {
    MC_ST_ID = 0, MC_ST_CURRENCY, MC_ST_GROSS, MC_ST_FEE, MC_ST_NET,
    MC_ST_CATEGORY, MC_ST_SOURCE, MC_ST_PI, MC_ST_CREATED_UTC, MC_ST_CREATED,
    MC_ST_PAYOUT, MC_ST_DEPOSIT
};

enum {
    MC_GE_ID = 0, MC_GE_TYPE, MC_GE_PAYMENT, MC_GE_MOVEMENT, MC_GE_DEPOSIT,
    MC_GE_CURRENCY, MC_GE_AMOUNT, MC_GE_FEE, MC_GE_CREATED, MC_GE_PAYOUT,
    MC_GE_WITHDRAWAL
};

enum {
    MC_CT_PAYOUT = 0, MC_CT_CURRENCY, MC_CT_AMOUNT, MC_CT_COUNT
};


static const mc_settle_column_t  mc_settle_stripe_columns[] = {
    { "balance_transaction_id", 1 },
    { "currency", 1 },
    { "gross", 1 },
    { "fee", 1 },
    { "net", 1 },
    { "reporting_category", 1 },
    { "source_id", 1 },
    { "payment_intent_id", 1 },
    { "created_utc", 0 },              /* one of the two: checked apart */
    { "created", 0 },
    { "automatic_payout_id", 0 },
    { "payment_metadata[deposit_id]", 0 },
    { NULL, 0 }
};

static const mc_settle_column_t  mc_settle_generic_columns[] = {
    { "id", 1 },
    { "type", 1 },
    { "payment_id", 1 },
    { "movement_id", 1 },
    { "deposit_reference", 0 },
    { "currency", 1 },
    { "amount", 1 },
    { "fee", 0 },
    { "created_at", 1 },
    { "payout_id", 0 },
    { "withdrawal_reference", 0 },
    { NULL, 0 }
};

static const mc_settle_column_t  mc_settle_control_columns[] = {
    { "payout_id", 1 },
    { "currency", 1 },
    { "amount", 1 },
    { "count", 0 },
    { NULL, 0 }
};


/*
 * A category as the file names it.  sign: what gross must be (1 > 0,
 * -1 < 0, 0 anything).  The key is prefix + id + suffix, id from key_col
 * (-1: no key).
 */
typedef struct {
    const char            *name;
    mc_settle_category_e   category;
    int                    sign;
    int                    key_col;
    const char            *prefix;
    const char            *suffix;
} mc_settle_type_t;


static const mc_settle_type_t  mc_settle_stripe_types[] = {
    /* the key of a charge is its PaymentIntent, else its source_id */
    { "charge", MC_SETTLE_PAYMENT, 1, MC_ST_PI, "", "" },
    { "refund", MC_SETTLE_REFUND, -1, MC_ST_SOURCE, "", "" },
    { "dispute", MC_SETTLE_CHARGEBACK, -1, MC_ST_SOURCE, "", ":withdrawn" },
    { "dispute_reversal", MC_SETTLE_CHARGEBACK_REVERSAL, 1, MC_ST_SOURCE,
      "", ":reinstated" },
    { "fee", MC_SETTLE_FEE, 0, -1, "", "" },
    { "network_cost", MC_SETTLE_FEE, 0, -1, "", "" },
    { "tax", MC_SETTLE_FEE, 0, -1, "", "" },
    { "payout", MC_SETTLE_PAYOUT, 0, -1, "", "" },
    { "payout_reversal", MC_SETTLE_PAYOUT, 0, -1, "", "" },
    { NULL, MC_SETTLE_OTHER, 0, -1, "", "" }
};

static const mc_settle_type_t  mc_settle_generic_types[] = {
    { "payment", MC_SETTLE_PAYMENT, 1, MC_GE_PAYMENT, "", "" },
    { "refund", MC_SETTLE_REFUND, -1, MC_GE_MOVEMENT, "refund:", "" },
    { "chargeback", MC_SETTLE_CHARGEBACK, -1, MC_GE_MOVEMENT,
      "chargeback:", "" },
    { "chargeback_reversal", MC_SETTLE_CHARGEBACK_REVERSAL, 1,
      MC_GE_MOVEMENT, "chargeback:", ":reversed" },
    { "fee", MC_SETTLE_FEE, 0, -1, "", "" },
    { "payout", MC_SETTLE_PAYOUT, 0, -1, "", "" },
    /* a client's withdrawal paid out: keyed by our wd_ reference, its
       movement_id is the provider's payout id */
    { "withdrawal", MC_SETTLE_WITHDRAWAL, -1, MC_GE_WITHDRAWAL, "payout:",
      "" },
    { "other", MC_SETTLE_OTHER, 0, -1, "", "" },
    { NULL, MC_SETTLE_OTHER, 0, -1, "", "" }
};


static const char  *mc_settle_category_names[] = {
    "payment", "refund", "chargeback", "chargeback_reversal", "fee",
    "payout", "other", "withdrawal"
};


struct mc_settle_reader_s {
    mc_csv_t                   *csv;
    mc_settle_kind_e            kind;
    const mc_settle_column_t   *columns;
    int                         col[MC_SETTLE_COLS_MAX];  /* -1: absent */
    size_t                      nfields;                  /* the header's */
    int                         digits;
    int                         failed;                   /* error sticks */
    char                        currency[16];
    char                        error[512];
};


static mc_settle_reader_t *mc_settle_new(FILE *f, mc_settle_kind_e kind,
    const char *currency, int digits, char *err, size_t errlen);
static int mc_settle_header(mc_settle_reader_t *r);
static int mc_settle_record(mc_settle_reader_t *r);
static int mc_settle_stripe_row(mc_settle_reader_t *r, mc_settle_row_t *row);
static int mc_settle_generic_row(mc_settle_reader_t *r,
    mc_settle_row_t *row);
static int mc_settle_control_row(mc_settle_reader_t *r,
    mc_settle_control_t *c);
static const mc_settle_type_t *mc_settle_type(const mc_settle_type_t *types,
    const char *s, size_t len);
static int mc_settle_signed(mc_settle_reader_t *r, const mc_settle_type_t *t,
    int col, int64_t v);
static int mc_settle_withdrawal(mc_settle_reader_t *r,
    const mc_settle_type_t *t, mc_settle_row_t *row, const char *movement);
static int mc_settle_key(mc_settle_reader_t *r, const mc_settle_type_t *t,
    const char *id, char *key, size_t size);
static const char *mc_settle_value(mc_settle_reader_t *r, int col,
    size_t *len);
static int mc_settle_text(mc_settle_reader_t *r, int col, char *dst,
    size_t size, int required);
static int mc_settle_currency(mc_settle_reader_t *r, int col, char *dst,
    size_t size);
static int mc_settle_amount(mc_settle_reader_t *r, int col, int optional,
    int64_t *minor);
static int mc_settle_time(mc_settle_reader_t *r, int col, int utc,
    char *dst, size_t size);
static int mc_settle_num2(const char *p);
static int mc_settle_digits(const char *s, size_t n);
static int mc_settle_sub(int64_t a, int64_t b, int64_t *r);
static int mc_settle_name_eq(const char *a, size_t alen, const char *b,
    size_t blen);
static void mc_settle_trim(const char **s, size_t *len);
static void mc_settle_show(const char *s, size_t len, char *buf,
    size_t size);
static void mc_settle_money(mc_settle_reader_t *r, int64_t v, char *buf,
    size_t size);
static int mc_settle_fail(mc_settle_reader_t *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void mc_settle_error(mc_settle_reader_t *r, char *err, size_t errlen);


mc_settle_reader_t *
mc_settle_open(FILE *f, mc_settle_format_e format, const char *currency,
    int digits, char *err, size_t errlen)
{
    if (format != MC_SETTLE_STRIPE && format != MC_SETTLE_GENERIC) {
        snprintf(err, errlen, "unknown settlement format %d", (int) format);
        return NULL;
    }

    return mc_settle_new(f, format == MC_SETTLE_STRIPE
                            ? MC_SETTLE_KIND_STRIPE : MC_SETTLE_KIND_GENERIC,
                         currency, digits, err, errlen);
}


mc_settle_reader_t *
mc_settle_control_open(FILE *f, const char *currency, int digits, char *err,
    size_t errlen)
{
    return mc_settle_new(f, MC_SETTLE_KIND_CONTROL, currency, digits, err,
                         errlen);
}


void
mc_settle_close(mc_settle_reader_t *r)
{
    if (r == NULL) {
        return;
    }

    mc_csv_close(r->csv);
    free(r);
}


int
mc_settle_next(mc_settle_reader_t *r, mc_settle_row_t *row, char *err,
    size_t errlen)
{
    int  rc;

    if (r->kind == MC_SETTLE_KIND_CONTROL && !r->failed) {
        snprintf(r->error, sizeof(r->error),
                 "mc_settle_next on a control-totals reader");
        r->failed = 1;
    }

    rc = mc_settle_record(r);

    if (rc == 1) {
        memset(row, 0, sizeof(*row));
        row->line = mc_csv_line(r->csv);

        rc = (r->kind == MC_SETTLE_KIND_STRIPE)
             ? mc_settle_stripe_row(r, row) : mc_settle_generic_row(r, row);

        rc = (rc == 0) ? 1 : -1;
    }

    if (rc == -1) {
        mc_settle_error(r, err, errlen);
    }

    return rc;
}


int
mc_settle_control_next(mc_settle_reader_t *r, mc_settle_control_t *c,
    char *err, size_t errlen)
{
    int  rc;

    if (r->kind != MC_SETTLE_KIND_CONTROL && !r->failed) {
        snprintf(r->error, sizeof(r->error),
                 "mc_settle_control_next on a settlement reader");
        r->failed = 1;
    }

    rc = mc_settle_record(r);

    if (rc == 1) {
        memset(c, 0, sizeof(*c));
        c->line = mc_csv_line(r->csv);
        rc = (mc_settle_control_row(r, c) == 0) ? 1 : -1;
    }

    if (rc == -1) {
        mc_settle_error(r, err, errlen);
    }

    return rc;
}


const char *
mc_settle_category_name(mc_settle_category_e c)
{
    if ((int) c < 0 || (int) c > (int) MC_SETTLE_WITHDRAWAL) {
        return "unknown";
    }

    return mc_settle_category_names[c];
}


int
mc_settle_format_parse(const char *name, mc_settle_format_e *f)
{
    if (name == NULL) {
        return -1;
    }

    if (strcmp(name, "stripe") == 0) {
        *f = MC_SETTLE_STRIPE;
        return 0;
    }

    if (strcmp(name, "generic") == 0) {
        *f = MC_SETTLE_GENERIC;
        return 0;
    }

    return -1;
}


static mc_settle_reader_t *
mc_settle_new(FILE *f, mc_settle_kind_e kind, const char *currency,
    int digits, char *err, size_t errlen)
{
    size_t               i, len;
    mc_settle_reader_t  *r;

    if (f == NULL) {
        snprintf(err, errlen, "no file");
        return NULL;
    }

    len = (currency != NULL) ? strlen(currency) : 0;

    if (len == 0 || len >= sizeof(r->currency)) {
        snprintf(err, errlen, "bad run currency");
        return NULL;
    }

    for (i = 0; i < len; i++) {
        if (!((currency[i] >= 'A' && currency[i] <= 'Z')
              || (currency[i] >= 'a' && currency[i] <= 'z')))
        {
            snprintf(err, errlen, "bad run currency");
            return NULL;
        }
    }

    /* what mc_decimal_to_minor can do */
    if (digits < 0 || digits > 18) {
        snprintf(err, errlen, "bad run digits %d", digits);
        return NULL;
    }

    r = calloc(1, sizeof(mc_settle_reader_t));
    if (r == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }

    r->csv = mc_csv_open(f);
    if (r->csv == NULL) {
        free(r);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }

    r->kind = kind;
    r->digits = digits;

    for (i = 0; i < len; i++) {
        r->currency[i] = (currency[i] >= 'a') ? currency[i] - 'a' + 'A'
                                              : currency[i];
    }

    switch (kind) {
    case MC_SETTLE_KIND_STRIPE:
        r->columns = mc_settle_stripe_columns;
        break;
    case MC_SETTLE_KIND_GENERIC:
        r->columns = mc_settle_generic_columns;
        break;
    default:
        r->columns = mc_settle_control_columns;
        break;
    }

    if (mc_settle_header(r) != 0) {
        mc_settle_error(r, err, errlen);
        mc_settle_close(r);
        return NULL;
    }

    return r;
}


static int
mc_settle_header(mc_settle_reader_t *r)
{
    int          rc;
    size_t       i, j, n, len, olen;
    const char  *name, *other;

    for (i = 0; i < MC_SETTLE_COLS_MAX; i++) {
        r->col[i] = -1;
    }

    rc = mc_csv_next(r->csv, r->error, sizeof(r->error));

    if (rc == -1) {
        return -1;
    }

    if (rc == 0) {
        return mc_settle_fail(r, "no header row (empty file)");
    }

    n = mc_csv_fields(r->csv);
    r->nfields = n;

    for (i = 0; i < n; i++) {
        name = mc_csv_field(r->csv, i, &len);
        mc_settle_trim(&name, &len);

        if (len == 0) {
            continue;               /* a column nobody can ask for */
        }

        /* the quadratic walk is over a header, once */
        for (j = 0; j < i; j++) {
            other = mc_csv_field(r->csv, j, &olen);
            mc_settle_trim(&other, &olen);

            if (mc_settle_name_eq(name, len, other, olen)) {
                char  shown[MC_SETTLE_SHOWN_SIZE];

                mc_settle_show(name, len, shown, sizeof(shown));
                return mc_settle_fail(r, "duplicate column \"%s\"", shown);
            }
        }

        for (j = 0; r->columns[j].name != NULL; j++) {
            if (mc_settle_name_eq(name, len, r->columns[j].name,
                                  strlen(r->columns[j].name)))
            {
                r->col[j] = (int) i;
                break;
            }
        }
    }

    for (j = 0; r->columns[j].name != NULL; j++) {
        if (r->columns[j].required && r->col[j] == -1) {
            return mc_settle_fail(r, "missing column \"%s\"",
                                  r->columns[j].name);
        }
    }

    if (r->kind == MC_SETTLE_KIND_STRIPE && r->col[MC_ST_CREATED_UTC] == -1
        && r->col[MC_ST_CREATED] == -1)
    {
        return mc_settle_fail(r, "missing column \"created_utc\" "
                              "(or \"created\")");
    }

    return 0;
}


/* the next record with the header's field count: 1, 0 at the end, -1 */
static int
mc_settle_record(mc_settle_reader_t *r)
{
    int     rc;
    size_t  n;

    if (r->failed) {
        return -1;
    }

    rc = mc_csv_next(r->csv, r->error, sizeof(r->error));

    if (rc == -1) {
        r->failed = 1;
        return -1;
    }

    if (rc == 0) {
        return 0;
    }

    n = mc_csv_fields(r->csv);

    /* a shifted column would put one field's value in another's place */
    if (n != r->nfields) {
        return mc_settle_fail(r, "%zu field%s, the header has %zu", n,
                              n == 1 ? "" : "s", r->nfields);
    }

    return 1;
}


static int
mc_settle_stripe_row(mc_settle_reader_t *r, mc_settle_row_t *row)
{
    int                      utc, time_col;
    size_t                   len;
    int64_t                  expect;
    const char              *s;
    const mc_settle_type_t  *t;
    char                     source[MC_SETTLE_ID_MAX + 1];
    char                     a[32], b[32], c[32], d[32];

    if (mc_settle_text(r, MC_ST_ID, row->row_id, sizeof(row->row_id), 1)
        != 0
        || mc_settle_currency(r, MC_ST_CURRENCY, row->currency,
                              sizeof(row->currency)) != 0
        || mc_settle_amount(r, MC_ST_GROSS, 0, &row->gross_minor) != 0
        || mc_settle_amount(r, MC_ST_FEE, 0, &row->fee_minor) != 0
        || mc_settle_amount(r, MC_ST_NET, 0, &row->net_minor) != 0)
    {
        return -1;
    }

    if (mc_settle_sub(row->gross_minor, row->fee_minor, &expect) != 0) {
        return mc_settle_fail(r, "gross - fee overflows");
    }

    if (row->net_minor != expect) {
        mc_settle_money(r, row->net_minor, a, sizeof(a));
        mc_settle_money(r, row->gross_minor, b, sizeof(b));
        mc_settle_money(r, row->fee_minor, c, sizeof(c));
        mc_settle_money(r, expect, d, sizeof(d));
        return mc_settle_fail(r, "net %s is not gross - fee (%s - %s = %s)",
                              a, b, c, d);
    }

    s = mc_settle_value(r, MC_ST_CATEGORY, &len);

    if (len == 0) {
        return mc_settle_fail(r, "column reporting_category is empty");
    }

    t = mc_settle_type(mc_settle_stripe_types, s, len);
    row->category = t->category;

    if (mc_settle_signed(r, t, MC_ST_GROSS, row->gross_minor) != 0
        || mc_settle_text(r, MC_ST_SOURCE, source, sizeof(source), 0) != 0
        || mc_settle_text(r, MC_ST_PI, row->payment_id,
                          sizeof(row->payment_id), 0) != 0
        || mc_settle_text(r, MC_ST_DEPOSIT, row->deposit_ref,
                          sizeof(row->deposit_ref), 0) != 0
        || mc_settle_text(r, MC_ST_PAYOUT, row->payout_id,
                          sizeof(row->payout_id), 0) != 0)
    {
        return -1;
    }

    if (t->category == MC_SETTLE_PAYMENT) {
        /* a charge made without a PaymentIntent is known by its ch_ */
        if (row->payment_id[0] == '\0' && source[0] == '\0') {
            return mc_settle_fail(r, "a charge without payment_intent_id "
                                  "or source_id");
        }

        if (mc_settle_key(r, t, row->payment_id[0] != '\0'
                                ? row->payment_id : source,
                          row->provider_key, sizeof(row->provider_key))
            != 0)
        {
            return -1;
        }

    } else if (t->key_col != -1) {
        if (source[0] == '\0') {
            return mc_settle_fail(r, "a %s without source_id", t->name);
        }

        if (mc_settle_key(r, t, source, row->provider_key,
                          sizeof(row->provider_key)) != 0)
        {
            return -1;
        }
    }

    /* created_utc when the report has it; created is the report's zone */
    utc = (r->col[MC_ST_CREATED_UTC] != -1);
    time_col = utc ? MC_ST_CREATED_UTC : MC_ST_CREATED;
    row->created_utc = utc;

    return mc_settle_time(r, time_col, utc, row->created,
                          sizeof(row->created));
}


static int
mc_settle_generic_row(mc_settle_reader_t *r, mc_settle_row_t *row)
{
    size_t                   len;
    const char              *s;
    const mc_settle_type_t  *t;
    char                     movement[MC_SETTLE_ID_MAX + 1];
    char                     shown[MC_SETTLE_SHOWN_SIZE];

    if (mc_settle_text(r, MC_GE_ID, row->row_id, sizeof(row->row_id), 1)
        != 0)
    {
        return -1;
    }

    s = mc_settle_value(r, MC_GE_TYPE, &len);
    t = mc_settle_type(mc_settle_generic_types, s, len);

    if (t->name == NULL) {
        mc_settle_show(s, len, shown, sizeof(shown));
        return mc_settle_fail(r, "unknown type \"%s\"", shown);
    }

    row->category = t->category;

    if (mc_settle_currency(r, MC_GE_CURRENCY, row->currency,
                           sizeof(row->currency)) != 0
        || mc_settle_amount(r, MC_GE_AMOUNT, 0, &row->gross_minor) != 0
        || mc_settle_amount(r, MC_GE_FEE, 1, &row->fee_minor) != 0)
    {
        return -1;
    }

    if (mc_settle_sub(row->gross_minor, row->fee_minor, &row->net_minor)
        != 0)
    {
        return mc_settle_fail(r, "amount - fee overflows");
    }

    if (mc_settle_signed(r, t, MC_GE_AMOUNT, row->gross_minor) != 0
        || mc_settle_text(r, MC_GE_PAYMENT, row->payment_id,
                          sizeof(row->payment_id), 0) != 0
        || mc_settle_text(r, MC_GE_MOVEMENT, movement, sizeof(movement), 0)
           != 0
        || mc_settle_text(r, MC_GE_DEPOSIT, row->deposit_ref,
                          sizeof(row->deposit_ref), 0) != 0
        || mc_settle_text(r, MC_GE_PAYOUT, row->payout_id,
                          sizeof(row->payout_id), 0) != 0)
    {
        return -1;
    }

    if (t->key_col == MC_GE_WITHDRAWAL) {
        return mc_settle_withdrawal(r, t, row, movement);
    }

    /* a refund or chargeback names both: the payment it takes back and
       its own id, which is its key */
    if (t->key_col != -1 && row->payment_id[0] == '\0') {
        return mc_settle_fail(r, "a %s without payment_id", t->name);
    }

    if (t->key_col == MC_GE_MOVEMENT) {
        if (movement[0] == '\0') {
            return mc_settle_fail(r, "a %s without movement_id", t->name);
        }

        if (mc_settle_key(r, t, movement, row->provider_key,
                          sizeof(row->provider_key)) != 0)
        {
            return -1;
        }

    } else if (t->key_col == MC_GE_PAYMENT) {
        if (mc_settle_key(r, t, row->payment_id, row->provider_key,
                          sizeof(row->provider_key)) != 0)
        {
            return -1;
        }
    }

    row->created_utc = 1;

    return mc_settle_time(r, MC_GE_CREATED, 1, row->created,
                          sizeof(row->created));
}


/*
 * A payout to a client: our withdrawal reference is its key (the MT5
 * debit's provider_payment_id is "payout:<wd_...>"), and the provider's
 * payout id, its movement_id, is kept in payment_id to be compared with
 * the one our payout record holds.
 */
static int
mc_settle_withdrawal(mc_settle_reader_t *r, const mc_settle_type_t *t,
    mc_settle_row_t *row, const char *movement)
{
    char  wd[MC_SETTLE_ID_MAX + 1];

    if (mc_settle_text(r, MC_GE_WITHDRAWAL, wd, sizeof(wd), 0) != 0) {
        return -1;
    }

    if (wd[0] == '\0' || movement[0] == '\0') {
        return mc_settle_fail(r, "a withdrawal needs withdrawal_reference "
                              "and movement_id (the payout's id)");
    }

    if (row->payment_id[0] != '\0') {
        return mc_settle_fail(r, "a withdrawal has no payment_id; its "
                              "payout's id is movement_id");
    }

    snprintf(row->payment_id, sizeof(row->payment_id), "%s", movement);

    if (mc_settle_key(r, t, wd, row->provider_key, sizeof(row->provider_key))
        != 0)
    {
        return -1;
    }

    row->created_utc = 1;

    return mc_settle_time(r, MC_GE_CREATED, 1, row->created,
                          sizeof(row->created));
}


static int
mc_settle_control_row(mc_settle_reader_t *r, mc_settle_control_t *c)
{
    size_t       len;
    const char  *s;
    char         shown[MC_SETTLE_SHOWN_SIZE];

    if (mc_settle_text(r, MC_CT_PAYOUT, c->payout_id, sizeof(c->payout_id),
                       1) != 0
        || mc_settle_currency(r, MC_CT_CURRENCY, c->currency,
                              sizeof(c->currency)) != 0
        || mc_settle_amount(r, MC_CT_AMOUNT, 0, &c->amount_minor) != 0)
    {
        return -1;
    }

    s = mc_settle_value(r, MC_CT_COUNT, &len);

    if (len == 0) {
        c->count = -1;
        return 0;
    }

    /* 18 digits cannot overflow; a sign or a dot is not a count */
    if (len > 18 || mc_settle_digits(s, len) != 0) {
        mc_settle_show(s, len, shown, sizeof(shown));
        return mc_settle_fail(r, "bad count \"%s\"", shown);
    }

    c->count = 0;
    while (len-- > 0) {
        c->count = c->count * 10 + (*s++ - '0');
    }

    return 0;
}


/* the type named s; the table's NULL entry if none */
static const mc_settle_type_t *
mc_settle_type(const mc_settle_type_t *types, const char *s, size_t len)
{
    for ( /* void */ ; types->name != NULL; types++) {
        if (strlen(types->name) == len && memcmp(types->name, s, len) == 0) {
            break;
        }
    }

    return types;
}


/* a sign that contradicts the category is a misread file, not money */
static int
mc_settle_signed(mc_settle_reader_t *r, const mc_settle_type_t *t, int col,
    int64_t v)
{
    char  buf[32];

    if ((t->sign > 0 && v <= 0) || (t->sign < 0 && v >= 0)) {
        mc_settle_money(r, v, buf, sizeof(buf));
        return mc_settle_fail(r, "a %s with %s %s (must be %s)", t->name,
                              r->columns[col].name, buf,
                              t->sign > 0 ? "positive" : "negative");
    }

    return 0;
}


static int
mc_settle_key(mc_settle_reader_t *r, const mc_settle_type_t *t,
    const char *id, char *key, size_t size)
{
    int   n;
    char  shown[MC_SETTLE_SHOWN_SIZE];

    n = snprintf(key, size, "%s%s%s", t->prefix, id, t->suffix);

    /* a longer key cannot be in mt5_credit: say so, do not cut it */
    if (n < 0 || n > MC_SETTLE_ID_MAX || (size_t) n >= size) {
        mc_settle_show(key, strlen(key), shown, sizeof(shown));
        key[0] = '\0';
        return mc_settle_fail(r, "key \"%s\" is longer than %d bytes", shown,
                              MC_SETTLE_ID_MAX);
    }

    return 0;
}


/* the row's value in a column; "" if the header has no such column */
static const char *
mc_settle_value(mc_settle_reader_t *r, int col, size_t *len)
{
    if (r->col[col] == -1) {
        *len = 0;
        return "";
    }

    return mc_csv_field(r->csv, (size_t) r->col[col], len);
}


/* an id: whole or an error, never cut; no control characters */
static int
mc_settle_text(mc_settle_reader_t *r, int col, char *dst, size_t size,
    int required)
{
    size_t       len, i, max;
    const char  *s;

    s = mc_settle_value(r, col, &len);

    if (len == 0 && required) {
        return mc_settle_fail(r, "column %s is empty", r->columns[col].name);
    }

    max = size - 1;
    if (max > MC_SETTLE_ID_MAX) {
        max = MC_SETTLE_ID_MAX;
    }

    if (len > max) {
        return mc_settle_fail(r, "column %s is too long (%zu bytes, at most "
                              "%zu)", r->columns[col].name, len, max);
    }

    for (i = 0; i < len; i++) {
        if ((unsigned char) s[i] < 0x20 || s[i] == 0x7f) {
            return mc_settle_fail(r, "control character in column %s",
                                  r->columns[col].name);
        }
    }

    memcpy(dst, s, len);
    dst[len] = '\0';

    return 0;
}


static int
mc_settle_currency(mc_settle_reader_t *r, int col, char *dst, size_t size)
{
    size_t       len, i;
    const char  *s;
    char         upper[MC_SETTLE_SHOW_MAX];
    char         shown[MC_SETTLE_SHOWN_SIZE];

    s = mc_settle_value(r, col, &len);

    if (len == 0) {
        return mc_settle_fail(r, "no currency, this run reconciles %s",
                              r->currency);
    }

    if (len == strlen(r->currency)) {
        for (i = 0; i < len; i++) {
            if (((s[i] >= 'a' && s[i] <= 'z') ? s[i] - 'a' + 'A' : s[i])
                != r->currency[i])
            {
                break;
            }
        }

        if (i == len && len < size) {
            memcpy(dst, r->currency, len + 1);
            return 0;
        }
    }

    /* named as the row would have been taken: upper case */
    for (i = 0; i < len && i < MC_SETTLE_SHOW_MAX; i++) {
        upper[i] = (s[i] >= 'a' && s[i] <= 'z') ? s[i] - 'a' + 'A' : s[i];
    }

    mc_settle_show(upper, i, shown, sizeof(shown));

    if (len > i) {
        strcat(shown, "...");
    }

    return mc_settle_fail(r, "currency %s, this run reconciles %s", shown,
                          r->currency);
}


/* exact decimal text -> minor units of the run's currency, or an error */
static int
mc_settle_amount(mc_settle_reader_t *r, int col, int optional,
    int64_t *minor)
{
    size_t        len;
    const char   *s;
    mc_decimal_t  d;
    char          shown[MC_SETTLE_SHOWN_SIZE];

    s = mc_settle_value(r, col, &len);

    if (len == 0 && optional) {
        *minor = 0;
        return 0;
    }

    if (mc_decimal_parse(s, len, &d) != 0
        || mc_decimal_to_minor(d, r->digits, minor) != 0)
    {
        mc_settle_show(s, len, shown, sizeof(shown));
        return mc_settle_fail(r, "bad amount \"%s\" in column %s", shown,
                              r->columns[col].name);
    }

    return 0;
}


/*
 * "YYYY-MM-DD HH:MM:SS" or "YYYY-MM-DDTHH:MM:SS", for a UTC column also
 * with "Z" or "+00:00"; written as "YYYY-MM-DD HH:MM:SS".  Every field is
 * checked against its range: PostgreSQL would take "2024-02-30" to be
 * an error too, but only after the whole file was read.
 */
static int
mc_settle_time(mc_settle_reader_t *r, int col, int utc, char *dst,
    size_t size)
{
    int          year, month, day, hour, minute, second, mdays;
    size_t       len, i;
    const char  *s;
    char         shown[MC_SETTLE_SHOWN_SIZE];

    static const char  form[] = "dddd-dd-ddTdd:dd:dd";
    static const int   days[] = {
        31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31
    };

    s = mc_settle_value(r, col, &len);

    if (len < 19 || size < 20) {
        goto bad;
    }

    for (i = 0; i < 19; i++) {
        if (form[i] == 'd') {
            if (s[i] < '0' || s[i] > '9') {
                goto bad;
            }

        } else if (form[i] == 'T') {
            if (s[i] != 'T' && s[i] != ' ') {
                goto bad;
            }

        } else if (s[i] != form[i]) {
            goto bad;
        }
    }

    if (len != 19
        && !(utc && len == 20 && s[19] == 'Z')
        && !(utc && len == 25 && memcmp(s + 19, "+00:00", 6) == 0))
    {
        goto bad;
    }

    year = mc_settle_num2(s) * 100 + mc_settle_num2(s + 2);
    month = mc_settle_num2(s + 5);
    day = mc_settle_num2(s + 8);
    hour = mc_settle_num2(s + 11);
    minute = mc_settle_num2(s + 14);
    second = mc_settle_num2(s + 17);

    /* no settlement predates card networks' files, let alone 1970 */
    if (year < 1970 || month < 1 || month > 12) {
        goto bad;
    }

    mdays = days[month - 1];

    if (month == 2
        && (year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)))
    {
        mdays = 29;
    }

    /* no leap second: Stripe never writes one, and :60 is a typo */
    if (day < 1 || day > mdays || hour > 23 || minute > 59 || second > 59) {
        goto bad;
    }

    memcpy(dst, s, 19);
    dst[10] = ' ';
    dst[19] = '\0';

    return 0;

bad:

    mc_settle_show(s, len, shown, sizeof(shown));
    return mc_settle_fail(r, "bad time \"%s\" in column %s", shown,
                          r->columns[col].name);
}


/* two digits, already checked to be digits */
static int
mc_settle_num2(const char *p)
{
    return (p[0] - '0') * 10 + (p[1] - '0');
}


static int
mc_settle_digits(const char *s, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }
    }

    return 0;
}


/* a - b, or -1 where it would overflow */
static int
mc_settle_sub(int64_t a, int64_t b, int64_t *r)
{
    if ((b > 0 && a < INT64_MIN + b) || (b < 0 && a > INT64_MAX + b)) {
        return -1;
    }

    *r = a - b;
    return 0;
}


/* ASCII case-insensitive: the C library's would follow the locale */
static int
mc_settle_name_eq(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t  i;
    int     x, y;

    if (alen != blen) {
        return 0;
    }

    for (i = 0; i < alen; i++) {
        x = (unsigned char) a[i];
        y = (unsigned char) b[i];
        x = (x >= 'A' && x <= 'Z') ? x - 'A' + 'a' : x;
        y = (y >= 'A' && y <= 'Z') ? y - 'A' + 'a' : y;

        if (x != y) {
            return 0;
        }
    }

    return 1;
}


static void
mc_settle_trim(const char **s, size_t *len)
{
    while (*len > 0 && (**s == ' ' || **s == '\t')) {
        (*s)++;
        (*len)--;
    }

    while (*len > 0 && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t')) {
        (*len)--;
    }
}


/*
 * A value from the file for an error message: the first
 * MC_SETTLE_SHOW_MAX bytes, control bytes, quote and backslash escaped,
 * "..." if there was more.  buf: MC_SETTLE_SHOWN_SIZE.
 */
static void
mc_settle_show(const char *s, size_t len, char *buf, size_t size)
{
    size_t          i, o;
    unsigned char   ch;

    static const char  hex[] = "0123456789abcdef";

    o = 0;

    for (i = 0; i < len && i < MC_SETTLE_SHOW_MAX; i++) {
        ch = (unsigned char) s[i];

        if (o + 5 > size) {
            break;
        }

        if (ch < 0x20 || ch == 0x7f) {
            buf[o++] = '\\';
            buf[o++] = 'x';
            buf[o++] = hex[ch >> 4];
            buf[o++] = hex[ch & 0xf];

        } else if (ch == '"' || ch == '\\') {
            buf[o++] = '\\';
            buf[o++] = (char) ch;

        } else {
            buf[o++] = (char) ch;
        }
    }

    if (i < len && o + 4 <= size) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }

    buf[o] = '\0';
}


static void
mc_settle_money(mc_settle_reader_t *r, int64_t v, char *buf, size_t size)
{
    if (mc_minor_format(v, r->digits, buf, size) < 0) {
        snprintf(buf, size, "?");
    }
}


static int
mc_settle_fail(mc_settle_reader_t *r, const char *fmt, ...)
{
    int      n;
    va_list  args;

    n = snprintf(r->error, sizeof(r->error), "line %ld: ",
                 mc_csv_line(r->csv));

    if (n > 0 && (size_t) n < sizeof(r->error)) {
        va_start(args, fmt);
        vsnprintf(r->error + n, sizeof(r->error) - (size_t) n, fmt, args);
        va_end(args);
    }

    r->failed = 1;
    return -1;
}


static void
mc_settle_error(mc_settle_reader_t *r, char *err, size_t errlen)
{
    r->failed = 1;

    if (err != NULL && errlen > 0) {
        snprintf(err, errlen, "%s", r->error);
    }
}
