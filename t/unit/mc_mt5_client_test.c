/*
 * Copyright (C) mt5-credit
 *
 * Drives batch/mt5/mc_mt5.c against a server (t/41_mt5_client.t runs it
 * against build/t/mt5sim): one session, the steps given on the command
 * line run in order, one JSON object per step on stdout.
 *
 *   mc_mt5_client_test --url https://127.0.0.1:PORT --ca ca.pem
 *       --manager 1000 --password-file pw [--timeout-ms N]
 *       [--connect-timeout-ms N] [--ping S] [--insecure] [--agent A]
 *       STEP...
 *
 * Steps:
 *   ensure | close | keepalive | time | sleep,MS
 *   user,LOGIN | account,LOGIN | group,NAME
 *   balance,LOGIN,TYPE,AMOUNT,COMMENT[,CHECK_MARGIN[,SEND_BY]]
 *       as the worker makes it: the session ensured, then the call;
 *       SEND_BY: its deadline, in ms from now (may be negative)
 *   balance_live,...   the same with no ensure: the session as it is
 *   deals,LOGIN,FROM,TO
 *   deal,TICKET        deal/get: the one deal, on whatever login
 *
 * Each line: {"step":..,"rc":"OK"|"REJECTED"|"NO_ANSWER"|"NOT_SENT",
 * "retcode":n,
 * "error":"..", ...the answer}.  Money is printed as exact decimal text
 * rebuilt from mc_decimal_t.  Exit status 0 unless the arguments are bad.
 */


#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "mc_mt5.h"


#define STEP_MAX_FIELDS  8


static const char *rc_name(mc_mt5_rc_e rc);
static json_t *money(mc_decimal_t d);
static json_t *u64(uint64_t v);
static int split(char *step, char **f, int max);
static int read_password(const char *file, char *buf, size_t size);
static void emit(mc_mt5_session_t *s, const char *step, mc_mt5_rc_e rc,
    int retcode, json_t *out);
static json_t *deal_json(const mc_mt5_deal_t *d);
static int run_step(mc_mt5_session_t *s, char *step);
static void usage(void);


static const char *
rc_name(mc_mt5_rc_e rc)
{
    switch (rc) {
    case MC_MT5_OK:
        return "OK";
    case MC_MT5_REJECTED:
        return "REJECTED";
    case MC_MT5_NOT_SENT:
        return "NOT_SENT";
    default:
        return "NO_ANSWER";
    }
}


/* value * 10^-scale as text, by integer formatting only */
static json_t *
money(mc_decimal_t d)
{
    char  buf[32];

    if (mc_minor_format(d.value, d.scale, buf, sizeof(buf)) < 0) {
        return json_string("?");
    }

    return json_string(buf);
}


static json_t *
u64(uint64_t v)
{
    char  buf[24];

    snprintf(buf, sizeof(buf), "%" PRIu64, v);

    return json_string(buf);
}


static int
split(char *step, char **f, int max)
{
    int    n;
    char  *p;

    n = 0;
    f[n++] = step;

    for (p = step; *p != '\0' && n < max; p++) {
        if (*p == ',') {
            *p = '\0';
            f[n++] = p + 1;
        }
    }

    return n;
}


static int
read_password(const char *file, char *buf, size_t size)
{
    FILE    *fp;
    size_t   n;

    fp = fopen(file, "r");
    if (fp == NULL) {
        return -1;
    }

    n = fread(buf, 1, size - 1, fp);
    fclose(fp);
    buf[n] = '\0';

    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) {
        buf[--n] = '\0';
    }

    return 0;
}


static void
emit(mc_mt5_session_t *s, const char *step, mc_mt5_rc_e rc, int retcode,
    json_t *out)
{
    char  *text;

    if (out == NULL) {
        out = json_object();
    }

    json_object_set_new(out, "step", json_string(step));
    json_object_set_new(out, "rc", json_string(rc_name(rc)));
    json_object_set_new(out, "retcode", json_integer(retcode));
    json_object_set_new(out, "error", json_string(mc_mt5_error(s)));

    text = json_dumps(out, JSON_COMPACT | JSON_SORT_KEYS);
    printf("%s\n", text);
    fflush(stdout);

    free(text);
    json_decref(out);
}


