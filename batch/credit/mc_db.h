/*
 * Copyright (C) mt5-credit
 *
 * The worker's database calls: each one statement, one of the functions
 * of sql/008_worker.sql, which move a credit only from the state and
 * attempt the caller claimed.  Transitions return 1 when the row moved,
 * 0 when it did not (the lease was lost, someone else decided first),
 * -1 when the database could not be asked (the connection is then reset
 * on the next call).  A `detail` argument is a new JSON reference, which
 * the call consumes (NULL is fine: {}); it becomes the history row's
 * detail.
 */


#ifndef MC_DB_H
#define MC_DB_H


#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <libpq-fe.h>


typedef struct {
    int64_t    id;
    int        attempts;          /* the lease token */
    char       kind[16];          /* deposit, refund, chargeback */
    char       direction[8];      /* credit, debit */
    char       reference[32];     /* the MT5 comment: [<tag>:]dep:<...> */
    char       server[64];
    uint64_t   login;
    int64_t    amount_minor;      /* > 0; the sign comes from direction */
    char       currency[16];
    int        currency_digits;
    char       client_id[132];
    int        owner_ok;
    int64_t    created_at;        /* unix seconds, UTC */
    int64_t    claimed_at;
    int64_t    lease_ms_left;     /* when read, by the database's clock */
    int64_t    db_now;            /* the resolver's pick: the database's
                                     clock then, unix seconds */
    uint64_t   settle_ticket;     /* unknown only: the deal two people
                                     named, for the worker to verify (033);
                                     0: none */
    int64_t    look_from;         /* a lookup starts here when earlier
                                     than a lookback before created_at:
                                     a rewind's lost timeline (066);
                                     0: none */
    unsigned long  generation;    /* the connection it was claimed on
                                     (mc_db_generation()): its
                                     transitions go on that one only */
} mc_work_item_t;


typedef struct mc_db_s  mc_db_t;


mc_db_t *mc_db_open(const char *conninfo);
void mc_db_close(mc_db_t *db);

/* connects if needed; 0 when usable, -1 (logged) when not */
int mc_db_ready(mc_db_t *db);

PGconn *mc_db_conn(mc_db_t *db);

/* changes whenever a new connection was made (session locks are gone) */
unsigned long mc_db_generation(mc_db_t *db);

/* 1: claimed into *item; 0: nothing to claim; -1: error */
int mc_db_claim(mc_db_t *db, const char *worker, int lease,
    const char *const *servers, int nservers, mc_work_item_t *item);

int mc_db_release(mc_db_t *db, const mc_work_item_t *w, const char *worker,
    json_t *detail);
int mc_db_succeeded(mc_db_t *db, const mc_work_item_t *w, uint64_t ticket,
    const char *worker, json_t *detail);
/*
 * A ticket mc_db_succeeded() (or its sent form) could not record: 1 when
 * a critical orphan_deal case was opened, 0 when the credit carries that
 * very ticket already, -1 when the database could not be asked.
 */
int mc_db_orphan_deal(mc_db_t *db, const mc_work_item_t *w, uint64_t ticket,
    const char *worker, json_t *detail);
/*
 * The two statements of the fast path, sent without waiting, so their
 * round trips overlap the MT5 calls: a claim of the next credit while the
 * balance call runs, the record of a deal while the next credit's checks
 * run.  At most one statement is in flight; every other call first waits
 * for it (mc_db_in_flight() tells whether one is).  The recv functions
 * return what their synchronous twins return.
 */
int mc_db_send_claim(mc_db_t *db, const char *worker, int lease,
    const char *const *servers, int nservers);
int mc_db_recv_claim(mc_db_t *db, mc_work_item_t *item);
int mc_db_send_succeeded(mc_db_t *db, const mc_work_item_t *w,
    uint64_t ticket, const char *worker, json_t *detail);
int mc_db_recv_moved(mc_db_t *db);
int mc_db_in_flight(mc_db_t *db);

int mc_db_failed(mc_db_t *db, const mc_work_item_t *w, const char *case_kind,
    const char *worker, json_t *detail);
int mc_db_unknown(mc_db_t *db, const mc_work_item_t *w, const char *worker,
    json_t *detail);

/* the number of expired claims made unknown, or -1 */
int mc_db_sweep(mc_db_t *db, const char *worker);

