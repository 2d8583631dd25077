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
 *           file (one "<signature hex> <head json>" a line)
 *   verify  with the public key and the heads file: every head's
 *           signature and chain; every journal chain recomputed; every
 *           chained fact against its entry (a fact with no entry, an
 *           entry with no fact, a fact unlike its entry); every sealed
 *           period's root.  It names the first entry that does not fit,
 *           and tells a rewound database (a signed period it no longer
 *           holds, on another timeline or behind the seal) from an edit.
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
#include "mc_merkle.h"
#include "mc_pgconn.h"


#define MC_AUDIT_FITS      0
#define MC_AUDIT_BROKEN    1
#define MC_AUDIT_USAGE     2
#define MC_AUDIT_ERROR     3

#define MC_AUDIT_LINE_MAX  4096
#define MC_AUDIT_SIG       64
#define MC_AUDIT_REPORT    20


typedef struct {
    int       period;
    char      from_xid[24];
    char      to_xid[24];
    int64_t   entries;
    int64_t   last_id;           /* the period's newest entry; 0: none */
    char      root[2 * MC_MERKLE_HASH + 1];
    char      prev[2 * MC_MERKLE_HASH + 1];
    char      system_identifier[32];
    int       timeline;
    char      self[2 * MC_MERKLE_HASH + 1];   /* sha256 of the head text */
} mc_audit_head_t;

typedef struct {
    mc_audit_head_t  *heads;
    int               n;
} mc_audit_heads_t;

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

/* the first entry that does not fit, and how many do not */
typedef struct {
    int64_t   first_id;          /* 0: none named */
    char      first[512];
    int       problems;
    int       shown;             /* printed in this check: at most 20 */
} mc_audit_finding_t;


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
 * columns are a convenience, checked by MC_AUDIT_SOURCES).
 */

/* a row that changes and its chain's last entry, as records of its type */
#define MC_AUDIT_FACTS(table, kind)                                          \
    MC_AUDIT_FACTS_HEAD(table)                                               \
    "FROM (SELECT DISTINCT ON (chain) id, chain, "                           \
    "             (entry->>'id')::bigint AS row_id, "                        \
    "             jsonb_populate_record(NULL::mt5credit." table              \
    "                                   , entry) AS fact "                   \
    "      FROM mt5credit.journal WHERE chain LIKE '" kind ":%' "            \
    "      ORDER BY chain, seq DESC) j "                                     \
    "FULL JOIN (SELECT x.id, x AS fact FROM mt5credit." table " x) s "       \
    "ON s.id = j.row_id "                                                    \
    "WHERE j.id IS NULL OR s.id IS NULL OR j.fact IS DISTINCT FROM s.fact "  \
    "ORDER BY j.id NULLS LAST, s.id LIMIT 20"

/* a history's rows, each with its one entry (MC_AUDIT_TWICE: not two) */
#define MC_AUDIT_HISTORY(table, kind)                                        \
    MC_AUDIT_FACTS_HEAD(table)                                               \
    "FROM (SELECT id, chain, (entry->>'id')::bigint AS row_id, "             \
    "             jsonb_populate_record(NULL::mt5credit." table              \
    "                                   , entry) AS fact "                   \
    "      FROM mt5credit.journal WHERE chain LIKE '" kind ":%') j "         \
    "FULL JOIN (SELECT x.id, x AS fact FROM mt5credit." table " x) s "       \
    "ON s.id = j.row_id "                                                    \
    "WHERE j.id IS NULL OR s.id IS NULL OR j.fact IS DISTINCT FROM s.fact "  \
    "ORDER BY j.id NULLS LAST, s.id LIMIT 20"

