/*
 * Copyright (C) mt5-credit
 *
 * Without these, a connect to an address that drops packets waits for
 * the kernel's SYN retries (minutes), and a statement whose server
 * vanished waits for ever: long enough for a lease to pass while the
 * worker still means to make its MT5 call.  With them, any database step
 * fails within about 30 s, and the worker's deadline check, made after
 * every database step, sees the time that passed.
 */


#include <stddef.h>

#include "mc_pgconn.h"


PGconn *
mc_pgconn_connect(const char *conninfo)
{
    /* later entries override earlier: the caller's conninfo is last */
    static const char *const  keywords[] = {
        "connect_timeout",          /* seconds, per address tried */
        "keepalives",
        "keepalives_idle",          /* a silent peer is probed after 10 s */
        "keepalives_interval",
        "keepalives_count",         /* and given up after 3 x 3 s more */
        "tcp_user_timeout",         /* ms: data sent and never acknowledged */
        "dbname",                   /* expanded: the whole conninfo */
        NULL
    };

    const char  *values[] = {
        "10", "1", "10", "3", "3", "30000", conninfo, NULL
    };

    return PQconnectdbParams(keywords, values, 1);
}
