/* answers_sessions.c - what /api/sessions answers: a session's document (from memory while
 * this daemon holds it, else from the store), its timeline and export, the listing, and the
 * answers to create, stop and delete. Run by the session worker on its thread (worker.c
 * dispatches each job here), so reading the store never holds up the event loop. */
#include "server/answers_sessions.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "core/timeline.h"
#include "server/worker_int.h"
#include "store/store.h"
#include "base/error.h"

/* Rows of the store read for one listing: bounds the worker's memory whatever the database
 * holds (gpumon record and run write there too). */
#define LIST_SCAN_MAX 10000

/* The API document of an in-memory session: gm_session_to_json plus status (running/stopped),
 * persisted and samples_dropped. A persisted session's timeline is served from the store,
 * which has every sample, so it is not truncated even past the sample limit. New reference,
 * NULL when out of memory. */
static json_t *entry_doc(const gm_worker_entry *e)
{
    json_t *d = gm_session_to_json(e->s);
    if (!d)
        return NULL;
    json_object_set_new(d, "status", json_string(e->running ? "running" : "stopped"));
    json_object_set_new(d, "persisted", json_boolean(gm_worker_entry_persisted(e)));
    if (gm_worker_entry_persisted(e))
        json_object_set_new(d, "timeline_truncated", json_false());
    json_object_set_new(d, "samples_dropped", json_integer((json_int_t)e->dropped));
    return d;
}

/* API status of a stored status. */
static const char *api_status(const char *stored)
{
    return stored && strcmp(stored, "finished") == 0 ? "stopped" : stored ? stored : "stopped";
}

/* The stored document of id without timeline (status mapped for the API). GM_ENOENT, or the
 * store's error, with err set. */
static int load_stored(gm_worker *m, const char *id, json_t **doc, gm_error *err)
{
    *doc = NULL;
    gm_store *st = gm_worker_store(m, false, err);
    if (!st)
        return err->code == GM_ENOENT ? gm_error_set(err, GM_ENOENT, "no session \"%s\"", id)
                                      : err->code;
    int rc = gm_store_load(st, id, doc, err);
    if (rc < 0)
        return rc == GM_ENOENT ? gm_error_set(err, GM_ENOENT, "no session \"%s\"", id) : rc;
    const char *status = json_string_value(json_object_get(*doc, "status"));
    json_object_set_new(*doc, "status", json_string(api_status(status)));
    json_object_set_new(*doc, "persisted", json_true());
    return GM_OK;
}

/* The stored document of j->id (load_stored), or NULL with j answered 404 or 503. */
static json_t *stored_doc(gm_worker *m, gm_worker_job *j)
{
    json_t *doc;
    gm_error err = {0};
    int rc = load_stored(m, j->id, &doc, &err);
    if (rc < 0) {
        gm_worker_job_error(j, gm_worker_store_status(rc), "%s", err.msg);
        return NULL;
    }
    return doc;
}

/* POST /api/sessions: the session starts here, its clock from the request's arrival. */
void gm_answer_session_create(gm_worker *m, gm_worker_job *j)
{
    gm_worker_entry *e = NULL;
    int rc = gm_worker_entry_start(m, j, &e);
    if (rc == GM_EBUSY)
        gm_worker_job_error(j, 409, "%d sessions are already running: stop one first",
                            GM_WORKER_MAX_RUNNING);
    else if (rc < 0)
        gm_worker_job_error(j, 503, "out of memory");
    else
        gm_worker_job_json(j, 201, entry_doc(e));
}

void gm_answer_session_stop(gm_worker *m, gm_worker_job *j)
{
    gm_worker_entry *e = gm_worker_entry_find(m, j->id);
    if (e && !e->running) {
        gm_worker_job_error(j, 409, "session %s is not running (already stopped)", j->id);
        return;
    }
    if (e) {
        gm_worker_entry_end(m, e, "request", true);
        json_t *doc = entry_doc(e);
        gm_worker_entry_settle(m, e);
        gm_worker_job_json(j, 200, doc);
        return;
    }
    json_t *doc = stored_doc(m, j);
    if (!doc)
        return;
    const char *status = json_string_value(json_object_get(doc, "status"));
    if (status && strcmp(status, "running") == 0)
        gm_worker_job_error(
            j, 409, "session %s is being recorded by another gpumon process: stop it there", j->id);
    else
        gm_worker_job_error(j, 409, "session %s is not running (%s)", j->id,
                            status ? status : "stopped");
    json_decref(doc);
}

