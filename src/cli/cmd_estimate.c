/* cmd_estimate.c - `gpumon estimate`: GPUs and per-GPU memory a model or a task config needs. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/estimate.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: gpumon estimate MODEL [--tp N] [--pp N] [--dtype D] [--batch N]\n"
                 "                             [--seq-len N] [options]\n"
                 "       gpumon estimate --task FILE [options]\n\n"
                 "Prints how many GPUs a model or an inference task config needs,\n"
                 "tp x pp x max(dp, cp, dcp), and the memory each GPU should have free.\n"
                 "MODEL is a built-in model (see --list-models), a Hugging Face config.json or a\n"
                 "directory holding one, or a name with its size in it (mymodel-13b).\n\n"
                 "By default (method model), per GPU:\n"
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
                 "Options:\n"
                 "  -f, --task FILE       a task config (JSON), a model directory or a\n"
                 "                        config.json; - reads standard input\n"
                 "      --tp, --pp, --dp N  tensor, pipeline, data parallel size (default: the\n"
                 "                        task's largest, else 1)\n"
                 "      --dtype D         weights' dtype (default: the task's quantization or\n"
                 "                        dtype, else config.json's torch_dtype, else fp16)\n"
                 "      --kv-dtype D      KV cache dtype (default: the task's kv-cache-dtype,\n"
                 "                        else the weights' when 16 or 32 bits, else fp16)\n"
                 "      --seq-len, --context N\n"
                 "                        tokens per sequence (default: the task's\n"
                 "                        max-model-len or context-length, else 4096)\n"
                 "      --batch N         sequences at that length (default: the task's\n"
                 "                        batch-size, else 1)\n"
                 "      --overhead-mib M  per GPU (default 2048)\n"
                 "      --method M        model (default) or size-classes\n"
                 "      --list-models     print the built-in models and exit\n"
                 "      --format FMT      text (default) or json\n"
                 "  -h, --help            show this help\n\n"
                 "Task config: {\"model\": {\"id_or_path\": \"llama-3-70b\"},\n"
                 "              \"parameters\": {\"tp-size\": [1, 2, 4], ...}}\n"
                 "Each dimension may be spelled tensor-parallel-size, tensor_parallel_size,\n"
                 "tp-size, tp_size or tp (likewise pipeline/pp, data/dp, context/cp,\n"
                 "decode-context/dcp); a value is a positive integer or a list of them. Two\n"
                 "spellings of one dimension with different values are an error. A relative\n"
                 "model path is also looked for next to the task file.\n\n"
                 "Exit status: 0 ok, 1 failure, 2 usage error, unknown model or malformed task\n"
                 "config.\n");
}

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
    enum {
        OPT_FORMAT = 256,
        OPT_METHOD,
        OPT_DTYPE,
        OPT_KV,
        OPT_CONTEXT,
        OPT_BATCH,
        OPT_OVERHEAD,
        OPT_TP,
        OPT_PP,
        OPT_DP,
        OPT_LIST,
    };
    static const struct option longopts[] = {
        {"task", required_argument, NULL, 'f'},
        {"tp", required_argument, NULL, OPT_TP},
        {"tensor-parallel-size", required_argument, NULL, OPT_TP},
        {"pp", required_argument, NULL, OPT_PP},
        {"pipeline-parallel-size", required_argument, NULL, OPT_PP},
        {"dp", required_argument, NULL, OPT_DP},
        {"data-parallel-size", required_argument, NULL, OPT_DP},
        {"seq-len", required_argument, NULL, OPT_CONTEXT},
        {"max-model-len", required_argument, NULL, OPT_CONTEXT},
        {"list-models", no_argument, NULL, OPT_LIST},
        {"format", required_argument, NULL, OPT_FORMAT},
        {"method", required_argument, NULL, OPT_METHOD},
        {"dtype", required_argument, NULL, OPT_DTYPE},
        {"kv-dtype", required_argument, NULL, OPT_KV},
        {"context", required_argument, NULL, OPT_CONTEXT},
        {"batch", required_argument, NULL, OPT_BATCH},
        {"overhead-mib", required_argument, NULL, OPT_OVERHEAD},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *task = NULL;
    bool json = false;
    gm_estimate_options eo;
    gm_estimate_options_init(&eo);
    unsigned long long v;
    char flag[40];
    int c;
    optind = 1;
    opterr = 0;
    int li = -1;
    while ((c = getopt_long(argc, argv, ":f:h", longopts, &li)) != -1) {
        switch (c) {
        case 'f':
            task = optarg;
            break;
        case OPT_FORMAT:
            if (strcmp(optarg, "json") == 0)
                json = true;
            else if (strcmp(optarg, "text") == 0)
                json = false;
            else {
                fprintf(stderr,
                        "gpumon estimate: invalid --format \"%s\" (expected text or json)\n",
                        optarg);
                return GM_EXIT_USAGE;
            }
            break;
        case OPT_METHOD:
            if (strcmp(optarg, "model") == 0)
                eo.method = GM_ESTIMATE_MODEL;
            else if (strcmp(optarg, "size-classes") == 0 || strcmp(optarg, "seed") == 0)
                eo.method = GM_ESTIMATE_SEED;
            else {
                fprintf(
                    stderr,
                    "gpumon estimate: invalid --method \"%s\" (expected model or size-classes)\n",
                    optarg);
                return GM_EXIT_USAGE;
            }
            break;
        case OPT_DTYPE:
        case OPT_KV:
            if (gm_estimate_dtype_bytes(optarg, NULL) == 0) {
                fprintf(stderr,
                        "gpumon estimate: %s \"%s\" is not a dtype gpumon knows (fp32, fp16, "
                        "bf16, fp8, int8, int4, awq, gptq...)\n",
                        c == OPT_DTYPE ? "--dtype" : "--kv-dtype", optarg);
                return GM_EXIT_USAGE;
            }
            if (c == OPT_DTYPE)
                eo.dtype = optarg;
            else
                eo.kv_dtype = optarg;
            break;
        case OPT_CONTEXT:
        case OPT_BATCH:
            /* Messages name the spelling given (--seq-len, --context or --max-model-len). */
            snprintf(flag, sizeof flag, "--%s", li >= 0 ? longopts[li].name : "batch");
            if (!gm_cli_parse_uint("estimate", flag, optarg, 1, 100000000, &v))
                return GM_EXIT_USAGE;
            if (c == OPT_CONTEXT)
                eo.context = (unsigned)v;
            else
                eo.batch = (unsigned)v;
            break;
        case OPT_TP:
        case OPT_PP:
        case OPT_DP: {
            gm_parallel p = c == OPT_TP ? GM_PAR_TP : c == OPT_PP ? GM_PAR_PP : GM_PAR_DP;
            snprintf(flag, sizeof flag, "--%s", li >= 0 ? longopts[li].name : "tp");
            if (!gm_cli_parse_uint("estimate", flag, optarg, 1, GM_ESTIMATE_MAX_SIZE, &v))
                return GM_EXIT_USAGE;
            eo.size[p] = (unsigned)v;
            break;
        }
        case OPT_LIST:
            list_models();
            return GM_EXIT_OK;
        case OPT_OVERHEAD:
            if (!gm_cli_parse_double("estimate", "--overhead-mib", "a number", optarg, 0, 1e7,
                                     &eo.overhead_mib))
                return GM_EXIT_USAGE;
            break;
        case 'h':
            usage(stdout);
            return GM_EXIT_OK;
        default:
            return gm_cli_getopt_error("estimate", c, argv, longopts);
        }
    }
    /* `gpumon estimate MODEL`: a task file, a model directory or config.json, or a name. */
    const char *model = NULL;
    if (!task && optind < argc)
        model = argv[optind++];
    if (!gm_cli_no_operands("estimate", argc, argv))
        return GM_EXIT_USAGE;
    if (!task && !model) {
        fprintf(stderr, "gpumon estimate: give a MODEL or --task FILE (see gpumon estimate "
                        "--help)\n");
        return GM_EXIT_USAGE;
    }

    gm_estimate e;
    gm_error err = {0};
    const char *what = task ? task : model;
    int rc = strcmp(what, "-") == 0 ? read_stdin(&eo, &e, &err)
             : task                 ? gm_estimate_task_file_opt(task, &eo, &e, &err)
                                    : gm_estimate_model(model, &eo, &e, &err);
    if (rc < 0) {
        fprintf(stderr, "gpumon estimate: %s\n", err.msg);
        return rc == GM_EIO || rc == GM_ENOMEM ? GM_EXIT_FAILURE : GM_EXIT_USAGE;
    }
    if (json) {
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
