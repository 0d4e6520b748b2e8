/* test_audit.c - audit snapshots and their diff: verdicts on crafted before/after pairs,
 * rejection of malformed and foreign documents, and snapshots taken through the fake NVML. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/audit.h"
#include "server/compat.h"

#define MIB 1048576.0

/* Two H100s as `gpumon snapshot` writes them (trimmed of the keys the diff does not read). */
static const char base_json[] =
    "{\"kind\": \"gpumon-snapshot\", \"schema\": 1, \"gpumon_version\": \"0.1.0\","
    " \"timestamp\": \"2026-01-02T03:04:05.000Z\", \"timestamp_ms\": 1767323045000,"
    " \"provider\": \"nvml\", \"driver_version\": \"550.54.15\", \"cuda_version\": \"12.4\","
    " \"nvml_version\": \"12.550.54.15\","
    " \"system\": {\"hostname\": \"node1\", \"kernel\": \"6.8.0-45-generic\","
    "   \"processor_name\": \"AMD EPYC 9654 96-Core Processor\", \"cpu_count\": 192,"
    "   \"memory_total_bytes\": 1622423060480},"
    " \"power_window\": {\"window_ms\": 2000, \"interval_ms\": 200, \"samples\": 11},"
    " \"gpu_count\": 2, \"gpus\": ["
    "  {\"index\": 0, \"name\": \"NVIDIA H100 80GB HBM3\","
    "   \"uuid\": \"GPU-aaaa\", \"pci_bus_id\": \"00000000:1B:00.0\", \"lost\": false,"
    "   \"memory_total_mib\": 81559, \"memory_used_mib\": 4,"
    "   \"memory_total_bytes\": 85520809984, \"memory_used_bytes\": 4194304,"
    "   \"power_draw_w\": 70.5, \"power_draw_min_w\": 69.9, \"power_draw_max_w\": 71.2,"
    "   \"power_draw_samples\": 11, \"power_limit_w\": 700, \"persistence_mode\": true,"
    "   \"pcie\": {\"gen_current\": 5, \"gen_max\": 5, \"width_current\": 16, \"width_max\": 16,"
    "     \"bandwidth_current_gb_per_s\": 63.008, \"bandwidth_max_gb_per_s\": 63.008},"
    "   \"processes\": []},"
    "  {\"index\": 1, \"name\": \"NVIDIA H100 80GB HBM3\","
    "   \"uuid\": \"GPU-bbbb\", \"pci_bus_id\": \"00000000:2A:00.0\", \"lost\": false,"
    "   \"memory_total_mib\": 81559, \"memory_used_mib\": 4,"
    "   \"memory_total_bytes\": 85520809984, \"memory_used_bytes\": 4194304,"
    "   \"power_draw_w\": 68.25, \"power_draw_min_w\": 68, \"power_draw_max_w\": 68.5,"
    "   \"power_draw_samples\": 11, \"power_limit_w\": 700, \"persistence_mode\": true,"
    "   \"pcie\": {\"gen_current\": 3, \"gen_max\": 5, \"width_current\": 16, \"width_max\": 16,"
    "     \"bandwidth_current_gb_per_s\": 15.76, \"bandwidth_max_gb_per_s\": 63.008},"
    "   \"processes\": null}],"
    " \"p2p_known\": true,"
    " \"p2p\": {\"gpus\": [0, 1],"
    "   \"read\": [[\"X\", \"OK\"], [\"OK\", \"X\"]], \"write\": [[\"X\", \"OK\"], [\"OK\", "
    "\"X\"]],"
    "   \"nvlink\": [[\"X\", \"NS\"], [\"NS\", \"X\"]],"
    "   \"atomics\": [[\"X\", \"GNS\"], [\"GNS\", \"X\"]], \"pci\": [[\"X\", \"OK\"], [\"OK\", "
    "\"X\"]]}}";

static json_t *base(void)
{
    json_t *doc = NULL;
    gm_error err = {0};
    int rc = gm_audit_parse(base_json, strlen(base_json), "base", &doc, &err);
    if (rc != GM_OK)
        fail_msg("base snapshot rejected: %s", err.msg);
    return doc;
}

static json_t *gpu(json_t *doc, size_t i)
{
    return json_array_get(json_object_get(doc, "gpus"), i);
}

static void set_p2p(json_t *doc, const char *cap, size_t i, size_t j, const char *code)
{
    json_t *m = json_object_get(json_object_get(doc, "p2p"), cap);
    assert_int_equal(json_array_set_new(json_array_get(m, i), j, json_string(code)), 0);
}

/* Runs the diff, which must succeed, into v. */
static void diff(const json_t *b, const json_t *a, const gm_audit_tolerance *t, gm_audit_verdict *v)
{
    gm_error err = {0};
    int rc = gm_audit_diff(b, a, t, v, &err);
    if (rc != GM_OK)
        fail_msg("diff failed: %s", err.msg);
    assert_non_null(v->report);
}

/* The n-th difference item, its severity and message checked. */
static const json_t *item(const gm_audit_verdict *v, size_t n, const char *severity,
                          const char *message)
{
    const json_t *it = json_array_get(json_object_get(v->report, "differences"), n);
    assert_non_null(it);
    assert_string_equal(json_string_value(json_object_get(it, "severity")), severity);
    assert_string_equal(json_string_value(json_object_get(it, "message")), message);
    return it;
}

