/* test_prom.c - the Prometheus exposition: exact lines, absent metrics omitted, label escaping,
 * family grouping, and acceptance by `promtool check metrics`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/prom.h"

/* dcgm-exporter's label set, in its order. */
#define GPU0_LABELS                                                                    \
    "{gpu=\"0\",UUID=\"GPU-aaaa\",pci_bus_id=\"00000000:17:00.0\",device=\"nvidia0\"," \
    "modelName=\"NVIDIA H100 80GB HBM3\","                                             \
    "Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"}"
#define GPU1_LABELS                                                                    \
    "{gpu=\"1\",UUID=\"GPU-bbbb\",pci_bus_id=\"00000000:65:00.0\",device=\"nvidia1\"," \
    "modelName=\"Tesla \\\"T4\\\"\","                                                  \
    "Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"}"
#define GPU2_LABELS                                                                    \
    "{gpu=\"2\",UUID=\"GPU-cccc\",pci_bus_id=\"00000000:B3:00.0\",device=\"nvidia2\"," \
    "modelName=\"NVIDIA A100\","                                                       \
    "Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"}"

static void add_proc(gm_snapshot *s, unsigned gpu, uint32_t pid, bool mem_valid, uint64_t bytes,
                     const char *user, const char *cmd)
{
    gm_process p = {.gpu_index = gpu,
                    .pid = pid,
                    .type = GM_PROC_COMPUTE,
                    .mem_valid = mem_valid,
                    .used_mem_bytes = bytes};
    snprintf(p.user, sizeof p.user, "%s", user);
    snprintf(p.command, sizeof p.command, "%s", cmd);
    assert_true(gm_snapshot_add_process(s, &p));
}

/* GPU 0 has every metric; GPU 1 only a few (the rest absent); GPU 2 is lost (with stale bits
 * a careless provider might leave set); a host; processes with awkward command lines. */
