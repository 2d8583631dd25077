/*
 * Copyright (C) mt5-credit
 */


#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc_log.h"
#include "mc_money.h"
#include "mc_mt5.h"
#include "mc_recon_fetch.h"


typedef struct {
    mc_server_config_t      *srv;
    mc_mt5_session_t        *s;
    mc_pgcopy_t             *copy;
    int64_t                  run_id;
    int64_t                  offset;       /* server time - UTC */
    int64_t                  from_utc, to_utc;
    int64_t                  from, to;     /* server time, [from, to) */
    volatile sig_atomic_t   *stop;
    mc_recon_fetch_stats_t  *st;
    char                    *err;
    size_t                   errlen;
} mc_fetch_t;


static int mc_recon_fetch_server(mc_fetch_t *f);
static int mc_recon_fetch_group(mc_fetch_t *f, const char *group);
static int mc_recon_fetch_login(mc_fetch_t *f, const mc_mt5_group_t *g,
    uint64_t login);
static int mc_recon_fetch_lost(mc_fetch_t *f, mc_mt5_rc_e rc, int retcode,
    const char *what);


int
mc_recon_fetch(mc_config_t *cfg, mc_pgcopy_t *copy, int64_t run_id,
    int64_t from_utc, int64_t to_utc, volatile sig_atomic_t *stop,
    mc_recon_fetch_stats_t *st, char *err, size_t errlen)
{
    int         i, rc;
    mc_fetch_t  f;

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
        f.copy = copy;
        f.run_id = run_id;
        f.from_utc = from_utc;
        f.to_utc = to_utc;
        f.stop = stop;
        f.st = st;
        f.err = err;
        f.errlen = errlen;

        f.s = mc_mt5_session_new(&f.srv->mt5);
        if (f.s == NULL) {
            snprintf(err, errlen, "MT5 server %s: out of memory",
                     f.srv->name);
            return -1;
        }

        rc = mc_recon_fetch_server(&f);
        if (rc == 0) {
            /* only a session that answered everything says goodbye */
            mc_mt5_close(f.s);
        }
        mc_mt5_session_free(f.s);

        if (rc != 0) {
            return -1;
        }

        st->servers++;
    }

    return 0;
}


static int
mc_recon_fetch_server(mc_fetch_t *f)
{
    int          retcode;
    char         list[sizeof(f->srv->recon_groups)];
    char        *group, *save, *end;
    int64_t      now;
    mc_mt5_rc_e  rc;

    rc = mc_mt5_ensure(f->s, &retcode);
    if (rc != MC_MT5_OK) {
        return mc_recon_fetch_lost(f, rc, retcode, "authentication");
    }

    rc = mc_mt5_time(f->s, &now, &f->offset, &retcode);
    if (rc != MC_MT5_OK) {
        return mc_recon_fetch_lost(f, rc, retcode, "time/server");
    }

    /* the window in the server's own clock (reference section 7) */
    f->from = f->from_utc + f->offset;
    f->to = f->to_utc + f->offset;

    mc_log(MC_LOG_INFO, "reconcile: MT5 server %s: clock UTC%+" PRId64
           " min", f->srv->name, f->offset / 60);

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

        if (mc_recon_fetch_group(f, group) != 0) {
            return -1;
        }
    }

    return 0;
}


static int
mc_recon_fetch_group(mc_fetch_t *f, const char *group)
{
    int              retcode;
    size_t           i, n;
    uint64_t        *logins;
    mc_mt5_rc_e      rc;
    mc_mt5_group_t   g;
    char             what[200];

    snprintf(what, sizeof(what), "group/get %s", group);
    rc = mc_mt5_group_get(f->s, group, &g, &retcode);
    if (rc != MC_MT5_OK) {
        return mc_recon_fetch_lost(f, rc, retcode, what);
    }

    snprintf(what, sizeof(what), "user/logins of %s", group);
    rc = mc_mt5_logins(f->s, group, &logins, &n, &retcode);
    if (rc != MC_MT5_OK) {
        return mc_recon_fetch_lost(f, rc, retcode, what);
    }

    f->st->groups++;

    for (i = 0; i < n; i++) {
        if (*f->stop) {
            snprintf(f->err, f->errlen, "stopped by a signal");
            free(logins);
            return -1;
        }

        if (mc_recon_fetch_login(f, &g, logins[i]) != 0) {
            free(logins);
            return -1;
        }
    }

    free(logins);
    return 0;
}


static int
mc_recon_fetch_login(mc_fetch_t *f, const mc_mt5_group_t *g, uint64_t login)
{
    int             retcode;
    size_t          i, n;
    int64_t         minor;
    char            what[64];
    mc_mt5_rc_e     rc;
    mc_mt5_deal_t  *deals, *d;

    snprintf(what, sizeof(what), "deals of login %" PRIu64, login);

    /* MT5's bounds are inclusive server times */
    rc = mc_mt5_deals(f->s, login, f->from, f->to - 1, &deals, &n,
                      &retcode);
    if (rc != MC_MT5_OK) {
        return mc_recon_fetch_lost(f, rc, retcode, what);
    }

    f->st->logins++;
    f->st->deals += n;

    for (i = 0; i < n; i++) {
        d = &deals[i];

        if (d->action != MC_MT5_DEAL_BALANCE
            || d->time < f->from || d->time >= f->to)
        {
            continue;
        }

        if (mc_decimal_to_minor(d->profit, g->digits, &minor) != 0) {
            snprintf(f->err, f->errlen, "MT5 server %s: deal %" PRIu64
                     " of login %" PRIu64 ": profit is not exact in %s's "
                     "%d digits", f->srv->name, d->deal, login, g->currency,
                     g->digits);
            free(deals);
            return -1;
        }

        mc_pgcopy_i64(f->copy, f->run_id);
        mc_pgcopy_text(f->copy, f->srv->name);
        mc_pgcopy_u64(f->copy, d->deal);
        mc_pgcopy_u64(f->copy, d->login);
        mc_pgcopy_i64(f->copy, minor);
        mc_pgcopy_text(f->copy, g->currency);
        mc_pgcopy_text(f->copy, d->comment);
        mc_pgcopy_i64(f->copy, d->time - f->offset);
        mc_pgcopy_row_end(f->copy);

        f->st->balance_deals++;
    }

    free(deals);

    if (f->copy->failed) {
        snprintf(f->err, f->errlen, "%s", f->copy->err);
        return -1;
    }

    return 0;
}


static int
mc_recon_fetch_lost(mc_fetch_t *f, mc_mt5_rc_e rc, int retcode,
    const char *what)
{
    if (rc == MC_MT5_REJECTED) {
        snprintf(f->err, f->errlen, "MT5 server %s: %s refused with "
                 "retcode %d", f->srv->name, what, retcode);

    } else {
        snprintf(f->err, f->errlen, "MT5 server %s: %s: no complete "
                 "answer (%s)", f->srv->name, what, mc_mt5_error(f->s));
    }

    return -1;
}
