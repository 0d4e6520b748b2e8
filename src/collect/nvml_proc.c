/* nvml_proc.c - the NVML provider's process lists: compute and graphics processes with their
 * memory and MIG instance, merged per PID, and each one's share of the engines. */
#include "collect/nvml_int.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define NV_PROC_RETRIES  4     /* process lists that keep growing give up after this */
#define NV_PROC_MAX      65536 /* entries; bounds what a confused driver can make us allocate */
#define NV_PUTIL_INITIAL 64    /* process samples the first buffer holds: one call in most cases */

static const unsigned proc_types[2] = {GM_PROC_COMPUTE, GM_PROC_GRAPHICS};

/* Fetches one process list into r->buf, growing it while the driver says it is too
 * small (the list can grow between calls). The first call of a fresh state passes count 0,
 * the documented size query; later ones reuse the capacity already there. */
static int fetch_procs(nv_proc_reader *r, unsigned list, nvmlDevice_t dev, unsigned *n_out)
{
    size_t stride = r->stride[list];
    for (int attempt = 0; attempt <= NV_PROC_RETRIES; attempt++) {
        unsigned cap = (unsigned)(r->buf_bytes / stride);
        unsigned n = cap;
        int rc = NV_T(r->sym[list], r->list[list](dev, &n, cap ? r->buf : NULL));
        if (rc == NV_SUCCESS) {
            *n_out = n < cap ? n : cap;
            return rc;
        }
        if (rc != NV_ERROR_INSUFFICIENT_SIZE)
            return rc;
        if (n <= cap || n > NV_PROC_MAX)
            return NV_ERROR_INSUFFICIENT_SIZE; /* nonsense answer: give up on this list */
        /* Headroom so a few new processes do not cost another round trip next second. */
        size_t want = (size_t)n + n / 4 + 8;
        /* Sized for the larger entry so either list revision fits. */
        unsigned char *buf = realloc(r->buf, want * NV_PROC_V2_SIZE);
        if (!buf)
            return NV_ERROR_MEMORY;
        r->buf = buf;
        r->buf_bytes = want * NV_PROC_V2_SIZE;
    }
    return NV_ERROR_INSUFFICIENT_SIZE;
}

/* Adds the processes of one list to out, merging PIDs already listed for this GPU (from
 * index start on): across lists the type bits join; within one list (one entry per MIG
 * instance) the memory adds up. */
static void read_proc_list(nv_proc_reader *r, unsigned list, unsigned gpu_index, nvmlDevice_t dev,
                           gm_snapshot *out, size_t start, nv_pass *p)
{
    unsigned n = 0;
    if (!r->list[list] || !pass_record_ok(p, fetch_procs(r, list, dev, &n), r->sym[list]))
        return;
    size_t stride = r->stride[list];
    unsigned type = proc_types[list];
    for (unsigned k = 0; k < n; k++) {
        unsigned pid;
        unsigned long long mem;
        memcpy(&pid, r->buf + k * stride + NV_PROC_PID_OFF, sizeof pid);
        memcpy(&mem, r->buf + k * stride + NV_PROC_MEM_OFF, sizeof mem);
        bool mem_valid = mem != NV_VALUE_NOT_AVAILABLE;
        /* v2/v3 name the MIG instance; outside MIG mode the ids are NVML's "not available". */
        unsigned gi = UINT_MAX, ci = UINT_MAX;
        if (stride >= NV_PROC_V2_SIZE) {
            memcpy(&gi, r->buf + k * stride + NV_PROC_GI_OFF, sizeof gi);
            memcpy(&ci, r->buf + k * stride + NV_PROC_CI_OFF, sizeof ci);
        }
        gm_process *e = NULL;
        for (size_t j = start; j < out->proc_count; j++) {
            if (out->procs[j].pid == pid) {
                e = &out->procs[j];
                break;
            }
        }
        if (!e) {
            gm_process np;
            memset(&np, 0, sizeof np);
            np.gpu_index = gpu_index;
            np.pid = pid;
            np.type = type;
            np.mem_valid = mem_valid;
            np.used_mem_bytes = mem_valid ? mem : 0;
            np.instance_known = gi != UINT_MAX && ci != UINT_MAX;
            np.gpu_instance_id = np.instance_known ? gi : 0;
            np.compute_instance_id = np.instance_known ? ci : 0;
            gm_snapshot_add_process(out, &np);
            continue;
        }
        if ((e->type & type) && e->mem_valid && mem_valid)
            e->used_mem_bytes += mem;
        else if (!e->mem_valid && mem_valid) {
            e->mem_valid = true;
            e->used_mem_bytes = mem;
        }
        e->type |= type;
    }
}