static size_t item_count(const gm_audit_verdict *v)
{
    return json_array_size(json_object_get(v->report, "differences"));
}

/* gm_audit_print_text into a string (caller frees). */
static char *text_of(const gm_audit_verdict *v)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    gm_audit_print_text(f, v);
    fclose(f);
    return buf;
}

static void test_unchanged(void **state)
{
    json_t *b = base(), *a = base();
    gm_audit_verdict v;
    diff(b, a, NULL, &v);
    assert_false(v.changed);
    assert_int_equal(v.changes + v.warnings + v.notes, 0);
    assert_int_equal(item_count(&v), 0);
    assert_string_equal(json_string_value(json_object_get(v.report, "verdict")), "UNCHANGED");
    char *txt = text_of(&v);
    assert_non_null(strstr(txt, "before: 2026-01-02T03:04:05.000Z on node1, 2 GPUs (nvml"));
    assert_non_null(strstr(txt, "\nUNCHANGED\n"));
    free(txt);
    gm_audit_verdict_free(&v);
    assert_null(v.report);

    /* The same GPUs listed in another order are the same system. */
    json_t *gpus = json_object_get(a, "gpus");
    json_t *first = json_incref(json_array_get(gpus, 0));
    json_array_remove(gpus, 0);
    json_array_append_new(gpus, first);
    diff(b, a, NULL, &v);
    assert_false(v.changed);
    assert_int_equal(item_count(&v), 0);
    gm_audit_verdict_free(&v);
    json_decref(b);
    json_decref(a);
}

static void test_memory_tolerance(void **state)
{
    json_t *b = base(), *a = base();
    gm_audit_verdict v;
    /* +100 MiB on GPU 1: within the default 256 MiB, reported as a note. */
    json_object_set_new(gpu(a, 1), "memory_used_bytes", json_integer((json_int_t)(104 * MIB)));
    diff(b, a, NULL, &v);
    assert_false(v.changed);
    assert_int_equal(v.notes, 1);
    const json_t *it =
        item(&v, 0, "note", "GPU 1 memory used 4 MiB -> 104 MiB (+100 MiB, within tolerance)");
    assert_string_equal(json_string_value(json_object_get(it, "field")), "memory_used_bytes");
    assert_int_equal(json_integer_value(json_object_get(it, "gpu")), 1);
    assert_string_equal(json_string_value(json_object_get(it, "uuid")), "GPU-bbbb");
    assert_int_equal(json_integer_value(json_object_get(it, "after")), (json_int_t)(104 * MIB));
    gm_audit_verdict_free(&v);

    /* The same rise against a 50 MiB tolerance fails. */
    gm_audit_tolerance t;
    gm_audit_tolerance_init(&t);
    t.mem_mib = 50;
    diff(b, a, &t, &v);
    assert_true(v.changed);
    item(&v, 0, "changed",
         "GPU 1 memory used 4 MiB -> 104 MiB (+100 MiB, over the 50 MiB tolerance)");
    char *txt = text_of(&v);
    assert_non_null(strstr(txt, "\nCHANGED: GPU 1 memory used 4 MiB -> 104 MiB"));
    assert_non_null(strstr(txt, "\nCHANGED (1 change)\n"));
    free(txt);
    gm_audit_verdict_free(&v);

    /* +300 MiB fails the default; memory falling never does. */
    json_object_set_new(gpu(a, 1), "memory_used_bytes", json_integer((json_int_t)(304 * MIB)));
    json_object_set_new(gpu(b, 0), "memory_used_bytes", json_integer((json_int_t)(2004 * MIB)));
    diff(b, a, NULL, &v);
    assert_true(v.changed);
    assert_int_equal(v.changes, 1);
    assert_int_equal(v.notes, 1);
    item(&v, 0, "note", "GPU 0 memory used 2004 MiB -> 4 MiB (-2000 MiB)");
    item(&v, 1, "changed",
         "GPU 1 memory used 4 MiB -> 304 MiB (+300 MiB, over the 256 MiB tolerance)");
    gm_audit_verdict_free(&v);
    json_decref(b);
    json_decref(a);
}

static void test_memory_mib_only(void **state)
{
    /* Documents without the byte counts still compare, in whole MiB. */
    json_t *b = base(), *a = base();
    for (size_t i = 0; i < 2; i++) {
        json_object_del(gpu(b, i), "memory_used_bytes");
        json_object_del(gpu(a, i), "memory_used_bytes");
    }
    json_object_set_new(gpu(a, 0), "memory_used_mib", json_integer(1004));
    gm_audit_verdict v;
    diff(b, a, NULL, &v);
    assert_true(v.changed);
    const json_t *it =
        item(&v, 0, "changed",
             "GPU 0 memory used 4 MiB -> 1004 MiB (+1000 MiB, over the 256 MiB tolerance)");
    assert_string_equal(json_string_value(json_object_get(it, "field")), "memory_used_mib");
    gm_audit_verdict_free(&v);
    json_decref(b);
    json_decref(a);
}

