/*
 * Copyright (C) mt5-credit
 *
 * `mt5credit send-test-webhook`: signs a provider event the way the
 * provider does and POSTs it to a running edge, for a platform team
 * checking its setup (like `stripe trigger`).  The body is Stripe's
 * checkout.session.completed, or the generic payload's payment.succeeded,
 * or a file of the caller's.  The secret is read from a file, used, and
 * wiped; it is never printed.
 */


#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "mc_money.h"
#include "mc_testhook.h"


#define MC_TH_BODY_MAX  (1024 * 1024)
#define MC_TH_KEY_MAX   256


typedef struct {
    const char  *url;
    const char  *scheme;          /* stripe, standard, hmac-sha256 */
    const char  *secret_file;
    const char  *deposit;
    const char  *amount;          /* major units, exact: "500.00" */
    const char  *currency;
    const char  *body_file;
    const char  *header;          /* hmac-sha256 */
    const char  *encoding;        /* hex, base64 */
    const char  *prefix;
    const char  *id;
    int          stale;
    int          timeout;
} mc_th_opts_t;


typedef struct {
    char        *data;
    size_t       len;
} mc_th_buf_t;


static int mc_th_read(const char *path, size_t max, mc_th_buf_t *b);
static int mc_th_secret(const mc_th_opts_t *o, unsigned char *key,
    size_t *len);
static int mc_th_body(const mc_th_opts_t *o, const char *id, mc_th_buf_t *b);
static int mc_th_sign(const mc_th_opts_t *o, const unsigned char *key,
    size_t keylen, const char *id, long ts, const mc_th_buf_t *body,
    struct curl_slist **headers);
static void mc_th_hex(const unsigned char *in, size_t n, char *out);
static void mc_th_base64(const unsigned char *in, size_t n, char *out,
    size_t size);
static size_t mc_th_write(char *p, size_t size, size_t n, void *arg);
static void mc_th_usage(FILE *f);


