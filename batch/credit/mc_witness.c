/*
 * Copyright (C) mt5-credit
 *
 * The kept claim (mc_rewind.c) is a file on one host: a database that
 * went back in time is seen there only if it lost one of that host's
 * claims.  MT5 keeps every deal of every host, whatever the database
 * forgets, so before claiming (on a new connection, and every
 * witness_interval) the worker asks it about the credits it is about to
 * claim:
 *
 *   for each login of the next witness_credits pending credits
 *       the login's deals over their lookup windows (mc_mt5_deals():
 *       complete or nothing)
 *   balance deals under one of their comments
 *       still pending at the attempt read (asked after MT5 answered)?
 *           the claim that made the deal is gone: database_rewound()
 *
 * A claim commits before its call (mc_db_recv()), and a claim made while
 * MT5 is asked moves the attempt on, so "still pending at the attempt
 * read" cannot be a claim in flight.  No answer from MT5 or the database
 * is no verdict: nothing is claimed this round.
 */


#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc_log.h"
#include "mc_witness.h"


typedef struct {
    int64_t   id;
    int       attempts;
    uint64_t  ticket;
    char      comment[32];
    char      server[64];
    uint64_t  login;
} mc_witness_seen_t;


static int mc_witness_cmp(const void *a, const void *b);
static int mc_witness_login(mc_worker_t *w, mc_db_witness_t *items,
    size_t n, mc_witness_seen_t *seen, int *nseen);
static mc_witness_rc_e mc_witness_rewound(mc_worker_t *w,
    mc_witness_seen_t *seen, int nseen);


mc_witness_rc_e
mc_witness_check(mc_worker_t *w)
{
    int                 n, i, j, nseen, nservers;
    const char         *names[MC_CONFIG_MAX_SERVERS];
    mc_witness_rc_e     rc;
    mc_db_witness_t    *items;
    mc_witness_seen_t  *seen;

    if (w->cfg->witness_credits == 0) {
        w->witness_upto = INT64_MAX;
        return MC_WITNESS_OK;
    }

    nservers = mc_worker_servers(w, names, MC_CONFIG_MAX_SERVERS);
    if (nservers == 0) {
        return MC_WITNESS_OK;
    }

    n = mc_db_witness_pick(w->db, names, nservers, w->cfg->witness_credits,
                           &items);
    if (n < 0) {
        return MC_WITNESS_ERROR;
    }

    /*
     * The queue's head was asked about: once this worker's claims pass
     * its middle, it asks again, before claims can reach what it did
     * not ask about (picked in id order, claimed in id order).
     */
    w->witness_upto = n < w->cfg->witness_credits ? INT64_MAX
                                                 : items[n / 2].id;
    if (n == 0) {
        return MC_WITNESS_OK;
    }

    seen = calloc((size_t) n, sizeof(mc_witness_seen_t));
    if (seen == NULL) {
        free(items);
        return MC_WITNESS_ERROR;
    }

    /* one request per login: the items of one login side by side */
    qsort(items, (size_t) n, sizeof(mc_db_witness_t), mc_witness_cmp);

    rc = MC_WITNESS_OK;
    nseen = 0;

    for (i = 0; i < n; i = j) {
        for (j = i + 1; j < n; j++) {
            if (items[j].login != items[i].login
                || strcmp(items[j].server, items[i].server) != 0)
            {
                break;
            }
        }

        if (mc_witness_login(w, &items[i], (size_t) (j - i), seen, &nseen)
            != 0)
        {
            rc = MC_WITNESS_ERROR;
            break;
        }
    }

    if (rc == MC_WITNESS_OK && nseen > 0) {
        rc = mc_witness_rewound(w, seen, nseen);
    }

    free(seen);
    free(items);

    return rc;
}


static int
mc_witness_cmp(const void *a, const void *b)
{
    int                     c;
    const mc_db_witness_t  *x = a, *y = b;

    c = strcmp(x->server, y->server);
    if (c != 0) {
        return c;
    }

    return x->login < y->login ? -1 : x->login > y->login;
}


/*
 * The deals of one login, over the windows of all its pending credits:
 * each balance deal under one of their comments is added to seen[];
 * 0, or -1 (logged) when MT5 gave no complete answer.
 */
