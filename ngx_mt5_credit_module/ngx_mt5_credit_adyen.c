
/*
 * Copyright (C) mt5-credit
 *
 * Adyen's notification batch, read strictly; see ngx_mt5_credit_adyen.h.
 * A recursive descent whose depth is bounded, over bytes that are never
 * changed: what an item is, is what arrived.
 */


#include <string.h>

#include "ngx_mt5_credit_adyen.h"


#define NGX_MT5_CREDIT_ADYEN_MAX_KEY  64    /* longer keys are not ours */
#define NGX_MT5_CREDIT_ADYEN_MAX_ID   255   /* webhook_event's check */


typedef struct {
    ngx_mt5_credit_adyen_t       *a;
    const unsigned char          *start;
    const unsigned char          *p;
    const unsigned char          *end;
    unsigned                      depth;
} ngx_mt5_credit_adyen_in_t;


/* a key this reader uses, and where its value goes */
typedef enum {
    NGX_MT5_CREDIT_ADYEN_KEY_OTHER = 0,
    NGX_MT5_CREDIT_ADYEN_KEY_ITEMS,
    NGX_MT5_CREDIT_ADYEN_KEY_ITEM,
    NGX_MT5_CREDIT_ADYEN_KEY_AMOUNT,
    NGX_MT5_CREDIT_ADYEN_KEY_ADDITIONAL,
    NGX_MT5_CREDIT_ADYEN_KEY_SIGNATURE,
    NGX_MT5_CREDIT_ADYEN_KEY_FIELD      /* + the field's number */
} ngx_mt5_credit_adyen_key_e;


static int ngx_mt5_credit_adyen_fail(ngx_mt5_credit_adyen_in_t *in,
    const char *why);
static void ngx_mt5_credit_adyen_space(ngx_mt5_credit_adyen_in_t *in);
static int ngx_mt5_credit_adyen_expect(ngx_mt5_credit_adyen_in_t *in,
    unsigned char c, const char *why);
static int ngx_mt5_credit_adyen_string(ngx_mt5_credit_adyen_in_t *in,
    unsigned char *out, size_t room, size_t *len);
static void ngx_mt5_credit_adyen_put(unsigned char *out, size_t room,
    size_t *len, const unsigned char *b, size_t n);
static int ngx_mt5_credit_adyen_utf8(ngx_mt5_credit_adyen_in_t *in,
    unsigned char *out, size_t room, size_t *len);
static int ngx_mt5_credit_adyen_escape(ngx_mt5_credit_adyen_in_t *in,
    unsigned char *out, size_t room, size_t *len);
static int ngx_mt5_credit_adyen_hex4(ngx_mt5_credit_adyen_in_t *in,
    unsigned *cp);
static int ngx_mt5_credit_adyen_number(ngx_mt5_credit_adyen_in_t *in,
    int *integer);
static int ngx_mt5_credit_adyen_value(ngx_mt5_credit_adyen_in_t *in);
static int ngx_mt5_credit_adyen_members(ngx_mt5_credit_adyen_in_t *in,
    int (*member)(ngx_mt5_credit_adyen_in_t *in, const unsigned char *key,
                  size_t len, void *data),
    void *data);
static int ngx_mt5_credit_adyen_top(ngx_mt5_credit_adyen_in_t *in,
    const unsigned char *key, size_t len, void *data);
static int ngx_mt5_credit_adyen_items(ngx_mt5_credit_adyen_in_t *in);
static int ngx_mt5_credit_adyen_wrapper(ngx_mt5_credit_adyen_in_t *in,
    const unsigned char *key, size_t len, void *data);
static int ngx_mt5_credit_adyen_item(ngx_mt5_credit_adyen_in_t *in,
    const unsigned char *key, size_t len, void *data);
static int ngx_mt5_credit_adyen_amount(ngx_mt5_credit_adyen_in_t *in,
    const unsigned char *key, size_t len, void *data);
static int ngx_mt5_credit_adyen_additional(ngx_mt5_credit_adyen_in_t *in,
    const unsigned char *key, size_t len, void *data);
static int ngx_mt5_credit_adyen_field(ngx_mt5_credit_adyen_in_t *in,
    ngx_mt5_credit_sig_str_t *to, int number);
static int ngx_mt5_credit_adyen_finish(ngx_mt5_credit_adyen_in_t *in,
    ngx_mt5_credit_adyen_item_t *item, unsigned seen);
