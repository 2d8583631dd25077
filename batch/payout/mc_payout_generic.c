/*
 * Copyright (C) mt5-credit
 *
 * The generic rail: a bank-transfer PSP's payout API, as documented in
 * docs/providers.md ("A payout rail that pays a client").  JSON over
 * HTTPS with a bearer key:
 *
 *   POST /v1/payouts        {reference, amount_minor, currency,
 *                            beneficiary, metadata}, Idempotency-Key
 *   GET  /v1/payouts/<id>
 *   GET  /v1/payouts?reference=<ours>   every payout with it, complete
 *
 * The beneficiary is the PSP's token for the client's bank account, given
 * by the portal at request time; no bank details are ever here.
 */


#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mc_payout_rail.h"
#include "mc_sender.h"


static void mc_generic_send(mc_papi_t *api, const mc_payout_item_t *it,
    mc_papi_answer_t *a);
static int mc_generic_get(mc_papi_t *api, const mc_payout_item_t *it,
    mc_papi_answer_t *a);
static const char *mc_generic_find(mc_papi_t *api,
    const mc_payout_item_t *it, json_t *found, int *pages);
static const char *mc_generic_match(const mc_payout_item_t *it, json_t *o,
    mc_payout_seen_t *seen);


const mc_payout_rail_t  mc_payout_generic = {
    "generic",
    mc_generic_send,
    mc_generic_get,
    mc_generic_find,
    mc_generic_match
};


static void
mc_generic_send(mc_papi_t *api, const mc_payout_item_t *it,
    mc_papi_answer_t *a)
{
    char    *body;
    json_t  *o, *meta;

    meta = json_pack("{s:s}", "mt5credit_debit", it->debit_reference);
    if (it->deployment[0] != '\0') {
        json_object_set_new(meta, "mt5credit_deployment",
                            json_string(it->deployment));
    }

    o = json_pack("{s:s, s:I, s:s, s:s, s:o}", "reference", it->reference,
                  "amount_minor", (json_int_t) it->amount_minor, "currency",
                  it->currency, "beneficiary", it->destination, "metadata",
                  meta);
    body = o != NULL ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);

    if (body == NULL) {
        /* out of memory before anything was sent */
        memset(a, 0, sizeof(*a));
        a->rc = CURLE_OUT_OF_MEMORY;
        return;
    }

    mc_papi_post_json(api, "/v1/payouts", body, it->idempotency_key, a);
    free(body);
}


static int
mc_generic_get(mc_papi_t *api, const mc_payout_item_t *it,
    mc_papi_answer_t *a)
{
    char  path[512];

    snprintf(path, sizeof(path), "/v1/payouts/%s", it->payout_id);

    return mc_papi_get(api, path, a) == 0 && a->status == 200 ? 0 : -1;
}


/* the PSP's own answer to "which payouts carry this reference": complete
   when it says has_more false */
static const char *
mc_generic_find(mc_papi_t *api, const mc_payout_item_t *it, json_t *found,
    int *pages)
{
    char              path[512], *ref;
    size_t            i;
    json_t           *doc, *data, *o, *has_more;
    const char       *object, *r;
    mc_papi_answer_t  a;
    static char       why[128];

    *pages = 1;
    ref = curl_easy_escape(api->curl, it->reference, 0);
    snprintf(path, sizeof(path), "/v1/payouts?reference=%s",
             ref != NULL ? ref : "");
    curl_free(ref);

    if (mc_papi_get(api, path, &a) != 0 || a.status != 200) {
        snprintf(why, sizeof(why), "lookup: %s",
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
        || !json_is_false(has_more))
    {
        json_decref(doc);
        return "lookup: not a complete list";
    }

    json_array_foreach(data, i, o) {
        r = json_string_value(json_object_get(o, "reference"));

        /* an answer naming another reference is not an answer to ours */
        if (r == NULL || strcmp(r, it->reference) != 0) {
            json_decref(doc);
            return "lookup: a payout of another reference listed";
        }

        if (mc_sender_same_deployment(it->deployment, o)) {
            json_array_append(found, o);
        }
    }

    json_decref(doc);
    return NULL;
}


/*
 * Is o the PSP's payout object for exactly this payout: our reference and
 * deployment, the amount, currency and beneficiary?  NULL with what it
 * says in *seen, its status in sql/018's words, or why not.
 */
static const char *
mc_generic_match(const mc_payout_item_t *it, json_t *o,
    mc_payout_seen_t *seen)
{
    json_t      *amount;
    const char  *object, *id, *status, *cur, *ben, *ref, *code, *msg, *ours;

    memset(seen, 0, sizeof(*seen));

    object = json_string_value(json_object_get(o, "object"));
    id = json_string_value(json_object_get(o, "id"));
    status = json_string_value(json_object_get(o, "status"));
    amount = json_object_get(o, "amount_minor");
    cur = json_string_value(json_object_get(o, "currency"));
    ben = json_string_value(json_object_get(o, "beneficiary"));
    ref = json_string_value(json_object_get(o, "reference"));

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
        || cur == NULL || strcasecmp(cur, it->currency) != 0
        || ben == NULL || strcmp(ben, it->destination) != 0)
    {
        return "a payout of another amount, currency or beneficiary";
    }

    /* the PSP's words in sql/018's: processing is on its way, a return
       by the bank is a failure (after paid: "returned") */
    if (strcmp(status, "pending") == 0 || strcmp(status, "paid") == 0
        || strcmp(status, "failed") == 0)
    {
        ours = status;

    } else if (strcmp(status, "processing") == 0) {
        ours = "in_transit";

    } else if (strcmp(status, "returned") == 0) {
        ours = "failed";

    } else {
        return "a payout status we do not know";
    }

    snprintf(seen->id, sizeof(seen->id), "%s", id);
    snprintf(seen->status, sizeof(seen->status), "%s", ours);

    code = json_string_value(json_object_get(o, "failure_code"));
    msg = json_string_value(json_object_get(o, "failure_message"));
    snprintf(seen->failure_code, sizeof(seen->failure_code), "%s",
             code != NULL ? code : strcmp(status, "returned") == 0
                                   ? "returned" : "");
    snprintf(seen->failure_message, sizeof(seen->failure_message), "%s",
             msg != NULL ? msg : "");

    return NULL;
}
