/*
 * Copyright (C) mt5-credit
 *
 * The CSV file and the HTML report of one reconciliation run; see
 * mc_recon_report.h.
 *
 * One pass over the items writes both files: the CSV gets every item, the
 * HTML the first MC_RECON_REPORT_HTML_MAX.  The HTML is one file with no
 * external resources: inline CSS, an inline SVG chart, and a few lines of
 * script for the kind filter that the page does not need to be read.
 * Everything that came from outside (item keys, deal comments, provider
 * ids) is HTML-escaped; in the CSV it is quoted as RFC 4180 says, and a
 * cell a spreadsheet would run as a formula (=, +, -, @, a tab or a CR
 * first, and not a plain number such as -12.50) starts with an
 * apostrophe: a deal comment "=HYPERLINK(...)" is text when a person opens
 * the file, never a link or a command.
 *
 * Output depends only on the run's rows, so the same run gives the same
 * bytes every time (no "generated at" stamp).
 */


#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "mc_money.h"
#include "mc_recon_report.h"


#define MC_RR_PATH_MAX      4096
#define MC_RR_AMOUNT_MAX    32
#define MC_RR_TMP_TRIES     100

/* U+FFFD, for bytes HTML may not carry */
#define MC_RR_REPLACEMENT   "\xef\xbf\xbd"
#define MC_RR_DASH          "\xe2\x80\x94"

/* the chart, in SVG user units */
#define MC_RR_CHART_LABEL   170          /* movement names */
#define MC_RR_CHART_BARS    400          /* the longest bar */
#define MC_RR_CHART_TEXT    230          /* "matched N / mismatched M" */
#define MC_RR_CHART_ROW     30
#define MC_RR_CHART_PAD     10

/* how the reads are wrapped: see mc_rr_begin() */
#define MC_RR_TX_NONE       0
#define MC_RR_TX_OWN        1
#define MC_RR_TX_SAVEPOINT  2

#define MC_RR_GREEN         "#2e7d32"
#define MC_RR_RED           "#c62828"


/* the run's row: the columns of MC_RR_RUN_SQL */
enum {
    MC_RR_PROVIDER = 0,
    MC_RR_DAY,
    MC_RR_TIME_ZONE,
    MC_RR_CURRENCY,
    MC_RR_VERDICT,
    MC_RR_REASON,
    MC_RR_STARTED_BY,
    MC_RR_WINDOW_START,
    MC_RR_WINDOW_START_UTC,
    MC_RR_WINDOW_END,
    MC_RR_WINDOW_END_UTC,
    MC_RR_DEAL_WINDOW_END,
    MC_RR_DEAL_WINDOW_END_UTC,
    MC_RR_STARTED_AT,
    MC_RR_STARTED_AT_UTC,
    MC_RR_FINISHED_AT,
    MC_RR_FINISHED_AT_UTC,
    MC_RR_FORMAT,
    MC_RR_SETTLEMENT_SHA256,
    MC_RR_CONTROL_SHA256,
    MC_RR_INPUT_DIGEST,
    MC_RR_PREVIOUS,
    MC_RR_PREVIOUS_PROVIDER,
    MC_RR_PREVIOUS_DAY,
    MC_RR_PREVIOUS_CURRENCY,
    MC_RR_WINDOW_DAYS,
    MC_RR_GRACE_HOURS
};


/* the run's instants as the run's own calendar shows them, and in UTC */
#define MC_RR_TIME(t, col)                                                   \
    "to_char(" t "." col " AT TIME ZONE r.time_zone, "                       \
    "'YYYY-MM-DD HH24:MI:SS'), "                                             \
    "to_char(" t "." col " AT TIME ZONE 'UTC', "                             \
    "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"

/* to_char(): the text of a date must not depend on the session's DateStyle */
#define MC_RR_RUN_SQL                                                        \
    "SELECT r.provider, to_char(r.business_day, 'YYYY-MM-DD'), "             \
    "r.time_zone, r.currency, r.verdict, r.reason, r.started_by, "           \
    MC_RR_TIME("r", "window_start") ", "                                     \
    MC_RR_TIME("r", "window_end") ", "                                       \
    MC_RR_TIME("r", "deal_window_end") ", "                                  \
    MC_RR_TIME("r", "started_at") ", "                                       \
    MC_RR_TIME("r", "finished_at") ", "                                      \
    "r.settlement_format, r.settlement_sha256, r.control_sha256, "           \
    "r.input_digest, r.previous_run_id, p.provider, "                        \
    "to_char(p.business_day, 'YYYY-MM-DD'), p.currency, "                    \
    "r.match_window_days, r.settlement_grace_hours "                         \
    "FROM mt5credit.recon_run r "                                            \
    "LEFT JOIN mt5credit.recon_run p ON p.id = r.previous_run_id "           \
    "WHERE r.id = $1"

#define MC_RR_COUNTS_SQL                                                     \
    "SELECT dimension, name, n FROM mt5credit.recon_count "                  \
    "WHERE run_id = $1 ORDER BY dimension, n DESC, name COLLATE \"C\""

#define MC_RR_CURRENCY_SQL                                                   \
    "SELECT code, minor_digits FROM mt5credit.currency"

/* "C": the same order whatever the database's collation */
#define MC_RR_ITEMS_SQL                                                      \
    "SELECT kind, severity, movement, item_key, amount_minor, currency, "    \
    "case_id, settlement::text, credit::text, deals::text "                  \
    "FROM mt5credit.recon_item WHERE run_id = $1 "                           \
    "ORDER BY CASE severity WHEN 'critical' THEN 0 WHEN 'high' THEN 1 "      \
    "WHEN 'medium' THEN 2 ELSE 3 END, kind COLLATE \"C\", "                  \
    "item_key COLLATE \"C\""

enum {
    MC_RR_ITEM_KIND = 0,
    MC_RR_ITEM_SEVERITY,
    MC_RR_ITEM_MOVEMENT,
    MC_RR_ITEM_KEY,
    MC_RR_ITEM_AMOUNT,
    MC_RR_ITEM_CURRENCY,
    MC_RR_ITEM_CASE,
    MC_RR_ITEM_SETTLEMENT,
    MC_RR_ITEM_CREDIT,
    MC_RR_ITEM_DEALS
};

#define MC_RR_CSV_HEADER                                                     \
    "run_id,kind,severity,movement,item_key,amount,currency,case_id,"        \
    "settlement_row,settlement_line,settlement_category,settlement_gross,"   \
    "settlement_currency,credit_reference,credit_status,credit_login,"       \
    "credit_amount,credit_currency,deal_tickets,deal_logins,deal_amounts,"   \
    "deal_comments,since_day,age_days\r\n"

/*
 * what waits for its partner (040): a settlement row or a credit; not a
 * row carried overdue (067), a break whose case is open
 */
#define MC_RR_TRANSIT_SQL                                                    \
    "SELECT * FROM ("                                                        \
    "SELECT 'settlement' AS side, row_id AS item_key, "                      \
    "to_char(since_day, 'YYYY-MM-DD'), age_days, category, gross_minor, "    \
    "currency, '', provider_key "                                            \
    "FROM mt5credit.recon_transit_settlement "                               \
    "WHERE run_id = $1 AND NOT overdue "                                     \
    "UNION ALL "                                                             \
    "SELECT 'credit', reference, to_char(since_day, 'YYYY-MM-DD'), "         \
    "age_days, movement, amount_minor, currency, status, '' "                \
    "FROM mt5credit.recon_transit_credit WHERE run_id = $1) t "              \
    "ORDER BY age_days DESC, side, item_key COLLATE \"C\""

enum {
    MC_RR_TRANSIT_SIDE = 0,
    MC_RR_TRANSIT_KEY,
    MC_RR_TRANSIT_SINCE,
    MC_RR_TRANSIT_AGE,
    MC_RR_TRANSIT_MOVEMENT,
    MC_RR_TRANSIT_AMOUNT,
    MC_RR_TRANSIT_CURRENCY,
    MC_RR_TRANSIT_STATUS,
    MC_RR_TRANSIT_PROVIDER_KEY
};


typedef struct {
    char  code[16];
    int   digits;
} mc_rr_currency_t;


/* a growing buffer, reused for every field of every item */
typedef struct {
    char    *data;
    size_t   len;
    size_t   cap;
} mc_rr_buf_t;


typedef struct {
    PGconn            *conn;
    char               id[24];          /* the run id, as text: $1 */
    PGresult          *run;             /* MC_RR_RUN_SQL's row */
    PGresult          *counts;          /* MC_RR_COUNTS_SQL */
    mc_rr_currency_t  *currencies;
    size_t             ncurrencies;
    FILE              *csv;
    FILE              *html;
    char               csv_name[256];   /* base names: links between files */
    char               html_name[256];
    mc_rr_buf_t        buf;
    int64_t            items;           /* items read so far */
    int64_t            transit;         /* in-transit rows read so far */
    char              *err;
    size_t             errlen;
} mc_rr_t;


/* a field of a settlement row, a credit or a deal, as the HTML shows it */
typedef struct {
    const char  *key;
    const char  *label;
    const char  *currency;    /* an amount in minor units of this field */
} mc_rr_field_t;


static const char *const mc_rr_movements[] = {
    "payment", "refund", "chargeback", "chargeback_reversal", "correction",
    "withdrawal", "unattributed", NULL
};

static const char *const mc_rr_summary[][2] = {
    { "should_process", "should process" },
    { "matched", "matched" },
    { "matched_later", "matched, carried from an earlier day" },
    { "in_transit", "in transit (inside the matching window)" },
    { "overdue", "settled, past the grace, still without a credit (a "
      "case is open)" },
    { "pending", "pending" },
    { "still_unknown", "still unknown" },
    { "mismatched", "mismatched" },
    { "fixed_since_last_run", "fixed since last run" },
    { "settlement_rows", "settlement rows" },
    { "deals", "deals" },
    { "deals_by_ticket", "deals asked for by ticket" },
    { "replayed", "events replayed" },
    { NULL, NULL }
};

