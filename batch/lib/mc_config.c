/*
 * Copyright (C) mt5-credit
 */


#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>

#include "mc_config.h"
#include "mc_exporter.h"
#include "mc_log.h"


typedef enum {
    MC_KEY_STR,
    MC_KEY_SECONDS,
    MC_KEY_INT,
    MC_KEY_U64,
    MC_KEY_BOOL
} mc_key_type_e;


typedef struct {
    const char      *name;
    mc_key_type_e    type;
    size_t           offset;
    size_t           size;       /* strings */
    long             min, max;   /* numbers */
    const char      *help;
} mc_key_t;


#define MC_MAIN(f)  offsetof(mc_config_t, f), sizeof(((mc_config_t *) 0)->f)
#define MC_SRV(f)   offsetof(mc_server_config_t, f),                         \
                    sizeof(((mc_server_config_t *) 0)->f)


static const mc_key_t  mc_main_keys[] = {
    { "database", MC_KEY_STR, MC_MAIN(database), 0, 0,
      "libpq conninfo of the database (required); log in as a member of "
      "mt5credit_worker" },
    { "deployment_tag", MC_KEY_STR, MC_MAIN(deployment_tag), 0, 0,
      "the tag the database must carry ([a-z0-9], at most 8; in every MT5 "
      "comment and payout key made since it was set); the programs refuse "
      "a database with another (default: none, an untagged database)" },
    { "worker_name", MC_KEY_STR, MC_MAIN(worker_name), 0, 0,
      "name in history rows and logs (default: host:pid)" },
    { "redis", MC_KEY_STR, MC_MAIN(redis), 0, 0,
      "wake-up list's Redis: ip:port or unix:/path (default: none, poll "
      "only)" },
    { "redis_key", MC_KEY_STR, MC_MAIN(redis_key), 0, 0,
      "the list the edge pushes credit ids to (default mt5credit:wake)" },
    { "poll_interval", MC_KEY_SECONDS, MC_MAIN(poll_interval), 1, 3600,
      "seconds between polls of the database without a wake-up (5)" },
    { "lease", MC_KEY_SECONDS, MC_MAIN(lease), 5, 86400,
      "seconds a claim lasts; at least 3 x call_timeout + 5 (120)" },
    { "call_timeout", MC_KEY_SECONDS, MC_MAIN(call_timeout), 1, 600,
      "seconds one MT5 request may take (30)" },
    { "connect_timeout", MC_KEY_SECONDS, MC_MAIN(connect_timeout), 1, 600,
      "seconds to connect to MT5 (10)" },
    { "settle_margin", MC_KEY_SECONDS, MC_MAIN(settle_margin), 0, 86400,
      "seconds after a lease before the resolver looks a credit up (30)" },
    { "lookback", MC_KEY_SECONDS, MC_MAIN(lookback), 0, 30 * 86400,
      "deals are searched from this long before the credit was made (900)" },
    { "witness_interval", MC_KEY_SECONDS, MC_MAIN(witness_interval), 0,
      86400, "seconds between asking MT5 about the credits next in line "
      "before claiming; also on every new database connection (60; 0: "
      "only then)" },
    { "witness_credits", MC_KEY_INT, MC_MAIN(witness_credits), 0, 10000,
      "how many pending credits, next in line, MT5 is asked about (256; "
      "0: none, the kept claims alone)" },
    { "resolve_interval", MC_KEY_SECONDS, MC_MAIN(resolve_interval), 1, 3600,
      "seconds between resolver rounds in the worker (10)" },
    { "resolve_retry", MC_KEY_SECONDS, MC_MAIN(resolve_retry), 1, 86400,
      "seconds before an unresolved credit is looked up again (60)" },
    { "sweep_interval", MC_KEY_SECONDS, MC_MAIN(sweep_interval), 1, 3600,
      "seconds between sweeps of expired leases (5)" },
    { "server_backoff", MC_KEY_SECONDS, MC_MAIN(server_backoff), 0, 3600,
      "seconds an unreachable MT5 server is left alone (5)" },
    { "group_cache", MC_KEY_SECONDS, MC_MAIN(group_cache), 0, 3600,
      "seconds a group's currency and digits are reused (60; 0: ask "
      "group/get for every credit)" },
    { "alert_command", MC_KEY_STR, MC_MAIN(alert_command), 0, 0,
      "run on every alert, with MT5CREDIT_ALERT_* in its environment" },
    { "alert_url", MC_KEY_STR, MC_MAIN(alert_url), 0, 0,
      "POSTed a JSON object on every alert" },
    { "log_level", MC_KEY_STR, MC_MAIN(log_level), 0, 0,
      "debug, info, warn, error (info)" },
    { "metrics_dir", MC_KEY_STR, MC_MAIN(metrics_dir), 0, 0,
      "a directory (node-exporter's textfile collector's) where work, "
      "poll-provider and payout write their own metrics, "
      "mt5credit-<program>-<worker_name>.prom, after each round (default: "
      "none)" },
    { "metrics_listen", MC_KEY_STR, MC_MAIN(metrics_listen), 0, 0,
      "work: a loopback address (127.0.0.1:9464, [::1]:9464) where it "
      "serves its own metrics, GET /metrics, as of its last round "
      "(default: none)" },
    { "query_metrics_listen", MC_KEY_STR, MC_MAIN(query_metrics_listen),
      0, 0, "poll-provider: the same, on its own address (default: none)" },
    { "payout_metrics_listen", MC_KEY_STR, MC_MAIN(payout_metrics_listen),
      0, 0, "payout: the same, on its own address (default: none)" },
    { "outbound_metrics_listen", MC_KEY_STR,
      MC_MAIN(outbound_metrics_listen), 0, 0,
      "outbound: the same, on its own address (default: none)" },
    { "log_format", MC_KEY_STR, MC_MAIN(log_format), 0, 0,
      "text, or json: one object a line, with credit, ref, server, login "
      "and payout as fields where the line names them (text)" },
    { "state_dir", MC_KEY_STR, MC_MAIN(state_dir), 0, 0,
      "work: where each worker keeps its last claim, outside the database, "
      "so a database that went back in time (a failover, a restore) is "
      "noticed (/var/lib/mt5credit)" },
    { "recon_database", MC_KEY_STR, MC_MAIN(recon_database), 0, 0,
      "reconcile: libpq conninfo, log in as a member of mt5credit_recon "
      "(default: database)" },
    { "recon_deal_grace", MC_KEY_SECONDS, MC_MAIN(recon_deal_grace), 0,
      7 * 86400,
      "reconcile: MT5 deals are fetched this long past the day's end, for "
      "credits made late in the day (86400)" },
    { "recon_match_window", MC_KEY_INT, MC_MAIN(recon_match_window), 0, 62,
      "reconcile: days an unpaired credit waits for its settlement row "
      "(in transit), and the most a row waits for its credit; past it a "
      "break (7)" },
    { "recon_settlement_grace", MC_KEY_INT, MC_MAIN(recon_settlement_grace),
      0, 168,
      "reconcile: hours a settlement row waits for its credit, to the end "
      "of the run's day (the credit comes first, the row days later), "
      "never past the window; past it a break (24)" },
    { "recon_sessions", MC_KEY_INT, MC_MAIN(recon_sessions), 1, 16,
      "reconcile: Web API sessions per server fetching deals in parallel; "
      "they take the server's session slots, shared with the workers, so "
      "workers and reconciliation together stay within sessions (2)" },
    { "recon_rate", MC_KEY_INT, MC_MAIN(recon_rate), 0, 10000,
      "reconcile: most Web API requests a second per server, all its "
      "sessions together, so the daily run cannot starve the manager API "
      "(50; 0: unbounded)" },
    { "recon_slot_wait", MC_KEY_INT, MC_MAIN(recon_slot_wait), 0, 86400,
      "reconcile: seconds to wait for a free session slot on a server "
      "before the run gives up, incomplete (300)" },
    { "recon_out", MC_KEY_STR, MC_MAIN(recon_out), 0, 0,
      "reconcile: directory for the CSV and HTML reports (.)" },
    { "query_database", MC_KEY_STR, MC_MAIN(query_database), 0, 0,
      "poll-provider: libpq conninfo, log in as a member of mt5credit_query "
      "(default: database)" },
    { "provider_api_url", MC_KEY_STR, MC_MAIN(provider_api_url), 0, 0,
      "poll-provider: the provider's API (https://api.stripe.com)" },
    { "provider_api_key_file", MC_KEY_STR, MC_MAIN(provider_api_key_file),
      0, 0, "poll-provider: file holding the API key (required to poll; "
      "a restricted read-only key is enough)" },
    { "query_min_age", MC_KEY_SECONDS, MC_MAIN(query_min_age), 0, 86400,
      "poll-provider: a deposit is asked about this long after it was "
      "made (600)" },
    { "query_backoff", MC_KEY_SECONDS, MC_MAIN(query_backoff), 1, 86400,
      "poll-provider: wait before the next query, doubled each time (60)" },
    { "query_max_attempts", MC_KEY_INT, MC_MAIN(query_max_attempts), 1,
      1000, "poll-provider: queries before a deposit is left to "
      "reconciliation, with a case (12)" },
    { "query_interval", MC_KEY_SECONDS, MC_MAIN(query_interval), 1, 86400,
      "poll-provider: seconds between rounds (60)" },
    { "query_timeout", MC_KEY_SECONDS, MC_MAIN(query_timeout), 1, 600,
      "poll-provider: seconds one provider request may take (10)" },
    { "payout_lease", MC_KEY_SECONDS, MC_MAIN(payout_lease), 5, 3600,
      "payout: seconds a sender holds a payout; longer than "
      "payout_timeout (60)" },
    { "payout_timeout", MC_KEY_SECONDS, MC_MAIN(payout_timeout), 1, 600,
      "payout: seconds one provider request may take (30)" },
    { "payout_margin", MC_KEY_SECONDS, MC_MAIN(payout_margin), 0, 3600,
      "payout: seconds past a lease before an unknown payout is looked "
      "up (30)" },
    { "payout_backoff", MC_KEY_SECONDS, MC_MAIN(payout_backoff), 1, 86400,
      "payout: wait after a lookup that settled nothing, doubled each "
      "time (60)" },
    { "payout_max_lookups", MC_KEY_INT, MC_MAIN(payout_max_lookups), 1,
      1000, "payout: lookups without an answer before a person is told "
      "(6)" },
    { "payout_recheck", MC_KEY_SECONDS, MC_MAIN(payout_recheck), 1, 86400,
      "payout: seconds between status checks of an accepted payout "
      "(600)" },
    { "payout_paid_watch", MC_KEY_SECONDS, MC_MAIN(payout_paid_watch), 0,
      90 * 86400, "payout: seconds a paid payout is still asked about, "
      "every payout_recheck, since a bank can return it (1209600: 14 "
      "days; 0: not at all)" },
    { "payout_interval", MC_KEY_SECONDS, MC_MAIN(payout_interval), 1, 86400,
      "payout: seconds between rounds (10)" },
    { "payout_rail", MC_KEY_STR, MC_MAIN(payout_rail), 0, 0,
      "payout: how the payout legs are paid: generic (a bank-transfer "
      "PSP's payout API, docs/providers.md), stripe_connect (Stripe "
      "payouts to clients who are connected accounts), or none (refund "
      "legs only; payout legs wait) (none)" },
    { "payout_provider", MC_KEY_STR, MC_MAIN(payout_provider), 0, 0,
      "payout: the provider name of the payout legs this rail pays "
      "(stripe for stripe_connect; required for generic)" },
    { "payout_api_url", MC_KEY_STR, MC_MAIN(payout_api_url), 0, 0,
      "payout: the generic rail's API (https://)" },
    { "payout_api_key_file", MC_KEY_STR, MC_MAIN(payout_api_key_file), 0, 0,
      "payout: file holding the generic rail's API key" },
    { "outbound_database", MC_KEY_STR, MC_MAIN(outbound_database), 0, 0,
      "outbound: libpq conninfo; log in as a member of mt5credit_outbound "
      "(default: database)" },
    { "outbound_timeout", MC_KEY_SECONDS, MC_MAIN(outbound_timeout), 1, 60,
      "outbound: seconds one delivery may take, connecting included (15)" },
    { "outbound_interval", MC_KEY_SECONDS, MC_MAIN(outbound_interval), 1,
      3600, "outbound: seconds between rounds when nothing is due (1)" },
    { "outbound_batch", MC_KEY_INT, MC_MAIN(outbound_batch), 1, 1000,
      "outbound: deliveries claimed at once, each leased for "
      "outbound_batch x outbound_timeout + 30 s (20)" },
    { "outbound_retry", MC_KEY_STR, MC_MAIN(outbound_retry), 0, 0,
      "outbound: the waits before each retry, comma-separated durations; "
      "after the last the delivery is exhausted and alerted (5s, 5m, 30m, "
      "2h, 5h, 10h, 10h: Svix's)" },
    { "outbound_disable_after", MC_KEY_SECONDS,
      MC_MAIN(outbound_disable_after), 1, 365 * 86400,
      "outbound: an endpoint with no delivery for this long while failing "
      "is disabled and alerted; its events wait for a person to enable it "
      "(5d)" },
    { "desk_database", MC_KEY_STR, MC_MAIN(desk_database), 0, 0,
      "cases: libpq conninfo; each person logs in as their own role, "
      "member of mt5credit_operator (default: libpq's PG* environment)" },
    { NULL, 0, 0, 0, 0, 0, NULL }
};


