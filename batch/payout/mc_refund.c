/*
 * Copyright (C) mt5-credit
 *
 * One round of the refund legs:
 *
 *   1. refund_sweep(): a sender that died mid-send leaves its refund
 *      unknown, never pending.
 *   2. refund_check_due(): an unknown refund is looked up in the
 *      payment's own refund list, every page, by our reference (found:
 *      recorded as the provider says; a complete list without it: pending,
 *      sent again under the same key; anything less: unknown still,
 *      backoff, a person after payout_max_lookups).  An accepted refund is
 *      asked for its status until it succeeds or fails, and a succeeded
 *      one again until payout_paid_watch has passed (a card refund can
 *      still fail).
 *   3. refund_claim(): each pending refund is sent once.  The refund
 *      object (accepted, succeeded, failed), an explicit decline (failed:
 *      a case, the MT5 debit stands), or nothing certain (unknown).
 *
 * No request is retried here; the next round's lookup decides.
 */


#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mc_log.h"
#include "mc_refund.h"


#define MC_REFUND_PROVIDER    "stripe"
#define MC_REFUND_BATCH       100
#define MC_REFUND_LIST_PAGES  20     /* 2,000 refunds of one payment */


typedef struct {
    int64_t   id;
    int       attempts;
    char      status[16];
    char      reference[40];
    char      idempotency_key[96];
    char      payment[256];
    int64_t   amount_minor;
    char      currency[8];
    char      refund_id[256];
    char      withdrawal[32];
    char      debit_reference[48];
    char      deployment[16];
    int       has_card;          /* the card is named already */
} mc_refund_item_t;


/* what the provider says about one refund */
typedef struct {
    char      id[256];
    char      status[32];
    char      failure_code[128];
    char      charge[256];       /* the refunded charge, or "" */
} mc_refund_seen_t;


static int mc_refund_items(mc_sender_t *s, const char *sql, int n,
    const char **params, mc_refund_item_t *items, int max);
static void mc_refund_send(mc_sender_t *s, mc_refund_item_t *it);
static void mc_refund_sent_answer(mc_sender_t *s, mc_refund_item_t *it,
    mc_papi_answer_t *a);
static void mc_refund_check_status(mc_sender_t *s, mc_refund_item_t *it);
static void mc_refund_lookup(mc_sender_t *s, mc_refund_item_t *it);
static const char *mc_refund_list_page(mc_sender_t *s, mc_refund_item_t *it,
    const char *after, json_t *found, char *last, size_t lastlen,
    int *more);
static const char *mc_refund_match(const mc_refund_item_t *it, json_t *o,
    mc_refund_seen_t *seen);
static void mc_refund_answered(mc_sender_t *s, mc_refund_item_t *it,
    const char *from, const mc_refund_seen_t *seen);
static void mc_refund_check_failed(mc_sender_t *s, mc_refund_item_t *it,
    const char *kind, const char *why);
static void mc_refund_to(mc_sender_t *s, mc_refund_item_t *it,
    const char *to, json_t *detail);
static void mc_refund_card(mc_sender_t *s, mc_refund_item_t *it,
    const char *charge);