static const mc_rr_field_t mc_rr_settlement_fields[] = {
    { "row_id", "row", NULL },
    { "line_no", "line", NULL },
    { "category", "category", NULL },
    { "provider_key", "provider key", NULL },
    { "payment_id", "payment id", NULL },
    { "deposit_ref", "deposit ref", NULL },
    { "gross_minor", "gross", "currency" },
    { "fee_minor", "fee", "currency" },
    { "net_minor", "net", "currency" },
    { "created_at", "created", NULL },
    { "payout_id", "payout", NULL },
    { NULL, NULL, NULL }
};

static const mc_rr_field_t mc_rr_credit_fields[] = {
    { "reference", "reference", NULL },
    { "id", "credit id", NULL },
    { "kind", "kind", NULL },
    { "direction", "direction", NULL },
    { "status", "status", NULL },
    { "provider", "provider", NULL },
    { "provider_payment_id", "provider id", NULL },
    { "mt5_server", "server", NULL },
    { "mt5_login", "login", NULL },
    { "amount_minor", "amount", "currency" },
    { "paid_amount_minor", "paid", "paid_currency" },
    { "mt5_deal_ticket", "deal ticket", NULL },
    { "created_at", "created", NULL },
    { NULL, NULL, NULL }
};

static const mc_rr_field_t mc_rr_deal_fields[] = {
    { "mt5_server", "server", NULL },
    { "deal_ticket", "ticket", NULL },
    { "mt5_login", "login", NULL },
    { "amount_minor", "amount", "currency" },
    { "comment", "comment", NULL },
    { "deal_time", "time", NULL },
    { NULL, NULL, NULL }
};


static void mc_rr_error(mc_rr_t *rr, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void mc_rr_context(mc_rr_t *rr, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static PGresult *mc_rr_query(mc_rr_t *rr, const char *what, const char *sql,
    int nparams);
static int mc_rr_begin(mc_rr_t *rr, int *tx);
static int mc_rr_end(mc_rr_t *rr, int tx, int ok);
static int mc_rr_load(mc_rr_t *rr);
static const char *mc_rr_run(mc_rr_t *rr, int col);
static int mc_rr_count(mc_rr_t *rr, const char *dimension, const char *name,
    int64_t *n);
static int mc_rr_int64(const char *s, int64_t *v);
static int mc_rr_safe_name(const char *s);
static int mc_rr_amount(mc_rr_t *rr, int64_t minor, const char *currency,
    char *buf, size_t size);
static int mc_rr_buf_add(mc_rr_t *rr, const char *s, size_t len);
static int mc_rr_buf_json(mc_rr_t *rr, json_t *v);
static int mc_rr_buf_amount(mc_rr_t *rr, json_t *obj, const char *key,
    const char *currency_key, int with_currency);
static int mc_rr_open(mc_rr_t *rr, const char *dir, const char *name,
    char *tmp, size_t size, FILE **f);
static int mc_rr_close(mc_rr_t *rr, FILE **f, const char *tmp);
static int mc_rr_sync_dir(mc_rr_t *rr, const char *dir);
static int mc_rr_stream(mc_rr_t *rr, const char *what, const char *sql,
    int (*row)(mc_rr_t *rr, PGresult *res));
static int mc_rr_item(mc_rr_t *rr, PGresult *res);
static int mc_rr_transit_row(mc_rr_t *rr, PGresult *res);
static void mc_rr_html_items_end(mc_rr_t *rr);
static void mc_rr_html_transit_end(mc_rr_t *rr);
static int mc_rr_json(mc_rr_t *rr, PGresult *res, int col,
    const char *what, json_t **j);
static int mc_rr_csv_item(mc_rr_t *rr, PGresult *res, json_t *settlement,
    json_t *credit, json_t *deals);
static void mc_rr_csv(FILE *f, const char *s, size_t len, int first);
static int mc_rr_csv_formula(const char *s, size_t len);
static int mc_rr_csv_json(mc_rr_t *rr, json_t *obj, const char *key);
static int mc_rr_csv_amount(mc_rr_t *rr, json_t *obj, const char *key,
    const char *currency_key);
static int mc_rr_csv_deals(mc_rr_t *rr, json_t *deals, const char *key,
    const char *currency_key);
static int mc_rr_html_item(mc_rr_t *rr, PGresult *res, json_t *settlement,
    json_t *credit, json_t *deals);
static int mc_rr_html_dl(mc_rr_t *rr, json_t *obj,
    const mc_rr_field_t *fields);
static void mc_rr_html_head(mc_rr_t *rr);
static void mc_rr_html_summary(mc_rr_t *rr);
static void mc_rr_html_time(mc_rr_t *rr, const char *name, const char *label,
    int col);
static void mc_rr_html_wait(mc_rr_t *rr, const char *name, const char *label,
    int col, const char *unit);
static void mc_rr_html_code(FILE *f, const char *s);
static void mc_rr_html_chart(mc_rr_t *rr);
static void mc_rr_html_kinds(mc_rr_t *rr);
static void mc_rr_html_tail(mc_rr_t *rr);
static void mc_rr_esc(FILE *f, const char *s);
static void mc_rr_escn(FILE *f, const char *s, size_t len);


int
mc_recon_report(PGconn *conn, int64_t run_id, const char *dir,
    char *csv_path, char *html_path, size_t path_size, char *err,
    size_t errlen)
{
    int          tx, rc;
    size_t       dlen;
    mc_rr_t      rr;
    const char  *sep;
    char         csv_final[MC_RR_PATH_MAX], html_final[MC_RR_PATH_MAX];
    char         csv_tmp[MC_RR_PATH_MAX], html_tmp[MC_RR_PATH_MAX];

    memset(&rr, 0, sizeof(mc_rr_t));
    rr.conn = conn;
    rr.err = err;
    rr.errlen = errlen;
    snprintf(rr.id, sizeof(rr.id), "%" PRId64, run_id);

    if (err != NULL && errlen > 0) {
        err[0] = '\0';
    }

    if (conn == NULL || dir == NULL || dir[0] == '\0') {
        mc_rr_error(&rr, "recon report: no connection or no directory");
        return -1;
    }

    csv_tmp[0] = '\0';
    html_tmp[0] = '\0';
    tx = MC_RR_TX_NONE;
    rc = -1;

    if (mc_rr_begin(&rr, &tx) != 0 || mc_rr_load(&rr) != 0) {
        goto done;
    }

    /*
     * The names come from the run's row; the schema's CHECKs keep them
     * tame, and this keeps a name from ever leaving DIR if they change.
     */
    if (!mc_rr_safe_name(mc_rr_run(&rr, MC_RR_PROVIDER))
        || !mc_rr_safe_name(mc_rr_run(&rr, MC_RR_DAY))
        || !mc_rr_safe_name(mc_rr_run(&rr, MC_RR_CURRENCY)))
    {
        mc_rr_error(&rr, "run %s: provider, day or currency is not usable "
                    "in a file name", rr.id);
        goto done;
    }

    snprintf(rr.csv_name, sizeof(rr.csv_name), "recon-%s-%s-%s-run%s.csv",
             mc_rr_run(&rr, MC_RR_PROVIDER), mc_rr_run(&rr, MC_RR_DAY),
             mc_rr_run(&rr, MC_RR_CURRENCY), rr.id);
    snprintf(rr.html_name, sizeof(rr.html_name),
             "recon-%s-%s-%s-run%s.html", mc_rr_run(&rr, MC_RR_PROVIDER),
             mc_rr_run(&rr, MC_RR_DAY), mc_rr_run(&rr, MC_RR_CURRENCY),
             rr.id);

    dlen = strlen(dir);
    sep = dir[dlen - 1] == '/' ? "" : "/";

    /* room for the temp names' ".<pid>.<n>.tmp" too */
    if (dlen + strlen(rr.html_name) + 48 > MC_RR_PATH_MAX
        || snprintf(csv_final, sizeof(csv_final), "%s%s%s", dir, sep,
                    rr.csv_name) < 0
        || snprintf(html_final, sizeof(html_final), "%s%s%s", dir, sep,
                    rr.html_name) < 0)
    {
        mc_rr_error(&rr, "run %s: directory name too long: %s", rr.id, dir);
        goto done;
    }

    if (strlen(html_final) >= path_size) {
        mc_rr_error(&rr, "run %s: the report's path %s does not fit in %zu "
                    "bytes", rr.id, html_final, path_size);
        goto done;
    }

    if (mc_rr_open(&rr, dir, rr.csv_name, csv_tmp, sizeof(csv_tmp),
                   &rr.csv) != 0
        || mc_rr_open(&rr, dir, rr.html_name, html_tmp, sizeof(html_tmp),
                      &rr.html) != 0)
    {
        goto done;
    }

    fputs(MC_RR_CSV_HEADER, rr.csv);

    mc_rr_html_head(&rr);
    mc_rr_html_summary(&rr);
    mc_rr_html_chart(&rr);
    mc_rr_html_kinds(&rr);

    if (mc_rr_stream(&rr, "the items", MC_RR_ITEMS_SQL, mc_rr_item) != 0) {
        goto done;
    }

    mc_rr_html_items_end(&rr);

    if (mc_rr_stream(&rr, "what is in transit", MC_RR_TRANSIT_SQL,
                     mc_rr_transit_row) != 0)
    {
        goto done;
    }

    mc_rr_html_transit_end(&rr);
    mc_rr_html_tail(&rr);

    rc = mc_rr_end(&rr, tx, 1);
    tx = MC_RR_TX_NONE;

    if (rc != 0) {
        goto done;
    }

    rc = -1;

    if (mc_rr_close(&rr, &rr.csv, csv_tmp) != 0
        || mc_rr_close(&rr, &rr.html, html_tmp) != 0)
    {
        goto done;
    }

    /* the CSV first: the HTML links to it */
    if (rename(csv_tmp, csv_final) != 0) {
        mc_rr_error(&rr, "run %s: rename %s to %s: %s", rr.id, csv_tmp,
                    csv_final, strerror(errno));
        goto done;
    }

    csv_tmp[0] = '\0';

    if (rename(html_tmp, html_final) != 0) {
        mc_rr_error(&rr, "run %s: rename %s to %s: %s", rr.id, html_tmp,
                    html_final, strerror(errno));
        goto done;
    }

    html_tmp[0] = '\0';

    if (mc_rr_sync_dir(&rr, dir) != 0) {
        goto done;
    }

    if (csv_path != NULL) {
        memcpy(csv_path, csv_final, strlen(csv_final) + 1);
    }

    if (html_path != NULL) {
        memcpy(html_path, html_final, strlen(html_final) + 1);
    }

    rc = 0;

done:

    if (tx != MC_RR_TX_NONE) {
        mc_rr_end(&rr, tx, 0);
    }

    if (rr.csv != NULL) {
        fclose(rr.csv);
    }

    if (rr.html != NULL) {
        fclose(rr.html);
    }

    if (csv_tmp[0] != '\0') {
        unlink(csv_tmp);
    }

    if (html_tmp[0] != '\0') {
        unlink(html_tmp);
    }

    PQclear(rr.run);
    PQclear(rr.counts);
    free(rr.currencies);
    free(rr.buf.data);

    return rc;
}


static void
mc_rr_error(mc_rr_t *rr, const char *fmt, ...)
{
    va_list  ap;

    if (rr->err == NULL || rr->errlen == 0) {
        return;
    }

    va_start(ap, fmt);
    vsnprintf(rr->err, rr->errlen, fmt, ap);
    va_end(ap);
}


/* "what: <the reason already in err>" */

static void
mc_rr_context(mc_rr_t *rr, const char *fmt, ...)
{
    char     what[256], reason[1024];
    va_list  ap;

    if (rr->err == NULL || rr->errlen == 0) {
        return;
    }

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);

    snprintf(reason, sizeof(reason), "%s", rr->err);
    snprintf(rr->err, rr->errlen, "%s: %s", what, reason);
}


/* one statement with the run id as $1 (nparams 1) or none; NULL: failed */

static PGresult *
mc_rr_query(mc_rr_t *rr, const char *what, const char *sql, int nparams)
{
    size_t       len;
    PGresult    *res;
    const char  *params[1], *msg;

    params[0] = rr->id;

    res = PQexecParams(rr->conn, sql, nparams, NULL, params, NULL, NULL, 0);

    if (PQresultStatus(res) == PGRES_TUPLES_OK
        || PQresultStatus(res) == PGRES_COMMAND_OK)
    {
        return res;
    }

    /* one line: the primary message, without libpq's "LINE 1: ..." */
    msg = res != NULL ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY)
                      : NULL;
    if (msg == NULL) {
        msg = PQerrorMessage(rr->conn);
    }
    len = strlen(msg);
    while (len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == '\r')) {
        len--;
    }

    mc_rr_error(rr, "run %s: %s: %.*s", rr->id, what, (int) len, msg);
    PQclear(res);

    return NULL;
}


