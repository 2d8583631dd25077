
/*
 * Copyright (C) mt5-credit
 *
 * Webhook signature verification on the raw body bytes; see
 * ngx_mt5_credit_signature.h and webhook-signatures.md section 6.
 * No nginx dependency: libc and OpenSSL 3 only.
 */


#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "ngx_mt5_credit_signature.h"


#define NGX_MT5_CREDIT_SIG_MAC_LEN     32     /* HMAC-SHA256 output */
#define NGX_MT5_CREDIT_SIG_TEXT_LEN    65     /* 64 hex digits + NUL */
#define NGX_MT5_CREDIT_SIG_MAX_ID      255
#define NGX_MT5_CREDIT_SIG_MAX_DIGITS  18     /* always below INT64_MAX */
#define NGX_MT5_CREDIT_SIG_MAX_PIECES  5      /* id . ts . body */


static ngx_mt5_credit_sig_rc_e ngx_mt5_credit_sig_field(
    const ngx_mt5_credit_sig_field_t *field, ngx_mt5_credit_sig_str_t *value);
static int ngx_mt5_credit_sig_parse_time(const ngx_mt5_credit_sig_str_t *text,
    int64_t *ts);
static int ngx_mt5_credit_sig_valid_id(const ngx_mt5_credit_sig_str_t *id);
static ngx_mt5_credit_sig_rc_e ngx_mt5_credit_sig_parse_stripe(
    const ngx_mt5_credit_sig_str_t *value,
    ngx_mt5_credit_sig_parsed_t *parsed);
static ngx_mt5_credit_sig_rc_e ngx_mt5_credit_sig_parse_standard(
    const ngx_mt5_credit_sig_headers_t *headers,
    ngx_mt5_credit_sig_parsed_t *parsed);
static ngx_mt5_credit_sig_rc_e ngx_mt5_credit_sig_parse_generic(
    const ngx_mt5_credit_sig_conf_t *conf,
    const ngx_mt5_credit_sig_str_t *value,
    ngx_mt5_credit_sig_parsed_t *parsed);
static int ngx_mt5_credit_sig_base64_value(unsigned char c);
static ngx_mt5_credit_sig_rc_e ngx_mt5_credit_sig_decode_base64(
    const unsigned char *src, size_t len, ngx_mt5_credit_sig_key_t *key);
static ngx_mt5_credit_sig_rc_e ngx_mt5_credit_sig_decode_hex(
    const unsigned char *src, size_t len, ngx_mt5_credit_sig_key_t *key);
static size_t ngx_mt5_credit_sig_encode(ngx_mt5_credit_sig_encoding_e encoding,
    const unsigned char *mac, unsigned char *text);
static ngx_mt5_credit_sig_rc_e ngx_mt5_credit_sig_mac(EVP_MAC_CTX *ctx,
    const ngx_mt5_credit_sig_key_t *key,
    const ngx_mt5_credit_sig_str_t *pieces, size_t npieces,
    unsigned char *mac);


static const unsigned char  ngx_mt5_credit_sig_dot[] = ".";
static const unsigned char  ngx_mt5_credit_sig_whsec[] = "whsec_";


ngx_mt5_credit_sig_rc_e
ngx_mt5_credit_sig_prepare_key(ngx_mt5_credit_sig_scheme_e scheme,
    const unsigned char *secret, size_t len, ngx_mt5_credit_sig_key_t *key)
{
    size_t  plen;

    OPENSSL_cleanse(key, sizeof(ngx_mt5_credit_sig_key_t));

    if (secret == NULL || len == 0) {
        return NGX_MT5_CREDIT_SIG_BAD_SECRET;
    }

    switch (scheme) {

    case NGX_MT5_CREDIT_SIG_STRIPE:
    case NGX_MT5_CREDIT_SIG_HMAC_SHA256:

        /* the key is the text as shown, "whsec_" included for Stripe */

        if (len > NGX_MT5_CREDIT_SIG_MAX_KEY) {
            return NGX_MT5_CREDIT_SIG_BAD_SECRET;
        }

        memcpy(key->key, secret, len);
        key->len = len;

        return NGX_MT5_CREDIT_SIG_OK;

    case NGX_MT5_CREDIT_SIG_STANDARD:

        plen = sizeof(ngx_mt5_credit_sig_whsec) - 1;

        if (len >= plen && memcmp(secret, ngx_mt5_credit_sig_whsec, plen) == 0)
        {
            secret += plen;
            len -= plen;
        }

        return ngx_mt5_credit_sig_decode_base64(secret, len, key);

    case NGX_MT5_CREDIT_SIG_ADYEN:
        return ngx_mt5_credit_sig_decode_hex(secret, len, key);

    default:
        return NGX_MT5_CREDIT_SIG_BAD_SECRET;
    }
}


