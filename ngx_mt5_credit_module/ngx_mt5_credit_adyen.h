
/*
 * Copyright (C) mt5-credit
 *
 * Adyen's standard notifications: a strict, bounded reader of the batch
 * a POST carries, {"live": .., "notificationItems": [{"NotificationRequest
 * Item": {..}}, ..]}.  Adyen signs each item, not the body: HMAC-SHA256
 * over eight of its fields joined by ':', so the body is read before it is
 * verified.  The reader gives each item's bytes as they arrived (what is
 * stored), the string its signature covers and its signature; nothing
 * else in an item is read here, and only those fields decide money
 * (sql/077's rules read no other).
 *
 * Strict where a laxer reader could be made to see other fields than
 * PostgreSQL's jsonb or Adyen's own libraries see: RFC 8259 JSON only,
 * UTF-8 checked, a key this reader uses written twice is refused, \u0000
 * and lone surrogates (which jsonb refuses) are refused, the amount is
 * plain digits, and a signed field may not hold a control character
 * (no reference has one, and a log line must not).
 *
 * No nginx dependency: the module, the unit test and the fuzzer share it.
 */


#ifndef _NGX_MT5_CREDIT_ADYEN_H_INCLUDED_
#define _NGX_MT5_CREDIT_ADYEN_H_INCLUDED_


#include <stddef.h>

#include "ngx_mt5_credit_signature.h"


#define NGX_MT5_CREDIT_ADYEN_MAX_ITEMS   256   /* one ingest_batch() */
#define NGX_MT5_CREDIT_ADYEN_MAX_DEPTH   32
#define NGX_MT5_CREDIT_ADYEN_MAX_FIELD   128   /* bytes of a signed field */
#define NGX_MT5_CREDIT_ADYEN_MAX_DIGITS  15    /* exact in every reader */


/* the signed fields, in the order of the signed string */
typedef enum {
    NGX_MT5_CREDIT_ADYEN_PSP_REFERENCE = 0,
    NGX_MT5_CREDIT_ADYEN_ORIGINAL_REFERENCE,
    NGX_MT5_CREDIT_ADYEN_MERCHANT_ACCOUNT,
    NGX_MT5_CREDIT_ADYEN_MERCHANT_REFERENCE,
    NGX_MT5_CREDIT_ADYEN_VALUE,
    NGX_MT5_CREDIT_ADYEN_CURRENCY,
    NGX_MT5_CREDIT_ADYEN_EVENT_CODE,
    NGX_MT5_CREDIT_ADYEN_SUCCESS,
    NGX_MT5_CREDIT_ADYEN_NFIELDS
} ngx_mt5_credit_adyen_field_e;


typedef struct {
    ngx_mt5_credit_sig_str_t      bytes;       /* the item object, in the
                                                  body */
    ngx_mt5_credit_sig_str_t      field[NGX_MT5_CREDIT_ADYEN_NFIELDS];
    ngx_mt5_credit_sig_str_t      signed_text; /* field[0]:..:field[7] */
    ngx_mt5_credit_sig_str_t      event_id;    /* psp:eventCode:success */
    ngx_mt5_credit_sig_str_t      signature;   /* hmacSignature, as sent */
} ngx_mt5_credit_adyen_item_t;


/*
 * One read.  The caller gives items (room for max) and scratch, of at
 * least ngx_mt5_credit_adyen_scratch(len) bytes for a body of len bytes:
 * decoded fields, signed strings and event ids live there.  Everything
 * points into the body or scratch.
 */
typedef struct {
    ngx_mt5_credit_adyen_item_t  *items;
    size_t                        max;
    size_t                        nitems;

    unsigned char                *scratch;
    size_t                        size;
    size_t                        used;

    /* after a refusal: why, and the offset in the body where it was seen */
    const char                   *error;
    size_t                        error_at;
} ngx_mt5_credit_adyen_t;


/* scratch enough for any body of len bytes */
size_t ngx_mt5_credit_adyen_scratch(size_t len);

/* 0: a->nitems items, at least one; -1: refused, a->error says why */
int ngx_mt5_credit_adyen_read(ngx_mt5_credit_adyen_t *a,
    const unsigned char *body, size_t len);


#endif /* _NGX_MT5_CREDIT_ADYEN_H_INCLUDED_ */
