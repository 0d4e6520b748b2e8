/* bench_validity.c - the rules that flag a benchmark point invalid (see bench_validity.h). */
#include "core/bench_validity.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *gm_bench_throttle_name(uint64_t bit)
{
    /* bit is a one-bit mask; the table is indexed by its position. */
    for (unsigned i = 0; i < GM_CLOCK_REASON_COUNT; i++)
        if (bit == UINT64_C(1) << i)
            return gm_clock_reason_name(i);
    return NULL;
}

static int add(json_t *a, const char *text)
{
    return json_array_append_new(a, json_string(text));
}

json_t *gm_bench_check_reasons(const gm_bench_check *c)
{
    json_t *a = json_array();
    if (!a)
        return NULL;
    char line[512];
    for (size_t i = 0; i < c->nforeign; i++) {
        const gm_bench_foreign *f = &c->foreign[i];
        snprintf(line, sizeof line, "foreign_process: pid %u%s%s%s on GPU %u", f->pid,
                 f->command[0] ? " (" : "", f->command, f->command[0] ? ")" : "", f->gpu);
        add(a, line);
    }
    if (c->foreign_total > c->nforeign) {
        snprintf(line, sizeof line, "foreign_process: %zu more", c->foreign_total - c->nforeign);
        add(a, line);
    }
    for (size_t k = 0; k < c->ngpus; k++) {
        uint64_t bad = c->throttle[k] & GM_BENCH_THROTTLE_INVALID;
        if (!bad)
            continue;
        int used = snprintf(line, sizeof line, "throttled: GPU %u", c->gpu_index[k]);
        for (uint64_t bit = 1; bit && bit <= bad && used < (int)sizeof line; bit <<= 1)
            if (bad & bit)
                used += snprintf(line + used, sizeof line - (size_t)used, " %s",
                                 gm_bench_throttle_name(bit));
        add(a, line);
    }
    if (isfinite(c->client_cpu_pct) && c->client_cpu_pct >= GM_BENCH_CPU_SATURATED_PCT) {
        snprintf(line, sizeof line,
                 "client_saturated: the client used %.0f %% of a core (limit %.0f %%)",
                 c->client_cpu_pct, GM_BENCH_CPU_SATURATED_PCT);
        add(a, line);
    }
    if (c->usage_distrusted) {
        snprintf(
            line, sizeof line,
            "usage_distrusted: %zu of %zu completed requests reported output tokens the stream "
            "contradicts (the first: %llu tokens for %llu content chunks, %u asked); counted "
            "from the chunks instead",
            c->usage_distrusted, c->completed, (unsigned long long)c->usage_claimed,
            (unsigned long long)c->usage_chunks, c->usage_asked);
        add(a, line);
    }
    if (isfinite(c->lag_p99_ms) && c->lag_p99_ms > GM_BENCH_LAG_P99_MAX_MS) {
        snprintf(line, sizeof line,
                 "client_saturated: requests were sent late, schedule lag p99 %.3f ms (limit %g "
                 "ms)",
                 c->lag_p99_ms, GM_BENCH_LAG_P99_MAX_MS);
        add(a, line);
    }
    return a;
}

bool gm_bench_provider_judged(const char *provider)
{
    return !provider || strcmp(provider, "sim") != 0;
}

bool gm_bench_pidset_has(const gm_bench_pidset *s, uint32_t pid)
{
    for (size_t i = 0; s && i < s->n; i++)
        if (s->pid[i] == pid)
            return true;
    return false;
}

void gm_bench_pidset_add(gm_bench_pidset *s, uint32_t pid)
{
    if (s && s->n < GM_BENCH_PIDS_MAX && !gm_bench_pidset_has(s, pid))
        s->pid[s->n++] = pid;
}

bool gm_bench_is_server_process(const gm_bench_pidset *base, gm_bench_pidset *server,
                                gm_bench_pidset *foreign, uint32_t pid,
                                bool (*parent_of)(void *arg, uint32_t pid, uint32_t *ppid),
                                void *arg)
{
    if (gm_bench_pidset_has(base, pid) || gm_bench_pidset_has(server, pid))
        return true;
    if (gm_bench_pidset_has(foreign, pid))
        return false;
    uint32_t p = pid;
    bool mine = false;
    for (int depth = 0; depth < 64; depth++) {
        uint32_t pp;
        if (!parent_of || !parent_of(arg, p, &pp) || pp == 0 || pp == p)
            break;
        if (gm_bench_pidset_has(base, pp) || gm_bench_pidset_has(server, pp)) {
            mine = true;
            break;
        }
        p = pp;
    }
    gm_bench_pidset_add(mine ? server : foreign, pid);
    return mine;
}
