/*
 * Copyright (C) mt5-credit
 *
 * One round:
 *
 *   1. outbound_sweep(): a delivery whose sender died mid-send is due
 *      again (it may have arrived: the receiver deduplicates on the id).
 *   2. outbound_claim(): the due deliveries of our endpoints, leased.
 *   3. Each is signed with its endpoint's every secret at the moment it
 *      is sent, and POSTed once; the answer is recorded before the next.
 *      A 2xx is delivered; anything else, or nothing, is a failed try,
 *      due again after the schedule's next wait, or exhausted.
 *   4. An endpoint with no success since a failure outbound_disable_after
 *      ago is disabled.
 *
 * A SIGTERM finishes the delivery in flight and records it; the ones
 * claimed but not sent are released.
 */


#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "mc_alert.h"
#include "mc_deployment.h"
#include "mc_exposition.h"
#include "mc_log.h"
#include "mc_outbound.h"
#include "mc_outbound_http.h"
#include "mc_whsig.h"


/* every delivery's outcome, counted for the metrics */
enum {
    MC_OUT_DELIVERED = 0,
    MC_OUT_FAILED,
    MC_OUT_EXHAUSTED,
    MC_OUT_LOST,
    MC_OUT_NOUTCOMES
};

static const char  *mc_outbound_outcomes[MC_OUT_NOUTCOMES] = {
    "delivered", "failed", "exhausted", "lease_lost"
};


typedef struct {
    const mc_endpoint_config_t  *cfg;
    mc_outbound_http_t           http;
    mc_whsig_key_t               keys[MC_WHSIG_SECRETS];
    int                          nkeys;
    uint64_t                     outcomes[MC_OUT_NOUTCOMES];
} mc_endpoint_t;


typedef struct {
    mc_config_t        *cfg;
    PGconn             *conn;
    mc_alert_config_t   alert;
    mc_endpoint_t       eps[MC_CONFIG_MAX_ENDPOINTS];
    int                 neps;
    char                names[MC_CONFIG_MAX_ENDPOINTS * 68 + 3];
                                                     /* {"a","b"} */
    char                lease[16];
    char                batch[16];
} mc_outbound_t;


static int mc_outbound_open(mc_outbound_t *o, mc_config_t *cfg);
static void mc_outbound_close(mc_outbound_t *o);
static int mc_outbound_register(mc_outbound_t *o);
static int mc_outbound_round(mc_outbound_t *o, volatile sig_atomic_t *stop);
static void mc_outbound_send(mc_outbound_t *o, PGresult *res, int row);
static void mc_outbound_release(mc_outbound_t *o, PGresult *res, int row);
static void mc_outbound_disable(mc_outbound_t *o);
static mc_endpoint_t *mc_outbound_endpoint(mc_outbound_t *o,
    const char *name);
static PGresult *mc_outbound_call(mc_outbound_t *o, const char *what,
    const char *sql, int n, const char **params);
static void mc_outbound_metrics(mc_outbound_t *o, mc_exposition_t *x);


int
mc_outbound_run(mc_config_t *cfg, int once, volatile sig_atomic_t *stop)
{
    int               rc;
    char              err[512];
    unsigned          slept;
    mc_outbound_t     o;
    mc_exposition_t   metrics;

    if (mc_outbound_open(&o, cfg) != 0) {
        return 2;
    }

    if (mc_exposition_open(&metrics, cfg, "outbound",
                           cfg->outbound_metrics_listen, err, sizeof(err))
        != 0)
    {
        mc_log(MC_LOG_ERROR, "outbound_metrics_listen: %s", err);
        mc_outbound_close(&o);
        return 2;
    }

    o.conn = mc_deployment_connect(cfg->outbound_database[0]
                                   ? cfg->outbound_database : cfg->database,
                                   cfg->deployment_tag, "outbound");
    if (o.conn == NULL || mc_outbound_register(&o) != 0) {
        mc_exposition_close(&metrics);
        mc_outbound_close(&o);
        return 1;
    }

    for ( ;; ) {
        rc = mc_outbound_round(&o, stop);
        mc_outbound_metrics(&o, &metrics);

        if (once || *stop) {
            break;
        }

        /* a full batch: more may be due at once */
        for (slept = 0; rc != 2 && slept < (unsigned) cfg->outbound_interval
                        && !*stop; slept++)
        {
            sleep(1);
        }

        if (*stop) {
            break;
        }

        if (PQstatus(o.conn) != CONNECTION_OK) {
            /* a new connection may reach another server: asked again */
            if (mc_deployment_reset(o.conn, cfg->deployment_tag, "outbound")
                != 0)
            {
                rc = 1;
                break;
            }
        }
    }

    mc_exposition_close(&metrics);
    mc_outbound_close(&o);
    return rc == 1 ? 1 : 0;
}


