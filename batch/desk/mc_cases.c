/*
 * Copyright (C) mt5-credit
 */


#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "mc_cases.h"
#include "mc_pgconn.h"


#define MC_CASES_EVIDENCE_MAX  32


typedef struct {
    const char  *kind;
    const char  *status;
    const char  *min_age;
    const char  *limit;
    const char  *to;
    const char  *note;
    const char  *resolution;
    const char  *action;
    const char  *credit;
    const char  *amount;
    const char  *ticket;
    const char  *evidence[MC_CASES_EVIDENCE_MAX];
    int          nevidence;
} mc_cases_opts_t;


static int mc_cases_parse(int argc, char **argv, mc_cases_opts_t *o);
static int mc_cases_list(PGconn *conn, const mc_cases_opts_t *o);
static int mc_cases_show(PGconn *conn, const char *id);
static int mc_cases_call(PGconn *conn, const char *sql, int n,
    const char *const *params, const char *done);
static char *mc_cases_evidence(const mc_cases_opts_t *o);
static int mc_cases_known(const char *action);


/* checked before anything connects: a typo is a usage error, exit 2 */
static const char *const  mc_cases_actions[] = {
    "list", "show", "assign", "note", "resolve", "propose", "approve",
    "reject", "withdraw", NULL
};


void
mc_cases_usage(FILE *f)
{
    fprintf(f,
"usage: mt5credit cases <action> [options]\n"
"\n"
"  list [--kind K] [--status S|all] [--min-age 2h] [--limit N]\n"
"        open cases by priority (P1 first: amount and age), oldest first\n"
"  show ID\n"
"        everything known: the case, its actions and proposals, the credit\n"
"        and its history, the deposit, webhook events, reconciliation items\n"
"  assign ID --to USER [--note TEXT]\n"
"  note ID --note TEXT [--evidence E]...\n"
"  resolve ID --resolution R --note TEXT [--evidence E]...\n"
"        R: corrected, accepted, false_positive, duplicate, provider_fixed,\n"
"        written_off, not_money\n"
"  propose ID --action A [--credit N] [--amount 12.50] [--ticket T]\n"
"        --note TEXT [--evidence E]...\n"
"        money moves only when another person approves; A:\n"
"        requeue_credit     a failed credit back to pending\n"
"        correcting_credit  a new credit of AMOUNT (the credit's currency)\n"
"        correcting_debit   a new debit of AMOUNT\n"
"        settle_failed      an unknown credit that has no deal, settled as\n"
"                           failed (--evidence required: what was checked)\n"
"        settle_done        an unknown credit whose own deal is ticket T,\n"
"                           settled as done once the worker has checked T\n"
"                           in MT5 (--evidence required: where T was seen)\n"
"        release_hold       a credit a risk rule held, queued for MT5\n"
"        return_hold        a credit a risk rule held, never made (failed):\n"
"                           the payment goes back through the provider\n"
"  approve PROPOSAL [--note TEXT]   (not by the proposer)\n"
"  reject PROPOSAL [--note TEXT]    (not by the proposer)\n"
"  withdraw PROPOSAL [--note TEXT]  (the proposer only)\n"
"\n"
"You act as the database user you log in as (--database, desk_database\n"
"in the config, or PGUSER and the other PG* variables).\n");
}