/* a webhook's: all but its body, read back through the row type too */
#define MC_AUDIT_EVENT_FACTS                                                 \
    MC_AUDIT_FACTS_HEAD("webhook_event")                                     \
    "FROM (SELECT DISTINCT ON (chain) id, chain, "                           \
    "             (entry->>'id')::bigint AS row_id, "                        \
    "             to_jsonb(jsonb_populate_record("                           \
    "                 NULL::mt5credit.webhook_event, entry)) "               \
    "             - 'raw_body' - 'body_redacted_at' AS fact "                \
    "      FROM mt5credit.journal WHERE chain LIKE 'event:%' "               \
    "      ORDER BY chain, seq DESC) j "                                     \
    "FULL JOIN (SELECT x.id, to_jsonb(x) - 'raw_body' - 'body_redacted_at' " \
    "           AS fact FROM mt5credit.webhook_event x) s "                  \
    "ON s.id = j.row_id "                                                    \
    "WHERE j.id IS NULL OR s.id IS NULL OR j.fact <> s.fact "                \
    "ORDER BY j.id NULLS LAST, s.id LIMIT 20"

#define MC_AUDIT_TWICE(table, kind)                                          \
    "SELECT min(id), min(chain), (entry->>'id')::bigint, 'a fact in "        \
    table " entered more than once' FROM mt5credit.journal "                 \
    "WHERE chain LIKE '" kind ":%' GROUP BY (entry->>'id')::bigint "         \
    "HAVING count(*) > 1 ORDER BY 1 LIMIT 20"

/* the unhashed columns agree with the hashed ones; a chain of no kind */
#define MC_AUDIT_SOURCES                                                     \
    "SELECT id, chain, source_id, 'its source is not its chain''s' "         \
    "FROM mt5credit.journal WHERE source_id IS DISTINCT FROM "               \
    "(entry->>'id')::bigint OR source IS DISTINCT FROM "                     \
    "CASE split_part(chain, ':', 1) WHEN 'credit' THEN 'credit_history' "    \
    "WHEN 'deposit' THEN 'deposit_history' "                                 \
    "WHEN 'payout' THEN 'payout_history' "                                   \
    "WHEN 'refund' THEN 'withdrawal_refund_history' "                        \
    "WHEN 'case' THEN 'case_action' WHEN 'withdrawal' THEN 'withdrawal' "    \
    "WHEN 'proposal' THEN 'money_proposal' "                                 \
    "WHEN 'rule_change' THEN 'risk_rule_change' "                            \
    "WHEN 'event' THEN 'webhook_event' END ORDER BY id LIMIT 20"

/* a stored body that is not the one its digest names (070 may empty it) */
#define MC_AUDIT_BODIES                                                      \
    "SELECT coalesce((SELECT min(j.id) FROM mt5credit.journal j "            \
    "                 WHERE j.chain = 'event:' || x.id), 0), "               \
    "'event:' || x.id, x.id, 'its stored body is not the one its digest "    \
    "names' FROM mt5credit.webhook_event x "                                 \
    "WHERE x.body_redacted_at IS NULL AND sha256(x.raw_body) <> "            \
    "x.body_sha256 ORDER BY x.id LIMIT 20"

static const char  *mc_audit_fact_sql[] = {
    MC_AUDIT_SOURCES,
    MC_AUDIT_HISTORY("credit_history", "credit"),
    MC_AUDIT_TWICE("credit_history", "credit"),
    MC_AUDIT_HISTORY("deposit_history", "deposit"),
    MC_AUDIT_TWICE("deposit_history", "deposit"),
    MC_AUDIT_HISTORY("payout_history", "payout"),
    MC_AUDIT_TWICE("payout_history", "payout"),
    MC_AUDIT_HISTORY("withdrawal_refund_history", "refund"),
    MC_AUDIT_TWICE("withdrawal_refund_history", "refund"),
    MC_AUDIT_HISTORY("case_action", "case"),
    MC_AUDIT_TWICE("case_action", "case"),
    MC_AUDIT_FACTS("withdrawal", "withdrawal"),
    MC_AUDIT_FACTS("money_proposal", "proposal"),
    MC_AUDIT_FACTS("risk_rule_change", "rule_change"),
    MC_AUDIT_EVENT_FACTS,
    MC_AUDIT_BODIES,
    NULL
};


static int mc_audit_seal(PGconn *conn, const char *key_path,
    const char *heads_path);
