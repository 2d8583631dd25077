
/*
 * Copyright (C) mt5-credit
 *
 * What the webhook handler (ngx_mt5_credit_handler.c) shares with the
 * readers of providers whose requests carry several events
 * (ngx_mt5_credit_handler_adyen.c): a request's context, and how a
 * request is refused or answered.
 */


#ifndef _NGX_MT5_CREDIT_HANDLER_H_INCLUDED_
#define _NGX_MT5_CREDIT_HANDLER_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_mt5_credit_module.h"
#include "ngx_mt5_credit_pg.h"


/* more lines of one header than this is malformed anyway */
#define NGX_MT5_CREDIT_MAX_LINES  2


typedef struct {
    ngx_mt5_credit_sig_str_t      lines[NGX_MT5_CREDIT_MAX_LINES];
    size_t                        n;
} ngx_mt5_credit_header_t;


typedef struct {
    ngx_http_request_t           *request;
    ngx_mt5_credit_pg_op_t        op;
    ngx_mt5_credit_header_t       signature;
    ngx_mt5_credit_header_t       id;
    ngx_mt5_credit_header_t       timestamp;
    ngx_mt5_credit_sig_parsed_t   parsed;
    ngx_str_t                     body;
    u_char                        signed_at[8];   /* int8, network order */

    /* what became of it, for $mt5_credit_* in access_log lines */
    ngx_str_t                     outcome;
    ngx_str_t                     reason;
    ngx_str_t                     event;          /* our event row */
    ngx_str_t                     credit;

    /* an Adyen batch: its items, each its own event (handler_adyen.c) */
    void                         *batch;
} ngx_mt5_credit_ctx_t;


/* ngx_mt5_credit_handler.c */
ngx_int_t ngx_mt5_credit_reject(ngx_http_request_t *r,
    ngx_mt5_credit_ctx_t *ctx, ngx_mt5_credit_sig_rc_e rc, int64_t skew);
ngx_int_t ngx_mt5_credit_unavailable(ngx_http_request_t *r,
    ngx_mt5_credit_stat_e why);
ngx_int_t ngx_mt5_credit_ingest_failed(ngx_http_request_t *r,
    ngx_mt5_credit_pg_rc_e rc, const char *err);
void ngx_mt5_credit_log_outage(ngx_log_t *log,
    ngx_mt5_credit_main_conf_t *mcf, const char *err);
ngx_int_t ngx_mt5_credit_send(ngx_http_request_t *r, ngx_uint_t status,
    u_char *json, size_t len);
ngx_int_t ngx_mt5_credit_send_type(ngx_http_request_t *r, ngx_uint_t status,
    const char *type, u_char *body, size_t len);
void ngx_mt5_credit_cleanup(void *data);
const char *ngx_mt5_credit_scheme_name(ngx_mt5_credit_sig_conf_t *sig);
void ngx_mt5_credit_keep(ngx_http_request_t *r, ngx_str_t *to, u_char *from,
    size_t len);

/* ngx_mt5_credit_handler_adyen.c: the body read, each item verified and
   all stored in one statement; NGX_DONE while it runs, else a status */
ngx_int_t ngx_mt5_credit_adyen_ingest(ngx_http_request_t *r,
    ngx_mt5_credit_ctx_t *ctx);


#endif /* _NGX_MT5_CREDIT_HANDLER_H_INCLUDED_ */
