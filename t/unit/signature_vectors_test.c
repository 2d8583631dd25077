
/*
 * Copyright (C) mt5-credit
 *
 * Replays the webhook signature vectors (webhook-signatures.md section 7)
 * through ngx_mt5_credit_signature.c, plus cases of our own the vectors
 * do not cover.  Output is TAP; exit status 0 only if every test passes.
 *
 *   signature_vectors_test t/vectors
 */


#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ngx_mt5_credit_signature.h"


#define SIG_TEST_MAX_LINES  16
#define SIG_TEST_BUF        1024
#define SIG_TEST_BIG        4096


typedef struct {
    ngx_mt5_credit_sig_str_t      lines[SIG_TEST_MAX_LINES];
    ngx_mt5_credit_sig_field_t    field;
} sig_test_field_t;


typedef struct {
    const char                   *file;
    ngx_mt5_credit_sig_scheme_e   scheme;
} sig_test_file_t;


static void sig_test_out(const char *fmt, ...);
static void sig_test_result(const char *file, const char *name,
    const char *expected, const char *got);
static void sig_test_skip(const char *file, const char *name,
    const char *why);
static int sig_test_ieq(const char *a, const char *b);
static void sig_test_set(sig_test_field_t *f, const char *value);
static int sig_test_add(sig_test_field_t *f, json_t *value);
static const char *sig_test_first_line(json_t *headers, const char *name,
    size_t *len);
static int sig_test_conf(ngx_mt5_credit_sig_conf_t *conf,
    ngx_mt5_credit_sig_scheme_e scheme, json_t *c, const char **err);
static void sig_test_case(const char *file,
    ngx_mt5_credit_sig_scheme_e scheme, json_t *c);
static void sig_test_computed(const char *file,
    ngx_mt5_credit_sig_scheme_e scheme, json_t *c);
static int sig_test_file(const char *dir, const sig_test_file_t *f);
static const char *sig_test_run(ngx_mt5_credit_sig_conf_t *conf,
    const char *sig, const char *id, const char *ts, const char *body,
    size_t len, int64_t now);
static void sig_test_own(void);


static char    *sig_test_buf;
static size_t   sig_test_buf_len;
static size_t   sig_test_buf_size;
static size_t   sig_test_n;
static size_t   sig_test_failed;


static const sig_test_file_t  sig_test_files[] = {
    { "stripe.json", NGX_MT5_CREDIT_SIG_STRIPE },
    { "standard-webhooks.json", NGX_MT5_CREDIT_SIG_STANDARD },
    { "checkout-com.json", NGX_MT5_CREDIT_SIG_HMAC_SHA256 },
    { "coinbase-commerce.json", NGX_MT5_CREDIT_SIG_HMAC_SHA256 },
    { "github-hub-signature-256.json", NGX_MT5_CREDIT_SIG_HMAC_SHA256 },
    { NULL, 0 }
};


int
main(int argc, char **argv)
{
    size_t  i;

    if (argc != 2) {
        fprintf(stderr, "usage: %s <vectors directory>\n", argv[0]);
        return 2;
    }

    for (i = 0; sig_test_files[i].file != NULL; i++) {
        if (sig_test_file(argv[1], &sig_test_files[i]) != 0) {
            sig_test_result(sig_test_files[i].file, "load", "loaded",
                            "unreadable");
        }
    }

    sig_test_own();

    printf("1..%zu\n", sig_test_n);

    if (sig_test_buf != NULL) {
        fwrite(sig_test_buf, 1, sig_test_buf_len, stdout);
        free(sig_test_buf);
    }

    if (sig_test_failed) {
        printf("# failed %zu of %zu\n", sig_test_failed, sig_test_n);
    }

    return sig_test_failed ? 1 : 0;
}


/* the plan must come first: lines are buffered until the count is known */

static void
sig_test_out(const char *fmt, ...)
{
    int       n;
    char     *p;
    va_list   args;

    for ( ;; ) {
        va_start(args, fmt);
        n = vsnprintf(sig_test_buf == NULL ? NULL
                                           : sig_test_buf + sig_test_buf_len,
                      sig_test_buf_size - sig_test_buf_len, fmt, args);
        va_end(args);

        if (n < 0) {
            abort();
        }

        if ((size_t) n < sig_test_buf_size - sig_test_buf_len) {
            sig_test_buf_len += n;
            return;
        }

        p = realloc(sig_test_buf, 2 * sig_test_buf_size + n + SIG_TEST_BUF);
        if (p == NULL) {
            abort();
        }

        sig_test_buf = p;
        sig_test_buf_size = 2 * sig_test_buf_size + n + SIG_TEST_BUF;
    }
}


static void
sig_test_result(const char *file, const char *name, const char *expected,
    const char *got)
{
    sig_test_n++;

    if (strcmp(expected, got) == 0) {
        sig_test_out("ok %zu - %s: %s\n", sig_test_n, file, name);
        return;
    }

    sig_test_failed++;
    sig_test_out("not ok %zu - %s: %s (expected %s, got %s)\n",
                 sig_test_n, file, name, expected, got);
}


static void
sig_test_skip(const char *file, const char *name, const char *why)
{
    sig_test_n++;
    sig_test_out("ok %zu - %s: %s # SKIP %s\n", sig_test_n, file, name, why);
}


/* ASCII case-insensitive equality; strcasecmp is not C99 */