static const mc_key_t  mc_server_keys[] = {
    { "url", MC_KEY_STR, MC_SRV(url), 0, 0,
      "https://host:port of the MT5 access server (required)" },
    { "manager", MC_KEY_U64, MC_SRV(manager), 1, 0,
      "manager login with the Web API enabled (required)" },
    { "password_file", MC_KEY_STR, MC_SRV(password_file), 0, 0,
      "file holding the manager's API password (required; mode 0600)" },
    { "ca_file", MC_KEY_STR, MC_SRV(ca_file), 0, 0,
      "CA bundle for a self-signed access server (default: system CAs)" },
    { "tls_verify", MC_KEY_BOOL, MC_SRV(tls_verify), 0, 1,
      "on (default) or off; off is logged at every session" },
    { "sessions", MC_KEY_INT, MC_SRV(sessions), 1, 64,
      "most Web API sessions on this server, all workers and reconciliation together (2)" },
    { "ping_interval", MC_KEY_SECONDS, MC_SRV(ping_interval), 1, 170,
      "seconds idle before /api/test/access (20; the server drops at 180)" },
    { "recon_groups", MC_KEY_STR, MC_SRV(recon_groups), 0, 0,
      "reconcile: the server's groups whose balance deals are matched, "
      "comma-separated exact names (required to reconcile)" },
    { "time_zone", MC_KEY_STR, MC_SRV(time_zone), 0, 0,
      "reconcile: the server's time zone (IANA, e.g. Europe/Riga, or a "
      "POSIX rule), so deals made under another offset than today's (summer "
      "time) fall on their day; checked against the server's clock "
      "(default: none, the offset measured at the run for every deal)" },
    { NULL, 0, 0, 0, 0, 0, NULL }
};


