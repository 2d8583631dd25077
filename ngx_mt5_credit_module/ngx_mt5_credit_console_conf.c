
/*
 * Copyright (C) mt5-credit
 *
 * The console's trust boundary as configured (issue 29): where the
 * person comes from, and which origins may send actions.  Checked when
 * the configuration is read, so that nginx -t refuses a console whose
 * person the request itself could choose.
 *
 *   location /console/ {
 *       mt5_credit_console;
 *       mt5_credit_console_person $var;
 *       mt5_credit_console_origin https://desk.example.com;
 *   }
 *
 * The person is one variable, from a source nginx verified:
 *
 *   $remote_user           only where auth_basic verifies it: on in this
 *                          location, with a fixed realm and a user file,
 *                          under "satisfy all" (with "satisfy any", a
 *                          request another rule lets in brings its own
 *                          Authorization header, and nginx parses a user
 *                          from it that nothing checked)
 *   $mt5_credit_client_cn  the common name of the client certificate
 *                          nginx verified ("ssl_verify_client on" in the
 *                          server); empty unless the verification passed
 *                          and the subject holds exactly one CN
 *   $anything_else         set by auth_request_set in this location, with
 *                          auth_request on and "satisfy all": what the
 *                          SSO answered, never a request header or cookie
 *
 * The database then maps that name to one person (sql/063).
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_mt5_credit_module.h"


/*
 * nginx's own location configurations of auth_basic and auth_request are
 * private to their modules; their layout, unchanged since nginx 1.9, is
 * mirrored here to read what a location verifies.  The modules are found
 * by name: a build without auth_request has none, and nothing to check.
 */
typedef struct {
    ngx_http_complex_value_t   *realm;
    ngx_http_complex_value_t   *user_file;
} ngx_mt5_credit_auth_basic_conf_t;

typedef struct {
    ngx_str_t                   uri;
    ngx_array_t                *vars;
} ngx_mt5_credit_auth_request_conf_t;

typedef struct {
    ngx_int_t                   index;
    ngx_http_complex_value_t    value;
    ngx_http_set_variable_pt    set_handler;
} ngx_mt5_credit_auth_request_var_t;


static ngx_int_t ngx_mt5_credit_console_check_one(ngx_conf_t *cf,
    ngx_mt5_credit_console_loc_t *loc);
static ngx_int_t ngx_mt5_credit_console_check_basic(ngx_conf_t *cf,
    ngx_mt5_credit_console_loc_t *loc);
static ngx_int_t ngx_mt5_credit_console_check_cert(ngx_conf_t *cf,
    ngx_mt5_credit_console_loc_t *loc);
static ngx_int_t ngx_mt5_credit_console_check_sso(ngx_conf_t *cf,
    ngx_mt5_credit_console_loc_t *loc);
static void *ngx_mt5_credit_console_conf_of(ngx_conf_t *cf, void **confs,
    const char *module);
static ngx_int_t ngx_mt5_credit_console_client_cn(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);


static ngx_str_t  ngx_mt5_credit_console_cn = ngx_string("mt5_credit_client_cn");


