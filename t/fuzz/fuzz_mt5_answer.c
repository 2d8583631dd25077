/*
 * Copyright (C) mt5-credit
 *
 * libFuzzer target: what the batch makes of an MT5 Web API answer
 * (batch/mt5/mc_mt5.c, batch/lib/mc_money.c): the JSON as mc_mt5_perform() loads
 * it, the retcode, the "answer" member, and every field reader the worker,
 * the resolver and reconciliation use (logins, money, strings, integers,
 * tickets, deals).  The file is included so its static readers are the
 * ones fuzzed, not copies.  Input: one byte for the login asked about and
 * the currency digits, then the answer's body.
 *
 * Beyond "no crash": a login read back is the one asked about, a deal read
 * is on it with a ticket, and money converted to minor units keeps its
 * sign.
 */

#include "mc_mt5.c"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static mc_mt5_session_t  *fuzz_session;


static void
fuzz_money(mc_mt5_session_t *s, json_t *obj, const char *key, int digits)
{
    int64_t       minor;
    mc_decimal_t  d;

    if (mc_mt5_get_money(s, obj, key, &d) == 0
        && mc_decimal_to_minor(d, digits, &minor) == 0
        && (minor < 0) != (d.value < 0 && minor != 0))
    {
        abort();
    }
}


static void
fuzz_object(mc_mt5_session_t *s, json_t *obj, uint64_t login, int digits)
{
    int            i;
    char           text[128];
    int64_t        i64;
    uint64_t       u, got;
    mc_mt5_deal_t  d;

    if (mc_mt5_get_login(s, obj, login, &got) == 0 && got != login) {
        abort();
    }

    mc_mt5_get_str(s, obj, "Group", text, sizeof(text));
    mc_mt5_get_str(s, obj, "Currency", text, sizeof(text));
    mc_mt5_get_int(s, obj, "CurrencyDigits", &i);
    mc_mt5_get_u64(s, obj, "Rights", &u);
    mc_mt5_get_u64(s, obj, "Ticket", &u);
    mc_mt5_get_u64(s, obj, "Total", &u);
    mc_mt5_get_i64(s, obj, "Time", 1, &i64);
    fuzz_money(s, obj, "Balance", digits);
    fuzz_money(s, obj, "Credit", digits);
    fuzz_money(s, obj, "MarginFree", digits);

    if (mc_mt5_deal(s, obj, login, &d) == 0
        && (d.deal == 0 || d.login != login
            || strlen(d.comment) >= sizeof(d.comment)))
    {
        abort();
    }
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int               retcode, digits;
    size_t            i;
    json_t           *root, *answer;
    uint64_t          login;
    json_error_t      jerr;
    mc_mt5_config_t   cfg;

    if (size < 1 || size > MC_MT5_BODY_MAX) {
        return 0;
    }

    if (fuzz_session == NULL) {
        memset(&cfg, 0, sizeof(cfg));
        cfg.url = "https://127.0.0.1:1";
        cfg.manager = 1000;
        cfg.password = "fuzz";
        cfg.tls_verify = 1;
        fuzz_session = mc_mt5_session_new(&cfg);
        if (fuzz_session == NULL) {
            abort();
        }
    }

    login = 70000 + data[0] % 8;
    digits = data[0] >> 5;           /* 0..7 */

    root = json_loadb((const char *) data + 1, size - 1,
                      JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        return 0;
    }

    if (json_is_object(root)
        && mc_mt5_retcode(fuzz_session, root, &retcode) == 0
        && retcode == 0)
    {
        answer = mc_mt5_key(fuzz_session, root, "answer");

        if (json_is_object(answer)) {
            fuzz_object(fuzz_session, answer, login, digits);

        } else if (json_is_array(answer)) {
            for (i = 0; i < json_array_size(answer) && i < 1000; i++) {
                fuzz_object(fuzz_session, json_array_get(answer, i), login,
                            digits);
            }
        }
    }

    json_decref(root);
    return 0;
}
