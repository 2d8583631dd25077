/*
 * Copyright (C) mt5-credit
 *
 * The refund legs of withdrawals (sql/043_refund_legs.sql): each sent to
 * the payment it came from as Stripe's POST /v1/refunds, under one
 * idempotency key per leg, and looked up before anything is sent again
 * when its outcome is not known.  Run by `mt5credit payout`, before the
 * payout legs, on the same connection and API handle.
 */

#ifndef MC_REFUND_H
#define MC_REFUND_H


#include <signal.h>

#include "mc_sender.h"


/* one round: sweep, look up, send; 0, or 1 when the database failed */
int mc_refund_round(mc_sender_t *s, volatile sig_atomic_t *stop);


#endif /* MC_REFUND_H */
