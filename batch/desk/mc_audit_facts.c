/*
 * Copyright (C) mt5-credit
 *
 * What audit verify asks of the chained tables (sql/081), and the queue
 * that runs those statements on two connections at once.  The chains
 * are read on one connection while the facts are compared on the other,
 * both in one exported snapshot: a 2-core host checks a million entries
 * in about the time of the longer of the two.
 */


#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "mc_audit_facts.h"


/*
 * Each chained table and what of its row is the fact (a webhook's:
 * 081's journal_event_fact()).  An entry is read back through the row's type, so the
 * two are compared as values, whatever time zone the writer's session
 * rendered the entry's timestamps in.  A history has one entry a row; a
 * row that changes is compared with its chain's last entry.  Whole
 * statements: nothing is built at run time.
 */
#define MC_AUDIT_FACTS_HEAD(table)                                           \
    "SELECT coalesce(j.id, 0), coalesce(j.chain, ''), "                      \
    "coalesce(s.id, j.row_id), CASE "                                        \
    "WHEN s.id IS NULL THEN 'its fact is gone from " table "' "              \
    "WHEN j.id IS NULL THEN 'a fact in " table " with no entry' "            \
    "ELSE 'the fact in " table " is not what was entered' END "

/*
 * Which table an entry is of, and which row, is read from what its hash
 * covers: the chain's kind and the entry's "id" (the journal's source
 * columns are a convenience, checked as the chains are read).  A
 * statement's entry (093: events:, ingest:) holds its facts as arrays
 * keyed by their table, each fact with its "id".
 */

/*
 * each entry of kind's chains, as (id, chain, e) with e the fact; one
 * that is not an object holds none (its hash says it was changed)
 */
#define MC_AUDIT_ENTRIES(kind)                                               \
    "(SELECT id, chain, entry AS e FROM mt5credit.journal "                  \
    "  WHERE chain LIKE '" kind ":%' AND jsonb_typeof(entry) = 'object')"

/*
 * ... and each fact a statement's entry (batch's chains) holds of table;
 * what is not an array of objects holds none, and its rows are found
 * with no entry
 */
#define MC_AUDIT_ENTRIES_AND(table, kind, batch)                             \
    "(SELECT id, chain, entry AS e FROM mt5credit.journal "                  \
    "  WHERE chain LIKE '" kind ":%' AND jsonb_typeof(entry) = 'object' "    \
    " UNION ALL "                                                            \
    " SELECT j.id, j.chain, x.e FROM mt5credit.journal j, "                  \
    "  jsonb_array_elements(CASE jsonb_typeof(j.entry->'" table "') "        \
    "                       WHEN 'array' THEN j.entry->'" table "' END) "    \
    "  x(e) "                                                                \
    "  WHERE j.chain LIKE '" batch ":%' AND jsonb_typeof(x.e) = 'object')"

/* a row that changes and its chain's last entry, as records of its type */
#define MC_AUDIT_FACTS(table, kind)                                          \
    MC_AUDIT_FACTS_HEAD(table)                                               \
    "FROM (SELECT DISTINCT ON (chain) id, chain, "                           \
    "             (entry->>'id')::bigint AS row_id, "                        \
    "             jsonb_populate_record(NULL::mt5credit." table              \
    "                                   , entry) AS fact "                   \
    "      FROM mt5credit.journal WHERE chain LIKE '" kind ":%' "            \
    "      AND jsonb_typeof(entry) = 'object' "                              \
    "      ORDER BY chain, seq DESC) j "                                     \
    "FULL JOIN (SELECT x.id, x AS fact FROM mt5credit." table " x) s "       \
    "ON s.id = j.row_id "                                                    \
    "WHERE j.id IS NULL OR s.id IS NULL OR j.fact IS DISTINCT FROM s.fact "  \
    "ORDER BY j.id NULLS LAST, s.id LIMIT 20"

/*
 * A history's rows, each with its one entry (MC_AUDIT_TWICE: not two),
 * from the entries (id, chain, e) of from.  In two halves, the rows of
 * even ids and of odd, so that the two connections share a large
 * history: a row and its entry are always in one half, and an entry with
 * no id in the even one.
 */
