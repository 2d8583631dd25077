
/*
 * Copyright (C) mt5-credit
 *
 * Adyen's standard notifications: one request, several events, each
 * signed on its own (ngx_mt5_credit_adyen.h).
 *
 *   1. The body is read strictly; a body that cannot be read is refused
 *      whole (400), nothing stored: no item of it is known to be Adyen's.
 *   2. Each item's signature is checked; an item that fails is not
 *      stored and is logged by its position, never by its unverified
 *      contents.
 *   3. The verified items are stored by one ingest_batch() statement,
 *      each its own event under pspReference:eventCode:success, in one
 *      transaction: a failing item never loses the others (each has its
 *      row and its error), and a retry finds the stored ones duplicates.
 *   4. "[accepted]" only when every item of the request is stored; else
 *      400 (an item refused: Adyen retries, and its Customer Area shows
 *      the failures) or 503 (the outcome is not known), so Adyen sends
 *      the whole batch again.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_mt5_credit_module.h"
#include "ngx_mt5_credit_pg.h"
#include "ngx_mt5_credit_redis.h"
#include "ngx_mt5_credit_handler.h"
#include "ngx_mt5_credit_adyen.h"


typedef struct {
    ngx_mt5_credit_adyen_t        read;
    ngx_mt5_credit_pg_op_t       *rows;     /* a verified item's parameters
                                               each, for the batch arrays */
    ngx_mt5_credit_pg_op_t      **row;
    ngx_uint_t                    nrows;
    ngx_uint_t                    nbad;     /* items whose MAC failed */
} ngx_mt5_credit_adyen_batch_t;


static ngx_int_t ngx_mt5_credit_adyen_malformed(ngx_http_request_t *r,
    ngx_mt5_credit_ctx_t *ctx, ngx_mt5_credit_adyen_batch_t *b);
static ngx_int_t ngx_mt5_credit_adyen_verify(ngx_http_request_t *r,
    ngx_mt5_credit_adyen_batch_t *b);
static ngx_int_t ngx_mt5_credit_adyen_run(ngx_http_request_t *r,
    ngx_mt5_credit_ctx_t *ctx, ngx_mt5_credit_adyen_batch_t *b);
static void ngx_mt5_credit_adyen_done(ngx_mt5_credit_pg_op_t *op,
    ngx_mt5_credit_pg_rc_e rc, PGresult *res, const char *err);
static ngx_int_t ngx_mt5_credit_adyen_answer(ngx_http_request_t *r,
    ngx_mt5_credit_ctx_t *ctx, ngx_mt5_credit_adyen_batch_t *b,
    PGresult *res);
static void ngx_mt5_credit_adyen_row(ngx_http_request_t *r,
    ngx_mt5_credit_adyen_batch_t *b, PGresult *res, ngx_uint_t i);


static ngx_str_t  ngx_mt5_credit_adyen_none = ngx_string("-");
static u_char     ngx_mt5_credit_adyen_accepted[] = "[accepted]";
static u_char     ngx_mt5_credit_adyen_bad_body[] =
    "{\"error\":\"malformed_body\"}";


