/*
 * Copyright (C) mt5-credit
 *
 * The two listeners, on libmicrohttpd:
 *   - the API port: HTTPS (or plain HTTP with --http), one thread per
 *     connection, one MT5 session per connection (the socket context);
 *     the session check, the faults that act on the transport (latency,
 *     drops, hangs, 403, garbage, a forced retcode) and the reply;
 *   - the control port: plain HTTP, one thread, JSON.
 * A handler thread may sleep or hang on purpose: each waits in short
 * steps and gives up when the server stops.
 */


#define _GNU_SOURCE             /* POLLRDHUP */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <microhttpd.h>

#include "mt5sim.h"


#define mt5sim_err(err, ...)  snprintf(err, MT5SIM_ERR_MAX, __VA_ARGS__)

#define MT5SIM_STEP_MS        20
#define MT5SIM_CONN_MEMORY    (256 * 1024)   /* long get_batch queries */
#define MT5SIM_CONN_LIMIT     1000


typedef struct {
    char      *uri;             /* the raw request target, query and all */
    char      *body;
    size_t     body_len;
    int        started;
    int        too_big;
} mt5sim_request_t;


static void mt5sim_sleep_ms(long ms);
static int mt5sim_wait(mt5sim_t *srv, long ms);
static int mt5sim_hang(mt5sim_t *srv, struct MHD_Connection *c,
    uint64_t generation);
static enum MHD_Result mt5sim_send(struct MHD_Connection *c,
    unsigned status, const char *type, const char *text, size_t len,
    int close);
static enum MHD_Result mt5sim_send_json(struct MHD_Connection *c,
    unsigned status, json_t *json, int close);
static enum MHD_Result mt5sim_forbidden(mt5sim_t *srv,
    struct MHD_Connection *c, mt5sim_session_t *s);
static enum MHD_Result mt5sim_send_reply(mt5sim_t *srv,
    struct MHD_Connection *c, mt5sim_session_t *s, mt5sim_reply_t *r);
static int mt5sim_body_append(mt5sim_request_t *rq, const char *data,
    size_t len);
static mt5sim_request_t *mt5sim_request_new(const char *uri);
static void *mt5sim_uri_log(void *cls, const char *uri,
    struct MHD_Connection *c);
static void mt5sim_completed(void *cls, struct MHD_Connection *c,
    void **con_cls, enum MHD_RequestTerminationCode toe);
static void mt5sim_connection(void *cls, struct MHD_Connection *c,
    void **socket_context, enum MHD_ConnectionNotificationCode toe);
static enum MHD_Result mt5sim_api_serve(mt5sim_t *srv,
    struct MHD_Connection *c, mt5sim_request_t *rq, const char *url,
    const char *method);
static enum MHD_Result mt5sim_api_access(void *cls,
    struct MHD_Connection *c, const char *url, const char *method,
    const char *version, const char *upload, size_t *upload_size,
    void **con_cls);
static enum MHD_Result mt5sim_control_access(void *cls,
    struct MHD_Connection *c, const char *url, const char *method,
    const char *version, const char *upload, size_t *upload_size,
    void **con_cls);


int
mt5sim_stopping(mt5sim_t *srv)
{
    return __atomic_load_n(&srv->stopping, __ATOMIC_ACQUIRE);
}


static void
mt5sim_sleep_ms(long ms)
{
    struct timespec  ts;

    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0) {
        /* EINTR: sleep the rest */
    }
}


/* 0 when slept the whole time, -1 when the server is stopping */
static int
mt5sim_wait(mt5sim_t *srv, long ms)
{
    int64_t  until = mt5sim_monotonic_ms() + ms, left;

    while ((left = until - mt5sim_monotonic_ms()) > 0) {
        if (mt5sim_stopping(srv)) {
            return -1;
        }
        mt5sim_sleep_ms(left < MT5SIM_STEP_MS ? left : MT5SIM_STEP_MS);
    }
    return 0;
}


/*
 * A hung request: no reply until the faults are cleared (returns 1, and
 * the request goes on) or the client goes away or the server stops
 * (returns 0: close without a word).
 */
