/*
 * Copyright (C) mt5-credit
 *
 * The provider's REST API over libcurl.  The API key is read from a file,
 * kept in this struct only, wiped on close, and never logged; it travels
 * only over TLS, except to a test stand-in on this very machine.
 */


#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mc_clock.h"
#include "mc_log.h"
#include "mc_provider_api.h"


static int mc_papi_url_ok(const mc_papi_t *api, const char *url_key);
static int mc_papi_key(mc_papi_t *api, const char *keyfile_key,
    const char *keyfile);
static int mc_papi_post_body(mc_papi_t *api, const char *path,
    const char *body, const char *type, const char *idempotency_key,
    mc_papi_answer_t *a);
static int mc_papi_perform(mc_papi_t *api, const char *path,
    struct curl_slist *headers, mc_papi_answer_t *a);
static size_t mc_papi_write(char *p, size_t size, size_t n, void *arg);
static void mc_papi_observe(mc_papi_t *api, long status, int64_t ms);


int
mc_papi_open(mc_papi_t *api, const mc_config_t *cfg, const char *who,
    int timeout)
{
    return mc_papi_open_at(api, cfg, "provider_api_url", cfg->provider_api_url,
                           "provider_api_key_file",
                           cfg->provider_api_key_file, who, timeout);
}


int
mc_papi_open_at(mc_papi_t *api, const mc_config_t *cfg, const char *url_key,
    const char *url, const char *keyfile_key, const char *keyfile,
    const char *who, int timeout)
{
    memset(api, 0, sizeof(*api));
    api->cfg = cfg;
    api->who = who;
    api->url = url;
    api->timeout = timeout;

    if (mc_papi_url_ok(api, url_key) != 0
        || mc_papi_key(api, keyfile_key, keyfile) != 0)
    {
        return -1;
    }

    api->curl = curl_easy_init();
    if (api->curl == NULL) {
        fprintf(stderr, "mt5credit: %s: curl: out of memory\n", who);
        mc_papi_close(api);
        return -1;
    }

    return 0;
}


void
mc_papi_close(mc_papi_t *api)
{
    explicit_bzero(api->key, sizeof(api->key));
    explicit_bzero(api->auth, sizeof(api->auth));

    if (api->curl != NULL) {
        curl_easy_cleanup(api->curl);
        api->curl = NULL;
    }
}


/*
 * The API key travels in every request: HTTPS only, except to this very
 * machine (a local test stand-in), and that is said in the log.
 */
static int
mc_papi_url_ok(const mc_papi_t *api, const char *url_key)
{
    const char  *u = api->url;

    if (strncmp(u, "https://", 8) == 0) {
        return 0;
    }

    if (strncmp(u, "http://127.0.0.1:", 17) == 0
        || strncmp(u, "http://localhost:", 17) == 0)
    {
        mc_log(MC_LOG_WARN, "%s: %s is plain HTTP on this machine: for "
               "tests only", api->who, u);
        return 0;
    }

    fprintf(stderr, "mt5credit: %s: %s \"%s\" must be https:// (plain "
            "HTTP only to 127.0.0.1 or localhost)\n", api->cfg->path,
            url_key, u);
    return -1;
}


/* the API key, from its file; never on a command line, never logged */
static int
mc_papi_key(mc_papi_t *api, const char *keyfile_key, const char *keyfile)
{
    FILE    *f;
    size_t   n;

    if (keyfile[0] == '\0') {
        fprintf(stderr, "mt5credit: %s: \"%s\" is required by %s\n",
                api->cfg->path, keyfile_key, api->who);
        return -1;
    }

    f = fopen(keyfile, "r");
    if (f == NULL) {
        fprintf(stderr, "mt5credit: %s: %s\n", keyfile, strerror(errno));
        return -1;
    }

    n = fread(api->key, 1, sizeof(api->key) - 1, f);
    fclose(f);
    api->key[n] = '\0';

    while (n > 0 && (api->key[n - 1] == '\n' || api->key[n - 1] == '\r'
                     || api->key[n - 1] == ' '))
    {
        api->key[--n] = '\0';
    }

    if (n == 0 || strpbrk(api->key, " \t\r\n") != NULL) {
        fprintf(stderr, "mt5credit: %s: not one API key\n", keyfile);
        return -1;
    }

    snprintf(api->auth, sizeof(api->auth), "Authorization: Bearer %s",
             api->key);
    return 0;
}


int
mc_papi_get(mc_papi_t *api, const char *path, mc_papi_answer_t *a)
{
    struct curl_slist  *headers;

    headers = curl_slist_append(NULL, api->auth);

    curl_easy_reset(api->curl);
    curl_easy_setopt(api->curl, CURLOPT_HTTPGET, 1L);

    return mc_papi_perform(api, path, headers, a);
}


int
mc_papi_post(mc_papi_t *api, const char *path, const char *form,
    const char *idempotency_key, mc_papi_answer_t *a)
{
    return mc_papi_post_body(api, path, form,
                             "application/x-www-form-urlencoded",
                             idempotency_key, a);
}


int
mc_papi_post_json(mc_papi_t *api, const char *path, const char *json,
    const char *idempotency_key, mc_papi_answer_t *a)
{
    return mc_papi_post_body(api, path, json, "application/json",
                             idempotency_key, a);
}


