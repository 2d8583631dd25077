/*
 * Copyright (C) mt5-credit
 *
 * `mt5credit outbox`: the outbound events (sql/095) from a terminal:
 * list them with each endpoint's delivery, show one with its body as
 * sent and every try, send one again or every one since a time, and
 * enable an endpoint the sender disabled.  Each replay is recorded with
 * who (the database login) and why; a replay sends the same bytes under
 * the same webhook-id, so a receiver that has the event drops it.
 */

#ifndef MC_OUTBOX_H
#define MC_OUTBOX_H


#include <stdio.h>


/* argv[0] is "outbox"; conninfo NULL or "": libpq's PG* environment */
int mc_outbox_main(int argc, char **argv, const char *conninfo);

void mc_outbox_usage(FILE *f);


#endif /* MC_OUTBOX_H */
