/*
 * Copyright (C) mt5-credit
 *
 * libFuzzer target: the module's body assembly
 * (ngx_mt5_credit_module/ngx_mt5_credit_body.c), compiled against the
 * nginx tree the module is built in, with the three nginx functions it
 * calls stood in for here.  Input: a chain description, then the bytes.
 * Each buffer is [flags][len] and len bytes: in memory, or in a temp
 * file (a memfd) at an offset, or neither (a flush or last_buf marker).
 *
 * The property: the result is the concatenation of exactly the bytes of
 * the memory and file buffers, in order, and nothing else.
 */

#define _GNU_SOURCE
#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <sys/mman.h>

#include "ngx_mt5_credit_module.h"


#define FUZZ_BUFS  16


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


/* --- what nginx would provide ---------------------------------------- */

void *
ngx_pnalloc(ngx_pool_t *pool, size_t size)
{
    (void) pool;
    return malloc(size);
}


ssize_t
ngx_read_file(ngx_file_t *file, u_char *buf, size_t size, off_t offset)
{
    return pread(file->fd, buf, size, offset);
}


void
ngx_log_error_core(ngx_uint_t level, ngx_log_t *log, ngx_err_t err,
    const char *fmt, ...)
{
    (void) level; (void) log; (void) err; (void) fmt;
}


/* --- the harness ------------------------------------------------------ */

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int          fd;
    size_t       n, len, at, want_len;
    u_char      *want;
    ngx_buf_t    bufs[FUZZ_BUFS];
    ngx_str_t    body;
    ngx_log_t    log;
    ngx_file_t   file;
    ngx_chain_t  chain[FUZZ_BUFS];
    const uint8_t  *p, *end;

    fd = memfd_create("fuzz-body", 0);
    if (fd == -1) {
        return 0;
    }

    ngx_memzero(&log, sizeof(log));
    ngx_memzero(&file, sizeof(file));
    file.fd = fd;
    ngx_str_set(&file.name, "fuzz-body");

    want = malloc(size + 1);
    want_len = 0;
    at = 0;
    p = data;
    end = data + size;

    for (n = 0; n < FUZZ_BUFS && end - p >= 2; n++) {
        ngx_memzero(&bufs[n], sizeof(ngx_buf_t));
        len = p[1];
        if (len > (size_t) (end - p - 2)) {
            len = (size_t) (end - p - 2);
        }

        switch (p[0] % 3) {

        case 0:                                 /* in memory */
            bufs[n].pos = (u_char *) p + 2;
            bufs[n].last = (u_char *) p + 2 + len;
            bufs[n].memory = 1;
            memcpy(want + want_len, p + 2, len);
            want_len += len;
            break;

        case 1:                                 /* in the temp file */
            if (pwrite(fd, p + 2, len, (off_t) at) != (ssize_t) len) {
                goto done;
            }
            bufs[n].in_file = 1;
            bufs[n].file = &file;
            bufs[n].file_pos = (off_t) at;
            bufs[n].file_last = (off_t) (at + len);
            at += len;
            memcpy(want + want_len, p + 2, len);
            want_len += len;
            break;

        default:                                /* a marker, no data */
            bufs[n].last_buf = 1;
            len = 0;
            break;
        }

        chain[n].buf = &bufs[n];
        chain[n].next = NULL;
        if (n > 0) {
            chain[n - 1].next = &chain[n];
        }

        p += 2 + len;
    }

    if (ngx_mt5_credit_body_assemble(n ? chain : NULL, NULL, &log, &body)
        != NGX_OK)
    {
        abort();                    /* nothing here is over the limit */
    }

    if (body.len != want_len
        || (want_len && memcmp(body.data, want, want_len) != 0))
    {
        abort();
    }

    if (body.len) {
        free(body.data);
    }

done:

    close(fd);
    free(want);
    return 0;
}
