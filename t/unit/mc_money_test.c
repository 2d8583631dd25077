/*
 * Copyright (C) mt5-credit
 *
 * batch/lib/mc_money.c: decimal text <-> integer minor units, exactly.
 * Proves impossible: a rounded amount ("64.255" as 6425 or 6426), an
 * exponent, space, comma or second sign taken as a number, an overflow
 * wrapping around, a formatted amount that does not parse back to itself.
 * Output is TAP; exit status 0 only if every test passes.
 *
 *   mc_money_test
 */


#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mc_money.h"


static int  tests, failed;


static void ok(int cond, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void parse_ok(const char *s, int64_t value, int scale);
static void parse_bad(const char *s, size_t len, const char *why);
static void minor_ok(int64_t value, int scale, int digits, int64_t want);
static void minor_bad(int64_t value, int scale, int digits, const char *why);
static void format_ok(int64_t minor, int digits, const char *want);
static void round_trips(void);


static void
ok(int cond, const char *fmt, ...)
{
    va_list  args;

    tests++;

    if (!cond) {
        failed++;
    }

    printf("%sok %d - ", cond ? "" : "not ", tests);
    va_start(args, fmt);
    vprintf(fmt, args);
    va_end(args);
    printf("\n");
}


static void
parse_ok(const char *s, int64_t value, int scale)
{
    int           rc;
    mc_decimal_t  d = { -1, -1 };

    rc = mc_decimal_parse(s, strlen(s), &d);

    ok(rc == 0 && d.value == value && d.scale == scale,
       "parse \"%s\" = %" PRId64 "e-%d (got rc %d, %" PRId64 "e-%d)",
       s, value, scale, rc, d.value, d.scale);
}


static void
parse_bad(const char *s, size_t len, const char *why)
{
    mc_decimal_t  d;

    ok(mc_decimal_parse(s, len, &d) == -1, "parse refuses %s", why);
}


static void
minor_ok(int64_t value, int scale, int digits, int64_t want)
{
    int           rc;
    int64_t       got = 0;
    mc_decimal_t  d = { value, scale };

    rc = mc_decimal_to_minor(d, digits, &got);

    ok(rc == 0 && got == want,
       "%" PRId64 "e-%d with %d digits is %" PRId64 " (got rc %d, %" PRId64
       ")", value, scale, digits, want, rc, got);
}


static void
minor_bad(int64_t value, int scale, int digits, const char *why)
{
    int64_t       got;
    mc_decimal_t  d = { value, scale };

    ok(mc_decimal_to_minor(d, digits, &got) == -1, "to_minor refuses %s",
       why);
}


static void
format_ok(int64_t minor, int digits, const char *want)
{
    int   n;
    char  buf[64];

    n = mc_minor_format(minor, digits, buf, sizeof(buf));

    ok(n == (int) strlen(want) && strcmp(buf, want) == 0,
       "format (%" PRId64 ", %d) = \"%s\" (got %d \"%s\")", minor, digits,
       want, n, n >= 0 ? buf : "");
}


/* every value in a range, every digits: format, parse, back to minor */
static void
round_trips(void)
{
    int           digits, bad, n;
    char          buf[32];
    int64_t       v, back;
    mc_decimal_t  d;

    static const int64_t  edges[] = {
        999999999999999999LL, -999999999999999999LL, 100000000000LL,
        -100000000000LL, 123456789012345678LL
    };

    bad = 0;

    for (digits = 0; digits <= 8; digits++) {
        for (v = -20000; v <= 20000; v++) {
            n = mc_minor_format(v, digits, buf, sizeof(buf));
            if (n < 0 || mc_decimal_parse(buf, (size_t) n, &d) != 0
                || mc_decimal_to_minor(d, digits, &back) != 0 || back != v)
            {
                bad++;
            }
        }

        for (n = 0; n < (int) (sizeof(edges) / sizeof(edges[0])); n++) {
            v = edges[n];
            if (mc_minor_format(v, digits, buf, sizeof(buf)) < 0
                || mc_decimal_parse(buf, strlen(buf), &d) != 0
                || mc_decimal_to_minor(d, digits, &back) != 0 || back != v)
            {
                bad++;
            }
        }
    }

    ok(bad == 0, "format -> parse -> to_minor is the identity for 360054 "
       "values, digits 0..8 (%d failed)", bad);
}


int
main(void)
{
    int           n;
    char          buf[64];
    int64_t       got;
    mc_decimal_t  d;

    /* --- parse ----------------------------------------------------- */

    parse_ok("64.25", 6425, 2);
    parse_ok("64.250", 64250, 3);
    parse_ok("-1000.00", -100000, 2);
    parse_ok("+5", 5, 0);
    parse_ok("0", 0, 0);
    parse_ok("-0", 0, 0);
    parse_ok("0.00", 0, 2);
    parse_ok("0.05", 5, 2);
    parse_ok("-0.05", -5, 2);
    parse_ok("007", 7, 0);
    parse_ok("000000000000000000000001", 1, 0);
    parse_ok("123456789012345678", 123456789012345678LL, 0);
    parse_ok("-999999999999999999", -999999999999999999LL, 0);
    parse_ok("12345678901234567.8", 123456789012345678LL, 1);
    parse_ok("0.000000000000000001", 1, 18);
    parse_ok("0.123456789012345678", 123456789012345678LL, 18);
    parse_ok("1000000000", 1000000000, 0);

    parse_bad("1234567890123456789", 19, "19 significant digits");
    parse_bad("1.234567890123456789", 20, "19 significant digits, dotted");
    parse_bad("0.0000000000000000001", 21, "scale 19");
    parse_bad("1.0000000000000000000", 21, "trailing zeros past scale 18");
    parse_bad("", 0, "the empty string");
    parse_bad("-", 1, "a sign alone");
    parse_bad("+", 1, "a plus alone");
    parse_bad(".5", 2, "no digit before the dot");
    parse_bad("5.", 2, "no digit after the dot");
    parse_bad("-.5", 3, "a sign then a dot");
    parse_bad("1.2.3", 5, "two dots");
    parse_bad("1e5", 3, "an exponent");
    parse_bad("1E-2", 4, "an exponent, upper case");
    parse_bad(" 1", 2, "a leading space");
    parse_bad("1 ", 2, "a trailing space");
    parse_bad("1,50", 4, "a decimal comma");
    parse_bad("1_000", 5, "a digit separator");
    parse_bad("--1", 3, "two signs");
    parse_bad("+-1", 3, "plus minus");
    parse_bad("0x10", 4, "hex");
    parse_bad("NaN", 3, "NaN");
    parse_bad("inf", 3, "inf");
    parse_bad("\xd9\xa1", 2, "an Arabic-Indic digit");
    parse_bad("1\0002", 3, "an embedded NUL");
    parse_bad(NULL, 0, "NULL");

    ok(mc_decimal_parse("12.345", 4, &d) == 0 && d.value == 123
       && d.scale == 1, "parse stops at len (\"12.3\" of \"12.345\")");
    ok(mc_decimal_parse("12.", 2, &d) == 0 && d.value == 12 && d.scale == 0,
       "a dot past len is not seen");

    /* --- to minor -------------------------------------------------- */

    minor_ok(6425, 2, 2, 6425);
    minor_ok(64250, 3, 2, 6425);
    minor_ok(64, 0, 2, 6400);
    minor_ok(-5, 2, 2, -5);
    minor_ok(-100000, 2, 2, -100000);
    minor_ok(0, 18, 2, 0);
    minor_ok(100, 0, 0, 100);
    minor_ok(10, 1, 0, 1);
    minor_ok(1, 0, 18, 1000000000000000000LL);
    minor_ok(92233720368547758LL, 0, 2, 9223372036854775800LL);
    minor_ok(-92233720368547758LL, 0, 2, -9223372036854775800LL);
    minor_ok(123456789012345678LL, 18, 18, 123456789012345678LL);

    minor_bad(64255, 3, 2, "64.255 with 2 digits (no rounding)");
    minor_bad(-64255, 3, 2, "-64.255 with 2 digits");
    minor_bad(1, 1, 0, "0.1 with 0 digits (JPY)");
    minor_bad(1, 18, 2, "1e-18 with 2 digits");
    minor_bad(92233720368547759LL, 0, 2, "just over INT64_MAX");
    minor_bad(-92233720368547759LL, 0, 2, "just under INT64_MIN");
    minor_bad(999999999999999999LL, 0, 2, "1e20 minor units");
    minor_bad(10, 0, 18, "1e19 minor units");
    minor_bad(1, 0, -1, "digits -1");
    minor_bad(1, 0, 19, "digits 19");
    minor_bad(1, 19, 2, "scale 19");
    minor_bad(1, -1, 2, "scale -1");

    got = 42;
    d.value = 64255;
    d.scale = 3;
    ok(mc_decimal_to_minor(d, 2, &got) == -1 && got == 42,
       "a refused conversion leaves *minor alone");

    /* --- format ---------------------------------------------------- */

    format_ok(6425, 2, "64.25");
    format_ok(-5, 2, "-0.05");
    format_ok(5, 2, "0.05");
    format_ok(0, 2, "0.00");
    format_ok(0, 0, "0");
    format_ok(100, 0, "100");
    format_ok(-100, 0, "-100");
    format_ok(-100000, 2, "-1000.00");
    format_ok(1, 8, "0.00000001");
    format_ok(1, 18, "0.000000000000000001");
    format_ok(-1, 18, "-0.000000000000000001");
    format_ok(INT64_MAX, 2, "92233720368547758.07");
    format_ok(INT64_MIN, 2, "-92233720368547758.08");
    format_ok(INT64_MIN, 0, "-9223372036854775808");
    format_ok(INT64_MIN, 18, "-9.223372036854775808");

    n = mc_minor_format(-5, 2, buf, 6);
    ok(n == 5 && strcmp(buf, "-0.05") == 0, "a buffer of len + 1 is enough");
    ok(mc_minor_format(-5, 2, buf, 5) == -1,
       "a buffer without room for the NUL is too small");
    ok(mc_minor_format(INT64_MIN, 0, buf, 21) == 20
       && mc_minor_format(INT64_MIN, 0, buf, 20) == -1,
       "INT64_MIN needs 21 bytes");
    ok(mc_minor_format(1, 0, buf, 0) == -1, "a size 0 buffer");
    ok(mc_minor_format(1, -1, buf, sizeof(buf)) == -1, "digits -1");
    ok(mc_minor_format(1, 19, buf, sizeof(buf)) == -1, "digits 19");

    round_trips();

    printf("1..%d\n", tests);

    return failed ? 1 : 0;
}
