/*
 * Copyright (C) mt5-credit
 *
 * The config file: the book the simulator starts from (managers, groups,
 * accounts) and every behaviour the reference leaves UNCONFIRMED, as a
 * named choice.  Unknown keys are refused (a typo must not silently keep
 * a default); keys starting with '_' are comments.
 */


#include <stdio.h>
#include <string.h>

#include "mt5sim.h"


#define mt5sim_err(err, ...)  snprintf(err, MT5SIM_ERR_MAX, __VA_ARGS__)


static const char *const  mt5sim_config_keys[] = {
    "server_offset_minutes", "total_key", "time_key", "version_access",
    "version_trade", "first_ticket", "plus_is_space", "backslash_escapes",
    "forbidden_status", "forbidden_body", "answer_without_start",
    "auth_timeout_retcode", "outside_group_retcode", "page_over_limit",
    "correction_skips_margin", "comment_max_units", "strict_http",
    "deal_fields", "managers", "groups", "accounts", NULL
};


static int mt5sim_config_known(const char *key);
static int mt5sim_config_int(json_t *cfg, const char *key, long min,
    long max, long *out, char *err);
static int mt5sim_config_bool(json_t *cfg, const char *key, int *out,
    char *err);
static int mt5sim_config_choice(json_t *cfg, const char *key,
    const char *a, const char *b, const char **out, char *err);
static int mt5sim_config_list(mt5sim_t *srv, json_t *cfg, const char *key,
    int (*put)(mt5sim_ledger_t *, json_t *, char *), char *err);
static int mt5sim_config_behaviour(mt5sim_t *srv, json_t *cfg, char *err);


static int
mt5sim_config_known(const char *key)
{
    size_t  i;

    if (key[0] == '_') {
        return 1;
    }
    for (i = 0; mt5sim_config_keys[i]; i++) {
        if (strcmp(key, mt5sim_config_keys[i]) == 0) {
            return 1;
        }
    }
    return 0;
}


/* leaves *out alone when the key is absent */
static int
mt5sim_config_int(json_t *cfg, const char *key, long min, long max,
    long *out, char *err)
{
    json_t  *v = json_object_get(cfg, key);

    if (v == NULL) {
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < min
        || json_integer_value(v) > max)
    {
        mt5sim_err(err, "\"%s\" must be an integer in %ld..%ld", key, min,
                   max);
        return -1;
    }
    *out = (long) json_integer_value(v);
    return 0;
}


static int
mt5sim_config_bool(json_t *cfg, const char *key, int *out, char *err)
{
    json_t  *v = json_object_get(cfg, key);

    if (v == NULL) {
        return 0;
    }
    if (!json_is_boolean(v)) {
        mt5sim_err(err, "\"%s\" must be true or false", key);
        return -1;
    }
    *out = json_is_true(v);
    return 0;
}


static int
mt5sim_config_choice(json_t *cfg, const char *key, const char *a,
    const char *b, const char **out, char *err)
{
    json_t      *v = json_object_get(cfg, key);
    const char  *s = json_string_value(v);

    if (v == NULL) {
        return 0;
    }
    if (s == NULL || (strcmp(s, a) != 0 && strcmp(s, b) != 0)) {
        mt5sim_err(err, "\"%s\" must be \"%s\" or \"%s\"", key, a, b);
        return -1;
    }
    *out = s;
    return 0;
}


static int
mt5sim_config_list(mt5sim_t *srv, json_t *cfg, const char *key,
    int (*put)(mt5sim_ledger_t *, json_t *, char *), char *err)
{
    json_t  *list = json_object_get(cfg, key), *item;
    char     sub[MT5SIM_ERR_MAX];
    size_t   i;

    if (list == NULL) {
        return 0;
    }
    if (!json_is_array(list)) {
        mt5sim_err(err, "\"%s\" must be an array", key);
        return -1;
    }
    json_array_foreach(list, i, item) {
        if (!json_is_object(item) || put(&srv->ledger, item, sub) != 0) {
            mt5sim_err(err, "%s[%zu]: %.200s", key, i,
                       json_is_object(item) ? sub : "not an object");
            return -1;
        }
    }
    return 0;
}


