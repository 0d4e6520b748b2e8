/* test_json.c - the inventory building blocks in core/json.h that `gpumon snapshot` and /stats
 * share: numbers, text fields, host values, PCIe bandwidth and the P2P matrix. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"

/* Compact text of j (consumed), for exact comparisons. */
static char *dump(json_t *j)
{
    assert_non_null(j);
    char *s = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(12) | JSON_ENCODE_ANY);
    json_decref(j);
    assert_non_null(s);
    return s;
}

static void assert_dump(json_t *j, const char *want)
{
    char *got = dump(j);
    assert_string_equal(got, want);
    free(got);
}

static void test_number(void **state)
{
    (void)state;
    assert_dump(gm_json_number(45.0), "45");
    assert_dump(gm_json_number(-3.0), "-3");
    assert_dump(gm_json_number(0.5), "0.5");
    assert_dump(gm_json_number(85520809984.0), "85520809984");
    /* Past 2^53 a double is no exact integer any more: it stays a real. */
    json_t *big = gm_json_number(1e17);
    assert_true(json_is_real(big));
    json_decref(big);
    assert_dump(gm_json_number(NAN), "null");
    assert_dump(gm_json_number(INFINITY), "null");
}

static void test_text(void **state)
{
    (void)state;
    char name[8] = "H100";
    assert_dump(gm_json_text(name, sizeof name), "\"H100\"");
    assert_dump(gm_json_text("", 8), "null");
    /* Not NUL-terminated within max: max bytes are taken. */
    char full[4] = {'a', 'b', 'c', 'd'};
    assert_dump(gm_json_text(full, sizeof full), "\"abcd\"");
    /* Malformed UTF-8 keeps its ASCII; each other byte becomes U+FFFD. */
    assert_dump(gm_json_text("ab\xff\xfe"
                             "c",
                             16),
                "\"ab\xEF\xBF\xBD\xEF\xBF\xBD"
                "c\"");
    /* Well-formed UTF-8 passes through. */
    assert_dump(gm_json_text("caf\xC3\xA9", 16), "\"caf\xC3\xA9\"");
}

static void test_str_repairs_outside_bytes(void **state)
{
    (void)state;
    /* What jansson refuses (its json_string returns NULL) comes back repaired, never NULL. */
    assert_null(json_string("caf\xe9.txt"));
    assert_dump(gm_json_str("caf\xe9.txt"), "\"caf\xEF\xBF\xBD.txt\"");
    assert_dump(gm_json_str("\xff\xfe"), "\"\xEF\xBF\xBD\xEF\xBF\xBD\"");
    assert_dump(gm_json_str("caf\xC3\xA9"), "\"caf\xC3\xA9\"");
    assert_dump(gm_json_str(""), "\"\"");
    /* A character cut by n is repaired too. */
    assert_dump(gm_json_strn("caf\xC3\xA9", 4), "\"caf\xEF\xBF\xBD\"");
    /* Any length: a long command line of stray bytes is kept whole, not cut at a buffer. */
    char big[20001];
    memset(big, 0xe9, sizeof big - 1);
    big[sizeof big - 1] = '\0';
    json_t *j = gm_json_str(big);
    assert_non_null(j);
    assert_int_equal(json_string_length(j), 3 * (sizeof big - 1));
    json_decref(j);
}

static void test_host_number(void **state)
{
    (void)state;
    gm_snapshot *s = gm_snapshot_new();
    assert_non_null(s);
    gm_host_set(&s->host, GM_H_CPU_COUNT, 64);
    /* A host that was not read says nothing, whatever its bits. */
    assert_dump(gm_json_host_number(s, GM_H_CPU_COUNT), "null");
    s->host_valid = true;
    assert_dump(gm_json_host_number(s, GM_H_CPU_COUNT), "64");
    assert_dump(gm_json_host_number(s, GM_H_MEM_TOTAL_BYTES), "null"); /* absent */
    gm_snapshot_free(s);
}

static void test_pcie_gbps(void **state)
{
    (void)state;
    gm_gpu g;
    memset(&g, 0, sizeof g);
    assert_dump(gm_json_pcie_gbps(&g, GM_M_PCIE_GEN_CUR, GM_M_PCIE_WIDTH_CUR), "null");
    gm_gpu_set(&g, GM_M_PCIE_GEN_CUR, 4);
    assert_dump(gm_json_pcie_gbps(&g, GM_M_PCIE_GEN_CUR, GM_M_PCIE_WIDTH_CUR), "null");
    gm_gpu_set(&g, GM_M_PCIE_WIDTH_CUR, 16);
    assert_dump(gm_json_pcie_gbps(&g, GM_M_PCIE_GEN_CUR, GM_M_PCIE_WIDTH_CUR), "31.504");
    gm_gpu_set(&g, GM_M_PCIE_GEN_MAX, 9); /* a generation the table does not know */
    gm_gpu_set(&g, GM_M_PCIE_WIDTH_MAX, 16);
    assert_dump(gm_json_pcie_gbps(&g, GM_M_PCIE_GEN_MAX, GM_M_PCIE_WIDTH_MAX), "null");
    g.lost = true; /* a lost GPU's last bits are stale */
    assert_dump(gm_json_pcie_gbps(&g, GM_M_PCIE_GEN_CUR, GM_M_PCIE_WIDTH_CUR), "null");
}

