
/*
 * Copyright (C) mt5-credit
 *
 * The batch statement (sql/062's ingest_batch()): the parameters of
 * several waiting ingest operations as six one-dimensional arrays in
 * PostgreSQL's binary array format, and each operation's row of the
 * answer.  The pool (ngx_mt5_credit_pg.c) decides when to batch.
 *
 * Binary, as the single statement's parameters are: the bodies go as
 * they arrived, nothing is escaped, and a NULL is a length of -1.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_mt5_credit_pg.h"


/* element types of the six arrays: text, text, bytea, text, int8, text */
static const Oid  ngx_mt5_credit_pg_batch_elems[NGX_MT5_CREDIT_PG_NPARAMS] = {
    25, 25, 17, 25, 20, 25
};


static u_char *
ngx_mt5_credit_pg_batch_put32(u_char *p, uint32_t v)
{
    *p++ = (u_char) (v >> 24);
    *p++ = (u_char) (v >> 16);
    *p++ = (u_char) (v >> 8);
    *p++ = (u_char) v;

    return p;
}


size_t
ngx_mt5_credit_pg_batch_size(ngx_mt5_credit_pg_op_t **ops, ngx_uint_t n)
{
    size_t      size;
    ngx_uint_t  i, k;

    /* per array: ndim, flags, element type, length, lower bound */
    size = NGX_MT5_CREDIT_PG_NPARAMS * 5 * 4;

    for (i = 0; i < n; i++) {
        for (k = 0; k < NGX_MT5_CREDIT_PG_NPARAMS; k++) {
            size += 4 + (ops[i]->values[k] ? ops[i]->lengths[k] : 0);
        }
    }

    return size;
}


/*
 * Writes the six arrays into buf (of ngx_mt5_credit_pg_batch_size()
 * bytes) and points values and lengths at them.
 */

void
ngx_mt5_credit_pg_batch_params(ngx_mt5_credit_pg_op_t **ops, ngx_uint_t n,
    u_char *buf, const char **values, int *lengths)
{
    u_char      *p, *start;
    ngx_uint_t   i, k, nulls;

    p = buf;

    for (k = 0; k < NGX_MT5_CREDIT_PG_NPARAMS; k++) {
        start = p;

        for (i = 0, nulls = 0; i < n; i++) {
            nulls |= (ops[i]->values[k] == NULL);
        }

        p = ngx_mt5_credit_pg_batch_put32(p, 1);
        p = ngx_mt5_credit_pg_batch_put32(p, nulls ? 1 : 0);
        p = ngx_mt5_credit_pg_batch_put32(p, ngx_mt5_credit_pg_batch_elems[k]);
        p = ngx_mt5_credit_pg_batch_put32(p, (uint32_t) n);
        p = ngx_mt5_credit_pg_batch_put32(p, 1);

        for (i = 0; i < n; i++) {
            if (ops[i]->values[k] == NULL) {
                p = ngx_mt5_credit_pg_batch_put32(p, (uint32_t) -1);
                continue;
            }

            p = ngx_mt5_credit_pg_batch_put32(p,
                                              (uint32_t) ops[i]->lengths[k]);
            p = ngx_cpymem(p, ops[i]->values[k], ops[i]->lengths[k]);
        }

        values[k] = (const char *) start;
        lengths[k] = (int) (p - start);
    }
}


/*
 * Operation i's row of the answer.  NGX_OK: row i is its result, as
 * ingest()'s row (outcome, credit_id, event_row_id, detail).
 * NGX_DECLINED: its ingest() raised; op->sqlstate and op->primary say
 * what (primary lives as long as res).  NGX_ERROR: res is not the answer
 * to this batch.
 */

ngx_int_t
ngx_mt5_credit_pg_batch_row(PGresult *res, ngx_uint_t i, ngx_uint_t n,
    ngx_mt5_credit_pg_op_t *op)
{
    char  *ord;

    if ((ngx_uint_t) PQntuples(res) != n || PQnfields(res) != 7) {
        return NGX_ERROR;
    }

    ord = PQgetvalue(res, (int) i, 4);

    if (ngx_atoi((u_char *) ord, ngx_strlen(ord)) != (ngx_int_t) i + 1) {
        return NGX_ERROR;
    }

    op->row = i;

    if (PQgetisnull(res, (int) i, 5)) {
        return NGX_OK;
    }

    ngx_cpystrn((u_char *) op->sqlstate, (u_char *) PQgetvalue(res, (int) i, 5),
                sizeof(op->sqlstate));
    op->primary = PQgetvalue(res, (int) i, 6);

    return NGX_DECLINED;
}
