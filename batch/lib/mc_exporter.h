/*
 * Copyright (C) mt5-credit
 *
 * A program's own metrics served over HTTP on a loopback address
 * (metrics_listen, query_metrics_listen, payout_metrics_listen), for a
 * Prometheus that scrapes the host.  One thread accepts and answers, one
 * connection at a time, each with a deadline: a scraper that stalls can
 * delay the next scrape by that much, never the program's own work.  The
 * program publishes a whole exposition after a round; a scrape reads the
 * last one published, never half of one.
 *
 * Loopback only: the metrics name servers, providers and volumes, and a
 * Prometheus elsewhere reaches them through what the host already trusts
 * (an SSH tunnel, a proxy with TLS), not through a port of ours.
 */

#ifndef MC_EXPORTER_H
#define MC_EXPORTER_H


#include <stddef.h>


typedef struct mc_exporter_s  mc_exporter_t;


/*
 * Checks "127.0.0.1:9464", "[::1]:9464" (any 127.0.0.0/8 address): 0, or
 * -1 with what is wrong in err.  The config checks with it at load.
 */
int mc_exporter_check(const char *listen, char *err, size_t errlen);

/* bound and serving, or NULL with the reason in err */
mc_exporter_t *mc_exporter_start(const char *listen, char *err,
    size_t errlen);

/* the exposition every scrape gets from now on (copied) */
void mc_exporter_publish(mc_exporter_t *x, const char *text, size_t len);

/* the thread stopped, the socket closed */
void mc_exporter_stop(mc_exporter_t *x);


#endif /* MC_EXPORTER_H */
