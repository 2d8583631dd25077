/*
 * Copyright (C) mt5-credit
 *
 * A worker's file, <state_dir>/worker-<name>.state, is one line:
 *
 *   <system identifier> <timeline> <credit id> <attempts>
 *
 * the database it works on and its last claim.  The claim is written, and
 * fsync'ed, before the claim's balance call may leave: if the call was
 * made, the file says so.  A database that then holds an older attempt of
 * that credit (or no such credit: identities are reused after a restore)
 * lost a claim whose deal MT5 may have: it went back in time.  Every
 * worker checks every file, so a worker that never comes back is still
 * covered.  A new timeline that still holds every claim lost nothing seen
 * here, and is logged; another system identifier is another database, and
 * nothing is claimed until a person removes the files.
 *
 * The line is padded to MC_REWIND_RECORD bytes.  A claim overwrites it in
 * place, with fdatasync(): within one sector a write is whole or absent
 * (pg_control relies on the same), and an unchanged size leaves the file
 * system's journal out of the way, which a new file and a rename are not
 * (2.6 ms instead of 0.6 ms next to a PostgreSQL syncing its WAL).  The
 * fdatasync() runs on a thread of its own while the worker's checks ask
 * MT5 for the account, and the balance call waits for it: the call
 * still never leaves before its claim is on disk.  A file is created, and
 * a realigned one replaced, by rename, its directory synced after.  The
 * check holds "<state_dir>/.lock".
 *
 * Files do not pile up.  The default name is host:pid, so every process
 * that ever claimed left a file of its own; once a check finds the
 * database holding every claim kept, the files of this host's workers
 * whose process is gone are removed, except the newest (the latest claim
 * seen on this host is the one that tells the most of a later rewind).
 * Nothing else limits how many files there are.
 */


#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mc_clock.h"
#include "mc_log.h"
#include "mc_rewind.h"


/* one padded line: far below a 512-byte sector */
#define MC_REWIND_RECORD     128


typedef struct {
    char             path[768];
    char             system_identifier[32];
    int              timeline;
    int64_t          credit;
    int              attempts;
    struct timespec  mtime;
} mc_rewind_fact_t;


static int mc_rewind_read_all(mc_rewind_t *r, mc_rewind_fact_t **facts);
static int mc_rewind_read_one(mc_rewind_fact_t *fact);
static void mc_rewind_prune(mc_rewind_t *r, mc_rewind_fact_t *facts, int n);
static int mc_rewind_gone(mc_rewind_t *r, const char *path);
static int mc_rewind_sync_dir(const char *path);
static void mc_rewind_file_name(char *buf, size_t size, const char *dir,
    const char *worker);
static int mc_rewind_record(char *buf, const char *sysid, int timeline,
    int64_t credit, int attempts);
static int mc_rewind_flush_wait(mc_rewind_t *r, int64_t wait_ms);
static int mc_rewind_flusher_start(mc_rewind_t *r);
static void *mc_rewind_flusher(void *arg);
static int mc_rewind_write(const char *path, const char *sysid, int timeline,
    int64_t credit, int attempts);
static int mc_rewind_realign(mc_db_t *db, mc_rewind_fact_t *facts, int n,
    const mc_db_identity_t *id);


void
mc_rewind_init(mc_rewind_t *r, const char *dir, const char *worker)
{
    char  host[128], name[136];

    memset(r, 0, sizeof(*r));
    r->flush_fd = -1;
    snprintf(r->dir, sizeof(r->dir), "%s", dir);

    /* the worker's name as a file name: host:pid becomes host_pid */
    mc_rewind_file_name(r->file, sizeof(r->file), r->dir, worker);

    /* what a default name (host:pid, mc_config.c) of this host starts
       with: those files' processes can be asked whether they live */
    if (gethostname(host, sizeof(host)) != 0) {
        strcpy(host, "worker");
    }

    host[sizeof(host) - 1] = '\0';
    snprintf(name, sizeof(name), "%s:", host);
    mc_rewind_file_name(r->host_prefix, sizeof(r->host_prefix), "", name);

    /* "worker-<host>_.state" less ".state" */
    r->host_prefix[strlen(r->host_prefix) - 6] = '\0';
}


