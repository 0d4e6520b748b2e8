/* snapshot.c - allocation and copying of gm_snapshot, the unit every consumer reads. */
#include "gpumon.h"

#include <stdlib.h>
#include <string.h>

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

const gm_gpu *gm_snapshot_gpu(const gm_snapshot *s, unsigned index)
{
    for (unsigned i = 0; i < s->gpu_count; i++)
        if (s->gpus[i].index == index)
            return &s->gpus[i];
    return NULL;
}
