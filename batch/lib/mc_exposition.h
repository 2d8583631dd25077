/*
 * Copyright (C) mt5-credit
 *
 * Where a program's own metrics go, in Prometheus' text format: a
 * node-exporter textfile (metrics_dir, mc_textfile), a loopback HTTP
 * endpoint (a *metrics_listen key, mc_exporter), both or neither.  A
 * round renders the exposition once, into memory; then it is committed
 * to the file and published to the endpoint, so both say the same.
 */

#ifndef MC_EXPOSITION_H
#define MC_EXPOSITION_H


#include <stddef.h>
#include <stdio.h>

#include "mc_config.h"
#include "mc_exporter.h"


typedef struct {
    char            path[1024];     /* the textfile; "": none */
    char            worker[160];    /* worker="...": the label's value,
                                       escaped */
    int             transient;      /* the default name, host:pid: the
                                       file goes when the process does */
    mc_exporter_t  *http;           /* NULL: none */
    FILE           *f;              /* between begin and end */
    char           *buf;
    size_t          len;
} mc_exposition_t;


/*
 * For program (work, poll-provider, payout), named by worker_name in
 * the textfile's name, served on listen ("": not served).  0, or -1
 * with the reason in err (the address taken, say).
 */
int mc_exposition_open(mc_exposition_t *x, const mc_config_t *cfg,
    const char *program, const char *listen, char *err, size_t errlen);

/* whether anything is wanted: if not, nothing need be rendered */
int mc_exposition_wanted(const mc_exposition_t *x);

/* the stream to render into; NULL (logged) if none could be had */
FILE *mc_exposition_begin(mc_exposition_t *x);

/* rendered: the textfile committed, the endpoint's answer replaced */
void mc_exposition_end(mc_exposition_t *x);

void mc_exposition_close(mc_exposition_t *x);


#endif /* MC_EXPOSITION_H */