#define MC_EP(f)    offsetof(mc_endpoint_config_t, f),                       \
                    sizeof(((mc_endpoint_config_t *) 0)->f)

static const mc_key_t  mc_endpoint_keys[] = {
    { "url", MC_KEY_STR, MC_EP(url), 0, 0,
      "https:// address the events are POSTed to (required; plain HTTP "
      "only to 127.0.0.1 or localhost, for tests); never redirected" },
    { "secret_file", MC_KEY_STR, MC_EP(secret_file), 0, 0,
      "file of the endpoint's signing secrets, whsec_<base64>, one a line "
      "(required; mode 0600): every line signs, so during a rotation it "
      "holds the new and the old" },
    { "ca_file", MC_KEY_STR, MC_EP(ca_file), 0, 0,
      "CA bundle for the receiver's certificate (default: system CAs)" },
    { NULL, 0, 0, 0, 0, 0, NULL }
};


/* the keys given so far, by section (0: the main one), to refuse twice */
typedef struct {
    int   n;
    struct {
        int   section;
        char  key[48];
    }     keys[512];
} mc_config_seen_t;

static int mc_config_seen(mc_config_seen_t *seen, int section,
    const char *key);
static int mc_config_file(const char *key, char *value, size_t size,
    char *err, size_t errlen);
