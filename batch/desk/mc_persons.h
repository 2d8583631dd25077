/*
 * Copyright (C) mt5-credit
 *
 * `mt5credit persons`: a person's second factor (sql/065).  A person
 * admin (mt5credit_person_admin), or a person for themselves, enrols or
 * resets a person's TOTP secret at their own login; the database makes
 * the secret and returns it once, as an otpauth:// URI, which is printed
 * with a QR code for the person's authenticator app (on a terminal, or
 * to a PNG file with --qr).  Nothing here keeps it.
 */

#ifndef MC_PERSONS_H
#define MC_PERSONS_H


#include <stdio.h>


/* conninfo NULL or "": libpq's PG* environment */
int mc_persons_main(int argc, char **argv, const char *conninfo);

void mc_persons_usage(FILE *f);


#endif /* MC_PERSONS_H */
