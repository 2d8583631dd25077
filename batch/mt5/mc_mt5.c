/*
 * Copyright (C) mt5-credit
 *
 * The MT5 Web API client; mc_mt5.h is the contract, and the MT5 Web API
 * reference (facts and choices: docs/mt5-webapi.md) the protocol.
 *
 * A session is one connection (mc_mt5.h), so it has one libcurl easy
 * handle, reused for every request on it.  mc_mt5_ensure() makes the
 * handle for the handshake and it is destroyed when the session closes,
 * so a new session always starts on a new connection with no cookie or
 * TLS state of the old one.  libcurl must never open a socket
 * on its own: CURLOPT_OPENSOCKETFUNCTION refuses every socket except
 * while auth/start connects.  libcurl re-sends a request on a new
 * connection when a reused one dies before answering; here that attempt
 * fails instead, and the request counts as sent once, answer unknown.
 *
 * The caller owns curl_global_init(CURL_GLOBAL_DEFAULT) (before the first
 * session, while single-threaded) and curl_global_cleanup().  Nothing
 * here logs; mc_mt5_error() has the text of the last failure.
 */


#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "mc_clock.h"
#include "mc_mt5.h"
#include "mc_mt5_auth.h"


#define MC_MT5_AGENT          "mt5credit"
#define MC_MT5_BUILD          "3000"       /* any build >= 484 */
#define MC_MT5_USER_AGENT     "mt5credit/1 (MT5 Web API client; libcurl)"
#define MC_MT5_PING_DEFAULT   20           /* s, MQ-PING */
#define MC_MT5_IDLE_MAX       170          /* s; the server drops at 180 */
#define MC_MT5_CONNECT_MS     10000
#define MC_MT5_TIMEOUT_MS     30000
#define MC_MT5_QUIT_MS        2000
#define MC_MT5_BODY_MAX       (16 * 1024 * 1024)
#define MC_MT5_DEALS_MAX      1000000      /* one login, one window */
#define MC_MT5_ERR_LEN        512
#define MC_MT5_RET_PARAMS     3            /* MT_RET_ERR_PARAMS */
#define MC_MT5_NUM_LEN        24           /* INT64_MIN and a NUL */


typedef struct {
    char    *data;
    size_t   len;
    size_t   cap;
} mc_mt5_buf_t;


typedef struct {
    const char  *key;
    const char  *value;
} mc_mt5_param_t;


struct mc_mt5_session_s {
    mc_mt5_config_t     cfg;           /* a copy that owns its strings */
    CURL               *curl;          /* NULL: no connection */
    struct curl_slist  *headers;
    curl_socket_t       sock;          /* the connection's socket */
    int                 may_connect;   /* only during auth/start */
    int                 refused;       /* a socket was refused */
    int                 authed;
    int                 body_over;
    int64_t             send_by_ms;    /* the balance call's deadline */
    int                 too_late;      /* the pre-request check refused */
    int64_t             last_ms;       /* monotonic, the last request */
    const char         *path;          /* the request, for errors */
    mc_mt5_buf_t        body;
    char                curl_err[CURL_ERROR_SIZE];
    char                err[MC_MT5_ERR_LEN];
};


static char *mc_mt5_strdup(const char *s);
static void mc_mt5_free_strings(mc_mt5_config_t *cfg);
static void mc_mt5_fail(mc_mt5_session_t *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void mc_mt5_note(mc_mt5_session_t *s, const char *what);
static void mc_mt5_drop(mc_mt5_session_t *s);
static int mc_mt5_peer_gone(mc_mt5_session_t *s);
static mc_mt5_rc_e mc_mt5_lost(mc_mt5_session_t *s, json_t *root);
static int mc_mt5_buf_add(mc_mt5_buf_t *b, const char *p, size_t n);
static size_t mc_mt5_write(char *p, size_t size, size_t nmemb, void *data);
static curl_socket_t mc_mt5_open_socket(void *data, curlsocktype purpose,
    struct curl_sockaddr *addr);
static int mc_mt5_close_socket(void *data, curl_socket_t fd);
static int mc_mt5_prereq(void *data, char *conn_primary_ip,
    char *conn_local_ip, int conn_primary_port, int conn_local_port);
static int mc_mt5_live(mc_mt5_session_t *s);
static int mc_mt5_open(mc_mt5_session_t *s);
static char *mc_mt5_url(mc_mt5_session_t *s, const mc_mt5_param_t *params,
    size_t n);
static int mc_mt5_perform(mc_mt5_session_t *s, const mc_mt5_param_t *params,
    size_t n, json_t **root);
static mc_mt5_rc_e mc_mt5_exchange(mc_mt5_session_t *s, const char *path,
    const mc_mt5_param_t *params, size_t n, json_t **root, int *retcode);
static mc_mt5_rc_e mc_mt5_request(mc_mt5_session_t *s, const char *path,
    const mc_mt5_param_t *params, size_t n, json_t **root, int *retcode);
static mc_mt5_rc_e mc_mt5_command(mc_mt5_session_t *s, const char *path,
    const mc_mt5_param_t *params, size_t n, json_t **root, json_t **answer,
    int *retcode);
static mc_mt5_rc_e mc_mt5_call(mc_mt5_session_t *s, const char *path,
    const mc_mt5_param_t *params, size_t n, json_t **root, json_t **answer,
    int *retcode);
static mc_mt5_rc_e mc_mt5_auth_start(mc_mt5_session_t *s,
    unsigned char *srv_rand, int *retcode);
static mc_mt5_rc_e mc_mt5_auth_answer(mc_mt5_session_t *s,
    const unsigned char *srv_rand, int *retcode);
static int mc_mt5_proof_ok(const char *got, size_t len,
    const char *expected);
static json_t *mc_mt5_key(mc_mt5_session_t *s, json_t *obj, const char *key);
static int mc_mt5_text(mc_mt5_session_t *s, json_t *obj, const char *key,
    char *num, const char **text, size_t *len);
static int mc_mt5_parse_i64(const char *p, size_t len, int prefix,
    int64_t *v);
static int mc_mt5_get_u64(mc_mt5_session_t *s, json_t *obj, const char *key,
    uint64_t *v);
static int mc_mt5_get_i64(mc_mt5_session_t *s, json_t *obj, const char *key,
    int prefix, int64_t *v);
static int mc_mt5_get_int(mc_mt5_session_t *s, json_t *obj, const char *key,
    int *v);
static int mc_mt5_get_money(mc_mt5_session_t *s, json_t *obj,
    const char *key, mc_decimal_t *d);
static int mc_mt5_get_str(mc_mt5_session_t *s, json_t *obj, const char *key,
    char *buf, size_t size);
static int mc_mt5_get_login(mc_mt5_session_t *s, json_t *obj,
    uint64_t asked, uint64_t *login);
static int mc_mt5_retcode(mc_mt5_session_t *s, json_t *root, int *retcode);
static int mc_mt5_comment_ok(const char *comment);
static const char *mc_mt5_balance_check(uint64_t login, int type,
    const char *amount, const char *comment, int check_margin);
static int mc_mt5_deal(mc_mt5_session_t *s, json_t *obj, uint64_t login,
    mc_mt5_deal_t *d);
static int mc_mt5_ticket_cmp(const void *a, const void *b);
static mc_mt5_rc_e mc_mt5_deals_total(mc_mt5_session_t *s,
    const mc_mt5_param_t *params, size_t *total, int *retcode);
static mc_mt5_rc_e mc_mt5_deals_page(mc_mt5_session_t *s,
    mc_mt5_param_t *params, uint64_t login, size_t offset, size_t want,
    mc_mt5_deal_t *deals, int *retcode);
static int mc_mt5_deals_unique(mc_mt5_session_t *s,
    const mc_mt5_deal_t *deals, size_t n);
static mc_mt5_rc_e mc_mt5_deals_beyond(mc_mt5_session_t *s,
    mc_mt5_param_t *params, size_t total);


/* ------------------------------------------------------------ session */


static char *
mc_mt5_strdup(const char *s)
{
    return s == NULL ? NULL : strdup(s);
}


static void
mc_mt5_free_strings(mc_mt5_config_t *cfg)
{
    if (cfg->password != NULL) {
        OPENSSL_cleanse((char *) cfg->password, strlen(cfg->password));
    }

    free((char *) cfg->name);
    free((char *) cfg->url);
    free((char *) cfg->password);
    free((char *) cfg->ca_file);
    free((char *) cfg->agent);
}


mc_mt5_session_t *
mc_mt5_session_new(const mc_mt5_config_t *cfg)
{
    mc_mt5_session_t  *s;

    if (cfg == NULL) {
        return NULL;
    }

    s = calloc(1, sizeof(mc_mt5_session_t));
    if (s == NULL) {
        return NULL;
    }

    s->cfg = *cfg;
    s->cfg.name = mc_mt5_strdup(cfg->name ? cfg->name : "mt5");
    s->cfg.url = mc_mt5_strdup(cfg->url);
    s->cfg.password = mc_mt5_strdup(cfg->password);
    s->cfg.ca_file = mc_mt5_strdup(cfg->ca_file);
    s->cfg.agent = mc_mt5_strdup(cfg->agent ? cfg->agent : MC_MT5_AGENT);
    s->sock = CURL_SOCKET_BAD;

    s->headers = curl_slist_append(NULL, "Accept: */*");
    if (s->headers != NULL) {
        s->headers = curl_slist_append(s->headers, "Connection: keep-alive");
    }

    if (s->cfg.name == NULL || s->cfg.agent == NULL
        || (cfg->url != NULL && s->cfg.url == NULL)
        || (cfg->password != NULL && s->cfg.password == NULL)
        || (cfg->ca_file != NULL && s->cfg.ca_file == NULL)
        || s->headers == NULL)
    {
        mc_mt5_session_free(s);
        return NULL;
    }

    if (s->cfg.connect_timeout_ms <= 0) {
        s->cfg.connect_timeout_ms = MC_MT5_CONNECT_MS;
    }

    if (s->cfg.timeout_ms <= 0) {
        s->cfg.timeout_ms = MC_MT5_TIMEOUT_MS;
    }

    if (s->cfg.ping_interval <= 0) {
        s->cfg.ping_interval = MC_MT5_PING_DEFAULT;
    }

    /* the caller warns; this text is there until the first failure */
    if (!s->cfg.tls_verify) {
        mc_mt5_fail(s, "TLS verification is off: the server's certificate "
                    "and name are not checked");
    }

    return s;
}


void
mc_mt5_session_free(mc_mt5_session_t *s)
{
    if (s == NULL) {
        return;
    }

    mc_mt5_close(s);
    curl_slist_free_all(s->headers);
    free(s->body.data);
    mc_mt5_free_strings(&s->cfg);
    free(s);
}


const char *
mc_mt5_error(mc_mt5_session_t *s)
{
    return s->err;
}


const mc_mt5_config_t *
mc_mt5_config(mc_mt5_session_t *s)
{
    return &s->cfg;
}




/* "live1: /api/trade/balance: <what>"; never a secret in <what> */
static void
mc_mt5_fail(mc_mt5_session_t *s, const char *fmt, ...)
{
    int      n;
    va_list  args;

    if (s->path != NULL) {
        n = snprintf(s->err, sizeof(s->err), "%s: %s: ", s->cfg.name,
                     s->path);
    } else {
        n = snprintf(s->err, sizeof(s->err), "%s: ", s->cfg.name);
    }

    if (n < 0 || (size_t) n >= sizeof(s->err)) {
        return;
    }

    va_start(args, fmt);
    vsnprintf(s->err + n, sizeof(s->err) - n, fmt, args);
    va_end(args);
}


/* "...; <what>" added to the error, as far as it fits */
static void
mc_mt5_note(mc_mt5_session_t *s, const char *what)
{
    size_t  n;

    n = strlen(s->err);
    snprintf(s->err + n, sizeof(s->err) - n, "; %s", what);
}


/* the connection goes, without /api/quit: its state is unknown */
static void
mc_mt5_drop(mc_mt5_session_t *s)
{
    if (s->curl != NULL) {
        /* closes the socket through mc_mt5_close_socket() */
        curl_easy_cleanup(s->curl);
        s->curl = NULL;
    }

    s->sock = CURL_SOCKET_BAD;
    s->authed = 0;
    s->may_connect = 0;
}


/* every MC_MT5_NO_ANSWER ends here, with s->err already set */
static mc_mt5_rc_e
mc_mt5_lost(mc_mt5_session_t *s, json_t *root)
{
    json_decref(root);
    mc_mt5_drop(s);

    return MC_MT5_NO_ANSWER;
}


/* ------------------------------------------------------------ transport */


static int
mc_mt5_buf_add(mc_mt5_buf_t *b, const char *p, size_t n)
{
    char    *data;
    size_t   cap;

    if (b->len + n + 1 > b->cap) {
        cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1) {
            cap *= 2;
        }

        data = realloc(b->data, cap);
        if (data == NULL) {
            return -1;
        }

        b->data = data;
        b->cap = cap;
    }

    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';

    return 0;
}


