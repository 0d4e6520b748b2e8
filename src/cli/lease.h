/* lease.h - choosing and leasing GPUs for work gpumon starts itself (`run`, `bench --image`):
 * the task's estimate (or a count), the wait until that many qualify (a line on stderr at each
 * check saying what is missing), and the lease that keeps every other gpumon off them. */
#ifndef GM_CLI_LEASE_H
#define GM_CLI_LEASE_H

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/opt.h"
#include "core/lease.h"
#include "core/select.h"
#include "gpumon.h"

typedef struct gm_cli_lease_opts {
    const char *task; /* --task FILE: GPUs and memory per GPU from its estimate */
    unsigned count;   /* --count N (0: not given) */
    double min_free_mib;
    bool min_free_given;
    bool has_max_util;
    double max_util;
    double wait_s;  /* default 300 */
    double check_s; /* default 30 */
    const char *lease_dir;
    bool all_devices; /* ignore the caller's CUDA_VISIBLE_DEVICES */
    bool mig;         /* lease MIG devices, not whole GPUs */
    bool given;       /* any of these was given (they need --image) */
} gm_cli_lease_opts;

/* Which lease option a row sets (its .code). */
enum {
    GM_CLI_OPT_TASK = 1,
    GM_CLI_OPT_COUNT,
    GM_CLI_OPT_MIN_FREE,
    GM_CLI_OPT_MAX_UTIL,
    GM_CLI_OPT_WAIT,
    GM_CLI_OPT_CHECK,
    GM_CLI_OPT_LEASE_DIR,
    GM_CLI_OPT_ALL_DEVICES,
    GM_CLI_OPT_MIG,
};

void gm_cli_lease_defaults(gm_cli_lease_opts *o);

/* Sets the gm_cli_lease_opts at base + row->offset from the option row->code says, and marks
 * it given. */
int gm_cli_set_lease(void *base, const gm_opt *row, const char *value, gm_error *err);

/* A lease option's row in a command's table (l: the gm_cli_lease_opts field of T), its name,
 * code (GM_CLI_OPT_TASK...), help and flags after it: each command words the options for what
 * it leases GPUs for. */
#define GM_CLI_OPT_LEASE(T, l, ...)                                                    \
    {                                                                                  \
        .type = GM_OPT_CALLBACK, GM_OPT_AT(T, l), .set = gm_cli_set_lease, __VA_ARGS__ \
    }

/* --max-util, --wait, --check-interval, --lease-dir and --all-devices: the rows that every
 * command leasing GPUs words alike, in this order. */
#define GM_CLI_OPT_LEASE_WAITING(T, l)                                                          \
    GM_CLI_OPT_LEASE(T, l, .name = "max-util", .letter = 'u', .arg = "PCT",                     \
                     .code = GM_CLI_OPT_MAX_UTIL, .help = "Only GPUs at most PCT % busy."),     \
        GM_CLI_OPT_LEASE(T, l, .name = "wait", .letter = 'w', .arg = "SECONDS",                 \
                         .code = GM_CLI_OPT_WAIT,                                               \
                         .help = "Wait at most this long for the GPUs (default 300; 0: check "  \
                                 "once)."),                                                     \
        GM_CLI_OPT_LEASE(T, l, .name = "check-interval", .arg = "S", .code = GM_CLI_OPT_CHECK,  \
                         .help = "Between availability checks while waiting (default 30)."),    \
        GM_CLI_OPT_LEASE(T, l, .name = "lease-dir", .arg = "DIR", .code = GM_CLI_OPT_LEASE_DIR, \
                         .complete = "dir",                                                     \
                         .help = "Where leases live (default $" GM_LEASE_DIR_ENV ", else "      \
                                 "$XDG_RUNTIME_DIR/gpumon/leases, else "                        \
                                 "/tmp/gpumon-$UID/leases)."),                                  \
        GM_CLI_OPT_LEASE(T, l, .name = "all-devices", .code = GM_CLI_OPT_ALL_DEVICES,           \
                         .help = "Ignore the caller's CUDA_VISIBLE_DEVICES when choosing.")

/* Estimates (with --task), waits until the GPUs qualify, and leases them: only (n_only driver
 * indices, may be NULL) limits the candidates. The count is --count, else the task's estimate,
 * else n_only when given, else 1. On success res and *lease hold the choice, and attach (may be
 * NULL) gets "estimate", "selection" and "lease" ({dir, indices, uuids}). The caller says
 * which GPUs it leased (quiet only silences the waiting lines). Returns an exit
 * status: 0, GM_EXIT_USAGE, GM_EXIT_NOT_ENOUGH, GM_EXIT_TIMEOUT, GM_EXIT_FAILURE; -1 when *stop
 * was set while waiting (the caller knows which signal). */
int gm_cli_lease_gpus(const char *cmd, const gm_cli_lease_opts *o, gm_collector *c,
                      const unsigned *only, size_t n_only, const volatile sig_atomic_t *stop,
                      bool quiet, gm_select_result *res, gm_lease **lease, json_t *attach);

#endif
