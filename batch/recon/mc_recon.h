/*
 * Copyright (C) mt5-credit
 *
 * `mt5credit reconcile`: one provider, one business day, one settlement
 * currency; the provider's settlement file, our credits and MT5's balance
 * deals matched both ways (sql/011_reconciliation.sql), every difference
 * a case, and a CSV and an HTML report.  It moves no money.
 *
 * The run is one database transaction.  Exit status:
 *   0  reconciled, or only credits still in flight at the cut-off
 *   1  breaks: differences found, cases opened
 *   2  bad input or usage (the line named), nothing written
 *   3  incomplete: a source could not be shown complete; the run is
 *      recorded with the reason and nothing else
 *   4  the database or something else failed, nothing written
 */

#ifndef MC_RECON_H
#define MC_RECON_H


#include <signal.h>

#include "mc_config.h"
#include "mc_settle.h"


#define MC_RECON_OK          0
#define MC_RECON_BREAKS      1
#define MC_RECON_BAD_INPUT   2
#define MC_RECON_INCOMPLETE  3
#define MC_RECON_FAILED      4


typedef struct {
    const char          *provider;     /* "stripe" */
    const char          *day;          /* "2026-11-28" */
    const char          *time_zone;    /* "Europe/London" */
    const char          *currency;     /* "USD" */
    mc_settle_format_e   format;
    const char          *format_name;
    const char          *settlement;   /* file */
    const char          *control;      /* file or NULL */
    const char          *out_dir;
    int                  deal_grace;   /* seconds */
    int                  window;       /* matching window, days */
    int                  settlement_grace; /* hours a row waits, 067 */
} mc_recon_opts_t;


int mc_recon_run(mc_config_t *cfg, const mc_recon_opts_t *o,
    volatile sig_atomic_t *stop);


#endif /* MC_RECON_H */
