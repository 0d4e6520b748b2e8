/* fake_nvml.c - a stand-in libnvidia-ml.so.1 whose GPUs come from a JSON scenario file, so the NVML
 * provider is tested through the same dlopen path as the real driver (format:
 * tests/fakes/README.md). */
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Built twice: FAKE_NVML_OLD_DRIVER=1 leaves out every symbol a newer driver added, so the
 * provider's fallbacks are exercised against a library that truly lacks them. */
#ifndef FAKE_NVML_OLD_DRIVER
#define FAKE_NVML_OLD_DRIVER 0
#endif

/* nvmlReturn_t values (nvml.h). */
enum {
    RC_SUCCESS = 0,
    RC_UNINITIALIZED = 1,
    RC_INVALID_ARGUMENT = 2,
    RC_NOT_SUPPORTED = 3,
    RC_NO_PERMISSION = 4,
    RC_NOT_FOUND = 6,
    RC_INSUFFICIENT_SIZE = 7,
    RC_GPU_IS_LOST = 15,
    RC_ARGUMENT_VERSION_MISMATCH = 25,
    RC_UNKNOWN = 999,
};

#define FAKE_MEMORY_V2_VERSION   0x02000028u /* sizeof(nvmlMemory_v2_t) | 2 << 24 */
#define FAKE_VALUE_NOT_AVAILABLE ((unsigned long long)-1)

/* Layouts as in nvml.h (x86_64). */
typedef struct {
    unsigned gpu, memory;
} fake_utilization;

typedef struct {
    unsigned long long total, free, used;
} fake_memory_v1;

typedef struct {
    unsigned version;
    unsigned long long total, reserved, free, used;
} fake_memory_v2;

typedef struct {
    char busIdLegacy[16];
    unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} fake_pci_info;

typedef struct {
    unsigned pid;
    unsigned long long usedGpuMemory;
} fake_process_v1;

typedef struct {
    unsigned pid;
    unsigned long long usedGpuMemory;
    unsigned gpuInstanceId, computeInstanceId;
} fake_process_v2;

/* A device handle points at one of these. */
typedef struct fake_gpu {
    json_t *j; /* the scenario object of this GPU (borrowed from the root) */
    unsigned index;
    unsigned long
        util_calls; /* nvmlDeviceGetUtilizationRates calls; drives arrays and lost_after */
    bool lost;
    bool grown; /* processes_grow already applied */
    unsigned grown_count;
    size_t xid_delivered; /* entries of "xid" already given to nvmlEventSetWait */
    bool xid_registered;  /* nvmlDeviceRegisterEvents asked for XID */
} fake_gpu;

typedef fake_gpu *nvmlDevice_t;

/* A MIG device's handle points at one of these (never at a fake_gpu). */
typedef struct fake_mig {
    fake_gpu *parent;
    const char *uuid; /* borrowed from the scenario */
    json_t *j;        /* the entry when it is an object (a MIG device to enumerate), else NULL */
    unsigned slot;    /* its index among the parent's enumerable MIG devices */
} fake_mig;

static struct {
    unsigned refcount; /* nvmlInit minus nvmlShutdown, as the real library counts */
    json_t *root;
    fake_gpu *gpus;
    unsigned n;
    fake_mig *migs; /* every GPU's "mig_devices", in order */
    unsigned nmig;
} F;

/* Call counters, exposed to tests through fake_nvml_calls(). */
static struct {
    const char *fn;
    unsigned long n;
} counters[192];

/* The XID event thread of the provider calls in while the sampler does: the counters, the
 * read numbers and the event bookkeeping are kept under this lock. */
static pthread_mutex_t fake_mu = PTHREAD_MUTEX_INITIALIZER;
/* Broadcast under fake_mu when what makes an XID due moves (a GPU's utilisation reads), so
 * nvmlEventSetWait blocks as the real one does instead of polling: a poll would be CPU the
 * daemon never spends on a real driver. */
static pthread_cond_t fake_event_cv = PTHREAD_COND_INITIALIZER;

static void count_call_locked(const char *fn);
static void cost_apply(const char *fn);

/* Every entry point starts here: counted, then made to cost what the cost profile says. */
static void count_call(const char *fn)
{
    pthread_mutex_lock(&fake_mu);
    count_call_locked(fn);
    pthread_mutex_unlock(&fake_mu);
    cost_apply(fn);
}

static void count_call_locked(const char *fn)
{
    for (size_t i = 0; i < sizeof counters / sizeof *counters; i++) {
        if (!counters[i].fn)
            counters[i].fn = fn;
        if (strcmp(counters[i].fn, fn) == 0) {
            counters[i].n++;
            return;
        }
    }
}

/* Test hook: how many times NVML function fn was called since the library was loaded. */
unsigned long fake_nvml_calls(const char *fn)
{
    unsigned long n = 0;
    pthread_mutex_lock(&fake_mu);
    for (size_t i = 0; i < sizeof counters / sizeof *counters && counters[i].fn; i++)
        if (strcmp(counters[i].fn, fn) == 0)
            n = counters[i].n;
    pthread_mutex_unlock(&fake_mu);
    return n;
}

/* ---- cost model ---------------------------------------------------------------------------- */

/* What a call costs, so that the fake takes the time a real driver takes: CPU burnt on the
 * calling thread (a busy loop on its CPU clock), then wall latency on top (a sleep), and for the
 * first call of a function (nvmlInit, the first device open) other figures. From the JSON file
 * GM_FAKE_NVML_COSTS names and the scenario's "costs" object (same shape, read at nvmlInit, its
 * entries win); none: every call is free (tests/fakes/README.md). */
typedef struct fake_cost {
    char *fn; /* "*": every function without its own entry */
    long long cpu_ns, wall_ns, first_cpu_ns, first_wall_ns;
    bool called;
} fake_cost;

static struct {
    pthread_once_t once;
    fake_cost *c;
    size_t n;
} costs = {.once = PTHREAD_ONCE_INIT};

static long long cost_us(json_t *o, const char *key, long long def)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) && json_number_value(v) >= 0 ? (long long)(json_number_value(v) * 1e3)
                                                          : def;
}

/* Adds (or replaces) the entries of a {"calls": {fn: {cpu_us, wall_us, first_cpu_us,
 * first_wall_us}}} object. Caller holds fake_mu, or runs before any other thread can call. */
static void costs_add(json_t *root)
{
    json_t *calls = json_object_get(root, "calls"), *o;
    const char *fn;
    json_object_foreach(calls, fn, o)
    {
        if (!json_is_object(o))
            continue;
        fake_cost *e = NULL;
        for (size_t i = 0; i < costs.n && !e; i++)
            if (strcmp(costs.c[i].fn, fn) == 0)
                e = &costs.c[i];
        if (!e) {
            fake_cost *grown = realloc(costs.c, (costs.n + 1) * sizeof *grown);
            if (!grown)
                return;
            costs.c = grown;
            e = &costs.c[costs.n];
            memset(e, 0, sizeof *e);
            if (!(e->fn = strdup(fn)))
                return;
            costs.n++;
        }
        e->cpu_ns = cost_us(o, "cpu_us", 0);
        e->wall_ns = cost_us(o, "wall_us", 0);
        e->first_cpu_ns = cost_us(o, "first_cpu_us", e->cpu_ns);
        e->first_wall_ns = cost_us(o, "first_wall_us", e->wall_ns);
    }
}

static void costs_load_env(void)
{
    const char *path = getenv("GM_FAKE_NVML_COSTS");
    if (!path || !*path)
        return;
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (!root)
        fprintf(stderr, "fake_nvml: cost profile %s: %s (line %d)\n", path, jerr.text, jerr.line);
    costs_add(root);
    json_decref(root);
}

/* The profile lives as long as the library: freed when it is unloaded. */
__attribute__((destructor)) static void costs_free(void)
{
    for (size_t i = 0; i < costs.n; i++)
        free(costs.c[i].fn);
    free(costs.c);
    costs.c = NULL;
    costs.n = 0;
}

static long long thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void cost_apply(const char *fn)
{
    pthread_once(&costs.once, costs_load_env);
    long long cpu = 0, wall = 0;
    pthread_mutex_lock(&fake_mu);
    fake_cost *e = NULL, *any = NULL;
    for (size_t i = 0; i < costs.n && !e; i++) {
        if (strcmp(costs.c[i].fn, fn) == 0)
            e = &costs.c[i];
        else if (strcmp(costs.c[i].fn, "*") == 0)
            any = &costs.c[i];
    }
    if (!e)
        e = any;
    if (e) {
        bool first = e != any && !e->called;
        e->called = true;
        cpu = first ? e->first_cpu_ns : e->cpu_ns;
        wall = first ? e->first_wall_ns : e->wall_ns;
    }
    pthread_mutex_unlock(&fake_mu);
    if (cpu > 0) {
        long long until = thread_cpu_ns() + cpu;
        while (thread_cpu_ns() < until)
            ;
    }
    if (wall > 0) {
        struct timespec ts = {(time_t)(wall / 1000000000LL), (long)(wall % 1000000000LL)};
        while (nanosleep(&ts, &ts) != 0)
            ;
    }
}

/* Test hook: nvmlDeviceGetUtilizationRates calls for GPU index since the last nvmlInit. */
unsigned long fake_nvml_util_calls(unsigned index)
{
    return index < F.n ? F.gpus[index].util_calls : 0;
}

/* Test hook: outstanding nvmlInit references (0 once every open was closed). */
unsigned fake_nvml_refcount(void)
{
    return F.refcount;
}

/* Used when GM_FAKE_NVML_SCENARIO is unset: one GPU with every metric. */
static const char default_scenario[] =
    "{\"gpus\":[{\"name\":\"NVIDIA Fake GPU\","
    "\"uuid\":\"GPU-00000000-0000-0000-0000-000000000000\",\"pci_bus_id\":\"00000000:01:00.0\","
    "\"util_gpu\":10,\"util_mem\":5,\"enc\":0,\"dec\":0,\"mem_total\":17179869184,"
    "\"mem_used\":1073741824,\"mem_free\":15837691904,\"mem_reserved\":268435456,\"temp\":40,"
    "\"power_mw\":50000,\"power_limit_mw\":250000,\"energy_mj\":1000000,\"clock_gr\":1200,"
    "\"clock_sm\":1200,\"clock_mem\":5000,\"clock_max_gr\":1800,\"clock_max_sm\":1800,"
    "\"clock_max_mem\":5001,\"fan\":30,\"pcie_gen\":4,\"pcie_gen_max\":4,\"pcie_width\":16,"
    "\"pcie_width_max\":16,\"pcie_tx\":1000,\"pcie_rx\":2000,\"pstate\":0,\"throttle\":0,"
    "\"persistence\":1}]}";

static void unload(void)
{
    json_decref(F.root);
    free(F.gpus);
    free(F.migs);
    F.root = NULL;
    F.gpus = NULL;
    F.migs = NULL;
    F.n = F.nmig = 0;
}

static int load(void)
{
    const char *path = getenv("GM_FAKE_NVML_SCENARIO");
    json_error_t jerr;
    json_t *root =
        path && *path ? json_load_file(path, 0, &jerr) : json_loads(default_scenario, 0, &jerr);
    if (!root || !json_is_object(root)) {
        fprintf(stderr, "fake_nvml: scenario %s: %s (line %d)\n", path ? path : "(default)",
                root ? "not an object" : jerr.text, root ? 0 : jerr.line);
        json_decref(root);
        return RC_UNKNOWN;
    }
    json_t *ie = json_object_get(root, "init_error");
    if (json_is_integer(ie) && json_integer_value(ie) != 0) {
        int rc = (int)json_integer_value(ie);
        json_decref(root);
        return rc;
    }
    json_t *gpus = json_object_get(root, "gpus");
    size_t n = json_is_array(gpus) ? json_array_size(gpus) : 0;
    F.gpus = calloc(n ? n : 1, sizeof *F.gpus);
    if (!F.gpus) {
        json_decref(root);
        return RC_UNKNOWN;
    }
    F.root = root;
    F.n = (unsigned)n;
    json_t *sc = json_object_get(root, "costs");
    if (json_is_object(sc)) {
        pthread_once(&costs.once, costs_load_env);
        pthread_mutex_lock(&fake_mu);
        costs_add(sc);
        pthread_mutex_unlock(&fake_mu);
    }
    size_t nmig = 0;
    for (unsigned i = 0; i < F.n; i++) {
        F.gpus[i].j = json_array_get(gpus, i);
        F.gpus[i].index = i;
        json_t *m = json_object_get(F.gpus[i].j, "mig_devices");
        nmig += json_is_array(m) ? json_array_size(m) : 0;
    }
    F.migs = calloc(nmig ? nmig : 1, sizeof *F.migs);
    if (!F.migs) {
        unload();
        return RC_UNKNOWN;
    }
    for (unsigned i = 0; i < F.n; i++) {
        json_t *m = json_object_get(F.gpus[i].j, "mig_devices"), *u;
        size_t k;
        unsigned slot = 0;
        json_array_foreach(m, k, u)
        {
            if (json_is_string(u))
                F.migs[F.nmig++] = (fake_mig){&F.gpus[i], json_string_value(u), NULL, 0};
            else if (json_is_object(u) && json_is_string(json_object_get(u, "uuid")))
                F.migs[F.nmig++] = (fake_mig){
                    &F.gpus[i], json_string_value(json_object_get(u, "uuid")), u, slot++};
        }
    }
    return RC_SUCCESS;
}

