/* test_spawn.c - gm_spawn_run against real child processes: output, exit status, timeouts, caps,
 * descriptors and signal state the child inherits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "check.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/spawn.h"

/* ---- helpers -------------------------------------------------------------------------------- */

static int run_sh(const char *script, int timeout_ms, size_t max, gm_spawn_result *r, gm_error *e)
{
    const char *argv[] = {"sh", "-c", script, NULL};
    return gm_spawn_run(argv, timeout_ms, max, r, e);
}

static int count_open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    int n = 0;
    for (struct dirent *de; (de = readdir(d));)
        if (de->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

/* True when pid no longer runs (gone, or a zombie waiting for a reaper that is not us). */
static int process_dead(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    return p && (p[2] == 'Z' || p[2] == 'X');
}

static void no_children_left(void)
{
    errno = 0;
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
}

/* ---- tests ---------------------------------------------------------------------------------- */

static void test_captures_stdout_and_stderr(void **state)
{
    (void)state;
    gm_spawn_result r;
    gm_error e = {0};
    assert_int_equal(run_sh("printf 'hello\\nworld'; printf 'oops' >&2", 5000, 0, &r, &e), GM_OK);
    assert_string_equal(r.out, "hello\nworld");
    assert_int_equal(r.out_len, 11);
    assert_string_equal(r.err, "oops");
    assert_true(r.exited);
    assert_int_equal(r.exit_code, 0);
    assert_false(r.signaled);
    gm_spawn_result_free(&r);
    assert_null(r.out);
    gm_spawn_result_free(&r); /* twice is harmless */
    no_children_left();
}

static void test_searches_path_and_passes_args(void **state)
{
    (void)state;
    const char *argv[] = {"printf", "%s|%s", "a b", "c", NULL};
    gm_spawn_result r;
    assert_int_equal(gm_spawn_run(argv, 5000, 0, &r, NULL), GM_OK);
    assert_string_equal(r.out, "a b|c");
    gm_spawn_result_free(&r);
}

static void test_empty_output_and_stdin_is_dev_null(void **state)
{
    (void)state;
    /* cat would wait forever on an inherited terminal or pipe; /dev/null ends it at once. */
    const char *argv[] = {"cat", NULL};
    gm_spawn_result r;
    assert_int_equal(gm_spawn_run(argv, 5000, 0, &r, NULL), GM_OK);
    assert_non_null(r.out);
    assert_string_equal(r.out, "");
    assert_int_equal(r.out_len, 0);
    assert_string_equal(r.err, "");
    gm_spawn_result_free(&r);
}

static void test_nonzero_exit_quotes_stderr(void **state)
{
    (void)state;
    gm_spawn_result r;
    gm_error e = {0};
    int rc = run_sh("echo partial; echo '  first complaint  ' >&2; echo second >&2; exit 3", 5000,
                    0, &r, &e);
    assert_int_equal(rc, GM_EIO);
    assert_int_equal(e.code, GM_EIO);
    assert_string_equal(e.msg, "sh exited with status 3: first complaint");
    assert_true(r.exited);
    assert_int_equal(r.exit_code, 3);
    assert_string_equal(r.out, "partial\n"); /* kept for callers that salvage rows */
    gm_spawn_result_free(&r);
}

static void test_nonzero_exit_quotes_stdout_when_stderr_empty(void **state)
{
    (void)state;
    gm_spawn_result r;
    gm_error e = {0};
    assert_int_equal(
        run_sh("printf '\\n\\nNVIDIA-SMI has failed\\r\\nmore\\n'; exit 9", 5000, 0, &r, &e),
        GM_EIO);
    assert_string_equal(e.msg, "sh exited with status 9: NVIDIA-SMI has failed");
    gm_spawn_result_free(&r);

    assert_int_equal(run_sh("exit 4", 5000, 0, &r, &e), GM_EIO);
    assert_string_equal(e.msg, "sh exited with status 4");
    gm_spawn_result_free(&r);
}

static void test_death_by_signal(void **state)
{
    (void)state;
    gm_spawn_result r;
    gm_error e = {0};
    assert_int_equal(run_sh("kill -SEGV $$", 5000, 0, &r, &e), GM_EIO);
    assert_true(r.signaled);
    assert_int_equal(r.signal, SIGSEGV);
    assert_false(r.exited);
    assert_non_null(strstr(e.msg, "killed by signal 11 SIGSEGV"));
    gm_spawn_result_free(&r);
}

static void test_not_found_on_path(void **state)
{
    (void)state;
    char *saved = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    setenv("PATH", "/nonexistent-gm-dir", 1);
    const char *argv[] = {"nvidia-smi", "--query-gpu=index", NULL};
    gm_spawn_result r;
    gm_error e = {0};
    int rc = gm_spawn_run(argv, 5000, 0, &r, &e);
    setenv("PATH", saved, 1);
    free(saved);
    assert_int_equal(rc, GM_ESPAWN);
    assert_string_equal(e.msg, "nvidia-smi: not found on PATH");
    assert_false(r.exited);
    gm_spawn_result_free(&r);

    const char *abs[] = {"/nonexistent-gm-dir/nvidia-smi", NULL};
    assert_int_equal(gm_spawn_run(abs, 5000, 0, &r, &e), GM_ESPAWN);
    assert_string_equal(e.msg, "/nonexistent-gm-dir/nvidia-smi: not found");
    gm_spawn_result_free(&r);
    no_children_left();
}

static void test_not_executable(void **state)
{
    (void)state;
    char path[] = "/tmp/gm-spawn-noexec-XXXXXX";
    int fd = mkstemp(path);
    check_ge(fd, 0);
    assert_int_equal(write(fd, "x\n", 2), 2);
    close(fd);
    chmod(path, 0600);
    const char *argv[] = {path, NULL};
    gm_spawn_result r;
    gm_error e = {0};
    int rc = gm_spawn_run(argv, 5000, 0, &r, &e);
    unlink(path);
    assert_int_equal(rc, GM_ESPAWN);
    assert_non_null(strstr(e.msg, "permission denied"));
    gm_spawn_result_free(&r);
}

static void test_invalid_arguments(void **state)
{
    (void)state;
    gm_spawn_result r;
    gm_error e = {0};
    assert_int_equal(gm_spawn_run(NULL, 100, 0, &r, &e), GM_EINVAL);
    const char *empty[] = {"", NULL};
    assert_int_equal(gm_spawn_run(empty, 100, 0, &r, &e), GM_EINVAL);
    gm_spawn_result_free(&r);
    assert_int_equal(gm_spawn_run(empty, 100, 0, NULL, &e), GM_EINVAL);
}

static void test_timeout_kills_and_reaps(void **state)
{
    (void)state;
    const char *argv[] = {"sleep", "60", NULL};
    gm_spawn_result r;
    gm_error e = {0};
    assert_int_equal(gm_spawn_run(argv, 300, 0, &r, &e), GM_ETIMEDOUT);
    assert_string_equal(e.msg, "sleep did not answer within 300 ms");
    assert_true(r.signaled);
    assert_int_equal(r.signal, SIGKILL);
    gm_spawn_result_free(&r);
    no_children_left(); /* reaped: no zombie left behind */
}

static void test_timeout_kills_the_process_group(void **state)
{
    (void)state;
    gm_spawn_result r;
    gm_error e = {0};
    /* A wrapper whose own child would outlive it unless the whole group is killed. */
    assert_int_equal(run_sh("sleep 60 & echo $!; wait", 300, 0, &r, &e), GM_ETIMEDOUT);
    pid_t grandchild = (pid_t)atoi(r.out);
    check_gt(grandchild, 0);
    gm_spawn_result_free(&r);
    int dead = 0;
    for (int i = 0; i < 500 && !(dead = process_dead(grandchild)); i++) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    assert_true(dead);
    no_children_left();
}

static void test_timeout_after_pipes_closed(void **state)
{
    (void)state;
    gm_spawn_result r;
    gm_error e = {0};
    /* Closing stdout and stderr early must not let the child escape the deadline. */
    assert_int_equal(run_sh("echo early; exec >/dev/null 2>&1; sleep 60", 300, 0, &r, &e),
                     GM_ETIMEDOUT);
    assert_string_equal(r.out, "early\n");
    gm_spawn_result_free(&r);
    no_children_left();
}

static void test_output_cap(void **state)
{
    (void)state;
    gm_spawn_result r;
    gm_error e = {0};
    assert_int_equal(run_sh("head -c 100000 /dev/zero | tr '\\0' a", 5000, 1000, &r, &e), GM_EIO);
    assert_string_equal(e.msg, "sh printed more than 1000 bytes");
    assert_int_equal(r.out_len, 1000);
    assert_int_equal(strlen(r.out), 1000);
    gm_spawn_result_free(&r);
    no_children_left();

    /* A child that never stops printing is stopped by the cap, not the deadline. */
    const char *yes[] = {"yes", NULL};
    assert_int_equal(gm_spawn_run(yes, 0, 4096, &r, &e), GM_EIO);
    assert_int_equal(r.out_len, 4096);
    gm_spawn_result_free(&r);
    no_children_left();
}

static void test_large_output_within_default_cap(void **state)
{
    (void)state;
    gm_spawn_result r;
    assert_int_equal(
        run_sh("head -c 3000000 /dev/zero | tr '\\0' b; echo e >&2", 10000, 0, &r, NULL), GM_OK);
    assert_int_equal(r.out_len, 3000000);
    assert_int_equal(r.out[0], 'b');
    assert_int_equal(r.out[2999999], 'b');
    assert_string_equal(r.err, "e\n");
    gm_spawn_result_free(&r);
}

static void test_no_descriptor_leaks(void **state)
{
    (void)state;
    int before = count_open_fds();
    gm_spawn_result r;
    for (int i = 0; i < 10; i++) {
        run_sh("echo ok", 5000, 0, &r, NULL);
        gm_spawn_result_free(&r);
        run_sh("exit 2", 5000, 0, &r, NULL);
        gm_spawn_result_free(&r);
        const char *missing[] = {"gm-no-such-program", NULL};
        gm_spawn_run(missing, 5000, 0, &r, NULL);
        gm_spawn_result_free(&r);
        run_sh("head -c 10000 /dev/zero", 5000, 100, &r, NULL);
        gm_spawn_result_free(&r);
    }
    run_sh("sleep 60", 100, 0, &r, NULL);
    gm_spawn_result_free(&r);
    assert_int_equal(count_open_fds(), before);
    no_children_left();
}

static void test_child_inherits_only_stdio(void **state)
{
    (void)state;
    /* A descriptor opened without O_CLOEXEC (as another thread or library might) stays ours. */
    int leaky = open("/dev/null", O_RDONLY);
    check_gt(leaky, 2);
    gm_spawn_result r;
    /* ls lists the descriptors of the shell, which is idle meanwhile. */
    int rc = run_sh("ls /proc/$$/fd", 5000, 0, &r, NULL);
    close(leaky);
    assert_int_equal(rc, GM_OK);
    assert_string_equal(r.out, "0\n1\n2\n");
    gm_spawn_result_free(&r);
}

static void test_child_gets_default_signals(void **state)
{
    (void)state;
    /* A daemon ignores SIGPIPE and may block signals on its sampler thread; the helper must not
     * inherit either, or it could neither die of a closed pipe nor be stopped by SIGTERM. */
    struct sigaction ign = {.sa_handler = SIG_IGN}, old;
    sigaction(SIGPIPE, &ign, &old);
    sigset_t block, prev;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, &prev);
    gm_spawn_result r;
    int rc = run_sh("grep -E '^Sig(Ign|Blk)' /proc/self/status", 5000, 0, &r, NULL);
    pthread_sigmask(SIG_SETMASK, &prev, NULL);
    sigaction(SIGPIPE, &old, NULL);
    assert_int_equal(rc, GM_OK);
    assert_non_null(strstr(r.out, "SigBlk:\t0000000000000000"));
    const char *line = strstr(r.out, "SigIgn:\t");
    assert_non_null(line);
    /* Signals 1-31 only: glibc itself leaves its internal real-time signals 32/33 ignored. */
    unsigned long long mask = strtoull(line + strlen("SigIgn:\t"), NULL, 16);
    assert_int_equal(mask & 0x7fffffffULL, 0);
    gm_spawn_result_free(&r);
}

