/* podres.c - the kubelet's pod-resources API (podres.h): the gRPC call over libcurl, the
 * protobuf-c decoding, the tie from allocations to GPUs and processes, and the watcher thread. */
#include "collect/podres.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/curl.h"

#include "podresources.pb-c.h"
#include "base/error.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#define PODRES_PERIOD_DEFAULT_MS 10000
#define PODRES_NUDGE_GAP_MS      1000
/* A failing kubelet keeps its last answer for this many periods. */
#define PODRES_STALE_PERIODS 3

/* The gRPC method: /<package>.<service>/<method> of the kubelet's API. The host is a
 * placeholder: the connection is the unix socket. */
#define PODRES_URL "http://localhost/v1.PodResourcesLister/List"

/* ---- the table ------------------------------------------------------------------------------ */

void gm_podres_table_free(gm_podres_table *t)
{
    free(t->allocs);
    memset(t, 0, sizeof *t);
}

int gm_podres_table_copy(gm_podres_table *dst, const gm_podres_table *src)
{
    if (dst->cap < src->n) {
        gm_podres_alloc *a = realloc(dst->allocs, src->n * sizeof *a);
        if (!a) {
            gm_podres_table_free(dst);
            return GM_ENOMEM;
        }
        dst->allocs = a;
        dst->cap = src->n;
    }
    if (src->n)
        memcpy(dst->allocs, src->allocs, src->n * sizeof *src->allocs);
    dst->n = src->n;
    dst->pods = src->pods;
    dst->skipped = src->skipped;
    return GM_OK;
}

bool gm_podres_is_gpu_resource(const char *name)
{
    return strcmp(name, "nvidia.com/gpu") == 0 || strncmp(name, "nvidia.com/gpu.", 15) == 0 ||
           (strncmp(name, "nvidia.com/mig-", 15) == 0 && name[15]);
}

void gm_podres_gpu_of(const char *id, char *uuid, size_t cap)
{
    const char *start = NULL, *stop = NULL;
    if (strncmp(id, "GPU-", 4) == 0) {
        start = id;
        stop = strstr(id, "::"); /* a time-slicing replica: GPU-<uuid>::<n> */
    } else if (strncmp(id, "MIG-GPU-", 8) == 0) {
        start = id + 4; /* the MIG naming of drivers before R470: MIG-GPU-<uuid>/<gi>/<ci> */
        stop = strchr(start, '/');
    }
    size_t n = start ? (stop ? (size_t)(stop - start) : strlen(start)) : 0;
    if (n <= 4 || n >= cap) {
        if (cap)
            uuid[0] = '\0';
        return;
    }
    memcpy(uuid, start, n);
    uuid[n] = '\0';
}

/* Kubernetes' own rules for the names (RFC 1123): a pod's is a DNS subdomain, a namespace's and
 * a container's a DNS label. What breaks them cannot have come from a kubelet; it is left out
 * rather than shown, so a label or a JSON string never carries something odd. */
static bool k8s_name_ok(const char *s, size_t max, bool dots)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || (dots && c == '.')))
            return false;
    }
    return true;
}

/* A device plugin's ID: printable ASCII without quotes or backslashes. */
static bool device_id_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= GM_UUID_LEN)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= ' ' || s[i] > '~' || s[i] == '"' || s[i] == '\\')
            return false;
    return true;
}

static int table_add(gm_podres_table *t, const char *device_id, const GmPodres__PodResources *pod,
                     const GmPodres__ContainerResources *c)
{
    if (t->n == GM_PODRES_MAX_ALLOCS || !device_id_ok(device_id) ||
        !k8s_name_ok(pod->name, GM_K8S_POD_LEN - 1, true) ||
        !k8s_name_ok(pod->namespace_, GM_K8S_NAME_LEN - 1, false) ||
        !k8s_name_ok(c->name, GM_K8S_NAME_LEN - 1, false)) {
        t->skipped++;
        return GM_OK;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        gm_podres_alloc *a = realloc(t->allocs, cap * sizeof *a);
        if (!a)
            return GM_ENOMEM;
        t->allocs = a;
        t->cap = cap;
    }
    gm_podres_alloc *a = &t->allocs[t->n++];
    memset(a, 0, sizeof *a);
    snprintf(a->device_id, sizeof a->device_id, "%s", device_id);
    gm_podres_gpu_of(device_id, a->gpu_uuid, sizeof a->gpu_uuid);
    snprintf(a->ref.pod, sizeof a->ref.pod, "%s", pod->name);
    snprintf(a->ref.pod_namespace, sizeof a->ref.pod_namespace, "%s", pod->namespace_);
    snprintf(a->ref.container, sizeof a->ref.container, "%s", c->name);
    return GM_OK;
}

