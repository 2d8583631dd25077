
/*
 * Copyright (C) mt5-credit
 *
 * The PostgreSQL pool: one per worker, created in init_process.
 *
 * Each connection is an explicit state machine driven by libpq's own
 * return codes, never by nginx's ev->ready (libpq does its own recv/send,
 * so nginx never sees EAGAIN):
 *
 *   CONNECTING --PQconnectPoll OK--> PREPARING --prepared--> IDLE
 *   IDLE --statement sent--> BUSY --results drained to NULL--> IDLE
 *   any state --error, EOF, timeout, graceful exit--> closed
 *
 * A connection that comes free while webhooks wait takes up to
 * mt5_credit_postgres_batch of them in one statement (sql/062's
 * ingest_batch()), each answered from its own row after that statement's
 * COMMIT.  A batch the server refused as a whole committed nothing: its
 * webhooks go back to the head of the queue, to be sent one by one.
 *
 * The socket is registered level-triggered.  libpq reads at most one
 * buffer per PQconsumeInput(); with edge-triggered epoll the rest of a
 * large answer would sit in the kernel with no new edge to wake us (the
 * stall reported against ngx_postgres).  Write interest is registered only
 * while libpq has unsent bytes or a connect step waits for writability.
 *
 * libpq owns the file descriptor: the nginx connection wrapping it is
 * marked shared, so nginx never closes it, and PQfinish() does.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>

#include "ngx_mt5_credit_pg.h"


typedef enum {
    NGX_MT5_CREDIT_PG_CONNECTING = 0,
    NGX_MT5_CREDIT_PG_PREPARING,
    NGX_MT5_CREDIT_PG_IDLE,
    NGX_MT5_CREDIT_PG_BUSY
} ngx_mt5_credit_pg_state_e;


struct ngx_mt5_credit_pg_conn_s {
    ngx_queue_t                   queue;      /* pool->idle or pool->active */
    ngx_mt5_credit_pg_pool_t     *pool;
    PGconn                       *pg;
    ngx_connection_t             *c;
    ngx_mt5_credit_pg_op_t       *op;         /* NULL if none or cancelled */
    PGresult                     *result;     /* the statement's rows */
    PGresult                     *error;      /* its first error, if any */
    ngx_uint_t                    requests;
    ngx_msec_t                    deadline;   /* of the whole connect */
    ino_t                         sock_ino;   /* which socket is wrapped */
    dev_t                         sock_dev;
    ngx_log_t                     log;
    ngx_mt5_credit_pg_state_e     state;
    size_t                        carried;    /* the largest body sent */
    ngx_mt5_credit_pg_op_t      **batch;      /* a batch's ops, NULL where
                                                 cancelled */
    ngx_uint_t                    nbatch;     /* 0: one op, in op */
    unsigned                      flushing:1;
};


/*
 * libpq keeps a connection's buffers at the largest message it ever
 * carried: a pooled connection that carried an outsize body is closed
 * after it, not kept at that size for its remaining requests.
 */
#define NGX_MT5_CREDIT_PG_RECYCLE_BYTES  (512 * 1024)


struct ngx_mt5_credit_pg_pool_s {
    ngx_mt5_credit_main_conf_t   *mcf;
    ngx_mt5_credit_pg_conf_t     *conf;
    ngx_log_t                    *log;
    ngx_queue_t                   idle;
    ngx_queue_t                   active;
    ngx_queue_t                   waiting;
    ngx_uint_t                    nconns;
    ngx_uint_t                    nwaiting;

    /* the ops whose handlers are being called, NULL where cancelled */
    ngx_mt5_credit_pg_op_t      **delivering;
    ngx_uint_t                    ndelivering;

    unsigned                      batch_off:1;  /* no ingest_batch() */
};


static ngx_int_t ngx_mt5_credit_pg_connect(ngx_mt5_credit_pg_pool_t *pool);
static ngx_int_t ngx_mt5_credit_pg_wrap(ngx_mt5_credit_pg_conn_t *conn);
static void ngx_mt5_credit_pg_unwrap(ngx_mt5_credit_pg_conn_t *conn,
    ngx_uint_t fd_closed);
static ngx_int_t ngx_mt5_credit_pg_want_write(ngx_mt5_credit_pg_conn_t *conn,
    ngx_uint_t on);
static void ngx_mt5_credit_pg_event_handler(ngx_event_t *ev);
static void ngx_mt5_credit_pg_connect_step(ngx_mt5_credit_pg_conn_t *conn);
static void ngx_mt5_credit_pg_io_step(ngx_mt5_credit_pg_conn_t *conn);
static void ngx_mt5_credit_pg_idle_step(ngx_mt5_credit_pg_conn_t *conn);
static void ngx_mt5_credit_pg_complete(ngx_mt5_credit_pg_conn_t *conn);
static void ngx_mt5_credit_pg_timeout(ngx_mt5_credit_pg_conn_t *conn);
static void ngx_mt5_credit_pg_abort(ngx_mt5_credit_pg_conn_t *conn,
    ngx_mt5_credit_pg_rc_e rc, const char *why);
static ngx_int_t ngx_mt5_credit_pg_flush(ngx_mt5_credit_pg_conn_t *conn);
static ngx_int_t ngx_mt5_credit_pg_send(ngx_mt5_credit_pg_conn_t *conn,
    ngx_mt5_credit_pg_op_t *op);
static ngx_int_t ngx_mt5_credit_pg_send_batch(ngx_mt5_credit_pg_conn_t *conn,
    ngx_mt5_credit_pg_op_t **ops, ngx_uint_t n);
static ngx_int_t ngx_mt5_credit_pg_sent(ngx_mt5_credit_pg_conn_t *conn,
    size_t size, char *action);
static ngx_uint_t ngx_mt5_credit_pg_take(ngx_mt5_credit_pg_pool_t *pool,
    ngx_mt5_credit_pg_op_t **ops);
static ngx_uint_t ngx_mt5_credit_pg_take_batch(ngx_mt5_credit_pg_conn_t *conn,
    ngx_mt5_credit_pg_op_t **ops);
static void ngx_mt5_credit_pg_complete_batch(ngx_mt5_credit_pg_conn_t *conn,
    PGresult *res, PGresult *error);
static void ngx_mt5_credit_pg_requeue(ngx_mt5_credit_pg_pool_t *pool,
    ngx_mt5_credit_pg_op_t **ops, ngx_uint_t n);
static void ngx_mt5_credit_pg_deliver(ngx_mt5_credit_pg_pool_t *pool,
    ngx_mt5_credit_pg_op_t **ops, ngx_uint_t n, ngx_mt5_credit_pg_rc_e rc,
    PGresult *res, const char *err);
static void ngx_mt5_credit_pg_release(ngx_mt5_credit_pg_conn_t *conn);
static void ngx_mt5_credit_pg_close(ngx_mt5_credit_pg_conn_t *conn);
static void ngx_mt5_credit_pg_refill(ngx_mt5_credit_pg_pool_t *pool);
static void ngx_mt5_credit_pg_fail_waiting(ngx_mt5_credit_pg_pool_t *pool,
    ngx_mt5_credit_pg_rc_e rc, const char *err);