/*
 * The reads share one snapshot: their own read-only transaction when the
 * connection is idle.  Inside the caller's transaction (a run just
 * finished there, not yet committed, can have its report written too)
 * they run under a savepoint, so that a failed report leaves that
 * transaction usable.
 */

static int
mc_rr_begin(mc_rr_t *rr, int *tx)
{
    PGresult    *res;
    const char  *encoding;

    if (PQtransactionStatus(rr->conn) != PQTRANS_IDLE
        && PQtransactionStatus(rr->conn) != PQTRANS_INTRANS)
    {
        mc_rr_error(rr, "run %s: the database connection is busy, in a "
                    "failed transaction, or gone", rr->id);
        return -1;
    }

    /* the HTML says UTF-8, and so must the bytes the database sends */
    encoding = PQparameterStatus(rr->conn, "client_encoding");

    if (encoding == NULL || strcmp(encoding, "UTF8") != 0) {
        if (PQsetClientEncoding(rr->conn, "UTF8") != 0) {
            mc_rr_error(rr, "run %s: cannot set client_encoding to UTF8: "
                        "%s", rr->id, PQerrorMessage(rr->conn));
            return -1;
        }
    }

    if (PQtransactionStatus(rr->conn) == PQTRANS_IDLE) {
        res = mc_rr_query(rr, "begin",
                          "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                          0);
        *tx = MC_RR_TX_OWN;

    } else {
        res = mc_rr_query(rr, "savepoint", "SAVEPOINT mc_recon_report", 0);
        *tx = MC_RR_TX_SAVEPOINT;
    }

    if (res == NULL) {
        *tx = MC_RR_TX_NONE;
        return -1;
    }

    PQclear(res);

    return 0;
}


/*
 * Ends what mc_rr_begin() began: kept when ok (there is nothing to keep
 * but the caller's transaction), undone when not.  Only an ok end that
 * fails is an error; undoing after an error keeps the first reason.
 */

static int
mc_rr_end(mc_rr_t *rr, int tx, int ok)
{
    PGresult  *res;

    if (!ok) {
        res = PQexec(rr->conn, tx == MC_RR_TX_OWN
                               ? "ROLLBACK"
                               : "ROLLBACK TO SAVEPOINT mc_recon_report; "
                                 "RELEASE SAVEPOINT mc_recon_report");
        PQclear(res);
        return 0;
    }

    res = mc_rr_query(rr, "end", tx == MC_RR_TX_OWN
                                 ? "COMMIT"
                                 : "RELEASE SAVEPOINT mc_recon_report", 0);
    if (res == NULL) {
        return -1;
    }

    PQclear(res);

    return 0;
}


static int
mc_rr_load(mc_rr_t *rr)
{
    int        i, n;
    int64_t    digits;
    PGresult  *res;

    rr->run = mc_rr_query(rr, "reading the run", MC_RR_RUN_SQL, 1);
    if (rr->run == NULL) {
        return -1;
    }

    if (PQntuples(rr->run) != 1) {
        mc_rr_error(rr, "run %s does not exist", rr->id);
        return -1;
    }

    /* a running run's items are not all there yet, nor visible */
    if (strcmp(mc_rr_run(rr, MC_RR_VERDICT), "running") == 0) {
        mc_rr_error(rr, "run %s has not finished: no report yet", rr->id);
        return -1;
    }

    rr->counts = mc_rr_query(rr, "reading the counts", MC_RR_COUNTS_SQL, 1);
    if (rr->counts == NULL) {
        return -1;
    }

    res = mc_rr_query(rr, "reading the currencies", MC_RR_CURRENCY_SQL, 0);
    if (res == NULL) {
        return -1;
    }

    n = PQntuples(res);
    rr->currencies = calloc(n > 0 ? n : 1, sizeof(mc_rr_currency_t));

    if (rr->currencies == NULL) {
        PQclear(res);
        mc_rr_error(rr, "run %s: out of memory", rr->id);
        return -1;
    }

    for (i = 0; i < n; i++) {
        if (strlen(PQgetvalue(res, i, 0)) >= sizeof(rr->currencies[0].code)
            || mc_rr_int64(PQgetvalue(res, i, 1), &digits) != 0)
        {
            continue;     /* the schema's CHECKs make this impossible */
        }

        strcpy(rr->currencies[rr->ncurrencies].code, PQgetvalue(res, i, 0));
        rr->currencies[rr->ncurrencies].digits = (int) digits;
        rr->ncurrencies++;
    }

    PQclear(res);

    return 0;
}


/* a column of the run's row; NULL when SQL NULL */

static const char *
mc_rr_run(mc_rr_t *rr, int col)
{
    if (PQgetisnull(rr->run, 0, col)) {
        return NULL;
    }

    return PQgetvalue(rr->run, 0, col);
}


/* 1 and the count when the run has it, 0 when it has not */

static int
mc_rr_count(mc_rr_t *rr, const char *dimension, const char *name, int64_t *n)
{
    int  i, rows;

    rows = PQntuples(rr->counts);

    for (i = 0; i < rows; i++) {
        if (strcmp(PQgetvalue(rr->counts, i, 0), dimension) == 0
            && strcmp(PQgetvalue(rr->counts, i, 1), name) == 0)
        {
            return mc_rr_int64(PQgetvalue(rr->counts, i, 2), n) == 0;
        }
    }

    return 0;
}


static int
mc_rr_int64(const char *s, int64_t *v)
{
    char       *end;
    long long   n;

    if (s == NULL || s[0] == '\0') {
        return -1;
    }

    errno = 0;
    n = strtoll(s, &end, 10);

    if (errno != 0 || *end != '\0') {
        return -1;
    }

    *v = (int64_t) n;
    return 0;
}


/* letters, digits, '-' and '_' only: no '/', no "..", no spaces */

static int
mc_rr_safe_name(const char *s)
{
    if (s == NULL || s[0] == '\0') {
        return 0;
    }

    for ( /* void */ ; *s; s++) {
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')
              || (*s >= '0' && *s <= '9') || *s == '-' || *s == '_'))
        {
            return 0;
        }
    }

    return 1;
}


/* minor units as exact decimal text with the currency's digits */

static int
mc_rr_amount(mc_rr_t *rr, int64_t minor, const char *currency, char *buf,
    size_t size)
{
    size_t  i;

    if (currency == NULL) {
        mc_rr_error(rr, "amount %" PRId64 " has no currency", minor);
        return -1;
    }

    for (i = 0; i < rr->ncurrencies; i++) {
        if (strcmp(rr->currencies[i].code, currency) != 0) {
            continue;
        }

        if (mc_minor_format(minor, rr->currencies[i].digits, buf, size) < 0)
        {
            mc_rr_error(rr, "amount %" PRId64 " %s cannot be formatted",
                        minor, currency);
            return -1;
        }

        return 0;
    }

    mc_rr_error(rr, "amount %" PRId64 ": currency \"%s\" is not in "
                "mt5credit.currency", minor, currency);
    return -1;
}


static int
mc_rr_buf_add(mc_rr_t *rr, const char *s, size_t len)
{
    char         *p;
    size_t        cap;
    mc_rr_buf_t  *b;

    b = &rr->buf;

    if (b->len + len + 1 > b->cap) {
        for (cap = b->cap ? b->cap : 256; cap < b->len + len + 1; cap *= 2) {
            /* void */
        }

        p = realloc(b->data, cap);
        if (p == NULL) {
            mc_rr_error(rr, "out of memory");
            return -1;
        }

        b->data = p;
        b->cap = cap;
    }

    memcpy(b->data + b->len, s, len);
    b->len += len;
    b->data[b->len] = '\0';

    return 0;
}


