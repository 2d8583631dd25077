/*
 * Copyright (C) mt5-credit
 *
 * mt5sim's pure parts against known answers:
 *   - the Web API handshake hashes with the documented vectors
 *     (the MT5 Web API reference, section 2), the non-ASCII vector
 *     (Pässwörd€1), a non-BMP password, and the UTF-8 negative control;
 *   - hex decoding without regard to case;
 *   - money text <-> scaled integers, never a double;
 *   - comment truncation in UTF-16 code units, query decoding, the '\'
 *     escapes, group masks.
 * Prints "ok N - ..." / "not ok N - ..."; exits 1 on any failure.
 */


#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "mt5sim.h"


static int  failures;
static int  checks;


static void
check(int ok, const char *what)
{
    checks++;
    if (!ok) {
        failures++;
    }
    printf("%s %d - %s\n", ok ? "ok" : "not ok", checks, what);
}


static void
check_str(const char *got, const char *want, const char *what)
{
    check(strcmp(got, want) == 0, what);
    if (strcmp(got, want) != 0) {
        printf("#   got  %s\n#   want %s\n", got, want);
    }
}


static void
test_vectors(void)
{
    static const unsigned char  inner[16] = {
        236, 46, 146, 255, 112, 191, 70, 145, 174, 12, 104, 224, 47, 220,
        108, 34
    };
    unsigned char  h[16], srv[16], cli[16], out[16];
    char           hex[33];

    check(mt5sim_auth_password_hash("Password1", h) == 0, "hash Password1");
    mt5sim_hex_encode(h, 16, hex);
    check_str(hex, "904ba8ecb16273d2f0ae9c3b8a023752", "H for Password1");

    /* the documented inner digest, MD5(UTF-16LE("Password1")) */
    check(mt5sim_auth_answer(inner, (const unsigned char *) "WebAPI", 6,
                             out) == 0
          && memcmp(out, h, 16) == 0,
          "H = MD5(documented MD5(UTF-16LE) bytes || WebAPI)");

    check(mt5sim_hex_decode("73007dc7184747ce0f7c98516ef1c851", srv, 16)
          == 0, "srv_rand decodes");
    check(mt5sim_hex_decode("4db98fec17aab4dc5a240bdc659e8395", cli, 16)
          == 0, "cli_rand decodes");

    mt5sim_auth_answer(h, srv, 16, out);
    mt5sim_hex_encode(out, 16, hex);
    check_str(hex, "77fe51827f7fa69dd80fbec9aa33f1bb", "srv_rand_answer");
    mt5sim_auth_answer(h, cli, 16, out);
    mt5sim_hex_encode(out, 16, hex);
    check_str(hex, "1732021b1b332f51660b2b315eed3a35", "cli_rand_answer");

    check(mt5sim_auth_password_hash("P\xc3\xa4sswo\xcc\x88rd", h) == 0,
          "a decomposed umlaut hashes");
    check(mt5sim_auth_password_hash("P\xc3\xa4ssw\xc3\xb6rd\xe2\x82\xac" "1",
                                    h) == 0, "hash Pässwörd€1");
    mt5sim_hex_encode(h, 16, hex);
    check_str(hex, "169ff113d5181c77353f0d70c98d0ed6", "H for Pässwörd€1");
    mt5sim_auth_answer(h, srv, 16, out);
    mt5sim_hex_encode(out, 16, hex);
    check_str(hex, "8e082ab6177d6369a65e3215c2289891",
              "srv_rand_answer for Pässwörd€1");
    mt5sim_auth_answer(h, cli, 16, out);
    mt5sim_hex_encode(out, 16, hex);
    check_str(hex, "e6bafd2e67dd8a0272ce6c35e89f1408",
              "cli_rand_answer for Pässwörd€1");
}


static void
test_negative(void)
{
    unsigned char  h[16], inner[16], wrong[16], srv[16], out[16];
    unsigned int   len = 0;
    char           hex[33];

    /* UTF-8 instead of UTF-16LE: the documented wrong answer */
    check(EVP_Digest("Password1", 9, inner, &len, EVP_md5(), NULL) == 1,
          "MD5 of the UTF-8 bytes");
    mt5sim_auth_answer(inner, (const unsigned char *) "WebAPI", 6, wrong);
    check(mt5sim_auth_password_hash("Password1", h) == 0
          && memcmp(h, wrong, 16) != 0, "H is not the UTF-8 hash");
    mt5sim_hex_decode("73007dc7184747ce0f7c98516ef1c851", srv, 16);
    mt5sim_auth_answer(wrong, srv, 16, out);
    mt5sim_hex_encode(out, 16, hex);
    check(strncmp(hex, "88f76305", 8) == 0,
          "the UTF-8 hash answers 88f76305..., the documented wrong answer");
    mt5sim_auth_answer(h, srv, 16, out);
    mt5sim_hex_encode(out, 16, hex);
    check(strncmp(hex, "88f76305", 8) != 0, "which H never gives");

    check(mt5sim_auth_password_hash("bad\xff", h) != 0,
          "a password that is not UTF-8 is refused");
    check(mt5sim_auth_password_hash("\xed\xa0\x80", h) != 0,
          "a UTF-8-encoded surrogate is refused");

    /* a non-BMP character becomes a surrogate pair, not one unit */
    check(mt5sim_auth_password_hash("\xf0\x9f\x98\x80", h) == 0,
          "an emoji password hashes");
}


