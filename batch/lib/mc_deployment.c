/*
 * Copyright (C) mt5-credit
 */


#include <stdio.h>
#include <string.h>

#include "mc_deployment.h"
#include "mc_log.h"
#include "mc_pgconn.h"


mc_deployment_rc_e
mc_deployment_check(PGconn *conn, const char *configured, char *err,
    size_t errlen)
{
    const char  *tag;
    PGresult    *res;

    res = PQexec(conn, "SELECT mt5credit.deployment_tag()");

    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        snprintf(err, errlen, "deployment tag: %s",
                 PQresultErrorMessage(res));
        PQclear(res);
        return MC_DEPLOYMENT_ERROR;
    }

    tag = PQgetisnull(res, 0, 0) ? "" : PQgetvalue(res, 0, 0);

    if (strcmp(tag, configured) != 0) {
        snprintf(err, errlen, "the database is deployment \"%s\", this "
                 "configuration says deployment_tag \"%s\": another "
                 "deployment's database, nothing is done on it",
                 tag[0] ? tag : "(none)",
                 configured[0] ? configured : "(none)");
        PQclear(res);
        return MC_DEPLOYMENT_MISMATCH;
    }

    PQclear(res);
    return MC_DEPLOYMENT_OK;
}


PGconn *
mc_deployment_connect(const char *conninfo, const char *configured,
    const char *cmd)
{
    char     err[512];
    PGconn  *conn;

    conn = mc_pgconn_connect(conninfo);

    if (PQstatus(conn) != CONNECTION_OK) {
        fprintf(stderr, "mt5credit: %s: %s", cmd, PQerrorMessage(conn));
        PQfinish(conn);
        return NULL;
    }

    /* another deployment's database: nothing is done for it */
    if (mc_deployment_check(conn, configured, err, sizeof(err))
        != MC_DEPLOYMENT_OK)
    {
        fprintf(stderr, "mt5credit: %s: %s\n", cmd, err);
        PQfinish(conn);
        return NULL;
    }

    return conn;
}


int
mc_deployment_reset(PGconn *conn, const char *configured, const char *cmd)
{
    char  err[512];

    PQreset(conn);

    if (PQstatus(conn) == CONNECTION_OK
        && mc_deployment_check(conn, configured, err, sizeof(err))
           == MC_DEPLOYMENT_MISMATCH)
    {
        mc_log(MC_LOG_ERROR, "%s: %s", cmd, err);
        return -1;
    }

    return 0;
}
