/* store.c - the SQLite database behind gpumon history: versioned schema, sessions written sample
 * by sample, interrupted-session detection, and reads back (documents, and samples for the
 * timeline writer). */
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/json.h"
#include "collect/host.h"
#include "core/bench_report.h"
#include "base/error.h"

/* How long a writer waits for another process's transaction before giving up. Samples are
 * small, so contention is brief; five seconds covers a slow disk without hanging forever. */
#define BUSY_TIMEOUT_MS 5000

/* Schema steps, applied in order inside one transaction; the database's PRAGMA user_version
 * says how many have been applied. Never edit a released step: append a new one. */
typedef struct migration {
    int version;
    const char *description;
    const char *sql;
} migration;

static const migration migrations[] = {
    {1, "sessions and their samples",
     "CREATE TABLE sessions ("
     " id TEXT PRIMARY KEY,"
     " kind TEXT NOT NULL," /* record, run, session, snapshot, ... */
     " label TEXT,"
     " command TEXT," /* JSON array of argv */
     " host TEXT,"
     " owner_pid INTEGER,"           /* the process writing the samples */
     " owner_start INTEGER,"         /* its start time (clock ticks since boot), against reuse */
     " status TEXT NOT NULL,"        /* running, finished, incomplete */
     " started_ms INTEGER NOT NULL," /* epoch ms */
     " ended_ms INTEGER,"
     " duration_s REAL,"
     " last_t REAL," /* offset of the newest sample, seconds */
     " interval_s REAL,"
     " gpus TEXT," /* JSON [{index, name, uuid}]; NULL: a plain document */
     " sample_count INTEGER NOT NULL DEFAULT 0,"
     " exit_code INTEGER,"
     " doc TEXT" /* final JSON document, without the timeline */
     ");"
     "CREATE INDEX sessions_started ON sessions(started_ms);"
     "CREATE TABLE samples ("
     " session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
     " seq INTEGER NOT NULL,"
     " t REAL NOT NULL,"
     " gpu INTEGER NOT NULL,"
     " utilization REAL,"
     " memory_used_mb REAL,"
     " memory_usage_percent REAL,"
     " temperature_c REAL,"
     " power_draw_w REAL,"
     " energy_counter_j REAL,"
     " PRIMARY KEY (session_id, seq, gpu)"
     ") WITHOUT ROWID;"},
    /* Fields a session carries from its start (provider, hostname, driver_version, ...):
     * written at begin, so a session whose process died is rebuilt with them. */
    {2, "session metadata known at begin", "ALTER TABLE sessions ADD COLUMN meta TEXT;"},
    /* gpumon bench: the benchmark is a sessions row of kind "bench" (its document in doc, its
     * url/model/api in meta), and each point's headline figures a row here, for listing,
     * CSV export and SQL. */
    {3, "benchmark points",
     "CREATE TABLE bench_points ("
     " bench_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
     " seq INTEGER NOT NULL,"
     " load TEXT NOT NULL," /* "concurrency 64", "rate 10/s", "rate inf" */
     " concurrency INTEGER,"
     " request_rate REAL," /* NULL for a closed loop, and for inf */
     " requests INTEGER, completed INTEGER, failed INTEGER,"
     " duration_s REAL, requests_per_s REAL, output_tokens_per_s REAL, total_tokens_per_s REAL,"
     " output_tokens INTEGER, input_tokens INTEGER,"
     " ttft_p50_ms REAL, ttft_p99_ms REAL, tpot_p50_ms REAL, tpot_p99_ms REAL,"
     " itl_p50_ms REAL, itl_p99_ms REAL, e2e_p50_ms REAL, e2e_p99_ms REAL,"
     " goodput_requests_per_s REAL, energy_j REAL, output_tokens_per_joule REAL,"
     " joules_per_request REAL, valid INTEGER,"
     " PRIMARY KEY (bench_id, seq)"
     ") WITHOUT ROWID;"},
};

#define MIGRATION_COUNT (sizeof migrations / sizeof *migrations)

struct gm_store {
    sqlite3 *db;
    char path[PATH_MAX];
    char host[GM_HOSTNAME_LEN];
    int schema; /* PRAGMA user_version: what the queries may use */
    sqlite3_stmt *ins_sample;
    sqlite3_stmt *upd_count;
    /* gm_store_guard_space: on; the directory of the database and its filesystem's mount
     * point; the held reserve (an unnamed file, -1 when none). */
    bool guard;
    char dir[PATH_MAX];
    char fs[PATH_MAX];
    int reserve_fd;
};

static int db_error(gm_store *st, gm_error *err, const char *what)
{
    return gm_error_set(err, GM_EIO, "database %s: %s: %s", st->path, what, sqlite3_errmsg(st->db));
}

static int exec_sql(gm_store *st, const char *sql, gm_error *err)
{
    char *msg = NULL;
    if (sqlite3_exec(st->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        int rc =
            gm_error_set(err, GM_EIO, "database %s: %.40s: %s", st->path, sql, msg ? msg : "error");
        sqlite3_free(msg);
        return rc;
    }
    return GM_OK;
}

int gm_store_default_path(char *buf, size_t len, gm_error *err)
{
    const char *env = getenv("GPU_MONITOR_DB");
    if (env && *env) {
        snprintf(buf, len, "%s", env);
        return GM_OK;
    }
    /* XDG Base Directory: state that should persist but is not worth backing up. */
    const char *xdg = getenv("XDG_STATE_HOME");
    if (xdg && *xdg == '/') {
        snprintf(buf, len, "%s/gpumon/gpumon.db", xdg);
        return GM_OK;
    }
    const char *home = getenv("HOME");
    if (home && *home) {
        snprintf(buf, len, "%s/.local/state/gpumon/gpumon.db", home);
        return GM_OK;
    }
    return gm_error_set(err, GM_ENOENT,
                        "no database path: set GPU_MONITOR_DB, XDG_STATE_HOME or HOME, or pass "
                        "--db");
}

/* mkdir -p of the directory part of path. */
static int make_parents(const char *path, gm_error *err)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return GM_OK;
    *slash = '\0';
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
            return gm_error_set(err, GM_EIO, "cannot create directory %s: %s", dir,
                                strerror(errno));
        *p = '/';
    }
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return gm_error_set(err, GM_EIO, "cannot create directory %s: %s", dir, strerror(errno));
    return GM_OK;
}

