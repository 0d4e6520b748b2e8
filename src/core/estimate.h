/* estimate.h - how many GPUs, and how much memory on each, an inference task config needs:
 * world size from its parallelism parameters; memory from the model (parameters x dtype bytes
 * over tp x pp, plus the KV cache of a stated context and batch, plus a stated overhead), or
 * from size classes of the model's parameter count alone (method "size-classes"). */
#ifndef GM_ESTIMATE_H
#define GM_ESTIMATE_H

#include <jansson.h>
#include <stdbool.h>
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
/* Largest size token read as billions of parameters ("1e6b"); larger ones are no size. */
#define GM_ESTIMATE_MAX_PARAMS_B 1e6

/* How memory per GPU is estimated. */
typedef enum gm_estimate_method {
    GM_ESTIMATE_MODEL, /* from the model: weights + KV cache + overhead (the default) */
    GM_ESTIMATE_SEED,  /* size classes by the size in the model's name */
} gm_estimate_method;

/* Defaults of the model method. */
#define GM_ESTIMATE_CONTEXT      4096u  /* tokens of KV cache per sequence */
#define GM_ESTIMATE_BATCH        1u     /* sequences at that context */
#define GM_ESTIMATE_OVERHEAD_MIB 2048.0 /* CUDA context, activations, graphs, allocator slack */

typedef struct gm_estimate_options {
    gm_estimate_method method;
    const char *dtype;    /* weights: fp32 fp16 bf16 fp8 int8 int4 (and their usual aliases);
                           * NULL: the task's quantization or dtype, else config.json's
                           * torch_dtype, else fp16 */
    const char *kv_dtype; /* KV cache; NULL: the task's kv-cache-dtype, else the weights' when
                           * 16 or 32 bits, else fp16 */
    unsigned context;     /* 0: the task's max-model-len (or context-length), else 4096 */
    unsigned batch;       /* 0: the task's batch-size, else 1 */
    double overhead_mib;  /* < 0: GM_ESTIMATE_OVERHEAD_MIB */
    const char *base_dir; /* where a relative model path is also looked for (a task file's
                           * directory); NULL: the working directory only */
    unsigned size[GM_PAR__COUNT]; /* parallel sizes over the task's; 0: the task's */
} gm_estimate_options;

/* The default options (method model, everything else from the task or the defaults). */
void gm_estimate_options_init(gm_estimate_options *o);

