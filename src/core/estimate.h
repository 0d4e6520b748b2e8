/* estimate.h - how many GPUs, and how much memory on each, an inference task config needs:
 * world size from its parallelism parameters and memory from a model-size heuristic. */
#ifndef GM_ESTIMATE_H
#define GM_ESTIMATE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "gpumon.h"

/* The parallelism dimensions a task config can set. */
typedef enum gm_parallel {
    GM_PAR_TP,  /* tensor parallel */
    GM_PAR_PP,  /* pipeline parallel */
    GM_PAR_DP,  /* data parallel */
    GM_PAR_CP,  /* context parallel */
    GM_PAR_DCP, /* decode context parallel */
    GM_PAR__COUNT
} gm_parallel;

/* Short name of p: "tp", "pp", "dp", "cp", "dcp" (NULL when out of range). */
const char *gm_estimate_parallel_name(gm_parallel p);

/* Largest value accepted for one parallel size; larger ones are taken for typos. */
#define GM_ESTIMATE_MAX_SIZE 65536u

/* Per-GPU memory classes of the heuristic (MiB). */
#define GM_ESTIMATE_MEM_LARGE_MIB 20000u /* models of 65B parameters or more (65B, 70B...) */
#define GM_ESTIMATE_MEM_MID_MIB   12000u /* 7B up to 65B (7B, 13B...) */
#define GM_ESTIMATE_MEM_BASE_MIB  8000u  /* smaller or unknown models */

typedef struct gm_estimate {
    unsigned size[GM_PAR__COUNT]; /* the largest value given for each; 1 when not given */
    char key[GM_PAR__COUNT][40];  /* the parameter spelling that set it, "" when not given */
    uint64_t gpus;                /* world size: tp x pp x max(dp, cp, dcp) */
    unsigned memory_mib;          /* estimated memory needed on each GPU */
    char model[256];              /* the model id the heuristic read, "" when the task has none */
    double model_params_b;        /* parameters in billions read from the model id, 0: unknown */
    const char *memory_rule;      /* which class applied, for people ("65B+ model", ...) */
} gm_estimate;

/* Estimates the needs of a parsed task config:
 *   {"model": {"id_or_path": "llama-3-70b"} | "llama-3-70b",
 *    "parameters": {"tp-size": [1, 2, 4], "pp": 1, ...}}
 * Each dimension accepts the spellings <long>-parallel-size, <long>_parallel_size, <x>-size,
 * <x>_size and <x> (tensor-parallel-size, tensor_parallel_size, tp-size, tp_size, tp), valued a
 * positive integer or a non-empty list of them (an integral real like 2.0 counts); the largest
 * value is what the task can need. Two spellings of one dimension with different value sets
 * are an error rather than silently maxed: the tool behind the config would get two different
 * flags, so the config is ambiguous. Other parameters are ignored.
 * Memory: the model id's size token ("70b", "8x7b" = 56, "1.5B") picks a class: >= 65B
 * 20000 MiB, >= 7B 12000 MiB, else (or no size in the id) 8000 MiB per GPU.
 * Returns GM_OK, or GM_EPARSE with err naming the offending field (e.g.
 * "parameters.tp-size[1] must be a positive integer, got 0"). */
int gm_estimate_task(const json_t *task, gm_estimate *out, gm_error *err);

/* Parses text (len bytes, not necessarily NUL-terminated) as a task config and estimates it.
 * origin names the input in messages (a file name; NULL: "task"). GM_EPARSE for JSON syntax
 * errors, with line and column as jansson reports them, or for a bad field. */
int gm_estimate_task_text(const char *text, size_t len, const char *origin, gm_estimate *out,
                          gm_error *err);

/* Reads path and estimates it. GM_ENOENT / GM_EPERM / GM_EIO when it cannot be read, else as
 * gm_estimate_task_text. */
int gm_estimate_task_file(const char *path, gm_estimate *out, gm_error *err);

/* The memory class for a model id: sets *params_b (0: no size token found) and *rule (may be
 * NULL) and returns MiB per GPU. */
unsigned gm_estimate_memory_mib(const char *model, double *params_b, const char **rule);

/* {"gpus", "memory_per_gpu_mib", "world_size": "tp x pp x max(dp, cp, dcp)",
 *  "parallel": {"tp": {"size", "parameter"}, ...}, "model", "model_params_b", "memory_rule"};
 * absent parameter and model fields are null. A new reference, NULL when out of memory. */
json_t *gm_estimate_json(const gm_estimate *e);

#endif
