/* test_session.c - monitoring session statistics, energy and JSON against hand-computed values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/session.h"
#include "core/timeline.h"

/* The session's document with its timeline, as the API and `record -o` write it (the one
 * timeline writer, core/timeline.c), parsed back. */
static json_t *with_timeline(gm_session *s)
{
    json_t *doc = gm_session_to_json(s);
    assert_non_null(doc);
    gm_buf b;
    gm_buf_init(&b, 0);
    gm_timeline *tl = NULL;
    assert_int_equal(gm_timeline_open_doc(GM_TIMELINE_JSON, doc, &b, NULL, &tl), GM_OK);
    json_decref(doc);
    gm_timeline_add_session(tl, s);
    assert_int_equal(gm_timeline_close(tl, NULL), GM_OK);
    json_error_t jerr;
    json_t *out = json_loads(b.p, 0, &jerr);
    if (!out)
        fail_msg("timeline JSON does not parse: %s: %.200s", jerr.text, b.p);
    gm_buf_free(&b);
    return out;
}

#define MIB 1048576.0

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A GPU reading; NAN leaves a metric absent. */
static void set_gpu(gm_snapshot *s, unsigned slot, unsigned index, double util, double used_mib,
                    double total_mib, double temp, double power_w, double energy_j)
{
    gm_gpu *g = &s->gpus[slot];
    memset(g, 0, sizeof *g);
    g->index = index;
    snprintf(g->name, sizeof g->name, "GPU model %u", index);
    snprintf(g->uuid, sizeof g->uuid, "GPU-0000-%u", index);
    if (!isnan(util))
        gm_gpu_set(g, GM_M_UTIL_GPU_PCT, util);
    if (!isnan(used_mib))
        gm_gpu_set(g, GM_M_MEM_USED_BYTES, used_mib * MIB);
    if (!isnan(total_mib))
        gm_gpu_set(g, GM_M_MEM_TOTAL_BYTES, total_mib * MIB);
    if (!isnan(temp))
        gm_gpu_set(g, GM_M_TEMP_C, temp);
    if (!isnan(power_w))
        gm_gpu_set(g, GM_M_POWER_MW, power_w * 1000.0);
    if (!isnan(energy_j))
        gm_gpu_set(g, GM_M_ENERGY_MJ, energy_j * 1000.0);
    if (slot + 1 > s->gpu_count)
        s->gpu_count = slot + 1;
}

static double num(const json_t *o, const char *path1, const char *path2)
{
    const json_t *v = json_object_get(o, path1);
    if (path2)
        v = json_object_get(v, path2);
    assert_true(json_is_number(v));
    return json_number_value(v);
}

static const json_t *gpu_stats(const json_t *doc, const char *key)
{
    const json_t *g = json_object_get(json_object_get(doc, "gpu_stats"), key);
    assert_non_null(g);
    return g;
}

/* Five samples one second apart: GPU 0 with every metric, GPU 1 without power or energy and
 * with temperature missing in the third sample. */
static gm_session *five_samples(const unsigned *filter, size_t nfilter)
{
    static const double util[] = {10, 20, 30, 40, 50};
    static const double used[] = {1000, 3000, 2000, 5000, 4000};
    static const double temp[] = {60, 62, 61, 64, 63};
    static const double power[] = {100, 200, 300, 400, 500};
    static const double energy[] = {1000, 1100, 1300, 1600, 2000};
    gm_session *s = NULL;
    int64_t base = mono_ms();
    assert_int_equal(gm_session_new("lbl", filter, nfilter, 1.0, &s, NULL), GM_OK);
    gm_snapshot *snap = gm_snapshot_new();
    for (int k = 0; k < 5; k++) {
        gm_snapshot_reset(snap);
        snap->mono_ms = base + k * 1000;
        set_gpu(snap, 0, 0, util[k], used[k], 10000, temp[k], power[k], energy[k]);
        set_gpu(snap, 1, 1, 5, 100, 10000, k == 2 ? NAN : 30 + k, NAN, NAN);
        assert_int_equal(gm_session_add(s, snap, NULL), GM_OK);
    }
    gm_snapshot_free(snap);
    return s;
}

