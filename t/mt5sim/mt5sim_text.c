/*
 * Copyright (C) mt5-credit
 *
 * Text rules of the MT5 Web API: query strings percent-decoded as UTF-8,
 * the '\' escapes of MQ-ESC, hex, integers, UTF-16 lengths (comments are
 * counted in UTF-16 code units) and group masks with '*' and '!'.
 */


#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "mt5sim.h"


static int mt5sim_hex_value(int c);
static size_t mt5sim_percent_decode(char *s, int plus_is_space);
static int mt5sim_param_push(mt5sim_params_t *p, const char *seg,
    size_t len, int plus_is_space, int backslash_escapes);


static int
mt5sim_hex_value(int c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}


/* exactly 2n hex digits, either case (the reference leaves case open) */
int
mt5sim_hex_decode(const char *hex, unsigned char *out, size_t n)
{
    size_t  i;
    int     hi, lo;

    if (hex == NULL || strlen(hex) != 2 * n) {
        return -1;
    }
    for (i = 0; i < n; i++) {
        hi = mt5sim_hex_value((unsigned char) hex[2 * i]);
        lo = mt5sim_hex_value((unsigned char) hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            return -1;
        }
        out[i] = (unsigned char) (hi << 4 | lo);
    }
    return 0;
}


void
mt5sim_hex_encode(const unsigned char *in, size_t n, char *out)
{
    static const char  digits[] = "0123456789abcdef";
    size_t             i;

    for (i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 0xf];
    }
    out[2 * n] = '\0';
}


/*
 * One code point of strict UTF-8: no overlong forms, no surrogates,
 * nothing above U+10FFFF.  Returns 0 and advances *p, or -1.
 */