static void ngx_mt5_credit_pg_wait_timeout(ngx_event_t *ev);
static void ngx_mt5_credit_pg_dequeue(ngx_mt5_credit_pg_op_t *op);
static ngx_uint_t ngx_mt5_credit_pg_same_socket(
    ngx_mt5_credit_pg_conn_t *conn);
static void ngx_mt5_credit_pg_notice(void *arg, const char *message);
static void ngx_mt5_credit_pg_stat(ngx_mt5_credit_pg_pool_t *pool,
    ngx_mt5_credit_stat_e stat, ngx_atomic_int_t delta);
static void ngx_mt5_credit_pg_count(ngx_mt5_credit_pg_pool_t *pool,
    ngx_mt5_credit_stat_e stat);
static const char *ngx_mt5_credit_pg_message(PGconn *pg);


/* parameter types of the ingest statement (sql/051): provider, event id,
   body, scheme, signature time, request id: text, text, bytea, text,
   int8, text */
static const Oid  ngx_mt5_credit_pg_types[NGX_MT5_CREDIT_PG_NPARAMS] = {
    25, 25, 17, 25, 20, 25
};

/* ... and of the batch statement (sql/062): arrays of each */
const Oid  ngx_mt5_credit_pg_batch_types[NGX_MT5_CREDIT_PG_NPARAMS] = {
    1009, 1009, 1001, 1009, 1016, 1009
};


ngx_mt5_credit_pg_pool_t *
ngx_mt5_credit_pg_pool_create(ngx_cycle_t *cycle,
    ngx_mt5_credit_main_conf_t *mcf, ngx_mt5_credit_pg_conf_t *conf)
{
    ngx_mt5_credit_pg_pool_t  *pool;

    pool = ngx_pcalloc(cycle->pool, sizeof(ngx_mt5_credit_pg_pool_t));
    if (pool == NULL) {
        return NULL;
    }

    pool->mcf = mcf;
    pool->conf = conf;
    pool->log = cycle->log;

    ngx_queue_init(&pool->idle);
    ngx_queue_init(&pool->active);
    ngx_queue_init(&pool->waiting);

    return pool;
}


void
ngx_mt5_credit_pg_pool_destroy(ngx_mt5_credit_pg_pool_t *pool)
{
    ngx_queue_t               *q;
    ngx_mt5_credit_pg_op_t    *op;
    ngx_mt5_credit_pg_conn_t  *conn;

    /* only on a fast shutdown; the shared gauge must not keep them */
    while (!ngx_queue_empty(&pool->waiting)) {
        q = ngx_queue_head(&pool->waiting);
        op = ngx_queue_data(q, ngx_mt5_credit_pg_op_t, queue);
        ngx_mt5_credit_pg_dequeue(op);
    }

    while (!ngx_queue_empty(&pool->idle)) {
        q = ngx_queue_head(&pool->idle);
        conn = ngx_queue_data(q, ngx_mt5_credit_pg_conn_t, queue);
        ngx_mt5_credit_pg_close(conn);
    }

    /* only on a fast shutdown: the server rolls back what was open */
    while (!ngx_queue_empty(&pool->active)) {
        q = ngx_queue_head(&pool->active);
        conn = ngx_queue_data(q, ngx_mt5_credit_pg_conn_t, queue);
        conn->op = NULL;
        ngx_mt5_credit_pg_close(conn);
    }
}


ngx_int_t
ngx_mt5_credit_pg_run(ngx_mt5_credit_pg_pool_t *pool,
    ngx_mt5_credit_pg_op_t *op)
{
    ngx_queue_t                 *q;
    ngx_mt5_credit_pg_conn_t    *conn;
    ngx_mt5_credit_pg_conf_t    *conf;

    conf = pool->conf;

    op->pool = pool;
    op->conn = NULL;
    op->queued = 0;

    while (!ngx_queue_empty(&pool->idle)) {
        q = ngx_queue_head(&pool->idle);
        conn = ngx_queue_data(q, ngx_mt5_credit_pg_conn_t, queue);

        if (ngx_mt5_credit_pg_send(conn, op) == NGX_OK) {
            return NGX_OK;
        }

        /* a connection that cannot even take a statement is dead */
        ngx_mt5_credit_pg_close(conn);
    }

    if (pool->nwaiting >= conf->queue_size) {
        return NGX_BUSY;
    }

    if (pool->nconns < conf->pool_size
        && ngx_mt5_credit_pg_connect(pool) != NGX_OK
        && pool->nconns == 0)
    {
        return NGX_DECLINED;
    }

    ngx_queue_insert_tail(&pool->waiting, &op->queue);
    op->queued = 1;
    pool->nwaiting++;
    ngx_mt5_credit_pg_stat(pool, NGX_MT5_CREDIT_STAT_PG_QUEUED, 1);

    /* not cancelable: a graceful exit waits for queued webhooks */
    op->wait.handler = ngx_mt5_credit_pg_wait_timeout;
    op->wait.data = op;
    op->wait.log = op->log;
    ngx_add_timer(&op->wait, conf->queue_timeout);

    return NGX_OK;
}


void
ngx_mt5_credit_pg_cancel(ngx_mt5_credit_pg_op_t *op)
{
    ngx_uint_t                  i;
    ngx_mt5_credit_pg_conn_t   *conn;
    ngx_mt5_credit_pg_pool_t   *pool;

    if (op->queued) {
        ngx_mt5_credit_pg_dequeue(op);
        return;
    }

    if (op->delivering) {
        /* its batch's handlers are being called: it is skipped */
        pool = op->pool;

        for (i = 0; i < pool->ndelivering; i++) {
            if (pool->delivering[i] == op) {
                pool->delivering[i] = NULL;
            }
        }

        op->delivering = 0;
        return;
    }

    conn = op->conn;

    if (conn != NULL) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, op->log, 0,
                       "mt5_credit: statement on *%uA detached",
                       conn->c->number);

        for (i = 0; i < conn->nbatch; i++) {
            if (conn->batch[i] == op) {
                conn->batch[i] = NULL;
            }
        }

        if (conn->op == op) {
            conn->op = NULL;
        }

        op->conn = NULL;
    }
}


static void
ngx_mt5_credit_pg_dequeue(ngx_mt5_credit_pg_op_t *op)
{
    ngx_queue_remove(&op->queue);
    op->queued = 0;
    op->pool->nwaiting--;
    ngx_mt5_credit_pg_stat(op->pool, NGX_MT5_CREDIT_STAT_PG_QUEUED, -1);

    if (op->wait.timer_set) {
        ngx_del_timer(&op->wait);
    }
}


static void
ngx_mt5_credit_pg_wait_timeout(ngx_event_t *ev)
{
    ngx_mt5_credit_pg_op_t  *op = ev->data;

    ngx_log_error(NGX_LOG_ERR, op->log, 0,
                  "mt5_credit: no PostgreSQL connection became free within "
                  "%M ms", op->pool->conf->queue_timeout);

    ngx_mt5_credit_pg_dequeue(op);

    op->handler(op, NGX_MT5_CREDIT_PG_QUEUE_TIMEOUT, NULL,
                "wait queue timeout");
}