static void test_p2p_cap_names(void **state)
{
    (void)state;
    assert_string_equal(gm_json_p2p_cap_name(GM_P2P_READ), "read");
    assert_string_equal(gm_json_p2p_cap_name(GM_P2P_WRITE), "write");
    assert_string_equal(gm_json_p2p_cap_name(GM_P2P_NVLINK), "nvlink");
    assert_string_equal(gm_json_p2p_cap_name(GM_P2P_ATOMICS), "atomics");
    assert_string_equal(gm_json_p2p_cap_name(GM_P2P_PCI), "pci");
    assert_null(gm_json_p2p_cap_name(GM_P2P__COUNT));
}

static void test_p2p(void **state)
{
    (void)state;
    gm_snapshot *s = gm_snapshot_new();
    gm_topology *t = calloc(1, sizeof *t);
    assert_non_null(s);
    assert_non_null(t);
    /* Unknown topology, or none: null. */
    assert_dump(gm_json_p2p(s, NULL), "null");
    assert_dump(gm_json_p2p(s, t), "null");

    /* Rows carry driver indices in snapshot order; a topology row past the snapshot's GPUs is
     * named by its position. */
    s->gpu_count = 1;
    s->gpus[0].index = 3;
    t->known = true;
    t->gpu_count = 2;
    for (int c = 0; c < GM_P2P__COUNT; c++) {
        t->p2p[0][1][c] = GM_P2P_OK;
        t->p2p[1][0][c] = GM_P2P_OK;
    }
    t->p2p[0][1][GM_P2P_NVLINK] = GM_P2P_NOT_SUPPORTED;
    t->p2p[1][0][GM_P2P_WRITE] = GM_P2P_DISABLED_BY_REGKEY;
    t->p2p[0][1][GM_P2P_PCI] = 200; /* out of range: unknown */
    assert_dump(gm_json_p2p(s, t), "{\"gpus\":[3,1],"
                                   "\"read\":[[\"X\",\"OK\"],[\"OK\",\"X\"]],"
                                   "\"write\":[[\"X\",\"OK\"],[\"DR\",\"X\"]],"
                                   "\"nvlink\":[[\"X\",\"NS\"],[\"OK\",\"X\"]],"
                                   "\"atomics\":[[\"X\",\"OK\"],[\"OK\",\"X\"]],"
                                   "\"pci\":[[\"X\",\"U\"],[\"OK\",\"X\"]]}");
    free(t);
    gm_snapshot_free(s);
}

/* Found by fuzz_smi_csv: text from nvidia-smi (or /proc) that is not UTF-8 made json_string
 * refuse it, and with it the whole GPU, process or snapshot: /api/gpus went empty. */
static void test_snapshot_text_not_utf8(void **state)
{
    (void)state;
    gm_snapshot *s = gm_snapshot_new();
    assert_non_null(s);
    snprintf(s->provider, sizeof s->provider, "nvidia-smi");
    snprintf(s->driver_version, sizeof s->driver_version, "580.\xff");
    snprintf(s->host.hostname, sizeof s->host.hostname, "n\xe9ud");
    s->host_valid = true;
    s->gpu_count = 1;
    gm_gpu *g = &s->gpus[0];
    snprintf(g->name, sizeof g->name, "NVIDIA \xc3");
    snprintf(g->uuid, sizeof g->uuid, "GPU-\x80");
    gm_process p = {.gpu_index = 0, .pid = 42, .type = GM_PROC_COMPUTE};
    snprintf(p.user, sizeof p.user, "\xe9");
    snprintf(p.command, sizeof p.command, "python caf\xe9.py");
    assert_true(gm_snapshot_add_process(s, &p));

    json_t *j = gm_json_snapshot(s);
    assert_non_null(j);
    const json_t *gj = json_array_get(json_object_get(j, "gpus"), 0);
    assert_non_null(gj);
    assert_string_equal(json_string_value(json_object_get(gj, "name")), "NVIDIA \xef\xbf\xbd");
    assert_string_equal(json_string_value(json_object_get(gj, "uuid")), "GPU-\xef\xbf\xbd");
    assert_string_equal(json_string_value(json_object_get(j, "driver_version")),
                        "580.\xef\xbf\xbd");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(j, "system"), "hostname")),
        "n\xef\xbf\xbdud");
    const json_t *pj = json_array_get(json_object_get(gj, "processes"), 0);
    assert_non_null(pj);
    assert_string_equal(json_string_value(json_object_get(pj, "command")),
                        "python caf\xef\xbf\xbd.py");
    assert_string_equal(json_string_value(json_object_get(pj, "user")), "\xef\xbf\xbd");
    json_decref(j);
    /* An empty name stays "", as before. */
    g->name[0] = '\0';
    j = gm_json_gpu(s, g);
    assert_string_equal(json_string_value(json_object_get(j, "name")), "");
    json_decref(j);
    gm_snapshot_free(s);
}