static int mc_audit_verify(PGconn *conn, const char *pub_path,
    const char *heads_path);
static int mc_audit_read_heads(const char *path, EVP_PKEY *pub,
    mc_audit_heads_t *h);
static int mc_audit_chains(PGconn *conn, mc_audit_finding_t *f,
    int64_t *entries, int64_t *chains);
static mc_audit_tip_t *mc_audit_tip(mc_audit_tips_t *t, const char *chain,
    size_t len);
static void mc_audit_tips_free(mc_audit_tips_t *t);
static size_t mc_audit_fnv(const char *chain, size_t len);
static int mc_audit_facts(PGconn *conn, mc_audit_finding_t *f);
static int mc_audit_periods(PGconn *conn, const mc_audit_heads_t *h,
    mc_audit_finding_t *f);
static int mc_audit_root(PGconn *conn, const char *from, const char *to,
    uint8_t root[MC_MERKLE_HASH], int64_t *n, int64_t *first_id,
    int64_t *last_id);
static void mc_audit_found(mc_audit_finding_t *f, int64_t id,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void mc_audit_hex(const uint8_t *b, size_t n, char *out);
static int64_t mc_audit_int8(const char *p);
static int64_t mc_audit_now_ms(void);
static int mc_audit_int4(const char *p);
static int mc_audit_unhex(const char *s, uint8_t *out, size_t n);
static PGresult *mc_audit_exec(PGconn *conn, const char *sql, int n,
    const char *const *params);


static void
mc_audit_usage(FILE *f)
{
    fprintf(f,
"usage: mt5credit audit seal --key FILE --heads FILE\n"
"       mt5credit audit verify --pubkey FILE --heads FILE\n"
"\n"
"  seal     the journal's entries of every transaction finished since the\n"
"           last seal become a period: its Merkle root, chained to the\n"
"           previous head, signed with the Ed25519 private key (PEM, on\n"
"           this host only) and appended to the heads file\n"
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
    int          c, rc, seal;
    const char  *key, *pub, *heads, *action;
    PGconn      *conn;

    static struct option  opts[] = {
        { "key", required_argument, NULL, 'k' },
        { "pubkey", required_argument, NULL, 'p' },
        { "heads", required_argument, NULL, 'H' },
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
    optind = 2;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'k': key = optarg; break;
        case 'p': pub = optarg; break;
        case 'H': heads = optarg; break;
        case 'h': mc_audit_usage(stdout); return 0;
        default: mc_audit_usage(stderr); return MC_AUDIT_USAGE;
        }
    }

    if (optind != argc || heads == NULL
        || (seal ? key == NULL || pub != NULL : pub == NULL || key != NULL))
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

    rc = seal ? mc_audit_seal(conn, key, heads)
              : mc_audit_verify(conn, pub, heads);

    PQfinish(conn);

    return rc;
}


/* ------------------------------------------------------------- seal */

static int
mc_audit_seal(PGconn *conn, const char *key_path, const char *heads_path)
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
    h.heads = NULL;
    h.n = 0;
    res = NULL;

    if (mc_audit_read_heads(heads_path, NULL, &h) != 0) {
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
    free(h.heads);
    close(fd);
    EVP_PKEY_free(key);

    return rc;
}


/* ----------------------------------------------------------- verify */

static int
mc_audit_verify(PGconn *conn, const char *pub_path, const char *heads_path)
{
    int                 rc;
    FILE               *kf;
    int64_t             t[4];
    int64_t             entries, chains;
    EVP_PKEY           *pub;
    PGresult           *res;
    mc_audit_heads_t    h;
    mc_audit_finding_t  f;

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
    h.heads = NULL;
    h.n = 0;

    rc = mc_audit_read_heads(heads_path, pub, &h);
    EVP_PKEY_free(pub);
    if (rc != 0) {
        free(h.heads);
        return rc < 0 ? MC_AUDIT_ERROR : MC_AUDIT_BROKEN;
    }

    rc = MC_AUDIT_ERROR;

    res = mc_audit_exec(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ "
                        "ONLY", 0, NULL);
    PQclear(res);
    if (res == NULL) {
        goto done;
    }

    /*
     * A batch job's joins of a million rows: in memory, not in files.  The
     * entries' bytes as they were hashed (convert_to(..., 'UTF8')).
     */
    res = mc_audit_exec(conn, "SET LOCAL work_mem = '256MB'", 0, NULL);
    PQclear(res);
    if (res != NULL) {
        res = mc_audit_exec(conn, "SET LOCAL client_encoding = 'UTF8'", 0,
                            NULL);
        PQclear(res);
    }

    t[0] = mc_audit_now_ms();
    if (res == NULL || mc_audit_chains(conn, &f, &entries, &chains) != 0) {
        goto done;
    }
    t[1] = mc_audit_now_ms();
    f.shown = 0;
    if (mc_audit_facts(conn, &f) != 0) {
        goto done;
    }
    t[2] = mc_audit_now_ms();
    f.shown = 0;
    if (mc_audit_periods(conn, &h, &f) != 0) {
        goto done;
    }
    t[3] = mc_audit_now_ms();

    printf("audit verify: %" PRId64 " entries in %" PRId64 " chains, %d "
           "periods sealed and signed (chains %" PRId64 " ms, facts %" PRId64
           " ms, periods %" PRId64 " ms)\n", entries, chains, h.n,
           t[1] - t[0], t[2] - t[1], t[3] - t[2]);

    if (f.problems == 0) {
        printf("audit verify: every chain, fact and sealed period fits\n");
        rc = MC_AUDIT_FITS;

    } else {
        printf("audit verify: %d do not fit; the first: %s\n", f.problems,
               f.first[0] ? f.first : "(see above)");
        rc = MC_AUDIT_BROKEN;
    }

done:

    free(h.heads);

    return rc;
}


/*
 * The heads file, each line's signature checked when pub is given, and
 * their chain: 0 read, 1 a head does not fit (printed), -1 unreadable.
 * A file that does not exist yet holds no heads.
 */
static int
mc_audit_read_heads(const char *path, EVP_PKEY *pub, mc_audit_heads_t *h)
{
    int               lineno, ok;
    char              line[MC_AUDIT_LINE_MAX], *text, *nl;
    size_t            cap;
    uint8_t           sig[MC_AUDIT_SIG], self[SHA256_DIGEST_LENGTH];
    FILE             *fp;
    json_t           *j;
    json_int_t        period, entries, last_id, timeline;
    const char       *from_s, *to_s, *root_s, *prev_s, *sysid_s;
    EVP_MD_CTX       *ctx;
    json_error_t      err;
    mc_audit_head_t  *hd, *prev;

    fp = fopen(path, "r");
    if (fp == NULL) {
        if (errno == ENOENT && pub == NULL) {
            return 0;           /* the first seal makes it */
        }
        if (errno == ENOENT) {
            /* no file is not "nothing sealed": the wrong path, or a loss */
            fprintf(stderr, "mt5credit audit: --heads %s: no such file; "
                    "verify needs the sealer's heads (an empty file when "
                    "nothing was sealed yet)\n", path);
            return -1;
        }
        fprintf(stderr, "mt5credit audit: --heads %s: %s\n", path,
                strerror(errno));
        return -1;
    }

    cap = 0;
    lineno = 0;

    while (fgets(line, sizeof(line), fp) != NULL) {
        lineno++;
        nl = strchr(line, '\n');
        text = strchr(line, ' ');

        if (nl == NULL || text == NULL || text - line != 2 * MC_AUDIT_SIG
            || mc_audit_unhex(line, sig, MC_AUDIT_SIG) != 0)
        {
            printf("HEADS: %s line %d: not \"<signature> <head>\"\n", path,
                   lineno);
            fclose(fp);
            return 1;
        }
        *nl = '\0';
        text++;

        if (pub != NULL) {
            ctx = EVP_MD_CTX_new();
            ok = ctx != NULL
                 && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, pub) == 1
                 && EVP_DigestVerify(ctx, sig, MC_AUDIT_SIG,
                                     (const uint8_t *) text, strlen(text))
                    == 1;
            EVP_MD_CTX_free(ctx);
            if (!ok) {
                printf("HEADS: %s line %d: the signature does not fit the "
                       "head: written or changed without the key\n", path,
                       lineno);
                fclose(fp);
                return 1;
            }
        }

        if ((size_t) h->n == cap) {
            cap = cap ? 2 * cap : 64;
            hd = realloc(h->heads, cap * sizeof(mc_audit_head_t));
            if (hd == NULL) {
                fclose(fp);
                return -1;
            }
            h->heads = hd;
        }

        hd = &h->heads[h->n];
        memset(hd, 0, sizeof(mc_audit_head_t));
        SHA256((const uint8_t *) text, strlen(text), self);
        mc_audit_hex(self, sizeof(self), hd->self);

        j = json_loads(text, 0, &err);
        if (j == NULL
            || json_unpack(j, "{s:I,s:s,s:s,s:I,s:I,s:s,s:s,s:s,s:I}",
                           "period", &period, "from_xid", &from_s,
                           "to_xid", &to_s, "entries", &entries,
                           "last_id", &last_id,
                           "root", &root_s, "prev", &prev_s,
                           "system_identifier", &sysid_s,
                           "timeline", &timeline) != 0
            || strlen(from_s) >= sizeof(hd->from_xid)
            || strlen(to_s) >= sizeof(hd->to_xid)
            || strlen(root_s) != 2 * MC_MERKLE_HASH
            || strlen(prev_s) != 2 * MC_MERKLE_HASH
            || strlen(sysid_s) >= sizeof(hd->system_identifier))
        {
            json_decref(j);
            printf("HEADS: %s line %d: not a head\n", path, lineno);
            fclose(fp);
            return 1;
        }

        hd->period = (int) period;
        hd->entries = (int64_t) entries;
        hd->last_id = (int64_t) last_id;
        hd->timeline = (int) timeline;
        strcpy(hd->from_xid, from_s);
        strcpy(hd->to_xid, to_s);
        strcpy(hd->root, root_s);
        strcpy(hd->prev, prev_s);
        strcpy(hd->system_identifier, sysid_s);
        json_decref(j);

        prev = h->n > 0 ? &h->heads[h->n - 1] : NULL;

        if (hd->period != (prev != NULL ? prev->period : 0) + 1
            || strcmp(hd->from_xid, prev != NULL ? prev->to_xid : "0") != 0
            || strcmp(hd->prev, prev != NULL ? prev->self
                      : "0000000000000000000000000000000000000000000000000000"
                        "000000000000") != 0)
        {
            printf("HEADS: %s line %d: period %d does not follow the head "
                   "before it: a head was removed or put out of order\n",
                   path, lineno, hd->period);
            fclose(fp);
            return 1;
        }

        h->n++;
    }

    fclose(fp);

    return 0;
}


