/* json.c - the JSON form of the sample model; absent metrics become null, never 0. */
#include "base/json.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/smi_format.h"
#include "base/utf8.h"

/* Integral values as JSON integers, so clients see 45, not 45.0; the rest as reals. */
static json_t *integer_or_real(double v)
{
    if (v == floor(v) && fabs(v) < 9007199254740992.0)
        return json_integer((json_int_t)v);
    return json_real(v);
}

/* A metric in its display unit, or null when absent. */
static json_t *metric(const gm_gpu *g, gm_metric m)
{
    if (!gm_gpu_has(g, m))
        return json_null();
    return integer_or_real(g->v[m] * gm_metric_get(m)->scale);
}

static json_t *raw_integer(const gm_gpu *g, gm_metric m)
{
    /* Converting a double outside int64_t is undefined: no real reading is that large (nvidia-smi
     * can print 1e14 MiB, 2^66 bytes), so it is null, as for a value not reported. */
    if (!gm_gpu_has(g, m) || !(fabs(g->v[m]) < 9.2e18))
        return json_null();
    return json_integer((json_int_t)g->v[m]);
}

/* Text read from a driver, nvidia-smi or /proc, null when empty. Bytes that are not UTF-8 (a
 * Latin-1 command line, a garbled name) are repaired: json_string would refuse them and take
 * the whole GPU, process or snapshot with it. */
static json_t *string_or_null(const char *s)
{
    return s && *s ? gm_json_text(s, strlen(s)) : json_null();
}

static json_t *host_metric(const gm_host *h, gm_host_metric m)
{
    if (!gm_host_has(h, m))
        return json_null();
    return integer_or_real(h->v[m]);
}

static double round2(double v)
{
    return round(v * 100.0) / 100.0;
}

void gm_json_time(int64_t time_ms, char *buf, size_t len)
{
    time_t sec = (time_t)(time_ms / 1000);
    struct tm tm;
    gmtime_r(&sec, &tm);
    char base[24];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, len, "%s.%03dZ", base, (int)(time_ms % 1000));
}

/* Adds key: value to o, taking the reference (jansson's _new convention). */
static void put(json_t *o, const char *key, json_t *v);

/* "pod", "namespace", "container" of a Kubernetes reference, null when unknown. */
static void put_k8s(json_t *o, const gm_k8s_ref *r)
{
    put(o, "pod", gm_json_text(r->pod, sizeof r->pod));
    put(o, "namespace", gm_json_text(r->pod_namespace, sizeof r->pod_namespace));
    put(o, "container", gm_json_text(r->container, sizeof r->container));
}

/* A process's share of each engine, each null when the driver gave none. */
static json_t *process_util_json(const gm_process *p)
{
    static const char *const names[GM_PROC_UTIL__COUNT] = {"sm", "memory", "encoder", "decoder"};
    json_t *o = json_object();
    for (int k = 0; k < GM_PROC_UTIL__COUNT; k++)
        put(o, names[k], (p->util_valid >> k) & 1u ? json_integer(p->util_pct[k]) : json_null());
    return o;
}

/* g: the process's GPU (NULL when not in the snapshot), for the MIG device it runs in. */
static json_t *process_json(const gm_process *p, const gm_gpu *g)
{
    const char *type = p->type == (GM_PROC_COMPUTE | GM_PROC_GRAPHICS) ? "compute+graphics"
                       : p->type == GM_PROC_GRAPHICS                   ? "graphics"
                                                                       : "compute";
    /* A JSON integer here is an int64_t: a figure past it (nvidia-smi can print one) would turn
     * negative, so it is null, as unknown. */
    json_t *mem_b = p->mem_valid && p->used_mem_bytes <= INT64_MAX
                        ? json_integer((json_int_t)p->used_mem_bytes)
                        : json_null();
    json_t *mem_mib = p->mem_valid
                          ? json_integer((json_int_t)(p->used_mem_bytes / GM_BYTES_PER_MIB))
                          : json_null();
    json_t *j =
        json_pack("{s:I, s:I, s:s, s:o, s:o, s:o, s:o}", "gpu", (json_int_t)p->gpu_index, "pid",
                  (json_int_t)p->pid, "type", type, "used_memory_mib", mem_mib, "used_memory_bytes",
                  mem_b, "user", string_or_null(p->user), "command", string_or_null(p->command));
    if (j) {
        put_k8s(j, &p->k8s);
        put(j, "pod_uid", gm_json_text(p->pod_uid, sizeof p->pod_uid));
        put(j, "container_id", gm_json_text(p->container_id, sizeof p->container_id));
        put(j, "utilization", process_util_json(p));
        const gm_mig_device *m = gm_gpu_process_mig(g, p);
        put(j, "mig_device", m ? string_or_null(m->uuid) : json_null());
    }
    return j;
}

static json_t *mib_or_null(bool valid, uint64_t bytes)
{
    return valid ? json_integer((json_int_t)(bytes / GM_BYTES_PER_MIB)) : json_null();
}