ngx_mt5_credit_sig_rc_e
ngx_mt5_credit_sig_parse(const ngx_mt5_credit_sig_conf_t *conf,
    const ngx_mt5_credit_sig_headers_t *headers,
    ngx_mt5_credit_sig_parsed_t *parsed)
{
    ngx_mt5_credit_sig_rc_e   rc;
    ngx_mt5_credit_sig_str_t  value;

    memset(parsed, 0, sizeof(ngx_mt5_credit_sig_parsed_t));

    switch (conf->scheme) {

    case NGX_MT5_CREDIT_SIG_STRIPE:

        rc = ngx_mt5_credit_sig_field(&headers->signature, &value);
        if (rc != NGX_MT5_CREDIT_SIG_OK) {
            return rc;
        }

        return ngx_mt5_credit_sig_parse_stripe(&value, parsed);

    case NGX_MT5_CREDIT_SIG_STANDARD:
        return ngx_mt5_credit_sig_parse_standard(headers, parsed);

    case NGX_MT5_CREDIT_SIG_HMAC_SHA256:

        rc = ngx_mt5_credit_sig_field(&headers->signature, &value);
        if (rc != NGX_MT5_CREDIT_SIG_OK) {
            return rc;
        }

        return ngx_mt5_credit_sig_parse_generic(conf, &value, parsed);

    case NGX_MT5_CREDIT_SIG_ADYEN:
        return NGX_MT5_CREDIT_SIG_OK;

    default:
        return NGX_MT5_CREDIT_SIG_ERROR;
    }
}


ngx_mt5_credit_sig_rc_e
ngx_mt5_credit_sig_check_time(const ngx_mt5_credit_sig_conf_t *conf,
    const ngx_mt5_credit_sig_parsed_t *parsed, int64_t now, int64_t *skew)
{
    int64_t  ts, diff;

    diff = 0;

    if (parsed->has_timestamp) {
        ts = parsed->timestamp;

        /* now - ts, saturated: "now" is whatever the caller passes */

        if (ts > 0 && now < INT64_MIN + ts) {
            diff = INT64_MIN;

        } else if (ts < 0 && now > INT64_MAX + ts) {
            diff = INT64_MAX;

        } else {
            diff = now - ts;
        }
    }

    if (skew != NULL) {
        *skew = diff;
    }

    if (!parsed->has_timestamp || conf->tolerance < 0) {
        return NGX_MT5_CREDIT_SIG_OK;
    }

    if (diff > conf->tolerance) {
        return NGX_MT5_CREDIT_SIG_TOO_OLD;
    }

    /* tolerance >= 0 here, so its negation cannot overflow */

    if (diff < -conf->tolerance) {
        return NGX_MT5_CREDIT_SIG_IN_FUTURE;
    }

    return NGX_MT5_CREDIT_SIG_OK;
}


