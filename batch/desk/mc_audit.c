/*
 * Copyright (C) mt5-credit
 *
 * The money journal's witness outside the database (sql/081):
 *
 *   seal    the entries of every transaction finished since the last
 *           seal (xid8 below this snapshot's xmin: none can appear
 *           later) become a period: its RFC 6962 Merkle root, chained
 *           to the previous head, signed with an Ed25519 key that lives
 *           here and not on the database host, appended to the heads
 *           file (one "<signature hex> <head json>" a line).  It first
 *           checks every head already there, and refuses to seal after
 *           one that does not fit, or on a database that is on another
 *           timeline than the last head's or behind its end: a person
 *           runs verify first.  A torn last line is set aside.
 *   verify  with the public key and the heads file: every head's
 *           signature and chain; every journal chain recomputed; every
 *           chained fact against its entry (a fact with no entry, an
 *           entry with no fact, a fact unlike its entry); every sealed
 *           period's root.  It names the first entry that does not fit,
 *           and tells a rewound database (a signed period it no longer
 *           holds, on another timeline or behind the seal) from an edit.
 *           The journal is read once, for chains and roots, while a
 *           second connection in the same snapshot compares the facts.
 *
 * The statements are fixed; verify reads in one REPEATABLE READ snapshot.
 */


#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>
#include <endian.h>

#include <jansson.h>
#include <libpq-fe.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>

#include "mc_audit.h"
#include "mc_audit_facts.h"
#include "mc_audit_heads.h"
#include "mc_merkle.h"
#include "mc_pgconn.h"


#define MC_AUDIT_FITS      0
#define MC_AUDIT_BROKEN    1
#define MC_AUDIT_USAGE     2
#define MC_AUDIT_ERROR     3

#define MC_AUDIT_REPORT    20


/* where each chain has got to, as the journal is read in id order */
typedef struct {
    char      *chain;            /* NULL: a free slot */
    int        expect;           /* the next seq */
    uint8_t    last[MC_MERKLE_HASH];
} mc_audit_tip_t;

typedef struct {
    mc_audit_tip_t  *slots;
    size_t           cap;        /* a power of two */
    size_t           n;
} mc_audit_tips_t;

/*
 * What the database holds of a sealed period, summed up as the journal
 * streams by in id order: a period's entries are in that order too.  Its
 * accumulator lives from its first entry to the newest one its head
 * signed (last_id), so only the periods being written at once are open.
 */
typedef struct {
    mc_merkle_t  *m;             /* open: NULL before and after */
    int64_t       n;
    int64_t       first_id;
    int64_t       last_id;
    int           closed;        /* its root is taken */
    int           grown;         /* an entry came after the signed newest */
    uint8_t       root[MC_MERKLE_HASH];
} mc_audit_sum_t;

/* what the one reading of the journal found besides its chains */
typedef struct {
    int64_t          entries;
    int64_t          chains;
    int64_t          newest;     /* the highest id */
    int64_t          history[MC_AUDIT_HISTORIES];   /* entries of each */
    mc_audit_sum_t  *sums;       /* by head */
    int              at;         /* the period the last entry was in */
} mc_audit_pass_t;

/* the reading of the chains: their tips, and a buffer to hash in */
typedef struct {
    mc_audit_tips_t  tips;
    uint8_t         *buf;
    size_t           cap;
    int              header;     /* the COPY's header is still to come */
} mc_audit_chain_t;

/* a row of the chains' COPY: id, chain, seq, prev_hash, hash, entry, xid,
   source, source_id, the entry's id, and of an ingest entry (093) how
   many credit and deposit history rows it holds; len -1: NULL */
#define MC_AUDIT_ROW  12

typedef struct {
    int          fields;         /* 0: no row in this message */
    const char  *v[MC_AUDIT_ROW];
    int          len[MC_AUDIT_ROW];
} mc_audit_row_t;

/* the first entry that does not fit, and how many do not */
typedef struct {
    int64_t   first_id;          /* 0: none named */
    char      first[512];
    int       problems;
    int       shown;             /* printed in this check: at most 20 */
} mc_audit_finding_t;


static int mc_audit_seal(PGconn *conn, const char *key_path,
    const char *heads_path, int new_timeline);
static int mc_audit_set_aside(int fd, const char *heads_path,
    const mc_audit_heads_t *h);
static int mc_audit_verify(PGconn *conn, const char *conninfo,
    const char *pub_path, const char *heads_path);
static PGconn *mc_audit_helper(const char *conninfo, const char *snapshot);
static int mc_audit_chains(PGconn *conn, mc_audit_queue_t *q,
    const mc_audit_heads_t *h, mc_audit_pass_t *p, mc_audit_finding_t *f);
static int mc_audit_copy_row(mc_audit_chain_t *c, const char *data,
    size_t len, mc_audit_row_t *row);
static int mc_audit_chain_entry(mc_audit_chain_t *c, const mc_audit_row_t *row,
    const mc_audit_heads_t *hd, mc_audit_pass_t *p, mc_audit_finding_t *f);
static void mc_audit_sum_add(const mc_audit_heads_t *h, mc_audit_pass_t *p,
    uint64_t xid, int64_t id, const uint8_t *hash, size_t len);
static void mc_audit_sums_close(const mc_audit_heads_t *h,
    mc_audit_pass_t *p);
static mc_audit_tip_t *mc_audit_tip(mc_audit_tips_t *t, const char *chain,
    size_t len);
static void mc_audit_tips_free(mc_audit_tips_t *t);
static size_t mc_audit_fnv(const char *chain, size_t len);
static void mc_audit_facts(PGresult *res, mc_audit_finding_t *f);
static void mc_audit_periods(const mc_audit_heads_t *h,
    const mc_audit_pass_t *p, PGresult *now, mc_audit_finding_t *f);
static int mc_audit_root(PGconn *conn, const char *from, const char *to,
    uint8_t root[MC_MERKLE_HASH], int64_t *n, int64_t *first_id,
    int64_t *last_id);
