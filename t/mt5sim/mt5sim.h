/*
 * Copyright (C) mt5-credit
 *
 * mt5sim: a local double of the MetaTrader 5 Web API (the access server's
 * manager REST/JSON interface), faithful to the protocol facts of the
 * MT5 Web API reference (docs/mt5-webapi.md), with fault injection for
 * every way the real server can let a client down.
 *
 * One process, one server state (mt5sim_t).  Each TCP/TLS connection is
 * one MT5 session (mt5sim_session_t), served by its own thread; the
 * shared state is guarded by two mutexes: the ledger's (accounts, deals,
 * journal) and the server's (faults).  Counters are atomics.
 *
 * Money is never a floating point number: amounts are int64 in units of
 * 1e-8 of the currency (MT5SIM_MONEY_ONE), parsed from and formatted to
 * decimal text with the group's CurrencyDigits.
 */


#ifndef MT5SIM_H
#define MT5SIM_H


#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>


#define MT5SIM_ERR_MAX          256
#define MT5SIM_NAME_MAX         128    /* group names, account names */
#define MT5SIM_COMMENT_MAX      128    /* bytes: 31 UTF-16 units in UTF-8 */
#define MT5SIM_RETCODE_MAX      128
#define MT5SIM_BODY_MAX         (1024 * 1024)

#define MT5SIM_MONEY_DIGITS     8
#define MT5SIM_MONEY_ONE        100000000LL
#define MT5SIM_MONEY_LIMIT      (1000000000LL * MT5SIM_MONEY_ONE)

/* Volume is in 1/10000 lot, VolumeExt in 1e-8: both must fit a uint64 */
#define MT5SIM_VOLUME_MAX       (UINT64_MAX / 10000)


/* MT5 return codes used here (MQ-RC) */
#define MT5_RET_OK                   0
#define MT5_RET_ERR                  2
#define MT5_RET_ERR_PARAMS           3
#define MT5_RET_ERR_PERMISSIONS      8
#define MT5_RET_ERR_NOTFOUND         13
#define MT5_RET_AUTH_ACCOUNT_INVALID 1001
#define MT5_RET_AUTH_ACCOUNT_DISABLED 1002
#define MT5_RET_TRADE_MAX_MONEY      4005
#define MT5_RET_REQUEST_NO_MONEY     10019


/* ------------------------------------------------------------ endpoints */

typedef enum {
    MT5SIM_EP_AUTH_START = 0,
    MT5SIM_EP_AUTH_ANSWER,
    MT5SIM_EP_TEST_ACCESS,
    MT5SIM_EP_QUIT,
    MT5SIM_EP_TIME_SERVER,
    MT5SIM_EP_TIME_GET,
    MT5SIM_EP_USER_GET,
    MT5SIM_EP_USER_ACCOUNT_GET,
    MT5SIM_EP_USER_LOGINS,
    MT5SIM_EP_GROUP_GET,
    MT5SIM_EP_TRADE_BALANCE,
    MT5SIM_EP_DEAL_GET,
    MT5SIM_EP_DEAL_GET_TOTAL,
    MT5SIM_EP_DEAL_GET_PAGE,
    MT5SIM_EP_DEAL_GET_BATCH,
    MT5SIM_EP_UNKNOWN,
    MT5SIM_EP_COUNT
} mt5sim_endpoint_e;

mt5sim_endpoint_e mt5sim_endpoint_lookup(const char *path);
const char *mt5sim_endpoint_path(mt5sim_endpoint_e ep);


/* ------------------------------------------------------------ text */

typedef struct {
    char   *key;
    char   *value;
} mt5sim_param_t;

typedef struct {
    mt5sim_param_t  *v;
    size_t           n;
    int              bad_utf8;     /* some value was not UTF-8 (or NUL) */
} mt5sim_params_t;

int mt5sim_params_parse(const char *query, int plus_is_space,
    int backslash_escapes, mt5sim_params_t *out);
void mt5sim_params_free(mt5sim_params_t *p);
const char *mt5sim_param(const mt5sim_params_t *p, const char *key);

