/*
 * Copyright (C) mt5-credit
 *
 * A program's metrics, served (metrics_listen) and written for
 * node-exporter (metrics_dir).  Every sample carries worker="<name>":
 * two workers of one host write two textfiles, and node-exporter would
 * refuse the same series twice.  Each program's last round is a stamp
 * of its own (mt5credit_worker_last_round_timestamp_seconds,
 * mt5credit_program_last_round_timestamp_seconds): stale, not quiet.
 *
 * A textfile lives as long as its process.  The default name is
 * host:pid, so every restart (an upgrade restarts every worker) would
 * leave the last process's file behind, its stamp frozen: node-exporter
 * would serve it forever and the staleness alert would page for a
 * process that stopped as it should.  A default-named process removes
 * its file when it stops cleanly, and a start removes the files of this
 * host's default-named processes of the same program that are gone
 * (killed, crashed).  A name given in the configuration comes back: its
 * file stays, and a stopped worker of that name is stale until it does.
 */


#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mc_exposition.h"
#include "mc_log.h"
#include "mc_textfile.h"


static char *mc_exposition_label(const char *text, size_t len,
    const char *worker, size_t *outlen);
static void mc_exposition_prune(const char *dir, const char *program);
static int mc_exposition_default_name(const char *name);


int
mc_exposition_open(mc_exposition_t *x, const mc_config_t *cfg,
    const char *program, const char *listen, char *err, size_t errlen)
{
    const char  *p;
    size_t       n;

    memset(x, 0, sizeof(*x));

    /* the label value, with \ and " escaped as the text format wants */
    n = 0;
    for (p = cfg->worker_name; *p && n + 3 < sizeof(x->worker); p++) {
        if (*p == '\\' || *p == '"') {
            x->worker[n++] = '\\';
        }
        x->worker[n++] = *p == '\n' ? ' ' : *p;
    }
    x->worker[n] = '\0';

    if (cfg->metrics_dir[0] != '\0') {
        mc_textfile_path(x->path, sizeof(x->path), cfg->metrics_dir,
                         program, cfg->worker_name);
        mc_exposition_prune(cfg->metrics_dir, program);
        x->transient = mc_exposition_default_name(cfg->worker_name);
    }

    if (listen[0] != '\0') {
        x->http = mc_exporter_start(listen, err, errlen);
        if (x->http == NULL) {
            return -1;
        }
    }

    return 0;
}


int
mc_exposition_wanted(const mc_exposition_t *x)
{
    return x->path[0] != '\0' || x->http != NULL;
}


FILE *
mc_exposition_begin(mc_exposition_t *x)
{
    x->buf = NULL;
    x->len = 0;
    x->f = open_memstream(&x->buf, &x->len);

    if (x->f == NULL) {
        mc_log(MC_LOG_WARN, "metrics: %s", strerror(errno));
    }

    return x->f;
}


void
mc_exposition_end(mc_exposition_t *x)
{
    char    tmp[1100], *labelled;
    FILE   *f;
    size_t  len;

    if (x->f == NULL) {
        return;
    }

    if (fclose(x->f) != 0) {
        mc_log(MC_LOG_WARN, "metrics: %s", strerror(errno));
        x->f = NULL;
        free(x->buf);
        x->buf = NULL;
        return;
    }
    x->f = NULL;

    labelled = mc_exposition_label(x->buf, x->len, x->worker, &len);
    if (labelled == NULL) {
        mc_log(MC_LOG_WARN, "metrics: out of memory");
        free(x->buf);
        x->buf = NULL;
        return;
    }

    free(x->buf);
    x->buf = labelled;
    x->len = len;

    if (x->http != NULL) {
        mc_exporter_publish(x->http, x->buf, x->len);
    }

    if (x->path[0] != '\0') {
        f = mc_textfile_open(x->path, tmp, sizeof(tmp));

        /* a short write is the error commit reports: then the temporary
           file is removed, and the last good one stays */
        if (f != NULL) {
            (void) fwrite(x->buf, 1, x->len, f);
        }

        if (f == NULL || mc_textfile_commit(f, tmp, x->path) != 0) {
            mc_log(MC_LOG_WARN, "metrics: %s: %s", x->path, strerror(errno));
        }
    }

    free(x->buf);
    x->buf = NULL;
}