int
mc_testhook_main(int argc, char **argv)
{
    int                 c, rc;
    long                ts, status;
    char                id[64], errbuf[CURL_ERROR_SIZE];
    size_t              keylen;
    CURL               *curl;
    CURLcode            cc;
    mc_th_buf_t         body, answer;
    mc_th_opts_t        o;
    unsigned char       key[MC_TH_KEY_MAX], rnd[8];
    struct curl_slist  *headers;

    static struct option  opts[] = {
        { "url", required_argument, NULL, 'u' },
        { "scheme", required_argument, NULL, 's' },
        { "secret-file", required_argument, NULL, 'k' },
        { "deposit", required_argument, NULL, 'd' },
        { "amount", required_argument, NULL, 'a' },
        { "currency", required_argument, NULL, 'c' },
        { "body", required_argument, NULL, 'b' },
        { "header", required_argument, NULL, 'H' },
        { "encoding", required_argument, NULL, 'e' },
        { "prefix", required_argument, NULL, 'p' },
        { "id", required_argument, NULL, 'i' },
        { "stale", no_argument, NULL, 'S' },
        { "timeout", required_argument, NULL, 't' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };

    memset(&o, 0, sizeof(o));
    o.scheme = "stripe";
    o.amount = "500.00";
    o.currency = "USD";
    o.encoding = "hex";
    o.prefix = "";
    o.timeout = 10;

    optind = 1;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'u': o.url = optarg; break;
        case 's': o.scheme = optarg; break;
        case 'k': o.secret_file = optarg; break;
        case 'd': o.deposit = optarg; break;
        case 'a': o.amount = optarg; break;
        case 'c': o.currency = optarg; break;
        case 'b': o.body_file = optarg; break;
        case 'H': o.header = optarg; break;
        case 'e': o.encoding = optarg; break;
        case 'p': o.prefix = optarg; break;
        case 'i': o.id = optarg; break;
        case 'S': o.stale = 1; break;
        case 't': o.timeout = atoi(optarg); break;
        case 'h': mc_th_usage(stdout); return 0;
        default: mc_th_usage(stderr); return 2;
        }
    }

    if (o.url == NULL || o.secret_file == NULL
        || (o.body_file == NULL && o.deposit == NULL))
    {
        fprintf(stderr, "mt5credit: send-test-webhook: --url, --secret-file "
                "and --deposit (or --body) are required\n");
        mc_th_usage(stderr);
        return 2;
    }

    if (strcmp(o.scheme, "stripe") != 0 && strcmp(o.scheme, "standard") != 0
        && strcmp(o.scheme, "hmac-sha256") != 0)
    {
        fprintf(stderr, "mt5credit: send-test-webhook: --scheme \"%s\": "
                "stripe, standard or hmac-sha256\n", o.scheme);
        return 2;
    }

    if (strcmp(o.scheme, "hmac-sha256") == 0 && o.header == NULL) {
        fprintf(stderr, "mt5credit: send-test-webhook: hmac-sha256 needs "
                "--header (the provider's signature header)\n");
        return 2;
    }

    /* an id of its own every time, so each test is a new event */
    if (RAND_bytes(rnd, sizeof(rnd)) != 1) {
        fprintf(stderr, "mt5credit: send-test-webhook: no random bytes\n");
        return 1;
    }
    snprintf(id, sizeof(id), "%s", o.id != NULL ? o.id : "");
    if (o.id == NULL) {
        strcpy(id, "evt_test_");
        mc_th_hex(rnd, sizeof(rnd), id + strlen(id));
    }

    if (mc_th_secret(&o, key, &keylen) != 0) {
        return 2;
    }

    if (mc_th_body(&o, id, &body) != 0) {
        OPENSSL_cleanse(key, sizeof(key));
        return 2;
    }

    ts = (long) time(NULL) - (o.stale ? 3600 : 0);
    headers = curl_slist_append(NULL, "Content-Type: application/json");

    rc = mc_th_sign(&o, key, keylen, id, ts, &body, &headers);
    OPENSSL_cleanse(key, sizeof(key));

    if (rc != 0) {
        curl_slist_free_all(headers);
        free(body.data);
        return 1;
    }

    curl = curl_easy_init();
    if (curl == NULL) {
        curl_slist_free_all(headers);
        free(body.data);
        return 1;
    }

    answer.data = NULL;
    answer.len = 0;
    errbuf[0] = '\0';

    curl_easy_setopt(curl, CURLOPT_URL, o.url);
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long) body.len);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, (long) o.timeout);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "https,http");
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, mc_th_write);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer);

    cc = curl_easy_perform(curl);
    status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);

    if (cc != CURLE_OK) {
        printf("event %s (%zu bytes, %s): no answer: %s\n", id, body.len,
               o.scheme, errbuf[0] ? errbuf : curl_easy_strerror(cc));
        rc = 1;

    } else {
        printf("event %s (%zu bytes, %s): HTTP %ld %.*s\n", id, body.len,
               o.scheme, status, (int) answer.len,
               answer.data != NULL ? answer.data : "");
        rc = status == 200 ? 0 : 1;
    }

    curl_easy_cleanup(curl);
    curl_slist_free_all(headers);
    free(answer.data);
    free(body.data);
    return rc;
}


static int
mc_th_read(const char *path, size_t max, mc_th_buf_t *b)
{
    FILE    *f;
    size_t   n;

    f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "mt5credit: %s: %s\n", path, strerror(errno));
        return -1;
    }

    b->data = malloc(max + 1);
    if (b->data == NULL) {
        fclose(f);
        return -1;
    }

    n = fread(b->data, 1, max + 1, f);
    fclose(f);

    if (n > max) {
        fprintf(stderr, "mt5credit: %s: over %zu bytes\n", path, max);
        free(b->data);
        return -1;
    }

    b->data[n] = '\0';
    b->len = n;
    return 0;
}


/* the first line of the file, as the edge reads it (Standard Webhooks:
   "whsec_" and base64, decoded) */