/*
 * Starts a connection.  Failure here is synchronous and calls no
 * operation's handler: the caller decides what its request gets.
 */

static ngx_int_t
ngx_mt5_credit_pg_connect(ngx_mt5_credit_pg_pool_t *pool)
{
    PGconn                      *pg;
    ngx_mt5_credit_pg_conn_t    *conn;
    ngx_mt5_credit_pg_conf_t    *conf;

    conf = pool->conf;

    pg = PQconnectStartParams(pool->conf->keywords, pool->conf->values, 0);

    if (pg == NULL) {
        ngx_log_error(NGX_LOG_ERR, pool->log, 0,
                      "mt5_credit: PQconnectStartParams() out of memory");
        return NGX_ERROR;
    }

    if (PQstatus(pg) == CONNECTION_BAD) {
        ngx_log_error(NGX_LOG_ERR, pool->log, 0,
                      "mt5_credit: could not connect to PostgreSQL: %s",
                      ngx_mt5_credit_pg_message(pg));
        PQfinish(pg);
        return NGX_ERROR;
    }

    if (PQsetnonblocking(pg, 1) != 0) {
        ngx_log_error(NGX_LOG_ERR, pool->log, 0,
                      "mt5_credit: PQsetnonblocking() failed: %s",
                      ngx_mt5_credit_pg_message(pg));
        PQfinish(pg);
        return NGX_ERROR;
    }

    conn = ngx_calloc(sizeof(ngx_mt5_credit_pg_conn_t), pool->log);
    if (conn == NULL) {
        PQfinish(pg);
        return NGX_ERROR;
    }

    conn->pool = pool;
    conn->pg = pg;
    conn->state = NGX_MT5_CREDIT_PG_CONNECTING;
    conn->deadline = ngx_current_msec + conf->connect_timeout;
    conn->log = *pool->log;
    conn->log.action = "connecting to PostgreSQL";

    /* server notices go to nginx's log, not to raw stderr */
    (void) PQsetNoticeProcessor(pg, ngx_mt5_credit_pg_notice, conn);

    if (ngx_mt5_credit_pg_wrap(conn) != NGX_OK) {
        PQfinish(pg);
        ngx_free(conn);
        return NGX_ERROR;
    }

    /* libpq: treat PGRES_POLLING_WRITING as the first poll's answer */
    if (ngx_mt5_credit_pg_want_write(conn, 1) != NGX_OK) {
        ngx_mt5_credit_pg_unwrap(conn, 0);
        PQfinish(pg);
        ngx_free(conn);
        return NGX_ERROR;
    }

    ngx_queue_insert_tail(&pool->active, &conn->queue);
    pool->nconns++;

    ngx_mt5_credit_pg_stat(pool, NGX_MT5_CREDIT_STAT_PG_OPEN, 1);
    ngx_mt5_credit_pg_count(pool, NGX_MT5_CREDIT_STAT_PG_CONNECTS);

    ngx_add_timer(conn->c->read, conf->connect_timeout);

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, &conn->log, 0,
                   "mt5_credit: connecting to PostgreSQL on *%uA",
                   conn->c->number);

    return NGX_OK;
}


static ngx_int_t
ngx_mt5_credit_pg_wrap(ngx_mt5_credit_pg_conn_t *conn)
{
    int                fd;
    struct stat        st;
    ngx_connection_t  *c;

    fd = PQsocket(conn->pg);
    if (fd == -1) {
        ngx_log_error(NGX_LOG_ERR, &conn->log, 0,
                      "mt5_credit: libpq has no socket: %s",
                      ngx_mt5_credit_pg_message(conn->pg));
        return NGX_ERROR;
    }

    if (fstat(fd, &st) == -1) {
        ngx_log_error(NGX_LOG_ERR, &conn->log, ngx_errno,
                      "mt5_credit: fstat() of libpq's socket failed");
        return NGX_ERROR;
    }

    /* a number can be reused by the next socket; an inode cannot */
    conn->sock_ino = st.st_ino;
    conn->sock_dev = st.st_dev;

    c = ngx_get_connection(fd, &conn->log);
    if (c == NULL) {
        return NGX_ERROR;
    }

    /* libpq's socket: nginx must never close() it */
    c->shared = 1;
    c->data = conn;
    c->number = ngx_atomic_fetch_add(ngx_connection_counter, 1);

    c->read->handler = ngx_mt5_credit_pg_event_handler;
    c->write->handler = ngx_mt5_credit_pg_event_handler;
    c->read->log = c->log;
    c->write->log = c->log;

    conn->c = c;

    if (ngx_add_event(c->read, NGX_READ_EVENT, NGX_LEVEL_EVENT) != NGX_OK) {
        ngx_close_connection(c);
        conn->c = NULL;
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * Releases the nginx side of the connection.  fd_closed: libpq has
 * already closed the socket (it switched sockets during a connect), so
 * the kernel dropped it from epoll and asking epoll would fail.
 */

static void
ngx_mt5_credit_pg_unwrap(ngx_mt5_credit_pg_conn_t *conn, ngx_uint_t fd_closed)
{
    ngx_uint_t         flags;
    ngx_connection_t  *c;

    c = conn->c;

    if (c == NULL) {
        return;
    }

    flags = fd_closed ? NGX_CLOSE_EVENT : 0;

    /* event by event: epoll fails on removing what is not registered */
    if (c->read->active) {
        (void) ngx_del_event(c->read, NGX_READ_EVENT, flags);
    }

    if (c->write->active) {
        (void) ngx_del_event(c->write, NGX_WRITE_EVENT, flags);
    }

    /* shared: frees timers, posted events and the slot, not the fd */
    ngx_close_connection(c);
    conn->c = NULL;
}


static ngx_int_t
ngx_mt5_credit_pg_want_write(ngx_mt5_credit_pg_conn_t *conn, ngx_uint_t on)
{
    ngx_event_t  *wev;

    wev = conn->c->write;

    if (on && !wev->active) {
        return ngx_add_event(wev, NGX_WRITE_EVENT, NGX_LEVEL_EVENT);
    }

    if (!on && wev->active) {
        return ngx_del_event(wev, NGX_WRITE_EVENT, NGX_LEVEL_EVENT);
    }

    return NGX_OK;
}


static void
ngx_mt5_credit_pg_event_handler(ngx_event_t *ev)
{
    ngx_connection_t          *c;
    ngx_mt5_credit_pg_conn_t  *conn;

    c = ev->data;
    conn = c->data;

    if (ev->timedout) {
        ev->timedout = 0;
        ngx_mt5_credit_pg_timeout(conn);
        return;
    }

    if (c->close) {
        /* graceful exit: nginx closes idle connections this way */
        ngx_mt5_credit_pg_close(conn);
        return;
    }

    switch (conn->state) {

    case NGX_MT5_CREDIT_PG_CONNECTING:
        ngx_mt5_credit_pg_connect_step(conn);
        return;

    case NGX_MT5_CREDIT_PG_IDLE:
        ngx_mt5_credit_pg_idle_step(conn);
        return;

    default: /* PREPARING, BUSY */
        ngx_mt5_credit_pg_io_step(conn);
        return;
    }
}


static void
ngx_mt5_credit_pg_connect_step(ngx_mt5_credit_pg_conn_t *conn)
{
    ngx_msec_int_t               left;
    PostgresPollingStatusType    ps;
    ngx_mt5_credit_pg_conf_t    *conf;

    conf = conn->pool->conf;

    ps = PQconnectPoll(conn->pg);

    /*
     * libpq may close its socket and open another inside one poll (next
     * host, target_session_attrs, SSL fallback), usually getting the same
     * number back.  The kernel dropped the old socket from epoll; the new
     * one must be registered, with what is left of the connect time.
     */
    if (ps != PGRES_POLLING_FAILED && !ngx_mt5_credit_pg_same_socket(conn)) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, &conn->log, 0,
                       "mt5_credit: libpq switched sockets (%d -> %d)",
                       conn->c->fd, PQsocket(conn->pg));

        ngx_mt5_credit_pg_unwrap(conn, 1);

        if (ngx_mt5_credit_pg_wrap(conn) != NGX_OK) {
            ngx_mt5_credit_pg_abort(conn, NGX_MT5_CREDIT_PG_UNAVAILABLE,
                                    "cannot register libpq's new socket");
            return;
        }

        left = (ngx_msec_int_t) (conn->deadline - ngx_current_msec);
        ngx_add_timer(conn->c->read, left > 0 ? (ngx_msec_t) left : 1);
    }

    switch (ps) {

    case PGRES_POLLING_READING:
        if (ngx_mt5_credit_pg_want_write(conn, 0) != NGX_OK) {
            ngx_mt5_credit_pg_abort(conn, NGX_MT5_CREDIT_PG_UNAVAILABLE,
                                    "cannot change event interest");
        }
        return;

    case PGRES_POLLING_WRITING:
        if (ngx_mt5_credit_pg_want_write(conn, 1) != NGX_OK) {
            ngx_mt5_credit_pg_abort(conn, NGX_MT5_CREDIT_PG_UNAVAILABLE,
                                    "cannot change event interest");
        }
        return;

    case PGRES_POLLING_FAILED:
        ngx_log_error(NGX_LOG_ERR, &conn->log, 0,
                      "mt5_credit: could not connect to PostgreSQL: %s",
                      ngx_mt5_credit_pg_message(conn->pg));
        ngx_mt5_credit_pg_abort(conn, NGX_MT5_CREDIT_PG_UNAVAILABLE,
                                "connect failed");
        return;

    default: /* PGRES_POLLING_OK */
        break;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, &conn->log, 0,
                   "mt5_credit: connected to PostgreSQL on *%uA",
                   conn->c->number);

    /* a pool that sends its statements as text has nothing to prepare */
    if (!conf->prepare) {
        if (conn->c->read->timer_set) {
            ngx_del_timer(conn->c->read);
        }

        ngx_mt5_credit_pg_release(conn);
        return;
    }

    /* prepared once per connection, asynchronously like everything else */
    conn->state = NGX_MT5_CREDIT_PG_PREPARING;
    conn->log.action = "preparing the ingest statement";

    if (PQsendPrepare(conn->pg, NGX_MT5_CREDIT_PG_STMT,
                      NGX_MT5_CREDIT_PG_QUERY, NGX_MT5_CREDIT_PG_NPARAMS,
                      ngx_mt5_credit_pg_types)
        == 0)
    {
        ngx_log_error(NGX_LOG_ERR, &conn->log, 0,
                      "mt5_credit: PQsendPrepare() failed: %s",
                      ngx_mt5_credit_pg_message(conn->pg));
        ngx_mt5_credit_pg_abort(conn, NGX_MT5_CREDIT_PG_UNAVAILABLE,
                                "prepare failed");
        return;
    }

    conn->flushing = 1;
    ngx_add_timer(conn->c->read, conf->query_timeout);

    ngx_mt5_credit_pg_io_step(conn);
}


