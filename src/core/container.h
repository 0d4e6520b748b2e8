/* container.h - what gpumon adds around an engine's container (core/docker.h) when it runs an
 * inference server or an experiment in one: the labels that say which gpumon process owns it
 * (so `gpumon containers cleanup` can tell a container whose gpumon was killed from one still
 * in use), and the readiness probe of the server inside. */
#ifndef GM_CONTAINER_H
#define GM_CONTAINER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpumon.h"

/* Labels of every container gpumon creates. */
#define GM_CONTAINER_LABEL_OWNER "gpumon.owner" /* "HOST:PID" of the gpumon that made it */
/* The owner's start time (clock ticks after boot, /proc/PID/stat field 22): a PID reused by
 * another process after the owner died does not pass for the owner. */
#define GM_CONTAINER_LABEL_OWNER_START "gpumon.owner_start"
#define GM_CONTAINER_LABEL_RUN         "gpumon.run"  /* the run (benchmark, session) id */
#define GM_CONTAINER_LABEL_KEEP        "gpumon.keep" /* "1": --keep-container, kept on purpose */

/* This process as an owner: "HOST:PID" into owner, its start time into start ("" when /proc
 * does not say). */
void gm_container_owner_self(char *owner, size_t owner_len, char *start, size_t start_len);

typedef enum gm_container_owner_state {
    GM_OWNER_ALIVE,      /* the owning process is running on this host */
    GM_OWNER_GONE,       /* it is not: no such PID, or the PID now names another process */
    GM_OWNER_OTHER_HOST, /* the owner ran on another host: cannot be judged from here */
    GM_OWNER_UNKNOWN,    /* the labels are missing or malformed */
} gm_container_owner_state;

/* "alive", "gone", "other host", "unknown". */
const char *gm_container_owner_state_name(gm_container_owner_state s);

/* Judges the owner labels of a container (owner "HOST:PID", start its start time or NULL/""
 * when not labelled) against this host (hostname NULL: gethostname) and its processes (read
 * under procfs_root, NULL: /proc). */
gm_container_owner_state gm_container_owner_check(const char *owner, const char *start,
                                                  const char *hostname, const char *procfs_root);

/* The start time of process pid (clock ticks after boot) from <procfs_root>/<pid>/stat.
 * GM_ENOENT when there is no such process, GM_EPARSE when the file is not understood. */
int gm_container_proc_start(const char *procfs_root, long pid, uint64_t *ticks);

/* One readiness probe: GET url (http://127.0.0.1:PORT/PATH), at most timeout_ms. GM_OK with
 * *status the HTTP status of the answer; GM_EIO when nothing answered (refused, reset, timed
 * out: why says which). Proxies from the environment are not used. */
int gm_container_probe(const char *url, long timeout_ms, long *status, char *why, size_t len,
                       gm_error *err);

#endif