static void test_exact_stats(void **state)
{
    gm_session *s = five_samples(NULL, 0);
    gm_session_finish(s);
    json_t *doc = gm_session_to_json(s);
    assert_non_null(doc);
    assert_int_equal(json_integer_value(json_object_get(doc, "sample_count")), 5);
    assert_string_equal(json_string_value(json_object_get(doc, "status")), "stopped");
    assert_string_equal(json_string_value(json_object_get(doc, "label")), "lbl");
    assert_string_equal(json_string_value(json_object_get(doc, "id")), gm_session_id(s));

    const json_t *g0 = gpu_stats(doc, "0");
    assert_string_equal(json_string_value(json_object_get(g0, "name")), "GPU model 0");
    /* util 10..50: mean 30; p50 30; p95: h = 4 * 0.95 = 3.8 -> 40 + 0.8 * 10 = 48. */
    assert_float_equal(num(g0, "utilization", "min"), 10, 1e-12);
    assert_float_equal(num(g0, "utilization", "max"), 50, 1e-12);
    assert_float_equal(num(g0, "utilization", "mean"), 30, 1e-12);
    assert_float_equal(num(g0, "utilization", "p50"), 30, 1e-12);
    assert_float_equal(num(g0, "utilization", "p95"), 48, 1e-12);
    assert_int_equal(num(g0, "utilization", "count"), 5);
    assert_int_equal(num(g0, "utilization", "samples"), 5);
    /* memory used {1000, 3000, 2000, 5000, 4000}: sorted 1000..5000, mean 3000, p50 3000,
     * p95 4000 + 0.8 * 1000 = 4800. */
    assert_float_equal(num(g0, "memory_used_mb", "mean"), 3000, 1e-9);
    assert_float_equal(num(g0, "memory_used_mb", "p50"), 3000, 1e-9);
    assert_float_equal(num(g0, "memory_used_mb", "p95"), 4800, 1e-9);
    assert_float_equal(num(g0, "memory_used_mb", "min"), 1000, 1e-9);
    assert_float_equal(num(g0, "memory_used_mb", "max"), 5000, 1e-9);
    /* of 10000 MiB: 10..50 %, mean 30, p95 48. */
    assert_float_equal(num(g0, "memory_usage_percent", "min"), 10, 1e-9);
    assert_float_equal(num(g0, "memory_usage_percent", "mean"), 30, 1e-9);
    assert_float_equal(num(g0, "memory_usage_percent", "p95"), 48, 1e-9);
    /* temp {60, 62, 61, 64, 63}: mean 62, p50 62, p95 63 + 0.8 = 63.8. */
    assert_float_equal(num(g0, "temperature_c", "mean"), 62, 1e-12);
    assert_float_equal(num(g0, "temperature_c", "p50"), 62, 1e-12);
    assert_float_equal(num(g0, "temperature_c", "p95"), 63.8, 1e-9);
    /* power 100..500: mean 300, p95 480. */
    assert_float_equal(num(g0, "power_draw_w", "mean"), 300, 1e-9);
    assert_float_equal(num(g0, "power_draw_w", "p95"), 480, 1e-9);
    assert_null(json_object_get(json_object_get(g0, "power_draw_w"), "samples"));
    /* energy counter 1000 -> 2000 J: 1000 J, from the counter. */
    assert_float_equal(num(g0, "energy_j", NULL), 1000, 1e-6);
    assert_string_equal(json_string_value(json_object_get(g0, "energy_source")), "counter");

    const json_t *g1 = gpu_stats(doc, "1");
    /* temperature missing once: 4 values {30, 31, 33, 34}, mean 32, p50 32, p95: h = 2.85 ->
     * 33 + 0.85 = 33.85. */
    assert_int_equal(num(g1, "temperature_c", "count"), 4);
    assert_float_equal(num(g1, "temperature_c", "mean"), 32, 1e-12);
    assert_float_equal(num(g1, "temperature_c", "p50"), 32, 1e-12);
    assert_float_equal(num(g1, "temperature_c", "p95"), 33.85, 1e-9);
    /* Absent in every sample: null, never zero. */
    assert_true(json_is_null(json_object_get(g1, "power_draw_w")));
    assert_true(json_is_null(json_object_get(g1, "energy_j")));
    assert_true(json_is_null(json_object_get(g1, "energy_source")));
    /* The session's total needs every GPU's energy. */
    assert_true(json_is_null(json_object_get(doc, "energy_j")));
    assert_null(json_object_get(doc, "timeline"));
    json_decref(doc);
    gm_session_free(s);
}

