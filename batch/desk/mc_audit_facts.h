/*
 * Copyright (C) mt5-credit
 */


#ifndef MC_AUDIT_FACTS_H
#define MC_AUDIT_FACTS_H


#include <stdint.h>

#include <libpq-fe.h>


#include <stddef.h>


/* the histories, whose rows each have one entry: mc_audit_kinds' first */
#define MC_AUDIT_HISTORIES  5

/* mc_audit_kinds' ingest entry (093), which holds rows of the first two */
#define MC_AUDIT_INGEST     11


typedef struct {
    const char  *kind;           /* a chain's name before its ':' */
    const char  *source;         /* the table its entries are of */
} mc_audit_kind_t;

/* ends with { NULL, NULL } */
extern const mc_audit_kind_t  mc_audit_kinds[];

/* which of mc_audit_kinds a chain is of; -1 none */
int mc_audit_kind_of(const char *chain, size_t len);

/*
 * Each answer of the fact checks is a row (entry id or 0, chain, row
 * id, what does not fit), at most 20 a statement.  mc_audit_fact_sql
 * ends with NULL; mc_audit_counts_sql counts each history's rows, in
 * mc_audit_kinds' order; mc_audit_twice_sql[k] names the history k's
 * rows entered more than once.
 */
extern const char  *const mc_audit_fact_sql[];
extern const char  *const mc_audit_counts_sql;
extern const char  *const mc_audit_twice_sql[MC_AUDIT_HISTORIES];


/*
 * Statements run on up to two connections that share one snapshot: each
 * takes the next statement not yet sent when it is free, so the checks
 * of two tables run on two cores.  The answers are kept by statement, to
 * be read in the list's order whoever ran them.
 */
typedef struct {
    const char *const  *sql;
    int                 n;
    int                 next;        /* the next statement to send */
    int                 done;
    PGresult          **res;         /* by statement */
    PGconn             *conn[2];     /* NULL: not (yet) working */
    int                 running[2];  /* the statement each runs; -1 none */
} mc_audit_queue_t;


int mc_audit_queue_init(mc_audit_queue_t *q, const char *const *sql, int n);
/* conn joins the queue and is sent the next statement */
int mc_audit_queue_join(mc_audit_queue_t *q, PGconn *conn);
/* collects what has finished and sends more, without waiting */
int mc_audit_queue_poll(mc_audit_queue_t *q);
/* waits until every statement is answered */
int mc_audit_queue_wait(mc_audit_queue_t *q);
void mc_audit_queue_free(mc_audit_queue_t *q);


#endif /* MC_AUDIT_FACTS_H */
