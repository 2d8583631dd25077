/*
 * Copyright (C) mt5-credit
 *
 * batch/recon/mc_settle.c and batch/recon/mc_csv.c: settlement files, one row at a
 * time, exactly.
 * Proves impossible: a column taken by position instead of by name; a
 * quoted comma, quote or newline splitting a field; a BOM glued to the
 * first column name; a file cut mid-record, or with an open quote, read
 * as complete; a short or long record read with its values shifted; an
 * amount rounded ("12.345" USD), guessed ("12.3x", "1e3") or wrapped
 * around (19 digits, INT64 overflow); a row of another currency counted
 * in the run's; net that is not gross - fee; a refund with a positive
 * amount; a Stripe or generic movement keyed differently from its
 * webhook credit; an id or key cut to fit; an impossible date; a missing
 * required column noticed only row by row; an error forgotten on the
 * next call.
 * Output is TAP; exit status 0 only if every test passes.
 *
 *   mc_settle_test
 */


#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc_csv.h"
#include "mc_settle.h"


#define MAX_ROWS  16

/* a Stripe itemized report's columns we read, in Stripe's order */
#define SH  "balance_transaction_id,created_utc,currency,gross,fee,net," \
            "reporting_category,source_id,payment_intent_id,"             \
            "automatic_payout_id,payment_metadata[deposit_id]\n"

#define GH  "id,type,payment_id,movement_id,deposit_reference,currency," \
            "amount,fee,created_at,payout_id\n"


typedef struct {
    int              n;          /* rows read; -1 error; -2 open failed */
    mc_settle_row_t  rows[MAX_ROWS];
    char             err[512];
} result_t;


static int       tests, failed;
static result_t  res;


