/*
 * Copyright (C) mt5-credit
 *
 * Waiting for work.  The edge pushes a credit id to a Redis list after
 * each commit that created one; the worker blocks on that list for at
 * most the poll interval, so work starts within milliseconds with Redis
 * and within one poll interval without it.  The list is only a signal:
 * PostgreSQL holds the work, and a lost wake-up loses nothing.
 */


#ifndef MC_WAKE_H
#define MC_WAKE_H


typedef struct mc_wake_s  mc_wake_t;


/* addr: NULL/"" (poll only), "ip:port" or "unix:/path" */
mc_wake_t *mc_wake_new(const char *addr, const char *key);
void mc_wake_free(mc_wake_t *w);

/*
 * Returns after a wake-up, after `ms` milliseconds, or when *stop becomes
 * set (checked at least every second).  1: woken; 0: timed out.
 */
int mc_wake_wait(mc_wake_t *w, int ms, volatile int *stop);


#endif /* MC_WAKE_H */
