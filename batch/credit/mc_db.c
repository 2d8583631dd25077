/*
 * Copyright (C) mt5-credit
 */


#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc_clock.h"
#include "mc_db.h"
#include "mc_log.h"
#include "mc_pgconn.h"
#include "mc_slots.h"


struct mc_db_s {
    char          *conninfo;
    PGconn        *conn;
    unsigned long  generation;    /* connections made so far */
    unsigned       in_flight:1;   /* a statement sent, not yet read */

    /* connects that failed in a row, and when the next may be tried */
    unsigned       failures;
    int64_t        retry_at;      /* monotonic ms */
};


/*
 * A database that is down is tried again 1, 2, 4 ... s later, at most
 * every 30 s: each try forks a backend where one listens (a standby
 * being promoted), and logs an error
 */
#define MC_DB_RETRY_FIRST_MS  1000
#define MC_DB_RETRY_MAX_MS    30000


/* mc_db_item() reads them by position; a pick may add its own after */
#define MC_DB_ITEM_COLUMNS                                                   \
    "id, attempts, kind, direction, reference, mt5_server, mt5_login, "      \
    "amount_minor, currency, currency_digits, client_id, owner_ok, "         \
    "extract(epoch FROM created_at)::bigint, "                               \
    "extract(epoch FROM claimed_at)::bigint, coalesce(lease_ms_left, 0), "  \
    "coalesce(settle_ticket, 0), "                                           \
    "coalesce(extract(epoch FROM look_from)::bigint, 0)"
#define MC_DB_ITEM_NCOLUMNS  17


static PGresult *mc_db_exec(mc_db_t *db, const char *sql, int n,
    const char *const *params);
static int mc_db_bool(mc_db_t *db, const char *sql, int n,
    const char *const *params);
static void mc_db_item(PGresult *res, int row, mc_work_item_t *w);
static char *mc_db_array(const char *const *items, int n);
static char *mc_db_json(json_t *detail);
static int mc_db_send(mc_db_t *db, const char *sql, int n,
    const char *const *params);
static PGresult *mc_db_recv(mc_db_t *db);
static int mc_db_claim_arrays(const int64_t *credits, const int *attempts,
    int n, char **ids, char **atts);
static int mc_db_claim_live(mc_db_t *db, const mc_work_item_t *w);


mc_db_t *
mc_db_open(const char *conninfo)
{
    mc_db_t  *db;

    db = calloc(1, sizeof(mc_db_t));
    if (db == NULL) {
        return NULL;
    }

    db->conninfo = strdup(conninfo);
    if (db->conninfo == NULL) {
        free(db);
        return NULL;
    }

    return db;
}


void
mc_db_close(mc_db_t *db)
{
    if (db == NULL) {
        return;
    }

    if (db->conn != NULL) {
        PQfinish(db->conn);
    }

    free(db->conninfo);
    free(db);
}


int
mc_db_ready(mc_db_t *db)
{
    int64_t  now, wait;

    if (db->conn != NULL && PQstatus(db->conn) == CONNECTION_OK) {
        return 0;
    }

    if (db->conn != NULL) {
        PQfinish(db->conn);
        db->conn = NULL;
    }

    now = mc_now_ms();
    if (db->failures > 0 && now < db->retry_at) {
        return -1;
    }

    db->conn = mc_pgconn_connect(db->conninfo);
    db->generation++;

    if (PQstatus(db->conn) != CONNECTION_OK) {
        mc_log(MC_LOG_ERROR, "database: %s", PQerrorMessage(db->conn));
        PQfinish(db->conn);
        db->conn = NULL;

        wait = (int64_t) MC_DB_RETRY_FIRST_MS
               << (db->failures < 5 ? db->failures : 5);

        db->failures++;
        db->retry_at = now + (wait < MC_DB_RETRY_MAX_MS ? wait
                                                        : MC_DB_RETRY_MAX_MS);
        return -1;
    }

    if (db->failures > 0) {
        mc_log(MC_LOG_INFO, "database: connected again after %u failed "
               "tr%s", db->failures, db->failures == 1 ? "y" : "ies");
        db->failures = 0;
    }

    return 0;
}


