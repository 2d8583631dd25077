/*
 * Copyright (C) mt5-credit
 *
 * The outputs of one reconciliation run (sql/011_reconciliation.sql): a
 * CSV file with one line per item, for machines and spreadsheets, and a
 * self-contained HTML report, for people.  Both are read from the run's
 * finished rows only (recon_run, recon_count, recon_item, currency); the
 * report writes nothing to the database.
 *
 * Amounts are integer minor units formatted with their currency's digits
 * (mc_minor_format()): exact decimal text, never floating point.  A
 * currency the database does not list fails the report rather than print
 * an amount that might be off by a power of ten.
 *
 * Items are streamed (single-row mode), so a run with a million items
 * needs the memory of one.  The HTML shows the first MC_RECON_REPORT_HTML_MAX
 * of them and says how many more are only in the CSV.
 *
 * The connection's client_encoding is set to UTF8 (the HTML says UTF-8).
 * When the connection is idle the reads run in one read-only transaction
 * of their own; inside the caller's transaction, in that one.
 */


#ifndef MC_RECON_REPORT_H
#define MC_RECON_REPORT_H


#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>


#define MC_RECON_REPORT_HTML_MAX  5000     /* item rows in the HTML */


/*
 * Writes DIR/recon-<provider>-<day>-<currency>-run<id>.csv and .html for
 * run `run_id`; the paths written go to csv_path/html_path (size
 * path_size). 0, or -1 with the reason in err.  Files are written to a
 * temp name in DIR and renamed into place, so a reader never sees half a
 * report.  A run still running has no report (-1).
 */
int mc_recon_report(PGconn *conn, int64_t run_id, const char *dir,
    char *csv_path, char *html_path, size_t path_size, char *err,
    size_t errlen);


#endif /* MC_RECON_REPORT_H */
