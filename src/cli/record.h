/* record.h - `gpumon record` as `gpumon run` calls it: the options record takes, filled from
 * flags by record or from its own options and the leased GPUs by run. */
#ifndef GM_CLI_RECORD_H
#define GM_CLI_RECORD_H

#include <jansson.h>
#include <stdbool.h>

#include "cli/common.h"

typedef struct gm_cli_record_opts {
    const char *name; /* "record" or "run", for messages */
    gm_cli_gpu_filter filter;
    bool have_filter;
    double interval_s; /* 0: 1 s */
    const char *output;
    const char *label;
    const char *db;
    bool no_db;
    bool quiet;
    bool snapshot;
    unsigned snapshot_window_ms; /* 0: GM_AUDIT_DEFAULT_POWER_WINDOW_MS, unless set */
    bool snapshot_window_set;
    gm_cli_source src;
    char **command; /* NULL-terminated argv */
    /* What the stored session names as its command when that is not `command` itself
     * (`run --image`: the image and its arguments, while gpumon follows the container); NULL:
     * command. */
    char **shown_command;
    const char *id; /* the session's id, chosen by the caller; NULL: a new one */
    /* Called once the command has ended, before the session is stored: the keys of the object
     * it returns (new reference, may be NULL) join the document (`run --image`: the container's
     * exit state, out-of-memory kill included). */
    json_t *(*ended)(void *arg);
    void *ended_arg;
} gm_cli_record_opts;

/* Records o->command: samples its GPUs (core/record.c), stores the session as kind, merges
 * attach (may be NULL; stolen) into its document, writes --output, prints the summary.
 * Returns the exit status: the command's, or a gpumon failure's. */
int gm_cli_record_exec(const gm_cli_record_opts *o, const char *kind, json_t *attach);

#endif
