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
static int             mc_log_json;

/* the words a line names its subject with, as fields of its object */
static const char  *mc_log_fields[] = {
    "credit", "ref", "server", "login", "payout", NULL
};

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
mc_log_set_json(int json)
{
    mc_log_json = json;
}


static size_t mc_log_json_line(char *out, size_t size, const char *ts,
    long ms, mc_log_level_e level, const char *msg);
static size_t mc_log_json_str(char *out, size_t size, const char *s,
    size_t len);


void
mc_log(mc_log_level_e level, const char *fmt, ...)
{
    char            line[8192], msg[4096], ts[32];
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

    if (mc_log_json) {
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);

        n = mc_log_json_line(line, sizeof(line) - 1, ts,
                             (long) (tv.tv_usec / 1000), level, msg);

    } else {
        n = (size_t) snprintf(line, sizeof(line), "%s.%03ldZ %s[%d] %s ",
                              ts, (long) (tv.tv_usec / 1000), mc_log_name,
                              (int) getpid(), mc_log_names[level]);

        va_start(ap, fmt);
        vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
        va_end(ap);

        n = strlen(line);
    }

    /* one write per line: lines of several processes never interleave */
    line[n++] = '\n';

    if (write(STDERR_FILENO, line, n) < 0) {
        /* nowhere left to report it */
    }
}


/*
 * {"time":..,"program":..,"pid":..,"level":..,"msg":..,<fields>}: the
 * message as the text format has it, and each "credit=12 ref=dep:12
 * server=live1 login=70001 payout=wd_3" word in it as a field of its
 * own, so a log search needs no parsing.  Bounded by size; a line cut
 * short still ends as an object.
 */
static size_t
mc_log_json_line(char *out, size_t size, const char *ts, long ms,
    mc_log_level_e level, const char *msg)
{
    int          i;
    size_t       n, klen, vlen;
    const char  *p, *v, *end;
    char         lower[8];

    for (i = 0; i < 5 && mc_log_names[level][i]; i++) {
        lower[i] = (char) (mc_log_names[level][i] | 0x20);
    }
    lower[i] = '\0';

    n = (size_t) snprintf(out, size, "{\"time\":\"%s.%03ldZ\",\"program\":",
                          ts, ms);
    n += mc_log_json_str(out + n, size - n, mc_log_name, strlen(mc_log_name));
    n += (size_t) snprintf(out + n, size - n, ",\"pid\":%d,\"level\":\"%s\","
                           "\"msg\":", (int) getpid(), lower);
    n += mc_log_json_str(out + n, size - n, msg, strlen(msg));

    for (i = 0; mc_log_fields[i] != NULL && n + 64 < size; i++) {
        klen = strlen(mc_log_fields[i]);

        for (p = msg; (p = strstr(p, mc_log_fields[i])) != NULL; p += klen) {
            if ((p == msg || p[-1] == ' ') && p[klen] == '=') {
                break;
            }
        }
        if (p == NULL) {
            continue;
        }

        v = p + klen + 1;
        for (end = v; *end && *end != ' ' && *end != ',' && *end != ';';
             end++)
        {
            /* void */
        }
        vlen = (size_t) (end - v);
        if (vlen > 0 && v[vlen - 1] == ':') {
            vlen--;                     /* "ref=dep:12: deal ..." */
        }
        if (vlen == 0) {
            continue;
        }

        n += (size_t) snprintf(out + n, size - n, ",\"%s\":",
                               mc_log_fields[i]);
        n += mc_log_json_str(out + n, size - n, v, vlen);
    }

    if (n + 2 > size) {
        n = size - 2;
    }
    out[n++] = '}';
    out[n] = '\0';
    return n;
}


/* a JSON string of s[0..len), escaped; what fits in size */
static size_t
mc_log_json_str(char *out, size_t size, const char *s, size_t len)
{
    size_t          i, j, k, n;
    unsigned char   c;

    if (size < 8) {
        return 0;
    }

    n = 0;
    out[n++] = '"';

    for (i = 0; i < len && n + 8 < size; i++) {
        c = (unsigned char) s[i];

        if (c == '"' || c == '\\') {
            out[n++] = '\\';
            out[n++] = (char) c;

        } else if (c < 0x20 || c == 0x7f) {
            n += (size_t) snprintf(out + n, size - n, "\\u%04x", c);

        } else if (c < 0x80) {
            out[n++] = (char) c;

        } else {
            /* well-formed UTF-8 passes as it is, any other byte is "?":
               the line must stay JSON whatever a peer sent */
            k = c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2
                : c >= 0xf0 && c <= 0xf4 ? 3 : 0;
            for (j = 1; k && j <= k; j++) {
                if (i + j >= len
                    || ((unsigned char) s[i + j] & 0xc0) != 0x80)
                {
                    k = 0;
                }
            }
            if (k == 0) {
                out[n++] = '?';
                continue;
            }
            memcpy(out + n, s + i, k + 1);
            n += k + 1;
            i += k;
        }
    }

    out[n++] = '"';
    out[n] = '\0';
    return n;
}
