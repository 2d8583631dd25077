/*
 * Copyright (C) mt5-credit
 *
 * One round of the refund legs (mc_refund.c), then one of the payouts:
 *
 *   1. payout_sweep(): a sender that died mid-send leaves its payout
 *      unknown, never pending.
 *   2. payout_check_due(): unknown payouts are looked up in the provider's
 *      listing by our reference (found: recorded as the provider says;
 *      a complete listing without it: pending, to be sent again under the
 *      same idempotency key; anything less: unknown still, backoff, and a
 *      person after payout_max_lookups); accepted payouts are asked for
 *      their status until paid or failed, and paid ones again until
 *      payout_paid_watch has passed (a bank can return a paid payout).
 *   3. payout_claim(): each pending payout is sent once, with its
 *      idempotency key, by the configured rail (mc_payout_rail.h).  The answer decides: the provider's payout object
 *      (accepted, paid, or failed), an explicit decline (rejected: a case,
 *      the MT5 debit stands), or nothing certain (unknown).
 *
 * No request is retried here; the next round's lookup decides.
 */


#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "mc_alert.h"
#include "mc_deployment.h"
#include "mc_log.h"
#include "mc_payout.h"
#include "mc_payout_rail.h"
#include "mc_provider_api.h"
#include "mc_refund.h"
#include "mc_sender.h"


#define MC_PAYOUT_BATCH       100


typedef mc_sender_t  mc_payout_t;


static int mc_payout_round(mc_payout_t *p, volatile sig_atomic_t *stop);
static int mc_payout_items(mc_payout_t *p, const char *sql, int n,
    const char **params, mc_payout_item_t *items, int max);
static void mc_payout_send(mc_payout_t *p, mc_payout_item_t *it);
static void mc_payout_sent_answer(mc_payout_t *p, mc_payout_item_t *it,
    mc_papi_answer_t *a);
static void mc_payout_check(mc_payout_t *p, mc_payout_item_t *it);
static void mc_payout_check_status(mc_payout_t *p, mc_payout_item_t *it);
static void mc_payout_lookup(mc_payout_t *p, mc_payout_item_t *it);
static void mc_payout_answered(mc_payout_t *p, mc_payout_item_t *it,
    const char *from, const mc_payout_seen_t *seen);
static void mc_payout_check_failed(mc_payout_t *p, mc_payout_item_t *it,
    const char *kind, const char *why);


int
mc_payout_run(mc_config_t *cfg, int once, volatile sig_atomic_t *stop)
{
    int               rc;
    char              err[512];
    unsigned          slept;
    mc_sender_t       r;
    mc_payout_t       p;
    mc_exposition_t   metrics;    /* metrics_dir, payout_metrics_listen */
    const mc_papi_t  *apis[2];
    const char       *names[2] = { "stripe", "stripe" };

    memset(&r, 0, sizeof(r));
    r.cfg = cfg;
    r.alert.command = cfg->alert_command;
    r.alert.url = cfg->alert_url;
    r.alert.worker = cfg->worker_name;
    p = r;

    /* the refund legs go back through the payments' provider */
    if (mc_papi_open(&r.api, cfg, "payout", cfg->payout_timeout) != 0) {
        return 2;
    }

    if (strcmp(cfg->payout_rail, "generic") == 0) {
        p.rail = &mc_payout_generic;
        rc = mc_papi_open_at(&p.api, cfg, "payout_api_url",
                             cfg->payout_api_url, "payout_api_key_file",
                             cfg->payout_api_key_file, "payout",
                             cfg->payout_timeout);

    } else if (strcmp(cfg->payout_rail, "stripe_connect") == 0) {
        p.rail = &mc_payout_stripe_connect;
        rc = mc_papi_open(&p.api, cfg, "payout", cfg->payout_timeout);

    } else {
        mc_log(MC_LOG_WARN, "payout: payout_rail is none: refund legs are "
               "sent, payout legs wait (docs/providers.md)");
        rc = 0;
    }

    if (rc != 0) {
        mc_papi_close(&r.api);
        return 2;
    }

    if (mc_exposition_open(&metrics, cfg, "payout",
                           cfg->payout_metrics_listen, err, sizeof(err))
        != 0)
    {
        mc_log(MC_LOG_ERROR, "payout_metrics_listen: %s", err);
        mc_papi_close(&r.api);
        mc_papi_close(&p.api);
        return 2;
    }

    r.conn = mc_deployment_connect(cfg->database, cfg->deployment_tag,
                                   "payout");
    if (r.conn == NULL) {
        mc_exposition_close(&metrics);
        mc_papi_close(&r.api);
        mc_papi_close(&p.api);
        return 1;
    }

    p.conn = r.conn;

    for ( ;; ) {
        /* the refund legs, then the payout legs: each sender's round
           looks up what is unknown before it sends anything */
        rc = mc_refund_round(&r, stop);
        if (rc == 0 && p.rail != NULL) {
            rc = mc_payout_round(&p, stop);
        }

        /* the refunds go to the payments' provider, the payouts to the
           rail's */
        apis[0] = &r.api;
        apis[1] = p.rail != NULL ? &p.api : NULL;
        names[1] = cfg->payout_provider[0] ? cfg->payout_provider
                                           : "stripe";
        mc_papi_metrics(&metrics, "payout", apis, names, 2);

        if (once || *stop) {
            break;
        }

        for (slept = 0; slept < (unsigned) cfg->payout_interval && !*stop;
             slept++)
        {
            sleep(1);
        }

        if (*stop) {
            break;
        }

        if (PQstatus(r.conn) != CONNECTION_OK) {
            /* a new connection may reach another server: asked again */
            if (mc_deployment_reset(r.conn, cfg->deployment_tag, "payout")
                != 0)
            {
                rc = 1;
                break;
            }
        }
    }

    PQfinish(r.conn);
    mc_exposition_close(&metrics);
    mc_papi_close(&r.api);
    mc_papi_close(&p.api);
    return rc;
}


