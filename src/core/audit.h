/* audit.h - system inventory snapshots for benchmark audits and the diff of two of them: did the
 * machine a run was measured on stay the same machine from start to end?
 *
 * A snapshot is a JSON document (a superset of the daemon's GET /stats inventory, same key names
 * and units where they overlap):
 *
 *   {"kind": "gpumon-snapshot", "schema": 1, "gpumon_version", "timestamp" (ISO 8601 UTC),
 *    "timestamp_ms", "provider", "driver_version", "cuda_version", "nvml_version",
 *    "system": {"hostname", "kernel", "processor_name", "cpu_count", "memory_total_bytes"},
 *    "power_window": {"window_ms", "interval_ms", "samples" (readings taken), "elapsed_ms"},
 *    "gpu_count", "gpus": [{"index", "name", "uuid", "pci_bus_id", "lost",
 *        "memory_total_mib", "memory_used_mib", "memory_total_bytes", "memory_used_bytes",
 *        "power_draw_w" (mean over the window), "power_draw_min_w", "power_draw_max_w",
 *        "power_draw_samples", "power_limit_w", "persistence_mode", "clock_max_sm_mhz",
 *        "clock_max_mem_mhz", "clock_applications_graphics_mhz", "clock_applications_memory_mhz",
 *        "pcie": {"gen_current", "gen_max", "width_current", "width_max",
 *                 "bandwidth_current_gb_per_s", "bandwidth_max_gb_per_s"},
 *        "processes": [{"pid", "user", "command", "used_memory_mib", "start_time" (optional: the
 *            process's start in clock ticks since boot, /proc/PID/stat's field 22; this version
 *            does not write it, the diff uses it when both sides have it)}] or null (not
 *            listed)}],
 *    "p2p_known", "p2p": {"gpus": [row driver indices], "read": [[code...]], "write",
 *        "nvlink", "atomics", "pci"} or null, "p2p_error" (only when the matrix could not be
 *        read)}
 *
 * Values the system does not report are null, never 0. P2P codes are those of
 * `nvidia-smi topo -p2p` ("OK", "CNS", "GNS", "TNS", "DR", "NS", "U", "X" on the diagonal).
 *
 * The diff sorts every difference into one of three severities:
 * - changed: an invariant differs (driver, CUDA, NVML, host name, kernel, CPU model, CPU count,
 *   host memory, GPU set by UUID, GPU index, model, bus id, memory capacity, power limit,
 *   persistence mode, maximum or application clocks, maximum PCIe link, P2P matrix, a GPU lost), or
 * a GPU's memory used or mean power rose by more than the tolerance, or a process holding more
 * than GM_AUDIT_PROCESS_MEM_MIB of a GPU's memory started or ended between the snapshots. Any
 * such item makes the verdict CHANGED.
 * - warning: the current PCIe link generation or width differs (GPUs train their links down at
 *   idle, so gen1 at rest is normal and not a changed system), the provider differs, the P2P
 *   matrix or a field is known on one side only, a process holding at most
 *   GM_AUDIT_PROCESS_MEM_MIB (or an unknown amount) started or ended. CHANGED only under
 *   `strict`.
 * - note: memory used or power moved within the tolerance (or fell), gpumon version differs.
 *   Never changes the verdict. */
#ifndef GM_AUDIT_H
#define GM_AUDIT_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include <jansson.h>

#include "gpumon.h"

#define GM_AUDIT_KIND                      "gpumon-snapshot"
#define GM_AUDIT_SCHEMA                    1 /* the newest schema this code writes and reads */
#define GM_AUDIT_DEFAULT_POWER_WINDOW_MS   2000
#define GM_AUDIT_DEFAULT_POWER_INTERVAL_MS 200
#define GM_AUDIT_DEFAULT_MEM_TOLERANCE_MIB 256.0
#define GM_AUDIT_DEFAULT_POWER_TOLERANCE_W 25.0
#define GM_AUDIT_PROCESS_MEM_MIB           64.0 /* a process above this is competing work */

/* How a snapshot is taken. */
typedef struct gm_audit_options {
    unsigned power_window_ms;   /* power is averaged over this long; 0: a single reading */
    unsigned power_interval_ms; /* between readings; 0: GM_AUDIT_DEFAULT_POWER_INTERVAL_MS */
    bool with_processes; /* list each GPU's processes; set it only when the collector was opened
                          * without no_processes, else an empty list would claim "none" (false:
                          * "processes" is null, unknown) */
} gm_audit_options;

/* Fills o with the defaults: a 2 s power window read every 200 ms (11 readings), processes
 * not listed. */
void gm_audit_options_init(gm_audit_options *o);

