/*
 * Copyright (C) mt5-credit
 *
 * The /api/... commands: parameters in, the access server's JSON out.
 * Transport matters (403, faults that drop or hang, keep-alive) are
 * mt5sim_http.c's; here a command runs on an authenticated session (or
 * is one of the two auth commands) and always answers a JSON envelope
 * with the retcode first.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mt5sim.h"


#define MT5SIM_ID(f, asked) \
    (((f)->modifiers & (1u << MT5SIM_F_WRONG_LOGIN)) \
     ? ((f)->wrong_login ? (f)->wrong_login : (asked) + 1) : (asked))
#define MT5SIM_HAS(f, kind)  (((f)->modifiers & (1u << (kind))) != 0)
#define MT5SIM_PAGE_MAX      100
#define MT5SIM_MIN_VERSION   484


typedef struct {
    uint64_t    *logins;
    size_t       nlogins;
    char       **groups;
    size_t       ngroups;
    uint64_t    *tickets;
    size_t       ntickets;
    char       **symbols;
    size_t       nsymbols;
    int          kinds;         /* selectors given: login, group, ticket */
} mt5sim_batch_t;


static const char *const  mt5sim_paths[MT5SIM_EP_COUNT] = {
    [MT5SIM_EP_AUTH_START]       = "/api/auth/start",
    [MT5SIM_EP_AUTH_ANSWER]      = "/api/auth/answer",
    [MT5SIM_EP_TEST_ACCESS]      = "/api/test/access",
    [MT5SIM_EP_QUIT]             = "/api/quit",
    [MT5SIM_EP_TIME_SERVER]      = "/api/time/server",
    [MT5SIM_EP_TIME_GET]         = "/api/time/get",
    [MT5SIM_EP_USER_GET]         = "/api/user/get",
    [MT5SIM_EP_USER_ACCOUNT_GET] = "/api/user/account/get",
    [MT5SIM_EP_USER_LOGINS]      = "/api/user/logins",
    [MT5SIM_EP_GROUP_GET]        = "/api/group/get",
    [MT5SIM_EP_TRADE_BALANCE]    = "/api/trade/balance",
    [MT5SIM_EP_DEAL_GET]         = "/api/deal/get",
    [MT5SIM_EP_DEAL_GET_TOTAL]   = "/api/deal/get_total",
    [MT5SIM_EP_DEAL_GET_PAGE]    = "/api/deal/get_page",
    [MT5SIM_EP_DEAL_GET_BATCH]   = "/api/deal/get_batch",
    [MT5SIM_EP_UNKNOWN]          = "other",
};


static json_t *mt5sim_fail(int code);
static json_t *mt5sim_answer(json_t *answer);
static void mt5sim_deauth(mt5sim_t *srv, mt5sim_session_t *s);
static json_t *mt5sim_auth_start(mt5sim_t *srv, mt5sim_session_t *s,
    const mt5sim_params_t *p);
static int mt5sim_auth_answer_cmd(mt5sim_t *srv, mt5sim_session_t *s,
    const mt5sim_params_t *p, const mt5sim_fault_take_t *f,
    mt5sim_reply_t *out);
static json_t *mt5sim_time_server(mt5sim_t *srv);
static json_t *mt5sim_time_get(mt5sim_t *srv);
static json_t *mt5sim_user_get(mt5sim_t *srv, mt5sim_session_t *s,
    const mt5sim_params_t *p, const mt5sim_fault_take_t *f, int trade);
static json_t *mt5sim_user_logins(mt5sim_t *srv, mt5sim_session_t *s,
    const mt5sim_params_t *p);
static json_t *mt5sim_group_get(mt5sim_t *srv, mt5sim_session_t *s,
    const mt5sim_params_t *p);
static json_t *mt5sim_trade_balance(mt5sim_t *srv, mt5sim_session_t *s,
    const mt5sim_params_t *p);
static json_t *mt5sim_deal_get(mt5sim_t *srv, mt5sim_session_t *s,
    const mt5sim_params_t *p, const mt5sim_fault_take_t *f);
static int mt5sim_window(const mt5sim_params_t *p, uint64_t *login,
    int64_t *from, int64_t *to);
static json_t *mt5sim_deal_total(mt5sim_t *srv, mt5sim_session_t *s,
    const mt5sim_params_t *p, const mt5sim_fault_take_t *f);
static json_t *mt5sim_deal_page(mt5sim_t *srv, mt5sim_session_t *s,
    const mt5sim_params_t *p, const mt5sim_fault_take_t *f);
static size_t mt5sim_deals_shown(const mt5sim_fault_take_t *f, size_t n);
static json_t *mt5sim_deal_copies(mt5sim_t *srv, const mt5sim_deal_t *d,
    size_t n, uint64_t asked, const mt5sim_fault_take_t *f);
static json_t *mt5sim_deal_list(mt5sim_t *srv, size_t *idx, size_t n,
    uint64_t asked, const mt5sim_fault_take_t *f);
static int mt5sim_list_u64(const char *text, json_t *arr, uint64_t **v,
    size_t *n);
static int mt5sim_list_str(const char *text, json_t *arr, char ***v,
    size_t *n);