int
mc_cases_main(int argc, char **argv, const char *conninfo)
{
    int               rc;
    char             *evidence;
    PGconn           *conn;
    PGresult         *res;
    const char       *action, *id, *p[6];
    mc_cases_opts_t   o;

    if (argc < 2 || strcmp(argv[1], "--help") == 0
        || strcmp(argv[1], "-h") == 0)
    {
        mc_cases_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }

    action = argv[1];

    rc = mc_cases_parse(argc - 1, argv + 1, &o);

    if (rc != 0) {
        if (rc == 1) {
            mc_cases_usage(stdout);         /* "cases ACTION --help" */
            return 0;
        }
        return 2;
    }

    if (!mc_cases_known(action)) {
        fprintf(stderr, "mt5credit: cases: unknown action \"%s\"\n"
                "Try \"mt5credit cases --help\".\n", action);
        return 2;
    }

    id = optind < argc - 1 ? argv[optind + 1] : NULL;

    if (strcmp(action, "list") != 0 && (id == NULL || !mc_cases_is_id(id))) {
        fprintf(stderr, "mt5credit: cases %s: which %s? give its number\n",
                action, strcmp(action, "approve") == 0
                        || strcmp(action, "reject") == 0
                        || strcmp(action, "withdraw") == 0
                        ? "proposal" : "case");
        return 2;
    }

    conn = mc_pgconn_connect(conninfo != NULL ? conninfo : "");
    if (PQstatus(conn) != CONNECTION_OK) {
        fprintf(stderr, "mt5credit: cases: database: %s",
                PQerrorMessage(conn));
        PQfinish(conn);
        return 1;
    }

    res = PQexec(conn, "SET application_name = 'mt5credit cases'");
    PQclear(res);

    evidence = mc_cases_evidence(&o);
    if (evidence == NULL) {
        PQfinish(conn);
        return 1;
    }

    if (strcmp(action, "list") == 0) {
        rc = mc_cases_list(conn, &o);

    } else if (strcmp(action, "show") == 0) {
        rc = mc_cases_show(conn, id);

    } else if (strcmp(action, "assign") == 0) {
        p[0] = id; p[1] = o.to; p[2] = o.note;
        rc = mc_cases_call(conn, "SELECT mt5credit.case_assign($1, $2, $3)",
                           3, p, "assigned");

    } else if (strcmp(action, "note") == 0) {
        p[0] = id; p[1] = o.note; p[2] = evidence;
        rc = mc_cases_call(conn, "SELECT mt5credit.case_note($1, $2, $3)",
                           3, p, "noted");

    } else if (strcmp(action, "resolve") == 0) {
        p[0] = id; p[1] = o.resolution; p[2] = o.note; p[3] = evidence;
        rc = mc_cases_call(conn, "SELECT mt5credit.case_resolve($1, $2, $3, "
                           "$4)", 4, p, "resolved");

    } else if (strcmp(action, "propose") == 0
               && o.action != NULL && strcmp(o.action, "settle_done") == 0)
    {
        p[0] = id; p[1] = o.credit; p[2] = o.ticket; p[3] = o.note;
        p[4] = evidence;
        rc = mc_cases_call(conn, "SELECT 'proposal ' || mt5credit."
                           "case_propose_settle_done($1, $2, $3, $4, $5) || "
                           "' made; another person must approve it, then "
                           "the worker checks the deal in MT5'", 5, p, NULL);

    } else if (strcmp(action, "propose") == 0) {
        p[0] = id; p[1] = o.action; p[2] = o.credit; p[3] = o.amount;
        p[4] = o.note; p[5] = evidence;
        rc = mc_cases_call(conn, "SELECT 'proposal ' || mt5credit."
                           "case_propose($1, $2, $3, $4, $5, $6) || ' made; "
                           "another person must approve it'", 6, p, NULL);

    } else if (strcmp(action, "approve") == 0
               || strcmp(action, "reject") == 0
               || strcmp(action, "withdraw") == 0)
    {
        p[0] = id; p[1] = action; p[2] = o.note;
        rc = mc_cases_call(conn, "SELECT 'proposal ' || $1::bigint || ': ' "
                           "|| $2::text || ' recorded (credit ' || "
                           "mt5credit.case_decide($1::bigint, $2::text, "
                           "$3::text) || ')'", 3, p, NULL);

    } else {
        rc = 2;                     /* mc_cases_known() let it through */
    }

    free(evidence);
    PQfinish(conn);
    return rc;
}


/* 0; 1 for --help; -1 on a usage error, said on stderr */
static int
mc_cases_parse(int argc, char **argv, mc_cases_opts_t *o)
{
    int  c;

    static struct option  opts[] = {
        { "kind", required_argument, NULL, 'k' },
        { "status", required_argument, NULL, 's' },
        { "min-age", required_argument, NULL, 'a' },
        { "limit", required_argument, NULL, 'l' },
        { "to", required_argument, NULL, 't' },
        { "note", required_argument, NULL, 'n' },
        { "resolution", required_argument, NULL, 'r' },
        { "action", required_argument, NULL, 'A' },
        { "credit", required_argument, NULL, 'C' },
        { "amount", required_argument, NULL, 'm' },
        { "ticket", required_argument, NULL, 'T' },
        { "evidence", required_argument, NULL, 'e' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };

    memset(o, 0, sizeof(*o));
    optind = 1;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'k': o->kind = optarg; break;
        case 's': o->status = optarg; break;
        case 'a': o->min_age = optarg; break;
        case 'l': o->limit = optarg; break;
        case 't': o->to = optarg; break;
        case 'n': o->note = optarg; break;
        case 'r': o->resolution = optarg; break;
        case 'A': o->action = optarg; break;
        case 'C': o->credit = optarg; break;
        case 'm': o->amount = optarg; break;
        case 'T': o->ticket = optarg; break;

        case 'e':
            if (o->nevidence == MC_CASES_EVIDENCE_MAX) {
                fprintf(stderr, "mt5credit: cases: at most %d --evidence\n",
                        MC_CASES_EVIDENCE_MAX);
                return -1;
            }
            o->evidence[o->nevidence++] = optarg;
            break;

        case 'h':
            return 1;

        default:
            fprintf(stderr, "Try \"mt5credit cases --help\".\n");
            return -1;
        }
    }

    return 0;
}


