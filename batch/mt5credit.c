/*
 * Copyright (C) mt5-credit
 *
 * mt5credit: the batch side of mt5-credit.
 *
 *   mt5credit work     claim pending credits and make their MT5 deals
 *   mt5credit resolve  look up unknown outcomes once, then exit
 *   mt5credit status   the state of the work, for people and Prometheus
 */


#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "mc_config.h"
#include "mc_log.h"
#include "mc_status.h"
#include "mc_worker.h"


#define MC_DEFAULT_CONFIG  "/etc/mt5credit/mt5credit.conf"


/* set by SIGTERM/SIGINT; everything long-running watches it */
static volatile sig_atomic_t  mc_stop;


static void mc_usage(FILE *f);
static void mc_on_signal(int signo);
static int mc_cmd_work(int argc, char **argv, int resolve_only);
static int mc_cmd_status(int argc, char **argv);
static const char *mc_config_path(const char *given);


int
main(int argc, char **argv)
{
    const char  *cmd;

    if (argc < 2) {
        mc_usage(stderr);
        return 2;
    }

    cmd = argv[1];

    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0
        || strcmp(cmd, "help") == 0)
    {
        mc_usage(stdout);
        return 0;
    }

    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
        fprintf(stderr, "mt5credit: curl_global_init failed\n");
        return 1;
    }

    if (strcmp(cmd, "work") == 0) {
        return mc_cmd_work(argc - 1, argv + 1, 0);
    }

    if (strcmp(cmd, "resolve") == 0) {
        return mc_cmd_work(argc - 1, argv + 1, 1);
    }

    if (strcmp(cmd, "status") == 0) {
        return mc_cmd_status(argc - 1, argv + 1);
    }

    fprintf(stderr, "mt5credit: unknown command \"%s\"\n\n", cmd);
    mc_usage(stderr);

    return 2;
}


static void
mc_usage(FILE *f)
{
    fprintf(f,
"usage: mt5credit <command> [options]\n"
"\n"
"commands:\n"
"  work      claim pending credits and make their MT5 balance deals until\n"
"            stopped; SIGTERM finishes the call in flight, records its\n"
"            outcome, and exits\n"
"  resolve   look up the outcome of unknown credits once, then exit\n"
"  status    counts per status and kind, oldest pending and unknown ages,\n"
"            open cases\n"
"\n"
"options:\n"
"  -c, --config FILE    configuration file (default $MT5CREDIT_CONFIG or\n"
"                       " MC_DEFAULT_CONFIG ")\n"
"      --once           work: one round (sweep, resolve, drain), then exit\n"
"      --database INFO  status: a libpq conninfo instead of a config file\n"
"      --prometheus     status: Prometheus text format\n"
"  -h, --help           this help (also \"mt5credit <command> --help\")\n"
"\n");

    mc_config_usage();
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


static int
mc_cmd_work(int argc, char **argv, int resolve_only)
{
    int               c, once, rc;
    char              err[1024];
    const char       *path;
    mc_config_t      *cfg;
    mc_worker_t       w;
    mc_log_level_e    level;
    struct sigaction  sa;

    static struct option  opts[] = {
        { "config", required_argument, NULL, 'c' },
        { "once", no_argument, NULL, 'o' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };

    path = NULL;
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
            mc_usage(stdout);
            return 0;

        default:
            mc_usage(stderr);
            return 2;
        }
    }

    cfg = malloc(sizeof(mc_config_t));
    if (cfg == NULL) {
        return 1;
    }

    if (mc_config_load(mc_config_path(path), cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "mt5credit: %s\n", err);
        free(cfg);
        return 2;
    }

    (void) mc_log_parse_level(cfg->log_level, &level);
    mc_log_set_level(level);
    mc_log_set_name(resolve_only ? "mt5credit-resolve" : "mt5credit-work");

    /* no SA_RESTART: a sleep or a Redis wait ends early and sees the stop */
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = mc_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (mc_worker_init(&w, cfg, (volatile int *) &mc_stop) != 0) {
        fprintf(stderr, "mt5credit: out of memory\n");
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
mc_cmd_status(int argc, char **argv)
{
    int           c, prometheus, rc;
    char          err[1024];
    const char   *path, *database;
    mc_config_t  *cfg;

    static struct option  opts[] = {
        { "config", required_argument, NULL, 'c' },
        { "database", required_argument, NULL, 'd' },
        { "prometheus", no_argument, NULL, 'p' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };

    path = NULL;
    database = NULL;
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

        case 'h':
            mc_usage(stdout);
            return 0;

        default:
            mc_usage(stderr);
            return 2;
        }
    }

    cfg = NULL;

    if (database == NULL) {
        cfg = malloc(sizeof(mc_config_t));

        if (cfg == NULL) {
            return 1;
        }

        if (mc_config_load(mc_config_path(path), cfg, err, sizeof(err))
            != 0)
        {
            fprintf(stderr, "mt5credit: %s\n", err);
            free(cfg);
            return 2;
        }

        database = cfg->database;
    }

    rc = mc_status_print(database, prometheus, stdout);
    free(cfg);

    return rc;
}
