/*
 * Copyright (C) mt5-credit
 *
 * libFuzzer target: the settlement and control-totals readers
 * (batch/recon/mc_settle.c, batch/recon/mc_csv.c), every format.  Input: one byte
 * choosing the format and the currency's minor digits, then the file.
 *
 * Beyond "no crash": every row read is one of money (net = gross - fee,
 * a known category, a non-empty row id), and an error names a line.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc_settle.h"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int                  rc, digits, kind, rows;
    char                 err[256];
    FILE                *f;
    mc_settle_row_t      row;
    mc_settle_reader_t  *r;
    mc_settle_control_t  c;

    if (size < 1 || size > 1 << 20) {
        return 0;
    }

    kind = data[0] % 3;
    digits = (data[0] >> 2) % 4;    /* 0, 1, 2, 3 minor digits */

    f = fmemopen((void *) (data + 1), size - 1, "r");
    if (f == NULL) {
        return 0;
    }

    err[0] = '\0';

    if (kind == 2) {
        r = mc_settle_control_open(f, "USD", digits, err, sizeof(err));
    } else {
        r = mc_settle_open(f, kind == 0 ? MC_SETTLE_STRIPE : MC_SETTLE_GENERIC,
                           "USD", digits, err, sizeof(err));
    }

    if (r == NULL) {
        if (err[0] == '\0') {
            abort();                /* refused without saying why */
        }
        fclose(f);
        return 0;
    }

    for (rows = 0; rows < 100000; rows++) {
        if (kind == 2) {
            rc = mc_settle_control_next(r, &c, err, sizeof(err));
        } else {
            rc = mc_settle_next(r, &row, err, sizeof(err));
        }

        if (rc <= 0) {
            if (rc < 0 && strncmp(err, "line ", 5) != 0) {
                abort();            /* an error that names no line */
            }
            break;
        }

        if (kind != 2
            && (row.net_minor != row.gross_minor - row.fee_minor
                || row.row_id[0] == '\0'
                || strcmp(mc_settle_category_name(row.category), "unknown") == 0))
        {
            abort();
        }
    }

    mc_settle_close(r);
    fclose(f);
    return 0;
}
