/*
 * Copyright (C) mt5-credit
 */


#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "mc_pgconn.h"
#include "mc_withdrawals.h"


typedef struct {
    const char  *status;
    const char  *limit;
    const char  *digest;
    const char  *note;
} mc_withdrawals_opts_t;


static int mc_withdrawals_parse(int argc, char **argv,
    mc_withdrawals_opts_t *o);
static int mc_withdrawals_list(PGconn *conn, const mc_withdrawals_opts_t *o);
static int mc_withdrawals_show(PGconn *conn, const char *ref);
static int mc_withdrawals_call(PGconn *conn, const char *sql, int n,
    const char *const *params, const char *what);
static int mc_withdrawals_reference(const char *s);


void
mc_withdrawals_usage(FILE *f)
{
    fprintf(f,
"usage: mt5credit withdrawals <action> [options]\n"
"\n"
"  list [--status requested|prepared|approved|rejected|cancelled]\n"
"       [--limit N]\n"
"        what waits for a maker or a checker (requested and prepared),\n"
"        oldest first\n"
"  show WD\n"
"        the request, its plan (refund legs to the deposits it came from,\n"
"        newest first, and a payout for the rest) and the digest that\n"
"        signs both\n"
"  prepare WD [--note TEXT]\n"
"        the maker: plans it and prints the digest for the checker\n"
"  approve WD --digest D [--note TEXT]\n"
"        another person: approves the request and plan whose digest they\n"
"        were shown; refused if either changed since\n"
"  reject WD --note TEXT\n"
"\n"
"You act as the database user you log in as (--database, desk_database\n"
"in the config, or PGUSER and the other PG* variables).\n");
}


int
mc_withdrawals_main(int argc, char **argv, const char *conninfo)
{
    int                     rc;
    PGconn                 *conn;
    PGresult               *res;
    const char             *action, *ref, *p[3];
    mc_withdrawals_opts_t   o;

    if (argc < 2 || strcmp(argv[1], "--help") == 0
        || strcmp(argv[1], "-h") == 0)
    {
        mc_withdrawals_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }

    action = argv[1];

    if (strcmp(action, "list") != 0 && strcmp(action, "show") != 0
        && strcmp(action, "prepare") != 0 && strcmp(action, "approve") != 0
        && strcmp(action, "reject") != 0)
    {
        fprintf(stderr, "mt5credit: withdrawals: unknown action \"%s\"\n"
                "Try \"mt5credit withdrawals --help\".\n", action);
        return 2;
    }

    rc = mc_withdrawals_parse(argc - 1, argv + 1, &o);
    if (rc != 0) {
        if (rc == 1) {
            mc_withdrawals_usage(stdout);
            return 0;
        }
        return 2;
    }

    ref = optind < argc - 1 ? argv[optind + 1] : NULL;

    if (strcmp(action, "list") != 0
        && (ref == NULL || !mc_withdrawals_reference(ref)))
    {
        fprintf(stderr, "mt5credit: withdrawals %s: which withdrawal? give "
                "its reference (wd_000123)\n", action);
        return 2;
    }

    if (strcmp(action, "approve") == 0 && o.digest == NULL) {
        fprintf(stderr, "mt5credit: withdrawals approve: --digest is "
                "required: the digest you were shown (withdrawals show)\n");
        return 2;
    }

    if (strcmp(action, "reject") == 0 && o.note == NULL) {
        fprintf(stderr, "mt5credit: withdrawals reject: --note is "
                "required: why\n");
        return 2;
    }

    conn = mc_pgconn_connect(conninfo != NULL ? conninfo : "");
    if (PQstatus(conn) != CONNECTION_OK) {
        fprintf(stderr, "mt5credit: withdrawals: database: %s",
                PQerrorMessage(conn));
        PQfinish(conn);
        return 1;
    }

    res = PQexec(conn, "SET application_name = 'mt5credit withdrawals'");
    PQclear(res);

    p[0] = ref;

    if (strcmp(action, "list") == 0) {
        rc = mc_withdrawals_list(conn, &o);

    } else if (strcmp(action, "show") == 0) {
        rc = mc_withdrawals_show(conn, ref);

    } else if (strcmp(action, "prepare") == 0) {
        p[1] = o.note;
        rc = mc_withdrawals_call(conn, "SELECT $1::text || ': prepared; "
                                 "digest ' || mt5credit.withdrawal_prepare("
                                 "$1, $2) || ' (another person approves "
                                 "it with this digest)'", 2, p, "prepare");

    } else if (strcmp(action, "approve") == 0) {
        p[1] = o.digest;
        p[2] = o.note;
        rc = mc_withdrawals_call(conn, "SELECT $1::text || ': approved' "
                                 "FROM mt5credit.withdrawal_approve($1, $2, "
                                 "$3)", 3, p, "approve");

    } else {
        p[1] = o.note;
        rc = mc_withdrawals_call(conn, "SELECT $1::text || ': rejected' "
                                 "FROM mt5credit.withdrawal_reject($1, $2)",
                                 2, p, "reject");
    }

    PQfinish(conn);
    return rc;
}


