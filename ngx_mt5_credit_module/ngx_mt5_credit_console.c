
/*
 * Copyright (C) mt5-credit
 *
 * The back-office console (issue 18): its JSON API, answered by the
 * database as the person nginx authenticated.
 *
 *   http {
 *       mt5_credit_console_postgres "host=127.0.0.1 user=mt5credit_web ...";
 *       server {
 *           location /console/ {
 *               auth_basic ...;                  (or auth_request, a cert)
 *               mt5_credit_console;
 *               mt5_credit_console_person $remote_user;
 *               mt5_credit_console_origin https://desk.example.com;
 *               alias /usr/share/mt5credit/console/;
 *           }
 *       }
 *   }
 *
 * <location>api/<endpoint> is answered here; every other path is the
 * shipped assets, which nginx's static module serves.
 *
 * A request is checked here first: its method, the person's name, the
 * endpoint, each argument's shape; for an action also its type, origin,
 * token and body.  A refusal is answered by the handler alone, and ends
 * the request: nothing of it reaches PostgreSQL.  What passes is one
 * fixed statement on the console's own pool, every value a parameter
 * (issue 29: no byte of a request or of a name ever becomes SQL text):
 *
 *   SELECT mt5credit.console_call($1 name, $2 endpoint, $3 .. $7)
 *
 * which maps the name to its person, sets that person's role for the
 * transaction and checks they are a person before anything else
 * (sql/063).  What the person may do is what the database grants them.
 *
 * Every answer of a console location carries a strict Content-Security-
 * Policy (no inline script, nothing from elsewhere), nosniff, no framing.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "ngx_mt5_credit_module.h"
#include "ngx_mt5_credit_pg.h"


#define NGX_MT5_CREDIT_CONSOLE_TOKEN    32       /* hex digits */
#define NGX_MT5_CREDIT_CONSOLE_WINDOW   600      /* s, a token's period */
#define NGX_MT5_CREDIT_CONSOLE_BODY     65536    /* an action's JSON */
#define NGX_MT5_CREDIT_CONSOLE_NAME     255      /* a person's name */
#define NGX_MT5_CREDIT_CONSOLE_ARGS     5


/* sql/063: the one statement the console sends */
static const char  ngx_mt5_credit_console_sql[] =
    "SELECT mt5credit.console_call($1, $2, $3, $4, $5, $6, $7)";


/*
 * What a check refused, for the handler to answer.  A check returns
 * NGX_OK (go on), NGX_DECLINED (refused: this says how; nothing was sent)
 * or an HTTP status of its own failure; it never answers itself.
 */
typedef struct {
    ngx_uint_t                    status;
    const char                   *error;
} ngx_mt5_credit_console_refusal_t;


/* one request's call: console_call()'s parameters, NUL-terminated */
typedef struct {
    ngx_mt5_credit_pg_op_t        op;
    ngx_http_request_t           *request;
    ngx_str_t                     name;      /* the person, as nginx has it */
    const char                   *endpoint;
    const char                   *args[NGX_MT5_CREDIT_CONSOLE_ARGS];
    unsigned                      report:1;  /* an HTML download */
} ngx_mt5_credit_console_ctx_t;


/* a reading endpoint's arguments: their characters and length */
typedef struct {
    const char                      *name;
    const char                      *allowed;
    size_t                           max;
    ngx_uint_t                       required;
} ngx_mt5_credit_console_param_t;

typedef struct {
    ngx_str_t                        name;
    ngx_mt5_credit_console_param_t   args[NGX_MT5_CREDIT_CONSOLE_ARGS];
    ngx_uint_t                       report;    /* an HTML download */
} ngx_mt5_credit_console_endpoint_t;


static ngx_int_t ngx_mt5_credit_console_handler(ngx_http_request_t *r);
static ngx_int_t ngx_mt5_credit_console_refuse(ngx_http_request_t *r,
    ngx_mt5_credit_console_refusal_t *no);
static ngx_int_t ngx_mt5_credit_console_person_of(ngx_http_request_t *r,
    ngx_mt5_credit_console_ctx_t *ctx, ngx_mt5_credit_console_refusal_t *no);
static ngx_int_t ngx_mt5_credit_console_read(ngx_http_request_t *r,
    ngx_str_t *endpoint, ngx_mt5_credit_console_ctx_t *ctx,
    ngx_mt5_credit_console_refusal_t *no);
static ngx_int_t ngx_mt5_credit_console_arg(ngx_http_request_t *r,
    ngx_mt5_credit_console_param_t *a, const char **arg);
static ngx_int_t ngx_mt5_credit_console_post(ngx_http_request_t *r,
    ngx_mt5_credit_console_ctx_t *ctx, ngx_mt5_credit_console_refusal_t *no);
static ngx_uint_t ngx_mt5_credit_console_origin_ok(ngx_http_request_t *r);
static ngx_table_elt_t *ngx_mt5_credit_console_find(ngx_http_request_t *r,
    const char *name);
static void ngx_mt5_credit_console_body(ngx_http_request_t *r);
static ngx_int_t ngx_mt5_credit_console_act(ngx_http_request_t *r,
    ngx_mt5_credit_console_ctx_t *ctx, ngx_mt5_credit_console_refusal_t *no);
static ngx_uint_t ngx_mt5_credit_console_text(u_char *p, size_t len,
    ngx_uint_t controls);
static void ngx_mt5_credit_console_token(ngx_http_request_t *r,
    ngx_str_t *name, time_t window, u_char *token);