void gm_answer_session_delete(gm_worker *m, gm_worker_job *j)
{
    gm_error err = {0};
    gm_worker_entry *e = gm_worker_entry_find(m, j->id);
    if (e) {
        bool in_store = gm_recorder_begun(e->rec);
        if (e->running)
            gm_worker_entry_end(m, e, "deleted", false);
        gm_worker_entry_remove(m, e);
        int rc = in_store && m->has_db ? gm_worker_store_delete(m, j->id, &err) : GM_OK;
        if (rc < 0 && rc != GM_ENOENT)
            gm_worker_log_store_error("cannot delete a stored session", j->id, err.msg);
        gm_worker_log_deleted(m, j->id);
        j->status = 204;
        return;
    }
    json_t *doc = stored_doc(m, j);
    if (!doc)
        return;
    const char *status = json_string_value(json_object_get(doc, "status"));
    bool elsewhere = status && strcmp(status, "running") == 0;
    json_decref(doc);
    if (elsewhere) {
        gm_worker_job_error(
            j, 409, "session %s is being recorded by another gpumon process: stop it there first",
            j->id);
        return;
    }
    int rc = gm_worker_store_delete(m, j->id, &err);
    if (rc < 0) {
        gm_worker_job_error(j, gm_worker_store_status(rc), "%s", err.msg);
        return;
    }
    gm_worker_log_deleted(m, j->id);
    j->status = 204;
}

/* Answers j with doc (stolen) and, when asked, its timeline appended: from memory while the
 * session holds all of it (or the store does not have it), else from the store. */
static void answer_with_timeline(gm_worker *m, gm_worker_job *j, json_t *doc, gm_worker_entry *e,
                                 gm_timeline_format f)
{
    if (e && gm_worker_entry_persisted(e) &&
        gm_session_timeline_count(e->s) < gm_session_sample_count(e->s))
        e = NULL; /* past its sample limit: the store has every sample */
    size_t samples = e ? gm_session_timeline_count(e->s)
                       : (size_t)json_integer_value(json_object_get(doc, "sample_count"));
    size_t ngpus = json_array_size(json_object_get(doc, "gpus"));
    if (!j->timeline) {
        gm_worker_job_json(j, 200, doc);
        return;
    }
    if (samples * (ngpus ? ngpus : 1) > GM_SESSION_TIMELINE_MAX) {
        json_decref(doc);
        gm_worker_job_error(
            j, 413,
            "the timeline of %zu samples x %zu GPU(s) is over the limit of %d values per "
            "response: ask ?timeline=0 for the statistics, or export the samples with "
            "`gpumon history export %s --format csv`",
            samples, ngpus, GM_SESSION_TIMELINE_MAX, j->id);
        return;
    }
    gm_buf b;
    gm_buf_init(&b, 0);
    gm_timeline *tl = NULL;
    gm_error err = {0};
    bool simulated = gm_worker_simulated(doc);
    int rc = f == GM_TIMELINE_CSV ? gm_timeline_open(f, &b, NULL, &tl)
                                  : gm_timeline_open_doc(f, doc, &b, NULL, &tl);
    json_decref(doc);
    if (rc == GM_OK)
        gm_timeline_set_simulated(tl, simulated);
    if (rc == GM_OK && e)
        gm_timeline_add_session(tl, e->s);
    else if (rc == GM_OK && gm_store_timeline(m->st, j->id, tl, &err) < 0) {
        gm_timeline_close(tl, NULL);
        gm_buf_free(&b);
        gm_worker_job_error(j, gm_worker_store_status(err.code), "%s", err.msg);
        return;
    }
    if (rc == GM_OK)
        rc = gm_timeline_close(tl, &err);
    size_t len = 0;
    char *text = rc == GM_OK ? gm_buf_take(&b, &len) : NULL;
    gm_buf_free(&b);
    if (!text) {
        gm_worker_job_error(j, 503, "out of memory rendering the timeline");
        return;
    }
    gm_worker_job_text(j, 200, text, len);
}

void gm_answer_session_get(gm_worker *m, gm_worker_job *j)
{
    gm_worker_entry *e = gm_worker_entry_find(m, j->id);
    if (e) {
        json_t *doc = entry_doc(e);
        if (!doc) {
            gm_worker_job_error(j, 503, "out of memory");
            return;
        }
        answer_with_timeline(m, j, doc, e, GM_TIMELINE_JSON);
        return;
    }
    json_t *doc = stored_doc(m, j);
    if (doc)
        answer_with_timeline(m, j, doc, NULL, GM_TIMELINE_JSON);
}