static void test_timeline(void **state)
{
    gm_session *s = five_samples(NULL, 0);
    json_t *doc = with_timeline(s);
    assert_string_equal(json_string_value(json_object_get(doc, "status")), "running");
    assert_true(json_is_null(json_object_get(doc, "ended_at")));
    const json_t *tl = json_object_get(doc, "timeline");
    assert_int_equal(json_array_size(tl), 5);
    const json_t *first = json_array_get(tl, 0), *third = json_array_get(tl, 2);
    /* Offsets follow the snapshots' monotonic times, one second apart. */
    assert_float_equal(num(third, "t", NULL) - num(first, "t", NULL), 2.0, 1e-9);
    const json_t *g0 = json_object_get(json_object_get(third, "gpus"), "0");
    assert_float_equal(num(g0, "utilization", NULL), 30, 1e-12);
    assert_float_equal(num(g0, "memory_used_mb", NULL), 2000, 1e-9);
    assert_float_equal(num(g0, "energy_counter_j", NULL), 1300, 1e-9);
    const json_t *g1 = json_object_get(json_object_get(third, "gpus"), "1");
    assert_true(json_is_null(json_object_get(g1, "temperature_c")));
    assert_true(json_is_null(json_object_get(g1, "power_draw_w")));
    json_decref(doc);
    gm_session_free(s);
}

static void test_filter_and_missing_gpu(void **state)
{
    unsigned only[] = {1, 1, 5}; /* duplicates ignored; 5 never appears: absent throughout */
    gm_session *s = five_samples(only, 3);
    assert_int_equal(gm_session_gpu_count(s), 2);
    assert_int_equal(gm_session_gpu_at(s, 0)->index, 1);
    assert_int_equal(gm_session_gpu_at(s, 1)->index, 5);
    json_t *doc = gm_session_to_json(s);
    const json_t *stats = json_object_get(doc, "gpu_stats");
    assert_null(json_object_get(stats, "0"));
    assert_non_null(json_object_get(stats, "1"));
    const json_t *g5 = json_object_get(stats, "5");
    assert_true(json_is_null(json_object_get(g5, "utilization")));
    assert_true(json_is_null(json_object_get(g5, "name")));
    assert_int_equal(json_array_size(json_object_get(doc, "gpus")), 2);
    json_decref(doc);
    gm_session_free(s);

    /* A list that is given but empty follows no GPU at all. */
    unsigned none[1];
    s = five_samples(none, 0);
    assert_int_equal(gm_session_gpu_count(s), 0);
    assert_int_equal(gm_session_sample_count(s), 5);
    doc = with_timeline(s);
    assert_int_equal(json_object_size(json_object_get(doc, "gpu_stats")), 0);
    assert_true(json_is_null(json_object_get(doc, "energy_j")));
    json_decref(doc);
    gm_session_free(s);
}

