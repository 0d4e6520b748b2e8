/* file.c - output files written by the rules in file.h. */
#include "base/file.h"

#include "base/buf.h"
#include "base/error.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

struct gm_file {
    FILE *stream;
    int fd;
    int werr;        /* errno of the first failed write(2), 0 while none failed */
    char *path;      /* as the caller gave it, for messages */
    char *final;     /* the target a temporary file is renamed onto; NULL: written directly */
    char *tmp;       /* the temporary file; NULL: written directly */
    bool in_place;   /* GM_FILE_STREAM: a regular file is written in place, not replaced */
    bool sync;       /* a regular file's contents: fsync at the commit */
    bool keep_mode;  /* replacing an existing file: its mode and owner carry over */
    struct stat old; /* that file, when keep_mode */
};

static ssize_t cookie_write(void *c, const char *buf, size_t n)
{
    gm_file *f = c;
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(f->fd, buf + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (!f->werr)
                f->werr = w < 0 ? errno : EIO;
            /* stdio counts a short write as an error; what was written is reported. */
            return done ? (ssize_t)done : -1;
        }
        done += (size_t)w;
    }
    return (ssize_t)done;
}

static int cookie_close(void *c)
{
    gm_file *f = c;
    int rc = close(f->fd);
    if (rc < 0 && !f->werr && errno != EINTR)
        f->werr = errno;
    f->fd = -1;
    return rc;
}

static void file_free(gm_file *f)
{
    if (!f)
        return;
    free(f->path);
    free(f->final);
    free(f->tmp);
    free(f);
}

/* The descriptor of this process that path names (/dev/stdout, /dev/fd/3), or -1. */
static int own_descriptor(const char *path)
{
    if (strcmp(path, "/dev/stdin") == 0)
        return 0;
    if (strcmp(path, "/dev/stdout") == 0)
        return 1;
    if (strcmp(path, "/dev/stderr") == 0)
        return 2;
    const char *num = NULL;
    if (strncmp(path, "/dev/fd/", 8) == 0)
        num = path + 8;
    else if (strncmp(path, "/proc/self/fd/", 14) == 0)
        num = path + 14;
    if (!num || *num < '0' || *num > '9')
        return -1;
    char *end;
    long n = strtol(num, &end, 10);
    return *end || n > INT_MAX ? -1 : (int)n;
}

/* A fresh file beside final, created so that nothing already there (a planted link) is
 * followed or reused. */
static int make_temporary(gm_file *f, gm_error *err)
{
    char *copy = strdup(f->final);
    if (!copy)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    char *copy2 = strdup(f->final);
    if (!copy2) {
        free(copy);
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    }
    const char *dir = dirname(copy), *base = basename(copy2);
    size_t cap = strlen(dir) + strlen(base) + 32;
    f->tmp = malloc(cap);
    int rc = GM_OK;
    if (!f->tmp) {
        rc = gm_error_set(err, GM_ENOMEM, "out of memory");
        goto done;
    }
    for (int attempt = 0; attempt < 100; attempt++) {
        uint64_t r = 0;
        if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
            r = ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)f ^
                (uint64_t)attempt * 2654435761u;
        snprintf(f->tmp, cap, "%s/.%s.%012llx.tmp", dir, base,
                 (unsigned long long)(r & 0xffffffffffffULL));
        f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (f->fd >= 0 || errno != EEXIST)
            break;
    }
    if (f->fd < 0) {
        rc = gm_error_set(err, GM_EIO, "cannot write %s: cannot create a file in %s: %s", f->path,
                          dir, strerror(errno));
        free(f->tmp);
        f->tmp = NULL;
        goto done;
    }
    if (f->keep_mode) {
        /* Best effort: the new file is complete without them. */
        if (geteuid() == 0)
            (void)!fchown(f->fd, f->old.st_uid, f->old.st_gid);
        (void)!fchmod(f->fd, f->old.st_mode & 07777);
    }
done:
    free(copy);
    free(copy2);
    return rc;
}

/* GM_FILE_STREAM's regular (or new) file: opened where it is, never through a link. O_NONBLOCK
 * and O_NOCTTY only matter should something else be put there after the stat: a FIFO must not
 * block the open, a terminal must not become ours; either is then refused. O_TRUNC cuts only a
 * regular file. */