static int
sig_test_ieq(const char *a, const char *b)
{
    unsigned char  ca, cb;

    for ( ;; ) {
        ca = (unsigned char) *a++;
        cb = (unsigned char) *b++;

        if (ca >= 'A' && ca <= 'Z') {
            ca += 'a' - 'A';
        }

        if (cb >= 'A' && cb <= 'Z') {
            cb += 'a' - 'A';
        }

        if (ca != cb) {
            return 0;
        }

        if (ca == '\0') {
            return 1;
        }
    }
}


/* one header line from a C string; NULL = header absent */

static void
sig_test_set(sig_test_field_t *f, const char *value)
{
    f->field.lines = f->lines;
    f->field.nlines = 0;

    if (value != NULL) {
        f->lines[0].data = (const unsigned char *) value;
        f->lines[0].len = strlen(value);
        f->field.nlines = 1;
    }
}


/* appends the line(s) of a vector's header value: string or array */

static int
sig_test_add(sig_test_field_t *f, json_t *value)
{
    size_t   i;
    json_t  *v;

    f->field.lines = f->lines;

    if (json_is_string(value)) {
        if (f->field.nlines == SIG_TEST_MAX_LINES) {
            return -1;
        }

        f->lines[f->field.nlines].data =
                           (const unsigned char *) json_string_value(value);
        f->lines[f->field.nlines].len = json_string_length(value);
        f->field.nlines++;

        return 0;
    }

    if (!json_is_array(value)) {
        return -1;
    }

    json_array_foreach(value, i, v) {
        if (sig_test_add(f, v) != 0 || !json_is_string(v)) {
            return -1;
        }
    }

    return 0;
}


static const char *
sig_test_first_line(json_t *headers, const char *name, size_t *len)
{
    json_t      *v;
    const char  *key;

    json_object_foreach(headers, key, v) {

        if (!sig_test_ieq(key, name)) {
            continue;
        }

        if (json_is_array(v)) {
            v = json_array_get(v, 0);
        }

        if (!json_is_string(v)) {
            return NULL;
        }

        *len = json_string_length(v);
        return json_string_value(v);
    }

    return NULL;
}


/* the location configuration a case describes: scheme, secrets, window */

static int
sig_test_conf(ngx_mt5_credit_sig_conf_t *conf,
    ngx_mt5_credit_sig_scheme_e scheme, json_t *c, const char **err)
{
    size_t                   i;
    json_t                  *v, *s, *extra;
    const char              *text;
    ngx_mt5_credit_sig_rc_e  rc;

    memset(conf, 0, sizeof(ngx_mt5_credit_sig_conf_t));

    conf->scheme = scheme;

    v = json_object_get(c, "tolerance");

    if (v == NULL || json_is_null(v)) {
        conf->tolerance = -1;

    } else if (json_is_integer(v)) {
        conf->tolerance = json_integer_value(v);

    } else {
        *err = "bad tolerance in vector";
        return -1;
    }

    if (scheme == NGX_MT5_CREDIT_SIG_HMAC_SHA256) {
        s = json_object_get(c, "scheme");

        v = json_object_get(s, "algorithm");
        if (!json_is_string(v) || strcmp(json_string_value(v), "sha256") != 0)
        {
            *err = "unsupported algorithm";
            return -1;
        }

        v = json_object_get(s, "signed");
        if (!json_is_string(v)
            || strcmp(json_string_value(v), "raw body") != 0)
        {
            *err = "unsupported signed content";
            return -1;
        }

        v = json_object_get(s, "encoding");
        text = json_is_string(v) ? json_string_value(v) : "";

        if (strcmp(text, "hex") == 0) {
            conf->encoding = NGX_MT5_CREDIT_SIG_HEX;

        } else if (strcmp(text, "base64") == 0) {
            conf->encoding = NGX_MT5_CREDIT_SIG_BASE64;

        } else {
            *err = "unsupported encoding";
            return -1;
        }

        v = json_object_get(s, "header");
        if (!json_is_string(v)
            || json_string_length(v) >= sizeof(conf->header))
        {
            *err = "bad header name";
            return -1;
        }

        memcpy(conf->header, json_string_value(v), json_string_length(v));

        v = json_object_get(s, "prefix");
        if (v != NULL && !json_is_null(v)) {
            if (!json_is_string(v)
                || json_string_length(v) >= sizeof(conf->prefix))
            {
                *err = "bad prefix";
                return -1;
            }

            memcpy(conf->prefix, json_string_value(v), json_string_length(v));
            conf->prefix_len = json_string_length(v);
        }
    }

    v = json_object_get(c, "secret");
    if (!json_is_string(v)) {
        *err = "no secret in vector";
        return -1;
    }

    rc = ngx_mt5_credit_sig_prepare_key(scheme,
                           (const unsigned char *) json_string_value(v),
                           json_string_length(v), &conf->keys[0]);
    if (rc != NGX_MT5_CREDIT_SIG_OK) {
        *err = ngx_mt5_credit_sig_reason(rc);
        return -1;
    }

    conf->nkeys = 1;

    extra = json_object_get(c, "additional_secrets");

    json_array_foreach(extra, i, v) {

        if (!json_is_string(v)
            || conf->nkeys == NGX_MT5_CREDIT_SIG_MAX_SECRETS)
        {
            *err = "bad additional_secrets";
            return -1;
        }

        rc = ngx_mt5_credit_sig_prepare_key(scheme,
                           (const unsigned char *) json_string_value(v),
                           json_string_length(v), &conf->keys[conf->nkeys]);
        if (rc != NGX_MT5_CREDIT_SIG_OK) {
            *err = ngx_mt5_credit_sig_reason(rc);
            return -1;
        }

        conf->nkeys++;
    }

    return 0;
}


