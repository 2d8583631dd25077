/*
 * Copyright (C) mt5-credit
 *
 * Money as int64 units of 1e-8: decimal text in, decimal text out, never
 * a double.  An amount may carry no more significant decimals than the
 * currency has (trailing zeros beyond them are accepted: "100.00" for a
 * 0-digit currency is 100, "100.5" is refused).
 */


#include <stdio.h>
#include <stdlib.h>

#include "mt5sim.h"


#define MT5SIM_MONEY_MAX_INT_DIGITS  10   /* 9,999,999,999 * 1e8 < 2^63 */


static const int64_t  mt5sim_pow10[] = {
    1LL, 10LL, 100LL, 1000LL, 10000LL, 100000LL, 1000000LL, 10000000LL,
    100000000LL
};


/*
 * "-?[0-9]+(\.[0-9]+)?", a leading '+' tolerated.  Returns 0,
 * MT5SIM_MONEY_BAD (malformed, or too precise for `digits`) or
 * MT5SIM_MONEY_BIG (more than 10 integer digits: above any limit).
 */
int
mt5sim_money_parse(const char *s, int digits, int64_t *out)
{
    int64_t  whole = 0, frac = 0;
    int      neg = 0, sig = 0, i;

    if (s == NULL || digits < 0 || digits > MT5SIM_MONEY_DIGITS) {
        return MT5SIM_MONEY_BAD;
    }
    if (*s == '-' || *s == '+') {
        neg = *s == '-';
        s++;
    }
    if (*s < '0' || *s > '9') {
        return MT5SIM_MONEY_BAD;
    }
    for (; *s >= '0' && *s <= '9'; s++) {
        if (sig == 0 && *s == '0') {
            continue;
        }
        if (++sig <= MT5SIM_MONEY_MAX_INT_DIGITS) {
            whole = whole * 10 + (*s - '0');
        }
    }
    if (*s == '.') {
        s++;
        if (*s < '0' || *s > '9') {
            return MT5SIM_MONEY_BAD;
        }
        for (i = 0; *s >= '0' && *s <= '9'; s++, i++) {
            if (i >= digits && *s != '0') {
                return MT5SIM_MONEY_BAD;
            }
            if (i < MT5SIM_MONEY_DIGITS) {
                frac += (*s - '0') * mt5sim_pow10[MT5SIM_MONEY_DIGITS - 1 - i];
            }
        }
    }
    if (*s != '\0') {
        return MT5SIM_MONEY_BAD;
    }
    if (sig > MT5SIM_MONEY_MAX_INT_DIGITS) {
        return MT5SIM_MONEY_BIG;
    }
    *out = (whole * MT5SIM_MONEY_ONE + frac) * (neg ? -1 : 1);
    return 0;
}


/* a config or control value: a decimal string, or a JSON integer */
int
mt5sim_money_json(json_t *v, int digits, int64_t *out)
{
    json_int_t  i;

    if (v == NULL) {
        *out = 0;
        return 0;
    }
    if (json_is_string(v)) {
        return mt5sim_money_parse(json_string_value(v), digits, out);
    }
    if (json_is_integer(v)) {
        i = json_integer_value(v);
        if (i > 9999999999LL || i < -9999999999LL) {
            return MT5SIM_MONEY_BIG;
        }
        *out = (int64_t) i * MT5SIM_MONEY_ONE;
        return 0;
    }
    return MT5SIM_MONEY_BAD;
}


/*
 * With `digits` decimals, half away from zero (only a group whose digits
 * shrank after the fact can leave anything to round).
 */
void
mt5sim_money_format(int64_t v, int digits, char *buf, size_t n)
{
    uint64_t  a, unit, q, r, scale;

    if (digits < 0) {
        digits = 0;
    }
    if (digits > MT5SIM_MONEY_DIGITS) {
        digits = MT5SIM_MONEY_DIGITS;
    }
    a = v < 0 ? (uint64_t) 0 - (uint64_t) v : (uint64_t) v;
    unit = (uint64_t) mt5sim_pow10[MT5SIM_MONEY_DIGITS - digits];
    q = a / unit;
    r = a % unit;
    if (r * 2 >= unit && r != 0) {
        q++;
    }
    scale = (uint64_t) mt5sim_pow10[digits];
    if (digits == 0) {
        snprintf(buf, n, "%s%llu", v < 0 && q ? "-" : "",
                 (unsigned long long) q);
    } else {
        snprintf(buf, n, "%s%llu.%0*llu", v < 0 && q ? "-" : "",
                 (unsigned long long) (q / scale), digits,
                 (unsigned long long) (q % scale));
    }
}
