
/*
 * Copyright (C) mt5-credit
 *
 * libFuzzer target: Adyen's notification reader (ngx_mt5_credit_adyen.c)
 * and each item's verification, on any bytes.  Besides what ASan and
 * UBSan catch, it asserts what the edge relies on: a refusal says why
 * and where, inside the body; a read gives at least one item, each item's
 * bytes an object inside the body, every string in the scratch it was
 * given, the signed string the eight fields in order with ':' between,
 * and the verdict one of two.
 */


#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ngx_mt5_credit_adyen.h"


#define FUZZ_ADYEN_KEY "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"


static int
fuzz_adyen_inside(const ngx_mt5_credit_sig_str_t *s, const unsigned char *lo,
    size_t len)
{
    return s->len == 0 || (s->data >= lo && s->data + s->len <= lo + len);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t                        i, f, sum;
    ngx_mt5_credit_adyen_t        a;
    ngx_mt5_credit_sig_rc_e       rc;
    ngx_mt5_credit_sig_conf_t     conf;
    ngx_mt5_credit_sig_parsed_t   parsed;
    ngx_mt5_credit_adyen_item_t  *items;

    items = malloc(NGX_MT5_CREDIT_ADYEN_MAX_ITEMS
                   * sizeof(ngx_mt5_credit_adyen_item_t));
    if (items == NULL) {
        return 0;
    }

    a.items = items;
    a.max = NGX_MT5_CREDIT_ADYEN_MAX_ITEMS;
    a.size = ngx_mt5_credit_adyen_scratch(size);
    a.scratch = malloc(a.size);
    if (a.scratch == NULL) {
        free(items);
        return 0;
    }

    memset(&conf, 0, sizeof(conf));
    conf.scheme = NGX_MT5_CREDIT_SIG_ADYEN;
    conf.tolerance = -1;
    conf.nkeys = 1;

    if (ngx_mt5_credit_sig_prepare_key(NGX_MT5_CREDIT_SIG_ADYEN,
            (const unsigned char *) FUZZ_ADYEN_KEY, strlen(FUZZ_ADYEN_KEY),
            &conf.keys[0]) != NGX_MT5_CREDIT_SIG_OK)
    {
        abort();
    }

    if (ngx_mt5_credit_adyen_read(&a, data, size) != 0) {
        if (a.error == NULL || a.error_at > size) {
            abort();
        }

        goto done;
    }

    if (a.nitems == 0 || a.nitems > a.max || a.used > a.size) {
        abort();
    }

    for (i = 0; i < a.nitems; i++) {
        if (items[i].bytes.len < 2 || items[i].bytes.data[0] != '{'
            || items[i].bytes.data[items[i].bytes.len - 1] != '}'
            || !fuzz_adyen_inside(&items[i].bytes, data, size)
            || !fuzz_adyen_inside(&items[i].signed_text, a.scratch, a.used)
            || !fuzz_adyen_inside(&items[i].event_id, a.scratch, a.used)
            || items[i].event_id.len > 255
            || !fuzz_adyen_inside(&items[i].signature, a.scratch, a.used))
        {
            abort();
        }

        for (f = 0, sum = 0; f < NGX_MT5_CREDIT_ADYEN_NFIELDS; f++) {
            if (!fuzz_adyen_inside(&items[i].field[f], a.scratch, a.used)) {
                abort();
            }

            sum += items[i].field[f].len;
        }

        if (items[i].signed_text.len != sum + NGX_MT5_CREDIT_ADYEN_NFIELDS - 1)
        {
            abort();
        }

        /* the signed string is the fields in order, ':' between */

        for (f = 0, sum = 0; f < NGX_MT5_CREDIT_ADYEN_NFIELDS; f++) {
            if (items[i].field[f].len
                && memcmp(items[i].signed_text.data + sum,
                          items[i].field[f].data, items[i].field[f].len) != 0)
            {
                abort();
            }

            sum += items[i].field[f].len;

            if (f + 1 < NGX_MT5_CREDIT_ADYEN_NFIELDS
                && items[i].signed_text.data[sum++] != ':')
            {
                abort();
            }
        }

        memset(&parsed, 0, sizeof(parsed));
        parsed.candidates[0] = items[i].signature;
        parsed.ncandidates = 1;

        rc = ngx_mt5_credit_sig_verify(&conf, &parsed,
                                       items[i].signed_text.data,
                                       items[i].signed_text.len);

        if (rc != NGX_MT5_CREDIT_SIG_OK && rc != NGX_MT5_CREDIT_SIG_BAD_SIGNATURE)
        {
            abort();
        }
    }

done:

    free(a.scratch);
    free(items);

    return 0;
}
