/*
 * Copyright (C) mt5-credit
 */


#include <stdio.h>
#include <string.h>

#include "mc_log.h"
#include "mc_sender.h"


int
mc_sender_call(mc_sender_t *s, const char *who, const char *what,
    const char *sql, int n, const char **params, char *out, size_t outlen)
{
    PGresult  *res;

    res = PQexecParams(s->conn, sql, n, NULL, params, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        /* no result at all (a lost connection) has no message of its own */
        mc_log(MC_LOG_ERROR, "%s: %s: %s", who, what,
               res != NULL && PQresultErrorMessage(res)[0] != '\0'
               ? PQresultErrorMessage(res) : PQerrorMessage(s->conn));
        PQclear(res);
        return -1;
    }

    if (out != NULL) {
        snprintf(out, outlen, "%s", PQgetvalue(res, 0, 0));
    }

    PQclear(res);
    return 0;
}


char *
mc_sender_detail(json_t *o)
{
    char  *text;

    text = o != NULL ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);

    return text;
}


int
mc_sender_error_code(const mc_papi_answer_t *a, char *code, size_t codelen,
    char *msg, size_t msglen)
{
    json_t      *doc, *err;
    const char  *type, *c, *m;

    code[0] = '\0';
    msg[0] = '\0';
    doc = json_loadb(a->data != NULL ? a->data : "", a->len, 0, NULL);
    err = json_object_get(doc, "error");
    type = json_string_value(json_object_get(err, "type"));
    c = json_string_value(json_object_get(err, "code"));
    m = json_string_value(json_object_get(err, "message"));

    if (type == NULL) {
        json_decref(doc);
        return -1;
    }

    snprintf(msg, msglen, "%s", m != NULL ? m : "");
    /* an idempotency error is never a decline: the type says it */
    snprintf(code, codelen, "%s",
             strcmp(type, "idempotency_error") == 0 ? type
             : c != NULL ? c : type);
    json_decref(doc);
    return 0;
}


mc_sent_e
mc_sender_sent(const mc_papi_answer_t *a, char *code, size_t codelen,
    char *msg, size_t msglen)
{
    code[0] = '\0';

    if (a->rc != CURLE_OK && !a->sent) {
        snprintf(msg, msglen, "%s", curl_easy_strerror(a->rc));
        return MC_SENT_NOT;
    }

    if (a->rc != CURLE_OK) {
        snprintf(msg, msglen, "%s", curl_easy_strerror(a->rc));
        return MC_SENT_UNKNOWN;
    }

    if (a->status == 200 || a->status == 201) {
        msg[0] = '\0';
        return MC_SENT_OBJECT;
    }

    if (a->status >= 400 && a->status < 500 && a->status != 409
        && a->status != 429)
    {
        if (mc_sender_error_code(a, code, codelen, msg, msglen) != 0) {
            snprintf(msg, msglen, "an error answer without a reason");
            return MC_SENT_UNKNOWN;
        }

        if (strcmp(code, "idempotency_error") == 0) {
            snprintf(msg, msglen, "the idempotency key was refused");
            return MC_SENT_UNKNOWN;
        }

        return MC_SENT_DECLINED;
    }

    snprintf(msg, msglen, "HTTP %ld", a->status);
    return MC_SENT_UNKNOWN;
}


/*
 * Made by this deployment (036): its metadata names our tag, or no tag
 * when it was made before there was one.  Another database's withdrawal
 * 5 has our references too.
 */
int
mc_sender_same_deployment(const char *tag, json_t *o)
{
    const char  *theirs;

    theirs = json_string_value(json_object_get(json_object_get(o, "metadata"),
                                               "mt5credit_deployment"));

    return theirs != NULL ? strcmp(theirs, tag) == 0 : tag[0] == '\0';
}
