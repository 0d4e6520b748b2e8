/* select.h - GPU availability scores, choosing the best N GPUs, and waiting until N qualify:
 * the library behind `gpumon select`, `gpumon wait`, `gpumon run` and GET /api/allocation. */
#ifndef GM_SELECT_H
#define GM_SELECT_H

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/lease.h"
#include "gpumon.h"

/* Weights of the availability score: free memory matters more than idleness because memory is a
 * hard constraint for a job and utilisation a soft one. */
#define GM_SCORE_W_MEMORY 0.6
#define GM_SCORE_W_IDLE   0.4

/* Computes 0.6 x free/total memory + 0.4 x (100 - utilization.gpu)/100 into *score (in [0, 1] for
 * sane readings). Returns false, leaving *score alone, when g cannot be scored: lost, or memory
 * free/total or utilization absent, or total memory 0. */
bool gm_select_score(const gm_gpu *g, double *score);

/* A MIG device counts as busy above this share of its memory used, even with no process listed
 * in it (a job in another PID namespace, a driver that withholds the list): an idle instance
 * uses a few MiB, a CUDA context alone hundreds. */
#define GM_SELECT_MIG_MAX_USED 0.05

/* The score of MIG device m: the same weights, over its own memory; its idle fraction is
 * 1 - SM activity where GPM gives it, else 1 when no process runs in it and 0 when one does
 * (busy says so). False when its memory was not read or its total is 0. */
bool gm_select_score_mig(const gm_mig_device *m, bool busy, double *score);

/* What became of one GPU in a selection. */
typedef enum gm_select_status {
    GM_SEL_SELECTED,   /* among the N chosen */
    GM_SEL_AVAILABLE,  /* qualifies, ranked below the N chosen (or fewer than N qualify) */
    GM_SEL_LOST,       /* fell off the bus */
    GM_SEL_UNSCORABLE, /* free/total memory or utilisation not reported */
    GM_SEL_LOW_MEMORY, /* free memory below min_free_mib */
    GM_SEL_BUSY,       /* utilisation above max_util_pct */
    GM_SEL_LEASED,     /* a gpumon lease holds it (only when leases are not ignored) */
    GM_SEL_HIDDEN,     /* not in CUDA_VISIBLE_DEVICES */
    GM_SEL_NOT_WANTED, /* not in the caller's `only` list (-i/--id) */
} gm_select_status;

/* Stable short name of a status, as the JSON prints it: "selected", "available", "lost",
 * "unscorable", "low_memory", "busy", "leased", "hidden", "not_requested". */
const char *gm_select_status_name(gm_select_status st);

/* What to choose. Zero-initialised plus count = N means: the best N GPUs of all, no thresholds,
 * CUDA_VISIBLE_DEVICES not consulted. */
typedef struct gm_select_request {
    unsigned count;       /* GPUs wanted, 1..GM_MAX_GPUS */
    double min_free_mib;  /* free memory floor, MiB (1048576 bytes), inclusive; 0: none */
    bool has_max_util;    /* apply max_util_pct */
    double max_util_pct;  /* utilization.gpu ceiling, percent, inclusive */
    const unsigned *only; /* driver indices that may be chosen; NULL: every GPU */
    size_t n_only;        /* entries in only */
    const char *visible;  /* a CUDA_VISIBLE_DEVICES value restricting the choice; NULL: none.
                           * See gm_select_visible(). */
    bool ignore_leases;   /* leased GPUs stay eligible (they are still reported as leased) */
    /* Choose MIG devices instead of whole GPUs: each MIG device is a unit, free when no process
     * runs in it, at most GM_SELECT_MIG_MAX_USED of its memory is used and it meets min_free_mib
     * (max_util_pct applies to its GPM SM activity, where given). only and visible still name
     * GPUs (a MIG device of a listed GPU qualifies; visible may also list MIG UUIDs). */
    bool mig;
} gm_select_request;

/* One GPU as the selection saw it. Metric fields are meaningful only when their has_ flag is
 * set (absent readings are never shown as 0). */
