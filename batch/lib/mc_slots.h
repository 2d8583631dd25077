/*
 * Copyright (C) mt5-credit
 *
 * An MT5 server's Web API session slots: `sessions` in its [server]
 * section is the most sessions open on it at once, from every worker and
 * every reconciliation together.  Slot k of server S is a session-level
 * advisory lock (hashtext('mt5credit.session:' || S), k) on a database
 * connection: it is held while that connection lives, and freed by
 * PostgreSQL when the holder dies, however it dies.  Workers keep theirs
 * (batch/credit/mc_db.c); reconciliation takes what is free for the run
 * (batch/recon/mc_recon_slots.c).
 */

#ifndef MC_SLOTS_H
#define MC_SLOTS_H


/* $1 the server's name, $2 the slot (1..sessions) */
#define MC_SLOT_TRY_SQL                                                       \
    "SELECT pg_try_advisory_lock(hashtext('mt5credit.session:' || $1), "     \
    "$2::int)"

#define MC_SLOT_RELEASE_SQL                                                   \
    "SELECT pg_advisory_unlock(hashtext('mt5credit.session:' || $1), "       \
    "$2::int)"


#endif /* MC_SLOTS_H */
