/* commands.h - the subcommands main.c dispatches to, and the exit codes they share. */
#ifndef GM_COMMANDS_H
#define GM_COMMANDS_H

#include <jansson.h>

/* Exit statuses, stable for scripts. */
enum gm_exit {
    GM_EXIT_OK = 0,
    GM_EXIT_FAILURE = 1, /* a runtime error, or a command's own failure verdict */
    GM_EXIT_USAGE = 2,   /* bad flags, unknown field, malformed input */
    GM_EXIT_NO_GPU = 3,  /* no GPU could be read */
    GM_EXIT_NOT_ENOUGH = 4,
    GM_EXIT_TIMEOUT = 5,
};

/* Each takes the arguments after the command name (argv[0] is the command name) and returns
 * the process exit status. They print their own errors as "gpumon <cmd>: <message>". */
int gm_cli_query(int argc, char **argv);
int gm_cli_serve(int argc, char **argv);
int gm_cli_record(int argc, char **argv);
int gm_cli_run(int argc, char **argv);
int gm_cli_history(int argc, char **argv);
int gm_cli_select(int argc, char **argv);
int gm_cli_wait(int argc, char **argv);
int gm_cli_estimate(int argc, char **argv);
int gm_cli_snapshot(int argc, char **argv);
int gm_cli_diff(int argc, char **argv);
int gm_cli_bench(int argc, char **argv);
int gm_cli_containers(int argc, char **argv);
/* `gpumon cluster status|select`: the fleet as Prometheus sees it. */
int gm_cli_cluster(int argc, char **argv);
int gm_cli_top(int argc, char **argv);
/* nvidia-smi's reading options; argv[0] is "smi" or the program's own name ("nvidia-smi"). */
int gm_cli_smi(int argc, char **argv);

/* The option tables of the commands that have one (gpumon help --dump writes them out). */
struct gm_opt_command;
extern const struct gm_opt_command gm_cli_query_command, gm_cli_select_command, gm_cli_wait_command,
    gm_cli_top_command, gm_cli_snapshot_command, gm_cli_diff_command, gm_cli_cluster_command,
    gm_cli_history_command, gm_cli_containers_command, gm_cli_record_command, gm_cli_run_command,
    gm_cli_estimate_command, gm_cli_bench_command;

/* The engine behind `select` and `wait` (cmd is "select" or "wait"). */
int gm_cli_select_run(const char *cmd, int argc, char **argv);

#endif