typedef struct gm_select_gpu {
    unsigned index;
    char name[GM_NAME_LEN];
    char uuid[GM_UUID_LEN];
    gm_select_status status;
    bool has_free, has_total, has_util, has_score;
    double free_mib, total_mib, util_pct, score;
    bool leased;      /* a gpumon lease holds it (whether or not that excluded it) */
    pid_t lease_pid;  /* holder's pid when leased and known, else 0 */
    char reason[128]; /* why it was excluded, for people; "" for selected/available */
    /* Who made it ("NVIDIA", "AMD", "" unknown) and its index among that vendor's GPUs in
     * snapshot order: what CUDA_VISIBLE_DEVICES or ROCR/HIP_VISIBLE_DEVICES number it by. */
    char vendor[16];
    unsigned vendor_index;
    /* A MIG device (request.mig): index is its number (gm_lease_mig_at), uuid its "MIG-..."
     * UUID, name its GPU's; gpu_index is its GPU's driver index. has_util/util_pct are its GPM
     * SM activity. busy_pid: a process running in it (0: none). */
    bool mig;
    unsigned gpu_index;
    char profile[GM_MIG_PROFILE_LEN];
    unsigned gpu_instance_id, compute_instance_id;
    uint32_t busy_pid;
} gm_select_gpu;

/* A selection. gpus[] lists every GPU of the snapshot in rank order: selected ones by score
 * (best first, ties to the lower index), then available ones the same way, then excluded ones
 * by index. selected[] holds the chosen driver indices in ascending order, which is the order
 * CUDA_VISIBLE_DEVICES gets (the set is what matters; ascending keeps PCI order). */
typedef struct gm_select_result {
    gm_select_request req; /* the request, with only/visible pointers cleared */
    bool visible_set;      /* the request carried a CUDA_VISIBLE_DEVICES value */
    char visible[256];     /* that value (truncated) */
    bool satisfied;        /* n_selected == req.count */
    unsigned n_eligible;   /* GPUs that qualify */
    unsigned n_selected;   /* req.count when satisfied, else 0 */
    unsigned selected[GM_MAX_GPUS];
    unsigned n_gpus;
    gm_select_gpu gpus[GM_MAX_GPUS];
    int64_t time_ms; /* the snapshot's time */
    char provider[32];
} gm_select_result;

/* Ranks the GPUs of s for req into out. leases is NULL (leases unknown: none excluded) or
 * s->gpu_count entries from gm_lease_list(), parallel to s->gpus (with req->mig: one per MIG
 * device from gm_lease_list_mig()). Returns GM_OK whether or not enough GPUs qualify (see
 * out->satisfied); GM_EINVAL for a bad request (count 0 or above GM_MAX_GPUS, negative
 * thresholds); GM_ENODEV for req->mig when no GPU of s is in MIG mode. Pure: no I/O. */
int gm_select(const gm_snapshot *s, const gm_select_request *req, const gm_lease_holder *leases,
              gm_select_result *out, gm_error *err);

/* Driver indices of every qualifying GPU, best first (the order to try leases in); returns how
 * many (at most cap are written). */
size_t gm_select_candidates(const gm_select_result *r, unsigned *out, size_t cap);

/* "0,3": the selected indices for CUDA_VISIBLE_DEVICES ("" when unsatisfied); for MIG devices
 * their UUIDs ("MIG-...,MIG-..."), which is how CUDA_VISIBLE_DEVICES names them. */
void gm_select_format_list(const gm_select_result *r, char *buf, size_t len);

/* The environment that hands the selected GPUs to a program, each vendor's runtime numbering
 * its own GPUs: NVIDIA's (and GPUs of unknown vendor) in CUDA_VISIBLE_DEVICES by driver index;
 * AMD's in ROCR_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES by their index among the AMD GPUs (ROCm
 * numbers them in PCI bus order, as gpumon lists them). A variable no selected GPU needs is
 * left out (has_* false): HIP also reads CUDA_VISIBLE_DEVICES, so an AMD-only selection must
 * not set it. */
typedef struct gm_select_env {
    bool has_cuda, has_amd;
    char cuda[GM_MAX_GPUS * GM_MIG_UUID_LEN]; /* "0,3"; MIG devices by UUID */
    char amd[GM_MAX_GPUS * 4 + 1]; /* for both ROCR_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES */
} gm_select_env;
void gm_select_format_env(const gm_select_result *r, gm_select_env *out);

