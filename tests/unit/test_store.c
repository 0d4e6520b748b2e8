/* test_store.c - the SQLite store: migrations, WAL, sessions written and read back, interrupted
 * sessions, id lookup, deletion and CSV export, against real database files in a temporary
 * directory; and the daemon's session worker writing bounded sessions to it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "server/worker.h"
#include "store/store.h"
#include "base/json.h"
#include "core/timeline.h"

/* The session's document with its timeline, written by core/timeline.c, parsed back. */
static json_t *parse_text(gm_buf *b)
{
    json_error_t jerr;
    json_t *out = json_loads(b->p, 0, &jerr);
    if (!out)
        fail_msg("timeline JSON does not parse: %s: %.200s", jerr.text, b->p);
    gm_buf_free(b);
    return out;
}

static json_t *with_timeline(gm_session *s)
{
    json_t *doc = gm_session_to_json(s);
    assert_non_null(doc);
    gm_buf b;
    gm_buf_init(&b, 0);
    gm_timeline *tl = NULL;
    assert_int_equal(gm_timeline_open_doc(GM_TIMELINE_JSON, doc, &b, NULL, &tl), GM_OK);
    json_decref(doc);
    gm_timeline_add_session(tl, s);
    assert_int_equal(gm_timeline_close(tl, NULL), GM_OK);
    return parse_text(&b);
}

/* gm_store_load, and with timeline the stored samples through the timeline writer, as
 * `gpumon history export` and GET /api/sessions/{id} put them together. */
static int load_doc(gm_store *st, const char *id, bool timeline, json_t **out, gm_error *err)
{
    json_t *doc = NULL;
    int rc = gm_store_load(st, id, &doc, err);
    if (rc < 0 || !timeline || !json_object_get(doc, "gpu_stats")) { /* not a session */
        *out = doc;
        return rc;
    }
    gm_buf b;
    gm_buf_init(&b, 0);
    gm_timeline *tl = NULL;
    assert_int_equal(gm_timeline_open_doc(GM_TIMELINE_JSON, doc, &b, NULL, &tl), GM_OK);
    json_decref(doc);
    rc = gm_store_timeline(st, id, tl, err);
    assert_int_equal(gm_timeline_close(tl, NULL), GM_OK);
    if (rc < 0) {
        gm_buf_free(&b);
        *out = NULL;
        return rc;
    }
    *out = parse_text(&b);
    return GM_OK;
}

/* The samples of id as CSV into f, as `gpumon history export --format csv` writes them. */
static int export_csv(gm_store *st, const char *id, FILE *f, gm_error *err)
{
    gm_buf b;
    gm_buf_init(&b, 0);
    gm_timeline *tl = NULL;
    assert_int_equal(gm_timeline_open(GM_TIMELINE_CSV, &b, f, &tl), GM_OK);
    int rc = gm_store_timeline(st, id, tl, err);
    assert_int_equal(gm_timeline_close(tl, NULL), GM_OK);
    gm_buf_free(&b);
    return rc;
}

/* csv without its first column (the absolute time), after checking that column: each row's
 * time is started_ms plus its t_s, in ISO 8601 UTC. Returns a malloc'd copy. */
static char *without_time(const char *csv, int64_t started_ms)
{
    char *out = malloc(strlen(csv) + 1), *o = out;
    int row = 0;
    for (const char *line = csv; *line; row++) {
        const char *end = strchr(line, '\n');
        const char *comma = strchr(line, ',');
        assert_non_null(end);
        assert_true(comma);
        check_lt(comma, end);
        if (row == 0) {
            assert_int_equal(comma - line, 4); /* "time" */
        } else {
            char want[40], got[40];
            gm_json_time(started_ms + (int64_t)llround(strtod(comma + 1, NULL) * 1000), want,
                         sizeof want);
            snprintf(got, sizeof got, "%.*s", (int)(comma - line), line);
            assert_string_equal(got, want);
        }
        memcpy(o, comma + 1, (size_t)(end - comma));
        o += end - comma;
        line = end + 1;
    }
    *o = '\0';
    return out;
}

static char tmpdir[256];

static int setup(void **state)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/gm_test_store_XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    return 0;
}

static int teardown(void **state)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void db_path(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", tmpdir, name);
}

/* Runs one statement on the file directly, as another program would. */
static void raw_sql(const char *path, const char *sql)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* Three samples of GPUs 0 and 2; GPU 2 has no power. */
static gm_session *make_session(const char *label)
{
    unsigned idx[] = {0, 2};
    gm_session *s = NULL;
    assert_int_equal(gm_session_new(label, idx, 2, 0.5, &s, NULL), GM_OK);
    gm_session_set_kind(s, "record");
    const char *argv[] = {"sh", "-c", "sleep 1; exit 3", NULL};
    gm_session_set_command(s, argv);
    gm_session_set_gpu(s, 0, "H100", "GPU-aaa");
    gm_session_set_gpu(s, 2, "A100", "GPU-ccc");
    for (int k = 0; k < 3; k++) {
        double v[2 * GM_SM__COUNT];
        for (int m = 0; m < 2 * GM_SM__COUNT; m++)
            v[m] = NAN;
        v[GM_SM_UTIL] = 10 * (k + 1);
        v[GM_SM_MEM_USED_MB] = 1024;
        v[GM_SM_POWER_W] = 100 + k;
        v[GM_SM_ENERGY_J] = 5000 + 100 * k;
        v[GM_SM__COUNT + GM_SM_UTIL] = 7;
        v[GM_SM__COUNT + GM_SM_TEMP_C] = 40 + k;
        assert_int_equal(gm_session_add_values(s, 0.5 * k, v, NULL), GM_OK);
    }
    return s;
}

static void test_open_migrates_and_wal(void **state)
{
    char path[512], mode[16];
    db_path(path, sizeof path, "a/b/c/gpumon.db"); /* parents are created */
    gm_store *st = NULL;
    assert_int_equal(gm_store_open(path, &st, NULL), GM_OK);
    assert_int_equal(gm_store_schema_version(st), GM_STORE_SCHEMA_VERSION);
    assert_string_equal(gm_store_journal_mode(st, mode, sizeof mode), "wal");
    gm_store_close(st);
    /* Re-open: nothing to apply, same version, still WAL. */
    assert_int_equal(gm_store_open(path, &st, NULL), GM_OK);
    assert_int_equal(gm_store_schema_version(st), GM_STORE_SCHEMA_VERSION);
    assert_string_equal(gm_store_journal_mode(st, mode, sizeof mode), "wal");
    gm_store_close(st);

    /* An existing empty file is an empty database: migrated from version 0. */
    db_path(path, sizeof path, "empty.db");
    FILE *f = fopen(path, "w");
    fclose(f);
    assert_int_equal(gm_store_open(path, &st, NULL), GM_OK);
    assert_int_equal(gm_store_schema_version(st), GM_STORE_SCHEMA_VERSION);
    gm_store_close(st);
}

static void test_newer_schema_refused(void **state)
{
    char path[512];
    db_path(path, sizeof path, "newer.db");
    raw_sql(path, "PRAGMA user_version = 99");
    gm_store *st = NULL;
    gm_error err = {0};
    assert_int_equal(gm_store_open(path, &st, &err), GM_ESTATE);
    assert_null(st);
    assert_non_null(strstr(err.msg, "99"));
}

static void test_unwritable_path(void **state)
{
    char path[512];
    db_path(path, sizeof path, "plainfile");
    FILE *f = fopen(path, "w");
    fclose(f);
    db_path(path, sizeof path, "plainfile/sub/gpumon.db"); /* a file where a directory should be */
    gm_store *st = NULL;
    gm_error err = {0};
    assert_int_equal(gm_store_open(path, &st, &err), GM_EIO);
    assert_null(st);
    assert_non_null(strstr(err.msg, "plainfile"));
}