int gm_podres_decode(const uint8_t *msg, size_t len, gm_podres_table *out, gm_error *err)
{
    out->n = out->pods = out->skipped = 0;
    GmPodres__ListPodResourcesResponse *r =
        gm_podres__list_pod_resources_response__unpack(NULL, len, msg);
    if (!r)
        return gm_error_set(err, GM_EPARSE,
                            "the kubelet's answer is not a ListPodResourcesResponse (%zu bytes)",
                            len);
    int rc = GM_OK;
    out->pods = r->n_pod_resources;
    for (size_t i = 0; i < r->n_pod_resources && rc == GM_OK; i++) {
        const GmPodres__PodResources *pod = r->pod_resources[i];
        for (size_t j = 0; j < pod->n_containers && rc == GM_OK; j++) {
            const GmPodres__ContainerResources *c = pod->containers[j];
            for (size_t k = 0; k < c->n_devices && rc == GM_OK; k++) {
                const GmPodres__ContainerDevices *d = c->devices[k];
                if (!gm_podres_is_gpu_resource(d->resource_name))
                    continue;
                for (size_t m = 0; m < d->n_device_ids && rc == GM_OK; m++)
                    rc = table_add(out, d->device_ids[m], pod, c);
            }
        }
    }
    gm_podres__list_pod_resources_response__free_unpacked(r, NULL);
    if (rc < 0) {
        out->n = 0;
        return gm_error_set(err, rc, "out of memory reading the kubelet's answer");
    }
    return GM_OK;
}

/* ---- attribution ------------------------------------------------------------------------------
 */

static bool same_ref(const gm_k8s_ref *a, const gm_k8s_ref *b)
{
    return strcmp(a->pod, b->pod) == 0 && strcmp(a->pod_namespace, b->pod_namespace) == 0 &&
           strcmp(a->container, b->container) == 0;
}

/* What one ID (a pod UID or a container ID) was tied to, and whether two GPUs disagreed. */
typedef struct learned {
    const char *key;
    const gm_k8s_ref *ref;
    bool conflict;
} learned;

static learned *find_learned(learned *l, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(l[i].key, key) == 0)
            return &l[i];
    return NULL;
}

/* Ties key to ref; a pod UID compares the pod only (its containers differ), a container ID
 * the whole reference. */
static void learn(learned *l, size_t *n, const char *key, const gm_k8s_ref *ref, bool whole)
{
    learned *e = find_learned(l, *n, key);
    if (!e) {
        l[(*n)++] = (learned){key, ref, false};
        return;
    }
    bool same = whole ? same_ref(e->ref, ref)
                      : strcmp(e->ref->pod, ref->pod) == 0 &&
                            strcmp(e->ref->pod_namespace, ref->pod_namespace) == 0;
    if (!same)
        e->conflict = true;
}