static int user_version(gm_store *st)
{
    sqlite3_stmt *q;
    int v = -1;
    if (sqlite3_prepare_v2(st->db, "PRAGMA user_version", -1, &q, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_step(q) == SQLITE_ROW)
        v = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    return v;
}

static int migrate(gm_store *st, gm_error *err)
{
    /* IMMEDIATE takes the write lock first, so two processes opening a new database at once
     * cannot both apply step 1: the second waits, then sees the new version. */
    int rc = exec_sql(st, "BEGIN IMMEDIATE", err);
    if (rc < 0)
        return rc;
    int have = user_version(st);
    if (have < 0) {
        rc = db_error(st, err, "reading the schema version");
        goto rollback;
    }
    if (have > migrations[MIGRATION_COUNT - 1].version) {
        rc = gm_error_set(err, GM_ESTATE,
                          "database %s has schema version %d; this gpumon knows up to %d "
                          "(use a newer gpumon)",
                          st->path, have, migrations[MIGRATION_COUNT - 1].version);
        goto rollback;
    }
    for (size_t i = 0; i < MIGRATION_COUNT; i++) {
        if (migrations[i].version <= have)
            continue;
        if ((rc = exec_sql(st, migrations[i].sql, err)) < 0)
            goto rollback;
        char pragma[64];
        snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", migrations[i].version);
        if ((rc = exec_sql(st, pragma, err)) < 0)
            goto rollback;
    }
    return exec_sql(st, "COMMIT", err);
rollback:
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* Switches the database to WAL. Two processes creating a new database at once race for this
 * change, and SQLite answers the loser SQLITE_BUSY at once, without its busy handler, so the
 * change is retried here for as long as the busy timeout. */
static int set_wal(gm_store *st, gm_error *err)
{
    for (int waited_ms = 0;; waited_ms += 10) {
        sqlite3_stmt *q;
        if (sqlite3_prepare_v2(st->db, "PRAGMA journal_mode=WAL", -1, &q, NULL) != SQLITE_OK)
            return db_error(st, err, "switching to WAL");
        int step = sqlite3_step(q);
        sqlite3_finalize(q);
        if (step == SQLITE_ROW)
            return GM_OK; /* the mode now in effect; a file system without WAL keeps its own */
        if ((step != SQLITE_BUSY && step != SQLITE_LOCKED) || waited_ms >= BUSY_TIMEOUT_MS)
            return db_error(st, err, "switching to WAL");
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* A store for path with nothing open yet. */
static gm_store *store_new(const char *path)
{
    gm_store *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    snprintf(st->path, sizeof st->path, "%s", path);
    st->reserve_fd = -1;
    if (gethostname(st->host, sizeof st->host) < 0)
        st->host[0] = '\0';
    st->host[sizeof st->host - 1] = '\0';
    return st;
}

static int prepare_statements(gm_store *st, gm_error *err)
{
    if (sqlite3_prepare_v2(st->db,
                           "INSERT INTO samples (session_id, seq, t, gpu, utilization, "
                           "memory_used_mb, memory_usage_percent, temperature_c, power_draw_w, "
                           "energy_counter_j) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           -1, &st->ins_sample, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(st->db, "UPDATE sessions SET sample_count = ?, last_t = ? WHERE id = ?",
                           -1, &st->upd_count, NULL) != SQLITE_OK)
        return db_error(st, err, "preparing statements");
    return GM_OK;
}

static const char *kind_of(mode_t m)
{
    return S_ISDIR(m)    ? "a directory"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
                         : "not a regular file";
}

/* A database is a regular file, or a path where one is to be created. Anything else is refused
 * before SQLite opens it: a FIFO would block the open forever, and a device (/dev/null) would
 * get a journal created beside it, in /dev. */
static int check_db_path(const char *path, gm_error *err)
{
    struct stat sb;
    if (stat(path, &sb) == 0) {
        if (S_ISREG(sb.st_mode))
            return GM_OK;
        return gm_error_set(err, GM_EINVAL,
                            "database %s is %s, not a regular file; give the path of a "
                            "database file",
                            path, kind_of(sb.st_mode));
    }
    if (errno != ENOENT)
        return gm_error_set(err, GM_EIO, "cannot open database %s: %s", path, strerror(errno));
    if (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode))
        return gm_error_set(err, GM_EINVAL,
                            "database %s is a symbolic link to nothing; a database is not "
                            "created through one",
                            path);
    return GM_OK;
}

int gm_store_open(const char *path, gm_store **out, gm_error *err)
{
    *out = NULL;
    if (!path || !*path)
        return gm_error_set(err, GM_EINVAL, "database path is empty");
    int crc = check_db_path(path, err);
    if (crc < 0)
        return crc;
    gm_store *st = store_new(path);
    if (!st)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    int rc = make_parents(path, err);
    if (rc < 0)
        goto fail;
    if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        rc = st->db ? db_error(st, err, "cannot open")
                    : gm_error_set(err, GM_ENOMEM, "out of memory opening %s", path);
        goto fail;
    }
    sqlite3_busy_timeout(st->db, BUSY_TIMEOUT_MS);
    /* WAL: readers (gpumon history, the daemon) never block the writer of a live session.
     * synchronous=NORMAL: a commit survives the process being killed; only a power loss may
     * lose the newest samples, which is acceptable for telemetry. */
    if ((rc = set_wal(st, err)) < 0 || (rc = exec_sql(st, "PRAGMA synchronous=NORMAL", err)) < 0 ||
        (rc = exec_sql(st, "PRAGMA foreign_keys=ON", err)) < 0)
        goto fail;
    if ((rc = migrate(st, err)) < 0 || (rc = prepare_statements(st, err)) < 0)
        goto fail;
    st->schema = user_version(st);
    *out = st;
    return GM_OK;
fail:
    gm_store_close(st);
    return rc;
}

/* Whether path+suffix exists next to the database (its -wal or -shm file). */
static bool sibling_exists(const char *path, const char *suffix)
{
    char p[PATH_MAX + 8];
    snprintf(p, sizeof p, "%s%s", path, suffix);
    return access(p, F_OK) == 0;
}

/* Whether the file's header says WAL (read and write versions 2, bytes 18 and 19). */
static bool header_says_wal(const char *path)
{
    unsigned char h[20];
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(h, 1, sizeof h, f) : 0;
    if (f)
        fclose(f);
    return n == sizeof h && memcmp(h, "SQLite format 3", 16) == 0 && h[18] == 2 && h[19] == 2;
}

/* "file:" URI of path with immutable=1; characters a URI gives meaning to are %-escaped. */
static void immutable_uri(const char *path, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "file:");
    for (const unsigned char *p = (const unsigned char *)path; *p && o + 4 < len; p++)
        o += (size_t)(*p == '%' || *p == '?' || *p == '#' || *p <= ' ' || *p >= 0x7f
                          ? snprintf(buf + o, len - o, "%%%02X", *p)
                          : snprintf(buf + o, len - o, "%c", *p));
    snprintf(buf + o, len - o, "?immutable=1");
}

int gm_store_open_readonly(const char *path, gm_store **out, gm_error *err)
{
    *out = NULL;
    if (!path || !*path)
        return gm_error_set(err, GM_EINVAL, "database path is empty");
    struct stat sb;
    if (stat(path, &sb) < 0)
        return errno == ENOENT
                   ? gm_error_set(err, GM_ENOENT, "no database at %s (nothing recorded there yet)",
                                  path)
                   : gm_error_set(err, GM_EIO, "cannot read database %s: %s", path,
                                  strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return gm_error_set(err, GM_EINVAL,
                            "database %s is %s, not a regular file; give the path of a "
                            "database file",
                            path, kind_of(sb.st_mode));
    gm_store *st = store_new(path);
    if (!st)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    /* A WAL database is read through its -shm file, which a reader would have to create (and
     * then leave behind, since only a writer removes it) and cannot create in a directory it
     * may not write. With neither -wal nor -shm there, no writer has the database open and
     * every commit is in the main file, so it is read as immutable, without them. A writer
     * that starts meanwhile could only race this one short read. */
    char uri[3 * PATH_MAX + 32];
    bool immutable =
        header_says_wal(path) && !sibling_exists(path, "-wal") && !sibling_exists(path, "-shm");
    if (immutable)
        immutable_uri(path, uri, sizeof uri);
    int rc;
    if (sqlite3_open_v2(immutable ? uri : path, &st->db,
                        SQLITE_OPEN_READONLY | (immutable ? SQLITE_OPEN_URI : 0),
                        NULL) != SQLITE_OK) {
        rc = st->db ? db_error(st, err, "cannot open")
                    : gm_error_set(err, GM_ENOMEM, "out of memory opening %s", path);
        goto fail;
    }
    sqlite3_busy_timeout(st->db, BUSY_TIMEOUT_MS);
    int v = user_version(st);
    if (v < 0) {
        rc = db_error(st, err, "reading the schema version");
        goto fail;
    }
    int known = migrations[MIGRATION_COUNT - 1].version;
    if (v == 0) {
        rc = gm_error_set(err, GM_ESTATE, "%s holds no gpumon data (schema version 0)", path);
        goto fail;
    }
    if (v > known) {
        rc = gm_error_set(err, GM_ESTATE,
                          "database %s has schema version %d; this gpumon knows up to %d "
                          "(use a newer gpumon)",
                          path, v, known);
        goto fail;
    }
    /* An older schema is read as it is (the queries leave out what it lacks): upgrading it is
     * a writer's job. Writes through this connection fail with SQLITE_READONLY. */
    st->schema = v;
    if ((rc = prepare_statements(st, err)) < 0)
        goto fail;
    *out = st;
    return GM_OK;
fail:
    gm_store_close(st);
    return rc;
}

void gm_store_close(gm_store *st)
{
    if (!st)
        return;
    sqlite3_finalize(st->ins_sample);
    sqlite3_finalize(st->upd_count);
    /* Given back first: closing checkpoints the WAL into the database, which may grow it. */
    if (st->reserve_fd >= 0)
        close(st->reserve_fd);
    sqlite3_close(st->db);
    free(st);
}

int gm_store_schema_version(gm_store *st)
{
    return user_version(st);
}

const char *gm_store_journal_mode(gm_store *st, char *buf, size_t len)
{
    sqlite3_stmt *q;
    snprintf(buf, len, "?");
    if (sqlite3_prepare_v2(st->db, "PRAGMA journal_mode", -1, &q, NULL) != SQLITE_OK)
        return buf;
    if (sqlite3_step(q) == SQLITE_ROW)
        snprintf(buf, len, "%s", (const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    return buf;
}

/* ---- owners ----------------------------------------------------------------------------- */

/* The state letter and start time of pid (collect/host.c reads /proc/<pid>/stat for everyone).
 * Returns false when the process does not exist or /proc says nothing. */
static bool proc_start(long pid, char *state, long long *start)
{
    gm_host_proc_usage u;
    if (pid <= 0 || pid > UINT32_MAX || gm_host_process_usage(NULL, (uint32_t)pid, &u) != GM_OK)
        return false;
    *state = u.state;
    *start = (long long)u.start_ticks;
    return true;
}

/* Whether the owner of a "running" session is gone. Only decidable on the same host. */
static bool owner_gone(gm_store *st, const char *host, long pid, long long start)
{
    if (!host || strcmp(host, st->host) != 0 || pid <= 0)
        return false;
    if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
        return true;
    char state;
    long long now_start;
    if (!proc_start(pid, &state, &now_start))
        return false; /* alive per kill() but /proc is hidden: assume still running */
    /* A zombie has finished; a different start time means the pid was reused. */
    return state == 'Z' || state == 'X' || (start > 0 && now_start != start);
}

/* The status as read now, in the words of the API and the CLI alike: running, stopped (the
 * column says "finished", as databases written before the words were aligned do), or
 * interrupted. */
static const char *row_status(gm_store *st, sqlite3_stmt *q, int col_status, int col_host,
                              int col_pid, int col_start)
{
    const char *status = (const char *)sqlite3_column_text(q, col_status);
    if (status && strcmp(status, "finished") == 0)
        return "stopped";
    if (status && strcmp(status, "running") == 0 &&
        owner_gone(st, (const char *)sqlite3_column_text(q, col_host),
                   (long)sqlite3_column_int64(q, col_pid), sqlite3_column_int64(q, col_start)))
        return "interrupted";
    return status ? status : "?";
}

/* ---- writing ---------------------------------------------------------------------------- */

/* ---- the space guard -------------------------------------------------------------------- */

/* The mount point of the filesystem holding dir: the highest directory above it on the same
 * device (dir itself when it cannot be resolved). */
static void mount_point(const char *dir, char *out, size_t len)
{
    char *p = realpath(dir, NULL);
    struct stat here, up;
    if (!p || stat(p, &here) < 0) {
        snprintf(out, len, "%s", dir);
        free(p);
        return;
    }
    for (;;) {
        char *slash = strrchr(p, '/');
        if (!slash || slash == p) {
            if (slash && p[1] && stat("/", &up) == 0 && up.st_dev == here.st_dev)
                p[1] = '\0';
            break;
        }
        *slash = '\0';
        if (stat(p, &up) < 0 || up.st_dev != here.st_dev) {
            *slash = '/';
            break;
        }
    }
    snprintf(out, len, "%s", p);
    free(p);
}

/* Bytes this process may still write on the database's filesystem (root may use the blocks
 * kept for it), -1 when it cannot tell. */
static long long space_free(const gm_store *st)
{
    struct statvfs v;
    if (statvfs(st->dir, &v) < 0)
        return -1;
    unsigned long long blocks = geteuid() == 0 ? v.f_bfree : v.f_bavail;
    unsigned long long bytes = blocks * v.f_frsize;
    return bytes > LLONG_MAX ? LLONG_MAX : (long long)bytes;
}

/* Before a session or a sample is written: refused while less than the reserve is free. */
static int space_check(const gm_store *st, gm_error *err)
{
    if (!st->guard)
        return GM_OK;
    long long avail = space_free(st);
    if (avail < 0 || avail >= GM_STORE_RESERVE_BYTES)
        return GM_OK;
    return gm_error_set(err, GM_EIO, "disk full: %lld MiB free on %s, less than the %d MiB reserve",
                        avail >> 20, st->fs, GM_STORE_RESERVE_BYTES >> 20);
}

static void reserve_release(gm_store *st)
{
    if (st->reserve_fd >= 0) {
        close(st->reserve_fd);
        st->reserve_fd = -1;
    }
}

/* Before the write that ends or removes a session: the held space goes back to the
 * filesystem when it is short, so that write and the checkpoint after it fit. */
static void reserve_spend_if_short(gm_store *st)
{
    if (st->reserve_fd < 0)
        return;
    long long avail = space_free(st);
    if (avail >= 0 && avail < GM_STORE_RESERVE_BYTES)
        reserve_release(st);
}

/* A failed end or removal with the reserve still held: worth one more try without it. */
static bool reserve_retry(gm_store *st, int rc)
{
    if (rc != GM_EIO || st->reserve_fd < 0)
        return false;
    reserve_release(st);
    return true;
}

int gm_store_guard_space(gm_store *st, gm_error *err)
{
    snprintf(st->dir, sizeof st->dir, "%s", st->path);
    char *slash = strrchr(st->dir, '/');
    if (!slash)
        snprintf(st->dir, sizeof st->dir, ".");
    else if (slash == st->dir)
        st->dir[1] = '\0';
    else
        *slash = '\0';
    mount_point(st->dir, st->fs, sizeof st->fs);
    st->guard = true;
    if (st->reserve_fd >= 0)
        return GM_OK;
    /* Unnamed (O_TMPFILE): nothing to clean up, freed by the kernel when gpumon dies;
     * O_CLOEXEC: the recorded command must not hold it. */
    int fd = open(st->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0)
        return gm_error_set(err, GM_ENOTSUP, "cannot hold %d MiB on %s: %s",
                            GM_STORE_RESERVE_BYTES >> 20, st->fs, strerror(errno));
    if (fallocate(fd, 0, 0, GM_STORE_RESERVE_BYTES) < 0) {
        int e = errno;
        close(fd);
        return gm_error_set(err, GM_ENOTSUP, "cannot hold %d MiB on %s: %s",
                            GM_STORE_RESERVE_BYTES >> 20, st->fs, strerror(e));
    }
    st->reserve_fd = fd;
    return GM_OK;
}

bool gm_store_space_held(const gm_store *st)
{
    return st->reserve_fd >= 0;
}

static int bind_text_or_null(sqlite3_stmt *q, int i, const char *text)
{
    return text ? sqlite3_bind_text(q, i, text, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(q, i);
}

/* Writes sample number seq of s (one row per followed GPU, values in gm_session_gpu order)
 * and counts it, inside the caller's transaction. */
static int write_values(gm_store *st, const gm_session *s, size_t seq, double t, const double *v,
                        gm_error *err)
{
    size_t ngpus = gm_session_gpu_count(s);
    for (size_t k = 0; k < ngpus; k++) {
        sqlite3_stmt *q = st->ins_sample;
        sqlite3_reset(q);
        sqlite3_clear_bindings(q);
        sqlite3_bind_text(q, 1, gm_session_id(s), -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(q, 2, (sqlite3_int64)seq);
        sqlite3_bind_double(q, 3, t);
        sqlite3_bind_int64(q, 4, gm_session_gpu_at(s, k)->index);
        for (int m = 0; m < GM_SM__COUNT; m++) {
            double x = v ? v[k * GM_SM__COUNT + m] : NAN;
            if (isfinite(x))
                sqlite3_bind_double(q, 5 + m, x);
            else
                sqlite3_bind_null(q, 5 + m);
        }
        if (sqlite3_step(q) != SQLITE_DONE) {
            int x = sqlite3_extended_errcode(st->db);
            int rc =
                x == SQLITE_CONSTRAINT_PRIMARYKEY
                    ? gm_error_set(err, GM_EEXIST, "sample %zu of session %s is already stored",
                                   seq, gm_session_id(s))
                : x == SQLITE_CONSTRAINT_FOREIGNKEY
                    ? gm_error_set(err, GM_ENOENT, "session %s was never stored", gm_session_id(s))
                    : db_error(st, err, "writing a sample");
            sqlite3_reset(q);
            return rc;
        }
    }
    sqlite3_reset(st->ins_sample);
    sqlite3_stmt *u = st->upd_count;
    sqlite3_reset(u);
    sqlite3_bind_int64(u, 1, (sqlite3_int64)(seq + 1));
    sqlite3_bind_double(u, 2, t);
    sqlite3_bind_text(u, 3, gm_session_id(s), -1, SQLITE_TRANSIENT);
    int step = sqlite3_step(u);
    sqlite3_reset(u);
    if (step != SQLITE_DONE)
        return db_error(st, err, "counting a sample");
    if (sqlite3_changes(st->db) == 0)
        return gm_error_set(err, GM_ENOENT, "session %s was never stored", gm_session_id(s));
    return GM_OK;
}

/* Writes sample i of s: from its timeline, or its newest sample when a sample limit left that
 * one out of the timeline. */
static int write_sample(gm_store *st, const gm_session *s, size_t i, gm_error *err)
{
    double t;
    const double *v;
    if (gm_session_sample(s, i, &t, &v) < 0 &&
        (i + 1 != gm_session_sample_count(s) || gm_session_last(s, &t, &v) < 0))
        return gm_error_set(err, GM_EINVAL, "no sample %zu in session %s", i, gm_session_id(s));
    return write_values(st, s, i, t, v, err);
}

static char *gpus_text(const gm_session *s)
{
    json_t *a = json_array();
    for (size_t k = 0; a && k < gm_session_gpu_count(s); k++) {
        const gm_session_gpu *g = gm_session_gpu_at(s, k);
        json_array_append_new(a, json_pack("{s:I, s:s, s:s}", "index", (json_int_t)g->index, "name",
                                           g->name, "uuid", g->uuid));
    }
    char *text = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    return text;
}

int gm_store_session_begin(gm_store *st, const gm_session *s, gm_error *err)
{
    int rc = space_check(st, err);
    if (rc < 0)
        return rc;
    rc = exec_sql(st, "BEGIN IMMEDIATE", err);
    if (rc < 0)
        return rc;
    sqlite3_stmt *q = NULL;
    char *gpus = gpus_text(s);
    const json_t *argv = gm_session_command(s);
    char *command = argv ? json_dumps(argv, JSON_COMPACT) : NULL;
    const json_t *attached = gm_session_attached(s);
    char *meta = json_object_size(attached)
                     ? json_dumps(attached, JSON_COMPACT | JSON_REAL_PRECISION(17))
                     : NULL;
    if (!gpus || (argv && !command) || (json_object_size(attached) && !meta)) {
        rc = gm_error_set(err, GM_ENOMEM, "out of memory");
        goto rollback;
    }
    char state;
    long long start = 0;
    if (!proc_start((long)getpid(), &state, &start))
        start = 0;
    if (sqlite3_prepare_v2(st->db,
                           "INSERT INTO sessions (id, kind, label, command, host, owner_pid, "
                           "owner_start, status, started_ms, interval_s, gpus, meta) VALUES "
                           "(?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?)",
                           -1, &q, NULL) != SQLITE_OK) {
        rc = db_error(st, err, "preparing a session");
        goto rollback;
    }
    sqlite3_bind_text(q, 1, gm_session_id(s), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 2, gm_session_kind(s), -1, SQLITE_TRANSIENT);
    bind_text_or_null(q, 3, gm_session_label(s));
    bind_text_or_null(q, 4, command);
    sqlite3_bind_text(q, 5, st->host, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(q, 6, (sqlite3_int64)getpid());
    sqlite3_bind_int64(q, 7, start);
    sqlite3_bind_int64(q, 8, gm_session_started_ms(s));
    sqlite3_bind_double(q, 9, gm_session_interval(s));
    sqlite3_bind_text(q, 10, gpus, -1, SQLITE_TRANSIENT);
    bind_text_or_null(q, 11, meta);
    int step = sqlite3_step(q);
    if (step != SQLITE_DONE) {
        rc = sqlite3_extended_errcode(st->db) == SQLITE_CONSTRAINT_PRIMARYKEY
                 ? gm_error_set(err, GM_EEXIST, "session %s is already stored", gm_session_id(s))
                 : db_error(st, err, "storing a session");
        goto rollback;
    }
    for (size_t i = 0; i < gm_session_timeline_count(s); i++)
        if ((rc = write_sample(st, s, i, err)) < 0)
            goto rollback;
    sqlite3_finalize(q);
    free(gpus);
    free(command);
    free(meta);
    return exec_sql(st, "COMMIT", err);
rollback:
    sqlite3_finalize(q);
    free(gpus);
    free(command);
    free(meta);
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

int gm_store_session_sample(gm_store *st, const gm_session *s, size_t i, gm_error *err)
{
    /* One transaction per sample: the rows of all GPUs and the count land together. */
    int rc = space_check(st, err);
    if (rc < 0)
        return rc;
    rc = exec_sql(st, "BEGIN IMMEDIATE", err);
    if (rc < 0)
        return rc;
    if ((rc = write_sample(st, s, i, err)) < 0) {
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
        return rc;
    }
    return exec_sql(st, "COMMIT", err);
}

int gm_store_session_sample_values(gm_store *st, const gm_session *s, size_t seq, double t_s,
                                   const double *values, gm_error *err)
{
    if (!values && gm_session_gpu_count(s))
        return gm_error_set(err, GM_EINVAL, "session %s: no values given", gm_session_id(s));
    int rc = space_check(st, err);
    if (rc < 0)
        return rc;
    rc = exec_sql(st, "BEGIN IMMEDIATE", err);
    if (rc < 0)
        return rc;
    if ((rc = write_values(st, s, seq, t_s, values, err)) < 0) {
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
        return rc;
    }
    return exec_sql(st, "COMMIT", err);
}

/* Runs a one-parameter statement (?1 = text) and returns the rows it changed, or a negative
 * code. */
static int change_by_id(gm_store *st, const char *sql, const char *id, const char *what,
                        gm_error *err)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) != SQLITE_OK)
        return db_error(st, err, what);
    sqlite3_bind_text(q, 1, id, -1, SQLITE_TRANSIENT);
    int step = sqlite3_step(q);
    sqlite3_finalize(q);
    if (step != SQLITE_DONE)
        return db_error(st, err, what);
    return sqlite3_changes(st->db);
}

static int session_delete(gm_store *st, const char *id, gm_error *err)
{
    int rc = exec_sql(st, "BEGIN IMMEDIATE", err);
    if (rc < 0)
        return rc;
    /* Samples first and explicitly: the result must not depend on foreign_keys being on. */
    if ((rc = change_by_id(st, "DELETE FROM samples WHERE session_id = ?1", id, "deleting samples",
                           err)) < 0 ||
        (st->schema >= 3 && (rc = change_by_id(st, "DELETE FROM bench_points WHERE bench_id = ?1",
                                               id, "deleting benchmark points", err)) < 0) ||
        (rc = change_by_id(st, "DELETE FROM sessions WHERE id = ?1", id, "deleting a session",
                           err)) < 0)
        goto rollback;
    if (rc == 0) {
        rc = gm_error_set(err, GM_ENOENT, "no session \"%s\" in %s", id, st->path);
        goto rollback;
    }
    return exec_sql(st, "COMMIT", err);
rollback:
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

int gm_store_session_delete(gm_store *st, const char *id, gm_error *err)
{
    if (!id || !*id)
        return gm_error_set(err, GM_EINVAL, "no session id given");
    reserve_spend_if_short(st);
    int rc = session_delete(st, id, err);
    if (reserve_retry(st, rc))
        rc = session_delete(st, id, err);
    return rc;
}

static void copy_col(sqlite3_stmt *q, int col, char *buf, size_t len);

int gm_store_prune(gm_store *st, int64_t cutoff_ms, size_t max, size_t *deleted, bool *more,
                   gm_error *err)
{
    if (deleted)
        *deleted = 0;
    if (more)
        *more = false;
    /* An entry's end: when it finished, else (interrupted, or still running) its newest
     * sample. The ids are read first, then deleted one by one, so no read is open across the
     * deletes. */
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(st->db,
                           "SELECT id, status, host, owner_pid, owner_start FROM sessions WHERE "
                           "COALESCE(ended_ms, started_ms + CAST(1000 * COALESCE(duration_s, "
                           "last_t, 0) AS INTEGER)) < ?1 ORDER BY started_ms, id",
                           -1, &q, NULL) != SQLITE_OK)
        return db_error(st, err, "finding entries to prune");
    sqlite3_bind_int64(q, 1, cutoff_ms);
    char(*ids)[GM_SESSION_ID_LEN] = NULL;
    size_t n = 0, cap = 0;
    int rc = GM_OK, step;
    while ((step = sqlite3_step(q)) == SQLITE_ROW) {
        if (strcmp(row_status(st, q, 1, 2, 3, 4), "running") == 0)
            continue;
        if (max && n == max) {
            if (more)
                *more = true;
            break;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            void *nv = realloc(ids, cap * sizeof *ids);
            if (!nv) {
                rc = gm_error_set(err, GM_ENOMEM, "out of memory");
                break;
            }
            ids = nv;
        }
        copy_col(q, 0, ids[n], sizeof ids[n]);
        n++;
    }
    if (rc == GM_OK && step != SQLITE_ROW && step != SQLITE_DONE)
        rc = db_error(st, err, "finding entries to prune");
    sqlite3_finalize(q);
    for (size_t i = 0; i < n && rc == GM_OK; i++) {
        int drc = gm_store_session_delete(st, ids[i], err);
        if (drc == GM_OK && deleted)
            (*deleted)++;
        else if (drc != GM_ENOENT) /* gone meanwhile: someone else pruned it */
            rc = drc;
    }
    free(ids);
    return rc;
}

/* The end of s with status (finished, incomplete), its stored sample count, and one more field
 * key: extra in its document (none when extra is NULL), written as one update. */
static int session_end_once(gm_store *st, gm_session *s, const char *status, size_t samples,
                            const char *key, json_t *extra, gm_error *err)
{
    json_t *doc = gm_session_to_json(s);
    if (doc && extra && json_object_set(doc, key, extra) < 0) {
        json_decref(doc);
        doc = NULL;
    }
    char *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    int exit_code = 0;
    bool has_exit = gm_session_exit(s, &exit_code, NULL);
    json_decref(doc);
    if (!text)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    sqlite3_stmt *q = NULL;
    int rc = GM_OK;
    if (sqlite3_prepare_v2(st->db,
                           "UPDATE sessions SET status = ?, ended_ms = ?, duration_s = ?, "
                           "sample_count = ?, exit_code = ?, doc = ? WHERE id = ?",
                           -1, &q, NULL) != SQLITE_OK) {
        rc = db_error(st, err, "preparing the end of a session");
        goto done;
    }
    sqlite3_bind_text(q, 1, status, -1, SQLITE_STATIC);
    if (gm_session_ended_ms(s))
        sqlite3_bind_int64(q, 2, gm_session_ended_ms(s));
    else
        sqlite3_bind_null(q, 2);
    sqlite3_bind_double(q, 3, gm_session_duration(s));
    sqlite3_bind_int64(q, 4, (sqlite3_int64)samples);
    if (has_exit)
        sqlite3_bind_int64(q, 5, exit_code);
    else
        sqlite3_bind_null(q, 5);
    sqlite3_bind_text(q, 6, text, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 7, gm_session_id(s), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(q) != SQLITE_DONE)
        rc = db_error(st, err, "ending a session");
    else if (sqlite3_changes(st->db) == 0)
        rc = gm_error_set(err, GM_ENOENT, "session %s was never stored", gm_session_id(s));
done:
    sqlite3_finalize(q);
    free(text);
    return rc;
}

static int session_end(gm_store *st, gm_session *s, const char *status, size_t samples,
                       const char *key, json_t *extra, gm_error *err)
{
    reserve_spend_if_short(st);
    int rc = session_end_once(st, s, status, samples, key, extra, err);
    if (reserve_retry(st, rc))
        rc = session_end_once(st, s, status, samples, key, extra, err);
    return rc;
}

int gm_store_session_end(gm_store *st, gm_session *s, gm_error *err)
{
    return session_end(st, s, gm_session_finished(s) ? "finished" : "running",
                       gm_session_sample_count(s), NULL, NULL, err);
}

int gm_store_session_end_incomplete(gm_store *st, gm_session *s, size_t stored, const char *why,
                                    gm_error *err)
{
    size_t taken = gm_session_sample_count(s);
    json_t *inc = json_pack("{s:I, s:I, s:s}", "samples_stored", (json_int_t)stored,
                            "samples_not_stored", (json_int_t)(taken > stored ? taken - stored : 0),
                            "reason", why ? why : "the database failed");
    if (!inc)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    int rc = session_end(st, s, "incomplete", stored, "incomplete", inc, err);
    /* s says it only once the database does: a failed update leaves it as it was. */
    if (rc == GM_OK)
        gm_session_attach(s, "incomplete", json_incref(inc));
    json_decref(inc);
    return rc;
}

int gm_store_put_document(gm_store *st, const char *kind, const char *id, const char *label,
                          const json_t *doc, gm_error *err)
{
    if (!kind || !*kind || !id || !*id || strlen(id) >= GM_SESSION_ID_LEN || !doc)
        return gm_error_set(err, GM_EINVAL, "document needs a kind, an id (< %d chars) and JSON",
                            GM_SESSION_ID_LEN);
    char *text = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(17));
    if (!text)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    int64_t now = gm_clock_wall_ms();
    sqlite3_stmt *q = NULL;
    int rc = GM_OK;
    if (sqlite3_prepare_v2(st->db,
                           "INSERT INTO sessions (id, kind, label, host, status, started_ms, "
                           "ended_ms, duration_s, doc) VALUES (?, ?, ?, ?, 'finished', ?, ?, 0, ?)",
                           -1, &q, NULL) != SQLITE_OK) {
        rc = db_error(st, err, "preparing a document");
        goto done;
    }
    sqlite3_bind_text(q, 1, id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 2, kind, -1, SQLITE_TRANSIENT);
    bind_text_or_null(q, 3, label);
    sqlite3_bind_text(q, 4, st->host, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(q, 5, now);
    sqlite3_bind_int64(q, 6, now);
    sqlite3_bind_text(q, 7, text, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(q) != SQLITE_DONE)
        rc = sqlite3_extended_errcode(st->db) == SQLITE_CONSTRAINT_PRIMARYKEY
                 ? gm_error_set(err, GM_EEXIST, "%s is already stored", id)
                 : db_error(st, err, "storing a document");
done:
    sqlite3_finalize(q);
    free(text);
    return rc;
}

/* ---- reading ---------------------------------------------------------------------------- */

static void join_command(const char *json_text, char *buf, size_t len)
{
    buf[0] = '\0';
    if (!json_text)
        return;
    json_t *a = json_loads(json_text, 0, NULL);
    if (json_is_array(a))
        gm_session_command_line(a, buf, len);
    json_decref(a);
}

static void copy_col(sqlite3_stmt *q, int col, char *buf, size_t len)
{
    const unsigned char *t = sqlite3_column_text(q, col);
    snprintf(buf, len, "%s", t ? (const char *)t : "");
}

/* Whether an entry was read from simulated GPUs: the provider its session attached at begin
 * (meta), or its document's (benchmarks, snapshots, finished sessions). A text that is not
 * JSON counts as not simulated rather than failing the listing. */
#define SIMULATED_DOC_SQL "CASE WHEN json_valid(doc) THEN json_extract(doc, '$.provider') END"
#define SIMULATED_SQL                                                            \
    "COALESCE(CASE WHEN json_valid(meta) THEN json_extract(meta, '$.provider') " \
    "END, " SIMULATED_DOC_SQL ") = 'sim'"

int gm_store_list(gm_store *st, size_t limit, gm_store_entry **out, size_t *n, gm_error *err)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *q;
    /* A version 1 database (read as it is) has no meta column. */
    const char *sql = st->schema >= 2
                          ? "SELECT id, kind, label, command, status, host, owner_pid, "
                            "owner_start, started_ms, duration_s, last_t, sample_count, "
                            "exit_code, " SIMULATED_SQL
                            " FROM sessions ORDER BY started_ms DESC, id DESC LIMIT ?"
                          : "SELECT id, kind, label, command, status, host, owner_pid, "
                            "owner_start, started_ms, duration_s, last_t, sample_count, "
                            "exit_code, (" SIMULATED_DOC_SQL ") = 'sim'"
                            " FROM sessions ORDER BY started_ms DESC, id DESC LIMIT ?";
    if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) != SQLITE_OK)
        return db_error(st, err, "listing");
    sqlite3_bind_int64(q, 1, limit ? (sqlite3_int64)limit : -1);
    size_t cap = 0;
    gm_store_entry *v = NULL;
    int rc = GM_OK, step;
    while ((step = sqlite3_step(q)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 32;
            gm_store_entry *nv = realloc(v, cap * sizeof *nv);
            if (!nv) {
                rc = gm_error_set(err, GM_ENOMEM, "out of memory");
                goto done;
            }
            v = nv;
        }
        gm_store_entry *e = &v[(*n)++];
        memset(e, 0, sizeof *e);
        copy_col(q, 0, e->id, sizeof e->id);
        copy_col(q, 1, e->kind, sizeof e->kind);
        copy_col(q, 2, e->label, sizeof e->label);
        join_command((const char *)sqlite3_column_text(q, 3), e->command, sizeof e->command);
        snprintf(e->status, sizeof e->status, "%s", row_status(st, q, 4, 5, 6, 7));
        e->started_ms = sqlite3_column_int64(q, 8);
        if (sqlite3_column_type(q, 9) != SQLITE_NULL)
            e->duration_s = sqlite3_column_double(q, 9);
        else if (sqlite3_column_type(q, 10) != SQLITE_NULL)
            e->duration_s = sqlite3_column_double(q, 10);
        else
            e->duration_s = NAN;
        e->samples = sqlite3_column_int64(q, 11);
        e->has_exit = sqlite3_column_type(q, 12) != SQLITE_NULL;
        e->exit_code = sqlite3_column_int(q, 12);
        e->simulated = sqlite3_column_int(q, 13) != 0;
    }
    if (step != SQLITE_DONE)
        rc = db_error(st, err, "listing");
done:
    sqlite3_finalize(q);
    if (rc < 0) {
        free(v);
        *n = 0;
        return rc;
    }
    *out = v;
    return GM_OK;
}

/* Runs a one-column id query with ?1 = text; copies the first id into buf and returns how many
 * rows came (at most 2), or a negative code. */
static int id_query(gm_store *st, const char *sql, const char *text, char *buf, size_t len,
                    gm_error *err)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) != SQLITE_OK)
        return db_error(st, err, "looking up an id");
    sqlite3_bind_text(q, 1, text, -1, SQLITE_TRANSIENT);
    int found = 0, step;
    while ((step = sqlite3_step(q)) == SQLITE_ROW)
        if (found++ == 0)
            copy_col(q, 0, buf, len);
    sqlite3_finalize(q);
    return step == SQLITE_DONE ? found : db_error(st, err, "looking up an id");
}

