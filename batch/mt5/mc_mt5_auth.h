/*
 * Copyright (C) mt5-credit
 *
 * The hash steps of the MT5 Web API manager handshake (mt5-webapi.md
 * section 2), apart from the transport so the unit test can replay the
 * documented vectors:
 *
 *   P = MD5(UTF-16LE(password))           16 raw bytes, no BOM, no NUL
 *   H = MD5(P || "WebAPI")                the "password hash"
 *   answer(rand) = hex(MD5(H || rand))    srv_rand_answer, cli_rand_answer
 *
 * Internal to batch/: mc_mt5.c and the tests include it, nothing else.
 * Callers wipe H (OPENSSL_cleanse) when they are done with it.
 */


#ifndef MC_MT5_AUTH_H
#define MC_MT5_AUTH_H


#include <stddef.h>


#define MC_MT5_MD5_LEN     16
#define MC_MT5_RAND_LEN    16
#define MC_MT5_HEX_LEN     (2 * MC_MT5_MD5_LEN)     /* 32, without NUL */


/*
 * UTF-8 -> UTF-16LE, strict: overlong forms, surrogate code points,
 * values above U+10FFFF and truncated sequences are refused; code points
 * above U+FFFF become surrogate pairs.  `out` needs 2 * len bytes at most.
 * Returns the number of bytes written, or -1.
 */
long mc_mt5_utf16le(const char *utf8, size_t len, unsigned char *out,
    size_t size);

/* H from the password's UTF-8 text; 0, or -1 (bad UTF-8, OpenSSL) */
int mc_mt5_password_hash(const char *password, size_t len,
    unsigned char h[MC_MT5_MD5_LEN]);

/* hex(MD5(H || rand)) in lowercase, NUL-terminated; 0 or -1 */
int mc_mt5_rand_answer(const unsigned char h[MC_MT5_MD5_LEN],
    const unsigned char *rand, size_t len, char hex[MC_MT5_HEX_LEN + 1]);

/* lowercase hex of len bytes, NUL-terminated (out: 2 * len + 1) */
void mc_mt5_hex_encode(const unsigned char *in, size_t len, char *out);

/*
 * Exactly 2 * len hex digits of either case -> len bytes.
 * Returns 0, or -1 for any other text.
 */
int mc_mt5_hex_decode(const char *hex, size_t hexlen, unsigned char *out,
    size_t len);


#endif /* MC_MT5_AUTH_H */
