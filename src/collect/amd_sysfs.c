/* amd_sysfs.c - the amdgpu provider: AMD GPUs read from the amdgpu driver's files under
 * /sys/class/drm/cardN/device (docs.kernel.org, "GPU Power/Thermal Controls and Monitoring" and
 * "Misc AMDGPU driver information"), and their processes from the DRM clients' fdinfo
 * ("DRM client usage stats"). No library needed: the fallback where AMD's SMI library is not
 * installed. What a board does not expose stays absent. */
#include "base/clock.h"
#include "collect/amd_common.h"
#include "collect/calltime.h"
#include "collect/provider.h"
#include "collect/sysfs.h"
#include "base/error.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <inttypes.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define AMD_PCI_VENDOR 0x1002u

typedef struct amd_card {
    char dir[512];   /* <root>/sys/class/drm/cardN/device */
    char hwmon[600]; /* its hwmon/hwmonM, "" when none */
    char bus_id[GM_BUSID_LEN];
} amd_card;

/* One process's use of one GPU, summed over its DRM clients there. */
typedef struct amd_use {
    uint32_t pid;
    unsigned card;
    bool mem_valid, busy_valid;
    uint64_t vram_bytes;
    uint64_t busy_ns; /* gfx and compute engine time since the client opened */
    unsigned type;
} amd_use;

#define AMD_MAX_USES 1024

typedef struct amd_state {
    unsigned count;
    amd_card cards[GM_MAX_GPUS];
    /* The previous sample's engine times, for a utilization over the interval between two. */
    amd_use *prev, *cur;
    size_t nprev;
    int64_t prev_ns;
} amd_state;

/* The value of KEY=value in a uevent file's text, "" when absent. */
static void uevent_value(const char *text, const char *key, char *buf, size_t cap)
{
    size_t kl = strlen(key);
    buf[0] = '\0';
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        if (len > kl && strncmp(line, key, kl) == 0 && line[kl] == '=') {
            snprintf(buf, cap, "%.*s", (int)(len - kl - 1), line + kl + 1);
            return;
        }
        line = nl ? nl + 1 : NULL;
    }
}

static void find_hwmon(amd_card *c)
{
    char path[600];
    snprintf(path, sizeof path, "%s/hwmon", c->dir);
    c->hwmon[0] = '\0';
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strncmp(e->d_name, "hwmon", 5) == 0) {
            snprintf(c->hwmon, sizeof c->hwmon, "%s/%s", path, e->d_name);
            break;
        }
    closedir(d);
}

static int by_bus(const void *a, const void *b)
{
    return strcmp(((const amd_card *)a)->bus_id, ((const amd_card *)b)->bus_id);
}

/* The AMD cards under root's /sys/class/drm in PCI bus order, as ROCm numbers them. */
static unsigned scan_cards(amd_card *cards, unsigned cap)
{
    char drm[512];
    if (!gm_sysfs_path(drm, sizeof drm, "/sys/class/drm"))
        return 0;
    DIR *d = opendir(drm);
    if (!d)
        return 0;
    unsigned n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < cap) {
        /* cardN only: cardN-DP-1 and the like are its connectors, renderD* the same GPU. */
        if (strncmp(e->d_name, "card", 4) != 0 || !e->d_name[4] ||
            strspn(e->d_name + 4, "0123456789") != strlen(e->d_name + 4))
            continue;
        amd_card *c = &cards[n];
        memset(c, 0, sizeof *c);
        int len = snprintf(c->dir, sizeof c->dir, "%s/%s/device", drm, e->d_name);
        if (len < 0 || (size_t)len >= sizeof c->dir)
            continue;
        uint64_t vendor;
        if (!gm_sysfs_read_u64(c->dir, "vendor", &vendor) || vendor != AMD_PCI_VENDOR)
            continue;
        char uevent[1024], driver[32];
        if (!gm_sysfs_read_str(c->dir, "uevent", uevent, sizeof uevent))
            continue;
        uevent_value(uevent, "DRIVER", driver, sizeof driver);
        if (strcmp(driver, "amdgpu") != 0) /* radeon, or no driver bound: nothing to read */
            continue;
        uevent_value(uevent, "PCI_SLOT_NAME", c->bus_id, sizeof c->bus_id);
        bool dup = false;
        for (unsigned k = 0; k < n && !dup; k++)
            dup = c->bus_id[0] && strcmp(cards[k].bus_id, c->bus_id) == 0;
        if (dup)
            continue;
        find_hwmon(c);
        n++;
    }
    closedir(d);
    qsort(cards, n, sizeof *cards, by_bus);
    return n;
}