int
mc_rewind_open(mc_rewind_t *r)
{
    int          fd, ok;
    char         probe[800];
    const char  *why;
    struct stat  st;

    why = stat(r->dir, &st) != 0 ? strerror(errno)
          : !S_ISDIR(st.st_mode) ? "not a directory" : NULL;
    if (why != NULL) {
        fprintf(stderr, "mt5credit: state_dir %s: %s; the worker keeps "
                "each claim there before its balance call, and makes none "
                "without it\n", r->dir, why);
        return -1;
    }

    /* writable as the worker needs it: a file made, synced and removed */
    snprintf(probe, sizeof(probe), "%s.probe", r->file);

    fd = open(probe, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ok = fd >= 0 && fsync(fd) == 0;
    if (fd >= 0) {
        ok = close(fd) == 0 && ok;
    }

    if (!ok || unlink(probe) != 0) {
        fprintf(stderr, "mt5credit: state_dir %s: %s; the worker keeps "
                "each claim there before its balance call, and makes none "
                "without it\n", r->dir, strerror(errno));
        if (fd >= 0) {
            (void) unlink(probe);
        }
        return -1;
    }

    return 0;
}


mc_rewind_rc_e
mc_rewind_check(mc_rewind_t *r, mc_db_t *db, const char *worker, int lease,
    const mc_alert_config_t *alert)
{
    int                 fd, i, n, marked, *attempts;
    char                lock[600];
    int64_t            *credits;
    mc_rewind_rc_e      rc;
    mc_db_identity_t    id;
    mc_rewind_fact_t   *facts;

    /* this worker's own line is on disk, or known not to be, first */
    mc_rewind_settle(r);

    snprintf(lock, sizeof(lock), "%s/.lock", r->dir);

    fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || flock(fd, LOCK_EX) != 0) {
        mc_log(MC_LOG_ERROR, "state %s: %s; nothing is claimed until the "
               "workers' claims can be kept", lock, strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return MC_REWIND_ERROR;
    }

    rc = MC_REWIND_ERROR;
    facts = NULL;
    credits = NULL;
    attempts = NULL;

    n = mc_rewind_read_all(r, &facts);
    if (n < 0) {
        goto done;
    }

    credits = malloc((n + 1) * sizeof(int64_t));
    attempts = malloc((n + 1) * sizeof(int));
    if (credits == NULL || attempts == NULL) {
        mc_log(MC_LOG_ERROR, "state %s: out of memory for %d claims",
               r->dir, n);
        goto done;
    }

    for (i = 0; i < n; i++) {
        credits[i] = facts[i].credit;
        attempts[i] = facts[i].attempts;
    }

    if (mc_db_identity(db, credits, attempts, n, &id) != 0) {
        goto done;
    }

    for (i = 0; i < n; i++) {
        if (strcmp(facts[i].system_identifier, id.system_identifier) != 0) {
            mc_alert(alert, "database_changed", 0, "the database is not "
                     "the one %s was kept for (system identifier %s, now "
                     "%s): nothing is claimed; if this is intended, remove "
                     "the worker-*.state files of %s", facts[i].path,
                     facts[i].system_identifier, id.system_identifier,
                     r->dir);
            rc = MC_REWIND_STOP;
            goto done;
        }
    }

    rc = MC_REWIND_OK;

    if (id.behind > 0) {
        marked = mc_db_rewound(db, worker, lease,
                               json_pack("{s:s, s:i, s:i, s:I, s:i}",
                                         "system_identifier",
                                         id.system_identifier,
                                         "timeline", id.timeline,
                                         "claims_lost", id.behind,
                                         "first_credit",
                                         (json_int_t) id.behind_credit,
                                         "its_attempts_now",
                                         id.behind_attempts));
        if (marked < 0 || mc_rewind_realign(db, facts, n, &id) != 0) {
            rc = MC_REWIND_ERROR;
            goto done;
        }

        mc_alert(alert, "database_rewound", id.behind_credit, "the database "
                 "went back in time: %d claim%s kept outside it %s not "
                 "there (credit %" PRId64 " is at attempt %d; timeline %d); "
                 "%d open credits are looked up before any call",
                 id.behind, id.behind == 1 ? "" : "s",
                 id.behind == 1 ? "is" : "are", id.behind_credit,
                 id.behind_attempts, id.timeline, marked);
        rc = MC_REWIND_HANDLED;
    }

    for (i = 0; i < n && rc == MC_REWIND_OK; i++) {
        if (facts[i].timeline != id.timeline) {
            mc_log(MC_LOG_WARN, "database timeline %d -> %d (a failover or "
                   "a restore) with every claim kept here still in it",
                   facts[i].timeline, id.timeline);
            break;
        }
    }

    snprintf(r->system_identifier, sizeof(r->system_identifier), "%s",
             id.system_identifier);
    r->timeline = id.timeline;

    if (rc == MC_REWIND_OK) {
        mc_rewind_prune(r, facts, n);
    }

done:

    free(credits);
    free(attempts);
    free(facts);
    flock(fd, LOCK_UN);
    close(fd);

    return rc;
}


int
mc_rewind_claim_start(mc_rewind_t *r, int64_t credit, int attempts)
{
    int   fd;
    char  buf[MC_REWIND_RECORD];

    mc_rewind_settle(r);
    r->kept_credit = 0;

    if (r->system_identifier[0] == '\0') {
        mc_log(MC_LOG_ERROR, "credit=%" PRId64 ": the database was not "
               "checked; the claim is not acted on", credit);
        return -1;
    }

    if (mc_rewind_record(buf, r->system_identifier, r->timeline, credit,
                         attempts)
        != 0)
    {
        return -1;
    }

    /* by name each time: a realigned file is a new one */
    fd = open(r->file, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT) {
            mc_log(MC_LOG_ERROR, "state %s: %s", r->file, strerror(errno));
            return -1;
        }

        /* the first claim makes the file, durable by name, at once */
        if (mc_rewind_write(r->file, r->system_identifier, r->timeline,
                            credit, attempts)
            != 0)
        {
            return -1;
        }

        r->kept_credit = credit;
        return 0;
    }

    if (pwrite(fd, buf, MC_REWIND_RECORD, 0) != MC_REWIND_RECORD) {
        mc_log(MC_LOG_ERROR, "state %s: %s", r->file, strerror(errno));
        close(fd);
        return -1;
    }

    if (mc_rewind_flusher_start(r) != 0) {
        /* no thread to be had: the claim is kept now */
        if (fdatasync(fd) != 0) {
            mc_log(MC_LOG_ERROR, "state %s: %s", r->file, strerror(errno));
            close(fd);
            return -1;
        }

        if (close(fd) != 0) {
            mc_log(MC_LOG_ERROR, "state %s: %s", r->file, strerror(errno));
            return -1;
        }

        r->kept_credit = credit;
        return 0;
    }

    pthread_mutex_lock(&r->lock);
    r->asked = 1;
    r->flush_errno = 0;
    r->flush_fd = fd;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);

    r->flush_credit = credit;

    return 0;
}


