/* spawn.c - runs a helper program (nvidia-smi) under a deadline so a hung driver never hangs us. */
#include "base/spawn.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/error.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* After SIGKILL a child stuck in the kernel (uninterruptible sleep inside the driver) cannot die
 * until it leaves the kernel; we wait this long, then leave it to a later reap instead of hanging.
 */
#define REAP_GRACE_MS 500
#define MAX_ORPHANS   64
#define READ_CHUNK    65536

/* Children killed but not yet reaped; reaped without blocking on every later call so they do not
 * stay zombies for the life of the daemon. */
static pthread_mutex_t orphan_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t orphans[MAX_ORPHANS];
static size_t orphan_count;

static void reap_orphans(void)
{
    pthread_mutex_lock(&orphan_lock);
    for (size_t i = 0; i < orphan_count;) {
        pid_t r = waitpid(orphans[i], NULL, WNOHANG);
        if (r == orphans[i] || (r < 0 && errno == ECHILD)) {
            orphans[i] = orphans[--orphan_count];
            continue;
        }
        i++;
    }
    pthread_mutex_unlock(&orphan_lock);
}

static void add_orphan(pid_t pid)
{
    pthread_mutex_lock(&orphan_lock);
    if (orphan_count < MAX_ORPHANS)
        orphans[orphan_count++] = pid;
    pthread_mutex_unlock(&orphan_lock);
}

/* Appends what fits below the buffer's limit. Returns 0, 1 when the limit was reached (data kept
 * up to it), -1 when out of memory. */
static int buf_append(gm_buf *b, const char *data, size_t n)
{
    int over = 0;
    if (n > b->limit - b->len) {
        n = b->limit - b->len;
        over = 1;
    }
    gm_buf_put(b, data, n);
    return b->failed ? -1 : over;
}

/* Descriptors 0-2 must not be pipe ends: dup2(fd, fd) in the child would keep O_CLOEXEC set. */
static int fd_above_stdio(int fd)
{
    if (fd > 2)
        return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    return moved;
}

static int make_pipe(int fds[2])
{
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -1;
    fds[0] = fd_above_stdio(fds[0]);
    fds[1] = fd_above_stdio(fds[1]);
    if (fds[0] < 0 || fds[1] < 0) {
        if (fds[0] >= 0)
            close(fds[0]);
        if (fds[1] >= 0)
            close(fds[1]);
        return -1;
    }
    return 0;
}

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static void record_status(gm_spawn_result *out, int status)
{
    if (WIFEXITED(status)) {
        out->exited = true;
        out->exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        out->signaled = true;
        out->signal = WTERMSIG(status);
    }
}

/* Waits for pid until deadline (monotonic ms, <0: none). Returns 1 when reaped, 0 on deadline. */
static int wait_until(pid_t pid, int64_t deadline, int *status)
{
    long nap = 1;
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return 1;
        if (r < 0 && errno != EINTR) {
            /* ECHILD: someone else reaped it (SIGCHLD ignored by the program); status unknown. */
            *status = -1;
            return 1;
        }
        if (deadline >= 0 && gm_clock_mono_ms() >= deadline)
            return 0;
        gm_clock_sleep_ms(nap);
        if (nap < 20)
            nap *= 2;
    }
}

/* Kills the child's whole process group (a wrapper script's children too) and reaps the child. */
static void kill_and_reap(pid_t pid, gm_spawn_result *out)
{
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    int status = 0;
    if (wait_until(pid, gm_clock_mono_ms() + REAP_GRACE_MS, &status)) {
        if (status != -1)
            record_status(out, status);
    } else {
        add_orphan(pid);
    }
}

void gm_spawn_first_line(const char *text, char *buf, size_t cap)
{
    if (!cap)
        return;
    buf[0] = '\0';
    if (!text)
        return;
    while (*text == ' ' || *text == '\t' || *text == '\r' || *text == '\n')
        text++;
    size_t n = strcspn(text, "\r\n");
    while (n > 0 && (text[n - 1] == ' ' || text[n - 1] == '\t'))
        n--;
    if (n >= cap)
        n = cap - 1;
    memcpy(buf, text, n);
    buf[n] = '\0';
}

