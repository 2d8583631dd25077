
/*
 * Copyright (C) mt5-credit
 *
 * Counters in shared memory and the mt5_credit_status location, which
 * shows them in Prometheus' text format.  Shared so that every worker
 * counts into one place; kept across reloads (the zone's data is handed
 * to the new cycle) so a reload does not look like a counter reset.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_mt5_credit_module.h"


typedef struct {
    const char                   *name;    /* the family */
    const char                   *type;
    const char                   *help;
    const char                   *label;   /* NULL, or name="value" */
    const char                   *suffix;  /* a histogram's _bucket, ... */
    ngx_uint_t                    milli;   /* kept in ms, shown in s */
} ngx_mt5_credit_stat_desc_t;


static ngx_int_t ngx_mt5_credit_status_zone_init(ngx_shm_zone_t *shm_zone,
    void *data);


/* bumped with every change to ngx_mt5_credit_stat_e */
#define NGX_MT5_CREDIT_STAT_LAYOUT  "2"


/* which module answers: a new commit shows in every scrape */
#define NGX_MT5_CREDIT_BUILD_INFO                                            \
    "# HELP mt5credit_build_info The module's version and the commit it "    \
    "was built from.\n"                                                      \
    "# TYPE mt5credit_build_info gauge\n"                                    \
    "mt5credit_build_info{version=\"" NGX_MT5_CREDIT_VERSION                 \
    "\",commit=\"" NGX_MT5_CREDIT_COMMIT "\"} 1\n"


#define NGX_MT5_CREDIT_REJECTED                                              \
    "mt5credit_webhooks_rejected_total", "counter",                          \
    "Webhooks refused before anything was stored, by reason."

#define NGX_MT5_CREDIT_INGESTED                                              \
    "mt5credit_webhooks_ingested_total", "counter",                          \
    "Verified webhooks committed to PostgreSQL, by outcome."

#define NGX_MT5_CREDIT_RESPONSES                                             \
    "mt5credit_responses_total", "counter",                                  \
    "Answers to webhook deliveries, by HTTP status (503: the provider "      \
    "retries, after Retry-After)."

#define NGX_MT5_CREDIT_INGEST                                                \
    "mt5credit_ingest_duration_seconds", "histogram",                       \
    "Seconds from a webhook's request to its answer after the COMMIT, "      \
    "committed deliveries only."

/* the upper bounds of the histogram's buckets, in ms, as labelled */
static ngx_msec_t  ngx_mt5_credit_ingest_le[] = {
    5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000
};

#define NGX_MT5_CREDIT_DB_FAILURES                                           \
    "mt5credit_db_failures_total", "counter",                                \
    "Webhooks answered 503 because of PostgreSQL, by cause."

