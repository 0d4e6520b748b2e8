/* amd_smi.c - the amd_smi provider: AMD GPUs read through AMD's newer SMI library (amdsmi,
 * libamd_smi.so), loaded with dlopen so gpumon runs where it is not installed. Preferred over the
 * ROCm SMI library when it loads. The library's structures changed between ROCm releases and it
 * carries no size in them, so this file declares those of one release (amdsmi 24.6, ROCm 6.2,
 * from its include/amd_smi/amdsmi.h) and refuses a library of any other version rather than
 * misread one: then the rocm_smi provider reads the GPUs. A call the library lacks or answers
 * NOT_SUPPORTED leaves its metric absent. */
#include "collect/amd_common.h"
#include "collect/calltime.h"
#include "base/error.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- amdsmi.h of ROCm 6.2 (amdsmi 24.6) ------------------------------------------------------ */

#define AS_VERSION_YEAR  24
#define AS_VERSION_MAJOR 6

enum {
    AS_SUCCESS = 0,
    AS_NOT_SUPPORTED = 2,
    AS_NOT_YET_IMPLEMENTED = 3,
    AS_NO_PERM = 10,
    AS_OUT_OF_RESOURCES = 15,
};

enum { AS_INIT_AMD_GPUS = 1 << 1 };
enum { AS_TEMP_CURRENT = 0 };

#define AS_MAX_STRING_LENGTH    64
#define AS_NORMAL_STRING_LENGTH 32
#define AS_256_LENGTH           256
#define AS_GPU_UUID_SIZE        38
#define AS_MAX_SOCKETS          64

/* A field the GPU's metrics table does not give reads as UINT16_MAX in 24.6's structures. */
#define AS_NA 0xFFFFu

typedef void *as_handle;

typedef struct {
    uint32_t year, major, minor, release;
    const char *build;
} as_version;

typedef struct {
    uint32_t gfx_activity, umc_activity, mm_activity;
    uint32_t reserved[13];
} as_engine_usage;

typedef struct {
    uint32_t vram_total, vram_used; /* MiB */
    uint32_t reserved[2];
} as_vram_usage;

typedef struct {
    uint32_t current_socket_power, average_socket_power; /* W */
    uint32_t gfx_voltage, soc_voltage, mem_voltage;
    uint32_t power_limit; /* hwmon power1_cap as read: uW */
    uint32_t reserved[11];
} as_power_info;

typedef struct {
    uint32_t clk, min_clk, max_clk; /* MHz */
    uint8_t clk_locked, clk_deep_sleep;
    uint32_t reserved[4];
} as_clk_info;

typedef struct {
    char market_name[AS_256_LENGTH];
    uint32_t vendor_id;
    char vendor_name[AS_MAX_STRING_LENGTH];
    uint32_t subvendor_id;
    uint64_t device_id;
    uint32_t rev_id;
    char asic_serial[AS_NORMAL_STRING_LENGTH];
    uint32_t oam_id;
    uint32_t reserved[18];
} as_asic_info;

typedef struct {
    char model_number[AS_256_LENGTH];
    char product_serial[AS_NORMAL_STRING_LENGTH];
    char fru_id[AS_NORMAL_STRING_LENGTH];
    char product_name[AS_256_LENGTH];
    char manufacturer_name[AS_MAX_STRING_LENGTH];
    uint32_t reserved[32];
} as_board_info;

typedef struct {
    char driver_version[AS_MAX_STRING_LENGTH];
    char driver_date[AS_MAX_STRING_LENGTH];
    char driver_name[AS_MAX_STRING_LENGTH];
} as_driver_info;

typedef struct {
    uint64_t correctable_count, uncorrectable_count, deferred_count;
    uint64_t reserved[5];
} as_error_count;