/* mt5_credit_console_person $variable */
char *
ngx_mt5_credit_console_person(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_mt5_credit_loc_conf_t *lcf = conf;

    u_char                              ch;
    ngx_str_t                          *value, name;
    ngx_uint_t                          i;
    ngx_http_compile_complex_value_t    ccv;

    if (lcf->console_person != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;
    name = value[1];

    /* one variable, nothing around it: "$x" or "${x}" */
    if (name.len > 3 && name.data[1] == '{'
        && name.data[name.len - 1] == '}')
    {
        name.data += 2;
        name.len -= 3;

    } else if (name.len > 1 && name.data[0] == '$') {
        name.data++;
        name.len--;

    } else {
        name.len = 0;
    }

    for (i = 0; i < name.len; i++) {
        ch = name.data[i];

        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')
              || (ch >= '0' && ch <= '9') || ch == '_'))
        {
            name.len = 0;
            break;
        }
    }

    if (name.len == 0 || value[1].data[0] != '$') {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "mt5_credit_console_person \"%V\" is not one "
                           "variable: the person is a name nginx verified "
                           "($remote_user with auth_basic, a variable "
                           "auth_request_set sets, or $mt5_credit_client_cn)",
                           &value[1]);
        return NGX_CONF_ERROR;
    }

    lcf->console_person = ngx_palloc(cf->pool,
                                     sizeof(ngx_http_complex_value_t));
    if (lcf->console_person == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(&ccv, sizeof(ngx_http_compile_complex_value_t));
    ccv.cf = cf;
    ccv.value = &value[1];
    ccv.complex_value = lcf->console_person;

    if (ngx_http_compile_complex_value(&ccv) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    lcf->console_person_var = name;
    lcf->console_person_file = cf->conf_file->file.name;
    lcf->console_person_line = cf->conf_file->line;

    return NGX_CONF_OK;
}


/*
 * mt5_credit_console_origin https://desk.example.com [...]: the origins
 * (scheme, host, port; no path) whose pages may send actions, compared
 * with a browser's Origin header as they are written.
 */
char *
ngx_mt5_credit_console_origin(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_mt5_credit_loc_conf_t *lcf = conf;

    u_char      *p, *last;
    ngx_str_t   *value, *origin;
    ngx_uint_t   i, ok;

    if (lcf->console_origins != NULL) {
        return "is duplicate";
    }

    lcf->console_origins = ngx_array_create(cf->pool, cf->args->nelts - 1,
                                            sizeof(ngx_str_t));
    if (lcf->console_origins == NULL) {
        return NGX_CONF_ERROR;
    }

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {
        p = value[i].data;
        last = p + value[i].len;

        ok = 1;

        if (value[i].len > 8 && ngx_strncmp(p, "https://", 8) == 0) {
            p += 8;

        } else if (value[i].len > 7 && ngx_strncmp(p, "http://", 7) == 0) {
            p += 7;

        } else {
            ok = 0;
        }

        /* a host in lower case, a port: what a browser sends */
        for ( /* void */ ; ok && p < last; p++) {
            if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')
                  || *p == '.' || *p == '-' || *p == ':' || *p == '['
                  || *p == ']'))
            {
                ok = 0;
            }
        }

        if (!ok) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "mt5_credit_console_origin \"%V\" is not an "
                               "origin: http:// or https://, a host in "
                               "lower case, an optional port, no path",
                               &value[i]);
            return NGX_CONF_ERROR;
        }

        origin = ngx_array_push(lcf->console_origins);
        if (origin == NULL) {
            return NGX_CONF_ERROR;
        }

        *origin = value[i];
    }

    return NGX_CONF_OK;
}