void gm_spawn_result_free(gm_spawn_result *r)
{
    if (!r)
        return;
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof *r);
}

static int spawn_error(gm_error *err, const char *prog, int e)
{
    bool has_slash = strchr(prog, '/') != NULL;
    switch (e) {
    case ENOENT:
        return gm_error_set(err, GM_ESPAWN, "%s: not found%s", prog, has_slash ? "" : " on PATH");
    case EACCES:
        return gm_error_set(err, GM_ESPAWN, "%s: permission denied", prog);
    case ENOEXEC:
        return gm_error_set(err, GM_ESPAWN, "%s: not an executable", prog);
    default:
        return gm_error_set(err, GM_ESPAWN, "%s: cannot run: %s", prog, strerror(e));
    }
}

static int exit_error(gm_error *err, const char *prog, const gm_spawn_result *out)
{
    char line[256];
    gm_spawn_first_line(out->err, line, sizeof line);
    if (!line[0])
        gm_spawn_first_line(out->out, line, sizeof line);
    char what[64];
    if (out->signaled) {
        const char *abbrev = sigabbrev_np(out->signal);
        snprintf(what, sizeof what, "was killed by signal %d%s%s", out->signal,
                 abbrev ? " SIG" : "", abbrev ? abbrev : "");
    } else {
        snprintf(what, sizeof what, "exited with status %d", out->exit_code);
    }
    if (line[0])
        return gm_error_set(err, GM_EIO, "%s %s: %s", prog, what, line);
    return gm_error_set(err, GM_EIO, "%s %s", prog, what);
}

/* Pipes for the child's stdout (po) and stderr (pe), then the child itself in its own process
 * group; on return the write ends are closed here. GM_OK with *pid set, or the error (pipes
 * closed). */
