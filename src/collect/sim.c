/* sim.c - simulated GPUs with plausible, seed-deterministic dynamics, for demos and load tests
 * (sim_vary moves where they start). Everything it reports is labelled provider "sim"; it never
 * stands in for a real GPU.
 *
 * Left alone (serve, top, record) the GPUs run a workload of their own: phases of idle, steady
 * training and bursty inference, a process on a GPU exactly while it is busy. Driven
 * (options.sim_load, gpumon bench) each GPU holds one server process and idles unless its
 * driver loads it: utilisation, power and clocks follow *sim_load. */
#include "collect/provider.h"
#include "base/clock.h"
#include "base/error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SIM_DEFAULT_GPUS 4
/* Simulated PIDs sit above Linux's largest pid_max (2^22) so they never name a real process. */
#define SIM_PID_BASE 5000000u

typedef struct sim_model {
    const char *name;
    double mem_total_mib;
    double power_idle_w, power_limit_w;
    double clock_max_sm, clock_mem;
    int pcie_gen;
    bool has_fan; /* data-centre boards report no fan (NVML NOT_SUPPORTED) */
} sim_model;

static const sim_model models[] = {
    {"NVIDIA H100 80GB HBM3 (simulated)", 81559, 70, 700, 1980, 2619, 5, false},
    {"NVIDIA A100-SXM4-40GB (simulated)", 40960, 55, 400, 1410, 1215, 4, false},
    {"NVIDIA L4 (simulated)", 23034, 16, 72, 2040, 6251, 4, false},
    {"NVIDIA GeForce RTX 4090 (simulated)", 24564, 25, 450, 2520, 10501, 4, true},
};

typedef struct sim_gpu {
    const sim_model *model;
    uint64_t rng;
    double util;      /* current utilisation, % */
    double target;    /* where the current phase drives utilisation */
    int phase_left;   /* samples until the next phase change */
    double mem_used;  /* MiB */
    double temp;      /* C */
    double energy_mj; /* integrated from simulated power over real elapsed time */
    unsigned nprocs;
} sim_gpu;

typedef struct sim_state {
    unsigned count;
    uint64_t seed;
    uint64_t tick;
    double last_mono_s;
    const double *load; /* NULL: free running */
    sim_gpu gpus[GM_MAX_GPUS];
} sim_state;

/* splitmix64: tiny, good enough, and the same on every platform for a given seed. */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static double uniform(uint64_t *s)
{
    return (double)(next_u64(s) >> 11) / 9007199254740992.0;
}