static unsigned char *ngx_mt5_credit_adyen_join(ngx_mt5_credit_adyen_in_t *in,
    const ngx_mt5_credit_sig_str_t *parts, size_t n,
    ngx_mt5_credit_sig_str_t *to);
static int ngx_mt5_credit_adyen_is(const unsigned char *key, size_t len,
    const char *name);


/* the signed fields' keys, in their order (amount's two are inside it) */
static const char  *ngx_mt5_credit_adyen_names[NGX_MT5_CREDIT_ADYEN_NFIELDS] =
{
    "pspReference", "originalReference", "merchantAccountCode",
    "merchantReference", "value", "currency", "eventCode", "success"
};

static const unsigned char  ngx_mt5_credit_adyen_colon[] = ":";

static const char  *ngx_mt5_credit_adyen_literals[] = {
    "true", "false", "null"
};


size_t
ngx_mt5_credit_adyen_scratch(size_t len)
{
    /* each item's decoded fields and signature are at most their bytes;
       its signed string and event id copy fields, plus 9 separators */
    return 3 * len + 16 * NGX_MT5_CREDIT_ADYEN_MAX_ITEMS + 64;
}


int
ngx_mt5_credit_adyen_read(ngx_mt5_credit_adyen_t *a,
    const unsigned char *body, size_t len)
{
    unsigned                   seen;
    ngx_mt5_credit_adyen_in_t  in;

    a->nitems = 0;
    a->used = 0;
    a->error = NULL;
    a->error_at = 0;

    if (a->size < ngx_mt5_credit_adyen_scratch(len)) {
        a->error = "too little scratch for the body";
        return -1;
    }

    in.a = a;
    in.start = body;
    in.p = body;
    in.end = body + len;
    in.depth = 0;

    ngx_mt5_credit_adyen_space(&in);

    seen = 0;

    if (ngx_mt5_credit_adyen_members(&in, ngx_mt5_credit_adyen_top, &seen)
        != 0)
    {
        return -1;
    }

    ngx_mt5_credit_adyen_space(&in);

    if (in.p != in.end) {
        return ngx_mt5_credit_adyen_fail(&in, "bytes after the JSON value");
    }

    if (!seen) {
        return ngx_mt5_credit_adyen_fail(&in, "no \"notificationItems\"");
    }

    return 0;
}


static int
ngx_mt5_credit_adyen_fail(ngx_mt5_credit_adyen_in_t *in, const char *why)
{
    /* the first reason is the one that counts */

    if (in->a->error == NULL) {
        in->a->error = why;
        in->a->error_at = (size_t) (in->p - in->start);
    }

    return -1;
}


static void
ngx_mt5_credit_adyen_space(ngx_mt5_credit_adyen_in_t *in)
{
    while (in->p < in->end
           && (*in->p == ' ' || *in->p == '\t' || *in->p == '\n'
               || *in->p == '\r'))
    {
        in->p++;
    }
}


static int
ngx_mt5_credit_adyen_expect(ngx_mt5_credit_adyen_in_t *in, unsigned char c,
    const char *why)
{
    ngx_mt5_credit_adyen_space(in);

    if (in->p >= in->end || *in->p != c) {
        return ngx_mt5_credit_adyen_fail(in, why);
    }

    in->p++;

    return 0;
}


/*
 * An object: each member's key decoded and handed to member(), which
 * reads the value (or skips it with ngx_mt5_credit_adyen_value()); with
 * no member(), every value is skipped.
 */

static int
ngx_mt5_credit_adyen_members(ngx_mt5_credit_adyen_in_t *in,
    int (*member)(ngx_mt5_credit_adyen_in_t *in, const unsigned char *key,
                  size_t len, void *data),
    void *data)
{
    size_t         len;
    unsigned char  key[NGX_MT5_CREDIT_ADYEN_MAX_KEY];

    if (++in->depth > NGX_MT5_CREDIT_ADYEN_MAX_DEPTH) {
        return ngx_mt5_credit_adyen_fail(in, "nested too deep");
    }

    if (ngx_mt5_credit_adyen_expect(in, '{', "an object expected") != 0) {
        return -1;
    }

    ngx_mt5_credit_adyen_space(in);

    if (in->p < in->end && *in->p == '}') {
        in->p++;
        in->depth--;
        return 0;
    }

    for ( ;; ) {
        ngx_mt5_credit_adyen_space(in);

        /* a key too long to be one of ours is read, not kept */

        if (ngx_mt5_credit_adyen_string(in, key, sizeof(key), &len) != 0) {
            return -1;
        }

        if (ngx_mt5_credit_adyen_expect(in, ':', "':' expected after a key")
            != 0)
        {
            return -1;
        }

        ngx_mt5_credit_adyen_space(in);

        if ((member ? member(in, key, len, data)
                    : ngx_mt5_credit_adyen_value(in))
            != 0)
        {
            return -1;
        }

        ngx_mt5_credit_adyen_space(in);

        if (in->p < in->end && *in->p == ',') {
            in->p++;
            continue;
        }

        if (ngx_mt5_credit_adyen_expect(in, '}', "',' or '}' expected") != 0) {
            return -1;
        }

        in->depth--;

        return 0;
    }
}