/* the UNCONFIRMED choices, each with the default the reference leans to */
static int
mt5sim_config_behaviour(mt5sim_t *srv, json_t *cfg, char *err)
{
    mt5sim_options_t  *o = &srv->opt;
    mt5sim_ledger_t   *l = &srv->ledger;
    const char        *answer = "http403", *page = "error", *body;
    long               v;
    json_t            *j;

    v = 0;
    if (mt5sim_config_int(cfg, "server_offset_minutes", -1440, 1440, &v,
                          err) != 0)
    {
        return -1;
    }
    l->offset_minutes = (int) v;

    v = (long) l->next_ticket;
    if (mt5sim_config_int(cfg, "first_ticket", 1, 1000000000000L, &v, err)) {
        return -1;
    }
    l->next_ticket = (uint64_t) v;

    v = o->forbidden_status;
    if (mt5sim_config_int(cfg, "forbidden_status", 400, 599, &v, err)) {
        return -1;
    }
    o->forbidden_status = (int) v;
    body = json_string_value(json_object_get(cfg, "forbidden_body"));
    if (body != NULL) {
        snprintf(o->forbidden_body, sizeof(o->forbidden_body), "%s", body);
    }

    v = o->auth_timeout_retcode;
    if (mt5sim_config_int(cfg, "auth_timeout_retcode", 1, 99999, &v, err)) {
        return -1;
    }
    o->auth_timeout_retcode = (int) v;
    v = l->outside_retcode;
    if (mt5sim_config_int(cfg, "outside_group_retcode", 1, 99999, &v, err)) {
        return -1;
    }
    l->outside_retcode = (int) v;
    v = (long) l->comment_units;
    if (mt5sim_config_int(cfg, "comment_max_units", 1, 63, &v, err)) {
        return -1;
    }
    l->comment_units = (size_t) v;

    if (mt5sim_config_bool(cfg, "plus_is_space", &o->plus_is_space, err)
        || mt5sim_config_bool(cfg, "backslash_escapes",
                              &o->backslash_escapes, err)
        || mt5sim_config_bool(cfg, "strict_http", &o->strict_http, err)
        || mt5sim_config_bool(cfg, "correction_skips_margin",
                              &l->correction_skips_margin, err)
        || mt5sim_config_choice(cfg, "answer_without_start", "http403",
                                "retcode", &answer, err)
        || mt5sim_config_choice(cfg, "page_over_limit", "error", "cap",
                                &page, err)
        || mt5sim_config_choice(cfg, "total_key", "total", "Total",
                                &srv->render.total_key, err)
        || mt5sim_config_choice(cfg, "time_key", "Time", "time",
                                &srv->render.time_key, err))
    {
        return -1;
    }
    o->answer_without_start_403 = strcmp(answer, "http403") == 0;
    o->page_cap = strcmp(page, "cap") == 0;

    if ((j = json_object_get(cfg, "version_access")) != NULL) {
        if ((srv->render.version_access = json_string_value(j)) == NULL) {
            mt5sim_err(err, "\"version_access\" must be a string");
            return -1;
        }
    }
    if ((j = json_object_get(cfg, "version_trade")) != NULL) {
        if ((srv->render.version_trade = json_string_value(j)) == NULL) {
            mt5sim_err(err, "\"version_trade\" must be a string");
            return -1;
        }
    }
    j = json_object_get(cfg, "deal_fields");
    if (j != NULL) {
        const char  *key;
        json_t      *val;

        if (!json_is_object(j)) {
            mt5sim_err(err, "\"deal_fields\" must be an object");
            return -1;
        }
        json_object_foreach(j, key, val) {
            if (!json_is_string(val)) {
                mt5sim_err(err, "deal_fields.%s must be a string", key);
                return -1;
            }
        }
        srv->render.deal_fields = j;
    }
    return 0;
}


int
mt5sim_config_load(mt5sim_t *srv, const char *path, char *err)
{
    json_error_t   jerr;
    json_t        *cfg, *v;
    const char    *key;
    char           sub[MT5SIM_ERR_MAX];

    cfg = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (cfg == NULL) {
        mt5sim_err(err, "%s:%d: %s", path, jerr.line, jerr.text);
        return -1;
    }
    srv->config = cfg;
    if (!json_is_object(cfg)) {
        mt5sim_err(err, "%s: not a JSON object", path);
        return -1;
    }
    json_object_foreach(cfg, key, v) {
        if (!mt5sim_config_known(key)) {
            mt5sim_err(err, "%s: unknown key \"%s\"", path, key);
            return -1;
        }
    }
    if (mt5sim_config_behaviour(srv, cfg, sub) != 0
        || mt5sim_config_list(srv, cfg, "groups", mt5sim_ledger_put_group,
                              sub) != 0
        || mt5sim_config_list(srv, cfg, "managers",
                              mt5sim_ledger_put_manager, sub) != 0
        || mt5sim_config_list(srv, cfg, "accounts",
                              mt5sim_ledger_put_account, sub) != 0)
    {
        mt5sim_err(err, "%.40s: %.200s", path, sub);
        return -1;
    }
    return 0;
}