typedef struct {
    char name[AS_NORMAL_STRING_LENGTH];
    uint32_t pid;
    uint64_t mem;
    struct {
        uint64_t gfx, enc;
        uint32_t reserved[12];
    } engine_usage;
    struct {
        uint64_t gtt_mem, cpu_mem, vram_mem; /* bytes */
        uint32_t reserved[10];
    } memory_usage;
    char container_name[AS_NORMAL_STRING_LENGTH];
    uint32_t reserved[4];
} as_proc_info;

typedef struct {
    struct {
        uint16_t max_pcie_width;
        uint32_t max_pcie_speed; /* MT/s */
        uint32_t pcie_interface_version;
        int slot_type;
        uint64_t reserved[10];
    } pcie_static;
    struct {
        uint16_t pcie_width;
        uint32_t pcie_speed; /* MT/s */
        uint32_t pcie_bandwidth;
        uint64_t pcie_replay_count, pcie_l0_to_recovery_count, pcie_replay_roll_over_count;
        uint64_t pcie_nak_sent_count, pcie_nak_received_count;
        uint64_t reserved[13];
    } pcie_metric;
    uint64_t reserved[32];
} as_pcie_info;

/* amdsmi_bdf_t: function bits 2..0, device 7..3, bus 15..8, domain 63..16. */
typedef uint64_t as_bdf;

typedef int (*as_version_fn)(as_version *);
typedef int (*as_sockets_fn)(uint32_t *, as_handle *);
typedef int (*as_procs_of_fn)(as_handle, uint32_t *, as_handle *);
typedef int (*as_buf_fn)(as_handle, void *);
typedef int (*as_uuid_fn)(as_handle, unsigned *, char *);
typedef int (*as_temp_fn)(as_handle, int, int, int64_t *);
typedef int (*as_energy_fn)(as_handle, uint64_t *, float *, uint64_t *);
typedef int (*as_clk_fn)(as_handle, int, as_clk_info *);
typedef int (*as_fan_fn)(as_handle, uint32_t, int64_t *);
typedef int (*as_fan_max_fn)(as_handle, uint32_t, uint64_t *);
typedef int (*as_proc_list_fn)(as_handle, uint32_t *, as_proc_info *);

#define AS_DEFAULT_LIB "libamd_smi.so"

/* The library's functions: those it must have, and those a GPU may answer "not supported" by
 * lacking. */
typedef struct as_syms {
    as_version_fn version;
    as_sockets_fn sockets;
    as_procs_of_fn processors;
    as_buf_fn activity, vram, power, bdf, asic, board, driver, ecc, pcie;
    as_uuid_fn uuid;
    as_temp_fn temp;
    as_energy_fn energy;
    as_clk_fn clk;
    as_fan_fn fan;
    as_fan_max_fn fan_max;
    as_proc_list_fn proc_list;
} as_syms;

static const char *const as_required[] = {"amdsmi_get_lib_version", "amdsmi_get_socket_handles",
                                          "amdsmi_get_processor_handles", NULL};
static int as_ready(gm_amd_lib *L, const char *path, gm_error *err);
GM_AMD_LIB(as, "amdsmi", "an amdsmi library", "GPU_MONITOR_AMD_SMI_LIB", AS_DEFAULT_LIB,
           "amdsmi_init", AS_INIT_AMD_GPUS, "amdsmi_shut_down", "amdsmi_status_code_to_string",
           as_ready);

typedef struct as_state {
    gm_amd_state base;
    as_handle h[GM_MAX_GPUS];
} as_state;

static as_handle handle(gm_amd_state *st, unsigned i)
{
    return ((as_state *)st)->h[i];
}

/* True when rc is a success; otherwise notes a failure that is not "this GPU lacks it". */
static bool as_ok(gm_amd_pass *p, const char *fn, int rc)
{
    return gm_amd_pass_note(
        p, fn, rc, rc == AS_NOT_SUPPORTED || rc == AS_NOT_YET_IMPLEMENTED || rc == AS_NO_PERM);
}