static void ok(int cond, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static FILE *file_of(const char *text, size_t len);
static void run(mc_settle_format_e fmt, const char *cur, int digits,
    const char *text, size_t len);
static void runs(mc_settle_format_e fmt, const char *text);
static void fails(mc_settle_format_e fmt, const char *cur, int digits,
    const char *text, const char *want, const char *what);
static void stripe_fails(const char *text, const char *want,
    const char *what);
static void stripe_key(const char *cat, const char *gross,
    const char *source, const char *pi, mc_settle_category_e want,
    const char *key);
static void generic_key(const char *type, const char *amount,
    mc_settle_category_e want, const char *key);
static void stripe_time(const char *column, const char *value,
    const char *want);
static void csv_records(void);
static void stripe_columns(void);
static void stripe_categories(void);
static void generic_rows(void);
static int control_first(const char *text, const char *cur, int digits,
    mc_settle_control_t *c, char *err, size_t errlen);
static void control_totals(void);
static void amounts(void);
static void times(void);
static void lengths(void);
static void many_rows(void);


static void
ok(int cond, const char *fmt, ...)
{
    va_list  args;

    tests++;

    if (!cond) {
        failed++;
    }

    printf("%sok %d - ", cond ? "" : "not ", tests);
    va_start(args, fmt);
    vprintf(fmt, args);
    va_end(args);
    printf("\n");
}


/* tmpfile rather than fmemopen: NUL bytes and an empty file are files too */
static FILE *
file_of(const char *text, size_t len)
{
    FILE  *f;

    f = tmpfile();
    if (f == NULL || fwrite(text, 1, len, f) != len || fseek(f, 0, SEEK_SET))
    {
        perror("tmpfile");
        exit(2);
    }

    return f;
}


/* every row of text into res, or the error that ended it */
static void
run(mc_settle_format_e fmt, const char *cur, int digits, const char *text,
    size_t len)
{
    int                  rc;
    FILE                *f;
    mc_settle_row_t      row;
    mc_settle_reader_t  *r;

    memset(&res, 0, sizeof(res));
    f = file_of(text, len);

    r = mc_settle_open(f, fmt, cur, digits, res.err, sizeof(res.err));

    if (r == NULL) {
        res.n = -2;
        fclose(f);
        return;
    }

    while ((rc = mc_settle_next(r, &row, res.err, sizeof(res.err))) == 1) {
        if (res.n < MAX_ROWS) {
            res.rows[res.n] = row;
        }
        res.n++;
    }

    if (rc == -1) {
        res.n = -1;
    }

    mc_settle_close(r);
    fclose(f);
}


static void
runs(mc_settle_format_e fmt, const char *text)
{
    run(fmt, "USD", 2, text, strlen(text));
}


static void
fails(mc_settle_format_e fmt, const char *cur, int digits, const char *text,
    const char *want, const char *what)
{
    run(fmt, cur, digits, text, strlen(text));

    ok(res.n < 0 && strcmp(res.err, want) == 0,
       "%s: \"%s\" (got %d, \"%s\")", what, want, res.n, res.err);
}


static void
stripe_fails(const char *text, const char *want, const char *what)
{
    fails(MC_SETTLE_STRIPE, "USD", 2, text, want, what);
}


static void
stripe_key(const char *cat, const char *gross, const char *source,
    const char *pi, mc_settle_category_e want, const char *key)
{
    char  text[1024];

    snprintf(text, sizeof(text),
             SH "txn_1,2024-05-01 10:00:00,usd,%s,0.00,%s,%s,%s,%s,,\n",
             gross, gross, cat, source, pi);
    runs(MC_SETTLE_STRIPE, text);

    ok(res.n == 1 && res.rows[0].category == want
       && strcmp(res.rows[0].provider_key, key) == 0,
       "stripe %s (source \"%s\", pi \"%s\") is %s keyed \"%s\" "
       "(got %d %s \"%s\" %s)", cat, source, pi,
       mc_settle_category_name(want), key, res.n,
       mc_settle_category_name(res.rows[0].category),
       res.rows[0].provider_key, res.err);
}


static void
generic_key(const char *type, const char *amount, mc_settle_category_e want,
    const char *key)
{
    char  text[1024];

    snprintf(text, sizeof(text),
             GH "r1,%s,acme-77001,mv-9,,USD,%s,,2024-05-01T10:00:00Z,\n",
             type, amount);
    runs(MC_SETTLE_GENERIC, text);

    ok(res.n == 1 && res.rows[0].category == want
       && strcmp(res.rows[0].provider_key, key) == 0
       && strcmp(res.rows[0].payment_id, "acme-77001") == 0,
       "generic %s is %s keyed \"%s\" like the webhook (got %d %s \"%s\" %s)",
       type, mc_settle_category_name(want), key, res.n,
       mc_settle_category_name(res.rows[0].category),
       res.rows[0].provider_key, res.err);
}


/* a Stripe row whose time column is `column` holding value */
static void
stripe_time(const char *column, const char *value, const char *want)
{
    char  text[1024], err[128];

    snprintf(text, sizeof(text),
             "balance_transaction_id,%s,currency,gross,fee,net,"
             "reporting_category,source_id,payment_intent_id\n"
             "txn_1,%s,USD,1.00,0,1.00,charge,ch_1,pi_1\n", column, value);
    runs(MC_SETTLE_STRIPE, text);

    if (want != NULL) {
        ok(res.n == 1 && strcmp(res.rows[0].created, want) == 0
           && res.rows[0].created_utc == (strcmp(column, "created_utc") == 0),
           "%s \"%s\" is \"%s\" (got %d \"%s\" %s)", column, value, want,
           res.n, res.rows[0].created, res.err);
        return;
    }

    snprintf(err, sizeof(err), "line 2: bad time \"%s\" in column %s",
             value, column);
    ok(res.n == -1 && strcmp(res.err, err) == 0, "%s \"%s\" refused (%s)",
       column, value, res.err);
}


/* the record layer alone: what a field is, where a record starts */
static void
csv_records(void)
{
    int           rc;
    FILE         *f;
    size_t        len;
    mc_csv_t     *c;
    const char   *v;
    char          err[256];

    static const char  text[] =
        "\xef\xbb\xbf" "a,b,c\r\n"
        "\r\n"
        "\"x,y\",\"say \"\"hi\"\"\",\"two\r\nlines\nthree\"\r\n"
        "\n"
        ",,\n"
        "last,\"\",end\n";

    static const char  late_bom[] = "a\n\xef\xbb\xbf" "b\n";

    f = file_of(text, sizeof(text) - 1);
    c = mc_csv_open(f);

    ok(mc_csv_next(c, err, sizeof(err)) == 1 && mc_csv_fields(c) == 3
       && strcmp(mc_csv_field(c, 0, &len), "a") == 0 && len == 1
       && strcmp(mc_csv_field(c, 2, &len), "c") == 0 && mc_csv_line(c) == 1,
       "csv: BOM skipped (\"a\", not BOM + \"a\"), CRLF ends the record");

    rc = mc_csv_next(c, err, sizeof(err));
    ok(rc == 1 && mc_csv_fields(c) == 3 && mc_csv_line(c) == 3,
       "csv: a blank CRLF line skipped, the record starts on line 3 (%ld)",
       mc_csv_line(c));

    v = mc_csv_field(c, 0, &len);
    ok(len == 3 && strcmp(v, "x,y") == 0, "csv: a quoted comma is data");

    v = mc_csv_field(c, 1, &len);
    ok(strcmp(v, "say \"hi\"") == 0, "csv: \"\" inside quotes is a quote");

    v = mc_csv_field(c, 2, &len);
    ok(strcmp(v, "two\r\nlines\nthree") == 0 && len == 16,
       "csv: CRLF and LF inside quotes are data, kept as they are");

    rc = mc_csv_next(c, err, sizeof(err));
    ok(rc == 1 && mc_csv_fields(c) == 3 && mc_csv_line(c) == 7
       && strcmp(mc_csv_field(c, 1, &len), "") == 0,
       "csv: the lines inside quotes are counted: \",,\" is line 7 (%ld), "
       "three empty fields", mc_csv_line(c));

    ok(mc_csv_next(c, err, sizeof(err)) == 1
       && strcmp(mc_csv_field(c, 1, &len), "") == 0 && len == 0
       && strcmp(mc_csv_field(c, 2, &len), "end") == 0,
       "csv: a quoted empty field");

    ok(mc_csv_next(c, err, sizeof(err)) == 0
       && mc_csv_next(c, err, sizeof(err)) == 0,
       "csv: the end of a complete file, twice");

    mc_csv_close(c);
    fclose(f);

    f = file_of("\xef\xbb\xbf", 3);
    c = mc_csv_open(f);
    ok(mc_csv_next(c, err, sizeof(err)) == 0, "csv: a BOM alone is empty");
    mc_csv_close(c);
    fclose(f);

    f = file_of(late_bom, sizeof(late_bom) - 1);
    c = mc_csv_open(f);
    ok(mc_csv_next(c, err, sizeof(err)) == 1
       && mc_csv_next(c, err, sizeof(err)) == 1
       && strcmp(mc_csv_field(c, 0, &len), "\xef\xbb\xbf" "b") == 0,
       "csv: a BOM is skipped only at the start of the file");
    mc_csv_close(c);
    fclose(f);
}


static void
stripe_columns(void)
{
    mc_settle_row_t  *row;

    static const char  nul[] =
        SH "txn_1,2024-05-01 10:00:00,USD,1.00,0,1.00,charge,ch\0_1,pi_1,,\n";

    /* reordered, renamed in case, padded, with columns we do not read */
    runs(MC_SETTLE_STRIPE,
         " Reporting_Category ,description,NET,payment_metadata[deposit_id],"
         "customer_facing_amount,source_id,CURRENCY,fee,gross,created_utc,"
         "automatic_payout_id,payment_intent_id,balance_transaction_id\n"
         "charge,\"Deposit, \"\"gold\"\" plan\nsecond line\",97.10,"
         "dep_000123,\"1,000.00\",ch_1,usd,2.90,100.00,"
         "2024-05-01 10:00:00,po_1,pi_1,txn_1\n");

    row = &res.rows[0];

    ok(res.n == 1, "stripe: columns found by name in any order, unknown "
       "ones ignored (%d, %s)", res.n, res.err);

    ok(row->gross_minor == 10000 && row->fee_minor == 290
       && row->net_minor == 9710,
       "stripe: gross, fee, net from their own columns (%" PRId64 " %"
       PRId64 " %" PRId64 ")", row->gross_minor, row->fee_minor,
       row->net_minor);

    ok(strcmp(row->row_id, "txn_1") == 0
       && strcmp(row->payment_id, "pi_1") == 0
       && strcmp(row->deposit_ref, "dep_000123") == 0
       && strcmp(row->payout_id, "po_1") == 0
       && strcmp(row->provider_key, "pi_1") == 0,
       "stripe: ids from their own columns, a quoted comma/quote/newline "
       "in another column shifts nothing");

    ok(strcmp(row->currency, "USD") == 0 && row->category == MC_SETTLE_PAYMENT
       && strcmp(row->created, "2024-05-01 10:00:00") == 0
       && row->created_utc == 1 && row->line == 2,
       "stripe: currency upper-cased, created_utc, line 2");

    runs(MC_SETTLE_STRIPE,
         "\xef\xbb\xbf" "balance_transaction_id,created_utc,currency,gross,"
         "fee,net,reporting_category,source_id,payment_intent_id\r\n"
         "\r\n"
         "txn_1,2024-05-01 10:00:00,USD,5.00,0.30,4.70,charge,ch_1,pi_1\r\n"
         "txn_2,2024-05-01 10:00:01,USD,-5.00,0.00,-5.00,refund,re_1,pi_1"
         "\r\n");

    ok(res.n == 2 && res.rows[0].line == 3 && res.rows[1].line == 4
       && strcmp(res.rows[0].row_id, "txn_1") == 0
       && strcmp(res.rows[1].payout_id, "") == 0
       && strcmp(res.rows[1].deposit_ref, "") == 0,
       "stripe: BOM, CRLF, a blank line; optional columns absent are \"\" "
       "(%d, %s)", res.n, res.err);

    runs(MC_SETTLE_STRIPE, SH);
    ok(res.n == 0, "stripe: a header alone is a complete file of no rows");

    fails(MC_SETTLE_STRIPE, "USD", 2, "", "line 1: no header row (empty file)",
          "an empty file");

    stripe_fails("balance_transaction_id,created_utc,currency,fee,net,"
                 "reporting_category,source_id,payment_intent_id\n",
                 "line 1: missing column \"gross\"",
                 "a missing required column is named");

    stripe_fails("balance_transaction_id,currency,gross,fee,net,"
                 "reporting_category,source_id,payment_intent_id\n",
                 "line 1: missing column \"created_utc\" (or \"created\")",
                 "no time column");

    stripe_fails("balance_transaction_id,created_utc,currency,gross,fee,net,"
                 "reporting_category,source_id,payment_intent_id, GROSS\n",
                 "line 1: duplicate column \"GROSS\"",
                 "a duplicate column (case and spaces aside)");

    fails(MC_SETTLE_GENERIC, "USD", 2,
          "id,type,payment_id,movement_id,currency,amount\n",
          "line 1: missing column \"created_at\"",
          "generic: a missing required column is named");

    stripe_fails(SH
                 "txn_1,2024-05-01 10:00:00,USD,1.00,0,1.00,charge,ch_1,pi_1,"
                 ",\n"
                 "txn_2,2024-05-01 10:00:00,USD,1.00,0,1.00,charge,ch_2,pi_2"
                 "\n",
                 "line 3: 9 fields, the header has 11",
                 "a short record fails with its line");

    stripe_fails(SH
                 "txn_1,2024-05-01 10:00:00,USD,1.00,0,1.00,charge,ch_1,pi_1,"
                 ",,extra\n",
                 "line 2: 12 fields, the header has 11",
                 "a long record fails with its line");

    stripe_fails(SH
                 "txn_1,2024-05-01 10:00:00,USD,1.00,0,1.00,charge,ch_1,pi_1,"
                 ",\n"
                 "txn_2,2024-05-01 10:00:00,USD,1.00,0,1.00,charge,ch_2,pi_2,"
                 ",",
                 "line 3: truncated record (no line end)",
                 "a file cut at the end of a record fails with its line");

    stripe_fails(SH
                 "txn_1,2024-05-01 10:00:00,USD,1.00,0,1.0",
                 "line 2: truncated record (no line end)",
                 "a file cut mid-record fails with its line");

    stripe_fails(SH
                 "txn_1,2024-05-01 10:00:00,USD,1.00,0,1.00,charge,ch_1,pi_1,"
                 ",\"dep_1\n,\n\n",
                 "line 2: truncated record (open quote)",
                 "EOF in an open quote fails with the line it opened on");

    stripe_fails(SH
                 "txn_1,2024-05-01 10:00:00,USD,1.00,0,1.00,charge,ch_1,pi_1,"
                 ",\r",
                 "line 2: truncated record (no line end)",
                 "a file cut between CR and LF");

    stripe_fails(SH "txn_\"1\",2024-05-01 10:00:00,USD,1.00,0,1.00,charge,"
                 "ch_1,pi_1,,\n",
                 "line 2: quote inside unquoted field 1",
                 "a quote inside an unquoted field");

    stripe_fails(SH "\"txn_1\"x,2024-05-01 10:00:00,USD,1.00,0,1.00,charge,"
                 "ch_1,pi_1,,\n",
                 "line 2: text after a closing quote in field 1",
                 "text after a closing quote");

    stripe_fails(SH "txn_1\r,2024-05-01 10:00:00,USD,1.00,0,1.00,charge,"
                 "ch_1,pi_1,,\n",
                 "line 2: CR without LF", "a CR without LF");

    run(MC_SETTLE_STRIPE, "USD", 2, nul, sizeof(nul) - 1);
    ok(res.n == -1 && strcmp(res.err, "line 2: NUL byte in field 8") == 0,
       "a NUL byte fails (%s)", res.err);
}


static void
stripe_categories(void)
{
    stripe_key("charge", "100.00", "ch_1", "pi_1", MC_SETTLE_PAYMENT, "pi_1");
    stripe_key("charge", "100.00", "ch_1", "", MC_SETTLE_PAYMENT, "ch_1");
    stripe_key("refund", "-25.00", "re_1", "pi_1", MC_SETTLE_REFUND, "re_1");
    stripe_key("dispute", "-100.00", "du_1", "pi_1", MC_SETTLE_CHARGEBACK,
               "du_1:withdrawn");
    stripe_key("dispute_reversal", "100.00", "du_1", "pi_1",
               MC_SETTLE_CHARGEBACK_REVERSAL, "du_1:reinstated");
    stripe_key("fee", "-1.00", "txn_9", "", MC_SETTLE_FEE, "");
    stripe_key("network_cost", "-0.10", "txn_9", "", MC_SETTLE_FEE, "");
    stripe_key("tax", "-0.20", "txn_9", "", MC_SETTLE_FEE, "");
    stripe_key("payout", "-500.00", "po_1", "", MC_SETTLE_PAYOUT, "");
    stripe_key("payout_reversal", "500.00", "po_1", "", MC_SETTLE_PAYOUT, "");
    stripe_key("transfer", "-3.00", "tr_1", "", MC_SETTLE_OTHER, "");
    stripe_key("refund_failure", "25.00", "re_1", "pi_1", MC_SETTLE_OTHER, "");

    stripe_fails(SH "txn_1,2024-05-01 10:00:00,USD,25.00,0,25.00,refund,"
                 "re_1,pi_1,,\n",
                 "line 2: a refund with gross 25.00 (must be negative)",
                 "a refund with a positive gross");

    stripe_fails(SH "txn_1,2024-05-01 10:00:00,USD,-5.00,0,-5.00,charge,"
                 "ch_1,pi_1,,\n",
                 "line 2: a charge with gross -5.00 (must be positive)",
                 "a charge with a negative gross");

    stripe_fails(SH "txn_1,2024-05-01 10:00:00,USD,0.00,0,0,charge,"
                 "ch_1,pi_1,,\n",
                 "line 2: a charge with gross 0.00 (must be positive)",
                 "a charge of zero");

    stripe_fails(SH "txn_1,2024-05-01 10:00:00,USD,100.00,0,100.00,dispute,"
                 "du_1,pi_1,,\n",
                 "line 2: a dispute with gross 100.00 (must be negative)",
                 "a dispute with a positive gross");

    stripe_fails(SH "txn_1,2024-05-01 10:00:00,USD,-100.00,0,-100.00,"
                 "dispute_reversal,du_1,pi_1,,\n",
                 "line 2: a dispute_reversal with gross -100.00 (must be "
                 "positive)", "a dispute reversal with a negative gross");

    stripe_fails(SH "txn_1,2024-05-01 10:00:00,USD,-25.00,0,-25.00,refund,"
                 ",pi_1,,\n",
                 "line 2: a refund without source_id", "a refund without key");

    stripe_fails(SH "txn_1,2024-05-01 10:00:00,USD,25.00,0,25.00,charge,"
                 ",,,\n",
                 "line 2: a charge without payment_intent_id or source_id",
                 "a charge without key");

    stripe_fails(SH ",2024-05-01 10:00:00,USD,25.00,0,25.00,charge,"
                 "ch_1,pi_1,,\n",
                 "line 2: column balance_transaction_id is empty",
                 "a row without id");

    stripe_fails(SH "txn_1,2024-05-01 10:00:00,USD,25.00,0,25.00,,"
                 "ch_1,pi_1,,\n",
                 "line 2: column reporting_category is empty",
                 "a row without category");

    stripe_fails(SH "txn_1,2024-05-01 10:00:00,USD,-25.00,0,-25.00,refund,"
                 "\"re_1\n\",pi_1,,\n",
                 "line 2: control character in column source_id",
                 "a newline inside an id");

    stripe_fails(SH "txn_1,2024-05-01 10:00:00,USD,-25.00,0,-25.00,refund,"
                 "re_1,pi_1,po\t1,\n",
                 "line 2: control character in column automatic_payout_id",
                 "a tab inside an id");
}


static void
generic_rows(void)
{
    mc_settle_row_t  *row;

    generic_key("payment", "500.00", MC_SETTLE_PAYMENT, "acme-77001");
    generic_key("refund", "-100.00", MC_SETTLE_REFUND, "refund:mv-9");
    generic_key("chargeback", "-500.00", MC_SETTLE_CHARGEBACK,
                "chargeback:mv-9");
    generic_key("chargeback_reversal", "500.00",
                MC_SETTLE_CHARGEBACK_REVERSAL, "chargeback:mv-9:reversed");
    generic_key("fee", "-1.00", MC_SETTLE_FEE, "");
    generic_key("payout", "-400.00", MC_SETTLE_PAYOUT, "");
    generic_key("other", "3.00", MC_SETTLE_OTHER, "");

    runs(MC_SETTLE_GENERIC,
         GH "r1,payment,acme-77001,,dep_000123,usd,500.00,4.50,"
         "2024-05-01T10:00:00Z,po_9\n"
         "r2,refund,acme-77001,rf-1,,USD,-100,,2024-05-02 08:30:00+00:00,"
         "po_9\n"
         "r3,payment,acme-77002,,,USD,7.5,0,2024-05-03 09:00:00,\n");

    row = &res.rows[0];

    ok(res.n == 3 && row->gross_minor == 50000 && row->fee_minor == 450
       && row->net_minor == 49550 && strcmp(row->row_id, "r1") == 0
       && strcmp(row->deposit_ref, "dep_000123") == 0
       && strcmp(row->payout_id, "po_9") == 0
       && strcmp(row->currency, "USD") == 0,
       "generic: gross = amount, net = amount - fee, ids (%d, %s)", res.n,
       res.err);

    ok(res.n == 3 && strcmp(res.rows[0].created, "2024-05-01 10:00:00") == 0
       && strcmp(res.rows[1].created, "2024-05-02 08:30:00") == 0
       && strcmp(res.rows[2].created, "2024-05-03 09:00:00") == 0
       && res.rows[0].created_utc && res.rows[1].created_utc
       && res.rows[2].created_utc,
       "generic: created_at with Z, +00:00 or nothing is UTC");

    ok(res.n == 3 && res.rows[1].fee_minor == 0
       && res.rows[1].net_minor == -10000 && res.rows[2].gross_minor == 750,
       "generic: an empty fee is 0, \"7.5\" is 750");

    runs(MC_SETTLE_GENERIC,
         "created_at,amount,currency,movement_id,payment_id,type,id\n"
         "2024-05-01T10:00:00Z,500.00,USD,,acme-1,payment,r1\n");
    ok(res.n == 1 && res.rows[0].fee_minor == 0
       && res.rows[0].net_minor == 50000
       && strcmp(res.rows[0].provider_key, "acme-1") == 0,
       "generic: the optional columns may be absent, fee then 0 (%s)",
       res.err);

    fails(MC_SETTLE_GENERIC, "USD", 2,
          GH "r1,settlement,acme-1,,,USD,5.00,,2024-05-01T10:00:00Z,\n",
          "line 2: unknown type \"settlement\"", "generic: an unknown type");

    /* a payout to a client: keyed by our withdrawal reference */
    runs(MC_SETTLE_GENERIC,
         "id,type,payment_id,movement_id,currency,amount,created_at,"
         "withdrawal_reference\n"
         "w1,withdrawal,,po_77,USD,-250.00,2024-05-01T10:00:00Z,wd_000012\n");
    ok(res.n == 1 && res.rows[0].category == MC_SETTLE_WITHDRAWAL
       && strcmp(res.rows[0].provider_key, "payout:wd_000012") == 0
       && strcmp(res.rows[0].payment_id, "po_77") == 0
       && res.rows[0].gross_minor == -25000,
       "generic withdrawal is keyed payout:<wd ref>, its payout id kept "
       "(%d %s \"%s\" %s)", res.n,
       mc_settle_category_name(res.rows[0].category),
       res.rows[0].provider_key, res.err);

    fails(MC_SETTLE_GENERIC, "USD", 2,
          "id,type,payment_id,movement_id,currency,amount,created_at,"
          "withdrawal_reference\n"
          "w1,withdrawal,,po_77,USD,-250.00,2024-05-01T10:00:00Z,\n",
          "line 2: a withdrawal needs withdrawal_reference and movement_id "
          "(the payout's id)", "generic: a withdrawal without our reference");
    fails(MC_SETTLE_GENERIC, "USD", 2,
          "id,type,payment_id,movement_id,currency,amount,created_at,"
          "withdrawal_reference\n"
          "w1,withdrawal,,po_77,USD,250.00,2024-05-01T10:00:00Z,wd_1\n",
          "line 2: a withdrawal with amount 250.00 (must be negative)",
          "generic: a withdrawal paid in is a misread file");
    fails(MC_SETTLE_GENERIC, "USD", 2,
          "id,type,payment_id,movement_id,currency,amount,created_at,"
          "withdrawal_reference\n"
          "w1,withdrawal,pi_1,po_77,USD,-250.00,2024-05-01T10:00:00Z,wd_1\n",
          "line 2: a withdrawal has no payment_id; its payout's id is "
          "movement_id", "generic: a withdrawal naming a payment");

    fails(MC_SETTLE_GENERIC, "USD", 2,
          GH "r1,refund,acme-1,,,USD,-5.00,,2024-05-01T10:00:00Z,\n",
          "line 2: a refund without movement_id",
          "generic: a refund without its own id");

    fails(MC_SETTLE_GENERIC, "USD", 2,
          GH "r1,chargeback,,cb-1,,USD,-5.00,,2024-05-01T10:00:00Z,\n",
          "line 2: a chargeback without payment_id",
          "generic: a chargeback without the payment");

    fails(MC_SETTLE_GENERIC, "USD", 2,
          GH "r1,payment,,,,USD,5.00,,2024-05-01T10:00:00Z,\n",
          "line 2: a payment without payment_id",
          "generic: a payment without its id");

    fails(MC_SETTLE_GENERIC, "USD", 2,
          GH "r1,refund,acme-1,rf-1,,USD,5.00,,2024-05-01T10:00:00Z,\n",
          "line 2: a refund with amount 5.00 (must be negative)",
          "generic: a refund with a positive amount");

    fails(MC_SETTLE_GENERIC, "USD", 2,
          GH "r1,payment,acme-1,,,USD,5.00,,2024-05-01T10:00:00+01:00,\n",
          "line 2: bad time \"2024-05-01T10:00:00+01:00\" in column "
          "created_at", "generic: a time not in UTC");
}


/* the first total of a control file: its rc, -2 if it did not open */
static int
control_first(const char *text, const char *cur, int digits,
    mc_settle_control_t *c, char *err, size_t errlen)
{
    int                  rc;
    FILE                *f;
    mc_settle_reader_t  *r;

    err[0] = '\0';
    f = file_of(text, strlen(text));
    r = mc_settle_control_open(f, cur, digits, err, errlen);
    rc = r ? mc_settle_control_next(r, c, err, errlen) : -2;

    mc_settle_close(r);
    fclose(f);

    return rc;
}


static void
control_totals(void)
{
    int                   rc;
    FILE                 *f;
    char                  err[256];
    mc_settle_row_t       row;
    mc_settle_control_t   c;
    mc_settle_reader_t   *r;

    static const char  with[] =
        "payout_id,currency,amount,count\n"
        "po_1,usd,1234.56,17\n"
        "po_2,USD,-10.00,\n";

    f = file_of(with, sizeof(with) - 1);
    r = mc_settle_control_open(f, "USD", 2, err, sizeof(err));

    rc = r ? mc_settle_control_next(r, &c, err, sizeof(err)) : -2;
    ok(rc == 1 && strcmp(c.payout_id, "po_1") == 0
       && strcmp(c.currency, "USD") == 0 && c.amount_minor == 123456
       && c.count == 17 && c.line == 2,
       "control: payout_id, currency, amount, count (%d)", rc);

    rc = r ? mc_settle_control_next(r, &c, err, sizeof(err)) : -2;
    ok(rc == 1 && c.amount_minor == -1000 && c.count == -1 && c.line == 3,
       "control: a signed amount; an empty count is -1");

    rc = r ? mc_settle_control_next(r, &c, err, sizeof(err)) : -2;
    ok(rc == 0, "control: the end");

    /* a control reader is not a settlement reader */
    rc = r ? mc_settle_next(r, &row, err, sizeof(err)) : -2;
    ok(rc == -1, "control: mc_settle_next on it refuses (%s)", err);

    mc_settle_close(r);
    fclose(f);

    rc = control_first("Amount,PAYOUT_ID, currency\n5000,po_1,JPY\n", "JPY", 0,
                       &c, err, sizeof(err));
    ok(rc == 1 && c.amount_minor == 5000 && c.count == -1
       && strcmp(c.payout_id, "po_1") == 0,
       "control: without a count column, any order, JPY (%d %s)", rc, err);

    rc = control_first("payout_id,currency,amount,count\npo_1,USD,1.00,-3\n",
                       "USD", 2, &c, err, sizeof(err));
    ok(rc == -1 && strcmp(err, "line 2: bad count \"-3\"") == 0,
       "control: a negative count (%s)", err);

    rc = control_first("payout_id,currency,amount\npo_1,USD,1.005\n",
                       "USD", 2, &c, err, sizeof(err));
    ok(rc == -1
       && strcmp(err, "line 2: bad amount \"1.005\" in column amount") == 0,
       "control: an inexact amount (%s)", err);

    rc = control_first("payout_id,currency,amount\npo_1,EUR,1.00\n",
                       "USD", 2, &c, err, sizeof(err));
    ok(rc == -1
       && strcmp(err, "line 2: currency EUR, this run reconciles USD") == 0,
       "control: another currency (%s)", err);

    rc = control_first("payout_id,currency,amount\n,USD,1.00\n",
                       "USD", 2, &c, err, sizeof(err));
    ok(rc == -1 && strcmp(err, "line 2: column payout_id is empty") == 0,
       "control: a total for no payout (%s)", err);

    rc = control_first("payout_id,currency,amount\npo_1,USD,1.00\npo_2,USD\n",
                       "USD", 2, &c, err, sizeof(err));
    ok(rc == 1, "control: the first of two rows");

    rc = control_first("payout_id,amount,count\n", "USD", 2, &c, err,
                       sizeof(err));
    ok(rc == -2 && strcmp(err, "line 1: missing column \"currency\"") == 0,
       "control: a missing column is named (%s)", err);
}


static void
amounts(void)
{
#define ROW(g, f, n)                                                         \
    SH "txn_1,2024-05-01 10:00:00,USD," g "," f "," n ",charge,ch_1,pi_1,,\n"

    stripe_fails(ROW("12.3x", "0", "12.30"),
                 "line 2: bad amount \"12.3x\" in column gross",
                 "a non-numeric amount, with line and column");
    stripe_fails(ROW("12.345", "0", "12.345"),
                 "line 2: bad amount \"12.345\" in column gross",
                 "12.345 USD is refused, not rounded");
    stripe_fails(ROW("1e3", "0", "1000.00"),
                 "line 2: bad amount \"1e3\" in column gross", "an exponent");
    stripe_fails(ROW("", "0", "0"),
                 "line 2: bad amount \"\" in column gross", "an empty gross");
    stripe_fails(ROW("10.00", "0.29 ", "9.71"),
                 "line 2: bad amount \"0.29 \" in column fee",
                 "a space is not trimmed into a number");
    stripe_fails(ROW("\"1,000.00\"", "0", "1000.00"),
                 "line 2: bad amount \"1,000.00\" in column gross",
                 "a thousands separator");
    stripe_fails(ROW("100.00", "2.90", "97.00"),
                 "line 2: net 97.00 is not gross - fee (100.00 - 2.90 = "
                 "97.10)", "net != gross - fee");

    runs(MC_SETTLE_STRIPE, ROW("12.340", "0.000", "12.34"));
    ok(res.n == 1 && res.rows[0].gross_minor == 1234,
       "12.340 USD is 1234 (trailing zeros are exact)");

    /* 18 significant digits, the most mc_decimal_parse takes */
    runs(MC_SETTLE_STRIPE,
         ROW("9999999999999999.99", "0", "9999999999999999.99"));
    ok(res.n == 1 && res.rows[0].gross_minor == 999999999999999999LL,
       "9999999999999999.99 USD is 999999999999999999 exactly (%s)",
       res.err);

    stripe_fails(ROW("99999999999999999.99", "0", "0"),
                 "line 2: bad amount \"99999999999999999.99\" in column gross",
                 "19 significant digits fail cleanly");
    stripe_fails(ROW("999999999999999999", "0", "0"),
                 "line 2: bad amount \"999999999999999999\" in column gross",
                 "1e20 minor units overflow int64 and fail cleanly");
    stripe_fails(ROW("92233720368547758", "-1.00", "0"),
                 "line 2: gross - fee overflows",
                 "gross - fee beyond int64 fails cleanly");

    fails(MC_SETTLE_STRIPE, "JPY", 0, ROW("5000", "0", "5000"),
          "line 2: currency USD, this run reconciles JPY",
          "wrong currency fails naming both");
    fails(MC_SETTLE_STRIPE, "USD", 2,
          SH "txn_1,2024-05-01 10:00:00,eur,5.00,0,5.00,charge,ch_1,pi_1,,\n",
          "line 2: currency EUR, this run reconciles USD",
          "eur in a USD run");
    fails(MC_SETTLE_STRIPE, "USD", 2,
          SH "txn_1,2024-05-01 10:00:00,,5.00,0,5.00,charge,ch_1,pi_1,,\n",
          "line 2: no currency, this run reconciles USD", "no currency");
    fails(MC_SETTLE_STRIPE, "USD", 2,
          SH "txn_1,2024-05-01 10:00:00,usdx,5.00,0,5.00,charge,ch_1,pi_1,"
          ",\n", "line 2: currency USDX, this run reconciles USD",
          "a currency with USD as its prefix");

#undef ROW

#define JPY(g, f, n)                                                         \
    SH "txn_1,2024-05-01 10:00:00,jpy," g "," f "," n ",charge,ch_1,pi_1,,\n"

    run(MC_SETTLE_STRIPE, "jpy", 0, JPY("5000", "180", "4820"),
        strlen(JPY("5000", "180", "4820")));
    ok(res.n == 1 && res.rows[0].gross_minor == 5000
       && res.rows[0].fee_minor == 180 && res.rows[0].net_minor == 4820
       && strcmp(res.rows[0].currency, "JPY") == 0,
       "JPY with 0 digits: 5000 is 5000 (%s)", res.err);

    run(MC_SETTLE_STRIPE, "JPY", 0, JPY("5000.00", "0", "5000"),
        strlen(JPY("5000.00", "0", "5000")));
    ok(res.n == 1 && res.rows[0].gross_minor == 5000, "JPY 5000.00 is 5000");

    fails(MC_SETTLE_STRIPE, "JPY", 0, JPY("5000.5", "0", "5000.5"),
          "line 2: bad amount \"5000.5\" in column gross",
          "JPY 5000.5 fails");

    run(MC_SETTLE_STRIPE, "JPY", 0,
        JPY("999999999999999999", "0", "999999999999999999"),
        strlen(JPY("999999999999999999", "0", "999999999999999999")));
    ok(res.n == 1 && res.rows[0].gross_minor == 999999999999999999LL,
       "JPY 999999999999999999: 18 digits at 0 decimals (%s)", res.err);

#undef JPY

    fails(MC_SETTLE_STRIPE, "US D", 2, SH, "bad run currency",
          "a run currency that is no code");
    fails(MC_SETTLE_STRIPE, "USD", 19, SH, "bad run digits 19",
          "19 minor digits");
}


static void
times(void)
{
    stripe_time("created_utc", "2024-05-01 10:20:30", "2024-05-01 10:20:30");
    stripe_time("created_utc", "2024-05-01T10:20:30Z", "2024-05-01 10:20:30");
    stripe_time("created_utc", "2024-05-01T10:20:30+00:00",
                "2024-05-01 10:20:30");
    stripe_time("created", "2024-05-01 10:20:30", "2024-05-01 10:20:30");
    stripe_time("created_utc", "2024-02-29 23:59:59", "2024-02-29 23:59:59");
    stripe_time("created_utc", "2000-02-29 00:00:00", "2000-02-29 00:00:00");

    stripe_time("created", "2024-05-01 10:20:30Z", NULL);
    stripe_time("created_utc", "2023-02-29 10:00:00", NULL);
    stripe_time("created_utc", "1900-02-29 10:00:00", NULL);
    stripe_time("created_utc", "2024-04-31 10:00:00", NULL);
    stripe_time("created_utc", "2024-13-01 10:00:00", NULL);
    stripe_time("created_utc", "2024-00-01 10:00:00", NULL);
    stripe_time("created_utc", "2024-05-01 24:00:00", NULL);
    stripe_time("created_utc", "2024-05-01 10:60:00", NULL);
    stripe_time("created_utc", "2024-05-01 10:00:60", NULL);
    stripe_time("created_utc", "2024-05-01 10:00", NULL);
    stripe_time("created_utc", "2024-5-01 10:00:00", NULL);
    stripe_time("created_utc", "2024-05-01 10:00:00.5", NULL);
    stripe_time("created_utc", "2024-05-01 10:00:00+01:00", NULL);
    stripe_time("created_utc", "2024-05-01 10:00:00 ", NULL);
    stripe_time("created_utc", "2024-05-01X10:00:00", NULL);
    stripe_time("created_utc", "1714558830", NULL);
    stripe_time("created_utc", "", NULL);

    /* both present: created_utc is the one taken */
    runs(MC_SETTLE_STRIPE,
         "balance_transaction_id,created,created_utc,currency,gross,fee,net,"
         "reporting_category,source_id,payment_intent_id\n"
         "txn_1,2024-05-01 12:00:00,2024-05-01 10:00:00,USD,1.00,0,1.00,"
         "charge,ch_1,pi_1\n");
    ok(res.n == 1 && res.rows[0].created_utc == 1
       && strcmp(res.rows[0].created, "2024-05-01 10:00:00") == 0,
       "created_utc preferred over created");
}


static void
lengths(void)
{
    char    id[300], text[8192];
    size_t  n;

    memset(id, 'a', sizeof(id));

    /* 255 bytes: the most an id (and provider_payment_id) holds */
    snprintf(text, sizeof(text),
             SH "txn_1,2024-05-01 10:00:00,USD,-1.00,0,-1.00,refund,%.255s,"
             "pi_1,,\n", id);
    runs(MC_SETTLE_STRIPE, text);
    ok(res.n == 1 && strlen(res.rows[0].provider_key) == 255,
       "a 255-byte refund id is its key, whole");

    snprintf(text, sizeof(text),
             SH "txn_1,2024-05-01 10:00:00,USD,-1.00,0,-1.00,refund,%.256s,"
             "pi_1,,\n", id);
    stripe_fails(text, "line 2: column source_id is too long (256 bytes, at "
                 "most 255)", "a 256-byte id fails, not cut");

    snprintf(text, sizeof(text),
             SH "txn_1,2024-05-01 10:00:00,USD,-1.00,0,-1.00,dispute,%.250s,"
             "pi_1,,\n", id);
    run(MC_SETTLE_STRIPE, "USD", 2, text, strlen(text));
    ok(res.n == -1 && strncmp(res.err, "line 2: key \"aaaa", 17) == 0
       && strstr(res.err, "...\" is longer than 255 bytes") != NULL,
       "a 260-byte key (dispute + :withdrawn) fails, not cut (%s)", res.err);

    snprintf(text, sizeof(text),
             SH "txn_1,2024-05-01 10:00:00,USD,1.00,0,1.00,charge,ch_1,"
             "pi_1,,%.64s\n", id);
    stripe_fails(text, "line 2: column payment_metadata[deposit_id] is too "
                 "long (64 bytes, at most 63)",
                 "a 64-byte deposit reference fails, not cut");

    /* the field cap: 4096 bytes read, 4097 refused */
    n = (size_t) snprintf(text, sizeof(text), "%s", SH);
    n += (size_t) snprintf(text + n, sizeof(text) - n,
                           "txn_1,2024-05-01 10:00:00,USD,1.00,0,1.00,"
                           "charge,ch_1,pi_1,,\"");
    memset(text + n, 'x', 4096);
    n += 4096;
    memcpy(text + n, "\"\n", 3);

    run(MC_SETTLE_STRIPE, "USD", 2, text, strlen(text));
    ok(res.n == -1
       && strcmp(res.err, "line 2: column payment_metadata[deposit_id] is "
                 "too long (4096 bytes, at most 63)") == 0,
       "a 4096-byte field is read whole (%s)", res.err);

    memmove(text + n + 1, text + n, 3);
    text[n] = 'x';

    run(MC_SETTLE_STRIPE, "USD", 2, text, strlen(text));
    ok(res.n == -1
       && strcmp(res.err, "line 2: field too long (field 11, more than "
                 "4096 bytes)") == 0,
       "a 4097-byte field fails (%s)", res.err);
}


/* a long file streams through, the last row with its line */
static void
many_rows(void)
{
    int                  i, rows, rc;
    FILE                *f;
    char                 err[256];
    int64_t              sum, want;
    mc_settle_row_t      row;
    mc_settle_reader_t  *r;

    f = tmpfile();
    if (f == NULL) {
        perror("tmpfile");
        exit(2);
    }

    fputs(GH, f);
    want = 0;
    for (i = 1; i <= 200000; i++) {
        want += (i % 1000 + 1) * 100 + i % 100 - 1;
        fprintf(f, "r%d,payment,p%d,,,USD,%d.%02d,0.01,"
                "2024-05-01T10:00:00Z,\n", i, i, i % 1000 + 1, i % 100);
    }
    fputs("bad,payment,p,,,USD,1.00,0,2024-05-01T10:00:00Z\n", f);
    rewind(f);

    r = mc_settle_open(f, MC_SETTLE_GENERIC, "USD", 2, err, sizeof(err));

    rows = 0;
    sum = 0;
    rc = -2;

    while (r != NULL && (rc = mc_settle_next(r, &row, err, sizeof(err)))
           == 1)
    {
        rows++;
        sum += row.net_minor;
    }

    ok(rows == 200000 && rc == -1
       && strcmp(err, "line 200002: 9 fields, the header has 10") == 0,
       "200000 rows stream through, the 200001st fails with its line "
       "(%d rows, %s)", rows, err);

    ok(sum == want, "200000 rows add up exactly (%" PRId64 ", %" PRId64
       ")", sum, want);

    rc = r ? mc_settle_next(r, &row, err, sizeof(err)) : -2;
    ok(rc == -1
       && strcmp(err, "line 200002: 9 fields, the header has 10") == 0,
       "an error sticks: the next call fails the same way");

    mc_settle_close(r);
    fclose(f);
}


int
main(void)
{
    mc_settle_format_e  f;

    csv_records();
    stripe_columns();
    stripe_categories();
    generic_rows();
    control_totals();
    amounts();
    times();
    lengths();
    many_rows();

    ok(strcmp(mc_settle_category_name(MC_SETTLE_PAYMENT), "payment") == 0
       && strcmp(mc_settle_category_name(MC_SETTLE_REFUND), "refund") == 0
       && strcmp(mc_settle_category_name(MC_SETTLE_CHARGEBACK),
                 "chargeback") == 0
       && strcmp(mc_settle_category_name(MC_SETTLE_CHARGEBACK_REVERSAL),
                 "chargeback_reversal") == 0
       && strcmp(mc_settle_category_name(MC_SETTLE_FEE), "fee") == 0
       && strcmp(mc_settle_category_name(MC_SETTLE_PAYOUT), "payout") == 0
       && strcmp(mc_settle_category_name(MC_SETTLE_OTHER), "other") == 0,
       "category names");

    ok(mc_settle_format_parse("stripe", &f) == 0 && f == MC_SETTLE_STRIPE
       && mc_settle_format_parse("generic", &f) == 0
       && f == MC_SETTLE_GENERIC
       && mc_settle_format_parse("Stripe", &f) == -1
       && mc_settle_format_parse("", &f) == -1
       && mc_settle_format_parse(NULL, &f) == -1,
       "format names: stripe, generic, nothing else");

    printf("1..%d\n", tests);

    return failed ? 1 : 0;
}
