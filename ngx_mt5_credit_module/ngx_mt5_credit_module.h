
/*
 * Copyright (C) mt5-credit
 *
 * ngx_mt5_credit_module: verifies provider webhooks on their raw bytes and
 * stores each one, with at most one credit intent, in PostgreSQL through
 * libpq's asynchronous API inside nginx's event loop; then wakes a worker
 * through Redis (hiredis, asynchronous, best effort).
 */


#ifndef _NGX_MT5_CREDIT_MODULE_H_INCLUDED_
#define _NGX_MT5_CREDIT_MODULE_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_mt5_credit_signature.h"


/* the console's statements, bounded on the server (ms) */
#define NGX_MT5_CREDIT_CONSOLE_TIMEOUT  10000


typedef struct ngx_mt5_credit_pg_pool_s  ngx_mt5_credit_pg_pool_t;
typedef struct ngx_mt5_credit_redis_s    ngx_mt5_credit_redis_t;


/*
 * What a pool connects to and how it is bounded.  The edge's pool is
 * filled from the mt5_credit_pg_* directives and prepares the ingest
 * statement on every connection; the console's (ngx_mt5_credit_console.c)
 * has its own login and sends one fixed statement, its values apart.
 */
typedef struct {
    const char                  **keywords;     /* libpq's, checked */
    const char                  **values;
    ngx_uint_t                    pool_size;
    ngx_uint_t                    queue_size;
    ngx_uint_t                    max_requests;
    ngx_uint_t                    batch;        /* webhooks per statement */
    ngx_msec_t                    connect_timeout;
    ngx_msec_t                    query_timeout;
    ngx_msec_t                    queue_timeout;
    ngx_msec_t                    idle_timeout;
    unsigned                      prepare:1;    /* the ingest statement */
    unsigned                      stats:1;      /* in the edge's gauges */
} ngx_mt5_credit_pg_conf_t;


/*
 * Counters and gauges kept in shared memory, so the status location shows
 * the sum over all workers and survives a reload.  The order is the order
 * of ngx_mt5_credit_stat_names[].
 */
typedef enum {
    NGX_MT5_CREDIT_STAT_RECEIVED = 0,
    NGX_MT5_CREDIT_STAT_REJECTED_METHOD,
    NGX_MT5_CREDIT_STAT_REJECTED_MISSING_HEADER,
    NGX_MT5_CREDIT_STAT_REJECTED_MALFORMED_HEADER,
    NGX_MT5_CREDIT_STAT_REJECTED_BAD_SIGNATURE,
    NGX_MT5_CREDIT_STAT_REJECTED_TOO_OLD,
    NGX_MT5_CREDIT_STAT_REJECTED_IN_FUTURE,
    NGX_MT5_CREDIT_STAT_REJECTED_MALFORMED_BODY,
    NGX_MT5_CREDIT_STAT_REJECTED_BODY_ERROR,
    NGX_MT5_CREDIT_STAT_STORED,
    NGX_MT5_CREDIT_STAT_DUPLICATE,
    NGX_MT5_CREDIT_STAT_CONFLICT,
    NGX_MT5_CREDIT_STAT_CREDIT_CREATED,
    NGX_MT5_CREDIT_STAT_CASE_OPENED,
    NGX_MT5_CREDIT_STAT_DB_ERROR,
    NGX_MT5_CREDIT_STAT_DB_TIMEOUT,
    NGX_MT5_CREDIT_STAT_DB_UNAVAILABLE,
    NGX_MT5_CREDIT_STAT_QUEUE_FULL,
    NGX_MT5_CREDIT_STAT_QUEUE_TIMEOUT,
    NGX_MT5_CREDIT_STAT_RESPONSES_200,
    NGX_MT5_CREDIT_STAT_RESPONSES_400,
    NGX_MT5_CREDIT_STAT_RESPONSES_405,
    NGX_MT5_CREDIT_STAT_RESPONSES_503,
    NGX_MT5_CREDIT_STAT_REDIS_WAKEUP,
    NGX_MT5_CREDIT_STAT_REDIS_ERROR,
    NGX_MT5_CREDIT_STAT_PG_CONNECTS,
    NGX_MT5_CREDIT_STAT_PG_STATEMENTS,
    NGX_MT5_CREDIT_STAT_PG_BATCHED,

    /* from a webhook's first byte to its answer after the COMMIT: a
       cumulative histogram, in ngx_mt5_credit_ingest_le[] buckets */
    NGX_MT5_CREDIT_STAT_INGEST_BUCKET,
    NGX_MT5_CREDIT_STAT_INGEST_BUCKET_LAST
        = NGX_MT5_CREDIT_STAT_INGEST_BUCKET + 11,     /* le="+Inf" */
    NGX_MT5_CREDIT_STAT_INGEST_SUM_MS,
    NGX_MT5_CREDIT_STAT_INGEST_COUNT,

    /* gauges: raised and lowered by the workers */
    NGX_MT5_CREDIT_STAT_PG_OPEN,
    NGX_MT5_CREDIT_STAT_PG_BUSY,
    NGX_MT5_CREDIT_STAT_PG_QUEUED,

    NGX_MT5_CREDIT_STAT_N
} ngx_mt5_credit_stat_e;


