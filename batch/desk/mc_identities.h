
/*
 * Copyright (C) mt5-credit
 *
 * `mt5credit persons map|unmap|names`: which names the console's identity
 * sources give (a basic-auth user, an SSO id, a certificate's CN) are
 * which person (sql/063).  One human is one person: every name they are
 * known by maps to their one role.  A person admin's, at their own login.
 */

#ifndef MC_IDENTITIES_H
#define MC_IDENTITIES_H


#include <libpq-fe.h>


/* action "map" (NAME PERSON), "unmap" (NAME) or "names" (none) */
int mc_identities_run(PGconn *conn, const char *action, char **args,
    int nargs);

int mc_identities_is_action(const char *action);


#endif /* MC_IDENTITIES_H */
