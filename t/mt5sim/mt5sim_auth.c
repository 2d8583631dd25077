/*
 * Copyright (C) mt5-credit
 *
 * The Web API handshake hashes (reference section 2, MQ-AUTH):
 *   H      = MD5( MD5(UTF-16LE(password)) || "WebAPI" )
 *   answer = MD5( H || rand )
 * The password is UTF-8 in the config; it becomes UTF-16LE with surrogate
 * pairs, no BOM, no terminator.  Raw digests are chained, never hex.
 */


#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "mt5sim.h"


static int mt5sim_md5(const unsigned char *a, size_t alen,
    const unsigned char *b, size_t blen, unsigned char out[16]);


static int
mt5sim_md5(const unsigned char *a, size_t alen, const unsigned char *b,
    size_t blen, unsigned char out[16])
{
    EVP_MD_CTX    *ctx;
    unsigned int   len = 0;
    int            ok;

    ctx = EVP_MD_CTX_new();
    if (ctx == NULL) {
        return -1;
    }
    ok = EVP_DigestInit_ex(ctx, EVP_md5(), NULL)
         && EVP_DigestUpdate(ctx, a, alen)
         && (blen == 0 || EVP_DigestUpdate(ctx, b, blen))
         && EVP_DigestFinal_ex(ctx, out, &len)
         && len == 16;
    EVP_MD_CTX_free(ctx);
    return ok ? 0 : -1;
}


/* -1 when the password is not UTF-8 (or hashing failed) */
int
mt5sim_auth_password_hash(const char *password, unsigned char h[16])
{
    static const unsigned char  webapi[] = "WebAPI";
    const unsigned char        *p = (const unsigned char *) password;
    const unsigned char        *end = p + strlen(password);
    unsigned char              *wide, *w, inner[16];
    uint32_t                    cp, hi, lo;
    int                         rc;

    /* at most two UTF-16 units (4 bytes) per UTF-8 byte */
    wide = malloc(4 * (size_t) (end - p) + 1);
    if (wide == NULL) {
        return -1;
    }
    for (w = wide; p < end; ) {
        if (mt5sim_utf8_next(&p, end, &cp) != 0) {
            free(wide);
            return -1;
        }
        if (cp >= 0x10000) {
            cp -= 0x10000;
            hi = 0xd800 | (cp >> 10);
            lo = 0xdc00 | (cp & 0x3ff);
            *w++ = hi & 0xff; *w++ = hi >> 8;
            *w++ = lo & 0xff; *w++ = lo >> 8;
        } else {
            *w++ = cp & 0xff; *w++ = cp >> 8;
        }
    }

    rc = mt5sim_md5(wide, (size_t) (w - wide), NULL, 0, inner);
    free(wide);
    if (rc != 0) {
        return -1;
    }
    return mt5sim_md5(inner, sizeof(inner), webapi, sizeof(webapi) - 1, h);
}


int
mt5sim_auth_answer(const unsigned char h[16], const unsigned char *rand,
    size_t n, unsigned char out[16])
{
    return mt5sim_md5(h, 16, rand, n, out);
}


int
mt5sim_auth_random(unsigned char *buf, size_t n)
{
    return RAND_bytes(buf, (int) n) == 1 ? 0 : -1;
}
