/*
 * Copyright (C) mt5-credit
 *
 * The book: groups, managers, accounts and deals, and the one operation
 * that changes money, /api/trade/balance, with the rules of MQ-BAL; and
 * trades (buys and sells with a volume, no money), planted by tests.
 * Every change is journaled (mt5sim_journal.c) before it is applied, so
 * a restarted simulator has the same deals, balances and next ticket.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "mt5sim.h"


#define mt5sim_err(err, ...)  snprintf(err, MT5SIM_ERR_MAX, __VA_ARGS__)


static int mt5sim_json_u64(json_t *v, uint64_t *out);
static int mt5sim_json_bool(json_t *obj, const char *key, int dflt,
    int *out);
static void mt5sim_manager_free(mt5sim_manager_t *m);
static size_t mt5sim_account_slot(mt5sim_ledger_t *l, uint64_t login);
static int mt5sim_account_index(mt5sim_account_t *a,
    const mt5sim_deal_t *deals, size_t idx);
static int64_t mt5sim_free_margin(const mt5sim_account_t *a);
static int mt5sim_balance_rules(mt5sim_ledger_t *l,
    const mt5sim_account_t *a, const mt5sim_balance_req_t *r,
    int64_t amount);
static json_t *mt5sim_deal_record(const mt5sim_deal_t *d);
static int mt5sim_deal_write(mt5sim_ledger_t *l, const mt5sim_deal_t *d,
    uint64_t *seq, char *err);


int
mt5sim_ledger_init(mt5sim_ledger_t *l)
{
    memset(l, 0, sizeof(*l));
    l->next_ticket = 100001;
    l->outside_retcode = MT5_RET_ERR_PERMISSIONS;
    l->comment_units = 31;
    l->journal.fd = -1;
    l->journal.lock_fd = -1;
    l->journal.fsync = 1;
    if (pthread_mutex_init(&l->lock, NULL) != 0
        || pthread_mutex_init(&l->journal.sync_lock, NULL) != 0)
    {
        return -1;
    }
    return 0;
}


void
mt5sim_ledger_free(mt5sim_ledger_t *l)
{
    size_t  i;

    mt5sim_journal_close(&l->journal);
    for (i = 0; i < l->nmanagers; i++) {
        mt5sim_manager_free(l->managers[i]);
    }
    for (i = 0; i < l->naccounts; i++) {
        free(l->accounts[i]->deals);
        free(l->accounts[i]);
    }
    free(l->managers);
    free(l->accounts);
    free(l->groups);
    free(l->deals);
    pthread_mutex_destroy(&l->journal.sync_lock);
    pthread_mutex_destroy(&l->lock);
}


int64_t
mt5sim_realtime_ms(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


int64_t
mt5sim_monotonic_ms(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


/* the platform's trading time: UTC + the server offset (MQ-TIMECUR) */
int64_t
mt5sim_server_ms(mt5sim_ledger_t *l)
{
    int  off = __atomic_load_n(&l->offset_minutes, __ATOMIC_RELAXED);

    return mt5sim_realtime_ms() + (int64_t) off * 60000;
}


/* ------------------------------------------------------------ upserts */

static int
mt5sim_json_u64(json_t *v, uint64_t *out)
{
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (uint64_t) json_integer_value(v);
        return 0;
    }
    if (json_is_string(v)) {
        return mt5sim_parse_u64(json_string_value(v), out);
    }
    return -1;
}


