/* rocm_smi.c - the rocm_smi provider: AMD GPUs read through AMD's ROCm SMI library
 * (librocm_smi64.so.1, Debian's librocm-smi64-1), loaded with dlopen so gpumon runs where it is
 * not installed. Preferred over the amdgpu sysfs reader when it loads: it gives processes with
 * their VRAM (from the KFD) and ECC counts per block. A call that answers NOT_SUPPORTED leaves
 * its metric absent. */
#include "collect/amd_common.h"
#include "collect/calltime.h"
#include "base/error.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- rocm_smi.h declarations (librocm-smi-dev is not needed to build) ------------------------ */

enum {
    RS_SUCCESS = 0,
    RS_NOT_SUPPORTED = 2,
    RS_PERMISSION = 4,
    RS_NOT_YET_IMPLEMENTED = 9,
    RS_NOT_FOUND = 10,
    RS_INSUFFICIENT_SIZE = 11,
};

enum { RS_MEM_TYPE_VRAM = 0 };
enum { RS_TEMP_CURRENT = 0 };
enum { RS_SW_COMP_DRIVER = 0 };
#define RS_GPU_BLOCK_UMC   0x1ull
#define RS_GPU_BLOCK_COUNT 14 /* UMC (bit 0) .. FUSE (bit 13), what every version knows */

typedef struct {
    uint32_t major, minor, patch;
    const char *build;
} rs_version;

/* rsmi_error_count_t: ROCm 6 appended deferred_err; room for it either way. */
typedef struct {
    uint64_t correctable, uncorrectable, deferred;
} rs_error_count;

typedef struct {
    uint32_t process_id, pasid;
    uint64_t vram_usage, sdma_usage;
    uint32_t cu_occupancy;
} rs_process_info;

/* rsmi_frequencies_t changed in ROCm 6: a leading bool has_deep_sleep and 33 entries instead of
 * 32, so num_supported, current and the table moved. Read through offsets picked from what the
 * call wrote (freq_layout), else by the library's version, which distribution builds do not
 * always carry (Debian's 5.2.3 says 1.0.0); buffers are large enough for both (and
 * rsmi_pcie_bandwidth_t, which starts with one and adds the lanes). */
typedef struct {
    size_t num_off, cur_off, freq_off, lanes_off;
    unsigned max;
} rs_freq_layout;

static const rs_freq_layout rs_freqs_v5 = {0, 4, 8, 8 + 32 * 8, 32};
static const rs_freq_layout rs_freqs_v6 = {4, 8, 16, 16 + 33 * 8, 33};
typedef union {
    uint64_t align;
    unsigned char bytes[1024];
} rs_freq_buf;

typedef int (*rs_version_fn)(rs_version *);
typedef int (*rs_version_str_fn)(int, char *, uint32_t);
typedef int (*rs_count_fn)(uint32_t *);
typedef int (*rs_str_fn)(uint32_t, char *, size_t);
typedef int (*rs_str32_fn)(uint32_t, char *, uint32_t);
typedef int (*rs_u64_fn)(uint32_t, uint64_t *);
typedef int (*rs_u32_fn)(uint32_t, uint32_t *);
typedef int (*rs_u16_fn)(uint32_t, uint16_t *);
typedef int (*rs_mem_fn)(uint32_t, int, uint64_t *);
typedef int (*rs_temp_fn)(uint32_t, uint32_t, int, int64_t *);
typedef int (*rs_sensor_u64_fn)(uint32_t, uint32_t, uint64_t *);
typedef int (*rs_sensor_i64_fn)(uint32_t, uint32_t, int64_t *);
typedef int (*rs_energy_fn)(uint32_t, uint64_t *, float *, uint64_t *);
typedef int (*rs_clk_fn)(uint32_t, int, void *);
typedef int (*rs_buf_fn)(uint32_t, void *);
typedef int (*rs_ecc_fn)(uint32_t, uint64_t, rs_error_count *);
typedef int (*rs_procs_fn)(rs_process_info *, uint32_t *);
typedef int (*rs_proc_gpus_fn)(uint32_t, uint32_t *, uint32_t *);
typedef int (*rs_proc_dev_fn)(uint32_t, uint32_t, rs_process_info *);

