
/*
 * Copyright (C) mt5-credit
 *
 * Webhook signature verification on the raw body bytes.
 *
 * This file and its .c have no nginx dependency on purpose: the same code
 * runs inside the module, in the C unit test that replays every vector of
 * ../shared/vectors with the vector's own "now", and in the fuzzers.
 * Only OpenSSL is used.
 */


#ifndef _NGX_MT5_CREDIT_SIGNATURE_H_INCLUDED_
#define _NGX_MT5_CREDIT_SIGNATURE_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


#define NGX_MT5_CREDIT_SIG_MAX_CANDIDATES  16
#define NGX_MT5_CREDIT_SIG_MAX_KEY         256
#define NGX_MT5_CREDIT_SIG_MAX_SECRETS     4
#define NGX_MT5_CREDIT_SIG_MAX_PREFIX      32
#define NGX_MT5_CREDIT_SIG_MAX_HEADER      64


typedef enum {
    NGX_MT5_CREDIT_SIG_STRIPE = 1,      /* Stripe-Signature: t=..,v1=.. */
    NGX_MT5_CREDIT_SIG_STANDARD,        /* Standard Webhooks v1 */
    NGX_MT5_CREDIT_SIG_HMAC_SHA256,     /* one header, HMAC of the body */
    NGX_MT5_CREDIT_SIG_ADYEN            /* per item, of its signed fields
                                           (ngx_mt5_credit_adyen.h) */
} ngx_mt5_credit_sig_scheme_e;


typedef enum {
    NGX_MT5_CREDIT_SIG_HEX = 1,         /* lowercase hex only */
    NGX_MT5_CREDIT_SIG_BASE64           /* standard alphabet, padded */
} ngx_mt5_credit_sig_encoding_e;


/* verdicts; the names returned by ngx_mt5_credit_sig_reason() are the
 * "expect" strings of the vectors */
typedef enum {
    NGX_MT5_CREDIT_SIG_OK = 0,          /* "valid" */
    NGX_MT5_CREDIT_SIG_MISSING_HEADER,  /* "missing_header" */
    NGX_MT5_CREDIT_SIG_MALFORMED_HEADER,/* "malformed_header" */
    NGX_MT5_CREDIT_SIG_BAD_SIGNATURE,   /* "bad_signature" */
    NGX_MT5_CREDIT_SIG_TOO_OLD,         /* "timestamp_too_old" */
    NGX_MT5_CREDIT_SIG_IN_FUTURE,       /* "timestamp_in_future" */
    NGX_MT5_CREDIT_SIG_BAD_SECRET,      /* "bad_secret": config time only */
    NGX_MT5_CREDIT_SIG_ERROR            /* "internal_error": OpenSSL */
} ngx_mt5_credit_sig_rc_e;


/* a byte string that is not NUL-terminated */
typedef struct {
    const unsigned char          *data;
    size_t                        len;
} ngx_mt5_credit_sig_str_t;


/*
 * All lines of one request header, in arrival order.  nlines == 0 means
 * the header is absent; nlines > 1 means it was repeated, which every
 * scheme treats as malformed.  Values arrive with surrounding SP/HTAB
 * already stripped by the HTTP parser, but the parser strips them again
 * (a value may come from elsewhere, e.g. a test).
 */
typedef struct {
    const ngx_mt5_credit_sig_str_t *lines;
    size_t                        nlines;
} ngx_mt5_credit_sig_field_t;


/* the headers a scheme reads; fields a scheme does not use are ignored */
typedef struct {
    ngx_mt5_credit_sig_field_t    signature;   /* Stripe-Signature,
                                                  webhook-signature or the
                                                  configured header */
    ngx_mt5_credit_sig_field_t    id;          /* webhook-id */
    ngx_mt5_credit_sig_field_t    timestamp;   /* webhook-timestamp */
} ngx_mt5_credit_sig_headers_t;


/* a prepared secret: the HMAC key bytes */
typedef struct {
    unsigned char                 key[NGX_MT5_CREDIT_SIG_MAX_KEY];
    size_t                        len;
} ngx_mt5_credit_sig_key_t;


