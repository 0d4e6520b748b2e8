/* fleet_cache.c - the fleet thread: a FIFO of parked /api/fleet requests, one Prometheus client,
 * the latest model (or failure) and when it was fetched. Only this thread touches the client
 * and the model; the mutex guards the queue and the jobs' states. */
#include "server/fleet_cache.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/gzip.h"
#include "base/json.h"
#include "core/prometheus.h"
#include "base/error.h"

/* j->state, as worker.c uses it for its own jobs. */
enum { JOB_NEW = 0, JOB_QUEUED, JOB_RUNNING, JOB_DONE };

/* Answers rendered from the current model, by their parameters: a large fleet's JSON takes tens
 * of milliseconds to build (80 ms for 1000 nodes of 8 GPUs, bench/fleet.sh) and every dashboard
 * asks the same question every few seconds. Emptied at each refresh. */
#define RENDERED_MAX 8
typedef struct rendered {
    gm_fleet_thresholds t;
    unsigned gpus;
    char *body;
    size_t len;
    unsigned char *gz; /* the body gzip'd, made for the first client that takes it */
    size_t gz_len;
} rendered;

/* Below this an answer goes plain: gzip's header and a round trip cost more than they save. */
#define GZIP_MIN_BYTES 1024

struct gm_fleet_cache {
    gm_fleet_cache_options opt;
    char url[GM_PROMETHEUS_URL_MAX];
    char display[GM_PROMETHEUS_URL_MAX];
    char job[GM_FLEET_JOB_MAX];
    gm_prometheus *prom;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool started, joined;
    atomic_bool stop;
    gm_worker_job *head, *tail; /* queued */
    size_t queued;

    /* the thread's */
    gm_fleet *model;  /* the last answer, NULL when it failed or before the first */
    gm_error failure; /* why, when model is NULL and fetched */
    bool fetched;     /* a fetch has been tried */
    int64_t fetched_mono_ms;
    int64_t fetched_wall_ms;
    rendered done[RENDERED_MAX];
    unsigned ndone, evict;
};

/* ---- answers ------------------------------------------------------------------------------ */

static void job_doc(gm_worker_job *j, int status, json_t *doc)
{
    free(j->body);
    j->body = doc ? gm_json_dump(doc, &j->len) : NULL;
    json_decref(doc);
    if (j->body) {
        j->status = status;
        return;
    }
    static const char oom[] = "{\"error\":\"out of memory\"}";
    j->body = strdup(oom);
    j->len = j->body ? sizeof oom - 1 : 0;
    j->status = 503;
}

static void job_message(gm_worker_job *j, int status, const char *msg, const char *url)
{
    json_t *doc = json_pack("{s:s}", "error", msg);
    if (doc && url)
        json_object_set_new(doc, "prometheus", json_string(url));
    job_doc(j, status, doc);
}

static void forget_rendered(gm_fleet_cache *c)
{
    for (unsigned i = 0; i < c->ndone; i++) {
        free(c->done[i].body);
        free(c->done[i].gz);
        c->done[i].body = NULL;
        c->done[i].gz = NULL;
    }
    c->ndone = c->evict = 0;
}

/* A large answer (a thousand nodes: megabytes of JSON) is a tenth of that gzip'd: compressed
 * once per model and parameters, for every client that accepts it. Plain when gzip fails. */
static void offer_gzip(rendered *r, gm_worker_job *j)
{
    j->vary_ae = true;
    if (!j->gzip_ok || j->status != 200 || j->len < GZIP_MIN_BYTES)
        return;
    if (r && !r->gz && r->body)
        r->gz = gm_gzip(r->body, r->len, 0, &r->gz_len);
    unsigned char *gz = r ? r->gz : NULL;
    size_t gz_len = r ? r->gz_len : 0;
    unsigned char *own = NULL;
    if (!gz) /* not kept (out of memory for the cache): compressed for this client alone */
        gz = own = gm_gzip(j->body, j->len, 0, &gz_len);
    if (!gz)
        return;
    char *copy = own ? (char *)own : malloc(gz_len + 1);
    if (!copy)
        return;
    if (!own)
        memcpy(copy, gz, gz_len + 1);
    free(j->body);
    j->body = copy;
    j->len = gz_len;
    j->gzip = true;
}

/* The same question answered already from this model: a copy of its answer (true). */
static bool answer_again(gm_fleet_cache *c, gm_worker_job *j)
{
    for (unsigned i = 0; i < c->ndone; i++) {
        rendered *r = &c->done[i];
        if (!r->body || r->gpus != j->fleet_gpus || r->t.max_util_pct != j->fleet.max_util_pct ||
            r->t.max_mem_pct != j->fleet.max_mem_pct)
            continue;
        char *copy = malloc(r->len + 1);
        if (!copy)
            return false;
        memcpy(copy, r->body, r->len + 1);
        free(j->body);
        j->body = copy;
        j->len = r->len;
        j->status = 200;
        offer_gzip(r, j);
        return true;
    }
    return false;
}

