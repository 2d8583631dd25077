/*
 * Copyright (C) mt5-credit
 *
 * `mt5credit outbound`: delivers the outbox's events (sql/095) to the
 * broker's systems, signed per Standard Webhooks, at least once, each
 * under its stable webhook-id.  A failed try waits its turn on the
 * retry schedule (outbound_retry); after the last the delivery is
 * exhausted, and an endpoint failing for outbound_disable_after is
 * disabled: both alerted, both for a person to replay or enable.
 */

#ifndef MC_OUTBOUND_H
#define MC_OUTBOUND_H


#include <signal.h>

#include "mc_config.h"


int mc_outbound_run(mc_config_t *cfg, int once, volatile sig_atomic_t *stop);


#endif /* MC_OUTBOUND_H */
