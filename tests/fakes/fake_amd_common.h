/* fake_amd_common.h - what the two fake AMD libraries (fake_amd_smi.c, fake_rocm_smi.c) share: the
 * JSON scenario loaded at the library's init and kept until its last shut down, the GPU a call is
 * for with its injected failures (a call NOT_SUPPORTED or failing, a GPU gone after N reads), and
 * the per-read numbers (format: tests/fakes/README.md). Compiled into each fake, hidden there. */
#ifndef FAKE_AMD_COMMON_H
#define FAKE_AMD_COMMON_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>

#define FAKE_AMD_MAX_GPUS 64

#define FAKE_AMD_HIDDEN __attribute__((visibility("hidden")))

typedef struct fake_amd {
    pthread_mutex_t mu;
    unsigned refcount;
    unsigned long init_calls, shutdown_calls;
    json_t *scenario; /* owned while refcount > 0 */
    unsigned reads[FAKE_AMD_MAX_GPUS];
} fake_amd;

extern fake_amd F FAKE_AMD_HIDDEN;

/* The library's status codes for what the shared code answers. */
typedef struct fake_amd_codes {
    int not_init;      /* no init, or after the last shut down */
    int no_gpu;        /* a GPU the scenario does not have */
    int file_error;    /* a GPU gone, unless its "gone_status" says otherwise */
    int not_supported; /* a call the GPU's "unsupported" names */
} fake_amd_codes;

/* The library's init: the first loads the scenario from $env (unset: one MI300X), or answers its
 * "init_error"; a malformed file answers bad_file (who names the fake in the message). 0 or the
 * status to return. */
int fake_amd_init(const char *env, const char *who, int bad_file) FAKE_AMD_HIDDEN;
void fake_amd_shut_down(void) FAKE_AMD_HIDDEN;

/* The scenario's top-level key, NULL when not initialised or left out. */
json_t *fake_amd_top(const char *key) FAKE_AMD_HIDDEN;

/* The GPU at position dv for the call named call (as the scenario's "unsupported" and "errors"
 * name it), or NULL with the status to answer in *rc. */
json_t *fake_amd_gpu(unsigned dv, const char *call, const fake_amd_codes *codes,
                     int *rc) FAKE_AMD_HIDDEN;

/* Counts a read of the GPU dv: per-read arrays and "gone_after" go by it. */
void fake_amd_count_read(unsigned dv) FAKE_AMD_HIDDEN;

/* A number of g, an array read at the GPU's read count; false when left out or null. */
bool fake_amd_num(json_t *g, unsigned dv, const char *key, double *out) FAKE_AMD_HIDDEN;

/* The test hooks prefix_init_calls(), prefix_shutdown_calls() and prefix_refcount(), for tests
 * that dlopen the same file. */
#define FAKE_AMD_HOOKS(prefix)                  \
    unsigned long prefix##_init_calls(void)     \
    {                                           \
        return F.init_calls;                    \
    }                                           \
    unsigned long prefix##_shutdown_calls(void) \
    {                                           \
        return F.shutdown_calls;                \
    }                                           \
    unsigned prefix##_refcount(void)            \
    {                                           \
        return F.refcount;                      \
    }

#endif
