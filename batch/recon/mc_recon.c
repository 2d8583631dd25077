/*
 * Copyright (C) mt5-credit
 *
 * The order of a run, and why:
 *   1. hash the input files (a re-run with the same inputs is the same run);
 *   2. BEGIN; recon_begin() fixes the day's window in its time zone;
 *   3. a thread starts fetching MT5's balance deals of the window, all
 *      servers, in full, spooling them to a temporary file: the fetch is
 *      the longest part, and needs nothing of the database;
 *   4. meanwhile COPY the settlement file and its control totals, parsed
 *      as they stream (a bad line aborts the COPY: nothing of it is kept),
 *      and recon_load_settlement() checks what a line parser cannot
 *      (duplicates, rows outside the day, the control totals);
 *   5. once the fetch is complete, COPY the spooled deals;
 *      recon_load_deals() checks them; recon_match() matches and opens
 *      cases; COMMIT;
 *   6. the CSV and HTML reports are written from what was committed.
 * An input that cannot be shown complete rolls everything back and is
 * recorded as an `incomplete` run with its reason, in its own transaction.
 */


#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>
#include <openssl/evp.h>

#include "mc_alert.h"
#include "mc_clock.h"
#include "mc_deployment.h"
#include "mc_log.h"
#include "mc_mt5.h"
#include "mc_pgconn.h"
#include "mc_pgcopy.h"
#include "mc_recon.h"
#include "mc_recon_fetch.h"
#include "mc_recon_report.h"


typedef struct {
    mc_config_t              *cfg;
    const mc_recon_opts_t    *o;
    volatile sig_atomic_t    *stop;
    PGconn                   *conn;
    mc_alert_config_t         alert;
    int                       digits;
    char                      settlement_sha[65];
    char                      control_sha[65];
    char                      grace[32];
    char                      deals_digest[33];

    /* the MT5 fetch runs in its own thread, spooling rows to a file,
       while the settlement file is loaded */
    pthread_t                 fetch_tid;
    int                       fetch_started;
    volatile sig_atomic_t     fetch_abort;
    volatile int              fetch_done;
    int                       fetch_rc;
    FILE                     *fetch_spool;
    mc_pgcopy_t              *fetch_copy;
    char                      fetch_err[1024];
    int64_t                   fetch_ms;
    char                     *settlement_incomplete;  /* why, or NULL */
    int64_t                   run_id;
    int64_t                   window_start, window_end, deal_window_end;
    mc_recon_zone_t           zones[MC_CONFIG_MAX_SERVERS];
    mc_recon_fetch_stats_t    fetched;
    uint64_t                  settlement_rows, control_rows;
    int64_t                   started_ms;    /* of the current phase */
    char                      err[2048];
} mc_recon_t;


static int mc_recon_sha256(const char *path, char *hex, char *err,
    size_t errlen);
static PGresult *mc_recon_exec(mc_recon_t *r, const char *sql, int n,
    const char *const *params);
static int mc_recon_keep_report(mc_recon_t *r, const char *run,
    const char *path, char *err, size_t errlen);
static int mc_recon_digits(mc_recon_t *r);
static int mc_recon_begin(mc_recon_t *r);
static int mc_recon_copy_settlement(mc_recon_t *r);
static int mc_recon_copy_control(mc_recon_t *r);
static mc_pgcopy_t *mc_recon_copy_open(mc_recon_t *r, const char *sql);
static int mc_recon_copy_close(mc_recon_t *r, mc_pgcopy_t *copy, int parsed,
    const char *file, const char *perr);
static int mc_recon_zones(mc_recon_t *r);
static int mc_recon_clock(mc_recon_t *r, int i);
static int mc_recon_fetch_start(mc_recon_t *r);
static void *mc_recon_fetch_thread(void *arg);
static int mc_recon_fetch_wait(mc_recon_t *r, int abandon);
static int mc_recon_load_settlement(mc_recon_t *r);
static int mc_recon_copy_deals(mc_recon_t *r);
static int mc_recon_finish(mc_recon_t *r);
static int mc_recon_tickets(mc_recon_t *r);
static int mc_recon_load_deals(mc_recon_t *r, const char *digest);
static int mc_recon_incomplete(mc_recon_t *r, const char *reason);
static int mc_recon_input_error(mc_recon_t *r, PGresult *res);
static int mc_recon_outputs(mc_recon_t *r, int64_t run_id,
    const char *verdict, int unchanged);
static void mc_recon_rollback(mc_recon_t *r);
static void mc_recon_phase(mc_recon_t *r, const char *what);