int mt5sim_hex_decode(const char *hex, unsigned char *out, size_t n);
void mt5sim_hex_encode(const unsigned char *in, size_t n, char *out);
int mt5sim_utf8_next(const unsigned char **p, const unsigned char *end,
    uint32_t *cp);
int mt5sim_utf8_valid(const char *s, size_t len);
size_t mt5sim_utf16_prefix(const char *s, size_t units);
void mt5sim_unescape_backslash(char *s);
int mt5sim_parse_u64(const char *s, uint64_t *out);
int mt5sim_parse_i64(const char *s, int64_t *out);
int mt5sim_mask_match(const char *mask, size_t mlen, const char *name);
int mt5sim_masks_match(const char *const *masks, size_t n,
    const char *name);
int mt5sim_mask_list_match(const char *list, const char *name);


/* ------------------------------------------------------------ money */

#define MT5SIM_MONEY_BAD   -1      /* malformed, or too many decimals */
#define MT5SIM_MONEY_BIG   -2      /* beyond what we can hold: > 1e9 */

int mt5sim_money_parse(const char *s, int digits, int64_t *out);
int mt5sim_money_json(json_t *v, int digits, int64_t *out);
void mt5sim_money_format(int64_t v, int digits, char *buf, size_t n);


/* ------------------------------------------------------------ auth */

int mt5sim_auth_password_hash(const char *password, unsigned char h[16]);
int mt5sim_auth_answer(const unsigned char h[16],
    const unsigned char *rand, size_t n, unsigned char out[16]);
int mt5sim_auth_random(unsigned char *buf, size_t n);


/* ------------------------------------------------------------ ledger */

typedef struct {
    char      name[MT5SIM_NAME_MAX];
    char      currency[16];
    int       digits;
} mt5sim_group_t;

typedef struct {
    uint64_t  login;
    char     *password;            /* the API password, UTF-8 */
    int       accountant;
    int       read_accounts;
    int       read_deals;
    int       enabled;
    char    **masks;               /* group masks, '!' excludes */
    size_t    nmasks;
} mt5sim_manager_t;

typedef struct {
    uint64_t  login;
    char      group[MT5SIM_NAME_MAX];
    char      name[MT5SIM_NAME_MAX];
    int64_t   balance;             /* 1e-8 units */
    int64_t   credit;
    int64_t   margin;              /* used margin, for the free margin */
    uint64_t  rights;
    int64_t   leverage;
    int       no_trade_state;
    int64_t   registered;          /* server time, seconds */
    size_t   *deals;               /* indexes into the ledger's deals, */
    size_t    ndeals;              /* ordered by (Time, Deal) */
    size_t    deals_cap;
} mt5sim_account_t;

typedef struct {
    uint64_t  ticket;
    uint64_t  login;
    uint64_t  dealer;
    int       action;
    int       digits;              /* the group's at execution */
    int64_t   amount;              /* 1e-8 units */
    uint64_t  volume;              /* Volume: 1/10000 lot; 0: balance */
    int64_t   time_msc;            /* server time */
    char      comment[MT5SIM_COMMENT_MAX];
} mt5sim_deal_t;

typedef struct {
    int       fd;
    int       lock_fd;
    int       fsync;               /* 0: --no-fsync */
    off_t     size;                /* bytes of complete records */
    uint64_t  written;             /* records written (ledger lock) */
    uint64_t  synced;              /* records on disk (sync_lock) */
    pthread_mutex_t  sync_lock;
} mt5sim_journal_t;

typedef struct {
    pthread_mutex_t     lock;

    mt5sim_group_t     *groups;
    size_t              ngroups;
    mt5sim_manager_t  **managers;
    size_t              nmanagers;
    mt5sim_account_t  **accounts;  /* sorted by login */
    size_t              naccounts;
    size_t              accounts_cap;
    mt5sim_deal_t      *deals;     /* sorted by ticket */
    size_t              ndeals;
    size_t              deals_cap;
    uint64_t            next_ticket;
    int                 offset_minutes;   /* atomic: server time - UTC */

    /* rules that the reference leaves UNCONFIRMED, from the config */
    int                 outside_retcode;  /* login outside the groups */
    int                 correction_skips_margin;
    size_t              comment_units;

    mt5sim_journal_t    journal;
    int                 replaying;
} mt5sim_ledger_t;

