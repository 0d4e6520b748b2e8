/* amd_common.c - the part of the AMD library providers that does not depend on the library:
 * loading it once per process, opening, the sample pass over the GPUs (which GPU is lost, when
 * the whole sample fails) and the metrics derived alike by every AMD reader. Kept in one place
 * so that amdsmi and ROCm SMI read GPUs by the same rules, and a fix to one reaches both. */
#include "collect/amd_common.h"

#include "collect/calltime.h"
#include "collect/sysfs.h"
#include "base/error.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *gm_amd_strerror(const gm_amd_lib *lib, int rc)
{
    const char *s = NULL;
    if (lib && lib->status_string && lib->status_string(rc, &s) == 0 && s)
        return s;
    return lib ? lib->unknown_status : "unknown status";
}

bool gm_amd_pass_note(gm_amd_pass *p, const char *fn, int rc, bool soft)
{
    if (rc == 0) {
        p->any_ok = true;
        return true;
    }
    if (!soft && !p->hard_rc) {
        p->hard_rc = rc;
        p->hard_fn = fn;
    }
    return false;
}

/* Resolves each of names (NULL-terminated) from dl into fns, in order: GM_OK, or GM_ENOSYM
 * naming them all when one is missing. */
static int require(void *dl, const char *path, const char *noun, const char *const *names,
                   void **fns, gm_error *err)
{
    bool all = true;
    size_t n = 0;
    for (; names[n]; n++)
        all &= (fns[n] = dlsym(dl, names[n])) != NULL;
    if (all)
        return GM_OK;
    char list[512] = "";
    size_t len = 0;
    for (size_t i = 0; i < n && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s",
                                i == 0       ? ""
                                : i + 1 == n ? " and "
                                             : ", ",
                                names[i]);
    return gm_error_set(err, GM_ENOSYM, "%s does not export %s: not %s?", path, list, noun);
}

/* ---- the library, once per process ---------------------------------------------------------- */

static void lib_forget(gm_amd_lib *L)
{
    if (L->dl)
        dlclose(L->dl);
    L->dl = NULL;
    L->path[0] = '\0';
    L->refs = 0;
    L->shut_down = NULL;
    L->status_string = NULL;
    memset(L->syms, 0, L->syms_size);
}

/* Resolves the library's functions and initialises it: GM_OK, or an error with the library shut
 * down again where it had initialised. */
static int lib_init(gm_amd_lib *L, void *dl, const char *path, gm_error *err)
{
    const char *names[16] = {L->init_name, L->shut_down_name};
    size_t n = 2;
    for (size_t i = 0; L->required[i] && n + 1 < sizeof names / sizeof *names; i++)
        names[n++] = L->required[i];
    void *fns[16];
    int rc = require(dl, path, L->noun, names, fns, err);
    if (rc < 0)
        return rc;
    gm_amd_init_fn init = (gm_amd_init_fn)fns[0];
    gm_amd_void_fn shut_down = (gm_amd_void_fn)fns[1];
    L->status_string = (gm_amd_status_string_fn)dlsym(dl, L->status_name);
    L->resolve(dl, fns + 2);
    int s = GM_TIMED(L->init_name, init(L->init_flags));
    if (s != 0)
        return gm_error_set(err, GM_EINIT, "%s failed: %s (%d)", L->init_name,
                            gm_amd_strerror(L, s), s);
    rc = L->ready ? L->ready(L, path, err) : GM_OK;
    if (rc < 0) {
        GM_TIMED(L->shut_down_name, shut_down());
        return rc;
    }
    L->shut_down = shut_down; /* from here on the last release owes the call */
    return GM_OK;
}

/* Loads and initialises the library at path, or takes a reference on the one already loaded when
 * it is the same. */
static int lib_acquire(gm_amd_lib *L, const char *path, bool explicit_path, gm_error *err)
{
    pthread_mutex_lock(&L->mu);
    int rc = GM_OK;
    if (L->refs > 0) {
        if (explicit_path && strcmp(L->path, path) != 0)
            rc = gm_error_set(err, GM_EBUSY, "%s is already loaded from %s, not %s", L->what,
                              L->path, path);
        else
            L->refs++;
        goto done;
    }
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *why = dlerror();
        char from[80] = "";
        if (explicit_path)
            snprintf(from, sizeof from, " (from %s)", L->env);
        rc = gm_error_set(err, GM_ENOLIB, "cannot load %s library %s%s: %s", L->what, path, from,
                          why ? why : "unknown dlopen error");
        goto done;
    }
    lib_forget(L);
    L->dl = dl;
    snprintf(L->path, sizeof L->path, "%s", path);
    rc = lib_init(L, dl, path, err);
    if (rc == GM_OK)
        L->refs = 1;
    else
        lib_forget(L);
done:
    pthread_mutex_unlock(&L->mu);
    return rc;
}

static void lib_release(gm_amd_lib *L)
{
    pthread_mutex_lock(&L->mu);
    if (L->refs > 0 && --L->refs == 0) {
        if (L->shut_down)
            GM_TIMED(L->shut_down_name, L->shut_down());
        lib_forget(L);
    }
    pthread_mutex_unlock(&L->mu);
}

