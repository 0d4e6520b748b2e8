/* cgroup.c - a process's container ID and Kubernetes pod UID from /proc/<pid>/cgroup. The
 * layouts (kubelet cgroupfs and systemd drivers, runtimes' scope names, cgroup namespaces) are
 * in cgroup.h; the lines the tests hold are real ones collected from public sources. */
#include "collect/cgroup.h"
#include "collect/host.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/* A hybrid v1+v2 file is a dozen lines of a few hundred bytes each. */
#define CGROUP_READ_MAX 16384

typedef struct span {
    const char *p;
    size_t n;
} span;

static bool is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static bool starts(span s, const char *pre)
{
    size_t n = strlen(pre);
    return s.n >= n && memcmp(s.p, pre, n) == 0;
}

static bool ends(span s, const char *suf)
{
    size_t n = strlen(suf);
    return s.n >= n && memcmp(s.p + s.n - n, suf, n) == 0;
}

static span drop_front(span s, size_t n)
{
    return (span){s.p + n, s.n - n};
}

static span drop_back(span s, size_t n)
{
    return (span){s.p, s.n - n};
}

/* A pod UID as the kubelet spells it in a cgroup name: 8-4-4-4-12 hex digits joined by dashes
 * (cgroupfs, and systemd before Kubernetes 1.10) or underscores (systemd: a dash would nest the
 * slice), or 32 hex digits (a static pod's UID is a hash). Written into out dashed, as the pod's
 * metadata.uid reads. */
static bool parse_uid(span s, char *out, size_t cap)
{
    if (cap < 37 || (s.n != 32 && s.n != 36))
        return false;
    for (size_t i = 0; i < s.n; i++) {
        bool sep = s.n == 36 && (i == 8 || i == 13 || i == 18 || i == 23);
        if (sep ? s.p[i] != '-' && s.p[i] != '_' : !is_hex(s.p[i]))
            return false;
        out[i] = sep ? '-' : s.p[i];
    }
    out[s.n] = '\0';
    return true;
}

/* The cgroup of a pod: "pod<uid>" (cgroupfs driver) or "[kubelet-]kubepods[-<qos>]-pod<uid>.slice"
 * (systemd driver; the kubelet- prefix is a --cgroup-root such as kind's). */
static bool pod_segment(span seg, char *uid, size_t cap)
{
    if (starts(seg, "pod"))
        return parse_uid(drop_front(seg, 3), uid, cap);
    if (!ends(seg, ".slice"))
        return false;
    span name = drop_back(seg, 6);
    for (size_t i = 0; i + 4 <= name.n; i++) {
        if (memcmp(name.p + i, "-pod", 4) != 0)
            continue;
        span owner = {name.p, i};
        if (!ends(owner, "kubepods") && !ends(owner, "kubepods-besteffort") &&
            !ends(owner, "kubepods-burstable"))
            return false;
        return parse_uid(drop_front(name, i + 4), uid, cap);
    }
    return false;
}

/* What container runtimes put around the ID in a cgroup's name: "<prefix><id>.scope" under
 * systemd (containerd's CRI plugin, CRI-O, Docker, podman), "crio-<id>" under cgroupfs. */
static const char *const runtime_prefixes[] = {"cri-containerd-", "crio-", "docker-", "libpod-",
                                               NULL};

/* The container ID in a cgroup's name. Right under a pod's cgroup the kubelet's layout says it
 * is a container, so any runtime's ID is taken (hex digits, maybe with dashes: some runtimes use
 * UUIDs); elsewhere only a 64-hex-digit ID is, so that a unit or user slice never passes for a
 * container. CRI-O's "crio-conmon-<id>.scope" is its monitor process, not the container, and
 * fails the hex test. */
static bool container_segment(span seg, bool under_pod, char *out, size_t cap)
{
    span id = seg;
    if (ends(id, ".scope"))
        id = drop_back(id, 6);
    for (size_t i = 0; runtime_prefixes[i]; i++)
        if (starts(id, runtime_prefixes[i])) {
            id = drop_front(id, strlen(runtime_prefixes[i]));
            break;
        }
    if (id.n >= cap || (under_pod ? id.n < 12 || id.n > 64 : id.n != 64) || !is_hex(id.p[0]))
        return false;
    for (size_t i = 0; i < id.n; i++)
        if (!is_hex(id.p[i]) && !(under_pod && id.p[i] == '-'))
            return false;
    memcpy(out, id.p, id.n);
    out[id.n] = '\0';
    return true;
}

