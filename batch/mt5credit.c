/*
 * Copyright (C) mt5-credit
 *
 * mt5credit: the batch side of mt5-credit.
 *
 *   mt5credit work     claim pending credits and make their MT5 deals
 *   mt5credit resolve  look up unknown outcomes once, then exit
 *   mt5credit status   the state of the work, for people and Prometheus
 */


#include <ctype.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "mc_alert.h"
#include "mc_cases.h"
#include "mc_risk.h"
#include "mc_events.h"
#include "mc_outbound.h"
#include "mc_outbox.h"
#include "mc_pause.h"
#include "mc_persons.h"
#include "mc_retention.h"
#include "mc_audit.h"
#include "mc_withdrawals.h"
#include "mc_config.h"
#include "mc_log.h"
#include "mc_payout.h"
#include "mc_backfill.h"
#include "mc_query.h"
#include "mc_testhook.h"
#include "mc_recon.h"
#include "mc_status.h"
#include "mc_version.h"
#include "mc_worker.h"


#define MC_DEFAULT_CONFIG  "/etc/mt5credit/mt5credit.conf"


/* set by SIGTERM/SIGINT; everything long-running watches it */
static volatile sig_atomic_t  mc_stop;


typedef int (*mc_loop_pt)(mc_config_t *cfg, int once,
    volatile sig_atomic_t *stop);

typedef struct mc_command_s  mc_command_t;

struct mc_command_s {
    const char   *name;
    int         (*run)(const mc_command_t *cmd, int argc, char **argv);
    const char   *args;        /* after "usage: mt5credit NAME" */
    const char   *what;        /* a line or two, for both helps */
    const char   *options;     /* "mt5credit NAME --help" only */
    unsigned      keys:1;      /* it reads the configuration file */
    const char   *log_name;    /* the name its log lines carry */
    mc_loop_pt    loop;        /* mc_cmd_loop: one round */
};


static void mc_usage(FILE *f);
static void mc_command_usage(const mc_command_t *cmd, FILE *f);
static int mc_usage_error(const mc_command_t *cmd);
static int mc_extra_args(const mc_command_t *cmd, int argc, char **argv);
static void mc_on_signal(int signo);
static int mc_cmd_work(const mc_command_t *cmd, int argc, char **argv);
static int mc_cmd_status(const mc_command_t *cmd, int argc, char **argv);
static int mc_cmd_reconcile(const mc_command_t *cmd, int argc, char **argv);
static int mc_option_bounded(const char *name, const char *value,
    long max, const char *unit, int *out);
static int mc_cmd_cases(const mc_command_t *cmd, int argc, char **argv);
static int mc_cmd_loop(const mc_command_t *cmd, int argc, char **argv);
static int mc_cmd_testhook(const mc_command_t *cmd, int argc, char **argv);
static int mc_cmd_backfill(const mc_command_t *cmd, int argc, char **argv);
static int mc_cmd_unit_failed(const mc_command_t *cmd, int argc,
    char **argv);
static int mc_since(const char *s, int64_t now, int64_t *since);
static const char *mc_config_path(const char *given);
static mc_config_t *mc_config_open(const char *path, int need_servers,
    int oom_rc, int *rc);
static void mc_run_setup(const mc_config_t *cfg, const char *name);


#define MC_CONFIG_OPTION                                                     \
"  -c, --config FILE    configuration file (default $MT5CREDIT_CONFIG or\n"  \
"                       " MC_DEFAULT_CONFIG ")\n"

#define MC_ONCE_OPTION                                                       \
"      --once           one round, then exit\n"

#define MC_HELP_OPTION                                                       \
"  -h, --help           this help\n"