static int
mc_payout_round(mc_payout_t *p, volatile sig_atomic_t *stop)
{
    int               i, n, sent, checked;
    char              margin[16], lookup[16], limit[16], lease[16], out[16];
    const char       *params[4];
    mc_payout_item_t  items[MC_PAYOUT_BATCH];

    params[0] = p->cfg->worker_name;
    if (mc_sender_call(p, "payout", "payout_sweep",
                       "SELECT mt5credit.payout_sweep($1)", 1, params, out,
                       sizeof(out)) != 0)
    {
        return 1;
    }

    if (strcmp(out, "0") != 0) {
        mc_log(MC_LOG_WARN, "payout: %s payout(s) past their lease are "
               "unknown now", out);
    }

    /* first what is unknown or on its way: nothing unknown is re-sent
       before its lookup, and the lookup comes first */
    snprintf(margin, sizeof(margin), "%d", p->cfg->payout_margin);
    snprintf(lookup, sizeof(lookup), "%d", p->cfg->payout_lease);
    snprintf(limit, sizeof(limit), "%d", MC_PAYOUT_BATCH);
    params[0] = p->cfg->payout_provider;
    params[1] = margin;
    params[2] = lookup;
    params[3] = limit;

    n = mc_payout_items(p, "SELECT * FROM mt5credit.payout_check_due($1, $2, "
                        "$3, $4)", 4, params, items, MC_PAYOUT_BATCH);
    if (n < 0) {
        return 1;
    }

    checked = n;
    for (i = 0; i < n && !*stop; i++) {
        mc_payout_check(p, &items[i]);
    }

    snprintf(lease, sizeof(lease), "%d", p->cfg->payout_lease);
    params[0] = p->cfg->payout_provider;
    params[1] = p->cfg->worker_name;
    params[2] = lease;

    for (sent = 0; sent < MC_PAYOUT_BATCH && !*stop; sent++) {
        n = mc_payout_items(p, "SELECT * FROM mt5credit.payout_claim($1, $2, "
                            "$3)", 3, params, items, 1);
        if (n < 0) {
            return 1;
        }

        if (n == 0) {
            break;
        }

        mc_payout_send(p, &items[0]);
    }

    mc_log(MC_LOG_INFO, "payout: round: %d looked at, %d sent", checked,
           sent);
    return 0;
}


