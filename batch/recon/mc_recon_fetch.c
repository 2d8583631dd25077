/*
 * Copyright (C) mt5-credit
 *
 * One server at a time: a first session reads the server's clock, each
 * group's currency and its logins; then `sessions` threads, each with its
 * own Web API session (one request at a time on each, as the API wants),
 * take logins from a shared cursor and fetch their deals.  A deal row is
 * written to the COPY under a lock, so rows of different logins
 * interleave; the digest of the deals is therefore a sum of per-row
 * hashes, the same whatever the order.  It only tells "the same deals as
 * last time" (a re-run adds nothing), so a fast 64-bit hash, twice with
 * different bases, is enough; it is no signature.
 */


#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc_log.h"
#include "mc_money.h"
#include "mc_mt5.h"
#include "mc_recon_fetch.h"
#include "mc_recon_slots.h"


#define MC_FETCH_SESSIONS_MAX  16


/* the measured offset is a clock difference, not a whole minute */
#define MC_RECON_ZONE_SLACK  90


typedef struct {
    uint64_t               login;
    const mc_mt5_group_t  *group;
} mc_fetch_login_t;


typedef struct {
    mc_server_config_t      *srv;
    mc_pgcopy_t             *copy;
    int64_t                  run_id;
    int64_t                  offset;       /* server time - UTC */
    const mc_recon_zone_t   *zone;         /* NULL: none configured */
    int64_t                  from, to;     /* server time, [from, to) */
    volatile sig_atomic_t   *stop;

    mc_mt5_group_t          *groups;
    size_t                   ngroups;
    mc_fetch_login_t        *logins;
    size_t                   nlogins;

    /* under lock: the cursor, the COPY, the digest, counts, the error */
    pthread_mutex_t          lock;
    size_t                   next;
    int                      failed;
    uint64_t                 sum[2];
    mc_recon_fetch_stats_t  *st;
    int                      by_ticket;    /* rows asked for by ticket */
    const mc_recon_ticket_t *tickets;      /* by ticket: this server's */
    size_t                   ntickets;
    uint64_t                *found;        /* by ticket: rows written */
    char                    *err;
    size_t                   errlen;
} mc_fetch_t;


typedef struct {
    mc_fetch_t              *f;
    mc_mt5_session_t        *s;
    int                      rc;
} mc_fetch_worker_t;


static int mc_recon_fetch_server(mc_fetch_t *f, int sessions);
static int mc_recon_fetch_plan(mc_fetch_t *f, mc_mt5_session_t *s,
    int64_t from_utc, int64_t to_utc);
static int mc_recon_fetch_group(mc_fetch_t *f, mc_mt5_session_t *s,
    const char *name, size_t gi);
static void *mc_recon_fetch_worker(void *arg);
static int mc_recon_fetch_login(mc_fetch_t *f, mc_mt5_session_t *s,
    const mc_fetch_login_t *l);
static void mc_recon_fetch_row(mc_fetch_t *f, const mc_mt5_deal_t *d,
    const mc_mt5_group_t *g, int64_t minor);
static void mc_recon_fetch_fail(mc_fetch_t *f, mc_mt5_session_t *s,
    mc_mt5_rc_e rc, int retcode, const char *what);
static int mc_recon_fetch_ticket_plan(mc_fetch_t *f);
static void *mc_recon_fetch_ticket_worker(void *arg);
static int mc_recon_fetch_chunk(mc_fetch_t *f, mc_mt5_session_t *s,
    const mc_recon_ticket_t *t, size_t n);
static int mc_recon_fetch_group_of(mc_fetch_t *f, mc_mt5_session_t *s,
    uint64_t login, mc_mt5_group_t *g);