static void test_write_read_back(void **state)
{
    char path[512];
    db_path(path, sizeof path, "rw.db");
    gm_store *st = NULL;
    assert_int_equal(gm_store_open(path, &st, NULL), GM_OK);
    gm_session *s = make_session("first");
    /* begin writes the samples held so far; later samples come one by one. */
    assert_int_equal(gm_store_session_begin(st, s, NULL), GM_OK);
    gm_error err = {0};
    assert_int_equal(gm_store_session_begin(st, s, &err), GM_EEXIST);
    double v[2 * GM_SM__COUNT];
    for (int m = 0; m < 2 * GM_SM__COUNT; m++)
        v[m] = NAN;
    v[GM_SM_UTIL] = 90;
    assert_int_equal(gm_session_add_values(s, 1.5, v, NULL), GM_OK);
    assert_int_equal(gm_store_session_sample(st, s, 3, NULL), GM_OK);

    gm_store_entry *e = NULL;
    size_t n = 0;
    assert_int_equal(gm_store_list(st, 0, &e, &n, NULL), GM_OK);
    assert_int_equal(n, 1);
    assert_string_equal(e[0].status, "running"); /* we are its owner, alive */
    assert_int_equal(e[0].samples, 4);
    assert_float_equal(e[0].duration_s, 1.5, 1e-12);
    free(e);

    gm_session_set_exit(s, 3, 0);
    gm_session_finish(s);
    assert_int_equal(gm_store_session_end(st, s, NULL), GM_OK);
    assert_int_equal(gm_store_list(st, 0, &e, &n, NULL), GM_OK);
    assert_int_equal(n, 1);
    assert_string_equal(e[0].id, gm_session_id(s));
    assert_string_equal(e[0].kind, "record");
    assert_string_equal(e[0].label, "first");
    assert_string_equal(e[0].command, "sh -c 'sleep 1; exit 3'");
    assert_string_equal(e[0].status, "stopped");
    assert_int_equal(e[0].samples, 4);
    assert_true(e[0].has_exit);
    assert_int_equal(e[0].exit_code, 3);
    assert_int_equal(e[0].started_ms, gm_session_started_ms(s));
    free(e);

    /* The document read back is the one the session renders, timeline included. */
    json_t *want = with_timeline(s);
    json_t *got = NULL;
    assert_int_equal(load_doc(st, gm_session_id(s), true, &got, NULL), GM_OK);
    assert_true(json_equal(json_object_get(want, "gpu_stats"), json_object_get(got, "gpu_stats")));
    assert_true(json_equal(json_object_get(want, "timeline"), json_object_get(got, "timeline")));
    assert_true(json_equal(want, got));
    json_decref(got);
    assert_int_equal(load_doc(st, gm_session_id(s), false, &got, NULL), GM_OK);
    assert_null(json_object_get(got, "timeline"));
    json_decref(got);
    json_decref(want);

    /* CSV: one row per sample per GPU, empty where absent. */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(export_csv(st, gm_session_id(s), f, NULL), GM_OK);
    fclose(f);
    char *rest = without_time(buf, gm_session_started_ms(s));
    assert_string_equal(rest, "t_s,gpu,utilization_percent,memory_used_mib,memory_used_percent,"
                              "temperature_c,power_w,energy_counter_j,simulated\n"
                              "0.000,0,10.0,1024.00,,,100.000,5000.000,false\n"
                              "0.000,2,7.0,,,40.0,,,false\n"
                              "0.500,0,20.0,1024.00,,,101.000,5100.000,false\n"
                              "0.500,2,7.0,,,41.0,,,false\n"
                              "1.000,0,30.0,1024.00,,,102.000,5200.000,false\n"
                              "1.000,2,7.0,,,42.0,,,false\n"
                              "1.500,0,90.0,,,,,,false\n"
                              "1.500,2,,,,,,,false\n");
    free(rest);
    free(buf);
    gm_session_free(s);
    gm_store_close(st);
}

/* A pid that certainly belongs to no process: a child we started and reaped. */
static pid_t dead_pid(void)
{
    pid_t p = fork();
    if (p == 0)
        _exit(0);
    waitpid(p, NULL, 0);
    return p;
}

static const char *status_of(gm_store *st, const char *id)
{
    static char status[16];
    gm_store_entry *e = NULL;
    size_t n = 0;
    assert_int_equal(gm_store_list(st, 0, &e, &n, NULL), GM_OK);
    status[0] = '\0';
    for (size_t i = 0; i < n; i++)
        if (strcmp(e[i].id, id) == 0)
            snprintf(status, sizeof status, "%s", e[i].status);
    free(e);
    return status;
}

static void test_interrupted(void **state)
{
    char path[512], sql[512];
    db_path(path, sizeof path, "int.db");
    gm_store *st = NULL;
    assert_int_equal(gm_store_open(path, &st, NULL), GM_OK);
    gm_session *s = make_session(NULL);
    assert_int_equal(gm_store_session_begin(st, s, NULL), GM_OK);
    const char *id = gm_session_id(s);
    assert_string_equal(status_of(st, id), "running");

    /* Owner gone: interrupted, with the samples it wrote, rebuilt from them. */
    snprintf(sql, sizeof sql, "UPDATE sessions SET owner_pid = %d WHERE id = '%s'", (int)dead_pid(),
             id);
    raw_sql(path, sql);
    assert_string_equal(status_of(st, id), "interrupted");
    json_t *doc = NULL;
    assert_int_equal(load_doc(st, id, true, &doc, NULL), GM_OK);
    assert_string_equal(json_string_value(json_object_get(doc, "status")), "interrupted");
    assert_int_equal(json_integer_value(json_object_get(doc, "sample_count")), 3);
    assert_int_equal(json_array_size(json_object_get(doc, "timeline")), 3);
    assert_float_equal(json_number_value(json_object_get(doc, "monitoring_duration_seconds")), 1.0,
                       1e-12);
    const json_t *g0 = json_object_get(json_object_get(doc, "gpu_stats"), "0");
    assert_string_equal(json_string_value(json_object_get(g0, "name")), "H100");
    assert_float_equal(
        json_number_value(json_object_get(json_object_get(g0, "utilization"), "mean")), 20, 1e-12);
    assert_float_equal(json_number_value(json_object_get(g0, "energy_j")), 200, 1e-9);
    assert_string_equal(json_string_value(json_array_get(json_object_get(doc, "command"), 2)),
                        "sleep 1; exit 3");
    json_decref(doc);

    /* Our pid but another start time: the pid was reused, the owner is gone. */
    snprintf(sql, sizeof sql,
             "UPDATE sessions SET owner_pid = %d, owner_start = owner_start + 1 WHERE id = '%s'",
             (int)getpid(), id);
    raw_sql(path, sql);
    assert_string_equal(status_of(st, id), "interrupted");

    /* Another host: cannot tell, so it stays running. */
    snprintf(sql, sizeof sql,
             "UPDATE sessions SET owner_pid = %d, host = 'elsewhere' WHERE id = '%s'",
             (int)dead_pid(), id);
    raw_sql(path, sql);
    assert_string_equal(status_of(st, id), "running");
    gm_session_free(s);
    gm_store_close(st);
}

/* Two samples at the same time (at the millisecond the CSV printed) are two samples: the
 * daemon once rebuilt a stored timeline from the CSV export, grouped by that time, and merged
 * them. The timeline is read by sequence number now. */
static void test_equal_times_stay_apart(void **state)
{
    (void)state;
    char path[512];
    db_path(path, sizeof path, "equal-t.db");
    gm_store *st = NULL;
    assert_int_equal(gm_store_open(path, &st, NULL), GM_OK);
    unsigned idx[] = {0};
    gm_session *s = NULL;
    assert_int_equal(gm_session_new("same-t", idx, 1, 0.001, &s, NULL), GM_OK);
    double v[GM_SM__COUNT];
    for (int m = 0; m < GM_SM__COUNT; m++)
        v[m] = NAN;
    v[GM_SM_UTIL] = 10;
    assert_int_equal(gm_session_add_values(s, 0.0001, v, NULL), GM_OK);
    v[GM_SM_UTIL] = 20;
    assert_int_equal(gm_session_add_values(s, 0.0002, v, NULL), GM_OK);
    assert_int_equal(gm_store_session_begin(st, s, NULL), GM_OK);
    gm_session_finish(s);
    assert_int_equal(gm_store_session_end(st, s, NULL), GM_OK);
    json_t *doc = NULL;
    assert_int_equal(load_doc(st, gm_session_id(s), true, &doc, NULL), GM_OK);
    const json_t *tl = json_object_get(doc, "timeline");
    assert_int_equal(json_array_size(tl), 2);
    const json_t *second = json_object_get(json_object_get(json_array_get(tl, 1), "gpus"), "0");
    assert_float_equal(json_real_value(json_object_get(second, "utilization")), 20, 1e-9);
    json_decref(doc);
    gm_session_free(s);
    gm_store_close(st);
}

static void test_resolve_and_documents(void **state)
{
    char path[512], id[GM_SESSION_ID_LEN];
    db_path(path, sizeof path, "ids.db");
    gm_store *st = NULL;
    gm_error err = {0};
    assert_int_equal(gm_store_open(path, &st, NULL), GM_OK);
    json_t *doc = json_pack("{s:s, s:i}", "kind", "gpumon-snapshot", "gpu_count", 2);
    assert_int_equal(gm_store_put_document(st, "snapshot", "snap-alpha", "before", doc, NULL),
                     GM_OK);
    assert_int_equal(gm_store_put_document(st, "snapshot", "snap-beta", NULL, doc, NULL), GM_OK);
    assert_int_equal(gm_store_put_document(st, "snapshot", "snap-beta", NULL, doc, &err),
                     GM_EEXIST);
    assert_int_equal(gm_store_resolve(st, "snap-alpha", id, sizeof id, NULL), GM_OK);
    assert_string_equal(id, "snap-alpha");
    assert_int_equal(gm_store_resolve(st, "snap-b", id, sizeof id, NULL), GM_OK);
    assert_string_equal(id, "snap-beta");
    assert_int_equal(gm_store_resolve(st, "snap-", id, sizeof id, &err), GM_EINVAL);
    assert_int_equal(gm_store_resolve(st, "nope", id, sizeof id, &err), GM_ENOENT);
    assert_non_null(strstr(err.msg, "nope"));
    assert_int_equal(gm_store_resolve(st, "", id, sizeof id, &err), GM_ENOENT);
    assert_int_equal(gm_store_resolve(st, "snap_", id, sizeof id, &err), GM_ENOENT);

    json_t *got = NULL;
    assert_int_equal(load_doc(st, "snap-alpha", true, &got, NULL), GM_OK);
    assert_true(json_equal(got, doc)); /* a plain document comes back untouched */
    json_decref(got);
    assert_int_equal(load_doc(st, "snap", true, &got, &err), GM_ENOENT);
    assert_int_equal(export_csv(st, "nope", stdout, &err), GM_ENOENT);
    json_decref(doc);

    gm_store_entry *e = NULL;
    size_t n = 0;
    assert_int_equal(gm_store_list(st, 1, &e, &n, NULL), GM_OK);
    assert_int_equal(n, 1); /* the limit holds */
    assert_string_equal(e[0].kind, "snapshot");
    assert_string_equal(e[0].status, "stopped");
    free(e);
    gm_store_close(st);
}