#define RS_DEFAULT_LIB "librocm_smi64.so.1"

/* The library's functions, and the rsmi_frequencies_t layout its version says it writes. */
typedef struct rs_syms {
    const rs_freq_layout *freqs;
    rs_version_str_fn version_str;
    rs_count_fn num_devices;
    rs_str_fn name;
    rs_str32_fn serial, vbios;
    rs_u64_fn unique_id, pci_id, socket_power;
    rs_u16_fn dev_id;
    rs_u32_fn busy, mem_busy;
    rs_mem_fn mem_total, mem_used;
    rs_temp_fn temp;
    rs_sensor_u64_fn power_ave, power_cap, fan_max;
    rs_sensor_i64_fn fan;
    rs_energy_fn energy;
    rs_clk_fn clk;
    rs_buf_fn pci_bw;
    rs_ecc_fn ecc;
    rs_procs_fn procs;
    rs_proc_gpus_fn proc_gpus;
    rs_proc_dev_fn proc_by_dev; /* ROCm 6: a process's VRAM on one GPU */
} rs_syms;

static const char *const rs_required[] = {"rsmi_num_monitor_devices", NULL};
GM_AMD_LIB(rs, "ROCm SMI", "a ROCm SMI library", "GPU_MONITOR_ROCM_SMI_LIB", RS_DEFAULT_LIB,
           "rsmi_init", 0, "rsmi_shut_down", "rsmi_status_string", NULL);

/* True when rc is a success; otherwise notes a failure that is not "this GPU lacks it". */
static bool rs_ok(gm_amd_pass *p, const char *fn, int rc)
{
    return gm_amd_pass_note(
        p, fn, rc, rc == RS_NOT_SUPPORTED || rc == RS_NOT_YET_IMPLEMENTED || rc == RS_PERMISSION);
}

/* Calls fn (a symbol that may be missing: then "not supported") timed under its name. The
 * library's device index of a GPU is its snapshot position. */
#define RS_CALL(pass, sym, fnptr, ...) \
    ((fnptr) ? rs_ok((pass), sym, GM_TIMED(sym, (fnptr)(__VA_ARGS__))) : false)

static void *sym(void *dl, const char *name)
{
    return dlsym(dl, name);
}

/* The required function (rsmi_num_monitor_devices) and the optional ones. */
static void rs_resolve(void *dl, void **required)
{
    rs_sym.num_devices = (rs_count_fn)required[0];
    rs_sym.version_str = (rs_version_str_fn)sym(dl, "rsmi_version_str_get");
    rs_sym.name = (rs_str_fn)sym(dl, "rsmi_dev_name_get");
    rs_sym.serial = (rs_str32_fn)sym(dl, "rsmi_dev_serial_number_get");
    rs_sym.vbios = (rs_str32_fn)sym(dl, "rsmi_dev_vbios_version_get");
    rs_sym.unique_id = (rs_u64_fn)sym(dl, "rsmi_dev_unique_id_get");
    rs_sym.pci_id = (rs_u64_fn)sym(dl, "rsmi_dev_pci_id_get");
    rs_sym.dev_id = (rs_u16_fn)sym(dl, "rsmi_dev_id_get");
    rs_sym.busy = (rs_u32_fn)sym(dl, "rsmi_dev_busy_percent_get");
    rs_sym.mem_busy = (rs_u32_fn)sym(dl, "rsmi_dev_memory_busy_percent_get");
    rs_sym.mem_total = (rs_mem_fn)sym(dl, "rsmi_dev_memory_total_get");
    rs_sym.mem_used = (rs_mem_fn)sym(dl, "rsmi_dev_memory_usage_get");
    rs_sym.temp = (rs_temp_fn)sym(dl, "rsmi_dev_temp_metric_get");
    rs_sym.power_ave = (rs_sensor_u64_fn)sym(dl, "rsmi_dev_power_ave_get");
    rs_sym.socket_power = (rs_u64_fn)sym(dl, "rsmi_dev_current_socket_power_get");
    rs_sym.power_cap = (rs_sensor_u64_fn)sym(dl, "rsmi_dev_power_cap_get");
    rs_sym.energy = (rs_energy_fn)sym(dl, "rsmi_dev_energy_count_get");
    rs_sym.fan = (rs_sensor_i64_fn)sym(dl, "rsmi_dev_fan_speed_get");
    rs_sym.fan_max = (rs_sensor_u64_fn)sym(dl, "rsmi_dev_fan_speed_max_get");
    rs_sym.clk = (rs_clk_fn)sym(dl, "rsmi_dev_gpu_clk_freq_get");
    rs_sym.pci_bw = (rs_buf_fn)sym(dl, "rsmi_dev_pci_bandwidth_get");
    rs_sym.ecc = (rs_ecc_fn)sym(dl, "rsmi_dev_ecc_count_get");
    rs_sym.procs = (rs_procs_fn)sym(dl, "rsmi_compute_process_info_get");
    rs_sym.proc_gpus = (rs_proc_gpus_fn)sym(dl, "rsmi_compute_process_gpus_get");
    rs_sym.proc_by_dev = (rs_proc_dev_fn)sym(dl, "rsmi_compute_process_info_by_device_get");
    /* The library's own version says which rsmi_frequencies_t it writes; without
     * rsmi_version_get it predates ROCm 6. */
    rs_version_fn version = (rs_version_fn)sym(dl, "rsmi_version_get");
    rs_version v = {0};
    rs_sym.freqs =
        version && version(&v) == RS_SUCCESS && v.major >= 6 ? &rs_freqs_v6 : &rs_freqs_v5;
}

