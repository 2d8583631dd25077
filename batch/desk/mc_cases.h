/*
 * Copyright (C) mt5-credit
 *
 * `mt5credit cases`: the case desk from a terminal.  Every action is one
 * call of a function of sql/010_case_desk.sql, which records who acted
 * (the database login, session_user: each person logs in as themselves),
 * the values before and after, and the evidence; and which refuses a
 * money-moving approval by the person who proposed it.  Nothing here
 * decides anything the database does not check again.
 */

#ifndef MC_CASES_H
#define MC_CASES_H


#include <stdio.h>


/* argv[0] is "cases"; conninfo NULL or "": libpq's PG* environment */
int mc_cases_main(int argc, char **argv, const char *conninfo);

void mc_cases_usage(FILE *f);

/* a case, proposal or event number: digits, no leading zero */
int mc_cases_is_id(const char *s);


#endif /* MC_CASES_H */