static void test_two_writers(void **state)
{
    /* Two handles (as two gpumon processes) interleave their sample transactions. */
    char path[512];
    db_path(path, sizeof path, "two.db");
    gm_store *a = NULL, *b = NULL;
    assert_int_equal(gm_store_open(path, &a, NULL), GM_OK);
    assert_int_equal(gm_store_open(path, &b, NULL), GM_OK);
    gm_session *sa = make_session("a"), *sb = make_session("b");
    /* Same second, random suffix: make sure the ids differ even if the suffixes collide. */
    gm_session_restore(sb, "other-session", gm_session_started_ms(sb), 0);
    assert_int_equal(gm_store_session_begin(a, sa, NULL), GM_OK);
    assert_int_equal(gm_store_session_begin(b, sb, NULL), GM_OK);
    double v[2 * GM_SM__COUNT];
    for (int m = 0; m < 2 * GM_SM__COUNT; m++)
        v[m] = 1;
    for (int k = 0; k < 20; k++) {
        assert_int_equal(gm_session_add_values(sa, 2 + k, v, NULL), GM_OK);
        assert_int_equal(gm_session_add_values(sb, 2 + k, v, NULL), GM_OK);
        assert_int_equal(gm_store_session_sample(a, sa, 3 + k, NULL), GM_OK);
        assert_int_equal(gm_store_session_sample(b, sb, 3 + k, NULL), GM_OK);
    }
    gm_store_entry *e = NULL;
    size_t n = 0;
    assert_int_equal(gm_store_list(a, 0, &e, &n, NULL), GM_OK);
    assert_int_equal(n, 2);
    assert_int_equal(e[0].samples, 23);
    assert_int_equal(e[1].samples, 23);
    free(e);
    gm_session_free(sa);
    gm_session_free(sb);
    gm_store_close(a);
    gm_store_close(b);
}

/* Rows of a table for one session id, read by SQLite directly. */
static int count_rows(const char *path, const char *table, const char *column, const char *id)
{
    sqlite3 *db;
    sqlite3_stmt *q;
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s WHERE %s = ?", table, column);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
    sqlite3_bind_text(q, 1, id, -1, SQLITE_TRANSIENT);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    int n = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return n;
}

static void test_delete(void **state)
{
    char path[512], id[GM_SESSION_ID_LEN];
    db_path(path, sizeof path, "del.db");
    gm_store *st = NULL;
    gm_error err = {0};
    assert_int_equal(gm_store_open(path, &st, NULL), GM_OK);
    gm_session *a = make_session("a"), *b = make_session("b");
    gm_session_restore(b, "kept-session", gm_session_started_ms(b), 0);
    assert_int_equal(gm_store_session_begin(st, a, NULL), GM_OK);
    assert_int_equal(gm_store_session_begin(st, b, NULL), GM_OK);
    json_t *doc = json_pack("{s:s}", "kind", "gpumon-snapshot");
    assert_int_equal(gm_store_put_document(st, "snapshot", "snap-1", NULL, doc, NULL), GM_OK);
    json_decref(doc);
    assert_int_equal(count_rows(path, "samples", "session_id", gm_session_id(a)), 6);

    /* The session and all its samples go, in one transaction; the others stay whole. */
    assert_int_equal(gm_store_session_delete(st, gm_session_id(a), NULL), GM_OK);
    assert_int_equal(count_rows(path, "sessions", "id", gm_session_id(a)), 0);
    assert_int_equal(count_rows(path, "samples", "session_id", gm_session_id(a)), 0);
    assert_int_equal(count_rows(path, "samples", "session_id", "kept-session"), 6);
    assert_int_equal(gm_store_resolve(st, gm_session_id(a), id, sizeof id, &err), GM_ENOENT);
    assert_int_equal(export_csv(st, gm_session_id(a), stdout, &err), GM_ENOENT);

    /* Unknown ids, an id given twice, an empty id. */
    assert_int_equal(gm_store_session_delete(st, gm_session_id(a), &err), GM_ENOENT);
    assert_non_null(strstr(err.msg, gm_session_id(a)));
    assert_int_equal(gm_store_session_delete(st, "nope", &err), GM_ENOENT);
    assert_int_equal(gm_store_session_delete(st, "", &err), GM_EINVAL);
    /* Not a prefix match: "kept" names no entry. */
    assert_int_equal(gm_store_session_delete(st, "kept", &err), GM_ENOENT);
    assert_int_equal(count_rows(path, "sessions", "id", "kept-session"), 1);

    /* Status as read now: what deleting or pruning checks first. */
    char status[16];
    assert_int_equal(gm_store_status(st, "kept-session", status, sizeof status, NULL), GM_OK);
    assert_string_equal(status, "running"); /* its owner is this process */
    assert_int_equal(gm_store_status(st, "snap-1", status, sizeof status, NULL), GM_OK);
    assert_string_equal(status, "stopped");
    assert_int_equal(gm_store_status(st, "nope", status, sizeof status, &err), GM_ENOENT);
    assert_non_null(strstr(err.msg, "nope"));
    {
        /* An owner that is gone (no process has this pid): interrupted. */
        sqlite3 *db;
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db,
                                      "UPDATE sessions SET owner_pid = 2147483646 WHERE id = "
                                      "'kept-session'",
                                      NULL, NULL, NULL),
                         SQLITE_OK);
        sqlite3_close(db);
    }
    assert_int_equal(gm_store_status(st, "kept-session", status, sizeof status, NULL), GM_OK);
    assert_string_equal(status, "interrupted");

    /* A stored document, and a session still running (the store does not judge status). */
    assert_int_equal(gm_store_session_delete(st, "snap-1", NULL), GM_OK);
    assert_int_equal(gm_store_session_delete(st, "kept-session", NULL), GM_OK);
    gm_store_entry *e = NULL;
    size_t n = 0;
    assert_int_equal(gm_store_list(st, 0, &e, &n, NULL), GM_OK);
    assert_int_equal(n, 0);
    free(e);
    assert_int_equal(count_rows(path, "samples", "session_id", "kept-session"), 0);
    gm_session_free(a);
    gm_session_free(b);
    gm_store_close(st);
}

/* Retention: what ended before the cutoff goes, oldest first and bounded per call; what a live
 * process is recording stays however old. */
static void test_prune(void **state)
{
    char path[512], sql[512];
    db_path(path, sizeof path, "prune.db");
    gm_store *st = NULL;
    gm_error err = {0};
    assert_int_equal(gm_store_open(path, &st, NULL), GM_OK);
    const int64_t day = 86400000;
    /* old: finished 40 days ago; gone: interrupted, last sample 40 days ago; live: still
     * running in this process, started 40 days ago; new: finished now; snap: an old snapshot. */
    gm_session *old = make_session("old"), *gone = make_session("gone"),
               *live = make_session("live"), *fresh = make_session("new");
    gm_session_restore(old, "a-old", gm_session_started_ms(old) - 40 * day, 0);
    gm_session_restore(gone, "b-gone", gm_session_started_ms(gone) - 40 * day, 0);
    gm_session_restore(live, "c-live", gm_session_started_ms(live) - 40 * day, 0);
    gm_session *all[] = {old, gone, live, fresh};
    for (int i = 0; i < 4; i++)
        assert_int_equal(gm_store_session_begin(st, all[i], NULL), GM_OK);
    gm_session_finish(old);
    assert_int_equal(gm_store_session_end(st, old, NULL), GM_OK);
    gm_session_finish(fresh);
    assert_int_equal(gm_store_session_end(st, fresh, NULL), GM_OK);
    /* Its end as a session restored 40 days back would have it (finish stamps the clock). */
    raw_sql(path, "UPDATE sessions SET ended_ms = started_ms + 1000 WHERE id = 'a-old'");
    snprintf(sql, sizeof sql, "UPDATE sessions SET owner_pid = %d WHERE id = 'b-gone'",
             (int)dead_pid());
    raw_sql(path, sql);
    json_t *doc = json_pack("{s:s}", "kind", "gpumon-snapshot");
    assert_int_equal(gm_store_put_document(st, "snapshot", "d-snap", NULL, doc, NULL), GM_OK);
    json_decref(doc);
    raw_sql(path, "UPDATE sessions SET started_ms = started_ms - 50 * 86400000, ended_ms = "
                  "ended_ms - 50 * 86400000 WHERE id = 'd-snap'");

    int64_t cutoff = gm_session_started_ms(fresh) - 30 * day;
    size_t deleted = 99;
    bool more = false;
    /* One at a time: the oldest (the snapshot) first, and more remain. */
    assert_int_equal(gm_store_prune(st, cutoff, 1, &deleted, &more, &err), GM_OK);
    assert_int_equal(deleted, 1);
    assert_true(more);
    assert_int_equal(count_rows(path, "sessions", "id", "d-snap"), 0);
    assert_int_equal(gm_store_prune(st, cutoff, 0, &deleted, &more, &err), GM_OK);
    assert_int_equal(deleted, 2);
    assert_false(more);
    assert_int_equal(count_rows(path, "sessions", "id", "a-old"), 0);
    assert_int_equal(count_rows(path, "samples", "session_id", "a-old"), 0);
    assert_int_equal(count_rows(path, "sessions", "id", "b-gone"), 0);
    assert_int_equal(count_rows(path, "sessions", "id", "c-live"), 1);
    assert_int_equal(count_rows(path, "sessions", "id", gm_session_id(fresh)), 1);
    /* Nothing more to do. */
    assert_int_equal(gm_store_prune(st, cutoff, 0, &deleted, NULL, &err), GM_OK);
    assert_int_equal(deleted, 0);
    for (int i = 0; i < 4; i++)
        gm_session_free(all[i]);
    gm_store_close(st);
}

static double brief_num(const json_t *b, const char *key)
{
    const json_t *v = json_object_get(b, key);
    assert_true(json_is_number(v));
    return json_number_value(v);
}