static void *spawn_thread(void *arg)
{
    int *failures = arg;
    for (int i = 0; i < 10; i++) {
        gm_spawn_result r;
        const char *argv[] = {"sh", "-c", "echo $$", NULL};
        if (gm_spawn_run(argv, 5000, 0, &r, NULL) != GM_OK || atoi(r.out) <= 0)
            (*failures)++;
        gm_spawn_result_free(&r);
    }
    return NULL;
}

static void test_concurrent_threads(void **state)
{
    (void)state;
    pthread_t t[4];
    int failures[4] = {0};
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, spawn_thread, &failures[i]), 0);
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(failures[i], 0);
    }
    no_children_left();
}

static void test_first_line(void **state)
{
    (void)state;
    char buf[16];
    gm_spawn_first_line("\n \r\n  hello world  \nnext", buf, sizeof buf);
    assert_string_equal(buf, "hello world");
    gm_spawn_first_line("a very long first line indeed", buf, sizeof buf);
    assert_string_equal(buf, "a very long fir");
    gm_spawn_first_line("", buf, sizeof buf);
    assert_string_equal(buf, "");
    gm_spawn_first_line(NULL, buf, sizeof buf);
    assert_string_equal(buf, "");
    gm_spawn_first_line("crlf\r\n", buf, sizeof buf);
    assert_string_equal(buf, "crlf");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_captures_stdout_and_stderr),
        cmocka_unit_test(test_searches_path_and_passes_args),
        cmocka_unit_test(test_empty_output_and_stdin_is_dev_null),
        cmocka_unit_test(test_nonzero_exit_quotes_stderr),
        cmocka_unit_test(test_nonzero_exit_quotes_stdout_when_stderr_empty),
        cmocka_unit_test(test_death_by_signal),
        cmocka_unit_test(test_not_found_on_path),
        cmocka_unit_test(test_not_executable),
        cmocka_unit_test(test_invalid_arguments),
        cmocka_unit_test(test_timeout_kills_and_reaps),
        cmocka_unit_test(test_timeout_kills_the_process_group),
        cmocka_unit_test(test_timeout_after_pipes_closed),
        cmocka_unit_test(test_output_cap),
        cmocka_unit_test(test_large_output_within_default_cap),
        cmocka_unit_test(test_no_descriptor_leaks),
        cmocka_unit_test(test_child_inherits_only_stdio),
        cmocka_unit_test(test_child_gets_default_signals),
        cmocka_unit_test(test_concurrent_threads),
        cmocka_unit_test(test_first_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