static void test_power_tolerance(void **state)
{
    json_t *b = base(), *a = base();
    gm_audit_verdict v;
    json_object_set_new(gpu(a, 0), "power_draw_w", json_real(101.0));
    diff(b, a, NULL, &v);
    assert_true(v.changed);
    item(&v, 0, "changed", "GPU 0 mean power 70.5 W -> 101.0 W (+30.5 W, over the 25 W tolerance)");
    gm_audit_verdict_free(&v);

    gm_audit_tolerance t;
    gm_audit_tolerance_init(&t);
    t.power_w = 40;
    diff(b, a, &t, &v);
    assert_false(v.changed);
    item(&v, 0, "note", "GPU 0 mean power 70.5 W -> 101.0 W (+30.5 W, within tolerance)");
    gm_audit_verdict_free(&v);

    /* The default: exactly on the tolerance passes. */
    json_object_set_new(gpu(a, 0), "power_draw_w", json_real(95.5));
    diff(b, a, NULL, &v);
    assert_false(v.changed);
    assert_int_equal(v.notes, 1);
    gm_audit_verdict_free(&v);
    json_decref(b);
    json_decref(a);
}

static void test_driver_changed(void **state)
{
    json_t *b = base(), *a = base();
    json_object_set_new(a, "driver_version", json_string("550.90.07"));
    json_object_set_new(a, "cuda_version", json_string("12.5"));
    gm_audit_verdict v;
    diff(b, a, NULL, &v);
    assert_true(v.changed);
    assert_int_equal(v.changes, 2);
    const json_t *it = item(&v, 0, "changed", "driver 550.54.15 -> 550.90.07");
    assert_string_equal(json_string_value(json_object_get(it, "field")), "driver_version");
    assert_true(json_is_null(json_object_get(it, "gpu")));
    item(&v, 1, "changed", "CUDA 12.4 -> 12.5");
    char *txt = text_of(&v);
    assert_non_null(strstr(txt, "\nCHANGED: driver 550.54.15 -> 550.90.07\n"));
    assert_non_null(strstr(txt, "\nCHANGED (2 changes)\n"));
    free(txt);
    assert_string_equal(json_string_value(json_object_get(v.report, "verdict")), "CHANGED");
    gm_audit_verdict_free(&v);
    json_decref(b);
    json_decref(a);
}

static void test_host_changed(void **state)
{
    json_t *b = base(), *a = base();
    json_t *sys = json_object_get(a, "system");
    json_object_set_new(sys, "kernel", json_string("6.8.0-47-generic"));
    json_object_set_new(sys, "cpu_count", json_integer(96));
    gm_audit_verdict v;
    diff(b, a, NULL, &v);
    assert_int_equal(v.changes, 2);
    item(&v, 0, "changed", "kernel 6.8.0-45-generic -> 6.8.0-47-generic");
    const json_t *it = item(&v, 1, "changed", "CPU count 192 -> 96");
    assert_string_equal(json_string_value(json_object_get(it, "field")), "system.cpu_count");
    gm_audit_verdict_free(&v);
    json_decref(b);
    json_decref(a);
}

/* Caught by fuzz_audit's check that a diff of valid snapshots succeeds: a message quotes a value
 * cut to 159 bytes; cut inside a character it was no UTF-8, jansson refused the item, and the
 * whole diff failed as "out of memory". */
static void test_value_cut_inside_a_character(void **state)
{
    json_t *b = base(), *a = base();
    char name[200];
    memset(name, 'h', 158);
    snprintf(name + 158, sizeof name - 158, "\xc3\xa9\xe2\x82\xac"); /* é€ across the cut */
    json_object_set_new(json_object_get(b, "system"), "hostname", json_string(name));
    gm_audit_verdict v;
    diff(b, a, NULL, &v);
    assert_int_equal(v.changes, 1);
    const char *msg = json_string_value(
        json_object_get(json_array_get(json_object_get(v.report, "differences"), 0), "message"));
    assert_non_null(strstr(msg, "hhh\xef\xbf\xbd -> node1")); /* the half character: U+FFFD */
    gm_audit_verdict_free(&v);
    json_decref(b);
    json_decref(a);
}

/* Found by fuzz_audit: jansson 2.14 drops a NUL byte right after a number. */
static void test_nul_byte(void **state)
{
    static const char text[] = "{\"kind\": \"gpumon-snapshot\", \"schema\": 1\0, \"gpus\": [],"
                               " \"p2p_known\": false}";
    json_t *doc = NULL;
    gm_error err = {0};
    assert_int_equal(gm_audit_parse(text, sizeof text - 1, "nul.json", &doc, &err), GM_EPARSE);
    assert_null(doc);
    assert_non_null(strstr(err.msg, "nul.json: not JSON: a NUL byte is not allowed"));
    assert_non_null(strstr(err.msg, "line 1, column 40"));
}

