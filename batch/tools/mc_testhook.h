/*
 * Copyright (C) mt5-credit
 *
 * `mt5credit send-test-webhook`: a signed provider event to a running
 * edge, to check a setup end to end (mc_testhook.c).
 */

#ifndef MC_TESTHOOK_H
#define MC_TESTHOOK_H


/* argv[0] is the command's name; 0 on HTTP 200, 1 otherwise, 2 usage */
int mc_testhook_main(int argc, char **argv);


#endif /* MC_TESTHOOK_H */