static void test_brief(void **state)
{
    char path[512];
    db_path(path, sizeof path, "brief.db");
    gm_store *st = NULL;
    gm_error err = {0};
    assert_int_equal(gm_store_open(path, &st, NULL), GM_OK);
    gm_session *a = make_session("a");
    gm_session_attach(a, "provider", json_string("sim"));
    assert_int_equal(gm_store_session_begin(st, a, NULL), GM_OK);
    /* Running (no document yet): utilization from the samples, 10/20/30 and 7/7/7; energy not
     * known until it ends. */
    json_t *b = NULL;
    assert_int_equal(gm_store_brief(st, gm_session_id(a), &b, NULL), GM_OK);
    assert_float_equal(brief_num(b, "utilization_mean"), 13.5, 1e-9);
    assert_float_equal(brief_num(b, "utilization_max"), 30, 1e-9);
    assert_true(json_is_null(json_object_get(b, "energy_j")));
    assert_string_equal(json_string_value(json_object_get(b, "command")),
                        "sh -c 'sleep 1; exit 3'");
    assert_string_equal(json_string_value(json_object_get(b, "provider")), "sim");
    json_t *gpus = json_object_get(b, "gpus");
    assert_int_equal(json_array_size(gpus), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(gpus, 1), "index")), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(gpus, 1), "name")),
                        "A100");
    json_decref(b);
    /* Finished: from its document, the same as the session says of itself. */
    gm_session_finish(a);
    assert_int_equal(gm_store_session_end(st, a, NULL), GM_OK);
    assert_int_equal(gm_store_brief(st, gm_session_id(a), &b, NULL), GM_OK);
    json_t *own = gm_session_brief(a);
    assert_float_equal(brief_num(b, "utilization_mean"), brief_num(own, "utilization_mean"), 1e-9);
    assert_float_equal(brief_num(b, "utilization_max"), 30, 1e-9);
    assert_true(json_is_null(json_object_get(b, "energy_j"))); /* GPU 2 has none */
    json_decref(own);
    json_decref(b);
    /* A plain document: no GPUs, nothing measured. */
    json_t *doc = json_pack("{s:s}", "kind", "gpumon-snapshot");
    assert_int_equal(gm_store_put_document(st, "snapshot", "snap-1", NULL, doc, NULL), GM_OK);
    json_decref(doc);
    assert_int_equal(gm_store_brief(st, "snap-1", &b, NULL), GM_OK);
    assert_int_equal(json_array_size(json_object_get(b, "gpus")), 0);
    assert_true(json_is_null(json_object_get(b, "utilization_mean")));
    assert_true(json_is_null(json_object_get(b, "command")));
    json_decref(b);
    assert_int_equal(gm_store_brief(st, "nope", &b, &err), GM_ENOENT);
    assert_null(b);
    gm_session_free(a);
    gm_store_close(st);
}

/* n values for one GPU: utilization 10 * (k + 1), power 100 W. */
static void one_gpu_values(double *v, int k)
{
    for (int m = 0; m < GM_SM__COUNT; m++)
        v[m] = NAN;
    v[GM_SM_UTIL] = 10.0 * (k + 1);
    v[GM_SM_POWER_W] = 100;
}

static void test_bounded_session_stores_every_sample(void **state)
{
    char path[512];
    db_path(path, sizeof path, "bounded.db");
    gm_store *st = NULL;
    gm_error err = {0};
    assert_int_equal(gm_store_open(path, &st, NULL), GM_OK);
    unsigned idx[] = {3};
    gm_session *s = NULL;
    assert_int_equal(gm_session_new("bounded", idx, 1, 1.0, &s, NULL), GM_OK);
    assert_int_equal(gm_session_set_sample_limit(s, 2), GM_OK);

    /* Not begun yet: a sample has no session to go to. */
    double v[GM_SM__COUNT];
    one_gpu_values(v, 0);
    assert_int_equal(gm_store_session_sample_values(st, s, 0, 0, v, &err), GM_ENOENT);
    assert_int_equal(gm_store_session_begin(st, s, NULL), GM_OK);
    for (int k = 0; k < 5; k++) {
        one_gpu_values(v, k);
        assert_int_equal(gm_session_add_values(s, k, v, NULL), GM_OK);
        double t;
        const double *last;
        assert_int_equal(gm_session_last(s, &t, &last), GM_OK);
        if (k == 4) /* past the limit, the index form reaches the newest sample too */
            assert_int_equal(gm_store_session_sample(st, s, 4, NULL), GM_OK);
        else
            assert_int_equal(gm_store_session_sample_values(st, s, (size_t)k, t, last, NULL),
                             GM_OK);
    }
    assert_int_equal(gm_session_timeline_count(s), 2);
    assert_int_equal(gm_session_sample_count(s), 5);
    /* Only the newest sample is reachable by index past the limit; a sample twice is refused. */
    assert_int_equal(gm_store_session_sample(st, s, 3, &err), GM_EINVAL);
    assert_int_equal(gm_store_session_sample_values(st, s, 4, 4, v, &err), GM_EEXIST);

    gm_session_finish(s);
    assert_int_equal(gm_store_session_end(st, s, NULL), GM_OK);
    gm_store_entry *e = NULL;
    size_t n = 0;
    assert_int_equal(gm_store_list(st, 0, &e, &n, NULL), GM_OK);
    assert_int_equal(n, 1);
    assert_int_equal(e[0].samples, 5);
    free(e);

    /* Read back: the statistics of the finished session (mean over all five, percentiles over
     * the first two) and a timeline rebuilt from every stored sample. */
    json_t *doc = NULL;
    assert_int_equal(load_doc(st, gm_session_id(s), true, &doc, NULL), GM_OK);
    assert_int_equal(json_integer_value(json_object_get(doc, "sample_count")), 5);
    assert_int_equal(json_integer_value(json_object_get(doc, "percentiles_over_samples")), 2);
    assert_true(json_is_false(json_object_get(doc, "timeline_truncated")));
    assert_int_equal(json_array_size(json_object_get(doc, "timeline")), 5);
    const json_t *u =
        json_object_get(json_object_get(json_object_get(doc, "gpu_stats"), "3"), "utilization");
    assert_float_equal(json_number_value(json_object_get(u, "mean")), 30, 1e-12);
    assert_float_equal(json_number_value(json_object_get(u, "max")), 50, 1e-12);
    assert_int_equal(json_integer_value(json_object_get(u, "count")), 5);
    assert_float_equal(json_number_value(json_object_get(u, "p50")), 15, 1e-12);
    json_decref(doc);

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(export_csv(st, gm_session_id(s), f, NULL), GM_OK);
    fclose(f);
    char *rest = without_time(buf, gm_session_started_ms(s));
    assert_string_equal(rest, "t_s,gpu,utilization_percent,memory_used_mib,memory_used_percent,"
                              "temperature_c,power_w,energy_counter_j,simulated\n"
                              "0.000,3,10.0,,,,100.000,,false\n"
                              "1.000,3,20.0,,,,100.000,,false\n"
                              "2.000,3,30.0,,,,100.000,,false\n"
                              "3.000,3,40.0,,,,100.000,,false\n"
                              "4.000,3,50.0,,,,100.000,,false\n");
    free(rest);
    free(buf);
    gm_session_free(s);
    gm_store_close(st);
}

static void test_interrupted_keeps_begin_metadata(void **state)
{
    char path[512], sql[512];
    db_path(path, sizeof path, "meta.db");
    gm_store *st = NULL;
    assert_int_equal(gm_store_open(path, &st, NULL), GM_OK);
    gm_session *s = make_session("meta");
    /* What gpumon record attaches before it begins the stored session. */
    gm_session_attach(s, "provider", json_string("nvml"));
    gm_session_attach(s, "driver_version", json_string("550.54.15"));
    gm_session_attach(s, "hostname", json_string("node-7"));
    assert_int_equal(gm_store_session_begin(st, s, NULL), GM_OK);
    /* Known only at the end: not there when the process dies first. */
    gm_session_attach(s, "audit", json_true());
    snprintf(sql, sizeof sql, "UPDATE sessions SET owner_pid = %d WHERE id = '%s'", (int)dead_pid(),
             gm_session_id(s));
    raw_sql(path, sql);

    for (int timeline = 0; timeline < 2; timeline++) {
        json_t *doc = NULL;
        assert_int_equal(load_doc(st, gm_session_id(s), timeline, &doc, NULL), GM_OK);
        assert_string_equal(json_string_value(json_object_get(doc, "status")), "interrupted");
        assert_string_equal(json_string_value(json_object_get(doc, "provider")), "nvml");
        assert_string_equal(json_string_value(json_object_get(doc, "driver_version")), "550.54.15");
        assert_string_equal(json_string_value(json_object_get(doc, "hostname")), "node-7");
        assert_null(json_object_get(doc, "audit"));
        assert_int_equal(json_integer_value(json_object_get(doc, "sample_count")), 3);
        json_decref(doc);
    }
    /* A session with nothing attached stores no metadata and reads back without it. */
    gm_session *bare = make_session(NULL);
    gm_session_restore(bare, "bare-session", gm_session_started_ms(bare), 0);
    assert_int_equal(gm_store_session_begin(st, bare, NULL), GM_OK);
    json_t *doc = NULL;
    assert_int_equal(load_doc(st, "bare-session", false, &doc, NULL), GM_OK);
    assert_null(json_object_get(doc, "provider"));
    json_decref(doc);
    gm_session_free(bare);
    gm_session_free(s);
    gm_store_close(st);
}

