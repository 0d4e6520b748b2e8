/* main.c - gpumon's entry point: dispatches to one subcommand, nothing else. */
#include "cli/commands.h"

#include <stdio.h>
#include <string.h>

#include "base/opt.h"
#include "base/suggest.h"
#include "cli/help_dump.h"
#include "server/config.h"
#include "gpumon.h"
#include "collect/registry.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
    const gm_opt_command *opts; /* its option table; NULL: it parses its own */
    const char *legacy;         /* then the options its --help lists, for the completion */
} command;

static const command commands[] = {
    {"query", gm_cli_query, "GPU and host metrics, once or in a loop (table, JSON, CSV)",
     &gm_cli_query_command, NULL},
    {"serve", gm_cli_serve, "run the daemon: REST API, WebSocket stream, Prometheus /metrics",
     &gm_serve_command, NULL},
    {"record", gm_cli_record, "run a command while sampling GPUs: statistics, energy, timeline",
     &gm_cli_record_command, NULL},
    {"select", gm_cli_select, "rank GPUs by availability and print the best N",
     &gm_cli_select_command, NULL},
    {"wait", gm_cli_wait, "block until N GPUs are available, or time out", &gm_cli_wait_command,
     NULL},
    {"estimate", gm_cli_estimate, "GPUs and memory a task config needs", &gm_cli_estimate_command,
     NULL},
    {"run", gm_cli_run, "estimate, wait, select with a lease, then record a command",
     &gm_cli_run_command, NULL},
    {"snapshot", gm_cli_snapshot, "system inventory for benchmark audits (GPUs, PCIe, P2P, CPU)",
     &gm_cli_snapshot_command, NULL},
    {"diff", gm_cli_diff, "compare two snapshots; exit 1 when the system changed",
     &gm_cli_diff_command, NULL},
    {"bench", gm_cli_bench, "load an inference server: latency, throughput, energy per token",
     &gm_cli_bench_command, NULL},
    {"containers", gm_cli_containers,
     "the containers gpumon started; remove those a killed gpumon left", &gm_cli_containers_command,
     NULL},
    {"history", gm_cli_history, "stored sessions, runs, benchmarks: list, show, export, compare...",
     &gm_cli_history_command, NULL},
    {"smi", gm_cli_smi, "nvidia-smi's reading options (-L, -q, -q -x, --query-gpu...)", NULL,
     "-h --help --version -L --list-gpus -q --query -x --xml-format --dtd -d --display -i --id -f "
     "--filename -l --loop -lms --loop-ms --query-gpu --query-compute-apps --query-retired-pages "
     "--query-remapped-rows --format --help-query-gpu --help-query-compute-apps "
     "--help-query-retired-pages --help-query-remapped-rows --provider --simulate --seed"},
    {"cluster", gm_cli_cluster, "the fleet from Prometheus: nodes, idle GPUs, the node for N GPUs",
     &gm_cli_cluster_command, NULL},
    {"top", gm_cli_top, "live terminal view: GPU bars, graphs, processes (kill, sort)",
     &gm_cli_top_command, NULL},
};

#define NCOMMANDS (sizeof commands / sizeof *commands)

static void usage(FILE *out)
{
    fprintf(out, "usage: gpumon <command> [options]\n"
                 "       gpumon help [<command>], gpumon <command> -h|--help\n"
                 "       gpumon -v|--version\n\n"
                 "GPU telemetry for the machines that run AI work.\n\n"
                 "Commands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nEnvironment:\n"
                 "  GPU_MONITOR_TELEMETRY_PROVIDER  ");
    char providers[512];
    snprintf(providers, sizeof providers,
             "%s (default auto: NVIDIA's GPUs by NVML, else nvidia-smi; AMD's by amd_smi, else "
             "rocm_smi, else amdgpu; nvtop the rest)",
             gm_provider_names());
    gm_opt_wrap(out, providers, 34, 34, 80);
    fprintf(out,
            "  GPU_MONITOR_NVML_LIB            path of libnvidia-ml.so.1 to load\n"
            "  GPU_MONITOR_AMD_SMI_LIB         path of libamd_smi.so to load\n"
            "  GPU_MONITOR_ROCM_SMI_LIB        path of librocm_smi64.so.1 to load\n"
            "  GPU_MONITOR_DB                  SQLite database of sessions, runs, snapshots\n"
            "                                  (default $XDG_STATE_HOME/gpumon/gpumon.db)\n"
            "  GPU_MONITOR_LEASE_DIR           where GPU leases live (share it between users)\n"
            "  NO_COLOR                        set: no colour on a terminal (query, top)\n\n"
            "Options mean the same in every command: -n/--count a number of GPUs, -i/--id the\n"
            "GPUs to use, --interval the sampling interval, --label a label, -o/--output a\n"
            "file, -q/--quiet, -h/--help (docs/CLI.md has the table).\n\n"
            "Exit status: 0 ok, 1 failure, 2 usage error, 3 no GPU found, 4 not enough GPUs\n"
            "qualify (select), 5 timed out (wait).\n");
}