static gm_snapshot *rich_snapshot(void)
{
    gm_snapshot *s = gm_snapshot_new();
    assert_non_null(s);
    s->seq = 42;
    s->time_ms = 1764117772123;
    snprintf(s->provider, sizeof s->provider, "nvml");
    snprintf(s->driver_version, sizeof s->driver_version, "550.54.15");
    snprintf(s->cuda_version, sizeof s->cuda_version, "12.4");
    s->gpu_count = 3;

    gm_gpu *g = &s->gpus[0];
    g->index = 0;
    snprintf(g->name, sizeof g->name, "NVIDIA H100 80GB HBM3");
    snprintf(g->uuid, sizeof g->uuid, "GPU-aaaa");
    snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "00000000:17:00.0");
    gm_gpu_set(g, GM_M_UTIL_GPU_PCT, 75);
    gm_gpu_set(g, GM_M_UTIL_MEM_PCT, 12);
    gm_gpu_set(g, GM_M_UTIL_ENC_PCT, 0);
    gm_gpu_set(g, GM_M_UTIL_DEC_PCT, 3);
    gm_gpu_set(g, GM_M_MEM_TOTAL_BYTES, 85520809984.0);          /* 81559 MiB */
    gm_gpu_set(g, GM_M_MEM_USED_BYTES, 8589934592.0 + 524288.0); /* 8192.5 MiB -> 8192 */
    gm_gpu_set(g, GM_M_MEM_FREE_BYTES, 76385419264.0);
    gm_gpu_set(g, GM_M_MEM_RESERVED_BYTES, 545259520.0); /* 520 MiB */
    gm_gpu_set(g, GM_M_TEMP_C, 65);
    gm_gpu_set(g, GM_M_POWER_MW, 220500);
    gm_gpu_set(g, GM_M_POWER_LIMIT_MW, 700000);
    gm_gpu_set(g, GM_M_ENERGY_MJ, 123456789012345.0); /* beyond %g's 6 digits */
    gm_gpu_set(g, GM_M_CLOCK_GR_MHZ, 1980);
    gm_gpu_set(g, GM_M_CLOCK_SM_MHZ, 1980);
    gm_gpu_set(g, GM_M_CLOCK_MEM_MHZ, 2619);
    gm_gpu_set(g, GM_M_CLOCK_MAX_GR_MHZ, 1980);
    gm_gpu_set(g, GM_M_CLOCK_MAX_SM_MHZ, 1980);
    gm_gpu_set(g, GM_M_CLOCK_MAX_MEM_MHZ, 2619);
    gm_gpu_set(g, GM_M_FAN_PCT, 110);
    gm_gpu_set(g, GM_M_PCIE_GEN_CUR, 5);
    gm_gpu_set(g, GM_M_PCIE_GEN_MAX, 5);
    gm_gpu_set(g, GM_M_PCIE_WIDTH_CUR, 16);
    gm_gpu_set(g, GM_M_PCIE_WIDTH_MAX, 16);
    gm_gpu_set(g, GM_M_PCIE_TX_KBPS, 1024);
    gm_gpu_set(g, GM_M_PCIE_RX_KBPS, 2048);
    gm_gpu_set(g, GM_M_PSTATE, 0);
    gm_gpu_set(g, GM_M_THROTTLE_REASONS, 4);
    gm_gpu_set(g, GM_M_PERSISTENCE_MODE, 1);

    g = &s->gpus[1];
    g->index = 1;
    snprintf(g->name, sizeof g->name, "Tesla \"T4\"");
    snprintf(g->uuid, sizeof g->uuid, "GPU-bbbb");
    snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "00000000:65:00.0");
    gm_gpu_set(g, GM_M_UTIL_GPU_PCT, 0);
    gm_gpu_set(g, GM_M_TEMP_C, 41);
    gm_gpu_set(g, GM_M_POWER_MW, 27123); /* 27.123 W */

    g = &s->gpus[2];
    g->index = 2;
    snprintf(g->name, sizeof g->name, "NVIDIA A100");
    snprintf(g->uuid, sizeof g->uuid, "GPU-cccc");
    snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "00000000:B3:00.0");
    g->lost = true;
    gm_gpu_set(g, GM_M_TEMP_C, 99); /* stale: must not be shown */

    s->host_valid = true;
    gm_host *h = &s->host;
    snprintf(h->hostname, sizeof h->hostname, "node-1");
    snprintf(h->kernel, sizeof h->kernel, "6.1.0-18-amd64");
    snprintf(h->cpu_model, sizeof h->cpu_model, "AMD EPYC 9654 96-Core Processor");
    gm_host_set(h, GM_H_CPU_UTIL_PCT, 12.3456789);
    gm_host_set(h, GM_H_CPU_COUNT, 2);
    gm_host_set(h, GM_H_MEM_TOTAL_BYTES, 1622999998464.0);
    gm_host_set(h, GM_H_MEM_USED_BYTES, 12345678901.0);
    gm_host_set(h, GM_H_MEM_AVAILABLE_BYTES, 1610654319563.0);
    gm_host_set(h, GM_H_SWAP_TOTAL_BYTES, 0);
    gm_host_set(h, GM_H_LOAD1, 0.52);
    gm_host_set(h, GM_H_LOAD5, 1.25);
    gm_host_set(h, GM_H_LOAD15, 2);
    gm_host_set(h, GM_H_UPTIME_S, 1234567.89);
    /* SWAP_USED left absent */
    h->core_count = 2;
    h->core_util_pct[0] = 50.5f;
    h->core_util_pct[1] = 0;

    add_proc(s, 0, 4242, true, 1073741824, "alice", "/usr/bin/python3 train.py --lr 0.1");
    add_proc(s, 0, 4243, true, 536870912, "b\"ob",
             "/opt/dir/we\"ird\\name\nx arg");  /* quote, backslash, newline */
    add_proc(s, 1, 99, false, 0, "", "hidden"); /* memory withheld */
    add_proc(s, 1, 100, true, 1048576, "", "/bin/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    add_proc(s, 1, 101, true, 2097152, "carol",
             "\xff\xfe"
             "bad-utf8");
    return s;
}

static char *render(const gm_snapshot *s, const gm_prom_health *h)
{
    size_t len = 0;
    char *out = gm_prom_render(s, h, &len);
    assert_non_null(out);
    assert_int_equal(strlen(out), len);
    check_gt(len, 0);
    check_eq(out[len - 1], '\n');
    return out;
}

/* True when text holds line as one whole line. */
static bool has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)) != NULL; p++)
        if ((p == text || p[-1] == '\n') && p[n] == '\n')
            return true;
    return false;
}