/* The MIG devices of a GPU in MIG mode. */
static json_t *mig_json(const gm_gpu *g)
{
    json_t *a = json_array();
    for (unsigned k = 0; k < g->mig_count && k < GM_MAX_MIG; k++) {
        const gm_mig_device *m = &g->mig[k];
        /* GPM per GPU instance, named as the GPU's own profiling readings. */
        json_t *u = json_object();
        static const char *const keys[GM_MIG_PROF__COUNT] = {
            [GM_MIG_PROF_SM_ACTIVE] = "sm_active_percent",
            [GM_MIG_PROF_DRAM] = "dram_active_percent",
            [GM_MIG_PROF_TENSOR] = "tensor_active_percent",
        };
        for (int i = 0; i < GM_MIG_PROF__COUNT; i++)
            put(u, keys[i],
                (m->prof_valid >> i) & 1u ? integer_or_real(m->prof_pct[i]) : json_null());
        json_array_append_new(
            a, json_pack("{s:o, s:o, s:I, s:I, s:{s:o, s:o, s:o}, s:o}", "uuid",
                         gm_json_text(m->uuid, sizeof m->uuid), "profile",
                         gm_json_text(m->profile, sizeof m->profile), "gpu_instance_id",
                         (json_int_t)m->gpu_instance_id, "compute_instance_id",
                         (json_int_t)m->compute_instance_id, "memory", "used_mib",
                         mib_or_null(m->mem_valid, m->mem_used_bytes), "total_mib",
                         mib_or_null(m->mem_valid, m->mem_total_bytes), "free_mib",
                         mib_or_null(m->mem_valid, m->mem_free_bytes), "utilization", u));
    }
    return a;
}

static json_t *throttle_json(const gm_gpu *g)
{
    if (!gm_gpu_has(g, GM_M_THROTTLE_REASONS))
        return json_null();
    /* nvidia-smi may print any 64-bit mask; as a double all ones is 2^64, which a cast would
     * not survive (undefined). */
    double v = g->v[GM_M_THROTTLE_REASONS];
    uint64_t mask = v >= 18446744073709551615.0 ? UINT64_MAX : v > 0 ? (uint64_t)v : 0;
    char hex[24];
    snprintf(hex, sizeof hex, "0x%016llx", (unsigned long long)mask);
    json_t *active = json_array();
    for (unsigned i = 0; i < GM_CLOCK_REASON_COUNT; i++)
        if (mask & (UINT64_C(1) << i))
            json_array_append_new(active, json_string(gm_clock_reason_name(i)));
    /* Each reason the GPU reports, as a boolean (all nine when it does not say which). */
    json_t *reasons = json_object();
    uint64_t sup = gm_gpu_has(g, GM_M_THROTTLE_SUPPORTED) ? (uint64_t)g->v[GM_M_THROTTLE_SUPPORTED]
                                                          : UINT64_MAX;
    for (unsigned i = 0; i < GM_CLOCK_REASON_COUNT; i++)
        if (sup >> i & 1)
            json_object_set_new(reasons, gm_clock_reason_name(i), json_boolean(mask >> i & 1));
    json_t *supported = json_null();
    if (gm_gpu_has(g, GM_M_THROTTLE_SUPPORTED)) {
        char shex[24];
        snprintf(shex, sizeof shex, "0x%016llx", (unsigned long long)sup);
        supported = json_string(shex);
    }
    return json_pack("{s:s, s:o, s:o, s:o}", "mask", hex, "active", active, "reasons", reasons,
                     "supported_mask", supported);
}

static json_t *flag(const gm_gpu *g, gm_metric m)
{
    return gm_gpu_has(g, m) ? json_boolean(g->v[m] != 0) : json_null();
}

/* Adds key: value to o, taking the reference (jansson's _new convention). */
static void put(json_t *o, const char *key, json_t *v)
{
    json_object_set_new(o, key, v ? v : json_null());
}

/* The last XID error; null when the GPU reports none. */
static json_t *xid_json(const gm_gpu *g)
{
    if (!gm_gpu_has(g, GM_M_XID_LAST))
        return json_null();
    json_t *xid = json_object();
    put(xid, "last", raw_integer(g, GM_M_XID_LAST));
    put(xid, "count", raw_integer(g, GM_M_XID_COUNT));
    json_t *when = json_null();
    if (gm_gpu_has(g, GM_M_XID_TIME_MS)) {
        char ts[40];
        gm_json_time((int64_t)g->v[GM_M_XID_TIME_MS], ts, sizeof ts);
        when = json_string(ts);
    }
    put(xid, "last_time", when);
    return xid;
}

