/*
 * Copyright (C) mt5-credit
 *
 * Alerts: what a person must look at now (an MT5 answer that cannot be
 * trusted, a deal that contradicts our records, a failed credit).  Every
 * alert is an ALERT line in the log; it also runs the configured command
 * and/or POSTs to the configured URL.  Delivery is best effort and never
 * blocks the work for long: the case rows in the database are the record.
 */


#ifndef MC_ALERT_H
#define MC_ALERT_H


#include <stdint.h>


typedef struct {
    const char  *command;      /* NULL or "" for none */
    const char  *url;          /* NULL or "" for none */
    const char  *worker;
} mc_alert_config_t;


void mc_alert(const mc_alert_config_t *cfg, const char *kind,
    int64_t credit_id, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));


#endif /* MC_ALERT_H */