int
mc_recon_fetch(mc_config_t *cfg, mc_pgcopy_t *copy, int64_t run_id,
    int64_t from_utc, int64_t to_utc, const mc_recon_zone_t *zones,
    volatile sig_atomic_t *stop,
    mc_recon_fetch_stats_t *st, char *digest, char *err, size_t errlen)
{
    int                i, rc, sessions;
    mc_fetch_t         f;
    mc_mt5_session_t  *s;
    mc_recon_slots_t   sl;
    uint64_t           sum[2] = { 0, 0 };

    memset(st, 0, sizeof(*st));

    for (i = 0; i < cfg->nservers; i++) {
        if (cfg->servers[i].recon_groups[0] == '\0') {
            snprintf(err, errlen, "%s: server \"%s\" has no recon_groups: "
                     "which of its deals to reconcile is not configured",
                     cfg->path, cfg->servers[i].name);
            return -1;
        }
    }

    for (i = 0; i < cfg->nservers; i++) {
        memset(&f, 0, sizeof(f));
        f.srv = &cfg->servers[i];
        f.zone = zones != NULL && (zones[i].set || zones[i].fixed)
                 ? &zones[i] : NULL;
        f.copy = copy;
        f.run_id = run_id;
        f.stop = stop;
        f.st = st;
        f.err = err;
        f.errlen = errlen;
        pthread_mutex_init(&f.lock, NULL);

        /* every session below holds one of the server's slots, the plan's
           first (it is closed before the others open) */
        sessions = mc_recon_slots_take(&sl, cfg, f.srv, cfg->recon_sessions,
                                       stop, err, errlen);
        if (sessions < 0) {
            mc_recon_slots_release(&sl);
            pthread_mutex_destroy(&f.lock);
            return -1;
        }

        s = mc_mt5_session_new(&f.srv->mt5);
        if (s == NULL) {
            snprintf(err, errlen, "MT5 server %s: out of memory",
                     f.srv->name);
            mc_recon_slots_release(&sl);
            pthread_mutex_destroy(&f.lock);
            return -1;
        }

        rc = mc_recon_fetch_plan(&f, s, from_utc, to_utc);
        if (rc == 0) {
            mc_mt5_close(s);
        }
        mc_mt5_session_free(s);

        if (rc == 0) {
            rc = mc_recon_fetch_server(&f, sessions);
        }

        mc_recon_slots_release(&sl);

        sum[0] += f.sum[0];
        sum[1] += f.sum[1];
        free(f.groups);
        free(f.logins);
        pthread_mutex_destroy(&f.lock);

        if (rc != 0) {
            return -1;
        }

        st->servers++;
    }

    snprintf(digest, 33, "%016" PRIx64 "%016" PRIx64, sum[0], sum[1]);
    return 0;
}


/* the clock, the groups' currencies and every login to look at */
static int
mc_recon_fetch_plan(mc_fetch_t *f, mc_mt5_session_t *s, int64_t from_utc,
    int64_t to_utc)
{
    int          retcode;
    size_t       n;
    char         list[sizeof(f->srv->recon_groups)];
    char        *group, *save, *end, *p;
    int64_t      now;
    mc_mt5_rc_e  rc;

    rc = mc_mt5_ensure(s, &retcode);
    if (rc != MC_MT5_OK) {
        mc_recon_fetch_fail(f, s, rc, retcode, "authentication");
        return -1;
    }

    rc = mc_mt5_time(s, &now, &f->offset, &retcode);
    if (rc != MC_MT5_OK) {
        mc_recon_fetch_fail(f, s, rc, retcode, "time/server");
        return -1;
    }

    /* no zone: the offset that held at both ends of the day (041) */
    if (f->zone != NULL && f->zone->fixed) {
        if (f->offset != f->zone->fixed_offset) {
            mc_log(MC_LOG_INFO, "reconcile: MT5 server %s: clock UTC%+"
                   PRId64 " min now; the day's deals are read at UTC%+"
                   PRId64 " min, the offset at both its ends",
                   f->srv->name, f->offset / 60,
                   f->zone->fixed_offset / 60);
        }
        f->offset = f->zone->fixed_offset;
    }

    /* the window in the server's own clock (reference section 7) */
    f->from = from_utc + f->offset;
    f->to = to_utc + f->offset;

    /*
     * With its zone known, the window is the zone's (a day that began
     * under another offset begins where that offset put it), and the
     * server's clock must agree with the zone now: a zone that is not
     * the server's would cut every day wrong.
     */
    if (f->zone != NULL && f->zone->set) {
        if (f->offset - f->zone->offset_now > MC_RECON_ZONE_SLACK
            || f->zone->offset_now - f->offset > MC_RECON_ZONE_SLACK)
        {
            snprintf(f->err, f->errlen, "MT5 server %s: its clock is UTC%+"
                     PRId64 " min, its time_zone \"%s\" says UTC%+" PRId64
                     " min now: the zone is not the server's",
                     f->srv->name, f->offset / 60, f->srv->time_zone,
                     f->zone->offset_now / 60);
            return -1;
        }

        f->from = f->zone->from;
        f->to = f->zone->to;
    }

    mc_log(MC_LOG_INFO, "reconcile: MT5 server %s: clock UTC%+" PRId64
           " min", f->srv->name, f->offset / 60);

    for (n = 1, p = f->srv->recon_groups; *p != '\0'; p++) {
        n += *p == ',';
    }

    f->groups = calloc(n, sizeof(mc_mt5_group_t));
    if (f->groups == NULL) {
        snprintf(f->err, f->errlen, "out of memory");
        return -1;
    }

    strcpy(list, f->srv->recon_groups);

    for (group = strtok_r(list, ",", &save); group != NULL;
         group = strtok_r(NULL, ",", &save))
    {
        while (*group == ' ') {
            group++;
        }
        end = group + strlen(group);
        while (end > group && end[-1] == ' ') {
            *--end = '\0';
        }
        if (*group == '\0') {
            continue;
        }

        if (mc_recon_fetch_group(f, s, group, f->ngroups++) != 0) {
            return -1;
        }
    }

    return 0;
}


