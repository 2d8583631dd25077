/*
 * Copyright (C) mt5-credit
 *
 * The deployment tag (sql/036): each database carries one, set once, in
 * every MT5 comment and payout key made since.  A program configured for
 * one deployment must never work on another's database: staging's worker
 * pointed at production's database would make production's deals under
 * staging's name, and the other way round.  So each program compares the
 * tag it was configured with to the database's, on every connection it
 * works through, and refuses to work on a mismatch.
 */


#ifndef MC_DEPLOYMENT_H
#define MC_DEPLOYMENT_H


#include <libpq-fe.h>


typedef enum {
    MC_DEPLOYMENT_OK = 0,
    MC_DEPLOYMENT_MISMATCH,     /* another deployment's database: refuse */
    MC_DEPLOYMENT_ERROR         /* the database could not be asked */
} mc_deployment_rc_e;


/*
 * The database's tag against `configured` ("" for none), said in err on
 * anything but MC_DEPLOYMENT_OK.
 */
mc_deployment_rc_e mc_deployment_check(PGconn *conn, const char *configured,
    char *err, size_t errlen);


/*
 * A program's one connection (payout, poll-provider): connected with the
 * bounds of mc_pgconn.c and its tag checked.  NULL, said on stderr under
 * the command's name, when either fails.
 */
PGconn *mc_deployment_connect(const char *conninfo, const char *configured,
    const char *cmd);

/*
 * PQreset() of such a connection, which may reach another server: -1
 * (logged) when it now reaches another deployment's database.
 */
int mc_deployment_reset(PGconn *conn, const char *configured,
    const char *cmd);


#endif /* MC_DEPLOYMENT_H */