static ngx_uint_t ngx_mt5_credit_console_token_ok(ngx_http_request_t *r,
    ngx_str_t *name, ngx_str_t *token);
static ngx_int_t ngx_mt5_credit_console_start(ngx_http_request_t *r,
    ngx_mt5_credit_console_ctx_t *ctx, ngx_uint_t held);
static void ngx_mt5_credit_console_done(ngx_mt5_credit_pg_op_t *op,
    ngx_mt5_credit_pg_rc_e rc, PGresult *res, const char *err);
static ngx_uint_t ngx_mt5_credit_console_step_up_refused(
    ngx_mt5_credit_console_ctx_t *ctx, u_char *json, size_t len);
static void ngx_mt5_credit_console_cleanup(void *data);
static ngx_int_t ngx_mt5_credit_console_send(ngx_http_request_t *r,
    ngx_uint_t status, u_char *json, size_t len);
static ngx_int_t ngx_mt5_credit_console_out(ngx_http_request_t *r,
    ngx_uint_t status, ngx_str_t *type, size_t type_len, u_char *data,
    size_t len);
static ngx_int_t ngx_mt5_credit_console_error(ngx_http_request_t *r,
    ngx_uint_t status, const char *error);
static ngx_int_t ngx_mt5_credit_console_refused(ngx_http_request_t *r,
    const char *message);
static ngx_int_t ngx_mt5_credit_console_report(ngx_http_request_t *r,
    u_char *html, size_t len);
static ngx_int_t ngx_mt5_credit_console_header(ngx_http_request_t *r,
    const char *key, const char *value);
static ngx_int_t ngx_mt5_credit_console_header_filter(ngx_http_request_t *r);


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;


/* what the database refused, as the person's answer */
typedef struct {
    const char                   *sqlstate;
    ngx_uint_t                    status;
    const char                   *error;
} ngx_mt5_credit_console_err_t;


static ngx_mt5_credit_console_err_t  ngx_mt5_credit_console_errors[] = {
    /* not a role the console's login may become, or a function the
       person may not call */
    { "42501", NGX_HTTP_FORBIDDEN, "forbidden" },
    /* no such role */
    { "22023", NGX_HTTP_FORBIDDEN, "forbidden" },
    /* a role that is no person (sql/053) */
    { "MC093", NGX_HTTP_FORBIDDEN, "forbidden" },
    /* a name no person is known by (sql/063) */
    { "MC130", NGX_HTTP_FORBIDDEN, "forbidden" },
    /* an endpoint the database has not (an edge newer than its schema) */
    { "MC131", NGX_HTTP_NOT_FOUND, "no_such_endpoint" },
    /* too many actions this minute, on every host together (sql/063) */
    { "MC132", NGX_HTTP_TOO_MANY_REQUESTS, "too_many_actions" },
    /* a money decision without its second factor (sql/065) */
    { "MC140", NGX_HTTP_FORBIDDEN, "second_factor" },
    /* no such case (sql/010) */
    { "MC044", NGX_HTTP_NOT_FOUND, "not_found" },
    /* no such outbound event or endpoint (sql/095) */
    { "MC162", NGX_HTTP_NOT_FOUND, "not_found" },
    /* an argument of the wrong type, or a JSON body that is not JSON, or
       holds what text cannot (\u0000, a lone surrogate) */
    { "22P02", NGX_HTTP_BAD_REQUEST, "bad_argument" },
    { "22003", NGX_HTTP_BAD_REQUEST, "bad_argument" },
    { "22007", NGX_HTTP_BAD_REQUEST, "bad_argument" },
    { "22008", NGX_HTTP_BAD_REQUEST, "bad_argument" },
    { "22P05", NGX_HTTP_BAD_REQUEST, "bad_argument" },
    { "22021", NGX_HTTP_BAD_REQUEST, "bad_argument" },
    { NULL, 0, NULL }
};


/*
 * The reading endpoints, and the arguments of each, in the order sql/063
 * takes them: each checked against its characters and length after its
 * percent-encoding is undone (a required one may not be absent).
 * api/whoami's one argument is the person's token, made here; api/act is
 * the one action endpoint (POST).
 */

#define NGX_MT5_CREDIT_LOWER   "abcdefghijklmnopqrstuvwxyz"
#define NGX_MT5_CREDIT_DIGITS  "0123456789"
#define NGX_MT5_CREDIT_CONSOLE_ID  { "id", NGX_MT5_CREDIT_DIGITS, 18, 1 }