static int rs_list(gm_amd_state *st, gm_error *err)
{
    uint32_t n = 0;
    int s = GM_TIMED("rsmi_num_monitor_devices", rs_sym.num_devices(&n));
    if (s != RS_SUCCESS)
        return gm_error_set(err, GM_EIO, "rsmi_num_monitor_devices failed: %s (%d)",
                            gm_amd_strerror(&rs_lib, s), s);
    st->count = n > GM_MAX_GPUS ? GM_MAX_GPUS : n;
    return GM_OK;
}

static void rs_identity(gm_amd_state *st, unsigned dv, gm_amd_gpu *g)
{
    (void)st;
    gm_amd_pass p = {0};
    uint64_t bdf = 0, uid = 0;
    if (RS_CALL(&p, "rsmi_dev_pci_id_get", rs_sym.pci_id, dv, &bdf))
        /* BDFID: domain in bits 63..32, bus 15..8, device 7..3, function 2..0. */
        snprintf(g->bus_id, sizeof g->bus_id, "%04x:%02x:%02x.%x", (unsigned)(bdf >> 32),
                 (unsigned)(bdf >> 8) & 0xff, (unsigned)(bdf >> 3) & 0x1f, (unsigned)bdf & 7);
    char text[256];
    if (RS_CALL(&p, "rsmi_dev_name_get", rs_sym.name, dv, text, sizeof text))
        gm_amd_copy_field(g->name, sizeof g->name, text, sizeof text);
    /* The unique id the amdgpu driver gives (sysfs unique_id, "%016llx"): the GPU's UUID as the
     * sysfs reader gives it too, so both providers name a GPU alike. */
    if (RS_CALL(&p, "rsmi_dev_unique_id_get", rs_sym.unique_id, dv, &uid) && uid)
        snprintf(g->uuid, sizeof g->uuid, "%016" PRIx64, uid);
    if (RS_CALL(&p, "rsmi_dev_serial_number_get", rs_sym.serial, dv, text, sizeof text))
        gm_amd_copy_field(g->serial, sizeof g->serial, text, sizeof text);
    if (RS_CALL(&p, "rsmi_dev_vbios_version_get", rs_sym.vbios, dv, text, sizeof text))
        gm_amd_copy_field(g->vbios, sizeof g->vbios, text, sizeof text);
    g->have_dev_id = RS_CALL(&p, "rsmi_dev_id_get", rs_sym.dev_id, dv, &g->dev_id);
}

static void rs_driver_version(gm_amd_state *st)
{
    char ver[GM_VERSION_LEN * 2];
    if (rs_sym.version_str &&
        GM_TIMED("rsmi_version_str_get", rs_sym.version_str(RS_SW_COMP_DRIVER, ver, sizeof ver)) ==
            RS_SUCCESS) {
        ver[sizeof ver - 1] = '\0';
        snprintf(st->driver_version, sizeof st->driver_version, "%s", ver);
    }
}