/* Calls fn (a symbol that may be missing: then "not supported") timed under its name. */
#define AS_CALL(pass, sym, fnptr, ...) \
    ((fnptr) ? as_ok((pass), sym, GM_TIMED(sym, (fnptr)(__VA_ARGS__))) : false)

/* The required functions (amdsmi_get_lib_version and the handles) and the optional ones. */
static void as_resolve(void *dl, void **required)
{
    as_sym.version = (as_version_fn)required[0];
    as_sym.sockets = (as_sockets_fn)required[1];
    as_sym.processors = (as_procs_of_fn)required[2];
    as_sym.activity = (as_buf_fn)dlsym(dl, "amdsmi_get_gpu_activity");
    as_sym.vram = (as_buf_fn)dlsym(dl, "amdsmi_get_gpu_vram_usage");
    as_sym.power = (as_buf_fn)dlsym(dl, "amdsmi_get_power_info");
    as_sym.bdf = (as_buf_fn)dlsym(dl, "amdsmi_get_gpu_device_bdf");
    as_sym.asic = (as_buf_fn)dlsym(dl, "amdsmi_get_gpu_asic_info");
    as_sym.board = (as_buf_fn)dlsym(dl, "amdsmi_get_gpu_board_info");
    as_sym.driver = (as_buf_fn)dlsym(dl, "amdsmi_get_gpu_driver_info");
    as_sym.ecc = (as_buf_fn)dlsym(dl, "amdsmi_get_gpu_total_ecc_count");
    as_sym.pcie = (as_buf_fn)dlsym(dl, "amdsmi_get_pcie_info");
    as_sym.uuid = (as_uuid_fn)dlsym(dl, "amdsmi_get_gpu_device_uuid");
    as_sym.temp = (as_temp_fn)dlsym(dl, "amdsmi_get_temp_metric");
    as_sym.energy = (as_energy_fn)dlsym(dl, "amdsmi_get_energy_count");
    as_sym.clk = (as_clk_fn)dlsym(dl, "amdsmi_get_clock_info");
    as_sym.fan = (as_fan_fn)dlsym(dl, "amdsmi_get_gpu_fan_speed");
    as_sym.fan_max = (as_fan_max_fn)dlsym(dl, "amdsmi_get_gpu_fan_speed_max");
    as_sym.proc_list = (as_proc_list_fn)dlsym(dl, "amdsmi_get_gpu_process_list");
}

/* Refuses a library of another version than the structures above. The version answers only once
 * initialised. */
static int as_ready(gm_amd_lib *L, const char *path, gm_error *err)
{
    /* Room past as_version for a release whose structure is larger: what it writes there is not
     * read. */
    union {
        as_version v;
        unsigned char room[256];
    } ver;
    memset(&ver, 0, sizeof ver);
    int s = GM_TIMED("amdsmi_get_lib_version", as_sym.version(&ver.v));
    if (s != AS_SUCCESS)
        return gm_error_set(err, GM_EINIT, "amdsmi_get_lib_version failed: %s (%d)",
                            gm_amd_strerror(L, s), s);
    if (ver.v.year != AS_VERSION_YEAR || ver.v.major != AS_VERSION_MAJOR)
        return gm_error_set(err, GM_ENOTSUP,
                            "%s is amdsmi %u.%u.%u; gpumon reads amdsmi %d.%d (ROCm 6.2) only, "
                            "whose structures it knows",
                            path, ver.v.year, ver.v.major, ver.v.minor, AS_VERSION_YEAR,
                            AS_VERSION_MAJOR);
    return GM_OK;
}