static int do_init(const char *fn)
{
    count_call(fn);
    if (F.refcount > 0) {
        F.refcount++;
        return RC_SUCCESS;
    }
    int rc = load();
    if (rc == RC_SUCCESS)
        F.refcount = 1;
    return rc;
}

#if !FAKE_NVML_OLD_DRIVER
int nvmlInit_v2(void)
{
    return do_init(__func__);
}
#endif

int nvmlInit(void)
{
    return do_init(__func__);
}

int nvmlShutdown(void)
{
    count_call(__func__);
    if (F.refcount == 0)
        return RC_UNINITIALIZED;
    if (--F.refcount == 0)
        unload();
    return RC_SUCCESS;
}

/* Strings as the real library words them. */
const char *nvmlErrorString(int rc)
{
    switch (rc) {
    case 0:
        return "Success";
    case 1:
        return "Uninitialized";
    case 2:
        return "Invalid Argument";
    case 3:
        return "Not Supported";
    case 4:
        return "Insufficient Permissions";
    case 5:
        return "Already Initialized";
    case 6:
        return "Not Found";
    case 7:
        return "Insufficient Size";
    case 8:
        return "Insufficient External Power";
    case 9:
        return "Driver Not Loaded";
    case 10:
        return "Timeout";
    case 11:
        return "Interrupt request issue";
    case 12:
        return "NVML Shared Library Not Found";
    case 13:
        return "Function Not Found";
    case 14:
        return "Corrupted infoROM";
    case 15:
        return "GPU is lost";
    case 16:
        return "GPU requires restart";
    case 17:
        return "The operating system has blocked the request.";
    case 18:
        return "RM has detected an NVML/RM version mismatch.";
    case 19:
        return "In use by another client";
    case 20:
        return "Insufficient Memory";
    case 21:
        return "No data";
    case 25:
        return "Argument version mismatch";
    case 26:
        return "Deprecated";
    case 27:
        return "Not Ready";
    case 28:
        return "GPU not found";
    case 29:
        return "Invalid state";
    default:
        return "Unknown Error";
    }
}

/* ---- scenario lookups ------------------------------------------------------------------- */

static bool list_has(json_t *list, const char *a, const char *b)
{
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v)
    {
        const char *s = json_string_value(v);
        if (s && (strcmp(s, a) == 0 || (b && strcmp(s, b) == 0) || strcmp(s, "*") == 0))
            return true;
    }
    return false;
}

/* The return code a metric call should give before any value is read: lost, an injected error
 * ("errors", "unsupported", "no_permission" matched by key, group or "*"), else success. */
static int call_status(const fake_gpu *g, const char *key, const char *group)
{
    if (g->lost)
        return RC_GPU_IS_LOST;
    json_t *errs = json_object_get(g->j, "errors");
    const char *names[] = {key, group, "*"};
    for (size_t i = 0; i < 3; i++) {
        json_t *e = names[i] ? json_object_get(errs, names[i]) : NULL;
        if (json_is_integer(e))
            return (int)json_integer_value(e);
    }
    if (list_has(json_object_get(g->j, "unsupported"), key, group))
        return RC_NOT_SUPPORTED;
    if (list_has(json_object_get(g->j, "no_permission"), key, group))
        return RC_NO_PERMISSION;
    return RC_SUCCESS;
}

/* Picks element N % len of an array value, N being the current read of this GPU. */
static json_t *current(const fake_gpu *g, json_t *v)
{
    if (!json_is_array(v))
        return v;
    size_t len = json_array_size(v);
    if (len == 0)
        return NULL;
    unsigned long n = g->util_calls ? g->util_calls - 1 : 0;
    return json_array_get(v, n % len);
}

/* Reads a numeric field; RC_NOT_SUPPORTED when the scenario leaves it out or null. */
static int num(const fake_gpu *g, const char *key, unsigned long long *out)
{
    json_t *v = current(g, json_object_get(g->j, key));
    if (json_is_integer(v)) {
        *out = (unsigned long long)json_integer_value(v);
        return RC_SUCCESS;
    }
    if (json_is_real(v)) {
        *out = (unsigned long long)json_real_value(v);
        return RC_SUCCESS;
    }
    return RC_NOT_SUPPORTED;
}

/* The common path of a one-value metric call. */
static int metric(nvmlDevice_t d, const char *key, const char *group, unsigned long long *out)
{
    int rc = call_status(d, key, group);
    return rc != RC_SUCCESS ? rc : num(d, key, out);
}

static bool valid_device(nvmlDevice_t d)
{
    return F.refcount > 0 && d && d >= F.gpus && d < F.gpus + F.n;
}

/* The MIG device a handle points at, NULL when it is not a MIG device's handle. */
static fake_mig *as_mig(nvmlDevice_t d)
{
    fake_mig *m = (fake_mig *)(void *)d;
    return F.refcount > 0 && m && m >= F.migs && m < F.migs + F.nmig ? m : NULL;
}

/* A numeric field of a MIG device's entry; RC_NOT_SUPPORTED when left out. */
static int mig_num(const fake_mig *m, const char *key, unsigned long long *out)
{
    json_t *v = m->j ? json_object_get(m->j, key) : NULL;
    if (!json_is_integer(v))
        return RC_NOT_SUPPORTED;
    *out = (unsigned long long)json_integer_value(v);
    return RC_SUCCESS;
}

/* Whether the MIG device was destroyed: "gone_after": N on its entry removes it after its
 * GPU's Nth read (its handle then answers INVALID_ARGUMENT, as a stale one does). */
static bool mig_gone(const fake_mig *m)
{
    json_t *g = m->j ? json_object_get(m->j, "gone_after") : NULL;
    return json_is_integer(g) && m->parent->util_calls > (unsigned long)json_integer_value(g);
}

/* Its memory: total, used and free as the entry gives them, reserved 0. */
static int mig_memory(const fake_mig *m, unsigned long long *total, unsigned long long *free_b,
                      unsigned long long *used)
{
    if (m->parent->lost)
        return RC_GPU_IS_LOST;
    if (mig_gone(m))
        return RC_INVALID_ARGUMENT;
    if (mig_num(m, "mem_total", total) || mig_num(m, "mem_used", used) ||
        mig_num(m, "mem_free", free_b))
        return RC_NOT_SUPPORTED;
    return RC_SUCCESS;
}

static int u32_metric(const char *fn, nvmlDevice_t d, const char *key, const char *group,
                      unsigned *out)
{
    count_call(fn);
    if (!valid_device(d) || !out)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    unsigned long long v;
    int rc = metric(d, key, group, &v);
    if (rc == RC_SUCCESS)
        *out = (unsigned)v;
    return rc;
}

static int u64_metric(const char *fn, nvmlDevice_t d, const char *key, const char *group,
                      unsigned long long *out)
{
    count_call(fn);
    if (!valid_device(d) || !out)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    return metric(d, key, group, out);
}

static int copy_out(const char *s, char *buf, unsigned len)
{
    if (!buf)
        return RC_INVALID_ARGUMENT;
    if (strlen(s) + 1 > len)
        return RC_INSUFFICIENT_SIZE;
    memcpy(buf, s, strlen(s) + 1);
    return RC_SUCCESS;
}

/* ---- system ------------------------------------------------------------------------------ */

/* A version string: the scenario's when given, the default when left out, unsupported when null. */
static int sys_string(const char *fn, const char *key, const char *def, char *buf, unsigned len)
{
    count_call(fn);
    if (F.refcount == 0)
        return RC_UNINITIALIZED;
    json_t *v = json_object_get(F.root, key);
    if (json_is_null(v))
        return RC_NOT_SUPPORTED;
    return copy_out(json_is_string(v) ? json_string_value(v) : def, buf, len);
}

int nvmlSystemGetDriverVersion(char *version, unsigned length)
{
    return sys_string(__func__, "driver_version", "550.54.15", version, length);
}

int nvmlSystemGetNVMLVersion(char *version, unsigned length)
{
    return sys_string(__func__, "nvml_version", "12.550.54.15", version, length);
}

static int cuda_version(const char *fn, int *out)
{
    count_call(fn);
    if (F.refcount == 0)
        return RC_UNINITIALIZED;
    if (!out)
        return RC_INVALID_ARGUMENT;
    json_t *v = json_object_get(F.root, "cuda_version");
    if (json_is_null(v))
        return RC_NOT_SUPPORTED;
    *out = json_is_integer(v) ? (int)json_integer_value(v) : 12040;
    return RC_SUCCESS;
}

int nvmlSystemGetCudaDriverVersion(int *v)
{
    return cuda_version(__func__, v);
}

#if !FAKE_NVML_OLD_DRIVER
int nvmlSystemGetCudaDriverVersion_v2(int *v)
{
    return cuda_version(__func__, v);
}
#endif

/* ---- enumeration and identity -------------------------------------------------------------- */

static int device_count(const char *fn, unsigned *count)
{
    count_call(fn);
    if (F.refcount == 0)
        return RC_UNINITIALIZED;
    if (!count)
        return RC_INVALID_ARGUMENT;
    *count = F.n;
    return RC_SUCCESS;
}

#if !FAKE_NVML_OLD_DRIVER
int nvmlDeviceGetCount_v2(unsigned *count)
{
    return device_count(__func__, count);
}
#endif

int nvmlDeviceGetCount(unsigned *count)
{
    return device_count(__func__, count);
}

static int handle_by_index(const char *fn, unsigned index, nvmlDevice_t *out)
{
    count_call(fn);
    if (F.refcount == 0)
        return RC_UNINITIALIZED;
    if (index >= F.n || !out)
        return RC_INVALID_ARGUMENT;
    if (F.gpus[index].lost)
        return RC_GPU_IS_LOST;
    *out = &F.gpus[index];
    return RC_SUCCESS;
}

#if !FAKE_NVML_OLD_DRIVER
int nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t *out)
{
    return handle_by_index(__func__, index, out);
}
#endif

int nvmlDeviceGetHandleByIndex(unsigned index, nvmlDevice_t *out)
{
    return handle_by_index(__func__, index, out);
}

/* A GPU by its UUID, or a MIG device by its own ("MIG-..."): the handle of the latter is a
 * fake_mig, which only nvmlDeviceGetDeviceHandleFromMigDeviceHandle takes. */
int nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *out)
{
    count_call(__func__);
    if (F.refcount == 0)
        return RC_UNINITIALIZED;
    if (!uuid || !out)
        return RC_INVALID_ARGUMENT;
    for (unsigned i = 0; i < F.n; i++) {
        json_t *u = json_object_get(F.gpus[i].j, "uuid");
        if (json_is_string(u) && strcmp(json_string_value(u), uuid) == 0) {
            if (F.gpus[i].lost)
                return RC_GPU_IS_LOST;
            *out = &F.gpus[i];
            return RC_SUCCESS;
        }
    }
#if !FAKE_NVML_OLD_DRIVER
    for (unsigned i = 0; i < F.nmig; i++)
        if (strcmp(F.migs[i].uuid, uuid) == 0) {
            *out = (nvmlDevice_t)(void *)&F.migs[i];
            return RC_SUCCESS;
        }
#endif
    return RC_NOT_FOUND;
}

#if !FAKE_NVML_OLD_DRIVER
int nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t mig, nvmlDevice_t *out)
{
    count_call(__func__);
    if (F.refcount == 0)
        return RC_UNINITIALIZED;
    const fake_mig *m = (const fake_mig *)(void *)mig;
    if (!out || !m || m < F.migs || m >= F.migs + F.nmig)
        return RC_INVALID_ARGUMENT;
    if (m->parent->lost)
        return RC_GPU_IS_LOST;
    *out = m->parent;
    return RC_SUCCESS;
}
#endif