/* the body: one member matters, the items; "live" is not signed */

static int
ngx_mt5_credit_adyen_top(ngx_mt5_credit_adyen_in_t *in,
    const unsigned char *key, size_t len, void *data)
{
    unsigned  *seen = data;

    if (!ngx_mt5_credit_adyen_is(key, len, "notificationItems")) {
        return ngx_mt5_credit_adyen_value(in);
    }

    if (*seen) {
        return ngx_mt5_credit_adyen_fail(in, "\"notificationItems\" twice");
    }

    *seen = 1;

    return ngx_mt5_credit_adyen_items(in);
}


static int
ngx_mt5_credit_adyen_items(ngx_mt5_credit_adyen_in_t *in)
{
    unsigned  found;

    if (++in->depth > NGX_MT5_CREDIT_ADYEN_MAX_DEPTH) {
        return ngx_mt5_credit_adyen_fail(in, "nested too deep");
    }

    if (ngx_mt5_credit_adyen_expect(in, '[',
                                    "\"notificationItems\" is not an array")
        != 0)
    {
        return -1;
    }

    ngx_mt5_credit_adyen_space(in);

    if (in->p < in->end && *in->p == ']') {
        return ngx_mt5_credit_adyen_fail(in, "no notification item");
    }

    for ( ;; ) {
        if (in->a->nitems == in->a->max) {
            return ngx_mt5_credit_adyen_fail(in, "too many notification "
                                             "items in one request");
        }

        found = 0;

        ngx_mt5_credit_adyen_space(in);

        if (ngx_mt5_credit_adyen_members(in, ngx_mt5_credit_adyen_wrapper,
                                         &found)
            != 0)
        {
            return -1;
        }

        if (!found) {
            return ngx_mt5_credit_adyen_fail(in, "an item without "
                                             "\"NotificationRequestItem\"");
        }

        in->a->nitems++;

        ngx_mt5_credit_adyen_space(in);

        if (in->p < in->end && *in->p == ',') {
            in->p++;
            continue;
        }

        if (ngx_mt5_credit_adyen_expect(in, ']', "',' or ']' expected") != 0) {
            return -1;
        }

        in->depth--;

        return 0;
    }
}


/* {"NotificationRequestItem": {...}} */

static int
ngx_mt5_credit_adyen_wrapper(ngx_mt5_credit_adyen_in_t *in,
    const unsigned char *key, size_t len, void *data)
{
    unsigned                     *found = data;
    unsigned                      seen;
    ngx_mt5_credit_adyen_item_t  *item;

    if (!ngx_mt5_credit_adyen_is(key, len, "NotificationRequestItem")) {
        return ngx_mt5_credit_adyen_value(in);
    }

    if (*found) {
        return ngx_mt5_credit_adyen_fail(in, "\"NotificationRequestItem\" "
                                         "twice in one element");
    }

    *found = 1;

    item = &in->a->items[in->a->nitems];
    memset(item, 0, sizeof(ngx_mt5_credit_adyen_item_t));

    item->bytes.data = in->p;

    seen = 0;

    if (ngx_mt5_credit_adyen_members(in, ngx_mt5_credit_adyen_item, &seen)
        != 0)
    {
        return -1;
    }

    item->bytes.len = (size_t) (in->p - item->bytes.data);

    return ngx_mt5_credit_adyen_finish(in, item, seen);
}


/*
 * An item's members; seen has a bit per signed field, then one for
 * additionalData's signature and one for the amount object.
 */

