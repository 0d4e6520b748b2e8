/* test_log.c - server/log: the level filter, one logfmt line per call on stderr (captured here
 * through a pipe put in place of file descriptor 2) whatever the message holds or however long
 * it is, and gm_log_quote's escaping and truncation, which never cut an escape in half. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/log.h"

/* ---- capturing stderr ----------------------------------------------------------------------- */

static int saved_fd = -1, pipe_rd = -1;

static void capture_start(void)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    fflush(stderr);
    saved_fd = dup(STDERR_FILENO);
    check_ge(saved_fd, 0);
    assert_int_equal(dup2(p[1], STDERR_FILENO), STDERR_FILENO);
    close(p[1]);
    pipe_rd = p[0];
}

/* Restores stderr and returns what was written meanwhile (malloc'd). Everything a test logs
 * fits the pipe's buffer, so nothing blocks. */
static char *capture_end(void)
{
    fflush(stderr);
    dup2(saved_fd, STDERR_FILENO);
    close(saved_fd);
    saved_fd = -1;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    assert_non_null(buf);
    for (;;) {
        ssize_t r = read(pipe_rd, buf + len, cap - len);
        if (r <= 0)
            break;
        len += (size_t)r;
        check_lt(len, cap);
    }
    close(pipe_rd);
    pipe_rd = -1;
    buf[len] = '\0';
    return buf;
}

static int count_char(const char *s, char c)
{
    int n = 0;
    for (; *s; s++)
        n += *s == c;
    return n;
}

static void assert_matches(const char *text, const char *pattern)
{
    regex_t re;
    assert_int_equal(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0);
    int rc = regexec(&re, text, 0, NULL, 0);
    regfree(&re);
    if (rc != 0)
        fail_msg("\"%s\" does not match /%s/", text, pattern);
}

static int teardown(void **state)
{
    (void)state;
    if (saved_fd >= 0) { /* a failed assertion left stderr captured */
        dup2(saved_fd, STDERR_FILENO);
        close(saved_fd);
        saved_fd = -1;
    }
    if (pipe_rd >= 0) {
        close(pipe_rd);
        pipe_rd = -1;
    }
    gm_log_set_level(GM_LOG_INFO);
    return 0;
}

/* ---- the tests ------------------------------------------------------------------------------ */

static void test_level_filter(void **state)
{
    (void)state;
    static const gm_log_level levels[] = {GM_LOG_DEBUG, GM_LOG_INFO, GM_LOG_WARN, GM_LOG_ERROR};
    for (size_t min = 0; min < 4; min++) {
        gm_log_set_level(levels[min]);
        capture_start();
        for (size_t i = 0; i < 4; i++)
            gm_log(levels[i], "event", "n=%zu", i);
        char *out = capture_end();
        /* Exactly the lines at the level or above, in order. */
        assert_int_equal(count_char(out, '\n'), (int)(4 - min));
        for (size_t i = 0; i < 4; i++) {
            char want[64];
            snprintf(want, sizeof want, "level=%s msg=\"event\" n=%zu\n",
                     gm_log_level_name(levels[i]), i);
            assert_int_equal(strstr(out, want) != NULL, i >= min);
            assert_int_equal(gm_log_enabled(levels[i]), i >= min);
        }
        free(out);
    }
    /* The default is info. */
    gm_log_set_level(GM_LOG_INFO);
    assert_false(gm_log_enabled(GM_LOG_DEBUG));
    assert_true(gm_log_enabled(GM_LOG_INFO));
}

