/*
 * Copyright (C) mt5-credit
 *
 * The JSON the access server answers with: deals (MQ-DEAL-DS plus the
 * fields a live capture shows and the docs do not: Fee, ModifyFlags,
 * VolumeClosedExt), users, trade accounts, groups.  Every scalar is a
 * string, money is formatted with the currency's digits, and fields come
 * in the documented order.  The caller holds the ledger lock.
 */


#include <stdio.h>
#include <string.h>
#include <time.h>

#include "mt5sim.h"


#define MT5SIM_NUM_MAX  48


static void mt5sim_set_u64(json_t *o, const char *key, uint64_t v);
static void mt5sim_set_i64(json_t *o, const char *key, int64_t v);
static void mt5sim_set_money(json_t *o, const char *key, int64_t v,
    int digits);
static int mt5sim_account_digits(mt5sim_ledger_t *l,
    const mt5sim_account_t *a);


static void
mt5sim_set_u64(json_t *o, const char *key, uint64_t v)
{
    char  buf[MT5SIM_NUM_MAX];

    snprintf(buf, sizeof(buf), "%llu", (unsigned long long) v);
    json_object_set_new(o, key, json_string(buf));
}


static void
mt5sim_set_i64(json_t *o, const char *key, int64_t v)
{
    char  buf[MT5SIM_NUM_MAX];

    snprintf(buf, sizeof(buf), "%lld", (long long) v);
    json_object_set_new(o, key, json_string(buf));
}


static void
mt5sim_set_money(json_t *o, const char *key, int64_t v, int digits)
{
    char  buf[MT5SIM_NUM_MAX];

    mt5sim_money_format(v, digits, buf, sizeof(buf));
    json_object_set_new(o, key, json_string(buf));
}


static int
mt5sim_account_digits(mt5sim_ledger_t *l, const mt5sim_account_t *a)
{
    mt5sim_group_t  *g = mt5sim_ledger_group(l, a->group);

    return g ? g->digits : 2;
}


