/*
 * Copyright (C) mt5-credit
 *
 * The batch programs' configuration: one file of "key = value" lines,
 * with a [server <name>] section per MT5 server and an [endpoint <name>]
 * section per receiver of outbound events.  docs/worker.md lists
 * every key.  Unknown keys, bad values and missing required keys are
 * errors naming the file and line: a typo never runs with a default.
 */


#ifndef MC_CONFIG_H
#define MC_CONFIG_H


#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "mc_mt5.h"


#define MC_CONFIG_MAX_SERVERS    16
#define MC_CONFIG_MAX_ENDPOINTS  8
#define MC_CONFIG_MAX_RETRIES    16


typedef struct {
    char             name[64];
    char             url[512];
    uint64_t         manager;
    char             password_file[512];
    char             ca_file[512];
    int              tls_verify;
    int              sessions;        /* cap across all workers */
    int              ping_interval;   /* seconds */
    char             recon_groups[1024]; /* groups reconciled, comma list */
    char             time_zone[64];    /* the server's zone, or "" */
    char             password[256];   /* read from password_file */
    mc_mt5_config_t  mt5;             /* filled by mc_config_load() */
} mc_server_config_t;


/* a receiver of outbound events (batch/outbound/, sql/095) */
typedef struct {
    char             name[64];        /* as outbound_endpoint names it */
    char             url[512];
    char             secret_file[512]; /* whsec_ secrets, a line each */
    char             ca_file[512];    /* "": the system's CAs */
} mc_endpoint_config_t;


typedef struct {
    char                 path[512];
    char                 database[1024];   /* libpq conninfo */
    char                 worker_name[128];
    char                 redis[256];       /* "127.0.0.1:6379", "unix:/p" */
    char                 redis_key[200];
    int                  poll_interval;    /* s: without a wake-up */
    int                  lease;            /* s: a claim's lease */
    int                  call_timeout;     /* s: one MT5 request */
    int                  connect_timeout;  /* s */
    int                  settle_margin;    /* s after a lease, for lookups */
    int                  lookback;         /* s before a credit, for lookups */
    int                  witness_interval; /* s between MT5 witness checks */
    int                  witness_credits;  /* pending credits asked about */
    int                  resolve_interval; /* s between resolver rounds */
    int                  resolve_retry;    /* s before an unresolved retry */
    int                  sweep_interval;   /* s between lease sweeps */
    int                  server_backoff;   /* s a failing server rests */
    int                  group_cache;      /* s a group's currency is kept */
    char                 alert_command[512];
    char                 alert_url[512];
    char                 log_level[16];
    char                 log_format[8];    /* text, json */
    char                 metrics_dir[512]; /* "": no textfile */
    char                 metrics_listen[80];        /* work; "": none */
    char                 query_metrics_listen[80];  /* poll-provider */
    char                 payout_metrics_listen[80]; /* payout */
    char                 deployment_tag[16]; /* what the database says, 036 */
    char                 state_dir[512];   /* the workers' claims, kept */
    char                 recon_database[1024]; /* "": database */
    char                 desk_database[1024];  /* "": libpq's defaults */
    int                  recon_deal_grace; /* s of deals after the day */
    int                  recon_match_window; /* days a credit waits */
    int                  recon_settlement_grace; /* hours a row waits */
    int                  recon_sessions;   /* per server, parallel fetch */
    int                  recon_rate;       /* requests/s per server; 0: any */
    int                  recon_slot_wait;  /* seconds for a session slot */
    char                 recon_out[512];   /* report directory */
    char                 query_database[1024]; /* "": database */
    char                 provider_api_url[512];      /* poll-provider */
    char                 provider_api_key_file[512];
    int                  query_min_age;    /* s before a deposit is asked */
    int                  query_backoff;    /* s, doubled per attempt */
    int                  query_max_attempts;
    int                  query_interval;   /* s between rounds */
    int                  query_timeout;    /* s for one provider request */
    int                  payout_lease;     /* s a sender holds a payout */
    int                  payout_timeout;   /* s for one payout request */
    int                  payout_margin;    /* s after a lease before lookup */
    int                  payout_backoff;   /* s, doubled per failed lookup */
    int                  payout_max_lookups;
    int                  payout_recheck;   /* s between accepted checks */
    int                  payout_paid_watch; /* s a paid payout is rechecked */
    int                  payout_interval;  /* s between rounds */
    char                 payout_rail[16];  /* none, generic, stripe_connect */
    char                 payout_provider[33]; /* whose payout legs */
    char                 payout_api_url[512];      /* generic rail */
    char                 payout_api_key_file[512];
    char                 outbound_database[1024]; /* "": database */
    char                 outbound_metrics_listen[80];
    char                 outbound_retry[256]; /* as given */
    int                  outbound_retry_s[MC_CONFIG_MAX_RETRIES];
    int                  outbound_nretry;  /* retries after the first try */
    int                  outbound_timeout; /* s for one delivery */
    int                  outbound_interval; /* s between idle rounds */
    int                  outbound_batch;   /* deliveries claimed at once */
    int                  outbound_disable_after; /* s failing: disabled */
    mc_server_config_t   servers[MC_CONFIG_MAX_SERVERS];
    int                  nservers;
    mc_endpoint_config_t endpoints[MC_CONFIG_MAX_ENDPOINTS];
    int                  nendpoints;
} mc_config_t;


/*
 * Loads and checks a configuration file, reads each server's password
 * file.  Returns 0, or -1 with a message naming file and line in err.
 */
int mc_config_load(const char *path, mc_config_t *cfg, char *err,
    size_t errlen);

mc_server_config_t *mc_config_server(mc_config_t *cfg, const char *name);

/*
 * The commands that talk to MT5 need a server, and its password, read
 * here (a command that does not talk to MT5 reads none): -1 with the
 * reason.
 */
int mc_config_need_servers(mc_config_t *cfg, char *err, size_t errlen);

/* prints every key with its meaning and default, for --help */
void mc_config_usage(FILE *f);


#endif /* MC_CONFIG_H */