static void test_energy_from_power(void **state)
{
    /* No counter: trapezoids. Power 100, 200, 100 W at t = 0, 1, 3 s: 150 * 1 + 150 * 2 =
     * 450 J. A sample without power in between is bridged. */
    gm_session *s = NULL;
    unsigned only[] = {0};
    assert_int_equal(gm_session_new(NULL, only, 1, 0.5, &s, NULL), GM_OK);
    double v[GM_SM__COUNT];
    for (int m = 0; m < GM_SM__COUNT; m++)
        v[m] = NAN;
    v[GM_SM_POWER_W] = 100;
    assert_int_equal(gm_session_add_values(s, 0, v, NULL), GM_OK);
    v[GM_SM_POWER_W] = 200;
    assert_int_equal(gm_session_add_values(s, 1, v, NULL), GM_OK);
    v[GM_SM_POWER_W] = NAN;
    assert_int_equal(gm_session_add_values(s, 2, v, NULL), GM_OK);
    v[GM_SM_POWER_W] = 100;
    assert_int_equal(gm_session_add_values(s, 3, v, NULL), GM_OK);
    json_t *doc = gm_session_to_json(s);
    const json_t *g = gpu_stats(doc, "0");
    assert_float_equal(num(g, "energy_j", NULL), 450, 1e-9);
    assert_string_equal(json_string_value(json_object_get(g, "energy_source")),
                        "power_integration");
    assert_float_equal(num(doc, "energy_j", NULL), 450, 1e-9);
    /* Utilization absent in every sample: null, and the rest is still there. */
    assert_true(json_is_null(json_object_get(g, "utilization")));
    json_decref(doc);
    gm_session_free(s);

    /* One power reading only: no energy at all rather than a guess. */
    assert_int_equal(gm_session_new(NULL, only, 1, 0.5, &s, NULL), GM_OK);
    v[GM_SM_POWER_W] = 100;
    assert_int_equal(gm_session_add_values(s, 0, v, NULL), GM_OK);
    doc = gm_session_to_json(s);
    assert_true(json_is_null(json_object_get(gpu_stats(doc, "0"), "energy_j")));
    json_decref(doc);
    gm_session_free(s);
}

static void test_brief(void **state)
{
    /* GPU 0: utilization 10, 20, 30, power 100 W; GPU 1: utilization 90 once then absent, no
     * power. Mean over every sample 37.5, max 90; energy unknown (GPU 1 has none). */
    gm_session *s = NULL;
    unsigned both[] = {0, 1};
    assert_int_equal(gm_session_new(NULL, both, 2, 1, &s, NULL), GM_OK);
    double v[2 * GM_SM__COUNT];
    for (int k = 0; k < 3; k++) {
        for (int m = 0; m < 2 * GM_SM__COUNT; m++)
            v[m] = NAN;
        v[GM_SM_UTIL] = 10 * (k + 1);
        v[GM_SM_POWER_W] = 100;
        v[GM_SM__COUNT + GM_SM_UTIL] = k == 0 ? 90 : NAN;
        assert_int_equal(gm_session_add_values(s, k, v, NULL), GM_OK);
    }
    json_t *b = gm_session_brief(s);
    assert_float_equal(num(b, "utilization_mean", NULL), 37.5, 1e-9);
    assert_float_equal(num(b, "utilization_max", NULL), 90, 1e-9);
    assert_true(json_is_null(json_object_get(b, "energy_j")));
    /* The same figures from the document. */
    json_t *doc = gm_session_to_json(s);
    json_t *d = gm_session_doc_brief(doc);
    assert_true(json_equal(b, d));
    json_decref(d);
    json_decref(doc);
    json_decref(b);
    gm_session_free(s);

    /* One GPU with power: its energy; no utilization at all: null, never 0. */
    unsigned one[] = {0};
    assert_int_equal(gm_session_new(NULL, one, 1, 1, &s, NULL), GM_OK);
    for (int k = 0; k < 2; k++) {
        for (int m = 0; m < GM_SM__COUNT; m++)
            v[m] = NAN;
        v[GM_SM_POWER_W] = 100;
        assert_int_equal(gm_session_add_values(s, k, v, NULL), GM_OK);
    }
    b = gm_session_brief(s);
    assert_true(json_is_null(json_object_get(b, "utilization_mean")));
    assert_true(json_is_null(json_object_get(b, "utilization_max")));
    assert_float_equal(num(b, "energy_j", NULL), 100, 1e-9);
    doc = gm_session_to_json(s);
    d = gm_session_doc_brief(doc);
    assert_true(json_equal(b, d));
    json_decref(d);
    json_decref(doc);
    json_decref(b);
    gm_session_free(s);
    /* Not a session document: nothing known. */
    doc = json_pack("{s:s}", "kind", "snapshot");
    d = gm_session_doc_brief(doc);
    assert_true(json_is_null(json_object_get(d, "utilization_mean")));
    assert_true(json_is_null(json_object_get(d, "energy_j")));
    json_decref(d);
    json_decref(doc);
}

