/*
 * Copyright (C) mt5-credit
 *
 * The resolver: what happened to a credit whose balance call got no
 * trusted answer?  Before anything is retried, ask MT5 for the login's
 * deals since before the credit existed (in server time), all of them,
 * and look for the balance deal carrying the credit's reference:
 *
 *   exactly one, with the exact amount   -> done, with its ticket
 *   a complete answer without it         -> pending (the call never ran)
 *   found with another amount, or twice  -> stays unknown, a case
 *   no complete, trusted answer          -> stays unknown, a case
 *
 * A credit two people settled as done, naming its deal (033), is not
 * looked up by reference: that one deal is fetched and must be the
 * credit's (login, balance, reference, exact amount) to be recorded.
 *
 * "No data" is never "no deal": only mc_mt5_deals() returning MC_MT5_OK,
 * which it does only for a complete, consistent list, can send a credit
 * back to pending.
 */


#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mc_log.h"
#include "mc_money.h"
#include "mc_worker.h"


#define MC_RESOLVER_BATCH     20

/* the end of the window runs past the database's "now" by this */
#define MC_RESOLVER_SLACK     120

/*
 * MT5 deal times are the server's local time, and its offset from UTC
 * can change while a credit waits (summer time, a moved server): the
 * offset measured now is not the one the deal was made under.  So the
 * window takes in every offset a clock on Earth can have, UTC-12 to
 * UTC+14, and the one measured now if it lies outside: the reference is
 * unique, and a day more of one login's deals costs little.
 */
#define MC_RESOLVER_OFFSET_MIN  (-12 * 3600)
#define MC_RESOLVER_OFFSET_MAX  (14 * 3600)


static void mc_resolve_one(mc_worker_t *w, mc_work_item_t *it);
static void mc_resolve_verify(mc_worker_t *w, mc_worker_server_t *s,
    mc_work_item_t *it);
static const char *mc_resolve_not_ours(const mc_work_item_t *it,
    const mc_mt5_deal_t *d);
static void mc_resolve_unresolved(mc_worker_t *w, mc_work_item_t *it,
    const char *kind, json_t *detail);
static json_t *mc_resolve_deal_json(const mc_mt5_deal_t *d);


int
mc_resolver_round(mc_worker_t *w)
{
    int              n, lookup;
    size_t           i, count;
    const char      *names[MC_CONFIG_MAX_SERVERS];
    mc_work_item_t  *items;

    n = mc_worker_servers(w, names, MC_CONFIG_MAX_SERVERS);
    if (n == 0) {
        return 0;
    }

    if (!mc_worker_deployment_ok(w)) {
        return -1;
    }

    /* the pick is a short lease of its own: enough for one full lookup */
    lookup = 4 * w->cfg->call_timeout + 10;

    if (mc_db_resolve_claim(w->db, names, n, w->cfg->settle_margin, lookup,
                            MC_RESOLVER_BATCH, &items, &count)
        != 0)
    {
        return -1;
    }

    for (i = 0; i < count && !*w->stop; i++) {
        mc_resolve_one(w, &items[i]);
    }

    free(items);

    return (int) count;
}


void
mc_resolver_window(int64_t since, int64_t db_now, int64_t offset,
    int lookback, int64_t *from, int64_t *to)
{
    /*
     * The credit's whole life, from a lookback before it was made (or
     * before the lost timeline of a rewind, which may have made its deal)
     * to the pick, both by the database's clock (this host's may be off),
     * in server time under any offset it may have had meanwhile.
     */
    *from = since - lookback
            + (offset < MC_RESOLVER_OFFSET_MIN ? offset
                                               : MC_RESOLVER_OFFSET_MIN);
    *to = db_now + MC_RESOLVER_SLACK
          + (offset > MC_RESOLVER_OFFSET_MAX ? offset
                                             : MC_RESOLVER_OFFSET_MAX);
}


