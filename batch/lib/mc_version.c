/*
 * Copyright (C) mt5-credit
 *
 * The version and commit come from the Makefile (VERSION, git), so one
 * binary says which source it is; the libraries are the ones loaded at
 * run time, which is what a platform team asks about after an upgrade
 * (hiredis alone has no run-time version: the one built against).
 */


#include <stdio.h>

#include <curl/curl.h>
#include <hiredis/hiredis.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <openssl/crypto.h>

#include "mc_version.h"


#if !defined MC_VERSION || !defined MC_COMMIT
#error "MC_VERSION and MC_COMMIT come from the Makefile"
#endif


const char  mc_version[] = MC_VERSION;
const char  mc_commit[] = MC_COMMIT;


void
mc_version_print(FILE *f)
{
    int                      pq;
    curl_version_info_data  *curl;

    pq = PQlibVersion();
    curl = curl_version_info(CURLVERSION_NOW);

    fprintf(f, "mt5credit %s (commit %s)\n", mc_version, mc_commit);
    fprintf(f, "libraries: libpq %d.%d, hiredis %d.%d.%d, libcurl %s "
            "(%s), jansson %s, %s\n",
            pq / 10000, pq % 10000, HIREDIS_MAJOR, HIREDIS_MINOR,
            HIREDIS_PATCH, curl->version,
            curl->ssl_version ? curl->ssl_version : "no TLS",
            jansson_version_str(), OpenSSL_version(OPENSSL_VERSION));
}