static int
mc_recon_fetch_group(mc_fetch_t *f, mc_mt5_session_t *s, const char *name,
    size_t gi)
{
    int                retcode;
    size_t             i, n;
    uint64_t          *logins;
    mc_mt5_rc_e        rc;
    mc_fetch_login_t  *all;
    char               what[200];

    snprintf(what, sizeof(what), "group/get %s", name);
    rc = mc_mt5_group_get(s, name, &f->groups[gi], &retcode);
    if (rc != MC_MT5_OK) {
        mc_recon_fetch_fail(f, s, rc, retcode, what);
        return -1;
    }

    snprintf(what, sizeof(what), "user/logins of %s", name);
    rc = mc_mt5_logins(s, name, &logins, &n, &retcode);
    if (rc != MC_MT5_OK) {
        mc_recon_fetch_fail(f, s, rc, retcode, what);
        return -1;
    }

    all = realloc(f->logins, (f->nlogins + n + 1) * sizeof(*all));
    if (all == NULL) {
        free(logins);
        snprintf(f->err, f->errlen, "out of memory for %zu logins", n);
        return -1;
    }

    for (i = 0; i < n; i++) {
        all[f->nlogins + i].login = logins[i];
        all[f->nlogins + i].group = &f->groups[gi];
    }

    f->logins = all;
    f->nlogins += n;
    f->st->groups++;
    free(logins);
    return 0;
}


static int
mc_recon_fetch_server(mc_fetch_t *f, int sessions)
{
    int                 i, started, rc;
    pthread_t           tid[MC_FETCH_SESSIONS_MAX];
    mc_fetch_worker_t   w[MC_FETCH_SESSIONS_MAX];

    if (sessions < 1) {
        sessions = 1;
    }
    if (sessions > MC_FETCH_SESSIONS_MAX) {
        sessions = MC_FETCH_SESSIONS_MAX;
    }
    if ((size_t) sessions > f->nlogins) {
        sessions = f->nlogins > 0 ? (int) f->nlogins : 1;
    }

    for (started = 0; started < sessions; started++) {
        w[started].f = f;
        w[started].rc = 0;
        w[started].s = mc_mt5_session_new(&f->srv->mt5);

        if (w[started].s == NULL
            || pthread_create(&tid[started], NULL, mc_recon_fetch_worker,
                              &w[started]) != 0)
        {
            mc_mt5_session_free(w[started].s);
            pthread_mutex_lock(&f->lock);
            if (!f->failed) {
                f->failed = 1;
                snprintf(f->err, f->errlen, "MT5 server %s: cannot start "
                         "fetch session %d", f->srv->name, started + 1);
            }
            pthread_mutex_unlock(&f->lock);
            break;
        }
    }

    rc = 0;

    for (i = 0; i < started; i++) {
        pthread_join(tid[i], NULL);
        if (w[i].rc == 0) {
            mc_mt5_close(w[i].s);
        }
        mc_mt5_session_free(w[i].s);
        rc |= w[i].rc;
    }

    return (rc != 0 || f->failed) ? -1 : 0;
}