static void
sig_test_case(const char *file, ngx_mt5_credit_sig_scheme_e scheme,
    json_t *c)
{
    int                           rc_ok;
    json_t                       *v, *headers, *body;
    int64_t                       now;
    const char                   *name, *expect, *key, *err, *sig_name;
    sig_test_field_t              sig, id, ts;
    ngx_mt5_credit_sig_rc_e       rc;
    ngx_mt5_credit_sig_conf_t     conf;
    ngx_mt5_credit_sig_headers_t  h;

    name = json_string_value(json_object_get(c, "name"));
    expect = json_string_value(json_object_get(c, "expect"));
    headers = json_object_get(c, "headers");
    body = json_object_get(c, "body");
    v = json_object_get(c, "now");

    if (name == NULL) {
        name = "(unnamed)";
    }

    if (expect == NULL || !json_is_object(headers) || !json_is_string(body)
        || !json_is_integer(v))
    {
        sig_test_result(file, name, "a well-formed case", "bad vector");
        return;
    }

    now = json_integer_value(v);

    err = NULL;

    if (sig_test_conf(&conf, scheme, c, &err) != 0) {
        sig_test_result(file, name, expect, err);
        return;
    }

    memset(&sig, 0, sizeof(sig_test_field_t));
    memset(&id, 0, sizeof(sig_test_field_t));
    memset(&ts, 0, sizeof(sig_test_field_t));

    switch (scheme) {
    case NGX_MT5_CREDIT_SIG_STRIPE:
        sig_name = "Stripe-Signature";
        break;
    case NGX_MT5_CREDIT_SIG_STANDARD:
        sig_name = "webhook-signature";
        break;
    default:
        sig_name = conf.header;
    }

    /* names case-insensitive; two spellings of one name = two lines */

    rc_ok = 1;

    json_object_foreach(headers, key, v) {

        if (sig_test_ieq(key, sig_name)) {
            rc_ok &= (sig_test_add(&sig, v) == 0);

        } else if (scheme == NGX_MT5_CREDIT_SIG_STANDARD
                   && sig_test_ieq(key, "webhook-id"))
        {
            rc_ok &= (sig_test_add(&id, v) == 0);

        } else if (scheme == NGX_MT5_CREDIT_SIG_STANDARD
                   && sig_test_ieq(key, "webhook-timestamp"))
        {
            rc_ok &= (sig_test_add(&ts, v) == 0);
        }
    }

    if (!rc_ok) {
        sig_test_result(file, name, expect, "bad header value in vector");
        return;
    }

    h.signature = sig.field;
    h.id = id.field;
    h.timestamp = ts.field;

    rc = ngx_mt5_credit_sig_check(&conf, &h,
                         (const unsigned char *) json_string_value(body),
                         json_string_length(body), now);

    sig_test_result(file, name, expect, ngx_mt5_credit_sig_reason(rc));
}


/*
 * With "computed_signature", a header carrying exactly that signature for
 * the case's own timestamp/id and body must verify with "secret" alone:
 * this tests the MAC and its encoding apart from the parsing rules.
 */

static void
sig_test_computed(const char *file, ngx_mt5_credit_sig_scheme_e scheme,
    json_t *c)
{
    int                           n;
    char                          title[SIG_TEST_BUF], line[SIG_TEST_BIG];
    char                          idbuf[SIG_TEST_BUF], tsbuf[SIG_TEST_BUF];
    size_t                        len, idlen, tslen, i;
    json_t                       *computed, *headers, *body;
    const char                   *name, *err, *p, *got, *val, *t;
    ngx_mt5_credit_sig_conf_t     conf;

    computed = json_object_get(c, "computed_signature");
    if (!json_is_string(computed)) {
        return;
    }

    name = json_string_value(json_object_get(c, "name"));
    headers = json_object_get(c, "headers");
    body = json_object_get(c, "body");

    snprintf(title, sizeof(title), "%s [computed_signature]",
             name != NULL ? name : "(unnamed)");

    err = NULL;

    if (sig_test_conf(&conf, scheme, c, &err) != 0) {
        sig_test_result(file, title, "valid", err);
        return;
    }

    /* only "secret": computed_signature is defined for it */

    conf.nkeys = 1;
    conf.tolerance = -1;

    t = NULL;
    tslen = 0;
    idbuf[0] = '\0';
    tsbuf[0] = '\0';

    switch (scheme) {

    case NGX_MT5_CREDIT_SIG_STRIPE:

        /* the case's t= item, found without the code under test */

        val = sig_test_first_line(headers, "Stripe-Signature", &len);

        for (p = val, i = 0; p != NULL && i < len; i++) {
            if ((i == 0 || p[i - 1] == ',' || p[i - 1] == ' '
                 || p[i - 1] == '\t')
                && i + 2 <= len && p[i] == 't' && p[i + 1] == '=')
            {
                t = p + i + 2;
                for (tslen = 0; i + 2 + tslen < len
                                && t[tslen] >= '0' && t[tslen] <= '9';
                     tslen++)
                {
                    /* void */
                }
                break;
            }
        }

        if (t == NULL || tslen == 0 || tslen >= sizeof(tsbuf)) {
            sig_test_skip(file, title, "no t= in the case's header");
            return;
        }

        memcpy(tsbuf, t, tslen);
        tsbuf[tslen] = '\0';

        n = snprintf(line, sizeof(line), "t=%s,v1=%s", tsbuf,
                     json_string_value(computed));
        break;

    case NGX_MT5_CREDIT_SIG_STANDARD:

        val = sig_test_first_line(headers, "webhook-id", &idlen);
        t = sig_test_first_line(headers, "webhook-timestamp", &tslen);

        if (val == NULL || t == NULL
            || idlen >= sizeof(idbuf) || tslen >= sizeof(tsbuf))
        {
            sig_test_skip(file, title, "no webhook-id/timestamp in the case");
            return;
        }

        memcpy(idbuf, val, idlen);
        idbuf[idlen] = '\0';
        memcpy(tsbuf, t, tslen);
        tsbuf[tslen] = '\0';

        n = snprintf(line, sizeof(line), "v1,%s",
                     json_string_value(computed));
        break;

    default:
        n = snprintf(line, sizeof(line), "%.*s%s", (int) conf.prefix_len,
                     conf.prefix, json_string_value(computed));
    }

    if (n < 0 || (size_t) n >= sizeof(line)) {
        sig_test_result(file, title, "valid", "signature too long for test");
        return;
    }

    got = sig_test_run(&conf, line, idbuf, tsbuf, json_string_value(body),
                       json_string_length(body), 0);

    sig_test_result(file, title, "valid", got);
}


