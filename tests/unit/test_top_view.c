/* test_top_view.c - where `gpumon top` puts each part of its screen (src/cli/top_view.c,
 * compiled in: the program is no library), computed without a terminal: the GPUs' rows, the
 * graphs that take what is left, the process list that follows the selection and its "+N more"
 * row, at the minimum size, a large terminal, one too small, many GPUs and many processes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli/top_view.h"

/* A frame of ngpu GPUs and nproc processes: user "alice" owns the even ones, "bob" the odd. */
static gm_top_frame *frame(unsigned ngpu, size_t nproc, size_t dropped)
{
    gm_top_frame *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->ngpu = ngpu;
    for (unsigned i = 0; i < ngpu; i++) {
        f->gpus[i].index = i;
        snprintf(f->gpus[i].name, sizeof f->gpus[i].name, "NVIDIA H100 80GB HBM3");
    }
    f->nproc = nproc;
    f->proc_dropped = dropped;
    for (size_t i = 0; i < nproc; i++) {
        f->procs[i].pid = 1000 + (uint32_t)i;
        f->procs[i].gpu_mem_mib = NAN;
        snprintf(f->procs[i].user, sizeof f->procs[i].user, "%s", i % 2 ? "bob" : "alice");
        snprintf(f->procs[i].command, sizeof f->procs[i].command, "python train.py");
    }
    return f;
}

static gm_top_layout layout(const gm_top_frame *f, const gm_top_view_state *st, int cols, int rows)
{
    gm_top_layout l;
    gm_top_view_layout(f, st, cols, rows, &l);
    return l;
}

/* The minimum terminal with two GPUs: each GPU on two rows, one pair of graphs over what the
 * list leaves, and a list of three rows (more than the two processes need). */
static void test_80x24(void **state)
{
    (void)state;
    gm_top_frame *f = frame(2, 2, 0);
    gm_top_view_state st = {0};
    gm_top_layout l = layout(f, &st, 80, 24);
    assert_false(l.too_small);
    check_eq(l.gpu_y, 2);
    assert_true(l.gpu_two_rows);
    check_eq(l.gpu_name_w, 22);
    check_eq(l.gpus_shown, 2u);
    check_eq(l.more_gpus_y, -1);
    check_eq(l.graph_y, 6);
    check_eq(l.graph_rows, 13);
    check_eq(l.graph_w, 38);
    assert_false(l.graph_four);
    check_eq(l.graph_top_rows, 13);
    check_eq(l.header_y, 19);
    check_eq(l.list_y, 20);
    check_eq(l.list_rows, 3);
    check_eq(l.proc_rows, 3);
    check_eq(l.status_y, -1);
    check_eq(l.nvis, 2u);
    check_eq(l.procs_drawn, 2u);
    check_eq(l.below, 0u);
    check_eq(l.page, 3u);
    check_eq(l.keys_y, 23);
    free(f);
}

/* A large terminal: four graphs, taller; with more processes than half of what is left, the
 * list gets that half, its last row saying how many more there are. */
static void test_200x50(void **state)
{
    (void)state;
    gm_top_frame *f = frame(2, 2, 0);
    gm_top_view_state st = {0};
    gm_top_layout l = layout(f, &st, 200, 50);
    check_eq(l.graph_y, 6);
    check_eq(l.graph_rows, 39);
    assert_true(l.graph_four);
    check_eq(l.graph_top_rows, 19);
    check_eq(l.graph_w, 98);
    check_eq(l.header_y, 45);
    check_eq(l.list_rows, 3);
    check_eq(l.keys_y, 49);
    free(f);

    f = frame(2, 30, 0);
    l = layout(f, &st, 200, 50);
    check_eq(l.graph_rows, 21);
    check_eq(l.graph_top_rows, 10);
    check_eq(l.header_y, 27);
    check_eq(l.list_y, 28);
    check_eq(l.list_rows, 21);
    check_eq(l.proc_rows, 20);
    check_eq(l.status_y, 48);
    check_eq(l.procs_drawn, 20u);
    check_eq(l.below, 10u);
    check_eq(l.page, 20u);
    free(f);
}

static void test_too_small(void **state)
{
    (void)state;
    gm_top_frame *f = frame(1, 1, 0);
    gm_top_view_state st = {0};
    assert_true(layout(f, &st, 79, 24).too_small);
    assert_true(layout(f, &st, 80, 23).too_small);
    assert_true(layout(f, &st, 0, 0).too_small);
    assert_false(layout(f, &st, GM_TOP_MIN_COLS, GM_TOP_MIN_ROWS).too_small);
    free(f);
}

/* GPUs take one row each when two each would leave no graph, and past what the screen holds a
 * row says how many more; the graphs go before the list's three rows do. */
static void test_many_gpus(void **state)
{
    (void)state;
    gm_top_view_state st = {0};
    gm_top_frame *f = frame(4, 0, 0);
    gm_top_layout l = layout(f, &st, 80, 24);
    assert_true(l.gpu_two_rows); /* 8 rows, and a graph of 9 */
    check_eq(l.graph_rows, 9);
    free(f);

    f = frame(8, 0, 0);
    l = layout(f, &st, 80, 24);
    assert_false(l.gpu_two_rows);
    check_eq(l.gpu_name_w, 14);
    check_eq(l.gpus_shown, 8u);
    check_eq(l.graph_y, 10);
    check_eq(l.graph_rows, 9);
    free(f);

    f = frame(GM_MAX_GPUS, 0, 0);
    l = layout(f, &st, 80, 24);
    assert_false(l.gpu_two_rows);
    check_eq(l.gpus_shown, 16u);
    check_eq(l.more_gpus_y, 18);
    check_eq(l.graph_rows, 0);
    check_eq(l.graph_y, -1);
    check_eq(l.header_y, 19);
    check_eq(l.list_rows, 3);
    free(f);

    f = frame(40, 0, 0);
    l = layout(f, &st, 200, 50);
    check_eq(l.gpus_shown, 40u);
    check_eq(l.more_gpus_y, -1);
    check_eq(l.graph_rows, 0);
    check_eq(l.header_y, 42);
    free(f);
}