static int amd_open(const gm_collector_options *opt, void **state, gm_error *err)
{
    (void)opt;
    amd_state *st = calloc(1, sizeof *st);
    if (!st)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    st->count = GM_TIMED("/sys/class/drm scan", scan_cards(st->cards, GM_MAX_GPUS));
    if (st->count == 0) {
        free(st);
        return gm_error_set(err, GM_ENODEV, "no GPU driven by amdgpu under %s/sys/class/drm",
                            strcmp(gm_sysfs_root(), "/") == 0 ? "" : gm_sysfs_root());
    }
    *state = st;
    return GM_OK;
}

static void amd_close(void *state)
{
    amd_state *st = state;
    if (!st)
        return;
    free(st->prev);
    free(st->cur);
    free(st);
}

static void set_u64(gm_gpu *g, gm_metric m, const char *dir, const char *name, double scale)
{
    uint64_t v;
    if (dir[0] && gm_sysfs_read_u64(dir, name, &v))
        gm_gpu_set(g, m, (double)v * scale);
}

static void read_temps(const amd_card *c, gm_gpu *g)
{
    if (!c->hwmon[0])
        return;
    for (int i = 1; i <= 3; i++) {
        char in[32], label[32], name[32] = "";
        uint64_t mc;
        snprintf(in, sizeof in, "temp%d_input", i);
        snprintf(label, sizeof label, "temp%d_label", i);
        if (!gm_sysfs_read_u64(c->hwmon, in, &mc))
            continue;
        /* Unlabelled (pre-SOC15 boards) there is only temp1, the edge sensor. */
        if (!gm_sysfs_read_str(c->hwmon, label, name, sizeof name))
            snprintf(name, sizeof name, "%s", i == 1 ? "edge" : "");
        double celsius = (double)mc / 1000.0;
        if (strcmp(name, "edge") == 0)
            gm_gpu_set(g, GM_M_TEMP_EDGE_C, celsius);
        else if (strcmp(name, "junction") == 0)
            gm_gpu_set(g, GM_M_TEMP_JUNCTION_C, celsius);
        else if (strcmp(name, "mem") == 0)
            gm_gpu_set(g, GM_M_TEMP_MEM_C, celsius);
    }
}

static void read_power(const amd_card *c, gm_gpu *g)
{
    if (!c->hwmon[0])
        return;
    /* microwatts; older boards give the average, MI300 and newer kernels the instant reading. */
    set_u64(g, GM_M_POWER_AVG_MW, c->hwmon, "power1_average", 1e-3);
    set_u64(g, GM_M_POWER_INSTANT_MW, c->hwmon, "power1_input", 1e-3);
    set_u64(g, GM_M_POWER_LIMIT_MW, c->hwmon, "power1_cap", 1e-3);
    set_u64(g, GM_M_POWER_MIN_LIMIT_MW, c->hwmon, "power1_cap_min", 1e-3);
    set_u64(g, GM_M_POWER_MAX_LIMIT_MW, c->hwmon, "power1_cap_max", 1e-3);
    set_u64(g, GM_M_POWER_DEFAULT_LIMIT_MW, c->hwmon, "power1_cap_default", 1e-3);
    /* Energy in microjoules, where the board has a counter. */
    set_u64(g, GM_M_ENERGY_MJ, c->hwmon, "energy1_input", 1e-3);
}

