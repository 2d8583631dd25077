/*
 * Copyright (C) mt5-credit
 */


#include "mc_histogram.h"


/* upper bounds, ms, and as labelled; the edge's are the same
   (ngx_mt5_credit_status.c), so one dashboard reads both */
static const int64_t  mc_histogram_le_ms[MC_HISTOGRAM_BUCKETS - 1] = {
    5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000
};

static const char  *mc_histogram_le[MC_HISTOGRAM_BUCKETS] = {
    "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5",
    "5", "10", "+Inf"
};


void
mc_histogram_observe(mc_histogram_t *h, int64_t ms)
{
    int  i;

    for (i = 0; i < MC_HISTOGRAM_BUCKETS - 1; i++) {
        if (ms <= mc_histogram_le_ms[i]) {
            h->bucket[i]++;
        }
    }

    h->bucket[MC_HISTOGRAM_BUCKETS - 1]++;
    h->count++;
    h->sum_ms += (uint64_t) (ms > 0 ? ms : 0);
}


void
mc_histogram_print(FILE *f, const char *name, const char *labels,
    const mc_histogram_t *h)
{
    int          i;
    const char  *sep = labels[0] ? "," : "";

    for (i = 0; i < MC_HISTOGRAM_BUCKETS; i++) {
        fprintf(f, "%s_bucket{%s%sle=\"%s\"} %llu\n", name, labels, sep,
                mc_histogram_le[i], (unsigned long long) h->bucket[i]);
    }

    fprintf(f, "%s_sum{%s} %llu.%03llu\n%s_count{%s} %llu\n", name, labels,
            (unsigned long long) (h->sum_ms / 1000),
            (unsigned long long) (h->sum_ms % 1000), name, labels,
            (unsigned long long) h->count);
}
