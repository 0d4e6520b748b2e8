/* cgroup.h - which container and which Kubernetes pod a process runs in, read from its
 * /proc/<pid>/cgroup: cgroup v1, v2 and hybrid files; the kubelet's cgroupfs layout
 * (kubepods/<qos>/pod<uid>/<id>) and its systemd one (kubepods-<qos>-pod<uid>.slice/
 * <runtime>-<id>.scope); containerd, CRI-O, Docker and podman container IDs; paths seen from
 * another cgroup namespace ("/../../kubepods-..."). Works without any access to the kubelet: the
 * names of pods and containers are not in the cgroup, only their IDs. */
#ifndef GM_CGROUP_H
#define GM_CGROUP_H

#include "gpumon.h"

typedef struct gm_cgroup_ident {
    char pod_uid[GM_POD_UID_LEN];           /* "" outside a pod; dashed as metadata.uid */
    char container_id[GM_CONTAINER_ID_LEN]; /* "" when no container is recognised */
} gm_cgroup_ident;

/* Parses the text of a /proc/<pid>/cgroup file into out (zeroed first). The first line that
 * places the process in a pod wins (in a hybrid v1+v2 file the v1 lines may, and the v2 line
 * may not); otherwise the first line naming a container. Returns true when a pod or a container
 * was found. Never reads past len; a malformed line is skipped. */
bool gm_cgroup_parse(const char *text, size_t len, gm_cgroup_ident *out);

/* Reads <root>/<pid>/cgroup (root NULL or "": "/proc") and parses it into out. GM_OK, also when
 * the process is in no container (out is then empty); GM_ENOENT when the file cannot be read
 * (the process is gone, or hidden from us). */
int gm_cgroup_read(const char *root, uint32_t pid, gm_cgroup_ident *out);

#endif