static size_t
mc_mt5_write(char *p, size_t size, size_t nmemb, void *data)
{
    size_t             n;
    mc_mt5_session_t  *s;

    s = data;
    n = size * nmemb;

    if (s->body.len + n > MC_MT5_BODY_MAX) {
        s->body_over = 1;
        return 0;
    }

    if (mc_mt5_buf_add(&s->body, p, n) != 0) {
        return 0;
    }

    return n;
}


/*
 * The only place a socket is made.  Outside auth/start any request for
 * one is libcurl replacing the session's connection (or re-sending a
 * request on a new one): refused, so the transfer fails.
 */
static curl_socket_t
mc_mt5_open_socket(void *data, curlsocktype purpose,
    struct curl_sockaddr *addr)
{
    int                fd;
    mc_mt5_session_t  *s;

    s = data;

    if (!s->may_connect || purpose != CURLSOCKTYPE_IPCXN) {
        s->refused = 1;
        return CURL_SOCKET_BAD;
    }

    fd = socket(addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);

    return fd < 0 ? CURL_SOCKET_BAD : fd;
}


/* libcurl closing the session's socket ends the session */
static int
mc_mt5_close_socket(void *data, curl_socket_t fd)
{
    mc_mt5_session_t  *s;

    s = data;

    if (fd == s->sock) {
        s->sock = CURL_SOCKET_BAD;
        s->authed = 0;
    }

    return close(fd);
}


/*
 * Called by libcurl after the connection is there and before a single
 * byte of the request is written: the last moment at which "not sent" is
 * still certain.  Only the balance call sets a deadline.
 */
static int
mc_mt5_prereq(void *data, char *conn_primary_ip, char *conn_local_ip,
    int conn_primary_port, int conn_local_port)
{
    mc_mt5_session_t  *s;

    (void) conn_primary_ip;
    (void) conn_local_ip;
    (void) conn_primary_port;
    (void) conn_local_port;

    s = data;

    if (s->send_by_ms != 0 && mc_now_ms() >= s->send_by_ms) {
        s->too_late = 1;
        return CURL_PREREQFUNC_ABORT;
    }

    return CURL_PREREQFUNC_OK;
}


/* one option of mc_mt5_open(); a failure names the option */
#define mc_mt5_setopt(c, opt, val)                                          \
    do {                                                                    \
        if ((rc = curl_easy_setopt(c, opt, val)) != CURLE_OK) {             \
            name = #opt;                                                    \
            goto failed;                                                    \
        }                                                                   \
    } while (0)


/* a new easy handle: its first transfer makes a new connection */
static int
mc_mt5_open(mc_mt5_session_t *s)
{
    long         verify;
    CURL        *c;
    CURLcode     rc;
    const char  *name;

    c = curl_easy_init();
    if (c == NULL) {
        mc_mt5_fail(s, "curl_easy_init() failed");
        return -1;
    }

    verify = s->cfg.tls_verify ? 1L : 0L;

    mc_mt5_setopt(c, CURLOPT_NOSIGNAL, 1L);
    mc_mt5_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
    mc_mt5_setopt(c, CURLOPT_HTTP_VERSION, (long) CURL_HTTP_VERSION_1_1);
    mc_mt5_setopt(c, CURLOPT_HTTPGET, 1L);
    mc_mt5_setopt(c, CURLOPT_MAXCONNECTS, 1L);
    /* libcurl's default (118 s) would retire an idle connection itself */
    mc_mt5_setopt(c, CURLOPT_MAXAGE_CONN, 86400L);
    mc_mt5_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    mc_mt5_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, s->cfg.connect_timeout_ms);
    mc_mt5_setopt(c, CURLOPT_TIMEOUT_MS, s->cfg.timeout_ms);
    mc_mt5_setopt(c, CURLOPT_SSL_VERIFYPEER, verify);
    mc_mt5_setopt(c, CURLOPT_SSL_VERIFYHOST, verify * 2);

    if (s->cfg.ca_file != NULL) {
        mc_mt5_setopt(c, CURLOPT_CAINFO, s->cfg.ca_file);
    }

    mc_mt5_setopt(c, CURLOPT_USERAGENT, MC_MT5_USER_AGENT);
    mc_mt5_setopt(c, CURLOPT_HTTPHEADER, s->headers);
    mc_mt5_setopt(c, CURLOPT_COOKIEFILE, "");
    mc_mt5_setopt(c, CURLOPT_ERRORBUFFER, s->curl_err);
    mc_mt5_setopt(c, CURLOPT_WRITEFUNCTION, mc_mt5_write);
    mc_mt5_setopt(c, CURLOPT_WRITEDATA, s);
    mc_mt5_setopt(c, CURLOPT_OPENSOCKETFUNCTION, mc_mt5_open_socket);
    mc_mt5_setopt(c, CURLOPT_OPENSOCKETDATA, s);
    mc_mt5_setopt(c, CURLOPT_CLOSESOCKETFUNCTION, mc_mt5_close_socket);
    mc_mt5_setopt(c, CURLOPT_CLOSESOCKETDATA, s);
    mc_mt5_setopt(c, CURLOPT_PREREQFUNCTION, mc_mt5_prereq);
    mc_mt5_setopt(c, CURLOPT_PREREQDATA, s);

    s->curl = c;
    return 0;

