/*
 * Copyright (C) mt5-credit
 *
 * Fault injection: a list of armed faults, each for one endpoint or for
 * every endpoint it fits, for the next `count` matching requests (or
 * until cleared).  A request takes, in the order the faults were armed:
 *   - at most one latency;
 *   - at most one action: drop_before, drop_after, hang, hang_after,
 *     retcode, http403, garbage;
 *   - each answer modifier that fits it (wrong_login, partial_page,
 *     empty_page, bad_total, bad_cli_rand), unless the action stops the
 *     command from running at all.
 * The server's lock is held by the callers.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mt5sim.h"


#define mt5sim_err(err, ...)  snprintf(err, MT5SIM_ERR_MAX, __VA_ARGS__)
#define EP(e)                 (1u << (MT5SIM_EP_ ## e))

enum {
    MT5SIM_FC_LATENCY = 0,
    MT5SIM_FC_ACTION,
    MT5SIM_FC_MODIFIER
};


typedef struct {
    const char  *name;
    int          category;
    unsigned     fits;          /* endpoints; 0 = all */
    unsigned     dflt;          /* without "endpoint"; 0 = fits */
} mt5sim_fault_desc_t;


static const mt5sim_fault_desc_t  mt5sim_fault_desc[MT5SIM_F_COUNT] = {
    [MT5SIM_F_LATENCY]      = { "latency", MT5SIM_FC_LATENCY, 0, 0 },
    [MT5SIM_F_DROP_BEFORE]  = { "drop_before", MT5SIM_FC_ACTION, 0, 0 },
    [MT5SIM_F_DROP_AFTER]   = { "drop_after", MT5SIM_FC_ACTION, 0, 0 },
    [MT5SIM_F_HANG]         = { "hang", MT5SIM_FC_ACTION, 0, 0 },
    [MT5SIM_F_HANG_AFTER]   = { "hang_after", MT5SIM_FC_ACTION, 0, 0 },
    [MT5SIM_F_WRONG_LOGIN]  = { "wrong_login", MT5SIM_FC_MODIFIER,
                                EP(USER_GET) | EP(USER_ACCOUNT_GET)
                                | EP(DEAL_GET) | EP(DEAL_GET_PAGE)
                                | EP(DEAL_GET_BATCH), 0 },
    [MT5SIM_F_RETCODE]      = { "retcode", MT5SIM_FC_ACTION, 0, 0 },
    [MT5SIM_F_PARTIAL_PAGE] = { "partial_page", MT5SIM_FC_MODIFIER,
                                EP(DEAL_GET_PAGE) | EP(DEAL_GET_BATCH),
                                EP(DEAL_GET_PAGE) },
    [MT5SIM_F_EMPTY_PAGE]   = { "empty_page", MT5SIM_FC_MODIFIER,
                                EP(DEAL_GET_PAGE) | EP(DEAL_GET_BATCH),
                                EP(DEAL_GET_PAGE) },
    [MT5SIM_F_BAD_TOTAL]    = { "bad_total", MT5SIM_FC_MODIFIER,
                                EP(DEAL_GET_TOTAL), 0 },
    [MT5SIM_F_BAD_CLI_RAND] = { "bad_cli_rand", MT5SIM_FC_MODIFIER,
                                EP(AUTH_ANSWER), 0 },
    [MT5SIM_F_HTTP403]      = { "http403", MT5SIM_FC_ACTION, 0, 0 },
    [MT5SIM_F_GARBAGE]      = { "garbage", MT5SIM_FC_ACTION, 0, 0 },
};


static int mt5sim_fault_fits(const mt5sim_fault_t *f, mt5sim_endpoint_e ep);
static void mt5sim_fault_consume(mt5sim_fault_t *f);
static int mt5sim_fault_stops_command(const mt5sim_fault_t *f);


const char *
mt5sim_fault_name(mt5sim_fault_kind_e kind)
{
    return kind < MT5SIM_F_COUNT ? mt5sim_fault_desc[kind].name : "?";
}


static int
mt5sim_fault_fits(const mt5sim_fault_t *f, mt5sim_endpoint_e ep)
{
    const mt5sim_fault_desc_t  *d = &mt5sim_fault_desc[f->kind];
    unsigned                    bit = 1u << ep;

    if (f->endpoint[0]) {
        return strcmp(f->endpoint, mt5sim_endpoint_path(ep)) == 0;
    }
    if (d->dflt) {
        return (d->dflt & bit) != 0;
    }
    return d->fits == 0 || (d->fits & bit) != 0;
}