#define NGX_MT5_CREDIT_ADYEN_SEEN_SIGNATURE  (1u << NGX_MT5_CREDIT_ADYEN_NFIELDS)
#define NGX_MT5_CREDIT_ADYEN_SEEN_AMOUNT     (1u << (NGX_MT5_CREDIT_ADYEN_NFIELDS + 1))
#define NGX_MT5_CREDIT_ADYEN_SEEN_ADDITIONAL (1u << (NGX_MT5_CREDIT_ADYEN_NFIELDS + 2))


static int
ngx_mt5_credit_adyen_item(ngx_mt5_credit_adyen_in_t *in,
    const unsigned char *key, size_t len, void *data)
{
    int                           f;
    unsigned                     *seen = data;
    ngx_mt5_credit_adyen_item_t  *item;

    item = &in->a->items[in->a->nitems];

    if (ngx_mt5_credit_adyen_is(key, len, "amount")) {
        if (*seen & NGX_MT5_CREDIT_ADYEN_SEEN_AMOUNT) {
            return ngx_mt5_credit_adyen_fail(in, "\"amount\" twice");
        }

        *seen |= NGX_MT5_CREDIT_ADYEN_SEEN_AMOUNT;

        return ngx_mt5_credit_adyen_members(in, ngx_mt5_credit_adyen_amount,
                                            seen);
    }

    if (ngx_mt5_credit_adyen_is(key, len, "additionalData")) {
        if (*seen & NGX_MT5_CREDIT_ADYEN_SEEN_ADDITIONAL) {
            return ngx_mt5_credit_adyen_fail(in, "\"additionalData\" twice");
        }

        *seen |= NGX_MT5_CREDIT_ADYEN_SEEN_ADDITIONAL;

        return ngx_mt5_credit_adyen_members(in,
                                            ngx_mt5_credit_adyen_additional,
                                            seen);
    }

    for (f = 0; f < NGX_MT5_CREDIT_ADYEN_NFIELDS; f++) {

        if (f == NGX_MT5_CREDIT_ADYEN_VALUE
            || f == NGX_MT5_CREDIT_ADYEN_CURRENCY)
        {
            continue;
        }

        if (ngx_mt5_credit_adyen_is(key, len, ngx_mt5_credit_adyen_names[f])) {
            if (*seen & (1u << f)) {
                return ngx_mt5_credit_adyen_fail(in, "a signed field twice");
            }

            *seen |= 1u << f;

            return ngx_mt5_credit_adyen_field(in, &item->field[f], f);
        }
    }

    return ngx_mt5_credit_adyen_value(in);
}


static int
ngx_mt5_credit_adyen_amount(ngx_mt5_credit_adyen_in_t *in,
    const unsigned char *key, size_t len, void *data)
{
    int                           f;
    unsigned                     *seen = data;
    ngx_mt5_credit_adyen_item_t  *item;

    item = &in->a->items[in->a->nitems];

    if (ngx_mt5_credit_adyen_is(key, len, "value")) {
        f = NGX_MT5_CREDIT_ADYEN_VALUE;

    } else if (ngx_mt5_credit_adyen_is(key, len, "currency")) {
        f = NGX_MT5_CREDIT_ADYEN_CURRENCY;

    } else {
        return ngx_mt5_credit_adyen_value(in);
    }

    if (*seen & (1u << f)) {
        return ngx_mt5_credit_adyen_fail(in, "a signed field twice");
    }

    *seen |= 1u << f;

    return ngx_mt5_credit_adyen_field(in, &item->field[f], f);
}


static int
ngx_mt5_credit_adyen_additional(ngx_mt5_credit_adyen_in_t *in,
    const unsigned char *key, size_t len, void *data)
{
    size_t                        n;
    unsigned                     *seen = data;
    unsigned char                *out;
    ngx_mt5_credit_adyen_item_t  *item;

    /* nothing else in additionalData is signed, so nothing else is read */

    if (!ngx_mt5_credit_adyen_is(key, len, "hmacSignature")) {
        return ngx_mt5_credit_adyen_value(in);
    }

    if (*seen & NGX_MT5_CREDIT_ADYEN_SEEN_SIGNATURE) {
        return ngx_mt5_credit_adyen_fail(in, "\"hmacSignature\" twice");
    }

    *seen |= NGX_MT5_CREDIT_ADYEN_SEEN_SIGNATURE;

    item = &in->a->items[in->a->nitems];
    out = in->a->scratch + in->a->used;

    if (in->p >= in->end || *in->p != '"') {
        return ngx_mt5_credit_adyen_fail(in, "\"hmacSignature\" is not a "
                                         "string");
    }

    if (ngx_mt5_credit_adyen_string(in, out, in->a->size - in->a->used, &n)
        != 0)
    {
        return -1;
    }

    item->signature.data = out;
    item->signature.len = n;
    in->a->used += n;

    return 0;
}


