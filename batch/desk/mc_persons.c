/*
 * Copyright (C) mt5-credit
 */


#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>
#include <png.h>
#include <qrencode.h>

#include "mc_identities.h"
#include "mc_persons.h"
#include "mc_pgconn.h"


/* a module of the QR code: 8 pixels in the PNG; 4 modules of margin (the
   quiet zone the standard asks for) */
#define MC_PERSONS_PNG_SCALE  8
#define MC_PERSONS_QUIET      4


static int mc_persons_enrol(PGconn *conn, const char *action,
    const char *person, const char *qr);
static int mc_persons_list(PGconn *conn);
static void mc_persons_qr_terminal(const QRcode *qr, FILE *f);
static int mc_persons_qr_png(const QRcode *qr, const char *path);
static int mc_persons_module(const QRcode *qr, int x, int y);


void
mc_persons_usage(FILE *f)
{
    fprintf(f,
"usage: mt5credit persons enrol PERSON [--qr FILE.png]\n"
"       mt5credit persons reset PERSON [--qr FILE.png]\n"
"       mt5credit persons list\n"
"       mt5credit persons map NAME PERSON | unmap NAME | names\n"
"\n"
"  enrol PERSON\n"
"        makes PERSON's second factor (TOTP: an authenticator app's\n"
"        6-digit codes), which the console asks for before every decision\n"
"        that moves money; prints its otpauth:// URI once, and a QR code\n"
"        when the output is a terminal\n"
"  reset PERSON\n"
"        a new secret for PERSON (a lost or changed phone): the old app's\n"
"        codes stop working\n"
"  --qr FILE.png\n"
"        the QR code as a PNG file too, made new and readable by you only\n"
"  list\n"
"        who has a second factor, since when, enrolled by whom, and their\n"
"        tries left (five; a wrong code spends one, one comes back every\n"
"        15 minutes)\n"
"  map NAME PERSON\n"
"        the console's identity source calls PERSON NAME (a basic-auth\n"
"        user, an SSO id, a certificate's CN): every name a human is\n"
"        known by maps to their one person, so two names are never two\n"
"        people; a name with no mapping is nobody\n"
"  unmap NAME\n"
"        NAME is nobody from now (an account gone)\n"
"  names\n"
"        every name, its person, who mapped it and when\n"
"\n"
"Run it at your own login, never through the console's: a person admin\n"
"(a member of mt5credit_person_admin) may enrol anyone, a person only\n"
"themselves.  The URI is the secret: give it to PERSON alone, keep no\n"
"copy (delete the PNG once scanned); PERSON may reset it themselves.\n");
}


int
mc_persons_main(int argc, char **argv, const char *conninfo)
{
    int          c, rc;
    PGconn      *conn;
    PGresult    *res;
    const char  *action, *person, *qr;

    static struct option  opts[] = {
        { "qr", required_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };

    qr = NULL;
    optind = 1;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'q':
            qr = optarg;
            break;

        case 'h':
            mc_persons_usage(stdout);
            return 0;

        default:
            fprintf(stderr, "Try \"mt5credit persons --help\".\n");
            return 2;
        }
    }

    action = optind < argc ? argv[optind] : NULL;
    person = optind + 1 < argc ? argv[optind + 1] : NULL;

    if (action != NULL && mc_identities_is_action(action)) {
        if (qr != NULL) {
            fprintf(stderr, "mt5credit: persons %s takes no --qr\n", action);
            return 2;
        }

    } else if (action != NULL && strcmp(action, "list") == 0) {
        if (person != NULL || qr != NULL) {
            fprintf(stderr, "mt5credit: persons list takes no %s\n",
                    qr != NULL ? "--qr" : "operand");
            return 2;
        }

    } else if (action == NULL
               || (strcmp(action, "enrol") != 0
                   && strcmp(action, "reset") != 0))
    {
        fprintf(stderr, "mt5credit: persons: enrol, reset, list, map, "
                "unmap or names?\n"
                "Try \"mt5credit persons --help\".\n");
        return 2;

    } else if (person == NULL || person[0] == '\0' || optind + 2 != argc) {
        fprintf(stderr, "mt5credit: persons %s: name one person (their "
                "database role)\n", action);
        return 2;
    }

    conn = mc_pgconn_connect(conninfo != NULL ? conninfo : "");
    if (PQstatus(conn) != CONNECTION_OK) {
        fprintf(stderr, "mt5credit: persons: database: %s",
                PQerrorMessage(conn));
        PQfinish(conn);
        return 1;
    }

    res = PQexec(conn, "SET application_name = 'mt5credit persons'");
    PQclear(res);

    if (mc_identities_is_action(action)) {
        rc = mc_identities_run(conn, action, argv + optind + 1,
                               argc - optind - 1);

    } else if (strcmp(action, "list") == 0) {
        rc = mc_persons_list(conn);
    } else {
        rc = mc_persons_enrol(conn, action, person, qr);
    }

    PQfinish(conn);
    return rc;
}


