/*
 * Copyright (C) mt5-credit
 *
 * batch/outbound/mc_whsig.c: Standard Webhooks signatures, as the
 * outbound sender signs every delivery.  Proves impossible:
 *   - a signature unlike the specification's published example;
 *   - a rotation whose header lacks either secret's signature, or
 *     carries them in another order than the file's;
 *   - a signature that does not change with the id, the time or any
 *     byte of the body;
 *   - a secret taken that is not "whsec_" and padded standard base64 of
 *     16 to 64 bytes (a URL-safe key, a short key, "=" inside);
 *   - a secrets file taken with no secret, or a bad line not named.
 * Output is TAP.
 *
 *   mc_whsig_test DIR     (a directory to write secret files in)
 */


#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mc_whsig.h"


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


/* the example of the Standard Webhooks specification (and Svix's docs) */
#define SPEC_SECRET  "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define SPEC_ID      "msg_p5jXN8AQM9LWM0D4loKWxJek"
#define SPEC_TS      1614265330
#define SPEC_BODY    "{\"test\": 2432232314}"
#define SPEC_SIG     "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

#define OTHER_SECRET "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"


static int
sign1(const char *secret, const char *id, long ts, const char *body,
    char *out)
{
    char            err[128];
    mc_whsig_key_t  k;

    if (mc_whsig_parse(secret, &k, err, sizeof(err)) != 0) {
        return -1;
    }
    return mc_whsig_sign(&k, 1, id, ts, body, strlen(body), out,
                         MC_WHSIG_HEADER_MAX);
}


static int
refused(const char *secret)
{
    char            err[128];
    mc_whsig_key_t  k;

    return mc_whsig_parse(secret, &k, err, sizeof(err)) != 0;
}


static int
file_with(const char *dir, const char *text, mc_whsig_key_t *keys, int *n,
    char *err, size_t errlen)
{
    char   path[1024];
    FILE  *f;

    snprintf(path, sizeof(path), "%s/secrets", dir);
    f = fopen(path, "w");
    if (f == NULL) {
        return -2;
    }
    fputs(text, f);
    fclose(f);
    chmod(path, 0600);

    return mc_whsig_read(path, keys, MC_WHSIG_SECRETS, n, err, errlen);
}


int
main(int argc, char **argv)
{
    int             n;
    char            a[MC_WHSIG_HEADER_MAX], b[MC_WHSIG_HEADER_MAX];
    char            both[MC_WHSIG_HEADER_MAX], err[256];
    char            other[2 * MC_WHSIG_HEADER_MAX];
    mc_whsig_key_t  keys[MC_WHSIG_SECRETS];

    if (argc != 2) {
        fprintf(stderr, "usage: mc_whsig_test DIR\n");
        return 2;
    }

    /* the specification's example */
    ok(sign1(SPEC_SECRET, SPEC_ID, SPEC_TS, SPEC_BODY, a) == 0
       && strcmp(a, SPEC_SIG) == 0, "the specification's example: %s", a);

    /* each part of the signed content counts */
    sign1(SPEC_SECRET, "msg_p5jXN8AQM9LWM0D4loKWxJeL", SPEC_TS, SPEC_BODY, b);
    ok(strcmp(a, b) != 0, "another id, another signature");
    sign1(SPEC_SECRET, SPEC_ID, SPEC_TS + 1, SPEC_BODY, b);
    ok(strcmp(a, b) != 0, "another second, another signature");
    sign1(SPEC_SECRET, SPEC_ID, SPEC_TS, "{\"test\": 2432232315}", b);
    ok(strcmp(a, b) != 0, "another byte of body, another signature");
    sign1(OTHER_SECRET, SPEC_ID, SPEC_TS, SPEC_BODY, b);
    ok(strcmp(a, b) != 0, "another secret, another signature");

    /* a rotation: the file's secrets, newest first, all sign */
    ok(file_with(argv[1], "# rotated 2026-12-07\n" OTHER_SECRET "\n\n"
                 SPEC_SECRET "\n", keys, &n, err, sizeof(err)) == 0
       && n == 2, "a file of two secrets, a comment and a blank line: two");
    ok(mc_whsig_sign(keys, n, SPEC_ID, SPEC_TS, SPEC_BODY,
                     strlen(SPEC_BODY), both, sizeof(both)) == 0,
       "signed with both");
    snprintf(other, sizeof(other), "%s %s", b, SPEC_SIG);
    ok(strcmp(both, other) == 0, "both signatures, the new first, one "
       "space between: %s", both);
    mc_whsig_wipe(keys, n);

    ok(mc_whsig_sign(keys, 0, SPEC_ID, SPEC_TS, SPEC_BODY, 0, both, 10) == 0
       && both[0] == '\0', "no secret signs nothing");
    ok(file_with(argv[1], OTHER_SECRET "\n" SPEC_SECRET "\n", keys, &n, err,
                 sizeof(err)) == 0
       && mc_whsig_sign(keys, n, SPEC_ID, SPEC_TS, SPEC_BODY,
                        strlen(SPEC_BODY), both, 60) == -1,
       "a header that does not fit is refused, not cut");
    mc_whsig_wipe(keys, n);

    /* secrets refused */
    ok(refused("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), "no whsec_ prefix");
    ok(refused("whsec_"), "an empty key");
    ok(refused("whsec_MfKQ9r8GKYqrTwjU"), "a key of 12 bytes");
    ok(refused("whsec_AAAAAAAAAAAAAAAAAAAA"), "a key of 15 bytes");
    ok(!refused("whsec_AAAAAAAAAAAAAAAAAAAAAA=="), "a key of 16 bytes");
    ok(refused("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS_"), "URL-safe base64");
    ok(refused("whsec_MfKQ9r8GKYqr=wjUPD8ILPZIo2LaLaSw"), "\"=\" inside");
    ok(refused("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw "), "a space after");
    ok(refused("whsec_" "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
               "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
       "a key of more than 64 bytes");

    /* files refused, the line named */
    ok(file_with(argv[1], "# nothing yet\n\n", keys, &n, err, sizeof(err))
       == -1 && strstr(err, "no secret") != NULL, "a file with no secret: %s",
       err);
    ok(file_with(argv[1], SPEC_SECRET "\nwhsec_short\n", keys, &n, err,
                 sizeof(err)) == -1 && strstr(err, ":2:") != NULL
       && strstr(err, "short") == NULL,
       "a bad second line, named, its text not echoed: %s", err);
    ok(file_with(argv[1], SPEC_SECRET "\n" SPEC_SECRET "\n" SPEC_SECRET "\n"
                 SPEC_SECRET "\n" SPEC_SECRET "\n", keys, &n, err,
                 sizeof(err)) == -1, "more than %d secrets: %s",
       MC_WHSIG_SECRETS, err);

    printf("1..%d\n", tests);
    return failed != 0;
}