static char *mc_config_trim(char *s);
static int mc_config_set(const mc_key_t *keys, void *base, const char *key,
    const char *value, char *err, size_t errlen);
static int mc_config_seconds(const char *v, long *out);
static int mc_config_finish(mc_config_t *cfg, char *err, size_t errlen);
static int mc_config_listens(const mc_config_t *cfg, char *err,
    size_t errlen);
static int mc_config_password(mc_server_config_t *s, char *err,
    size_t errlen);
static int mc_config_endpoint_section(mc_config_t *cfg, const char *name,
    mc_endpoint_config_t **endpoint, char *err, size_t errlen);
static int mc_config_outbound(mc_config_t *cfg, char *err, size_t errlen);
static int mc_config_endpoint_url(const char *url);


static void
mc_config_defaults(mc_config_t *cfg)
{
    char  host[64];

    memset(cfg, 0, sizeof(*cfg));

    if (gethostname(host, sizeof(host)) != 0) {
        strcpy(host, "worker");
    }

    host[sizeof(host) - 1] = '\0';
    snprintf(cfg->worker_name, sizeof(cfg->worker_name), "%s:%d", host,
             (int) getpid());
    strcpy(cfg->redis_key, "mt5credit:wake");
    strcpy(cfg->log_level, "info");
    strcpy(cfg->log_format, "text");
    strcpy(cfg->state_dir, "/var/lib/mt5credit");
    cfg->poll_interval = 5;
    cfg->lease = 120;
    cfg->call_timeout = 30;
    cfg->connect_timeout = 10;
    cfg->settle_margin = 30;
    cfg->lookback = 900;
    cfg->witness_interval = 60;
    cfg->witness_credits = 256;
    cfg->resolve_interval = 10;
    cfg->resolve_retry = 60;
    cfg->sweep_interval = 5;
    cfg->server_backoff = 5;
    cfg->group_cache = 60;
    cfg->recon_deal_grace = 86400;
    cfg->recon_match_window = 7;
    cfg->recon_settlement_grace = 24;
    cfg->recon_sessions = 2;
    cfg->recon_rate = 50;
    cfg->recon_slot_wait = 300;
    strcpy(cfg->provider_api_url, "https://api.stripe.com");
    cfg->query_min_age = 600;
    cfg->query_backoff = 60;
    cfg->query_max_attempts = 12;
    cfg->query_interval = 60;
    cfg->query_timeout = 10;
    cfg->payout_lease = 60;
    cfg->payout_timeout = 30;
    cfg->payout_margin = 30;
    cfg->payout_backoff = 60;
    cfg->payout_max_lookups = 6;
    cfg->payout_recheck = 600;
    cfg->payout_paid_watch = 14 * 86400;
    cfg->payout_interval = 10;
    strcpy(cfg->outbound_retry, "5s, 5m, 30m, 2h, 5h, 10h, 10h");
    cfg->outbound_timeout = 15;
    cfg->outbound_interval = 1;
    cfg->outbound_batch = 20;
    cfg->outbound_disable_after = 5 * 86400;
    strcpy(cfg->payout_rail, "none");
    strcpy(cfg->recon_out, ".");
}


