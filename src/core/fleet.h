/* fleet.h - the fleet as Prometheus sees it: one row per node from PromQL over gpumon's metric
 * names (dcgm-exporter's: DCGM_FI_DEV_*, labels Hostname, gpu, UUID), the scrape state of each
 * node's targets (`up`), and the choice of a node for a job that needs N GPUs.
 *
 * A node is the value of the Hostname label (the daemon's --hostname); a target whose series
 * carry no Hostname is a node named by its instance. The model is built from the answers to a
 * fixed set of instant queries (gm_fleet_query), so it can be tested on canned answers and
 * fetched by anything that speaks to Prometheus (gm_fleet_fetch).
 *
 * A GPU is idle under select's rule: utilization below max_util_pct and memory used below
 * max_mem_pct of used + free (the recording rule Hostname:gpumon_gpus_idle:count). A GPU
 * without both readings is not idle. Absent readings are NaN, never 0. */
#ifndef GM_FLEET_H
#define GM_FLEET_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/prometheus.h"
#include "gpumon.h"

#define GM_FLEET_JOB_DEFAULT      "gpumon"
#define GM_FLEET_JOB_MAX          128
#define GM_FLEET_MAX_UTIL_DEFAULT 30.0
#define GM_FLEET_MAX_MEM_DEFAULT  50.0
#define GM_FLEET_NAME_WINDOW      "10m" /* how far back a down target's node name is found */
#define GM_FLEET_INSTANCE_MAX     256
#define GM_FLEET_LABEL_MAX        128
#define GM_FLEET_PROBLEMS_MAX     1024

/* The queries the model is built from, in the order gm_fleet_fetch runs them. */
typedef enum gm_fleet_query {
    GM_FLEET_Q_UP,          /* up{job=J}: each target's scrape state */
    GM_FLEET_Q_SCRAPE_TIME, /* timestamp(up{job=J}): when each target was last scraped */
    GM_FLEET_Q_NAMES,       /* instance -> Hostname over the last GM_FLEET_NAME_WINDOW */
    GM_FLEET_Q_GPUS,        /* each GPU: its identity labels and utilization */
    GM_FLEET_Q_READINGS,    /* each GPU's other readings (memory, power, temperature, health) */
    GM_FLEET_Q__COUNT
} gm_fleet_query;

/* True when job can be put in a PromQL string as is: 1 to GM_FLEET_JOB_MAX - 1 of letters,
 * digits, '_', '-', '.', ':' and '/'. */
bool gm_fleet_job_ok(const char *job);

/* The PromQL of query q for job into buf. GM_OK, GM_EINVAL (job not gm_fleet_job_ok, or buf too
 * small). */
int gm_fleet_query_expr(gm_fleet_query q, const char *job, char *buf, size_t cap);

typedef struct gm_fleet_thresholds {
    double max_util_pct; /* idle: utilization below this (%) */
    double max_mem_pct;  /* and memory used below this (% of used + free) */
} gm_fleet_thresholds;

typedef struct gm_fleet_target {
    char instance[GM_FLEET_INSTANCE_MAX];
    bool up;
    double last_scrape_s; /* Unix seconds, NaN unknown */
} gm_fleet_target;

typedef struct gm_fleet_gpu {
    char gpu[32]; /* the gpu label: the driver index on its node */
    char uuid[GM_UUID_LEN];
    char model[GM_FLEET_LABEL_MAX];
    char instance[GM_FLEET_INSTANCE_MAX];
    double util_pct, fb_used_mib, fb_free_mib, power_w, temp_c;
    double xid_last, ecc_dbe_volatile, row_remap_failure; /* health, NaN when not exported */
    bool idle;                                            /* gm_fleet_evaluate */
} gm_fleet_gpu;

typedef enum gm_fleet_health {
    GM_FLEET_HEALTH_UNKNOWN = 0, /* no health series exported (or the node is down) */
    GM_FLEET_HEALTH_OK,
    GM_FLEET_HEALTH_DEGRADED, /* an XID, an uncorrectable ECC error or a failed row remap */
} gm_fleet_health;

