/* prom.c - renders a snapshot as Prometheus text exposition 0.0.4 under dcgm-exporter's names. */
#include "server/prom.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

/* The output under construction. Appends after an allocation failure are dropped and the
 * render returns NULL, so callers check once at the end instead of after every write. */
typedef struct buf {
    char *p;
    size_t len, cap;
    bool oom;
} buf;

static bool buf_reserve(buf *b, size_t extra)
{
    if (b->oom)
        return false;
    if (b->len + extra + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 4096;
    while (b->len + extra + 1 > cap)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

static void buf_put(buf *b, const char *s, size_t n)
{
    if (!buf_reserve(b, n))
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void buf_puts(buf *b, const char *s)
{
    buf_put(b, s, strlen(s));
}

static void buf_printf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void buf_printf(buf *b, const char *fmt, ...)
{
    /* Every caller formats a number or a short name: 128 bytes always suffice. */
    if (!buf_reserve(b, 128))
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        b->len += (size_t)n < b->cap - b->len ? (size_t)n : b->cap - b->len - 1;
}

/* Appends the first n bytes of s as a label value: backslash, double quote and line feed
 * escaped as the exposition format requires; malformed UTF-8 becomes U+FFFD because the
 * Prometheus parser rejects the whole scrape otherwise. */
static void put_label_value(buf *b, const char *s, size_t n)
{
    if (!buf_reserve(b, 3 * n)) /* the worst case: every byte replaced by U+FFFD */
        return;
    const unsigned char *u = (const unsigned char *)s;
    char *o = b->p + b->len;
    for (size_t i = 0; i < n;) {
        unsigned c = u[i];
        if (c == '\\' || c == '"' || c == '\n') {
            *o++ = '\\';
            *o++ = c == '\n' ? 'n' : (char)c;
            i++;
            continue;
        }
        int sl = gm_utf8_seq_len(u + i, n - i);
        size_t len = sl > 0 ? (size_t)sl : 0;
        if (len == 0) {
            memcpy(o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
            continue;
        }
        memcpy(o, u + i, len);
        o += len;
        i += len;
    }
    b->len = (size_t)(o - b->p);
}

/* Appends `,name="value"` (or `{name="value"` for the first label). */
static void put_label(buf *b, bool *first, const char *name, const char *value, size_t n)
{
    buf_puts(b, *first ? "{" : ",");
    *first = false;
    buf_puts(b, name);
    buf_put(b, "=\"", 2);
    put_label_value(b, value, n);
    buf_put(b, "\"", 1);
}

static void put_label_str(buf *b, bool *first, const char *name, const char *value)
{
    put_label(b, first, name, value, strlen(value));
}

/* Appends " <value>\n". Integral values print exactly (byte and millijoule counters exceed
 * what %g keeps); others with 6 significant digits, or to the unit from 1e6 up so that large
 * reals such as uptimes keep their integer part. */
static void put_value(buf *b, double v)
{
    if (v == floor(v) && fabs(v) < 9.2e18)
        buf_printf(b, " %" PRId64 "\n", (int64_t)v);
    else if (fabs(v) >= 1e6)
        buf_printf(b, " %.0f\n", v);
    else
        buf_printf(b, " %.6g\n", v);
}

/* A metric family: HELP and TYPE are written before its first sample only, so a family whose
 * every value is absent leaves no trace. */
typedef struct family {
    const char *name;
    const char *type; /* "gauge" or "counter" */
    const char *help;
    bool started;
} family;

/* Writes the family header if needed, then the sample's name; labels and value follow. */
static void begin_sample(buf *b, family *f)
{
    if (!f->started) {
        buf_puts(b, "# HELP ");
        buf_puts(b, f->name);
        buf_put(b, " ", 1);
        buf_puts(b, f->help);
        buf_puts(b, "\n# TYPE ");
        buf_puts(b, f->name);
        buf_put(b, " ", 1);
        buf_puts(b, f->type);
        buf_put(b, "\n", 1);
        f->started = true;
    }
    buf_puts(b, f->name);
}

/* One unlabelled sample, omitted when v is not finite (a provider fault, never a reading). */
static void sample(buf *b, family *f, double v)
{
    if (!isfinite(v))
        return;
    begin_sample(b, f);
    put_value(b, v);
}

/* ---- GPU metrics ----------------------------------------------------------------------- */

enum conv {
    CONV_NONE,
    CONV_MIB,   /* bytes -> whole MiB, rounded down as NVML-based tools and DCGM report them */
    CONV_WATT,  /* mW -> W */
    CONV_US,    /* ns -> us, as dcgm-exporter reports violation times */
    CONV_RATIO, /* % -> 0..1, as DCGM_FI_PROF_* */
    CONV_KIB,   /* KiB -> bytes */
    CONV_MS_S,  /* Unix ms -> Unix s */
};

typedef struct gpu_family {
    const char *name;
    const char *type;
    const char *help;
    gm_metric metric;
    enum conv conv;
} gpu_family;

/* dcgm-exporter's names and units first (docs/METRICS.md gives each one's source), then the
 * gpumon_gpu_* families for what DCGM has no field for. */
static const gpu_family gpu_families[] = {
    {"DCGM_FI_DEV_GPU_UTIL", "gauge", "Share of time one or more kernels ran on the GPU (in %).",
     GM_M_UTIL_GPU_PCT, CONV_NONE},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge",
     "Share of time device memory was read or written (in %).", GM_M_UTIL_MEM_PCT, CONV_NONE},
    {"DCGM_FI_DEV_ENC_UTIL", "gauge", "Video encoder utilization (in %).", GM_M_UTIL_ENC_PCT,
     CONV_NONE},
    {"DCGM_FI_DEV_DEC_UTIL", "gauge", "Video decoder utilization (in %).", GM_M_UTIL_DEC_PCT,
     CONV_NONE},
    {"DCGM_FI_DEV_FB_TOTAL", "gauge", "Device memory in total (in MiB).", GM_M_MEM_TOTAL_BYTES,
     CONV_MIB},
    {"DCGM_FI_DEV_FB_FREE", "gauge", "Device memory free (in MiB).", GM_M_MEM_FREE_BYTES, CONV_MIB},
    {"DCGM_FI_DEV_BAR1_TOTAL", "gauge", "BAR1 aperture in total (in MiB).", GM_M_BAR1_TOTAL_BYTES,
     CONV_MIB},
    {"DCGM_FI_DEV_BAR1_USED", "gauge", "BAR1 aperture in use (in MiB).", GM_M_BAR1_USED_BYTES,
     CONV_MIB},
    {"DCGM_FI_DEV_BAR1_FREE", "gauge", "BAR1 aperture free (in MiB).", GM_M_BAR1_FREE_BYTES,
     CONV_MIB},
    {"DCGM_FI_DEV_FB_USED", "gauge",
     "Device memory allocated, driver reservation excluded (in MiB).", GM_M_MEM_USED_BYTES,
     CONV_MIB},
    {"DCGM_FI_DEV_FB_RESERVED", "gauge", "Device memory the driver and firmware reserve (in MiB).",
     GM_M_MEM_RESERVED_BYTES, CONV_MIB},
    {"DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU core temperature (in C).", GM_M_TEMP_C, CONV_NONE},
    {"DCGM_FI_DEV_POWER_USAGE", "gauge", "Board power draw (in W).", GM_M_POWER_MW, CONV_WATT},
    {"DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "gauge", "Power limit the driver enforces (in W).",
     GM_M_POWER_LIMIT_MW, CONV_WATT},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
     "Energy consumed since the driver was loaded (in mJ).", GM_M_ENERGY_MJ, CONV_NONE},
    {"DCGM_FI_DEV_SM_CLOCK", "gauge", "Current streaming multiprocessor clock (in MHz).",
     GM_M_CLOCK_SM_MHZ, CONV_NONE},
    {"DCGM_FI_DEV_MEM_CLOCK", "gauge", "Current memory clock (in MHz).", GM_M_CLOCK_MEM_MHZ,
     CONV_NONE},
    {"DCGM_FI_DEV_MAX_SM_CLOCK", "gauge",
     "Highest streaming multiprocessor clock the GPU supports (in MHz).", GM_M_CLOCK_MAX_SM_MHZ,
     CONV_NONE},
    {"DCGM_FI_DEV_MAX_MEM_CLOCK", "gauge", "Highest memory clock the GPU supports (in MHz).",
     GM_M_CLOCK_MAX_MEM_MHZ, CONV_NONE},
    {"DCGM_FI_DEV_FAN_SPEED", "gauge", "Fan speed (in %, may exceed 100).", GM_M_FAN_PCT,
     CONV_NONE},
    {"DCGM_FI_DEV_PCIE_LINK_GEN", "gauge", "Current PCIe link generation.", GM_M_PCIE_GEN_CUR,
     CONV_NONE},
    {"DCGM_FI_DEV_PCIE_LINK_WIDTH", "gauge", "Current PCIe link width (lanes).",
     GM_M_PCIE_WIDTH_CUR, CONV_NONE},
    {"DCGM_FI_DEV_PCIE_MAX_LINK_GEN", "gauge", "Maximum PCIe link generation.", GM_M_PCIE_GEN_MAX,
     CONV_NONE},
    {"DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", "gauge", "Maximum PCIe link width (lanes).",
     GM_M_PCIE_WIDTH_MAX, CONV_NONE},
    {"DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "gauge", "PCIe transmit throughput (in KB/s).",
     GM_M_PCIE_TX_KBPS, CONV_NONE},
    {"DCGM_FI_DEV_PCIE_RX_THROUGHPUT", "gauge", "PCIe receive throughput (in KB/s).",
     GM_M_PCIE_RX_KBPS, CONV_NONE},
    {"DCGM_FI_DEV_PSTATE", "gauge", "Performance state, 0 (P0, highest) to 15.", GM_M_PSTATE,
     CONV_NONE},
    {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "gauge",
     "Bit mask of active clock throttle reasons (NVML clocksEventReasons).", GM_M_THROTTLE_REASONS,
     CONV_NONE},
    {"DCGM_FI_DEV_PERSISTENCE_MODE", "gauge", "Persistence mode, 1 on, 0 off.",
     GM_M_PERSISTENCE_MODE, CONV_NONE},
    /* Health, dcgm-exporter's names where DCGM has the field. */
    {"DCGM_FI_DEV_XID_ERRORS", "gauge",
     "Last XID error the driver reported (0: none since gpumon started watching).", GM_M_XID_LAST,
     CONV_NONE},
    {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter",
     "Corrected (single bit) ECC errors since the driver loaded.", GM_M_ECC_CORR_VOL, CONV_NONE},
    {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter",
     "Uncorrected (double bit) ECC errors since the driver loaded.", GM_M_ECC_UNCORR_VOL,
     CONV_NONE},
    {"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "counter",
     "Corrected (single bit) ECC errors over the GPU's life.", GM_M_ECC_CORR_AGG, CONV_NONE},
    {"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "counter",
     "Uncorrected (double bit) ECC errors over the GPU's life.", GM_M_ECC_UNCORR_AGG, CONV_NONE},
    {"DCGM_FI_DEV_ECC_CURRENT", "gauge", "ECC mode, 1 enabled, 0 disabled.", GM_M_ECC_MODE_CUR,
     CONV_NONE},
    {"DCGM_FI_DEV_ECC_PENDING", "gauge", "ECC mode after the next reboot, 1 enabled.",
     GM_M_ECC_MODE_PENDING, CONV_NONE},
    {"DCGM_FI_DEV_RETIRED_SBE", "counter", "Pages retired for multiple single bit ECC errors.",
     GM_M_RETIRED_SBE, CONV_NONE},
    {"DCGM_FI_DEV_RETIRED_DBE", "counter", "Pages retired for a double bit ECC error.",
     GM_M_RETIRED_DBE, CONV_NONE},
    {"DCGM_FI_DEV_RETIRED_PENDING", "gauge", "1 when pages wait for a reboot to be retired.",
     GM_M_RETIRED_PENDING, CONV_NONE},
    {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter",
     "Memory rows remapped for correctable errors.", GM_M_REMAP_CORR, CONV_NONE},
    {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
     "Memory rows remapped for uncorrectable errors.", GM_M_REMAP_UNCORR, CONV_NONE},
    {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "1 when a row remapping failed.", GM_M_REMAP_FAILURE,
     CONV_NONE},
    {"DCGM_FI_DEV_ROW_REMAP_PENDING", "gauge", "1 when a row remapping waits for a GPU reset.",
     GM_M_REMAP_PENDING, CONV_NONE},
    {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "PCIe replays since the GPU reset.",
     GM_M_PCIE_REPLAY, CONV_NONE},
    {"DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", GM_M_TEMP_MEM_C, CONV_NONE},
    {"DCGM_FI_DEV_POWER_VIOLATION", "counter",
     "Time clocks were held down by the power limit (in us).", GM_M_VIOL_POWER_NS, CONV_US},
    {"DCGM_FI_DEV_THERMAL_VIOLATION", "counter",
     "Time clocks were held down by thermal limits (in us).", GM_M_VIOL_THERMAL_NS, CONV_US},
    {"DCGM_FI_DEV_SYNC_BOOST_VIOLATION", "counter",
     "Time clocks were held down by sync boost (in us).", GM_M_VIOL_SYNC_BOOST_NS, CONV_US},
    {"DCGM_FI_DEV_POWER_MGMT_LIMIT", "gauge", "Power limit requested by software (in W).",
     GM_M_POWER_REQ_LIMIT_MW, CONV_WATT},
    {"DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF", "gauge", "Power limit after a reset (in W).",
     GM_M_POWER_DEFAULT_LIMIT_MW, CONV_WATT},
    {"DCGM_FI_DEV_POWER_MGMT_LIMIT_MIN", "gauge", "Lowest power limit that can be set (in W).",
     GM_M_POWER_MIN_LIMIT_MW, CONV_WATT},
    {"DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX", "gauge", "Highest power limit that can be set (in W).",
     GM_M_POWER_MAX_LIMIT_MW, CONV_WATT},
    {"DCGM_FI_DEV_COMPUTE_MODE", "gauge",
     "Compute mode: 0 default, 1 exclusive thread, 2 prohibited, 3 exclusive process.",
     GM_M_COMPUTE_MODE, CONV_NONE},
    {"DCGM_FI_DEV_MIG_MODE", "gauge", "MIG mode, 1 enabled, 0 disabled.", GM_M_MIG_MODE_CUR,
     CONV_NONE},
    {"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter",
     "NVLink flow control CRC errors, all links.", GM_M_NVLINK_CRC_FLIT, CONV_NONE},
    {"DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter",
     "NVLink data CRC errors, all links.", GM_M_NVLINK_CRC_DATA, CONV_NONE},
    {"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", "NVLink replay errors, all links.",
     GM_M_NVLINK_REPLAY, CONV_NONE},
    {"DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter",
     "NVLink recovery errors, all links.", GM_M_NVLINK_RECOVERY, CONV_NONE},
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge",
     "Ratio of time the graphics or compute engine was active (GPM).", GM_M_PROF_GR_ACTIVE_PCT,
     CONV_RATIO},
    {"DCGM_FI_PROF_SM_ACTIVE", "gauge", "Ratio of SMs busy (GPM).", GM_M_PROF_SM_ACTIVE_PCT,
     CONV_RATIO},
    {"DCGM_FI_PROF_SM_OCCUPANCY", "gauge", "Ratio of warps resident to the maximum (GPM).",
     GM_M_PROF_SM_OCCUPANCY_PCT, CONV_RATIO},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of time tensor pipes were active (GPM).",
     GM_M_PROF_TENSOR_PCT, CONV_RATIO},
    {"DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "Ratio of DRAM bandwidth used to the maximum (GPM).",
     GM_M_PROF_DRAM_PCT, CONV_RATIO},
    {"DCGM_FI_PROF_PIPE_FP64_ACTIVE", "gauge", "Ratio of time FP64 pipes were active (GPM).",
     GM_M_PROF_FP64_PCT, CONV_RATIO},
    {"DCGM_FI_PROF_PIPE_FP32_ACTIVE", "gauge", "Ratio of time FP32 pipes were active (GPM).",
     GM_M_PROF_FP32_PCT, CONV_RATIO},
    {"DCGM_FI_PROF_PIPE_FP16_ACTIVE", "gauge", "Ratio of time FP16 pipes were active (GPM).",
     GM_M_PROF_FP16_PCT, CONV_RATIO},
    {"DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "PCIe bytes sent per second (GPM).",
     GM_M_PROF_PCIE_TX_BPS, CONV_NONE},
    {"DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "PCIe bytes received per second (GPM).",
     GM_M_PROF_PCIE_RX_BPS, CONV_NONE},
    {"DCGM_FI_PROF_NVLINK_TX_BYTES", "gauge", "NVLink bytes sent per second (GPM).",
     GM_M_PROF_NVLINK_TX_BPS, CONV_NONE},
    {"DCGM_FI_PROF_NVLINK_RX_BYTES", "gauge", "NVLink bytes received per second (GPM).",
     GM_M_PROF_NVLINK_RX_BPS, CONV_NONE},
    {"gpumon_gpu_xid_errors_total", "counter", "XID errors seen since gpumon started watching.",
     GM_M_XID_COUNT, CONV_NONE},
    {"gpumon_gpu_xid_last_timestamp_seconds", "gauge",
     "When the last XID error arrived (Unix seconds).", GM_M_XID_TIME_MS, CONV_MS_S},
    {"gpumon_gpu_power_average_watts", "gauge", "Board power draw averaged over 1 s (in W).",
     GM_M_POWER_AVG_MW, CONV_WATT},
    {"gpumon_gpu_power_instant_watts", "gauge", "Instantaneous board power draw (in W).",
     GM_M_POWER_INSTANT_MW, CONV_WATT},
    {"gpumon_gpu_sw_thermal_slowdown_microseconds_total", "counter",
     "Time clocks were held down by software thermal slowdown (in us).", GM_M_VIOL_SW_THERMAL_NS,
     CONV_US},
    {"gpumon_gpu_hw_thermal_slowdown_microseconds_total", "counter",
     "Time clocks were held down by hardware thermal slowdown (in us).", GM_M_VIOL_HW_THERMAL_NS,
     CONV_US},
    {"gpumon_gpu_hw_power_brake_microseconds_total", "counter",
     "Time clocks were held down by the external power brake (in us).", GM_M_VIOL_HW_POWER_BRAKE_NS,
     CONV_US},
    {"gpumon_gpu_nvlink_links_active", "gauge", "NVLink links up.", GM_M_NVLINK_ACTIVE, CONV_NONE},
    {"gpumon_gpu_nvlink_tx_bytes_total", "counter", "NVLink data sent (in bytes).",
     GM_M_NVLINK_TX_KIB, CONV_KIB},
    {"gpumon_gpu_nvlink_rx_bytes_total", "counter", "NVLink data received (in bytes).",
     GM_M_NVLINK_RX_KIB, CONV_KIB},
    {"gpumon_gpu_graphics_clock_mhz", "gauge", "Current graphics clock (in MHz).",
     GM_M_CLOCK_GR_MHZ, CONV_NONE},
    {"gpumon_gpu_max_graphics_clock_mhz", "gauge",
     "Highest graphics clock the GPU supports (in MHz).", GM_M_CLOCK_MAX_GR_MHZ, CONV_NONE},
};

