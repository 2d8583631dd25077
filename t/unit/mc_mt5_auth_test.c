/*
 * Copyright (C) mt5-credit
 *
 * batch/mt5/mc_mt5_auth.c against the handshake vectors of mt5-webapi.md
 * section 2 (MetaQuotes' Password1, the non-ASCII Pässwörd€1), plus the
 * UTF-8 -> UTF-16LE conversion on its own.
 * Proves impossible: a password hashed as UTF-8 (or with a BOM, a NUL, a
 * hex digest in place of the raw one) passing; a non-BMP character
 * encoded other than as a surrogate pair; malformed UTF-8 (overlong,
 * surrogate, > U+10FFFF, truncated) hashed as if it were a password.
 * Output is TAP; exit status 0 only if every test passes.
 *
 *   mc_mt5_auth_test
 */


#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "mc_mt5_auth.h"


#define SRV_RAND  "73007dc7184747ce0f7c98516ef1c851"
#define CLI_RAND  "4db98fec17aab4dc5a240bdc659e8395"


static int  tests, failed;


static void ok(int cond, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void vector(const char *password, const char *h, const char *srv,
    const char *cli);
static void wide_ok(const char *utf8, size_t len, const char *hex,
    const char *what);
static void wide_bad(const char *utf8, size_t len, const char *what);
static void utf8_control(void);


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
vector(const char *password, const char *h, const char *srv,
    const char *cli)
{
    char           hex[MC_MT5_HEX_LEN + 1];
    unsigned char  hash[MC_MT5_MD5_LEN], rnd[MC_MT5_RAND_LEN];

    ok(mc_mt5_password_hash(password, strlen(password), hash) == 0,
       "%s: hashed", password);

    mc_mt5_hex_encode(hash, sizeof(hash), hex);
    ok(strcmp(hex, h) == 0, "%s: H = %s (got %s)", password, h, hex);

    mc_mt5_hex_decode(SRV_RAND, 32, rnd, sizeof(rnd));
    ok(mc_mt5_rand_answer(hash, rnd, sizeof(rnd), hex) == 0
       && strcmp(hex, srv) == 0, "%s: srv_rand_answer = %s (got %s)",
       password, srv, hex);

    mc_mt5_hex_decode(CLI_RAND, 32, rnd, sizeof(rnd));
    ok(mc_mt5_rand_answer(hash, rnd, sizeof(rnd), hex) == 0
       && strcmp(hex, cli) == 0, "%s: cli_rand_answer = %s (got %s)",
       password, cli, hex);
}


static void
wide_ok(const char *utf8, size_t len, const char *hex, const char *what)
{
    long           n;
    char           got[64];
    unsigned char  out[32];

    n = mc_mt5_utf16le(utf8, len, out, sizeof(out));
    if (n >= 0) {
        mc_mt5_hex_encode(out, (size_t) n, got);
    } else {
        strcpy(got, "(refused)");
    }

    ok(n >= 0 && strcmp(got, hex) == 0, "UTF-16LE of %s is %s (got %s)",
       what, hex, got);
}


static void
wide_bad(const char *utf8, size_t len, const char *what)
{
    unsigned char  out[32];

    ok(mc_mt5_utf16le(utf8, len, out, sizeof(out)) == -1,
       "UTF-16LE refuses %s", what);
}


/* the mistakes a client can make, each proven to give another answer */
static void
utf8_control(void)
{
    char           hex[MC_MT5_HEX_LEN + 1], good[MC_MT5_HEX_LEN + 1];
    unsigned int   n;
    unsigned char  p[MC_MT5_MD5_LEN], h[MC_MT5_MD5_LEN], rnd[16];
    unsigned char  buf[64];

    mc_mt5_hex_decode(SRV_RAND, 32, rnd, sizeof(rnd));

    mc_mt5_password_hash("Password1", 9, h);
    mc_mt5_rand_answer(h, rnd, sizeof(rnd), good);

    /* MD5 of the UTF-8 bytes: section 2's negative control */
    EVP_Digest("Password1", 9, p, &n, EVP_md5(), NULL);
    memcpy(buf, p, 16);
    memcpy(buf + 16, "WebAPI", 6);
    EVP_Digest(buf, 22, h, &n, EVP_md5(), NULL);
    mc_mt5_rand_answer(h, rnd, sizeof(rnd), hex);

    ok(strncmp(hex, "88f76305", 8) == 0,
       "UTF-8 instead of UTF-16LE gives srv_rand_answer 88f76305... "
       "(got %s)", hex);
    ok(strcmp(hex, good) != 0, "and that is not the documented answer");

    /* a BOM in front */
    memcpy(buf, "\xff\xfe", 2);
    n = (unsigned int) mc_mt5_utf16le("Password1", 9, buf + 2, 62);
    EVP_Digest(buf, n + 2, p, &n, EVP_md5(), NULL);
    memcpy(buf, p, 16);
    memcpy(buf + 16, "WebAPI", 6);
    EVP_Digest(buf, 22, h, &n, EVP_md5(), NULL);
    mc_mt5_rand_answer(h, rnd, sizeof(rnd), hex);
    ok(strcmp(hex, good) != 0, "a BOM gives another answer");

    /* the hex text of P in place of its 16 raw bytes */
    n = (unsigned int) mc_mt5_utf16le("Password1", 9, buf, 64);
    EVP_Digest(buf, n, p, &n, EVP_md5(), NULL);
    mc_mt5_hex_encode(p, 16, (char *) buf);
    memcpy(buf + 32, "WebAPI", 6);
    EVP_Digest(buf, 38, h, &n, EVP_md5(), NULL);
    mc_mt5_rand_answer(h, rnd, sizeof(rnd), hex);
    ok(strcmp(hex, good) != 0, "hex(P) || WebAPI gives another answer");

    /* a terminator hashed with the password */
    mc_mt5_password_hash("Password1", 10, h);
    mc_mt5_rand_answer(h, rnd, sizeof(rnd), hex);
    ok(strcmp(hex, good) != 0, "a NUL terminator gives another answer");
}


int
main(void)
{
    long           n;
    char           hex[64];
    unsigned char  h[MC_MT5_MD5_LEN], out[16], wide[64];

    static const unsigned char  p1[] = {
        236, 46, 146, 255, 112, 191, 70, 145,
        174, 12, 104, 224, 47, 220, 108, 34
    };

    /* --- the documented vectors ------------------------------------- */

    n = mc_mt5_utf16le("Password1", 9, wide, sizeof(wide));
    EVP_Digest(wide, (size_t) n, h, NULL, EVP_md5(), NULL);
    ok(n == 18 && memcmp(h, p1, 16) == 0,
       "Password1: MD5(UTF-16LE) is [236,46,146,255,...,108,34]");

    vector("Password1", "904ba8ecb16273d2f0ae9c3b8a023752",
           "77fe51827f7fa69dd80fbec9aa33f1bb",
           "1732021b1b332f51660b2b315eed3a35");

    vector("P\xc3\xa4ssw\xc3\xb6rd\xe2\x82\xac" "1",
           "169ff113d5181c77353f0d70c98d0ed6",
           "8e082ab6177d6369a65e3215c2289891",
           "e6bafd2e67dd8a0272ce6c35e89f1408");

    /* p, U+1F600, w: computed with Python's hashlib */
    vector("p\xf0\x9f\x98\x80w", "63ce5a592e9b50bf7b011db85bbcf0d4",
           "f8d384b804757b9ddb293f9f2f413e73",
           "ef13ecf6090ad04a7bbf64dd60e67983");

    utf8_control();

    /* --- UTF-8 -> UTF-16LE ------------------------------------------- */

    wide_ok("", 0, "", "the empty string");
    wide_ok("A", 1, "4100", "A");
    wide_ok("\xc3\xa4", 2, "e400", "U+00E4 (2 bytes)");
    wide_ok("\xe2\x82\xac", 3, "ac20", "U+20AC (3 bytes)");
    wide_ok("\xef\xbf\xbd", 3, "fdff", "U+FFFD");
    wide_ok("\xf0\x9f\x98\x80", 4, "3dd800de",
            "U+1F600 as the pair D83D DE00");
    wide_ok("\xf0\x90\x80\x80", 4, "00d800dc", "U+10000 as D800 DC00");
    wide_ok("\xf4\x8f\xbf\xbf", 4, "ffdbffdf", "U+10FFFF as DBFF DFFF");
    wide_ok("p\xf0\x9f\x98\x80w", 6, "70003dd800de7700", "p U+1F600 w");

    wide_bad("\x80", 1, "a lone continuation byte");
    wide_bad("\xc0\xaf", 2, "an overlong 2-byte '/'");
    wide_bad("\xe0\x80\xaf", 3, "an overlong 3-byte '/'");
    wide_bad("\xf0\x80\x80\xaf", 4, "an overlong 4-byte '/'");
    wide_bad("\xed\xa0\x80", 3, "an encoded surrogate (U+D800)");
    wide_bad("\xf4\x90\x80\x80", 4, "U+110000");
    wide_bad("\xe2\x82", 2, "a truncated sequence");
    wide_bad("\xe2\x28\xac", 3, "a bad continuation byte");
    wide_bad("\xf8\x88\x80\x80\x80", 5, "a 5-byte form");
    wide_bad("\xfe", 1, "0xFE");

    ok(mc_mt5_utf16le("abc", 3, out, 5) == -1,
       "UTF-16LE refuses an output buffer too small");
    ok(mc_mt5_password_hash("\xc3", 1, h) == -1,
       "a password that is not UTF-8 is not hashed");

    /* --- hex --------------------------------------------------------- */

    ok(mc_mt5_hex_decode("73007DC7184747CE0F7C98516EF1C851", 32, out, 16)
       == 0 && (mc_mt5_hex_encode(out, 16, hex), strcmp(hex, SRV_RAND) == 0),
       "upper-case hex decodes to the same bytes");
    ok(mc_mt5_hex_decode(SRV_RAND, 30, out, 16) == -1,
       "hex of the wrong length is refused");
    ok(mc_mt5_hex_decode("g3007dc7184747ce0f7c98516ef1c851", 32, out, 16)
       == -1, "a non-hex digit is refused");
    ok(mc_mt5_hex_decode(" 3007dc7184747ce0f7c98516ef1c851", 32, out, 16)
       == -1, "a space is refused");

    printf("1..%d\n", tests);

    return failed ? 1 : 0;
}