static int
sig_test_file(const char *dir, const sig_test_file_t *f)
{
    char          path[4096];
    size_t        i;
    json_t       *root, *c;
    json_error_t  error;

    snprintf(path, sizeof(path), "%s/%s", dir, f->file);

    root = json_load_file(path, 0, &error);
    if (root == NULL) {
        fprintf(stderr, "%s:%d: %s\n", path, error.line, error.text);
        return -1;
    }

    if (!json_is_array(root) || json_array_size(root) == 0) {
        json_decref(root);
        return -1;
    }

    json_array_foreach(root, i, c) {
        sig_test_case(f->file, f->scheme, c);
    }

    json_array_foreach(root, i, c) {
        sig_test_computed(f->file, f->scheme, c);
    }

    json_decref(root);

    return 0;
}


/* one request: parse, window, verify; NULL header text = absent */

static const char *
sig_test_run(ngx_mt5_credit_sig_conf_t *conf, const char *sig,
    const char *id, const char *ts, const char *body, size_t len,
    int64_t now)
{
    sig_test_field_t              s, i, t;
    ngx_mt5_credit_sig_headers_t  h;

    sig_test_set(&s, sig);
    sig_test_set(&i, id);
    sig_test_set(&t, ts);

    h.signature = s.field;
    h.id = i.field;
    h.timestamp = t.field;

    return ngx_mt5_credit_sig_reason(
               ngx_mt5_credit_sig_check(conf, &h, (const unsigned char *) body,
                                        len, now));
}


#define OWN  "own"

#define SW_SECRET  "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define SW_ID      "msg_p5jXN8AQM9LWM0D4loKWxJek"
#define SW_TS      "1614265330"
#define SW_BODY    "{\"test\": 2432232314}"
#define SW_SIG     "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
#define SW_DECOY   "Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="

/* HMAC-SHA256("whsec_test_secret", "1767225600.{}"), python hmac */
#define ST_SIG  \
    "fd847124971cb574f4bd1d7030a05e3a41dea61f342f3dbf78634e5a7aea0f3c"
#define ST_DECOY  \
    "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"


