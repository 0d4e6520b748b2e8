/* test_collector.c - collect/collector: which provider the collector picks (the fake
 * libnvidia-ml.so.1 through the real dlopen path, then the fake nvidia-smi on PATH), the
 * provider "none" with a diagnosis naming each provider tried when neither works, forced
 * providers failing with their own error, host metrics on and off (procfs fixtures), process
 * owners from /proc, absent metrics staying absent, a failed sample, and P2P through it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpumon.h"
#include "base/clock.h"

#define NO_NVML "/nonexistent/gpumon-test/libnvidia-ml.so.1"

static char procfs[4096];
static char saved_path[8192];

static const char *fake_nvml(void)
{
    const char *p = getenv("GM_FAKE_NVML");
    if (!p)
        fail_msg("GM_FAKE_NVML is not set (run through ctest)");
    return p;
}

/* Points the fake NVML at tests/fixtures/nvml/<name> (NULL: its built-in default GPU). */
static void use_scenario(const char *name)
{
    if (!name) {
        unsetenv("GM_FAKE_NVML_SCENARIO");
        return;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/nvml/%s", getenv("GM_FIXTURES"), name);
    setenv("GM_FAKE_NVML_SCENARIO", path, 1);
}

/* Every test starts from the working fakes and the real PATH (with the fake nvidia-smi). */
static int setup(void **state)
{
    (void)state;
    unsetenv("GM_FAKE_NVML_SCENARIO");
    unsetenv("GPU_MONITOR_NVML_LIB");
    unsetenv("GM_FAKE_SMI_MODE");
    unsetenv("GM_FAKE_SMI_FILE");
    unsetenv("GM_FAKE_SMI_EXIT");
    /* No AMD GPU: the amdgpu provider reads an empty tree, whatever this machine holds. */
    setenv("GPU_MONITOR_SYSFS_ROOT", "/nonexistent-gm-sysfs", 1);
    /* Nor AMD's libraries, where this machine has them. */
    setenv("GPU_MONITOR_AMD_SMI_LIB", "/nonexistent-gm/libamd_smi.so", 1);
    setenv("GPU_MONITOR_ROCM_SMI_LIB", "/nonexistent-gm/librocm_smi64.so.1", 1);
    setenv("GPU_MONITOR_NVTOP", "/nonexistent-gm-nvtop", 1);
    setenv("PATH", saved_path, 1);
    return 0;
}

/* Room for every call the collector books in a test. */
#define GM_CALLTIME_TEST_CAP 256

/* Options for a collector over the fixture /proc, answering at once. */
static gm_collector_options options(const char *provider, const char *nvml_lib)
{
    gm_collector_options o = {.provider = provider,
                              .nvml_lib = nvml_lib,
                              .procfs_root = procfs,
                              .no_first_cpu_wait = true,
                              .smi_timeout_ms = 5000};
    return o;
}

static gm_collector *open_ok(const gm_collector_options *o)
{
    gm_collector *c = (gm_collector *)1;
    gm_error err = {0};
    if (gm_collector_open(o, &c, &err) != GM_OK)
        fail_msg("open: %s", err.msg);
    assert_non_null(c);
    return c;
}

static int count_lines(const char *s)
{
    int n = *s ? 1 : 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void test_auto_picks_nvml(void **state)
{
    (void)state;
    use_scenario("two_gpus.json");
    gm_collector_options o = options(NULL, fake_nvml());
    gm_collector *c = open_ok(&o);
    assert_string_equal(gm_collector_provider(c), "nvml");
    assert_string_equal(gm_collector_diagnosis(c), ""); /* the first one worked */

    gm_snapshot *s = gm_snapshot_new();
    gm_error err = {0};
    assert_int_equal(gm_collector_sample(c, s, &err), GM_OK);
    assert_string_equal(s->provider, "nvml");
    assert_string_equal(s->driver_version, "550.54.15");
    assert_int_equal(s->gpu_count, 2);
    assert_string_equal(s->gpus[0].uuid, "GPU-5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c50");
    check_eq(s->gpus[0].v[GM_M_UTIL_GPU_PCT], 87);
    /* A zero the driver reports is a reading, present. */
    assert_true(gm_gpu_has(&s->gpus[1], GM_M_FAN_PCT));
    check_eq(s->gpus[1].v[GM_M_FAN_PCT], 0);

    /* Processes: the provider's PIDs, owner and command from the fixture /proc. A PID /proc
     * does not know keeps them empty, never invented. */
    assert_int_equal(s->proc_count, 2);
    const gm_process *known = NULL, *unknown = NULL;
    for (size_t i = 0; i < s->proc_count; i++) {
        if (s->procs[i].pid == 4242)
            known = &s->procs[i];
        if (s->procs[i].pid == 5151)
            unknown = &s->procs[i];
    }
    assert_non_null(known);
    assert_non_null(unknown);
    assert_string_equal(known->command, "python3 train.py --lr 0.001");
    check_ne(known->user[0], '\0');
    assert_string_equal(unknown->command, "");
    assert_string_equal(unknown->user, "");
    /* Its pod and container from its cgroup (a containerd pod under systemd); no names
     * without the kubelet. */
    assert_string_equal(known->pod_uid, "f9a04ecc-1875-491b-926c-d2f64757704e");
    assert_string_equal(known->container_id,
                        "47e320f795efcec1ecf2001c3a09c95e3701ed87de8256837b70b10e23818251");
    assert_string_equal(known->k8s.pod, "");
    assert_string_equal(unknown->pod_uid, "");
    assert_string_equal(unknown->container_id, "");
    assert_false(s->gpus[0].k8s_known);
    gm_k8s_status ks;
    gm_collector_k8s_status(c, &ks);
    assert_int_equal(ks.state, GM_K8S_OFF);

    /* The host from the same /proc. */
    assert_true(s->host_valid);
    assert_string_equal(s->host.hostname, "gpu-node-07");
    check_eq(s->host.v[GM_H_MEM_TOTAL_BYTES], 16384000.0 * 1024);
    check_eq(s->host.v[GM_H_CPU_COUNT], 2);

    /* P2P and the topology from NVML: the fixture's NVLink NS and atomics GNS. */
    gm_p2p_status st = GM_P2P_UNKNOWN;
    assert_int_equal(gm_collector_p2p(c, 0, 1, GM_P2P_NVLINK, &st, &err), GM_OK);
    assert_int_equal(st, GM_P2P_NOT_SUPPORTED);
    assert_int_equal(gm_collector_p2p(c, 1, 0, GM_P2P_ATOMICS, &st, &err), GM_OK);
    assert_int_equal(st, GM_P2P_GPU_NOT_SUPPORTED);
    assert_int_equal(gm_collector_p2p(c, 0, 1, GM_P2P_READ, &st, &err), GM_OK);
    assert_int_equal(st, GM_P2P_OK);
    assert_int_equal(gm_collector_p2p(c, 0, 1, GM_P2P__COUNT, &st, &err), GM_EINVAL);
    assert_int_equal(gm_collector_p2p(c, 0, 1, (gm_p2p_cap)-1, &st, &err), GM_EINVAL);
    gm_topology *t = calloc(1, sizeof *t);
    assert_non_null(t);
    assert_int_equal(gm_collector_topology(c, t, &err), GM_OK);
    assert_true(t->known);
    assert_int_equal(t->gpu_count, 2);
    assert_int_equal(t->p2p[0][1][GM_P2P_NVLINK], GM_P2P_NOT_SUPPORTED);
    assert_int_equal(t->p2p[1][0][GM_P2P_ATOMICS], GM_P2P_GPU_NOT_SUPPORTED);
    assert_int_equal(t->p2p[0][1][GM_P2P_WRITE], GM_P2P_OK);
    free(t);
    gm_collector_close(c);
    gm_snapshot_free(s);
}

/* NULL options are the defaults: auto, the library named by GPU_MONITOR_NVML_LIB, real /proc,
 * host metrics on. */
static void test_defaults_and_the_environment(void **state)
{
    (void)state;
    use_scenario("two_gpus.json");
    setenv("GPU_MONITOR_NVML_LIB", fake_nvml(), 1);
    gm_collector *c = NULL;
    gm_error err = {0};
    assert_int_equal(gm_collector_open(NULL, &c, &err), GM_OK);
    assert_string_equal(gm_collector_provider(c), "nvml");
    gm_snapshot *s = gm_snapshot_new();
    assert_int_equal(gm_collector_sample(c, s, &err), GM_OK);
    assert_int_equal(s->gpu_count, 2);
    assert_true(s->host_valid);
    assert_true(gm_host_has(&s->host, GM_H_CPU_COUNT));
    /* The first sample waited for two /proc/stat readings, so CPU utilisation is there. */
    assert_true(gm_host_has(&s->host, GM_H_CPU_UTIL_PCT));
    gm_collector_close(c);
    gm_snapshot_free(s);
}

static void test_falls_back_to_nvidia_smi(void **state)
{
    (void)state;
    /* No library at all. */
    gm_collector_options o = options(NULL, NO_NVML);
    gm_collector *c = open_ok(&o);
    assert_string_equal(gm_collector_provider(c), "nvidia-smi");
    const char *d = gm_collector_diagnosis(c);
    assert_int_equal(count_lines(d), 1);
    assert_int_equal(strncmp(d, "nvml: ", 6), 0);
    assert_non_null(strstr(d, NO_NVML));
    gm_snapshot *s = gm_snapshot_new();
    gm_error err = {0};
    assert_int_equal(gm_collector_sample(c, s, &err), GM_OK);
    assert_string_equal(s->provider, "nvidia-smi");
    assert_int_equal(s->gpu_count, 2);
    assert_string_equal(s->gpus[1].name, "NVIDIA RTX A6000");
    /* nvidia-smi cannot tell P2P: said so, and the topology is unknown. */
    gm_p2p_status st;
    assert_int_equal(gm_collector_p2p(c, 0, 1, GM_P2P_READ, &st, &err), GM_ENOTSUP);
    assert_non_null(strstr(err.msg, "nvidia-smi"));
    gm_collector_close(c);

    /* A library that loads but whose driver is not there; one that finds no GPU. */
    static const struct {
        const char *scenario, *says;
    } cases[] = {{"init_error.json", "Driver Not Loaded"}, {"no_gpus.json", "found no GPU"}};
    for (size_t i = 0; i < 2; i++) {
        use_scenario(cases[i].scenario);
        o = options("auto", fake_nvml());
        c = open_ok(&o);
        assert_string_equal(gm_collector_provider(c), "nvidia-smi");
        d = gm_collector_diagnosis(c);
        assert_int_equal(count_lines(d), 1);
        assert_int_equal(strncmp(d, "nvml: ", 6), 0);
        check_gt(strlen(d), 6);
        assert_non_null(strstr(d, cases[i].says));
        gm_collector_close(c);
    }
    gm_snapshot_free(s);
}

static void test_none_when_nothing_works(void **state)
{
    (void)state;
    setenv("PATH", "/nonexistent-gm-dir", 1);
    gm_collector_options o = options("", NO_NVML); /* "" is auto too */
    gm_collector *c = open_ok(&o);
    assert_string_equal(gm_collector_provider(c), "none");
    /* One line per provider tried, in order, each with its reason (and the provider's name
     * said once, not twice). */
    const char *d = gm_collector_diagnosis(c);
    assert_int_equal(count_lines(d), 6);
    assert_int_equal(strncmp(d, "nvml: ", 6), 0);
    assert_non_null(strstr(d, NO_NVML));
    const char *second = strchr(d, '\n') + 1;
    static const char want[] = "nvidia-smi: not found on PATH\n"
                               "amd_smi: cannot load amdsmi library /nonexistent-gm/libamd_smi.so "
                               "(from GPU_MONITOR_AMD_SMI_LIB): ";
    assert_int_equal(strncmp(second, want, strlen(want)), 0);
    const char *third = strchr(strchr(second, '\n') + 1, '\n') + 1;
    static const char want3[] =
        "rocm_smi: cannot load ROCm SMI library "
        "/nonexistent-gm/librocm_smi64.so.1 (from GPU_MONITOR_ROCM_SMI_LIB): ";
    assert_int_equal(strncmp(third, want3, strlen(want3)), 0);
    const char *fifth = strchr(third, '\n') + 1;
    assert_int_equal(strncmp(fifth,
                             "amdgpu: no GPU driven by amdgpu under "
                             "/nonexistent-gm-sysfs/sys/class/drm\n"
                             "nvtop: ",
                             strlen("amdgpu: no GPU driven by "
                                    "amdgpu under /nonexistent-gm-sysfs/sys/class/drm\nnvtop: ")),
                     0);

    /* It still samples: no GPU, the host. */
    gm_snapshot *s = gm_snapshot_new();
    gm_error err = {0};
    for (uint64_t k = 1; k <= 2; k++) {
        assert_int_equal(gm_collector_sample(c, s, &err), GM_OK);
        assert_int_equal(s->seq, k);
        assert_string_equal(s->provider, "none");
        assert_int_equal(s->gpu_count, 0);
        assert_int_equal(s->proc_count, 0);
        assert_true(s->host_valid);
        assert_string_equal(s->host.hostname, "gpu-node-07");
    }
    gm_p2p_status st;
    assert_int_equal(gm_collector_p2p(c, 0, 1, GM_P2P_READ, &st, &err), GM_ENOTSUP);
    assert_string_equal(err.msg, "provider none cannot read P2P status");
    gm_topology *t = calloc(1, sizeof *t);
    t->known = true;
    assert_int_equal(gm_collector_topology(c, t, &err), GM_OK);
    assert_false(t->known);
    free(t);
    gm_collector_close(c);

    /* nvidia-smi that runs and fails: its own words in the diagnosis. */
    setenv("PATH", saved_path, 1);
    setenv("GM_FAKE_SMI_MODE", "fail", 1);
    c = open_ok(&o);
    assert_string_equal(gm_collector_provider(c), "none");
    d = gm_collector_diagnosis(c);
    assert_int_equal(count_lines(d), 6);
    second = strchr(d, '\n') + 1;
    assert_int_equal(strncmp(second, "nvidia-smi: ", 12), 0);
    assert_non_null(strstr(second, "exited with status 9"));
    gm_collector_close(c);
    gm_snapshot_free(s);
}

static void test_forced_provider_errors(void **state)
{
    (void)state;
    gm_collector *c = (gm_collector *)1;
    gm_error err = {0};
    /* A forced provider that fails is an error, with no fallback. */
    gm_collector_options o = options("nvml", NO_NVML);
    assert_int_equal(gm_collector_open(&o, &c, &err), GM_ENOLIB);
    assert_null(c);
    assert_int_equal(err.code, GM_ENOLIB);
    assert_non_null(strstr(err.msg, NO_NVML));

    use_scenario("init_error.json");
    o = options("nvml", fake_nvml());
    c = (gm_collector *)1;
    assert_int_equal(gm_collector_open(&o, &c, &err), GM_EINIT);
    assert_null(c);
    assert_non_null(strstr(err.msg, "Driver Not Loaded"));

    setenv("PATH", "/nonexistent-gm-dir", 1);
    o = options("nvidia-smi", fake_nvml());
    c = (gm_collector *)1;
    assert_int_equal(gm_collector_open(&o, &c, &err), GM_ESPAWN);
    assert_null(c);
    assert_string_equal(err.msg, "nvidia-smi: not found on PATH");
    setenv("PATH", saved_path, 1);

    static const char *const unknown[] = {"rocm", "none", "NVML ", "smi"};
    for (size_t i = 0; i < sizeof unknown / sizeof *unknown; i++) {
        o = options(unknown[i], fake_nvml());
        c = (gm_collector *)1;
        memset(&err, 0, sizeof err);
        assert_int_equal(gm_collector_open(&o, &c, &err), GM_EINVAL);
        assert_null(c);
        char want[64];
        snprintf(want, sizeof want, "unknown provider \"%s\"", unknown[i]);
        assert_non_null(strstr(err.msg, want));
    }
    /* A forced simulator with too many GPUs: the simulator's own refusal. */
    o = options("sim", NULL);
    o.simulate = GM_MAX_GPUS + 1;
    assert_int_equal(gm_collector_open(&o, &c, &err), GM_EINVAL);
    assert_null(c);
    assert_non_null(strstr(err.msg, "at most"));
}

static void test_host_metrics_off(void **state)
{
    (void)state;
    use_scenario("two_gpus.json");
    gm_collector_options o = options("nvml", fake_nvml());
    o.no_host = true;
    gm_collector *c = open_ok(&o);
    gm_snapshot *s = gm_snapshot_new();
    gm_error err = {0};
    assert_int_equal(gm_collector_sample(c, s, &err), GM_OK);
    assert_int_equal(s->gpu_count, 2);
    assert_false(s->host_valid);
    assert_int_equal(s->host.valid, 0);
    assert_int_equal(s->host.core_count, 0);
    /* The machine's name is still said (from gethostname, not the fixture /proc). */
    char name[GM_HOSTNAME_LEN] = "";
    gethostname(name, sizeof name - 1);
    assert_string_equal(s->host.hostname, name);
    gm_collector_close(c);

    /* Processes off: none listed, the GPUs still read. */
    o = options("nvml", fake_nvml());
    o.no_processes = true;
    c = open_ok(&o);
    assert_int_equal(gm_collector_sample(c, s, &err), GM_OK);
    assert_int_equal(s->gpu_count, 2);
    assert_int_equal(s->proc_count, 0);
    assert_true(s->host_valid);
    gm_collector_close(c);
    gm_snapshot_free(s);
}

static void test_absent_metrics_stay_absent(void **state)
{
    (void)state;
    use_scenario("unsupported.json");
    gm_collector_options o = options(NULL, fake_nvml());
    gm_collector *c = open_ok(&o);
    gm_snapshot *s = gm_snapshot_new();
    gm_error err = {0};
    assert_int_equal(gm_collector_sample(c, s, &err), GM_OK);
    assert_int_equal(s->gpu_count, 1);
    const gm_gpu *g = &s->gpus[0];
    assert_false(g->lost);
    /* Not supported, no permission, unknown or not reported: absent, never a zero. */
    static const gm_metric absent[] = {
        GM_M_FAN_PCT,          GM_M_UTIL_ENC_PCT, GM_M_UTIL_DEC_PCT,      GM_M_ENERGY_MJ,
        GM_M_PCIE_TX_KBPS,     GM_M_PCIE_RX_KBPS, GM_M_CLOCK_MAX_MEM_MHZ, GM_M_POWER_LIMIT_MW,
        GM_M_THROTTLE_REASONS, GM_M_PSTATE,       GM_M_PERSISTENCE_MODE,
    };
    for (size_t i = 0; i < sizeof absent / sizeof *absent; i++)
        if (gm_gpu_has(g, absent[i]))
            fail_msg("%s is present (%g)", gm_metric_get(absent[i])->name, g->v[absent[i]]);
    /* What the GPU does report is there. */
    assert_true(gm_gpu_has(g, GM_M_UTIL_GPU_PCT));
    check_eq(g->v[GM_M_UTIL_GPU_PCT], 55);
    assert_true(gm_gpu_has(g, GM_M_POWER_MW));
    check_eq(g->v[GM_M_POWER_MW], 250000);
    assert_true(gm_gpu_has(g, GM_M_CLOCK_MAX_SM_MHZ));
    /* The same on every later sample. */
    assert_int_equal(gm_collector_sample(c, s, &err), GM_OK);
    assert_false(gm_gpu_has(&s->gpus[0], GM_M_FAN_PCT));
    assert_false(gm_gpu_has(&s->gpus[0], GM_M_ENERGY_MJ));
    gm_collector_close(c);
    gm_snapshot_free(s);
}

/* A sample that fails: the error is returned, no GPU data is kept, the sample still says who
 * took it, when, and the host; the next sample recovers. */
static void test_failed_sample(void **state)
{
    (void)state;
    gm_collector_options o = options("nvidia-smi", NULL);
    /* Long enough for the fake (a script) to start on a loaded machine: under six build jobs
     * it missed 300 ms at open; the hang below costs this once. */
    o.smi_timeout_ms = 2000;
    gm_collector *c = open_ok(&o);
    gm_snapshot *s = gm_snapshot_new();
    gm_error err = {0};
    assert_int_equal(gm_collector_sample(c, s, &err), GM_OK);
    assert_int_equal(s->gpu_count, 2);
    assert_int_equal(s->seq, 1);
    setenv("GM_FAKE_SMI_MODE", "hang", 1);
    int64_t before = (int64_t)time(NULL) * 1000;
    assert_int_equal(gm_collector_sample(c, s, &err), GM_ETIMEDOUT);
    assert_non_null(strstr(err.msg, "2000 ms"));
    assert_int_equal(s->gpu_count, 0);
    assert_int_equal(s->proc_count, 0);
    assert_string_equal(s->provider, "nvidia-smi");
    assert_int_equal(s->seq, 2);
    check_ge(s->time_ms, before);
    assert_true(s->host_valid);
    unsetenv("GM_FAKE_SMI_MODE");
    assert_int_equal(gm_collector_sample(c, s, &err), GM_OK);
    assert_int_equal(s->gpu_count, 2);
    assert_int_equal(s->seq, 3);
    gm_collector_close(c);
    gm_snapshot_free(s);
}

static void test_sequence_and_clocks(void **state)
{
    (void)state;
    use_scenario("two_gpus.json");
    gm_collector_options o = options(NULL, fake_nvml());
    gm_collector *c = open_ok(&o);
    gm_snapshot *s = gm_snapshot_new();
    gm_error err = {0};
    int64_t last_mono = 0;
    for (uint64_t k = 1; k <= 5; k++) {
        /* The same clock before and after: time() may read the coarse clock, which lags the
         * precise one by up to a tick, so a sample at x.999 s could look later than it. */
        int64_t t0 = gm_clock_wall_ms();
        assert_int_equal(gm_collector_sample(c, s, &err), GM_OK);
        int64_t t1 = gm_clock_wall_ms();
        assert_int_equal(s->seq, k); /* one more per sample, from 1 */
        check_ge(s->time_ms, t0);
        check_le(s->time_ms, t1);
        check_ge(s->mono_ms, last_mono);
        last_mono = s->mono_ms;
    }
    gm_collector_close(c);
    gm_collector_close(NULL);
    gm_snapshot_free(s);
}

/* With a pod-resources socket that is not there: the collector samples as before, GPUs are not
 * "known" to Kubernetes, and the status says why. */
static void test_pod_resources_missing(void **state)
{
    (void)state;
    use_scenario("two_gpus.json");
    gm_collector_options o = options(NULL, fake_nvml());
    o.pod_resources_socket = "/nonexistent/gpumon-test/kubelet.sock";
    o.pod_resources_period_ms = 50;
    gm_collector *c = open_ok(&o);
    gm_snapshot *s = gm_snapshot_new();
    gm_error err = {0};
    gm_k8s_status ks = {0};
    for (int i = 0; i < 200 && ks.state != GM_K8S_NO_SOCKET; i++) {
        assert_int_equal(gm_collector_sample(c, s, &err), GM_OK);
        assert_false(s->gpus[0].k8s_known);
        gm_collector_k8s_status(c, &ks);
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(ks.state, GM_K8S_NO_SOCKET);
    assert_string_equal(ks.socket, "/nonexistent/gpumon-test/kubelet.sock");
    assert_non_null(strstr(ks.message, "No such file"));
    assert_int_equal(s->gpu_count, 2);
    gm_collector_close(c);
    gm_snapshot_free(s);
}

/* Every provider call and host read is counted and timed; the static host files are read
 * once a minute, not per sample. */
static void test_call_stats(void **state)
{
    (void)state;
    use_scenario("two_gpus.json");
    gm_collector_options o = options("nvml", getenv("GM_FAKE_NVML"));
    gm_collector *c = open_ok(&o);
    gm_snapshot *s = gm_snapshot_new();
    gm_error err = {0};
    for (int k = 0; k < 3; k++)
        assert_int_equal(gm_collector_sample(c, s, &err), GM_OK);
    gm_call_stat st[GM_CALLTIME_TEST_CAP];
    size_t n = gm_collector_call_stats(c, st, GM_CALLTIME_TEST_CAP);
    check_gt(n, 0);
    check_le(n, GM_CALLTIME_TEST_CAP);
    uint64_t util = 0, init = 0, procstat = 0, cpuinfo = 0;
    for (size_t i = 0; i < n; i++) {
        check_ge(st[i].wall_s, 0);
        check_ge(st[i].cpu_s, 0);
        if (strcmp(st[i].name, "nvmlDeviceGetUtilizationRates") == 0)
            util = st[i].count;
        else if (strcmp(st[i].name, "nvmlInit_v2") == 0)
            init = st[i].count;
        else if (strcmp(st[i].name, "/proc/stat") == 0)
            procstat = st[i].count;
        else if (strcmp(st[i].name, "/proc/cpuinfo") == 0)
            cpuinfo = st[i].count;
    }
    assert_int_equal(init, 1);
    assert_int_equal(util, 3 * 2);     /* two GPUs, three samples */
    assert_int_equal(procstat, 1 + 3); /* primed at open */
    assert_int_equal(cpuinfo, 1);
    /* A smaller buffer gets the first entries and the full count. */
    gm_call_stat one;
    assert_int_equal(gm_collector_call_stats(c, &one, 1), n);
    assert_string_equal(one.name, "nvmlInit_v2");
    gm_snapshot_free(s);
    gm_collector_close(c);
}

/* On the live /proc the host name comes from gethostname() (one system call), not from an
 * open, read and close of /proc/sys/kernel/hostname each sample. */
static void test_live_hostname(void **state)
{
    (void)state;
    gm_collector_options o = options("sim", NULL);
    o.simulate = 1;
    o.procfs_root = NULL;
    gm_collector *c = open_ok(&o);
    gm_snapshot *s = gm_snapshot_new();
    gm_error err = {0};
    assert_int_equal(gm_collector_sample(c, s, &err), GM_OK);
    char name[256] = "";
    assert_int_equal(gethostname(name, sizeof name - 1), 0);
    assert_string_equal(s->host.hostname, name);
    gm_call_stat st[GM_CALLTIME_TEST_CAP];
    size_t n = gm_collector_call_stats(c, st, GM_CALLTIME_TEST_CAP);
    uint64_t calls = 0;
    for (size_t i = 0; i < n && i < GM_CALLTIME_TEST_CAP; i++) {
        if (strcmp(st[i].name, "/proc/sys/kernel/hostname") == 0)
            fail_msg("%s was read", st[i].name);
        if (strcmp(st[i].name, "gethostname") == 0)
            calls = st[i].count;
    }
    check_ge(calls, 1);
    gm_snapshot_free(s);
    gm_collector_close(c);
}

/* A want set leaves every other metric absent and never asks the driver for it. */
static void test_want_set(void **state)
{
    (void)state;
    use_scenario("two_gpus.json");
    gm_metric_set want = {0};
    gm_metric_set_add(&want, GM_M_TEMP_C);
    gm_metric_set_add(&want, GM_M_MEM_USED_BYTES);
    gm_collector_options o = options("nvml", getenv("GM_FAKE_NVML"));
    o.want = &want;
    o.no_host = true;
    gm_collector *c = open_ok(&o);
    gm_snapshot *s = gm_snapshot_new();
    gm_error err = {0};
    assert_int_equal(gm_collector_sample(c, s, &err), GM_OK);
    const gm_gpu *g = &s->gpus[0];
    assert_string_equal(g->name, "NVIDIA H100 80GB HBM3");
    assert_true(g->uuid[0] && g->pci_bus_id[0]);
    assert_true(gm_gpu_has(g, GM_M_TEMP_C));
    assert_true(gm_gpu_has(g, GM_M_MEM_USED_BYTES));
    assert_false(gm_gpu_has(g, GM_M_UTIL_GPU_PCT));
    assert_false(gm_gpu_has(g, GM_M_POWER_MW));
    assert_false(gm_gpu_has(g, GM_M_CLOCK_MAX_GR_MHZ));
    gm_call_stat st[GM_CALLTIME_TEST_CAP];
    size_t n = gm_collector_call_stats(c, st, GM_CALLTIME_TEST_CAP);
    for (size_t i = 0; i < n && i < GM_CALLTIME_TEST_CAP; i++)
        if (strcmp(st[i].name, "nvmlDeviceGetUtilizationRates") == 0 ||
            strcmp(st[i].name, "nvmlDeviceGetMaxClockInfo") == 0 ||
            strcmp(st[i].name, "nvmlDeviceGetSerial") == 0)
            fail_msg("%s was called", st[i].name);
    gm_snapshot_free(s);
    gm_collector_close(c);
}

/* Writes the fake amdgpu tree (an RX 580 at bus 03, an MI300X at bus 83, listed as card1 and
 * card0, and an NVIDIA card the amdgpu reader must skip) and points the collector at it. */
static void use_fake_amd_sysfs(char *root, size_t cap)
{
    snprintf(root, cap, "/tmp/gm-test-collector-sysfs-%ld", (long)getpid());
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "rm -rf '%s' && python3 '%s/tests/fakes/fake_amd_sysfs.py' '%s' --nvidia", root,
             getenv("GM_SOURCE_DIR"), root);
    assert_int_equal(system(cmd), 0);
    setenv("GPU_MONITOR_SYSFS_ROOT", root, 1);
}

static void remove_tree(const char *root)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

/* Two NVIDIA GPUs (fake NVML) and two AMD GPUs (fake sysfs) at once: NVIDIA's first with their
 * driver indices and processes, then AMD's in bus order, each saying its vendor and provider. */
static void test_nvidia_and_amd_at_once(void **state)
{
    (void)state;
    char root[256];
    use_fake_amd_sysfs(root, sizeof root);
    use_scenario("two_gpus.json");
    gm_collector_options o = options(NULL, fake_nvml());
    gm_collector *c = open_ok(&o);
    assert_string_equal(gm_collector_provider(c), "nvml+amdgpu");
    assert_string_equal(gm_collector_diagnosis(c), "");
    gm_snapshot *s = gm_snapshot_new();
    gm_error err = {0};
    for (int round = 0; round < 2; round++) {
        assert_int_equal(gm_collector_sample(c, s, &err), GM_OK);
        assert_string_equal(s->provider, "nvml+amdgpu");
        assert_int_equal(s->gpu_count, 4);
        static const char *const bus[] = {"00000000:1B:00.0", "00000000:2A:00.0", "0000:03:00.0",
                                          "0000:83:00.0"};
        for (unsigned i = 0; i < 4; i++) {
            const gm_gpu *g = &s->gpus[i];
            assert_int_equal(g->index, i);
            assert_string_equal(g->pci_bus_id, bus[i]);
            assert_string_equal(g->vendor, i < 2 ? "NVIDIA" : "AMD");
            assert_string_equal(g->provider, i < 2 ? "nvml" : "amdgpu");
        }
        assert_string_equal(s->gpus[3].name, "AMD Instinct MI300X OAM");
        assert_true(gm_gpu_has(&s->gpus[3], GM_M_UTIL_GPU_PCT));
        check_eq(s->gpus[3].v[GM_M_UTIL_GPU_PCT], 37);
        /* The NVIDIA processes stay on GPU 0. */
        check_ge(s->proc_count, 1);
        for (size_t p = 0; p < s->proc_count; p++)
            assert_int_equal(s->procs[p].gpu_index, 0);
    }
    /* P2P is known between NVML's GPUs, not between an NVIDIA and an AMD GPU. */
    gm_p2p_status st;
    assert_int_equal(gm_collector_p2p(c, 0, 1, GM_P2P_READ, &st, &err), GM_OK);
    assert_int_equal(gm_collector_p2p(c, 0, 3, GM_P2P_READ, &st, &err), GM_ENOTSUP);
    gm_topology *t = malloc(sizeof *t);
    assert_int_equal(gm_collector_topology(c, t, &err), GM_OK);
    assert_true(t->known);
    assert_int_equal(t->gpu_count, 4);
    assert_int_equal(t->p2p[0][2][GM_P2P_READ], GM_P2P_UNKNOWN);
    free(t);
    gm_snapshot_free(s);
    gm_collector_close(c);

    /* --provider still forces one: amdgpu alone numbers the AMD GPUs from 0. */
    o = options("amdgpu", fake_nvml());
    c = open_ok(&o);
    assert_string_equal(gm_collector_provider(c), "amdgpu");
    s = gm_snapshot_new();
    assert_int_equal(gm_collector_sample(c, s, &err), GM_OK);
    assert_int_equal(s->gpu_count, 2);
    assert_string_equal(s->gpus[0].pci_bus_id, "0000:03:00.0");
    assert_string_equal(s->gpus[0].provider, "amdgpu");
    gm_snapshot_free(s);
    gm_collector_close(c);
    /* And nvml alone sees only NVIDIA's. */
    o = options("nvml", fake_nvml());
    c = open_ok(&o);
    assert_string_equal(gm_collector_provider(c), "nvml");
    gm_collector_close(c);
    remove_tree(root);
}

/* Without NVIDIA's library or nvidia-smi the AMD GPUs are still read, and the diagnosis says
 * why the NVIDIA providers were passed over. */
static void test_amd_only(void **state)
{
    (void)state;
    char root[256];
    use_fake_amd_sysfs(root, sizeof root);
    setenv("PATH", "/nonexistent-gm-dir", 1);
    gm_collector_options o = options(NULL, NO_NVML);
    gm_collector *c = open_ok(&o);
    assert_string_equal(gm_collector_provider(c), "amdgpu");
    /* nvml, nvidia-smi, and AMD's two libraries, which the sysfs reader stands in for */
    assert_int_equal(count_lines(gm_collector_diagnosis(c)), 4);
    gm_snapshot *s = gm_snapshot_new();
    gm_error err = {0};
    assert_int_equal(gm_collector_sample(c, s, &err), GM_OK);
    assert_int_equal(s->gpu_count, 2);
    assert_int_equal(s->gpus[0].index, 0);
    assert_string_equal(s->gpus[1].vendor, "AMD");
    gm_snapshot_free(s);
    gm_collector_close(c);
    setenv("PATH", saved_path, 1);
    remove_tree(root);
}

int main(void)
{
    const char *src = getenv("GM_SOURCE_DIR"), *fix = getenv("GM_FIXTURES");
    if (!src || !fix || !getenv("GM_FAKE_NVML")) {
        fprintf(stderr, "GM_SOURCE_DIR, GM_FIXTURES and GM_FAKE_NVML must be set (ctest sets "
                        "them)\n");
        return 1;
    }
    /* The fake answers as "nvidia-smi" from tests/fakes, ahead of any real one. */
    snprintf(saved_path, sizeof saved_path, "%s/tests/fakes:%s", src,
             getenv("PATH") ? getenv("PATH") : "");
    snprintf(procfs, sizeof procfs, "%s/proc/x86", fix);

    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_auto_picks_nvml, setup),
        cmocka_unit_test_setup(test_defaults_and_the_environment, setup),
        cmocka_unit_test_setup(test_falls_back_to_nvidia_smi, setup),
        cmocka_unit_test_setup(test_none_when_nothing_works, setup),
        cmocka_unit_test_setup(test_forced_provider_errors, setup),
        cmocka_unit_test_setup(test_host_metrics_off, setup),
        cmocka_unit_test_setup(test_absent_metrics_stay_absent, setup),
        cmocka_unit_test_setup(test_failed_sample, setup),
        cmocka_unit_test_setup(test_sequence_and_clocks, setup),
        cmocka_unit_test_setup(test_pod_resources_missing, setup),
        cmocka_unit_test_setup(test_call_stats, setup),
        cmocka_unit_test_setup(test_live_hostname, setup),
        cmocka_unit_test_setup(test_want_set, setup),
        cmocka_unit_test_setup(test_nvidia_and_amd_at_once, setup),
        cmocka_unit_test_setup(test_amd_only, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
