
/*
 * Copyright (C) mt5-credit
 *
 * Adyen's notification batches through ngx_mt5_credit_adyen.c and the
 * signature code, as the edge reads them: each case a key and a body,
 * and either each item's verdict (its event id and signed string where
 * given) or the reader's refusal.  Output is TAP; exit status 0 only if
 * every check passes.
 *
 *   adyen_test t/vectors/adyen.json [more.json ...]
 *
 * t/vectors/adyen.json: the published examples and ours; t/59 also
 * writes a file of random items signed and judged by Adyen's own Node
 * library and runs this on it.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ngx_mt5_credit_adyen.h"


static int  adyen_test_n;
static int  adyen_test_failed;


static void
adyen_test_ok(int ok, const char *file, const char *name, const char *what,
    const char *got)
{
    adyen_test_n++;

    if (!ok) {
        adyen_test_failed++;
    }

    printf("%sok %d - %s: %s: %s\n", ok ? "" : "not ", adyen_test_n, file,
           name, what);

    if (!ok && got != NULL) {
        printf("#   got: %s\n", got);
    }
}


static int
adyen_test_eq(const ngx_mt5_credit_sig_str_t *s, const char *want)
{
    return want != NULL && s->len == strlen(want)
           && memcmp(s->data, want, s->len) == 0;
}


static void
adyen_test_case(const char *file, json_t *c)
{
    int                            rc;
    size_t                         i, len;
    char                           got[256];
    json_t                        *expect, *ids, *signed_texts;
    const char                    *name, *key, *body, *refused, *want;
    ngx_mt5_credit_adyen_t         a;
    ngx_mt5_credit_sig_rc_e        vrc;
    ngx_mt5_credit_sig_conf_t      conf;
    ngx_mt5_credit_sig_parsed_t    parsed;
    ngx_mt5_credit_adyen_item_t    items[NGX_MT5_CREDIT_ADYEN_MAX_ITEMS];

    name = json_string_value(json_object_get(c, "name"));
    key = json_string_value(json_object_get(c, "key"));
    body = json_string_value(json_object_get(c, "body"));
    len = json_string_length(json_object_get(c, "body"));
    refused = json_string_value(json_object_get(c, "refused"));
    expect = json_object_get(c, "expect");
    ids = json_object_get(c, "event_ids");
    signed_texts = json_object_get(c, "signed");

    if (name == NULL || key == NULL || body == NULL) {
        adyen_test_ok(0, file, "?", "a case with a name, key and body", NULL);
        return;
    }

    memset(&conf, 0, sizeof(conf));
    conf.scheme = NGX_MT5_CREDIT_SIG_ADYEN;
    conf.tolerance = -1;
    conf.nkeys = 1;

    if (ngx_mt5_credit_sig_prepare_key(NGX_MT5_CREDIT_SIG_ADYEN,
                                       (const unsigned char *) key,
                                       strlen(key), &conf.keys[0])
        != NGX_MT5_CREDIT_SIG_OK)
    {
        adyen_test_ok(0, file, name, "the key is hex", key);
        return;
    }

    a.items = items;
    a.max = NGX_MT5_CREDIT_ADYEN_MAX_ITEMS;
    a.size = ngx_mt5_credit_adyen_scratch(len);
    a.scratch = malloc(a.size);

    if (a.scratch == NULL) {
        adyen_test_ok(0, file, name, "scratch", "out of memory");
        return;
    }

    rc = ngx_mt5_credit_adyen_read(&a, (const unsigned char *) body, len);

    if (refused != NULL) {
        adyen_test_ok(rc == -1 && a.error != NULL
                      && strstr(a.error, refused) != NULL,
                      file, name, refused,
                      rc == 0 ? "read" : a.error);
        goto done;
    }

    if (rc != 0) {
        adyen_test_ok(0, file, name, "read", a.error);
        goto done;
    }

    adyen_test_ok(a.nitems == json_array_size(expect), file, name,
                  "as many items as verdicts", NULL);

    for (i = 0; i < a.nitems && i < json_array_size(expect); i++) {
        memset(&parsed, 0, sizeof(parsed));
        parsed.candidates[0] = items[i].signature;
        parsed.ncandidates = 1;

        vrc = ngx_mt5_credit_sig_verify(&conf, &parsed,
                                        items[i].signed_text.data,
                                        items[i].signed_text.len);

        want = json_string_value(json_array_get(expect, i));

        adyen_test_ok(want != NULL
                      && strcmp(ngx_mt5_credit_sig_reason(vrc), want) == 0,
                      file, name, want ? want : "?",
                      ngx_mt5_credit_sig_reason(vrc));

        if (ids != NULL) {
            snprintf(got, sizeof(got), "%.*s",
                     (int) items[i].event_id.len, items[i].event_id.data);
            adyen_test_ok(adyen_test_eq(&items[i].event_id,
                              json_string_value(json_array_get(ids, i))),
                          file, name, "its event id", got);
        }

        if (signed_texts != NULL) {
            snprintf(got, sizeof(got), "%.*s",
                     (int) items[i].signed_text.len,
                     items[i].signed_text.data);
            adyen_test_ok(adyen_test_eq(&items[i].signed_text,
                              json_string_value(json_array_get(signed_texts,
                                                               i))),
                          file, name, "its signed string", got);
        }

        /* the item's bytes are a JSON object within the body */

        adyen_test_ok(items[i].bytes.len >= 2
                      && items[i].bytes.data[0] == '{'
                      && items[i].bytes.data[items[i].bytes.len - 1] == '}'
                      && items[i].bytes.data >= (const unsigned char *) body
                      && items[i].bytes.data + items[i].bytes.len
                         <= (const unsigned char *) body + len,
                      file, name, "its bytes are its object's", NULL);
    }

done:

    free(a.scratch);
}


int
main(int argc, char **argv)
{
    int           i;
    size_t        k;
    json_t       *doc, *cases;
    json_error_t  err;

    if (argc < 2) {
        fprintf(stderr, "usage: adyen_test vectors.json ...\n");
        return 2;
    }

    for (i = 1; i < argc; i++) {
        doc = json_load_file(argv[i], 0, &err);
        if (doc == NULL) {
            fprintf(stderr, "adyen_test: %s:%d: %s\n", argv[i], err.line,
                    err.text);
            return 2;
        }

        cases = json_object_get(doc, "cases");

        if (json_array_size(cases) == 0) {
            fprintf(stderr, "adyen_test: %s: no cases\n", argv[i]);
            json_decref(doc);
            return 2;
        }

        for (k = 0; k < json_array_size(cases); k++) {
            adyen_test_case(argv[i], json_array_get(cases, k));
        }

        json_decref(doc);
    }

    printf("1..%d\n", adyen_test_n);

    return adyen_test_failed ? 1 : 0;
}
