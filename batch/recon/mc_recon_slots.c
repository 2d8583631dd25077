/*
 * Copyright (C) mt5-credit
 */


#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "mc_clock.h"
#include "mc_log.h"
#include "mc_pgconn.h"
#include "mc_recon_slots.h"
#include "mc_slots.h"


static int mc_recon_slots_try(mc_recon_slots_t *sl, int want, char *err,
    size_t errlen);
static void mc_recon_pace(void *data);


int
mc_recon_slots_take(mc_recon_slots_t *sl, mc_config_t *cfg,
    mc_server_config_t *srv, int want, volatile sig_atomic_t *stop,
    char *err, size_t errlen)
{
    int              rc, told;
    int64_t          until;
    struct timespec  second = { 1, 0 };

    memset(sl, 0, sizeof(*sl));
    sl->srv = srv;
    pthread_mutex_init(&sl->lock, NULL);

    if (want > srv->sessions) {
        want = srv->sessions;
    }
    if (want > MC_RECON_SLOTS_MAX) {
        want = MC_RECON_SLOTS_MAX;
    }
    if (want < 1) {
        want = 1;
    }

    /* the recon role's own connection: the locks live as long as it */
    sl->conn = mc_pgconn_connect(cfg->recon_database[0] != '\0'
                                 ? cfg->recon_database : cfg->database);
    if (PQstatus(sl->conn) != CONNECTION_OK) {
        snprintf(err, errlen, "MT5 server %s: session slots: database: %s",
                 srv->name, PQerrorMessage(sl->conn));
        return -1;
    }

    /* the monotonic clock: a step of the wall clock neither ends the wait
       early nor makes it last for ever */
    until = mc_now_us() + (int64_t) cfg->recon_slot_wait * 1000000;
    told = 0;

    for ( ;; ) {
        rc = mc_recon_slots_try(sl, want, err, errlen);
        if (rc != 0) {
            break;
        }

        if (mc_now_us() >= until || (stop != NULL && *stop)) {
            snprintf(err, errlen, "MT5 server %s: no Web API session slot "
                     "free in %d s: all %d are held (workers, another run); "
                     "sessions is the cap for workers and reconciliation "
                     "together", srv->name, cfg->recon_slot_wait,
                     srv->sessions);
            return -1;
        }

        if (!told++) {
            mc_log(MC_LOG_INFO, "reconcile: MT5 server %s: all %d session "
                   "slots held; waiting up to %d s for one", srv->name,
                   srv->sessions, cfg->recon_slot_wait);
        }

        (void) nanosleep(&second, NULL);
    }

    if (rc < 0) {
        return -1;
    }

    if (cfg->recon_rate > 0) {
        sl->interval_us = 1000000 / cfg->recon_rate;
        srv->mt5.pace = mc_recon_pace;
        srv->mt5.pace_data = sl;
    }

    if (cfg->recon_rate > 0) {
        mc_log(MC_LOG_INFO, "reconcile: MT5 server %s: %d of its %d "
               "session slots (asked for %d), %d requests a second at most",
               srv->name, sl->nslots, srv->sessions, want, cfg->recon_rate);
    } else {
        mc_log(MC_LOG_INFO, "reconcile: MT5 server %s: %d of its %d "
               "session slots (asked for %d), requests not paced "
               "(recon_rate = 0)", srv->name, sl->nslots, srv->sessions,
               want);
    }

    return sl->nslots;
}


/* one pass over the slots: 1 with at least one held, 0 none, -1 error */
static int
mc_recon_slots_try(mc_recon_slots_t *sl, int want, char *err, size_t errlen)
{
    int          k;
    char         ks[16];
    PGresult    *res;
    const char  *p[2];

    for (k = 1; k <= sl->srv->sessions && sl->nslots < want; k++) {
        snprintf(ks, sizeof(ks), "%d", k);
        p[0] = sl->srv->name;
        p[1] = ks;

        res = PQexecParams(sl->conn, MC_SLOT_TRY_SQL, 2, NULL, p, NULL,
                           NULL, 0);
        if (PQresultStatus(res) != PGRES_TUPLES_OK) {
            snprintf(err, errlen, "MT5 server %s: session slots: %s",
                     sl->srv->name, PQresultErrorMessage(res));
            PQclear(res);
            return -1;
        }

        if (PQgetvalue(res, 0, 0)[0] == 't') {
            sl->slot[sl->nslots++] = k;
        }
        PQclear(res);
    }

    return sl->nslots > 0;
}


void
mc_recon_slots_release(mc_recon_slots_t *sl)
{
    int          i;
    char         ks[16];
    PGresult    *res;
    const char  *p[2];

    if (sl->srv != NULL && sl->srv->mt5.pace_data == sl) {
        sl->srv->mt5.pace = NULL;
        sl->srv->mt5.pace_data = NULL;
    }

    for (i = 0; i < sl->nslots && PQstatus(sl->conn) == CONNECTION_OK; i++) {
        snprintf(ks, sizeof(ks), "%d", sl->slot[i]);
        p[0] = sl->srv->name;
        p[1] = ks;
        res = PQexecParams(sl->conn, MC_SLOT_RELEASE_SQL, 2, NULL, p, NULL,
                           NULL, 0);
        PQclear(res);
    }

    /* closing frees whatever the unlocks did not */
    PQfinish(sl->conn);
    sl->conn = NULL;
    sl->nslots = 0;
    pthread_mutex_destroy(&sl->lock);
}


/* before each request of any of the run's sessions on this server */
static void
mc_recon_pace(void *data)
{
    int64_t            now, at;
    struct timespec    ts;
    mc_recon_slots_t  *sl = data;

    pthread_mutex_lock(&sl->lock);
    now = mc_now_us();
    at = sl->next_us > now ? sl->next_us : now;
    sl->next_us = at + sl->interval_us;
    pthread_mutex_unlock(&sl->lock);

    if (at > now) {
        ts.tv_sec = (at - now) / 1000000;
        ts.tv_nsec = (long) ((at - now) % 1000000) * 1000;
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
            /* the rest of it */
        }
    }
}


