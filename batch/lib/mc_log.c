/*
 * Copyright (C) mt5-credit
 */


#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "mc_log.h"


/*
 * The process's log settings.  Set once at start-up, read everywhere: the
 * one piece of global state here, like a logger in any daemon.
 */
static mc_log_level_e  mc_log_level = MC_LOG_INFO;
static char            mc_log_name[64] = "mt5credit";

static const char  *mc_log_names[] = {
    "DEBUG", "INFO", "WARN", "ERROR", "ALERT"
};


void
mc_log_set_level(mc_log_level_e level)
{
    mc_log_level = level;
}


int
mc_log_parse_level(const char *name, mc_log_level_e *level)
{
    int  i;

    for (i = 0; i <= MC_LOG_ALERT; i++) {
        if (strcasecmp(name, mc_log_names[i]) == 0) {
            *level = (mc_log_level_e) i;
            return 0;
        }
    }

    return -1;
}


void
mc_log_set_name(const char *name)
{
    snprintf(mc_log_name, sizeof(mc_log_name), "%s", name);
}


void
mc_log(mc_log_level_e level, const char *fmt, ...)
{
    char            line[4096], ts[32];
    size_t          n;
    va_list         ap;
    struct tm       tm;
    struct timeval  tv;

    if (level < mc_log_level) {
        return;
    }

    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);

    n = (size_t) snprintf(line, sizeof(line), "%s.%03ldZ %s[%d] %s ", ts,
                          (long) (tv.tv_usec / 1000), mc_log_name,
                          (int) getpid(), mc_log_names[level]);

    va_start(ap, fmt);
    vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
    va_end(ap);

    /* one write per line: lines of several processes never interleave */
    n = strlen(line);
    line[n++] = '\n';

    if (write(STDERR_FILENO, line, n) < 0) {
        /* nowhere left to report it */
    }
}
