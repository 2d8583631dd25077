/*
 * Copyright (C) mt5-credit
 *
 * `mt5credit backfill stripe`: the webhooks the provider could not
 * deliver, read from its own list of undelivered events (every page) and
 * given, each event's own bytes fetched by id, to backfill_event()
 * (sql/047_backfill.sql), which stores what is new and passes it to
 * ingest() as an API answer.  A lost refund or dispute is found within
 * minutes (a timer runs it), not at the next day's reconciliation; and
 * never credited twice, however often it runs or the webhook comes late.
 */

#ifndef MC_BACKFILL_H
#define MC_BACKFILL_H


#include <signal.h>
#include <stdint.h>

#include "mc_config.h"


/*
 * Events created since `since` (unix seconds).  0: every listed event was
 * backfilled or already stored; 1: the list was not complete, or an event
 * could not be fetched or stored (what could be, was); 2: unusable
 * configuration.
 */
int mc_backfill_run(mc_config_t *cfg, const char *provider, int64_t since,
    volatile sig_atomic_t *stop);


#endif /* MC_BACKFILL_H */
