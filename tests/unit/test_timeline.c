/* test_timeline.c - core/timeline, the one timeline writer: its JSON is byte for byte what
 * jansson writes for the same tree (compact for the API, indented for files), its CSV has one
 * row per GPU per sample, absent values are null or empty, and written through a file it is
 * whole however long. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/timeline.h"

/* Two GPUs (3 and 7), three samples; GPU 7 lacks power throughout and temperature once. */
static const unsigned gpu[2] = {3, 7};

static void values(int i, double *v)
{
    for (int k = 0; k < 2; k++)
        for (int m = 0; m < GM_SM__COUNT; m++)
            v[k * GM_SM__COUNT + m] = 10.0 * i + k + m + (m == 1 ? 0.25 : 0);
    v[GM_SM__COUNT + GM_SM_POWER_W] = NAN;
    if (i == 1)
        v[GM_SM__COUNT + GM_SM_TEMP_C] = NAN;
}

static double t_of(int i)
{
    return i == 2 ? 1.0 : 0.5 * i; /* samples 1 and 2 share a time: both stay */
}

/* The same timeline built with jansson. */
static json_t *jansson_timeline(void)
{
    json_t *tl = json_array();
    for (int i = 0; i < 3; i++) {
        double v[2 * GM_SM__COUNT];
        values(i, v);
        json_t *gpus = json_object();
        for (int k = 0; k < 2; k++) {
            json_t *g = json_object();
            for (int m = 0; m < GM_SM__COUNT; m++) {
                double x = v[k * GM_SM__COUNT + m];
                json_object_set_new(g, gm_session_metric_name(m),
                                    isfinite(x) ? json_real(x) : json_null());
            }
            char key[8];
            snprintf(key, sizeof key, "%u", gpu[k]);
            json_object_set_new(gpus, key, g);
        }
        json_array_append_new(tl, json_pack("{s:f, s:o}", "t", t_of(i), "gpus", gpus));
    }
    return tl;
}

static char *write_doc(gm_timeline_format f, const json_t *doc)
{
    gm_buf b;
    gm_buf_init(&b, 0);
    gm_timeline *tl = NULL;
    assert_int_equal(doc ? gm_timeline_open_doc(f, doc, &b, NULL, &tl)
                         : gm_timeline_open(f, &b, NULL, &tl),
                     GM_OK);
    for (int i = 0; i < 3; i++) {
        double v[2 * GM_SM__COUNT];
        values(i, v);
        gm_timeline_add(tl, t_of(i), 2, gpu, v);
    }
    assert_int_equal(gm_timeline_count(tl), 3);
    assert_int_equal(gm_timeline_close(tl, NULL), GM_OK);
    return gm_buf_take(&b, NULL);
}

static void test_json_matches_jansson(void **state)
{
    (void)state;
    json_t *doc = json_pack("{s:s, s:i, s:n}", "id", "x", "sample_count", 3, "label");
    json_t *want = json_deep_copy(doc);
    json_object_set_new(want, "timeline", jansson_timeline());

    char *compact = write_doc(GM_TIMELINE_JSON, doc);
    char *expect = json_dumps(want, JSON_COMPACT | JSON_REAL_PRECISION(12));
    assert_string_equal(compact, expect);
    free(compact);
    free(expect);

    char *pretty = write_doc(GM_TIMELINE_JSON_PRETTY, doc);
    expect = json_dumps(want, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
    size_t n = strlen(expect);
    assert_int_equal(strlen(pretty), n + 1); /* plus the final newline of a file */
    assert_memory_equal(pretty, expect, n);
    assert_int_equal(pretty[n], '\n');
    free(pretty);
    free(expect);

    /* The bare array, as GET /api/sessions/{id} would embed it. */
    char *bare = write_doc(GM_TIMELINE_JSON, NULL);
    json_t *tl = jansson_timeline();
    expect = json_dumps(tl, JSON_COMPACT | JSON_REAL_PRECISION(12));
    assert_string_equal(bare, expect);
    free(bare);
    free(expect);
    json_decref(tl);
    json_decref(want);
    json_decref(doc);
}

static void test_empty(void **state)
{
    (void)state;
    json_t *doc = json_object();
    gm_buf b;
    gm_buf_init(&b, 0);
    gm_timeline *tl = NULL;
    assert_int_equal(gm_timeline_open_doc(GM_TIMELINE_JSON, doc, &b, NULL, &tl), GM_OK);
    assert_int_equal(gm_timeline_close(tl, NULL), GM_OK);
    assert_string_equal(b.p, "{\"timeline\":[]}");
    gm_buf_free(&b);
    assert_int_equal(gm_timeline_open_doc(GM_TIMELINE_CSV, doc, &b, NULL, &tl), GM_EINVAL);
    json_decref(doc);
}

static void test_csv(void **state)
{
    (void)state;
    char *csv = write_doc(GM_TIMELINE_CSV, NULL);
    char *line = csv;
    int rows = 0;
    for (char *nlp; (nlp = strchr(line, '\n')); line = nlp + 1, rows++) {
        *nlp = '\0';
        if (rows == 0)
            assert_string_equal(line, "time,t_s,gpu,utilization_percent,memory_used_mib,"
                                      "memory_used_percent,temperature_c,power_w,energy_counter_j,"
                                      "simulated");
        /* No start given: the absolute time is left empty; fixed decimals per column. */
        if (rows == 2) /* sample 0, GPU 7: power absent, empty */
            assert_string_equal(line, ",0.000,7,1.0,2.25,3.00,4.0,,6.000,false");
        if (rows == 4) /* sample 1, GPU 7: temperature absent too */
            assert_string_equal(line, ",0.500,7,11.0,12.25,13.00,,,16.000,false");
    }
    assert_int_equal(rows, 1 + 3 * 2);
    free(csv);
}

static void test_through_a_file(void **state)
{
    (void)state;
    /* Far more than the 64 KiB the writer holds before writing: the file gets all of it, in
     * order, and the buffer stays small. */
    FILE *f = tmpfile();
    assert_non_null(f);
    gm_buf b;
    gm_buf_init(&b, 0);
    gm_timeline *tl = NULL;
    assert_int_equal(gm_timeline_open(GM_TIMELINE_CSV, &b, f, &tl), GM_OK);
    gm_timeline_set_start_ms(tl, 1764000000000); /* 2025-11-24T16:00:00Z */
    gm_timeline_set_simulated(tl, true);
    double v[2 * GM_SM__COUNT];
    values(0, v);
    for (int i = 0; i < 20000; i++)
        gm_timeline_add(tl, i, 2, gpu, v);
    check_lt(b.cap, (256u << 10));
    assert_int_equal(gm_timeline_close(tl, NULL), GM_OK);
    gm_buf_free(&b);
    long size = ftell(f);
    rewind(f);
    char *all = malloc((size_t)size + 1);
    assert_int_equal(fread(all, 1, (size_t)size, f), (size_t)size);
    all[size] = '\0';
    int lines = 0;
    for (char *p = all; (p = strchr(p, '\n')); p++)
        lines++;
    assert_int_equal(lines, 1 + 20000 * 2);
    assert_non_null(strstr(all, "\n2025-11-24T21:33:19.000Z,19999.000,7,"));
    assert_non_null(strstr(all, ",true\n"));
    assert_null(strstr(all, ",false\n"));
    free(all);
    fclose(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_matches_jansson),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_csv),
        cmocka_unit_test(test_through_a_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
