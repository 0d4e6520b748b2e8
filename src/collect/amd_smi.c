/* amd_smi.c - the amd_smi provider: AMD GPUs read through AMD's newer SMI library (amdsmi,
 * libamd_smi.so), loaded with dlopen so gpumon runs where it is not installed. Preferred over the
 * ROCm SMI library when it loads. The library's structures changed between ROCm releases and it
 * carries no size in them, so this file declares those of one release (amdsmi 24.6, ROCm 6.2,
 * from its include/amd_smi/amdsmi.h) and refuses a library of any other version rather than
 * misread one: then the rocm_smi provider reads the GPUs. A call the library lacks or answers
 * NOT_SUPPORTED leaves its metric absent. */
#include "collect/calltime.h"
#include "collect/provider.h"
#include "collect/sysfs.h"

#include <dlfcn.h>
#include <pthread.h>
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
enum { AS_TEMP_EDGE = 0, AS_TEMP_HOTSPOT = 1, AS_TEMP_VRAM = 2 };
enum { AS_TEMP_CURRENT = 0 };
enum { AS_CLK_GFX = 0, AS_CLK_MEM = 4 };

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

typedef int (*as_init_fn)(uint64_t);
typedef int (*as_void_fn)(void);
typedef int (*as_status_string_fn)(int, const char **);
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

/* The library, loaded and initialised once per process however many collectors open it; shut
 * down with the last. */
typedef struct as_lib {
    void *dl;
    char path[256];
    unsigned refs;
    as_void_fn shut_down;
    as_status_string_fn status_string;
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
} as_lib;

static pthread_mutex_t as_lib_mu = PTHREAD_MUTEX_INITIALIZER;
static as_lib as_shared;

typedef struct as_gpu {
    as_handle h;
    char bus_id[GM_BUSID_LEN];
    char name[GM_NAME_LEN];
    char uuid[GM_UUID_LEN];
    char serial[GM_SERIAL_LEN];
    bool have_dev_id;
    uint16_t dev_id;
    bool ever_ok; /* some call answered in an earlier sample */
} as_gpu;

typedef struct as_state {
    as_lib *lib;
    char driver_version[GM_VERSION_LEN];
    unsigned count;
    as_gpu gpus[GM_MAX_GPUS];
    bool want_some;
    gm_metric_set want;
    as_proc_info *proc_buf; /* reused between samples */
    uint32_t proc_cap;
} as_state;

/* What one pass over a GPU learned: whether any call worked, and the first real failure. */
typedef struct as_pass {
    bool any_ok;
    int hard_rc;
    const char *hard_fn;
} as_pass;

static const char *as_strerror(const as_lib *lib, int rc)
{
    const char *s = NULL;
    if (lib && lib->status_string && lib->status_string(rc, &s) == AS_SUCCESS && s)
        return s;
    return "unknown amdsmi status";
}

/* True when rc is a success; otherwise notes a failure that is not "this GPU lacks it". */
static bool as_ok(as_pass *p, const char *fn, int rc)
{
    if (rc == AS_SUCCESS) {
        p->any_ok = true;
        return true;
    }
    if (rc != AS_NOT_SUPPORTED && rc != AS_NOT_YET_IMPLEMENTED && rc != AS_NO_PERM && !p->hard_rc) {
        p->hard_rc = rc;
        p->hard_fn = fn;
    }
    return false;
}

/* Calls fn (a symbol that may be missing: then "not supported") timed under its name. */
#define AS_CALL(pass, sym, fnptr, ...) \
    ((fnptr) ? as_ok((pass), sym, GM_TIMED(sym, (fnptr)(__VA_ARGS__))) : false)

static void lib_unload(as_lib *L)
{
    if (L->dl)
        dlclose(L->dl);
    memset(L, 0, sizeof *L);
}

/* Loads and initialises the library at path (a reference on the one already loaded when it is
 * the same), into *out. A library of another version than the structures above is refused. */