static int
mc_th_secret(const mc_th_opts_t *o, unsigned char *key, size_t *len)
{
    int          n;
    size_t       l;
    char        *s;
    mc_th_buf_t  b;

    if (mc_th_read(o->secret_file, MC_TH_KEY_MAX * 2, &b) != 0) {
        return -1;
    }

    l = strcspn(b.data, "\r\n");
    while (l > 0 && (b.data[l - 1] == ' ' || b.data[l - 1] == '\t')) {
        l--;
    }
    b.data[l] = '\0';
    s = b.data;

    if (strcmp(o->scheme, "standard") == 0) {
        if (strncmp(s, "whsec_", 6) == 0) {
            s += 6;
            l -= 6;
        }
        n = EVP_DecodeBlock(key, (unsigned char *) s, (int) l);
        if (n <= 0 || l % 4 != 0) {
            fprintf(stderr, "mt5credit: %s: not a Standard Webhooks secret "
                    "(whsec_ and base64)\n", o->secret_file);
            OPENSSL_cleanse(b.data, b.len);
            free(b.data);
            return -1;
        }
        /* EVP_DecodeBlock counts padding as zero bytes */
        *len = (size_t) n - (l >= 1 && s[l - 1] == '=')
                          - (l >= 2 && s[l - 2] == '=');

    } else {
        if (l == 0 || l > MC_TH_KEY_MAX) {
            fprintf(stderr, "mt5credit: %s: empty or too long\n",
                    o->secret_file);
            OPENSSL_cleanse(b.data, b.len);
            free(b.data);
            return -1;
        }
        memcpy(key, s, l);
        *len = l;
    }

    OPENSSL_cleanse(b.data, b.len);
    free(b.data);
    return 0;
}


static int
mc_th_body(const mc_th_opts_t *o, const char *id, mc_th_buf_t *b)
{
    int           n, i;
    char          cur[8], rnd[64];
    int64_t       minor;
    mc_decimal_t  d;

    if (o->body_file != NULL) {
        return mc_th_read(o->body_file, MC_TH_BODY_MAX, b);
    }

    /* the amount exactly, in the currency's minor units (2 digits; the
       edge only needs it to match the deposit) */
    if (mc_decimal_parse(o->amount, strlen(o->amount), &d) != 0
        || mc_decimal_to_minor(d, 2, &minor) != 0 || minor <= 0)
    {
        fprintf(stderr, "mt5credit: send-test-webhook: --amount \"%s\" is "
                "not a positive amount with at most 2 decimals\n", o->amount);
        return -1;
    }

    if (strlen(o->currency) != 3 || strspn(o->deposit,
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
            "0123456789_-") != strlen(o->deposit))
    {
        fprintf(stderr, "mt5credit: send-test-webhook: bad --currency or "
                "--deposit\n");
        return -1;
    }

    for (i = 0; i < 3; i++) {
        cur[i] = (char) (o->currency[i] | 0x20);
    }
    cur[3] = '\0';
    snprintf(rnd, sizeof(rnd), "%s", id + strlen("evt_"));

    b->data = malloc(2048);
    if (b->data == NULL) {
        return -1;
    }

    if (strcmp(o->scheme, "stripe") == 0) {
        n = snprintf(b->data, 2048,
            "{\"id\": \"%s\", \"object\": \"event\", "
            "\"type\": \"checkout.session.completed\", \"livemode\": false, "
            "\"data\": {\"object\": {\"id\": \"cs_%s\", "
            "\"object\": \"checkout.session\", \"mode\": \"payment\", "
            "\"status\": \"complete\", \"payment_status\": \"paid\", "
            "\"amount_total\": %" PRId64 ", \"currency\": \"%s\", "
            "\"client_reference_id\": \"%s\", "
            "\"metadata\": {\"deposit_id\": \"%s\"}, "
            "\"payment_intent\": \"pi_%s\"}}}",
            id, rnd, minor, cur, o->deposit, o->deposit, rnd);

    } else {
        n = snprintf(b->data, 2048,
            "{\"id\": \"%s\", \"type\": \"payment.succeeded\", "
            "\"data\": {\"payment_id\": \"pay_%s\", "
            "\"deposit_reference\": \"%s\", \"amount_minor\": %" PRId64 ", "
            "\"currency\": \"%s\"}}",
            id, rnd, o->deposit, minor, o->currency);
    }

    b->len = (size_t) n;
    return 0;
}


static int
mc_th_sign(const mc_th_opts_t *o, const unsigned char *key, size_t keylen,
    const char *id, long ts, const mc_th_buf_t *body,
    struct curl_slist **headers)
{
    char           h[512], sig[128], pre[64];
    size_t         plen;
    unsigned int   maclen;
    unsigned char  mac[EVP_MAX_MD_SIZE], *msg;