static const mc_command_t  mc_commands[] = {

    { "work", mc_cmd_work, "[-c FILE] [--once]",
      "claim pending credits and make their MT5 balance deals\n"
      "until stopped; SIGTERM finishes the call in flight,\n"
      "records its outcome, and exits",
      MC_CONFIG_OPTION
      "      --once           one round (sweep, resolve, drain), then exit\n"
      MC_HELP_OPTION, 1, "mt5credit-work", NULL },

    { "resolve", mc_cmd_work, "[-c FILE]",
      "look up the outcome of unknown credits once, then exit",
      MC_CONFIG_OPTION MC_HELP_OPTION, 1, "mt5credit-resolve", NULL },

    { "status", mc_cmd_status,
      "[-c FILE | --database INFO] [--prometheus | --textfile FILE]",
      "counts per status and kind, oldest pending and unknown\n"
      "ages, open cases, and which mt5credit read them",
      MC_CONFIG_OPTION
      "      --database INFO  a libpq conninfo instead of a config file\n"
      "      --prometheus     Prometheus text format\n"
      "      --textfile FILE  the same, written to FILE atomically (a\n"
      "                       temporary file renamed over it), for\n"
      "                       node-exporter's textfile collector\n"
      MC_HELP_OPTION, 0, NULL, NULL },

    { "reconcile", mc_cmd_reconcile,
      "--provider NAME --day YYYY-MM-DD --tz ZONE --currency CODE\n"
      "           --settlement FILE [--control FILE] [options]",
      "match one provider's settlement file for one day with\n"
      "our credits and MT5's balance deals; every difference a\n"
      "case; CSV and HTML report (exit 0 reconciled, 1 breaks,\n"
      "2 bad input, 3 incomplete, 4 failure)",
      MC_CONFIG_OPTION
      "      --provider NAME      the provider, as in webhook events "
      "(stripe)\n"
      "      --day YYYY-MM-DD     the business day\n"
      "      --tz ZONE            its time zone, IANA (UTC, Europe/London, "
      "...)\n"
      "      --currency CODE      the settlement currency (USD)\n"
      "      --format F           settlement file format: stripe or "
      "generic\n"
      "      --settlement FILE    the provider's settlement CSV\n"
      "      --control FILE       payout control totals (payout_id, "
      "currency,\n"
      "                           amount[, count]); without it the file "
      "cannot\n"
      "                           be shown complete and the run is "
      "incomplete\n"
      "      --out DIR            report directory (recon_out, default .)\n"
      "      --deal-grace SECS    deals fetched past the day "
      "(recon_deal_grace)\n"
      "      --window DAYS        a credit waits this many days for its\n"
      "                           settlement row, in transit; past it a "
      "break\n"
      "                           (recon_match_window, 7)\n"
      "      --settlement-grace HOURS\n"
      "                           a settlement row waits this long for its "
      "credit,\n"
      "                           to the end of the run's day, never past "
      "the\n"
      "                           window (recon_settlement_grace, 24)\n"
      MC_HELP_OPTION, 1, "mt5credit-reconcile", NULL },

    { "poll-provider", mc_cmd_loop, "[-c FILE] [--once]",
      "ask the provider about deposits that should be paid by\n"
      "now and have no credit; answers go through ingest(), like\n"
      "a webhook",
      MC_CONFIG_OPTION MC_ONCE_OPTION MC_HELP_OPTION, 1, "mt5credit-poll",
      mc_query_run },

    { "backfill", mc_cmd_backfill, "stripe [-c FILE] [--since 3h]",
      "the webhooks the provider could not deliver, from its\n"
      "own list: each event not stored yet goes through\n"
      "ingest() (never a second credit)",
      MC_CONFIG_OPTION
      "      --since WHEN     events created since: 30m, 3h, 2d, or a UTC\n"
      "                       time 2026-11-30T12:00:00Z (default 24h; at\n"
      "                       most 30 days, what Stripe keeps)\n"
      MC_HELP_OPTION, 1, "mt5credit-backfill", NULL },

    { "unit-failed", mc_cmd_unit_failed, "[-c FILE] UNIT",
      "alert that a scheduled run gave up (its unit's\n"
      "OnFailure=): the unit's retries within its day are spent",
      MC_CONFIG_OPTION MC_HELP_OPTION, 1, "mt5credit-unit-failed", NULL },

    { "payout", mc_cmd_loop, "[-c FILE] [--once]",
      "send the payouts of withdrawals whose MT5 debit is done,\n"
      "with an idempotency key; look up unknown ones before any\n"
      "resend",
      MC_CONFIG_OPTION MC_ONCE_OPTION MC_HELP_OPTION, 1, "mt5credit-payout",
      mc_payout_run },

    { "outbound", mc_cmd_loop, "[-c FILE] [--once]",
      "deliver the outbound events (deposit credited, withdrawal\n"
      "paid, case opened, ...) to each [endpoint], signed per\n"
      "Standard Webhooks, at least once, on a retry schedule",
      MC_CONFIG_OPTION MC_ONCE_OPTION MC_HELP_OPTION, 1,
      "mt5credit-outbound", mc_outbound_run },

    { "cases", mc_cmd_cases, "<action> [options]",
      "the case desk: list, show, assign, note, resolve, and the\n"
      "two-person money actions",
      NULL, 0, NULL, NULL },

    { "risk", mc_cmd_cases, "<action> [options]",
      "the risk rules that hold a deposit's credit for two\n"
      "people before MT5: rules, changes, propose (one person),\n"
      "approve (another)",
      NULL, 0, NULL, NULL },

    { "withdrawals", mc_cmd_cases, "<action> [options]",
      "the withdrawal desk: the queue, a request with its plan\n"
      "and digest, prepare (the maker), approve (another person),\n"
      "reject",
      NULL, 0, NULL, NULL },

    { "events", mc_cmd_cases, "<action> [options]",
      "stored webhook events: list, show (the bytes as\n"
      "received), replay through ingest's rules (never a\n"
      "second credit)",
      NULL, 0, NULL, NULL },

    { "outbox", mc_cmd_cases, "<action> [options]",
      "outbound events: list, show (the body as sent, every\n"
      "try), replay one or all since a time, enable an endpoint",
      NULL, 0, NULL, NULL },

    { "retention", mc_cmd_cases,
      "[--days N] [--reports DIR] [--report-days N]",
      "empty webhook bodies past N days (their digests kept;\n"
      "not those an open case or an unfinished credit needs),\n"
      "and remove reconciliation reports past theirs",
      "  -c, --config FILE    desk_database and recon_out from it\n"
      "      --database INFO  a libpq conninfo (a member of\n"
      "                       mt5credit_retention)\n"
      "      --days N         90 to 3650 (400)\n"
      "      --reports DIR    the reports directory (recon_out)\n"
      "      --report-days N  (400)\n"
      MC_HELP_OPTION, 0, NULL, NULL },

    { "audit", mc_cmd_cases, "seal --key FILE --heads FILE | verify "
      "--pubkey FILE --heads FILE",
      "the money journal (sql/081): seal a period under a signed\n"
      "head kept off the database host; verify every chain, fact\n"
      "and sealed period, naming the first entry that does not fit",
      NULL, 0, NULL, NULL },

    { "pause", mc_cmd_cases, "server|provider|kind NAME --reason TEXT",
      "the kill switch: no credit of that MT5 server, provider or\n"
      "kind is claimed until it is resumed; webhooks are still\n"
      "stored; pause list shows who paused what and why",
      NULL, 0, NULL, NULL },

    { "resume", mc_cmd_cases, "server|provider|kind NAME [--note TEXT]",
      "lift a pause: claims go on, the pause stays on record",
      NULL, 0, NULL, NULL },

    { "persons", mc_cmd_cases, "enrol|reset PERSON [--qr FILE.png] | list"
      " | map NAME PERSON | unmap NAME | names",
      "a person's second factor for the console's money\n"
      "decisions: its otpauth URI and QR code, shown once;\n"
      "which names the console's identity sources give are\n"
      "which person",
      NULL, 0, NULL, NULL },

    { "send-test-webhook", mc_cmd_testhook, "--url URL --secret-file FILE ...",
      "sign a provider event and POST it to a running edge, to\n"
      "check a setup",
      NULL, 0, NULL, NULL },

    { NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL }
};


