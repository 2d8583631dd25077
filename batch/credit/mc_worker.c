/*
 * Copyright (C) mt5-credit
 *
 * Claim, check, call, record.
 *
 * A claimed credit leaves this file in exactly one of these ways:
 *   released  nothing was sent to MT5 (a check could not be made, the
 *             server is unreachable, the lease is too short): pending;
 *   failed    a check or MT5 refused it explicitly: a case for a person;
 *   done      MT5 returned the deal ticket;
 *   unknown   the balance call was sent and no trusted answer came back:
 *             the resolver looks the deal up before anything else happens.
 * The balance call is sent at most once per claim, and only while the
 * lease has room for the whole call: a call can never still be running
 * when the sweeper declares the lease expired.  Every step that can take
 * time (database, session, MT5 checks) comes before the lease is checked
 * the last time; the call itself never re-authenticates, is given no
 * longer than the lease has left, and is refused by libcurl's pre-request
 * callback, before a byte is written, if the lease ran out anyway.
 */


#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mc_clock.h"
#include "mc_deployment.h"
#include "mc_log.h"
#include "mc_money.h"
#include "mc_trading.h"
#include "mc_witness.h"
#include "mc_worker.h"


/* kept free of the lease after the call's own timeout */
#define MC_WORKER_LEASE_MARGIN_MS  2000

/* ms: the least time between two askings of MT5 for the queue's head */
#define MC_WORKER_WITNESS_SPACING  1000

/*
 * Without a database, a round is tried again after this long at most,
 * never sooner for a wake-up: each queued one would start a round, and a
 * connect, at once (hundreds a second, each a backend forked on the
 * standby being promoted, while a failover runs)
 */
#define MC_WORKER_DB_RETRY_MS  1000


static int mc_worker_process(mc_worker_t *w, mc_work_item_t *it,
    int64_t deadline);
static void mc_worker_settle(mc_worker_t *w);
static void mc_worker_collect_claim(mc_worker_t *w);
static void mc_worker_metrics(mc_worker_t *w);
static void mc_worker_orphan(mc_worker_t *w, mc_work_item_t *it,
    uint64_t ticket);
static int mc_worker_checks(mc_worker_t *w, mc_worker_server_t *s,
    mc_work_item_t *it, int *group_digits);
static void mc_worker_release(mc_worker_t *w, mc_work_item_t *it,
    const char *why);
static void mc_worker_fail(mc_worker_t *w, mc_work_item_t *it,
    const char *case_kind, json_t *detail);
static void mc_worker_call(mc_worker_t *w, mc_worker_server_t *s,
    mc_work_item_t *it, int group_digits, int64_t deadline);
static mc_mt5_rc_e mc_worker_group(mc_worker_t *w, mc_worker_server_t *s,
    const char *name, mc_mt5_group_t *group, int *retcode);
static int64_t mc_worker_pow10(int n);
static int mc_worker_db_trusted(mc_worker_t *w);
static int mc_worker_db_checked(mc_worker_t *w);
static int mc_worker_witness_due(mc_worker_t *w, int64_t now);
static int mc_worker_timeline_check(mc_worker_t *w);




int
mc_worker_init(mc_worker_t *w, mc_config_t *cfg, volatile int *stop)
{
    int  i;

    memset(w, 0, sizeof(*w));

    w->cfg = cfg;
    w->stop = stop;
    w->alert.command = cfg->alert_command;
    w->alert.url = cfg->alert_url;
    w->alert.worker = cfg->worker_name;
    mc_rewind_init(&w->rewind, cfg->state_dir, cfg->worker_name);

    w->db = mc_db_open(cfg->database);
    w->wake = mc_wake_new(cfg->redis, cfg->redis_key);

    if (w->db == NULL || w->wake == NULL) {
        return -1;
    }

    /* before the sessions: they copy the config, its hooks too */
    if (mc_metrics_init(&w->metrics, cfg) != 0) {
        return -1;
    }

    for (i = 0; i < cfg->nservers; i++) {
        w->servers[i].config = &cfg->servers[i];
        w->servers[i].session = mc_mt5_session_new(&cfg->servers[i].mt5);

        if (w->servers[i].session == NULL) {
            return -1;
        }
    }

    w->nservers = cfg->nservers;

    return 0;
}


void
mc_worker_free(mc_worker_t *w)
{
    int  i;

    for (i = 0; i < w->nservers; i++) {
        if (w->servers[i].session != NULL) {
            mc_mt5_close(w->servers[i].session);
            mc_mt5_session_free(w->servers[i].session);
        }
    }

    /* the last claim's flush, if it still runs, ends before we do */
    mc_rewind_free(&w->rewind);

    mc_metrics_close(&w->metrics);
    mc_wake_free(w->wake);
    mc_db_close(w->db);
}