static void test_line_format(void **state)
{
    (void)state;
    capture_start();
    gm_log(GM_LOG_WARN, "sample failed", "provider=%s took_ms=%d", "nvml", 12);
    char *out = capture_end();
    assert_matches(out, "^ts=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z "
                        "level=warn msg=\"sample failed\" provider=nvml took_ms=12\n$");
    free(out);

    /* No fields (NULL, "", or a format that comes out empty): no trailing separator. */
    capture_start();
    gm_log(GM_LOG_INFO, "a", NULL);
    gm_log(GM_LOG_INFO, "b", "%s", "");
    gm_log(GM_LOG_ERROR, "c", "%s", "k=v");
    out = capture_end();
    assert_non_null(strstr(out, " level=info msg=\"a\"\n"));
    assert_non_null(strstr(out, " level=info msg=\"b\"\n"));
    assert_non_null(strstr(out, " level=error msg=\"c\" k=v\n"));
    assert_int_equal(count_char(out, '\n'), 3);
    free(out);
}

static void test_one_line_per_call(void **state)
{
    (void)state;
    capture_start();
    /* Line breaks, quotes and control bytes in the message are escaped. */
    gm_log(GM_LOG_INFO, "two\nlines \"quoted\" back\\slash\r\x01 tab\t", "peer=%s",
           gm_log_quote("evil\nX: y", (char[64]){0}, 64));
    char *out = capture_end();
    assert_int_equal(count_char(out, '\n'), 1);
    assert_non_null(strstr(out, "msg=\"two\\nlines \\\"quoted\\\" back\\\\slash\\x0d\\x01 "
                                "tab\\x09\" peer=\"evil\\nX: y\"\n"));
    free(out);

    /* A huge message and huge fields: one line, cut to the line buffer, still ending in \n. */
    char *big = malloc(10000);
    assert_non_null(big);
    memset(big, 'm', 9999);
    big[9999] = '\0';
    capture_start();
    gm_log(GM_LOG_INFO, big, "field=%s", big);
    gm_log(GM_LOG_INFO, big, NULL);
    gm_log(GM_LOG_INFO, "short", "field=%s", big);
    out = capture_end();
    assert_int_equal(count_char(out, '\n'), 3);
    char *line = out;
    for (int i = 0; i < 3; i++) {
        char *nl = strchr(line, '\n');
        assert_non_null(nl);
        check_le(nl - line + 1, 2047);
        assert_int_equal(strncmp(line, "ts=", 3), 0);
        line = nl + 1;
    }
    /* The quoted message is cut inside its quotes: the closing quote is there. */
    assert_non_null(strstr(out, "mmm\" field=mmm"));
    assert_non_null(strstr(out, "mmm\"\n"));
    assert_non_null(strstr(out, "msg=\"short\" field=mmm"));
    free(out);
    free(big);
}

/* Undoes gm_log_quote's escapes (without the outer quotes) into out; false on a malformed or
 * cut escape. */
static bool unescape(const char *q, size_t n, char *out, size_t *olen)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (q[i] != '\\') {
            if (q[i] == '"')
                return false;
            out[o++] = q[i];
            continue;
        }
        if (i + 1 >= n)
            return false;
        char c = q[++i];
        if (c == '"' || c == '\\') {
            out[o++] = c;
        } else if (c == 'n') {
            out[o++] = '\n';
        } else if (c == 'x') {
            unsigned v;
            if (i + 2 >= n || sscanf(q + i + 1, "%2x", &v) != 1)
                return false;
            out[o++] = (char)v;
            i += 2;
        } else {
            return false;
        }
    }
    *olen = o;
    return true;
}

