/*
 * Copyright (C) mt5-credit
 *
 * Provider settlement files, read one row at a time (a file of a million
 * rows is never held in memory) and normalized for reconciliation.
 *
 * Formats, parsed by header name, never by position (columns get added
 * and reordered; extra columns are ignored, a missing required one is an
 * error naming it):
 *   MC_SETTLE_STRIPE   Stripe's itemized balance-change / payout
 *                      reconciliation CSV (balance_change_from_activity
 *                      .itemized.*, payout_reconciliation.itemized.*):
 *                      major-unit gross/fee/net, reporting_category,
 *                      source_id, payment_intent_id,
 *                      payment_metadata[deposit_id], created_utc or
 *                      created, automatic_payout_id.
 *   MC_SETTLE_GENERIC  our documented CSV (docs/reconciliation.md).
 *
 * Amounts are parsed exactly into minor units of the run's currency; a
 * row in another currency, an amount that is not an exact decimal with
 * at most the currency's digits, a sign that contradicts the category, a
 * record cut off (no line end, an open quote) are errors "line N: ...":
 * the caller discards everything read so far.
 */

#ifndef MC_SETTLE_H
#define MC_SETTLE_H


#include <stddef.h>
#include <stdint.h>
#include <stdio.h>


typedef enum {
    MC_SETTLE_STRIPE = 0,
    MC_SETTLE_GENERIC
} mc_settle_format_e;


/* what a row does to the money we credit; see mc_settle_category_name() */
typedef enum {
    MC_SETTLE_PAYMENT = 0,         /* money in: a deposit credit */
    MC_SETTLE_REFUND,              /* money back to the payer: a debit */
    MC_SETTLE_CHARGEBACK,          /* dispute withdrawn: a debit */
    MC_SETTLE_CHARGEBACK_REVERSAL, /* dispute won back: a credit */
    MC_SETTLE_FEE,                 /* provider fees, no MT5 movement */
    MC_SETTLE_PAYOUT,              /* money to our bank, no MT5 movement */
    MC_SETTLE_OTHER,               /* anything else the provider reports */
    MC_SETTLE_WITHDRAWAL           /* a payout to a client: an MT5 debit */
} mc_settle_category_e;


typedef struct {
    long                  line;          /* line where the record starts */
    char                  row_id[256];   /* unique within the file */
    mc_settle_category_e  category;
    /*
     * The provider's key for this movement in mt5_credit.provider_payment_id
     * form, so it joins our credits directly: the PaymentIntent for a
     * Stripe charge, re_... for a refund, <dispute>:withdrawn for a
     * dispute, <dispute>:reinstated for a reversal; generic rows like the
     * generic webhook ("refund:<id>", "chargeback:<id>", ...).  "" for
     * fees, payouts and others.
     */
    char                  provider_key[320];
    char                  payment_id[256];  /* the original payment, or "" */
    char                  deposit_ref[64];  /* our deposit reference, or "" */
    char                  currency[16];     /* upper case, the run's */
    int64_t               gross_minor;      /* signed as the provider has it */
    int64_t               fee_minor;
    int64_t               net_minor;
    /*
     * "YYYY-MM-DD HH:MM:SS" and whether it is UTC (Stripe created_utc,
     * generic rows with Z) or in the report's own time zone (Stripe
     * created): the caller's database turns it into a timestamptz.
     */
    char                  created[32];
    int                   created_utc;
    char                  payout_id[256];   /* the payout it settled in */
} mc_settle_row_t;


/* a payout's control total: the rows of payout_id add up to amount */
typedef struct {
    long                  line;
    char                  payout_id[256];
    char                  currency[16];
    int64_t               amount_minor;     /* net, signed */
    int64_t               count;            /* rows in it, -1 if not given */
} mc_settle_control_t;


typedef struct mc_settle_reader_s  mc_settle_reader_t;


/*
 * Reads the header row of `f` (a UTF-8 BOM is skipped).  `currency` is the
 * run's currency with `digits` minor digits.  Returns NULL with the
 * reason in err (e.g. "line 1: missing column \"reporting_category\"").
 */
mc_settle_reader_t *mc_settle_open(FILE *f, mc_settle_format_e format,
    const char *currency, int digits, char *err, size_t errlen);

/*
 * The next row: 1 with *row filled, 0 at the end of a complete file, -1
 * with "line N: ..." in err.  Blank lines are skipped.
 */
int mc_settle_next(mc_settle_reader_t *r, mc_settle_row_t *row, char *err,
    size_t errlen);

/* the reader for a control-totals file: payout_id, currency, amount
   (major units), optional count */
mc_settle_reader_t *mc_settle_control_open(FILE *f, const char *currency,
    int digits, char *err, size_t errlen);
int mc_settle_control_next(mc_settle_reader_t *r, mc_settle_control_t *c,
    char *err, size_t errlen);

void mc_settle_close(mc_settle_reader_t *r);

const char *mc_settle_category_name(mc_settle_category_e c);
/* "stripe" or "generic"; -1 for anything else */
int mc_settle_format_parse(const char *name, mc_settle_format_e *f);


#endif /* MC_SETTLE_H */
