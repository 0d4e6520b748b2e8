/* top_source.h - the data behind `gpumon top`: GPUs, their processes and the host, read either
 * here (a collector, as query reads) or from a daemon (GET /api/gpus over libcurl), into one
 * frame that keeps a short history per GPU for the graphs. Processes of this host also get
 * their CPU use, resident memory and owner from /proc, which is what sorting by CPU and a kill
 * that may only reach one's own processes need. The screen is top_view.c's. */
#ifndef GM_CLI_TOP_SOURCE_H
#define GM_CLI_TOP_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cli/common.h"
#include "gpumon.h"

#define GM_TOP_HISTORY   256 /* readings of history per GPU: the widest graph */
#define GM_TOP_MAX_PROCS 512

/* The graphs' series, each in percent: utilization, memory used of total, power of its
 * limit, and temperature in degrees (drawn against 100). */
enum { GM_TOP_H_UTIL, GM_TOP_H_MEM, GM_TOP_H_POWER, GM_TOP_H_TEMP, GM_TOP_H__COUNT };

/* One GPU. Readings the GPU does not report are NaN (shown as N/A, never 0). */
typedef struct gm_top_gpu {
    unsigned index;
    char name[GM_NAME_LEN];
    char uuid[GM_UUID_LEN];
    char bus_id[GM_BUSID_LEN]; /* PCI bus id, "" when unknown */
    bool lost;
    double util_pct, mem_used_mib, mem_total_mib, power_w, power_limit_w, temp_c, fan_pct;
    char pstate[8]; /* "P0", "" when unknown */
    /* History, oldest first; NaN where a reading was absent. */
    float hist[GM_TOP_H__COUNT][GM_TOP_HISTORY];
    size_t nhist;
} gm_top_gpu;

/* One process on one GPU. */
typedef struct gm_top_proc {
    unsigned gpu;
    uint32_t pid;
    double gpu_mem_mib; /* NaN: the driver withheld it */
    double sm_pct;      /* share of the GPU's SMs, NaN: the driver gave none */
    double cpu_pct;     /* NaN: not a process of this host, or only one reading so far */
    double rss_mib;     /* NaN: not a process of this host */
    double elapsed_s;   /* since the process started; NaN: not a process of this host */
    bool has_uid;       /* uid read from /proc (this host only) */
    uid_t uid;
    uint64_t start_ticks; /* with pid, names the process a kill must reach (0: unknown) */
    char user[GM_USER_LEN];
    char command[GM_CMD_LEN];
} gm_top_proc;

typedef struct gm_top_frame {
    int64_t time_ms; /* of the reading; 0 before the first */
    char hostname[GM_HOSTNAME_LEN];
    char provider[32];
    char driver[32];
    char cuda[16];
    double host_cpu_pct, host_mem_used_gib, host_mem_total_gib, host_cpus; /* NaN: absent */
    unsigned ngpu;
    gm_top_gpu gpus[GM_MAX_GPUS];
    size_t nproc;
    size_t proc_dropped; /* processes past GM_TOP_MAX_PROCS */
    gm_top_proc procs[GM_TOP_MAX_PROCS];
    char error[320]; /* the last read's failure ("" when it worked), as shown: the frame keeps
                      * the last good reading meanwhile, which the text says */
} gm_top_frame;

typedef struct gm_top_source gm_top_source;

/* Reads here, through a collector opened from src (provider flags as every command). On failure
 * prints "gpumon top: ..." and sets *exit_code (2 bad provider, 3 no GPU), returning NULL. */
gm_top_source *gm_top_open_local(const gm_cli_source *src, int *exit_code);

/* Reads from the daemon at url ("http://host:port", "host:port"; a path prefix is kept) with
 * token (NULL: none) sent as a bearer token, each request given at most timeout_s. Returns NULL
 * with err set for a URL it cannot use. Nothing is requested yet. */
gm_top_source *gm_top_open_remote(const char *url, const char *token, double timeout_s,
                                  gm_error *err);

/* Shows only the GPUs f selects (-i: indices, UUIDs or PCI bus ids), from the next reading on. */
void gm_top_set_filter(gm_top_source *s, const gm_cli_gpu_filter *f);

/* Takes a reading into f (a frame kept across reads: its history grows). On failure f keeps
 * its last reading, f->error says why and GM_EIO (or GM_EPERM for a 401/403) is returned.
 * When an item of the filter matches no GPU, the frame has the GPUs that match and GM_ENOENT
 * is returned with f->error "no GPU matches ...". */
int gm_top_read(gm_top_source *s, gm_top_frame *f);

/* Whether the processes' PIDs are this host's: reading locally, or a daemon on a loopback
 * address. Only then are CPU, resident memory and kill offered. */
bool gm_top_local_pids(const gm_top_source *s);

/* What is being watched, for the title: "nvml" or the daemon's URL. */
const char *gm_top_where(const gm_top_source *s);

void gm_top_close(gm_top_source *s);

/* The GPU of old (nold entries, the previous frame) whose history g continues: the one with
 * g's UUID; without a UUID, the one with its bus id; without either, its index; NULL when none
 * (a GPU new to the frame starts a history of its own). */
const gm_top_gpu *gm_top_history_of(const gm_top_gpu *old, size_t nold, const gm_top_gpu *g);

/* The frame's processes ordered: by GPU memory, CPU use, PID or SM share, descending (PID
 * ascending);
 * absent values last. */
typedef enum gm_top_sort {
    GM_TOP_SORT_GPU_MEM,
    GM_TOP_SORT_CPU,
    GM_TOP_SORT_PID,
    GM_TOP_SORT_SM,
    GM_TOP_SORT__COUNT
} gm_top_sort;
void gm_top_sort_procs(gm_top_frame *f, gm_top_sort by);

#endif