static int start_child(const char *const argv[], int po[2], int pe[2], pid_t *pid, gm_error *err)
{
    const char *prog = argv[0];
    if (make_pipe(po) < 0 || make_pipe(pe) < 0) {
        int rc = gm_error_set(err, GM_ESPAWN, "%s: cannot create pipe: %s", prog, strerror(errno));
        close_fd(&po[0]);
        close_fd(&po[1]);
        return rc;
    }

    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, po[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    /* Descriptors other threads opened without O_CLOEXEC must not leak into the child either. */
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
#endif
    sigset_t mask, defaults;
    sigemptyset(&mask);
    sigfillset(&defaults);
    sigdelset(&defaults, SIGKILL);
    sigdelset(&defaults, SIGSTOP);
    /* Own process group so a timeout kills the helper's children too; default dispositions and an
     * empty mask because a daemon may ignore SIGPIPE or block signals in its sampler thread. */
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                        POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setsigmask(&attr, &mask);
    posix_spawnattr_setsigdefault(&attr, &defaults);

    *pid = -1;
    int e = posix_spawnp(pid, prog, &fa, &attr, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close_fd(&po[1]);
    close_fd(&pe[1]);
    if (e != 0) {
        close_fd(&po[0]);
        close_fd(&pe[0]);
        return spawn_error(err, prog, e);
    }
    return GM_OK;
}

/* How reading the child's output ended, when it did not end with both pipes closed. */
typedef struct read_end {
    bool timed_out, overflow, nomem;
} read_end;

/* Reads the two pipes fds (closed on return) into bufs until both close, the deadline (monotonic
 * ms, <0: none) passes, a buffer reaches its limit, or memory runs out (all noted in *end).
 * GM_OK, or the poll error. */
static int read_output(const char *prog, int fds[2], int64_t deadline, gm_buf bufs[2],
                       read_end *end, gm_error *err)
{
    int rc = GM_OK;
    char *chunk = malloc(READ_CHUNK);
    if (!chunk)
        end->nomem = true;
    while (!end->nomem && (fds[0] >= 0 || fds[1] >= 0)) {
        struct pollfd pfd[2];
        int idx[2], n = 0;
        for (int i = 0; i < 2; i++)
            if (fds[i] >= 0) {
                pfd[n] = (struct pollfd){.fd = fds[i], .events = POLLIN};
                idx[n++] = i;
            }
        int wait = -1;
        if (deadline >= 0) {
            int64_t left = deadline - gm_clock_mono_ms();
            if (left <= 0) {
                end->timed_out = true;
                break;
            }
            wait = left > INT32_MAX ? INT32_MAX : (int)left;
        }
        int pr = poll(pfd, (nfds_t)n, wait);
        if (pr < 0) {
            if (errno == EINTR)
                continue;
            rc = gm_error_set(err, GM_EIO, "%s: poll: %s", prog, strerror(errno));
            break;
        }
        for (int k = 0; k < n; k++) {
            if (!pfd[k].revents)
                continue;
            int i = idx[k];
            ssize_t got = read(fds[i], chunk, READ_CHUNK);
            if (got < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (got <= 0) {
                close_fd(&fds[i]);
                continue;
            }
            int a = buf_append(&bufs[i], chunk, (size_t)got);
            if (a < 0)
                end->nomem = true;
            else if (a > 0)
                end->overflow = true;
        }
        if (end->overflow)
            break;
    }
    free(chunk);
    close_fd(&fds[0]);
    close_fd(&fds[1]);
    return rc;
}

/* Hands the captured bytes to out (both "" at least, NULL where a buffer failed). */
static void take_output(gm_buf bufs[2], gm_spawn_result *out)
{
    out->out = gm_buf_take(&bufs[0], &out->out_len);
    out->err = gm_buf_take(&bufs[1], &out->err_len);
}

int gm_spawn_run(const char *const argv[], int timeout_ms, size_t max_output, gm_spawn_result *out,
                 gm_error *err)
{
    if (!out)
        return gm_error_set(err, GM_EINVAL, "gm_spawn_run: no result");
    memset(out, 0, sizeof *out);
    if (!argv || !argv[0] || !argv[0][0])
        return gm_error_set(err, GM_EINVAL, "gm_spawn_run: no program");
    const char *prog = argv[0];
    if (max_output == 0)
        max_output = GM_SPAWN_DEFAULT_MAX_OUTPUT;
    reap_orphans();

    gm_buf bufs[2];
    gm_buf_init(&bufs[0], max_output);
    gm_buf_init(&bufs[1], max_output);
    if (!gm_buf_reserve(&bufs[0], 0) || !gm_buf_reserve(&bufs[1], 0)) {
        gm_buf_free(&bufs[0]);
        gm_buf_free(&bufs[1]);
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    }

    int po[2] = {-1, -1}, pe[2] = {-1, -1};
    pid_t pid = -1;
    int rc = start_child(argv, po, pe, &pid, err);
    if (rc < 0) {
        take_output(bufs, out);
        return rc;
    }

    int64_t deadline = timeout_ms > 0 ? gm_clock_mono_ms() + timeout_ms : -1;
    int fds[2] = {po[0], pe[0]};
    read_end end = {0};
    rc = read_output(prog, fds, deadline, bufs, &end, err);
    take_output(bufs, out);

    if (rc < 0 || end.timed_out || end.overflow || end.nomem) {
        kill_and_reap(pid, out);
        if (rc < 0)
            return rc;
        if (end.nomem)
            return gm_error_set(err, GM_ENOMEM, "out of memory reading from %s", prog);
        if (end.overflow)
            return gm_error_set(err, GM_EIO, "%s printed more than %zu bytes", prog, max_output);
        return gm_error_set(err, GM_ETIMEDOUT, "%s did not answer within %d ms", prog, timeout_ms);
    }

    /* Both pipes closed; the child normally exits at the same moment, but honour the deadline. */
    int status = 0;
    if (!wait_until(pid, deadline, &status)) {
        kill_and_reap(pid, out);
        return gm_error_set(err, GM_ETIMEDOUT, "%s did not answer within %d ms", prog, timeout_ms);
    }
    if (status == -1)
        return gm_error_set(err, GM_EIO, "%s: exit status lost (SIGCHLD ignored?)", prog);
    record_status(out, status);
    if (out->exited && out->exit_code == 0)
        return GM_OK;
    return exit_error(err, prog, out);
}
