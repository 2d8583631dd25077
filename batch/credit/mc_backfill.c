/*
 * Copyright (C) mt5-credit
 *
 * First the whole list, then the events: the list is read page by page
 * (starting_after the last id, while has_more) and trusted only as a run
 * of complete HTTP 200 lists; each listed event is then fetched alone,
 * GET /v1/events/<id>, so what is stored is the provider's bytes for that
 * event, not our re-serialisation of a list entry.  Nothing is retried
 * here: the next run (a timer) is the retry, and ingest's keys make a
 * second run harmless.
 */


#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "mc_backfill.h"
#include "mc_deployment.h"
#include "mc_log.h"
#include "mc_provider_api.h"


#define MC_BACKFILL_PAGE   100
#define MC_BACKFILL_MAX    100000     /* events in one run */
#define MC_BACKFILL_IDLEN  256


typedef struct {
    mc_config_t  *cfg;
    const char   *provider;
    PGconn       *conn;
    mc_papi_t     api;

    char        (*ids)[MC_BACKFILL_IDLEN];
    size_t        nids;

    /* what became of them */
    unsigned      ingested, stored, refused, failed;

    /* the people's requests this run took (sql/059): "{1,2}" */
    char          requests[1024];
    unsigned      nrequests;

    /* one of them is a rewind's (sql/069): every event, delivered or not */
    unsigned      every_event:1;
} mc_backfill_t;


static int mc_backfill_list(mc_backfill_t *b, int64_t since,
    volatile sig_atomic_t *stop);
static int mc_backfill_page(mc_backfill_t *b, const char *path,
    char *last, size_t lastlen, int *more);
static void mc_backfill_one(mc_backfill_t *b, const char *id);
static int mc_backfill_take(mc_backfill_t *b, int64_t *since);
static void mc_backfill_done(mc_backfill_t *b, int complete);


int
mc_backfill_run(mc_config_t *cfg, const char *provider, int64_t since,
    volatile sig_atomic_t *stop)
{
    int            rc, complete;
    size_t         i;
    mc_backfill_t  b;

    if (strcmp(provider, "stripe") != 0) {
        fprintf(stderr, "mt5credit: backfill: provider \"%s\": only stripe "
                "lists its undelivered events\n", provider);
        return 2;
    }

    memset(&b, 0, sizeof(b));
    b.cfg = cfg;
    b.provider = provider;

    if (mc_papi_open(&b.api, cfg, "backfill", cfg->query_timeout) != 0) {
        return 2;
    }

    /* poll-provider's role: the same trust in the provider's API */
    b.conn = mc_deployment_connect(cfg->query_database[0] != '\0'
                                   ? cfg->query_database : cfg->database,
                                   cfg->deployment_tag, "backfill");
    if (b.conn == NULL) {
        mc_papi_close(&b.api);
        return 1;
    }

    b.ids = calloc(MC_BACKFILL_MAX, MC_BACKFILL_IDLEN);
    if (b.ids == NULL) {
        fprintf(stderr, "mt5credit: backfill: out of memory\n");
        PQfinish(b.conn);
        mc_papi_close(&b.api);
        return 1;
    }

    /* a person may have asked for more than the timer's window (059) */
    if (mc_backfill_take(&b, &since) != 0) {
        free(b.ids);
        PQfinish(b.conn);
        mc_papi_close(&b.api);
        return 1;
    }

    complete = mc_backfill_list(&b, since, stop) == 0;

    for (i = 0; i < b.nids && !*stop; i++) {
        mc_backfill_one(&b, b.ids[i]);
    }

    mc_backfill_done(&b, complete && b.failed == 0 && b.refused == 0
                         && !*stop);

    mc_log(MC_LOG_INFO, "backfill %s: %zu%s events listed%s: %u "
           "ingested, %u already stored, %u refused, %u not fetched",
           provider, b.nids, b.every_event ? "" : " undelivered",
           complete ? "" : " (the list is incomplete)",
           b.ingested, b.stored, b.refused, b.failed);
    printf("backfill %s: %zu listed%s; %u ingested, %u already stored, "
           "%u refused, %u not fetched\n", provider, b.nids,
           complete ? "" : " (list incomplete)", b.ingested, b.stored,
           b.refused, b.failed);

    rc = complete && b.failed == 0 && b.refused == 0 && !*stop ? 0 : 1;

    free(b.ids);
    PQfinish(b.conn);
    mc_papi_close(&b.api);
    return rc;
}