/* Takes a snapshot with collector c: 1 + window / interval readings spaced interval apart
 * (so it blocks about window_ms), identity and memory from the last reading, power as mean /
 * min / max over all readings, then the P2P matrix. o NULL means gm_audit_options_init's
 * defaults. c must not be used by another thread meanwhile. On success *out is a new
 * reference. Returns GM_ENODEV (message says why, with the collector's diagnosis) when c has
 * no GPU source or sees no GPU, the collector's error when no reading succeeded, GM_ENOMEM. */
int gm_audit_take(gm_collector *c, const gm_audit_options *o, json_t **out, gm_error *err);

/* Checks that doc is a snapshot this code can compare: kind, a schema it knows, and every key
 * the diff reads of the right JSON type (or null). Returns GM_OK or GM_EPARSE with a message
 * naming the offending key ("gpus[1].memory_used_mib must be a number or null"). */
int gm_audit_validate(const json_t *doc, gm_error *err);

/* Parses len bytes of text as a snapshot and validates it. name (a file name, "before") starts
 * every error message. On success *out is a new reference. GM_EPARSE when the text is not JSON
 * (with line and column) or not a valid snapshot, GM_ENOMEM. */
int gm_audit_parse(const char *text, size_t len, const char *name, json_t **out, gm_error *err);

/* gm_audit_parse of a file's contents (at most 64 MiB), read by gm_file_read_all: GM_ENOENT,
 * GM_EPERM or GM_EIO when it cannot be read. */
int gm_audit_load(const char *path, json_t **out, gm_error *err);

/* Writes doc as indented JSON plus a newline. path NULL or "-": to stdout. Otherwise atomically:
 * into a new file beside path, flushed to disk, then renamed over path, so a reader never sees
 * half a snapshot and a failure leaves any older file intact. GM_EIO on any failure (the
 * temporary file is removed). */
int gm_audit_write(const json_t *doc, const char *path, gm_error *err);

/* What the diff tolerates. */
typedef struct gm_audit_tolerance {
    double mem_mib; /* a GPU's memory used may rise this many MiB */
    double power_w; /* a GPU's mean power may rise this many watts */
    bool strict;    /* warnings make the verdict CHANGED too */
    /* Processes of the measured run itself (a recorded command's process tree): on a GPU in
     * either snapshot they are no change of the machine. NULL when there are none. */
    const pid_t *ignore_pids;
    size_t ignore_pid_count;
} gm_audit_tolerance;

/* Fills t with the defaults: 256 MiB, 25 W, not strict, no process ignored. */
void gm_audit_tolerance_init(gm_audit_tolerance *t);

/* The result of a diff. report is
 *   {"kind": "gpumon-diff", "schema": 1, "verdict": "CHANGED" | "UNCHANGED", "changed",
 *    "strict", "tolerance": {"memory_mib", "power_w"}, "counts": {"changed", "warning", "note"},
 *    "before": {"timestamp", "hostname", "provider", "gpumon_version", "gpu_count"}, "after",
 *    "differences": [{"severity": "changed" | "warning" | "note", "field" ("driver_version",
 *        "system.kernel", "memory_used_mib", "pcie.gen_current", "p2p.nvlink", "gpu"...),
 *        "gpu" (driver index or null), "uuid" (or null), "before", "after", "message"}]}
 * with "before"/"after" of an item being the compared JSON values (null when absent). */
typedef struct gm_audit_verdict {
    bool changed;      /* changes > 0, or warnings > 0 under strict */
    unsigned changes;  /* items of severity changed */
    unsigned warnings; /* items of severity warning */
    unsigned notes;    /* items of severity note */
    json_t *report;    /* owned: release with gm_audit_verdict_free */
} gm_audit_verdict;

/* Compares two snapshots (each validated first; a message starts with "before: " or "after: "
 * naming the bad one). GPUs are matched by UUID (by PCI bus id when either lacks a UUID, by
 * index when both lack both); the unmatched are reported as removed / added. A matched GPU's
 * processes are matched by pid and start time when both sides recorded it, else by pid and
 * command; one on one side only (and not in t->ignore_pids) started or ended during the run
 * (field "processes", its entry as "before" or "after"). t NULL means the
 * defaults. On success fills *out (zeroed first). Returns GM_EPARSE or GM_ENOMEM. */
int gm_audit_diff(const json_t *before, const json_t *after, const gm_audit_tolerance *t,
                  gm_audit_verdict *out, gm_error *err);

/* Releases v->report and zeroes v; v may be NULL. */
void gm_audit_verdict_free(gm_audit_verdict *v);

/* Prints the verdict for a person: a line per snapshot, one line per difference prefixed
 * "CHANGED:", "WARNING:" or "note:", and a last line that starts with "CHANGED" or
 * "UNCHANGED" with the counts. */
void gm_audit_print_text(FILE *f, const gm_audit_verdict *v);

#endif