static json_t *
deal_json(const mc_mt5_deal_t *d)
{
    return json_pack("{s:o,s:o,s:i,s:o,s:o,s:s,s:I}",
                     "deal", u64(d->deal), "login", u64(d->login),
                     "action", d->action, "profit", money(d->profit),
                     "volume", u64(d->volume), "comment", d->comment,
                     "time", (json_int_t) d->time);
}


static int
run_step(mc_mt5_session_t *s, char *step)
{
    int               n, retcode, cm;
    char             *f[STEP_MAX_FIELDS], name[256];
    size_t            i, nd;
    json_t           *out, *list;
    int64_t           now, offset, send_by;
    uint64_t          ticket;
    mc_mt5_rc_e       rc;
    mc_mt5_user_t     u;
    mc_mt5_deal_t    *deals;
    mc_mt5_deal_t     deal;
    mc_mt5_group_t    g;
    mc_mt5_account_t  a;
    struct timespec   ts;

    snprintf(name, sizeof(name), "%s", step);
    n = split(step, f, STEP_MAX_FIELDS);
    retcode = 0;
    out = json_object();

    if (strcmp(f[0], "ensure") == 0) {
        rc = mc_mt5_ensure(s, &retcode);

    } else if (strcmp(f[0], "close") == 0) {
        mc_mt5_close(s);
        rc = MC_MT5_OK;

    } else if (strcmp(f[0], "keepalive") == 0) {
        rc = mc_mt5_keepalive(s);

    } else if (strcmp(f[0], "sleep") == 0 && n == 2) {
        ts.tv_sec = atol(f[1]) / 1000;
        ts.tv_nsec = (atol(f[1]) % 1000) * 1000000L;
        nanosleep(&ts, NULL);
        rc = MC_MT5_OK;

    } else if (strcmp(f[0], "time") == 0) {
        now = offset = 0;
        rc = mc_mt5_time(s, &now, &offset, &retcode);
        json_object_set_new(out, "server_now", json_integer(now));
        json_object_set_new(out, "offset", json_integer(offset));
        json_object_set_new(out, "utc_now", json_integer(time(NULL)));

    } else if (strcmp(f[0], "user") == 0 && n == 2) {
        memset(&u, 0, sizeof(u));
        rc = mc_mt5_user_get(s, strtoull(f[1], NULL, 10), &u, &retcode);
        if (rc == MC_MT5_OK) {
            json_object_set_new(out, "login", u64(u.login));
            json_object_set_new(out, "group", json_string(u.group));
            json_object_set_new(out, "rights", u64(u.rights));
            json_object_set_new(out, "balance", money(u.balance));
            json_object_set_new(out, "credit", money(u.credit));
        }

    } else if (strcmp(f[0], "account") == 0 && n == 2) {
        memset(&a, 0, sizeof(a));
        rc = mc_mt5_account_get(s, strtoull(f[1], NULL, 10), &a, &retcode);
        if (rc == MC_MT5_OK) {
            json_object_set_new(out, "login", u64(a.login));
            json_object_set_new(out, "balance", money(a.balance));
            json_object_set_new(out, "credit", money(a.credit));
            json_object_set_new(out, "margin_free", money(a.margin_free));
        }

    } else if (strcmp(f[0], "group") == 0 && n >= 2) {
        /* a group name may hold ','; take the rest of the step */
        memset(&g, 0, sizeof(g));
        rc = mc_mt5_group_get(s, name + strlen("group,"), &g, &retcode);
        if (rc == MC_MT5_OK) {
            json_object_set_new(out, "group", json_string(g.group));
            json_object_set_new(out, "currency", json_string(g.currency));
            json_object_set_new(out, "digits", json_integer(g.digits));
        }

    } else if ((strcmp(f[0], "balance") == 0
                || strcmp(f[0], "balance_live") == 0)
               && n >= 5 && n <= 7)
    {
        ticket = 0;
        cm = n >= 6 ? atoi(f[5]) : 1;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        send_by = n == 7 ? (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000
                           + strtoll(f[6], NULL, 10)
                         : 0;
        rc = MC_MT5_OK;
        if (strcmp(f[0], "balance") == 0) {
            rc = mc_mt5_ensure(s, &retcode);
        }
        if (rc == MC_MT5_OK) {
            rc = mc_mt5_balance(s, strtoull(f[1], NULL, 10), atoi(f[2]),
                                f[3], f[4], cm, send_by, &ticket, &retcode);
        }
        json_object_set_new(out, "ticket", u64(ticket));
        json_object_set_new(out, "final",
                            json_boolean(rc == MC_MT5_REJECTED
                                         && mc_mt5_rejection_final(retcode)));

    } else if (strcmp(f[0], "deals") == 0 && n == 4) {
        deals = NULL;
        nd = 0;
        rc = mc_mt5_deals(s, strtoull(f[1], NULL, 10),
                          strtoll(f[2], NULL, 10), strtoll(f[3], NULL, 10),
                          &deals, &nd, &retcode);
        list = json_array();
        for (i = 0; i < nd; i++) {
            json_array_append_new(list, deal_json(&deals[i]));
        }
        json_object_set_new(out, "n", json_integer((json_int_t) nd));
        json_object_set_new(out, "deals", list);
        free(deals);

    } else if (strcmp(f[0], "deal") == 0 && n == 2) {
        memset(&deal, 0, sizeof(deal));
        rc = mc_mt5_deal_get(s, strtoull(f[1], NULL, 10), &deal, &retcode);
        if (rc == MC_MT5_OK) {
            json_object_set_new(out, "deal", deal_json(&deal));
        }

    } else {
        fprintf(stderr, "mc_mt5_client_test: bad step \"%s\"\n", name);
        json_decref(out);
        return -1;
    }

    emit(s, name, rc, retcode, out);
    return 0;
}


static void
usage(void)
{
    fprintf(stderr, "usage: mc_mt5_client_test --url URL [--ca FILE] "
            "--manager LOGIN --password-file FILE [--timeout-ms N] "
            "[--connect-timeout-ms N] [--ping S] [--insecure] "
            "[--agent A] STEP...\n");
}


int
main(int argc, char **argv)
{
    int                i, rc;
    char               password[256];
    mc_mt5_config_t    cfg;
    mc_mt5_session_t  *s;

    memset(&cfg, 0, sizeof(cfg));
    cfg.name = "sim";
    cfg.tls_verify = 1;
    cfg.timeout_ms = 5000;
    cfg.connect_timeout_ms = 2000;
    password[0] = '\0';

    for (i = 1; i < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
        if (strcmp(argv[i], "--insecure") == 0) {
            cfg.tls_verify = 0;
            i--;
            continue;
        }

        if (i + 1 >= argc) {
            usage();
            return 2;
        }

        if (strcmp(argv[i], "--url") == 0) {
            cfg.url = argv[i + 1];
        } else if (strcmp(argv[i], "--ca") == 0) {
            cfg.ca_file = argv[i + 1];
        } else if (strcmp(argv[i], "--manager") == 0) {
            cfg.manager = strtoull(argv[i + 1], NULL, 10);
        } else if (strcmp(argv[i], "--password-file") == 0) {
            if (read_password(argv[i + 1], password, sizeof(password))) {
                perror(argv[i + 1]);
                return 2;
            }
            cfg.password = password;
        } else if (strcmp(argv[i], "--timeout-ms") == 0) {
            cfg.timeout_ms = atol(argv[i + 1]);
        } else if (strcmp(argv[i], "--connect-timeout-ms") == 0) {
            cfg.connect_timeout_ms = atol(argv[i + 1]);
        } else if (strcmp(argv[i], "--ping") == 0) {
            cfg.ping_interval = atoi(argv[i + 1]);
        } else if (strcmp(argv[i], "--agent") == 0) {
            cfg.agent = argv[i + 1];
        } else {
            usage();
            return 2;
        }
    }

    if (cfg.url == NULL || cfg.password == NULL || i == argc) {
        usage();
        return 2;
    }

    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "curl_global_init() failed\n");
        return 2;
    }

    s = mc_mt5_session_new(&cfg);
    if (s == NULL) {
        fprintf(stderr, "mc_mt5_session_new() failed\n");
        return 2;
    }

    /* the session keeps its own copy of the config */
    memset(password, 0, sizeof(password));

    rc = 0;
    for ( /* void */ ; i < argc && rc == 0; i++) {
        rc = run_step(s, argv[i]);
    }

    mc_mt5_session_free(s);
    curl_global_cleanup();

    return rc == 0 ? 0 : 2;
}
