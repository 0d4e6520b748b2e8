/* calltime.h - the collector's self-measurement: per named call (an NVML function, a /proc read,
 * an nvidia-smi run), how often it ran and the wall and thread CPU time it took. */
#ifndef GM_CALLTIME_H
#define GM_CALLTIME_H

#include <stddef.h>
#include <stdint.h>

#include "gpumon.h"

/* Distinct names a table keeps; calls under further names are booked as "other". */
#define GM_CALLTIME_MAX 160

typedef struct gm_calltime gm_calltime;

/* When a timed call started: CLOCK_MONOTONIC and CLOCK_THREAD_CPUTIME_ID in ns; wall_ns is 0
 * when no table is in use on this thread (the call is not timed). */
typedef struct gm_calltime_mark {
    int64_t wall_ns, cpu_ns;
} gm_calltime_mark;

gm_calltime *gm_calltime_new(void);
void gm_calltime_free(gm_calltime *t);

/* Makes t the table this thread's timed calls are booked in (NULL: none); returns the previous
 * one, to be put back. The collector sets it around its provider and host calls, so the readers
 * below it need no handle. */
gm_calltime *gm_calltime_use(gm_calltime *t);

/* Starts timing a call: two clock reads, nothing when no table is in use. */
void gm_calltime_begin(gm_calltime_mark *m);
/* Books the call that m started under name, a string that outlives the table (a literal). */
void gm_calltime_end(const char *name, const gm_calltime_mark *m);

/* Copies up to cap entries into out in first-call order; returns how many there are. */
size_t gm_calltime_stats(const gm_calltime *t, gm_call_stat *out, size_t cap);

/* Evaluates call (an int expression) timed under name, which must be a literal or another
 * string that lives as long as the process. */
#define GM_TIMED(name, call)             \
    __extension__({                      \
        gm_calltime_mark gm_m_;          \
        gm_calltime_begin(&gm_m_);       \
        __typeof__(call) gm_r_ = (call); \
        gm_calltime_end((name), &gm_m_); \
        gm_r_;                           \
    })

#endif
