/*
 * Copyright (C) mt5-credit
 *
 * A streaming RFC 4180 record reader: one record in memory at a time,
 * whatever the size of the file.
 *
 * Fields may be quoted; inside quotes "" is a quote and commas, CR and LF
 * are data.  Lines end in LF or CRLF.  A UTF-8 BOM at the start of the
 * file is skipped.  Blank lines are skipped.  Refused, with "line N: ..."
 * naming the line the record starts on: a record without its line end
 * (a file cut short), EOF inside quotes, a quote inside an unquoted
 * field, text after a closing quote, a CR without LF outside quotes, a
 * NUL byte, a field over MC_CSV_FIELD_MAX bytes.  Nothing is trimmed.
 *
 * Internal to batch/: mc_settle.c and the tests include it.
 */


#ifndef MC_CSV_H
#define MC_CSV_H


#include <stddef.h>
#include <stdio.h>


#define MC_CSV_FIELD_MAX    4096          /* bytes of one field */
#define MC_CSV_FIELDS_MAX   1024          /* fields of one record */
#define MC_CSV_RECORD_MAX   (256 * 1024)  /* bytes of one record */


typedef struct mc_csv_s  mc_csv_t;


/* reads f from where it is; the caller closes f.  NULL: out of memory */
mc_csv_t *mc_csv_open(FILE *f);

/*
 * The next record: 1, 0 at the end of a complete file, -1 with
 * "line N: ..." in err.
 */
int mc_csv_next(mc_csv_t *c, char *err, size_t errlen);

/* the record's fields, NUL-terminated (a field never holds a NUL) */
size_t mc_csv_fields(const mc_csv_t *c);
const char *mc_csv_field(const mc_csv_t *c, size_t i, size_t *len);

/* the physical line the last record started on, from 1 */
long mc_csv_line(const mc_csv_t *c);

void mc_csv_close(mc_csv_t *c);


#endif /* MC_CSV_H */