failed:

    mc_mt5_fail(s, "curl_easy_setopt(%s): %s", name, curl_easy_strerror(rc));
    curl_easy_cleanup(c);
    return -1;
}


#undef mc_mt5_setopt


/* url + path + "?k=v&..." with every value percent-encoded */
static char *
mc_mt5_url(mc_mt5_session_t *s, const mc_mt5_param_t *params, size_t n)
{
    int            ok;
    char          *v;
    size_t         i, base;
    mc_mt5_buf_t   b = { NULL, 0, 0 };

    base = strlen(s->cfg.url);
    while (base > 0 && s->cfg.url[base - 1] == '/') {
        base--;
    }

    ok = mc_mt5_buf_add(&b, s->cfg.url, base) == 0
         && mc_mt5_buf_add(&b, s->path, strlen(s->path)) == 0;

    for (i = 0; ok && i < n; i++) {
        v = curl_easy_escape(s->curl, params[i].value, 0);

        ok = v != NULL
             && mc_mt5_buf_add(&b, i ? "&" : "?", 1) == 0
             && mc_mt5_buf_add(&b, params[i].key, strlen(params[i].key)) == 0
             && mc_mt5_buf_add(&b, "=", 1) == 0
             && mc_mt5_buf_add(&b, v, strlen(v)) == 0;

        if (v != NULL) {
            OPENSSL_cleanse(v, strlen(v));
            curl_free(v);
        }
    }

    if (!ok) {
        if (b.data != NULL) {
            OPENSSL_cleanse(b.data, b.len);
        }
        free(b.data);
        return NULL;
    }

    return b.data;
}


/*
 * One GET on the session's connection, the whole body parsed as a JSON
 * object.  Returns 0, or -1 with s->err set (the caller drops).
 */
static int
mc_mt5_perform(mc_mt5_session_t *s, const mc_mt5_param_t *params, size_t n,
    json_t **root)
{
    long           status, connects;
    char          *url;
    CURLcode       rc;
    json_error_t   jerr;
    curl_socket_t  active;

    if (s->cfg.pace != NULL) {
        s->cfg.pace(s->cfg.pace_data);
    }

    url = mc_mt5_url(s, params, n);
    if (url == NULL) {
        mc_mt5_fail(s, "out of memory");
        return -1;
    }

    s->body.len = 0;
    s->body_over = 0;
    s->refused = 0;
    s->curl_err[0] = '\0';

    rc = curl_easy_setopt(s->curl, CURLOPT_URL, url);
    if (rc == CURLE_OK) {
        rc = curl_easy_perform(s->curl);
    }

    /* the auth/answer URL carries the answer to srv_rand */
    OPENSSL_cleanse(url, strlen(url));
    free(url);

    s->last_ms = mc_now_ms();

    if (s->refused) {
        mc_mt5_fail(s, "libcurl wanted a new connection (refused: a request "
                    "is never re-sent); the session is closed");
        return -1;
    }

    if (rc != CURLE_OK) {
        mc_mt5_fail(s, "%s", s->curl_err[0] ? s->curl_err
                                            : curl_easy_strerror(rc));
        return -1;
    }

    status = 0;
    connects = 0;
    active = CURL_SOCKET_BAD;
    curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(s->curl, CURLINFO_NUM_CONNECTS, &connects);
    curl_easy_getinfo(s->curl, CURLINFO_ACTIVESOCKET, &active);

    if (!s->may_connect
        && (connects != 0 || (active != CURL_SOCKET_BAD && active != s->sock)))
    {
        mc_mt5_fail(s, "the answer came on another connection");
        return -1;
    }

    if (status != 200) {
        mc_mt5_fail(s, "HTTP %ld%s", status,
                    status == 403 ? " (session gone)" : "");
        return -1;
    }

    if (s->body_over) {
        mc_mt5_fail(s, "answer longer than %d bytes", MC_MT5_BODY_MAX);
        return -1;
    }

    *root = json_loadb(s->body.data ? s->body.data : "", s->body.len,
                       JSON_REJECT_DUPLICATES, &jerr);
    if (*root == NULL) {
        mc_mt5_fail(s, "unparseable answer: %s", jerr.text);
        return -1;
    }

    if (!json_is_object(*root)) {
        mc_mt5_fail(s, "the answer is not a JSON object");
        json_decref(*root);
        *root = NULL;
        return -1;
    }

    return 0;
}


/*
 * A request and its retcode: MC_MT5_OK with *root the reply, or
 * MC_MT5_REJECTED (the session stays), or MC_MT5_NO_ANSWER (dropped).
 */
static mc_mt5_rc_e
mc_mt5_request(mc_mt5_session_t *s, const char *path,
    const mc_mt5_param_t *params, size_t n, json_t **root, int *retcode)
{
    int64_t      t0;
    mc_mt5_rc_e  rc;

    t0 = mc_now_ms();
    rc = mc_mt5_exchange(s, path, params, n, root, retcode);

    /* the worker's metrics: every request, with what came of it */
    if (s->cfg.observe != NULL) {
        s->cfg.observe(s->cfg.observe_data, path, mc_now_ms() - t0, rc,
                       *retcode);
    }

    return rc;
}


static mc_mt5_rc_e
mc_mt5_exchange(mc_mt5_session_t *s, const char *path,
    const mc_mt5_param_t *params, size_t n, json_t **root, int *retcode)
{
    s->path = path;
    *root = NULL;
    *retcode = 0;

    if (s->curl == NULL) {
        mc_mt5_fail(s, "not connected");
        return MC_MT5_NO_ANSWER;
    }

    if (mc_mt5_perform(s, params, n, root) != 0) {
        return mc_mt5_lost(s, NULL);
    }

    if (mc_mt5_retcode(s, *root, retcode) != 0) {
        mc_mt5_lost(s, *root);
        *root = NULL;
        return MC_MT5_NO_ANSWER;
    }

    if (*retcode != 0) {
        json_decref(*root);
        *root = NULL;
        return MC_MT5_REJECTED;
    }

    return MC_MT5_OK;
}


/*
 * A command of an authenticated session, "answer" required.  A session
 * that cannot authenticate makes it MC_MT5_NO_ANSWER with *retcode 0, not
 * sent: MC_MT5_REJECTED is only ever the command's own retcode (an auth
 * refusal "3" must not read as a final trade/balance rejection).
 */
static mc_mt5_rc_e
mc_mt5_call(mc_mt5_session_t *s, const char *path,
    const mc_mt5_param_t *params, size_t n, json_t **root, json_t **answer,
    int *retcode)
{
    mc_mt5_rc_e  rc;

    *root = NULL;

    rc = mc_mt5_ensure(s, retcode);
    if (rc != MC_MT5_OK) {
        mc_mt5_note(s, "the command was not sent");
        *retcode = 0;
        return MC_MT5_NO_ANSWER;
    }

    return mc_mt5_command(s, path, params, n, root, answer, retcode);
}