static ngx_mt5_credit_console_endpoint_t  ngx_mt5_credit_console_endpoints[] = {

    { ngx_string("whoami"), { { NULL, NULL, 0, 0 } }, 0 },

    /* the queue: by kind, status, age (minutes), severity and owner */
    { ngx_string("cases"),
      { { "kind", NGX_MT5_CREDIT_LOWER "_", 40, 0 },
        { "status", NGX_MT5_CREDIT_LOWER "_", 40, 0 },
        { "age", NGX_MT5_CREDIT_DIGITS, 7, 0 },
        { "severity", NGX_MT5_CREDIT_LOWER, 16, 0 },
        { "owner", NGX_MT5_CREDIT_LOWER NGX_MT5_CREDIT_DIGITS "_.@-", 63,
          0 } }, 0 },

    { ngx_string("case"), { NGX_MT5_CREDIT_CONSOLE_ID }, 0 },

    /* the stored events, as mt5credit events list searches them */
    { ngx_string("events"),
      { { "provider", NGX_MT5_CREDIT_LOWER NGX_MT5_CREDIT_DIGITS "_-", 32,
          0 },
        { "type", NGX_MT5_CREDIT_LOWER NGX_MT5_CREDIT_DIGITS "_.", 100, 0 },
        { "disposition", NGX_MT5_CREDIT_LOWER "_", 40, 0 },
        { "deposit", NGX_MT5_CREDIT_LOWER NGX_MT5_CREDIT_DIGITS "_", 40, 0 },
        { "request_id", NGX_MT5_CREDIT_DIGITS "abcdef", 32, 0 } }, 0 },

    { ngx_string("event"), { NGX_MT5_CREDIT_CONSOLE_ID }, 0 },

    { ngx_string("withdrawals"),
      { { "status", NGX_MT5_CREDIT_LOWER "_", 40, 0 } }, 0 },

    { ngx_string("withdrawal"),
      { { "ref", NGX_MT5_CREDIT_LOWER NGX_MT5_CREDIT_DIGITS "_", 40, 1 } },
      0 },

    /* what people search by: references, clients, logins, payment ids */
    { ngx_string("search"),
      { { "q", NGX_MT5_CREDIT_LOWER "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
               NGX_MT5_CREDIT_DIGITS "_.:@-", 128, 1 } }, 0 },

    /* reconciliation: the runs, newest day first; one run's findings */
    { ngx_string("recon_runs"),
      { { "provider", NGX_MT5_CREDIT_LOWER NGX_MT5_CREDIT_DIGITS "_-", 32,
          0 } }, 0 },

    { ngx_string("recon_run"), { NGX_MT5_CREDIT_CONSOLE_ID }, 0 },

    /* a run's HTML report, as the job wrote it (sql/058), to download */
    { ngx_string("recon_report"), { NGX_MT5_CREDIT_CONSOLE_ID }, 1 },

    { ngx_string("status"), { { NULL, NULL, 0, 0 } }, 0 },

    /* outbound events (sql/096): by delivery status and subject; one,
       by its webhook-id */
    { ngx_string("outbound"),
      { { "status", NGX_MT5_CREDIT_LOWER, 16, 0 },
        { "subject", NGX_MT5_CREDIT_LOWER NGX_MT5_CREDIT_DIGITS ":", 40,
          0 } }, 0 },

    { ngx_string("outbound_message"),
      { { "id", NGX_MT5_CREDIT_LOWER NGX_MT5_CREDIT_DIGITS "_", 36, 1 } },
      0 },

    { ngx_null_string, { { NULL, NULL, 0, 0 } }, 0 }
};


