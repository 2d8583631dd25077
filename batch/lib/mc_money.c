/*
 * Copyright (C) mt5-credit
 *
 * Exact decimal text <-> integer minor units; see mc_money.h.
 * Integer arithmetic only: every bound is checked before it is crossed,
 * so nothing overflows and nothing is rounded.
 */


#include <stdint.h>
#include <string.h>

#include "mc_money.h"


#define MC_MONEY_MAX_SCALE   18
#define MC_MONEY_MAX_DIGITS  18      /* 10^18 - 1 < INT64_MAX */


static int mc_money_pow10(int n, int64_t *p);


/* 10^n for n in 0..18 */
static int
mc_money_pow10(int n, int64_t *p)
{
    int64_t  v;

    if (n < 0 || n > MC_MONEY_MAX_SCALE) {
        return -1;
    }

    for (v = 1; n > 0; n--) {
        v *= 10;
    }

    *p = v;
    return 0;
}


int
mc_decimal_parse(const char *s, size_t len, mc_decimal_t *d)
{
    int       negative, scale, significant, dot;
    size_t    i, digits;
    int64_t   value;

    if (s == NULL || len == 0) {
        return -1;
    }

    i = 0;
    negative = 0;

    if (s[0] == '-' || s[0] == '+') {
        negative = (s[0] == '-');
        i = 1;
    }

    value = 0;
    scale = 0;
    significant = 0;
    dot = 0;
    digits = 0;

    for ( /* void */ ; i < len; i++) {

        if (s[i] == '.') {
            /* one dot, with digits on both sides */
            if (dot || digits == 0 || i + 1 == len) {
                return -1;
            }
            dot = 1;
            continue;
        }

        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }

        digits++;

        if (dot) {
            if (++scale > MC_MONEY_MAX_SCALE) {
                return -1;
            }
        }

        /* leading zeros are not significant and cannot overflow */
        if (value == 0 && s[i] == '0') {
            continue;
        }

        if (++significant > MC_MONEY_MAX_DIGITS) {
            return -1;
        }

        value = value * 10 + (s[i] - '0');
    }

    if (digits == 0) {
        return -1;
    }

    d->value = negative ? -value : value;
    d->scale = scale;

    return 0;
}


int
mc_decimal_to_minor(mc_decimal_t d, int digits, int64_t *minor)
{
    int64_t  p;

    if (d.scale < 0 || d.scale > MC_MONEY_MAX_SCALE
        || digits < 0 || digits > MC_MONEY_MAX_SCALE)
    {
        return -1;
    }

    if (d.scale > digits) {
        /* "64.250" -> 6425 with 2 digits; "64.255" has no such value */
        if (mc_money_pow10(d.scale - digits, &p) != 0 || d.value % p != 0) {
            return -1;
        }

        *minor = d.value / p;
        return 0;
    }

    if (mc_money_pow10(digits - d.scale, &p) != 0) {
        return -1;
    }

    if (d.value > INT64_MAX / p || d.value < INT64_MIN / p) {
        return -1;
    }

    *minor = d.value * p;
    return 0;
}


int
mc_minor_format(int64_t minor, int digits, char *buf, size_t size)
{
    char      tmp[24];    /* 20 digits of UINT64_MAX, plus slack */
    size_t    n, len, i;
    uint64_t  mag;

    if (digits < 0 || digits > MC_MONEY_MAX_SCALE || buf == NULL) {
        return -1;
    }

    /* the magnitude as unsigned, so INT64_MIN has one too */
    mag = minor < 0 ? (uint64_t) 0 - (uint64_t) minor : (uint64_t) minor;

    /* digits in reverse, at least digits + 1 of them ("0.05") */
    n = 0;
    do {
        tmp[n++] = (char) ('0' + mag % 10);
        mag /= 10;
    } while (mag != 0 || n < (size_t) digits + 1);

    len = n + (minor < 0) + (digits > 0);

    if (len + 1 > size) {
        return -1;
    }

    i = 0;

    if (minor < 0) {
        buf[i++] = '-';
    }

    while (n > 0) {
        if (n == (size_t) digits && digits > 0) {
            buf[i++] = '.';
        }
        buf[i++] = tmp[--n];
    }

    buf[i] = '\0';

    return (int) i;
}
