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
    char   system_identifier[32];     /* as last checked */
    int    timeline;
} mc_rewind_t;


void mc_rewind_init(mc_rewind_t *r, const char *dir, const char *worker);

/*
 * Compares the database with every worker's file in the directory (under
 * a lock).  On a rewind, every pending credit is made unknown for lookup
 * first, and the files are brought back in line with the database.
 */
mc_rewind_rc_e mc_rewind_check(mc_rewind_t *r, mc_db_t *db,
    const char *worker, int lease, const mc_alert_config_t *alert);

/* a claim about to be acted on, kept (fsync'ed): 0, or -1 (logged) */
int mc_rewind_claimed(mc_rewind_t *r, int64_t credit, int attempts);


#endif /* MC_REWIND_H */
