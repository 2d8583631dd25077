
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
 *               alias /usr/share/mt5credit/console/;
 *           }
 *       }
 *   }
 *
 * <location>api/<endpoint> is answered here; every other path is the
 * shipped assets, which nginx's static module serves.  Each API request
 * is one simple query on the console's own pool (its own login, sql/052),
 * one implicit transaction:
 *
 *   SET LOCAL statement_timeout = ...; SET LOCAL ROLE "<person>"; SELECT ...
 *
 * so the person's role ends with the transaction, and what the person may
 * do is what the database grants them: a role that does not exist, that
 * the console's login may not become, or that is no person (053's
 * person()) is 403.  Every value in the query is checked against a strict
 * pattern first, and the person is a quoted identifier of such a pattern.
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

#include "ngx_mt5_credit_module.h"
#include "ngx_mt5_credit_pg.h"


#define NGX_MT5_CREDIT_CONSOLE_TIMEOUT  10000    /* ms, statement_timeout */
#define NGX_MT5_CREDIT_CONSOLE_TOKEN    32       /* hex digits */
#define NGX_MT5_CREDIT_CONSOLE_BODY     65536    /* an action's JSON */


typedef struct {
    ngx_mt5_credit_pg_op_t        op;
    ngx_http_request_t           *request;
    unsigned                      report:1;   /* an HTML download */
} ngx_mt5_credit_console_ctx_t;


static ngx_int_t ngx_mt5_credit_console_handler(ngx_http_request_t *r);
static ngx_int_t ngx_mt5_credit_console_person(ngx_http_request_t *r,
    ngx_str_t *who);
static ngx_int_t ngx_mt5_credit_console_start(ngx_http_request_t *r,
    ngx_str_t *who, ngx_str_t *select, ngx_uint_t held, ngx_uint_t report);
static ngx_int_t ngx_mt5_credit_console_query(ngx_http_request_t *r,
    ngx_str_t *endpoint, ngx_str_t *who, ngx_str_t *select,
    ngx_uint_t *report);
static ngx_int_t ngx_mt5_credit_console_post(ngx_http_request_t *r,
    ngx_str_t *who);
static ngx_uint_t ngx_mt5_credit_console_same_origin(ngx_http_request_t *r);
static ngx_table_elt_t *ngx_mt5_credit_console_find(ngx_http_request_t *r,
    const char *name);
static void ngx_mt5_credit_console_body(ngx_http_request_t *r);
static ngx_int_t ngx_mt5_credit_console_act(ngx_http_request_t *r,
    ngx_str_t *who, ngx_str_t *body);
static void ngx_mt5_credit_console_token(ngx_http_request_t *r,
    ngx_str_t *who, u_char *token);
static ngx_int_t ngx_mt5_credit_console_arg(ngx_http_request_t *r,
    const char *name, const char *allowed, size_t max, ngx_str_t *literal);
static ngx_uint_t ngx_mt5_credit_console_person_ok(ngx_str_t *who);
static void ngx_mt5_credit_console_done(ngx_mt5_credit_pg_op_t *op,
    ngx_mt5_credit_pg_rc_e rc, PGresult *res, const char *err);
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
    /* no such case (sql/010) */
    { "MC044", NGX_HTTP_NOT_FOUND, "not_found" },
    /* an argument of the wrong type, or a JSON body that is not JSON */
    { "22P02", NGX_HTTP_BAD_REQUEST, "bad_argument" },
    { "22003", NGX_HTTP_BAD_REQUEST, "bad_argument" },
    { "22007", NGX_HTTP_BAD_REQUEST, "bad_argument" },
    { "22008", NGX_HTTP_BAD_REQUEST, "bad_argument" },
    { NULL, 0, NULL }
};


/* the endpoints' statements; each %V is a checked literal or NULL */
/*
 * The reading endpoints: each a statement whose %V are its arguments'
 * literals, in the order listed, each once ('value' or NULL, checked
 * against its characters and length first; a required one may not be
 * NULL).  api/whoami is apart: its statement carries the person's token.
 */