/* in the order of ngx_mt5_credit_stat_e */
static ngx_mt5_credit_stat_desc_t  ngx_mt5_credit_stats[] = {

    { "mt5credit_webhooks_received_total", "counter",
      "Requests that reached a mt5_credit_webhook location.",
      NULL, NULL, 0 },

    { NGX_MT5_CREDIT_REJECTED, "reason=\"method\"", NULL, 0 },
    { NGX_MT5_CREDIT_REJECTED, "reason=\"missing_header\"", NULL, 0 },
    { NGX_MT5_CREDIT_REJECTED, "reason=\"malformed_header\"", NULL, 0 },
    { NGX_MT5_CREDIT_REJECTED, "reason=\"bad_signature\"", NULL, 0 },
    { NGX_MT5_CREDIT_REJECTED, "reason=\"timestamp_too_old\"", NULL, 0 },
    { NGX_MT5_CREDIT_REJECTED, "reason=\"timestamp_in_future\"", NULL, 0 },
    { NGX_MT5_CREDIT_REJECTED, "reason=\"malformed_body\"", NULL, 0 },
    { NGX_MT5_CREDIT_REJECTED, "reason=\"body_error\"", NULL, 0 },

    { NGX_MT5_CREDIT_INGESTED, "outcome=\"stored\"", NULL, 0 },
    { NGX_MT5_CREDIT_INGESTED, "outcome=\"duplicate\"", NULL, 0 },
    { NGX_MT5_CREDIT_INGESTED, "outcome=\"conflict\"", NULL, 0 },
    { NGX_MT5_CREDIT_INGESTED, "outcome=\"credit_created\"", NULL, 0 },
    { NGX_MT5_CREDIT_INGESTED, "outcome=\"case_opened\"", NULL, 0 },

    { NGX_MT5_CREDIT_DB_FAILURES, "cause=\"error\"", NULL, 0 },
    { NGX_MT5_CREDIT_DB_FAILURES, "cause=\"timeout\"", NULL, 0 },
    { NGX_MT5_CREDIT_DB_FAILURES, "cause=\"unavailable\"", NULL, 0 },
    { NGX_MT5_CREDIT_DB_FAILURES, "cause=\"queue_full\"", NULL, 0 },
    { NGX_MT5_CREDIT_DB_FAILURES, "cause=\"queue_timeout\"", NULL, 0 },

    { NGX_MT5_CREDIT_RESPONSES, "code=\"200\"", NULL, 0 },
    { NGX_MT5_CREDIT_RESPONSES, "code=\"400\"", NULL, 0 },
    { NGX_MT5_CREDIT_RESPONSES, "code=\"405\"", NULL, 0 },
    { NGX_MT5_CREDIT_RESPONSES, "code=\"503\"", NULL, 0 },

    { "mt5credit_redis_wakeups_total", "counter",
      "Wake-ups Redis acknowledged.", NULL, NULL, 0 },

    { "mt5credit_redis_errors_total", "counter",
      "Wake-ups not delivered (Redis down, slow or refusing); the work "
      "waits for the workers' poll.", NULL, NULL, 0 },

    { "mt5credit_pg_connects_total", "counter",
      "PostgreSQL connections started.", NULL, NULL, 0 },

    { NGX_MT5_CREDIT_INGEST, "le=\"0.005\"", "_bucket", 0 },
    { NGX_MT5_CREDIT_INGEST, "le=\"0.01\"", "_bucket", 0 },
    { NGX_MT5_CREDIT_INGEST, "le=\"0.025\"", "_bucket", 0 },
    { NGX_MT5_CREDIT_INGEST, "le=\"0.05\"", "_bucket", 0 },
    { NGX_MT5_CREDIT_INGEST, "le=\"0.1\"", "_bucket", 0 },
    { NGX_MT5_CREDIT_INGEST, "le=\"0.25\"", "_bucket", 0 },
    { NGX_MT5_CREDIT_INGEST, "le=\"0.5\"", "_bucket", 0 },
    { NGX_MT5_CREDIT_INGEST, "le=\"1\"", "_bucket", 0 },
    { NGX_MT5_CREDIT_INGEST, "le=\"2.5\"", "_bucket", 0 },
    { NGX_MT5_CREDIT_INGEST, "le=\"5\"", "_bucket", 0 },
    { NGX_MT5_CREDIT_INGEST, "le=\"10\"", "_bucket", 0 },
    { NGX_MT5_CREDIT_INGEST, "le=\"+Inf\"", "_bucket", 0 },
    { NGX_MT5_CREDIT_INGEST, NULL, "_sum", 1 },
    { NGX_MT5_CREDIT_INGEST, NULL, "_count", 0 },

    { "mt5credit_pg_connections", "gauge",
      "PostgreSQL connections open or opening, all workers.", NULL, NULL, 0 },

    { "mt5credit_pg_connections_busy", "gauge",
      "PostgreSQL connections running a statement, all workers.",
      NULL, NULL, 0 },

    { "mt5credit_pg_queue", "gauge",
      "Webhooks waiting for a free PostgreSQL connection, all workers.",
      NULL, NULL, 0 }
};


ngx_int_t
ngx_mt5_credit_status_init_zone(ngx_conf_t *cf,
    ngx_mt5_credit_main_conf_t *mcf)
{
    /* the layout in the name: a module whose counters moved gets a zone
       of its own on reload (its counters start at 0, which Prometheus
       reads as a reset), never the old one's counters under new names */
    ngx_str_t  name = ngx_string("mt5_credit_status_"
                                 NGX_MT5_CREDIT_STAT_LAYOUT);

    if (sizeof(ngx_mt5_credit_stats) / sizeof(ngx_mt5_credit_stats[0])
        != NGX_MT5_CREDIT_STAT_N)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "mt5_credit: statistics table out of step");
        return NGX_ERROR;
    }

    mcf->shm_zone = ngx_shared_memory_add(cf, &name, 8 * ngx_pagesize,
                                          &ngx_mt5_credit_module);
    if (mcf->shm_zone == NULL) {
        return NGX_ERROR;
    }

    mcf->shm_zone->init = ngx_mt5_credit_status_zone_init;
    mcf->shm_zone->data = mcf;

    return NGX_OK;
}