/* 0: every page was read; -1: the list is not known to be complete */
static int
mc_backfill_list(mc_backfill_t *b, int64_t since, volatile sig_atomic_t *stop)
{
    int   more;
    char  path[512], last[MC_BACKFILL_IDLEN];

    last[0] = '\0';

    do {
        if (*stop) {
            return -1;
        }

        snprintf(path, sizeof(path), "/v1/events?%s"
                 "created%%5Bgte%%5D=%" PRId64 "&limit=%d%s%s",
                 b->every_event ? "" : "delivery_success=false&", since,
                 MC_BACKFILL_PAGE, last[0] ? "&starting_after=" : "", last);

        if (mc_backfill_page(b, path, last, sizeof(last), &more) != 0) {
            return -1;
        }

    } while (more);

    return 0;
}


static int
mc_backfill_page(mc_backfill_t *b, const char *path, char *last,
    size_t lastlen, int *more)
{
    size_t             i, n;
    json_t            *doc, *data, *e;
    const char        *id, *object;
    mc_papi_answer_t   a;

    memset(&a, 0, sizeof(a));
    *more = 0;

    if (mc_papi_get(&b->api, path, &a) != 0 || a.status != 200
        || a.too_big)
    {
        mc_log(MC_LOG_WARN, "backfill %s: the event list: %s", b->provider,
               a.too_big ? "an answer over 1 MB"
               : a.status ? "not HTTP 200" : curl_easy_strerror(a.rc));
        mc_papi_answer_free(&a);
        return -1;
    }

    doc = json_loadb(a.data, a.len, 0, NULL);
    mc_papi_answer_free(&a);

    object = json_string_value(json_object_get(doc, "object"));
    data = json_object_get(doc, "data");

    if (object == NULL || strcmp(object, "list") != 0 || !json_is_array(data)
        || !json_is_boolean(json_object_get(doc, "has_more")))
    {
        mc_log(MC_LOG_WARN, "backfill %s: the event list's answer is not a "
               "list", b->provider);
        json_decref(doc);
        return -1;
    }

    n = json_array_size(data);

    /* a page that says there is more must lead somewhere */
    if (json_is_true(json_object_get(doc, "has_more")) && n == 0) {
        mc_log(MC_LOG_WARN, "backfill %s: an empty page says there is more",
               b->provider);
        json_decref(doc);
        return -1;
    }

    for (i = 0; i < n; i++) {
        e = json_array_get(data, i);
        id = json_string_value(json_object_get(e, "id"));

        if (id == NULL || strlen(id) >= MC_BACKFILL_IDLEN
            || strncmp(id, "evt_", 4) != 0)
        {
            mc_log(MC_LOG_WARN, "backfill %s: a listed event without a "
                   "usable id", b->provider);
            json_decref(doc);
            return -1;
        }

        if (b->nids == MC_BACKFILL_MAX) {
            mc_log(MC_LOG_WARN, "backfill %s: over %d undelivered events; "
                   "the rest next run", b->provider, MC_BACKFILL_MAX);
            json_decref(doc);
            return -1;
        }

        snprintf(b->ids[b->nids++], MC_BACKFILL_IDLEN, "%s", id);
        snprintf(last, lastlen, "%s", id);
    }

    *more = json_is_true(json_object_get(doc, "has_more"));
    json_decref(doc);
    return 0;
}


