/*
 * Copyright (C) mt5-credit
 *
 * Counters for GET /control/stats, so tests can assert "one call", "no
 * second socket", "executed once".  Plain atomics, no lock.
 */


#include "mt5sim.h"


#define mt5sim_load(p)  __atomic_load_n((p), __ATOMIC_RELAXED)


json_t *
mt5sim_stats_json(mt5sim_stats_t *s)
{
    json_t    *eps = json_object(), *o;
    int        ep;

    for (ep = 0; ep < MT5SIM_EP_COUNT; ep++) {
        o = json_pack("{s:I}", "requests",
                      (json_int_t) mt5sim_load(&s->requests[ep]));
        if (ep == MT5SIM_EP_TRADE_BALANCE) {
            json_object_set_new(o, "executed", json_integer((json_int_t)
                                mt5sim_load(&s->executed[ep])));
        }
        json_object_set_new(eps, mt5sim_endpoint_path(
                                (mt5sim_endpoint_e) ep), o);
    }
    o = json_object();
    json_object_set_new(o, "endpoints", eps);
    json_object_set_new(o, "connections_opened", json_integer(
                        (json_int_t) mt5sim_load(&s->connections_opened)));
    json_object_set_new(o, "connections_closed", json_integer(
                        (json_int_t) mt5sim_load(&s->connections_closed)));
    json_object_set_new(o, "connections_open", json_integer(
                        (json_int_t) mt5sim_load(&s->connections_open)));
    json_object_set_new(o, "sessions_authenticated", json_integer(
                        (json_int_t) mt5sim_load(&s->sessions_authenticated)));
    json_object_set_new(o, "sessions_authenticated_max", json_integer(
                        (json_int_t) mt5sim_load(
                            &s->sessions_authenticated_max)));
    json_object_set_new(o, "auth_ok",
                        json_integer((json_int_t) mt5sim_load(&s->auth_ok)));
    json_object_set_new(o, "auth_failed", json_integer(
                        (json_int_t) mt5sim_load(&s->auth_failed)));
    json_object_set_new(o, "http403",
                        json_integer((json_int_t) mt5sim_load(&s->http403)));
    json_object_set_new(o, "dropped",
                        json_integer((json_int_t) mt5sim_load(&s->dropped)));
    json_object_set_new(o, "hanging",
                        json_integer((json_int_t) mt5sim_load(&s->hanging)));
    json_object_set_new(o, "control_requests", json_integer(
                        (json_int_t) mt5sim_load(&s->control_requests)));
    return o;
}


/* zeroes the counts; the gauges (open, authenticated, hung) stay */
void
mt5sim_stats_reset(mt5sim_stats_t *s)
{
    int  ep;

    for (ep = 0; ep < MT5SIM_EP_COUNT; ep++) {
        __atomic_store_n(&s->requests[ep], 0, __ATOMIC_RELAXED);
        __atomic_store_n(&s->executed[ep], 0, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&s->connections_opened, 0, __ATOMIC_RELAXED);
    /* the high-water mark starts again from what is open now */
    __atomic_store_n(&s->sessions_authenticated_max,
                     mt5sim_load(&s->sessions_authenticated),
                     __ATOMIC_RELAXED);
    __atomic_store_n(&s->connections_closed, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->auth_ok, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->auth_failed, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->http403, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->dropped, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->control_requests, 0, __ATOMIC_RELAXED);
}
