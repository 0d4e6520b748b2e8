/* cmd_estimate.c - `gpumon estimate`: GPUs and per-GPU memory a model or a task config needs. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/estimate.h"
#include "base/error.h"

typedef struct estimate_opts {
    const char *task;
    bool json;
    bool list_models;
    gm_estimate_options eo;
} estimate_opts;

static int method_row(void *base, const gm_opt *row, const char *arg, gm_error *err)
{
    (void)row;
    estimate_opts *o = base;
    if (strcmp(arg, "model") == 0)
        o->eo.method = GM_ESTIMATE_MODEL;
    else if (strcmp(arg, "size-classes") == 0 || strcmp(arg, "seed") == 0)
        o->eo.method = GM_ESTIMATE_SEED;
    else
        return gm_error_set(err, GM_EINVAL,
                            "invalid --method \"%s\" (expected model or size-classes)", arg);
    return GM_OK;
}

/* --dtype and --kv-dtype: a dtype estimate.c knows the size of. */
static int dtype_row(void *base, const gm_opt *row, const char *arg, gm_error *err)
{
    if (gm_estimate_dtype_bytes(arg, NULL) == 0)
        return gm_error_set(err, GM_EINVAL,
                            "--%s \"%s\" is not a dtype gpumon knows (fp32, fp16, bf16, fp8, "
                            "int8, int4, awq, gptq...)",
                            row->name, arg);
    *(const char **)((char *)base + row->offset) = arg;
    return GM_OK;
}

/* A parallel size; the long spellings are rows of their own (hidden) so that a message names
 * the spelling given. */
#define SIZE(n, p, ...)                                                                   \
    {                                                                                     \
        .type = GM_OPT_UINT, .name = n, .arg = "N", GM_OPT_AT(estimate_opts, eo.size[p]), \
        .min = 1, .max = GM_ESTIMATE_MAX_SIZE, __VA_ARGS__                                \
    }
#define DTYPE(n, f, ...)                                                                \
    {                                                                                   \
        .type = GM_OPT_CALLBACK, .name = n, .arg = "D", GM_OPT_AT(estimate_opts, eo.f), \
        .set = dtype_row, __VA_ARGS__                                                   \
    }
#define TOKENS(n, f, ...)                                                                     \
    {                                                                                         \
        .type = GM_OPT_UINT, .name = n, .arg = "N", GM_OPT_AT(estimate_opts, eo.f), .min = 1, \
        .max = 100000000, __VA_ARGS__                                                         \
    }

static const gm_opt estimate_table[] = {
    {.type = GM_OPT_STRING,
     .name = "task",
     .letter = 'f',
     .arg = "FILE",
     GM_OPT_AT(estimate_opts, task),
     .complete = "file",
     .help = "A task config (JSON), a model directory or a config.json; - reads standard "
             "input."},
    SIZE("tp", GM_PAR_TP,
         .help = "Tensor parallel size (default: the task's largest, else 1; "
                 "--tensor-parallel-size also works)."),
    SIZE("tensor-parallel-size", GM_PAR_TP, .flags = GM_OPT_HIDDEN),
    SIZE("pp", GM_PAR_PP,
         .help = "Pipeline parallel size (default: the task's largest, else 1; "
                 "--pipeline-parallel-size also works)."),
    SIZE("pipeline-parallel-size", GM_PAR_PP, .flags = GM_OPT_HIDDEN),
    SIZE("dp", GM_PAR_DP,
         .help = "Data parallel size (default: the task's largest, else 1; "
                 "--data-parallel-size also works)."),
    SIZE("data-parallel-size", GM_PAR_DP, .flags = GM_OPT_HIDDEN),
    DTYPE("dtype", dtype,
          .help = "Weights' dtype (default: the task's quantization or dtype, else config.json's "
                  "torch_dtype, else fp16)."),
    DTYPE("kv-dtype", kv_dtype,
          .help = "KV cache dtype (default: the task's kv-cache-dtype, else the weights' when 16 "
                  "or 32 bits, else fp16)."),
    TOKENS("seq-len", context,
           .help = "Tokens per sequence (default: the task's max-model-len or context-length, "
                   "else 4096; --context and --max-model-len also work)."),
    TOKENS("context", context, .flags = GM_OPT_HIDDEN),
    TOKENS("max-model-len", context, .flags = GM_OPT_HIDDEN),
    TOKENS("batch", batch,
           .help = "Sequences at that length (default: the task's batch-size, else 1)."),
    {.type = GM_OPT_DOUBLE,
     .name = "overhead-mib",
     .arg = "M",
     GM_OPT_AT(estimate_opts, eo.overhead_mib),
     .min = 0,
     .max = 1e7,
     .help = "Per GPU (default 2048)."},
    {.type = GM_OPT_CALLBACK,
     .name = "method",
     .arg = "M",
     .set = method_row,
     .values = "model size-classes",
     .help = "model (default) or size-classes."},
    {.type = GM_OPT_FLAG,
     .name = "list-models",
     GM_OPT_AT(estimate_opts, list_models),
     .help = "Print the built-in models and exit."},
    GM_CLI_OPT_FORMAT_TEXT_JSON(estimate_opts, json),
    {0},
};