/* The layout a zeroed rsmi_frequencies_t was filled in: ROCm 6's starts with a bool (word 0 is
 * 0 or 1), then num_supported (1..33) and current (below it); ROCm 5's with num_supported
 * (1..32) and current below it. The two never both fit a filled table: where neither does, the
 * library's version decides. */
static const rs_freq_layout *freq_layout(const unsigned char *buf)
{
    uint32_t w[3];
    memcpy(w, buf, sizeof w);
    bool v6 = w[0] <= 1 && w[1] >= 1 && w[1] <= 33 && w[2] < w[1];
    bool v5 = w[0] >= 1 && w[0] <= 32 && w[1] < w[0];
    return v6 && !v5 ? &rs_freqs_v6 : v5 && !v6 ? &rs_freqs_v5 : rs_sym.freqs;
}

/* A frequency table (rsmi_frequencies_t at buf): the current entry and the highest, each 0
 * when not given. */
static void freq_read(const rs_freq_layout *lay, const unsigned char *buf, uint64_t *cur,
                      uint64_t *max, uint32_t *cur_index)
{
    uint32_t num, at;
    memcpy(&num, buf + lay->num_off, sizeof num);
    memcpy(&at, buf + lay->cur_off, sizeof at);
    *cur = *max = 0;
    *cur_index = UINT32_MAX;
    if (num > lay->max)
        num = lay->max;
    for (uint32_t i = 0; i < num; i++) {
        uint64_t f;
        memcpy(&f, buf + lay->freq_off + i * sizeof f, sizeof f);
        if (f > *max)
            *max = f;
        if (i == at) {
            *cur = f;
            *cur_index = i;
        }
    }
}

static void rs_use(gm_amd_state *st, unsigned dv, gm_gpu *g, gm_amd_pass *p)
{
    uint32_t pct;
    uint64_t total, used;
    if (RS_CALL(p, "rsmi_dev_busy_percent_get", rs_sym.busy, dv, &pct))
        gm_gpu_set(g, GM_M_UTIL_GPU_PCT, pct);
    if (gm_amd_wants(st, GM_M_UTIL_MEM_PCT) &&
        RS_CALL(p, "rsmi_dev_memory_busy_percent_get", rs_sym.mem_busy, dv, &pct))
        gm_gpu_set(g, GM_M_UTIL_MEM_PCT, pct);
    if (RS_CALL(p, "rsmi_dev_memory_total_get", rs_sym.mem_total, dv, RS_MEM_TYPE_VRAM, &total))
        gm_gpu_set(g, GM_M_MEM_TOTAL_BYTES, (double)total);
    if (RS_CALL(p, "rsmi_dev_memory_usage_get", rs_sym.mem_used, dv, RS_MEM_TYPE_VRAM, &used))
        gm_gpu_set(g, GM_M_MEM_USED_BYTES, (double)used);
}

static bool rs_temp(gm_amd_state *st, unsigned dv, int sensor, double *celsius, gm_amd_pass *p)
{
    (void)st;
    int64_t mc;
    if (!RS_CALL(p, "rsmi_dev_temp_metric_get", rs_sym.temp, dv, (uint32_t)sensor, RS_TEMP_CURRENT,
                 &mc))
        return false;
    *celsius = (double)mc / 1000.0;
    return true;
}

static void rs_power(gm_amd_state *st, unsigned dv, gm_gpu *g, gm_amd_pass *p)
{
    uint64_t uw;
    if (gm_amd_wants(st, GM_M_POWER_MW) || gm_amd_wants(st, GM_M_POWER_AVG_MW) ||
        gm_amd_wants(st, GM_M_POWER_INSTANT_MW)) {
        /* Older boards give the average, MI300 only the current socket power. */
        if (RS_CALL(p, "rsmi_dev_power_ave_get", rs_sym.power_ave, dv, 0, &uw))
            gm_gpu_set(g, GM_M_POWER_AVG_MW, (double)uw / 1e3);
        if (RS_CALL(p, "rsmi_dev_current_socket_power_get", rs_sym.socket_power, dv, &uw))
            gm_gpu_set(g, GM_M_POWER_INSTANT_MW, (double)uw / 1e3);
    }
    if (gm_amd_wants(st, GM_M_POWER_LIMIT_MW) &&
        RS_CALL(p, "rsmi_dev_power_cap_get", rs_sym.power_cap, dv, 0, &uw) && uw)
        gm_gpu_set(g, GM_M_POWER_LIMIT_MW, (double)uw / 1e3);
}