int
main(int argc, char **argv)
{
    char                 prog[64];
    const char          *name;
    const mc_command_t  *cmd;

    if (argc < 2) {
        mc_usage(stderr);
        return 2;
    }

    name = argv[1];

    if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0
        || strcmp(name, "help") == 0)
    {
        mc_usage(stdout);
        return 0;
    }

    if (strcmp(name, "-V") == 0 || strcmp(name, "--version") == 0
        || strcmp(name, "version") == 0)
    {
        mc_version_print(stdout);
        return 0;
    }

    for (cmd = mc_commands; cmd->name != NULL; cmd++) {
        if (strcmp(cmd->name, name) == 0) {
            break;
        }
    }

    if (cmd->name == NULL) {
        fprintf(stderr, "mt5credit: unknown command \"%s\"\n"
                "Try \"mt5credit --help\".\n", name);
        return 2;
    }

    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
        fprintf(stderr, "mt5credit: curl_global_init failed\n");
        return 1;
    }

    /* jansson seeds its hash function on first use; not from two threads */
    json_object_seed(0);

    /* getopt names its complaints after argv[0] */
    snprintf(prog, sizeof(prog), "mt5credit %s", cmd->name);
    argv[1] = prog;

    return cmd->run(cmd, argc - 1, argv + 1);
}