/* Fetches the process samples newer than the GPU's last into r->util_buf: one call while the
 * buffer is large enough. NVML answers NOT_FOUND when there is no newer sample. */
static int fetch_proc_util(nv_proc_reader *r, nv_gpu_procs *g, nvmlDevice_t dev, unsigned *n_out)
{
    for (int attempt = 0; attempt <= NV_PROC_RETRIES; attempt++) {
        if (!r->util_buf) {
            r->util_buf = calloc(NV_PUTIL_INITIAL, sizeof *r->util_buf);
            if (!r->util_buf)
                return NV_ERROR_MEMORY;
            r->util_cap = NV_PUTIL_INITIAL;
        }
        unsigned n = r->util_cap;
        int rc =
            NV_T("nvmlDeviceGetProcessUtilization", r->util(dev, r->util_buf, &n, g->util_last_ts));
        if (rc == NV_SUCCESS) {
            *n_out = n < r->util_cap ? n : r->util_cap;
            return rc;
        }
        if (rc != NV_ERROR_INSUFFICIENT_SIZE)
            return rc;
        if (n <= r->util_cap || n > NV_PROC_MAX)
            return NV_ERROR_INSUFFICIENT_SIZE;
        unsigned want = n + n / 4 + 8;
        nv_proc_util *buf = realloc(r->util_buf, want * sizeof *buf);
        if (!buf)
            return NV_ERROR_MEMORY;
        r->util_buf = buf;
        r->util_cap = want;
    }
    return NV_ERROR_INSUFFICIENT_SIZE;
}

/* Gives the processes of this GPU (out->procs from start on) their newest utilisation sample:
 * one call for all of them, none when the GPU has no process or refused the call before. A
 * process without a sample (it did not run in the period) keeps its utilisation unknown. */
static void read_proc_util(nv_proc_reader *r, nv_gpu_procs *g, nvmlDevice_t dev, gm_snapshot *out,
                           size_t start)
{
    if (!r->util || g->util_nosup || out->proc_count <= start)
        return;
    unsigned n = 0;
    int rc = fetch_proc_util(r, g, dev, &n);
    if (rc == NV_ERROR_NOT_SUPPORTED || rc == NV_ERROR_FUNCTION_NOT_FOUND) {
        g->util_nosup = true;
        return;
    }
    if (rc != NV_SUCCESS)
        return;
    unsigned long long newest = g->util_last_ts;
    for (unsigned k = 0; k < n; k++)
        if (r->util_buf[k].timeStamp > newest)
            newest = r->util_buf[k].timeStamp;
    g->util_last_ts = newest;
    for (size_t j = start; j < out->proc_count; j++) {
        gm_process *e = &out->procs[j];
        const nv_proc_util *best = NULL;
        for (unsigned k = 0; k < n; k++)
            if (r->util_buf[k].pid == e->pid &&
                (!best || r->util_buf[k].timeStamp >= best->timeStamp))
                best = &r->util_buf[k];
        if (!best)
            continue;
        const unsigned v[GM_PROC_UTIL__COUNT] = {best->smUtil, best->memUtil, best->encUtil,
                                                 best->decUtil};
        for (int u = 0; u < GM_PROC_UTIL__COUNT; u++)
            if (v[u] <= 100) { /* past 100 is no percentage: left unknown */
                e->util_pct[u] = (uint8_t)v[u];
                e->util_valid |= (uint8_t)(1u << u);
            }
    }
}

void gm_nvml_procs_read(nv_proc_reader *r, nv_gpu_procs *g, unsigned gpu_index, nvmlDevice_t dev,
                        gm_snapshot *out, size_t start, nv_pass *p)
{
    for (unsigned l = 0; l < 2 && !p->lost; l++)
        read_proc_list(r, l, gpu_index, dev, out, start, p);
    if (!p->lost)
        read_proc_util(r, g, dev, out, start);
}

void gm_nvml_procs_free(nv_proc_reader *r)
{
    free(r->buf);
    free(r->util_buf);
}
