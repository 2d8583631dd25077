/*
 * Copyright (C) mt5-credit
 *
 * Standard Webhooks signatures (https://www.standardwebhooks.com): a
 * secret is "whsec_" and its key in base64; a delivery's signature is
 * HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>" under the
 * key, sent as "v1,<base64>".  Several secrets sign at once, their
 * signatures space-separated in one header: a receiver holding any one
 * of them verifies, which is how a secret is rotated without a gap.
 */

#ifndef MC_WHSIG_H
#define MC_WHSIG_H


#include <stddef.h>
#include <stdint.h>


#define MC_WHSIG_KEY_MIN     16          /* bytes of key, decoded */
#define MC_WHSIG_KEY_MAX     64
#define MC_WHSIG_SECRETS     4           /* in one file: new, old, ... */
#define MC_WHSIG_HEADER_MAX  (MC_WHSIG_SECRETS * 48)


typedef struct {
    unsigned char  key[MC_WHSIG_KEY_MAX];
    size_t         len;
} mc_whsig_key_t;


/* "whsec_<base64>" to its key; 0, or -1 with why in err (never the text) */
int mc_whsig_parse(const char *secret, mc_whsig_key_t *key, char *err,
    size_t errlen);

/*
 * The secrets of a file, one a line, blank lines and "#" lines skipped;
 * the first is the newest.  0 and *n >= 1, or -1 with why in err.
 */
int mc_whsig_read(const char *path, mc_whsig_key_t *keys, int max, int *n,
    char *err, size_t errlen);

/*
 * The webhook-signature header's value for one delivery: every key's
 * "v1,<base64>", space-separated, into out (MC_WHSIG_HEADER_MAX).  0, or
 * -1 (out too small, or OpenSSL failed).
 */
int mc_whsig_sign(const mc_whsig_key_t *keys, int n, const char *id,
    int64_t timestamp, const char *body, size_t len, char *out,
    size_t outlen);

void mc_whsig_wipe(mc_whsig_key_t *keys, int n);


#endif /* MC_WHSIG_H */