static int open_in_place(gm_file *f, const char *target, gm_error *err)
{
    if (!(f->final = strdup(target)))
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    f->fd =
        open(target, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
             0666);
    if (f->fd < 0)
        return gm_error_set(err, GM_EIO, "cannot write %s: %s", f->path, strerror(errno));
    struct stat now;
    int fl = fcntl(f->fd, F_GETFL);
    if (fstat(f->fd, &now) < 0 || !S_ISREG(now.st_mode) || fl < 0 ||
        fcntl(f->fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        close(f->fd);
        f->fd = -1;
        return gm_error_set(err, GM_EIO, "cannot write %s: it changed while being opened", f->path);
    }
    f->sync = true;
    return GM_OK;
}

/* Decides how path is written and opens f->fd accordingly. */
static int open_target(gm_file *f, gm_error *err)
{
    const char *path = f->path;
    int own = own_descriptor(path);
    if (own >= 0) {
        f->fd = fcntl(own, F_DUPFD_CLOEXEC, 3);
        if (f->fd < 0)
            return gm_error_set(err, GM_EIO, "cannot write %s: %s", path, strerror(errno));
        return GM_OK;
    }
    struct stat sb;
    if (stat(path, &sb) < 0) {
        if (errno != ENOENT)
            return gm_error_set(err, GM_EIO, "cannot write %s: %s", path, strerror(errno));
        struct stat lb;
        if (lstat(path, &lb) == 0 && S_ISLNK(lb.st_mode))
            return gm_error_set(err, GM_EINVAL,
                                "cannot write %s: a symbolic link to nothing (not written "
                                "through)",
                                path);
        if (f->in_place)
            return open_in_place(f, path, err);
        if (!(f->final = strdup(path)))
            return gm_error_set(err, GM_ENOMEM, "out of memory");
        f->sync = true;
        return make_temporary(f, err);
    }
    if (S_ISDIR(sb.st_mode))
        return gm_error_set(err, GM_EINVAL, "cannot write %s: it is a directory", path);
    if (S_ISBLK(sb.st_mode))
        return gm_error_set(err, GM_EINVAL,
                            "cannot write %s: it is a block device (gpumon does not write "
                            "to one)",
                            path);
    if (S_ISSOCK(sb.st_mode))
        return gm_error_set(err, GM_EINVAL, "cannot write %s: it is a socket", path);
    if (S_ISREG(sb.st_mode)) {
        char real[PATH_MAX];
        if (!realpath(path, real))
            return gm_error_set(err, GM_EIO, "cannot write %s: %s", path, strerror(errno));
        if (f->in_place)
            return open_in_place(f, real, err);
        if (!(f->final = strdup(real)))
            return gm_error_set(err, GM_ENOMEM, "out of memory");
        f->sync = true;
        f->keep_mode = true;
        f->old = sb;
        return make_temporary(f, err);
    }
    /* A FIFO or a character device: written where it is. No O_TRUNC: it means nothing there,
     * and should the path have become a regular file meanwhile it must not be cut. */
    f->fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (f->fd < 0)
        return gm_error_set(err, GM_EIO, "cannot write %s: %s", path, strerror(errno));
    struct stat now;
    if (fstat(f->fd, &now) < 0 || now.st_dev != sb.st_dev || now.st_ino != sb.st_ino ||
        S_ISREG(now.st_mode)) {
        close(f->fd);
        f->fd = -1;
        return gm_error_set(err, GM_EIO, "cannot write %s: it changed while being opened", path);
    }
    return GM_OK;
}

int gm_file_open_output(const char *path, unsigned flags, gm_file **out, gm_error *err)
{
    *out = NULL;
    if (!path || !*path)
        return gm_error_set(err, GM_EINVAL, "the output path is empty");
    gm_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    }
    f->fd = -1;
    f->in_place = flags & GM_FILE_STREAM;
    int rc = open_target(f, err);
    if (rc < 0) {
        file_free(f);
        return rc;
    }
    cookie_io_functions_t io = {.write = cookie_write, .close = cookie_close};
    f->stream = fopencookie(f, "w", io);
    if (!f->stream) {
        close(f->fd);
        if (f->tmp)
            unlink(f->tmp);
        file_free(f);
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    }
    /* A reader following the output sees whole lines as they are written. */
    if (f->in_place)
        setvbuf(f->stream, NULL, _IOLBF, BUFSIZ);
    *out = f;
    return GM_OK;
}

FILE *gm_file_stream(gm_file *f)
{
    return f->stream;
}

bool gm_file_replaces(const gm_file *f)
{
    return f->tmp != NULL;
}