#define NGX_MT5_CREDIT_CONSOLE_ARGS  5

#define NGX_MT5_CREDIT_LOWER   "abcdefghijklmnopqrstuvwxyz"
#define NGX_MT5_CREDIT_DIGITS  "0123456789"

typedef struct {
    const char                      *name;
    const char                      *allowed;
    size_t                           max;
    ngx_uint_t                       required;
} ngx_mt5_credit_console_param_t;

typedef struct {
    ngx_str_t                        name;
    const char                      *sql;
    ngx_mt5_credit_console_param_t   args[NGX_MT5_CREDIT_CONSOLE_ARGS];
    ngx_uint_t                       report;    /* an HTML download */
} ngx_mt5_credit_console_endpoint_t;


#define NGX_MT5_CREDIT_CONSOLE_ID  { "id", NGX_MT5_CREDIT_DIGITS, 18, 1 }

static ngx_mt5_credit_console_endpoint_t  ngx_mt5_credit_console_endpoints[] = {

    /* the queue: by kind, status, age (minutes), severity and owner */
    { ngx_string("cases"),
      "SELECT coalesce(jsonb_agg(to_jsonb(c) ORDER BY c.priority, "
      "c.opened_at), '[]')::text "
      "FROM mt5credit.case_list(%V, %V, %V::integer * interval '1 minute', "
      "500) c WHERE c.severity = coalesce(%V, c.severity) "
      "AND c.assigned_to IS NOT DISTINCT FROM coalesce(%V, c.assigned_to)",
      { { "kind", NGX_MT5_CREDIT_LOWER "_", 40, 0 },
        { "status", NGX_MT5_CREDIT_LOWER "_", 40, 0 },
        { "age", NGX_MT5_CREDIT_DIGITS, 7, 0 },
        { "severity", NGX_MT5_CREDIT_LOWER, 16, 0 },
        { "owner", NGX_MT5_CREDIT_LOWER NGX_MT5_CREDIT_DIGITS "_.@-", 63,
          0 } }, 0 },

    { ngx_string("case"),
      "SELECT mt5credit.case_show(%V::bigint)::text",
      { NGX_MT5_CREDIT_CONSOLE_ID }, 0 },

    /* the stored events, as mt5credit events list searches them */
    { ngx_string("events"),
      "SELECT coalesce(jsonb_agg(to_jsonb(e)), '[]')::text "
      "FROM mt5credit.events_list(%V, %V, %V, NULL, %V, NULL, NULL, %V, "
      "500) e",
      { { "provider", NGX_MT5_CREDIT_LOWER NGX_MT5_CREDIT_DIGITS "_-", 32,
          0 },
        { "type", NGX_MT5_CREDIT_LOWER NGX_MT5_CREDIT_DIGITS "_.", 100, 0 },
        { "disposition", NGX_MT5_CREDIT_LOWER "_", 40, 0 },
        { "deposit", NGX_MT5_CREDIT_LOWER NGX_MT5_CREDIT_DIGITS "_", 40, 0 },
        { "request_id", NGX_MT5_CREDIT_DIGITS "abcdef", 32, 0 } }, 0 },

    { ngx_string("event"),
      "SELECT mt5credit.event_show(%V::bigint)::text",
      { NGX_MT5_CREDIT_CONSOLE_ID }, 0 },

    { ngx_string("withdrawals"),
      "SELECT coalesce(jsonb_agg(to_jsonb(q)), '[]')::text "
      "FROM mt5credit.withdrawal_queue(%V, 500) q",
      { { "status", NGX_MT5_CREDIT_LOWER "_", 40, 0 } }, 0 },

    { ngx_string("withdrawal"),
      "SELECT mt5credit.withdrawal_show(%V)::text",
      { { "ref", NGX_MT5_CREDIT_LOWER NGX_MT5_CREDIT_DIGITS "_", 40, 1 } },
      0 },

    /* what people search by: references, clients, logins, payment ids */
    { ngx_string("search"),
      "SELECT mt5credit.console_search(%V)::text",
      { { "q", NGX_MT5_CREDIT_LOWER "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
               NGX_MT5_CREDIT_DIGITS "_.:@-", 128, 1 } }, 0 },

    /* reconciliation: the runs, newest day first; one run's findings */
    { ngx_string("recon_runs"),
      "SELECT coalesce(jsonb_agg(to_jsonb(x) ORDER BY x.business_day DESC, "
      "x.id DESC), '[]')::text FROM (SELECT r.id, r.provider, "
      "r.business_day, r.currency, r.verdict, r.reason, r.started_by, "
      "r.started_at, r.finished_at, (SELECT jsonb_object_agg(c.name, c.n) "
      "FROM mt5credit.recon_count c WHERE c.run_id = r.id AND c.dimension = "
      "'summary') AS counts FROM mt5credit.recon_run r "
      "WHERE r.provider = coalesce(%V, r.provider) "
      "ORDER BY r.business_day DESC, r.id DESC LIMIT 500) x",
      { { "provider", NGX_MT5_CREDIT_LOWER NGX_MT5_CREDIT_DIGITS "_-", 32,
          0 } }, 0 },

    { ngx_string("recon_run"),
      "SELECT (SELECT to_jsonb(r) || jsonb_build_object("
      "'counts', (SELECT coalesce(jsonb_agg(to_jsonb(c)), '[]') "
      "FROM mt5credit.recon_count c WHERE c.run_id = r.id), "
      "'items', (SELECT coalesce(jsonb_agg(to_jsonb(i) ORDER BY i.id), "
      "'[]') FROM mt5credit.recon_item i WHERE i.run_id = r.id), "
      "'in_transit_settlement', (SELECT coalesce(jsonb_agg(to_jsonb(t)), "
      "'[]') FROM mt5credit.recon_transit_settlement t "
      "WHERE t.run_id = r.id), "
      "'in_transit_credit', (SELECT coalesce(jsonb_agg(to_jsonb(t)), '[]') "
      "FROM mt5credit.recon_transit_credit t WHERE t.run_id = r.id)) "
      "FROM mt5credit.recon_run r WHERE r.id = %V::bigint)::text",
      { NGX_MT5_CREDIT_CONSOLE_ID }, 0 },

    /* a run's HTML report, as the job wrote it (sql/058), to download */
    { ngx_string("recon_report"),
      "SELECT (SELECT html FROM mt5credit.recon_report "
      "WHERE run_id = %V::bigint)",
      { NGX_MT5_CREDIT_CONSOLE_ID }, 1 },

    { ngx_string("status"),
      "SELECT jsonb_build_object("
      "'work', (SELECT coalesce(jsonb_agg(to_jsonb(w)), '[]') "
      "FROM mt5credit.work_status() w), "
      "'pauses', (SELECT coalesce(jsonb_agg(to_jsonb(p)), '[]') "
      "FROM mt5credit.pause_list(false) p), "
      "'reconciled', (SELECT coalesce(jsonb_agg(to_jsonb(f)), '[]') "
      "FROM mt5credit.recon_freshness() f), "
      "'backfills', (SELECT coalesce(jsonb_agg(to_jsonb(b)), '[]') "
      "FROM mt5credit.backfill_requests_list() b))::text",
      { { NULL, NULL, 0, 0 } }, 0 },

    { ngx_null_string, NULL, { { NULL, NULL, 0, 0 } }, 0 }
};