static int lib_acquire(const char *path, bool explicit_path, as_lib **out, gm_error *err)
{
    pthread_mutex_lock(&as_lib_mu);
    as_lib *L = &as_shared;
    int rc = GM_OK;
    if (L->refs > 0) {
        if (explicit_path && strcmp(L->path, path) != 0)
            rc = gm_error_set(err, GM_EBUSY, "amdsmi is already loaded from %s, not %s", L->path,
                              path);
        else
            L->refs++;
        goto done;
    }
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *why = dlerror();
        rc = gm_error_set(err, GM_ENOLIB, "cannot load amdsmi library %s%s: %s", path,
                          explicit_path ? " (from GPU_MONITOR_AMD_SMI_LIB)" : "",
                          why ? why : "unknown dlopen error");
        goto done;
    }
    memset(L, 0, sizeof *L);
    L->dl = dl;
    snprintf(L->path, sizeof L->path, "%s", path);
    as_init_fn init = (as_init_fn)dlsym(dl, "amdsmi_init");
    as_void_fn shut_down = (as_void_fn)dlsym(dl, "amdsmi_shut_down");
    as_version_fn version = (as_version_fn)dlsym(dl, "amdsmi_get_lib_version");
    L->sockets = (as_sockets_fn)dlsym(dl, "amdsmi_get_socket_handles");
    L->processors = (as_procs_of_fn)dlsym(dl, "amdsmi_get_processor_handles");
    if (!init || !shut_down || !version || !L->sockets || !L->processors) {
        rc = gm_error_set(err, GM_ENOSYM,
                          "%s does not export amdsmi_init, amdsmi_shut_down, "
                          "amdsmi_get_lib_version, amdsmi_get_socket_handles and "
                          "amdsmi_get_processor_handles: not an amdsmi library?",
                          path);
        lib_unload(L);
        goto done;
    }
    L->status_string = (as_status_string_fn)dlsym(dl, "amdsmi_status_code_to_string");
    L->activity = (as_buf_fn)dlsym(dl, "amdsmi_get_gpu_activity");
    L->vram = (as_buf_fn)dlsym(dl, "amdsmi_get_gpu_vram_usage");
    L->power = (as_buf_fn)dlsym(dl, "amdsmi_get_power_info");
    L->bdf = (as_buf_fn)dlsym(dl, "amdsmi_get_gpu_device_bdf");
    L->asic = (as_buf_fn)dlsym(dl, "amdsmi_get_gpu_asic_info");
    L->board = (as_buf_fn)dlsym(dl, "amdsmi_get_gpu_board_info");
    L->driver = (as_buf_fn)dlsym(dl, "amdsmi_get_gpu_driver_info");
    L->ecc = (as_buf_fn)dlsym(dl, "amdsmi_get_gpu_total_ecc_count");
    L->pcie = (as_buf_fn)dlsym(dl, "amdsmi_get_pcie_info");
    L->uuid = (as_uuid_fn)dlsym(dl, "amdsmi_get_gpu_device_uuid");
    L->temp = (as_temp_fn)dlsym(dl, "amdsmi_get_temp_metric");
    L->energy = (as_energy_fn)dlsym(dl, "amdsmi_get_energy_count");
    L->clk = (as_clk_fn)dlsym(dl, "amdsmi_get_clock_info");
    L->fan = (as_fan_fn)dlsym(dl, "amdsmi_get_gpu_fan_speed");
    L->fan_max = (as_fan_max_fn)dlsym(dl, "amdsmi_get_gpu_fan_speed_max");
    L->proc_list = (as_proc_list_fn)dlsym(dl, "amdsmi_get_gpu_process_list");

    int s = GM_TIMED("amdsmi_init", init(AS_INIT_AMD_GPUS));
    if (s != AS_SUCCESS) {
        rc = gm_error_set(err, GM_EINIT, "amdsmi_init failed: %s (%d)", as_strerror(L, s), s);
        lib_unload(L);
        goto done;
    }
    /* The version answers only once initialised. Room past as_version for a release whose
     * structure is larger: what it writes there is not read. */
    union {
        as_version v;
        unsigned char room[256];
    } ver;
    memset(&ver, 0, sizeof ver);
    s = GM_TIMED("amdsmi_get_lib_version", version(&ver.v));
    if (s != AS_SUCCESS || ver.v.year != AS_VERSION_YEAR || ver.v.major != AS_VERSION_MAJOR) {
        if (s != AS_SUCCESS)
            rc = gm_error_set(err, GM_EINIT, "amdsmi_get_lib_version failed: %s (%d)",
                              as_strerror(L, s), s);
        else
            rc = gm_error_set(err, GM_ENOTSUP,
                              "%s is amdsmi %u.%u.%u; gpumon reads amdsmi %d.%d (ROCm 6.2) only, "
                              "whose structures it knows",
                              path, ver.v.year, ver.v.major, ver.v.minor, AS_VERSION_YEAR,
                              AS_VERSION_MAJOR);
        GM_TIMED("amdsmi_shut_down", shut_down());
        lib_unload(L);
        goto done;
    }
    L->shut_down = shut_down; /* from here on the last release owes amdsmi_shut_down */
    L->refs = 1;
