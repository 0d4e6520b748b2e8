/* fuzz_file_output.c - the output-file layer (base/file.c) that every -o, --output, --trace, -f
 * and --port-file goes through, often as root. The input picks a kind of path (a regular file,
 * a missing one, a link to a regular file, a chain of links, a dangling link, a link loop, a
 * FIFO with a reader, /dev/null, a link to /dev/null, a directory), how the path is spelled
 * (plain, with "/./", through "sub/.."), whether the write is committed or aborted, whether
 * the output is streamed (GM_FILE_STREAM) or replaced whole, and the bytes written. Checks,
 * for any input:
 *   - no non-regular file is ever replaced: the FIFO, the device and the directory are still
 *     what they were (same inode), and a symbolic link is still that link, never overwritten;
 *   - a committed write to a regular file (or a new one, or through links to one) leaves
 *     exactly the bytes written; an aborted or failed one leaves the old contents, unless it
 *     was streamed (then what was written stays: the file was written in place);
 *   - a FIFO gets exactly the bytes; a dangling link, a loop and a directory are refused;
 *   - no temporary file is left behind. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "fuzz.h"

enum kind {
    K_REGULAR,
    K_MISSING,
    K_LINK,
    K_CHAIN,
    K_DANGLING,
    K_LOOP,
    K_FIFO,
    K_DEVNULL,
    K_LINK_DEVNULL,
    K_DIR,
    K__COUNT
};

static char dir[PATH_MAX];
static const char *const names[] = {"old",   "sub",   "link", "chain",  "dangling",
                                    "loop1", "loop2", "fifo", "to-null"};
#define NNAMES (sizeof names / sizeof *names)
static const char OLD[] = "old contents\n";

static void at(char *buf, const char *name)
{
    snprintf(buf, PATH_MAX, "%s/%s", dir, name);
}

static void clear(void)
{
    char p[PATH_MAX];
    at(p, "new");
    unlink(p);
    for (size_t i = 0; i < NNAMES; i++) {
        at(p, names[i]);
        if (unlink(p) < 0)
            rmdir(p);
    }
}

static void remove_dir(void)
{
    clear();
    rmdir(dir);
}

/* The fixture, made afresh for each input: every name above, and nothing else. */
static void reset(void)
{
    char p[PATH_MAX];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "%s/gm-fuzz-file-XXXXXX",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        FUZZ_CHECK(mkdtemp(dir) != NULL);
        atexit(remove_dir);
    }
    clear();
    at(p, "old");
    FILE *f = fopen(p, "w");
    FUZZ_CHECK(f && fputs(OLD, f) >= 0 && fclose(f) == 0);
    at(p, "sub");
    FUZZ_CHECK(mkdir(p, 0755) == 0);
    at(p, "link");
    FUZZ_CHECK(symlink("old", p) == 0);
    at(p, "chain");
    FUZZ_CHECK(symlink("sub/../link", p) == 0);
    at(p, "dangling");
    FUZZ_CHECK(symlink("nowhere", p) == 0);
    at(p, "loop1");
    FUZZ_CHECK(symlink("loop2", p) == 0);
    at(p, "loop2");
    FUZZ_CHECK(symlink("loop1", p) == 0);
    at(p, "fifo");
    FUZZ_CHECK(mkfifo(p, 0600) == 0);
    at(p, "to-null");
    FUZZ_CHECK(symlink("/dev/null", p) == 0);
}

/* The directory holds the fixture's names (and "new" when written), nothing else. */
static void check_no_leftovers(bool new_expected)
{
    char p[PATH_MAX];
    at(p, "new");
    FUZZ_CHECK((access(p, F_OK) == 0) == new_expected);
    size_t n = 0;
    DIR *d = opendir(dir);
    FUZZ_CHECK(d != NULL);
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    FUZZ_CHECK(n == NNAMES + (new_expected ? 1 : 0));
}

static size_t slurp(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW);
    FUZZ_CHECK(fd >= 0);
    size_t n = 0;
    ssize_t r;
    while (n < cap && (r = read(fd, buf + n, cap - n)) > 0)
        n += (size_t)r;
    close(fd);
    return n;
}

