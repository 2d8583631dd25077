
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
    const char                   *name;
    const char                   *type;
    const char                   *help;
    const char                   *label;   /* NULL, or name="value" */
} ngx_mt5_credit_stat_desc_t;


static ngx_int_t ngx_mt5_credit_status_zone_init(ngx_shm_zone_t *shm_zone,
    void *data);


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

#define NGX_MT5_CREDIT_DB_FAILURES                                           \
    "mt5credit_db_failures_total", "counter",                                \
    "Webhooks answered 503 because of PostgreSQL, by cause."

/* in the order of ngx_mt5_credit_stat_e */
static ngx_mt5_credit_stat_desc_t  ngx_mt5_credit_stats[] = {

    { "mt5credit_webhooks_received_total", "counter",
      "Requests that reached a mt5_credit_webhook location.", NULL },

    { NGX_MT5_CREDIT_REJECTED, "reason=\"method\"" },
    { NGX_MT5_CREDIT_REJECTED, "reason=\"missing_header\"" },
    { NGX_MT5_CREDIT_REJECTED, "reason=\"malformed_header\"" },
    { NGX_MT5_CREDIT_REJECTED, "reason=\"bad_signature\"" },
    { NGX_MT5_CREDIT_REJECTED, "reason=\"timestamp_too_old\"" },
    { NGX_MT5_CREDIT_REJECTED, "reason=\"timestamp_in_future\"" },
    { NGX_MT5_CREDIT_REJECTED, "reason=\"malformed_body\"" },
    { NGX_MT5_CREDIT_REJECTED, "reason=\"body_error\"" },

    { NGX_MT5_CREDIT_INGESTED, "outcome=\"stored\"" },
    { NGX_MT5_CREDIT_INGESTED, "outcome=\"duplicate\"" },
    { NGX_MT5_CREDIT_INGESTED, "outcome=\"conflict\"" },
    { NGX_MT5_CREDIT_INGESTED, "outcome=\"credit_created\"" },
    { NGX_MT5_CREDIT_INGESTED, "outcome=\"case_opened\"" },

    { NGX_MT5_CREDIT_DB_FAILURES, "cause=\"error\"" },
    { NGX_MT5_CREDIT_DB_FAILURES, "cause=\"timeout\"" },
    { NGX_MT5_CREDIT_DB_FAILURES, "cause=\"unavailable\"" },
    { NGX_MT5_CREDIT_DB_FAILURES, "cause=\"queue_full\"" },
    { NGX_MT5_CREDIT_DB_FAILURES, "cause=\"queue_timeout\"" },

    { "mt5credit_responses_503_total", "counter",
      "Webhooks answered 503 with Retry-After (the provider retries).",
      NULL },

    { "mt5credit_redis_wakeups_total", "counter",
      "Wake-ups Redis acknowledged.", NULL },

    { "mt5credit_redis_errors_total", "counter",
      "Wake-ups not delivered (Redis down, slow or refusing); the work "
      "waits for the workers' poll.", NULL },

    { "mt5credit_pg_connects_total", "counter",
      "PostgreSQL connections started.", NULL },

    { "mt5credit_pg_connections", "gauge",
      "PostgreSQL connections open or opening, all workers.", NULL },

    { "mt5credit_pg_connections_busy", "gauge",
      "PostgreSQL connections running a statement, all workers.", NULL },

    { "mt5credit_pg_queue", "gauge",
      "Webhooks waiting for a free PostgreSQL connection, all workers.",
      NULL }
};


ngx_int_t
ngx_mt5_credit_status_init_zone(ngx_conf_t *cf,
    ngx_mt5_credit_main_conf_t *mcf)
{
    ngx_str_t  name = ngx_string("mt5_credit_status");

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
                + sizeof("{} \n") + NGX_ATOMIC_T_LEN;
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

        if (d->label) {
            b->last = ngx_sprintf(b->last, "%s{%s} %A\n", d->name, d->label,
                                  v);

        } else {
            b->last = ngx_sprintf(b->last, "%s %A\n", d->name, v);
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