/* the endpoints of the configuration, each with its secrets and handle */
static int
mc_outbound_open(mc_outbound_t *o, mc_config_t *cfg)
{
    int             i;
    char            err[512];
    size_t          used;
    mc_endpoint_t  *e;

    memset(o, 0, sizeof(*o));
    o->cfg = cfg;
    o->alert.command = cfg->alert_command;
    o->alert.url = cfg->alert_url;
    o->alert.worker = cfg->worker_name;

    if (cfg->nendpoints == 0) {
        fprintf(stderr, "mt5credit: %s: outbound: no [endpoint <name>] "
                "section: nothing to deliver to\n", cfg->path);
        return -1;
    }

    used = 0;
    o->names[used++] = '{';

    for (i = 0; i < cfg->nendpoints; i++) {
        e = &o->eps[o->neps];
        e->cfg = &cfg->endpoints[i];

        if (mc_whsig_read(e->cfg->secret_file, e->keys, MC_WHSIG_SECRETS,
                          &e->nkeys, err, sizeof(err)) != 0)
        {
            fprintf(stderr, "mt5credit: [endpoint %s] secret_file: %s\n",
                    e->cfg->name, err);
            mc_outbound_close(o);
            return -1;
        }

        if (mc_outbound_http_open(&e->http, e->cfg, cfg->outbound_timeout)
            != 0)
        {
            fprintf(stderr, "mt5credit: outbound: curl: out of memory\n");
            mc_whsig_wipe(e->keys, e->nkeys);
            mc_outbound_close(o);
            return -1;
        }

        o->neps++;

        /* names are [A-Za-z0-9_.-] (the configuration's check), each
           quoted: an element spelled NULL is a name, not a null */
        used += (size_t) snprintf(o->names + used, sizeof(o->names) - used,
                                  "%s\"%s\"", i ? "," : "", e->cfg->name);

        mc_log(MC_LOG_INFO, "outbound: endpoint %s: %s, %d secret%s",
               e->cfg->name, e->cfg->url, e->nkeys, e->nkeys == 1 ? "" : "s");
    }

    snprintf(o->names + used, sizeof(o->names) - used, "}");

    /* a batch is sent one by one: its lease outlasts them all */
    snprintf(o->lease, sizeof(o->lease), "%d",
             cfg->outbound_batch * cfg->outbound_timeout + 30);
    snprintf(o->batch, sizeof(o->batch), "%d", cfg->outbound_batch);

    return 0;
}


static void
mc_outbound_close(mc_outbound_t *o)
{
    int  i;

    for (i = 0; i < o->neps; i++) {
        mc_outbound_http_close(&o->eps[i].http);
        mc_whsig_wipe(o->eps[i].keys, o->eps[i].nkeys);
    }

    o->neps = 0;

    if (o->conn != NULL) {
        PQfinish(o->conn);
        o->conn = NULL;
    }
}


/* each configured endpoint is known to the database from now on */
static int
mc_outbound_register(mc_outbound_t *o)
{
    int          i;
    PGresult    *res;
    const char  *p[1];

    for (i = 0; i < o->neps; i++) {
        p[0] = o->eps[i].cfg->name;
        res = mc_outbound_call(o, "outbound_endpoint_register",
                               "SELECT disabled_at, disabled_why FROM "
                               "mt5credit.outbound_endpoint_register($1)",
                               1, p);
        if (res == NULL) {
            return -1;
        }

        if (PQntuples(res) == 1 && !PQgetisnull(res, 0, 0)) {
            mc_log(MC_LOG_WARN, "outbound: endpoint %s is disabled since "
                   "%s (%s): its events wait until a person enables it "
                   "(mt5credit outbox enable)", p[0], PQgetvalue(res, 0, 0),
                   PQgetvalue(res, 0, 1));
        }

        PQclear(res);
    }

    return 0;
}