static int identity(const char *fn, nvmlDevice_t d, const char *key, const char *def, char *buf,
                    unsigned len)
{
    count_call(fn);
    if (!valid_device(d))
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    if (d->lost)
        return RC_GPU_IS_LOST;
    json_t *v = json_object_get(d->j, key);
    if (json_is_null(v))
        return RC_NOT_SUPPORTED;
    return copy_out(json_is_string(v) ? json_string_value(v) : def, buf, len);
}

int nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned length)
{
    const fake_mig *m = as_mig(d);
    if (m) {
        /* A MIG device is named "<GPU name> MIG <profile>", as the real library names it. */
        count_call(__func__);
        const char *n = json_string_value(json_object_get(m->j, "name"));
        const char *prof = json_string_value(json_object_get(m->j, "profile"));
        const char *gpu = json_string_value(json_object_get(m->parent->j, "name"));
        char buf[160];
        if (!n) {
            snprintf(buf, sizeof buf, "%s MIG %s", gpu ? gpu : "NVIDIA Fake GPU",
                     prof ? prof : "1g.10gb");
            n = buf;
        }
        return copy_out(n, name, length);
    }
    return identity(__func__, d, "name", "NVIDIA Fake GPU", name, length);
}

int nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned length)
{
    const fake_mig *m = as_mig(d);
    if (m) {
        count_call(__func__);
        return copy_out(m->uuid, uuid, length);
    }
    char def[64];
    snprintf(def, sizeof def, "GPU-fa4e0000-0000-0000-0000-%012u", valid_device(d) ? d->index : 0);
    return identity(__func__, d, "uuid", def, uuid, length);
}

/* fullv: the v2/v3 layout (busId[32] after the ids); otherwise the v1 layout, whose busId is
 * the first 16 bytes and carries the short 4-digit domain form. */
static int pci_info(const char *fn, nvmlDevice_t d, fake_pci_info *p, bool fullv)
{
    count_call(fn);
    if (!valid_device(d) || !p)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    if (d->lost)
        return RC_GPU_IS_LOST;
    json_t *v = json_object_get(d->j, "pci_bus_id");
    unsigned dom = 0, bus = d->index + 1, dev = 0, func = 0;
    if (json_is_string(v) &&
        sscanf(json_string_value(v), "%x:%x:%x.%x", &dom, &bus, &dev, &func) != 4)
        return RC_UNKNOWN;
    memset(p, 0, fullv ? sizeof *p : offsetof(fake_pci_info, busId));
    snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "%04X:%02X:%02X.%X", dom & 0xffff, bus & 0xff,
             dev & 0xff, func & 0xf);
    p->domain = dom;
    p->bus = bus;
    p->device = dev;
    p->pciDeviceId = 0x233010DE;
    p->pciSubSystemId = 0x16C110DE;
    unsigned long long id;
    if (num(d, "pci_device_id", &id) == RC_SUCCESS)
        p->pciDeviceId = (unsigned)id;
    if (num(d, "pci_subsys_id", &id) == RC_SUCCESS)
        p->pciSubSystemId = (unsigned)id;
    if (fullv)
        snprintf(p->busId, sizeof p->busId, "%08X:%02X:%02X.%X", dom, bus & 0xff, dev & 0xff,
                 func & 0xf);
    return RC_SUCCESS;
}

#if !FAKE_NVML_OLD_DRIVER
int nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, fake_pci_info *p)
{
    return pci_info(__func__, d, p, true);
}

int nvmlDeviceGetPciInfo_v2(nvmlDevice_t d, fake_pci_info *p)
{
    return pci_info(__func__, d, p, true);
}
#endif

int nvmlDeviceGetPciInfo(nvmlDevice_t d, fake_pci_info *p)
{
    return pci_info(__func__, d, p, false);
}

/* ---- metrics ------------------------------------------------------------------------------- */

int nvmlDeviceGetUtilizationRates(nvmlDevice_t d, fake_utilization *u)
{
    count_call(__func__);
    if (!valid_device(d) || !u)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    pthread_mutex_lock(&fake_mu);
    d->util_calls++;
    json_t *la = json_object_get(d->j, "lost_after");
    if (json_is_integer(la) && d->util_calls > (unsigned long)json_integer_value(la))
        d->lost = true;
    pthread_cond_broadcast(&fake_event_cv);
    pthread_mutex_unlock(&fake_mu);
    int rc = call_status(d, "util", "util");
    if (rc != RC_SUCCESS)
        return rc;
    unsigned long long gpu, mem;
    if (num(d, "util_gpu", &gpu) != RC_SUCCESS || num(d, "util_mem", &mem) != RC_SUCCESS)
        return RC_NOT_SUPPORTED;
    u->gpu = (unsigned)gpu;
    u->memory = (unsigned)mem;
    return RC_SUCCESS;
}

static int codec(const char *fn, nvmlDevice_t d, const char *key, unsigned *util, unsigned *period)
{
    int rc = u32_metric(fn, d, key, key, util);
    if (rc == RC_SUCCESS && period)
        *period = 167000; /* the driver's sampling window, in microseconds */
    return rc;
}

int nvmlDeviceGetEncoderUtilization(nvmlDevice_t d, unsigned *util, unsigned *period)
{
    return codec(__func__, d, "enc", util, period);
}

int nvmlDeviceGetDecoderUtilization(nvmlDevice_t d, unsigned *util, unsigned *period)
{
    return codec(__func__, d, "dec", util, period);
}

/* The four memory numbers; mem_reserved defaults to 0 when left out. */
static int memory(nvmlDevice_t d, unsigned long long *total, unsigned long long *reserved,
                  unsigned long long *free_b, unsigned long long *used)
{
    int rc = call_status(d, "memory", "memory");
    if (rc != RC_SUCCESS)
        return rc;
    if (num(d, "mem_total", total) || num(d, "mem_free", free_b) || num(d, "mem_used", used))
        return RC_NOT_SUPPORTED;
    if (num(d, "mem_reserved", reserved))
        *reserved = 0;
    return RC_SUCCESS;
}

#if !FAKE_NVML_OLD_DRIVER
int nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, fake_memory_v2 *m)
{
    count_call(__func__);
    const fake_mig *mig = as_mig(d);
    if (mig && m) {
        if (m->version != FAKE_MEMORY_V2_VERSION)
            return RC_ARGUMENT_VERSION_MISMATCH;
        unsigned long long t, f, u;
        int rc = mig_memory(mig, &t, &f, &u);
        if (rc == RC_SUCCESS) {
            m->total = t;
            m->reserved = 0;
            m->free = f;
            m->used = u;
        }
        return rc;
    }
    if (!valid_device(d) || !m)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    /* A driver built for another struct revision refuses the call, as "mem_v2_mismatch" mimics. */
    if (m->version != FAKE_MEMORY_V2_VERSION ||
        json_is_true(json_object_get(F.root, "mem_v2_mismatch")))
        return RC_ARGUMENT_VERSION_MISMATCH;
    unsigned long long t, r, f, u;
    int rc = memory(d, &t, &r, &f, &u);
    if (rc != RC_SUCCESS)
        return rc;
    m->total = t;
    m->reserved = r;
    m->free = f;
    m->used = u;
    return RC_SUCCESS;
}
#endif

int nvmlDeviceGetMemoryInfo(nvmlDevice_t d, fake_memory_v1 *m)
{
    count_call(__func__);
    const fake_mig *mig = as_mig(d);
    if (mig && m) {
        unsigned long long t, f, u;
        int rc = mig_memory(mig, &t, &f, &u);
        if (rc == RC_SUCCESS) {
            m->total = t;
            m->free = f;
            m->used = u;
        }
        return rc;
    }
    if (!valid_device(d) || !m)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    unsigned long long t, r, f, u;
    int rc = memory(d, &t, &r, &f, &u);
    if (rc != RC_SUCCESS)
        return rc;
    /* v1 counts reserved memory as used. */
    m->total = t;
    m->free = f;
    m->used = u + r;
    return RC_SUCCESS;
}

int nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned *temp)
{
    if (sensor != 0) {
        count_call(__func__);
        return RC_INVALID_ARGUMENT;
    }
    return u32_metric(__func__, d, "temp", "temp", temp);
}

int nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned *mw)
{
    return u32_metric(__func__, d, "power_mw", "power", mw);
}

int nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned *mw)
{
    return u32_metric(__func__, d, "power_limit_mw", "power_limit", mw);
}

int nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj)
{
    return u64_metric(__func__, d, "energy_mj", "energy", mj);
}

static const char *const clock_keys[] = {"clock_gr", "clock_sm", "clock_mem", "clock_video"};
static const char *const max_clock_keys[] = {"clock_max_gr", "clock_max_sm", "clock_max_mem",
                                             "clock_max_video"};

int nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned *mhz)
{
    if (type < 0 || type > 3) {
        count_call(__func__);
        return RC_INVALID_ARGUMENT;
    }
    return u32_metric(__func__, d, clock_keys[type], "clocks", mhz);
}

int nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned *mhz)
{
    if (type < 0 || type > 3) {
        count_call(__func__);
        return RC_INVALID_ARGUMENT;
    }
    return u32_metric(__func__, d, max_clock_keys[type], "clocks_max", mhz);
}

int nvmlDeviceGetFanSpeed(nvmlDevice_t d, unsigned *pct)
{
    return u32_metric(__func__, d, "fan", "fan", pct);
}

int nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t d, unsigned *gen)
{
    return u32_metric(__func__, d, "pcie_gen", "pcie_gen", gen);
}

int nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t d, unsigned *gen)
{
    return u32_metric(__func__, d, "pcie_gen_max", "pcie_gen_max", gen);
}

int nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t d, unsigned *width)
{
    return u32_metric(__func__, d, "pcie_width", "pcie_width", width);
}

int nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t d, unsigned *width)
{
    return u32_metric(__func__, d, "pcie_width_max", "pcie_width_max", width);
}

int nvmlDeviceGetPcieThroughput(nvmlDevice_t d, int counter, unsigned *kbps)
{
    if (counter != 0 && counter != 1) {
        count_call(__func__);
        return RC_INVALID_ARGUMENT;
    }
    return u32_metric(__func__, d, counter == 0 ? "pcie_tx" : "pcie_rx", "pcie_throughput", kbps);
}

int nvmlDeviceGetPerformanceState(nvmlDevice_t d, int *pstate)
{
    return u32_metric(__func__, d, "pstate", "pstate", (unsigned *)pstate);
}

#if !FAKE_NVML_OLD_DRIVER
int nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *mask)
{
    return u64_metric(__func__, d, "throttle", "throttle", mask);
}
#endif

int nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long *mask)
{
    return u64_metric(__func__, d, "throttle", "throttle", mask);
}

int nvmlDeviceGetPersistenceMode(nvmlDevice_t d, int *mode)
{
    return u32_metric(__func__, d, "persistence", "persistence", (unsigned *)mode);
}

/* ---- processes ----------------------------------------------------------------------------- */

/* How many processes "processes_grow" adds: true means one. */
static unsigned grow_count(const fake_gpu *g)
{
    json_t *v = json_object_get(g->j, "processes_grow");
    if (json_is_true(v))
        return 1;
    return json_is_integer(v) && json_integer_value(v) > 0 ? (unsigned)json_integer_value(v) : 0;
}

/* Whether process entry p is on the GPU at this read: "from_read": N makes it appear at the
 * GPU's Nth read (the read numbering of per-read arrays). */
static bool present(const fake_gpu *g, const json_t *p)
{
    const json_t *from = json_object_get(p, "from_read");
    unsigned long n = g->util_calls ? g->util_calls - 1 : 0;
    return !json_is_integer(from) || (json_int_t)n >= json_integer_value(from);
}

/* Fills the list of one type. The grown processes are compute processes with PIDs from
 * "grow_pid" (default 90000) up, 1 MiB each. */
