/* test_compat.c - the prototypes' JSON shapes: exact documents, nulls for absent values, the
 * P2P matrix (the PCIe bandwidth table they use is tested in test_metrics.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "server/compat.h"

/* GPU 0 complete, GPU 1 partial, GPU 2 lost (with a stale bit that must not show), a host. */
static gm_snapshot *snapshot(void)
{
    gm_snapshot *s = gm_snapshot_new();
    assert_non_null(s);
    s->time_ms = 1764117772123; /* 2025-11-26T00:42:52.123Z */
    snprintf(s->provider, sizeof s->provider, "nvml");
    snprintf(s->driver_version, sizeof s->driver_version, "550.54.15");
    snprintf(s->cuda_version, sizeof s->cuda_version, "12.4");
    s->gpu_count = 3;

    gm_gpu *g = &s->gpus[0];
    g->index = 0;
    snprintf(g->name, sizeof g->name, "NVIDIA H100 80GB HBM3");
    snprintf(g->uuid, sizeof g->uuid, "GPU-aaaa");
    snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "00000000:17:00.0");
    gm_gpu_set(g, GM_M_UTIL_GPU_PCT, 74.6);                      /* int key: rounds to 75 */
    gm_gpu_set(g, GM_M_MEM_TOTAL_BYTES, 85520809984.0);          /* 81559 MiB */
    gm_gpu_set(g, GM_M_MEM_USED_BYTES, 8589934592.0 + 524288.0); /* 8192.5 MiB */
    gm_gpu_set(g, GM_M_MEM_FREE_BYTES, 76385419264.0);           /* 72846.8 MiB */
    gm_gpu_set(g, GM_M_TEMP_C, 65);
    gm_gpu_set(g, GM_M_POWER_MW, 220500);
    gm_gpu_set(g, GM_M_POWER_LIMIT_MW, 700000);
    gm_gpu_set(g, GM_M_CLOCK_GR_MHZ, 1980);
    gm_gpu_set(g, GM_M_CLOCK_MEM_MHZ, 2619);
    gm_gpu_set(g, GM_M_PCIE_GEN_CUR, 4);
    gm_gpu_set(g, GM_M_PCIE_GEN_MAX, 5);
    gm_gpu_set(g, GM_M_PCIE_WIDTH_CUR, 16);
    gm_gpu_set(g, GM_M_PCIE_WIDTH_MAX, 16);
    gm_gpu_set(g, GM_M_PERSISTENCE_MODE, 1);

    g = &s->gpus[1];
    g->index = 1;
    snprintf(g->name, sizeof g->name, "Tesla T4");
    snprintf(g->uuid, sizeof g->uuid, "GPU-bbbb");
    snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "00000000:65:00.0");
    gm_gpu_set(g, GM_M_UTIL_GPU_PCT, 0);
    gm_gpu_set(g, GM_M_TEMP_C, 41);
    gm_gpu_set(g, GM_M_POWER_MW, 27123);
    gm_gpu_set(g, GM_M_PCIE_GEN_CUR, 3); /* width unknown: no bandwidth */
    gm_gpu_set(g, GM_M_PERSISTENCE_MODE, 0);

    g = &s->gpus[2];
    g->index = 2;
    snprintf(g->name, sizeof g->name, "NVIDIA A100");
    snprintf(g->uuid, sizeof g->uuid, "GPU-cccc");
    g->lost = true;
    gm_gpu_set(g, GM_M_TEMP_C, 99);

    s->host_valid = true;
    gm_host *h = &s->host;
    snprintf(h->hostname, sizeof h->hostname, "node-1");
    snprintf(h->kernel, sizeof h->kernel, "6.1.0-18-amd64");
    snprintf(h->cpu_model, sizeof h->cpu_model, "AMD EPYC 9654 96-Core Processor");
    gm_host_set(h, GM_H_CPU_UTIL_PCT, 12.3456);
    gm_host_set(h, GM_H_CPU_COUNT, 192);
    gm_host_set(h, GM_H_MEM_TOTAL_BYTES, 1622999998464.0); /* 1547813.4 MiB */
    gm_host_set(h, GM_H_MEM_USED_BYTES, 405749999616.0);   /* 25 %, 386953.35 MiB */
    gm_host_set(h, GM_H_LOAD1, 0.5);
    gm_host_set(h, GM_H_LOAD5, 1.25);
    /* LOAD15 and UPTIME absent */
    return s;
}