/* the verification policy of one location, fixed at configuration time */
typedef struct {
    ngx_mt5_credit_sig_scheme_e   scheme;
    ngx_mt5_credit_sig_encoding_e encoding;    /* HMAC_SHA256 only */
    char                          header[NGX_MT5_CREDIT_SIG_MAX_HEADER];
                                               /* HMAC_SHA256 only */
    char                          prefix[NGX_MT5_CREDIT_SIG_MAX_PREFIX];
    size_t                        prefix_len;  /* HMAC_SHA256 only */
    int64_t                       tolerance;   /* seconds; < 0: no check */
    ngx_mt5_credit_sig_key_t      keys[NGX_MT5_CREDIT_SIG_MAX_SECRETS];
    size_t                        nkeys;
} ngx_mt5_credit_sig_conf_t;


/*
 * The parsed headers.  Pointers point into the header lines given to
 * ngx_mt5_credit_sig_parse(); they are valid as long as those are.
 */
typedef struct {
    int64_t                       timestamp;   /* unix seconds */
    unsigned                      has_timestamp:1;
    ngx_mt5_credit_sig_str_t      timestamp_text;
    ngx_mt5_credit_sig_str_t      id;          /* Standard Webhooks */
    ngx_mt5_credit_sig_str_t      candidates[NGX_MT5_CREDIT_SIG_MAX_CANDIDATES];
    size_t                        ncandidates;
} ngx_mt5_credit_sig_parsed_t;


/*
 * Turns a secret as the provider shows it into key bytes.
 * Stripe and HMAC_SHA256: the string's bytes as they are (a "whsec_" prefix
 * is part of a Stripe key).  Standard Webhooks: an optional "whsec_" prefix,
 * then standard base64, decoded.  Adyen: hex digits (either case), decoded,
 * as its Customer Area shows the key.  Empty, undecodable or too long: BAD_SECRET.
 * The caller trims the line (trailing CR/LF/SP/HTAB) before calling.
 */
ngx_mt5_credit_sig_rc_e ngx_mt5_credit_sig_prepare_key(
    ngx_mt5_credit_sig_scheme_e scheme, const unsigned char *secret,
    size_t len, ngx_mt5_credit_sig_key_t *key);

/*
 * Parses the signature headers of a request; no body needed, so a request
 * with a missing or malformed header is rejected before its body is read.
 * Returns OK, MISSING_HEADER or MALFORMED_HEADER.  A header that parses but
 * carries no usable candidate (e.g. Stripe with no v1) is OK here and
 * BAD_SIGNATURE in ngx_mt5_credit_sig_verify().  Adyen signs in the body,
 * not in a header: OK with no candidate; the caller puts each item's
 * signature there and verifies its signed string as the "body".
 */
ngx_mt5_credit_sig_rc_e ngx_mt5_credit_sig_parse(
    const ngx_mt5_credit_sig_conf_t *conf,
    const ngx_mt5_credit_sig_headers_t *headers,
    ngx_mt5_credit_sig_parsed_t *parsed);

/*
 * Checks the timestamp against "now" (unix seconds) and conf->tolerance,
 * both directions: now - ts > tolerance is TOO_OLD, ts - now > tolerance is
 * IN_FUTURE, equality passes.  Schemes without a timestamp always pass.
 * *skew receives now - ts (0 without a timestamp) for logging.
 */
ngx_mt5_credit_sig_rc_e ngx_mt5_credit_sig_check_time(
    const ngx_mt5_credit_sig_conf_t *conf,
    const ngx_mt5_credit_sig_parsed_t *parsed, int64_t now, int64_t *skew);

/*
 * Computes the MAC of the signed content (scheme-specific framing around
 * the raw body bytes, which are never altered) with every configured key
 * and compares it in constant time with every candidate.  OK if any pair
 * matches, otherwise BAD_SIGNATURE; ERROR if OpenSSL fails.
 */
ngx_mt5_credit_sig_rc_e ngx_mt5_credit_sig_verify(
    const ngx_mt5_credit_sig_conf_t *conf,
    const ngx_mt5_credit_sig_parsed_t *parsed,
    const unsigned char *body, size_t len);

/* parse + check_time + verify, in that order, for tests and fuzzers */
ngx_mt5_credit_sig_rc_e ngx_mt5_credit_sig_check(
    const ngx_mt5_credit_sig_conf_t *conf,
    const ngx_mt5_credit_sig_headers_t *headers,
    const unsigned char *body, size_t len, int64_t now);

/* "valid", "missing_header", ... : the vectors' names for the verdicts */
const char *ngx_mt5_credit_sig_reason(ngx_mt5_credit_sig_rc_e rc);


#endif /* _NGX_MT5_CREDIT_SIGNATURE_H_INCLUDED_ */