/* fsync of the directory makes the rename itself durable (rename(2) alone may be lost). */
static void sync_dir_of(const char *path)
{
    char *copy = strdup(path);
    if (!copy)
        return;
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(copy);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

int gm_file_commit(gm_file *f, gm_file_id *id, gm_error *err)
{
    if (id)
        memset(id, 0, sizeof *id);
    if (fflush(f->stream) != 0 && !f->werr)
        f->werr = errno ? errno : EIO;
    struct stat sb;
    bool have_stat = fstat(f->fd, &sb) == 0;
    /* Only a file's contents can be synced; a FIFO or a device has nothing to keep. */
    if (!f->werr && f->sync && fsync(f->fd) < 0)
        f->werr = errno;
    if (fclose(f->stream) != 0 && !f->werr)
        f->werr = errno ? errno : EIO;
    f->stream = NULL;
    int rc = GM_OK;
    if (f->werr) {
        rc = gm_error_set(err, GM_EIO, "cannot write %s: %s", f->path, strerror(f->werr));
        if (f->tmp)
            unlink(f->tmp);
    } else if (f->tmp && rename(f->tmp, f->final) < 0) {
        rc = gm_error_set(err, GM_EIO, "cannot write %s: cannot rename %s into place: %s", f->path,
                          f->tmp, strerror(errno));
        unlink(f->tmp);
    } else if (f->sync) {
        sync_dir_of(f->final);
        if (id && have_stat) {
            id->regular = true;
            id->dev = sb.st_dev;
            id->ino = sb.st_ino;
            snprintf(id->path, sizeof id->path, "%s", f->final);
        }
    }
    file_free(f);
    return rc;
}

void gm_file_abort(gm_file *f)
{
    if (!f)
        return;
    if (f->stream)
        fclose(f->stream);
    if (f->tmp)
        unlink(f->tmp);
    file_free(f);
}

int gm_file_write(const char *path, const void *data, size_t len, gm_file_id *id, gm_error *err)
{
    gm_file *f;
    int rc = gm_file_open_output(path, GM_FILE_REPLACE, &f, err);
    if (rc < 0)
        return rc;
    /* A failed write is remembered by the stream and reported by the commit. */
    (void)!fwrite(data, 1, len, f->stream);
    return gm_file_commit(f, id, err);
}

int gm_file_remove_if_same(const gm_file_id *id)
{
    if (!id->regular || !id->path[0])
        return GM_ESTATE;
    struct stat sb;
    if (lstat(id->path, &sb) < 0)
        return errno == ENOENT ? GM_ENOENT : GM_EIO;
    if (!S_ISREG(sb.st_mode) || sb.st_dev != id->dev || sb.st_ino != id->ino)
        return GM_ESTATE;
    return unlink(id->path) == 0 ? GM_OK : GM_EIO;
}

/* errno of a failed open as gpumon's code. */
static int open_code(int e)
{
    return e == ENOENT ? GM_ENOENT : (e == EACCES || e == EPERM) ? GM_EPERM : GM_EIO;
}

int gm_file_read_all(const char *path, size_t max, const char *what, char **out, size_t *len,
                     gm_error *err)
{
    *out = NULL;
    *len = 0;
    FILE *f = fopen(path, "rbe");
    if (!f) {
        int e = errno;
        return gm_error_set(err, open_code(e), "cannot read %s: %s", path, strerror(e));
    }
    gm_buf b;
    gm_buf_init(&b, 0);
    char chunk[65536];
    size_t n;
    bool over = false;
    while (!b.failed && (n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (n > max - b.len) {
            over = true;
            break;
        }
        gm_buf_put(&b, chunk, n);
    }
    int rc = GM_OK;
    if (over) {
        char limit[32];
        if (max % GM_BYTES_PER_MIB == 0)
            snprintf(limit, sizeof limit, "%zu MiB", max / (size_t)GM_BYTES_PER_MIB);
        else
            snprintf(limit, sizeof limit, "%zu bytes", max);
        rc = gm_error_set(err, GM_EPARSE, "%s: larger than %s, not a %s", path, limit, what);
    } else if (ferror(f)) {
        rc = gm_error_set(err, GM_EIO, "cannot read %s: %s", path, strerror(errno));
    } else if (!(*out = gm_buf_take(&b, len))) {
        rc = gm_error_set(err, GM_ENOMEM, "%s: out of memory", path);
    }
    gm_buf_free(&b);
    fclose(f);
    return rc;
}