static void
mc_resolve_one(mc_worker_t *w, mc_work_item_t *it)
{
    int                  retcode, matches, moved;
    size_t               i, n;
    json_t              *found;
    int64_t              server_now, offset, from, to, minor, expected;
    uint64_t             ticket;
    mc_mt5_rc_e          rc;
    mc_mt5_deal_t       *deals;
    mc_worker_server_t  *s;

    s = mc_worker_server(w, it->server);

    mc_log(MC_LOG_INFO, "credit=%" PRId64 " ref=%s server=%s login=%" PRIu64
           ": resolving, attempt %d", it->id, it->reference, it->server,
           it->login, it->attempts);

    if (s == NULL || mc_worker_session(w, s) != 0) {
        mc_resolve_unresolved(w, it, "mt5_no_answer",
                              json_pack("{s:s}", "error", s == NULL
                                        ? "server not configured"
                                        : mc_mt5_error(s->session)));
        return;
    }

    if (it->settle_ticket != 0) {
        mc_resolve_verify(w, s, it);
        return;
    }

    retcode = 0;
    rc = mc_mt5_time(s->session, &server_now, &offset, &retcode);

    if (rc != MC_MT5_OK) {
        mc_resolve_unresolved(w, it, "mt5_no_answer",
                              json_pack("{s:s, s:s}", "step", "time/server",
                                        "error", mc_mt5_error(s->session)));
        return;
    }

    mc_resolver_window(it->look_from != 0 && it->look_from < it->created_at
                       ? it->look_from : it->created_at,
                       it->db_now, offset, w->cfg->lookback, &from, &to);

    rc = mc_mt5_deals(s->session, it->login, from, to, &deals, &n, &retcode);

    if (rc != MC_MT5_OK) {
        mc_resolve_unresolved(w, it, "mt5_no_answer",
                              json_pack("{s:s, s:i, s:s, s:I, s:I}", "step",
                                        "deal lookup", "retcode", retcode,
                                        "error", mc_mt5_error(s->session),
                                        "from", (json_int_t) from,
                                        "to", (json_int_t) to));
        return;
    }

    expected = strcmp(it->direction, "debit") == 0 ? -it->amount_minor
                                                   : it->amount_minor;
    matches = 0;
    ticket = 0;
    found = json_array();

    for (i = 0; i < n; i++) {
        if (deals[i].action != MC_MT5_DEAL_BALANCE
            || strcmp(deals[i].comment, it->reference) != 0)
        {
            continue;
        }

        matches++;
        json_array_append_new(found, mc_resolve_deal_json(&deals[i]));

        if (mc_decimal_to_minor(deals[i].profit, it->currency_digits,
                                &minor) == 0
            && minor == expected)
        {
            ticket = deals[i].deal;
        }
    }

    free(deals);

    if (matches == 0) {
        json_decref(found);
        moved = mc_db_resolve_absent(w->db, it, w->cfg->worker_name,
                                     json_pack("{s:s, s:I, s:I, s:I, s:I}",
                                               "step", "resolve",
                                               "deals_checked", (json_int_t) n,
                                               "from", (json_int_t) from,
                                               "to", (json_int_t) to,
                                               "server_offset",
                                               (json_int_t) offset));
        if (moved == 1) {
            w->resolved_absent++;
        }

        mc_log(MC_LOG_INFO, "credit=%" PRId64 " ref=%s: no deal among %zu "
               "(complete answer): back to pending", it->id, it->reference,
               n);
        return;
    }

    if (matches == 1 && ticket != 0) {
        json_decref(found);
        moved = mc_db_resolve_found(w->db, it, ticket, w->cfg->worker_name,
                                    json_pack("{s:s, s:I}", "step",
                                              "resolve", "ticket",
                                              (json_int_t) ticket));
        if (moved == 1) {
            w->resolved_found++;
        }

        mc_log(MC_LOG_INFO, "credit=%" PRId64 " ref=%s: deal %" PRIu64
               " found: done", it->id, it->reference, ticket);
        return;
    }

    /* the reference twice, or with another amount: a person decides */
    mc_resolve_unresolved(w, it, "deal_conflict",
                          json_pack("{s:s, s:I, s:o}", "step", "resolve",
                                    "expected_minor", (json_int_t) expected,
                                    "deals", found));
}