static int processes(const char *fn, nvmlDevice_t d, unsigned *count, void *infos, size_t stride,
                     const char *type)
{
    count_call(fn);
    if (!valid_device(d) || !count)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    int rc = call_status(
        d, strcmp(type, "compute") == 0 ? "compute_processes" : "graphics_processes", "processes");
    if (rc != RC_SUCCESS)
        return rc;
    bool compute = strcmp(type, "compute") == 0;
    json_t *list = json_object_get(d->j, "processes");
    unsigned n = 0;
    size_t i;
    json_t *p;
    json_array_foreach(list, i, p)
    {
        const char *t = json_string_value(json_object_get(p, "type"));
        if (strcmp(t ? t : "compute", type) == 0 && present(d, p))
            n++;
    }
    unsigned extra = compute ? d->grown_count : 0;
    unsigned total = n + extra;
    if (*count < total) {
        *count = total;
        rc = RC_INSUFFICIENT_SIZE;
    } else if (total > 0 && !infos) {
        return RC_INVALID_ARGUMENT;
    } else {
        unsigned k = 0;
        json_array_foreach(list, i, p)
        {
            const char *t = json_string_value(json_object_get(p, "type"));
            if (strcmp(t ? t : "compute", type) != 0 || !present(d, p))
                continue;
            fake_process_v2 e = {0};
            json_t *mem = json_object_get(p, "used_mem");
            /* Outside MIG mode the driver gives its not-available value for both ids. */
            json_t *gi = json_object_get(p, "gpu_instance_id");
            json_t *ci = json_object_get(p, "compute_instance_id");
            e.gpuInstanceId = json_is_integer(gi) ? (unsigned)json_integer_value(gi) : UINT_MAX;
            e.computeInstanceId = json_is_integer(ci) ? (unsigned)json_integer_value(ci) : UINT_MAX;
            e.pid = (unsigned)json_integer_value(json_object_get(p, "pid"));
            e.usedGpuMemory = json_is_integer(mem) ? (unsigned long long)json_integer_value(mem)
                                                   : FAKE_VALUE_NOT_AVAILABLE;
            memcpy((char *)infos + k++ * stride, &e, stride);
        }
        json_t *gp = json_object_get(d->j, "grow_pid");
        unsigned base = json_is_integer(gp) ? (unsigned)json_integer_value(gp) : 90000;
        for (unsigned x = 0; x < extra; x++) {
            fake_process_v2 e = {.pid = base + x,
                                 .usedGpuMemory = 1048576,
                                 .gpuInstanceId = UINT_MAX,
                                 .computeInstanceId = UINT_MAX};
            memcpy((char *)infos + k++ * stride, &e, stride);
        }
        *count = total;
    }
    /* The list changes right after the first compute query, as when a job starts between the
     * caller's size query and its fill. */
    if (compute && !d->grown) {
        d->grown = true;
        d->grown_count = grow_count(d);
    }
    return rc;
}

#if !FAKE_NVML_OLD_DRIVER
int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned *count, fake_process_v2 *p)
{
    return processes(__func__, d, count, p, sizeof *p, "compute");
}

int nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d, unsigned *count, fake_process_v2 *p)
{
    return processes(__func__, d, count, p, sizeof *p, "compute");
}

int nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d, unsigned *count, fake_process_v2 *p)
{
    return processes(__func__, d, count, p, sizeof *p, "graphics");
}

int nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t d, unsigned *count, fake_process_v2 *p)
{
    return processes(__func__, d, count, p, sizeof *p, "graphics");
}
#endif

int nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t d, unsigned *count, fake_process_v1 *p)
{
    return processes(__func__, d, count, p, sizeof *p, "compute");
}

int nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t d, unsigned *count, fake_process_v1 *p)
{
    return processes(__func__, d, count, p, sizeof *p, "graphics");
}

/* nvmlProcessUtilizationSample_t. */
typedef struct {
    unsigned pid;
    unsigned long long timeStamp;
    unsigned smUtil, memUtil, encUtil, decUtil;
} fake_proc_util;

/* The microsecond time stamp of the GPU's current read: one driver sample per read. */
#define FAKE_PUTIL_TS0 1700000000000000ULL

/* Each process with a "util" object has one sample per read of the GPU, stamped with that
 * read; only samples newer than last_seen are given, NOT_FOUND when there is none. A GPU in
 * MIG mode answers NOT_SUPPORTED, as the real driver does; so does the old-driver build, as
 * boards before Maxwell do. */
int nvmlDeviceGetProcessUtilization(nvmlDevice_t d, fake_proc_util *samples, unsigned *count,
                                    unsigned long long last_seen)
{
    count_call(__func__);
    if (!valid_device(d) || !count)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    if (FAKE_NVML_OLD_DRIVER)
        return RC_NOT_SUPPORTED;
    int rc = call_status(d, "process_util", "process_util");
    if (rc != RC_SUCCESS)
        return rc;
    unsigned long long mig;
    if (num(d, "mig_mode", &mig) == RC_SUCCESS && mig == 1)
        return RC_NOT_SUPPORTED;
    unsigned long long ts = FAKE_PUTIL_TS0 + (unsigned long long)d->util_calls * 1000000ULL;
    json_t *list = json_object_get(d->j, "processes");
    unsigned n = 0;
    size_t i;
    json_t *p;
    json_array_foreach(list, i, p) if (json_is_object(json_object_get(p, "util")) &&
                                       present(d, p) && ts > last_seen) n++;
    if (n == 0)
        return RC_NOT_FOUND;
    if (*count < n || !samples) {
        *count = n;
        return RC_INSUFFICIENT_SIZE;
    }
    static const char *const keys[4] = {"sm", "mem", "enc", "dec"};
    unsigned k = 0;
    json_array_foreach(list, i, p)
    {
        json_t *u = json_object_get(p, "util");
        if (!json_is_object(u) || !present(d, p) || ts <= last_seen)
            continue;
        unsigned v[4] = {0, 0, 0, 0};
        for (int e = 0; e < 4; e++) {
            json_t *x = current(d, json_object_get(u, keys[e]));
            v[e] = json_is_integer(x) ? (unsigned)json_integer_value(x) : 0;
        }
        samples[k++] = (fake_proc_util){
            (unsigned)json_integer_value(json_object_get(p, "pid")), ts, v[0], v[1], v[2], v[3]};
    }
    *count = k;
    return RC_SUCCESS;
}

#if !FAKE_NVML_OLD_DRIVER
/* ---- MIG ----------------------------------------------------------------------------------- */

/* A GPU with "mig_mode" can hold MIG devices: "mig_max_devices" (default 7). */
int nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned *count)
{
    count_call(__func__);
    if (!valid_device(d) || !count)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    int rc = call_status(d, "mig", "mig");
    unsigned long long mode, max;
    if (rc != RC_SUCCESS)
        return rc;
    if (num(d, "mig_mode", &mode) != RC_SUCCESS)
        return RC_NOT_SUPPORTED;
    *count = num(d, "mig_max_devices", &max) == RC_SUCCESS ? (unsigned)max : 7;
    return RC_SUCCESS;
}

/* The MIG device objects of "mig_devices" in order, at indexes 0.. ("index" moves one). */
int nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned index, nvmlDevice_t *out)
{
    count_call(__func__);
    if (!valid_device(d) || !out)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    if (d->lost)
        return RC_GPU_IS_LOST;
    unsigned long long mode;
    if (num(d, "mig_mode", &mode) != RC_SUCCESS || mode != 1)
        return RC_INVALID_ARGUMENT;
    for (unsigned i = 0; i < F.nmig; i++) {
        fake_mig *m = &F.migs[i];
        if (m->parent != d || !m->j || mig_gone(m))
            continue;
        json_t *ix = json_object_get(m->j, "index");
        unsigned at = json_is_integer(ix) ? (unsigned)json_integer_value(ix) : m->slot;
        if (at == index) {
            *out = (nvmlDevice_t)(void *)m;
            return RC_SUCCESS;
        }
    }
    return RC_NOT_FOUND;
}

static int instance_id(const char *fn, nvmlDevice_t d, const char *key, unsigned *id)
{
    count_call(fn);
    const fake_mig *m = as_mig(d);
    if (!id)
        return RC_INVALID_ARGUMENT;
    if (!m) /* a GPU's own handle */
        return valid_device(d) ? RC_NOT_SUPPORTED : RC_INVALID_ARGUMENT;
    unsigned long long v;
    if (mig_num(m, key, &v) != RC_SUCCESS)
        return RC_NOT_SUPPORTED;
    *id = (unsigned)v;
    return RC_SUCCESS;
}

int nvmlDeviceGetGpuInstanceId(nvmlDevice_t d, unsigned *id)
{
    return instance_id(__func__, d, "gpu_instance_id", id);
}

int nvmlDeviceGetComputeInstanceId(nvmlDevice_t d, unsigned *id)
{
    return instance_id(__func__, d, "compute_instance_id", id);
}
#endif

/* ---- topology ------------------------------------------------------------------------------ */

static int cap_index(json_t *v)
{
    static const char *const names[] = {"read", "write", "nvlink", "atomics", "pci"};
    if (json_is_integer(v))
        return (int)json_integer_value(v);
    for (int i = 0; i < 5; i++)
        if (json_is_string(v) && strcmp(json_string_value(v), names[i]) == 0)
            return i;
    return -1;
}

int nvmlDeviceGetP2PStatus(nvmlDevice_t d1, nvmlDevice_t d2, int cap, int *status)
{
    count_call(__func__);
    if (!valid_device(d1) || !valid_device(d2) || !status || cap < 0 || cap > 4)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    if (d1->lost || d2->lost)
        return RC_GPU_IS_LOST;
    if (d1 == d2) { /* what driver 580 answers for a GPU with itself */
        *status = 5;
        return RC_SUCCESS;
    }
    int rc = call_status(d1, "p2p", "p2p");
    if (rc != RC_SUCCESS)
        return rc;
    json_t *p2p = json_object_get(F.root, "p2p");
    if (!json_is_object(p2p))
        return RC_NOT_SUPPORTED;
    json_t *def = json_object_get(p2p, "default");
    int st = json_is_integer(def) ? (int)json_integer_value(def) : 0;
    size_t i;
    json_t *pair;
    json_array_foreach(json_object_get(p2p, "pairs"), i, pair)
    {
        unsigned a = (unsigned)json_integer_value(json_array_get(pair, 0));
        unsigned b = (unsigned)json_integer_value(json_array_get(pair, 1));
        json_t *c = json_array_get(pair, 2);
        bool all = json_is_string(c) && strcmp(json_string_value(c), "*") == 0;
        bool match = (a == d1->index && b == d2->index) || (a == d2->index && b == d1->index);
        if (match && (all || cap_index(c) == cap))
            st = (int)json_integer_value(json_array_get(pair, 3));
    }
    *status = st;
    return RC_SUCCESS;
}

/* ---- health (issue #12): all of it missing from the old driver --------------------------------
 */

#if !FAKE_NVML_OLD_DRIVER
int nvmlDeviceGetSerial(nvmlDevice_t d, char *serial, unsigned length)
{
    char def[32];
    snprintf(def, sizeof def, "132052000%04u", valid_device(d) ? d->index : 0);
    return identity(__func__, d, "serial", def, serial, length);
}

int nvmlDeviceGetVbiosVersion(nvmlDevice_t d, char *version, unsigned length)
{
    return identity(__func__, d, "vbios", "96.00.99.00.01", version, length);
}

int nvmlDeviceGetPowerManagementLimit(nvmlDevice_t d, unsigned *mw)
{
    return u32_metric(__func__, d, "power_req_limit_mw", "power_limits", mw);
}

int nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t d, unsigned *mw)
{
    return u32_metric(__func__, d, "power_default_limit_mw", "power_limits", mw);
}

int nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t d, unsigned *min, unsigned *max)
{
    int rc = u32_metric(__func__, d, "power_min_limit_mw", "power_limits", min);
    return rc != RC_SUCCESS ? rc
                            : u32_metric(__func__, d, "power_max_limit_mw", "power_limits", max);
}

int nvmlDeviceGetComputeMode(nvmlDevice_t d, int *mode)
{
    return u32_metric(__func__, d, "compute_mode", "compute_mode", (unsigned *)mode);
}

int nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int *major, int *minor)
{
    int rc = u32_metric(__func__, d, "cc_major", "compute_cap", (unsigned *)major);
    return rc != RC_SUCCESS ? rc
                            : u32_metric(__func__, d, "cc_minor", "compute_cap", (unsigned *)minor);
}

int nvmlDeviceGetGpuMaxPcieLinkGeneration(nvmlDevice_t d, unsigned *gen)
{
    return u32_metric(__func__, d, "pcie_gen_gpu_max", "pcie_gen_max", gen);
}

int nvmlDeviceGetPcieReplayCounter(nvmlDevice_t d, unsigned *n)
{
    return u32_metric(__func__, d, "pcie_replay", "pcie_replay", n);
}

int nvmlDeviceGetSupportedClocksEventReasons(nvmlDevice_t d, unsigned long long *mask)
{
    return u64_metric(__func__, d, "throttle_supported", "throttle", mask);
}

int nvmlDeviceGetSupportedClocksThrottleReasons(nvmlDevice_t d, unsigned long long *mask)
{
    return u64_metric(__func__, d, "throttle_supported", "throttle", mask);
}

