/*
 * Copyright (C) mt5-credit
 */


#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mc_textfile.h"


void
mc_textfile_path(char *out, size_t size, const char *dir,
    const char *program, const char *name)
{
    size_t  k;
    char    safe[128];

    /* what is not [A-Za-z0-9_.-] in the name becomes _ */
    for (k = 0; name[k] && k + 1 < sizeof(safe); k++) {
        safe[k] = ((name[k] >= 'a' && name[k] <= 'z')
                   || (name[k] >= 'A' && name[k] <= 'Z')
                   || (name[k] >= '0' && name[k] <= '9')
                   || name[k] == '_' || name[k] == '.' || name[k] == '-')
                  ? name[k] : '_';
    }
    safe[k] = '\0';

    snprintf(out, size, "%s/mt5credit-%s-%s.prom", dir, program, safe);
}


FILE *
mc_textfile_open(const char *path, char *tmp, size_t tmpsize)
{
    FILE  *f;

    if ((size_t) snprintf(tmp, tmpsize, "%s.tmp.%d", path, (int) getpid())
        >= tmpsize)
    {
        errno = ENAMETOOLONG;
        return NULL;
    }

    f = fopen(tmp, "w");

    /* the collector (another user) reads it, whatever the unit's umask
       (0077 for the programs' own files): metrics are no secret */
    if (f != NULL) {
        (void) fchmod(fileno(f), 0644);
    }

    return f;
}


int
mc_textfile_commit(FILE *f, const char *tmp, const char *path)
{
    int  rc, err;

    rc = 0;

    if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
        rc = -1;
    }
    err = errno;

    /* a write that failed before, whatever the flush says now */
    if (rc == 0 && ferror(f)) {
        rc = -1;
        err = EIO;
    }

    if (fclose(f) != 0 && rc == 0) {
        rc = -1;
        err = errno;
    }

    if (rc == 0 && rename(tmp, path) != 0) {
        rc = -1;
        err = errno;
    }

    if (rc != 0) {
        (void) unlink(tmp);
        errno = err;
    }

    return rc;
}