int
mc_config_load(const char *path, mc_config_t *cfg, char *err, size_t errlen)
{
    int                  lineno, rc, section;
    char                 line[2048], *p, *eq, *key, *value;
    FILE                *f;
    size_t               len;
    mc_config_seen_t     seen;
    mc_server_config_t    *server;
    mc_endpoint_config_t  *endpoint;

    mc_config_defaults(cfg);
    snprintf(cfg->path, sizeof(cfg->path), "%s", path);

    f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }

    server = NULL;
    endpoint = NULL;
    section = 0;
    lineno = 0;
    rc = 0;
    memset(&seen, 0, sizeof(seen));

    while (fgets(line, sizeof(line), f) != NULL) {
        lineno++;

        len = strlen(line);
        if (len == sizeof(line) - 1 && line[len - 1] != '\n' && !feof(f)) {
            snprintf(err, errlen, "%s:%d: a line longer than %zu bytes",
                     path, lineno, sizeof(line) - 2);
            rc = -1;
            break;
        }

        p = mc_config_trim(line);

        if (*p == '\0' || *p == '#') {
            continue;
        }

        if (*p == '[') {
            char  name[64];

            if (sscanf(p, "[endpoint %63[A-Za-z0-9_.-]]", name) == 1
                && p[strlen(p) - 1] == ']')
            {
                if (mc_config_endpoint_section(cfg, name, &endpoint, err,
                                               errlen) != 0)
                {
                    /* prefix the location to what it said */
                    char  what[256];

                    snprintf(what, sizeof(what), "%s", err);
                    snprintf(err, errlen, "%s:%d: %s", path, lineno, what);
                    rc = -1;
                    break;
                }

                server = NULL;
                section = 100 + cfg->nendpoints;
                continue;
            }

            if (sscanf(p, "[server %63[A-Za-z0-9_.-]]", name) != 1
                || p[strlen(p) - 1] != ']')
            {
                snprintf(err, errlen, "%s:%d: expected \"[server <name>]\" "
                         "or \"[endpoint <name>]\"", path, lineno);
                rc = -1;
                break;
            }

            if (mc_config_server(cfg, name) != NULL) {
                snprintf(err, errlen, "%s:%d: server \"%s\" is duplicate",
                         path, lineno, name);
                rc = -1;
                break;
            }

            if (cfg->nservers == MC_CONFIG_MAX_SERVERS) {
                snprintf(err, errlen, "%s:%d: more than %d servers", path,
                         lineno, MC_CONFIG_MAX_SERVERS);
                rc = -1;
                break;
            }

            server = &cfg->servers[cfg->nservers++];
            endpoint = NULL;
            section = cfg->nservers;
            snprintf(server->name, sizeof(server->name), "%s", name);
            server->tls_verify = 1;
            server->sessions = 2;
            server->ping_interval = 20;
            continue;
        }

        eq = strchr(p, '=');
        if (eq == NULL) {
            snprintf(err, errlen, "%s:%d: expected \"key = value\"", path,
                     lineno);
            rc = -1;
            break;
        }

        *eq = '\0';
        key = mc_config_trim(p);
        value = mc_config_trim(eq + 1);

        /* a value may be quoted, e.g. a conninfo with spaces: whole */
        len = strlen(value);
        if (value[0] == '"' || (len > 0 && value[len - 1] == '"')) {
            if (len < 2 || value[0] != '"' || value[len - 1] != '"'
                || memchr(value + 1, '"', len - 2) != NULL)
            {
                snprintf(err, errlen, "%s:%d: %s: a value is quoted whole, "
                         "\"like this\", with no quote inside", path,
                         lineno, key);
                rc = -1;
                break;
            }

            value[len - 1] = '\0';
            value++;
        }

        /* a key given twice would leave one of the two silently unused */
        if (mc_config_seen(&seen, section, key) != 0) {
            snprintf(err, errlen, "%s:%d: %s is given twice in %s%s%s", path,
                     lineno, key,
                     server ? "[server " : endpoint ? "[endpoint "
                                                    : "the main section",
                     server ? server->name : endpoint ? endpoint->name : "",
                     server || endpoint ? "]" : "");
            rc = -1;
            break;
        }

        if (endpoint != NULL) {
            rc = mc_config_set(mc_endpoint_keys, endpoint, key, value, err,
                               errlen);

        } else if (server != NULL) {
            rc = mc_config_set(mc_server_keys, server, key, value, err,
                               errlen);
        } else {
            rc = mc_config_set(mc_main_keys, cfg, key, value, err, errlen);
        }

        if (rc != 0) {
            /* prefix the location to what mc_config_set() said */
            char  what[256];

            snprintf(what, sizeof(what), "%s", err);
            snprintf(err, errlen, "%s:%d: %s", path, lineno, what);
            break;
        }
    }

    fclose(f);

    if (rc != 0) {
        return -1;
    }

    return mc_config_finish(cfg, err, errlen);
}


int
mc_config_need_servers(mc_config_t *cfg, char *err, size_t errlen)
{
    int  i;

    if (cfg->nservers == 0) {
        snprintf(err, errlen, "%s: no [server <name>] section", cfg->path);
        return -1;
    }

    /* read here, by the commands that talk to MT5, and only by them */
    for (i = 0; i < cfg->nservers; i++) {
        if (mc_config_password(&cfg->servers[i], err, errlen) != 0) {
            return -1;
        }
    }

    return 0;
}


mc_server_config_t *
mc_config_server(mc_config_t *cfg, const char *name)
{
    int  i;

    for (i = 0; i < cfg->nservers; i++) {
        if (strcmp(cfg->servers[i].name, name) == 0) {
            return &cfg->servers[i];
        }
    }

    return NULL;
}


void
mc_config_usage(FILE *f)
{
    const mc_key_t  *k;

    fprintf(f, "configuration file keys:\n");

    for (k = mc_main_keys; k->name; k++) {
        fprintf(f, "  %-18s %s\n", k->name, k->help);
    }

    fprintf(f, "\none section per MT5 server, \"[server <name>]\" (the name "
            "credits carry in mt5_server):\n");

    for (k = mc_server_keys; k->name; k++) {
        fprintf(f, "  %-18s %s\n", k->name, k->help);
    }

    fprintf(f, "\none section per receiver of outbound events, \"[endpoint "
            "<name>]\" (mt5credit outbound; docs/portal-integration.md):\n");

    for (k = mc_endpoint_keys; k->name; k++) {
        fprintf(f, "  %-18s %s\n", k->name, k->help);
    }
}


