
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
static ngx_int_t ngx_mt5_credit_status_slots(ngx_shm_zone_t *shm_zone,
    ngx_mt5_credit_main_conf_t *mcf);
static ngx_uint_t ngx_mt5_credit_per_provider(ngx_uint_t stat);


/* bumped with every change to ngx_mt5_credit_stat_e */
#define NGX_MT5_CREDIT_STAT_LAYOUT  "4"


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

    { "mt5credit_pg_statements_total", "counter",
      "Statements sent to PostgreSQL: one per webhook, or one per batch.",
      NULL, NULL, 0 },

    { "mt5credit_pg_batched_total", "counter",
      "Webhooks sent in a statement with others (mt5_credit_postgres_batch)"
      ".", NULL, NULL, 0 },

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
    shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    if (omcf != NULL) {
        /* a reload: keep counting where the old cycle was */
        mcf->stats = omcf->stats;

    } else if (shm_zone->shm.exists) {
        mcf->stats = shpool->data;

    } else {
        mcf->stats = ngx_slab_calloc(shpool, sizeof(ngx_mt5_credit_stats_t));
        if (mcf->stats == NULL) {
            return NGX_ERROR;
        }

        shpool->data = mcf->stats;
    }

    return ngx_mt5_credit_status_slots(shm_zone, mcf);
}


/*
 * Each configured provider's slot in the zone, by name: its own from an
 * earlier cycle, or a free one.  Configuration is read by the master
 * alone, so the names need no lock.
 */
static ngx_int_t
ngx_mt5_credit_status_slots(ngx_shm_zone_t *shm_zone,
    ngx_mt5_credit_main_conf_t *mcf)
{
    ngx_uint_t               i, k, free_slot;
    ngx_str_t               *p;
    ngx_mt5_credit_stats_t  *st = mcf->stats;

    for (i = 1; i <= mcf->nproviders; i++) {
        p = &mcf->providers[i];
        free_slot = 0;

        for (k = 1; k < NGX_MT5_CREDIT_PROVIDERS_MAX; k++) {
            if (st->provider[k][0] == '\0') {
                if (free_slot == 0) {
                    free_slot = k;
                }
                continue;
            }
            if (ngx_strlen(st->provider[k]) == p->len
                && ngx_strncmp(st->provider[k], p->data, p->len) == 0)
            {
                break;
            }
        }

        if (k == NGX_MT5_CREDIT_PROVIDERS_MAX) {
            if (free_slot == 0) {
                /* every slot was claimed by providers of earlier cycles:
                   this one's count with no provider until a restart */
                ngx_log_error(NGX_LOG_WARN, shm_zone->shm.log, 0,
                              "mt5_credit: no counter slot left for "
                              "provider \"%V\"; restart to free them", p);
                mcf->slot_of[i] = 0;
                continue;
            }
            k = free_slot;
            ngx_memcpy(st->provider[k], p->data, p->len);
            st->provider[k][p->len] = '\0';
        }

        mcf->slot_of[i] = k;
    }

    return NGX_OK;
}


void
ngx_mt5_credit_stat_add(ngx_mt5_credit_main_conf_t *mcf,
    ngx_mt5_credit_stat_e stat, ngx_atomic_int_t delta)
{
    if (mcf->stats != NULL) {
        (void) ngx_atomic_fetch_add(&mcf->stats->value[0][stat], delta);
    }
}


void
ngx_mt5_credit_stat_add_r(ngx_http_request_t *r, ngx_mt5_credit_stat_e stat,
    ngx_atomic_int_t delta)
{
    ngx_uint_t                   slot;
    ngx_mt5_credit_loc_conf_t   *lcf;
    ngx_mt5_credit_main_conf_t  *mcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_mt5_credit_module);
    lcf = ngx_http_get_module_loc_conf(r, ngx_mt5_credit_module);

    if (mcf->stats == NULL) {
        return;
    }

    slot = mcf->slot_of[lcf->provider_index];
    (void) ngx_atomic_fetch_add(&mcf->stats->value[slot][stat], delta);
}


