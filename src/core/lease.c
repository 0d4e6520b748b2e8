/* lease.c - GPU leases as flock'd files, one per GPU UUID, so the kernel frees a dead holder's
 * GPUs and two gpumon processes never lease the same GPU. */
#include "core/lease.h"
#include "base/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define LEASE_PATH_MAX 4096

typedef struct lease_entry {
    unsigned index;
    char uuid[GM_UUID_LEN];
    int fd;
    bool writable; /* the pid could be recorded (a shared directory may give us read-only files) */
} lease_entry;

struct gm_lease {
    pid_t owner; /* the process that took the locks; a forked child must not unlock them */
    size_t count;
    lease_entry e[];
};

int gm_lease_default_dir(char *buf, size_t len, gm_error *err)
{
    const char *env = getenv(GM_LEASE_DIR_ENV);
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    int n;
    if (env && *env)
        n = snprintf(buf, len, "%s", env);
    else if (xdg && xdg[0] == '/')
        n = snprintf(buf, len, "%s/gpumon/leases", xdg);
    else
        n = snprintf(buf, len, "/tmp/gpumon-%u/leases", (unsigned)getuid());
    if (n < 0 || (size_t)n >= len)
        return gm_error_set(err, GM_EINVAL, "lease directory path is too long");
    return GM_OK;
}

/* The lock file of g: its UUID with anything outside [A-Za-z0-9._-] replaced, so a provider's
 * odd UUID can never name a path outside the directory; "index-N" when there is no UUID. */
static int lock_path(const char *dir, const char *uuid, unsigned index, char *buf, size_t len,
                     gm_error *err)
{
    char name[GM_UUID_LEN + 16];
    if (uuid[0]) {
        size_t i = 0;
        for (; uuid[i] && i < sizeof name - 1; i++) {
            char c = uuid[i];
            bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || (c == '.' && i > 0);
            name[i] = ok ? c : '_';
        }
        name[i] = '\0';
    } else {
        snprintf(name, sizeof name, "index-%u", index);
    }
    int n = snprintf(buf, len, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= len)
        return gm_error_set(err, GM_EINVAL, "lease path for GPU %u is too long", index);
    return GM_OK;
}

static int errno_code(int e)
{
    return (e == EACCES || e == EPERM || e == EROFS) ? GM_EPERM : GM_EIO;
}

/* mkdir -p with mode 0700 for what it creates; the result must be a real directory. */
static int make_dir(const char *dir, gm_error *err)
{
    char path[LEASE_PATH_MAX];
    if (!dir || !*dir)
        return gm_error_set(err, GM_EINVAL, "empty lease directory");
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
        return gm_error_set(err, GM_EINVAL, "lease directory path is too long");
    for (char *p = path + 1;; p++) {
        bool end = *p == '\0';
        if (*p == '/' || end) {
            *p = '\0';
            if (mkdir(path, 0700) < 0 && errno != EEXIST)
                return gm_error_set(err, errno_code(errno), "cannot create lease directory %s: %s",
                                    path, strerror(errno));
            if (end)
                break;
            *p = '/';
        }
    }
    struct stat st;
    if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
        return gm_error_set(err, GM_EIO, "lease directory %s is not a directory", dir);
    return GM_OK;
}

static int flock_retry(int fd, int op)
{
    int rc;
    do
        rc = flock(fd, op);
    while (rc < 0 && errno == EINTR);
    return rc;
}

/* Opens (creating) a lock file. O_NOFOLLOW: a symlink planted in a shared directory must not
 * make us truncate someone else's file. Falls back to read-only, which flock accepts, when the
 * file belongs to another user of a shared directory. */
static int open_lock(const char *path, bool create, bool *writable)
{
    int flags = O_CLOEXEC | O_NOFOLLOW | O_NOCTTY;
    int fd = open(path, flags | O_RDWR | (create ? O_CREAT : 0), 0666);
    *writable = fd >= 0;
    if (fd < 0 && (errno == EACCES || errno == EROFS))
        fd = open(path, flags | O_RDONLY);
    return fd;
}

/* The directory lock: exclusive while acquiring, shared while listing, so a listing's probe
 * never makes an acquirer mistake a free GPU for a held one. Returns the fd or -1. */