static void
test_hex(void)
{
    unsigned char  a[16], b[16];

    check(mt5sim_hex_decode("73007DC7184747CE0F7C98516EF1C851", a, 16) == 0
          && mt5sim_hex_decode("73007dc7184747ce0f7c98516ef1c851", b, 16)
             == 0
          && memcmp(a, b, 16) == 0, "hex case does not matter");
    check(mt5sim_hex_decode("73007dc7184747ce0f7c98516ef1c85", a, 16) != 0,
          "31 hex digits are refused");
    check(mt5sim_hex_decode("73007dc7184747ce0f7c98516ef1c8511", a, 16)
          != 0, "33 hex digits are refused");
    check(mt5sim_hex_decode("g3007dc7184747ce0f7c98516ef1c851", a, 16)
          != 0, "a non-hex digit is refused");
}


static void
money(const char *text, int digits, int want_rc, const char *want)
{
    char     buf[64], what[160];
    int64_t  v = 0;
    int      rc = mt5sim_money_parse(text, digits, &v);

    snprintf(what, sizeof(what), "money \"%s\" (%d digits)", text, digits);
    if (want_rc != 0 || rc != 0) {
        check(rc == want_rc, what);
        return;
    }
    mt5sim_money_format(v, digits, buf, sizeof(buf));
    check_str(buf, want, what);
}


static void
test_money(void)
{
    char     buf[64];

    money("100.50", 2, 0, "100.50");
    money("100.5", 2, 0, "100.50");
    money("100", 2, 0, "100.00");
    money("-12.50", 2, 0, "-12.50");
    money("0.01", 2, 0, "0.01");
    money("007.10", 2, 0, "7.10");
    money("1000000000.00", 2, 0, "1000000000.00");
    money("1500", 0, 0, "1500");
    money("1500.00", 0, 0, "1500");
    money("0.12345678", 8, 0, "0.12345678");
    money("100.001", 2, MT5SIM_MONEY_BAD, "");
    money("1500.5", 0, MT5SIM_MONEY_BAD, "");
    money("1e3", 2, MT5SIM_MONEY_BAD, "");
    money("1.", 2, MT5SIM_MONEY_BAD, "");
    money(".5", 2, MT5SIM_MONEY_BAD, "");
    money("1,5", 2, MT5SIM_MONEY_BAD, "");
    money("", 2, MT5SIM_MONEY_BAD, "");
    money("-", 2, MT5SIM_MONEY_BAD, "");
    money(" 5", 2, MT5SIM_MONEY_BAD, "");
    money("0x10", 2, MT5SIM_MONEY_BAD, "");
    money("12345678901", 2, MT5SIM_MONEY_BIG, "");
    money("99999999999999999999999", 2, MT5SIM_MONEY_BIG, "");

    mt5sim_money_format(-1, 2, buf, sizeof(buf));
    check_str(buf, "0.00", "1e-8 rounds to 0.00, not -0.00");
    mt5sim_money_format(-500000, 2, buf, sizeof(buf));
    check_str(buf, "-0.01", "half away from zero");
    mt5sim_money_format(INT64_MIN + 1, 0, buf, sizeof(buf));
    check(buf[0] == '-', "the smallest value formats");
}


static void
test_text(void)
{
    mt5sim_params_t  p;
    const char      *c40 = "0123456789012345678901234567890123456789";
    char             s[] = "real\\\\usd a\\=b c\\x";

    check(mt5sim_utf16_prefix(c40, 31) == 31, "40 ASCII -> 31");
    check(mt5sim_utf16_prefix("\xc3\xa4\xc3\xa4", 1) == 2,
          "a 2-byte character is one unit");
    check(mt5sim_utf16_prefix("abc\xf0\x9f\x98\x80", 4) == 3,
          "a surrogate pair is never cut in half");
    check(mt5sim_utf16_prefix("abc\xf0\x9f\x98\x80", 5) == 7,
          "a surrogate pair is two units");

    mt5sim_unescape_backslash(s);
    check_str(s, "real\\usd a=b c\\x", "MQ-ESC backslash rules");

    check(mt5sim_params_parse("group=real%5Cusd&comment=a%20b+c&x&login="
                              "70001&bad=%ff", 1, 1, &p) == 0, "parse");
    check_str(mt5sim_param(&p, "group"), "real\\usd", "%5C decodes");
    check_str(mt5sim_param(&p, "comment"), "a b c", "%20 and + decode");
    check_str(mt5sim_param(&p, "x"), "", "a key without a value");
    check(p.bad_utf8, "an invalid UTF-8 value is flagged");
    mt5sim_params_free(&p);
    check(mt5sim_params_parse("a=%00", 0, 0, &p) == 0 && p.bad_utf8,
          "a NUL is flagged");
    mt5sim_params_free(&p);
    check(mt5sim_params_parse("c=a+b", 0, 0, &p) == 0
          && strcmp(mt5sim_param(&p, "c"), "a+b") == 0,
          "'+' stays when plus_is_space is off");
    mt5sim_params_free(&p);

    check(mt5sim_mask_list_match("real\\*", "real\\usd"), "real\\* mask");
    check(mt5sim_mask_list_match("REAL\\USD", "real\\usd"),
          "masks ignore case");
    check(!mt5sim_mask_list_match("demo*", "real\\usd"), "demo* misses");
    check(!mt5sim_mask_list_match("*,!real\\usd", "real\\usd"),
          "! excludes");
    check(mt5sim_mask_list_match("*,!real\\usd", "real\\jpy"),
          "! excludes only its match");
    check(mt5sim_mask_list_match("*usd", "real\\usd")
          && !mt5sim_mask_list_match("*usd", "real\\usdx"),
          "trailing anchor");
}


int
main(void)
{
    test_vectors();
    test_negative();
    test_hex();
    test_money();
    test_text();
    printf("%d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
