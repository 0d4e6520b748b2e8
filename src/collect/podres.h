/* podres.h - which Kubernetes container holds which GPU, from the kubelet's pod-resources API:
 * the gRPC method v1.PodResourcesLister/List on the kubelet's unix socket, called with libcurl
 * (HTTP/2 without TLS, gRPC's 5-byte message frame, grpc-status from the trailers) and decoded
 * with protobuf-c (podresources.proto). A watcher thread refreshes the answer on a period, off
 * the sampling path; the collector ties it to GPUs and, through cgroups, to processes. */
#ifndef GM_PODRES_H
#define GM_PODRES_H

#include "gpumon.h"

#include <stdatomic.h>

#define GM_PODRES_DEFAULT_SOCKET "/var/lib/kubelet/pod-resources/kubelet.sock"
#define GM_PODRES_MAX_ALLOCS     4096       /* device allocations kept from one answer */
#define GM_PODRES_MAX_MESSAGE    (8u << 20) /* a bigger answer is refused */
#define GM_PODRES_TIMEOUT_MS     3000       /* one List call, connection included */

/* One device the kubelet has allocated to a container. */
typedef struct gm_podres_alloc {
    char device_id[GM_UUID_LEN]; /* as the device plugin named it */
    /* The whole GPU it is (part of): its UUID when the ID says ("GPU-x", a time-slicing replica
     * "GPU-x::N", an old-style MIG device "MIG-GPU-x/gi/ci"); "" for a MIG device's own UUID,
     * which only the driver can place (the collector asks its provider). */
    char gpu_uuid[GM_UUID_LEN];
    gm_k8s_ref ref;
} gm_podres_alloc;

/* The GPU allocations of one answer. */
typedef struct gm_podres_table {
    gm_podres_alloc *allocs;
    size_t n, cap;
    size_t pods;    /* pods the kubelet listed, with or without GPUs */
    size_t skipped; /* GPU device IDs left out: over GM_PODRES_MAX_ALLOCS, or a name or ID that
                     * is not what Kubernetes allows (never shown, never guessed at) */
} gm_podres_table;

/* Empties t and frees its memory. */
void gm_podres_table_free(gm_podres_table *t);
/* Makes dst a copy of src (dst's memory reused). GM_ENOMEM leaves dst empty. */
int gm_podres_table_copy(gm_podres_table *dst, const gm_podres_table *src);

/* True for the extended resources of NVIDIA's device plugin that are GPUs or parts of one:
 * "nvidia.com/gpu", "nvidia.com/gpu.<suffix>" (renamed shared GPUs, "nvidia.com/gpu.shared")
 * and "nvidia.com/mig-<profile>" (MIG devices, "nvidia.com/mig-1g.10gb"). */
bool gm_podres_is_gpu_resource(const char *name);

/* The whole GPU's UUID that a device ID names (see gm_podres_alloc.gpu_uuid) into uuid; ""
 * when it names none by itself. */
void gm_podres_gpu_of(const char *device_id, char *uuid, size_t cap);

/* Fills out (emptied first) from a serialized ListPodResourcesResponse: one entry per device
 * ID of a GPU resource (gm_podres_is_gpu_resource), per container. GM_EPARSE when the bytes are
 * not such a message. */
int gm_podres_decode(const uint8_t *msg, size_t len, gm_podres_table *out, gm_error *err);

/* One List call to the kubelet listening on the unix socket at path, within timeout_ms (<= 0:
 * GM_PODRES_TIMEOUT_MS); the answer decoded into out. abort_flag (may be NULL), when it turns
 * true, ends a call in progress within about a second. Errors say what failed: GM_ENOENT (no
 * socket), GM_EPERM (not allowed to connect), GM_EIO (refused, HTTP or gRPC error),
 * GM_ETIMEDOUT, GM_EPARSE (not a gRPC answer of this method). */
int gm_podres_list(const char *path, int timeout_ms, const atomic_bool *abort_flag,
                   gm_podres_table *out, gm_error *err);

/* Ties the allocations to s: each GPU gets k8s_known = known, the number of distinct containers
 * that hold it or a part of it, and their names when there is exactly one (a GPU that none
 * holds is not known when some allocation could not be placed on a GPU); each process that
 * carries a pod UID (and container ID) from its cgroup gets the names of its pod (and
 * container) when the evidence is unambiguous: on some GPU held by exactly one container, the
 * processes that are in a pod are all in one pod (then that pod is this container's), and all in
 * one container (then that container is it). A pod UID or container ID that two GPUs tie to
 * different names is left unnamed. Nothing is written when known is false. */
void gm_podres_attribute(const gm_podres_table *t, bool known, gm_snapshot *s);

/* ---- the watcher ---------------------------------------------------------------------------- */

typedef struct gm_podres_watch gm_podres_watch;

/* Starts a thread that calls List at once and then every period_ms (<= 0: 10000), keeping the
 * last answer. A failure keeps the previous answer until three periods have passed since it was
 * read, so a kubelet restarting does not take the names away; after that the table is empty and
 * not known. */
int gm_podres_watch_start(const char *path, int period_ms, gm_podres_watch **out, gm_error *err);
/* Stops the thread (a call in progress is abandoned within about a second) and frees w. */
void gm_podres_watch_stop(gm_podres_watch *w);
/* Asks for a refresh now (a new pod's process appeared), at most one per second. */
void gm_podres_watch_nudge(gm_podres_watch *w);
/* When the table changed since *gen, copies it into out and advances *gen; *known tells
 * whether the table holds a usable answer. Returns true when out was rewritten. */
bool gm_podres_watch_take(gm_podres_watch *w, uint64_t *gen, gm_podres_table *out, bool *known);
/* The watcher's state, for the log and /api/config. */
void gm_podres_watch_status(gm_podres_watch *w, gm_k8s_status *out);

#endif
