/*
 * Copyright (C) mt5-credit
 *
 * Exact money.  Amounts live as integer minor units everywhere; MT5 speaks
 * decimal text ("64.25", "-1000.00").  These functions convert between
 * the two without floating point, and refuse what cannot be converted
 * exactly instead of rounding it.
 */


#ifndef MC_MONEY_H
#define MC_MONEY_H


#include <stddef.h>
#include <stdint.h>


/* value * 10^-scale, exactly; scale 0..18 */
typedef struct {
    int64_t   value;
    int       scale;
} mc_decimal_t;


/*
 * Parses "[-+]digits[.digits]" (no exponent, no spaces, at most 18
 * significant digits).  Returns 0, or -1 for anything else.
 */
int mc_decimal_parse(const char *s, size_t len, mc_decimal_t *d);

/*
 * The decimal as integer minor units of a currency with `digits` decimals,
 * exactly: "64.25" with digits 2 is 6425, "64.250" too, "64.255" fails.
 * Returns 0, or -1 if it is not representable exactly or overflows.
 */
int mc_decimal_to_minor(mc_decimal_t d, int digits, int64_t *minor);

/*
 * Formats minor units as decimal text with exactly `digits` decimals:
 * (6425, 2) -> "64.25", (-5, 2) -> "-0.05", (100, 0) -> "100".
 * Returns the length written, or -1 if buf is too small.
 */
int mc_minor_format(int64_t minor, int digits, char *buf, size_t size);


#endif /* MC_MONEY_H */