/* a JSON value as text: strings as they are, null as nothing */

static int
mc_rr_buf_json(mc_rr_t *rr, json_t *v)
{
    int    n, rc;
    char   num[40], *text;

    switch (json_typeof(v)) {

    case JSON_STRING:
        return mc_rr_buf_add(rr, json_string_value(v), json_string_length(v));

    case JSON_INTEGER:
        n = snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
                     json_integer_value(v));
        return mc_rr_buf_add(rr, num, (size_t) n);

    case JSON_TRUE:
        return mc_rr_buf_add(rr, "true", 4);

    case JSON_FALSE:
        return mc_rr_buf_add(rr, "false", 5);

    case JSON_NULL:
        return 0;

    default:
        /* no field the schema writes is a real, object or array */
        text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        if (text == NULL) {
            mc_rr_error(rr, "out of memory");
            return -1;
        }

        rc = mc_rr_buf_add(rr, text, strlen(text));
        free(text);
        return rc;
    }
}


/* obj[key], an integer of minor units in obj[currency_key], as decimal */

static int
mc_rr_buf_amount(mc_rr_t *rr, json_t *obj, const char *key,
    const char *currency_key, int with_currency)
{
    json_t      *v;
    const char  *currency;
    char         text[MC_RR_AMOUNT_MAX];

    v = json_object_get(obj, key);

    if (v == NULL || json_is_null(v)) {
        return 0;
    }

    if (!json_is_integer(v)) {
        mc_rr_error(rr, "%s is not an integer of minor units", key);
        return -1;
    }

    currency = json_string_value(json_object_get(obj, currency_key));

    if (mc_rr_amount(rr, json_integer_value(v), currency, text,
                     sizeof(text)) != 0)
    {
        mc_rr_context(rr, "%s", key);
        return -1;
    }

    if (mc_rr_buf_add(rr, text, strlen(text)) != 0) {
        return -1;
    }

    if (with_currency) {
        if (mc_rr_buf_add(rr, " ", 1) != 0
            || mc_rr_buf_add(rr, currency, strlen(currency)) != 0)
        {
            return -1;
        }
    }

    return 0;
}


/*
 * A temp file next to the final name, so rename() is atomic: hidden
 * (".recon-...") so that nothing globbing for reports picks it up, and
 * created with O_EXCL, so two writers never share one.
 */

static int
mc_rr_open(mc_rr_t *rr, const char *dir, const char *name, char *tmp,
    size_t size, FILE **f)
{
    int          fd, i;
    const char  *sep;

    sep = dir[strlen(dir) - 1] == '/' ? "" : "/";
    fd = -1;

    for (i = 0; i < MC_RR_TMP_TRIES; i++) {
        snprintf(tmp, size, "%s%s.%s.%ld.%d.tmp", dir, sep, name,
                 (long) getpid(), i);

        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

        if (fd >= 0 || errno != EEXIST) {
            break;
        }
    }

    if (fd < 0) {
        mc_rr_error(rr, "run %s: %s: %s", rr->id, tmp, strerror(errno));
        tmp[0] = '\0';
        return -1;
    }

    *f = fdopen(fd, "w");

    if (*f == NULL) {
        mc_rr_error(rr, "run %s: %s: %s", rr->id, tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        tmp[0] = '\0';
        return -1;
    }

    return 0;
}


/* on disk before the rename: a crash must not leave an empty report */

static int
mc_rr_close(mc_rr_t *rr, FILE **f, const char *tmp)
{
    int   rc;
    FILE  *file;

    file = *f;
    *f = NULL;

    rc = 0;
    errno = 0;

    if (fflush(file) != 0 || ferror(file) || fsync(fileno(file)) != 0) {
        rc = -1;
    }

    if (fclose(file) != 0) {
        rc = -1;
    }

    if (rc != 0) {
        mc_rr_error(rr, "run %s: writing %s: %s", rr->id, tmp,
                    strerror(errno ? errno : EIO));
    }

    return rc;
}


static int
mc_rr_sync_dir(mc_rr_t *rr, const char *dir)
{
    int  fd;

    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd < 0 || fsync(fd) != 0) {
        mc_rr_error(rr, "run %s: syncing %s: %s", rr->id, dir,
                    strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }

    close(fd);

    return 0;
}


/*
 * The items, one row at a time (single-row mode): a run with a million
 * items costs the memory of one.  On a failure of our own the query is
 * cancelled rather than read to its end.
 */

static int
mc_rr_stream(mc_rr_t *rr, const char *what, const char *sql,
    int (*row)(mc_rr_t *rr, PGresult *res))
{
    int          rc;
    char         why[256];
    PGcancel    *cancel;
    PGresult    *res;
    const char  *params[1], *why_db;

    params[0] = rr->id;

    if (!PQsendQueryParams(rr->conn, sql, 1, NULL, params, NULL,
                           NULL, 0))
    {
        mc_rr_error(rr, "run %s: reading %s: %s", rr->id, what,
                    PQerrorMessage(rr->conn));
        return -1;
    }

    rc = 0;

    if (!PQsetSingleRowMode(rr->conn)) {
        mc_rr_error(rr, "run %s: reading %s: single-row mode "
                    "refused", rr->id, what);
        rc = -1;
    }

    while ((res = PQgetResult(rr->conn)) != NULL) {

        switch (PQresultStatus(res)) {

        case PGRES_SINGLE_TUPLE:
        case PGRES_TUPLES_OK:     /* the end (or all rows, if not single) */
            if (rc != 0) {
                break;
            }

            if (PQntuples(res) > 0 && row(rr, res) != 0) {
                rc = -1;

                cancel = PQgetCancel(rr->conn);
                if (cancel != NULL) {
                    PQcancel(cancel, why, sizeof(why));
                    PQfreeCancel(cancel);
                }
            }
            break;

        default:
            if (rc == 0) {
                why_db = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
                mc_rr_error(rr, "run %s: reading %s: %s", rr->id, what,
                            why_db != NULL ? why_db
                                           : PQerrorMessage(rr->conn));
                rc = -1;
            }
            break;
        }

        PQclear(res);
    }

    return rc;
}


static int
mc_rr_item(mc_rr_t *rr, PGresult *res)
{
    int      rc;
    json_t  *settlement, *credit, *deals;

    settlement = NULL;
    credit = NULL;
    deals = NULL;
    rc = -1;

    if (mc_rr_json(rr, res, MC_RR_ITEM_SETTLEMENT, "settlement",
                   &settlement) != 0
        || mc_rr_json(rr, res, MC_RR_ITEM_CREDIT, "credit", &credit) != 0
        || mc_rr_json(rr, res, MC_RR_ITEM_DEALS, "deals", &deals) != 0)
    {
        goto done;
    }

    if ((settlement != NULL && !json_is_object(settlement))
        || (credit != NULL && !json_is_object(credit))
        || (deals != NULL && !json_is_array(deals)))
    {
        mc_rr_error(rr, "settlement, credit or deals has the wrong shape");
        goto done;
    }

    if (mc_rr_csv_item(rr, res, settlement, credit, deals) != 0) {
        goto done;
    }

    if (rr->items < MC_RECON_REPORT_HTML_MAX
        && mc_rr_html_item(rr, res, settlement, credit, deals) != 0)
    {
        goto done;
    }

    rr->items++;

    /* a full disk shows here, not a million rows later */
    if (ferror(rr->csv) || ferror(rr->html)) {
        mc_rr_error(rr, "writing the report: %s",
                    strerror(errno ? errno : EIO));
        goto done;
    }

    rc = 0;

done:

    if (rc != 0) {
        mc_rr_context(rr, "run %s: item %s %s", rr->id,
                      PQgetvalue(res, 0, MC_RR_ITEM_KIND),
                      PQgetvalue(res, 0, MC_RR_ITEM_KEY));
    }

    json_decref(settlement);
    json_decref(credit);
    json_decref(deals);

    return rc;
}


/* a jsonb column, parsed: *j NULL for SQL NULL and JSON null */

static int
mc_rr_json(mc_rr_t *rr, PGresult *res, int col, const char *what,
    json_t **j)
{
    json_error_t  jerr;

    *j = NULL;

    if (PQgetisnull(res, 0, col)) {
        return 0;
    }

    *j = json_loadb(PQgetvalue(res, 0, col), PQgetlength(res, 0, col),
                    JSON_DECODE_ANY, &jerr);

    if (*j == NULL) {
        mc_rr_error(rr, "%s: %s", what, jerr.text);
        return -1;
    }

    if (json_is_null(*j)) {
        json_decref(*j);
        *j = NULL;
    }

    return 0;
}


static int
mc_rr_csv_item(mc_rr_t *rr, PGresult *res, json_t *settlement,
    json_t *credit, json_t *deals)
{
    int          col;
    int64_t      minor;
    const char  *amount;
    char         text[MC_RR_AMOUNT_MAX];

    mc_rr_csv(rr->csv, rr->id, strlen(rr->id), 1);

    for (col = MC_RR_ITEM_KIND; col <= MC_RR_ITEM_KEY; col++) {
        mc_rr_csv(rr->csv, PQgetvalue(res, 0, col), PQgetlength(res, 0, col),
                  0);
    }

    text[0] = '\0';

    if (!PQgetisnull(res, 0, MC_RR_ITEM_AMOUNT)) {
        amount = PQgetvalue(res, 0, MC_RR_ITEM_AMOUNT);

        if (mc_rr_int64(amount, &minor) != 0) {
            mc_rr_error(rr, "amount \"%s\" is not an integer", amount);
            return -1;
        }

        if (mc_rr_amount(rr, minor, PQgetisnull(res, 0, MC_RR_ITEM_CURRENCY)
                         ? NULL : PQgetvalue(res, 0, MC_RR_ITEM_CURRENCY),
                         text, sizeof(text)) != 0)
        {
            return -1;
        }
    }

    mc_rr_csv(rr->csv, text, strlen(text), 0);

    for (col = MC_RR_ITEM_CURRENCY; col <= MC_RR_ITEM_CASE; col++) {
        mc_rr_csv(rr->csv, PQgetvalue(res, 0, col), PQgetlength(res, 0, col),
                  0);
    }

    if (mc_rr_csv_json(rr, settlement, "row_id") != 0
        || mc_rr_csv_json(rr, settlement, "line_no") != 0
        || mc_rr_csv_json(rr, settlement, "category") != 0
        || mc_rr_csv_amount(rr, settlement, "gross_minor", "currency") != 0
        || mc_rr_csv_json(rr, settlement, "currency") != 0
        || mc_rr_csv_json(rr, credit, "reference") != 0
        || mc_rr_csv_json(rr, credit, "status") != 0
        || mc_rr_csv_json(rr, credit, "mt5_login") != 0
        || mc_rr_csv_amount(rr, credit, "amount_minor", "currency") != 0
        || mc_rr_csv_json(rr, credit, "currency") != 0
        || mc_rr_csv_deals(rr, deals, "deal_ticket", NULL) != 0
        || mc_rr_csv_deals(rr, deals, "mt5_login", NULL) != 0
        || mc_rr_csv_deals(rr, deals, "amount_minor", "currency") != 0
        || mc_rr_csv_deals(rr, deals, "comment", NULL) != 0)
    {
        return -1;
    }

    /* since_day and age_days are the in-transit rows' */
    fputs(",,\r\n", rr->csv);

    return 0;
}


/*
 * RFC 4180: quoted when it holds a comma, a quote, CR or LF; a formula's
 * first character turned into text by a leading apostrophe (OWASP's CSV
 * injection advice), quoted too.
 */

static void
mc_rr_csv(FILE *f, const char *s, size_t len, int first)
{
    size_t  i;
    int     formula;

    if (!first) {
        putc(',', f);
    }

    formula = mc_rr_csv_formula(s, len);

    for (i = 0; i < len && !formula; i++) {
        if (s[i] == ',' || s[i] == '"' || s[i] == '\r' || s[i] == '\n') {
            break;
        }
    }

    if (i == len && !formula) {
        fwrite(s, 1, len, f);
        return;
    }

    putc('"', f);

    if (formula) {
        putc('\'', f);
    }

    for (i = 0; i < len; i++) {
        if (s[i] == '"') {
            putc('"', f);
        }
        putc(s[i], f);
    }

    putc('"', f);
}


/* a cell a spreadsheet would run: = + - @ TAB CR first, not a number */

static int
mc_rr_csv_formula(const char *s, size_t len)
{
    size_t  i, digits;

    if (len == 0 || s[0] == '\0' || strchr("=+-@\t\r", s[0]) == NULL) {
        return 0;
    }

    if (s[0] != '-' && s[0] != '+') {
        return 1;
    }

    /* [+-]digits[.digits]: an amount, which a spreadsheet reads as one */
    digits = 0;
    for (i = 1; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
        digits++;
    }

    if (i < len && s[i] == '.' && digits > 0) {
        for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
            /* the fraction */
        }
    }

    return digits == 0 || i != len;
}


