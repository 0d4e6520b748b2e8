/* json_read.c - gm_json_snapshot's document back into a gm_snapshot: each value where json.c
 * put it, in the unit the metric table gives (display values divided by their scale). */
#include "base/json_read.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/smi_format.h"
#include "base/error.h"
#include "base/str.h"

/* How a field holds its metric. */
enum kind {
    DISPLAY, /* the display unit: raw = value / scale */
    RAW,     /* the raw value */
    FLAG,    /* a boolean: 1 or 0 */
    KIB,     /* bytes of a metric kept in KiB */
};

typedef struct field {
    const char *path; /* '.'-separated keys below the GPU object */
    gm_metric m;
    enum kind kind;
} field;

#define ECC_LOC_FIELDS(X, id, name, loc)                                                       \
    {"health.ecc.locations." name ".corrected_volatile", GM_M_ECC_CORR_VOL_##id, RAW},         \
        {"health.ecc.locations." name ".corrected_aggregate", GM_M_ECC_CORR_AGG_##id, RAW},    \
        {"health.ecc.locations." name ".uncorrected_volatile", GM_M_ECC_UNCORR_VOL_##id, RAW}, \
        {"health.ecc.locations." name ".uncorrected_aggregate", GM_M_ECC_UNCORR_AGG_##id, RAW},

/* Every metric json.c writes as a number or a boolean, by where it writes it. */
static const field gpu_fields[] = {
    {"utilization.gpu", GM_M_UTIL_GPU_PCT, DISPLAY},
    {"utilization.memory", GM_M_UTIL_MEM_PCT, DISPLAY},
    {"utilization.encoder", GM_M_UTIL_ENC_PCT, DISPLAY},
    {"utilization.decoder", GM_M_UTIL_DEC_PCT, DISPLAY},
    {"utilization.jpeg", GM_M_UTIL_JPEG_PCT, DISPLAY},
    {"utilization.ofa", GM_M_UTIL_OFA_PCT, DISPLAY},
    {"memory.total_bytes", GM_M_MEM_TOTAL_BYTES, RAW},
    {"memory.used_bytes", GM_M_MEM_USED_BYTES, RAW},
    {"memory.free_bytes", GM_M_MEM_FREE_BYTES, RAW},
    {"memory.reserved_bytes", GM_M_MEM_RESERVED_BYTES, RAW},
    {"temperature_c", GM_M_TEMP_C, DISPLAY},
    {"temperature_junction_c", GM_M_TEMP_JUNCTION_C, DISPLAY},
    {"temperature_memory_c", GM_M_TEMP_MEM_C, DISPLAY},
    {"temperature_tlimit_c", GM_M_TEMP_TLIMIT_C, RAW},
    {"temperature_slowdown_c", GM_M_TEMP_SLOWDOWN_C, DISPLAY},
    {"power.draw_w", GM_M_POWER_MW, DISPLAY},
    {"power.limit_w", GM_M_POWER_LIMIT_MW, DISPLAY},
    {"power.draw_average_w", GM_M_POWER_AVG_MW, DISPLAY},
    {"power.draw_instant_w", GM_M_POWER_INSTANT_MW, DISPLAY},
    {"power.requested_limit_w", GM_M_POWER_REQ_LIMIT_MW, DISPLAY},
    {"power.default_limit_w", GM_M_POWER_DEFAULT_LIMIT_MW, DISPLAY},
    {"power.min_limit_w", GM_M_POWER_MIN_LIMIT_MW, DISPLAY},
    {"power.max_limit_w", GM_M_POWER_MAX_LIMIT_MW, DISPLAY},
    {"energy_j", GM_M_ENERGY_MJ, DISPLAY},
    {"clocks.graphics_mhz", GM_M_CLOCK_GR_MHZ, DISPLAY},
    {"clocks.sm_mhz", GM_M_CLOCK_SM_MHZ, DISPLAY},
    {"clocks.memory_mhz", GM_M_CLOCK_MEM_MHZ, DISPLAY},
    {"clocks.video_mhz", GM_M_CLOCK_VIDEO_MHZ, DISPLAY},
    {"clocks.max_graphics_mhz", GM_M_CLOCK_MAX_GR_MHZ, DISPLAY},
    {"clocks.max_sm_mhz", GM_M_CLOCK_MAX_SM_MHZ, DISPLAY},
    {"clocks.max_memory_mhz", GM_M_CLOCK_MAX_MEM_MHZ, DISPLAY},
    {"fan_percent", GM_M_FAN_PCT, DISPLAY},
    {"pcie.gen_current", GM_M_PCIE_GEN_CUR, DISPLAY},
    {"pcie.gen_max", GM_M_PCIE_GEN_MAX, DISPLAY},
    {"pcie.gen_gpu_max", GM_M_PCIE_GEN_GPU_MAX, DISPLAY},
    {"pcie.width_current", GM_M_PCIE_WIDTH_CUR, DISPLAY},
    {"pcie.width_max", GM_M_PCIE_WIDTH_MAX, DISPLAY},
    {"pcie.tx_kbps", GM_M_PCIE_TX_KBPS, DISPLAY},
    {"pcie.rx_kbps", GM_M_PCIE_RX_KBPS, DISPLAY},
    {"pcie.base_class", GM_M_PCI_BASE_CLASS, RAW},
    {"pcie.sub_class", GM_M_PCI_SUB_CLASS, RAW},
    {"persistence_mode", GM_M_PERSISTENCE_MODE, FLAG},
    {"mig_mode.current", GM_M_MIG_MODE_CUR, FLAG},
    {"mig_mode.pending", GM_M_MIG_MODE_PENDING, FLAG},
    {"accounting.mode", GM_M_ACCOUNTING_MODE, FLAG},
    {"accounting.buffer_size", GM_M_ACCOUNTING_BUFFER, RAW},
    {"gsp_firmware_mode.current", GM_M_GSP_MODE_CUR, FLAG},
    {"gsp_firmware_mode.default", GM_M_GSP_MODE_DEFAULT, FLAG},
    {"display.attached", GM_M_DISPLAY_ATTACHED, FLAG},
    {"display.active", GM_M_DISPLAY_ACTIVE, FLAG},
    {"c2c_mode", GM_M_C2C_MODE, FLAG},
    {"edpp_multiplier_percent", GM_M_EDPP_MULTIPLIER_PCT, DISPLAY},
    {"protected_memory.total_mib", GM_M_PROT_MEM_TOTAL_BYTES, DISPLAY},
    {"protected_memory.used_mib", GM_M_PROT_MEM_USED_BYTES, DISPLAY},
    {"protected_memory.free_mib", GM_M_PROT_MEM_FREE_BYTES, DISPLAY},
    {"bar1.total_mib", GM_M_BAR1_TOTAL_BYTES, DISPLAY},
    {"bar1.used_mib", GM_M_BAR1_USED_BYTES, DISPLAY},
    {"bar1.free_mib", GM_M_BAR1_FREE_BYTES, DISPLAY},
    {"fabric.clique_id", GM_M_FABRIC_CLIQUE_ID, RAW},
    {"encoder_stats.sessions", GM_M_ENC_SESSIONS, RAW},
    {"encoder_stats.average_fps", GM_M_ENC_FPS, RAW},
    {"encoder_stats.average_latency_us", GM_M_ENC_LATENCY_US, RAW},
    {"health.xid.last", GM_M_XID_LAST, RAW},
    {"health.xid.count", GM_M_XID_COUNT, RAW},
    {"health.ecc.mode.current", GM_M_ECC_MODE_CUR, FLAG},
    {"health.ecc.mode.pending", GM_M_ECC_MODE_PENDING, FLAG},
    {"health.ecc.corrected_volatile", GM_M_ECC_CORR_VOL, RAW},
    {"health.ecc.corrected_aggregate", GM_M_ECC_CORR_AGG, RAW},
    {"health.ecc.uncorrected_volatile", GM_M_ECC_UNCORR_VOL, RAW},
    {"health.ecc.uncorrected_aggregate", GM_M_ECC_UNCORR_AGG, RAW},
    GM_ECC_LOCATION_MAP(ECC_LOC_FIELDS, _){"health.ecc.sram.uncorrected_volatile_parity",
                                           GM_M_SRAM_UNCORR_VOL_PARITY, RAW},
    {"health.ecc.sram.uncorrected_volatile_secded", GM_M_SRAM_UNCORR_VOL_SECDED, RAW},
    {"health.ecc.sram.uncorrected_aggregate_parity", GM_M_SRAM_UNCORR_AGG_PARITY, RAW},
    {"health.ecc.sram.uncorrected_aggregate_secded", GM_M_SRAM_UNCORR_AGG_SECDED, RAW},
    {"health.ecc.sram.threshold_exceeded", GM_M_SRAM_THRESHOLD_EXCEEDED, FLAG},
    {"health.ecc.sram.uncorrected_aggregate_by_unit.l2", GM_M_SRAM_UNCORR_AGG_L2, RAW},
    {"health.ecc.sram.uncorrected_aggregate_by_unit.sm", GM_M_SRAM_UNCORR_AGG_SM, RAW},
    {"health.ecc.sram.uncorrected_aggregate_by_unit.mcu", GM_M_SRAM_UNCORR_AGG_MCU, RAW},
    {"health.ecc.sram.uncorrected_aggregate_by_unit.pcie", GM_M_SRAM_UNCORR_AGG_PCIE, RAW},
    {"health.ecc.sram.uncorrected_aggregate_by_unit.other", GM_M_SRAM_UNCORR_AGG_OTHER, RAW},
    {"health.retired_pages.single_bit", GM_M_RETIRED_SBE, RAW},
    {"health.retired_pages.double_bit", GM_M_RETIRED_DBE, RAW},
    {"health.retired_pages.pending", GM_M_RETIRED_PENDING, FLAG},
    {"health.remapped_rows.correctable", GM_M_REMAP_CORR, RAW},
    {"health.remapped_rows.uncorrectable", GM_M_REMAP_UNCORR, RAW},
    {"health.remapped_rows.pending", GM_M_REMAP_PENDING, FLAG},
    {"health.remapped_rows.failure", GM_M_REMAP_FAILURE, FLAG},
    {"health.remapped_rows.histogram.max", GM_M_REMAP_HIST_MAX, RAW},
    {"health.remapped_rows.histogram.high", GM_M_REMAP_HIST_HIGH, RAW},
    {"health.remapped_rows.histogram.partial", GM_M_REMAP_HIST_PARTIAL, RAW},
    {"health.remapped_rows.histogram.low", GM_M_REMAP_HIST_LOW, RAW},
    {"health.remapped_rows.histogram.none", GM_M_REMAP_HIST_NONE, RAW},
    {"health.pcie_replay_counter", GM_M_PCIE_REPLAY, RAW},
    {"health.recovery_action", GM_M_RECOVERY_ACTION, RAW},
    {"health.violations_us.power", GM_M_VIOL_POWER_NS, DISPLAY},
    {"health.violations_us.thermal", GM_M_VIOL_THERMAL_NS, DISPLAY},
    {"health.violations_us.sync_boost", GM_M_VIOL_SYNC_BOOST_NS, DISPLAY},
    {"health.violations_us.sw_thermal_slowdown", GM_M_VIOL_SW_THERMAL_NS, DISPLAY},
    {"health.violations_us.hw_thermal_slowdown", GM_M_VIOL_HW_THERMAL_NS, DISPLAY},
    {"health.violations_us.hw_power_brake_slowdown", GM_M_VIOL_HW_POWER_BRAKE_NS, DISPLAY},
    {"health.nvlink.links_active", GM_M_NVLINK_ACTIVE, RAW},
    {"health.nvlink.tx_bytes", GM_M_NVLINK_TX_KIB, KIB},
    {"health.nvlink.rx_bytes", GM_M_NVLINK_RX_KIB, KIB},
    {"health.nvlink.crc_flit_errors", GM_M_NVLINK_CRC_FLIT, RAW},
    {"health.nvlink.crc_data_errors", GM_M_NVLINK_CRC_DATA, RAW},
    {"health.nvlink.replay_errors", GM_M_NVLINK_REPLAY, RAW},
    {"health.nvlink.recovery_errors", GM_M_NVLINK_RECOVERY, RAW},
    {"profiling.gr_engine_active_percent", GM_M_PROF_GR_ACTIVE_PCT, DISPLAY},
    {"profiling.sm_active_percent", GM_M_PROF_SM_ACTIVE_PCT, DISPLAY},
    {"profiling.sm_occupancy_percent", GM_M_PROF_SM_OCCUPANCY_PCT, DISPLAY},
    {"profiling.tensor_active_percent", GM_M_PROF_TENSOR_PCT, DISPLAY},
    {"profiling.dram_active_percent", GM_M_PROF_DRAM_PCT, DISPLAY},
    {"profiling.fp64_active_percent", GM_M_PROF_FP64_PCT, DISPLAY},
    {"profiling.fp32_active_percent", GM_M_PROF_FP32_PCT, DISPLAY},
    {"profiling.fp16_active_percent", GM_M_PROF_FP16_PCT, DISPLAY},
    {"profiling.pcie_tx_bytes_per_second", GM_M_PROF_PCIE_TX_BPS, DISPLAY},
    {"profiling.pcie_rx_bytes_per_second", GM_M_PROF_PCIE_RX_BPS, DISPLAY},
    {"profiling.nvlink_tx_bytes_per_second", GM_M_PROF_NVLINK_TX_BPS, DISPLAY},
    {"profiling.nvlink_rx_bytes_per_second", GM_M_PROF_NVLINK_RX_BPS, DISPLAY},
};

/* The value at path ("a.b.c") below o, NULL when a step is missing. */
static const json_t *at(const json_t *o, const char *path)
{
    char key[64];
    while (o && *path) {
        size_t n = strcspn(path, ".");
        if (n >= sizeof key)
            return NULL;
        memcpy(key, path, n);
        key[n] = '\0';
        o = json_object_get(o, key);
        path += n + (path[n] == '.');
    }
    return o;
}

static void text(char *dst, size_t len, const json_t *j)
{
    gm_str_copy(dst, len, json_string_value(j)); /* not a string: "" */
}

/* The raw value of a display value v: v / scale, written as a product where the scale is the
 * inverse of a whole number (0.001, 1/1048576), so that 250 W reads back as exactly 250000 mW. */
static double from_display(gm_metric m, double v)
{
    double scale = gm_metric_get(m)->scale;
    if (scale > 0 && scale < 1) {
        double inv = round(1 / scale);
        if (fabs(inv * scale - 1) < 1e-12)
            return v * inv;
    }
    return scale != 0 ? v / scale : v;
}

static void read_field(const json_t *g, const field *f, gm_gpu *out)
{
    const json_t *j = at(g, f->path);
    if (f->kind == FLAG) {
        if (json_is_boolean(j))
            gm_gpu_set(out, f->m, json_is_true(j) ? 1 : 0);
        return;
    }
    if (!json_is_number(j))
        return;
    double v = json_number_value(j);
    if (!isfinite(v))
        return;
    gm_gpu_set(out, f->m,
               f->kind == DISPLAY ? from_display(f->m, v)
               : f->kind == KIB   ? v / 1024.0
                                  : v);
}

/* The value of kind whose nvidia-smi word is j, or -1. */
static long long enum_value(gm_smi_kind kind, const json_t *j)
{
    if (!json_is_string(j))
        return -1;
    for (long long v = 0; v < 64; v++) {
        const char *w = gm_smi_enum_word(kind, v);
        if (w && strcmp(w, json_string_value(j)) == 0)
            return v;
    }
    return -1;
}

/* "0x%016llx" as json.c writes masks; false when j is not one. */
static bool hex_mask(const json_t *j, double *out)
{
    if (!json_is_string(j))
        return false;
    const char *s = json_string_value(j);
    char *end;
    unsigned long long v = strtoull(s, &end, 16);
    if (end == s || *end)
        return false;
    *out = (double)v;
    return true;
}

/* "2026-11-26T00:42:52.123Z" (gm_json_time) in Unix ms; false when j is not one. */
static bool iso_ms(const json_t *j, double *out)
{
    if (!json_is_string(j))
        return false;
    struct tm tm = {0};
    const char *rest = strptime(json_string_value(j), "%Y-%m-%dT%H:%M:%S", &tm);
    int ms = 0;
    if (!rest || sscanf(rest, ".%3dZ", &ms) != 1)
        return false;
    *out = (double)timegm(&tm) * 1000.0 + ms;
    return true;
}

static void read_gpu_special(const json_t *g, gm_gpu *out)
{
    static const char *const compute_modes[] = {"Default", "Exclusive_Thread", "Prohibited",
                                                "Exclusive_Process"};
    const json_t *j = json_object_get(g, "pstate");
    unsigned ps;
    char tail;
    if (json_is_string(j) && sscanf(json_string_value(j), "P%u%c", &ps, &tail) == 1)
        gm_gpu_set(out, GM_M_PSTATE, ps);
    double v;
    const json_t *thr = json_object_get(g, "throttle_reasons");
    if (hex_mask(json_object_get(thr, "mask"), &v))
        gm_gpu_set(out, GM_M_THROTTLE_REASONS, v);
    if (hex_mask(json_object_get(thr, "supported_mask"), &v))
        gm_gpu_set(out, GM_M_THROTTLE_SUPPORTED, v);
    unsigned major, minor;
    j = json_object_get(g, "compute_capability");
    if (json_is_string(j) && sscanf(json_string_value(j), "%u.%u%c", &major, &minor, &tail) == 2)
        gm_gpu_set(out, GM_M_COMPUTE_CAP, major * 10 + minor);
    j = json_object_get(g, "compute_mode");
    for (int k = 0; k < 4; k++)
        if (json_is_string(j) && strcmp(json_string_value(j), compute_modes[k]) == 0)
            gm_gpu_set(out, GM_M_COMPUTE_MODE, k);
    long long e = enum_value(GM_SMI_K_ADDRESSING, json_object_get(g, "addressing_mode"));
    if (e >= 0)
        gm_gpu_set(out, GM_M_ADDRESSING_MODE, (double)e);
    e = enum_value(GM_SMI_K_FABRIC_STATE, at(g, "fabric.state"));
    if (e >= 0)
        gm_gpu_set(out, GM_M_FABRIC_STATE, (double)e);
    if (iso_ms(at(g, "health.xid.last_time"), &v))
        gm_gpu_set(out, GM_M_XID_TIME_MS, v);
}

static void read_k8s(const json_t *o, gm_k8s_ref *r)
{
    text(r->pod, sizeof r->pod, json_object_get(o, "pod"));
    text(r->pod_namespace, sizeof r->pod_namespace, json_object_get(o, "namespace"));
    text(r->container, sizeof r->container, json_object_get(o, "container"));
}

static uint64_t mib_bytes(const json_t *j)
{
    return (uint64_t)json_integer_value(j) * GM_BYTES_PER_MIB;
}

static void read_mig(const json_t *g, gm_gpu *out)
{
    size_t i;
    const json_t *m;
    json_array_foreach(json_object_get(g, "mig_devices"), i, m)
    {
        if (out->mig_count == GM_MAX_MIG)
            break;
        gm_mig_device *d = &out->mig[out->mig_count++];
        text(d->uuid, sizeof d->uuid, json_object_get(m, "uuid"));
        text(d->profile, sizeof d->profile, json_object_get(m, "profile"));
        d->gpu_instance_id = (unsigned)json_integer_value(json_object_get(m, "gpu_instance_id"));
        d->compute_instance_id =
            (unsigned)json_integer_value(json_object_get(m, "compute_instance_id"));
        const json_t *mem = json_object_get(m, "memory");
        d->mem_valid = json_is_integer(json_object_get(mem, "total_mib"));
        if (d->mem_valid) {
            d->mem_total_bytes = mib_bytes(json_object_get(mem, "total_mib"));
            d->mem_used_bytes = mib_bytes(json_object_get(mem, "used_mib"));
            d->mem_free_bytes = mib_bytes(json_object_get(mem, "free_mib"));
        }
    }
}

static void read_process(const json_t *p, const gm_gpu *g, gm_snapshot *s)
{
    static const char *const util_names[GM_PROC_UTIL__COUNT] = {"sm", "memory", "encoder",
                                                                "decoder"};
    gm_process pr = {0};
    pr.gpu_index = g->index;
    pr.pid = (uint32_t)json_integer_value(json_object_get(p, "pid"));
    const char *type = json_string_value(json_object_get(p, "type"));
    pr.type = !type                                   ? GM_PROC_COMPUTE
              : strcmp(type, "compute+graphics") == 0 ? GM_PROC_COMPUTE | GM_PROC_GRAPHICS
              : strcmp(type, "graphics") == 0         ? GM_PROC_GRAPHICS
                                                      : GM_PROC_COMPUTE;
    const json_t *mem = json_object_get(p, "used_memory_bytes");
    pr.mem_valid = json_is_integer(mem) && json_integer_value(mem) >= 0;
    if (pr.mem_valid)
        pr.used_mem_bytes = (uint64_t)json_integer_value(mem);
    text(pr.user, sizeof pr.user, json_object_get(p, "user"));
    text(pr.command, sizeof pr.command, json_object_get(p, "command"));
    text(pr.pod_uid, sizeof pr.pod_uid, json_object_get(p, "pod_uid"));
    text(pr.container_id, sizeof pr.container_id, json_object_get(p, "container_id"));
    read_k8s(p, &pr.k8s);
    const json_t *util = json_object_get(p, "utilization");
    for (int k = 0; k < GM_PROC_UTIL__COUNT; k++) {
        const json_t *u = json_object_get(util, util_names[k]);
        if (json_is_integer(u) && json_integer_value(u) >= 0 && json_integer_value(u) <= 255) {
            pr.util_valid |= (uint8_t)(1u << k);
            pr.util_pct[k] = (uint8_t)json_integer_value(u);
        }
    }
    /* The MIG device by its UUID gives the instances the driver placed the process in. */
    const char *mig = json_string_value(json_object_get(p, "mig_device"));
    for (unsigned k = 0; mig && k < g->mig_count; k++)
        if (strcmp(g->mig[k].uuid, mig) == 0) {
            pr.instance_known = true;
            pr.gpu_instance_id = g->mig[k].gpu_instance_id;
            pr.compute_instance_id = g->mig[k].compute_instance_id;
        }
    gm_snapshot_add_process(s, &pr);
}

static int read_gpu(const json_t *g, gm_gpu *out, gm_error *err)
{
    const json_t *idx = json_object_get(g, "index");
    if (!json_is_object(g) || !json_is_integer(idx) || json_integer_value(idx) < 0)
        return gm_error_set(err, GM_EPARSE, "a GPU without its index");
    out->index = (unsigned)json_integer_value(idx);
    text(out->name, sizeof out->name, json_object_get(g, "name"));
    text(out->uuid, sizeof out->uuid, json_object_get(g, "uuid"));
    text(out->pci_bus_id, sizeof out->pci_bus_id, json_object_get(g, "pci_bus_id"));
    text(out->serial, sizeof out->serial, json_object_get(g, "serial"));
    text(out->vbios, sizeof out->vbios, json_object_get(g, "vbios_version"));
    static const char *const rom_keys[GM_INFOROM__COUNT] = {"image", "oem", "ecc", "pwr"};
    const json_t *rom = json_object_get(g, "inforom");
    for (int k = 0; k < GM_INFOROM__COUNT; k++)
        text(out->inforom[k], sizeof out->inforom[k], json_object_get(rom, rom_keys[k]));
    text(out->fabric_status, sizeof out->fabric_status, at(g, "fabric.status"));
    text(out->fabric_cluster_uuid, sizeof out->fabric_cluster_uuid, at(g, "fabric.cluster_uuid"));
    text(out->vendor, sizeof out->vendor, json_object_get(g, "vendor"));
    text(out->provider, sizeof out->provider, json_object_get(g, "provider"));
    out->lost = json_is_true(json_object_get(g, "lost"));
    read_k8s(g, &out->k8s);
    const json_t *kc = json_object_get(g, "k8s_containers");
    out->k8s_known = json_is_integer(kc);
    out->k8s_containers = out->k8s_known ? (unsigned)json_integer_value(kc) : 0;
    for (size_t i = 0; i < sizeof gpu_fields / sizeof *gpu_fields; i++)
        read_field(g, &gpu_fields[i], out);
    read_gpu_special(g, out);
    read_mig(g, out);
    return GM_OK;
}

static void host_num(gm_host *h, gm_host_metric m, const json_t *j)
{
    if (json_is_number(j) && isfinite(json_number_value(j)))
        gm_host_set(h, m, json_number_value(j));
}

static void read_host(const json_t *sys, gm_host *h)
{
    text(h->hostname, sizeof h->hostname, json_object_get(sys, "hostname"));
    text(h->kernel, sizeof h->kernel, json_object_get(sys, "kernel"));
    text(h->cpu_model, sizeof h->cpu_model, json_object_get(sys, "cpu_model"));
    host_num(h, GM_H_CPU_COUNT, json_object_get(sys, "cpu_count"));
    host_num(h, GM_H_CPU_UTIL_PCT, json_object_get(sys, "cpu_percent"));
    host_num(h, GM_H_MEM_TOTAL_BYTES, at(sys, "memory.total_bytes"));
    host_num(h, GM_H_MEM_USED_BYTES, at(sys, "memory.used_bytes"));
    host_num(h, GM_H_MEM_AVAILABLE_BYTES, at(sys, "memory.available_bytes"));
    host_num(h, GM_H_SWAP_TOTAL_BYTES, at(sys, "swap.total_bytes"));
    host_num(h, GM_H_SWAP_USED_BYTES, at(sys, "swap.used_bytes"));
    const json_t *load = json_object_get(sys, "load_average");
    host_num(h, GM_H_LOAD1, json_array_get(load, 0));
    host_num(h, GM_H_LOAD5, json_array_get(load, 1));
    host_num(h, GM_H_LOAD15, json_array_get(load, 2));
    host_num(h, GM_H_UPTIME_S, json_object_get(sys, "uptime_seconds"));
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(sys, "cpu_per_core"), i, c)
    {
        if (h->core_count == GM_MAX_CPUS)
            break;
        h->core_util_pct[h->core_count++] = json_is_number(c) ? (float)json_number_value(c) : NAN;
    }
}

int gm_json_read_snapshot(const json_t *doc, gm_snapshot *s, gm_error *err)
{
    gm_snapshot_reset(s);
    const json_t *gpus = json_object_get(doc, "gpus");
    if (!json_is_object(doc) || !json_is_array(gpus))
        return gm_error_set(err, GM_EPARSE, "not a snapshot: no \"gpus\" array");
    const json_t *t = json_object_get(doc, "timestamp_ms");
    s->time_ms = json_is_integer(t) ? (int64_t)json_integer_value(t) : 0;
    const json_t *seq = json_object_get(doc, "seq");
    s->seq =
        json_is_integer(seq) && json_integer_value(seq) > 0 ? (uint64_t)json_integer_value(seq) : 0;
    text(s->provider, sizeof s->provider, json_object_get(doc, "provider"));
    text(s->driver_version, sizeof s->driver_version, json_object_get(doc, "driver_version"));
    text(s->cuda_version, sizeof s->cuda_version, json_object_get(doc, "cuda_version"));
    text(s->nvml_version, sizeof s->nvml_version, json_object_get(doc, "nvml_version"));
    size_t i;
    const json_t *g;
    json_array_foreach(gpus, i, g)
    {
        if (s->gpu_count == GM_MAX_GPUS)
            break;
        gm_gpu *out = &s->gpus[s->gpu_count];
        int rc = read_gpu(g, out, err);
        if (rc < 0)
            return rc;
        s->gpu_count++;
        size_t k;
        const json_t *p;
        json_array_foreach(json_object_get(g, "processes"), k, p) read_process(p, out, s);
    }
    const json_t *dropped = json_object_get(doc, "processes_dropped");
    if (json_is_integer(dropped) && json_integer_value(dropped) > 0)
        s->proc_dropped += (size_t)json_integer_value(dropped);
    const json_t *sys = json_object_get(doc, "system");
    s->host_valid = json_is_object(sys);
    if (s->host_valid)
        read_host(sys, &s->host);
    else
        text(s->host.hostname, sizeof s->host.hostname, json_object_get(doc, "hostname"));
    return GM_OK;
}