int gm_store_resolve(gm_store *st, const char *id_or_prefix, char *buf, size_t len, gm_error *err)
{
    int found = id_query(st, "SELECT id FROM sessions WHERE id = ?1", id_or_prefix, buf, len, err);
    if (found != 0)
        return found < 0 ? found : GM_OK;
    /* substr, not LIKE: an id may hold '_' or '%'. */
    if (*id_or_prefix)
        found = id_query(st, "SELECT id FROM sessions WHERE substr(id, 1, length(?1)) = ?1 LIMIT 2",
                         id_or_prefix, buf, len, err);
    if (found < 0)
        return found;
    if (found == 0)
        return gm_error_set(err, GM_ENOENT, "no session \"%s\" in %s", id_or_prefix, st->path);
    if (found > 1)
        return gm_error_set(err, GM_EINVAL, "\"%s\" matches several sessions; give more of the id",
                            id_or_prefix);
    return GM_OK;
}

int gm_store_kind(gm_store *st, const char *id, char *buf, size_t len, gm_error *err)
{
    int found = id_query(st, "SELECT kind FROM sessions WHERE id = ?1", id, buf, len, err);
    if (found < 0)
        return found;
    return found ? GM_OK : gm_error_set(err, GM_ENOENT, "no session \"%s\" in %s", id, st->path);
}

