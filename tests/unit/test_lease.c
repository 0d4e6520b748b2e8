/* test_lease.c - GPU leases for real: forked processes acquiring at once get disjoint GPUs, a
 * killed holder's GPUs come free, exec'd children inherit nothing, files are never followed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/lease.h"

static gm_snapshot *snap;
static char dir[64];

static void rm_rf(const char *path)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", path);
}

static int setup(void **state)
{
    snap = gm_snapshot_new();
    if (!snap)
        return -1;
    snap->gpu_count = 8;
    for (unsigned i = 0; i < 8; i++) {
        snap->gpus[i].index = i;
        snprintf(snap->gpus[i].uuid, sizeof snap->gpus[i].uuid, "GPU-1ea5e000-0000-4000-8000-%012u",
                 i);
    }
    snprintf(dir, sizeof dir, "/tmp/gm-test-lease-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    gm_snapshot_free(snap);
    rm_rf(dir);
    return 0;
}

static const unsigned all8[] = {0, 1, 2, 3, 4, 5, 6, 7};

static void read_file(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

static void test_default_dir(void **state)
{
    char buf[256], want[128];
    setenv(GM_LEASE_DIR_ENV, "/srv/shared/leases", 1);
    assert_int_equal(gm_lease_default_dir(buf, sizeof buf, NULL), GM_OK);
    assert_string_equal(buf, "/srv/shared/leases");
    setenv(GM_LEASE_DIR_ENV, "", 1); /* empty counts as unset */
    setenv("XDG_RUNTIME_DIR", "/run/user/4321", 1);
    assert_int_equal(gm_lease_default_dir(buf, sizeof buf, NULL), GM_OK);
    assert_string_equal(buf, "/run/user/4321/gpumon/leases");
    setenv("XDG_RUNTIME_DIR", "relative/dir", 1); /* not absolute: ignored, as the spec says */
    assert_int_equal(gm_lease_default_dir(buf, sizeof buf, NULL), GM_OK);
    snprintf(want, sizeof want, "/tmp/gpumon-%u/leases", (unsigned)getuid());
    assert_string_equal(buf, want);
    unsetenv("XDG_RUNTIME_DIR");
    unsetenv(GM_LEASE_DIR_ENV);
    assert_int_equal(gm_lease_default_dir(buf, sizeof buf, NULL), GM_OK);
    assert_string_equal(buf, want);
    gm_error err = {0};
    assert_int_equal(gm_lease_default_dir(buf, 8, &err), GM_EINVAL);
}