/*
 * A signed field: a string, or for the amount's value plain digits.
 * Decoded into scratch, as JSON readers see it, which is what was signed.
 */

static int
ngx_mt5_credit_adyen_field(ngx_mt5_credit_adyen_in_t *in,
    ngx_mt5_credit_sig_str_t *to, int number)
{
    int             integer;
    size_t          n, i;
    unsigned char  *out;
    const unsigned char  *from;

    out = in->a->scratch + in->a->used;

    if (number == NGX_MT5_CREDIT_ADYEN_VALUE) {
        from = in->p;

        if (in->p >= in->end || (*in->p != '-' && (*in->p < '0'
                                                   || *in->p > '9')))
        {
            return ngx_mt5_credit_adyen_fail(in, "the amount's value is not "
                                             "a whole number of minor units");
        }

        if (ngx_mt5_credit_adyen_number(in, &integer) != 0) {
            return -1;
        }

        n = (size_t) (in->p - from);

        /* as every library prints it back: no sign, fraction or exponent */

        if (!integer || *from == '-') {
            in->p = from;
            return ngx_mt5_credit_adyen_fail(in, "the amount's value is not "
                                             "a whole number of minor units");
        }

        if (n > NGX_MT5_CREDIT_ADYEN_MAX_DIGITS) {
            in->p = from;
            return ngx_mt5_credit_adyen_fail(in, "the amount's value has too "
                                             "many digits");
        }

        memcpy(out, from, n);

    } else {
        if (in->p >= in->end || *in->p != '"') {
            return ngx_mt5_credit_adyen_fail(in, "a signed field is not a "
                                             "string");
        }

        if (ngx_mt5_credit_adyen_string(in, out, in->a->size - in->a->used,
                                        &n)
            != 0)
        {
            return -1;
        }

        if (n > NGX_MT5_CREDIT_ADYEN_MAX_FIELD) {
            return ngx_mt5_credit_adyen_fail(in, "a signed field is too "
                                             "long");
        }

        /*
         * ':' and '\\' are signed as they are, as Adyen's Node, PHP and
         * Java libraries sign them; a ':' makes the signed string
         * ambiguous, which docs/providers.md shows moves no money.
         */

        for (i = 0; i < n; i++) {

            /* no reference has one; a log line must not get one */
            if (out[i] < 0x20 || out[i] == 0x7f) {
                return ngx_mt5_credit_adyen_fail(in, "a signed field holds "
                                                 "a control character");
            }
        }
    }

    to->data = out;
    to->len = n;
    in->a->used += n;

    return 0;
}


/* an item read: what must be there is, and its two strings are built */

