/* cmd_estimate.c - `gpumon estimate`: GPUs and per-GPU memory a task config needs. */
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
    fprintf(out,
            "usage: gpumon estimate --task FILE|MODEL_DIR [--method model|size-classes]\n"
            "                       [--dtype D] [--kv-dtype D] [--context N] [--batch N]\n"
            "                       [--overhead-mib M] [--format text|json]\n\n"
            "Reads an inference task config and prints how many GPUs it needs,\n"
            "tp x pp x max(dp, cp, dcp) with the largest value of each list, and the memory\n"
            "each GPU should have free. By default (method model), per GPU:\n\n"
            "  P x dtype bytes / (tp x pp)                                   weights\n"
            "  + context x batch x 2 x ceil(layers/pp) x ceil(kv_heads/tp)\n"
            "    x head_dim x kv bytes                                        KV cache\n"
            "  + overhead (2048 MiB: CUDA context, activations, graphs)\n\n"
            "P, layers, KV heads and head size come from config.json when the task's model (or\n"
            "--task itself) is a local model directory (hidden size, layers, vocabulary, heads,\n"
            "KV heads, intermediate size, experts); else P from the size in the model's name\n"
            "(70b, 8x7b = 56B, 1.5B) with layers from P = 12 x layers x (128 x layers)^2 and 8 KV\n"
            "heads of 128 (grouped-query attention, as Llama 3, Mistral, Qwen 2). dtype bytes:\n"
            "fp32 4, fp16/bf16 2, fp8/int8 1, int4/awq/gptq 0.5. llama-3-70b at tp 4 in fp16:\n"
            "33379 MiB of weights per GPU. A model of unknown size gets the size classes.\n"
            "Method size-classes needs only the model's size: 65B+ 20000 MiB, 7B-65B\n"
            "12000 MiB, else 8000 MiB per GPU.\n\n"
            "Options:\n"
            "  -f, --task FILE     the task config (JSON), or a model directory with a\n"
            "                      config.json; - reads standard input\n"
            "      --method M      model (default) or size-classes\n"
            "      --dtype D       weights' dtype (default: the task's quantization or dtype,\n"
            "                      else config.json's torch_dtype, else fp16)\n"
            "      --kv-dtype D    KV cache dtype (default: the task's kv-cache-dtype, else the\n"
            "                      weights' when 16 or 32 bits, else fp16)\n"
            "      --context N     tokens per sequence (default: the task's max-model-len or\n"
            "                      context-length, else 4096)\n"
            "      --batch N       sequences at that context (default: the task's batch-size,\n"
            "                      else 1)\n"
            "      --overhead-mib M  per GPU (default 2048)\n"
            "      --format FMT    text (default) or json\n"
            "  -h, --help          show this help\n\n"
            "Task config: {\"model\": {\"id_or_path\": \"llama-3-70b\"}, \"parameters\": "
            "{\"tp-size\": [1, 2, 4], ...}}\n"
            "Each dimension may be spelled tensor-parallel-size, tensor_parallel_size, "
            "tp-size, tp_size\nor tp (likewise pipeline/pp, data/dp, context/cp, decode-context/"
            "dcp); a value is a\npositive integer or a list of them. Two spellings of one "
            "dimension with different values\nare an error. A relative model path is also "
            "looked for next to the task file.\n\n"
            "Exit status: 0 ok, 1 failure, 2 usage error or malformed task config.\n");
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
               strcmp(m->source, "config.json") == 0 ? m->config : "the name", m->dtype);
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
    enum { OPT_FORMAT = 256, OPT_METHOD, OPT_DTYPE, OPT_KV, OPT_CONTEXT, OPT_BATCH, OPT_OVERHEAD };
    static const struct option longopts[] = {
        {"task", required_argument, NULL, 'f'},
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
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":f:h", longopts, NULL)) != -1) {
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
            if (!gm_cli_parse_uint("estimate", c == OPT_CONTEXT ? "--context" : "--batch", optarg,
                                   1, 100000000, &v))
                return GM_EXIT_USAGE;
            if (c == OPT_CONTEXT)
                eo.context = (unsigned)v;
            else
                eo.batch = (unsigned)v;
            break;
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
    if (!task && optind < argc)
        task = argv[optind++]; /* `gpumon estimate task.json` reads as well */
    if (!gm_cli_no_operands("estimate", argc, argv))
        return GM_EXIT_USAGE;
    if (!task) {
        fprintf(stderr, "gpumon estimate: --task FILE is required (see gpumon estimate --help)\n");
        return GM_EXIT_USAGE;
    }

    gm_estimate e;
    gm_error err = {0};
    int rc = strcmp(task, "-") == 0 ? read_stdin(&eo, &e, &err)
                                    : gm_estimate_task_file_opt(task, &eo, &e, &err);
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