static void mt5sim_batch_free(mt5sim_batch_t *b);
static int mt5sim_batch_parse(const mt5sim_params_t *p, const char *body,
    size_t body_len, mt5sim_batch_t *b);
static int mt5sim_batch_symbol(mt5sim_t *srv, const mt5sim_batch_t *b);
static int mt5sim_ptr_cmp(const void *a, const void *b);
static size_t mt5sim_batch_select(mt5sim_ledger_t *l,
    const mt5sim_manager_t *m, const mt5sim_batch_t *b, int64_t from,
    int64_t to, const mt5sim_deal_t **sel);
static json_t *mt5sim_deal_batch(mt5sim_t *srv, mt5sim_session_t *s,
    const mt5sim_params_t *p, const char *body, size_t body_len,
    const mt5sim_fault_take_t *f);


mt5sim_endpoint_e
mt5sim_endpoint_lookup(const char *path)
{
    int  ep;

    for (ep = 0; ep < MT5SIM_EP_UNKNOWN; ep++) {
        if (strcmp(path, mt5sim_paths[ep]) == 0) {
            return (mt5sim_endpoint_e) ep;
        }
    }
    return MT5SIM_EP_UNKNOWN;
}


const char *
mt5sim_endpoint_path(mt5sim_endpoint_e ep)
{
    return ep < MT5SIM_EP_COUNT ? mt5sim_paths[ep] : "other";
}


/*
 * "<code> <text>".  Only "0 Done" and "13 Not found" are confirmed; the
 * rest follow the SDK's wording (clients must read the number only).
 */
const char *
mt5sim_retcode(int code, char *buf, size_t n)
{
    const char  *text;

    switch (code) {
    case 0:     text = "Done"; break;
    case 1:     text = "OK none"; break;
    case 2:     text = "Common error"; break;
    case 3:     text = "Invalid parameters"; break;
    case 4:     text = "Invalid data"; break;
    case 8:     text = "Not enough permissions"; break;
    case 9:     text = "Timeout"; break;
    case 10:    text = "No connection"; break;
    case 11:    text = "Service is not available"; break;
    case 12:    text = "Too frequent requests"; break;
    case 13:    text = "Not found"; break;
    case 15:    text = "Server shutdown in progress"; break;
    case 1001:  text = "Invalid account"; break;
    case 1002:  text = "Account disabled"; break;
    case 4005:  text = "Money limit exceeded"; break;
    case 10019: text = "Not enough money"; break;
    default:    text = "Error"; break;
    }
    snprintf(buf, n, "%d %s", code, text);
    return buf;
}


/* {"retcode":…,"answer":…}, retcode first; steals `answer` */
json_t *
mt5sim_envelope(const char *retcode, json_t *answer)
{
    json_t  *o = json_object();

    json_object_set_new(o, "retcode", json_string(retcode));
    if (answer != NULL) {
        json_object_set_new(o, "answer", answer);
    }
    return o;
}


static json_t *
mt5sim_fail(int code)
{
    char  buf[MT5SIM_RETCODE_MAX];

    return mt5sim_envelope(mt5sim_retcode(code, buf, sizeof(buf)), NULL);
}


static json_t *
mt5sim_answer(json_t *answer)
{
    return mt5sim_envelope("0 Done", answer);
}


static void
mt5sim_deauth(mt5sim_t *srv, mt5sim_session_t *s)
{
    if (s->authed) {
        s->authed = 0;
        mt5sim_stat_dec(&srv->stats.sessions_authenticated);
    }
}


/* ------------------------------------------------------------ auth */

/* /api/auth/start?version=&agent=&login=&type=manager; flat answer */
static json_t *
mt5sim_auth_start(mt5sim_t *srv, mt5sim_session_t *s,
    const mt5sim_params_t *p)
{
    const char  *type = mt5sim_param(p, "type");
    const char  *agent = mt5sim_param(p, "agent");
    uint64_t     version, login;
    char         hex[33], va[64];
    int          known;
    json_t      *o;

    /* a new handshake ends whatever this connection was */
    mt5sim_deauth(srv, s);
    s->started = 0;

    if (type == NULL || strcmp(type, "manager") != 0
        || mt5sim_parse_u64(mt5sim_param(p, "version"), &version) != 0
        || version < MT5SIM_MIN_VERSION
        || agent == NULL || *agent == '\0' || strchr(agent, ' ') != NULL
        || mt5sim_parse_u64(mt5sim_param(p, "login"), &login) != 0)
    {
        mt5sim_stat_inc(&srv->stats.auth_failed);
        return mt5sim_fail(MT5_RET_ERR_PARAMS);
    }

    pthread_mutex_lock(&srv->ledger.lock);
    known = mt5sim_ledger_manager(&srv->ledger, login) != NULL;
    pthread_mutex_unlock(&srv->ledger.lock);
    if (!known) {
        mt5sim_stat_inc(&srv->stats.auth_failed);
        return mt5sim_fail(MT5_RET_AUTH_ACCOUNT_INVALID);
    }
    if (mt5sim_auth_random(s->srv_rand, sizeof(s->srv_rand)) != 0) {
        return mt5sim_fail(MT5_RET_ERR);
    }
    s->started = 1;
    s->manager = login;
    s->start_ms = mt5sim_monotonic_ms();

    mt5sim_hex_encode(s->srv_rand, sizeof(s->srv_rand), hex);
    snprintf(va, sizeof(va), "%s", srv->render.version_access);
    o = json_object();
    json_object_set_new(o, "retcode", json_string("0 Done"));
    json_object_set_new(o, "version_access", json_string(va));
    json_object_set_new(o, "srv_rand", json_string(hex));
    return o;
}