static const char  ngx_mt5_credit_console_act_sql[] =
    "SELECT mt5credit.console_act(%*s%V%*s::jsonb)::text";
static const char  ngx_mt5_credit_console_whoami[] =
    "SELECT (mt5credit.console_whoami() || "
    "jsonb_build_object('csrf', '%*s'))::text";


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
    ngx_int_t                    rc;
    ngx_str_t                    rest, endpoint, select, who;
    ngx_uint_t                   report;
    ngx_http_core_loc_conf_t    *clcf;
    ngx_mt5_credit_loc_conf_t   *lcf;

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

    rest.data = r->uri.data + clcf->name.len + sizeof("api/") - 1;
    rest.len = r->uri.len - clcf->name.len - (sizeof("api/") - 1);
    endpoint = rest;

    /* read only for an action that passed its checks: else discarded, so
       that its bytes are never taken for the next request */
    if (r->method != NGX_HTTP_POST) {
        rc = ngx_http_discard_request_body(r);
        if (rc != NGX_OK) {
            return rc;
        }
    }

    if (!(r->method & (NGX_HTTP_GET | NGX_HTTP_HEAD | NGX_HTTP_POST))) {
        rc = ngx_mt5_credit_console_header(r, "Allow", "GET, HEAD, POST");
        if (rc != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        return ngx_mt5_credit_console_error(r, NGX_HTTP_NOT_ALLOWED,
                                            "method_not_allowed");
    }

    rc = ngx_mt5_credit_console_person(r, &who);
    if (rc != NGX_OK) {
        return rc;
    }

    if (r->method == NGX_HTTP_POST) {
        if (endpoint.len != 3 || ngx_strncmp(endpoint.data, "act", 3) != 0) {
            return ngx_mt5_credit_console_error(r, NGX_HTTP_NOT_FOUND,
                                                "no_such_endpoint");
        }

        return ngx_mt5_credit_console_post(r, &who);
    }

    rc = ngx_mt5_credit_console_query(r, &endpoint, &who, &select, &report);
    if (rc != NGX_OK) {
        return rc;
    }

    return ngx_mt5_credit_console_start(r, &who, &select, 0, report);
}