void gm_podres_attribute(const gm_podres_table *t, bool known, gm_snapshot *s)
{
    if (!known)
        return;
    /* A GPU allocation this cannot place (a device ID of another form, a GPU this process does
     * not see) might be any GPU's: then a GPU nobody seems to hold is not known to be free. */
    size_t unplaced = 0;
    for (size_t a = 0; a < t->n; a++) {
        bool placed = false;
        for (unsigned i = 0; i < s->gpu_count && !placed && t->allocs[a].gpu_uuid[0]; i++)
            placed = strcmp(t->allocs[a].gpu_uuid, s->gpus[i].uuid) == 0;
        unplaced += !placed;
    }
    const gm_k8s_ref *holder[GM_MAX_GPUS] = {0};
    for (unsigned i = 0; i < s->gpu_count; i++) {
        gm_gpu *g = &s->gpus[i];
        g->k8s_known = true;
        g->k8s_containers = 0;
        if (!g->uuid[0])
            continue;
        for (size_t a = 0; a < t->n; a++) {
            if (strcmp(t->allocs[a].gpu_uuid, g->uuid) != 0)
                continue;
            bool seen = false; /* the same container twice: two replicas of a shared GPU */
            for (size_t b = 0; b < a && !seen; b++)
                seen = strcmp(t->allocs[b].gpu_uuid, g->uuid) == 0 &&
                       same_ref(&t->allocs[b].ref, &t->allocs[a].ref);
            if (!seen && g->k8s_containers++ == 0)
                holder[i] = &t->allocs[a].ref;
        }
        if (g->k8s_containers == 1)
            g->k8s = *holder[i];
        else
            holder[i] = NULL;
        if (g->k8s_containers == 0 && unplaced)
            g->k8s_known = false;
    }

    /* What the GPUs held by one container tell about the pods and containers of the processes
     * on them. At most one entry per GPU in each list. */
    learned pods[GM_MAX_GPUS], conts[GM_MAX_GPUS];
    size_t npods = 0, nconts = 0;
    for (unsigned i = 0; i < s->gpu_count; i++) {
        if (!holder[i])
            continue;
        const char *uid = NULL, *cid = NULL;
        bool uid_many = false, cid_many = false;
        for (size_t k = 0; k < s->proc_count; k++) {
            const gm_process *p = &s->procs[k];
            if (p->gpu_index != s->gpus[i].index || !p->pod_uid[0])
                continue;
            if (!uid)
                uid = p->pod_uid;
            else if (strcmp(uid, p->pod_uid) != 0)
                uid_many = true;
            if (!p->container_id[0] || (cid && strcmp(cid, p->container_id) != 0))
                cid_many = true;
            else
                cid = p->container_id;
        }
        if (!uid || uid_many)
            continue;
        learn(pods, &npods, uid, holder[i], false);
        if (cid && !cid_many)
            learn(conts, &nconts, cid, holder[i], true);
    }

    for (size_t k = 0; k < s->proc_count; k++) {
        gm_process *p = &s->procs[k];
        const learned *pod = p->pod_uid[0] ? find_learned(pods, npods, p->pod_uid) : NULL;
        if (!pod || pod->conflict)
            continue;
        snprintf(p->k8s.pod, sizeof p->k8s.pod, "%s", pod->ref->pod);
        snprintf(p->k8s.pod_namespace, sizeof p->k8s.pod_namespace, "%s", pod->ref->pod_namespace);
        const learned *c = p->container_id[0] ? find_learned(conts, nconts, p->container_id) : NULL;
        if (c && !c->conflict && strcmp(c->ref->pod, pod->ref->pod) == 0 &&
            strcmp(c->ref->pod_namespace, pod->ref->pod_namespace) == 0)
            snprintf(p->k8s.container, sizeof p->k8s.container, "%s", c->ref->container);
    }
}

/* ---- the gRPC call ----------------------------------------------------------------------------
 */

typedef struct call {
    gm_buf body;
    int grpc_status; /* -1 until a grpc-status header or trailer is seen */
    char grpc_message[160];
    char content_type[64];
    const atomic_bool *abort_flag;
} call;

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    call *c = arg;
    gm_buf_put(&c->body, p, size * n);
    return c->body.failed ? 0 : size * n; /* 0: too big, curl stops */
}

/* Copies a header's value (after "name:"), trimmed, printable ASCII only. */
static void header_value(const char *p, size_t n, size_t skip, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = skip; i < n && o + 1 < cap; i++) {
        char ch = p[i];
        if (ch == '\r' || ch == '\n')
            break;
        if ((ch == ' ' || ch == '\t') && o == 0)
            continue;
        out[o++] = ch >= ' ' && ch <= '~' ? ch : '?';
    }
    out[o] = '\0';
}

/* Headers and, for HTTP/2, trailers arrive here: gRPC puts its status in the trailers, or in the
 * headers of an answer without a body ("trailers-only"). */