/*
 * Session slots live as advisory locks on our database connection; a new
 * connection has none, so they are taken again, and a server whose slots
 * are all held by others (workers, a reconciliation run) is not served by
 * this one until one is free: asked again every MC_WORKER_SLOT_RETRY.
 */

#define MC_WORKER_SLOT_RETRY  5000    /* ms */

static void
mc_worker_slots(mc_worker_t *w)
{
    int                  i, slot, fresh;
    int64_t              now;
    mc_worker_server_t  *s;

    if (mc_db_ready(w->db) != 0) {
        return;
    }

    now = mc_now_ms();
    fresh = mc_db_generation(w->db) != w->db_generation;

    if (!fresh && now < w->slot_retry_at) {
        return;
    }

    w->db_generation = mc_db_generation(w->db);
    w->slot_retry_at = now + MC_WORKER_SLOT_RETRY;

    for (i = 0; i < w->nservers; i++) {
        s = &w->servers[i];

        if (!fresh && s->slot > 0) {
            continue;               /* still held on this connection */
        }

        slot = mc_db_session_slot(w->db, s->config->name,
                                  s->config->sessions);

        if (slot > 0) {
            mc_log(MC_LOG_INFO, "server %s: session slot %d of %d",
                   s->config->name, slot, s->config->sessions);
            s->slot = slot;
            continue;
        }

        if (slot == 0 && (fresh || !s->slot_wanted)) {
            mc_log(MC_LOG_WARN, "server %s: all %d session slots are held "
                   "by others (workers, reconciliation); not serving it "
                   "until one is free", s->config->name,
                   s->config->sessions);
        }
        s->slot_wanted = slot == 0;

        /* a slot lost with the old connection may now be someone else's */
        mc_mt5_close(s->session);
        s->slot = 0;
    }
}


/* the round's end in the worker's own metrics (metrics_dir) */
static void
mc_worker_metrics(mc_worker_t *w)
{
    int                  i;
    mc_metrics_counts_t  c;

    for (i = 0; i < w->nservers; i++) {
        w->metrics.servers[i].slot = w->servers[i].slot;
    }

    c.done = w->done;
    c.failed = w->failed;
    c.unknown = w->unknown;
    c.released = w->released;
    c.found = w->resolved_found;
    c.absent = w->resolved_absent;
    c.unresolved = w->unresolved;

    mc_metrics_round(&w->metrics, &c);
}


int
mc_worker_servers(mc_worker_t *w, const char **names, int max)
{
    int      i, n;
    int64_t  now;

    mc_worker_slots(w);

    now = mc_now_ms();
    n = 0;

    for (i = 0; i < w->nservers && n < max; i++) {
        if (w->servers[i].slot > 0 && w->servers[i].rest_until <= now) {
            names[n++] = w->servers[i].config->name;
        }
    }

    return n;
}


mc_worker_server_t *
mc_worker_server(mc_worker_t *w, const char *name)
{
    int  i;

    for (i = 0; i < w->nservers; i++) {
        if (strcmp(w->servers[i].config->name, name) == 0) {
            return &w->servers[i];
        }
    }

    return NULL;
}


void
mc_worker_rest(mc_worker_t *w, mc_worker_server_t *s, const char *why)
{
    s->rest_until = mc_now_ms() + w->cfg->server_backoff * 1000LL;

    mc_log(MC_LOG_WARN, "server %s: %s; left alone for %ds",
           s->config->name, why, w->cfg->server_backoff);
}


/* an authenticated session, or -1 (logged; the server rests) */

int
mc_worker_session(mc_worker_t *w, mc_worker_server_t *s)
{
    int          retcode;
    mc_mt5_rc_e  rc;

    if (!s->config->tls_verify && !s->tls_warned) {
        mc_log(MC_LOG_WARN, "server %s: TLS verification is OFF "
               "(tls_verify = off in %s): anyone on the path can "
               "impersonate MT5", s->config->name, w->cfg->path);
        s->tls_warned = 1;
    }

    retcode = 0;
    rc = mc_mt5_ensure(s->session, &retcode);

    if (rc == MC_MT5_OK) {
        return 0;
    }

    if (rc == MC_MT5_REJECTED) {
        mc_alert(&w->alert, "mt5_auth_rejected", 0,
                 "server %s refused the manager login (retcode %d): %s",
                 s->config->name, retcode, mc_mt5_error(s->session));
    }

    mc_worker_rest(w, s, mc_mt5_error(s->session));

    return -1;
}