static void
mc_usage(FILE *f)
{
    const char          *p;
    const mc_command_t  *cmd;

    fprintf(f, "usage: mt5credit <command> [options]\n"
               "       mt5credit --version | --help\n\ncommands:\n");

    for (cmd = mc_commands; cmd->name != NULL; cmd++) {
        fprintf(f, "  %-18s ", cmd->name);

        /* the description, indented under its first line */
        for (p = cmd->what; *p != '\0'; p++) {
            fputc(*p, f);
            if (*p == '\n') {
                fprintf(f, "  %-18s ", "");
            }
        }

        fputc('\n', f);
    }

    fprintf(f, "\n\"mt5credit <command> --help\" gives its options and, "
               "for those that read one,\nthe configuration file's keys.\n");
}


/* "mt5credit NAME --help": what it does, its options, its file's keys */
static void
mc_command_usage(const mc_command_t *cmd, FILE *f)
{
    fprintf(f, "usage: mt5credit %s %s\n\n%s\n\noptions:\n%s", cmd->name,
            cmd->args, cmd->what, cmd->options);

    if (cmd->keys) {
        fputc('\n', f);
        mc_config_usage(f);
    }
}


/* getopt said what was wrong, or the caller did; where to look, exit 2 */
static int
mc_usage_error(const mc_command_t *cmd)
{
    fprintf(stderr, "Try \"mt5credit %s --help\".\n", cmd->name);
    return 2;
}


/* operands where none are taken: a typo must not be ignored */
static int
mc_extra_args(const mc_command_t *cmd, int argc, char **argv)
{
    if (optind < argc) {
        fprintf(stderr, "mt5credit %s: unexpected argument \"%s\"\n",
                cmd->name, argv[optind]);
        return mc_usage_error(cmd);
    }

    return 0;
}


static void
mc_on_signal(int signo)
{
    (void) signo;
    mc_stop = 1;
}


static const char *
mc_config_path(const char *given)
{
    const char  *env;

    if (given != NULL) {
        return given;
    }

    env = getenv("MT5CREDIT_CONFIG");

    return (env != NULL && env[0] != '\0') ? env : MC_DEFAULT_CONFIG;
}


/* the configuration file, checked; NULL (said why on stderr) with the
   exit status in *rc */
static mc_config_t *
mc_config_open(const char *path, int need_servers, int oom_rc, int *rc)
{
    char          err[1024];
    mc_config_t  *cfg;

    cfg = malloc(sizeof(mc_config_t));
    if (cfg == NULL) {
        fprintf(stderr, "mt5credit: out of memory\n");
        *rc = oom_rc;
        return NULL;
    }

    if (mc_config_load(mc_config_path(path), cfg, err, sizeof(err)) != 0
        || (need_servers && mc_config_need_servers(cfg, err, sizeof(err))
            != 0))
    {
        fprintf(stderr, "mt5credit: %s\n", err);
        free(cfg);
        *rc = 2;
        return NULL;
    }

    return cfg;
}