void
ngx_mt5_credit_stat_ingest(ngx_http_request_t *r, ngx_msec_t ms)
{
    ngx_uint_t  i, n;

    n = sizeof(ngx_mt5_credit_ingest_le) / sizeof(ngx_mt5_credit_ingest_le[0]);

    /* cumulative: every bucket at or above it counts it */
    for (i = 0; i < n; i++) {
        if (ms <= ngx_mt5_credit_ingest_le[i]) {
            ngx_mt5_credit_stat_add_r(r, NGX_MT5_CREDIT_STAT_INGEST_BUCKET + i,
                                      1);
        }
    }

    ngx_mt5_credit_stat_add_r(r, NGX_MT5_CREDIT_STAT_INGEST_BUCKET_LAST, 1);
    ngx_mt5_credit_stat_add_r(r, NGX_MT5_CREDIT_STAT_INGEST_SUM_MS,
                              (ngx_atomic_int_t) ms);
    ngx_mt5_credit_stat_add_r(r, NGX_MT5_CREDIT_STAT_INGEST_COUNT, 1);
}


void
ngx_mt5_credit_refused_add(ngx_mt5_credit_main_conf_t *mcf,
    ngx_http_request_t *r, ngx_str_t *provider, const char *reason)
{
    time_t                     now;
    ngx_atomic_uint_t          n, seq;
    ngx_mt5_credit_stats_t    *st;
    ngx_mt5_credit_refused_t  *e;

    st = mcf->stats;
    if (st == NULL) {
        return;
    }

    /* sampled: at most NGX_MT5_CREDIT_REFUSED_RATE in any one second */
    now = ngx_time();
    if ((time_t) st->refused_second != now) {
        st->refused_second = (ngx_atomic_t) now;
        st->refused_in_second = 0;
    }
    if (ngx_atomic_fetch_add(&st->refused_in_second, 1)
        >= NGX_MT5_CREDIT_REFUSED_RATE)
    {
        return;
    }

    n = ngx_atomic_fetch_add(&st->refused_next, 1);
    e = &st->refused[n % NGX_MT5_CREDIT_REFUSED_RING];

    /* odd while written: a reader skips it (a torn entry is never shown) */
    seq = 2 * n + 1;
    e->seq = seq;
    ngx_memory_barrier();

    e->time = now;
    e->size = r->headers_in.content_length_n > 0
              ? r->headers_in.content_length_n : 0;
    ngx_cpystrn(e->provider, provider->data,
                ngx_min(provider->len + 1, sizeof(e->provider)));
    ngx_cpystrn(e->reason, (u_char *) reason, sizeof(e->reason));
    ngx_cpystrn(e->addr, r->connection->addr_text.data,
                ngx_min(r->connection->addr_text.len + 1, sizeof(e->addr)));

    ngx_memory_barrier();
    e->seq = seq + 1;
}


/* ?refused: the ring as a JSON array, newest first */
static ngx_int_t
ngx_mt5_credit_refused_json(ngx_http_request_t *r,
    ngx_mt5_credit_main_conf_t *mcf, ngx_buf_t **out)
{
    size_t                     size;
    ngx_buf_t                 *b;
    ngx_uint_t                 i, first;
    ngx_atomic_uint_t          n, seq;
    ngx_tm_t                   tm;
    ngx_mt5_credit_stats_t    *st;
    ngx_mt5_credit_refused_t   e, *ep;

    size = sizeof("[\n]\n") + NGX_MT5_CREDIT_REFUSED_RING
           * (sizeof("{\"time\":\"\",\"provider\":\"\",\"reason\":\"\","
                     "\"bytes\":,\"from\":\"\"},\n")
              + sizeof("1970-09-28T12:00:00+00:00") + 32 + 24 + NGX_OFF_T_LEN
              + NGX_SOCKADDR_STRLEN);

    b = ngx_create_temp_buf(r->pool, size);
    if (b == NULL) {
        return NGX_ERROR;
    }

    st = mcf->stats;
    b->last = ngx_cpymem(b->last, "[", 1);
    first = 1;

    n = st != NULL ? st->refused_next : 0;

    for (i = 0; st != NULL && i < NGX_MT5_CREDIT_REFUSED_RING && i < n; i++) {
        ep = &st->refused[(n - 1 - i) % NGX_MT5_CREDIT_REFUSED_RING];

        /* a sequence lock: the copy counts only if no writer was in it */
        seq = ep->seq;
        ngx_memory_barrier();
        e = *ep;
        ngx_memory_barrier();

        if (seq == 0 || (seq & 1) || seq != ep->seq) {
            continue;               /* being written, or overwritten */
        }

        e.provider[sizeof(e.provider) - 1] = '\0';
        e.reason[sizeof(e.reason) - 1] = '\0';
        e.addr[sizeof(e.addr) - 1] = '\0';

        ngx_gmtime(e.time, &tm);
        b->last = ngx_sprintf(b->last, "%s\n{\"time\":\"%4d-%02d-%02dT"
                              "%02d:%02d:%02dZ", first ? "" : ",",
                              tm.ngx_tm_year, tm.ngx_tm_mon, tm.ngx_tm_mday,
                              tm.ngx_tm_hour, tm.ngx_tm_min, tm.ngx_tm_sec);
        b->last = ngx_sprintf(b->last, "\",\"provider\":\"%s\","
                              "\"reason\":\"%s\",\"bytes\":%O,"
                              "\"from\":\"%s\"}", e.provider, e.reason,
                              e.size, e.addr);
        first = 0;
    }

    b->last = ngx_cpymem(b->last, "\n]\n", 3);
    *out = b;

    return NGX_OK;
}