static void test_gpu_removed_and_added(void **state)
{
    json_t *b = base(), *a = base();
    json_array_remove(json_object_get(a, "gpus"), 1);
    json_object_set_new(a, "gpu_count", json_integer(1));
    gm_audit_verdict v;
    diff(b, a, NULL, &v);
    assert_true(v.changed);
    assert_int_equal(v.changes, 2);
    item(&v, 0, "changed", "GPU count 2 -> 1");
    const json_t *it =
        item(&v, 1, "changed", "GPU 1 removed: NVIDIA H100 80GB HBM3 GPU-bbbb at 00000000:2A:00.0");
    assert_string_equal(json_string_value(json_object_get(it, "uuid")), "GPU-bbbb");
    assert_string_equal(json_string_value(json_object_get(json_object_get(it, "before"), "uuid")),
                        "GPU-bbbb");
    assert_true(json_is_null(json_object_get(it, "after")));
    gm_audit_verdict_free(&v);

    /* A different card in the same slot: one removed, one added, no field-by-field noise. */
    json_decref(a);
    a = base();
    json_object_set_new(gpu(a, 1), "uuid", json_string("GPU-cccc"));
    diff(b, a, NULL, &v);
    assert_int_equal(v.changes, 2);
    assert_int_equal(item_count(&v), 2);
    item(&v, 0, "changed", "GPU 1 removed: NVIDIA H100 80GB HBM3 GPU-bbbb at 00000000:2A:00.0");
    item(&v, 1, "changed", "GPU 1 added: NVIDIA H100 80GB HBM3 GPU-cccc at 00000000:2A:00.0");
    gm_audit_verdict_free(&v);
    json_decref(b);
    json_decref(a);
}

static void test_gpu_identity_changed(void **state)
{
    /* The same UUID at another index: enumeration order changed (CUDA_VISIBLE_DEVICES breaks). */
    json_t *b = base(), *a = base();
    json_object_set_new(gpu(a, 0), "index", json_integer(2));
    json_object_set_new(gpu(a, 1), "persistence_mode", json_false());
    json_object_set_new(gpu(a, 1), "power_limit_w", json_real(450.0));
    json_object_set_new(json_object_get(a, "p2p"), "gpus", json_pack("[i, i]", 2, 1));
    gm_audit_verdict v;
    diff(b, a, NULL, &v);
    assert_int_equal(v.changes, 3);
    item(&v, 0, "changed", "GPU 0 index 0 -> 2 (enumeration order changed)");
    item(&v, 1, "changed", "GPU 1 power limit 700.0 W -> 450.0 W");
    item(&v, 2, "changed", "GPU 1 persistence mode on -> off");
    gm_audit_verdict_free(&v);
    json_decref(b);
    json_decref(a);
}

static void test_p2p_changed(void **state)
{
    json_t *b = base(), *a = base();
    set_p2p(a, "nvlink", 0, 1, "OK");
    set_p2p(a, "nvlink", 1, 0, "OK");
    set_p2p(a, "read", 1, 0, "CNS"); /* one direction only */
    gm_audit_verdict v;
    diff(b, a, NULL, &v);
    assert_true(v.changed);
    assert_int_equal(v.changes, 2);
    const json_t *it = item(&v, 0, "changed", "P2P read GPU 1 -> GPU 0 OK -> CNS");
    assert_string_equal(json_string_value(json_object_get(it, "field")), "p2p.read");
    assert_int_equal(json_integer_value(json_object_get(it, "gpu")), 1);
    it = item(&v, 1, "changed", "P2P nvlink GPU 0 <-> GPU 1 NS -> OK");
    assert_string_equal(json_string_value(json_object_get(it, "before")), "NS");
    assert_string_equal(json_string_value(json_object_get(it, "after")), "OK");
    gm_audit_verdict_free(&v);
    json_decref(b);
    json_decref(a);
}

static void test_p2p_unknown_is_a_warning(void **state)
{
    json_t *b = base(), *a = base();
    json_object_set_new(a, "p2p_known", json_false());
    json_object_set_new(a, "p2p", json_null());
    json_object_set_new(a, "provider", json_string("nvidia-smi"));
    gm_audit_verdict v;
    diff(b, a, NULL, &v);
    assert_false(v.changed);
    assert_int_equal(v.warnings, 2);
    item(&v, 0, "warning",
         "provider nvml -> nvidia-smi (the snapshots read the GPUs through different sources)");
    item(&v, 1, "warning",
         "P2P matrix known before, unknown after (provider nvidia-smi cannot "
         "read it)");
    gm_audit_verdict_free(&v);

    gm_audit_tolerance t;
    gm_audit_tolerance_init(&t);
    t.strict = true;
    diff(b, a, &t, &v);
    assert_true(v.changed);
    assert_int_equal(v.changes, 0);
    char *txt = text_of(&v);
    assert_non_null(strstr(txt, "\nWARNING: P2P matrix known before"));
    assert_non_null(strstr(txt, "\nCHANGED (2 warnings; strict)\n"));
    free(txt);
    gm_audit_verdict_free(&v);
    json_decref(b);
    json_decref(a);
}

