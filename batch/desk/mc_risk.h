/*
 * Copyright (C) mt5-credit
 *
 * `mt5credit risk`: the risk rules that hold a deposit's credit for a
 * person before MT5 is called (sql/079, docs/risk.md).  A rule changes
 * only when one person proposes the change and another approves it; the
 * database refuses anything else, so nothing here decides anything.
 */

#ifndef MC_RISK_H
#define MC_RISK_H


#include <stdio.h>


/* argv[0] is "risk"; conninfo NULL or "": libpq's PG* environment */
int mc_risk_main(int argc, char **argv, const char *conninfo);

void mc_risk_usage(FILE *f);


#endif /* MC_RISK_H */