int
mc_recon_run(mc_config_t *cfg, const mc_recon_opts_t *o,
    volatile sig_atomic_t *stop)
{
    int          rc;
    mc_recon_t  *r;

    r = calloc(1, sizeof(mc_recon_t));
    if (r == NULL) {
        fprintf(stderr, "mt5credit: reconcile: out of memory\n");
        return MC_RECON_FAILED;
    }

    r->cfg = cfg;
    r->o = o;
    r->stop = stop;
    r->alert.command = cfg->alert_command;
    r->alert.url = cfg->alert_url;
    r->alert.worker = "mt5credit-reconcile";
    snprintf(r->grace, sizeof(r->grace), "%d seconds", o->deal_grace);

    rc = MC_RECON_BAD_INPUT;

    if (mc_recon_sha256(o->settlement, r->settlement_sha, r->err,
                        sizeof(r->err)) != 0
        || (o->control != NULL
            && mc_recon_sha256(o->control, r->control_sha, r->err,
                               sizeof(r->err)) != 0))
    {
        goto done;
    }

    r->conn = mc_pgconn_connect(cfg->recon_database[0] != '\0'
                          ? cfg->recon_database : cfg->database);

    if (PQstatus(r->conn) != CONNECTION_OK) {
        snprintf(r->err, sizeof(r->err), "database: %s",
                 PQerrorMessage(r->conn));
        rc = MC_RECON_FAILED;
        goto done;
    }

    /* another deployment's database would read our deals as foreign */
    if (mc_deployment_check(r->conn, cfg->deployment_tag, r->err,
                            sizeof(r->err))
        != MC_DEPLOYMENT_OK)
    {
        rc = MC_RECON_FAILED;
        goto done;
    }

    r->started_ms = mc_now_ms();

    if ((rc = mc_recon_digits(r)) != 0 || (rc = mc_recon_begin(r)) != 0
        || (rc = mc_recon_fetch_start(r)) != 0)
    {
        goto done;
    }

    /* MT5 is asked while the database takes the settlement file */
    if ((rc = mc_recon_copy_settlement(r)) != 0
        || (rc = mc_recon_copy_control(r)) != 0
        || (rc = mc_recon_load_settlement(r)) != 0)
    {
        (void) mc_recon_fetch_wait(r, 1);
        goto done;
    }

    if ((rc = mc_recon_fetch_wait(r, 0)) != 0
        || (rc = mc_recon_copy_deals(r)) != 0)
    {
        goto done;
    }

    rc = mc_recon_finish(r);

done:

    if (rc == MC_RECON_BAD_INPUT || rc == MC_RECON_FAILED) {
        if (r->conn != NULL && PQstatus(r->conn) == CONNECTION_OK) {
            mc_recon_rollback(r);
        }
        fprintf(stderr, "mt5credit: reconcile: %s%s\n", r->err,
                rc == MC_RECON_BAD_INPUT ? " (nothing was written)" : "");
        mc_log(MC_LOG_ERROR, "reconcile %s %s %s: %s", o->provider, o->day,
               o->currency, r->err);
    }

    if (r->conn != NULL) {
        PQfinish(r->conn);
    }

    if (r->fetch_spool != NULL) {
        fclose(r->fetch_spool);
    }

    free(r->fetch_copy);
    free(r->settlement_incomplete);
    free(r);
    return rc;
}


/* sha-256 of a whole file, as lower-case hex */
static int
mc_recon_sha256(const char *path, char *hex, char *err, size_t errlen)
{
    FILE          *f;
    size_t         n;
    unsigned int   len, i;
    unsigned char  buf[65536], md[EVP_MAX_MD_SIZE];
    EVP_MD_CTX    *ctx;

    f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, errlen, "%.900s: %s", path, strerror(errno));
        return -1;
    }

    ctx = EVP_MD_CTX_new();
    if (ctx == NULL || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        snprintf(err, errlen, "%s: sha-256 unavailable", path);
        EVP_MD_CTX_free(ctx);
        fclose(f);
        return -1;
    }

    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
        EVP_DigestUpdate(ctx, buf, n);
    }

    if (ferror(f)) {
        snprintf(err, errlen, "%.900s: %s", path, strerror(errno));
        EVP_MD_CTX_free(ctx);
        fclose(f);
        return -1;
    }

    EVP_DigestFinal_ex(ctx, md, &len);
    EVP_MD_CTX_free(ctx);
    fclose(f);

    for (i = 0; i < len; i++) {
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    }

    return 0;
}


static PGresult *
mc_recon_exec(mc_recon_t *r, const char *sql, int n,
    const char *const *params)
{
    return PQexecParams(r->conn, sql, n, NULL, params, NULL, NULL, 0);
}


/* the report file just written, read back whole and stored (sql/058) */
static int
mc_recon_keep_report(mc_recon_t *r, const char *run, const char *path,
    char *err, size_t errlen)
{
    int          rc;
    long         size;
    char        *html;
    FILE        *f;
    PGresult    *res;
    const char  *params[2];

    f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, errlen, "%.900s: %s", path, strerror(errno));
        return -1;
    }

    html = NULL;
    size = -1;

    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0
        && fseek(f, 0, SEEK_SET) == 0)
    {
        html = malloc((size_t) size + 1);
    }

    if (html == NULL || fread(html, 1, (size_t) size, f) != (size_t) size) {
        snprintf(err, errlen, "%.900s: %s", path,
                 html == NULL ? "out of memory" : "short read");
        free(html);
        fclose(f);
        return -1;
    }

    fclose(f);
    html[size] = '\0';

    if (memchr(html, '\0', (size_t) size) != NULL) {
        snprintf(err, errlen, "%.900s holds a NUL byte", path);
        free(html);
        return -1;
    }

    params[0] = run;
    params[1] = html;
    res = mc_recon_exec(r, "SELECT mt5credit.recon_report_store($1, $2)", 2,
                        params);
    rc = PQresultStatus(res) == PGRES_TUPLES_OK ? 0 : -1;

    if (rc != 0) {
        snprintf(err, errlen, "%s", PQresultErrorMessage(res));
    }

    PQclear(res);
    free(html);
    return rc;
}