/*
 * PREPARING and BUSY: flush what libpq still holds, read what arrived,
 * and collect results until PQgetResult() says NULL: only then is the
 * statement (and its implicit COMMIT) finished.
 */

static void
ngx_mt5_credit_pg_io_step(ngx_mt5_credit_pg_conn_t *conn)
{
    PGresult        *res;
    ExecStatusType   st;

    if (PQconsumeInput(conn->pg) == 0) {
        ngx_log_error(NGX_LOG_ERR, conn->op ? conn->op->log : &conn->log, 0,
                      "mt5_credit: PostgreSQL connection lost: %s",
                      ngx_mt5_credit_pg_message(conn->pg));
        ngx_mt5_credit_pg_abort(conn, NGX_MT5_CREDIT_PG_LOST,
                                "connection lost");
        return;
    }

    if (conn->flushing && ngx_mt5_credit_pg_flush(conn) != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, conn->op ? conn->op->log : &conn->log, 0,
                      "mt5_credit: sending to PostgreSQL failed: %s",
                      ngx_mt5_credit_pg_message(conn->pg));
        ngx_mt5_credit_pg_abort(conn, NGX_MT5_CREDIT_PG_LOST, "send failed");
        return;
    }

    /* PQgetResult() blocks only while PQisBusy(): never here */
    while (!PQisBusy(conn->pg)) {

        res = PQgetResult(conn->pg);

        if (res == NULL) {
            if (conn->flushing) {
                /* nothing can have come back before everything went out */
                return;
            }

            ngx_mt5_credit_pg_complete(conn);
            return;
        }

        st = PQresultStatus(res);

        if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) {
            /* every statement is one: its rows; an error after them
               still makes the whole an error */
            if (conn->result == NULL) {
                conn->result = res;
                continue;
            }

        } else if (conn->error == NULL) {
            conn->error = res;
            continue;
        }

        PQclear(res);
    }
}


static ngx_int_t
ngx_mt5_credit_pg_flush(ngx_mt5_credit_pg_conn_t *conn)
{
    switch (PQflush(conn->pg)) {

    case 0:
        conn->flushing = 0;
        return ngx_mt5_credit_pg_want_write(conn, 0);

    case 1:
        /* the server may be waiting for us to read: both interests on */
        return ngx_mt5_credit_pg_want_write(conn, 1);

    default:
        return NGX_ERROR;
    }
}