#define GPU_FAMILY_COUNT (sizeof gpu_families / sizeof gpu_families[0])

static double convert(enum conv c, double v)
{
    switch (c) {
    case CONV_MIB:
        return floor(v / (double)GM_BYTES_PER_MIB);
    case CONV_WATT:
        return v / 1000.0;
    case CONV_US:
        return floor(v / 1000.0);
    case CONV_RATIO:
        return v / 100.0;
    case CONV_KIB:
        return v * 1024.0;
    case CONV_MS_S:
        return v / 1000.0;
    case CONV_NONE:
        break;
    }
    return v;
}

/* The Kubernetes container a GPU or process belongs to, as dcgm-exporter labels it (and the
 * Kubernetes instrumentation guidelines name it): container, namespace, pod; left out when not
 * known. */
static void put_k8s_labels(buf *b, bool *first, const gm_k8s_ref *r)
{
    if (r->container[0])
        put_label(b, first, "container", r->container, strnlen(r->container, sizeof r->container));
    if (r->pod_namespace[0])
        put_label(b, first, "namespace", r->pod_namespace,
                  strnlen(r->pod_namespace, sizeof r->pod_namespace));
    if (r->pod[0])
        put_label(b, first, "pod", r->pod, strnlen(r->pod, sizeof r->pod));
}

