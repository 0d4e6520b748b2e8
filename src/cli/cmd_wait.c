/* cmd_wait.c - `gpumon wait`: poll until N GPUs qualify (as `gpumon select` judges them) or
 * time out; the options, output and engine are shared with cmd_select.c. */
#include "cli/commands.h"

/* Defined in cmd_select.c. */

int gm_cli_wait(int argc, char **argv)
{
    return gm_cli_select_run("wait", argc, argv);
}