static const command *find_command(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

/* "unknown command", with the likely one when name is a typo of it. Returns GM_EXIT_USAGE. */
static int unknown_command(const char *name)
{
    const char *names[NCOMMANDS + 1];
    for (size_t i = 0; i < NCOMMANDS; i++)
        names[i] = commands[i].name;
    names[NCOMMANDS] = "help";
    const char *guess = gm_suggest(name, names, NCOMMANDS + 1);
    if (guess)
        fprintf(stderr, "gpumon: unknown command \"%s\"; did you mean \"%s\"?\n", name, guess);
    else
        fprintf(stderr, "gpumon: unknown command \"%s\" (see gpumon --help)\n", name);
    return GM_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    /* Run through a link named nvidia-smi, gpumon is nvidia-smi. */
    const char *self = argc > 0 && argv[0] ? strrchr(argv[0], '/') : NULL;
    self = self ? self + 1 : (argc > 0 && argv[0] ? argv[0] : "");
    if (strcmp(self, "nvidia-smi") == 0)
        return gm_cli_smi(argc, argv);
    if (argc < 2) {
        usage(stderr);
        return GM_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 ||
        (strcmp(cmd, "help") == 0 && argc == 2)) {
        usage(stdout);
        return GM_EXIT_OK;
    }
    /* -V too: the spelling nvidia-smi's users and earlier gpumon versions know. */
    if (strcmp(cmd, "-v") == 0 || strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
        printf("gpumon %s\n", GM_VERSION);
        return GM_EXIT_OK;
    }
    if (strcmp(cmd, "help") == 0 && argc > 2 && strcmp(argv[2], "--dump") == 0) {
        /* Not in the help: what deploy/gpumon.bash and docs/CLI.md are generated from. */
        if (argc != 4) {
            fprintf(stderr, "gpumon help: --dump takes bash, markdown, json or settings\n");
            return GM_EXIT_USAGE;
        }
        gm_cli_dump_command dump[NCOMMANDS];
        for (size_t i = 0; i < NCOMMANDS; i++)
            dump[i] = (gm_cli_dump_command){commands[i].name, commands[i].opts, commands[i].legacy};
        return gm_cli_help_dump(argv[3], dump, NCOMMANDS, stdout);
    }
    if (strcmp(cmd, "help") == 0) {
        if (argc > 3) {
            fprintf(stderr, "gpumon help: one command at a time (gpumon help <command>)\n");
            return GM_EXIT_USAGE;
        }
        const command *c = find_command(argv[2]);
        if (!c)
            return unknown_command(argv[2]);
        char help_flag[] = "--help";
        char *sub[] = {argv[2], help_flag, NULL};
        return c->run(2, sub);
    }
    const command *c = find_command(cmd);
    if (c)
        return c->run(argc - 1, argv + 1);
    if (cmd[0] == '-') {
        static const char *const opts[] = {"--help", "--version"};
        const char *guess = strncmp(cmd, "--", 2) == 0 ? gm_suggest(cmd, opts, 2) : NULL;
        if (guess)
            fprintf(stderr, "gpumon: unknown option \"%s\"; did you mean \"%s\"?\n", cmd, guess);
        else
            fprintf(stderr, "gpumon: unknown option \"%s\" (see gpumon --help)\n", cmd);
        return GM_EXIT_USAGE;
    }
    return unknown_command(cmd);
}
