/* collector.c - picks a provider, then joins its GPU readings with host metrics and process
 * details into one snapshot per call. */
#include "gpumon.h"
#include "collect/calltime.h"
#include "collect/cgroup.h"
#include "collect/host.h"
#include "collect/podres.h"
#include "collect/provider.h"
#include "base/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* CPU utilisation is a difference of two /proc/stat readings; below this gap it is mostly noise. */
#define MIN_CPU_WINDOW_MS 100
/* Pod UIDs remembered from one sample to the next, to see a new pod's process appear. */
#define SEEN_PODS_MAX 64

struct gm_collector {
    char hostname[GM_HOSTNAME_LEN + 1]; /* a name given in place of the host's own */
    const gm_provider *prov;            /* NULL: no GPU source ("none") */
    void *pstate;
    gm_host_reader *host;
    char procfs_root[256];
    bool want_procs;
    bool first_cpu_wait;
    int cpu_window_ms; /* how long the first sample waits for a CPU window */
    uint64_t seq;
    int64_t host_primed_ms;
    char diagnosis[1024];
    /* Kubernetes: the pod-resources watcher, this collector's copy of its table, and the pod
     * UIDs of the previous sample's GPU processes. */
    gm_podres_watch *podres;
    gm_podres_table podres_table;
    uint64_t podres_gen;
    char seen_pods[SEEN_PODS_MAX][GM_POD_UID_LEN];
    size_t seen_pod_count;
    gm_calltime *calls; /* the time each call below the collector took */
};

static void diag_append(gm_collector *c, const char *name, const char *msg)
{
    size_t used = strlen(c->diagnosis), nl = strlen(name);
    /* Providers often start their messages with their own name already. */
    if (strncmp(msg, name, nl) == 0 && msg[nl] == ':') {
        msg += nl + 1;
        while (*msg == ' ')
            msg++;
    }
    snprintf(c->diagnosis + used, sizeof c->diagnosis - used, "%s%s: %s", used ? "\n" : "", name,
             msg);
}

int gm_collector_open(const gm_collector_options *opt, gm_collector **out, gm_error *err)
{
    static const gm_collector_options defaults;
    if (!opt)
        opt = &defaults;
    *out = NULL;
    gm_collector *c = calloc(1, sizeof *c);
    if (!c || !(c->calls = gm_calltime_new())) {
        free(c);
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    }
    gm_calltime *prev_calls = gm_calltime_use(c->calls);
    snprintf(c->procfs_root, sizeof c->procfs_root, "%s",
             opt->procfs_root ? opt->procfs_root : "/proc");
    c->want_procs = !opt->no_processes;
    if (opt->hostname)
        snprintf(c->hostname, sizeof c->hostname, "%s", opt->hostname);
    c->first_cpu_wait = !opt->no_first_cpu_wait;
    c->cpu_window_ms = opt->first_cpu_window_ms > 0 ? opt->first_cpu_window_ms : MIN_CPU_WINDOW_MS;

    const char *forced = opt->provider;
    if (opt->simulate > 0)
        forced = "sim";
    if (forced && (strcmp(forced, "auto") == 0 || !*forced))
        forced = NULL;

    gm_error perr = {0};
    int rc;
    if (forced) {
        const gm_provider *p = gm_provider_find(forced);
        if (!p) {
            rc = gm_error_set(err, GM_EINVAL,
                              "unknown provider \"%s\" (expected nvml, nvidia-smi, sim or auto)",
                              forced);
            goto fail;
        }
        rc = p->open(opt, &c->pstate, &perr);
        if (rc < 0) {
            gm_error_set(err, rc, "%s", perr.msg);
            goto fail;
        }
        c->prov = p;
    } else {
        for (size_t i = 0; gm_provider_auto_order[i]; i++) {
            const gm_provider *p = gm_provider_auto_order[i];
            perr.msg[0] = '\0';
            if (p->open(opt, &c->pstate, &perr) == GM_OK) {
                c->prov = p;
                break;
            }
            diag_append(c, p->name, perr.msg[0] ? perr.msg : "failed");
        }
    }

    if (!opt->no_host) {
        rc = gm_host_reader_open(opt->procfs_root, &c->host, &perr);
        if (rc < 0) {
            gm_error_set(err, rc, "%s", perr.msg);
            goto fail;
        }
        /* Prime the CPU counters so the first sample can already report utilisation. */
        gm_host scratch;
        gm_host_reader_read(c->host, &scratch, NULL);
        c->host_primed_ms = gm_clock_mono_ms();
    }
    if (opt->pod_resources_socket && opt->pod_resources_socket[0]) {
        rc = gm_podres_watch_start(opt->pod_resources_socket, opt->pod_resources_period_ms,
                                   &c->podres, err);
        if (rc < 0)
            goto fail;
    }
    gm_calltime_use(prev_calls);
    *out = c;
    return GM_OK;
fail:
    gm_calltime_use(prev_calls);
    gm_collector_close(c);
    return rc;
}

