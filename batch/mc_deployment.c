/*
 * Copyright (C) mt5-credit
 */


#include <stdio.h>
#include <string.h>

#include "mc_deployment.h"


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
