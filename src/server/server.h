/* server.h - `gpumon serve`: the daemon's lifecycle around one sampler thread and one
 * event loop (HTTP on libmicrohttpd, WebSocket streams). */
#ifndef GM_SERVER_H
#define GM_SERVER_H

#include "server/config.h"

#include "gpumon.h"

/* Runs the daemon with cfg until SIGINT or SIGTERM: opens the collector, starts the sampler,
 * listens, prints "gpumon: listening on http://HOST:PORT" to stderr (and writes the port to
 * cfg->port_file), serves, then shuts down cleanly (sampler joined, clients closed, everything
 * freed). Blocks SIGINT and SIGTERM in the calling thread and handles them on a thread of its
 * own. Returns GM_OK after a signal; GM_EINVAL with a message when the configuration cannot be
 * honoured (--web-root not a directory, history too large for the GPUs found); another error
 * code with a message on a runtime failure (cannot open the provider, cannot listen). */
int gm_server_run(const gm_serve_config *cfg, gm_error *err);

#endif