int nvmlDeviceGetEccMode(nvmlDevice_t d, int *current, int *pending)
{
    int rc = u32_metric(__func__, d, "ecc_mode", "ecc", (unsigned *)current);
    return rc != RC_SUCCESS
               ? rc
               : u32_metric(__func__, d, "ecc_mode_pending", "ecc", (unsigned *)pending);
}

int nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned *current, unsigned *pending)
{
    int rc = u32_metric(__func__, d, "mig_mode", "mig", current);
    return rc != RC_SUCCESS ? rc : u32_metric(__func__, d, "mig_mode_pending", "mig", pending);
}

int nvmlDeviceGetEncoderStats(nvmlDevice_t d, unsigned *sessions, unsigned *fps, unsigned *latency)
{
    int rc = u32_metric(__func__, d, "enc_sessions", "enc_stats", sessions);
    if (rc == RC_SUCCESS)
        rc = u32_metric(__func__, d, "enc_fps", "enc_stats", fps);
    return rc != RC_SUCCESS ? rc : u32_metric(__func__, d, "enc_latency", "enc_stats", latency);
}

int nvmlDeviceGetJpgUtilization(nvmlDevice_t d, unsigned *util, unsigned *period)
{
    return codec(__func__, d, "jpeg", util, period);
}

int nvmlDeviceGetOfaUtilization(nvmlDevice_t d, unsigned *util, unsigned *period)
{
    return codec(__func__, d, "ofa", util, period);
}

/* Identity and configuration nvidia-smi shows (driver 550 and newer for the PCI class codes and
 * the margin temperature). */
typedef struct {
    unsigned version;
    unsigned domain, bus, device, pciDeviceId, pciSubSystemId, baseClass, subClass;
    char busId[32];
} fake_pci_info_ext;

typedef struct {
    unsigned version;
    int marginTemperature;
} fake_margin_temp;

int nvmlDeviceGetPciInfoExt(nvmlDevice_t d, fake_pci_info_ext *p)
{
    if (!p)
        return RC_INVALID_ARGUMENT;
    /* NVML_STRUCT_VERSION(PciInfoExt, 1): the struct's size with the revision in the top byte. */
    if (p->version != (unsigned)(sizeof *p | 1u << 24))
        return RC_ARGUMENT_VERSION_MISMATCH;
    fake_pci_info legacy;
    int rc = pci_info(__func__, d, &legacy, true);
    if (rc != RC_SUCCESS)
        return rc;
    unsigned long long base, sub; /* pci_info counted the call */
    rc = metric(d, "pci_base_class", "pci_class", &base);
    if (rc == RC_SUCCESS)
        rc = metric(d, "pci_sub_class", "pci_class", &sub);
    if (rc != RC_SUCCESS)
        return rc;
    p->domain = legacy.domain;
    p->bus = legacy.bus;
    p->device = legacy.device;
    p->pciDeviceId = legacy.pciDeviceId;
    p->pciSubSystemId = legacy.pciSubSystemId;
    p->baseClass = (unsigned)base;
    p->subClass = (unsigned)sub;
    memcpy(p->busId, legacy.busId, sizeof p->busId);
    return RC_SUCCESS;
}

/* A version string the scenario gives under key; left out or null: NOT_SUPPORTED (a board
 * without an infoROM, or an object it lacks). */
static int version_string(const char *fn, nvmlDevice_t d, const char *key, char *buf, unsigned len)
{
    count_call(fn);
    if (!valid_device(d))
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    int rc = call_status(d, key, "inforom");
    if (rc != RC_SUCCESS)
        return rc;
    json_t *v = json_object_get(d->j, key);
    return json_is_string(v) ? copy_out(json_string_value(v), buf, len) : RC_NOT_SUPPORTED;
}

int nvmlDeviceGetInforomImageVersion(nvmlDevice_t d, char *version, unsigned length)
{
    return version_string(__func__, d, "inforom_img", version, length);
}

int nvmlDeviceGetInforomVersion(nvmlDevice_t d, int object, char *version, unsigned length)
{
    static const char *const keys[] = {"inforom_oem", "inforom_ecc", "inforom_pwr"};
    if (object < 0 || object > 3) {
        count_call(__func__);
        return RC_INVALID_ARGUMENT;
    }
    if (object == 3) { /* NVML_INFOROM_DEN: not modelled */
        count_call(__func__);
        return RC_NOT_SUPPORTED;
    }
    return version_string(__func__, d, keys[object], version, length);
}

int nvmlDeviceGetAccountingMode(nvmlDevice_t d, int *mode)
{
    return u32_metric(__func__, d, "accounting_mode", "accounting", (unsigned *)mode);
}

int nvmlDeviceGetAccountingBufferSize(nvmlDevice_t d, unsigned *size)
{
    return u32_metric(__func__, d, "accounting_buffer_size", "accounting", size);
}

int nvmlDeviceGetGspFirmwareMode(nvmlDevice_t d, unsigned *enabled, unsigned *default_mode)
{
    int rc = u32_metric(__func__, d, "gsp_mode", "gsp", enabled);
    return rc != RC_SUCCESS ? rc : u32_metric(__func__, d, "gsp_mode_default", "gsp", default_mode);
}

int nvmlDeviceGetMarginTemperature(nvmlDevice_t d, fake_margin_temp *t)
{
    if (!t) {
        count_call(__func__);
        return RC_INVALID_ARGUMENT;
    }
    if (t->version != (unsigned)(sizeof *t | 1u << 24)) {
        count_call(__func__);
        return RC_ARGUMENT_VERSION_MISMATCH;
    }
    unsigned v;
    int rc = u32_metric(__func__, d, "temp_tlimit", "temp_tlimit", &v);
    if (rc == RC_SUCCESS)
        t->marginTemperature = (int)v; /* negative in the scenario: past the threshold */
    return rc;
}

/* Modes, fabric registration, confidential-computing memory and SRAM error status (drivers 550
 * and newer; nvmlDeviceGetAddressingMode 570). */
typedef struct {
    unsigned version, value;
} fake_addressing_mode;

typedef struct {
    unsigned isC2cEnabled;
} fake_c2c_mode;

typedef struct {
    unsigned version;
    unsigned char clusterUuid[16];
    int status;
    unsigned cliqueId;
    unsigned char state;
    unsigned healthMask;
    unsigned char healthSummary; /* v3 only */
} fake_fabric_info;

typedef struct {
    unsigned long long total, free, used;
} fake_memory;

typedef struct {
    unsigned version;
    unsigned long long aggregateUncParity, aggregateUncSecDed, aggregateCor;
    unsigned long long volatileUncParity, volatileUncSecDed, volatileCor;
    unsigned long long aggregateUncBucketL2, aggregateUncBucketSm, aggregateUncBucketPcie,
        aggregateUncBucketMcu, aggregateUncBucketOther;
    unsigned bThresholdExceeded;
} fake_sram_status;

int nvmlDeviceGetDisplayMode(nvmlDevice_t d, int *mode)
{
    return u32_metric(__func__, d, "display_attached", "display", (unsigned *)mode);
}

int nvmlDeviceGetDisplayActive(nvmlDevice_t d, int *active)
{
    return u32_metric(__func__, d, "display_active", "display", (unsigned *)active);
}

int nvmlDeviceGetAddressingMode(nvmlDevice_t d, fake_addressing_mode *m)
{
    if (!m) {
        count_call(__func__);
        return RC_INVALID_ARGUMENT;
    }
    if (m->version != (unsigned)(sizeof *m | 1u << 24)) {
        count_call(__func__);
        return RC_ARGUMENT_VERSION_MISMATCH;
    }
    return u32_metric(__func__, d, "addressing_mode", "addressing_mode", &m->value);
}

int nvmlDeviceGetC2cModeInfoV(nvmlDevice_t d, fake_c2c_mode *m)
{
    if (!m) {
        count_call(__func__);
        return RC_INVALID_ARGUMENT;
    }
    return u32_metric(__func__, d, "c2c_mode", "c2c_mode", &m->isC2cEnabled);
}

/* "fabric_state", "fabric_status", "fabric_clique_id" and "fabric_cluster_uuid" (36 characters);
 * "fabric_struct_version": 2 makes the call refuse v3, as a driver that knows only v2. */
int nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t d, fake_fabric_info *f)
{
    count_call(__func__);
    if (!valid_device(d) || !f)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    json_t *sv = json_object_get(d->j, "fabric_struct_version");
    unsigned newest = json_is_integer(sv) ? (unsigned)json_integer_value(sv) : 3;
    unsigned v2 = (unsigned)(offsetof(fake_fabric_info, healthSummary) | 2u << 24);
    unsigned v3 = (unsigned)(sizeof *f | 3u << 24);
    if (f->version != v2 && (f->version != v3 || newest < 3))
        return RC_ARGUMENT_VERSION_MISMATCH;
    unsigned long long state, status = 0, clique = 0;
    int rc = metric(d, "fabric_state", "fabric", &state);
    if (rc != RC_SUCCESS)
        return rc;
    num(d, "fabric_status", &status);
    num(d, "fabric_clique_id", &clique);
    memset(f->clusterUuid, 0, sizeof f->clusterUuid);
    json_t *u = json_object_get(d->j, "fabric_cluster_uuid");
    const char *text = json_is_string(u) ? json_string_value(u) : "";
    for (size_t i = 0, k = 0; text[i] && k < 2 * sizeof f->clusterUuid; i++) {
        unsigned nib;
        if (text[i] == '-' || sscanf(text + i, "%1x", &nib) != 1)
            continue;
        f->clusterUuid[k / 2] |= (unsigned char)(k % 2 ? nib : nib << 4);
        k++;
    }
    f->state = (unsigned char)state;
    f->status = (int)status;
    f->cliqueId = (unsigned)clique;
    f->healthMask = 0;
    if (f->version == v3)
        f->healthSummary = 0;
    return RC_SUCCESS;
}

/* "prot_mem_total", "prot_mem_used", "prot_mem_free" in bytes (all three needed). */
int nvmlDeviceGetConfComputeProtectedMemoryUsage(nvmlDevice_t d, fake_memory *m)
{
    count_call(__func__);
    if (!valid_device(d) || !m)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    int rc = metric(d, "prot_mem_total", "protected_memory", &m->total);
    if (rc == RC_SUCCESS)
        rc = metric(d, "prot_mem_used", "protected_memory", &m->used);
    if (rc == RC_SUCCESS)
        rc = metric(d, "prot_mem_free", "protected_memory", &m->free);
    return rc;
}

/* "sram": {"volatile_parity", "volatile_secded", "aggregate_parity", "aggregate_secded",
 * "threshold_exceeded", "l2", "sm", "mcu", "pcie", "other"}; left out: NOT_SUPPORTED. */
int nvmlDeviceGetSramEccErrorStatus(nvmlDevice_t d, fake_sram_status *e)
{
    count_call(__func__);
    if (!valid_device(d) || !e)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    if (e->version != (unsigned)(sizeof *e | 1u << 24))
        return RC_ARGUMENT_VERSION_MISMATCH;
    int rc = call_status(d, "sram", "sram");
    if (rc != RC_SUCCESS)
        return rc;
    json_t *o = json_object_get(d->j, "sram");
    if (!json_is_object(o))
        return RC_NOT_SUPPORTED;
#define SRAM_KEY(k) ((unsigned long long)json_integer_value(json_object_get(o, k)))
    e->volatileUncParity = SRAM_KEY("volatile_parity");
    e->volatileUncSecDed = SRAM_KEY("volatile_secded");
    e->aggregateUncParity = SRAM_KEY("aggregate_parity");
    e->aggregateUncSecDed = SRAM_KEY("aggregate_secded");
    e->bThresholdExceeded = (unsigned)SRAM_KEY("threshold_exceeded");
    e->aggregateUncBucketL2 = SRAM_KEY("l2");
    e->aggregateUncBucketSm = SRAM_KEY("sm");
    e->aggregateUncBucketMcu = SRAM_KEY("mcu");
    e->aggregateUncBucketPcie = SRAM_KEY("pcie");
    e->aggregateUncBucketOther = SRAM_KEY("other");
#undef SRAM_KEY
    e->volatileCor = e->aggregateCor = 0;
    return RC_SUCCESS;
}

/* ECC counters live in the GPU's "ecc" object under "<corrected|uncorrected>.<volatile|
 * aggregate>.<location|total>"; the object's absence means ECC is not supported. */