    /* what is signed: Stripe "<t>.<body>", Standard "<id>.<t>.<body>",
       HMAC the body alone */
    if (strcmp(o->scheme, "stripe") == 0) {
        plen = (size_t) snprintf(pre, sizeof(pre), "%ld.", ts);
    } else if (strcmp(o->scheme, "standard") == 0) {
        plen = (size_t) snprintf(pre, sizeof(pre), "%s.%ld.", id, ts);
    } else {
        plen = 0;
        pre[0] = '\0';
    }

    msg = malloc(plen + body->len + 1);
    if (msg == NULL) {
        return -1;
    }
    memcpy(msg, pre, plen);
    memcpy(msg + plen, body->data, body->len);

    if (HMAC(EVP_sha256(), key, (int) keylen, msg, plen + body->len, mac,
             &maclen) == NULL)
    {
        free(msg);
        return -1;
    }
    free(msg);

    if (strcmp(o->scheme, "stripe") == 0) {
        mc_th_hex(mac, maclen, sig);
        snprintf(h, sizeof(h), "Stripe-Signature: t=%ld,v1=%s", ts, sig);
        *headers = curl_slist_append(*headers, h);

    } else if (strcmp(o->scheme, "standard") == 0) {
        mc_th_base64(mac, maclen, sig, sizeof(sig));
        snprintf(h, sizeof(h), "webhook-id: %s", id);
        *headers = curl_slist_append(*headers, h);
        snprintf(h, sizeof(h), "webhook-timestamp: %ld", ts);
        *headers = curl_slist_append(*headers, h);
        snprintf(h, sizeof(h), "webhook-signature: v1,%s", sig);
        *headers = curl_slist_append(*headers, h);

    } else {
        if (strcmp(o->encoding, "base64") == 0) {
            mc_th_base64(mac, maclen, sig, sizeof(sig));
        } else {
            mc_th_hex(mac, maclen, sig);
        }
        snprintf(h, sizeof(h), "%s: %s%s", o->header, o->prefix, sig);
        *headers = curl_slist_append(*headers, h);
    }

    OPENSSL_cleanse(mac, sizeof(mac));
    return *headers != NULL ? 0 : -1;
}


static void
mc_th_hex(const unsigned char *in, size_t n, char *out)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        out[2 * i] = "0123456789abcdef"[in[i] >> 4];
        out[2 * i + 1] = "0123456789abcdef"[in[i] & 0x0f];
    }
    out[2 * n] = '\0';
}


static void
mc_th_base64(const unsigned char *in, size_t n, char *out, size_t size)
{
    if (size < 4 * ((n + 2) / 3) + 1) {
        out[0] = '\0';
        return;
    }
    EVP_EncodeBlock((unsigned char *) out, in, (int) n);
}


static size_t
mc_th_write(char *p, size_t size, size_t n, void *arg)
{
    char         *d;
    mc_th_buf_t  *b = arg;

    n *= size;
    if (b->len + n > 64 * 1024) {
        return 0;
    }

    d = realloc(b->data, b->len + n + 1);
    if (d == NULL) {
        return 0;
    }

    memcpy(d + b->len, p, n);
    b->data = d;
    b->len += n;
    b->data[b->len] = '\0';
    return n;
}


static void
mc_th_usage(FILE *f)
{
    fprintf(f,
"usage: mt5credit send-test-webhook --url URL --secret-file FILE\n"
"           (--deposit dep_... [--amount 500.00] [--currency USD]\n"
"            | --body FILE)\n"
"           [--scheme stripe|standard|hmac-sha256] [--id EVENT_ID]\n"
"           [--header NAME --encoding hex|base64 --prefix TEXT]\n"
"           [--stale] [--timeout SECONDS]\n"
"\n"
"Signs an event as the provider does and POSTs it to a running edge;\n"
"prints the HTTP status and answer; exit 0 on 200, 1 otherwise.\n"
"  stripe       checkout.session.completed, Stripe-Signature t=,v1=\n"
"  standard     the generic payment.succeeded, Standard Webhooks\n"
"               (webhook-id, -timestamp, -signature; secret whsec_...)\n"
"  hmac-sha256  the generic payment.succeeded, HMAC of the body in\n"
"               --header (--encoding, --prefix as configured)\n"
"  --stale      signs it an hour ago: the edge must refuse it\n"
"With --deposit of a real deposit this is a real payment event: use a\n"
"test deposit.  The secret is read from its file and never printed.\n");
}
