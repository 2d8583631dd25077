/*
 * Copyright (C) mt5-credit
 *
 * One round: query_due() names the deposits to ask about; each is one GET
 * of its session, with a timeout and no retry (the next round is the
 * retry, on the database's schedule).  What comes back is trusted only as
 * a complete HTTP 200 JSON object that is the session asked for; then its
 * bytes go to query_answered().  Anything else is recorded as an attempt
 * and changes nothing.
 */


#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "mc_deployment.h"
#include "mc_log.h"
#include "mc_provider_api.h"
#include "mc_query.h"


#define MC_QUERY_BATCH     100


typedef struct {
    mc_config_t  *cfg;
    PGconn       *conn;
    mc_papi_t        api;
    mc_exposition_t  metrics;     /* metrics_dir, query_metrics_listen */
} mc_query_t;


static int mc_query_round(mc_query_t *q, volatile sig_atomic_t *stop);
static void mc_query_one(mc_query_t *q, const char *deposit,
    const char *reference, const char *session);
static const char *mc_query_fetch(mc_query_t *q, const char *session,
    mc_papi_answer_t *a, const char **type);
static const char *mc_query_event_type(int intent, const char *status);
static int mc_query_still_open(int intent, const char *status);
static void mc_query_record(mc_query_t *q, const char *deposit,
    const char *reference, const char *why);
static void mc_query_metrics(mc_query_t *q);


int
mc_query_run(mc_config_t *cfg, int once, volatile sig_atomic_t *stop)
{
    int         rc;
    char        err[512];
    unsigned    slept;
    mc_query_t  q;

    memset(&q, 0, sizeof(q));
    q.cfg = cfg;

    if (mc_papi_open(&q.api, cfg, "poll-provider", cfg->query_timeout)
        != 0)
    {
        return 2;
    }

    if (mc_exposition_open(&q.metrics, cfg, "poll-provider",
                           cfg->query_metrics_listen, err, sizeof(err))
        != 0)
    {
        mc_log(MC_LOG_ERROR, "query_metrics_listen: %s", err);
        mc_papi_close(&q.api);
        return 2;
    }

    q.conn = mc_deployment_connect(cfg->query_database[0] != '\0'
                                   ? cfg->query_database : cfg->database,
                                   cfg->deployment_tag, "poll-provider");
    if (q.conn == NULL) {
        mc_exposition_close(&q.metrics);
        mc_papi_close(&q.api);
        return 1;
    }

    for ( ;; ) {
        rc = mc_query_round(&q, stop);
        mc_query_metrics(&q);

        if (once || *stop || rc != 0) {
            break;
        }

        for (slept = 0; slept < (unsigned) cfg->query_interval && !*stop;
             slept++)
        {
            sleep(1);
        }

        if (*stop) {
            break;
        }

        if (PQstatus(q.conn) != CONNECTION_OK) {
            /* a new connection may reach another server: asked again */
            if (mc_deployment_reset(q.conn, cfg->deployment_tag, "poll-provider")
                != 0)
            {
                rc = 1;
                break;
            }
        }
    }

    PQfinish(q.conn);
    mc_exposition_close(&q.metrics);
    mc_papi_close(&q.api);
    return rc;
}


/* the round's end in poll-provider's own metrics */
static void
mc_query_metrics(mc_query_t *q)
{
    const mc_papi_t  *apis[1] = { &q->api };
    const char       *names[1] = { "stripe" };

    mc_papi_metrics(&q->metrics, "poll-provider", apis, names, 1);
}


static int
mc_query_round(mc_query_t *q, volatile sig_atomic_t *stop)
{
    int          i, n;
    char         age[32], limit[16];
    PGresult    *res;
    const char  *params[3];

    snprintf(age, sizeof(age), "%d seconds", q->cfg->query_min_age);
    snprintf(limit, sizeof(limit), "%d", MC_QUERY_BATCH);
    params[0] = "stripe";
    params[1] = age;
    params[2] = limit;

    res = PQexecParams(q->conn, "SELECT deposit_id, reference, session_id "
                       "FROM mt5credit.query_due($1, $2, $3)", 3, NULL,
                       params, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        mc_log(MC_LOG_ERROR, "poll-provider: query_due: %s",
               PQresultErrorMessage(res));
        PQclear(res);
        return 1;
    }

    n = PQntuples(res);

    for (i = 0; i < n && !*stop; i++) {
        mc_query_one(q, PQgetvalue(res, i, 0), PQgetvalue(res, i, 1),
                     PQgetvalue(res, i, 2));
    }

    PQclear(res);
    mc_log(MC_LOG_INFO, "poll-provider: %d deposit%s asked about", n,
           n == 1 ? "" : "s");
    return 0;
}


