/* container.c - owner labels of gpumon's containers and the readiness probe (container.h). */
#include "core/container.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/curl.h"
#include "collect/host.h"
#include "base/error.h"

void gm_container_owner_self(char *owner, size_t owner_len, char *start, size_t start_len)
{
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0 || !host[0])
        snprintf(host, sizeof host, "localhost");
    snprintf(owner, owner_len, "%s:%ld", host, (long)getpid());
    uint64_t ticks;
    if (gm_container_proc_start(NULL, (long)getpid(), &ticks) == GM_OK)
        snprintf(start, start_len, "%llu", (unsigned long long)ticks);
    else if (start_len)
        start[0] = '\0';
}

const char *gm_container_owner_state_name(gm_container_owner_state s)
{
    switch (s) {
    case GM_OWNER_ALIVE:
        return "alive";
    case GM_OWNER_GONE:
        return "gone";
    case GM_OWNER_OTHER_HOST:
        return "other host";
    case GM_OWNER_UNKNOWN:
        break;
    }
    return "unknown";
}

int gm_container_proc_start(const char *procfs_root, long pid, uint64_t *ticks)
{
    gm_host_proc_usage u;
    if (pid <= 0 || pid > UINT32_MAX)
        return GM_ENOENT;
    int rc = gm_host_process_usage(procfs_root, (uint32_t)pid, &u);
    if (rc == GM_OK)
        *ticks = u.start_ticks;
    return rc;
}

gm_container_owner_state gm_container_owner_check(const char *owner, const char *start,
                                                  const char *hostname, const char *procfs_root)
{
    if (!owner)
        return GM_OWNER_UNKNOWN;
    const char *colon = strrchr(owner, ':');
    if (!colon || colon == owner)
        return GM_OWNER_UNKNOWN;
    char *end;
    errno = 0;
    long pid = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || *end || errno != 0 || pid <= 0)
        return GM_OWNER_UNKNOWN;
    char host[256] = "";
    if (hostname)
        snprintf(host, sizeof host, "%s", hostname);
    else if (gethostname(host, sizeof host - 1) != 0 || !host[0])
        snprintf(host, sizeof host, "localhost");
    if (strlen(host) != (size_t)(colon - owner) || strncmp(owner, host, strlen(host)) != 0)
        return GM_OWNER_OTHER_HOST;
    uint64_t ticks = 0;
    int rc = gm_container_proc_start(procfs_root, pid, &ticks);
    if (rc == GM_ENOENT)
        return GM_OWNER_GONE;
    if (rc < 0)
        return GM_OWNER_ALIVE; /* there, but unreadable: never remove what may be in use */
    if (start && *start) {
        char now[32];
        snprintf(now, sizeof now, "%llu", (unsigned long long)ticks);
        if (strcmp(now, start) != 0)
            return GM_OWNER_GONE; /* the PID was reused */
    }
    return GM_OWNER_ALIVE;
}

static size_t discard(char *p, size_t size, size_t nmemb, void *arg)
{
    (void)p, (void)arg;
    return size * nmemb;
}

int gm_container_probe(const char *url, long timeout_ms, long *status, char *why, size_t len,
                       gm_error *err)
{
    *status = 0;
    if (len)
        why[0] = '\0';
    if (gm_curl_start(err) < 0)
        return GM_EIO;
    CURL *c = curl_easy_init();
    if (!c)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    char cerr[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
    CURLcode rc = curl_easy_perform(c);
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    curl_easy_cleanup(c);
    if (rc != CURLE_OK) {
        snprintf(why, len, "%s",
                 rc == CURLE_COULDNT_CONNECT      ? "connection refused"
                 : rc == CURLE_OPERATION_TIMEDOUT ? "no answer in time"
                 : rc == CURLE_GOT_NOTHING        ? "connection closed without an answer"
                 : rc == CURLE_RECV_ERROR         ? "connection reset"
                 : cerr[0]                        ? cerr
                                                  : curl_easy_strerror(rc));
        return gm_error_set(err, GM_EIO, "GET %s: %s", url, why);
    }
    return GM_OK;
}