static int dir_lock(const char *dir, int op, bool create, gm_error *err)
{
    char path[LEASE_PATH_MAX];
    if (snprintf(path, sizeof path, "%s/.lock", dir) >= (int)sizeof path) {
        gm_error_set(err, GM_EINVAL, "lease directory path is too long");
        return -1;
    }
    bool w;
    int fd = open_lock(path, create, &w);
    if (fd < 0) {
        gm_error_set(err, errno_code(errno), "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    if (flock_retry(fd, op) < 0) {
        gm_error_set(err, GM_EIO, "cannot lock %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static pid_t read_pid(int fd)
{
    char buf[32];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *end;
    long v = strtol(buf, &end, 10);
    return (end != buf && v > 0 && v <= 0x7fffffffL) ? (pid_t)v : 0;
}

static void write_pid(int fd)
{
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
    /* Best effort: the lock is what matters; the pid only tells people who holds it. */
    if (ftruncate(fd, 0) == 0 && pwrite(fd, buf, (size_t)n, 0) < 0)
        return;
}

/* Whether some process holds the lock file of uuid (index when there is none) right now, and
 * its pid when it wrote one. A missing or unopenable file is not held. */
static bool probe_held(const char *dir, const char *uuid, unsigned index, pid_t *pid)
{
    char path[LEASE_PATH_MAX];
    if (lock_path(dir, uuid, index, path, sizeof path, NULL) < 0)
        return false;
    bool w, held = false;
    int fd = open_lock(path, false, &w);
    if (fd < 0)
        return false;
    if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
        flock(fd, LOCK_UN);
    } else if (errno == EWOULDBLOCK) {
        held = true;
        if (pid)
            *pid = read_pid(fd);
    }
    close(fd);
    return held;
}

/* A GPU is held through its MIG devices when any of them is leased. */
static bool mig_held(const char *dir, const gm_gpu *g, pid_t *pid)
{
    for (unsigned k = 0; k < g->mig_count && k < GM_MAX_MIG; k++)
        if (g->mig[k].uuid[0] && probe_held(dir, g->mig[k].uuid, k, pid))
            return true;
    return false;
}

static bool dir_exists(const char *dir)
{
    struct stat st;
    return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

int gm_lease_list(const char *dir, const gm_snapshot *s, gm_lease_holder *out, gm_error *err)
{
    if (!dir || !s || !out)
        return gm_error_set(err, GM_EINVAL, "gm_lease_list: NULL argument");
    memset(out, 0, sizeof *out * s->gpu_count);
    if (!dir_exists(dir))
        return GM_OK; /* nobody ever leased through it */
    gm_error derr = {0};
    int dfd = dir_lock(dir, LOCK_SH, false, &derr);
    /* No .lock file yet means no acquisition ever finished here; probe anyway (cheap). */
    for (unsigned i = 0; i < s->gpu_count; i++) {
        const gm_gpu *g = &s->gpus[i];
        if (probe_held(dir, g->uuid, g->index, &out[i].pid))
            out[i].held = true;
        else if (mig_held(dir, g, &out[i].pid))
            out[i].held = out[i].indirect = true;
    }
    if (dfd >= 0)
        close(dfd);
    return GM_OK;
}

unsigned gm_lease_mig_count(const gm_snapshot *s)
{
    unsigned n = 0;
    for (unsigned i = 0; i < s->gpu_count; i++)
        n += s->gpus[i].mig_count < GM_MAX_MIG ? s->gpus[i].mig_count : GM_MAX_MIG;
    return n < GM_MAX_GPUS ? n : GM_MAX_GPUS;
}

const gm_mig_device *gm_lease_mig_at(const gm_snapshot *s, unsigned k, const gm_gpu **gpu)
{
    if (k >= GM_MAX_GPUS)
        return NULL;
    for (unsigned i = 0; i < s->gpu_count; i++) {
        unsigned n = s->gpus[i].mig_count < GM_MAX_MIG ? s->gpus[i].mig_count : GM_MAX_MIG;
        if (k < n) {
            if (gpu)
                *gpu = &s->gpus[i];
            return &s->gpus[i].mig[k];
        }
        k -= n;
    }
    return NULL;
}

int gm_lease_list_mig(const char *dir, const gm_snapshot *s, gm_lease_holder *out, gm_error *err)
{
    if (!dir || !s || !out)
        return gm_error_set(err, GM_EINVAL, "gm_lease_list_mig: NULL argument");
    unsigned n = gm_lease_mig_count(s);
    memset(out, 0, sizeof *out * n);
    if (!dir_exists(dir))
        return GM_OK;
    gm_error derr = {0};
    int dfd = dir_lock(dir, LOCK_SH, false, &derr);
    for (unsigned k = 0; k < n; k++) {
        const gm_gpu *g = NULL;
        const gm_mig_device *m = gm_lease_mig_at(s, k, &g);
        if (probe_held(dir, m->uuid, k, &out[k].pid))
            out[k].held = true;
        else if (probe_held(dir, g->uuid, g->index, &out[k].pid))
            out[k].held = out[k].indirect = true;
    }
    if (dfd >= 0)
        close(dfd);
    return GM_OK;
}

static void unlock_entries(gm_lease *l, bool owner)
{
    for (size_t i = 0; i < l->count; i++) {
        if (l->e[i].fd < 0)
            continue;
        /* Clear the pid before unlocking, so a new holder's pid is never erased by us. */
        if (owner) {
            if (l->e[i].writable && ftruncate(l->e[i].fd, 0) < 0) {
                /* the unlock below is what frees the GPU; an unreadable pid is harmless */
            }
            flock(l->e[i].fd, LOCK_UN);
        }
        close(l->e[i].fd);
        l->e[i].fd = -1;
    }
}

static int cmp_entry(const void *a, const void *b)
{
    unsigned x = ((const lease_entry *)a)->index, y = ((const lease_entry *)b)->index;
    return x < y ? -1 : x > y;
}

/* One thing a lease can hold: a GPU, or a MIG device of gpu. */
typedef struct lease_unit {
    unsigned index; /* driver index of a GPU, number of a MIG device */
    const char *uuid;
    const gm_gpu *gpu;        /* the GPU, or the MIG device's GPU */
    const gm_mig_device *mig; /* NULL for a whole GPU */
} lease_unit;

/* Another holder keeps u: a lease on its whole GPU (u a MIG device) or on one of its MIG
 * devices (u a GPU). The caller holds the directory lock, so no acquisition runs meanwhile. */
static bool excluded(const char *dir, const lease_unit *u, pid_t *pid)
{
    if (u->mig)
        return probe_held(dir, u->gpu->uuid, u->gpu->index, pid);
    return mig_held(dir, u->gpu, pid);
}

static int acquire_units(const char *dir, const lease_unit *units, size_t ng, size_t n_wanted,
                         gm_lease **out, gm_error *err)
{
    const char *what = ng && units[0].mig ? "MIG device" : "GPU";
    if (n_wanted > ng)
        return gm_error_set(err, GM_EINVAL, "cannot lease %zu %ss out of %zu distinct candidates",
                            n_wanted, what, ng);
    int rc = make_dir(dir, err);
    if (rc < 0)
        return rc;
    gm_lease *l = calloc(1, sizeof *l + n_wanted * sizeof l->e[0]);
    if (!l)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    l->owner = getpid();

    int dfd = dir_lock(dir, LOCK_EX, true, err);
    if (dfd < 0) {
        free(l);
        return err ? err->code : GM_EIO;
    }
    char busy[256] = "";
    size_t busy_len = 0;
    for (size_t i = 0; i < ng && l->count < n_wanted; i++) {
        const lease_unit *u = &units[i];
        char path[LEASE_PATH_MAX];
        rc = lock_path(dir, u->uuid, u->index, path, sizeof path, err);
        if (rc < 0)
            goto fail;
        pid_t pid = 0;
        int fd = -1;
        bool writable = false, other = excluded(dir, u, &pid);
        if (!other) {
            fd = open_lock(path, true, &writable);
            if (fd < 0) {
                rc = gm_error_set(err, errno_code(errno), "cannot open lease file %s: %s", path,
                                  strerror(errno));
                goto fail;
            }
            if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                int e = errno;
                if (e != EWOULDBLOCK) {
                    close(fd);
                    rc = gm_error_set(err, GM_EIO, "cannot lock %s: %s", path, strerror(e));
                    goto fail;
                }
                pid = read_pid(fd);
                close(fd);
                fd = -1;
            }
        }
        if (fd < 0) {
            char name[GM_UUID_LEN + 32];
            if (u->mig)
                snprintf(name, sizeof name, "%s (GPU %u)", u->uuid, u->gpu->index);
            else
                snprintf(name, sizeof name, "GPU %u", u->index);
            int n = snprintf(busy + busy_len, sizeof busy - busy_len, "%s%s%s",
                             busy_len ? ", " : "", name,
                             other ? (u->mig ? " through its GPU" : " through a MIG device") : "");
            if (n > 0 && busy_len + (size_t)n < sizeof busy)
                busy_len += (size_t)n;
            if (pid) {
                n = snprintf(busy + busy_len, sizeof busy - busy_len, " (pid %ld)", (long)pid);
                if (n > 0 && busy_len + (size_t)n < sizeof busy)
                    busy_len += (size_t)n;
            }
            continue;
        }
        if (writable)
            write_pid(fd);
        lease_entry *e = &l->e[l->count++];
        e->index = u->index;
        snprintf(e->uuid, sizeof e->uuid, "%s", u->uuid);
        e->fd = fd;
        e->writable = writable;
    }
    if (l->count < n_wanted) {
        rc =
            gm_error_set(err, GM_EBUSY, "only %zu of %zu %ss could be leased; leased by others: %s",
                         l->count, n_wanted, what, busy_len ? busy : "none");
        goto fail;
    }
    close(dfd);
    qsort(l->e, l->count, sizeof l->e[0], cmp_entry);
    *out = l;
    return GM_OK;
fail:
    unlock_entries(l, true);
    close(dfd);
    free(l);
    return rc;
}

int gm_lease_acquire(const char *dir, const gm_snapshot *s, const unsigned *candidates,
                     size_t n_candidates, size_t n_wanted, gm_lease **out, gm_error *err)
{
    if (!out)
        return gm_error_set(err, GM_EINVAL, "gm_lease_acquire: NULL output");
    *out = NULL;
    if (!dir || !s || (!candidates && n_candidates))
        return gm_error_set(err, GM_EINVAL, "gm_lease_acquire: NULL argument");
    if (n_wanted == 0 || n_wanted > n_candidates)
        return gm_error_set(err, GM_EINVAL, "cannot lease %zu GPUs out of %zu candidates", n_wanted,
                            n_candidates);
    lease_unit units[GM_MAX_GPUS];
    size_t ng = 0;
    for (size_t i = 0; i < n_candidates; i++) {
        const gm_gpu *g = gm_snapshot_gpu(s, candidates[i]);
        if (!g)
            return gm_error_set(err, GM_ENOENT, "no GPU %u to lease", candidates[i]);
        bool dup = false;
        for (size_t k = 0; k < ng && !dup; k++)
            dup = units[k].gpu == g;
        if (!dup && ng < GM_MAX_GPUS)
            units[ng++] = (lease_unit){.index = g->index, .uuid = g->uuid, .gpu = g};
    }
    return acquire_units(dir, units, ng, n_wanted, out, err);
}

int gm_lease_acquire_mig(const char *dir, const gm_snapshot *s, const unsigned *candidates,
                         size_t n_candidates, size_t n_wanted, gm_lease **out, gm_error *err)
{
    if (!out)
        return gm_error_set(err, GM_EINVAL, "gm_lease_acquire_mig: NULL output");
    *out = NULL;
    if (!dir || !s || (!candidates && n_candidates))
        return gm_error_set(err, GM_EINVAL, "gm_lease_acquire_mig: NULL argument");
    if (n_wanted == 0 || n_wanted > n_candidates)
        return gm_error_set(err, GM_EINVAL, "cannot lease %zu MIG devices out of %zu candidates",
                            n_wanted, n_candidates);
    lease_unit units[GM_MAX_GPUS];
    size_t ng = 0;
    for (size_t i = 0; i < n_candidates; i++) {
        const gm_gpu *g = NULL;
        const gm_mig_device *m = gm_lease_mig_at(s, candidates[i], &g);
        if (!m)
            return gm_error_set(err, GM_ENOENT, "no MIG device %u to lease", candidates[i]);
        if (!m->uuid[0])
            return gm_error_set(err, GM_ENOENT, "MIG device %u has no UUID to lease it by",
                                candidates[i]);
        bool dup = false;
        for (size_t k = 0; k < ng && !dup; k++)
            dup = units[k].mig == m;
        if (!dup && ng < GM_MAX_GPUS)
            units[ng++] = (lease_unit){.index = candidates[i], .uuid = m->uuid, .gpu = g, .mig = m};
    }
    return acquire_units(dir, units, ng, n_wanted, out, err);
}

size_t gm_lease_count(const gm_lease *l)
{
    return l ? l->count : 0;
}

size_t gm_lease_indices(const gm_lease *l, unsigned *out, size_t cap)
{
    if (!l)
        return 0;
    for (size_t i = 0; i < l->count && i < cap; i++)
        out[i] = l->e[i].index;
    return l->count;
}

const char *gm_lease_uuid(const gm_lease *l, size_t i)
{
    return l && i < l->count ? l->e[i].uuid : NULL;
}

void gm_lease_release(gm_lease *l)
{
    if (!l)
        return;
    /* A forked child shares our open file descriptions: unlocking there would free the GPUs
     * of the parent, which still runs. It only closes its copies. */
    unlock_entries(l, l->owner == getpid());
    free(l);
}
