/*
 * Copyright (C) mt5-credit
 *
 * The control port (plain HTTP, JSON in and out): tests add accounts,
 * groups and managers on the fly, arm and clear faults, move the server
 * clock, and read the whole ledger and the counters.
 *
 *   POST   /control/account|group|manager   add or replace (journaled)
 *   POST   /control/fault                   arm one fault
 *   DELETE /control/fault, /control/faults  clear all; hung requests go on
 *   GET    /control/faults                  the armed faults
 *   POST   /control/deal                    a dealer's balance operation
 *                                           from the terminal (journaled);
 *                                           "time" back-dates it (tests of
 *                                           past days)
 *   POST   /control/trade                   a client's buy or sell:
 *                                           {"login":N,"action":0|1,
 *                                           "volume":N (1/10000 lot),
 *                                           "time":N optional, as above};
 *                                           no money moves (journaled)
 *   POST   /control/time                    {"offset_minutes":N}
 *   GET    /control/time                    offset and server time
 *   GET    /control/ledger                  every deal and account
 *   GET    /control/stats, DELETE resets    counters
 *   GET    /control/health
 */


#include <stdio.h>
#include <string.h>

#include "mt5sim.h"


static void mt5sim_control_error(mt5sim_control_reply_t *out, int status,
    const char *msg);
static void mt5sim_control_ok(mt5sim_control_reply_t *out);
static void mt5sim_control_put(mt5sim_t *srv, json_t *body,
    int (*put)(mt5sim_ledger_t *, json_t *, char *),
    mt5sim_control_reply_t *out);
static void mt5sim_control_fault(mt5sim_t *srv, json_t *body,
    mt5sim_control_reply_t *out);
static void mt5sim_control_time(mt5sim_t *srv, json_t *body,
    mt5sim_control_reply_t *out);
static void mt5sim_control_deal(mt5sim_t *srv, json_t *body,
    mt5sim_control_reply_t *out);
static void mt5sim_control_trade(mt5sim_t *srv, json_t *body,
    mt5sim_control_reply_t *out);


static void
mt5sim_control_error(mt5sim_control_reply_t *out, int status,
    const char *msg)
{
    out->status = status;
    out->json = json_pack("{s:s}", "error", msg);
}


static void
mt5sim_control_ok(mt5sim_control_reply_t *out)
{
    out->status = 200;
    out->json = json_pack("{s:b}", "ok", 1);
}


static void
mt5sim_control_put(mt5sim_t *srv, json_t *body,
    int (*put)(mt5sim_ledger_t *, json_t *, char *),
    mt5sim_control_reply_t *out)
{
    char  err[MT5SIM_ERR_MAX];

    if (put(&srv->ledger, body, err) != 0) {
        mt5sim_control_error(out, 400, err);
        return;
    }
    mt5sim_control_ok(out);
}


static void
mt5sim_control_fault(mt5sim_t *srv, json_t *body,
    mt5sim_control_reply_t *out)
{
    char      err[MT5SIM_ERR_MAX];
    uint64_t  id = 0;
    int       rc;

    pthread_mutex_lock(&srv->lock);
    rc = mt5sim_faults_add(&srv->faults, body, &id, err);
    pthread_mutex_unlock(&srv->lock);
    if (rc != 0) {
        mt5sim_control_error(out, 400, err);
        return;
    }
    out->status = 200;
    out->json = json_pack("{s:b,s:I}", "ok", 1, "id", (json_int_t) id);
}


static void
mt5sim_control_time(mt5sim_t *srv, json_t *body,
    mt5sim_control_reply_t *out)
{
    json_t  *v = json_object_get(body, "offset_minutes");
    char     err[MT5SIM_ERR_MAX];

    if (!json_is_integer(v)) {
        mt5sim_control_error(out, 400, "\"offset_minutes\" must be an "
                             "integer");
        return;
    }
    if (mt5sim_ledger_set_offset(&srv->ledger, (int) json_integer_value(v),
                                 err) != 0)
    {
        mt5sim_control_error(out, 400, err);
        return;
    }
    mt5sim_control_ok(out);
}


/*
 * {"manager":N,"login":N,"type":2,"amount":"-12.50","comment":"..."}: the
 * same rules as trade/balance, for deals no API client made (a dealer's
 * manual correction, a bonus), which reconciliation must find.
 */
static void
mt5sim_control_deal(mt5sim_t *srv, json_t *body,
    mt5sim_control_reply_t *out)
{
    char                  err[MT5SIM_ERR_MAX];
    json_int_t            manager, login, type = 2, time = 0;
    const char           *amount, *comment = "";
    uint64_t              ticket = 0;
    int                   rc;
    mt5sim_balance_req_t  r;

    if (json_unpack(body, "{s:I,s:I,s?I,s:s,s?s,s?I}", "manager", &manager,
                    "login", &login, "type", &type, "amount", &amount,
                    "comment", &comment, "time", &time) != 0
        || time < 0)
    {
        mt5sim_control_error(out, 400, "need manager, login, amount "
                             "(text), optional type, comment and time "
                             "(server seconds, to back-date it)");
        return;
    }

    memset(&r, 0, sizeof(r));
    r.login = (uint64_t) login;
    r.type = (int) type;
    r.amount = amount;
    r.comment = comment;
    r.time_msc = (int64_t) time * 1000;

    rc = mt5sim_ledger_balance(&srv->ledger, (uint64_t) manager, &r, &ticket,
                               err);
    if (rc != MT5_RET_OK) {
        out->status = 409;
        out->json = json_pack("{s:i,s:s}", "retcode", rc, "error", err);
        return;
    }

    out->status = 200;
    out->json = json_pack("{s:b,s:I}", "ok", 1, "ticket",
                          (json_int_t) ticket);
}