static void test_migrates_version_1(void **state)
{
    char path[512];
    db_path(path, sizeof path, "v1.db");
    gm_store *st = NULL;
    assert_int_equal(gm_store_open(path, &st, NULL), GM_OK);
    gm_session *s = make_session("old");
    assert_int_equal(gm_store_session_begin(st, s, NULL), GM_OK);
    gm_store_close(st);
    /* Back to a version 1 file, as an older gpumon left it, with a session in it. */
    raw_sql(path, "DROP TABLE bench_points; ALTER TABLE sessions DROP COLUMN meta; "
                  "PRAGMA user_version = 1");
    assert_int_equal(gm_store_open(path, &st, NULL), GM_OK);
    assert_int_equal(gm_store_schema_version(st), GM_STORE_SCHEMA_VERSION);
    json_t *doc = NULL;
    assert_int_equal(load_doc(st, gm_session_id(s), true, &doc, NULL), GM_OK);
    assert_int_equal(json_array_size(json_object_get(doc, "timeline")), 3);
    json_decref(doc);
    gm_session_free(s);
    gm_store_close(st);
}

/* ---- benchmarks ----------------------------------------------------------------------- */

static json_t *bench_doc(const char *id)
{
    return json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:s, s:[{s:i, s:i, s:i, s:f, s:{s:f, s:f}, s:f, s:b, s:n},"
        " {s:f, s:i, s:i, s:f, s:{s:f, s:f}, s:n, s:b, s:n}]}",
        "id", id, "kind", "bench", "label", "vllm", "url", "http://h:8000", "model", "m", "api",
        "chat", "points", "concurrency", 8, "requests", 100, "completed", 99, "requests_per_s", 9.5,
        "ttft_ms", "p50", 40.0, "p99", 80.5, "energy_j", 1234.5, "valid", 1,
        "goodput_requests_per_s", "request_rate", 2.5, "requests", 10, "completed", 10,
        "requests_per_s", 2.4, "ttft_ms", "p50", 30.0, "p99", 31.0, "energy_j", "valid", 0,
        "joules_per_request");
}

static void test_benchmarks(void **state)
{
    char path[512];
    db_path(path, sizeof path, "bench.db");
    gm_store *st = NULL;
    gm_error err = {0};
    assert_int_equal(gm_store_open(path, &st, NULL), GM_OK);
    json_t *doc = bench_doc("20261126-010203-abcdef");
    json_t *cmd = json_pack("[s, s, s]", "gpumon", "bench", "--url=http://h:8000");
    assert_int_equal(gm_store_put_bench(st, doc, cmd, 1000, 61000, 42, &err), GM_OK);
    assert_int_equal(gm_store_put_bench(st, doc, cmd, 1000, 61000, 42, &err), GM_EEXIST);
    json_t *bad = json_pack("{s:s}", "id", "x");
    assert_int_equal(gm_store_put_bench(st, bad, NULL, 0, 0, 0, &err), GM_EINVAL);
    json_decref(bad);
    json_t *snap = json_pack("{s:s}", "kind", "gpumon-snapshot");
    assert_int_equal(gm_store_put_document(st, "snapshot", "snap-1", NULL, snap, NULL), GM_OK);
    json_decref(snap);

    /* The list of history shows it, with its command and its GPU samples. */
    gm_store_entry *e = NULL;
    size_t n = 0;
    assert_int_equal(gm_store_list(st, 0, &e, &n, NULL), GM_OK);
    assert_int_equal(n, 2);
    gm_store_entry *b = strcmp(e[0].kind, "bench") == 0 ? &e[0] : &e[1];
    assert_string_equal(b->kind, "bench");
    assert_string_equal(b->label, "vllm");
    assert_string_equal(b->status, "stopped");
    assert_string_equal(b->command, "gpumon bench --url=http://h:8000");
    assert_float_equal(b->duration_s, 60, 1e-9);
    assert_int_equal(b->samples, 42);
    free(e);

    /* The document comes back as it went in. */
    json_t *got = NULL;
    assert_int_equal(gm_store_load(st, "20261126-010203-abcdef", &got, NULL), GM_OK);
    assert_true(json_equal(got, doc));
    json_decref(got);

    /* The benchmarks only, with their points' headline figures. */
    json_t *list = NULL;
    assert_int_equal(gm_store_bench_list(st, 10, &list, &err), GM_OK);
    assert_int_equal(json_array_size(list), 1);
    json_t *l0 = json_array_get(list, 0);
    assert_string_equal(json_string_value(json_object_get(l0, "id")), "20261126-010203-abcdef");
    assert_string_equal(json_string_value(json_object_get(l0, "model")), "m");
    assert_string_equal(json_string_value(json_object_get(l0, "api")), "chat");
    json_t *pts = json_object_get(l0, "points");
    assert_int_equal(json_array_size(pts), 2);
    json_t *p0 = json_array_get(pts, 0), *p1 = json_array_get(pts, 1);
    assert_string_equal(json_string_value(json_object_get(p0, "load")), "concurrency 8");
    assert_int_equal(json_integer_value(json_object_get(p0, "concurrency")), 8);
    assert_float_equal(json_real_value(json_object_get(p0, "ttft_p99_ms")), 80.5, 1e-12);
    assert_true(json_is_true(json_object_get(p0, "valid")));
    assert_true(json_is_null(json_object_get(p0, "goodput_requests_per_s")));
    assert_string_equal(json_string_value(json_object_get(p1, "load")), "rate 2.5/s");
    assert_true(json_is_null(json_object_get(p1, "concurrency")));
    assert_true(json_is_false(json_object_get(p1, "valid")));
    json_decref(list);

    /* CSV: a header and a line per point, empty where absent. */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_int_equal(gm_store_bench_csv(st, "20261126-010203-abcdef", f, &err), GM_OK);
    fclose(f);
    check_eq(strncmp(text, "point,load,concurrency,request_rate,requests,completed,", 55), 0);
    assert_non_null(strstr(text, "\n0,concurrency 8,8,,100,99,,,9.5,"));
    assert_non_null(strstr(text, "\n1,rate 2.5/s,,2.5,10,10,,,2.4,"));
    assert_non_null(strstr(text, ",1234.5,,,,,,,1,"));
    /* From the document: every statistic of a distribution, not only p50 and p99. */
    assert_non_null(strstr(text, ",ttft_p90_ms,ttft_p95_ms,"));
    free(text);

    /* Deleting it takes its points. */
    assert_int_equal(gm_store_session_delete(st, "20261126-010203-abcdef", NULL), GM_OK);
    assert_int_equal(gm_store_bench_list(st, 0, &list, &err), GM_OK);
    assert_int_equal(json_array_size(list), 0);
    json_decref(list);
    gm_store_close(st);
    sqlite3 *db;
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM bench_points", -1, &q, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(q, 0), 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    json_decref(doc);
    json_decref(cmd);
}

static void test_benchmarks_in_an_older_database(void **state)
{
    char path[512];
    db_path(path, sizeof path, "old-bench.db");
    gm_store *st = NULL;
    gm_error err = {0};
    assert_int_equal(gm_store_open(path, &st, NULL), GM_OK);
    gm_store_close(st);
    raw_sql(path, "DROP TABLE bench_points; PRAGMA user_version = 2");
    /* A reader of a version 2 file: no benchmarks, no failure. */
    assert_int_equal(gm_store_open_readonly(path, &st, &err), GM_OK);
    json_t *list = NULL;
    assert_int_equal(gm_store_bench_list(st, 0, &list, &err), GM_OK);
    assert_int_equal(json_array_size(list), 0);
    json_decref(list);
    json_t *doc = bench_doc("b1");
    assert_int_equal(gm_store_put_bench(st, doc, NULL, 0, 0, 0, &err), GM_ESTATE);
    gm_store_close(st);
    /* A writer upgrades it. */
    assert_int_equal(gm_store_open(path, &st, NULL), GM_OK);
    assert_int_equal(gm_store_put_bench(st, doc, NULL, 0, 0, 0, &err), GM_OK);
    json_decref(doc);
    gm_store_close(st);
}

/* ---- the daemon's session worker over the store ------------------------------------------ */

