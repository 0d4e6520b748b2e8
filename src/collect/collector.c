/* collector.c - picks a provider, then joins its GPU readings with host metrics and process
 * details into one snapshot per call. */
#include "gpumon.h"
#include "collect/calltime.h"
#include "collect/cgroup.h"
#include "collect/host.h"
#include "collect/podres.h"
#include "collect/provider.h"
#include "base/clock.h"
#include "base/error.h"
#include "collect/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* CPU utilisation is a difference of two /proc/stat readings; below this gap it is mostly noise. */
#define MIN_CPU_WINDOW_MS 100
/* Pod UIDs remembered from one sample to the next, to see a new pod's process appear. */
#define SEEN_PODS_MAX 64
/* Providers read at once: one per vendor, and one that reads what the others do not. */
#define MAX_SOURCES 4

/* One provider in use, and how many GPUs of the last sample are its (a run of snapshot
 * positions starting at first). */
typedef struct source {
    const gm_provider *prov;
    void *state;
    unsigned first, count;
} source;

struct gm_collector {
    char hostname[GM_HOSTNAME_LEN + 1]; /* a name given in place of the host's own */
    source src[MAX_SOURCES]; /* in index order: NVIDIA's GPUs first, then AMD's, then others */
    size_t nsrc;             /* 0: no GPU source ("none") */
    char prov_name[32];      /* their names, '+'-joined */
    gm_snapshot *scratch;    /* where the second and later providers sample */
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

static bool already_read(const gm_snapshot *out, unsigned upto, const gm_gpu *g, bool *used);
static int sample_sources(gm_collector *c, gm_snapshot *out, gm_error *err);

/* Whether the provider p of no one vendor, just opened, reads a GPU the providers already in
 * use do not: only then is it worth running at every sample (nvtop costs a process each time). */
static bool adds_gpus(gm_collector *c, const gm_provider *p, void *state)
{
    if (!c->nsrc)
        return true;
    gm_snapshot *have = gm_snapshot_new(), *more = gm_snapshot_new();
    bool adds = false, saved = c->want_procs;
    c->want_procs = false;
    if (have && more && (c->scratch || (c->scratch = gm_snapshot_new())) &&
        sample_sources(c, have, NULL) == GM_OK && p->sample(state, more, false, NULL) == GM_OK) {
        bool used[GM_MAX_GPUS] = {0};
        for (unsigned i = 0; i < more->gpu_count && !adds; i++)
            adds = !already_read(have, have->gpu_count, &more->gpus[i], used);
    }
    c->want_procs = saved;
    gm_snapshot_free(have);
    gm_snapshot_free(more);
    return adds;
}

/* The one provider asked for, or the error that it is unknown or cannot open. */
static int open_forced(gm_collector *c, const gm_collector_options *opt, const char *forced,
                       gm_error *err)
{
    gm_error perr = {0};
    const gm_provider *p = gm_provider_find(forced);
    if (!p)
        return gm_error_set(err, GM_EINVAL, "unknown provider \"%s\" (expected %s)", forced,
                            gm_provider_names());
    int rc = p->open(opt, &c->src[0].state, &perr);
    if (rc < 0) {
        gm_error_set(err, rc, "%s", perr.msg);
        return rc;
    }
    c->src[0].prov = p;
    c->nsrc = 1;
    return GM_OK;
}

/* The providers in automatic order: the first of each vendor that opens, and one of no vendor
 * where it reads GPUs the others do not; none at all leaves the diagnosis saying why. */
static void open_auto(gm_collector *c, const gm_collector_options *opt)
{
    gm_error perr = {0};
    size_t kept = 0;
    for (size_t i = 0; gm_provider_auto_order[i] && c->nsrc < MAX_SOURCES; i++) {
        const gm_provider *p = gm_provider_auto_order[i];
        /* The best provider of a vendor is enough: the next ones would read its GPUs again. */
        bool covered = false;
        for (size_t k = 0; k < c->nsrc && !covered; k++)
            covered = p->vendor && c->src[k].prov->vendor &&
                      strcmp(p->vendor, c->src[k].prov->vendor) == 0;
        if (covered || (opt->vendor && (!p->vendor || strcmp(opt->vendor, p->vendor) != 0)))
            continue;
        perr.msg[0] = '\0';
        void *state = NULL;
        if (p->open(opt, &state, &perr) == GM_OK) {
            if (!p->vendor && !adds_gpus(c, p, state)) {
                p->close(state);
                continue;
            }
            if (!c->nsrc)
                kept = strlen(c->diagnosis);
            c->src[c->nsrc].prov = p;
            c->src[c->nsrc++].state = state;
            continue;
        }
        diag_append(c, p->name, perr.msg[0] ? perr.msg : "failed");
    }
    /* The diagnosis explains the providers passed over before the first that works; that
     * a machine has no GPU of another vendor is no news. */
    if (c->nsrc)
        c->diagnosis[kept] = '\0';
}

/* The providers' names, '+'-joined, as snapshots report them. */
static void name_sources(gm_collector *c)
{
    for (size_t k = 0; k < c->nsrc; k++) {
        size_t used = strlen(c->prov_name);
        snprintf(c->prov_name + used, sizeof c->prov_name - used, "%s%s", k ? "+" : "",
                 c->src[k].prov->name);
    }
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
    int rc = GM_OK;
    if (forced)
        rc = open_forced(c, opt, forced, err);
    else
        open_auto(c, opt);
    if (rc < 0)
        goto fail;
    name_sources(c);
    if (c->nsrc > 1 && !c->scratch && !(c->scratch = gm_snapshot_new())) {
        rc = gm_error_set(err, GM_ENOMEM, "out of memory");
        goto fail;
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
    for (size_t k = 0; k < c->nsrc; k++)
        c->src[k].prov->close(c->src[k].state);
    gm_snapshot_free(c->scratch);
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
    return c->nsrc ? c->prov_name : "none";
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
    for (size_t i = 0; i < c->podres_table.n; i++) {
        gm_podres_alloc *a = &c->podres_table.allocs[i];
        if (a->gpu_uuid[0] || strncmp(a->device_id, "MIG-", 4) != 0)
            continue;
        bool placed = false;
        for (size_t k = 0; k < c->nsrc && !placed; k++)
            placed = c->src[k].prov->mig_parent &&
                     c->src[k].prov->mig_parent(c->src[k].state, a->device_id, a->gpu_uuid,
                                                sizeof a->gpu_uuid, NULL) == GM_OK;
        if (!placed)
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

/* True when out already holds a GPU that g (from a provider of no one vendor) is: the same
 * PCI bus id, or, where g has none, a GPU of the same name not matched before (used marks). */
static bool already_read(const gm_snapshot *out, unsigned upto, const gm_gpu *g, bool *used)
{
    for (unsigned i = 0; i < upto; i++) {
        const gm_gpu *h = &out->gpus[i];
        if (g->pci_bus_id[0] && h->pci_bus_id[0]) {
            if (strcasecmp(g->pci_bus_id, h->pci_bus_id) == 0)
                return true;
            continue;
        }
        if (!used[i] && g->name[0] && strcmp(g->name, h->name) == 0) {
            used[i] = true;
            return true;
        }
    }
    return false;
}

/* Appends the GPUs of scratch (one provider's sample) to out, renumbered after out's, with
 * their processes. A provider of no one vendor adds only GPUs no earlier provider read. */
static void merge_source(source *s, gm_snapshot *out, const gm_snapshot *scratch)
{
    bool used[GM_MAX_GPUS] = {0};
    unsigned before = out->gpu_count;
    int map[GM_MAX_GPUS];
    s->first = out->gpu_count;
    for (unsigned i = 0; i < scratch->gpu_count && i < GM_MAX_GPUS; i++) {
        map[i] = -1;
        const gm_gpu *g = &scratch->gpus[i];
        if (!s->prov->vendor && already_read(out, before, g, used))
            continue;
        if (out->gpu_count >= GM_MAX_GPUS)
            break;
        map[i] = (int)out->gpu_count;
        gm_gpu *d = &out->gpus[out->gpu_count++];
        *d = *g;
        d->index = (unsigned)map[i];
    }
    s->count = out->gpu_count - s->first;
    for (size_t p = 0; p < scratch->proc_count; p++) {
        gm_process pr = scratch->procs[p];
        unsigned at = 0;
        while (at < scratch->gpu_count && scratch->gpus[at].index != pr.gpu_index)
            at++;
        if (at >= scratch->gpu_count || at >= GM_MAX_GPUS || map[at] < 0)
            continue;
        pr.gpu_index = (unsigned)map[at];
        gm_snapshot_add_process(out, &pr);
    }
    out->proc_dropped += scratch->proc_dropped;
}

static void label_gpus(const source *s, gm_snapshot *out)
{
    for (unsigned i = s->first; i < s->first + s->count && i < out->gpu_count; i++) {
        gm_gpu *g = &out->gpus[i];
        if (!g->provider[0])
            snprintf(g->provider, sizeof g->provider, "%s", s->prov->name);
        if (!g->vendor[0] && s->prov->vendor)
            snprintf(g->vendor, sizeof g->vendor, "%s", s->prov->vendor);
    }
}

/* Samples every provider: the first straight into out (its indices are the driver's), the
 * others after it. An error only when none could be read. */
static int sample_sources(gm_collector *c, gm_snapshot *out, gm_error *err)
{
    int rc = GM_OK;
    bool any = false;
    gm_error first_err = {0};
    for (size_t k = 0; k < c->nsrc; k++) {
        source *s = &c->src[k];
        int r;
        if (k == 0) {
            r = s->prov->sample(s->state, out, c->want_procs, &first_err);
            if (r < 0) {
                /* Keep what identifies the sample, drop partial GPU data. */
                out->gpu_count = 0;
                out->proc_count = 0;
            }
            s->first = 0;
            s->count = out->gpu_count;
        } else {
            gm_snapshot_reset(c->scratch);
            gm_error e = {0};
            r = s->prov->sample(s->state, c->scratch, c->want_procs, &e);
            if (r == GM_OK)
                merge_source(s, out, c->scratch);
            else {
                s->first = out->gpu_count;
                s->count = 0;
                if (!first_err.msg[0])
                    first_err = e;
            }
        }
        if (r == GM_OK)
            any = true;
        else if (rc == GM_OK)
            rc = r;
        label_gpus(s, out);
    }
    if (c->nsrc && !any) {
        gm_error_set(err, rc, "%s", first_err.msg);
        return rc;
    }
    return GM_OK;
}

int gm_collector_sample(gm_collector *c, gm_snapshot *out, gm_error *err)
{
    gm_snapshot_reset(out);
    gm_calltime *prev_calls = gm_calltime_use(c->calls);
    int rc = sample_sources(c, out, err);
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

/* The source that read the GPU at snapshot position pos (its position there into *local), NULL
 * when none did. One provider alone owns every position, sampled yet or not. */
static source *source_of(gm_collector *c, unsigned pos, unsigned *local)
{
    if (c->nsrc == 1) {
        *local = pos;
        return &c->src[0];
    }
    for (size_t k = 0; k < c->nsrc; k++)
        if (pos >= c->src[k].first && pos < c->src[k].first + c->src[k].count) {
            *local = pos - c->src[k].first;
            return &c->src[k];
        }
    return NULL;
}

int gm_collector_p2p(gm_collector *c, unsigned a, unsigned b, gm_p2p_cap cap, gm_p2p_status *out,
                     gm_error *err)
{
    unsigned la = 0, lb = 0;
    source *sa = source_of(c, a, &la), *sb = source_of(c, b, &lb);
    if (!sa || !sa->prov->p2p)
        return gm_error_set(err, GM_ENOTSUP, "provider %s cannot read P2P status",
                            sa ? sa->prov->name : gm_collector_provider(c));
    if (sa != sb)
        return gm_error_set(err, GM_ENOTSUP,
                            "GPUs %u and %u are read by different providers: P2P unknown", a, b);
    if ((int)cap < 0 || cap >= GM_P2P__COUNT)
        return gm_error_set(err, GM_EINVAL, "unknown P2P capability %d", (int)cap);
    return sa->prov->p2p(sa->state, la, lb, cap, out, err);
}

int gm_collector_retired_pages(gm_collector *c, unsigned index, int cause, uint64_t *addr,
                               uint64_t *when, size_t cap, size_t *n, gm_error *err)
{
    *n = 0;
    unsigned local = 0;
    source *s = source_of(c, index, &local);
    if (!s || !s->prov->retired_pages)
        return gm_error_set(err, GM_ENOTSUP, "provider %s cannot list retired pages",
                            s ? s->prov->name : gm_collector_provider(c));
    if (cause < 0 || cause > 1)
        return gm_error_set(err, GM_EINVAL, "unknown page retirement cause %d", cause);
    return s->prov->retired_pages(s->state, local, cause, addr, when, cap, n, err);
}

int gm_collector_supported_clocks(gm_collector *c, unsigned index, unsigned mem_mhz, unsigned *mhz,
                                  size_t cap, size_t *n, gm_error *err)
{
    *n = 0;
    unsigned local = 0;
    source *s = source_of(c, index, &local);
    if (!s || !s->prov->supported_clocks)
        return gm_error_set(err, GM_ENOTSUP, "provider %s cannot list supported clocks",
                            s ? s->prov->name : gm_collector_provider(c));
    return s->prov->supported_clocks(s->state, local, mem_mhz, mhz, cap, n, err);
}

int gm_collector_topology(gm_collector *c, gm_topology *out, gm_error *err)
{
    memset(out, 0, sizeof *out);
    bool any_p2p = false;
    for (size_t k = 0; k < c->nsrc; k++)
        any_p2p |= c->src[k].prov->p2p != NULL;
    if (!any_p2p)
        return GM_OK;
    gm_snapshot *s = gm_snapshot_new();
    if (!s)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    bool saved = c->want_procs;
    c->want_procs = false;
    int rc = sample_sources(c, s, err);
    c->want_procs = saved;
    unsigned n = rc == GM_OK ? s->gpu_count : 0;
    gm_snapshot_free(s);
    if (rc < 0)
        return rc;
    out->gpu_count = n;
    for (unsigned a = 0; a < n; a++)
        for (unsigned b = 0; b < n; b++)
            for (int cap = 0; cap < GM_P2P__COUNT; cap++) {
                gm_p2p_status st = GM_P2P_UNKNOWN;
                if (a != b && gm_collector_p2p(c, a, b, cap, &st, NULL) < 0)
                    st = GM_P2P_UNKNOWN;
                out->p2p[a][b][cap] = (uint8_t)st;
            }
    out->known = true;
    return GM_OK;
}
