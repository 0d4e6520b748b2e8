/* main.c - gpumon's entry point: dispatches to one subcommand, nothing else. */
#include "cli/commands.h"

#include <stdio.h>
#include <string.h>

#include "base/suggest.h"
#include "gpumon.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"query", gm_cli_query,
     "print GPU and host metrics once or in a loop (table, JSON, nvidia-smi CSV)"},
    {"serve", gm_cli_serve, "run the daemon: REST API, WebSocket stream, Prometheus /metrics"},
    {"record", gm_cli_record,
     "run a command while sampling GPUs; min/max/mean/p95, energy, timeline"},
    {"select", gm_cli_select, "rank GPUs by availability and print the best N"},
    {"wait", gm_cli_wait, "block until N GPUs are available, or time out"},
    {"estimate", gm_cli_estimate, "GPUs and memory a task config needs"},
    {"run", gm_cli_run, "estimate, wait, select with a lease, then record a command"},
    {"snapshot", gm_cli_snapshot, "system inventory for benchmark audits (GPUs, PCIe, P2P, CPU)"},
    {"diff", gm_cli_diff, "compare two snapshots; exit 1 when the system changed"},
    {"bench", gm_cli_bench,
     "load an inference server; latency, throughput and energy per token of its GPUs"},
    {"containers", gm_cli_containers,
     "list the containers gpumon started; remove those a killed gpumon left"},
    {"history", gm_cli_history,
     "list, show, export, compare, delete and prune stored sessions, runs, benchmarks"},
    {"smi", gm_cli_smi, "nvidia-smi's reading options (-L, -q, -q -x, --query-gpu...)"},
    {"cluster", gm_cli_cluster,
     "the fleet from Prometheus: nodes, idle GPUs, health; the node for N GPUs"},
    {"top", gm_cli_top, "live terminal view: GPU bars, history graphs, processes (kill, sort)"},
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
    fprintf(out,
            "\nEnvironment:\n"
            "  GPU_MONITOR_TELEMETRY_PROVIDER  nvml | nvidia-smi | sim | auto (default auto:\n"
            "                                  NVML, then nvidia-smi)\n"
            "  GPU_MONITOR_NVML_LIB            path of libnvidia-ml.so.1 to load\n"
            "  GPU_MONITOR_DB                  SQLite database of sessions, runs and snapshots\n"
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
