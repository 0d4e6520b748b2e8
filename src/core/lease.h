/* lease.h - GPU leases between gpumon processes: one lock file per GPU UUID, held with flock so
 * that a holder that exits, crashes or is killed releases its GPUs automatically. */
#ifndef GM_LEASE_H
#define GM_LEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "gpumon.h"

/* The lease directory holds one file per GPU, named after its UUID (or "index-N" when the
 * provider gave no UUID), plus ".lock", taken briefly so that an acquisition is atomic with
 * respect to every other gpumon process using the same directory. Files are never deleted:
 * unlinking a lock file while someone may hold it would let two processes "hold" the same GPU.
 *
 * Leases only coordinate processes that use the same directory. The default is per user
 * ($XDG_RUNTIME_DIR or /tmp/gpumon-$UID); to coordinate several users, point every one of them
 * at one shared directory (GPU_MONITOR_LEASE_DIR) that they can all write. */

/* Environment variable that overrides the default lease directory. */
#define GM_LEASE_DIR_ENV "GPU_MONITOR_LEASE_DIR"

/* Writes the lease directory to use into buf: $GPU_MONITOR_LEASE_DIR when set and non-empty,
 * else $XDG_RUNTIME_DIR/gpumon/leases when XDG_RUNTIME_DIR is an absolute path, else
 * /tmp/gpumon-<uid>/leases. GM_EINVAL when it does not fit in len. Creates nothing. */
int gm_lease_default_dir(char *buf, size_t len, gm_error *err);

/* Who holds the lease of one GPU, as gm_lease_list() saw it. */
typedef struct gm_lease_holder {
    bool held; /* some process holds this GPU's lock right now */
    pid_t pid; /* the holder's pid as it wrote it; 0 when unknown (not yet written, unreadable) */
    /* held through the other side of a MIG split: a lease on one of this GPU's MIG devices, or
     * (for a MIG device) on its whole GPU. Each excludes the other. */
    bool indirect;
} gm_lease_holder;

/* Fills out[i] for s->gpus[i], i < s->gpu_count, by probing each GPU's lock file without
 * waiting. A missing directory or file means "not held". GPUs this very process holds show as
 * held (with our pid). GM_EINVAL on NULL arguments; otherwise GM_OK (unreadable files count as
 * not held, since nobody could have locked them through this directory either). */
int gm_lease_list(const char *dir, const gm_snapshot *s, gm_lease_holder *out, gm_error *err);

typedef struct gm_lease gm_lease;

/* MIG devices as units of their own. Their numbers run over the snapshot's GPUs in order and
 * each GPU's mig[] in order: GPU 0's first MIG device is 0. A MIG device's lock file is named
 * after its own UUID ("MIG-..."); a lease on a GPU and one on any of its MIG devices exclude
 * each other (a whole GPU is listed as held, indirect, while one of its MIG devices is). */

/* How many MIG devices s holds (at most GM_MAX_GPUS are numbered). */
unsigned gm_lease_mig_count(const gm_snapshot *s);

/* MIG device number k of s and, in *gpu (may be NULL), its GPU; NULL when there is none. */
const gm_mig_device *gm_lease_mig_at(const gm_snapshot *s, unsigned k, const gm_gpu **gpu);

/* gm_lease_list for MIG devices: out[k] for MIG device k, gm_lease_mig_count(s) entries. */
int gm_lease_list_mig(const char *dir, const gm_snapshot *s, gm_lease_holder *out, gm_error *err);

/* gm_lease_acquire for MIG devices: candidates are MIG device numbers; the lease's indices are
 * those numbers and its UUIDs the MIG devices' ("MIG-..."). A MIG device whose GPU is leased
 * whole counts as busy. */
int gm_lease_acquire_mig(const char *dir, const gm_snapshot *s, const unsigned *candidates,
                         size_t n_candidates, size_t n_wanted, gm_lease **out, gm_error *err);

/* Takes leases on n_wanted GPUs of s, trying candidates (driver indices, best first) in order
 * and skipping the ones another holder has; never waits for a GPU (only for the directory lock,
 * which holders keep for microseconds). Creates dir (mode 0700 for the parts it makes) when
 * missing. All or nothing: on GM_OK *out holds exactly n_wanted GPUs; GM_EBUSY when fewer than
 * n_wanted candidates were free (nothing is held then, err names the busy ones); GM_ENOENT when
 * a candidate is not in s; GM_EINVAL when n_wanted is 0 or exceeds n_candidates; GM_EIO or
 * GM_EPERM when the directory or a lock file cannot be made.
 *
 * The lease lives until gm_lease_release() or until this process ends, whichever comes first.
 * The lock descriptors are O_CLOEXEC: a child this process forks and execs (the job of
 * `gpumon run`) does not inherit them, so the lease dies with this process, not with the job.
 * Each lock file records our pid. Not thread-safe on one gm_lease; separate leases are fine. */
int gm_lease_acquire(const char *dir, const gm_snapshot *s, const unsigned *candidates,
                     size_t n_candidates, size_t n_wanted, gm_lease **out, gm_error *err);

/* Number of GPUs the lease holds (0 for NULL). */
size_t gm_lease_count(const gm_lease *l);

/* Copies up to cap driver indices the lease holds into out, ascending; returns how many it holds
 * (which may exceed cap). */
size_t gm_lease_indices(const gm_lease *l, unsigned *out, size_t cap);

/* UUID of the i-th GPU (ascending index order) of the lease, "" when the provider gave none,
 * NULL when i is out of range. */
const char *gm_lease_uuid(const gm_lease *l, size_t i);

/* Releases every GPU of the lease (clears the recorded pid, unlocks) and frees it. NULL is
 * fine. */
void gm_lease_release(gm_lease *l);

#endif
