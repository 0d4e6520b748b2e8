/* calltime.h - the collector's self-measurement: per named call (an NVML function, a /proc read,
 * an nvidia-smi run), how often it ran and the wall and thread CPU time it took. */
#ifndef GM_CALLTIME_H
#define GM_CALLTIME_H

#include <stddef.h>
#include <stdint.h>

#include "gpumon.h"

/* Distinct names a table keeps; calls under further names are booked as "other". */
#define GM_CALLTIME_MAX 160
/* The thread CPU clock is a system call (two per call, where the rest of the booking reads the
 * vDSO's clock): it is read on every call of the first GM_CALLTIME_EXACT passes and of one pass
 * in GM_CALLTIME_CPU_EVERY after, and on a name's first call; the other calls are booked at
 * their name's mean CPU time so far. Counts and wall times are always exact. */
#define GM_CALLTIME_EXACT     10
#define GM_CALLTIME_CPU_EVERY 10

typedef struct gm_calltime gm_calltime;

/* When a timed call started: CLOCK_MONOTONIC and CLOCK_THREAD_CPUTIME_ID in ns (cpu_ns -1: the
 * CPU clock is not read for this call); wall_ns is 0 when no table is in use on this thread
 * (the call is not timed). */
typedef struct gm_calltime_mark {
    int64_t wall_ns, cpu_ns;
    void *entry; /* the name's entry in the table */
} gm_calltime_mark;

gm_calltime *gm_calltime_new(void);
void gm_calltime_free(gm_calltime *t);

/* Makes t the table this thread's timed calls are booked in (NULL: none); returns the previous
 * one, to be put back. The collector sets it around its provider and host calls, so the readers
 * below it need no handle; each time it does is a pass (GM_CALLTIME_EXACT). */
gm_calltime *gm_calltime_use(gm_calltime *t);

/* Starts timing a call under name, a string that outlives the table (a literal): one or two
 * clock reads, nothing when no table is in use. */
void gm_calltime_begin(const char *name, gm_calltime_mark *m);
/* Books the call that m started. */
void gm_calltime_end(const gm_calltime_mark *m);

/* Copies up to cap entries into out in first-call order; returns how many there are. */
size_t gm_calltime_stats(const gm_calltime *t, gm_call_stat *out, size_t cap);

/* Evaluates call (an int expression) timed under name, which must be a literal or another
 * string that lives as long as the process. */
#define GM_TIMED(name, call)               \
    __extension__({                        \
        gm_calltime_mark gm_m_;            \
        gm_calltime_begin((name), &gm_m_); \
        __typeof__(call) gm_r_ = (call);   \
        gm_calltime_end(&gm_m_);           \
        gm_r_;                             \
    })

#endif