/* the counters of one webhook provider, or of none (the pool, Redis) */
static ngx_uint_t
ngx_mt5_credit_per_provider(ngx_uint_t stat)
{
    return stat < NGX_MT5_CREDIT_STAT_REDIS_WAKEUP
           || (stat >= NGX_MT5_CREDIT_STAT_INGEST_BUCKET
               && stat <= NGX_MT5_CREDIT_STAT_INGEST_COUNT);
}


/* one sample: name[suffix]{[provider="p",]label} value */
static u_char *
ngx_mt5_credit_status_sample(u_char *pos, ngx_mt5_credit_main_conf_t *mcf,
    ngx_mt5_credit_stat_desc_t *d, ngx_uint_t stat, ngx_uint_t slot,
    ngx_str_t *provider)
{
    ngx_atomic_int_t  v;

    v = mcf->stats ? (ngx_atomic_int_t) mcf->stats->value[slot][stat] : 0;

    /* a gauge a crashed worker left high must not read negative */
    if (v < 0) {
        v = 0;
    }

    pos = ngx_sprintf(pos, "%s%s", d->name, d->suffix ? d->suffix : "");

    if (provider != NULL && d->label != NULL) {
        pos = ngx_sprintf(pos, "{provider=\"%V\",%s}", provider, d->label);

    } else if (provider != NULL) {
        pos = ngx_sprintf(pos, "{provider=\"%V\"}", provider);

    } else if (d->label != NULL) {
        pos = ngx_sprintf(pos, "{%s}", d->label);
    }

    if (d->milli) {
        return ngx_sprintf(pos, " %A.%03A\n", v / 1000, v % 1000);
    }

    return ngx_sprintf(pos, " %A\n", v);
}


ngx_int_t
ngx_mt5_credit_status_handler(ngx_http_request_t *r)
{
    size_t                       size;
    ngx_int_t                    rc;
    ngx_buf_t                   *b;
    ngx_uint_t                   i, p;
    ngx_chain_t                  out;
    const char                  *last;
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

    if (r->args.len == sizeof("refused") - 1
        && ngx_strncmp(r->args.data, "refused", r->args.len) == 0)
    {
        if (ngx_mt5_credit_refused_json(r, mcf, &b) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        ngx_str_set(&r->headers_out.content_type, "application/json");
        goto send;
    }

    size = 0;

    for (i = 0; i < NGX_MT5_CREDIT_STAT_N; i++) {
        d = &ngx_mt5_credit_stats[i];
        size += sizeof("# HELP  \n# TYPE  \n") + 2 * ngx_strlen(d->name)
                + ngx_strlen(d->help) + ngx_strlen(d->type)
                + (mcf->nproviders + 1)
                  * (ngx_strlen(d->name) + (d->label ? ngx_strlen(d->label) : 0)
                     + (d->suffix ? ngx_strlen(d->suffix) : 0)
                     + sizeof("{provider=\"\",} .000\n") + 32
                     + NGX_ATOMIC_T_LEN);
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

        if (!ngx_mt5_credit_per_provider(i)) {
            b->last = ngx_mt5_credit_status_sample(b->last, mcf, d, i, 0,
                                                   NULL);
            continue;
        }

        /* a webhook's counters: one series per configured provider */
        for (p = 1; p <= mcf->nproviders; p++) {
            if (mcf->slot_of[p] != 0) {
                b->last = ngx_mt5_credit_status_sample(b->last, mcf, d, i,
                                                       mcf->slot_of[p],
                                                       &mcf->providers[p]);
            }
        }
    }

    ngx_str_set(&r->headers_out.content_type,
                "text/plain; version=0.0.4; charset=utf-8");

send:

    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = b->last - b->pos;
    r->headers_out.content_type_len = r->headers_out.content_type.len;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}