PGconn *
mc_db_conn(mc_db_t *db)
{
    return db->conn;
}


unsigned long
mc_db_generation(mc_db_t *db)
{
    return db->generation;
}


/* one statement; on any failure the result is NULL and the error logged */

static PGresult *
mc_db_exec(mc_db_t *db, const char *sql, int n, const char *const *params)
{
    PGresult  *res;

    if (db->in_flight) {
        /* the caller forgot one: its result is read and dropped */
        mc_log(MC_LOG_ERROR, "database: a statement was still in flight");
        PQclear(mc_db_recv(db));
    }

    if (mc_db_ready(db) != 0) {
        return NULL;
    }

    res = PQexecParams(db->conn, sql, n, NULL, params, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK
        && PQresultStatus(res) != PGRES_COMMAND_OK)
    {
        mc_log(MC_LOG_ERROR, "database: %s (%.60s...)",
               PQresultErrorMessage(res), sql);
        PQclear(res);

        /* a broken connection is replaced on the next call */
        if (PQstatus(db->conn) != CONNECTION_OK) {
            PQfinish(db->conn);
            db->conn = NULL;
        }

        return NULL;
    }

    return res;
}


static int
mc_db_bool(mc_db_t *db, const char *sql, int n, const char *const *params)
{
    int        rc;
    PGresult  *res;

    res = mc_db_exec(db, sql, n, params);
    if (res == NULL) {
        return -1;
    }

    rc = (PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "t") == 0);
    PQclear(res);

    return rc;
}


static void
mc_db_item(PGresult *res, int row, mc_work_item_t *w)
{
    memset(w, 0, sizeof(*w));

    w->id = strtoll(PQgetvalue(res, row, 0), NULL, 10);
    w->attempts = atoi(PQgetvalue(res, row, 1));
    snprintf(w->kind, sizeof(w->kind), "%s", PQgetvalue(res, row, 2));
    snprintf(w->direction, sizeof(w->direction), "%s",
             PQgetvalue(res, row, 3));
    snprintf(w->reference, sizeof(w->reference), "%s",
             PQgetvalue(res, row, 4));
    snprintf(w->server, sizeof(w->server), "%s", PQgetvalue(res, row, 5));
    w->login = strtoull(PQgetvalue(res, row, 6), NULL, 10);
    w->amount_minor = strtoll(PQgetvalue(res, row, 7), NULL, 10);
    snprintf(w->currency, sizeof(w->currency), "%s", PQgetvalue(res, row, 8));
    w->currency_digits = atoi(PQgetvalue(res, row, 9));
    snprintf(w->client_id, sizeof(w->client_id), "%s",
             PQgetvalue(res, row, 10));
    w->owner_ok = strcmp(PQgetvalue(res, row, 11), "t") == 0;
    w->created_at = strtoll(PQgetvalue(res, row, 12), NULL, 10);
    w->claimed_at = strtoll(PQgetvalue(res, row, 13), NULL, 10);
    w->lease_ms_left = strtoll(PQgetvalue(res, row, 14), NULL, 10);
    w->settle_ticket = strtoull(PQgetvalue(res, row, 15), NULL, 10);
    w->look_from = strtoll(PQgetvalue(res, row, 16), NULL, 10);
}


/* {"a","b"} as a PostgreSQL text[] literal; names are [A-Za-z0-9_.-] */

static char *
mc_db_array(const char *const *items, int n)
{
    int      i;
    char    *s;
    size_t   len;

    len = 3;

    for (i = 0; i < n; i++) {
        len += strlen(items[i]) + 3;
    }

    s = malloc(len);
    if (s == NULL) {
        return NULL;
    }

    strcpy(s, "{");

    for (i = 0; i < n; i++) {
        strcat(s, i ? ",\"" : "\"");
        strcat(s, items[i]);
        strcat(s, "\"");
    }

    strcat(s, "}");

    return s;
}