static int
mt5sim_json_bool(json_t *obj, const char *key, int dflt, int *out)
{
    json_t  *v = json_object_get(obj, key);

    if (v == NULL || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    if (!json_is_boolean(v)) {
        return -1;
    }
    *out = json_is_true(v);
    return 0;
}


mt5sim_group_t *
mt5sim_ledger_group(mt5sim_ledger_t *l, const char *name)
{
    size_t  i;

    /* MT5 group names are case-insensitive */
    for (i = 0; i < l->ngroups; i++) {
        if (strcasecmp(l->groups[i].name, name) == 0) {
            return &l->groups[i];
        }
    }
    return NULL;
}


/* {"group":"real\\usd","currency":"USD","currency_digits":2} */
int
mt5sim_ledger_put_group(mt5sim_ledger_t *l, json_t *spec, char *err)
{
    mt5sim_group_t   g, *slot, *v;
    const char      *name, *cur;
    json_t          *d;
    int              rc = -1;

    memset(&g, 0, sizeof(g));
    name = json_string_value(json_object_get(spec, "group"));
    cur = json_string_value(json_object_get(spec, "currency"));
    d = json_object_get(spec, "currency_digits");
    if (name == NULL || *name == '\0' || strlen(name) >= sizeof(g.name)) {
        mt5sim_err(err, "group: \"group\" must be a name");
        return -1;
    }
    if (cur == NULL || *cur == '\0' || strlen(cur) >= sizeof(g.currency)) {
        mt5sim_err(err, "group %s: \"currency\" must be a code", name);
        return -1;
    }
    if (!json_is_integer(d) || json_integer_value(d) < 0
        || json_integer_value(d) > MT5SIM_MONEY_DIGITS)
    {
        mt5sim_err(err, "group %s: \"currency_digits\" must be 0..%d",
                   name, MT5SIM_MONEY_DIGITS);
        return -1;
    }
    strcpy(g.name, name);
    strcpy(g.currency, cur);
    g.digits = (int) json_integer_value(d);

    pthread_mutex_lock(&l->lock);
    if (mt5sim_journal_record(l, "group", spec, err) != 0) {
        goto done;
    }
    slot = mt5sim_ledger_group(l, name);
    if (slot == NULL) {
        v = realloc(l->groups, (l->ngroups + 1) * sizeof(*v));
        if (v == NULL) {
            mt5sim_err(err, "group %s: out of memory", name);
            goto done;
        }
        l->groups = v;
        slot = &l->groups[l->ngroups++];
    }
    *slot = g;
    rc = 0;
done:
    pthread_mutex_unlock(&l->lock);
    return rc;
}


static void
mt5sim_manager_free(mt5sim_manager_t *m)
{
    size_t  i;

    if (m == NULL) {
        return;
    }
    for (i = 0; i < m->nmasks; i++) {
        free(m->masks[i]);
    }
    free(m->masks);
    free(m->password);
    free(m);
}


mt5sim_manager_t *
mt5sim_ledger_manager(mt5sim_ledger_t *l, uint64_t login)
{
    size_t  i;

    for (i = 0; i < l->nmanagers; i++) {
        if (l->managers[i]->login == login) {
            return l->managers[i];
        }
    }
    return NULL;
}


/*
 * {"login":1000,"password":"…","accountant":true,"groups":["real\\*"],
 *  "read_accounts":true,"read_deals":true,"enabled":true}
 */
int
mt5sim_ledger_put_manager(mt5sim_ledger_t *l, json_t *spec, char *err)
{
    mt5sim_manager_t   *m, **v;
    json_t             *groups, *g;
    const char         *pw;
    size_t              i;
    int                 rc = -1;

    m = calloc(1, sizeof(*m));
    if (m == NULL) {
        mt5sim_err(err, "manager: out of memory");
        return -1;
    }
    if (mt5sim_json_u64(json_object_get(spec, "login"), &m->login) != 0
        || m->login == 0)
    {
        mt5sim_err(err, "manager: \"login\" must be a positive integer");
        goto fail;
    }
    pw = json_string_value(json_object_get(spec, "password"));
    if (pw == NULL || !mt5sim_utf8_valid(pw, strlen(pw))) {
        mt5sim_err(err, "manager %llu: \"password\" must be UTF-8 text",
                   (unsigned long long) m->login);
        goto fail;
    }
    if (mt5sim_json_bool(spec, "accountant", 0, &m->accountant) != 0
        || mt5sim_json_bool(spec, "read_accounts", 1, &m->read_accounts)
        || mt5sim_json_bool(spec, "read_deals", 1, &m->read_deals)
        || mt5sim_json_bool(spec, "enabled", 1, &m->enabled))
    {
        mt5sim_err(err, "manager %llu: permission flags must be booleans",
                   (unsigned long long) m->login);
        goto fail;
    }
    m->password = strdup(pw);
    groups = json_object_get(spec, "groups");
    if (groups == NULL) {
        m->masks = calloc(1, sizeof(char *));
        if (m->masks == NULL || m->password == NULL
            || (m->masks[0] = strdup("*")) == NULL)
        {
            mt5sim_err(err, "manager: out of memory");
            goto fail;
        }
        m->nmasks = 1;
    } else if (json_is_array(groups)) {
        m->masks = calloc(json_array_size(groups) + 1, sizeof(char *));
        if (m->masks == NULL || m->password == NULL) {
            mt5sim_err(err, "manager: out of memory");
            goto fail;
        }
        json_array_foreach(groups, i, g) {
            if (!json_is_string(g) || json_string_length(g) == 0) {
                mt5sim_err(err, "manager %llu: \"groups\" holds masks",
                           (unsigned long long) m->login);
                goto fail;
            }
            if ((m->masks[m->nmasks] = strdup(json_string_value(g)))
                == NULL)
            {
                mt5sim_err(err, "manager: out of memory");
                goto fail;
            }
            m->nmasks++;
        }
    } else {
        mt5sim_err(err, "manager %llu: \"groups\" must be an array",
                   (unsigned long long) m->login);
        goto fail;
    }

    pthread_mutex_lock(&l->lock);
    if (mt5sim_journal_record(l, "manager", spec, err) != 0) {
        goto done;
    }
    for (i = 0; i < l->nmanagers; i++) {
        if (l->managers[i]->login == m->login) {
            mt5sim_manager_free(l->managers[i]);
            l->managers[i] = m;
            m = NULL;
            rc = 0;
            goto done;
        }
    }
    v = realloc(l->managers, (l->nmanagers + 1) * sizeof(*v));
    if (v == NULL) {
        mt5sim_err(err, "manager: out of memory");
        goto done;
    }
    l->managers = v;
    l->managers[l->nmanagers++] = m;
    m = NULL;
    rc = 0;
done:
    pthread_mutex_unlock(&l->lock);
fail:
    mt5sim_manager_free(m);
    return rc;
}


/* where `login` is, or would be inserted, in the sorted accounts */
static size_t
mt5sim_account_slot(mt5sim_ledger_t *l, uint64_t login)
{
    size_t  lo = 0, hi = l->naccounts, mid;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (l->accounts[mid]->login < login) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}


mt5sim_account_t *
mt5sim_ledger_account(mt5sim_ledger_t *l, uint64_t login)
{
    size_t  i = mt5sim_account_slot(l, login);

    if (i < l->naccounts && l->accounts[i]->login == login) {
        return l->accounts[i];
    }
    return NULL;
}


/*
 * {"login":70001,"group":"real\\usd","balance":"0.00","credit":"0.00",
 *  "margin":"0.00","rights":1,"leverage":100,"no_trade_state":false,
 *  "name":"…"}: adds the account, or replaces all but its deal history.
 */
int
mt5sim_ledger_put_account(mt5sim_ledger_t *l, json_t *spec, char *err)
{
    mt5sim_account_t   a, *slot, **v;
    mt5sim_group_t     *g;
    const char         *group, *name;
    json_t             *j;
    uint64_t            u;
    size_t              i;
    int                 rc = -1;

    memset(&a, 0, sizeof(a));
    if (mt5sim_json_u64(json_object_get(spec, "login"), &a.login) != 0
        || a.login == 0)
    {
        mt5sim_err(err, "account: \"login\" must be a positive integer");
        return -1;
    }
    group = json_string_value(json_object_get(spec, "group"));
    name = json_string_value(json_object_get(spec, "name"));
    if (group == NULL || strlen(group) >= sizeof(a.group)
        || (name && strlen(name) >= sizeof(a.name)))
    {
        mt5sim_err(err, "account %llu: \"group\" must be a group name",
                   (unsigned long long) a.login);
        return -1;
    }
    a.rights = 1;
    a.leverage = 100;
    j = json_object_get(spec, "rights");
    if (j != NULL && mt5sim_json_u64(j, &a.rights) != 0) {
        mt5sim_err(err, "account %llu: \"rights\" must be an integer",
                   (unsigned long long) a.login);
        return -1;
    }
    j = json_object_get(spec, "leverage");
    if (j != NULL) {
        if (mt5sim_json_u64(j, &u) != 0 || u == 0 || u > 1000000000) {
            mt5sim_err(err, "account %llu: \"leverage\" must be positive",
                       (unsigned long long) a.login);
            return -1;
        }
        a.leverage = (int64_t) u;
    }
    if (mt5sim_json_bool(spec, "no_trade_state", 0, &a.no_trade_state)) {
        mt5sim_err(err, "account %llu: \"no_trade_state\" must be a "
                   "boolean", (unsigned long long) a.login);
        return -1;
    }
    snprintf(a.name, sizeof(a.name), "%s", name ? name : "");

    pthread_mutex_lock(&l->lock);
    g = mt5sim_ledger_group(l, group);
    if (g == NULL) {
        mt5sim_err(err, "account %llu: unknown group \"%s\"",
                   (unsigned long long) a.login, group);
        goto done;
    }
    strcpy(a.group, g->name);
    if (mt5sim_money_json(json_object_get(spec, "balance"), g->digits,
                          &a.balance)
        || mt5sim_money_json(json_object_get(spec, "credit"), g->digits,
                             &a.credit)
        || mt5sim_money_json(json_object_get(spec, "margin"), g->digits,
                             &a.margin))
    {
        mt5sim_err(err, "account %llu: balance, credit and margin must be "
                   "decimal strings with at most %d decimals",
                   (unsigned long long) a.login, g->digits);
        goto done;
    }
    if (mt5sim_journal_record(l, "account", spec, err) != 0) {
        goto done;
    }

    slot = mt5sim_ledger_account(l, a.login);
    if (slot != NULL) {
        /* the history stays: a replaced account keeps its deals */
        a.deals = slot->deals;
        a.ndeals = slot->ndeals;
        a.deals_cap = slot->deals_cap;
        a.registered = slot->registered;
        *slot = a;
        rc = 0;
        goto done;
    }
    if (l->naccounts == l->accounts_cap) {
        size_t cap = l->accounts_cap ? 2 * l->accounts_cap : 64;
        v = realloc(l->accounts, cap * sizeof(*v));
        if (v == NULL) {
            mt5sim_err(err, "account: out of memory");
            goto done;
        }
        l->accounts = v;
        l->accounts_cap = cap;
    }
    slot = malloc(sizeof(*slot));
    if (slot == NULL) {
        mt5sim_err(err, "account: out of memory");
        goto done;
    }
    a.registered = mt5sim_server_ms(l) / 1000;
    *slot = a;
    i = mt5sim_account_slot(l, a.login);
    memmove(&l->accounts[i + 1], &l->accounts[i],
            (l->naccounts - i) * sizeof(*l->accounts));
    l->accounts[i] = slot;
    l->naccounts++;
    rc = 0;
done:
    pthread_mutex_unlock(&l->lock);
    return rc;
}


int
mt5sim_ledger_set_offset(mt5sim_ledger_t *l, int minutes, char *err)
{
    json_t  *data;
    int      rc;

    if (minutes < -24 * 60 || minutes > 24 * 60) {
        mt5sim_err(err, "offset_minutes must be within a day");
        return -1;
    }
    data = json_pack("{s:i}", "offset_minutes", minutes);
    pthread_mutex_lock(&l->lock);
    rc = mt5sim_journal_record(l, "time", data, err);
    if (rc == 0) {
        __atomic_store_n(&l->offset_minutes, minutes, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&l->lock);
    json_decref(data);
    return rc;
}


/* ------------------------------------------------------------ reads */

int
mt5sim_deal_cmp(const mt5sim_deal_t *a, const mt5sim_deal_t *b)
{
    int64_t  ta = a->time_msc / 1000, tb = b->time_msc / 1000;

    if (ta != tb) {
        return ta < tb ? -1 : 1;
    }
    if (a->ticket != b->ticket) {
        return a->ticket < b->ticket ? -1 : 1;
    }
    return 0;
}


const mt5sim_deal_t *
mt5sim_ledger_deal(mt5sim_ledger_t *l, uint64_t ticket)
{
    size_t  lo = 0, hi = l->ndeals, mid;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (l->deals[mid].ticket < ticket) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (lo < l->ndeals && l->deals[lo].ticket == ticket) {
        return &l->deals[lo];
    }
    return NULL;
}


int
mt5sim_ledger_visible(mt5sim_ledger_t *l, const mt5sim_manager_t *m,
    const mt5sim_account_t *a)
{
    (void) l;
    return mt5sim_masks_match((const char *const *) m->masks, m->nmasks,
                              a->group);
}


/*
 * May manager `manager` read `login`?  Returns 0 with *acc, or the
 * retcode: 8 without the permission, 13 for no such login, the
 * configured code (8) for a login outside the manager's groups.
 */
int
mt5sim_ledger_reach(mt5sim_ledger_t *l, uint64_t manager, uint64_t login,
    int need_deals, mt5sim_account_t **acc)
{
    mt5sim_manager_t  *m = mt5sim_ledger_manager(l, manager);
    mt5sim_account_t  *a;

    if (m == NULL || !(need_deals ? m->read_deals : m->read_accounts)) {
        return MT5_RET_ERR_PERMISSIONS;
    }
    a = mt5sim_ledger_account(l, login);
    if (a == NULL) {
        return MT5_RET_ERR_NOTFOUND;
    }
    if (!mt5sim_ledger_visible(l, m, a)) {
        return l->outside_retcode;
    }
    *acc = a;
    return MT5_RET_OK;
}


/* the deals of `a` with from <= Time <= to (seconds, server time) */
void
mt5sim_ledger_range(mt5sim_ledger_t *l, const mt5sim_account_t *a,
    int64_t from, int64_t to, size_t *first, size_t *count)
{
    size_t  lo = 0, hi = a->ndeals, mid, start;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (l->deals[a->deals[mid]].time_msc / 1000 < from) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    start = lo;
    hi = a->ndeals;
    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (l->deals[a->deals[mid]].time_msc / 1000 <= to) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *first = start;
    *count = from > to ? 0 : lo - start;
}


/* ------------------------------------------------------------ deals */

/* keeps the account's index ordered by (Time, Deal) */
static int
mt5sim_account_index(mt5sim_account_t *a, const mt5sim_deal_t *deals,
    size_t idx)
{
    size_t   lo = 0, hi = a->ndeals, mid, cap, *v;

    if (a->ndeals == a->deals_cap) {
        cap = a->deals_cap ? 2 * a->deals_cap : 16;
        v = realloc(a->deals, cap * sizeof(*v));
        if (v == NULL) {
            return -1;
        }
        a->deals = v;
        a->deals_cap = cap;
    }
    /* nearly always the end: the clock only goes back with the offset */
    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (mt5sim_deal_cmp(&deals[a->deals[mid]], &deals[idx]) < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    memmove(&a->deals[lo + 1], &a->deals[lo],
            (a->ndeals - lo) * sizeof(*a->deals));
    a->deals[lo] = idx;
    a->ndeals++;
    return 0;
}


/* appends an executed deal and moves the money; the lock is held */
int
mt5sim_ledger_add_deal(mt5sim_ledger_t *l, const mt5sim_deal_t *d,
    char *err)
{
    mt5sim_account_t  *a = mt5sim_ledger_account(l, d->login);
    mt5sim_deal_t     *v;
    int64_t           *side;
    size_t             cap;

    if (a == NULL) {
        mt5sim_err(err, "deal %llu: unknown login %llu",
                   (unsigned long long) d->ticket,
                   (unsigned long long) d->login);
        return -1;
    }
    if (l->ndeals && d->ticket <= l->deals[l->ndeals - 1].ticket) {
        mt5sim_err(err, "deal %llu: tickets must grow",
                   (unsigned long long) d->ticket);
        return -1;
    }
    if (l->ndeals == l->deals_cap) {
        cap = l->deals_cap ? 2 * l->deals_cap : 1024;
        v = realloc(l->deals, cap * sizeof(*v));
        if (v == NULL) {
            mt5sim_err(err, "deal: out of memory");
            return -1;
        }
        l->deals = v;
        l->deals_cap = cap;
    }
    l->deals[l->ndeals] = *d;
    if (mt5sim_account_index(a, l->deals, l->ndeals) != 0) {
        mt5sim_err(err, "deal: out of memory");
        return -1;
    }
    l->ndeals++;

    side = (d->action == 3 || d->action == 6) ? &a->credit : &a->balance;
    *side += d->amount;
    if (d->ticket >= l->next_ticket) {
        l->next_ticket = d->ticket + 1;
    }
    return 0;
}


static json_t *
mt5sim_deal_record(const mt5sim_deal_t *d)
{
    return json_pack("{s:s,s:I,s:I,s:I,s:i,s:i,s:I,s:I,s:I,s:s}",
                     "op", "deal",
                     "ticket", (json_int_t) d->ticket,
                     "login", (json_int_t) d->login,
                     "dealer", (json_int_t) d->dealer,
                     "action", d->action,
                     "digits", d->digits,
                     "amount", (json_int_t) d->amount,
                     "volume", (json_int_t) d->volume,
                     "time_msc", (json_int_t) d->time_msc,
                     "comment", d->comment);
}


int
mt5sim_ledger_replay_deal(mt5sim_ledger_t *l, json_t *rec, char *err)
{
    mt5sim_deal_t   d;
    json_int_t      ticket, login, dealer, amount, msc, volume = 0;
    const char     *comment;
    int             action, digits;

    /* "volume" is optional: journals from before trades have none */
    memset(&d, 0, sizeof(d));
    if (json_unpack(rec, "{s:I,s:I,s:I,s:i,s:i,s:I,s?I,s:I,s:s}",
                    "ticket", &ticket, "login", &login, "dealer", &dealer,
                    "action", &action, "digits", &digits, "amount", &amount,
                    "volume", &volume, "time_msc", &msc, "comment", &comment)
        != 0
        || volume < 0 || (uint64_t) volume > MT5SIM_VOLUME_MAX
        || strlen(comment) >= sizeof(d.comment))
    {
        mt5sim_err(err, "malformed deal record");
        return -1;
    }
    d.ticket = (uint64_t) ticket;
    d.login = (uint64_t) login;
    d.dealer = (uint64_t) dealer;
    d.action = action;
    d.digits = digits;
    d.amount = amount;
    d.volume = (uint64_t) volume;
    d.time_msc = msc;
    strcpy(d.comment, comment);
    return mt5sim_ledger_add_deal(l, &d, err);
}


/*
 * Journals a new deal, then applies it; the lock is held.  Written before
 * it counts: a crash after this replays the deal.  *seq is what the
 * caller syncs once the lock is let go (0: no journal).
 */
static int
mt5sim_deal_write(mt5sim_ledger_t *l, const mt5sim_deal_t *d, uint64_t *seq,
    char *err)
{
    json_t  *rec;
    int      rc;

    *seq = 0;
    if (l->journal.fd >= 0) {
        rec = mt5sim_deal_record(d);
        rc = mt5sim_journal_append(&l->journal, rec, seq, err);
        json_decref(rec);
        if (rc != 0) {
            return -1;
        }
    }
    return mt5sim_ledger_add_deal(l, d, err);
}


/* ------------------------------------------------------------ balance */

static int64_t
mt5sim_free_margin(const mt5sim_account_t *a)
{
    /* no positions here: equity = balance + credit */
    return a->balance + a->credit - a->margin;
}


/* MQ-BAL's refusals for a valid amount; 0 when the operation may run */
static int
mt5sim_balance_rules(mt5sim_ledger_t *l, const mt5sim_account_t *a,
    const mt5sim_balance_req_t *r, int64_t amount)
{
    int      credit_side = r->type == 3 || r->type == 6;
    int64_t  out, next;

    if (amount == 0) {
        return MT5_RET_ERR_PARAMS;
    }
    if (amount > MT5SIM_MONEY_LIMIT || amount < -MT5SIM_MONEY_LIMIT) {
        return MT5_RET_TRADE_MAX_MONEY;
    }
    if (amount < 0) {
        out = -amount;
        if (credit_side ? out > a->credit : out > a->balance) {
            return MT5_RET_REQUEST_NO_MONEY;
        }
        if (r->check_margin
            && !(r->type == 5 && l->correction_skips_margin)
            && out > mt5sim_free_margin(a))
        {
            return MT5_RET_REQUEST_NO_MONEY;
        }
    }
    if (__builtin_add_overflow(credit_side ? a->credit : a->balance,
                               amount, &next)
        || next > 90 * MT5SIM_MONEY_LIMIT)
    {
        return MT5_RET_TRADE_MAX_MONEY;
    }
    return MT5_RET_OK;
}


/*
 * /api/trade/balance for manager `manager`, the type already checked.
 * The deal is on disk (fsync'd unless --no-fsync) before this returns 0.
 */
int
mt5sim_ledger_balance(mt5sim_ledger_t *l, uint64_t manager,
    const mt5sim_balance_req_t *r, uint64_t *ticket, char *err)
{
    mt5sim_manager_t  *m;
    mt5sim_account_t  *a;
    mt5sim_group_t    *g;
    mt5sim_deal_t      d;
    uint64_t           seq = 0;
    int64_t            amount;
    size_t             n;
    int                rc;

    err[0] = '\0';
    pthread_mutex_lock(&l->lock);

    m = mt5sim_ledger_manager(l, manager);
    if (m == NULL || !m->accountant) {
        rc = MT5_RET_ERR_PERMISSIONS;
        goto done;
    }
    a = mt5sim_ledger_account(l, r->login);
    if (a == NULL) {
        rc = MT5_RET_ERR_NOTFOUND;
        goto done;
    }
    if (!mt5sim_ledger_visible(l, m, a)) {
        rc = l->outside_retcode;
        goto done;
    }
    g = mt5sim_ledger_group(l, a->group);
    if (g == NULL) {
        mt5sim_err(err, "login %llu: its group is gone",
                   (unsigned long long) a->login);
        rc = MT5_RET_ERR;
        goto done;
    }
    rc = mt5sim_money_parse(r->amount, g->digits, &amount);
    if (rc != 0) {
        rc = rc == MT5SIM_MONEY_BIG ? MT5_RET_TRADE_MAX_MONEY
                                    : MT5_RET_ERR_PARAMS;
        goto done;
    }
    rc = mt5sim_balance_rules(l, a, r, amount);
    if (rc != MT5_RET_OK) {
        goto done;
    }

    memset(&d, 0, sizeof(d));
    d.ticket = l->next_ticket;
    d.login = a->login;
    d.dealer = m->login;
    d.action = r->type;
    d.digits = g->digits;
    d.amount = amount;
    d.time_msc = r->time_msc != 0 ? r->time_msc : mt5sim_server_ms(l);
    n = mt5sim_utf16_prefix(r->comment, l->comment_units);
    if (n >= sizeof(d.comment)) {
        n = sizeof(d.comment) - 1;
    }
    memcpy(d.comment, r->comment, n);
    d.comment[n] = '\0';

    if (mt5sim_deal_write(l, &d, &seq, err) != 0) {
        rc = MT5_RET_ERR;
        goto done;
    }
    *ticket = d.ticket;
    pthread_mutex_unlock(&l->lock);

    /* group commit: one fdatasync covers every deal written meanwhile */
    if (seq && mt5sim_journal_sync(&l->journal, seq, err) != 0) {
        return MT5_RET_ERR;
    }
    return MT5_RET_OK;

done:
    pthread_mutex_unlock(&l->lock);
    return rc;
}


/* ------------------------------------------------------------ trades */

/*
 * A client's buy (action 0) or sell (1) of `volume` (1/10000 lot), as a
 * deal with no money: profit 0, so the balance stays, and no dealer.
 * Only tests plant these (the control port): the risk rules read the
 * volume traded since a deposit.  Durable when it returns 0, as balance
 * operations are.
 */
int
mt5sim_ledger_trade(mt5sim_ledger_t *l, uint64_t login, int action,
    uint64_t volume, int64_t time_msc, uint64_t *ticket, char *err)
{
    mt5sim_account_t  *a;
    mt5sim_group_t    *g;
    mt5sim_deal_t      d;
    uint64_t           seq = 0;
    int                rc;

    err[0] = '\0';
    if ((action != 0 && action != 1) || volume == 0
        || volume > MT5SIM_VOLUME_MAX || time_msc < 0)
    {
        mt5sim_err(err, "a trade needs action 0 or 1 and a volume of "
                   "1..%llu", (unsigned long long) MT5SIM_VOLUME_MAX);
        return MT5_RET_ERR_PARAMS;
    }

    pthread_mutex_lock(&l->lock);

    a = mt5sim_ledger_account(l, login);
    if (a == NULL) {
        mt5sim_err(err, "no login %llu", (unsigned long long) login);
        rc = MT5_RET_ERR_NOTFOUND;
        goto done;
    }
    g = mt5sim_ledger_group(l, a->group);
    if (g == NULL) {
        mt5sim_err(err, "login %llu: its group is gone",
                   (unsigned long long) a->login);
        rc = MT5_RET_ERR;
        goto done;
    }

    memset(&d, 0, sizeof(d));
    d.ticket = l->next_ticket;
    d.login = a->login;
    d.action = action;
    d.digits = g->digits;
    d.volume = volume;
    d.time_msc = time_msc != 0 ? time_msc : mt5sim_server_ms(l);

    if (mt5sim_deal_write(l, &d, &seq, err) != 0) {
        rc = MT5_RET_ERR;
        goto done;
    }
    *ticket = d.ticket;
    pthread_mutex_unlock(&l->lock);

    /* group commit, shared with the balance operations */
    if (seq && mt5sim_journal_sync(&l->journal, seq, err) != 0) {
        return MT5_RET_ERR;
    }
    return MT5_RET_OK;

done:
    pthread_mutex_unlock(&l->lock);
    return rc;
}