#define MC_AUDIT_HISTORY(table, from, half)                                  \
    MC_AUDIT_FACTS_HEAD(table)                                               \
    "FROM (SELECT id, chain, (e->>'id')::bigint AS row_id, "                 \
    "             jsonb_populate_record(NULL::mt5credit." table              \
    "                                   , e) AS fact "                       \
    "      FROM " from " a "                                                 \
    "      WHERE coalesce((e->>'id')::bigint & 1, 0) = " half ") j "         \
    "FULL JOIN (SELECT x.id, x AS fact FROM mt5credit." table " x "          \
    "           WHERE x.id & 1 = " half ") s "                               \
    "ON s.id = j.row_id "                                                    \
    "WHERE j.id IS NULL OR s.id IS NULL OR j.fact IS DISTINCT FROM s.fact "  \
    "ORDER BY j.id NULLS LAST, s.id LIMIT 20"

#define MC_AUDIT_HISTORIES_OF(table, from)                                   \
    MC_AUDIT_HISTORY(table, from, "0"), MC_AUDIT_HISTORY(table, from, "1")

/*
 * A webhook's: all but its body, read back through the row type too; the
 * newest entry of a row, which its statement's entry holds (events:)
 * until a change of it is entered alone (event:)
 */
#define MC_AUDIT_EVENT_FACTS                                                 \
    MC_AUDIT_FACTS_HEAD("webhook_event")                                     \
    "FROM (SELECT DISTINCT ON (coalesce(row_id, -id)) id, chain, row_id, "   \
    "             fact "                                                     \
    "      FROM (SELECT id, chain, (e->>'id')::bigint AS row_id, "           \
    "                   to_jsonb(jsonb_populate_record("                     \
    "                       NULL::mt5credit.webhook_event, e)) "             \
    "                   - 'raw_body' - 'body_redacted_at' AS fact "          \
    "            FROM " MC_AUDIT_EVENT_ENTRIES " a) a "                      \
    "      ORDER BY coalesce(row_id, -id), id DESC) j "                      \
    "FULL JOIN (SELECT x.id, to_jsonb(x) - 'raw_body' - 'body_redacted_at' " \
    "           AS fact FROM mt5credit.webhook_event x) s "                  \
    "ON s.id = j.row_id "                                                    \
    "WHERE j.id IS NULL OR s.id IS NULL OR j.fact <> s.fact "                \
    "ORDER BY j.id NULLS LAST, s.id LIMIT 20"

#define MC_AUDIT_EVENT_ENTRIES                                               \
    MC_AUDIT_ENTRIES_AND("webhook_event", "event", "events")
#define MC_AUDIT_CREDIT_ENTRIES                                              \
    MC_AUDIT_ENTRIES_AND("credit_history", "credit", "ingest")
#define MC_AUDIT_DEPOSIT_ENTRIES                                             \
    MC_AUDIT_ENTRIES_AND("deposit_history", "deposit", "ingest")

#define MC_AUDIT_TWICE(table, from)                                          \
    "SELECT min(id), min(chain), (e->>'id')::bigint, 'a fact in "            \
    table " entered more than once' FROM " from " a "                        \
    "GROUP BY (e->>'id')::bigint HAVING count(*) > 1 ORDER BY 1 LIMIT 20"

/*
 * A stored body that is not the one its digest names (070 may empty it),
 * named by the entry its event was stored with
 */
#define MC_AUDIT_BODIES                                                      \
    "SELECT coalesce(j.id, 0), coalesce(j.chain, 'event:' || x.id), x.id, "  \
    "'its stored body is not the one its digest names' "                     \
    "FROM mt5credit.webhook_event x "                                        \
    "LEFT JOIN LATERAL (SELECT j.id, j.chain FROM mt5credit.journal j "      \
    "                   WHERE (j.chain LIKE 'events:%' "                     \
    "                          AND j.source_id <= x.id "                     \
    "                          AND j.entry->'webhook_event' @> "             \
    "                              jsonb_build_array(jsonb_build_object("    \
    "                                  'id', x.id))) "                       \
    "                      OR j.chain = 'event:' || x.id "                   \
    "                   ORDER BY j.id LIMIT 1) j ON true "                   \
    "WHERE x.body_redacted_at IS NULL AND sha256(x.raw_body) <> "            \
    "x.body_sha256 ORDER BY x.id LIMIT 20"