/* the deal two people named: recorded only if MT5 shows it is this one's */
static void
mc_resolve_verify(mc_worker_t *w, mc_worker_server_t *s, mc_work_item_t *it)
{
    int             retcode, moved;
    const char     *why;
    mc_mt5_rc_e     rc;
    mc_mt5_deal_t   deal;

    retcode = 0;
    rc = mc_mt5_deal_get(s->session, it->settle_ticket, &deal, &retcode);

    if (rc == MC_MT5_NO_ANSWER || (rc == MC_MT5_REJECTED && retcode != 13)) {
        /* not an answer about the deal: asked again after resolve_retry */
        mc_resolve_unresolved(w, it, "mt5_no_answer",
                              json_pack("{s:s, s:I, s:i, s:s}", "step",
                                        "settle check",
                                        "ticket", (json_int_t)
                                                  it->settle_ticket,
                                        "retcode", retcode,
                                        "error", mc_mt5_error(s->session)));
        return;
    }

    why = rc == MC_MT5_REJECTED ? "MT5 has no such deal (13)"
                                : mc_resolve_not_ours(it, &deal);

    moved = mc_db_settle_verdict(w->db, it, why == NULL, w->cfg->worker_name,
                                 why == NULL
                                 ? json_pack("{s:s, s:o}", "step",
                                             "settle check", "deal",
                                             mc_resolve_deal_json(&deal))
                                 : json_pack("{s:s, s:s, s:o?}", "step",
                                             "settle check", "refused", why,
                                             "deal", rc == MC_MT5_OK
                                             ? mc_resolve_deal_json(&deal)
                                             : NULL));

    if (why == NULL) {
        if (moved == 1) {
            w->resolved_found++;
        }
        mc_log(MC_LOG_INFO, "credit=%" PRId64 " ref=%s: deal %" PRIu64
               " named by two people is this credit's: done%s", it->id,
               it->reference, it->settle_ticket,
               moved == 1 ? "" : " (not recorded: it moved on)");
        return;
    }

    mc_alert(&w->alert, "settle_refused", it->id, "credit %s (login %" PRIu64
             "): deal %" PRIu64 " named to settle it is not its own: %s; "
             "nothing recorded, the case is back with a person%s",
             it->reference, it->login, it->settle_ticket, why,
             moved == 1 ? "" : " (verdict not recorded)");
}


/* NULL when the deal is the credit's own, else what is not */
static const char *
mc_resolve_not_ours(const mc_work_item_t *it, const mc_mt5_deal_t *d)
{
    int64_t  minor, expected;

    expected = strcmp(it->direction, "debit") == 0 ? -it->amount_minor
                                                   : it->amount_minor;

    if (d->login != it->login) {
        return "the deal is on another login";
    }
    if (d->action != MC_MT5_DEAL_BALANCE) {
        return "the deal is not a balance operation";
    }
    if (strcmp(d->comment, it->reference) != 0) {
        return "the deal's comment is not the credit's reference";
    }
    if (mc_decimal_to_minor(d->profit, it->currency_digits, &minor) != 0
        || minor != expected)
    {
        return "the deal's amount is not the credit's";
    }

    return NULL;
}


static void
mc_resolve_unresolved(mc_worker_t *w, mc_work_item_t *it, const char *kind,
    json_t *detail)
{
    int    moved;
    char  *text;

    text = detail ? json_dumps(detail, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

    moved = mc_db_resolve_unresolved(w->db, it, kind, w->cfg->worker_name,
                                     detail, w->cfg->resolve_retry);
    w->unresolved++;

    mc_alert(&w->alert, kind, it->id, "credit %s (login %" PRIu64 ") stays "
             "unknown%s: %s", it->reference, it->login,
             moved == 1 ? "" : " (state not recorded)", text ? text : "");
    free(text);
}


static json_t *
mc_resolve_deal_json(const mc_mt5_deal_t *d)
{
    int   len;
    char  profit[48];

    /* the decimal as MT5 wrote it, to its own precision */
    len = mc_minor_format(d->profit.value, d->profit.scale, profit,
                          sizeof(profit));

    return json_pack("{s:I, s:I, s:i, s:s, s:s, s:I}",
                     "deal", (json_int_t) d->deal,
                     "login", (json_int_t) d->login, "action", d->action,
                     "profit", len < 0 ? "?" : profit,
                     "comment", d->comment, "time", (json_int_t) d->time);
}