/* /api/auth/answer?srv_rand_answer=&cli_rand=, on this connection */
static int
mt5sim_auth_answer_cmd(mt5sim_t *srv, mt5sim_session_t *s,
    const mt5sim_params_t *p, const mt5sim_fault_take_t *f,
    mt5sim_reply_t *out)
{
    mt5sim_manager_t  *m;
    unsigned char      h[16], want[16], got[16], cli[16], ans[16];
    char              *password = NULL, hex[33];
    int                enabled = 0, code;
    json_t            *o;

    if (!s->started) {
        mt5sim_stat_inc(&srv->stats.auth_failed);
        if (srv->opt.answer_without_start_403) {
            out->kind = MT5SIM_REPLY_FORBIDDEN;
            return 0;
        }
        out->json = mt5sim_fail(MT5_RET_ERR_PARAMS);
        return 0;
    }
    s->started = 0;             /* one answer per start */

    pthread_mutex_lock(&srv->ledger.lock);
    m = mt5sim_ledger_manager(&srv->ledger, s->manager);
    if (m != NULL) {
        password = strdup(m->password);
        enabled = m->enabled;
    }
    pthread_mutex_unlock(&srv->ledger.lock);

    if (mt5sim_monotonic_ms() - s->start_ms > srv->opt.auth_timeout_ms) {
        code = srv->opt.auth_timeout_retcode;
    } else if (password == NULL
               || mt5sim_auth_password_hash(password, h) != 0
               || mt5sim_auth_answer(h, s->srv_rand, 16, want) != 0
               || mt5sim_hex_decode(mt5sim_param(p, "srv_rand_answer"),
                                    got, 16) != 0
               || memcmp(want, got, 16) != 0)
    {
        code = MT5_RET_AUTH_ACCOUNT_INVALID;
    } else if (mt5sim_hex_decode(mt5sim_param(p, "cli_rand"), cli, 16)
               != 0)
    {
        code = MT5_RET_ERR_PARAMS;
    } else if (!enabled) {
        code = MT5_RET_AUTH_ACCOUNT_DISABLED;
    } else {
        code = MT5_RET_OK;
    }
    if (code != MT5_RET_OK || mt5sim_auth_answer(h, cli, 16, ans) != 0) {
        free(password);
        mt5sim_stat_inc(&srv->stats.auth_failed);
        out->json = mt5sim_fail(code != MT5_RET_OK ? code : MT5_RET_ERR);
        return 0;
    }
    free(password);

    if (MT5SIM_HAS(f, MT5SIM_F_BAD_CLI_RAND)) {
        ans[0] ^= 0x5a;         /* a server that does not know H */
    }
    s->authed = 1;
    mt5sim_stat_max(&srv->stats.sessions_authenticated_max,
                    mt5sim_stat_inc(&srv->stats.sessions_authenticated));
    mt5sim_stat_inc(&srv->stats.auth_ok);

    mt5sim_hex_encode(ans, sizeof(ans), hex);
    o = json_object();
    json_object_set_new(o, "retcode", json_string("0 Done"));
    json_object_set_new(o, "version_access",
                        json_string(srv->render.version_access));
    json_object_set_new(o, "version_trade",
                        json_string(srv->render.version_trade));
    json_object_set_new(o, "cli_rand_answer", json_string(hex));
    out->json = o;
    return 0;
}


/* ------------------------------------------------------------ time */

static json_t *
mt5sim_time_server(mt5sim_t *srv)
{
    int64_t  now = mt5sim_server_ms(&srv->ledger) / 1000;
    char     text[64], value[96];
    json_t  *o = json_object();

    mt5sim_render_time(now, text, sizeof(text));
    snprintf(value, sizeof(value), "%lld %s", (long long) now, text);
    json_object_set_new(o, srv->render.time_key, json_string(value));
    return mt5sim_answer(o);
}


static json_t *
mt5sim_time_get(mt5sim_t *srv)
{
    int      off = __atomic_load_n(&srv->ledger.offset_minutes,
                                   __ATOMIC_RELAXED);
    char     buf[32];
    json_t  *o = json_object();

    snprintf(buf, sizeof(buf), "%d", off);
    json_object_set_new(o, "TimeZone", json_string(buf));
    json_object_set_new(o, "Daylight", json_string("0"));
    json_object_set_new(o, "DaylightState", json_string("0"));
    return mt5sim_answer(o);
}


/* ------------------------------------------------------------ users */

