/* test_suggest.c - base/suggest: edit distance and the "did you mean" choice. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "check.h"

#include "base/suggest.h"

static void test_distance(void **state)
{
    (void)state;
    assert_int_equal(gm_edit_distance("", ""), 0);
    assert_int_equal(gm_edit_distance("query", "query"), 0);
    assert_int_equal(gm_edit_distance("qeury", "query"), 1); /* a swap is one edit */
    assert_int_equal(gm_edit_distance("quer", "query"), 1);
    assert_int_equal(gm_edit_distance("queryy", "query"), 1);
    assert_int_equal(gm_edit_distance("qxery", "query"), 1);
    assert_int_equal(gm_edit_distance("kitten", "sitting"), 3);
    assert_int_equal(gm_edit_distance("", "abc"), 3);
    char long_word[GM_SUGGEST_MAX_LEN + 2];
    memset(long_word, 'a', sizeof long_word - 1);
    long_word[sizeof long_word - 1] = '\0';
    check_eq(gm_edit_distance(long_word, "a"), SIZE_MAX);
}

static void test_suggest(void **state)
{
    (void)state;
    static const char *const cmds[] = {"query",    "serve", "record",  "select", "wait",
                                       "estimate", "run",   "history", "top",    NULL};
    const size_t n = sizeof cmds / sizeof *cmds;
    assert_string_equal(gm_suggest("qeury", cmds, n), "query");
    assert_string_equal(gm_suggest("recrod", cmds, n), "record");
    assert_string_equal(gm_suggest("hist", cmds, n), "history"); /* a unique prefix */
    assert_string_equal(gm_suggest("tpo", cmds, n), "top");
    assert_string_equal(gm_suggest("sever", cmds, n), "serve");
    /* Too far from everything: no guess. */
    assert_null(gm_suggest("frobnicate", cmds, n));
    assert_null(gm_suggest("xyz", cmds, n));
    assert_null(gm_suggest("", cmds, n));
    /* "se" starts two commands and is 3 edits from each: no guess. */
    assert_null(gm_suggest("se", cmds, n));
    /* Ties go to the earlier candidate. */
    static const char *const ab[] = {"ab", "ba"};
    assert_string_equal(gm_suggest("aa", ab, 2), "ab");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_distance),
        cmocka_unit_test(test_suggest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
