/*
 * Copyright (C) mt5-credit
 *
 * `mt5credit payout`: sends the payouts of withdrawals whose MT5 debit is
 * done to the provider (Stripe's POST /v1/payouts, with an idempotency
 * key that is the same on every attempt), and finds out what happened to
 * the ones whose outcome is unknown before anything is sent again
 * (sql/018_payouts.sql).
 */

#ifndef MC_PAYOUT_H
#define MC_PAYOUT_H


#include <signal.h>

#include "mc_config.h"


/* once: one round, then return; 0, 1 if a round could not run, 2 config */
int mc_payout_run(mc_config_t *cfg, int once, volatile sig_atomic_t *stop);


#endif /* MC_PAYOUT_H */