static void wait_done(gm_worker_job *j)
{
    for (int i = 0; i < 10000 && !gm_worker_job_done(j); i++) {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    assert_true(gm_worker_job_done(j));
}

/* Runs one request through the worker; returns the answer's JSON (NULL for 204). */
static json_t *ask(gm_worker *m, gm_worker_job *j, int want_status)
{
    gm_worker_submit(m, j);
    wait_done(j);
    assert_int_equal(j->status, want_status);
    json_t *doc = j->body ? json_loads(j->body, 0, NULL) : NULL;
    gm_worker_job_free(j);
    return doc;
}

static json_t *ask_id(gm_worker *m, gm_session_op op, const char *id, bool timeline,
                      int want_status)
{
    gm_worker_job *j = gm_worker_job_new(op);
    assert_non_null(j);
    snprintf(j->id, sizeof j->id, "%s", id);
    j->timeline = timeline;
    return ask(m, j, want_status);
}

/* Feeds samples from..to-1 of a session on GPUs 0 and 1, 100 ms apart, GPU 0's utilization
 * 10 * (k + 1). */
static void feed_samples(gm_worker *m, int from, int to)
{
    gm_snapshot *snap = gm_snapshot_new();
    for (int k = from; k < to; k++) {
        gm_snapshot_reset(snap);
        snap->mono_ms = 1000 + 100 * k;
        snap->time_ms = 1000 + 100 * k;
        snap->gpu_count = 2;
        for (unsigned g = 0; g < 2; g++) {
            snap->gpus[g].index = g;
            snprintf(snap->gpus[g].name, sizeof snap->gpus[g].name, "GPU %u", g);
            gm_gpu_set(&snap->gpus[g], GM_M_UTIL_GPU_PCT, g == 0 ? 10.0 * (k + 1) : 5);
            gm_gpu_set(&snap->gpus[g], GM_M_POWER_MW, 100000);
        }
        gm_worker_feed(m, snap);
    }
    gm_snapshot_free(snap);
}

/* Starts a session on GPUs 0 and 1 every poll, then feeds it n samples 100 ms apart with
 * GPU 0's utilization 10, 20, ... Returns its id in id. */
static void run_session(gm_worker *m, int n, char *id)
{
    gm_worker_job *j = gm_worker_job_new(GM_JOB_CREATE);
    unsigned idx[] = {0, 1};
    assert_int_equal(gm_session_new("worker", idx, 2, 0.1, &j->session, NULL), GM_OK);
    snprintf(id, GM_SESSION_ID_LEN, "%s", gm_session_id(j->session));
    j->create.every = 1;
    j->created_mono_ms = 1;
    json_t *doc = ask(m, j, 201);
    json_decref(doc);
    feed_samples(m, 0, n);
}

/* Readers open read-only: nothing created, no WAL switch, no migration, and SQLite itself
 * refuses a write through that connection. (The tests run as root, whom file permissions do
 * not stop: tests/cli/test_history_readonly.py reads an unwritable database as nobody.) */
static void test_reader_opens_read_only(void **state)
{
    char path[512], mode[16];
    db_path(path, sizeof path, "reader/gpumon.db");
    gm_store *st = NULL;
    gm_error err = {0};
    assert_int_equal(gm_store_open_readonly(path, &st, &err), GM_ENOENT);
    assert_null(st);
    assert_non_null(strstr(err.msg, "no database at"));
    assert_non_null(strstr(err.msg, "reader/gpumon.db"));
    db_path(path, sizeof path, "reader");
    assert_int_equal(access(path, F_OK), -1); /* not even its directory */

    /* A version 1 file in rollback-journal mode, as an older gpumon could leave it. */
    db_path(path, sizeof path, "reader.db");
    assert_int_equal(gm_store_open(path, &st, NULL), GM_OK);
    gm_session *s = make_session("old");
    assert_int_equal(gm_store_session_begin(st, s, NULL), GM_OK);
    gm_store_close(st);
    raw_sql(path, "PRAGMA journal_mode=DELETE; ALTER TABLE sessions DROP COLUMN meta; "
                  "PRAGMA user_version = 1");

    assert_int_equal(gm_store_open_readonly(path, &st, &err), GM_OK);
    assert_int_equal(gm_store_schema_version(st), 1);                            /* no migration */
    assert_string_equal(gm_store_journal_mode(st, mode, sizeof mode), "delete"); /* no WAL */
    gm_store_entry *v = NULL;
    size_t n = 0;
    assert_int_equal(gm_store_list(st, 0, &v, &n, NULL), GM_OK);
    assert_int_equal(n, 1);
    free(v);
    json_t *doc = NULL;
    assert_int_equal(load_doc(st, gm_session_id(s), true, &doc, &err), GM_OK);
    assert_int_equal(json_array_size(json_object_get(doc, "timeline")), 3);
    json_decref(doc);
    /* A write is refused by SQLite (SQLITE_READONLY), not merely not attempted. */
    json_t *snap = json_pack("{s:s}", "kind", "gpumon-snapshot");
    assert_int_equal(gm_store_put_document(st, "snapshot", "snap-1", NULL, snap, &err), GM_EIO);
    assert_non_null(strstr(err.msg, "attempt to write a readonly database"));
    double vals[2 * GM_SM__COUNT];
    for (int m = 0; m < 2 * GM_SM__COUNT; m++)
        vals[m] = 1;
    assert_int_equal(gm_store_session_sample_values(st, s, 3, 1.5, vals, &err), GM_EIO);
    assert_non_null(strstr(err.msg, "readonly"));
    json_decref(snap);
    gm_store_close(st);
    assert_int_equal(count_rows(path, "sessions", "id", "snap-1"), 0);

    /* What a reader cannot read says why. */
    raw_sql(path, "PRAGMA user_version = 99");
    assert_int_equal(gm_store_open_readonly(path, &st, &err), GM_ESTATE);
    assert_non_null(strstr(err.msg, "schema version 99"));
    db_path(path, sizeof path, "reader-empty.db");
    FILE *f = fopen(path, "w");
    fclose(f);
    assert_int_equal(gm_store_open_readonly(path, &st, &err), GM_ESTATE);
    assert_non_null(strstr(err.msg, "holds no gpumon data"));
    gm_session_free(s);
}

/* A full disk, for real: with RLIMIT_FSIZE at 0 every write(2) to a file fails (EFBIG), which
 * SQLite reports as an I/O error at the write, the path ENOSPC (SQLITE_FULL) takes as well.
 * SIGXFSZ is ignored in main(), so the write fails instead of killing the process. */
static struct rlimit fsize_before;

static void disk_full(void)
{
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &fsize_before), 0);
    struct rlimit full = {0, fsize_before.rlim_max};
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &full), 0);
}

static void disk_space_back(void)
{
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &fsize_before), 0);
}

/* A write that failed on a full disk leaves the connection usable once space returns. */
static void test_write_after_disk_full(void **state)
{
    char path[512];
    db_path(path, sizeof path, "full-store.db");
    gm_store *st = NULL;
    gm_error err = {0};
    assert_int_equal(gm_store_open(path, &st, NULL), GM_OK);
    gm_session *s = make_session("full");
    assert_int_equal(gm_store_session_begin(st, s, NULL), GM_OK);
    double v[2 * GM_SM__COUNT];
    for (int m = 0; m < 2 * GM_SM__COUNT; m++)
        v[m] = 3;
    disk_full();
    int rc = gm_store_session_sample_values(st, s, 3, 1.5, v, &err);
    disk_space_back();
    assert_int_equal(rc, GM_EIO);
    assert_int_equal(gm_store_session_sample_values(st, s, 3, 1.5, v, &err), GM_OK);
    assert_int_equal(gm_store_session_end(st, s, &err), GM_OK);
    gm_store_close(st);
    assert_int_equal(count_rows(path, "samples", "session_id", gm_session_id(s)), 8);
    gm_session_free(s);
}