/* logging as configured, and SIGTERM/SIGINT to the stop flag */
static void
mc_run_setup(const mc_config_t *cfg, const char *name)
{
    mc_log_level_e    level;
    struct sigaction  sa;

    (void) mc_log_parse_level(cfg->log_level, &level);
    mc_log_set_level(level);
    mc_log_set_name(name);
    mc_log_set_json(strcmp(cfg->log_format, "json") == 0);

    mc_log(MC_LOG_INFO, "mt5credit %s (commit %s)", mc_version, mc_commit);

    /* no SA_RESTART: a sleep or a Redis wait ends early and sees the stop */
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = mc_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}


static int
mc_cmd_work(const mc_command_t *cmd, int argc, char **argv)
{
    int               c, once, rc, resolve_only;
    const char       *path;
    mc_config_t      *cfg;
    mc_worker_t       w;

    static struct option  opts[] = {
        { "config", required_argument, NULL, 'c' },
        { "once", no_argument, NULL, 'o' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };

    path = NULL;
    resolve_only = strcmp(cmd->name, "resolve") == 0;
    once = resolve_only;

    while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
        switch (c) {

        case 'c':
            path = optarg;
            break;

        case 'o':
            once = 1;
            break;

        case 'h':
            mc_command_usage(cmd, stdout);
            return 0;

        default:
            return mc_usage_error(cmd);
        }
    }

    if (mc_extra_args(cmd, argc, argv) != 0) {
        return 2;
    }

    cfg = mc_config_open(path, 1, 1, &rc);
    if (cfg == NULL) {
        return rc;
    }

    mc_run_setup(cfg, cmd->log_name);

    if (mc_worker_init(&w, cfg, (volatile int *) &mc_stop) != 0) {
        fprintf(stderr, "mt5credit: out of memory\n");
        free(cfg);
        return 1;
    }

    /* a worker that cannot keep its claims would claim nothing, round
       after round: it says so once and stops */
    if (!resolve_only && mc_rewind_open(&w.rewind) != 0) {
        mc_worker_free(&w);
        free(cfg);
        return 2;
    }

    /* checked at start: a worker of another deployment stops here */
    if (mc_db_ready(w.db) == 0 && !mc_worker_deployment_ok(&w)) {
        fprintf(stderr, "mt5credit: work: the database is not this "
                "deployment's (deployment_tag); see the log\n");
        mc_worker_free(&w);
        free(cfg);
        return 1;
    }

    if (resolve_only) {
        rc = mc_db_sweep(w.db, cfg->worker_name) < 0
             || mc_resolver_round(&w) < 0;

    } else {
        rc = mc_worker_run(&w, once) != 0;
    }

    mc_worker_free(&w);
    free(cfg);

    return rc;
}


static int
mc_cmd_backfill(const mc_command_t *cmd, int argc, char **argv)
{
    int           c, rc;
    int64_t       now, since;
    const char   *path, *when, *provider;
    mc_config_t  *cfg;

    static struct option  opts[] = {
        { "config", required_argument, NULL, 'c' },
        { "since", required_argument, NULL, 's' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };

    path = NULL;
    when = "24h";

    while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c': path = optarg; break;
        case 's': when = optarg; break;

        case 'h':
            mc_command_usage(cmd, stdout);
            return 0;

        default:
            return mc_usage_error(cmd);
        }
    }

    if (optind + 1 != argc) {
        fprintf(stderr, "mt5credit backfill: which provider? "
                "\"mt5credit backfill stripe\"\n");
        return mc_usage_error(cmd);
    }
    provider = argv[optind];

    now = (int64_t) time(NULL);
    if (mc_since(when, now, &since) != 0) {
        fprintf(stderr, "mt5credit backfill: --since \"%s\": give 30m, 3h, "
                "2d or 2026-11-30T12:00:00Z, at most 30 days back\n", when);
        return 2;
    }

    cfg = mc_config_open(path, 0, 1, &rc);
    if (cfg == NULL) {
        return rc;
    }

    mc_run_setup(cfg, cmd->log_name);

    rc = mc_backfill_run(cfg, provider, since, &mc_stop);
    free(cfg);

    return rc;
}