static int ecc_counter(const char *fn, nvmlDevice_t d, int type, int counter, const char *where,
                       unsigned long long *out)
{
    count_call(fn);
    if (!valid_device(d) || !out || type < 0 || type > 1 || counter < 0 || counter > 1)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    int rc = call_status(d, "ecc", "ecc");
    if (rc != RC_SUCCESS)
        return rc;
    json_t *ecc = json_object_get(d->j, "ecc");
    if (!json_is_object(ecc))
        return RC_NOT_SUPPORTED;
    char key[96];
    snprintf(key, sizeof key, "%s.%s.%s", type ? "uncorrected" : "corrected",
             counter ? "aggregate" : "volatile", where);
    json_t *v = current(d, json_object_get(ecc, key));
    if (!json_is_integer(v))
        return RC_NOT_SUPPORTED;
    *out = (unsigned long long)json_integer_value(v);
    return RC_SUCCESS;
}

int nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int counter, unsigned long long *n)
{
    return ecc_counter(__func__, d, type, counter, "total", n);
}

int nvmlDeviceGetMemoryErrorCounter(nvmlDevice_t d, int type, int counter, int location,
                                    unsigned long long *n)
{
    static const char *const names[] = {"l1_cache",       "l2_cache",    "dram", "register_file",
                                        "texture_memory", "texture_shm", "cbu",  "sram"};
    if (location < 0 || location > 7) {
        count_call(__func__);
        return RC_INVALID_ARGUMENT;
    }
    return ecc_counter(__func__, d, type, counter, names[location], n);
}

/* "retired_pages": {"sbe": [[address, unix_seconds], ...], "dbe": [...]}; absent: unsupported. */
static int retired(const char *fn, nvmlDevice_t d, int cause, unsigned *count,
                   unsigned long long *addr, unsigned long long *ts)
{
    count_call(fn);
    if (!valid_device(d) || !count || cause < 0 || cause > 1)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    int rc = call_status(d, "retired_pages", "retired_pages");
    if (rc != RC_SUCCESS)
        return rc;
    json_t *rp = json_object_get(d->j, "retired_pages");
    if (!json_is_object(rp))
        return RC_NOT_SUPPORTED;
    json_t *list = json_object_get(rp, cause ? "dbe" : "sbe");
    unsigned n = (unsigned)json_array_size(list);
    if (*count < n || (n && !addr)) {
        *count = n;
        return n ? RC_INSUFFICIENT_SIZE : RC_SUCCESS;
    }
    for (unsigned i = 0; i < n; i++) {
        json_t *e = json_array_get(list, i);
        addr[i] = (unsigned long long)json_integer_value(json_array_get(e, 0));
        if (ts)
            ts[i] = (unsigned long long)json_integer_value(json_array_get(e, 1));
    }
    *count = n;
    return RC_SUCCESS;
}

int nvmlDeviceGetRetiredPages(nvmlDevice_t d, int cause, unsigned *count, unsigned long long *addr)
{
    return retired(__func__, d, cause, count, addr, NULL);
}

int nvmlDeviceGetRetiredPages_v2(nvmlDevice_t d, int cause, unsigned *count,
                                 unsigned long long *addr, unsigned long long *ts)
{
    return retired(__func__, d, cause, count, addr, ts);
}

int nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t d, int *pending)
{
    return u32_metric(__func__, d, "retired_pending", "retired_pages", (unsigned *)pending);
}

int nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned *corr, unsigned *unc, unsigned *pending,
                              unsigned *failure)
{
    int rc = u32_metric(__func__, d, "remap_corr", "remapped_rows", corr);
    if (rc == RC_SUCCESS)
        rc = u32_metric(__func__, d, "remap_unc", "remapped_rows", unc);
    if (rc == RC_SUCCESS)
        rc = u32_metric(__func__, d, "remap_pending", "remapped_rows", pending);
    return rc != RC_SUCCESS ? rc
                            : u32_metric(__func__, d, "remap_failure", "remapped_rows", failure);
}

int nvmlDeviceGetRowRemapperHistogram(nvmlDevice_t d, unsigned *values /* 5 */)
{
    count_call(__func__);
    if (!valid_device(d) || !values)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    int rc = call_status(d, "remap_histogram", "remapped_rows");
    if (rc != RC_SUCCESS)
        return rc;
    json_t *h = json_object_get(d->j, "remap_histogram");
    if (json_array_size(h) != 5)
        return RC_NOT_SUPPORTED;
    for (size_t i = 0; i < 5; i++)
        values[i] = (unsigned)json_integer_value(json_array_get(h, i));
    return RC_SUCCESS;
}

/* nvmlFieldValue_t */
typedef struct {
    unsigned fieldId, scopeId;
    long long timestamp, latencyUsec;
    int valueType, nvmlReturn;
    union {
        double d;
        unsigned ui;
        unsigned long long ull;
        int si;
    } value;
} fake_field_value;

/* The field ids gpumon asks for and the scenario key of each. */
static const struct {
    unsigned id;
    const char *key;
} field_keys[] = {
    {82, "temp_mem"},
    {185, "power_avg_mw"},
    {186, "power_instant_mw"},
    {74, "violation_power_ns"},
    {75, "violation_thermal_ns"},
    {76, "violation_sync_boost_ns"},
    {269, "violation_sw_thermal_ns"},
    {270, "violation_hw_thermal_ns"},
    {271, "violation_hw_power_brake_ns"},
    {138, "nvlink_tx_kib"},
    {139, "nvlink_rx_kib"},
    {38, "nvlink_crc_flit"},
    {45, "nvlink_crc_data"},
    {52, "nvlink_replay"},
    {59, "nvlink_recovery"},
    {230, "recovery_action"},
    {274, "edpp_multiplier"},
    {193, "temp_shutdown_tlimit"},
    {194, "temp_slowdown_tlimit"},
    {195, "temp_mem_max_tlimit"},
    {196, "temp_gpu_max_tlimit"},
    {95, "pcie_replay_rollover"},
    {187, "power_min_limit_mw"},
    {188, "power_max_limit_mw"},
    {189, "power_default_limit_mw"},
    {190, "power_limit_mw"},
    {192, "power_req_limit_mw"},
    {228, "pcie_atomics_out"},
    {229, "pcie_atomics_in"},
    {251, "power_smoothing"},
};

int nvmlDeviceGetFieldValues(nvmlDevice_t d, int n, fake_field_value *values)
{
    count_call(__func__);
    if (!valid_device(d) || n <= 0 || !values)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    if (d->lost)
        return RC_GPU_IS_LOST;
    for (int i = 0; i < n; i++) {
        fake_field_value *f = &values[i];
        const char *key = NULL;
        for (size_t k = 0; k < sizeof field_keys / sizeof *field_keys && !key; k++)
            if (field_keys[k].id == f->fieldId)
                key = field_keys[k].key;
        /* Power fields of another scope (nvmlPowerScopeType_t: MODULE 1, MEMORY 2) answer the
         * key with that prefix: "memory_power_avg_mw", "module_power_limit_mw". */
        char scoped[64];
        if (key && f->fieldId >= 185 && f->fieldId <= 192 && f->scopeId != 0) {
            if (f->scopeId > 2) {
                f->nvmlReturn = RC_NOT_SUPPORTED;
                continue;
            }
            snprintf(scoped, sizeof scoped, "%s_%s", f->scopeId == 1 ? "module" : "memory", key);
            key = scoped;
        }
        unsigned long long v = 0;
        f->nvmlReturn = key ? call_status(d, key, "fields") : RC_NOT_SUPPORTED;
        if (f->nvmlReturn == RC_SUCCESS)
            f->nvmlReturn = num(d, key, &v);
        if (f->nvmlReturn != RC_SUCCESS)
            continue;
        /* Temperature and power come as unsigned int, counters as unsigned long long, as the
         * driver gives them. */
        if (f->fieldId >= 193 && f->fieldId <= 196) { /* T.Limit margins: signed int */
            f->valueType = 5;
            f->value.si = (int)v;
        } else if (f->fieldId == 82 || (f->fieldId >= 185 && f->fieldId <= 192) ||
                   f->fieldId == 230 || f->fieldId == 274 || f->fieldId == 228 ||
                   f->fieldId == 229 || f->fieldId == 251) {
            f->valueType = 1;
            f->value.ui = (unsigned)v;
        } else {
            f->valueType = 3;
            f->value.ull = v;
        }
    }
    return RC_SUCCESS;
}

/* "nvlink": [1, 1, 0, ...], the state of each link (its length is the number of links). */
int nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned link, int *active)
{
    count_call(__func__);
    if (!valid_device(d) || !active)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    int rc = call_status(d, "nvlink", "nvlink");
    if (rc != RC_SUCCESS)
        return rc;
    json_t *links = json_object_get(d->j, "nvlink");
    if (!json_is_array(links))
        return RC_NOT_SUPPORTED;
    if (link >= json_array_size(links))
        return RC_INVALID_ARGUMENT;
    *active = (int)json_integer_value(json_array_get(links, link));
    return RC_SUCCESS;
}

/* ---- events: "xid": [{"at": N, "xid": 79}, ...] fires once the GPU's read N has been made -- */

typedef struct {
    nvmlDevice_t device;
    unsigned long long eventType, eventData;
    unsigned gpuInstanceId, computeInstanceId;
} fake_event_data;

typedef struct fake_event_set {
    int magic;
} fake_event_set;

int nvmlEventSetCreate(fake_event_set **set)
{
    count_call(__func__);
    if (F.refcount == 0)
        return RC_UNINITIALIZED;
    if (!set)
        return RC_INVALID_ARGUMENT;
    *set = calloc(1, sizeof **set);
    if (!*set)
        return RC_UNKNOWN;
    (*set)->magic = 0x5e7;
    return RC_SUCCESS;
}

int nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, fake_event_set *set)
{
    count_call(__func__);
    if (!valid_device(d) || !set)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    int rc = call_status(d, "events", "events");
    if (rc != RC_SUCCESS)
        return rc;
    pthread_mutex_lock(&fake_mu);
    if (types & 0x8ULL)
        d->xid_registered = true;
    pthread_mutex_unlock(&fake_mu);
    return RC_SUCCESS;
}

/* Delivers the first due XID of a registered GPU, else blocks until one is due or the timeout
 * passes. */
static int event_wait(const char *fn, fake_event_set *set, fake_event_data *data, unsigned ms)
{
    count_call(fn);
    if (F.refcount == 0)
        return RC_UNINITIALIZED;
    if (!set || set->magic != 0x5e7 || !data)
        return RC_INVALID_ARGUMENT;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until); /* the condition variable's default clock */
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&fake_mu);
    for (bool timed_out = ms == 0;;) { /* 0: look once, as a poll */
        for (unsigned i = 0; i < F.n; i++) {
            fake_gpu *g = &F.gpus[i];
            json_t *list = json_object_get(g->j, "xid");
            json_t *e = json_array_get(list, g->xid_delivered);
            if (!g->xid_registered || !e || g->lost)
                continue;
            json_t *at = json_object_get(e, "at");
            if (json_is_integer(at) && g->util_calls < (unsigned long)json_integer_value(at))
                continue;
            g->xid_delivered++;
            memset(data, 0, sizeof *data);
            data->device = g;
            data->eventType = 0x8ULL;
            data->eventData = (unsigned long long)json_integer_value(json_object_get(e, "xid"));
            data->gpuInstanceId = data->computeInstanceId = 0xFFFFFFFFu;
            pthread_mutex_unlock(&fake_mu);
            return RC_SUCCESS;
        }
        if (timed_out)
            break;
        /* On ETIMEDOUT the loop looks once more, as the 5 ms poll it replaces did. */
        timed_out = pthread_cond_timedwait(&fake_event_cv, &fake_mu, &until) != 0;
    }
    pthread_mutex_unlock(&fake_mu);
    return 10; /* TIMEOUT */
}

int nvmlEventSetWait_v2(fake_event_set *set, fake_event_data *data, unsigned ms)
{
    return event_wait(__func__, set, data, ms);
}

int nvmlEventSetWait(fake_event_set *set, fake_event_data *data, unsigned ms)
{
    return event_wait(__func__, set, data, ms);
}

int nvmlEventSetFree(fake_event_set *set)
{
    count_call(__func__);
    if (!set || set->magic != 0x5e7)
        return RC_INVALID_ARGUMENT;
    set->magic = 0;
    free(set);
    return RC_SUCCESS;
}

/* Test hook: XIDs delivered for GPU index since nvmlInit. */
unsigned long fake_nvml_xid_delivered(unsigned index)
{
    pthread_mutex_lock(&fake_mu);
    unsigned long n = index < F.n ? F.gpus[index].xid_delivered : 0;
    pthread_mutex_unlock(&fake_mu);
    return n;
}

