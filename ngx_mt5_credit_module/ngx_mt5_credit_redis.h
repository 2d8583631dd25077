
/*
 * Copyright (C) mt5-credit
 *
 * The Redis wake-up: after a credit intent is committed, tell the workers
 * there is work, through one asynchronous hiredis context per worker on
 * nginx's event loop.  Best effort by design: PostgreSQL holds the work,
 * and workers poll it anyway; a lost wake-up only delays a credit until
 * the next poll.  The HTTP answer never waits for Redis.
 */


#ifndef _NGX_MT5_CREDIT_REDIS_H_INCLUDED_
#define _NGX_MT5_CREDIT_REDIS_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_mt5_credit_module.h"


/* the list the workers BRPOP is trimmed to this many entries */
#define NGX_MT5_CREDIT_REDIS_LIST_MAX  10000


ngx_mt5_credit_redis_t *ngx_mt5_credit_redis_create(ngx_cycle_t *cycle,
    ngx_mt5_credit_main_conf_t *mcf);
void ngx_mt5_credit_redis_destroy(ngx_mt5_credit_redis_t *redis);

/* LPUSH the credit id to the wake-up list; never blocks, never fails */
void ngx_mt5_credit_redis_wake(ngx_mt5_credit_redis_t *redis,
    int64_t credit_id, ngx_log_t *log);


#endif /* _NGX_MT5_CREDIT_REDIS_H_INCLUDED_ */