int
mc_worker_drain(mc_worker_t *w)
{
    int              rc, n;
    int64_t          t0;
    const char      *names[MC_CONFIG_MAX_SERVERS];
    mc_work_item_t   it;

    rc = 0;

    while (!*w->stop) {
        if (w->have_next) {
            /* claimed while the last balance call ran */
            it = w->next;
            t0 = w->next_t0;
            w->have_next = 0;

        } else {
            mc_worker_settle(w);

            n = mc_worker_servers(w, names, MC_CONFIG_MAX_SERVERS);
            if (n == 0) {
                break;
            }

            /* a database met for the first time is checked first */
            if (!mc_worker_db_trusted(w)) {
                break;
            }

            /*
             * The lease is measured from before the claim was asked for:
             * the local deadline then falls before the database's.
             */
            t0 = mc_now_ms();

            rc = mc_db_claim(w->db, w->cfg->worker_name, w->cfg->lease,
                             names, n, &it);
            if (rc <= 0) {
                break;
            }

            rc = 0;
        }

        if (it.id > w->claimed_upto) {
            w->claimed_upto = it.id;
        }

        if (mc_worker_process(w, &it, t0 + it.lease_ms_left) != 0) {
            rc = -1;
            break;
        }
    }

    mc_worker_settle(w);

    /* stopping with a claim made ahead: given back, nothing was sent */
    if (w->have_next) {
        w->have_next = 0;
        mc_worker_release(w, &w->next, "the worker is stopping");
    }

    return rc;
}


/* reads the claim sent ahead, if one is in flight */

static void
mc_worker_collect_claim(mc_worker_t *w)
{
    if (!w->claim_sent) {
        return;
    }

    w->claim_sent = 0;
    w->have_next = mc_db_recv_claim(w->db, &w->next) == 1;
    w->next_t0 = w->claim_t0;
}


/*
 * Reads whatever statement is in flight, so a synchronous one can be
 * sent: the record of the last deal is logged here.
 */

static void
mc_worker_settle(mc_worker_t *w)
{
    int              moved;
    mc_work_item_t  *it;

    mc_worker_collect_claim(w);

    if (!w->record_sent) {
        return;
    }

    w->record_sent = 0;
    it = &w->recorded;
    moved = mc_db_recv_moved(w->db);

    if (moved == 1) {
        w->done++;
        mc_log(MC_LOG_INFO, "credit=%" PRId64 " ref=%s: deal %" PRIu64
               ", done", it->id, it->reference, w->recorded_ticket);
        return;
    }

    if (moved < 0) {
        /* the claim expires; the resolver finds the deal by reference */
        mc_log(MC_LOG_ERROR, "credit=%" PRId64 " ref=%s: deal %" PRIu64
               " made but not recorded (database error); the resolver will "
               "find it", it->id, it->reference, w->recorded_ticket);
        return;
    }

    mc_worker_orphan(w, it, w->recorded_ticket);
}


/*
 * A deal made under a lease that was lost while the call ran: another
 * worker or the resolver may have made or found a deal of its own, so
 * this one may be a second.  A person is told at once.
 */

static void
mc_worker_orphan(mc_worker_t *w, mc_work_item_t *it, uint64_t ticket)
{
    int  opened;

    opened = mc_db_orphan_deal(w->db, it, ticket, w->cfg->worker_name,
                               json_pack("{s:s, s:s}", "step", "record",
                                         "reason", "the lease was lost "
                                         "while the call ran"));
    if (opened == 0) {
        mc_log(MC_LOG_INFO, "credit=%" PRId64 " ref=%s: deal %" PRIu64
               " was recorded by another path already", it->id,
               it->reference, ticket);
        return;
    }

    mc_alert(&w->alert, "orphan_deal", it->id, "credit %s (login %" PRIu64
             "): deal %" PRIu64 " made under a lost lease (attempt %d)%s",
             it->reference, it->login, ticket, it->attempts,
             opened == 1 ? "" : "; the case could not be recorded");
}


