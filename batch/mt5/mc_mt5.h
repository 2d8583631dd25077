/*
 * Copyright (C) mt5-credit
 *
 * A client for the MetaTrader 5 Web API (the access server's manager
 * REST/JSON interface over HTTPS), for the credit worker, the resolver and
 * reconciliation.  ../shared/reference/mt5-webapi.md has the protocol.
 *
 * One session is one authenticated TLS connection, kept alive, used for
 * one request at a time.  A session never opens a second socket behind
 * the caller's back: a new connection is made only by an explicit
 * (re-)authentication, so libcurl can never silently re-send a request on
 * a fresh connection.  Nothing here retries a request.
 *
 * Every call returns one of three things:
 *   MC_MT5_OK        a complete, trusted answer with retcode 0;
 *   MC_MT5_REJECTED  a complete, trusted answer with a non-zero retcode
 *                    (in *retcode): the server refused, nothing executed
 *                    for the named rejections (mc_mt5_rejection_final());
 *   MC_MT5_NO_ANSWER anything else: timeout, disconnect, HTTP 403 or other
 *                    status, unparseable body, missing fields, an answer
 *                    naming another login than the one asked about, an
 *                    incomplete deal list.  The outcome is unknown, and the
 *                    session is closed (the next call re-authenticates).
 * and mc_mt5_balance() alone may also return
 *   MC_MT5_NOT_SENT  provably not sent: no live session to send it on, or
 *                    its deadline had passed when the request was about to
 *                    be written.  Nothing can have executed.
 * mc_mt5_error() describes the last failure for the log (never a secret).
 */


#ifndef MC_MT5_H
#define MC_MT5_H


#include <stddef.h>
#include <stdint.h>

#include "mc_money.h"


typedef enum {
    MC_MT5_OK = 0,
    MC_MT5_REJECTED,
    MC_MT5_NO_ANSWER,
    MC_MT5_NOT_SENT
} mc_mt5_rc_e;


/* one MT5 server, from the configuration */
typedef struct {
    const char   *name;            /* our name for it: "live1" */
    const char   *url;             /* "https://mt5.example.com:443" */
    uint64_t      manager;         /* manager login */
    const char   *password;        /* the manager's API password (from a
                                      file; never logged) */
    const char   *ca_file;         /* CA bundle; NULL: the system's */
    int           tls_verify;      /* 1 unless explicitly switched off */
    long          connect_timeout_ms;
    long          timeout_ms;      /* per request, the balance call too */
    int           ping_interval;   /* seconds of idleness before a ping */
    const char   *agent;           /* auth/start agent, no spaces */
    /* called before every request, may sleep (reconciliation's rate;
       NULL for sessions that move money: nothing may delay those bytes
       past their deadline check) */
    void        (*pace)(void *data);
    void         *pace_data;
    /* called after every request with its path, time and outcome (the
       worker's metrics); NULL: none */
    void        (*observe)(void *data, const char *path, int64_t ms,
                           int rc, int retcode);
    void         *observe_data;
} mc_mt5_config_t;


typedef struct mc_mt5_session_s  mc_mt5_session_t;


typedef struct {
    uint64_t      login;
    char          group[128];      /* "real\\usd" as the server has it */
    uint64_t      rights;          /* EnUsersRights bits; 0x1 = enabled */
    mc_decimal_t  balance;
    mc_decimal_t  credit;
} mc_mt5_user_t;


typedef struct {
    uint64_t      login;
    mc_decimal_t  balance;
    mc_decimal_t  credit;
    mc_decimal_t  margin_free;
} mc_mt5_account_t;


typedef struct {
    char          group[128];
    char          currency[16];    /* "USD" */
    int           digits;          /* CurrencyDigits */
} mc_mt5_group_t;


typedef struct {
    uint64_t      deal;            /* ticket */
    uint64_t      login;
    int           action;          /* EnDealAction: 2 = balance */
    mc_decimal_t  profit;          /* signed amount, exact */
    uint64_t      volume;          /* Volume: 1/10000 lot; trades only */
    char          comment[128];
    int64_t       time;            /* server time, seconds */
} mc_mt5_deal_t;


#define MC_MT5_USER_ENABLED   0x1
#define MC_MT5_DEAL_BALANCE   2
#define MC_MT5_PAGE_MAX       100
#define MC_MT5_COMMENT_MAX    31
#define MC_MT5_BATCH_TICKETS  100


mc_mt5_session_t *mc_mt5_session_new(const mc_mt5_config_t *cfg);
void mc_mt5_session_free(mc_mt5_session_t *s);

/* the last failure, for the log; "" if none */
const char *mc_mt5_error(mc_mt5_session_t *s);

/* the config this session was made from */
const mc_mt5_config_t *mc_mt5_config(mc_mt5_session_t *s);

