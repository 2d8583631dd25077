
/*
 * Copyright (C) mt5-credit
 *
 * Directives, configuration, and the worker lifecycle.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <hiredis/hiredis.h>
#include <libpq-fe.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include "ngx_mt5_credit_module.h"
#include "ngx_mt5_credit_pg.h"
#include "ngx_mt5_credit_redis.h"


#define NGX_MT5_CREDIT_MAX_SECRET_FILE  65536


static void *ngx_mt5_credit_create_main_conf(ngx_conf_t *cf);
static char *ngx_mt5_credit_init_main_conf(ngx_conf_t *cf, void *conf);
static void *ngx_mt5_credit_create_loc_conf(ngx_conf_t *cf);
static char *ngx_mt5_credit_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static ngx_int_t ngx_mt5_credit_postconfiguration(ngx_conf_t *cf);
static ngx_int_t ngx_mt5_credit_init_module(ngx_cycle_t *cycle);
static ngx_int_t ngx_mt5_credit_init_process(ngx_cycle_t *cycle);
static void ngx_mt5_credit_exit_process(ngx_cycle_t *cycle);

static char *ngx_mt5_credit_postgres(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_mt5_credit_merge_console(ngx_conf_t *cf,
    ngx_mt5_credit_loc_conf_t *prev, ngx_mt5_credit_loc_conf_t *conf);
static char *ngx_mt5_credit_console_postgres(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
static char *ngx_mt5_credit_console(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_mt5_credit_console_key_file(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
static void ngx_mt5_credit_console_key_wipe(void *data);
static char *ngx_mt5_credit_conninfo(ngx_conf_t *cf, ngx_str_t *value,
    const char *directive, const char *appname, const char ***keywords,
    const char ***values, ngx_str_t *options);
static char *ngx_mt5_credit_check_pg_host(ngx_conf_t *cf,
    const char *directive, const char *host,
    const char *hostaddr);
static char *ngx_mt5_credit_pg_options(ngx_conf_t *cf,
    ngx_mt5_credit_main_conf_t *mcf);
static char *ngx_mt5_credit_console_options(ngx_conf_t *cf,
    ngx_mt5_credit_main_conf_t *mcf);
static char *ngx_mt5_credit_add_options(ngx_conf_t *cf, const char **keywords,
    const char **values, ngx_str_t *user, u_char *ours);
static char *ngx_mt5_credit_redis(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_mt5_credit_webhook(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_mt5_credit_signature(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_mt5_credit_status(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_mt5_credit_load_secrets(ngx_conf_t *cf,
    ngx_mt5_credit_loc_conf_t *lcf);
static void ngx_mt5_credit_cleanse_keys(void *data);
static void ngx_mt5_credit_secret_mode(ngx_log_t *log, const char *directive,
    ngx_str_t *path, ngx_file_info_t *fi);
static char *ngx_mt5_credit_check_key(ngx_conf_t *cf, void *post,
    void *data);
static char *ngx_mt5_credit_check_timeout(ngx_conf_t *cf, void *post,
    void *data);


static ngx_conf_num_bounds_t  ngx_mt5_credit_pool_size_bounds = {
    ngx_conf_check_num_bounds, 1, 1024
};

static ngx_conf_num_bounds_t  ngx_mt5_credit_queue_size_bounds = {
    ngx_conf_check_num_bounds, 1, 65536
};

static ngx_conf_num_bounds_t  ngx_mt5_credit_max_requests_bounds = {
    ngx_conf_check_num_bounds, 1, 100000000
};

static ngx_conf_num_bounds_t  ngx_mt5_credit_batch_bounds = {
    ngx_conf_check_num_bounds, 1, NGX_MT5_CREDIT_PG_BATCH_MAX
};

static ngx_conf_post_t  ngx_mt5_credit_key_post = {
    ngx_mt5_credit_check_key
};

/* a timeout of 0 would make every webhook a 503 */
static ngx_conf_post_t  ngx_mt5_credit_timeout_post = {
    ngx_mt5_credit_check_timeout
};


