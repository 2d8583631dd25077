
/*
 * Copyright (C) mt5-credit
 *
 * hiredis 0.14 on nginx's event loop.
 *
 * hiredis reads and writes at most one buffer per call and expects to be
 * called again while the socket stays ready, i.e. level-triggered
 * readiness; the socket is registered level-triggered for that.  hiredis
 * owns the file descriptor (redisFree() closes it), so the nginx
 * connection around it is marked shared.  Version 0.14 has no timeouts in
 * its async API: the connect and reply deadline is an nginx timer here.
 * Reconnects happen from a cancelable timer, never from inside a hiredis
 * callback, with a doubling backoff.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>

#include "ngx_mt5_credit_redis.h"


#define NGX_MT5_CREDIT_REDIS_BACKOFF_MIN  100
#define NGX_MT5_CREDIT_REDIS_BACKOFF_MAX  5000


struct ngx_mt5_credit_redis_s {
    ngx_mt5_credit_main_conf_t   *mcf;
    ngx_log_t                    *log;
    redisAsyncContext            *ac;
    ngx_connection_t             *c;
    ngx_event_t                   reconnect;
    ngx_event_t                   deadline;
    ngx_msec_t                    backoff;
    ngx_uint_t                    pending;
    ngx_uint_t                    missed;      /* since the last line */
    ngx_msec_t                    missed_logged;
    unsigned                      missed_once:1;
    unsigned                      connected:1;
    unsigned                      exiting:1;
};


/* an outage is one log line a second, with the count, not one a request */
#define NGX_MT5_CREDIT_REDIS_LOG_EVERY  1000


static void ngx_mt5_credit_redis_connect(ngx_mt5_credit_redis_t *redis);
static void ngx_mt5_credit_redis_schedule(ngx_mt5_credit_redis_t *redis);
static void ngx_mt5_credit_redis_drop(ngx_mt5_credit_redis_t *redis);
static void ngx_mt5_credit_redis_reconnect_handler(ngx_event_t *ev);
static void ngx_mt5_credit_redis_deadline_handler(ngx_event_t *ev);
static void ngx_mt5_credit_redis_read_handler(ngx_event_t *ev);
static void ngx_mt5_credit_redis_write_handler(ngx_event_t *ev);
static void ngx_mt5_credit_redis_on_connect(const redisAsyncContext *ac,
    int status);
static void ngx_mt5_credit_redis_on_disconnect(const redisAsyncContext *ac,
    int status);
static void ngx_mt5_credit_redis_on_reply(redisAsyncContext *ac, void *r,
    void *privdata);
static void ngx_mt5_credit_redis_add_read(void *privdata);
static void ngx_mt5_credit_redis_del_read(void *privdata);
static void ngx_mt5_credit_redis_add_write(void *privdata);
static void ngx_mt5_credit_redis_del_write(void *privdata);
static void ngx_mt5_credit_redis_cleanup(void *privdata);
static void ngx_mt5_credit_redis_missed(ngx_mt5_credit_redis_t *redis,
    ngx_log_t *log, const char *why, int64_t credit_id);


/* told apart in the reply callback: only an LPUSH counts as a wake-up */
static char  ngx_mt5_credit_redis_push;
static char  ngx_mt5_credit_redis_trim;


ngx_mt5_credit_redis_t *
ngx_mt5_credit_redis_create(ngx_cycle_t *cycle,
    ngx_mt5_credit_main_conf_t *mcf)
{
    ngx_mt5_credit_redis_t  *redis;

    redis = ngx_pcalloc(cycle->pool, sizeof(ngx_mt5_credit_redis_t));
    if (redis == NULL) {
        return NULL;
    }

    redis->mcf = mcf;
    redis->log = cycle->log;
    redis->backoff = NGX_MT5_CREDIT_REDIS_BACKOFF_MIN;

    redis->reconnect.handler = ngx_mt5_credit_redis_reconnect_handler;
    redis->reconnect.data = redis;
    redis->reconnect.log = cycle->log;
    redis->reconnect.cancelable = 1;

    /*
     * Not cancelable: a worker that is exiting gracefully waits for the
     * wake-ups it has sent (at most redis_timeout), like the requests that
     * sent them, instead of dropping them with its last request.
     */
    redis->deadline.handler = ngx_mt5_credit_redis_deadline_handler;
    redis->deadline.data = redis;
    redis->deadline.log = cycle->log;
    redis->deadline.cancelable = 0;

    ngx_mt5_credit_redis_connect(redis);

    return redis;
}