/* "30m", "3h", "2d", or a UTC time; within the 30 days Stripe keeps */
static int
mc_since(const char *s, int64_t now, int64_t *since)
{
    int         used;
    char       *end;
    long        n;
    struct tm   tm;

    n = strtol(s, &end, 10);

    if (end != s && n > 0 && end[0] != '\0' && end[1] == '\0'
        && strchr("mhd", end[0]) != NULL)
    {
        *since = now - n * (end[0] == 'm' ? 60 : end[0] == 'h' ? 3600
                                                               : 86400);

    } else {
        memset(&tm, 0, sizeof(tm));
        used = 0;
        if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &tm.tm_year, &tm.tm_mon,
                   &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &used)
            != 6 || used == 0 || s[used] != '\0' || tm.tm_mon < 1
            || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31
            || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
        {
            return -1;
        }
        tm.tm_year -= 1900;
        tm.tm_mon -= 1;
        *since = (int64_t) timegm(&tm);
    }

    return (*since > now || *since < now - 30 * 86400) ? -1 : 0;
}


static int
mc_cmd_status(const mc_command_t *cmd, int argc, char **argv)
{
    int           c, prometheus, rc;
    const char   *path, *database, *textfile;
    mc_config_t  *cfg;

    static struct option  opts[] = {
        { "config", required_argument, NULL, 'c' },
        { "database", required_argument, NULL, 'd' },
        { "prometheus", no_argument, NULL, 'p' },
        { "textfile", required_argument, NULL, 't' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };

    path = NULL;
    database = NULL;
    textfile = NULL;
    prometheus = 0;

    while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
        switch (c) {

        case 'c':
            path = optarg;
            break;

        case 'd':
            database = optarg;
            break;

        case 'p':
            prometheus = 1;
            break;

        case 't':
            textfile = optarg;
            prometheus = 1;
            break;

        case 'h':
            mc_command_usage(cmd, stdout);
            return 0;

        default:
            return mc_usage_error(cmd);
        }
    }

    if (mc_extra_args(cmd, argc, argv) != 0) {
        return 2;
    }

    cfg = NULL;

    if (database == NULL) {
        cfg = mc_config_open(path, 0, 1, &rc);
        if (cfg == NULL) {
            return rc;
        }

        database = cfg->database;
    }

    rc = textfile != NULL ? mc_status_textfile(database, textfile)
                          : mc_status_print(database, prometheus, stdout);
    free(cfg);

    return rc;
}



/* --name VALUE, a whole number 0..max (NULL: *out is left as it is) */
static int
mc_option_bounded(const char *name, const char *value, long max,
    const char *unit, int *out)
{
    long   v;
    char  *end;

    if (value == NULL) {
        return 0;
    }

    v = strtol(value, &end, 10);

    if (*value == '\0' || *end != '\0' || v < 0 || v > max) {
        fprintf(stderr, "mt5credit: reconcile: --%s \"%s\" is not 0..%ld "
                "%s\n", name, value, max, unit);
        return -1;
    }

    *out = (int) v;
    return 0;
}