ngx_int_t
ngx_mt5_credit_adyen_ingest(ngx_http_request_t *r, ngx_mt5_credit_ctx_t *ctx)
{
    ngx_int_t                      rc;
    ngx_mt5_credit_main_conf_t    *mcf;
    ngx_mt5_credit_adyen_batch_t  *b;

    mcf = ngx_http_get_module_main_conf(r, ngx_mt5_credit_module);

    if (mcf->pool == NULL) {
        ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                      "mt5_credit: no PostgreSQL pool in this process");
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b = ngx_pcalloc(r->pool, sizeof(ngx_mt5_credit_adyen_batch_t));
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->batch = b;

    b->read.max = NGX_MT5_CREDIT_ADYEN_MAX_ITEMS;
    b->read.items = ngx_palloc(r->pool, b->read.max
                                        * sizeof(ngx_mt5_credit_adyen_item_t));
    b->read.size = ngx_mt5_credit_adyen_scratch(ctx->body.len);
    b->read.scratch = ngx_pnalloc(r->pool, b->read.size);

    if (b->read.items == NULL || b->read.scratch == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (ngx_mt5_credit_adyen_read(&b->read, ctx->body.data, ctx->body.len)
        != 0)
    {
        return ngx_mt5_credit_adyen_malformed(r, ctx, b);
    }

    rc = ngx_mt5_credit_adyen_verify(r, b);
    if (rc != NGX_OK) {
        return rc;
    }

    if (b->nrows == 0) {
        return ngx_mt5_credit_reject(r, ctx, NGX_MT5_CREDIT_SIG_BAD_SIGNATURE,
                                     0);
    }

    return ngx_mt5_credit_adyen_run(r, ctx, b);
}


/* a body that is not a batch Adyen could have signed: nothing is stored */

static ngx_int_t
ngx_mt5_credit_adyen_malformed(ngx_http_request_t *r,
    ngx_mt5_credit_ctx_t *ctx, ngx_mt5_credit_adyen_batch_t *b)
{
    ngx_mt5_credit_loc_conf_t   *lcf;
    ngx_mt5_credit_main_conf_t  *mcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_mt5_credit_module);
    mcf = ngx_http_get_module_main_conf(r, ngx_mt5_credit_module);

    ngx_mt5_credit_count_r(r, NGX_MT5_CREDIT_STAT_REJECTED_MALFORMED_BODY);
    ngx_mt5_credit_refused_add(mcf, r, &lcf->provider, "malformed_body");

    ngx_str_set(&ctx->outcome, "rejected");
    ngx_str_set(&ctx->reason, "malformed_body");

    ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                  "mt5_credit: webhook rejected: provider=%V scheme=adyen "
                  "reason=malformed_body (%s, at byte %uz of %uz)",
                  &lcf->provider, b->read.error, b->read.error_at,
                  ctx->body.len);

    return ngx_mt5_credit_send(r, NGX_HTTP_BAD_REQUEST,
                               ngx_mt5_credit_adyen_bad_body,
                               sizeof(ngx_mt5_credit_adyen_bad_body) - 1);
}


/*
 * Each item's MAC; the verified ones become rows of the batch statement,
 * in the request's order.
 */

static ngx_int_t
ngx_mt5_credit_adyen_verify(ngx_http_request_t *r,
    ngx_mt5_credit_adyen_batch_t *b)
{
    ngx_uint_t                     i;
    ngx_mt5_credit_sig_rc_e        src;
    ngx_mt5_credit_pg_op_t        *row;
    ngx_http_variable_value_t     *rid;
    ngx_mt5_credit_loc_conf_t     *lcf;
    ngx_mt5_credit_main_conf_t    *mcf;
    ngx_mt5_credit_adyen_item_t   *item;
    ngx_mt5_credit_sig_parsed_t    parsed;

    lcf = ngx_http_get_module_loc_conf(r, ngx_mt5_credit_module);
    mcf = ngx_http_get_module_main_conf(r, ngx_mt5_credit_module);

    b->rows = ngx_pcalloc(r->pool,
                          b->read.nitems * sizeof(ngx_mt5_credit_pg_op_t));
    b->row = ngx_palloc(r->pool,
                        b->read.nitems * sizeof(ngx_mt5_credit_pg_op_t *));
    if (b->rows == NULL || b->row == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    rid = ngx_http_get_indexed_variable(r, mcf->request_id_index);

    for (i = 0; i < b->read.nitems; i++) {
        item = &b->read.items[i];

        ngx_memzero(&parsed, sizeof(ngx_mt5_credit_sig_parsed_t));
        parsed.candidates[0] = item->signature;
        parsed.ncandidates = 1;

        src = ngx_mt5_credit_sig_verify(lcf->sig, &parsed,
                                        item->signed_text.data,
                                        item->signed_text.len);

        if (src == NGX_MT5_CREDIT_SIG_BAD_SIGNATURE) {
            /* counted once for the request, when it is answered */
            b->nbad++;
            ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                          "mt5_credit: webhook item rejected: provider=%V "
                          "scheme=adyen reason=bad_signature item=%ui/%ui",
                          &lcf->provider, i + 1, b->read.nitems);
            continue;
        }

        if (src != NGX_MT5_CREDIT_SIG_OK) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "mt5_credit: signature check failed internally: "
                          "%s", ngx_mt5_credit_sig_reason(src));
            return ngx_mt5_credit_unavailable(r, NGX_MT5_CREDIT_STAT_N);
        }

        /* ingest()'s six parameters, binary; no signature time */

        row = &b->rows[b->nrows];
        b->row[b->nrows++] = row;

        row->values[0] = (const char *) lcf->provider.data;
        row->lengths[0] = (int) lcf->provider.len;
        row->values[1] = (const char *) item->event_id.data;
        row->lengths[1] = (int) item->event_id.len;
        row->values[2] = (const char *) item->bytes.data;
        row->lengths[2] = (int) item->bytes.len;
        row->values[3] = "adyen";
        row->lengths[3] = sizeof("adyen") - 1;

        if (rid != NULL && !rid->not_found && rid->len > 0) {
            row->values[5] = (const char *) rid->data;
            row->lengths[5] = (int) rid->len;
        }
    }

    return NGX_OK;
}