static void test_pcie_links(void **state)
{
    json_t *b = base(), *a = base();
    json_t *pcie = json_object_get(gpu(a, 1), "pcie");
    json_object_set_new(pcie, "gen_current", json_integer(1)); /* idle downtraining */
    gm_audit_verdict v;
    diff(b, a, NULL, &v);
    assert_false(v.changed);
    assert_int_equal(v.warnings, 1);
    const json_t *it = item(&v, 0, "warning",
                            "GPU 1 PCIe current link generation 3 -> 1 (links train down at idle; "
                            "--strict fails on this)");
    assert_string_equal(json_string_value(json_object_get(it, "field")), "pcie.gen_current");
    gm_audit_verdict_free(&v);

    gm_audit_tolerance t;
    gm_audit_tolerance_init(&t);
    t.strict = true;
    diff(b, a, &t, &v);
    assert_true(v.changed);
    gm_audit_verdict_free(&v);

    /* The maximum link is the slot and the card: an invariant. */
    json_object_set_new(pcie, "gen_current", json_integer(3));
    json_object_set_new(pcie, "width_max", json_integer(8));
    diff(b, a, NULL, &v);
    assert_true(v.changed);
    item(&v, 0, "changed", "GPU 1 PCIe max link width x16 -> x8");
    gm_audit_verdict_free(&v);
    json_decref(b);
    json_decref(a);
}

static void test_lost_and_unknown(void **state)
{
    json_t *b = base(), *a = base();
    /* GPU 1 fell off the bus: identity stays, every metric is null. */
    json_t *g = gpu(a, 1);
    json_object_set_new(g, "lost", json_true());
    const char *metrics[] = {
        "memory_total_mib", "memory_used_mib", "memory_total_bytes", "memory_used_bytes",
        "power_draw_w",     "power_limit_w",   "persistence_mode",   "pcie"};
    for (size_t i = 0; i < sizeof metrics / sizeof *metrics; i++)
        json_object_set_new(g, metrics[i], json_null());
    /* A lost GPU answers no P2P query. */
    set_p2p(a, "read", 0, 1, "U");
    set_p2p(a, "read", 1, 0, "U");
    /* GPU 0 stopped reporting its power limit: unknown is not a change. */
    json_object_set_new(gpu(a, 0), "power_limit_w", json_null());
    gm_audit_verdict v;
    diff(b, a, NULL, &v);
    assert_true(v.changed);
    assert_int_equal(v.changes, 1);
    assert_int_equal(v.warnings, 1);
    assert_int_equal(item_count(&v), 2);
    item(&v, 0, "warning", "GPU 0 power limit no longer reported (was 700.0 W)");
    item(&v, 1, "changed", "GPU 1 is lost (fell off the bus)");
    gm_audit_verdict_free(&v);
    json_decref(b);
    json_decref(a);
}

static json_t *proc(long long pid, const char *command, json_t *mib)
{
    json_t *p = json_pack("{s:I, s:s, s:s, s:o}", "pid", (json_int_t)pid, "user", "alice",
                          "command", command, "used_memory_mib", mib);
    assert_non_null(p);
    return p;
}

static void test_processes(void **state)
{
    json_t *b = base(), *a = base();
    json_t *pb = json_object_get(gpu(b, 0), "processes"),
           *pa = json_object_get(gpu(a, 0), "processes");
    /* A server in both snapshots is no change. */
    json_array_append_new(pb, proc(100, "vllm serve", json_integer(70000)));
    json_array_append_new(pa, proc(100, "vllm serve", json_integer(70000)));
    /* A training job came, a tool with no memory came, a small job left. */
    json_array_append_new(pa, proc(4242, "python train.py", json_integer(20480)));
    json_array_append_new(pa, proc(4343, "nvidia-smi", json_integer(0)));
    json_array_append_new(pb, proc(5151, "python eval.py", json_null()));
    /* The run's own process (a recorded command) is not a change. */
    json_array_append_new(pa, proc(777, "./bench.sh", json_integer(30000)));
    pid_t mine[] = {12, 777};
    gm_audit_tolerance t;
    gm_audit_tolerance_init(&t);
    t.ignore_pids = mine;
    t.ignore_pid_count = 2;
    gm_audit_verdict v;
    diff(b, a, &t, &v);
    assert_true(v.changed);
    assert_int_equal(v.changes, 1);
    assert_int_equal(v.warnings, 2);
    assert_int_equal(item_count(&v), 3);
    const json_t *it =
        item(&v, 0, "changed",
             "GPU 0: process 4242 (python train.py) started during the run, 20480 MiB");
    assert_string_equal(json_string_value(json_object_get(it, "field")), "processes");
    assert_int_equal(json_integer_value(json_object_get(it, "gpu")), 0);
    assert_true(json_is_null(json_object_get(it, "before")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(it, "after"), "pid")),
                     4242);
    item(&v, 1, "warning", "GPU 0: process 4343 (nvidia-smi) started during the run, 0 MiB");
    it = item(&v, 2, "warning",
              "GPU 0: process 5151 (python eval.py) ended during the run, memory unknown");
    assert_true(json_is_null(json_object_get(it, "after")));
    char *txt = text_of(&v);
    assert_non_null(
        strstr(txt, "CHANGED: GPU 0: process 4242 (python train.py) started during the run"));
    free(txt);
    gm_audit_verdict_free(&v);

    /* Without the ignore list the run's own process shows. */
    diff(b, a, NULL, &v);
    assert_int_equal(v.changes, 2);
    gm_audit_verdict_free(&v);

    /* A pid reused by another command is another process; with start times, those decide. */
    json_decref(a);
    a = base();
    pa = json_object_get(gpu(a, 0), "processes");
    json_array_append_new(pa, proc(100, "python other.py", json_integer(70000)));
    json_array_append_new(pa, proc(5151, "python eval.py", json_null()));
    diff(b, a, NULL, &v);
    assert_int_equal(v.changes, 2);
    item(&v, 0, "changed",
         "GPU 0: process 100 (python other.py) started during the run, 70000 MiB");
    item(&v, 1, "changed", "GPU 0: process 100 (vllm serve) ended during the run, 70000 MiB");
    gm_audit_verdict_free(&v);
    json_object_set_new(json_array_get(pb, 0), "start_time", json_integer(5000));
    json_object_set_new(json_array_get(pa, 0), "start_time", json_integer(5000));
    diff(b, a, NULL, &v);
    assert_int_equal(item_count(&v), 0);
    gm_audit_verdict_free(&v);

    /* A list taken on one side only is unknown, not "none": a warning. */
    json_object_set_new(gpu(a, 1), "processes", json_array());
    diff(b, a, NULL, &v);
    assert_int_equal(item_count(&v), 1);
    item(&v, 0, "warning", "GPU 1: processes not listed before, listed after");
    gm_audit_verdict_free(&v);
    json_decref(b);
    json_decref(a);
}

