/*
 * Copyright (C) mt5-credit
 *
 * mt5sim: the MetaTrader 5 Web API double, in the foreground until
 * SIGTERM or SIGINT (exit 0).
 *
 *   mt5sim --config FILE.json --state DIR --port N [--control-port M]
 *          [--tls-cert CERT.pem --tls-key KEY.pem | --http]
 *          [--idle-timeout SECONDS] [--no-fsync]
 *
 * Hidden, for tests: --auth-timeout-ms MS (the 10 s between auth/start
 * and auth/answer).  --port 0 / --control-port 0 pick free ports; the
 * ready line says which:
 *   mt5sim: listening on 127.0.0.1:N (https), control on 127.0.0.1:M
 */


#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "mt5sim.h"


static void mt5sim_usage(FILE *f);
static int mt5sim_number(const char *name, const char *text, long max,
    long *out);
static int mt5sim_args(mt5sim_t *srv, int argc, char **argv, char *err);
static char *mt5sim_read_file(const char *path, char *err);
static int mt5sim_init(mt5sim_t *srv, char *err);
static void mt5sim_free(mt5sim_t *srv);
static unsigned mt5sim_bound_port(struct MHD_Daemon *d, unsigned dflt);


static void
mt5sim_usage(FILE *f)
{
    fprintf(f,
        "usage: mt5sim --config FILE.json --state DIR --port N\n"
        "              [--control-port M] [--tls-cert CERT --tls-key KEY"
        " | --http]\n"
        "              [--idle-timeout SECONDS] [--no-fsync]\n");
}


static int
mt5sim_number(const char *name, const char *text, long max, long *out)
{
    char  *end;
    long   v;

    errno = 0;
    v = strtol(text, &end, 10);
    if (errno != 0 || *text == '\0' || *end != '\0' || v < 0 || v > max) {
        fprintf(stderr, "mt5sim: %s must be 0..%ld, not \"%s\"\n", name,
                max, text);
        return -1;
    }
    *out = v;
    return 0;
}


static int
mt5sim_args(mt5sim_t *srv, int argc, char **argv, char *err)
{
    static const struct option  opts[] = {
        { "config", required_argument, NULL, 'c' },
        { "state", required_argument, NULL, 's' },
        { "port", required_argument, NULL, 'p' },
        { "control-port", required_argument, NULL, 'C' },
        { "tls-cert", required_argument, NULL, 'T' },
        { "tls-key", required_argument, NULL, 'K' },
        { "idle-timeout", required_argument, NULL, 'i' },
        { "http", no_argument, NULL, 'h' },
        { "no-fsync", no_argument, NULL, 'n' },
        { "auth-timeout-ms", required_argument, NULL, 'a' },
        { "help", no_argument, NULL, '?' },
        { NULL, 0, NULL, 0 }
    };
    mt5sim_options_t  *o = &srv->opt;
    long               v, port = -1, control = -1;
    int                c;

    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'c': o->config_file = optarg; break;
        case 's': o->state_dir = optarg; break;
        case 'T': o->tls_cert = optarg; break;
        case 'K': o->tls_key = optarg; break;
        case 'h': o->http = 1; break;
        case 'n': o->fsync = 0; break;
        case 'p':
            if (mt5sim_number("--port", optarg, 65535, &port) != 0) {
                return -1;
            }
            break;
        case 'C':
            if (mt5sim_number("--control-port", optarg, 65535, &control)) {
                return -1;
            }
            break;
        case 'i':
            if (mt5sim_number("--idle-timeout", optarg, 86400, &v) != 0) {
                return -1;
            }
            o->idle_timeout = (unsigned) v;
            break;
        case 'a':
            if (mt5sim_number("--auth-timeout-ms", optarg, 3600000, &v)) {
                return -1;
            }
            o->auth_timeout_ms = v;
            break;
        default:
            mt5sim_usage(stderr);
            return -1;
        }
    }
    if (optind != argc || o->config_file == NULL || o->state_dir == NULL
        || port < 0)
    {
        mt5sim_usage(stderr);
        return -1;
    }
    if (o->http ? (o->tls_cert || o->tls_key)
                : (o->tls_cert == NULL || o->tls_key == NULL))
    {
        snprintf(err, MT5SIM_ERR_MAX, "give --tls-cert and --tls-key, "
                 "or --http (not both)");
        return -2;
    }
    o->port = (unsigned) port;
    if (control < 0) {
        control = port ? (port + 1) % 65536 : 0;
    }
    o->control_port = (unsigned) control;
    return 0;
}