static void test_energy_counter_reset(void **state)
{
    /* 1000 -> 1500 (+500), reset to 10 (unknown, +0), 10 -> 60 (+50): 550 J. */
    gm_session *s = NULL;
    unsigned only[] = {3};
    assert_int_equal(gm_session_new(NULL, only, 1, 1, &s, NULL), GM_OK);
    const double counter[] = {1000, 1500, 10, 60};
    double v[GM_SM__COUNT];
    for (int m = 0; m < GM_SM__COUNT; m++)
        v[m] = NAN;
    for (int k = 0; k < 4; k++) {
        v[GM_SM_ENERGY_J] = counter[k];
        v[GM_SM_POWER_W] = 1e6; /* ignored: the counter wins */
        assert_int_equal(gm_session_add_values(s, k, v, NULL), GM_OK);
    }
    json_t *doc = gm_session_to_json(s);
    assert_float_equal(num(gpu_stats(doc, "3"), "energy_j", NULL), 550, 1e-9);
    json_decref(doc);
    gm_session_free(s);
}

static void test_lost_gpu_is_absent(void **state)
{
    gm_session *s = NULL;
    assert_int_equal(gm_session_new(NULL, NULL, 0, 1, &s, NULL), GM_OK);
    gm_snapshot *snap = gm_snapshot_new();
    set_gpu(snap, 0, 0, 50, 10, 100, 40, 100, NAN);
    assert_int_equal(gm_session_add(s, snap, NULL), GM_OK);
    snap->gpus[0].lost = true; /* values still in v[], but a lost GPU reports nothing */
    assert_int_equal(gm_session_add(s, snap, NULL), GM_OK);
    json_t *doc = with_timeline(s);
    assert_int_equal(num(gpu_stats(doc, "0"), "utilization", "count"), 1);
    const json_t *second = json_array_get(json_object_get(doc, "timeline"), 1);
    assert_true(json_is_null(
        json_object_get(json_object_get(json_object_get(second, "gpus"), "0"), "utilization")));
    json_decref(doc);
    gm_snapshot_free(snap);
    gm_session_free(s);
}