/* user/get, or user/account/get when `trade` */
static json_t *
mt5sim_user_get(mt5sim_t *srv, mt5sim_session_t *s,
    const mt5sim_params_t *p, const mt5sim_fault_take_t *f, int trade)
{
    mt5sim_account_t  *a = NULL;
    uint64_t           login;
    json_t            *o;
    int                rc;

    if (mt5sim_parse_u64(mt5sim_param(p, "login"), &login) != 0) {
        return mt5sim_fail(MT5_RET_ERR_PARAMS);
    }
    pthread_mutex_lock(&srv->ledger.lock);
    rc = mt5sim_ledger_reach(&srv->ledger, s->manager, login, 0, &a);
    if (rc == MT5_RET_OK && trade && a->no_trade_state) {
        rc = MT5_RET_ERR_NOTFOUND;  /* no activity since the restart */
    }
    if (rc != MT5_RET_OK) {
        pthread_mutex_unlock(&srv->ledger.lock);
        return mt5sim_fail(rc);
    }
    o = trade ? mt5sim_render_account(&srv->ledger, a, MT5SIM_ID(f, login))
              : mt5sim_render_user(&srv->ledger, a, MT5SIM_ID(f, login));
    pthread_mutex_unlock(&srv->ledger.lock);
    return mt5sim_answer(o);
}


/* user/logins?group=<masks>: the logins as strings, ascending */
static json_t *
mt5sim_user_logins(mt5sim_t *srv, mt5sim_session_t *s,
    const mt5sim_params_t *p)
{
    const char        *group = mt5sim_param(p, "group");
    mt5sim_manager_t  *m;
    mt5sim_account_t  *a;
    json_t            *list;
    char               buf[32];
    size_t             i;

    if (group == NULL || *group == '\0') {
        return mt5sim_fail(MT5_RET_ERR_PARAMS);
    }
    pthread_mutex_lock(&srv->ledger.lock);
    m = mt5sim_ledger_manager(&srv->ledger, s->manager);
    if (m == NULL || !m->read_accounts) {
        pthread_mutex_unlock(&srv->ledger.lock);
        return mt5sim_fail(MT5_RET_ERR_PERMISSIONS);
    }
    list = json_array();
    for (i = 0; i < srv->ledger.naccounts; i++) {
        a = srv->ledger.accounts[i];
        if (mt5sim_mask_list_match(group, a->group)
            && mt5sim_ledger_visible(&srv->ledger, m, a))
        {
            snprintf(buf, sizeof(buf), "%llu", (unsigned long long) a->login);
            json_array_append_new(list, json_string(buf));
        }
    }
    pthread_mutex_unlock(&srv->ledger.lock);
    return mt5sim_answer(list);
}


/* group/get?group=real%5Cusd (or real\\usd: unescaped by the parser) */
static json_t *
mt5sim_group_get(mt5sim_t *srv, mt5sim_session_t *s,
    const mt5sim_params_t *p)
{
    const char        *name = mt5sim_param(p, "group");
    mt5sim_manager_t  *m;
    mt5sim_group_t    *g;
    json_t            *o = NULL;
    int                rc = MT5_RET_OK;

    if (name == NULL || *name == '\0') {
        return mt5sim_fail(MT5_RET_ERR_PARAMS);
    }
    pthread_mutex_lock(&srv->ledger.lock);
    m = mt5sim_ledger_manager(&srv->ledger, s->manager);
    g = mt5sim_ledger_group(&srv->ledger, name);
    if (m == NULL) {
        rc = MT5_RET_ERR_PERMISSIONS;
    } else if (g == NULL) {
        rc = MT5_RET_ERR_NOTFOUND;
    } else if (!mt5sim_masks_match((const char *const *) m->masks,
                                   m->nmasks, g->name))
    {
        rc = srv->ledger.outside_retcode;
    } else {
        o = mt5sim_render_group(g);
    }
    pthread_mutex_unlock(&srv->ledger.lock);
    return rc == MT5_RET_OK ? mt5sim_answer(o) : mt5sim_fail(rc);
}


/* ------------------------------------------------------------ balance */

/* trade/balance?login=&type=&balance=&comment=[&check_margin=0|1] */
static json_t *
mt5sim_trade_balance(mt5sim_t *srv, mt5sim_session_t *s,
    const mt5sim_params_t *p)
{
    mt5sim_balance_req_t   r;
    const char            *cm = mt5sim_param(p, "check_margin");
    const char            *comment = mt5sim_param(p, "comment");
    char                   err[MT5SIM_ERR_MAX], buf[32];
    uint64_t               ticket = 0;
    int64_t                type;
    json_t                *o;
    int                    rc;

    memset(&r, 0, sizeof(r));
    if (mt5sim_parse_u64(mt5sim_param(p, "login"), &r.login) != 0
        || mt5sim_parse_i64(mt5sim_param(p, "type"), &type) != 0
        || type < 2 || type > 6
        || (r.amount = mt5sim_param(p, "balance")) == NULL
        || (cm != NULL && strcmp(cm, "0") != 0 && strcmp(cm, "1") != 0))
    {
        return mt5sim_fail(MT5_RET_ERR_PARAMS);
    }
    r.type = (int) type;
    r.comment = comment ? comment : "";
    r.check_margin = cm == NULL || strcmp(cm, "1") == 0;

    rc = mt5sim_ledger_balance(&srv->ledger, s->manager, &r, &ticket, err);
    if (rc != MT5_RET_OK) {
        if (err[0]) {
            fprintf(stderr, "mt5sim: trade/balance: %s\n", err);
        }
        return mt5sim_fail(rc);
    }
    mt5sim_stat_inc(&srv->stats.executed[MT5SIM_EP_TRADE_BALANCE]);
    snprintf(buf, sizeof(buf), "%llu", (unsigned long long) ticket);
    o = json_object();
    json_object_set_new(o, "Ticket", json_string(buf));
    return mt5sim_answer(o);
}