/* ---- GPM: "gpm": {"gr": 45.5, "sm": ..., ...} on a GPU that has it --------------------------- */

typedef struct fake_gpm_sample {
    fake_gpu *g;
    unsigned long read;  /* the GPU's utilisation read when taken */
    const fake_mig *mig; /* a GPU instance's sample (nvmlGpmMigSampleGet), else NULL */
} fake_gpm_sample;

typedef struct {
    unsigned metricId;
    int nvmlReturn;
    double value;
    struct {
        char *shortName, *longName, *unit;
    } metricInfo;
} fake_gpm_metric;

typedef struct {
    unsigned version, numMetrics;
    fake_gpm_sample *sample1, *sample2;
    fake_gpm_metric metrics[333];
} fake_gpm_metrics_get;

int nvmlGpmQueryDeviceSupport(nvmlDevice_t d, unsigned *support /* {version, supported} */)
{
    count_call(__func__);
    if (!valid_device(d) || !support)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    if (support[0] != 1)
        return RC_ARGUMENT_VERSION_MISMATCH;
    support[1] = json_is_object(json_object_get(d->j, "gpm"));
    return RC_SUCCESS;
}

int nvmlGpmSampleAlloc(fake_gpm_sample **s)
{
    count_call(__func__);
    if (!s)
        return RC_INVALID_ARGUMENT;
    *s = calloc(1, sizeof **s);
    return *s ? RC_SUCCESS : RC_UNKNOWN;
}

int nvmlGpmSampleFree(fake_gpm_sample *s)
{
    count_call(__func__);
    free(s);
    return RC_SUCCESS;
}

int nvmlGpmSampleGet(nvmlDevice_t d, fake_gpm_sample *s)
{
    count_call(__func__);
    if (!valid_device(d) || !s)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    int rc = call_status(d, "gpm", "gpm");
    if (rc != RC_SUCCESS)
        return rc;
    s->g = d;
    s->read = d->util_calls;
    s->mig = NULL;
    return RC_SUCCESS;
}

/* A GPU instance's sample: its MIG device's "gpm" object ({"sm", "dram", "tensor"}, numbers
 * or per-read arrays) answers nvmlGpmMetricsGet; a MIG device without one answers 3
 * NOT_SUPPORTED (a driver that gives no GPM per instance), a GPU instance id that names no MIG
 * device 2 INVALID_ARGUMENT. */
int nvmlGpmMigSampleGet(nvmlDevice_t d, unsigned gi, fake_gpm_sample *s)
{
    count_call(__func__);
    if (!valid_device(d) || !s)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    if (d->lost)
        return RC_GPU_IS_LOST;
    for (unsigned i = 0; i < F.nmig; i++) {
        const fake_mig *m = &F.migs[i];
        json_t *id = m->j ? json_object_get(m->j, "gpu_instance_id") : NULL;
        if (m->parent != d || mig_gone(m) || !json_is_integer(id) ||
            (unsigned)json_integer_value(id) != gi)
            continue;
        if (!json_is_object(json_object_get(m->j, "gpm")))
            return RC_NOT_SUPPORTED;
        s->g = d;
        s->read = d->util_calls;
        s->mig = m;
        return RC_SUCCESS;
    }
    return RC_INVALID_ARGUMENT;
}

int nvmlGpmMetricsGet(fake_gpm_metrics_get *q)
{
    static const struct {
        unsigned id;
        const char *key;
    } keys[] = {{1, "gr"},       {2, "sm"},       {3, "sm_occupancy"}, {5, "tensor"},
                {10, "dram"},    {11, "fp64"},    {12, "fp32"},        {13, "fp16"},
                {20, "pcie_tx"}, {21, "pcie_rx"}, {60, "nvlink_rx"},   {61, "nvlink_tx"}};
    count_call(__func__);
    if (!q)
        return RC_INVALID_ARGUMENT;
    if (q->version != 1)
        return RC_ARGUMENT_VERSION_MISMATCH;
    if (!q->sample1 || !q->sample2 || !q->sample1->g || q->sample1->g != q->sample2->g ||
        q->sample1->mig != q->sample2->mig || q->numMetrics > 333)
        return RC_INVALID_ARGUMENT;
    fake_gpu *g = q->sample2->g;
    json_t *gpm = json_object_get(q->sample2->mig ? q->sample2->mig->j : g->j, "gpm");
    for (unsigned i = 0; i < q->numMetrics; i++) {
        fake_gpm_metric *m = &q->metrics[i];
        m->nvmlReturn = RC_NOT_SUPPORTED;
        for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
            if (keys[k].id != m->metricId)
                continue;
            json_t *v = current(g, json_object_get(gpm, keys[k].key));
            if (json_is_number(v)) {
                m->value = json_number_value(v);
                m->nvmlReturn = RC_SUCCESS;
            }
        }
    }
    return RC_SUCCESS;
}

/* ---- what nvidia-smi -q prints besides: application clocks, power management, BAR1, board,
 * thresholds, infoROM validation, platform, inactive remapped rows (keys in the README) ---- */

int nvmlDeviceGetPowerManagementMode(nvmlDevice_t d, int *mode)
{
    return u32_metric(__func__, d, "power_management", "power_management", (unsigned *)mode);
}

/* nvmlClockType_t: GRAPHICS 0, SM 1, MEM 2, VIDEO 3; the scenario has graphics and memory. */
static const char *app_clock_key(int type, bool def)
{
    if (type == 0)
        return def ? "default_app_clock_gr" : "app_clock_gr";
    if (type == 2)
        return def ? "default_app_clock_mem" : "app_clock_mem";
    return NULL;
}

int nvmlDeviceGetApplicationsClock(nvmlDevice_t d, int type, unsigned *mhz)
{
    const char *key = app_clock_key(type, false);
    if (!key) {
        count_call(__func__);
        return RC_NOT_SUPPORTED;
    }
    return u32_metric(__func__, d, key, "app_clocks", mhz);
}

int nvmlDeviceGetDefaultApplicationsClock(nvmlDevice_t d, int type, unsigned *mhz)
{
    const char *key = app_clock_key(type, true);
    if (!key) {
        count_call(__func__);
        return RC_NOT_SUPPORTED;
    }
    return u32_metric(__func__, d, key, "app_clocks", mhz);
}

/* "bar1_total", "bar1_used", "bar1_free" in bytes (all three needed). */
int nvmlDeviceGetBAR1MemoryInfo(nvmlDevice_t d, fake_memory *m)
{
    count_call(__func__);
    if (!valid_device(d) || !m)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    int rc = metric(d, "bar1_total", "bar1", &m->total);
    if (rc == RC_SUCCESS)
        rc = metric(d, "bar1_used", "bar1", &m->used);
    if (rc == RC_SUCCESS)
        rc = metric(d, "bar1_free", "bar1", &m->free);
    return rc;
}

int nvmlDeviceGetBoardId(nvmlDevice_t d, unsigned *id)
{
    return u32_metric(__func__, d, "board_id", "board", id);
}

int nvmlDeviceGetMultiGpuBoard(nvmlDevice_t d, unsigned *multi)
{
    return u32_metric(__func__, d, "multigpu_board", "board", multi);
}

int nvmlDeviceGetBrand(nvmlDevice_t d, int *brand)
{
    return u32_metric(__func__, d, "brand", "board", (unsigned *)brand);
}

int nvmlDeviceGetArchitecture(nvmlDevice_t d, unsigned *arch)
{
    return u32_metric(__func__, d, "architecture", "board", arch);
}

/* nvmlTemperatureThresholds_t: SHUTDOWN 0, SLOWDOWN 1, MEM_MAX 2, GPU_MAX 3. */
int nvmlDeviceGetTemperatureThreshold(nvmlDevice_t d, int type, unsigned *c)
{
    static const char *const keys[] = {"temp_shutdown", "temp_slowdown", "temp_mem_max",
                                       "temp_gpu_max"};
    if (type < 0 || type > 3) {
        count_call(__func__);
        return RC_NOT_SUPPORTED;
    }
    return u32_metric(__func__, d, keys[type], "temp_thresholds", c);
}

/* "inforom_valid": true answers SUCCESS, false 14 CORRUPTED_INFOROM; left out: NOT_SUPPORTED. */
int nvmlDeviceValidateInforom(nvmlDevice_t d)
{
    unsigned ok;
    int rc = u32_metric(__func__, d, "inforom_valid", "inforom_valid", &ok);
    return rc != RC_SUCCESS ? rc : ok ? RC_SUCCESS : 14;
}

typedef struct {
    unsigned version;
    unsigned char ibGuid[16];
    unsigned char chassisSerialNumber[16];
    unsigned char slotNumber, trayIndex, hostId, peerType, moduleId;
} fake_platform_info;

/* "platform": {"chassis_serial", "slot", "tray", "host_id", "peer_type", "module_id", "ib_guid"
 * (hex, up to 32 digits)}; checks the v2 version word. */
int nvmlDeviceGetPlatformInfo(nvmlDevice_t d, fake_platform_info *p)
{
    count_call(__func__);
    if (!valid_device(d) || !p)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    if (p->version != (unsigned)(sizeof *p | 2u << 24))
        return RC_ARGUMENT_VERSION_MISMATCH;
    int rc = call_status(d, "platform", "platform");
    if (rc != RC_SUCCESS)
        return rc;
    json_t *o = json_object_get(d->j, "platform");
    if (!json_is_object(o))
        return RC_NOT_SUPPORTED;
    memset(p->ibGuid, 0, sizeof p->ibGuid);
    memset(p->chassisSerialNumber, 0, sizeof p->chassisSerialNumber);
    json_t *sn = json_object_get(o, "chassis_serial");
    if (json_is_string(sn))
        memcpy(p->chassisSerialNumber, json_string_value(sn),
               strnlen(json_string_value(sn), sizeof p->chassisSerialNumber));
    json_t *gv = json_object_get(o, "ib_guid");
    const char *hex = json_is_string(gv) ? json_string_value(gv) : "";
    for (size_t i = 0; hex[i] && i < 2 * sizeof p->ibGuid; i++) {
        unsigned nib;
        if (sscanf(hex + i, "%1x", &nib) != 1)
            break;
        p->ibGuid[i / 2] |= (unsigned char)(i % 2 ? nib : nib << 4);
    }
    p->slotNumber = (unsigned char)json_integer_value(json_object_get(o, "slot"));
    p->trayIndex = (unsigned char)json_integer_value(json_object_get(o, "tray"));
    p->hostId = (unsigned char)json_integer_value(json_object_get(o, "host_id"));
    p->peerType = (unsigned char)json_integer_value(json_object_get(o, "peer_type"));
    p->moduleId = (unsigned char)json_integer_value(json_object_get(o, "module_id"));
    return RC_SUCCESS;
}

typedef struct {
    unsigned corrActiveRemaps, corrInactiveRemaps, uncActiveRemaps, uncInactiveRemaps, bPending,
        bFailureOccurred;
} fake_remapped_rows_v2;

/* Driver 580 has it (590 ships no such symbol): the classic keys plus "remap_corr_inactive" and
 * "remap_unc_inactive"; either left out: NOT_SUPPORTED. */
int nvmlDeviceGetRemappedRows_v2(nvmlDevice_t d, fake_remapped_rows_v2 *r)
{
    if (!r) {
        count_call(__func__);
        return RC_INVALID_ARGUMENT;
    }
    int rc =
        u32_metric(__func__, d, "remap_corr_inactive", "remapped_rows", &r->corrInactiveRemaps);
    if (rc == RC_SUCCESS)
        rc = u32_metric(__func__, d, "remap_unc_inactive", "remapped_rows", &r->uncInactiveRemaps);
    if (rc == RC_SUCCESS)
        rc = nvmlDeviceGetRemappedRows(d, &r->corrActiveRemaps, &r->uncActiveRemaps, &r->bPending,
                                       &r->bFailureOccurred);
    return rc;
}

/* "virtualization_mode": nvmlGpuVirtualizationMode_t (1 pass-through). */
int nvmlDeviceGetVirtualizationMode(nvmlDevice_t d, int *mode)
{
    return u32_metric(__func__, d, "virtualization_mode", "virtualization_mode", (unsigned *)mode);
}

/* "clock_max_boost_gr": the graphics clock (type 0) only, as boards report it. */
int nvmlDeviceGetMaxCustomerBoostClock(nvmlDevice_t d, int type, unsigned *mhz)
{
    if (type != 0) {
        count_call(__func__);
        return RC_NOT_SUPPORTED;
    }
    return u32_metric(__func__, d, "clock_max_boost_gr", "clock_max_boost", mhz);
}

