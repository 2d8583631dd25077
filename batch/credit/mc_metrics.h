/*
 * Copyright (C) mt5-credit
 *
 * A worker's own metrics, which only the process knows: every MT5 Web
 * API request's time and outcome per server and endpoint (a cumulative
 * histogram), balance answers per retcode, the session slot it holds,
 * its credits and resolver lookups by outcome, and when its last round
 * ended.  Written, with metrics_dir set, as a node-exporter textfile
 * (mt5credit-work-<worker_name>.prom, atomically) after each round, at
 * most once a second.  One thread: the worker's.
 */

#ifndef MC_METRICS_H
#define MC_METRICS_H


#include <stdint.h>

#include "mc_config.h"
#include "mc_histogram.h"


#define MC_METRICS_ENDPOINTS  16
#define MC_METRICS_RETCODES   16


typedef struct {
    char            path[48];
    mc_histogram_t  time;
    uint64_t        ok, rejected, no_answer;
} mc_metrics_endpoint_t;


typedef struct {
    const char             *server;
    mc_metrics_endpoint_t   ep[MC_METRICS_ENDPOINTS];
    int                     nep;
    int                     retcode[MC_METRICS_RETCODES];
    uint64_t                retcode_n[MC_METRICS_RETCODES];
    int                     nretcodes;
    uint64_t                balance_no_answer;
    int                     slot;            /* held now; 0: none */
} mc_metrics_server_t;


typedef struct {
    char                    path[1024];      /* "": not written */
    mc_metrics_server_t     servers[MC_CONFIG_MAX_SERVERS];
    int                     nservers;
    int64_t                 last_round;      /* unix seconds */
    int64_t                 written_ms;
} mc_metrics_t;


/* hooks every server's MT5 config (before its sessions are made) */
void mc_metrics_init(mc_metrics_t *m, mc_config_t *cfg);

/* the worker's counters, passed in at each write */
typedef struct {
    uint64_t    done, failed, unknown, released;
    uint64_t    found, absent, unresolved;
} mc_metrics_counts_t;

/* a round ended: written if a second passed since the last write */
void mc_metrics_round(mc_metrics_t *m, const mc_metrics_counts_t *c);


#endif /* MC_METRICS_H */
