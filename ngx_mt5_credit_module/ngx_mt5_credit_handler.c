
/*
 * Copyright (C) mt5-credit
 *
 * The webhook content handler.
 *
 *   1. POST only; the signature headers are parsed and the timestamp
 *      checked before the body is read, so junk is refused cheaply.
 *   2. The body is assembled exactly as received (memory buffers, a temp
 *      file, chunks) and the MAC is checked over those bytes, before
 *      anything parses them.
 *   3. One statement, ingest(), stores the event and at most one credit
 *      intent in one transaction.  The answer is sent only after its
 *      result (and so its COMMIT) is read: 200, or 400 for a body that is
 *      not an event; 503 with Retry-After whenever the outcome is not
 *      known, so the provider retries and the unique event key makes the
 *      retry harmless.
 *   4. Only then, and only when a credit was created, a Redis wake-up.
 *
 * Adyen's batches, signed per item, take their own path after step 1
 * (ngx_mt5_credit_handler_adyen.c).
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_mt5_credit_module.h"
#include "ngx_mt5_credit_pg.h"
#include "ngx_mt5_credit_redis.h"
#include "ngx_mt5_credit_handler.h"


static void ngx_mt5_credit_collect_headers(ngx_http_request_t *r,
    ngx_mt5_credit_sig_conf_t *sig, ngx_mt5_credit_ctx_t *ctx);
static void ngx_mt5_credit_header_line(ngx_mt5_credit_header_t *h,
    ngx_table_elt_t *elt);
static void ngx_mt5_credit_body_handler(ngx_http_request_t *r);
static ngx_int_t ngx_mt5_credit_read_body(ngx_http_request_t *r,
    ngx_str_t *body);
static ngx_int_t ngx_mt5_credit_start_ingest(ngx_http_request_t *r,
    ngx_mt5_credit_ctx_t *ctx);
static void ngx_mt5_credit_ingest_done(ngx_mt5_credit_pg_op_t *op,
    ngx_mt5_credit_pg_rc_e rc, PGresult *res, const char *err);
static ngx_int_t ngx_mt5_credit_ingest_answer(ngx_http_request_t *r,
    PGresult *res, ngx_uint_t row);
static ngx_int_t ngx_mt5_credit_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static const char *ngx_mt5_credit_cause(ngx_mt5_credit_stat_e why);


static ngx_str_t  ngx_mt5_credit_stripe_header =
    ngx_string("Stripe-Signature");
static ngx_str_t  ngx_mt5_credit_sw_id = ngx_string("webhook-id");
static ngx_str_t  ngx_mt5_credit_sw_timestamp =
    ngx_string("webhook-timestamp");
static ngx_str_t  ngx_mt5_credit_sw_signature =
    ngx_string("webhook-signature");
static ngx_str_t  ngx_mt5_credit_none = ngx_string("-");
static ngx_str_t  ngx_mt5_credit_null = ngx_string("null");
static ngx_str_t  ngx_mt5_credit_malformed =
    ngx_string("{\"error\":\"malformed_body\"}");


ngx_int_t
ngx_mt5_credit_webhook_handler(ngx_http_request_t *r)
{
    int64_t                      skew;
    ngx_int_t                    rc;
    ngx_table_elt_t             *h;
    ngx_mt5_credit_ctx_t        *ctx;
    ngx_mt5_credit_sig_rc_e      src;
    ngx_mt5_credit_loc_conf_t   *lcf;
    ngx_mt5_credit_main_conf_t  *mcf;
    ngx_mt5_credit_sig_headers_t headers;

    lcf = ngx_http_get_module_loc_conf(r, ngx_mt5_credit_module);
    mcf = ngx_http_get_module_main_conf(r, ngx_mt5_credit_module);

    ngx_mt5_credit_count_r(r, NGX_MT5_CREDIT_STAT_RECEIVED);

    if (r->method != NGX_HTTP_POST) {
        ngx_mt5_credit_count_r(r, NGX_MT5_CREDIT_STAT_REJECTED_METHOD);
        ngx_mt5_credit_count_r(r, NGX_MT5_CREDIT_STAT_RESPONSES_405);
        ngx_mt5_credit_refused_add(mcf, r, &lcf->provider, "method");

        h = ngx_list_push(&r->headers_out.headers);
        if (h == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        h->hash = 1;
        ngx_str_set(&h->key, "Allow");
        ngx_str_set(&h->value, "POST");

        return NGX_HTTP_NOT_ALLOWED;
    }

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_mt5_credit_ctx_t));
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->request = r;
    ngx_http_set_ctx(r, ctx, ngx_mt5_credit_module);

    ngx_mt5_credit_collect_headers(r, lcf->sig, ctx);

    headers.signature.lines = ctx->signature.lines;
    headers.signature.nlines = ctx->signature.n;
    headers.id.lines = ctx->id.lines;
    headers.id.nlines = ctx->id.n;
    headers.timestamp.lines = ctx->timestamp.lines;
    headers.timestamp.nlines = ctx->timestamp.n;

    /* a missing or malformed header needs no body: refuse it unread */
    src = ngx_mt5_credit_sig_parse(lcf->sig, &headers, &ctx->parsed);
    if (src != NGX_MT5_CREDIT_SIG_OK) {
        return ngx_mt5_credit_reject(r, ctx, src, 0);
    }

    src = ngx_mt5_credit_sig_check_time(lcf->sig, &ctx->parsed,
                                        (int64_t) ngx_time(), &skew);
    if (src != NGX_MT5_CREDIT_SIG_OK) {
        return ngx_mt5_credit_reject(r, ctx, src, skew);
    }

    rc = ngx_http_read_client_request_body(r, ngx_mt5_credit_body_handler);

    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }

    return NGX_DONE;
}