/* the verified items as one ingest_batch() statement (sql/062) */

static ngx_int_t
ngx_mt5_credit_adyen_run(ngx_http_request_t *r, ngx_mt5_credit_ctx_t *ctx,
    ngx_mt5_credit_adyen_batch_t *b)
{
    u_char                      *buf;
    ngx_int_t                    rc;
    ngx_uint_t                   i;
    ngx_http_cleanup_t          *cln;
    ngx_mt5_credit_pg_op_t      *op;
    ngx_mt5_credit_main_conf_t  *mcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_mt5_credit_module);

    buf = ngx_pnalloc(r->pool, ngx_mt5_credit_pg_batch_size(b->row, b->nrows));
    if (buf == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    op = &ctx->op;
    op->handler = ngx_mt5_credit_adyen_done;
    op->data = ctx;
    op->log = r->connection->log;

    op->sql = NGX_MT5_CREDIT_PG_BATCH_QUERY;
    op->types = ngx_mt5_credit_pg_batch_types;
    op->nparams = NGX_MT5_CREDIT_PG_NPARAMS;

    ngx_mt5_credit_pg_batch_params(b->row, b->nrows, buf, op->values,
                                   op->lengths);

    for (i = 0; i < NGX_MT5_CREDIT_PG_NPARAMS; i++) {
        op->formats[i] = 1;
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
ngx_mt5_credit_adyen_done(ngx_mt5_credit_pg_op_t *op,
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
             ? ngx_mt5_credit_adyen_answer(r, ctx, ctx->batch, res)
             : ngx_mt5_credit_ingest_failed(r, rc, err);

    ngx_http_finalize_request(r, status);
    ngx_http_run_posted_requests(c);
}


/*
 * The committed rows, one per verified item: each counted and logged, a
 * worker woken for each credit made; then the request's answer.
 */

static ngx_int_t
ngx_mt5_credit_adyen_answer(ngx_http_request_t *r, ngx_mt5_credit_ctx_t *ctx,
    ngx_mt5_credit_adyen_batch_t *b, PGresult *res)
{
    ngx_uint_t   i, failed, malformed;
    ngx_time_t  *tp;

    if (PQnfields(res) != 7 || (ngx_uint_t) PQntuples(res) != b->nrows) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "mt5_credit: ingest_batch() returned %d rows of %d "
                      "columns for %ui items",
                      PQntuples(res), PQnfields(res), b->nrows);
        return ngx_mt5_credit_unavailable(r, NGX_MT5_CREDIT_STAT_DB_ERROR);
    }

    failed = 0;
    malformed = 0;

    for (i = 0; i < b->nrows; i++) {
        if (!PQgetisnull(res, (int) i, 5)) {
            failed++;
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "mt5_credit: webhook item %*s not stored: %s %s",
                          (size_t) b->row[i]->lengths[1], b->row[i]->values[1],
                          PQgetvalue(res, (int) i, 5),
                          PQgetvalue(res, (int) i, 6));
            continue;
        }

        if (ngx_strcmp(PQgetvalue(res, (int) i, 0), "malformed") == 0) {
            malformed++;
        }

        ngx_mt5_credit_adyen_row(r, b, res, i);
    }

    /* every item stored or not, Adyen sends the whole batch again */

    if (failed) {
        return ngx_mt5_credit_unavailable(r, NGX_MT5_CREDIT_STAT_DB_ERROR);
    }

    if (malformed) {
        ngx_mt5_credit_count_r(r,
                               NGX_MT5_CREDIT_STAT_REJECTED_MALFORMED_BODY);
        ngx_str_set(&ctx->outcome, "rejected");
        ngx_str_set(&ctx->reason, "malformed_body");

        return ngx_mt5_credit_send(r, NGX_HTTP_BAD_REQUEST,
                                   ngx_mt5_credit_adyen_bad_body,
                                   sizeof(ngx_mt5_credit_adyen_bad_body) - 1);
    }

    if (b->nbad) {
        return ngx_mt5_credit_reject(r, ctx, NGX_MT5_CREDIT_SIG_BAD_SIGNATURE,
                                     0);
    }

    tp = ngx_timeofday();
    ngx_mt5_credit_stat_ingest(r, (ngx_msec_t)
        ((tp->sec - r->start_sec) * 1000 + (tp->msec - r->start_msec)));

    ngx_str_set(&ctx->outcome, "accepted");

    return ngx_mt5_credit_send_type(r, NGX_HTTP_OK, "text/plain",
                                    ngx_mt5_credit_adyen_accepted,
                                    sizeof(ngx_mt5_credit_adyen_accepted)
                                    - 1);
}