static void assert_line(const char *text, const char *line)
{
    if (!has_line(text, line))
        fail_msg("missing line:\n%s\n--- in ---\n%s", line, text);
}

static void assert_no_substr(const char *text, const char *s)
{
    if (strstr(text, s))
        fail_msg("unexpected \"%s\" in:\n%s", s, text);
}

static const gm_call_stat calls[] = {
    {"nvmlDeviceGetUtilizationRates", 3600, 0.0972, 0.0954},
    {"/proc/stat", 3601, 0.25, 0.125},
};

static const gm_prom_health health = {.samples_total = 1000,
                                      .sample_errors_total = 2,
                                      .last_sample_duration_s = 0.0123,
                                      .uptime_s = 3600.5,
                                      .calls = calls,
                                      .call_count = 2};

/* The collector's call times: a summary (sum and count) and a CPU counter per call. */
static void test_call_stats(void **state)
{
    (void)state;
    gm_snapshot *s = rich_snapshot();
    char *out = render(s, &health);
    assert_line(out, "# TYPE gpumon_sampler_call_seconds summary");
    assert_line(out,
                "gpumon_sampler_call_seconds_sum{call=\"nvmlDeviceGetUtilizationRates\"} 0.0972");
    assert_line(out,
                "gpumon_sampler_call_seconds_count{call=\"nvmlDeviceGetUtilizationRates\"} 3600");
    assert_line(out, "gpumon_sampler_call_seconds_count{call=\"/proc/stat\"} 3601");
    assert_line(out, "# TYPE gpumon_sampler_call_cpu_seconds_total counter");
    assert_line(out, "gpumon_sampler_call_cpu_seconds_total{call=\"/proc/stat\"} 0.125");
    free(out);
    gm_prom_health none = health;
    none.call_count = 0;
    out = render(s, &none);
    assert_no_substr(out, "gpumon_sampler_call");
    free(out);
    gm_snapshot_free(s);
}

