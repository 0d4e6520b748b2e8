/* cmd_diff.c - `gpumon diff`: compares two `gpumon snapshot` files and says whether the system
 * changed between them, as text for a person or JSON for a pipeline, and in the exit status. */
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

/* The defaults as the help states them. */
#define DEFAULT_MEM   "256"
#define DEFAULT_POWER "25"
_Static_assert((int)GM_AUDIT_DEFAULT_MEM_TOLERANCE_MIB == 256, "help says 256");
_Static_assert((int)GM_AUDIT_DEFAULT_POWER_TOLERANCE_W == 25, "help says 25");

static const gm_opt diff_table[] = {
    {.type = GM_OPT_DOUBLE,
     .name = "mem-tolerance-mb",
     .arg = "N",
     GM_OPT_AT(diff_opts, tol.mem_mib),
     .min = 0,
     .max = 1e9,
     .help = "Memory used may rise N MiB per GPU (default " DEFAULT_MEM ")."},
    {.type = GM_OPT_DOUBLE,
     .name = "power-tolerance-w",
     .arg = "N",
     GM_OPT_AT(diff_opts, tol.power_w),
     .min = 0,
     .max = 1e9,
     .help = "Mean power may rise N W per GPU (default " DEFAULT_POWER ")."},
    {.type = GM_OPT_FLAG,
     .name = "strict",
     GM_OPT_AT(diff_opts, tol.strict),
     .help = "Warnings count as changes."},
    GM_CLI_OPT_FORMAT_TEXT_JSON(diff_opts, json),
    GM_CLI_OPT_JSON(diff_opts, json, true),
    {0},
};

const gm_opt_command gm_cli_diff_command = {
    .name = "diff",
    .usage = "diff BEFORE.json AFTER.json [options]",
    .description = "Compares two snapshots from `gpumon snapshot` and reports every difference.",
    .table = diff_table,
    .epilogue = "Each difference is one of:\n"
                "  CHANGED  an invariant differs: GPU set (by UUID), model, index, bus id,\n"
                "           memory capacity, power limit, persistence mode, max PCIe link, P2P\n"
                "           matrix, a GPU lost; driver, CUDA, NVML; host name, kernel, CPU model,\n"
                "           CPU count, host memory. Or a GPU's memory used or mean power rose\n"
                "           beyond the tolerance.\n"
                "  WARNING  the current PCIe link generation or width differs (GPUs train their\n"
                "           links down when idle, so gen1 at rest is normal), the provider\n"
                "           differs, or a value is known in one snapshot only.\n"
                "  note     memory or power moved within the tolerance, or fell.\n\n"
                "Exit status: 0 UNCHANGED, 1 CHANGED, 2 usage error or a file that is not a\n"
                "readable snapshot.\n",
};

static int read_options(int argc, char **argv, diff_opts *o)
{
    int first;
    int rc = gm_cli_parse(&gm_cli_diff_command, argc, argv, o, &first);
    if (rc != GM_CLI_PROCEED)
        return rc;
    if (argc - first != 2) {
        fprintf(stderr, "gpumon diff: expected two snapshot files, BEFORE and AFTER (got %d)\n",
                argc - first);
        return GM_EXIT_USAGE;
    }
    o->before = argv[first];
    o->after = argv[first + 1];
    return GM_CLI_PROCEED;
}

int gm_cli_diff(int argc, char **argv)
{
    diff_opts o = {0};
    gm_audit_tolerance_init(&o.tol);
    int rc = read_options(argc, argv, &o);
    if (rc != GM_CLI_PROCEED)
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
