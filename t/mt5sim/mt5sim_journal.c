/*
 * Copyright (C) mt5-credit
 *
 * The ledger's durability: DIR/journal.jsonl, one JSON record a line,
 * appended before a change is applied and replayed at start on top of
 * the config.  Records: {"op":"deal",...} for an executed balance
 * operation or a planted trade, {"op":"account"|"group"|"manager"|"time",
 * "data":{...}} for control-port changes.  A torn last line (a crash mid-write) is cut off;
 * anything else unreadable stops the start.
 *
 * Balance operations sync with a group commit: whoever takes sync_lock
 * first fdatasync()s every record written so far, and the others find
 * their record already covered.  DIR/lock (flock) keeps a second
 * simulator off the same state.
 */


#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mt5sim.h"


#define mt5sim_err(err, ...)  snprintf(err, MT5SIM_ERR_MAX, __VA_ARGS__)


static int mt5sim_journal_apply(mt5sim_ledger_t *l, json_t *rec, char *err);
static int mt5sim_journal_replay(mt5sim_ledger_t *l, int fd,
    const char *path, off_t *good, char *err);
static int mt5sim_sync_dir(const char *dir);


static int
mt5sim_journal_apply(mt5sim_ledger_t *l, json_t *rec, char *err)
{
    const char  *op = json_string_value(json_object_get(rec, "op"));
    json_t      *data = json_object_get(rec, "data");
    int          rc;

    if (op == NULL) {
        mt5sim_err(err, "record without \"op\"");
        return -1;
    }
    if (strcmp(op, "deal") == 0) {
        pthread_mutex_lock(&l->lock);
        rc = mt5sim_ledger_replay_deal(l, rec, err);
        pthread_mutex_unlock(&l->lock);
        return rc;
    }
    if (strcmp(op, "account") == 0) {
        return mt5sim_ledger_put_account(l, data, err);
    }
    if (strcmp(op, "group") == 0) {
        return mt5sim_ledger_put_group(l, data, err);
    }
    if (strcmp(op, "manager") == 0) {
        return mt5sim_ledger_put_manager(l, data, err);
    }
    if (strcmp(op, "time") == 0) {
        return mt5sim_ledger_set_offset(l, (int) json_integer_value(
            json_object_get(data, "offset_minutes")), err);
    }
    mt5sim_err(err, "unknown op \"%s\"", op);
    return -1;
}


/* *good: the end of the last complete line */
static int
mt5sim_journal_replay(mt5sim_ledger_t *l, int fd, const char *path,
    off_t *good, char *err)
{
    char          *line = NULL, sub[MT5SIM_ERR_MAX];
    size_t         cap = 0;
    ssize_t        len;
    unsigned long  lineno = 0;
    json_error_t   jerr;
    json_t        *rec;
    FILE          *f;
    int            dupfd, rc = 0;

    *good = 0;
    dupfd = dup(fd);
    if (dupfd < 0 || (f = fdopen(dupfd, "r")) == NULL) {
        mt5sim_err(err, "%.120s: %s", path, strerror(errno));
        if (dupfd >= 0) {
            close(dupfd);
        }
        return -1;
    }
    while ((len = getline(&line, &cap, f)) > 0) {
        lineno++;
        if (line[len - 1] != '\n') {
            break;              /* torn: the caller cuts it off */
        }
        rec = json_loadb(line, (size_t) len, 0, &jerr);
        if (rec == NULL) {
            mt5sim_err(err, "%.120s:%lu: %.100s", path, lineno, jerr.text);
            rc = -1;
            break;
        }
        if (mt5sim_journal_apply(l, rec, sub) != 0) {
            mt5sim_err(err, "%.120s:%lu: %.100s", path, lineno, sub);
            json_decref(rec);
            rc = -1;
            break;
        }
        json_decref(rec);
        *good += len;
    }
    free(line);
    fclose(f);
    return rc;
}


static int
mt5sim_sync_dir(const char *dir)
{
    int  fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int  rc;

    if (fd < 0) {
        return -1;
    }
    rc = fsync(fd);
    close(fd);
    return rc;
}