/* 0 the first time a section gives a key, -1 after (or past the table) */
static int
mc_config_seen(mc_config_seen_t *seen, int section, const char *key)
{
    int  i;

    for (i = 0; i < seen->n; i++) {
        if (seen->keys[i].section == section
            && strcmp(seen->keys[i].key, key) == 0)
        {
            return -1;
        }
    }

    if (seen->n == (int) (sizeof(seen->keys) / sizeof(seen->keys[0]))) {
        return 0;
    }

    seen->keys[seen->n].section = section;
    snprintf(seen->keys[seen->n].key, sizeof(seen->keys[0].key), "%s", key);
    seen->n++;

    return 0;
}


/*
 * A *_file key's "%d/<name>": systemd's credentials directory
 * ($CREDENTIALS_DIRECTORY, LoadCredential=), as a unit file's %d means;
 * 0, or -1 with the reason.
 */
static int
mc_config_file(const char *key, char *value, size_t size, char *err,
    size_t errlen)
{
    char         path[1024];
    const char  *dir;

    if (strncmp(value, "%d/", 3) != 0) {
        return 0;
    }

    dir = getenv("CREDENTIALS_DIRECTORY");
    if (dir == NULL || dir[0] == '\0') {
        snprintf(err, errlen, "%s \"%s\": %%d is systemd's credentials "
                 "directory, and $CREDENTIALS_DIRECTORY is not set (the "
                 "unit's LoadCredential=)", key, value);
        return -1;
    }

    if ((size_t) snprintf(path, sizeof(path), "%s/%s", dir, value + 3)
        >= size)
    {
        snprintf(err, errlen, "%s: %s/%s is too long", key, dir, value + 3);
        return -1;
    }

    memcpy(value, path, strlen(path) + 1);

    return 0;
}


static char *
mc_config_trim(char *s)
{
    char  *e;

    while (isspace((unsigned char) *s)) {
        s++;
    }

    e = s + strlen(s);

    while (e > s && isspace((unsigned char) e[-1])) {
        e--;
    }

    *e = '\0';

    return s;
}


static int
mc_config_set(const mc_key_t *keys, void *base, const char *key,
    const char *value, char *err, size_t errlen)
{
    long             n;
    char            *end;
    size_t           len;
    const mc_key_t  *k;

    for (k = keys; k->name; k++) {
        if (strcmp(k->name, key) == 0) {
            break;
        }
    }

    if (k->name == NULL) {
        snprintf(err, errlen, "unknown key \"%s\"", key);
        return -1;
    }

    switch (k->type) {

    case MC_KEY_STR:
        if (strlen(value) >= k->size) {
            snprintf(err, errlen, "\"%s\" is too long", key);
            return -1;
        }

        strcpy((char *) base + k->offset, value);

        len = strlen(key);
        if (len > 5 && strcmp(key + len - 5, "_file") == 0) {
            return mc_config_file(key, (char *) base + k->offset, k->size,
                                  err, errlen);
        }

        return 0;

    case MC_KEY_BOOL:
        if (strcmp(value, "on") == 0 || strcmp(value, "yes") == 0) {
            *(int *) ((char *) base + k->offset) = 1;
            return 0;
        }

        if (strcmp(value, "off") == 0 || strcmp(value, "no") == 0) {
            *(int *) ((char *) base + k->offset) = 0;
            return 0;
        }

        snprintf(err, errlen, "\"%s\" must be on or off, not \"%s\"", key,
                 value);
        return -1;

    case MC_KEY_U64:
        errno = 0;
        {
            unsigned long long  u = strtoull(value, &end, 10);

            if (errno || *end != '\0' || value[0] == '-' || u == 0) {
                snprintf(err, errlen, "\"%s\" must be a positive integer, "
                         "not \"%s\"", key, value);
                return -1;
            }

            *(uint64_t *) ((char *) base + k->offset) = u;
        }
        return 0;

    case MC_KEY_SECONDS:
        if (mc_config_seconds(value, &n) != 0) {
            snprintf(err, errlen, "\"%s\" must be a duration like 30, 30s, "
                     "5m or 1h, not \"%s\"", key, value);
            return -1;
        }
        break;

    default: /* MC_KEY_INT */
        errno = 0;
        n = strtol(value, &end, 10);

        if (errno || *end != '\0' || end == value) {
            snprintf(err, errlen, "\"%s\" must be an integer, not \"%s\"",
                     key, value);
            return -1;
        }
        break;
    }

    if (n < k->min || n > k->max) {
        snprintf(err, errlen, "\"%s\" must be between %ld and %ld", key,
                 k->min, k->max);
        return -1;
    }

    *(int *) ((char *) base + k->offset) = (int) n;

    return 0;
}


static int
mc_config_seconds(const char *v, long *out)
{
    long   n, unit;
    char  *end;

    errno = 0;
    n = strtol(v, &end, 10);

    if (errno || end == v || n < 0) {
        return -1;
    }

    if (*end == '\0' || strcmp(end, "s") == 0) {
        unit = 1;

    } else if (strcmp(end, "m") == 0) {
        unit = 60;

    } else if (strcmp(end, "h") == 0) {
        unit = 3600;

    } else if (strcmp(end, "d") == 0) {
        unit = 86400;

    } else {
        return -1;
    }

    *out = n * unit;
    return 0;
}