static int
mc_recon_digits(mc_recon_t *r)
{
    PGresult    *res;
    const char  *params[1] = { r->o->currency };

    res = mc_recon_exec(r, "SELECT minor_digits FROM mt5credit.currency "
                           "WHERE code = $1", 1, params);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        snprintf(r->err, sizeof(r->err), "database: %s",
                 PQresultErrorMessage(res));
        PQclear(res);
        return MC_RECON_FAILED;
    }

    if (PQntuples(res) != 1) {
        snprintf(r->err, sizeof(r->err), "unknown currency \"%s\"",
                 r->o->currency);
        PQclear(res);
        return MC_RECON_BAD_INPUT;
    }

    r->digits = atoi(PQgetvalue(res, 0, 0));
    PQclear(res);
    return 0;
}


static int
mc_recon_begin(mc_recon_t *r)
{
    PGresult    *res;
    char         run[24], days[16], hours[16];
    const char  *params[8], *wparams[3];

    res = PQexec(r->conn, "BEGIN");
    PQclear(res);

    params[0] = r->o->provider;
    params[1] = r->o->day;
    params[2] = r->o->time_zone;
    params[3] = r->o->currency;
    params[4] = r->o->format_name;
    params[5] = r->settlement_sha;
    params[6] = r->o->control != NULL ? r->control_sha : NULL;
    params[7] = r->grace;

    res = mc_recon_exec(r,
        "SELECT run_id, extract(epoch FROM window_start)::bigint, "
        "extract(epoch FROM window_end)::bigint, "
        "extract(epoch FROM deal_window_end)::bigint "
        "FROM mt5credit.recon_begin($1, $2, $3, $4, $5, $6, $7, $8)",
        8, params);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        return mc_recon_input_error(r, res);
    }

    r->run_id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    r->window_start = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
    r->window_end = strtoll(PQgetvalue(res, 0, 2), NULL, 10);
    r->deal_window_end = strtoll(PQgetvalue(res, 0, 3), NULL, 10);
    PQclear(res);

    snprintf(run, sizeof(run), "%" PRId64, r->run_id);
    snprintf(days, sizeof(days), "%d", r->o->window);
    snprintf(hours, sizeof(hours), "%d", r->o->settlement_grace);
    wparams[0] = run;
    wparams[1] = days;
    wparams[2] = hours;

    /* a credit waits the window for its row, a row the grace (067) */
    res = mc_recon_exec(r, "SELECT mt5credit.recon_window($1, $2, $3)", 3,
                        wparams);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        return mc_recon_input_error(r, res);
    }
    PQclear(res);

    mc_log(MC_LOG_INFO, "reconcile run %" PRId64 ": %s %s (%s) %s; window "
           "%d days, settlement grace %d hours", r->run_id, r->o->provider,
           r->o->day, r->o->time_zone, r->o->currency, r->o->window,
           r->o->settlement_grace);
    return 0;
}


static int
mc_recon_copy_settlement(mc_recon_t *r)
{
    int                  n;
    FILE                *f;
    char                 perr[1024];
    mc_pgcopy_t         *copy;
    mc_settle_row_t      row;
    mc_settle_reader_t  *rd;

    f = fopen(r->o->settlement, "rb");
    if (f == NULL) {
        snprintf(r->err, sizeof(r->err), "%s: %s", r->o->settlement,
                 strerror(errno));
        return MC_RECON_BAD_INPUT;
    }

    rd = mc_settle_open(f, r->o->format, r->o->currency, r->digits, perr,
                        sizeof(perr));
    if (rd == NULL) {
        snprintf(r->err, sizeof(r->err), "%s: %s", r->o->settlement, perr);
        fclose(f);
        return MC_RECON_BAD_INPUT;
    }

    copy = mc_recon_copy_open(r,
               "COPY mt5credit.recon_settlement_in (run_id, line_no, row_id, "
               "category, provider_key, payment_id, deposit_ref, currency, "
               "gross_minor, fee_minor, net_minor, created_text, "
               "created_utc, payout_id) FROM STDIN");
    if (copy == NULL) {
        mc_settle_close(rd);
        fclose(f);
        return MC_RECON_FAILED;
    }

    while ((n = mc_settle_next(rd, &row, perr, sizeof(perr))) == 1) {
        mc_pgcopy_i64(copy, r->run_id);
        mc_pgcopy_i64(copy, row.line);
        mc_pgcopy_text(copy, row.row_id);
        mc_pgcopy_text(copy, mc_settle_category_name(row.category));
        mc_pgcopy_text(copy, row.provider_key);
        mc_pgcopy_text(copy, row.payment_id);
        mc_pgcopy_text(copy, row.deposit_ref);
        mc_pgcopy_text(copy, row.currency);
        mc_pgcopy_i64(copy, row.gross_minor);
        mc_pgcopy_i64(copy, row.fee_minor);
        mc_pgcopy_i64(copy, row.net_minor);
        mc_pgcopy_text(copy, row.created);
        mc_pgcopy_bool(copy, row.created_utc);
        mc_pgcopy_text(copy, row.payout_id);
        mc_pgcopy_row_end(copy);
    }

    r->settlement_rows = copy->rows;
    mc_settle_close(rd);
    fclose(f);

    n = mc_recon_copy_close(r, copy, n, r->o->settlement, perr);
    if (n == 0) {
        mc_recon_phase(r, "settlement file parsed and copied");
    }

    return n;
}