static void
mc_query_one(mc_query_t *q, const char *deposit, const char *reference,
    const char *session)
{
    int             formats[4] = { 0, 0, 0, 1 }, lengths[4] = { 0, 0, 0, 0 };
    PGresult       *res;
    const char     *why, *type, *params[4];
    mc_papi_answer_t  a;

    why = mc_query_fetch(q, session, &a, &type);

    if (why != NULL) {
        mc_log(MC_LOG_WARN, "poll-provider: deposit %s (session %s): %s; "
               "nothing changed", reference, session, why);
        mc_query_record(q, deposit, reference, why);
        mc_papi_answer_free(&a);
        return;
    }

    params[0] = "stripe";
    params[1] = deposit;
    params[2] = type;
    params[3] = a.data;
    lengths[3] = (int) a.len;

    res = PQexecParams(q->conn, "SELECT mt5credit.query_answered($1, $2, $3, "
                       "$4::bytea)", 4, NULL, params, lengths, formats, 0);
    mc_papi_answer_free(&a);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        mc_log(MC_LOG_ERROR, "poll-provider: deposit %s: %s", reference,
               PQresultErrorMessage(res));
        PQclear(res);
        return;
    }

    mc_log(MC_LOG_INFO, "poll-provider: deposit %s (session %s): %s, %s",
           reference, session, type != NULL ? type : "still open",
           PQgetvalue(res, 0, 0));

    if (strcmp(PQgetvalue(res, 0, 0), "credit_created") != 0) {
        mc_query_record(q, deposit, reference,
                        type != NULL ? type : "session still open");
    }

    PQclear(res);
}


/*
 * GET the session.  NULL with the answer in *b and the event type it
 * stands for in *type (NULL: still open), or why it cannot be trusted.
 */
static const char *
mc_query_fetch(mc_query_t *q, const char *session, mc_papi_answer_t *a,
    const char **type)
{
    int          intent, known;
    char         path[512];
    json_t      *doc;
    const char  *status, *object, *id;
    static char  why[256];

    /* a Checkout Session, or a PaymentIntent the portal made directly */
    intent = strncmp(session, "pi_", 3) == 0;

    *type = NULL;
    snprintf(path, sizeof(path), "/v1/%s/%s",
             intent ? "payment_intents" : "checkout/sessions", session);

    if (mc_papi_get(&q->api, path, a) != 0) {
        snprintf(why, sizeof(why), "no answer (%s)",
                 curl_easy_strerror(a->rc));
        return why;
    }

    if (a->too_big) {
        return "an answer over 1 MB";
    }

    if (a->status != 200) {
        snprintf(why, sizeof(why), "HTTP %ld", a->status);
        return why;
    }

    doc = json_loadb(a->data != NULL ? a->data : "", a->len, 0, NULL);
    object = json_string_value(json_object_get(doc, "object"));
    id = json_string_value(json_object_get(doc, "id"));
    status = json_string_value(json_object_get(doc, "status"));

    if (!json_is_object(doc) || object == NULL
        || strcmp(object, intent ? "payment_intent" : "checkout.session") != 0
        || id == NULL || strcmp(id, session) != 0 || status == NULL)
    {
        json_decref(doc);
        return "an answer that is not the object asked for";
    }

    /* status points into doc: everything read from it before it goes */
    *type = mc_query_event_type(intent, status);
    known = *type != NULL || mc_query_still_open(intent, status);
    json_decref(doc);

    return known ? NULL : "a status we do not know";
}


/*
 * The webhook event an object's status stands for, as Stripe would have
 * sent it; NULL while nothing is decided yet (or for a status we do not
 * know, which mc_query_still_open() tells apart).
 */
static const char *
mc_query_event_type(int intent, const char *status)
{
    if (!intent) {
        return strcmp(status, "complete") == 0 ? "checkout.session.completed"
               : strcmp(status, "expired") == 0 ? "checkout.session.expired"
               : NULL;
    }

    return strcmp(status, "succeeded") == 0 ? "payment_intent.succeeded"
           : strcmp(status, "processing") == 0 ? "payment_intent.processing"
           : strcmp(status, "canceled") == 0 ? "payment_intent.canceled"
           : NULL;
}


static int
mc_query_still_open(int intent, const char *status)
{
    if (!intent) {
        return strcmp(status, "open") == 0;
    }

    /* a PaymentIntent waiting for its customer, or retried after a
       declined card: not a failure of the deposit yet */
    return strcmp(status, "requires_payment_method") == 0
           || strcmp(status, "requires_confirmation") == 0
           || strcmp(status, "requires_action") == 0
           || strcmp(status, "requires_capture") == 0;
}


static void
mc_query_record(mc_query_t *q, const char *deposit, const char *reference,
    const char *why)
{
    char         backoff[32], max[16];
    PGresult    *res;
    const char  *params[4];

    snprintf(backoff, sizeof(backoff), "%d seconds", q->cfg->query_backoff);
    snprintf(max, sizeof(max), "%d", q->cfg->query_max_attempts);
    params[0] = deposit;
    params[1] = why;
    params[2] = backoff;
    params[3] = max;

    res = PQexecParams(q->conn, "SELECT mt5credit.query_record($1, $2, $3, "
                       "$4)", 4, NULL, params, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        mc_log(MC_LOG_ERROR, "poll-provider: deposit %s: %s", reference,
               PQresultErrorMessage(res));

    } else if (strcmp(PQgetvalue(res, 0, 0), "given_up") == 0) {
        mc_log(MC_LOG_ALERT, "poll-provider: deposit %s: no answer settles "
               "it after %d queries; left to reconciliation, case opened",
               reference, q->cfg->query_max_attempts);
    }

    PQclear(res);
}