/* the policy of every console answer: the pages' own files, nothing else */
static const char  ngx_mt5_credit_console_csp[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self'; connect-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'";


ngx_int_t
ngx_mt5_credit_console_init(ngx_conf_t *cf)
{
    ngx_http_handler_pt        *h;
    ngx_http_core_main_conf_t  *cmcf;

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    /* pushed last, so run before the static and index modules */
    h = ngx_array_push(&cmcf->phases[NGX_HTTP_CONTENT_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_mt5_credit_console_handler;

    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_mt5_credit_console_header_filter;

    return NGX_OK;
}


static ngx_int_t
ngx_mt5_credit_console_handler(ngx_http_request_t *r)
{
    ngx_int_t                          rc;
    ngx_str_t                          endpoint;
    ngx_http_core_loc_conf_t          *clcf;
    ngx_mt5_credit_loc_conf_t         *lcf;
    ngx_mt5_credit_console_ctx_t      *ctx;
    ngx_mt5_credit_console_refusal_t   no;

    lcf = ngx_http_get_module_loc_conf(r, ngx_mt5_credit_module);

    if (!lcf->console) {
        return NGX_DECLINED;
    }

    clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

    if (r->uri.len < clcf->name.len + sizeof("api/") - 1
        || ngx_strncmp(r->uri.data + clcf->name.len, "api/",
                       sizeof("api/") - 1) != 0)
    {
        return NGX_DECLINED;            /* the assets */
    }

    endpoint.data = r->uri.data + clcf->name.len + sizeof("api/") - 1;
    endpoint.len = r->uri.len - clcf->name.len - (sizeof("api/") - 1);

    /* read only for an action that passed its checks: else discarded, so
       that its bytes are never taken for the next request */
    if (r->method != NGX_HTTP_POST) {
        rc = ngx_http_discard_request_body(r);
        if (rc != NGX_OK) {
            return rc;
        }
    }

    if (!(r->method & (NGX_HTTP_GET | NGX_HTTP_HEAD | NGX_HTTP_POST))) {
        if (ngx_mt5_credit_console_header(r, "Allow", "GET, HEAD, POST")
            != NGX_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        no.status = NGX_HTTP_NOT_ALLOWED;
        no.error = "method_not_allowed";
        return ngx_mt5_credit_console_refuse(r, &no);
    }

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_mt5_credit_console_ctx_t));
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->request = r;

    rc = ngx_mt5_credit_console_person_of(r, ctx, &no);

    if (rc == NGX_OK && r->method == NGX_HTTP_POST) {
        if (endpoint.len == 3 && ngx_strncmp(endpoint.data, "act", 3) == 0) {
            rc = ngx_mt5_credit_console_post(r, ctx, &no);

        } else {
            no.status = NGX_HTTP_NOT_FOUND;
            no.error = "no_such_endpoint";
            rc = NGX_DECLINED;
        }

        if (rc == NGX_OK) {
            /* the body is being read: its handler goes on */
            return NGX_DONE;
        }

    } else if (rc == NGX_OK) {
        rc = ngx_mt5_credit_console_read(r, &endpoint, ctx, &no);

        if (rc == NGX_OK) {
            return ngx_mt5_credit_console_start(r, ctx, 0);
        }
    }

    if (rc == NGX_DECLINED) {
        return ngx_mt5_credit_console_refuse(r, &no);
    }

    return rc;
}


/* the one place a refusal is answered; logged where the client can't see */
static ngx_int_t
ngx_mt5_credit_console_refuse(ngx_http_request_t *r,
    ngx_mt5_credit_console_refusal_t *no)
{
    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "mt5_credit: console: refused before the database: %ui %s",
                  no->status, no->error);

    return ngx_mt5_credit_console_error(r, no->status, no->error);
}


/*
 * The person's name, as the location's verified source gives it
 * (ngx_mt5_credit_console_conf.c): a parameter to the database, which
 * maps it to a person; here only its shape, UTF-8 text without control
 * characters, of at most 255 bytes.
 */
static ngx_int_t
ngx_mt5_credit_console_person_of(ngx_http_request_t *r,
    ngx_mt5_credit_console_ctx_t *ctx, ngx_mt5_credit_console_refusal_t *no)
{
    ngx_str_t                   name;
    ngx_mt5_credit_loc_conf_t  *lcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_mt5_credit_module);

    if (ngx_http_complex_value(r, lcf->console_person, &name) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (name.len == 0 || name.len > NGX_MT5_CREDIT_CONSOLE_NAME
        || !ngx_mt5_credit_console_text(name.data, name.len, 0))
    {
        /* nginx let the request in, but it names nobody we can act for */
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "mt5_credit: console: no person in a name of %uz "
                      "bytes", name.len);
        no->status = NGX_HTTP_FORBIDDEN;
        no->error = "no_person";
        return NGX_DECLINED;
    }

    ctx->name.data = ngx_pnalloc(r->pool, name.len + 1);
    if (ctx->name.data == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->name.len = name.len;
    *ngx_cpymem(ctx->name.data, name.data, name.len) = '\0';

    return NGX_OK;
}


/* a reading endpoint and its arguments, each checked */
static ngx_int_t
ngx_mt5_credit_console_read(ngx_http_request_t *r, ngx_str_t *endpoint,
    ngx_mt5_credit_console_ctx_t *ctx, ngx_mt5_credit_console_refusal_t *no)
{
    u_char                             *token;
    ngx_int_t                           rc;
    ngx_uint_t                          i;
    ngx_mt5_credit_console_endpoint_t  *e;

    for (e = ngx_mt5_credit_console_endpoints; e->name.len; e++) {
        if (e->name.len == endpoint->len
            && ngx_strncmp(e->name.data, endpoint->data, endpoint->len) == 0)
        {
            break;
        }
    }

    if (e->name.len == 0) {
        no->status = NGX_HTTP_NOT_FOUND;
        no->error = "no_such_endpoint";
        return NGX_DECLINED;
    }

    ctx->endpoint = (const char *) e->name.data;   /* a C literal */
    ctx->report = e->report ? 1 : 0;

    for (i = 0; i < NGX_MT5_CREDIT_CONSOLE_ARGS && e->args[i].name; i++) {
        rc = ngx_mt5_credit_console_arg(r, &e->args[i], &ctx->args[i]);

        if (rc == NGX_DECLINED) {
            no->status = NGX_HTTP_BAD_REQUEST;
            no->error = "bad_argument";
            return NGX_DECLINED;
        }

        if (rc != NGX_OK) {
            return rc;
        }
    }

    /* who, what they may, and the token their actions must carry */
    if (ngx_strcmp(ctx->endpoint, "whoami") == 0) {
        token = ngx_pnalloc(r->pool, NGX_MT5_CREDIT_CONSOLE_TOKEN + 1);
        if (token == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        ngx_mt5_credit_console_token(r, &ctx->name,
                                     ngx_time() / NGX_MT5_CREDIT_CONSOLE_WINDOW,
                                     token);
        token[NGX_MT5_CREDIT_CONSOLE_TOKEN] = '\0';
        ctx->args[0] = (const char *) token;
    }

    return NGX_OK;
}


/*
 * An argument, its percent-encoding undone (a page encodes "@" and ":"),
 * every byte of it in a->allowed and at most a->max of them; absent
 * (NULL) when not given or empty.  NGX_DECLINED: present and not of that
 * shape, or absent and required.
 */
static ngx_int_t
ngx_mt5_credit_console_arg(ngx_http_request_t *r,
    ngx_mt5_credit_console_param_t *a, const char **arg)
{
    u_char     *dst, *src, *p;
    ngx_str_t   value;
    ngx_uint_t  i;

    *arg = NULL;

    if (ngx_http_arg(r, (u_char *) a->name, ngx_strlen(a->name), &value)
        != NGX_OK
        || value.len == 0)
    {
        return a->required ? NGX_DECLINED : NGX_OK;
    }

    /* an encoded value is never longer than its encoding */
    if (value.len > 3 * a->max) {
        return NGX_DECLINED;
    }

    p = ngx_pnalloc(r->pool, value.len + 1);
    if (p == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    dst = p;
    src = value.data;
    ngx_unescape_uri(&dst, &src, value.len, 0);

    if (src != value.data + value.len || dst == p
        || (size_t) (dst - p) > a->max)
    {
        return NGX_DECLINED;
    }

    for (i = 0; p + i < dst; i++) {
        if (p[i] == '\0' || ngx_strchr(a->allowed, p[i]) == NULL) {
            return NGX_DECLINED;
        }
    }

    *dst = '\0';
    *arg = (const char *) p;

    return NGX_OK;
}


/*
 * An action: POST <location>api/act, a JSON object that sql/055's
 * console_act() reads.  Before its body is read: JSON only (a cross-site
 * form cannot send it without a preflight), from a configured origin,
 * with the person's current token (api/whoami gives it), of a bounded
 * size.  NGX_OK: the body is being read.
 */
static ngx_int_t
ngx_mt5_credit_console_post(ngx_http_request_t *r,
    ngx_mt5_credit_console_ctx_t *ctx, ngx_mt5_credit_console_refusal_t *no)
{
    ngx_int_t         rc;
    ngx_table_elt_t  *h;

    if (r->headers_in.content_type == NULL
        || r->headers_in.content_type->value.len < 16
        || ngx_strncasecmp(r->headers_in.content_type->value.data,
                           (u_char *) "application/json", 16) != 0)
    {
        no->status = NGX_HTTP_UNSUPPORTED_MEDIA_TYPE;
        no->error = "json_only";
        return NGX_DECLINED;
    }

    if (!ngx_mt5_credit_console_origin_ok(r)) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "mt5_credit: console: an action from an origin not "
                      "configured refused (person \"%V\")", &ctx->name);
        no->status = NGX_HTTP_FORBIDDEN;
        no->error = "cross_origin";
        return NGX_DECLINED;
    }

    h = ngx_mt5_credit_console_find(r, "X-CSRF-Token");

    if (h == NULL || !ngx_mt5_credit_console_token_ok(r, &ctx->name,
                                                      &h->value))
    {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "mt5_credit: console: an action without its current "
                      "token refused (person \"%V\")", &ctx->name);
        no->status = NGX_HTTP_FORBIDDEN;
        no->error = "csrf";
        return NGX_DECLINED;
    }

    if (r->headers_in.content_length_n > NGX_MT5_CREDIT_CONSOLE_BODY) {
        no->status = NGX_HTTP_REQUEST_ENTITY_TOO_LARGE;
        no->error = "too_large";
        return NGX_DECLINED;
    }

    rc = ngx_http_read_client_request_body(r, ngx_mt5_credit_console_body);

    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }

    return NGX_OK;
}


