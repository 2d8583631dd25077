
/*
 * Copyright (C) mt5-credit
 */


#include <stdio.h>
#include <string.h>

#include <libpq-fe.h>

#include "mc_identities.h"


static int mc_identities_change(PGconn *conn, const char *action,
    char **args, int nargs);
static int mc_identities_list(PGconn *conn);


int
mc_identities_is_action(const char *action)
{
    return strcmp(action, "map") == 0 || strcmp(action, "unmap") == 0
           || strcmp(action, "names") == 0;
}


int
mc_identities_run(PGconn *conn, const char *action, char **args, int nargs)
{
    if (strcmp(action, "names") == 0) {
        if (nargs != 0) {
            fprintf(stderr, "mt5credit: persons names takes no operand\n");
            return 2;
        }

        return mc_identities_list(conn);
    }

    return mc_identities_change(conn, action, args, nargs);
}


/* map NAME PERSON, unmap NAME: each value a parameter, never SQL text */
static int
mc_identities_change(PGconn *conn, const char *action, char **args,
    int nargs)
{
    int          map;
    PGresult    *res;
    const char  *msg, *values[2];

    map = strcmp(action, "map") == 0;

    if (nargs != (map ? 2 : 1) || args[0][0] == '\0'
        || (map && args[1][0] == '\0'))
    {
        fprintf(stderr, "mt5credit: persons %s: %s\n", action,
                map ? "NAME PERSON: the name nginx gives, and the person's "
                      "database role"
                    : "NAME: the name nginx gives");
        return 2;
    }

    values[0] = args[0];
    values[1] = map ? args[1] : NULL;

    res = PQexecParams(conn,
                       map ? "SELECT mt5credit.person_identity_map($1, $2)"
                           : "SELECT mt5credit.person_identity_unmap($1)",
                       map ? 2 : 1, NULL, values, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
        fprintf(stderr, "mt5credit: persons %s \"%s\": refused: %s\n",
                action, args[0], msg != NULL ? msg
                                             : PQresultErrorMessage(res));
        PQclear(res);
        return 1;
    }

    PQclear(res);

    if (map) {
        printf("\"%s\" is %s\n", args[0], args[1]);
    } else {
        printf("\"%s\" is nobody\n", args[0]);
    }

    return 0;
}


static int
mc_identities_list(PGconn *conn)
{
    int        i, n;
    PGresult  *res;

    res = PQexec(conn,
        "SELECT identity, coalesce(person, '(role gone)'), mapped_by, "
        "to_char(mapped_at AT TIME ZONE 'UTC', "
        "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') "
        "FROM mt5credit.person_identity_list()");

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        fprintf(stderr, "mt5credit: persons names: %s",
                PQresultErrorMessage(res));
        PQclear(res);
        return 1;
    }

    n = PQntuples(res);
    printf("%-32s %-20s %-16s %s\n", "name", "person", "mapped by", "since");

    for (i = 0; i < n; i++) {
        printf("%-32s %-20s %-16s %s\n", PQgetvalue(res, i, 0),
               PQgetvalue(res, i, 1), PQgetvalue(res, i, 2),
               PQgetvalue(res, i, 3));
    }

    printf("(%d name%s)\n", n, n == 1 ? "" : "s");
    PQclear(res);

    return 0;
}