void
ngx_mt5_credit_redis_destroy(ngx_mt5_credit_redis_t *redis)
{
    redis->exiting = 1;

    ngx_mt5_credit_redis_drop(redis);

    if (redis->reconnect.timer_set) {
        ngx_del_timer(&redis->reconnect);
    }
}


void
ngx_mt5_credit_redis_wake(ngx_mt5_credit_redis_t *redis, int64_t credit_id,
    ngx_log_t *log)
{
    redisAsyncContext           *ac;
    ngx_mt5_credit_main_conf_t  *mcf;

    mcf = redis->mcf;
    ac = redis->ac;

    if (ac == NULL) {
        ngx_mt5_credit_count(mcf, NGX_MT5_CREDIT_STAT_REDIS_ERROR);
        ngx_mt5_credit_redis_missed(redis, log, "Redis unavailable",
                                    credit_id);
        return;
    }

    if (redis->pending + 2 > mcf->redis_queue_max) {
        ngx_mt5_credit_count(mcf, NGX_MT5_CREDIT_STAT_REDIS_ERROR);
        ngx_mt5_credit_redis_missed(redis, log, "Redis commands unanswered",
                                    credit_id);
        return;
    }

    /*
     * Before connect completes hiredis buffers these; the deadline holds.
     * Each accepted command has exactly one reply callback to come.
     */
    if (redisAsyncCommand(ac, ngx_mt5_credit_redis_on_reply,
                          &ngx_mt5_credit_redis_push, "LPUSH %b %lld",
                          mcf->redis_key.data, mcf->redis_key.len,
                          (long long) credit_id)
        != REDIS_OK)
    {
        ngx_mt5_credit_count(mcf, NGX_MT5_CREDIT_STAT_REDIS_ERROR);
        ngx_mt5_credit_redis_missed(redis, log, "Redis refused the wake-up",
                                    credit_id);
        return;
    }

    redis->pending++;

    /* the trim only bounds the list; failing it loses nothing */
    if (redisAsyncCommand(ac, ngx_mt5_credit_redis_on_reply,
                          &ngx_mt5_credit_redis_trim, "LTRIM %b 0 %d",
                          mcf->redis_key.data, mcf->redis_key.len,
                          NGX_MT5_CREDIT_REDIS_LIST_MAX - 1)
        == REDIS_OK)
    {
        redis->pending++;
    }

    if (!redis->deadline.timer_set) {
        ngx_add_timer(&redis->deadline, mcf->redis_timeout);
    }
}


