/*
 * Copyright (C) mt5-credit
 */


#ifndef MC_TRADING_H
#define MC_TRADING_H


#include "mc_worker.h"


/*
 * Reads from MT5 how much each login with a withdrawal waiting under the
 * withdrawal_trading rule traded since its last deposit, and records it
 * (sql/080): how many were waiting (each read and recorded, or left
 * waiting when MT5 gave no answer), or -1 when the database could not be
 * asked.
 */
int mc_trading_round(mc_worker_t *w);


#endif /* MC_TRADING_H */