/* rows of mt5credit.payout_item into items; their number, or -1 */
static int
mc_payout_items(mc_payout_t *p, const char *sql, int n, const char **params,
    mc_payout_item_t *items, int max)
{
    int                i, rows;
    PGresult          *res;
    mc_payout_item_t  *it;

    res = PQexecParams(p->conn, sql, n, NULL, params, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        mc_log(MC_LOG_ERROR, "payout: %s",
               res != NULL && PQresultErrorMessage(res)[0] != '\0'
               ? PQresultErrorMessage(res) : PQerrorMessage(p->conn));
        PQclear(res);
        return -1;
    }

    rows = PQntuples(res);

    for (i = 0; i < rows && i < max; i++) {
        it = &items[i];
        memset(it, 0, sizeof(*it));
        it->id = strtoll(PQgetvalue(res, i, 0), NULL, 10);
        it->attempts = atoi(PQgetvalue(res, i, 1));
        snprintf(it->status, sizeof(it->status), "%s", PQgetvalue(res, i, 2));
        snprintf(it->reference, sizeof(it->reference), "%s",
                 PQgetvalue(res, i, 3));
        snprintf(it->idempotency_key, sizeof(it->idempotency_key), "%s",
                 PQgetvalue(res, i, 4));
        it->amount_minor = strtoll(PQgetvalue(res, i, 6), NULL, 10);
        snprintf(it->currency, sizeof(it->currency), "%s",
                 PQgetvalue(res, i, 7));
        snprintf(it->destination, sizeof(it->destination), "%s",
                 PQgetvalue(res, i, 8));
        snprintf(it->payout_id, sizeof(it->payout_id), "%s",
                 PQgetvalue(res, i, 9));
        snprintf(it->debit_reference, sizeof(it->debit_reference), "%s",
                 PQgetvalue(res, i, 10));
        it->first_sent = strtoll(PQgetvalue(res, i, 11), NULL, 10);
        snprintf(it->deployment, sizeof(it->deployment), "%s",
                 PQgetvalue(res, i, 12));
    }

    PQclear(res);
    return i;
}


/*
 * One POST, with the payout's idempotency key.  Amounts are the
 * provider's minor units already: no conversion happens here.
 */
static void
mc_payout_send(mc_payout_t *p, mc_payout_item_t *it)
{
    mc_papi_answer_t  a;

    mc_log(MC_LOG_INFO, "payout %s (debit %s): %s POST %" PRId64 " %s to %s, "
           "attempt %d, key %s", it->reference, it->debit_reference,
           p->rail->name, it->amount_minor, it->currency, it->destination,
           it->attempts, it->idempotency_key);

    p->rail->send(&p->api, it, &a);
    mc_payout_sent_answer(p, it, &a);
    mc_papi_answer_free(&a);
}


static void
mc_payout_sent_answer(mc_payout_t *p, mc_payout_item_t *it,
    mc_papi_answer_t *a)
{
    char              code[128], msg[512], *d, att[16], id[24];
    json_t           *doc;
    const char       *why, *params[6];
    mc_payout_seen_t  seen;

    snprintf(id, sizeof(id), "%" PRId64, it->id);
    snprintf(att, sizeof(att), "%d", it->attempts);
    params[0] = id;
    params[1] = att;
    params[2] = p->cfg->worker_name;

    switch (mc_sender_sent(a, code, sizeof(code), msg, sizeof(msg))) {

    case MC_SENT_NOT:
        /* the connection was never made: nothing can have been paid */
        d = mc_sender_detail(json_pack("{s:s, s:s}", "step", "send",
                                       "reason", msg));
        params[3] = d;
        mc_log(MC_LOG_WARN, "payout %s: %s; not sent, released",
               it->reference, msg);
        mc_sender_call(p, "payout", "payout_release", "SELECT mt5credit."
                       "payout_release($1, $2, $3, $4)", 4, params, NULL, 0);
        free(d);
        return;

    case MC_SENT_OBJECT:
        doc = json_loadb(a->data != NULL ? a->data : "", a->len, 0, NULL);
        why = p->rail->match(it, doc, &seen);
        json_decref(doc);

        if (why == NULL) {
            mc_payout_answered(p, it, "sending", &seen);
            return;
        }

        snprintf(msg, sizeof(msg), "%s", why);
        break;

    case MC_SENT_DECLINED:
        /* the provider refused the request itself: nothing was paid */
        d = mc_sender_detail(json_pack("{s:s, s:i, s:s}", "step", "send",
                                       "http", (int) a->status,
                                       "code", code));
        params[3] = code;
        params[4] = msg;
        params[5] = d;
        mc_log(MC_LOG_ALERT, "payout %s: declined by the provider: "
               "%s (%s); the MT5 debit %s stands, case opened",
               it->reference, code, msg, it->debit_reference);
        mc_sender_call(p, "payout", "payout_declined", "SELECT mt5credit."
                       "payout_declined($1, $2, $4, $5, $3, $6)", 6,
                       params, NULL, 0);
        mc_alert(&p->alert, "payout_rejected", it->id,
                 "payout %s declined by the provider: %s",
                 it->reference, code);
        free(d);
        return;

    case MC_SENT_UNKNOWN:
        break;
    }

    /* a timeout is not a failure: the lookup will tell */
    d = mc_sender_detail(json_pack("{s:s, s:s}", "step", "send", "reason",
                                   msg));
    params[3] = d;
    mc_log(MC_LOG_WARN, "payout %s: outcome unknown (%s); it will be looked "
           "up before anything is sent again", it->reference, msg);
    mc_sender_call(p, "payout", "payout_unknown", "SELECT mt5credit."
                   "payout_unknown($1, $2, $3, $4)", 4, params, NULL, 0);
    free(d);
}


