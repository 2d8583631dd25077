/*
 * Copyright (C) mt5-credit
 *
 * Without these, a connect to an address that drops packets waits for
 * the kernel's SYN retries (minutes), and a statement whose server
 * vanished waits for ever: long enough for a lease to pass while the
 * worker still means to make its MT5 call.  With them, any database step
 * fails within about 30 s, and the worker's deadline check, made after
 * every database step, sees the time that passed.
 *
 * A recorded deal, a claim, a decision is acted on once its COMMIT
 * returns: synchronous_commit is on for every session, whatever the role
 * or database says, so no crash takes back what a program already acted
 * on.  The caller's own "options" (in the conninfo, else PGOPTIONS) are
 * kept, before ours.
 */


#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc_pgconn.h"


#define MC_PGCONN_PINNED  "-c synchronous_commit=on"


PGconn *
mc_pgconn_connect(const char *conninfo)
{
    char               options[2048];
    const char        *theirs;
    PQconninfoOption  *opts, *o;

    /* later entries override earlier: the caller's conninfo comes after
       the defaults, and the options (the caller's and ours) after it */
    static const char *const  keywords[] = {
        "connect_timeout",          /* seconds, per address tried */
        "keepalives",
        "keepalives_idle",          /* a silent peer is probed after 10 s */
        "keepalives_interval",
        "keepalives_count",         /* and given up after 3 x 3 s more */
        "tcp_user_timeout",         /* ms: data sent and never acknowledged */
        "dbname",                   /* expanded: the whole conninfo */
        "options",
        NULL
    };

    const char  *values[] = {
        "10", "1", "10", "3", "3", "30000", conninfo, options, NULL
    };

    theirs = NULL;
    opts = PQconninfoParse(conninfo, NULL);

    for (o = opts; o != NULL && o->keyword != NULL; o++) {
        if (strcmp(o->keyword, "options") == 0 && o->val != NULL
            && o->val[0] != '\0')
        {
            theirs = o->val;
        }
    }

    if (theirs == NULL) {
        /* libpq's own default, which our "options" would hide */
        theirs = getenv("PGOPTIONS");
        theirs = theirs != NULL && theirs[0] != '\0' ? theirs : NULL;
    }

    snprintf(options, sizeof(options), "%s%s" MC_PGCONN_PINNED,
             theirs != NULL ? theirs : "", theirs != NULL ? " " : "");
    PQconninfoFree(opts);

    return PQconnectdbParams(keywords, values, 1);
}