/* GETs session id until its "persisted" is want (10 s at most); returns the document. */
static json_t *wait_persisted(gm_worker *m, const char *id, bool want)
{
    for (int i = 0; i < 1000; i++) {
        json_t *doc = ask_id(m, GM_JOB_GET, id, true, 200);
        if (json_is_true(json_object_get(doc, "persisted")) == want)
            return doc;
        json_decref(doc);
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    fail_msg("session %s: persisted never became %s", id, want ? "true" : "false");
    return NULL;
}

/* The disk fills mid-session and the session is stopped while it is full: the worker keeps
 * every sample (past its in-memory timeline too) and stores the whole session once space
 * returns, instead of leaving one "interrupted" with the samples written before. */
static void test_daemon_store_retried_after_disk_full(void **state)
{
    char path[512], id[GM_SESSION_ID_LEN];
    db_path(path, sizeof path, "daemon-full.db");
    /* 6 values for 2 GPUs: 3 samples in the timeline, later ones streamed. */
    gm_worker_options opt = {.db_path = path, .poll_ms = 100, .timeline_max_values = 6};
    gm_worker *m = NULL;
    assert_int_equal(gm_worker_start(&opt, &m, NULL), GM_OK);
    run_session(m, 2, id);
    json_t *doc = wait_persisted(m, id, true);
    json_decref(doc);
    assert_int_equal(count_rows(path, "samples", "session_id", id), 4);

    disk_full();
    feed_samples(m, 2, 8);
    doc = ask_id(m, GM_JOB_STOP, id, false, 200);
    assert_false(json_is_true(json_object_get(doc, "persisted")));
    assert_int_equal(json_integer_value(json_object_get(doc, "sample_count")), 8);
    json_decref(doc);
    doc = ask_id(m, GM_JOB_GET, id, false, 200); /* still in memory, still behind */
    assert_string_equal(json_string_value(json_object_get(doc, "status")), "stopped");
    assert_false(json_is_true(json_object_get(doc, "persisted")));
    json_decref(doc);
    assert_int_equal(count_rows(path, "samples", "session_id", id), 4);

    /* Space returns: written without any new sample or request to trigger it. */
    disk_space_back();
    doc = wait_persisted(m, id, true);
    assert_string_equal(json_string_value(json_object_get(doc, "status")), "stopped");
    assert_int_equal(json_integer_value(json_object_get(doc, "sample_count")), 8);
    assert_true(json_is_false(json_object_get(doc, "timeline_truncated")));
    const json_t *tl = json_object_get(doc, "timeline");
    assert_int_equal(json_array_size(tl), 8);
    for (size_t k = 0; k < 8; k++)
        assert_float_equal(json_number_value(json_object_get(
                               json_object_get(json_object_get(json_array_get(tl, k), "gpus"), "0"),
                               "utilization")),
                           10.0 * (double)(k + 1), 1e-12);
    json_decref(doc);
    assert_int_equal(count_rows(path, "samples", "session_id", id), 16);
    gm_worker_free(m);

    /* And a daemon reading it later sees it whole and stopped, not interrupted. */
    gm_store *st = NULL;
    assert_int_equal(gm_store_open_readonly(path, &st, NULL), GM_OK);
    gm_store_entry *e = NULL;
    size_t n = 0;
    assert_int_equal(gm_store_list(st, 0, &e, &n, NULL), GM_OK);
    assert_int_equal(n, 1);
    assert_string_equal(e[0].status, "stopped");
    assert_int_equal(e[0].samples, 8);
    free(e);
    gm_store_close(st);
}

/* Memory for samples the store has not taken yet is bounded: past the bound the worker stops
 * trying, keeps the session in memory, and removes the partial copy once it can. */
static void test_daemon_gives_up_past_the_pending_bound(void **state)
{
    char path[512], id[GM_SESSION_ID_LEN];
    db_path(path, sizeof path, "daemon-full-bound.db");
    /* 3 samples in the timeline, 2 more (4 values) waiting for the store. */
    gm_worker_options opt = {
        .db_path = path, .poll_ms = 100, .timeline_max_values = 6, .pending_max_values = 4};
    gm_worker *m = NULL;
    assert_int_equal(gm_worker_start(&opt, &m, NULL), GM_OK);
    run_session(m, 2, id);
    json_decref(wait_persisted(m, id, true));

    disk_full();
    feed_samples(m, 2, 8); /* samples 3..7 do not fit: 10 values */
    json_t *doc = ask_id(m, GM_JOB_STOP, id, false, 200);
    json_decref(doc);
    disk_space_back();
    for (int i = 0; i < 1000 && count_rows(path, "sessions", "id", id) != 0; i++) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(count_rows(path, "sessions", "id", id), 0);
    assert_int_equal(count_rows(path, "samples", "session_id", id), 0);
    /* Memory still has it, complete in its statistics, truncated in its timeline. */
    doc = ask_id(m, GM_JOB_GET, id, true, 200);
    assert_false(json_is_true(json_object_get(doc, "persisted")));
    assert_int_equal(json_integer_value(json_object_get(doc, "sample_count")), 8);
    assert_true(json_is_true(json_object_get(doc, "timeline_truncated")));
    json_decref(doc);
    gm_worker_free(m);
}

static void test_daemon_session_streams_past_its_limit(void **state)
{
    char path[512], id[GM_SESSION_ID_LEN];
    db_path(path, sizeof path, "daemon.db");
    /* 6 values for 2 GPUs: 3 samples in memory. */
    gm_worker_options opt = {.db_path = path, .poll_ms = 100, .timeline_max_values = 6};
    gm_worker *m = NULL;
    assert_int_equal(gm_worker_start(&opt, &m, NULL), GM_OK);
    run_session(m, 8, id);

    /* Still running past the limit (no "sample_limit" stop), every sample counted. The GET
     * comes after the samples in the worker's queue, so all 8 are in. */
    json_t *doc = ask_id(m, GM_JOB_GET, id, true, 200);
    assert_string_equal(json_string_value(json_object_get(doc, "status")), "running");
    assert_int_equal(json_integer_value(json_object_get(doc, "sample_count")), 8);
    assert_int_equal(json_integer_value(json_object_get(doc, "percentiles_over_samples")), 3);
    /* The timeline comes from the store, which has them all. */
    assert_true(json_is_false(json_object_get(doc, "timeline_truncated")));
    const json_t *tl = json_object_get(doc, "timeline");
    assert_int_equal(json_array_size(tl), 8);
    assert_float_equal(
        json_number_value(json_object_get(
            json_object_get(json_object_get(json_array_get(tl, 7), "gpus"), "0"), "utilization")),
        80, 1e-12);
    const json_t *u =
        json_object_get(json_object_get(json_object_get(doc, "gpu_stats"), "0"), "utilization");
    assert_float_equal(json_number_value(json_object_get(u, "max")), 80, 1e-12);
    assert_float_equal(json_number_value(json_object_get(u, "mean")), 45, 1e-12);
    assert_float_equal(json_number_value(json_object_get(u, "p50")), 20, 1e-12);
    json_decref(doc);

    doc = ask_id(m, GM_JOB_STOP, id, false, 200);
    assert_string_equal(json_string_value(json_object_get(doc, "stop_reason")), "request");
    assert_int_equal(json_integer_value(json_object_get(doc, "sample_count")), 8);
    json_decref(doc);
    assert_int_equal(count_rows(path, "samples", "session_id", id), 16);

    /* DELETE goes through the store's own call: session and samples gone. */
    assert_null(ask_id(m, GM_JOB_DELETE, id, false, 204));
    assert_int_equal(count_rows(path, "sessions", "id", id), 0);
    assert_int_equal(count_rows(path, "samples", "session_id", id), 0);
    json_decref(ask_id(m, GM_JOB_DELETE, id, false, 404));
    gm_worker_free(m);
}

/* The daemon reads what gpumon bench stored: GET /api/benchmarks and /api/benchmarks/{id}. */
static void test_daemon_reads_benchmarks(void **state)
{
    char path[512], sid[GM_SESSION_ID_LEN];
    db_path(path, sizeof path, "daemon-bench.db");
    gm_worker_options opt = {.db_path = path, .poll_ms = 100};
    gm_worker *m = NULL;
    assert_int_equal(gm_worker_start(&opt, &m, NULL), GM_OK);
    /* No database yet: an empty list, no error. */
    gm_worker_job *j = gm_worker_job_new(GM_JOB_BENCH_LIST);
    j->limit = 10;
    json_t *doc = ask(m, j, 200);
    assert_int_equal(json_array_size(json_object_get(doc, "benchmarks")), 0);
    assert_true(json_is_null(json_object_get(doc, "store_error")));
    json_decref(doc);
    json_decref(ask_id(m, GM_JOB_BENCH_GET, "b1", false, 404));
    /* A session of the daemon's own, then a benchmark from another process. */
    run_session(m, 2, sid);
    json_decref(wait_persisted(m, sid, true));
    gm_store *st = NULL;
    assert_int_equal(gm_store_open(path, &st, NULL), GM_OK);
    json_t *b = bench_doc("20261126-000000-bbbbbb");
    assert_int_equal(gm_store_put_bench(st, b, NULL, 5000, 6000, 0, NULL), GM_OK);
    gm_store_close(st);
    j = gm_worker_job_new(GM_JOB_BENCH_LIST);
    j->limit = 10;
    doc = ask(m, j, 200);
    json_t *list = json_object_get(doc, "benchmarks");
    assert_int_equal(json_array_size(list), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "id")),
                        "20261126-000000-bbbbbb");
    json_decref(doc);
    doc = ask_id(m, GM_JOB_BENCH_GET, "20261126-000000-bbbbbb", false, 200);
    assert_true(json_equal(doc, b));
    json_decref(doc);
    /* A session is not a benchmark. */
    doc = ask_id(m, GM_JOB_BENCH_GET, sid, false, 404);
    assert_non_null(strstr(json_string_value(json_object_get(doc, "error")), "not a benchmark"));
    json_decref(doc);
    json_decref(ask_id(m, GM_JOB_BENCH_GET, "nope", false, 404));
    json_decref(b);
    gm_worker_stop(m);
    gm_worker_free(m);
}

static void test_daemon_memory_only_session_is_truncated(void **state)
{
    char id[GM_SESSION_ID_LEN];
    gm_worker_options opt = {.poll_ms = 100, .timeline_max_values = 6};
    gm_worker *m = NULL;
    assert_int_equal(gm_worker_start(&opt, &m, NULL), GM_OK);
    run_session(m, 5, id);
    json_t *doc = ask_id(m, GM_JOB_STOP, id, false, 200);
    json_decref(doc);
    /* Nothing else has the samples past the limit: the timeline says it is cut short. */
    doc = ask_id(m, GM_JOB_GET, id, true, 200);
    assert_false(json_is_true(json_object_get(doc, "persisted")));
    assert_int_equal(json_integer_value(json_object_get(doc, "sample_count")), 5);
    assert_true(json_is_true(json_object_get(doc, "timeline_truncated")));
    assert_int_equal(json_integer_value(json_object_get(doc, "percentiles_over_samples")), 3);
    assert_int_equal(json_array_size(json_object_get(doc, "timeline")), 3);
    json_decref(doc);
    gm_worker_free(m);
}

static void test_default_path(void **state)
{
    char buf[512];
    setenv("GPU_MONITOR_DB", "/x/y.db", 1);
    assert_int_equal(gm_store_default_path(buf, sizeof buf, NULL), GM_OK);
    assert_string_equal(buf, "/x/y.db");
    unsetenv("GPU_MONITOR_DB");
    setenv("XDG_STATE_HOME", "/state", 1);
    assert_int_equal(gm_store_default_path(buf, sizeof buf, NULL), GM_OK);
    assert_string_equal(buf, "/state/gpumon/gpumon.db");
    unsetenv("XDG_STATE_HOME");
    setenv("HOME", "/home/u", 1);
    assert_int_equal(gm_store_default_path(buf, sizeof buf, NULL), GM_OK);
    assert_string_equal(buf, "/home/u/.local/state/gpumon/gpumon.db");
    unsetenv("HOME");
    assert_int_equal(gm_store_default_path(buf, sizeof buf, NULL), GM_ENOENT);
}

/* An incomplete end the database cannot take leaves the session as it was: nothing may then
 * say it is stored as incomplete. */
static void test_incomplete_not_written_leaves_session(void **state)
{
    (void)state;
    char path[512];
    db_path(path, sizeof path, "incomplete-ro.db");
    gm_store *st = NULL;
    assert_int_equal(gm_store_open(path, &st, NULL), GM_OK);
    gm_session *s = make_session("partial");
    assert_int_equal(gm_store_session_begin(st, s, NULL), GM_OK);
    gm_store_close(st);
    gm_session_set_exit(s, 0, 0);
    gm_session_finish(s);
    assert_int_equal(gm_store_open_readonly(path, &st, NULL), GM_OK);
    gm_error err = {0};
    assert_int_equal(gm_store_session_end_incomplete(st, s, 1, "disk full", &err), GM_EIO);
    assert_null(json_object_get(gm_session_attached(s), "incomplete"));
    json_t *doc = gm_session_to_json(s);
    assert_null(json_object_get(doc, "incomplete"));
    json_decref(doc);
    gm_store_close(st);
    gm_session_free(s);
}