/* GET /api/sessions/{id}/export: what `gpumon history export ID` writes, as a file to save. A
 * session: its timeline as CSV, or its document with the timeline (JSON, indented); a
 * benchmark: its points as CSV, or its document; another stored document: JSON only. */
void gm_answer_session_export(gm_worker *m, gm_worker_job *j)
{
    gm_worker_entry *e = gm_worker_entry_find(m, j->id);
    json_t *doc = NULL;
    gm_error err = {0};
    int rc = e ? ((doc = entry_doc(e)) ? GM_OK : GM_ENOMEM) : load_stored(m, j->id, &doc, &err);
    if (rc < 0) {
        gm_worker_job_error(j, rc == GM_ENOMEM ? 503 : gm_worker_store_status(rc), "%s",
                            rc == GM_ENOMEM ? "out of memory" : err.msg);
        return;
    }
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    bool bench = kind && strcmp(kind, "bench") == 0;
    /* As gpumon history export writes it: whether the GPUs were simulated, said outright. */
    json_object_set_new(doc, "simulated", json_boolean(gm_worker_simulated(doc)));
    if (json_object_get(doc, "gpu_stats") && !bench) {
        j->timeline = true;
        answer_with_timeline(m, j, doc, e, j->csv ? GM_TIMELINE_CSV : GM_TIMELINE_JSON_PRETTY);
        doc = NULL; /* taken */
    } else if (!j->csv) {
        /* As gpumon history export writes it: indented, 12 digits, a newline at the end. */
        char *text = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
        size_t len = text ? strlen(text) : 0;
        char *nl = text ? realloc(text, len + 2) : NULL;
        if (!nl)
            free(text);
        text = nl;
        if (text) {
            text[len++] = '\n';
            text[len] = '\0';
            gm_worker_job_text(j, 200, text, len);
        } else {
            gm_worker_job_error(j, 503, "out of memory");
        }
    } else if (!bench) {
        gm_worker_job_error(j, 400, "%s is a stored %s document: it exports as JSON (format=json)",
                            j->id, kind ? kind : "plain");
    } else {
        /* The points table, as `gpumon history export ID --format csv` writes it. */
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        gm_store *st = f ? gm_worker_store(m, false, &err) : NULL;
        rc = !f   ? gm_error_set(&err, GM_ENOMEM, "out of memory")
             : st ? gm_store_bench_csv(st, j->id, f, &err)
                  : err.code;
        if (f && fclose(f) != 0 && rc == GM_OK)
            rc = gm_error_set(&err, GM_ENOMEM, "out of memory");
        if (rc < 0) {
            free(text);
            gm_worker_job_error(j, 503, "%s", err.msg);
        } else {
            gm_worker_job_text(j, 200, text, len);
        }
    }
    json_decref(doc);
    if (j->status == 200) {
        j->ctype = j->csv ? "text/csv; charset=utf-8" : "application/json";
        snprintf(j->filename, sizeof j->filename, "gpumon-%s.%s", j->id, j->csv ? "csv" : "json");
    }
}

/* One row of a listing. */
typedef struct row {
    char id[GM_SESSION_ID_LEN];
    char kind[16];
    char label[GM_SESSION_LABEL_MAX + 1];
    const char *status;
    int64_t started_ms;
    double duration_s;
    int64_t samples;
    bool persisted;
    bool simulated;
} row;

static int cmp_row(const void *a, const void *b)
{
    const row *x = a, *y = b;
    if (x->started_ms != y->started_ms)
        return x->started_ms < y->started_ms ? 1 : -1; /* newest first */
    return -strcmp(x->id, y->id);
}

static void row_from_entry(const gm_worker_entry *e, row *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->id, sizeof r->id, "%s", gm_session_id(e->s));
    snprintf(r->kind, sizeof r->kind, "%s", gm_session_kind(e->s));
    snprintf(r->label, sizeof r->label, "%s", gm_session_label(e->s) ? gm_session_label(e->s) : "");
    r->status = e->running ? "running" : "stopped";
    r->started_ms = gm_session_started_ms(e->s);
    r->duration_s = gm_session_duration(e->s);
    r->samples = (int64_t)gm_session_sample_count(e->s);
    r->persisted = gm_worker_entry_persisted(e);
    r->simulated = gm_worker_simulated(gm_session_attached(e->s));
}

/* The figures a listing adds to a row (gm_store_brief's keys): from memory for a session of
 * this daemon, else from the store; NULL when neither can say. */
