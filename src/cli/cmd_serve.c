/* cmd_serve.c - `gpumon serve`: reads the configuration (flags, GPU_MONITOR_* variables,
 * defaults) and runs the daemon. */
#include <stdio.h>

#include "base/opt.h"
#include "cli/commands.h"
#include "server/config.h"
#include "server/server.h"

extern char **environ;

int gm_cli_serve(int argc, char **argv)
{
    gm_serve_config cfg;
    gm_error err = {0};
    if (gm_serve_config_load(&cfg, argc, argv, (const char *const *)environ, &err) < 0) {
        fprintf(stderr, "gpumon serve: %s\n", err.msg);
        return GM_EXIT_USAGE;
    }
    if (cfg.help) {
        gm_opt_help(&gm_serve_command, stdout, gm_opt_help_width());
        return GM_EXIT_OK;
    }
    int rc = gm_server_run(&cfg, &err);
    if (rc == GM_OK)
        return GM_EXIT_OK;
    fprintf(stderr, "gpumon serve: %s\n", err.msg[0] ? err.msg : gm_strerror(rc));
    return rc == GM_EINVAL ? GM_EXIT_USAGE : GM_EXIT_FAILURE;
}
