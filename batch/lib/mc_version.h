/*
 * Copyright (C) mt5-credit
 *
 * What this program is: its version, the commit it was built from, and
 * the libraries it runs with.
 */


#ifndef MC_VERSION_H
#define MC_VERSION_H


#include <stdio.h>


extern const char  mc_version[];   /* VERSION at the root of the tree */
extern const char  mc_commit[];    /* git's, "-dirty" with local edits */


/* "mt5credit 0.12.0 (commit ...)" and the libraries, for --version */
void mc_version_print(FILE *f);


#endif /* MC_VERSION_H */
