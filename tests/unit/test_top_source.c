/* test_top_source.c - `gpumon top`'s data (src/cli/top_source.c, compiled in: the program is no
 * library): which GPU of the previous frame a GPU's history continues, and -i over a reading. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/top_source.h"

static gm_top_gpu gpu(unsigned index, const char *uuid, const char *bus)
{
    gm_top_gpu g = {.index = index};
    snprintf(g.uuid, sizeof g.uuid, "%s", uuid);
    snprintf(g.bus_id, sizeof g.bus_id, "%s", bus);
    return g;
}

static void test_history_by_uuid(void **state)
{
    (void)state;
    gm_top_gpu old[3] = {gpu(0, "GPU-a", "00000000:1B:00.0"), gpu(1, "GPU-b", "00000000:2A:00.0"),
                         gpu(2, "GPU-c", "00000000:3C:00.0")};
    /* The same GPUs in another order, and under another index: found by UUID. */
    gm_top_gpu b = gpu(0, "GPU-b", "00000000:2A:00.0");
    assert_ptr_equal(gm_top_history_of(old, 3, &b), &old[1]);
    gm_top_gpu c = gpu(2, "GPU-c", "00000000:3C:00.0");
    assert_ptr_equal(gm_top_history_of(old, 3, &c), &old[2]);
    /* Another GPU at a known index or bus id is a new GPU, never the old one's graph. */
    gm_top_gpu d = gpu(1, "GPU-d", "00000000:2A:00.0");
    assert_null(gm_top_history_of(old, 3, &d));
    /* A GPU gone from the frame: the others still find their own. */
    assert_ptr_equal(gm_top_history_of(old + 1, 2, &c), &old[2]);
    assert_null(gm_top_history_of(old, 0, &b));
}

static void test_history_without_uuid(void **state)
{
    (void)state;
    gm_top_gpu old[2] = {gpu(0, "", "00000000:1B:00.0"), gpu(1, "", "")};
    gm_top_gpu by_bus = gpu(5, "", "00000000:1B:00.0");
    assert_ptr_equal(gm_top_history_of(old, 2, &by_bus), &old[0]);
    gm_top_gpu by_index = gpu(1, "", "");
    assert_ptr_equal(gm_top_history_of(old, 2, &by_index), &old[1]);
    gm_top_gpu other = gpu(0, "", "");
    assert_null(gm_top_history_of(old, 2, &other)); /* index 0 has a bus id: another GPU */
    /* A UUID never matches a GPU that had none. */
    gm_top_gpu with_uuid = gpu(1, "GPU-x", "");
    assert_null(gm_top_history_of(old, 2, &with_uuid));
}

/* -i over simulated GPUs: the frame holds the GPUs selected, each history growing as its own. */
static void test_filter_and_history(void **state)
{
    (void)state;
    gm_cli_source src = {.simulate = 3, .seed = 7};
    int code = 0;
    gm_top_source *s = gm_top_open_local(&src, &code);
    assert_non_null(s);
    gm_cli_gpu_filter f;
    assert_true(gm_cli_parse_gpu_filter("top", "2,0", &f));
    gm_top_set_filter(s, &f);
    gm_top_frame *fr = calloc(1, sizeof *fr);
    assert_non_null(fr);
    for (int i = 0; i < 3; i++)
        assert_int_equal(gm_top_read(s, fr), GM_OK);
    assert_int_equal(fr->ngpu, 2);
    assert_int_equal(fr->gpus[0].index, 0);
    assert_int_equal(fr->gpus[1].index, 2);
    assert_int_equal(fr->gpus[0].nhist, 3);
    assert_int_equal(fr->gpus[1].nhist, 3);
    assert_true(fr->gpus[1].bus_id[0] != '\0');
    for (size_t p = 0; p < fr->nproc; p++)
        assert_true(fr->procs[p].gpu != 1);
    /* An item that matches no GPU: said, while the GPUs that match are shown. */
    assert_true(gm_cli_parse_gpu_filter("top", "1,9", &f));
    gm_top_set_filter(s, &f);
    assert_int_equal(gm_top_read(s, fr), GM_ENOENT);
    assert_string_equal(fr->error, "no GPU matches \"9\" (have 3 GPUs)");
    assert_int_equal(fr->ngpu, 1);
    assert_int_equal(fr->gpus[0].index, 1);
    assert_int_equal(fr->gpus[0].nhist, 1); /* new to the frame: a history of its own */
    free(fr);
    gm_top_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_history_by_uuid),
        cmocka_unit_test(test_history_without_uuid),
        cmocka_unit_test(test_filter_and_history),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