/*
 * A webhook stored since statements' entries began (093) that none holds.
 * Its later changes are entered alone, from event:<id> #1, and do not
 * pin the entry it was stored with: without this, that entry removed
 * would go unnoticed while the row has a newer one.
 */
#define MC_AUDIT_EVENT_BIRTHS                                                \
    "SELECT 0, '', x.id, 'a stored webhook that no statement entry holds' "  \
    "FROM mt5credit.webhook_event x "                                        \
    "LEFT JOIN (SELECT DISTINCT e->>'id' AS id "                             \
    "           FROM mt5credit.journal j, "                                  \
    "           jsonb_array_elements(CASE jsonb_typeof("                     \
    "               j.entry->'webhook_event') WHEN 'array' "                 \
    "               THEN j.entry->'webhook_event' END) e "                   \
    "           WHERE j.chain LIKE 'events:%' "                              \
    "             AND jsonb_typeof(e) = 'object') b ON b.id = x.id::text "   \
    "WHERE b.id IS NULL AND x.id >= (SELECT min(j.source_id) "               \
    "    FROM mt5credit.journal j WHERE j.chain LIKE 'events:%') "           \
    "ORDER BY x.id LIMIT 20"

/* each history's rows, in mc_audit_kinds' order */
#define MC_AUDIT_COUNTS                                                      \
    "SELECT (SELECT count(*) FROM mt5credit.credit_history), "               \
    "(SELECT count(*) FROM mt5credit.deposit_history), "                     \
    "(SELECT count(*) FROM mt5credit.payout_history), "                      \
    "(SELECT count(*) FROM mt5credit.withdrawal_refund_history), "           \
    "(SELECT count(*) FROM mt5credit.case_action)"

const char  *const mc_audit_fact_sql[] = {
    MC_AUDIT_HISTORIES_OF("credit_history", MC_AUDIT_CREDIT_ENTRIES),
    MC_AUDIT_HISTORIES_OF("deposit_history", MC_AUDIT_DEPOSIT_ENTRIES),
    MC_AUDIT_HISTORIES_OF("payout_history", MC_AUDIT_ENTRIES("payout")),
    MC_AUDIT_HISTORIES_OF("withdrawal_refund_history",
                          MC_AUDIT_ENTRIES("refund")),
    MC_AUDIT_HISTORIES_OF("case_action", MC_AUDIT_ENTRIES("case")),
    MC_AUDIT_FACTS("withdrawal", "withdrawal"),
    MC_AUDIT_FACTS("money_proposal", "proposal"),
    MC_AUDIT_FACTS("risk_rule_change", "rule_change"),
    MC_AUDIT_FACTS("client_name", "client_name"),
    MC_AUDIT_EVENT_FACTS,
    MC_AUDIT_EVENT_BIRTHS,
    MC_AUDIT_BODIES,
    NULL
};

/*
 * A history's entries twice for one row: asked only when its rows and
 * entries are not as many, or something of that history does not fit.
 * Otherwise no row can have two: every entry has its row, every row an
 * entry, and there are as many of each.
 */
/* each kind of chain and the table its entries are of: histories first */
const mc_audit_kind_t  mc_audit_kinds[] = {
    { "credit", "credit_history" },
    { "deposit", "deposit_history" },
    { "payout", "payout_history" },
    { "refund", "withdrawal_refund_history" },
    { "case", "case_action" },
    { "withdrawal", "withdrawal" },
    { "proposal", "money_proposal" },
    { "rule_change", "risk_rule_change" },
    { "client_name", "client_name" },
    { "event", "webhook_event" },
    { "events", "webhook_event" },
    { "ingest", "mt5_credit" },         /* MC_AUDIT_INGEST */
    { NULL, NULL }
};

const char  *const mc_audit_twice_sql[MC_AUDIT_HISTORIES] = {
    MC_AUDIT_TWICE("credit_history", MC_AUDIT_CREDIT_ENTRIES),
    MC_AUDIT_TWICE("deposit_history", MC_AUDIT_DEPOSIT_ENTRIES),
    MC_AUDIT_TWICE("payout_history", MC_AUDIT_ENTRIES("payout")),
    MC_AUDIT_TWICE("withdrawal_refund_history", MC_AUDIT_ENTRIES("refund")),
    MC_AUDIT_TWICE("case_action", MC_AUDIT_ENTRIES("case"))
};