static int
ngx_mt5_credit_adyen_finish(ngx_mt5_credit_adyen_in_t *in,
    ngx_mt5_credit_adyen_item_t *item, unsigned seen)
{
    size_t                     i;
    unsigned                   need;
    ngx_mt5_credit_sig_str_t   parts[2 * NGX_MT5_CREDIT_ADYEN_NFIELDS];
    ngx_mt5_credit_sig_str_t  *f;

    f = item->field;

    /* originalReference alone may be absent (it is then "") */

    need = ((1u << NGX_MT5_CREDIT_ADYEN_NFIELDS) - 1)
           & ~(1u << NGX_MT5_CREDIT_ADYEN_ORIGINAL_REFERENCE);

    if ((seen & need) != need) {
        return ngx_mt5_credit_adyen_fail(in, "an item lacks a signed field");
    }

    if (!(seen & NGX_MT5_CREDIT_ADYEN_SEEN_SIGNATURE)) {
        return ngx_mt5_credit_adyen_fail(in, "an item has no "
                                         "additionalData.hmacSignature");
    }

    if (f[NGX_MT5_CREDIT_ADYEN_PSP_REFERENCE].len == 0
        || f[NGX_MT5_CREDIT_ADYEN_EVENT_CODE].len == 0)
    {
        return ngx_mt5_credit_adyen_fail(in, "an item with an empty "
                                         "pspReference or eventCode");
    }

    if (!ngx_mt5_credit_adyen_is(f[NGX_MT5_CREDIT_ADYEN_SUCCESS].data,
                                 f[NGX_MT5_CREDIT_ADYEN_SUCCESS].len, "true")
        && !ngx_mt5_credit_adyen_is(f[NGX_MT5_CREDIT_ADYEN_SUCCESS].data,
                                    f[NGX_MT5_CREDIT_ADYEN_SUCCESS].len,
                                    "false"))
    {
        return ngx_mt5_credit_adyen_fail(in, "an item's success is neither "
                                         "\"true\" nor \"false\"");
    }

    for (i = 0; i < NGX_MT5_CREDIT_ADYEN_NFIELDS; i++) {
        parts[2 * i] = f[i];
        parts[2 * i + 1].data = ngx_mt5_credit_adyen_colon;
        parts[2 * i + 1].len = 1;
    }

    ngx_mt5_credit_adyen_join(in, parts, 2 * NGX_MT5_CREDIT_ADYEN_NFIELDS - 1,
                              &item->signed_text);

    /* the item's identity across Adyen's retries */

    parts[0] = f[NGX_MT5_CREDIT_ADYEN_PSP_REFERENCE];
    parts[2] = f[NGX_MT5_CREDIT_ADYEN_EVENT_CODE];
    parts[4] = f[NGX_MT5_CREDIT_ADYEN_SUCCESS];

    ngx_mt5_credit_adyen_join(in, parts, 5, &item->event_id);

    /* what an event id may be (webhook_event's check) */

    if (item->event_id.len > NGX_MT5_CREDIT_ADYEN_MAX_ID) {
        return ngx_mt5_credit_adyen_fail(in, "an item's pspReference and "
                                         "eventCode are too long for an "
                                         "event id");
    }

    return 0;
}


static unsigned char *
ngx_mt5_credit_adyen_join(ngx_mt5_credit_adyen_in_t *in,
    const ngx_mt5_credit_sig_str_t *parts, size_t n,
    ngx_mt5_credit_sig_str_t *to)
{
    size_t          i;
    unsigned char  *p;

    /* room is certain: ngx_mt5_credit_adyen_scratch() counts it */

    p = in->a->scratch + in->a->used;
    to->data = p;

    for (i = 0; i < n; i++) {
        if (parts[i].len) {
            memcpy(p, parts[i].data, parts[i].len);
            p += parts[i].len;
        }
    }

    to->len = (size_t) (p - to->data);
    in->a->used += to->len;

    return p;
}


/*
 * Any JSON value, checked and skipped.  Strings are decoded into the
 * scratch's free end and forgotten: an unused string must be as valid as
 * a used one, since PostgreSQL reads the whole item.
 */

static int
ngx_mt5_credit_adyen_value(ngx_mt5_credit_adyen_in_t *in)
{
    int     integer;
    size_t  n, l;

    if (in->p >= in->end) {
        return ngx_mt5_credit_adyen_fail(in, "a value expected");
    }

    switch (*in->p) {

    case '{':
        return ngx_mt5_credit_adyen_members(in, NULL, NULL);

    case '[':
        if (++in->depth > NGX_MT5_CREDIT_ADYEN_MAX_DEPTH) {
            return ngx_mt5_credit_adyen_fail(in, "nested too deep");
        }

        in->p++;
        ngx_mt5_credit_adyen_space(in);

        if (in->p < in->end && *in->p == ']') {
            in->p++;
            in->depth--;
            return 0;
        }

        for ( ;; ) {
            ngx_mt5_credit_adyen_space(in);

            if (ngx_mt5_credit_adyen_value(in) != 0) {
                return -1;
            }

            ngx_mt5_credit_adyen_space(in);

            if (in->p < in->end && *in->p == ',') {
                in->p++;
                continue;
            }

            if (ngx_mt5_credit_adyen_expect(in, ']', "',' or ']' expected")
                != 0)
            {
                return -1;
            }

            in->depth--;

            return 0;
        }

    case '"':
        return ngx_mt5_credit_adyen_string(in, in->a->scratch + in->a->used,
                                           in->a->size - in->a->used, &n);

    case 't':
    case 'f':
    case 'n':
        for (n = 0; n < 3; n++) {
            l = strlen(ngx_mt5_credit_adyen_literals[n]);

            if ((size_t) (in->end - in->p) >= l
                && memcmp(in->p, ngx_mt5_credit_adyen_literals[n], l) == 0)
            {
                in->p += l;
                return 0;
            }
        }

        return ngx_mt5_credit_adyen_fail(in, "not a JSON value");

    default:
        return ngx_mt5_credit_adyen_number(in, &integer);
    }
}


