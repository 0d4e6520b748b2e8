/* docker.h - a client of the Docker Engine API (v1.41) over the engine's unix socket, on
 * libcurl: what gpumon needs to run an inference server or an experiment in a container on the
 * GPUs it leased. Images (presence, pull), containers (create, start, inspect, logs, kill, stop,
 * remove, list by label). The same calls work against dockerd and podman's Docker-compatible
 * service (`podman system service`), which answers the v1.41 paths.
 *
 * Each call is one HTTP request on a connection of its own (a unix socket connects in
 * microseconds), so a callback of a streaming call (logs, pull) may make other calls on the same
 * client. Failures come back as sentences naming what was attempted (the image, the container)
 * and what the engine said ("cannot create container gpumon-x from image y: no such image: y
 * (HTTP 404 from the engine at /var/run/docker.sock)"); nothing here prints. Not thread-safe on
 * one client; separate clients are fine. */
#ifndef GM_DOCKER_H
#define GM_DOCKER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpumon.h"

#define GM_DOCKER_API_VERSION  "v1.41"
#define GM_DOCKER_DEFAULT_HOST "unix:///var/run/docker.sock"
/* Room for an id ("sha256:" and 64 hex digits) or a container name. */
#define GM_DOCKER_ID_LEN 128

typedef struct gm_docker gm_docker;

/* A client for the engine at host, "unix:///path/to/socket"; NULL: $DOCKER_HOST when set and
 * non-empty, else GM_DOCKER_DEFAULT_HOST. Connects to nothing yet. GM_ENOTSUP for another
 * scheme (tcp://, ssh://: gpumon speaks to a local engine only), GM_EINVAL for a malformed
 * value, GM_ENOMEM. */
int gm_docker_open(const char *host, gm_docker **out, gm_error *err);
/* NULL is a no-op. */
void gm_docker_close(gm_docker *d);
/* The socket path in use. */
const char *gm_docker_socket(const gm_docker *d);

/* The engine's name and version ("Docker Engine 24.0.7", "Podman Engine 4.3.1") into buf.
 * GM_EIO when the socket cannot be reached (err says which, and how to name another). */
int gm_docker_version(gm_docker *d, char *buf, size_t len, gm_error *err);

/* True when ref is a syntactically sound image or container reference: 1-255 bytes of
 * [A-Za-z0-9._/:@-], not starting with '-' or '/', without ".." or "//". Every call checks its
 * reference with it (a container's has no '/' either), so nothing else reaches a URL. */
bool gm_docker_ref_ok(const char *ref);

/* The id of image ("sha256:...") into id. GM_ENOENT when the engine does not have it. */
int gm_docker_image_id(gm_docker *d, const char *image, char *id, size_t len, gm_error *err);

/* A streaming call's hooks: data as it arrives (for logs: stream 1 stdout, 2 stderr, the frame
 * headers removed; for a pull: one progress sentence per call, stream 0), and tick, called at
 * least once a second while the call waits; tick returning false ends the call with
 * GM_ECANCELED. Either may be NULL. */
typedef struct gm_docker_stream {
    void (*data)(void *arg, int stream, const char *bytes, size_t len);
    bool (*tick)(void *arg);
    void *arg;
} gm_docker_stream;

/* The engine's local images (GET /images/json), one entry per name an image carries, as a JSON
 * array of {"image": "repo:tag", "id", "size_bytes", "created" (epoch s)}; untagged images are
 * left out. New reference in *out. GM_EIO when the engine cannot be reached or fails. */
int gm_docker_images(gm_docker *d, json_t **out, gm_error *err);

/* Pulls image (a tag; "latest" when the reference names none), calling s->data with sentences
 * such as "a1b2c3d4e5f6: Downloading 12.3 of 45.6 MB" as the engine reports them. GM_ENOENT when
 * the registry does not know it; an error the engine reports inside its answer fails the call
 * with that error. */
int gm_docker_pull(gm_docker *d, const char *image, const gm_docker_stream *s, gm_error *err);

/* The engine frames a container's output (without a TTY) as 8-byte headers {stream, 0, 0, 0,
 * big-endian length}, each followed by that many bytes. A first header that does not look like
 * one (a container with a TTY) makes everything raw output (stream 1). Zero-initialise, then
 * feed the answer in pieces of any size: s->data gets the output without the headers. */
typedef struct gm_docker_demux {
    unsigned char hdr[8];
    size_t hlen;
    uint32_t left;
    int stream;
    bool raw, decided;
} gm_docker_demux;

void gm_docker_demux_feed(gm_docker_demux *m, const char *p, size_t n, const gm_docker_stream *s);