static int
mc_persons_enrol(PGconn *conn, const char *action, const char *person,
    const char *qr)
{
    int          rc;
    QRcode      *code;
    PGresult    *res;
    const char  *uri, *msg, *p[1] = { person };

    res = PQexecParams(conn, strcmp(action, "enrol") == 0
                             ? "SELECT mt5credit.person_totp_enrol($1)"
                             : "SELECT mt5credit.person_totp_reset($1)",
                       1, NULL, p, NULL, NULL, 0);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
        fprintf(stderr, "mt5credit: persons %s %s: refused: %s\n", action,
                person, msg != NULL ? msg : PQresultErrorMessage(res));
        PQclear(res);
        return 1;
    }

    /* committed: from here the secret exists, and this is its one copy */
    uri = PQgetvalue(res, 0, 0);
    rc = 0;

    code = QRcode_encodeString(uri, 0, QR_ECLEVEL_M, QR_MODE_8, 1);
    if (code == NULL) {
        fprintf(stderr, "mt5credit: persons %s %s: no QR code: %s (the URI "
                "below works typed in)\n", action, person, strerror(errno));
        rc = 1;

    } else {
        if (isatty(STDOUT_FILENO)) {
            mc_persons_qr_terminal(code, stdout);
        }

        if (qr != NULL && mc_persons_qr_png(code, qr) != 0) {
            rc = 1;
        }

        QRcode_free(code);
    }

    printf("%s %s: scan the QR code, or enter this URI, in %s's "
           "authenticator app:\n%s\n", person,
           strcmp(action, "enrol") == 0 ? "enrolled" : "reset", person, uri);
    fprintf(stderr, "mt5credit: the URI is %s's secret: give it to them "
            "alone, keep no copy%s\n", person,
            qr != NULL ? " (delete the PNG once scanned)" : "");

    PQclear(res);
    return rc;
}


static int
mc_persons_list(PGconn *conn)
{
    int        i, n;
    PGresult  *res;

    res = PQexec(conn,
        "SELECT person, enrolled_by, "
        "to_char(enrolled_at AT TIME ZONE 'UTC', "
        "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), tries_left, "
        "coalesce(to_char(locked_until AT TIME ZONE 'UTC', "
        "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), '') "
        "FROM mt5credit.person_totp_list()");

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        fprintf(stderr, "mt5credit: persons list: %s",
                PQresultErrorMessage(res));
        PQclear(res);
        return 1;
    }

    n = PQntuples(res);
    printf("%-20s %-16s %-20s %s\n", "person", "enrolled by", "since",
           "tries left");

    for (i = 0; i < n; i++) {
        printf("%-20s %-16s %-20s %s%s%s\n", PQgetvalue(res, i, 0),
               PQgetvalue(res, i, 1), PQgetvalue(res, i, 2),
               PQgetvalue(res, i, 3),
               PQgetvalue(res, i, 4)[0] ? ", locked until " : "",
               PQgetvalue(res, i, 4));
    }

    printf("(%d person%s with a second factor)\n", n, n == 1 ? "" : "s");
    PQclear(res);
    return 0;
}