static int
mc_recon_copy_control(mc_recon_t *r)
{
    int                   n;
    FILE                 *f;
    char                  perr[1024];
    mc_pgcopy_t          *copy;
    mc_settle_control_t   c;
    mc_settle_reader_t   *rd;

    if (r->o->control == NULL) {
        return 0;
    }

    f = fopen(r->o->control, "rb");
    if (f == NULL) {
        snprintf(r->err, sizeof(r->err), "%s: %s", r->o->control,
                 strerror(errno));
        return MC_RECON_BAD_INPUT;
    }

    rd = mc_settle_control_open(f, r->o->currency, r->digits, perr,
                                sizeof(perr));
    if (rd == NULL) {
        snprintf(r->err, sizeof(r->err), "%s: %s", r->o->control, perr);
        fclose(f);
        return MC_RECON_BAD_INPUT;
    }

    copy = mc_recon_copy_open(r,
               "COPY mt5credit.recon_control_in (run_id, line_no, payout_id, "
               "currency, amount_minor, row_count) FROM STDIN");
    if (copy == NULL) {
        mc_settle_close(rd);
        fclose(f);
        return MC_RECON_FAILED;
    }

    while ((n = mc_settle_control_next(rd, &c, perr, sizeof(perr))) == 1) {
        mc_pgcopy_i64(copy, r->run_id);
        mc_pgcopy_i64(copy, c.line);
        mc_pgcopy_text(copy, c.payout_id);
        mc_pgcopy_text(copy, c.currency);
        mc_pgcopy_i64(copy, c.amount_minor);
        if (c.count >= 0) {
            mc_pgcopy_i64(copy, c.count);
        } else {
            mc_pgcopy_null(copy);
        }
        mc_pgcopy_row_end(copy);
    }

    r->control_rows = copy->rows;
    mc_settle_close(rd);
    fclose(f);

    return mc_recon_copy_close(r, copy, n, r->o->control, perr);
}


static mc_pgcopy_t *
mc_recon_copy_open(mc_recon_t *r, const char *sql)
{
    char          perr[1024];
    mc_pgcopy_t  *copy;

    copy = malloc(sizeof(mc_pgcopy_t));
    if (copy == NULL) {
        snprintf(r->err, sizeof(r->err), "out of memory");
        return NULL;
    }

    if (mc_pgcopy_begin(copy, r->conn, sql, perr, sizeof(perr)) != 0) {
        snprintf(r->err, sizeof(r->err), "database: %s", perr);
        free(copy);
        return NULL;
    }

    return copy;
}


/*
 * Ends a COPY fed from `file`: parsed < 0 means the input was refused at
 * perr ("line N: ..."), and the server discards every row of it (a bad
 * input; `file` NULL: the database side failed).  Frees the copy.
 */
static int
mc_recon_copy_close(mc_recon_t *r, mc_pgcopy_t *copy, int parsed,
    const char *file, const char *perr)
{
    int   rc;
    char  err[1024];

    if (parsed < 0) {
        (void) mc_pgcopy_end(copy, perr, err, sizeof(err));
        free(copy);

        if (file == NULL) {
            snprintf(r->err, sizeof(r->err), "database: %s", perr);
            return MC_RECON_FAILED;
        }

        snprintf(r->err, sizeof(r->err), "%s: %s", file, perr);
        return MC_RECON_BAD_INPUT;
    }

    rc = mc_pgcopy_end(copy, NULL, err, sizeof(err));
    free(copy);

    if (rc != 0) {
        snprintf(r->err, sizeof(r->err), "database: %s", err);
        return MC_RECON_FAILED;
    }

    return 0;
}


/*
 * Each zoned server's window in its own wall-clock seconds, and the
 * zone's offset now, read from the database's time zone data before the
 * fetch starts (the connection is the main thread's).  A zone the
 * database does not know is an error named with its server.
 */
static int
mc_recon_zones(mc_recon_t *r)
{
    int                  i, rc;
    char                 from[24], to[24];
    PGresult            *res;
    const char          *params[3];
    mc_server_config_t  *srv;

    snprintf(from, sizeof(from), "%" PRId64, r->window_start);
    snprintf(to, sizeof(to), "%" PRId64, r->deal_window_end);

    for (i = 0; i < r->cfg->nservers; i++) {
        srv = &r->cfg->servers[i];
        memset(&r->zones[i], 0, sizeof(mc_recon_zone_t));

        if (srv->time_zone[0] == '\0') {
            rc = mc_recon_clock(r, i);
            if (rc != 0) {
                return rc;
            }
            continue;
        }

        params[0] = from;
        params[1] = to;
        params[2] = srv->time_zone;

        res = mc_recon_exec(r,
            "SELECT extract(epoch FROM timezone($3, to_timestamp($1)))"
            "::bigint, extract(epoch FROM timezone($3, to_timestamp($2)))"
            "::bigint, extract(epoch FROM timezone($3, now()) "
            "- timezone('UTC', now()))::bigint", 3, params);

        if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
            snprintf(r->err, sizeof(r->err), "[server %s] time_zone "
                     "\"%s\": %s", srv->name, srv->time_zone,
                     PQresultErrorMessage(res));
            PQclear(res);
            return MC_RECON_FAILED;
        }

        r->zones[i].set = 1;
        r->zones[i].from = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
        r->zones[i].to = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
        r->zones[i].offset_now = strtoll(PQgetvalue(res, 0, 2), NULL, 10);
        PQclear(res);

        mc_log(MC_LOG_INFO, "reconcile: MT5 server %s in %s: the window is "
               "%" PRId64 "..%" PRId64 " server time (UTC%+" PRId64 " min "
               "now)", srv->name, srv->time_zone, r->zones[i].from,
               r->zones[i].to, r->zones[i].offset_now / 60);
    }

    return 0;
}