/* What to create. Arrays are n entries long; NULL with 0 entries is fine. */
typedef struct gm_docker_spec {
    const char *name;       /* the container's name (NULL: the engine picks one) */
    const char *image;      /* required */
    const char *const *cmd; /* arguments after the image's entrypoint (NULL: image's) */
    size_t ncmd;
    const char *const *env; /* "KEY=VALUE" */
    size_t nenv;
    const char *const *binds; /* "HOST:CONTAINER[:ro]" */
    size_t nbinds;
    const char *const *label_key; /* labels, parallel arrays */
    const char *const *label_value;
    size_t nlabels;
    unsigned container_port;    /* published port inside (0: none) */
    const char *host_ip;        /* where it is published (NULL: "127.0.0.1") */
    unsigned host_port;         /* 0: a free port the engine picks */
    int64_t shm_bytes;          /* /dev/shm size, 0: the engine's default */
    const char *const *gpu_ids; /* HostConfig.DeviceRequests DeviceIDs (UUIDs or indices) */
    size_t ngpus;               /* 0: no device request at all */
} gm_docker_spec;

/* The body of POST /containers/create for s (Image, Cmd, Env, Labels, ExposedPorts,
 * HostConfig: PortBindings, DeviceRequests [{"Driver": "nvidia", "DeviceIDs": [...],
 * "Capabilities": [["gpu"]]}], ShmSize, Binds). New reference, NULL when out of memory. */
json_t *gm_docker_create_body(const gm_docker_spec *s);

/* Creates the container; its id into id. GM_ENOENT: no such image; GM_EEXIST: the name is
 * taken; GM_EINVAL: the engine refused the request; GM_EIO otherwise. */
int gm_docker_create(gm_docker *d, const gm_docker_spec *s, char *id, size_t len, gm_error *err);
/* Starts container ref (an id or a name); one already running is fine. GM_ENOENT, GM_EIO (the
 * runtime could not start it: the engine's message says why). */
int gm_docker_start(gm_docker *d, const char *ref, gm_error *err);

#define GM_DOCKER_PORTS_MAX 16

/* A container as GET /containers/{id}/json describes it. Absent fields are "" or 0. */
typedef struct gm_docker_state {
    char id[GM_DOCKER_ID_LEN];
    char name[GM_DOCKER_ID_LEN]; /* without the leading '/' */
    char image[256];             /* the reference it was created from */
    char image_id[GM_DOCKER_ID_LEN];
    char status[16]; /* created, running, paused, restarting, removing, exited, dead */
    bool running;
    bool oom_killed;
    int exit_code;
    pid_t pid; /* its first process, as the host numbers it; 0 when not running */
    char error[256];
    char started_at[40], finished_at[40];
    char health[16]; /* the image's HEALTHCHECK verdict, "" without one */
    size_t nports;
    struct {
        unsigned container_port; /* tcp */
        char host_ip[64];
        unsigned host_port;
    } ports[GM_DOCKER_PORTS_MAX];
} gm_docker_state;

/* Inspects container ref into *out. GM_ENOENT when there is none. */
int gm_docker_inspect(gm_docker *d, const char *ref, gm_docker_state *out, gm_error *err);

/* The fields of an inspect answer j (any JSON: what is missing or of another type stays "" or
 * 0) into *out, cleared first. What gm_docker_inspect does with the engine's answer. */
void gm_docker_state_parse(const json_t *j, gm_docker_state *out);

/* The host port publishing tcp port container_port of st, 0 when none; ip (may be NULL, at
 * least 64 bytes) gets its address. */
unsigned gm_docker_state_host_port(const gm_docker_state *st, unsigned container_port, char *ip);

/* Container ref's output (stdout and stderr): the last tail lines (0: all), then, with follow,
 * what it writes until it exits (or s->tick ends the call). The engine's 8-byte frame headers
 * are removed: s->data gets each piece with its stream. */
int gm_docker_logs(gm_docker *d, const char *ref, unsigned tail, bool follow,
                   const gm_docker_stream *s, gm_error *err);
/* The last n lines (n >= 1) of container ref's output as a JSON array of strings, oldest first
 * (stdout and stderr in the order the engine keeps them, line ends removed, bytes that are not
 * UTF-8 replaced). New reference in *out. */
int gm_docker_logs_tail(gm_docker *d, const char *ref, unsigned n, json_t **out, gm_error *err);

/* Sends signal (a name: "SIGTERM", "SIGKILL") to container ref. GM_ESTATE when it is not
 * running. */
int gm_docker_kill(gm_docker *d, const char *ref, const char *signal, gm_error *err);
/* Stops container ref: SIGTERM (or the image's stop signal), SIGKILL after timeout_s. One
 * already stopped is fine. */
int gm_docker_stop(gm_docker *d, const char *ref, unsigned timeout_s, gm_error *err);
/* Removes container ref, running or not, with its anonymous volumes. GM_ENOENT when there is
 * none. */
int gm_docker_remove(gm_docker *d, const char *ref, gm_error *err);

/* Every container (running or not) carrying label (a key, or "key=value"), as a JSON array of
 * {"id", "name", "image", "image_id", "state", "status", "created" (epoch s), "labels": {...},
 * "ports": [{"container_port", "host_ip", "host_port"}]}. New reference in *out. */
int gm_docker_list(gm_docker *d, const char *label, json_t **out, gm_error *err);

#endif