static void *
mc_recon_fetch_worker(void *arg)
{
    size_t              i;
    mc_fetch_worker_t  *w = arg;
    mc_fetch_t         *f = w->f;

    for ( ;; ) {
        pthread_mutex_lock(&f->lock);
        if (f->failed || f->next == f->nlogins) {
            pthread_mutex_unlock(&f->lock);
            break;
        }
        if (*f->stop) {
            f->failed = 1;
            snprintf(f->err, f->errlen, "stopped by a signal");
            pthread_mutex_unlock(&f->lock);
            break;
        }
        i = f->next++;
        pthread_mutex_unlock(&f->lock);

        if (mc_recon_fetch_login(f, w->s, &f->logins[i]) != 0) {
            w->rc = -1;
            break;
        }
    }

    return NULL;
}


static int
mc_recon_fetch_login(mc_fetch_t *f, mc_mt5_session_t *s,
    const mc_fetch_login_t *l)
{
    int             retcode;
    size_t          i, n, kept;
    int64_t         minor;
    char            what[64];
    mc_mt5_rc_e     rc;
    mc_mt5_deal_t  *deals, *d;

    snprintf(what, sizeof(what), "deals of login %" PRIu64, l->login);

    /* MT5's bounds are inclusive server times */
    rc = mc_mt5_deals(s, l->login, f->from, f->to - 1, &deals, &n, &retcode);
    if (rc != MC_MT5_OK) {
        mc_recon_fetch_fail(f, s, rc, retcode, what);
        return -1;
    }

    /* every amount exact before anything of this login is written */
    for (i = 0; i < n; i++) {
        d = &deals[i];
        if (d->action == MC_MT5_DEAL_BALANCE
            && mc_decimal_to_minor(d->profit, l->group->digits, &minor) != 0)
        {
            pthread_mutex_lock(&f->lock);
            if (!f->failed) {
                f->failed = 1;
                snprintf(f->err, f->errlen, "MT5 server %s: deal %" PRIu64
                         " of login %" PRIu64 ": profit is not exact in "
                         "%s's %d digits", f->srv->name, d->deal, l->login,
                         l->group->currency, l->group->digits);
            }
            pthread_mutex_unlock(&f->lock);
            free(deals);
            return -1;
        }
    }

    pthread_mutex_lock(&f->lock);

    for (i = 0, kept = 0; i < n; i++) {
        d = &deals[i];

        if (d->action != MC_MT5_DEAL_BALANCE
            || d->time < f->from || d->time >= f->to)
        {
            continue;
        }

        (void) mc_decimal_to_minor(d->profit, l->group->digits, &minor);
        mc_recon_fetch_row(f, d, l->group, minor);
        kept++;
    }

    f->st->logins++;
    f->st->deals += n;
    f->st->balance_deals += kept;

    if (f->copy->failed && !f->failed) {
        f->failed = 1;
        snprintf(f->err, f->errlen, "%s", f->copy->err);
    }

    rc = f->failed ? MC_MT5_NO_ANSWER : MC_MT5_OK;
    pthread_mutex_unlock(&f->lock);

    free(deals);
    return rc == MC_MT5_OK ? 0 : -1;
}