/* the person nginx let in, as a role name; else the answer (403) */
static ngx_int_t
ngx_mt5_credit_console_person(ngx_http_request_t *r, ngx_str_t *who)
{
    ngx_mt5_credit_loc_conf_t  *lcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_mt5_credit_module);

    if (ngx_http_complex_value(r, lcf->console_person, who) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* nginx let the request in, but it names nobody we can act for */
    if (!ngx_mt5_credit_console_person_ok(who)) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "mt5_credit: console: no person in \"%V\"", who);
        return ngx_mt5_credit_console_error(r, NGX_HTTP_FORBIDDEN,
                                            "no_person");
    }

    return NGX_OK;
}


/*
 * The statement an endpoint asks for, its arguments checked; *report: it
 * answers an HTML report to download.
 */
static ngx_int_t
ngx_mt5_credit_console_query(ngx_http_request_t *r, ngx_str_t *endpoint,
    ngx_str_t *who, ngx_str_t *select, ngx_uint_t *report)
{
    u_char                             *p;
    size_t                              len;
    ngx_str_t                           v[NGX_MT5_CREDIT_CONSOLE_ARGS];
    ngx_uint_t                          i;
    ngx_mt5_credit_console_param_t     *a;
    ngx_mt5_credit_console_endpoint_t  *e;
    u_char                              token[NGX_MT5_CREDIT_CONSOLE_TOKEN];

    *report = 0;

    /* who, what they may, and the token their actions must carry */
    if (endpoint->len == 6 && ngx_strncmp(endpoint->data, "whoami", 6) == 0) {
        ngx_mt5_credit_console_token(r, who, token);

        len = sizeof(ngx_mt5_credit_console_whoami)
              + NGX_MT5_CREDIT_CONSOLE_TOKEN;
        p = ngx_pnalloc(r->pool, len);
        if (p == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        select->data = p;
        p = ngx_sprintf(p, ngx_mt5_credit_console_whoami,
                        (size_t) NGX_MT5_CREDIT_CONSOLE_TOKEN, token);
        select->len = p - select->data;
        return NGX_OK;
    }

    for (e = ngx_mt5_credit_console_endpoints; e->sql; e++) {
        if (e->name.len == endpoint->len
            && ngx_strncmp(e->name.data, endpoint->data, endpoint->len) == 0)
        {
            break;
        }
    }

    if (e->sql == NULL) {
        return ngx_mt5_credit_console_error(r, NGX_HTTP_NOT_FOUND,
                                            "no_such_endpoint");
    }

    len = ngx_strlen(e->sql) + 1;

    for (i = 0; i < NGX_MT5_CREDIT_CONSOLE_ARGS; i++) {
        a = &e->args[i];
        ngx_str_set(&v[i], "NULL");

        if (a->name == NULL) {
            continue;
        }

        if (ngx_mt5_credit_console_arg(r, a->name, a->allowed, a->max, &v[i])
            != NGX_OK
            || (a->required && v[i].data[0] != '\''))
        {
            return ngx_mt5_credit_console_error(r, NGX_HTTP_BAD_REQUEST,
                                                "bad_argument");
        }

        len += v[i].len;
    }

    p = ngx_pnalloc(r->pool, len);
    if (p == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* a statement reads as many of the five as it names, in order */
    select->data = p;
    p = ngx_sprintf(p, e->sql, &v[0], &v[1], &v[2], &v[3], &v[4]);
    select->len = p - select->data;

    *report = e->report;

    return NGX_OK;
}


/*
 * An argument as an SQL literal: 'value' when present, every byte of it
 * in allowed and at most max of them; NULL when absent.  NGX_ERROR: it is
 * present and not of that shape.
 */
static ngx_int_t
ngx_mt5_credit_console_arg(ngx_http_request_t *r, const char *name,
    const char *allowed, size_t max, ngx_str_t *literal)
{
    u_char     *p;
    ngx_str_t   value;
    ngx_uint_t  i;

    if (ngx_http_arg(r, (u_char *) name, ngx_strlen(name), &value)
        != NGX_OK
        || value.len == 0)
    {
        ngx_str_set(literal, "NULL");
        return NGX_OK;
    }

    if (value.len > max) {
        return NGX_ERROR;
    }

    for (i = 0; i < value.len; i++) {
        if (value.data[i] == '\0'
            || ngx_strchr(allowed, value.data[i]) == NULL)
        {
            return NGX_ERROR;
        }
    }

    p = ngx_pnalloc(r->pool, value.len + 2);
    if (p == NULL) {
        return NGX_ERROR;
    }

    literal->data = p;
    *p++ = '\'';
    p = ngx_cpymem(p, value.data, value.len);
    *p++ = '\'';
    literal->len = p - literal->data;

    return NGX_OK;
}


/* a person's role name: lower case, as the roles are made (docs/console.md) */
static ngx_uint_t
ngx_mt5_credit_console_person_ok(ngx_str_t *who)
{
    u_char      ch;
    ngx_uint_t  i;

    if (who->len == 0 || who->len > 63
        || who->data[0] < 'a' || who->data[0] > 'z')
    {
        return 0;
    }

    for (i = 1; i < who->len; i++) {
        ch = who->data[i];

        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')
              || ch == '_' || ch == '.' || ch == '@' || ch == '-'))
        {
            return 0;
        }
    }

    return 1;
}