static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    call *c = arg;
    size_t len = size * n;
    char v[160];
    if (len > 12 && strncasecmp(p, "grpc-status:", 12) == 0) {
        header_value(p, len, 12, v, sizeof v);
        char *end;
        long st = strtol(v, &end, 10);
        c->grpc_status = end != v && !*end && st >= 0 && st < 100 ? (int)st : 2; /* UNKNOWN */
    } else if (len > 13 && strncasecmp(p, "grpc-message:", 13) == 0) {
        header_value(p, len, 13, c->grpc_message, sizeof c->grpc_message);
    } else if (len > 13 && strncasecmp(p, "content-type:", 13) == 0) {
        header_value(p, len, 13, c->content_type, sizeof c->content_type);
    }
    return len;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    const call *c = arg;
    return c->abort_flag && atomic_load(c->abort_flag);
}

static const char *grpc_code_name(int code)
{
    static const char *const names[] = {"OK",
                                        "CANCELLED",
                                        "UNKNOWN",
                                        "INVALID_ARGUMENT",
                                        "DEADLINE_EXCEEDED",
                                        "NOT_FOUND",
                                        "ALREADY_EXISTS",
                                        "PERMISSION_DENIED",
                                        "RESOURCE_EXHAUSTED",
                                        "FAILED_PRECONDITION",
                                        "ABORTED",
                                        "OUT_OF_RANGE",
                                        "UNIMPLEMENTED",
                                        "INTERNAL",
                                        "UNAVAILABLE",
                                        "DATA_LOSS",
                                        "UNAUTHENTICATED"};
    return code >= 0 && (size_t)code < sizeof names / sizeof *names ? names[code] : "?";
}

/* Turns a transfer that failed into a sentence and a code. */
static int transfer_error(CURL *e, CURLcode cc, const char *path, gm_error *err)
{
    long os_errno = 0;
    curl_easy_getinfo(e, CURLINFO_OS_ERRNO, &os_errno);
    if (cc == CURLE_COULDNT_CONNECT && os_errno) {
        int code = os_errno == EACCES || os_errno == EPERM ? GM_EPERM
                   : os_errno == ENOENT                    ? GM_ENOENT
                                                           : GM_EIO;
        return gm_error_set(err, code, "cannot connect to %s: %s%s", path, strerror((int)os_errno),
                            code == GM_EPERM ? " (the kubelet's socket is root's: run gpumon as "
                                               "root to read it)"
                                             : "");
    }
    if (cc == CURLE_OPERATION_TIMEDOUT)
        return gm_error_set(err, GM_ETIMEDOUT, "%s did not answer in time", path);
    if (cc == CURLE_WRITE_ERROR)
        return gm_error_set(err, GM_EIO, "the kubelet's answer on %s is over %u bytes", path,
                            GM_PODRES_MAX_MESSAGE);
    if (cc == CURLE_ABORTED_BY_CALLBACK)
        return gm_error_set(err, GM_ECANCELED, "call to %s abandoned", path);
    /* libcurl's fixed sentence, not its error buffer, which counts milliseconds: the same
     * failure must read the same each time, or the log would repeat it every period. */
    return gm_error_set(err, GM_EIO, "call to %s failed: %s", path, curl_easy_strerror(cc));
}