static ngx_command_t  ngx_mt5_credit_commands[] = {

    { ngx_string("mt5_credit_postgres"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_mt5_credit_postgres,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mt5_credit_postgres_pool_size"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_mt5_credit_main_conf_t, pg_pool_size),
      &ngx_mt5_credit_pool_size_bounds },

    { ngx_string("mt5_credit_postgres_queue"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_mt5_credit_main_conf_t, pg_queue_size),
      &ngx_mt5_credit_queue_size_bounds },

    { ngx_string("mt5_credit_postgres_queue_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_mt5_credit_main_conf_t, pg_queue_timeout),
      &ngx_mt5_credit_timeout_post },

    { ngx_string("mt5_credit_postgres_connect_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_mt5_credit_main_conf_t, pg_connect_timeout),
      &ngx_mt5_credit_timeout_post },

    { ngx_string("mt5_credit_postgres_query_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_mt5_credit_main_conf_t, pg_query_timeout),
      &ngx_mt5_credit_timeout_post },

    { ngx_string("mt5_credit_postgres_idle_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_mt5_credit_main_conf_t, pg_idle_timeout),
      &ngx_mt5_credit_timeout_post },

    { ngx_string("mt5_credit_postgres_max_requests"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_mt5_credit_main_conf_t, pg_max_requests),
      &ngx_mt5_credit_max_requests_bounds },

    { ngx_string("mt5_credit_postgres_batch"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_mt5_credit_main_conf_t, pg_batch),
      &ngx_mt5_credit_batch_bounds },

    { ngx_string("mt5_credit_retry_after"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_sec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_mt5_credit_main_conf_t, retry_after),
      NULL },

    { ngx_string("mt5_credit_redis"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_mt5_credit_redis,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mt5_credit_redis_key"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_mt5_credit_main_conf_t, redis_key),
      &ngx_mt5_credit_key_post },

    { ngx_string("mt5_credit_redis_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_mt5_credit_main_conf_t, redis_timeout),
      &ngx_mt5_credit_timeout_post },

    { ngx_string("mt5_credit_webhook"),
      NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_mt5_credit_webhook,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mt5_credit_signature"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF
                        |NGX_CONF_1MORE,
      ngx_mt5_credit_signature,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mt5_credit_secret_file"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_mt5_credit_loc_conf_t, secret_file),
      NULL },

    { ngx_string("mt5_credit_tolerance"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_sec_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_mt5_credit_loc_conf_t, tolerance),
      NULL },

    { ngx_string("mt5_credit_status"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_mt5_credit_status,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mt5_credit_console_postgres"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_mt5_credit_console_postgres,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mt5_credit_console_key_file"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_mt5_credit_console_key_file,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mt5_credit_console"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_mt5_credit_console,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mt5_credit_console_person"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_mt5_credit_console_person,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("mt5_credit_console_origin"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_mt5_credit_console_origin,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_mt5_credit_module_ctx = {
    ngx_mt5_credit_add_variables,          /* preconfiguration */
    ngx_mt5_credit_postconfiguration,      /* postconfiguration */

    ngx_mt5_credit_create_main_conf,       /* create main configuration */
    ngx_mt5_credit_init_main_conf,         /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    ngx_mt5_credit_create_loc_conf,        /* create location configuration */
    ngx_mt5_credit_merge_loc_conf          /* merge location configuration */
};


ngx_module_t  ngx_mt5_credit_module = {
    NGX_MODULE_V1,
    &ngx_mt5_credit_module_ctx,            /* module context */
    ngx_mt5_credit_commands,               /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    ngx_mt5_credit_init_module,            /* init module */
    ngx_mt5_credit_init_process,           /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_mt5_credit_exit_process,           /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static void *
ngx_mt5_credit_create_main_conf(ngx_conf_t *cf)
{
    ngx_mt5_credit_main_conf_t  *mcf;

    mcf = ngx_pcalloc(cf->pool, sizeof(ngx_mt5_credit_main_conf_t));
    if (mcf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     mcf->pg_conninfo = { 0, NULL };
     *     mcf->pg_keywords = NULL;
     *     mcf->redis_addr = { 0, NULL };
     *     mcf->redis_key = { 0, NULL };
     *     mcf->shm_zone = NULL;
     *     mcf->pool = NULL;
     *     mcf->redis = NULL;
     *     mcf->webhook_line = 0;
     */

    mcf->pg_pool_size = NGX_CONF_UNSET_UINT;
    mcf->pg_queue_size = NGX_CONF_UNSET_UINT;
    mcf->pg_max_requests = NGX_CONF_UNSET_UINT;
    mcf->pg_batch = NGX_CONF_UNSET_UINT;
    mcf->pg_connect_timeout = NGX_CONF_UNSET_MSEC;
    mcf->pg_query_timeout = NGX_CONF_UNSET_MSEC;
    mcf->pg_queue_timeout = NGX_CONF_UNSET_MSEC;
    mcf->pg_idle_timeout = NGX_CONF_UNSET_MSEC;
    mcf->retry_after = NGX_CONF_UNSET;
    mcf->redis_timeout = NGX_CONF_UNSET_MSEC;
    mcf->redis_queue_max = NGX_CONF_UNSET_UINT;

    return mcf;
}


static char *
ngx_mt5_credit_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_mt5_credit_main_conf_t *mcf = conf;

    ngx_conf_init_uint_value(mcf->pg_pool_size, 4);
    ngx_conf_init_uint_value(mcf->pg_queue_size, 256);
    ngx_conf_init_uint_value(mcf->pg_max_requests, 100000);
    ngx_conf_init_uint_value(mcf->pg_batch, 16);
    ngx_conf_init_msec_value(mcf->pg_connect_timeout, 5000);
    ngx_conf_init_msec_value(mcf->pg_query_timeout, 10000);
    ngx_conf_init_msec_value(mcf->pg_queue_timeout, 5000);
    ngx_conf_init_msec_value(mcf->pg_idle_timeout, 60000);
    ngx_conf_init_value(mcf->retry_after, 5);
    ngx_conf_init_msec_value(mcf->redis_timeout, 1000);
    ngx_conf_init_uint_value(mcf->redis_queue_max, 1024);

    if (mcf->redis_key.data == NULL) {
        ngx_str_set(&mcf->redis_key, "mt5credit:wake");
    }

    if (mcf->pg_keywords != NULL
        && ngx_mt5_credit_pg_options(cf, mcf) != NGX_CONF_OK)
    {
        return NGX_CONF_ERROR;
    }

    if (mcf->console_keywords != NULL
        && ngx_mt5_credit_console_options(cf, mcf) != NGX_CONF_OK)
    {
        return NGX_CONF_ERROR;
    }

    if (mcf->webhook_line && mcf->pg_keywords == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"mt5_credit_webhook\" in %V:%ui needs "
                      "\"mt5_credit_postgres\" at http level",
                      &mcf->webhook_file, mcf->webhook_line);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static void *
ngx_mt5_credit_create_loc_conf(ngx_conf_t *cf)
{
    ngx_mt5_credit_loc_conf_t  *lcf;

    lcf = ngx_pcalloc(cf->pool, sizeof(ngx_mt5_credit_loc_conf_t));
    if (lcf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     lcf->provider = { 0, NULL };
     *     lcf->secret_file = { 0, NULL };
     *     lcf->conf_file = { 0, NULL };
     *     lcf->conf_line = 0;
     */

    lcf->sig = NGX_CONF_UNSET_PTR;
    lcf->tolerance = NGX_CONF_UNSET;
    lcf->status = NGX_CONF_UNSET;
    lcf->console = NGX_CONF_UNSET;
    lcf->console_person = NULL;

    return lcf;
}


static char *
ngx_mt5_credit_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_mt5_credit_loc_conf_t *prev = parent;
    ngx_mt5_credit_loc_conf_t *conf = child;

    ngx_http_core_srv_conf_t  *cscf;
    ngx_http_core_loc_conf_t  *clcf, *sclcf;

    /*
     * An "if" in a webhook location keeps the location's handler but
     * gets configuration of its own, without the provider: every
     * delivery would fail.  (limit_except only refuses methods.)
     */
    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);

    if (prev->provider.len != 0 && conf->provider.len == 0
        && clcf->noname && !clcf->lmt_excpt)
    {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"if\" inside the \"mt5_credit_webhook\" location "
                      "of %V:%ui is not supported: the block would lose "
                      "the provider; use a location of its own",
                      &prev->conf_file, prev->conf_line);
        return NGX_CONF_ERROR;
    }

    ngx_conf_merge_ptr_value(conf->sig, prev->sig, NULL);
    ngx_conf_merge_str_value(conf->secret_file, prev->secret_file, "");
    ngx_conf_merge_sec_value(conf->tolerance, prev->tolerance, 300);
    ngx_conf_merge_value(conf->status, prev->status, 0);

    if (ngx_mt5_credit_merge_console(cf, prev, conf) != NGX_CONF_OK) {
        return NGX_CONF_ERROR;
    }

    if (conf->provider.len == 0) {
        return NGX_CONF_OK;
    }

    if (conf->sig == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"mt5_credit_webhook\" in %V:%ui needs "
                      "\"mt5_credit_signature\"",
                      &conf->conf_file, conf->conf_line);
        return NGX_CONF_ERROR;
    }

    if (conf->secret_file.len == 0) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"mt5_credit_webhook\" in %V:%ui needs "
                      "\"mt5_credit_secret_file\"",
                      &conf->conf_file, conf->conf_line);
        return NGX_CONF_ERROR;
    }

    /* each webhook location gets its own copy: the keys live in it */
    if (conf->sig == prev->sig) {
        conf->sig = ngx_pcalloc(cf->pool, sizeof(ngx_mt5_credit_sig_conf_t));
        if (conf->sig == NULL) {
            return NGX_CONF_ERROR;
        }

        ngx_memcpy(conf->sig, prev->sig, sizeof(ngx_mt5_credit_sig_conf_t));
    }

    conf->sig->tolerance = conf->tolerance;

    /*
     * At info, nginx logs the start of a header line too long for its
     * buffers ("client sent too long header line", in the server's log:
     * no location is chosen yet): for a webhook, the signature header.
     * Said at nginx -t; docs/nginx-directives.md.
     */
    cscf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_core_module);
    sclcf = cscf->ctx->loc_conf[ngx_http_core_module.ctx_index];

    if ((sclcf->error_log != NULL
         && sclcf->error_log->log_level >= NGX_LOG_INFO)
        || (clcf->error_log != NULL
            && clcf->error_log->log_level >= NGX_LOG_INFO))
    {
        ngx_log_error(NGX_LOG_WARN, cf->log, 0,
                      "\"mt5_credit_webhook\" in %V:%ui logs at info or "
                      "debug: nginx then logs the start of an oversize "
                      "header line, which may be a signature; use "
                      "\"error_log ... notice\" in its server",
                      &conf->conf_file, conf->conf_line);
    }

    return ngx_mt5_credit_load_secrets(cf, conf);
}


/*
 * A console location needs the console's own pool at http level; where
 * its person comes from and its origins are checked once every module's
 * configuration of it is merged (ngx_mt5_credit_console_check()).
 */
static char *
ngx_mt5_credit_merge_console(ngx_conf_t *cf, ngx_mt5_credit_loc_conf_t *prev,
    ngx_mt5_credit_loc_conf_t *conf)
{
    ngx_http_conf_ctx_t           *ctx;
    ngx_mt5_credit_main_conf_t    *mcf;
    ngx_mt5_credit_console_loc_t  *loc;

    ngx_conf_merge_value(conf->console, prev->console, 0);

    if (conf->console_person == NULL) {
        conf->console_person = prev->console_person;
        conf->console_person_var = prev->console_person_var;
        conf->console_person_file = prev->console_person_file;
        conf->console_person_line = prev->console_person_line;
    }

    ngx_conf_merge_ptr_value(conf->console_origins, prev->console_origins,
                             NULL);

    if (!conf->console) {
        return NGX_CONF_OK;
    }

    if (conf->console_file.len == 0) {
        conf->console_file = prev->console_file;
        conf->console_line = prev->console_line;
    }

    /* whichever came first in the block: one location, one purpose */
    if (conf->provider.len != 0 || conf->status == 1) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"mt5_credit_console\" in %V:%ui cannot share a "
                      "location with a webhook or the status",
                      &conf->console_file, conf->console_line);
        return NGX_CONF_ERROR;
    }

    mcf = ngx_http_conf_get_module_main_conf(cf, ngx_mt5_credit_module);

    if (mcf->console_keywords == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"mt5_credit_console\" in %V:%ui needs "
                      "\"mt5_credit_console_postgres\" at http level",
                      &conf->console_file, conf->console_line);
        return NGX_CONF_ERROR;
    }

    if (mcf->console_locations == NULL) {
        mcf->console_locations = ngx_array_create(cf->pool, 4,
                                     sizeof(ngx_mt5_credit_console_loc_t));
        if (mcf->console_locations == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    loc = ngx_array_push(mcf->console_locations);
    if (loc == NULL) {
        return NGX_CONF_ERROR;
    }

    /* nginx merges a location with cf->ctx holding its configurations */
    ctx = cf->ctx;
    loc->lcf = conf;
    loc->loc_conf = ctx->loc_conf;
    loc->srv_conf = ctx->srv_conf;

    return NGX_CONF_OK;
}


/*
 * mt5_credit_console_key_file: the key of the actions' tokens from a file
 * every nginx host serving the console shares (at least 32 bytes; the key
 * is their SHA-256), so a page's token holds on any of them.  Wiped from
 * memory with the configuration.
 */
static char *
ngx_mt5_credit_console_key_file(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_mt5_credit_main_conf_t *mcf = conf;

    u_char              *buf, *end;
    ssize_t              n;
    ngx_fd_t             fd;
    ngx_str_t           *value, path;
    ngx_file_info_t      fi;
    ngx_pool_cleanup_t  *cln;

    if (mcf->console_key_set) {
        return "is duplicate";
    }

    value = cf->args->elts;
    path = value[1];

    if (ngx_conf_full_name(cf->cycle, &path, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    fd = ngx_open_file(path.data, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);
    if (fd == NGX_INVALID_FILE) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           "mt5_credit_console_key_file \"%V\" cannot be "
                           "opened", &path);
        return NGX_CONF_ERROR;
    }

    buf = NULL;
    n = -1;

    if (ngx_fd_info(fd, &fi) != NGX_FILE_ERROR
        && ngx_file_size(&fi) <= 4096)
    {
        ngx_mt5_credit_secret_mode(cf->log, "mt5_credit_console_key_file",
                                   &path, &fi);

        buf = ngx_pnalloc(cf->temp_pool, (size_t) ngx_file_size(&fi) + 1);
        if (buf != NULL) {
            n = ngx_read_fd(fd, buf, (size_t) ngx_file_size(&fi));
        }
    }

    ngx_close_file(fd);

    if (buf == NULL || n < 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "mt5_credit_console_key_file \"%V\" is not a "
                           "readable file of at most 4096 bytes", &path);
        return NGX_CONF_ERROR;
    }

    /* a trailing newline is not part of the key */
    end = buf + n;
    while (end > buf && (end[-1] == '\n' || end[-1] == '\r')) {
        end--;
    }

    if (end - buf < 32) {
        ngx_explicit_memzero(buf, n);
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "mt5_credit_console_key_file \"%V\" holds %z "
                           "bytes: at least 32 are needed (head -c 48 "
                           "/dev/urandom | base64 makes one)",
                           &path, (size_t) (end - buf));
        return NGX_CONF_ERROR;
    }

    (void) SHA256(buf, end - buf, mcf->console_key);
    ngx_explicit_memzero(buf, n);
    mcf->console_key_set = 1;

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return NGX_CONF_ERROR;
    }

    cln->handler = ngx_mt5_credit_console_key_wipe;
    cln->data = mcf;

    return NGX_CONF_OK;
}


static void
ngx_mt5_credit_console_key_wipe(void *data)
{
    ngx_mt5_credit_main_conf_t *mcf = data;

    ngx_explicit_memzero(mcf->console_key, sizeof(mcf->console_key));
}


/* mt5_credit_console: where it is, for the errors found while merging */
static char *
ngx_mt5_credit_console(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_mt5_credit_loc_conf_t *lcf = conf;

    if (lcf->console != NGX_CONF_UNSET) {
        return "is duplicate";
    }

    if (lcf->provider.len != 0 || lcf->status == 1) {
        return "cannot share a location with a webhook or the status";
    }

    lcf->console = 1;
    lcf->console_file = cf->conf_file->file.name;
    lcf->console_line = cf->conf_file->line;

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_mt5_credit_postconfiguration(ngx_conf_t *cf)
{
    ngx_mt5_credit_main_conf_t  *mcf;

    static ngx_str_t  request_id = ngx_string("request_id");

    mcf = ngx_http_conf_get_module_main_conf(cf, ngx_mt5_credit_module);

    mcf->request_id_index = ngx_http_get_variable_index(cf, &request_id);
    if (mcf->request_id_index == NGX_ERROR) {
        return NGX_ERROR;
    }

    if (ngx_mt5_credit_console_init(cf) != NGX_OK
        || ngx_mt5_credit_console_check(cf, mcf) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_mt5_credit_status_init_zone(cf, mcf);
}


/*
 * Once per start and per reload, in the master, at the level nginx logs
 * its own version: which module, from which commit, on which libraries
 * (libpq and OpenSSL as loaded; hiredis as built against, it has no
 * run-time version).
 */
static ngx_int_t
ngx_mt5_credit_init_module(ngx_cycle_t *cycle)
{
    int  pq;

    pq = PQlibVersion();

    ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
                  "mt5_credit module " NGX_MT5_CREDIT_VERSION
                  " (commit " NGX_MT5_CREDIT_COMMIT "), libpq %d.%d, "
                  "hiredis %d.%d.%d, %s", pq / 10000, pq % 10000,
                  HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH,
                  OpenSSL_version(OPENSSL_VERSION));

    return NGX_OK;
}


static ngx_int_t
ngx_mt5_credit_init_process(ngx_cycle_t *cycle)
{
    ngx_mt5_credit_main_conf_t  *mcf;

    if (ngx_process != NGX_PROCESS_WORKER
        && ngx_process != NGX_PROCESS_SINGLE)
    {
        return NGX_OK;
    }

    mcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_mt5_credit_module);

    if (mcf == NULL) {
        return NGX_OK;
    }

    /* the console's pool: few people, small bounds, its own login */
    if (mcf->console_keywords != NULL) {
        mcf->console_pg.keywords = mcf->console_keywords;
        mcf->console_pg.values = mcf->console_values;
        mcf->console_pg.pool_size = 2;
        mcf->console_pg.queue_size = 64;
        mcf->console_pg.max_requests = 10000;
        mcf->console_pg.batch = 1;
        mcf->console_pg.connect_timeout = 5000;
        mcf->console_pg.query_timeout = 15000;
        mcf->console_pg.queue_timeout = 5000;
        mcf->console_pg.idle_timeout = 60000;

        mcf->console_pool = ngx_mt5_credit_pg_pool_create(cycle, mcf,
                                                          &mcf->console_pg);
        if (mcf->console_pool == NULL) {
            return NGX_ERROR;
        }
    }

    if (mcf->pg_keywords == NULL) {
        return NGX_OK;
    }

    mcf->pg.keywords = mcf->pg_keywords;
    mcf->pg.values = mcf->pg_values;
    mcf->pg.pool_size = mcf->pg_pool_size;
    mcf->pg.queue_size = mcf->pg_queue_size;
    mcf->pg.max_requests = mcf->pg_max_requests;
    mcf->pg.batch = mcf->pg_batch;
    mcf->pg.connect_timeout = mcf->pg_connect_timeout;
    mcf->pg.query_timeout = mcf->pg_query_timeout;
    mcf->pg.queue_timeout = mcf->pg_queue_timeout;
    mcf->pg.idle_timeout = mcf->pg_idle_timeout;
    mcf->pg.prepare = 1;
    mcf->pg.stats = 1;

    mcf->pool = ngx_mt5_credit_pg_pool_create(cycle, mcf, &mcf->pg);
    if (mcf->pool == NULL) {
        return NGX_ERROR;
    }

    if (mcf->redis_addr.len) {
        mcf->redis = ngx_mt5_credit_redis_create(cycle, mcf);
        if (mcf->redis == NULL) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


static void
ngx_mt5_credit_exit_process(ngx_cycle_t *cycle)
{
    ngx_mt5_credit_main_conf_t  *mcf;

    mcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_mt5_credit_module);

    if (mcf == NULL) {
        return;
    }

    if (mcf->console_pool) {
        ngx_mt5_credit_pg_pool_destroy(mcf->console_pool);
        mcf->console_pool = NULL;
    }

    if (mcf->pool) {
        ngx_mt5_credit_pg_pool_destroy(mcf->pool);
        mcf->pool = NULL;
    }

    if (mcf->redis) {
        ngx_mt5_credit_redis_destroy(mcf->redis);
        mcf->redis = NULL;
    }
}


/*
 * mt5_credit_postgres "<libpq conninfo>";
 *
 * Parsed here with libpq's own parser so a typo fails "nginx -t".  The
 * worker must never block, so a host must be an IP address or a unix
 * socket directory: resolving a name would be a blocking getaddrinfo().
 * libpq ignores connect_timeout for non-blocking connects; the module
 * enforces mt5_credit_postgres_connect_timeout itself.
 */

static char *
ngx_mt5_credit_postgres(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_mt5_credit_main_conf_t *mcf = conf;

    ngx_str_t  *value;

    if (mcf->pg_keywords != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;
    mcf->pg_conninfo = value[1];

    return ngx_mt5_credit_conninfo(cf, &value[1], "mt5_credit_postgres",
                                   "mt5credit-edge", &mcf->pg_keywords,
                                   &mcf->pg_values, &mcf->pg_options);
}


/*
 * mt5_credit_console_postgres "conninfo": the console's own login
 * (sql/052), checked as the edge's is.  Its connections run as
 * mt5credit_console, whose one right is sql/063's console_call(), under
 * a statement timeout: both added to the conninfo's options.
 */
static char *
ngx_mt5_credit_console_postgres(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_mt5_credit_main_conf_t *mcf = conf;

    ngx_str_t  *value;

    if (mcf->console_keywords != NULL) {
        return "is duplicate";
    }

    /* the key of the actions' tokens: made here, so every worker has it;
       mt5_credit_console_key_file, read later, replaces it */
    if (!mcf->console_key_set
        && RAND_bytes(mcf->console_key, sizeof(mcf->console_key)) != 1)
    {
        return "could not make the console's key";
    }

    value = cf->args->elts;

    return ngx_mt5_credit_conninfo(cf, &value[1],
                                   "mt5_credit_console_postgres",
                                   "mt5credit-console",
                                   &mcf->console_keywords,
                                   &mcf->console_values,
                                   &mcf->console_options);
}


/*
 * A libpq conninfo parsed and checked at configuration time into
 * keywords and values, with application_name and gssencmode=disable
 * unless given.  With options set, the conninfo's "options" go there (the
 * edge adds its own to them), else into the keywords as they are.
 */
static char *
ngx_mt5_credit_conninfo(ngx_conf_t *cf, ngx_str_t *value,
    const char *directive, const char *appname, const char ***keywords,
    const char ***values, ngx_str_t *options)
{
    char                *err, *conninfo, *host, *hostaddr;
    const char         **kw, **vals;
    ngx_uint_t           n, i, has_appname, has_gss;
    PQconninfoOption    *opts, *o;

    conninfo = (char *) value->data;     /* NUL-terminated by the parser */
    err = NULL;

    opts = PQconninfoParse(conninfo, &err);
    if (opts == NULL) {
        /* libpq's message ends in a newline: one line, then the place */
        for (i = 0; err != NULL && err[i] != '\0'; i++) {
            if (err[i] == '\n' || err[i] == '\r') {
                err[i] = (err[i + 1] == '\0') ? '\0' : ' ';
            }
        }

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid libpq conninfo: %s",
                           err ? err : "out of memory");
        if (err) {
            PQfreemem(err);
        }
        return NGX_CONF_ERROR;
    }

    n = 0;
    host = NULL;
    hostaddr = NULL;
    has_appname = 0;
    has_gss = 0;

    for (o = opts; o->keyword; o++) {
        if (o->val == NULL) {
            continue;
        }

        n++;

        if (ngx_strcmp(o->keyword, "host") == 0) {
            host = o->val;

        } else if (ngx_strcmp(o->keyword, "hostaddr") == 0) {
            hostaddr = o->val;

        } else if (ngx_strcmp(o->keyword, "application_name") == 0) {
            has_appname = 1;

        } else if (ngx_strcmp(o->keyword, "gssencmode") == 0) {
            has_gss = 1;

        } else if (ngx_strcmp(o->keyword, "service") == 0) {
            /* a service file's host is read at each connect, unchecked */
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "%s: service= is not supported: spell "
                               "host= or hostaddr= in the conninfo, where "
                               "it is checked", directive);
            PQconninfoFree(opts);
            return NGX_CONF_ERROR;
        }
    }

    if (ngx_mt5_credit_check_pg_host(cf, directive, host, hostaddr)
        != NGX_CONF_OK)
    {
        PQconninfoFree(opts);
        return NGX_CONF_ERROR;
    }

    /* room for the options we add and the terminating NULL */
    kw = ngx_pcalloc(cf->pool, (n + 4) * sizeof(char *));
    vals = ngx_pcalloc(cf->pool, (n + 4) * sizeof(char *));
    if (kw == NULL || vals == NULL) {
        PQconninfoFree(opts);
        return NGX_CONF_ERROR;
    }

    i = 0;

    for (o = opts; o->keyword; o++) {
        if (o->val == NULL) {
            continue;
        }

        if (options != NULL && ngx_strcmp(o->keyword, "options") == 0) {
            /* completed in init_main_conf, with the statement timeout */
            options->len = ngx_strlen(o->val);
            options->data = ngx_pstrdup(cf->pool,
                                        &(ngx_str_t) { options->len + 1,
                                                       (u_char *) o->val });
            if (options->data == NULL) {
                PQconninfoFree(opts);
                return NGX_CONF_ERROR;
            }

            continue;
        }

        kw[i] = (char *) ngx_pstrdup(cf->pool,
                                  &(ngx_str_t) { ngx_strlen(o->keyword) + 1,
                                                 (u_char *) o->keyword });
        vals[i] = (char *) ngx_pstrdup(cf->pool,
                                  &(ngx_str_t) { ngx_strlen(o->val) + 1,
                                                 (u_char *) o->val });
        if (kw[i] == NULL || vals[i] == NULL) {
            PQconninfoFree(opts);
            return NGX_CONF_ERROR;
        }

        i++;
    }

    PQconninfoFree(opts);

    if (!has_appname) {
        kw[i] = "application_name";
        vals[i] = appname;
        i++;
    }

    /*
     * GSS negotiation can make libpq drop its socket and open another in
     * the middle of a connect; nobody needs it on this path.
     */
    if (!has_gss) {
        kw[i] = "gssencmode";
        vals[i] = "disable";
        i++;
    }

    *keywords = kw;
    *values = vals;

    return NGX_CONF_OK;
}


static char *
ngx_mt5_credit_check_pg_host(ngx_conf_t *cf, const char *directive,
    const char *host, const char *hostaddr)
{
    u_char           addr[sizeof(struct in6_addr)];
    ngx_str_t        h;
    const u_char    *p, *last, *comma;

    if (hostaddr != NULL) {
        return NGX_CONF_OK;
    }

    /*
     * Without either, libpq takes PGHOST from the worker's environment
     * (nginx's "env") or a service file, on every connection: a name
     * there would be resolved inside the worker, past this check.
     */
    if (host == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "%s needs host= (an IP address or a socket "
                           "directory) or hostaddr=: without them libpq "
                           "takes PGHOST or a service file, which may name "
                           "a host to resolve in the worker", directive);
        return NGX_CONF_ERROR;
    }

    p = (const u_char *) host;
    last = p + ngx_strlen(host);

    /* host may be a comma-separated list: every entry must be safe */
    while (p < last) {
        comma = ngx_strlchr((u_char *) p, (u_char *) last, ',');
        if (comma == NULL) {
            comma = last;
        }

        h.data = (u_char *) p;
        h.len = comma - p;

        if (h.len == 0 || h.data[0] == '/' || h.data[0] == '@') {
            p = comma + 1;
            continue;
        }

        if (ngx_inet_addr(h.data, h.len) == INADDR_NONE
#if (NGX_HAVE_INET6)
            && ngx_inet6_addr(h.data, h.len, addr) != NGX_OK
#endif
           )
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "%s host \"%V\" is a name: resolving it "
                               "would block the worker; use an IP address, "
                               "hostaddr= or a socket directory",
                               directive, &h);
            return NGX_CONF_ERROR;
        }

        p = comma + 1;
    }

    (void) addr;

    return NGX_CONF_OK;
}


