/* rocm_smi.c - the rocm_smi provider: AMD GPUs read through AMD's ROCm SMI library
 * (librocm_smi64.so.1, Debian's librocm-smi64-1), loaded with dlopen so gpumon runs where it is
 * not installed. Preferred over the amdgpu sysfs reader when it loads: it gives processes with
 * their VRAM (from the KFD) and ECC counts per block. A call that answers NOT_SUPPORTED leaves
 * its metric absent. */
#include "collect/calltime.h"
#include "collect/provider.h"
#include "collect/sysfs.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
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
enum { RS_TEMP_EDGE = 0, RS_TEMP_JUNCTION = 1, RS_TEMP_MEMORY = 2 };
enum { RS_TEMP_CURRENT = 0 };
enum { RS_CLK_SYS = 0, RS_CLK_MEM = 4 };
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

typedef int (*rs_init_fn)(uint64_t);
typedef int (*rs_void_fn)(void);
typedef int (*rs_status_string_fn)(int, const char **);
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

/* The library, loaded and initialised once per process however many collectors open it (the
 * daemon and a one-shot command in the same process share it); shut down with the last. */
typedef struct rs_lib {
    void *dl;
    char path[256];
    unsigned refs;
    const rs_freq_layout *freqs;
    rs_void_fn shut_down;
    rs_status_string_fn status_string;
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
} rs_lib;

static pthread_mutex_t rs_lib_mu = PTHREAD_MUTEX_INITIALIZER;
static rs_lib rs_shared;

typedef struct rs_gpu {
    uint32_t dv; /* the library's device index */
    char bus_id[GM_BUSID_LEN];
    char name[GM_NAME_LEN];
    char uuid[GM_UUID_LEN];
    char serial[GM_SERIAL_LEN];
    char vbios[GM_SERIAL_LEN];
    bool have_dev_id;
    uint16_t dev_id;
    bool ever_ok; /* some call answered in an earlier sample */
} rs_gpu;

typedef struct rs_state {
    rs_lib *lib;
    char driver_version[GM_VERSION_LEN];
    unsigned count;
    rs_gpu gpus[GM_MAX_GPUS];
    bool want_some;
    gm_metric_set want;
    rs_process_info *proc_buf; /* reused between samples */
    uint32_t proc_cap;
} rs_state;

/* What one pass over a GPU learned: whether any call worked, and the first real failure. */
typedef struct rs_pass {
    bool any_ok;
    int hard_rc;
    const char *hard_fn;
} rs_pass;

static const char *rs_strerror(const rs_lib *lib, int rc)
{
    const char *s = NULL;
    if (lib && lib->status_string && lib->status_string(rc, &s) == RS_SUCCESS && s)
        return s;
    return "unknown ROCm SMI status";
}

/* True when rc is a success; otherwise notes a failure that is not "this GPU lacks it". */
static bool rs_ok(rs_pass *p, const char *fn, int rc)
{
    if (rc == RS_SUCCESS) {
        p->any_ok = true;
        return true;
    }
    if (rc != RS_NOT_SUPPORTED && rc != RS_NOT_YET_IMPLEMENTED && rc != RS_PERMISSION &&
        !p->hard_rc) {
        p->hard_rc = rc;
        p->hard_fn = fn;
    }
    return false;
}

/* Calls fn (a symbol that may be missing: then "not supported") timed under its name. */
#define RS_CALL(pass, sym, fnptr, ...) \
    ((fnptr) ? rs_ok((pass), sym, GM_TIMED(sym, (fnptr)(__VA_ARGS__))) : false)

static void lib_release_locked(void)
{
    if (rs_shared.refs == 0 || --rs_shared.refs > 0)
        return;
    if (rs_shared.shut_down)
        GM_TIMED("rsmi_shut_down", rs_shared.shut_down());
    if (rs_shared.dl)
        dlclose(rs_shared.dl);
    memset(&rs_shared, 0, sizeof rs_shared);
}

static void *sym(void *dl, const char *name)
{
    return dlsym(dl, name);
}

/* Loads and initialises the library at path (a reference on the one already loaded when it
 * is the same), into *out. */