/* Found by fuzz_smi_csv: nvidia-smi may print any figure; memory past int64_t bytes and an
 * all-ones throttle mask went through undefined double-to-integer conversions (UBSan), and a
 * process's memory past INT64_MAX bytes came out negative. */
static void test_snapshot_numbers_out_of_range(void **state)
{
    (void)state;
    gm_snapshot *s = gm_snapshot_new();
    assert_non_null(s);
    s->gpu_count = 1;
    gm_gpu *g = &s->gpus[0];
    gm_gpu_set(g, GM_M_MEM_TOTAL_BYTES, 999999999999999.0 * 1048576.0);
    gm_gpu_set(g, GM_M_MEM_USED_BYTES, 1048576.0);
    gm_gpu_set(g, GM_M_THROTTLE_REASONS, 18446744073709551615.0);
    gm_process p = {.gpu_index = 0, .pid = 42, .mem_valid = true, .used_mem_bytes = UINT64_MAX - 1};
    assert_true(gm_snapshot_add_process(s, &p));
    json_t *gj = gm_json_gpu(s, g);
    assert_non_null(gj);
    const json_t *mem = json_object_get(gj, "memory");
    assert_true(json_is_null(json_object_get(mem, "total_bytes")));
    assert_int_equal(json_integer_value(json_object_get(mem, "used_bytes")), 1048576);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(gj, "throttle_reasons"), "mask")),
        "0xffffffffffffffff");
    const json_t *pj = json_array_get(json_object_get(gj, "processes"), 0);
    assert_true(json_is_null(json_object_get(pj, "used_memory_bytes")));
    assert_int_equal(json_integer_value(json_object_get(pj, "used_memory_mib")),
                     (UINT64_MAX - 1) / 1048576);
    json_decref(gj);
    gm_snapshot_free(s);
}

/* jansson 2.14 loads "[1\0]" as [1] (akheron/jansson#331); gm_json_loadb refuses any NUL. */
static void test_loadb(void **state)
{
    (void)state;
    json_error_t e;
    json_t *j = gm_json_loadb("[1, 2]", 6, 0, &e);
    assert_non_null(j);
    json_decref(j);
    static const char nul[] = "[\n 1\0]";
    assert_null(gm_json_loadb(nul, sizeof nul - 1, 0, &e));
    assert_string_equal(e.text, "a NUL byte is not allowed in JSON text");
    assert_int_equal(e.line, 2);
    assert_int_equal(e.column, 3);
    assert_int_equal(e.position, 4);
    assert_int_equal(json_error_code(&e), json_error_invalid_syntax);
    assert_null(gm_json_loadb(nul, sizeof nul - 1, 0, NULL));
}

/* Kubernetes on GPUs and processes: names and IDs when known, null otherwise; a GPU's
 * k8s_containers is null until the kubelet was read. */
/* bar1 {total_mib, used_mib, free_mib}: MiB when read, null when not. */
static void test_bar1(void **state)
{
    (void)state;
    gm_snapshot *s = gm_snapshot_new();
    assert_non_null(s);
    s->gpu_count = 2;
    s->gpus[1].index = 1;
    gm_gpu *g = &s->gpus[0];
    gm_gpu_set(g, GM_M_BAR1_TOTAL_BYTES, 274877906944.0);
    gm_gpu_set(g, GM_M_BAR1_USED_BYTES, 1048576.0);
    gm_gpu_set(g, GM_M_BAR1_FREE_BYTES, 274876858368.0);
    json_t *j = gm_json_gpu(s, g);
    json_t *b = json_object_get(j, "bar1");
    assert_true(json_is_object(b));
    assert_int_equal(json_integer_value(json_object_get(b, "total_mib")), 262144);
    assert_int_equal(json_integer_value(json_object_get(b, "used_mib")), 1);
    assert_int_equal(json_integer_value(json_object_get(b, "free_mib")), 262143);
    json_decref(j);
    j = gm_json_gpu(s, &s->gpus[1]);
    b = json_object_get(j, "bar1");
    static const char *const keys[] = {"total_mib", "used_mib", "free_mib"};
    for (size_t i = 0; i < 3; i++) {
        assert_non_null(json_object_get(b, keys[i]));
        assert_true(json_is_null(json_object_get(b, keys[i])));
    }
    json_decref(j);
    gm_snapshot_free(s);
}

