/*
 * Copyright (C) mt5-credit
 */


#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "mc_log.h"
#include "mc_whsig.h"


int
mc_whsig_parse(const char *secret, mc_whsig_key_t *key, char *err,
    size_t errlen)
{
    int            n;
    size_t         len, pad;
    const char    *b64, *eq;
    unsigned char  buf[(MC_WHSIG_KEY_MAX + 2) / 3 * 3 + 3];

    if (strncmp(secret, "whsec_", 6) != 0) {
        snprintf(err, errlen, "a secret is \"whsec_\" and a base64 key");
        return -1;
    }

    b64 = secret + 6;
    len = strlen(b64);

    /* the standard alphabet, padded: what the receivers' libraries take */
    if (len == 0 || len % 4 != 0 || len > (MC_WHSIG_KEY_MAX + 2) / 3 * 4
        || strspn(b64, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                       "0123456789+/=") != len)
    {
        snprintf(err, errlen, "the key after \"whsec_\" is not base64 of "
                 "%d to %d bytes", MC_WHSIG_KEY_MIN, MC_WHSIG_KEY_MAX);
        return -1;
    }

    pad = (b64[len - 1] == '=') + (b64[len - 2] == '=');
    eq = strchr(b64, '=');
    if (eq != NULL && eq != b64 + len - pad) {
        snprintf(err, errlen, "the key after \"whsec_\" has \"=\" inside");
        return -1;
    }

    n = EVP_DecodeBlock(buf, (const unsigned char *) b64, (int) len);
    if (n < 0 || (size_t) n < pad) {
        snprintf(err, errlen, "the key after \"whsec_\" is not base64");
        return -1;
    }

    n -= (int) pad;     /* EVP_DecodeBlock counts the padding's zeros */

    if (n < MC_WHSIG_KEY_MIN || n > MC_WHSIG_KEY_MAX) {
        snprintf(err, errlen, "a key of %d bytes: %d to %d", n,
                 MC_WHSIG_KEY_MIN, MC_WHSIG_KEY_MAX);
        OPENSSL_cleanse(buf, sizeof(buf));
        return -1;
    }

    memcpy(key->key, buf, (size_t) n);
    key->len = (size_t) n;
    OPENSSL_cleanse(buf, sizeof(buf));

    return 0;
}


int
mc_whsig_read(const char *path, mc_whsig_key_t *keys, int max, int *n,
    char *err, size_t errlen)
{
    int          lineno;
    char         line[512], why[128], *p, *e;
    FILE        *f;
    struct stat  st;

    *n = 0;

    f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }

    if (fstat(fileno(f), &st) == 0 && (st.st_mode & 0077)) {
        mc_log(MC_LOG_WARN, "secret_file %s is readable by others (mode "
               "%03o); use 0600", path, (unsigned) (st.st_mode & 0777));
    }

    lineno = 0;

    while (fgets(line, sizeof(line), f) != NULL) {
        lineno++;

        for (p = line; *p == ' ' || *p == '\t'; p++) { /* void */ }
        for (e = p + strlen(p);
             e > p && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' '
                       || e[-1] == '\t');
             e--)
        { /* void */ }
        *e = '\0';

        if (*p == '\0' || *p == '#') {
            continue;
        }

        if (*n == max) {
            snprintf(err, errlen, "%s:%d: more than %d secrets", path,
                     lineno, max);
            goto failed;
        }

        if (mc_whsig_parse(p, &keys[*n], why, sizeof(why)) != 0) {
            snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
            goto failed;
        }

        (*n)++;
    }

    OPENSSL_cleanse(line, sizeof(line));
    fclose(f);

    if (*n == 0) {
        snprintf(err, errlen, "%s: no secret in it", path);
        return -1;
    }

    return 0;

failed:

    OPENSSL_cleanse(line, sizeof(line));
    fclose(f);
    mc_whsig_wipe(keys, *n);
    *n = 0;
    return -1;
}


int
mc_whsig_sign(const mc_whsig_key_t *keys, int n, const char *id,
    int64_t timestamp, const char *body, size_t len, char *out,
    size_t outlen)
{
    int            i, w, rc;
    char           head[160];
    size_t         used, maclen;
    EVP_MAC       *hmac;
    OSSL_PARAM     params[2];
    EVP_MAC_CTX   *h;
    unsigned char  mac[EVP_MAX_MD_SIZE];

    /* the signed content: "<id>.<timestamp>.<body>", the body as sent */
    w = snprintf(head, sizeof(head), "%s.%" PRId64 ".", id, timestamp);
    if (w < 0 || (size_t) w >= sizeof(head)) {
        return -1;
    }

    hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    if (hmac == NULL) {
        return -1;
    }

    params[0] = OSSL_PARAM_construct_utf8_string("digest", (char *) "SHA256",
                                                 0);
    params[1] = OSSL_PARAM_construct_end();

    rc = -1;
    used = 0;
    out[0] = '\0';

    for (i = 0; i < n; i++) {
        h = EVP_MAC_CTX_new(hmac);
        if (h == NULL) {
            goto done;
        }

        if (EVP_MAC_init(h, keys[i].key, keys[i].len, params) != 1
            || EVP_MAC_update(h, (const unsigned char *) head, (size_t) w)
               != 1
            || EVP_MAC_update(h, (const unsigned char *) body, len) != 1
            || EVP_MAC_final(h, mac, &maclen, sizeof(mac)) != 1)
        {
            EVP_MAC_CTX_free(h);
            goto done;
        }

        EVP_MAC_CTX_free(h);

        /* "v1," and 44 characters of base64, a space between */
        if (used + (i > 0) + 3 + 4 * ((maclen + 2) / 3) + 1 > outlen) {
            goto done;
        }

        if (i > 0) {
            out[used++] = ' ';
        }

        memcpy(out + used, "v1,", 3);
        used += 3;
        used += (size_t) EVP_EncodeBlock((unsigned char *) out + used, mac,
                                         (int) maclen);
        out[used] = '\0';
    }

    rc = 0;

done:

    EVP_MAC_free(hmac);
    OPENSSL_cleanse(mac, sizeof(mac));
    return rc;
}


void
mc_whsig_wipe(mc_whsig_key_t *keys, int n)
{
    if (n > 0) {
        OPENSSL_cleanse(keys, (size_t) n * sizeof(*keys));
    }
}