/* a command on the session as it is, "answer" required */
static mc_mt5_rc_e
mc_mt5_command(mc_mt5_session_t *s, const char *path,
    const mc_mt5_param_t *params, size_t n, json_t **root, json_t **answer,
    int *retcode)
{
    mc_mt5_rc_e  rc;

    rc = mc_mt5_request(s, path, params, n, root, retcode);
    if (rc != MC_MT5_OK) {
        return rc;
    }

    *answer = mc_mt5_key(s, *root, "answer");
    if (*answer == NULL) {
        rc = mc_mt5_lost(s, *root);
        *root = NULL;
        return rc;
    }

    return MC_MT5_OK;
}


/* ------------------------------------------------------------ auth */


mc_mt5_rc_e
mc_mt5_ensure(mc_mt5_session_t *s, int *retcode)
{
    int            dummy;
    mc_mt5_rc_e    rc;
    unsigned char  srv_rand[MC_MT5_RAND_LEN];

    if (retcode == NULL) {
        retcode = &dummy;
    }

    *retcode = 0;

    if (mc_mt5_live(s)) {
        return MC_MT5_OK;
    }

    mc_mt5_drop(s);
    s->path = "/api/auth/start";

    if (s->cfg.url == NULL || s->cfg.password == NULL) {
        mc_mt5_fail(s, "no url or no password configured");
        *retcode = MC_MT5_RET_PARAMS;
        return MC_MT5_REJECTED;
    }

    if (mc_mt5_open(s) != 0) {
        return MC_MT5_NO_ANSWER;
    }

    rc = mc_mt5_auth_start(s, srv_rand, retcode);

    if (rc == MC_MT5_OK) {
        rc = mc_mt5_auth_answer(s, srv_rand, retcode);
    }

    if (rc != MC_MT5_OK) {
        /* a refused handshake leaves nothing worth keeping either */
        mc_mt5_drop(s);
        return rc;
    }

    s->authed = 1;
    return MC_MT5_OK;
}


/* authenticated, connected, not idle long enough to be dropped */
static int
mc_mt5_live(mc_mt5_session_t *s)
{
    /* the server drops a session idle for 180 s; do not race it */
    return s->authed && s->curl != NULL && s->sock != CURL_SOCKET_BAD
           && mc_now_ms() - s->last_ms < MC_MT5_IDLE_MAX * 1000
           && !mc_mt5_peer_gone(s);
}


/*
 * Whether the idle connection is over: the server closed it (or wrote
 * unasked).  A request on it would be written and then fail, an unknown
 * outcome; found here, before sending, a new session costs nothing.
 */
static int
mc_mt5_peer_gone(mc_mt5_session_t *s)
{
    struct pollfd  pfd;

    pfd.fd = s->sock;
    pfd.events = POLLIN;      /* EOF is readable too */
    pfd.revents = 0;

    return poll(&pfd, 1, 0) != 0;
}


/* auth/start on a new connection; the only request that may connect */
static mc_mt5_rc_e
mc_mt5_auth_start(mc_mt5_session_t *s, unsigned char *srv_rand,
    int *retcode)
{
    char            login[MC_MT5_NUM_LEN];
    size_t          len;
    json_t         *root;
    mc_mt5_rc_e     rc;
    const char     *hex;
    curl_socket_t   active;
    mc_mt5_param_t  params[4];

    snprintf(login, sizeof(login), "%" PRIu64, s->cfg.manager);

    params[0].key = "version"; params[0].value = MC_MT5_BUILD;
    params[1].key = "agent";   params[1].value = s->cfg.agent;
    params[2].key = "login";   params[2].value = login;
    params[3].key = "type";    params[3].value = "manager";

    s->may_connect = 1;
    rc = mc_mt5_request(s, "/api/auth/start", params, 4, &root, retcode);
    s->may_connect = 0;

    if (rc != MC_MT5_OK) {
        return rc;
    }

    active = CURL_SOCKET_BAD;
    curl_easy_getinfo(s->curl, CURLINFO_ACTIVESOCKET, &active);

    if (active == CURL_SOCKET_BAD) {
        mc_mt5_fail(s, "the server closed the connection");
        return mc_mt5_lost(s, root);
    }

    s->sock = active;

    if (mc_mt5_text(s, root, "srv_rand", NULL, &hex, &len) != 0) {
        return mc_mt5_lost(s, root);
    }

    if (mc_mt5_hex_decode(hex, len, srv_rand, MC_MT5_RAND_LEN) != 0) {
        mc_mt5_fail(s, "srv_rand is not %d hex digits", MC_MT5_HEX_LEN);
        return mc_mt5_lost(s, root);
    }

    json_decref(root);
    return MC_MT5_OK;
}


/* auth/answer on the same connection, then the server's proof checked */
static mc_mt5_rc_e
mc_mt5_auth_answer(mc_mt5_session_t *s, const unsigned char *srv_rand,
    int *retcode)
{
    int             ok;
    size_t          len;
    json_t         *root;
    mc_mt5_rc_e     rc;
    const char     *got;
    unsigned char   h[MC_MT5_MD5_LEN], cli_rand[MC_MT5_RAND_LEN];
    char            srv_answer[MC_MT5_HEX_LEN + 1];
    char            cli_hex[MC_MT5_HEX_LEN + 1];
    char            cli_answer[MC_MT5_HEX_LEN + 1];
    mc_mt5_param_t  params[2];

    s->path = "/api/auth/answer";

    if (mc_mt5_password_hash(s->cfg.password, strlen(s->cfg.password), h)
        != 0)
    {
        mc_mt5_fail(s, "the password is not UTF-8 (or MD5 failed)");
        *retcode = MC_MT5_RET_PARAMS;
        return MC_MT5_REJECTED;
    }

    ok = RAND_bytes(cli_rand, sizeof(cli_rand)) == 1
         && mc_mt5_rand_answer(h, srv_rand, MC_MT5_RAND_LEN, srv_answer) == 0
         && mc_mt5_rand_answer(h, cli_rand, sizeof(cli_rand), cli_answer)
            == 0;

    OPENSSL_cleanse(h, sizeof(h));

    if (!ok) {
        mc_mt5_fail(s, "RAND_bytes() or MD5 failed");
        rc = MC_MT5_NO_ANSWER;
        goto done;
    }

    mc_mt5_hex_encode(cli_rand, sizeof(cli_rand), cli_hex);

    params[0].key = "srv_rand_answer"; params[0].value = srv_answer;
    params[1].key = "cli_rand";        params[1].value = cli_hex;

    rc = mc_mt5_request(s, "/api/auth/answer", params, 2, &root, retcode);
    if (rc != MC_MT5_OK) {
        goto done;
    }

    if (mc_mt5_text(s, root, "cli_rand_answer", NULL, &got, &len) != 0) {
        rc = mc_mt5_lost(s, root);
        goto done;
    }

    if (!mc_mt5_proof_ok(got, len, cli_answer)) {
        mc_mt5_fail(s, "server failed mutual authentication "
                    "(cli_rand_answer)");
        rc = mc_mt5_lost(s, root);
        goto done;
    }

    json_decref(root);

done:

    OPENSSL_cleanse(srv_answer, sizeof(srv_answer));
    OPENSSL_cleanse(cli_answer, sizeof(cli_answer));

    return rc;
}


/* the server's cli_rand_answer (hex of either case) is the expected one */
static int
mc_mt5_proof_ok(const char *got, size_t len, const char *expected)
{
    unsigned char  a[MC_MT5_MD5_LEN], b[MC_MT5_MD5_LEN];

    return mc_mt5_hex_decode(got, len, a, sizeof(a)) == 0
           && mc_mt5_hex_decode(expected, MC_MT5_HEX_LEN, b, sizeof(b)) == 0
           && CRYPTO_memcmp(a, b, sizeof(a)) == 0;
}


void
mc_mt5_close(mc_mt5_session_t *s)
{
    int      retcode;
    json_t  *root;

    if (s->curl != NULL && s->authed && s->sock != CURL_SOCKET_BAD
        && !mc_mt5_peer_gone(s))
    {
        /* a courtesy, not worth a long wait: the connection goes anyway */
        curl_easy_setopt(s->curl, CURLOPT_TIMEOUT_MS,
                         s->cfg.timeout_ms < MC_MT5_QUIT_MS
                         ? s->cfg.timeout_ms : (long) MC_MT5_QUIT_MS);

        if (mc_mt5_request(s, "/api/quit", NULL, 0, &root, &retcode)
            == MC_MT5_OK)
        {
            json_decref(root);
        }
    }

    mc_mt5_drop(s);
}