/* 0; 1 for --help; -1 on a usage error, said on stderr */
static int
mc_withdrawals_parse(int argc, char **argv, mc_withdrawals_opts_t *o)
{
    int  c;

    static struct option  opts[] = {
        { "status", required_argument, NULL, 's' },
        { "limit", required_argument, NULL, 'l' },
        { "digest", required_argument, NULL, 'd' },
        { "note", required_argument, NULL, 'n' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };

    memset(o, 0, sizeof(*o));
    optind = 1;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 's': o->status = optarg; break;
        case 'l': o->limit = optarg; break;
        case 'd': o->digest = optarg; break;
        case 'n': o->note = optarg; break;
        case 'h': return 1;

        default:
            fprintf(stderr, "Try \"mt5credit withdrawals --help\".\n");
            return -1;
        }
    }

    return 0;
}


static int
mc_withdrawals_list(PGconn *conn, const mc_withdrawals_opts_t *o)
{
    int          i, n;
    PGresult    *res;
    const char  *p[2] = { o->status, o->limit };

    res = PQexecParams(conn,
        "SELECT reference, status, client_id, mt5_server || '/' || "
        "mt5_login, to_char(amount_minor::numeric / 10 ^ (SELECT "
        "minor_digits FROM mt5credit.currency WHERE code = q.currency), "
        "'FM999999999999990.00999999') || ' ' || currency, legs, "
        "to_char(refunds_minor::numeric / 10 ^ (SELECT minor_digits FROM "
        "mt5credit.currency WHERE code = q.currency), "
        "'FM999999999999990.00999999'), coalesce(prepared_by, '-'), "
        "to_char(created_at AT TIME ZONE 'UTC', "
        "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') "
        "FROM mt5credit.withdrawal_queue($1, $2::integer) q",
        2, NULL, p, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        fprintf(stderr, "mt5credit: withdrawals list: %s",
                PQresultErrorMessage(res));
        PQclear(res);
        return 1;
    }

    n = PQntuples(res);
    printf("%-10s %-9s %-12s %-16s %-18s %-4s %-12s %-12s %s\n", "reference",
           "status", "client", "login", "amount", "legs", "refunds",
           "prepared by", "requested");

    for (i = 0; i < n; i++) {
        printf("%-10s %-9s %-12s %-16s %-18s %-4s %-12s %-12s %s\n",
               PQgetvalue(res, i, 0), PQgetvalue(res, i, 1),
               PQgetvalue(res, i, 2), PQgetvalue(res, i, 3),
               PQgetvalue(res, i, 4), PQgetvalue(res, i, 5),
               PQgetvalue(res, i, 6), PQgetvalue(res, i, 7),
               PQgetvalue(res, i, 8));
    }

    printf("(%d withdrawal%s)\n", n, n == 1 ? "" : "s");
    PQclear(res);
    return 0;
}


static int
mc_withdrawals_show(PGconn *conn, const char *ref)
{
    PGresult    *res;
    const char  *p[1] = { ref };

    res = PQexecParams(conn, "SELECT jsonb_pretty(mt5credit."
                       "withdrawal_show($1))", 1, NULL, p, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        fprintf(stderr, "mt5credit: withdrawals show: %s",
                PQresultErrorMessage(res));
        PQclear(res);
        return 1;
    }

    if (PQgetisnull(res, 0, 0)) {
        fprintf(stderr, "mt5credit: withdrawals show: no withdrawal %s\n",
                ref);
        PQclear(res);
        return 1;
    }

    printf("%s\n", PQgetvalue(res, 0, 0));
    PQclear(res);
    return 0;
}


/* one desk function; its refusal is printed as the database said it */
static int
mc_withdrawals_call(PGconn *conn, const char *sql, int n,
    const char *const *params, const char *what)
{
    PGresult    *res;
    const char  *msg;

    res = PQexecParams(conn, sql, n, NULL, params, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
        fprintf(stderr, "mt5credit: withdrawals %s: refused: %s\n", what,
                msg != NULL ? msg : PQresultErrorMessage(res));
        PQclear(res);
        return 1;
    }

    printf("%s\n", PQgetvalue(res, 0, 0));
    PQclear(res);
    return 0;
}


/* wd_ and digits: anything else is a typo, said before connecting */
static int
mc_withdrawals_reference(const char *s)
{
    if (strncmp(s, "wd_", 3) != 0 || s[3] == '\0') {
        return 0;
    }

    for (s += 3; *s >= '0' && *s <= '9'; s++) {
        /* void */
    }

    return *s == '\0';
}