/* 0: done, nothing more due; 2: a full batch, more may be; 1: failed */
static int
mc_outbound_round(mc_outbound_t *o, volatile sig_atomic_t *stop)
{
    int          i, n;
    PGresult    *res;
    const char  *p[4];

    p[0] = o->cfg->worker_name;
    res = mc_outbound_call(o, "outbound_sweep",
                           "SELECT mt5credit.outbound_sweep($1)", 1, p);
    if (res == NULL) {
        return 1;
    }

    if (strcmp(PQgetvalue(res, 0, 0), "0") != 0) {
        mc_log(MC_LOG_WARN, "outbound: %s deliver%s past their lease: due "
               "again (the same webhook-id)", PQgetvalue(res, 0, 0),
               strcmp(PQgetvalue(res, 0, 0), "1") == 0 ? "y" : "ies");
    }

    PQclear(res);

    p[1] = o->names;
    p[2] = o->lease;
    p[3] = o->batch;
    res = mc_outbound_call(o, "outbound_claim",
                           "SELECT message_id, endpoint, webhook_id, attempt,"
                           " type, subject, seq, body FROM "
                           "mt5credit.outbound_claim($1, $2::text[], "
                           "$3::integer, $4::integer)", 4, p);
    if (res == NULL) {
        return 1;
    }

    n = PQntuples(res);

    for (i = 0; i < n; i++) {
        if (*stop || PQstatus(o->conn) != CONNECTION_OK) {
            mc_outbound_release(o, res, i);
            continue;
        }

        mc_outbound_send(o, res, i);
    }

    PQclear(res);
    mc_outbound_disable(o);

    return n == o->cfg->outbound_batch ? 2 : 0;
}


static void
mc_outbound_send(mc_outbound_t *o, PGresult *res, int row)
{
    int             attempt, k;
    long            status;
    char            sig[MC_WHSIG_HEADER_MAX], err[300], code[16], retry[16];
    int64_t         ts;
    PGresult       *r;
    const char     *id, *body, *outcome, *p[6];
    mc_endpoint_t  *e;

    e = mc_outbound_endpoint(o, PQgetvalue(res, row, 1));
    id = PQgetvalue(res, row, 2);
    attempt = atoi(PQgetvalue(res, row, 3));
    body = PQgetvalue(res, row, 7);

    if (e == NULL) {
        mc_outbound_release(o, res, row);
        return;
    }

    /* signed as it leaves: the receiver checks the time against its own */
    ts = (int64_t) time(NULL);

    if (mc_whsig_sign(e->keys, e->nkeys, id, ts, body, strlen(body), sig,
                      sizeof(sig)) != 0)
    {
        mc_log(MC_LOG_ERROR, "outbound: %s to %s: signing failed",
               id, e->cfg->name);
        mc_outbound_release(o, res, row);
        return;
    }

    k = mc_outbound_http_post(&e->http, id, ts, sig, body, &status, err,
                              sizeof(err));

    snprintf(code, sizeof(code), "%ld", status);
    p[0] = PQgetvalue(res, row, 0);
    p[1] = e->cfg->name;
    p[2] = o->cfg->worker_name;
    p[3] = status != 0 ? code : NULL;

    if (k == 0) {
        r = mc_outbound_call(o, "outbound_delivered",
                             "SELECT mt5credit.outbound_delivered($1, $2, "
                             "$3, $4::integer)", 4, p);
        outcome = r == NULL ? NULL
                  : strcmp(PQgetvalue(r, 0, 0), "t") == 0 ? "delivered"
                  : "lost";

    } else {
        /* the schedule's wait after this try, or none: exhausted */
        if (attempt >= 1 && attempt <= o->cfg->outbound_nretry) {
            snprintf(retry, sizeof(retry), "%d",
                     o->cfg->outbound_retry_s[attempt - 1]);
            p[5] = retry;

        } else {
            p[5] = NULL;
        }

        p[4] = err;
        r = mc_outbound_call(o, "outbound_failed",
                             "SELECT mt5credit.outbound_failed($1, $2, $3, "
                             "$4::integer, $5, $6::integer)", 6, p);
        outcome = r == NULL ? NULL
                  : strcmp(PQgetvalue(r, 0, 0), "retry") == 0 ? "failed"
                  : PQgetvalue(r, 0, 0);
    }

    if (outcome == NULL) {
        /* not recorded: the lease runs out, and it is sent again */
        return;
    }

    if (strcmp(outcome, "delivered") == 0) {
        e->outcomes[MC_OUT_DELIVERED]++;
        mc_log(MC_LOG_INFO, "outbound: %s %s #%s to %s: delivered (HTTP "
               "%ld, try %d)", id, PQgetvalue(res, row, 4),
               PQgetvalue(res, row, 6), e->cfg->name, status, attempt);

    } else if (strcmp(outcome, "failed") == 0) {
        e->outcomes[MC_OUT_FAILED]++;
        mc_log(MC_LOG_WARN, "outbound: %s to %s: try %d failed: %s; again "
               "in %s s", id, e->cfg->name, attempt, err, p[5]);

    } else if (strcmp(outcome, "exhausted") == 0) {
        e->outcomes[MC_OUT_EXHAUSTED]++;
        mc_alert(&o->alert, "outbound_exhausted", 0,
                 "outbound: %s (%s, %s #%s) to %s: every try failed, the "
                 "last: %s; exhausted: replay it once the receiver is "
                 "fixed (mt5credit outbox replay)", id,
                 PQgetvalue(res, row, 4), PQgetvalue(res, row, 5),
                 PQgetvalue(res, row, 6), e->cfg->name, err);

    } else {
        e->outcomes[MC_OUT_LOST]++;
        mc_log(MC_LOG_WARN, "outbound: %s to %s: its lease ran out while "
               "it was sent: it will be sent again", id, e->cfg->name);
    }

    PQclear(r);
}