static int
mc_worker_process(mc_worker_t *w, mc_work_item_t *it, int64_t deadline)
{
    int                  group_digits;
    mc_worker_server_t  *s;

    mc_log(MC_LOG_INFO, "credit=%" PRId64 " ref=%s server=%s login=%" PRIu64
           ": claimed, attempt %d, %s %" PRId64 " %s (minor units)",
           it->id, it->reference, it->server, it->login, it->attempts,
           it->direction, it->amount_minor, it->currency);

    /*
     * Kept outside the database before its balance call can be sent: the
     * line is written now, and its flush runs while MT5 is asked for the
     * account (mc_worker_call() waits for it)
     */
    if (mc_rewind_claim_start(&w->rewind, it->id, it->attempts) != 0) {
        mc_worker_release(w, it, "the claim could not be kept outside the "
                          "database");
        return 0;
    }

    s = mc_worker_server(w, it->server);

    if (s == NULL) {
        /* cannot happen: only served servers are claimed */
        mc_worker_release(w, it, "server not configured");
        return 0;
    }

    if (!it->owner_ok) {
        mc_worker_fail(w, it, "ownership_changed",
                       json_pack("{s:s, s:s}", "reason", "the deposit's "
                                 "client no longer owns this login (or the "
                                 "account is closed or in another currency)",
                                 "client", it->client_id));
        return 0;
    }

    if (mc_worker_session(w, s) != 0) {
        mc_worker_release(w, it, "no MT5 session");
        return 0;
    }

    if (mc_worker_checks(w, s, it, &group_digits) != 0) {
        return 0;
    }

    mc_worker_call(w, s, it, group_digits, deadline);

    return 0;
}


/*
 * The checks before the call, against MT5 itself: the account exists and
 * is enabled, its group's currency is the credit's, and a debit has the
 * money.  0: go ahead; -1: the credit was failed or released here.
 */

static int
mc_worker_checks(mc_worker_t *w, mc_worker_server_t *s, mc_work_item_t *it,
    int *group_digits)
{
    int               retcode;
    int64_t           need, balance, free_margin, credit;
    mc_mt5_rc_e       rc;
    mc_mt5_user_t     user;
    mc_mt5_group_t    group;
    mc_mt5_account_t  account;

    retcode = 0;
    rc = mc_mt5_user_get(s->session, it->login, &user, &retcode);

    /* the last deal's record travelled while MT5 answered */
    mc_worker_settle(w);

    if (rc == MC_MT5_REJECTED && retcode == 13) {
        mc_worker_fail(w, it, "mt5_account_missing",
                       json_pack("{s:i}", "retcode", retcode));
        return -1;
    }

    if (rc != MC_MT5_OK) {
        mc_log(MC_LOG_WARN, "credit=%" PRId64 " ref=%s: user/get %" PRIu64
               ": %s", it->id, it->reference, it->login,
               mc_mt5_error(s->session));
        mc_worker_release(w, it, "cannot read the MT5 account");
        mc_worker_rest(w, s, "user/get failed");
        return -1;
    }

    if (!(user.rights & MC_MT5_USER_ENABLED)) {
        mc_worker_fail(w, it, "account_disabled",
                       json_pack("{s:I}", "rights", (json_int_t) user.rights));
        return -1;
    }

    rc = mc_worker_group(w, s, user.group, &group, &retcode);

    if (rc != MC_MT5_OK) {
        mc_log(MC_LOG_WARN, "credit=%" PRId64 " ref=%s: group/get %s: %s",
               it->id, it->reference, user.group, mc_mt5_error(s->session));
        mc_worker_release(w, it, "cannot read the account's group");
        mc_worker_rest(w, s, "group/get failed");
        return -1;
    }

    /* the currency is the group's, not the user's or a deal's */
    if (strcmp(group.currency, it->currency) != 0) {
        mc_worker_fail(w, it, "currency_mismatch",
                       json_pack("{s:s, s:s, s:s}", "mt5_group", group.group,
                                 "mt5_currency", group.currency,
                                 "credit_currency", it->currency));
        return -1;
    }

    if (group.digits < it->currency_digits || group.digits > 8) {
        mc_worker_fail(w, it, "currency_digits_mismatch",
                       json_pack("{s:s, s:i, s:i}", "mt5_group", group.group,
                                 "mt5_digits", group.digits,
                                 "our_digits", it->currency_digits));
        return -1;
    }

    *group_digits = group.digits;

    if (strcmp(it->direction, "debit") != 0) {
        return 0;
    }

    /* a debit: the balance and the free margin must both take it */
    need = it->amount_minor * mc_worker_pow10(group.digits
                                              - it->currency_digits);

    rc = mc_mt5_account_get(s->session, it->login, &account, &retcode);

    if (rc == MC_MT5_OK) {
        if (mc_decimal_to_minor(account.balance, group.digits, &balance) != 0
            || mc_decimal_to_minor(account.margin_free, group.digits,
                                   &free_margin) != 0)
        {
            mc_worker_release(w, it, "unreadable account balance");
            return -1;
        }

    } else if (rc == MC_MT5_REJECTED && retcode == 13) {
        /*
         * No trade state (an idle account after a server restart): with no
         * positions there is no margin, so free margin is balance + credit.
         */
        if (mc_decimal_to_minor(user.balance, group.digits, &balance) != 0
            || mc_decimal_to_minor(user.credit, group.digits, &credit) != 0)
        {
            mc_worker_release(w, it, "unreadable user balance");
            return -1;
        }

        free_margin = balance + credit;

    } else {
        mc_worker_release(w, it, "cannot read the account's trade state");
        mc_worker_rest(w, s, "user/account/get failed");
        return -1;
    }

    if (need > balance || need > free_margin) {
        mc_worker_fail(w, it, "insufficient_funds",
                       json_pack("{s:I, s:I, s:I, s:i}",
                                 "debit_minor", (json_int_t) need,
                                 "balance_minor", (json_int_t) balance,
                                 "free_margin_minor", (json_int_t) free_margin,
                                 "digits", group.digits));
        return -1;
    }

    return 0;
}