/* Compares j with the JSON text expected, printing both on a mismatch. */
static void assert_json(json_t *j, const char *expected)
{
    assert_non_null(j);
    json_error_t e;
    json_t *want = json_loads(expected, 0, &e);
    if (!want)
        fail_msg("bad expected JSON at %d: %s", e.position, e.text);
    if (!json_equal(j, want)) {
        char *got = json_dumps(j, JSON_INDENT(1) | JSON_SORT_KEYS);
        char *exp = json_dumps(want, JSON_INDENT(1) | JSON_SORT_KEYS);
        fail_msg("got:\n%s\nexpected:\n%s", got, exp);
    }
    json_decref(want);
}

static void test_gpu_metrics(void **state)
{
    (void)state;
    gm_snapshot *s = snapshot();
    json_t *j = gm_compat_gpu_metrics(s);
    assert_json(j,
                "{\"timestamp\": \"2025-11-26T00:42:52.123Z\", \"gpus\": ["
                "{\"id\": \"gpu-0\", \"name\": \"NVIDIA H100 80GB HBM3\", \"uuid\": \"GPU-aaaa\","
                " \"utilization\": 75,"
                " \"memory\": {\"total\": 81559, \"used\": 8192, \"free\": 72846},"
                " \"temperature\": 65, \"power_usage\": 220.5,"
                " \"clock_speeds\": {\"graphics\": 1980, \"memory\": 2619}},"
                "{\"id\": \"gpu-1\", \"name\": \"Tesla T4\", \"uuid\": \"GPU-bbbb\","
                " \"utilization\": 0,"
                " \"memory\": {\"total\": null, \"used\": null, \"free\": null},"
                " \"temperature\": 41, \"power_usage\": 27.123,"
                " \"clock_speeds\": {\"graphics\": null, \"memory\": null}},"
                "{\"id\": \"gpu-2\", \"name\": \"NVIDIA A100\", \"uuid\": \"GPU-cccc\","
                " \"utilization\": null,"
                " \"memory\": {\"total\": null, \"used\": null, \"free\": null},"
                " \"temperature\": null, \"power_usage\": null,"
                " \"clock_speeds\": {\"graphics\": null, \"memory\": null}}]}");
    /* Key order as the seed prints it, through the project's serialiser. */
    char *text = gm_json_dump(j, NULL);
    assert_non_null(text);
    assert_non_null(strstr(text, "{\"timestamp\":\"2025-11-26T00:42:52.123Z\",\"gpus\":[{\"id\":"
                                 "\"gpu-0\",\"name\":\"NVIDIA H100 80GB HBM3\",\"uuid\":"
                                 "\"GPU-aaaa\",\"utilization\":75,\"memory\":{\"total\":81559,"));
    free(text);
    json_decref(j);

    /* No GPU at all: an empty list, not an error. */
    gm_snapshot *empty = gm_snapshot_new();
    j = gm_compat_gpu_metrics(empty);
    assert_json(j, "{\"timestamp\": \"1970-01-01T00:00:00.000Z\", \"gpus\": []}");
    json_decref(j);
    gm_snapshot_free(empty);
    gm_snapshot_free(s);
}