done:
    if (rc == GM_OK)
        *out = L;
    pthread_mutex_unlock(&as_lib_mu);
    return rc;
}

static void lib_release(void)
{
    pthread_mutex_lock(&as_lib_mu);
    if (as_shared.refs > 0 && --as_shared.refs == 0) {
        if (as_shared.shut_down)
            GM_TIMED("amdsmi_shut_down", as_shared.shut_down());
        lib_unload(&as_shared);
    }
    pthread_mutex_unlock(&as_lib_mu);
}

static bool wants(const as_state *st, gm_metric m)
{
    return !st->want_some || gm_metric_set_has(&st->want, m);
}

/* Copies a fixed-size field of the library's into dst, which may not be NUL-terminated. */
static void copy_field(char *dst, size_t cap, const char *src, size_t src_len)
{
    size_t n = strnlen(src, src_len);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Identity, read once at open: it is fixed while the driver runs. */
static void read_identity(as_state *st, as_gpu *g)
{
    as_lib *L = st->lib;
    as_pass p = {0};
    as_bdf bdf = 0;
    if (AS_CALL(&p, "amdsmi_get_gpu_device_bdf", L->bdf, g->h, &bdf))
        snprintf(g->bus_id, sizeof g->bus_id, "%04x:%02x:%02x.%x", (unsigned)(bdf >> 16),
                 (unsigned)(bdf >> 8) & 0xff, (unsigned)(bdf >> 3) & 0x1f, (unsigned)bdf & 7);
    as_asic_info asic;
    memset(&asic, 0, sizeof asic);
    if (AS_CALL(&p, "amdsmi_get_gpu_asic_info", L->asic, g->h, &asic)) {
        copy_field(g->name, sizeof g->name, asic.market_name, sizeof asic.market_name);
        if (asic.device_id && asic.device_id <= 0xffff) {
            g->have_dev_id = true;
            g->dev_id = (uint16_t)asic.device_id;
        }
    }
    as_board_info board;
    memset(&board, 0, sizeof board);
    if (AS_CALL(&p, "amdsmi_get_gpu_board_info", L->board, g->h, &board)) {
        if (!g->name[0])
            copy_field(g->name, sizeof g->name, board.product_name, sizeof board.product_name);
        copy_field(g->serial, sizeof g->serial, board.product_serial, sizeof board.product_serial);
    }
    char uuid[AS_GPU_UUID_SIZE + 26];
    unsigned len = sizeof uuid;
    memset(uuid, 0, sizeof uuid);
    if (AS_CALL(&p, "amdsmi_get_gpu_device_uuid", L->uuid, g->h, &len, uuid))
        copy_field(g->uuid, sizeof g->uuid, uuid, sizeof uuid);
}

static void as_close(void *state)
{
    as_state *st = state;
    if (!st)
        return;
    if (st->lib)
        lib_release();
    free(st->proc_buf);
    free(st);
}

/* Every GPU's handle: the processors of each socket, in the library's order. */
static int list_gpus(as_state *st, gm_error *err)
{
    as_lib *L = st->lib;
    as_handle sockets[AS_MAX_SOCKETS];
    uint32_t ns = AS_MAX_SOCKETS;
    int s = GM_TIMED("amdsmi_get_socket_handles", L->sockets(&ns, sockets));
    if (s != AS_SUCCESS)
        return gm_error_set(err, GM_EIO, "amdsmi_get_socket_handles failed: %s (%d)",
                            as_strerror(L, s), s);
    if (ns > AS_MAX_SOCKETS)
        ns = AS_MAX_SOCKETS;
    for (uint32_t i = 0; i < ns && st->count < GM_MAX_GPUS; i++) {
        as_handle hs[GM_MAX_GPUS];
        uint32_t n = GM_MAX_GPUS - st->count;
        s = GM_TIMED("amdsmi_get_processor_handles", L->processors(sockets[i], &n, hs));
        if (s != AS_SUCCESS)
            return gm_error_set(err, GM_EIO, "amdsmi_get_processor_handles failed: %s (%d)",
                                as_strerror(L, s), s);
        for (uint32_t k = 0; k < n && st->count < GM_MAX_GPUS; k++)
            st->gpus[st->count++].h = hs[k];
    }
    return GM_OK;
}

/* Opens the library from $GPU_MONITOR_AMD_SMI_LIB, else libamd_smi.so: GM_ENOLIB when it does not
 * load, GM_ENOTSUP when it is another version, GM_EINIT when amdsmi_init fails, GM_ENODEV when
 * it sees no GPU. The default library is loaded only where a card is driven by amdgpu. */
static int as_open(const gm_collector_options *opt, void **state, gm_error *err)
{
    const char *path = getenv("GPU_MONITOR_AMD_SMI_LIB");
    bool explicit_path = path && *path;
    if (!explicit_path)
        path = AS_DEFAULT_LIB;
    if (!explicit_path && !GM_TIMED("/sys/class/drm scan", gm_sysfs_amdgpu_bound()))
        return gm_error_set(err, GM_ENODEV, "no GPU driven by amdgpu under %s/sys/class/drm",
                            strcmp(gm_sysfs_root(), "/") == 0 ? "" : gm_sysfs_root());
    as_state *st = calloc(1, sizeof *st);
    if (!st)
        return gm_error_set(err, GM_ENOMEM, "out of memory opening amdsmi");
    if (opt && opt->want) {
        st->want_some = true;
        st->want = *opt->want;
    }
    int rc = lib_acquire(path, explicit_path, &st->lib, err);
    if (rc < 0) {
        free(st);
        return rc;
    }
    rc = list_gpus(st, err);
    if (rc < 0) {
        as_close(st);
        return rc;
    }
    if (st->count == 0) {
        as_close(st);
        return gm_error_set(err, GM_ENODEV, "amdsmi (%s) found no GPU", path);
    }
    for (unsigned i = 0; i < st->count; i++)
        read_identity(st, &st->gpus[i]);
    as_driver_info drv;
    memset(&drv, 0, sizeof drv);
    as_pass p = {0};
    if (AS_CALL(&p, "amdsmi_get_gpu_driver_info", st->lib->driver, st->gpus[0].h, &drv))
        copy_field(st->driver_version, sizeof st->driver_version, drv.driver_version,
                   sizeof drv.driver_version);
    *state = st;
    return GM_OK;
}

static void read_clock(as_state *st, as_pass *p, as_handle h, int type, gm_gpu *g, gm_metric cur_m,
                       gm_metric max_m)
{
    if (!wants(st, cur_m) && !wants(st, max_m))
        return;
    as_clk_info ci;
    memset(&ci, 0, sizeof ci);
    if (!AS_CALL(p, "amdsmi_get_clock_info", st->lib->clk, h, type, &ci))
        return;
    if (ci.clk && ci.clk != AS_NA)
        gm_gpu_set(g, cur_m, ci.clk);
    if (ci.max_clk && ci.max_clk != AS_NA)
        gm_gpu_set(g, max_m, ci.max_clk);
}

static void read_power(as_state *st, as_pass *p, as_handle h, gm_gpu *g)
{
    as_lib *L = st->lib;
    if (wants(st, GM_M_POWER_MW) || wants(st, GM_M_POWER_AVG_MW) ||
        wants(st, GM_M_POWER_INSTANT_MW) || wants(st, GM_M_POWER_LIMIT_MW)) {
        as_power_info pi;
        memset(&pi, 0, sizeof pi);
        if (AS_CALL(p, "amdsmi_get_power_info", L->power, h, &pi)) {
            /* Older boards give the average, MI300 only the current socket power. */
            if (pi.average_socket_power != AS_NA)
                gm_gpu_set(g, GM_M_POWER_AVG_MW, (double)pi.average_socket_power * 1e3);
            if (pi.current_socket_power != AS_NA)
                gm_gpu_set(g, GM_M_POWER_INSTANT_MW, (double)pi.current_socket_power * 1e3);
            if (pi.power_limit && pi.power_limit != AS_NA)
                gm_gpu_set(g, GM_M_POWER_LIMIT_MW, (double)pi.power_limit / 1e3);
        }
        if (gm_gpu_has(g, GM_M_POWER_AVG_MW))
            gm_gpu_set(g, GM_M_POWER_MW, g->v[GM_M_POWER_AVG_MW]);
        else if (gm_gpu_has(g, GM_M_POWER_INSTANT_MW))
            gm_gpu_set(g, GM_M_POWER_MW, g->v[GM_M_POWER_INSTANT_MW]);
    }
    uint64_t count = 0, ts = 0;
    float res = 0;
    if (wants(st, GM_M_ENERGY_MJ) &&
        AS_CALL(p, "amdsmi_get_energy_count", L->energy, h, &count, &res, &ts) && res > 0)
        gm_gpu_set(g, GM_M_ENERGY_MJ, (double)count * (double)res / 1e3); /* uJ per count */
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

static void read_pcie(as_state *st, as_pass *p, as_handle h, gm_gpu *g)
{
    if (!wants(st, GM_M_PCIE_GEN_CUR) && !wants(st, GM_M_PCIE_GEN_MAX) &&
        !wants(st, GM_M_PCIE_WIDTH_CUR) && !wants(st, GM_M_PCIE_WIDTH_MAX))
        return;
    as_pcie_info pi;
    memset(&pi, 0, sizeof pi);
    if (!AS_CALL(p, "amdsmi_get_pcie_info", st->lib->pcie, h, &pi))
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

static void read_temps(as_state *st, as_pass *p, as_handle h, gm_gpu *g)
{
    static const struct {
        int sensor;
        gm_metric m;
    } sensors[] = {{AS_TEMP_EDGE, GM_M_TEMP_EDGE_C},
                   {AS_TEMP_HOTSPOT, GM_M_TEMP_JUNCTION_C},
                   {AS_TEMP_VRAM, GM_M_TEMP_MEM_C}};
    if (!wants(st, GM_M_TEMP_C) && !wants(st, GM_M_TEMP_EDGE_C) &&
        !wants(st, GM_M_TEMP_JUNCTION_C) && !wants(st, GM_M_TEMP_MEM_C))
        return;
    for (size_t i = 0; i < sizeof sensors / sizeof *sensors; i++) {
        int64_t c; /* whole degrees: 24.6 divides the ROCm SMI millidegrees by 1000 */
        if (AS_CALL(p, "amdsmi_get_temp_metric", st->lib->temp, h, sensors[i].sensor,
                    AS_TEMP_CURRENT, &c))
            gm_gpu_set(g, sensors[i].m, (double)c);
    }
    /* As the other AMD readers: the edge's, the junction's on boards without one (MI300). */
    if (gm_gpu_has(g, GM_M_TEMP_EDGE_C))
        gm_gpu_set(g, GM_M_TEMP_C, g->v[GM_M_TEMP_EDGE_C]);
    else if (gm_gpu_has(g, GM_M_TEMP_JUNCTION_C))
        gm_gpu_set(g, GM_M_TEMP_C, g->v[GM_M_TEMP_JUNCTION_C]);
}

static void read_gpu(as_state *st, const as_gpu *r, unsigned index, gm_gpu *g, as_pass *p)
{
    as_lib *L = st->lib;
    as_handle h = r->h;
    g->index = index;
    snprintf(g->vendor, sizeof g->vendor, "AMD");
    snprintf(g->name, sizeof g->name, "%s", r->name);
    snprintf(g->uuid, sizeof g->uuid, "%s", r->uuid);
    snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%s", r->bus_id);
    snprintf(g->serial, sizeof g->serial, "%s", r->serial);
    if (r->have_dev_id)
        gm_gpu_set(g, GM_M_PCI_DEVICE_ID, r->dev_id);

    as_engine_usage u;
    memset(&u, 0, sizeof u);
    if (AS_CALL(p, "amdsmi_get_gpu_activity", L->activity, h, &u)) {
        if (u.gfx_activity != AS_NA)
            gm_gpu_set(g, GM_M_UTIL_GPU_PCT, u.gfx_activity);
        if (u.umc_activity != AS_NA)
            gm_gpu_set(g, GM_M_UTIL_MEM_PCT, u.umc_activity);
    }
    as_vram_usage v;
    memset(&v, 0, sizeof v);
    if (AS_CALL(p, "amdsmi_get_gpu_vram_usage", L->vram, h, &v)) {
        double mib = 1024.0 * 1024.0;
        gm_gpu_set(g, GM_M_MEM_TOTAL_BYTES, v.vram_total * mib);
        gm_gpu_set(g, GM_M_MEM_USED_BYTES, v.vram_used * mib);
        if (v.vram_total >= v.vram_used)
            gm_gpu_set(g, GM_M_MEM_FREE_BYTES, (v.vram_total - v.vram_used) * mib);
    }
    read_temps(st, p, h, g);
    read_power(st, p, h, g);
    read_clock(st, p, h, AS_CLK_GFX, g, GM_M_CLOCK_GR_MHZ, GM_M_CLOCK_MAX_GR_MHZ);
    /* One shader clock drives the compute units: graphics and SM clock are the same. */
    if (gm_gpu_has(g, GM_M_CLOCK_GR_MHZ))
        gm_gpu_set(g, GM_M_CLOCK_SM_MHZ, g->v[GM_M_CLOCK_GR_MHZ]);
    if (gm_gpu_has(g, GM_M_CLOCK_MAX_GR_MHZ))
        gm_gpu_set(g, GM_M_CLOCK_MAX_SM_MHZ, g->v[GM_M_CLOCK_MAX_GR_MHZ]);
    read_clock(st, p, h, AS_CLK_MEM, g, GM_M_CLOCK_MEM_MHZ, GM_M_CLOCK_MAX_MEM_MHZ);
    int64_t speed;
    uint64_t speed_max;
    /* The fan's speed is relative to its maximum (0..255 on most boards). */
    if (wants(st, GM_M_FAN_PCT) && AS_CALL(p, "amdsmi_get_gpu_fan_speed", L->fan, h, 0, &speed) &&
        AS_CALL(p, "amdsmi_get_gpu_fan_speed_max", L->fan_max, h, 0, &speed_max) && speed_max &&
        speed >= 0 && (uint64_t)speed <= speed_max)
        gm_gpu_set(g, GM_M_FAN_PCT, (double)((uint64_t)speed * 100 / speed_max));
    read_pcie(st, p, h, g);
    as_error_count ec;
    memset(&ec, 0, sizeof ec);
    if ((wants(st, GM_M_ECC_CORR_VOL) || wants(st, GM_M_ECC_UNCORR_VOL)) &&
        AS_CALL(p, "amdsmi_get_gpu_total_ecc_count", L->ecc, h, &ec)) {
        gm_gpu_set(g, GM_M_ECC_CORR_VOL, (double)ec.correctable_count);
        gm_gpu_set(g, GM_M_ECC_UNCORR_VOL, (double)ec.uncorrectable_count);
    }
}

/* The processes with VRAM on the GPU at snapshot position pos (the library asks the driver per
 * GPU, so a process on two GPUs is listed under each with its VRAM there). */
static void read_processes(as_state *st, unsigned pos, gm_snapshot *out)
{
    as_lib *L = st->lib;
    uint32_t n = 0;
    for (int attempt = 0; attempt < 3; attempt++) {
        if (st->proc_cap < 16) {
            as_proc_info *b = realloc(st->proc_buf, 16 * sizeof *b);
            if (!b)
                return;
            st->proc_buf = b;
            st->proc_cap = 16;
        }
        n = st->proc_cap;
        memset(st->proc_buf, 0, n * sizeof *st->proc_buf);
        int s = GM_TIMED("amdsmi_get_gpu_process_list",
                         L->proc_list(st->gpus[pos].h, &n, st->proc_buf));
        if (s == AS_SUCCESS)
            break;
        /* Too small: n now says how many there are. */
        if (s != AS_OUT_OF_RESOURCES || attempt == 2 || n <= st->proc_cap)
            return;
        as_proc_info *b = realloc(st->proc_buf, (n + 8) * sizeof *b);
        if (!b)
            return;
        st->proc_buf = b;
        st->proc_cap = n + 8;
    }
    if (n > st->proc_cap)
        n = st->proc_cap;
    for (uint32_t i = 0; i < n; i++) {
        const as_proc_info *pi = &st->proc_buf[i];
        gm_process p;
        memset(&p, 0, sizeof p);
        p.gpu_index = out->gpus[pos].index;
        p.pid = pi->pid;
        p.type = GM_PROC_COMPUTE;
        p.mem_valid = true;
        p.used_mem_bytes = pi->memory_usage.vram_mem;
        gm_snapshot_add_process(out, &p);
    }
}

static int as_sample(void *state, gm_snapshot *out, bool want_procs, gm_error *err)
{
    as_state *st = state;
    as_pass first_fail = {0};
    bool any = false;
    for (unsigned i = 0; i < st->count; i++) {
        gm_gpu *g = &out->gpus[i];
        as_gpu *r = &st->gpus[i];
        as_pass p = {0};
        read_gpu(st, r, i, g, &p);
        /* Gone: every call failed, and not for lack of support; or everything it answered
         * before is now "not supported" (the library's word for a file that vanished). */
        if (!p.any_ok && (p.hard_rc || r->ever_ok)) {
            gm_gpu_clear(g);
            g->lost = true;
            if (!first_fail.hard_fn)
                first_fail = p;
        } else {
            any = true;
        }
        r->ever_ok |= p.any_ok;
    }
    out->gpu_count = st->count;
    if (!out->driver_version[0])
        snprintf(out->driver_version, sizeof out->driver_version, "%s", st->driver_version);
    if (!any && st->count) {
        if (first_fail.hard_fn)
            return gm_error_set(err, GM_ELOST, "%s: %s (%d)", first_fail.hard_fn,
                                as_strerror(st->lib, first_fail.hard_rc), first_fail.hard_rc);
        if (first_fail.hard_rc || out->gpus[0].lost)
            return gm_error_set(err, GM_ELOST, "amdsmi: no GPU answers any more");
    }
    if (want_procs && st->lib->proc_list)
        for (unsigned i = 0; i < st->count; i++)
            if (!out->gpus[i].lost)
                read_processes(st, i, out);
    return GM_OK;
}

const gm_provider gm_provider_amd_smi = {
    .name = "amd_smi",
    .vendor = "AMD",
    .open = as_open,
    .close = as_close,
    .sample = as_sample,
};