int
mc_refund_round(mc_sender_t *s, volatile sig_atomic_t *stop)
{
    int               i, n, sent, checked;
    char              margin[16], lookup[16], limit[16], lease[16], out[16];
    const char       *params[4];
    mc_refund_item_t  items[MC_REFUND_BATCH];

    params[0] = s->cfg->worker_name;
    if (mc_sender_call(s, "refund", "refund_sweep",
                       "SELECT mt5credit.refund_sweep($1)", 1, params, out,
                       sizeof(out)) != 0)
    {
        return 1;
    }

    if (strcmp(out, "0") != 0) {
        mc_log(MC_LOG_WARN, "refund: %s refund(s) past their lease are "
               "unknown now", out);
    }

    /* what is unknown is looked up before anything is sent */
    snprintf(margin, sizeof(margin), "%d", s->cfg->payout_margin);
    snprintf(lookup, sizeof(lookup), "%d", s->cfg->payout_lease);
    snprintf(limit, sizeof(limit), "%d", MC_REFUND_BATCH);
    params[0] = MC_REFUND_PROVIDER;
    params[1] = margin;
    params[2] = lookup;
    params[3] = limit;

    n = mc_refund_items(s, "SELECT * FROM mt5credit.refund_check_due($1, $2, "
                        "$3, $4)", 4, params, items, MC_REFUND_BATCH);
    if (n < 0) {
        return 1;
    }

    checked = n;
    for (i = 0; i < n && !*stop; i++) {
        if (strcmp(items[i].status, "unknown") == 0) {
            mc_refund_lookup(s, &items[i]);

        } else {
            mc_refund_check_status(s, &items[i]);
        }
    }

    snprintf(lease, sizeof(lease), "%d", s->cfg->payout_lease);
    params[0] = MC_REFUND_PROVIDER;
    params[1] = s->cfg->worker_name;
    params[2] = lease;

    for (sent = 0; sent < MC_REFUND_BATCH && !*stop; sent++) {
        n = mc_refund_items(s, "SELECT * FROM mt5credit.refund_claim($1, $2, "
                            "$3)", 3, params, items, 1);
        if (n < 0) {
            return 1;
        }

        if (n == 0) {
            break;
        }

        mc_refund_send(s, &items[0]);
    }

    if (checked > 0 || sent > 0) {
        mc_log(MC_LOG_INFO, "refund: round: %d looked at, %d sent", checked,
               sent);
    }

    return 0;
}


/* rows of mt5credit.refund_item into items; their number, or -1 */
static int
mc_refund_items(mc_sender_t *s, const char *sql, int n, const char **params,
    mc_refund_item_t *items, int max)
{
    int                i, rows;
    PGresult          *res;
    mc_refund_item_t  *it;

    res = PQexecParams(s->conn, sql, n, NULL, params, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        mc_log(MC_LOG_ERROR, "refund: %s",
               res != NULL && PQresultErrorMessage(res)[0] != '\0'
               ? PQresultErrorMessage(res) : PQerrorMessage(s->conn));
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
        snprintf(it->payment, sizeof(it->payment), "%s",
                 PQgetvalue(res, i, 6));
        it->amount_minor = strtoll(PQgetvalue(res, i, 7), NULL, 10);
        snprintf(it->currency, sizeof(it->currency), "%s",
                 PQgetvalue(res, i, 8));
        snprintf(it->refund_id, sizeof(it->refund_id), "%s",
                 PQgetvalue(res, i, 9));
        snprintf(it->withdrawal, sizeof(it->withdrawal), "%s",
                 PQgetvalue(res, i, 10));
        snprintf(it->debit_reference, sizeof(it->debit_reference), "%s",
                 PQgetvalue(res, i, 11));
        snprintf(it->deployment, sizeof(it->deployment), "%s",
                 PQgetvalue(res, i, 13));
        it->has_card = !PQgetisnull(res, i, 14);
    }

    PQclear(res);
    return i;
}


/*
 * One POST, with the leg's idempotency key.  The amount is the payment's
 * minor units already, and the currency is the payment's: Stripe takes
 * none for a refund.  The metadata is how our own refunds are told apart
 * when their webhooks come back (sql/043).
 */
