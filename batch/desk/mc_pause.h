/*
 * Copyright (C) mt5-credit
 *
 * `mt5credit pause` and `mt5credit resume`: the kill switch
 * (sql/046_pause.sql).  A person stops crediting for one MT5 server, one
 * provider or one kind of credit, with a reason, and resumes it; the
 * claims in the database enforce it, and who did what is kept.
 */

#ifndef MC_PAUSE_H
#define MC_PAUSE_H


#include <stdio.h>


/* argv[0] ends in "pause" or "resume"; conninfo NULL or "": libpq's PG*
   environment */
int mc_pause_main(int argc, char **argv, const char *conninfo);

void mc_pause_usage(FILE *f);


#endif /* MC_PAUSE_H */
