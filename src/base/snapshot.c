/* snapshot.c - allocation and copying of gm_snapshot, the unit every consumer reads. */
#include "gpumon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/smi_format.h"

gm_snapshot *gm_snapshot_new(void)
{
    gm_snapshot *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->procs = calloc(GM_MAX_PROCS, sizeof *s->procs);
    if (!s->procs) {
        free(s);
        return NULL;
    }
    return s;
}

void gm_snapshot_free(gm_snapshot *s)
{
    if (!s)
        return;
    free(s->procs);
    free(s);
}

void gm_snapshot_reset(gm_snapshot *s)
{
    gm_process *procs = s->procs;
    /* Only the used prefix of procs needs clearing. */
    memset(procs, 0, s->proc_count * sizeof *procs);
    memset(s, 0, sizeof *s);
    s->procs = procs;
}

void gm_snapshot_copy(gm_snapshot *dst, const gm_snapshot *src)
{
    gm_process *procs = dst->procs;
    memcpy(dst, src, sizeof *dst);
    dst->procs = procs;
    memcpy(dst->procs, src->procs, src->proc_count * sizeof *src->procs);
}

bool gm_snapshot_add_process(gm_snapshot *s, const gm_process *p)
{
    if (s->proc_count >= GM_MAX_PROCS) {
        s->proc_dropped++;
        return false;
    }
    s->procs[s->proc_count++] = *p;
    return true;
}

/* Here, not in collect/, because json.c prints the topology with it. */
const char *gm_p2p_status_code(gm_p2p_status s)
{
    static const char *const codes[] = {"OK", "CNS", "GNS", "TNS", "DR", "NS", "U"};
    return (unsigned)s < sizeof codes / sizeof *codes ? codes[s] : "U";
}

const gm_mig_device *gm_gpu_process_mig(const gm_gpu *g, const gm_process *p)
{
    if (!g || !p->instance_known)
        return NULL;
    for (unsigned k = 0; k < g->mig_count && k < GM_MAX_MIG; k++)
        if (g->mig[k].gpu_instance_id == p->gpu_instance_id &&
            g->mig[k].compute_instance_id == p->compute_instance_id)
            return &g->mig[k];
    return NULL;
}

const gm_gpu *gm_snapshot_gpu(const gm_snapshot *s, unsigned index)
{
    for (unsigned i = 0; i < s->gpu_count; i++)
        if (s->gpus[i].index == index)
            return &s->gpus[i];
    return NULL;
}

bool gm_gpu_degraded(const gm_gpu *g, int64_t now_ms, char *why, size_t cap)
{
    size_t used = 0;
    bool bad = false;
    if (why && cap)
        why[0] = '\0';
#define GM__REASON(...)                                                        \
    do {                                                                       \
        bad = true;                                                            \
        if (why && used + 3 < cap) {                                           \
            if (used)                                                          \
                used += (size_t)snprintf(why + used, cap - used, "; ");        \
            if (used < cap)                                                    \
                used += (size_t)snprintf(why + used, cap - used, __VA_ARGS__); \
            if (used > cap)                                                    \
                used = cap;                                                    \
        }                                                                      \
    } while (0)
    if (g->lost)
        return false;
    if (gm_gpu_has(g, GM_M_XID_TIME_MS) && gm_gpu_has(g, GM_M_XID_LAST) &&
        g->v[GM_M_XID_LAST] != 0) {
        int64_t age_ms = now_ms - (int64_t)g->v[GM_M_XID_TIME_MS];
        if (age_ms < GM_XID_FRESH_MS)
            GM__REASON("XID %.0f %lld s ago", g->v[GM_M_XID_LAST],
                       (long long)(age_ms > 0 ? age_ms / 1000 : 0));
    }
    if (gm_gpu_has(g, GM_M_ECC_UNCORR_VOL) && g->v[GM_M_ECC_UNCORR_VOL] > 0)
        GM__REASON("%.0f uncorrected ECC errors since the driver loaded",
                   g->v[GM_M_ECC_UNCORR_VOL]);
    if (gm_gpu_has(g, GM_M_REMAP_FAILURE) && g->v[GM_M_REMAP_FAILURE] != 0)
        GM__REASON("a memory row remapping failed");
    /* The driver's own verdict: something (a reset, a reboot, draining) must be done first. */
    if (gm_gpu_has(g, GM_M_RECOVERY_ACTION) && g->v[GM_M_RECOVERY_ACTION] != 0) {
        const char *w = gm_smi_enum_word(GM_SMI_K_RECOVERY, (long long)g->v[GM_M_RECOVERY_ACTION]);
        if (w)
            GM__REASON("the driver asks for a recovery action: %s", w);
        else
            GM__REASON("the driver asks for recovery action %.0f", g->v[GM_M_RECOVERY_ACTION]);
    }
    if (gm_gpu_has(g, GM_M_SRAM_THRESHOLD_EXCEEDED) && g->v[GM_M_SRAM_THRESHOLD_EXCEEDED] != 0)
        GM__REASON("uncorrectable SRAM errors over the driver's threshold");
#undef GM__REASON
    return bad;
}