/*
 * A server without a zone: its clock now, recorded with the run, and the
 * offset that held at each end of the day, from the runs' measurements
 * nearest to them (sql/041).  Both ends the same: the day's deals are read
 * at it.  Different: the offset changed during the day, and without the
 * zone a deal near the step cannot be placed: the run is incomplete.
 */
static int
mc_recon_clock(mc_recon_t *r, int i)
{
    int                  retcode;
    char                 run[24], off[24], why[1024];
    int64_t              now, offset, start, end;
    PGresult            *res;
    mc_mt5_rc_e          rc;
    const char          *params[3];
    mc_mt5_session_t    *s;
    mc_server_config_t  *srv;

    srv = &r->cfg->servers[i];

    s = mc_mt5_session_new(&srv->mt5);
    if (s == NULL) {
        snprintf(r->err, sizeof(r->err), "out of memory");
        return MC_RECON_FAILED;
    }

    rc = mc_mt5_ensure(s, &retcode);
    if (rc == MC_MT5_OK) {
        rc = mc_mt5_time(s, &now, &offset, &retcode);
    }

    if (rc != MC_MT5_OK) {
        snprintf(why, sizeof(why), "MT5 deals incomplete: MT5 server %s: "
                 "its clock: %s", srv->name,
                 rc == MC_MT5_REJECTED ? "refused" : mc_mt5_error(s));
        mc_mt5_session_free(s);
        return mc_recon_incomplete(r, why);
    }

    mc_mt5_close(s);
    mc_mt5_session_free(s);

    snprintf(run, sizeof(run), "%" PRId64, r->run_id);
    snprintf(off, sizeof(off), "%" PRId64, offset);
    params[0] = run;
    params[1] = srv->name;
    params[2] = off;

    res = mc_recon_exec(r, "SELECT start_offset, start_source, end_offset, "
                           "end_source FROM mt5credit.recon_clock($1, $2, "
                           "$3)", 3, params);
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        snprintf(r->err, sizeof(r->err), "database: %s",
                 PQresultErrorMessage(res));
        PQclear(res);
        return MC_RECON_FAILED;
    }

    start = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    end = strtoll(PQgetvalue(res, 0, 2), NULL, 10);

    if (start != end) {
        snprintf(why, sizeof(why), "MT5 server %s has no time_zone and its "
                 "clock changed during the day: UTC%+" PRId64 " min at its "
                 "start (%s), UTC%+" PRId64 " min at its end (%s); a deal "
                 "near the change cannot be placed: set time_zone in its "
                 "[server] section", srv->name, start / 60,
                 PQgetvalue(res, 0, 1), end / 60, PQgetvalue(res, 0, 3));
        PQclear(res);
        return mc_recon_incomplete(r, why);
    }

    mc_log(MC_LOG_INFO, "reconcile: MT5 server %s has no time_zone: its "
           "clock is UTC%+" PRId64 " min now; UTC%+" PRId64 " min at the "
           "day's start (%s) and end (%s)", srv->name, offset / 60,
           start / 60, PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 3));
    PQclear(res);

    r->zones[i].fixed = 1;
    r->zones[i].fixed_offset = start;
    return 0;
}


/* the deals go to an unlinked temporary file first, a buffer at a time */
static int
mc_recon_fetch_start(mc_recon_t *r)
{
    int  rc;

    if ((rc = mc_recon_zones(r)) != 0) {
        return rc;
    }

    r->fetch_spool = tmpfile();
    r->fetch_copy = malloc(sizeof(mc_pgcopy_t));

    if (r->fetch_spool == NULL || r->fetch_copy == NULL) {
        snprintf(r->err, sizeof(r->err), "a spool file for MT5's deals: %s",
                 strerror(errno));
        return MC_RECON_FAILED;
    }

    mc_pgcopy_begin_file(r->fetch_copy, r->fetch_spool);

    if (pthread_create(&r->fetch_tid, NULL, mc_recon_fetch_thread, r) != 0) {
        snprintf(r->err, sizeof(r->err), "cannot start the MT5 fetch");
        return MC_RECON_FAILED;
    }

    r->fetch_started = 1;
    return 0;
}