static int
mc_cmd_reconcile(const mc_command_t *cmd, int argc, char **argv)
{
    int               c, rc;
    const char       *path, *grace, *window, *settlement_grace;
    mc_config_t      *cfg;
    mc_recon_opts_t   o;

    static struct option  opts[] = {
        { "config", required_argument, NULL, 'c' },
        { "provider", required_argument, NULL, 'p' },
        { "day", required_argument, NULL, 'd' },
        { "tz", required_argument, NULL, 'z' },
        { "currency", required_argument, NULL, 'u' },
        { "format", required_argument, NULL, 'f' },
        { "settlement", required_argument, NULL, 's' },
        { "control", required_argument, NULL, 'C' },
        { "out", required_argument, NULL, 'o' },
        { "deal-grace", required_argument, NULL, 'g' },
        { "window", required_argument, NULL, 'w' },
        { "settlement-grace", required_argument, NULL, 'G' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };

    memset(&o, 0, sizeof(o));
    path = NULL;
    grace = NULL;
    window = NULL;
    settlement_grace = NULL;
    o.format_name = "stripe";

    while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c': path = optarg; break;
        case 'p': o.provider = optarg; break;
        case 'd': o.day = optarg; break;
        case 'z': o.time_zone = optarg; break;
        case 'u': o.currency = optarg; break;
        case 'f': o.format_name = optarg; break;
        case 's': o.settlement = optarg; break;
        case 'C': o.control = optarg; break;
        case 'o': o.out_dir = optarg; break;
        case 'g': grace = optarg; break;
        case 'w': window = optarg; break;
        case 'G': settlement_grace = optarg; break;

        case 'h':
            mc_command_usage(cmd, stdout);
            return 0;

        default:
            return mc_usage_error(cmd);
        }
    }

    if (mc_extra_args(cmd, argc, argv) != 0) {
        return 2;
    }

    if (o.provider == NULL || o.day == NULL || o.time_zone == NULL
        || o.currency == NULL || o.settlement == NULL)
    {
        fprintf(stderr, "mt5credit reconcile: --provider, --day, --tz, "
                "--currency and --settlement are required\n");
        return mc_usage_error(cmd);
    }

    if (mc_settle_format_parse(o.format_name, &o.format) != 0) {
        fprintf(stderr, "mt5credit: reconcile: unknown --format \"%s\" "
                "(stripe or generic)\n", o.format_name);
        return 2;
    }

    cfg = mc_config_open(path, 1, MC_RECON_FAILED, &rc);
    if (cfg == NULL) {
        return rc;
    }

    o.deal_grace = cfg->recon_deal_grace;
    o.window = cfg->recon_match_window;
    o.settlement_grace = cfg->recon_settlement_grace;

    if (mc_option_bounded("deal-grace", grace, 7 * 86400, "seconds",
                          &o.deal_grace) != 0
        || mc_option_bounded("window", window, 62, "days", &o.window) != 0
        || mc_option_bounded("settlement-grace", settlement_grace, 168,
                             "hours", &o.settlement_grace) != 0)
    {
        free(cfg);
        return 2;
    }

    if (o.out_dir == NULL) {
        o.out_dir = cfg->recon_out;
    }

    mc_run_setup(cfg, cmd->log_name);

    rc = mc_recon_run(cfg, &o, &mc_stop);
    free(cfg);

    return rc;
}


static int
mc_cmd_cases(const mc_command_t *cmd, int argc, char **argv)
{
    int           i, rc;
    const char   *path, *database;
    mc_config_t  *cfg;

    /* --config and --database are ours; the rest is the desk's (cases,
       risk, withdrawals, events, outbox, pause, resume, persons) */
    path = NULL;
    database = NULL;

    for (i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--config") == 0 || strcmp(argv[i], "-c") == 0
            || strcmp(argv[i], "--database") == 0)
        {
            if (argv[i][2] == 'd') {
                database = argv[i + 1];
            } else {
                path = argv[i + 1];
            }
            memmove(&argv[i], &argv[i + 2],
                    (size_t) (argc - i - 2 + 1) * sizeof(char *));
            argc -= 2;
            i--;
        }
    }

    cfg = NULL;

    if (database == NULL && (path != NULL || getenv("MT5CREDIT_CONFIG"))) {
        cfg = mc_config_open(path, 0, 1, &rc);
        if (cfg == NULL) {
            return rc;
        }

        database = cfg->desk_database;
    }

    if (strcmp(cmd->name, "events") == 0) {
        rc = mc_events_main(argc, argv, database);

    } else if (strcmp(cmd->name, "outbox") == 0) {
        rc = mc_outbox_main(argc, argv, database);

    } else if (strcmp(cmd->name, "pause") == 0
               || strcmp(cmd->name, "resume") == 0)
    {
        rc = mc_pause_main(argc, argv, database);

    } else if (strcmp(cmd->name, "withdrawals") == 0) {
        rc = mc_withdrawals_main(argc, argv, database);

    } else if (strcmp(cmd->name, "risk") == 0) {
        rc = mc_risk_main(argc, argv, database);

    } else if (strcmp(cmd->name, "persons") == 0) {
        rc = mc_persons_main(argc, argv, database);

    } else if (strcmp(cmd->name, "audit") == 0) {
        rc = mc_audit_main(argc, argv, database);

    } else if (strcmp(cmd->name, "retention") == 0) {
        rc = mc_retention_main(argc, argv, database,
                               cfg != NULL ? cfg->recon_out : NULL);

    } else {
        rc = mc_cases_main(argc, argv, database);
    }
    free(cfg);

    return rc;
}