static void
mc_worker_call(mc_worker_t *w, mc_worker_server_t *s, mc_work_item_t *it,
    int group_digits, int64_t deadline)
{
    int          retcode, moved, n;
    char         amount[48];
    int64_t      signed_minor, send_by;
    uint64_t     ticket;
    const char  *names[MC_CONFIG_MAX_SERVERS];
    mc_mt5_rc_e  rc;

    /* the group's digits are at least the currency's (the checks) */
    if (group_digits - it->currency_digits > 18
        || __builtin_mul_overflow(it->amount_minor,
                                  mc_worker_pow10(group_digits
                                                  - it->currency_digits),
                                  &signed_minor))
    {
        mc_worker_fail(w, it, "amount_out_of_range",
                       json_pack("{s:I, s:i, s:i}", "amount_minor",
                                 (json_int_t) it->amount_minor,
                                 "currency_digits", it->currency_digits,
                                 "group_digits", group_digits));
        return;
    }

    if (strcmp(it->direction, "debit") == 0) {
        signed_minor = -signed_minor;
    }

    /* integer minor units become MT5's decimal text here, and only here */
    if (mc_minor_format(signed_minor, group_digits, amount, sizeof(amount))
        < 0)
    {
        mc_worker_release(w, it, "amount cannot be formatted");
        return;
    }

    /* the next claim travels while MT5 works on this call */
    mc_worker_settle(w);

    /* only on the connection checked: a reconnect is checked first */
    if (!*w->stop && !w->have_next && mc_worker_db_checked(w)) {
        n = mc_worker_servers(w, names, MC_CONFIG_MAX_SERVERS);
        w->claim_t0 = mc_now_ms();

        if (n > 0
            && mc_db_send_claim(w->db, w->cfg->worker_name, w->cfg->lease,
                                names, n) == 0)
        {
            w->claim_sent = 1;
        }
    }

    /*
     * The last database step is behind us: only now is the lease checked
     * for the call, and nothing between here and the bytes on the wire
     * waits for anything.
     */
    send_by = deadline - MC_WORKER_LEASE_MARGIN_MS;

    /* the claim on disk first, waited for no longer than the call could
       still leave in time */
    if (mc_rewind_claim_kept(&w->rewind, it->id,
                             send_by - w->cfg->call_timeout * 1000LL
                             - mc_now_ms())
        != 0)
    {
        mc_worker_collect_claim(w);
        mc_worker_release(w, it, "the claim could not be kept outside the "
                          "database");
        return;
    }

    if (mc_now_ms() + w->cfg->call_timeout * 1000LL > send_by) {
        mc_worker_collect_claim(w);
        mc_worker_release(w, it, "too little lease left for the call");
        return;
    }

    /*
     * A claim made on a connection since lost (claimed ahead, then the
     * last record's statement failed) may be no claim where the next
     * connection leads: no call on it.  The lease returns it, looked up.
     */
    if (it->generation != mc_db_generation(w->db)
        || mc_db_conn(w->db) == NULL)
    {
        mc_worker_collect_claim(w);
        mc_log(MC_LOG_WARN, "credit=%" PRId64 " ref=%s: not sent: the "
               "connection it was claimed on is gone; its lease returns it",
               it->id, it->reference);
        return;
    }

    retcode = 0;
    ticket = 0;

    mc_log(MC_LOG_INFO, "credit=%" PRId64 " ref=%s login=%" PRIu64
           ": trade/balance %s", it->id, it->reference, it->login, amount);

    rc = mc_mt5_balance(s->session, it->login, MC_MT5_DEAL_BALANCE, amount,
                        it->reference, strcmp(it->direction, "debit") == 0,
                        send_by, &ticket, &retcode);

    mc_worker_collect_claim(w);

    switch (rc) {

    case MC_MT5_NOT_SENT:
        mc_worker_release(w, it, mc_mt5_error(s->session));
        return;

    case MC_MT5_OK:
        /* the record travels while the next credit's checks run */
        if (mc_db_send_succeeded(w->db, it, ticket, w->cfg->worker_name,
                                 json_pack("{s:s, s:I, s:s}", "step", "call",
                                           "ticket", (json_int_t) ticket,
                                           "amount", amount))
            == 0)
        {
            w->record_sent = 1;
            w->recorded = *it;
            w->recorded_ticket = ticket;
            return;
        }

        mc_log(MC_LOG_ERROR, "credit=%" PRId64 " ref=%s: deal %" PRIu64
               " made but not recorded (database error); the resolver will "
               "find it", it->id, it->reference, ticket);
        return;

    case MC_MT5_REJECTED:
        if (mc_mt5_rejection_final(retcode)) {
            mc_worker_fail(w, it, "mt5_rejected",
                           json_pack("{s:i, s:s, s:s}", "retcode", retcode,
                                     "amount", amount,
                                     "error", mc_mt5_error(s->session)));
            return;
        }

        /* a refusal that does not prove nothing happened */
        /* fall through */

    default: /* MC_MT5_NO_ANSWER */
        moved = mc_db_unknown(w->db, it, w->cfg->worker_name,
                              json_pack("{s:s, s:i, s:s, s:s}", "step",
                                        "call", "retcode", retcode, "amount",
                                        amount, "error",
                                        mc_mt5_error(s->session)));
        w->unknown++;
        mc_log(MC_LOG_WARN, "credit=%" PRId64 " ref=%s: outcome unknown "
               "(%s)%s; the resolver will look the deal up", it->id,
               it->reference, mc_mt5_error(s->session),
               moved == 1 ? "" : ", and the state could not be recorded");
        return;
    }
}