static int
mt5sim_hang(mt5sim_t *srv, struct MHD_Connection *c, uint64_t generation)
{
    const union MHD_ConnectionInfo  *ci;
    struct pollfd                    pfd;
    uint64_t                         now;
    char                             byte;
    ssize_t                          n;
    int                              fd, rc = 0;

    /* copied at once: MHD reuses the union for the next info asked */
    ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    fd = ci ? ci->connect_fd : -1;
    mt5sim_stat_inc(&srv->stats.hanging);
    while (!mt5sim_stopping(srv)) {
        pthread_mutex_lock(&srv->lock);
        now = srv->faults.generation;
        pthread_mutex_unlock(&srv->lock);
        if (now != generation) {
            rc = 1;
            break;
        }
        if (fd < 0) {
            mt5sim_sleep_ms(MT5SIM_STEP_MS);
            continue;
        }
        pfd.fd = fd;
        pfd.events = POLLIN | POLLRDHUP;
        pfd.revents = 0;
        if (poll(&pfd, 1, MT5SIM_STEP_MS) <= 0) {
            continue;
        }
        if (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) {
            break;
        }
        /* bytes from a client that may have pipelined: still there */
        n = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0) {
            break;
        }
        mt5sim_sleep_ms(MT5SIM_STEP_MS);
    }
    mt5sim_stat_dec(&srv->stats.hanging);
    return rc;
}


/* copies `text` */
static enum MHD_Result
mt5sim_send(struct MHD_Connection *c, unsigned status, const char *type,
    const char *text, size_t len, int close)
{
    struct MHD_Response  *resp;
    enum MHD_Result       rc;

    resp = MHD_create_response_from_buffer(len, (void *) text,
                                           MHD_RESPMEM_MUST_COPY);
    if (resp == NULL) {
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (close) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    }
    rc = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return rc;
}


/* steals `json` */
static enum MHD_Result
mt5sim_send_json(struct MHD_Connection *c, unsigned status, json_t *json,
    int close)
{
    char             *text;
    enum MHD_Result   rc;

    text = json ? json_dumps(json, JSON_COMPACT) : NULL;
    json_decref(json);
    if (text == NULL) {
        return MHD_NO;
    }
    rc = mt5sim_send(c, status, "application/json", text, strlen(text),
                     close);
    free(text);
    return rc;
}


/* the lost-session answer (REPORTED): HTTP 403, "403 Forbidden" */
static enum MHD_Result
mt5sim_forbidden(mt5sim_t *srv, struct MHD_Connection *c,
    mt5sim_session_t *s)
{
    if (s->authed) {
        s->authed = 0;
        mt5sim_stat_dec(&srv->stats.sessions_authenticated);
    }
    s->started = 0;
    mt5sim_stat_inc(&srv->stats.http403);
    return mt5sim_send(c, (unsigned) srv->opt.forbidden_status,
                       "text/plain", srv->opt.forbidden_body,
                       strlen(srv->opt.forbidden_body), 0);
}


static enum MHD_Result
mt5sim_send_reply(mt5sim_t *srv, struct MHD_Connection *c,
    mt5sim_session_t *s, mt5sim_reply_t *r)
{
    static const char  not_found[] = "404 Not Found";

    switch (r->kind) {
    case MT5SIM_REPLY_FORBIDDEN:
        json_decref(r->json);
        return mt5sim_forbidden(srv, c, s);
    case MT5SIM_REPLY_NOT_FOUND:
        json_decref(r->json);
        return mt5sim_send(c, MHD_HTTP_NOT_FOUND, "text/plain", not_found,
                           sizeof(not_found) - 1, 0);
    default:
        return mt5sim_send_json(c, MHD_HTTP_OK, r->json, r->close);
    }
}


