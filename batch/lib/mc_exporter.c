/*
 * Copyright (C) mt5-credit
 */


#define _GNU_SOURCE     /* accept4, pipe2 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mc_clock.h"
#include "mc_exporter.h"
#include "mc_log.h"


/* one connection, request and answer together */
#define MC_EXPORTER_DEADLINE  5000      /* ms */
#define MC_EXPORTER_HEAD_MAX  4096


struct mc_exporter_s {
    int               fd;               /* listening */
    int               wake[2];          /* stop: a byte on wake[1] */
    pthread_t         tid;
    pthread_mutex_t   lock;
    char             *text;             /* the last published; NULL: none */
    size_t            len;
    char              listen[80];
};


static int mc_exporter_parse(const char *addr, struct sockaddr_storage *sa,
    socklen_t *salen, char *err, size_t errlen);
static void *mc_exporter_thread(void *arg);
static void mc_exporter_serve(mc_exporter_t *x, int fd);
static int mc_exporter_read_head(int fd, char *buf, size_t size,
    int64_t deadline);
static void mc_exporter_answer(int fd, int64_t deadline, const char *status,
    const char *extra, const char *body, size_t len, int head);
static int mc_exporter_send(int fd, const char *p, size_t n,
    int64_t deadline);


int
mc_exporter_check(const char *addr, char *err, size_t errlen)
{
    socklen_t                salen;
    struct sockaddr_storage  sa;

    return mc_exporter_parse(addr, &sa, &salen, err, errlen);
}


static int
mc_exporter_parse(const char *addr, struct sockaddr_storage *sa,
    socklen_t *salen, char *err, size_t errlen)
{
    char                 host[64], *end;
    long                 port;
    size_t               n;
    const char          *colon;
    struct sockaddr_in  *in4;
    struct sockaddr_in6 *in6;

    memset(sa, 0, sizeof(*sa));

    if (addr[0] == '[') {
        end = strchr(addr, ']');
        if (end == NULL || end[1] != ':') {
            snprintf(err, errlen, "\"%s\": expected [::1]:<port>", addr);
            return -1;
        }
        n = (size_t) (end - addr - 1);
        colon = end + 1;
        addr++;

    } else {
        colon = strrchr(addr, ':');
        if (colon == NULL) {
            snprintf(err, errlen, "\"%s\": expected <address>:<port>, "
                     "like 127.0.0.1:9464", addr);
            return -1;
        }
        n = (size_t) (colon - addr);
    }

    if (n == 0 || n >= sizeof(host)) {
        snprintf(err, errlen, "\"%s\": no address", addr);
        return -1;
    }
    memcpy(host, addr, n);
    host[n] = '\0';

    errno = 0;
    port = strtol(colon + 1, &end, 10);
    if (errno || end == colon + 1 || *end != '\0' || port < 1
        || port > 65535)
    {
        snprintf(err, errlen, "\"%s\": the port must be 1 to 65535",
                 colon + 1);
        return -1;
    }

    in4 = (struct sockaddr_in *) sa;
    in6 = (struct sockaddr_in6 *) sa;

    if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
        if ((ntohl(in4->sin_addr.s_addr) >> 24) != 127) {
            snprintf(err, errlen, "%s is not a loopback address (127.0.0.0/8 "
                     "or ::1): metrics are served to this host only", host);
            return -1;
        }
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t) port);
        *salen = sizeof(*in4);
        return 0;
    }

    if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
        if (!IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) {
            snprintf(err, errlen, "%s is not a loopback address (127.0.0.0/8 "
                     "or ::1): metrics are served to this host only", host);
            return -1;
        }
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t) port);
        *salen = sizeof(*in6);
        return 0;
    }

    /* a name would need a lookup, and could resolve off the host */
    snprintf(err, errlen, "\"%s\" is not an IP address (a loopback one, "
             "like 127.0.0.1)", host);
    return -1;
}