/* compute_mode: the enum table's word when read, null when not read or a value without a word. */
static void test_compute_mode(void **state)
{
    (void)state;
    gm_snapshot *s = gm_snapshot_new();
    assert_non_null(s);
    s->gpu_count = 1;
    gm_gpu *g = &s->gpus[0];
    json_t *j = gm_json_gpu(s, g);
    assert_true(json_is_null(json_object_get(j, "compute_mode")));
    json_decref(j);
    gm_gpu_set(g, GM_M_COMPUTE_MODE, 3);
    j = gm_json_gpu(s, g);
    assert_string_equal(json_string_value(json_object_get(j, "compute_mode")), "Exclusive_Process");
    json_decref(j);
    gm_gpu_set(g, GM_M_COMPUTE_MODE, 4);
    j = gm_json_gpu(s, g);
    assert_true(json_is_null(json_object_get(j, "compute_mode")));
    json_decref(j);
    gm_snapshot_free(s);
}

static void test_k8s_fields(void **state)
{
    (void)state;
    gm_snapshot *s = gm_snapshot_new();
    assert_non_null(s);
    s->gpu_count = 2;
    s->gpus[1].index = 1;
    gm_gpu *g = &s->gpus[0];
    g->k8s_known = true;
    g->k8s_containers = 1;
    snprintf(g->k8s.pod, sizeof g->k8s.pod, "trainer-0");
    snprintf(g->k8s.pod_namespace, sizeof g->k8s.pod_namespace, "ml");
    snprintf(g->k8s.container, sizeof g->k8s.container, "main");
    gm_process p = {.gpu_index = 0, .pid = 7, .type = GM_PROC_COMPUTE};
    p.k8s = g->k8s;
    snprintf(p.pod_uid, sizeof p.pod_uid, "0e886e9a-3879-45f9-b44d-86ef9df03224");
    snprintf(p.container_id, sizeof p.container_id, "244a65ed");
    assert_true(gm_snapshot_add_process(s, &p));
    gm_process q = {.gpu_index = 1, .pid = 8, .type = GM_PROC_COMPUTE};
    assert_true(gm_snapshot_add_process(s, &q));

    json_t *j = gm_json_gpu(s, g);
    assert_string_equal(json_string_value(json_object_get(j, "pod")), "trainer-0");
    assert_string_equal(json_string_value(json_object_get(j, "namespace")), "ml");
    assert_string_equal(json_string_value(json_object_get(j, "container")), "main");
    assert_int_equal(json_integer_value(json_object_get(j, "k8s_containers")), 1);
    json_t *jp = json_array_get(json_object_get(j, "processes"), 0);
    assert_string_equal(json_string_value(json_object_get(jp, "pod")), "trainer-0");
    assert_string_equal(json_string_value(json_object_get(jp, "namespace")), "ml");
    assert_string_equal(json_string_value(json_object_get(jp, "container")), "main");
    assert_string_equal(json_string_value(json_object_get(jp, "pod_uid")),
                        "0e886e9a-3879-45f9-b44d-86ef9df03224");
    assert_string_equal(json_string_value(json_object_get(jp, "container_id")), "244a65ed");
    json_decref(j);

    j = gm_json_gpu(s, &s->gpus[1]);
    static const char *const keys[] = {"pod", "namespace", "container", "k8s_containers"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        assert_true(json_is_null(json_object_get(j, keys[i])));
    jp = json_array_get(json_object_get(j, "processes"), 0);
    static const char *const pkeys[] = {"pod", "namespace", "container", "pod_uid", "container_id"};
    for (size_t i = 0; i < sizeof pkeys / sizeof *pkeys; i++) {
        assert_non_null(json_object_get(jp, pkeys[i])); /* present, as null */
        assert_true(json_is_null(json_object_get(jp, pkeys[i])));
    }
    json_decref(j);
    gm_snapshot_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_number),
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_str_repairs_outside_bytes),
        cmocka_unit_test(test_host_number),
        cmocka_unit_test(test_pcie_gbps),
        cmocka_unit_test(test_p2p_cap_names),
        cmocka_unit_test(test_p2p),
        cmocka_unit_test(test_loadb),
        cmocka_unit_test(test_snapshot_text_not_utf8),
        cmocka_unit_test(test_snapshot_numbers_out_of_range),
        cmocka_unit_test(test_compute_mode),
        cmocka_unit_test(test_k8s_fields),
        cmocka_unit_test(test_bar1),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