ngx_mt5_credit_sig_rc_e
ngx_mt5_credit_sig_verify(const ngx_mt5_credit_sig_conf_t *conf,
    const ngx_mt5_credit_sig_parsed_t *parsed, const unsigned char *body,
    size_t len)
{
    int                              match;
    size_t                           i, k, n, text_len;
    EVP_MAC                         *hmac;
    OSSL_PARAM                       params[2];
    EVP_MAC_CTX                     *ctx;
    unsigned char                    mac[NGX_MT5_CREDIT_SIG_MAC_LEN];
    unsigned char                    text[NGX_MT5_CREDIT_SIG_TEXT_LEN];
    ngx_mt5_credit_sig_rc_e          rc;
    ngx_mt5_credit_sig_str_t         pieces[NGX_MT5_CREDIT_SIG_MAX_PIECES];
    ngx_mt5_credit_sig_encoding_e    encoding;
    const ngx_mt5_credit_sig_str_t  *cand;

    /* a misconfigured location must not look like a forged request */

    if (conf->nkeys == 0 || conf->nkeys > NGX_MT5_CREDIT_SIG_MAX_SECRETS
        || parsed->ncandidates > NGX_MT5_CREDIT_SIG_MAX_CANDIDATES)
    {
        return NGX_MT5_CREDIT_SIG_ERROR;
    }

    n = 0;

    switch (conf->scheme) {

    case NGX_MT5_CREDIT_SIG_STRIPE:

        if (!parsed->has_timestamp) {
            return NGX_MT5_CREDIT_SIG_ERROR;
        }

        encoding = NGX_MT5_CREDIT_SIG_HEX;
        pieces[n++] = parsed->timestamp_text;
        break;

    case NGX_MT5_CREDIT_SIG_STANDARD:

        if (!parsed->has_timestamp) {
            return NGX_MT5_CREDIT_SIG_ERROR;
        }

        encoding = NGX_MT5_CREDIT_SIG_BASE64;
        pieces[n++] = parsed->id;
        pieces[n].data = ngx_mt5_credit_sig_dot;
        pieces[n++].len = 1;
        pieces[n++] = parsed->timestamp_text;
        break;

    case NGX_MT5_CREDIT_SIG_HMAC_SHA256:

        encoding = conf->encoding;

        if (encoding != NGX_MT5_CREDIT_SIG_HEX
            && encoding != NGX_MT5_CREDIT_SIG_BASE64)
        {
            return NGX_MT5_CREDIT_SIG_ERROR;
        }

        break;

    case NGX_MT5_CREDIT_SIG_ADYEN:

        /* "body" is an item's signed string, built from its fields */

        encoding = NGX_MT5_CREDIT_SIG_BASE64;
        break;

    default:
        return NGX_MT5_CREDIT_SIG_ERROR;
    }

    if (n != 0) {
        pieces[n].data = ngx_mt5_credit_sig_dot;
        pieces[n++].len = 1;
    }

    /* the body is fed as it is, never copied or altered */

    pieces[n].data = body;
    pieces[n++].len = len;

    /* nothing to compare with: do not spend CPU on the body */

    if (parsed->ncandidates == 0) {
        return NGX_MT5_CREDIT_SIG_BAD_SIGNATURE;
    }

    hmac = EVP_MAC_fetch(NULL, OSSL_MAC_NAME_HMAC, NULL);
    if (hmac == NULL) {
        return NGX_MT5_CREDIT_SIG_ERROR;
    }

    ctx = EVP_MAC_CTX_new(hmac);
    if (ctx == NULL) {
        EVP_MAC_free(hmac);
        return NGX_MT5_CREDIT_SIG_ERROR;
    }

    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                                 (char *) "SHA256", 0);
    params[1] = OSSL_PARAM_construct_end();

    if (EVP_MAC_CTX_set_params(ctx, params) != 1) {
        rc = NGX_MT5_CREDIT_SIG_ERROR;
        goto done;
    }

    /*
     * Every key against every candidate, without stopping at a match, so
     * the time taken does not tell which pair matched.  The candidate
     * length is public (it is in the request), the comparison of equal
     * lengths is constant time.
     */

    match = 0;

    for (k = 0; k < conf->nkeys; k++) {

        rc = ngx_mt5_credit_sig_mac(ctx, &conf->keys[k], pieces, n, mac);
        if (rc != NGX_MT5_CREDIT_SIG_OK) {
            goto done;
        }

        text_len = ngx_mt5_credit_sig_encode(encoding, mac, text);

        for (i = 0; i < parsed->ncandidates; i++) {
            cand = &parsed->candidates[i];

            if (cand->len != text_len || cand->data == NULL) {
                continue;
            }

            match |= (CRYPTO_memcmp(cand->data, text, text_len) == 0);
        }
    }

    rc = match ? NGX_MT5_CREDIT_SIG_OK : NGX_MT5_CREDIT_SIG_BAD_SIGNATURE;

done:

    /* the MAC of this body is a valid signature for it: do not leave it */

    OPENSSL_cleanse(mac, sizeof(mac));
    OPENSSL_cleanse(text, sizeof(text));

    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(hmac);

    return rc;
}