int gm_store_status(gm_store *st, const char *id, char *buf, size_t len, gm_error *err)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(
            st->db, "SELECT status, host, owner_pid, owner_start FROM sessions WHERE id = ?1", -1,
            &q, NULL) != SQLITE_OK)
        return db_error(st, err, "reading a status");
    sqlite3_bind_text(q, 1, id, -1, SQLITE_TRANSIENT);
    int step = sqlite3_step(q), rc = GM_OK;
    if (step == SQLITE_ROW)
        snprintf(buf, len, "%s", row_status(st, q, 0, 1, 2, 3));
    else if (step == SQLITE_DONE)
        rc = gm_error_set(err, GM_ENOENT, "no session \"%s\" in %s", id, st->path);
    else
        rc = db_error(st, err, "reading a status");
    sqlite3_finalize(q);
    return rc;
}

/* Mean and largest utilization over every stored sample of session id, for a session without
 * a final document (still running elsewhere, or interrupted): one range scan of its rows. */
static json_t *samples_brief(gm_store *st, const char *id)
{
    sqlite3_stmt *q;
    json_t *b = json_pack("{s:n, s:n, s:n}", "utilization_mean", "utilization_max", "energy_j");
    if (!b || sqlite3_prepare_v2(st->db,
                                 "SELECT avg(utilization), max(utilization) FROM samples "
                                 "WHERE session_id = ?1",
                                 -1, &q, NULL) != SQLITE_OK)
        return b;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_type(q, 0) != SQLITE_NULL) {
        json_object_set_new(b, "utilization_mean", json_real(sqlite3_column_double(q, 0)));
        json_object_set_new(b, "utilization_max", json_real(sqlite3_column_double(q, 1)));
    }
    sqlite3_finalize(q);
    return b;
}