int
mc_rewind_claim_kept(mc_rewind_t *r, int64_t credit, int64_t wait_ms)
{
    int  rc;

    if (r->flusher_started && r->flush_fd >= 0
        && r->flush_credit == credit)
    {
        rc = mc_rewind_flush_wait(r, wait_ms < 0 ? 0 : wait_ms);

        if (rc == 0) {
            mc_log(MC_LOG_ERROR, "credit=%" PRId64 ": its claim was not on "
                   "disk within %" PRId64 " ms (%s)", credit,
                   wait_ms < 0 ? 0 : wait_ms, r->file);
            return -1;
        }
    }

    if (r->kept_credit != credit) {
        /* failed (logged), or never started for this credit */
        return -1;
    }

    return 0;
}


void
mc_rewind_settle(mc_rewind_t *r)
{
    /* in flight only with the thread made (mc_rewind_init() or not) */
    if (r->flusher_started && r->flush_fd >= 0) {
        (void) mc_rewind_flush_wait(r, -1);
    }
}


void
mc_rewind_free(mc_rewind_t *r)
{
    mc_rewind_settle(r);

    if (!r->flusher_started) {
        return;
    }

    pthread_mutex_lock(&r->lock);
    r->stopping = 1;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);

    pthread_join(r->flusher, NULL);
    pthread_cond_destroy(&r->cond);
    pthread_mutex_destroy(&r->lock);
    r->flusher_started = 0;
}