/* ------------------------------------------------------------ deals */

static json_t *
mt5sim_deal_get(mt5sim_t *srv, mt5sim_session_t *s,
    const mt5sim_params_t *p, const mt5sim_fault_take_t *f)
{
    const mt5sim_deal_t  *d;
    mt5sim_account_t     *a;
    uint64_t              ticket;
    json_t               *o;
    int                   rc;

    if (mt5sim_parse_u64(mt5sim_param(p, "ticket"), &ticket) != 0) {
        return mt5sim_fail(MT5_RET_ERR_PARAMS);
    }
    pthread_mutex_lock(&srv->ledger.lock);
    d = mt5sim_ledger_deal(&srv->ledger, ticket);
    rc = d ? mt5sim_ledger_reach(&srv->ledger, s->manager, d->login, 1, &a)
           : MT5_RET_ERR_NOTFOUND;
    if (rc != MT5_RET_OK) {
        pthread_mutex_unlock(&srv->ledger.lock);
        return mt5sim_fail(rc);
    }
    o = mt5sim_render_deal(&srv->render, d, MT5SIM_ID(f, d->login));
    pthread_mutex_unlock(&srv->ledger.lock);
    return mt5sim_answer(o);
}


/* login, from, to: all required, server-time seconds */
static int
mt5sim_window(const mt5sim_params_t *p, uint64_t *login, int64_t *from,
    int64_t *to)
{
    if (mt5sim_parse_u64(mt5sim_param(p, "login"), login) != 0
        || mt5sim_parse_i64(mt5sim_param(p, "from"), from) != 0
        || mt5sim_parse_i64(mt5sim_param(p, "to"), to) != 0)
    {
        return -1;
    }
    return 0;
}


/* deal/get_total: every action of the login with from <= Time <= to */
static json_t *
mt5sim_deal_total(mt5sim_t *srv, mt5sim_session_t *s,
    const mt5sim_params_t *p, const mt5sim_fault_take_t *f)
{
    mt5sim_account_t  *a;
    uint64_t           login;
    int64_t            from, to;
    size_t             first, count;
    char               buf[32];
    json_t            *o;
    int                rc;

    if (mt5sim_window(p, &login, &from, &to) != 0) {
        return mt5sim_fail(MT5_RET_ERR_PARAMS);
    }
    pthread_mutex_lock(&srv->ledger.lock);
    rc = mt5sim_ledger_reach(&srv->ledger, s->manager, login, 1, &a);
    if (rc == MT5_RET_OK) {
        mt5sim_ledger_range(&srv->ledger, a, from, to, &first, &count);
    }
    pthread_mutex_unlock(&srv->ledger.lock);
    if (rc != MT5_RET_OK) {
        return mt5sim_fail(rc);
    }
    if (MT5SIM_HAS(f, MT5SIM_F_BAD_TOTAL) && count > 0) {
        count--;
    }
    snprintf(buf, sizeof(buf), "%zu", count);
    o = json_object();
    json_object_set_new(o, srv->render.total_key, json_string(buf));
    return mt5sim_answer(o);
}


/* how many of n deals an answer shows: the faults empty or cut a page */
static size_t
mt5sim_deals_shown(const mt5sim_fault_take_t *f, size_t n)
{
    if (MT5SIM_HAS(f, MT5SIM_F_EMPTY_PAGE)) {
        return 0;
    }
    if (MT5SIM_HAS(f, MT5SIM_F_PARTIAL_PAGE) && n > 0) {
        return n - 1;
    }
    return n;
}


/* renders deals by index; the ledger lock is held */
static json_t *
mt5sim_deal_list(mt5sim_t *srv, size_t *idx, size_t n, uint64_t asked,
    const mt5sim_fault_take_t *f)
{
    json_t               *list = json_array();
    const mt5sim_deal_t  *d;
    size_t                i;

    n = mt5sim_deals_shown(f, n);
    for (i = 0; i < n; i++) {
        d = &srv->ledger.deals[idx[i]];
        json_array_append_new(list, mt5sim_render_deal(&srv->render, d,
                              MT5SIM_ID(f, asked ? asked : d->login)));
    }
    return list;
}


/*
 * The same from copies of the deals, taken under the ledger lock and
 * rendered after it: sessions reading deals in parallel are not
 * serialized on JSON work (the simulator must not be the bottleneck of a
 * reconciliation benchmark).
 */