static int
mc_rr_csv_json(mc_rr_t *rr, json_t *obj, const char *key)
{
    json_t  *v;

    rr->buf.len = 0;

    v = json_object_get(obj, key);

    if (v != NULL && mc_rr_buf_json(rr, v) != 0) {
        return -1;
    }

    mc_rr_csv(rr->csv, rr->buf.data ? rr->buf.data : "", rr->buf.len, 0);

    return 0;
}


static int
mc_rr_csv_amount(mc_rr_t *rr, json_t *obj, const char *key,
    const char *currency_key)
{
    rr->buf.len = 0;

    if (obj != NULL && mc_rr_buf_amount(rr, obj, key, currency_key, 0) != 0)
    {
        return -1;
    }

    mc_rr_csv(rr->csv, rr->buf.data ? rr->buf.data : "", rr->buf.len, 0);

    return 0;
}


/* one field of every deal, joined with ';' */

static int
mc_rr_csv_deals(mc_rr_t *rr, json_t *deals, const char *key,
    const char *currency_key)
{
    size_t   i;
    json_t  *deal, *v;

    rr->buf.len = 0;

    json_array_foreach(deals, i, deal) {
        if (i > 0 && mc_rr_buf_add(rr, ";", 1) != 0) {
            return -1;
        }

        if (currency_key != NULL) {
            if (mc_rr_buf_amount(rr, deal, key, currency_key, 0) != 0) {
                mc_rr_context(rr, "deal %zu", i + 1);
                return -1;
            }
            continue;
        }

        v = json_object_get(deal, key);

        if (v != NULL && mc_rr_buf_json(rr, v) != 0) {
            return -1;
        }
    }

    mc_rr_csv(rr->csv, rr->buf.data ? rr->buf.data : "", rr->buf.len, 0);

    return 0;
}


static int
mc_rr_html_item(mc_rr_t *rr, PGresult *res, json_t *settlement,
    json_t *credit, json_t *deals)
{
    size_t       i;
    int64_t      minor;
    json_t      *deal;
    FILE        *f;
    const char  *severity, *currency;
    char         text[MC_RR_AMOUNT_MAX];

    f = rr->html;
    severity = PQgetvalue(res, 0, MC_RR_ITEM_SEVERITY);
    currency = PQgetisnull(res, 0, MC_RR_ITEM_CURRENCY)
               ? NULL : PQgetvalue(res, 0, MC_RR_ITEM_CURRENCY);

    fputs("<tr class=\"item\" data-kind=\"", f);
    mc_rr_esc(f, PQgetvalue(res, 0, MC_RR_ITEM_KIND));
    fputs("\" data-key=\"", f);
    mc_rr_escn(f, PQgetvalue(res, 0, MC_RR_ITEM_KEY),
               PQgetlength(res, 0, MC_RR_ITEM_KEY));
    fputs("\" data-severity=\"", f);
    mc_rr_esc(f, severity);
    fputs("\" data-movement=\"", f);
    mc_rr_esc(f, PQgetvalue(res, 0, MC_RR_ITEM_MOVEMENT));
    fputs("\" data-case=\"", f);
    mc_rr_esc(f, PQgetvalue(res, 0, MC_RR_ITEM_CASE));
    fputs("\">\n<td class=\"finding\"><span class=\"kind\">", f);
    mc_rr_esc(f, PQgetvalue(res, 0, MC_RR_ITEM_KIND));
    fputs("</span> <span class=\"sev ", f);
    mc_rr_esc(f, severity);
    fputs("\">", f);
    mc_rr_esc(f, severity);
    fputs("</span><br><span class=\"movement\">", f);
    mc_rr_esc(f, PQgetvalue(res, 0, MC_RR_ITEM_MOVEMENT));
    fputs("</span><br><code class=\"key\">", f);
    mc_rr_escn(f, PQgetvalue(res, 0, MC_RR_ITEM_KEY),
               PQgetlength(res, 0, MC_RR_ITEM_KEY));
    fputs("</code></td>\n<td class=\"amount num\">", f);

    if (PQgetisnull(res, 0, MC_RR_ITEM_AMOUNT)) {
        fputs(MC_RR_DASH, f);

    } else {
        /* the CSV line, written first, has checked amount and currency */
        if (mc_rr_int64(PQgetvalue(res, 0, MC_RR_ITEM_AMOUNT), &minor) != 0
            || mc_rr_amount(rr, minor, currency, text, sizeof(text)) != 0)
        {
            return -1;
        }

        fputs(text, f);
        fputs("&nbsp;", f);
        mc_rr_esc(f, currency);
    }

    fputs("</td>\n", f);

    if (settlement == NULL) {
        fputs("<td class=\"settlement missing\">none</td>\n", f);

    } else {
        fputs("<td class=\"settlement\">", f);
        if (mc_rr_html_dl(rr, settlement, mc_rr_settlement_fields) != 0) {
            mc_rr_context(rr, "settlement");
            return -1;
        }
        fputs("</td>\n", f);
    }

    if (credit == NULL) {
        fputs("<td class=\"credit missing\">none</td>\n", f);

    } else {
        fputs("<td class=\"credit\">", f);
        if (mc_rr_html_dl(rr, credit, mc_rr_credit_fields) != 0) {
            mc_rr_context(rr, "credit");
            return -1;
        }
        fputs("</td>\n", f);
    }

    if (deals == NULL || json_array_size(deals) == 0) {
        fputs("<td class=\"deals missing\">none</td>\n", f);

    } else {
        fputs("<td class=\"deals\">", f);

        json_array_foreach(deals, i, deal) {
            if (!json_is_object(deal)) {
                mc_rr_error(rr, "deal %zu is not an object", i + 1);
                return -1;
            }

            if (mc_rr_html_dl(rr, deal, mc_rr_deal_fields) != 0) {
                mc_rr_context(rr, "deal %zu", i + 1);
                return -1;
            }
        }

        fputs("</td>\n", f);
    }

    fputs("<td class=\"case num\">", f);
    mc_rr_esc(f, PQgetvalue(res, 0, MC_RR_ITEM_CASE));
    fputs("</td>\n</tr>\n", f);

    return 0;
}


/* a record's fields as a definition list; fields it lacks are left out */

static int
mc_rr_html_dl(mc_rr_t *rr, json_t *obj, const mc_rr_field_t *fields)
{
    json_t  *v;
    FILE    *f;

    f = rr->html;

    fputs("<dl>", f);

    for ( /* void */ ; fields->key != NULL; fields++) {
        v = json_object_get(obj, fields->key);

        if (v == NULL || json_is_null(v)) {
            continue;
        }

        rr->buf.len = 0;

        if (fields->currency != NULL) {
            if (mc_rr_buf_amount(rr, obj, fields->key, fields->currency, 1)
                != 0)
            {
                return -1;
            }

        } else if (mc_rr_buf_json(rr, v) != 0) {
            return -1;
        }

        fputs("<dt>", f);
        fputs(fields->label, f);
        fputs("</dt><dd data-field=\"", f);
        fputs(fields->key, f);
        fputs(fields->currency != NULL ? "\" class=\"num\">" : "\">", f);
        mc_rr_escn(f, rr->buf.data, rr->buf.len);
        fputs("</dd>", f);
    }

    fputs("</dl>", f);

    return 0;
}