typedef struct gm_fleet_node {
    char name[GM_HOSTNAME_LEN];
    bool named; /* name is a Hostname label; else it is the instance of a target */
    gm_fleet_target *targets;
    size_t ntargets;
    gm_fleet_gpu *gpus; /* ordered by gpu label (numerically) */
    size_t ngpus;

    /* Set by gm_fleet_evaluate. */
    bool up;              /* it has targets, and every one is up */
    double last_scrape_s; /* the oldest of its targets' last scrapes, NaN unknown */
    unsigned idle;
    double util_mean_pct; /* over the GPUs that report it; NaN when none does */
    double mem_used_mib, mem_total_mib, mem_used_pct; /* used + free; NaN when none */
    double power_w;                                   /* sum; NaN when none reports it */
    double hottest_c;                                 /* NaN when none */
    const char *hottest_gpu;                          /* its gpu label, NULL when none */
    gm_fleet_health health;
    char problems[GM_FLEET_PROBLEMS_MAX]; /* "GPU 1: XID 79; GPU 0: 2 uncorrectable ECC errors" */

    /* Set by gm_fleet_select. */
    bool fits; /* up, and idle >= the GPUs needed */
    bool chosen;
    char reason[256]; /* why chosen or not, for people */
} gm_fleet_node;

typedef struct gm_fleet gm_fleet;

/* An empty model. GM_OK or GM_ENOMEM. */
int gm_fleet_new(gm_fleet **out, gm_error *err);
void gm_fleet_free(gm_fleet *f);

/* Adds the answer (data as gm_prometheus_query gives it) to query q. Answers may come in any
 * order; each query at most once. GM_OK, GM_EPARSE (not an instant vector, a malformed sample),
 * GM_ENOMEM. */
int gm_fleet_add(gm_fleet *f, gm_fleet_query q, const json_t *data, gm_error *err);

/* Runs every query against p for job and builds the model. *out is NULL on failure; the error
 * is the first query's that failed (gm_prometheus_query's codes). */
int gm_fleet_fetch(gm_prometheus *p, const char *job, gm_fleet **out, gm_error *err);

/* Computes each node's derived fields (up, idle, means, hottest, health) under t. Nodes are
 * ordered by name. Call again to change the thresholds. */
void gm_fleet_evaluate(gm_fleet *f, const gm_fleet_thresholds *t);

/* The nodes, after gm_fleet_evaluate. */
size_t gm_fleet_node_count(const gm_fleet *f);
gm_fleet_node *gm_fleet_node_at(gm_fleet *f, size_t i);

/* When Prometheus evaluated the queries (Unix seconds), NaN when no answer had a sample. */
double gm_fleet_time(const gm_fleet *f);

/* Chooses the node for a job that needs `need` GPUs (after gm_fleet_evaluate): among the nodes
 * that are up and have at least `need` idle GPUs, the one with the most idle GPUs; ties go to
 * the lowest mean utilization, then to the name. A node with a target down is never chosen.
 * Sets every node's fits, chosen and reason. Returns the chosen node's index, or -1 when no
 * node has `need` idle GPUs. */
long gm_fleet_select(gm_fleet *f, unsigned need);

/* The node's own dashboard: http://INSTANCE/ of its first target that is up (else its first
 * target), from the scrape target's instance label, into buf; "" when it has no target or the
 * instance is not HOST:PORT. */
void gm_fleet_node_url(const gm_fleet_node *n, char *buf, size_t cap);

/* The fleet as JSON (after gm_fleet_evaluate): {"time", "thresholds", "totals", "nodes": [...]},
 * each node with its targets, aggregates, health and GPUs; with_selection adds each node's
 * fits, chosen and reason. New reference, NULL when out of memory. */
json_t *gm_fleet_json(const gm_fleet *f, const gm_fleet_thresholds *t, bool with_selection);

#endif