/* A name in systemd's notation for runc, "<slice>:<prefix>:<id>", left as the cgroup's name
 * when the runtime's and the kubelet's cgroup drivers disagree. */
static bool colon_segment(span seg, gm_cgroup_ident *id)
{
    const char *c1 = memchr(seg.p, ':', seg.n);
    if (!c1)
        return false;
    const char *end = seg.p + seg.n;
    const char *c2 = memchr(c1 + 1, ':', (size_t)(end - c1 - 1));
    if (!c2 || !pod_segment((span){seg.p, (size_t)(c1 - seg.p)}, id->pod_uid, sizeof id->pod_uid))
        return false;
    if (!container_segment((span){c2 + 1, (size_t)(end - c2 - 1)}, true, id->container_id,
                           sizeof id->container_id))
        id->container_id[0] = '\0';
    return true;
}

/* One line, "<hierarchy>:<controllers>:<path>": 2 when it places the process in a pod, 1 in a
 * container only, 0 in neither. The deepest pod counts (a node nested in another's container has
 * its own kubepods). Segments ".." are what a path from another cgroup namespace starts with. */
static int parse_line(span line, gm_cgroup_ident *id)
{
    memset(id, 0, sizeof *id);
    const char *end = line.p + line.n;
    const char *c1 = memchr(line.p, ':', line.n);
    const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
    /* The path is absolute, or (as a fixture of Datadog's shows) starts at "..". */
    if (!c2 || c2 + 1 >= end || (c2[1] != '/' && c2[1] != '.'))
        return 0;
    span segs[128];
    size_t n = 0;
    for (const char *p = c2 + 1; p < end && n < sizeof segs / sizeof *segs;) {
        const char *slash = memchr(p, '/', (size_t)(end - p));
        const char *e = slash ? slash : end;
        span s = {p, (size_t)(e - p)};
        if (s.n && !(s.n == 2 && s.p[0] == '.' && s.p[1] == '.'))
            segs[n++] = s;
        p = e + 1;
    }
    int found = 0;
    for (size_t i = n; i-- > 0;) {
        gm_cgroup_ident t = {0};
        if (colon_segment(segs[i], &t)) {
            *id = t;
            return 2;
        }
        if (pod_segment(segs[i], t.pod_uid, sizeof t.pod_uid)) {
            if (i + 1 < n)
                container_segment(segs[i + 1], true, t.container_id, sizeof t.container_id);
            *id = t;
            return 2;
        }
        if (!found && container_segment(segs[i], false, t.container_id, sizeof t.container_id)) {
            /* The innermost container, unless a pod turns up above it. */
            memcpy(id->container_id, t.container_id, sizeof id->container_id);
            found = 1;
        }
    }
    return found;
}

bool gm_cgroup_parse(const char *text, size_t len, gm_cgroup_ident *out)
{
    memset(out, 0, sizeof *out);
    bool have_container = false;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        gm_cgroup_ident line;
        int r = parse_line((span){p, (size_t)(le - p)}, &line);
        if (r == 2) {
            *out = line;
            return true;
        }
        if (r == 1 && !have_container) {
            *out = line;
            have_container = true;
        }
        p = le + 1;
    }
    return have_container;
}

int gm_cgroup_read(const char *root, uint32_t pid, gm_cgroup_ident *out)
{
    char path[PATH_MAX];
    char buf[CGROUP_READ_MAX];
    memset(out, 0, sizeof *out);
    if (!root || !root[0])
        root = "/proc";
    int plen = snprintf(path, sizeof path, "%s/%u/cgroup", root, (unsigned)pid);
    if (plen < 0 || (size_t)plen >= sizeof path)
        return GM_EINVAL;
    ssize_t n = gm_host_read_small(path, buf, sizeof buf);
    if (n < 0)
        return GM_ENOENT;
    size_t len = (size_t)n;
    if (len == sizeof buf - 1) {
        /* Cut at the limit: leave out the line it cut. */
        const char *nl = memrchr(buf, '\n', len);
        len = nl ? (size_t)(nl - buf) : 0;
    }
    gm_cgroup_parse(buf, len, out);
    return GM_OK;
}
