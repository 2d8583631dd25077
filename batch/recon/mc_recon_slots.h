/*
 * Copyright (C) mt5-credit
 *
 * What reconciliation may ask of one MT5 server during a run: the
 * session slots it holds (batch/lib/mc_slots.h: shared with the workers,
 * so both together stay within the server's `sessions`), and the pace of
 * its requests (recon_rate a second, every session of the run together),
 * so a daily run in trading hours cannot crowd out the workers or starve
 * the manager API.
 */

#ifndef MC_RECON_SLOTS_H
#define MC_RECON_SLOTS_H


#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "mc_config.h"


#define MC_RECON_SLOTS_MAX  16


typedef struct {
    PGconn              *conn;      /* holds the advisory locks */
    mc_server_config_t  *srv;
    int                  slot[MC_RECON_SLOTS_MAX];
    int                  nslots;

    /* the pace: one request every interval_us, shared by the sessions */
    pthread_mutex_t      lock;
    int64_t              interval_us;
    int64_t              next_us;
} mc_recon_slots_t;


/*
 * Takes up to `want` free slots of srv, waiting up to cfg->recon_slot_wait
 * seconds for the first (a stop ends the wait), and sets srv's sessions
 * to keep cfg->recon_rate.  Returns the slots held (>= 1), or -1 with err
 * set.  mc_recon_slots_release() gives all back, whatever this returned.
 */
int mc_recon_slots_take(mc_recon_slots_t *sl, mc_config_t *cfg,
    mc_server_config_t *srv, int want, volatile sig_atomic_t *stop,
    char *err, size_t errlen);

void mc_recon_slots_release(mc_recon_slots_t *sl);


#endif /* MC_RECON_SLOTS_H */