/* one COPY row, and its hash into the digest; the lock is held */
static void
mc_recon_fetch_row(mc_fetch_t *f, const mc_mt5_deal_t *d,
    const mc_mt5_group_t *g, int64_t minor)
{
    int       i, len;
    uint64_t  h0, h1;
    char      canon[512];

    mc_pgcopy_i64(f->copy, f->run_id);
    mc_pgcopy_text(f->copy, f->srv->name);
    mc_pgcopy_u64(f->copy, d->deal);
    mc_pgcopy_u64(f->copy, d->login);
    mc_pgcopy_i64(f->copy, minor);
    mc_pgcopy_text(f->copy, g->currency);
    mc_pgcopy_text(f->copy, d->comment);
    mc_pgcopy_i64(f->copy, d->time - f->offset);
    mc_pgcopy_i64(f->copy, d->time);
    if (f->zone != NULL && f->zone->set) {
        mc_pgcopy_text(f->copy, f->srv->time_zone);
    } else {
        mc_pgcopy_null(f->copy);
    }
    mc_pgcopy_bool(f->copy, f->by_ticket);
    mc_pgcopy_row_end(f->copy);

    /* the zone is part of the input: it decides the deal's day */
    len = snprintf(canon, sizeof(canon), "%s|%" PRIu64 "|%" PRIu64 "|%"
                   PRId64 "|%s|%s|%" PRId64 "%s%s", f->srv->name, d->deal,
                   d->login, minor, g->currency, d->comment,
                   d->time - f->offset,
                   f->zone != NULL && f->zone->set ? "|" : "",
                   f->zone != NULL && f->zone->set ? f->srv->time_zone : "");
    if (len >= (int) sizeof(canon)) {
        len = (int) sizeof(canon) - 1;
    }

    /* FNV-1a, 64 bits, from two offset bases */
    h0 = 0xcbf29ce484222325ULL;
    h1 = 0x84222325cbf29ce4ULL;
    for (i = 0; i < len; i++) {
        h0 = (h0 ^ (unsigned char) canon[i]) * 0x100000001b3ULL;
        h1 = (h1 ^ (unsigned char) canon[i]) * 0x100000001b3ULL;
    }

    f->sum[0] += h0;
    f->sum[1] += h1;
}


/* the first failure wins; the others stop at their next login */
static void
mc_recon_fetch_fail(mc_fetch_t *f, mc_mt5_session_t *s, mc_mt5_rc_e rc,
    int retcode, const char *what)
{
    pthread_mutex_lock(&f->lock);

    if (!f->failed) {
        f->failed = 1;

        if (rc == MC_MT5_REJECTED) {
            snprintf(f->err, f->errlen, "MT5 server %s: %s refused with "
                     "retcode %d", f->srv->name, what, retcode);
        } else {
            snprintf(f->err, f->errlen, "MT5 server %s: %s: no complete "
                     "answer (%s)", f->srv->name, what, mc_mt5_error(s));
        }
    }

    pthread_mutex_unlock(&f->lock);
}