int gm_store_brief(gm_store *st, const char *id, json_t **out, gm_error *err)
{
    *out = NULL;
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(st->db,
                           st->schema >= 2
                               ? "SELECT command, gpus, doc, meta FROM sessions WHERE id = ?1"
                               : "SELECT command, gpus, doc, NULL FROM sessions WHERE id = ?1",
                           -1, &q, NULL) != SQLITE_OK)
        return db_error(st, err, "reading a session");
    sqlite3_bind_text(q, 1, id, -1, SQLITE_TRANSIENT);
    int step = sqlite3_step(q);
    if (step != SQLITE_ROW) {
        sqlite3_finalize(q);
        return step == SQLITE_DONE
                   ? gm_error_set(err, GM_ENOENT, "no session \"%s\" in %s", id, st->path)
                   : db_error(st, err, "reading a session");
    }
    char command[1024];
    join_command((const char *)sqlite3_column_text(q, 0), command, sizeof command);
    const char *gpus_text = (const char *)sqlite3_column_text(q, 1);
    const char *doc_text = (const char *)sqlite3_column_text(q, 2);
    const char *meta_text = (const char *)sqlite3_column_text(q, 3);
    json_t *stored_gpus = gpus_text ? json_loads(gpus_text, 0, NULL) : NULL;
    json_t *doc = doc_text ? json_loads(doc_text, 0, NULL) : NULL;
    json_t *meta = meta_text ? json_loads(meta_text, 0, NULL) : NULL;
    sqlite3_finalize(q);

    json_t *b = json_object_get(doc, "gpu_stats") ? gm_session_doc_brief(doc)
                : gpus_text                       ? samples_brief(st, id)
                            : json_pack("{s:n, s:n, s:n}", "utilization_mean", "utilization_max",
                                        "energy_j");
    json_t *gpus = json_array();
    size_t i;
    json_t *g;
    json_array_foreach(json_is_array(stored_gpus) ? stored_gpus : NULL, i, g)
    {
        json_t *name = json_object_get(g, "name");
        json_array_append_new(gpus, json_pack("{s:O, s:O}", "index", json_object_get(g, "index"),
                                              "name", json_is_string(name) ? name : json_null()));
    }
    json_t *provider = json_object_get(doc, "provider");
    if (!json_is_string(provider))
        provider = json_object_get(meta, "provider");
    int rc = GM_OK;
    if (!b || !gpus ||
        json_object_set_new(b, "command", command[0] ? gm_json_str(command) : json_null()) < 0 ||
        json_object_set_new(b, "gpus", json_incref(gpus)) < 0 ||
        json_object_set_new(b, "provider",
                            json_is_string(provider) ? json_incref(provider) : json_null()) < 0) {
        json_decref(b);
        rc = gm_error_set(err, GM_ENOMEM, "out of memory");
    } else {
        *out = b;
    }
    json_decref(gpus);
    json_decref(stored_gpus);
    json_decref(doc);
    json_decref(meta);
    return rc;
}

