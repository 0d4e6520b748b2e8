/* answers_bench.c - what /api/benchmarks and /api/images answer: the benchmarks `gpumon bench`
 * stored (list, one document or its HTML report, a comparison) and the container engine's
 * images. Run by the session worker on its thread, which owns the store, so neither SQLite nor
 * the engine ever holds up the event loop. */
#include "server/answers_bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "core/bench_html.h"
#include "core/bench_report.h"
#include "server/jobs.h"
#include "server/worker_int.h"
#include "store/store.h"

/* GET /api/benchmarks: what `gpumon bench` stored, newest first. Benchmarks are written by
 * other processes; the worker only reads them, from the store it already owns. */
void gm_answer_bench_list(gm_worker *m, gm_worker_job *j)
{
    gm_error err = {0};
    json_t *list = NULL;
    const char *store_err = NULL;
    gm_store *st = gm_worker_store(m, false, &err);
    if (st && gm_store_bench_list(st, j->limit, &list, &err) < 0)
        store_err = err.msg;
    else if (!st && err.code != GM_ENOENT)
        store_err = err.msg;
    json_t *doc =
        json_pack("{s:o, s:b, s:o}", "benchmarks", list ? list : json_array(), "stored", m->has_db,
                  "store_error", store_err ? json_string(store_err) : json_null());
    gm_worker_job_json(j, 200, doc);
}

/* GET /api/benchmarks/compare: the comparison `gpumon history compare --format json` prints. */
void gm_answer_bench_compare(gm_worker *m, gm_worker_job *j)
{
    gm_error err = {0};
    json_t *docs[GM_WORKER_COMPARE_MAX] = {0};
    gm_store *st = gm_worker_store(m, false, &err);
    size_t n = 0;
    for (; n < j->nids; n++) {
        int rc = st ? gm_store_load(st, j->ids[n], &docs[n], &err) : err.code;
        const char *kind = json_string_value(json_object_get(docs[n], "kind"));
        if (rc < 0 || !kind || strcmp(kind, "bench") != 0) {
            if (rc == GM_OK || rc == GM_ENOENT || !st)
                gm_worker_job_error(j, 404, "no benchmark \"%s\"", j->ids[n]);
            else
                gm_worker_job_error(j, gm_worker_store_status(rc), "%s", err.msg);
            n++;
            goto done;
        }
    }
    json_t *cmp = gm_bench_compare_json((const json_t *const *)docs, n, &err);
    if (cmp)
        gm_worker_job_json(j, 200, cmp);
    else
        gm_worker_job_error(j, err.code == GM_EINVAL ? 400 : 503, "%s",
                            err.msg[0] ? err.msg : "out of memory");
done:
    for (size_t i = 0; i < n; i++)
        json_decref(docs[i]);
}

/* GET /api/benchmarks/{id}: the document, as gpumon bench -o writes it. */
void gm_answer_bench_get(gm_worker *m, gm_worker_job *j)
{
    gm_error err = {0};
    json_t *doc = NULL;
    gm_store *st = gm_worker_store(m, false, &err);
    int rc = st ? gm_store_load(st, j->id, &doc, &err) : err.code;
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    if (rc == GM_OK && (!kind || strcmp(kind, "bench") != 0)) {
        json_decref(doc);
        gm_worker_job_error(j, 404, "%s is not a benchmark (see /api/sessions/%s)", j->id, j->id);
        return;
    }
    if (rc < 0) {
        if (rc == GM_ENOENT || !st)
            gm_worker_job_error(j, 404, "no benchmark \"%s\"", j->id);
        else
            gm_worker_job_error(j, gm_worker_store_status(rc), "%s", err.msg);
        return;
    }
    if (j->html) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        const json_t *docs[1] = {doc};
        rc = f ? gm_bench_html_report(f, docs, 1, &err) : GM_ENOMEM;
        if (f && fclose(f) != 0 && rc == GM_OK)
            rc = GM_ENOMEM;
        json_decref(doc);
        if (rc < 0) {
            free(text);
            gm_worker_job_error(j, 503, "%s", rc == GM_ENOMEM ? "out of memory" : err.msg);
            return;
        }
        gm_worker_job_text(j, 200, text, len);
        j->ctype = "text/html; charset=utf-8";
        snprintf(j->filename, sizeof j->filename, "gpumon-%s.html", j->id);
        return;
    }
    gm_worker_job_json(j, 200, doc);
}

/* GET /api/images: asked of the engine here, off the loop (an engine's answer is bounded by
 * the listing's own timeout). */
void gm_answer_images(gm_worker *m, gm_worker_job *j)
{
    gm_error err = {0};
    json_t *list = NULL;
    int rc = gm_jobs_images(j->jobs, &list, &err);
    if (rc == GM_ENOTSUP)
        gm_worker_job_error(j, 503, "%s", err.msg);
    else if (rc == GM_ENOMEM)
        gm_worker_job_error(j, 503, "out of memory");
    else if (rc < 0)
        gm_worker_job_error(j, 502, "%s", err.msg);
    else
        gm_worker_job_json(j, 200, json_pack("{s:o}", "images", list));
}