/* "supported_clocks": [{"mem": MHz, "graphics": [MHz, ...]}, ...], highest first as the driver
 * lists them. Both calls answer INSUFFICIENT_SIZE with the count needed when *count is short. */
static int clock_list(json_t *list, unsigned *count, unsigned *mhz, const char *member)
{
    size_t n = json_array_size(list);
    if (*count < n) {
        *count = (unsigned)n;
        return RC_INSUFFICIENT_SIZE;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(list, i);
        mhz[i] = (unsigned)json_integer_value(member ? json_object_get(v, member) : v);
    }
    *count = (unsigned)n;
    return RC_SUCCESS;
}

int nvmlDeviceGetSupportedMemoryClocks(nvmlDevice_t d, unsigned *count, unsigned *mhz)
{
    count_call(__func__);
    if (!valid_device(d) || !count)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    int rc = call_status(d, "supported_clocks", "supported_clocks");
    if (rc != RC_SUCCESS)
        return rc;
    json_t *list = json_object_get(d->j, "supported_clocks");
    if (!json_is_array(list))
        return RC_NOT_SUPPORTED;
    return clock_list(list, count, mhz, "mem");
}

int nvmlDeviceGetSupportedGraphicsClocks(nvmlDevice_t d, unsigned mem, unsigned *count,
                                         unsigned *mhz)
{
    count_call(__func__);
    if (!valid_device(d) || !count)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    int rc = call_status(d, "supported_clocks", "supported_clocks");
    if (rc != RC_SUCCESS)
        return rc;
    json_t *list = json_object_get(d->j, "supported_clocks");
    if (!json_is_array(list))
        return RC_NOT_SUPPORTED;
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *e = json_array_get(list, i);
        if (json_integer_value(json_object_get(e, "mem")) == (json_int_t)mem)
            return clock_list(json_object_get(e, "graphics"), count, mhz, NULL);
    }
    return RC_INVALID_ARGUMENT;
}
#endif

/* ---- the rest of what nvidia-smi -q prints (keys in the README): left out, NOT_SUPPORTED ---- */
#if !FAKE_NVML_OLD_DRIVER

/* A device string with no default: the scenario's, NOT_SUPPORTED when left out. */
static int dev_string(const char *fn, nvmlDevice_t d, const char *key, char *buf, unsigned len)
{
    count_call(fn);
    if (!valid_device(d))
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    int rc = call_status(d, key, key);
    if (rc != RC_SUCCESS)
        return rc;
    json_t *v = json_object_get(d->j, key);
    return json_is_string(v) ? copy_out(json_string_value(v), buf, len) : RC_NOT_SUPPORTED;
}

/* The version word of a versioned struct: sizeof | version << 24. */
static bool version_ok(unsigned word, size_t size, unsigned version)
{
    return word == (unsigned)(size | version << 24);
}

int nvmlDeviceGetBoardPartNumber(nvmlDevice_t d, char *part, unsigned length)
{
    return dev_string(__func__, d, "board_part_number", part, length);
}

/* The caller's buffer is NVML_GSP_FIRMWARE_VERSION_BUF_SIZE (64) bytes. */
int nvmlDeviceGetGspFirmwareVersion(nvmlDevice_t d, char *version)
{
    return dev_string(__func__, d, "gsp_firmware_version", version, 64);
}

typedef struct {
    unsigned version;
    unsigned long long value;
} fake_pdi;

/* "pdi": the 64-bit id as a hex string ("0x6532c2bae99fea9c"). */
int nvmlDeviceGetPdi(nvmlDevice_t d, fake_pdi *pdi)
{
    char hex[32];
    if (!pdi) {
        count_call(__func__);
        return RC_INVALID_ARGUMENT;
    }
    int rc = dev_string(__func__, d, "pdi", hex, sizeof hex);
    if (rc != RC_SUCCESS)
        return rc;
    if (!version_ok(pdi->version, sizeof *pdi, 1))
        return RC_ARGUMENT_VERSION_MISMATCH;
    pdi->value = strtoull(hex, NULL, 16);
    return RC_SUCCESS;
}

/* "bbx_flush_time", "bbx_flush_duration_us" (both needed). */
int nvmlDeviceGetLastBBXFlushTime(nvmlDevice_t d, unsigned long long *ts, unsigned long *us)
{
    unsigned long long v = 0;
    if (!us) {
        count_call(__func__);
        return RC_INVALID_ARGUMENT;
    }
    int rc = u64_metric(__func__, d, "bbx_flush_time", "bbx_flush", ts);
    if (rc == RC_SUCCESS)
        rc = metric(d, "bbx_flush_duration_us", "bbx_flush", &v);
    if (rc == RC_SUCCESS)
        *us = (unsigned long)v;
    return rc;
}

/* "host_vgpu_mode": nvmlHostVgpuMode_t (0 non SR-IOV, 1 SR-IOV). */
int nvmlDeviceGetHostVgpuMode(nvmlDevice_t d, int *mode)
{
    return u32_metric(__func__, d, "host_vgpu_mode", "host_vgpu_mode", (unsigned *)mode);
}

typedef struct {
    unsigned version, value;
} fake_versioned_u32;

/* A versioned struct of one value (vGPU heterogeneous mode, DRAM encryption, capabilities). */
static int versioned_u32(const char *fn, nvmlDevice_t d, const char *key, const char *group,
                         fake_versioned_u32 *out)
{
    if (!out) {
        count_call(fn);
        return RC_INVALID_ARGUMENT;
    }
    unsigned v = 0;
    int rc = u32_metric(fn, d, key, group, &v);
    if (rc != RC_SUCCESS)
        return rc;
    if (!version_ok(out->version, sizeof *out, 1))
        return RC_ARGUMENT_VERSION_MISMATCH;
    out->value = v;
    return RC_SUCCESS;
}

/* "vgpu_heterogeneous_mode": 0/1. */
int nvmlDeviceGetVgpuHeterogeneousMode(nvmlDevice_t d, fake_versioned_u32 *mode)
{
    return versioned_u32(__func__, d, "vgpu_heterogeneous_mode", "vgpu_heterogeneous_mode", mode);
}

typedef struct {
    unsigned char bridgeCount;
    struct {
        int type;
        unsigned fwVersion;
    } bridgeChipInfo[128];
} fake_bridge_hierarchy;

/* "bridge_chips": [{"type": 0, "fw": N}, ...], the nearest bridge first ([] : none). */
int nvmlDeviceGetBridgeChipInfo(nvmlDevice_t d, fake_bridge_hierarchy *h)
{
    count_call(__func__);
    if (!valid_device(d) || !h)
        return F.refcount ? RC_INVALID_ARGUMENT : RC_UNINITIALIZED;
    int rc = call_status(d, "bridge_chips", "bridge_chips");
    if (rc != RC_SUCCESS)
        return rc;
    json_t *list = json_object_get(d->j, "bridge_chips");
    if (!json_is_array(list))
        return RC_NOT_SUPPORTED;
    size_t n = json_array_size(list) < 128 ? json_array_size(list) : 128;
    h->bridgeCount = (unsigned char)n;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(list, i);
        h->bridgeChipInfo[i].type = (int)json_integer_value(json_object_get(e, "type"));
        h->bridgeChipInfo[i].fwVersion = (unsigned)json_integer_value(json_object_get(e, "fw"));
    }
    return RC_SUCCESS;
}

typedef struct {
    unsigned sessionsCount, averageFPS, averageLatency;
} fake_fbc_stats;

/* "fbc_sessions", "fbc_fps", "fbc_latency" (all three needed). */
int nvmlDeviceGetFBCStats(nvmlDevice_t d, fake_fbc_stats *st)
{
    if (!st) {
        count_call(__func__);
        return RC_INVALID_ARGUMENT;
    }
    int rc = u32_metric(__func__, d, "fbc_sessions", "fbc", &st->sessionsCount);
    unsigned long long v = 0;
    if (rc == RC_SUCCESS && (rc = metric(d, "fbc_fps", "fbc", &v)) == RC_SUCCESS)
        st->averageFPS = (unsigned)v;
    if (rc == RC_SUCCESS && (rc = metric(d, "fbc_latency", "fbc", &v)) == RC_SUCCESS)
        st->averageLatency = (unsigned)v;
    return rc;
}

/* "dram_encryption", "dram_encryption_pending": nvmlEnableState_t (both needed). */
int nvmlDeviceGetDramEncryptionMode(nvmlDevice_t d, fake_versioned_u32 *cur,
                                    fake_versioned_u32 *pending)
{
    if (!pending) {
        count_call(__func__);
        return RC_INVALID_ARGUMENT;
    }
    int rc = versioned_u32(__func__, d, "dram_encryption", "dram_encryption", cur);
    unsigned long long v = 0;
    if (rc == RC_SUCCESS)
        rc = metric(d, "dram_encryption_pending", "dram_encryption", &v);
    if (rc == RC_SUCCESS && !version_ok(pending->version, sizeof *pending, 1))
        rc = RC_ARGUMENT_VERSION_MISMATCH;
    if (rc == RC_SUCCESS)
        pending->value = (unsigned)v;
    return rc;
}

typedef struct {
    unsigned version, bChannelRepairPending, bTpcRepairPending;
} fake_repair_status;

/* "repair_channel_pending", "repair_tpc_pending": 0/1 (both needed). */
int nvmlDeviceGetRepairStatus(nvmlDevice_t d, fake_repair_status *r)
{
    if (!r) {
        count_call(__func__);
        return RC_INVALID_ARGUMENT;
    }
    unsigned ch = 0;
    int rc = u32_metric(__func__, d, "repair_channel_pending", "repair", &ch);
    unsigned long long tpc = 0;
    if (rc == RC_SUCCESS)
        rc = metric(d, "repair_tpc_pending", "repair", &tpc);
    if (rc == RC_SUCCESS && !version_ok(r->version, sizeof *r, 1))
        rc = RC_ARGUMENT_VERSION_MISMATCH;
    if (rc == RC_SUCCESS) {
        r->bChannelRepairPending = ch;
        r->bTpcRepairPending = (unsigned)tpc;
    }
    return rc;
}

/* "unrepairable_memory": 0/1 (nvmlUnrepairableMemoryStatus_v1_t has no version word). */
int nvmlDeviceGetUnrepairableMemoryFlag_v1(nvmlDevice_t d, unsigned *flag)
{
    return u32_metric(__func__, d, "unrepairable_memory", "unrepairable_memory", flag);
}

typedef struct {
    unsigned version;
    unsigned perf[8], requested[8], enforced[8];
} fake_power_profiles;

/* "power_profiles_requested", "power_profiles_enforced": the first 32 bits of each mask. */
int nvmlDeviceWorkloadPowerProfileGetCurrentProfiles(nvmlDevice_t d, fake_power_profiles *pp)
{
    if (!pp) {
        count_call(__func__);
        return RC_INVALID_ARGUMENT;
    }
    unsigned req = 0;
    int rc = u32_metric(__func__, d, "power_profiles_requested", "power_profiles", &req);
    unsigned long long enf = 0;
    if (rc == RC_SUCCESS)
        rc = metric(d, "power_profiles_enforced", "power_profiles", &enf);
    if (rc == RC_SUCCESS && !version_ok(pp->version, sizeof *pp, 1))
        rc = RC_ARGUMENT_VERSION_MISMATCH;
    if (rc == RC_SUCCESS) {
        memset(pp->perf, 0, sizeof pp->perf + sizeof pp->requested + sizeof pp->enforced);
        pp->perf[0] = req | (unsigned)enf;
        pp->requested[0] = req;
        pp->enforced[0] = (unsigned)enf;
    }
    return rc;
}

/* "auto_boost", "auto_boost_default": nvmlEnableState_t (both needed). */
int nvmlDeviceGetAutoBoostedClocksEnabled(nvmlDevice_t d, int *on, int *def)
{
    if (!def) {
        count_call(__func__);
        return RC_INVALID_ARGUMENT;
    }
    int rc = u32_metric(__func__, d, "auto_boost", "auto_boost", (unsigned *)on);
    unsigned long long v = 0;
    if (rc == RC_SUCCESS && (rc = metric(d, "auto_boost_default", "auto_boost", &v)) == RC_SUCCESS)
        *def = (int)v;
    return rc;
}

/* "capabilities": the capMask (NVML_DEV_CAP_EGM = bit 0). */
int nvmlDeviceGetCapabilities(nvmlDevice_t d, fake_versioned_u32 *caps)
{
    return versioned_u32(__func__, d, "capabilities", "capabilities", caps);
}
#endif
