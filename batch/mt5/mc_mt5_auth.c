/*
 * Copyright (C) mt5-credit
 *
 * The MT5 Web API handshake hashes; see mc_mt5_auth.h.  OpenSSL EVP for
 * MD5; every intermediate that derives from the password is wiped.
 */


#include <stdint.h>
#include <stdlib.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "mc_mt5_auth.h"


static const unsigned char  mc_mt5_webapi[] = "WebAPI";


static int mc_mt5_utf8_next(const unsigned char *p, size_t len,
    uint32_t *cp);
static int mc_mt5_md5(const unsigned char *a, size_t alen,
    const unsigned char *b, size_t blen, unsigned char md[MC_MT5_MD5_LEN]);
static int mc_mt5_hex_value(char c);


/*
 * One code point from the start of p; returns the bytes it took, or -1.
 * The shortest form only (no overlongs), no surrogates, <= U+10FFFF.
 */
static int
mc_mt5_utf8_next(const unsigned char *p, size_t len, uint32_t *cp)
{
    int       n, i;
    uint32_t  c, min;

    if (p[0] < 0x80) {
        *cp = p[0];
        return 1;
    }

    if ((p[0] & 0xe0) == 0xc0) {
        n = 2; c = p[0] & 0x1f; min = 0x80;

    } else if ((p[0] & 0xf0) == 0xe0) {
        n = 3; c = p[0] & 0x0f; min = 0x800;

    } else if ((p[0] & 0xf8) == 0xf0) {
        n = 4; c = p[0] & 0x07; min = 0x10000;

    } else {
        return -1;
    }

    if ((size_t) n > len) {
        return -1;
    }

    for (i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) {
            return -1;
        }
        c = (c << 6) | (p[i] & 0x3f);
    }

    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) {
        return -1;
    }

    *cp = c;
    return n;
}


long
mc_mt5_utf16le(const char *utf8, size_t len, unsigned char *out, size_t size)
{
    int                   n;
    size_t                i, o;
    uint32_t              c, hi, lo;
    const unsigned char  *p;

    p = (const unsigned char *) utf8;
    o = 0;

    for (i = 0; i < len; i += n) {

        n = mc_mt5_utf8_next(p + i, len - i, &c);
        if (n < 0) {
            return -1;
        }

        if (c < 0x10000) {
            if (o + 2 > size) {
                return -1;
            }
            out[o++] = (unsigned char) (c & 0xff);
            out[o++] = (unsigned char) (c >> 8);
            continue;
        }

        /* a surrogate pair, high unit first, each little-endian */
        c -= 0x10000;
        hi = 0xd800 | (c >> 10);
        lo = 0xdc00 | (c & 0x3ff);

        if (o + 4 > size) {
            return -1;
        }

        out[o++] = (unsigned char) (hi & 0xff);
        out[o++] = (unsigned char) (hi >> 8);
        out[o++] = (unsigned char) (lo & 0xff);
        out[o++] = (unsigned char) (lo >> 8);
    }

    return (long) o;
}


/* MD5(a || b) */
static int
mc_mt5_md5(const unsigned char *a, size_t alen, const unsigned char *b,
    size_t blen, unsigned char md[MC_MT5_MD5_LEN])
{
    int            ok;
    unsigned int   mdlen;
    EVP_MD_CTX    *ctx;

    ctx = EVP_MD_CTX_new();
    if (ctx == NULL) {
        return -1;
    }

    mdlen = 0;

    ok = EVP_DigestInit_ex(ctx, EVP_md5(), NULL)
         && EVP_DigestUpdate(ctx, a, alen)
         && (blen == 0 || EVP_DigestUpdate(ctx, b, blen))
         && EVP_DigestFinal_ex(ctx, md, &mdlen)
         && mdlen == MC_MT5_MD5_LEN;

    EVP_MD_CTX_free(ctx);

    return ok ? 0 : -1;
}


int
mc_mt5_password_hash(const char *password, size_t len,
    unsigned char h[MC_MT5_MD5_LEN])
{
    int             rc;
    long            n;
    size_t          size;
    unsigned char   p[MC_MT5_MD5_LEN];
    unsigned char  *wide;

    /* every UTF-8 byte yields at most 2 bytes of UTF-16 */
    size = 2 * len + 1;
    wide = malloc(size);
    if (wide == NULL) {
        return -1;
    }

    rc = -1;
    n = mc_mt5_utf16le(password, len, wide, size);

    if (n >= 0
        && mc_mt5_md5(wide, (size_t) n, NULL, 0, p) == 0
        && mc_mt5_md5(p, sizeof(p), mc_mt5_webapi,
                      sizeof(mc_mt5_webapi) - 1, h) == 0)
    {
        rc = 0;
    }

    OPENSSL_cleanse(wide, size);
    OPENSSL_cleanse(p, sizeof(p));
    free(wide);

    return rc;
}


int
mc_mt5_rand_answer(const unsigned char h[MC_MT5_MD5_LEN],
    const unsigned char *rand, size_t len, char hex[MC_MT5_HEX_LEN + 1])
{
    unsigned char  md[MC_MT5_MD5_LEN];

    if (mc_mt5_md5(h, MC_MT5_MD5_LEN, rand, len, md) != 0) {
        return -1;
    }

    mc_mt5_hex_encode(md, sizeof(md), hex);
    OPENSSL_cleanse(md, sizeof(md));

    return 0;
}


void
mc_mt5_hex_encode(const unsigned char *in, size_t len, char *out)
{
    size_t             i;
    static const char  digits[] = "0123456789abcdef";

    for (i = 0; i < len; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 0x0f];
    }

    out[2 * len] = '\0';
}


static int
mc_mt5_hex_value(char c)
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


int
mc_mt5_hex_decode(const char *hex, size_t hexlen, unsigned char *out,
    size_t len)
{
    int     hi, lo;
    size_t  i;

    if (hexlen != 2 * len) {
        return -1;
    }

    for (i = 0; i < len; i++) {
        hi = mc_mt5_hex_value(hex[2 * i]);
        lo = mc_mt5_hex_value(hex[2 * i + 1]);

        if (hi < 0 || lo < 0) {
            return -1;
        }

        out[i] = (unsigned char) (hi << 4 | lo);
    }

    return 0;
}