static void check_link(const char *name, const char *target)
{
    char p[PATH_MAX], got[PATH_MAX];
    at(p, name);
    struct stat sb;
    FUZZ_CHECK(lstat(p, &sb) == 0 && S_ISLNK(sb.st_mode));
    ssize_t n = readlink(p, got, sizeof got - 1);
    FUZZ_CHECK(n >= 0);
    got[n] = 0;
    FUZZ_CHECK(strcmp(got, target) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    enum kind kind = (enum kind)(data[0] % K__COUNT);
    bool commit = !(data[1] & 1);
    bool stream = data[1] & 2;
    unsigned spelling = data[2] % 3;
    data += 3;
    size -= 3;
    if (size > 4096) /* within a pipe's buffer: the FIFO's reader is this process */
        size = 4096;
    reset();

    static const char *const leaf[] = {
        [K_REGULAR] = "old",          [K_MISSING] = "new", [K_LINK] = "link", [K_CHAIN] = "chain",
        [K_DANGLING] = "dangling",    [K_LOOP] = "loop1",  [K_FIFO] = "fifo", [K_DEVNULL] = NULL,
        [K_LINK_DEVNULL] = "to-null", [K_DIR] = "sub"};
    char path[PATH_MAX];
    if (kind == K_DEVNULL)
        snprintf(path, sizeof path, spelling == 1 ? "/dev/./null" : "/dev/null");
    else if (spelling == 1)
        snprintf(path, sizeof path, "%s/./%s", dir, leaf[kind]);
    else if (spelling == 2)
        snprintf(path, sizeof path, "%s/sub/../%s", dir, leaf[kind]);
    else
        snprintf(path, sizeof path, "%s/%s", dir, leaf[kind]);

    struct stat null_before, fifo_before, dir_before;
    FUZZ_CHECK(stat("/dev/null", &null_before) == 0);
    char p[PATH_MAX];
    at(p, "fifo");
    FUZZ_CHECK(lstat(p, &fifo_before) == 0);
    int reader = kind == K_FIFO ? open(p, O_RDONLY | O_NONBLOCK) : -1;
    at(p, "sub");
    FUZZ_CHECK(lstat(p, &dir_before) == 0);

    gm_file *f = NULL;
    gm_error err = {0};
    int rc = gm_file_open_output(path, stream ? GM_FILE_STREAM : GM_FILE_REPLACE, &f, &err);
    bool refused = kind == K_DANGLING || kind == K_LOOP || kind == K_DIR;
    FUZZ_CHECK((rc < 0) == refused);
    if (rc == GM_OK) {
        if (size)
            fwrite(data, 1, size, gm_file_stream(f));
        if (commit)
            rc = gm_file_commit(f, NULL, &err);
        else
            gm_file_abort(f);
        FUZZ_CHECK(rc == GM_OK);
    }
    /* A streamed write is in the file even when aborted: the stream is flushed as it closes. */
    bool written = rc == GM_OK && (commit || stream) && !refused;

    /* Nothing that is not a regular file was replaced, and every link is still that link. */
    struct stat sb;
    FUZZ_CHECK(stat("/dev/null", &sb) == 0 && S_ISCHR(sb.st_mode) &&
               sb.st_ino == null_before.st_ino && sb.st_rdev == null_before.st_rdev);
    at(p, "fifo");
    FUZZ_CHECK(lstat(p, &sb) == 0 && S_ISFIFO(sb.st_mode) && sb.st_ino == fifo_before.st_ino);
    at(p, "sub");
    FUZZ_CHECK(lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode) && sb.st_ino == dir_before.st_ino);
    check_link("link", "old");
    check_link("chain", "sub/../link");
    check_link("dangling", "nowhere");
    check_link("loop1", "loop2");
    check_link("loop2", "loop1");
    check_link("to-null", "/dev/null");
    at(p, "nowhere");
    FUZZ_CHECK(access(p, F_OK) < 0);

    /* The regular file has exactly the new bytes when written through, else the old ones. */
    static char buf[8192];
    at(p, "old");
    size_t n = slurp(p, buf, sizeof buf);
    bool into_old = kind == K_REGULAR || kind == K_LINK || kind == K_CHAIN;
    if (into_old && written)
        FUZZ_CHECK(n == size && memcmp(buf, data, size) == 0);
    else
        FUZZ_CHECK(n == sizeof OLD - 1 && memcmp(buf, OLD, n) == 0);
    if (kind == K_MISSING && written) {
        at(p, "new");
        n = slurp(p, buf, sizeof buf);
        FUZZ_CHECK(n == size && memcmp(buf, data, size) == 0);
    }
    /* The FIFO's reader gets what was written, even when aborted (a FIFO cannot take back). */
    if (reader >= 0) {
        ssize_t r = read(reader, buf, sizeof buf);
        size_t got = r > 0 ? (size_t)r : 0;
        FUZZ_CHECK(got <= size && memcmp(buf, data, got) == 0);
        if (written)
            FUZZ_CHECK(got == size);
        close(reader);
    }
    check_no_leftovers(kind == K_MISSING && written);
    return 0;
}