/* Every GPU's handle: the processors of each socket, in the library's order. */
static int as_list(gm_amd_state *st, gm_error *err)
{
    as_handle sockets[AS_MAX_SOCKETS];
    uint32_t ns = AS_MAX_SOCKETS;
    int s = GM_TIMED("amdsmi_get_socket_handles", as_sym.sockets(&ns, sockets));
    if (s != AS_SUCCESS)
        return gm_error_set(err, GM_EIO, "amdsmi_get_socket_handles failed: %s (%d)",
                            gm_amd_strerror(&as_lib, s), s);
    if (ns > AS_MAX_SOCKETS)
        ns = AS_MAX_SOCKETS;
    for (uint32_t i = 0; i < ns && st->count < GM_MAX_GPUS; i++) {
        as_handle hs[GM_MAX_GPUS];
        uint32_t n = GM_MAX_GPUS - st->count;
        s = GM_TIMED("amdsmi_get_processor_handles", as_sym.processors(sockets[i], &n, hs));
        if (s != AS_SUCCESS)
            return gm_error_set(err, GM_EIO, "amdsmi_get_processor_handles failed: %s (%d)",
                                gm_amd_strerror(&as_lib, s), s);
        for (uint32_t k = 0; k < n && st->count < GM_MAX_GPUS; k++)
            ((as_state *)st)->h[st->count++] = hs[k];
    }
    return GM_OK;
}

static void as_identity(gm_amd_state *st, unsigned i, gm_amd_gpu *g)
{
    as_handle h = handle(st, i);
    gm_amd_pass p = {0};
    as_bdf bdf = 0;
    if (AS_CALL(&p, "amdsmi_get_gpu_device_bdf", as_sym.bdf, h, &bdf))
        snprintf(g->bus_id, sizeof g->bus_id, "%04x:%02x:%02x.%x", (unsigned)(bdf >> 16),
                 (unsigned)(bdf >> 8) & 0xff, (unsigned)(bdf >> 3) & 0x1f, (unsigned)bdf & 7);
    as_asic_info asic;
    memset(&asic, 0, sizeof asic);
    if (AS_CALL(&p, "amdsmi_get_gpu_asic_info", as_sym.asic, h, &asic)) {
        gm_amd_copy_field(g->name, sizeof g->name, asic.market_name, sizeof asic.market_name);
        if (asic.device_id && asic.device_id <= 0xffff) {
            g->have_dev_id = true;
            g->dev_id = (uint16_t)asic.device_id;
        }
    }
    as_board_info board;
    memset(&board, 0, sizeof board);
    if (AS_CALL(&p, "amdsmi_get_gpu_board_info", as_sym.board, h, &board)) {
        if (!g->name[0])
            gm_amd_copy_field(g->name, sizeof g->name, board.product_name,
                              sizeof board.product_name);
        gm_amd_copy_field(g->serial, sizeof g->serial, board.product_serial,
                          sizeof board.product_serial);
    }
    char uuid[AS_GPU_UUID_SIZE + 26];
    unsigned len = sizeof uuid;
    memset(uuid, 0, sizeof uuid);
    if (AS_CALL(&p, "amdsmi_get_gpu_device_uuid", as_sym.uuid, h, &len, uuid))
        gm_amd_copy_field(g->uuid, sizeof g->uuid, uuid, sizeof uuid);
}

static void as_driver_version(gm_amd_state *st)
{
    as_driver_info drv;
    memset(&drv, 0, sizeof drv);
    gm_amd_pass p = {0};
    if (AS_CALL(&p, "amdsmi_get_gpu_driver_info", as_sym.driver, handle(st, 0), &drv))
        gm_amd_copy_field(st->driver_version, sizeof st->driver_version, drv.driver_version,
                          sizeof drv.driver_version);
}

static void as_use(gm_amd_state *st, unsigned i, gm_gpu *g, gm_amd_pass *p)
{
    as_engine_usage u;
    memset(&u, 0, sizeof u);
    if (AS_CALL(p, "amdsmi_get_gpu_activity", as_sym.activity, handle(st, i), &u)) {
        if (u.gfx_activity != AS_NA)
            gm_gpu_set(g, GM_M_UTIL_GPU_PCT, u.gfx_activity);
        if (u.umc_activity != AS_NA)
            gm_gpu_set(g, GM_M_UTIL_MEM_PCT, u.umc_activity);
    }
    as_vram_usage v;
    memset(&v, 0, sizeof v);
    if (AS_CALL(p, "amdsmi_get_gpu_vram_usage", as_sym.vram, handle(st, i), &v)) {
        double mib = 1024.0 * 1024.0;
        gm_gpu_set(g, GM_M_MEM_TOTAL_BYTES, v.vram_total * mib);
        gm_gpu_set(g, GM_M_MEM_USED_BYTES, v.vram_used * mib);
    }
}