/*
 * The server enforces the query timeout too (statement_timeout), so a
 * statement the module gave up on (and answered 503 for) is cancelled and
 * rolled back there too, instead of running on unobserved.  Whichever
 * side notices first, the request gets the same 503.
 *
 * And a 200 is sent only after COMMIT, which means a durable commit only
 * with synchronous_commit on: a role's or database's "off" would let a
 * crash lose an event already answered 200.  The user's own "options"
 * come first, so ours win.
 */

static char *
ngx_mt5_credit_pg_options(ngx_conf_t *cf, ngx_mt5_credit_main_conf_t *mcf)
{
    u_char  buf[sizeof("-c statement_timeout= -c synchronous_commit=on")
                + NGX_INT_T_LEN];

    *ngx_sprintf(buf, "-c statement_timeout=%M -c synchronous_commit=on",
                 mcf->pg_query_timeout) = '\0';

    return ngx_mt5_credit_add_options(cf, mcf->pg_keywords, mcf->pg_values,
                                      &mcf->pg_options, buf);
}


/*
 * The console's connections: as mt5credit_console from their start (its
 * one right is sql/063's console_call(), which sets the person's role
 * for one transaction), each statement bounded on the server too.
 */

static char *
ngx_mt5_credit_console_options(ngx_conf_t *cf,
    ngx_mt5_credit_main_conf_t *mcf)
{
    u_char  buf[sizeof("-c role=mt5credit_console -c statement_timeout=")
                + NGX_INT_T_LEN];

    *ngx_sprintf(buf, "-c role=mt5credit_console -c statement_timeout=%d",
                 NGX_MT5_CREDIT_CONSOLE_TIMEOUT) = '\0';

    return ngx_mt5_credit_add_options(cf, mcf->console_keywords,
                                      mcf->console_values,
                                      &mcf->console_options, buf);
}


