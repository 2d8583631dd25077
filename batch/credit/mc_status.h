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


#endif /* MC_STATUS_H */
