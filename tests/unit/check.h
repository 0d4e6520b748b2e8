/* check.h - comparison asserts for the unit tests that, on failure, print both sides (the
 * expressions as written and their values) instead of cmocka's bare "assert_true(x < y)".
 * Include after <cmocka.h>. Each side is evaluated once, and compared exactly as the C
 * operator would compare it (the usual arithmetic conversions), so replacing
 * assert_true(a < b) with check_lt(a, b) changes nothing but the message. */
#ifndef GM_TEST_CHECK_H
#define GM_TEST_CHECK_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static inline const char *check_fmt_i(char *buf, size_t cap, long long v)
{
    snprintf(buf, cap, "%lld", v);
    return buf;
}
static inline const char *check_fmt_u(char *buf, size_t cap, unsigned long long v)
{
    snprintf(buf, cap, "%llu", v);
    return buf;
}
static inline const char *check_fmt_d(char *buf, size_t cap, long double v)
{
    snprintf(buf, cap, "%.17Lg", v);
    return buf;
}
static inline const char *check_fmt_p(char *buf, size_t cap, const volatile void *v)
{
    snprintf(buf, cap, "%p", (const void *)v);
    return buf;
}

/* A value as text, chosen by its type: whole numbers, floating point, or a pointer. */
// clang-format off
#define CHECK_FMT(buf, v)                                                                          \
    _Generic((v),                                                                                  \
        _Bool: check_fmt_u,                                                                        \
        char: check_fmt_i,                                                                         \
        signed char: check_fmt_i,                                                                  \
        short: check_fmt_i,                                                                        \
        int: check_fmt_i,                                                                          \
        long: check_fmt_i,                                                                         \
        long long: check_fmt_i,                                                                    \
        unsigned char: check_fmt_u,                                                                \
        unsigned short: check_fmt_u,                                                               \
        unsigned: check_fmt_u,                                                                     \
        unsigned long: check_fmt_u,                                                                \
        unsigned long long: check_fmt_u,                                                           \
        float: check_fmt_d,                                                                        \
        double: check_fmt_d,                                                                       \
        long double: check_fmt_d,                                                                  \
        default: check_fmt_p)(buf, sizeof buf, v)
// clang-format on

/* Fails the test unless (a op b), printing both expressions and their values. The sides are
 * copied once each, so a constant side becomes a variable: -Wsign-compare, which knows that
 * "n > 0" is safe for an unsigned n, would then warn where the written comparison did not. */
#define CHECK_CMP(a, op, b)                                                                      \
    do {                                                                                         \
        __auto_type check_a_ = (a);                                                              \
        __auto_type check_b_ = (b);                                                              \
        _Pragma("GCC diagnostic push");                                                          \
        _Pragma("GCC diagnostic ignored \"-Wsign-compare\"");                                    \
        bool check_ok_ = check_a_ op check_b_;                                                   \
        _Pragma("GCC diagnostic pop");                                                           \
        if (!check_ok_) {                                                                        \
            char check_sa_[64], check_sb_[64];                                                   \
            fail_msg("%s %s %s: %s %s %s is false", #a, #op, #b, CHECK_FMT(check_sa_, check_a_), \
                     #op, CHECK_FMT(check_sb_, check_b_));                                       \
        }                                                                                        \
    } while (0)

#define check_lt(a, b) CHECK_CMP(a, <, b)
#define check_le(a, b) CHECK_CMP(a, <=, b)
#define check_gt(a, b) CHECK_CMP(a, >, b)
#define check_ge(a, b) CHECK_CMP(a, >=, b)
#define check_eq(a, b) CHECK_CMP(a, ==, b)
#define check_ne(a, b) CHECK_CMP(a, !=, b)

/* |a - b| <= tol, as doubles; prints the three. */
#define check_dbl_near(a, b, tol)                                                         \
    do {                                                                                  \
        double check_a_ = (a), check_b_ = (b), check_t_ = (tol);                          \
        if (!(fabs(check_a_ - check_b_) <= check_t_))                                     \
            fail_msg("%s ~ %s: %.17g and %.17g differ by more than %g", #a, #b, check_a_, \
                     check_b_, check_t_);                                                 \
    } while (0)

/* Both strings equal (NULL equals only NULL); prints both. */
#define check_str_eq(a, b)                                                                         \
    do {                                                                                           \
        const char *check_a_ = (a), *check_b_ = (b);                                               \
        if (!(check_a_ == check_b_ || (check_a_ && check_b_ && strcmp(check_a_, check_b_) == 0)))  \
            fail_msg("%s == %s: \"%s\" and \"%s\" differ", #a, #b, check_a_ ? check_a_ : "(null)", \
                     check_b_ ? check_b_ : "(null)");                                              \
    } while (0)

/* haystack contains needle; prints both. */
#define check_str_contains(haystack, needle)                                    \
    do {                                                                        \
        const char *check_h_ = (haystack), *check_n_ = (needle);                \
        if (!check_h_ || !strstr(check_h_, check_n_))                           \
            fail_msg("%s contains %s: \"%s\" lacks \"%s\"", #haystack, #needle, \
                     check_h_ ? check_h_ : "(null)", check_n_);                 \
    } while (0)

#endif