/*
 * The statement on the console's pool, as the person.  held: the body
 * reading holds the request until the answer; else it is held here.
 * report: the one value is an HTML report to download, not JSON.
 */
static ngx_int_t
ngx_mt5_credit_console_start(ngx_http_request_t *r, ngx_str_t *who,
    ngx_str_t *select, ngx_uint_t held, ngx_uint_t report)
{
    u_char                        *p;
    size_t                         len;
    ngx_int_t                      rc;
    ngx_http_cleanup_t            *cln;
    ngx_mt5_credit_console_ctx_t  *ctx;
    ngx_mt5_credit_main_conf_t    *mcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_mt5_credit_module);

    if (mcf->console_pool == NULL) {
        ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                      "mt5_credit: no console pool in this process");
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_mt5_credit_console_ctx_t));
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    len = sizeof("SET LOCAL statement_timeout = ; SET LOCAL ROLE \"\"; ")
          + NGX_INT_T_LEN + who->len + select->len;

    p = ngx_pnalloc(r->pool, len);
    if (p == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->op.sql = (const char *) p;
    p = ngx_sprintf(p, "SET LOCAL statement_timeout = %d; "
                    "SET LOCAL ROLE \"%V\"; %V",
                    NGX_MT5_CREDIT_CONSOLE_TIMEOUT, who, select);
    *p = '\0';

    ctx->request = r;
    ctx->report = report ? 1 : 0;
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

        status = ngx_mt5_credit_console_send(r, NGX_HTTP_OK, json, len);
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


/*
 * An action: POST <location>api/act, a JSON object that sql/055's
 * console_act() reads.  Before its body is read: JSON only (a cross-site
 * form cannot send it without a preflight), from this origin, with the
 * person's token (api/whoami gives it), of a bounded size.
 */
static ngx_int_t
ngx_mt5_credit_console_post(ngx_http_request_t *r, ngx_str_t *who)
{
    ngx_int_t         rc;
    ngx_table_elt_t  *h;
    u_char            token[NGX_MT5_CREDIT_CONSOLE_TOKEN];

    if (r->headers_in.content_type == NULL
        || r->headers_in.content_type->value.len < 16
        || ngx_strncasecmp(r->headers_in.content_type->value.data,
                           (u_char *) "application/json", 16) != 0)
    {
        return ngx_mt5_credit_console_error(r,
                   NGX_HTTP_UNSUPPORTED_MEDIA_TYPE, "json_only");
    }

    if (!ngx_mt5_credit_console_same_origin(r)) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "mt5_credit: console: an action from another origin "
                      "refused (person %V)", who);
        return ngx_mt5_credit_console_error(r, NGX_HTTP_FORBIDDEN,
                                            "cross_origin");
    }

    ngx_mt5_credit_console_token(r, who, token);
    h = ngx_mt5_credit_console_find(r, "X-CSRF-Token");

    if (h == NULL || h->value.len != NGX_MT5_CREDIT_CONSOLE_TOKEN
        || CRYPTO_memcmp(h->value.data, token, NGX_MT5_CREDIT_CONSOLE_TOKEN)
           != 0)
    {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "mt5_credit: console: an action without its token "
                      "refused (person %V)", who);
        return ngx_mt5_credit_console_error(r, NGX_HTTP_FORBIDDEN, "csrf");
    }

    if (r->headers_in.content_length_n > NGX_MT5_CREDIT_CONSOLE_BODY) {
        return ngx_mt5_credit_console_error(r,
                   NGX_HTTP_REQUEST_ENTITY_TOO_LARGE, "too_large");
    }

    rc = ngx_http_read_client_request_body(r, ngx_mt5_credit_console_body);

    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }

    return NGX_DONE;
}