const gm_opt_command gm_cli_estimate_command = {
    .name = "estimate",
    .usage = "estimate MODEL [--tp N] [--pp N] [--dtype D] [--batch N] [options]\n"
             "estimate --task FILE [options]",
    .description = "Prints how many GPUs a model or an inference task config needs, tp x pp x "
                   "max(dp, cp, dcp), and the memory each GPU should have free. MODEL is a "
                   "built-in model (see --list-models), a Hugging Face config.json or a directory "
                   "holding one, or a name with its size in it (mymodel-13b).",
    .table = estimate_table,
    .epilogue = "By default (method model), per GPU:\n"
                "  P x dtype bytes / (tp x pp)                                  weights\n"
                "  + seq-len x batch x 2 x ceil(layers/pp) x ceil(kv_heads/tp)\n"
                "    x head_dim x kv bytes                                      KV cache\n"
                "  + overhead (2048 MiB: CUDA context, activations, graphs)\n"
                "P, layers, KV heads and head size come from the config.json (hidden size,\n"
                "layers, vocabulary, heads, KV heads, intermediate size, experts) or the\n"
                "built-in model's published shape; for another name, P from the size in it\n"
                "(70b, 8x7b = 56B, 1.5B) with layers from P = 12 x layers x (128 x layers)^2\n"
                "and 8 KV heads of 128. dtype bytes: fp32 4, fp16/bf16 2, fp8/int8 1,\n"
                "int4/awq/gptq 0.5. A model of unknown size gets the size classes:\n"
                "65B+ 20000 MiB, 7B-65B 12000 MiB, else 8000 MiB per GPU.\n\n"
                "Task config: {\"model\": {\"id_or_path\": \"llama-3-70b\"},\n"
                "              \"parameters\": {\"tp-size\": [1, 2, 4], ...}}\n"
                "Each dimension may be spelled tensor-parallel-size, tensor_parallel_size,\n"
                "tp-size, tp_size or tp (likewise pipeline/pp, data/dp, context/cp,\n"
                "decode-context/dcp); a value is a positive integer or a list of them. Two\n"
                "spellings of one dimension with different values are an error. A relative\n"
                "model path is also looked for next to the task file.\n\n"
                "Exit status: 0 ok, 1 failure, 2 usage error, unknown model or malformed task\n"
                "config.\n",
};

static void list_models(void)
{
    for (size_t i = 0; gm_estimate_builtin_name(i); i++)
        printf("%s\n", gm_estimate_builtin_name(i));
}

static int read_stdin(const gm_estimate_options *o, gm_estimate *e, gm_error *err)
{
    char buf[65536];
    size_t len = fread(buf, 1, sizeof buf, stdin);
    if (len == sizeof buf)
        return gm_error_set(err, GM_EPARSE, "standard input: task config over %zu bytes",
                            sizeof buf - 1);
    return gm_estimate_task_text_opt(buf, len, "standard input", o, e, err);
}