static void read_clocks(const amd_card *c, gm_gpu *g)
{
    char text[1024];
    unsigned max, cur;
    uint64_t hz;
    bool have_sclk = false;
    if (c->hwmon[0] && gm_sysfs_read_u64(c->hwmon, "freq1_input", &hz)) {
        gm_gpu_set(g, GM_M_CLOCK_GR_MHZ, (double)hz / 1e6);
        have_sclk = true;
    }
    if (gm_sysfs_read_str(c->dir, "pp_dpm_sclk", text, sizeof text) &&
        gm_sysfs_parse_dpm(text, &max, &cur)) {
        if (max)
            gm_gpu_set(g, GM_M_CLOCK_MAX_GR_MHZ, max);
        if (!have_sclk && cur)
            gm_gpu_set(g, GM_M_CLOCK_GR_MHZ, cur);
    }
    bool have_mclk = false;
    if (c->hwmon[0] && gm_sysfs_read_u64(c->hwmon, "freq2_input", &hz)) {
        gm_gpu_set(g, GM_M_CLOCK_MEM_MHZ, (double)hz / 1e6);
        have_mclk = true;
    }
    if (gm_sysfs_read_str(c->dir, "pp_dpm_mclk", text, sizeof text) &&
        gm_sysfs_parse_dpm(text, &max, &cur)) {
        if (max)
            gm_gpu_set(g, GM_M_CLOCK_MAX_MEM_MHZ, max);
        if (!have_mclk && cur)
            gm_gpu_set(g, GM_M_CLOCK_MEM_MHZ, cur);
    }
}

static void read_pcie(const amd_card *c, gm_gpu *g)
{
    char text[64];
    unsigned gen;
    if (gm_sysfs_read_str(c->dir, "current_link_speed", text, sizeof text) &&
        (gen = gm_sysfs_pcie_gen(text)))
        gm_gpu_set(g, GM_M_PCIE_GEN_CUR, gen);
    if (gm_sysfs_read_str(c->dir, "max_link_speed", text, sizeof text) &&
        (gen = gm_sysfs_pcie_gen(text)))
        gm_gpu_set(g, GM_M_PCIE_GEN_MAX, gen);
    set_u64(g, GM_M_PCIE_WIDTH_CUR, c->dir, "current_link_width", 1);
    set_u64(g, GM_M_PCIE_WIDTH_MAX, c->dir, "max_link_width", 1);
}

/* RAS error counts ("ue: N\nce: M" per block under ras/): their sums since the driver loaded. */
static void read_ras(const amd_card *c, gm_gpu *g)
{
    char path[700];
    snprintf(path, sizeof path, "%s/ras", c->dir);
    DIR *d = opendir(path);
    if (!d)
        return;
    double ue = 0, ce = 0;
    bool any = false;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 10 || strcmp(e->d_name + len - 10, "_err_count") != 0)
            continue;
        char text[128];
        if (!gm_sysfs_read_str(path, e->d_name, text, sizeof text))
            continue;
        unsigned long long u, k;
        if (sscanf(text, "ue: %llu ce: %llu", &u, &k) == 2) {
            ue += (double)u;
            ce += (double)k;
            any = true;
        }
    }
    closedir(d);
    if (any) {
        gm_gpu_set(g, GM_M_ECC_UNCORR_VOL, ue);
        gm_gpu_set(g, GM_M_ECC_CORR_VOL, ce);
    }
}