static void
mc_refund_send(mc_sender_t *s, mc_refund_item_t *it)
{
    char              form[1400], *pay, *wd, *ref, *debit;
    mc_papi_answer_t  a;

    pay = curl_easy_escape(s->api.curl, it->payment, 0);
    wd = curl_easy_escape(s->api.curl, it->withdrawal, 0);
    ref = curl_easy_escape(s->api.curl, it->reference, 0);
    debit = curl_easy_escape(s->api.curl, it->debit_reference, 0);

    snprintf(form, sizeof(form), "payment_intent=%s&amount=%" PRId64
             "&metadata%%5Bmt5credit_withdrawal%%5D=%s"
             "&metadata%%5Bmt5credit_refund%%5D=%s"
             "&metadata%%5Bmt5credit_debit%%5D=%s%s%s",
             pay != NULL ? pay : "", it->amount_minor, wd != NULL ? wd : "",
             ref != NULL ? ref : "", debit != NULL ? debit : "",
             it->deployment[0] ? "&metadata%5Bmt5credit_deployment%5D=" : "",
             it->deployment);

    curl_free(pay);
    curl_free(wd);
    curl_free(ref);
    curl_free(debit);

    mc_log(MC_LOG_INFO, "refund %s (debit %s): POST /v1/refunds %s %" PRId64
           " %s, attempt %d, key %s", it->reference, it->debit_reference,
           it->payment, it->amount_minor, it->currency, it->attempts,
           it->idempotency_key);

    mc_papi_post(&s->api, "/v1/refunds", form, it->idempotency_key, &a);
    mc_refund_sent_answer(s, it, &a);
    mc_papi_answer_free(&a);
}


static void
mc_refund_sent_answer(mc_sender_t *s, mc_refund_item_t *it,
    mc_papi_answer_t *a)
{
    char              code[128], msg[512], *d, att[16], id[24];
    json_t           *doc;
    const char       *why, *params[6];
    mc_refund_seen_t  seen;

    switch (mc_sender_sent(a, code, sizeof(code), msg, sizeof(msg))) {

    case MC_SENT_NOT:
        /* the connection was never made: nothing can have been refunded */
        mc_log(MC_LOG_WARN, "refund %s: %s; not sent, released",
               it->reference, msg);
        mc_refund_to(s, it, "pending",
                     json_pack("{s:s, s:s}", "step", "send", "reason", msg));
        return;

    case MC_SENT_OBJECT:
        doc = json_loadb(a->data != NULL ? a->data : "", a->len, 0, NULL);
        why = mc_refund_match(it, doc, &seen);
        json_decref(doc);

        if (why == NULL) {
            mc_refund_answered(s, it, "sending", &seen);
            return;
        }

        snprintf(msg, sizeof(msg), "%s", why);
        break;

    case MC_SENT_DECLINED:
        /* the provider refused the request itself: nothing was refunded */
        snprintf(id, sizeof(id), "%" PRId64, it->id);
        snprintf(att, sizeof(att), "%d", it->attempts);
        d = mc_sender_detail(json_pack("{s:s, s:i, s:s}", "step", "send",
                                       "http", (int) a->status,
                                       "code", code));
        params[0] = id;
        params[1] = att;
        params[2] = code;
        params[3] = msg;
        params[4] = s->cfg->worker_name;
        params[5] = d;
        mc_log(MC_LOG_ALERT, "refund %s: declined by the provider: %s (%s); "
               "the MT5 debit %s stands, case opened", it->reference, code,
               msg, it->debit_reference);
        mc_sender_call(s, "refund", "refund_declined", "SELECT mt5credit."
                       "refund_declined($1, $2, $3, $4, $5, $6)", 6, params,
                       NULL, 0);
        mc_alert(&s->alert, "refund_failed", it->id,
                 "refund %s declined by the provider: %s", it->reference,
                 code);
        free(d);
        return;

    case MC_SENT_UNKNOWN:
        break;
    }

    /* a timeout is not a failure: the lookup will tell */
    mc_log(MC_LOG_WARN, "refund %s: outcome unknown (%s); it will be looked "
           "up before anything is sent again", it->reference, msg);
    mc_refund_to(s, it, "unknown",
                 json_pack("{s:s, s:s}", "step", "send", "reason", msg));
}


/*
 * An accepted refund, or a succeeded one still watched: GET it by the
 * provider's id.
 */