/*
 * Finds the scheme's headers.  Every line of a header is counted: nginx
 * keeps repeated lines, and a repeated signature header is malformed.
 */

static void
ngx_mt5_credit_collect_headers(ngx_http_request_t *r,
    ngx_mt5_credit_sig_conf_t *sig, ngx_mt5_credit_ctx_t *ctx)
{
    ngx_str_t         name;
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *elt;

    switch (sig->scheme) {

    case NGX_MT5_CREDIT_SIG_STRIPE:
        name = ngx_mt5_credit_stripe_header;
        break;

    case NGX_MT5_CREDIT_SIG_STANDARD:
        name = ngx_mt5_credit_sw_signature;
        break;

    default: /* NGX_MT5_CREDIT_SIG_HMAC_SHA256 */
        name.data = (u_char *) sig->header;
        name.len = ngx_strlen(sig->header);
        break;
    }

    part = &r->headers_in.headers.part;
    elt = part->elts;

    for (i = 0; /* void */; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            elt = part->elts;
            i = 0;
        }

        if (elt[i].key.len == name.len
            && ngx_strncasecmp(elt[i].key.data, name.data, name.len) == 0)
        {
            ngx_mt5_credit_header_line(&ctx->signature, &elt[i]);
            continue;
        }

        if (sig->scheme != NGX_MT5_CREDIT_SIG_STANDARD) {
            continue;
        }

        if (elt[i].key.len == ngx_mt5_credit_sw_id.len
            && ngx_strncasecmp(elt[i].key.data, ngx_mt5_credit_sw_id.data,
                               ngx_mt5_credit_sw_id.len) == 0)
        {
            ngx_mt5_credit_header_line(&ctx->id, &elt[i]);

        } else if (elt[i].key.len == ngx_mt5_credit_sw_timestamp.len
                   && ngx_strncasecmp(elt[i].key.data,
                                      ngx_mt5_credit_sw_timestamp.data,
                                      ngx_mt5_credit_sw_timestamp.len)
                      == 0)
        {
            ngx_mt5_credit_header_line(&ctx->timestamp, &elt[i]);
        }
    }
}


static void
ngx_mt5_credit_header_line(ngx_mt5_credit_header_t *h, ngx_table_elt_t *elt)
{
    if (h->n < NGX_MT5_CREDIT_MAX_LINES) {
        h->lines[h->n].data = elt->value.data;
        h->lines[h->n].len = elt->value.len;
        h->n++;
    }
}