static void test_ws_metrics(void **state)
{
    (void)state;
    gm_snapshot *s = snapshot();
    json_t *j = gm_compat_ws_metrics(s);
    assert_json(j,
                "{\"timestamp\": \"2025-11-26T00:42:52.123Z\", \"gpu_metrics\": ["
                "{\"gpu_index\": 0, \"name\": \"NVIDIA H100 80GB HBM3\", \"gpu_utilization\": 74.6,"
                " \"memory_used\": 8192, \"memory_total\": 81559, \"memory_utilization\": 10.04,"
                " \"temperature\": 65, \"power_draw\": 220.5, \"power_limit\": 700},"
                "{\"gpu_index\": 1, \"name\": \"Tesla T4\", \"gpu_utilization\": 0,"
                " \"memory_used\": null, \"memory_total\": null, \"memory_utilization\": null,"
                " \"temperature\": 41, \"power_draw\": 27.123, \"power_limit\": null},"
                "{\"gpu_index\": 2, \"name\": \"NVIDIA A100\", \"gpu_utilization\": null,"
                " \"memory_used\": null, \"memory_total\": null, \"memory_utilization\": null,"
                " \"temperature\": null, \"power_draw\": null, \"power_limit\": null}],"
                " \"system_metrics\": {\"cpu_percent\": 12.35, \"memory_percent\": 25,"
                " \"memory_used\": 386953, \"memory_total\": 1547813,"
                " \"load_average\": [0.5, 1.25, null], \"uptime_seconds\": null}}");
    json_decref(j);

    /* Without host metrics the system object keeps its keys, all null. */
    s->host_valid = false;
    j = gm_compat_ws_metrics(s);
    assert_json(json_object_get(j, "system_metrics"),
                "{\"cpu_percent\": null, \"memory_percent\": null, \"memory_used\": null,"
                " \"memory_total\": null, \"load_average\": [null, null, null],"
                " \"uptime_seconds\": null}");
    json_decref(j);
    gm_snapshot_free(s);
}