static void
mc_refund_check_status(mc_sender_t *s, mc_refund_item_t *it)
{
    char              path[512], why[128];
    json_t           *doc;
    const char       *bad;
    mc_papi_answer_t  a;
    mc_refund_seen_t  seen;

    snprintf(path, sizeof(path), "/v1/refunds/%s", it->refund_id);

    if (mc_papi_get(&s->api, path, &a) != 0 || a.status != 200) {
        snprintf(why, sizeof(why), "status query: %s",
                 a.rc != CURLE_OK ? curl_easy_strerror(a.rc) : "not HTTP 200");
        mc_papi_answer_free(&a);
        mc_refund_check_failed(s, it, "refund_no_answer", why);
        return;
    }

    doc = json_loadb(a.data != NULL ? a.data : "", a.len, 0, NULL);
    bad = mc_refund_match(it, doc, &seen);
    json_decref(doc);
    mc_papi_answer_free(&a);

    if (bad == NULL && strcmp(seen.id, it->refund_id) != 0) {
        bad = "an answer about another refund";
    }

    if (bad != NULL) {
        mc_refund_check_failed(s, it, "refund_no_answer", bad);
        return;
    }

    mc_refund_answered(s, it, it->status, &seen);
}


/*
 * An unknown refund: the payment's refunds, newest first, page by page
 * to the end, and those carrying our reference.  Only a complete walk can
 * say "not there".
 */
static void
mc_refund_lookup(mc_sender_t *s, mc_refund_item_t *it)
{
    int               page, more;
    char              last[256], why[256];
    json_t           *found;
    const char       *bad;
    mc_refund_seen_t  seen;

    found = json_array();
    last[0] = '\0';
    more = 1;

    for (page = 0; more && page < MC_REFUND_LIST_PAGES; page++) {
        bad = mc_refund_list_page(s, it, page == 0 ? NULL : last, found,
                                  last, sizeof(last), &more);
        if (bad != NULL) {
            snprintf(why, sizeof(why), "listing, page %d: %s", page + 1, bad);
            json_decref(found);
            mc_refund_check_failed(s, it, "refund_no_answer", why);
            return;
        }
    }

    if (more) {
        json_decref(found);
        mc_refund_check_failed(s, it, "refund_no_answer",
                               "listing longer than we read");
        return;
    }

    if (json_array_size(found) > 1) {
        snprintf(why, sizeof(why), "%zu refunds carry reference %s",
                 json_array_size(found), it->reference);
        json_decref(found);
        mc_log(MC_LOG_ALERT, "refund %s: %s", it->reference, why);
        mc_refund_check_failed(s, it, "refund_conflict", why);
        mc_alert(&s->alert, "refund_conflict", it->id, "refund %s: %s",
                 it->reference, why);
        return;
    }

    if (json_array_size(found) == 1) {
        bad = mc_refund_match(it, json_array_get(found, 0), &seen);
        json_decref(found);

        if (bad != NULL) {
            snprintf(why, sizeof(why), "found, but %s", bad);
            mc_refund_check_failed(s, it, "refund_conflict", why);
            return;
        }

        mc_log(MC_LOG_INFO, "refund %s: found at the provider as %s, %s",
               it->reference, seen.id, seen.status);
        mc_refund_answered(s, it, "unknown", &seen);
        return;
    }

    json_decref(found);

    /* the provider vouches that the payment has no such refund: send it
       again, under the same idempotency key */
    mc_log(MC_LOG_INFO, "refund %s: not at the provider (complete list of "
           "%s, %d page%s); pending again", it->reference, it->payment, page,
           page == 1 ? "" : "s");
    mc_refund_to(s, it, NULL,
                 json_pack("{s:s, s:i}", "step", "lookup", "pages", page));
}