typedef struct {
    uint64_t     login;
    int          type;
    const char  *amount;
    const char  *comment;
    int          check_margin;
    int64_t      time_msc;      /* 0: now; else a back-dated dealer entry,
                                   server ms (control port only) */
} mt5sim_balance_req_t;

int mt5sim_ledger_init(mt5sim_ledger_t *l);
void mt5sim_ledger_free(mt5sim_ledger_t *l);
int64_t mt5sim_server_ms(mt5sim_ledger_t *l);

/* upserts from the config, the control port and the journal */
int mt5sim_ledger_put_group(mt5sim_ledger_t *l, json_t *spec, char *err);
int mt5sim_ledger_put_manager(mt5sim_ledger_t *l, json_t *spec, char *err);
int mt5sim_ledger_put_account(mt5sim_ledger_t *l, json_t *spec, char *err);
int mt5sim_ledger_set_offset(mt5sim_ledger_t *l, int minutes, char *err);

/* these expect the ledger lock held */
mt5sim_group_t *mt5sim_ledger_group(mt5sim_ledger_t *l, const char *name);
mt5sim_manager_t *mt5sim_ledger_manager(mt5sim_ledger_t *l, uint64_t login);
mt5sim_account_t *mt5sim_ledger_account(mt5sim_ledger_t *l,
    uint64_t login);
const mt5sim_deal_t *mt5sim_ledger_deal(mt5sim_ledger_t *l,
    uint64_t ticket);
int mt5sim_ledger_visible(mt5sim_ledger_t *l, const mt5sim_manager_t *m,
    const mt5sim_account_t *a);
int mt5sim_ledger_reach(mt5sim_ledger_t *l, uint64_t manager,
    uint64_t login, int need_deals, mt5sim_account_t **acc);
void mt5sim_ledger_range(mt5sim_ledger_t *l, const mt5sim_account_t *a,
    int64_t from, int64_t to, size_t *first, size_t *count);
int mt5sim_deal_cmp(const mt5sim_deal_t *a, const mt5sim_deal_t *b);

/* takes the lock; returns an MT5 retcode; durable when 0 */
int mt5sim_ledger_balance(mt5sim_ledger_t *l, uint64_t manager,
    const mt5sim_balance_req_t *r, uint64_t *ticket, char *err);

/* a buy (0) or sell (1) of `volume`, profit 0; the same return */
int mt5sim_ledger_trade(mt5sim_ledger_t *l, uint64_t login, int action,
    uint64_t volume, int64_t time_msc, uint64_t *ticket, char *err);

/* journal: mt5sim_journal.c */
int mt5sim_journal_open(mt5sim_ledger_t *l, const char *dir, int durable,
    char *err);
void mt5sim_journal_close(mt5sim_journal_t *j);
int mt5sim_journal_append(mt5sim_journal_t *j, json_t *record,
    uint64_t *seq, char *err);
int mt5sim_journal_sync(mt5sim_journal_t *j, uint64_t seq, char *err);
int mt5sim_journal_record(mt5sim_ledger_t *l, const char *op, json_t *data,
    char *err);
int mt5sim_ledger_replay_deal(mt5sim_ledger_t *l, json_t *rec, char *err);
int mt5sim_ledger_add_deal(mt5sim_ledger_t *l, const mt5sim_deal_t *d,
    char *err);


/* ------------------------------------------------------------ render */

typedef struct {
    const char  *total_key;        /* "total" or "Total" */
    const char  *time_key;         /* "Time" or "time" */
    json_t      *deal_fields;      /* overrides of the deal's defaults */
    const char  *version_access;
    const char  *version_trade;
} mt5sim_render_t;