/* The model method's figures, per GPU. */
typedef struct gm_estimate_memory {
    double params;       /* parameters; 0: unknown (then the size classes apply) */
    const char *source;  /* "config.json", "built-in" or "name" (how params and the shape were
                          * found) */
    char config[512];    /* the config.json read, "" when none */
    char dtype[8];       /* of the weights: fp32 fp16 bf16 fp8 int8 int4 */
    double weight_bytes; /* per parameter: 4, 2, 1, 0.5 */
    char kv_dtype[8];
    double kv_bytes; /* per KV element */
    unsigned context, batch;
    unsigned layers, kv_heads, head_dim; /* the shape the KV cache is sized from */
    bool shape_assumed;        /* no config.json: layers from the size, 8 KV heads of 128 */
    double kv_bytes_per_token; /* on one GPU: 2 x ceil(layers/pp) x ceil(kv_heads/tp) x head_dim
                                * x kv_bytes */
    double weights_mib, kv_mib, overhead_mib;
} gm_estimate_memory;

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
    gm_estimate_method method;    /* the method that gave memory_mib */
    gm_estimate_memory mem;       /* its figures (method model with a known size) */
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
 * Memory (method model, the default): the parameter count P, from config.json when the model
 * names a local directory holding one (hidden size, layers, vocabulary, heads, KV heads,
 * intermediate size, experts), else from the size in its name ("70b", "8x7b" = 56B, "1.5B");
 * per GPU
 *     P x dtype bytes / (tp x pp)                                            weights
 *   + context x batch x 2 x ceil(layers / pp) x ceil(kv_heads / tp) x head_dim x kv bytes
 *   + overhead (2048 MiB)
 * where, without config.json, layers come from P ~ 12 x layers x (128 x layers)^2 (a dense
 * transformer 128 wide per layer) and the KV cache has 8 heads of 128 (grouped-query
 * attention as in Llama 3, Mistral, Qwen 2). dtype, kv dtype, context and batch come from the
 * options, else the task's parameters (dtype, quantization, kv-cache-dtype, max-model-len or
 * context-length, batch-size; lists: the largest), else config.json, else the defaults. A
 * model of unknown size falls back to the size classes, as does method size-classes: the size in
 * the name picks >= 65B 20000 MiB, >= 7B 12000 MiB, else (or no size) 8000 MiB per GPU. Returns
 * GM_OK, or GM_EPARSE with err naming the offending field (e.g. "parameters.tp-size[1] must be a
 * positive integer, got 0"), or a config.json that cannot be read. */
int gm_estimate_task(const json_t *task, gm_estimate *out, gm_error *err);
/* The same with options (NULL: the defaults). */
int gm_estimate_task_opt(const json_t *task, const gm_estimate_options *opt, gm_estimate *out,
                         gm_error *err);

/* Parses text (len bytes, not necessarily NUL-terminated) as a task config and estimates it.
 * origin names the input in messages (a file name; NULL: "task"). GM_EPARSE for JSON syntax
 * errors, with line and column as jansson reports them, or for a bad field. */
int gm_estimate_task_text(const char *text, size_t len, const char *origin, gm_estimate *out,
                          gm_error *err);
int gm_estimate_task_text_opt(const char *text, size_t len, const char *origin,
                              const gm_estimate_options *opt, gm_estimate *out, gm_error *err);

/* Reads path and estimates it. A directory holding a config.json is a model directory: the
 * task {"model": path} with no parameters. A model path in the task is also looked for next
 * to the task file. GM_ENOENT / GM_EPERM / GM_EIO when it cannot be read, else as
 * gm_estimate_task_text. */
int gm_estimate_task_file(const char *path, gm_estimate *out, gm_error *err);
int gm_estimate_task_file_opt(const char *path, const gm_estimate_options *opt, gm_estimate *out,
                              gm_error *err);

/* Estimates serving one model as it is: model is a model directory (holding config.json), a
 * config.json, or a name: one of gpumon's built-in models (gm_estimate_builtin_name) or one
 * with its size in it ("mymodel-13b"). GM_ENOENT when it is none of these. */
int gm_estimate_model(const char *model, const gm_estimate_options *opt, gm_estimate *out,
                      gm_error *err);

/* The i-th built-in model's name (llama-3-70b, ...), NULL past the last. */
const char *gm_estimate_builtin_name(size_t i);
/* Whether model names a built-in model (case, organisation, -hf/-chat/-instruct aside). */
bool gm_estimate_builtin_known(const char *model);

/* Bytes per element of a dtype name (fp32/float32/float 4, fp16/float16/half/bf16/bfloat16 2,
 * fp8* and int8 1, int4/awq/gptq/nf4/fp4 0.5) and its short name (fp32, fp16, bf16, fp8, int8,
 * int4) into name (>= 8 bytes; may be NULL). 0 when the name is unknown or "auto". */
double gm_estimate_dtype_bytes(const char *dtype, char *name);

/* The memory class for a model id: sets *params_b (0: no size token found) and *rule (may be
 * NULL) and returns MiB per GPU. */
unsigned gm_estimate_memory_mib(const char *model, double *params_b, const char **rule);

/* {"gpus", "memory_per_gpu_mib", "world_size": "tp x pp x max(dp, cp, dcp)",
 *  "parallel": {"tp": {"size", "parameter"}, ...}, "model", "model_params_b", "memory_rule",
 *  "method": "model" | "size-classes", and for the model method "memory": {"formula", "params",
 *  "source", "config", "dtype", "weight_bytes", "kv_dtype", "kv_bytes", "context", "batch",
 *  "layers", "kv_heads", "head_dim", "shape_assumed", "kv_bytes_per_token", "weights_mib",
 *  "kv_cache_mib", "overhead_mib"} (null with the size classes)}; absent parameter and model
 * fields are null. A new reference, NULL when out of memory. */
json_t *gm_estimate_json(const gm_estimate *e);

#endif