static char *
mc_db_json(json_t *detail)
{
    if (detail == NULL) {
        return strdup("{}");
    }

    return json_dumps(detail, JSON_COMPACT | JSON_SORT_KEYS);
}


int
mc_db_claim(mc_db_t *db, const char *worker, int lease,
    const char *const *servers, int nservers, mc_work_item_t *item)
{
    if (mc_db_send_claim(db, worker, lease, servers, nservers) != 0) {
        return -1;
    }

    return mc_db_recv_claim(db, item);
}


/*
 * A claim's transitions go on the connection it was made on, or nowhere.
 * Another connection may reach another database: a promoted standby that
 * lost the claim, where the same id and attempt can name another
 * payment's credit until the rewind is noticed (identities are reused
 * after lost WAL).  Nothing is lost by not sending: the lease expires
 * and the resolver finds the deal by reference.
 */

static int
mc_db_claim_live(mc_db_t *db, const mc_work_item_t *w)
{
    if (db->in_flight) {
        /* the caller forgot one (a claim sent ahead is collected first) */
        mc_log(MC_LOG_ERROR, "database: a statement was still in flight");
        PQclear(mc_db_recv(db));
    }

    if (db->conn != NULL && PQstatus(db->conn) == CONNECTION_OK
        && w->generation == db->generation)
    {
        return 1;
    }

    mc_log(MC_LOG_ERROR, "credit=%" PRId64 " ref=%s: the connection it was "
           "claimed on is gone; its state is left to the lease and the "
           "resolver", w->id, w->reference);

    return 0;
}


/* the common shape of the transition calls: (id, attempt, ..., detail) */

static int
mc_db_move(mc_db_t *db, const char *sql, const mc_work_item_t *w,
    const char *extra1, const char *extra2, const char *worker,
    json_t *detail)
{
    int          rc, n;
    char         id[24], attempt[16], *json;
    const char  *params[6];

    if (!mc_db_claim_live(db, w)) {
        json_decref(detail);
        return -1;
    }

    json = mc_db_json(detail);
    json_decref(detail);

    if (json == NULL) {
        return -1;
    }

    snprintf(id, sizeof(id), "%" PRId64, w->id);
    snprintf(attempt, sizeof(attempt), "%d", w->attempts);

    n = 0;
    params[n++] = id;
    params[n++] = attempt;

    if (extra1 != NULL) {
        params[n++] = extra1;
    }

    params[n++] = worker;
    params[n++] = json;

    if (extra2 != NULL) {
        params[n++] = extra2;
    }

    rc = mc_db_bool(db, sql, n, params);
    free(json);

    return rc;
}


int
mc_db_release(mc_db_t *db, const mc_work_item_t *w, const char *worker,
    json_t *detail)
{
    return mc_db_move(db, "SELECT mt5credit.credit_release($1, $2, $3, $4)",
                      w, NULL, NULL, worker, detail);
}


int
mc_db_succeeded(mc_db_t *db, const mc_work_item_t *w, uint64_t ticket,
    const char *worker, json_t *detail)
{
    char  t[24];

    snprintf(t, sizeof(t), "%" PRIu64, ticket);

    return mc_db_move(db, "SELECT mt5credit.credit_succeeded($1, $2, $3, $4,"
                      " $5)", w, t, NULL, worker, detail);
}


int
mc_db_orphan_deal(mc_db_t *db, const mc_work_item_t *w, uint64_t ticket,
    const char *worker, json_t *detail)
{
    char  t[24];

    snprintf(t, sizeof(t), "%" PRIu64, ticket);

    return mc_db_move(db, "SELECT mt5credit.credit_orphan_deal($1, $2, $3, "
                      "$4, $5)", w, t, NULL, worker, detail);
}


