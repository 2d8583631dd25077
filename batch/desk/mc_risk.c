/*
 * Copyright (C) mt5-credit
 */


#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <libpq-fe.h>

#include "mc_cases.h"
#include "mc_pgconn.h"
#include "mc_risk.h"


typedef struct {
    const char  *currency;
    const char  *provider;
    const char  *limit;          /* for "changes": how many to list */
    const char  *note;
    int          remove;
} mc_risk_opts_t;


static int mc_risk_parse(int argc, char **argv, mc_risk_opts_t *o);
static int mc_risk_rules(PGconn *conn);
static int mc_risk_changes(PGconn *conn, const char *count);
static int mc_risk_call(PGconn *conn, const char *sql, int n,
    const char *const *params);


void
mc_risk_usage(FILE *f)
{
    fprintf(f,
"usage: mt5credit risk <action> [options]\n"
"\n"
"  rules\n"
"        the rules in force, with who proposed and who approved each\n"
"  changes [--limit N]\n"
"        every change, newest first: proposed, approved, rejected or\n"
"        withdrawn, and the rule as it was before\n"
"  propose RULE [--currency C] [--provider P] [--limit L] --note TEXT\n"
"  propose RULE [--currency C] [--provider P] --remove --note TEXT\n"
"        a change, in force once another person approves it; RULE:\n"
"        credit_amount      a credit over L (major units, --currency)\n"
"        login_sum_24h      a login's deposits over L in 24 hours\n"
"        client_sum_24h     a client's deposits over L in 24 hours\n"
"        login_count_24h    more than L deposits on a login in 24 hours\n"
"        client_count_24h   more than L deposits of a client in 24 hours\n"
"        first_deposit      a client with no deposit credited yet\n"
"        first_provider     ... none through this provider yet\n"
"        payer_name         the payer's signed name is not the client's\n"
"        first_instrument   a card none of the client's credits had yet\n"
"        provider_signal    the provider flagged the payment itself\n"
"        withdrawal_amount  a withdrawal over L (major units, --currency)\n"
"        withdrawal_trading less than L lots traded on the login since\n"
"                           its last deposit (read from MT5)\n"
"        no --currency or --provider: any; amounts need a currency\n"
"  approve CHANGE [--note TEXT]   (not by the proposer)\n"
"  reject CHANGE [--note TEXT]    (not by the proposer)\n"
"  withdraw CHANGE [--note TEXT]  (the proposer only)\n"
"\n"
"A held credit is released or returned on its risk_hold case, a held\n"
"withdrawal on its withdrawal_hold case\n"
"(mt5credit cases propose ID --action release_hold|return_hold).\n"
"You act as the database user you log in as (--database, desk_database\n"
"in the config, or PGUSER and the other PG* variables); a member of\n"
"mt5credit_operator.\n");
}


int
mc_risk_main(int argc, char **argv, const char *conninfo)
{
    int              rc;
    PGconn          *conn;
    PGresult        *res;
    const char      *action, *arg, *p[6];
    mc_risk_opts_t   o;

    if (argc < 2 || strcmp(argv[1], "--help") == 0
        || strcmp(argv[1], "-h") == 0)
    {
        mc_risk_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }

    action = argv[1];

    rc = mc_risk_parse(argc - 1, argv + 1, &o);
    if (rc != 0) {
        if (rc == 1) {
            mc_risk_usage(stdout);
            return 0;
        }
        return 2;
    }

    arg = optind < argc - 1 ? argv[optind + 1] : NULL;

    /* a usage error is said before anything connects */
    if (strcmp(action, "rules") == 0 || strcmp(action, "changes") == 0) {
        if (arg != NULL) {
            fprintf(stderr, "mt5credit: risk %s: unexpected \"%s\"\n",
                    action, arg);
            return 2;
        }

    } else if (strcmp(action, "propose") == 0) {
        if (arg == NULL || optind + 2 != argc) {
            fprintf(stderr, "mt5credit: risk propose: which rule? "
                    "Try \"mt5credit risk --help\".\n");
            return 2;
        }
        if (o.note == NULL || o.note[0] == '\0') {
            fprintf(stderr, "mt5credit: risk propose: --note is required: "
                    "why the rule changes (it is kept)\n");
            return 2;
        }

    } else if (strcmp(action, "approve") == 0
               || strcmp(action, "reject") == 0
               || strcmp(action, "withdraw") == 0)
    {
        if (arg == NULL || !mc_cases_is_id(arg) || optind + 2 != argc) {
            fprintf(stderr, "mt5credit: risk %s: which change? give its "
                    "number\n", action);
            return 2;
        }

    } else {
        fprintf(stderr, "mt5credit: risk: unknown action \"%s\"\n"
                "Try \"mt5credit risk --help\".\n", action);
        return 2;
    }

    conn = mc_pgconn_connect(conninfo != NULL ? conninfo : "");
    if (PQstatus(conn) != CONNECTION_OK) {
        fprintf(stderr, "mt5credit: risk: database: %s",
                PQerrorMessage(conn));
        PQfinish(conn);
        return 1;
    }

    res = PQexec(conn, "SET application_name = 'mt5credit risk'");
    PQclear(res);

    if (strcmp(action, "rules") == 0) {
        rc = mc_risk_rules(conn);

    } else if (strcmp(action, "changes") == 0) {
        rc = mc_risk_changes(conn, o.limit);

    } else if (strcmp(action, "propose") == 0) {
        p[0] = arg; p[1] = o.currency; p[2] = o.provider; p[3] = o.limit;
        p[4] = o.remove ? "true" : "false"; p[5] = o.note;
        rc = mc_risk_call(conn, "SELECT 'rule change ' || mt5credit."
                          "risk_rule_propose($1, $2, $3, $4, $5::boolean, "
                          "$6) || ' proposed; another person must approve "
                          "it'", 6, p);

    } else {
        p[0] = arg; p[1] = action; p[2] = o.note;
        rc = mc_risk_call(conn, "SELECT 'rule change ' || $1::bigint || "
                          "': ' || $2::text || ' recorded' || coalesce("
                          "' (rule ' || mt5credit.risk_rule_decide("
                          "$1::bigint, $2::text, $3::text) || ')', '')",
                          3, p);
    }

    PQfinish(conn);
    return rc;
}