static void
mc_payout_check(mc_payout_t *p, mc_payout_item_t *it)
{
    if (strcmp(it->status, "accepted") == 0
        || strcmp(it->status, "paid") == 0)
    {
        mc_payout_check_status(p, it);
        return;
    }

    mc_payout_lookup(p, it);
}


/*
 * An accepted payout, or a paid one still watched (a bank can return it):
 * GET it by the provider's id until paid or failed, or the watch ends.
 */
static void
mc_payout_check_status(mc_payout_t *p, mc_payout_item_t *it)
{
    char              why[128];
    json_t           *doc;
    const char       *bad;
    mc_papi_answer_t  a;
    mc_payout_seen_t  seen;

    if (p->rail->get(&p->api, it, &a) != 0) {
        snprintf(why, sizeof(why), "status query: %s",
                 a.rc != CURLE_OK ? curl_easy_strerror(a.rc) : "not HTTP 200");
        mc_papi_answer_free(&a);
        mc_payout_check_failed(p, it, "payout_no_answer", why);
        return;
    }

    doc = json_loadb(a.data != NULL ? a.data : "", a.len, 0, NULL);
    bad = p->rail->match(it, doc, &seen);
    json_decref(doc);
    mc_papi_answer_free(&a);

    if (bad == NULL && strcmp(seen.id, it->payout_id) != 0) {
        bad = "an answer about another payout";
    }

    if (bad != NULL) {
        mc_payout_check_failed(p, it, "payout_no_answer", bad);
        return;
    }

    mc_payout_answered(p, it, it->status, &seen);
}


/*
 * An unknown payout: every payout at the provider carrying our reference,
 * from a complete answer (the rail's).  Only a complete answer can say
 * "not there".
 */
static void
mc_payout_lookup(mc_payout_t *p, mc_payout_item_t *it)
{
    int               page;
    char              why[256], id[24], att[16], *d;
    json_t           *found;
    const char       *bad, *params[4];
    mc_payout_seen_t  seen;

    found = json_array();

    bad = p->rail->find(&p->api, it, found, &page);
    if (bad != NULL) {
        json_decref(found);
        mc_payout_check_failed(p, it, "payout_no_answer", bad);
        return;
    }

    if (json_array_size(found) > 1) {
        snprintf(why, sizeof(why), "%zu payouts carry reference %s",
                 json_array_size(found), it->reference);
        json_decref(found);
        mc_log(MC_LOG_ALERT, "payout %s: %s", it->reference, why);
        mc_payout_check_failed(p, it, "payout_conflict", why);
        mc_alert(&p->alert, "payout_conflict", it->id, "payout %s: %s",
                 it->reference, why);
        return;
    }

    if (json_array_size(found) == 1) {
        bad = p->rail->match(it, json_array_get(found, 0), &seen);
        json_decref(found);

        if (bad != NULL) {
            snprintf(why, sizeof(why), "found, but %s", bad);
            mc_payout_check_failed(p, it, "payout_conflict", why);
            return;
        }

        mc_log(MC_LOG_INFO, "payout %s: found at the provider as %s, %s",
               it->reference, seen.id, seen.status);
        mc_payout_answered(p, it, "unknown", &seen);
        return;
    }

    json_decref(found);

    /* the provider vouches that it has no such payout: send it again,
       under the same idempotency key */
    snprintf(id, sizeof(id), "%" PRId64, it->id);
    snprintf(att, sizeof(att), "%d", it->attempts);
    d = mc_sender_detail(json_pack("{s:s, s:i}", "step", "lookup", "pages",
                                   page));
    params[0] = id;
    params[1] = att;
    params[2] = p->cfg->worker_name;
    params[3] = d;
    mc_log(MC_LOG_INFO, "payout %s: not at the provider (complete listing, "
           "%d page%s); pending again", it->reference, page,
           page == 1 ? "" : "s");
    mc_sender_call(p, "payout", "payout_absent", "SELECT mt5credit."
                   "payout_absent($1, $2, $3, $4)", 4, params, NULL, 0);
    free(d);
}