int gm_podres_list(const char *path, int timeout_ms, const atomic_bool *abort_flag,
                   gm_podres_table *out, gm_error *err)
{
    out->n = out->pods = out->skipped = 0;
    if (!path || !path[0])
        return gm_error_set(err, GM_EINVAL, "no pod-resources socket given");
    struct stat st;
    if (stat(path, &st) != 0)
        return gm_error_set(err, errno == ENOENT ? GM_ENOENT : GM_EIO, "%s: %s", path,
                            strerror(errno));
    if (!S_ISSOCK(st.st_mode))
        return gm_error_set(err, GM_EINVAL, "%s is not a socket", path);
    if (gm_curl_start(err) < 0)
        return GM_EIO;
    CURL *e = curl_easy_init();
    if (!e)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    if (timeout_ms <= 0)
        timeout_ms = GM_PODRES_TIMEOUT_MS;

    call c = {.grpc_status = -1, .abort_flag = abort_flag};
    gm_buf_init(&c.body, GM_PODRES_MAX_MESSAGE + 5);
    /* An empty ListPodResourcesRequest in gRPC's frame: not compressed, length 0. */
    static const char request[5] = {0, 0, 0, 0, 0};
    struct curl_slist *hdrs = NULL, *h;
    /* (The agent in parentheses: one string, not two items missing a comma.) */
    static const char *const header_lines[] = {"Content-Type: application/grpc", "TE: trailers",
                                               ("User-Agent: gpumon/" GM_VERSION), "Expect:"};
    int rc = GM_OK;
    for (size_t i = 0; i < sizeof header_lines / sizeof *header_lines; i++) {
        if (!(h = curl_slist_append(hdrs, header_lines[i]))) {
            rc = gm_error_set(err, GM_ENOMEM, "out of memory");
            goto out;
        }
        hdrs = h;
    }
    curl_easy_setopt(e, CURLOPT_URL, PODRES_URL);
    curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, path);
    /* gRPC is HTTP/2; a unix socket has no TLS to negotiate it, so say it up front. */
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, request);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)sizeof request);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &c);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &c);
    curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(e, CURLOPT_XFERINFODATA, &c);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L); /* a thread of a daemon: no SIGALRM */
    CURLcode cc = curl_easy_perform(e);
    if (cc != CURLE_OK) {
        rc = transfer_error(e, cc, path, err);
        goto out;
    }
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) {
        rc = gm_error_set(err, GM_EIO, "%s answered HTTP %ld, not gRPC", path, status);
        goto out;
    }
    if (c.grpc_status != 0) {
        rc = c.grpc_status < 0
                 ? gm_error_set(err, GM_EPARSE, "%s answered without a gRPC status", path)
                 : gm_error_set(err, GM_EIO, "the kubelet answered %s (%d)%s%s",
                                grpc_code_name(c.grpc_status), c.grpc_status,
                                c.grpc_message[0] ? ": " : "", c.grpc_message);
        goto out;
    }
    if (strncmp(c.content_type, "application/grpc", 16) != 0) {
        rc = gm_error_set(err, GM_EPARSE, "%s answered content type \"%s\", not gRPC", path,
                          c.content_type);
        goto out;
    }
    /* One message: a compressed-flag byte, a big-endian length, the bytes. */
    const uint8_t *b = (const uint8_t *)c.body.p;
    size_t blen = c.body.len;
    uint32_t mlen = blen >= 5 ? (uint32_t)b[1] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 8 |
                                    (uint32_t)b[4]
                              : 0;
    if (blen < 5 || b[0] != 0 || (size_t)mlen != blen - 5) {
        rc = gm_error_set(err, GM_EPARSE,
                          blen >= 5 && b[0] ? "the kubelet's answer is compressed (not asked for)"
                                            : "the kubelet's answer is not one gRPC message "
                                              "(%zu bytes)",
                          blen);
        goto out;
    }
    rc = gm_podres_decode(b + 5, mlen, out, err);
out:
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(e);
    gm_buf_free(&c.body);
    return rc;
}

/* ---- the watcher -------------------------------------------------------------------------------
 */

struct gm_podres_watch {
    char path[256];
    int period_ms;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* on CLOCK_MONOTONIC */
    atomic_bool stop;
    bool nudged;
    /* Under mu: */
    gm_podres_table table;
    bool known;
    uint64_t gen;
    int64_t last_ok_ms; /* monotonic; 0: never */
    gm_k8s_status status;
};

static void set_status(gm_podres_watch *w, gm_k8s_state state, const char *msg)
{
    if (w->status.state != state || strcmp(w->status.message, msg) != 0)
        w->status.changes++;
    w->status.state = state;
    snprintf(w->status.message, sizeof w->status.message, "%s", msg);
}