static int lib_acquire(const char *path, bool explicit_path, rs_lib **out, gm_error *err)
{
    pthread_mutex_lock(&rs_lib_mu);
    rs_lib *L = &rs_shared;
    int rc = GM_OK;
    if (L->refs > 0) {
        if (explicit_path && strcmp(L->path, path) != 0)
            rc = gm_error_set(err, GM_EBUSY, "ROCm SMI is already loaded from %s, not %s", L->path,
                              path);
        else
            L->refs++;
        goto done;
    }
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *why = dlerror();
        rc = gm_error_set(err, GM_ENOLIB, "cannot load ROCm SMI library %s%s: %s", path,
                          explicit_path ? " (from GPU_MONITOR_ROCM_SMI_LIB)" : "",
                          why ? why : "unknown dlopen error");
        goto done;
    }
    memset(L, 0, sizeof *L);
    L->dl = dl;
    snprintf(L->path, sizeof L->path, "%s", path);
    rs_init_fn init = (rs_init_fn)sym(dl, "rsmi_init");
    rs_void_fn shut_down = (rs_void_fn)sym(dl, "rsmi_shut_down");
    L->num_devices = (rs_count_fn)sym(dl, "rsmi_num_monitor_devices");
    if (!init || !shut_down || !L->num_devices) {
        rc = gm_error_set(err, GM_ENOSYM,
                          "%s does not export rsmi_init, rsmi_shut_down and "
                          "rsmi_num_monitor_devices: not a ROCm SMI library?",
                          path);
        dlclose(dl);
        memset(L, 0, sizeof *L);
        goto done;
    }
    L->status_string = (rs_status_string_fn)sym(dl, "rsmi_status_string");
    L->version_str = (rs_version_str_fn)sym(dl, "rsmi_version_str_get");
    L->name = (rs_str_fn)sym(dl, "rsmi_dev_name_get");
    L->serial = (rs_str32_fn)sym(dl, "rsmi_dev_serial_number_get");
    L->vbios = (rs_str32_fn)sym(dl, "rsmi_dev_vbios_version_get");
    L->unique_id = (rs_u64_fn)sym(dl, "rsmi_dev_unique_id_get");
    L->pci_id = (rs_u64_fn)sym(dl, "rsmi_dev_pci_id_get");
    L->dev_id = (rs_u16_fn)sym(dl, "rsmi_dev_id_get");
    L->busy = (rs_u32_fn)sym(dl, "rsmi_dev_busy_percent_get");
    L->mem_busy = (rs_u32_fn)sym(dl, "rsmi_dev_memory_busy_percent_get");
    L->mem_total = (rs_mem_fn)sym(dl, "rsmi_dev_memory_total_get");
    L->mem_used = (rs_mem_fn)sym(dl, "rsmi_dev_memory_usage_get");
    L->temp = (rs_temp_fn)sym(dl, "rsmi_dev_temp_metric_get");
    L->power_ave = (rs_sensor_u64_fn)sym(dl, "rsmi_dev_power_ave_get");
    L->socket_power = (rs_u64_fn)sym(dl, "rsmi_dev_current_socket_power_get");
    L->power_cap = (rs_sensor_u64_fn)sym(dl, "rsmi_dev_power_cap_get");
    L->energy = (rs_energy_fn)sym(dl, "rsmi_dev_energy_count_get");
    L->fan = (rs_sensor_i64_fn)sym(dl, "rsmi_dev_fan_speed_get");
    L->fan_max = (rs_sensor_u64_fn)sym(dl, "rsmi_dev_fan_speed_max_get");
    L->clk = (rs_clk_fn)sym(dl, "rsmi_dev_gpu_clk_freq_get");
    L->pci_bw = (rs_buf_fn)sym(dl, "rsmi_dev_pci_bandwidth_get");
    L->ecc = (rs_ecc_fn)sym(dl, "rsmi_dev_ecc_count_get");
    L->procs = (rs_procs_fn)sym(dl, "rsmi_compute_process_info_get");
    L->proc_gpus = (rs_proc_gpus_fn)sym(dl, "rsmi_compute_process_gpus_get");
    L->proc_by_dev = (rs_proc_dev_fn)sym(dl, "rsmi_compute_process_info_by_device_get");
    /* The library's own version says which rsmi_frequencies_t it writes; without
     * rsmi_version_get it predates ROCm 6. */
    rs_version_fn version = (rs_version_fn)sym(dl, "rsmi_version_get");
    rs_version v = {0};
    L->freqs = version && version(&v) == RS_SUCCESS && v.major >= 6 ? &rs_freqs_v6 : &rs_freqs_v5;

    int s = GM_TIMED("rsmi_init", init(0));
    if (s != RS_SUCCESS) {
        rc = gm_error_set(err, GM_EINIT, "rsmi_init failed: %s (%d)", rs_strerror(L, s), s);
        dlclose(dl);
        memset(L, 0, sizeof *L);
        goto done;
    }
    L->shut_down = shut_down; /* from here on the last release owes rsmi_shut_down */
    L->refs = 1;