static int
mc_db_send(mc_db_t *db, const char *sql, int n, const char *const *params)
{
    if (db->in_flight) {
        PQclear(mc_db_recv(db));
    }

    if (mc_db_ready(db) != 0) {
        return -1;
    }

    if (PQsendQueryParams(db->conn, sql, n, NULL, params, NULL, NULL, 0)
        == 0)
    {
        mc_log(MC_LOG_ERROR, "database: %s", PQerrorMessage(db->conn));
        PQfinish(db->conn);
        db->conn = NULL;
        return -1;
    }

    db->in_flight = 1;

    return 0;
}


/*
 * The statement's result (NULL on any error, logged), read to its end.
 * It counts only when every result is a success and the server then said
 * it is ready, its implicit transaction over (PQTRANS_IDLE on a live
 * connection).  Rows are no commit: under synchronous replication a
 * claim's RETURNING row arrives before its COMMIT is replicated, and a
 * backend terminated while it waits sends a WARNING and dies; an error,
 * or a connection lost, after the rows means the transition did not
 * happen (issue 30, item 2).
 */

static PGresult *
mc_db_recv(mc_db_t *db)
{
    PGresult        *res, *rows, *error;
    ExecStatusType   st;

    rows = NULL;
    error = NULL;

    while ((res = PQgetResult(db->conn)) != NULL) {
        st = PQresultStatus(res);

        if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
            if (error == NULL) {
                error = res;
                continue;
            }

        } else if (rows == NULL) {
            rows = res;
            continue;
        }

        PQclear(res);
    }

    db->in_flight = 0;

    if (error == NULL && rows != NULL
        && PQstatus(db->conn) == CONNECTION_OK
        && PQtransactionStatus(db->conn) == PQTRANS_IDLE)
    {
        return rows;
    }

    if (error != NULL) {
        mc_log(MC_LOG_ERROR, "database: %s%s", PQresultErrorMessage(error),
               rows != NULL ? " (after the statement's rows: not done)" : "");

    } else {
        mc_log(MC_LOG_ERROR, "database: the statement did not end on a live "
               "connection%s: %s", rows != NULL ? " after its rows: not done"
                                               : "",
               PQerrorMessage(db->conn));
    }

    PQclear(rows);
    PQclear(error);

    if (PQstatus(db->conn) != CONNECTION_OK
        || PQtransactionStatus(db->conn) != PQTRANS_IDLE)
    {
        PQfinish(db->conn);
        db->conn = NULL;
    }

    return NULL;
}


int
mc_db_in_flight(mc_db_t *db)
{
    return db->in_flight;
}


int
mc_db_send_claim(mc_db_t *db, const char *worker, int lease,
    const char *const *servers, int nservers)
{
    int          rc;
    char         lease_s[16], *array;
    const char  *params[3];

    array = mc_db_array(servers, nservers);
    if (array == NULL) {
        return -1;
    }

    snprintf(lease_s, sizeof(lease_s), "%d", lease);
    params[0] = worker;
    params[1] = lease_s;
    params[2] = array;

    rc = mc_db_send(db, "SELECT " MC_DB_ITEM_COLUMNS
                    " FROM mt5credit.claim_credit($1, $2, $3)", 3, params);
    free(array);

    return rc;
}


int
mc_db_recv_claim(mc_db_t *db, mc_work_item_t *item)
{
    int        rc;
    PGresult  *res;

    res = mc_db_recv(db);
    if (res == NULL) {
        return -1;
    }

    rc = PQntuples(res) == 1;

    if (rc) {
        mc_db_item(res, 0, item);
        item->generation = db->generation;
    }

    PQclear(res);

    return rc;
}


int
mc_db_send_succeeded(mc_db_t *db, const mc_work_item_t *w, uint64_t ticket,
    const char *worker, json_t *detail)
{
    int          rc;
    char         id[24], attempt[16], t[24], *json;
    const char  *params[5];

    if (!mc_db_claim_live(db, w)) {
        json_decref(detail);
        return -1;
    }

    json = mc_db_json(detail);
    json_decref(detail);

    if (json == NULL) {
        return -1;
    }

    snprintf(id, sizeof(id), "%" PRId64, w->id);
    snprintf(attempt, sizeof(attempt), "%d", w->attempts);
    snprintf(t, sizeof(t), "%" PRIu64, ticket);
    params[0] = id;
    params[1] = attempt;
    params[2] = t;
    params[3] = worker;
    params[4] = json;

    rc = mc_db_send(db, "SELECT mt5credit.credit_succeeded($1, $2, $3, $4, "
                    "$5)", 5, params);
    free(json);

    return rc;
}