static ngx_int_t
ngx_mt5_credit_status_zone_init(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_mt5_credit_main_conf_t  *omcf = data;

    ngx_slab_pool_t             *shpool;
    ngx_mt5_credit_main_conf_t  *mcf;

    mcf = shm_zone->data;

    if (omcf != NULL) {
        /* a reload: keep counting where the old cycle was */
        mcf->stats = omcf->stats;
        return NGX_OK;
    }

    shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    if (shm_zone->shm.exists) {
        mcf->stats = shpool->data;
        return NGX_OK;
    }

    mcf->stats = ngx_slab_calloc(shpool, sizeof(ngx_mt5_credit_stats_t));
    if (mcf->stats == NULL) {
        return NGX_ERROR;
    }

    shpool->data = mcf->stats;

    return NGX_OK;
}


void
ngx_mt5_credit_stat_add(ngx_mt5_credit_main_conf_t *mcf,
    ngx_mt5_credit_stat_e stat, ngx_atomic_int_t delta)
{
    if (mcf->stats != NULL) {
        (void) ngx_atomic_fetch_add(&mcf->stats->value[stat], delta);
    }
}


void
ngx_mt5_credit_stat_ingest(ngx_mt5_credit_main_conf_t *mcf, ngx_msec_t ms)
{
    ngx_uint_t  i, n;

    n = sizeof(ngx_mt5_credit_ingest_le) / sizeof(ngx_mt5_credit_ingest_le[0]);

    /* cumulative: every bucket at or above it counts it */
    for (i = 0; i < n; i++) {
        if (ms <= ngx_mt5_credit_ingest_le[i]) {
            ngx_mt5_credit_stat_add(mcf, NGX_MT5_CREDIT_STAT_INGEST_BUCKET + i,
                                    1);
        }
    }

    ngx_mt5_credit_stat_add(mcf, NGX_MT5_CREDIT_STAT_INGEST_BUCKET_LAST, 1);
    ngx_mt5_credit_stat_add(mcf, NGX_MT5_CREDIT_STAT_INGEST_SUM_MS,
                            (ngx_atomic_int_t) ms);
    ngx_mt5_credit_stat_add(mcf, NGX_MT5_CREDIT_STAT_INGEST_COUNT, 1);
}


ngx_int_t
ngx_mt5_credit_status_handler(ngx_http_request_t *r)
{
    size_t                       size;
    ngx_int_t                    rc;
    ngx_buf_t                   *b;
    ngx_uint_t                   i;
    ngx_chain_t                  out;
    const char                  *last;
    ngx_atomic_int_t             v;
    ngx_mt5_credit_main_conf_t  *mcf;
    ngx_mt5_credit_stat_desc_t  *d;

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    mcf = ngx_http_get_module_main_conf(r, ngx_mt5_credit_module);

    size = 0;

    for (i = 0; i < NGX_MT5_CREDIT_STAT_N; i++) {
        d = &ngx_mt5_credit_stats[i];
        size += sizeof("# HELP  \n# TYPE  \n") + 2 * ngx_strlen(d->name)
                + ngx_strlen(d->help) + ngx_strlen(d->type)
                + ngx_strlen(d->name) + (d->label ? ngx_strlen(d->label) : 0)
                + (d->suffix ? ngx_strlen(d->suffix) : 0)
                + sizeof("{} .000\n") + NGX_ATOMIC_T_LEN;
    }

    size += sizeof(NGX_MT5_CREDIT_BUILD_INFO) - 1;

    b = ngx_create_temp_buf(r->pool, size);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->last = ngx_cpymem(b->last, NGX_MT5_CREDIT_BUILD_INFO,
                         sizeof(NGX_MT5_CREDIT_BUILD_INFO) - 1);

    last = NULL;

    for (i = 0; i < NGX_MT5_CREDIT_STAT_N; i++) {
        d = &ngx_mt5_credit_stats[i];

        /* HELP and TYPE once per metric family */
        if (last == NULL || ngx_strcmp(last, d->name) != 0) {
            b->last = ngx_sprintf(b->last, "# HELP %s %s\n# TYPE %s %s\n",
                                  d->name, d->help, d->name, d->type);
            last = d->name;
        }

        v = mcf->stats ? (ngx_atomic_int_t) mcf->stats->value[i] : 0;

        /* a gauge a crashed worker left high must not read negative */
        if (v < 0) {
            v = 0;
        }

        b->last = ngx_sprintf(b->last, "%s%s", d->name,
                              d->suffix ? d->suffix : "");

        if (d->label) {
            b->last = ngx_sprintf(b->last, "{%s}", d->label);
        }

        if (d->milli) {
            b->last = ngx_sprintf(b->last, " %A.%03A\n", v / 1000, v % 1000);

        } else {
            b->last = ngx_sprintf(b->last, " %A\n", v);
        }
    }

    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = b->last - b->pos;
    ngx_str_set(&r->headers_out.content_type,
                "text/plain; version=0.0.4; charset=utf-8");
    r->headers_out.content_type_len = r->headers_out.content_type.len;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}
