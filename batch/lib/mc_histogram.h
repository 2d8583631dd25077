/*
 * Copyright (C) mt5-credit
 *
 * A Prometheus histogram of durations, cumulative, in one process: the
 * buckets every mt5credit histogram uses (5 ms to 10 s, then +Inf), the
 * count and the sum, printed in the text format.  Not thread-safe: each
 * program observes from its one thread.
 */

#ifndef MC_HISTOGRAM_H
#define MC_HISTOGRAM_H


#include <stdint.h>
#include <stdio.h>


#define MC_HISTOGRAM_BUCKETS  12        /* the last is le="+Inf" */


typedef struct {
    uint64_t    bucket[MC_HISTOGRAM_BUCKETS];
    uint64_t    count;
    uint64_t    sum_ms;
} mc_histogram_t;


void mc_histogram_observe(mc_histogram_t *h, int64_t ms);

/* name_bucket{labels,le=...}, name_sum{labels}, name_count{labels};
   labels is "" or `a="x",b="y"` */
void mc_histogram_print(FILE *f, const char *name, const char *labels,
    const mc_histogram_t *h);


#endif /* MC_HISTOGRAM_H */
