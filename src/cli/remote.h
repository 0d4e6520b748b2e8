/* remote.h - a running daemon's GPUs for a CLI command (top --connect, query --connect): GET
 * /api/gpus over libcurl, read into the collector's snapshot type (base/json_read.h), so that
 * what is shown of a daemon's GPUs is drawn by the same code as a local reading. */
#ifndef GM_CLI_REMOTE_H
#define GM_CLI_REMOTE_H

#include <stdbool.h>

#include "gpumon.h"

typedef struct gm_cli_remote gm_cli_remote;

/* The token to send: given (--token), else $GPU_MONITOR_TOKEN, else NULL. */
const char *gm_cli_remote_token(const char *given);

/* A client of the daemon at url ("http://host:port", "host:port"; a path prefix is kept) sending
 * token (NULL: none) as a bearer token, each request given at most timeout_s. NULL with err set
 * (GM_EINVAL) for a URL or token it cannot use. Nothing is requested yet. */
gm_cli_remote *gm_cli_remote_open(const char *url, const char *token, double timeout_s,
                                  gm_error *err);

/* GET /api/gpus into s (from gm_snapshot_new). GM_OK; GM_EIO (no answer, a status other than
 * 200), GM_EPERM (401 or 403: the message says to give the token) or GM_EPARSE (not the JSON
 * expected), each with a message naming the daemon. */
int gm_cli_remote_read(gm_cli_remote *r, gm_snapshot *s, gm_error *err);

/* The daemon's URL as normalised ("http://127.0.0.1:9401"). */
const char *gm_cli_remote_where(const gm_cli_remote *r);

/* Whether the daemon is on a loopback address, so its processes' PIDs are this host's. */
bool gm_cli_remote_loopback(const gm_cli_remote *r);

void gm_cli_remote_close(gm_cli_remote *r);

#endif