static void *
mc_recon_fetch_thread(void *arg)
{
    mc_recon_t  *r = arg;
    int64_t      t0 = mc_now_ms();
    char         err[1024];

    r->fetch_rc = mc_recon_fetch(r->cfg, r->fetch_copy, r->run_id,
                                 r->window_start, r->deal_window_end,
                                 r->zones, &r->fetch_abort, &r->fetched,
                                 r->deals_digest, r->fetch_err,
                                 sizeof(r->fetch_err));

    if (mc_pgcopy_end(r->fetch_copy, NULL, err, sizeof(err)) != 0
        && r->fetch_rc == 0)
    {
        r->fetch_rc = -1;
        snprintf(r->fetch_err, sizeof(r->fetch_err), "%s", err);
    }

    r->fetch_ms = mc_now_ms() - t0;
    __atomic_store_n(&r->fetch_done, 1, __ATOMIC_RELEASE);
    return NULL;
}


/*
 * Waits for the fetch, passing a SIGTERM on to it; `abandon`: the run is
 * failing anyway, stop the fetch at its next login.  0, or the outcome
 * of an incomplete fetch (the run is recorded as incomplete).
 */
static int
mc_recon_fetch_wait(mc_recon_t *r, int abandon)
{
    char  why[1200];

    if (!r->fetch_started) {
        return 0;
    }

    if (abandon) {
        r->fetch_abort = 1;
    }

    while (!__atomic_load_n(&r->fetch_done, __ATOMIC_ACQUIRE)) {
        if (*r->stop) {
            r->fetch_abort = 1;
        }
        usleep(20000);
    }

    pthread_join(r->fetch_tid, NULL);
    r->fetch_started = 0;

    if (abandon) {
        return 0;
    }

    if (r->fetch_rc != 0) {
        snprintf(why, sizeof(why), "MT5 deals incomplete: %s", r->fetch_err);
        return mc_recon_incomplete(r, why);
    }

    mc_log(MC_LOG_INFO, "reconcile run %" PRId64 ": MT5 deals fetched in "
           "%" PRId64 ".%01d s, beside the settlement", r->run_id,
           r->fetch_ms / 1000, (int) (r->fetch_ms % 1000 / 100));
    r->started_ms = mc_now_ms();

    if (r->settlement_incomplete != NULL) {
        return mc_recon_incomplete(r, r->settlement_incomplete);
    }

    return 0;
}


static int
mc_recon_load_settlement(mc_recon_t *r)
{
    PGresult    *res;
    char         run[24];
    const char  *params[1] = { run };

    snprintf(run, sizeof(run), "%" PRId64, r->run_id);

    res = mc_recon_exec(r, "SELECT mt5credit.recon_load_settlement($1)", 1,
                        params);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        return mc_recon_input_error(r, res);
    }

    /* reported once the fetch is over: an incomplete MT5 side says more */
    if (!PQgetisnull(res, 0, 0)) {
        r->settlement_incomplete = strdup(PQgetvalue(res, 0, 0));
    }
    PQclear(res);

    mc_recon_phase(r, "settlement checked and loaded");
    return 0;
}


static int
mc_recon_copy_deals(mc_recon_t *r)
{
    int           n;
    char          perr[1024];
    mc_pgcopy_t  *copy;

    copy = mc_recon_copy_open(r,
               "COPY mt5credit.recon_deal_in (run_id, mt5_server, "
               "deal_ticket, mt5_login, amount_minor, currency, comment, "
               "deal_epoch, server_time, time_zone, by_ticket) FROM STDIN");
    if (copy == NULL) {
        return MC_RECON_FAILED;
    }

    n = mc_pgcopy_send_file(copy, r->fetch_spool, perr, sizeof(perr));
    if (mc_recon_copy_close(r, copy, n, NULL, perr) != 0) {
        return MC_RECON_FAILED;
    }

    mc_recon_phase(r, "MT5 deals copied");

    mc_log(MC_LOG_INFO, "reconcile run %" PRId64 ": %" PRIu64 " settlement "
           "rows, %" PRIu64 " control totals; MT5: %" PRIu64 " servers, %"
           PRIu64 " groups, %" PRIu64 " logins, %" PRIu64 " deals, %" PRIu64
           " balance deals in the window", r->run_id, r->settlement_rows,
           r->control_rows, r->fetched.servers, r->fetched.groups,
           r->fetched.logins, r->fetched.deals, r->fetched.balance_deals);
    return 0;
}


static int
mc_recon_finish(mc_recon_t *r)
{
    int          rc;
    int64_t      prev;
    PGresult    *res;
    char         run[24], verdict[64];
    const char  *params[1] = { run };

    snprintf(run, sizeof(run), "%" PRId64, r->run_id);

    if ((rc = mc_recon_load_deals(r, r->deals_digest)) != 0) {
        return rc;
    }
    mc_recon_phase(r, "deals checked and loaded");

    if ((rc = mc_recon_tickets(r)) != 0) {
        return rc;
    }

    res = mc_recon_exec(r, "SELECT mt5credit.recon_match($1)", 1, params);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        return mc_recon_input_error(r, res);
    }
    snprintf(verdict, sizeof(verdict), "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    mc_recon_phase(r, "matched, cases opened");

    /* the same inputs as the day's last run: that run stands */
    if (strncmp(verdict, "unchanged:", 10) == 0) {
        mc_recon_rollback(r);
        prev = strtoll(verdict + 10, NULL, 10);

        res = PQexecParams(r->conn, "SELECT verdict FROM mt5credit.recon_run "
                           "WHERE id = $1", 1, NULL,
                           (const char *[]) { verdict + 10 }, NULL, NULL, 0);
        if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
            snprintf(r->err, sizeof(r->err), "database: %s",
                     PQresultErrorMessage(res));
            PQclear(res);
            return MC_RECON_FAILED;
        }
        snprintf(verdict, sizeof(verdict), "%s", PQgetvalue(res, 0, 0));
        PQclear(res);

        return mc_recon_outputs(r, prev, verdict, 1);
    }

    res = PQexec(r->conn, "COMMIT");
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        snprintf(r->err, sizeof(r->err), "database: COMMIT: %s",
                 PQresultErrorMessage(res));
        PQclear(res);
        return MC_RECON_FAILED;
    }
    PQclear(res);

    return mc_recon_outputs(r, r->run_id, verdict, 0);
}


