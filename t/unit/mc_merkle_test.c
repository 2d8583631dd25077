/*
 * Copyright (C) mt5-credit
 *
 * batch/lib/mc_merkle.c: RFC 6962's Merkle Tree Hash, as the journal's
 * seals sign it (sql/081).  Proves impossible: a root unlike
 * Certificate Transparency's for its published test leaves, or unlike
 * the RFC's recursive definition for any count of leaves up to 300 (the
 * stack's merges at every shape of tree).  Output is TAP.
 *
 *   mc_merkle_test
 */


#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "mc_merkle.h"


static int  tests, failed;


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
hex(const uint8_t *b, char *out)
{
    int  i;

    for (i = 0; i < MC_MERKLE_HASH; i++) {
        sprintf(out + 2 * i, "%02x", b[i]);
    }
}


/* the RFC's definition, word for word */
static void
reference(uint8_t leaves[][MC_MERKLE_HASH], size_t n, uint8_t *out)
{
    size_t   k;
    uint8_t  b[1 + 2 * MC_MERKLE_HASH];

    if (n == 0) {
        SHA256((const uint8_t *) "", 0, out);
        return;
    }
    if (n == 1) {
        b[0] = 0x00;
        memcpy(b + 1, leaves[0], MC_MERKLE_HASH);
        SHA256(b, 1 + MC_MERKLE_HASH, out);
        return;
    }
    for (k = 1; k * 2 < n; k *= 2) {
        /* the largest power of two below n */
    }
    b[0] = 0x01;
    reference(leaves, k, b + 1);
    reference(leaves + k, n - k, b + 1 + MC_MERKLE_HASH);
    SHA256(b, sizeof(b), out);
}


int
main(void)
{
    size_t        n, i;
    char          got[2 * MC_MERKLE_HASH + 1];
    uint8_t       root[MC_MERKLE_HASH], want[MC_MERKLE_HASH];
    mc_merkle_t   m;

    /* certificate-transparency's test leaves and roots (RFC 6962 trees) */
    static const struct { const char *leaf; size_t len; } ct[] = {
        { "", 0 }, { "\x00", 1 }, { "\x10", 1 }, { "\x20\x21", 2 },
        { "\x30\x31", 2 }, { "\x40\x41\x42\x43", 4 },
        { "\x50\x51\x52\x53\x54\x55\x56\x57", 8 },
        { "\x60\x61\x62\x63\x64\x65\x66\x67\x68\x69\x6a\x6b\x6c\x6d\x6e"
          "\x6f", 16 }
    };
    static const char  *ct_roots[] = {
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
        "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
        "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
        "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
        "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
        "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"
    };
    static uint8_t  leaves[300][MC_MERKLE_HASH];

    mc_merkle_init(&m);
    mc_merkle_root(&m, root);
    hex(root, got);
    ok(strcmp(got, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b"
               "7852b855") == 0, "no leaves: SHA-256 of nothing");

    for (n = 0; n < 8; n++) {
        mc_merkle_add(&m, (const uint8_t *) ct[n].leaf, ct[n].len);
        mc_merkle_root(&m, root);
        hex(root, got);
        ok(strcmp(got, ct_roots[n]) == 0, "CT's tree of %zu leaves: %s", n + 1,
           got);
    }

    /* every shape up to 300 leaves against the recursive definition */
    for (i = 0; i < 300; i++) {
        SHA256((const uint8_t *) &i, sizeof(i), leaves[i]);
    }
    for (n = 0; n <= 300; n++) {
        mc_merkle_init(&m);
        for (i = 0; i < n; i++) {
            mc_merkle_add(&m, leaves[i], MC_MERKLE_HASH);
        }
        mc_merkle_root(&m, root);
        reference(leaves, n, want);
        if (memcmp(root, want, MC_MERKLE_HASH) != 0 || n % 50 == 0
            || n < 9)
        {
            ok(memcmp(root, want, MC_MERKLE_HASH) == 0, "%zu leaves: the "
               "RFC's recursive root", n);
        }
    }

    printf("1..%d\n", tests);
    return failed != 0;
}