done:
    if (rc == GM_OK)
        *out = L;
    pthread_mutex_unlock(&rs_lib_mu);
    return rc;
}

static void lib_release(void)
{
    pthread_mutex_lock(&rs_lib_mu);
    lib_release_locked();
    pthread_mutex_unlock(&rs_lib_mu);
}

static bool wants(const rs_state *st, gm_metric m)
{
    return !st->want_some || gm_metric_set_has(&st->want, m);
}

/* Identity, read once at open: it is fixed while the driver runs. */
static void read_identity(rs_state *st, rs_gpu *g)
{
    rs_lib *L = st->lib;
    rs_pass p = {0};
    uint64_t bdf = 0, uid = 0;
    if (RS_CALL(&p, "rsmi_dev_pci_id_get", L->pci_id, g->dv, &bdf))
        /* BDFID: domain in bits 63..32, bus 15..8, device 7..3, function 2..0. */
        snprintf(g->bus_id, sizeof g->bus_id, "%04x:%02x:%02x.%x", (unsigned)(bdf >> 32),
                 (unsigned)(bdf >> 8) & 0xff, (unsigned)(bdf >> 3) & 0x1f, (unsigned)bdf & 7);
    char text[256];
    if (RS_CALL(&p, "rsmi_dev_name_get", L->name, g->dv, text, sizeof text)) {
        text[sizeof text - 1] = '\0';
        snprintf(g->name, sizeof g->name, "%s", text);
    }
    /* The unique id the amdgpu driver gives (sysfs unique_id, "%016llx"): the GPU's UUID as the
     * sysfs reader gives it too, so both providers name a GPU alike. */
    if (RS_CALL(&p, "rsmi_dev_unique_id_get", L->unique_id, g->dv, &uid) && uid)
        snprintf(g->uuid, sizeof g->uuid, "%016" PRIx64, uid);
    if (RS_CALL(&p, "rsmi_dev_serial_number_get", L->serial, g->dv, text, sizeof text)) {
        text[sizeof text - 1] = '\0';
        snprintf(g->serial, sizeof g->serial, "%s", text);
    }
    if (RS_CALL(&p, "rsmi_dev_vbios_version_get", L->vbios, g->dv, text, sizeof text)) {
        text[sizeof text - 1] = '\0';
        snprintf(g->vbios, sizeof g->vbios, "%s", text);
    }
    g->have_dev_id = RS_CALL(&p, "rsmi_dev_id_get", L->dev_id, g->dv, &g->dev_id);
}

static void rs_close(void *state)
{
    rs_state *st = state;
    if (!st)
        return;
    if (st->lib)
        lib_release();
    free(st->proc_buf);
    free(st);
}

/* Opens the library from $GPU_MONITOR_ROCM_SMI_LIB, else librocm_smi64.so.1: GM_ENOLIB when it
 * does not load, GM_EINIT when rsmi_init fails, GM_ENODEV when it sees no GPU. The default
 * library is not even loaded where no card is driven by amdgpu: a machine with NVIDIA GPUs only
 * that has it installed pays nothing, and hears nothing of what rsmi_init prints on stderr. */
