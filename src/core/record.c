/* record.c - fork/exec with an exec-error pipe, signal forwarding, a ppoll loop that wakes for
 * the next sample or SIGCHLD, and the samples in between. */
#include "core/record.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"

/* Signals passed on to the command: the ones a person or a job scheduler sends to stop,
 * reload or poke a job. SIGKILL and SIGSTOP cannot be caught; SIGTSTP from a terminal reaches
 * the whole foreground process group anyway. */
static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
#define N_FORWARDED (sizeof forwarded / sizeof *forwarded)

static volatile sig_atomic_t child_pid;

static void on_forward(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    int saved = errno;
    pid_t pid = (pid_t)child_pid;
    /* A signal the terminal generated (Ctrl-C, Ctrl-\, hangup) reached the command too, since it
     * shares our process group: the kernel marks those SI_KERNEL. Passing them on would
     * deliver them twice. */
    if (pid > 0 && !(si && si->si_code == SI_KERNEL))
        kill(pid, sig);
    errno = saved;
}

static void on_child(int sig)
{
    (void)sig; /* only here so that ppoll() wakes up */
}

/* Forks and execs the command with default signal handling. Returns the child's pid, or -1 when
 * it could not be started (*exec_errno says why). */
static pid_t start_child(const gm_record_run_options *o, const sigset_t *orig, int *exec_errno)
{
    int fds[2];
    *exec_errno = 0;
    if (pipe2(fds, O_CLOEXEC) < 0) {
        *exec_errno = errno;
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        *exec_errno = errno;
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        /* Default dispositions before unblocking, so that a signal arriving before exec acts on
         * the child itself instead of our forwarding handler. */
        for (size_t i = 0; i < N_FORWARDED; i++)
            signal(forwarded[i], SIG_DFL);
        signal(SIGCHLD, SIG_DFL);
        if (o->child_sigxfsz)
            sigaction(SIGXFSZ, o->child_sigxfsz, NULL);
        sigprocmask(SIG_SETMASK, orig, NULL);
        close(fds[0]);
        execvp(o->command[0], o->command);
        int e = errno;
        ssize_t wr = write(fds[1], &e, sizeof e);
        (void)wr;
        _exit(127);
    }
    child_pid = pid;
    close(fds[1]);
    /* The pipe closes on a successful exec (O_CLOEXEC) with nothing written. */
    int e = 0;
    ssize_t r;
    do
        r = read(fds[0], &e, sizeof e);
    while (r < 0 && errno == EINTR);
    close(fds[0]);
    if (r == (ssize_t)sizeof e) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        child_pid = 0;
        *exec_errno = e;
        return -1;
    }
    return pid;
}

/* Samples once into the recorder and (with sync) brings its store up to date when due. */
static void sample_once(const gm_record_run_options *o, bool sync, bool *warned)
{
    gm_error err = {0};
    if (o->collector) {
        if (gm_collector_sample(o->collector, o->snap, &err) < 0 ||
            gm_recorder_add(o->rec, o->snap, &err) < 0) {
            if (!*warned && o->warn)
                o->warn(o->arg, err.msg);
            *warned = true;
        }
    }
    if (sync)
        gm_recorder_sync(o->rec, gm_clock_mono_ms(), false, NULL);
    if (o->tick)
        o->tick(o->arg, gm_recorder_session(o->rec));
}

int gm_record_command(const gm_record_run_options *o, gm_record_outcome *out, gm_error *err)
{
    memset(out, 0, sizeof *out);
    gm_session *s = gm_recorder_session(o->rec);

    /* Forwarding handlers go in before the fork with the signals blocked, so one that arrives
     * while the child starts is delivered (and forwarded) as soon as its pid is known. */
    sigset_t block, orig, waitmask;
    sigemptyset(&block);
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaddset(&block, forwarded[i]);
    sigaddset(&block, SIGCHLD);
    sigprocmask(SIG_BLOCK, &block, &orig);
    struct sigaction fwd = {.sa_sigaction = on_forward, .sa_flags = SA_SIGINFO};
    struct sigaction chld = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP};
    struct sigaction old[N_FORWARDED], old_chld;
    sigemptyset(&fwd.sa_mask);
    sigemptyset(&chld.sa_mask);
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaction(forwarded[i], &fwd, &old[i]);
    sigaction(SIGCHLD, &chld, &old_chld);

    int rc = GM_OK;
    bool warned = false;
    sample_once(o, false, &warned); /* the state as the command starts: stored once it runs */
    pid_t pid = start_child(o, &orig, &out->exec_errno);
    if (pid < 0) {
        rc = gm_error_set(err, GM_ESPAWN, "cannot run \"%s\": %s", o->command[0],
                          strerror(out->exec_errno));
        out->exit_code = 127;
        goto restore;
    }
    /* Unblock the forwarded signals; SIGCHLD stays blocked outside ppoll so that an exit
     * between the waitpid check and the sleep still wakes the sleep. */
    sigset_t fwd_only;
    sigemptyset(&fwd_only);
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaddset(&fwd_only, forwarded[i]);
    sigprocmask(SIG_UNBLOCK, &fwd_only, NULL);
    sigprocmask(SIG_SETMASK, NULL, &waitmask);
    sigdelset(&waitmask, SIGCHLD);
    gm_recorder_sync(o->rec, gm_clock_mono_ms(), false, NULL); /* the row, with sample 0 */

    int status = 0;
    double next = gm_clock_mono_s() + o->interval_s;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD))
            break;
        double now = gm_clock_mono_s();
        if (now >= next) {
            sample_once(o, true, &warned);
            next += o->interval_s;
            /* Sampling slower than the interval: skip the missed ticks rather than burst. */
            if (next <= gm_clock_mono_s())
                next = gm_clock_mono_s() + o->interval_s;
            continue;
        }
        double left = next - now;
        struct timespec ts = {(time_t)left, (long)((left - floor(left)) * 1e9)};
        ppoll(NULL, 0, &ts, &waitmask);
    }
    child_pid = 0;
    sample_once(o, false, &warned); /* the state as the command ended (the caller stores it) */
    gm_session_finish(s);
    if (WIFEXITED(status)) {
        out->exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        out->signal = WTERMSIG(status);
        out->exit_code = 128 + out->signal;
    } else {
        out->exit_code = 1;
    }
    gm_session_set_exit(s, out->exit_code, out->signal);

restore:
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaction(forwarded[i], &old[i], NULL);
    sigaction(SIGCHLD, &old_chld, NULL);
    sigprocmask(SIG_SETMASK, &orig, NULL);
    return rc;
}