static const char *
mc_refund_list_page(mc_sender_t *s, mc_refund_item_t *it, const char *after,
    json_t *found, char *last, size_t lastlen, int *more)
{
    char              path[768], *pay;
    size_t            i;
    json_t           *doc, *data, *o, *has_more;
    const char       *ref, *id, *object;
    mc_papi_answer_t  a;
    static char       why[128];

    pay = curl_easy_escape(s->api.curl, it->payment, 0);
    snprintf(path, sizeof(path), "/v1/refunds?payment_intent=%s&limit=100%s%s",
             pay != NULL ? pay : "", after != NULL ? "&starting_after=" : "",
             after != NULL ? after : "");
    curl_free(pay);

    if (mc_papi_get(&s->api, path, &a) != 0 || a.status != 200) {
        snprintf(why, sizeof(why), "%s",
                 a.rc != CURLE_OK ? curl_easy_strerror(a.rc)
                 : a.too_big ? "an answer over 1 MB" : "not HTTP 200");
        mc_papi_answer_free(&a);
        return why;
    }

    doc = json_loadb(a.data != NULL ? a.data : "", a.len, 0, NULL);
    mc_papi_answer_free(&a);

    object = json_string_value(json_object_get(doc, "object"));
    data = json_object_get(doc, "data");
    has_more = json_object_get(doc, "has_more");

    if (object == NULL || strcmp(object, "list") != 0 || !json_is_array(data)
        || !json_is_boolean(has_more))
    {
        json_decref(doc);
        return "not a complete list";
    }

    *more = json_is_true(has_more);

    json_array_foreach(data, i, o) {
        id = json_string_value(json_object_get(o, "id"));
        if (id == NULL) {
            json_decref(doc);
            return "a listed refund without an id";
        }

        snprintf(last, lastlen, "%s", id);
        ref = json_string_value(json_object_get(
                  json_object_get(o, "metadata"), "mt5credit_refund"));

        if (ref != NULL && strcmp(ref, it->reference) == 0
            && mc_sender_same_deployment(it->deployment, o))
        {
            json_array_append(found, o);
        }
    }

    if (*more && json_array_size(data) == 0) {
        json_decref(doc);
        return "an empty page that says there is more";
    }

    json_decref(doc);
    return NULL;
}


/*
 * Is o the provider's refund object for exactly this leg: our reference
 * and deployment, the payment, the amount and currency?  NULL with what
 * it says in *seen, or why not.
 */
static const char *
mc_refund_match(const mc_refund_item_t *it, json_t *o, mc_refund_seen_t *seen)
{
    json_t      *amount;
    const char  *object, *id, *status, *cur, *pay, *ref, *code;

    memset(seen, 0, sizeof(*seen));

    object = json_string_value(json_object_get(o, "object"));
    id = json_string_value(json_object_get(o, "id"));
    status = json_string_value(json_object_get(o, "status"));
    amount = json_object_get(o, "amount");
    cur = json_string_value(json_object_get(o, "currency"));
    pay = json_string_value(json_object_get(o, "payment_intent"));
    ref = json_string_value(json_object_get(json_object_get(o, "metadata"),
                                            "mt5credit_refund"));

    if (!json_is_object(o) || object == NULL || strcmp(object, "refund") != 0
        || id == NULL || status == NULL || strlen(id) >= sizeof(seen->id)
        || strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                      "0123456789_-") != strlen(id))
    {
        return "not a refund object";
    }

    if (ref == NULL || strcmp(ref, it->reference) != 0) {
        return "a refund with another reference";
    }

    if (!mc_sender_same_deployment(it->deployment, o)) {
        return "a refund of another deployment";
    }

    if (!json_is_integer(amount)
        || json_integer_value(amount) != it->amount_minor
        || cur == NULL || strcasecmp(cur, it->currency) != 0
        || pay == NULL || strcmp(pay, it->payment) != 0)
    {
        return "a refund of another amount, currency or payment";
    }

    snprintf(seen->id, sizeof(seen->id), "%s", id);
    snprintf(seen->status, sizeof(seen->status), "%s", status);

    code = json_string_value(json_object_get(o, "failure_reason"));
    snprintf(seen->failure_code, sizeof(seen->failure_code), "%s",
             code != NULL ? code : "");

    code = json_string_value(json_object_get(o, "charge"));
    if (code != NULL && strlen(code) < sizeof(seen->charge)
        && strspn(code, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                        "0123456789_") == strlen(code))
    {
        snprintf(seen->charge, sizeof(seen->charge), "%s", code);
    }

    if (strcmp(status, "pending") != 0
        && strcmp(status, "requires_action") != 0
        && strcmp(status, "succeeded") != 0 && strcmp(status, "failed") != 0
        && strcmp(status, "canceled") != 0)
    {
        return "a refund status we do not know";
    }

    return NULL;
}