/*
 * {"login":N,"action":0|1,"volume":N,"time":N}: a trade the client made
 * in its terminal, which the risk rules count (the volume traded since a
 * deposit).  Refused whole, planting nothing, unless every field is right.
 */
static void
mt5sim_control_trade(mt5sim_t *srv, json_t *body,
    mt5sim_control_reply_t *out)
{
    char        err[MT5SIM_ERR_MAX];
    json_int_t  login, action, volume, time = 0;
    uint64_t    ticket = 0;
    int         rc;

    if (json_unpack(body, "{s:I,s:I,s:I,s?I}", "login", &login,
                    "action", &action, "volume", &volume, "time", &time)
        != 0)
    {
        mt5sim_control_error(out, 400, "need login, action, volume "
                             "(integers) and optional time (server "
                             "seconds, to back-date it)");
        return;
    }
    if (login <= 0) {
        mt5sim_control_error(out, 400, "\"login\" must be positive");
        return;
    }
    if (action != 0 && action != 1) {
        mt5sim_control_error(out, 400, "\"action\" must be 0 (buy) or 1 "
                             "(sell)");
        return;
    }
    if (volume <= 0 || (uint64_t) volume > MT5SIM_VOLUME_MAX) {
        snprintf(err, sizeof(err), "\"volume\" must be 1..%llu "
                 "(1/10000 lot)", (unsigned long long) MT5SIM_VOLUME_MAX);
        mt5sim_control_error(out, 400, err);
        return;
    }
    if (time < 0 || time > INT64_MAX / 1000) {
        mt5sim_control_error(out, 400, "\"time\" must be server seconds");
        return;
    }

    rc = mt5sim_ledger_trade(&srv->ledger, (uint64_t) login, (int) action,
                             (uint64_t) volume, (int64_t) time * 1000,
                             &ticket, err);
    if (rc != MT5_RET_OK) {
        out->status = 409;
        out->json = json_pack("{s:i,s:s}", "retcode", rc, "error", err);
        return;
    }

    out->status = 200;
    out->json = json_pack("{s:b,s:I}", "ok", 1, "ticket",
                          (json_int_t) ticket);
}


void
mt5sim_control_call(mt5sim_t *srv, const char *method, const char *path,
    const char *body, size_t body_len, mt5sim_control_reply_t *out)
{
    int      get = strcmp(method, "GET") == 0;
    int      post = strcmp(method, "POST") == 0;
    int      del = strcmp(method, "DELETE") == 0;
    json_t  *doc = NULL;

    out->status = 200;
    out->json = NULL;
    mt5sim_stat_inc(&srv->stats.control_requests);

    if (post) {
        doc = json_loadb(body ? body : "", body_len, 0, NULL);
        if (!json_is_object(doc)) {
            json_decref(doc);
            mt5sim_control_error(out, 400, "the body must be a JSON object");
            return;
        }
    }

    if (post && strcmp(path, "/control/account") == 0) {
        mt5sim_control_put(srv, doc, mt5sim_ledger_put_account, out);
    } else if (post && strcmp(path, "/control/group") == 0) {
        mt5sim_control_put(srv, doc, mt5sim_ledger_put_group, out);
    } else if (post && strcmp(path, "/control/manager") == 0) {
        mt5sim_control_put(srv, doc, mt5sim_ledger_put_manager, out);
    } else if (post && strcmp(path, "/control/fault") == 0) {
        mt5sim_control_fault(srv, doc, out);
    } else if (del && (strcmp(path, "/control/fault") == 0
                       || strcmp(path, "/control/faults") == 0))
    {
        pthread_mutex_lock(&srv->lock);
        mt5sim_faults_clear(&srv->faults);
        pthread_mutex_unlock(&srv->lock);
        mt5sim_control_ok(out);
    } else if (get && strcmp(path, "/control/faults") == 0) {
        pthread_mutex_lock(&srv->lock);
        out->json = mt5sim_faults_json(&srv->faults);
        pthread_mutex_unlock(&srv->lock);
    } else if (post && strcmp(path, "/control/deal") == 0) {
        mt5sim_control_deal(srv, doc, out);
    } else if (post && strcmp(path, "/control/trade") == 0) {
        mt5sim_control_trade(srv, doc, out);

    } else if (post && strcmp(path, "/control/time") == 0) {
        mt5sim_control_time(srv, doc, out);
    } else if (get && strcmp(path, "/control/time") == 0) {
        out->json = json_pack("{s:i,s:I}", "offset_minutes",
                              __atomic_load_n(&srv->ledger.offset_minutes,
                                              __ATOMIC_RELAXED),
                              "server_time_msc",
                              (json_int_t) mt5sim_server_ms(&srv->ledger));
    } else if (get && strcmp(path, "/control/ledger") == 0) {
        pthread_mutex_lock(&srv->ledger.lock);
        out->json = mt5sim_render_ledger(&srv->ledger, &srv->render);
        pthread_mutex_unlock(&srv->ledger.lock);
    } else if (get && strcmp(path, "/control/stats") == 0) {
        out->json = mt5sim_stats_json(&srv->stats);
    } else if (del && strcmp(path, "/control/stats") == 0) {
        mt5sim_stats_reset(&srv->stats);
        mt5sim_control_ok(out);
    } else if (get && strcmp(path, "/control/health") == 0) {
        mt5sim_control_ok(out);
    } else {
        mt5sim_control_error(out, 404, "no such control endpoint");
    }
    json_decref(doc);
}