ngx_mt5_credit_sig_rc_e
ngx_mt5_credit_sig_check(const ngx_mt5_credit_sig_conf_t *conf,
    const ngx_mt5_credit_sig_headers_t *headers,
    const unsigned char *body, size_t len, int64_t now)
{
    int64_t                      skew;
    ngx_mt5_credit_sig_rc_e      rc;
    ngx_mt5_credit_sig_parsed_t  parsed;

    rc = ngx_mt5_credit_sig_parse(conf, headers, &parsed);
    if (rc != NGX_MT5_CREDIT_SIG_OK) {
        return rc;
    }

    rc = ngx_mt5_credit_sig_check_time(conf, &parsed, now, &skew);
    if (rc != NGX_MT5_CREDIT_SIG_OK) {
        return rc;
    }

    return ngx_mt5_credit_sig_verify(conf, &parsed, body, len);
}


const char *
ngx_mt5_credit_sig_reason(ngx_mt5_credit_sig_rc_e rc)
{
    switch (rc) {

    case NGX_MT5_CREDIT_SIG_OK:
        return "valid";

    case NGX_MT5_CREDIT_SIG_MISSING_HEADER:
        return "missing_header";

    case NGX_MT5_CREDIT_SIG_MALFORMED_HEADER:
        return "malformed_header";

    case NGX_MT5_CREDIT_SIG_BAD_SIGNATURE:
        return "bad_signature";

    case NGX_MT5_CREDIT_SIG_TOO_OLD:
        return "timestamp_too_old";

    case NGX_MT5_CREDIT_SIG_IN_FUTURE:
        return "timestamp_in_future";

    case NGX_MT5_CREDIT_SIG_BAD_SECRET:
        return "bad_secret";

    case NGX_MT5_CREDIT_SIG_ERROR:
        return "internal_error";

    default:
        return "unknown";
    }
}


/*
 * The single value of a header: absent or empty after trimming SP/HTAB
 * is MISSING, several lines are MALFORMED (we refuse to pick one).
 */

static ngx_mt5_credit_sig_rc_e
ngx_mt5_credit_sig_field(const ngx_mt5_credit_sig_field_t *field,
    ngx_mt5_credit_sig_str_t *value)
{
    const unsigned char  *p, *last;

    if (field->nlines == 0 || field->lines == NULL) {
        return NGX_MT5_CREDIT_SIG_MISSING_HEADER;
    }

    if (field->nlines > 1) {
        return NGX_MT5_CREDIT_SIG_MALFORMED_HEADER;
    }

    p = field->lines[0].data;

    if (p == NULL) {
        return NGX_MT5_CREDIT_SIG_MISSING_HEADER;
    }

    last = p + field->lines[0].len;

    while (p < last && (*p == ' ' || *p == '\t')) {
        p++;
    }

    while (last > p && (last[-1] == ' ' || last[-1] == '\t')) {
        last--;
    }

    if (p == last) {
        return NGX_MT5_CREDIT_SIG_MISSING_HEADER;
    }

    value->data = p;
    value->len = last - p;

    return NGX_MT5_CREDIT_SIG_OK;
}


/*
 * [1-9][0-9]{0,17}: no sign, no leading zero (the text is what gets
 * signed, so it must equal the integer's canonical form), no overflow.
 */

static int
ngx_mt5_credit_sig_parse_time(const ngx_mt5_credit_sig_str_t *text,
    int64_t *ts)
{
    size_t   i;
    int64_t  value;

    if (text->len == 0 || text->len > NGX_MT5_CREDIT_SIG_MAX_DIGITS
        || text->data[0] < '1' || text->data[0] > '9')
    {
        return -1;
    }

    value = 0;

    for (i = 0; i < text->len; i++) {
        if (text->data[i] < '0' || text->data[i] > '9') {
            return -1;
        }

        value = value * 10 + (text->data[i] - '0');
    }

    *ts = value;

    return 0;
}


/*
 * webhook-id is signed content and our event id (stored, logged): 1..255
 * visible ASCII bytes, no '.' which would make the framing ambiguous.
 */

static int
ngx_mt5_credit_sig_valid_id(const ngx_mt5_credit_sig_str_t *id)
{
    size_t  i;

    if (id->len == 0 || id->len > NGX_MT5_CREDIT_SIG_MAX_ID) {
        return 0;
    }

    for (i = 0; i < id->len; i++) {
        if (id->data[i] < 0x21 || id->data[i] > 0x7e || id->data[i] == '.') {
            return 0;
        }
    }

    return 1;
}