static void
mc_refund_answered(mc_sender_t *s, mc_refund_item_t *it, const char *from,
    const mc_refund_seen_t *seen)
{
    char         id[24], att[16], recheck[16], watch[16], out[16], *d;
    const char  *params[11];

    snprintf(id, sizeof(id), "%" PRId64, it->id);
    snprintf(att, sizeof(att), "%d", it->attempts);
    snprintf(recheck, sizeof(recheck), "%d", s->cfg->payout_recheck);
    snprintf(watch, sizeof(watch), "%d", s->cfg->payout_paid_watch);
    d = mc_sender_detail(json_pack("{s:s, s:s}", "step",
                                   strcmp(from, "sending") == 0 ? "send"
                                                                : "lookup",
                                   "provider_refund_id", seen->id));

    params[0] = id;
    params[1] = att;
    params[2] = from;
    params[3] = seen->id;
    params[4] = seen->status;
    params[5] = seen->failure_code[0] != '\0' ? seen->failure_code : NULL;
    params[6] = NULL;
    params[7] = s->cfg->worker_name;
    params[8] = d;
    params[9] = recheck;
    params[10] = watch;

    if (mc_sender_call(s, "refund", "refund_answered", "SELECT mt5credit."
                       "refund_answered($1, $2, $3, $4, $5, $6, $7, $8, $9, "
                       "$10, $11)", 11, params, out, sizeof(out)) == 0)
    {
        if (strcmp(out, "failed") == 0 || strcmp(out, "returned") == 0) {
            mc_log(MC_LOG_ALERT, "refund %s: %s at the provider (%s)%s; the "
                   "MT5 debit %s stands, case opened", it->reference,
                   seen->status, seen->failure_code,
                   out[0] == 'r' ? ", after it had succeeded" : "",
                   it->debit_reference);
            mc_alert(&s->alert, "refund_failed", it->id, "refund %s %s: %s",
                     it->reference, seen->status, seen->failure_code);

        } else if (strcmp(out, "stale") == 0) {
            mc_log(MC_LOG_WARN, "refund %s: changed meanwhile; nothing "
                   "recorded", it->reference);

        } else {
            mc_log(MC_LOG_INFO, "refund %s: %s (%s at the provider, %s)",
                   it->reference, out, seen->id, seen->status);

            if (!it->has_card && seen->charge[0] != '\0') {
                mc_refund_card(s, it, seen->charge);
            }
        }
    }

    free(d);
}


/*
 * The card the money went back to, for the client's view of the leg: its
 * brand and last four digits, as the refunded charge names them.  Once;
 * a failure here changes nothing about the refund.
 */