static void
ngx_mt5_credit_body_handler(ngx_http_request_t *r)
{
    ngx_int_t                    rc;
    ngx_mt5_credit_ctx_t        *ctx;
    ngx_mt5_credit_sig_rc_e      src;
    ngx_mt5_credit_loc_conf_t   *lcf;

    ctx = ngx_http_get_module_ctx(r, ngx_mt5_credit_module);
    lcf = ngx_http_get_module_loc_conf(r, ngx_mt5_credit_module);

    if (ngx_mt5_credit_read_body(r, &ctx->body) != NGX_OK) {
        ngx_mt5_credit_count_r(r, NGX_MT5_CREDIT_STAT_REJECTED_BODY_ERROR);
        ngx_http_finalize_request(r,
            ngx_mt5_credit_unavailable(r, NGX_MT5_CREDIT_STAT_N));
        return;
    }

    /* Adyen signs fields, not bytes: each item is read, then verified */
    if (lcf->sig->scheme == NGX_MT5_CREDIT_SIG_ADYEN) {
        rc = ngx_mt5_credit_adyen_ingest(r, ctx);

        if (rc != NGX_DONE) {
            ngx_http_finalize_request(r, rc);
        }

        return;
    }

    /* the MAC over the exact bytes, before anything parses them */
    src = ngx_mt5_credit_sig_verify(lcf->sig, &ctx->parsed, ctx->body.data,
                                    ctx->body.len);
    if (src != NGX_MT5_CREDIT_SIG_OK) {
        ngx_http_finalize_request(r, ngx_mt5_credit_reject(r, ctx, src, 0));
        return;
    }

    rc = ngx_mt5_credit_start_ingest(r, ctx);

    if (rc == NGX_DONE) {
        /* the body reading's reference is held until ingest_done() */
        return;
    }

    ngx_http_finalize_request(r, rc);
}


/* the body as one contiguous copy of what arrived (ngx_mt5_credit_body.c) */

static ngx_int_t
ngx_mt5_credit_read_body(ngx_http_request_t *r, ngx_str_t *body)
{
    return ngx_mt5_credit_body_assemble(r->request_body != NULL
                                        ? r->request_body->bufs : NULL,
                                        r->pool, r->connection->log, body);
}


static ngx_int_t
ngx_mt5_credit_start_ingest(ngx_http_request_t *r, ngx_mt5_credit_ctx_t *ctx)
{
    int64_t                      ts;
    ngx_int_t                    rc;
    ngx_uint_t                   i;
    const char                  *scheme;
    ngx_http_cleanup_t          *cln;
    ngx_http_variable_value_t   *rid;
    ngx_mt5_credit_pg_op_t      *op;
    ngx_mt5_credit_loc_conf_t   *lcf;
    ngx_mt5_credit_main_conf_t  *mcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_mt5_credit_module);
    mcf = ngx_http_get_module_main_conf(r, ngx_mt5_credit_module);

    if (mcf->pool == NULL) {
        ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                      "mt5_credit: no PostgreSQL pool in this process");
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    op = &ctx->op;
    op->handler = ngx_mt5_credit_ingest_done;
    op->data = ctx;
    op->log = r->connection->log;

    /* binary parameters: lengths are honoured, nothing is escaped */
    for (i = 0; i < NGX_MT5_CREDIT_PG_NPARAMS; i++) {
        op->formats[i] = 1;
    }

    op->values[0] = (const char *) lcf->provider.data;
    op->lengths[0] = (int) lcf->provider.len;

    if (ctx->parsed.id.len) {
        op->values[1] = (const char *) ctx->parsed.id.data;
        op->lengths[1] = (int) ctx->parsed.id.len;
    }

    op->values[2] = (const char *) ctx->body.data;
    op->lengths[2] = (int) ctx->body.len;

    scheme = ngx_mt5_credit_scheme_name(lcf->sig);
    op->values[3] = scheme;
    op->lengths[3] = (int) ngx_strlen(scheme);

    if (ctx->parsed.has_timestamp) {
        ts = ctx->parsed.timestamp;

        for (i = 0; i < 8; i++) {
            ctx->signed_at[7 - i] = (u_char) (ts & 0xff);
            ts >>= 8;
        }

        op->values[4] = (const char *) ctx->signed_at;
        op->lengths[4] = 8;
    }

    /* the id an access_log line carries: the event is found from it */
    rid = ngx_http_get_indexed_variable(r, mcf->request_id_index);

    if (rid != NULL && !rid->not_found && rid->len > 0) {
        op->values[5] = (const char *) rid->data;
        op->lengths[5] = (int) rid->len;
    }

    /* if the request goes away first, the statement is detached */
    cln = ngx_http_cleanup_add(r, 0);
    if (cln == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    cln->handler = ngx_mt5_credit_cleanup;
    cln->data = ctx;

    rc = ngx_mt5_credit_pg_run(mcf->pool, op);

    switch (rc) {

    case NGX_OK:
        return NGX_DONE;

    case NGX_BUSY:
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mt5_credit: PostgreSQL wait queue full (%ui)",
                      mcf->pg_queue_size);
        return ngx_mt5_credit_unavailable(r, NGX_MT5_CREDIT_STAT_QUEUE_FULL);

    default: /* NGX_DECLINED */
        return ngx_mt5_credit_unavailable(r,
                                          NGX_MT5_CREDIT_STAT_DB_UNAVAILABLE);
    }
}