static ngx_mt5_credit_sig_rc_e
ngx_mt5_credit_sig_parse_stripe(const ngx_mt5_credit_sig_str_t *value,
    ngx_mt5_credit_sig_parsed_t *parsed)
{
    size_t                     nt, neq;
    const unsigned char       *p, *q, *last, *end, *eq;
    ngx_mt5_credit_sig_str_t  *cand;

    nt = 0;
    p = value->data;
    last = p + value->len;

    for ( ;; ) {

        end = memchr(p, ',', last - p);
        if (end == NULL) {
            end = last;
        }

        /* exactly one '=' per item, as stripe-go; "" and "a=b=c" are bad */

        eq = NULL;
        neq = 0;

        for (q = p; q < end; q++) {
            if (*q == '=') {
                if (eq == NULL) {
                    eq = q;
                }

                neq++;
            }
        }

        if (neq != 1) {
            return NGX_MT5_CREDIT_SIG_MALFORMED_HEADER;
        }

        if (eq - p == 1 && p[0] == 't') {

            if (++nt > 1) {
                return NGX_MT5_CREDIT_SIG_MALFORMED_HEADER;
            }

            parsed->timestamp_text.data = eq + 1;
            parsed->timestamp_text.len = end - (eq + 1);

            if (ngx_mt5_credit_sig_parse_time(&parsed->timestamp_text,
                                              &parsed->timestamp)
                != 0)
            {
                return NGX_MT5_CREDIT_SIG_MALFORMED_HEADER;
            }

        } else if (eq - p == 2 && p[0] == 'v' && p[1] == '1') {

            if (parsed->ncandidates == NGX_MT5_CREDIT_SIG_MAX_CANDIDATES) {
                return NGX_MT5_CREDIT_SIG_MALFORMED_HEADER;
            }

            /* an empty v1 is kept: it never matches */

            cand = &parsed->candidates[parsed->ncandidates++];
            cand->data = eq + 1;
            cand->len = end - (eq + 1);
        }

        /* v0 (test-mode decoy, downgrade risk) and unknown keys: ignored */

        if (end == last) {
            break;
        }

        p = end + 1;
    }

    if (nt == 0) {
        return NGX_MT5_CREDIT_SIG_MALFORMED_HEADER;
    }

    parsed->has_timestamp = 1;

    return NGX_MT5_CREDIT_SIG_OK;
}


static ngx_mt5_credit_sig_rc_e
ngx_mt5_credit_sig_parse_standard(const ngx_mt5_credit_sig_headers_t *headers,
    ngx_mt5_credit_sig_parsed_t *parsed)
{
    const unsigned char       *p, *last, *end, *comma;
    ngx_mt5_credit_sig_rc_e    rc_sig, rc_id, rc_ts;
    ngx_mt5_credit_sig_str_t   sig, id, ts, *cand;

    rc_sig = ngx_mt5_credit_sig_field(&headers->signature, &sig);
    rc_id = ngx_mt5_credit_sig_field(&headers->id, &id);
    rc_ts = ngx_mt5_credit_sig_field(&headers->timestamp, &ts);

    /* an absent header wins over a repeated one: order-independent */

    if (rc_sig == NGX_MT5_CREDIT_SIG_MISSING_HEADER
        || rc_id == NGX_MT5_CREDIT_SIG_MISSING_HEADER
        || rc_ts == NGX_MT5_CREDIT_SIG_MISSING_HEADER)
    {
        return NGX_MT5_CREDIT_SIG_MISSING_HEADER;
    }

    if (rc_sig != NGX_MT5_CREDIT_SIG_OK
        || rc_id != NGX_MT5_CREDIT_SIG_OK
        || rc_ts != NGX_MT5_CREDIT_SIG_OK)
    {
        return NGX_MT5_CREDIT_SIG_MALFORMED_HEADER;
    }

    if (!ngx_mt5_credit_sig_valid_id(&id)) {
        return NGX_MT5_CREDIT_SIG_MALFORMED_HEADER;
    }

    if (ngx_mt5_credit_sig_parse_time(&ts, &parsed->timestamp) != 0) {
        return NGX_MT5_CREDIT_SIG_MALFORMED_HEADER;
    }

    /*
     * "v1,<base64> v1a,<...>": single spaces; empty items, items without
     * ',' and other versions are skipped
     */

    p = sig.data;
    last = p + sig.len;

    for ( ;; ) {

        end = memchr(p, ' ', last - p);
        if (end == NULL) {
            end = last;
        }

        comma = memchr(p, ',', end - p);

        if (comma != NULL && comma - p == 2 && p[0] == 'v' && p[1] == '1') {

            if (parsed->ncandidates == NGX_MT5_CREDIT_SIG_MAX_CANDIDATES) {
                return NGX_MT5_CREDIT_SIG_MALFORMED_HEADER;
            }

            cand = &parsed->candidates[parsed->ncandidates++];
            cand->data = comma + 1;
            cand->len = end - (comma + 1);
        }

        if (end == last) {
            break;
        }

        p = end + 1;
    }

    parsed->id = id;
    parsed->timestamp_text = ts;
    parsed->has_timestamp = 1;

    return NGX_MT5_CREDIT_SIG_OK;
}