static int rs_open(const gm_collector_options *opt, void **state, gm_error *err)
{
    const char *path = getenv("GPU_MONITOR_ROCM_SMI_LIB");
    bool explicit_path = path && *path;
    if (!explicit_path)
        path = RS_DEFAULT_LIB;
    if (!explicit_path && !GM_TIMED("/sys/class/drm scan", gm_sysfs_amdgpu_bound()))
        return gm_error_set(err, GM_ENODEV, "no GPU driven by amdgpu under %s/sys/class/drm",
                            strcmp(gm_sysfs_root(), "/") == 0 ? "" : gm_sysfs_root());
    rs_state *st = calloc(1, sizeof *st);
    if (!st)
        return gm_error_set(err, GM_ENOMEM, "out of memory opening ROCm SMI");
    if (opt && opt->want) {
        st->want_some = true;
        st->want = *opt->want;
    }
    int rc = lib_acquire(path, explicit_path, &st->lib, err);
    if (rc < 0) {
        free(st);
        return rc;
    }
    rs_lib *L = st->lib;
    uint32_t n = 0;
    int s = GM_TIMED("rsmi_num_monitor_devices", L->num_devices(&n));
    if (s != RS_SUCCESS) {
        rc = gm_error_set(err, GM_EIO, "rsmi_num_monitor_devices failed: %s (%d)",
                          rs_strerror(L, s), s);
        rs_close(st);
        return rc;
    }
    if (n == 0) {
        rs_close(st);
        return gm_error_set(err, GM_ENODEV, "ROCm SMI (%s) found no GPU", path);
    }
    st->count = n > GM_MAX_GPUS ? GM_MAX_GPUS : n;
    for (unsigned i = 0; i < st->count; i++) {
        st->gpus[i].dv = i;
        read_identity(st, &st->gpus[i]);
    }
    char ver[GM_VERSION_LEN * 2];
    if (L->version_str &&
        GM_TIMED("rsmi_version_str_get", L->version_str(RS_SW_COMP_DRIVER, ver, sizeof ver)) ==
            RS_SUCCESS) {
        ver[sizeof ver - 1] = '\0';
        snprintf(st->driver_version, sizeof st->driver_version, "%s", ver);
    }
    *state = st;
    return GM_OK;
}

/* The layout a zeroed rsmi_frequencies_t was filled in: ROCm 6's starts with a bool (word 0 is
 * 0 or 1), then num_supported (1..33) and current (below it); ROCm 5's with num_supported
 * (1..32) and current below it. The two never both fit a filled table: where neither does, the
 * library's version decides. */