static void
sig_test_own(void)
{
    char                          big[SIG_TEST_BIG], *p;
    size_t                        k, n;
    int64_t                       skew;
    const char                   *got;
    unsigned char                 zero[1];
    ngx_mt5_credit_sig_rc_e       rc;
    ngx_mt5_credit_sig_key_t      key;
    ngx_mt5_credit_sig_conf_t     conf;
    ngx_mt5_credit_sig_parsed_t   parsed;

    static const struct {
        ngx_mt5_credit_sig_rc_e   rc;
        const char               *name;
    } reasons[] = {
        { NGX_MT5_CREDIT_SIG_OK, "valid" },
        { NGX_MT5_CREDIT_SIG_MISSING_HEADER, "missing_header" },
        { NGX_MT5_CREDIT_SIG_MALFORMED_HEADER, "malformed_header" },
        { NGX_MT5_CREDIT_SIG_BAD_SIGNATURE, "bad_signature" },
        { NGX_MT5_CREDIT_SIG_TOO_OLD, "timestamp_too_old" },
        { NGX_MT5_CREDIT_SIG_IN_FUTURE, "timestamp_in_future" },
        { NGX_MT5_CREDIT_SIG_BAD_SECRET, "bad_secret" },
        { NGX_MT5_CREDIT_SIG_ERROR, "internal_error" }
    };

    for (k = 0; k < sizeof(reasons) / sizeof(reasons[0]); k++) {
        snprintf(big, sizeof(big), "reason(%d)", (int) reasons[k].rc);
        sig_test_result(OWN, big, reasons[k].name,
                        ngx_mt5_credit_sig_reason(reasons[k].rc));
    }

    /* prepare_key */

    zero[0] = 'x';

    rc = ngx_mt5_credit_sig_prepare_key(NGX_MT5_CREDIT_SIG_STRIPE, zero, 0,
                                        &key);
    sig_test_result(OWN, "prepare_key: stripe empty secret", "bad_secret",
                    ngx_mt5_credit_sig_reason(rc));

    rc = ngx_mt5_credit_sig_prepare_key(NGX_MT5_CREDIT_SIG_HMAC_SHA256, zero,
                                        0, &key);
    sig_test_result(OWN, "prepare_key: generic empty secret", "bad_secret",
                    ngx_mt5_credit_sig_reason(rc));

    rc = ngx_mt5_credit_sig_prepare_key(NGX_MT5_CREDIT_SIG_STANDARD, zero, 0,
                                        &key);
    sig_test_result(OWN, "prepare_key: standard empty secret", "bad_secret",
                    ngx_mt5_credit_sig_reason(rc));

    {
        static const struct {
            const char  *secret;
            const char  *expect;
            size_t       len;
        } sw[] = {
            { "whsec_", "bad_secret", 0 },
            { "whsec_not*base64", "bad_secret", 0 },
            { "whsec_abc", "bad_secret", 0 },
            { "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS", "bad_secret", 0 },
            { "whsec_MfKQ9r8G KYqrTwjUPD8ILPZIo2LaLaSw", "bad_secret", 0 },
            { "whsec_aQ=a", "bad_secret", 0 },
            { "whsec_====", "bad_secret", 0 },
            { "whsec_aR==", "bad_secret", 0 },
            { "whsec_aWl=", "bad_secret", 0 },
            { "whsec_aQ==", "valid", 1 },
            { "whsec_aWk=", "valid", 2 },
            { "aWlp", "valid", 3 },
            { "whsec_whsec_aQ==", "bad_secret", 0 },
            { SW_SECRET, "valid", 24 }
        };

        for (k = 0; k < sizeof(sw) / sizeof(sw[0]); k++) {
            rc = ngx_mt5_credit_sig_prepare_key(NGX_MT5_CREDIT_SIG_STANDARD,
                                  (const unsigned char *) sw[k].secret,
                                  strlen(sw[k].secret), &key);

            got = ngx_mt5_credit_sig_reason(rc);

            if (rc == NGX_MT5_CREDIT_SIG_OK && key.len != sw[k].len) {
                got = "wrong key length";
            }

            /* the test's own names never print the secret itself */
            snprintf(big, sizeof(big), "prepare_key: standard secret #%zu",
                     k);
            sig_test_result(OWN, big, sw[k].expect, got);
        }
    }

    memset(big, 'x', sizeof(big));

    rc = ngx_mt5_credit_sig_prepare_key(NGX_MT5_CREDIT_SIG_STRIPE,
                                        (const unsigned char *) big,
                                        NGX_MT5_CREDIT_SIG_MAX_KEY, &key);
    sig_test_result(OWN, "prepare_key: stripe secret of MAX_KEY bytes",
                    "valid", ngx_mt5_credit_sig_reason(rc));

    rc = ngx_mt5_credit_sig_prepare_key(NGX_MT5_CREDIT_SIG_STRIPE,
                                        (const unsigned char *) big,
                                        NGX_MT5_CREDIT_SIG_MAX_KEY + 1, &key);
    sig_test_result(OWN, "prepare_key: stripe secret over MAX_KEY",
                    "bad_secret", ngx_mt5_credit_sig_reason(rc));

    rc = ngx_mt5_credit_sig_prepare_key(NGX_MT5_CREDIT_SIG_HMAC_SHA256,
                                        (const unsigned char *) big,
                                        NGX_MT5_CREDIT_SIG_MAX_KEY + 1, &key);
    sig_test_result(OWN, "prepare_key: generic secret over MAX_KEY",
                    "bad_secret", ngx_mt5_credit_sig_reason(rc));

    /* 256 zero bytes = 340 'A' + "AA=="; 257 = 343 'A' + "=" */

    memset(big, 'A', sizeof(big));
    memcpy(big, "whsec_", 6);
    memcpy(big + 6 + 340, "AA==", 4);

    rc = ngx_mt5_credit_sig_prepare_key(NGX_MT5_CREDIT_SIG_STANDARD,
                                        (const unsigned char *) big,
                                        6 + 344, &key);
    got = ngx_mt5_credit_sig_reason(rc);
    if (rc == NGX_MT5_CREDIT_SIG_OK && key.len != NGX_MT5_CREDIT_SIG_MAX_KEY) {
        got = "wrong key length";
    }
    sig_test_result(OWN, "prepare_key: standard key of MAX_KEY bytes",
                    "valid", got);

    memset(big + 6, 'A', 343);
    big[6 + 343] = '=';

    rc = ngx_mt5_credit_sig_prepare_key(NGX_MT5_CREDIT_SIG_STANDARD,
                                        (const unsigned char *) big,
                                        6 + 344, &key);
    sig_test_result(OWN, "prepare_key: standard key over MAX_KEY",
                    "bad_secret", ngx_mt5_credit_sig_reason(rc));

    /* the "whsec_" of a Stripe secret is key material */

    rc = ngx_mt5_credit_sig_prepare_key(NGX_MT5_CREDIT_SIG_STRIPE,
                                        (const unsigned char *) "whsec_aQ==",
                                        10, &key);
    got = ngx_mt5_credit_sig_reason(rc);
    if (rc == NGX_MT5_CREDIT_SIG_OK
        && (key.len != 10 || memcmp(key.key, "whsec_aQ==", 10) != 0))
    {
        got = "key altered";
    }
    sig_test_result(OWN, "prepare_key: stripe key is the text as is",
                    "valid", got);

    /* Standard Webhooks headers */

    memset(&conf, 0, sizeof(conf));
    conf.scheme = NGX_MT5_CREDIT_SIG_STANDARD;
    conf.tolerance = 300;
    conf.nkeys = 1;
    (void) ngx_mt5_credit_sig_prepare_key(conf.scheme,
                                         (const unsigned char *) SW_SECRET,
                                         strlen(SW_SECRET), &conf.keys[0]);

    got = sig_test_run(&conf, "v1," SW_SIG, SW_ID, SW_TS, SW_BODY,
                       strlen(SW_BODY), 1614265330);
    sig_test_result(OWN, "standard: published vector", "valid", got);

    got = sig_test_run(&conf, "v1," SW_SIG, "msg.1", SW_TS, SW_BODY,
                       strlen(SW_BODY), 1614265330);
    sig_test_result(OWN, "standard: webhook-id with '.'", "malformed_header",
                    got);

    got = sig_test_run(&conf, "v1," SW_SIG, "msg 1", SW_TS, SW_BODY,
                       strlen(SW_BODY), 1614265330);
    sig_test_result(OWN, "standard: webhook-id with a space",
                    "malformed_header", got);

    got = sig_test_run(&conf, "v1," SW_SIG, "msg_\x01", SW_TS, SW_BODY,
                       strlen(SW_BODY), 1614265330);
    sig_test_result(OWN, "standard: webhook-id with a control byte",
                    "malformed_header", got);

    got = sig_test_run(&conf, "v1," SW_SIG, "msg_\xc3\xbc", SW_TS, SW_BODY,
                       strlen(SW_BODY), 1614265330);
    sig_test_result(OWN, "standard: webhook-id with non-ASCII",
                    "malformed_header", got);

    got = sig_test_run(&conf, "v1," SW_SIG, " \t", SW_TS, SW_BODY,
                       strlen(SW_BODY), 1614265330);
    sig_test_result(OWN, "standard: webhook-id blank", "missing_header", got);

    memset(big, 'i', sizeof(big));
    big[256] = '\0';

    got = sig_test_run(&conf, "v1," SW_SIG, big, SW_TS, SW_BODY,
                       strlen(SW_BODY), 1614265330);
    sig_test_result(OWN, "standard: webhook-id of 256 bytes",
                    "malformed_header", got);

    big[255] = '\0';

    got = sig_test_run(&conf, "v1," SW_SIG, big, SW_TS, SW_BODY,
                       strlen(SW_BODY), 1614265330);
    sig_test_result(OWN, "standard: webhook-id of 255 bytes parses",
                    "bad_signature", got);

    got = sig_test_run(&conf, "v1," SW_SIG, SW_ID, "-1614265330", SW_BODY,
                       strlen(SW_BODY), 1614265330);
    sig_test_result(OWN, "standard: negative timestamp", "malformed_header",
                    got);

    got = sig_test_run(&conf, "v1," SW_SIG, SW_ID, "0", SW_BODY,
                       strlen(SW_BODY), 1614265330);
    sig_test_result(OWN, "standard: timestamp 0", "malformed_header", got);

    {
        ngx_mt5_credit_sig_str_t      lines[2];
        sig_test_field_t              f;
        ngx_mt5_credit_sig_headers_t  h;

        /* absent id and repeated signature: "missing" wins */

        lines[0].data = (const unsigned char *) "v1," SW_SIG;
        lines[0].len = strlen("v1," SW_SIG);
        lines[1] = lines[0];

        h.signature.lines = lines;
        h.signature.nlines = 2;
        h.id.lines = NULL;
        h.id.nlines = 0;
        sig_test_set(&f, SW_TS);
        h.timestamp = f.field;

        rc = ngx_mt5_credit_sig_check(&conf, &h,
                                      (const unsigned char *) SW_BODY,
                                      strlen(SW_BODY), 1614265330);
        sig_test_result(OWN, "standard: absent id + repeated signature",
                        "missing_header", ngx_mt5_credit_sig_reason(rc));

        h.id.lines = lines;
        h.id.nlines = 0;
        h.signature.nlines = 1;
        sig_test_set(&f, SW_ID);
        h.id = f.field;
        h.timestamp.lines = lines;
        h.timestamp.nlines = 2;

        rc = ngx_mt5_credit_sig_check(&conf, &h,
                                      (const unsigned char *) SW_BODY,
                                      strlen(SW_BODY), 1614265330);
        sig_test_result(OWN, "standard: repeated timestamp",
                        "malformed_header", ngx_mt5_credit_sig_reason(rc));
    }

    /* 16 v1 candidates, the last one right: valid; 17: malformed */

    for (n = 16; n <= 17; n++) {
        p = big;

        for (k = 0; k < n; k++) {
            p += sprintf(p, "%sv1,%s", k ? " " : "",
                         k == n - 1 ? SW_SIG : SW_DECOY);
        }

        got = sig_test_run(&conf, big, SW_ID, SW_TS, SW_BODY, strlen(SW_BODY),
                           1614265330);
        sig_test_result(OWN, n == 16 ? "standard: 16 candidates, last matches"
                                     : "standard: 17 candidates",
                        n == 16 ? "valid" : "malformed_header", got);
    }

    /* other versions are not candidates and do not count */

    p = big;
    for (k = 0; k < 20; k++) {
        p += sprintf(p, "v1a,%s ", SW_DECOY);
    }
    sprintf(p, "v1,%s", SW_SIG);

    got = sig_test_run(&conf, big, SW_ID, SW_TS, SW_BODY, strlen(SW_BODY),
                       1614265330);
    sig_test_result(OWN, "standard: 20 v1a entries then a good v1", "valid",
                    got);

    got = sig_test_run(&conf, "v1," SW_SIG ",extra", SW_ID, SW_TS, SW_BODY,
                       strlen(SW_BODY), 1614265330);
    sig_test_result(OWN, "standard: v1 entry with a second comma",
                    "bad_signature", got);

    got = sig_test_run(&conf, "v1,\t" SW_SIG, SW_ID, SW_TS, SW_BODY,
                       strlen(SW_BODY), 1614265330);
    sig_test_result(OWN, "standard: tab is not a list separator",
                    "bad_signature", got);

    /* a second configured key that does not match changes nothing */

    conf.nkeys = 2;
    (void) ngx_mt5_credit_sig_prepare_key(conf.scheme,
                                  (const unsigned char *) "whsec_aQ==",
                                  10, &conf.keys[1]);

    got = sig_test_run(&conf, "v1," SW_SIG, SW_ID, SW_TS, SW_BODY,
                       strlen(SW_BODY), 1614265330);
    sig_test_result(OWN, "standard: right key second of two", "valid", got);

    conf.keys[1] = conf.keys[0];
    (void) ngx_mt5_credit_sig_prepare_key(conf.scheme,
                                  (const unsigned char *) "whsec_aQ==",
                                  10, &conf.keys[0]);

    got = sig_test_run(&conf, "v1," SW_SIG, SW_ID, SW_TS, SW_BODY,
                       strlen(SW_BODY), 1614265330);
    sig_test_result(OWN, "standard: right key first of two", "valid", got);

    conf.nkeys = 0;

    got = sig_test_run(&conf, "v1," SW_SIG, SW_ID, SW_TS, SW_BODY,
                       strlen(SW_BODY), 1614265330);
    sig_test_result(OWN, "standard: no key configured", "internal_error",
                    got);

    /* Stripe */

    memset(&conf, 0, sizeof(conf));
    conf.scheme = NGX_MT5_CREDIT_SIG_STRIPE;
    conf.tolerance = 300;
    conf.nkeys = 1;
    (void) ngx_mt5_credit_sig_prepare_key(conf.scheme,
                                  (const unsigned char *) "whsec_test_secret",
                                  17, &conf.keys[0]);

    got = sig_test_run(&conf, "t=1767225600,v1=" ST_SIG, NULL, NULL, "{}", 2,
                       1767225600);
    sig_test_result(OWN, "stripe: own vector", "valid", got);

    got = sig_test_run(&conf, "t=1767225600,v1=" ST_SIG, NULL, NULL, "{} ", 2,
                       1767225600);
    sig_test_result(OWN, "stripe: body length is honoured", "valid", got);

    got = sig_test_run(&conf, "t=1767225600,v1=" ST_SIG ",", NULL, NULL, "{}",
                       2, 1767225600);
    sig_test_result(OWN, "stripe: trailing comma", "malformed_header", got);

    got = sig_test_run(&conf, "t=1767225600,v1=" ST_SIG "=", NULL, NULL, "{}",
                       2, 1767225600);
    sig_test_result(OWN, "stripe: item with two '='", "malformed_header",
                    got);

    got = sig_test_run(&conf, "t=1767225600,=" ST_SIG, NULL, NULL, "{}", 2,
                       1767225600);
    sig_test_result(OWN, "stripe: item with an empty key is ignored",
                    "bad_signature", got);

    got = sig_test_run(&conf, "t=1767225600,V1=" ST_SIG, NULL, NULL, "{}", 2,
                       1767225600);
    sig_test_result(OWN, "stripe: key V1 is not v1", "bad_signature", got);

    got = sig_test_run(&conf, "t=+1767225600,v1=" ST_SIG, NULL, NULL, "{}", 2,
                       1767225600);
    sig_test_result(OWN, "stripe: t with a plus sign", "malformed_header",
                    got);

    got = sig_test_run(&conf, "t=100000000000000000,v1=" ST_DECOY, NULL, NULL,
                       "{}", 2, 1767225600);
    sig_test_result(OWN, "stripe: t of 18 digits parses", "timestamp_in_future",
                    got);

    got = sig_test_run(&conf, "t=1000000000000000000,v1=" ST_DECOY, NULL,
                       NULL, "{}", 2, 1767225600);
    sig_test_result(OWN, "stripe: t of 19 digits", "malformed_header", got);

    got = sig_test_run(&conf, "\t \t", NULL, NULL, "{}", 2, 1767225600);
    sig_test_result(OWN, "stripe: blank header", "missing_header", got);

    for (n = 16; n <= 17; n++) {
        p = big;
        p += sprintf(p, "t=1767225600");

        for (k = 0; k < n; k++) {
            p += sprintf(p, ",v1=%s", k == n - 1 ? ST_SIG : ST_DECOY);
        }

        got = sig_test_run(&conf, big, NULL, NULL, "{}", 2, 1767225600);
        sig_test_result(OWN, n == 16 ? "stripe: 16 candidates, last matches"
                                     : "stripe: 17 candidates",
                        n == 16 ? "valid" : "malformed_header", got);
    }

    /* 17 v0 items are not candidates */

    p = big;
    p += sprintf(p, "t=1767225600,v1=%s", ST_SIG);
    for (k = 0; k < 17; k++) {
        p += sprintf(p, ",v0=%s", ST_DECOY);
    }

    got = sig_test_run(&conf, big, NULL, NULL, "{}", 2, 1767225600);
    sig_test_result(OWN, "stripe: 17 v0 items are ignored", "valid", got);

    /* check_time at the edges of int64 (UBSan watches the arithmetic) */

    {
        sig_test_field_t              f;
        ngx_mt5_credit_sig_headers_t  h;

        sig_test_set(&f, "t=999999999999999999,v1=" ST_DECOY);
        h.signature = f.field;

        rc = ngx_mt5_credit_sig_parse(&conf, &h, &parsed);
        sig_test_result(OWN, "check_time: parse max t", "valid",
                        ngx_mt5_credit_sig_reason(rc));

        rc = ngx_mt5_credit_sig_check_time(&conf, &parsed, INT64_MIN, &skew);
        got = ngx_mt5_credit_sig_reason(rc);
        if (skew != INT64_MIN) {
            got = "skew not saturated";
        }
        sig_test_result(OWN, "check_time: now = INT64_MIN",
                        "timestamp_in_future", got);

        sig_test_set(&f, "t=1,v1=" ST_DECOY);
        h.signature = f.field;
        (void) ngx_mt5_credit_sig_parse(&conf, &h, &parsed);

        rc = ngx_mt5_credit_sig_check_time(&conf, &parsed, INT64_MAX, &skew);
        got = ngx_mt5_credit_sig_reason(rc);
        if (skew != INT64_MAX - 1) {
            got = "wrong skew";
        }
        sig_test_result(OWN, "check_time: now = INT64_MAX", "timestamp_too_old",
                        got);

        conf.tolerance = 0;

        rc = ngx_mt5_credit_sig_check_time(&conf, &parsed, 1, &skew);
        sig_test_result(OWN, "check_time: tolerance 0, same second", "valid",
                        ngx_mt5_credit_sig_reason(rc));

        rc = ngx_mt5_credit_sig_check_time(&conf, &parsed, 2, NULL);
        sig_test_result(OWN, "check_time: tolerance 0, one second old",
                        "timestamp_too_old", ngx_mt5_credit_sig_reason(rc));

        rc = ngx_mt5_credit_sig_check_time(&conf, &parsed, 0, NULL);
        sig_test_result(OWN, "check_time: tolerance 0, one second ahead",
                        "timestamp_in_future", ngx_mt5_credit_sig_reason(rc));

        conf.tolerance = -1;

        rc = ngx_mt5_credit_sig_check_time(&conf, &parsed, INT64_MAX, NULL);
        sig_test_result(OWN, "check_time: tolerance < 0 disables the window",
                        "valid", ngx_mt5_credit_sig_reason(rc));

        conf.tolerance = 300;
    }

    /* generic HMAC_SHA256 */

    memset(&conf, 0, sizeof(conf));
    conf.scheme = NGX_MT5_CREDIT_SIG_HMAC_SHA256;
    conf.encoding = NGX_MT5_CREDIT_SIG_BASE64;
    conf.tolerance = -1;
    conf.nkeys = 1;
    memcpy(conf.header, "X-Signature", sizeof("X-Signature"));
    (void) ngx_mt5_credit_sig_prepare_key(conf.scheme,
                         (const unsigned char *) "It's a Secret to Everybody",
                         26, &conf.keys[0]);

    got = sig_test_run(&conf, "dXEH6g6yUJ/CESIczphLijdXC211hsIsRvQ3nIsEPhc=",
                       NULL, NULL, "Hello, World!", 13, 0);
    sig_test_result(OWN, "generic: base64 encoding", "valid", got);

    got = sig_test_run(&conf, "dXEH6g6yUJ/CESIczphLijdXC211hsIsRvQ3nIsEPhc",
                       NULL, NULL, "Hello, World!", 13, 0);
    sig_test_result(OWN, "generic: base64 without padding", "bad_signature",
                    got);

    got = sig_test_run(&conf,
           "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
           NULL, NULL, "Hello, World!", 13, 0);
    sig_test_result(OWN, "generic: hex when base64 is configured",
                    "bad_signature", got);

    conf.encoding = NGX_MT5_CREDIT_SIG_HEX;
    memcpy(conf.prefix, "sha256=", 7);
    conf.prefix_len = 7;

    got = sig_test_run(&conf, "sha256=", NULL, NULL, "Hello, World!", 13, 0);
    sig_test_result(OWN, "generic: prefix only", "bad_signature", got);

    got = sig_test_run(&conf, "sha256", NULL, NULL, "Hello, World!", 13, 0);
    sig_test_result(OWN, "generic: shorter than the prefix",
                    "malformed_header", got);

    /* the body may hold a NUL: its length, not strlen, is what counts */

    memset(&conf, 0, sizeof(conf));
    conf.scheme = NGX_MT5_CREDIT_SIG_HMAC_SHA256;
    conf.encoding = NGX_MT5_CREDIT_SIG_HEX;
    conf.tolerance = -1;
    conf.nkeys = 1;
    (void) ngx_mt5_credit_sig_prepare_key(conf.scheme,
                                         (const unsigned char *) "k", 1,
                                         &conf.keys[0]);

    got = sig_test_run(&conf,
           "982872ff8422d2d84de2d26d7900850ff9f3b3275079b02813b572f9ff0ef0b2",
           NULL, NULL, "a\0b", 3, 0);
    sig_test_result(OWN, "generic: body with a NUL byte", "valid", got);

    got = sig_test_run(&conf,
           "982872ff8422d2d84de2d26d7900850ff9f3b3275079b02813b572f9ff0ef0b2",
           NULL, NULL, "a\0c", 3, 0);
    sig_test_result(OWN, "generic: byte after the NUL is signed",
                    "bad_signature", got);

    conf.encoding = 0;

    got = sig_test_run(&conf,
           "982872ff8422d2d84de2d26d7900850ff9f3b3275079b02813b572f9ff0ef0b2",
           NULL, NULL, "a\0b", 3, 0);
    sig_test_result(OWN, "generic: unknown encoding configured",
                    "internal_error", got);
}
