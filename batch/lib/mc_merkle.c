/*
 * Copyright (C) mt5-credit
 *
 * A stack of perfect subtrees, merged as soon as two of one size meet;
 * at the end the subtrees left are joined right to left, which is the
 * RFC's split at the largest power of two (t/unit checks both against a
 * recursive reference).
 */


#include <string.h>

#include <openssl/sha.h>

#include "mc_merkle.h"


static void
mc_merkle_node(const uint8_t *l, const uint8_t *r, uint8_t *out)
{
    uint8_t  b[1 + 2 * MC_MERKLE_HASH];

    b[0] = 0x01;
    memcpy(b + 1, l, MC_MERKLE_HASH);
    memcpy(b + 1 + MC_MERKLE_HASH, r, MC_MERKLE_HASH);
    SHA256(b, sizeof(b), out);
}


void
mc_merkle_init(mc_merkle_t *m)
{
    memset(m, 0, sizeof(mc_merkle_t));
}


void
mc_merkle_add(mc_merkle_t *m, const uint8_t *leaf, size_t len)
{
    uint8_t  b[1 + MC_MERKLE_LEAF_MAX];

    if (len > MC_MERKLE_LEAF_MAX) {
        len = MC_MERKLE_LEAF_MAX;
    }

    b[0] = 0x00;
    memcpy(b + 1, leaf, len);
    SHA256(b, 1 + len, m->hash[m->top]);
    m->size[m->top] = 1;
    m->top++;
    m->leaves++;

    /* 2^64 leaves would need a 65th level: never reached */
    while (m->top >= 2 && m->size[m->top - 1] == m->size[m->top - 2]) {
        mc_merkle_node(m->hash[m->top - 2], m->hash[m->top - 1],
                       m->hash[m->top - 2]);
        m->size[m->top - 2] *= 2;
        m->top--;
    }
}


void
mc_merkle_root(const mc_merkle_t *m, uint8_t root[MC_MERKLE_HASH])
{
    int  i;

    if (m->top == 0) {
        SHA256((const uint8_t *) "", 0, root);
        return;
    }

    memcpy(root, m->hash[m->top - 1], MC_MERKLE_HASH);

    for (i = m->top - 2; i >= 0; i--) {
        mc_merkle_node(m->hash[i], root, root);
    }
}