static void mc_audit_found(mc_audit_finding_t *f, int64_t id,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int64_t mc_audit_int8(const char *p);
static int64_t mc_audit_now_ms(void);
static int mc_audit_int4(const char *p);
static PGresult *mc_audit_exec(PGconn *conn, const char *sql, int n,
    const char *const *params);


static void
mc_audit_usage(FILE *f)
{
    fprintf(f,
"usage: mt5credit audit seal --key FILE --heads FILE [--new-timeline]\n"
"       mt5credit audit verify --pubkey FILE --heads FILE\n"
"\n"
"  seal     the journal's entries of every transaction finished since the\n"
"           last seal become a period: its Merkle root, chained to the\n"
"           previous head, signed with the Ed25519 private key (PEM, on\n"
"           this host only) and appended to the heads file, once every\n"
"           head in it is checked; refused (exit 1) when one does not\n"
"           fit, or the database is on another timeline than the last\n"
"           head's: run verify, and when it fits, seal with\n"
"           --new-timeline.  A torn last line (a seal that did not\n"
"           finish) is set aside in FILE.torn\n"
"  verify   every head's signature, every chain, every fact against its\n"
"           entry, every sealed period against its signed root; names\n"
"           the first entry that does not fit, and a rewound database\n"
"\n"
"A key: openssl genpkey -algorithm ed25519 -out audit.key; its public\n"
"half: openssl pkey -in audit.key -pubout -out audit.pub.  It logs in as\n"
"--database, desk_database in the config, or PG*: a member of\n"
"mt5credit_audit.  Exit 0 fits (or sealed), 1 does not fit, 2 a usage\n"
"error, 3 could not check.\n");
}


int
mc_audit_main(int argc, char **argv, const char *conninfo)
{
    int          c, rc, seal, new_timeline;
    const char  *key, *pub, *heads, *action;
    PGconn      *conn;

    static struct option  opts[] = {
        { "key", required_argument, NULL, 'k' },
        { "pubkey", required_argument, NULL, 'p' },
        { "heads", required_argument, NULL, 'H' },
        { "new-timeline", no_argument, NULL, 'T' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };

    if (argc < 2) {
        mc_audit_usage(stderr);
        return MC_AUDIT_USAGE;
    }

    action = argv[1];
    if (strcmp(action, "--help") == 0 || strcmp(action, "-h") == 0) {
        mc_audit_usage(stdout);
        return 0;
    }

    seal = strcmp(action, "seal") == 0;
    if (!seal && strcmp(action, "verify") != 0) {
        fprintf(stderr, "mt5credit audit: no action \"%s\": seal or "
                "verify\n", action);
        return MC_AUDIT_USAGE;
    }

    key = NULL;
    pub = NULL;
    heads = NULL;
    new_timeline = 0;
    optind = 2;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'k': key = optarg; break;
        case 'p': pub = optarg; break;
        case 'H': heads = optarg; break;
        case 'T': new_timeline = 1; break;
        case 'h': mc_audit_usage(stdout); return 0;
        default: mc_audit_usage(stderr); return MC_AUDIT_USAGE;
        }
    }

    if (optind != argc || heads == NULL
        || (seal ? key == NULL || pub != NULL
                 : pub == NULL || key != NULL || new_timeline))
    {
        fprintf(stderr, "mt5credit audit %s: needs %s and --heads FILE, "
                "nothing else\n", action, seal ? "--key FILE" : "--pubkey FILE");
        return MC_AUDIT_USAGE;
    }

    conn = mc_pgconn_connect(conninfo != NULL ? conninfo : "");
    if (PQstatus(conn) != CONNECTION_OK) {
        fprintf(stderr, "mt5credit audit: %s", PQerrorMessage(conn));
        PQfinish(conn);
        return MC_AUDIT_ERROR;
    }

    rc = seal ? mc_audit_seal(conn, key, heads, new_timeline)
              : mc_audit_verify(conn, conninfo, pub, heads);

    PQfinish(conn);

    return rc;
}


/* ------------------------------------------------------------- seal */