/* Appends dcgm-exporter's label set for g, in its order. Empty strings (a provider that did
 * not tell) are left out: Prometheus treats an empty label value as no label anyway. */
static void put_gpu_labels(buf *b, const gm_gpu *g, const char *hostname, const char *driver)
{
    char num[32];
    bool first = true;
    int n = snprintf(num, sizeof num, "%u", g->index);
    put_label(b, &first, "gpu", num, (size_t)n);
    if (g->uuid[0])
        put_label(b, &first, "UUID", g->uuid, strnlen(g->uuid, sizeof g->uuid));
    if (g->pci_bus_id[0])
        put_label(b, &first, "pci_bus_id", g->pci_bus_id,
                  strnlen(g->pci_bus_id, sizeof g->pci_bus_id));
    /* dcgm-exporter's device names NVIDIA's character device; other GPUs have none. */
    if (!g->vendor[0] || strcmp(g->vendor, "NVIDIA") == 0) {
        n = snprintf(num, sizeof num, "nvidia%u", g->index);
        put_label(b, &first, "device", num, (size_t)n);
    }
    if (g->name[0])
        put_label(b, &first, "modelName", g->name, strnlen(g->name, sizeof g->name));
    if (hostname[0])
        put_label_str(b, &first, "Hostname", hostname);
    if (driver[0])
        put_label_str(b, &first, "DCGM_FI_DRIVER_VERSION", driver);
    put_k8s_labels(b, &first, &g->k8s);
    buf_put(b, "}", 1);
}