static int
mt5sim_body_append(mt5sim_request_t *rq, const char *data, size_t len)
{
    char  *v;

    if (rq->too_big || rq->body_len + len > MT5SIM_BODY_MAX) {
        rq->too_big = 1;
        return 0;
    }
    v = realloc(rq->body, rq->body_len + len + 1);
    if (v == NULL) {
        return -1;
    }
    memcpy(v + rq->body_len, data, len);
    rq->body = v;
    rq->body_len += len;
    rq->body[rq->body_len] = '\0';
    return 0;
}


static mt5sim_request_t *
mt5sim_request_new(const char *uri)
{
    mt5sim_request_t  *rq = calloc(1, sizeof(*rq));

    if (rq != NULL && (rq->uri = strdup(uri ? uri : "")) == NULL) {
        free(rq);
        return NULL;
    }
    return rq;
}


/* the one place MHD shows the query string as sent, undecoded */
static void *
mt5sim_uri_log(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void) cls;
    (void) c;
    return mt5sim_request_new(uri);
}


static void
mt5sim_completed(void *cls, struct MHD_Connection *c, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
    mt5sim_request_t  *rq = *con_cls;

    (void) cls;
    (void) c;
    (void) toe;
    if (rq != NULL) {
        free(rq->uri);
        free(rq->body);
        free(rq);
        *con_cls = NULL;
    }
}


/* one session per connection: born unauthenticated, dies with it */
static void
mt5sim_connection(void *cls, struct MHD_Connection *c,
    void **socket_context, enum MHD_ConnectionNotificationCode toe)
{
    mt5sim_t          *srv = cls;
    mt5sim_session_t  *s;

    (void) c;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        s = calloc(1, sizeof(*s));
        if (s != NULL) {
            s->id = __atomic_add_fetch(&srv->next_session, 1,
                                       __ATOMIC_RELAXED);
        }
        *socket_context = s;
        mt5sim_stat_inc(&srv->stats.connections_opened);
        mt5sim_stat_inc(&srv->stats.connections_open);
        return;
    }
    s = *socket_context;
    if (s != NULL && s->authed) {
        mt5sim_stat_dec(&srv->stats.sessions_authenticated);
    }
    free(s);
    *socket_context = NULL;
    mt5sim_stat_inc(&srv->stats.connections_closed);
    mt5sim_stat_dec(&srv->stats.connections_open);
}


