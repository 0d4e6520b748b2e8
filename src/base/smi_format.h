/* smi_format.h - the nvidia-smi --query-gpu fields gpumon knows: parsing nvidia-smi's CSV into a
 * snapshot, and printing a snapshot as the CSV nvidia-smi would print for the same readings. */
#ifndef GM_SMI_FORMAT_H
#define GM_SMI_FORMAT_H

#include "gpumon.h"

#include <stddef.h>
#include <stdio.h>

/* How a field's value is read and written. */
typedef enum gm_smi_kind {
    GM_SMI_K_TIMESTAMP, /* "YYYY/MM/DD HH:MM:SS.mmm", local time of gm_snapshot.time_ms */
    GM_SMI_K_DRIVER,    /* gm_snapshot.driver_version */
    GM_SMI_K_COUNT,     /* gm_snapshot.gpu_count */
    GM_SMI_K_INDEX,     /* gm_gpu.index */
    GM_SMI_K_NAME,      /* gm_gpu.name */
    GM_SMI_K_UUID,      /* gm_gpu.uuid */
    GM_SMI_K_BUSID,     /* gm_gpu.pci_bus_id */
    GM_SMI_K_INT,       /* integer in the metric's own unit: %, MHz, C, link gen/width */
    GM_SMI_K_MIB,       /* bytes in gpumon, integer MiB (truncated) in nvidia-smi */
    GM_SMI_K_WATT,      /* milliwatts in gpumon, watts with 2 decimals in nvidia-smi */
    GM_SMI_K_PSTATE,    /* 0..15 in gpumon, "P0".."P15" in nvidia-smi */
    GM_SMI_K_PERSIST,   /* 1/0 in gpumon, "Enabled"/"Disabled" in nvidia-smi */
    GM_SMI_K_HEX64      /* bit mask, "0x%016llx" in nvidia-smi */
} gm_smi_kind;

/* X(id, name, alias, header, kind, metric, unit)
 *   name    the spelling gpumon sends to nvidia-smi: accepted by old and current drivers
 *   alias   the other spelling nvidia-smi accepts (NULL when none); both are accepted by
 *           gm_smi_field_find
 *   header  what nvidia-smi 580 prints in the CSV header (before " [unit]"); it prints the long
 *           name whichever spelling was asked for (clocks.gr -> clocks.current.graphics)
 *   metric  the gm_metric holding the value (GM_M__COUNT for identity fields)
 *   unit    appended to header as " [unit]" and to values as " unit" unless nounits; ""
 *           for none (temperature.gpu has no unit in nvidia-smi's output)
 * Checked against the output of nvidia-smi 580.159.04 on an H100 (tests/fixtures/smi/real-*). */