/*
 * The last refused deliveries, for "why are the provider's webhooks
 * failing": a ring in the same zone, at most NGX_MT5_CREDIT_REFUSED_RATE
 * recorded a second (a flood keeps the ring readable), never the body or
 * a signature: the time, provider, reason, size and peer address.
 */
#define NGX_MT5_CREDIT_REFUSED_RING  64
#define NGX_MT5_CREDIT_REFUSED_RATE  10

typedef struct {
    ngx_atomic_t                  seq;           /* 0: empty; odd: being
                                                    written */
    time_t                        time;
    off_t                         size;
    u_char                        provider[32];
    u_char                        reason[24];
    u_char                        addr[NGX_SOCKADDR_STRLEN];
} ngx_mt5_credit_refused_t;


/*
 * Counters per provider: slot 0 holds what belongs to no provider (the
 * PostgreSQL pool, Redis), each other slot one provider's name, claimed
 * in the zone itself, so a reload that adds, drops or reorders providers
 * keeps each provider's counters under its own name.
 */
#define NGX_MT5_CREDIT_PROVIDERS_MAX  16

typedef struct {
    ngx_atomic_t                  value[NGX_MT5_CREDIT_PROVIDERS_MAX]
                                       [NGX_MT5_CREDIT_STAT_N];
    u_char                        provider[NGX_MT5_CREDIT_PROVIDERS_MAX][33];

    ngx_atomic_t                  refused_next;
    ngx_atomic_t                  refused_second;
    ngx_atomic_t                  refused_in_second;
    ngx_mt5_credit_refused_t      refused[NGX_MT5_CREDIT_REFUSED_RING];
} ngx_mt5_credit_stats_t;


typedef struct {
    /* PostgreSQL: libpq keywords/values parsed and checked at config time */
    ngx_str_t                     pg_conninfo;
    ngx_str_t                     pg_options;     /* the user's "options" */
    const char                  **pg_keywords;
    const char                  **pg_values;
    ngx_uint_t                    pg_pool_size;
    ngx_uint_t                    pg_queue_size;
    ngx_uint_t                    pg_max_requests;
    ngx_uint_t                    pg_batch;
    ngx_msec_t                    pg_connect_timeout;
    ngx_msec_t                    pg_query_timeout;
    ngx_msec_t                    pg_queue_timeout;
    ngx_msec_t                    pg_idle_timeout;
    time_t                        retry_after;

    /* Redis: an IP literal with port, or a unix socket */
    ngx_str_t                     redis_addr;
    ngx_str_t                     redis_host;     /* NUL-terminated */
    ngx_int_t                     redis_port;     /* 0: unix socket */
    ngx_str_t                     redis_key;
    ngx_msec_t                    redis_timeout;
    ngx_uint_t                    redis_queue_max;

    ngx_shm_zone_t               *shm_zone;
    ngx_mt5_credit_stats_t       *stats;

    /* per worker, created in init_process */
    ngx_mt5_credit_pg_conf_t      pg;             /* the pool's, from above */
    ngx_mt5_credit_pg_pool_t     *pool;

    /* the console's own login and pool (mt5_credit_console_postgres) */
    const char                  **console_keywords;
    const char                  **console_values;
    ngx_str_t                     console_options; /* the conninfo's */
    ngx_array_t                  *console_locations; /* of ..._loc_t */
    ngx_mt5_credit_pg_conf_t      console_pg;
    ngx_mt5_credit_pg_pool_t     *console_pool;
    u_char                        console_key[32]; /* the actions' tokens */
    ngx_flag_t                    console_key_set; /* from a key file */
    ngx_mt5_credit_redis_t       *redis;

    /* where the first mt5_credit_webhook is, for error messages */
    ngx_str_t                     webhook_file;
    ngx_uint_t                    webhook_line;

    /* the providers of this configuration, and each one's slot in the
       zone (index 0 unused: "no provider") */
    ngx_str_t                     providers[NGX_MT5_CREDIT_PROVIDERS_MAX];
    ngx_uint_t                    nproviders;
    ngx_uint_t                    slot_of[NGX_MT5_CREDIT_PROVIDERS_MAX];

    /* this worker's outage line: one a second, with the count between */
    ngx_msec_t                    outage_logged;
    ngx_uint_t                    outage_quiet;
    /* nginx's $request_id, passed to ingest() and stored with the event */
    ngx_int_t                     request_id_index;

    unsigned                      outage_once:1;
} ngx_mt5_credit_main_conf_t;