json_t *mt5sim_render_deal(const mt5sim_render_t *r, const mt5sim_deal_t *d,
    uint64_t login);
json_t *mt5sim_render_user(mt5sim_ledger_t *l, const mt5sim_account_t *a,
    uint64_t login);
json_t *mt5sim_render_account(mt5sim_ledger_t *l, const mt5sim_account_t *a,
    uint64_t login);
json_t *mt5sim_render_group(const mt5sim_group_t *g);
json_t *mt5sim_render_ledger(mt5sim_ledger_t *l, const mt5sim_render_t *r);
void mt5sim_render_time(int64_t server_s, char *buf, size_t n);


/* ------------------------------------------------------------ faults */

typedef enum {
    MT5SIM_F_LATENCY = 0,
    MT5SIM_F_DROP_BEFORE,
    MT5SIM_F_DROP_AFTER,
    MT5SIM_F_HANG,
    MT5SIM_F_HANG_AFTER,
    MT5SIM_F_WRONG_LOGIN,
    MT5SIM_F_RETCODE,
    MT5SIM_F_PARTIAL_PAGE,
    MT5SIM_F_EMPTY_PAGE,
    MT5SIM_F_BAD_TOTAL,
    MT5SIM_F_BAD_CLI_RAND,
    MT5SIM_F_HTTP403,
    MT5SIM_F_GARBAGE,
    MT5SIM_F_COUNT
} mt5sim_fault_kind_e;

typedef struct {
    uint64_t             id;
    mt5sim_fault_kind_e  kind;
    char                 endpoint[64];  /* "" = every endpoint it fits */
    long                 count;         /* left; 0 = until cleared */
    long                 ms;
    uint64_t             login;         /* wrong_login; 0 = asked + 1 */
    char                 retcode[MT5SIM_RETCODE_MAX];
    char                 body[MT5SIM_RETCODE_MAX];  /* garbage's text */
    int                  execute;       /* garbage/http403: execute first */
    uint64_t             hits;
} mt5sim_fault_t;

typedef struct {
    mt5sim_fault_t      *v;
    size_t               n;
    size_t               cap;
    uint64_t             next_id;
    uint64_t             generation;    /* bumped when cleared */
} mt5sim_faults_t;

/* the faults one request took */
typedef struct {
    long                 latency_ms;
    int                  has_action;
    mt5sim_fault_t       action;        /* drop, hang, retcode, 403, ... */
    unsigned             modifiers;     /* 1 << kind */
    uint64_t             wrong_login;
    uint64_t             generation;
} mt5sim_fault_take_t;

const char *mt5sim_fault_name(mt5sim_fault_kind_e kind);
int mt5sim_faults_add(mt5sim_faults_t *f, json_t *spec, uint64_t *id,
    char *err);
void mt5sim_faults_clear(mt5sim_faults_t *f);
void mt5sim_faults_take(mt5sim_faults_t *f, mt5sim_endpoint_e ep,
    mt5sim_fault_take_t *t);
json_t *mt5sim_faults_json(const mt5sim_faults_t *f);
void mt5sim_faults_free(mt5sim_faults_t *f);


/* ------------------------------------------------------------ stats */

typedef struct {
    uint64_t  requests[MT5SIM_EP_COUNT];
    uint64_t  executed[MT5SIM_EP_COUNT];
    uint64_t  connections_opened;
    uint64_t  connections_closed;
    uint64_t  connections_open;    /* a gauge, like the two below */
    uint64_t  sessions_authenticated;
    uint64_t  sessions_authenticated_max;  /* its high-water mark */
    uint64_t  auth_ok;
    uint64_t  auth_failed;
    uint64_t  http403;
    uint64_t  dropped;
    uint64_t  hanging;
    uint64_t  control_requests;
} mt5sim_stats_t;

#define mt5sim_stat_inc(p)  __atomic_add_fetch((p), 1, __ATOMIC_RELAXED)
#define mt5sim_stat_dec(p)  __atomic_sub_fetch((p), 1, __ATOMIC_RELAXED)