static void
ngx_mt5_credit_redis_connect(ngx_mt5_credit_redis_t *redis)
{
    redisAsyncContext           *ac;
    ngx_connection_t            *c;
    ngx_mt5_credit_main_conf_t  *mcf;

    mcf = redis->mcf;

    if (mcf->redis_port) {
        ac = redisAsyncConnect((char *) mcf->redis_host.data,
                               (int) mcf->redis_port);

    } else {
        ac = redisAsyncConnectUnix((char *) mcf->redis_host.data);
    }

    if (ac == NULL) {
        ngx_log_error(NGX_LOG_ERR, redis->log, 0,
                      "mt5_credit: redisAsyncConnect() out of memory");
        ngx_mt5_credit_redis_schedule(redis);
        return;
    }

    if (ac->err) {
        ngx_log_error(NGX_LOG_ERR, redis->log, 0,
                      "mt5_credit: could not connect to Redis at %V: %s",
                      &mcf->redis_addr, ac->errstr);
        redisAsyncFree(ac);
        ngx_mt5_credit_redis_schedule(redis);
        return;
    }

    c = ngx_get_connection(ac->c.fd, redis->log);
    if (c == NULL) {
        redisAsyncFree(ac);
        ngx_mt5_credit_redis_schedule(redis);
        return;
    }

    /* hiredis' socket: nginx must never close() it */
    c->shared = 1;
    c->data = redis;
    c->number = ngx_atomic_fetch_add(ngx_connection_counter, 1);
    c->read->handler = ngx_mt5_credit_redis_read_handler;
    c->write->handler = ngx_mt5_credit_redis_write_handler;
    c->read->log = c->log;
    c->write->log = c->log;

    /* a graceful exit closes it like any idle connection: once the
       requests still running have sent their wake-ups (the read handler) */
    c->idle = 1;

    redis->ac = ac;
    redis->c = c;
    redis->connected = 0;

    ac->data = redis;
    ac->ev.data = redis;
    ac->ev.addRead = ngx_mt5_credit_redis_add_read;
    ac->ev.delRead = ngx_mt5_credit_redis_del_read;
    ac->ev.addWrite = ngx_mt5_credit_redis_add_write;
    ac->ev.delWrite = ngx_mt5_credit_redis_del_write;
    ac->ev.cleanup = ngx_mt5_credit_redis_cleanup;

    /* after the adapter: setting the callback asks for writability */
    redisAsyncSetConnectCallback(ac, ngx_mt5_credit_redis_on_connect);
    redisAsyncSetDisconnectCallback(ac, ngx_mt5_credit_redis_on_disconnect);

    ngx_add_timer(&redis->deadline, mcf->redis_timeout);
}


static void
ngx_mt5_credit_redis_schedule(ngx_mt5_credit_redis_t *redis)
{
    if (redis->exiting || ngx_exiting || ngx_terminate) {
        return;
    }

    if (!redis->reconnect.timer_set) {
        ngx_add_timer(&redis->reconnect, redis->backoff);
    }

    redis->backoff = ngx_min(redis->backoff * 2,
                             NGX_MT5_CREDIT_REDIS_BACKOFF_MAX);
}


/*
 * Frees the context from outside any hiredis callback: pending replies
 * are called with NULL, the adapter's cleanup releases the nginx side,
 * and a reconnect is scheduled.
 */

static void
ngx_mt5_credit_redis_drop(ngx_mt5_credit_redis_t *redis)
{
    ngx_uint_t          connected;
    redisAsyncContext  *ac;

    if (redis->deadline.timer_set) {
        ngx_del_timer(&redis->deadline);
    }

    ac = redis->ac;

    if (ac == NULL) {
        return;
    }

    connected = redis->connected;

    redis->ac = NULL;
    redis->connected = 0;

    /* for a connected context this calls on_disconnect(), which schedules */
    redisAsyncFree(ac);

    if (!connected) {
        ngx_mt5_credit_redis_schedule(redis);
    }
}


static void
ngx_mt5_credit_redis_reconnect_handler(ngx_event_t *ev)
{
    ngx_mt5_credit_redis_t  *redis = ev->data;

    /* a backoff timer armed before a graceful exit began */
    if (redis->exiting || ngx_exiting || ngx_terminate) {
        return;
    }

    if (redis->ac == NULL) {
        ngx_mt5_credit_redis_connect(redis);
    }
}


static void
ngx_mt5_credit_redis_deadline_handler(ngx_event_t *ev)
{
    ngx_mt5_credit_redis_t  *redis = ev->data;

    if (redis->connected) {
        ngx_log_error(NGX_LOG_ERR, redis->log, 0,
                      "mt5_credit: Redis at %V did not answer within %M ms, "
                      "reconnecting", &redis->mcf->redis_addr,
                      redis->mcf->redis_timeout);

    } else {
        ngx_log_error(NGX_LOG_ERR, redis->log, 0,
                      "mt5_credit: connecting to Redis at %V timed out "
                      "after %M ms", &redis->mcf->redis_addr,
                      redis->mcf->redis_timeout);
    }

    ngx_mt5_credit_redis_drop(redis);
}