static void
mc_rr_html_head(mc_rr_t *rr)
{
    FILE        *f;
    const char  *verdict, *reason;

    f = rr->html;
    verdict = mc_rr_run(rr, MC_RR_VERDICT);
    reason = mc_rr_run(rr, MC_RR_REASON);

    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
          "<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, "
          "initial-scale=1\">\n<title>", f);

    fputs("Reconciliation ", f);
    mc_rr_esc(f, mc_rr_run(rr, MC_RR_PROVIDER));
    putc(' ', f);
    mc_rr_esc(f, mc_rr_run(rr, MC_RR_DAY));
    putc(' ', f);
    mc_rr_esc(f, mc_rr_run(rr, MC_RR_CURRENCY));
    fprintf(f, " " MC_RR_DASH " run %s</title>\n", rr->id);

    fputs("<style>\n"
          "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;"
          "color:#1a1a1a;background:#fff}\n"
          "h1{font-size:1.4em;margin:0 0 .6em}\n"
          "h2{font-size:1.15em;margin:1.6em 0 .5em}\n"
          "table{border-collapse:collapse}\n"
          "th,td{border:1px solid #ccc;padding:.3em .5em;text-align:left;"
          "vertical-align:top}\n"
          "thead th{background:#f3f3f3}\n"
          ".num{text-align:right;font-variant-numeric:tabular-nums;"
          "white-space:nowrap}\n"
          "td,dd,code{unicode-bidi:isolate;overflow-wrap:anywhere}\n"
          "code{font-family:ui-monospace,monospace}\n"
          "#verdict{padding:.6em 1em;border:2px solid #455a64;"
          "border-radius:4px;font-size:1.2em;background:#eceff1}\n"
          "#verdict .word{font-weight:bold;text-transform:uppercase}\n"
          "#verdict.reconciled{background:#e8f5e9;border-color:#2e7d32}\n"
          "#verdict.pending{background:#fff8e1;border-color:#f9a825}\n"
          "#verdict.breaks{background:#ffebee;border-color:#c62828}\n"
          "#verdict.incomplete{background:#eceff1;border-color:#37474f}\n"
          "#summary tbody.run th{font-weight:normal;color:#555}\n"
          "#chart{max-width:100%;height:auto}\n"
          "#mismatches dl{margin:0;display:grid;"
          "grid-template-columns:auto 1fr;gap:0 .6em;font-size:.9em}\n"
          "#mismatches dt{color:#666}\n"
          "#mismatches dd{margin:0}\n"
          "#mismatches dd.num{text-align:left}\n"
          "#mismatches dl+dl{border-top:1px dashed #bbb;margin-top:.3em;"
          "padding-top:.3em}\n"
          "#mismatches td.missing{background:#fff0f0;color:#b71c1c;"
          "font-style:italic;text-align:center;vertical-align:middle}\n"
          ".sev{font-size:.8em;padding:0 .4em;border-radius:3px;color:#fff;"
          "background:#607d8b}\n"
          ".sev.critical{background:#6a1b9a}.sev.high{background:#c62828}\n"
          ".sev.medium{background:#e65100}\n"
          ".more{font-weight:bold}\n"
          "@media print{#kind-filter-box{display:none}}\n"
          "</style>\n</head>\n<body>\n", f);

    fputs("<h1>Reconciliation ", f);
    mc_rr_esc(f, mc_rr_run(rr, MC_RR_PROVIDER));
    putc(' ', f);
    mc_rr_esc(f, mc_rr_run(rr, MC_RR_DAY));
    putc(' ', f);
    mc_rr_esc(f, mc_rr_run(rr, MC_RR_CURRENCY));
    fprintf(f, " " MC_RR_DASH " run %s</h1>\n", rr->id);

    fputs("<div id=\"verdict\" class=\"verdict ", f);
    mc_rr_esc(f, verdict);
    fputs("\" data-verdict=\"", f);
    mc_rr_esc(f, verdict);
    fputs("\"><span class=\"word\">", f);
    mc_rr_esc(f, verdict);
    fputs("</span>", f);

    if (strcmp(verdict, "incomplete") == 0) {
        fputs(": <span class=\"reason\">", f);
        mc_rr_esc(f, reason != NULL ? reason : "");
        fputs("</span> (the inputs could not be shown complete; "
              "no items were recorded)", f);

    } else if (strcmp(verdict, "breaks") == 0) {
        fputs(": the three records disagree; every difference below is "
              "a case to resolve", f);

    } else if (strcmp(verdict, "pending") == 0) {
        fputs(": no differences, but credits were still in flight at the "
              "cut-off", f);

    } else if (strcmp(verdict, "reconciled") == 0) {
        fputs(": settlement, credits and MT5 deals agree", f);
    }

    fputs("</div>\n", f);

    fputs("<p>Every item, with all fields: <a href=\"", f);
    mc_rr_esc(f, rr->csv_name);
    fputs("\">", f);
    mc_rr_esc(f, rr->csv_name);
    fputs("</a></p>\n", f);
}


static void
mc_rr_html_summary(mc_rr_t *rr)
{
    int          i, r, rows, known;
    int64_t      n;
    FILE        *f;
    const char  *name, *control, *digest, *previous;

    f = rr->html;

    fputs("<h2>Summary</h2>\n<table id=\"summary\">\n<tbody class=\"counts\">"
          "\n", f);

    for (i = 0; mc_rr_summary[i][0] != NULL; i++) {
        fputs("<tr data-name=\"", f);
        fputs(mc_rr_summary[i][0], f);

        if (mc_rr_count(rr, "summary", mc_rr_summary[i][0], &n)) {
            fprintf(f, "\"><th>%s</th><td class=\"n num\">%" PRId64
                    "</td></tr>\n", mc_rr_summary[i][1], n);

        } else {
            /* an incomplete run counted nothing: not zero, not known */
            fprintf(f, "\"><th>%s</th><td class=\"n num none\">"
                    MC_RR_DASH "</td></tr>\n", mc_rr_summary[i][1]);
        }
    }

    /* counts a later schema adds still show, under their own names */
    rows = PQntuples(rr->counts);

    for (r = 0; r < rows; r++) {
        if (strcmp(PQgetvalue(rr->counts, r, 0), "summary") != 0) {
            continue;
        }

        name = PQgetvalue(rr->counts, r, 1);
        known = 0;

        for (i = 0; mc_rr_summary[i][0] != NULL; i++) {
            if (strcmp(mc_rr_summary[i][0], name) == 0) {
                known = 1;
            }
        }

        if (!known) {
            fputs("<tr data-name=\"", f);
            mc_rr_esc(f, name);
            fputs("\"><th>", f);
            mc_rr_esc(f, name);
            fputs("</th><td class=\"n num\">", f);
            mc_rr_esc(f, PQgetvalue(rr->counts, r, 2));
            fputs("</td></tr>\n", f);
        }
    }

    fputs("</tbody>\n<tbody class=\"run\">\n", f);

    mc_rr_html_time(rr, "window_start", "window start", MC_RR_WINDOW_START);
    mc_rr_html_time(rr, "window_end", "window end", MC_RR_WINDOW_END);
    mc_rr_html_time(rr, "deal_window_end", "deals fetched until",
                    MC_RR_DEAL_WINDOW_END);
    mc_rr_html_wait(rr, "match_window_days", "matching window",
                    MC_RR_WINDOW_DAYS, "days");
    mc_rr_html_wait(rr, "settlement_grace_hours", "settlement grace",
                    MC_RR_GRACE_HOURS, "hours");

    fputs("<tr data-field=\"time_zone\"><th>time zone</th><td>", f);
    mc_rr_esc(f, mc_rr_run(rr, MC_RR_TIME_ZONE));
    fputs("</td></tr>\n<tr data-field=\"started_by\"><th>started by</th><td>",
          f);
    mc_rr_esc(f, mc_rr_run(rr, MC_RR_STARTED_BY));
    fputs("</td></tr>\n", f);

    mc_rr_html_time(rr, "started_at", "started", MC_RR_STARTED_AT);
    mc_rr_html_time(rr, "finished_at", "finished", MC_RR_FINISHED_AT);

    fputs("<tr data-field=\"settlement_sha256\"><th>settlement file (", f);
    mc_rr_esc(f, mc_rr_run(rr, MC_RR_FORMAT));
    fputs(") SHA-256</th><td>", f);
    mc_rr_html_code(f, mc_rr_run(rr, MC_RR_SETTLEMENT_SHA256));
    fputs("</td></tr>\n", f);

    control = mc_rr_run(rr, MC_RR_CONTROL_SHA256);
    fputs("<tr data-field=\"control_sha256\"><th>control totals SHA-256</th>"
          "<td>", f);
    mc_rr_html_code(f, control);
    fputs("</td></tr>\n", f);

    digest = mc_rr_run(rr, MC_RR_INPUT_DIGEST);
    fputs("<tr data-field=\"input_digest\"><th>input digest</th><td>", f);
    mc_rr_html_code(f, digest);
    fputs("</td></tr>\n", f);

    previous = mc_rr_run(rr, MC_RR_PREVIOUS);
    fputs("<tr data-field=\"previous_run\"><th>previous run</th><td>", f);

    if (previous == NULL) {
        fputs("none", f);

    } else if (mc_rr_safe_name(mc_rr_run(rr, MC_RR_PREVIOUS_PROVIDER))
               && mc_rr_safe_name(mc_rr_run(rr, MC_RR_PREVIOUS_DAY))
               && mc_rr_safe_name(mc_rr_run(rr, MC_RR_PREVIOUS_CURRENCY))
               && mc_rr_safe_name(previous))
    {
        /* its report, if written, sits next to this one */
        fprintf(f, "<a href=\"recon-%s-%s-%s-run%s.html\">run %s</a>",
                mc_rr_run(rr, MC_RR_PREVIOUS_PROVIDER),
                mc_rr_run(rr, MC_RR_PREVIOUS_DAY),
                mc_rr_run(rr, MC_RR_PREVIOUS_CURRENCY), previous, previous);

    } else {
        fputs("run ", f);
        mc_rr_esc(f, previous);
    }

    fputs("</td></tr>\n</tbody>\n</table>\n", f);
}