/*
 * The Origin a browser sends with every POST is one of the configured
 * origins, as written; without it, the Referer starts with one and a
 * "/".  The request's own Host proves nothing: the client chose it.
 */
static ngx_uint_t
ngx_mt5_credit_console_origin_ok(ngx_http_request_t *r)
{
    ngx_str_t                  *o, from;
    ngx_uint_t                  i, referer;
    ngx_table_elt_t            *h;
    ngx_mt5_credit_loc_conf_t  *lcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_mt5_credit_module);

    h = ngx_mt5_credit_console_find(r, "Origin");
    referer = (h == NULL);

    if (h == NULL) {
        h = r->headers_in.referer;
    }

    if (h == NULL) {
        return 0;
    }

    from = h->value;
    o = lcf->console_origins->elts;

    for (i = 0; i < lcf->console_origins->nelts; i++) {
        if (from.len < o[i].len
            || ngx_strncasecmp(from.data, o[i].data, o[i].len) != 0)
        {
            continue;
        }

        if (from.len == o[i].len) {
            return 1;
        }

        if (referer && from.data[o[i].len] == '/') {
            return 1;
        }
    }

    return 0;
}


static ngx_table_elt_t *
ngx_mt5_credit_console_find(ngx_http_request_t *r, const char *name)
{
    size_t            len;
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    len = ngx_strlen(name);
    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                return NULL;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].key.len == len
            && ngx_strncasecmp(h[i].key.data, (u_char *) name, len) == 0)
        {
            return &h[i];
        }
    }
}


/*
 * The body has been read.  The person is taken again, from the same
 * source, the same value: the checks before the body held for it.
 */
static void
ngx_mt5_credit_console_body(ngx_http_request_t *r)
{
    ngx_int_t                          rc;
    ngx_mt5_credit_console_ctx_t      *ctx;
    ngx_mt5_credit_console_refusal_t   no;

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_mt5_credit_console_ctx_t));
    if (ctx == NULL) {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    ctx->request = r;

    rc = ngx_mt5_credit_console_person_of(r, ctx, &no);

    if (rc == NGX_OK) {
        rc = ngx_mt5_credit_console_act(r, ctx, &no);
    }

    if (rc == NGX_OK) {
        rc = ngx_mt5_credit_console_start(r, ctx, 1);

        if (rc == NGX_DONE) {
            /* the body reading's reference is held until the answer */
            return;
        }

    } else if (rc == NGX_DECLINED) {
        rc = ngx_mt5_credit_console_refuse(r, &no);
    }

    ngx_http_finalize_request(r, rc);
}


