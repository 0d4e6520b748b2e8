/* test_session_body.c - server/session_body: the POST /api/sessions body against a sample of two
 * GPUs (indices 0 and 3): defaults, each field, and the errors a 400 explains. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/session_body.h"

static gm_snapshot *two_gpus(void)
{
    gm_snapshot *s = calloc(1, sizeof *s);
    s->gpu_count = 2;
    s->gpus[0].index = 0;
    s->gpus[1].index = 3; /* indices need not be dense */
    return s;
}

static int parse(const char *body, unsigned poll_ms, gm_session_request *r, gm_error *err)
{
    gm_snapshot *s = two_gpus();
    memset(err, 0, sizeof *err);
    int rc = gm_session_request_parse(body, strlen(body), s, poll_ms, r, err);
    free(s);
    return rc;
}

static void test_request_defaults(void **state)
{
    (void)state;
    gm_session_request r;
    gm_error err;
    const char *empty[] = {"", "  \n", "{}",
                           "{\"gpus\": null, \"interval\": null, \"label\": null}"};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(parse(empty[i], 1000, &r, &err), GM_OK);
        assert_int_equal(r.ngpus, 2);
        assert_int_equal(r.gpus[0], 0);
        assert_int_equal(r.gpus[1], 3);
        assert_int_equal(r.every, 1);
        assert_true(r.interval_s == 1.0);
        assert_false(r.has_label);
    }
}

static void test_request_fields(void **state)
{
    (void)state;
    gm_session_request r;
    gm_error err;
    assert_int_equal(
        parse("{\"gpus\": [3, 0, 3], \"interval\": 2, \"label\": \"run é\"}", 1000, &r, &err),
        GM_OK);
    assert_int_equal(r.ngpus, 2); /* sorted, duplicates gone */
    assert_int_equal(r.gpus[0], 0);
    assert_int_equal(r.gpus[1], 3);
    assert_int_equal(r.every, 2);
    assert_true(r.interval_s == 2.0);
    assert_true(r.has_label);
    assert_string_equal(r.label, "run é");
    /* Intervals round to the nearest multiple of the poll interval. */
    assert_int_equal(parse("{\"interval\": 2.4}", 1000, &r, &err), GM_OK);
    assert_int_equal(r.every, 2);
    assert_int_equal(parse("{\"interval\": 2.6}", 1000, &r, &err), GM_OK);
    assert_int_equal(r.every, 3);
    assert_true(r.interval_s == 3.0);
    assert_int_equal(parse("{\"interval\": 0.1}", 100, &r, &err), GM_OK);
    assert_int_equal(r.every, 1);
    assert_int_equal(parse("{\"gpus\": [3]}", 1000, &r, &err), GM_OK);
    assert_int_equal(r.ngpus, 1);
    assert_int_equal(r.gpus[0], 3);
}

static void test_request_errors(void **state)
{
    (void)state;
    static const struct {
        const char *body;
        const char *needle;
    } cases[] = {
        {"{bad", "not valid JSON"},
        {"[1, 2]", "JSON object"},
        {"\"x\"", "JSON object"},
        {"{\"label\": \"a\", \"label\": \"b\"}", "not valid JSON"},
        {"{\"gpu\": [0]}", "unknown field \"gpu\""},
        {"{\"gpus\": \"0\"}", "\"gpus\" must be an array"},
        {"{\"gpus\": []}", "\"gpus\" must be an array"},
        {"{\"gpus\": [-1]}", "\"gpus\"[0] is not a GPU index"},
        {"{\"gpus\": [0.5]}", "\"gpus\"[0] is not a GPU index"},
        {"{\"gpus\": [0, \"1\"]}", "\"gpus\"[1] is not a GPU index"},
        {"{\"gpus\": [1]}", "no GPU with index 1 (GPUs: 0, 3)"},
        {"{\"interval\": \"1\"}", "\"interval\" must be a number"},
        {"{\"interval\": 0.5}", "from 1 (the poll interval"},
        {"{\"interval\": 0}", "\"interval\""},
        {"{\"interval\": -2}", "\"interval\""},
        {"{\"interval\": 1e9}", "\"interval\""},
        {"{\"label\": 5}", "\"label\" must be a string"},
        {"{\"label\": \"a\\u0001b\"}", "without control characters"},
        {"{\"label\": \"a\\u0000b\"}", "not valid JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        gm_session_request r;
        gm_error err;
        if (parse(cases[i].body, 1000, &r, &err) != GM_EINVAL || !strstr(err.msg, cases[i].needle))
            fail_msg("%s: got \"%s\", wanted \"%s\"", cases[i].body, err.msg, cases[i].needle);
    }
    /* The label limit is in bytes. */
    char body[400], label[GM_SESSION_LABEL_MAX + 2];
    memset(label, 'x', sizeof label - 1);
    label[GM_SESSION_LABEL_MAX + 1] = '\0';
    snprintf(body, sizeof body, "{\"label\": \"%s\"}", label);
    gm_session_request r;
    gm_error err;
    assert_int_equal(parse(body, 1000, &r, &err), GM_EINVAL);
    label[GM_SESSION_LABEL_MAX] = '\0';
    snprintf(body, sizeof body, "{\"label\": \"%s\"}", label);
    assert_int_equal(parse(body, 1000, &r, &err), GM_OK);
    /* No GPU at all: nothing to follow. */
    gm_snapshot none = {0};
    assert_int_equal(gm_session_request_parse("{}", 2, &none, 1000, &r, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "no GPU is visible"));
    /* Found by fuzz_session_body: a body of NUL bytes passed for a blank one (strchr finds the
     * NUL too), and jansson 2.14 drops a NUL right after a number ("27\0," loaded as 27,).
     * JSON text holds no NUL byte. */
    gm_snapshot *two = two_gpus();
    static const char nuls[3] = {0, 0, 0};
    static const char after_number[] = "{\"interval\": 2\0, \"label\": \"x\"}";
    assert_int_equal(gm_session_request_parse(nuls, sizeof nuls, two, 1000, &r, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "not valid JSON"));
    assert_int_equal(
        gm_session_request_parse(after_number, sizeof after_number - 1, two, 1000, &r, &err),
        GM_EINVAL);
    assert_non_null(strstr(err.msg, "NUL byte"));
    free(two);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_defaults),
        cmocka_unit_test(test_request_fields),
        cmocka_unit_test(test_request_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