static void
mc_worker_release(mc_worker_t *w, mc_work_item_t *it, const char *why)
{
    int  moved;

    mc_worker_settle(w);

    moved = mc_db_release(w->db, it, w->cfg->worker_name,
                          json_pack("{s:s, s:s}", "step", "release",
                                    "reason", why));
    w->released++;

    mc_log(MC_LOG_INFO, "credit=%" PRId64 " ref=%s: released, no call sent "
           "(%s)%s", it->id, it->reference, why,
           moved == 1 ? "" : "; the lease was already gone");
}


/* detail: a new reference, consumed here */

static void
mc_worker_fail(mc_worker_t *w, mc_work_item_t *it, const char *case_kind,
    json_t *detail)
{
    int    moved;
    char  *text;

    mc_worker_settle(w);

    if (detail == NULL) {
        detail = json_object();
    }

    json_object_set_new(detail, "step", json_string("check"));
    json_object_set_new(detail, "reference", json_string(it->reference));
    json_object_set_new(detail, "login", json_integer((json_int_t) it->login));

    text = json_dumps(detail, JSON_COMPACT | JSON_SORT_KEYS);
    moved = mc_db_failed(w->db, it, case_kind, w->cfg->worker_name, detail);

    if (moved == 1) {
        w->failed++;
        mc_alert(&w->alert, case_kind, it->id, "credit %s failed: %s",
                 it->reference, text ? text : "");
    } else {
        mc_log(MC_LOG_ERROR, "credit=%" PRId64 " ref=%s: could not record "
               "failure %s (%s)", it->id, it->reference, case_kind,
               moved == 0 ? "the lease was lost" : "database error");
    }

    free(text);
}


/*
 * group/get, remembered for group_cache seconds: a group's currency and
 * digits are configuration that changes rarely and deliberately, while
 * the account (user/get: exists, enabled, which group) is read for every
 * credit.  This saves a round trip per credit.
 */

