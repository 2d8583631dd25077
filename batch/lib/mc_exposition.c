/*
 * Copyright (C) mt5-credit
 *
 * A program's metrics, served (metrics_listen) and written for
 * node-exporter (metrics_dir).  Every sample carries worker="<name>":
 * two workers of one host write two textfiles, and node-exporter would
 * refuse the same series twice.  Each program's last round is a stamp
 * of its own (mt5credit_worker_last_round_timestamp_seconds,
 * mt5credit_program_last_round_timestamp_seconds): stale, not quiet.
 */


#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc_exposition.h"
#include "mc_log.h"
#include "mc_textfile.h"


static char *mc_exposition_label(const char *text, size_t len,
    const char *worker, size_t *outlen);


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
}
