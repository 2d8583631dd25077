/*
 * Copyright (C) mt5-credit
 */


#ifndef MC_AUDIT_H
#define MC_AUDIT_H


/* mt5credit audit seal|verify (sql/081): exit 0 fits, 1 does not, 2 usage,
   3 could not check */
int mc_audit_main(int argc, char **argv, const char *conninfo);


#endif /* MC_AUDIT_H */
