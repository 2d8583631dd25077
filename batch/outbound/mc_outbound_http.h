/*
 * Copyright (C) mt5-credit
 *
 * One signed POST to a receiver of outbound events, over libcurl with
 * the care of the MT5 client: connect and whole-request timeouts, the
 * peer's certificate and name verified, HTTPS only (plain HTTP only to
 * this machine, for tests), redirects never followed (a 3xx is a
 * failure: an event is not sent to an address nobody configured).
 */

#ifndef MC_OUTBOUND_HTTP_H
#define MC_OUTBOUND_HTTP_H


#include <stdint.h>

#include <curl/curl.h>

#include "mc_config.h"


typedef struct {
    const mc_endpoint_config_t  *ep;
    CURL                        *curl;     /* kept: its connection too */
    long                         timeout;  /* s for one delivery */
} mc_outbound_http_t;


int mc_outbound_http_open(mc_outbound_http_t *h,
    const mc_endpoint_config_t *ep, int timeout);
void mc_outbound_http_close(mc_outbound_http_t *h);

/*
 * POSTs body with the three Standard Webhooks headers.  *status: the
 * HTTP status, 0 when none came; err: what went wrong, or the start of
 * a non-2xx answer's body.  0 for a 2xx answer, -1 otherwise.
 */
int mc_outbound_http_post(mc_outbound_http_t *h, const char *id,
    int64_t timestamp, const char *signature, const char *body,
    long *status, char *err, size_t errlen);


#endif /* MC_OUTBOUND_HTTP_H */
