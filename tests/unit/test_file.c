/* test_file.c - base/file: how each kind of output path is written, and what is never replaced
 * (a device, a FIFO, a symbolic link). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/file.h"

static char dir[PATH_MAX];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "%s/gm-file-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[PATH_MAX + 300];
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (unlink(p) < 0)
            rmdir(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
    return 0;
}

static const char *at(const char *name)
{
    static char bufs[4][PATH_MAX + 64];
    static int n;
    char *b = bufs[n++ % 4];
    snprintf(b, sizeof bufs[0], "%s/%s", dir, name);
    return b;
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static char *slurp(const char *path)
{
    static char buf[4096];
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* Entries in the directory: a temporary file left behind would show up. */
static int entries(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static void test_new_file_is_created(void **state)
{
    (void)state;
    gm_error err = {0};
    gm_file_id id;
    assert_int_equal(gm_file_write(at("new"), "hello\n", 6, &id, &err), GM_OK);
    assert_string_equal(slurp(at("new")), "hello\n");
    assert_true(id.regular);
    assert_int_equal(entries(), 1);
}

static void test_regular_file_replaced_whole_keeping_its_mode(void **state)
{
    (void)state;
    put(at("reg"), "old contents\n");
    chmod(at("reg"), 0640);
    struct stat before;
    stat(at("reg"), &before);
    gm_file *f;
    gm_error err = {0};
    assert_int_equal(gm_file_open_output(at("reg"), GM_FILE_REPLACE, &f, &err), GM_OK);
    assert_true(gm_file_replaces(f));
    fputs("new", gm_file_stream(f));
    /* Until the commit the old contents stand. */
    assert_string_equal(slurp(at("reg")), "old contents\n");
    assert_int_equal(gm_file_commit(f, NULL, &err), GM_OK);
    struct stat after;
    stat(at("reg"), &after);
    assert_string_equal(slurp(at("reg")), "new");
    assert_int_equal(after.st_mode & 07777, 0640);
    check_ne(after.st_ino, before.st_ino); /* renamed into place, not rewritten */
    assert_int_equal(entries(), 1);
}

static void test_abort_leaves_the_target(void **state)
{
    (void)state;
    put(at("reg"), "keep\n");
    gm_file *f;
    assert_int_equal(gm_file_open_output(at("reg"), GM_FILE_REPLACE, &f, NULL), GM_OK);
    fputs("half", gm_file_stream(f));
    gm_file_abort(f);
    assert_string_equal(slurp(at("reg")), "keep\n");
    assert_int_equal(entries(), 1);
}

static void test_symlink_is_followed_not_replaced(void **state)
{
    (void)state;
    put(at("target"), "orig\n");
    assert_int_equal(symlink("target", at("link")), 0);
    assert_int_equal(symlink("link", at("link2")), 0);
    gm_error err = {0};
    gm_file_id id;
    assert_int_equal(gm_file_write(at("link2"), "via link\n", 9, &id, &err), GM_OK);
    struct stat lb;
    assert_int_equal(lstat(at("link"), &lb), 0);
    assert_true(S_ISLNK(lb.st_mode));
    assert_int_equal(lstat(at("link2"), &lb), 0);
    assert_true(S_ISLNK(lb.st_mode));
    assert_string_equal(slurp(at("target")), "via link\n");
    char real[PATH_MAX];
    assert_non_null(realpath(at("target"), real));
    assert_string_equal(id.path, real);
    assert_int_equal(entries(), 3);
}

static void test_dangling_symlink_and_loop_refused(void **state)
{
    (void)state;
    assert_int_equal(symlink("nowhere", at("dangling")), 0);
    gm_error err = {0};
    assert_int_equal(gm_file_write(at("dangling"), "x", 1, NULL, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "symbolic link to nothing"));
    assert_int_equal(access(at("nowhere"), F_OK), -1);

    assert_int_equal(symlink("loop2", at("loop1")), 0);
    assert_int_equal(symlink("loop1", at("loop2")), 0);
    check_lt(gm_file_write(at("loop1"), "x", 1, NULL, &err), 0);
    assert_non_null(strstr(err.msg, strerror(ELOOP)));
    struct stat lb;
    assert_int_equal(lstat(at("loop1"), &lb), 0);
    assert_true(S_ISLNK(lb.st_mode));
    assert_int_equal(entries(), 3);
}

static void test_directory_refused(void **state)
{
    (void)state;
    assert_int_equal(mkdir(at("sub"), 0755), 0);
    gm_error err = {0};
    assert_int_equal(gm_file_write(at("sub"), "x", 1, NULL, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "directory"));
    struct stat sb;
    assert_int_equal(stat(at("sub"), &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));
}

static void test_fifo_written_in_place(void **state)
{
    (void)state;
    assert_int_equal(mkfifo(at("fifo"), 0600), 0);
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    if (pid == 0) {
        /* The reader: copies what comes through the FIFO to the pipe. */
        int fd = open(at("fifo"), O_RDONLY);
        char b[256];
        ssize_t n;
        while ((n = read(fd, b, sizeof b)) > 0)
            (void)!write(pfd[1], b, (size_t)n);
        _exit(0);
    }
    close(pfd[1]);
    gm_error err = {0};
    gm_file_id id;
    assert_int_equal(gm_file_write(at("fifo"), "through\n", 8, &id, &err), GM_OK);
    assert_false(id.regular);
    char got[64] = "";
    ssize_t n = read(pfd[0], got, sizeof got - 1);
    assert_int_equal(n, 8);
    assert_string_equal(got, "through\n");
    close(pfd[0]);
    waitpid(pid, NULL, 0);
    struct stat sb;
    assert_int_equal(lstat(at("fifo"), &sb), 0);
    assert_true(S_ISFIFO(sb.st_mode));
    assert_int_equal(gm_file_remove_if_same(&id), GM_ESTATE);
    assert_int_equal(lstat(at("fifo"), &sb), 0);
    assert_int_equal(entries(), 1);
}

/* A character device of our own where we may make one (root), else the system's: either way
 * it must still be that device afterwards. */
static const char *char_device(const char *name, unsigned minor, const char *system)
{
    static char made[2][PATH_MAX + 64];
    char *p = made[minor == 7];
    snprintf(p, sizeof made[0], "%s", at(name));
    return mknod(p, S_IFCHR | 0666, makedev(1, minor)) == 0 ? p : system;
}

static void test_devices_written_never_replaced(void **state)
{
    (void)state;
    const char *null = char_device("null", 3, "/dev/null");
    gm_error err = {0};
    gm_file_id id;
    assert_int_equal(gm_file_write(null, "gone\n", 5, &id, &err), GM_OK);
    assert_false(id.regular);
    struct stat sb;
    assert_int_equal(lstat(null, &sb), 0);
    assert_true(S_ISCHR(sb.st_mode));

    /* A full device: the write fails, and says so with the path and the cause. */
    const char *full = char_device("full", 7, "/dev/full");
    gm_file *f;
    assert_int_equal(gm_file_open_output(full, GM_FILE_REPLACE, &f, &err), GM_OK);
    assert_false(gm_file_replaces(f));
    fputs("{}\n", gm_file_stream(f));
    assert_int_equal(gm_file_commit(f, NULL, &err), GM_EIO);
    assert_non_null(strstr(err.msg, full));
    assert_non_null(strstr(err.msg, strerror(ENOSPC)));
    assert_int_equal(lstat(full, &sb), 0);
    assert_true(S_ISCHR(sb.st_mode));

    /* A link to a device: the device is written, the link stays. */
    assert_int_equal(symlink(null, at("to-null")), 0);
    assert_int_equal(gm_file_write(at("to-null"), "x", 1, NULL, &err), GM_OK);
    assert_int_equal(lstat(at("to-null"), &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    assert_int_equal(lstat(null, &sb), 0);
    assert_true(S_ISCHR(sb.st_mode));
}

static void test_own_descriptor_written_directly(void **state)
{
    (void)state;
    /* /dev/fd/N is this process's descriptor N: written at its offset, never replaced. */
    int fd = open(at("log"), O_WRONLY | O_CREAT | O_APPEND, 0644);
    check_ge(fd, 0);
    assert_int_equal(write(fd, "first\n", 6), 6);
    char path[64];
    snprintf(path, sizeof path, "/dev/fd/%d", fd);
    struct stat before, after;
    fstat(fd, &before);
    gm_error err = {0};
    assert_int_equal(gm_file_write(path, "second\n", 7, NULL, &err), GM_OK);
    close(fd);
    stat(at("log"), &after);
    assert_int_equal(before.st_ino, after.st_ino);
    assert_string_equal(slurp(at("log")), "first\nsecond\n");
}

static void test_planted_link_beside_the_target_is_not_followed(void **state)
{
    (void)state;
    /* The old fixed temporary names: a link planted under them must not be written through. */
    put(at("precious"), "precious\n");
    assert_int_equal(symlink("precious", at("port.tmp")), 0);
    gm_error err = {0};
    gm_file_id id;
    assert_int_equal(gm_file_write(at("port"), "8080\n", 5, &id, &err), GM_OK);
    assert_string_equal(slurp(at("precious")), "precious\n");
    assert_string_equal(slurp(at("port")), "8080\n");
    assert_int_equal(entries(), 3);
}

static void test_remove_only_the_file_written(void **state)
{
    (void)state;
    gm_error err = {0};
    gm_file_id id;
    assert_int_equal(gm_file_write(at("port"), "1\n", 2, &id, &err), GM_OK);
    assert_int_equal(gm_file_remove_if_same(&id), GM_OK);
    assert_int_equal(access(at("port"), F_OK), -1);
    assert_int_equal(gm_file_remove_if_same(&id), GM_ENOENT);

    /* Replaced since by another file: that one stays. */
    assert_int_equal(gm_file_write(at("port"), "1\n", 2, &id, &err), GM_OK);
    put(at("other"), "2\n");
    assert_int_equal(rename(at("other"), at("port")), 0);
    assert_int_equal(gm_file_remove_if_same(&id), GM_ESTATE);
    assert_string_equal(slurp(at("port")), "2\n");

    /* Replaced by a FIFO: it stays. */
    unlink(at("port"));
    assert_int_equal(mkfifo(at("port"), 0600), 0);
    assert_int_equal(gm_file_remove_if_same(&id), GM_ESTATE);
    struct stat sb;
    assert_int_equal(lstat(at("port"), &sb), 0);
    assert_true(S_ISFIFO(sb.st_mode));
}

static void test_missing_directory_is_an_error(void **state)
{
    (void)state;
    gm_error err = {0};
    assert_int_equal(gm_file_write(at("no/such/file"), "x", 1, NULL, &err), GM_EIO);
    assert_non_null(strstr(err.msg, "no/such/file"));
    assert_non_null(strstr(err.msg, strerror(ENOENT)));
}

/* GM_FILE_STREAM: a regular file is cut and written where it is, line by line, so that a reader
 * following it sees it grow; it is never replaced by a rename. */
static void test_stream_written_in_place_as_it_goes(void **state)
{
    (void)state;
    put(at("log"), "old contents\n");
    chmod(at("log"), 0640);
    struct stat before, after;
    stat(at("log"), &before);
    gm_file *f;
    gm_error err = {0};
    assert_int_equal(gm_file_open_output(at("log"), GM_FILE_STREAM, &f, &err), GM_OK);
    assert_false(gm_file_replaces(f));
    assert_string_equal(slurp(at("log")), "");
    fputs("line 1\n", gm_file_stream(f));
    assert_string_equal(slurp(at("log")), "line 1\n");
    fputs("line 2\n", gm_file_stream(f));
    assert_string_equal(slurp(at("log")), "line 1\nline 2\n");
    gm_file_id id;
    assert_int_equal(gm_file_commit(f, &id, &err), GM_OK);
    stat(at("log"), &after);
    assert_int_equal(after.st_ino, before.st_ino);
    assert_int_equal(after.st_mode & 07777, 0640);
    assert_true(id.regular);
    assert_int_equal(id.ino, before.st_ino);
    assert_int_equal(entries(), 1);

    /* A new file exists from the open on; an abort keeps what was written. */
    assert_int_equal(gm_file_open_output(at("new"), GM_FILE_STREAM, &f, &err), GM_OK);
    assert_string_equal(slurp(at("new")), "");
    fputs("kept\n", gm_file_stream(f));
    gm_file_abort(f);
    assert_string_equal(slurp(at("new")), "kept\n");
    assert_int_equal(entries(), 2);
}

static void test_stream_follows_links_like_cp(void **state)
{
    (void)state;
    put(at("target"), "orig\n");
    assert_int_equal(symlink("target", at("link")), 0);
    gm_file *f;
    gm_error err = {0};
    assert_int_equal(gm_file_open_output(at("link"), GM_FILE_STREAM, &f, &err), GM_OK);
    fputs("via link\n", gm_file_stream(f));
    assert_string_equal(slurp(at("target")), "via link\n");
    gm_file_id id;
    assert_int_equal(gm_file_commit(f, &id, &err), GM_OK);
    struct stat lb;
    assert_int_equal(lstat(at("link"), &lb), 0);
    assert_true(S_ISLNK(lb.st_mode));
    char real[PATH_MAX];
    assert_non_null(realpath(at("target"), real));
    assert_string_equal(id.path, real);

    /* Refused as for a one-shot output: nothing is created or cut. */
    assert_int_equal(symlink("nowhere", at("dangling")), 0);
    assert_int_equal(gm_file_open_output(at("dangling"), GM_FILE_STREAM, &f, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "symbolic link to nothing"));
    assert_int_equal(access(at("nowhere"), F_OK), -1);
    assert_int_equal(symlink("loop2", at("loop1")), 0);
    assert_int_equal(symlink("loop1", at("loop2")), 0);
    check_lt(gm_file_open_output(at("loop1"), GM_FILE_STREAM, &f, &err), 0);
    assert_non_null(strstr(err.msg, strerror(ELOOP)));
    assert_int_equal(mkdir(at("sub"), 0755), 0);
    assert_int_equal(gm_file_open_output(at("sub"), GM_FILE_STREAM, &f, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "directory"));
    assert_int_equal(entries(), 6);
}

static void test_stream_device_written_never_replaced(void **state)
{
    (void)state;
    const char *null = char_device("null", 3, "/dev/null");
    gm_file *f;
    gm_error err = {0};
    assert_int_equal(gm_file_open_output(null, GM_FILE_STREAM, &f, &err), GM_OK);
    fputs("gone\n", gm_file_stream(f));
    assert_int_equal(gm_file_commit(f, NULL, &err), GM_OK);
    struct stat sb;
    assert_int_equal(lstat(null, &sb), 0);
    assert_true(S_ISCHR(sb.st_mode));

    /* Line by line: a full device fails at the first line, before the commit. */
    const char *full = char_device("full", 7, "/dev/full");
    assert_int_equal(gm_file_open_output(full, GM_FILE_STREAM, &f, &err), GM_OK);
    assert_true(fputs("{}\n", gm_file_stream(f)) == EOF || ferror(gm_file_stream(f)));
    assert_int_equal(gm_file_commit(f, NULL, &err), GM_EIO);
    assert_non_null(strstr(err.msg, full));
    assert_non_null(strstr(err.msg, strerror(ENOSPC)));
    assert_int_equal(lstat(full, &sb), 0);
    assert_true(S_ISCHR(sb.st_mode));
}

/* A whole input file: its bytes NUL-terminated, exactly max bytes accepted and one more refused
 * by name and limit, an endless device refused rather than read into memory, a missing file
 * said to be missing. */
static void test_read_all(void **state)
{
    (void)state;
    gm_error err = {0};
    char *text = NULL;
    size_t len = 99;
    const char *p = at("in.json");
    assert_int_equal(gm_file_write(p, "{\"a\": 1}", 8, NULL, &err), GM_OK);
    assert_int_equal(gm_file_read_all(p, 8, "thing", &text, &len, &err), GM_OK);
    check_eq(len, 8);
    assert_string_equal(text, "{\"a\": 1}");
    free(text);

    assert_int_equal(gm_file_read_all(p, 7, "thing", &text, &len, &err), GM_EPARSE);
    assert_null(text);
    check_str_contains(err.msg, "in.json: larger than 7 bytes, not a thing");

    assert_int_equal(gm_file_read_all("/dev/zero", 1u << 20, "task config", &text, &len, &err),
                     GM_EPARSE);
    assert_string_equal(err.msg, "/dev/zero: larger than 1 MiB, not a task config");

    assert_int_equal(gm_file_write(at("empty"), "", 0, NULL, &err), GM_OK);
    assert_int_equal(gm_file_read_all(at("empty"), 8, "thing", &text, &len, &err), GM_OK);
    check_eq(len, 0);
    assert_string_equal(text, "");
    free(text);

    assert_int_equal(gm_file_read_all(at("nothing"), 8, "thing", &text, &len, &err), GM_ENOENT);
    assert_null(text);
    check_str_contains(err.msg, "cannot read ");
    check_str_contains(err.msg, "nothing: No such file or directory");
    assert_int_equal(gm_file_read_all(dir, 8, "thing", &text, &len, &err), GM_EIO);
    check_str_contains(err.msg, "Is a directory");
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_new_file_is_created, setup, teardown),
        cmocka_unit_test_setup_teardown(test_regular_file_replaced_whole_keeping_its_mode, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_abort_leaves_the_target, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlink_is_followed_not_replaced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dangling_symlink_and_loop_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_directory_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fifo_written_in_place, setup, teardown),
        cmocka_unit_test_setup_teardown(test_devices_written_never_replaced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_own_descriptor_written_directly, setup, teardown),
        cmocka_unit_test_setup_teardown(test_planted_link_beside_the_target_is_not_followed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_remove_only_the_file_written, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_directory_is_an_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stream_written_in_place_as_it_goes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stream_follows_links_like_cp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stream_device_written_never_replaced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_all, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
