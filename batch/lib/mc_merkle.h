/*
 * Copyright (C) mt5-credit
 */


#ifndef MC_MERKLE_H
#define MC_MERKLE_H


#include <stddef.h>
#include <stdint.h>


#define MC_MERKLE_HASH  32
#define MC_MERKLE_DEPTH 64
#define MC_MERKLE_LEAF_MAX 64        /* a leaf is an entry's hash */


/*
 * RFC 6962's Merkle Tree Hash (Certificate Transparency's) of a list of
 * leaves given one at a time, in order, in memory that grows with the
 * depth only:
 *
 *   MTH({})     = SHA-256()
 *   MTH({d})    = SHA-256(0x00 || d)
 *   MTH(D[n])   = SHA-256(0x01 || MTH(D[0:k]) || MTH(D[k:n])),
 *                 k the largest power of two below n
 */
typedef struct {
    uint8_t   hash[MC_MERKLE_DEPTH][MC_MERKLE_HASH];
    uint64_t  size[MC_MERKLE_DEPTH];   /* leaves under each stacked hash */
    int       top;
    uint64_t  leaves;
} mc_merkle_t;


void mc_merkle_init(mc_merkle_t *m);
void mc_merkle_add(mc_merkle_t *m, const uint8_t *leaf, size_t len);
void mc_merkle_root(const mc_merkle_t *m, uint8_t root[MC_MERKLE_HASH]);


#endif /* MC_MERKLE_H */
