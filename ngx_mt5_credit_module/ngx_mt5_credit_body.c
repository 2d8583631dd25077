
/*
 * Copyright (C) mt5-credit
 *
 * The request body as one contiguous copy of exactly the bytes that
 * arrived: the signature is over them, and ingest() stores them.  nginx
 * may hold a body in several memory buffers (the pre-read part, the rest,
 * one per chunk of a chunked body) or, past client_body_buffer_size, in a
 * temp file buffer.  Kept apart from the handler so the fuzzer can drive
 * it with any chain of buffers.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_mt5_credit_module.h"


/*
 * The body is copied whole and sent as one parameter; client_max_body_size
 * is the real limit (nginx answers 413), this only guards "0" (unlimited).
 */
#define NGX_MT5_CREDIT_MAX_BODY   (64 * 1024 * 1024)


ngx_int_t
ngx_mt5_credit_body_assemble(ngx_chain_t *bufs, ngx_pool_t *pool,
    ngx_log_t *log, ngx_str_t *body)
{
    u_char       *p;
    off_t         len, size;
    ssize_t       n;
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    ngx_str_set(body, "");

    len = 0;

    for (cl = bufs; cl; cl = cl->next) {
        b = cl->buf;

        if (ngx_buf_in_memory(b)) {
            size = b->last - b->pos;

        } else if (b->in_file) {
            size = b->file_last - b->file_pos;

        } else {
            continue;
        }

        /* a buffer that ends before it starts is nobody's body */
        if (size < 0) {
            ngx_log_error(NGX_LOG_ALERT, log, 0,
                          "mt5_credit: a request body buffer of %O bytes",
                          size);
            return NGX_ERROR;
        }

        len += size;

        if (len > NGX_MT5_CREDIT_MAX_BODY) {
            ngx_log_error(NGX_LOG_ERR, log, 0,
                          "mt5_credit: request body over %d bytes; set "
                          "client_max_body_size", NGX_MT5_CREDIT_MAX_BODY);
            return NGX_ERROR;
        }
    }

    if (len == 0) {
        return NGX_OK;
    }

    body->data = ngx_pnalloc(pool, (size_t) len);
    if (body->data == NULL) {
        return NGX_ERROR;
    }

    p = body->data;

    for (cl = bufs; cl; cl = cl->next) {
        b = cl->buf;

        if (ngx_buf_in_memory(b)) {
            p = ngx_cpymem(p, b->pos, b->last - b->pos);
            continue;
        }

        if (!b->in_file) {
            continue;
        }

        size = b->file_last - b->file_pos;

        n = ngx_read_file(b->file, p, (size_t) size, b->file_pos);

        if (n != (ssize_t) size) {
            ngx_log_error(NGX_LOG_ERR, log, 0,
                          "mt5_credit: read %z of %O bytes of the request "
                          "body from \"%V\"", n, size, &b->file->name);
            return NGX_ERROR;
        }

        p += size;
    }

    body->len = (size_t) len;

    return NGX_OK;
}
