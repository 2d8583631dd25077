/*
 * Copyright (C) mt5-credit
 *
 * `mt5credit events`: the stored webhook events from a terminal: list
 * them, show one with its bytes as received, and replay one through
 * ingest's rules (sql/039_event_replay.sql).  A replay runs under the same
 * unique keys as the first delivery, so it can never make a second
 * credit; each is recorded with who (the database login), when, why and
 * what came of it.
 */

#ifndef MC_EVENTS_H
#define MC_EVENTS_H


#include <stdio.h>


/* argv[0] is "events"; conninfo NULL or "": libpq's PG* environment */
int mc_events_main(int argc, char **argv, const char *conninfo);

void mc_events_usage(FILE *f);


#endif /* MC_EVENTS_H */
