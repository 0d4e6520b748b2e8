/* cmd_diff.c - `gpumon diff`: compares two `gpumon snapshot` files and says whether the system
 * changed between them, as text for a person or JSON for a pipeline, and in the exit status. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/audit.h"

typedef struct diff_opts {
    const char *before, *after;
    bool json;
    gm_audit_tolerance tol;
} diff_opts;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gpumon diff BEFORE.json AFTER.json [options]\n\n"
            "Compares two snapshots from `gpumon snapshot` and reports every difference:\n"
            "  CHANGED  an invariant differs: GPU set (by UUID), model, index, bus id, memory\n"
            "           capacity, power limit, persistence mode, max PCIe link, P2P matrix, a GPU\n"
            "           lost; driver, CUDA, NVML; host name, kernel, CPU model, CPU count, host\n"
            "           memory. Or a GPU's memory used or mean power rose beyond the tolerance.\n"
            "  WARNING  the current PCIe link generation or width differs (GPUs train their links\n"
            "           down when idle, so gen1 at rest is normal), the provider differs, or a\n"
            "           value is known in one snapshot only.\n"
            "  note     memory or power moved within the tolerance, or fell.\n\n"
            "Options:\n"
            "      --mem-tolerance-mb N   memory used may rise N MiB per GPU (default %.0f)\n"
            "      --power-tolerance-w N  mean power may rise N W per GPU (default %.0f)\n"
            "      --strict               warnings count as changes\n"
            "      --format FMT           text (default) or json\n"
            "  -h, --help                 show this help\n\n"
            "Exit status: 0 UNCHANGED, 1 CHANGED, 2 usage error or a file that is not a readable\n"
            "snapshot.\n",
            GM_AUDIT_DEFAULT_MEM_TOLERANCE_MIB, GM_AUDIT_DEFAULT_POWER_TOLERANCE_W);
}

static bool parse_tolerance(const char *flag, const char *arg, double *out)
{
    return gm_cli_parse_double("diff", flag, "a number", arg, 0, 1e9, out);
}

static int parse_args(int argc, char **argv, diff_opts *o)
{
    enum { OPT_MEM = 256, OPT_POWER, OPT_STRICT, OPT_FORMAT };
    static const struct option longopts[] = {
        {"mem-tolerance-mb", required_argument, NULL, OPT_MEM},
        {"power-tolerance-w", required_argument, NULL, OPT_POWER},
        {"strict", no_argument, NULL, OPT_STRICT},
        {"format", required_argument, NULL, OPT_FORMAT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_MEM:
            if (!parse_tolerance("--mem-tolerance-mb", optarg, &o->tol.mem_mib))
                return GM_EXIT_USAGE;
            break;
        case OPT_POWER:
            if (!parse_tolerance("--power-tolerance-w", optarg, &o->tol.power_w))
                return GM_EXIT_USAGE;
            break;
        case OPT_STRICT:
            o->tol.strict = true;
            break;
        case OPT_FORMAT:
            if (strcmp(optarg, "json") == 0)
                o->json = true;
            else if (strcmp(optarg, "text") == 0)
                o->json = false;
            else {
                fprintf(stderr, "gpumon diff: invalid --format \"%s\" (expected text or json)\n",
                        optarg);
                return GM_EXIT_USAGE;
            }
            break;
        case 'h':
            usage(stdout);
            return GM_EXIT_OK;
        default:
            return gm_cli_getopt_error("diff", c, argv, longopts);
        }
    }
    if (argc - optind != 2) {
        fprintf(stderr, "gpumon diff: expected two snapshot files, BEFORE and AFTER (got %d)\n",
                argc - optind);
        return GM_EXIT_USAGE;
    }
    o->before = argv[optind];
    o->after = argv[optind + 1];
    return -1;
}

int gm_cli_diff(int argc, char **argv)
{
    diff_opts o = {0};
    gm_audit_tolerance_init(&o.tol);
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0)
        return rc;

    gm_error err = {0};
    json_t *before = NULL, *after = NULL;
    if (gm_audit_load(o.before, &before, &err) < 0 || gm_audit_load(o.after, &after, &err) < 0) {
        fprintf(stderr, "gpumon diff: %s\n", err.msg);
        json_decref(before);
        return err.code == GM_ENOMEM ? GM_EXIT_FAILURE : GM_EXIT_USAGE;
    }
    gm_audit_verdict v;
    if (gm_audit_diff(before, after, &o.tol, &v, &err) < 0) {
        fprintf(stderr, "gpumon diff: %s\n", err.msg);
        rc = GM_EXIT_FAILURE;
    } else {
        if (o.json)
            gm_cli_write_json(stdout, v.report, true);
        else
            gm_audit_print_text(stdout, &v);
        rc = v.changed ? GM_EXIT_FAILURE : GM_EXIT_OK;
        gm_audit_verdict_free(&v);
    }
    json_decref(before);
    json_decref(after);
    return rc;
}