mc_mt5_rc_e
mc_mt5_keepalive(mc_mt5_session_t *s)
{
    int          retcode;
    json_t      *root;
    mc_mt5_rc_e  rc;

    /* no session, nothing to keep: the next call authenticates */
    if (s->curl == NULL || !s->authed || s->sock == CURL_SOCKET_BAD) {
        return MC_MT5_OK;
    }

    if (mc_now_ms() - s->last_ms < (int64_t) s->cfg.ping_interval * 1000)
    {
        return MC_MT5_OK;
    }

    if (mc_mt5_peer_gone(s)) {
        s->path = "/api/test/access";
        mc_mt5_fail(s, "the server closed the idle connection");
        return mc_mt5_lost(s, NULL);
    }

    rc = mc_mt5_request(s, "/api/test/access", NULL, 0, &root, &retcode);
    if (rc == MC_MT5_OK) {
        json_decref(root);
    }

    return rc;
}


/* ------------------------------------------------------------ json */


/*
 * obj[key], the key matched without regard to case (servers differ:
 * "Total"/"total").  Two spellings with different values: no answer.
 */
static json_t *
mc_mt5_key(mc_mt5_session_t *s, json_t *obj, const char *key)
{
    json_t      *v, *found;
    const char  *k;

    found = NULL;

    if (json_is_object(obj)) {
        json_object_foreach(obj, k, v) {
            if (strcasecmp(k, key) != 0) {
                continue;
            }

            if (found != NULL && !json_equal(found, v)) {
                mc_mt5_fail(s, "\"%s\" twice, with different values", key);
                return NULL;
            }

            found = v;
        }
    }

    if (found == NULL) {
        mc_mt5_fail(s, "\"%s\" missing", key);
    }

    return found;
}


/*
 * A scalar as text: a JSON string as it is, a JSON integer printed into
 * num (MC_MT5_NUM_LEN bytes).  A JSON real is refused: money must stay
 * exact, and the server sends strings anyway.
 */
static int
mc_mt5_text(mc_mt5_session_t *s, json_t *obj, const char *key, char *num,
    const char **text, size_t *len)
{
    json_t  *v;

    v = mc_mt5_key(s, obj, key);
    if (v == NULL) {
        return -1;
    }

    if (json_is_string(v)) {
        *text = json_string_value(v);
        *len = json_string_length(v);

        if (strlen(*text) != *len) {
            mc_mt5_fail(s, "\"%s\" holds a NUL", key);
            return -1;
        }

        return 0;
    }

    if (json_is_integer(v) && num != NULL) {
        *len = (size_t) snprintf(num, MC_MT5_NUM_LEN, "%" JSON_INTEGER_FORMAT,
                                 json_integer_value(v));
        *text = num;
        return 0;
    }

    mc_mt5_fail(s, "\"%s\" is not a string%s", key,
                num != NULL ? " or an integer" : "");
    return -1;
}


/*
 * [-]digits; with prefix, the digits may be followed by a space and
 * anything ("0 Done", "1572518788 2019.10.31 10:46:28").
 */
static int
mc_mt5_parse_i64(const char *p, size_t len, int prefix, int64_t *v)
{
    int       negative;
    size_t    i, digits;
    uint64_t  u, limit;

    i = 0;
    negative = (len > 0 && p[0] == '-');
    i += negative;

    limit = negative ? (uint64_t) INT64_MAX + 1 : (uint64_t) INT64_MAX;
    u = 0;

    for (digits = 0; i < len && p[i] >= '0' && p[i] <= '9'; i++, digits++) {
        if (u > (limit - (uint64_t) (p[i] - '0')) / 10) {
            return -1;
        }
        u = u * 10 + (uint64_t) (p[i] - '0');
    }

    if (digits == 0 || (i < len && !(prefix && p[i] == ' '))) {
        return -1;
    }

    *v = negative ? (int64_t) (0 - u) : (int64_t) u;
    return 0;
}


static int
mc_mt5_get_u64(mc_mt5_session_t *s, json_t *obj, const char *key,
    uint64_t *v)
{
    char         num[MC_MT5_NUM_LEN];
    size_t       len, i;
    uint64_t     u;
    const char  *t;

    if (mc_mt5_text(s, obj, key, num, &t, &len) != 0) {
        return -1;
    }

    u = 0;
    for (i = 0; i < len && t[i] >= '0' && t[i] <= '9'; i++) {
        if (u > (UINT64_MAX - (uint64_t) (t[i] - '0')) / 10) {
            break;
        }
        u = u * 10 + (uint64_t) (t[i] - '0');
    }

    if (len == 0 || i != len) {
        mc_mt5_fail(s, "\"%s\" is not an unsigned integer: \"%.32s\"",
                    key, t);
        return -1;
    }

    *v = u;
    return 0;
}


static int
mc_mt5_get_i64(mc_mt5_session_t *s, json_t *obj, const char *key,
    int prefix, int64_t *v)
{
    char         num[MC_MT5_NUM_LEN];
    size_t       len;
    const char  *t;

    if (mc_mt5_text(s, obj, key, num, &t, &len) != 0) {
        return -1;
    }

    if (mc_mt5_parse_i64(t, len, prefix, v) != 0) {
        mc_mt5_fail(s, "\"%s\" is not an integer: \"%.32s\"", key, t);
        return -1;
    }

    return 0;
}


static int
mc_mt5_get_int(mc_mt5_session_t *s, json_t *obj, const char *key, int *v)
{
    int64_t  w;

    if (mc_mt5_get_i64(s, obj, key, 0, &w) != 0) {
        return -1;
    }

    if (w < -1000000000 || w > 1000000000) {
        mc_mt5_fail(s, "\"%s\" out of range", key);
        return -1;
    }

    *v = (int) w;
    return 0;
}


static int
mc_mt5_get_money(mc_mt5_session_t *s, json_t *obj, const char *key,
    mc_decimal_t *d)
{
    char         num[MC_MT5_NUM_LEN];
    size_t       len;
    const char  *t;

    if (mc_mt5_text(s, obj, key, num, &t, &len) != 0) {
        return -1;
    }

    if (mc_decimal_parse(t, len, d) != 0) {
        mc_mt5_fail(s, "\"%s\" is not an exact decimal: \"%.32s\"", key, t);
        return -1;
    }

    return 0;
}


static int
mc_mt5_get_str(mc_mt5_session_t *s, json_t *obj, const char *key,
    char *buf, size_t size)
{
    size_t       len;
    const char  *t;

    if (mc_mt5_text(s, obj, key, NULL, &t, &len) != 0) {
        return -1;
    }

    if (len >= size) {
        mc_mt5_fail(s, "\"%s\" longer than %zu bytes", key, size - 1);
        return -1;
    }

    memcpy(buf, t, len + 1);
    return 0;
}


/* the answer's Login, which must be the login asked about */
static int
mc_mt5_get_login(mc_mt5_session_t *s, json_t *obj, uint64_t asked,
    uint64_t *login)
{
    uint64_t  got;

    if (mc_mt5_get_u64(s, obj, "Login", &got) != 0) {
        return -1;
    }

    if (got != asked) {
        mc_mt5_fail(s, "answer names login %" PRIu64 ", asked about %" PRIu64,
                    got, asked);
        return -1;
    }

    *login = got;
    return 0;
}


/* the leading integer of "retcode" ("13 Not found"); rejections noted */
static int
mc_mt5_retcode(mc_mt5_session_t *s, json_t *root, int *retcode)
{
    char         num[MC_MT5_NUM_LEN];
    size_t       len;
    int64_t      v;
    const char  *t;

    if (mc_mt5_text(s, root, "retcode", num, &t, &len) != 0) {
        return -1;
    }

    if (mc_mt5_parse_i64(t, len, 1, &v) != 0 || v < 0 || v > 1000000) {
        mc_mt5_fail(s, "retcode is not a number: \"%.32s\"", t);
        return -1;
    }

    *retcode = (int) v;

    if (v != 0) {
        mc_mt5_fail(s, "retcode \"%.64s\"", t);
    }

    return 0;
}


/* ------------------------------------------------------------ commands */


mc_mt5_rc_e
mc_mt5_time(mc_mt5_session_t *s, int64_t *server_now, int64_t *offset,
    int *retcode)
{
    int          dummy;
    json_t      *root, *answer;
    int64_t      now, diff;
    mc_mt5_rc_e  rc;

    if (retcode == NULL) {
        retcode = &dummy;
    }

    rc = mc_mt5_call(s, "/api/time/server", NULL, 0, &root, &answer,
                     retcode);
    if (rc != MC_MT5_OK) {
        return rc;
    }

    /* "1572518788 2019.10.31 10:46:28": the text after it is decoration */
    if (mc_mt5_get_i64(s, answer, "Time", 1, &now) != 0) {
        return mc_mt5_lost(s, root);
    }

    json_decref(root);

    /* zones and DST move in whole minutes; round half away from zero */
    diff = now - (int64_t) time(NULL);
    diff = diff >= 0 ? (diff + 30) / 60 : -((30 - diff) / 60);

    *server_now = now;
    *offset = diff * 60;

    return MC_MT5_OK;
}