#define GM_SMI_FIELD_MAP(X)                                                                        \
    X(TIMESTAMP, "timestamp", NULL, "timestamp", GM_SMI_K_TIMESTAMP, GM_M__COUNT, "")              \
    X(DRIVER_VERSION, "driver_version", NULL, "driver_version", GM_SMI_K_DRIVER, GM_M__COUNT, "")  \
    X(COUNT, "count", NULL, "count", GM_SMI_K_COUNT, GM_M__COUNT, "")                              \
    X(NAME, "name", "gpu_name", "name", GM_SMI_K_NAME, GM_M__COUNT, "")                            \
    X(UUID, "uuid", "gpu_uuid", "uuid", GM_SMI_K_UUID, GM_M__COUNT, "")                            \
    X(PCI_BUS_ID, "pci.bus_id", "gpu_bus_id", "pci.bus_id", GM_SMI_K_BUSID, GM_M__COUNT, "")       \
    X(PCIE_GEN_CUR, "pcie.link.gen.current", NULL, "pcie.link.gen.current", GM_SMI_K_INT,          \
      GM_M_PCIE_GEN_CUR, "")                                                                       \
    X(PCIE_GEN_GPUCUR, "pcie.link.gen.gpucurrent", NULL, "pcie.link.gen.gpucurrent", GM_SMI_K_INT, \
      GM_M_PCIE_GEN_CUR, "")                                                                       \
    X(PCIE_GEN_MAX, "pcie.link.gen.max", NULL, "pcie.link.gen.max", GM_SMI_K_INT,                  \
      GM_M_PCIE_GEN_MAX, "")                                                                       \
    X(PCIE_WIDTH_CUR, "pcie.link.width.current", NULL, "pcie.link.width.current", GM_SMI_K_INT,    \
      GM_M_PCIE_WIDTH_CUR, "")                                                                     \
    X(PCIE_WIDTH_MAX, "pcie.link.width.max", NULL, "pcie.link.width.max", GM_SMI_K_INT,            \
      GM_M_PCIE_WIDTH_MAX, "")                                                                     \
    X(INDEX, "index", NULL, "index", GM_SMI_K_INDEX, GM_M__COUNT, "")                              \
    X(PERSISTENCE_MODE, "persistence_mode", NULL, "persistence_mode", GM_SMI_K_PERSIST,            \
      GM_M_PERSISTENCE_MODE, "")                                                                   \
    X(FAN_SPEED, "fan.speed", NULL, "fan.speed", GM_SMI_K_INT, GM_M_FAN_PCT, "%")                  \
    X(PSTATE, "pstate", NULL, "pstate", GM_SMI_K_PSTATE, GM_M_PSTATE, "")                          \
    X(THROTTLE_REASONS, "clocks_throttle_reasons.active", "clocks_event_reasons.active",           \
      "clocks_event_reasons.active", GM_SMI_K_HEX64, GM_M_THROTTLE_REASONS, "")                    \
    X(MEM_TOTAL, "memory.total", NULL, "memory.total", GM_SMI_K_MIB, GM_M_MEM_TOTAL_BYTES, "MiB")  \
    X(MEM_RESERVED, "memory.reserved", NULL, "memory.reserved", GM_SMI_K_MIB,                      \
      GM_M_MEM_RESERVED_BYTES, "MiB")                                                              \
    X(MEM_USED, "memory.used", NULL, "memory.used", GM_SMI_K_MIB, GM_M_MEM_USED_BYTES, "MiB")      \
    X(MEM_FREE, "memory.free", NULL, "memory.free", GM_SMI_K_MIB, GM_M_MEM_FREE_BYTES, "MiB")      \
    X(UTIL_GPU, "utilization.gpu", NULL, "utilization.gpu", GM_SMI_K_INT, GM_M_UTIL_GPU_PCT, "%")  \
    X(UTIL_MEM, "utilization.memory", NULL, "utilization.memory", GM_SMI_K_INT, GM_M_UTIL_MEM_PCT, \
      "%")                                                                                         \
    X(UTIL_ENC, "utilization.encoder", NULL, "utilization.encoder", GM_SMI_K_INT,                  \
      GM_M_UTIL_ENC_PCT, "%")                                                                      \
    X(UTIL_DEC, "utilization.decoder", NULL, "utilization.decoder", GM_SMI_K_INT,                  \
      GM_M_UTIL_DEC_PCT, "%")                                                                      \
    X(TEMP_GPU, "temperature.gpu", NULL, "temperature.gpu", GM_SMI_K_INT, GM_M_TEMP_C, "")         \
    X(POWER_DRAW, "power.draw", NULL, "power.draw", GM_SMI_K_WATT, GM_M_POWER_MW, "W")             \
    /* gpumon keeps one limit, the enforced one (the lowest of all limiters); power.limit, the     \
     * requested software limit, prints it too: they agree unless another limiter is lower. */     \
    X(POWER_LIMIT, "power.limit", "gpu.power.requested_limit", "power.limit", GM_SMI_K_WATT,       \
      GM_M_POWER_LIMIT_MW, "W")                                                                    \
    X(ENFORCED_POWER_LIMIT, "enforced.power.limit", "gpu.power.current_limit",                     \
      "enforced.power.limit", GM_SMI_K_WATT, GM_M_POWER_LIMIT_MW, "W")                             \
    X(CLOCK_GR, "clocks.gr", "clocks.current.graphics", "clocks.current.graphics", GM_SMI_K_INT,   \
      GM_M_CLOCK_GR_MHZ, "MHz")                                                                    \
    X(CLOCK_SM, "clocks.sm", "clocks.current.sm", "clocks.current.sm", GM_SMI_K_INT,               \
      GM_M_CLOCK_SM_MHZ, "MHz")                                                                    \
    X(CLOCK_MEM, "clocks.mem", "clocks.current.memory", "clocks.current.memory", GM_SMI_K_INT,     \
      GM_M_CLOCK_MEM_MHZ, "MHz")                                                                   \
    X(CLOCK_MAX_GR, "clocks.max.gr", "clocks.max.graphics", "clocks.max.graphics", GM_SMI_K_INT,   \
      GM_M_CLOCK_MAX_GR_MHZ, "MHz")                                                                \
    X(CLOCK_MAX_SM, "clocks.max.sm", NULL, "clocks.max.sm", GM_SMI_K_INT, GM_M_CLOCK_MAX_SM_MHZ,   \
      "MHz")                                                                                       \
    X(CLOCK_MAX_MEM, "clocks.max.mem", "clocks.max.memory", "clocks.max.memory", GM_SMI_K_INT,     \
      GM_M_CLOCK_MAX_MEM_MHZ, "MHz")

typedef enum gm_smi_field {
#define GM__SMI_FIELD_ENUM(id, name, alias, header, kind, metric, unit) GM_SMI_F_##id,
    GM_SMI_FIELD_MAP(GM__SMI_FIELD_ENUM)
#undef GM__SMI_FIELD_ENUM
        GM_SMI_F__COUNT
} gm_smi_field;

/* Most fields one --query-gpu list may name (nvidia-smi allows repeats). */
#define GM_SMI_MAX_FIELDS 256

/* --format modifiers. */
enum { GM_SMI_NOHEADER = 1u << 0, GM_SMI_NOUNITS = 1u << 1 };

/* ---- the table --------------------------------------------------------------------------- */