void gm_collector_close(gm_collector *c)
{
    if (!c)
        return;
    gm_podres_watch_stop(c->podres);
    gm_podres_table_free(&c->podres_table);
    if (c->prov)
        c->prov->close(c->pstate);
    gm_host_reader_close(c->host);
    gm_calltime_free(c->calls);
    free(c);
}

size_t gm_collector_call_stats(const gm_collector *c, gm_call_stat *out, size_t cap)
{
    return c ? gm_calltime_stats(c->calls, out, cap) : 0;
}

const char *gm_collector_provider(const gm_collector *c)
{
    return c->prov ? c->prov->name : "none";
}

const char *gm_collector_diagnosis(const gm_collector *c)
{
    return c->diagnosis;
}

/* True when some GPU process is in a pod that no GPU process was in at the previous sample:
 * a new workload, whose allocation the kubelet's table may not hold yet. */
static bool new_pod_appeared(gm_collector *c, const gm_snapshot *s)
{
    char now[SEEN_PODS_MAX][GM_POD_UID_LEN];
    size_t n = 0;
    bool fresh = false;
    for (size_t i = 0; i < s->proc_count; i++) {
        const char *uid = s->procs[i].pod_uid;
        if (!uid[0])
            continue;
        bool dup = false;
        for (size_t k = 0; k < n && !dup; k++)
            dup = strcmp(now[k], uid) == 0;
        if (dup)
            continue;
        bool known = false;
        for (size_t k = 0; k < c->seen_pod_count && !known; k++)
            known = strcmp(c->seen_pods[k], uid) == 0;
        fresh |= !known;
        if (n < SEEN_PODS_MAX)
            memcpy(now[n++], uid, GM_POD_UID_LEN);
    }
    memcpy(c->seen_pods, now, n * sizeof *now);
    c->seen_pod_count = n;
    return fresh;
}

/* A MIG device is allocated by its own UUID, which only the driver ties to its GPU: asked
 * once per new answer of the kubelet, not per sample. One that cannot be placed (another
 * provider, a device gone) counts for no GPU. */
static void place_mig_devices(gm_collector *c)
{
    if (!c->prov || !c->prov->mig_parent)
        return;
    for (size_t i = 0; i < c->podres_table.n; i++) {
        gm_podres_alloc *a = &c->podres_table.allocs[i];
        if (!a->gpu_uuid[0] && strncmp(a->device_id, "MIG-", 4) == 0 &&
            c->prov->mig_parent(c->pstate, a->device_id, a->gpu_uuid, sizeof a->gpu_uuid, NULL) !=
                GM_OK)
            a->gpu_uuid[0] = '\0';
    }
}

/* Names the pods and containers of GPUs and processes from the kubelet's latest answer. */
static void attribute_k8s(gm_collector *c, gm_snapshot *s)
{
    bool known;
    if (gm_podres_watch_take(c->podres, &c->podres_gen, &c->podres_table, &known))
        place_mig_devices(c);
    gm_podres_attribute(&c->podres_table, known, s);
    if (new_pod_appeared(c, s))
        gm_podres_watch_nudge(c->podres);
}

void gm_collector_k8s_status(gm_collector *c, gm_k8s_status *out)
{
    if (c->podres) {
        gm_podres_watch_status(c->podres, out);
        return;
    }
    memset(out, 0, sizeof *out);
    out->state = GM_K8S_OFF;
}

