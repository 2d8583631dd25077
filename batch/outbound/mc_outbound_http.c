/*
 * Copyright (C) mt5-credit
 */


#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "mc_outbound_http.h"


#define MC_OUTBOUND_ANSWER_KEPT  200     /* bytes of an answer, for err */
#define MC_OUTBOUND_ANSWER_MAX   65536   /* read at most, then cut off */


typedef struct {
    char    kept[MC_OUTBOUND_ANSWER_KEPT + 1];
    size_t  len;
    size_t  total;
} mc_outbound_answer_t;


static size_t mc_outbound_http_write(char *p, size_t size, size_t n,
    void *arg);


int
mc_outbound_http_open(mc_outbound_http_t *h, const mc_endpoint_config_t *ep,
    int timeout)
{
    h->ep = ep;
    h->timeout = timeout;
    h->curl = curl_easy_init();

    return h->curl != NULL ? 0 : -1;
}


void
mc_outbound_http_close(mc_outbound_http_t *h)
{
    if (h->curl != NULL) {
        curl_easy_cleanup(h->curl);
        h->curl = NULL;
    }
}


int
mc_outbound_http_post(mc_outbound_http_t *h, const char *id,
    int64_t timestamp, const char *signature, const char *body,
    long *status, char *err, size_t errlen)
{
    char                   line[512];
    CURL                  *c = h->curl;
    CURLcode               rc;
    struct curl_slist     *headers;
    mc_outbound_answer_t   a;

    *status = 0;
    err[0] = '\0';
    memset(&a, 0, sizeof(a));

    headers = curl_slist_append(NULL, "Content-Type: application/json");
    snprintf(line, sizeof(line), "webhook-id: %s", id);
    headers = curl_slist_append(headers, line);
    snprintf(line, sizeof(line), "webhook-timestamp: %" PRId64, timestamp);
    headers = curl_slist_append(headers, line);
    snprintf(line, sizeof(line), "webhook-signature: %s", signature);
    headers = curl_slist_append(headers, line);
    /* no "Expect: 100-continue" round trip before a larger body */
    headers = curl_slist_append(headers, "Expect:");

    if (headers == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    curl_easy_reset(c);

    /* what keeps the bytes to the configured receiver, verified, bounded:
       an option this libcurl refuses is a delivery not made */
    if (curl_easy_setopt(c, CURLOPT_URL, h->ep->url) != CURLE_OK
        || curl_easy_setopt(c, CURLOPT_TIMEOUT, h->timeout) != CURLE_OK
        || curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, h->timeout)
           != CURLE_OK
        || curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK
        || curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L) != CURLE_OK
        || curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L) != CURLE_OK
        /* the configuration allows plain HTTP only to this machine */
        || curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR,
                            strncmp(h->ep->url, "https://", 8) == 0
                            ? "https" : "http") != CURLE_OK
        || (h->ep->ca_file[0] != '\0'
            && curl_easy_setopt(c, CURLOPT_CAINFO, h->ep->ca_file)
               != CURLE_OK))
    {
        curl_slist_free_all(headers);
        snprintf(err, errlen, "libcurl refused an option the delivery "
                 "needs: not sent");
        return -1;
    }

    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long) strlen(body));
    curl_easy_setopt(c, CURLOPT_USERAGENT, "mt5credit-outbound");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, mc_outbound_http_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &a);

    rc = curl_easy_perform(c);
    curl_slist_free_all(headers);

    if (rc != CURLE_OK && rc != CURLE_WRITE_ERROR) {
        snprintf(err, errlen, "%s", curl_easy_strerror(rc));
        return -1;
    }

    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);

    if (*status >= 200 && *status < 300) {
        return 0;
    }

    if (*status >= 300 && *status < 400) {
        snprintf(err, errlen, "HTTP %ld: a redirect, not followed", *status);

    } else {
        snprintf(err, errlen, "HTTP %ld%s%.*s", *status, a.len ? ": " : "",
                 (int) a.len, a.kept);
    }

    return -1;
}


/* the start of the answer is kept for the record; the rest is dropped,
   and a receiver that answers without end is cut off */
static size_t
mc_outbound_http_write(char *p, size_t size, size_t n, void *arg)
{
    size_t                 k;
    mc_outbound_answer_t  *a = arg;

    n *= size;
    a->total += n;

    if (a->total > MC_OUTBOUND_ANSWER_MAX) {
        return 0;
    }

    k = MC_OUTBOUND_ANSWER_KEPT - a->len;
    if (k > n) {
        k = n;
    }

    /* printable only: it goes into the log and the attempt's record */
    while (k-- > 0) {
        a->kept[a->len++] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
        p++;
    }
    a->kept[a->len] = '\0';

    return n;
}
