/*
 * Copyright (C) mt5-credit
 *
 * A payout rail: how the payout leg of a withdrawal is paid to the
 * client.  mc_payout.c owns the state machine (sql/018, 034); a rail
 * only speaks its provider's protocol: send one payout under its
 * idempotency key, get one by the provider's id, find every payout
 * carrying our reference (a complete answer, or none), and say whether
 * an object is exactly ours.  Two rails:
 *
 *   generic         a bank-transfer PSP's payout API (docs/providers.md):
 *                   JSON, a beneficiary token, a lookup by reference;
 *   stripe_connect  Stripe payouts, for clients who are Stripe connected
 *                   accounts: the destination is the account, sent as
 *                   the Stripe-Account header.
 */

#ifndef MC_PAYOUT_RAIL_H
#define MC_PAYOUT_RAIL_H


#include <stdint.h>

#include <jansson.h>

#include "mc_provider_api.h"


typedef struct {
    int64_t   id;
    int       attempts;
    char      status[16];
    char      reference[32];
    char      idempotency_key[64];
    int64_t   amount_minor;
    char      currency[8];
    char      destination[256];  /* the beneficiary token, or account */
    char      payout_id[256];
    char      debit_reference[48];
    int64_t   first_sent;
    char      deployment[16];    /* its deployment tag (036), or "" */
} mc_payout_item_t;


/* what the provider says about one payout, its status in sql/018's words
   (pending, in_transit, paid, failed, canceled) */
typedef struct {
    char      id[256];
    char      status[32];
    char      failure_code[128];
    char      failure_message[512];
} mc_payout_seen_t;


typedef struct mc_payout_rail_s {
    const char  *name;

    /* the POST that moves the money; the answer in a */
    void        (*send)(mc_papi_t *api, const mc_payout_item_t *it,
                        mc_papi_answer_t *a);
    /* one payout by the provider's id: 0 with an HTTP 200 answer in a */
    int         (*get)(mc_papi_t *api, const mc_payout_item_t *it,
                       mc_papi_answer_t *a);
    /* every payout carrying our reference, appended to found: NULL when
       the answer is complete, or why not; *pages read */
    const char *(*find)(mc_papi_t *api, const mc_payout_item_t *it,
                        json_t *found, int *pages);
    /* o is exactly this payout: NULL with *seen, or why not */
    const char *(*match)(const mc_payout_item_t *it, json_t *o,
                         mc_payout_seen_t *seen);
} mc_payout_rail_t;


extern const mc_payout_rail_t  mc_payout_generic;
extern const mc_payout_rail_t  mc_payout_stripe_connect;


#endif /* MC_PAYOUT_RAIL_H */
