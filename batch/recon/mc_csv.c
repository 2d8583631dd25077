/*
 * Copyright (C) mt5-credit
 *
 * Streaming RFC 4180 records; see mc_csv.h.  A fread buffer and one
 * record buffer of fixed size: memory does not grow with the file.
 */


#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc_csv.h"


#define MC_CSV_READ_SIZE  65536

#define MC_CSV_EOF        -1
#define MC_CSV_ERROR      -2


struct mc_csv_s {
    FILE           *file;
    long            line;          /* physical line of the next byte */
    long            record_line;   /* where the current record started */
    int             started;       /* the BOM has been looked for */
    int             eof;
    int             read_errno;    /* nonzero after a read error */
    size_t          pos, len;      /* unread bytes: in[pos..len) */
    size_t          nfields;
    size_t          used;          /* bytes of rec in use */
    size_t          start[MC_CSV_FIELDS_MAX];
    size_t          length[MC_CSV_FIELDS_MAX];
    unsigned char   in[MC_CSV_READ_SIZE];
    char            rec[MC_CSV_RECORD_MAX];
};


static int mc_csv_fill(mc_csv_t *c);
static int mc_csv_getc(mc_csv_t *c);
static int mc_csv_field_begin(mc_csv_t *c, char *err, size_t errlen);
static int mc_csv_append(mc_csv_t *c, int ch, char *err, size_t errlen);
static void mc_csv_field_end(mc_csv_t *c);
static int mc_csv_end_error(mc_csv_t *c, int ch, char *err, size_t errlen);
static int mc_csv_fail(mc_csv_t *c, char *err, size_t errlen,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));


mc_csv_t *
mc_csv_open(FILE *f)
{
    mc_csv_t  *c;

    if (f == NULL) {
        return NULL;
    }

    c = malloc(sizeof(mc_csv_t));
    if (c == NULL) {
        return NULL;
    }

    /* the buffers need no clearing: only bytes read into them are used */
    c->file = f;
    c->line = 1;
    c->record_line = 1;
    c->started = 0;
    c->eof = 0;
    c->read_errno = 0;
    c->pos = 0;
    c->len = 0;
    c->nfields = 0;
    c->used = 0;

    return c;
}


void
mc_csv_close(mc_csv_t *c)
{
    free(c);
}


size_t
mc_csv_fields(const mc_csv_t *c)
{
    return c->nfields;
}


const char *
mc_csv_field(const mc_csv_t *c, size_t i, size_t *len)
{
    if (i >= c->nfields) {
        *len = 0;
        return "";
    }

    *len = c->length[i];
    return c->rec + c->start[i];
}


long
mc_csv_line(const mc_csv_t *c)
{
    return c->record_line;
}


/*
 * fread returns short only at EOF or on an error, so the first fill holds
 * all three BOM bytes whenever the file has them.
 */
static int
mc_csv_fill(mc_csv_t *c)
{
    size_t  n;

    if (c->eof || c->read_errno) {
        return -1;
    }

    errno = 0;
    n = fread(c->in, 1, sizeof(c->in), c->file);

    if (n == 0) {
        if (ferror(c->file)) {
            c->read_errno = errno ? errno : EIO;
        } else {
            c->eof = 1;
        }
        return -1;
    }

    c->pos = 0;
    c->len = n;

    if (!c->started) {
        c->started = 1;
        if (n >= 3 && memcmp(c->in, "\xef\xbb\xbf", 3) == 0) {
            c->pos = 3;
        }
    }

    return 0;
}


static int
mc_csv_getc(mc_csv_t *c)
{
    /* a loop: a BOM alone empties the first fill */
    while (c->pos == c->len) {
        if (mc_csv_fill(c) != 0) {
            return c->read_errno ? MC_CSV_ERROR : MC_CSV_EOF;
        }
    }

    return c->in[c->pos++];
}


static int
mc_csv_fail(mc_csv_t *c, char *err, size_t errlen, const char *fmt, ...)
{
    int      n;
    va_list  args;

    if (err == NULL || errlen == 0) {
        return -1;
    }

    n = snprintf(err, errlen, "line %ld: ", c->record_line);

    if (n > 0 && (size_t) n < errlen) {
        va_start(args, fmt);
        vsnprintf(err + n, errlen - (size_t) n, fmt, args);
        va_end(args);
    }

    return -1;
}