static void
ngx_mt5_credit_ingest_done(ngx_mt5_credit_pg_op_t *op,
    ngx_mt5_credit_pg_rc_e rc, PGresult *res, const char *err)
{
    ngx_int_t              status;
    ngx_connection_t      *c;
    ngx_http_request_t    *r;
    ngx_mt5_credit_ctx_t  *ctx;

    ctx = op->data;
    r = ctx->request;
    c = r->connection;

    ngx_http_set_log_request(c->log, r);

    status = (rc == NGX_MT5_CREDIT_PG_OK)
             ? ngx_mt5_credit_ingest_answer(r, res, op->row)
             : ngx_mt5_credit_ingest_failed(r, rc, err);

    ngx_http_finalize_request(r, status);
    ngx_http_run_posted_requests(c);
}


/* the ingest statement did not return its rows: 503, the outcome said */

ngx_int_t
ngx_mt5_credit_ingest_failed(ngx_http_request_t *r,
    ngx_mt5_credit_pg_rc_e rc, const char *err)
{
    ngx_int_t          status;
    ngx_connection_t  *c;

    c = r->connection;

    switch (rc) {

    case NGX_MT5_CREDIT_PG_FAILED:
        ngx_log_error(NGX_LOG_ERR, c->log, 0,
                      "mt5_credit: ingest failed: %s", err);
        status = ngx_mt5_credit_unavailable(r, NGX_MT5_CREDIT_STAT_DB_ERROR);
        break;

    case NGX_MT5_CREDIT_PG_TIMEOUT:
        ngx_log_error(NGX_LOG_ERR, c->log, 0,
                      "mt5_credit: ingest timed out, outcome unknown: %s",
                      err);
        status = ngx_mt5_credit_unavailable(r,
                                            NGX_MT5_CREDIT_STAT_DB_TIMEOUT);
        break;

    case NGX_MT5_CREDIT_PG_LOST:
        ngx_log_error(NGX_LOG_ERR, c->log, 0,
                      "mt5_credit: ingest interrupted, outcome unknown: %s",
                      err);
        status = ngx_mt5_credit_unavailable(r, NGX_MT5_CREDIT_STAT_DB_ERROR);
        break;

    case NGX_MT5_CREDIT_PG_QUEUE_TIMEOUT:
        status = ngx_mt5_credit_unavailable(r,
                                            NGX_MT5_CREDIT_STAT_QUEUE_TIMEOUT);
        break;

    default: /* NGX_MT5_CREDIT_PG_UNAVAILABLE */
        ngx_mt5_credit_log_outage(c->log,
                                  ngx_http_get_module_main_conf(r,
                                      ngx_mt5_credit_module), err);
        status = ngx_mt5_credit_unavailable(r,
                                            NGX_MT5_CREDIT_STAT_DB_UNAVAILABLE);
        break;
    }

    return status;
}


/*
 * The committed result: row row of res (outcome, credit_id, event_row_id,
 * detail): ingest()'s one row, or this webhook's of a batch.  Wakes a
 * worker if a credit was created, then answers.
 */

