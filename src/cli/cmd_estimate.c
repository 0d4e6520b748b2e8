/* cmd_estimate.c - `gpumon estimate`: GPUs and per-GPU memory a task config needs. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/estimate.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gpumon estimate --task FILE [--format text|json]\n\n"
            "Reads an inference task config and prints how many GPUs it needs,\n"
            "tp x pp x max(dp, cp, dcp) with the largest value of each list, and the memory\n"
            "each GPU should have free (a heuristic on the model's size: 65B+ 20000 MiB,\n"
            "7B-65B 12000 MiB, else 8000 MiB).\n\n"
            "Options:\n"
            "  -f, --task FILE     the task config (JSON); - reads standard input\n"
            "      --format FMT    text (default) or json\n"
            "  -h, --help          show this help\n\n"
            "Task config: {\"model\": {\"id_or_path\": \"llama-3-70b\"}, \"parameters\": "
            "{\"tp-size\": [1, 2, 4], ...}}\n"
            "Each dimension may be spelled tensor-parallel-size, tensor_parallel_size, "
            "tp-size, tp_size\nor tp (likewise pipeline/pp, data/dp, context/cp, decode-context/"
            "dcp); a value is a\npositive integer or a list of them. Two spellings of one "
            "dimension with different values\nare an error.\n\n"
            "Exit status: 0 ok, 1 failure, 2 usage error or malformed task config.\n");
}

static int read_stdin(gm_estimate *e, gm_error *err)
{
    char buf[65536];
    size_t len = fread(buf, 1, sizeof buf, stdin);
    if (len == sizeof buf)
        return gm_error_set(err, GM_EPARSE, "standard input: task config over %zu bytes",
                            sizeof buf - 1);
    return gm_estimate_task_text(buf, len, "standard input", e, err);
}

static void print_text(const gm_estimate *e)
{
    printf("GPUs needed:     %llu  (tp %u x pp %u x max(dp %u, cp %u, dcp %u))\n",
           (unsigned long long)e->gpus, e->size[GM_PAR_TP], e->size[GM_PAR_PP], e->size[GM_PAR_DP],
           e->size[GM_PAR_CP], e->size[GM_PAR_DCP]);
    if (e->model[0])
        printf("Memory per GPU:  %u MiB  (%s: %s)\n", e->memory_mib, e->model, e->memory_rule);
    else
        printf("Memory per GPU:  %u MiB  (no model in the task: %s)\n", e->memory_mib,
               e->memory_rule);
    printf("Wait for them:   gpumon wait --count %llu --min-free-mb %u\n",
           (unsigned long long)e->gpus, e->memory_mib);
}

int gm_cli_estimate(int argc, char **argv)
{
    enum { OPT_FORMAT = 256 };
    static const struct option longopts[] = {
        {"task", required_argument, NULL, 'f'},
        {"format", required_argument, NULL, OPT_FORMAT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *task = NULL;
    bool json = false;
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
    int rc = strcmp(task, "-") == 0 ? read_stdin(&e, &err) : gm_estimate_task_file(task, &e, &err);
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