static void test_quote(void **state)
{
    (void)state;
    char buf[128];
    assert_string_equal(gm_log_quote("plain", buf, sizeof buf), "\"plain\"");
    assert_string_equal(gm_log_quote("", buf, sizeof buf), "\"\"");
    assert_string_equal(gm_log_quote(NULL, buf, sizeof buf), "\"\"");
    assert_ptr_equal(gm_log_quote("x", buf, sizeof buf), buf);
    assert_string_equal(gm_log_quote("a\"b\\c\nd", buf, sizeof buf), "\"a\\\"b\\\\c\\nd\"");
    assert_string_equal(gm_log_quote("\x01\x1f\x7f\t\r", buf, sizeof buf),
                        "\"\\x01\\x1f\\x7f\\x09\\x0d\"");
    /* UTF-8 passes through untouched. */
    assert_string_equal(gm_log_quote("caf\xc3\xa9 \xe2\x9c\x93", buf, sizeof buf),
                        "\"caf\xc3\xa9 \xe2\x9c\x93\"");

    /* Too small for even the quotes: empty; nothing at all for len 0. */
    buf[0] = 'z';
    gm_log_quote("abc", buf, 0);
    assert_int_equal(buf[0], 'z');
    assert_string_equal(gm_log_quote("abc", buf, 1), "");
    assert_string_equal(gm_log_quote("abc", buf, 2), "");
    assert_string_equal(gm_log_quote("abc", buf, 3), "\"\"");
    assert_string_equal(gm_log_quote("abc", buf, 4), "\"a\"");
    /* An escape that does not fit is left out whole, never cut. */
    assert_string_equal(gm_log_quote("a\"b", buf, 5), "\"a\"");
    assert_string_equal(gm_log_quote("a\"b", buf, 6), "\"a\\\"\"");
    assert_string_equal(gm_log_quote("a\x01", buf, 7), "\"a\"");
    assert_string_equal(gm_log_quote("a\x01", buf, 8), "\"a\\x01\"");

    /* For every size: terminated within it, quoted at both ends, and the inside unescapes to
     * a prefix of the input. */
    static const char *const inputs[] = {"hello \"world\"\n\\ \x02\x7f end", "\n\n\n\n\n\n",
                                         "\x01\x02\x03\x04", "plain text only"};
    for (size_t k = 0; k < sizeof inputs / sizeof *inputs; k++)
        for (size_t len = 3; len <= 64; len++) {
            char out[64 + 8];
            memset(out, '#', sizeof out);
            gm_log_quote(inputs[k], out, len);
            size_t n = strlen(out);
            check_lt(n, len);
            check_ge(n, 2);
            assert_int_equal(out[0], '"');
            assert_int_equal(out[n - 1], '"');
            char plain[64];
            size_t plen = 0;
            if (!unescape(out + 1, n - 2, plain, &plen))
                fail_msg("input %zu, len %zu: \"%s\" holds a cut escape", k, len, out);
            check_le(plen, strlen(inputs[k]));
            assert_memory_equal(plain, inputs[k], plen);
            for (size_t i = len; i < sizeof out; i++) /* nothing written past len */
                assert_int_equal(out[i], '#');
        }
}

/* A line a peer can cause per request: `burst` lines per interval, then held back and counted,
 * the count carried by the first line of the next interval. */
static void test_limit(void **state)
{
    (void)state;
    gm_log_limit l = {0};
    uint64_t held = 99;
    assert_true(gm_log_limit_pass(&l, 1, 1000, 5000, &held));
    assert_int_equal(held, 0);
    for (int i = 0; i < 20000; i++)
        assert_false(gm_log_limit_pass(&l, 1, 1000, 5000 + i % 1000, &held));
    assert_true(gm_log_limit_pass(&l, 1, 1000, 6000, &held));
    assert_int_equal(held, 20000);
    assert_false(gm_log_limit_pass(&l, 1, 1000, 6999, &held));
    assert_true(gm_log_limit_pass(&l, 1, 1000, 9000, &held));
    assert_int_equal(held, 1);

    gm_log_limit b = {0};
    for (int i = 0; i < 3; i++) {
        assert_true(gm_log_limit_pass(&b, 3, 1000, 100, &held));
        assert_int_equal(held, 0);
    }
    assert_false(gm_log_limit_pass(&b, 3, 1000, 200, &held));
    assert_true(gm_log_limit_pass(&b, 3, 1000, 1100, &held));
    assert_int_equal(held, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_level_filter, teardown),
        cmocka_unit_test_teardown(test_line_format, teardown),
        cmocka_unit_test_teardown(test_one_line_per_call, teardown),
        cmocka_unit_test(test_quote),
        cmocka_unit_test(test_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
