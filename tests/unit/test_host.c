/* test_host.c - host metrics and process details read from fixture procfs trees and the real /proc.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect/host.h"

#define MIB (1024.0 * 1024.0)

/* ---- helpers -------------------------------------------------------------------------------- */

/* Path of fixture case `name` (tests/fixtures/proc/<name>) in a static buffer. */
static const char *fixture(const char *name)
{
    static char path[4096];
    const char *base = getenv("GM_FIXTURES");
    if (!base)
        fail_msg("GM_FIXTURES is not set (ctest sets it to tests/fixtures)");
    snprintf(path, sizeof path, "%s/proc/%s", base, name);
    return path;
}

static void write_bytes(const char *root, const char *rel, const void *data, size_t len)
{
    char path[4096];
    char dir[4096];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    /* Create the parent folders of rel ("sys/kernel/hostname", "7/cmdline"). */
    for (const char *p = rel; (p = strchr(p, '/')) != NULL; p++) {
        snprintf(dir, sizeof dir, "%s/%.*s", root, (int)(p - rel), rel);
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            fail_msg("mkdir %s: %s", dir, strerror(errno));
    }
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static void write_text(const char *root, const char *rel, const char *text)
{
    write_bytes(root, rel, text, strlen(text));
}

/* Copies fixture file <case>/<rel> to <root>/<rel>. */
static void copy_fixture(const char *fixture_case, const char *rel, const char *root)
{
    char src[4096];
    char *data;
    long len;
    snprintf(src, sizeof src, "%s/%s", fixture(fixture_case), rel);
    FILE *f = fopen(src, "rb");
    if (!f)
        fail_msg("fixture %s: %s", src, strerror(errno));
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    fseek(f, 0, SEEK_SET);
    data = malloc((size_t)len + 1);
    assert_non_null(data);
    assert_int_equal(fread(data, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    write_bytes(root, rel, data, (size_t)len);
    free(data);
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Per-test temporary procfs root, removed afterwards. */
static int tmp_setup(void **state)
{
    char *dir = strdup("/tmp/gm_test_host.XXXXXX");
    if (!dir || !mkdtemp(dir)) {
        free(dir);
        return -1;
    }
    *state = dir;
    return 0;
}

static int tmp_teardown(void **state)
{
    char *dir = *state;
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
    return 0;
}

/* Opens a reader on root, reads once, expects success, closes. */
static void read_once(const char *root, gm_host *h)
{
    gm_host_reader *r = NULL;
    gm_error err = {0};
    assert_int_equal(gm_host_reader_open(root, &r, &err), GM_OK);
    assert_int_equal(gm_host_reader_read(r, h, &err), GM_OK);
    gm_host_reader_close(r);
}

static void assert_only_metrics(const gm_host *h, uint64_t expected_bits)
{
    for (int m = 0; m < GM_H__COUNT; m++) {
        bool want = (expected_bits >> m) & 1u;
        if (gm_host_has(h, (gm_host_metric)m) != want)
            fail_msg("%s: expected %s", gm_host_metric_name((gm_host_metric)m),
                     want ? "present" : "absent");
    }
}

static uint64_t bit(gm_host_metric m)
{
    return UINT64_C(1) << m;
}

/* ---- /proc/stat ----------------------------------------------------------------------------- */

static void test_first_read_full_host(void **state)
{
    gm_host h;
    (void)state;
    read_once(fixture("x86"), &h);

    /* One reading: counts but no utilisation yet. */
    assert_false(gm_host_has(&h, GM_H_CPU_UTIL_PCT));
    assert_int_equal(h.core_count, 0);
    assert_true(gm_host_has(&h, GM_H_CPU_COUNT));
    assert_int_equal((int)h.v[GM_H_CPU_COUNT], 2);

    assert_true(gm_host_has(&h, GM_H_MEM_TOTAL_BYTES));
    check_eq(h.v[GM_H_MEM_TOTAL_BYTES], 16384000.0 * 1024);
    check_eq(h.v[GM_H_MEM_AVAILABLE_BYTES], 8192000.0 * 1024);
    check_eq(h.v[GM_H_MEM_USED_BYTES], (16384000.0 - 8192000.0) * 1024);
    check_eq(h.v[GM_H_SWAP_TOTAL_BYTES], 4096 * MIB);
    check_eq(h.v[GM_H_SWAP_USED_BYTES], 1024 * MIB);

    assert_float_equal(h.v[GM_H_LOAD1], 0.52, 1e-9);
    assert_float_equal(h.v[GM_H_LOAD5], 1.25, 1e-9);
    assert_float_equal(h.v[GM_H_LOAD15], 2.00, 1e-9);
    assert_float_equal(h.v[GM_H_UPTIME_S], 350735.47, 1e-6);

    assert_string_equal(h.cpu_model, "Intel(R) Xeon(R) Platinum 8480+");
    assert_string_equal(h.kernel, "6.1.0-18-amd64");
    assert_string_equal(h.hostname, "gpu-node-07");
    assert_only_metrics(&h, ~bit(GM_H_CPU_UTIL_PCT) & ((UINT64_C(1) << GM_H__COUNT) - 1));
}

/* Reads <fixture t0>/stat then <fixture t1>/stat through one reader on a temporary root. */
static void two_readings(const char *root, const char *t0, const char *t1, gm_host *first,
                         gm_host *second)
{
    gm_host_reader *r = NULL;
    gm_error err = {0};
    copy_fixture(t0, "stat", root);
    assert_int_equal(gm_host_reader_open(root, &r, &err), GM_OK);
    assert_int_equal(gm_host_reader_read(r, first, &err), GM_OK);
    copy_fixture(t1, "stat", root);
    assert_int_equal(gm_host_reader_read(r, second, &err), GM_OK);
    gm_host_reader_close(r);
}

static void test_cpu_utilisation(void **state)
{
    gm_host a, b;
    two_readings(*state, "x86", "stat_t1", &a, &b);
    assert_false(gm_host_has(&a, GM_H_CPU_UTIL_PCT));
    assert_int_equal(a.core_count, 0);

    /* Hand-computed in the fixture: total busy 100 of 400 jiffies (guest +40 is inside user
     * and must not count twice), cpu0 100 of 200, cpu1 0 of 200. */
    assert_true(gm_host_has(&b, GM_H_CPU_UTIL_PCT));
    assert_float_equal(b.v[GM_H_CPU_UTIL_PCT], 25.0, 1e-9);
    assert_int_equal(b.core_count, 2);
    assert_float_equal(b.core_util_pct[0], 50.0, 1e-6);
    assert_float_equal(b.core_util_pct[1], 0.0, 1e-6);
    assert_int_equal((int)b.v[GM_H_CPU_COUNT], 2);
}

static void test_cpu_zero_delta_is_absent(void **state)
{
    gm_host a, b;
    two_readings(*state, "x86", "x86", &a, &b);
    assert_false(gm_host_has(&b, GM_H_CPU_UTIL_PCT));
    assert_int_equal(b.core_count, 2);
    assert_true(isnan(b.core_util_pct[0]));
    assert_true(isnan(b.core_util_pct[1]));
    assert_true(gm_host_has(&b, GM_H_CPU_COUNT));
}

static void test_cpu_counter_backwards_is_absent(void **state)
{
    gm_host a, b;
    two_readings(*state, "x86", "stat_backwards", &a, &b);
    assert_float_equal(b.v[GM_H_CPU_UTIL_PCT], 25.0, 1e-9);
    assert_int_equal(b.core_count, 2);
    assert_float_equal(b.core_util_pct[0], 50.0, 1e-6);
    assert_true(isnan(b.core_util_pct[1]));
}

static void test_cpu_offline_matches_by_id(void **state)
{
    gm_host a, b;
    two_readings(*state, "x86", "stat_cpu0_offline", &a, &b);
    assert_int_equal((int)b.v[GM_H_CPU_COUNT], 1);
    assert_int_equal(b.core_count, 1);
    /* cpu1 against cpu1's previous counters: busy +100, idle +100. */
    assert_float_equal(b.core_util_pct[0], 50.0, 1e-6);
    assert_float_equal(b.v[GM_H_CPU_UTIL_PCT], 50.0, 1e-9);
}

static void test_cpu_third_reading_uses_second(void **state)
{
    gm_host_reader *r = NULL;
    gm_host h;
    const char *root = *state;
    copy_fixture("x86", "stat", root);
    assert_int_equal(gm_host_reader_open(root, &r, NULL), GM_OK);
    assert_int_equal(gm_host_reader_read(r, &h, NULL), GM_OK);
    copy_fixture("stat_t1", "stat", root);
    assert_int_equal(gm_host_reader_read(r, &h, NULL), GM_OK);
    /* Back to the first counters: everything went backwards relative to the second read. */
    copy_fixture("x86", "stat", root);
    assert_int_equal(gm_host_reader_read(r, &h, NULL), GM_OK);
    assert_false(gm_host_has(&h, GM_H_CPU_UTIL_PCT));
    assert_true(isnan(h.core_util_pct[0]));
    /* And forward again from there: the same deltas as the first pair. */
    copy_fixture("stat_t1", "stat", root);
    assert_int_equal(gm_host_reader_read(r, &h, NULL), GM_OK);
    assert_float_equal(h.v[GM_H_CPU_UTIL_PCT], 25.0, 1e-9);
    gm_host_reader_close(r);
}

/* A /proc/stat as big as a 1100-CPU machine's, with a long "intr" line in the middle. */
static void write_big_stat(const char *root, unsigned ncpu, uint64_t busy, uint64_t idle)
{
    size_t cap = 4u << 20, len = 0;
    char *s = malloc(cap);
    assert_non_null(s);
    len += (size_t)snprintf(s + len, cap - len, "cpu  %llu 0 0 %llu 0 0 0 0 0 0\n",
                            (unsigned long long)(busy * ncpu), (unsigned long long)(idle * ncpu));
    for (unsigned i = 0; i < ncpu; i++)
        len += (size_t)snprintf(s + len, cap - len, "cpu%u %llu 0 0 %llu 0 0 0 0 0 0\n", i,
                                (unsigned long long)(busy + i), (unsigned long long)idle);
    len += (size_t)snprintf(s + len, cap - len, "intr 123");
    for (unsigned i = 0; i < 100000; i++)
        len += (size_t)snprintf(s + len, cap - len, " %u", i);
    len += (size_t)snprintf(s + len, cap - len, "\nctxt 1\n");
    check_lt(len, cap);
    write_bytes(root, "stat", s, len);
    free(s);
}

static void test_cpu_big_stat(void **state)
{
    gm_host_reader *r = NULL;
    gm_host *h = malloc(sizeof *h);
    const char *root = *state;
    assert_non_null(h);
    write_big_stat(root, 1100, 1000, 1000);
    assert_int_equal(gm_host_reader_open(root, &r, NULL), GM_OK);
    assert_int_equal(gm_host_reader_read(r, h, NULL), GM_OK);
    /* Every core: busy +300 and idle +100 (cpuN's own offset i cancels out). */
    write_big_stat(root, 1100, 1300, 1100);
    assert_int_equal(gm_host_reader_read(r, h, NULL), GM_OK);
    assert_int_equal((int)h->v[GM_H_CPU_COUNT], 1100);
    assert_int_equal(h->core_count, GM_MAX_CPUS);
    assert_float_equal(h->core_util_pct[0], 75.0, 1e-4);
    assert_float_equal(h->core_util_pct[GM_MAX_CPUS - 1], 75.0, 1e-4);
    assert_float_equal(h->v[GM_H_CPU_UTIL_PCT], 75.0, 1e-9);
    gm_host_reader_close(r);
    free(h);
}

/* ---- memory, old kernels, cpuinfo ----------------------------------------------------------- */

static void test_old_kernel(void **state)
{
    gm_host h;
    (void)state;
    read_once(fixture("old_kernel"), &h);
    /* No MemAvailable: MemFree + Buffers + Cached. */
    check_eq(h.v[GM_H_MEM_AVAILABLE_BYTES], 400000.0 * 1024);
    check_eq(h.v[GM_H_MEM_USED_BYTES], 624000.0 * 1024);
    check_eq(h.v[GM_H_MEM_TOTAL_BYTES], 1024000.0 * 1024);
    /* No swap configured is a real zero, not an absent value. */
    assert_true(gm_host_has(&h, GM_H_SWAP_TOTAL_BYTES));
    check_eq(h.v[GM_H_SWAP_TOTAL_BYTES], 0);
    assert_true(gm_host_has(&h, GM_H_SWAP_USED_BYTES));
    check_eq(h.v[GM_H_SWAP_USED_BYTES], 0);
    /* /proc/stat lists one online CPU; it wins over cpuinfo's two processor lines. */
    assert_int_equal((int)h.v[GM_H_CPU_COUNT], 1);
    /* 32-bit ARM with no model name: the Hardware line. */
    assert_string_equal(h.cpu_model, "Freescale i.MX 6Quad/DualLite (Device Tree)");
    assert_only_metrics(&h, bit(GM_H_CPU_COUNT) | bit(GM_H_MEM_TOTAL_BYTES) |
                                bit(GM_H_MEM_USED_BYTES) | bit(GM_H_MEM_AVAILABLE_BYTES) |
                                bit(GM_H_SWAP_TOTAL_BYTES) | bit(GM_H_SWAP_USED_BYTES));
    assert_string_equal(h.kernel, "");
    assert_string_equal(h.hostname, "");
}

static void test_cpuinfo_arm64(void **state)
{
    gm_host h;
    (void)state;
    read_once(fixture("arm64"), &h);
    assert_string_equal(h.cpu_model, "ARM Neoverse-V2");
    /* No /proc/stat here: the count comes from cpuinfo's processor lines. */
    assert_int_equal((int)h.v[GM_H_CPU_COUNT], 4);
    assert_only_metrics(&h, bit(GM_H_CPU_COUNT));

    read_once(fixture("arm64_unknown"), &h);
    assert_string_equal(h.cpu_model, "CPU part 0x999");

    read_once(fixture("armv7_pi"), &h);
    assert_string_equal(h.cpu_model, "ARMv7 Processor rev 4 (v7l)");
}

static void test_cpuinfo_padded_model_name(void **state)
{
    gm_host h;
    const char *root = *state;
    write_text(root, "cpuinfo",
               "processor\t: 0\nmodel name\t:   Intel(R) Xeon(R) CPU           E5-2680 0 @ "
               "2.70GHz  \r\n\nprocessor\t: 1\nmodel name\t: Other\n");
    read_once(root, &h);
    assert_string_equal(h.cpu_model, "Intel(R) Xeon(R) CPU E5-2680 0 @ 2.70GHz");
    assert_int_equal((int)h.v[GM_H_CPU_COUNT], 2);
}

/* ---- absent, malformed, missing ------------------------------------------------------------- */

static void test_malformed_files_are_absent(void **state)
{
    gm_host h;
    (void)state;
    read_once(fixture("malformed"), &h);
    assert_only_metrics(&h, 0);
    assert_int_equal(h.core_count, 0);
    assert_string_equal(h.cpu_model, "");
}

static void test_partial_root(void **state)
{
    gm_host h;
    (void)state;
    read_once(fixture("partial"), &h);
    assert_only_metrics(&h, bit(GM_H_MEM_TOTAL_BYTES) | bit(GM_H_MEM_USED_BYTES) |
                                bit(GM_H_MEM_AVAILABLE_BYTES));
    check_eq(h.v[GM_H_MEM_USED_BYTES], 1024.0 * 1024);
    /* A fixture root never borrows the machine's own hostname. */
    assert_string_equal(h.hostname, "");
    assert_string_equal(h.kernel, "");
    assert_string_equal(h.cpu_model, "");
}

static void test_missing_root_is_eio(void **state)
{
    gm_host_reader *r = NULL;
    gm_host h;
    gm_error err = {0};
    const char *root = *state;
    char missing[4096];
    snprintf(missing, sizeof missing, "%s/no-such-proc", root);
    assert_int_equal(gm_host_reader_open(missing, &r, &err), GM_OK);
    assert_int_equal(gm_host_reader_read(r, &h, &err), GM_EIO);
    assert_int_equal(err.code, GM_EIO);
    assert_non_null(strstr(err.msg, missing));
    assert_only_metrics(&h, 0);
    gm_host_reader_close(r);

    /* A root that exists but holds nothing readable. */
    assert_int_equal(gm_host_reader_open(root, &r, &err), GM_OK);
    assert_int_equal(gm_host_reader_read(r, &h, &err), GM_EIO);
    assert_non_null(strstr(err.msg, root));
    gm_host_reader_close(r);
}

static void test_strings_are_clean_utf8(void **state)
{
    gm_host h;
    const char *root = *state;
    char slash_root[4096];
    write_text(root, "sys/kernel/hostname", "h\xc3\xa9te\xff\x01x\n");
    write_text(root, "sys/kernel/osrelease", "  6.8.0-rc1  \n");
    /* A trailing slash on the root is the same root. */
    snprintf(slash_root, sizeof slash_root, "%s//", root);
    read_once(slash_root, &h);
    assert_string_equal(h.hostname, "h\xc3\xa9te??x");
    assert_string_equal(h.kernel, "6.8.0-rc1");
}

/* ---- processes ------------------------------------------------------------------------------ */

static void test_describe_process(void **state)
{
    char user[GM_USER_LEN], cmd[GM_CMD_LEN];
    const char *root = fixture("x86");
    (void)state;

    assert_int_equal(gm_host_describe_process(root, 1, user, sizeof user, cmd, sizeof cmd), GM_OK);
    assert_string_equal(user, "root");
    assert_string_equal(cmd, "/sbin/init splash");

    /* Kernel thread: empty cmdline, shown as [comm]. */
    assert_int_equal(gm_host_describe_process(root, 2, user, sizeof user, cmd, sizeof cmd), GM_OK);
    assert_string_equal(user, "root");
    assert_string_equal(cmd, "[kthreadd]");

    /* The real UID (first field) has no passwd entry: shown as the number. */
    assert_int_equal(gm_host_describe_process(root, 4242, user, sizeof user, cmd, sizeof cmd),
                     GM_OK);
    if (getpwuid(123456789) == NULL)
        assert_string_equal(user, "123456789");
    assert_string_equal(cmd, "python3 train.py --lr 0.001");

    strcpy(user, "stale");
    strcpy(cmd, "stale");
    assert_int_equal(gm_host_describe_process(root, 999, user, sizeof user, cmd, sizeof cmd),
                     GM_ENOENT);
    assert_string_equal(user, "");
    assert_string_equal(cmd, "");
}

static void test_process_usage(void **state)
{
    const char *root = *state;
    gm_host_proc_usage u;
    long hz = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    /* A comm with a space and a ')' in it; negative priority and nice. */
    write_text(root, "31/stat",
               "31 (my (odd) name) S 1 31 31 0 -1 4194304 100 0 0 0 250 50 0 0 -2 -5 4 0 "
               "123456 1000000 300 18446744073709551615\n");
    write_text(root, "31/status", "Name:\tx\nUid:\t1000\t1000\t1000\t1000\n");
    assert_int_equal(gm_host_process_usage(root, 31, &u), GM_OK);
    assert_float_equal(u.cpu_s, 300.0 / (double)hz, 1e-9);
    assert_int_equal(u.start_ticks, 123456);
    assert_int_equal(u.rss_bytes, 300 * (uint64_t)page);
    assert_true(u.has_uid);
    assert_int_equal(u.uid, 1000);
    write_text(root, "32/stat", "32 (x) S 1 2 3\n");
    assert_int_equal(gm_host_process_usage(root, 32, &u), GM_EPARSE);
    write_text(root, "33/stat", "33 no parenthesis\n");
    assert_int_equal(gm_host_process_usage(root, 33, &u), GM_EPARSE);
    assert_int_equal(gm_host_process_usage(root, 999, &u), GM_ENOENT);
    /* The live /proc: this process, with our own uid and some memory. */
    assert_int_equal(gm_host_process_usage(NULL, (uint32_t)getpid(), &u), GM_OK);
    assert_true(u.has_uid);
    assert_int_equal(u.uid, getuid());
    check_gt(u.rss_bytes, 0);
    check_gt(u.start_ticks, 0);
}

static void test_parent_pid(void **state)
{
    const char *root = *state;
    uint32_t ppid = 0;
    assert_int_equal(gm_host_parent_pid(fixture("x86"), 4242, &ppid), GM_OK);
    assert_int_equal(ppid, 1);
    assert_int_equal(gm_host_parent_pid(fixture("x86"), 999, &ppid), GM_ENOENT);
    write_text(root, "20/status", "Name:\tworker\nPPid:\t19\nUid:\t0\t0\t0\t0\n");
    assert_int_equal(gm_host_parent_pid(root, 20, &ppid), GM_OK);
    assert_int_equal(ppid, 19);
    write_text(root, "21/status", "Name:\tx\nPPid:\tnope\n");
    assert_int_equal(gm_host_parent_pid(root, 21, &ppid), GM_EPARSE);
    write_text(root, "22/status", "Name:\tx\n");
    assert_int_equal(gm_host_parent_pid(root, 22, &ppid), GM_EPARSE);
    /* The live /proc: this process's parent. */
    assert_int_equal(gm_host_parent_pid(NULL, (uint32_t)getpid(), &ppid), GM_OK);
    assert_int_equal(ppid, (uint32_t)getppid());
}

static void test_describe_truncation(void **state)
{
    char user[3], cmd[8];
    const char *root = *state;
    static const char cmdline[] = "abcde\xc3\xa9xyz\0arg\0";
    write_text(root, "7/status", "Name:\tx\nUid:\t0\t0\t0\t0\n");
    write_bytes(root, "7/cmdline", cmdline, sizeof cmdline - 1);
    /* 7 bytes of room: "abcde" plus a two-byte character that would not fit whole. */
    assert_int_equal(gm_host_describe_process(root, 7, user, sizeof user, cmd, 7), GM_OK);
    assert_string_equal(user, "ro");
    assert_string_equal(cmd, "abcde");
    assert_int_equal(gm_host_describe_process(root, 7, user, sizeof user, cmd, sizeof cmd), GM_OK);
    assert_string_equal(cmd, "abcde\xc3\xa9");

    /* Control bytes and invalid UTF-8 are shown as '?', as ps does. */
    write_bytes(root, "8/cmdline", "a\tb\xff\0c\0\0", 8);
    write_text(root, "8/status", "Uid:\t0\t0\t0\t0\n");
    char big[GM_CMD_LEN];
    assert_int_equal(gm_host_describe_process(root, 8, user, sizeof user, big, sizeof big), GM_OK);
    assert_string_equal(big, "a?b? c");

    /* No status, no cmdline, only comm: still described. No status and nothing else: gone. */
    write_text(root, "9/comm", "kworker/0:1\n");
    char u2[GM_USER_LEN];
    assert_int_equal(gm_host_describe_process(root, 9, u2, sizeof u2, big, sizeof big), GM_OK);
    assert_string_equal(u2, "");
    assert_string_equal(big, "[kworker/0:1]");
    char empty_pid[4096];
    snprintf(empty_pid, sizeof empty_pid, "%s/10", root);
    assert_int_equal(mkdir(empty_pid, 0755), 0);
    assert_int_equal(gm_host_describe_process(root, 10, u2, sizeof u2, big, sizeof big), GM_ENOENT);

    assert_int_equal(gm_host_describe_process(root, 7, NULL, 0, big, sizeof big), GM_EINVAL);
}

/* ---- the real /proc ------------------------------------------------------------------------- */

static void test_real_proc(void **state)
{
    gm_host_reader *r = NULL;
    gm_host h;
    gm_error err = {0};
    char user[GM_USER_LEN], cmd[GM_CMD_LEN];
    (void)state;
    assert_int_equal(gm_host_reader_open(NULL, &r, &err), GM_OK);
    assert_int_equal(gm_host_reader_read(r, &h, &err), GM_OK);
    assert_true(gm_host_has(&h, GM_H_MEM_TOTAL_BYTES));
    check_gt(h.v[GM_H_MEM_TOTAL_BYTES], 0);
    assert_true(gm_host_has(&h, GM_H_CPU_COUNT));
    check_ge(h.v[GM_H_CPU_COUNT], 1);
    assert_true(gm_host_has(&h, GM_H_UPTIME_S));
    check_gt(h.v[GM_H_UPTIME_S], 0);
    check_ne(h.kernel[0], '\0');
    check_ne(h.hostname[0], '\0');
    /* A second read may or may not see jiffies pass; when it does, values are percentages. */
    assert_int_equal(gm_host_reader_read(r, &h, &err), GM_OK);
    if (gm_host_has(&h, GM_H_CPU_UTIL_PCT))
        assert_true(h.v[GM_H_CPU_UTIL_PCT] >= 0 && h.v[GM_H_CPU_UTIL_PCT] <= 100);
    for (unsigned i = 0; i < h.core_count; i++)
        assert_true(isnan(h.core_util_pct[i]) ||
                    (h.core_util_pct[i] >= 0 && h.core_util_pct[i] <= 100));
    gm_host_reader_close(r);

    assert_int_equal(
        gm_host_describe_process(NULL, (uint32_t)getpid(), user, sizeof user, cmd, sizeof cmd),
        GM_OK);
    check_ne(user[0], '\0');
    assert_non_null(strstr(cmd, program_invocation_short_name));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_read_full_host),
        cmocka_unit_test_setup_teardown(test_cpu_utilisation, tmp_setup, tmp_teardown),
        cmocka_unit_test_setup_teardown(test_cpu_zero_delta_is_absent, tmp_setup, tmp_teardown),
        cmocka_unit_test_setup_teardown(test_cpu_counter_backwards_is_absent, tmp_setup,
                                        tmp_teardown),
        cmocka_unit_test_setup_teardown(test_cpu_offline_matches_by_id, tmp_setup, tmp_teardown),
        cmocka_unit_test_setup_teardown(test_cpu_third_reading_uses_second, tmp_setup,
                                        tmp_teardown),
        cmocka_unit_test_setup_teardown(test_cpu_big_stat, tmp_setup, tmp_teardown),
        cmocka_unit_test(test_old_kernel),
        cmocka_unit_test(test_cpuinfo_arm64),
        cmocka_unit_test_setup_teardown(test_cpuinfo_padded_model_name, tmp_setup, tmp_teardown),
        cmocka_unit_test(test_malformed_files_are_absent),
        cmocka_unit_test(test_partial_root),
        cmocka_unit_test_setup_teardown(test_missing_root_is_eio, tmp_setup, tmp_teardown),
        cmocka_unit_test_setup_teardown(test_strings_are_clean_utf8, tmp_setup, tmp_teardown),
        cmocka_unit_test(test_describe_process),
        cmocka_unit_test_setup_teardown(test_describe_truncation, tmp_setup, tmp_teardown),
        cmocka_unit_test_setup_teardown(test_parent_pid, tmp_setup, tmp_teardown),
        cmocka_unit_test_setup_teardown(test_process_usage, tmp_setup, tmp_teardown),
        cmocka_unit_test(test_real_proc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
