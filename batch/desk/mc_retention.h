/*
 * Copyright (C) mt5-credit
 *
 * mt5credit retention: what is kept, for how long (sql/070).  Webhook
 * bodies past their days are emptied in the database (their digests
 * stay), and reconciliation reports past theirs are removed from the
 * reports directory.
 */


#ifndef MC_RETENTION_H
#define MC_RETENTION_H


int mc_retention_main(int argc, char **argv, const char *conninfo,
    const char *reports);


#endif /* MC_RETENTION_H */
