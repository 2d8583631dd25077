/*
 * Copyright (C) mt5-credit
 */


#ifndef MC_AUDIT_HEADS_H
#define MC_AUDIT_HEADS_H


#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

#include "mc_merkle.h"


#define MC_AUDIT_LINE_MAX  4096
#define MC_AUDIT_SIG       64


/* one signed head: a sealed period of the journal (sql/081) */
typedef struct {
    int       period;
    char      from_xid[24];
    char      to_xid[24];
    uint64_t  from;              /* the same, as numbers */
    uint64_t  to;
    int64_t   entries;
    int64_t   last_id;           /* the period's newest entry; 0: none */
    char      root[2 * MC_MERKLE_HASH + 1];
    char      prev[2 * MC_MERKLE_HASH + 1];
    char      system_identifier[32];
    int       timeline;
    char      self[2 * MC_MERKLE_HASH + 1];   /* sha256 of the head text */
} mc_audit_head_t;

/*
 * The heads file.  A seal writes a whole line, newline last, in one
 * write and fsyncs it; what follows the last newline is a torn write of
 * a seal that did not finish (a crash, a full disk), unless it is a
 * whole signed head that lost only its newline.
 */
typedef struct {
    mc_audit_head_t  *heads;
    int               n;
    size_t            complete;  /* bytes up to the last newline */
    size_t            torn;      /* bytes after it: 0 none */
    int               unended;   /* the torn bytes are a whole head */
} mc_audit_heads_t;


/*
 * Reads the heads at path, each line's signature checked with key (a
 * public or the private key), and their chain: 0 read, 1 a head does not
 * fit (printed, "HEADS: ..."), -1 unreadable (on stderr).  missing_ok: a
 * file that does not exist holds no heads (the first seal makes it).
 */
int mc_audit_heads_read(const char *path, EVP_PKEY *key, int missing_ok,
    mc_audit_heads_t *h);
void mc_audit_heads_free(mc_audit_heads_t *h);

void mc_audit_hex(const uint8_t *b, size_t n, char *out);
int mc_audit_unhex(const char *s, uint8_t *out, size_t n);


#endif /* MC_AUDIT_HEADS_H */
