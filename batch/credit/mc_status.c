/*
 * Copyright (C) mt5-credit
 *
 * `mt5credit status`: work_status() (sql/050 holds it), the active pauses
 * (sql/046) and reconciliation's freshness (sql/048), as a table or in
 * Prometheus' text format (a textfile collector, or a scrape through any
 * exporter that runs a command).
 */


#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "mc_pgconn.h"
#include "mc_status.h"
#include "mc_textfile.h"
#include "mc_version.h"


/* a work_status() metric and how Prometheus names it */
typedef struct {
    const char  *metric;
    const char  *name;
    const char  *family;    /* HELP and TYPE are printed for it */
    const char  *type;      /* NULL: the family's line was printed */
    const char  *help;
    const char  *label1;    /* for the kind column; NULL: none */
    const char  *label2;    /* for the status column; NULL: none */
} mc_status_metric_t;


static const mc_status_metric_t  mc_status_metrics[] = {
    { "credits", "mt5credit_credits", "mt5credit_credits", "gauge",
      "Credit intents by kind and status.", "kind", "status" },
    { "done_total", "mt5credit_credits_done_total",
      "mt5credit_credits_done_total", "counter",
      "Credits whose deal was recorded, by kind, counted once each as "
      "they became done.", "kind", NULL },
    { "holds", "mt5credit_holds", "mt5credit_holds", "gauge",
      "Deposit credits a risk rule held, by the rule (a credit under each "
      "rule it tripped) and their status now.", "rule", "status" },
    { "latency_bucket", "mt5credit_credit_latency_seconds_bucket",
      "mt5credit_credit_latency_seconds", "histogram",
      "Seconds from a credit's intent to its recorded deal, every credit "
      "counted once as it became done.", NULL, "le" },
    { "latency_count", "mt5credit_credit_latency_seconds_count", NULL, NULL,
      NULL, NULL, NULL },
    { "latency_sum", "mt5credit_credit_latency_seconds_sum", NULL, NULL,
      NULL, NULL, NULL },
    { "oldest_age_seconds", "mt5credit_oldest_age_seconds",
      "mt5credit_oldest_age_seconds", "gauge",
      "Age of the oldest credit in a status still open.", NULL, "status" },
    { "open_cases", "mt5credit_open_cases", "mt5credit_open_cases", "gauge",
      "Cases not yet resolved, by kind and severity.", "kind", "severity" },
    { "payout_oldest_age_seconds", "mt5credit_payout_oldest_age_seconds",
      "mt5credit_payout_oldest_age_seconds", "gauge",
      "Age of the oldest payout in a status still open.", NULL, "status" },
    { "payouts", "mt5credit_payouts", "mt5credit_payouts", "gauge",
      "Payouts of withdrawals by status.", NULL, "status" },
    { "refund_oldest_age_seconds", "mt5credit_refund_oldest_age_seconds",
      "mt5credit_refund_oldest_age_seconds", "gauge",
      "Age of the oldest refund leg in a status still open.", NULL,
      "status" },
    { "refunds", "mt5credit_refunds", "mt5credit_refunds", "gauge",
      "Refund legs of withdrawals by status.", NULL, "status" },
    { "withdrawal_holds", "mt5credit_withdrawal_holds",
      "mt5credit_withdrawal_holds", "gauge",
      "Withdrawals a risk rule held, by the rule (a withdrawal under each "
      "rule of each of its holds) and their status now.", "rule", "status" },
    { "withdrawal_oldest_age_seconds",
      "mt5credit_withdrawal_oldest_age_seconds",
      "mt5credit_withdrawal_oldest_age_seconds", "gauge",
      "Seconds since the oldest withdrawal waiting for people (requested, "
      "prepared, held) entered its status.", NULL, "status" },
    { NULL, NULL, NULL, NULL, NULL, NULL, NULL }
};


static void mc_status_prometheus(FILE *out, const char *metric,
    const char *kind, const char *status, const char *value);