static double clamp(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static int sim_open(const gm_collector_options *opt, void **state, gm_error *err)
{
    unsigned n = opt->simulate ? opt->simulate : SIM_DEFAULT_GPUS;
    if (n > GM_MAX_GPUS)
        return gm_error_set(err, GM_EINVAL, "sim: %u GPUs requested, at most %d", n, GM_MAX_GPUS);
    sim_state *st = calloc(1, sizeof *st);
    if (!st)
        return gm_error_set(err, GM_ENOMEM, "sim: out of memory");
    st->count = n;
    st->seed = opt->seed;
    st->load = opt->sim_load;
    st->last_mono_s = gm_clock_mono_s();
    uint64_t vary = opt->sim_vary;
    vary = vary ? next_u64(&vary) : 0;
    for (unsigned i = 0; i < n; i++) {
        sim_gpu *g = &st->gpus[i];
        /* Mostly one model per box, as in real fleets, with a mixed box every few seeds. */
        g->model = &models[(opt->seed + (i >= 8 ? i / 8 : 0)) % (sizeof models / sizeof *models)];
        g->rng = opt->seed * UINT64_C(1000003) + i + 1 + vary;
        g->temp = 30 + 5 * uniform(&g->rng);
        /* Driven, a server has loaded its model before anyone benchmarks it. */
        g->mem_used =
            (opt->sim_load && !(*opt->sim_load < 0) ? 0.9 : 0.01) * g->model->mem_total_mib;
        g->energy_mj = 1e6 * (1000 + 500 * uniform(&g->rng));
    }
    *state = st;
    return GM_OK;
}

static void sim_close(void *state)
{
    free(state);
}

/* Advances one GPU by one sample: phases of idle, steady training and bursty inference, or
 * (driven: load not NULL) a served model at the load its driver sets. */
static void step(sim_gpu *g, const double *load)
{
    if (load) {
        bool server = !(*load < 0);
        double l = isfinite(*load) ? clamp(*load, 0, 1) : 0;
        g->target = 100 * l;
        g->nprocs = server ? 1 : 0;
        /* An inference server holds its weights and KV cache whether it is busy or not. */
        double mem_target = (server ? 0.9 : 0.005) * g->model->mem_total_mib;
        double noise = (uniform(&g->rng) - 0.5) * (l > 0 ? 6 : 0);
        g->util = clamp(g->util + 0.6 * (g->target - g->util) + noise, 0, 100);
        if (l <= 0 && g->util < 1)
            g->util = 0;
        g->mem_used = clamp(g->mem_used + 0.5 * (mem_target - g->mem_used), 0,
                            0.98 * g->model->mem_total_mib);
        return;
    }
    if (g->phase_left-- <= 0) {
        double r = uniform(&g->rng);
        g->target = r < 0.3 ? 0 : r < 0.7 ? 85 + 15 * uniform(&g->rng) : 30 + 40 * uniform(&g->rng);
        g->phase_left = 20 + (int)(uniform(&g->rng) * 60);
        g->nprocs = g->target > 0 ? 1 + (unsigned)(uniform(&g->rng) * 2) : 0;
    }
    double noise = (uniform(&g->rng) - 0.5) * (g->target > 0 ? 12 : 0);
    g->util = clamp(g->util + 0.5 * (g->target - g->util) + noise, 0, 100);
    double mem_target = g->target > 0 ? (0.35 + 0.5 * g->target / 100) * g->model->mem_total_mib
                                      : 0.005 * g->model->mem_total_mib;
    g->mem_used =
        clamp(g->mem_used + 0.3 * (mem_target - g->mem_used), 0, 0.98 * g->model->mem_total_mib);
}

static int sim_sample(void *state, gm_snapshot *out, bool want_procs, gm_error *err)
{
    sim_state *st = state;
    double now = gm_clock_mono_s();
    double dt = now - st->last_mono_s;
    st->last_mono_s = now;
    st->tick++;

    snprintf(out->driver_version, sizeof out->driver_version, "550.54.15-sim");
    snprintf(out->cuda_version, sizeof out->cuda_version, "12.4");
    snprintf(out->nvml_version, sizeof out->nvml_version, "12.550.54.15-sim");
    out->gpu_count = st->count;
    for (unsigned i = 0; i < st->count; i++) {
        sim_gpu *s = &st->gpus[i];
        const sim_model *m = s->model;
        gm_gpu *g = &out->gpus[i];
        step(s, st->load);
        g->index = i;
        snprintf(g->name, sizeof g->name, "%s", m->name);
        snprintf(g->uuid, sizeof g->uuid, "GPU-51d0c0de-%04x-4000-8000-%012llx",
                 (unsigned)(st->seed & 0xffff), (unsigned long long)i);
        /* Fourteen buses per PCI domain (0x18 to 0xE8), so no two GPUs share a bus id. */
        snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%08X:%02X:00.0", i / 14,
                 0x18 + i % 14 * 0x10);

        double u = s->util;
        double power_w = m->power_idle_w + (m->power_limit_w - m->power_idle_w) * pow(u / 100, 1.3);
        double temp_target = 30 + 50 * power_w / m->power_limit_w;
        s->temp += 0.2 * (temp_target - s->temp);
        s->energy_mj += power_w * 1000 * dt;
        double total_b = m->mem_total_mib * GM_BYTES_PER_MIB;
        double reserved_b = 0.006 * total_b;
        double used_b = floor(s->mem_used) * GM_BYTES_PER_MIB;

        gm_gpu_set(g, GM_M_UTIL_GPU_PCT, round(u));
        gm_gpu_set(g, GM_M_UTIL_MEM_PCT, round(u * 0.55));
        gm_gpu_set(g, GM_M_UTIL_ENC_PCT, 0);
        gm_gpu_set(g, GM_M_UTIL_DEC_PCT, u > 40 && i % 3 == 2 ? round(u / 5) : 0);
        gm_gpu_set(g, GM_M_MEM_TOTAL_BYTES, total_b);
        gm_gpu_set(g, GM_M_MEM_RESERVED_BYTES, reserved_b);
        gm_gpu_set(g, GM_M_MEM_USED_BYTES, used_b);
        gm_gpu_set(g, GM_M_MEM_FREE_BYTES, total_b - reserved_b - used_b);
        gm_gpu_set(g, GM_M_TEMP_C, round(s->temp));
        gm_gpu_set(g, GM_M_POWER_MW, round(power_w * 1000));
        gm_gpu_set(g, GM_M_POWER_LIMIT_MW, m->power_limit_w * 1000);
        gm_gpu_set(g, GM_M_ENERGY_MJ, round(s->energy_mj));
        double sm = u > 0 ? m->clock_max_sm * (0.7 + 0.3 * u / 100) : 345;
        gm_gpu_set(g, GM_M_CLOCK_GR_MHZ, round(sm));
        gm_gpu_set(g, GM_M_CLOCK_SM_MHZ, round(sm));
        gm_gpu_set(g, GM_M_CLOCK_MEM_MHZ, m->clock_mem);
        gm_gpu_set(g, GM_M_CLOCK_MAX_GR_MHZ, m->clock_max_sm);
        gm_gpu_set(g, GM_M_CLOCK_MAX_SM_MHZ, m->clock_max_sm);
        gm_gpu_set(g, GM_M_CLOCK_MAX_MEM_MHZ, m->clock_mem);
        if (m->has_fan)
            gm_gpu_set(g, GM_M_FAN_PCT, round(30 + 0.6 * u));
        gm_gpu_set(g, GM_M_PCIE_GEN_CUR, u > 0 ? m->pcie_gen : 1);
        gm_gpu_set(g, GM_M_PCIE_GEN_MAX, m->pcie_gen);
        gm_gpu_set(g, GM_M_PCIE_WIDTH_CUR, 16);
        gm_gpu_set(g, GM_M_PCIE_WIDTH_MAX, 16);
        gm_gpu_set(g, GM_M_PCIE_TX_KBPS, round(u * 2400 * uniform(&s->rng)));
        gm_gpu_set(g, GM_M_PCIE_RX_KBPS, round(u * 9000 * uniform(&s->rng)));
        gm_gpu_set(g, GM_M_PSTATE, u > 0 ? 0 : 8);
        gm_gpu_set(g, GM_M_THROTTLE_REASONS, u > 0 ? 0 : 1);
        gm_gpu_set(g, GM_M_PERSISTENCE_MODE, 1);

        if (!want_procs)
            continue;
        for (unsigned p = 0; p < s->nprocs; p++) {
            gm_process proc = {.gpu_index = i,
                               .pid = SIM_PID_BASE + i * 100 + p,
                               .type = GM_PROC_COMPUTE,
                               .mem_valid = true};
            proc.used_mem_bytes = (uint64_t)(used_b / s->nprocs);
            snprintf(proc.user, sizeof proc.user, "sim");
            snprintf(proc.command, sizeof proc.command, "%s",
                     p == 0 && !st->load ? "python train.py --simulated"
                                         : "python serve.py --simulated");
            gm_snapshot_add_process(out, &proc);
        }
    }
    return GM_OK;
}

static int sim_p2p(void *state, unsigned a, unsigned b, gm_p2p_cap cap, gm_p2p_status *out,
                   gm_error *err)
{
    sim_state *st = state;
    if (a >= st->count || b >= st->count)
        return gm_error_set(err, GM_EINVAL, "sim: no GPU pair %u,%u", a, b);
    /* Simulated boards sit in NVLink islands of eight, like HGX systems. */
    bool same_island = a / 8 == b / 8;
    if (cap == GM_P2P_NVLINK)
        *out = same_island ? GM_P2P_OK : GM_P2P_NOT_SUPPORTED;
    else if (cap == GM_P2P_ATOMICS)
        *out = same_island ? GM_P2P_OK : GM_P2P_CHIPSET_NOT_SUPPORTED;
    else
        *out = GM_P2P_OK;
    return GM_OK;
}

const gm_provider gm_provider_sim = {
    .name = "sim",
    .vendor = "NVIDIA", /* its models are NVIDIA boards, each named "(simulated)" */
    .open = sim_open,
    .close = sim_close,
    .sample = sim_sample,
    .p2p = sim_p2p,
};
