/*
 * Copyright (C) mt5-credit
 */


#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "mc_outbox.h"
#include "mc_pgconn.h"


typedef struct {
    const char  *since;
    const char  *status;
    const char  *subject;
    const char  *endpoint;
    const char  *limit;
    const char  *reason;
} mc_outbox_opts_t;


static int mc_outbox_parse(int argc, char **argv, mc_outbox_opts_t *o);
static int mc_outbox_list(PGconn *conn, const mc_outbox_opts_t *o);
static int mc_outbox_show(PGconn *conn, const char *id);
static int mc_outbox_replay(PGconn *conn, const char *id,
    const mc_outbox_opts_t *o);
static int mc_outbox_endpoint(PGconn *conn, const char *action,
    const char *name, const mc_outbox_opts_t *o);
static int mc_outbox_refused(const char *what, PGresult *res);


void
mc_outbox_usage(FILE *f)
{
    fprintf(f,
"usage: mt5credit outbox <action> [options]\n"
"\n"
"  list [--since 2026-11-01] [--status S] [--subject deposit:ID]\n"
"       [--limit N]\n"
"        outbound events, newest first, a line per endpoint: type,\n"
"        subject and sequence, delivery status (pending, sending,\n"
"        delivered, exhausted), tries, the last answer\n"
"  show WEBHOOK_ID\n"
"        one event: its body as sent, each delivery, every try\n"
"  replay WEBHOOK_ID [--endpoint NAME] --reason TEXT\n"
"  replay --since TIME [--endpoint NAME] --reason TEXT\n"
"        send one event again, or every event made since TIME (a UTC\n"
"        time, 2026-11-30T12:00:00Z): the same bytes, the same\n"
"        webhook-id, a fresh retry schedule; recorded with who and why\n"
"  enable NAME --reason TEXT\n"
"        an endpoint the sender disabled after failing (or a retired\n"
"        one), on again: its waiting events go out\n"
"  retire NAME --reason TEXT\n"
"        an endpoint that is gone (its [endpoint] section removed): no\n"
"        new event is made for it, and it leaves the backlog\n"
"\n"
"You act as the database user you log in as (--database, desk_database\n"
"in the config, or PGUSER and the other PG* variables).\n");
}


int
mc_outbox_main(int argc, char **argv, const char *conninfo)
{
    int                rc;
    PGconn            *conn;
    PGresult          *res;
    const char        *action, *arg;
    mc_outbox_opts_t   o;

    if (argc < 2 || strcmp(argv[1], "--help") == 0
        || strcmp(argv[1], "-h") == 0)
    {
        mc_outbox_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }

    action = argv[1];

    if (strcmp(action, "list") != 0 && strcmp(action, "show") != 0
        && strcmp(action, "replay") != 0 && strcmp(action, "enable") != 0
        && strcmp(action, "retire") != 0)
    {
        fprintf(stderr, "mt5credit: outbox: unknown action \"%s\"\n"
                "Try \"mt5credit outbox --help\".\n", action);
        return 2;
    }

    rc = mc_outbox_parse(argc - 1, argv + 1, &o);
    if (rc != 0) {
        if (rc == 1) {
            mc_outbox_usage(stdout);
            return 0;
        }
        return 2;
    }

    arg = optind < argc - 1 ? argv[optind + 1] : NULL;

    if ((strcmp(action, "show") == 0 || strcmp(action, "enable") == 0
         || strcmp(action, "retire") == 0)
        && arg == NULL)
    {
        fprintf(stderr, "mt5credit: outbox %s: which %s?\n", action,
                action[0] == 's' ? "event? give its webhook-id"
                                 : "endpoint? give its name");
        return 2;
    }

    if (strcmp(action, "replay") == 0 && (arg == NULL) == (o.since == NULL)) {
        fprintf(stderr, "mt5credit: outbox replay: give one webhook-id, "
                "or --since TIME, not both\n");
        return 2;
    }

    if ((strcmp(action, "replay") == 0 || strcmp(action, "enable") == 0
         || strcmp(action, "retire") == 0)
        && (o.reason == NULL || o.reason[0] == '\0'))
    {
        fprintf(stderr, "mt5credit: outbox %s: --reason is required: why\n",
                action);
        return 2;
    }

    conn = mc_pgconn_connect(conninfo != NULL ? conninfo : "");
    if (PQstatus(conn) != CONNECTION_OK) {
        fprintf(stderr, "mt5credit: outbox: database: %s",
                PQerrorMessage(conn));
        PQfinish(conn);
        return 1;
    }

    res = PQexec(conn, "SET application_name = 'mt5credit outbox'");
    PQclear(res);

    if (strcmp(action, "list") == 0) {
        rc = mc_outbox_list(conn, &o);

    } else if (strcmp(action, "show") == 0) {
        rc = mc_outbox_show(conn, arg);

    } else if (strcmp(action, "replay") == 0) {
        rc = mc_outbox_replay(conn, arg, &o);

    } else {
        rc = mc_outbox_endpoint(conn, action, arg, &o);
    }

    PQfinish(conn);
    return rc;
}


