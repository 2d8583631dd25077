/*
 * Copyright (C) mt5-credit
 *
 * One event is one line, and one journal entry: a message's own line
 * breaks (libpq's errors carry two or three) become spaces.  Under
 * systemd (stderr is the journal stream JOURNAL_STREAM names) each line
 * starts with its syslog priority, "<3>" for an ERROR, so `journalctl -p
 * err` finds errors.  A WARN or ERROR that repeats the one just before
 * it is counted, not written again: the count goes out with the next
 * other line, or with the same line once a minute.
 */


#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "mc_clock.h"
#include "mc_log.h"


/* a repeated line is written again, with its count, at most this often */
#define MC_LOG_REPEAT_MS  60000


/*
 * The process's log settings.  Set once at start-up, read everywhere: the
 * one piece of global state here, like a logger in any daemon.
 */
static mc_log_level_e  mc_log_level = MC_LOG_INFO;
static char            mc_log_name[64] = "mt5credit";
static int             mc_log_json;
static int             mc_log_journal = -1;    /* -1: not yet known */

/* the last WARN or ERROR written, and how often it came again since */
static struct {
    mc_log_level_e  level;
    char            msg[1024];
    unsigned long   repeats;
    int64_t         written_ms;
} mc_log_last;

/* syslog priorities (sd-daemon(3)) by level */
static const int    mc_log_priorities[] = { 7, 6, 4, 3, 1 };

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


static int mc_log_journal_stream(void);
static void mc_log_write(mc_log_level_e level, const char *msg);
static void mc_log_flatten(char *msg);


void
mc_log(mc_log_level_e level, const char *fmt, ...)
{
    char      msg[4096], note[160];
    size_t    len;
    int64_t   now;
    va_list   ap;

    if (level < mc_log_level) {
        return;
    }

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);

    mc_log_flatten(msg);

    now = mc_now_ms();

    if (level >= MC_LOG_WARN && level < MC_LOG_ALERT
        && level == mc_log_last.level && mc_log_last.written_ms != 0
        && strncmp(msg, mc_log_last.msg, sizeof(mc_log_last.msg) - 1) == 0)
    {
        mc_log_last.repeats++;

        if (now - mc_log_last.written_ms < MC_LOG_REPEAT_MS) {
            return;
        }

        len = strlen(msg);
        if (len > sizeof(msg) - 64) {
            len = sizeof(msg) - 64;
        }

        snprintf(msg + len, sizeof(msg) - len, " (%lu times in %lds)",
                 mc_log_last.repeats,
                 (long) ((now - mc_log_last.written_ms) / 1000));
        mc_log_write(level, msg);
        mc_log_last.repeats = 0;
        mc_log_last.written_ms = now;
        return;
    }

    if (mc_log_last.repeats > 0) {
        snprintf(note, sizeof(note), "the %s before this one came %lu more "
                 "time%s", mc_log_last.level == MC_LOG_ERROR ? "error"
                                                            : "warning",
                 mc_log_last.repeats, mc_log_last.repeats == 1 ? "" : "s");
        mc_log_write(mc_log_last.level, note);
    }

    mc_log_write(level, msg);

    mc_log_last.repeats = 0;
    mc_log_last.written_ms = 0;

    if (level >= MC_LOG_WARN && level < MC_LOG_ALERT) {
        mc_log_last.level = level;
        snprintf(mc_log_last.msg, sizeof(mc_log_last.msg), "%s", msg);
        mc_log_last.written_ms = now;
    }
}


/* one line: the journal's priority, the text or JSON form, one write */
static void
mc_log_write(mc_log_level_e level, const char *msg)
{
    char            line[8192], ts[32];
    size_t          n;
    struct tm       tm;
    struct timeval  tv;

    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);

    n = 0;

    if (mc_log_journal_stream()) {
        n = (size_t) snprintf(line, sizeof(line), "<%d>",
                              mc_log_priorities[level]);
    }

    if (mc_log_json) {
        n += mc_log_json_line(line + n, sizeof(line) - n - 1, ts,
                              (long) (tv.tv_usec / 1000), level, msg);

    } else {
        n += (size_t) snprintf(line + n, sizeof(line) - n - 1,
                               "%s.%03ldZ %s[%d] %s %s", ts,
                               (long) (tv.tv_usec / 1000), mc_log_name,
                               (int) getpid(), mc_log_names[level], msg);
        if (n > sizeof(line) - 2) {
            n = sizeof(line) - 2;
        }
    }

    /* one write per line: lines of several processes never interleave */
    line[n++] = '\n';

    if (write(STDERR_FILENO, line, n) < 0) {
        /* nowhere left to report it */
    }
}


/* line breaks inside a message (libpq's DETAIL, HINT) become spaces */
static void
mc_log_flatten(char *msg)
{
    char  *r, *w;

    for (r = msg, w = msg; *r != '\0'; r++) {
        if (*r == '\n' || *r == '\r') {
            /* one space for a break and the indent after it */
            while (r[1] == '\t' || r[1] == ' ' || r[1] == '\n'
                   || r[1] == '\r')
            {
                r++;
            }

            if (r[1] != '\0' && w != msg && w[-1] != ' ') {
                *w++ = ' ';
            }
            continue;
        }

        *w++ = *r;
    }

    /* a trailing break leaves no trailing space */
    while (w != msg && w[-1] == ' ') {
        w--;
    }

    *w = '\0';
}


/*
 * stderr is the journal when JOURNAL_STREAM, set by systemd, names its
 * device and inode (a shell that inherited the variable and redirected
 * stderr is not: systemd.exec(5))
 */
static int
mc_log_journal_stream(void)
{
    const char          *v;
    unsigned long long   dev, ino;
    struct stat          st;

    if (mc_log_journal >= 0) {
        return mc_log_journal;
    }

    mc_log_journal = 0;

    v = getenv("JOURNAL_STREAM");
    if (v != NULL && sscanf(v, "%llu:%llu", &dev, &ino) == 2
        && fstat(STDERR_FILENO, &st) == 0
        && (unsigned long long) st.st_dev == dev
        && (unsigned long long) st.st_ino == ino)
    {
        mc_log_journal = 1;
    }

    return mc_log_journal;
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