static bool as_temp(gm_amd_state *st, unsigned i, int sensor, double *celsius, gm_amd_pass *p)
{
    int64_t c; /* whole degrees: 24.6 divides the ROCm SMI millidegrees by 1000 */
    if (!AS_CALL(p, "amdsmi_get_temp_metric", as_sym.temp, handle(st, i), sensor, AS_TEMP_CURRENT,
                 &c))
        return false;
    *celsius = (double)c;
    return true;
}

static void as_power(gm_amd_state *st, unsigned i, gm_gpu *g, gm_amd_pass *p)
{
    if (!gm_amd_wants(st, GM_M_POWER_MW) && !gm_amd_wants(st, GM_M_POWER_AVG_MW) &&
        !gm_amd_wants(st, GM_M_POWER_INSTANT_MW) && !gm_amd_wants(st, GM_M_POWER_LIMIT_MW))
        return;
    as_power_info pi;
    memset(&pi, 0, sizeof pi);
    if (!AS_CALL(p, "amdsmi_get_power_info", as_sym.power, handle(st, i), &pi))
        return;
    /* Older boards give the average, MI300 only the current socket power. */
    if (pi.average_socket_power != AS_NA)
        gm_gpu_set(g, GM_M_POWER_AVG_MW, (double)pi.average_socket_power * 1e3);
    if (pi.current_socket_power != AS_NA)
        gm_gpu_set(g, GM_M_POWER_INSTANT_MW, (double)pi.current_socket_power * 1e3);
    if (pi.power_limit && pi.power_limit != AS_NA)
        gm_gpu_set(g, GM_M_POWER_LIMIT_MW, (double)pi.power_limit / 1e3);
}

static bool as_energy(gm_amd_state *st, unsigned i, uint64_t *count, float *res, gm_amd_pass *p)
{
    uint64_t ts = 0;
    return AS_CALL(p, "amdsmi_get_energy_count", as_sym.energy, handle(st, i), count, res, &ts);
}

static bool as_clock(gm_amd_state *st, unsigned i, int type, double *cur, double *max,
                     gm_amd_pass *p)
{
    as_clk_info ci;
    memset(&ci, 0, sizeof ci);
    if (!AS_CALL(p, "amdsmi_get_clock_info", as_sym.clk, handle(st, i), type, &ci))
        return false;
    *cur = ci.clk != AS_NA ? ci.clk : 0;
    *max = ci.max_clk != AS_NA ? ci.max_clk : 0;
    return true;
}

static bool as_fan(gm_amd_state *st, unsigned i, int64_t *speed, uint64_t *max, gm_amd_pass *p)
{
    return AS_CALL(p, "amdsmi_get_gpu_fan_speed", as_sym.fan, handle(st, i), 0, speed) &&
           AS_CALL(p, "amdsmi_get_gpu_fan_speed_max", as_sym.fan_max, handle(st, i), 0, max);
}

/* The PCIe generation of a transfer rate in MT/s (2500 is gen 1 ... 64000 gen 6), 0 when none. */
static unsigned pcie_gen_of(uint32_t mts)
{
    static const uint32_t rates[] = {2500, 5000, 8000, 16000, 32000, 64000};
    for (unsigned i = 0; i < sizeof rates / sizeof *rates; i++)
        if (mts == rates[i])
            return i + 1;
    return 0;
}