mc_exporter_t *
mc_exporter_start(const char *addr, char *err, size_t errlen)
{
    int                      on, rc;
    sigset_t                 all, old;
    socklen_t                salen;
    mc_exporter_t           *x;
    struct sockaddr_storage  sa;

    if (mc_exporter_parse(addr, &sa, &salen, err, errlen) != 0) {
        return NULL;
    }

    x = calloc(1, sizeof(*x));
    if (x == NULL) {
        snprintf(err, errlen, "%s", strerror(errno));
        return NULL;
    }

    x->wake[0] = x->wake[1] = -1;
    snprintf(x->listen, sizeof(x->listen), "%s", addr);

    /* close-on-exec: alert_command's children must not hold the port */
    x->fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (x->fd == -1) {
        snprintf(err, errlen, "%s: socket: %s", addr, strerror(errno));
        free(x);
        return NULL;
    }

    on = 1;
    (void) setsockopt(x->fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));

    if (bind(x->fd, (struct sockaddr *) &sa, salen) != 0
        || listen(x->fd, 16) != 0)
    {
        snprintf(err, errlen, "%s: %s", x->listen, strerror(errno));
        close(x->fd);
        free(x);
        return NULL;
    }

    if (pipe2(x->wake, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "%s: pipe: %s", x->listen, strerror(errno));
        close(x->fd);
        free(x);
        return NULL;
    }

    pthread_mutex_init(&x->lock, NULL);

    /* the program's signals (TERM: finish and stop) go to its own thread,
       whose waits they must interrupt: this one blocks them all */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    rc = pthread_create(&x->tid, NULL, mc_exporter_thread, x);
    pthread_sigmask(SIG_SETMASK, &old, NULL);

    if (rc != 0) {
        snprintf(err, errlen, "%s: thread: %s", x->listen, strerror(rc));
        close(x->fd);
        close(x->wake[0]);
        close(x->wake[1]);
        pthread_mutex_destroy(&x->lock);
        free(x);
        return NULL;
    }

    mc_log(MC_LOG_INFO, "metrics served on http://%s/metrics", x->listen);

    return x;
}


void
mc_exporter_publish(mc_exporter_t *x, const char *text, size_t len)
{
    char  *copy;

    copy = malloc(len + 1);
    if (copy == NULL) {
        return;                     /* the last one stays */
    }
    memcpy(copy, text, len);
    copy[len] = '\0';

    pthread_mutex_lock(&x->lock);
    free(x->text);
    x->text = copy;
    x->len = len;
    pthread_mutex_unlock(&x->lock);
}


void
mc_exporter_stop(mc_exporter_t *x)
{
    ssize_t  n;

    if (x == NULL) {
        return;
    }

    do {
        n = write(x->wake[1], "", 1);
    } while (n == -1 && errno == EINTR);

    pthread_join(x->tid, NULL);

    close(x->fd);
    close(x->wake[0]);
    close(x->wake[1]);
    pthread_mutex_destroy(&x->lock);
    free(x->text);
    free(x);
}


static void *
mc_exporter_thread(void *arg)
{
    int             fd;
    mc_exporter_t  *x = arg;
    struct pollfd   p[2];

    for ( ;; ) {
        p[0].fd = x->fd;
        p[0].events = POLLIN;
        p[1].fd = x->wake[0];
        p[1].events = POLLIN;

        if (poll(p, 2, -1) == -1) {
            if (errno == EINTR) {
                continue;
            }
            mc_log(MC_LOG_ERROR, "metrics: %s: poll: %s", x->listen,
                   strerror(errno));
            return NULL;
        }

        if (p[1].revents) {
            return NULL;
        }

        if (!(p[0].revents & POLLIN)) {
            continue;
        }

        fd = accept4(x->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd == -1) {
            if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) {
                mc_log(MC_LOG_WARN, "metrics: %s: accept: %s", x->listen,
                       strerror(errno));
                /* out of descriptors: do not spin on it */
                usleep(100000);
            }
            continue;
        }

        mc_exporter_serve(x, fd);
        close(fd);
    }
}


