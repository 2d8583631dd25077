/*
 * Copyright (C) mt5-credit
 *
 * What the two senders of `mt5credit payout` share: the payout sender
 * (Stripe's POST /v1/payouts, sql/018) and the refund sender (the refund
 * legs of a withdrawal, POST /v1/refunds, sql/043).  One database
 * connection, one provider API handle, one alert hook, and the calls
 * each of them makes the same way.
 */

#ifndef MC_SENDER_H
#define MC_SENDER_H


#include <jansson.h>
#include <libpq-fe.h>

#include "mc_alert.h"
#include "mc_config.h"
#include "mc_provider_api.h"


struct mc_payout_rail_s;

typedef struct {
    mc_config_t                    *cfg;
    PGconn                         *conn;
    mc_papi_t                       api;
    mc_alert_config_t               alert;
    const struct mc_payout_rail_s  *rail;    /* the payout sender's */
} mc_sender_t;


/*
 * One function call; its single value in out (when given).  0, or -1
 * with the error logged under "<who>: <what>".
 */
int mc_sender_call(mc_sender_t *s, const char *who, const char *what,
    const char *sql, int n, const char **params, char *out, size_t outlen);

/* a history detail as JSON text (free() it); takes the reference to o */
char *mc_sender_detail(json_t *o);

/*
 * A Stripe error answer: {"error": {"type", "code", "message"}}.  The
 * code (or the type) in code when there is one, and 0; -1 when the answer
 * is not an error object.  The message in msg.
 */
int mc_sender_error_code(const mc_papi_answer_t *a, char *code,
    size_t codelen, char *msg, size_t msglen);

/* what the answer to a POST that moves money says */
typedef enum {
    MC_SENT_NOT = 0,        /* provably never reached the provider */
    MC_SENT_OBJECT,         /* HTTP 200, 201: the caller checks it */
    MC_SENT_DECLINED,       /* refused outright: code and msg say why */
    MC_SENT_UNKNOWN         /* anything else: msg says what came */
} mc_sent_e;

/*
 * A timeout, a 5xx, a 409 or 429, a refused idempotency key, an error
 * without a reason: all unknown, never a decline.  code gets a decline's
 * code; msg its message, or what made the outcome unknown.
 */
mc_sent_e mc_sender_sent(const mc_papi_answer_t *a, char *code,
    size_t codelen, char *msg, size_t msglen);

/* the metadata names this deployment's tag, or none when tag is "" */
int mc_sender_same_deployment(const char *tag, json_t *o);


#endif /* MC_SENDER_H */