void
mt5sim_render_time(int64_t server_s, char *buf, size_t n)
{
    struct tm  tm;
    time_t     t = (time_t) server_s;

    gmtime_r(&t, &tm);
    snprintf(buf, n, "%04d.%02d.%02d %02d:%02d:%02d", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}


/* `login` is what the Login field says (a wrong_login fault lies) */
json_t *
mt5sim_render_deal(const mt5sim_render_t *r, const mt5sim_deal_t *d,
    uint64_t login)
{
    json_t      *o = json_object(), *v;
    const char  *key;
    int          dc = d->digits;

    mt5sim_set_u64(o, "Deal", d->ticket);
    json_object_set_new(o, "ExternalID", json_string(""));
    mt5sim_set_u64(o, "Login", login);
    mt5sim_set_u64(o, "Dealer", d->dealer);
    json_object_set_new(o, "Order", json_string("0"));
    mt5sim_set_i64(o, "Action", d->action);
    json_object_set_new(o, "Entry", json_string("0"));
    json_object_set_new(o, "Reason", json_string("2"));
    json_object_set_new(o, "Digits", json_string("0"));
    mt5sim_set_i64(o, "DigitsCurrency", dc);
    json_object_set_new(o, "ContractSize", json_string("0.00"));
    mt5sim_set_i64(o, "Time", d->time_msc / 1000);
    mt5sim_set_i64(o, "TimeMsc", d->time_msc);
    json_object_set_new(o, "Symbol", json_string(""));
    json_object_set_new(o, "Price", json_string("0.00000"));
    json_object_set_new(o, "PriceSL", json_string("0.00000"));
    json_object_set_new(o, "PriceTP", json_string("0.00000"));
    mt5sim_set_u64(o, "Volume", d->volume);
    /* VolumeExt: the same in 1e-8 lots (MT5SIM_VOLUME_MAX keeps it) */
    mt5sim_set_u64(o, "VolumeExt", d->volume * 10000);
    mt5sim_set_money(o, "Profit", d->amount, dc);
    mt5sim_set_money(o, "Value", 0, dc);
    mt5sim_set_money(o, "Storage", 0, dc);
    mt5sim_set_money(o, "Commission", 0, dc);
    mt5sim_set_money(o, "Fee", 0, dc);
    json_object_set_new(o, "RateProfit", json_string("1.00000000"));
    json_object_set_new(o, "RateMargin", json_string("0.00000000"));
    json_object_set_new(o, "ExpertID", json_string("0"));
    json_object_set_new(o, "PositionID", json_string("0"));
    json_object_set_new(o, "Comment", json_string(d->comment));
    mt5sim_set_money(o, "ProfitRaw", d->amount, dc);
    json_object_set_new(o, "PricePosition", json_string("0.00000"));
    json_object_set_new(o, "VolumeClosed", json_string("0"));
    json_object_set_new(o, "VolumeClosedExt", json_string("0"));
    json_object_set_new(o, "TickValue", json_string("0.00000"));
    json_object_set_new(o, "TickSize", json_string("0.00000"));
    json_object_set_new(o, "Flags", json_string("0"));
    json_object_set_new(o, "Gateway", json_string(""));
    json_object_set_new(o, "PriceGateway", json_string("0.00000"));
    json_object_set_new(o, "ModifyFlags", json_string("0"));
    json_object_set_new(o, "MarketBid", json_string("0.00000"));
    json_object_set_new(o, "MarketAsk", json_string("0.00000"));
    json_object_set_new(o, "MarketLast", json_string("0.00000"));
    json_object_set_new(o, "ApiData", json_array());

    /* the UNCONFIRMED defaults (Entry, Reason, Order, ...) from config */
    if (r->deal_fields) {
        json_object_foreach(r->deal_fields, key, v) {
            /* a copy: the config's values are shared by every thread */
            json_object_set_new(o, key, json_string(json_string_value(v)));
        }
    }
    return o;
}


json_t *
mt5sim_render_user(mt5sim_ledger_t *l, const mt5sim_account_t *a,
    uint64_t login)
{
    json_t  *o = json_object();
    int      dc = mt5sim_account_digits(l, a);
    char     name[MT5SIM_NAME_MAX + 32];

    if (a->name[0]) {
        snprintf(name, sizeof(name), "%s", a->name);
    } else {
        snprintf(name, sizeof(name), "Test %llu",
                 (unsigned long long) a->login);
    }
    mt5sim_set_u64(o, "Login", login);
    json_object_set_new(o, "Group", json_string(a->group));
    json_object_set_new(o, "CertSerialNumber", json_string("0"));
    mt5sim_set_u64(o, "Rights", a->rights);
    json_object_set_new(o, "MQID", json_string("0"));
    mt5sim_set_i64(o, "Registration", a->registered);
    mt5sim_set_i64(o, "LastAccess", a->registered);
    mt5sim_set_i64(o, "LastPassChange", a->registered);
    json_object_set_new(o, "LastIP", json_string(""));
    json_object_set_new(o, "Name", json_string(name));
    json_object_set_new(o, "FirstName", json_string(""));
    json_object_set_new(o, "LastName", json_string(""));
    json_object_set_new(o, "MiddleName", json_string(""));
    json_object_set_new(o, "Company", json_string(""));
    json_object_set_new(o, "Account", json_string(""));
    json_object_set_new(o, "Country", json_string(""));
    json_object_set_new(o, "Language", json_string("0"));
    json_object_set_new(o, "ClientID", json_string("0"));
    json_object_set_new(o, "City", json_string(""));
    json_object_set_new(o, "State", json_string(""));
    json_object_set_new(o, "ZipCode", json_string(""));
    json_object_set_new(o, "Address", json_string(""));
    json_object_set_new(o, "Phone", json_string(""));
    json_object_set_new(o, "Email", json_string(""));
    json_object_set_new(o, "ID", json_string(""));
    json_object_set_new(o, "Status", json_string(""));
    json_object_set_new(o, "Comment", json_string(""));
    json_object_set_new(o, "Color", json_string("4278190080"));
    json_object_set_new(o, "PhonePassword", json_string(""));
    mt5sim_set_i64(o, "Leverage", a->leverage);
    json_object_set_new(o, "Agent", json_string("0"));
    mt5sim_set_money(o, "Balance", a->balance, dc);
    mt5sim_set_money(o, "Credit", a->credit, dc);
    json_object_set_new(o, "InterestRate", json_string("0.00"));
    mt5sim_set_money(o, "CommissionDaily", 0, dc);
    mt5sim_set_money(o, "CommissionMonthly", 0, dc);
    mt5sim_set_money(o, "CommissionAgentDaily", 0, dc);
    mt5sim_set_money(o, "CommissionAgentMonthly", 0, dc);
    mt5sim_set_money(o, "BalancePrevDay", a->balance, dc);
    mt5sim_set_money(o, "BalancePrevMonth", a->balance, dc);
    mt5sim_set_money(o, "EquityPrevDay", a->balance + a->credit, dc);
    mt5sim_set_money(o, "EquityPrevMonth", a->balance + a->credit, dc);
    json_object_set_new(o, "TradeAccounts", json_string(""));
    json_object_set_new(o, "LeadCampaign", json_string(""));
    json_object_set_new(o, "LeadSource", json_string(""));
    json_object_set_new(o, "ApiData", json_array());
    return o;
}


json_t *
mt5sim_render_account(mt5sim_ledger_t *l, const mt5sim_account_t *a,
    uint64_t login)
{
    json_t    *o = json_object();
    int        dc = mt5sim_account_digits(l, a);
    int64_t    equity = a->balance + a->credit;
    __int128   level = 0;
    char       buf[MT5SIM_NUM_MAX];

    /* MarginLevel = equity / margin, in percent with 2 decimals */
    if (a->margin > 0) {
        level = (__int128) equity * 10000 / a->margin;
    }
    snprintf(buf, sizeof(buf), "%lld.%02lld", (long long) (level / 100),
             (long long) ((level < 0 ? -level : level) % 100));

    mt5sim_set_u64(o, "Login", login);
    mt5sim_set_i64(o, "CurrencyDigits", dc);
    mt5sim_set_money(o, "Balance", a->balance, dc);
    mt5sim_set_money(o, "Credit", a->credit, dc);
    mt5sim_set_money(o, "Margin", a->margin, dc);
    mt5sim_set_money(o, "MarginFree", equity - a->margin, dc);
    json_object_set_new(o, "MarginLevel", json_string(buf));
    mt5sim_set_i64(o, "MarginLeverage", a->leverage);
    mt5sim_set_money(o, "MarginInitial", 0, dc);
    mt5sim_set_money(o, "MarginMaintenance", 0, dc);
    mt5sim_set_money(o, "Profit", 0, dc);
    mt5sim_set_money(o, "Storage", 0, dc);
    mt5sim_set_money(o, "Floating", 0, dc);
    mt5sim_set_money(o, "Equity", equity, dc);
    json_object_set_new(o, "SOActivation", json_string("0"));
    json_object_set_new(o, "SOTime", json_string("0"));
    json_object_set_new(o, "SOLevel", json_string("0.00"));
    mt5sim_set_money(o, "SOEquity", 0, dc);
    mt5sim_set_money(o, "SOMargin", 0, dc);
    mt5sim_set_money(o, "BlockedCommission", 0, dc);
    mt5sim_set_money(o, "BlockedProfit", 0, dc);
    mt5sim_set_money(o, "Assets", 0, dc);
    mt5sim_set_money(o, "Liabilities", 0, dc);
    return o;
}


json_t *
mt5sim_render_group(const mt5sim_group_t *g)
{
    json_t  *o = json_object();

    json_object_set_new(o, "Group", json_string(g->name));
    json_object_set_new(o, "Server", json_string("0"));
    json_object_set_new(o, "PermissionsFlags", json_string("0"));
    json_object_set_new(o, "AuthMode", json_string("0"));
    json_object_set_new(o, "Company", json_string(""));
    json_object_set_new(o, "Currency", json_string(g->currency));
    mt5sim_set_i64(o, "CurrencyDigits", g->digits);
    json_object_set_new(o, "ReportsMode", json_string("0"));
    json_object_set_new(o, "MarginMode", json_string("0"));
    json_object_set_new(o, "MarginCall", json_string("50.00"));
    json_object_set_new(o, "MarginStopOut", json_string("30.00"));
    json_object_set_new(o, "DemoLeverage", json_string("0"));
    json_object_set_new(o, "LimitPositions", json_string("0"));
    return o;
}


/* GET /control/ledger: every deal, every account's money */
json_t *
mt5sim_render_ledger(mt5sim_ledger_t *l, const mt5sim_render_t *r)
{
    json_t            *deals = json_array(), *accounts = json_array(), *o;
    mt5sim_account_t  *a;
    mt5sim_group_t    *g;
    size_t             i;
    int                dc;

    for (i = 0; i < l->ndeals; i++) {
        json_array_append_new(deals, mt5sim_render_deal(r, &l->deals[i],
                                                        l->deals[i].login));
    }
    for (i = 0; i < l->naccounts; i++) {
        a = l->accounts[i];
        g = mt5sim_ledger_group(l, a->group);
        dc = g ? g->digits : 2;
        o = json_object();
        mt5sim_set_u64(o, "login", a->login);
        json_object_set_new(o, "group", json_string(a->group));
        json_object_set_new(o, "currency", json_string(g ? g->currency
                                                         : ""));
        mt5sim_set_money(o, "balance", a->balance, dc);
        mt5sim_set_money(o, "credit", a->credit, dc);
        mt5sim_set_u64(o, "deals", a->ndeals);
        json_array_append_new(accounts, o);
    }
    o = json_object();
    json_object_set_new(o, "deals", deals);
    json_object_set_new(o, "accounts", accounts);
    mt5sim_set_u64(o, "next_ticket", l->next_ticket);
    mt5sim_set_i64(o, "offset_minutes",
                   __atomic_load_n(&l->offset_minutes, __ATOMIC_RELAXED));
    return o;
}