static void
ngx_mt5_credit_pg_complete(ngx_mt5_credit_pg_conn_t *conn)
{
    char                        *err, *sqlstate;
    PGresult                    *res, *error;
    ngx_mt5_credit_pg_op_t      *op;
    ngx_mt5_credit_pg_rc_e       rc;

    if (conn->c->read->timer_set) {
        ngx_del_timer(conn->c->read);
    }

    res = conn->result;
    error = conn->error;
    conn->result = NULL;
    conn->error = NULL;
    sqlstate = NULL;

    if (conn->state == NGX_MT5_CREDIT_PG_PREPARING) {
        PQclear(res);

        if (error != NULL) {
            ngx_log_error(NGX_LOG_ERR, &conn->log, 0,
                          "mt5_credit: preparing \"%s\" failed: %s",
                          NGX_MT5_CREDIT_PG_QUERY,
                          PQresultErrorMessage(error));
            PQclear(error);
            ngx_mt5_credit_pg_abort(conn, NGX_MT5_CREDIT_PG_UNAVAILABLE,
                                    "prepare failed");
            return;
        }

        ngx_mt5_credit_pg_release(conn);
        return;
    }

    /* BUSY */

    conn->requests++;
    ngx_mt5_credit_pg_stat(conn->pool, NGX_MT5_CREDIT_STAT_PG_BUSY, -1);

    if (conn->nbatch) {
        ngx_mt5_credit_pg_complete_batch(conn, res, error);
        return;
    }

    op = conn->op;
    conn->op = NULL;

    if (error != NULL) {
        err = PQresultErrorMessage(error);
        sqlstate = PQresultErrorField(error, PG_DIAG_SQLSTATE);

        /* 57014: cancelled by the server's statement_timeout */
        rc = (sqlstate != NULL && ngx_strcmp(sqlstate, "57014") == 0)
             ? NGX_MT5_CREDIT_PG_TIMEOUT : NGX_MT5_CREDIT_PG_FAILED;

    } else if (res == NULL) {
        rc = NGX_MT5_CREDIT_PG_FAILED;
        err = "no result";

    } else {
        rc = NGX_MT5_CREDIT_PG_OK;
        err = NULL;
    }

    if (op != NULL) {
        op->conn = NULL;
        op->sqlstate[0] = '\0';
        op->primary = NULL;
        op->row = 0;

        if (error != NULL && sqlstate != NULL) {
            ngx_cpystrn((u_char *) op->sqlstate, (u_char *) sqlstate,
                        sizeof(op->sqlstate));
        }

        if (error != NULL) {
            op->primary = PQresultErrorField(error,
                                             PG_DIAG_MESSAGE_PRIMARY);
        }
    }

    /* the connection goes back (or serves the next waiter) first */
    ngx_mt5_credit_pg_release(conn);

    if (op != NULL) {
        op->handler(op, rc, rc == NGX_MT5_CREDIT_PG_OK ? res : NULL, err);
    }

    PQclear(res);
    PQclear(error);
}


static void
ngx_mt5_credit_pg_idle_step(ngx_mt5_credit_pg_conn_t *conn)
{
    PGresult  *res;

    /* the server spoke on an idle connection: shutdown, restart, EOF */
    if (PQconsumeInput(conn->pg) == 0
        || PQstatus(conn->pg) != CONNECTION_OK)
    {
        ngx_log_error(NGX_LOG_INFO, &conn->log, 0,
                      "mt5_credit: idle PostgreSQL connection closed: %s",
                      ngx_mt5_credit_pg_message(conn->pg));
        ngx_mt5_credit_pg_close(conn);
        return;
    }

    /* not busy: PQgetResult() returns at once */
    if (!PQisBusy(conn->pg)) {
        res = PQgetResult(conn->pg);

        if (res != NULL) {
            ngx_log_error(NGX_LOG_WARN, &conn->log, 0,
                          "mt5_credit: unexpected result on an idle "
                          "PostgreSQL connection: %s",
                          PQresultErrorMessage(res));
            PQclear(res);
            ngx_mt5_credit_pg_close(conn);
        }
    }
}


static void
ngx_mt5_credit_pg_timeout(ngx_mt5_credit_pg_conn_t *conn)
{
    ngx_mt5_credit_pg_conf_t    *conf;

    conf = conn->pool->conf;

    switch (conn->state) {

    case NGX_MT5_CREDIT_PG_IDLE:
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, &conn->log, 0,
                       "mt5_credit: idle PostgreSQL connection timed out");
        ngx_mt5_credit_pg_close(conn);
        return;

    case NGX_MT5_CREDIT_PG_BUSY:
        /*
         * The statement may or may not have committed.  Closing the
         * connection makes the server roll back whatever is still open;
         * the provider gets 503 and retries, and the unique event key
         * turns a retry of a committed event into a duplicate.
         */
        ngx_log_error(NGX_LOG_ERR, conn->op ? conn->op->log : &conn->log, 0,
                      "mt5_credit: PostgreSQL did not answer within %M ms; "
                      "connection closed, outcome unknown",
                      conf->query_timeout);
        ngx_mt5_credit_pg_abort(conn, NGX_MT5_CREDIT_PG_TIMEOUT,
                                "query timeout");
        return;

    default: /* CONNECTING, PREPARING */
        ngx_log_error(NGX_LOG_ERR, &conn->log, 0,
                      "mt5_credit: PostgreSQL connect timed out after %M ms",
                      conn->state == NGX_MT5_CREDIT_PG_CONNECTING
                      ? conf->connect_timeout : conf->query_timeout);
        ngx_mt5_credit_pg_abort(conn, NGX_MT5_CREDIT_PG_UNAVAILABLE,
                                "connect timeout");
        return;
    }
}


/*
 * Gives up on a connection; its operation (if any, and not cancelled)
 * gets rc.  A connection that never got ready proves the server cannot be
 * reached now: it is not replaced (a replacement would fail the same way,
 * and each failure would start the next: a reconnect storm); the waiters
 * stay for the connections still alive, or, when none is, get UNAVAILABLE
 * at once.  A connection lost while busy may be replaced once for them.
 */

static void
ngx_mt5_credit_pg_abort(ngx_mt5_credit_pg_conn_t *conn,
    ngx_mt5_credit_pg_rc_e rc, const char *why)
{
    ngx_uint_t                 was_ready, n;
    ngx_mt5_credit_pg_op_t    *op;
    ngx_mt5_credit_pg_op_t    *ops[NGX_MT5_CREDIT_PG_BATCH_MAX];
    ngx_mt5_credit_pg_pool_t  *pool;

    pool = conn->pool;
    op = conn->op;
    was_ready = (conn->state == NGX_MT5_CREDIT_PG_BUSY
                 || conn->state == NGX_MT5_CREDIT_PG_IDLE);

    if (op != NULL) {
        op->conn = NULL;
        conn->op = NULL;
    }

    n = ngx_mt5_credit_pg_take_batch(conn, ops);

    ngx_mt5_credit_pg_close(conn);

    if (op != NULL) {
        op->handler(op, rc, NULL, why);
    }

    /* a batch's webhooks: each as one statement would have been */
    ngx_mt5_credit_pg_deliver(pool, ops, n, rc, NULL, why);

    if (was_ready) {
        ngx_mt5_credit_pg_refill(pool);

    } else if (pool->nconns == 0) {
        ngx_mt5_credit_pg_fail_waiting(pool, NGX_MT5_CREDIT_PG_UNAVAILABLE,
                                       "PostgreSQL unavailable");
    }
}