int
mc_recon_fetch_tickets(mc_config_t *cfg, mc_pgcopy_t *copy, int64_t run_id,
    const mc_recon_ticket_t *t, size_t n, const mc_recon_zone_t *zones,
    volatile sig_atomic_t *stop, uint64_t *found, char *digest, char *err,
    size_t errlen)
{
    int                      rc, sessions, started, k;
    size_t                   i, j, chunks;
    mc_fetch_t               f;
    pthread_t                tid[MC_FETCH_SESSIONS_MAX];
    mc_fetch_worker_t        w[MC_FETCH_SESSIONS_MAX];
    mc_recon_fetch_stats_t   st;
    mc_recon_slots_t         sl;
    uint64_t                 sum[2] = { 0, 0 };

    *found = 0;

    for (i = 0; i < n; i = j) {
        for (j = i; j < n && t[j].server == t[i].server; j++) {
            /* void */
        }

        memset(&f, 0, sizeof(f));
        memset(&st, 0, sizeof(st));
        f.srv = &cfg->servers[t[i].server];
        f.zone = zones != NULL
                 && (zones[t[i].server].set || zones[t[i].server].fixed)
                 ? &zones[t[i].server] : NULL;
        f.copy = copy;
        f.run_id = run_id;
        f.stop = stop;
        f.st = &st;
        f.by_ticket = 1;
        f.tickets = &t[i];
        f.ntickets = j - i;
        f.found = found;
        f.err = err;
        f.errlen = errlen;
        pthread_mutex_init(&f.lock, NULL);

        /* the chunks shared out to the sessions whose slots were free, as
           the logins are */
        sessions = mc_recon_slots_take(&sl, cfg, f.srv, cfg->recon_sessions,
                                       stop, err, errlen);
        if (sessions < 0) {
            mc_recon_slots_release(&sl);
            pthread_mutex_destroy(&f.lock);
            return -1;
        }

        rc = mc_recon_fetch_ticket_plan(&f);

        chunks = (f.ntickets + MC_MT5_BATCH_TICKETS - 1)
                 / MC_MT5_BATCH_TICKETS;
        if (sessions > MC_FETCH_SESSIONS_MAX) {
            sessions = MC_FETCH_SESSIONS_MAX;
        }
        if ((size_t) sessions > chunks) {
            sessions = (int) chunks;
        }

        for (started = 0; rc == 0 && started < sessions; started++) {
            w[started].f = &f;
            w[started].rc = 0;
            w[started].s = mc_mt5_session_new(&f.srv->mt5);

            if (w[started].s == NULL
                || pthread_create(&tid[started], NULL,
                                  mc_recon_fetch_ticket_worker, &w[started])
                   != 0)
            {
                mc_mt5_session_free(w[started].s);
                pthread_mutex_lock(&f.lock);
                if (!f.failed) {
                    f.failed = 1;
                    snprintf(err, errlen, "MT5 server %s: cannot start "
                             "ticket session %d", f.srv->name, started + 1);
                }
                pthread_mutex_unlock(&f.lock);
                break;
            }
        }

        for (k = 0; k < started; k++) {
            pthread_join(tid[k], NULL);
            if (w[k].rc == 0) {
                mc_mt5_close(w[k].s);
            }
            mc_mt5_session_free(w[k].s);
            rc |= w[k].rc;
        }

        if (f.failed) {
            rc = -1;
        }

        mc_recon_slots_release(&sl);
        pthread_mutex_destroy(&f.lock);
        sum[0] += f.sum[0];
        sum[1] += f.sum[1];

        if (rc != 0) {
            return -1;
        }

        mc_log(MC_LOG_INFO, "reconcile: MT5 server %s: %zu deals asked for "
               "by ticket, %d sessions", f.srv->name, f.ntickets, started);
    }

    snprintf(digest, 33, "%016" PRIx64 "%016" PRIx64, sum[0], sum[1]);
    return 0;
}


/* the server's clock, read once: every ticket row's UTC time uses it */
static int
mc_recon_fetch_ticket_plan(mc_fetch_t *f)
{
    int                retcode, rc;
    int64_t            now;
    mc_mt5_rc_e        mrc;
    mc_mt5_session_t  *s;

    s = mc_mt5_session_new(&f->srv->mt5);
    if (s == NULL) {
        snprintf(f->err, f->errlen, "MT5 server %s: out of memory",
                 f->srv->name);
        return -1;
    }

    rc = -1;
    mrc = mc_mt5_ensure(s, &retcode);

    if (mrc != MC_MT5_OK) {
        mc_recon_fetch_fail(f, s, mrc, retcode, "authentication");

    } else if ((mrc = mc_mt5_time(s, &now, &f->offset, &retcode))
               != MC_MT5_OK)
    {
        mc_recon_fetch_fail(f, s, mrc, retcode, "time/server");

    } else {
        if (f->zone != NULL && f->zone->fixed) {
            f->offset = f->zone->fixed_offset;
        }
        rc = 0;
        mc_mt5_close(s);
    }

    mc_mt5_session_free(s);
    return rc;
}


static void *
mc_recon_fetch_ticket_worker(void *arg)
{
    size_t              k, n;
    mc_fetch_worker_t  *w = arg;
    mc_fetch_t         *f = w->f;

    for ( ;; ) {
        pthread_mutex_lock(&f->lock);
        if (f->failed || f->next >= f->ntickets) {
            pthread_mutex_unlock(&f->lock);
            break;
        }
        if (*f->stop) {
            f->failed = 1;
            snprintf(f->err, f->errlen, "stopped by a signal");
            pthread_mutex_unlock(&f->lock);
            break;
        }
        k = f->next;
        n = f->ntickets - k < MC_MT5_BATCH_TICKETS
            ? f->ntickets - k : MC_MT5_BATCH_TICKETS;
        f->next += n;
        pthread_mutex_unlock(&f->lock);

        if (mc_recon_fetch_chunk(f, w->s, &f->tickets[k], n) != 0) {
            w->rc = -1;
            break;
        }
    }

    return NULL;
}


