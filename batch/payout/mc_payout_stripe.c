/*
 * Copyright (C) mt5-credit
 *
 * The stripe_connect rail: Stripe's POST /v1/payouts on behalf of a
 * connected account (the Stripe-Account header), for a broker whose
 * clients are Stripe connected accounts.  The payout goes to that
 * account's own bank account.  Without the header a Stripe payout pays
 * the broker's own bank account, never a client: so the destination
 * must be an account id (acct_...), and a payout to anything else is
 * declined here, before any request.
 */


#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "mc_payout_rail.h"
#include "mc_sender.h"


#define MC_STRIPE_LIST_PAGES  100    /* 10,000 payouts: then incomplete */
#define MC_STRIPE_LIST_SLACK  600    /* s before the first send listed */


static void mc_stripe_send(mc_papi_t *api, const mc_payout_item_t *it,
    mc_papi_answer_t *a);
static int mc_stripe_get(mc_papi_t *api, const mc_payout_item_t *it,
    mc_papi_answer_t *a);
static const char *mc_stripe_find(mc_papi_t *api, const mc_payout_item_t *it,
    json_t *found, int *pages);
static const char *mc_stripe_list_page(mc_papi_t *api,
    const mc_payout_item_t *it, const char *after, json_t *found, char *last,
    size_t lastlen, int *more);
static const char *mc_stripe_match(const mc_payout_item_t *it, json_t *o,
    mc_payout_seen_t *seen);
static int mc_stripe_account(mc_papi_t *api, const mc_payout_item_t *it);


const mc_payout_rail_t  mc_payout_stripe_connect = {
    "stripe_connect",
    mc_stripe_send,
    mc_stripe_get,
    mc_stripe_find,
    mc_stripe_match
};


/* the connected account the next request is made on behalf of */
static int
mc_stripe_account(mc_papi_t *api, const mc_payout_item_t *it)
{
    if (strncmp(it->destination, "acct_", 5) != 0) {
        return -1;
    }

    snprintf(api->extra, sizeof(api->extra), "Stripe-Account: %s",
             it->destination);
    return 0;
}


static void
mc_stripe_send(mc_papi_t *api, const mc_payout_item_t *it,
    mc_papi_answer_t *a)
{
    char    form[1100], cur[8], *ref, *debit;
    size_t  i;

    if (mc_stripe_account(api, it) != 0) {
        /* an answer of our own: a decline, since nothing was sent */
        memset(a, 0, sizeof(*a));
        a->rc = CURLE_OK;
        a->sent = 1;
        a->status = 400;
        a->data = strdup("{\"error\": {\"type\": \"invalid_request_error\", "
                         "\"code\": \"not_a_connected_account\", "
                         "\"message\": \"stripe_connect pays only to "
                         "connected accounts (acct_...)\"}}");
        a->len = a->data != NULL ? strlen(a->data) : 0;
        return;
    }

    for (i = 0; it->currency[i] != '\0' && i < sizeof(cur) - 1; i++) {
        cur[i] = (char) (it->currency[i] | 0x20);
    }
    cur[i] = '\0';

    ref = curl_easy_escape(api->curl, it->reference, 0);
    debit = curl_easy_escape(api->curl, it->debit_reference, 0);

    snprintf(form, sizeof(form), "amount=%" PRId64 "&currency=%s"
             "&metadata%%5Bmt5credit_reference%%5D=%s"
             "&metadata%%5Bmt5credit_debit%%5D=%s%s%s",
             it->amount_minor, cur, ref != NULL ? ref : "",
             debit != NULL ? debit : "",
             it->deployment[0] ? "&metadata%5Bmt5credit_deployment%5D=" : "",
             it->deployment);

    curl_free(ref);
    curl_free(debit);

    mc_papi_post(api, "/v1/payouts", form, it->idempotency_key, a);
}


static int
mc_stripe_get(mc_papi_t *api, const mc_payout_item_t *it,
    mc_papi_answer_t *a)
{
    char  path[512];

    snprintf(path, sizeof(path), "/v1/payouts/%s", it->payout_id);
    mc_stripe_account(api, it);

    return mc_papi_get(api, path, a) == 0 && a->status == 200 ? 0 : -1;
}