const char  *const mc_audit_counts_sql = MC_AUDIT_COUNTS;


int
mc_audit_kind_of(const char *chain, size_t len)
{
    int     k;
    size_t  n;

    for (k = 0; mc_audit_kinds[k].kind != NULL; k++) {
        n = strlen(mc_audit_kinds[k].kind);
        if (len > n && chain[n] == ':'
            && memcmp(chain, mc_audit_kinds[k].kind, n) == 0)
        {
            return k;
        }
    }

    return -1;
}



int
mc_audit_queue_init(mc_audit_queue_t *q, const char *const *sql, int n)
{
    memset(q, 0, sizeof(mc_audit_queue_t));
    q->sql = sql;
    q->n = n;
    q->running[0] = -1;
    q->running[1] = -1;
    q->res = calloc(n > 0 ? (size_t) n : 1, sizeof(PGresult *));

    return q->res != NULL ? 0 : -1;
}


/* the next statement to a free connection: text results, as psql's */
static int
mc_audit_queue_send(mc_audit_queue_t *q, int w)
{
    if (q->next >= q->n) {
        return 0;
    }

    if (!PQsendQueryParams(q->conn[w], q->sql[q->next], 0, NULL, NULL, NULL,
                           NULL, 0))
    {
        fprintf(stderr, "mt5credit audit: %s", PQerrorMessage(q->conn[w]));
        return -1;
    }
    q->running[w] = q->next++;

    return 0;
}


int
mc_audit_queue_join(mc_audit_queue_t *q, PGconn *conn)
{
    int  w;

    w = q->conn[0] == NULL ? 0 : 1;
    if (q->conn[w] != NULL) {
        return -1;
    }
    q->conn[w] = conn;

    return mc_audit_queue_send(q, w);
}


/* w's answer, when it is all here; then its next statement */
static int
mc_audit_queue_collect(mc_audit_queue_t *q, int w)
{
    int        i;
    PGresult  *res;

    if (PQconsumeInput(q->conn[w]) == 0) {
        fprintf(stderr, "mt5credit audit: %s", PQerrorMessage(q->conn[w]));
        return -1;
    }

    while (!PQisBusy(q->conn[w])) {
        res = PQgetResult(q->conn[w]);
        i = q->running[w];

        if (res == NULL) {
            /* the statement is done */
            q->running[w] = -1;
            q->done++;
            return mc_audit_queue_send(q, w);
        }

        if (PQresultStatus(res) != PGRES_TUPLES_OK
            && PQresultStatus(res) != PGRES_COMMAND_OK)
        {
            fprintf(stderr, "mt5credit audit: %s",
                    PQresultErrorMessage(res));
            PQclear(res);
            return -1;
        }

        PQclear(q->res[i]);
        q->res[i] = res;
    }

    return 0;
}


int
mc_audit_queue_poll(mc_audit_queue_t *q)
{
    int  w;

    for (w = 0; w < 2; w++) {
        if (q->conn[w] != NULL && q->running[w] >= 0
            && mc_audit_queue_collect(q, w) != 0)
        {
            return -1;
        }
    }

    return 0;
}


int
mc_audit_queue_wait(mc_audit_queue_t *q)
{
    int            w, n;
    struct pollfd  fds[2];
    int            who[2];

    while (q->done < q->n) {
        n = 0;
        for (w = 0; w < 2; w++) {
            if (q->conn[w] != NULL && q->running[w] >= 0) {
                fds[n].fd = PQsocket(q->conn[w]);
                fds[n].events = POLLIN;
                fds[n].revents = 0;
                who[n++] = w;
            }
        }

        if (n == 0) {
            /* statements left and no connection to run them */
            return -1;
        }

        if (poll(fds, (nfds_t) n, -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            fprintf(stderr, "mt5credit audit: poll: %s\n", strerror(errno));
            return -1;
        }

        for (w = 0; w < n; w++) {
            if (fds[w].revents != 0
                && mc_audit_queue_collect(q, who[w]) != 0)
            {
                return -1;
            }
        }
    }

    return 0;
}


void
mc_audit_queue_free(mc_audit_queue_t *q)
{
    int  i;

    for (i = 0; q->res != NULL && i < q->n; i++) {
        PQclear(q->res[i]);
    }
    free(q->res);
    q->res = NULL;
}