static int read_card(const amd_card *c, unsigned index, gm_gpu *g)
{
    g->index = index;
    snprintf(g->vendor, sizeof g->vendor, "AMD");
    snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%s", c->bus_id);
    struct stat sb;
    if (stat(c->dir, &sb) != 0) {
        g->lost = true;
        return GM_ELOST;
    }
    /* The board's FRU data (Instinct boards); Radeon boards have none: the name stays empty. */
    gm_sysfs_read_str(c->dir, "product_name", g->name, sizeof g->name);
    gm_sysfs_read_str(c->dir, "product_number", g->board_part_number, sizeof g->board_part_number);
    gm_sysfs_read_str(c->dir, "serial_number", g->serial, sizeof g->serial);
    gm_sysfs_read_str(c->dir, "vbios_version", g->vbios, sizeof g->vbios);
    gm_sysfs_read_str(c->dir, "unique_id", g->uuid, sizeof g->uuid);
    set_u64(g, GM_M_PCI_DEVICE_ID, c->dir, "device", 1);

    set_u64(g, GM_M_UTIL_GPU_PCT, c->dir, "gpu_busy_percent", 1);
    set_u64(g, GM_M_UTIL_MEM_PCT, c->dir, "mem_busy_percent", 1);
    set_u64(g, GM_M_MEM_TOTAL_BYTES, c->dir, "mem_info_vram_total", 1);
    set_u64(g, GM_M_MEM_USED_BYTES, c->dir, "mem_info_vram_used", 1);
    read_temps(c, g);
    read_power(c, g);
    read_clocks(c, g);
    if (c->hwmon[0]) {
        /* pwm1 is the fan's duty cycle, 0..255 (pwm1_max where the board says otherwise). */
        uint64_t pwm, pmax = 255;
        if (gm_sysfs_read_u64(c->hwmon, "pwm1", &pwm)) {
            gm_sysfs_read_u64(c->hwmon, "pwm1_max", &pmax);
            gm_amd_set_fan(g, pwm, pmax);
        }
    }
    read_pcie(c, g);
    read_ras(c, g);
    gm_amd_derive(g);
    return GM_OK;
}

/* ---- processes, from the DRM clients' fdinfo --------------------------------------------- */

static int card_of(const amd_state *st, const char *pdev)
{
    for (unsigned i = 0; i < st->count; i++)
        if (pdev[0] && strcasecmp(st->cards[i].bus_id, pdev) == 0)
            return (int)i;
    return -1;
}

static amd_use *use_of(amd_state *st, size_t *n, uint32_t pid, unsigned card)
{
    for (size_t i = *n; i-- > 0;) {
        if (st->cur[i].pid != pid)
            break; /* one pid's entries are together */
        if (st->cur[i].card == card)
            return &st->cur[i];
    }
    if (*n >= AMD_MAX_USES)
        return NULL;
    amd_use *u = &st->cur[(*n)++];
    memset(u, 0, sizeof *u);
    u->pid = pid;
    u->card = card;
    return u;
}

/* The DRM clients of process pid (its fds open on /dev/dri/renderD* or card*), each counted
 * once however many fds share it, added up per GPU into st->cur. */
static void scan_process(amd_state *st, const char *proc, uint32_t pid, size_t *n)
{
    char dir[600];
    snprintf(dir, sizeof dir, "%s/%u/fd", proc, pid);
    DIR *d = opendir(dir); /* another user's: not readable, skipped */
    if (!d)
        return;
    struct {
        unsigned card;
        uint64_t id;
    } seen[64];
    size_t nseen = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char link[700], target[128];
        snprintf(link, sizeof link, "%s/%s", dir, e->d_name);
        ssize_t len = readlink(link, target, sizeof target - 1);
        if (len <= 0)
            continue;
        target[len] = '\0';
        if (strncmp(target, "/dev/dri/renderD", 16) != 0 &&
            strncmp(target, "/dev/dri/card", 13) != 0)
            continue;
        char info[700], text[4096];
        snprintf(info, sizeof info, "%s/%u/fdinfo/%s", proc, pid, e->d_name);
        if (gm_sysfs_read(info, text, sizeof text) != GM_OK)
            continue;
        gm_drm_fdinfo c;
        gm_sysfs_parse_fdinfo(text, &c);
        int card = card_of(st, c.pdev);
        if (!c.amdgpu || !c.have_id || card < 0)
            continue;
        bool dup = false;
        for (size_t k = 0; k < nseen && !dup; k++)
            dup = seen[k].card == (unsigned)card && seen[k].id == c.id;
        if (dup)
            continue;
        if (nseen < sizeof seen / sizeof *seen) {
            seen[nseen].card = (unsigned)card;
            seen[nseen++].id = c.id;
        }
        amd_use *u = use_of(st, n, pid, (unsigned)card);
        if (!u)
            break;
        if (c.have_vram) {
            u->vram_bytes += c.vram_bytes;
            u->mem_valid = true;
        }
        if (c.have_busy) {
            u->busy_ns += c.busy_ns;
            u->busy_valid = true;
        }
        u->type |= c.gfx ? GM_PROC_GRAPHICS : GM_PROC_COMPUTE;
    }
    closedir(d);
}

