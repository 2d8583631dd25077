/*
 * Copyright (C) mt5-credit
 */


#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc_exposition.h"
#include "mc_log.h"
#include "mc_textfile.h"


int
mc_exposition_open(mc_exposition_t *x, const mc_config_t *cfg,
    const char *program, const char *listen, char *err, size_t errlen)
{
    memset(x, 0, sizeof(*x));

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
    char   tmp[1100];
    FILE  *f;

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


void
mc_exposition_close(mc_exposition_t *x)
{
    mc_exporter_stop(x->http);
    x->http = NULL;
}