/* One sentence for a person saying what was asked and why it was not met (or what was chosen
 * when it was), e.g. "need 2 GPUs with >= 20000 MiB free and <= 10% utilization; 1 qualifies
 * (GPU 1); best of the rest: GPU 0 12000 MiB free, 5% (too little free memory), GPU 2 lost". */
void gm_select_explain(const gm_select_result *r, char *buf, size_t len);

/* The short form of what a wait still misses, for a progress line at each check: "1 of 2 GPUs
 * free (GPU 1: 12000 MiB free < 20480 MiB; GPU 2: 95% util > 10%)", the GPUs that could have
 * counted and did not (at most 4, then "+N more"); GPUs the caller ruled out (-i,
 * CUDA_VISIBLE_DEVICES) are not named. "2 of 2 GPUs free" when satisfied. */
void gm_select_shortfall(const gm_select_result *r, char *buf, size_t len);

/* The JSON form, shared by `gpumon select --format json` and GET /api/allocation (with
 * "mig": true and, per MIG device, "gpu_index", "profile", "gpu_instance_id",
 * "compute_instance_id" when MIG devices were chosen):
 *   {"satisfied", "count", "min_free_mib", "max_util_percent" (null: none),
 *    "cuda_visible_devices" (the restriction, null: none), "eligible", "indices": [...],
 *    "uuids": [...], "selection": "0,3", "reason" (null when satisfied), "time", "provider",
 *    "allocation_method": "availability_score",
 *    "gpus": [{"index", "name", "uuid", "status", "reason", "memory_free_mib",
 *              "memory_total_mib", "utilization_percent", "availability_score",
 *              "leased_by_pid", "leased"}]}
 * Absent readings are null. A new reference, NULL when out of memory. */
json_t *gm_select_result_json(const gm_select_result *r);

/* Resolves a CUDA_VISIBLE_DEVICES value against s the way the CUDA runtime reads it: a comma
 * list of indices or GPU UUIDs ("GPU-..." or a unique prefix of one); the list ends at the first
 * entry that names no GPU (so "" and "-1" hide every GPU). Integers are taken as driver (NVML)
 * indices, which is CUDA's order under CUDA_DEVICE_ORDER=PCI_BUS_ID and on hosts of one GPU
 * model. Writes visible[i] for s->gpus[i]. */
void gm_select_visible(const char *value, const gm_snapshot *s, bool *visible);

/* ---- waiting ----------------------------------------------------------------------------- */

/* Called after each check with the latest result (and the 1-based check number). */
typedef void (*gm_wait_progress_fn)(const gm_select_result *r, unsigned check, void *ud);

typedef struct gm_wait_options {
    double timeout_s;                    /* give up after this long (0: check once); must be >= 0 */
    double interval_s;                   /* between checks, > 0 (fractions fine) */
    const volatile sig_atomic_t *cancel; /* optional: non-zero (e.g. set by a SIGINT handler)
                                          * makes the wait return within ~50 ms */
    const char *lease_dir;               /* consult leases here (NULL: no leases at all) */
    bool take_lease;              /* with lease_dir: hold the chosen GPUs on success (see below) */
    gm_wait_progress_fn progress; /* optional */
    void *progress_ud;
} gm_wait_options;

/* Samples c, selects per req, and repeats every interval until the request is met or timeout_s
 * has passed (the last check falls at the deadline). A first check happens at once.
 *
 * With lease_dir, GPUs leased by others are excluded (unless req->ignore_leases). With
 * take_lease too, success means the chosen GPUs are leased: the lease is tried on the qualifying
 * GPUs best first; if another process took some in between, the wait goes on. *lease_out then
 * receives the lease (the caller releases it) and out->selected is exactly the leased set.
 *
 * snap is scratch for the samples (from gm_snapshot_new); it holds the last one on return.
 * Returns GM_OK (out satisfied); GM_ETIMEDOUT (out holds the last check; err says what was
 * missing, from gm_select_explain); GM_ECANCELED when *cancel became non-zero (err: "cancelled");
 * GM_EINVAL for bad options; the error of a lease directory that cannot be used. A sample that
 * fails is not fatal (GPUs come and go): the wait goes on and the timeout message names it. */
int gm_wait_for(gm_collector *c, const gm_select_request *req, const gm_wait_options *opt,
                gm_snapshot *snap, gm_select_result *out, gm_lease **lease_out, gm_error *err);

#endif