int
mt5sim_utf8_next(const unsigned char **p, const unsigned char *end,
    uint32_t *cp)
{
    const unsigned char  *s = *p;
    uint32_t              c, min;
    size_t                need, i;

    if (s >= end) {
        return -1;
    }
    c = s[0];
    if (c < 0x80) {
        *cp = c;
        *p = s + 1;
        return 0;
    }
    if ((c & 0xe0) == 0xc0) {
        need = 1; c &= 0x1f; min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
        need = 2; c &= 0x0f; min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
        need = 3; c &= 0x07; min = 0x10000;
    } else {
        return -1;
    }
    if ((size_t) (end - s) < need + 1) {
        return -1;
    }
    for (i = 1; i <= need; i++) {
        if ((s[i] & 0xc0) != 0x80) {
            return -1;
        }
        c = c << 6 | (s[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) {
        return -1;
    }
    *cp = c;
    *p = s + need + 1;
    return 0;
}


int
mt5sim_utf8_valid(const char *s, size_t len)
{
    const unsigned char  *p = (const unsigned char *) s;
    const unsigned char  *end = p + len;
    uint32_t              cp;

    while (p < end) {
        if (mt5sim_utf8_next(&p, end, &cp) != 0 || cp == 0) {
            return 0;
        }
    }
    return 1;
}


/*
 * Bytes of the longest prefix of valid UTF-8 `s` that fits in `units`
 * UTF-16 code units.  A character outside the BMP takes two units and is
 * never cut in half (the reference leaves that case UNCONFIRMED).
 */
size_t
mt5sim_utf16_prefix(const char *s, size_t units)
{
    const unsigned char  *p = (const unsigned char *) s;
    const unsigned char  *end = p + strlen(s);
    const unsigned char  *prev;
    uint32_t              cp;
    size_t                used = 0, w;

    while (p < end) {
        prev = p;
        if (mt5sim_utf8_next(&p, end, &cp) != 0) {
            return (size_t) (prev - (const unsigned char *) s);
        }
        w = cp >= 0x10000 ? 2 : 1;
        if (used + w > units) {
            return (size_t) (prev - (const unsigned char *) s);
        }
        used += w;
    }
    return (size_t) (p - (const unsigned char *) s);
}


/*
 * MQ-ESC: '=', '|', '\' and line feed are preceded by '\'; a '\' before
 * anything else is literal, so "real\usd" and "real\\usd" are one name.
 */
void
mt5sim_unescape_backslash(char *s)
{
    char  *w = s;

    while (*s) {
        if (s[0] == '\\' && (s[1] == '=' || s[1] == '|' || s[1] == '\\'
                             || s[1] == '\n'))
        {
            s++;
        }
        *w++ = *s++;
    }
    *w = '\0';
}


/* in place; a '%' not followed by two hex digits stays literal */
static size_t
mt5sim_percent_decode(char *s, int plus_is_space)
{
    char  *r = s, *w = s;
    int    hi, lo;

    while (*r) {
        if (r[0] == '%' && (hi = mt5sim_hex_value((unsigned char) r[1])) >= 0
            && (lo = mt5sim_hex_value((unsigned char) r[2])) >= 0)
        {
            *w++ = (char) (hi << 4 | lo);
            r += 3;
        } else if (r[0] == '+' && plus_is_space) {
            *w++ = ' ';
            r++;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
    return (size_t) (w - s);
}


static int
mt5sim_param_push(mt5sim_params_t *p, const char *seg, size_t len,
    int plus_is_space, int backslash_escapes)
{
    mt5sim_param_t  *v;
    const char      *eq;
    char            *key, *value;
    size_t           klen, n;

    eq = memchr(seg, '=', len);
    klen = eq ? (size_t) (eq - seg) : len;

    key = strndup(seg, klen);
    value = eq ? strndup(eq + 1, len - klen - 1) : strdup("");
    v = realloc(p->v, (p->n + 1) * sizeof(*v));
    if (key == NULL || value == NULL || v == NULL) {
        free(key);
        free(value);
        if (v) {
            p->v = v;
        }
        return -1;
    }
    p->v = v;

    n = mt5sim_percent_decode(key, plus_is_space);
    if (n != strlen(key) || !mt5sim_utf8_valid(key, n)) {
        p->bad_utf8 = 1;
    }
    n = mt5sim_percent_decode(value, plus_is_space);
    if (n != strlen(value) || !mt5sim_utf8_valid(value, n)) {
        p->bad_utf8 = 1;
    }
    if (backslash_escapes) {
        mt5sim_unescape_backslash(value);
    }

    p->v[p->n].key = key;
    p->v[p->n].value = value;
    p->n++;
    return 0;
}


/* "a=1&b=x%20y"; `query` may be NULL */
int
mt5sim_params_parse(const char *query, int plus_is_space,
    int backslash_escapes, mt5sim_params_t *out)
{
    const char  *seg, *amp;
    size_t       len;

    memset(out, 0, sizeof(*out));
    if (query == NULL) {
        return 0;
    }
    for (seg = query; *seg; seg = amp ? amp + 1 : seg + len) {
        amp = strchr(seg, '&');
        len = amp ? (size_t) (amp - seg) : strlen(seg);
        if (len > 0 && mt5sim_param_push(out, seg, len, plus_is_space,
                                          backslash_escapes) != 0)
        {
            mt5sim_params_free(out);
            return -1;
        }
        if (amp == NULL) {
            break;
        }
    }
    return 0;
}


void
mt5sim_params_free(mt5sim_params_t *p)
{
    size_t  i;

    for (i = 0; i < p->n; i++) {
        free(p->v[i].key);
        free(p->v[i].value);
    }
    free(p->v);
    memset(p, 0, sizeof(*p));
}


/* the first value of `key`, or NULL */
const char *
mt5sim_param(const mt5sim_params_t *p, const char *key)
{
    size_t  i;

    for (i = 0; i < p->n; i++) {
        if (strcmp(p->v[i].key, key) == 0) {
            return p->v[i].value;
        }
    }
    return NULL;
}


/* plain decimal digits only: no sign, no space, no "0x" */
int
mt5sim_parse_u64(const char *s, uint64_t *out)
{
    uint64_t  v = 0;

    if (s == NULL || *s == '\0') {
        return -1;
    }
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10) {
            return -1;
        }
        v = v * 10 + (uint64_t) (*s - '0');
    }
    *out = v;
    return 0;
}


int
mt5sim_parse_i64(const char *s, int64_t *out)
{
    uint64_t  v;
    int       neg = 0;

    if (s != NULL && *s == '-') {
        neg = 1;
        s++;
    }
    if (mt5sim_parse_u64(s, &v) != 0 || v > (uint64_t) INT64_MAX) {
        return -1;
    }
    *out = neg ? -(int64_t) v : (int64_t) v;
    return 0;
}


/* one mask, '*' = any run of characters, ASCII case-insensitive */
int
mt5sim_mask_match(const char *mask, size_t mlen, const char *name)
{
    const char  *m = mask, *mend = mask + mlen;
    const char  *star = NULL, *back = NULL;

    while (*name) {
        if (m < mend && *m == '*') {
            star = ++m;
            back = name;
        } else if (m < mend
                   && tolower((unsigned char) *m)
                      == tolower((unsigned char) *name))
        {
            m++;
            name++;
        } else if (star) {
            m = star;
            name = ++back;
        } else {
            return 0;
        }
    }
    while (m < mend && *m == '*') {
        m++;
    }
    return m == mend;
}


/*
 * A name matches a mask set when it matches a positive mask and no '!'
 * mask.  A set of exclusions only reads as "everything but".
 */
int
mt5sim_masks_match(const char *const *masks, size_t n, const char *name)
{
    size_t  i;
    int     positive = 0, hit = 0;

    for (i = 0; i < n; i++) {
        if (masks[i][0] == '!') {
            if (mt5sim_mask_match(masks[i] + 1, strlen(masks[i] + 1), name)) {
                return 0;
            }
            continue;
        }
        positive = 1;
        if (mt5sim_mask_match(masks[i], strlen(masks[i]), name)) {
            hit = 1;
        }
    }
    return hit || !positive;
}


/* the same over "demo*,!demoforex" */
int
mt5sim_mask_list_match(const char *list, const char *name)
{
    const char  *p, *comma;
    size_t       len;
    int          positive = 0, hit = 0;

    for (p = list; ; p = comma + 1) {
        comma = strchr(p, ',');
        len = comma ? (size_t) (comma - p) : strlen(p);
        if (len > 0 && p[0] == '!') {
            if (mt5sim_mask_match(p + 1, len - 1, name)) {
                return 0;
            }
        } else if (len > 0) {
            positive = 1;
            if (mt5sim_mask_match(p, len, name)) {
                hit = 1;
            }
        }
        if (comma == NULL) {
            break;
        }
    }
    return hit || !positive;
}