static int
mc_config_finish(mc_config_t *cfg, char *err, size_t errlen)
{
    int                  i;
    mc_log_level_e       level;
    mc_server_config_t  *s;

    if (cfg->database[0] == '\0') {
        snprintf(err, errlen, "%s: \"database\" is required", cfg->path);
        return -1;
    }

    if (cfg->deployment_tag[0] != '\0'
        && (strlen(cfg->deployment_tag) > 8
            || strspn(cfg->deployment_tag, "abcdefghijklmnopqrstuvwxyz"
                                           "0123456789")
               != strlen(cfg->deployment_tag)))
    {
        snprintf(err, errlen, "%s: deployment_tag \"%s\": at most 8 of "
                 "a-z and 0-9", cfg->path, cfg->deployment_tag);
        return -1;
    }

    if (mc_log_parse_level(cfg->log_level, &level) != 0) {
        snprintf(err, errlen, "%s: unknown log_level \"%s\"", cfg->path,
                 cfg->log_level);
        return -1;
    }

    if (strcmp(cfg->log_format, "text") != 0
        && strcmp(cfg->log_format, "json") != 0)
    {
        snprintf(err, errlen, "%s: log_format \"%s\": text or json",
                 cfg->path, cfg->log_format);
        return -1;
    }

    if (mc_config_listens(cfg, err, errlen) != 0) {
        return -1;
    }

    /*
     * A claim must outlive the reads before the call, the call itself and
     * a margin: then no call can still be on its way when the lease ends
     * and the sweeper calls the outcome unknown.
     */
    if (cfg->lease < 3 * cfg->call_timeout + 5) {
        snprintf(err, errlen, "%s: lease (%ds) must be at least "
                 "3 x call_timeout + 5 (%ds)", cfg->path, cfg->lease,
                 3 * cfg->call_timeout + 5);
        return -1;
    }

    /* the same for a payout: its send ends before its lease does */
    if (cfg->payout_lease < cfg->payout_timeout + 5) {
        snprintf(err, errlen, "%s: payout_lease (%ds) must be at least "
                 "payout_timeout + 5 (%ds)", cfg->path, cfg->payout_lease,
                 cfg->payout_timeout + 5);
        return -1;
    }

    if (strcmp(cfg->payout_rail, "stripe_connect") == 0) {
        if (cfg->payout_provider[0] == '\0') {
            strcpy(cfg->payout_provider, "stripe");
        }

    } else if (strcmp(cfg->payout_rail, "generic") == 0) {
        if (cfg->payout_provider[0] == '\0'
            || cfg->payout_api_url[0] == '\0'
            || cfg->payout_api_key_file[0] == '\0')
        {
            snprintf(err, errlen, "%s: payout_rail generic needs "
                     "payout_provider, payout_api_url and "
                     "payout_api_key_file", cfg->path);
            return -1;
        }

    } else if (strcmp(cfg->payout_rail, "none") != 0) {
        snprintf(err, errlen, "%s: unknown payout_rail \"%s\" (generic, "
                 "stripe_connect or none)", cfg->path, cfg->payout_rail);
        return -1;
    }

    if (mc_config_outbound(cfg, err, errlen) != 0) {
        return -1;
    }

    for (i = 0; i < cfg->nservers; i++) {
        s = &cfg->servers[i];

        if (s->url[0] == '\0' || s->manager == 0
            || s->password_file[0] == '\0')
        {
            snprintf(err, errlen, "%s: [server %s] needs url, manager and "
                     "password_file", cfg->path, s->name);
            return -1;
        }

        if (strncmp(s->url, "https://", 8) != 0
            && strncmp(s->url, "http://", 7) != 0)
        {
            snprintf(err, errlen, "%s: [server %s] url must start with "
                     "https://", cfg->path, s->name);
            return -1;
        }

        s->mt5.name = s->name;
        s->mt5.url = s->url;
        s->mt5.manager = s->manager;
        s->mt5.password = s->password;
        s->mt5.ca_file = s->ca_file[0] ? s->ca_file : NULL;
        s->mt5.tls_verify = s->tls_verify;
        s->mt5.connect_timeout_ms = cfg->connect_timeout * 1000L;
        s->mt5.timeout_ms = cfg->call_timeout * 1000L;
        s->mt5.ping_interval = s->ping_interval;
        s->mt5.agent = "mt5credit";
    }

    return 0;
}


/* the password: the file's first line, trimmed; never echoed anywhere */

static int
mc_config_password(mc_server_config_t *s, char *err, size_t errlen)
{
    FILE         *f;
    char         *p;
    struct stat   st;

    f = fopen(s->password_file, "r");
    if (f == NULL) {
        snprintf(err, errlen, "[server %s] password_file %s: %s", s->name,
                 s->password_file, strerror(errno));
        return -1;
    }

    if (fstat(fileno(f), &st) == 0 && (st.st_mode & 0077)) {
        mc_log(MC_LOG_WARN, "[server %s] password_file %s is readable by "
               "others (mode %03o); use 0600", s->name, s->password_file,
               (unsigned) (st.st_mode & 0777));
    }

    if (fgets(s->password, sizeof(s->password), f) == NULL) {
        s->password[0] = '\0';
    }

    fclose(f);

    p = mc_config_trim(s->password);
    memmove(s->password, p, strlen(p) + 1);

    if (s->password[0] == '\0') {
        snprintf(err, errlen, "[server %s] password_file %s is empty",
                 s->name, s->password_file);
        return -1;
    }

    return 0;
}