static void expect_parse_error(const char *doc, const char *fragment)
{
    json_t *out = (json_t *)1;
    gm_error err = {0};
    assert_int_equal(gm_audit_parse(doc, strlen(doc), "x.json", &out, &err), GM_EPARSE);
    assert_null(out);
    assert_int_equal(err.code, GM_EPARSE);
    if (strncmp(err.msg, "x.json: ", 8) != 0 || !strstr(err.msg, fragment))
        fail_msg("message \"%s\" lacks \"%s\"", err.msg, fragment);
}

/* base_json with the first occurrence of from replaced by to. */
static char *edited(const char *from, const char *to)
{
    const char *at = strstr(base_json, from);
    assert_non_null(at);
    size_t pre = (size_t)(at - base_json);
    char *s = malloc(sizeof base_json + strlen(to));
    assert_non_null(s);
    memcpy(s, base_json, pre);
    strcpy(s + pre, to);
    strcat(s, at + strlen(from));
    return s;
}

static void expect_edit_error(const char *from, const char *to, const char *fragment)
{
    char *s = edited(from, to);
    expect_parse_error(s, fragment);
    free(s);
}

static void test_malformed(void **state)
{
    expect_parse_error("garbage{", "not JSON: ");
    expect_parse_error("{\"kind\": \"gpumon-snapshot\",", "(line 1, column");
    expect_parse_error("[1, 2]", "not a gpumon snapshot (the document is an array");
    expect_parse_error("{\"gpus\": []}", "not a gpumon snapshot (no \"kind\"");
    expect_parse_error("{\"kind\": \"gpumon-diff\"}", "(\"kind\" is \"gpumon-diff\")");
    expect_edit_error("\"schema\": 1", "\"schema\": 2", "schema 2 is newer than this gpumon");
    expect_edit_error("\"schema\": 1", "\"schema\": \"1\"",
                      "\"schema\" must be a positive integer");
    expect_edit_error("\"gpus\": [", "\"gpuz\": [", "\"gpus\" is missing");
    expect_edit_error("\"memory_used_mib\": 4", "\"memory_used_mib\": \"4\"",
                      "gpus[0].memory_used_mib must be a number or null, not a string");
    expect_edit_error("\"gen_max\": 5", "\"gen_max\": true",
                      "gpus[0].pcie.gen_max must be a number or null, not true or false");
    expect_edit_error("\"cpu_count\": 192", "\"cpu_count\": [192]",
                      "system.cpu_count must be a number or null, not an array");
    expect_edit_error("\"processes\": []", "\"processes\": [{\"pid\": \"1\"}]",
                      "gpus[0].processes[0].pid must be an integer, not a string");
    expect_edit_error("\"processes\": []", "\"processes\": [7]",
                      "gpus[0].processes[0] must be an object");
    expect_edit_error("\"gpu_count\": 2", "\"gpu_count\": 3", "gpu_count is 3 but gpus lists 2");
    expect_edit_error("GPU-bbbb", "GPU-aaaa", "gpus[0] and gpus[1] have one UUID GPU-aaaa");
    expect_edit_error("\"index\": 1", "\"index\": 0", "gpus[0] and gpus[1] have one index 0");
    expect_edit_error("\"nvlink\": [[\"X\", \"NS\"], [\"NS\", \"X\"]]", "\"nvlink\": [[\"X\"]]",
                      "p2p.nvlink must be a 2 x 2 array of codes");
    expect_edit_error("\"p2p\": {", "\"p2q\": {", "p2p_known is true but p2p is not an object");
    expect_edit_error("\"provider\": \"nvml\", \"driver",
                      "\"provider\": \"nvml\", \"provider\": 1, \"driver", "duplicate object key");

    /* The diff validates what it is given and says which side is bad. */
    json_t *b = base();
    json_t *a = json_pack("{s:s}", "kind", "gpumon-snapshot");
    gm_audit_verdict v;
    gm_error err = {0};
    assert_int_equal(gm_audit_diff(b, a, NULL, &v, &err), GM_EPARSE);
    assert_null(v.report);
    assert_non_null(strstr(err.msg, "after: \"schema\" must be"));
    json_decref(a);
    json_decref(b);
}