static const rs_freq_layout *freq_layout(const rs_lib *L, const unsigned char *buf)
{
    uint32_t w[3];
    memcpy(w, buf, sizeof w);
    bool v6 = w[0] <= 1 && w[1] >= 1 && w[1] <= 33 && w[2] < w[1];
    bool v5 = w[0] >= 1 && w[0] <= 32 && w[1] < w[0];
    return v6 && !v5 ? &rs_freqs_v6 : v5 && !v6 ? &rs_freqs_v5 : L->freqs;
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

static void read_clock(rs_state *st, rs_pass *p, uint32_t dv, int type, gm_gpu *g, gm_metric cur_m,
                       gm_metric max_m)
{
    rs_lib *L = st->lib;
    if (!wants(st, cur_m) && !wants(st, max_m))
        return;
    rs_freq_buf buf;
    memset(&buf, 0, sizeof buf);
    if (!RS_CALL(p, "rsmi_dev_gpu_clk_freq_get", L->clk, dv, type, buf.bytes))
        return;
    uint64_t cur, max;
    uint32_t at;
    freq_read(freq_layout(L, buf.bytes), buf.bytes, &cur, &max, &at);
    if (cur)
        gm_gpu_set(g, cur_m, (double)cur / 1e6); /* Hz */
    if (max)
        gm_gpu_set(g, max_m, (double)max / 1e6);
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

static void read_pcie(rs_state *st, rs_pass *p, uint32_t dv, gm_gpu *g)
{
    rs_lib *L = st->lib;
    if (!wants(st, GM_M_PCIE_GEN_CUR) && !wants(st, GM_M_PCIE_GEN_MAX) &&
        !wants(st, GM_M_PCIE_WIDTH_CUR) && !wants(st, GM_M_PCIE_WIDTH_MAX))
        return;
    rs_freq_buf buf;
    memset(&buf, 0, sizeof buf);
    if (!RS_CALL(p, "rsmi_dev_pci_bandwidth_get", L->pci_bw, dv, buf.bytes))
        return;
    const rs_freq_layout *lay = freq_layout(L, buf.bytes);
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

static void read_power(rs_state *st, rs_pass *p, uint32_t dv, gm_gpu *g)
{
    rs_lib *L = st->lib;
    uint64_t uw;
    if (wants(st, GM_M_POWER_MW) || wants(st, GM_M_POWER_AVG_MW) ||
        wants(st, GM_M_POWER_INSTANT_MW)) {
        /* Older boards give the average, MI300 only the current socket power. */
        if (RS_CALL(p, "rsmi_dev_power_ave_get", L->power_ave, dv, 0, &uw))
            gm_gpu_set(g, GM_M_POWER_AVG_MW, (double)uw / 1e3);
        if (RS_CALL(p, "rsmi_dev_current_socket_power_get", L->socket_power, dv, &uw))
            gm_gpu_set(g, GM_M_POWER_INSTANT_MW, (double)uw / 1e3);
        if (gm_gpu_has(g, GM_M_POWER_AVG_MW))
            gm_gpu_set(g, GM_M_POWER_MW, g->v[GM_M_POWER_AVG_MW]);
        else if (gm_gpu_has(g, GM_M_POWER_INSTANT_MW))
            gm_gpu_set(g, GM_M_POWER_MW, g->v[GM_M_POWER_INSTANT_MW]);
    }
    if (wants(st, GM_M_POWER_LIMIT_MW) &&
        RS_CALL(p, "rsmi_dev_power_cap_get", L->power_cap, dv, 0, &uw) && uw)
        gm_gpu_set(g, GM_M_POWER_LIMIT_MW, (double)uw / 1e3);
    uint64_t count = 0, ts = 0;
    float res = 0;
    if (wants(st, GM_M_ENERGY_MJ) &&
        RS_CALL(p, "rsmi_dev_energy_count_get", L->energy, dv, &count, &res, &ts) && res > 0)
        gm_gpu_set(g, GM_M_ENERGY_MJ, (double)count * (double)res / 1e3); /* uJ per count */
}

static void read_temps(rs_state *st, rs_pass *p, uint32_t dv, gm_gpu *g)
{
    rs_lib *L = st->lib;
    static const struct {
        uint32_t sensor;
        gm_metric m;
    } sensors[] = {{RS_TEMP_EDGE, GM_M_TEMP_EDGE_C},
                   {RS_TEMP_JUNCTION, GM_M_TEMP_JUNCTION_C},
                   {RS_TEMP_MEMORY, GM_M_TEMP_MEM_C}};
    if (!wants(st, GM_M_TEMP_C) && !wants(st, GM_M_TEMP_EDGE_C) &&
        !wants(st, GM_M_TEMP_JUNCTION_C) && !wants(st, GM_M_TEMP_MEM_C))
        return;
    for (size_t i = 0; i < sizeof sensors / sizeof *sensors; i++) {
        int64_t mc;
        if (RS_CALL(p, "rsmi_dev_temp_metric_get", L->temp, dv, sensors[i].sensor, RS_TEMP_CURRENT,
                    &mc))
            gm_gpu_set(g, sensors[i].m, (double)mc / 1000.0);
    }
    /* As the sysfs reader: the GPU's temperature is the edge's, the junction's on boards
     * without an edge sensor (MI300). */
    if (gm_gpu_has(g, GM_M_TEMP_EDGE_C))
        gm_gpu_set(g, GM_M_TEMP_C, g->v[GM_M_TEMP_EDGE_C]);
    else if (gm_gpu_has(g, GM_M_TEMP_JUNCTION_C))
        gm_gpu_set(g, GM_M_TEMP_C, g->v[GM_M_TEMP_JUNCTION_C]);
}

/* RAS error counts per block since the driver loaded: their sums, and the memory controller's
 * (UMC) as the DRAM location's. */
static void read_ecc(rs_state *st, rs_pass *p, uint32_t dv, gm_gpu *g)
{
    rs_lib *L = st->lib;
    if (!wants(st, GM_M_ECC_CORR_VOL) && !wants(st, GM_M_ECC_UNCORR_VOL))
        return;
    double ce = 0, ue = 0;
    bool any = false;
    for (unsigned b = 0; b < RS_GPU_BLOCK_COUNT && L->ecc; b++) {
        rs_error_count ec;
        memset(&ec, 0, sizeof ec);
        uint64_t block = (uint64_t)1 << b;
        if (!RS_CALL(p, "rsmi_dev_ecc_count_get", L->ecc, dv, block, &ec))
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

static void read_gpu(rs_state *st, const rs_gpu *r, unsigned index, gm_gpu *g, rs_pass *p)
{
    rs_lib *L = st->lib;
    uint32_t dv = r->dv;
    g->index = index;
    snprintf(g->vendor, sizeof g->vendor, "AMD");
    snprintf(g->name, sizeof g->name, "%s", r->name);
    snprintf(g->uuid, sizeof g->uuid, "%s", r->uuid);
    snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%s", r->bus_id);
    snprintf(g->serial, sizeof g->serial, "%s", r->serial);
    snprintf(g->vbios, sizeof g->vbios, "%s", r->vbios);
    if (r->have_dev_id)
        gm_gpu_set(g, GM_M_PCI_DEVICE_ID, r->dev_id);

    uint32_t pct;
    uint64_t total, used;
    /* Utilization first: each pass is one read of the GPU. */
    if (RS_CALL(p, "rsmi_dev_busy_percent_get", L->busy, dv, &pct))
        gm_gpu_set(g, GM_M_UTIL_GPU_PCT, pct);
    if (wants(st, GM_M_UTIL_MEM_PCT) &&
        RS_CALL(p, "rsmi_dev_memory_busy_percent_get", L->mem_busy, dv, &pct))
        gm_gpu_set(g, GM_M_UTIL_MEM_PCT, pct);
    bool have_total =
        RS_CALL(p, "rsmi_dev_memory_total_get", L->mem_total, dv, RS_MEM_TYPE_VRAM, &total);
    bool have_used =
        RS_CALL(p, "rsmi_dev_memory_usage_get", L->mem_used, dv, RS_MEM_TYPE_VRAM, &used);
    if (have_total)
        gm_gpu_set(g, GM_M_MEM_TOTAL_BYTES, (double)total);
    if (have_used)
        gm_gpu_set(g, GM_M_MEM_USED_BYTES, (double)used);
    if (have_total && have_used && total >= used)
        gm_gpu_set(g, GM_M_MEM_FREE_BYTES, (double)(total - used));
    read_temps(st, p, dv, g);
    read_power(st, p, dv, g);
    read_clock(st, p, dv, RS_CLK_SYS, g, GM_M_CLOCK_GR_MHZ, GM_M_CLOCK_MAX_GR_MHZ);
    /* One shader clock (sclk) drives the compute units: graphics and SM clock are the same. */
    if (gm_gpu_has(g, GM_M_CLOCK_GR_MHZ))
        gm_gpu_set(g, GM_M_CLOCK_SM_MHZ, g->v[GM_M_CLOCK_GR_MHZ]);
    if (gm_gpu_has(g, GM_M_CLOCK_MAX_GR_MHZ))
        gm_gpu_set(g, GM_M_CLOCK_MAX_SM_MHZ, g->v[GM_M_CLOCK_MAX_GR_MHZ]);
    read_clock(st, p, dv, RS_CLK_MEM, g, GM_M_CLOCK_MEM_MHZ, GM_M_CLOCK_MAX_MEM_MHZ);
    int64_t speed;
    uint64_t speed_max;
    /* The fan's speed is relative to its maximum (0..255 on most boards). */
    if (wants(st, GM_M_FAN_PCT) && RS_CALL(p, "rsmi_dev_fan_speed_get", L->fan, dv, 0, &speed) &&
        RS_CALL(p, "rsmi_dev_fan_speed_max_get", L->fan_max, dv, 0, &speed_max) && speed_max &&
        speed >= 0 && (uint64_t)speed <= speed_max)
        gm_gpu_set(g, GM_M_FAN_PCT, (double)((uint64_t)speed * 100 / speed_max));
    read_pcie(st, p, dv, g);
    read_ecc(st, p, dv, g);
}

/* The snapshot position of the GPU with device index dv, -1 when not one of ours. */
static int position_of(const rs_state *st, uint32_t dv)
{
    for (unsigned i = 0; i < st->count; i++)
        if (st->gpus[i].dv == dv)
            return (int)i;
    return -1;
}

/* Processes with VRAM on our GPUs, from the KFD through the library: each process once per GPU
 * it uses, with its VRAM there where the library tells it per GPU (ROCm 6), else its total when
 * it uses one GPU only; unknown otherwise. */
static void read_processes(rs_state *st, gm_snapshot *out)
{
    rs_lib *L = st->lib;
    if (!L->procs || !L->proc_gpus)
        return;
    uint32_t n = 0;
    for (int attempt = 0; attempt < 3; attempt++) {
        if (GM_TIMED("rsmi_compute_process_info_get", L->procs(NULL, &n)) != RS_SUCCESS)
            return;
        if (n == 0)
            return;
        if (n + 8 > st->proc_cap) {
            rs_process_info *b = realloc(st->proc_buf, (n + 8) * sizeof *b);
            if (!b)
                return;
            st->proc_buf = b;
            st->proc_cap = n + 8;
        }
        n = st->proc_cap;
        int s = GM_TIMED("rsmi_compute_process_info_get", L->procs(st->proc_buf, &n));
        if (s == RS_SUCCESS)
            break;
        if (s != RS_INSUFFICIENT_SIZE || attempt == 2)
            return;
    }
    for (uint32_t i = 0; i < n; i++) {
        const rs_process_info *pi = &st->proc_buf[i];
        uint32_t dvs[GM_MAX_GPUS], m = GM_MAX_GPUS;
        int s = GM_TIMED("rsmi_compute_process_gpus_get", L->proc_gpus(pi->process_id, dvs, &m));
        if (s != RS_SUCCESS && s != RS_INSUFFICIENT_SIZE) /* ended in between */
            continue;
        if (m > GM_MAX_GPUS)
            m = GM_MAX_GPUS;
        for (uint32_t k = 0; k < m; k++) {
            int pos = position_of(st, dvs[k]);
            if (pos < 0 || out->gpus[pos].lost)
                continue;
            gm_process p;
            memset(&p, 0, sizeof p);
            p.gpu_index = out->gpus[pos].index;
            p.pid = pi->process_id;
            p.type = GM_PROC_COMPUTE;
            rs_process_info one;
            if (L->proc_by_dev) {
                if (GM_TIMED("rsmi_compute_process_info_by_device_get",
                             L->proc_by_dev(pi->process_id, dvs[k], &one)) == RS_SUCCESS) {
                    p.mem_valid = true;
                    p.used_mem_bytes = one.vram_usage;
                }
            } else if (m == 1) {
                p.mem_valid = true;
                p.used_mem_bytes = pi->vram_usage;
            }
            gm_snapshot_add_process(out, &p);
        }
    }
}

static int rs_sample(void *state, gm_snapshot *out, bool want_procs, gm_error *err)
{
    rs_state *st = state;
    rs_pass first_fail = {0};
    bool any = false;
    for (unsigned i = 0; i < st->count; i++) {
        gm_gpu *g = &out->gpus[i];
        rs_gpu *r = &st->gpus[i];
        rs_pass p = {0};
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
                                rs_strerror(st->lib, first_fail.hard_rc), first_fail.hard_rc);
        if (first_fail.hard_rc || out->gpus[0].lost)
            return gm_error_set(err, GM_ELOST, "ROCm SMI: no GPU answers any more");
    }
    if (want_procs)
        read_processes(st, out);
    return GM_OK;
}

const gm_provider gm_provider_rocm_smi = {
    .name = "rocm_smi",
    .vendor = "AMD",
    .open = rs_open,
    .close = rs_close,
    .sample = rs_sample,
};
