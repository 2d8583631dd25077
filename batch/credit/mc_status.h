/*
 * Copyright (C) mt5-credit
 *
 * `mt5credit status`: the state of the work, from the database alone.
 */


#ifndef MC_STATUS_H
#define MC_STATUS_H


#include <stdio.h>


/* 0, or 1 (message on stderr) if the database cannot be read */
int mc_status_print(const char *conninfo, int prometheus, FILE *out);

/*
 * The Prometheus text written to path through path.tmp.<pid>, fsync'ed
 * and renamed over it, so the collector never reads half a file; on any
 * failure the old file stays and the temporary one is removed.
 */
int mc_status_textfile(const char *conninfo, const char *path);


#endif /* MC_STATUS_H */
