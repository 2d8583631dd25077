/*
 * Copyright (C) mt5-credit
 *
 * `mt5credit poll-provider`: for deposits that should have been paid by
 * now and have no credit, ask the provider (Stripe: the Checkout Session
 * by its id) and hand a trusted answer to ingest(), the webhook path's
 * own function (sql/015_provider_query.sql).  A timeout, an error or an
 * answer about something else changes nothing but the query's schedule.
 */

#ifndef MC_QUERY_H
#define MC_QUERY_H


#include <signal.h>

#include "mc_config.h"


/* once: one round, then return; 0, or 1 if the round could not run */
int mc_query_run(mc_config_t *cfg, int once, volatile sig_atomic_t *stop);


#endif /* MC_QUERY_H */