/*
 * "options" as the last keyword: the conninfo's own, then ours, so ours
 * win (ngx_mt5_credit_conninfo() left room for it).
 */

static char *
ngx_mt5_credit_add_options(ngx_conf_t *cf, const char **keywords,
    const char **values, ngx_str_t *user, u_char *ours)
{
    u_char      *p;
    size_t       len;
    ngx_uint_t   i;

    len = user->len + 1 + ngx_strlen(ours) + 1;

    p = ngx_pnalloc(cf->pool, len);
    if (p == NULL) {
        return NGX_CONF_ERROR;
    }

    for (i = 0; keywords[i] != NULL; i++) { /* void */ }

    keywords[i] = "options";
    values[i] = (char *) p;

    if (user->len) {
        p = ngx_cpymem(p, user->data, user->len);
        *p++ = ' ';
    }

    ngx_cpystrn(p, ours, ngx_strlen(ours) + 1);

    return NGX_CONF_OK;
}


/*
 * mt5_credit_redis 127.0.0.1:6379 | [::1]:6379 | unix:/path/redis.sock;
 *
 * An IP literal or a unix socket only: hiredis 0.14 resolves names with a
 * blocking getaddrinfo().
 */

static char *
ngx_mt5_credit_redis(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_mt5_credit_main_conf_t *mcf = conf;

    u_char     *colon, *last;
    ngx_str_t  *value, host;
    ngx_int_t   port;

    if (mcf->redis_addr.data != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;
    mcf->redis_addr = value[1];

    if (value[1].len > 5 && ngx_strncmp(value[1].data, "unix:", 5) == 0) {
        mcf->redis_host.data = value[1].data + 5;
        mcf->redis_host.len = value[1].len - 5;
        mcf->redis_port = 0;
        return NGX_CONF_OK;
    }

    last = value[1].data + value[1].len;
    colon = NULL;

    for (colon = last - 1; colon > value[1].data; colon--) {
        if (*colon == ':') {
            break;
        }
    }

    if (colon == value[1].data || *colon != ':') {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "mt5_credit_redis \"%V\" needs a port: "
                           "\"127.0.0.1:6379\" or \"unix:/path\"", &value[1]);
        return NGX_CONF_ERROR;
    }

    port = ngx_atoi(colon + 1, last - colon - 1);
    if (port < 1 || port > 65535) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "mt5_credit_redis \"%V\": invalid port",
                           &value[1]);
        return NGX_CONF_ERROR;
    }

    host.data = value[1].data;
    host.len = colon - value[1].data;

    if (host.len > 2 && host.data[0] == '[' && host.data[host.len - 1] == ']')
    {
        host.data++;
        host.len -= 2;
    }

    if (ngx_inet_addr(host.data, host.len) == INADDR_NONE) {
#if (NGX_HAVE_INET6)
        u_char  addr[sizeof(struct in6_addr)];

        if (ngx_inet6_addr(host.data, host.len, addr) != NGX_OK)
#endif
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "mt5_credit_redis host \"%V\" is not an IP "
                               "address: resolving it would block the "
                               "worker", &host);
            return NGX_CONF_ERROR;
        }
    }

    mcf->redis_host.data = ngx_pnalloc(cf->pool, host.len + 1);
    if (mcf->redis_host.data == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memcpy(mcf->redis_host.data, host.data, host.len);
    mcf->redis_host.data[host.len] = '\0';
    mcf->redis_host.len = host.len;
    mcf->redis_port = port;

    return NGX_CONF_OK;
}