/* Takes back the "}" put_gpu_labels closed the set with, so more labels can follow. */
static void reopen_labels(buf *b)
{
    if (!b->oom && b->len > 0 && b->p[b->len - 1] == '}')
        b->len--;
}

/* The MIG devices' own series of a memory or GPM family, in the family's block (Prometheus
 * wants a family's samples together): the GPU's labels plus dcgm-exporter's GPU_I_PROFILE and
 * GPU_I_ID. Memory and GPM belong to the GPU instance, which its compute instances share: one
 * series each. */
static void render_mig(buf *b, family *f, gm_metric m, const gm_snapshot *s, const char *hostname,
                       const char *driver)
{
    /* GPM per GPU instance gives these three, as dcgm-exporter serves them for MIG. */
    int prof = m == GM_M_PROF_SM_ACTIVE_PCT ? GM_MIG_PROF_SM_ACTIVE
               : m == GM_M_PROF_DRAM_PCT    ? GM_MIG_PROF_DRAM
               : m == GM_M_PROF_TENSOR_PCT  ? GM_MIG_PROF_TENSOR
                                            : -1;
    if (m != GM_M_MEM_USED_BYTES && m != GM_M_MEM_FREE_BYTES && m != GM_M_MEM_TOTAL_BYTES &&
        prof < 0)
        return;
    unsigned n = s->gpu_count < GM_MAX_GPUS ? s->gpu_count : GM_MAX_GPUS;
    for (unsigned i = 0; i < n; i++) {
        const gm_gpu *g = &s->gpus[i];
        for (unsigned k = 0; !g->lost && k < g->mig_count && k < GM_MAX_MIG; k++) {
            const gm_mig_device *d = &g->mig[k];
            bool seen = false;
            for (unsigned j = 0; j < k; j++)
                seen |= g->mig[j].gpu_instance_id == d->gpu_instance_id;
            if (seen || (prof < 0 ? !d->mem_valid : !((d->prof_valid >> prof) & 1u)) ||
                (prof >= 0 && !isfinite(d->prof_pct[prof])))
                continue;
            uint64_t bytes = m == GM_M_MEM_USED_BYTES   ? d->mem_used_bytes
                             : m == GM_M_MEM_FREE_BYTES ? d->mem_free_bytes
                                                        : d->mem_total_bytes;
            begin_sample(b, f);
            put_gpu_labels(b, g, hostname, driver);
            reopen_labels(b);
            bool first = false;
            if (d->profile[0])
                put_label(b, &first, "GPU_I_PROFILE", d->profile,
                          strnlen(d->profile, sizeof d->profile));
            buf_printf(b, ",GPU_I_ID=\"%u\"}", d->gpu_instance_id);
            put_value(b, prof >= 0 ? convert(CONV_RATIO, d->prof_pct[prof])
                                   : convert(CONV_MIB, (double)bytes));
        }
    }
}

/* The families of gpu_families: one series per GPU, then its MIG devices' own. */
static void render_gpu_families(buf *b, const gm_snapshot *s, const char *hostname,
                                const char *driver)
{
    unsigned n = s->gpu_count < GM_MAX_GPUS ? s->gpu_count : GM_MAX_GPUS;
    for (size_t fi = 0; fi < GPU_FAMILY_COUNT; fi++) {
        const gpu_family *gf = &gpu_families[fi];
        family f = {gf->name, gf->type, gf->help, false};
        for (unsigned i = 0; i < n; i++) {
            const gm_gpu *g = &s->gpus[i];
            /* A lost GPU reports nothing, whatever bits a provider left behind. */
            if (g->lost || !gm_gpu_has(g, gf->metric) || !isfinite(g->v[gf->metric]))
                continue;
            begin_sample(b, &f);
            put_gpu_labels(b, g, hostname, driver);
            put_value(b, convert(gf->conv, g->v[gf->metric]));
        }
        render_mig(b, &f, gf->metric, s, hostname, driver);
    }
}

/* One series per clock event reason the GPU reports. */
static void render_clock_reasons(buf *b, const gm_snapshot *s, const char *hostname,
                                 const char *driver)
{
    unsigned n = s->gpu_count < GM_MAX_GPUS ? s->gpu_count : GM_MAX_GPUS;
    family ev = {"gpumon_gpu_clock_event_reason_active", "gauge",
                 "1 while the clock event (throttle) reason holds the clocks down, 0 otherwise; "
                 "only the reasons the GPU reports.",
                 false};
    for (unsigned i = 0; i < n; i++) {
        const gm_gpu *g = &s->gpus[i];
        if (g->lost || !gm_gpu_has(g, GM_M_THROTTLE_REASONS))
            continue;
        uint64_t mask = (uint64_t)g->v[GM_M_THROTTLE_REASONS];
        uint64_t sup = gm_gpu_has(g, GM_M_THROTTLE_SUPPORTED)
                           ? (uint64_t)g->v[GM_M_THROTTLE_SUPPORTED]
                           : UINT64_MAX;
        for (unsigned r = 0; r < GM_CLOCK_REASON_COUNT; r++) {
            if (!(sup >> r & 1))
                continue;
            begin_sample(b, &ev);
            put_gpu_labels(b, g, hostname, driver);
            reopen_labels(b); /* the reason joins the GPU's labels */
            buf_printf(b, ",reason=\"%s\"}", gm_clock_reason_name(r));
            put_value(b, (double)(mask >> r & 1));
        }
    }
}