/*
 * The Origin a browser sends with every POST names this host; without
 * it, the Referer must.  A TLS proxy in front may change the scheme, not
 * the host: the host is compared.
 */
static ngx_uint_t
ngx_mt5_credit_console_same_origin(ngx_http_request_t *r)
{
    u_char           *p, *last;
    ngx_str_t         host, from;
    ngx_table_elt_t  *h;

    if (r->headers_in.host == NULL) {
        return 0;
    }

    host = r->headers_in.host->value;

    h = ngx_mt5_credit_console_find(r, "Origin");
    if (h == NULL) {
        h = r->headers_in.referer;
    }

    if (h == NULL) {
        return 0;
    }

    from = h->value;
    p = from.data;
    last = from.data + from.len;

    if (from.len > 7 && ngx_strncasecmp(p, (u_char *) "http://", 7) == 0) {
        p += 7;

    } else if (from.len > 8
               && ngx_strncasecmp(p, (u_char *) "https://", 8) == 0)
    {
        p += 8;

    } else {
        return 0;                       /* "null", or another scheme */
    }

    if ((size_t) (last - p) < host.len
        || ngx_strncasecmp(p, host.data, host.len) != 0)
    {
        return 0;
    }

    p += host.len;

    return p == last || *p == '/';
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


static void
ngx_mt5_credit_console_body(ngx_http_request_t *r)
{
    ngx_int_t                   rc;
    ngx_str_t                   who, body;
    ngx_mt5_credit_loc_conf_t  *lcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_mt5_credit_module);

    /* checked before the body was read; the same value now */
    if (ngx_http_complex_value(r, lcf->console_person, &who) != NGX_OK
        || ngx_mt5_credit_body_assemble(r->request_body != NULL
                                        ? r->request_body->bufs : NULL,
                                        r->pool, r->connection->log, &body)
           != NGX_OK)
    {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    rc = ngx_mt5_credit_console_act(r, &who, &body);

    if (rc == NGX_DONE) {
        /* the body reading's reference is held until the answer */
        return;
    }

    ngx_http_finalize_request(r, rc);
}


/*
 * The body goes to SQL as one dollar-quoted literal, which has no escapes:
 * its tag is random, and absent from the body.  A body that is not UTF-8
 * text, or holds a NUL, never gets that far.
 */
static ngx_int_t
ngx_mt5_credit_console_act(ngx_http_request_t *r, ngx_str_t *who,
    ngx_str_t *body)
{
    u_char      *p, *last, tag[24];
    size_t       len, n;
    uint32_t     ch;
    ngx_str_t    select;
    ngx_uint_t   tries;

    if (body->len == 0 || body->len > NGX_MT5_CREDIT_CONSOLE_BODY) {
        return ngx_mt5_credit_console_error(r, NGX_HTTP_BAD_REQUEST,
                                            "bad_body");
    }

    p = body->data;
    last = body->data + body->len;

    while (p < last) {
        if (*p < 0x80) {
            if (*p == '\0') {
                return ngx_mt5_credit_console_error(r, NGX_HTTP_BAD_REQUEST,
                                                    "bad_body");
            }
            p++;
            continue;
        }

        ch = ngx_utf8_decode(&p, last - p);
        if (ch > 0x10ffff) {
            return ngx_mt5_credit_console_error(r, NGX_HTTP_BAD_REQUEST,
                                                "bad_body");
        }
    }

    for (tries = 0; /* void */ ; tries++) {
        if (tries == 8) {
            return ngx_mt5_credit_console_error(r, NGX_HTTP_BAD_REQUEST,
                                                "bad_body");
        }

        n = ngx_sprintf(tag, "$mc%08xD%08xD$", (uint32_t) ngx_random(),
                        (uint32_t) ngx_random()) - tag;

        if (ngx_strlcasestrn(body->data, last, tag, n - 1) == NULL) {
            break;
        }
    }

    len = sizeof(ngx_mt5_credit_console_act_sql) + 2 * n + body->len;

    p = ngx_pnalloc(r->pool, len);
    if (p == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    select.data = p;
    p = ngx_sprintf(p, ngx_mt5_credit_console_act_sql, n, tag, body, n, tag);
    select.len = p - select.data;

    return ngx_mt5_credit_console_start(r, who, &select, 1, 0);
}


/*
 * The token a person's actions carry: HMAC-SHA256 of the person's name
 * under a key made at start (a page fetches it again before each action,
 * so a restart costs nothing), in hex.
 */
static void
ngx_mt5_credit_console_token(ngx_http_request_t *r, ngx_str_t *who,
    u_char *token)
{
    u_char                       mac[EVP_MAX_MD_SIZE];
    unsigned int                 maclen;
    ngx_mt5_credit_main_conf_t  *mcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_mt5_credit_module);

    maclen = 0;
    (void) HMAC(EVP_sha256(), mcf->console_key, sizeof(mcf->console_key),
                who->data, who->len, mac, &maclen);

    ngx_hex_dump(token, mac, NGX_MT5_CREDIT_CONSOLE_TOKEN / 2);
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
