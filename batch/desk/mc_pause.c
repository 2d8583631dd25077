/*
 * Copyright (C) mt5-credit
 */


#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <libpq-fe.h>

#include "mc_pause.h"
#include "mc_pgconn.h"


static int mc_pause_list(PGconn *conn, int all);
static int mc_pause_call(PGconn *conn, const char *sql, const char *what,
    const char *scope, const char *target, const char *text);


void
mc_pause_usage(FILE *f)
{
    fprintf(f,
"usage: mt5credit pause server|provider|kind NAME --reason TEXT\n"
"       mt5credit pause list [--all]\n"
"       mt5credit resume server|provider|kind NAME [--note TEXT]\n"
"\n"
"  pause server live1 --reason TEXT\n"
"        no pending credit of MT5 server live1 is claimed until it is\n"
"        resumed; a call in flight finishes and records its outcome\n"
"  pause provider stripe --reason TEXT\n"
"        the provider's credits, refund legs and payouts wait; its\n"
"        webhooks are still stored and answered 200\n"
"  pause kind deposit|refund|chargeback|correction|withdrawal ...\n"
"        that kind of credit waits, on every server\n"
"  pause list [--all]\n"
"        the active pauses with who, when, why and what each holds;\n"
"        --all: the resumed ones too\n"
"  resume server live1 [--note TEXT]\n"
"        claims go on; the pause stays in the record with who resumed it\n"
"\n"
"You act as the database user you log in as (--database, desk_database\n"
"in the config, or PGUSER and the other PG* variables); a member of\n"
"mt5credit_operator.\n");
}


int
mc_pause_main(int argc, char **argv, const char *conninfo)
{
    int          c, rc, all, resume;
    PGconn      *conn;
    PGresult    *res;
    const char  *text, *scope, *target, *name;

    static struct option  opts[] = {
        { "reason", required_argument, NULL, 'r' },
        { "note", required_argument, NULL, 'n' },
        { "all", no_argument, NULL, 'a' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };

    /* argv[0] is "mt5credit pause" or "mt5credit resume" */
    name = strrchr(argv[0], ' ') != NULL ? strrchr(argv[0], ' ') + 1
                                         : argv[0];
    resume = strcmp(name, "resume") == 0;
    text = NULL;
    all = 0;
    optind = 1;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'r':
        case 'n':
            if ((c == 'r') == resume) {
                fprintf(stderr, "mt5credit: %s: --%s is for %s\n", name,
                        c == 'r' ? "reason" : "note",
                        c == 'r' ? "pause" : "resume");
                return 2;
            }
            text = optarg;
            break;

        case 'a':
            all = 1;
            break;

        case 'h':
            mc_pause_usage(stdout);
            return 0;

        default:
            fprintf(stderr, "Try \"mt5credit %s --help\".\n", name);
            return 2;
        }
    }

    scope = optind < argc ? argv[optind] : NULL;
    target = optind + 1 < argc ? argv[optind + 1] : NULL;

    if (scope != NULL && strcmp(scope, "list") == 0 && !resume) {
        if (target != NULL) {
            fprintf(stderr, "mt5credit: pause list: unexpected \"%s\"\n",
                    target);
            return 2;
        }

    } else if (scope == NULL || target == NULL || optind + 2 != argc
               || (strcmp(scope, "server") != 0
                   && strcmp(scope, "provider") != 0
                   && strcmp(scope, "kind") != 0))
    {
        fprintf(stderr, "mt5credit: %s what? server NAME, provider NAME "
                "or kind NAME\nTry \"mt5credit %s --help\".\n", name, name);
        return 2;

    } else if (all) {
        fprintf(stderr, "mt5credit: %s: --all is for \"pause list\"\n",
                name);
        return 2;

    } else if (!resume && (text == NULL || text[0] == '\0')) {
        fprintf(stderr, "mt5credit: pause: --reason is required: why "
                "crediting stops (it is kept, with who and when)\n");
        return 2;
    }

    conn = mc_pgconn_connect(conninfo != NULL ? conninfo : "");
    if (PQstatus(conn) != CONNECTION_OK) {
        fprintf(stderr, "mt5credit: %s: database: %s", name,
                PQerrorMessage(conn));
        PQfinish(conn);
        return 1;
    }

    res = PQexec(conn, resume ? "SET application_name = 'mt5credit resume'"
                              : "SET application_name = 'mt5credit pause'");
    PQclear(res);

    if (strcmp(scope, "list") == 0) {
        rc = mc_pause_list(conn, all);

    } else if (resume) {
        rc = mc_pause_call(conn, "SELECT mt5credit.pause_resume($1, $2, $3)",
                           "resumed", scope, target, text);

    } else {
        rc = mc_pause_call(conn, "SELECT mt5credit.pause_set($1, $2, $3)",
                           "paused", scope, target, text);
    }

    PQfinish(conn);
    return rc;
}


static int
mc_pause_call(PGconn *conn, const char *sql, const char *what,
    const char *scope, const char *target, const char *text)
{
    PGresult    *res;
    const char  *msg, *p[3] = { scope, target, text };

    res = PQexecParams(conn, sql, 3, NULL, p, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
        fprintf(stderr, "mt5credit: %s %s %s: refused: %s\n",
                what[0] == 'p' ? "pause" : "resume", scope, target,
                msg != NULL ? msg : PQresultErrorMessage(res));
        PQclear(res);
        return 1;
    }

    printf("%s %s %s (pause %s)\n", scope, target, what,
           PQgetvalue(res, 0, 0));
    PQclear(res);
    return 0;
}


static int
mc_pause_list(PGconn *conn, int all)
{
    int          i, n;
    PGresult    *res;
    const char  *p[1] = { all ? "true" : "false" };

    res = PQexecParams(conn,
        "SELECT id, scope, target, paused_by, "
        "to_char(paused_at AT TIME ZONE 'UTC', "
        "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), held, reason, "
        "coalesce(resumed_by, ''), coalesce(to_char(resumed_at AT TIME ZONE "
        "'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), ''), "
        "coalesce(resume_note, '') "
        "FROM mt5credit.pause_list($1::boolean)", 1, NULL, p, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        fprintf(stderr, "mt5credit: pause list: %s",
                PQresultErrorMessage(res));
        PQclear(res);
        return 1;
    }

    n = PQntuples(res);
    printf("%-6s %-9s %-20s %-16s %-20s %-6s %s\n", "pause", "scope",
           "target", "by", "since", "holds", "reason");

    for (i = 0; i < n; i++) {
        printf("%-6s %-9s %-20s %-16s %-20s %-6s %s\n",
               PQgetvalue(res, i, 0), PQgetvalue(res, i, 1),
               PQgetvalue(res, i, 2), PQgetvalue(res, i, 3),
               PQgetvalue(res, i, 4), PQgetvalue(res, i, 5),
               PQgetvalue(res, i, 6));

        if (PQgetvalue(res, i, 7)[0] != '\0') {
            printf("       resumed %s by %s%s%s\n", PQgetvalue(res, i, 8),
                   PQgetvalue(res, i, 7),
                   PQgetvalue(res, i, 9)[0] ? ": " : "",
                   PQgetvalue(res, i, 9));
        }
    }

    printf("(%d pause%s)\n", n, n == 1 ? "" : "s");
    PQclear(res);
    return 0;
}