static bool rs_energy(gm_amd_state *st, unsigned dv, uint64_t *count, float *res, gm_amd_pass *p)
{
    (void)st;
    uint64_t ts = 0;
    return RS_CALL(p, "rsmi_dev_energy_count_get", rs_sym.energy, dv, count, res, &ts);
}

static bool rs_clock(gm_amd_state *st, unsigned dv, int type, double *cur, double *max,
                     gm_amd_pass *p)
{
    (void)st;
    rs_freq_buf buf;
    memset(&buf, 0, sizeof buf);
    if (!RS_CALL(p, "rsmi_dev_gpu_clk_freq_get", rs_sym.clk, dv, type, buf.bytes))
        return false;
    uint64_t cur_hz, max_hz;
    uint32_t at;
    freq_read(freq_layout(buf.bytes), buf.bytes, &cur_hz, &max_hz, &at);
    *cur = (double)cur_hz / 1e6;
    *max = (double)max_hz / 1e6;
    return true;
}

static bool rs_fan(gm_amd_state *st, unsigned dv, int64_t *speed, uint64_t *max, gm_amd_pass *p)
{
    (void)st;
    return RS_CALL(p, "rsmi_dev_fan_speed_get", rs_sym.fan, dv, 0, speed) &&
           RS_CALL(p, "rsmi_dev_fan_speed_max_get", rs_sym.fan_max, dv, 0, max);
}

/* The PCIe generation of a transfer rate in T/s (2.5 GT/s is gen 1 ... 64 GT/s gen 6). */
static unsigned pcie_gen_of(uint64_t ts)
{
    static const double gts[] = {2.5, 5, 8, 16, 32, 64};
    for (unsigned i = 0; i < sizeof gts / sizeof *gts; i++)
        if ((double)ts > gts[i] * 1e9 * 0.9 && (double)ts < gts[i] * 1e9 * 1.1)
            return i + 1;
    return 0;
}

static void rs_pcie(gm_amd_state *st, unsigned dv, gm_gpu *g, gm_amd_pass *p)
{
    (void)st;
    rs_freq_buf buf;
    memset(&buf, 0, sizeof buf);
    if (!RS_CALL(p, "rsmi_dev_pci_bandwidth_get", rs_sym.pci_bw, dv, buf.bytes))
        return;
    const rs_freq_layout *lay = freq_layout(buf.bytes);
    uint64_t cur, max;
    uint32_t at, num;
    freq_read(lay, buf.bytes, &cur, &max, &at);
    memcpy(&num, buf.bytes + lay->num_off, sizeof num);
    unsigned gen;
    if (cur && (gen = pcie_gen_of(cur)))
        gm_gpu_set(g, GM_M_PCIE_GEN_CUR, gen);
    if (max && (gen = pcie_gen_of(max)))
        gm_gpu_set(g, GM_M_PCIE_GEN_MAX, gen);
    uint32_t lanes, max_lanes = 0;
    for (uint32_t i = 0; i < num && i < lay->max; i++) {
        memcpy(&lanes, buf.bytes + lay->lanes_off + i * sizeof lanes, sizeof lanes);
        if (lanes > max_lanes)
            max_lanes = lanes;
        if (i == at && lanes)
            gm_gpu_set(g, GM_M_PCIE_WIDTH_CUR, lanes);
    }
    if (max_lanes)
        gm_gpu_set(g, GM_M_PCIE_WIDTH_MAX, max_lanes);
}

/* RAS error counts per block since the driver loaded: their sums, and the memory controller's
 * (UMC) as the DRAM location's. */