static ngx_int_t
ngx_mt5_credit_ingest_answer(ngx_http_request_t *r, PGresult *res,
    ngx_uint_t row)
{
    u_char                      *json, *p;
    size_t                       len;
    int64_t                      credit;
    ngx_str_t                    outcome, credit_id, event_id, detail;
    ngx_uint_t                   level;
    ngx_time_t                  *tp;
    ngx_mt5_credit_ctx_t        *ctx;
    ngx_mt5_credit_loc_conf_t   *lcf;
    ngx_mt5_credit_main_conf_t  *mcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_mt5_credit_module);
    mcf = ngx_http_get_module_main_conf(r, ngx_mt5_credit_module);

    /* ingest()'s one row of four; a batch's one row per webhook, of 7 */
    if (!(PQnfields(res) == 4 && PQntuples(res) == 1 && row == 0)
        && !(PQnfields(res) == 7 && (ngx_uint_t) PQntuples(res) > row))
    {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mt5_credit: ingest() returned %d rows of %d columns",
                      PQntuples(res), PQnfields(res));
        return ngx_mt5_credit_unavailable(r, NGX_MT5_CREDIT_STAT_DB_ERROR);
    }

    outcome.data = (u_char *) PQgetvalue(res, (int) row, 0);
    outcome.len = PQgetlength(res, (int) row, 0);
    credit_id.data = (u_char *) PQgetvalue(res, (int) row, 1);
    credit_id.len = PQgetlength(res, (int) row, 1);
    event_id.data = (u_char *) PQgetvalue(res, (int) row, 2);
    event_id.len = PQgetlength(res, (int) row, 2);
    detail.data = (u_char *) PQgetvalue(res, (int) row, 3);
    detail.len = PQgetlength(res, (int) row, 3);

    /* the result is freed before the access log is written: copies */
    ctx = ngx_http_get_module_ctx(r, ngx_mt5_credit_module);
    if (ctx != NULL) {
        ngx_mt5_credit_keep(r, &ctx->outcome, outcome.data, outcome.len);
        ngx_mt5_credit_keep(r, &ctx->event, event_id.data, event_id.len);
        ngx_mt5_credit_keep(r, &ctx->credit, credit_id.data, credit_id.len);
    }

    if (ngx_strcmp(outcome.data, "malformed") == 0) {
        /* signed, but not an event: nothing was stored */
        ngx_mt5_credit_count_r(r, NGX_MT5_CREDIT_STAT_REJECTED_MALFORMED_BODY);
        ngx_mt5_credit_refused_add(mcf, r, &lcf->provider, "malformed_body");

        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "mt5_credit: webhook rejected: provider=%V "
                      "reason=malformed_body (%V)", &lcf->provider, &detail);

        return ngx_mt5_credit_send(r, NGX_HTTP_BAD_REQUEST,
                                   ngx_mt5_credit_malformed.data,
                                   ngx_mt5_credit_malformed.len);
    }

    /* committed: how long it took, from the request's first byte */
    tp = ngx_timeofday();
    ngx_mt5_credit_stat_ingest(r, (ngx_msec_t)
        ((tp->sec - r->start_sec) * 1000 + (tp->msec - r->start_msec)));

    if (ngx_strcmp(outcome.data, "credit_created") == 0) {
        ngx_mt5_credit_count_r(r, NGX_MT5_CREDIT_STAT_CREDIT_CREATED);

        credit = ngx_atoof(credit_id.data, credit_id.len);

        /* committed: now, and only now, wake a worker */
        if (mcf->redis != NULL && credit > 0) {
            ngx_mt5_credit_redis_wake(mcf->redis, credit,
                                      r->connection->log);
        }

    } else if (ngx_strcmp(outcome.data, "duplicate") == 0) {
        ngx_mt5_credit_count_r(r, NGX_MT5_CREDIT_STAT_DUPLICATE);

    } else if (ngx_strcmp(outcome.data, "conflict") == 0) {
        ngx_mt5_credit_count_r(r, NGX_MT5_CREDIT_STAT_CONFLICT);

    } else if (ngx_strcmp(outcome.data, "case_opened") == 0) {
        ngx_mt5_credit_count_r(r, NGX_MT5_CREDIT_STAT_CASE_OPENED);

    } else {
        ngx_mt5_credit_count_r(r, NGX_MT5_CREDIT_STAT_STORED);
    }

    /* conflicts and cases need a person: make them stand out */
    level = (ngx_strcmp(outcome.data, "conflict") == 0
             || ngx_strcmp(outcome.data, "case_opened") == 0)
            ? NGX_LOG_WARN : NGX_LOG_INFO;

    ngx_log_error(level, r->connection->log, 0,
                  "mt5_credit: webhook %V: provider=%V event_row=%V "
                  "credit=%V%s%V", &outcome, &lcf->provider, &event_id,
                  credit_id.len ? &credit_id : &ngx_mt5_credit_none,
                  detail.len ? " " : "", &detail);

    /* {"outcome":"...","event":N,"credit":N} */
    len = sizeof("{\"outcome\":\"\",\"event\":,\"credit\":}") - 1
          + outcome.len + event_id.len + credit_id.len + 2 * 4;

    json = ngx_pnalloc(r->pool, len);
    if (json == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    p = ngx_sprintf(json, "{\"outcome\":\"%V\",\"event\":%V,\"credit\":%V}",
                    &outcome,
                    event_id.len ? &event_id : &ngx_mt5_credit_null,
                    credit_id.len ? &credit_id : &ngx_mt5_credit_null);

    return ngx_mt5_credit_send(r, NGX_HTTP_OK, json, p - json);
}