/* the body: UTF-8 text without a NUL, one parameter of console_call() */
static ngx_int_t
ngx_mt5_credit_console_act(ngx_http_request_t *r,
    ngx_mt5_credit_console_ctx_t *ctx, ngx_mt5_credit_console_refusal_t *no)
{
    u_char     *p;
    ngx_str_t   body;

    if (ngx_mt5_credit_body_assemble(r->request_body != NULL
                                     ? r->request_body->bufs : NULL,
                                     r->pool, r->connection->log, &body)
        != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (body.len == 0 || body.len > NGX_MT5_CREDIT_CONSOLE_BODY
        || !ngx_mt5_credit_console_text(body.data, body.len, 1))
    {
        no->status = NGX_HTTP_BAD_REQUEST;
        no->error = "bad_body";
        return NGX_DECLINED;
    }

    p = ngx_pnalloc(r->pool, body.len + 1);
    if (p == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    *ngx_cpymem(p, body.data, body.len) = '\0';

    ctx->endpoint = "act";
    ctx->args[0] = (const char *) p;

    return NGX_OK;
}


/*
 * UTF-8 text of len bytes, without a NUL; with controls 0, without any
 * control character either.
 */
static ngx_uint_t
ngx_mt5_credit_console_text(u_char *p, size_t len, ngx_uint_t controls)
{
    u_char    *last;
    uint32_t   ch;

    last = p + len;

    while (p < last) {
        if (*p < 0x80) {
            if (*p == '\0' || (!controls && (*p < 0x20 || *p == 0x7f))) {
                return 0;
            }

            p++;
            continue;
        }

        ch = ngx_utf8_decode(&p, last - p);
        if (ch > 0x10ffff || (!controls && ch >= 0x80 && ch < 0xa0)) {
            return 0;
        }
    }

    return 1;
}


/*
 * The token a person's actions carry: HMAC-SHA256, under a key every
 * host shares (mt5_credit_console_key_file), of the person's name and a
 * ten-minute window, in hex.  A token is taken in its window and the
 * next: a page fetches it again before each action, so one copied from
 * a page or a log is worth at most twenty minutes.
 */
static void
ngx_mt5_credit_console_token(ngx_http_request_t *r, ngx_str_t *name,
    time_t window, u_char *token)
{
    u_char                      *msg;
    uint64_t                     n;
    ngx_uint_t                   i;
    unsigned int                 maclen;
    ngx_mt5_credit_main_conf_t  *mcf;
    u_char                       mac[EVP_MAX_MD_SIZE];

    mcf = ngx_http_get_module_main_conf(r, ngx_mt5_credit_module);

    /* the window, 8 bytes big-endian, then the name */
    msg = ngx_pnalloc(r->pool, 8 + name->len);

    if (msg != NULL) {
        for (i = 0, n = (uint64_t) window; i < 8; i++, n >>= 8) {
            msg[7 - i] = (u_char) (n & 0xff);
        }

        ngx_memcpy(msg + 8, name->data, name->len);
    }

    maclen = 0;

    if (msg == NULL
        || HMAC(EVP_sha256(), mcf->console_key, sizeof(mcf->console_key),
                msg, 8 + name->len, mac, &maclen) == NULL
        || maclen < NGX_MT5_CREDIT_CONSOLE_TOKEN / 2)
    {
        /* then a token no client can know: every action is refused */
        ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                      "mt5_credit: console: the token's HMAC failed");
        if (RAND_bytes(mac, NGX_MT5_CREDIT_CONSOLE_TOKEN / 2) != 1) {
            ngx_memset(mac, 0xa5, NGX_MT5_CREDIT_CONSOLE_TOKEN / 2);
            mac[0] ^= (u_char) ngx_random();
        }
    }

    ngx_hex_dump(token, mac, NGX_MT5_CREDIT_CONSOLE_TOKEN / 2);
}


static ngx_uint_t
ngx_mt5_credit_console_token_ok(ngx_http_request_t *r, ngx_str_t *name,
    ngx_str_t *token)
{
    time_t      now;
    ngx_uint_t  ok;
    u_char      want[NGX_MT5_CREDIT_CONSOLE_TOKEN];

    if (token->len != NGX_MT5_CREDIT_CONSOLE_TOKEN) {
        return 0;
    }

    now = ngx_time() / NGX_MT5_CREDIT_CONSOLE_WINDOW;

    ngx_mt5_credit_console_token(r, name, now, want);
    ok = CRYPTO_memcmp(token->data, want, sizeof(want)) == 0;

    ngx_mt5_credit_console_token(r, name, now - 1, want);
    ok |= CRYPTO_memcmp(token->data, want, sizeof(want)) == 0;

    return ok;
}


/*
 * The call on the console's pool.  held: the body reading holds the
 * request until the answer; else it is held here.  NGX_DONE: the answer
 * comes from ngx_mt5_credit_console_done().
 */
static ngx_int_t
ngx_mt5_credit_console_start(ngx_http_request_t *r,
    ngx_mt5_credit_console_ctx_t *ctx, ngx_uint_t held)
{
    ngx_int_t                      rc;
    ngx_uint_t                     i;
    ngx_http_cleanup_t            *cln;
    ngx_mt5_credit_main_conf_t    *mcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_mt5_credit_module);

    if (mcf->console_pool == NULL) {
        ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                      "mt5_credit: no console pool in this process");
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->op.sql = ngx_mt5_credit_console_sql;
    ctx->op.nparams = 2 + NGX_MT5_CREDIT_CONSOLE_ARGS;
    ctx->op.values[0] = (const char *) ctx->name.data;
    ctx->op.values[1] = ctx->endpoint;

    for (i = 0; i < NGX_MT5_CREDIT_CONSOLE_ARGS; i++) {
        ctx->op.values[2 + i] = ctx->args[i];
    }

    ctx->op.handler = ngx_mt5_credit_console_done;
    ctx->op.data = ctx;
    ctx->op.log = r->connection->log;

    cln = ngx_http_cleanup_add(r, 0);
    if (cln == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    cln->handler = ngx_mt5_credit_console_cleanup;
    cln->data = ctx;

    rc = ngx_mt5_credit_pg_run(mcf->console_pool, &ctx->op);

    if (rc != NGX_OK) {
        cln->handler = NULL;
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mt5_credit: console: PostgreSQL %s",
                      rc == NGX_BUSY ? "wait queue full" : "unavailable");
        return ngx_mt5_credit_console_error(r,
                                            NGX_HTTP_SERVICE_UNAVAILABLE,
                                            "unavailable");
    }

    if (!held) {
        r->main->count++;
    }

    return NGX_DONE;
}