/* recon_load_deals(): the staged deals into the run, checked */
static int
mc_recon_load_deals(mc_recon_t *r, const char *digest)
{
    PGresult    *res;
    char         run[24], why[1024];
    const char  *params[2] = { run, digest };

    snprintf(run, sizeof(run), "%" PRId64, r->run_id);

    res = mc_recon_exec(r, "SELECT mt5credit.recon_load_deals($1, $2)", 2,
                        params);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        return mc_recon_input_error(r, res);
    }

    if (!PQgetisnull(res, 0, 0)) {
        snprintf(why, sizeof(why), "%s", PQgetvalue(res, 0, 0));
        PQclear(res);
        return mc_recon_incomplete(r, why);
    }

    PQclear(res);
    return 0;
}


/*
 * The deals of credits in scope that the window's fetch does not have
 * (a credit of an earlier day, settled today), asked for by ticket and
 * loaded beside the window's.  A credit on a server this config does not
 * know cannot be checked: the run is incomplete.
 */
static int
mc_recon_tickets(mc_recon_t *r)
{
    int                 i, j, n, rc;
    char                run[24], perr[1024], digest[33], why[1400];
    uint64_t            found;
    PGresult           *res;
    mc_pgcopy_t        *copy;
    const char         *params[1] = { run };
    mc_recon_ticket_t  *t;

    snprintf(run, sizeof(run), "%" PRId64, r->run_id);

    res = mc_recon_exec(r, "SELECT mt5_server, deal_ticket, mt5_login, "
                           "currency, digits "
                           "FROM mt5credit.recon_tickets($1)", 1, params);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        return mc_recon_input_error(r, res);
    }

    n = PQntuples(res);
    mc_recon_phase(r, "scope gathered (the day's and the carried items), "
                   "tickets listed");
    if (n == 0) {
        PQclear(res);
        return 0;
    }

    t = calloc((size_t) n, sizeof(mc_recon_ticket_t));
    if (t == NULL) {
        PQclear(res);
        snprintf(r->err, sizeof(r->err), "out of memory for %d tickets", n);
        return MC_RECON_FAILED;
    }

    for (i = 0; i < n; i++) {
        for (j = 0; j < r->cfg->nservers
                    && strcmp(r->cfg->servers[j].name,
                              PQgetvalue(res, i, 0)) != 0; j++)
        {
            /* void */
        }

        if (j == r->cfg->nservers) {
            snprintf(why, sizeof(why), "MT5 server %s (deal %s of a credit "
                     "in scope) is not in %s: its deal cannot be checked",
                     PQgetvalue(res, i, 0), PQgetvalue(res, i, 1),
                     r->cfg->path);
            PQclear(res);
            free(t);
            return mc_recon_incomplete(r, why);
        }

        t[i].server = j;
        t[i].ticket = strtoull(PQgetvalue(res, i, 1), NULL, 10);
        t[i].login = strtoull(PQgetvalue(res, i, 2), NULL, 10);
        snprintf(t[i].currency, sizeof(t[i].currency), "%s",
                 PQgetvalue(res, i, 3));
        t[i].digits = atoi(PQgetvalue(res, i, 4));
    }
    PQclear(res);

    copy = mc_recon_copy_open(r,
               "COPY mt5credit.recon_deal_in (run_id, mt5_server, "
               "deal_ticket, mt5_login, amount_minor, currency, comment, "
               "deal_epoch, server_time, time_zone, by_ticket) FROM STDIN");
    if (copy == NULL) {
        free(t);
        return MC_RECON_FAILED;
    }

    rc = mc_recon_fetch_tickets(r->cfg, copy, r->run_id, t, (size_t) n,
                                r->zones, r->stop, &found, digest, perr,
                                sizeof(perr));
    free(t);

    if (rc != 0) {
        (void) mc_pgcopy_end(copy, perr, why, sizeof(why));
        free(copy);
        snprintf(why, sizeof(why), "MT5 deals by ticket incomplete: %s",
                 perr);
        return mc_recon_incomplete(r, why);
    }

    if (mc_recon_copy_close(r, copy, 0, NULL, "") != 0) {
        return MC_RECON_FAILED;
    }

    mc_log(MC_LOG_INFO, "reconcile run %" PRId64 ": %d deals of earlier "
           "credits asked for by ticket, %" PRIu64 " found", r->run_id, n,
           found);

    if ((rc = mc_recon_load_deals(r, digest)) != 0) {
        return rc;
    }

    mc_recon_phase(r, "deals by ticket fetched and loaded");
    return 0;
}


/*
 * The inputs are rolled back; the run is recorded with its reason only,
 * so a person sees the day was tried and why it could not be finished.
 */