/* claimed, not sent: due again now, the try not counted */
static void
mc_outbound_release(mc_outbound_t *o, PGresult *res, int row)
{
    PGresult    *r;
    const char  *p[3];

    if (PQstatus(o->conn) != CONNECTION_OK) {
        return;             /* its lease runs out: swept, sent again */
    }

    p[0] = PQgetvalue(res, row, 0);
    p[1] = PQgetvalue(res, row, 1);
    p[2] = o->cfg->worker_name;

    r = mc_outbound_call(o, "outbound_release",
                         "SELECT mt5credit.outbound_release($1, $2, $3)",
                         3, p);
    PQclear(r);
}


/*
 * An endpoint with no success since a failure outbound_disable_after ago
 * is disabled (asked every round: its last try may be long past, its
 * deliveries exhausted; a success clears the mark).
 */
static void
mc_outbound_disable(mc_outbound_t *o)
{
    int          i;
    char         after[16];
    PGresult    *r;
    const char  *p[3];

    snprintf(after, sizeof(after), "%d", o->cfg->outbound_disable_after);

    for (i = 0; i < o->neps; i++) {
        p[0] = o->eps[i].cfg->name;
        p[1] = o->cfg->worker_name;
        p[2] = after;

        r = mc_outbound_call(o, "outbound_disable_failing",
                             "SELECT mt5credit.outbound_disable_failing($1, "
                             "$2, $3::integer)", 3, p);
        if (r == NULL) {
            continue;
        }

        if (strcmp(PQgetvalue(r, 0, 0), "t") == 0) {
            mc_alert(&o->alert, "outbound_endpoint_disabled", 0,
                     "outbound: endpoint %s (%s) failed every delivery for "
                     "%s s: disabled; its events wait for a person to "
                     "enable it (mt5credit outbox enable)", p[0],
                     o->eps[i].cfg->url, after);
        }

        PQclear(r);
    }
}


static mc_endpoint_t *
mc_outbound_endpoint(mc_outbound_t *o, const char *name)
{
    int  i;

    for (i = 0; i < o->neps; i++) {
        if (strcmp(o->eps[i].cfg->name, name) == 0) {
            return &o->eps[i];
        }
    }

    return NULL;
}


/* one function call with a result; NULL when it failed, logged */
static PGresult *
mc_outbound_call(mc_outbound_t *o, const char *what, const char *sql, int n,
    const char **params)
{
    PGresult  *res;

    res = PQexecParams(o->conn, sql, n, NULL, params, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        mc_log(MC_LOG_ERROR, "outbound: %s: %s", what,
               PQresultErrorMessage(res));
        PQclear(res);
        return NULL;
    }

    return res;
}