int
mc_db_recv_moved(mc_db_t *db)
{
    int        rc;
    PGresult  *res;

    res = mc_db_recv(db);
    if (res == NULL) {
        return -1;
    }

    rc = PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "t") == 0;
    PQclear(res);

    return rc;
}


int
mc_db_failed(mc_db_t *db, const mc_work_item_t *w, const char *case_kind,
    const char *worker, json_t *detail)
{
    return mc_db_move(db, "SELECT mt5credit.credit_failed($1, $2, $3, $4, "
                      "$5)", w, case_kind, NULL, worker, detail);
}


int
mc_db_unknown(mc_db_t *db, const mc_work_item_t *w, const char *worker,
    json_t *detail)
{
    return mc_db_move(db, "SELECT mt5credit.credit_unknown($1, $2, $3, $4)",
                      w, NULL, NULL, worker, detail);
}


int
mc_db_sweep(mc_db_t *db, const char *worker)
{
    int          n;
    PGresult    *res;
    const char  *params[1];

    params[0] = worker;

    res = mc_db_exec(db, "SELECT mt5credit.sweep_expired_leases($1)", 1,
                     params);
    if (res == NULL) {
        return -1;
    }

    n = atoi(PQgetvalue(res, 0, 0));
    PQclear(res);

    return n;
}


int
mc_db_resolve_claim(mc_db_t *db, const char *const *servers, int nservers,
    int margin, int lookup, int limit, mc_work_item_t **items, size_t *n)
{
    int          i, rows;
    char         margin_s[16], lookup_s[16], limit_s[16], *array;
    PGresult    *res;
    const char  *params[4];

    *items = NULL;
    *n = 0;

    array = mc_db_array(servers, nservers);
    if (array == NULL) {
        return -1;
    }

    snprintf(margin_s, sizeof(margin_s), "%d", margin);
    snprintf(lookup_s, sizeof(lookup_s), "%d", lookup);
    snprintf(limit_s, sizeof(limit_s), "%d", limit);
    params[0] = array;
    params[1] = margin_s;
    params[2] = lookup_s;
    params[3] = limit_s;

    /* now(): the clock created_at was taken by, read after the lease */
    res = mc_db_exec(db, "SELECT " MC_DB_ITEM_COLUMNS
                     ", extract(epoch FROM now())::bigint"
                     " FROM mt5credit.resolve_claim($1, $2, $3, $4)", 4,
                     params);
    free(array);

    if (res == NULL) {
        return -1;
    }

    rows = PQntuples(res);

    if (rows > 0) {
        *items = calloc((size_t) rows, sizeof(mc_work_item_t));
        if (*items == NULL) {
            PQclear(res);
            return -1;
        }

        for (i = 0; i < rows; i++) {
            mc_db_item(res, i, &(*items)[i]);
            (*items)[i].generation = db->generation;
            (*items)[i].db_now = strtoll(PQgetvalue(res, i,
                                                     MC_DB_ITEM_NCOLUMNS),
                                         NULL, 10);
        }
    }

    *n = (size_t) rows;
    PQclear(res);

    return 0;
}


int
mc_db_resolve_found(mc_db_t *db, const mc_work_item_t *w, uint64_t ticket,
    const char *worker, json_t *detail)
{
    char  t[24];

    snprintf(t, sizeof(t), "%" PRIu64, ticket);

    return mc_db_move(db, "SELECT mt5credit.resolve_found($1, $2, $3, $4, "
                      "$5)", w, t, NULL, worker, detail);
}


