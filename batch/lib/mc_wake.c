/*
 * Copyright (C) mt5-credit
 */


#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "mc_log.h"
#include "mc_wake.h"


struct mc_wake_s {
    char          *host;          /* NULL: poll only */
    int            port;          /* 0: unix socket */
    char          *key;
    redisContext  *redis;
    time_t         retry_at;      /* no reconnect before */
    int            down_logged;
};


static int mc_wake_connect(mc_wake_t *w);
static void mc_wake_sleep(int ms, volatile int *stop);


mc_wake_t *
mc_wake_new(const char *addr, const char *key)
{
    char       *colon;
    mc_wake_t  *w;

    w = calloc(1, sizeof(mc_wake_t));
    if (w == NULL) {
        return NULL;
    }

    w->key = strdup(key);

    if (addr != NULL && addr[0] != '\0') {
        if (strncmp(addr, "unix:", 5) == 0) {
            w->host = strdup(addr + 5);

        } else {
            w->host = strdup(addr);
            colon = strrchr(w->host, ':');

            if (colon == NULL || (w->port = atoi(colon + 1)) <= 0) {
                mc_log(MC_LOG_ERROR, "redis \"%s\" needs ip:port or "
                       "unix:/path; polling only", addr);
                free(w->host);
                w->host = NULL;

            } else {
                *colon = '\0';
            }
        }
    }

    return w;
}


void
mc_wake_free(mc_wake_t *w)
{
    if (w == NULL) {
        return;
    }

    if (w->redis != NULL) {
        redisFree(w->redis);
    }

    free(w->host);
    free(w->key);
    free(w);
}


static int
mc_wake_connect(mc_wake_t *w)
{
    struct timeval  tv = { 1, 0 };

    if (w->redis != NULL) {
        return 0;
    }

    if (time(NULL) < w->retry_at) {
        return -1;
    }

    w->redis = w->port ? redisConnectWithTimeout(w->host, w->port, tv)
                       : redisConnectUnixWithTimeout(w->host, tv);

    if (w->redis == NULL || w->redis->err) {
        if (!w->down_logged) {
            mc_log(MC_LOG_WARN, "redis %s:%d unavailable (%s); polling the "
                   "database until it is back", w->host, w->port,
                   w->redis ? w->redis->errstr : "out of memory");
            w->down_logged = 1;
        }

        if (w->redis != NULL) {
            redisFree(w->redis);
            w->redis = NULL;
        }

        w->retry_at = time(NULL) + 1;
        return -1;
    }

    if (w->down_logged) {
        mc_log(MC_LOG_INFO, "redis %s:%d is back", w->host, w->port);
        w->down_logged = 0;
    }

    return 0;
}


int
mc_wake_wait(mc_wake_t *w, int ms, volatile int *stop)
{
    int              slice;
    redisReply      *reply;
    struct timeval   tv;

    while (ms > 0 && !*stop) {
        if (w->host == NULL || mc_wake_connect(w) != 0) {
            mc_wake_sleep(ms < 1000 ? ms : 1000, stop);
            ms -= 1000;
            continue;
        }

        /* block at most a second at a time, so a stop is seen promptly */
        slice = ms < 1000 ? ms : 1000;

        tv.tv_sec = 2;
        tv.tv_usec = 0;
        redisSetTimeout(w->redis, tv);

        /* Redis 6+ takes a decimal timeout in seconds */
        reply = redisCommand(w->redis, "BRPOP %s %d.%03d", w->key,
                             slice / 1000, slice % 1000);

        if (reply == NULL) {
            mc_log(MC_LOG_WARN, "redis: %s; polling the database",
                   w->redis->errstr);
            redisFree(w->redis);
            w->redis = NULL;
            w->retry_at = time(NULL) + 1;
            continue;
        }

        if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 2) {
            freeReplyObject(reply);
            return 1;
        }

        if (reply->type == REDIS_REPLY_ERROR) {
            mc_log(MC_LOG_WARN, "redis: %s", reply->str);
            freeReplyObject(reply);
            mc_wake_sleep(slice, stop);
        } else {
            freeReplyObject(reply);
        }

        ms -= slice;
    }

    return 0;
}


static void
mc_wake_sleep(int ms, volatile int *stop)
{
    struct timespec  ts;

    if (*stop || ms <= 0) {
        return;
    }

    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (long) (ms % 1000) * 1000000;

    /* a signal ends the sleep early; the caller checks *stop */
    nanosleep(&ts, NULL);
}