static enum MHD_Result
mt5sim_api_serve(mt5sim_t *srv, struct MHD_Connection *c,
    mt5sim_request_t *rq, const char *url, const char *method)
{
    static const char                 not_allowed[] = "405 Not Allowed";
    const union MHD_ConnectionInfo   *ci;
    mt5sim_session_t                 *s;
    mt5sim_endpoint_e                 ep;
    mt5sim_fault_take_t               f;
    mt5sim_params_t                   p;
    mt5sim_reply_t                    r;
    const char                       *query, *garbage;
    enum MHD_Result                   rc;
    json_t                           *j;

    ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    s = ci ? ci->socket_context : NULL;
    if (s == NULL) {
        return MHD_NO;
    }
    ep = mt5sim_endpoint_lookup(url);
    mt5sim_stat_inc(&srv->stats.requests[ep]);

    if (strcmp(method, "GET") != 0 && strcmp(method, "POST") != 0) {
        return mt5sim_send(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain",
                           not_allowed, sizeof(not_allowed) - 1, 0);
    }
    if (strncmp(url, "/api/", 5) != 0) {
        r.kind = MT5SIM_REPLY_NOT_FOUND;
        r.json = NULL;
        return mt5sim_send_reply(srv, c, s, &r);
    }
    /* every command but the handshake needs this connection's session */
    if (ep != MT5SIM_EP_AUTH_START && ep != MT5SIM_EP_AUTH_ANSWER
        && !s->authed)
    {
        return mt5sim_forbidden(srv, c, s);
    }
    if (rq->too_big) {
        return mt5sim_send(c, MHD_HTTP_CONTENT_TOO_LARGE, "text/plain",
                           "413", 3, 1);
    }

    query = strchr(rq->uri, '?');
    if (mt5sim_params_parse(query ? query + 1 : NULL,
                            srv->opt.plus_is_space,
                            srv->opt.backslash_escapes, &p) != 0)
    {
        return MHD_NO;
    }

    pthread_mutex_lock(&srv->lock);
    mt5sim_faults_take(&srv->faults, ep, &f);
    pthread_mutex_unlock(&srv->lock);
    if (f.has_action) {
        /* the log says why a client saw what it saw */
        fprintf(stderr, "mt5sim: fault %s on %s (connection %llu)\n",
                mt5sim_fault_name(f.action.kind), url,
                (unsigned long long) s->id);
    }

    if (f.latency_ms > 0 && mt5sim_wait(srv, f.latency_ms) != 0) {
        mt5sim_params_free(&p);
        return MHD_NO;
    }

    /* faults that act before the command runs */
    if (f.has_action) {
        switch (f.action.kind) {
        case MT5SIM_F_DROP_BEFORE:
            mt5sim_params_free(&p);
            mt5sim_stat_inc(&srv->stats.dropped);
            return MHD_NO;
        case MT5SIM_F_HANG:
            if (!mt5sim_hang(srv, c, f.generation)) {
                mt5sim_params_free(&p);
                mt5sim_stat_inc(&srv->stats.dropped);
                return MHD_NO;
            }
            break;
        case MT5SIM_F_RETCODE:
            mt5sim_params_free(&p);
            j = json_pack("{s:s}", "retcode", f.action.retcode);
            return mt5sim_send_json(c, MHD_HTTP_OK, j, 0);
        case MT5SIM_F_HTTP403:
            if (!f.action.execute) {
                mt5sim_params_free(&p);
                return mt5sim_forbidden(srv, c, s);
            }
            break;
        case MT5SIM_F_GARBAGE:
            if (!f.action.execute) {
                mt5sim_params_free(&p);
                garbage = f.action.body;
                return mt5sim_send(c, MHD_HTTP_OK, "application/json",
                                   garbage, strlen(garbage), 0);
            }
            break;
        default:
            break;
        }
    }

    if (mt5sim_api_call(srv, s, ep, &p, rq->body, rq->body_len, &f, &r)
        != 0)
    {
        mt5sim_params_free(&p);
        return MHD_NO;
    }
    mt5sim_params_free(&p);

    /* faults that act after it ran */
    if (f.has_action) {
        switch (f.action.kind) {
        case MT5SIM_F_DROP_AFTER:
            json_decref(r.json);
            mt5sim_stat_inc(&srv->stats.dropped);
            return MHD_NO;
        case MT5SIM_F_HANG_AFTER:
            if (!mt5sim_hang(srv, c, f.generation)) {
                json_decref(r.json);
                mt5sim_stat_inc(&srv->stats.dropped);
                return MHD_NO;
            }
            break;
        case MT5SIM_F_HTTP403:
            json_decref(r.json);
            return mt5sim_forbidden(srv, c, s);
        case MT5SIM_F_GARBAGE:
            json_decref(r.json);
            garbage = f.action.body;
            return mt5sim_send(c, MHD_HTTP_OK, "application/json", garbage,
                               strlen(garbage), 0);
        default:
            break;
        }
    }

    rc = mt5sim_send_reply(srv, c, s, &r);
    return rc;
}