/*
 * Each sample line of text with worker="<value>" as its first label:
 * "name{a="b"} 1" -> "name{worker="w",a="b"} 1", "name 1" ->
 * "name{worker="w"} 1"; comments as they are.  malloc'ed, NULL when out
 * of memory.
 */
static char *
mc_exposition_label(const char *text, size_t len, const char *worker,
    size_t *outlen)
{
    char        *out, *w;
    size_t       wlen, lines, i, k;
    const char  *p, *end, *nl;

    wlen = strlen(worker);

    lines = 1;
    for (i = 0; i < len; i++) {
        lines += text[i] == '\n';
    }

    out = malloc(len + lines * (wlen + 16) + 1);
    if (out == NULL) {
        return NULL;
    }

    w = out;

    for (p = text, end = text + len; p < end; p = nl + 1) {
        nl = memchr(p, '\n', (size_t) (end - p));
        if (nl == NULL) {
            nl = end;
        }

        if (p == nl || *p == '#') {
            memcpy(w, p, (size_t) (nl - p));
            w += nl - p;

        } else {
            /* the metric's name ends at "{" or " " */
            for (k = 0; p + k < nl && p[k] != '{' && p[k] != ' '; k++) {
                /* void */
            }

            memcpy(w, p, k);
            w += k;
            w += sprintf(w, "{worker=\"%s\"", worker);

            if (p + k < nl && p[k] == '{') {
                k++;
                if (p + k < nl && p[k] != '}') {
                    *w++ = ',';
                }
            } else {
                *w++ = '}';
            }

            memcpy(w, p + k, (size_t) (nl - p - k));
            w += nl - p - k;
        }

        if (nl < end) {
            *w++ = '\n';
        }
    }

    *w = '\0';
    *outlen = (size_t) (w - out);

    return out;
}


void
mc_exposition_close(mc_exposition_t *x)
{
    mc_exporter_stop(x->http);
    x->http = NULL;

    /* host:pid stopped: no process will ever write that file again */
    if (x->transient && x->path[0] != '\0' && unlink(x->path) != 0
        && errno != ENOENT)
    {
        mc_log(MC_LOG_WARN, "metrics: %s: %s", x->path, strerror(errno));
    }
    x->path[0] = '\0';
}


/* whether name is this process's default, host:pid (mc_config.c) */
static int
mc_exposition_default_name(const char *name)
{
    char  host[64], dflt[128];

    if (gethostname(host, sizeof(host)) != 0) {
        strcpy(host, "worker");
    }
    host[sizeof(host) - 1] = '\0';
    snprintf(dflt, sizeof(dflt), "%s:%d", host, (int) getpid());

    return strcmp(name, dflt) == 0;
}


/*
 * Removes "mt5credit-<program>-<host>_<pid>.prom" of this host whose
 * process is gone: the file of a default-named process (host:pid,
 * mc_config.c) that did not stop cleanly.
 */
static void
mc_exposition_prune(const char *dir, const char *program)
{
    DIR            *d;
    long            pid;
    char            host[128], prefix[1024], path[1024], *end;
    size_t          plen;
    struct dirent  *e;

    if (gethostname(host, sizeof(host)) != 0) {
        strcpy(host, "worker");
    }
    host[sizeof(host) - 1] = '\0';

    /* the name of host:0 less "0.prom": the host's default prefix */
    mc_textfile_path(prefix, sizeof(prefix), "", program, host);
    plen = strlen(prefix) - strlen(".prom");
    prefix[plen] = '\0';
    if (plen + 1 >= sizeof(prefix)) {
        return;
    }
    prefix[plen++] = '_';
    prefix[plen] = '\0';

    d = opendir(dir);
    if (d == NULL) {
        return;
    }

    while ((e = readdir(d)) != NULL) {
        /* prefix starts with "/": the name as mc_textfile_path made it */
        if (strncmp(e->d_name, prefix + 1, plen - 1) != 0) {
            continue;
        }

        errno = 0;
        pid = strtol(e->d_name + plen - 1, &end, 10);
        if (errno != 0 || pid <= 1 || end == e->d_name + plen - 1
            || strcmp(end, ".prom") != 0 || pid == (long) getpid())
        {
            continue;
        }

        if (kill((pid_t) pid, 0) == 0 || errno != ESRCH) {
            continue;
        }

        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (unlink(path) == 0) {
            mc_log(MC_LOG_INFO, "metrics: %s removed: its process %ld is "
                   "gone", path, pid);
        }
    }

    (void) closedir(d);
}
