/*
 * Copyright (C) mt5-credit
 *
 * The credit worker: claims pending credits, checks them again against
 * our records and MT5, makes the one balance call, records its outcome;
 * sweeps expired leases; resolves unknown outcomes by looking the deal up
 * (mc_resolver.c).  One process, one database connection, one Web API
 * session per MT5 server it serves.
 */


#ifndef MC_WORKER_H
#define MC_WORKER_H


#include <stdint.h>

#include "mc_alert.h"
#include "mc_config.h"
#include "mc_db.h"
#include "mc_metrics.h"
#include "mc_mt5.h"
#include "mc_rewind.h"
#include "mc_wake.h"


#define MC_WORKER_GROUP_CACHE  32


typedef struct {
    char                 name[128];     /* as user/get named it */
    mc_mt5_group_t       group;
    int64_t              expires;       /* monotonic ms */
} mc_worker_group_t;


typedef struct {
    mc_server_config_t  *config;
    mc_mt5_session_t    *session;
    int                  slot;          /* session slot held, 0: none */
    int                  slot_wanted;   /* none was free last time */
    int64_t              rest_until;    /* monotonic ms: left alone */
    int                  tls_warned;
    mc_worker_group_t    groups[MC_WORKER_GROUP_CACHE];
    int                  ngroups;
} mc_worker_server_t;


typedef struct {
    mc_config_t         *cfg;
    mc_db_t             *db;
    mc_wake_t           *wake;
    mc_alert_config_t    alert;
    mc_worker_server_t   servers[MC_CONFIG_MAX_SERVERS];
    int                  nservers;
    unsigned long        db_generation;  /* slots were taken on this one */
    int64_t              slot_retry_at;  /* ms: ask for missing slots */
    unsigned long        rewind_checked; /* mc_rewind_check()ed, + 1 */
    unsigned long        deployment_checked; /* its tag compared, + 1 */
    unsigned long        witness_checked; /* MT5 asked on this one, + 1 */
    int64_t              witness_at;      /* monotonic ms: MT5 last asked */
    int64_t              witness_upto;    /* ask again once claims reach
                                             this credit (INT64_MAX: the
                                             whole queue was asked about) */
    int64_t              claimed_upto;    /* the last credit claimed */
    mc_rewind_t          rewind;         /* claims kept outside the db */
    mc_metrics_t         metrics;        /* only the process knows them */
    volatile int        *stop;

    /*
     * The fast path's statement in flight (at most one): the next claim,
     * sent while a balance call runs, or the record of the last deal,
     * read once the next credit's checks have run.
     */
    unsigned             claim_sent:1;
    unsigned             record_sent:1;
    unsigned             have_next:1;
    int64_t              claim_t0;       /* monotonic ms before sending */
    mc_work_item_t       next;
    int64_t              next_t0;
    mc_work_item_t       recorded;       /* whose record is in flight */
    uint64_t             recorded_ticket;

    /* what this process did, for its exit line */
    uint64_t             done, failed, unknown, released;
    uint64_t             resolved_found, resolved_absent, unresolved;
} mc_worker_t;


int mc_worker_init(mc_worker_t *w, mc_config_t *cfg, volatile int *stop);
void mc_worker_free(mc_worker_t *w);

/* the loop of `mt5credit work`; returns when *stop is set (0) or -1 */
int mc_worker_run(mc_worker_t *w, int once);

/* claims and processes credits until none is pending; -1 on db error */
int mc_worker_drain(mc_worker_t *w);

/* one resolver round over every served server (mc_resolver.c) */
int mc_resolver_round(mc_worker_t *w);

/*
 * The server-time window a credit's deal is searched in: from a lookback
 * before `since` (unix s: when it was made, or a rewind's lost timeline
 * began) to past the database's `db_now`, under any UTC offset the
 * server had meanwhile (`offset`: its offset now, s).
 */
void mc_resolver_window(int64_t since, int64_t db_now, int64_t offset,
    int lookback, int64_t *from, int64_t *to);

/* internal to the worker and the resolver */
int mc_worker_servers(mc_worker_t *w, const char **names, int max);
mc_worker_server_t *mc_worker_server(mc_worker_t *w, const char *name);

/*
 * Whether the database connected to is this deployment's (sql/036),
 * asked once per connection and round: 1, or 0 (logged, and alerted on a
 * mismatch).
 */
int mc_worker_deployment_ok(mc_worker_t *w);
int mc_worker_session(mc_worker_t *w, mc_worker_server_t *s);
void mc_worker_rest(mc_worker_t *w, mc_worker_server_t *s, const char *why);


#endif /* MC_WORKER_H */
