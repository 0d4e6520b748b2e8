/* amd_common.h - what the two AMD library providers (amd_smi.c: libamd_smi, rocm_smi.c:
 * librocm_smi64) share: the library loaded once per process, the open, the sample pass over the
 * GPUs with its lost-GPU rule, and the metrics every AMD reader derives alike (amd_sysfs.c uses
 * those too). Each library supplies its reads as the small functions of a gm_amd_ops. Internal to
 * collect/. */
#ifndef GM_AMD_COMMON_H
#define GM_AMD_COMMON_H

#include "collect/provider.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef int (*gm_amd_init_fn)(uint64_t);
typedef int (*gm_amd_void_fn)(void);
typedef int (*gm_amd_status_string_fn)(int, const char **);

/* A vendor library, loaded and initialised once per process however many collectors open it (the
 * daemon and a one-shot command in the same process share it), shut down with the last. One
 * static instance per library, made by GM_AMD_LIB; what is above `mu` is its description. */
typedef struct gm_amd_lib {
    const char *what;         /* the library in messages: "amdsmi", "ROCm SMI" */
    const char *noun;         /* "an amdsmi library" */
    const char *env;          /* the variable naming another path */
    const char *default_path; /* dlopen'ed when env is unset */
    const char *init_name;    /* its init(uint64_t flags), called with init_flags */
    uint64_t init_flags;
    const char *shut_down_name;  /* its shut_down(void) */
    const char *status_name;     /* its status_string(int, const char **), optional */
    const char *unknown_status;  /* said for a status the library has no words for */
    const char *const *required; /* the other functions it must export, NULL-terminated */
    /* Before init: the optional functions from dl into syms, the required ones given in order. */
    void (*resolve)(void *dl, void **required);
    /* After init, NULL when nothing: GM_OK, or an error to refuse the library (shut down). */
    int (*ready)(struct gm_amd_lib *lib, const char *path, gm_error *err);
    void *syms; /* the library's own function table, zeroed while it is not loaded */
    size_t syms_size;
    pthread_mutex_t mu;
    void *dl;
    char path[256];
    unsigned refs;
    gm_amd_void_fn shut_down; /* set once initialised: the last release owes the call */
    gm_amd_status_string_fn status_string;
} gm_amd_lib;

/* Defines the library prefix_lib (see gm_amd_lib for the rest) whose functions prefix_resolve
 * (declared here, defined after) puts into prefix_sym, of the type prefix_syms, and whose required
 * functions besides init and shut down are prefix_required. */
#define GM_AMD_LIB(prefix, what_, noun_, env_, path_, init_, flags_, shut_down_, status_, ready_) \
    static prefix##_syms prefix##_sym;                                                            \
    static void prefix##_resolve(void *dl, void **required);                                      \
    static gm_amd_lib prefix##_lib = {                                                            \
        .what = what_,                                                                            \
        .noun = noun_,                                                                            \
        .env = env_,                                                                              \
        .default_path = path_,                                                                    \
        .init_name = init_,                                                                       \
        .init_flags = flags_,                                                                     \
        .shut_down_name = shut_down_,                                                             \
        .status_name = status_,                                                                   \
        .unknown_status = "unknown " what_ " status",                                             \
        .required = prefix##_required,                                                            \
        .resolve = prefix##_resolve,                                                              \
        .ready = ready_,                                                                          \
        .syms = &prefix##_sym,                                                                    \
        .syms_size = sizeof prefix##_sym,                                                         \
        .mu = PTHREAD_MUTEX_INITIALIZER,                                                          \
    }

/* The words of the library's status rc. */
const char *gm_amd_strerror(const gm_amd_lib *lib, int rc);

/* What one pass over a GPU learned: whether any call worked, and the first real failure. */
typedef struct gm_amd_pass {
    bool any_ok;
    int hard_rc;
    const char *hard_fn;
} gm_amd_pass;

/* Notes the answer rc (0 is success) of the call fn; soft when it means "this GPU lacks it"
 * rather than a failure. True on success. */
bool gm_amd_pass_note(gm_amd_pass *p, const char *fn, int rc, bool soft);

/* A GPU's identity, read once at open (fixed while the driver runs), and whether it ever
 * answered. */
typedef struct gm_amd_gpu {
    char bus_id[GM_BUSID_LEN];
    char name[GM_NAME_LEN];
    char uuid[GM_UUID_LEN];
    char serial[GM_SERIAL_LEN];
    char vbios[GM_SERIAL_LEN];
    bool have_dev_id;
    uint16_t dev_id;
    bool ever_ok; /* some call answered in an earlier sample */
} gm_amd_gpu;

struct gm_amd_ops;

/* An open provider's state; a library that needs more per GPU puts this first in its own. */
typedef struct gm_amd_state {
    const struct gm_amd_ops *ops;
    char driver_version[GM_VERSION_LEN];
    unsigned count;
    gm_amd_gpu gpus[GM_MAX_GPUS];
    bool want_some;
    gm_metric_set want;
    void *proc_buf; /* the library's process records, reused between samples */
    uint32_t proc_cap;
} gm_amd_state;

/* Temperature sensors and clock types: the same numbers in amdsmi and ROCm SMI. */
enum { GM_AMD_TEMP_EDGE = 0, GM_AMD_TEMP_JUNCTION = 1, GM_AMD_TEMP_MEM = 2 };
enum { GM_AMD_CLK_GFX = 0, GM_AMD_CLK_MEM = 4 };