/* ---- open and close ------------------------------------------------------------------------- */

void gm_amd_close(void *state)
{
    gm_amd_state *st = state;
    if (!st)
        return;
    if (st->ops)
        lib_release(st->ops->lib);
    free(st->proc_buf);
    free(st);
}

int gm_amd_open(const gm_amd_ops *ops, const gm_collector_options *opt, void **state, gm_error *err)
{
    gm_amd_lib *L = ops->lib;
    const char *path = getenv(L->env);
    bool explicit_path = path && *path;
    if (!explicit_path)
        path = L->default_path;
    if (!explicit_path && !GM_TIMED("/sys/class/drm scan", gm_sysfs_amdgpu_bound()))
        return gm_error_set(err, GM_ENODEV, "no GPU driven by amdgpu under %s/sys/class/drm",
                            strcmp(gm_sysfs_root(), "/") == 0 ? "" : gm_sysfs_root());
    gm_amd_state *st = calloc(1, ops->state_size);
    if (!st)
        return gm_error_set(err, GM_ENOMEM, "out of memory opening %s", L->what);
    if (opt && opt->want) {
        st->want_some = true;
        st->want = *opt->want;
    }
    int rc = lib_acquire(L, path, explicit_path, err);
    if (rc < 0) {
        free(st);
        return rc;
    }
    st->ops = ops; /* from here on closing releases the library */
    rc = ops->list(st, err);
    if (rc < 0) {
        gm_amd_close(st);
        return rc;
    }
    if (st->count == 0) {
        gm_amd_close(st);
        return gm_error_set(err, GM_ENODEV, "%s (%s) found no GPU", L->what, path);
    }
    for (unsigned i = 0; i < st->count; i++)
        ops->identity(st, i, &st->gpus[i]);
    ops->driver_version(st);
    *state = st;
    return GM_OK;
}

/* ---- the sample pass ------------------------------------------------------------------------ */

bool gm_amd_wants(const gm_amd_state *st, gm_metric m)
{
    return !st->want_some || gm_metric_set_has(&st->want, m);
}

static bool wants_any(const gm_amd_state *st, const gm_metric *ms, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (gm_amd_wants(st, ms[i]))
            return true;
    return false;
}

#define WANTS_ANY(st, ...)                            \
    wants_any((st), (const gm_metric[]){__VA_ARGS__}, \
              sizeof((gm_metric[]){__VA_ARGS__}) / sizeof(gm_metric))

static void read_temps(gm_amd_state *st, unsigned i, gm_gpu *g, gm_amd_pass *p)
{
    static const struct {
        int sensor;
        gm_metric m;
    } sensors[] = {{GM_AMD_TEMP_EDGE, GM_M_TEMP_EDGE_C},
                   {GM_AMD_TEMP_JUNCTION, GM_M_TEMP_JUNCTION_C},
                   {GM_AMD_TEMP_MEM, GM_M_TEMP_MEM_C}};
    if (!st->ops->temp ||
        !WANTS_ANY(st, GM_M_TEMP_C, GM_M_TEMP_EDGE_C, GM_M_TEMP_JUNCTION_C, GM_M_TEMP_MEM_C))
        return;
    for (size_t k = 0; k < sizeof sensors / sizeof *sensors; k++) {
        double c;
        if (st->ops->temp(st, i, sensors[k].sensor, &c, p))
            gm_gpu_set(g, sensors[k].m, c);
    }
}

static void read_clock(gm_amd_state *st, unsigned i, int type, gm_gpu *g, gm_metric cur_m,
                       gm_metric max_m, gm_amd_pass *p)
{
    double cur = 0, max = 0;
    if (!st->ops->clock || (!gm_amd_wants(st, cur_m) && !gm_amd_wants(st, max_m)) ||
        !st->ops->clock(st, i, type, &cur, &max, p))
        return;
    if (cur)
        gm_gpu_set(g, cur_m, cur);
    if (max)
        gm_gpu_set(g, max_m, max);
}

