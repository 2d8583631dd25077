/*
 * Copyright (C) mt5-credit
 *
 * A test double for the disk under a worker's kept claim, loaded with
 * LD_PRELOAD: fdatasync() of a file named *.state (the worker's claim,
 * batch/credit/mc_rewind.c) is slowed or failed on request, every other
 * file is left alone.
 *
 *   MC_SHIM_CLAIM_SYNC_MS=N     sleep N ms before the real fdatasync()
 *   MC_SHIM_CLAIM_SYNC_FAIL=1   fail it with EIO (nothing is flushed)
 *
 * After each such call, one line on stderr (the worker's log), so a test
 * can read the order of the flush and the balance call:
 *
 *   shim: claim fdatasync: on disk | failed
 */


#define _GNU_SOURCE

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


static int mc_shim_is_claim(int fd);


int
fdatasync(int fd)
{
    int                     rc;
    long                    ms;
    const char             *v;
    struct timespec         ts;
    static int            (*real)(int);

    if (real == NULL) {
        real = (int (*)(int)) dlsym(RTLD_NEXT, "fdatasync");
        if (real == NULL) {
            errno = ENOSYS;
            return -1;
        }
    }

    if (!mc_shim_is_claim(fd)) {
        return real(fd);
    }

    v = getenv("MC_SHIM_CLAIM_SYNC_MS");
    ms = v != NULL ? strtol(v, NULL, 10) : 0;

    if (ms > 0) {
        ts.tv_sec = ms / 1000;
        ts.tv_nsec = (ms % 1000) * 1000000L;
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
            /* the rest of it */
        }
    }

    v = getenv("MC_SHIM_CLAIM_SYNC_FAIL");

    if (v != NULL && strcmp(v, "1") == 0) {
        rc = -1;
        errno = EIO;

    } else {
        rc = real(fd);
    }

    dprintf(STDERR_FILENO, "shim: claim fdatasync: %s\n",
            rc == 0 ? "on disk" : "failed");

    if (rc != 0) {
        errno = EIO;
    }

    return rc;
}


/* is fd a worker's claim file? */
static int
mc_shim_is_claim(int fd)
{
    char     link[64], path[1024];
    ssize_t  n;

    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);

    n = readlink(link, path, sizeof(path) - 1);
    if (n < 6) {
        return 0;
    }

    path[n] = '\0';

    return strcmp(path + n - 6, ".state") == 0;
}