/*
 * The flush in flight: 1 once it ended (kept_credit says whether it
 * succeeded, a failure is logged), 0 if it still runs after wait_ms
 * (-1: for as long as it takes).
 */
static int
mc_rewind_flush_wait(mc_rewind_t *r, int64_t wait_ms)
{
    int              err, asked;
    struct timespec  until;

    clock_gettime(CLOCK_MONOTONIC, &until);
    if (wait_ms > 0) {
        until.tv_sec += wait_ms / 1000;
        until.tv_nsec += (wait_ms % 1000) * 1000000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
    }

    pthread_mutex_lock(&r->lock);

    while (r->asked) {
        if (wait_ms < 0) {
            pthread_cond_wait(&r->cond, &r->lock);

        } else if (pthread_cond_timedwait(&r->cond, &r->lock, &until)
                   == ETIMEDOUT)
        {
            break;
        }
    }

    asked = r->asked;
    err = r->flush_errno;

    pthread_mutex_unlock(&r->lock);

    if (asked) {
        return 0;
    }

    if (err != 0) {
        mc_log(MC_LOG_ERROR, "state %s: %s", r->file, strerror(err));
        close(r->flush_fd);

    } else if (close(r->flush_fd) != 0) {
        mc_log(MC_LOG_ERROR, "state %s: %s", r->file, strerror(errno));

    } else {
        r->kept_credit = r->flush_credit;
    }

    r->flush_fd = -1;

    return 1;
}


/* the flushing thread, made with the first claim; 0, or -1 (logged) */
static int
mc_rewind_flusher_start(mc_rewind_t *r)
{
    int                 rc;
    pthread_condattr_t  attr;

    if (r->flusher_started) {
        return 0;
    }

    /* timed waits on the monotonic clock: a wall-clock step moves none */
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&r->cond, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&r->lock, NULL);

    rc = pthread_create(&r->flusher, NULL, mc_rewind_flusher, r);
    if (rc != 0) {
        mc_log(MC_LOG_WARN, "state %s: no thread to flush claims (%s); "
               "each is flushed before the checks", r->file, strerror(rc));
        pthread_cond_destroy(&r->cond);
        pthread_mutex_destroy(&r->lock);
        return -1;
    }

    r->flusher_started = 1;

    return 0;
}


/* runs each fdatasync() asked for, one at a time, until stopping */
static void *
mc_rewind_flusher(void *arg)
{
    mc_rewind_t  *r = arg;

    int  fd, err;

    pthread_mutex_lock(&r->lock);

    for ( ;; ) {
        while (!r->asked && !r->stopping) {
            pthread_cond_wait(&r->cond, &r->lock);
        }

        if (!r->asked) {
            break;
        }

        fd = r->flush_fd;
        pthread_mutex_unlock(&r->lock);

        err = fdatasync(fd) == 0 ? 0 : errno;

        pthread_mutex_lock(&r->lock);
        r->flush_errno = err;
        r->asked = 0;
        pthread_cond_broadcast(&r->cond);
    }

    pthread_mutex_unlock(&r->lock);

    return NULL;
}