static ngx_mt5_credit_sig_rc_e
ngx_mt5_credit_sig_parse_generic(const ngx_mt5_credit_sig_conf_t *conf,
    const ngx_mt5_credit_sig_str_t *value,
    ngx_mt5_credit_sig_parsed_t *parsed)
{
    if (conf->prefix_len > sizeof(conf->prefix)) {
        return NGX_MT5_CREDIT_SIG_ERROR;
    }

    /* the prefix is exact: "SHA256=" or "sha1=" are not ours */

    if (value->len < conf->prefix_len
        || memcmp(value->data, conf->prefix, conf->prefix_len) != 0)
    {
        return NGX_MT5_CREDIT_SIG_MALFORMED_HEADER;
    }

    parsed->candidates[0].data = value->data + conf->prefix_len;
    parsed->candidates[0].len = value->len - conf->prefix_len;
    parsed->ncandidates = 1;

    return NGX_MT5_CREDIT_SIG_OK;
}


static int
ngx_mt5_credit_sig_base64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') {
        return c - 'A';
    }

    if (c >= 'a' && c <= 'z') {
        return c - 'a' + 26;
    }

    if (c >= '0' && c <= '9') {
        return c - '0' + 52;
    }

    if (c == '+') {
        return 62;
    }

    if (c == '/') {
        return 63;
    }

    return -1;
}


/*
 * Strict standard base64 (configuration time only): padded, no
 * whitespace, no stray '=', unused bits zero, so one key has one text.
 */

static ngx_mt5_credit_sig_rc_e
ngx_mt5_credit_sig_decode_base64(const unsigned char *src, size_t len,
    ngx_mt5_credit_sig_key_t *key)
{
    int            v[4];
    size_t         i, j, pad, out, olen;
    uint32_t       word;
    unsigned char  bytes[3];

    if (len == 0 || len % 4 != 0) {
        return NGX_MT5_CREDIT_SIG_BAD_SECRET;
    }

    pad = 0;

    if (src[len - 1] == '=') {
        pad = (src[len - 2] == '=') ? 2 : 1;
    }

    olen = len / 4 * 3 - pad;

    if (olen > NGX_MT5_CREDIT_SIG_MAX_KEY) {
        return NGX_MT5_CREDIT_SIG_BAD_SECRET;
    }

    out = 0;

    for (i = 0; i < len; i += 4) {

        for (j = 0; j < 4; j++) {

            if (i + 4 == len && j >= 4 - pad) {
                v[j] = 0;
                continue;
            }

            v[j] = ngx_mt5_credit_sig_base64_value(src[i + j]);

            if (v[j] < 0) {
                goto failed;
            }
        }

        if ((pad == 1 && i + 4 == len && (v[2] & 0x03) != 0)
            || (pad == 2 && i + 4 == len && (v[1] & 0x0f) != 0))
        {
            goto failed;
        }

        word = ((uint32_t) v[0] << 18) | ((uint32_t) v[1] << 12)
               | ((uint32_t) v[2] << 6) | (uint32_t) v[3];

        bytes[0] = (unsigned char) (word >> 16);
        bytes[1] = (unsigned char) (word >> 8);
        bytes[2] = (unsigned char) word;

        for (j = 0; j < 3 && out < olen; j++) {
            key->key[out++] = bytes[j];
        }
    }

    OPENSSL_cleanse(bytes, sizeof(bytes));

    key->len = olen;

    return NGX_MT5_CREDIT_SIG_OK;

failed:

    OPENSSL_cleanse(bytes, sizeof(bytes));
    OPENSSL_cleanse(key, sizeof(ngx_mt5_credit_sig_key_t));

    return NGX_MT5_CREDIT_SIG_BAD_SECRET;
}