mc_mt5_rc_e
mc_mt5_user_get(mc_mt5_session_t *s, uint64_t login, mc_mt5_user_t *u,
    int *retcode)
{
    int             dummy;
    char            num[MC_MT5_NUM_LEN];
    json_t         *root, *answer;
    mc_mt5_rc_e     rc;
    mc_mt5_param_t  params[1];

    if (retcode == NULL) {
        retcode = &dummy;
    }

    snprintf(num, sizeof(num), "%" PRIu64, login);
    params[0].key = "login"; params[0].value = num;

    rc = mc_mt5_call(s, "/api/user/get", params, 1, &root, &answer, retcode);
    if (rc != MC_MT5_OK) {
        return rc;
    }

    memset(u, 0, sizeof(mc_mt5_user_t));

    if (mc_mt5_get_login(s, answer, login, &u->login) != 0
        || mc_mt5_get_str(s, answer, "Group", u->group, sizeof(u->group))
           != 0
        || mc_mt5_get_u64(s, answer, "Rights", &u->rights) != 0
        || mc_mt5_get_money(s, answer, "Balance", &u->balance) != 0
        || mc_mt5_get_money(s, answer, "Credit", &u->credit) != 0)
    {
        return mc_mt5_lost(s, root);
    }

    json_decref(root);
    return MC_MT5_OK;
}


mc_mt5_rc_e
mc_mt5_account_get(mc_mt5_session_t *s, uint64_t login, mc_mt5_account_t *a,
    int *retcode)
{
    int             dummy;
    char            num[MC_MT5_NUM_LEN];
    json_t         *root, *answer;
    mc_mt5_rc_e     rc;
    mc_mt5_param_t  params[1];

    if (retcode == NULL) {
        retcode = &dummy;
    }

    snprintf(num, sizeof(num), "%" PRIu64, login);
    params[0].key = "login"; params[0].value = num;

    rc = mc_mt5_call(s, "/api/user/account/get", params, 1, &root, &answer,
                     retcode);
    if (rc != MC_MT5_OK) {
        return rc;
    }

    memset(a, 0, sizeof(mc_mt5_account_t));

    if (mc_mt5_get_login(s, answer, login, &a->login) != 0
        || mc_mt5_get_money(s, answer, "Balance", &a->balance) != 0
        || mc_mt5_get_money(s, answer, "Credit", &a->credit) != 0
        || mc_mt5_get_money(s, answer, "MarginFree", &a->margin_free) != 0)
    {
        return mc_mt5_lost(s, root);
    }

    json_decref(root);
    return MC_MT5_OK;
}


mc_mt5_rc_e
mc_mt5_group_get(mc_mt5_session_t *s, const char *group, mc_mt5_group_t *g,
    int *retcode)
{
    int             dummy;
    json_t         *root, *answer;
    mc_mt5_rc_e     rc;
    mc_mt5_param_t  params[1];

    if (retcode == NULL) {
        retcode = &dummy;
    }

    params[0].key = "group"; params[0].value = group;

    rc = mc_mt5_call(s, "/api/group/get", params, 1, &root, &answer,
                     retcode);
    if (rc != MC_MT5_OK) {
        return rc;
    }

    memset(g, 0, sizeof(mc_mt5_group_t));

    if (mc_mt5_get_str(s, answer, "Group", g->group, sizeof(g->group)) != 0
        || mc_mt5_get_str(s, answer, "Currency", g->currency,
                          sizeof(g->currency)) != 0
        || mc_mt5_get_int(s, answer, "CurrencyDigits", &g->digits) != 0)
    {
        return mc_mt5_lost(s, root);
    }

    json_decref(root);

    /* MT5 group names are case-insensitive */
    if (strcasecmp(g->group, group) != 0) {
        mc_mt5_fail(s, "answer names group \"%.64s\", asked about \"%.64s\"",
                    g->group, group);
        return mc_mt5_lost(s, NULL);
    }

    if (g->digits < 0 || g->digits > 8 || g->currency[0] == '\0') {
        mc_mt5_fail(s, "group \"%.64s\": bad Currency or CurrencyDigits",
                    group);
        return mc_mt5_lost(s, NULL);
    }

    return MC_MT5_OK;
}


mc_mt5_rc_e
mc_mt5_logins(mc_mt5_session_t *s, const char *group, uint64_t **logins,
    size_t *n, int *retcode)
{
    int             dummy;
    size_t          i, count;
    json_t         *root, *answer, *v;
    uint64_t       *out, u;
    const char     *t;
    char           *end;
    mc_mt5_rc_e     rc;
    mc_mt5_param_t  params[1];

    if (retcode == NULL) {
        retcode = &dummy;
    }

    params[0].key = "group"; params[0].value = group;

    rc = mc_mt5_call(s, "/api/user/logins", params, 1, &root, &answer,
                     retcode);
    if (rc != MC_MT5_OK) {
        return rc;
    }

    if (!json_is_array(answer)) {
        mc_mt5_fail(s, "user/logins: answer is not a list");
        return mc_mt5_lost(s, root);
    }

    count = json_array_size(answer);
    out = malloc((count ? count : 1) * sizeof(uint64_t));
    if (out == NULL) {
        mc_mt5_fail(s, "user/logins: out of memory for %zu logins", count);
        return mc_mt5_lost(s, root);
    }

    /* logins come as strings (every scalar may); numbers are accepted */
    for (i = 0; i < count; i++) {
        v = json_array_get(answer, i);

        if (json_is_integer(v) && json_integer_value(v) > 0) {
            u = (uint64_t) json_integer_value(v);

        } else if (json_is_string(v)
                   && (t = json_string_value(v))[0] >= '1'
                   && t[0] <= '9')
        {
            errno = 0;
            u = strtoull(t, &end, 10);
            if (errno != 0 || *end != '\0') {
                u = 0;
            }

        } else {
            u = 0;
        }

        if (u == 0) {
            mc_mt5_fail(s, "user/logins: element %zu is not a login", i);
            free(out);
            return mc_mt5_lost(s, root);
        }

        out[i] = u;
    }

    json_decref(root);

    qsort(out, count, sizeof(uint64_t), mc_mt5_ticket_cmp);

    *logins = out;
    *n = count;
    return MC_MT5_OK;
}