static void
ngx_mt5_credit_redis_read_handler(ngx_event_t *ev)
{
    ngx_connection_t        *c = ev->data;
    ngx_mt5_credit_redis_t  *redis = c->data;

    if (c->close) {
        /*
         * A graceful exit.  The requests still running in this worker
         * send their wake-ups when they commit: the connection stays
         * until the worker exits (exit_process), and no reconnect starts.
         */
        redis->exiting = 1;
        c->close = 0;
        c->idle = 0;

        if (redis->ac == NULL) {
            ngx_mt5_credit_redis_drop(redis);
        }

        return;
    }

    if (redis->ac != NULL) {
        /* may free the context; the callbacks clear redis->ac then */
        redisAsyncHandleRead(redis->ac);
    }
}


static void
ngx_mt5_credit_redis_write_handler(ngx_event_t *ev)
{
    ngx_connection_t        *c = ev->data;
    ngx_mt5_credit_redis_t  *redis = c->data;

    if (redis->ac != NULL) {
        redisAsyncHandleWrite(redis->ac);
    }
}


static void
ngx_mt5_credit_redis_on_connect(const redisAsyncContext *ac, int status)
{
    ngx_mt5_credit_redis_t  *redis = ac->data;

    if (status != REDIS_OK) {
        /* hiredis frees ac when this returns */
        ngx_log_error(NGX_LOG_ERR, redis->log, 0,
                      "mt5_credit: could not connect to Redis at %V: %s",
                      &redis->mcf->redis_addr, ac->errstr);

        redis->ac = NULL;
        redis->connected = 0;

        if (redis->deadline.timer_set) {
            ngx_del_timer(&redis->deadline);
        }

        ngx_mt5_credit_redis_schedule(redis);
        return;
    }

    ngx_log_error(NGX_LOG_INFO, redis->log, 0,
                  "mt5_credit: connected to Redis at %V",
                  &redis->mcf->redis_addr);

    redis->connected = 1;
    redis->backoff = NGX_MT5_CREDIT_REDIS_BACKOFF_MIN;

    if (redis->pending == 0 && redis->deadline.timer_set) {
        ngx_del_timer(&redis->deadline);
    }
}


static void
ngx_mt5_credit_redis_on_disconnect(const redisAsyncContext *ac, int status)
{
    ngx_mt5_credit_redis_t  *redis = ac->data;

    /* hiredis frees ac when this returns */

    if (redis->ac == ac) {
        redis->ac = NULL;
    }

    redis->connected = 0;

    if (status != REDIS_OK) {
        ngx_log_error(NGX_LOG_ERR, redis->log, 0,
                      "mt5_credit: Redis connection to %V lost: %s",
                      &redis->mcf->redis_addr, ac->errstr);
    }

    if (redis->deadline.timer_set) {
        ngx_del_timer(&redis->deadline);
    }

    ngx_mt5_credit_redis_schedule(redis);
}


static void
ngx_mt5_credit_redis_on_reply(redisAsyncContext *ac, void *r, void *privdata)
{
    redisReply              *reply = r;
    ngx_mt5_credit_redis_t  *redis = ac->data;

    redis->pending--;

    if (reply != NULL && reply->type == REDIS_REPLY_ERROR) {
        ngx_log_error(NGX_LOG_ERR, redis->log, 0,
                      "mt5_credit: Redis error: %s", reply->str);
    }

    /*
     * A wake-up is its LPUSH: counted once, sent or lost.  Its LTRIM only
     * bounds the list, and a dropped connection answers both with NULL.
     */
    if (privdata == &ngx_mt5_credit_redis_push) {
        if (reply == NULL || reply->type == REDIS_REPLY_ERROR) {
            ngx_mt5_credit_count(redis->mcf, NGX_MT5_CREDIT_STAT_REDIS_ERROR);
            ngx_mt5_credit_redis_missed(redis, redis->log,
                                        "Redis lost the wake-up", -1);

        } else {
            ngx_mt5_credit_count(redis->mcf,
                                 NGX_MT5_CREDIT_STAT_REDIS_WAKEUP);
        }
    }

    if (redis->pending == 0) {
        if (redis->deadline.timer_set) {
            ngx_del_timer(&redis->deadline);
        }

    } else if (redis->ac != NULL) {
        ngx_add_timer(&redis->deadline, redis->mcf->redis_timeout);
    }
}


