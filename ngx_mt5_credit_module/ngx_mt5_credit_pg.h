
/*
 * Copyright (C) mt5-credit
 *
 * A per-worker pool of PostgreSQL connections driven by libpq's
 * asynchronous API inside nginx's event loop: non-blocking connect, send,
 * flush and read; a bounded wait queue; timeouts enforced here, because
 * libpq enforces none of them on a non-blocking connection.
 */


#ifndef _NGX_MT5_CREDIT_PG_H_INCLUDED_
#define _NGX_MT5_CREDIT_PG_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>

#include <libpq-fe.h>

#include "ngx_mt5_credit_module.h"


/* the one statement this pool runs, prepared on every new connection */
#define NGX_MT5_CREDIT_PG_STMT       "mt5credit_ingest"
#define NGX_MT5_CREDIT_PG_QUERY                                              \
    "SELECT outcome, credit_id, event_row_id, detail "                       \
    "FROM mt5credit.ingest($1, $2, $3, $4, $5, $6)"
#define NGX_MT5_CREDIT_PG_NPARAMS    6

/* the most parameters an operation's own statement (op->sql) takes */
#define NGX_MT5_CREDIT_PG_MAXPARAMS  8

/*
 * Several waiting ingest operations in one statement (sql/062), the same
 * parameters as arrays, one row per operation in their order: ingest()'s
 * four columns, then the position and the element's error, if any.
 */
#define NGX_MT5_CREDIT_PG_BATCH_QUERY                                        \
    "SELECT outcome, credit_id, event_row_id, detail, ord, error_code, "     \
    "error_message FROM mt5credit.ingest_batch($1, $2, $3, $4, $5, $6) "     \
    "ORDER BY ord"
#define NGX_MT5_CREDIT_PG_BATCH_MAX  256


/* how an operation ended */
typedef enum {
    NGX_MT5_CREDIT_PG_OK = 0,        /* committed; result available */
    NGX_MT5_CREDIT_PG_FAILED,        /* the server reported an error */
    NGX_MT5_CREDIT_PG_TIMEOUT,       /* no answer in time: outcome unknown */
    NGX_MT5_CREDIT_PG_LOST,          /* connection lost: outcome unknown */
    NGX_MT5_CREDIT_PG_UNAVAILABLE,   /* no connection could be made */
    NGX_MT5_CREDIT_PG_QUEUE_TIMEOUT  /* waited too long for a connection */
} ngx_mt5_credit_pg_rc_e;


typedef struct ngx_mt5_credit_pg_conn_s  ngx_mt5_credit_pg_conn_t;
typedef struct ngx_mt5_credit_pg_op_s    ngx_mt5_credit_pg_op_t;

/*
 * Called exactly once per operation that ngx_mt5_credit_pg_run() accepted,
 * unless it was cancelled first.  res is valid only during the call (NULL
 * unless rc is OK); err is a message for the log (NULL if rc is OK).
 */
typedef void (*ngx_mt5_credit_pg_done_pt)(ngx_mt5_credit_pg_op_t *op,
    ngx_mt5_credit_pg_rc_e rc, PGresult *res, const char *err);


/*
 * One statement execution, owned by its caller (a request).  The
 * parameters are copied into libpq's buffer when the statement is sent, so
 * they need to live only until then.
 */
struct ngx_mt5_credit_pg_op_s {
    ngx_queue_t                   queue;        /* in the wait queue */
    ngx_event_t                   wait;         /* wait-queue timer */
    ngx_mt5_credit_pg_pool_t     *pool;
    ngx_mt5_credit_pg_conn_t     *conn;         /* while on a connection */

    /* the ingest statement's parameters; or, with sql set, one fixed
       statement of the caller's and its nparams text parameters (a NULL
       value is SQL NULL), or with types set too, parameters of those
       types as lengths and formats say: no value is ever part of the
       statement's text */
    const char                   *sql;
    const Oid                    *types;
    ngx_uint_t                    nparams;
    const char                   *values[NGX_MT5_CREDIT_PG_MAXPARAMS];
    int                           lengths[NGX_MT5_CREDIT_PG_MAXPARAMS];
    int                           formats[NGX_MT5_CREDIT_PG_MAXPARAMS];

    /* with NGX_MT5_CREDIT_PG_FAILED: the server's SQLSTATE, or "", and
       its primary message (valid only during the handler), or NULL */
    char                          sqlstate[6];
    const char                   *primary;

    /* with NGX_MT5_CREDIT_PG_OK: the row of the result that is this
       operation's (0 unless it was sent in a batch) */
    ngx_uint_t                    row;

    ngx_mt5_credit_pg_done_pt     handler;
    void                         *data;
    ngx_log_t                    *log;

    unsigned                      queued:1;
    unsigned                      alone:1;      /* a batch of it failed */
    unsigned                      delivering:1; /* its batch answers */
};


/* conf must live as long as the pool; its stats go to mcf's gauges */
ngx_mt5_credit_pg_pool_t *ngx_mt5_credit_pg_pool_create(ngx_cycle_t *cycle,
    ngx_mt5_credit_main_conf_t *mcf, ngx_mt5_credit_pg_conf_t *conf);
void ngx_mt5_credit_pg_pool_destroy(ngx_mt5_credit_pg_pool_t *pool);

/*
 * Starts op on an idle connection or queues it.  NGX_OK: op->handler will
 * be called.  NGX_BUSY: the wait queue is full.  NGX_DECLINED: no
 * connection can be made right now.  In both refusals the handler is not
 * called and op is not referenced any more.
 */
ngx_int_t ngx_mt5_credit_pg_run(ngx_mt5_credit_pg_pool_t *pool,
    ngx_mt5_credit_pg_op_t *op);

/*
 * Detaches op (its owner is going away): the handler will not be called.
 * A statement already sent runs to its end on its connection, which then
 * returns to the pool; a webhook whose request vanished is still stored,
 * and the provider's retry will find it as a duplicate.
 */
void ngx_mt5_credit_pg_cancel(ngx_mt5_credit_pg_op_t *op);


/* the batch statement's parameter types: arrays of ingest()'s */
extern const Oid  ngx_mt5_credit_pg_batch_types[NGX_MT5_CREDIT_PG_NPARAMS];

/* ngx_mt5_credit_pg_batch.c: the batch statement's parameters and rows */
size_t ngx_mt5_credit_pg_batch_size(ngx_mt5_credit_pg_op_t **ops,
    ngx_uint_t n);
void ngx_mt5_credit_pg_batch_params(ngx_mt5_credit_pg_op_t **ops,
    ngx_uint_t n, u_char *buf, const char **values, int *lengths);
ngx_int_t ngx_mt5_credit_pg_batch_row(PGresult *res, ngx_uint_t i,
    ngx_uint_t n, ngx_mt5_credit_pg_op_t *op);


#endif /* _NGX_MT5_CREDIT_PG_H_INCLUDED_ */