static rendered *keep_rendered(gm_fleet_cache *c, const gm_worker_job *j)
{
    rendered *r =
        c->ndone < RENDERED_MAX ? &c->done[c->ndone++] : &c->done[c->evict++ % RENDERED_MAX];
    free(r->body);
    free(r->gz);
    r->gz = NULL;
    r->body = malloc(j->len + 1);
    if (!r->body) {
        /* nothing kept: this slot is reused by the next answer */
        r->gpus = UINT32_MAX;
        return NULL;
    }
    memcpy(r->body, j->body, j->len + 1);
    r->len = j->len;
    r->t = j->fleet;
    r->gpus = j->fleet_gpus;
    return r;
}

/* The answer to one request from the current model or failure. */
static void render(gm_fleet_cache *c, gm_worker_job *j)
{
    if (!c->model) {
        /* A gateway's failure: Prometheus is unreachable, answered an error or garbage. */
        int status = c->failure.code == GM_ETIMEDOUT ? 504 : 502;
        job_message(j, status, c->failure.msg, c->display);
        return;
    }
    gm_fleet_evaluate(c->model, &j->fleet);
    long chosen = j->fleet_gpus ? gm_fleet_select(c->model, j->fleet_gpus) : -1;
    json_t *doc = gm_fleet_json(c->model, &j->fleet, j->fleet_gpus > 0);
    if (!doc) {
        job_doc(j, 503, NULL);
        return;
    }
    char when[40];
    gm_json_time(c->fetched_wall_ms, when, sizeof when);
    json_object_set_new(doc, "prometheus", json_string(c->display));
    json_object_set_new(doc, "job", json_string(c->job));
    json_object_set_new(doc, "fetched_at", json_string(when));
    json_object_set_new(doc, "cache_seconds", json_real(c->opt.ttl_s));
    if (j->fleet_gpus) {
        json_object_set_new(doc, "gpus_needed", json_integer(j->fleet_gpus));
        json_object_set_new(doc, "chosen",
                            chosen >= 0 ? json_string(gm_fleet_node_at(c->model, chosen)->name)
                                        : json_null());
    }
    if (gm_fleet_node_count(c->model) == 0) {
        char w[256];
        snprintf(w, sizeof w, "Prometheus has no target in job \"%s\"", c->job);
        json_object_set_new(doc, "warning", json_string(w));
    }
    job_doc(j, 200, doc);
    if (j->status == 200)
        offer_gzip(keep_rendered(c, j), j);
}

static void refresh(gm_fleet_cache *c)
{
    forget_rendered(c);
    gm_fleet_free(c->model);
    c->model = NULL;
    memset(&c->failure, 0, sizeof c->failure);
    if (gm_fleet_fetch(c->prom, c->job, &c->model, &c->failure) < 0 && !c->failure.msg[0])
        gm_error_set(&c->failure, GM_EIO, "Prometheus at %s: %s", c->display,
                     gm_strerror(c->failure.code));
    c->fetched = true;
    c->fetched_mono_ms = gm_clock_mono_ms();
    c->fetched_wall_ms = gm_clock_wall_ms();
}

/* Hands j back: the loop's, or freed when the loop gave it up meanwhile. */
static void complete(gm_fleet_cache *c, gm_worker_job *j)
{
    pthread_mutex_lock(&c->mu);
    bool abandoned = j->abandoned;
    if (!abandoned) {
        j->state = JOB_DONE;
        atomic_store(&j->done, true);
    }
    pthread_mutex_unlock(&c->mu);
    if (abandoned)
        gm_worker_job_free(j);
    else if (c->opt.wake)
        c->opt.wake(c->opt.wake_arg);
}