static enum MHD_Result
mt5sim_api_access(void *cls, struct MHD_Connection *c, const char *url,
    const char *method, const char *version, const char *upload,
    size_t *upload_size, void **con_cls)
{
    mt5sim_request_t  *rq = *con_cls;

    (void) version;
    if (rq == NULL) {
        rq = mt5sim_request_new(url);
        if (rq == NULL) {
            return MHD_NO;
        }
        *con_cls = rq;
    }
    if (!rq->started) {
        rq->started = 1;
        return MHD_YES;
    }
    if (*upload_size != 0) {
        if (mt5sim_body_append(rq, upload, *upload_size) != 0) {
            return MHD_NO;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    return mt5sim_api_serve(cls, c, rq, url, method);
}


static enum MHD_Result
mt5sim_control_access(void *cls, struct MHD_Connection *c, const char *url,
    const char *method, const char *version, const char *upload,
    size_t *upload_size, void **con_cls)
{
    mt5sim_request_t        *rq = *con_cls;
    mt5sim_control_reply_t   out;

    (void) version;
    if (rq == NULL) {
        rq = mt5sim_request_new(url);
        if (rq == NULL) {
            return MHD_NO;
        }
        *con_cls = rq;
    }
    if (!rq->started) {
        rq->started = 1;
        return MHD_YES;
    }
    if (*upload_size != 0) {
        if (mt5sim_body_append(rq, upload, *upload_size) != 0) {
            return MHD_NO;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (rq->too_big) {
        return mt5sim_send(c, MHD_HTTP_CONTENT_TOO_LARGE, "text/plain",
                           "413", 3, 1);
    }
    mt5sim_control_call(cls, method, url, rq->body, rq->body_len, &out);
    return mt5sim_send_json(c, (unsigned) out.status, out.json, 0);
}


int
mt5sim_http_start(mt5sim_t *srv, char *err)
{
    struct sockaddr_in     api, ctl;
    struct MHD_OptionItem  tls[3];
    unsigned               flags;

    memset(&api, 0, sizeof(api));
    api.sin_family = AF_INET;
    api.sin_port = htons((uint16_t) srv->opt.port);
    api.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ctl = api;
    ctl.sin_port = htons((uint16_t) srv->opt.control_port);

    memset(tls, 0, sizeof(tls));
    tls[0].option = MHD_OPTION_END;
    flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD
            | MHD_USE_POLL | MHD_USE_ERROR_LOG;
    if (!srv->opt.http) {
        flags |= MHD_USE_TLS;
        tls[0].option = MHD_OPTION_HTTPS_MEM_KEY;
        tls[0].ptr_value = srv->tls_key_pem;
        tls[1].option = MHD_OPTION_HTTPS_MEM_CERT;
        tls[1].ptr_value = srv->tls_cert_pem;
        tls[2].option = MHD_OPTION_END;
    }

    srv->api = MHD_start_daemon(flags, (uint16_t) srv->opt.port, NULL, NULL,
        mt5sim_api_access, srv,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *) &api,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int) srv->opt.idle_timeout,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int) MT5SIM_CONN_LIMIT,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t) MT5SIM_CONN_MEMORY,
        MHD_OPTION_NOTIFY_CONNECTION, mt5sim_connection, srv,
        MHD_OPTION_NOTIFY_COMPLETED, mt5sim_completed, srv,
        MHD_OPTION_URI_LOG_CALLBACK, mt5sim_uri_log, srv,
        MHD_OPTION_STRICT_FOR_CLIENT, srv->opt.strict_http ? 1 : 0,
        MHD_OPTION_ARRAY, tls,
        MHD_OPTION_END);
    if (srv->api == NULL) {
        mt5sim_err(err, "cannot listen on 127.0.0.1:%u (%s)", srv->opt.port,
                   srv->opt.http ? "http" : "https");
        return -1;
    }

    srv->control = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD
                                    | MHD_USE_POLL | MHD_USE_ERROR_LOG,
        (uint16_t) srv->opt.control_port, NULL, NULL,
        mt5sim_control_access, srv,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *) &ctl,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int) 60,
        MHD_OPTION_NOTIFY_COMPLETED, mt5sim_completed, srv,
        MHD_OPTION_END);
    if (srv->control == NULL) {
        mt5sim_err(err, "cannot listen on 127.0.0.1:%u (control)",
                   srv->opt.control_port);
        MHD_stop_daemon(srv->api);
        srv->api = NULL;
        return -1;
    }
    return 0;
}


void
mt5sim_http_stop(mt5sim_t *srv)
{
    __atomic_store_n(&srv->stopping, 1, __ATOMIC_RELEASE);
    if (srv->api != NULL) {
        MHD_stop_daemon(srv->api);
        srv->api = NULL;
    }
    if (srv->control != NULL) {
        MHD_stop_daemon(srv->control);
        srv->control = NULL;
    }
}
