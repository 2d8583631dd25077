/*
 * Copyright (C) mt5-credit
 *
 * Counters only grow, and live as long as the process: Prometheus reads
 * a restart as a reset.  Names follow its conventions: _total counters,
 * _seconds, the status in labels, one prefix (mt5credit_worker_).
 */


#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "mc_clock.h"
#include "mc_log.h"
#include "mc_metrics.h"
#include "mc_mt5.h"


static void mc_metrics_observe(void *data, const char *path, int64_t ms,
    int rc, int retcode);
static void mc_metrics_write(mc_metrics_t *m, const mc_metrics_counts_t *c,
    FILE *f);


int
mc_metrics_init(mc_metrics_t *m, mc_config_t *cfg)
{
    int   i;
    char  err[512];

    memset(m, 0, sizeof(*m));

    for (i = 0; i < cfg->nservers; i++) {
        m->servers[i].server = cfg->servers[i].name;
        cfg->servers[i].mt5.observe = mc_metrics_observe;
        cfg->servers[i].mt5.observe_data = &m->servers[i];
    }
    m->nservers = cfg->nservers;

    if (mc_exposition_open(&m->out, cfg, "work", cfg->metrics_listen, err,
                           sizeof(err))
        != 0)
    {
        mc_log(MC_LOG_ERROR, "metrics_listen: %s", err);
        return -1;
    }

    return 0;
}


void
mc_metrics_close(mc_metrics_t *m)
{
    mc_exposition_close(&m->out);
}


static void
mc_metrics_observe(void *data, const char *path, int64_t ms, int rc,
    int retcode)
{
    int                     i;
    mc_metrics_server_t    *s = data;
    mc_metrics_endpoint_t  *e;

    for (i = 0; i < s->nep; i++) {
        if (strcmp(s->ep[i].path, path) == 0) {
            break;
        }
    }

    if (i == s->nep) {
        if (s->nep == MC_METRICS_ENDPOINTS) {
            return;                 /* more endpoints than the worker has */
        }
        snprintf(s->ep[s->nep++].path, sizeof(s->ep[0].path), "%s", path);
    }

    e = &s->ep[i];
    mc_histogram_observe(&e->time, ms);

    if (rc == MC_MT5_OK) {
        e->ok++;
    } else if (rc == MC_MT5_REJECTED) {
        e->rejected++;
    } else {
        e->no_answer++;
    }

    if (strcmp(path, "/api/trade/balance") != 0) {
        return;
    }

    if (rc != MC_MT5_OK && rc != MC_MT5_REJECTED) {
        s->balance_no_answer++;
        return;
    }

    for (i = 0; i < s->nretcodes; i++) {
        if (s->retcode[i] == retcode) {
            s->retcode_n[i]++;
            return;
        }
    }

    if (s->nretcodes < MC_METRICS_RETCODES) {
        s->retcode[s->nretcodes] = retcode;
        s->retcode_n[s->nretcodes++] = 1;
    }
}


void
mc_metrics_round(mc_metrics_t *m, const mc_metrics_counts_t *c)
{
    FILE     *f;
    int64_t   now;

    m->last_round = (int64_t) time(NULL);

    if (!mc_exposition_wanted(&m->out)) {
        return;
    }

    now = mc_now_ms();
    if (m->written_ms != 0 && now - m->written_ms < 1000) {
        return;
    }
    m->written_ms = now;

    f = mc_exposition_begin(&m->out);
    if (f != NULL) {
        mc_metrics_write(m, c, f);
        mc_exposition_end(&m->out);
    }
}