static json_t *
mt5sim_deal_copies(mt5sim_t *srv, const mt5sim_deal_t *d, size_t n,
    uint64_t asked, const mt5sim_fault_take_t *f)
{
    json_t  *list = json_array();
    size_t   i;

    n = mt5sim_deals_shown(f, n);
    for (i = 0; i < n; i++) {
        json_array_append_new(list, mt5sim_render_deal(&srv->render, &d[i],
                              MT5SIM_ID(f, asked ? asked : d[i].login)));
    }
    return list;
}


/* deal/get_page: offset 0-based, total <= 100, by (Time, Deal) */
static json_t *
mt5sim_deal_page(mt5sim_t *srv, mt5sim_session_t *s,
    const mt5sim_params_t *p, const mt5sim_fault_take_t *f)
{
    mt5sim_account_t  *a;
    uint64_t           login, offset, total;
    int64_t            from, to;
    size_t             first, count, n, i;
    json_t            *list;
    int                rc;
    mt5sim_deal_t      page[MT5SIM_PAGE_MAX];

    if (mt5sim_window(p, &login, &from, &to) != 0
        || mt5sim_parse_u64(mt5sim_param(p, "offset"), &offset) != 0
        || mt5sim_parse_u64(mt5sim_param(p, "total"), &total) != 0)
    {
        return mt5sim_fail(MT5_RET_ERR_PARAMS);
    }
    if (total > MT5SIM_PAGE_MAX) {
        if (!srv->opt.page_cap) {
            return mt5sim_fail(MT5_RET_ERR_PARAMS);
        }
        total = MT5SIM_PAGE_MAX;
    }
    pthread_mutex_lock(&srv->ledger.lock);
    rc = mt5sim_ledger_reach(&srv->ledger, s->manager, login, 1, &a);
    if (rc != MT5_RET_OK) {
        pthread_mutex_unlock(&srv->ledger.lock);
        return mt5sim_fail(rc);
    }
    mt5sim_ledger_range(&srv->ledger, a, from, to, &first, &count);
    n = 0;
    if (offset < count) {
        n = count - offset < total ? count - offset : total;
    }
    for (i = 0; i < n; i++) {
        page[i] = srv->ledger.deals[a->deals[first + offset + i]];
    }
    pthread_mutex_unlock(&srv->ledger.lock);

    list = mt5sim_deal_copies(srv, page, n, login, f);
    return mt5sim_answer(list);
}


/* a comma list from the query, plus a JSON array from the body */
static int
mt5sim_list_u64(const char *text, json_t *arr, uint64_t **v, size_t *n)
{
    char      *copy, *tok, *save = NULL;
    uint64_t   x, *nv;
    json_t    *j;
    size_t     i, max;

    max = (text ? strlen(text) / 2 + 1 : 0) + json_array_size(arr);
    nv = calloc(max + 1, sizeof(*nv));
    if (nv == NULL) {
        return -1;
    }
    *v = nv;
    *n = 0;
    if (text != NULL) {
        copy = strdup(text);
        if (copy == NULL) {
            return -1;
        }
        for (tok = strtok_r(copy, ",", &save); tok;
             tok = strtok_r(NULL, ",", &save))
        {
            if (mt5sim_parse_u64(tok, &x) != 0 || *n == max) {
                free(copy);
                return -1;
            }
            nv[(*n)++] = x;
        }
        free(copy);
    }
    json_array_foreach(arr, i, j) {
        if (json_is_integer(j) && json_integer_value(j) >= 0) {
            x = (uint64_t) json_integer_value(j);
        } else if (!json_is_string(j)
                   || mt5sim_parse_u64(json_string_value(j), &x) != 0)
        {
            return -1;
        }
        nv[(*n)++] = x;
    }
    return 0;
}


static int
mt5sim_list_str(const char *text, json_t *arr, char ***v, size_t *n)
{
    char      *copy, *tok, *save = NULL, **nv;
    json_t    *j;
    size_t     i, max;

    max = (text ? strlen(text) / 2 + 1 : 0) + json_array_size(arr);
    nv = calloc(max + 1, sizeof(*nv));
    if (nv == NULL) {
        return -1;
    }
    *v = nv;
    *n = 0;
    if (text != NULL) {
        copy = strdup(text);
        if (copy == NULL) {
            return -1;
        }
        for (tok = strtok_r(copy, ",", &save); tok;
             tok = strtok_r(NULL, ",", &save))
        {
            if (*n == max || (nv[*n] = strdup(tok)) == NULL) {
                free(copy);
                return -1;
            }
            (*n)++;
        }
        free(copy);
    }
    json_array_foreach(arr, i, j) {
        if (!json_is_string(j) || json_string_length(j) == 0
            || (nv[*n] = strdup(json_string_value(j))) == NULL)
        {
            return -1;
        }
        (*n)++;
    }
    return 0;
}


static void
mt5sim_batch_free(mt5sim_batch_t *b)
{
    size_t  i;

    for (i = 0; i < b->ngroups; i++) {
        free(b->groups[i]);
    }
    for (i = 0; i < b->nsymbols; i++) {
        free(b->symbols[i]);
    }
    free(b->groups);
    free(b->symbols);
    free(b->logins);
    free(b->tickets);
}


