/*
 * Copyright (C) mt5-credit
 */


#include <stdio.h>
#include <string.h>

#include <libpq-fe.h>

#include "mc_status.h"


int
mc_status_print(const char *conninfo, int prometheus, FILE *out)
{
    int          i, rows;
    PGconn      *conn;
    PGresult    *res;
    const char  *metric, *kind, *status, *value, *last;

    conn = PQconnectdb(conninfo);

    if (PQstatus(conn) != CONNECTION_OK) {
        fprintf(stderr, "mt5credit: %s", PQerrorMessage(conn));
        PQfinish(conn);
        return 1;
    }

    res = PQexec(conn, "SELECT metric, coalesce(kind, ''), status, "
                       "round(value::numeric)::text "
                       "FROM mt5credit.work_status() ORDER BY 1, 2, 3");

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        fprintf(stderr, "mt5credit: %s", PQresultErrorMessage(res));
        PQclear(res);
        PQfinish(conn);
        return 1;
    }

    rows = PQntuples(res);
    last = "";

    if (!prometheus) {
        fprintf(out, "%-20s %-22s %-10s %12s\n", "metric", "kind",
                "status", "value");
    }

    for (i = 0; i < rows; i++) {
        metric = PQgetvalue(res, i, 0);
        kind = PQgetvalue(res, i, 1);
        status = PQgetvalue(res, i, 2);
        value = PQgetvalue(res, i, 3);

        if (!prometheus) {
            fprintf(out, "%-20s %-22s %-10s %12s\n", metric,
                    kind[0] ? kind : "-", status, value);
            continue;
        }

        if (strcmp(metric, last) != 0) {
            if (strcmp(metric, "credits") == 0) {
                fprintf(out, "# HELP mt5credit_credits Credit intents by "
                        "kind and status.\n# TYPE mt5credit_credits gauge\n");

            } else if (strcmp(metric, "oldest_age_seconds") == 0) {
                fprintf(out, "# HELP mt5credit_oldest_age_seconds Age of the "
                        "oldest credit in a status still open.\n"
                        "# TYPE mt5credit_oldest_age_seconds gauge\n");

            } else {
                fprintf(out, "# HELP mt5credit_open_cases Cases not yet "
                        "resolved, by kind and severity.\n"
                        "# TYPE mt5credit_open_cases gauge\n");
            }

            last = metric;
        }

        if (strcmp(metric, "credits") == 0) {
            fprintf(out, "mt5credit_credits{kind=\"%s\",status=\"%s\"} %s\n",
                    kind, status, value);

        } else if (strcmp(metric, "oldest_age_seconds") == 0) {
            fprintf(out, "mt5credit_oldest_age_seconds{status=\"%s\"} %s\n",
                    status, value);

        } else {
            fprintf(out, "mt5credit_open_cases{kind=\"%s\",severity=\"%s\"} "
                    "%s\n", kind, status, value);
        }
    }

    PQclear(res);
    PQfinish(conn);

    return 0;
}