/* Rebuilds session id from its row (metadata) and samples. */
/* The driver indices of a stored GPU list ([{"index": 0, ...}, ...]) into idx (GM_MAX_GPUS);
 * GM_EPARSE naming session id when it is not a list. */
static int gpu_indices(const char *text, const char *id, unsigned *idx, size_t *ng, gm_error *err)
{
    json_t *gpus = text ? json_loads(text, 0, NULL) : NULL;
    if (!json_is_array(gpus)) {
        json_decref(gpus);
        return gm_error_set(err, GM_EPARSE, "session %s: stored GPU list is corrupt", id);
    }
    size_t i;
    json_t *g;
    *ng = 0;
    json_array_foreach(gpus, i, g)
    {
        if (*ng < GM_MAX_GPUS)
            idx[(*ng)++] = (unsigned)json_integer_value(json_object_get(g, "index"));
    }
    json_decref(gpus);
    return GM_OK;
}

/* Calls fn for each stored sample of session id in order (by sequence number, not time: two
 * samples may share a time), with the values of the ng GPUs of idx (NaN where a GPU has no row
 * or a value is absent). A non-zero return of fn stops the walk and is returned. */
static int each_sample(gm_store *st, const char *id, const unsigned *idx, size_t ng,
                       int (*fn)(void *ctx, double t_s, size_t ng, const unsigned *gpu,
                                 const double *values),
                       void *ctx, gm_error *err)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(st->db,
                           "SELECT seq, t, gpu, utilization, memory_used_mb, "
                           "memory_usage_percent, temperature_c, power_draw_w, energy_counter_j "
                           "FROM samples WHERE session_id = ? ORDER BY seq, gpu",
                           -1, &q, NULL) != SQLITE_OK)
        return db_error(st, err, "reading samples");
    sqlite3_bind_text(q, 1, id, -1, SQLITE_TRANSIENT);
    double v[GM_MAX_GPUS * GM_SM__COUNT];
    long long cur = -1;
    double cur_t = 0;
    int step, rc = GM_OK;
    while ((step = sqlite3_step(q)) == SQLITE_ROW) {
        long long seq = sqlite3_column_int64(q, 0);
        if (seq != cur) {
            if (cur >= 0 && (rc = fn(ctx, cur_t, ng, idx, v)) != 0)
                break;
            cur = seq;
            cur_t = sqlite3_column_double(q, 1);
            for (size_t k = 0; k < ng * GM_SM__COUNT; k++)
                v[k] = NAN;
        }
        unsigned gpu = (unsigned)sqlite3_column_int64(q, 2);
        for (size_t k = 0; k < ng; k++) {
            if (idx[k] != gpu)
                continue;
            for (int m = 0; m < GM_SM__COUNT; m++)
                if (sqlite3_column_type(q, 3 + m) != SQLITE_NULL)
                    v[k * GM_SM__COUNT + m] = sqlite3_column_double(q, 3 + m);
        }
    }
    if (rc == GM_OK && step != SQLITE_DONE && step != SQLITE_ROW)
        rc = db_error(st, err, "reading samples");
    if (rc == GM_OK && cur >= 0)
        rc = fn(ctx, cur_t, ng, idx, v);
    sqlite3_finalize(q);
    return rc;
}

typedef struct replay_ctx {
    gm_session *s;
    gm_error *err;
} replay_ctx;

static int replay_one(void *ctx, double t_s, size_t ng, const unsigned *gpu, const double *values)
{
    (void)ng;
    (void)gpu;
    replay_ctx *c = ctx;
    return gm_session_add_values(c->s, t_s, values, c->err);
}

static int replay(gm_store *st, const char *id, sqlite3_stmt *row, gm_session **out, gm_error *err)
{
    /* row columns: 0 kind, 1 label, 2 command, 3 started_ms, 4 interval_s, 5 gpus, 11 meta */
    *out = NULL;
    json_t *gpus = json_loads((const char *)sqlite3_column_text(row, 5), 0, NULL);
    if (!json_is_array(gpus)) {
        json_decref(gpus);
        return gm_error_set(err, GM_EPARSE, "session %s: stored GPU list is corrupt", id);
    }
    unsigned idx[GM_MAX_GPUS];
    size_t ng = 0, i;
    json_t *g;
    json_array_foreach(gpus, i, g)
    {
        if (ng < GM_MAX_GPUS)
            idx[ng++] = (unsigned)json_integer_value(json_object_get(g, "index"));
    }
    gm_session *s = NULL;
    double interval = sqlite3_column_double(row, 4);
    int rc = gm_session_new((const char *)sqlite3_column_text(row, 1), idx, ng,
                            interval > 0 ? interval : 0, &s, err);
    if (rc < 0)
        goto done;
    /* ng == 0: a session that followed no GPU; keep it that way through the replay. */
    gm_session_restore(s, id, sqlite3_column_int64(row, 3), 0);
    gm_session_set_kind(s, (const char *)sqlite3_column_text(row, 0));
    json_array_foreach(gpus, i, g)
    {
        gm_session_set_gpu(s, (unsigned)json_integer_value(json_object_get(g, "index")),
                           json_string_value(json_object_get(g, "name")),
                           json_string_value(json_object_get(g, "uuid")));
    }
    json_t *cmd = json_loads((const char *)sqlite3_column_text(row, 2), 0, NULL);
    if (json_is_array(cmd)) {
        const char *argv[256];
        size_t n = 0;
        json_t *a;
        json_array_foreach(cmd, i, a)
        {
            if (n < 255 && json_is_string(a))
                argv[n++] = json_string_value(a);
        }
        argv[n] = NULL;
        gm_session_set_command(s, argv);
    }
    json_decref(cmd);
    /* What the session knew at its start (schema 2; NULL before, or when it had nothing). */
    const char *meta_text = (const char *)sqlite3_column_text(row, 11);
    json_t *meta = meta_text ? json_loads(meta_text, 0, NULL) : NULL;
    const char *key;
    json_t *val;
    json_object_foreach(meta, key, val)
    {
        if ((rc = gm_session_attach(s, key, json_incref(val))) < 0) {
            json_decref(meta);
            rc = gm_error_set(err, rc, "out of memory");
            goto done;
        }
    }
    json_decref(meta);

    replay_ctx rc_ctx = {.s = s, .err = err};
    rc = each_sample(st, id, idx, ng, replay_one, &rc_ctx, err);
done:
    json_decref(gpus);
    if (rc < 0) {
        gm_session_free(s);
        return rc;
    }
    *out = s;
    return GM_OK;
}