/* count < 0: until cleared; a spent fault is removed by the caller */
static void
mt5sim_fault_consume(mt5sim_fault_t *f)
{
    f->hits++;
    if (f->count > 0) {
        f->count--;
        if (f->count == 0) {
            f->count = -2;      /* spent */
        }
    }
}


/* the actions after which the command itself never runs */
static int
mt5sim_fault_stops_command(const mt5sim_fault_t *f)
{
    switch (f->kind) {
    case MT5SIM_F_DROP_BEFORE:
    case MT5SIM_F_RETCODE:
        return 1;
    case MT5SIM_F_HTTP403:
    case MT5SIM_F_GARBAGE:
        return !f->execute;
    default:
        return 0;
    }
}


/*
 * {"kind":"retcode","endpoint":"/api/trade/balance","count":1,
 *  "retcode":"10019 Not enough money"}; also "ms", "login", "execute".
 */
int
mt5sim_faults_add(mt5sim_faults_t *fs, json_t *spec, uint64_t *id,
    char *err)
{
    mt5sim_fault_t   f, *v;
    const char      *kind, *ep;
    mt5sim_endpoint_e e;
    json_t          *j;
    char             buf[MT5SIM_RETCODE_MAX];
    int              k;

    memset(&f, 0, sizeof(f));
    kind = json_string_value(json_object_get(spec, "kind"));
    for (k = 0; kind && k < MT5SIM_F_COUNT; k++) {
        if (strcmp(kind, mt5sim_fault_desc[k].name) == 0) {
            break;
        }
    }
    if (kind == NULL || k == MT5SIM_F_COUNT) {
        mt5sim_err(err, "unknown fault kind \"%s\"", kind ? kind : "");
        return -1;
    }
    f.kind = (mt5sim_fault_kind_e) k;

    ep = json_string_value(json_object_get(spec, "endpoint"));
    if (ep != NULL && *ep != '\0') {
        e = mt5sim_endpoint_lookup(ep);
        if (e == MT5SIM_EP_UNKNOWN || strlen(ep) >= sizeof(f.endpoint)) {
            mt5sim_err(err, "unknown endpoint \"%s\"", ep);
            return -1;
        }
        if (mt5sim_fault_desc[k].fits
            && !(mt5sim_fault_desc[k].fits & (1u << e)))
        {
            mt5sim_err(err, "fault %s does not apply to %s", kind, ep);
            return -1;
        }
        strcpy(f.endpoint, ep);
    }

    j = json_object_get(spec, "count");
    if (j != NULL && (!json_is_integer(j) || json_integer_value(j) < 0)) {
        mt5sim_err(err, "\"count\" must be an integer >= 0");
        return -1;
    }
    f.count = j ? (long) json_integer_value(j) : 1;
    if (f.count == 0) {
        f.count = -1;
    }

    j = json_object_get(spec, "ms");
    if (j != NULL && (!json_is_integer(j) || json_integer_value(j) < 0)) {
        mt5sim_err(err, "\"ms\" must be an integer >= 0");
        return -1;
    }
    f.ms = j ? (long) json_integer_value(j) : 100;

    j = json_object_get(spec, "login");
    if (json_is_integer(j) && json_integer_value(j) > 0) {
        f.login = (uint64_t) json_integer_value(j);
    } else if (j && (!json_is_string(j)
                     || mt5sim_parse_u64(json_string_value(j), &f.login)))
    {
        mt5sim_err(err, "\"login\" must be a login");
        return -1;
    }

    j = json_object_get(spec, "retcode");
    if (f.kind == MT5SIM_F_RETCODE) {
        if (json_is_integer(j)) {
            mt5sim_retcode((int) json_integer_value(j), buf, sizeof(buf));
            strcpy(f.retcode, buf);
        } else if (json_is_string(j) && json_string_length(j) > 0
                   && json_string_length(j) < sizeof(f.retcode))
        {
            strcpy(f.retcode, json_string_value(j));
        } else {
            mt5sim_err(err, "retcode fault: \"retcode\" must be like "
                       "\"10019 Not enough money\"");
            return -1;
        }
    }
    f.execute = json_is_true(json_object_get(spec, "execute"));

    /* not JSON, yet it starts like an answer: a lenient parser would bite */
    j = json_object_get(spec, "body");
    if (j != NULL && (!json_is_string(j)
                      || json_string_length(j) >= sizeof(f.body)))
    {
        mt5sim_err(err, "\"body\" must be a short string");
        return -1;
    }
    snprintf(f.body, sizeof(f.body), "%s",
             j ? json_string_value(j) : "{\"retcode\":\"0 Done\",\"answer\":{");

    if (fs->n == fs->cap) {
        size_t cap = fs->cap ? 2 * fs->cap : 16;
        v = realloc(fs->v, cap * sizeof(*v));
        if (v == NULL) {
            mt5sim_err(err, "out of memory");
            return -1;
        }
        fs->v = v;
        fs->cap = cap;
    }
    f.id = ++fs->next_id;
    fs->v[fs->n++] = f;
    *id = f.id;
    return 0;
}