static void test_stats(void **state)
{
    (void)state;
    gm_snapshot *s = snapshot();
    gm_topology *t = calloc(1, sizeof *t);
    assert_non_null(t);
    t->known = true;
    t->gpu_count = 2;
    for (int c = 0; c < GM_P2P__COUNT; c++) {
        t->p2p[0][1][c] = GM_P2P_OK;
        t->p2p[1][0][c] = GM_P2P_OK;
    }
    t->p2p[0][1][GM_P2P_NVLINK] = GM_P2P_NOT_SUPPORTED;
    t->p2p[1][0][GM_P2P_NVLINK] = GM_P2P_NOT_SUPPORTED;
    t->p2p[0][1][GM_P2P_ATOMICS] = GM_P2P_CHIPSET_NOT_SUPPORTED;
    t->p2p[1][0][GM_P2P_ATOMICS] = GM_P2P_IOH_TOPOLOGY_NOT_SUPPORTED;
    t->p2p[1][0][GM_P2P_WRITE] = GM_P2P_DISABLED_BY_REGKEY;
    t->p2p[0][1][GM_P2P_PCI] = GM_P2P_UNKNOWN;
    t->p2p[1][0][GM_P2P_PCI] = GM_P2P_GPU_NOT_SUPPORTED;

    json_t *j = gm_compat_stats(s, t);
    assert_json(
        j, "{\"timestamp\": \"2025-11-26T00:42:52.123Z\", \"timestamp_ms\": 1764117772123,"
           " \"provider\": \"nvml\", \"driver_version\": \"550.54.15\", \"cuda_version\": \"12.4\","
           " \"nvml_version\": null,"
           " \"system\": {\"hostname\": \"node-1\", \"kernel\": \"6.1.0-18-amd64\","
           "  \"processor_name\": \"AMD EPYC 9654 96-Core Processor\", \"cpu_count\": 192,"
           "  \"memory_total_bytes\": 1622999998464},"
           " \"gpu_count\": 3, \"gpus\": ["
           "{\"index\": 0, \"name\": \"NVIDIA H100 80GB HBM3\", \"uuid\": \"GPU-aaaa\","
           " \"pci_bus_id\": \"00000000:17:00.0\", \"lost\": false,"
           " \"memory_total_mib\": 81559, \"memory_used_mib\": 8192, \"power_draw_w\": 220.5,"
           " \"power_limit_w\": 700, \"persistence_mode\": true,"
           " \"pcie\": {\"gen_current\": 4, \"gen_max\": 5, \"width_current\": 16,"
           "  \"width_max\": 16, \"bandwidth_current_gb_per_s\": 31.504,"
           "  \"bandwidth_max_gb_per_s\": 63.008}},"
           "{\"index\": 1, \"name\": \"Tesla T4\", \"uuid\": \"GPU-bbbb\","
           " \"pci_bus_id\": \"00000000:65:00.0\", \"lost\": false,"
           " \"memory_total_mib\": null, \"memory_used_mib\": null, \"power_draw_w\": 27.123,"
           " \"power_limit_w\": null, \"persistence_mode\": false,"
           " \"pcie\": {\"gen_current\": 3, \"gen_max\": null, \"width_current\": null,"
           "  \"width_max\": null, \"bandwidth_current_gb_per_s\": null,"
           "  \"bandwidth_max_gb_per_s\": null}},"
           "{\"index\": 2, \"name\": \"NVIDIA A100\", \"uuid\": \"GPU-cccc\","
           " \"pci_bus_id\": null, \"lost\": true,"
           " \"memory_total_mib\": null, \"memory_used_mib\": null, \"power_draw_w\": null,"
           " \"power_limit_w\": null, \"persistence_mode\": null,"
           " \"pcie\": {\"gen_current\": null, \"gen_max\": null, \"width_current\": null,"
           "  \"width_max\": null, \"bandwidth_current_gb_per_s\": null,"
           "  \"bandwidth_max_gb_per_s\": null}}],"
           " \"p2p_known\": true,"
           " \"p2p\": {\"gpus\": [0, 1],"
           "  \"read\": [[\"X\", \"OK\"], [\"OK\", \"X\"]],"
           "  \"write\": [[\"X\", \"OK\"], [\"DR\", \"X\"]],"
           "  \"nvlink\": [[\"X\", \"NS\"], [\"NS\", \"X\"]],"
           "  \"atomics\": [[\"X\", \"CNS\"], [\"TNS\", \"X\"]],"
           "  \"pci\": [[\"X\", \"U\"], [\"GNS\", \"X\"]]}}");
    json_decref(j);

    /* Unknown topology, or none at all: no matrix, said so. */
    t->known = false;
    j = gm_compat_stats(s, t);
    assert_true(json_is_false(json_object_get(j, "p2p_known")));
    assert_true(json_is_null(json_object_get(j, "p2p")));
    json_decref(j);
    j = gm_compat_stats(s, NULL);
    assert_true(json_is_false(json_object_get(j, "p2p_known")));
    assert_true(json_is_null(json_object_get(j, "p2p")));
    json_decref(j);

    /* Host metrics absent: its numbers are null. */
    s->host_valid = false;
    j = gm_compat_stats(s, NULL);
    json_t *sys = json_object_get(j, "system");
    assert_true(json_is_null(json_object_get(sys, "cpu_count")));
    assert_true(json_is_null(json_object_get(sys, "memory_total_bytes")));
    json_decref(j);

    free(t);
    gm_snapshot_free(s);
}

/* A garbled name (not UTF-8) still yields a document, with U+FFFD in place of the bad bytes. */
static void test_bad_utf8(void **state)
{
    (void)state;
    gm_snapshot *s = snapshot();
    snprintf(s->gpus[0].name, sizeof s->gpus[0].name, "GPU\xff\xfe-x");
    snprintf(s->host.hostname, sizeof s->host.hostname, "host\xc3");
    json_t *j = gm_compat_gpu_metrics(s);
    assert_non_null(j);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(j, "gpus"), 0), "name")),
        "GPU\xEF\xBF\xBD\xEF\xBF\xBD-x");
    json_decref(j);
    j = gm_compat_stats(s, NULL);
    assert_non_null(j);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(j, "system"), "hostname")),
        "host\xEF\xBF\xBD");
    json_decref(j);
    gm_snapshot_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_metrics),
        cmocka_unit_test(test_ws_metrics),
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_bad_utf8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
