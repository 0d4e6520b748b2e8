/* curl.c - libcurl's global start, once (curl.h). */
#include "base/curl.h"
#include "base/error.h"

#include <curl/curl.h>
#include <pthread.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static CURLcode start_rc = CURLE_FAILED_INIT;

static void start(void)
{
    start_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int gm_curl_start(gm_error *err)
{
    pthread_once(&once, start);
    if (start_rc != CURLE_OK)
        return gm_error_set(err, GM_EIO, "libcurl could not start: %s",
                            curl_easy_strerror(start_rc));
    return GM_OK;
}