void
ngx_mt5_credit_cleanup(void *data)
{
    ngx_mt5_credit_ctx_t  *ctx = data;

    ngx_mt5_credit_pg_cancel(&ctx->op);
}


/*
 * A refused webhook: one log line naming provider, scheme and reason
 * (never a secret or a signature), a counter, and 400.  Nothing reaches
 * the database.
 */

ngx_int_t
ngx_mt5_credit_reject(ngx_http_request_t *r, ngx_mt5_credit_ctx_t *ctx,
    ngx_mt5_credit_sig_rc_e rc, int64_t skew)
{
    u_char                      *json, *p;
    ngx_int_t                    drc;
    const char                  *reason;
    ngx_mt5_credit_stat_e        stat;
    ngx_mt5_credit_loc_conf_t   *lcf;
    ngx_mt5_credit_main_conf_t  *mcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_mt5_credit_module);
    mcf = ngx_http_get_module_main_conf(r, ngx_mt5_credit_module);

    switch (rc) {

    case NGX_MT5_CREDIT_SIG_MISSING_HEADER:
        stat = NGX_MT5_CREDIT_STAT_REJECTED_MISSING_HEADER;
        break;

    case NGX_MT5_CREDIT_SIG_MALFORMED_HEADER:
        stat = NGX_MT5_CREDIT_STAT_REJECTED_MALFORMED_HEADER;
        break;

    case NGX_MT5_CREDIT_SIG_TOO_OLD:
        stat = NGX_MT5_CREDIT_STAT_REJECTED_TOO_OLD;
        break;

    case NGX_MT5_CREDIT_SIG_IN_FUTURE:
        stat = NGX_MT5_CREDIT_STAT_REJECTED_IN_FUTURE;
        break;

    case NGX_MT5_CREDIT_SIG_BAD_SIGNATURE:
        stat = NGX_MT5_CREDIT_STAT_REJECTED_BAD_SIGNATURE;
        break;

    default:
        /* OpenSSL failed: our fault, not the sender's; let it retry */
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mt5_credit: signature check failed internally: %s",
                      ngx_mt5_credit_sig_reason(rc));
        return ngx_mt5_credit_unavailable(r, NGX_MT5_CREDIT_STAT_N);
    }

    ngx_mt5_credit_count_r(r, stat);

    reason = ngx_mt5_credit_sig_reason(rc);

    ngx_str_set(&ctx->outcome, "rejected");
    ctx->reason.data = (u_char *) reason;
    ctx->reason.len = ngx_strlen(reason);

    ngx_mt5_credit_refused_add(mcf, r, &lcf->provider, reason);

    if (ctx->parsed.id.len) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "mt5_credit: webhook rejected: provider=%V scheme=%s "
                      "reason=%s skew=%Ls event=%*s", &lcf->provider,
                      ngx_mt5_credit_scheme_name(lcf->sig), reason, skew,
                      ctx->parsed.id.len, ctx->parsed.id.data);

    } else {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "mt5_credit: webhook rejected: provider=%V scheme=%s "
                      "reason=%s skew=%Ls", &lcf->provider,
                      ngx_mt5_credit_scheme_name(lcf->sig), reason, skew);
    }

    /* before the body was read, nginx must still drain it */
    drc = ngx_http_discard_request_body(r);
    if (drc != NGX_OK) {
        return drc;
    }

    json = ngx_pnalloc(r->pool, sizeof("{\"error\":\"\"}") + 32);
    if (json == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    p = ngx_sprintf(json, "{\"error\":\"%s\"}", reason);

    return ngx_mt5_credit_send(r, NGX_HTTP_BAD_REQUEST, json, p - json);
}