/* 033: the ticket two people named, checked in MT5: recorded or refused */
int
mc_db_settle_verdict(mc_db_t *db, const mc_work_item_t *w, int verified,
    const char *worker, json_t *detail)
{
    char  t[24];

    snprintf(t, sizeof(t), "%" PRIu64, w->settle_ticket);

    return mc_db_move(db, verified
                      ? "SELECT mt5credit.settle_verified($1, $2, $3, $4, $5)"
                      : "SELECT mt5credit.settle_refused($1, $2, $3, $4, $5)",
                      w, t, NULL, worker, detail);
}


int
mc_db_resolve_absent(mc_db_t *db, const mc_work_item_t *w,
    const char *worker, json_t *detail)
{
    return mc_db_move(db, "SELECT mt5credit.resolve_absent($1, $2, $3, $4)",
                      w, NULL, NULL, worker, detail);
}


int
mc_db_resolve_unresolved(mc_db_t *db, const mc_work_item_t *w,
    const char *case_kind, const char *worker, json_t *detail, int retry)
{
    char  r[16];

    snprintf(r, sizeof(r), "%d", retry);

    return mc_db_move(db, "SELECT mt5credit.resolve_unresolved($1, $2, $3, "
                      "$4, $5, $6)", w, case_kind, r, worker, detail);
}


int
mc_db_session_slot(mc_db_t *db, const char *server, int cap)
{
    int          slot, rc;
    char         slot_s[16];
    const char  *params[2];

    for (slot = 1; slot <= cap; slot++) {
        snprintf(slot_s, sizeof(slot_s), "%d", slot);
        params[0] = server;
        params[1] = slot_s;

        rc = mc_db_bool(db, MC_SLOT_TRY_SQL, 2, params);
        if (rc < 0) {
            return -1;
        }

        if (rc == 1) {
            return slot;
        }
    }

    return 0;
}


void
mc_db_session_slot_release(mc_db_t *db, const char *server, int slot)
{
    char         slot_s[16];
    const char  *params[2];

    snprintf(slot_s, sizeof(slot_s), "%d", slot);
    params[0] = server;
    params[1] = slot_s;

    (void) mc_db_bool(db, MC_SLOT_RELEASE_SQL, 2, params);
}


int
mc_db_identity(mc_db_t *db, const int64_t *credits, const int *attempts,
    int n, mc_db_identity_t *id)
{
    int          rc;
    char        *ids, *atts;
    PGresult    *res;
    const char  *params[2];

    if (mc_db_claim_arrays(credits, attempts, n, &ids, &atts) != 0) {
        return -1;
    }

    params[0] = ids;
    params[1] = atts;

    res = mc_db_exec(db, "SELECT system_identifier, timeline, behind, "
                     "coalesce(behind_credit, 0), coalesce(behind_attempts, 0)"
                     " FROM mt5credit.db_identity($1, $2)", 2, params);
    free(ids);
    free(atts);

    if (res == NULL) {
        return -1;
    }

    rc = -1;

    if (PQntuples(res) == 1) {
        memset(id, 0, sizeof(*id));
        snprintf(id->system_identifier, sizeof(id->system_identifier), "%s",
                 PQgetvalue(res, 0, 0));
        id->timeline = atoi(PQgetvalue(res, 0, 1));
        id->behind = atoi(PQgetvalue(res, 0, 2));
        id->behind_credit = strtoll(PQgetvalue(res, 0, 3), NULL, 10);
        id->behind_attempts = atoi(PQgetvalue(res, 0, 4));
        rc = 0;

    } else {
        mc_log(MC_LOG_ERROR, "database: db_identity() gave no row");
    }

    PQclear(res);

    return rc;
}