/* Returns the field (gm_smi_field) named name or its alias, exactly as nvidia-smi matches them
 * (case-sensitive, no trimming), or -1 when gpumon does not know it. */
int gm_smi_field_find(const char *name);
/* Returns the spelling sent to nvidia-smi, NULL when id is out of range. */
const char *gm_smi_field_name(int id);
/* Returns the CSV header nvidia-smi prints: "memory.used [MiB]", "temperature.gpu"; NULL when id is
 * out of range. */
const char *gm_smi_field_header(int id);
/* Returns the unit suffix ("MiB", "W", "%", "MHz" or ""), NULL when id is out of range. */
const char *gm_smi_field_unit(int id);
/* Returns the gm_metric behind id, or -1 for identity fields and ids out of range. */
int gm_smi_field_metric(int id);
/* Returns the kind of id, or -1 when out of range. */
int gm_smi_field_kind(int id);

/* ---- printing (gpumon query --query-gpu=... --format=csv...) ------------------------------ */

/* Parses a comma-separated --query-gpu list into ids[0..*n). Returns GM_EINVAL for an unknown or
 * empty name, with nvidia-smi's message: Field "foo" is not a valid field to query.  and for more
 * than max names. */
int gm_smi_parse_fields(const char *list, int *ids, size_t max, size_t *n, gm_error *err);

/* Parses a --format value ("csv", "csv,noheader", "csv,noheader,nounits", any order) into
 * GM_SMI_NOHEADER | GM_SMI_NOUNITS flags. "csv" is required. Returns GM_EINVAL otherwise. */
int gm_smi_parse_format(const char *spec, unsigned *flags, gm_error *err);

/* Writes the value of field id for GPU g of snapshot s as nvidia-smi prints it ("45 %", "69.48 W",
 * "[N/A]" when absent, "[GPU is lost]" for metrics of a lost GPU) into buf (always terminated).
 * Returns the length written or GM_EINVAL for an unknown id. */
int gm_smi_format_value(const gm_snapshot *s, const gm_gpu *g, int id, unsigned flags, char *buf,
                        size_t cap);

/* Writes the header line (unless GM_SMI_NOHEADER) and one line per GPU of s, fields joined by ", ",
 * lines ended by "\n", in snapshot order. gpus/ngpus restrict output to those driver indices (NULL
 * or 0: every GPU); an index s lacks gives GM_ENOENT before anything is written. Returns GM_OK,
 * GM_EINVAL (bad id, n == 0) or GM_EIO when writing fails. The CLI needs only:
 *     int ids[GM_SMI_MAX_FIELDS]; size_t n; unsigned flags;
 *     if (gm_smi_parse_fields(q, ids, GM_SMI_MAX_FIELDS, &n, &e) ||
 *         gm_smi_parse_format(f, &flags, &e) ||
 *         gm_smi_format_csv(stdout, snap, ids, n, flags, NULL, 0, &e)) -> print e.msg, exit 2 */
int gm_smi_format_csv(FILE *out, const gm_snapshot *s, const int *ids, size_t n, unsigned flags,
                      const unsigned *gpus, size_t ngpus, gm_error *err);

/* ---- parsing (the nvidia-smi provider) ----------------------------------------------------- */

/* Parses the output of `nvidia-smi --query-gpu=<ids> --format=csv,noheader[,nounits]` into
 * out->gpus[0..out->gpu_count) (replacing what was there) and out->driver_version (first row's).
 * Tolerates CRLF, odd spacing, values with or without units, a header line, missing trailing
 * fields (absent) and extra ones (ignored). "[N/A]", "[Not Supported]", "[Unknown Error]" and
 * any other bracketed or "N/A" value leave the metric absent; "[GPU is lost]" or "[GPU requires
 * reset]" mark the GPU lost (identity kept, no metric valid). A row whose index does not parse or
 * is GM_MAX_GPUS or more, a repeated index or a row past GM_MAX_GPUS is skipped and described in
 * warn (cap bytes, may be NULL), as is a single value that does not parse (that metric stays
 * absent).
 * Returns GM_OK when at least one row parsed; GM_ENODEV when text holds no row at all (or says
 * "No devices were found"); GM_EPARSE, quoting the first bad line (truncated), when no row parsed.
 */
int gm_smi_parse_gpu_csv(const char *text, const int *ids, size_t n, gm_snapshot *out, char *warn,
                         size_t cap, gm_error *err);

/* Parses `nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory --format=csv,noheader,nounits`
 * and appends one GM_PROC_COMPUTE process per row through gm_snapshot_add_process, gpu_index found
 * by uuid among out->gpus (so parse the GPUs first). Memory is MiB -> bytes; "[N/A]", or a
 * figure past what 64 bits of bytes hold (described in warn), leaves mem_valid false. Rows
 * naming an unknown uuid or a bad pid are skipped and described in warn.
 * Returns GM_OK (empty text is no process, not an error). */
int gm_smi_parse_apps_csv(const char *text, gm_snapshot *out, char *warn, size_t cap,
                          gm_error *err);

#endif