/*
 * Authenticates on a fresh connection if the session is not (or no longer)
 * authenticated: auth/start, auth/answer, and the server's
 * cli_rand_answer checked (a server that fails it is not trusted).
 * Returns MC_MT5_OK, MC_MT5_REJECTED (e.g. 1001) or MC_MT5_NO_ANSWER.
 */
mc_mt5_rc_e mc_mt5_ensure(mc_mt5_session_t *s, int *retcode);

/* closes the connection (after /api/quit when it is alive) */
void mc_mt5_close(mc_mt5_session_t *s);

/* /api/test/access if the session was idle for ping_interval or more */
mc_mt5_rc_e mc_mt5_keepalive(mc_mt5_session_t *s);

/*
 * The server's clock: *server_now is /api/time/server's unix seconds in
 * server time; *offset is server time minus UTC, in seconds, rounded to
 * the minute (time zones and DST move in whole minutes).
 */
mc_mt5_rc_e mc_mt5_time(mc_mt5_session_t *s, int64_t *server_now,
    int64_t *offset, int *retcode);

/* user/get; an answer about another login is MC_MT5_NO_ANSWER */
mc_mt5_rc_e mc_mt5_user_get(mc_mt5_session_t *s, uint64_t login,
    mc_mt5_user_t *u, int *retcode);

/* user/account/get (13 for an account without trade state) */
mc_mt5_rc_e mc_mt5_account_get(mc_mt5_session_t *s, uint64_t login,
    mc_mt5_account_t *a, int *retcode);

/* group/get */
mc_mt5_rc_e mc_mt5_group_get(mc_mt5_session_t *s, const char *group,
    mc_mt5_group_t *g, int *retcode);

/*
 * trade/balance: type 2 (balance), `amount` the signed decimal text with
 * the group's digits ("-12.50"), `comment` at most 31 characters of
 * [A-Za-z0-9_.:-] (anything else: MC_MT5_REJECTED with *retcode 3 before
 * sending), check_margin 1 or 0.  On MC_MT5_OK, *ticket is the deal.
 * Sent at most once: a failure after the request may have left the
 * connection is MC_MT5_NO_ANSWER and is never re-sent.
 *
 * It never connects or authenticates: the session must be live (made by
 * mc_mt5_ensure() before the caller's last checks), else MC_MT5_NOT_SENT.
 * send_by_ms (CLOCK_MONOTONIC, 0: none) is when the caller's right to
 * send ends: the request is written only before it (checked by libcurl's
 * pre-request callback, the last moment before the bytes leave), and the
 * whole transfer is given no longer than is left until it.
 */
mc_mt5_rc_e mc_mt5_balance(mc_mt5_session_t *s, uint64_t login, int type,
    const char *amount, const char *comment, int check_margin,
    int64_t send_by_ms, uint64_t *ticket, int *retcode);

/*
 * Every deal of one login in [from, to] (server time): deal/get_total,
 * then deal/get_page 100 at a time.  Complete or nothing: a page shorter
 * than it must be, a count that does not add up, or a deal of another
 * login is MC_MT5_NO_ANSWER.  *deals is malloc'ed; free() it.
 */
mc_mt5_rc_e mc_mt5_deals(mc_mt5_session_t *s, uint64_t login, int64_t from,
    int64_t to, mc_mt5_deal_t **deals, size_t *n, int *retcode);

/*
 * deal/get: the one deal with this ticket, on whatever login it is (the
 * caller checks).  MC_MT5_REJECTED with *retcode 13: no such deal.
 */
mc_mt5_rc_e mc_mt5_deal_get(mc_mt5_session_t *s, uint64_t ticket,
    mc_mt5_deal_t *d, int *retcode);

/*
 * deal/get_batch?ticket=t1,t2,...: the deals of these tickets, on
 * whatever logins they are (the caller checks), at most
 * MC_MT5_BATCH_TICKETS a call.  A ticket the answer lacks has no deal; a
 * deal in the answer that was not asked for, or twice, is
 * MC_MT5_NO_ANSWER.  *deals is malloc'ed; free() it.
 */
mc_mt5_rc_e mc_mt5_deals_by_ticket(mc_mt5_session_t *s,
    const uint64_t *tickets, size_t n, mc_mt5_deal_t **deals, size_t *found,
    int *retcode);

/*
 * user/logins?group=<group>: the logins of one group, ascending (sorted
 * here, whatever order the server used), each checked to be a login.
 * *logins is malloc'ed; free() it.
 */
mc_mt5_rc_e mc_mt5_logins(mc_mt5_session_t *s, const char *group,
    uint64_t **logins, size_t *n, int *retcode);

/*
 * Whether a trade/balance retcode means the server refused and did not
 * execute (3, 4, 8, 13, 4005, 10019, ...): the credit can be failed.
 * Any other non-zero retcode leaves the outcome unknown.
 */
int mc_mt5_rejection_final(int retcode);


#endif /* MC_MT5_H */