/*
 * A string, decoded into out (room bytes; never more than the string's
 * own bytes).  A decoded key longer than room is still checked whole and
 * returned cut, *len then larger than room: it matches no name of ours.
 */

static int
ngx_mt5_credit_adyen_string(ngx_mt5_credit_adyen_in_t *in,
    unsigned char *out, size_t room, size_t *len)
{
    *len = 0;

    if (in->p >= in->end || *in->p != '"') {
        return ngx_mt5_credit_adyen_fail(in, "a string expected");
    }

    in->p++;

    for ( ;; ) {
        if (in->p >= in->end) {
            return ngx_mt5_credit_adyen_fail(in, "a string is not closed");
        }

        if (*in->p == '"') {
            in->p++;
            return 0;
        }

        if (*in->p == '\\') {
            if (ngx_mt5_credit_adyen_escape(in, out, room, len) != 0) {
                return -1;
            }

            continue;
        }

        if (*in->p < 0x20) {
            return ngx_mt5_credit_adyen_fail(in, "a control character in a "
                                             "string");
        }

        if (ngx_mt5_credit_adyen_utf8(in, out, room, len) != 0) {
            return -1;
        }
    }
}


/* appends bytes to a decoded string, counting what does not fit */

static void
ngx_mt5_credit_adyen_put(unsigned char *out, size_t room, size_t *len,
    const unsigned char *b, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++, (*len)++) {
        if (*len < room) {
            out[*len] = b[i];
        }
    }
}


/* one UTF-8 character, well formed (RFC 3629: no overlong form, no
   surrogate, nothing past U+10FFFF), copied */

static int
ngx_mt5_credit_adyen_utf8(ngx_mt5_credit_adyen_in_t *in, unsigned char *out,
    size_t room, size_t *len)
{
    size_t               n, i;
    unsigned             cp, min;
    const unsigned char *p;

    p = in->p;

    if (p[0] < 0x80) {
        n = 1; cp = p[0]; min = 0;

    } else if ((p[0] & 0xe0) == 0xc0) {
        n = 2; cp = p[0] & 0x1f; min = 0x80;

    } else if ((p[0] & 0xf0) == 0xe0) {
        n = 3; cp = p[0] & 0x0f; min = 0x800;

    } else if ((p[0] & 0xf8) == 0xf0) {
        n = 4; cp = p[0] & 0x07; min = 0x10000;

    } else {
        return ngx_mt5_credit_adyen_fail(in, "not UTF-8");
    }

    if ((size_t) (in->end - p) < n) {
        return ngx_mt5_credit_adyen_fail(in, "not UTF-8");
    }

    for (i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) {
            return ngx_mt5_credit_adyen_fail(in, "not UTF-8");
        }

        cp = (cp << 6) | (p[i] & 0x3f);
    }

    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        return ngx_mt5_credit_adyen_fail(in, "not UTF-8");
    }

    ngx_mt5_credit_adyen_put(out, room, len, p, n);
    in->p += n;

    return 0;
}