/* every worker-*.state of the directory: how many, or -1 (logged) */
static int
mc_rewind_read_all(mc_rewind_t *r, mc_rewind_fact_t **facts)
{
    int                n, max;
    DIR               *d;
    size_t             len;
    struct dirent     *e;
    mc_rewind_fact_t  *f;

    *facts = NULL;

    d = opendir(r->dir);
    if (d == NULL) {
        mc_log(MC_LOG_ERROR, "state %s: %s", r->dir, strerror(errno));
        return -1;
    }

    n = 0;
    max = 0;

    while ((e = readdir(d)) != NULL) {
        len = strlen(e->d_name);

        if (strncmp(e->d_name, "worker-", 7) != 0 || len < 13
            || strcmp(e->d_name + len - 6, ".state") != 0)
        {
            continue;
        }

        if (n == max) {
            max = max != 0 ? max * 2 : 16;
            f = realloc(*facts, max * sizeof(mc_rewind_fact_t));
            if (f == NULL) {
                mc_log(MC_LOG_ERROR, "state %s: out of memory for %d files",
                       r->dir, n);
                goto failed;
            }

            *facts = f;
        }

        f = &(*facts)[n];
        memset(f, 0, sizeof(*f));
        snprintf(f->path, sizeof(f->path), "%s/%s", r->dir, e->d_name);

        switch (mc_rewind_read_one(f)) {

        case 0:
            n++;
            break;

        case 1:
            /* pruned by another worker between readdir() and open() */
            break;

        default:
            goto failed;
        }
    }

    closedir(d);

    return n;

failed:

    closedir(d);
    free(*facts);
    *facts = NULL;

    return -1;
}


/* 0, 1 if the file is gone, or -1 (logged) */
static int
mc_rewind_read_one(mc_rewind_fact_t *fact)
{
    int          got;
    FILE        *f;
    struct stat  st;

    f = fopen(fact->path, "re");
    if (f == NULL && errno == ENOENT) {
        return 1;
    }

    got = -1;

    if (f != NULL) {
        got = fstat(fileno(f), &st) == 0
              ? fscanf(f, "%31s %d %" SCNd64 " %d",
                       fact->system_identifier, &fact->timeline,
                       &fact->credit, &fact->attempts)
              : -1;
        fact->mtime = st.st_mtim;
        fclose(f);
    }

    if (got != 4) {
        mc_log(MC_LOG_ERROR, "state %s: not \"<system identifier> "
               "<timeline> <credit> <attempts>\"; nothing is claimed "
               "until a person fixes or removes it", fact->path);
        return -1;
    }

    return 0;
}


/*
 * After a check found the database holding every claim kept: the files
 * of this host's default-named workers whose process is gone, except
 * this worker's own and the newest.  A live worker's file stays (it may
 * be writing it now: a claim is written without the lock); a file that
 * is not removed is only read again.
 */
static void
mc_rewind_prune(mc_rewind_t *r, mc_rewind_fact_t *facts, int n)
{
    int  i, newest, pruned;

    newest = -1;

    for (i = 0; i < n; i++) {
        if (newest < 0
            || facts[i].mtime.tv_sec > facts[newest].mtime.tv_sec
            || (facts[i].mtime.tv_sec == facts[newest].mtime.tv_sec
                && facts[i].mtime.tv_nsec > facts[newest].mtime.tv_nsec))
        {
            newest = i;
        }
    }

    pruned = 0;

    for (i = 0; i < n; i++) {
        if (i == newest || strcmp(facts[i].path, r->file) == 0
            || !mc_rewind_gone(r, facts[i].path))
        {
            continue;
        }

        if (unlink(facts[i].path) != 0) {
            if (errno != ENOENT) {
                mc_log(MC_LOG_WARN, "state %s: %s", facts[i].path,
                       strerror(errno));
            }
            continue;
        }

        pruned++;
    }

    if (pruned > 0) {
        (void) mc_rewind_sync_dir(r->file);
        mc_log(MC_LOG_INFO, "state %s: removed %d file%s of workers gone, "
               "whose claims the database holds", r->dir, pruned,
               pruned == 1 ? "" : "s");
    }
}


/* the file is of a default-named worker of this host no longer running */
static int
mc_rewind_gone(mc_rewind_t *r, const char *path)
{
    char        *end;
    size_t       len;
    const char  *name, *digits;
    long         pid;

    name = strrchr(path, '/');
    name = name != NULL ? name + 1 : path;
    len = strlen(r->host_prefix);

    if (strncmp(name, r->host_prefix, len) != 0) {
        return 0;
    }

    digits = name + len;
    if (!isdigit((unsigned char) digits[0])) {
        return 0;
    }

    errno = 0;
    pid = strtol(digits, &end, 10);
    if (errno != 0 || strcmp(end, ".state") != 0 || pid <= 0
        || pid > INT32_MAX)
    {
        return 0;
    }

    /* EPERM: it runs, as someone else */
    return kill((pid_t) pid, 0) != 0 && errno == ESRCH;
}