/* One library's side: how it finds its GPUs and reads one metric group of the GPU at snapshot
 * position i. Every read notes its calls in p; a function left NULL reads nothing. */
typedef struct gm_amd_ops {
    gm_amd_lib *lib;
    size_t state_size; /* of the library's state, gm_amd_state first */
    /* Open: st->count and whatever the library needs to address each GPU; GM_OK or an error. */
    int (*list)(gm_amd_state *st, gm_error *err);
    void (*identity)(gm_amd_state *st, unsigned i, gm_amd_gpu *g);
    void (*driver_version)(gm_amd_state *st);
    /* Sample, in this order. */
    void (*use)(gm_amd_state *st, unsigned i, gm_gpu *g, gm_amd_pass *p); /* utilization, VRAM */
    bool (*temp)(gm_amd_state *st, unsigned i, int sensor, double *celsius, gm_amd_pass *p);
    void (*power)(gm_amd_state *st, unsigned i, gm_gpu *g, gm_amd_pass *p);
    bool (*energy)(gm_amd_state *st, unsigned i, uint64_t *count, float *uj_per_count,
                   gm_amd_pass *p);
    /* The clock of a type in MHz, current and highest, each 0 when not given. */
    bool (*clock)(gm_amd_state *st, unsigned i, int type, double *cur, double *max, gm_amd_pass *p);
    bool (*fan)(gm_amd_state *st, unsigned i, int64_t *speed, uint64_t *max, gm_amd_pass *p);
    void (*pcie)(gm_amd_state *st, unsigned i, gm_gpu *g, gm_amd_pass *p);
    void (*ecc)(gm_amd_state *st, unsigned i, gm_gpu *g, gm_amd_pass *p);
    /* The processes on the GPUs not lost in out. */
    void (*processes)(gm_amd_state *st, gm_snapshot *out);
} gm_amd_ops;

/* Opens the library of ops from its variable, else its default path: GM_ENOLIB when it does not
 * load, GM_EINIT when it does not initialise (or what its ready says), GM_ENODEV when it sees no
 * GPU.
 * The default library is not even loaded where no card is driven by amdgpu: a machine with
 * NVIDIA GPUs only that has it installed pays nothing, and hears nothing of what its init prints
 * on stderr. */
int gm_amd_open(const gm_amd_ops *ops, const gm_collector_options *opt, void **state,
                gm_error *err);
void gm_amd_close(void *state);
/* Reads every GPU; one whose every call fails, and not for lack of support, or that answers
 * nothing it answered before, is lost. An error only when every GPU is. */
int gm_amd_sample(void *state, gm_snapshot *out, bool want_procs, gm_error *err);

/* Defines the provider var, named name_, of the library prefix_lib whose functions are prefix_list,
 * prefix_identity ... prefix_processes (one per gm_amd_ops member, same meaning) and whose state
 * is state_type (gm_amd_state first). */
#define GM_AMD_PROVIDER(var, name_, prefix, state_type)                                    \
    static const gm_amd_ops prefix##_ops = {                                               \
        .lib = &prefix##_lib,                                                              \
        .state_size = sizeof(state_type),                                                  \
        .list = prefix##_list,                                                             \
        .identity = prefix##_identity,                                                     \
        .driver_version = prefix##_driver_version,                                         \
        .use = prefix##_use,                                                               \
        .temp = prefix##_temp,                                                             \
        .power = prefix##_power,                                                           \
        .energy = prefix##_energy,                                                         \
        .clock = prefix##_clock,                                                           \
        .fan = prefix##_fan,                                                               \
        .pcie = prefix##_pcie,                                                             \
        .ecc = prefix##_ecc,                                                               \
        .processes = prefix##_processes,                                                   \
    };                                                                                     \
    static int prefix##_open(const gm_collector_options *opt, void **state, gm_error *err) \
    {                                                                                      \
        return gm_amd_open(&prefix##_ops, opt, state, err);                                \
    }                                                                                      \
    const gm_provider var = {                                                              \
        .name = (name_),                                                                   \
        .vendor = "AMD",                                                                   \
        .open = prefix##_open,                                                             \
        .close = gm_amd_close,                                                             \
        .sample = gm_amd_sample,                                                           \
    }

bool gm_amd_wants(const gm_amd_state *st, gm_metric m);

/* The process buffer with room for n records of size bytes each, NULL when out of memory. */
void *gm_amd_proc_room(gm_amd_state *st, uint32_t n, size_t size);

/* Copies a fixed-size field of a library's into dst, which may not be NUL-terminated. */
void gm_amd_copy_field(char *dst, size_t cap, const char *src, size_t src_len);

/* What every AMD reader derives alike from what it read: free VRAM, the power (the average,
 * else the current one as on MI300), the temperature (the edge's, else the junction's on boards
 * without an edge sensor, MI300), and the SM clocks (one shader clock drives the compute units:
 * graphics and SM clock are the same). */
void gm_amd_derive(gm_gpu *g);
/* The fan's speed relative to its maximum (0..255 on most boards), when it is within it. */
void gm_amd_set_fan(gm_gpu *g, uint64_t speed, uint64_t max);

#endif