static int by_card_pid(const void *a, const void *b)
{
    const amd_use *x = a, *y = b;
    if (x->card != y->card)
        return x->card < y->card ? -1 : 1;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Processes using our GPUs, with the VRAM their DRM clients hold and, from the second sample
 * on, their share of the gfx and compute engines since the previous one. */
static void read_processes(amd_state *st, gm_snapshot *out)
{
    if (!st->cur && !(st->cur = calloc(AMD_MAX_USES, sizeof *st->cur)))
        return;
    if (!st->prev && !(st->prev = calloc(AMD_MAX_USES, sizeof *st->prev)))
        return;
    char proc[512];
    if (!gm_sysfs_path(proc, sizeof proc, "/proc"))
        return;
    DIR *d = opendir(proc);
    if (!d)
        return;
    int64_t now = gm_clock_mono_ns();
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        unsigned long pid = strtoul(e->d_name, &end, 10);
        if (*end || end == e->d_name || pid == 0 || pid > UINT32_MAX)
            continue;
        scan_process(st, proc, (uint32_t)pid, &n);
    }
    closedir(d);
    qsort(st->cur, n, sizeof *st->cur, by_card_pid);
    double elapsed = (double)(now - st->prev_ns);
    for (size_t i = 0; i < n; i++) {
        const amd_use *u = &st->cur[i];
        if (out->gpus[u->card].lost)
            continue;
        gm_process p;
        memset(&p, 0, sizeof p);
        p.gpu_index = out->gpus[u->card].index;
        p.pid = u->pid;
        p.type = u->type ? u->type : GM_PROC_COMPUTE;
        p.mem_valid = u->mem_valid;
        p.used_mem_bytes = u->vram_bytes;
        for (size_t k = 0; k < st->nprev && u->busy_valid && elapsed > 0; k++) {
            const amd_use *q = &st->prev[k];
            if (q->pid != u->pid || q->card != u->card || !q->busy_valid || q->busy_ns > u->busy_ns)
                continue;
            double pct = (double)(u->busy_ns - q->busy_ns) * 100.0 / elapsed;
            p.util_pct[GM_PROC_UTIL_SM] = (uint8_t)(pct > 100 ? 100 : pct + 0.5);
            p.util_valid |= 1u << GM_PROC_UTIL_SM;
            break;
        }
        gm_snapshot_add_process(out, &p);
    }
    amd_use *t = st->prev;
    st->prev = st->cur;
    st->cur = t;
    st->nprev = n;
    st->prev_ns = now;
}

static int amd_sample(void *state, gm_snapshot *out, bool want_procs, gm_error *err)
{
    (void)err;
    amd_state *st = state;
    for (unsigned i = 0; i < st->count; i++)
        GM_TIMED("amdgpu sysfs", read_card(&st->cards[i], i, &out->gpus[i]));
    out->gpu_count = st->count;
    if (want_procs)
        GM_TIMED("/proc/PID/fdinfo (DRM clients)", (read_processes(st, out), 0));
    return GM_OK;
}

const gm_provider gm_provider_amdgpu = {
    .name = "amdgpu",
    .vendor = "AMD",
    .open = amd_open,
    .close = amd_close,
    .sample = amd_sample,
};