/* the adapter: idempotent, as hiredis requires */

static void
ngx_mt5_credit_redis_add_read(void *privdata)
{
    ngx_mt5_credit_redis_t  *redis = privdata;

    if (redis->c != NULL && !redis->c->read->active) {
        (void) ngx_add_event(redis->c->read, NGX_READ_EVENT,
                             NGX_LEVEL_EVENT);
    }
}


static void
ngx_mt5_credit_redis_del_read(void *privdata)
{
    ngx_mt5_credit_redis_t  *redis = privdata;

    if (redis->c != NULL && redis->c->read->active) {
        (void) ngx_del_event(redis->c->read, NGX_READ_EVENT,
                             NGX_LEVEL_EVENT);
    }
}


static void
ngx_mt5_credit_redis_add_write(void *privdata)
{
    ngx_mt5_credit_redis_t  *redis = privdata;

    if (redis->c != NULL && !redis->c->write->active) {
        (void) ngx_add_event(redis->c->write, NGX_WRITE_EVENT,
                             NGX_LEVEL_EVENT);
    }
}


static void
ngx_mt5_credit_redis_del_write(void *privdata)
{
    ngx_mt5_credit_redis_t  *redis = privdata;

    if (redis->c != NULL && redis->c->write->active) {
        (void) ngx_del_event(redis->c->write, NGX_WRITE_EVENT,
                             NGX_LEVEL_EVENT);
    }
}


/* called by hiredis right before redisFree() closes the socket */

static void
ngx_mt5_credit_redis_cleanup(void *privdata)
{
    ngx_mt5_credit_redis_t  *redis = privdata;

    ngx_connection_t  *c;

    c = redis->c;

    if (c == NULL) {
        return;
    }

    redis->c = NULL;

    /* event by event: epoll fails on removing what is not registered */
    if (c->read->active) {
        (void) ngx_del_event(c->read, NGX_READ_EVENT, 0);
    }

    if (c->write->active) {
        (void) ngx_del_event(c->write, NGX_WRITE_EVENT, 0);
    }

    ngx_close_connection(c);
}


/*
 * A wake-up that could not be sent, or was lost with its connection
 * (credit_id -1: the reply callback does not know it): the credit waits
 * for the workers' poll.  Under an outage every request would say so; one line a second
 * says how many since the last.
 */
static void
ngx_mt5_credit_redis_missed(ngx_mt5_credit_redis_t *redis, ngx_log_t *log,
    const char *why, int64_t credit_id)
{
    redis->missed++;

    if (redis->missed_once
        && ngx_current_msec - redis->missed_logged
           < NGX_MT5_CREDIT_REDIS_LOG_EVERY)
    {
        return;
    }

    if (credit_id >= 0) {
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "mt5_credit: %s: %ui wake-up%s since the last line "
                      "wait for the workers' poll (the latest: credit %L)",
                      why, redis->missed, redis->missed == 1 ? "" : "s",
                      credit_id);

    } else {
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "mt5_credit: %s: %ui wake-up%s since the last line "
                      "wait for the workers' poll", why, redis->missed,
                      redis->missed == 1 ? "" : "s");
    }

    redis->missed = 0;
    redis->missed_logged = ngx_current_msec;
    redis->missed_once = 1;
}