static void rs_ecc(gm_amd_state *st, unsigned dv, gm_gpu *g, gm_amd_pass *p)
{
    (void)st;
    double ce = 0, ue = 0;
    bool any = false;
    for (unsigned b = 0; b < RS_GPU_BLOCK_COUNT && rs_sym.ecc; b++) {
        rs_error_count ec;
        memset(&ec, 0, sizeof ec);
        uint64_t block = (uint64_t)1 << b;
        if (!RS_CALL(p, "rsmi_dev_ecc_count_get", rs_sym.ecc, dv, block, &ec))
            continue;
        ce += (double)ec.correctable;
        ue += (double)ec.uncorrectable;
        any = true;
        if (block == RS_GPU_BLOCK_UMC) {
            gm_gpu_set(g, GM_M_ECC_CORR_VOL_DRAM, (double)ec.correctable);
            gm_gpu_set(g, GM_M_ECC_UNCORR_VOL_DRAM, (double)ec.uncorrectable);
        }
    }
    if (any) {
        gm_gpu_set(g, GM_M_ECC_CORR_VOL, ce);
        gm_gpu_set(g, GM_M_ECC_UNCORR_VOL, ue);
    }
}

/* The KFD's compute processes into the process buffer, their number into *n: false when the
 * library would not give them or there are none. */
static bool list_processes(gm_amd_state *st, uint32_t *n)
{
    for (int attempt = 0; attempt < 3; attempt++) {
        if (GM_TIMED("rsmi_compute_process_info_get", rs_sym.procs(NULL, n)) != RS_SUCCESS)
            return false;
        if (*n == 0)
            return false;
        rs_process_info *buf = gm_amd_proc_room(st, *n + 8, sizeof *buf);
        if (!buf)
            return false;
        *n = st->proc_cap;
        int s = GM_TIMED("rsmi_compute_process_info_get", rs_sym.procs(buf, n));
        if (s == RS_SUCCESS)
            return true;
        if (s != RS_INSUFFICIENT_SIZE || attempt == 2)
            return false;
    }
    return false;
}

/* The process pid on the GPU dv, one of m it uses: its VRAM there where the library tells it per
 * GPU (ROCm 6), else its total when it uses one GPU only; unknown otherwise. */
static void add_process(const rs_process_info *pi, uint32_t dv, uint32_t m, const gm_gpu *g,
                        gm_snapshot *out)
{
    gm_process proc;
    memset(&proc, 0, sizeof proc);
    proc.gpu_index = g->index;
    proc.pid = pi->process_id;
    proc.type = GM_PROC_COMPUTE;
    rs_process_info one;
    if (rs_sym.proc_by_dev) {
        if (GM_TIMED("rsmi_compute_process_info_by_device_get",
                     rs_sym.proc_by_dev(pi->process_id, dv, &one)) == RS_SUCCESS) {
            proc.mem_valid = true;
            proc.used_mem_bytes = one.vram_usage;
        }
    } else if (m == 1) {
        proc.mem_valid = true;
        proc.used_mem_bytes = pi->vram_usage;
    }
    gm_snapshot_add_process(out, &proc);
}

/* Processes with VRAM on our GPUs, from the KFD through the library: each process once per GPU
 * it uses. */
static void rs_processes(gm_amd_state *st, gm_snapshot *out)
{
    uint32_t n = 0;
    if (!rs_sym.procs || !rs_sym.proc_gpus || !list_processes(st, &n))
        return;
    const rs_process_info *buf = st->proc_buf;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t dvs[GM_MAX_GPUS], m = GM_MAX_GPUS;
        int s =
            GM_TIMED("rsmi_compute_process_gpus_get", rs_sym.proc_gpus(buf[i].process_id, dvs, &m));
        if (s != RS_SUCCESS && s != RS_INSUFFICIENT_SIZE) /* ended in between */
            continue;
        if (m > GM_MAX_GPUS)
            m = GM_MAX_GPUS;
        for (uint32_t k = 0; k < m; k++)
            if (dvs[k] < st->count && !out->gpus[dvs[k]].lost)
                add_process(&buf[i], dvs[k], m, &out->gpus[dvs[k]], out);
    }
}

/* Opens the library from $GPU_MONITOR_ROCM_SMI_LIB, else librocm_smi64.so.1: GM_ENOLIB when it
 * does not load, GM_EINIT when rsmi_init fails, GM_ENODEV when it sees no GPU. */
GM_AMD_PROVIDER(gm_provider_rocm_smi, "rocm_smi", rs, gm_amd_state);
