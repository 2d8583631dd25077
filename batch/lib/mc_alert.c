/*
 * Copyright (C) mt5-credit
 */


#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "mc_alert.h"
#include "mc_log.h"


#define MC_ALERT_WAIT_MS  5000


static void mc_alert_command(const char *command, const char *kind,
    int64_t credit_id, const char *message);
static void mc_alert_post(const char *url, const char *worker,
    const char *kind, int64_t credit_id, const char *message);


void
mc_alert(const mc_alert_config_t *cfg, const char *kind, int64_t credit_id,
    const char *fmt, ...)
{
    char     message[1024];
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);

    mc_log(MC_LOG_ALERT, "alert=%s credit=%" PRId64 ": %s", kind, credit_id,
           message);

    if (cfg->command != NULL && cfg->command[0] != '\0') {
        mc_alert_command(cfg->command, kind, credit_id, message);
    }

    if (cfg->url != NULL && cfg->url[0] != '\0') {
        mc_alert_post(cfg->url, cfg->worker, kind, credit_id, message);
    }
}


/*
 * The command runs through /bin/sh with the alert in its environment, not
 * in its arguments: nothing from an MT5 answer is ever parsed by a shell.
 */

static void
mc_alert_command(const char *command, const char *kind, int64_t credit_id,
    const char *message)
{
    int              status, waited;
    char             id[24];
    pid_t            pid;
    struct timespec  ts = { 0, 50 * 1000000 };

    snprintf(id, sizeof(id), "%" PRId64, credit_id);

    pid = fork();

    if (pid < 0) {
        mc_log(MC_LOG_ERROR, "alert_command: fork failed");
        return;
    }

    if (pid == 0) {
        setenv("MT5CREDIT_ALERT_KIND", kind, 1);
        setenv("MT5CREDIT_ALERT_CREDIT", id, 1);
        setenv("MT5CREDIT_ALERT_MESSAGE", message, 1);
        execl("/bin/sh", "sh", "-c", command, (char *) NULL);
        _exit(127);
    }

    for (waited = 0; waited < MC_ALERT_WAIT_MS; waited += 50) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                mc_log(MC_LOG_ERROR, "alert_command exited with status %d",
                       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
            }
            return;
        }

        nanosleep(&ts, NULL);
    }

    mc_log(MC_LOG_ERROR, "alert_command still running after %d ms; "
           "killed", MC_ALERT_WAIT_MS);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
}


static void
mc_alert_post(const char *url, const char *worker, const char *kind,
    int64_t credit_id, const char *message)
{
    char               *body;
    CURL               *curl;
    json_t             *j;
    CURLcode            rc;
    struct curl_slist  *headers;

    j = json_pack("{s:s, s:s, s:I, s:s}", "worker", worker, "kind", kind,
                  "credit", (json_int_t) credit_id, "message", message);
    body = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);

    curl = curl_easy_init();

    if (body == NULL || curl == NULL) {
        free(body);
        if (curl) {
            curl_easy_cleanup(curl);
        }
        return;
    }

    headers = curl_slist_append(NULL, "Content-Type: application/json");

    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long) MC_ALERT_WAIT_MS);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);

    rc = curl_easy_perform(curl);

    if (rc != CURLE_OK) {
        mc_log(MC_LOG_ERROR, "alert_url: %s", curl_easy_strerror(rc));
    }

    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    free(body);
}