static void *fleet_main(void *arg)
{
    gm_fleet_cache *c = arg;
    for (;;) {
        pthread_mutex_lock(&c->mu);
        while (!c->head && !atomic_load(&c->stop))
            pthread_cond_wait(&c->cv, &c->mu);
        if (atomic_load(&c->stop)) {
            pthread_mutex_unlock(&c->mu);
            break;
        }
        /* The whole queue at once: one refresh serves every request waiting for it. */
        gm_worker_job *batch = c->head;
        c->head = c->tail = NULL;
        c->queued = 0;
        for (gm_worker_job *j = batch; j; j = j->next)
            j->state = JOB_RUNNING;
        pthread_mutex_unlock(&c->mu);

        int64_t ttl_ms = (int64_t)(c->opt.ttl_s * 1000.0);
        if (!c->fetched || gm_clock_mono_ms() - c->fetched_mono_ms >= ttl_ms)
            refresh(c);
        bool cancelled = !c->model && c->failure.code == GM_ECANCELED;
        for (gm_worker_job *j = batch, *next; j; j = next) {
            next = j->next;
            j->next = NULL;
            if (cancelled)
                job_message(j, 503, "the daemon is shutting down", NULL);
            else if (!c->model || !answer_again(c, j))
                render(c, j);
            complete(c, j);
        }
    }
    /* Stopping: whatever is still queued is answered. */
    pthread_mutex_lock(&c->mu);
    gm_worker_job *rest = c->head;
    c->head = c->tail = NULL;
    c->queued = 0;
    for (gm_worker_job *j = rest; j; j = j->next)
        j->state = JOB_RUNNING;
    pthread_mutex_unlock(&c->mu);
    for (gm_worker_job *j = rest, *next; j; j = next) {
        next = j->next;
        j->next = NULL;
        job_message(j, 503, "the daemon is shutting down", NULL);
        complete(c, j);
    }
    return NULL;
}

/* ---- the loop's side ---------------------------------------------------------------------- */

int gm_fleet_cache_start(const gm_fleet_cache_options *o, gm_fleet_cache **out, gm_error *err)
{
    *out = NULL;
    if (!gm_fleet_job_ok(o->job))
        return gm_error_set(err, GM_EINVAL, "\"%.64s\" is not a job name", o->job ? o->job : "");
    gm_fleet_cache *c = calloc(1, sizeof *c);
    if (!c)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    c->opt = *o;
    c->opt.ttl_s = o->ttl_s > 0 ? o->ttl_s : GM_FLEET_CACHE_TTL_S;
    c->opt.timeout_s = o->timeout_s > 0 ? o->timeout_s : GM_FLEET_CACHE_TIMEOUT_S;
    snprintf(c->url, sizeof c->url, "%s", o->url ? o->url : "");
    snprintf(c->job, sizeof c->job, "%s", o->job);
    c->opt.url = c->url;
    c->opt.job = c->job;
    atomic_init(&c->stop, false);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    gm_prometheus_options po = {.url = c->url, .timeout_s = c->opt.timeout_s, .stop = &c->stop};
    int rc = gm_prometheus_new(&po, &c->prom, err);
    if (rc < 0) {
        gm_fleet_cache_free(c);
        return rc;
    }
    snprintf(c->display, sizeof c->display, "%s", gm_prometheus_url(c->prom));
    rc = pthread_create(&c->thread, NULL, fleet_main, c);
    if (rc != 0) {
        gm_fleet_cache_free(c);
        return gm_error_set(err, GM_EIO, "cannot start the fleet thread: %s", strerror(rc));
    }
    c->started = true;
    *out = c;
    return GM_OK;
}

void gm_fleet_cache_stop(gm_fleet_cache *c)
{
    if (!c || !c->started || c->joined)
        return;
    pthread_mutex_lock(&c->mu);
    atomic_store(&c->stop, true);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL);
    c->joined = true;
}

void gm_fleet_cache_free(gm_fleet_cache *c)
{
    if (!c)
        return;
    gm_fleet_cache_stop(c);
    gm_prometheus_free(c->prom);
    gm_fleet_free(c->model);
    forget_rendered(c);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}

const char *gm_fleet_cache_url(const gm_fleet_cache *c)
{
    return c->display;
}

void gm_fleet_cache_submit(gm_fleet_cache *c, gm_worker_job *j)
{
    pthread_mutex_lock(&c->mu);
    if (atomic_load(&c->stop) || c->queued >= GM_FLEET_CACHE_QUEUE_MAX) {
        bool stopping = atomic_load(&c->stop);
        pthread_mutex_unlock(&c->mu);
        job_message(j, 503,
                    stopping ? "the daemon is shutting down"
                             : "too many fleet requests are waiting for Prometheus",
                    NULL);
        j->state = JOB_DONE;
        atomic_store(&j->done, true);
        return;
    }
    j->next = NULL;
    j->state = JOB_QUEUED;
    if (c->tail)
        c->tail->next = j;
    else
        c->head = j;
    c->tail = j;
    c->queued++;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

void gm_fleet_cache_abandon(gm_fleet_cache *c, gm_worker_job *j)
{
    if (!j)
        return;
    pthread_mutex_lock(&c->mu);
    if (j->state == JOB_RUNNING) {
        j->abandoned = true; /* the thread frees it when done */
        pthread_mutex_unlock(&c->mu);
        return;
    }
    if (j->state == JOB_QUEUED) {
        for (gm_worker_job **pp = &c->head, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->next) {
            if (*pp != j)
                continue;
            *pp = j->next;
            if (c->tail == j)
                c->tail = prev;
            c->queued--;
            break;
        }
    }
    pthread_mutex_unlock(&c->mu);
    gm_worker_job_free(j);
}