/* The body of test_space_guard_on_a_full_disk, in a child with its own mount namespace:
 * 0 when all holds, else the number of the check that failed. */
static int full_disk_child(const char *mnt)
{
    if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
        mount("tmpfs", mnt, "tmpfs", 0, "size=24m") < 0) {
        fprintf(stderr, "mounting a tmpfs in a private mount namespace cannot run here: %s\n",
                strerror(errno));
        return 77;
    }
    char path[600], fill[600];
    snprintf(path, sizeof path, "%s/gpumon.db", mnt);
    snprintf(fill, sizeof fill, "%s/fill", mnt);
    gm_store *st = NULL;
    gm_error err = {0};
    if (gm_store_open(path, &st, NULL) != GM_OK)
        return 1;
    if (gm_store_guard_space(st, &err) != GM_OK || !gm_store_space_held(st))
        return 2;
    gm_session *s = make_session("full");
    if (gm_store_session_begin(st, s, NULL) != GM_OK)
        return 3;
    /* Another program takes every byte left. */
    int fd = open(fill, O_WRONLY | O_CREAT, 0600);
    static char block[65536];
    while (fd >= 0 && write(fd, block, sizeof block) > 0)
        ;
    if (fd < 0 || errno != ENOSPC)
        return 4;
    close(fd);
    double t;
    const double *v;
    if (gm_session_last(s, &t, &v) != GM_OK)
        return 5;
    char want[700];
    snprintf(want, sizeof want, "disk full: 0 MiB free on %s, less than the 8 MiB reserve", mnt);
    if (gm_store_session_sample_values(st, s, 3, t + 0.5, v, &err) != GM_EIO ||
        strcmp(err.msg, want) != 0)
        return 6;
    gm_session_set_exit(s, 0, 0);
    gm_session_finish(s);
    /* The end still fits: the held space is spent on it. */
    if (gm_store_session_end_incomplete(st, s, 3, err.msg, NULL) != GM_OK ||
        gm_store_space_held(st))
        return 7;
    gm_store_close(st);
    gm_store_entry *e = NULL;
    size_t n = 0;
    if (gm_store_open_readonly(path, &st, NULL) != GM_OK ||
        gm_store_list(st, 0, &e, &n, NULL) != GM_OK || n != 1 ||
        strcmp(e[0].status, "incomplete") != 0 || e[0].samples != 3)
        return 8;
    free(e);
    gm_store_close(st);
    gm_session_free(s);
    return 0;
}

/* A disk filled to the last byte by someone else: samples are refused with the reason, and the
 * incomplete end is still written with the space held since the guard was set. */
static void test_space_guard_on_a_full_disk(void **state)
{
    (void)state;
    char mnt[512];
    db_path(mnt, sizeof mnt, "full");
    assert_int_equal(mkdir(mnt, 0700), 0);
    fflush(NULL);
    pid_t pid = fork();
    check_ge(pid, 0);
    if (pid == 0)
        _exit(full_disk_child(mnt));
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) == 77)
        skip();
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* The guard on a disk with room: the session goes in, and the held space is an unnamed file
 * that a command gpumon runs does not inherit (O_CLOEXEC). */
static void test_space_guard_with_room(void **state)
{
    (void)state;
    char path[512];
    db_path(path, sizeof path, "guarded.db");
    gm_store *st = NULL;
    assert_int_equal(gm_store_open(path, &st, NULL), GM_OK);
    assert_int_equal(gm_store_guard_space(st, NULL), GM_OK);
    assert_true(gm_store_space_held(st));
    gm_session *s = make_session("room");
    assert_int_equal(gm_store_session_begin(st, s, NULL), GM_OK);
    gm_session_set_exit(s, 0, 0);
    gm_session_finish(s);
    assert_int_equal(gm_store_session_end(st, s, NULL), GM_OK);
    /* Room enough: the end did not need the held space. */
    assert_true(gm_store_space_held(st));
    /* Held by this process as an unnamed file ("DIR/#INODE (deleted)"), not by a child. */
    char cmd[700];
    snprintf(cmd, sizeof cmd,
             "ls -l /proc/%d/fd | grep -q '%s/#' || exit 2; "
             "ls -l /proc/$$/fd | grep -q '%s/#' && exit 1; exit 0",
             (int)getpid(), tmpdir, tmpdir);
    assert_int_equal(system(cmd), 0);
    gm_store_close(st);
    gm_session_free(s);
}

/* A run that ended normally while the database could take only some samples (a full disk):
 * it reads back as incomplete, with what it lacks, never as interrupted. */
static void test_incomplete_session(void **state)
{
    (void)state;
    char path[512];
    db_path(path, sizeof path, "incomplete.db");
    gm_store *st = NULL;
    assert_int_equal(gm_store_open(path, &st, NULL), GM_OK);
    gm_session *s = make_session("partial");
    assert_int_equal(gm_store_session_begin(st, s, NULL), GM_OK);
    size_t stored = gm_session_sample_count(s);
    double v[2 * GM_SM__COUNT];
    for (int m = 0; m < 2 * GM_SM__COUNT; m++)
        v[m] = NAN;
    /* Two samples the database never got. */
    assert_int_equal(gm_session_add_values(s, 1.5, v, NULL), GM_OK);
    assert_int_equal(gm_session_add_values(s, 2.5, v, NULL), GM_OK);
    gm_session_set_exit(s, 0, 0);
    gm_session_finish(s);
    assert_int_equal(gm_store_session_end_incomplete(st, s, stored, "disk full", NULL), GM_OK);
    gm_store_close(st);

    /* Read back from another process's point of view: not running, not interrupted. */
    assert_int_equal(gm_store_open_readonly(path, &st, NULL), GM_OK);
    gm_store_entry *e = NULL;
    size_t n = 0;
    assert_int_equal(gm_store_list(st, 0, &e, &n, NULL), GM_OK);
    assert_int_equal(n, 1);
    assert_string_equal(e[0].status, "incomplete");
    assert_int_equal(e[0].samples, stored);
    assert_true(e[0].has_exit);
    assert_int_equal(e[0].exit_code, 0);
    free(e);
    json_t *doc = NULL;
    assert_int_equal(load_doc(st, gm_session_id(s), false, &doc, NULL), GM_OK);
    assert_string_equal(json_string_value(json_object_get(doc, "status")), "incomplete");
    json_t *inc = json_object_get(doc, "incomplete");
    assert_int_equal(json_integer_value(json_object_get(inc, "samples_stored")), stored);
    assert_int_equal(json_integer_value(json_object_get(inc, "samples_not_stored")), 2);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    gm_session_print_summary(f, doc);
    fclose(f);
    assert_non_null(strstr(text, ": incomplete, command exited 0"));
    assert_non_null(strstr(text, "incomplete: 2 samples not stored (disk full)"));
    free(text);
    json_decref(doc);
    gm_store_close(st);
    gm_session_free(s);
}

/* A database path that is not a regular file is refused before SQLite opens it: a FIFO would
 * block the open forever, a device would get a journal made beside it. */
static void test_non_regular_database_refused(void **state)
{
    (void)state;
    char path[512];
    db_path(path, sizeof path, "fifo.db");
    assert_int_equal(mkfifo(path, 0600), 0);
    gm_store *st = NULL;
    gm_error err = {0};
    assert_int_equal(gm_store_open(path, &st, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "is a FIFO, not a regular file"));
    assert_int_equal(gm_store_open_readonly(path, &st, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "is a FIFO, not a regular file"));
    unlink(path);
    assert_int_equal(gm_store_open("/dev/null", &st, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "is a character device"));
    assert_int_equal(access("/dev/null-journal", F_OK), -1);
    assert_int_equal(access("/dev/null-wal", F_OK), -1);
    db_path(path, sizeof path, "dangling.db");
    assert_int_equal(symlink("nowhere.db", path), 0);
    assert_int_equal(gm_store_open(path, &st, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "symbolic link to nothing"));
    unlink(path);
}

int main(void)
{
    signal(SIGXFSZ, SIG_IGN); /* see disk_full() */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_migrates_and_wal),
        cmocka_unit_test(test_newer_schema_refused),
        cmocka_unit_test(test_unwritable_path),
        cmocka_unit_test(test_write_read_back),
        cmocka_unit_test(test_interrupted),
        cmocka_unit_test(test_incomplete_session),
        cmocka_unit_test(test_incomplete_not_written_leaves_session),
        cmocka_unit_test(test_space_guard_on_a_full_disk),
        cmocka_unit_test(test_space_guard_with_room),
        cmocka_unit_test(test_non_regular_database_refused),
        cmocka_unit_test(test_equal_times_stay_apart),
        cmocka_unit_test(test_resolve_and_documents),
        cmocka_unit_test(test_two_writers),
        cmocka_unit_test(test_default_path),
        cmocka_unit_test(test_delete),
        cmocka_unit_test(test_prune),
        cmocka_unit_test(test_brief),
        cmocka_unit_test(test_bounded_session_stores_every_sample),
        cmocka_unit_test(test_interrupted_keeps_begin_metadata),
        cmocka_unit_test(test_migrates_version_1),
        cmocka_unit_test(test_benchmarks),
        cmocka_unit_test(test_benchmarks_in_an_older_database),
        cmocka_unit_test(test_reader_opens_read_only),
        cmocka_unit_test(test_write_after_disk_full),
        cmocka_unit_test(test_daemon_session_streams_past_its_limit),
        cmocka_unit_test(test_daemon_memory_only_session_is_truncated),
        cmocka_unit_test(test_daemon_reads_benchmarks),
        cmocka_unit_test(test_daemon_store_retried_after_disk_full),
        cmocka_unit_test(test_daemon_gives_up_past_the_pending_bound),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