/* More processes than rows: the window follows the selection, a selection past the end goes to
 * the last process, and the last row counts those below (the unread ones in the wanted rows). */
static void test_many_procs(void **state)
{
    (void)state;
    gm_top_frame *f = frame(1, GM_TOP_MAX_PROCS, 20);
    gm_top_view_state st = {.selected = 300};
    gm_top_layout l = layout(f, &st, 80, 24);
    check_eq(l.graph_rows, 9);
    check_eq(l.header_y, 13);
    check_eq(l.list_rows, 9);
    check_eq(l.proc_rows, 8);
    check_eq(l.status_y, 22);
    check_eq(l.selected, 300u);
    check_eq(l.first, 293u);
    check_eq(l.procs_drawn, 8u);
    check_eq(l.below, 211u);

    st.selected = 1000;
    st.first = 5;
    l = layout(f, &st, 80, 24);
    check_eq(l.selected, 511u);
    check_eq(l.first, 504u);
    check_eq(l.below, 0u);

    /* A selection above the window brings the window up to it. */
    st.selected = 10;
    st.first = 100;
    l = layout(f, &st, 80, 24);
    check_eq(l.first, 10u);
    check_eq(l.below, 512u - 18u);
    free(f);
}

/* The filter decides what the list holds; a window past its end moves up to its last rows. */
static void test_filter(void **state)
{
    (void)state;
    gm_top_frame *f = frame(1, 10, 0);
    gm_top_view_state st = {.selected = 9, .first = 8};
    snprintf(st.filter, sizeof st.filter, "alice");
    st.filter_user = true;
    gm_top_layout l = layout(f, &st, 80, 24);
    check_eq(l.nvis, 5u);
    check_eq(l.selected, 4u); /* past the end of the filtered list: its last */
    check_eq(l.status_y, 22); /* the filter is said even when all fit */
    check_eq(l.proc_rows, 4);
    check_eq(l.first, 1u);
    check_eq(l.procs_drawn, 4u);
    check_eq(l.below, 0u);

    snprintf(st.filter, sizeof st.filter, "nothing");
    st.filter_user = false;
    l = layout(f, &st, 80, 24);
    check_eq(l.nvis, 0u);
    check_eq(l.selected, 0u);
    check_eq(l.procs_drawn, 0u);
    free(f);
}

/* The graph stays on its GPU, or goes to the first when its GPU left the frame. */
static void test_graph_gpu(void **state)
{
    (void)state;
    gm_top_frame *f = frame(3, 0, 0);
    gm_top_view_state st = {.graph_gpu = 2};
    check_eq(layout(f, &st, 80, 24).graph_gpu, 2u);
    st.graph_gpu = 3;
    check_eq(layout(f, &st, 80, 24).graph_gpu, 0u);
    free(f);
}

/* At every size and count the parts follow one another down the screen without overlapping, the
 * list ends above the keys' row, and what is drawn is what fits. */
static void test_parts_tile_the_screen(void **state)
{
    (void)state;
    static const unsigned ngpus[] = {0, 1, 2, 3, 5, 8, 9, 16, GM_MAX_GPUS};
    static const size_t nprocs[] = {0, 1, 3, 40, GM_TOP_MAX_PROCS};
    for (int rows = GM_TOP_MIN_ROWS; rows <= 120; rows += 7)
        for (size_t gi = 0; gi < sizeof ngpus / sizeof *ngpus; gi++)
            for (size_t pi = 0; pi < sizeof nprocs / sizeof *nprocs; pi++) {
                gm_top_frame *f = frame(ngpus[gi], nprocs[pi], pi % 2 ? 7 : 0);
                gm_top_view_state st = {.selected = nprocs[pi] / 2};
                gm_top_layout l = layout(f, &st, 120, rows);
                int per = l.gpu_two_rows ? 2 : 1;
                int y = l.gpu_y + per * (int)l.gpus_shown;
                check_le(l.gpus_shown, f->ngpu);
                if (l.gpus_shown < f->ngpu) {
                    check_eq(l.more_gpus_y, y);
                    y++;
                }
                if (l.graph_rows) {
                    check_eq(l.graph_y, y);
                    y += l.graph_rows;
                }
                check_eq(l.header_y, y);
                check_eq(l.list_y, y + 1);
                check_eq(l.list_y + l.list_rows, l.keys_y);
                check_eq(l.keys_y, rows - 1);
                check_ge(l.proc_rows, 3 - (l.status_y >= 0));
                check_le(l.procs_drawn, (size_t)l.proc_rows);
                check_eq(l.first + l.procs_drawn + l.below, l.nvis);
                check_lt(l.selected - l.first, l.procs_drawn ? l.procs_drawn : 1);
                free(f);
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_80x24),      cmocka_unit_test(test_200x50),
        cmocka_unit_test(test_too_small),  cmocka_unit_test(test_many_gpus),
        cmocka_unit_test(test_many_procs), cmocka_unit_test(test_filter),
        cmocka_unit_test(test_graph_gpu),  cmocka_unit_test(test_parts_tile_the_screen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
