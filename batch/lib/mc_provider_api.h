/*
 * Copyright (C) mt5-credit
 *
 * The provider's REST API (Stripe's conventions: a bearer key, JSON
 * answers, form-encoded POSTs, an Idempotency-Key header), as used by
 * `mt5credit poll-provider` and `mt5credit payout`.  One request at a
 * time, each with a timeout and never retried here: the callers decide
 * what an answer, or no answer, means.
 */

#ifndef MC_PROVIDER_API_H
#define MC_PROVIDER_API_H


#include <stdint.h>

#include <curl/curl.h>

#include "mc_config.h"
#include "mc_exposition.h"
#include "mc_histogram.h"


#define MC_PAPI_BODY_MAX  (1024 * 1024)


/* every request's time and outcome, for the program's own metrics */
typedef struct {
    uint64_t        by_class[6];        /* 0: no answer; 2..5: 2xx..5xx */
    mc_histogram_t  time;
} mc_papi_stats_t;


typedef struct {
    const mc_config_t  *cfg;
    const char         *who;        /* the command, for messages */
    const char         *url;        /* the API's base */
    CURL               *curl;
    long                timeout;    /* s for one request */
    char                key[256];
    char                auth[300];
    char                extra[300]; /* one more header for the next
                                       request ("Stripe-Account: ..."),
                                       cleared by it; "" for none */
    mc_papi_stats_t     stats;
} mc_papi_t;


/* what came back: sent is 0 when provably nothing reached the provider */
typedef struct {
    CURLcode   rc;
    long       status;              /* HTTP status; 0: no answer */
    int        sent;
    int        too_big;
    char      *data;
    size_t     len;
} mc_papi_answer_t;


/*
 * Checks provider_api_url (https://, or plain HTTP only to this machine)
 * and reads the key from provider_api_key_file.  0, or -1 with the reason
 * on stderr.
 */
int mc_papi_open(mc_papi_t *api, const mc_config_t *cfg, const char *who,
    int timeout);

/*
 * The same for another API of the deployment: its base url and key file,
 * and the names of the keys that configure them, for the messages.
 */
int mc_papi_open_at(mc_papi_t *api, const mc_config_t *cfg,
    const char *url_key, const char *url, const char *keyfile_key,
    const char *keyfile, const char *who, int timeout);
void mc_papi_close(mc_papi_t *api);

/* path is below provider_api_url ("/v1/..."); 0 when an HTTP answer came */
int mc_papi_get(mc_papi_t *api, const char *path, mc_papi_answer_t *a);
int mc_papi_post(mc_papi_t *api, const char *path, const char *form,
    const char *idempotency_key, mc_papi_answer_t *a);
/* the same with a JSON body */
int mc_papi_post_json(mc_papi_t *api, const char *path, const char *json,
    const char *idempotency_key, mc_papi_answer_t *a);

void mc_papi_answer_free(mc_papi_answer_t *a);

/*
 * The program's provider metrics, where out says (metrics_dir, its
 * *metrics_listen): its APIs' requests by status class and their time,
 * and its last round.  apis[i] is the API of provider names[i]; a NULL
 * api is skipped.
 */
void mc_papi_metrics(mc_exposition_t *out, const char *program,
    const mc_papi_t *const *apis, const char *const *names, int n);


#endif /* MC_PROVIDER_API_H */