static int
mc_rewind_record(char *buf, const char *sysid, int timeline, int64_t credit,
    int attempts)
{
    int  n;

    n = snprintf(buf, MC_REWIND_RECORD, "%s %d %" PRId64 " %d", sysid,
                 timeline, credit, attempts);
    if (n < 0 || n >= MC_REWIND_RECORD) {
        mc_log(MC_LOG_ERROR, "state: a claim's line past %d bytes",
               MC_REWIND_RECORD);
        return -1;
    }

    memset(buf + n, ' ', MC_REWIND_RECORD - 1 - n);
    buf[MC_REWIND_RECORD - 1] = '\n';

    return 0;
}


/* a whole file, by rename, and its directory synced: durable as a name */
static int
mc_rewind_write(const char *path, const char *sysid, int timeline,
    int64_t credit, int attempts)
{
    int    fd, ok;
    char   tmp[800], buf[MC_REWIND_RECORD];

    if (mc_rewind_record(buf, sysid, timeline, credit, attempts) != 0) {
        return -1;
    }

    snprintf(tmp, sizeof(tmp), "%s.tmp", path);

    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        mc_log(MC_LOG_ERROR, "state %s: %s", tmp, strerror(errno));
        return -1;
    }

    ok = write(fd, buf, MC_REWIND_RECORD) == MC_REWIND_RECORD;
    ok = ok && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;

    if (!ok || rename(tmp, path) != 0) {
        mc_log(MC_LOG_ERROR, "state %s: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }

    return mc_rewind_sync_dir(path);
}


/* <dir>/worker-<name>.state, the name with [^A-Za-z0-9.-] as '_' */
static void
mc_rewind_file_name(char *buf, size_t size, const char *dir,
    const char *worker)
{
    char    name[160];
    size_t  i;

    snprintf(name, sizeof(name), "%s", worker);
    for (i = 0; name[i] != '\0'; i++) {
        if (!isalnum((unsigned char) name[i]) && name[i] != '.'
            && name[i] != '-')
        {
            name[i] = '_';
        }
    }

    snprintf(buf, size, "%s%sworker-%s.state", dir, dir[0] ? "/" : "",
             name);
}


/* the directory of path synced: a name made or removed is durable */
static int
mc_rewind_sync_dir(const char *path)
{
    int    fd, ok;
    char   dir[800], *slash;

    snprintf(dir, sizeof(dir), "%s", path);
    slash = strrchr(dir, '/');
    if (slash != NULL) {
        *slash = '\0';
    }

    fd = open(slash != NULL ? dir : ".",
              O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ok = fd >= 0 && fsync(fd) == 0;
    if (fd >= 0) {
        close(fd);
    }

    if (!ok) {
        mc_log(MC_LOG_ERROR, "state %s: its directory: %s", path,
               strerror(errno));
        return -1;
    }

    return 0;
}


/*
 * After a rewind was handled: each file says what the database holds, a
 * credit it lost entirely at attempt 0 (no longer "behind", sql/037).
 */
static int
mc_rewind_realign(mc_db_t *db, mc_rewind_fact_t *facts, int n,
    const mc_db_identity_t *id)
{
    int               i;
    mc_db_identity_t  one;

    for (i = 0; i < n; i++) {
        if (mc_db_identity(db, &facts[i].credit, &facts[i].attempts, 1,
                           &one) != 0)
        {
            return -1;
        }

        if (one.behind == 0) {
            continue;
        }

        if (mc_rewind_write(facts[i].path, id->system_identifier,
                            id->timeline, facts[i].credit,
                            one.behind_attempts) != 0)
        {
            return -1;
        }
    }

    return 0;
}