static ngx_int_t
ngx_mt5_credit_pg_send(ngx_mt5_credit_pg_conn_t *conn,
    ngx_mt5_credit_pg_op_t *op)
{
    size_t       size;
    ngx_uint_t   i;

    if (op->sql != NULL) {
        /* the extended protocol: one statement, its values apart */
        if (op->nparams > NGX_MT5_CREDIT_PG_MAXPARAMS
            || PQsendQueryParams(conn->pg, op->sql, (int) op->nparams,
                                 op->types, op->values,
                                 op->types ? op->lengths : NULL,
                                 op->types ? op->formats : NULL, 0)
               == 0)
        {
            ngx_log_error(NGX_LOG_ERR, op->log, 0,
                          "mt5_credit: PQsendQueryParams() failed: %s",
                          ngx_mt5_credit_pg_message(conn->pg));
            return NGX_ERROR;
        }

        for (i = 0, size = ngx_strlen(op->sql); i < op->nparams; i++) {
            size += op->values[i] == NULL ? 0
                    : op->types ? (size_t) op->lengths[i]
                    : ngx_strlen(op->values[i]);
        }

    } else {
        if (PQsendQueryPrepared(conn->pg, NGX_MT5_CREDIT_PG_STMT,
                                NGX_MT5_CREDIT_PG_NPARAMS, op->values,
                                op->lengths, op->formats, 0)
            == 0)
        {
            ngx_log_error(NGX_LOG_ERR, op->log, 0,
                          "mt5_credit: PQsendQueryPrepared() failed: %s",
                          ngx_mt5_credit_pg_message(conn->pg));
            return NGX_ERROR;
        }

        for (i = 0, size = 0; i < NGX_MT5_CREDIT_PG_NPARAMS; i++) {
            size += op->lengths[i];
        }
    }

    /* the statement is in libpq's buffer now; op may go any time */

    conn->op = op;
    conn->nbatch = 0;
    op->conn = conn;

    return ngx_mt5_credit_pg_sent(conn, size,
                                  op->sql ? "running a console statement"
                                          : "running the ingest statement");
}


/*
 * Several waiting ingest operations as one statement: their parameters
 * as arrays (ngx_mt5_credit_pg_batch.c), one row each in the answer.
 */

static ngx_int_t
ngx_mt5_credit_pg_send_batch(ngx_mt5_credit_pg_conn_t *conn,
    ngx_mt5_credit_pg_op_t **ops, ngx_uint_t n)
{
    int                          rc;
    int                          lengths[NGX_MT5_CREDIT_PG_NPARAMS];
    int                          formats[NGX_MT5_CREDIT_PG_NPARAMS];
    u_char                      *buf;
    size_t                       size;
    ngx_uint_t                   i;
    const char                  *values[NGX_MT5_CREDIT_PG_NPARAMS];
    ngx_mt5_credit_pg_conf_t    *conf;

    conf = conn->pool->conf;

    if (conn->batch == NULL) {
        conn->batch = ngx_alloc(conf->batch * sizeof(ngx_mt5_credit_pg_op_t *),
                                &conn->log);
        if (conn->batch == NULL) {
            return NGX_ERROR;
        }
    }

    size = ngx_mt5_credit_pg_batch_size(ops, n);

    buf = ngx_alloc(size, &conn->log);
    if (buf == NULL) {
        return NGX_ERROR;
    }

    ngx_mt5_credit_pg_batch_params(ops, n, buf, values, lengths);

    for (i = 0; i < NGX_MT5_CREDIT_PG_NPARAMS; i++) {
        formats[i] = 1;
    }

    rc = PQsendQueryParams(conn->pg, NGX_MT5_CREDIT_PG_BATCH_QUERY,
                           NGX_MT5_CREDIT_PG_NPARAMS,
                           ngx_mt5_credit_pg_batch_types, values, lengths,
                           formats, 0);

    /* libpq copied the parameters into its buffer */
    ngx_free(buf);

    if (rc == 0) {
        ngx_log_error(NGX_LOG_ERR, &conn->log, 0,
                      "mt5_credit: PQsendQueryParams() failed: %s",
                      ngx_mt5_credit_pg_message(conn->pg));
        return NGX_ERROR;
    }

    conn->op = NULL;
    conn->nbatch = n;

    for (i = 0; i < n; i++) {
        conn->batch[i] = ops[i];
        ops[i]->conn = conn;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, &conn->log, 0,
                   "mt5_credit: %ui webhooks in one statement on *%uA",
                   n, conn->c->number);

    ngx_mt5_credit_pg_stat(conn->pool, NGX_MT5_CREDIT_STAT_PG_BATCHED,
                           (ngx_atomic_int_t) n);

    return ngx_mt5_credit_pg_sent(conn, size,
                                  "running the ingest statement for a batch");
}


/* a statement is in libpq's buffer: the connection is busy with it */