/* 1: dark; the quiet zone around the symbol is light */
static int
mc_persons_module(const QRcode *qr, int x, int y)
{
    x -= MC_PERSONS_QUIET;
    y -= MC_PERSONS_QUIET;

    if (x < 0 || y < 0 || x >= qr->width || y >= qr->width) {
        return 0;
    }

    return qr->data[y * qr->width + x] & 1;
}


/* Two rows of modules a line, in black on white whatever the terminal's
   colours (a scanner wants dark on light): the upper half block is the
   upper module, the lower half block the lower one. */
static void
mc_persons_qr_terminal(const QRcode *qr, FILE *f)
{
    int  x, y, n, up, down;

    n = qr->width + 2 * MC_PERSONS_QUIET;

    for (y = 0; y < n; y += 2) {
        fputs("\033[30;47m", f);

        for (x = 0; x < n; x++) {
            up = mc_persons_module(qr, x, y);
            down = y + 1 < n ? mc_persons_module(qr, x, y + 1) : 0;
            fputs(up && down ? "\xe2\x96\x88"           /* full block */
                  : up ? "\xe2\x96\x80"                 /* upper half */
                  : down ? "\xe2\x96\x84"               /* lower half */
                  : " ", f);
        }

        fputs("\033[0m\n", f);
    }
}


/*
 * A PNG of one bit a pixel, greyscale (0 black, 1 white), its image data
 * a zlib stream of stored (uncompressed) deflate blocks: what the format
 * requires, with nothing to link but libqrencode.  The file is made new,
 * mode 0600: it holds the secret.
 */
/* the QR code as a 1-bit greyscale PNG, written by libpng to a new file */
static int
mc_persons_qr_png(const QRcode *qr, const char *path)
{
    int             fd, x, y, px, ok;
    FILE           *f;
    size_t          side, row;
    png_infop       info;
    png_structp     png;
    unsigned char  *raw, *r;

    side = (size_t) (qr->width + 2 * MC_PERSONS_QUIET) * MC_PERSONS_PNG_SCALE;
    row = (side + 7) / 8;

    /* 1 is white: the quiet zone and the light modules */
    raw = calloc(side, row);
    if (raw == NULL) {
        fprintf(stderr, "mt5credit: persons: %s: out of memory\n", path);
        return 1;
    }

    for (y = 0; y < (int) side; y++) {
        r = raw + (size_t) y * row;

        for (x = 0; x < (int) side; x++) {
            px = !mc_persons_module(qr, x / MC_PERSONS_PNG_SCALE,
                                    y / MC_PERSONS_PNG_SCALE);
            r[x / 8] |= (unsigned char) (px << (7 - x % 8));
        }
    }

    f = NULL;
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd != -1) {
        f = fdopen(fd, "wb");
        if (f == NULL) {
            close(fd);
        }
    }

    ok = 0;
    png = NULL;
    info = NULL;

    if (f != NULL) {
        png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL,
                                      NULL);
        info = png != NULL ? png_create_info_struct(png) : NULL;
    }

    if (info != NULL && setjmp(png_jmpbuf(png)) == 0) {
        png_init_io(png, f);
        png_set_IHDR(png, info, (png_uint_32) side, (png_uint_32) side, 1,
                     PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
                     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
        png_write_info(png, info);

        for (y = 0; y < (int) side; y++) {
            png_write_row(png, raw + (size_t) y * row);
        }

        png_write_end(png, info);
        ok = 1;
    }

    if (png != NULL) {
        png_destroy_write_struct(&png, info != NULL ? &info : NULL);
    }

    if (f != NULL && fclose(f) != 0) {
        ok = 0;
    }

    if (!ok) {
        fprintf(stderr, "mt5credit: persons: %s: %s%s\n", path,
                fd == -1 || errno != 0 ? strerror(errno) : "libpng failed",
                fd == -1 && errno == EEXIST
                ? " (a QR code is written to a new file only)" : "");
        if (fd != -1) {
            unlink(path);
        }
    }

    free(raw);
    return ok ? 0 : 1;
}
