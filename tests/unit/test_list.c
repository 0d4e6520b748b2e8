/* test_list.c - base/list: order of pushes, unlinking while walking, and links that are not on a
 * list (self-linked, or all zero as calloc leaves them). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "base/list.h"

typedef struct item {
    int value;
    gm_list link;
} item;

/* The values on head's list, first to last, as digits ("" when empty). */
static void values(const gm_list *head, char *out, size_t cap)
{
    size_t n = 0;
    gm_list_each(l, nx, head) {
        if (n + 1 < cap)
            out[n++] = (char)('0' + gm_list_entry(l, item, link)->value);
    }
    out[n] = '\0';
}

static void test_push_back_and_front_keep_order(void **state)
{
    (void)state;
    gm_list head;
    gm_list_init(&head);
    assert_true(gm_list_empty(&head));
    assert_null(gm_list_first(&head));
    item it[4] = {{.value = 1}, {.value = 2}, {.value = 3}, {.value = 4}};
    gm_list_push_back(&head, &it[1].link);
    gm_list_push_back(&head, &it[2].link);
    gm_list_push_front(&head, &it[0].link);
    gm_list_push_back(&head, &it[3].link);
    char s[8];
    values(&head, s, sizeof s);
    assert_string_equal(s, "1234");
    assert_false(gm_list_empty(&head));
    assert_ptr_equal(gm_list_entry(gm_list_first(&head), item, link), &it[0]);
}

static void test_remove_while_walking(void **state)
{
    (void)state;
    gm_list head;
    gm_list_init(&head);
    item it[5];
    for (int i = 0; i < 5; i++) {
        it[i] = (item){.value = i};
        gm_list_push_back(&head, &it[i].link);
    }
    /* Every even value leaves during the walk; the walk still sees every item once. */
    int seen = 0;
    gm_list_each(l, nx, &head) {
        item *x = gm_list_entry(l, item, link);
        seen++;
        if (x->value % 2 == 0)
            gm_list_remove(l);
    }
    assert_int_equal(seen, 5);
    char s[8];
    values(&head, s, sizeof s);
    assert_string_equal(s, "13");
    assert_false(gm_list_linked(&it[0].link));
    assert_true(gm_list_linked(&it[1].link));
    gm_list_remove(&it[1].link);
    gm_list_remove(&it[3].link);
    assert_true(gm_list_empty(&head));
}

static void test_unlinked_links(void **state)
{
    (void)state;
    item zero;
    memset(&zero, 0, sizeof zero); /* as calloc leaves it */
    assert_false(gm_list_linked(&zero.link));
    gm_list_remove(&zero.link); /* nothing to do, and no crash */
    item self = {.value = 7};
    gm_list_init(&self.link);
    assert_false(gm_list_linked(&self.link));
    gm_list_remove(&self.link);
    gm_list head;
    gm_list_init(&head);
    gm_list_push_back(&head, &self.link);
    assert_true(gm_list_linked(&self.link));
    gm_list_remove(&self.link);
    gm_list_remove(&self.link); /* twice: still nothing */
    assert_false(gm_list_linked(&self.link));
    assert_true(gm_list_empty(&head));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_push_back_and_front_keep_order),
        cmocka_unit_test(test_remove_while_walking),
        cmocka_unit_test(test_unlinked_links),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
