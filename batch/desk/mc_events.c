/*
 * Copyright (C) mt5-credit
 */


#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "mc_cases.h"
#include "mc_events.h"
#include "mc_pgconn.h"


typedef struct {
    const char  *provider;
    const char  *type;
    const char  *disposition;
    const char  *payment;
    const char  *deposit;
    const char  *since;
    const char  *until;
    const char  *request_id;
    const char  *limit;
    const char  *reason;
    int          raw;
} mc_events_opts_t;


static int mc_events_parse(int argc, char **argv, mc_events_opts_t *o);
static int mc_events_list(PGconn *conn, const mc_events_opts_t *o);
static int mc_events_show(PGconn *conn, const char *id, int raw);
static int mc_events_replay(PGconn *conn, const char *id, const char *reason);


void
mc_events_usage(FILE *f)
{
    fprintf(f,
"usage: mt5credit events <action> [options]\n"
"\n"
"  list [--provider P] [--type T] [--disposition D] [--payment KEY]\n"
"       [--deposit dep_...] [--since 2026-11-01] [--until 2026-11-02]\n"
"       [--request-id ID] [--limit N]\n"
"        stored events, newest first; --payment, --deposit: the events\n"
"        whose bytes name it or whose credit is of it (a scan: give\n"
"        --since on a large store); --until: received before it;\n"
"        --request-id: the event nginx's $request_id delivered (or a\n"
"        conflicting body of it), as an access_log line shows it\n"
"  show ID [--raw]\n"
"        the event: scheme, signature time, when it was received and\n"
"        by which request, its bytes as received, what ingest() did,\n"
"        its replays; --raw: only the bytes\n"
"  replay ID --reason TEXT\n"
"        the stored bytes through ingest's rules again, under the same\n"
"        unique keys (a payment already credited stays credited once);\n"
"        recorded with who, when, why and the outcome\n"
"\n"
"You act as the database user you log in as (--database, desk_database\n"
"in the config, or PGUSER and the other PG* variables).\n");
}


int
mc_events_main(int argc, char **argv, const char *conninfo)
{
    int                rc;
    PGconn            *conn;
    PGresult          *res;
    const char        *action, *id;
    mc_events_opts_t   o;

    if (argc < 2 || strcmp(argv[1], "--help") == 0
        || strcmp(argv[1], "-h") == 0)
    {
        mc_events_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }

    action = argv[1];

    if (strcmp(action, "list") != 0 && strcmp(action, "show") != 0
        && strcmp(action, "replay") != 0)
    {
        fprintf(stderr, "mt5credit: events: unknown action \"%s\"\n"
                "Try \"mt5credit events --help\".\n", action);
        return 2;
    }

    rc = mc_events_parse(argc - 1, argv + 1, &o);
    if (rc != 0) {
        if (rc == 1) {
            mc_events_usage(stdout);
            return 0;
        }
        return 2;
    }

    id = optind < argc - 1 ? argv[optind + 1] : NULL;

    if (strcmp(action, "list") != 0 && (id == NULL || !mc_cases_is_id(id))) {
        fprintf(stderr, "mt5credit: events %s: which event? give its "
                "number (events list)\n", action);
        return 2;
    }

    if (strcmp(action, "replay") == 0
        && (o.reason == NULL || o.reason[0] == '\0'))
    {
        fprintf(stderr, "mt5credit: events replay: --reason is required: "
                "why this event is replayed\n");
        return 2;
    }

    conn = mc_pgconn_connect(conninfo != NULL ? conninfo : "");
    if (PQstatus(conn) != CONNECTION_OK) {
        fprintf(stderr, "mt5credit: events: database: %s",
                PQerrorMessage(conn));
        PQfinish(conn);
        return 1;
    }

    res = PQexec(conn, "SET application_name = 'mt5credit events'");
    PQclear(res);

    if (strcmp(action, "list") == 0) {
        rc = mc_events_list(conn, &o);

    } else if (strcmp(action, "show") == 0) {
        rc = mc_events_show(conn, id, o.raw);

    } else {
        rc = mc_events_replay(conn, id, o.reason);
    }

    PQfinish(conn);
    return rc;
}