int gm_store_load(gm_store *st, const char *id, json_t **out, gm_error *err)
{
    *out = NULL;
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(st->db,
                           st->schema >= 2 ? "SELECT kind, label, command, started_ms, "
                                             "interval_s, gpus, doc, status, host, owner_pid, "
                                             "owner_start, meta FROM sessions WHERE id = ?"
                                           : "SELECT kind, label, command, started_ms, "
                                             "interval_s, gpus, doc, status, host, owner_pid, "
                                             "owner_start, NULL FROM sessions WHERE id = ?",
                           -1, &q, NULL) != SQLITE_OK)
        return db_error(st, err, "reading a session");
    sqlite3_bind_text(q, 1, id, -1, SQLITE_TRANSIENT);
    int rc = GM_OK;
    json_t *doc = NULL;
    gm_session *s = NULL;
    int step = sqlite3_step(q);
    if (step == SQLITE_DONE) {
        rc = gm_error_set(err, GM_ENOENT, "no session \"%s\" in %s", id, st->path);
        goto done;
    }
    if (step != SQLITE_ROW) {
        rc = db_error(st, err, "reading a session");
        goto done;
    }
    bool has_samples = sqlite3_column_type(q, 5) != SQLITE_NULL;
    const char *doc_text = (const char *)sqlite3_column_text(q, 6);
    if (doc_text) {
        json_error_t jerr;
        doc = json_loads(doc_text, 0, &jerr);
        if (!json_is_object(doc)) {
            rc = gm_error_set(err, GM_EPARSE, "session %s: stored document is corrupt: %s", id,
                              jerr.text);
            goto done;
        }
    }
    if (has_samples && !doc) {
        if ((rc = replay(st, id, q, &s, err)) < 0)
            goto done;
        doc = gm_session_to_json(s);
        if (!doc) {
            rc = gm_error_set(err, GM_ENOMEM, "out of memory");
            goto done;
        }
    }
    if (has_samples) {
        json_object_set_new(doc, "status", json_string(row_status(st, q, 7, 8, 9, 10)));
        /* A session with a sample limit kept only its first samples in memory, but the store
         * has every one: a timeline read from here is complete. */
        if (json_object_get(doc, "timeline_truncated"))
            json_object_set_new(doc, "timeline_truncated", json_false());
    }
done:
    sqlite3_finalize(q);
    gm_session_free(s);
    if (rc < 0) {
        json_decref(doc);
        return rc;
    }
    *out = doc;
    return GM_OK;
}

static int timeline_one(void *ctx, double t_s, size_t ng, const unsigned *gpu, const double *values)
{
    gm_timeline_add(ctx, t_s, ng, gpu, values);
    return GM_OK;
}

int gm_store_timeline(gm_store *st, const char *id, gm_timeline *tl, gm_error *err)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(st->db, "SELECT gpus, started_ms FROM sessions WHERE id = ?", -1, &q,
                           NULL) != SQLITE_OK)
        return db_error(st, err, "reading a session");
    sqlite3_bind_text(q, 1, id, -1, SQLITE_TRANSIENT);
    int step = sqlite3_step(q);
    if (step == SQLITE_DONE) {
        sqlite3_finalize(q);
        return gm_error_set(err, GM_ENOENT, "no session \"%s\" in %s", id, st->path);
    }
    if (step != SQLITE_ROW) {
        sqlite3_finalize(q);
        return db_error(st, err, "reading a session");
    }
    /* A stored document that is not a session (a snapshot) has no GPU list and no samples. */
    unsigned idx[GM_MAX_GPUS];
    size_t ng = 0;
    bool session = sqlite3_column_type(q, 0) != SQLITE_NULL;
    int rc =
        session ? gpu_indices((const char *)sqlite3_column_text(q, 0), id, idx, &ng, err) : GM_OK;
    gm_timeline_set_start_ms(tl, sqlite3_column_int64(q, 1));
    sqlite3_finalize(q);
    if (rc < 0 || !session)
        return rc;
    return each_sample(st, id, idx, ng, timeline_one, tl, err);
}

static int sink_begin(void *ctx, const gm_session *s, gm_error *err)
{
    return gm_store_session_begin(ctx, s, err);
}

static int sink_sample(void *ctx, const gm_session *s, size_t seq, double t_s, const double *values,
                       gm_error *err)
{
    return gm_store_session_sample_values(ctx, s, seq, t_s, values, err);
}

static int sink_end(void *ctx, gm_session *s, gm_error *err)
{
    return gm_store_session_end(ctx, s, err);
}

static int sink_remove(void *ctx, const char *id, gm_error *err)
{
    return gm_store_session_delete(ctx, id, err);
}

void gm_store_record_sink(gm_store *st, gm_record_sink *out)
{
    *out = (gm_record_sink){st, sink_begin, sink_sample, sink_end, sink_remove};
}

/* ---- benchmarks ------------------------------------------------------------------------- */

/* The columns of bench_points after bench_id, seq and load, and where each comes from in a
 * point of the document. */
static const struct {
    const char *col, *key, *sub;
    bool integer;
} bench_cols[] = {
    {"concurrency", "concurrency", NULL, true},
    {"request_rate", "request_rate", NULL, false},
    {"requests", "requests", NULL, true},
    {"completed", "completed", NULL, true},
    {"failed", "failed", NULL, true},
    {"duration_s", "duration_s", NULL, false},
    {"requests_per_s", "requests_per_s", NULL, false},
    {"output_tokens_per_s", "output_tokens_per_s", NULL, false},
    {"total_tokens_per_s", "total_tokens_per_s", NULL, false},
    {"output_tokens", "output_tokens", NULL, true},
    {"input_tokens", "input_tokens", NULL, true},
    {"ttft_p50_ms", "ttft_ms", "p50", false},
    {"ttft_p99_ms", "ttft_ms", "p99", false},
    {"tpot_p50_ms", "tpot_ms", "p50", false},
    {"tpot_p99_ms", "tpot_ms", "p99", false},
    {"itl_p50_ms", "itl_ms", "p50", false},
    {"itl_p99_ms", "itl_ms", "p99", false},
    {"e2e_p50_ms", "e2e_ms", "p50", false},
    {"e2e_p99_ms", "e2e_ms", "p99", false},
    {"goodput_requests_per_s", "goodput_requests_per_s", NULL, false},
    {"energy_j", "energy_j", NULL, false},
    {"output_tokens_per_joule", "output_tokens_per_joule", NULL, false},
    {"joules_per_request", "joules_per_request", NULL, false},
    {"valid", "valid", NULL, true},
};
#define BENCH_NCOLS (sizeof bench_cols / sizeof *bench_cols)

static void bind_json_number(sqlite3_stmt *q, int i, const json_t *v, bool integer)
{
    if (json_is_boolean(v))
        sqlite3_bind_int(q, i, json_is_true(v));
    else if (json_is_integer(v))
        sqlite3_bind_int64(q, i, json_integer_value(v));
    else if (json_is_real(v) && isfinite(json_real_value(v)))
        integer ? sqlite3_bind_int64(q, i, (sqlite3_int64)json_real_value(v))
                : sqlite3_bind_double(q, i, json_real_value(v));
    else
        sqlite3_bind_null(q, i);
}