static int
mc_audit_seal(PGconn *conn, const char *key_path, const char *heads_path,
    int new_timeline)
{
    int               fd, rc, len;
    char              head[MC_AUDIT_LINE_MAX], line[MC_AUDIT_LINE_MAX];
    char              root_hex[2 * MC_MERKLE_HASH + 1], sig_hex[129];
    char              sealed_at[32];
    const char       *prev, *from, *params[1];
    size_t            siglen;
    int64_t           n, first, last_id;
    uint8_t           root[MC_MERKLE_HASH], sig[MC_AUDIT_SIG];
    FILE             *kf;
    time_t            now;
    EVP_PKEY         *key;
    EVP_MD_CTX       *ctx;
    PGresult         *res;
    mc_audit_heads_t  h;
    mc_audit_head_t  *last;

    kf = fopen(key_path, "r");
    if (kf == NULL) {
        fprintf(stderr, "mt5credit audit seal: --key %s: %s\n", key_path,
                strerror(errno));
        return MC_AUDIT_ERROR;
    }
    key = PEM_read_PrivateKey(kf, NULL, NULL, NULL);
    fclose(kf);
    if (key == NULL || EVP_PKEY_id(key) != EVP_PKEY_ED25519) {
        fprintf(stderr, "mt5credit audit seal: --key %s: not an Ed25519 "
                "private key in PEM\n", key_path);
        EVP_PKEY_free(key);
        return MC_AUDIT_ERROR;
    }

    /* one sealer at a time: the lock is on the file the heads go to */
    fd = open(heads_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0 || flock(fd, LOCK_EX) != 0) {
        fprintf(stderr, "mt5credit audit seal: --heads %s: %s\n",
                heads_path, strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        EVP_PKEY_free(key);
        return MC_AUDIT_ERROR;
    }

    rc = MC_AUDIT_ERROR;
    res = NULL;

    /* what is appended to is checked first: the key verifies its own */
    switch (mc_audit_heads_read(heads_path, key, 1, &h)) {
    case 0:
        break;
    case 1:
        printf("audit seal: refused: the heads file does not fit (HEADS "
               "above), nothing was appended; run mt5credit audit verify "
               "(docs/runbook.md, \"audit seal refuses\")\n");
        rc = MC_AUDIT_BROKEN;
        goto done;
    default:
        goto done;
    }

    last = h.n > 0 ? &h.heads[h.n - 1] : NULL;
    prev = last != NULL ? last->self
           : "0000000000000000000000000000000000000000000000000000000000000000";
    from = last != NULL ? last->to_xid : "0";

    res = mc_audit_exec(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ "
                        "ONLY", 0, NULL);
    if (res == NULL) {
        goto done;
    }
    PQclear(res);

    res = mc_audit_exec(conn, "SELECT pg_snapshot_xmin(pg_current_snapshot())"
                        "::text, t.system_identifier, t.timeline "
                        "FROM mt5credit.database_timeline_now() t", 0, NULL);
    if (res == NULL) {
        goto done;
    }

    params[0] = PQgetvalue(res, 0, 0);

    /*
     * The database went back in time, or failed over, since the last
     * seal: what it holds of the sealed periods is for verify to judge,
     * and a person to decide on, before anything is sealed after them.
     */
    if (last != NULL && strtoull(params[0], NULL, 10) < last->to) {
        printf("audit seal: refused: the database's transactions (xmin %s) "
               "stop short of period %d's end (xid %s): it went back in "
               "time; run mt5credit audit verify (docs/runbook.md, "
               "\"audit seal refuses\")\n", params[0],
               last->period, last->to_xid);
        rc = MC_AUDIT_BROKEN;
        goto done;
    }

    if (last != NULL && !new_timeline
        && (strcmp(PQgetvalue(res, 0, 1), last->system_identifier) != 0
            || atoi(PQgetvalue(res, 0, 2)) != last->timeline))
    {
        printf("audit seal: refused: the database is on timeline %s of "
               "system %s, period %d was sealed on timeline %d of system %s:"
               " it went back in time or failed over; run mt5credit audit "
               "verify, and when it fits seal with --new-timeline "
               "(docs/runbook.md, \"audit seal refuses\")\n",
               PQgetvalue(res, 0, 2), PQgetvalue(res, 0, 1), last->period,
               last->timeline, last->system_identifier);
        rc = MC_AUDIT_BROKEN;
        goto done;
    }

    if (strtoull(params[0], NULL, 10) <= strtoull(from, NULL, 10)) {
        printf("audit seal: nothing finished since period %d\n",
               last != NULL ? last->period : 0);
        rc = MC_AUDIT_FITS;
        goto done;
    }

    if (mc_audit_root(conn, from, params[0], root, &n, &first, &last_id)
        != 0)
    {
        goto done;
    }

    if (n == 0) {
        printf("audit seal: no entry since period %d\n",
               last != NULL ? last->period : 0);
        rc = MC_AUDIT_FITS;
        goto done;
    }

    mc_audit_hex(root, MC_MERKLE_HASH, root_hex);
    now = time(NULL);
    strftime(sealed_at, sizeof(sealed_at), "%Y-%m-%dT%H:%M:%SZ",
             gmtime(&now));

    /* one line of JSON in a fixed order: what is signed is these bytes */
    len = snprintf(head, sizeof(head), "{\"period\":%d,\"from_xid\":\"%s\","
                   "\"to_xid\":\"%s\",\"entries\":%" PRId64 ",\"last_id\":%"
                   PRId64 ",\"root\":\"%s\",\"prev\":\"%s\","
                   "\"system_identifier\":\"%s\",\"timeline\":%s,"
                   "\"sealed_at\":\"%s\"}",
                   (last != NULL ? last->period : 0) + 1, from, params[0], n,
                   last_id, root_hex, prev, PQgetvalue(res, 0, 1),
                   PQgetvalue(res, 0, 2), sealed_at);
    if (len < 0 || (size_t) len >= sizeof(head)) {
        goto done;
    }

    ctx = EVP_MD_CTX_new();
    siglen = sizeof(sig);
    if (ctx == NULL
        || EVP_DigestSignInit(ctx, NULL, NULL, NULL, key) != 1
        || EVP_DigestSign(ctx, sig, &siglen, (const uint8_t *) head,
                          (size_t) len) != 1
        || siglen != MC_AUDIT_SIG)
    {
        fprintf(stderr, "mt5credit audit seal: signing failed\n");
        EVP_MD_CTX_free(ctx);
        goto done;
    }
    EVP_MD_CTX_free(ctx);

    mc_audit_hex(sig, siglen, sig_hex);
    len = snprintf(line, sizeof(line), "%s %s\n", sig_hex, head);

    if (mc_audit_set_aside(fd, heads_path, &h) != 0) {
        goto done;
    }

    if (len < 0 || (size_t) len >= sizeof(line)
        || write(fd, line, (size_t) len) != len || fsync(fd) != 0)
    {
        fprintf(stderr, "mt5credit audit seal: --heads %s: %s\n",
                heads_path, strerror(errno));
        goto done;
    }

    printf("audit seal: period %d: %" PRId64 " entries (xid %s to %s), root "
           "%s\n", (last != NULL ? last->period : 0) + 1, n, from,
           params[0], root_hex);
    rc = MC_AUDIT_FITS;

done:

    PQclear(res);
    mc_audit_heads_free(&h);
    close(fd);
    EVP_PKEY_free(key);

    return rc;
}


/*
 * What follows the heads file's last newline, before a head is appended.
 * A seal writes its line in one write, newline last, and fsyncs it before
 * it says "sealed", so those bytes are a seal that did not finish (a
 * crash, a full disk): its period is sealed again now.  They are kept in
 * FILE.torn, fsynced, before the heads file is cut back to its last
 * whole line.  A whole signed head that lost only its newline is ended
 * instead: it was sealed.
 */
static int
mc_audit_set_aside(int fd, const char *heads_path, const mc_audit_heads_t *h)
{
    int      tfd;
    char     path[4096];
    char    *data;
    FILE    *fp;
    size_t   got;

    if (h->torn == 0) {
        return 0;
    }

    if (h->unended) {
        if (write(fd, "\n", 1) != 1 || fsync(fd) != 0) {
            fprintf(stderr, "mt5credit audit seal: --heads %s: %s\n",
                    heads_path, strerror(errno));
            return -1;
        }
        printf("audit seal: --heads %s: period %d's line had lost its "
               "newline: ended it\n", heads_path, h->heads[h->n - 1].period);
        return 0;
    }

    if ((size_t) snprintf(path, sizeof(path), "%s.torn", heads_path)
        >= sizeof(path))
    {
        return -1;
    }

    data = malloc(h->torn + 1);
    fp = fopen(heads_path, "r");
    got = 0;
    if (data != NULL && fp != NULL && fseek(fp, (long) h->complete, SEEK_SET)
        == 0)
    {
        got = fread(data, 1, h->torn, fp);
    }
    if (fp != NULL) {
        fclose(fp);
    }
    if (data == NULL || got != h->torn) {
        fprintf(stderr, "mt5credit audit seal: --heads %s: cannot read its "
                "torn last line\n", heads_path);
        free(data);
        return -1;
    }
    data[got++] = '\n';

    tfd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (tfd < 0 || write(tfd, data, got) != (ssize_t) got || fsync(tfd) != 0
        || ftruncate(fd, (off_t) h->complete) != 0 || fsync(fd) != 0)
    {
        fprintf(stderr, "mt5credit audit seal: --heads %s: setting its torn "
                "last line aside in %s: %s\n", heads_path, path,
                strerror(errno));
        if (tfd >= 0) {
            close(tfd);
        }
        free(data);
        return -1;
    }
    close(tfd);
    free(data);

    printf("audit seal: --heads %s: its last %zu bytes were a torn line (no "
           "newline, not a whole signed head: a seal that did not finish); "
           "set aside in %s, and its period sealed again\n", heads_path,
           h->torn, path);

    return 0;
}


/* ----------------------------------------------------------- verify */

/*
 * One REPEATABLE READ snapshot, exported to a second connection: this one
 * reads the journal once for its chains and its periods' roots, while
 * the other compares the chained tables with their entries; this one
 * joins in when its reading is done.  With no second connection, this
 * one does it all.
 */
static int
mc_audit_verify(PGconn *conn, const char *conninfo, const char *pub_path,
    const char *heads_path)
{
    int                 rc, i, k, ntwice, nfacts;
    FILE               *kf;
    int64_t             t[4], rows;
    PGconn             *helper;
    EVP_PKEY           *pub;
    PGresult           *res, *now, *counts;
    mc_audit_heads_t    h;
    mc_audit_pass_t     p;
    mc_audit_queue_t    q, q2;
    mc_audit_finding_t  f;
    const char         *sql[32], *twice[MC_AUDIT_HISTORIES];

    kf = fopen(pub_path, "r");
    if (kf == NULL) {
        fprintf(stderr, "mt5credit audit verify: --pubkey %s: %s\n",
                pub_path, strerror(errno));
        return MC_AUDIT_ERROR;
    }
    pub = PEM_read_PUBKEY(kf, NULL, NULL, NULL);
    fclose(kf);
    if (pub == NULL || EVP_PKEY_id(pub) != EVP_PKEY_ED25519) {
        fprintf(stderr, "mt5credit audit verify: --pubkey %s: not an "
                "Ed25519 public key in PEM\n", pub_path);
        EVP_PKEY_free(pub);
        return MC_AUDIT_ERROR;
    }

    memset(&f, 0, sizeof(f));
    memset(&p, 0, sizeof(p));
    memset(&q, 0, sizeof(q));
    memset(&q2, 0, sizeof(q2));
    helper = NULL;
    now = NULL;

    rc = mc_audit_heads_read(heads_path, pub, 0, &h);
    EVP_PKEY_free(pub);
    if (rc != 0) {
        mc_audit_heads_free(&h);
        return rc < 0 ? MC_AUDIT_ERROR : MC_AUDIT_BROKEN;
    }

    /* a seal that did not finish is not a head; the next seal sets it aside */
    if (h.torn > 0 && !h.unended) {
        printf("HEADS: %s: its last %zu bytes are a torn line (no newline, "
               "not a whole signed head): a seal that did not finish; left "
               "out (the next seal sets it aside)\n", heads_path, h.torn);
    }

    rc = MC_AUDIT_ERROR;

    p.sums = calloc(h.n > 0 ? (size_t) h.n : 1, sizeof(mc_audit_sum_t));
    if (p.sums == NULL) {
        goto done;
    }

    res = mc_audit_exec(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ "
                        "ONLY", 0, NULL);
    PQclear(res);
    if (res == NULL) {
        goto done;
    }

    /*
     * A batch job's joins of a million rows: in memory, not in files, and
     * not compiled (JIT costs each statement more than it saves here).
     * The entries' bytes as they were hashed (convert_to(..., 'UTF8')).
     */
    res = mc_audit_exec(conn, "SELECT set_config('work_mem', '256MB', true),"
                        " set_config('jit', 'off', true), "
                        "set_config('client_encoding', 'UTF8', true)", 0,
                        NULL);
    PQclear(res);
    if (res == NULL) {
        goto done;
    }

    /* where the database is, in this snapshot: a rewind is told by it */
    now = mc_audit_exec(conn, "SELECT t.system_identifier, t.timeline, "
                        "pg_snapshot_xmax(pg_current_snapshot())::text, "
                        "pg_export_snapshot() "
                        "FROM mt5credit.database_timeline_now() t", 0, NULL);
    if (now == NULL) {
        goto done;
    }

    for (nfacts = 0; mc_audit_fact_sql[nfacts] != NULL; nfacts++) {
        sql[nfacts] = mc_audit_fact_sql[nfacts];
    }
    sql[nfacts] = mc_audit_counts_sql;

    t[0] = mc_audit_now_ms();
    if (mc_audit_queue_init(&q, sql, nfacts + 1) != 0) {
        goto done;
    }

    helper = mc_audit_helper(conninfo, PQgetvalue(now, 0, 3));
    if (helper == NULL) {
        /* the same checks, one after the other: slower, never fewer */
        printf("audit verify: no second connection in this snapshot (a "
               "connection limit?): the facts are compared on this one, "
               "after the journal is read\n");

    } else if (mc_audit_queue_join(&q, helper) != 0) {
        goto done;
    }

    if (mc_audit_chains(conn, &q, &h, &p, &f) != 0) {
        goto done;
    }
    mc_audit_sums_close(&h, &p);
    t[1] = mc_audit_now_ms();

    if (mc_audit_queue_join(&q, conn) != 0 || mc_audit_queue_wait(&q) != 0) {
        goto done;
    }
    t[2] = mc_audit_now_ms();

    /* the answers in the list's order, whichever connection gave them */
    for (i = 0; i < nfacts; i++) {
        f.shown = 0;
        mc_audit_facts(q.res[i], &f);
    }

    /* a history's row with two entries: only where it can be */
    counts = q.res[nfacts];
    ntwice = 0;
    for (k = 0; k < MC_AUDIT_HISTORIES; k++) {
        rows = strtoll(PQgetvalue(counts, 0, k), NULL, 10);
        if (rows != p.history[k] || f.problems > 0) {
            twice[ntwice++] = mc_audit_twice_sql[k];
        }
    }

    if (mc_audit_queue_init(&q2, twice, ntwice) != 0
        || (ntwice > 0 && mc_audit_queue_join(&q2, conn) != 0)
        || mc_audit_queue_wait(&q2) != 0)
    {
        goto done;
    }
    for (i = 0; i < ntwice; i++) {
        f.shown = 0;
        mc_audit_facts(q2.res[i], &f);
    }

    f.shown = 0;
    mc_audit_periods(&h, &p, now, &f);
    t[3] = mc_audit_now_ms();

    printf("audit verify: %" PRId64 " entries in %" PRId64 " chains, %d "
           "periods sealed and signed (chains and periods %" PRId64 " ms, "
           "facts beside them %" PRId64 " ms, in all %" PRId64 " ms)\n",
           p.entries, p.chains, h.n, t[1] - t[0], t[2] - t[0], t[3] - t[0]);

    if (f.problems == 0) {
        printf("audit verify: every chain, fact and sealed period fits\n");
        rc = MC_AUDIT_FITS;

    } else {
        printf("audit verify: %d do not fit; the first: %s\n", f.problems,
               f.first[0] ? f.first : "(see above)");
        rc = MC_AUDIT_BROKEN;
    }

done:

    mc_audit_queue_free(&q);
    mc_audit_queue_free(&q2);
    PQfinish(helper);
    PQclear(now);
    for (i = 0; p.sums != NULL && i < h.n; i++) {
        free(p.sums[i].m);
    }
    free(p.sums);
    mc_audit_heads_free(&h);

    return rc;
}


/*
 * The second connection, in the snapshot this one exported.  NULL when
 * it cannot be had (a connection limit): then one connection does all.
 */
static PGconn *
mc_audit_helper(const char *conninfo, const char *snapshot)
{
    char       sql[128];
    PGconn    *conn;
    PGresult  *res;

    /* SET TRANSACTION SNAPSHOT takes a literal only: the server's id */
    if (strlen(snapshot) > 64
        || strspn(snapshot, "0123456789ABCDEF-") != strlen(snapshot))
    {
        return NULL;
    }
    snprintf(sql, sizeof(sql), "SET TRANSACTION SNAPSHOT '%s'", snapshot);

    conn = mc_pgconn_connect(conninfo != NULL ? conninfo : "");
    if (PQstatus(conn) != CONNECTION_OK) {
        PQfinish(conn);
        return NULL;
    }

    res = mc_audit_exec(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ "
                        "ONLY", 0, NULL);
    PQclear(res);
    if (res != NULL) {
        res = mc_audit_exec(conn, sql, 0, NULL);
        PQclear(res);
    }
    if (res != NULL) {
        res = mc_audit_exec(conn, "SELECT set_config('work_mem', '256MB', "
                            "true), set_config('jit', 'off', true)", 0,
                            NULL);
        PQclear(res);
    }
    if (res == NULL) {
        PQfinish(conn);
        return NULL;
    }

    return conn;
}


/*
 * Every chain recomputed: seq 1, 2, ...; each prev_hash its predecessor's.
 * Read in id order, which is each chain's seq order (an append takes the
 * chain's turn, then its id), and the order the table was written in: no
 * sort of a million entries.  The same reading sums up each sealed
 * period, counts each history's entries and checks the unhashed source
 * columns.  A binary COPY: the server streams while this side hashes,
 * at less than half the server's cost of a cursor's fetches, and memory
 * stays one row; q's statements are kept going on the other connection
 * as it streams.
 */
static int
mc_audit_chains(PGconn *conn, mc_audit_queue_t *q, const mc_audit_heads_t *hd,
    mc_audit_pass_t *p, mc_audit_finding_t *f)
{
    int               rc, len, rows;
    char             *data;
    PGresult         *res;
    mc_audit_row_t    row;
    mc_audit_chain_t  c;

    memset(&c, 0, sizeof(c));
    rc = -1;
    rows = 0;

    res = PQexec(conn, "COPY (SELECT id, chain, seq, prev_hash, hash, "
                 "entry::text, xid, source, source_id, "
                 "(entry->>'id')::bigint, "
                 "CASE WHEN chain LIKE 'ingest:%' THEN "
                 "jsonb_array_length(CASE jsonb_typeof(entry->'credit_history')"
                 " WHEN 'array' THEN entry->'credit_history' END) END, "
                 "CASE WHEN chain LIKE 'ingest:%' THEN "
                 "jsonb_array_length(CASE jsonb_typeof(entry->"
                 "'deposit_history') WHEN 'array' THEN "
                 "entry->'deposit_history' END) END "
                 "FROM mt5credit.journal ORDER BY id) "
                 "TO STDOUT (FORMAT binary)");
    if (PQresultStatus(res) != PGRES_COPY_OUT) {
        fprintf(stderr, "mt5credit audit verify: %s",
                PQresultErrorMessage(res));
        PQclear(res);
        return -1;
    }
    PQclear(res);

    /* the file header comes first: signature, flags, extension */
    c.header = 1;

    for ( ;; ) {
        len = PQgetCopyData(conn, &data, 0);
        if (len < 0) {
            break;
        }

        if (mc_audit_copy_row(&c, data, (size_t) len, &row) != 0) {
            fprintf(stderr, "mt5credit audit verify: the journal's COPY is "
                    "not what was asked for\n");
            PQfreemem(data);
            goto drain;
        }
        if (row.fields == MC_AUDIT_ROW
            && mc_audit_chain_entry(&c, &row, hd, p, f) != 0)
        {
            PQfreemem(data);
            goto drain;
        }
        PQfreemem(data);

        if (++rows % 10000 == 0 && mc_audit_queue_poll(q) != 0) {
            goto drain;
        }
    }

    if (len == -2) {
        fprintf(stderr, "mt5credit audit verify: %s", PQerrorMessage(conn));
        goto done;
    }
    rc = 0;

drain:

    /* the COPY's end, and its verdict */
    while ((res = PQgetResult(conn)) != NULL) {
        if (PQresultStatus(res) != PGRES_COMMAND_OK) {
            if (rc == 0) {
                fprintf(stderr, "mt5credit audit verify: %s",
                        PQresultErrorMessage(res));
            }
            rc = -1;
        }
        PQclear(res);
    }

done:

    p->chains = (int64_t) c.tips.n;
    free(c.buf);
    mc_audit_tips_free(&c.tips);

    return rc;
}


/*
 * One CopyData message of a binary COPY: a row of int16 field count,
 * then each field as int32 length (-1 NULL) and its bytes; the first
 * message may begin with the file header, the last is a count of -1.
 */
static int
mc_audit_copy_row(mc_audit_chain_t *c, const char *data, size_t len,
    mc_audit_row_t *row)
{
    int       i;
    size_t    at;
    int16_t   n16;
    int32_t   n32;
    uint32_t  ext;

    static const char  sig[11] = "PGCOPY\n\377\r\n";

    at = 0;
    row->fields = 0;

    if (c->header) {
        if (len < 19 || memcmp(data, sig, sizeof(sig)) != 0) {
            return -1;
        }
        memcpy(&ext, data + 15, 4);
        at = 19 + (size_t) be32toh(ext);
        c->header = 0;
        if (at == len) {
            return 0;           /* the header alone */
        }
    }

    if (at + 2 > len) {
        return -1;
    }
    memcpy(&n16, data + at, 2);
    n16 = (int16_t) be16toh((uint16_t) n16);
    at += 2;

    if (n16 == -1) {
        return 0;               /* the end */
    }
    if (n16 != MC_AUDIT_ROW) {
        return -1;
    }

    for (i = 0; i < n16; i++) {
        if (at + 4 > len) {
            return -1;
        }
        memcpy(&n32, data + at, 4);
        n32 = (int32_t) be32toh((uint32_t) n32);
        at += 4;
        if (n32 < 0) {
            row->v[i] = "";
            row->len[i] = -1;
            continue;
        }
        if ((size_t) n32 > len - at) {
            return -1;
        }
        row->v[i] = data + at;
        row->len[i] = n32;
        at += (size_t) n32;
    }
    row->fields = n16;

    return 0;
}


/* one entry, in id order */
static int
mc_audit_chain_entry(mc_audit_chain_t *c, const mc_audit_row_t *row,
    const mc_audit_heads_t *hd, mc_audit_pass_t *p, mc_audit_finding_t *f)
{
    int              seq, hlen, k;
    char             head[96], chain[64], source[64];
    size_t           tlen, need, clen;
    int64_t          id, source_id;
    uint8_t          h[MC_MERKLE_HASH], *nb;
    const char      *text;
    const uint8_t   *prev, *stored;
    mc_audit_tip_t  *tip;

    p->entries++;
    id = row->len[0] == 8 ? mc_audit_int8(row->v[0]) : 0;
    if (id > p->newest) {
        p->newest = id;
    }

    /* every entry is its period's leaf, whatever else is wrong */
    if (row->len[6] == 8) {
        mc_audit_sum_add(hd, p, (uint64_t) mc_audit_int8(row->v[6]), id,
                         (const uint8_t *) row->v[4],
                         row->len[4] > 0 ? (size_t) row->len[4] : 0);
    }

    /* a chain's name is short ('^[a-z_]+:[0-9]+$'): anything else is not */
    if (row->len[1] < 0 || row->len[1] >= (int) sizeof(chain)
        || row->len[2] != 4 || row->len[3] != MC_MERKLE_HASH
        || row->len[4] != MC_MERKLE_HASH || row->len[5] < 0)
    {
        mc_audit_found(f, id, "journal entry %" PRId64 ": not an entry (its "
                       "chain or hashes)", id);
        return 0;
    }
    clen = (size_t) row->len[1];
    memcpy(chain, row->v[1], clen);
    chain[clen] = '\0';

    /* the unhashed source columns say what the hashed chain and id do */
    k = mc_audit_kind_of(chain, clen);
    if (k >= 0 && k < MC_AUDIT_HISTORIES) {
        p->history[k]++;

    } else if (k == MC_AUDIT_INGEST) {
        /* a batch's credits' and deposits' rows: the first two histories */
        p->history[0] += row->len[10] == 4 ? mc_audit_int4(row->v[10]) : 0;
        p->history[1] += row->len[11] == 4 ? mc_audit_int4(row->v[11]) : 0;
    }
    source_id = row->len[8] == 8 ? mc_audit_int8(row->v[8]) : 0;
    if (k < 0 || row->len[7] != (int) strlen(mc_audit_kinds[k].source)
        || memcmp(row->v[7], mc_audit_kinds[k].source,
                  (size_t) row->len[7]) != 0
        || row->len[8] != 8 || row->len[9] != 8
        || memcmp(row->v[8], row->v[9], 8) != 0)
    {
        snprintf(source, sizeof(source), "%.*s",
                 row->len[7] > 0 ? row->len[7] : 0, row->v[7]);
        mc_audit_found(f, id, "journal entry %" PRId64 " (%s, row %" PRId64
                       "): its source is not its chain's (%s)", id, chain,
                       source_id, source);
    }

    seq = mc_audit_int4(row->v[2]);
    prev = (const uint8_t *) row->v[3];
    stored = (const uint8_t *) row->v[4];
    text = row->v[5];
    tlen = (size_t) row->len[5];

    tip = mc_audit_tip(&c->tips, chain, clen);
    if (tip == NULL) {
        return -1;
    }

    if (seq != tip->expect) {
        mc_audit_found(f, id, "journal entry %" PRId64 " (%s #%d): the "
                       "chain has no #%d before it: an entry was removed",
                       id, chain, seq, tip->expect);
    } else if (memcmp(prev, tip->last, MC_MERKLE_HASH) != 0) {
        mc_audit_found(f, id, "journal entry %" PRId64 " (%s #%d): its "
                       "previous hash is not its predecessor's", id, chain,
                       seq);
    }

    /* prev || chain '\n' seq '\n' || entry */
    hlen = snprintf(head, sizeof(head), "%s\n%d\n", chain, seq);
    need = MC_MERKLE_HASH + (size_t) hlen + tlen;
    if (need > c->cap) {
        nb = realloc(c->buf, need);
        if (nb == NULL) {
            return -1;
        }
        c->buf = nb;
        c->cap = need;
    }
    memcpy(c->buf, prev, MC_MERKLE_HASH);
    memcpy(c->buf + MC_MERKLE_HASH, head, (size_t) hlen);
    memcpy(c->buf + MC_MERKLE_HASH + hlen, text, tlen);
    SHA256(c->buf, need, h);

    if (memcmp(h, stored, MC_MERKLE_HASH) != 0) {
        mc_audit_found(f, id, "journal entry %" PRId64 " (%s #%d): its hash "
                       "is not of its content: the entry was changed", id,
                       chain, seq);
    }

    memcpy(tip->last, stored, MC_MERKLE_HASH);
    tip->expect = seq + 1;

    return 0;
}


/* FNV-1a: where a chain's tip sits */
static size_t
mc_audit_fnv(const char *chain, size_t len)
{
    size_t  i, hash;

    hash = 14695981039346656037ULL;
    for (i = 0; i < len; i++) {
        hash = (hash ^ (uint8_t) chain[i]) * 1099511628211ULL;
    }

    return hash;
}


/* the chain's tip, made (expecting #1) the first time it is seen */
static mc_audit_tip_t *
mc_audit_tip(mc_audit_tips_t *t, const char *chain, size_t len)
{
    size_t           i, j, hash;
    mc_audit_tip_t  *old, *slot;
    size_t           old_cap;

    if (2 * (t->n + 1) > t->cap) {
        old = t->slots;
        old_cap = t->cap;
        t->cap = old_cap ? 2 * old_cap : 1024;
        t->slots = calloc(t->cap, sizeof(mc_audit_tip_t));
        if (t->slots == NULL) {
            t->slots = old;
            t->cap = old_cap;
            return NULL;
        }
        for (i = 0; i < old_cap; i++) {
            if (old[i].chain == NULL) {
                continue;
            }
            hash = mc_audit_fnv(old[i].chain, strlen(old[i].chain));
            for (j = hash & (t->cap - 1); t->slots[j].chain != NULL;
                 j = (j + 1) & (t->cap - 1))
            {
                /* probe */
            }
            t->slots[j] = old[i];
        }
        free(old);
    }

    hash = mc_audit_fnv(chain, len);

    for (i = hash & (t->cap - 1); ; i = (i + 1) & (t->cap - 1)) {
        slot = &t->slots[i];
        if (slot->chain == NULL) {
            slot->chain = strndup(chain, len);
            if (slot->chain == NULL) {
                return NULL;
            }
            slot->expect = 1;
            memset(slot->last, 0, MC_MERKLE_HASH);
            t->n++;
            return slot;
        }
        if (strncmp(slot->chain, chain, len) == 0
            && slot->chain[len] == '\0')
        {
            return slot;
        }
    }
}


static void
mc_audit_tips_free(mc_audit_tips_t *t)
{
    size_t  i;

    for (i = 0; i < t->cap; i++) {
        free(t->slots[i].chain);
    }
    free(t->slots);
    memset(t, 0, sizeof(mc_audit_tips_t));
}


/*
 * The entry as a leaf of its sealed period, if it is in one: the heads'
 * xid ranges follow each other from 0 (their chain says so), so the
 * period is the first whose end is past the entry's xid.  Entries come in
 * id order, and mostly of the period the last one was in.
 */
static void
mc_audit_sum_add(const mc_audit_heads_t *h, mc_audit_pass_t *p,
    uint64_t xid, int64_t id, const uint8_t *hash, size_t len)
{
    int              lo, hi, mid;
    mc_audit_sum_t  *s;

    if (h->n == 0 || xid >= h->heads[h->n - 1].to) {
        return;                 /* not sealed yet */
    }

    if (p->at < h->n && xid >= h->heads[p->at].from
        && xid < h->heads[p->at].to)
    {
        lo = p->at;

    } else {
        lo = 0;
        hi = h->n - 1;
        while (lo < hi) {
            mid = lo + (hi - lo) / 2;
            if (xid < h->heads[mid].to) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        p->at = lo;
    }

    s = &p->sums[lo];
    s->n++;
    if (s->first_id == 0) {
        s->first_id = id;
    }
    s->last_id = id;

    if (s->closed) {
        /* past the newest entry signed: not the signed period */
        s->grown = 1;
        return;
    }

    if (s->m == NULL) {
        s->m = malloc(sizeof(mc_merkle_t));
        if (s->m == NULL) {
            /* no root: it cannot fit, and says so rather than stop */
            s->closed = 1;
            s->grown = 1;
            return;
        }
        mc_merkle_init(s->m);
    }

    mc_merkle_add(s->m, hash, len);

    if (id == h->heads[lo].last_id) {
        mc_merkle_root(s->m, s->root);
        free(s->m);
        s->m = NULL;
        s->closed = 1;
    }
}


/* the roots of the periods whose signed newest entry never came */
static void
mc_audit_sums_close(const mc_audit_heads_t *h, mc_audit_pass_t *p)
{
    int          i;
    mc_merkle_t  empty;

    for (i = 0; i < h->n; i++) {
        if (p->sums[i].closed) {
            continue;
        }
        if (p->sums[i].m != NULL) {
            mc_merkle_root(p->sums[i].m, p->sums[i].root);
            free(p->sums[i].m);
            p->sums[i].m = NULL;
        } else {
            mc_merkle_init(&empty);
            mc_merkle_root(&empty, p->sums[i].root);
        }
        p->sums[i].closed = 1;
    }
}


/* a fact check's answer: each row an entry or a row that does not fit */
static void
mc_audit_facts(PGresult *res, mc_audit_finding_t *f)
{
    int      r;
    int64_t  id;

    for (r = 0; r < PQntuples(res); r++) {
        id = strtoll(PQgetvalue(res, r, 0), NULL, 10);
        if (id != 0) {
            mc_audit_found(f, id, "journal entry %" PRId64 " (%s, row "
                           "%s): %s", id, PQgetvalue(res, r, 1),
                           PQgetvalue(res, r, 2), PQgetvalue(res, r, 3));
        } else {
            mc_audit_found(f, 0, "row %s: %s", PQgetvalue(res, r, 2),
                           PQgetvalue(res, r, 3));
        }
    }
}


/*
 * Every sealed period against its signed head: an edit or a rewind.  now:
 * the database's system identifier, timeline and xmax in the snapshot.
 */
static void
mc_audit_periods(const mc_audit_heads_t *h, const mc_audit_pass_t *p,
    PGresult *now, mc_audit_finding_t *f)
{
    int                     i, rewound;
    char                    hex[2 * MC_MERKLE_HASH + 1];
    const mc_audit_sum_t   *s;
    const mc_audit_head_t  *hd;

    for (i = 0; i < h->n; i++) {
        hd = &h->heads[i];
        s = &p->sums[i];

        mc_audit_hex(s->root, MC_MERKLE_HASH, hex);
        if (!s->grown && s->n == hd->entries && strcmp(hex, hd->root) == 0) {
            continue;
        }

        /*
         * Signed on another timeline, or past where the database is now:
         * its transactions or its journal stop short of what was signed
         * (a restored backup, an async standby promoted).
         */
        rewound = strcmp(hd->system_identifier, PQgetvalue(now, 0, 0)) != 0
                  || hd->timeline != atoi(PQgetvalue(now, 0, 1))
                  || strtoull(PQgetvalue(now, 0, 2), NULL, 10) <= hd->to
                  || (s->n < hd->entries && p->newest < hd->last_id);

        if (rewound) {
            printf("REWIND: period %d (xid %s to %s, %" PRId64 " entries, "
                   "signed on timeline %d) is not what the database holds "
                   "(%" PRId64 " entries, timeline %s): it went back in time "
                   "and lost what was signed; recover it (docs/runbook.md, "
                   "database_rewound)\n", hd->period, hd->from_xid,
                   hd->to_xid, hd->entries, hd->timeline, s->n,
                   PQgetvalue(now, 0, 1));
            f->problems++;
            if (f->first[0] == '\0') {
                snprintf(f->first, sizeof(f->first), "period %d was "
                         "rewound (REWIND above)", hd->period);
            }

        } else {
            mc_audit_found(f, s->first_id, "period %d (xid %s to %s): %"
                           PRId64 " entries whose root is not the signed one "
                           "(%" PRId64 " signed): an entry of it was changed, "
                           "added or removed%s", hd->period, hd->from_xid,
                           hd->to_xid, s->n, hd->entries,
                           s->first_id != 0 ? "" : " (it holds none now)");
        }
    }
}


/* the Merkle root of the entries of transactions in [from, to), by id */
static int
mc_audit_root(PGconn *conn, const char *from, const char *to,
    uint8_t root[MC_MERKLE_HASH], int64_t *n, int64_t *first_id,
    int64_t *last_id)
{
    int           r, rows;
    int64_t       id;
    PGresult     *res;
    const char   *params[2];
    mc_merkle_t  *m;

    params[0] = from;
    params[1] = to;
    *n = 0;
    *first_id = 0;
    *last_id = 0;

    res = mc_audit_exec(conn, "DECLARE mc_period NO SCROLL CURSOR FOR "
                        "SELECT id, hash FROM mt5credit.journal "
                        "WHERE xid >= $1::xid8 AND xid < $2::xid8 "
                        "ORDER BY id", 2, params);
    if (res == NULL) {
        return -1;
    }
    PQclear(res);

    m = malloc(sizeof(mc_merkle_t));
    if (m == NULL) {
        return -1;
    }
    mc_merkle_init(m);

    for ( ;; ) {
        res = PQexecParams(conn, "FETCH FORWARD 10000 FROM mc_period", 0,
                           NULL, NULL, NULL, NULL, 1);
        if (PQresultStatus(res) != PGRES_TUPLES_OK) {
            fprintf(stderr, "mt5credit audit: %s", PQresultErrorMessage(res));
            PQclear(res);
            free(m);
            return -1;
        }

        rows = PQntuples(res);
        if (rows == 0) {
            PQclear(res);
            break;
        }

        for (r = 0; r < rows; r++) {
            id = PQgetlength(res, r, 0) == 8
                 ? mc_audit_int8(PQgetvalue(res, r, 0)) : 0;
            if (*n == 0) {
                *first_id = id;
            }
            *last_id = id;
            (*n)++;
            mc_merkle_add(m, (const uint8_t *) PQgetvalue(res, r, 1),
                          (size_t) PQgetlength(res, r, 1));
        }

        PQclear(res);
    }

    mc_merkle_root(m, root);
    free(m);
    res = mc_audit_exec(conn, "CLOSE mc_period", 0, NULL);
    PQclear(res);

    return 0;
}


static void
mc_audit_found(mc_audit_finding_t *f, int64_t id, const char *fmt, ...)
{
    char     msg[512];
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);

    f->problems++;

    if (f->shown++ < MC_AUDIT_REPORT) {
        printf("EDIT: %s\n", msg);
    }

    /* the first that does not fit: the lowest entry named */
    if (id != 0 && (f->first_id == 0 || id < f->first_id)) {
        f->first_id = id;
        snprintf(f->first, sizeof(f->first), "%s", msg);

    } else if (f->first[0] == '\0') {
        snprintf(f->first, sizeof(f->first), "%s", msg);
    }
}


static PGresult *
mc_audit_exec(PGconn *conn, const char *sql, int n, const char *const *params)
{
    PGresult  *res;

    res = PQexecParams(conn, sql, n, NULL, params, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK
        && PQresultStatus(res) != PGRES_COMMAND_OK)
    {
        fprintf(stderr, "mt5credit audit: %s", PQresultErrorMessage(res));
        PQclear(res);
        return NULL;
    }

    return res;
}


/* binary results: network byte order, at any alignment */
static int64_t
mc_audit_int8(const char *p)
{
    uint64_t  v;

    memcpy(&v, p, sizeof(v));
    return (int64_t) be64toh(v);
}


static int
mc_audit_int4(const char *p)
{
    uint32_t  v;

    memcpy(&v, p, sizeof(v));
    return (int) be32toh(v);
}


/* the phases' durations, for the operator: milliseconds, monotonic */
static int64_t
mc_audit_now_ms(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