/* 0; 1 for --help; -1 on a usage error, said on stderr */
static int
mc_events_parse(int argc, char **argv, mc_events_opts_t *o)
{
    int  c;

    static struct option  opts[] = {
        { "provider", required_argument, NULL, 'p' },
        { "type", required_argument, NULL, 't' },
        { "disposition", required_argument, NULL, 'd' },
        { "payment", required_argument, NULL, 'P' },
        { "deposit", required_argument, NULL, 'D' },
        { "since", required_argument, NULL, 's' },
        { "until", required_argument, NULL, 'u' },
        { "request-id", required_argument, NULL, 'q' },
        { "limit", required_argument, NULL, 'l' },
        { "reason", required_argument, NULL, 'r' },
        { "raw", no_argument, NULL, 'R' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };

    memset(o, 0, sizeof(*o));
    optind = 1;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'p': o->provider = optarg; break;
        case 't': o->type = optarg; break;
        case 'd': o->disposition = optarg; break;
        case 'P': o->payment = optarg; break;
        case 'D': o->deposit = optarg; break;
        case 's': o->since = optarg; break;
        case 'u': o->until = optarg; break;
        case 'q': o->request_id = optarg; break;
        case 'l': o->limit = optarg; break;
        case 'r': o->reason = optarg; break;
        case 'R': o->raw = 1; break;
        case 'h': return 1;

        default:
            fprintf(stderr, "Try \"mt5credit events --help\".\n");
            return -1;
        }
    }

    return 0;
}


static int
mc_events_list(PGconn *conn, const mc_events_opts_t *o)
{
    int          i, n;
    PGresult    *res;
    const char  *p[9] = { o->provider, o->type, o->disposition, o->payment,
                          o->deposit, o->since, o->until, o->request_id,
                          o->limit };

    res = PQexecParams(conn,
        "SELECT id, provider, provider_event_id, coalesce(event_type, '-'), "
        "signature_scheme, to_char(received_at AT TIME ZONE 'UTC', "
        "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), disposition, "
        "coalesce(credit_id::text, '-'), replays, bytes, "
        "coalesce(detail, '') "
        "FROM mt5credit.events_list($1, $2, $3, $4, $5, $6::timestamptz, "
        "$7::timestamptz, $8, $9::integer)", 9, NULL, p, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        fprintf(stderr, "mt5credit: events list: %s",
                PQresultErrorMessage(res));
        PQclear(res);
        return 1;
    }

    n = PQntuples(res);
    printf("%-8s %-10s %-30s %-34s %-11s %-20s %-16s %-8s %-7s %s\n",
           "event", "provider", "provider event", "type", "scheme",
           "received", "disposition", "credit", "replays", "detail");

    for (i = 0; i < n; i++) {
        printf("%-8s %-10s %-30s %-34s %-11s %-20s %-16s %-8s %-7s %s\n",
               PQgetvalue(res, i, 0), PQgetvalue(res, i, 1),
               PQgetvalue(res, i, 2), PQgetvalue(res, i, 3),
               PQgetvalue(res, i, 4), PQgetvalue(res, i, 5),
               PQgetvalue(res, i, 6), PQgetvalue(res, i, 7),
               PQgetvalue(res, i, 8), PQgetvalue(res, i, 10));
    }

    printf("(%d event%s)\n", n, n == 1 ? "" : "s");
    PQclear(res);
    return 0;
}


static int
mc_events_show(PGconn *conn, const char *id, int raw)
{
    PGresult    *res;
    const char  *p[1] = { id };

    res = PQexecParams(conn, raw
                       ? "SELECT mt5credit.event_show($1)->>'raw_body'"
                       : "SELECT jsonb_pretty(mt5credit.event_show($1))",
                       1, NULL, p, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        fprintf(stderr, "mt5credit: events show: %s",
                PQresultErrorMessage(res));
        PQclear(res);
        return 1;
    }

    if (PQgetisnull(res, 0, 0)) {
        fprintf(stderr, "mt5credit: events show: no stored event %s\n", id);
        PQclear(res);
        return 1;
    }

    printf("%s\n", PQgetvalue(res, 0, 0));
    PQclear(res);
    return 0;
}


static int
mc_events_replay(PGconn *conn, const char *id, const char *reason)
{
    PGresult    *res;
    const char  *msg, *p[2] = { id, reason };

    res = PQexecParams(conn, "SELECT replay_id, outcome, "
                       "coalesce(credit_id::text, '-'), coalesce(detail, '') "
                       "FROM mt5credit.event_replay($1, $2)", 2, NULL, p,
                       NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
        fprintf(stderr, "mt5credit: events replay: refused: %s\n",
                msg != NULL ? msg : PQresultErrorMessage(res));
        PQclear(res);
        return 1;
    }

    printf("event %s: replay %s: %s (credit %s)%s%s\n", id,
           PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1),
           PQgetvalue(res, 0, 2), PQgetvalue(res, 0, 3)[0] ? ": " : "",
           PQgetvalue(res, 0, 3));
    PQclear(res);
    return 0;
}