/* one stored item's row: (outcome, credit_id, event_row_id, detail, ..) */

static void
ngx_mt5_credit_adyen_row(ngx_http_request_t *r,
    ngx_mt5_credit_adyen_batch_t *b, PGresult *res, ngx_uint_t i)
{
    int64_t                      credit;
    ngx_str_t                    outcome, credit_id, event_row, detail;
    ngx_uint_t                   level;
    ngx_mt5_credit_stat_e        stat;
    ngx_mt5_credit_loc_conf_t   *lcf;
    ngx_mt5_credit_main_conf_t  *mcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_mt5_credit_module);
    mcf = ngx_http_get_module_main_conf(r, ngx_mt5_credit_module);

    outcome.data = (u_char *) PQgetvalue(res, (int) i, 0);
    outcome.len = PQgetlength(res, (int) i, 0);
    credit_id.data = (u_char *) PQgetvalue(res, (int) i, 1);
    credit_id.len = PQgetlength(res, (int) i, 1);
    event_row.data = (u_char *) PQgetvalue(res, (int) i, 2);
    event_row.len = PQgetlength(res, (int) i, 2);
    detail.data = (u_char *) PQgetvalue(res, (int) i, 3);
    detail.len = PQgetlength(res, (int) i, 3);

    level = NGX_LOG_INFO;

    if (ngx_strcmp(outcome.data, "credit_created") == 0) {
        stat = NGX_MT5_CREDIT_STAT_CREDIT_CREATED;

        credit = ngx_atoof(credit_id.data, credit_id.len);

        /* committed: now, and only now, wake a worker */
        if (mcf->redis != NULL && credit > 0) {
            ngx_mt5_credit_redis_wake(mcf->redis, credit, r->connection->log);
        }

    } else if (ngx_strcmp(outcome.data, "duplicate") == 0) {
        stat = NGX_MT5_CREDIT_STAT_DUPLICATE;

    } else if (ngx_strcmp(outcome.data, "conflict") == 0) {
        stat = NGX_MT5_CREDIT_STAT_CONFLICT;
        level = NGX_LOG_WARN;

    } else if (ngx_strcmp(outcome.data, "case_opened") == 0) {
        stat = NGX_MT5_CREDIT_STAT_CASE_OPENED;
        level = NGX_LOG_WARN;

    } else if (ngx_strcmp(outcome.data, "malformed") == 0) {
        stat = NGX_MT5_CREDIT_STAT_N;
        level = NGX_LOG_WARN;

    } else {
        stat = NGX_MT5_CREDIT_STAT_STORED;
    }

    if (stat != NGX_MT5_CREDIT_STAT_N) {
        ngx_mt5_credit_count_r(r, stat);
    }

    ngx_log_error(level, r->connection->log, 0,
                  "mt5_credit: webhook %V: provider=%V event=%*s "
                  "event_row=%V credit=%V item=%ui/%ui%s%V",
                  &outcome, &lcf->provider,
                  (size_t) b->row[i]->lengths[1], b->row[i]->values[1],
                  event_row.len ? &event_row : &ngx_mt5_credit_adyen_none,
                  credit_id.len ? &credit_id : &ngx_mt5_credit_adyen_none,
                  i + 1, b->read.nitems,
                  detail.len ? " " : "", &detail);
}