static void as_pcie(gm_amd_state *st, unsigned i, gm_gpu *g, gm_amd_pass *p)
{
    as_pcie_info pi;
    memset(&pi, 0, sizeof pi);
    if (!AS_CALL(p, "amdsmi_get_pcie_info", as_sym.pcie, handle(st, i), &pi))
        return;
    unsigned gen;
    if ((gen = pcie_gen_of(pi.pcie_metric.pcie_speed)))
        gm_gpu_set(g, GM_M_PCIE_GEN_CUR, gen);
    if (pi.pcie_static.pcie_interface_version >= 1 && pi.pcie_static.pcie_interface_version <= 6)
        gm_gpu_set(g, GM_M_PCIE_GEN_MAX, pi.pcie_static.pcie_interface_version);
    if (pi.pcie_metric.pcie_width && pi.pcie_metric.pcie_width != AS_NA)
        gm_gpu_set(g, GM_M_PCIE_WIDTH_CUR, pi.pcie_metric.pcie_width);
    if (pi.pcie_static.max_pcie_width && pi.pcie_static.max_pcie_width != AS_NA)
        gm_gpu_set(g, GM_M_PCIE_WIDTH_MAX, pi.pcie_static.max_pcie_width);
}

static void as_ecc(gm_amd_state *st, unsigned i, gm_gpu *g, gm_amd_pass *p)
{
    as_error_count ec;
    memset(&ec, 0, sizeof ec);
    if (AS_CALL(p, "amdsmi_get_gpu_total_ecc_count", as_sym.ecc, handle(st, i), &ec)) {
        gm_gpu_set(g, GM_M_ECC_CORR_VOL, (double)ec.correctable_count);
        gm_gpu_set(g, GM_M_ECC_UNCORR_VOL, (double)ec.uncorrectable_count);
    }
}

/* The process list of the GPU at position pos into the process buffer, its length into *n:
 * false when the library would not give it. */
static bool list_processes(gm_amd_state *st, unsigned pos, uint32_t *n)
{
    uint32_t want = 16;
    for (int attempt = 0; attempt < 3; attempt++) {
        as_proc_info *buf = gm_amd_proc_room(st, want, sizeof *buf);
        if (!buf)
            return false;
        *n = st->proc_cap;
        memset(buf, 0, *n * sizeof *buf);
        int s = GM_TIMED("amdsmi_get_gpu_process_list", as_sym.proc_list(handle(st, pos), n, buf));
        if (s == AS_SUCCESS)
            return true;
        /* Too small: n now says how many there are. */
        if (s != AS_OUT_OF_RESOURCES || attempt == 2 || *n <= st->proc_cap)
            return false;
        want = *n + 8;
    }
    return false;
}

/* The processes with VRAM on each GPU not lost (the library asks the driver per GPU, so a
 * process on two GPUs is listed under each with its VRAM there). */
static void as_processes(gm_amd_state *st, gm_snapshot *out)
{
    if (!as_sym.proc_list)
        return;
    for (unsigned pos = 0; pos < st->count; pos++) {
        uint32_t n = 0;
        if (out->gpus[pos].lost || !list_processes(st, pos, &n))
            continue;
        if (n > st->proc_cap)
            n = st->proc_cap;
        const as_proc_info *buf = st->proc_buf;
        for (uint32_t k = 0; k < n; k++) {
            gm_process proc;
            memset(&proc, 0, sizeof proc);
            proc.gpu_index = out->gpus[pos].index;
            proc.pid = buf[k].pid;
            proc.type = GM_PROC_COMPUTE;
            proc.mem_valid = true;
            proc.used_mem_bytes = buf[k].memory_usage.vram_mem;
            gm_snapshot_add_process(out, &proc);
        }
    }
}

/* Opens the library from $GPU_MONITOR_AMD_SMI_LIB, else libamd_smi.so: GM_ENOLIB when it does not
 * load, GM_ENOTSUP when it is another version, GM_EINIT when amdsmi_init fails, GM_ENODEV when
 * it sees no GPU. */
GM_AMD_PROVIDER(gm_provider_amd_smi, "amd_smi", as, as_state);
