/* host.h - host metrics and process details read from procfs. */
#ifndef GM_HOST_H
#define GM_HOST_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpumon.h"

/* Reads CPU, memory, swap, load, uptime, CPU model, kernel and hostname from a procfs root.
 * CPU utilisation needs two readings, so the reader keeps the previous /proc/stat counters. */
typedef struct gm_host_reader gm_host_reader;

/* root: the procfs mount point ("/proc" when NULL); tests pass a fixture tree. */
int gm_host_reader_open(const char *root, gm_host_reader **out, gm_error *err);
void gm_host_reader_close(gm_host_reader *r);

/* Fills out (zeroed first). CPU utilisation (total and per core) is set from the second call on,
 * as the busy share of the jiffies elapsed since the previous call. Metrics whose file is missing
 * or malformed stay absent; returns an error only when nothing could be read. */
int gm_host_reader_read(gm_host_reader *r, gm_host *out, gm_error *err);

/* Fills user (from the real UID in <root>/<pid>/status, resolved with getpwuid_r, the number when
 * unnamed) and command (from <root>/<pid>/cmdline, NULs as spaces, falling back to comm).
 * Returns GM_ENOENT when the process is gone or hidden; the buffers are then empty strings. */
int gm_host_describe_process(const char *root, uint32_t pid, char *user, size_t user_len,
                             char *command, size_t command_len);

/* The parent of process pid (PPid in <root>/<pid>/status) into *ppid. GM_OK, GM_ENOENT (the
 * process is gone or hidden), GM_EPARSE (no PPid line). */
int gm_host_parent_pid(const char *root, uint32_t pid, uint32_t *ppid);

/* What a process costs the host, from <root>/<pid>/stat and status: CPU time used so far (user
 * plus system, in seconds: a rate needs two readings), resident memory, real UID and start time
 * (clock ticks after boot: with the pid, it names one process across readings). */
typedef struct gm_host_proc_usage {
    double cpu_s;
    uint64_t rss_bytes;
    bool has_uid;
    uid_t uid;
    uint64_t start_ticks; /* field 22: clock ticks after boot, which tells a reused pid */
    char state;           /* field 3: 'R', 'S', 'Z' (finished, not reaped)... */
} gm_host_proc_usage;

/* GM_OK, GM_ENOENT (gone or hidden), GM_EPARSE (a stat line that does not parse). */
int gm_host_process_usage(const char *root, uint32_t pid, gm_host_proc_usage *out);

/* Reads at most cap - 1 bytes of a file (procfs reports size 0, so it reads until the end or
 * cap) into buf, NUL-terminated. The length read; -1 when the file cannot be opened or read. */
ssize_t gm_host_read_small(const char *path, char *buf, size_t cap);

#endif