/* every fault off; hung requests watch the generation and go on */
void
mt5sim_faults_clear(mt5sim_faults_t *fs)
{
    fs->n = 0;
    fs->generation++;
}


void
mt5sim_faults_take(mt5sim_faults_t *fs, mt5sim_endpoint_e ep,
    mt5sim_fault_take_t *t)
{
    mt5sim_fault_t  *f;
    size_t           i, w;
    int              got_latency = 0, cat;

    memset(t, 0, sizeof(*t));
    t->generation = fs->generation;

    for (i = 0; i < fs->n; i++) {
        f = &fs->v[i];
        cat = mt5sim_fault_desc[f->kind].category;
        if (cat == MT5SIM_FC_MODIFIER || !mt5sim_fault_fits(f, ep)) {
            continue;
        }
        if (cat == MT5SIM_FC_LATENCY && !got_latency) {
            got_latency = 1;
            t->latency_ms = f->ms;
            mt5sim_fault_consume(f);
        } else if (cat == MT5SIM_FC_ACTION && !t->has_action) {
            t->has_action = 1;
            mt5sim_fault_consume(f);
            t->action = *f;
        }
    }

    if (!(t->has_action && mt5sim_fault_stops_command(&t->action))) {
        for (i = 0; i < fs->n; i++) {
            f = &fs->v[i];
            if (mt5sim_fault_desc[f->kind].category != MT5SIM_FC_MODIFIER
                || (t->modifiers & (1u << f->kind))
                || !mt5sim_fault_fits(f, ep))
            {
                continue;
            }
            t->modifiers |= 1u << f->kind;
            if (f->kind == MT5SIM_F_WRONG_LOGIN) {
                t->wrong_login = f->login;
            }
            mt5sim_fault_consume(f);
        }
    }

    for (i = 0, w = 0; i < fs->n; i++) {
        if (fs->v[i].count != -2) {
            fs->v[w++] = fs->v[i];
        }
    }
    fs->n = w;
}


json_t *
mt5sim_faults_json(const mt5sim_faults_t *fs)
{
    json_t                *list = json_array(), *o;
    const mt5sim_fault_t  *f;
    size_t                 i;

    for (i = 0; i < fs->n; i++) {
        f = &fs->v[i];
        o = json_pack("{s:I,s:s,s:s,s:I,s:I}",
                      "id", (json_int_t) f->id,
                      "kind", mt5sim_fault_name(f->kind),
                      "endpoint", f->endpoint,
                      "count", (json_int_t) (f->count < 0 ? 0 : f->count),
                      "hits", (json_int_t) f->hits);
        if (f->kind == MT5SIM_F_LATENCY) {
            json_object_set_new(o, "ms", json_integer(f->ms));
        }
        if (f->kind == MT5SIM_F_RETCODE) {
            json_object_set_new(o, "retcode", json_string(f->retcode));
        }
        if (f->login) {
            json_object_set_new(o, "login", json_integer((json_int_t)
                                                         f->login));
        }
        if (f->execute) {
            json_object_set_new(o, "execute", json_true());
        }
        json_array_append_new(list, o);
    }
    o = json_object();
    json_object_set_new(o, "faults", list);
    json_object_set_new(o, "generation", json_integer((json_int_t)
                                                      fs->generation));
    return o;
}


void
mt5sim_faults_free(mt5sim_faults_t *fs)
{
    free(fs->v);
    memset(fs, 0, sizeof(*fs));
}
