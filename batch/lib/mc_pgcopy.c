/*
 * Copyright (C) mt5-credit
 */


#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "mc_pgcopy.h"


static void mc_pgcopy_put(mc_pgcopy_t *c, const char *p, size_t n);
static void mc_pgcopy_flush(mc_pgcopy_t *c);
static void mc_pgcopy_sep(mc_pgcopy_t *c);


int
mc_pgcopy_begin(mc_pgcopy_t *c, PGconn *conn, const char *sql, char *err,
    size_t errlen)
{
    PGresult  *res;

    c->conn = conn;
    c->file = NULL;
    c->len = 0;
    c->fields = 0;
    c->failed = 0;
    c->rows = 0;
    c->err[0] = '\0';

    res = PQexec(conn, sql);

    if (PQresultStatus(res) != PGRES_COPY_IN) {
        snprintf(err, errlen, "%s", PQerrorMessage(conn));
        PQclear(res);
        return -1;
    }

    PQclear(res);
    return 0;
}


void
mc_pgcopy_begin_file(mc_pgcopy_t *c, FILE *file)
{
    c->conn = NULL;
    c->file = file;
    c->len = 0;
    c->fields = 0;
    c->failed = 0;
    c->rows = 0;
    c->err[0] = '\0';
}


/* the file's rows, as they are, into the COPY begun on c */
int
mc_pgcopy_send_file(mc_pgcopy_t *c, FILE *file, char *err, size_t errlen)
{
    size_t  n;

    rewind(file);

    while ((n = fread(c->buf, 1, sizeof(c->buf), file)) > 0) {
        if (PQputCopyData(c->conn, c->buf, (int) n) != 1) {
            snprintf(err, errlen, "COPY: %s", PQerrorMessage(c->conn));
            return -1;
        }
    }

    if (ferror(file)) {
        snprintf(err, errlen, "reading the spooled rows failed");
        return -1;
    }

    return 0;
}


/* the text format's escapes: backslash, and the separators */
void
mc_pgcopy_text(mc_pgcopy_t *c, const char *s)
{
    const char  *run;

    mc_pgcopy_sep(c);

    for (run = s; *s != '\0'; s++) {
        const char  *esc;

        switch (*s) {
        case '\\': esc = "\\\\"; break;
        case '\t': esc = "\\t"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        default: continue;
        }

        mc_pgcopy_put(c, run, (size_t) (s - run));
        mc_pgcopy_put(c, esc, 2);
        run = s + 1;
    }

    mc_pgcopy_put(c, run, (size_t) (s - run));
}


void
mc_pgcopy_i64(mc_pgcopy_t *c, int64_t v)
{
    char  num[24];
    int   n;

    mc_pgcopy_sep(c);
    n = snprintf(num, sizeof(num), "%" PRId64, v);
    mc_pgcopy_put(c, num, (size_t) n);
}


void
mc_pgcopy_u64(mc_pgcopy_t *c, uint64_t v)
{
    char  num[24];
    int   n;

    mc_pgcopy_sep(c);
    n = snprintf(num, sizeof(num), "%" PRIu64, v);
    mc_pgcopy_put(c, num, (size_t) n);
}


void
mc_pgcopy_bool(mc_pgcopy_t *c, int v)
{
    mc_pgcopy_sep(c);
    mc_pgcopy_put(c, v ? "t" : "f", 1);
}


void
mc_pgcopy_null(mc_pgcopy_t *c)
{
    mc_pgcopy_sep(c);
    mc_pgcopy_put(c, "\\N", 2);
}


void
mc_pgcopy_row_end(mc_pgcopy_t *c)
{
    mc_pgcopy_put(c, "\n", 1);
    c->fields = 0;
    c->rows++;

    if (c->len >= MC_PGCOPY_BUF / 2) {
        mc_pgcopy_flush(c);
    }
}


int
mc_pgcopy_end(mc_pgcopy_t *c, const char *abort_reason, char *err,
    size_t errlen)
{
    int        ok;
    PGresult  *res;

    if (c->file != NULL) {
        mc_pgcopy_flush(c);
        if (!c->failed && fflush(c->file) != 0) {
            c->failed = 1;
            snprintf(c->err, sizeof(c->err), "spooling rows failed");
        }
        if (c->failed || abort_reason != NULL) {
            snprintf(err, errlen, "%s",
                     abort_reason != NULL ? abort_reason : c->err);
            return -1;
        }
        return 0;
    }

    if (abort_reason == NULL) {
        mc_pgcopy_flush(c);
    }

    if (PQputCopyEnd(c->conn, abort_reason != NULL ? abort_reason
                              : c->failed ? c->err : NULL) != 1)
    {
        snprintf(err, errlen, "COPY end: %s", PQerrorMessage(c->conn));
        return -1;
    }

    ok = 1;

    while ((res = PQgetResult(c->conn)) != NULL) {
        if (PQresultStatus(res) != PGRES_COMMAND_OK && ok) {
            snprintf(err, errlen, "%s", PQresultErrorMessage(res));
            ok = 0;
        }
        PQclear(res);
    }

    if (abort_reason != NULL) {
        snprintf(err, errlen, "%s", abort_reason);
        return -1;
    }

    if (c->failed) {
        snprintf(err, errlen, "%s", c->err);
        return -1;
    }

    return ok ? 0 : -1;
}


static void
mc_pgcopy_sep(mc_pgcopy_t *c)
{
    if (c->fields++ > 0) {
        mc_pgcopy_put(c, "\t", 1);
    }
}


static void
mc_pgcopy_put(mc_pgcopy_t *c, const char *p, size_t n)
{
    size_t  room;

    while (n > 0) {
        room = sizeof(c->buf) - c->len;

        if (room == 0) {
            mc_pgcopy_flush(c);
            continue;
        }

        if (room > n) {
            room = n;
        }

        memcpy(c->buf + c->len, p, room);
        c->len += room;
        p += room;
        n -= room;
    }
}


/* a failed send is remembered and ends the COPY with its reason */
static void
mc_pgcopy_flush(mc_pgcopy_t *c)
{
    if (c->len > 0 && !c->failed && c->file != NULL) {
        if (fwrite(c->buf, 1, c->len, c->file) != c->len) {
            c->failed = 1;
            snprintf(c->err, sizeof(c->err), "spooling rows failed");
        }

    } else if (c->len > 0 && !c->failed
               && PQputCopyData(c->conn, c->buf, (int) c->len) != 1)
    {
        c->failed = 1;
        snprintf(c->err, sizeof(c->err), "COPY: %s",
                 PQerrorMessage(c->conn));
    }

    c->len = 0;
}