static int mc_status_pauses(PGconn *conn, int prometheus, FILE *out);
static void mc_status_families(FILE *out, PGresult *res);
static int mc_status_recon(PGconn *conn, int prometheus, FILE *out);


int
mc_status_print(const char *conninfo, int prometheus, FILE *out)
{
    int          i, rows;
    PGconn      *conn;
    PGresult    *res;
    const char  *metric, *kind, *status, *value;

    conn = mc_pgconn_connect(conninfo);

    if (PQstatus(conn) != CONNECTION_OK) {
        fprintf(stderr, "mt5credit: %s", PQerrorMessage(conn));
        PQfinish(conn);
        return 1;
    }

    /* whole numbers as integers; the latency sum to the millisecond */
    res = PQexec(conn, "SELECT metric, coalesce(kind, ''), "
                       "coalesce(status, ''), "
                       "CASE WHEN value = round(value) "
                       "THEN round(value::numeric)::text "
                       "ELSE round(value::numeric, 3)::text END "
                       "FROM mt5credit.work_status() "
                       "ORDER BY 1, 2, CASE WHEN status ~ '^[0-9.]+$' "
                       "THEN status::numeric END NULLS LAST, 3");

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        fprintf(stderr, "mt5credit: %s", PQresultErrorMessage(res));
        PQclear(res);
        PQfinish(conn);
        return 1;
    }

    rows = PQntuples(res);

    /* which program read it: an old binary on one host shows */
    if (prometheus) {
        fprintf(out, "# HELP mt5credit_build_info The version of mt5credit "
                "and the commit it was built from.\n"
                "# TYPE mt5credit_build_info gauge\n"
                "mt5credit_build_info{version=\"%s\",commit=\"%s\"} 1\n",
                mc_version, mc_commit);

    } else {
        fprintf(out, "mt5credit %s (commit %s)\n\n", mc_version, mc_commit);
        fprintf(out, "%-26s %-22s %-10s %12s\n", "metric", "kind",
                "status", "value");
    }

    for (i = 0; i < rows; i++) {
        metric = PQgetvalue(res, i, 0);
        kind = PQgetvalue(res, i, 1);
        status = PQgetvalue(res, i, 2);
        value = PQgetvalue(res, i, 3);

        if (prometheus) {
            /* HELP and TYPE once per family, before its first sample */
            if (i == 0 || strcmp(metric, PQgetvalue(res, i - 1, 0)) != 0) {
                mc_status_prometheus(out, metric, NULL, NULL, NULL);
            }

            mc_status_prometheus(out, metric, kind, status, value);
            continue;
        }

        fprintf(out, "%-26s %-22s %-10s %12s\n", metric,
                kind[0] ? kind : "-", status[0] ? status : "-", value);
    }

    /* a family with no sample now is still declared: an alert on it
       must find its name, and a dashboard its type */
    if (prometheus) {
        mc_status_families(out, res);
    }

    PQclear(res);

    if (mc_status_pauses(conn, prometheus, out) != 0
        || mc_status_recon(conn, prometheus, out) != 0)
    {
        PQfinish(conn);
        return 1;
    }

    PQfinish(conn);

    /* written last, by a run that read everything: a textfile whose
       timer stopped keeps its old stamp, and the staleness alert sees it */
    if (prometheus) {
        fprintf(out, "# HELP mt5credit_status_timestamp_seconds When these "
                "figures were read from the database.\n"
                "# TYPE mt5credit_status_timestamp_seconds gauge\n"
                "mt5credit_status_timestamp_seconds %lld\n",
                (long long) time(NULL));
    }

    return 0;
}


/*
 * The active pauses (sql/046): who stopped what, since when and why, and
 * how much each holds.  Their targets are names the schema checked
 * ([A-Za-z0-9_.-]), safe as label values.
 */