/* the comment alphabet that survives every escaping rule (pitfall 7) */
static int
mc_mt5_comment_ok(const char *comment)
{
    size_t  i;

    for (i = 0; comment[i] != '\0'; i++) {
        if (i == MC_MT5_COMMENT_MAX
            || strchr("abcdefghijklmnopqrstuvwxyz"
                      "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                      "0123456789_.:-", comment[i]) == NULL)
        {
            return 0;
        }
    }

    return i > 0;
}


/* what is wrong with a trade/balance request, or NULL */
static const char *
mc_mt5_balance_check(uint64_t login, int type, const char *amount,
    const char *comment, int check_margin)
{
    mc_decimal_t  d;

    if (login == 0) {
        return "login 0";
    }

    /* EnDealAction values trade/balance takes (MQ-BAL) */
    if (type < 2 || type > 6) {
        return "type not in 2..6";
    }

    if (check_margin != 0 && check_margin != 1) {
        return "check_margin not 0 or 1";
    }

    if (amount == NULL || mc_decimal_parse(amount, strlen(amount), &d) != 0)
    {
        return "the amount is not a plain decimal ([-+]digits[.digits])";
    }

    if (comment == NULL || !mc_mt5_comment_ok(comment)) {
        return "the comment is not 1-31 characters of [A-Za-z0-9_.:-]";
    }

    return NULL;
}


mc_mt5_rc_e
mc_mt5_balance(mc_mt5_session_t *s, uint64_t login, int type,
    const char *amount, const char *comment, int check_margin,
    int64_t send_by_ms, uint64_t *ticket, int *retcode)
{
    int             dummy;
    long            timeout_ms;
    char            num[MC_MT5_NUM_LEN], act[MC_MT5_NUM_LEN];
    json_t         *root, *answer;
    mc_mt5_rc_e     rc;
    const char     *why;
    mc_mt5_param_t  params[5];

    if (retcode == NULL) {
        retcode = &dummy;
    }

    *retcode = 0;
    *ticket = 0;
    s->path = "/api/trade/balance";

    why = mc_mt5_balance_check(login, type, amount, comment, check_margin);
    if (why != NULL) {
        /* refused here, nothing sent: the server would refuse it too */
        mc_mt5_fail(s, "not sent: %s", why);
        *retcode = MC_MT5_RET_PARAMS;
        return MC_MT5_REJECTED;
    }

    snprintf(num, sizeof(num), "%" PRIu64, login);
    snprintf(act, sizeof(act), "%d", type);

    params[0].key = "login";        params[0].value = num;
    params[1].key = "type";         params[1].value = act;
    params[2].key = "balance";      params[2].value = amount;
    params[3].key = "comment";      params[3].value = comment;
    params[4].key = "check_margin"; params[4].value = check_margin ? "1" : "0";

    /* a re-login here would be two more full transfers past the checks */
    if (!mc_mt5_live(s)) {
        mc_mt5_drop(s);
        mc_mt5_fail(s, "not sent: no live session (the balance call never "
                    "connects or authenticates)");
        return MC_MT5_NOT_SENT;
    }

    /* no longer than the caller may still send; 0 would mean no limit */
    timeout_ms = s->cfg.timeout_ms;

    if (send_by_ms != 0) {
        timeout_ms = send_by_ms - mc_now_ms();
        timeout_ms = timeout_ms < 1 ? 1
                     : timeout_ms > s->cfg.timeout_ms ? s->cfg.timeout_ms
                     : timeout_ms;
    }

    s->send_by_ms = send_by_ms;
    s->too_late = 0;
    answer = NULL;

    if (curl_easy_setopt(s->curl, CURLOPT_TIMEOUT_MS, timeout_ms)
        != CURLE_OK)
    {
        s->send_by_ms = 0;
        mc_mt5_fail(s, "not sent: the transfer's timeout cannot be set");
        return MC_MT5_NOT_SENT;
    }

    rc = mc_mt5_command(s, "/api/trade/balance", params, 5, &root, &answer,
                        retcode);

    s->send_by_ms = 0;

    if (s->too_late) {
        /* refused before a byte was written (the session is dropped) */
        mc_mt5_fail(s, "not sent: its deadline passed before the request "
                    "was written");
        *retcode = 0;
        return MC_MT5_NOT_SENT;
    }

    if (s->curl != NULL) {
        (void) curl_easy_setopt(s->curl, CURLOPT_TIMEOUT_MS,
                                s->cfg.timeout_ms);
    }

    if (rc != MC_MT5_OK) {
        return rc;
    }

    if (mc_mt5_get_u64(s, answer, "Ticket", ticket) != 0) {
        *ticket = 0;
        return mc_mt5_lost(s, root);
    }

    json_decref(root);

    if (*ticket == 0) {
        mc_mt5_fail(s, "executed with deal ticket 0");
        return mc_mt5_lost(s, NULL);
    }

    return MC_MT5_OK;
}


/* ------------------------------------------------------------ deals */


static int
mc_mt5_deal(mc_mt5_session_t *s, json_t *obj, uint64_t login,
    mc_mt5_deal_t *d)
{
    if (!json_is_object(obj)) {
        mc_mt5_fail(s, "a deal is not an object");
        return -1;
    }

    memset(d, 0, sizeof(mc_mt5_deal_t));

    if (mc_mt5_get_u64(s, obj, "Deal", &d->deal) != 0
        || mc_mt5_get_login(s, obj, login, &d->login) != 0
        || mc_mt5_get_int(s, obj, "Action", &d->action) != 0
        || mc_mt5_get_money(s, obj, "Profit", &d->profit) != 0
        || mc_mt5_get_u64(s, obj, "Volume", &d->volume) != 0
        || mc_mt5_get_str(s, obj, "Comment", d->comment, sizeof(d->comment))
           != 0
        || mc_mt5_get_i64(s, obj, "Time", 0, &d->time) != 0)
    {
        return -1;
    }

    if (d->deal == 0) {
        mc_mt5_fail(s, "a deal with ticket 0");
        return -1;
    }

    return 0;
}


/*
 * deal/get?ticket=: one deal, whatever its login (the caller compares it
 * with the credit's); the answer must be the deal asked about.
 */
mc_mt5_rc_e
mc_mt5_deal_get(mc_mt5_session_t *s, uint64_t ticket, mc_mt5_deal_t *d,
    int *retcode)
{
    int             dummy;
    char            num[MC_MT5_NUM_LEN];
    json_t         *root, *answer;
    uint64_t        login;
    mc_mt5_rc_e     rc;
    mc_mt5_param_t  params[1];

    if (retcode == NULL) {
        retcode = &dummy;
    }

    memset(d, 0, sizeof(mc_mt5_deal_t));
    snprintf(num, sizeof(num), "%" PRIu64, ticket);
    params[0].key = "ticket"; params[0].value = num;

    rc = mc_mt5_call(s, "/api/deal/get", params, 1, &root, &answer, retcode);
    if (rc != MC_MT5_OK) {
        return rc;
    }

    /* the login is read first and then required of the deal itself */
    if (!json_is_object(answer)
        || mc_mt5_get_u64(s, answer, "Login", &login) != 0
        || mc_mt5_deal(s, answer, login, d) != 0)
    {
        return mc_mt5_lost(s, root);
    }

    json_decref(root);

    if (d->deal != ticket) {
        mc_mt5_fail(s, "asked for deal %" PRIu64 ", the answer is deal %"
                    PRIu64, ticket, d->deal);
        return mc_mt5_lost(s, NULL);
    }

    return MC_MT5_OK;
}


static int
mc_mt5_ticket_cmp(const void *a, const void *b)
{
    uint64_t  x, y;

    x = *(const uint64_t *) a;
    y = *(const uint64_t *) b;

    return (x > y) - (x < y);
}


static mc_mt5_rc_e
mc_mt5_deals_total(mc_mt5_session_t *s, const mc_mt5_param_t *params,
    size_t *total, int *retcode)
{
    json_t      *root, *answer;
    uint64_t     n;
    mc_mt5_rc_e  rc;

    rc = mc_mt5_call(s, "/api/deal/get_total", params, 3, &root, &answer,
                     retcode);
    if (rc != MC_MT5_OK) {
        return rc;
    }

    if (mc_mt5_get_u64(s, answer, "Total", &n) != 0) {
        return mc_mt5_lost(s, root);
    }

    json_decref(root);

    if (n > MC_MT5_DEALS_MAX) {
        mc_mt5_fail(s, "%" PRIu64 " deals: more than %d in one listing", n,
                    MC_MT5_DEALS_MAX);
        return mc_mt5_lost(s, NULL);
    }

    *total = (size_t) n;
    return MC_MT5_OK;
}


/* params: login, from, to, then offset and total set here */
static mc_mt5_rc_e
mc_mt5_deals_page(mc_mt5_session_t *s, mc_mt5_param_t *params,
    uint64_t login, size_t offset, size_t want, mc_mt5_deal_t *deals,
    int *retcode)
{
    char         off[MC_MT5_NUM_LEN], cnt[MC_MT5_NUM_LEN];
    size_t       i;
    json_t      *root, *answer;
    mc_mt5_rc_e  rc;

    snprintf(off, sizeof(off), "%zu", offset);
    snprintf(cnt, sizeof(cnt), "%zu", want);
    params[3].key = "offset"; params[3].value = off;
    params[4].key = "total";  params[4].value = cnt;

    rc = mc_mt5_call(s, "/api/deal/get_page", params, 5, &root, &answer,
                     retcode);
    if (rc != MC_MT5_OK) {
        return rc;
    }

    if (!json_is_array(answer) || json_array_size(answer) != want) {
        mc_mt5_fail(s, "incomplete deal list: %zu deals at offset %zu, "
                    "%zu expected", json_array_size(answer), offset, want);
        return mc_mt5_lost(s, root);
    }

    for (i = 0; i < want; i++) {
        if (mc_mt5_deal(s, json_array_get(answer, i), login, &deals[i])
            != 0)
        {
            return mc_mt5_lost(s, root);
        }
    }

    json_decref(root);
    return MC_MT5_OK;
}


/* a list that shifted between pages repeats one deal for each it hides */
static int
mc_mt5_deals_unique(mc_mt5_session_t *s, const mc_mt5_deal_t *deals,
    size_t n)
{
    size_t     i;
    uint64_t  *tickets;

    if (n < 2) {
        return 0;
    }

    tickets = malloc(n * sizeof(uint64_t));
    if (tickets == NULL) {
        mc_mt5_fail(s, "out of memory");
        return -1;
    }

    for (i = 0; i < n; i++) {
        tickets[i] = deals[i].deal;
    }

    qsort(tickets, n, sizeof(uint64_t), mc_mt5_ticket_cmp);

    for (i = 1; i < n && tickets[i] != tickets[i - 1]; i++) {
        /* void */
    }

    if (i < n) {
        mc_mt5_fail(s, "incomplete deal list: deal %" PRIu64 " twice",
                    tickets[i]);
    }

    free(tickets);

    return i < n ? -1 : 0;
}


/*
 * Nothing past the end: a total too low would hide deals.  Only a deal
 * found there is an error; a refusal of the offset is "nothing there".
 */
static mc_mt5_rc_e
mc_mt5_deals_beyond(mc_mt5_session_t *s, mc_mt5_param_t *params,
    size_t total)
{
    int          retcode;
    char         off[MC_MT5_NUM_LEN];
    size_t       n;
    json_t      *root, *answer;
    mc_mt5_rc_e  rc;

    snprintf(off, sizeof(off), "%zu", total);
    params[3].key = "offset"; params[3].value = off;
    params[4].key = "total";  params[4].value = "1";

    rc = mc_mt5_call(s, "/api/deal/get_page", params, 5, &root, &answer,
                     &retcode);
    if (rc == MC_MT5_REJECTED) {
        return MC_MT5_OK;
    }

    if (rc != MC_MT5_OK) {
        return rc;
    }

    if (!json_is_array(answer)) {
        mc_mt5_fail(s, "the deal list is not an array");
        return mc_mt5_lost(s, root);
    }

    n = json_array_size(answer);
    json_decref(root);

    if (n != 0) {
        mc_mt5_fail(s, "incomplete deal list: deals past the %zu counted",
                    total);
        return mc_mt5_lost(s, NULL);
    }

    return MC_MT5_OK;
}


mc_mt5_rc_e
mc_mt5_deals_by_ticket(mc_mt5_session_t *s, const uint64_t *tickets,
    size_t n, mc_mt5_deal_t **deals, size_t *found, int *retcode)
{
    int             dummy;
    char           *list, *p;
    size_t          i, got;
    json_t         *root, *answer, *obj;
    uint64_t        login, *asked;
    mc_mt5_rc_e     rc;
    mc_mt5_deal_t  *out;
    mc_mt5_param_t  params[1];

    if (retcode == NULL) {
        retcode = &dummy;
    }

    *deals = NULL;
    *found = 0;

    if (n == 0 || n > MC_MT5_BATCH_TICKETS) {
        mc_mt5_fail(s, "deal/get_batch: %zu tickets (1 to %d a call)", n,
                    MC_MT5_BATCH_TICKETS);
        return MC_MT5_NO_ANSWER;
    }

    list = malloc(n * MC_MT5_NUM_LEN + 1);
    asked = malloc(n * sizeof(uint64_t));
    if (list == NULL || asked == NULL) {
        free(list);
        free(asked);
        mc_mt5_fail(s, "out of memory");
        return mc_mt5_lost(s, NULL);
    }

    for (i = 0, p = list; i < n; i++) {
        p += sprintf(p, "%s%" PRIu64, i ? "," : "", tickets[i]);
        asked[i] = tickets[i];
    }
    qsort(asked, n, sizeof(uint64_t), mc_mt5_ticket_cmp);

    params[0].key = "ticket"; params[0].value = list;
    rc = mc_mt5_call(s, "/api/deal/get_batch", params, 1, &root, &answer,
                     retcode);
    free(list);

    if (rc != MC_MT5_OK) {
        free(asked);
        return rc;
    }

    got = json_is_array(answer) ? json_array_size(answer) : 0;
    out = malloc((got ? got : 1) * sizeof(mc_mt5_deal_t));

    if (!json_is_array(answer) || got > n || out == NULL) {
        mc_mt5_fail(s, "deal/get_batch: %zu deals for %zu tickets", got, n);
        free(asked);
        free(out);
        return mc_mt5_lost(s, root);
    }

    for (i = 0; i < got; i++) {
        obj = json_array_get(answer, i);

        /* each deal on its own login, read first and then required */
        if (!json_is_object(obj)
            || mc_mt5_get_u64(s, obj, "Login", &login) != 0
            || mc_mt5_deal(s, obj, login, &out[i]) != 0)
        {
            free(asked);
            free(out);
            return mc_mt5_lost(s, root);
        }

        if (bsearch(&out[i].deal, asked, n, sizeof(uint64_t),
                    mc_mt5_ticket_cmp) == NULL)
        {
            mc_mt5_fail(s, "deal/get_batch: deal %" PRIu64 " was not asked "
                        "for", out[i].deal);
            free(asked);
            free(out);
            return mc_mt5_lost(s, root);
        }
    }

    json_decref(root);
    free(asked);

    if (mc_mt5_deals_unique(s, out, got) != 0) {
        free(out);
        return mc_mt5_lost(s, NULL);
    }

    *deals = out;
    *found = got;
    return MC_MT5_OK;
}


mc_mt5_rc_e
mc_mt5_deals(mc_mt5_session_t *s, uint64_t login, int64_t from, int64_t to,
    mc_mt5_deal_t **deals, size_t *n, int *retcode)
{
    int             dummy;
    char            num[MC_MT5_NUM_LEN], lo[MC_MT5_NUM_LEN];
    char            hi[MC_MT5_NUM_LEN];
    size_t          total, offset, want;
    mc_mt5_rc_e     rc;
    mc_mt5_deal_t  *list;
    mc_mt5_param_t  params[5];

    if (retcode == NULL) {
        retcode = &dummy;
    }

    *deals = NULL;
    *n = 0;

    snprintf(num, sizeof(num), "%" PRIu64, login);
    snprintf(lo, sizeof(lo), "%" PRId64, from);
    snprintf(hi, sizeof(hi), "%" PRId64, to);

    params[0].key = "login"; params[0].value = num;
    params[1].key = "from";  params[1].value = lo;
    params[2].key = "to";    params[2].value = hi;

    rc = mc_mt5_deals_total(s, params, &total, retcode);
    if (rc != MC_MT5_OK) {
        return rc;
    }

    list = malloc((total ? total : 1) * sizeof(mc_mt5_deal_t));
    if (list == NULL) {
        mc_mt5_fail(s, "out of memory for %zu deals", total);
        return mc_mt5_lost(s, NULL);
    }

    rc = MC_MT5_OK;

    for (offset = 0; rc == MC_MT5_OK && offset < total; offset += want) {
        want = total - offset < MC_MT5_PAGE_MAX
               ? total - offset : MC_MT5_PAGE_MAX;

        rc = mc_mt5_deals_page(s, params, login, offset, want, list + offset,
                               retcode);
    }

    if (rc == MC_MT5_OK && mc_mt5_deals_unique(s, list, total) != 0) {
        rc = mc_mt5_lost(s, NULL);
    }

    if (rc == MC_MT5_OK) {
        rc = mc_mt5_deals_beyond(s, params, total);
    }

    if (rc != MC_MT5_OK) {
        free(list);
        return rc;
    }

    *deals = list;
    *n = total;

    return MC_MT5_OK;
}


/*
 * trade/balance retcodes that mean "refused, not executed": each is a
 * check the server makes before it creates the deal.
 */
int
mc_mt5_rejection_final(int retcode)
{
    switch (retcode) {

    case 3:         /* MT_RET_ERR_PARAMS: the request is invalid (type,
                       login, amount); refused while validating it */
    case 4:         /* MT_RET_ERR_DATA: invalid data, same stage */
    case 8:         /* MT_RET_ERR_PERMISSIONS: the manager may not do
                       balance operations ("Accountant"); checked first */
    case 13:        /* MT_RET_ERR_NOTFOUND: no such login, so no account
                       a deal could have been made on */
    case 4005:      /* MT_RET_TRADE_MAX_MONEY: over the per-operation
                       limit, refused up front */
    case 10019:     /* MT_RET_REQUEST_NO_MONEY: the margin, balance or
                       credit check failed, and it runs before the deal */
        return 1;

    default:
        /* 2 (common error), 9/10012 (timeout), 10/11/15 (connection,
         * service, shutdown), 12/10024 (too frequent) and anything
         * unknown may come after the deal was made: the outcome is
         * unknown and must be looked up */
        return 0;
    }
}