static json_t *row_brief(gm_worker *m, gm_store *st, const char *id)
{
    gm_worker_entry *e = gm_worker_entry_find(m, id);
    if (!e) {
        json_t *b = NULL;
        return st && gm_store_brief(st, id, &b, NULL) == GM_OK ? b : NULL;
    }
    json_t *b = gm_session_brief(e->s);
    json_t *gpus = json_array();
    for (size_t k = 0; gpus && k < gm_session_gpu_count(e->s); k++) {
        const gm_session_gpu *g = gm_session_gpu_at(e->s, k);
        json_array_append_new(gpus, json_pack("{s:I, s:o}", "index", (json_int_t)g->index, "name",
                                              g->name[0] ? gm_json_str(g->name) : json_null()));
    }
    char command[1024] = "";
    if (gm_session_command(e->s))
        gm_session_command_line(gm_session_command(e->s), command, sizeof command);
    json_t *provider = json_object_get(gm_session_attached(e->s), "provider");
    if (b) {
        json_object_set_new(b, "command", command[0] ? gm_json_str(command) : json_null());
        json_object_set_new(b, "gpus", gpus ? json_incref(gpus) : json_array());
        json_object_set_new(b, "provider",
                            json_is_string(provider) ? json_incref(provider) : json_null());
    }
    json_decref(gpus);
    return b;
}

void gm_answer_session_list(gm_worker *m, gm_worker_job *j)
{
    gm_store_entry *stored = NULL;
    size_t nstored = 0;
    gm_error err = {0};
    const char *store_err = NULL;
    gm_store *st = gm_worker_store(m, false, &err);
    if (st && gm_store_list(st, LIST_SCAN_MAX, &stored, &nstored, &err) < 0) {
        store_err = err.msg;
        nstored = 0;
    } else if (!st && err.code != GM_ENOENT) {
        store_err = err.msg;
    }
    size_t nmem = 0;
    for (gm_worker_entry *e = m->entries; e; e = e->next)
        nmem++;
    row *rows = calloc(nstored + nmem + 1, sizeof *rows);
    if (!rows) {
        free(stored);
        gm_worker_job_error(j, 503, "out of memory");
        return;
    }
    size_t n = 0;
    for (gm_worker_entry *e = m->entries; e; e = e->next)
        row_from_entry(e, &rows[n++]);
    for (size_t i = 0; i < nstored; i++) {
        if (gm_worker_entry_find(m, stored[i].id))
            continue; /* memory has the live numbers */
        row *r = &rows[n++];
        snprintf(r->id, sizeof r->id, "%s", stored[i].id);
        snprintf(r->kind, sizeof r->kind, "%s", stored[i].kind);
        snprintf(r->label, sizeof r->label, "%s", stored[i].label);
        r->status = api_status(stored[i].status);
        r->started_ms = stored[i].started_ms;
        r->duration_s = stored[i].duration_s;
        r->samples = stored[i].samples;
        r->persisted = true;
        r->simulated = stored[i].simulated;
    }
    qsort(rows, n, sizeof *rows, cmp_row);
    json_t *arr = json_array();
    for (size_t i = 0, shown = 0; arr && i < n && shown < j->limit; i++) {
        const row *r = &rows[i];
        if (j->kind[0] && strcmp(j->kind, r->kind) != 0)
            continue;
        char started[40];
        gm_json_time(r->started_ms, started, sizeof started);
        json_t *o = json_pack(
            "{s:s, s:s, s:o, s:s, s:s, s:o, s:I, s:b, s:b}", "id", r->id, "kind", r->kind, "label",
            r->label[0] ? gm_json_str(r->label) : json_null(), "status", r->status, "started_at",
            started, "monitoring_duration_seconds",
            isfinite(r->duration_s) ? json_real(r->duration_s) : json_null(), "sample_count",
            (json_int_t)r->samples, "persisted", r->persisted, "simulated", r->simulated);
        json_t *brief = row_brief(m, st, r->id);
        if (o && brief)
            json_object_update(o, brief);
        json_decref(brief);
        json_array_append_new(arr, o);
        shown++;
    }
    free(rows);
    free(stored);
    json_t *doc =
        arr ? json_pack("{s:o, s:i, s:i, s:b, s:o}", "sessions", arr, "running", (int)m->n_running,
                        "max_running", GM_WORKER_MAX_RUNNING, "stored", m->has_db, "store_error",
                        store_err ? json_string(store_err) : json_null())
            : NULL;
    gm_worker_job_json(j, 200, doc);
}