static mc_mt5_rc_e
mc_worker_group(mc_worker_t *w, mc_worker_server_t *s, const char *name,
    mc_mt5_group_t *group, int *retcode)
{
    int                 i;
    int64_t             now;
    mc_mt5_rc_e         rc;
    mc_worker_group_t  *g;

    now = mc_now_ms();

    for (i = 0; i < s->ngroups; i++) {
        g = &s->groups[i];

        if (strcmp(g->name, name) == 0 && g->expires > now) {
            *group = g->group;
            return MC_MT5_OK;
        }
    }

    rc = mc_mt5_group_get(s->session, name, group, retcode);

    if (rc != MC_MT5_OK || w->cfg->group_cache == 0) {
        return rc;
    }

    /* a stale entry of the same group, or a free slot, or the oldest */
    g = NULL;

    for (i = 0; i < s->ngroups; i++) {
        if (strcmp(s->groups[i].name, name) == 0
            || s->groups[i].expires <= now)
        {
            g = &s->groups[i];
            break;
        }
    }

    if (g == NULL) {
        g = s->ngroups < MC_WORKER_GROUP_CACHE ? &s->groups[s->ngroups++]
                                                : &s->groups[0];
    }

    snprintf(g->name, sizeof(g->name), "%s", name);
    g->group = *group;
    g->expires = now + w->cfg->group_cache * 1000LL;

    return MC_MT5_OK;
}


static int64_t
mc_worker_pow10(int n)
{
    int64_t  p;

    for (p = 1; n > 0; n--) {
        p *= 10;
    }

    return p;
}


/*
 * Whether claims may be made on this connection: the database it reaches
 * holds what this host saw committed (mc_rewind.c), checked once per
 * connection and at every round, and MT5 holds no deal of the credits
 * next in line (mc_witness.c), asked on every new connection and every
 * witness_interval.  A database that went back in time has had its
 * pending credits marked for lookup by then.
 */
static int
mc_worker_db_trusted(mc_worker_t *w)
{
    int64_t          now;
    mc_rewind_rc_e   rc;
    mc_witness_rc_e  wrc;

    if (mc_db_ready(w->db) != 0) {
        return 0;
    }

    if (mc_worker_db_checked(w)) {
        return 1;
    }

    if (!mc_worker_deployment_ok(w)) {
        return 0;
    }

    rc = mc_rewind_check(&w->rewind, w->db, w->cfg->worker_name,
                         w->cfg->lease, &w->alert);

    if (rc != MC_REWIND_OK && rc != MC_REWIND_HANDLED) {
        return 0;
    }

    now = mc_now_ms();

    if (mc_worker_witness_due(w, now)) {
        wrc = mc_witness_check(w);
        if (wrc == MC_WITNESS_ERROR) {
            return 0;
        }

        w->witness_checked = mc_db_generation(w->db) + 1;
        w->witness_at = now;
    }

    /* after the claims' own checks: a rewind they proved has recorded
       its timeline, and is not handled twice */
    if (mc_worker_timeline_check(w) != 0) {
        return 0;
    }

    w->rewind_checked = mc_db_generation(w->db) + 1;
    return 1;
}


/*
 * A timeline the database has not recorded is a failover or a restore
 * (sql/073), which may have lost what no claim shows: acknowledged
 * webhooks.  The worker that records it has started a rewind's handling.
 */
static int
mc_worker_timeline_check(mc_worker_t *w)
{
    mc_db_timeline_t  t;

    if (mc_db_timeline_check(w->db, w->cfg->worker_name, w->cfg->lease, &t)
        != 0)
    {
        return -1;
    }

    if (t.rewind != 0) {
        mc_alert(&w->alert, "database_timeline_changed", 0, "the database "
                 "is on timeline %d (system identifier %s), which it had "
                 "not recorded (last recorded: %d): a failover or a "
                 "restore; %d open credit%s looked up before any call, "
                 "lost events asked for again (rewind %" PRId64 ")",
                 t.timeline, t.system_identifier, t.known_timeline,
                 t.credits, t.credits == 1 ? " is" : "s are", t.rewind);
    }

    return 0;
}


int
mc_worker_deployment_ok(mc_worker_t *w)
{
    char                err[512];
    mc_deployment_rc_e  rc;

    if (mc_db_ready(w->db) != 0) {
        return 0;
    }

    if (w->deployment_checked == mc_db_generation(w->db) + 1) {
        return 1;
    }

    /* another deployment's database (a failover to the wrong one, a
       copied config): its credits are not ours to make or look up */
    rc = mc_deployment_check(mc_db_conn(w->db), w->cfg->deployment_tag, err,
                             sizeof(err));
    if (rc != MC_DEPLOYMENT_OK) {
        mc_log(MC_LOG_ERROR, "doing nothing on this database: %s", err);
        if (rc == MC_DEPLOYMENT_MISMATCH) {
            mc_alert(&w->alert, "deployment_mismatch", 0, "worker %s: %s",
                     w->cfg->worker_name, err);
        }
        return 0;
    }

    w->deployment_checked = mc_db_generation(w->db) + 1;
    return 1;
}