int
mt5sim_journal_open(mt5sim_ledger_t *l, const char *dir, int durable,
    char *err)
{
    mt5sim_journal_t  *j = &l->journal;
    char               path[4096];
    struct stat        st;
    off_t              good;
    int                fd, created;

    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        mt5sim_err(err, "mkdir %.120s: %s", dir, strerror(errno));
        return -1;
    }

    snprintf(path, sizeof(path), "%s/lock", dir);
    j->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (j->lock_fd < 0) {
        mt5sim_err(err, "%.120s: %s", path, strerror(errno));
        return -1;
    }
    if (flock(j->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        mt5sim_err(err, "state dir %.120s is in use by another mt5sim", dir);
        return -1;
    }

    snprintf(path, sizeof(path), "%s/journal.jsonl", dir);
    created = stat(path, &st) != 0;
    fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) {
        mt5sim_err(err, "%.120s: %s", path, strerror(errno));
        return -1;
    }

    l->replaying = 1;
    if (mt5sim_journal_replay(l, fd, path, &good, err) != 0) {
        l->replaying = 0;
        close(fd);
        return -1;
    }
    l->replaying = 0;

    if (fstat(fd, &st) == 0 && st.st_size > good) {
        fprintf(stderr, "mt5sim: %s: cutting a torn last record "
                "(%lld bytes)\n", path, (long long) (st.st_size - good));
        if (ftruncate(fd, good) != 0 || fsync(fd) != 0) {
            mt5sim_err(err, "%.120s: truncate: %s", path, strerror(errno));
            close(fd);
            return -1;
        }
    }
    if (created && mt5sim_sync_dir(dir) != 0) {
        mt5sim_err(err, "fsync %.120s: %s", dir, strerror(errno));
        close(fd);
        return -1;
    }

    j->fd = fd;
    j->fsync = durable;
    j->size = good;
    return 0;
}


void
mt5sim_journal_close(mt5sim_journal_t *j)
{
    if (j->fd >= 0) {
        if (j->fsync) {
            (void) fdatasync(j->fd);
        }
        close(j->fd);
        j->fd = -1;
    }
    if (j->lock_fd >= 0) {
        close(j->lock_fd);
        j->lock_fd = -1;
    }
}


/* one line, whole or not at all; the ledger lock is held */
int
mt5sim_journal_append(mt5sim_journal_t *j, json_t *record, uint64_t *seq,
    char *err)
{
    char     *text, *line;
    size_t    len, done = 0;
    ssize_t   n;

    text = json_dumps(record, JSON_COMPACT);
    if (text == NULL) {
        mt5sim_err(err, "journal: cannot encode a record");
        return -1;
    }
    len = strlen(text);
    line = realloc(text, len + 2);
    if (line == NULL) {
        free(text);
        mt5sim_err(err, "journal: out of memory");
        return -1;
    }
    text = line;
    text[len++] = '\n';

    while (done < len) {
        n = write(j->fd, text + done, len - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            mt5sim_err(err, "journal write: %s",
                       n < 0 ? strerror(errno) : "short write");
            /* no half record may stay behind a later good one */
            if (ftruncate(j->fd, j->size) != 0) {
                fprintf(stderr, "mt5sim: journal truncate: %s\n",
                        strerror(errno));
            }
            free(text);
            return -1;
        }
        done += (size_t) n;
    }
    free(text);
    j->size += (off_t) len;
    *seq = __atomic_add_fetch(&j->written, 1, __ATOMIC_RELEASE);
    return 0;
}


int
mt5sim_journal_sync(mt5sim_journal_t *j, uint64_t seq, char *err)
{
    uint64_t  upto;
    int       rc = 0;

    if (!j->fsync) {
        return 0;
    }
    pthread_mutex_lock(&j->sync_lock);
    if (j->synced < seq) {
        upto = __atomic_load_n(&j->written, __ATOMIC_ACQUIRE);
        if (fdatasync(j->fd) != 0) {
            mt5sim_err(err, "journal fdatasync: %s", strerror(errno));
            rc = -1;
        } else {
            j->synced = upto;
        }
    }
    pthread_mutex_unlock(&j->sync_lock);
    return rc;
}


/* a control-port change, durable before it is applied; lock held */
int
mt5sim_journal_record(mt5sim_ledger_t *l, const char *op, json_t *data,
    char *err)
{
    json_t    *rec;
    uint64_t   seq;
    int        rc;

    if (l->journal.fd < 0 || l->replaying) {
        return 0;
    }
    rec = json_pack("{s:s,s:O}", "op", op, "data", data);
    if (rec == NULL) {
        mt5sim_err(err, "journal: cannot build a record");
        return -1;
    }
    rc = mt5sim_journal_append(&l->journal, rec, &seq, err);
    json_decref(rec);
    if (rc == 0) {
        rc = mt5sim_journal_sync(&l->journal, seq, err);
    }
    return rc;
}
