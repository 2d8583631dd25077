/*
 * Copyright (C) mt5-credit
 *
 * MT5's side of reconciliation: every balance deal of the configured
 * groups of every configured MT5 server in a window, fetched in full
 * (user/logins per group, then each login's deals through get_total and
 * get_page, the count checked) and streamed into the run's COPY.
 *
 * Complete or nothing: a server that does not answer, a page that comes
 * back short, a deal of another login, an amount not exact in the group's
 * currency digits all fail the fetch with the reason.  No answer is never
 * read as "no deals".
 */

#ifndef MC_RECON_FETCH_H
#define MC_RECON_FETCH_H


#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "mc_config.h"
#include "mc_pgcopy.h"


typedef struct {
    uint64_t  servers;
    uint64_t  groups;
    uint64_t  logins;
    uint64_t  deals;            /* every deal listed */
    uint64_t  balance_deals;    /* kept: balance deals in the window */
} mc_recon_fetch_stats_t;


/*
 * A server's time zone (its time_zone), as the database reads it for this
 * run: the window in the server's wall-clock seconds, and the zone's
 * offset now, which the server's own clock must show.  A server without
 * one has instead the offset its clock showed at both ends of the day,
 * from the runs' measurements (sql/041), used in place of the one now.
 */
typedef struct {
    int       set;
    int64_t   from;              /* the window's start, server time */
    int64_t   to;                /* its end */
    int64_t   offset_now;        /* the zone's UTC offset now, seconds */

    /* no zone: the one offset that held at both ends of the day (041) */
    int       fixed;
    int64_t   fixed_offset;
} mc_recon_zone_t;


/*
 * [from_utc, to_utc) in UTC seconds; each server's own clock offset is
 * read from it.  zones[i] (NULL: none) is the i-th server's zone: the
 * window is its, every deal's UTC time is the database's conversion of
 * its server time in that zone (a deal made under last week's offset
 * falls on its day), and a server whose clock disagrees with the zone
 * fails the fetch.  Rows: run_id, server, ticket, login, amount (minor,
 * signed), currency, comment, UTC seconds at the offset measured now,
 * server time, the zone or NULL, by_ticket (false).  Up to recon_sessions sessions
 * per server (never more than its `sessions`) fetch in parallel.
 * digest (33 bytes): 32 hex digits over every row, independent of their
 * order.  0, or -1 with the reason.
 */
int mc_recon_fetch(mc_config_t *cfg, mc_pgcopy_t *copy, int64_t run_id,
    int64_t from_utc, int64_t to_utc, const mc_recon_zone_t *zones,
    volatile sig_atomic_t *stop,
    mc_recon_fetch_stats_t *st, char *digest, char *err, size_t errlen);


/* a credit's deal to ask for by ticket, and what the credit expects */
typedef struct {
    int       server;            /* index in cfg->servers */
    uint64_t  ticket;
    uint64_t  login;
    char      currency[16];      /* the credit's: the worker checked the */
    int       digits;            /* login's group against it at the call */
} mc_recon_ticket_t;


/*
 * The deals of credits made outside the window's fetch, by ticket
 * (deal/get_batch), MC_MT5_BATCH_TICKETS a call; t[] in server order.
 * Rows as mc_recon_fetch()'s, marked by_ticket.  A deal on the login
 * the credit names is read in the credit's currency; one on another
 * login in its own group's (user/get, group/get).  A ticket MT5 leaves
 * out of a complete answer has no deal (no row); a ticket that is not a
 * balance deal has none either.  *found: the rows written.  digest as
 * mc_recon_fetch()'s.  0, or -1 with the reason.
 */
int mc_recon_fetch_tickets(mc_config_t *cfg, mc_pgcopy_t *copy,
    int64_t run_id, const mc_recon_ticket_t *t, size_t n,
    const mc_recon_zone_t *zones, volatile sig_atomic_t *stop,
    uint64_t *found, char *digest, char *err, size_t errlen);


#endif /* MC_RECON_FETCH_H */
