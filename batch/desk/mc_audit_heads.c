/*
 * Copyright (C) mt5-credit
 *
 * The heads file of the money journal's seals (sql/081): one
 * "<signature hex> <head json>" a line, each head signed with Ed25519
 * and chained to the one before it.  Both seal and verify read it all
 * and check every line before they trust its last head.
 */


#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include "mc_audit_heads.h"


#define MC_AUDIT_ZERO                                                        \
    "0000000000000000000000000000000000000000000000000000000000000000"


static int mc_audit_head_parse(const char *path, int lineno, char *line,
    size_t len, EVP_PKEY *key, const mc_audit_head_t *prev,
    mc_audit_head_t *hd, int quiet);
static char *mc_audit_slurp(const char *path, size_t *len);


int
mc_audit_heads_read(const char *path, EVP_PKEY *key, int missing_ok,
    mc_audit_heads_t *h)
{
    int               lineno, rc;
    char             *data, *line, *nl;
    size_t            len, at, cap, i;
    mc_audit_head_t  *hd, *more;

    memset(h, 0, sizeof(mc_audit_heads_t));

    data = mc_audit_slurp(path, &len);
    if (data == NULL) {
        if (errno == ENOENT && missing_ok) {
            return 0;           /* the first seal makes it */
        }
        if (errno == ENOENT) {
            /* no file is not "nothing sealed": the wrong path, or a loss */
            fprintf(stderr, "mt5credit audit: --heads %s: no such file; "
                    "verify needs the sealer's heads (an empty file when "
                    "nothing was sealed yet)\n", path);
            return -1;
        }
        fprintf(stderr, "mt5credit audit: --heads %s: %s\n", path,
                strerror(errno));
        return -1;
    }

    /* the lines that ended; what follows the last newline is apart */
    for (i = len; i > 0 && data[i - 1] != '\n'; i--) {
        /* back to the last newline */
    }
    h->complete = i;
    h->torn = len - i;

    cap = 0;
    lineno = 0;
    at = 0;
    rc = 0;

    while (at < len) {
        lineno++;
        line = data + at;
        nl = memchr(line, '\n', len - at);

        if ((size_t) h->n == cap) {
            cap = cap ? 2 * cap : 64;
            more = realloc(h->heads, cap * sizeof(mc_audit_head_t));
            if (more == NULL) {
                rc = -1;
                break;
            }
            h->heads = more;
        }
        hd = &h->heads[h->n];

        if (nl == NULL) {
            /* the torn tail: a whole head that lost its newline, or not */
            if (mc_audit_head_parse(path, lineno, line, len - at, key,
                                    h->n > 0 ? &h->heads[h->n - 1] : NULL,
                                    hd, 1) == 0)
            {
                h->unended = 1;
                h->n++;
            }
            break;
        }

        *nl = '\0';
        rc = mc_audit_head_parse(path, lineno, line, (size_t) (nl - line),
                                 key, h->n > 0 ? &h->heads[h->n - 1] : NULL,
                                 hd, 0);
        if (rc != 0) {
            break;
        }
        h->n++;
        at = (size_t) (nl - data) + 1;
    }

    free(data);

    return rc;
}


void
mc_audit_heads_free(mc_audit_heads_t *h)
{
    free(h->heads);
    memset(h, 0, sizeof(mc_audit_heads_t));
}


/*
 * One line: its signature, its fields, and that it follows prev (or is
 * the first).  0 a head; 1 not (printed unless quiet).
 */