static void
mc_refund_card(mc_sender_t *s, mc_refund_item_t *it, const char *charge)
{
    char              path[512], hint[48], id[24];
    json_t           *doc, *card;
    const char       *pay, *brand, *last4, *params[2];
    mc_papi_answer_t  a;

    snprintf(path, sizeof(path), "/v1/charges/%s", charge);

    if (mc_papi_get(&s->api, path, &a) != 0 || a.status != 200) {
        mc_papi_answer_free(&a);
        mc_log(MC_LOG_INFO, "refund %s: the charge %s was not answered for: "
               "the card is not named", it->reference, charge);
        return;
    }

    doc = json_loadb(a.data != NULL ? a.data : "", a.len, 0, NULL);
    mc_papi_answer_free(&a);

    pay = json_string_value(json_object_get(doc, "payment_intent"));
    card = json_object_get(json_object_get(doc, "payment_method_details"),
                           "card");
    brand = json_string_value(json_object_get(card, "brand"));
    last4 = json_string_value(json_object_get(card, "last4"));

    if (pay == NULL || strcmp(pay, it->payment) != 0 || brand == NULL
        || last4 == NULL || strlen(last4) != 4
        || strspn(last4, "0123456789") != 4 || strlen(brand) > 24
        || strspn(brand, "abcdefghijklmnopqrstuvwxyz_") != strlen(brand))
    {
        json_decref(doc);
        return;
    }

    snprintf(hint, sizeof(hint), "%s %s", brand, last4);
    json_decref(doc);

    snprintf(id, sizeof(id), "%" PRId64, it->id);
    params[0] = id;
    params[1] = hint;
    mc_sender_call(s, "refund", "refund_card_hint", "SELECT mt5credit."
                   "refund_card_hint($1, $2)", 2, params, NULL, 0);
}


static void
mc_refund_check_failed(mc_sender_t *s, mc_refund_item_t *it,
    const char *kind, const char *why)
{
    char         id[24], att[16], backoff[16], max[16], out[8];
    const char  *params[7];

    snprintf(id, sizeof(id), "%" PRId64, it->id);
    snprintf(att, sizeof(att), "%d", it->attempts);
    snprintf(backoff, sizeof(backoff), "%d", s->cfg->payout_backoff);
    snprintf(max, sizeof(max), "%d", s->cfg->payout_max_lookups);
    params[0] = id;
    params[1] = att;
    params[2] = kind;
    params[3] = why;
    params[4] = backoff;
    params[5] = max;
    params[6] = s->cfg->worker_name;

    mc_log(MC_LOG_WARN, "refund %s (%s): %s; nothing changed",
           it->reference, it->status, why);

    if (mc_sender_call(s, "refund", "refund_check_failed", "SELECT mt5credit."
                       "refund_check_failed($1, $2, $3, $4, $5, $6, $7)", 7,
                       params, out, sizeof(out)) == 0
        && strcmp(out, "t") == 0 && strcmp(kind, "refund_no_answer") == 0)
    {
        mc_log(MC_LOG_ALERT, "refund %s: still %s after %d lookups; a "
               "person must look (case opened)", it->reference, it->status,
               s->cfg->payout_max_lookups);
        mc_alert(&s->alert, kind, it->id, "refund %s: %s", it->reference,
                 why);
    }
}


/*
 * sending -> pending or unknown (refund_unsent, to given), or unknown ->
 * pending (refund_absent, to NULL), with its history detail.  Each a
 * fixed statement: nothing is formatted into SQL text.
 */
static void
mc_refund_to(mc_sender_t *s, mc_refund_item_t *it, const char *to,
    json_t *detail)
{
    char         id[24], att[16], *d;
    const char  *params[5];
    int          n;

    snprintf(id, sizeof(id), "%" PRId64, it->id);
    snprintf(att, sizeof(att), "%d", it->attempts);
    d = mc_sender_detail(detail);

    n = 0;
    params[n++] = id;
    params[n++] = att;
    if (to != NULL) {
        params[n++] = to;
    }
    params[n++] = s->cfg->worker_name;
    params[n++] = d;

    if (to != NULL) {
        mc_sender_call(s, "refund", "refund_unsent",
                       "SELECT mt5credit.refund_unsent($1, $2, $3, $4, $5)",
                       n, (const char **) params, NULL, 0);
    } else {
        mc_sender_call(s, "refund", "refund_absent",
                       "SELECT mt5credit.refund_absent($1, $2, $3, $4)",
                       n, (const char **) params, NULL, 0);
    }

    free(d);
}