/* an instant: the run's local time, the UTC instant in datetime="" */

static void
mc_rr_html_time(mc_rr_t *rr, const char *name, const char *label, int col)
{
    FILE        *f;
    const char  *local, *utc;

    f = rr->html;
    local = mc_rr_run(rr, col);
    utc = mc_rr_run(rr, col + 1);

    fprintf(f, "<tr data-field=\"%s\"><th>%s</th><td>", name, label);

    if (local == NULL || utc == NULL) {
        fputs("none", f);

    } else {
        fputs("<time datetime=\"", f);
        mc_rr_esc(f, utc);
        fputs("\">", f);
        mc_rr_esc(f, local);
        fputs("</time> ", f);
        mc_rr_esc(f, mc_rr_run(rr, MC_RR_TIME_ZONE));
    }

    fputs("</td></tr>\n", f);
}


/*
 * How long an unpaired item waited in this run: the window (a credit, 040)
 * or the grace (a settlement row, 067).  A run before 067 has no grace:
 * its rows waited the window.
 */

static void
mc_rr_html_wait(mc_rr_t *rr, const char *name, const char *label, int col,
    const char *unit)
{
    FILE        *f;
    const char  *v;

    f = rr->html;
    v = mc_rr_run(rr, col);

    fprintf(f, "<tr data-field=\"%s\"><th>%s</th><td>", name, label);

    if (v == NULL) {
        fputs("the window (a run before sql/067)", f);

    } else {
        mc_rr_esc(f, v);
        fprintf(f, " %s", unit);
    }

    fputs("</td></tr>\n", f);
}


/* a digest in monospace, or "none" */

static void
mc_rr_html_code(FILE *f, const char *s)
{
    if (s == NULL) {
        fputs("none", f);
        return;
    }

    fputs("<code>", f);
    mc_rr_esc(f, s);
    fputs("</code>", f);
}


/*
 * Matched against mismatched, one bar per movement, as plain SVG: the
 * numbers are in data-* attributes, <title> tooltips and a text label,
 * so neither a person nor a test needs script to read it.
 */

static void
mc_rr_html_chart(mc_rr_t *rr)
{
    int          i, bars, y, height, width;
    FILE        *f;
    int64_t      matched[8], mismatched[8], max, wm, wx;
    const char  *m;

    f = rr->html;
    max = 0;
    bars = 0;

    for (i = 0; mc_rr_movements[i] != NULL; i++) {
        if (!mc_rr_count(rr, "matched", mc_rr_movements[i], &matched[i])) {
            matched[i] = 0;
        }

        if (!mc_rr_count(rr, "mismatched", mc_rr_movements[i],
                         &mismatched[i]))
        {
            mismatched[i] = 0;
        }

        if (matched[i] + mismatched[i] > 0) {
            bars++;
            if (matched[i] + mismatched[i] > max) {
                max = matched[i] + mismatched[i];
            }
        }
    }

    width = MC_RR_CHART_LABEL + MC_RR_CHART_BARS + MC_RR_CHART_TEXT;
    height = 2 * MC_RR_CHART_PAD + (bars > 0 ? bars + 1 : 1) * MC_RR_CHART_ROW;

    fprintf(f, "<h2>Movements</h2>\n"
            "<svg id=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" "
            "role=\"img\" aria-labelledby=\"chart-title\" width=\"%d\" "
            "height=\"%d\" viewBox=\"0 0 %d %d\" font-size=\"13\">\n"
            "<title id=\"chart-title\">Matched and mismatched movements"
            "</title>\n", width, height, width, height);

    y = MC_RR_CHART_PAD;

    if (bars == 0) {
        fprintf(f, "<text x=\"0\" y=\"%d\">No movements were counted."
                "</text>\n</svg>\n", y + 19);
        return;
    }

    for (i = 0; mc_rr_movements[i] != NULL; i++) {
        if (matched[i] + mismatched[i] == 0) {
            continue;
        }

        m = mc_rr_movements[i];

        /* at least 2 units: one item in a million must still be seen */
        wm = matched[i] * MC_RR_CHART_BARS / max;
        wx = mismatched[i] * MC_RR_CHART_BARS / max;

        if (matched[i] > 0 && wm < 2) {
            wm = 2;
        }

        if (mismatched[i] > 0 && wx < 2) {
            wx = 2;
        }

        fprintf(f, "<g class=\"bar\" data-movement=\"%s\" data-matched=\"%"
                PRId64 "\" data-mismatched=\"%" PRId64 "\">\n"
                "<text class=\"label\" x=\"0\" y=\"%d\">%s</text>\n",
                m, matched[i], mismatched[i], y + 19, m);

        if (matched[i] > 0) {
            fprintf(f, "<rect class=\"matched\" x=\"%d\" y=\"%d\" "
                    "width=\"%" PRId64 "\" height=\"22\" fill=\""
                    MC_RR_GREEN "\"><title>%s: %" PRId64 " matched</title>"
                    "</rect>\n", MC_RR_CHART_LABEL, y + 4, wm, m,
                    matched[i]);
        }

        if (mismatched[i] > 0) {
            fprintf(f, "<rect class=\"mismatched\" x=\"%" PRId64 "\" "
                    "y=\"%d\" width=\"%" PRId64 "\" height=\"22\" fill=\""
                    MC_RR_RED "\"><title>%s: %" PRId64 " mismatched</title>"
                    "</rect>\n", MC_RR_CHART_LABEL + wm, y + 4, wx, m,
                    mismatched[i]);
        }

        fprintf(f, "<text class=\"value\" x=\"%" PRId64 "\" y=\"%d\">"
                "matched %" PRId64 " / mismatched %" PRId64 "</text>\n"
                "</g>\n", MC_RR_CHART_LABEL + wm + wx + 8, y + 19,
                matched[i], mismatched[i]);

        y += MC_RR_CHART_ROW;
    }

    /* the legend */
    y += MC_RR_CHART_PAD;

    fprintf(f, "<g class=\"legend\">\n"
            "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\""
            MC_RR_GREEN "\"/><text x=\"%d\" y=\"%d\">matched</text>\n"
            "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\""
            MC_RR_RED "\"/><text x=\"%d\" y=\"%d\">mismatched</text>\n"
            "</g>\n</svg>\n",
            MC_RR_CHART_LABEL, y, MC_RR_CHART_LABEL + 20, y + 12,
            MC_RR_CHART_LABEL + 120, y, MC_RR_CHART_LABEL + 140, y + 12);
}


static void
mc_rr_html_kinds(mc_rr_t *rr)
{
    int          r, rows;
    FILE        *f;
    int64_t      n, total;
    const char  *kind;

    f = rr->html;
    rows = PQntuples(rr->counts);
    total = 0;

    fputs("<h2>Findings by kind</h2>\n<table id=\"kinds\">\n"
          "<thead><tr><th>kind</th><th>count</th></tr></thead>\n<tbody>\n",
          f);

    for (r = 0; r < rows; r++) {
        if (strcmp(PQgetvalue(rr->counts, r, 0), "kind") != 0) {
            continue;
        }

        kind = PQgetvalue(rr->counts, r, 1);

        if (mc_rr_int64(PQgetvalue(rr->counts, r, 2), &n) == 0) {
            total += n;
        }

        fputs("<tr data-kind=\"", f);
        mc_rr_esc(f, kind);
        fputs("\"><td>", f);
        mc_rr_esc(f, kind);
        fputs("</td><td class=\"n num\">", f);
        mc_rr_esc(f, PQgetvalue(rr->counts, r, 2));
        fputs("</td></tr>\n", f);
    }

    fprintf(f, "</tbody>\n<tfoot><tr><th>all</th><td class=\"n num\">%"
            PRId64 "</td></tr></tfoot>\n</table>\n", total);

    /* hidden until the script below shows it: without script it is moot */
    fputs("<h2>Differences</h2>\n"
          "<p id=\"kind-filter-box\" hidden><label for=\"kind-filter\">"
          "Show</label> <select id=\"kind-filter\">\n"
          "<option value=\"\">all kinds</option>\n", f);

    for (r = 0; r < rows; r++) {
        if (strcmp(PQgetvalue(rr->counts, r, 0), "kind") != 0) {
            continue;
        }

        kind = PQgetvalue(rr->counts, r, 1);

        fputs("<option value=\"", f);
        mc_rr_esc(f, kind);
        fputs("\">", f);
        mc_rr_esc(f, kind);
        fputs(" (", f);
        mc_rr_esc(f, PQgetvalue(rr->counts, r, 2));
        fputs(")</option>\n", f);
    }

    fputs("</select></p>\n"
          "<table id=\"mismatches\">\n<thead><tr><th>finding</th>"
          "<th>amount</th><th>settlement</th><th>our credit</th>"
          "<th>MT5 deal(s)</th><th>case</th></tr></thead>\n<tbody>\n", f);
}