static void
mc_metrics_write(mc_metrics_t *m, const mc_metrics_counts_t *c, FILE *f)
{
    int                     i, j;
    char                    labels[160];
    mc_metrics_server_t    *s;
    mc_metrics_endpoint_t  *e;

    fprintf(f, "# HELP mt5credit_worker_mt5_request_duration_seconds MT5 "
            "Web API requests of this worker, by server and endpoint.\n"
            "# TYPE mt5credit_worker_mt5_request_duration_seconds "
            "histogram\n");
    for (i = 0; i < m->nservers; i++) {
        s = &m->servers[i];
        for (j = 0; j < s->nep; j++) {
            e = &s->ep[j];
            snprintf(labels, sizeof(labels), "server=\"%s\",endpoint=\"%s\"",
                     s->server, e->path);
            mc_histogram_print(f, "mt5credit_worker_mt5_request_duration_"
                               "seconds", labels, &e->time);
        }
    }

    fprintf(f, "# HELP mt5credit_worker_mt5_requests_total MT5 Web API "
            "requests by outcome: ok, rejected (a retcode), no_answer.\n"
            "# TYPE mt5credit_worker_mt5_requests_total counter\n");
    for (i = 0; i < m->nservers; i++) {
        s = &m->servers[i];
        for (j = 0; j < s->nep; j++) {
            e = &s->ep[j];
            fprintf(f, "mt5credit_worker_mt5_requests_total{server=\"%s\","
                    "endpoint=\"%s\",outcome=\"ok\"} %llu\n"
                    "mt5credit_worker_mt5_requests_total{server=\"%s\","
                    "endpoint=\"%s\",outcome=\"rejected\"} %llu\n"
                    "mt5credit_worker_mt5_requests_total{server=\"%s\","
                    "endpoint=\"%s\",outcome=\"no_answer\"} %llu\n",
                    s->server, e->path, (unsigned long long) e->ok,
                    s->server, e->path, (unsigned long long) e->rejected,
                    s->server, e->path, (unsigned long long) e->no_answer);
        }
    }

    fprintf(f, "# HELP mt5credit_worker_balance_answers_total Balance "
            "operations answered, by retcode (none: no answer, the "
            "outcome unknown).\n"
            "# TYPE mt5credit_worker_balance_answers_total counter\n");
    for (i = 0; i < m->nservers; i++) {
        s = &m->servers[i];
        for (j = 0; j < s->nretcodes; j++) {
            fprintf(f, "mt5credit_worker_balance_answers_total{server=\"%s\","
                    "retcode=\"%d\"} %llu\n", s->server, s->retcode[j],
                    (unsigned long long) s->retcode_n[j]);
        }
        fprintf(f, "mt5credit_worker_balance_answers_total{server=\"%s\","
                "retcode=\"none\"} %llu\n", s->server,
                (unsigned long long) s->balance_no_answer);
    }

    fprintf(f, "# HELP mt5credit_worker_session_slot The session slot this "
            "worker holds on each server (0: none free).\n"
            "# TYPE mt5credit_worker_session_slot gauge\n");
    for (i = 0; i < m->nservers; i++) {
        fprintf(f, "mt5credit_worker_session_slot{server=\"%s\"} %d\n",
                m->servers[i].server, m->servers[i].slot);
    }

    fprintf(f, "# HELP mt5credit_worker_credits_total Credits this worker "
            "took to an end, by outcome.\n"
            "# TYPE mt5credit_worker_credits_total counter\n"
            "mt5credit_worker_credits_total{outcome=\"done\"} %llu\n"
            "mt5credit_worker_credits_total{outcome=\"failed\"} %llu\n"
            "mt5credit_worker_credits_total{outcome=\"unknown\"} %llu\n"
            "mt5credit_worker_credits_total{outcome=\"released\"} %llu\n"
            "# HELP mt5credit_worker_resolver_lookups_total Lookups of "
            "unknown credits, by outcome.\n"
            "# TYPE mt5credit_worker_resolver_lookups_total counter\n"
            "mt5credit_worker_resolver_lookups_total{outcome=\"found\"} "
            "%llu\n"
            "mt5credit_worker_resolver_lookups_total{outcome=\"absent\"} "
            "%llu\n"
            "mt5credit_worker_resolver_lookups_total{outcome="
            "\"unresolved\"} %llu\n"
            "# HELP mt5credit_worker_last_round_timestamp_seconds When the "
            "worker's last round ended.\n"
            "# TYPE mt5credit_worker_last_round_timestamp_seconds gauge\n"
            "mt5credit_worker_last_round_timestamp_seconds %lld\n",
            (unsigned long long) c->done, (unsigned long long) c->failed,
            (unsigned long long) c->unknown, (unsigned long long) c->released,
            (unsigned long long) c->found, (unsigned long long) c->absent,
            (unsigned long long) c->unresolved, (long long) m->last_round);
}