/*
 * Deliveries by endpoint and outcome since the sender started, and from
 * the database: what waits, and how old the oldest undelivered is.
 */
static void
mc_outbound_metrics(mc_outbound_t *o, mc_exposition_t *x)
{
    int        i, k, n;
    FILE      *f;
    PGresult  *res;

    if (!mc_exposition_wanted(x)) {
        return;
    }

    res = PQstatus(o->conn) == CONNECTION_OK
          ? mc_outbound_call(o, "outbound_backlog",
                             "SELECT endpoint, disabled, status, deliveries,"
                             " oldest_seconds FROM "
                             "mt5credit.outbound_backlog()", 0, NULL)
          : NULL;

    f = mc_exposition_begin(x);
    if (f == NULL) {
        PQclear(res);
        return;
    }

    fprintf(f, "# HELP mt5credit_outbound_deliveries_total Tries to deliver "
            "an outbound event, by endpoint and outcome, since the sender "
            "started.\n"
            "# TYPE mt5credit_outbound_deliveries_total counter\n");
    for (i = 0; i < o->neps; i++) {
        for (k = 0; k < MC_OUT_NOUTCOMES; k++) {
            fprintf(f, "mt5credit_outbound_deliveries_total{endpoint=\"%s\","
                    "outcome=\"%s\"} %" PRIu64 "\n", o->eps[i].cfg->name,
                    mc_outbound_outcomes[k], o->eps[i].outcomes[k]);
        }
    }

    if (res != NULL) {
        n = PQntuples(res);

        fprintf(f, "# HELP mt5credit_outbound_messages Outbound deliveries "
                "not delivered, by endpoint and status.\n"
                "# TYPE mt5credit_outbound_messages gauge\n");
        for (i = 0; i < n; i++) {
            fprintf(f, "mt5credit_outbound_messages{endpoint=\"%s\","
                    "status=\"%s\"} %s\n", PQgetvalue(res, i, 0),
                    PQgetvalue(res, i, 2), PQgetvalue(res, i, 3));
        }

        fprintf(f, "# HELP mt5credit_outbound_oldest_undelivered_seconds "
                "Age of the oldest event not yet delivered (pending or "
                "sending), by endpoint; 0 when none.\n"
                "# TYPE mt5credit_outbound_oldest_undelivered_seconds "
                "gauge\n");
        for (i = 0; i < n; i++) {
            if (strcmp(PQgetvalue(res, i, 2), "pending") == 0) {
                double  age = atof(PQgetvalue(res, i, 4));
                int     j;

                /* the older of pending and sending */
                for (j = 0; j < n; j++) {
                    if (strcmp(PQgetvalue(res, j, 0), PQgetvalue(res, i, 0))
                            == 0
                        && strcmp(PQgetvalue(res, j, 2), "sending") == 0
                        && atof(PQgetvalue(res, j, 4)) > age)
                    {
                        age = atof(PQgetvalue(res, j, 4));
                    }
                }

                fprintf(f, "mt5credit_outbound_oldest_undelivered_seconds{"
                        "endpoint=\"%s\"} %.3f\n", PQgetvalue(res, i, 0),
                        age);
            }
        }

        fprintf(f, "# HELP mt5credit_outbound_endpoint_disabled Whether an "
                "endpoint is disabled (1) after failing too long.\n"
                "# TYPE mt5credit_outbound_endpoint_disabled gauge\n");
        for (i = 0; i < n; i++) {
            if (strcmp(PQgetvalue(res, i, 2), "pending") == 0) {
                fprintf(f, "mt5credit_outbound_endpoint_disabled{endpoint="
                        "\"%s\"} %d\n", PQgetvalue(res, i, 0),
                        strcmp(PQgetvalue(res, i, 1), "t") == 0);
            }
        }

        PQclear(res);
    }

    fprintf(f, "# HELP mt5credit_program_last_round_timestamp_seconds When "
            "the program's last round ended.\n"
            "# TYPE mt5credit_program_last_round_timestamp_seconds gauge\n"
            "mt5credit_program_last_round_timestamp_seconds{program="
            "\"outbound\"} %lld\n", (long long) time(NULL));

    mc_exposition_end(x);
}