static void read_gpu(gm_amd_state *st, unsigned i, gm_gpu *g, gm_amd_pass *p)
{
    const gm_amd_ops *o = st->ops;
    const gm_amd_gpu *r = &st->gpus[i];
    g->index = i;
    snprintf(g->vendor, sizeof g->vendor, "AMD");
    snprintf(g->name, sizeof g->name, "%s", r->name);
    snprintf(g->uuid, sizeof g->uuid, "%s", r->uuid);
    snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%s", r->bus_id);
    snprintf(g->serial, sizeof g->serial, "%s", r->serial);
    snprintf(g->vbios, sizeof g->vbios, "%s", r->vbios);
    if (r->have_dev_id)
        gm_gpu_set(g, GM_M_PCI_DEVICE_ID, r->dev_id);

    /* Utilization first: each pass is one read of the GPU. */
    if (o->use)
        o->use(st, i, g, p);
    read_temps(st, i, g, p);
    if (o->power)
        o->power(st, i, g, p);
    uint64_t count = 0;
    float res = 0;
    if (o->energy && gm_amd_wants(st, GM_M_ENERGY_MJ) && o->energy(st, i, &count, &res, p) &&
        res > 0)
        gm_gpu_set(g, GM_M_ENERGY_MJ, (double)count * (double)res / 1e3); /* uJ per count */
    read_clock(st, i, GM_AMD_CLK_GFX, g, GM_M_CLOCK_GR_MHZ, GM_M_CLOCK_MAX_GR_MHZ, p);
    read_clock(st, i, GM_AMD_CLK_MEM, g, GM_M_CLOCK_MEM_MHZ, GM_M_CLOCK_MAX_MEM_MHZ, p);
    int64_t speed;
    uint64_t speed_max;
    if (o->fan && gm_amd_wants(st, GM_M_FAN_PCT) && o->fan(st, i, &speed, &speed_max, p) &&
        speed >= 0)
        gm_amd_set_fan(g, (uint64_t)speed, speed_max);
    if (o->pcie && WANTS_ANY(st, GM_M_PCIE_GEN_CUR, GM_M_PCIE_GEN_MAX, GM_M_PCIE_WIDTH_CUR,
                             GM_M_PCIE_WIDTH_MAX))
        o->pcie(st, i, g, p);
    if (o->ecc && WANTS_ANY(st, GM_M_ECC_CORR_VOL, GM_M_ECC_UNCORR_VOL))
        o->ecc(st, i, g, p);
    gm_amd_derive(g);
}

int gm_amd_sample(void *state, gm_snapshot *out, bool want_procs, gm_error *err)
{
    gm_amd_state *st = state;
    gm_amd_lib *L = st->ops->lib;
    gm_amd_pass first_fail = {0};
    bool any = false;
    for (unsigned i = 0; i < st->count; i++) {
        gm_gpu *g = &out->gpus[i];
        gm_amd_gpu *r = &st->gpus[i];
        gm_amd_pass p = {0};
        read_gpu(st, i, g, &p);
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
                                gm_amd_strerror(L, first_fail.hard_rc), first_fail.hard_rc);
        if (first_fail.hard_rc || out->gpus[0].lost)
            return gm_error_set(err, GM_ELOST, "%s: no GPU answers any more", L->what);
    }
    if (want_procs && st->ops->processes)
        st->ops->processes(st, out);
    return GM_OK;
}

void *gm_amd_proc_room(gm_amd_state *st, uint32_t n, size_t size)
{
    if (st->proc_cap < n) {
        void *b = realloc(st->proc_buf, (size_t)n * size);
        if (!b)
            return NULL;
        st->proc_buf = b;
        st->proc_cap = n;
    }
    return st->proc_buf;
}

void gm_amd_copy_field(char *dst, size_t cap, const char *src, size_t src_len)
{
    size_t n = strnlen(src, src_len);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* ---- derived metrics ------------------------------------------------------------------------ */

void gm_amd_derive(gm_gpu *g)
{
    if (gm_gpu_has(g, GM_M_MEM_TOTAL_BYTES) && gm_gpu_has(g, GM_M_MEM_USED_BYTES) &&
        g->v[GM_M_MEM_TOTAL_BYTES] >= g->v[GM_M_MEM_USED_BYTES])
        gm_gpu_set(g, GM_M_MEM_FREE_BYTES, g->v[GM_M_MEM_TOTAL_BYTES] - g->v[GM_M_MEM_USED_BYTES]);
    if (gm_gpu_has(g, GM_M_POWER_AVG_MW))
        gm_gpu_set(g, GM_M_POWER_MW, g->v[GM_M_POWER_AVG_MW]);
    else if (gm_gpu_has(g, GM_M_POWER_INSTANT_MW))
        gm_gpu_set(g, GM_M_POWER_MW, g->v[GM_M_POWER_INSTANT_MW]);
    if (gm_gpu_has(g, GM_M_TEMP_EDGE_C))
        gm_gpu_set(g, GM_M_TEMP_C, g->v[GM_M_TEMP_EDGE_C]);
    else if (gm_gpu_has(g, GM_M_TEMP_JUNCTION_C))
        gm_gpu_set(g, GM_M_TEMP_C, g->v[GM_M_TEMP_JUNCTION_C]);
    if (gm_gpu_has(g, GM_M_CLOCK_GR_MHZ))
        gm_gpu_set(g, GM_M_CLOCK_SM_MHZ, g->v[GM_M_CLOCK_GR_MHZ]);
    if (gm_gpu_has(g, GM_M_CLOCK_MAX_GR_MHZ))
        gm_gpu_set(g, GM_M_CLOCK_MAX_SM_MHZ, g->v[GM_M_CLOCK_MAX_GR_MHZ]);
}

void gm_amd_set_fan(gm_gpu *g, uint64_t speed, uint64_t max)
{
    if (max && speed <= max)
        gm_gpu_set(g, GM_M_FAN_PCT, (double)(speed * 100 / max));
}
