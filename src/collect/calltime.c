/* calltime.c - a bounded table of call counts and times, one per collector, reached through a
 * thread-local pointer so that the readers under the collector book their calls without a
 * handle passed down to each of them. */
#include "collect/calltime.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct entry {
    const char *name;
    uint64_t count;
    int64_t wall_ns, cpu_ns;
    uint64_t cpu_count; /* calls whose CPU time was read; the others got the mean */
    int64_t cpu_read_ns;
} entry;

struct gm_calltime {
    size_t n;
    uint64_t passes;              /* gm_calltime_use calls that made this table current */
    bool cpu_pass;                /* this pass reads the CPU clock on every call */
    entry e[GM_CALLTIME_MAX + 1]; /* the last one is "other" */
};

static _Thread_local gm_calltime *current;

gm_calltime *gm_calltime_new(void)
{
    return calloc(1, sizeof(gm_calltime));
}

void gm_calltime_free(gm_calltime *t)
{
    free(t);
}

gm_calltime *gm_calltime_use(gm_calltime *t)
{
    gm_calltime *prev = current;
    current = t;
    if (t && t != prev) {
        t->passes++;
        t->cpu_pass = t->passes <= GM_CALLTIME_EXACT || t->passes % GM_CALLTIME_CPU_EVERY == 0;
    }
    return prev;
}

static int64_t ns_of(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static entry *find(gm_calltime *t, const char *name)
{
    /* Names are mostly the same literal each time: a pointer compare finds them; strcmp, only
     * when none matched, is for the same text at another address (another translation unit). */
    for (size_t i = 0; i < t->n; i++)
        if (t->e[i].name == name)
            return &t->e[i];
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->e[i].name, name) == 0)
            return &t->e[i];
    if (t->n < GM_CALLTIME_MAX) {
        entry *e = &t->e[t->n++];
        e->name = name;
        return e;
    }
    t->e[GM_CALLTIME_MAX].name = "other";
    return &t->e[GM_CALLTIME_MAX];
}

void gm_calltime_begin(const char *name, gm_calltime_mark *m)
{
    gm_calltime *t = current;
    if (!t) {
        m->wall_ns = 0;
        return;
    }
    entry *e = find(t, name);
    m->entry = e;
    m->cpu_ns = t->cpu_pass || e->cpu_count == 0 ? ns_of(CLOCK_THREAD_CPUTIME_ID) : -1;
    m->wall_ns = ns_of(CLOCK_MONOTONIC);
}

void gm_calltime_end(const gm_calltime_mark *m)
{
    if (m->wall_ns == 0)
        return;
    int64_t wall = ns_of(CLOCK_MONOTONIC) - m->wall_ns;
    entry *e = m->entry;
    int64_t cpu;
    if (m->cpu_ns >= 0) {
        cpu = ns_of(CLOCK_THREAD_CPUTIME_ID) - m->cpu_ns;
        e->cpu_count++;
        e->cpu_read_ns += cpu;
    } else {
        cpu = e->cpu_read_ns / (int64_t)e->cpu_count; /* cpu_count > 0: see begin */
    }
    e->count++;
    e->wall_ns += wall;
    e->cpu_ns += cpu;
}

size_t gm_calltime_stats(const gm_calltime *t, gm_call_stat *out, size_t cap)
{
    if (!t)
        return 0;
    size_t n = t->n + (t->e[GM_CALLTIME_MAX].count ? 1 : 0);
    for (size_t i = 0, k = 0; i <= GM_CALLTIME_MAX && k < cap; i++) {
        const entry *e = &t->e[i];
        if (i >= t->n && !(i == GM_CALLTIME_MAX && e->count))
            continue;
        out[k].name = e->name;
        out[k].count = e->count;
        out[k].wall_s = (double)e->wall_ns / 1e9;
        out[k].cpu_s = (double)e->cpu_ns / 1e9;
        k++;
    }
    return n;
}