static void test_acquire_list_release(void **state)
{
    gm_lease_holder h[8];
    char sub[128];
    snprintf(sub, sizeof sub, "%s/not/yet", dir);
    /* A directory nobody made yet: nothing is held, and listing creates nothing. */
    assert_int_equal(gm_lease_list(sub, snap, h, NULL), GM_OK);
    for (int i = 0; i < 8; i++)
        assert_false(h[i].held);
    assert_int_not_equal(access(sub, F_OK), 0);

    const unsigned cand[] = {5, 2, 7};
    gm_lease *l = NULL;
    gm_error err = {0};
    assert_int_equal(gm_lease_acquire(sub, snap, cand, 3, 2, &l, &err), GM_OK);
    struct stat st;
    assert_int_equal(stat(sub, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(gm_lease_count(l), 2);
    unsigned idx[8];
    assert_int_equal(gm_lease_indices(l, idx, 8), 2);
    assert_int_equal(idx[0], 2); /* ascending */
    assert_int_equal(idx[1], 5);
    assert_string_equal(gm_lease_uuid(l, 1), "GPU-1ea5e000-0000-4000-8000-000000000005");
    assert_null(gm_lease_uuid(l, 2));

    /* The lock file records our pid. */
    char path[256], content[64], want[32];
    snprintf(path, sizeof path, "%s/GPU-1ea5e000-0000-4000-8000-000000000005", sub);
    read_file(path, content, sizeof content);
    snprintf(want, sizeof want, "%ld\n", (long)getpid());
    assert_string_equal(content, want);

    assert_int_equal(gm_lease_list(sub, snap, h, NULL), GM_OK);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(h[i].held, i == 2 || i == 5);
        assert_int_equal(h[i].pid, (i == 2 || i == 5) ? getpid() : 0);
    }

    /* This process cannot lease its own GPUs twice. */
    gm_lease *again = NULL;
    assert_int_equal(gm_lease_acquire(sub, snap, cand, 3, 2, &again, &err), GM_EBUSY);
    assert_null(again);

    gm_lease_release(l);
    read_file(path, content, sizeof content);
    assert_string_equal(content, ""); /* cleared, but the file stays */
    assert_int_equal(gm_lease_list(sub, snap, h, NULL), GM_OK);
    for (int i = 0; i < 8; i++)
        assert_false(h[i].held);
    gm_lease_release(NULL);
}

static void test_all_or_nothing(void **state)
{
    gm_lease *a = NULL, *b = NULL;
    gm_error err = {0};
    const unsigned first[] = {0, 1};
    assert_int_equal(gm_lease_acquire(dir, snap, first, 2, 2, &a, &err), GM_OK);
    const unsigned cand[] = {0, 1, 2};
    assert_int_equal(gm_lease_acquire(dir, snap, cand, 3, 2, &b, &err), GM_EBUSY);
    assert_null(b);
    char want[160];
    snprintf(want, sizeof want,
             "only 1 of 2 GPUs could be leased; leased by others: GPU 0 (pid %ld), GPU 1 (pid "
             "%ld)",
             (long)getpid(), (long)getpid());
    assert_string_equal(err.msg, want);
    /* GPU 2 was taken for a moment and given back. */
    gm_lease_holder h[8];
    assert_int_equal(gm_lease_list(dir, snap, h, NULL), GM_OK);
    assert_false(h[2].held);
    gm_lease_release(a);
}

static void test_bad_arguments(void **state)
{
    gm_lease *l = NULL;
    gm_error err = {0};
    const unsigned cand[] = {1, 1, 9};
    assert_int_equal(gm_lease_acquire(dir, snap, cand, 2, 0, &l, &err), GM_EINVAL);
    assert_int_equal(gm_lease_acquire(dir, snap, cand, 1, 2, &l, &err), GM_EINVAL);
    assert_int_equal(gm_lease_acquire(dir, snap, cand, 2, 2, &l, &err), GM_EINVAL); /* 1 twice */
    assert_int_equal(gm_lease_acquire(dir, snap, cand, 3, 1, &l, &err), GM_ENOENT);
    assert_string_equal(err.msg, "no GPU 9 to lease");
    assert_int_equal(gm_lease_acquire(NULL, snap, cand, 1, 1, &l, &err), GM_EINVAL);
    assert_int_equal(gm_lease_acquire("", snap, cand, 1, 1, &l, &err), GM_EINVAL);
    assert_null(l);
    char file[128];
    snprintf(file, sizeof file, "%s/plainfile", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(gm_lease_acquire(file, snap, cand, 1, 1, &l, &err), GM_EIO);
    assert_int_equal(gm_lease_list(NULL, snap, NULL, &err), GM_EINVAL);
}

static void test_symlink_not_followed(void **state)
{
    char victim[128], link[160], content[64];
    snprintf(victim, sizeof victim, "%s/victim", dir);
    FILE *f = fopen(victim, "w");
    assert_non_null(f);
    fputs("precious\n", f);
    fclose(f);
    snprintf(link, sizeof link, "%s/GPU-1ea5e000-0000-4000-8000-000000000004", dir);
    assert_int_equal(symlink(victim, link), 0);
    const unsigned cand[] = {4};
    gm_lease *l = NULL;
    gm_error err = {0};
    assert_int_equal(gm_lease_acquire(dir, snap, cand, 1, 1, &l, &err), GM_EIO);
    assert_null(l);
    read_file(victim, content, sizeof content);
    assert_string_equal(content, "precious\n");
    unlink(link);
}

static void test_odd_uuids(void **state)
{
    gm_snapshot *s = gm_snapshot_new();
    s->gpu_count = 2;
    s->gpus[0].index = 3; /* no UUID */
    s->gpus[1].index = 4;
    snprintf(s->gpus[1].uuid, sizeof s->gpus[1].uuid, "../escape/x");
    const unsigned cand[] = {3, 4};
    gm_lease *l = NULL;
    assert_int_equal(gm_lease_acquire(dir, s, cand, 2, 2, &l, NULL), GM_OK);
    char path[160];
    snprintf(path, sizeof path, "%s/index-3", dir);
    assert_int_equal(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/_._escape_x", dir);
    assert_int_equal(access(path, F_OK), 0);
    assert_string_equal(gm_lease_uuid(l, 0), "");
    gm_lease_release(l);
    gm_snapshot_free(s);
}

/* ---- several processes ------------------------------------------------------------------- */

typedef struct child {
    pid_t pid;
    int result_fd; /* the child writes "rc a b\n" here */
    int hold_fd;   /* the child holds its lease until this closes */
} child;

/* Forks a child that waits for `go` to close, leases `want` of all8, reports, and holds until
 * its hold pipe closes (or exits at once with keep = false, without releasing). */
/* Hold pipes of the children still running: a later child must not keep an earlier child's
 * pipe open, or closing it would never reach that child. */
static int parent_holds[16];
static size_t n_parent_holds;

static child spawn_acquirer(int go_fd, int go_other, size_t want, bool keep)
{
    int res[2], hold[2];
    if (pipe(res) < 0 || pipe(hold) < 0)
        fail_msg("pipe: %s", strerror(errno));
    child c = {.pid = fork()};
    if (c.pid < 0)
        fail_msg("fork: %s", strerror(errno));
    if (c.pid == 0) {
        close(res[0]);
        close(hold[1]);
        close(go_other);
        for (size_t i = 0; i < n_parent_holds; i++)
            close(parent_holds[i]);
        char b;
        while (read(go_fd, &b, 1) > 0) {
        }
        gm_lease *l = NULL;
        int rc = gm_lease_acquire(dir, snap, all8, 8, want, &l, NULL);
        char msg[64];
        unsigned idx[8] = {0};
        size_t n = gm_lease_indices(l, idx, 8);
        int len = snprintf(msg, sizeof msg, "%d %zu %u %u\n", rc, n, idx[0], idx[1]);
        if (write(res[1], msg, (size_t)len) != len)
            _exit(3);
        close(res[1]);
        if (keep)
            while (read(hold[0], &b, 1) > 0) {
            }
        _exit(0); /* no release: the kernel drops the locks */
    }
    close(res[1]);
    close(hold[0]);
    c.result_fd = res[0];
    c.hold_fd = hold[1];
    if (n_parent_holds < 16)
        parent_holds[n_parent_holds++] = hold[1];
    return c;
}

static void read_result(child *c, int *rc, unsigned *n, unsigned *a, unsigned *b)
{
    char buf[64];
    ssize_t len = 0, r;
    while ((r = read(c->result_fd, buf + len, sizeof buf - 1 - (size_t)len)) > 0)
        len += r;
    buf[len] = '\0';
    assert_int_equal(sscanf(buf, "%d %u %u %u", rc, n, a, b), 4);
    close(c->result_fd);
}

static void reap(child *c)
{
    int status;
    close(c->hold_fd);
    for (size_t i = 0; i < n_parent_holds; i++)
        if (parent_holds[i] == c->hold_fd)
            parent_holds[i] = parent_holds[--n_parent_holds];
    assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
}

static void test_concurrent_disjoint_and_kill(void **state)
{
    enum { N = 5 };
    int go[2];
    assert_int_equal(pipe(go), 0);
    child kids[N];
    for (int i = 0; i < N; i++)
        kids[i] = spawn_acquirer(go[0], go[1], 2, true);
    close(go[0]);
    close(go[1]); /* all start together */

    int owner[8];
    for (int g = 0; g < 8; g++)
        owner[g] = -1;
    int ok = 0, busy = 0;
    for (int i = 0; i < N; i++) {
        int rc;
        unsigned n, a, b;
        read_result(&kids[i], &rc, &n, &a, &b);
        if (rc == GM_EBUSY) {
            busy++;
            assert_int_equal(n, 0);
            continue;
        }
        assert_int_equal(rc, GM_OK);
        assert_int_equal(n, 2);
        ok++;
        /* Disjoint: no GPU reported by two children. */
        assert_int_equal(owner[a], -1);
        assert_int_equal(owner[b], -1);
        owner[a] = owner[b] = i;
    }
    /* Acquisition is atomic across processes: 8 GPUs serve exactly 4 pairs, never fewer. */
    assert_int_equal(ok, 4);
    assert_int_equal(busy, 1);

    gm_lease_holder h[8];
    assert_int_equal(gm_lease_list(dir, snap, h, NULL), GM_OK);
    for (int g = 0; g < 8; g++) {
        assert_true(h[g].held);
        assert_int_equal(h[g].pid, kids[owner[g]].pid);
    }

    /* kill -9 the holder of GPU 3: its two GPUs come free, nobody else's. */
    int victim = owner[3];
    assert_int_equal(kill(kids[victim].pid, SIGKILL), 0);
    reap(&kids[victim]);
    assert_int_equal(gm_lease_list(dir, snap, h, NULL), GM_OK);
    int freed = 0;
    for (int g = 0; g < 8; g++) {
        assert_int_equal(h[g].held, owner[g] != victim);
        freed += !h[g].held;
    }
    assert_int_equal(freed, 2);
    gm_lease *mine = NULL;
    assert_int_equal(gm_lease_acquire(dir, snap, all8, 8, 2, &mine, NULL), GM_OK);
    unsigned idx[2];
    gm_lease_indices(mine, idx, 2);
    assert_int_equal(owner[idx[0]], victim);
    assert_int_equal(owner[idx[1]], victim);
    gm_lease_release(mine);

    for (int i = 0; i < N; i++)
        if (i != victim)
            reap(&kids[i]);
    assert_int_equal(gm_lease_list(dir, snap, h, NULL), GM_OK);
    for (int g = 0; g < 8; g++)
        assert_false(h[g].held);
}

static void test_exit_without_release_frees(void **state)
{
    int go[2];
    assert_int_equal(pipe(go), 0);
    child c = spawn_acquirer(go[0], go[1], 8, false);
    close(go[0]);
    close(go[1]);
    int rc;
    unsigned n, a, b;
    read_result(&c, &rc, &n, &a, &b);
    assert_int_equal(rc, GM_OK);
    assert_int_equal(n, 8);
    reap(&c);
    gm_lease *l = NULL;
    assert_int_equal(gm_lease_acquire(dir, snap, all8, 8, 8, &l, NULL), GM_OK);
    gm_lease_release(l);
}

/* True when process pid has a descriptor open on a file under dir. */
static bool has_fd_under(pid_t pid, const char *d)
{
    char fddir[64], path[128], target[PATH_MAX];
    snprintf(fddir, sizeof fddir, "/proc/%ld/fd", (long)pid);
    for (int fd = 0; fd < 1024; fd++) {
        snprintf(path, sizeof path, "%s/%d", fddir, fd);
        ssize_t n = readlink(path, target, sizeof target - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        if (strncmp(target, d, strlen(d)) == 0)
            return true;
    }
    return false;
}

static void test_exec_child_inherits_nothing(void **state)
{
    gm_lease *l = NULL;
    const unsigned cand[] = {6};
    assert_int_equal(gm_lease_acquire(dir, snap, cand, 1, 1, &l, NULL), GM_OK);
    assert_true(has_fd_under(getpid(), dir));
    /* The job `gpumon run` starts: fork + exec. */
    int ready[2];
    assert_int_equal(pipe2(ready, O_CLOEXEC), 0); /* closes at exec: our "exec happened" */
    pid_t job = fork();
    check_ge(job, 0);
    if (job == 0) {
        close(ready[0]);
        execl("/bin/sleep", "sleep", "30", (char *)NULL);
        _exit(127);
    }
    close(ready[1]);
    char b;
    while (read(ready[0], &b, 1) > 0) {
    }
    close(ready[0]);
    assert_false(has_fd_under(job, dir));

    /* The lease dies with us (here: our release), not with the job. */
    gm_lease_release(l);
    gm_lease_holder h[8];
    assert_int_equal(gm_lease_list(dir, snap, h, NULL), GM_OK);
    assert_false(h[6].held);
    kill(job, SIGKILL);
    waitpid(job, NULL, 0);
}

static void test_forked_child_release_keeps_parent_lease(void **state)
{
    gm_lease *l = NULL;
    const unsigned cand[] = {7};
    assert_int_equal(gm_lease_acquire(dir, snap, cand, 1, 1, &l, NULL), GM_OK);
    pid_t pid = fork();
    check_ge(pid, 0);
    if (pid == 0) {
        gm_lease_release(l); /* shares our open files: must not unlock them */
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    gm_lease_holder h[8];
    assert_int_equal(gm_lease_list(dir, snap, h, NULL), GM_OK);
    assert_true(h[7].held);
    assert_int_equal(h[7].pid, getpid());
    gm_lease_release(l);
    assert_int_equal(gm_lease_list(dir, snap, h, NULL), GM_OK);
    assert_false(h[7].held);
}

/* MIG devices are leased by their own UUIDs, numbered across GPUs; a lease on a MIG device and
 * one on its whole GPU exclude each other; another GPU's MIG devices stay free. */
static void test_mig_leases(void **state)
{
    for (unsigned i = 6; i < 8; i++) {
        gm_gpu *g = &snap->gpus[i];
        g->mig_count = 2;
        for (unsigned k = 0; k < 2; k++)
            snprintf(g->mig[k].uuid, sizeof g->mig[k].uuid, "MIG-1ea5e000-0000-5000-8000-%06u%06u",
                     i, k);
    }
    assert_int_equal(gm_lease_mig_count(snap), 4);
    const gm_gpu *g = NULL;
    assert_ptr_equal(gm_lease_mig_at(snap, 3, &g), &snap->gpus[7].mig[1]);
    assert_ptr_equal(g, &snap->gpus[7]);
    assert_null(gm_lease_mig_at(snap, 4, NULL));

    gm_error err = {0};
    gm_lease *mig = NULL, *whole = NULL;
    const unsigned first[] = {0};
    assert_int_equal(gm_lease_acquire_mig(dir, snap, first, 1, 1, &mig, &err), GM_OK);
    assert_string_equal(gm_lease_uuid(mig, 0), "MIG-1ea5e000-0000-5000-8000-000006000000");
    char path[256];
    snprintf(path, sizeof path, "%s/MIG-1ea5e000-0000-5000-8000-000006000000", dir);
    assert_int_equal(access(path, F_OK), 0);

    /* GPU 6 cannot be leased whole now; GPU 7 can. Listing shows 6 held, indirectly. */
    const unsigned six[] = {6}, seven[] = {7};
    assert_int_equal(gm_lease_acquire(dir, snap, six, 1, 1, &whole, &err), GM_EBUSY);
    assert_non_null(strstr(err.msg, "GPU 6 through a MIG device"));
    gm_lease_holder h[GM_MAX_GPUS];
    assert_int_equal(gm_lease_list(dir, snap, h, &err), GM_OK);
    assert_true(h[6].held && h[6].indirect);
    assert_int_equal(h[6].pid, getpid());
    assert_false(h[7].held);

    /* GPU 7 leased whole: its MIG devices are taken (indirect); GPU 6's second one is not. */
    assert_int_equal(gm_lease_acquire(dir, snap, seven, 1, 1, &whole, &err), GM_OK);
    assert_int_equal(gm_lease_list_mig(dir, snap, h, &err), GM_OK);
    assert_true(h[0].held && !h[0].indirect);
    assert_false(h[1].held);
    assert_true(h[2].held && h[2].indirect);
    assert_true(h[3].held && h[3].indirect);
    gm_lease *other = NULL;
    const unsigned rest[] = {2, 3, 1};
    assert_int_equal(gm_lease_acquire_mig(dir, snap, rest, 3, 2, &other, &err), GM_EBUSY);
    assert_non_null(strstr(err.msg, "through its GPU"));
    assert_int_equal(gm_lease_acquire_mig(dir, snap, rest, 3, 1, &other, &err), GM_OK);
    unsigned idx[4];
    assert_int_equal(gm_lease_indices(other, idx, 4), 1);
    assert_int_equal(idx[0], 1);
    gm_lease_release(other);
    gm_lease_release(whole);
    gm_lease_release(mig);
    assert_int_equal(gm_lease_acquire(dir, snap, six, 1, 1, &whole, &err), GM_OK);
    gm_lease_release(whole);
    snap->gpus[6].mig_count = snap->gpus[7].mig_count = 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_dir),
        cmocka_unit_test(test_acquire_list_release),
        cmocka_unit_test(test_all_or_nothing),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_symlink_not_followed),
        cmocka_unit_test(test_odd_uuids),
        cmocka_unit_test(test_concurrent_disjoint_and_kill),
        cmocka_unit_test(test_exit_without_release_frees),
        cmocka_unit_test(test_exec_child_inherits_nothing),
        cmocka_unit_test(test_forked_child_release_keeps_parent_lease),
        cmocka_unit_test(test_mig_leases),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