int gm_store_put_bench(gm_store *st, const json_t *doc, const json_t *command, int64_t started_ms,
                       int64_t ended_ms, int64_t gpu_samples, gm_error *err)
{
    const char *id = json_string_value(json_object_get(doc, "id"));
    const json_t *points = json_object_get(doc, "points");
    if (!id || !*id || strlen(id) >= GM_SESSION_ID_LEN || !json_is_array(points))
        return gm_error_set(err, GM_EINVAL, "a benchmark document needs an id and points");
    if (st->schema < 3)
        return gm_error_set(err, GM_ESTATE, "database %s predates benchmarks", st->path);
    char *text = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(17));
    char *cmd = command ? json_dumps(command, JSON_COMPACT) : NULL;
    json_t *m = json_pack("{s:O?, s:O?, s:O?}", "url", json_object_get(doc, "url"), "model",
                          json_object_get(doc, "model"), "api", json_object_get(doc, "api"));
    char *meta = m ? json_dumps(m, JSON_COMPACT) : NULL;
    json_decref(m);
    sqlite3_stmt *q = NULL;
    int rc = GM_OK;
    if (!text || !meta || (command && !cmd)) {
        rc = gm_error_set(err, GM_ENOMEM, "out of memory");
        goto done;
    }
    if ((rc = exec_sql(st, "BEGIN IMMEDIATE", err)) < 0)
        goto done;
    if (sqlite3_prepare_v2(st->db,
                           "INSERT INTO sessions (id, kind, label, command, host, status, "
                           "started_ms, ended_ms, duration_s, sample_count, doc, meta) VALUES "
                           "(?, 'bench', ?, ?, ?, 'finished', ?, ?, ?, ?, ?, ?)",
                           -1, &q, NULL) != SQLITE_OK) {
        rc = db_error(st, err, "preparing a benchmark");
        goto rollback;
    }
    sqlite3_bind_text(q, 1, id, -1, SQLITE_TRANSIENT);
    bind_text_or_null(q, 2, json_string_value(json_object_get(doc, "label")));
    bind_text_or_null(q, 3, cmd);
    sqlite3_bind_text(q, 4, st->host, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(q, 5, started_ms);
    sqlite3_bind_int64(q, 6, ended_ms);
    if (json_is_null(json_object_get(doc, "duration_s"))) /* an import that says none */
        sqlite3_bind_null(q, 7);
    else
        sqlite3_bind_double(q, 7, (double)(ended_ms - started_ms) / 1000.0);
    sqlite3_bind_int64(q, 8, gpu_samples);
    sqlite3_bind_text(q, 9, text, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 10, meta, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(q) != SQLITE_DONE) {
        rc = sqlite3_extended_errcode(st->db) == SQLITE_CONSTRAINT_PRIMARYKEY
                 ? gm_error_set(err, GM_EEXIST, "%s is already stored", id)
                 : db_error(st, err, "storing a benchmark");
        goto rollback;
    }
    sqlite3_finalize(q);
    q = NULL;
    char sql[1024];
    size_t o = (size_t)snprintf(sql, sizeof sql, "INSERT INTO bench_points (bench_id, seq, load");
    for (size_t c = 0; c < BENCH_NCOLS; c++)
        o += (size_t)snprintf(sql + o, sizeof sql - o, ", %s", bench_cols[c].col);
    o += (size_t)snprintf(sql + o, sizeof sql - o, ") VALUES (?, ?, ?");
    for (size_t c = 0; c < BENCH_NCOLS; c++)
        o += (size_t)snprintf(sql + o, sizeof sql - o, ", ?");
    snprintf(sql + o, sizeof sql - o, ")");
    if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) != SQLITE_OK) {
        rc = db_error(st, err, "preparing benchmark points");
        goto rollback;
    }
    size_t i;
    const json_t *p;
    json_array_foreach(points, i, p)
    {
        sqlite3_reset(q);
        sqlite3_clear_bindings(q);
        char load[64];
        gm_bench_point_load(p, load, sizeof load); /* the same words the reports print */
        sqlite3_bind_text(q, 1, id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(q, 2, (sqlite3_int64)i);
        sqlite3_bind_text(q, 3, load, -1, SQLITE_TRANSIENT);
        for (size_t c = 0; c < BENCH_NCOLS; c++) {
            const json_t *v = json_object_get(p, bench_cols[c].key);
            if (bench_cols[c].sub)
                v = json_object_get(v, bench_cols[c].sub);
            bind_json_number(q, 4 + (int)c, v, bench_cols[c].integer);
        }
        if (sqlite3_step(q) != SQLITE_DONE) {
            rc = db_error(st, err, "storing a benchmark point");
            goto rollback;
        }
    }
    sqlite3_finalize(q);
    q = NULL;
    rc = exec_sql(st, "COMMIT", err);
    goto done;
rollback:
    sqlite3_finalize(q);
    q = NULL;
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
done:
    free(text);
    free(cmd);
    free(meta);
    return rc;
}

int gm_store_bench_csv(gm_store *st, const char *id, FILE *out, gm_error *err)
{
    /* From the document, which has every statistic (bench_points keeps p50 and p99 for SQL). */
    json_t *doc = NULL;
    int rc = gm_store_load(st, id, &doc, err);
    if (rc < 0)
        return rc;
    gm_bench_print_csv(out, doc);
    json_decref(doc);
    return ferror(out) ? gm_error_set(err, GM_EIO, "writing the CSV of %s", id) : GM_OK;
}

/* The bench_points columns a listing reads, in the SELECT's order and named as in the JSON. */
static const char *const bench_list_cols[] = {"load",
                                              "concurrency",
                                              "request_rate",
                                              "requests_per_s",
                                              "output_tokens_per_s",
                                              "ttft_p50_ms",
                                              "ttft_p99_ms",
                                              "tpot_p50_ms",
                                              "e2e_p50_ms",
                                              "goodput_requests_per_s",
                                              "energy_j",
                                              "output_tokens_per_joule",
                                              "joules_per_request",
                                              "valid",
                                              "failed"};

/* The current row of the points statement as a JSON object (NULL when out of memory). */
static json_t *bench_list_point(sqlite3_stmt *pq)
{
    json_t *p = json_object();
    for (int c = 0; p && c < (int)(sizeof bench_list_cols / sizeof *bench_list_cols); c++) {
        const char *name = bench_list_cols[c];
        json_t *v;
        switch (sqlite3_column_type(pq, c)) {
        case SQLITE_INTEGER:
            v = strcmp(name, "valid") == 0 ? json_boolean(sqlite3_column_int(pq, c))
                                           : json_integer(sqlite3_column_int64(pq, c));
            break;
        case SQLITE_FLOAT:
            v = json_real(sqlite3_column_double(pq, c));
            break;
        case SQLITE_TEXT:
            v = gm_json_str((const char *)sqlite3_column_text(pq, c));
            break;
        default:
            v = json_null();
        }
        json_object_set_new(p, name, v);
    }
    return p;
}

/* The current row of the runs statement, with its points, as the listing's JSON object. */
static json_t *bench_list_run(sqlite3_stmt *q, sqlite3_stmt *pq)
{
    const char *bid = (const char *)sqlite3_column_text(q, 0);
    char started[40];
    gm_json_time(sqlite3_column_int64(q, 2), started, sizeof started);
    const char *meta_text = (const char *)sqlite3_column_text(q, 4);
    json_t *meta = meta_text ? json_loads(meta_text, 0, NULL) : NULL;
    json_t *points = json_array();
    sqlite3_reset(pq);
    sqlite3_bind_text(pq, 1, bid, -1, SQLITE_TRANSIENT);
    while (points && sqlite3_step(pq) == SQLITE_ROW)
        json_array_append_new(points, bench_list_point(pq));
    json_t *b =
        json_pack("{s:s, s:o, s:s, s:o, s:O?, s:O?, s:O?, s:o}", "id", bid, "label",
                  sqlite3_column_type(q, 1) == SQLITE_NULL
                      ? json_null()
                      : gm_json_str((const char *)sqlite3_column_text(q, 1)),
                  "started_at", started, "duration_seconds",
                  sqlite3_column_type(q, 3) == SQLITE_NULL ? json_null()
                                                           : json_real(sqlite3_column_double(q, 3)),
                  "url", json_object_get(meta, "url"), "model", json_object_get(meta, "model"),
                  "api", json_object_get(meta, "api"), "points", points ? points : json_array());
    json_decref(meta);
    return b;
}

int gm_store_bench_list(gm_store *st, size_t limit, json_t **out, gm_error *err)
{
    *out = NULL;
    json_t *arr = json_array();
    if (!arr)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    if (st->schema < 3) {
        *out = arr;
        return GM_OK;
    }
    sqlite3_stmt *q = NULL, *pq = NULL;
    int rc = GM_OK;
    if (sqlite3_prepare_v2(st->db,
                           "SELECT id, label, started_ms, duration_s, meta FROM sessions WHERE "
                           "kind = 'bench' ORDER BY started_ms DESC, id DESC LIMIT ?",
                           -1, &q, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(st->db,
                           "SELECT load, concurrency, request_rate, requests_per_s, "
                           "output_tokens_per_s, ttft_p50_ms, ttft_p99_ms, tpot_p50_ms, "
                           "e2e_p50_ms, goodput_requests_per_s, energy_j, "
                           "output_tokens_per_joule, joules_per_request, valid, failed FROM "
                           "bench_points WHERE bench_id = ? ORDER BY seq",
                           -1, &pq, NULL) != SQLITE_OK) {
        rc = db_error(st, err, "listing benchmarks");
        goto done;
    }
    sqlite3_bind_int64(q, 1, limit ? (sqlite3_int64)limit : -1);
    int step;
    while ((step = sqlite3_step(q)) == SQLITE_ROW) {
        json_t *b = bench_list_run(q, pq);
        if (!b || json_array_append_new(arr, b) < 0) {
            rc = gm_error_set(err, GM_ENOMEM, "out of memory");
            goto done;
        }
    }
    if (step != SQLITE_DONE)
        rc = db_error(st, err, "listing benchmarks");
done:
    sqlite3_finalize(q);
    sqlite3_finalize(pq);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *out = arr;
    return GM_OK;
}