/* 0; 1 for --help; -1 on a usage error, said on stderr */
static int
mc_outbox_parse(int argc, char **argv, mc_outbox_opts_t *o)
{
    int  c;

    static struct option  opts[] = {
        { "since", required_argument, NULL, 's' },
        { "status", required_argument, NULL, 'S' },
        { "subject", required_argument, NULL, 'j' },
        { "endpoint", required_argument, NULL, 'e' },
        { "limit", required_argument, NULL, 'l' },
        { "reason", required_argument, NULL, 'r' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };

    memset(o, 0, sizeof(*o));
    optind = 1;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 's': o->since = optarg; break;
        case 'S': o->status = optarg; break;
        case 'j': o->subject = optarg; break;
        case 'e': o->endpoint = optarg; break;
        case 'l': o->limit = optarg; break;
        case 'r': o->reason = optarg; break;
        case 'h': return 1;

        default:
            fprintf(stderr, "Try \"mt5credit outbox --help\".\n");
            return -1;
        }
    }

    return 0;
}


static int
mc_outbox_list(PGconn *conn, const mc_outbox_opts_t *o)
{
    int          i, n;
    PGresult    *res;
    const char  *p[4] = { o->since, o->status, o->subject, o->limit };

    res = PQexecParams(conn,
        "SELECT webhook_id, type, subject, seq, to_char(created_at AT TIME "
        "ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), "
        "coalesce(endpoint, '-'), coalesce(status, '-'), "
        "coalesce(attempts::text, '-'), "
        "coalesce(last_http_status::text, '-'), coalesce(last_error, '') "
        "FROM mt5credit.outbound_list($1::timestamptz, $2, $3, $4::integer)",
        4, NULL, p, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        return mc_outbox_refused("list", res);
    }

    n = PQntuples(res);
    printf("%-36s %-28s %-18s %-4s %-20s %-12s %-10s %-5s %-4s %s\n",
           "webhook-id", "type", "subject", "seq", "created", "endpoint",
           "status", "tries", "http", "last error");

    for (i = 0; i < n; i++) {
        printf("%-36s %-28s %-18s %-4s %-20s %-12s %-10s %-5s %-4s %s\n",
               PQgetvalue(res, i, 0), PQgetvalue(res, i, 1),
               PQgetvalue(res, i, 2), PQgetvalue(res, i, 3),
               PQgetvalue(res, i, 4), PQgetvalue(res, i, 5),
               PQgetvalue(res, i, 6), PQgetvalue(res, i, 7),
               PQgetvalue(res, i, 8), PQgetvalue(res, i, 9));
    }

    printf("(%d line%s)\n", n, n == 1 ? "" : "s");
    PQclear(res);
    return 0;
}


static int
mc_outbox_show(PGconn *conn, const char *id)
{
    PGresult    *res;
    const char  *p[1] = { id };

    res = PQexecParams(conn,
                       "SELECT jsonb_pretty(mt5credit.outbound_show($1))",
                       1, NULL, p, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        return mc_outbox_refused("show", res);
    }

    if (PQgetisnull(res, 0, 0)) {
        fprintf(stderr, "mt5credit: outbox show: no outbound event %s\n",
                id);
        PQclear(res);
        return 1;
    }

    printf("%s\n", PQgetvalue(res, 0, 0));
    PQclear(res);
    return 0;
}


static int
mc_outbox_replay(PGconn *conn, const char *id, const mc_outbox_opts_t *o)
{
    PGresult    *res;
    const char  *p[3];

    p[0] = id != NULL ? id : o->since;
    p[1] = o->endpoint;
    p[2] = o->reason;

    res = PQexecParams(conn, id != NULL
                       ? "SELECT mt5credit.outbound_replay($1, $2, $3)"
                       : "SELECT mt5credit.outbound_replay_since("
                         "$1::timestamptz, $2, $3)",
                       3, NULL, p, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        return mc_outbox_refused("replay", res);
    }

    printf("%s: %s deliver%s queued to be sent again\n",
           id != NULL ? id : "since", PQgetvalue(res, 0, 0),
           strcmp(PQgetvalue(res, 0, 0), "1") == 0 ? "y" : "ies");
    PQclear(res);
    return 0;
}


/* enable or retire an endpoint */
static int
mc_outbox_endpoint(PGconn *conn, const char *action, const char *name,
    const mc_outbox_opts_t *o)
{
    int          enable = strcmp(action, "enable") == 0;
    PGresult    *res;
    const char  *p[2] = { name, o->reason };

    res = PQexecParams(conn, enable
                       ? "SELECT mt5credit.outbound_endpoint_enable($1, $2)"
                       : "SELECT mt5credit.outbound_endpoint_retire($1, $2)",
                       2, NULL, p, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        return mc_outbox_refused(action, res);
    }

    if (strcmp(PQgetvalue(res, 0, 0), "t") != 0) {
        fprintf(stderr, "mt5credit: outbox %s: endpoint %s is not %s (or "
                "not known)\n", action, name,
                enable ? "disabled" : "in service");
        PQclear(res);
        return 1;
    }

    printf("endpoint %s %s\n", name, enable ? "enabled" : "retired");
    PQclear(res);
    return 0;
}


static int
mc_outbox_refused(const char *what, PGresult *res)
{
    const char  *msg;

    msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
    fprintf(stderr, "mt5credit: outbox %s: refused: %s\n", what,
            msg != NULL ? msg : PQresultErrorMessage(res));
    PQclear(res);
    return 1;
}