/* One series per ECC location, error kind and counter. */
static void render_ecc(buf *b, const gm_snapshot *s, const char *hostname, const char *driver)
{
    unsigned n = s->gpu_count < GM_MAX_GPUS ? s->gpu_count : GM_MAX_GPUS;
    static const struct {
        const char *location, *error, *counter;
        gm_metric m;
    } ecc_series[] = {
#define PROM_ECC_ROWS(X, id, name, loc)                              \
    {name, "corrected", "volatile", GM_M_ECC_CORR_VOL_##id},         \
        {name, "corrected", "aggregate", GM_M_ECC_CORR_AGG_##id},    \
        {name, "uncorrected", "volatile", GM_M_ECC_UNCORR_VOL_##id}, \
        {name, "uncorrected", "aggregate", GM_M_ECC_UNCORR_AGG_##id},
        GM_ECC_LOCATION_MAP(PROM_ECC_ROWS, _)
#undef PROM_ECC_ROWS
    };
    family ecc = {"gpumon_gpu_ecc_errors", "counter",
                  "ECC errors by memory location, error kind (corrected, uncorrected) and "
                  "counter (volatile: since the driver loaded; aggregate: the GPU's life).",
                  false};
    for (size_t k = 0; k < sizeof ecc_series / sizeof *ecc_series; k++)
        for (unsigned i = 0; i < n; i++) {
            const gm_gpu *g = &s->gpus[i];
            if (g->lost || !gm_gpu_has(g, ecc_series[k].m))
                continue;
            begin_sample(b, &ecc);
            put_gpu_labels(b, g, hostname, driver);
            reopen_labels(b);
            buf_printf(b, ",location=\"%s\",error=\"%s\",counter=\"%s\"}", ecc_series[k].location,
                       ecc_series[k].error, ecc_series[k].counter);
            put_value(b, g->v[ecc_series[k].m]);
        }
}

/* One series per remapping availability bucket. */
static void render_remap_banks(buf *b, const gm_snapshot *s, const char *hostname,
                               const char *driver)
{
    unsigned n = s->gpu_count < GM_MAX_GPUS ? s->gpu_count : GM_MAX_GPUS;
    static const char *const buckets[] = {"max", "high", "partial", "low", "none"};
    family hist = {"gpumon_gpu_remapped_rows_banks", "gauge",
                   "Memory banks by how many spare rows for remapping they have left.", false};
    for (unsigned i = 0; i < n; i++) {
        const gm_gpu *g = &s->gpus[i];
        for (int k = 0; k < 5; k++) {
            gm_metric m = (gm_metric)(GM_M_REMAP_HIST_MAX + k);
            if (g->lost || !gm_gpu_has(g, m))
                continue;
            begin_sample(b, &hist);
            put_gpu_labels(b, g, hostname, driver);
            reopen_labels(b);
            buf_printf(b, ",availability=\"%s\"}", buckets[k]);
            put_value(b, g->v[m]);
        }
    }
}

/* The labels that tell a board apart: serial, VBIOS, compute capability. */
static void render_info(buf *b, const gm_snapshot *s, const char *hostname, const char *driver)
{
    unsigned n = s->gpu_count < GM_MAX_GPUS ? s->gpu_count : GM_MAX_GPUS;
    family info = {"gpumon_gpu_info", "gauge",
                   "Always 1; the labels tell the board serial, VBIOS and CUDA compute "
                   "capability (unknown ones are left out).",
                   false};
    for (unsigned i = 0; i < n; i++) {
        const gm_gpu *g = &s->gpus[i];
        if (g->lost || (!g->serial[0] && !g->vbios[0] && !gm_gpu_has(g, GM_M_COMPUTE_CAP)))
            continue;
        begin_sample(b, &info);
        put_gpu_labels(b, g, hostname, driver);
        reopen_labels(b);
        bool first = false;
        if (g->serial[0])
            put_label(b, &first, "serial", g->serial, strnlen(g->serial, sizeof g->serial));
        if (g->vbios[0])
            put_label(b, &first, "vbios_version", g->vbios, strnlen(g->vbios, sizeof g->vbios));
        if (gm_gpu_has(g, GM_M_COMPUTE_CAP)) {
            int cc = (int)g->v[GM_M_COMPUTE_CAP];
            buf_printf(b, ",compute_cap=\"%d.%d\"", cc / 10, cc % 10);
        }
        buf_puts(b, "} 1\n");
    }
}

/* Whether each GPU is lost: the one series a lost GPU still has. */
static void render_lost(buf *b, const gm_snapshot *s, const char *hostname, const char *driver)
{
    unsigned n = s->gpu_count < GM_MAX_GPUS ? s->gpu_count : GM_MAX_GPUS;
    family lost = {"gpumon_gpu_lost", "gauge",
                   "1 when the GPU fell off the bus or stopped answering (no other metric is "
                   "reported for it), 0 otherwise.",
                   false};
    for (unsigned i = 0; i < n; i++) {
        begin_sample(b, &lost);
        put_gpu_labels(b, &s->gpus[i], hostname, driver);
        put_value(b, s->gpus[i].lost ? 1 : 0);
    }
}

static void render_gpus(buf *b, const gm_snapshot *s, const char *hostname)
{
    char driver[GM_VERSION_LEN + 1];
    snprintf(driver, sizeof driver, "%.*s", (int)sizeof s->driver_version, s->driver_version);
    render_gpu_families(b, s, hostname, driver);
    render_clock_reasons(b, s, hostname, driver);
    render_ecc(b, s, hostname, driver);
    render_remap_banks(b, s, hostname, driver);
    render_info(b, s, hostname, driver);
    render_lost(b, s, hostname, driver);
}

/* ---- processes ------------------------------------------------------------------------- */

/* The short command label: the base name of the first word of the command line, at most
 * COMM_MAX bytes cut on a character boundary. Full command lines make unbounded, often
 * secret-bearing label values; the pid already tells runs apart. */
#define COMM_MAX 32

static size_t short_command(const char *cmd, const char **start)
{
    size_t n = strcspn(cmd, " \t");
    const char *base = cmd;
    for (size_t i = 0; i < n; i++)
        if (cmd[i] == '/' && i + 1 < n)
            base = cmd + i + 1;
    n -= (size_t)(base - cmd);
    if (n > COMM_MAX) {
        n = COMM_MAX;
        /* Back off continuation bytes so a multi-byte character is dropped, not split. */
        while (n > 0 && ((unsigned char)base[n] & 0xC0) == 0x80)
            n--;
    }
    *start = base;
    return n;
}

static const char *proc_type(unsigned t)
{
    if (t == (GM_PROC_COMPUTE | GM_PROC_GRAPHICS))
        return "C+G";
    if (t == GM_PROC_GRAPHICS)
        return "G";
    if (t == GM_PROC_COMPUTE)
        return "C";
    return "";
}

/* A process's labels, the set left open ("}" follows). */
static void put_process_labels(buf *b, const gm_gpu *g, const gm_process *p)
{
    char num[32];
    bool first = true;
    int n = snprintf(num, sizeof num, "%u", p->gpu_index);
    put_label(b, &first, "gpu", num, (size_t)n);
    if (g && g->uuid[0])
        put_label(b, &first, "UUID", g->uuid, strnlen(g->uuid, sizeof g->uuid));
    n = snprintf(num, sizeof num, "%" PRIu32, p->pid);
    put_label(b, &first, "pid", num, (size_t)n);
    const char *type = proc_type(p->type);
    if (type[0])
        put_label_str(b, &first, "type", type);
    const char *cmd;
    size_t cmd_len = short_command(p->command, &cmd);
    if (cmd_len)
        put_label(b, &first, "command", cmd, cmd_len);
    if (p->user[0])
        put_label(b, &first, "user", p->user, strnlen(p->user, sizeof p->user));
    put_k8s_labels(b, &first, &p->k8s);
    /* The IDs from the cgroup, known even without the kubelet: they join with
     * kube-state-metrics (kube_pod_info's uid, kube_pod_container_info's container_id). */
    if (p->pod_uid[0])
        put_label(b, &first, "pod_uid", p->pod_uid, strnlen(p->pod_uid, sizeof p->pod_uid));
    if (p->container_id[0])
        put_label(b, &first, "container_id", p->container_id,
                  strnlen(p->container_id, sizeof p->container_id));
    const gm_mig_device *m = gm_gpu_process_mig(g, p);
    if (m && m->profile[0])
        put_label(b, &first, "GPU_I_PROFILE", m->profile, strnlen(m->profile, sizeof m->profile));
    if (m)
        buf_printf(b, ",GPU_I_ID=\"%u\"", m->gpu_instance_id);
}

static void render_processes(buf *b, const gm_snapshot *s, bool util)
{
    family f = {"gpumon_process_gpu_memory_bytes", "gauge",
                "GPU memory used by a process (absent when the driver withholds it).", false};
    const gm_gpu *g = NULL;
    for (size_t i = 0; i < s->proc_count; i++) {
        const gm_process *p = &s->procs[i];
        if (!p->mem_valid)
            continue;
        /* Processes come grouped by GPU, so the previous lookup usually still holds. */
        if (!g || g->index != p->gpu_index)
            g = gm_snapshot_gpu(s, p->gpu_index);
        begin_sample(b, &f);
        put_process_labels(b, g, p);
        buf_put(b, "}", 1);
        put_value(b, (double)p->used_mem_bytes);
    }

    /* One series per process and engine: only when asked for (serve --process-metrics), as
     * short-lived processes make many series. */
    static const char *const engines[GM_PROC_UTIL__COUNT] = {"sm", "memory", "encoder", "decoder"};
    family u = {"gpumon_process_utilization_percent", "gauge",
                "A process's share of a GPU engine over the driver's last sample period (in %; "
                "absent when the driver gave none).",
                false};
    g = NULL;
    for (size_t i = 0; util && i < s->proc_count; i++) {
        const gm_process *p = &s->procs[i];
        if (!g || g->index != p->gpu_index)
            g = gm_snapshot_gpu(s, p->gpu_index);
        for (int k = 0; k < GM_PROC_UTIL__COUNT; k++) {
            if (!((p->util_valid >> k) & 1u))
                continue;
            begin_sample(b, &u);
            put_process_labels(b, g, p);
            buf_printf(b, ",engine=\"%s\"}", engines[k]);
            put_value(b, p->util_pct[k]);
        }
    }

    family dropped = {"gpumon_processes_dropped", "gauge",
                      "GPU processes seen in the latest sample but not listed (over the "
                      "per-sample limit).",
                      false};
    sample(b, &dropped, (double)s->proc_dropped);
}

/* ---- host ------------------------------------------------------------------------------ */

typedef struct host_family {
    const char *name;
    const char *type;
    const char *help;
    gm_host_metric metric;
} host_family;

static const host_family host_families[] = {
    {"gpumon_host_cpu_utilization_percent", "gauge",
     "Busy share of all CPUs since the previous sample (in %).", GM_H_CPU_UTIL_PCT},
    {"gpumon_host_cpus", "gauge", "Logical CPUs online.", GM_H_CPU_COUNT},
    {"gpumon_host_memory_total_bytes", "gauge", "Physical memory.", GM_H_MEM_TOTAL_BYTES},
    {"gpumon_host_memory_used_bytes", "gauge", "Memory in use (total minus available).",
     GM_H_MEM_USED_BYTES},
    {"gpumon_host_memory_available_bytes", "gauge",
     "Memory available for new work without swapping (MemAvailable).", GM_H_MEM_AVAILABLE_BYTES},
    {"gpumon_host_swap_total_bytes", "gauge", "Swap space.", GM_H_SWAP_TOTAL_BYTES},
    {"gpumon_host_swap_used_bytes", "gauge", "Swap space in use.", GM_H_SWAP_USED_BYTES},
    {"gpumon_host_load1", "gauge", "1-minute load average.", GM_H_LOAD1},
    {"gpumon_host_load5", "gauge", "5-minute load average.", GM_H_LOAD5},
    {"gpumon_host_load15", "gauge", "15-minute load average.", GM_H_LOAD15},
    {"gpumon_host_uptime_seconds", "gauge", "Seconds since the host booted.", GM_H_UPTIME_S},
};

static void render_host(buf *b, const gm_snapshot *s, bool per_core)
{
    if (!s->host_valid)
        return;
    const gm_host *h = &s->host;
    for (size_t i = 0; i < sizeof host_families / sizeof host_families[0]; i++) {
        const host_family *hf = &host_families[i];
        family f = {hf->name, hf->type, hf->help, false};
        if (gm_host_has(h, hf->metric))
            sample(b, &f, h->v[hf->metric]);
    }

    if (per_core) {
        family f = {"gpumon_host_cpu_core_utilization_percent", "gauge",
                    "Busy share of one logical CPU since the previous sample (in %).", false};
        unsigned n = h->core_count < GM_MAX_CPUS ? h->core_count : GM_MAX_CPUS;
        for (unsigned i = 0; i < n; i++) {
            if (!isfinite(h->core_util_pct[i]))
                continue;
            begin_sample(b, &f);
            buf_printf(b, "{cpu=\"%u\"}", i);
            put_value(b, h->core_util_pct[i]);
        }
    }

    if (h->hostname[0] || h->kernel[0] || h->cpu_model[0]) {
        family f = {"gpumon_host_info", "gauge",
                    "Always 1; the labels describe the host (empty ones are left out).", false};
        bool first = true;
        begin_sample(b, &f);
        if (h->hostname[0])
            put_label(b, &first, "hostname", h->hostname, strnlen(h->hostname, GM_HOSTNAME_LEN));
        if (h->kernel[0])
            put_label(b, &first, "kernel", h->kernel, strnlen(h->kernel, sizeof h->kernel));
        if (h->cpu_model[0])
            put_label(b, &first, "cpu_model", h->cpu_model,
                      strnlen(h->cpu_model, sizeof h->cpu_model));
        buf_puts(b, "} 1\n");
    }
}

/* ---- daemon ---------------------------------------------------------------------------- */

static void put_fixed_label(buf *b, bool *first, const char *name, const char *field, size_t max)
{
    size_t n = strnlen(field, max);
    if (n)
        put_label(b, first, name, field, n);
}

static void render_daemon(buf *b, const gm_snapshot *s, const gm_prom_health *h)
{
    family info = {"gpumon_info", "gauge",
                   "Always 1; the labels name the gpumon version, the telemetry provider and "
                   "the driver stack (empty ones are left out).",
                   false};
    bool first = true;
    begin_sample(b, &info);
    put_label_str(b, &first, "version", GM_VERSION);
    put_fixed_label(b, &first, "provider", s->provider, sizeof s->provider);
    put_fixed_label(b, &first, "driver_version", s->driver_version, sizeof s->driver_version);
    put_fixed_label(b, &first, "cuda_version", s->cuda_version, sizeof s->cuda_version);
    put_fixed_label(b, &first, "nvml_version", s->nvml_version, sizeof s->nvml_version);
    buf_puts(b, "} 1\n");

    family count = {"gpumon_gpus", "gauge", "GPUs the provider enumerated.", false};
    sample(b, &count, s->gpu_count);

    if (s->time_ms > 0) {
        family ts = {"gpumon_last_sample_timestamp_seconds", "gauge",
                     "Wall-clock time of the sample these values come from (Unix seconds); "
                     "time() minus it is the age of the data.",
                     false};
        begin_sample(b, &ts);
        buf_printf(b, " %" PRId64 ".%03d\n", s->time_ms / 1000, (int)(s->time_ms % 1000));
    }

    if (!h)
        return;
    family total = {"gpumon_sampler_samples_total", "counter",
                    "Sampling passes attempted since the daemon started.", false};
    family errors = {"gpumon_sampler_errors_total", "counter",
                     "Sampling passes that failed since the daemon started.", false};
    family dur = {"gpumon_sampler_last_duration_seconds", "gauge",
                  "Wall time the latest sampling pass took.", false};
    family up = {"gpumon_uptime_seconds", "gauge", "Seconds since the daemon started.", false};
    sample(b, &total, (double)h->samples_total);
    sample(b, &errors, (double)h->sample_errors_total);
    if (h->last_sample_duration_s >= 0)
        sample(b, &dur, h->last_sample_duration_s);
    if (h->uptime_s >= 0)
        sample(b, &up, h->uptime_s);

    /* Where sampling time goes, per driver call and host read: a summary without quantiles
     * (its _sum and _count), so rate(_sum) / rate(_count) is the mean time of one call. */
    if (!h->call_count)
        return;
    buf_puts(b, "# HELP gpumon_sampler_call_seconds Wall time the collector spent in one kind of "
                "call (an NVML function, a field-value batch, a /proc read, an nvidia-smi run) "
                "since the daemon started, and how many such calls it made.\n"
                "# TYPE gpumon_sampler_call_seconds summary\n");
    for (size_t i = 0; i < h->call_count; i++) {
        bool open = true;
        buf_puts(b, "gpumon_sampler_call_seconds_sum");
        put_label_str(b, &open, "call", h->calls[i].name);
        buf_puts(b, "}");
        put_value(b, h->calls[i].wall_s);
        open = true;
        buf_puts(b, "gpumon_sampler_call_seconds_count");
        put_label_str(b, &open, "call", h->calls[i].name);
        buf_puts(b, "}");
        put_value(b, (double)h->calls[i].count);
    }
    family cpu = {"gpumon_sampler_call_cpu_seconds_total", "counter",
                  "CPU time (of the sampling thread) the collector spent in one kind of call "
                  "since the daemon started.",
                  false};
    for (size_t i = 0; i < h->call_count; i++) {
        bool open = true;
        begin_sample(b, &cpu);
        put_label_str(b, &open, "call", h->calls[i].name);
        buf_puts(b, "}");
        put_value(b, h->calls[i].cpu_s);
    }
}

/* ---- NVLink bandwidth ------------------------------------------------------------------ */

struct gm_prom_rates {
    struct {
        char uuid[GM_UUID_LEN];
        double kib;      /* sent + received at the last change */
        int64_t ms;      /* snapshot time of that change */
        double rate_mbs; /* rate over the interval that ended there; < 0 unknown */
    } gpu[GM_MAX_GPUS];
    unsigned n;
};

gm_prom_rates *gm_prom_rates_new(void)
{
    return calloc(1, sizeof(gm_prom_rates));
}

void gm_prom_rates_free(gm_prom_rates *r)
{
    free(r);
}

void gm_prom_rates_update(gm_prom_rates *r, const gm_snapshot *s, gm_prom_health *h)
{
    memset(h->nvlink_bw_set, 0, sizeof h->nvlink_bw_set);
    if (!r || !s)
        return;
    unsigned n = s->gpu_count < GM_MAX_GPUS ? s->gpu_count : GM_MAX_GPUS;
    for (unsigned i = 0; i < n; i++) {
        const gm_gpu *g = &s->gpus[i];
        unsigned k = 0;
        while (k < r->n && strcmp(r->gpu[k].uuid, g->uuid) != 0)
            k++;
        bool have = !g->lost && gm_gpu_has(g, GM_M_NVLINK_TX_KIB) &&
                    gm_gpu_has(g, GM_M_NVLINK_RX_KIB) && g->uuid[0];
        double kib = have ? g->v[GM_M_NVLINK_TX_KIB] + g->v[GM_M_NVLINK_RX_KIB] : NAN;
        if (!have || !isfinite(kib)) {
            if (k < r->n) /* forget it: the next reading starts over */
                r->gpu[k] = r->gpu[--r->n];
            continue;
        }
        if (k == r->n) {
            if (r->n == GM_MAX_GPUS)
                continue;
            r->n++;
            snprintf(r->gpu[k].uuid, sizeof r->gpu[k].uuid, "%s", g->uuid);
            r->gpu[k].kib = kib;
            r->gpu[k].ms = s->time_ms;
            r->gpu[k].rate_mbs = -1;
            continue;
        }
        if (kib < r->gpu[k].kib) { /* a reset: start over */
            r->gpu[k].kib = kib;
            r->gpu[k].ms = s->time_ms;
            r->gpu[k].rate_mbs = -1;
            continue;
        }
        int64_t dt = s->time_ms - r->gpu[k].ms;
        if (kib > r->gpu[k].kib && dt > 0) {
            r->gpu[k].rate_mbs = (kib - r->gpu[k].kib) * 1024.0 / 1e6 / ((double)dt / 1000.0);
            r->gpu[k].kib = kib;
            r->gpu[k].ms = s->time_ms;
        } else if (dt > GM_PROM_NVLINK_IDLE_MS) {
            r->gpu[k].rate_mbs = 0;
        }
        if (r->gpu[k].rate_mbs >= 0) {
            h->nvlink_bw[i] = r->gpu[k].rate_mbs;
            h->nvlink_bw_set[i] = true;
        }
    }
}

static void render_nvlink_bw(buf *b, const gm_snapshot *s, const gm_prom_health *h,
                             const char *hostname)
{
    if (!h)
        return;
    char driver[GM_VERSION_LEN + 1];
    snprintf(driver, sizeof driver, "%.*s", (int)sizeof s->driver_version, s->driver_version);
    /* dcgm-exporter declares it a counter; its value is a rate, so a gauge here. */
    family f = {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "gauge",
                "NVLink bandwidth, sent and received over all links (in MB/s).", false};
    unsigned n = s->gpu_count < GM_MAX_GPUS ? s->gpu_count : GM_MAX_GPUS;
    for (unsigned i = 0; i < n; i++) {
        if (!h->nvlink_bw_set[i] || s->gpus[i].lost || !isfinite(h->nvlink_bw[i]))
            continue;
        begin_sample(b, &f);
        put_gpu_labels(b, &s->gpus[i], hostname, driver);
        put_value(b, h->nvlink_bw[i]);
    }
}

/* ---- AMD GPUs under AMD's names ------------------------------------------------------- */

/* AMD's device-metrics-exporter (ROCm/device-metrics-exporter) names and units, for AMD GPUs
 * only, so that its Grafana dashboards work on gpumon: gauge per reading, labels in its
 * (alphabetical) order, gpu_id the GPU's index among the AMD GPUs as amd-smi numbers them. */
typedef struct amd_family {
    const char *name;
    const char *help;
    gm_metric metric;
    double scale;
    const char *clock_type; /* gpu_clock and gpu_max_clock: "system" or "memory" */
} amd_family;

static const amd_family amd_families[] = {
    {"gpu_gfx_activity", "Graphics engine usage in Percentage (0-100)", GM_M_UTIL_GPU_PCT, 1, NULL},
    {"gpu_umc_activity", "Memory engine usage in Percentage (0-100)", GM_M_UTIL_MEM_PCT, 1, NULL},
    {"gpu_edge_temperature", "Current edge temperature in Celsius", GM_M_TEMP_EDGE_C, 1, NULL},
    {"gpu_junction_temperature", "Current junction/hotspot temperature in Celsius",
     GM_M_TEMP_JUNCTION_C, 1, NULL},
    {"gpu_memory_temperature", "Current memory temperature in Celsius", GM_M_TEMP_MEM_C, 1, NULL},
    {"gpu_power_usage", "GPU Power usage in Watts", GM_M_POWER_MW, 1e-3, NULL},
    {"gpu_package_power", "Current socket power in Watts", GM_M_POWER_INSTANT_MW, 1e-3, NULL},
    {"gpu_average_package_power", "Average socket power in Watts", GM_M_POWER_AVG_MW, 1e-3, NULL},
    {"gpu_energy_consumed", "Accumulated energy consumed by the GPU in uJ", GM_M_ENERGY_MJ, 1e3,
     NULL},
    {"gpu_total_vram", "Total VRAM memory of the GPU (in MB)", GM_M_MEM_TOTAL_BYTES, 0, NULL},
    {"gpu_used_vram", "Used VRAM memory of the GPU (in MB)", GM_M_MEM_USED_BYTES, 0, NULL},
    {"gpu_free_vram", "Free VRAM memory of the GPU (in MB)", GM_M_MEM_FREE_BYTES, 0, NULL},
    {"gpu_clock", "List of current GPU clock frequencies in MHz", GM_M_CLOCK_GR_MHZ, 1, "system"},
    {"gpu_clock", NULL, GM_M_CLOCK_MEM_MHZ, 1, "memory"},
    {"gpu_max_clock", "List of current GPU max clock frequencies in MHz", GM_M_CLOCK_MAX_GR_MHZ, 1,
     "system"},
    {"gpu_max_clock", NULL, GM_M_CLOCK_MAX_MEM_MHZ, 1, "memory"},
    {"pcie_speed", "Current PCIe speed in GT/s", GM_M_PCIE_GEN_CUR, -1, NULL},
    {"pcie_max_speed", "Maximum PCIe speed in GT/s", GM_M_PCIE_GEN_MAX, -1, NULL},
    {"gpu_ecc_correct_total", "Total Correctable ECC error count", GM_M_ECC_CORR_VOL, 1, NULL},
    {"gpu_ecc_uncorrect_total", "Total Uncorrectable ECC error count", GM_M_ECC_UNCORR_VOL, 1,
     NULL},
};

#define AMD_FAMILY_COUNT (sizeof amd_families / sizeof amd_families[0])

static bool is_amd(const gm_gpu *g)
{
    return strcmp(g->vendor, "AMD") == 0;
}

/* A PCIe generation's transfer rate per lane, GT/s; 0 when unknown. */
static double pcie_gts(double gen)
{
    static const double gts[] = {0, 2.5, 5, 8, 16, 32, 64};
    return gen >= 1 && gen <= 6 ? gts[(int)gen] : 0;
}

static void put_amd_labels(buf *b, const gm_gpu *g, unsigned amd_index, const char *hostname,
                           const char *clock_type)
{
    char num[16];
    bool first = true;
    const char *model = g->board_part_number[0] ? g->board_part_number : g->name;
    if (model[0])
        put_label_str(b, &first, "card_model", model);
    if (clock_type)
        put_label_str(b, &first, "clock_type", clock_type);
    int n = snprintf(num, sizeof num, "%u", amd_index);
    put_label(b, &first, "gpu_id", num, (size_t)n);
    if (g->uuid[0])
        put_label(b, &first, "gpu_uuid", g->uuid, strnlen(g->uuid, sizeof g->uuid));
    if (hostname[0])
        put_label_str(b, &first, "hostname", hostname);
    if (g->serial[0])
        put_label(b, &first, "serial_number", g->serial, strnlen(g->serial, sizeof g->serial));
    put_k8s_labels(b, &first, &g->k8s);
    buf_put(b, "}", 1);
}

static void render_amd(buf *b, const gm_snapshot *s, const char *hostname)
{
    unsigned n = s->gpu_count < GM_MAX_GPUS ? s->gpu_count : GM_MAX_GPUS, amd = 0;
    for (unsigned i = 0; i < n; i++)
        amd += is_amd(&s->gpus[i]);
    if (!amd)
        return;
    family nodes = {"gpu_nodes_total", "gauge", "Number of GPUs in the node", false};
    begin_sample(b, &nodes);
    bool first = true;
    if (hostname[0])
        put_label_str(b, &first, "hostname", hostname);
    if (!first)
        buf_put(b, "}", 1);
    put_value(b, amd);
    family f = {NULL, "gauge", NULL, false};
    for (size_t fi = 0; fi < AMD_FAMILY_COUNT; fi++) {
        const amd_family *af = &amd_families[fi];
        /* A second row of the same family (another clock type) continues its series. */
        if (!f.name || strcmp(f.name, af->name) != 0)
            f = (family){af->name, "gauge", af->help, false};
        unsigned k = 0;
        for (unsigned i = 0; i < n; i++) {
            const gm_gpu *g = &s->gpus[i];
            if (!is_amd(g))
                continue;
            unsigned amd_index = k++;
            if (g->lost || !gm_gpu_has(g, af->metric) || !isfinite(g->v[af->metric]))
                continue;
            double v = g->v[af->metric];
            v = af->scale == 0  ? floor(v / (double)GM_BYTES_PER_MIB)
                : af->scale < 0 ? pcie_gts(v)
                                : v * af->scale;
            if (af->scale < 0 && v == 0)
                continue;
            begin_sample(b, &f);
            put_amd_labels(b, g, amd_index, hostname, af->clock_type);
            put_value(b, v);
        }
    }
}

/* ---- entry point ----------------------------------------------------------------------- */

/* A first guess at the output size so that a typical render allocates once. */
static size_t estimate(const gm_snapshot *s, bool per_core)
{
    size_t per_sample = 320; /* name + dcgm label set with long model names and host names */
    size_t n = 8192;
    n += (size_t)s->gpu_count * (GPU_FAMILY_COUNT + 1) * per_sample;
    n += s->proc_count * 256;
    if (per_core && s->host_valid)
        n += (size_t)s->host.core_count * 64;
    return n;
}

char *gm_prom_render(const gm_snapshot *s, const gm_prom_health *h, size_t *len)
{
    if (!s)
        return NULL;
    bool per_core = !(h && h->no_per_core);
    const char *hostname = h && h->hostname && h->hostname[0] ? h->hostname : s->host.hostname;
    char host[GM_HOSTNAME_LEN + 1];
    snprintf(host, sizeof host, "%.*s", GM_HOSTNAME_LEN, hostname);

    buf b = {0};
    if (!buf_reserve(&b, estimate(s, per_core)))
        return NULL;
    render_gpus(&b, s, host);
    render_amd(&b, s, host);
    render_nvlink_bw(&b, s, h, host);
    render_processes(&b, s, h && h->process_utilization);
    render_host(&b, s, per_core);
    render_daemon(&b, s, h);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    b.p[b.len] = '\0';
    if (len)
        *len = b.len;
    return b.p;
}