static void
mc_payout_answered(mc_payout_t *p, mc_payout_item_t *it, const char *from,
    const mc_payout_seen_t *seen)
{
    char         id[24], att[16], recheck[16], watch[16], out[16], *d;
    const char  *params[11];

    snprintf(id, sizeof(id), "%" PRId64, it->id);
    snprintf(att, sizeof(att), "%d", it->attempts);
    snprintf(recheck, sizeof(recheck), "%d", p->cfg->payout_recheck);
    snprintf(watch, sizeof(watch), "%d", p->cfg->payout_paid_watch);
    d = mc_sender_detail(json_pack("{s:s, s:s}", "step",
                                   strcmp(from, "sending") == 0 ? "send"
                                                                : "lookup",
                                   "provider_payout_id", seen->id));

    params[0] = id;
    params[1] = att;
    params[2] = from;
    params[3] = seen->id;
    params[4] = seen->status;
    params[5] = seen->failure_code[0] != '\0' ? seen->failure_code : NULL;
    params[6] = seen->failure_message[0] != '\0' ? seen->failure_message
                                                  : NULL;
    params[7] = p->cfg->worker_name;
    params[8] = d;
    params[9] = recheck;
    params[10] = watch;

    if (mc_sender_call(p, "payout", "payout_answered", "SELECT mt5credit."
                       "payout_answered($1, $2, $3, $4, $5, $6, $7, $8, $9, "
                       "$10, $11)", 11, params, out, sizeof(out)) == 0)
    {
        if (strcmp(out, "returned") == 0) {
            mc_log(MC_LOG_ALERT, "payout %s: paid, then %s by the bank (%s); "
                   "the MT5 debit %s stands, case opened", it->reference,
                   seen->status, seen->failure_code, it->debit_reference);
            mc_alert(&p->alert, "payout_rejected", it->id,
                     "payout %s returned after it was paid: %s", it->reference,
                     seen->failure_code);

        } else if (strcmp(out, "rejected") == 0) {
            mc_log(MC_LOG_ALERT, "payout %s: %s by the provider (%s); the "
                   "MT5 debit %s stands, case opened", it->reference,
                   seen->status, seen->failure_code, it->debit_reference);
            mc_alert(&p->alert, "payout_rejected", it->id,
                     "payout %s %s: %s", it->reference, seen->status,
                     seen->failure_code);

        } else if (strcmp(out, "stale") == 0) {
            mc_log(MC_LOG_WARN, "payout %s: changed meanwhile; nothing "
                   "recorded", it->reference);

        } else {
            mc_log(MC_LOG_INFO, "payout %s: %s (%s at the provider, %s)",
                   it->reference, out, seen->id, seen->status);
        }
    }

    free(d);
}


static void
mc_payout_check_failed(mc_payout_t *p, mc_payout_item_t *it,
    const char *kind, const char *why)
{
    char         id[24], att[16], backoff[16], max[16], out[8];
    const char  *params[7];

    snprintf(id, sizeof(id), "%" PRId64, it->id);
    snprintf(att, sizeof(att), "%d", it->attempts);
    snprintf(backoff, sizeof(backoff), "%d", p->cfg->payout_backoff);
    snprintf(max, sizeof(max), "%d", p->cfg->payout_max_lookups);
    params[0] = id;
    params[1] = att;
    params[2] = kind;
    params[3] = why;
    params[4] = backoff;
    params[5] = max;
    params[6] = p->cfg->worker_name;

    mc_log(MC_LOG_WARN, "payout %s (%s): %s; nothing changed",
           it->reference, it->status, why);

    if (mc_sender_call(p, "payout", "payout_check_failed", "SELECT mt5credit."
                       "payout_check_failed($1, $2, $3, $4, $5, $6, $7)", 7,
                       params, out, sizeof(out)) == 0
        && strcmp(out, "t") == 0 && strcmp(kind, "payout_no_answer") == 0)
    {
        mc_log(MC_LOG_ALERT, "payout %s: still %s after %d lookups; a "
               "person must look (case opened)", it->reference, it->status,
               p->cfg->payout_max_lookups);
        mc_alert(&p->alert, kind, it->id, "payout %s: %s", it->reference,
                 why);
    }
}