static int
mc_status_pauses(PGconn *conn, int prometheus, FILE *out)
{
    int          i, n;
    PGresult    *res;

    res = PQexec(conn, "SELECT scope, target, held, paused_by, "
                       "to_char(paused_at AT TIME ZONE 'UTC', "
                       "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), reason "
                       "FROM mt5credit.pause_list(false) "
                       "ORDER BY scope, target");

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        fprintf(stderr, "mt5credit: status: pauses: %s",
                PQresultErrorMessage(res));
        PQclear(res);
        return 1;
    }

    n = PQntuples(res);

    if (prometheus) {
        fprintf(out, "# HELP mt5credit_pause_active Crediting paused by a "
                "person (mt5credit pause), per scope and target.\n"
                "# TYPE mt5credit_pause_active gauge\n");
        for (i = 0; i < n; i++) {
            fprintf(out, "mt5credit_pause_active{scope=\"%s\",target=\"%s\"}"
                    " 1\n", PQgetvalue(res, i, 0), PQgetvalue(res, i, 1));
        }

        fprintf(out, "# HELP mt5credit_pause_held Pending credits, refund "
                "legs and payouts a pause holds back.\n"
                "# TYPE mt5credit_pause_held gauge\n");
        for (i = 0; i < n; i++) {
            fprintf(out, "mt5credit_pause_held{scope=\"%s\",target=\"%s\"}"
                    " %s\n", PQgetvalue(res, i, 0), PQgetvalue(res, i, 1),
                    PQgetvalue(res, i, 2));
        }

    } else {
        fprintf(out, "\npaused: %d\n", n);
        for (i = 0; i < n; i++) {
            fprintf(out, "  %s %s since %s by %s, holding %s: %s\n",
                    PQgetvalue(res, i, 0), PQgetvalue(res, i, 1),
                    PQgetvalue(res, i, 4), PQgetvalue(res, i, 3),
                    PQgetvalue(res, i, 2), PQgetvalue(res, i, 5));
        }
    }

    PQclear(res);
    return 0;
}


/* HELP and TYPE of each family that had no sample in res */
static void
mc_status_families(FILE *out, PGresult *res)
{
    int                        i, rows, seen;
    const mc_status_metric_t  *m;

    rows = PQntuples(res);

    for (m = mc_status_metrics; m->metric != NULL; m++) {
        if (m->type == NULL) {
            continue;               /* a histogram's _count and _sum */
        }

        seen = 0;
        for (i = 0; i < rows && !seen; i++) {
            seen = strcmp(PQgetvalue(res, i, 0), m->metric) == 0;
        }

        if (!seen) {
            fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", m->family, m->help,
                    m->family, m->type);
        }
    }
}


/* value NULL: the family's HELP and TYPE; else one sample */
static void
mc_status_prometheus(FILE *out, const char *metric, const char *kind,
    const char *status, const char *value)
{
    const mc_status_metric_t  *m;

    for (m = mc_status_metrics; m->metric != NULL; m++) {
        if (strcmp(m->metric, metric) == 0) {
            break;
        }
    }

    if (m->metric == NULL) {
        return;                     /* a newer schema's metric: skipped */
    }

    if (value == NULL) {
        if (m->type != NULL) {
            fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", m->family, m->help,
                    m->family, m->type);
        }
        return;
    }

    fputs(m->name, out);

    if (m->label1 != NULL && m->label2 != NULL) {
        fprintf(out, "{%s=\"%s\",%s=\"%s\"}", m->label1, kind, m->label2,
                status);

    } else if (m->label2 != NULL) {
        fprintf(out, "{%s=\"%s\"}", m->label2, status);

    } else if (m->label1 != NULL) {
        fprintf(out, "{%s=\"%s\"}", m->label1, kind);
    }

    fprintf(out, " %s\n", value);
}


/*
 * How fresh reconciliation is (sql/048), per provider and currency: the
 * last business day compared, when, and the last run's time and verdict.
 * Providers and currencies are names the schema checked.
 */