static void test_metadata_and_finish(void **state)
{
    gm_session *s = NULL;
    gm_error err = {0};
    assert_int_equal(gm_session_new(NULL, NULL, 0, -1, &s, &err), GM_EINVAL);
    assert_null(s);
    assert_int_equal(gm_session_new(NULL, NULL, 0, 0.25, &s, NULL), GM_OK);
    /* Generated id: YYYYMMDD-HHMMSS-xxxxxx. */
    assert_int_equal(strlen(gm_session_id(s)), 22);
    check_eq(gm_session_id(s)[8], '-');
    check_eq(gm_session_id(s)[15], '-');
    assert_string_equal(gm_session_kind(s), "session");
    assert_int_equal(gm_session_set_kind(s, "record"), GM_OK);
    const char *argv[] = {"python", "train.py", "--lr", "1e-3", "it's here", NULL};
    assert_int_equal(gm_session_set_command(s, argv), GM_OK);
    gm_session_set_exit(s, 143, 15);
    assert_null(gm_session_attached(s));
    assert_int_equal(gm_session_attach(s, "audit", json_pack("{s:b}", "changed", 0)), GM_OK);
    assert_int_equal(json_object_size(gm_session_attached(s)), 1);
    assert_non_null(json_object_get(gm_session_attached(s), "audit"));
    char line[128];
    gm_session_command_line(gm_session_command(s), line, sizeof line);
    assert_string_equal(line, "python train.py --lr 1e-3 'it'\\''s here'");
    gm_session_finish(s);
    double d = gm_session_duration(s);
    gm_session_finish(s); /* idempotent: the end does not move */
    check_eq(gm_session_duration(s), d);
    double v[1] = {0};
    assert_int_equal(gm_session_add_values(s, 1, v, &err), GM_ESTATE);
    json_t *doc = gm_session_to_json(s);
    assert_string_equal(json_string_value(json_object_get(doc, "kind")), "record");
    assert_int_equal(json_integer_value(json_object_get(doc, "exit_code")), 143);
    assert_int_equal(json_integer_value(json_object_get(doc, "signal")), 15);
    assert_string_equal(json_string_value(json_array_get(json_object_get(doc, "command"), 4)),
                        "it's here");
    json_decref(doc);
    /* Arguments and a label that are not UTF-8 (a Latin-1 file name) are kept repaired, and the
     * document still renders. */
    const char *latin1[] = {"echo", "caf\xe9.txt", NULL};
    assert_int_equal(gm_session_set_command(s, latin1), GM_OK);
    doc = gm_session_to_json(s);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_array_get(json_object_get(doc, "command"), 1)),
                        "caf\xEF\xBF\xBD.txt");
    char *text = json_dumps(doc, 0);
    assert_non_null(text);
    free(text);
    json_decref(doc);
    gm_session *l = NULL;
    assert_int_equal(gm_session_new("\xff\xfe", NULL, 0, 0.25, &l, NULL), GM_OK);
    json_t *ldoc = gm_session_to_json(l);
    assert_non_null(ldoc);
    assert_string_equal(json_string_value(json_object_get(ldoc, "label")),
                        "\xEF\xBF\xBD\xEF\xBF\xBD");
    json_decref(ldoc);
    gm_session_free(l);
    doc = gm_session_to_json(s);
    assert_true(json_is_false(json_object_get(json_object_get(doc, "audit"), "changed")));
    assert_float_equal(num(doc, "interval_seconds", NULL), 0.25, 1e-12);
    assert_non_null(json_string_value(json_object_get(doc, "started_at")));
    assert_non_null(json_string_value(json_object_get(doc, "ended_at")));
    assert_int_equal(json_integer_value(json_object_get(doc, "sample_count")), 0);
    json_decref(doc);
    gm_session_free(s);
}

static void test_replay_matches(void **state)
{
    /* What the store does: rebuild from the stored values; the statistics must be identical. */
    gm_session *a = five_samples(NULL, 0);
    unsigned idx[] = {0, 1};
    gm_session *b = NULL;
    assert_int_equal(gm_session_new("lbl", idx, 2, 1.0, &b, NULL), GM_OK);
    for (size_t i = 0; i < gm_session_sample_count(a); i++) {
        double t;
        const double *v;
        assert_int_equal(gm_session_sample(a, i, &t, &v), GM_OK);
        assert_int_equal(gm_session_add_values(b, t, v, NULL), GM_OK);
    }
    assert_int_equal(gm_session_sample(a, 99, &(double){0}, &(const double *){NULL}), GM_EINVAL);
    json_t *ja = with_timeline(a), *jb = with_timeline(b);
    assert_true(json_equal(json_object_get(ja, "timeline"), json_object_get(jb, "timeline")));
    const json_t *ga = gpu_stats(ja, "0"), *gb = gpu_stats(jb, "0");
    assert_true(json_equal(json_object_get(ga, "utilization"), json_object_get(gb, "utilization")));
    assert_true(json_equal(json_object_get(ga, "energy_j"), json_object_get(gb, "energy_j")));
    json_decref(ja);
    json_decref(jb);
    gm_session_free(a);
    gm_session_free(b);
}