/*
 * Up to MC_MT5_BATCH_TICKETS tickets of one server: asked for, each
 * deal's currency settled (another login's by asking MT5), and only then
 * written, under the lock.
 */
static int
mc_recon_fetch_chunk(mc_fetch_t *f, mc_mt5_session_t *s,
    const mc_recon_ticket_t *t, size_t n)
{
    int              retcode, rc;
    size_t           i, k, got;
    int64_t          minor[MC_MT5_BATCH_TICKETS];
    uint64_t         tickets[MC_MT5_BATCH_TICKETS];
    mc_mt5_rc_e      mrc;
    mc_mt5_deal_t   *deals, *d;
    mc_mt5_group_t   g[MC_MT5_BATCH_TICKETS];

    for (i = 0; i < n; i++) {
        tickets[i] = t[i].ticket;
    }

    mrc = mc_mt5_deals_by_ticket(s, tickets, n, &deals, &got, &retcode);
    if (mrc != MC_MT5_OK) {
        mc_recon_fetch_fail(f, s, mrc, retcode, "deal/get_batch by ticket");
        return -1;
    }

    rc = 0;

    for (i = 0; rc == 0 && i < got; i++) {
        d = &deals[i];
        memset(&g[i], 0, sizeof(mc_mt5_group_t));

        if (d->action != MC_MT5_DEAL_BALANCE) {
            continue;                   /* a ticket that is no balance deal */
        }

        for (k = 0; k < n && t[k].ticket != d->deal; k++) {
            /* void */
        }

        if (k < n && d->login == t[k].login) {
            snprintf(g[i].currency, sizeof(g[i].currency), "%s",
                     t[k].currency);
            g[i].digits = t[k].digits;

        } else if (mc_recon_fetch_group_of(f, s, d->login, &g[i]) != 0) {
            rc = -1;
            break;
        }

        if (mc_decimal_to_minor(d->profit, g[i].digits, &minor[i]) != 0) {
            pthread_mutex_lock(&f->lock);
            if (!f->failed) {
                f->failed = 1;
                snprintf(f->err, f->errlen, "MT5 server %s: deal %" PRIu64
                         " of login %" PRIu64 ": profit is not exact in "
                         "%s's %d digits", f->srv->name, d->deal, d->login,
                         g[i].currency, g[i].digits);
            }
            pthread_mutex_unlock(&f->lock);
            rc = -1;
        }
    }

    if (rc == 0) {
        pthread_mutex_lock(&f->lock);

        for (i = 0; i < got; i++) {
            if (deals[i].action == MC_MT5_DEAL_BALANCE) {
                mc_recon_fetch_row(f, &deals[i], &g[i], minor[i]);
                (*f->found)++;
            }
        }

        if (f->copy->failed && !f->failed) {
            f->failed = 1;
            snprintf(f->err, f->errlen, "%s", f->copy->err);
        }

        rc = f->failed ? -1 : 0;
        pthread_mutex_unlock(&f->lock);
    }

    free(deals);
    return rc;
}


/* the currency of a login the credit does not name: its own group's */
static int
mc_recon_fetch_group_of(mc_fetch_t *f, mc_mt5_session_t *s, uint64_t login,
    mc_mt5_group_t *g)
{
    int            retcode;
    char           what[64];
    mc_mt5_rc_e    rc;
    mc_mt5_user_t  u;

    snprintf(what, sizeof(what), "user/get %" PRIu64, login);
    rc = mc_mt5_user_get(s, login, &u, &retcode);
    if (rc == MC_MT5_OK) {
        snprintf(what, sizeof(what), "group/get of login %" PRIu64, login);
        rc = mc_mt5_group_get(s, u.group, g, &retcode);
    }

    if (rc != MC_MT5_OK) {
        mc_recon_fetch_fail(f, s, rc, retcode, what);
        return -1;
    }

    return 0;
}