int
mc_db_rewound(mc_db_t *db, const char *worker, int lease, json_t *detail)
{
    int          n;
    char         l[16], *json;
    PGresult    *res;
    const char  *params[3];

    json = mc_db_json(detail);
    json_decref(detail);

    if (json == NULL) {
        return -1;
    }

    snprintf(l, sizeof(l), "%d", lease);
    params[0] = worker;
    params[1] = l;
    params[2] = json;

    res = mc_db_exec(db, "SELECT mt5credit.database_rewound($1, $2, $3)", 3,
                     params);
    free(json);

    if (res == NULL) {
        return -1;
    }

    n = atoi(PQgetvalue(res, 0, 0));
    PQclear(res);

    return n;
}


int
mc_db_timeline_check(mc_db_t *db, const char *worker, int lease,
    mc_db_timeline_t *t)
{
    char         l[16];
    PGresult    *res;
    const char  *params[2];

    snprintf(l, sizeof(l), "%d", lease);
    params[0] = worker;
    params[1] = l;

    res = mc_db_exec(db, "SELECT system_identifier, timeline, "
                     "coalesce(known_timeline, 0), coalesce(rewind_id, 0), "
                     "credits FROM mt5credit.timeline_check($1, $2)", 2,
                     params);
    if (res == NULL) {
        return -1;
    }

    if (PQntuples(res) != 1) {
        mc_log(MC_LOG_ERROR, "database: timeline_check() gave %d rows",
               PQntuples(res));
        PQclear(res);
        return -1;
    }

    memset(t, 0, sizeof(*t));
    snprintf(t->system_identifier, sizeof(t->system_identifier), "%s",
             PQgetvalue(res, 0, 0));
    t->timeline = atoi(PQgetvalue(res, 0, 1));
    t->known_timeline = atoi(PQgetvalue(res, 0, 2));
    t->rewind = strtoll(PQgetvalue(res, 0, 3), NULL, 10);
    t->credits = atoi(PQgetvalue(res, 0, 4));
    PQclear(res);

    return 0;
}


int
mc_db_witness_pick(mc_db_t *db, const char *const *servers, int nservers,
    int limit, mc_db_witness_t **items)
{
    int               i, n;
    char              l[16], *array;
    PGresult         *res;
    const char       *params[2];
    mc_db_witness_t  *it;

    *items = NULL;

    array = mc_db_array(servers, nservers);
    if (array == NULL) {
        return -1;
    }

    snprintf(l, sizeof(l), "%d", limit);
    params[0] = array;
    params[1] = l;

    res = mc_db_exec(db, "SELECT id, attempts, mt5_server, mt5_login, "
                     "comment, look_from, db_now "
                     "FROM mt5credit.witness_pick($1, $2)", 2, params);
    free(array);

    if (res == NULL) {
        return -1;
    }

    n = PQntuples(res);

    if (n > 0) {
        *items = calloc((size_t) n, sizeof(mc_db_witness_t));
        if (*items == NULL) {
            PQclear(res);
            return -1;
        }
    }

    for (i = 0; i < n; i++) {
        it = &(*items)[i];
        it->id = strtoll(PQgetvalue(res, i, 0), NULL, 10);
        it->attempts = atoi(PQgetvalue(res, i, 1));
        snprintf(it->server, sizeof(it->server), "%s",
                 PQgetvalue(res, i, 2));
        it->login = strtoull(PQgetvalue(res, i, 3), NULL, 10);
        snprintf(it->comment, sizeof(it->comment), "%s",
                 PQgetvalue(res, i, 4));
        it->since = strtoll(PQgetvalue(res, i, 5), NULL, 10);
        it->db_now = strtoll(PQgetvalue(res, i, 6), NULL, 10);
    }

    PQclear(res);

    return n;
}


int
mc_db_witness_still_pending(mc_db_t *db, const int64_t *ids,
    const int *attempts, int n, int64_t *still)
{
    int          i, got;
    char        *a, *b;
    PGresult    *res;
    const char  *params[2];

    if (mc_db_claim_arrays(ids, attempts, n, &a, &b) != 0) {
        return -1;
    }

    params[0] = a;
    params[1] = b;

    res = mc_db_exec(db, "SELECT mt5credit.witness_still_pending($1, $2)",
                     2, params);
    free(a);
    free(b);

    if (res == NULL) {
        return -1;
    }

    got = PQntuples(res) <= n ? PQntuples(res) : n;

    for (i = 0; i < got; i++) {
        still[i] = strtoll(PQgetvalue(res, i, 0), NULL, 10);
    }

    PQclear(res);

    return got;
}


