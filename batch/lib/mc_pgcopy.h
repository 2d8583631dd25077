/*
 * Copyright (C) mt5-credit
 *
 * Streaming rows into PostgreSQL with COPY ... FROM STDIN (text format):
 * large inputs go to the database as they are read, a buffer at a time,
 * never whole into memory.  A COPY ended with a reason is aborted by the
 * server, so nothing of it is kept.
 */

#ifndef MC_PGCOPY_H
#define MC_PGCOPY_H


#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <libpq-fe.h>


#define MC_PGCOPY_BUF  (256 * 1024)


typedef struct {
    PGconn   *conn;
    FILE     *file;             /* or rows go to a file, to COPY later */
    size_t    len;
    int       fields;           /* in the current row */
    int       failed;
    uint64_t  rows;
    char      err[512];
    char      buf[MC_PGCOPY_BUF];
} mc_pgcopy_t;


/* sends `sql` (a COPY ... FROM STDIN); 0, or -1 with the reason in err */
int mc_pgcopy_begin(mc_pgcopy_t *c, PGconn *conn, const char *sql,
    char *err, size_t errlen);

/*
 * The same rows into a file (a temporary one), for a producer that must
 * not wait for the connection; mc_pgcopy_end() flushes it, and
 * mc_pgcopy_send_file() later sends its contents into a COPY.
 */
void mc_pgcopy_begin_file(mc_pgcopy_t *c, FILE *file);
int mc_pgcopy_send_file(mc_pgcopy_t *c, FILE *file, char *err,
    size_t errlen);

/* one field of the current row: text (escaped here), integer or NULL */
void mc_pgcopy_text(mc_pgcopy_t *c, const char *s);
void mc_pgcopy_i64(mc_pgcopy_t *c, int64_t v);
void mc_pgcopy_u64(mc_pgcopy_t *c, uint64_t v);
void mc_pgcopy_bool(mc_pgcopy_t *c, int v);
void mc_pgcopy_null(mc_pgcopy_t *c);
void mc_pgcopy_row_end(mc_pgcopy_t *c);

/*
 * Ends the COPY: with abort_reason NULL the rows are kept (if the server
 * accepts them all), otherwise the server discards every row of it.
 * 0 when the rows were accepted, -1 otherwise (reason in err).
 */
int mc_pgcopy_end(mc_pgcopy_t *c, const char *abort_reason, char *err,
    size_t errlen);


#endif /* MC_PGCOPY_H */