static void
mc_backfill_one(mc_backfill_t *b, const char *id)
{
    char               path[512];
    PGresult          *res;
    const char        *outcome, *msg, *params[3];
    int                lengths[3], formats[3];
    mc_papi_answer_t   a;

    memset(&a, 0, sizeof(a));
    snprintf(path, sizeof(path), "/v1/events/%s", id);

    if (mc_papi_get(&b->api, path, &a) != 0 || a.status != 200
        || a.too_big || a.data == NULL)
    {
        mc_log(MC_LOG_WARN, "backfill %s: event %s: %s", b->provider, id,
               a.too_big ? "an answer over 1 MB"
               : a.status ? "not HTTP 200" : curl_easy_strerror(a.rc));
        mc_papi_answer_free(&a);
        b->failed++;
        return;
    }

    params[0] = b->provider;
    params[1] = id;
    params[2] = a.data;
    lengths[0] = lengths[1] = 0;
    lengths[2] = (int) a.len;
    formats[0] = formats[1] = 0;
    formats[2] = 1;                 /* the bytes, as they came */

    res = PQexecParams(b->conn, "SELECT outcome, coalesce(credit_id::text, "
                       "'-'), coalesce(detail, '') "
                       "FROM mt5credit.backfill_event($1, $2, $3)", 3, NULL,
                       params, lengths, formats, 0);
    mc_papi_answer_free(&a);

    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
        mc_log(MC_LOG_WARN, "backfill %s: event %s refused: %s",
               b->provider, id, msg != NULL ? msg : PQresultErrorMessage(res));
        PQclear(res);
        b->refused++;
        return;
    }

    outcome = PQgetvalue(res, 0, 0);

    if (strcmp(outcome, "stored") == 0) {
        b->stored++;

    } else if (strcmp(outcome, "refused") == 0) {
        /* its deposit does not vouch for it (sql/064): a case, no credit */
        mc_log(MC_LOG_WARN, "backfill %s: event %s refused: %s",
               b->provider, id, PQgetvalue(res, 0, 2));
        b->refused++;

    } else {
        b->ingested++;
        mc_log(MC_LOG_INFO, "backfill %s: event %s: %s (credit %s)%s%s",
               b->provider, id, outcome, PQgetvalue(res, 0, 1),
               PQgetvalue(res, 0, 2)[0] ? ": " : "", PQgetvalue(res, 0, 2));
    }

    PQclear(res);
}


/*
 * The open requests of this provider, taken for this run: the list is
 * read from the earliest of them when that is before since.  -1: the
 * database did not answer (nothing is read then: a request would be
 * silently narrower than asked).
 */
static int
mc_backfill_take(mc_backfill_t *b, int64_t *since)
{
    int          i, n;
    size_t       len;
    int64_t      t;
    PGresult    *res;
    const char  *params[1] = { b->provider };

    res = PQexecParams(b->conn, "SELECT id, extract(epoch FROM since)"
                       "::bigint, every_event "
                       "FROM mt5credit.backfill_requests_take($1) "
                       "ORDER BY id LIMIT 100", 1, NULL, params, NULL, NULL,
                       0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        mc_log(MC_LOG_ERROR, "backfill %s: the requests: %s", b->provider,
               PQresultErrorMessage(res));
        PQclear(res);
        return -1;
    }

    n = PQntuples(res);
    len = (size_t) snprintf(b->requests, sizeof(b->requests), "{");

    for (i = 0; i < n && len + 24 < sizeof(b->requests); i++) {
        len += (size_t) snprintf(b->requests + len, sizeof(b->requests) - len,
                                 "%s%s", i ? "," : "", PQgetvalue(res, i, 0));
        t = strtoll(PQgetvalue(res, i, 1), NULL, 10);

        if (t < *since) {
            *since = t;
        }

        if (strcmp(PQgetvalue(res, i, 2), "t") == 0) {
            b->every_event = 1;
        }

        b->nrequests++;
    }

    snprintf(b->requests + len, sizeof(b->requests) - len, "}");

    if (n > 0) {
        mc_log(MC_LOG_INFO, "backfill %s: %d requests taken %s, reading "
               "%s from %" PRId64, b->provider, n, b->requests,
               b->every_event ? "every event (a rewind's)"
                              : "undelivered events", *since);
    }

    PQclear(res);
    return 0;
}


/* the requests taken: finished with what the run found, or given back */
static void
mc_backfill_done(mc_backfill_t *b, int complete)
{
    char         outcome[256];
    PGresult    *res;
    const char  *params[3];

    if (b->nrequests == 0) {
        return;
    }

    snprintf(outcome, sizeof(outcome), "%zu listed; %u ingested, %u already "
             "stored, %u refused, %u not fetched", b->nids, b->ingested,
             b->stored, b->refused, b->failed);

    params[0] = b->requests;
    params[1] = complete ? "true" : "false";
    params[2] = outcome;

    res = PQexecParams(b->conn, "SELECT mt5credit.backfill_requests_done("
                       "$1::bigint[], $2::boolean, $3)", 3, NULL, params,
                       NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        mc_log(MC_LOG_ERROR, "backfill %s: requests %s: %s", b->provider,
               b->requests, PQresultErrorMessage(res));

    } else {
        mc_log(MC_LOG_INFO, "backfill %s: requests %s %s", b->provider,
               b->requests, complete ? "finished" : "given back for the "
               "next run (the list was not complete)");
    }

    PQclear(res);
}