static void test_dcgm_lines(void **state)
{
    (void)state;
    gm_snapshot *s = rich_snapshot();
    char *out = render(s, &health);

    assert_line(out, "# HELP DCGM_FI_DEV_GPU_UTIL Share of time one or more kernels ran on the "
                     "GPU (in %).");
    assert_line(out, "# TYPE DCGM_FI_DEV_GPU_UTIL gauge");
    assert_line(out, "DCGM_FI_DEV_GPU_UTIL" GPU0_LABELS " 75");
    assert_line(out, "DCGM_FI_DEV_GPU_UTIL" GPU1_LABELS " 0"); /* a real 0 stays */
    assert_line(out, "DCGM_FI_DEV_MEM_COPY_UTIL" GPU0_LABELS " 12");
    assert_line(out, "DCGM_FI_DEV_ENC_UTIL" GPU0_LABELS " 0");
    assert_line(out, "DCGM_FI_DEV_DEC_UTIL" GPU0_LABELS " 3");
    assert_line(out, "DCGM_FI_DEV_FB_TOTAL" GPU0_LABELS " 81559");
    assert_line(out, "DCGM_FI_DEV_FB_USED" GPU0_LABELS " 8192");
    assert_line(out, "DCGM_FI_DEV_FB_FREE" GPU0_LABELS " 72846");
    assert_line(out, "DCGM_FI_DEV_FB_RESERVED" GPU0_LABELS " 520");
    assert_line(out, "DCGM_FI_DEV_GPU_TEMP" GPU0_LABELS " 65");
    assert_line(out, "DCGM_FI_DEV_GPU_TEMP" GPU1_LABELS " 41");
    assert_line(out, "DCGM_FI_DEV_POWER_USAGE" GPU0_LABELS " 220.5");
    assert_line(out, "DCGM_FI_DEV_POWER_USAGE" GPU1_LABELS " 27.123");
    assert_line(out, "DCGM_FI_DEV_ENFORCED_POWER_LIMIT" GPU0_LABELS " 700");
    assert_line(out, "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter");
    assert_line(out, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" GPU0_LABELS " 123456789012345");
    assert_line(out, "DCGM_FI_DEV_SM_CLOCK" GPU0_LABELS " 1980");
    assert_line(out, "DCGM_FI_DEV_MEM_CLOCK" GPU0_LABELS " 2619");
    assert_line(out, "DCGM_FI_DEV_MAX_SM_CLOCK" GPU0_LABELS " 1980");
    assert_line(out, "DCGM_FI_DEV_MAX_MEM_CLOCK" GPU0_LABELS " 2619");
    assert_line(out, "DCGM_FI_DEV_FAN_SPEED" GPU0_LABELS " 110");
    assert_line(out, "DCGM_FI_DEV_PCIE_LINK_GEN" GPU0_LABELS " 5");
    assert_line(out, "DCGM_FI_DEV_PCIE_LINK_WIDTH" GPU0_LABELS " 16");
    assert_line(out, "DCGM_FI_DEV_PCIE_MAX_LINK_GEN" GPU0_LABELS " 5");
    assert_line(out, "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH" GPU0_LABELS " 16");
    assert_line(out, "DCGM_FI_DEV_PCIE_TX_THROUGHPUT" GPU0_LABELS " 1024");
    assert_line(out, "DCGM_FI_DEV_PCIE_RX_THROUGHPUT" GPU0_LABELS " 2048");
    assert_line(out, "DCGM_FI_DEV_PSTATE" GPU0_LABELS " 0");
    assert_line(out, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" GPU0_LABELS " 4");
    assert_line(out, "DCGM_FI_DEV_PERSISTENCE_MODE" GPU0_LABELS " 1");
    assert_line(out, "gpumon_gpu_graphics_clock_mhz" GPU0_LABELS " 1980");
    assert_line(out, "gpumon_gpu_max_graphics_clock_mhz" GPU0_LABELS " 1980");

    assert_line(out, "# TYPE gpumon_gpu_lost gauge");
    assert_line(out, "gpumon_gpu_lost" GPU0_LABELS " 0");
    assert_line(out, "gpumon_gpu_lost" GPU1_LABELS " 0");
    assert_line(out, "gpumon_gpu_lost" GPU2_LABELS " 1");

    free(out);
    gm_snapshot_free(s);
}

static void test_absent_omitted(void **state)
{
    (void)state;
    gm_snapshot *s = rich_snapshot();
    char *out = render(s, &health);

    /* GPU 1 has only utilisation, temperature and power. */
    static const char *const gpu1_absent[] = {
        "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_FB_USED",      "DCGM_FI_DEV_FB_FREE",
        "DCGM_FI_DEV_SM_CLOCK",      "DCGM_FI_DEV_FAN_SPEED",    "DCGM_FI_DEV_PSTATE",
        "DCGM_FI_DEV_ENC_UTIL",      "DCGM_FI_DEV_PCIE_LINK_GEN"};
    for (size_t i = 0; i < sizeof gpu1_absent / sizeof *gpu1_absent; i++) {
        char prefix[256];
        snprintf(prefix, sizeof prefix, "%s{gpu=\"1\"", gpu1_absent[i]);
        assert_no_substr(out, prefix);
    }
    /* The lost GPU shows nothing but gpumon_gpu_lost, stale temperature included. */
    const char *p = out;
    while ((p = strstr(p, "{gpu=\"2\"")) != NULL) {
        const char *line = p;
        while (line > out && line[-1] != '\n')
            line--;
        check_eq(strncmp(line, "gpumon_gpu_lost{", 16), 0);
        p++;
    }
    assert_no_substr(out, " 99\n");
    /* A withheld process memory is not a zero. */
    assert_no_substr(out, "pid=\"99\"");
    /* Absent host metric: its family is left out entirely. */
    assert_no_substr(out, "gpumon_host_swap_used_bytes");
    /* Present zeros stay. */
    assert_line(out, "gpumon_host_swap_total_bytes 0");
    /* No sentinel values anywhere. */
    assert_no_substr(out, "9223372036854775794");
    free(out);

    /* A snapshot with nothing in it renders only the daemon's own metrics. */
    gm_snapshot *empty = gm_snapshot_new();
    snprintf(empty->provider, sizeof empty->provider, "none");
    out = render(empty, NULL);
    assert_no_substr(out, "DCGM_");
    assert_no_substr(out, "gpumon_host_");
    assert_no_substr(out, "gpumon_sampler_");
    assert_no_substr(out, "gpumon_last_sample_timestamp_seconds");
    assert_no_substr(out, "gpumon_process_gpu_memory_bytes");
    assert_line(out, "gpumon_gpus 0");
    assert_line(out, "gpumon_info{version=\"" GM_VERSION "\",provider=\"none\"} 1");
    free(out);
    gm_snapshot_free(empty);
    gm_snapshot_free(s);
}

static void test_host_process_daemon_lines(void **state)
{
    (void)state;
    gm_snapshot *s = rich_snapshot();
    char *out = render(s, &health);

    assert_line(out, "gpumon_host_cpu_utilization_percent 12.3457");
    assert_line(out, "gpumon_host_cpus 2");
    assert_line(out, "gpumon_host_memory_total_bytes 1622999998464");
    assert_line(out, "gpumon_host_memory_used_bytes 12345678901");
    assert_line(out, "gpumon_host_memory_available_bytes 1610654319563");
    assert_line(out, "gpumon_host_load1 0.52");
    assert_line(out, "gpumon_host_load5 1.25");
    assert_line(out, "gpumon_host_load15 2");
    assert_line(out, "gpumon_host_uptime_seconds 1234568");
    assert_line(out, "gpumon_host_cpu_core_utilization_percent{cpu=\"0\"} 50.5");
    assert_line(out, "gpumon_host_cpu_core_utilization_percent{cpu=\"1\"} 0");
    assert_line(out, "gpumon_host_info{hostname=\"node-1\",kernel=\"6.1.0-18-amd64\","
                     "cpu_model=\"AMD EPYC 9654 96-Core Processor\"} 1");

    assert_line(out, "# TYPE gpumon_process_gpu_memory_bytes gauge");
    assert_line(out, "gpumon_process_gpu_memory_bytes{gpu=\"0\",UUID=\"GPU-aaaa\",pid=\"4242\","
                     "type=\"C\",command=\"python3\",user=\"alice\"} 1073741824");
    /* Quote, backslash and newline escaped; the base name is taken after the last slash. */
    assert_line(out, "gpumon_process_gpu_memory_bytes{gpu=\"0\",UUID=\"GPU-aaaa\",pid=\"4243\","
                     "type=\"C\",command=\"we\\\"ird\\\\name\\nx\",user=\"b\\\"ob\"} 536870912");
    /* Command cut to 32 bytes. */
    assert_line(out, "gpumon_process_gpu_memory_bytes{gpu=\"1\",UUID=\"GPU-bbbb\",pid=\"100\","
                     "type=\"C\",command=\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"} 1048576");
    /* Malformed UTF-8 becomes U+FFFD instead of breaking the scrape. */
    assert_line(out, "gpumon_process_gpu_memory_bytes{gpu=\"1\",UUID=\"GPU-bbbb\",pid=\"101\","
                     "type=\"C\",command=\"\xEF\xBF\xBD\xEF\xBF\xBD"
                     "bad-utf8\",user=\"carol\"} 2097152");
    assert_line(out, "gpumon_processes_dropped 0");

    assert_line(out, "gpumon_info{version=\"" GM_VERSION "\",provider=\"nvml\","
                     "driver_version=\"550.54.15\",cuda_version=\"12.4\"} 1");
    assert_line(out, "gpumon_gpus 3");
    assert_line(out, "gpumon_last_sample_timestamp_seconds 1764117772.123");
    assert_line(out, "# TYPE gpumon_sampler_samples_total counter");
    assert_line(out, "gpumon_sampler_samples_total 1000");
    assert_line(out, "gpumon_sampler_errors_total 2");
    assert_line(out, "gpumon_sampler_last_duration_seconds 0.0123");
    assert_line(out, "gpumon_uptime_seconds 3600.5");
    free(out);

    /* Options: Hostname override, no per-core series, unknown durations omitted. */
    gm_prom_health h2 = health;
    h2.hostname = "k8s-node-7";
    h2.no_per_core = true;
    h2.last_sample_duration_s = -1;
    h2.uptime_s = -1;
    out = render(s, &h2);
    assert_no_substr(out, "gpumon_host_cpu_core_utilization_percent");
    assert_no_substr(out, "Hostname=\"node-1\"");
    assert_no_substr(out, "gpumon_sampler_last_duration_seconds");
    assert_no_substr(out, "gpumon_uptime_seconds");
    assert_non_null(strstr(out, "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-aaaa\","
                                "pci_bus_id=\"00000000:17:00.0\",device=\"nvidia0\","
                                "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"k8s-node-7\","));
    free(out);
    gm_snapshot_free(s);
}

/* Kubernetes: pod, namespace and container on every series of a GPU one container holds and on
 * the processes named from it, as dcgm-exporter labels them; the cgroup's IDs on processes;
 * nothing on what is not known. */
static void test_k8s_labels(void **state)
{
    (void)state;
    gm_snapshot *s = rich_snapshot();
    gm_gpu *g = &s->gpus[0];
    g->k8s_known = true;
    g->k8s_containers = 1;
    snprintf(g->k8s.pod, sizeof g->k8s.pod, "trainer-0");
    snprintf(g->k8s.pod_namespace, sizeof g->k8s.pod_namespace, "ml");
    snprintf(g->k8s.container, sizeof g->k8s.container, "main");
    s->gpus[1].k8s_known = true;
    s->gpus[1].k8s_containers = 2; /* shared: no names */
    gm_process *p = &s->procs[0];
    p->k8s = g->k8s;
    snprintf(p->pod_uid, sizeof p->pod_uid, "0e886e9a-3879-45f9-b44d-86ef9df03224");
    snprintf(p->container_id, sizeof p->container_id, "244a65edefdffe31685c42317c9054e7");
    snprintf(s->procs[1].pod_uid, sizeof s->procs[1].pod_uid,
             "15513b48-e7a5-48fc-b9e3-92f713f36504"); /* in a pod nobody named */
    char *out = render(s, &health);
    const char *gpu0 = "{gpu=\"0\",UUID=\"GPU-aaaa\",pci_bus_id=\"00000000:17:00.0\","
                       "device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\","
                       "Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"550.54.15\","
                       "container=\"main\",namespace=\"ml\",pod=\"trainer-0\"";
    char want[1024];
    snprintf(want, sizeof want, "DCGM_FI_DEV_GPU_TEMP%s} 65", gpu0);
    assert_line(out, want);
    assert_line(out, "gpumon_process_gpu_memory_bytes{gpu=\"0\",UUID=\"GPU-aaaa\",pid=\"4242\","
                     "type=\"C\",command=\"python3\",user=\"alice\",container=\"main\","
                     "namespace=\"ml\",pod=\"trainer-0\","
                     "pod_uid=\"0e886e9a-3879-45f9-b44d-86ef9df03224\","
                     "container_id=\"244a65edefdffe31685c42317c9054e7\"} 1073741824");
    assert_non_null(strstr(out,
                           "pid=\"4243\",type=\"C\",command=\"we\\\"ird\\\\name\\nx\","
                           "user=\"b\\\"ob\",pod_uid=\"15513b48-e7a5-48fc-b9e3-92f713f36504\"}"));
    /* GPU 1 is shared, GPU 2 unknown: no pod label anywhere but on GPU 0 and pid 4242. */
    size_t pods = 0;
    for (const char *q = out; (q = strstr(q, "pod=\"")) != NULL; q++)
        pods++;
    size_t gpu0_series = 0;
    for (const char *q = out; (q = strstr(q, gpu0)) != NULL; q++)
        gpu0_series++;
    check_gt(gpu0_series, 10);
    assert_int_equal(pods, gpu0_series + 1);
    free(out);
    gm_snapshot_free(s);
}

/* Each family: one HELP, one TYPE, both before its samples, and all its samples contiguous
 * (the text format forbids interleaving families; promtool 2.42 does not check it). */
static void test_families_grouped(void **state)
{
    (void)state;
    gm_snapshot *s = rich_snapshot();
    char *out = render(s, &health);

    char seen[256][96];
    size_t nseen = 0;
    char current[96] = "";
    bool typed = false;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        char name[96];
        if (strncmp(line, "# HELP ", 7) == 0 || strncmp(line, "# TYPE ", 7) == 0) {
            sscanf(line + 7, "%95s", name);
            if (line[2] == 'H') {
                for (size_t i = 0; i < nseen; i++)
                    if (strcmp(seen[i], name) == 0)
                        fail_msg("family %s declared twice", name);
                check_lt(nseen, 256);
                snprintf(seen[nseen++], sizeof seen[0], "%s", name);
                snprintf(current, sizeof current, "%s", name);
                typed = false;
            } else {
                assert_string_equal(name, current);
                assert_false(typed);
                typed = true;
            }
            continue;
        }
        check_ne(line[0], '#');
        size_t n = strcspn(line, "{ ");
        check_lt(n, sizeof name);
        memcpy(name, line, n);
        name[n] = '\0';
        /* A summary's samples are <family>_sum and <family>_count. */
        size_t cl = strlen(current);
        bool suffixed = strncmp(name, current, cl) == 0 &&
                        (strcmp(name + cl, "_sum") == 0 || strcmp(name + cl, "_count") == 0);
        if (strcmp(name, current) != 0 && !suffixed)
            fail_msg("sample of %s under family %s", name, current);
        assert_true(typed);
    }
    /* DCGM families, process, host and daemon families all present. */
    check_gt(nseen, 40);
    free(out);
    gm_snapshot_free(s);
}

/* Runs promtool on text; returns its exit status and copies its output into msg. */
static int promtool_check(const char *text, char *msg, size_t msg_len)
{
    char path[] = "/tmp/gm_prom_XXXXXX";
    int fd = mkstemp(path);
    check_ge(fd, 0);
    size_t n = strlen(text);
    assert_int_equal(write(fd, text, n), (ssize_t)n);
    close(fd);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "promtool check metrics < %s 2>&1", path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t got = fread(msg, 1, msg_len - 1, p);
    msg[got] = '\0';
    /* Drain the rest so promtool is not killed by SIGPIPE. */
    char sink[4096];
    while (fread(sink, 1, sizeof sink, p) > 0)
        ;
    int status = pclose(p);
    unlink(path);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static bool promtool_present(void)
{
    return system("command -v promtool >/dev/null 2>&1") == 0;
}

/* promtool exits 0 when clean, 3 on lint problems only, 1 on a parse error ("error while
 * linting: text format parsing error..."). Lint problems expected here are dcgm-exporter's own
 * naming (camelCase labels, counters without _total); anything else fails. */
static void test_promtool_accepts(void **state)
{
    (void)state;
    if (!promtool_present()) {
        print_message("promtool not found: skipping the promtool check\n");
        skip();
    }
    gm_snapshot *s = rich_snapshot();
    char *out = render(s, &health);
    char msg[16384];
    int rc = promtool_check(out, msg, sizeof msg);
    if (rc != 0 && rc != 3)
        fail_msg("promtool exit %d:\n%s", rc, msg);
    assert_null(strstr(msg, "error while linting"));
    assert_null(strstr(msg, "parsing error"));
    for (char *line = strtok(msg, "\n"); line; line = strtok(NULL, "\n")) {
        bool expected = strstr(line, "should be written in 'snake_case' not 'camelCase'") ||
                        (strncmp(line, "DCGM_FI_", 8) == 0 &&
                         strstr(line, "counter metrics should have \"_total\" suffix"));
        if (!expected)
            fail_msg("unexpected promtool problem: %s", line);
    }
    free(out);

    /* And the harness itself tells a broken exposition apart. */
    rc = promtool_check("broken{a=\"b\n} 1\n", msg, sizeof msg);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(msg, "error while linting"));
    gm_snapshot_free(s);
}

/* Many GPUs, processes and cores: the buffer grows past its first guess without loss. */
static void test_large_snapshot(void **state)
{
    (void)state;
    gm_snapshot *s = gm_snapshot_new();
    assert_non_null(s);
    s->gpu_count = GM_MAX_GPUS;
    for (unsigned i = 0; i < GM_MAX_GPUS; i++) {
        gm_gpu *g = &s->gpus[i];
        g->index = i;
        memset(g->name, '"', sizeof g->name - 1); /* every byte escaped: doubles the label */
        snprintf(g->uuid, sizeof g->uuid, "GPU-%04u", i);
        for (int m = 0; m < GM_M__COUNT; m++)
            gm_gpu_set(g, (gm_metric)m, i);
    }
    s->host_valid = true;
    s->host.core_count = GM_MAX_CPUS;
    for (uint32_t pid = 1; pid <= GM_MAX_PROCS; pid++)
        add_proc(s, pid % GM_MAX_GPUS, pid, true, pid, "user", "/a/b/c d");
    char *out = render(s, &health);
    assert_line(out, "gpumon_host_cpu_core_utilization_percent{cpu=\"1023\"} 0");
    assert_non_null(strstr(out, "gpumon_process_gpu_memory_bytes{gpu=\"0\",UUID=\"GPU-0000\","
                                "pid=\"4096\",type=\"C\",command=\"c\",user=\"user\"} 4096\n"));
    assert_non_null(strstr(out, "DCGM_FI_DEV_GPU_UTIL{gpu=\"63\",UUID=\"GPU-0063\""));
    if (promtool_present()) {
        char msg[4096];
        int rc = promtool_check(out, msg, sizeof msg);
        if (rc != 0 && rc != 3)
            fail_msg("promtool exit %d:\n%s", rc, msg);
    }
    free(out);
    gm_snapshot_free(s);
}

/* DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL: a rate from the previous reading of each GPU, in MB/s;
 * absent on the first reading, on a GPU without NVLink counters and after a counter reset; 0
 * once the counters stood still past the idle time. */
static void test_nvlink_bandwidth_rate(void **state)
{
    (void)state;
    gm_snapshot *s = rich_snapshot();
    gm_prom_rates *r = gm_prom_rates_new();
    assert_non_null(r);
    gm_gpu *g = &s->gpus[0];
    gm_gpu *g1 = &s->gpus[1];
    assert_false(gm_gpu_has(g1, GM_M_NVLINK_TX_KIB)); /* GPU 1: no NVLink */
    gm_gpu_set(g, GM_M_NVLINK_TX_KIB, 1000);
    gm_gpu_set(g, GM_M_NVLINK_RX_KIB, 1000);
    gm_prom_health h = {.last_sample_duration_s = -1, .uptime_s = -1};
    gm_prom_rates_update(r, s, &h);
    char *out = render(s, &h);
    assert_null(strstr(out, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL")); /* first reading */
    free(out);

    /* 2 s later 4 000 000 KiB more (sent and received together): 2048 MB/s. */
    s->time_ms += 2000;
    gm_gpu_set(g, GM_M_NVLINK_TX_KIB, 2001000);
    gm_gpu_set(g, GM_M_NVLINK_RX_KIB, 2001000);
    gm_prom_rates_update(r, s, &h);
    out = render(s, &h);
    assert_line(out, "# TYPE DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL gauge");
    assert_line(out, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL" GPU0_LABELS " 2048");
    assert_null(strstr(out, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{gpu=\"1\""));
    free(out);

    /* Unchanged one sample later (not read again yet): the rate stands. */
    s->time_ms += 1000;
    gm_prom_rates_update(r, s, &h);
    out = render(s, &h);
    assert_line(out, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL" GPU0_LABELS " 2048");
    free(out);

    /* Unchanged past the idle time: 0. */
    s->time_ms += GM_PROM_NVLINK_IDLE_MS;
    gm_prom_rates_update(r, s, &h);
    out = render(s, &h);
    assert_line(out, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL" GPU0_LABELS " 0");
    free(out);

    /* A counter reset (lower reading): absent until the next reading. */
    s->time_ms += 1000;
    gm_gpu_set(g, GM_M_NVLINK_TX_KIB, 5);
    gm_prom_rates_update(r, s, &h);
    out = render(s, &h);
    assert_null(strstr(out, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"));
    free(out);

    /* Without health (no daemon state): never rendered. */
    out = render(s, NULL);
    assert_null(strstr(out, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"));
    free(out);
    gm_prom_rates_free(r);
    gm_snapshot_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dcgm_lines),
        cmocka_unit_test(test_absent_omitted),
        cmocka_unit_test(test_host_process_daemon_lines),
        cmocka_unit_test(test_families_grouped),
        cmocka_unit_test(test_k8s_labels),
        cmocka_unit_test(test_promtool_accepts),
        cmocka_unit_test(test_large_snapshot),
        cmocka_unit_test(test_call_stats),
        cmocka_unit_test(test_nvlink_bandwidth_rate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
