/* test_json_read.c - base/json_read.h: a snapshot written by gm_json_snapshot reads back into
 * the same snapshot, so a client of a daemon prints what a local reading prints. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/json_read.h"

/* One reading of the fake NVML with scenario (tests/fixtures/nvml/<name>; NULL: its default)
 * or, with provider "sim", of simulated GPUs. */
static gm_snapshot *reading(const char *provider, const char *scenario)
{
    char path[4096];
    if (scenario) {
        snprintf(path, sizeof path, "%s/nvml/%s", getenv("GM_FIXTURES"), scenario);
        setenv("GM_FAKE_NVML_SCENARIO", path, 1);
    } else {
        unsetenv("GM_FAKE_NVML_SCENARIO");
    }
    snprintf(path, sizeof path, "%s/proc/x86", getenv("GM_FIXTURES"));
    gm_collector_options o = {.provider = provider,
                              .nvml_lib = getenv("GM_FAKE_NVML"),
                              .procfs_root = path,
                              .simulate = strcmp(provider, "sim") == 0 ? 3 : 0,
                              .no_first_cpu_wait = true};
    gm_collector *c = NULL;
    gm_error err = {0};
    if (gm_collector_open(&o, &c, &err) != GM_OK)
        fail_msg("open: %s", err.msg);
    gm_snapshot *s = gm_snapshot_new();
    assert_non_null(s);
    if (gm_collector_sample(c, s, &err) < 0)
        fail_msg("sample: %s", err.msg);
    gm_collector_close(c);
    return s;
}

/* gm_json_snapshot(read(gm_json_snapshot(s))) is gm_json_snapshot(s), text for text. */
static void assert_round_trip(const gm_snapshot *s)
{
    json_t *doc = gm_json_snapshot(s);
    assert_non_null(doc);
    char *want = gm_json_dump(doc, NULL);
    /* Through text, as a daemon's answer comes. */
    json_t *parsed = json_loads(want, 0, NULL);
    assert_non_null(parsed);
    gm_snapshot *back = gm_snapshot_new();
    gm_error err = {0};
    assert_int_equal(gm_json_read_snapshot(parsed, back, &err), GM_OK);
    json_t *again = gm_json_snapshot(back);
    char *got = gm_json_dump(again, NULL);
    if (strcmp(want, got) != 0) {
        size_t i = 0;
        while (want[i] && want[i] == got[i])
            i++;
        size_t from = i > 80 ? i - 80 : 0;
        fail_msg("differs at %zu:\nwant ...%.160s\ngot  ...%.160s", i, want + from, got + from);
    }
    assert_int_equal(back->gpu_count, s->gpu_count);
    assert_int_equal(back->proc_count, s->proc_count);
    free(want);
    free(got);
    json_decref(doc);
    json_decref(parsed);
    json_decref(again);
    gm_snapshot_free(back);
}

static void test_nvml_default(void **state)
{
    (void)state;
    gm_snapshot *s = reading("nvml", NULL);
    assert_true(s->gpu_count > 0);
    assert_round_trip(s);
    gm_snapshot_free(s);
}

static void test_nvml_scenarios(void **state)
{
    (void)state;
    static const char *const names[] = {"health.json", "h100-mig.json", "processes.json",
                                        "lost.json",   "two_gpus.json", "h200-580.json",
                                        "errors.json"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        print_message("scenario %s\n", names[i]);
        gm_snapshot *s = reading("nvml", names[i]);
        assert_round_trip(s);
        gm_snapshot_free(s);
    }
}

/* Simulated GPUs have fractions of a byte, which the JSON's whole bytes cannot carry: once read
 * back, a snapshot is the same through any further round. */
static void test_sim(void **state)
{
    (void)state;
    gm_snapshot *s = reading("sim", NULL);
    assert_int_equal(s->gpu_count, 3);
    json_t *doc = gm_json_snapshot(s);
    gm_snapshot *once = gm_snapshot_new();
    gm_error err = {0};
    assert_int_equal(gm_json_read_snapshot(doc, once, &err), GM_OK);
    for (unsigned i = 0; i < s->gpu_count; i++) {
        assert_string_equal(once->gpus[i].uuid, s->gpus[i].uuid);
        assert_string_equal(once->gpus[i].name, s->gpus[i].name);
        assert_true(once->gpus[i].v[GM_M_POWER_MW] == s->gpus[i].v[GM_M_POWER_MW]);
    }
    assert_round_trip(once);
    json_decref(doc);
    gm_snapshot_free(once);
    gm_snapshot_free(s);
}

/* Absent stays absent: null metrics are not read as 0. */
static void test_absent(void **state)
{
    (void)state;
    json_t *doc = json_loads("{\"gpus\": [{\"index\": 2, \"uuid\": \"GPU-x\", \"temperature_c\": "
                             "null, \"power\": {\"draw_w\": 71.5}}], \"system\": null}",
                             0, NULL);
    gm_snapshot *s = gm_snapshot_new();
    gm_error err = {0};
    assert_int_equal(gm_json_read_snapshot(doc, s, &err), GM_OK);
    assert_int_equal(s->gpu_count, 1);
    assert_int_equal(s->gpus[0].index, 2);
    assert_false(gm_gpu_has(&s->gpus[0], GM_M_TEMP_C));
    assert_true(gm_gpu_has(&s->gpus[0], GM_M_POWER_MW));
    assert_true(s->gpus[0].v[GM_M_POWER_MW] == 71500.0);
    assert_false(s->host_valid);
    json_decref(doc);
    gm_snapshot_free(s);
}

static void test_not_a_snapshot(void **state)
{
    (void)state;
    static const char *const bad[] = {"[]", "{\"gpus\": 3}", "{\"gpus\": [7]}",
                                      "{\"gpus\": [{\"name\": \"no index\"}]}"};
    gm_snapshot *s = gm_snapshot_new();
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *doc = json_loads(bad[i], JSON_DECODE_ANY, NULL);
        gm_error err = {0};
        assert_int_equal(gm_json_read_snapshot(doc, s, &err), GM_EPARSE);
        assert_true(err.msg[0] != '\0');
        json_decref(doc);
    }
    gm_snapshot_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nvml_default),
        cmocka_unit_test(test_nvml_scenarios),
        cmocka_unit_test(test_sim),
        cmocka_unit_test(test_absent),
        cmocka_unit_test(test_not_a_snapshot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