/*
 * Selectors from the query string and from an optional JSON body
 * ({"login":[…]}, {"group":[…]}, {"ticket":[…]}: the documented body is
 * not JSON, so this schema is our guess).  A body that is not a JSON
 * object is ignored, as for every other command.
 */
static int
mt5sim_batch_parse(const mt5sim_params_t *p, const char *body,
    size_t body_len, mt5sim_batch_t *b)
{
    json_t  *doc = NULL, *jl = NULL, *jg = NULL, *jt = NULL, *js = NULL;
    int      rc = -1;

    memset(b, 0, sizeof(*b));
    if (body_len > 0) {
        doc = json_loadb(body, body_len, 0, NULL);
        if (json_is_object(doc)) {
            jl = json_object_get(doc, "login");
            jg = json_object_get(doc, "group");
            jt = json_object_get(doc, "ticket");
            js = json_object_get(doc, "symbol");
            if ((jl && !json_is_array(jl)) || (jg && !json_is_array(jg))
                || (jt && !json_is_array(jt)) || (js && !json_is_array(js)))
            {
                goto done;
            }
        }
    }
    if (mt5sim_list_u64(mt5sim_param(p, "login"), jl, &b->logins,
                        &b->nlogins) != 0
        || mt5sim_list_str(mt5sim_param(p, "group"), jg, &b->groups,
                           &b->ngroups) != 0
        || mt5sim_list_u64(mt5sim_param(p, "ticket"), jt, &b->tickets,
                           &b->ntickets) != 0
        || mt5sim_list_str(mt5sim_param(p, "symbol"), js, &b->symbols,
                           &b->nsymbols) != 0)
    {
        goto done;
    }
    b->kinds = (mt5sim_param(p, "login") || jl)
               + (mt5sim_param(p, "group") || jg)
               + (mt5sim_param(p, "ticket") || jt);
    /* a selector given empty ("login=") selects nothing valid */
    if (b->kinds == 1 && b->nlogins + b->ngroups + b->ntickets == 0) {
        goto done;
    }
    rc = 0;
done:
    json_decref(doc);
    return rc;
}


/* balance deals have no symbol: a symbol filter keeps none of them */
static int
mt5sim_batch_symbol(mt5sim_t *srv, const mt5sim_batch_t *b)
{
    const char  *sym = json_string_value(json_object_get(
                           srv->render.deal_fields, "Symbol"));
    size_t       i;

    if (b->nsymbols == 0) {
        return 1;
    }
    for (i = 0; i < b->nsymbols; i++) {
        if (strcmp(b->symbols[i], sym ? sym : "") == 0) {
            return 1;
        }
    }
    return 0;
}


static int
mt5sim_ptr_cmp(const void *a, const void *b)
{
    return mt5sim_deal_cmp(*(const mt5sim_deal_t *const *) a,
                           *(const mt5sim_deal_t *const *) b);
}


/*
 * The deals a batch selects, in (Time, Deal) order, each once; `sel` has
 * room for every deal and every ticket asked.  The ledger lock is held.
 */
static size_t
mt5sim_batch_select(mt5sim_ledger_t *l, const mt5sim_manager_t *m,
    const mt5sim_batch_t *b, int64_t from, int64_t to,
    const mt5sim_deal_t **sel)
{
    const mt5sim_deal_t  *d;
    mt5sim_account_t     *a;
    size_t                n = 0, i, k, first, count;

    for (i = 0; i < b->ntickets; i++) {
        d = mt5sim_ledger_deal(l, b->tickets[i]);
        a = d ? mt5sim_ledger_account(l, d->login) : NULL;
        if (a && mt5sim_ledger_visible(l, m, a)) {
            sel[n++] = d;
        }
    }
    for (i = 0; b->ntickets == 0 && i < l->naccounts; i++) {
        a = l->accounts[i];
        if (!mt5sim_ledger_visible(l, m, a)) {
            continue;
        }
        if (b->ngroups) {
            if (!mt5sim_masks_match((const char *const *) b->groups,
                                    b->ngroups, a->group))
            {
                continue;
            }
        } else {
            for (k = 0; k < b->nlogins && b->logins[k] != a->login; k++) {
                /* void */
            }
            if (k == b->nlogins) {
                continue;
            }
        }
        mt5sim_ledger_range(l, a, from, to, &first, &count);
        for (k = 0; k < count; k++) {
            sel[n++] = &l->deals[a->deals[first + k]];
        }
    }

    qsort(sel, n, sizeof(*sel), mt5sim_ptr_cmp);
    for (i = 1, k = n ? 1 : 0; i < n; i++) {
        if (sel[i] != sel[k - 1]) {
            sel[k++] = sel[i];  /* a ticket asked for twice */
        }
    }
    return k;
}


