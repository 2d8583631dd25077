/*
 * Copyright (C) mt5-credit
 */


#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "mc_pgconn.h"
#include "mc_retention.h"


static int mc_retention_bodies(const char *conninfo, int days);
static int mc_retention_reports(const char *dir, int days);
static int mc_retention_is_report(const char *name);
static int mc_retention_days(const char *v, int *out);


static void
mc_retention_usage(FILE *f)
{
    fprintf(f,
"usage: mt5credit retention [--days N] [--reports DIR] [--report-days N]\n"
"\n"
"  --days N          webhook bodies received more than N days ago (90 to\n"
"                    3650; default 400) are emptied, their digests kept,\n"
"                    unless an open case or an unfinished credit needs them;\n"
"                    so are malformed deliveries' last delivered before;\n"
"                    the payer's name kept on an emptied event's credit\n"
"                    is erased\n"
"  --reports DIR     reconciliation reports (recon-*-run<id>.csv|html)\n"
"                    older than --report-days are removed (default:\n"
"                    recon_out of the configuration)\n"
"  --report-days N   default 400\n"
"\n"
"It logs in as --database, desk_database in the config, or PG*: a member\n"
"of mt5credit_retention.  Exit 0 done, 1 failed, 2 a usage error.\n");
}


int
mc_retention_main(int argc, char **argv, const char *conninfo,
    const char *reports)
{
    int   c, days, report_days, rc;

    static struct option  opts[] = {
        { "days", required_argument, NULL, 'd' },
        { "reports", required_argument, NULL, 'r' },
        { "report-days", required_argument, NULL, 'k' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };

    days = 400;
    report_days = 400;
    optind = 1;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {

        case 'd':
        case 'k':
            if (mc_retention_days(optarg, c == 'd' ? &days : &report_days)
                != 0)
            {
                fprintf(stderr, "mt5credit retention: --%s \"%s\": a "
                        "number of days\n",
                        c == 'd' ? "days" : "report-days", optarg);
                return 2;
            }
            break;

        case 'r':
            reports = optarg;
            break;

        case 'h':
            mc_retention_usage(stdout);
            return 0;

        default:
            mc_retention_usage(stderr);
            return 2;
        }
    }

    if (optind != argc) {
        mc_retention_usage(stderr);
        return 2;
    }

    rc = mc_retention_bodies(conninfo, days);

    if (rc == 0 && reports != NULL && reports[0] != '\0') {
        rc = mc_retention_reports(reports, report_days);
    }

    return rc;
}


/* the database's part: retention_redact(), which checks the days too */
static int
mc_retention_bodies(const char *conninfo, int days)
{
    char         d[16];
    PGconn      *conn;
    PGresult    *res;
    const char  *params[1];

    conn = mc_pgconn_connect(conninfo != NULL ? conninfo : "");
    if (PQstatus(conn) != CONNECTION_OK) {
        fprintf(stderr, "mt5credit retention: %s", PQerrorMessage(conn));
        PQfinish(conn);
        return 1;
    }

    snprintf(d, sizeof(d), "%d", days);
    params[0] = d;

    res = PQexecParams(conn, "SELECT redacted, held_by_cases, conflicts, "
                       "malformed, names_erased "
                       "FROM mt5credit.retention_redact($1)", 1, NULL,
                       params, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        fprintf(stderr, "mt5credit retention: %s",
                PQresultErrorMessage(res));
        PQclear(res);
        PQfinish(conn);
        return 1;
    }

    printf("retention: %s webhook bodies older than %d days emptied (their "
           "digests kept), %s kept for open cases, %s conflicting bodies "
           "and %s malformed deliveries emptied, %s payers' names erased\n",
           PQgetvalue(res, 0, 0), days, PQgetvalue(res, 0, 1),
           PQgetvalue(res, 0, 2), PQgetvalue(res, 0, 3),
           PQgetvalue(res, 0, 4));

    PQclear(res);
    PQfinish(conn);

    return 0;
}


/* the reports' part: files of the report writer's names, by age */
static int
mc_retention_reports(const char *dir, int days)
{
    int             removed, failed;
    char            path[1024];
    DIR            *d;
    time_t          before;
    struct stat     st;
    struct dirent  *e;

    d = opendir(dir);
    if (d == NULL) {
        fprintf(stderr, "mt5credit retention: reports %s: %s\n", dir,
                strerror(errno));
        return 1;
    }

    before = time(NULL) - (time_t) days * 86400;
    removed = 0;
    failed = 0;

    while ((e = readdir(d)) != NULL) {
        if (!mc_retention_is_report(e->d_name)) {
            continue;
        }

        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);

        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)
            || st.st_mtime >= before)
        {
            continue;
        }

        if (unlink(path) != 0) {
            fprintf(stderr, "mt5credit retention: %s: %s\n", path,
                    strerror(errno));
            failed++;
            continue;
        }

        removed++;
    }

    closedir(d);

    printf("retention: %d reports older than %d days removed from %s\n",
           removed, days, dir);

    return failed ? 1 : 0;
}


/* recon-<...>-run<digits>.csv or .html, as mc_recon_report.c names them */
static int
mc_retention_is_report(const char *name)
{
    size_t       len;
    const char  *run, *p;

    len = strlen(name);

    if (strncmp(name, "recon-", 6) != 0 || name[0] == '.') {
        return 0;
    }

    if (len > 4 && strcmp(name + len - 4, ".csv") == 0) {
        len -= 4;
    } else if (len > 5 && strcmp(name + len - 5, ".html") == 0) {
        len -= 5;
    } else {
        return 0;
    }

    run = NULL;
    for (p = name; (p = strstr(p, "-run")) != NULL && p < name + len; p++) {
        run = p + 4;
    }

    if (run == NULL || run >= name + len) {
        return 0;
    }

    for (p = run; p < name + len; p++) {
        if (*p < '0' || *p > '9') {
            return 0;
        }
    }

    return 1;
}


static int
mc_retention_days(const char *v, int *out)
{
    char  *end;
    long   n;

    errno = 0;
    n = strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || n < 0 || n > 36500) {
        return -1;
    }

    *out = (int) n;
    return 0;
}