static void
mc_rr_html_items_end(mc_rr_t *rr)
{
    FILE     *f;
    int64_t   shown;

    f = rr->html;

    if (rr->items == 0) {
        fprintf(f, "<tr class=\"none\"><td colspan=\"6\">%s</td></tr>\n",
                strcmp(mc_rr_run(rr, MC_RR_VERDICT), "incomplete") == 0
                ? "No items: the run is incomplete." : "No differences.");
    }

    fputs("</tbody>\n</table>\n", f);

    shown = rr->items < MC_RECON_REPORT_HTML_MAX
            ? rr->items : MC_RECON_REPORT_HTML_MAX;

    fprintf(f, "<p id=\"items-shown\" data-shown=\"%" PRId64 "\" "
            "data-total=\"%" PRId64 "\">%" PRId64 " of %" PRId64
            " items shown.</p>\n", shown, rr->items, shown, rr->items);

    if (rr->items > shown) {
        fprintf(f, "<p id=\"more\" class=\"more\" data-more=\"%" PRId64
                "\">%" PRId64 " more items are only in the CSV: <a href=\"",
                rr->items - shown, rr->items - shown);
        mc_rr_esc(f, rr->csv_name);
        fputs("\">", f);
        mc_rr_esc(f, rr->csv_name);
        fputs("</a></p>\n", f);
    }

    fputs("<h2>In transit</h2>\n"
          "<p>Waiting for their partner on a later day, inside the "
          "matching window: no break yet.</p>\n"
          "<table id=\"transit\">\n<thead><tr><th>side</th><th>item</th>"
          "<th>since</th><th>age (days)</th><th>movement</th>"
          "<th>amount</th><th>status</th></tr></thead>\n<tbody>\n", f);
}


/* one row of what is in transit: every one in the CSV, the first in HTML */
static int
mc_rr_transit_row(mc_rr_t *rr, PGresult *res)
{
    int          col;
    FILE        *f;
    int64_t      minor;
    const char  *v;
    char         text[MC_RR_AMOUNT_MAX];

    v = PQgetvalue(res, 0, MC_RR_TRANSIT_AMOUNT);

    if (mc_rr_int64(v, &minor) != 0) {
        mc_rr_error(rr, "in transit: amount \"%s\" is not an integer", v);
        return -1;
    }

    if (mc_rr_amount(rr, minor, PQgetvalue(res, 0, MC_RR_TRANSIT_CURRENCY),
                     text, sizeof(text)) != 0)
    {
        return -1;
    }

    /* run_id, kind, severity, movement, item_key, amount, currency */
    f = rr->csv;
    mc_rr_csv(f, rr->id, strlen(rr->id), 1);
    mc_rr_csv(f, "in_transit", 10, 0);
    mc_rr_csv(f, "", 0, 0);
    v = PQgetvalue(res, 0, MC_RR_TRANSIT_MOVEMENT);
    mc_rr_csv(f, v, strlen(v), 0);
    v = PQgetvalue(res, 0, MC_RR_TRANSIT_KEY);
    mc_rr_csv(f, v, strlen(v), 0);
    mc_rr_csv(f, text, strlen(text), 0);
    v = PQgetvalue(res, 0, MC_RR_TRANSIT_CURRENCY);
    mc_rr_csv(f, v, strlen(v), 0);

    /* case; the settlement row's or the credit's fields; no deals */
    if (strcmp(PQgetvalue(res, 0, MC_RR_TRANSIT_SIDE), "settlement") == 0) {
        fputc(',', f);
        v = PQgetvalue(res, 0, MC_RR_TRANSIT_KEY);
        mc_rr_csv(f, v, strlen(v), 0);
        fputc(',', f);
        v = PQgetvalue(res, 0, MC_RR_TRANSIT_MOVEMENT);
        mc_rr_csv(f, v, strlen(v), 0);
        mc_rr_csv(f, text, strlen(text), 0);
        v = PQgetvalue(res, 0, MC_RR_TRANSIT_CURRENCY);
        mc_rr_csv(f, v, strlen(v), 0);
        fputs(",,,,,,,,,", f);

    } else {
        fputs(",,,,,,", f);
        v = PQgetvalue(res, 0, MC_RR_TRANSIT_KEY);
        mc_rr_csv(f, v, strlen(v), 0);
        v = PQgetvalue(res, 0, MC_RR_TRANSIT_STATUS);
        mc_rr_csv(f, v, strlen(v), 0);
        fputc(',', f);
        mc_rr_csv(f, text, strlen(text), 0);
        v = PQgetvalue(res, 0, MC_RR_TRANSIT_CURRENCY);
        mc_rr_csv(f, v, strlen(v), 0);
        fputs(",,,,", f);
    }

    for (col = MC_RR_TRANSIT_SINCE; col <= MC_RR_TRANSIT_AGE; col++) {
        v = PQgetvalue(res, 0, col);
        mc_rr_csv(f, v, strlen(v), 0);
    }
    fputs("\r\n", f);

    if (rr->transit++ >= MC_RECON_REPORT_HTML_MAX) {
        return 0;
    }

    f = rr->html;
    fputs("<tr class=\"transit\" data-side=\"", f);
    mc_rr_esc(f, PQgetvalue(res, 0, MC_RR_TRANSIT_SIDE));
    fputs("\" data-age=\"", f);
    mc_rr_esc(f, PQgetvalue(res, 0, MC_RR_TRANSIT_AGE));
    fputs("\"><td>", f);
    mc_rr_esc(f, PQgetvalue(res, 0, MC_RR_TRANSIT_SIDE));
    fputs("</td><td class=\"key\"><code>", f);
    mc_rr_esc(f, PQgetvalue(res, 0, MC_RR_TRANSIT_KEY));
    fputs("</code></td><td>", f);
    mc_rr_esc(f, PQgetvalue(res, 0, MC_RR_TRANSIT_SINCE));
    fputs("</td><td class=\"age num\">", f);
    mc_rr_esc(f, PQgetvalue(res, 0, MC_RR_TRANSIT_AGE));
    fputs("</td><td>", f);
    mc_rr_esc(f, PQgetvalue(res, 0, MC_RR_TRANSIT_MOVEMENT));
    fputs("</td><td class=\"num\">", f);
    mc_rr_esc(f, text);
    fputc(' ', f);
    mc_rr_esc(f, PQgetvalue(res, 0, MC_RR_TRANSIT_CURRENCY));
    fputs("</td><td>", f);
    mc_rr_esc(f, PQgetvalue(res, 0, MC_RR_TRANSIT_STATUS));
    fputs("</td></tr>\n", f);

    return 0;
}


static void
mc_rr_html_transit_end(mc_rr_t *rr)
{
    FILE     *f;
    int64_t   shown;

    f = rr->html;

    if (rr->transit == 0) {
        fputs("<tr class=\"none\"><td colspan=\"7\">Nothing in transit."
              "</td></tr>\n", f);
    }

    shown = rr->transit < MC_RECON_REPORT_HTML_MAX
            ? rr->transit : MC_RECON_REPORT_HTML_MAX;

    fprintf(f, "</tbody>\n</table>\n<p id=\"transit-shown\" "
            "data-shown=\"%" PRId64 "\" data-total=\"%" PRId64 "\">%"
            PRId64 " of %" PRId64 " in transit shown%s.</p>\n", shown,
            rr->transit, shown, rr->transit,
            rr->transit > shown ? "; the rest are in the CSV" : "");
}


static void
mc_rr_html_tail(mc_rr_t *rr)
{
    FILE  *f = rr->html;

    fputs("<script>\n"
          "(function () {\n"
          "  var box = document.getElementById('kind-filter-box');\n"
          "  var sel = document.getElementById('kind-filter');\n"
          "  if (!box || !sel) { return; }\n"
          "  box.hidden = false;\n"
          "  sel.addEventListener('change', function () {\n"
          "    var rows = document.querySelectorAll('#mismatches tr.item');\n"
          "    for (var i = 0; i < rows.length; i++) {\n"
          "      rows[i].hidden = sel.value !== ''\n"
          "        && rows[i].getAttribute('data-kind') !== sel.value;\n"
          "    }\n"
          "  });\n"
          "})();\n"
          "</script>\n</body>\n</html>\n", f);
}


static void
mc_rr_esc(FILE *f, const char *s)
{
    if (s != NULL) {
        mc_rr_escn(f, s, strlen(s));
    }
}


/*
 * Text for HTML, in element content and in quoted attributes alike:
 * & < > " ' as references, and what HTML may not carry at all (controls
 * other than tab, LF and CR, C1 controls, noncharacters, broken UTF-8)
 * as U+FFFD, so that nothing from outside can end an attribute, open a
 * tag, or make the document invalid.  Bidi embeddings, overrides and
 * isolates become U+FFFD too: a deal comment must not turn "dep:123"
 * around on screen.  The CSV keeps every byte as it was.
 */

static void
mc_rr_escn(FILE *f, const char *s, size_t len)
{
    size_t         i, k, n;
    uint32_t       cp;
    unsigned char  c;

    for (i = 0; i < len; i += n) {
        c = (unsigned char) s[i];
        n = 1;

        if (c < 0x80) {
            switch (c) {
            case '&':
                fputs("&amp;", f);
                break;
            case '<':
                fputs("&lt;", f);
                break;
            case '>':
                fputs("&gt;", f);
                break;
            case '"':
                fputs("&quot;", f);
                break;
            case '\'':
                fputs("&#39;", f);
                break;
            case '\t':
            case '\n':
            case '\r':
                putc(c, f);
                break;
            default:
                if (c < 0x20 || c == 0x7f) {
                    fputs(MC_RR_REPLACEMENT, f);
                } else {
                    putc(c, f);
                }
            }

            continue;
        }

        if (c >= 0xc2 && c <= 0xdf) {
            n = 2;
            cp = c & 0x1f;

        } else if (c >= 0xe0 && c <= 0xef) {
            n = 3;
            cp = c & 0x0f;

        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 4;
            cp = c & 0x07;

        } else {
            fputs(MC_RR_REPLACEMENT, f);
            continue;
        }

        for (k = 1; k < n && i + k < len; k++) {
            if (((unsigned char) s[i + k] & 0xc0) != 0x80) {
                break;
            }
            cp = cp << 6 | ((unsigned char) s[i + k] & 0x3f);
        }

        if (k < n) {
            /* cut short: one U+FFFD for the bytes that were there */
            fputs(MC_RR_REPLACEMENT, f);
            n = k;
            continue;
        }

        if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000)
            || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)
            || cp <= 0x9f
            || (cp >= 0xfdd0 && cp <= 0xfdef) || (cp & 0xfffe) == 0xfffe
            || (cp >= 0x202a && cp <= 0x202e)
            || (cp >= 0x2066 && cp <= 0x2069))
        {
            fputs(MC_RR_REPLACEMENT, f);
            continue;
        }

        fwrite(s + i, 1, n, f);
    }
}