static char tmpdir[64];

static int files_in(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void test_write_and_load(void **state)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/gm_audit_XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    char path[128];
    snprintf(path, sizeof path, "%s/before.json", tmpdir);
    json_t *doc = base(), *back = NULL;
    gm_error err = {0};
    assert_int_equal(gm_audit_write(doc, path, &err), GM_OK);
    assert_int_equal(gm_audit_write(doc, path, &err), GM_OK); /* replaces */
    assert_int_equal(files_in(tmpdir), 1);                    /* no temporary left behind */
    assert_int_equal(gm_audit_load(path, &back, &err), GM_OK);
    assert_true(json_equal(doc, back));
    json_decref(back);

    char bad[160];
    snprintf(bad, sizeof bad, "%s/missing/x.json", tmpdir);
    assert_int_equal(gm_audit_write(doc, bad, &err), GM_EIO);
    assert_non_null(strstr(err.msg, "missing/x.json"));
    assert_int_equal(gm_audit_load(bad, &back, &err), GM_ENOENT);
    assert_null(back);
    assert_non_null(strstr(err.msg, "No such file"));

    FILE *f = fopen(path, "w");
    fclose(f);
    assert_int_equal(gm_audit_load(path, &back, &err), GM_EPARSE);
    assert_non_null(strstr(err.msg, "before.json: empty file"));
    unlink(path);
    rmdir(tmpdir);
    json_decref(doc);
}

/* Writes scenario to a temporary file named in path and points the fake NVML at it; skips
 * without the fake (the test binary run by hand). Returns the fake library's path. */
static const char *use_scenario(const char *scenario, char *path, size_t len)
{
    const char *lib = getenv("GM_FAKE_NVML");
    if (!lib)
        skip();
    snprintf(path, len, "/tmp/gm_audit_scn_XXXXXX");
    int fd = mkstemp(path);
    check_ge(fd, 0);
    assert_int_equal(write(fd, scenario, strlen(scenario)), (ssize_t)strlen(scenario));
    close(fd);
    setenv("GM_FAKE_NVML_SCENARIO", path, 1);
    return lib;
}

static void end_scenario(const char *path)
{
    unsetenv("GM_FAKE_NVML_SCENARIO");
    unlink(path);
}

