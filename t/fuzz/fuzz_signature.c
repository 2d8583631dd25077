/*
 * Copyright (C) mt5-credit
 *
 * libFuzzer target: the webhook signature header parsers and check, every
 * scheme (ngx_mt5_credit_module/ngx_mt5_credit_signature.c, the code the
 * module runs).  Input: one byte choosing scheme, encoding and prefix, then
 * NUL-separated fields: signature header (two lines at most, split at
 * '\n'), webhook-id, webhook-timestamp, secret, body.
 *
 * Beyond "no crash, no undefined behaviour": a body that verifies must
 * stop verifying when one of its bytes changes.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ngx_mt5_credit_signature.h"


#define FUZZ_NOW  1700000000


/* the next NUL-terminated field of [*p, end) */
static ngx_mt5_credit_sig_str_t
fuzz_field(const uint8_t **p, const uint8_t *end)
{
    const uint8_t             *z;
    ngx_mt5_credit_sig_str_t   s;

    z = memchr(*p, 0, (size_t) (end - *p));
    s.data = *p;
    s.len = (size_t) ((z != NULL ? z : end) - *p);
    *p = z != NULL ? z + 1 : end;
    return s;
}


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t                         nl, n;
    uint8_t                        mode, *copy;
    const uint8_t                 *p, *end, *cut;
    ngx_mt5_credit_sig_rc_e        rc;
    ngx_mt5_credit_sig_str_t       sig[2], id, ts, secret, body;
    ngx_mt5_credit_sig_conf_t      conf;
    ngx_mt5_credit_sig_headers_t   headers;

    if (size < 1) {
        return 0;
    }

    mode = data[0];
    p = data + 1;
    end = data + size;

    sig[0] = fuzz_field(&p, end);
    id = fuzz_field(&p, end);
    ts = fuzz_field(&p, end);
    secret = fuzz_field(&p, end);
    body.data = p;
    body.len = (size_t) (end - p);

    /* a header of two lines, when the field holds a '\n' */
    nl = 1;
    cut = memchr(sig[0].data, '\n', sig[0].len);
    if (cut != NULL) {
        sig[1].data = cut + 1;
        sig[1].len = sig[0].len - (size_t) (cut + 1 - sig[0].data);
        sig[0].len = (size_t) (cut - sig[0].data);
        nl = 2;
    }

    memset(&conf, 0, sizeof(conf));
    conf.scheme = (ngx_mt5_credit_sig_scheme_e) (mode % 3 + 1);
    conf.encoding = (mode & 0x04) ? NGX_MT5_CREDIT_SIG_BASE64
                                  : NGX_MT5_CREDIT_SIG_HEX;
    strcpy(conf.header, "X-Signature");
    if (mode & 0x08) {
        strcpy(conf.prefix, "sha256=");
        conf.prefix_len = 7;
    }
    conf.tolerance = (mode & 0x10) ? -1 : 300;

    if (ngx_mt5_credit_sig_prepare_key(conf.scheme, secret.data, secret.len,
                                       &conf.keys[0])
        == NGX_MT5_CREDIT_SIG_OK)
    {
        conf.nkeys = 1;
    }

    memset(&headers, 0, sizeof(headers));
    headers.signature.lines = sig;
    headers.signature.nlines = (mode & 0x20) ? 0 : nl;
    headers.id.lines = &id;
    headers.id.nlines = (mode & 0x40) ? 0 : 1;
    headers.timestamp.lines = &ts;
    headers.timestamp.nlines = (mode & 0x80) ? 0 : 1;

    rc = ngx_mt5_credit_sig_check(&conf, &headers, body.data, body.len,
                                  FUZZ_NOW);

    if (ngx_mt5_credit_sig_reason(rc) == NULL) {
        abort();
    }

    if (rc != NGX_MT5_CREDIT_SIG_OK || body.len == 0) {
        return 0;
    }

    /* verified: the same headers over a body one bit different must not */
    copy = malloc(body.len);
    if (copy == NULL) {
        return 0;
    }

    memcpy(copy, body.data, body.len);
    n = (size_t) mode % body.len;
    copy[n] ^= 0x01;

    rc = ngx_mt5_credit_sig_check(&conf, &headers, copy, body.len, FUZZ_NOW);
    free(copy);

    if (rc == NGX_MT5_CREDIT_SIG_OK) {
        abort();
    }

    return 0;
}
