/* bench_validity.h - when a benchmark point is not to be trusted. A point is flagged
 * "valid": false, with one reason per finding in "invalid_reasons", when:
 *
 *   foreign_process  a process appeared on a benchmarked GPU during the point that the server
 *                    under test did not start: not among the GPUs' processes when the benchmark
 *                    began, nor a descendant of one of them (its parents are read from /proc; a
 *                    process whose parents cannot be read counts as foreign). The simulated
 *                    GPUs' processes (provider "sim") are the simulator's stand-ins for a
 *                    server and never foreign;
 *   throttled        a benchmarked GPU's clocks were held down by a thermal or power-brake
 *                    slowdown (NVML clock event reasons HW slowdown 0x8, SW thermal 0x20, HW
 *                    thermal 0x40, HW power brake 0x80) in some sample of the point. Running at
 *                    the power limit (SW power cap, 0x4) is normal under load and not flagged;
 *   client_saturated the client itself was the bottleneck: its thread used at least 90 % of a
 *                    core over the point, or it sent requests late (schedule lag p99 above 1 ms);
 *   usage_distrusted the server's usage.completion_tokens contradicted what it streamed (more
 *                    than the max_tokens asked for, or far fewer than the content chunks: see
 *                    gm_bench_usage_trusted) in some completed request: its output tokens were
 *                    counted from the chunks, and the server's figures are suspect.
 *
 * Each reason is a string starting with the rule's name and a colon, then the detail for people
 * ("throttled: GPU 0 hw_thermal_slowdown"). Pure: the caller gathers the observations. */
#ifndef GM_BENCH_VALIDITY_H
#define GM_BENCH_VALIDITY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpumon.h"

#define GM_BENCH_CPU_SATURATED_PCT 90.0
#define GM_BENCH_LAG_P99_MAX_MS    1.0
/* The clock event reasons that invalidate a point. */
#define GM_BENCH_THROTTLE_INVALID 0xE8ULL
/* Foreign processes reported per point at most (the rest are counted). */
#define GM_BENCH_FOREIGN_MAX 16

/* A process seen on a benchmarked GPU that the server did not start. */
typedef struct gm_bench_foreign {
    unsigned gpu; /* driver index */
    uint32_t pid;
    char command[64]; /* "" when /proc does not say */
} gm_bench_foreign;

/* What a point observed. */
typedef struct gm_bench_check {
    double client_cpu_pct; /* NaN: unknown */
    double lag_p99_ms;     /* NaN: unknown (no request) */
    size_t ngpus;
    unsigned gpu_index[GM_MAX_GPUS]; /* driver indices of the benchmarked GPUs */
    uint64_t throttle[GM_MAX_GPUS];  /* the reasons seen in any sample, OR'ed */
    const gm_bench_foreign *foreign;
    size_t nforeign;      /* entries in foreign */
    size_t foreign_total; /* foreign processes seen, also those not listed */
    /* Completed requests whose usage was distrusted, of completed; the first one's claim. */
    size_t usage_distrusted, completed;
    uint64_t usage_claimed, usage_chunks;
    uint32_t usage_asked;
} gm_bench_check;

/* The reasons the point is not valid, as a JSON array of strings (empty: valid). New
 * reference, NULL when out of memory. */
json_t *gm_bench_check_reasons(const gm_bench_check *c);

/* The name of one clock event reason bit ("hw_thermal_slowdown", "sw_power_cap", ...), NULL
 * for a bit without a name. */
const char *gm_bench_throttle_name(uint64_t bit);

/* The processes the server under test owns: those on its GPUs at the start, and what they
 * start. Bounded: at most GM_BENCH_PIDS_MAX of each kind are remembered (past that, a process
 * is checked again each time). */
#define GM_BENCH_PIDS_MAX 4096

typedef struct gm_bench_pidset {
    uint32_t pid[GM_BENCH_PIDS_MAX];
    size_t n;
} gm_bench_pidset;

/* Whether the processes that provider ("nvml", "sim"...) reports are judged by the
 * foreign-process rule: false for the simulated GPUs, whose processes the simulator makes up. */
bool gm_bench_provider_judged(const char *provider);

bool gm_bench_pidset_has(const gm_bench_pidset *s, uint32_t pid);
/* Adds pid (a no-op when present or full). */
void gm_bench_pidset_add(gm_bench_pidset *s, uint32_t pid);

/* Whether pid belongs to the server: in base, or a descendant of one of base (parents are asked
 * of parent_of, which returns false when it cannot tell; at most 64 generations are walked).
 * server and foreign remember the answers (may be NULL). */
bool gm_bench_is_server_process(const gm_bench_pidset *base, gm_bench_pidset *server,
                                gm_bench_pidset *foreign, uint32_t pid,
                                bool (*parent_of)(void *arg, uint32_t pid, uint32_t *ppid),
                                void *arg);

#endif
