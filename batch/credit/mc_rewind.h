/*
 * Copyright (C) mt5-credit
 *
 * Noticing that the database went back in time (an asynchronous
 * failover, a restore): each worker keeps its last claim in a file of its
 * own, outside the database, written before that claim's balance call may
 * leave; every check asks the database whether it still holds each of
 * those claims.  See sql/029_database_rewind.sql.
 */


#ifndef MC_REWIND_H
#define MC_REWIND_H


#include <pthread.h>
#include <stdint.h>

#include "mc_alert.h"
#include "mc_db.h"


typedef enum {
    MC_REWIND_OK = 0,        /* the database holds every claim kept */
    MC_REWIND_HANDLED,       /* it did not: credits marked for lookup */
    MC_REWIND_STOP,          /* another database: do not claim */
    MC_REWIND_ERROR          /* could not check: do not claim this round */
} mc_rewind_rc_e;


typedef struct {
    char   dir[512];
    char   file[768];                 /* this worker's */
    char   host_prefix[192];          /* worker-<this host>_ */
    char   system_identifier[32];     /* as last checked */
    int    timeline;

    /*
     * The last claim's fdatasync(), run by a thread of its own while the
     * checks ask MT5 (flush_fd is -1 when none is in flight).  The thread
     * and the worker share what is below `lock`.
     */
    int               flush_fd;
    int64_t           flush_credit;
    int64_t           kept_credit;     /* on disk; 0: none yet */
    pthread_t         flusher;
    pthread_mutex_t   lock;
    pthread_cond_t    cond;
    int               asked;           /* a flush to run, or running */
    int               flush_errno;     /* how it ended: 0, on disk */
    unsigned          flusher_started:1;
    unsigned          stopping:1;
} mc_rewind_t;


void mc_rewind_init(mc_rewind_t *r, const char *dir, const char *worker);

/*
 * At start: the directory can hold this worker's claims (it is one, a
 * file can be made and synced in it); 0, or -1 with the reason on
 * standard error.
 */
int mc_rewind_open(mc_rewind_t *r);

/*
 * Compares the database with every worker's file in the directory (under
 * a lock).  On a rewind, every pending credit is made unknown for lookup
 * first, and the files are brought back in line with the database; when
 * the database holds every claim, the files of this host's workers that
 * are gone are removed (all but the newest).
 */
mc_rewind_rc_e mc_rewind_check(mc_rewind_t *r, mc_db_t *db,
    const char *worker, int lease, const mc_alert_config_t *alert);

/*
 * A claim about to be acted on: its line is written now and its
 * fdatasync() started, to run while the checks ask MT5; 0, or -1
 * (logged).  A flush still in flight from an earlier claim is waited for
 * first.
 */
int mc_rewind_claim_start(mc_rewind_t *r, int64_t credit, int attempts);

/*
 * Before that claim's balance call may leave: 0 once the line is on
 * disk, -1 (logged) if the flush failed, or is not done within wait_ms
 * (it stays in flight; the next claim or check waits for it).
 */
int mc_rewind_claim_kept(mc_rewind_t *r, int64_t credit, int64_t wait_ms);

/* waits for a flush in flight, if any, and closes its file */
void mc_rewind_settle(mc_rewind_t *r);

/* settles, and ends the flushing thread (the worker is stopping) */
void mc_rewind_free(mc_rewind_t *r);


#endif /* MC_REWIND_H */