static char *
ngx_mt5_credit_check_timeout(ngx_conf_t *cf, void *post, void *data)
{
    ngx_msec_t  *ms = data;

    if (*ms == 0) {
        return "must be more than 0";
    }

    return NGX_CONF_OK;
}


static char *
ngx_mt5_credit_check_key(ngx_conf_t *cf, void *post, void *data)
{
    ngx_str_t  *key = data;

    ngx_uint_t  i;

    for (i = 0; i < key->len; i++) {
        if (key->data[i] <= ' ' || key->data[i] >= 0x7f) {
            return "must be printable ASCII without spaces";
        }
    }

    if (key->len == 0 || key->len > 200) {
        return "must be 1 to 200 characters";
    }

    return NGX_CONF_OK;
}


/*
 * mt5_credit_webhook <provider>;
 *
 * The provider name is the first half of every event's unique key and is
 * matched against deposits; "stripe" reads Stripe events, any other name
 * the generic payload of docs/providers.md.
 */

static char *
ngx_mt5_credit_webhook(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_mt5_credit_loc_conf_t *lcf = conf;

    ngx_str_t                   *value;
    ngx_uint_t                   i;
    ngx_http_core_loc_conf_t    *clcf;
    ngx_mt5_credit_main_conf_t  *mcf;

    if (lcf->provider.data != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len == 0 || value[1].len > 32
        || value[1].data[0] < 'a' || value[1].data[0] > 'z')
    {
        goto invalid;
    }

    for (i = 0; i < value[1].len; i++) {
        if ((value[1].data[i] >= 'a' && value[1].data[i] <= 'z')
            || (value[1].data[i] >= '0' && value[1].data[i] <= '9')
            || value[1].data[i] == '_' || value[1].data[i] == '-')
        {
            continue;
        }

        goto invalid;
    }

    lcf->provider = value[1];
    lcf->conf_file = cf->conf_file->file.name;
    lcf->conf_line = cf->conf_file->line;

    mcf = ngx_http_conf_get_module_main_conf(cf, ngx_mt5_credit_module);

    /* its counters' slot: the same provider in two locations shares one */
    for (i = 1; i <= mcf->nproviders; i++) {
        if (mcf->providers[i].len == value[1].len
            && ngx_strncmp(mcf->providers[i].data, value[1].data,
                           value[1].len) == 0)
        {
            break;
        }
    }

    if (i > mcf->nproviders) {
        if (mcf->nproviders + 1 == NGX_MT5_CREDIT_PROVIDERS_MAX) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "more than %d providers",
                               NGX_MT5_CREDIT_PROVIDERS_MAX - 1);
            return NGX_CONF_ERROR;
        }
        mcf->providers[++mcf->nproviders] = value[1];
    }

    lcf->provider_index = i;

    if (mcf->webhook_line == 0) {
        mcf->webhook_file = cf->conf_file->file.name;
        mcf->webhook_line = cf->conf_file->line;
    }

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_mt5_credit_webhook_handler;

    return NGX_CONF_OK;

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid provider name \"%V\": lowercase letters, "
                       "digits, \"_\" and \"-\", starting with a letter, "
                       "at most 32", &value[1]);
    return NGX_CONF_ERROR;
}