static void
ngx_mt5_credit_console_done(ngx_mt5_credit_pg_op_t *op,
    ngx_mt5_credit_pg_rc_e rc, PGresult *res, const char *err)
{
    u_char                        *json;
    size_t                         len;
    ngx_int_t                      status;
    ngx_connection_t              *c;
    ngx_http_request_t            *r;
    ngx_mt5_credit_console_ctx_t  *ctx;
    ngx_mt5_credit_console_err_t  *e;

    ctx = op->data;
    r = ctx->request;
    c = r->connection;

    ngx_http_set_log_request(c->log, r);

    switch (rc) {

    case NGX_MT5_CREDIT_PG_OK:
        if (PQntuples(res) != 1 || PQnfields(res) != 1) {
            ngx_log_error(NGX_LOG_ERR, c->log, 0,
                          "mt5_credit: console: %d rows of %d columns",
                          PQntuples(res), PQnfields(res));
            status = ngx_mt5_credit_console_error(r,
                         NGX_HTTP_INTERNAL_SERVER_ERROR, "database_error");
            break;
        }

        if (PQgetisnull(res, 0, 0)) {
            status = ngx_mt5_credit_console_error(r, NGX_HTTP_NOT_FOUND,
                                                  "not_found");
            break;
        }

        /* the result is freed when this returns */
        len = PQgetlength(res, 0, 0);
        json = ngx_pnalloc(r->pool, len);
        if (json == NULL) {
            status = NGX_HTTP_INTERNAL_SERVER_ERROR;
            break;
        }

        ngx_memcpy(json, PQgetvalue(res, 0, 0), len);

        if (ctx->report) {
            status = ngx_mt5_credit_console_report(r, json, len);
            break;
        }

        status = ngx_mt5_credit_console_step_up_refused(ctx, json, len)
                 ? NGX_HTTP_FORBIDDEN : NGX_HTTP_OK;

        if (status == NGX_HTTP_FORBIDDEN) {
            ngx_log_error(NGX_LOG_WARN, c->log, 0,
                          "mt5_credit: console: an action refused its "
                          "second factor (person \"%V\")", &ctx->name);
        }

        status = ngx_mt5_credit_console_send(r, status, json, len);
        break;

    case NGX_MT5_CREDIT_PG_FAILED:
        for (e = ngx_mt5_credit_console_errors; e->sqlstate; e++) {
            if (ngx_strcmp(op->sqlstate, e->sqlstate) == 0) {
                break;
            }
        }

        if (e->sqlstate != NULL) {
            ngx_log_error(NGX_LOG_WARN, c->log, 0,
                          "mt5_credit: console: refused (%s): %s",
                          op->sqlstate, err);
            status = ngx_mt5_credit_console_error(r, e->status, e->error);
            break;
        }

        /* our own refusals (MCxxx) are written for the person: say it */
        if (op->sqlstate[0] == 'M' && op->sqlstate[1] == 'C') {
            ngx_log_error(NGX_LOG_INFO, c->log, 0,
                          "mt5_credit: console: refused (%s): %s",
                          op->sqlstate, err);
            status = ngx_mt5_credit_console_refused(r, op->primary);
            break;
        }

        ngx_log_error(NGX_LOG_ERR, c->log, 0,
                      "mt5_credit: console: statement failed (%s): %s",
                      op->sqlstate, err);
        status = ngx_mt5_credit_console_error(r,
                     NGX_HTTP_INTERNAL_SERVER_ERROR, "database_error");
        break;

    default:
        ngx_log_error(NGX_LOG_ERR, c->log, 0,
                      "mt5_credit: console: PostgreSQL: %s", err);
        status = ngx_mt5_credit_console_error(r,
                     NGX_HTTP_SERVICE_UNAVAILABLE, "unavailable");
        break;
    }

    ngx_http_finalize_request(r, status);
    ngx_http_run_posted_requests(c);
}


/*
 * An action whose second factor was refused (sql/065) is answered with a
 * result, not an error, so that the refusal and the try it spent are
 * committed: {"error": "second_factor", ...}, first in jsonb's order of
 * keys.  It is 403, with the database's words for the page.
 */
static ngx_uint_t
ngx_mt5_credit_console_step_up_refused(ngx_mt5_credit_console_ctx_t *ctx,
    u_char *json, size_t len)
{
    static const char  refused[] = "{\"error\": \"second_factor\"";

    return ngx_strcmp(ctx->endpoint, "act") == 0
           && len >= sizeof(refused) - 1
           && ngx_strncmp(json, refused, sizeof(refused) - 1) == 0;
}