static void test_take_from_fake_nvml(void **state)
{
    /* GPU 0's power alternates 100 W / 300 W per reading: 4 readings average 200 W whichever
     * element the first reading sees. */
    static const char scenario[] =
        "{\"driver_version\": \"550.54.15\", \"cuda_version\": 12040, \"gpus\": ["
        " {\"name\": \"NVIDIA H100 80GB HBM3\", \"uuid\": \"GPU-0000\","
        "  \"pci_bus_id\": \"00000000:1B:00.0\", \"util_gpu\": 1, \"util_mem\": 1,"
        "  \"mem_total\": 85520809984, \"mem_used\": 1048576, \"mem_free\": 85519761408,"
        "  \"power_mw\": [100000, 300000], \"power_limit_mw\": 700000,"
        "  \"pcie_gen\": 1, \"pcie_gen_max\": 5, \"pcie_width\": 16, \"pcie_width_max\": 16,"
        "  \"persistence\": 1},"
        " {\"name\": \"NVIDIA H100 80GB HBM3\", \"uuid\": \"GPU-0001\","
        "  \"pci_bus_id\": \"00000000:2A:00.0\", \"util_gpu\": 1, \"util_mem\": 1,"
        "  \"mem_total\": 85520809984, \"mem_used\": 1048576, \"mem_free\": 85519761408}],"
        " \"p2p\": {\"default\": 0, \"pairs\": [[0, 1, \"nvlink\", 5], [0, 1, \"atomics\", 2]]}}";
    char path[64];
    gm_collector_options opt = {.provider = "nvml", .no_processes = true};
    opt.nvml_lib = use_scenario(scenario, path, sizeof path);
    gm_collector *c = NULL;
    gm_error err = {0};
    if (gm_collector_open(&opt, &c, &err) < 0)
        fail_msg("fake NVML: %s", err.msg);
    gm_audit_options o;
    gm_audit_options_init(&o);
    assert_int_equal(o.power_window_ms, 2000);
    o.power_window_ms = 300;
    o.power_interval_ms = 100;
    json_t *doc = NULL;
    assert_int_equal(gm_audit_take(c, &o, &doc, &err), GM_OK);
    assert_int_equal(gm_audit_validate(doc, &err), GM_OK);

    assert_string_equal(json_string_value(json_object_get(doc, "kind")), GM_AUDIT_KIND);
    assert_string_equal(json_string_value(json_object_get(doc, "provider")), "nvml");
    assert_string_equal(json_string_value(json_object_get(doc, "cuda_version")), "12.4");
    const json_t *win = json_object_get(doc, "power_window");
    assert_int_equal(json_integer_value(json_object_get(win, "samples")), 4);
    json_t *g0 = gpu(doc, 0), *g1 = gpu(doc, 1);
    check_eq(json_number_value(json_object_get(g0, "power_draw_w")), 200.0);
    check_eq(json_number_value(json_object_get(g0, "power_draw_min_w")), 100.0);
    check_eq(json_number_value(json_object_get(g0, "power_draw_max_w")), 300.0);
    assert_int_equal(json_integer_value(json_object_get(g0, "power_draw_samples")), 4);
    check_eq(json_number_value(json_object_get(g0, "power_limit_w")), 700.0);
    assert_true(json_is_true(json_object_get(g0, "persistence_mode")));
    /* GPU 1 reports no power and no persistence mode: null, never 0. */
    assert_true(json_is_null(json_object_get(g1, "power_draw_w")));
    assert_int_equal(json_integer_value(json_object_get(g1, "power_draw_samples")), 0);
    assert_true(json_is_null(json_object_get(g1, "persistence_mode")));
    const json_t *pcie = json_object_get(g0, "pcie");
    check_eq(json_number_value(json_object_get(pcie, "bandwidth_max_gb_per_s")),
             gm_pcie_gbps(5, 16));
    check_eq(json_number_value(json_object_get(pcie, "bandwidth_current_gb_per_s")),
             gm_pcie_gbps(1, 16));
    assert_true(json_is_null(json_object_get(json_object_get(g1, "pcie"), "gen_max")));
    assert_true(json_is_null(json_object_get(g0, "processes"))); /* not listed: unknown */
    assert_int_equal(json_integer_value(json_object_get(g0, "memory_used_mib")), 1);

    assert_true(json_is_true(json_object_get(doc, "p2p_known")));
    const json_t *p2p = json_object_get(doc, "p2p");
    const char *expect[][2] = {
        {"read", "OK"}, {"write", "OK"}, {"nvlink", "NS"}, {"atomics", "GNS"}, {"pci", "OK"}};
    for (size_t i = 0; i < 5; i++) {
        const json_t *m = json_object_get(p2p, expect[i][0]);
        assert_string_equal(json_string_value(json_array_get(json_array_get(m, 0), 1)),
                            expect[i][1]);
        assert_string_equal(json_string_value(json_array_get(json_array_get(m, 1), 0)),
                            expect[i][1]);
        assert_string_equal(json_string_value(json_array_get(json_array_get(m, 0), 0)), "X");
    }

    /* A second snapshot of the same system diffs clean; a single reading is allowed. */
    o.power_window_ms = 0;
    json_t *again = NULL;
    assert_int_equal(gm_audit_take(c, &o, &again, &err), GM_OK);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(again, "power_window"), "samples")), 1);
    /* One reading of an alternating 100/300 W sensor is 100 or 300: 100 W off the mean. */
    gm_audit_tolerance t;
    gm_audit_tolerance_init(&t);
    t.power_w = 100;
    gm_audit_verdict v;
    diff(doc, again, &t, &v);
    assert_false(v.changed);
    assert_int_equal(v.changes + v.warnings, 0);
    gm_audit_verdict_free(&v);

    json_decref(again);
    json_decref(doc);
    gm_collector_close(c);
    end_scenario(path);
}

static void test_take_without_gpu(void **state)
{
    /* Auto with no GPU source: NVML works but sees none, and no nvidia-smi on this PATH. */
    char path[64];
    gm_collector_options opt = {.no_processes = true};
    opt.nvml_lib = use_scenario("{\"gpus\": []}", path, sizeof path);
    char *old_path = strdup(getenv("PATH") ? getenv("PATH") : "");
    setenv("PATH", "/nonexistent", 1);
    gm_collector *c = NULL;
    gm_error err = {0};
    int rc = gm_collector_open(&opt, &c, &err);
    setenv("PATH", old_path, 1);
    free(old_path);
    assert_int_equal(rc, GM_OK);
    json_t *doc = (json_t *)1;
    assert_int_equal(gm_audit_take(c, NULL, &doc, &err), GM_ENODEV);
    assert_null(doc);
    assert_non_null(strstr(err.msg, "no GPU found; tried nvml: "));
    gm_collector_close(c);
    end_scenario(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unchanged),
        cmocka_unit_test(test_value_cut_inside_a_character),
        cmocka_unit_test(test_nul_byte),
        cmocka_unit_test(test_memory_tolerance),
        cmocka_unit_test(test_memory_mib_only),
        cmocka_unit_test(test_power_tolerance),
        cmocka_unit_test(test_driver_changed),
        cmocka_unit_test(test_host_changed),
        cmocka_unit_test(test_gpu_removed_and_added),
        cmocka_unit_test(test_gpu_identity_changed),
        cmocka_unit_test(test_p2p_changed),
        cmocka_unit_test(test_p2p_unknown_is_a_warning),
        cmocka_unit_test(test_pcie_links),
        cmocka_unit_test(test_lost_and_unknown),
        cmocka_unit_test(test_processes),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_write_and_load),
        cmocka_unit_test(test_take_from_fake_nvml),
        cmocka_unit_test(test_take_without_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