/* hex digits in pairs, either case (configuration time only) */

static ngx_mt5_credit_sig_rc_e
ngx_mt5_credit_sig_decode_hex(const unsigned char *src, size_t len,
    ngx_mt5_credit_sig_key_t *key)
{
    size_t         i;
    unsigned       v;
    unsigned char  c;

    if (len == 0 || len % 2 != 0 || len / 2 > NGX_MT5_CREDIT_SIG_MAX_KEY) {
        return NGX_MT5_CREDIT_SIG_BAD_SECRET;
    }

    for (i = 0; i < len; i++) {
        c = src[i];

        if (c >= '0' && c <= '9') {
            v = (unsigned) (c - '0');

        } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
            v = (unsigned) ((c | 0x20) - 'a' + 10);

        } else {
            OPENSSL_cleanse(key, sizeof(ngx_mt5_credit_sig_key_t));
            return NGX_MT5_CREDIT_SIG_BAD_SECRET;
        }

        key->key[i / 2] = (unsigned char) ((i % 2) ? key->key[i / 2] | v
                                                   : v << 4);
    }

    key->len = len / 2;

    return NGX_MT5_CREDIT_SIG_OK;
}


/*
 * The canonical text of a MAC: lowercase hex (64) or padded standard
 * base64 (44); anything else a sender writes simply does not match.
 */

static size_t
ngx_mt5_credit_sig_encode(ngx_mt5_credit_sig_encoding_e encoding,
    const unsigned char *mac, unsigned char *text)
{
    int     n;
    size_t  i;

    if (encoding == NGX_MT5_CREDIT_SIG_BASE64) {
        n = EVP_EncodeBlock(text, mac, NGX_MT5_CREDIT_SIG_MAC_LEN);
        return (size_t) n;
    }

    /* digits without a table lookup indexed by MAC bytes */

    for (i = 0; i < NGX_MT5_CREDIT_SIG_MAC_LEN; i++) {
        n = mac[i] >> 4;
        text[2 * i] = (unsigned char) (n + '0' + (((9 - n) >> 8) & 39));
        n = mac[i] & 0x0f;
        text[2 * i + 1] = (unsigned char) (n + '0' + (((9 - n) >> 8) & 39));
    }

    text[2 * NGX_MT5_CREDIT_SIG_MAC_LEN] = '\0';

    return 2 * NGX_MT5_CREDIT_SIG_MAC_LEN;
}


static ngx_mt5_credit_sig_rc_e
ngx_mt5_credit_sig_mac(EVP_MAC_CTX *ctx, const ngx_mt5_credit_sig_key_t *key,
    const ngx_mt5_credit_sig_str_t *pieces, size_t npieces,
    unsigned char *mac)
{
    size_t  i, outl;

    if (key->len == 0 || key->len > NGX_MT5_CREDIT_SIG_MAX_KEY) {
        return NGX_MT5_CREDIT_SIG_ERROR;
    }

    if (EVP_MAC_init(ctx, key->key, key->len, NULL) != 1) {
        return NGX_MT5_CREDIT_SIG_ERROR;
    }

    for (i = 0; i < npieces; i++) {

        if (pieces[i].len == 0) {
            continue;
        }

        if (pieces[i].data == NULL
            || EVP_MAC_update(ctx, pieces[i].data, pieces[i].len) != 1)
        {
            return NGX_MT5_CREDIT_SIG_ERROR;
        }
    }

    if (EVP_MAC_final(ctx, mac, &outl, NGX_MT5_CREDIT_SIG_MAC_LEN) != 1
        || outl != NGX_MT5_CREDIT_SIG_MAC_LEN)
    {
        return NGX_MT5_CREDIT_SIG_ERROR;
    }

    return NGX_MT5_CREDIT_SIG_OK;
}