/* unknown credits due for a lookup, up to `limit`; *items malloc'ed */
int mc_db_resolve_claim(mc_db_t *db, const char *const *servers,
    int nservers, int margin, int lookup, int limit, mc_work_item_t **items,
    size_t *n);

int mc_db_resolve_found(mc_db_t *db, const mc_work_item_t *w,
    uint64_t ticket, const char *worker, json_t *detail);
/*
 * The verdict on w->settle_ticket: verified (the credit is done with it)
 * or refused (nothing recorded, the case back to a person).  1 when
 * recorded, 0 when the request or the credit had moved on, -1 on error.
 */
int mc_db_settle_verdict(mc_db_t *db, const mc_work_item_t *w, int verified,
    const char *worker, json_t *detail);
int mc_db_resolve_absent(mc_db_t *db, const mc_work_item_t *w,
    const char *worker, json_t *detail);
int mc_db_resolve_unresolved(mc_db_t *db, const mc_work_item_t *w,
    const char *case_kind, const char *worker, json_t *detail, int retry);

/*
 * Takes one of a server's `cap` session slots for as long as this
 * database connection lives (a session-level advisory lock): the cap on
 * Web API sessions holds across all worker processes.  Returns the slot
 * (1..cap), 0 if all are taken, -1 on error.
 */
int mc_db_session_slot(mc_db_t *db, const char *server, int cap);
void mc_db_session_slot_release(mc_db_t *db, const char *server, int slot);


/* what the database is, for mc_rewind.c (sql/029 db_identity()) */
typedef struct {
    char      system_identifier[32];
    int       timeline;
    int       behind;             /* claims given that it does not hold */
    int64_t   behind_credit;      /* the first of them */
    int       behind_attempts;    /* what it holds of it (0: nothing) */
} mc_db_identity_t;

/* 0, or -1 (logged) if the database cannot be asked; n claims */
int mc_db_identity(mc_db_t *db, const int64_t *credits, const int *attempts,
    int n, mc_db_identity_t *id);

/* every pending credit to unknown, a case: the count, or -1 */
int mc_db_rewound(mc_db_t *db, const char *worker, int lease,
    json_t *detail);

/* the timeline the database runs on, recorded (sql/073 timeline_check()) */
typedef struct {
    char      system_identifier[32];
    int       timeline;
    int       known_timeline;     /* the newest recorded before; 0: none */
    int64_t   rewind;             /* the handling this check started, or 0 */
    int       credits;            /* pending credits it marked for lookup */
} mc_db_timeline_t;

/* 0, or -1 (logged) if the database cannot be asked */
int mc_db_timeline_check(mc_db_t *db, const char *worker, int lease,
    mc_db_timeline_t *t);


/* a pending credit next in line, as MT5 is asked about it (sql/068) */
typedef struct {
    int64_t   id;
    int       attempts;
    char      server[64];
    uint64_t  login;
    char      comment[32];        /* [<tag>:]<reference> */
    int64_t   since;              /* unix s: a lookup starts before this */
    int64_t   db_now;             /* the database's clock, unix s */
} mc_db_witness_t;

/*
 * Up to `limit` of them on these servers, in claim order, malloc'ed: how
 * many, or -1.
 */
int mc_db_witness_pick(mc_db_t *db, const char *const *servers, int nservers,
    int limit, mc_db_witness_t **items);

/*
 * Which of these credits are still pending at these attempts: written
 * to still[] (room for n); how many, or -1.
 */
int mc_db_witness_still_pending(mc_db_t *db, const int64_t *ids,
    const int *attempts, int n, int64_t *still);


/* 080: a withdrawal whose trading since its last deposit is to be read */
typedef struct {
    int64_t   id;
    char      reference[32];
    char      server[64];
    uint64_t  login;
    uint64_t  after_ticket;       /* the deposit's deal: trades after it */
} mc_db_trading_t;

/* up to `limit` on these servers, oldest first, malloc'ed: how many, or -1 */
int mc_db_trading_due(mc_db_t *db, const char *const *servers, int nservers,
    int limit, mc_db_trading_t **items);

/*
 * What MT5 showed: `volume` (1/10000 lot) in `deals` trades after the
 * deposit's deal, read over [from, to] server seconds.  The database's
 * verdict ("passed", "held", "closed") is written to verdict; 0, or -1.
 */
int mc_db_trading_record(mc_db_t *db, int64_t id, uint64_t after_ticket,
    int64_t volume, int deals, int64_t from, int64_t to, char *verdict,
    size_t len);


#endif /* MC_DB_H */