typedef struct {
    ngx_str_t                     provider;       /* mt5_credit_webhook */
    ngx_uint_t                    provider_index; /* in mcf->providers */
    ngx_mt5_credit_sig_conf_t    *sig;            /* mt5_credit_signature */
    ngx_str_t                     secret_file;
    time_t                        tolerance;
    ngx_flag_t                    status;         /* mt5_credit_status */

    /* where the directives are, for errors found while merging */
    ngx_str_t                     conf_file;
    ngx_uint_t                    conf_line;

    /* mt5_credit_console (ngx_mt5_credit_console.c) */
    ngx_flag_t                    console;
    ngx_str_t                     console_file;
    ngx_uint_t                    console_line;

    /* mt5_credit_console_person, one variable (ngx_mt5_credit_console_conf.c) */
    ngx_http_complex_value_t     *console_person;
    ngx_str_t                     console_person_var;  /* its name */
    ngx_str_t                     console_person_file;
    ngx_uint_t                    console_person_line;

    /* mt5_credit_console_origin: of ngx_str_t */
    ngx_array_t                  *console_origins;
} ngx_mt5_credit_loc_conf_t;


/* a console location, checked once every module's part of it is merged */
typedef struct {
    ngx_mt5_credit_loc_conf_t    *lcf;
    void                        **loc_conf;     /* every module's */
    void                        **srv_conf;
} ngx_mt5_credit_console_loc_t;


extern ngx_module_t  ngx_mt5_credit_module;


/* ngx_mt5_credit_handler.c */
ngx_int_t ngx_mt5_credit_webhook_handler(ngx_http_request_t *r);
ngx_int_t ngx_mt5_credit_add_variables(ngx_conf_t *cf);

/* ngx_mt5_credit_console.c: the API's handler and the pages' headers */
ngx_int_t ngx_mt5_credit_console_init(ngx_conf_t *cf);

/* ngx_mt5_credit_console_conf.c: where the person comes from */
char *ngx_mt5_credit_console_person(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_mt5_credit_console_origin(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_mt5_credit_console_check(ngx_conf_t *cf,
    ngx_mt5_credit_main_conf_t *mcf);
ngx_int_t ngx_mt5_credit_console_add_variables(ngx_conf_t *cf);

/* ngx_mt5_credit_body.c: the request body's buffers as one copy */
ngx_int_t ngx_mt5_credit_body_assemble(ngx_chain_t *bufs, ngx_pool_t *pool,
    ngx_log_t *log, ngx_str_t *body);

/* ngx_mt5_credit_status.c */
ngx_int_t ngx_mt5_credit_status_init_zone(ngx_conf_t *cf,
    ngx_mt5_credit_main_conf_t *mcf);
ngx_int_t ngx_mt5_credit_status_handler(ngx_http_request_t *r);
void ngx_mt5_credit_stat_add(ngx_mt5_credit_main_conf_t *mcf,
    ngx_mt5_credit_stat_e stat, ngx_atomic_int_t delta);
/* the same, counted for the provider of the request's location */
void ngx_mt5_credit_stat_add_r(ngx_http_request_t *r,
    ngx_mt5_credit_stat_e stat, ngx_atomic_int_t delta);
/* a refused delivery into the ring (sampled) */
void ngx_mt5_credit_refused_add(ngx_mt5_credit_main_conf_t *mcf,
    ngx_http_request_t *r, ngx_str_t *provider, const char *reason);

/* one committed webhook, ms from its request's start to its answer */
void ngx_mt5_credit_stat_ingest(ngx_http_request_t *r, ngx_msec_t ms);

#define ngx_mt5_credit_count(mcf, stat)                                      \
    ngx_mt5_credit_stat_add(mcf, stat, 1)

#define ngx_mt5_credit_count_r(r, stat)                                      \
    ngx_mt5_credit_stat_add_r(r, stat, 1)


#endif /* _NGX_MT5_CREDIT_MODULE_H_INCLUDED_ */