/*
 * mt5_credit_signature stripe;
 * mt5_credit_signature standard;
 * mt5_credit_signature hmac-sha256 header=<name> encoding=hex|base64
 *                                  [prefix=<text>];
 * mt5_credit_signature adyen;      (per notification item, hex key)
 */

static char *
ngx_mt5_credit_signature(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_mt5_credit_loc_conf_t *lcf = conf;

    ngx_str_t                  *value, v;
    ngx_uint_t                  i;
    ngx_mt5_credit_sig_conf_t  *sig;

    if (lcf->sig != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    sig = ngx_pcalloc(cf->pool, sizeof(ngx_mt5_credit_sig_conf_t));
    if (sig == NULL) {
        return NGX_CONF_ERROR;
    }

    value = cf->args->elts;

    if (ngx_strcmp(value[1].data, "stripe") == 0) {
        sig->scheme = NGX_MT5_CREDIT_SIG_STRIPE;

    } else if (ngx_strcmp(value[1].data, "standard") == 0) {
        sig->scheme = NGX_MT5_CREDIT_SIG_STANDARD;

    } else if (ngx_strcmp(value[1].data, "hmac-sha256") == 0) {
        sig->scheme = NGX_MT5_CREDIT_SIG_HMAC_SHA256;

    } else if (ngx_strcmp(value[1].data, "adyen") == 0) {
        sig->scheme = NGX_MT5_CREDIT_SIG_ADYEN;

    } else {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "unknown signature scheme \"%V\": use \"stripe\", "
                           "\"standard\", \"hmac-sha256\" or \"adyen\"",
                           &value[1]);
        return NGX_CONF_ERROR;
    }

    if (sig->scheme != NGX_MT5_CREDIT_SIG_HMAC_SHA256) {
        if (cf->args->nelts > 2) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "signature scheme \"%V\" takes no "
                               "parameters, \"%V\" given",
                               &value[1], &value[2]);
            return NGX_CONF_ERROR;
        }

        lcf->sig = sig;
        return NGX_CONF_OK;
    }

    for (i = 2; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "header=", 7) == 0) {
            v.data = value[i].data + 7;
            v.len = value[i].len - 7;

            if (v.len == 0 || v.len >= NGX_MT5_CREDIT_SIG_MAX_HEADER) {
                goto invalid;
            }

            ngx_memcpy(sig->header, v.data, v.len);
            sig->header[v.len] = '\0';
            continue;
        }

        if (ngx_strcmp(value[i].data, "encoding=hex") == 0) {
            sig->encoding = NGX_MT5_CREDIT_SIG_HEX;
            continue;
        }

        if (ngx_strcmp(value[i].data, "encoding=base64") == 0) {
            sig->encoding = NGX_MT5_CREDIT_SIG_BASE64;
            continue;
        }

        if (ngx_strncmp(value[i].data, "prefix=", 7) == 0) {
            v.data = value[i].data + 7;
            v.len = value[i].len - 7;

            if (v.len >= NGX_MT5_CREDIT_SIG_MAX_PREFIX) {
                goto invalid;
            }

            ngx_memcpy(sig->prefix, v.data, v.len);
            sig->prefix[v.len] = '\0';
            sig->prefix_len = v.len;
            continue;
        }

        goto invalid;
    }

    if (sig->header[0] == '\0' || sig->encoding == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "signature scheme \"hmac-sha256\" needs "
                           "\"header=<name>\" and \"encoding=hex|base64\"");
        return NGX_CONF_ERROR;
    }

    lcf->sig = sig;

    return NGX_CONF_OK;

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid parameter \"%V\"", &value[i]);
    return NGX_CONF_ERROR;
}