static int
mc_audit_head_parse(const char *path, int lineno, char *line, size_t len,
    EVP_PKEY *key, const mc_audit_head_t *prev, mc_audit_head_t *hd,
    int quiet)
{
    int           ok;
    char         *text;
    uint8_t       sig[MC_AUDIT_SIG], self[SHA256_DIGEST_LENGTH];
    json_t       *j;
    json_int_t    period, entries, last_id, timeline;
    const char   *from_s, *to_s, *root_s, *prev_s, *sysid_s;
    EVP_MD_CTX   *ctx;
    json_error_t  err;

    text = memchr(line, ' ', len);

    if (len >= MC_AUDIT_LINE_MAX || memchr(line, '\0', len) != NULL
        || text == NULL || text - line != 2 * MC_AUDIT_SIG
        || mc_audit_unhex(line, sig, MC_AUDIT_SIG) != 0)
    {
        if (!quiet) {
            printf("HEADS: %s line %d: not \"<signature> <head>\"\n", path,
                   lineno);
        }
        return 1;
    }
    text++;
    len -= (size_t) (text - line);

    if (key != NULL) {
        ctx = EVP_MD_CTX_new();
        ok = ctx != NULL
             && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, key) == 1
             && EVP_DigestVerify(ctx, sig, MC_AUDIT_SIG,
                                 (const uint8_t *) text, len) == 1;
        EVP_MD_CTX_free(ctx);
        if (!ok) {
            if (!quiet) {
                printf("HEADS: %s line %d: the signature does not fit the "
                       "head: written or changed without the key\n", path,
                       lineno);
            }
            return 1;
        }
    }

    memset(hd, 0, sizeof(mc_audit_head_t));
    SHA256((const uint8_t *) text, len, self);
    mc_audit_hex(self, sizeof(self), hd->self);

    j = json_loadb(text, len, 0, &err);
    if (j == NULL
        || json_unpack(j, "{s:I,s:s,s:s,s:I,s:I,s:s,s:s,s:s,s:I}",
                       "period", &period, "from_xid", &from_s,
                       "to_xid", &to_s, "entries", &entries,
                       "last_id", &last_id,
                       "root", &root_s, "prev", &prev_s,
                       "system_identifier", &sysid_s,
                       "timeline", &timeline) != 0
        || strlen(from_s) >= sizeof(hd->from_xid)
        || strlen(to_s) >= sizeof(hd->to_xid)
        || from_s[0] == '\0' || to_s[0] == '\0'
        || strspn(from_s, "0123456789") != strlen(from_s)
        || strspn(to_s, "0123456789") != strlen(to_s)
        || strlen(root_s) != 2 * MC_MERKLE_HASH
        || strlen(prev_s) != 2 * MC_MERKLE_HASH
        || strlen(sysid_s) >= sizeof(hd->system_identifier))
    {
        json_decref(j);
        if (!quiet) {
            printf("HEADS: %s line %d: not a head\n", path, lineno);
        }
        return 1;
    }

    hd->period = (int) period;
    hd->entries = (int64_t) entries;
    hd->last_id = (int64_t) last_id;
    hd->timeline = (int) timeline;
    strcpy(hd->from_xid, from_s);
    strcpy(hd->to_xid, to_s);
    hd->from = strtoull(from_s, NULL, 10);
    hd->to = strtoull(to_s, NULL, 10);
    strcpy(hd->root, root_s);
    strcpy(hd->prev, prev_s);
    strcpy(hd->system_identifier, sysid_s);
    json_decref(j);

    if (hd->period != (prev != NULL ? prev->period : 0) + 1
        || strcmp(hd->from_xid, prev != NULL ? prev->to_xid : "0") != 0
        || strcmp(hd->prev, prev != NULL ? prev->self : MC_AUDIT_ZERO) != 0)
    {
        if (!quiet) {
            printf("HEADS: %s line %d: period %d does not follow the head "
                   "before it: a head was removed or put out of order\n",
                   path, lineno, hd->period);
        }
        return 1;
    }

    return 0;
}


/* the whole file: a period is a line of about 400 bytes */
static char *
mc_audit_slurp(const char *path, size_t *len)
{
    int     saved;
    char   *data, *more;
    size_t  cap, n;
    FILE   *fp;

    fp = fopen(path, "r");
    if (fp == NULL) {
        return NULL;
    }

    cap = 64 * 1024;
    *len = 0;
    data = malloc(cap + 1);

    while (data != NULL) {
        n = fread(data + *len, 1, cap - *len, fp);
        *len += n;
        if (*len < cap) {
            break;
        }
        cap *= 2;
        more = realloc(data, cap + 1);
        if (more == NULL) {
            free(data);
            data = NULL;
            errno = ENOMEM;
        }
        data = more;
    }

    saved = errno;
    if (data != NULL && ferror(fp)) {
        saved = EIO;
        free(data);
        data = NULL;
    }
    fclose(fp);
    errno = saved;

    if (data != NULL) {
        data[*len] = '\0';
    }

    return data;
}


void
mc_audit_hex(const uint8_t *b, size_t n, char *out)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        snprintf(out + 2 * i, 3, "%02x", b[i]);
    }
    out[2 * n] = '\0';
}


int
mc_audit_unhex(const char *s, uint8_t *out, size_t n)
{
    size_t        i;
    unsigned int  v;

    for (i = 0; i < n; i++) {
        if (!strchr("0123456789abcdef", s[2 * i])
            || !strchr("0123456789abcdef", s[2 * i + 1])
            || sscanf(s + 2 * i, "%2x", &v) != 1)
        {
            return -1;
        }
        out[i] = (uint8_t) v;
    }

    return 0;
}