static int
mc_papi_post_body(mc_papi_t *api, const char *path, const char *body,
    const char *type, const char *idempotency_key, mc_papi_answer_t *a)
{
    char                h[300];
    struct curl_slist  *headers;

    headers = curl_slist_append(NULL, api->auth);
    snprintf(h, sizeof(h), "Content-Type: %s", type);
    headers = curl_slist_append(headers, h);

    if (idempotency_key != NULL) {
        snprintf(h, sizeof(h), "Idempotency-Key: %s", idempotency_key);
        headers = curl_slist_append(headers, h);
    }

    curl_easy_reset(api->curl);
    curl_easy_setopt(api->curl, CURLOPT_POST, 1L);
    curl_easy_setopt(api->curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(api->curl, CURLOPT_POSTFIELDSIZE, (long) strlen(body));

    return mc_papi_perform(api, path, headers, a);
}


static int
mc_papi_perform(mc_papi_t *api, const char *path, struct curl_slist *headers,
    mc_papi_answer_t *a)
{
    char     url[1024];
    int64_t  t0;

    memset(a, 0, sizeof(*a));
    snprintf(url, sizeof(url), "%s%s", api->url, path);

    if (api->extra[0] != '\0') {
        headers = curl_slist_append(headers, api->extra);
        api->extra[0] = '\0';
    }

    curl_easy_setopt(api->curl, CURLOPT_URL, url);
    curl_easy_setopt(api->curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(api->curl, CURLOPT_TIMEOUT, api->timeout);
    curl_easy_setopt(api->curl, CURLOPT_CONNECTTIMEOUT, api->timeout);
    curl_easy_setopt(api->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(api->curl, CURLOPT_PROTOCOLS_STR, "https,http");
    curl_easy_setopt(api->curl, CURLOPT_WRITEFUNCTION, mc_papi_write);
    curl_easy_setopt(api->curl, CURLOPT_WRITEDATA, a);

    t0 = mc_now_ms();
    a->rc = curl_easy_perform(api->curl);
    curl_slist_free_all(headers);

    /* refused or unresolvable: the request never left this machine */
    a->sent = a->rc != CURLE_COULDNT_CONNECT
              && a->rc != CURLE_COULDNT_RESOLVE_HOST
              && a->rc != CURLE_COULDNT_RESOLVE_PROXY;

    if (a->rc != CURLE_OK && !a->too_big) {
        mc_papi_observe(api, 0, mc_now_ms() - t0);
        return -1;
    }

    curl_easy_getinfo(api->curl, CURLINFO_RESPONSE_CODE, &a->status);
    mc_papi_observe(api, a->status, mc_now_ms() - t0);
    return 0;
}


static void
mc_papi_observe(mc_papi_t *api, long status, int64_t ms)
{
    mc_papi_stats_t  *st = &api->stats;

    st->by_class[status >= 200 && status < 600 ? status / 100 : 0]++;
    mc_histogram_observe(&st->time, ms);
}


void
mc_papi_metrics(mc_exposition_t *out, const char *program,
    const mc_papi_t *const *apis, const char *const *names, int n)
{
    int     i, k;
    char    labels[128];
    FILE   *f;

    static const char  *classes[] = { "none", "", "2xx", "3xx", "4xx",
                                      "5xx" };

    if (!mc_exposition_wanted(out)) {
        return;
    }

    f = mc_exposition_begin(out);
    if (f == NULL) {
        return;
    }

    fprintf(f, "# HELP mt5credit_provider_requests_total Requests to the "
            "providers' APIs, by status class (none: no answer).\n"
            "# TYPE mt5credit_provider_requests_total counter\n");
    for (i = 0; i < n; i++) {
        if (apis[i] == NULL) {
            continue;
        }
        for (k = 0; k < 6; k++) {
            if (k == 1) {
                continue;
            }
            fprintf(f, "mt5credit_provider_requests_total{program=\"%s\","
                    "provider=\"%s\",code=\"%s\"} %llu\n", program,
                    names[i], classes[k],
                    (unsigned long long) apis[i]->stats.by_class[k]);
        }
    }

    fprintf(f, "# HELP mt5credit_provider_request_duration_seconds Requests "
            "to the providers' APIs.\n"
            "# TYPE mt5credit_provider_request_duration_seconds "
            "histogram\n");
    for (i = 0; i < n; i++) {
        if (apis[i] == NULL) {
            continue;
        }
        snprintf(labels, sizeof(labels), "program=\"%s\",provider=\"%s\"",
                 program, names[i]);
        mc_histogram_print(f, "mt5credit_provider_request_duration_seconds",
                           labels, &apis[i]->stats.time);
    }

    fprintf(f, "# HELP mt5credit_program_last_round_timestamp_seconds When "
            "the program's last round ended.\n"
            "# TYPE mt5credit_program_last_round_timestamp_seconds gauge\n"
            "mt5credit_program_last_round_timestamp_seconds{program=\"%s\"} "
            "%lld\n", program, (long long) time(NULL));

    mc_exposition_end(out);
}




void
mc_papi_answer_free(mc_papi_answer_t *a)
{
    free(a->data);
    a->data = NULL;
    a->len = 0;
}


static size_t
mc_papi_write(char *p, size_t size, size_t n, void *arg)
{
    char              *d;
    mc_papi_answer_t  *a = arg;

    n *= size;

    if (a->len + n > MC_PAPI_BODY_MAX) {
        a->too_big = 1;
        return 0;
    }

    d = realloc(a->data, a->len + n + 1);
    if (d == NULL) {
        return 0;
    }

    memcpy(d + a->len, p, n);
    a->data = d;
    a->len += n;
    a->data[a->len] = '\0';
    return n;
}