/* 0; 1 for --help; -1 on a usage error, said on stderr */
static int
mc_risk_parse(int argc, char **argv, mc_risk_opts_t *o)
{
    int  c;

    static struct option  opts[] = {
        { "currency", required_argument, NULL, 'C' },
        { "provider", required_argument, NULL, 'P' },
        { "limit", required_argument, NULL, 'l' },
        { "remove", no_argument, NULL, 'r' },
        { "note", required_argument, NULL, 'n' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };

    memset(o, 0, sizeof(*o));
    optind = 1;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'C': o->currency = optarg; break;
        case 'P': o->provider = optarg; break;
        case 'l': o->limit = optarg; break;
        case 'r': o->remove = 1; break;
        case 'n': o->note = optarg; break;

        case 'h':
            return 1;

        default:
            fprintf(stderr, "Try \"mt5credit risk --help\".\n");
            return -1;
        }
    }

    return 0;
}


static int
mc_risk_rules(PGconn *conn)
{
    int        i, n;
    PGresult  *res;

    res = PQexec(conn,
        "SELECT rule, coalesce(currency, 'any'), coalesce(provider, 'any'), "
        "coalesce(limit_text, '-'), change_id, proposed_by, approved_by, "
        "to_char(approved_at AT TIME ZONE 'UTC', "
        "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM mt5credit.risk_rules()");

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        fprintf(stderr, "mt5credit: risk rules: %s",
                PQresultErrorMessage(res));
        PQclear(res);
        return 1;
    }

    n = PQntuples(res);
    printf("%-17s %-8s %-10s %-16s %-7s %-12s %-12s %s\n", "rule",
           "currency", "provider", "limit", "change", "proposed by",
           "approved by", "in force since");

    for (i = 0; i < n; i++) {
        printf("%-17s %-8s %-10s %-16s %-7s %-12s %-12s %s\n",
               PQgetvalue(res, i, 0), PQgetvalue(res, i, 1),
               PQgetvalue(res, i, 2), PQgetvalue(res, i, 3),
               PQgetvalue(res, i, 4), PQgetvalue(res, i, 5),
               PQgetvalue(res, i, 6), PQgetvalue(res, i, 7));
    }

    printf("(%d rule%s)\n", n, n == 1 ? "" : "s");
    PQclear(res);
    return 0;
}


static int
mc_risk_changes(PGconn *conn, const char *count)
{
    int          i, n;
    PGresult    *res;
    const char  *p[1] = { count };

    res = PQexecParams(conn,
        "SELECT id, status, rule, coalesce(currency, 'any'), "
        "coalesce(provider, 'any'), "
        "CASE WHEN remove THEN 'remove' ELSE coalesce(limit_text, '-') END, "
        "proposed_by, coalesce(decided_by, '-'), "
        "coalesce(rule_before->>'limit_minor', rule_before->>'limit_count', "
        "CASE WHEN rule_before IS NOT NULL THEN 'in force' END, '-'), note "
        "FROM mt5credit.risk_rule_changes($1::integer)",
        1, NULL, p, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        fprintf(stderr, "mt5credit: risk changes: %s",
                PQresultErrorMessage(res));
        PQclear(res);
        return 1;
    }

    n = PQntuples(res);
    printf("%-7s %-9s %-17s %-8s %-10s %-16s %-12s %-12s %-12s %s\n",
           "change", "status", "rule", "currency", "provider", "limit",
           "proposed by", "decided by", "before", "note");

    for (i = 0; i < n; i++) {
        printf("%-7s %-9s %-17s %-8s %-10s %-16s %-12s %-12s %-12s %s\n",
               PQgetvalue(res, i, 0), PQgetvalue(res, i, 1),
               PQgetvalue(res, i, 2), PQgetvalue(res, i, 3),
               PQgetvalue(res, i, 4), PQgetvalue(res, i, 5),
               PQgetvalue(res, i, 6), PQgetvalue(res, i, 7),
               PQgetvalue(res, i, 8), PQgetvalue(res, i, 9));
    }

    printf("(%d change%s)\n", n, n == 1 ? "" : "s");
    PQclear(res);
    return 0;
}


/* one function of 079; its refusal is printed as the database said it */
static int
mc_risk_call(PGconn *conn, const char *sql, int n, const char *const *params)
{
    PGresult    *res;
    const char  *msg;

    res = PQexecParams(conn, sql, n, NULL, params, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
        fprintf(stderr, "mt5credit: risk: refused: %s\n",
                msg != NULL ? msg : PQresultErrorMessage(res));
        PQclear(res);
        return 1;
    }

    printf("%s\n", PQgetvalue(res, 0, 0));
    PQclear(res);
    return 0;
}