/*
 * Every chain recomputed: seq 1, 2, ...; each prev_hash its predecessor's.
 * Read in id order, which is each chain's seq order (an append takes the
 * chain's turn, then its id), and the order the table was written in: no
 * sort of a million entries.
 */
static int
mc_audit_chains(PGconn *conn, mc_audit_finding_t *f, int64_t *entries,
    int64_t *chains)
{
    int              r, n, seq, hlen;
    char             head[96];
    size_t           tlen, need, cap, clen;
    int64_t          id;
    uint8_t          h[MC_MERKLE_HASH], *buf, *nb;
    PGresult        *res;
    const char      *text, *chain;
    const uint8_t   *prev, *stored;
    mc_audit_tip_t  *tip;
    mc_audit_tips_t  tips;

    *entries = 0;
    buf = NULL;
    cap = 0;
    memset(&tips, 0, sizeof(tips));

    /* binary: the hashes as their 32 bytes; a cursor: memory stays small */
    res = mc_audit_exec(conn, "DECLARE mc_chains NO SCROLL CURSOR FOR "
                        "SELECT id, chain, seq, prev_hash, hash, entry::text "
                        "FROM mt5credit.journal ORDER BY id", 0, NULL);
    if (res == NULL) {
        return -1;
    }
    PQclear(res);

    for ( ;; ) {
        res = PQexecParams(conn, "FETCH FORWARD 10000 FROM mc_chains", 0,
                           NULL, NULL, NULL, NULL, 1);
        if (PQresultStatus(res) != PGRES_TUPLES_OK) {
            fprintf(stderr, "mt5credit audit verify: %s",
                    PQresultErrorMessage(res));
            goto failed;
        }

        n = PQntuples(res);
        if (n == 0) {
            PQclear(res);
            break;
        }

        for (r = 0; r < n; r++) {
            (*entries)++;
            id = PQgetlength(res, r, 0) == 8
                 ? mc_audit_int8(PQgetvalue(res, r, 0)) : 0;
            chain = PQgetvalue(res, r, 1);
            clen = (size_t) PQgetlength(res, r, 1);
            seq = PQgetlength(res, r, 2) == 4
                  ? mc_audit_int4(PQgetvalue(res, r, 2)) : 0;
            prev = (const uint8_t *) PQgetvalue(res, r, 3);
            stored = (const uint8_t *) PQgetvalue(res, r, 4);
            text = PQgetvalue(res, r, 5);
            tlen = (size_t) PQgetlength(res, r, 5);

            if (clen >= 64 || PQgetlength(res, r, 3) != MC_MERKLE_HASH
                || PQgetlength(res, r, 4) != MC_MERKLE_HASH
                || PQgetlength(res, r, 2) != 4 || PQgetisnull(res, r, 5))
            {
                mc_audit_found(f, id, "journal entry %" PRId64 ": not an "
                               "entry (its chain or hashes)", id);
                continue;
            }

            tip = mc_audit_tip(&tips, chain, clen);
            if (tip == NULL) {
                goto failed;
            }

            if (seq != tip->expect) {
                mc_audit_found(f, id, "journal entry %" PRId64 " (%s #%d): "
                               "the chain has no #%d before it: an entry was "
                               "removed", id, chain, seq, tip->expect);
            } else if (memcmp(prev, tip->last, MC_MERKLE_HASH) != 0) {
                mc_audit_found(f, id, "journal entry %" PRId64 " (%s #%d): "
                               "its previous hash is not its predecessor's",
                               id, chain, seq);
            }

            /* prev || chain '\n' seq '\n' || entry */
            hlen = snprintf(head, sizeof(head), "%s\n%d\n", chain, seq);
            need = MC_MERKLE_HASH + (size_t) hlen + tlen;
            if (need > cap) {
                nb = realloc(buf, need);
                if (nb == NULL) {
                    goto failed;
                }
                buf = nb;
                cap = need;
            }
            memcpy(buf, prev, MC_MERKLE_HASH);
            memcpy(buf + MC_MERKLE_HASH, head, (size_t) hlen);
            memcpy(buf + MC_MERKLE_HASH + hlen, text, tlen);
            SHA256(buf, need, h);

            if (memcmp(h, stored, MC_MERKLE_HASH) != 0) {
                mc_audit_found(f, id, "journal entry %" PRId64 " (%s #%d): "
                               "its hash is not of its content: the entry was "
                               "changed", id, chain, seq);
            }

            memcpy(tip->last, stored, MC_MERKLE_HASH);
            tip->expect = seq + 1;
        }

        PQclear(res);
    }

    *chains = (int64_t) tips.n;
    free(buf);
    mc_audit_tips_free(&tips);
    res = mc_audit_exec(conn, "CLOSE mc_chains", 0, NULL);
    PQclear(res);

    return 0;

failed:

    PQclear(res);
    free(buf);
    mc_audit_tips_free(&tips);

    return -1;
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


/* every chained fact against its entry, and every entry against its fact */
static int
mc_audit_facts(PGconn *conn, mc_audit_finding_t *f)
{
    int        i, r;
    int64_t    id;
    PGresult  *res;

    for (i = 0; mc_audit_fact_sql[i] != NULL; i++) {
        res = mc_audit_exec(conn, mc_audit_fact_sql[i], 0, NULL);
        if (res == NULL) {
            return -1;
        }

        f->shown = 0;

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

        PQclear(res);
    }

    return 0;
}


/* every sealed period against its signed head; an edit or a rewind */
static int
mc_audit_periods(PGconn *conn, const mc_audit_heads_t *h,
    mc_audit_finding_t *f)
{
    int                     i, rewound;
    char                    hex[2 * MC_MERKLE_HASH + 1];
    int64_t                 n, first, last, newest;
    uint8_t                 root[MC_MERKLE_HASH];
    PGresult               *res;
    const mc_audit_head_t  *hd;

    if (h->n == 0) {
        return 0;
    }

    res = mc_audit_exec(conn, "SELECT t.system_identifier, t.timeline, "
                        "pg_snapshot_xmax(pg_current_snapshot())::text, "
                        "(SELECT coalesce(max(id), 0) FROM mt5credit.journal)"
                        " FROM mt5credit.database_timeline_now() t", 0, NULL);
    if (res == NULL) {
        return -1;
    }
    newest = strtoll(PQgetvalue(res, 0, 3), NULL, 10);

    for (i = 0; i < h->n; i++) {
        hd = &h->heads[i];

        if (mc_audit_root(conn, hd->from_xid, hd->to_xid, root, &n, &first,
                          &last)
            != 0)
        {
            PQclear(res);
            return -1;
        }

        mc_audit_hex(root, MC_MERKLE_HASH, hex);
        if (n == hd->entries && strcmp(hex, hd->root) == 0) {
            continue;
        }

        /*
         * Signed on another timeline, or past where the database is now:
         * its transactions or its journal stop short of what was signed
         * (a restored backup, an async standby promoted).
         */
        rewound = strcmp(hd->system_identifier, PQgetvalue(res, 0, 0)) != 0
                  || hd->timeline != atoi(PQgetvalue(res, 0, 1))
                  || strtoull(PQgetvalue(res, 0, 2), NULL, 10)
                     <= strtoull(hd->to_xid, NULL, 10)
                  || (n < hd->entries && newest < hd->last_id);

        if (rewound) {
            printf("REWIND: period %d (xid %s to %s, %" PRId64 " entries, "
                   "signed on timeline %d) is not what the database holds "
                   "(%" PRId64 " entries, timeline %s): it went back in time "
                   "and lost what was signed; recover it (docs/runbook.md, "
                   "database_rewound)\n", hd->period, hd->from_xid,
                   hd->to_xid, hd->entries, hd->timeline, n,
                   PQgetvalue(res, 0, 1));
            f->problems++;
            if (f->first[0] == '\0') {
                snprintf(f->first, sizeof(f->first), "period %d was "
                         "rewound (REWIND above)", hd->period);
            }

        } else {
            mc_audit_found(f, first, "period %d (xid %s to %s): %" PRId64
                           " entries whose root is not the signed one (%"
                           PRId64 " signed): an entry of it was changed, "
                           "added or removed%s", hd->period, hd->from_xid,
                           hd->to_xid, n, hd->entries,
                           first != 0 ? "" : " (it holds none now)");
        }
    }

    PQclear(res);

    return 0;
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


static void
mc_audit_hex(const uint8_t *b, size_t n, char *out)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        snprintf(out + 2 * i, 3, "%02x", b[i]);
    }
    out[2 * n] = '\0';
}


static int
mc_audit_unhex(const char *s, uint8_t *out, size_t n)
{
    size_t        i;
    unsigned int  v;

    for (i = 0; i < n; i++) {
        if (sscanf(s + 2 * i, "%2x", &v) != 1
            || !strchr("0123456789abcdef", s[2 * i])
            || !strchr("0123456789abcdef", s[2 * i + 1]))
        {
            return -1;
        }
        out[i] = (uint8_t) v;
    }

    return 0;
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