/* Replays the first n samples of src into a new session over GPUs 0 and 1 with sample limit
 * limit (0: none). */
static gm_session *replay_first(gm_session *src, size_t n, size_t limit)
{
    unsigned idx[] = {0, 1};
    gm_session *s = NULL;
    assert_int_equal(gm_session_new("lbl", idx, 2, 1.0, &s, NULL), GM_OK);
    assert_int_equal(gm_session_set_sample_limit(s, limit), GM_OK);
    assert_int_equal(gm_session_sample_limit(s), limit);
    for (size_t i = 0; i < n; i++) {
        double t;
        const double *v;
        assert_int_equal(gm_session_sample(src, i, &t, &v), GM_OK);
        assert_int_equal(gm_session_add_values(s, t, v, NULL), GM_OK);
    }
    return s;
}

static void test_sample_limit(void **state)
{
    gm_session *all = five_samples(NULL, 0);
    gm_session *bounded = replay_first(all, 5, 3);
    gm_session *first3 = replay_first(all, 3, 0);

    /* Counts: every sample added; the timeline stops at the limit. */
    assert_int_equal(gm_session_sample_count(bounded), 5);
    assert_int_equal(gm_session_timeline_count(bounded), 3);
    assert_int_equal(gm_session_timeline_count(all), 5);
    double t, t4;
    const double *v, *v4;
    assert_int_equal(gm_session_sample(bounded, 3, &t, &v), GM_EINVAL);
    /* The newest sample stays readable past the limit (what the daemon stores). */
    assert_int_equal(gm_session_last(bounded, &t, &v), GM_OK);
    assert_int_equal(gm_session_sample(all, 4, &t4, &v4), GM_OK);
    check_eq(t, t4);
    assert_memory_equal(v, v4, 2 * GM_SM__COUNT * sizeof *v);
    /* Lowering the limit under what is kept is refused; the same limit is fine. */
    assert_int_equal(gm_session_set_sample_limit(bounded, 2), GM_ESTATE);
    assert_int_equal(gm_session_set_sample_limit(bounded, 3), GM_OK);

    json_t *jall = with_timeline(all), *jb = with_timeline(bounded), *j3 = with_timeline(first3);
    assert_int_equal(num(jb, "sample_count", NULL), 5);
    assert_int_equal(num(jb, "percentiles_over_samples", NULL), 3);
    assert_true(json_is_true(json_object_get(jb, "timeline_truncated")));
    assert_int_equal(num(jall, "percentiles_over_samples", NULL), 5);
    assert_true(json_is_false(json_object_get(jall, "timeline_truncated")));
    assert_true(json_equal(json_object_get(jb, "timeline"), json_object_get(j3, "timeline")));
    static const char *const metrics[] = {"utilization", "memory_used_mb", "memory_usage_percent",
                                          "temperature_c", "power_draw_w"};
    for (int g = 0; g < 2; g++) {
        const char *key = g ? "1" : "0";
        const json_t *gb = gpu_stats(jb, key), *ga = gpu_stats(jall, key), *g3 = gpu_stats(j3, key);
        for (size_t m = 0; m < sizeof metrics / sizeof *metrics; m++) {
            const json_t *b = json_object_get(gb, metrics[m]);
            if (json_is_null(b)) { /* GPU 1 has no power at all */
                assert_true(json_is_null(json_object_get(ga, metrics[m])));
                continue;
            }
            /* Streaming statistics: over all five samples. */
            for (int f = 0; f < 4; f++) {
                const char *field = (const char *[]){"min", "max", "mean", "count"}[f];
                assert_true(json_equal(json_object_get(b, field),
                                       json_object_get(json_object_get(ga, metrics[m]), field)));
            }
            /* Percentiles: over the first three. */
            for (int f = 0; f < 2; f++) {
                const char *field = f ? "p95" : "p50";
                assert_true(json_equal(json_object_get(b, field),
                                       json_object_get(json_object_get(g3, metrics[m]), field)));
            }
        }
        assert_true(json_equal(json_object_get(gb, "energy_j"), json_object_get(ga, "energy_j")));
    }
    /* GPU 0 by hand: utilization 10..50 -> mean 30 over five, p50 of {10, 20, 30} = 20; energy
     * from the counter over all five: 2000 - 1000 J. */
    assert_float_equal(num(gpu_stats(jb, "0"), "utilization", "mean"), 30, 1e-12);
    assert_float_equal(num(gpu_stats(jb, "0"), "utilization", "p50"), 20, 1e-12);
    assert_float_equal(num(gpu_stats(jb, "0"), "energy_j", NULL), 1000, 1e-9);

    /* The summary says what the percentiles cover. */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    gm_session_print_summary(f, jb);
    fclose(f);
    assert_non_null(strstr(buf, "5 samples"));
    assert_non_null(strstr(buf, "p50/p95 over the first 3 samples"));
    free(buf);
    f = open_memstream(&buf, &len);
    gm_session_print_summary(f, jall);
    fclose(f);
    assert_null(strstr(buf, "p50/p95 over"));
    free(buf);

    /* A rebuilt session that never finished lasted until its newest sample, kept or not. */
    gm_session_restore(bounded, "restored", gm_session_started_ms(bounded), 0);
    check_eq(gm_session_duration(bounded), t4);
    json_decref(jall);
    json_decref(jb);
    json_decref(j3);
    gm_session_free(all);
    gm_session_free(bounded);
    gm_session_free(first3);
}