static int
mc_status_recon(PGconn *conn, int prometheus, FILE *out)
{
    int          i, n;
    PGresult    *res;
    const char  *prov, *cur;

    res = PQexec(conn, "SELECT provider, currency, "
                       "coalesce(last_day::text, ''), "
                       "coalesce(extract(epoch FROM last_day_start)::bigint"
                       "::text, ''), "
                       "coalesce(extract(epoch FROM last_success_at)::bigint"
                       "::text, ''), coalesce(last_run_verdict, ''), "
                       "coalesce(last_run_seconds::text, '') "
                       "FROM mt5credit.recon_freshness()");

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        fprintf(stderr, "mt5credit: status: reconciliation: %s",
                PQresultErrorMessage(res));
        PQclear(res);
        return 1;
    }

    n = PQntuples(res);

    if (!prometheus) {
        fprintf(out, "\nreconciled: %d provider and currency pair%s\n", n,
                n == 1 ? "" : "s");
        for (i = 0; i < n; i++) {
            fprintf(out, "  %s %s: last day %s; last run %s in %s s\n",
                    PQgetvalue(res, i, 0), PQgetvalue(res, i, 1),
                    PQgetvalue(res, i, 2)[0] ? PQgetvalue(res, i, 2)
                                             : "none complete",
                    PQgetvalue(res, i, 5)[0] ? PQgetvalue(res, i, 5) : "-",
                    PQgetvalue(res, i, 6)[0] ? PQgetvalue(res, i, 6) : "-");
        }
        PQclear(res);
        return 0;
    }

    fprintf(out, "# HELP mt5credit_recon_last_success_timestamp_seconds When "
            "the last complete reconciliation run finished.\n"
            "# TYPE mt5credit_recon_last_success_timestamp_seconds gauge\n");
    for (i = 0; i < n; i++) {
        if (PQgetvalue(res, i, 4)[0]) {
            prov = PQgetvalue(res, i, 0);
            cur = PQgetvalue(res, i, 1);
            fprintf(out, "mt5credit_recon_last_success_timestamp_seconds"
                    "{provider=\"%s\",currency=\"%s\"} %s\n", prov, cur,
                    PQgetvalue(res, i, 4));
        }
    }

    fprintf(out, "# HELP mt5credit_recon_last_day_timestamp_seconds The "
            "start of the last business day a run compared completely.\n"
            "# TYPE mt5credit_recon_last_day_timestamp_seconds gauge\n");
    for (i = 0; i < n; i++) {
        if (PQgetvalue(res, i, 3)[0]) {
            fprintf(out, "mt5credit_recon_last_day_timestamp_seconds"
                    "{provider=\"%s\",currency=\"%s\"} %s\n",
                    PQgetvalue(res, i, 0), PQgetvalue(res, i, 1),
                    PQgetvalue(res, i, 3));
        }
    }

    fprintf(out, "# HELP mt5credit_recon_last_run_duration_seconds How long "
            "the last finished run took, with its verdict.\n"
            "# TYPE mt5credit_recon_last_run_duration_seconds gauge\n");
    for (i = 0; i < n; i++) {
        if (PQgetvalue(res, i, 6)[0]) {
            fprintf(out, "mt5credit_recon_last_run_duration_seconds"
                    "{provider=\"%s\",currency=\"%s\",verdict=\"%s\"} %s\n",
                    PQgetvalue(res, i, 0), PQgetvalue(res, i, 1),
                    PQgetvalue(res, i, 5), PQgetvalue(res, i, 6));
        }
    }

    PQclear(res);
    return 0;
}


int
mc_status_textfile(const char *conninfo, const char *path)
{
    int    rc;
    char   tmp[1024];
    FILE  *f;

    f = mc_textfile_open(path, tmp, sizeof(tmp));
    if (f == NULL) {
        fprintf(stderr, "mt5credit: status: %s: %s\n", path, strerror(errno));
        return 1;
    }

    rc = mc_status_print(conninfo, 1, f);

    if (rc != 0) {
        fclose(f);
        (void) unlink(tmp);
        return rc;
    }

    if (mc_textfile_commit(f, tmp, path) != 0) {
        fprintf(stderr, "mt5credit: status: %s: %s\n", path, strerror(errno));
        return 1;
    }

    return 0;
}