static char *
mt5sim_read_file(const char *path, char *err)
{
    FILE    *f = fopen(path, "rb");
    char    *buf;
    long     len;

    if (f == NULL) {
        snprintf(err, MT5SIM_ERR_MAX, "%s: %s", path, strerror(errno));
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0
        || fseek(f, 0, SEEK_SET) != 0
        || (buf = malloc((size_t) len + 1)) == NULL)
    {
        snprintf(err, MT5SIM_ERR_MAX, "%s: cannot read", path);
        fclose(f);
        return NULL;
    }
    if (fread(buf, 1, (size_t) len, f) != (size_t) len) {
        snprintf(err, MT5SIM_ERR_MAX, "%s: short read", path);
        free(buf);
        fclose(f);
        return NULL;
    }
    buf[len] = '\0';
    fclose(f);
    return buf;
}


static int
mt5sim_init(mt5sim_t *srv, char *err)
{
    memset(srv, 0, sizeof(*srv));
    if (pthread_mutex_init(&srv->lock, NULL) != 0
        || mt5sim_ledger_init(&srv->ledger) != 0)
    {
        snprintf(err, MT5SIM_ERR_MAX, "cannot initialize mutexes");
        return -1;
    }
    srv->opt.idle_timeout = 180;
    srv->opt.auth_timeout_ms = 10000;
    srv->opt.fsync = 1;
    srv->opt.plus_is_space = 1;
    srv->opt.backslash_escapes = 1;
    srv->opt.forbidden_status = 403;
    strcpy(srv->opt.forbidden_body, "403 Forbidden");
    srv->opt.answer_without_start_403 = 1;
    srv->opt.auth_timeout_retcode = MT5_RET_AUTH_ACCOUNT_INVALID;
    srv->opt.strict_http = 1;
    srv->render.total_key = "total";
    srv->render.time_key = "Time";
    srv->render.version_access = "1290";
    srv->render.version_trade = "1290";
    return 0;
}


static void
mt5sim_free(mt5sim_t *srv)
{
    mt5sim_ledger_free(&srv->ledger);
    mt5sim_faults_free(&srv->faults);
    json_decref(srv->config);
    free(srv->tls_cert_pem);
    free(srv->tls_key_pem);
    pthread_mutex_destroy(&srv->lock);
}


static unsigned
mt5sim_bound_port(struct MHD_Daemon *d, unsigned dflt)
{
    const union MHD_DaemonInfo  *di;

    di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    return di && di->port ? di->port : dflt;
}


int
main(int argc, char **argv)
{
    static mt5sim_t   srv;
    char              err[MT5SIM_ERR_MAX] = "";
    sigset_t          set;
    int               sig, rc;

    signal(SIGPIPE, SIG_IGN);
    if (mt5sim_init(&srv, err) != 0) {
        fprintf(stderr, "mt5sim: %s\n", err);
        return 1;
    }
    rc = mt5sim_args(&srv, argc, argv, err);
    if (rc != 0) {
        if (rc == -2) {
            fprintf(stderr, "mt5sim: %s\n", err);
        }
        mt5sim_free(&srv);
        return 2;
    }

    if ((!srv.opt.http
         && ((srv.tls_cert_pem = mt5sim_read_file(srv.opt.tls_cert, err))
             == NULL
             || (srv.tls_key_pem = mt5sim_read_file(srv.opt.tls_key, err))
                == NULL))
        || mt5sim_config_load(&srv, srv.opt.config_file, err) != 0
        || mt5sim_journal_open(&srv.ledger, srv.opt.state_dir,
                               srv.opt.fsync, err) != 0)
    {
        fprintf(stderr, "mt5sim: %s\n", err);
        mt5sim_free(&srv);
        return 1;
    }

    /* only this thread takes the stop signals; MHD's threads inherit */
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    if (mt5sim_http_start(&srv, err) != 0) {
        fprintf(stderr, "mt5sim: %s\n", err);
        mt5sim_free(&srv);
        return 1;
    }
    printf("mt5sim: listening on 127.0.0.1:%u (%s), control on "
           "127.0.0.1:%u\n", mt5sim_bound_port(srv.api, srv.opt.port),
           srv.opt.http ? "http" : "https",
           mt5sim_bound_port(srv.control, srv.opt.control_port));
    fflush(stdout);

    do {
        rc = sigwait(&set, &sig);
    } while (rc != 0);

    mt5sim_http_stop(&srv);
    mt5sim_free(&srv);
    printf("mt5sim: stopped (signal %d)\n", sig);
    return 0;
}
