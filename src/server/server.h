/* server.h - `gpumon serve`: the daemon's lifecycle around one sampler thread and one
 * libwebsockets service loop. */
#ifndef GM_SERVER_H
#define GM_SERVER_H

#include "server/config.h"

/* Runs the daemon with cfg until SIGINT or SIGTERM: opens the collector, starts the sampler,
 * listens, prints "gpumon: listening on http://HOST:PORT" to stderr (and writes the port to
 * cfg->port_file), serves, then shuts down cleanly (sampler joined, clients closed, everything
 * freed). Blocks SIGINT and SIGTERM in the calling thread and handles them on a thread of its
 * own. Returns a process exit status: 0 after a signal, 1 on a runtime failure (cannot open
 * the provider, cannot listen), 2 when the configuration cannot be honoured (history too large
 * for the GPUs found). */
int gm_server_run(const gm_serve_config *cfg);

#endif
