/*
 * Copyright (C) mt5-credit
 *
 * Files for node-exporter's textfile collector, written the only safe
 * way: to a temporary file beside the target, flushed and fsync'ed, then
 * renamed over it, so a scrape never reads half a file and a failed
 * write leaves the last good one.
 */

#ifndef MC_TEXTFILE_H
#define MC_TEXTFILE_H


#include <stddef.h>
#include <stdio.h>


/* <dir>/mt5credit-<program>-<name>.prom, name made a safe file name */
void mc_textfile_path(char *out, size_t size, const char *dir,
    const char *program, const char *name);

/* the temporary file for path (tmp receives its name); NULL on error */
FILE *mc_textfile_open(const char *path, char *tmp, size_t tmpsize);

/* 0: in place; -1 (errno set): the temporary file removed, the old kept */
int mc_textfile_commit(FILE *f, const char *tmp, const char *path);


#endif /* MC_TEXTFILE_H */