static void test_summary_prints(void **state)
{
    gm_session *s = five_samples(NULL, 0);
    gm_session_finish(s);
    json_t *doc = gm_session_to_json(s);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    gm_session_print_summary(f, doc);
    fclose(f);
    assert_non_null(strstr(buf, ": stopped"));
    assert_non_null(strstr(buf, "5 samples"));
    assert_non_null(strstr(buf, "GPU model 0"));
    assert_non_null(strstr(buf, "1000.0")); /* energy of GPU 0 */
    assert_null(strstr(buf, "simulated"));
    free(buf);
    /* Simulated GPUs are said to be so. */
    json_object_set_new(doc, "provider", json_string("sim"));
    f = open_memstream(&buf, &len);
    gm_session_print_summary(f, doc);
    fclose(f);
    assert_non_null(strstr(buf, "\nsimulated GPUs (provider sim)"));
    free(buf);
    json_decref(doc);
    gm_session_free(s);
}

/* A caller that named things after the session before it began (run --image) sets its id. */
static void test_set_id(void **state)
{
    (void)state;
    gm_session *s = NULL;
    gm_error err = {0};
    assert_int_equal(gm_session_new(NULL, NULL, 0, 1, &s, &err), GM_OK);
    assert_int_equal(gm_session_set_id(s, "20260101-000000-abcdef"), GM_OK);
    assert_string_equal(gm_session_id(s), "20260101-000000-abcdef");
    assert_int_equal(gm_session_set_id(s, ""), GM_EINVAL);
    assert_int_equal(gm_session_set_id(s, "0123456789012345678901234567890123456789"), GM_EINVAL);
    assert_string_equal(gm_session_id(s), "20260101-000000-abcdef");
    json_t *doc = gm_session_to_json(s);
    assert_string_equal(json_string_value(json_object_get(doc, "id")), "20260101-000000-abcdef");
    json_decref(doc);
    gm_session_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_stats),
        cmocka_unit_test(test_timeline),
        cmocka_unit_test(test_filter_and_missing_gpu),
        cmocka_unit_test(test_energy_from_power),
        cmocka_unit_test(test_energy_counter_reset),
        cmocka_unit_test(test_brief),
        cmocka_unit_test(test_lost_gpu_is_absent),
        cmocka_unit_test(test_metadata_and_finish),
        cmocka_unit_test(test_replay_matches),
        cmocka_unit_test(test_sample_limit),
        cmocka_unit_test(test_summary_prints),
        cmocka_unit_test(test_set_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
