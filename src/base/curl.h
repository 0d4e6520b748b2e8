/* curl.h - libcurl's one global start for every module that makes HTTP calls (the kubelet,
 * Prometheus, the Docker engine, inference servers). Started on first use, not at load: it
 * brings in OpenSSL's tables, about 1.7 MB resident, which a daemon with no such call never
 * needs. */
#ifndef GM_CURL_H
#define GM_CURL_H

#include "gpumon.h"

/* Starts libcurl once for the process (safe from any thread). GM_OK, or GM_EIO with the
 * reason libcurl gave. */
int gm_curl_start(gm_error *err);

#endif