int gm_collector_sample(gm_collector *c, gm_snapshot *out, gm_error *err)
{
    gm_snapshot_reset(out);
    gm_calltime *prev_calls = gm_calltime_use(c->calls);
    int rc = GM_OK;
    if (c->prov) {
        rc = c->prov->sample(c->pstate, out, c->want_procs, err);
        if (rc < 0) {
            /* Keep what identifies the sample, drop partial GPU data. */
            out->gpu_count = 0;
            out->proc_count = 0;
        }
    }
    snprintf(out->provider, sizeof out->provider, "%s", gm_collector_provider(c));

    if (c->host) {
        if (c->seq == 0 && c->first_cpu_wait) {
            int64_t wait = c->cpu_window_ms - (gm_clock_mono_ms() - c->host_primed_ms);
            if (wait > 0) {
                struct timespec ts = {0, (long)wait * 1000000L};
                GM_TIMED("first CPU window (sleep)", nanosleep(&ts, NULL));
            }
        }
        out->host_valid = gm_host_reader_read(c->host, &out->host, NULL) == GM_OK;
    }
    if (c->hostname[0])
        snprintf(out->host.hostname, sizeof out->host.hostname, "%s", c->hostname);
    else if (!out->host.hostname[0])
        gethostname(out->host.hostname, sizeof out->host.hostname - 1);

    /* The provider knows PIDs; who runs them and what they are comes from /proc, and from
     * their cgroup which container and pod they are in. */
    for (size_t i = 0; i < out->proc_count; i++) {
        gm_process *p = &out->procs[i];
        if (!p->user[0] && !p->command[0])
            GM_TIMED("/proc/PID/status+cmdline",
                     gm_host_describe_process(c->procfs_root, p->pid, p->user, sizeof p->user,
                                              p->command, sizeof p->command));
        gm_cgroup_ident id;
        if (!p->container_id[0] &&
            GM_TIMED("/proc/PID/cgroup", gm_cgroup_read(c->procfs_root, p->pid, &id)) == GM_OK) {
            memcpy(p->pod_uid, id.pod_uid, sizeof p->pod_uid);
            memcpy(p->container_id, id.container_id, sizeof p->container_id);
        }
    }
    if (c->podres)
        attribute_k8s(c, out);
    out->seq = ++c->seq;
    out->time_ms = gm_clock_wall_ms();
    out->mono_ms = gm_clock_mono_ms();
    gm_calltime_use(prev_calls);
    return rc;
}

int gm_collector_p2p(gm_collector *c, unsigned a, unsigned b, gm_p2p_cap cap, gm_p2p_status *out,
                     gm_error *err)
{
    if (!c->prov || !c->prov->p2p)
        return gm_error_set(err, GM_ENOTSUP, "provider %s cannot read P2P status",
                            gm_collector_provider(c));
    if ((int)cap < 0 || cap >= GM_P2P__COUNT)
        return gm_error_set(err, GM_EINVAL, "unknown P2P capability %d", (int)cap);
    return c->prov->p2p(c->pstate, a, b, cap, out, err);
}

int gm_collector_retired_pages(gm_collector *c, unsigned index, int cause, uint64_t *addr,
                               uint64_t *when, size_t cap, size_t *n, gm_error *err)
{
    *n = 0;
    if (!c->prov || !c->prov->retired_pages)
        return gm_error_set(err, GM_ENOTSUP, "provider %s cannot list retired pages",
                            gm_collector_provider(c));
    if (cause < 0 || cause > 1)
        return gm_error_set(err, GM_EINVAL, "unknown page retirement cause %d", cause);
    return c->prov->retired_pages(c->pstate, index, cause, addr, when, cap, n, err);
}

int gm_collector_supported_clocks(gm_collector *c, unsigned index, unsigned mem_mhz, unsigned *mhz,
                                  size_t cap, size_t *n, gm_error *err)
{
    *n = 0;
    if (!c->prov || !c->prov->supported_clocks)
        return gm_error_set(err, GM_ENOTSUP, "provider %s cannot list supported clocks",
                            gm_collector_provider(c));
    return c->prov->supported_clocks(c->pstate, index, mem_mhz, mhz, cap, n, err);
}

int gm_collector_topology(gm_collector *c, gm_topology *out, gm_error *err)
{
    memset(out, 0, sizeof *out);
    if (!c->prov || !c->prov->p2p)
        return GM_OK;
    gm_snapshot *s = gm_snapshot_new();
    if (!s)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    int rc = c->prov->sample(c->pstate, s, false, err);
    unsigned n = rc == GM_OK ? s->gpu_count : 0;
    gm_snapshot_free(s);
    if (rc < 0)
        return rc;
    out->gpu_count = n;
    for (unsigned a = 0; a < n; a++)
        for (unsigned b = 0; b < n; b++)
            for (int cap = 0; cap < GM_P2P__COUNT; cap++) {
                gm_p2p_status st = GM_P2P_UNKNOWN;
                if (a != b && c->prov->p2p(c->pstate, a, b, cap, &st, NULL) < 0)
                    st = GM_P2P_UNKNOWN;
                out->p2p[a][b][cap] = (uint8_t)st;
            }
    out->known = true;
    return GM_OK;
}
