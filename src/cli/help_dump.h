/* help_dump.h - what `gpumon help --dump FORMAT` writes from the commands' option tables: the
 * bash completion (deploy/gpumon.bash), the Markdown option tables of docs/CLI.md, the daemon's
 * settings table of docs/API.md (flag, variable, /api/config key), or the tables as JSON. */
#ifndef GM_CLI_HELP_DUMP_H
#define GM_CLI_HELP_DUMP_H

#include <stdio.h>

#include "base/opt.h"

/* A command as the dump sees it: its table, or (for a command that parses its options itself)
 * the options its --help lists, space-separated. */
typedef struct gm_cli_dump_command {
    const char *name;
    const gm_opt_command *opts; /* NULL: legacy */
    const char *legacy;
} gm_cli_dump_command;

/* Writes format ("bash", "markdown", "settings" or "json") for the n commands to out. Returns 0, or
 * 2 (a message on stderr) for an unknown format. */
int gm_cli_help_dump(const char *format, const gm_cli_dump_command *cmds, size_t n, FILE *out);

#endif