static void
mc_exporter_serve(mc_exporter_t *x, int fd)
{
    int       head, n;
    char      req[MC_EXPORTER_HEAD_MAX], *path, *sp, *text;
    size_t    len;
    int64_t   deadline;

    deadline = mc_now_ms() + MC_EXPORTER_DEADLINE;

    n = mc_exporter_read_head(fd, req, sizeof(req), deadline);
    if (n == 0) {
        return;                     /* gone, or too slow: nothing to say */
    }

    if (n < 0) {
        mc_exporter_answer(fd, deadline, "400 Bad Request", NULL,
                           "a request head, at most 4 KiB\n", 30, 0);
        return;
    }

    /* "GET /metrics HTTP/1.1" */
    sp = strchr(req, ' ');
    if (sp == NULL) {
        mc_exporter_answer(fd, deadline, "400 Bad Request", NULL,
                           "no request line\n", 16, 0);
        return;
    }
    *sp = '\0';
    path = sp + 1;
    sp = strchr(path, ' ');
    if (sp != NULL) {
        *sp = '\0';
    }
    sp = strchr(path, '?');
    if (sp != NULL) {
        *sp = '\0';                 /* Prometheus may add parameters */
    }

    head = strcmp(req, "HEAD") == 0;

    if (!head && strcmp(req, "GET") != 0) {
        mc_exporter_answer(fd, deadline, "405 Method Not Allowed",
                           "Allow: GET, HEAD\r\n", "GET or HEAD\n", 12, 0);
        return;
    }

    if (strcmp(path, "/metrics") != 0) {
        mc_exporter_answer(fd, deadline, "404 Not Found", NULL,
                           "the metrics are at /metrics\n", 28, head);
        return;
    }

    /* a copy, so the program can publish while this one is sent */
    pthread_mutex_lock(&x->lock);
    len = x->len;
    text = x->text != NULL ? malloc(len + 1) : NULL;
    if (text != NULL) {
        memcpy(text, x->text, len);
    }
    pthread_mutex_unlock(&x->lock);

    if (text == NULL) {
        mc_exporter_answer(fd, deadline, "503 Service Unavailable",
                           "Retry-After: 5\r\n",
                           "no round has ended yet\n", 23, head);
        return;
    }

    mc_exporter_answer(fd, deadline, "200 OK", NULL, text, len, head);
    free(text);
}


/* the head read into buf, NUL-ended: its length; 0: closed or out of
   time; -1: past size, or not text */
static int
mc_exporter_read_head(int fd, char *buf, size_t size, int64_t deadline)
{
    int            wait;
    size_t         got;
    ssize_t        n;
    struct pollfd  p;

    got = 0;

    for ( ;; ) {
        wait = (int) (deadline - mc_now_ms());
        if (wait <= 0) {
            return 0;
        }

        p.fd = fd;
        p.events = POLLIN;

        n = poll(&p, 1, wait);
        if (n == -1 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return 0;
        }

        n = recv(fd, buf + got, size - 1 - got, 0);
        if (n == -1 && (errno == EINTR || errno == EAGAIN)) {
            continue;
        }
        if (n <= 0) {
            return 0;
        }

        if (memchr(buf + got, '\0', (size_t) n) != NULL) {
            return -1;
        }

        got += (size_t) n;
        buf[got] = '\0';

        if (strstr(buf, "\r\n\r\n") != NULL || strstr(buf, "\n\n") != NULL) {
            return (int) got;
        }

        if (got == size - 1) {
            return -1;
        }
    }
}


static void
mc_exporter_answer(int fd, int64_t deadline, const char *status,
    const char *extra, const char *body, size_t len, int head)
{
    int   n;
    char  hdr[512];

    n = snprintf(hdr, sizeof(hdr),
                 "HTTP/1.1 %s\r\n"
                 "Content-Type: %s\r\n"
                 "Content-Length: %zu\r\n"
                 "%s"
                 "Connection: close\r\n"
                 "\r\n",
                 status,
                 strncmp(status, "200", 3) == 0
                     ? "text/plain; version=0.0.4; charset=utf-8"
                     : "text/plain; charset=utf-8",
                 len, extra != NULL ? extra : "");

    if (mc_exporter_send(fd, hdr, (size_t) n, deadline) == 0 && !head) {
        (void) mc_exporter_send(fd, body, len, deadline);
    }
}


static int
mc_exporter_send(int fd, const char *p, size_t n, int64_t deadline)
{
    int            wait, rc;
    ssize_t        sent;
    struct pollfd  pf;

    while (n > 0) {
        /* no SIGPIPE for a scraper that went away */
        sent = send(fd, p, n, MSG_NOSIGNAL);

        if (sent > 0) {
            p += sent;
            n -= (size_t) sent;
            continue;
        }

        if (sent == -1 && errno != EAGAIN && errno != EINTR) {
            return -1;
        }

        wait = (int) (deadline - mc_now_ms());
        if (wait <= 0) {
            return -1;
        }

        pf.fd = fd;
        pf.events = POLLOUT;
        rc = poll(&pf, 1, wait);
        if (rc == 0 || (rc == -1 && errno != EINTR)) {
            return -1;
        }
    }

    return 0;
}