/*
 * MT5 is to be asked about the queue's head again: on a new connection,
 * every witness_interval, and once this worker's claims passed the
 * middle of what it asked about (no more often than every
 * MC_WORKER_WITNESS_SPACING: a head of credits that are not claimed, a
 * paused provider's, stays where it is).
 */
static int
mc_worker_witness_due(mc_worker_t *w, int64_t now)
{
    return w->witness_checked != mc_db_generation(w->db) + 1
           || (w->cfg->witness_interval > 0
               && now >= w->witness_at + w->cfg->witness_interval * 1000LL)
           || (w->claimed_upto >= w->witness_upto
               && now >= w->witness_at + MC_WORKER_WITNESS_SPACING);
}


/* the connection is up and the one this round's check was made on */
static int
mc_worker_db_checked(mc_worker_t *w)
{
    PGconn  *conn;

    conn = mc_db_conn(w->db);

    return conn != NULL && PQstatus(conn) == CONNECTION_OK
           && w->rewind_checked == mc_db_generation(w->db) + 1
           && !mc_worker_witness_due(w, mc_now_ms());
}


/* the round ended with a connection (a wake-up can be acted on) */
static int
mc_worker_db_up(mc_worker_t *w)
{
    PGconn  *conn;

    conn = mc_db_conn(w->db);

    return conn != NULL && PQstatus(conn) == CONNECTION_OK;
}


static void
mc_worker_sleep(int ms, volatile int *stop)
{
    struct timespec  ts;

    if (*stop || ms <= 0) {
        return;
    }

    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (long) (ms % 1000) * 1000000;

    /* a signal ends the sleep early; the loop checks *stop */
    nanosleep(&ts, NULL);
}


int
mc_worker_run(mc_worker_t *w, int once)
{
    int      n, wait_ms;
    int64_t  now, next_sweep, next_resolve;

    next_sweep = 0;
    next_resolve = 0;

    mc_log(MC_LOG_INFO, "worker %s started (%d MT5 servers, %s)",
           w->cfg->worker_name, w->nservers,
           w->cfg->redis[0] ? "woken by Redis" : "polling only");

    while (!*w->stop) {
        now = mc_now_ms();

        if (now >= next_sweep) {
            n = mc_db_sweep(w->db, w->cfg->worker_name);

            if (n > 0) {
                mc_log(MC_LOG_WARN, "%d expired claims are now unknown", n);
            }

            next_sweep = now + w->cfg->sweep_interval * 1000LL;
        }

        /* a tag set meanwhile is seen: asked once a round, for the
           resolver and the claims alike */
        w->deployment_checked = 0;

        if (now >= next_resolve) {
            (void) mc_resolver_round(w);
            /* withdrawals waiting for their login's trading (080) */
            (void) mc_trading_round(w);
            next_resolve = now + w->cfg->resolve_interval * 1000LL;
        }

        /* every round compares again: a restore need not reconnect us */
        w->rewind_checked = 0;
        (void) mc_worker_drain(w);

        mc_worker_metrics(w);

        if (once) {
            break;
        }

        for (n = 0; n < w->nservers; n++) {
            if (w->servers[n].slot > 0) {
                (void) mc_mt5_keepalive(w->servers[n].session);
            }
        }

        now = mc_now_ms();
        wait_ms = w->cfg->poll_interval * 1000;

        if (next_sweep - now < wait_ms) {
            wait_ms = (int) (next_sweep - now);
        }

        if (next_resolve - now < wait_ms) {
            wait_ms = (int) (next_resolve - now);
        }

        if (wait_ms > 0 && !mc_worker_db_up(w)) {
            mc_worker_sleep(wait_ms < MC_WORKER_DB_RETRY_MS
                            ? wait_ms : MC_WORKER_DB_RETRY_MS, w->stop);

        } else if (wait_ms > 0) {
            (void) mc_wake_wait(w->wake, wait_ms, w->stop);
        }
    }

    mc_log(MC_LOG_INFO, "worker %s stopping: %" PRIu64 " done, %" PRIu64
           " failed, %" PRIu64 " unknown, %" PRIu64 " released; resolver: %"
           PRIu64 " found, %" PRIu64 " absent, %" PRIu64 " unresolved",
           w->cfg->worker_name, w->done, w->failed, w->unknown, w->released,
           w->resolved_found, w->resolved_absent, w->unresolved);

    return 0;
}