static int
mc_witness_login(mc_worker_t *w, mc_db_witness_t *items, size_t n,
    mc_witness_seen_t *seen, int *nseen)
{
    int                  retcode;
    size_t               i, k, nd;
    int64_t              since, now, offset, from, to;
    mc_mt5_rc_e          rc;
    mc_mt5_deal_t       *deals;
    mc_worker_server_t  *s;

    s = mc_worker_server(w, items[0].server);
    if (s == NULL) {
        /* not ours to claim here: another worker's servers */
        return 0;
    }

    if (mc_worker_session(w, s) != 0) {
        mc_log(MC_LOG_WARN, "witness: server %s: no session (%s); nothing "
               "is claimed until MT5 is asked", s->config->name,
               mc_mt5_error(s->session));
        return -1;
    }

    retcode = 0;
    if (mc_mt5_time(s->session, &now, &offset, &retcode) != MC_MT5_OK) {
        mc_log(MC_LOG_WARN, "witness: server %s: time/server: %s; nothing "
               "is claimed until MT5 is asked", s->config->name,
               mc_mt5_error(s->session));
        return -1;
    }

    since = items[0].since;
    for (i = 1; i < n; i++) {
        if (items[i].since < since) {
            since = items[i].since;
        }
    }

    mc_resolver_window(since, items[0].db_now, offset, w->cfg->lookback,
                       &from, &to);

    rc = mc_mt5_deals(s->session, items[0].login, from, to, &deals, &nd,
                      &retcode);

    if (rc == MC_MT5_REJECTED && retcode == 13) {
        /* no such login: no deal of it either (its claim fails it) */
        return 0;
    }

    if (rc != MC_MT5_OK) {
        mc_log(MC_LOG_WARN, "witness: server %s login %" PRIu64 ": no "
               "complete list of deals (retcode %d: %s); nothing is claimed "
               "until MT5 is asked", s->config->name, items[0].login,
               retcode, mc_mt5_error(s->session));
        return -1;
    }

    for (k = 0; k < nd; k++) {
        if (deals[k].action != MC_MT5_DEAL_BALANCE
            || deals[k].login != items[0].login)
        {
            continue;
        }

        for (i = 0; i < n; i++) {
            if (strcmp(deals[k].comment, items[i].comment) != 0) {
                continue;
            }

            seen[*nseen].id = items[i].id;
            seen[*nseen].attempts = items[i].attempts;
            seen[*nseen].ticket = deals[k].deal;
            seen[*nseen].login = items[i].login;
            snprintf(seen[*nseen].comment, sizeof(seen[*nseen].comment),
                     "%s", items[i].comment);
            snprintf(seen[*nseen].server, sizeof(seen[*nseen].server),
                     "%s", items[i].server);
            (*nseen)++;

            /* a credit counts once, however many deals it has */
            items[i].comment[0] = '\0';
            break;
        }
    }

    free(deals);

    return 0;
}


/* deals seen for pending credits: those still pending prove a rewind */
static mc_witness_rc_e
mc_witness_rewound(mc_worker_t *w, mc_witness_seen_t *seen, int nseen)
{
    int                 i, j, n, marked, *attempts;
    int64_t            *ids, *still;
    mc_witness_rc_e     rc;
    mc_witness_seen_t  *first;

    ids = malloc(nseen * sizeof(int64_t));
    still = malloc(nseen * sizeof(int64_t));
    attempts = malloc(nseen * sizeof(int));

    rc = MC_WITNESS_ERROR;

    if (ids == NULL || still == NULL || attempts == NULL) {
        goto done;
    }

    for (i = 0; i < nseen; i++) {
        ids[i] = seen[i].id;
        attempts[i] = seen[i].attempts;
    }

    n = mc_db_witness_still_pending(w->db, ids, attempts, nseen, still);
    if (n < 0) {
        goto done;
    }

    rc = MC_WITNESS_OK;

    if (n == 0) {
        /* each was claimed meanwhile: a deal of this timeline */
        goto done;
    }

    first = NULL;
    for (j = 0; j < nseen && first == NULL; j++) {
        if (seen[j].id == still[0]) {
            first = &seen[j];
        }
    }

    if (first == NULL) {
        rc = MC_WITNESS_ERROR;
        goto done;
    }

    marked = mc_db_rewound(w->db, w->cfg->worker_name, w->cfg->lease,
                           json_pack("{s:s, s:i, s:I, s:s, s:s, s:I, s:I}",
                                     "witness", "mt5",
                                     "claims_lost", n,
                                     "first_credit", (json_int_t) first->id,
                                     "comment", first->comment,
                                     "server", first->server,
                                     "login", (json_int_t) first->login,
                                     "deal", (json_int_t) first->ticket));
    if (marked < 0) {
        rc = MC_WITNESS_ERROR;
        goto done;
    }

    mc_alert(&w->alert, "database_rewound", first->id, "the database went "
             "back in time: MT5 holds deal %" PRIu64 " (%s, login %" PRIu64
             " on %s) of credit %" PRId64 ", which the database holds as "
             "pending at attempt %d; %d such credit%s; %d "
             "open credits are looked up before any call", first->ticket,
             first->comment, first->login, first->server, first->id,
             first->attempts, n, n == 1 ? "" : "s", marked);

    rc = MC_WITNESS_HANDLED;

done:

    free(ids);
    free(still);
    free(attempts);

    return rc;
}