static int
ngx_mt5_credit_adyen_escape(ngx_mt5_credit_adyen_in_t *in, unsigned char *out,
    size_t room, size_t *len)
{
    size_t         n;
    unsigned       cp, lo;
    unsigned char  b[4];

    if (in->end - in->p < 2) {
        return ngx_mt5_credit_adyen_fail(in, "a string is not closed");
    }

    in->p++;

    switch (*in->p++) {
    case '"':  b[0] = '"';  break;
    case '\\': b[0] = '\\'; break;
    case '/':  b[0] = '/';  break;
    case 'b':  b[0] = '\b'; break;
    case 'f':  b[0] = '\f'; break;
    case 'n':  b[0] = '\n'; break;
    case 'r':  b[0] = '\r'; break;
    case 't':  b[0] = '\t'; break;

    case 'u':
        if (ngx_mt5_credit_adyen_hex4(in, &cp) != 0) {
            return -1;
        }

        /* what PostgreSQL's jsonb refuses is refused here */

        if (cp == 0) {
            return ngx_mt5_credit_adyen_fail(in, "\\u0000 in a string");
        }

        if (cp >= 0xdc00 && cp <= 0xdfff) {
            return ngx_mt5_credit_adyen_fail(in, "a lone low surrogate");
        }

        if (cp >= 0xd800 && cp <= 0xdbff) {
            if (in->end - in->p < 6 || in->p[0] != '\\' || in->p[1] != 'u') {
                return ngx_mt5_credit_adyen_fail(in, "a lone high surrogate");
            }

            in->p += 2;

            if (ngx_mt5_credit_adyen_hex4(in, &lo) != 0) {
                return -1;
            }

            if (lo < 0xdc00 || lo > 0xdfff) {
                return ngx_mt5_credit_adyen_fail(in, "a lone high surrogate");
            }

            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        }

        if (cp < 0x80) {
            b[0] = (unsigned char) cp;
            n = 1;

        } else if (cp < 0x800) {
            b[0] = (unsigned char) (0xc0 | (cp >> 6));
            b[1] = (unsigned char) (0x80 | (cp & 0x3f));
            n = 2;

        } else if (cp < 0x10000) {
            b[0] = (unsigned char) (0xe0 | (cp >> 12));
            b[1] = (unsigned char) (0x80 | ((cp >> 6) & 0x3f));
            b[2] = (unsigned char) (0x80 | (cp & 0x3f));
            n = 3;

        } else {
            b[0] = (unsigned char) (0xf0 | (cp >> 18));
            b[1] = (unsigned char) (0x80 | ((cp >> 12) & 0x3f));
            b[2] = (unsigned char) (0x80 | ((cp >> 6) & 0x3f));
            b[3] = (unsigned char) (0x80 | (cp & 0x3f));
            n = 4;
        }

        ngx_mt5_credit_adyen_put(out, room, len, b, n);

        return 0;

    default:
        in->p--;
        return ngx_mt5_credit_adyen_fail(in, "an unknown escape");
    }

    ngx_mt5_credit_adyen_put(out, room, len, b, 1);

    return 0;
}


static int
ngx_mt5_credit_adyen_hex4(ngx_mt5_credit_adyen_in_t *in, unsigned *cp)
{
    int            i;
    unsigned char  c;

    if (in->end - in->p < 4) {
        return ngx_mt5_credit_adyen_fail(in, "a short \\u escape");
    }

    *cp = 0;

    for (i = 0; i < 4; i++) {
        c = *in->p++;

        if (c >= '0' && c <= '9') {
            *cp = (*cp << 4) | (unsigned) (c - '0');

        } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
            *cp = (*cp << 4) | (unsigned) ((c | 0x20) - 'a' + 10);

        } else {
            return ngx_mt5_credit_adyen_fail(in, "a bad \\u escape");
        }
    }

    return 0;
}


/* RFC 8259's number; *integer: no fraction and no exponent */

static int
ngx_mt5_credit_adyen_number(ngx_mt5_credit_adyen_in_t *in, int *integer)
{
    const unsigned char  *p, *end;

    p = in->p;
    end = in->end;
    *integer = 1;

    if (p < end && *p == '-') {
        p++;
    }

    if (p >= end || *p < '0' || *p > '9') {
        return ngx_mt5_credit_adyen_fail(in, "not a JSON value");
    }

    if (*p == '0') {
        p++;

    } else {
        while (p < end && *p >= '0' && *p <= '9') {
            p++;
        }
    }

    if (p < end && *p == '.') {
        *integer = 0;
        p++;

        if (p >= end || *p < '0' || *p > '9') {
            in->p = p;
            return ngx_mt5_credit_adyen_fail(in, "a bad number");
        }

        while (p < end && *p >= '0' && *p <= '9') {
            p++;
        }
    }

    if (p < end && (*p == 'e' || *p == 'E')) {
        *integer = 0;
        p++;

        if (p < end && (*p == '+' || *p == '-')) {
            p++;
        }

        if (p >= end || *p < '0' || *p > '9') {
            in->p = p;
            return ngx_mt5_credit_adyen_fail(in, "a bad number");
        }

        while (p < end && *p >= '0' && *p <= '9') {
            p++;
        }
    }

    in->p = p;

    return 0;
}


static int
ngx_mt5_credit_adyen_is(const unsigned char *key, size_t len,
    const char *name)
{
    return len == strlen(name) && memcmp(key, name, len) == 0;
}