/* ECC counts by memory location, for the locations the GPU reports. */
static json_t *ecc_locations_json(const gm_gpu *g)
{
    json_t *locs = json_object();
#define JSON_ECC_LOC(X, id, name, loc)                                                        \
    if (gm_gpu_has(g, GM_M_ECC_CORR_VOL_##id) || gm_gpu_has(g, GM_M_ECC_CORR_AGG_##id) ||     \
        gm_gpu_has(g, GM_M_ECC_UNCORR_VOL_##id) || gm_gpu_has(g, GM_M_ECC_UNCORR_AGG_##id)) { \
        json_t *l = json_object();                                                            \
        put(l, "corrected_volatile", raw_integer(g, GM_M_ECC_CORR_VOL_##id));                 \
        put(l, "corrected_aggregate", raw_integer(g, GM_M_ECC_CORR_AGG_##id));                \
        put(l, "uncorrected_volatile", raw_integer(g, GM_M_ECC_UNCORR_VOL_##id));             \
        put(l, "uncorrected_aggregate", raw_integer(g, GM_M_ECC_UNCORR_AGG_##id));            \
        put(locs, name, l);                                                                   \
    }
    GM_ECC_LOCATION_MAP(JSON_ECC_LOC, _)
#undef JSON_ECC_LOC
    return locs;
}

/* SRAM errors; null when the GPU reports none. */
static json_t *sram_json(const gm_gpu *g)
{
    if (!gm_gpu_has(g, GM_M_SRAM_UNCORR_VOL_PARITY))
        return json_null();
    json_t *sram = json_object();
    put(sram, "uncorrected_volatile_parity", raw_integer(g, GM_M_SRAM_UNCORR_VOL_PARITY));
    put(sram, "uncorrected_volatile_secded", raw_integer(g, GM_M_SRAM_UNCORR_VOL_SECDED));
    put(sram, "uncorrected_aggregate_parity", raw_integer(g, GM_M_SRAM_UNCORR_AGG_PARITY));
    put(sram, "uncorrected_aggregate_secded", raw_integer(g, GM_M_SRAM_UNCORR_AGG_SECDED));
    put(sram, "threshold_exceeded", flag(g, GM_M_SRAM_THRESHOLD_EXCEEDED));
    json_t *unit = json_object();
    put(unit, "l2", raw_integer(g, GM_M_SRAM_UNCORR_AGG_L2));
    put(unit, "sm", raw_integer(g, GM_M_SRAM_UNCORR_AGG_SM));
    put(unit, "mcu", raw_integer(g, GM_M_SRAM_UNCORR_AGG_MCU));
    put(unit, "pcie", raw_integer(g, GM_M_SRAM_UNCORR_AGG_PCIE));
    put(unit, "other", raw_integer(g, GM_M_SRAM_UNCORR_AGG_OTHER));
    put(sram, "uncorrected_aggregate_by_unit", unit);
    return sram;
}

static json_t *ecc_json(const gm_gpu *g)
{
    json_t *ecc = json_object();
    json_t *mode = json_object();
    put(mode, "current", flag(g, GM_M_ECC_MODE_CUR));
    put(mode, "pending", flag(g, GM_M_ECC_MODE_PENDING));
    put(ecc, "mode", mode);
    put(ecc, "corrected_volatile", raw_integer(g, GM_M_ECC_CORR_VOL));
    put(ecc, "corrected_aggregate", raw_integer(g, GM_M_ECC_CORR_AGG));
    put(ecc, "uncorrected_volatile", raw_integer(g, GM_M_ECC_UNCORR_VOL));
    put(ecc, "uncorrected_aggregate", raw_integer(g, GM_M_ECC_UNCORR_AGG));
    put(ecc, "locations", ecc_locations_json(g));
    put(ecc, "sram", sram_json(g));
    return ecc;
}

static json_t *retired_pages_json(const gm_gpu *g)
{
    json_t *rp = json_object();
    put(rp, "single_bit", raw_integer(g, GM_M_RETIRED_SBE));
    put(rp, "double_bit", raw_integer(g, GM_M_RETIRED_DBE));
    put(rp, "pending", flag(g, GM_M_RETIRED_PENDING));
    return rp;
}

static json_t *remapped_rows_json(const gm_gpu *g)
{
    json_t *rr = json_object();
    put(rr, "correctable", raw_integer(g, GM_M_REMAP_CORR));
    put(rr, "uncorrectable", raw_integer(g, GM_M_REMAP_UNCORR));
    put(rr, "pending", flag(g, GM_M_REMAP_PENDING));
    put(rr, "failure", flag(g, GM_M_REMAP_FAILURE));
    json_t *hist = json_null();
    if (gm_gpu_has(g, GM_M_REMAP_HIST_MAX)) {
        hist = json_object();
        put(hist, "max", raw_integer(g, GM_M_REMAP_HIST_MAX));
        put(hist, "high", raw_integer(g, GM_M_REMAP_HIST_HIGH));
        put(hist, "partial", raw_integer(g, GM_M_REMAP_HIST_PARTIAL));
        put(hist, "low", raw_integer(g, GM_M_REMAP_HIST_LOW));
        put(hist, "none", raw_integer(g, GM_M_REMAP_HIST_NONE));
    }
    put(rr, "histogram", hist);
    return rr;
}

static json_t *violations_json(const gm_gpu *g)
{
    json_t *viol = json_object();
    put(viol, "power", metric(g, GM_M_VIOL_POWER_NS));
    put(viol, "thermal", metric(g, GM_M_VIOL_THERMAL_NS));
    put(viol, "sync_boost", metric(g, GM_M_VIOL_SYNC_BOOST_NS));
    put(viol, "sw_thermal_slowdown", metric(g, GM_M_VIOL_SW_THERMAL_NS));
    put(viol, "hw_thermal_slowdown", metric(g, GM_M_VIOL_HW_THERMAL_NS));
    put(viol, "hw_power_brake_slowdown", metric(g, GM_M_VIOL_HW_POWER_BRAKE_NS));
    return viol;
}

static json_t *nvlink_json(const gm_gpu *g)
{
    json_t *nvl = json_object();
    put(nvl, "links_active", raw_integer(g, GM_M_NVLINK_ACTIVE));
    put(nvl, "tx_bytes",
        gm_gpu_has(g, GM_M_NVLINK_TX_KIB) ? gm_json_number(g->v[GM_M_NVLINK_TX_KIB] * 1024.0)
                                          : json_null());
    put(nvl, "rx_bytes",
        gm_gpu_has(g, GM_M_NVLINK_RX_KIB) ? gm_json_number(g->v[GM_M_NVLINK_RX_KIB] * 1024.0)
                                          : json_null());
    put(nvl, "crc_flit_errors", raw_integer(g, GM_M_NVLINK_CRC_FLIT));
    put(nvl, "crc_data_errors", raw_integer(g, GM_M_NVLINK_CRC_DATA));
    put(nvl, "replay_errors", raw_integer(g, GM_M_NVLINK_REPLAY));
    put(nvl, "recovery_errors", raw_integer(g, GM_M_NVLINK_RECOVERY));
    return nvl;
}

/* The health block: XID, ECC, retired pages, remapped rows, violations, NVLink, and the verdict
 * of gm_gpu_degraded at the sample's time. */
static json_t *health_json(const gm_snapshot *s, const gm_gpu *g)
{
    json_t *h = json_object();
    put(h, "xid", xid_json(g));
    put(h, "ecc", ecc_json(g));
    put(h, "retired_pages", retired_pages_json(g));
    put(h, "remapped_rows", remapped_rows_json(g));
    put(h, "pcie_replay_counter", raw_integer(g, GM_M_PCIE_REPLAY));
    /* nvmlDeviceGpuRecoveryAction_t: 0 none, 1 GPU reset, 2 node reboot, 3 drain P2P, 4 drain
     * and reset, 5 recover the IMEX domain. */
    put(h, "recovery_action", raw_integer(g, GM_M_RECOVERY_ACTION));
    put(h, "violations_us", violations_json(g));
    put(h, "nvlink", nvlink_json(g));

    char why[256];
    bool bad = gm_gpu_degraded(g, s->time_ms, why, sizeof why);
    put(h, "degraded", json_boolean(bad));
    put(h, "reasons", bad ? json_string(why) : json_null());
    return h;
}

static json_t *profiling_json(const gm_gpu *g)
{
    json_t *p = json_object();
    put(p, "gr_engine_active_percent", metric(g, GM_M_PROF_GR_ACTIVE_PCT));
    put(p, "sm_active_percent", metric(g, GM_M_PROF_SM_ACTIVE_PCT));
    put(p, "sm_occupancy_percent", metric(g, GM_M_PROF_SM_OCCUPANCY_PCT));
    put(p, "tensor_active_percent", metric(g, GM_M_PROF_TENSOR_PCT));
    put(p, "dram_active_percent", metric(g, GM_M_PROF_DRAM_PCT));
    put(p, "fp64_active_percent", metric(g, GM_M_PROF_FP64_PCT));
    put(p, "fp32_active_percent", metric(g, GM_M_PROF_FP32_PCT));
    put(p, "fp16_active_percent", metric(g, GM_M_PROF_FP16_PCT));
    put(p, "pcie_tx_bytes_per_second", metric(g, GM_M_PROF_PCIE_TX_BPS));
    put(p, "pcie_rx_bytes_per_second", metric(g, GM_M_PROF_PCIE_RX_BPS));
    put(p, "nvlink_tx_bytes_per_second", metric(g, GM_M_PROF_NVLINK_TX_BPS));
    put(p, "nvlink_rx_bytes_per_second", metric(g, GM_M_PROF_NVLINK_RX_BPS));
    return p;
}

/* nvidia-smi's word for an enumerated reading (base/smi_format.c holds the one table); null
 * when absent or a value without a word. */
static json_t *enum_word(const gm_gpu *g, gm_metric m, gm_smi_kind kind)
{
    double v = gm_gpu_has(g, m) ? g->v[m] : NAN;
    /* Only small whole values name a word; anything else (never cast out of range) has none. */
    const char *w = v >= 0 && v < 64 ? gm_smi_enum_word(kind, (long long)v) : NULL;
    return w ? json_string(w) : json_null();
}

/* The fields nvidia-smi -q shows beside the counters that are not health: power limits and
 * readings, identity, modes. */
static void add_details(json_t *j, const gm_gpu *g)
{
    put(j, "serial", string_or_null(g->serial));
    put(j, "vbios_version", string_or_null(g->vbios));
    json_t *cc = json_null();
    if (gm_gpu_has(g, GM_M_COMPUTE_CAP)) {
        char v[16];
        int c = (int)g->v[GM_M_COMPUTE_CAP];
        snprintf(v, sizeof v, "%d.%d", c / 10, c % 10);
        cc = json_string(v);
    }
    put(j, "compute_capability", cc);
    put(j, "compute_mode", enum_word(g, GM_M_COMPUTE_MODE, GM_SMI_K_COMPUTE_MODE));
    json_t *mig = json_object();
    put(mig, "current", flag(g, GM_M_MIG_MODE_CUR));
    put(mig, "pending", flag(g, GM_M_MIG_MODE_PENDING));
    put(j, "mig_mode", mig);
    put(j, "temperature_memory_c", metric(g, GM_M_TEMP_MEM_C));
    put(j, "temperature_tlimit_c", raw_integer(g, GM_M_TEMP_TLIMIT_C));
    put(j, "temperature_slowdown_c", metric(g, GM_M_TEMP_SLOWDOWN_C));
    json_t *rom = json_object();
    static const char *const rom_keys[GM_INFOROM__COUNT] = {"image", "oem", "ecc", "pwr"};
    for (int k = 0; k < GM_INFOROM__COUNT; k++)
        put(rom, rom_keys[k], string_or_null(g->inforom[k]));
    put(j, "inforom", rom);
    json_t *acct = json_object();
    put(acct, "mode", flag(g, GM_M_ACCOUNTING_MODE));
    put(acct, "buffer_size", raw_integer(g, GM_M_ACCOUNTING_BUFFER));
    put(j, "accounting", acct);
    json_t *gsp = json_object();
    put(gsp, "current", flag(g, GM_M_GSP_MODE_CUR));
    put(gsp, "default", flag(g, GM_M_GSP_MODE_DEFAULT));
    put(j, "gsp_firmware_mode", gsp);
    json_t *display = json_object();
    put(display, "attached", flag(g, GM_M_DISPLAY_ATTACHED));
    put(display, "active", flag(g, GM_M_DISPLAY_ACTIVE));
    put(j, "display", display);
    put(j, "addressing_mode", enum_word(g, GM_M_ADDRESSING_MODE, GM_SMI_K_ADDRESSING));
    put(j, "c2c_mode", flag(g, GM_M_C2C_MODE));
    put(j, "edpp_multiplier_percent", metric(g, GM_M_EDPP_MULTIPLIER_PCT));
    json_t *prot = json_object();
    put(prot, "total_mib", metric(g, GM_M_PROT_MEM_TOTAL_BYTES));
    put(prot, "used_mib", metric(g, GM_M_PROT_MEM_USED_BYTES));
    put(prot, "free_mib", metric(g, GM_M_PROT_MEM_FREE_BYTES));
    put(j, "protected_memory", prot);
    /* The BAR1 aperture (nvmlDeviceGetBAR1MemoryInfo), MiB as nvidia-smi and DCGM give it. */
    json_t *bar1 = json_object();
    put(bar1, "total_mib", metric(g, GM_M_BAR1_TOTAL_BYTES));
    put(bar1, "used_mib", metric(g, GM_M_BAR1_USED_BYTES));
    put(bar1, "free_mib", metric(g, GM_M_BAR1_FREE_BYTES));
    put(j, "bar1", bar1);
    json_t *fabric = json_object();
    put(fabric, "state", enum_word(g, GM_M_FABRIC_STATE, GM_SMI_K_FABRIC_STATE));
    put(fabric, "status", string_or_null(g->fabric_status));
    put(fabric, "clique_id", raw_integer(g, GM_M_FABRIC_CLIQUE_ID));
    put(fabric, "cluster_uuid", string_or_null(g->fabric_cluster_uuid));
    put(j, "fabric", fabric);

    json_t *power = json_object_get(j, "power");
    if (power) {
        put(power, "draw_average_w", metric(g, GM_M_POWER_AVG_MW));
        put(power, "draw_instant_w", metric(g, GM_M_POWER_INSTANT_MW));
        put(power, "requested_limit_w", metric(g, GM_M_POWER_REQ_LIMIT_MW));
        put(power, "default_limit_w", metric(g, GM_M_POWER_DEFAULT_LIMIT_MW));
        put(power, "min_limit_w", metric(g, GM_M_POWER_MIN_LIMIT_MW));
        put(power, "max_limit_w", metric(g, GM_M_POWER_MAX_LIMIT_MW));
    }
    json_t *util = json_object_get(j, "utilization");
    if (util) {
        put(util, "jpeg", metric(g, GM_M_UTIL_JPEG_PCT));
        put(util, "ofa", metric(g, GM_M_UTIL_OFA_PCT));
    }
    json_t *clocks = json_object_get(j, "clocks");
    if (clocks)
        put(clocks, "video_mhz", metric(g, GM_M_CLOCK_VIDEO_MHZ));
    json_t *pcie = json_object_get(j, "pcie");
    if (pcie) {
        put(pcie, "gen_gpu_max", metric(g, GM_M_PCIE_GEN_GPU_MAX));
        put(pcie, "base_class", raw_integer(g, GM_M_PCI_BASE_CLASS));
        put(pcie, "sub_class", raw_integer(g, GM_M_PCI_SUB_CLASS));
    }
    json_t *enc = json_object();
    put(enc, "sessions", raw_integer(g, GM_M_ENC_SESSIONS));
    put(enc, "average_fps", raw_integer(g, GM_M_ENC_FPS));
    put(enc, "average_latency_us", raw_integer(g, GM_M_ENC_LATENCY_US));
    put(j, "encoder_stats", enc);
}

json_t *gm_json_gpu(const gm_snapshot *s, const gm_gpu *g)
{
    json_t *used_pct = json_null();
    if (gm_gpu_has(g, GM_M_MEM_USED_BYTES) && gm_gpu_has(g, GM_M_MEM_TOTAL_BYTES) &&
        g->v[GM_M_MEM_TOTAL_BYTES] > 0)
        used_pct =
            json_real(round2(100.0 * g->v[GM_M_MEM_USED_BYTES] / g->v[GM_M_MEM_TOTAL_BYTES]));

    json_t *pstate = json_null();
    if (gm_gpu_has(g, GM_M_PSTATE)) {
        char ps[8];
        snprintf(ps, sizeof ps, "P%d", (int)g->v[GM_M_PSTATE]);
        pstate = json_string(ps);
    }
    json_t *persist = gm_gpu_has(g, GM_M_PERSISTENCE_MODE)
                          ? json_boolean(g->v[GM_M_PERSISTENCE_MODE] != 0)
                          : json_null();

    json_t *procs = json_array();
    for (size_t i = 0; i < s->proc_count; i++)
        if (s->procs[i].gpu_index == g->index)
            json_array_append_new(procs, process_json(&s->procs[i], g));

    json_t *j = json_pack(
        "{s:I, s:o, s:o, s:o, s:b,"
        " s:{s:o, s:o, s:o, s:o},"
        " s:{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o},"
        " s:o, s:{s:o, s:o}, s:o,"
        " s:{s:o, s:o, s:o, s:o, s:o, s:o},"
        " s:o,"
        " s:{s:o, s:o, s:o, s:o, s:o, s:o},"
        " s:o, s:o, s:o, s:o}",
        "index", (json_int_t)g->index, "name",
        g->name[0] ? string_or_null(g->name) : json_string(""), "uuid", string_or_null(g->uuid),
        "pci_bus_id", string_or_null(g->pci_bus_id), "lost", g->lost,
        /* utilization */
        "utilization", "gpu", metric(g, GM_M_UTIL_GPU_PCT), "memory", metric(g, GM_M_UTIL_MEM_PCT),
        "encoder", metric(g, GM_M_UTIL_ENC_PCT), "decoder", metric(g, GM_M_UTIL_DEC_PCT),
        /* memory */
        "memory", "total_mib", metric(g, GM_M_MEM_TOTAL_BYTES), "used_mib",
        metric(g, GM_M_MEM_USED_BYTES), "free_mib", metric(g, GM_M_MEM_FREE_BYTES), "reserved_mib",
        metric(g, GM_M_MEM_RESERVED_BYTES), "used_percent", used_pct, "total_bytes",
        raw_integer(g, GM_M_MEM_TOTAL_BYTES), "used_bytes", raw_integer(g, GM_M_MEM_USED_BYTES),
        "free_bytes", raw_integer(g, GM_M_MEM_FREE_BYTES), "reserved_bytes",
        raw_integer(g, GM_M_MEM_RESERVED_BYTES),
        /* thermal, power, energy */
        "temperature_c", metric(g, GM_M_TEMP_C), "power", "draw_w", metric(g, GM_M_POWER_MW),
        "limit_w", metric(g, GM_M_POWER_LIMIT_MW), "energy_j", metric(g, GM_M_ENERGY_MJ),
        /* clocks */
        "clocks", "graphics_mhz", metric(g, GM_M_CLOCK_GR_MHZ), "sm_mhz",
        metric(g, GM_M_CLOCK_SM_MHZ), "memory_mhz", metric(g, GM_M_CLOCK_MEM_MHZ),
        "max_graphics_mhz", metric(g, GM_M_CLOCK_MAX_GR_MHZ), "max_sm_mhz",
        metric(g, GM_M_CLOCK_MAX_SM_MHZ), "max_memory_mhz", metric(g, GM_M_CLOCK_MAX_MEM_MHZ),
        "fan_percent", metric(g, GM_M_FAN_PCT),
        /* pcie */
        "pcie", "gen_current", metric(g, GM_M_PCIE_GEN_CUR), "gen_max",
        metric(g, GM_M_PCIE_GEN_MAX), "width_current", metric(g, GM_M_PCIE_WIDTH_CUR), "width_max",
        metric(g, GM_M_PCIE_WIDTH_MAX), "tx_kbps", metric(g, GM_M_PCIE_TX_KBPS), "rx_kbps",
        metric(g, GM_M_PCIE_RX_KBPS),
        /* state */
        "pstate", pstate, "throttle_reasons", throttle_json(g), "persistence_mode", persist,
        "processes", procs);
    if (j) {
        put(j, "vendor", string_or_null(g->vendor));
        put(j, "provider", string_or_null(g->provider));
        put(j, "temperature_junction_c", metric(g, GM_M_TEMP_JUNCTION_C));
        add_details(j, g);
        put(j, "health", health_json(s, g));
        put(j, "profiling", profiling_json(g));
        if (gm_gpu_has(g, GM_M_MIG_MODE_CUR) && g->v[GM_M_MIG_MODE_CUR] == 1)
            put(j, "mig_devices", mig_json(g));
        put_k8s(j, &g->k8s);
        put(j, "k8s_containers",
            g->k8s_known ? json_integer((json_int_t)g->k8s_containers) : json_null());
    }
    return j;
}

json_t *gm_json_host(const gm_host *h)
{
    json_t *cores = json_array();
    for (unsigned i = 0; i < h->core_count; i++)
        json_array_append_new(cores, isfinite(h->core_util_pct[i])
                                         ? json_real(round2(h->core_util_pct[i]))
                                         : json_null());
    json_t *mem_pct = json_null();
    if (gm_host_has(h, GM_H_MEM_USED_BYTES) && gm_host_has(h, GM_H_MEM_TOTAL_BYTES) &&
        h->v[GM_H_MEM_TOTAL_BYTES] > 0)
        mem_pct = json_real(round2(100.0 * h->v[GM_H_MEM_USED_BYTES] / h->v[GM_H_MEM_TOTAL_BYTES]));
    json_t *cpu = gm_host_has(h, GM_H_CPU_UTIL_PCT) ? json_real(round2(h->v[GM_H_CPU_UTIL_PCT]))
                                                    : json_null();
    json_t *load = json_null();
    if (gm_host_has(h, GM_H_LOAD1))
        load = json_pack("[o, o, o]", host_metric(h, GM_H_LOAD1), host_metric(h, GM_H_LOAD5),
                         host_metric(h, GM_H_LOAD15));
    return json_pack(
        "{s:o, s:o, s:o, s:o, s:o, s:o,"
        " s:{s:o, s:o, s:o, s:o}, s:{s:o, s:o}, s:o, s:o}",
        "hostname", string_or_null(h->hostname), "kernel", string_or_null(h->kernel), "cpu_model",
        string_or_null(h->cpu_model), "cpu_count", host_metric(h, GM_H_CPU_COUNT), "cpu_percent",
        cpu, "cpu_per_core", cores, "memory", "total_bytes", host_metric(h, GM_H_MEM_TOTAL_BYTES),
        "used_bytes", host_metric(h, GM_H_MEM_USED_BYTES), "available_bytes",
        host_metric(h, GM_H_MEM_AVAILABLE_BYTES), "used_percent", mem_pct, "swap", "total_bytes",
        host_metric(h, GM_H_SWAP_TOTAL_BYTES), "used_bytes", host_metric(h, GM_H_SWAP_USED_BYTES),
        "load_average", load, "uptime_seconds", host_metric(h, GM_H_UPTIME_S));
}

json_t *gm_json_processes(const gm_snapshot *s)
{
    json_t *a = json_array();
    for (size_t i = 0; i < s->proc_count; i++)
        json_array_append_new(
            a, process_json(&s->procs[i], gm_snapshot_gpu(s, s->procs[i].gpu_index)));
    return a;
}

json_t *gm_json_snapshot(const gm_snapshot *s)
{
    char ts[32];
    gm_json_time(s->time_ms, ts, sizeof ts);
    json_t *gpus = json_array();
    for (unsigned i = 0; i < s->gpu_count; i++)
        json_array_append_new(gpus, gm_json_gpu(s, &s->gpus[i]));
    return json_pack("{s:s, s:I, s:I, s:o, s:s, s:o, s:o, s:o, s:I, s:o, s:I, s:o}", "timestamp",
                     ts, "timestamp_ms", (json_int_t)s->time_ms, "seq", (json_int_t)s->seq,
                     "hostname", string_or_null(s->host.hostname), "provider", s->provider,
                     "driver_version", string_or_null(s->driver_version), "cuda_version",
                     string_or_null(s->cuda_version), "nvml_version",
                     string_or_null(s->nvml_version), "gpu_count", (json_int_t)s->gpu_count, "gpus",
                     gpus, "processes_dropped", (json_int_t)s->proc_dropped, "system",
                     s->host_valid ? gm_json_host(&s->host) : json_null());
}

char *gm_json_dump(const json_t *j, size_t *len)
{
    /* 12 significant digits keep energy counters in joules exact to the millijoule. */
    char *out = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(12));
    if (out && len)
        *len = strlen(out);
    return out;
}

json_t *gm_json_number(double v)
{
    return isfinite(v) ? integer_or_real(v) : json_null();
}

json_t *gm_json_strn(const char *s, size_t n)
{
    if (gm_utf8_valid(s, n))
        return json_stringn(s, n);
    /* Each byte that is not UTF-8 becomes the 3 bytes of U+FFFD. */
    if (n > (SIZE_MAX - 1) / 3)
        return NULL;
    char *clean = malloc(3 * n + 1);
    if (!clean)
        return NULL;
    size_t o = gm_utf8_repair(clean, 3 * n + 1, s, n);
    json_t *j = json_stringn(clean, o);
    free(clean);
    return j;
}

json_t *gm_json_str(const char *s)
{
    return gm_json_strn(s, strlen(s));
}

json_t *gm_json_text(const char *s, size_t max)
{
    size_t n = strnlen(s, max);
    return n ? gm_json_strn(s, n) : json_null();
}

json_t *gm_json_host_number(const gm_snapshot *s, gm_host_metric m)
{
    return s->host_valid && gm_host_has(&s->host, m) ? gm_json_number(s->host.v[m]) : json_null();
}

json_t *gm_json_pcie_gbps(const gm_gpu *g, gm_metric gen, gm_metric width)
{
    if (g->lost || !gm_gpu_has(g, gen) || !gm_gpu_has(g, width) || !(g->v[gen] >= 0) ||
        !(g->v[width] >= 0))
        return json_null();
    double bw = gm_pcie_gbps((unsigned)g->v[gen], (unsigned)g->v[width]);
    return bw >= 0 ? gm_json_number(bw) : json_null();
}

static const char *const p2p_cap_names[GM_P2P__COUNT] = {[GM_P2P_READ] = "read",
                                                         [GM_P2P_WRITE] = "write",
                                                         [GM_P2P_NVLINK] = "nvlink",
                                                         [GM_P2P_ATOMICS] = "atomics",
                                                         [GM_P2P_PCI] = "pci"};

const char *gm_json_p2p_cap_name(gm_p2p_cap c)
{
    return (unsigned)c < GM_P2P__COUNT ? p2p_cap_names[c] : NULL;
}

json_t *gm_json_p2p(const gm_snapshot *s, const gm_topology *t)
{
    if (!t || !t->known)
        return json_null();
    unsigned n = t->gpu_count < GM_MAX_GPUS ? t->gpu_count : GM_MAX_GPUS;
    json_t *o = json_object();
    if (!o)
        return NULL;
    /* The setters and appenders take their value even when they fail (jansson's _new
     * convention), so one decref of the root frees everything built so far. */
    json_t *rows = json_array();
    if (json_object_set_new(o, "gpus", rows) != 0)
        goto err;
    for (unsigned i = 0; i < n; i++)
        /* Rows follow snapshot order; past the snapshot's GPUs the position is all we know. */
        if (json_array_append_new(rows, json_integer(i < s->gpu_count ? s->gpus[i].index : i)))
            goto err;
    for (int c = 0; c < GM_P2P__COUNT; c++) {
        json_t *m = json_array();
        if (json_object_set_new(o, p2p_cap_names[c], m) != 0)
            goto err;
        for (unsigned i = 0; i < n; i++) {
            json_t *row = json_array();
            if (json_array_append_new(m, row) != 0)
                goto err;
            for (unsigned j = 0; j < n; j++) {
                const char *code =
                    i == j ? "X" : gm_p2p_status_code((gm_p2p_status)t->p2p[i][j][c]);
                if (json_array_append_new(row, json_string(code)) != 0)
                    goto err;
            }
        }
    }
    return o;
err:
    json_decref(o);
    return NULL;
}

json_t *gm_json_loadb(const char *text, size_t len, size_t flags, json_error_t *err)
{
    const char *nul = len ? memchr(text, '\0', len) : NULL;
    if (!nul)
        return json_loadb(text, len, flags, err);
    if (err) {
        memset(err, 0, sizeof *err);
        err->line = 1;
        for (const char *p = text; p < nul; p++) {
            if (*p == '\n') {
                err->line++;
                err->column = 0;
            } else if ((*p & 0xC0) != 0x80) { /* columns count characters, as jansson's do */
                err->column++;
            }
        }
        err->column++;
        err->position = (int)(nul - text);
        snprintf(err->source, sizeof err->source, "<buffer>");
        snprintf(err->text, sizeof err->text, "a NUL byte is not allowed in JSON text");
        err->text[JSON_ERROR_TEXT_LENGTH - 1] = (char)json_error_invalid_syntax;
    }
    return NULL;
}

char *gm_json_error_vtext(size_t *len, const char *fmt, va_list ap)
{
    char msg[600], clean[3 * sizeof msg];
    vsnprintf(msg, sizeof msg, fmt, ap);
    /* Messages quote what clients sent (a path, a parameter): bytes that are not UTF-8, or a
     * character cut at the length limit, must not make jansson refuse the whole answer. */
    gm_utf8_repair(clean, sizeof clean, msg, strlen(msg));
    json_t *j = json_pack("{s:s}", "error", clean);
    char *text = j ? gm_json_dump(j, len) : NULL;
    json_decref(j);
    return text;
}