static int
mc_csv_field_begin(mc_csv_t *c, char *err, size_t errlen)
{
    if (c->nfields == MC_CSV_FIELDS_MAX) {
        return mc_csv_fail(c, err, errlen, "more than %d fields",
                           MC_CSV_FIELDS_MAX);
    }

    /* room for the field's NUL */
    if (c->used + 1 > MC_CSV_RECORD_MAX) {
        return mc_csv_fail(c, err, errlen,
                           "record too long (more than %d bytes)",
                           MC_CSV_RECORD_MAX);
    }

    c->start[c->nfields] = c->used;
    c->length[c->nfields] = 0;
    c->nfields++;

    return 0;
}


static int
mc_csv_append(mc_csv_t *c, int ch, char *err, size_t errlen)
{
    size_t  i;

    i = c->nfields - 1;

    /* fields are NUL-terminated for the callers: a NUL inside would cut
       one short without a word */
    if (ch == '\0') {
        return mc_csv_fail(c, err, errlen, "NUL byte in field %zu", i + 1);
    }

    if (c->length[i] == MC_CSV_FIELD_MAX) {
        return mc_csv_fail(c, err, errlen,
                           "field too long (field %zu, more than %d bytes)",
                           i + 1, MC_CSV_FIELD_MAX);
    }

    /* room for this byte and still the field's NUL */
    if (c->used + 2 > MC_CSV_RECORD_MAX) {
        return mc_csv_fail(c, err, errlen,
                           "record too long (more than %d bytes)",
                           MC_CSV_RECORD_MAX);
    }

    c->rec[c->used++] = (char) ch;
    c->length[i]++;

    return 0;
}


static void
mc_csv_field_end(mc_csv_t *c)
{
    /* field_begin/append left room for it */
    c->rec[c->used++] = '\0';
}


/* ch followed a field and is neither a separator nor a line end */
static int
mc_csv_end_error(mc_csv_t *c, int ch, char *err, size_t errlen)
{
    if (ch == MC_CSV_EOF) {
        return mc_csv_fail(c, err, errlen, "truncated record (no line end)");
    }

    if (ch == MC_CSV_ERROR) {
        return mc_csv_fail(c, err, errlen, "read error: %s",
                           strerror(c->read_errno));
    }

    return mc_csv_fail(c, err, errlen, "CR without LF");
}


int
mc_csv_next(mc_csv_t *c, char *err, size_t errlen)
{
    int  ch;

    c->nfields = 0;
    c->used = 0;

    /* blank lines before the record */
    for ( ;; ) {
        c->record_line = c->line;
        ch = mc_csv_getc(c);

        if (ch == MC_CSV_EOF) {
            return 0;
        }

        if (ch == MC_CSV_ERROR) {
            return mc_csv_end_error(c, ch, err, errlen);
        }

        if (ch == '\r') {
            ch = mc_csv_getc(c);
            if (ch != '\n') {
                return mc_csv_end_error(c, ch, err, errlen);
            }
        }

        if (ch != '\n') {
            break;
        }

        c->line++;
    }

    if (mc_csv_field_begin(c, err, errlen) != 0) {
        return -1;
    }

    /* here ch is the first byte of a field */
    for ( ;; ) {

        if (ch == '"') {
            for ( ;; ) {
                ch = mc_csv_getc(c);

                if (ch == '"') {
                    ch = mc_csv_getc(c);
                    if (ch != '"') {
                        break;              /* the closing quote */
                    }

                } else if (ch == MC_CSV_EOF) {
                    return mc_csv_fail(c, err, errlen,
                                       "truncated record (open quote)");

                } else if (ch == MC_CSV_ERROR) {
                    return mc_csv_end_error(c, ch, err, errlen);

                } else if (ch == '\n') {
                    c->line++;
                }

                if (mc_csv_append(c, ch, err, errlen) != 0) {
                    return -1;
                }
            }

            /* a"b"c is not one field: refuse to guess what was meant */
            if (ch >= 0 && ch != ',' && ch != '\r' && ch != '\n') {
                return mc_csv_fail(c, err, errlen,
                                   "text after a closing quote in field %zu",
                                   c->nfields);
            }

        } else {
            while (ch >= 0 && ch != ',' && ch != '\r' && ch != '\n') {
                if (ch == '"') {
                    return mc_csv_fail(c, err, errlen,
                                       "quote inside unquoted field %zu",
                                       c->nfields);
                }

                if (mc_csv_append(c, ch, err, errlen) != 0) {
                    return -1;
                }

                ch = mc_csv_getc(c);
            }
        }

        mc_csv_field_end(c);

        if (ch == ',') {
            if (mc_csv_field_begin(c, err, errlen) != 0) {
                return -1;
            }
            ch = mc_csv_getc(c);
            continue;
        }

        if (ch == '\r') {
            ch = mc_csv_getc(c);
        }

        if (ch != '\n') {
            return mc_csv_end_error(c, ch, err, errlen);
        }

        c->line++;
        return 1;
    }
}
