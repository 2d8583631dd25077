/*
 * Copyright (C) mt5-credit
 *
 * A worker's own metrics, which only the process knows: every MT5 Web
 * API request's time and outcome per server and endpoint (a cumulative
 * histogram), balance answers per retcode, the session slot it holds,
 * its credits and resolver lookups by outcome, and when its last round
 * ended.  Rendered after each round, at most once a second, into a
 * node-exporter textfile (metrics_dir: mt5credit-work-<worker_name>.prom,
 * atomically) and for GET /metrics (metrics_listen), as configured.  The
 * counters are the worker thread's own; the endpoint's thread reads only
 * what was rendered (mc_exposition).
 */

#ifndef MC_METRICS_H
#define MC_METRICS_H


#include <stdint.h>

#include "mc_config.h"
#include "mc_exposition.h"
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
    mc_exposition_t         out;
    mc_metrics_server_t     servers[MC_CONFIG_MAX_SERVERS];
    int                     nservers;
    int64_t                 last_round;      /* unix seconds */
    int64_t                 written_ms;
} mc_metrics_t;


/* hooks every server's MT5 config (before its sessions are made), and
   starts serving if metrics_listen says so: -1, logged, if it cannot */
int mc_metrics_init(mc_metrics_t *m, mc_config_t *cfg);
void mc_metrics_close(mc_metrics_t *m);

/* the worker's counters, passed in at each write */
typedef struct {
    uint64_t    done, failed, unknown, released;
    uint64_t    found, absent, unresolved;
} mc_metrics_counts_t;

/* a round ended: written if a second passed since the last write */
void mc_metrics_round(mc_metrics_t *m, const mc_metrics_counts_t *c);


#endif /* MC_METRICS_H */