static int
mc_recon_incomplete(mc_recon_t *r, const char *reason)
{
    PGresult    *res;
    const char  *params[9];
    char         run[24];

    mc_recon_rollback(r);

    params[0] = r->o->provider;
    params[1] = r->o->day;
    params[2] = r->o->time_zone;
    params[3] = r->o->currency;
    params[4] = r->o->format_name;
    params[5] = r->settlement_sha;
    params[6] = r->o->control != NULL ? r->control_sha : NULL;
    params[7] = r->grace;
    params[8] = reason;

    res = mc_recon_exec(r, "SELECT mt5credit.recon_incomplete($1, $2, $3, "
                           "$4, $5, $6, $7, $8, $9)", 9, params);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        snprintf(r->err, sizeof(r->err), "%s; and recording the run "
                 "failed: %s", reason, PQresultErrorMessage(res));
        PQclear(res);
        return MC_RECON_FAILED;
    }

    snprintf(run, sizeof(run), "%s", PQgetvalue(res, 0, 0));
    PQclear(res);

    printf("run %s: incomplete (%s %s %s %s)\n  reason: %s\n",
           run, r->o->provider, r->o->day, r->o->time_zone, r->o->currency,
           reason);
    fflush(stdout);

    fprintf(stderr, "mt5credit: reconcile: run %s incomplete: %s\n", run,
            reason);
    mc_alert(&r->alert, "recon_incomplete", 0, "reconciliation %s %s %s "
             "(run %s) is incomplete: %s", r->o->provider, r->o->day,
             r->o->currency, run, reason);

    return MC_RECON_INCOMPLETE;
}


/* an error the database found in the inputs (MC03x), or a failure */
static int
mc_recon_input_error(mc_recon_t *r, PGresult *res)
{
    const char  *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    const char  *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
    int          input = state != NULL && strncmp(state, "MC03", 4) == 0;

    snprintf(r->err, sizeof(r->err), "%s%s",
             input ? "" : "database: ",
             msg != NULL ? msg : PQresultErrorMessage(res));
    PQclear(res);

    return input ? MC_RECON_BAD_INPUT : MC_RECON_FAILED;
}


static int
mc_recon_outputs(mc_recon_t *r, int64_t run_id, const char *verdict,
    int unchanged)
{
    int          i, rc;
    PGresult    *res;
    char         run[24], csv[1024], html[1024], perr[1024];
    const char  *params[1] = { run };

    snprintf(run, sizeof(run), "%" PRId64, run_id);

    if (unchanged) {
        printf("run %s: %s (%s %s %s %s); the inputs are those of run %s: "
               "nothing new written\n", run, verdict, r->o->provider,
               r->o->day, r->o->time_zone, r->o->currency, run);
    } else {
        printf("run %s: %s (%s %s %s %s)\n", run, verdict, r->o->provider,
               r->o->day, r->o->time_zone, r->o->currency);
    }

    res = mc_recon_exec(r, "SELECT dimension, name, n "
                           "FROM mt5credit.recon_count WHERE run_id = $1 "
                           "ORDER BY dimension = 'summary' DESC, dimension, "
                           "name", 1, params);
    if (PQresultStatus(res) == PGRES_TUPLES_OK) {
        for (i = 0; i < PQntuples(res); i++) {
            printf("  %-10s %-24s %s\n", PQgetvalue(res, i, 0),
                   PQgetvalue(res, i, 1), PQgetvalue(res, i, 2));
        }
    }
    PQclear(res);

    rc = strcmp(verdict, "breaks") == 0 ? MC_RECON_BREAKS : MC_RECON_OK;

    if (mc_recon_report(r->conn, run_id, r->o->out_dir, csv, html,
                        sizeof(csv), perr, sizeof(perr)) != 0)
    {
        fprintf(stderr, "mt5credit: reconcile: run %s: report: %s\n", run,
                perr);
        rc = MC_RECON_FAILED;

    } else {
        printf("  report: %s\n  report: %s\n", csv, html);

        /* the same bytes for the console (sql/058), kept once per run */
        if (mc_recon_keep_report(r, run, html, perr, sizeof(perr)) != 0) {
            fprintf(stderr, "mt5credit: reconcile: run %s: report not kept "
                    "in the database: %s\n", run, perr);
            rc = MC_RECON_FAILED;
        }
    }

    fflush(stdout);

    if (!unchanged && strcmp(verdict, "breaks") == 0) {
        mc_alert(&r->alert, "recon_breaks", 0, "reconciliation %s %s %s "
                 "(run %s): differences found, cases opened",
                 r->o->provider, r->o->day, r->o->currency, run);
    }

    return rc;
}


static void
mc_recon_rollback(mc_recon_t *r)
{
    PGresult  *res;

    res = PQexec(r->conn, "ROLLBACK");
    PQclear(res);
}




/* where a run's time goes, for the operator and the benchmark */
static void
mc_recon_phase(mc_recon_t *r, const char *what)
{
    int64_t  now = mc_now_ms(), ms = now - r->started_ms;

    mc_log(MC_LOG_INFO, "reconcile run %" PRId64 ": %s in %" PRId64
           ".%01d s", r->run_id, what, ms / 1000, (int) (ms % 1000 / 100));
    r->started_ms = now;
}