static void
ngx_mt5_credit_console_cleanup(void *data)
{
    ngx_mt5_credit_console_ctx_t  *ctx = data;

    ngx_mt5_credit_pg_cancel(&ctx->op);
}


static ngx_int_t
ngx_mt5_credit_console_send(ngx_http_request_t *r, ngx_uint_t status,
    u_char *json, size_t len)
{
    static ngx_str_t  type = ngx_string("application/json; charset=utf-8");

    return ngx_mt5_credit_console_out(r, status, &type,
                                      sizeof("application/json") - 1,
                                      json, len);
}


/*
 * Every answer of the API: data (in the request's pool) of its type,
 * never kept by a browser or a proxy: a person's data.
 */
static ngx_int_t
ngx_mt5_credit_console_out(ngx_http_request_t *r, ngx_uint_t status,
    ngx_str_t *type, size_t type_len, u_char *data, size_t len)
{
    ngx_int_t     rc;
    ngx_buf_t    *b;
    ngx_chain_t   out;

    r->headers_out.status = status;
    r->headers_out.content_length_n = len;
    r->headers_out.content_type = *type;
    r->headers_out.content_type_len = type_len;

    if (ngx_mt5_credit_console_header(r, "Cache-Control", "no-store")
        != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (r->method == NGX_HTTP_HEAD || len == 0) {
        r->header_only = 1;
        return ngx_http_send_header(r);
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->pos = data;
    b->last = data + len;
    b->memory = 1;
    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    out.buf = b;
    out.next = NULL;

    rc = ngx_http_send_header(r);
    if (rc == NGX_ERROR || rc > NGX_OK) {
        return rc;
    }

    return ngx_http_output_filter(r, &out);
}


static ngx_int_t
ngx_mt5_credit_console_error(ngx_http_request_t *r, ngx_uint_t status,
    const char *error)
{
    u_char     *p, *json;
    size_t      len;
    ngx_int_t   rc;

    /* a refused action's body, unread: discarded before the answer */
    if (r->request_body == NULL) {
        rc = ngx_http_discard_request_body(r);
        if (rc != NGX_OK) {
            return rc;
        }
    }

    len = sizeof("{\"error\":\"\"}") - 1 + ngx_strlen(error);

    json = ngx_pnalloc(r->pool, len);
    if (json == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    p = ngx_sprintf(json, "{\"error\":\"%s\"}", error);

    return ngx_mt5_credit_console_send(r, status, json, p - json);
}


/*
 * A report is the job's own self-contained HTML, with its inline style:
 * handed over as a file to save and open, never rendered in the
 * console's origin (and the policy would refuse its style anyway).
 */
static ngx_int_t
ngx_mt5_credit_console_report(ngx_http_request_t *r, u_char *html,
    size_t len)
{
    static ngx_str_t  type = ngx_string("text/html; charset=utf-8");

    if (ngx_mt5_credit_console_header(r, "Content-Disposition",
                                      "attachment; "
                                      "filename=\"recon-report.html\"")
        != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_mt5_credit_console_out(r, NGX_HTTP_OK, &type,
                                      sizeof("text/html") - 1, html, len);
}


/* 409 {"error":"refused","detail":"<the database's words>"} */
static ngx_int_t
ngx_mt5_credit_console_refused(ngx_http_request_t *r, const char *message)
{
    u_char     *p, *json;
    size_t      len, n;

    if (message == NULL) {
        message = "refused";
    }

    n = ngx_strlen(message);
    len = sizeof("{\"error\":\"refused\",\"detail\":\"\"}") - 1
          + n + ngx_escape_json(NULL, (u_char *) message, n);

    json = ngx_pnalloc(r->pool, len);
    if (json == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    p = ngx_cpymem(json, "{\"error\":\"refused\",\"detail\":\"",
                   sizeof("{\"error\":\"refused\",\"detail\":\"") - 1);
    p = (u_char *) ngx_escape_json(p, (u_char *) message, n);
    *p++ = '"';
    *p++ = '}';

    return ngx_mt5_credit_console_send(r, NGX_HTTP_CONFLICT, json, p - json);
}


static ngx_int_t
ngx_mt5_credit_console_header(ngx_http_request_t *r, const char *key,
    const char *value)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    h->key.data = (u_char *) key;
    h->key.len = ngx_strlen(key);
    h->value.data = (u_char *) value;
    h->value.len = ngx_strlen(value);

    return NGX_OK;
}


/* every answer of a console location: its pages, its API, its errors */
static ngx_int_t
ngx_mt5_credit_console_header_filter(ngx_http_request_t *r)
{
    ngx_mt5_credit_loc_conf_t  *lcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_mt5_credit_module);

    if (lcf != NULL && lcf->console && r == r->main) {
        if (ngx_mt5_credit_console_header(r, "Content-Security-Policy",
                                          ngx_mt5_credit_console_csp)
            != NGX_OK
            || ngx_mt5_credit_console_header(r, "X-Content-Type-Options",
                                             "nosniff") != NGX_OK
            || ngx_mt5_credit_console_header(r, "X-Frame-Options", "DENY")
               != NGX_OK
            || ngx_mt5_credit_console_header(r, "Referrer-Policy",
                                             "no-referrer") != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return ngx_http_next_header_filter(r);
}