/* deal/get_batch: exactly one of login, group, ticket; no paging */
static json_t *
mt5sim_deal_batch(mt5sim_t *srv, mt5sim_session_t *s,
    const mt5sim_params_t *p, const char *body, size_t body_len,
    const mt5sim_fault_take_t *f)
{
    mt5sim_ledger_t        *l = &srv->ledger;
    mt5sim_batch_t          b;
    mt5sim_manager_t       *m;
    const mt5sim_deal_t   **sel = NULL;
    int64_t                 from = 0, to = 0;
    size_t                 *idx = NULL, n = 0, i;
    int                     rc = MT5_RET_OK;
    json_t                 *list = NULL;

    if (mt5sim_batch_parse(p, body, body_len, &b) != 0 || b.kinds != 1) {
        mt5sim_batch_free(&b);
        return mt5sim_fail(MT5_RET_ERR_PARAMS);
    }
    /* from and to are required with login or group */
    if (b.ntickets == 0
        && (mt5sim_parse_i64(mt5sim_param(p, "from"), &from) != 0
            || mt5sim_parse_i64(mt5sim_param(p, "to"), &to) != 0))
    {
        mt5sim_batch_free(&b);
        return mt5sim_fail(MT5_RET_ERR_PARAMS);
    }

    pthread_mutex_lock(&l->lock);
    m = mt5sim_ledger_manager(l, s->manager);
    if (m == NULL || !m->read_deals) {
        rc = MT5_RET_ERR_PERMISSIONS;
        goto done;
    }
    sel = malloc((l->ndeals + b.ntickets + 1) * sizeof(*sel));
    idx = malloc((l->ndeals + b.ntickets + 1) * sizeof(*idx));
    if (sel == NULL || idx == NULL) {
        rc = MT5_RET_ERR;
        goto done;
    }
    if (mt5sim_batch_symbol(srv, &b)) {
        n = mt5sim_batch_select(l, m, &b, from, to, sel);
    }
    for (i = 0; i < n; i++) {
        idx[i] = (size_t) (sel[i] - l->deals);
    }
    list = mt5sim_deal_list(srv, idx, n, 0, f);
done:
    pthread_mutex_unlock(&l->lock);
    free(sel);
    free(idx);
    mt5sim_batch_free(&b);
    return rc == MT5_RET_OK ? mt5sim_answer(list) : mt5sim_fail(rc);
}


/* ------------------------------------------------------------ dispatch */

int
mt5sim_api_call(mt5sim_t *srv, mt5sim_session_t *s, mt5sim_endpoint_e ep,
    const mt5sim_params_t *p, const char *body, size_t body_len,
    const mt5sim_fault_take_t *f, mt5sim_reply_t *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = MT5SIM_REPLY_JSON;

    if (ep == MT5SIM_EP_UNKNOWN) {
        out->kind = MT5SIM_REPLY_NOT_FOUND;
        return 0;
    }
    if (p->bad_utf8) {
        /* a value that is not UTF-8 (or holds a NUL) is a bad parameter */
        if (ep == MT5SIM_EP_AUTH_START || ep == MT5SIM_EP_AUTH_ANSWER) {
            s->started = 0;
            mt5sim_stat_inc(&srv->stats.auth_failed);
        }
        out->json = mt5sim_fail(MT5_RET_ERR_PARAMS);
        return 0;
    }

    switch (ep) {
    case MT5SIM_EP_AUTH_START:
        out->json = mt5sim_auth_start(srv, s, p);
        break;
    case MT5SIM_EP_AUTH_ANSWER:
        return mt5sim_auth_answer_cmd(srv, s, p, f, out);
    case MT5SIM_EP_TEST_ACCESS:
        out->json = mt5sim_envelope("0 Done", NULL);
        break;
    case MT5SIM_EP_QUIT:
        mt5sim_deauth(srv, s);
        out->json = mt5sim_envelope("0 Done", NULL);
        out->close = 1;
        break;
    case MT5SIM_EP_TIME_SERVER:
        out->json = mt5sim_time_server(srv);
        break;
    case MT5SIM_EP_TIME_GET:
        out->json = mt5sim_time_get(srv);
        break;
    case MT5SIM_EP_USER_GET:
        out->json = mt5sim_user_get(srv, s, p, f, 0);
        break;
    case MT5SIM_EP_USER_ACCOUNT_GET:
        out->json = mt5sim_user_get(srv, s, p, f, 1);
        break;
    case MT5SIM_EP_USER_LOGINS:
        out->json = mt5sim_user_logins(srv, s, p);
        break;
    case MT5SIM_EP_GROUP_GET:
        out->json = mt5sim_group_get(srv, s, p);
        break;
    case MT5SIM_EP_TRADE_BALANCE:
        out->json = mt5sim_trade_balance(srv, s, p);
        break;
    case MT5SIM_EP_DEAL_GET:
        out->json = mt5sim_deal_get(srv, s, p, f);
        break;
    case MT5SIM_EP_DEAL_GET_TOTAL:
        out->json = mt5sim_deal_total(srv, s, p, f);
        break;
    case MT5SIM_EP_DEAL_GET_PAGE:
        out->json = mt5sim_deal_page(srv, s, p, f);
        break;
    case MT5SIM_EP_DEAL_GET_BATCH:
        out->json = mt5sim_deal_batch(srv, s, p, body, body_len, f);
        break;
    default:
        out->kind = MT5SIM_REPLY_NOT_FOUND;
        break;
    }
    return out->json || out->kind != MT5SIM_REPLY_JSON ? 0 : -1;
}