/*
 * The connected account's payouts created since shortly before the first
 * send, newest first, page by page to the end: only a complete walk can
 * say "not there".
 */
static const char *
mc_stripe_find(mc_papi_t *api, const mc_payout_item_t *it, json_t *found,
    int *pages)
{
    int          more;
    char         last[256];
    const char  *bad;
    static char  why[256];

    last[0] = '\0';
    more = 1;

    for (*pages = 0; more && *pages < MC_STRIPE_LIST_PAGES; (*pages)++) {
        bad = mc_stripe_list_page(api, it, *pages == 0 ? NULL : last, found,
                                  last, sizeof(last), &more);
        if (bad != NULL) {
            snprintf(why, sizeof(why), "listing, page %d: %s", *pages + 1,
                     bad);
            return why;
        }
    }

    return more ? "listing longer than we read" : NULL;
}


static const char *
mc_stripe_list_page(mc_papi_t *api, const mc_payout_item_t *it,
    const char *after, json_t *found, char *last, size_t lastlen, int *more)
{
    char              path[512];
    size_t            i;
    json_t           *doc, *data, *o, *has_more;
    const char       *ref, *id, *object;
    mc_papi_answer_t  a;
    static char       why[128];

    snprintf(path, sizeof(path), "/v1/payouts?limit=100"
             "&created%%5Bgte%%5D=%" PRId64 "%s%s",
             it->first_sent - MC_STRIPE_LIST_SLACK,
             after != NULL ? "&starting_after=" : "",
             after != NULL ? after : "");

    mc_stripe_account(api, it);

    if (mc_papi_get(api, path, &a) != 0 || a.status != 200) {
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
            return "a listed payout without an id";
        }

        snprintf(last, lastlen, "%s", id);
        ref = json_string_value(json_object_get(
                  json_object_get(o, "metadata"), "mt5credit_reference"));

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
 * Is o Stripe's payout object for exactly this payout: our reference and
 * deployment, the amount and currency?  (Its destination is the connected
 * account's own bank account, which only Stripe knows: the listing and
 * the query are the account's.)  NULL with what it says in *seen, or why
 * not.
 */
static const char *
mc_stripe_match(const mc_payout_item_t *it, json_t *o, mc_payout_seen_t *seen)
{
    json_t      *amount;
    const char  *object, *id, *status, *cur, *ref, *code, *msg;

    memset(seen, 0, sizeof(*seen));

    object = json_string_value(json_object_get(o, "object"));
    id = json_string_value(json_object_get(o, "id"));
    status = json_string_value(json_object_get(o, "status"));
    amount = json_object_get(o, "amount");
    cur = json_string_value(json_object_get(o, "currency"));
    ref = json_string_value(json_object_get(json_object_get(o, "metadata"),
                                            "mt5credit_reference"));

    if (!json_is_object(o) || object == NULL || strcmp(object, "payout") != 0
        || id == NULL || status == NULL || strlen(id) >= sizeof(seen->id)
        || strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                      "0123456789_-") != strlen(id))
    {
        return "not a payout object";
    }

    if (ref == NULL || strcmp(ref, it->reference) != 0) {
        return "a payout with another reference";
    }

    if (!mc_sender_same_deployment(it->deployment, o)) {
        return "a payout of another deployment";
    }

    if (!json_is_integer(amount)
        || json_integer_value(amount) != it->amount_minor
        || cur == NULL || strcasecmp(cur, it->currency) != 0)
    {
        return "a payout of another amount or currency";
    }

    snprintf(seen->id, sizeof(seen->id), "%s", id);
    snprintf(seen->status, sizeof(seen->status), "%s", status);

    code = json_string_value(json_object_get(o, "failure_code"));
    msg = json_string_value(json_object_get(o, "failure_message"));
    snprintf(seen->failure_code, sizeof(seen->failure_code), "%s",
             code != NULL ? code : "");
    snprintf(seen->failure_message, sizeof(seen->failure_message), "%s",
             msg != NULL ? msg : "");

    if (strcmp(status, "pending") != 0 && strcmp(status, "in_transit") != 0
        && strcmp(status, "paid") != 0 && strcmp(status, "failed") != 0
        && strcmp(status, "canceled") != 0)
    {
        return "a payout status we do not know";
    }

    return NULL;
}