/* *max = the largest value it has seen */
#define mt5sim_stat_max(max, v)                                              \
    do {                                                                     \
        uint64_t  mt5sim_seen = __atomic_load_n((max), __ATOMIC_RELAXED);    \
        uint64_t  mt5sim_v = (v);                                            \
        while (mt5sim_v > mt5sim_seen                                        \
               && !__atomic_compare_exchange_n((max), &mt5sim_seen,          \
                      mt5sim_v, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))      \
        { /* mt5sim_seen reloaded */ }                                       \
    } while (0)

json_t *mt5sim_stats_json(mt5sim_stats_t *s);
void mt5sim_stats_reset(mt5sim_stats_t *s);


/* ------------------------------------------------------------ server */

typedef struct {
    /* command line */
    const char  *config_file;
    const char  *state_dir;
    unsigned     port;
    unsigned     control_port;
    const char  *tls_cert;
    const char  *tls_key;
    int          http;
    unsigned     idle_timeout;      /* seconds */
    long         auth_timeout_ms;   /* start -> answer */
    int          fsync;

    /* config file: behaviour the reference leaves open */
    int          plus_is_space;
    int          backslash_escapes;
    int          forbidden_status;
    char         forbidden_body[64];
    int          answer_without_start_403;   /* else retcode 3 */
    int          auth_timeout_retcode;
    int          page_cap;                   /* total > 100: cap, not 3 */
    int          strict_http;
} mt5sim_options_t;

typedef struct {
    int            authed;
    int            started;         /* auth/start done, answer due */
    uint64_t       manager;
    unsigned char  srv_rand[16];
    int64_t        start_ms;        /* monotonic */
    uint64_t       id;
} mt5sim_session_t;

typedef struct {
    pthread_mutex_t     lock;       /* faults */
    mt5sim_options_t    opt;
    mt5sim_render_t     render;
    json_t             *config;     /* owns render's strings */
    mt5sim_ledger_t     ledger;
    mt5sim_faults_t     faults;
    mt5sim_stats_t      stats;
    int                 stopping;   /* atomic */
    uint64_t            next_session;
    char               *tls_cert_pem;
    char               *tls_key_pem;
    struct MHD_Daemon  *api;
    struct MHD_Daemon  *control;
} mt5sim_t;

/* the config file, into srv (ledger included) */
int mt5sim_config_load(mt5sim_t *srv, const char *path, char *err);

int64_t mt5sim_monotonic_ms(void);
int64_t mt5sim_realtime_ms(void);
int mt5sim_stopping(mt5sim_t *srv);


/* ------------------------------------------------------------ api */

typedef enum {
    MT5SIM_REPLY_JSON = 0,
    MT5SIM_REPLY_FORBIDDEN,         /* HTTP 403, "403 Forbidden" */
    MT5SIM_REPLY_NOT_FOUND          /* HTTP 404: not an API command */
} mt5sim_reply_kind_e;

typedef struct {
    mt5sim_reply_kind_e  kind;
    json_t              *json;
    int                  close;     /* Connection: close (quit) */
} mt5sim_reply_t;

const char *mt5sim_retcode(int code, char *buf, size_t n);
json_t *mt5sim_envelope(const char *retcode, json_t *answer);
int mt5sim_api_call(mt5sim_t *srv, mt5sim_session_t *s,
    mt5sim_endpoint_e ep, const mt5sim_params_t *p, const char *body,
    size_t body_len, const mt5sim_fault_take_t *f, mt5sim_reply_t *out);


/* ------------------------------------------------------------ control */

typedef struct {
    int      status;
    json_t  *json;
} mt5sim_control_reply_t;

void mt5sim_control_call(mt5sim_t *srv, const char *method,
    const char *path, const char *body, size_t body_len,
    mt5sim_control_reply_t *out);


/* ------------------------------------------------------------ http */

int mt5sim_http_start(mt5sim_t *srv, char *err);
void mt5sim_http_stop(mt5sim_t *srv);


#endif /* MT5SIM_H */