/* a command that runs rounds until stopped, or one with --once */
static int
mc_cmd_loop(const mc_command_t *cmd, int argc, char **argv)
{
    int               c, once, rc;
    const char       *path;
    mc_config_t      *cfg;

    static struct option  opts[] = {
        { "config", required_argument, NULL, 'c' },
        { "once", no_argument, NULL, 'o' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };

    path = NULL;
    once = 0;

    while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c': path = optarg; break;
        case 'o': once = 1; break;

        case 'h':
            mc_command_usage(cmd, stdout);
            return 0;

        default:
            return mc_usage_error(cmd);
        }
    }

    if (mc_extra_args(cmd, argc, argv) != 0) {
        return 2;
    }

    cfg = mc_config_open(path, 0, 1, &rc);
    if (cfg == NULL) {
        return rc;
    }

    mc_run_setup(cfg, cmd->log_name);

    rc = cmd->loop(cfg, once, &mc_stop);
    free(cfg);

    return rc;
}


static int
mc_cmd_testhook(const mc_command_t *cmd, int argc, char **argv)
{
    (void) cmd;

    return mc_testhook_main(argc, argv);
}


/*
 * A scheduled run (reconcile, backfill) that failed and spent its
 * retries: OnFailure= runs this, and the alert pages a person the same
 * day instead of the staleness alert two days later.
 */
static int
mc_cmd_unit_failed(const mc_command_t *cmd, int argc, char **argv)
{
    int                 c, rc;
    size_t              i;
    const char         *path, *unit;
    mc_config_t        *cfg;
    mc_alert_config_t   alert;

    static struct option  opts[] = {
        { "config", required_argument, NULL, 'c' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };

    path = NULL;

    while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c': path = optarg; break;

        case 'h':
            mc_command_usage(cmd, stdout);
            return 0;

        default:
            return mc_usage_error(cmd);
        }
    }

    if (optind + 1 != argc) {
        fprintf(stderr, "mt5credit unit-failed: which unit? "
                "\"mt5credit unit-failed %%n\" in OnFailure=\n");
        return mc_usage_error(cmd);
    }

    /* a unit name: [A-Za-z0-9@_.:-], nothing a log reader could trip on */
    unit = argv[optind];
    for (i = 0; unit[i] != '\0'; i++) {
        if (!isalnum((unsigned char) unit[i])
            && strchr("@_.:-\\", unit[i]) == NULL)
        {
            fprintf(stderr, "mt5credit unit-failed: \"%s\" is not a unit "
                    "name\n", unit);
            return 2;
        }
    }

    cfg = mc_config_open(path, 0, 1, &rc);
    if (cfg == NULL) {
        return rc;
    }

    mc_run_setup(cfg, cmd->log_name);

    alert.command = cfg->alert_command;
    alert.url = cfg->alert_url;
    alert.worker = cfg->worker_name;

    mc_alert(&alert, "scheduled_run_failed", 0, "%s failed and spent its "
             "retries: see journalctl -u %s; its work waits for a person "
             "or the next run", unit, unit);

    free(cfg);

    return 0;
}
