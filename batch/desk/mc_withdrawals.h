/*
 * Copyright (C) mt5-credit
 *
 * `mt5credit withdrawals`: the maker-checker desk for withdrawals from a
 * terminal.  The queue, one request with its plan (refund legs to the
 * deposits it came from, newest first, and a payout for the rest:
 * sql/042_withdrawal_plan.sql) and the digest that signs both; prepare
 * (the maker), approve naming that digest (another person), reject.
 * Every rule is the database's: the maker cannot approve, an approval of
 * anything but what was shown is refused, and a plan that changed since
 * it was prepared must be prepared again.
 */

#ifndef MC_WITHDRAWALS_H
#define MC_WITHDRAWALS_H


#include <stdio.h>


/* argv[0] is "withdrawals"; conninfo NULL or "": libpq's PG* environment */
int mc_withdrawals_main(int argc, char **argv, const char *conninfo);

void mc_withdrawals_usage(FILE *f);


#endif /* MC_WITHDRAWALS_H */
