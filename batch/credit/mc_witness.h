/*
 * Copyright (C) mt5-credit
 *
 * MT5 as the witness every host shares: before claiming, ask MT5 about
 * the credits next in line.  A deal under the comment of a credit the
 * database still holds as pending, at the attempt it was read with, was
 * made under a claim the database lost: it went back in time, whichever
 * host's claim that was.  See sql/068_mt5_witness.sql.
 */


#ifndef MC_WITNESS_H
#define MC_WITNESS_H


#include "mc_worker.h"


typedef enum {
    MC_WITNESS_OK = 0,       /* MT5 holds no deal of a pending credit */
    MC_WITNESS_HANDLED,      /* it did: credits marked for lookup, a case */
    MC_WITNESS_ERROR         /* MT5 or the database could not be asked */
} mc_witness_rc_e;


/*
 * Asks MT5 for the deals of the worker's witness_credits next pending
 * credits, one login at a time, each over its lookup window.
 */
mc_witness_rc_e mc_witness_check(mc_worker_t *w);


#endif /* MC_WITNESS_H */