/* credits and their attempts as two PostgreSQL array literals */
static int
mc_db_claim_arrays(const int64_t *credits, const int *attempts, int n,
    char **ids, char **atts)
{
    int     i;
    char   *p, *q;
    size_t  size;

    size = (size_t) n * 24 + 3;
    *ids = malloc(size);
    *atts = malloc(size);

    if (*ids == NULL || *atts == NULL) {
        free(*ids);
        free(*atts);
        return -1;
    }

    p = *ids;
    q = *atts;
    *p++ = '{';
    *q++ = '{';

    for (i = 0; i < n; i++) {
        p += snprintf(p, 24, "%s%" PRId64, i ? "," : "", credits[i]);
        q += snprintf(q, 24, "%s%d", i ? "," : "", attempts[i]);
    }

    strcpy(p, "}");
    strcpy(q, "}");

    return 0;
}


int
mc_db_trading_due(mc_db_t *db, const char *const *servers, int nservers,
    int limit, mc_db_trading_t **items)
{
    int               i, n;
    char              l[16], *array;
    PGresult         *res;
    const char       *params[2];
    mc_db_trading_t  *it;

    *items = NULL;

    array = mc_db_array(servers, nservers);
    if (array == NULL) {
        return -1;
    }

    snprintf(l, sizeof(l), "%d", limit);
    params[0] = array;
    params[1] = l;

    res = mc_db_exec(db, "SELECT id, reference, mt5_server, mt5_login, "
                     "after_ticket "
                     "FROM mt5credit.withdrawal_trading_due($1, $2)",
                     2, params);
    free(array);

    if (res == NULL) {
        return -1;
    }

    n = PQntuples(res);

    if (n > 0) {
        *items = calloc((size_t) n, sizeof(mc_db_trading_t));
        if (*items == NULL) {
            PQclear(res);
            return -1;
        }
    }

    for (i = 0; i < n; i++) {
        it = &(*items)[i];
        it->id = strtoll(PQgetvalue(res, i, 0), NULL, 10);
        snprintf(it->reference, sizeof(it->reference), "%s",
                 PQgetvalue(res, i, 1));
        snprintf(it->server, sizeof(it->server), "%s",
                 PQgetvalue(res, i, 2));
        it->login = strtoull(PQgetvalue(res, i, 3), NULL, 10);
        it->after_ticket = strtoull(PQgetvalue(res, i, 4), NULL, 10);
    }

    PQclear(res);

    return n;
}


int
mc_db_trading_record(mc_db_t *db, int64_t id, uint64_t after_ticket,
    int64_t volume, int deals, int64_t from, int64_t to, char *verdict,
    size_t len)
{
    char         v[6][24];
    PGresult    *res;
    const char  *params[6];
    int          i;

    snprintf(v[0], sizeof(v[0]), "%" PRId64, id);
    snprintf(v[1], sizeof(v[1]), "%" PRIu64, after_ticket);
    snprintf(v[2], sizeof(v[2]), "%" PRId64, volume);
    snprintf(v[3], sizeof(v[3]), "%d", deals);
    snprintf(v[4], sizeof(v[4]), "%" PRId64, from);
    snprintf(v[5], sizeof(v[5]), "%" PRId64, to);

    for (i = 0; i < 6; i++) {
        params[i] = v[i];
    }

    res = mc_db_exec(db, "SELECT mt5credit.withdrawal_trading_record($1, $2, "
                     "$3, $4, $5, $6)", 6, params);
    if (res == NULL) {
        return -1;
    }

    snprintf(verdict, len, "%s", PQgetvalue(res, 0, 0));
    PQclear(res);

    return 0;
}