static char *
ngx_mt5_credit_status(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_mt5_credit_loc_conf_t *lcf = conf;

    ngx_http_core_loc_conf_t  *clcf;

    if (lcf->status != NGX_CONF_UNSET) {
        return "is duplicate";
    }

    lcf->status = 1;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_mt5_credit_status_handler;

    return NGX_CONF_OK;
}


/*
 * Reads mt5_credit_secret_file: one secret per line (several during a
 * rotation, any may match), blank lines and "#" comments skipped, each
 * line trimmed of surrounding whitespace (a trailing newline in a secret
 * is the classic cause of every delivery failing).  Errors name the file
 * and line, never the secret.
 */

static char *
ngx_mt5_credit_load_secrets(ngx_conf_t *cf, ngx_mt5_credit_loc_conf_t *lcf)
{
    u_char                     *buf, *p, *last, *eol, *s, *e;
    ssize_t                     n;
    ngx_fd_t                    fd;
    ngx_str_t                   path;
    ngx_uint_t                  line;
    ngx_file_info_t             fi;
    ngx_pool_cleanup_t         *cln;
    ngx_mt5_credit_sig_rc_e     rc;
    ngx_mt5_credit_sig_conf_t  *sig;

    sig = lcf->sig;
    sig->nkeys = 0;

    path = lcf->secret_file;

    if (ngx_conf_full_name(cf->cycle, &path, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    fd = ngx_open_file(path.data, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);
    if (fd == NGX_INVALID_FILE) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, ngx_errno,
                      "mt5_credit_secret_file \"%V\" (for the webhook in "
                      "%V:%ui) cannot be opened",
                      &path, &lcf->conf_file, lcf->conf_line);
        return NGX_CONF_ERROR;
    }

    buf = NULL;

    if (ngx_fd_info(fd, &fi) == NGX_FILE_ERROR
        || ngx_file_size(&fi) > NGX_MT5_CREDIT_MAX_SECRET_FILE)
    {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "mt5_credit_secret_file \"%V\" is not a readable file "
                      "of at most %d bytes", &path,
                      NGX_MT5_CREDIT_MAX_SECRET_FILE);
        goto failed;
    }

    ngx_mt5_credit_secret_mode(cf->log, "mt5_credit_secret_file", &path,
                               &fi);

    buf = ngx_pnalloc(cf->temp_pool, (size_t) ngx_file_size(&fi) + 1);
    if (buf == NULL) {
        goto failed;
    }

    n = ngx_read_fd(fd, buf, (size_t) ngx_file_size(&fi));
    if (n < 0 || (off_t) n != ngx_file_size(&fi)) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, ngx_errno,
                      "mt5_credit_secret_file \"%V\" could not be read",
                      &path);
        goto failed;
    }

    ngx_close_file(fd);
    fd = NGX_INVALID_FILE;

    /* the keys are wiped from memory when this configuration goes */
    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        goto failed;
    }

    cln->handler = ngx_mt5_credit_cleanse_keys;
    cln->data = sig;

    p = buf;
    last = buf + n;
    line = 0;

    while (p < last) {
        line++;

        eol = ngx_strlchr(p, last, '\n');
        if (eol == NULL) {
            eol = last;
        }

        s = p;
        e = eol;
        p = eol + 1;

        while (s < e && (*s == ' ' || *s == '\t' || *s == '\r')) {
            s++;
        }

        while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) {
            e--;
        }

        if (s == e || *s == '#') {
            continue;
        }

        if (sig->nkeys == NGX_MT5_CREDIT_SIG_MAX_SECRETS) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "mt5_credit_secret_file \"%V\" line %ui: more "
                          "than %d secrets", &path, line,
                          NGX_MT5_CREDIT_SIG_MAX_SECRETS);
            goto failed;
        }

        rc = ngx_mt5_credit_sig_prepare_key(sig->scheme, s, e - s,
                                            &sig->keys[sig->nkeys]);
        if (rc != NGX_MT5_CREDIT_SIG_OK) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "mt5_credit_secret_file \"%V\" line %ui: not a "
                          "valid secret for this signature scheme%s",
                          &path, line,
                          sig->scheme == NGX_MT5_CREDIT_SIG_STANDARD
                          ? " (expected \"whsec_\" + standard base64)"
                          : sig->scheme == NGX_MT5_CREDIT_SIG_ADYEN
                          ? " (expected the HMAC key in hex, as Adyen's "
                            "Customer Area shows it)"
                          : "");
            goto failed;
        }

        sig->nkeys++;
    }

    OPENSSL_cleanse(buf, n);

    if (sig->nkeys == 0) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "mt5_credit_secret_file \"%V\" (for the webhook in "
                      "%V:%ui) holds no secret",
                      &path, &lcf->conf_file, lcf->conf_line);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;

failed:

    if (buf != NULL) {
        OPENSSL_cleanse(buf, (size_t) ngx_file_size(&fi));
    }

    if (fd != NGX_INVALID_FILE) {
        ngx_close_file(fd);
    }

    return NGX_CONF_ERROR;
}


/*
 * A secret every user of the host can read is a secret no longer: said
 * at nginx -t and at every start (the master reads it as root, so the
 * file needs no bit for others).
 */
static void
ngx_mt5_credit_secret_mode(ngx_log_t *log, const char *directive,
    ngx_str_t *path, ngx_file_info_t *fi)
{
    ngx_uint_t  mode;

    mode = ngx_file_access(fi);

    if (mode & 0007) {
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "%s \"%V\" is readable by every user of this host "
                      "(mode %ui%ui%ui): chmod o-rwx", directive, path,
                      (mode >> 6) & 7, (mode >> 3) & 7, mode & 7);
    }
}


static void
ngx_mt5_credit_cleanse_keys(void *data)
{
    ngx_mt5_credit_sig_conf_t  *sig = data;

    OPENSSL_cleanse(sig->keys, sizeof(sig->keys));
}