/*
 * 503 + Retry-After: the outcome is unknown or nothing was stored, and
 * the provider's retry is both safe and necessary.
 */

/*
 * PostgreSQL unavailable: every request would say so.  One line a second
 * per worker, with how many were answered 503 since the last; the
 * counters (mt5_credit_status) count each.
 */
void
ngx_mt5_credit_log_outage(ngx_log_t *log, ngx_mt5_credit_main_conf_t *mcf,
    const char *err)
{
    mcf->outage_quiet++;

    if (mcf->outage_once && ngx_current_msec - mcf->outage_logged < 1000) {
        return;
    }

    ngx_log_error(NGX_LOG_ERR, log, 0,
                  "mt5_credit: PostgreSQL unavailable: %s (%ui request%s "
                  "answered 503 since the last line)", err,
                  mcf->outage_quiet, mcf->outage_quiet == 1 ? "" : "s");

    mcf->outage_quiet = 0;
    mcf->outage_logged = ngx_current_msec;
    mcf->outage_once = 1;
}


ngx_int_t
ngx_mt5_credit_unavailable(ngx_http_request_t *r, ngx_mt5_credit_stat_e why)
{
    u_char                      *p;
    ngx_table_elt_t             *h;
    ngx_mt5_credit_ctx_t        *ctx;
    ngx_mt5_credit_main_conf_t  *mcf;

    static u_char  json[] = "{\"error\":\"temporarily_unavailable\"}";

    mcf = ngx_http_get_module_main_conf(r, ngx_mt5_credit_module);

    ctx = ngx_http_get_module_ctx(r, ngx_mt5_credit_module);
    if (ctx != NULL) {
        ngx_str_set(&ctx->outcome, "unavailable");
        ngx_str_null(&ctx->reason);
        if (why != NGX_MT5_CREDIT_STAT_N) {
            ctx->reason.data = (u_char *) ngx_mt5_credit_cause(why);
            ctx->reason.len = ngx_strlen(ctx->reason.data);
        }
    }

    if (why != NGX_MT5_CREDIT_STAT_N) {
        ngx_mt5_credit_count_r(r, why);
    }

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    p = ngx_pnalloc(r->pool, NGX_TIME_T_LEN);
    if (p == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Retry-After");
    h->value.data = p;
    h->value.len = ngx_sprintf(p, "%T", mcf->retry_after) - p;

    return ngx_mt5_credit_send(r, NGX_HTTP_SERVICE_UNAVAILABLE, json,
                               sizeof(json) - 1);
}


ngx_int_t
ngx_mt5_credit_send(ngx_http_request_t *r, ngx_uint_t status, u_char *json,
    size_t len)
{
    return ngx_mt5_credit_send_type(r, status, "application/json", json,
                                    len);
}


/* a provider that wants other than JSON back (Adyen: "[accepted]") */

ngx_int_t
ngx_mt5_credit_send_type(ngx_http_request_t *r, ngx_uint_t status,
    const char *type, u_char *json, size_t len)
{
    ngx_int_t     rc;
    ngx_buf_t    *b;
    ngx_chain_t   out;

    ngx_mt5_credit_count_r(r, status == NGX_HTTP_OK
                              ? NGX_MT5_CREDIT_STAT_RESPONSES_200
                              : status == NGX_HTTP_BAD_REQUEST
                              ? NGX_MT5_CREDIT_STAT_RESPONSES_400
                              : NGX_MT5_CREDIT_STAT_RESPONSES_503);

    r->headers_out.status = status;
    r->headers_out.content_length_n = len;
    r->headers_out.content_type.data = (u_char *) type;
    r->headers_out.content_type.len = ngx_strlen(type);
    r->headers_out.content_type_len = r->headers_out.content_type.len;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_ERROR;
    }

    b->pos = json;
    b->last = json + len;
    b->memory = 1;
    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


const char *
ngx_mt5_credit_scheme_name(ngx_mt5_credit_sig_conf_t *sig)
{
    switch (sig->scheme) {

    case NGX_MT5_CREDIT_SIG_STRIPE:
        return "stripe";

    case NGX_MT5_CREDIT_SIG_STANDARD:
        return "standard";

    case NGX_MT5_CREDIT_SIG_ADYEN:
        return "adyen";

    default:
        return "hmac-sha256";
    }
}


/*
 * $mt5_credit_outcome  stored, duplicate, conflict, credit_created,
 *                      case_opened, malformed, rejected, unavailable
 * $mt5_credit_reason   why it was rejected or unavailable
 * $mt5_credit_event    our stored event's row
 * $mt5_credit_credit   the credit it made or names
 * Each is "not found" (logged "-") where it does not apply.
 */

static ngx_http_variable_t  ngx_mt5_credit_variables[] = {
    { ngx_string("mt5_credit_outcome"), NULL, ngx_mt5_credit_variable,
      offsetof(ngx_mt5_credit_ctx_t, outcome), NGX_HTTP_VAR_NOCACHEABLE, 0 },
    { ngx_string("mt5_credit_reason"), NULL, ngx_mt5_credit_variable,
      offsetof(ngx_mt5_credit_ctx_t, reason), NGX_HTTP_VAR_NOCACHEABLE, 0 },
    { ngx_string("mt5_credit_event"), NULL, ngx_mt5_credit_variable,
      offsetof(ngx_mt5_credit_ctx_t, event), NGX_HTTP_VAR_NOCACHEABLE, 0 },
    { ngx_string("mt5_credit_credit"), NULL, ngx_mt5_credit_variable,
      offsetof(ngx_mt5_credit_ctx_t, credit), NGX_HTTP_VAR_NOCACHEABLE, 0 },
    ngx_http_null_variable
};


ngx_int_t
ngx_mt5_credit_add_variables(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var, *v;

    for (v = ngx_mt5_credit_variables; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    return ngx_mt5_credit_console_add_variables(cf);
}


static ngx_int_t
ngx_mt5_credit_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v,
    uintptr_t data)
{
    ngx_str_t             *s;
    ngx_mt5_credit_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_mt5_credit_module);
    if (ctx == NULL) {
        v->not_found = 1;
        return NGX_OK;
    }

    s = (ngx_str_t *) ((u_char *) ctx + data);
    if (s->len == 0) {
        v->not_found = 1;
        return NGX_OK;
    }

    v->len = s->len;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;
    v->data = s->data;

    return NGX_OK;
}


void
ngx_mt5_credit_keep(ngx_http_request_t *r, ngx_str_t *to, u_char *from,
    size_t len)
{
    to->len = 0;

    if (len == 0) {
        return;
    }

    to->data = ngx_pnalloc(r->pool, len);
    if (to->data == NULL) {
        return;                     /* logged as "-": no worse than that */
    }

    ngx_memcpy(to->data, from, len);
    to->len = len;
}


/* the cause label of mt5credit_db_failures_total, for $mt5_credit_reason */
static const char *
ngx_mt5_credit_cause(ngx_mt5_credit_stat_e why)
{
    switch (why) {
    case NGX_MT5_CREDIT_STAT_DB_ERROR:      return "error";
    case NGX_MT5_CREDIT_STAT_DB_TIMEOUT:    return "timeout";
    case NGX_MT5_CREDIT_STAT_DB_UNAVAILABLE: return "unavailable";
    case NGX_MT5_CREDIT_STAT_QUEUE_FULL:    return "queue_full";
    case NGX_MT5_CREDIT_STAT_QUEUE_TIMEOUT: return "queue_timeout";
    default:                                return "";
    }
}