static ngx_int_t
ngx_mt5_credit_pg_sent(ngx_mt5_credit_pg_conn_t *conn, size_t size,
    char *action)
{
    ngx_uint_t                   i;
    ngx_mt5_credit_pg_conf_t    *conf;

    conf = conn->pool->conf;

    if (size > conn->carried) {
        conn->carried = size;
    }

    ngx_queue_remove(&conn->queue);
    ngx_queue_insert_tail(&conn->pool->active, &conn->queue);

    conn->c->idle = 0;
    conn->c->log = &conn->log;
    conn->state = NGX_MT5_CREDIT_PG_BUSY;
    conn->log.action = action;
    conn->flushing = 1;

    ngx_mt5_credit_pg_stat(conn->pool, NGX_MT5_CREDIT_STAT_PG_BUSY, 1);
    ngx_mt5_credit_pg_count(conn->pool, NGX_MT5_CREDIT_STAT_PG_STATEMENTS);

    /* not cancelable: a graceful exit lets a running statement finish */
    conn->c->read->cancelable = 0;
    ngx_add_timer(conn->c->read, conf->query_timeout);

    if (ngx_mt5_credit_pg_flush(conn) != NGX_OK) {
        /* nothing reached the server for sure; the caller may retry */
        if (conn->op != NULL) {
            conn->op->conn = NULL;
            conn->op = NULL;
        }

        for (i = 0; i < conn->nbatch; i++) {
            conn->batch[i]->conn = NULL;
        }

        conn->nbatch = 0;
        conn->state = NGX_MT5_CREDIT_PG_IDLE;
        ngx_mt5_credit_pg_stat(conn->pool, NGX_MT5_CREDIT_STAT_PG_BUSY, -1);
        ngx_log_error(NGX_LOG_ERR, &conn->log, 0,
                      "mt5_credit: sending to PostgreSQL failed: %s",
                      ngx_mt5_credit_pg_message(conn->pg));
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * A connection finished its work: it serves the next waiter, goes idle,
 * or is closed if it is not clean enough to reuse.
 */

static void
ngx_mt5_credit_pg_release(ngx_mt5_credit_pg_conn_t *conn)
{
    ngx_int_t                    rc;
    ngx_uint_t                   i, n;
    ngx_mt5_credit_pg_op_t      *ops[NGX_MT5_CREDIT_PG_BATCH_MAX];
    ngx_mt5_credit_pg_pool_t    *pool;
    ngx_mt5_credit_pg_conf_t    *conf;

    pool = conn->pool;
    conf = pool->conf;

    conn->state = NGX_MT5_CREDIT_PG_IDLE;

    if (conn->carried > NGX_MT5_CREDIT_PG_RECYCLE_BYTES
        && PQstatus(conn->pg) == CONNECTION_OK)
    {
        ngx_log_error(NGX_LOG_INFO, &conn->log, 0,
                      "mt5_credit: a connection that carried %uz bytes of "
                      "parameters is closed, not kept at that size",
                      conn->carried);
    }

    if (PQstatus(conn->pg) != CONNECTION_OK
        || PQtransactionStatus(conn->pg) != PQTRANS_IDLE
        || conn->requests >= conf->max_requests
        || conn->carried > NGX_MT5_CREDIT_PG_RECYCLE_BYTES)
    {
        ngx_mt5_credit_pg_close(conn);
        ngx_mt5_credit_pg_refill(pool);
        return;
    }

    /* a healthy connection serves the waiters, also while exiting */

    if (!ngx_queue_empty(&pool->waiting)) {
        n = ngx_mt5_credit_pg_take(pool, ops);

        rc = (n == 1) ? ngx_mt5_credit_pg_send(conn, ops[0])
                      : ngx_mt5_credit_pg_send_batch(conn, ops, n);

        if (rc == NGX_OK) {
            return;
        }

        /* the statement never left: a clean "try again" for its owners */
        ngx_mt5_credit_pg_close(conn);

        for (i = 0; i < n; i++) {
            ops[i]->delivering = 1;
        }

        ngx_mt5_credit_pg_deliver(pool, ops, n, NGX_MT5_CREDIT_PG_UNAVAILABLE,
                                  NULL, "send failed");
        ngx_mt5_credit_pg_refill(pool);
        return;
    }

    if (ngx_exiting || ngx_terminate || ngx_quit) {
        ngx_mt5_credit_pg_close(conn);
        return;
    }

    ngx_queue_remove(&conn->queue);
    ngx_queue_insert_head(&pool->idle, &conn->queue);

    conn->log.action = "keeping an idle PostgreSQL connection";
    conn->c->idle = 1;
    conn->c->log = &conn->log;

    if (ngx_mt5_credit_pg_want_write(conn, 0) != NGX_OK) {
        ngx_mt5_credit_pg_close(conn);
        return;
    }

    ngx_add_timer(conn->c->read, conf->idle_timeout);
    conn->c->read->cancelable = 1;
}


/*
 * What a free connection takes from the head of the queue: one operation,
 * or, while ingest operations wait one after the other, up to
 * mt5_credit_postgres_batch of them, within what a connection may carry.
 * A console statement, or one whose batch failed, goes alone.
 */

static ngx_uint_t
ngx_mt5_credit_pg_take(ngx_mt5_credit_pg_pool_t *pool,
    ngx_mt5_credit_pg_op_t **ops)
{
    size_t                    bytes, size;
    ngx_uint_t                n, k, max;
    ngx_queue_t              *q;
    ngx_mt5_credit_pg_op_t   *op;

    max = pool->batch_off ? 1 : pool->conf->batch;
    bytes = 0;
    n = 0;

    while (n < max && !ngx_queue_empty(&pool->waiting)) {
        q = ngx_queue_head(&pool->waiting);
        op = ngx_queue_data(q, ngx_mt5_credit_pg_op_t, queue);

        if (n > 0 && (op->sql != NULL || op->alone)) {
            break;
        }

        for (k = 0, size = 0; op->sql == NULL && k < NGX_MT5_CREDIT_PG_NPARAMS;
             k++)
        {
            size += op->lengths[k];
        }

        if (n > 0 && bytes + size > NGX_MT5_CREDIT_PG_RECYCLE_BYTES) {
            break;
        }

        ngx_mt5_credit_pg_dequeue(op);
        ops[n++] = op;
        bytes += size;

        if (op->sql != NULL || op->alone) {
            break;
        }
    }

    return n;
}


/* a batch's operations off the connection, marked as being answered */

static ngx_uint_t
ngx_mt5_credit_pg_take_batch(ngx_mt5_credit_pg_conn_t *conn,
    ngx_mt5_credit_pg_op_t **ops)
{
    ngx_uint_t  i, n;

    n = conn->nbatch;

    for (i = 0; i < n; i++) {
        ops[i] = conn->batch[i];

        if (ops[i] != NULL) {
            ops[i]->conn = NULL;
            ops[i]->delivering = 1;
        }
    }

    conn->nbatch = 0;

    return n;
}


/*
 * A batch's statement ended.  Committed: each operation gets its own row.
 * Refused as a whole: nothing was committed, and each webhook goes back
 * to the head of the queue to be sent alone, so that no webhook's fault
 * fails another.  Cancelled by statement_timeout: each gets the timeout
 * one statement would have got.
 */

static void
ngx_mt5_credit_pg_complete_batch(ngx_mt5_credit_pg_conn_t *conn,
    PGresult *res, PGresult *error)
{
    char                      *sqlstate;
    ngx_uint_t                 n;
    ngx_mt5_credit_pg_op_t    *ops[NGX_MT5_CREDIT_PG_BATCH_MAX];
    ngx_mt5_credit_pg_pool_t  *pool;

    pool = conn->pool;
    n = ngx_mt5_credit_pg_take_batch(conn, ops);

    if (error == NULL && res != NULL) {
        ngx_mt5_credit_pg_release(conn);
        ngx_mt5_credit_pg_deliver(pool, ops, n, NGX_MT5_CREDIT_PG_OK, res,
                                  NULL);
        PQclear(res);
        return;
    }

    sqlstate = error ? PQresultErrorField(error, PG_DIAG_SQLSTATE) : NULL;

    if (sqlstate != NULL && ngx_strcmp(sqlstate, "57014") == 0) {
        ngx_log_error(NGX_LOG_ERR, &conn->log, 0,
                      "mt5_credit: a statement of %ui webhooks was cancelled "
                      "by the server: %s", n, PQresultErrorMessage(error));
        ngx_mt5_credit_pg_release(conn);
        ngx_mt5_credit_pg_deliver(pool, ops, n, NGX_MT5_CREDIT_PG_TIMEOUT,
                                  NULL, "cancelled by the server");
        PQclear(res);
        PQclear(error);
        return;
    }

    if (sqlstate != NULL && ngx_strcmp(sqlstate, "42883") == 0) {
        /* a database before sql/062: one statement per webhook, as then */
        pool->batch_off = 1;
        ngx_log_error(NGX_LOG_ERR, &conn->log, 0,
                      "mt5_credit: the database has no ingest_batch() "
                      "(sql/062): webhooks are sent one by one in this "
                      "worker: %s", PQresultErrorMessage(error));

    } else {
        ngx_log_error(NGX_LOG_WARN, &conn->log, 0,
                      "mt5_credit: a statement of %ui webhooks failed, "
                      "each is sent alone: %s", n,
                      error ? PQresultErrorMessage(error) : "no result");
    }

    ngx_mt5_credit_pg_requeue(pool, ops, n);

    PQclear(res);
    PQclear(error);

    ngx_mt5_credit_pg_release(conn);
}


/* a failed batch's operations at the head of the queue, in their order */

static void
ngx_mt5_credit_pg_requeue(ngx_mt5_credit_pg_pool_t *pool,
    ngx_mt5_credit_pg_op_t **ops, ngx_uint_t n)
{
    ngx_uint_t                i;
    ngx_mt5_credit_pg_op_t   *op;

    for (i = n; i-- > 0; /* void */) {
        op = ops[i];

        if (op == NULL) {
            continue;
        }

        op->delivering = 0;
        op->alone = 1;
        op->queued = 1;
        ngx_queue_insert_head(&pool->waiting, &op->queue);
        pool->nwaiting++;
        ngx_mt5_credit_pg_stat(pool, NGX_MT5_CREDIT_STAT_PG_QUEUED, 1);

        op->wait.handler = ngx_mt5_credit_pg_wait_timeout;
        op->wait.data = op;
        op->wait.log = op->log;
        ngx_add_timer(&op->wait, pool->conf->queue_timeout);
    }
}


/*
 * Calls the handlers of a batch's operations, each with its own row of
 * res when rc is OK.  A handler may finish requests whose operations are
 * still to be answered here (HTTP/2 streams of one connection): those
 * cancel themselves out of ops, through pool->delivering.
 */

static void
ngx_mt5_credit_pg_deliver(ngx_mt5_credit_pg_pool_t *pool,
    ngx_mt5_credit_pg_op_t **ops, ngx_uint_t n, ngx_mt5_credit_pg_rc_e rc,
    PGresult *res, const char *err)
{
    ngx_uint_t                 i, saved_n;
    const char                *why;
    ngx_mt5_credit_pg_op_t    *op, **saved;
    ngx_mt5_credit_pg_rc_e     orc;

    saved = pool->delivering;
    saved_n = pool->ndelivering;
    pool->delivering = ops;
    pool->ndelivering = n;

    for (i = 0; i < n; i++) {
        op = ops[i];

        if (op == NULL) {
            continue;
        }

        ops[i] = NULL;
        op->delivering = 0;
        op->conn = NULL;
        op->sqlstate[0] = '\0';
        op->primary = NULL;
        op->row = 0;

        orc = rc;
        why = err;

        if (rc == NGX_MT5_CREDIT_PG_OK) {
            switch (ngx_mt5_credit_pg_batch_row(res, i, n, op)) {

            case NGX_OK:
                break;

            case NGX_DECLINED:
                orc = NGX_MT5_CREDIT_PG_FAILED;
                why = op->primary;
                break;

            default:
                orc = NGX_MT5_CREDIT_PG_FAILED;
                why = "the answer is not one row per webhook, in order";
                break;
            }
        }

        op->handler(op, orc, orc == NGX_MT5_CREDIT_PG_OK ? res : NULL, why);
    }

    pool->delivering = saved;
    pool->ndelivering = saved_n;
}


/*
 * Waiters and no connection that could serve them: open one, or, when
 * none can be opened at all, tell them now rather than at their timeout.
 */

static void
ngx_mt5_credit_pg_refill(ngx_mt5_credit_pg_pool_t *pool)
{
    if (pool->nwaiting == 0) {
        return;
    }

    if (pool->nconns < pool->conf->pool_size
        && ngx_mt5_credit_pg_connect(pool) == NGX_OK)
    {
        return;
    }

    if (pool->nconns == 0) {
        ngx_mt5_credit_pg_fail_waiting(pool, NGX_MT5_CREDIT_PG_UNAVAILABLE,
                                       "PostgreSQL unavailable");
    }
}


static void
ngx_mt5_credit_pg_fail_waiting(ngx_mt5_credit_pg_pool_t *pool,
    ngx_mt5_credit_pg_rc_e rc, const char *err)
{
    ngx_queue_t             *q;
    ngx_mt5_credit_pg_op_t  *op;

    while (!ngx_queue_empty(&pool->waiting)) {
        q = ngx_queue_head(&pool->waiting);
        op = ngx_queue_data(q, ngx_mt5_credit_pg_op_t, queue);

        ngx_mt5_credit_pg_dequeue(op);
        op->handler(op, rc, NULL, err);
    }
}


static void
ngx_mt5_credit_pg_close(ngx_mt5_credit_pg_conn_t *conn)
{
    ngx_uint_t                   i;
    ngx_mt5_credit_pg_pool_t    *pool;

    pool = conn->pool;

    ngx_log_debug0(NGX_LOG_DEBUG_HTTP, &conn->log, 0,
                   "mt5_credit: closing PostgreSQL connection");

    if (conn->state == NGX_MT5_CREDIT_PG_BUSY) {
        ngx_mt5_credit_pg_stat(pool, NGX_MT5_CREDIT_STAT_PG_BUSY, -1);
    }

    if (conn->op != NULL) {
        conn->op->conn = NULL;
        conn->op = NULL;
    }

    for (i = 0; i < conn->nbatch; i++) {
        if (conn->batch[i] != NULL) {
            conn->batch[i]->conn = NULL;
        }
    }

    if (conn->batch != NULL) {
        ngx_free(conn->batch);
    }

    PQclear(conn->result);
    PQclear(conn->error);

    ngx_queue_remove(&conn->queue);
    pool->nconns--;
    ngx_mt5_credit_pg_stat(pool, NGX_MT5_CREDIT_STAT_PG_OPEN, -1);

    /*
     * libpq closes the socket itself when it finds the connection lost
     * (PQsocket() is -1 then), or may have replaced it: the kernel has
     * already dropped it from epoll, and asking epoll again would fail.
     */
    ngx_mt5_credit_pg_unwrap(conn, conn->c != NULL
                                   && !ngx_mt5_credit_pg_same_socket(conn));

    /* closes the socket; the server rolls back anything still open */
    PQfinish(conn->pg);

    ngx_free(conn);
}


/* libpq's last error, on one line, for the error log */

static const char *
ngx_mt5_credit_pg_message(PGconn *pg)
{
    char  *msg, *p;

    msg = PQerrorMessage(pg);

    for (p = msg; *p; p++) {
        if (*p == '\n') {
            *p = (p[1] == '\0') ? '\0' : ' ';
        }
    }

    return (*msg != '\0') ? msg : "(no message)";
}


/* is the socket wrapped still the one libpq uses? */

static ngx_uint_t
ngx_mt5_credit_pg_same_socket(ngx_mt5_credit_pg_conn_t *conn)
{
    int          fd;
    struct stat  st;

    fd = PQsocket(conn->pg);

    if (fd == -1 || fd != conn->c->fd || fstat(fd, &st) == -1) {
        return 0;
    }

    return st.st_ino == conn->sock_ino && st.st_dev == conn->sock_dev;
}


static void
ngx_mt5_credit_pg_notice(void *arg, const char *message)
{
    ngx_mt5_credit_pg_conn_t  *conn = arg;

    size_t  len;

    len = ngx_strlen(message);

    while (len && (message[len - 1] == '\n' || message[len - 1] == '\r')) {
        len--;
    }

    ngx_log_error(NGX_LOG_NOTICE, &conn->log, 0,
                  "mt5_credit: PostgreSQL: %*s", len, message);
}


/* the edge's pool gauges count the edge's pool only */
static void
ngx_mt5_credit_pg_stat(ngx_mt5_credit_pg_pool_t *pool,
    ngx_mt5_credit_stat_e stat, ngx_atomic_int_t delta)
{
    if (pool->conf->stats) {
        ngx_mt5_credit_stat_add(pool->mcf, stat, delta);
    }
}


static void
ngx_mt5_credit_pg_count(ngx_mt5_credit_pg_pool_t *pool,
    ngx_mt5_credit_stat_e stat)
{
    if (pool->conf->stats) {
        ngx_mt5_credit_count(pool->mcf, stat);
    }
}
