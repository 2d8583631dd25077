/*
 * Copyright (C) mt5-credit
 *
 * Trading since the last deposit, for the withdrawal_trading risk rule
 * (sql/080).  A withdrawal asked under that rule notes the login's last
 * credited deposit; nobody can prepare it until the worker has read, from
 * MT5 alone, what the login traded after that deposit's deal:
 *
 *   deal/get of the deposit's deal     the login's, a balance deal: the
 *                                      start of the window, in MT5's time
 *   deal/get_total + get_page          the login's deals around it until
 *                                      now (mc_mt5_deals(): complete or
 *                                      nothing)
 *   buys and sells with a later ticket the volume and count traded
 *   withdrawal_trading_record()        judged by the database: passed,
 *                                      or held for two people
 *
 * "After" is by ticket, which MT5 hands out in order: server time is the
 * broker's local time and steps back an hour in autumn, so a trade made
 * after the deposit can carry an earlier time.  The window is only wide
 * enough to hold them all.  No answer is no reading: the withdrawal waits
 * and is asked about again next round.
 */


#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc_log.h"
#include "mc_trading.h"


#define MC_TRADING_BATCH   20

/* MT5 deal actions: a buy and a sell are trades */
#define MC_TRADING_BUY     0
#define MC_TRADING_SELL    1

/* any offset step a server's clock can take (UTC-12 to UTC+14) */
#define MC_TRADING_MARGIN  (26 * 3600)


static void mc_trading_one(mc_worker_t *w, const mc_db_trading_t *it);


int
mc_trading_round(mc_worker_t *w)
{
    int               n, nservers, i;
    const char       *names[MC_CONFIG_MAX_SERVERS];
    mc_db_trading_t  *items;

    nservers = mc_worker_servers(w, names, MC_CONFIG_MAX_SERVERS);
    if (nservers == 0) {
        return 0;
    }

    n = mc_db_trading_due(w->db, names, nservers, MC_TRADING_BATCH, &items);
    if (n <= 0) {
        return n;
    }

    if (!mc_worker_deployment_ok(w)) {
        free(items);
        return -1;
    }

    for (i = 0; i < n && !*w->stop; i++) {
        mc_trading_one(w, &items[i]);
    }

    free(items);

    return n;
}


static void
mc_trading_one(mc_worker_t *w, const mc_db_trading_t *it)
{
    int                  retcode, deals;
    char                 verdict[16];
    size_t               i, n;
    int64_t              server_now, offset, from, to, volume;
    mc_mt5_rc_e          rc;
    mc_mt5_deal_t        deposit, *list;
    mc_worker_server_t  *s;

    s = mc_worker_server(w, it->server);

    if (s == NULL || mc_worker_session(w, s) != 0) {
        mc_log(MC_LOG_WARN, "withdrawal %s login=%" PRIu64 ": trading not "
               "read: %s", it->reference, it->login,
               s == NULL ? "server not configured"
                         : mc_mt5_error(s->session));
        return;
    }

    retcode = 0;
    rc = mc_mt5_deal_get(s->session, it->after_ticket, &deposit, &retcode);

    if (rc != MC_MT5_OK) {
        mc_log(MC_LOG_WARN, "withdrawal %s: its deposit's deal %" PRIu64
               " not read (retcode %d): %s", it->reference, it->after_ticket,
               retcode, mc_mt5_error(s->session));
        return;
    }

    if (deposit.login != it->login || deposit.action != MC_MT5_DEAL_BALANCE)
    {
        /* our record and MT5 disagree: no reading, a person looks */
        mc_alert(&w->alert, "trading_deposit_mismatch", 0, "withdrawal %s "
                 "(login %" PRIu64 "): its deposit's deal %" PRIu64 " is "
                 "action %d on login %" PRIu64 " in MT5; its trading is not "
                 "read and it cannot be prepared", it->reference, it->login,
                 it->after_ticket, deposit.action, deposit.login);
        return;
    }

    rc = mc_mt5_time(s->session, &server_now, &offset, &retcode);

    if (rc != MC_MT5_OK) {
        mc_log(MC_LOG_WARN, "withdrawal %s: MT5's clock not read: %s",
               it->reference, mc_mt5_error(s->session));
        return;
    }

    from = deposit.time - MC_TRADING_MARGIN;
    to = server_now + MC_TRADING_MARGIN;

    rc = mc_mt5_deals(s->session, it->login, from, to, &list, &n, &retcode);

    if (rc != MC_MT5_OK) {
        mc_log(MC_LOG_WARN, "withdrawal %s login=%" PRIu64 ": deals not "
               "read (retcode %d): %s", it->reference, it->login, retcode,
               mc_mt5_error(s->session));
        return;
    }

    volume = 0;
    deals = 0;

    for (i = 0; i < n; i++) {
        if (list[i].deal <= it->after_ticket
            || (list[i].action != MC_TRADING_BUY
                && list[i].action != MC_TRADING_SELL))
        {
            continue;
        }

        if (list[i].volume > (uint64_t) (INT64_MAX - volume)) {
            free(list);
            mc_log(MC_LOG_WARN, "withdrawal %s: a volume past any account's "
                   "is no reading", it->reference);
            return;
        }

        volume += (int64_t) list[i].volume;
        deals++;
    }

    free(list);

    if (mc_db_trading_record(w->db, it->id, it->after_ticket, volume, deals,
                             from, to, verdict, sizeof(verdict))
        != 0)
    {
        return;
    }

    mc_log(MC_LOG_INFO, "withdrawal %s login=%" PRIu64 ": %d trades, volume "
           "%" PRId64 " (1/10000 lot) since deal %" PRIu64 ": %s",
           it->reference, it->login, deals, volume, it->after_ticket,
           verdict);
}
