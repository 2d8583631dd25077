/*
 * Copyright (C) mt5-credit
 *
 * Every libpq connection the batch programs make, with a bound on each
 * way it can hang: connecting, and a peer that stops answering (a
 * failover, a black-holed path).  The caller's conninfo comes last, so
 * its own connect_timeout or keepalive settings win.
 */


#ifndef MC_PGCONN_H
#define MC_PGCONN_H


#include <libpq-fe.h>


/* PQconnectdb() with the bounds; "" takes libpq's PG* environment */
PGconn *mc_pgconn_connect(const char *conninfo);


#endif /* MC_PGCONN_H */