static int
mc_cases_list(PGconn *conn, const mc_cases_opts_t *o)
{
    int          i, n;
    PGresult    *res;
    const char  *p[4] = { o->kind, o->status, o->min_age, o->limit };

    res = PQexecParams(conn,
        "SELECT id, priority, severity, kind, status, "
        "coalesce(assigned_to, '-'), "
        "coalesce(to_char(amount_minor::numeric / 10 ^ "
        "(SELECT minor_digits FROM mt5credit.currency WHERE code = l.currency),"
        " 'FM999999999999990.00999999') || ' ' || currency, '-'), "
        "age::text, summary "
        "FROM mt5credit.case_list($1, $2, $3::interval, $4::integer) l",
        4, NULL, p, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        fprintf(stderr, "mt5credit: cases list: %s",
                PQresultErrorMessage(res));
        PQclear(res);
        return 1;
    }

    n = PQntuples(res);
    printf("%-7s %-3s %-8s %-26s %-18s %-10s %-18s %-16s %s\n", "case",
           "pri", "severity", "kind", "status", "owner", "amount", "age",
           "about");

    for (i = 0; i < n; i++) {
        printf("%-7s %-3s %-8s %-26s %-18s %-10s %-18s %-16s %s\n",
               PQgetvalue(res, i, 0), PQgetvalue(res, i, 1),
               PQgetvalue(res, i, 2), PQgetvalue(res, i, 3),
               PQgetvalue(res, i, 4), PQgetvalue(res, i, 5),
               PQgetvalue(res, i, 6), PQgetvalue(res, i, 7),
               PQgetvalue(res, i, 8));
    }

    printf("(%d case%s)\n", n, n == 1 ? "" : "s");
    PQclear(res);
    return 0;
}


static int
mc_cases_show(PGconn *conn, const char *id)
{
    PGresult    *res;
    const char  *p[1] = { id };

    res = PQexecParams(conn, "SELECT jsonb_pretty(mt5credit.case_show($1))",
                       1, NULL, p, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        fprintf(stderr, "mt5credit: cases show: %s",
                PQresultErrorMessage(res));
        PQclear(res);
        return 1;
    }

    printf("%s\n", PQgetvalue(res, 0, 0));
    PQclear(res);
    return 0;
}


/* one desk function; its refusal is printed as the database said it */
static int
mc_cases_call(PGconn *conn, const char *sql, int n, const char *const *params,
    const char *done)
{
    PGresult    *res;
    const char  *msg;

    res = PQexecParams(conn, sql, n, NULL, params, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
        fprintf(stderr, "mt5credit: cases: refused: %s\n",
                msg != NULL ? msg : PQresultErrorMessage(res));
        PQclear(res);
        return 1;
    }

    if (done != NULL) {
        printf("case %s: %s\n", params[0], done);
    } else {
        printf("%s\n", PQgetvalue(res, 0, 0));
    }

    PQclear(res);
    return 0;
}


/* --evidence values as a JSON array of strings (files, links, notes) */
static char *
mc_cases_evidence(const mc_cases_opts_t *o)
{
    int      i;
    char    *s;
    json_t  *a;

    a = json_array();
    for (i = 0; a != NULL && i < o->nevidence; i++) {
        if (json_array_append_new(a, json_string(o->evidence[i])) != 0) {
            fprintf(stderr, "mt5credit: cases: evidence %d is not UTF-8\n",
                    i + 1);
            json_decref(a);
            return NULL;
        }
    }

    s = a != NULL ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    return s;
}


int
mc_cases_is_id(const char *s)
{
    if (*s < '1' || *s > '9') {
        return 0;
    }

    while (*s >= '0' && *s <= '9') {
        s++;
    }

    return *s == '\0';
}


static int
mc_cases_known(const char *action)
{
    const char *const  *a;

    for (a = mc_cases_actions; *a != NULL; a++) {
        if (strcmp(*a, action) == 0) {
            return 1;
        }
    }

    return 0;
}