static void print_text(const gm_estimate *e)
{
    printf("GPUs needed:     %llu  (tp %u x pp %u x max(dp %u, cp %u, dcp %u))\n",
           (unsigned long long)e->gpus, e->size[GM_PAR_TP], e->size[GM_PAR_PP], e->size[GM_PAR_DP],
           e->size[GM_PAR_CP], e->size[GM_PAR_DCP]);
    const gm_estimate_memory *m = &e->mem;
    if (e->method == GM_ESTIMATE_MODEL) {
        printf("Memory per GPU:  %u MiB  (%s: %.1fB parameters from %s, %s)\n", e->memory_mib,
               e->model, m->params / 1e9,
               strcmp(m->source, "config.json") == 0 ? m->config
               : strcmp(m->source, "built-in") == 0  ? "its published shape"
                                                     : "the name",
               m->dtype);
        unsigned tp = e->size[GM_PAR_TP], pp = e->size[GM_PAR_PP];
        unsigned lg = (m->layers + pp - 1) / pp, hg = (m->kv_heads + tp - 1) / tp;
        printf("  weights:   %9.0f MiB  %.1fB parameters x %g bytes / (tp %u x pp %u)\n",
               m->weights_mib, m->params / 1e9, m->weight_bytes, tp, pp);
        printf("  KV cache:  %9.0f MiB  %u tokens x batch %u x %.0f bytes per token per GPU\n",
               m->kv_mib, m->context, m->batch, m->kv_bytes_per_token);
        printf("                            (2 x %u of %u layers x %u of %u KV heads x %u x %g "
               "bytes, %s)\n",
               lg, m->layers, hg, m->kv_heads, m->head_dim, m->kv_bytes, m->kv_dtype);
        if (m->shape_assumed)
            printf("                            (layers and heads assumed from the size: no "
                   "config.json)\n");
        printf("  overhead:  %9.0f MiB\n", m->overhead_mib);
    } else if (e->model[0]) {
        printf("Memory per GPU:  %u MiB  (%s: %s)\n", e->memory_mib, e->model, e->memory_rule);
    } else {
        printf("Memory per GPU:  %u MiB  (no model in the task: %s)\n", e->memory_mib,
               e->memory_rule);
    }
    printf("Wait for them:   gpumon wait --count %llu --min-free-mb %u\n",
           (unsigned long long)e->gpus, e->memory_mib);
}

int gm_cli_estimate(int argc, char **argv)
{
    estimate_opts o = {0};
    gm_estimate_options_init(&o.eo);
    int first = argc;
    int rc = gm_cli_parse(&gm_cli_estimate_command, argc, argv, &o, &first);
    if (rc != GM_CLI_PROCEED)
        return rc;
    if (o.list_models) {
        list_models();
        return GM_EXIT_OK;
    }
    /* `gpumon estimate MODEL`: a task file, a model directory or config.json, or a name. */
    const char *task = o.task, *model = NULL;
    if (!task && first < argc)
        model = argv[first++];
    if (first < argc) {
        fprintf(stderr, "gpumon estimate: unexpected argument \"%s\"\n", argv[first]);
        return GM_EXIT_USAGE;
    }
    if (!task && !model) {
        fprintf(stderr, "gpumon estimate: give a MODEL or --task FILE (see gpumon estimate "
                        "--help)\n");
        return GM_EXIT_USAGE;
    }

    gm_estimate e;
    gm_error err = {0};
    const char *what = task ? task : model;
    rc = strcmp(what, "-") == 0 ? read_stdin(&o.eo, &e, &err)
         : task                 ? gm_estimate_task_file_opt(task, &o.eo, &e, &err)
                                : gm_estimate_model(model, &o.eo, &e, &err);
    if (rc < 0) {
        fprintf(stderr, "gpumon estimate: %s\n", err.msg);
        return rc == GM_EIO || rc == GM_ENOMEM ? GM_EXIT_FAILURE : GM_EXIT_USAGE;
    }
    if (o.json) {
        json_t *j = gm_estimate_json(&e);
        if (!j) {
            fprintf(stderr, "gpumon estimate: out of memory\n");
            return GM_EXIT_FAILURE;
        }
        gm_cli_write_json(stdout, j, isatty(STDOUT_FILENO));
        json_decref(j);
    } else {
        print_text(&e);
    }
    return GM_EXIT_OK;
}