static void refresh(gm_podres_watch *w, gm_podres_table *scratch)
{
    gm_error err = {0};
    int rc = gm_podres_list(w->path, GM_PODRES_TIMEOUT_MS, &w->stop, scratch, &err);
    int64_t now = gm_clock_mono_ms();
    pthread_mutex_lock(&w->mu);
    if (rc == GM_OK) {
        /* The same answer as before is no news: the collector keeps what it made of it. */
        bool same = w->known && w->table.n == scratch->n && w->table.pods == scratch->pods &&
                    w->table.skipped == scratch->skipped &&
                    (!scratch->n || memcmp(w->table.allocs, scratch->allocs,
                                           scratch->n * sizeof *scratch->allocs) == 0);
        gm_podres_table t = w->table;
        w->table = *scratch;
        *scratch = t;
        w->known = true;
        if (!same)
            w->gen++;
        w->last_ok_ms = now;
        w->status.pods = w->table.pods;
        w->status.gpu_devices = w->table.n;
        set_status(w, GM_K8S_OK, "");
    } else if (rc != GM_ECANCELED) {
        set_status(w, rc == GM_ENOENT ? GM_K8S_NO_SOCKET : GM_K8S_FAILED, err.msg);
        if (w->known && now - w->last_ok_ms > (int64_t)PODRES_STALE_PERIODS * w->period_ms) {
            /* Too old to trust: the pods may have gone. */
            w->table.n = w->table.pods = w->table.skipped = 0;
            w->known = false;
            w->gen++;
            w->status.pods = w->status.gpu_devices = 0;
        }
    }
    pthread_mutex_unlock(&w->mu);
}

static void *watch_main(void *arg)
{
    gm_podres_watch *w = arg;
    gm_podres_table scratch = {0};
    int64_t last_start = 0;
    pthread_mutex_lock(&w->mu);
    while (!atomic_load(&w->stop)) {
        w->nudged = false;
        pthread_mutex_unlock(&w->mu);
        last_start = gm_clock_mono_ms();
        refresh(w, &scratch);
        pthread_mutex_lock(&w->mu);
        /* Sleep until the period is over, or a nudge at least a second after this call. */
        for (;;) {
            if (atomic_load(&w->stop))
                break;
            int64_t now = gm_clock_mono_ms();
            int64_t due = last_start + w->period_ms;
            if (w->nudged && last_start + PODRES_NUDGE_GAP_MS < due)
                due = last_start + PODRES_NUDGE_GAP_MS;
            if (now >= due)
                break;
            struct timespec ts = gm_clock_mono_deadline(due - now);
            pthread_cond_timedwait(&w->cv, &w->mu, &ts);
        }
    }
    pthread_mutex_unlock(&w->mu);
    gm_podres_table_free(&scratch);
    return NULL;
}

int gm_podres_watch_start(const char *path, int period_ms, gm_podres_watch **out, gm_error *err)
{
    *out = NULL;
    if (!path || !path[0] || strlen(path) >= sizeof((gm_podres_watch *)0)->path)
        return gm_error_set(err, GM_EINVAL, "the pod-resources socket path is empty or too long");
    gm_podres_watch *w = calloc(1, sizeof *w);
    if (!w)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    snprintf(w->path, sizeof w->path, "%s", path);
    w->period_ms = period_ms > 0 ? period_ms : PODRES_PERIOD_DEFAULT_MS;
    w->status.state = GM_K8S_STARTING;
    snprintf(w->status.socket, sizeof w->status.socket, "%s", path);
    atomic_init(&w->stop, false);
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    /* libcurl's global start (base/curl.h) is left to the first call unless this libcurl
     * cannot be started from two threads at once (the fleet thread starts it too). */
    gm_error ignored;
    if (!(curl_version_info(CURLVERSION_NOW)->features & CURL_VERSION_THREADSAFE))
        gm_curl_start(&ignored);
    if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return gm_error_set(err, GM_EIO, "cannot start the pod-resources thread");
    }
    *out = w;
    return GM_OK;
}

void gm_podres_watch_stop(gm_podres_watch *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    atomic_store(&w->stop, true);
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    gm_podres_table_free(&w->table);
    free(w);
}

void gm_podres_watch_nudge(gm_podres_watch *w)
{
    pthread_mutex_lock(&w->mu);
    w->nudged = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

bool gm_podres_watch_take(gm_podres_watch *w, uint64_t *gen, gm_podres_table *out, bool *known)
{
    bool changed = false;
    pthread_mutex_lock(&w->mu);
    *known = w->known;
    if (*gen != w->gen) {
        if (gm_podres_table_copy(out, &w->table) == GM_OK)
            *gen = w->gen;
        else
            *known = false; /* out of memory: try again next time */
        changed = true;
    }
    pthread_mutex_unlock(&w->mu);
    return changed;
}

void gm_podres_watch_status(gm_podres_watch *w, gm_k8s_status *out)
{
    pthread_mutex_lock(&w->mu);
    *out = w->status;
    pthread_mutex_unlock(&w->mu);
}