/* each console location's person and origins, once everything is merged */
ngx_int_t
ngx_mt5_credit_console_check(ngx_conf_t *cf, ngx_mt5_credit_main_conf_t *mcf)
{
    ngx_uint_t                      i;
    ngx_mt5_credit_console_loc_t   *loc;

    if (mcf->console_locations == NULL) {
        return NGX_OK;
    }

    loc = mcf->console_locations->elts;

    for (i = 0; i < mcf->console_locations->nelts; i++) {
        if (ngx_mt5_credit_console_check_one(cf, &loc[i]) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_mt5_credit_console_check_one(ngx_conf_t *cf,
    ngx_mt5_credit_console_loc_t *loc)
{
    ngx_str_t                   *var;
    ngx_mt5_credit_loc_conf_t   *lcf;

    lcf = loc->lcf;

    if (lcf->console_person == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"mt5_credit_console\" in %V:%ui needs "
                      "\"mt5_credit_console_person\": the variable that "
                      "holds the person's verified name ($remote_user with "
                      "auth_basic, a variable auth_request_set sets, or "
                      "$mt5_credit_client_cn)",
                      &lcf->console_file, lcf->console_line);
        return NGX_ERROR;
    }

    if (lcf->console_origins == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"mt5_credit_console\" in %V:%ui needs "
                      "\"mt5_credit_console_origin\": the origins whose "
                      "pages may send actions (https://desk.example.com)",
                      &lcf->console_file, lcf->console_line);
        return NGX_ERROR;
    }

    var = &lcf->console_person_var;

    if (var->len == sizeof("remote_user") - 1
        && ngx_strncmp(var->data, "remote_user", var->len) == 0)
    {
        return ngx_mt5_credit_console_check_basic(cf, loc);
    }

    if (var->len == ngx_mt5_credit_console_cn.len
        && ngx_strncmp(var->data, ngx_mt5_credit_console_cn.data, var->len)
           == 0)
    {
        return ngx_mt5_credit_console_check_cert(cf, loc);
    }

    return ngx_mt5_credit_console_check_sso(cf, loc);
}


/* $remote_user: auth_basic on here, a fixed realm, a user file, all */
static ngx_int_t
ngx_mt5_credit_console_check_basic(ngx_conf_t *cf,
    ngx_mt5_credit_console_loc_t *loc)
{
    const char                        *why;
    ngx_mt5_credit_loc_conf_t         *lcf;
    ngx_http_core_loc_conf_t          *clcf;
    ngx_mt5_credit_auth_basic_conf_t  *ab;

    lcf = loc->lcf;
    clcf = loc->loc_conf[ngx_http_core_module.ctx_index];
    ab = ngx_mt5_credit_console_conf_of(cf, loc->loc_conf,
                                        "ngx_http_auth_basic_module");
    why = NULL;

    if (ab == NULL || ab->realm == NULL || ab->user_file == NULL) {
        why = "no auth_basic verifies it in this location";

    } else if (ab->realm->lengths != NULL) {
        why = "auth_basic's realm is a variable, which can be \"off\"";

    } else if (ab->realm->value.len == 3
               && ngx_strncmp(ab->realm->value.data, "off", 3) == 0)
    {
        why = "auth_basic is off in this location";

    } else if (clcf->satisfy != NGX_HTTP_SATISFY_ALL) {
        why = "under \"satisfy any\" a request another rule lets in "
              "names its own user";
    }

    if (why != NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"mt5_credit_console_person $remote_user\" in "
                      "%V:%ui: nginx parses $remote_user from the request's "
                      "own Authorization header, and %s",
                      &lcf->console_person_file, lcf->console_person_line,
                      why);
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* $mt5_credit_client_cn: certificates verified in this server */
static ngx_int_t
ngx_mt5_credit_console_check_cert(ngx_conf_t *cf,
    ngx_mt5_credit_console_loc_t *loc)
{
#if (NGX_HTTP_SSL)
    ngx_http_ssl_srv_conf_t  *sscf;

    sscf = ngx_mt5_credit_console_conf_of(cf, loc->srv_conf,
                                          "ngx_http_ssl_module");

    if (sscf != NULL && sscf->verify == 1) {
        return NGX_OK;
    }
#endif

    ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                  "\"mt5_credit_console_person $mt5_credit_client_cn\" in "
                  "%V:%ui needs \"ssl_verify_client on\" in its server: "
                  "only a certificate nginx verified names a person",
                  &loc->lcf->console_person_file,
                  loc->lcf->console_person_line);

    return NGX_ERROR;
}


/* any other variable: what auth_request_set took from the SSO's answer */
static ngx_int_t
ngx_mt5_credit_console_check_sso(ngx_conf_t *cf,
    ngx_mt5_credit_console_loc_t *loc)
{
    ngx_int_t                            index;
    ngx_uint_t                           i;
    const char                          *why;
    ngx_mt5_credit_loc_conf_t           *lcf;
    ngx_http_core_loc_conf_t            *clcf;
    ngx_mt5_credit_auth_request_var_t   *av;
    ngx_mt5_credit_auth_request_conf_t  *ar;

    lcf = loc->lcf;
    clcf = loc->loc_conf[ngx_http_core_module.ctx_index];
    ar = ngx_mt5_credit_console_conf_of(cf, loc->loc_conf,
                                        "ngx_http_auth_request_module");

    index = ngx_http_get_variable_index(cf, &lcf->console_person_var);
    if (index == NGX_ERROR) {
        return NGX_ERROR;
    }

    why = "it is not set by auth_request_set in this location";

    if (ar != NULL && ar->uri.len != 0 && ar->vars != NULL) {
        av = ar->vars->elts;

        for (i = 0; i < ar->vars->nelts; i++) {
            if (av[i].index == index) {
                why = NULL;
                break;
            }
        }
    }

    if (why == NULL && clcf->satisfy != NGX_HTTP_SATISFY_ALL) {
        why = "under \"satisfy any\" a request another rule lets in is "
              "never asked of the SSO";
    }

    if (why != NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"mt5_credit_console_person $%V\" in %V:%ui is no "
                      "verified name: %s (a person comes from "
                      "auth_request_set, $remote_user with auth_basic, or "
                      "$mt5_credit_client_cn; never from a request header "
                      "or cookie)",
                      &lcf->console_person_var, &lcf->console_person_file,
                      lcf->console_person_line, why);
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* another module's configuration in confs, by the module's name */
static void *
ngx_mt5_credit_console_conf_of(ngx_conf_t *cf, void **confs,
    const char *module)
{
    ngx_uint_t  i;

    for (i = 0; cf->cycle->modules[i]; i++) {
        if (cf->cycle->modules[i]->type == NGX_HTTP_MODULE
            && ngx_strcmp(cf->cycle->modules[i]->name, module) == 0)
        {
            return confs[cf->cycle->modules[i]->ctx_index];
        }
    }

    return NULL;
}


ngx_int_t
ngx_mt5_credit_console_add_variables(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var;

    var = ngx_http_add_variable(cf, &ngx_mt5_credit_console_cn,
                                NGX_HTTP_VAR_NOCACHEABLE);
    if (var == NULL) {
        return NGX_ERROR;
    }

    var->get_handler = ngx_mt5_credit_console_client_cn;

    return NGX_OK;
}


/*
 * The CN of the client certificate nginx verified; not found without a
 * certificate, when its verification did not pass (ssl_verify_client
 * optional), or when its subject holds no CN, or more than one (which
 * would the person be?), or one with a control character.
 */
static ngx_int_t
ngx_mt5_credit_console_client_cn(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
#if (NGX_HTTP_SSL)
    int              i, n;
    X509            *cert;
    u_char          *utf8, *p;
    X509_NAME       *subject;
    ngx_ssl_conn_t  *ssl;

    v->not_found = 1;

    if (r->connection->ssl == NULL) {
        return NGX_OK;
    }

    ssl = r->connection->ssl->connection;

    if (SSL_get_verify_result(ssl) != X509_V_OK) {
        return NGX_OK;
    }

    cert = SSL_get_peer_certificate(ssl);
    if (cert == NULL) {
        return NGX_OK;
    }

    subject = X509_get_subject_name(cert);
    i = (subject != NULL)
        ? X509_NAME_get_index_by_NID(subject, NID_commonName, -1) : -1;

    if (i < 0 || X509_NAME_get_index_by_NID(subject, NID_commonName, i) >= 0)
    {
        X509_free(cert);
        return NGX_OK;
    }

    utf8 = NULL;
    n = ASN1_STRING_to_UTF8(&utf8,
            X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i)));
    X509_free(cert);

    if (n <= 0) {
        OPENSSL_free(utf8);
        return NGX_OK;
    }

    for (i = 0; i < n; i++) {
        if (utf8[i] < 0x20 || utf8[i] == 0x7f) {
            OPENSSL_free(utf8);
            return NGX_OK;
        }
    }

    p = ngx_pnalloc(r->pool, n);
    if (p == NULL) {
        OPENSSL_free(utf8);
        return NGX_ERROR;
    }

    ngx_memcpy(p, utf8, n);
    OPENSSL_free(utf8);

    v->data = p;
    v->len = n;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;
#else
    v->not_found = 1;
#endif

    return NGX_OK;
}