/* each program's metrics address is a loopback one, and its own: the
   three run on one host, and a second bind would fail at start */
static int
mc_config_listens(const mc_config_t *cfg, char *err, size_t errlen)
{
    int          i, j;
    char         why[256];
    const char  *v[4], *k[4] = { "metrics_listen", "query_metrics_listen",
                                 "payout_metrics_listen",
                                 "outbound_metrics_listen" };

    v[0] = cfg->metrics_listen;
    v[1] = cfg->query_metrics_listen;
    v[2] = cfg->payout_metrics_listen;
    v[3] = cfg->outbound_metrics_listen;

    for (i = 0; i < 4; i++) {
        if (v[i][0] == '\0') {
            continue;
        }

        if (mc_exporter_check(v[i], why, sizeof(why)) != 0) {
            snprintf(err, errlen, "%s: %s: %s", cfg->path, k[i], why);
            return -1;
        }

        for (j = 0; j < i; j++) {
            if (strcmp(v[i], v[j]) == 0) {
                snprintf(err, errlen, "%s: %s and %s are both \"%s\": each "
                         "program needs its own", cfg->path, k[j], k[i], v[i]);
                return -1;
            }
        }
    }

    return 0;
}


static int
mc_config_endpoint_section(mc_config_t *cfg, const char *name,
    mc_endpoint_config_t **endpoint, char *err, size_t errlen)
{
    int  i;

    for (i = 0; i < cfg->nendpoints; i++) {
        if (strcmp(cfg->endpoints[i].name, name) == 0) {
            snprintf(err, errlen, "endpoint \"%s\" is duplicate", name);
            return -1;
        }
    }

    if (cfg->nendpoints == MC_CONFIG_MAX_ENDPOINTS) {
        snprintf(err, errlen, "more than %d endpoints",
                 MC_CONFIG_MAX_ENDPOINTS);
        return -1;
    }

    *endpoint = &cfg->endpoints[cfg->nendpoints++];
    snprintf((*endpoint)->name, sizeof((*endpoint)->name), "%s", name);

    return 0;
}


/*
 * The retry schedule ("5s, 5m, 30m") as seconds, and each endpoint
 * whole: the sender refuses to start on a half-configured one rather
 * than find out at its first event.
 */
static int
mc_config_outbound(mc_config_t *cfg, char *err, size_t errlen)
{
    int                    i;
    long                   n;
    char                   list[256], *tok, *save;
    mc_endpoint_config_t  *e;

    snprintf(list, sizeof(list), "%s", cfg->outbound_retry);
    cfg->outbound_nretry = 0;

    for (tok = strtok_r(list, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save))
    {
        tok = mc_config_trim(tok);

        if (mc_config_seconds(tok, &n) != 0 || n > 7 * 86400) {
            snprintf(err, errlen, "%s: outbound_retry: \"%s\" is not a "
                     "duration of at most 7d (30s, 5m, 2h)", cfg->path, tok);
            return -1;
        }

        if (cfg->outbound_nretry == MC_CONFIG_MAX_RETRIES) {
            snprintf(err, errlen, "%s: outbound_retry: more than %d "
                     "retries", cfg->path, MC_CONFIG_MAX_RETRIES);
            return -1;
        }

        cfg->outbound_retry_s[cfg->outbound_nretry++] = (int) n;
    }

    for (i = 0; i < cfg->nendpoints; i++) {
        e = &cfg->endpoints[i];

        if (e->url[0] == '\0' || e->secret_file[0] == '\0') {
            snprintf(err, errlen, "%s: [endpoint %s] needs url and "
                     "secret_file", cfg->path, e->name);
            return -1;
        }

        if (mc_config_endpoint_url(e->url) != 0) {
            snprintf(err, errlen, "%s: [endpoint %s] url must be https:// "
                     "(plain HTTP only to 127.0.0.1 or localhost), with no "
                     "user or password in it", cfg->path, e->name);
            return -1;
        }
    }

    return 0;
}


/*
 * An endpoint's url as libcurl will read it: https, or http to this
 * machine, by the host curl connects to ("http://localhost:1@elsewhere/"
 * goes elsewhere), and no credentials in it (they would be logged).
 */
static int
mc_config_endpoint_url(const char *url)
{
    int    rc;
    char  *scheme, *host, *user;
    CURLU *u;

    u = curl_url();
    if (u == NULL) {
        return -1;
    }

    scheme = host = user = NULL;
    rc = -1;

    if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK
        && curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK
        && curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK
        && curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_NO_USER)
    {
        if (strcmp(scheme, "https") == 0
            || (strcmp(scheme, "http") == 0
                && (strcmp(host, "127.0.0.1") == 0
                    || strcmp(host, "localhost") == 0)))
        {
            rc = 0;
        }
    }

    curl_free(scheme);
    curl_free(host);
    curl_free(user);
    curl_url_cleanup(u);

    return rc;
}
