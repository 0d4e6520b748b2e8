/* test_bench_container.c - core/bench_container's options: set by long name ('_' for '-'), as
 * argv and the daemon's job bodies set them, with the CLI's words; an engine that cannot be
 * used is said, not guessed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/bench_container.h"

static void test_defaults_and_values(void **state)
{
    (void)state;
    gm_bench_ctr_opts o;
    gm_error err = {0};
    gm_bench_ctr_defaults(&o);
    assert_int_equal(o.port, 8000);
    assert_true(o.ready_timeout_s == 1800);
    assert_null(o.given);
    assert_int_equal(gm_bench_ctr_set(&o, "image", "nvcr.io/nim/meta/llama:1.0", &err), GM_OK);
    assert_string_equal(o.image, "nvcr.io/nim/meta/llama:1.0");
    assert_null(o.given); /* the image is not "a container option without --image" */
    assert_int_equal(gm_bench_ctr_set(&o, "container_port", "9000", &err), GM_OK);
    assert_int_equal(o.port, 9000);
    assert_true(o.port_given);
    assert_string_equal(o.given, "--container-port");
    assert_int_equal(gm_bench_ctr_set(&o, "shm-size", "1g", &err), GM_OK);
    assert_int_equal(o.shm_bytes, INT64_C(1) << 30);
    assert_int_equal(gm_bench_ctr_set(&o, "ready_timeout", "90s", &err), GM_OK);
    assert_true(o.ready_timeout_s == 90);
    assert_int_equal(gm_bench_ctr_set(&o, "ready_path", "/health", &err), GM_OK);
    assert_string_equal(o.ready_path, "/health");
    assert_true(o.ready_given);
    assert_int_equal(gm_bench_ctr_set(&o, "env", "A=1", &err), GM_OK);
    assert_int_equal(gm_bench_ctr_set(&o, "env", "NGC_API_KEY", &err), GM_OK);
    assert_int_equal(o.nenv, 2);
    assert_int_equal(gm_bench_ctr_set(&o, "volume", "cache:/c:ro", &err), GM_OK);
    assert_int_equal(o.nvolumes, 1);
    assert_int_equal(gm_bench_ctr_set(&o, "pull", NULL, &err), GM_OK);
    assert_int_equal(gm_bench_ctr_set(&o, "keep_container", NULL, &err), GM_OK);
    assert_true(o.pull && o.keep);
    assert_string_equal(o.given, "--container-port");
}

static void test_errors_in_the_clis_words(void **state)
{
    (void)state;
    gm_bench_ctr_opts o;
    gm_error err = {0};
    gm_bench_ctr_defaults(&o);
    assert_int_equal(gm_bench_ctr_set(&o, "container-port", "0", &err), GM_EINVAL);
    assert_string_equal(err.msg,
                        "--container-port expects a whole number from 1 to 65535, got \"0\"");
    assert_int_equal(gm_bench_ctr_set(&o, "image", "-x", &err), GM_EINVAL);
    assert_string_equal(err.msg,
                        "--image \"-x\" is not an image reference (NAME[:TAG] or NAME@DIGEST)");
    assert_int_equal(gm_bench_ctr_set(&o, "env", "CUDA_VISIBLE_DEVICES=0", &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "DeviceRequests by UUID"));
    assert_int_equal(gm_bench_ctr_set(&o, "env", "1A=2", &err), GM_EINVAL);
    assert_int_equal(gm_bench_ctr_set(&o, "volume", "cache:rel", &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "absolute CONTAINER path"));
    assert_int_equal(gm_bench_ctr_set(&o, "shm_size", "1k", &err), GM_EINVAL);
    assert_int_equal(gm_bench_ctr_set(&o, "ready_path", "health", &err), GM_EINVAL);
    assert_int_equal(gm_bench_ctr_set(&o, "ready_timeout", "0.5", &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "--ready-timeout expects a duration from 1s to 604800s"));
    assert_int_equal(gm_bench_ctr_set(&o, "ready_path", NULL, &err), GM_EINVAL);
    assert_string_equal(err.msg, "--ready-path needs a value");
    assert_int_equal(gm_bench_ctr_set(&o, "requests", "5", &err), GM_ENOENT);
    assert_int_equal(o.nenv, 0);
    assert_int_equal(o.nvolumes, 0);
}

static void test_an_engine_gpumon_cannot_use(void **state)
{
    (void)state;
    gm_bench_ctr_opts o;
    gm_bench_ctr *c = (gm_bench_ctr *)&o;
    gm_error err = {0};
    gm_bench_ctr_defaults(&o);
    o.image = "x:1";
    assert_int_equal(gm_bench_ctr_open(&o, "tcp://h:2375", NULL, 0, NULL, &c, &err), GM_ENOTSUP);
    assert_null(c);
    assert_int_equal(
        gm_bench_ctr_open(&o, "unix:///nonexistent/gpumon-test.sock", NULL, 0, NULL, &c, &err),
        GM_EIO);
    assert_null(c);
    gm_bench_ctr_close(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_and_values),
        cmocka_unit_test(test_errors_in_the_clis_words),
        cmocka_unit_test(test_an_engine_gpumon_cannot_use),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
