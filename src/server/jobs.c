/* jobs.c - the daemon's benchmark jobs (jobs.h). */
#include "server/jobs.h"

#include <fnmatch.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/parse.h"
#include "core/docker.h"
#include "core/lease.h"
#include "core/select.h"
#include "core/session.h"
#include "store/store.h"
#include "base/error.h"

typedef enum job_state {
    JOB_QUEUED,
    JOB_WAITING,
    JOB_STARTING,
    JOB_LOADING,
    JOB_RUNNING,
    JOB_DONE,
    JOB_FAILED,
    JOB_CANCELLED,
} job_state;

static const char *const state_names[] = {"queued",  "waiting_gpus", "starting", "loading",
                                          "running", "done",         "failed",   "cancelled"};

typedef struct job {
    char id[GM_SESSION_ID_LEN];
    gm_bench_config cfg;
    unsigned count;
    double wait_s;
    volatile sig_atomic_t stop;
    double sim_load; /* simulated GPUs' load, written by the engine between samples */
    /* under the mutex */
    job_state state;
    int64_t created_ms, started_ms, ended_ms;
    double state_since; /* monotonic seconds: when the state began */
    char reason[512];
    bool stored;
    unsigned gpus[GM_MAX_GPUS];
    size_t ngpus;
    bool have_progress;
    gm_bench_progress prog; /* its load points into load */
    char load[64];
    size_t points_done;
    /* An image: the options (strings in body), and what its container said. */
    gm_bench_ctr_opts ctr;
    json_t *body;
    char ctr_name[80];
    char ctr_error[512];           /* the last failure it said */
    double loading_since, ready_s; /* monotonic; NAN until ready */
    json_t *logs;                  /* its last lines of output, kept when it failed */
    /* the runner's thread only: a server that dies mid-point, as gpumon bench watches it */
    bool failing, server_gone;
    size_t seen, seen_point;
    double next_check;
} job;

struct gm_jobs {
    char db_path[4096];
    char lease_dir[4096];
    char provider[32];
    bool have_provider;
    unsigned simulate;
    uint64_t seed;
    char procfs[4096];
    double check_s;
    char docker_host[4096];
    char (*allow)[GM_SERVE_ALLOW_IMAGE_LEN];
    size_t nallow;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t threads[GM_JOBS_RUNNERS];
    size_t nthreads, running;
    bool started, quit;
    job **jobs; /* oldest first */
    size_t njobs, cap;
};

static bool finished(job_state s)
{
    return s == JOB_DONE || s == JOB_FAILED || s == JOB_CANCELLED;
}

/* Under the mutex. */
static void set_state(job *jb, job_state s)
{
    jb->state = s;
    jb->state_since = gm_clock_mono_s();
    if (finished(s))
        jb->ended_ms = gm_clock_wall_ms();
}

static void job_free(job *jb)
{
    if (!jb)
        return;
    gm_bench_config_free(&jb->cfg);
    json_decref(jb->body);
    json_decref(jb->logs);
    free(jb);
}

/* ---- the body ------------------------------------------------------------------------------ */

/* A JSON value as the command line would spell it: a number as its text, a list as items
 * joined by commas, slo's object as k=v pairs. */
static int value_text(const char *key, const json_t *v, char *out, size_t len, gm_error *err)
{
    if (json_is_string(v)) {
        if ((size_t)snprintf(out, len, "%s", json_string_value(v)) >= len)
            return gm_error_set(err, GM_EINVAL, "%s: too long", key);
        return GM_OK;
    }
    if (json_is_integer(v)) {
        snprintf(out, len, "%lld", (long long)json_integer_value(v));
        return GM_OK;
    }
    if (json_is_real(v)) {
        snprintf(out, len, "%.17g", json_real_value(v));
        return GM_OK;
    }
    if (json_is_array(v) || (json_is_object(v) && strcmp(key, "slo") == 0)) {
        size_t used = 0;
        out[0] = '\0';
        const char *k;
        json_t *item;
        void *iter = json_is_object(v) ? json_object_iter((json_t *)v) : NULL;
        for (size_t i = 0;; i++) {
            char one[64];
            if (json_is_array(v)) {
                if (i >= json_array_size(v))
                    break;
                item = json_array_get(v, i);
                k = NULL;
            } else {
                if (!iter)
                    break;
                k = json_object_iter_key(iter);
                item = json_object_iter_value(iter);
                iter = json_object_iter_next((json_t *)v, iter);
            }
            if (json_is_array(item) || json_is_object(item) ||
                value_text(key, item, one, sizeof one, err) < 0 || json_is_boolean(item) ||
                json_is_null(item))
                return gm_error_set(err, GM_EINVAL, "%s: expects %s", key,
                                    json_is_array(v) ? "a list of numbers or strings"
                                                     : "an object of numbers (ttft, tpot, e2e)");
            int n = snprintf(out + used, len - used, "%s%s%s%s", used ? "," : "", k ? k : "",
                             k ? "=" : "", one);
            if (n < 0 || (size_t)n >= len - used)
                return gm_error_set(err, GM_EINVAL, "%s: too long", key);
            used += (size_t)n;
        }
        return GM_OK;
    }
    return gm_error_set(err, GM_EINVAL, "%s: expects %s", key,
                        strcmp(key, "slo") == 0 ? "an object such as {\"ttft\": 200}"
                                                : "a number, a string or a list");
}

/* Fields of `gpumon bench` that name something on the daemon's host (a file, a variable of
 * its environment, its database): never taken from a request. */
static const char *const host_fields[] = {"output",      "trace", "db",       "no_db",    "prompts",
                                          "api_key_env", "quiet", "provider", "simulate", NULL};
/* The lease's own options of `gpumon bench`: a job takes gpus and count. */
static const char *const lease_fields[] = {"task",      "min_free_mb", "max_util",
                                           "lease_dir", "all_devices", NULL};
/* The container's, set through the CLI's setter. Strings stay in the body. */
static const char *const container_fields[] = {"image",         "container_port", "env",
                                               "volume",        "shm_size",       "ready_path",
                                               "ready_timeout", "pull",           NULL};

/* A volume from a request names an engine-managed volume, never a host path: the engine is
 * root on the host, and a bind of / (or of the daemon's database) would hand it over. */
static bool named_volume(const char *v)
{
    const char *colon = strchr(v, ':');
    if (!colon || !((v[0] >= 'A' && v[0] <= 'Z') || (v[0] >= 'a' && v[0] <= 'z') ||
                    (v[0] >= '0' && v[0] <= '9')))
        return false;
    for (const char *p = v; p < colon; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '.' || *p == '-'))
            return false;
    return true;
}

/* One container field of the body into req->ctr. */
static int container_field(gm_jobs_request *req, const char *key, json_t *v, gm_error *err)
{
    gm_error e = {0};
    int rc;
    if (strcmp(key, "pull") == 0) {
        if (!json_is_boolean(v))
            return gm_error_set(err, GM_EINVAL, "pull: expects true or false");
        if (json_is_true(v) && (rc = gm_bench_ctr_set(&req->ctr, key, NULL, &e)) < 0)
            return gm_error_set(err, rc, "%s: %s", key, e.msg);
        return GM_OK;
    }
    bool list = strcmp(key, "env") == 0 || strcmp(key, "volume") == 0;
    if (list || strcmp(key, "image") == 0 || strcmp(key, "ready_path") == 0) {
        size_t n = json_is_array(v) && list ? json_array_size(v) : 1;
        for (size_t i = 0; i < n; i++) {
            json_t *item = json_is_array(v) && list ? json_array_get(v, i) : v;
            if (!json_is_string(item))
                return gm_error_set(err, GM_EINVAL, "%s: expects %s", key,
                                    list ? "a string or a list of strings" : "a string");
            const char *t = json_string_value(item);
            if (strcmp(key, "env") == 0 && !strchr(t, '='))
                return gm_error_set(err, GM_EINVAL,
                                    "env: expects NAME=VALUE (the daemon's own environment is "
                                    "not handed out), got \"%.64s\"",
                                    t);
            if (strcmp(key, "volume") == 0 && strchr(t, ':') && !named_volume(t))
                return gm_error_set(err, GM_EINVAL,
                                    "volume: \"%.128s\" names a host path; a job mounts only "
                                    "the engine's named volumes (NAME:/path, such as "
                                    "nim-cache:/opt/nim/.cache)",
                                    t);
            if ((rc = gm_bench_ctr_set(&req->ctr, key, t, &e)) < 0)
                return gm_error_set(err, rc, "%s: %s", key, e.msg);
        }
        return GM_OK;
    }
    char text[256];
    if ((rc = value_text(key, v, text, sizeof text, err)) < 0)
        return rc;
    if ((rc = gm_bench_ctr_set(&req->ctr, key, text, &e)) < 0)
        return gm_error_set(err, rc, "%s: %s", key, e.msg);
    return GM_OK;
}

static bool in_list(const char *const *l, const char *k)
{
    for (; *l; l++)
        if (strcmp(*l, k) == 0)
            return true;
    return false;
}

/* wait (a duration) or seed (a whole number). */
static int parse_wait_seed(gm_jobs_request *req, const char *key, const json_t *v, gm_error *err)
{
    char text[4096];
    int rc = value_text(key, v, text, sizeof text, err);
    if (rc < 0)
        return rc;
    if (key[0] == 'w') {
        int64_t ms;
        if (gm_parse_duration_ms(text, 0, 7 * 86400000LL, &ms) < 0)
            return gm_error_set(err, GM_EINVAL,
                                "wait: expects a duration from 0s to 604800s (such as 90, "
                                "30s, 5m), got \"%s\"",
                                text);
        req->wait_s = (double)ms / 1000.0;
        return GM_OK;
    }
    unsigned long long s;
    if (gm_parse_uint(text, 0, UINT64_MAX, &s) < 0)
        return gm_error_set(err, GM_EINVAL, "seed: expects a whole number, got \"%s\"", text);
    req->cfg.seed = s;
    return GM_OK;
}

/* header as a list: each set on its own (a value may hold a comma). */
static int parse_headers(gm_jobs_request *req, const char *key, const json_t *v, gm_error *err)
{
    size_t i;
    const json_t *h;
    json_array_foreach(v, i, h)
    {
        if (!json_is_string(h))
            return gm_error_set(err, GM_EINVAL, "header: expects strings 'Name: value'");
        gm_error e = {0};
        int rc = gm_bench_config_set(&req->cfg, key, json_string_value(h), &e);
        if (rc < 0)
            return gm_error_set(err, rc, "header: %s", e.msg);
    }
    return GM_OK;
}

/* One field of the body into req. */
static int parse_field(gm_jobs_request *req, const char *key, json_t *v, gm_error *err)
{
    if (in_list(host_fields, key))
        return gm_error_set(err, GM_EINVAL,
                            "%s: names a file or setting of the daemon's host, not taken from "
                            "a request",
                            key);
    if (in_list(lease_fields, key))
        return gm_error_set(err, GM_ENOTSUP,
                            "%s: the job queue leases GPUs by gpus and count only, not by %s", key,
                            key);
    if (strcmp(key, "keep_container") == 0)
        return gm_error_set(err, GM_EINVAL,
                            "keep_container: a job's container is always removed when the "
                            "job ends");
    if (in_list(container_fields, key))
        return container_field(req, key, v, err);
    if (strcmp(key, "count") == 0 || (strcmp(key, "gpus") == 0 && json_is_integer(v))) {
        json_int_t n = json_is_integer(v) ? json_integer_value(v) : -1;
        if (n < 1 || n > GM_MAX_GPUS)
            return gm_error_set(err, GM_EINVAL, "%s: expects a number of GPUs from 1 to %d", key,
                                GM_MAX_GPUS);
        req->count = (unsigned)n;
        return GM_OK;
    }
    if (strcmp(key, "wait") == 0 || strcmp(key, "seed") == 0)
        return parse_wait_seed(req, key, v, err);
    if (strcmp(key, "header") == 0 && json_is_array(v))
        return parse_headers(req, key, v, err);
    /* true or false: a flag's value (snapshot), as the setter takes it. */
    char text[4096];
    int rc;
    if (json_is_boolean(v))
        snprintf(text, sizeof text, "%s", json_is_true(v) ? "true" : "false");
    else if ((rc = value_text(key, v, text, sizeof text, err)) < 0)
        return rc;
    gm_error e = {0};
    rc = gm_bench_config_set(&req->cfg, key, text, &e);
    if (rc == GM_ENOENT)
        return gm_error_set(err, GM_EINVAL, "%s: unknown field", key);
    if (rc < 0)
        return gm_error_set(err, rc, "%s: %s", key, e.msg);
    return GM_OK;
}

/* The fields together: an image's settings only with an image, url or image, a usable url.
 * *field names the field at fault. */
static int check_request(gm_jobs_request *req, const char **field, gm_error *err)
{
    gm_error e = {0};
    bool image = req->ctr.image != NULL;
    *field = NULL;
    if (!image && req->ctr.given) {
        *field = req->ctr.given + 2;
        return gm_error_set(err, GM_EINVAL, "%s: is for an image (give image)", *field);
    }
    if (image && req->cfg.url) {
        *field = "url";
        return gm_error_set(err, GM_EINVAL, "url: give url or image, not both");
    }
    if (gm_bench_config_finish(&req->cfg, image, &e) < 0) {
        if (!req->cfg.url && !image)
            *field = "url";
        return gm_error_set(err, GM_EINVAL, "%s", e.msg);
    }
    char base[GM_BENCH_URL_MAX];
    if (!image && gm_bench_url_base(req->cfg.url, base, sizeof base, &e) < 0) {
        *field = "url";
        return gm_error_set(err, GM_EINVAL, "url: %s", e.msg);
    }
    return GM_OK;
}

int gm_jobs_parse(const char *body, size_t len, gm_jobs_request *req, const char **field,
                  gm_error *err)
{
    memset(req, 0, sizeof *req);
    gm_bench_config_init(&req->cfg);
    gm_bench_ctr_defaults(&req->ctr);
    req->wait_s = 300;
    *field = NULL;
    json_error_t je;
    json_t *root = json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, &je);
    if (!root || !json_is_object(root)) {
        json_decref(root);
        return gm_error_set(err, GM_EINVAL, "the body is not a JSON object%s%s", root ? "" : ": ",
                            root ? "" : je.text);
    }
    int rc = GM_OK;
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        *field = key;
        if ((rc = parse_field(req, key, v, err)) < 0)
            break;
    }
    if (rc == GM_OK)
        rc = check_request(req, field, err);
    /* field points into root: kept alive by copying the name. */
    static __thread char fieldbuf[64];
    if (*field) {
        snprintf(fieldbuf, sizeof fieldbuf, "%s", *field);
        for (char *c = fieldbuf; *c; c++)
            if (*c == '-')
                *c = '_';
        *field = fieldbuf;
    }
    if (rc < 0) {
        json_decref(root);
        gm_bench_config_free(&req->cfg);
        gm_bench_ctr_defaults(&req->ctr);
        return rc == GM_ENOMEM ? GM_ENOMEM : rc == GM_ENOTSUP ? GM_ENOTSUP : GM_EINVAL;
    }
    /* The container's strings point into the body: it goes with the request. */
    req->body = root;
    return GM_OK;
}

/* ---- the runner's thread -------------------------------------------------------------------- */

typedef struct run_ctx {
    gm_jobs *j;
    job *jb;
    gm_bench_ctr *ctr; /* an image's container, NULL without */
} run_ctx;

/* A server that dies mid-point turns every request into a connection failure at full speed:
 * when requests fail, the engine is asked (at most once a second) whether the container has
 * ended, and the run stops if it has (as gpumon bench does). */
static void watch_server(run_ctx *rc, const gm_bench_progress *g, const gm_bench_point *p)
{
    job *jb = rc->jb;
    if (!rc->ctr || jb->server_gone)
        return;
    if (g->point != jb->seen_point) {
        jb->seen_point = g->point;
        jb->seen = 0;
    }
    for (; p && jb->seen < p->n; jb->seen++)
        if (p->res[jb->seen].outcome != GM_BENCH_OK)
            jb->failing = true;
    double now = gm_clock_mono_s();
    if (!jb->failing || now < jb->next_check)
        return;
    jb->failing = false;
    jb->next_check = now + 1;
    if (gm_bench_ctr_ended(rc->ctr)) {
        jb->server_gone = true;
        jb->stop = 1;
    }
}

static bool on_gone(void *arg, bool before)
{
    run_ctx *rc = arg;
    if (before && rc->ctr && !rc->jb->server_gone && gm_bench_ctr_ended(rc->ctr))
        rc->jb->server_gone = true;
    return rc->jb->server_gone;
}

/* What the container's life says: its failures are the job's reason. */
static void on_ctr_say(void *arg, gm_bench_ctr_say kind, const char *text)
{
    run_ctx *rc = arg;
    if (kind != GM_BENCH_CTR_ERROR)
        return;
    pthread_mutex_lock(&rc->j->mu);
    snprintf(rc->jb->ctr_error, sizeof rc->jb->ctr_error, "%s", text);
    pthread_mutex_unlock(&rc->j->mu);
}

static void on_progress(void *arg, const gm_bench_progress *p, const gm_bench_point *pt)
{
    run_ctx *rc = arg;
    if (p->phase != GM_BENCH_PHASE_POINT)
        return;
    watch_server(rc, p, pt);
    pthread_mutex_lock(&rc->j->mu);
    job *jb = rc->jb;
    jb->prog = *p;
    snprintf(jb->load, sizeof jb->load, "%s", p->load ? p->load : "");
    jb->prog.load = NULL;
    jb->have_progress = true;
    if (jb->state != JOB_RUNNING)
        set_state(jb, JOB_RUNNING);
    pthread_mutex_unlock(&rc->j->mu);
}

static void on_point(void *arg, const json_t *pj)
{
    (void)pj;
    run_ctx *rc = arg;
    pthread_mutex_lock(&rc->j->mu);
    rc->jb->points_done++;
    pthread_mutex_unlock(&rc->j->mu);
}

/* Driver indices of the GPUs a list names (indices or UUIDs) in s. */
static int resolve_gpus(const char *list, const gm_snapshot *s, unsigned *out, size_t *n,
                        gm_error *err)
{
    *n = 0;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ')
            t++;
        bool found = false;
        for (size_t i = 0; i < s->gpu_count && !found; i++) {
            const gm_gpu *g = &s->gpus[i];
            char idx[16];
            snprintf(idx, sizeof idx, "%u", g->index);
            if (strcmp(t, idx) == 0 || strcmp(t, g->uuid) == 0 || strcmp(t, g->pci_bus_id) == 0) {
                out[(*n)++] = g->index;
                found = true;
            }
        }
        if (!found)
            return gm_error_set(err, GM_EINVAL, "no GPU matches \"%s\" (have %u GPUs)", t,
                                (unsigned)s->gpu_count);
        if (*n == GM_MAX_GPUS)
            break;
    }
    return GM_OK;
}

static void set_job_state(gm_jobs *j, job *jb, job_state s)
{
    pthread_mutex_lock(&j->mu);
    set_state(jb, s);
    pthread_mutex_unlock(&j->mu);
}

/* The image's container on the leased GPUs, made ready: its URL becomes the job's server.
 * GM_OK, GM_ECANCELED, or another code with reason set. */
static int start_container(gm_jobs *j, job *jb, run_ctx *ctx, const gm_snapshot *snap,
                           const unsigned *idx, size_t n, gm_lease *lease, char *reason,
                           size_t rlen)
{
    gm_error err = {0};
    gm_bench_ctr_callbacks cb = {.say = on_ctr_say, .arg = ctx};
    int rc = gm_bench_ctr_open(&jb->ctr, j->docker_host, jb->ctr.env, jb->ctr.nenv, &cb, &ctx->ctr,
                               &err);
    if (rc < 0) {
        snprintf(reason, rlen, "%s", err.msg);
        return rc;
    }
    if ((rc = gm_bench_ctr_image(ctx->ctr, &jb->stop)) < 0)
        goto failed;
    /* The engine gets the leased GPUs by UUID (an index only where none is known). */
    char ids[GM_MAX_GPUS][GM_UUID_LEN];
    const char *idp[GM_MAX_GPUS];
    for (size_t i = 0; i < n; i++) {
        const char *u = lease ? gm_lease_uuid(lease, i) : NULL;
        for (size_t k = 0; (!u || !*u) && snap && k < snap->gpu_count; k++)
            if (snap->gpus[k].index == idx[i])
                u = snap->gpus[k].uuid;
        if (u && *u)
            snprintf(ids[i], sizeof ids[i], "%s", u);
        else
            snprintf(ids[i], sizeof ids[i], "%u", idx[i]);
        idp[i] = ids[i];
    }
    if ((rc = gm_bench_ctr_start(ctx->ctr, jb->id, NULL, 0, idp, n, true)) < 0)
        goto failed;
    pthread_mutex_lock(&j->mu);
    snprintf(jb->ctr_name, sizeof jb->ctr_name, "%s", gm_bench_ctr_name(ctx->ctr));
    jb->loading_since = gm_clock_mono_s();
    set_state(jb, JOB_LOADING);
    pthread_mutex_unlock(&j->mu);
    if ((rc = gm_bench_ctr_wait_ready(ctx->ctr, &jb->stop)) < 0)
        goto failed;
    pthread_mutex_lock(&j->mu);
    jb->ready_s = gm_clock_mono_s() - jb->loading_since;
    pthread_mutex_unlock(&j->mu);
    if ((rc = gm_bench_config_set(&jb->cfg, "url", gm_bench_ctr_url(ctx->ctr), &err)) < 0) {
        snprintf(reason, rlen, "%s", err.msg);
        return rc;
    }
    return GM_OK;
failed:
    if (rc != GM_ECANCELED) {
        pthread_mutex_lock(&j->mu);
        snprintf(reason, rlen, "%s", jb->ctr_error[0] ? jb->ctr_error : gm_strerror(rc));
        pthread_mutex_unlock(&j->mu);
    }
    return rc;
}

static void finish(gm_jobs *j, job *jb, job_state s, const char *reason)
{
    pthread_mutex_lock(&j->mu);
    if (reason && !jb->reason[0])
        snprintf(jb->reason, sizeof jb->reason, "%s", reason);
    set_state(jb, s);
    pthread_mutex_unlock(&j->mu);
}

/* One job's run: what run_job takes, step by step, and gives back at its end. */
typedef struct job_run {
    gm_jobs *j;
    job *jb;
    run_ctx ctx;
    gm_collector *col; /* NULL: no GPU (a job that asked for none) */
    gm_snapshot *snap;
    gm_lease *lease;
    gm_bench_runner *run;
    job_state end;
    char reason[600];
    unsigned idx[GM_MAX_GPUS]; /* the GPUs the job runs on */
    size_t n;
} job_run;

/* Opens the collector and takes the job's GPUs: its lease (waiting while another holder has
 * them) or, without a lease directory, the GPUs it named. GM_OK, else < 0 with r->reason (or
 * r->end JOB_CANCELLED). */
static int take_gpus(job_run *r)
{
    gm_jobs *j = r->j;
    job *jb = r->jb;
    gm_error err = {0};
    gm_collector_options copt = {0};
    copt.provider = j->have_provider ? j->provider : NULL;
    copt.simulate = j->simulate;
    copt.seed = j->seed;
    copt.no_host = !jb->cfg.snapshot; /* a snapshot names the host */
    copt.slow_period_ms = -1;         /* the energy counter at every sample: exact per point */
    copt.procfs_root = j->procfs[0] ? j->procfs : NULL;
    jb->sim_load = 0;
    copt.sim_load = &jb->sim_load;
    bool have_gpus = gm_collector_open(&copt, &r->col, &err) == GM_OK &&
                     strcmp(gm_collector_provider(r->col), "none") != 0 &&
                     gm_collector_sample(r->col, r->snap, &err) == GM_OK && r->snap->gpu_count > 0;
    if (!have_gpus) {
        gm_collector_close(r->col);
        r->col = NULL;
        if (jb->cfg.gpus || jb->count) {
            snprintf(r->reason, sizeof r->reason, "no GPU found: %s", err.msg);
            return GM_ENODEV;
        }
        return GM_OK;
    }
    unsigned only[GM_MAX_GPUS];
    size_t nonly = 0;
    if (jb->cfg.gpus && resolve_gpus(jb->cfg.gpus, r->snap, only, &nonly, &err) < 0) {
        snprintf(r->reason, sizeof r->reason, "gpus: %s", err.msg);
        return GM_EINVAL;
    }
    if (!j->lease_dir[0]) {
        r->n = nonly;
        memcpy(r->idx, only, nonly * sizeof *only);
        return GM_OK;
    }
    unsigned count = jb->count ? jb->count : nonly ? (unsigned)nonly : 1;
    pthread_mutex_lock(&j->mu);
    set_state(jb, JOB_WAITING);
    pthread_mutex_unlock(&j->mu);
    gm_select_request req = {.count = count, .only = nonly ? only : NULL, .n_only = nonly};
    gm_wait_options wo = {.timeout_s = jb->wait_s,
                          .interval_s = j->check_s,
                          .cancel = &jb->stop,
                          .lease_dir = j->lease_dir,
                          .take_lease = true};
    gm_select_result res;
    int wrc = gm_wait_for(r->col, &req, &wo, r->snap, &res, &r->lease, &err);
    if (wrc == GM_ECANCELED) {
        r->end = JOB_CANCELLED;
        return wrc;
    }
    if (wrc < 0) {
        snprintf(r->reason, sizeof r->reason, "%s%s",
                 wrc == GM_ETIMEDOUT ? "timed out waiting for GPUs: " : "", err.msg);
        return wrc;
    }
    r->n = gm_lease_indices(r->lease, r->idx, GM_MAX_GPUS);
    return GM_OK;
}

/* The job starts on its GPUs: its image's container when it has one, then the runner,
 * connected and checked. GM_OK, else < 0 with r->reason (or r->end JOB_CANCELLED). */
static int start_run(job_run *r)
{
    gm_jobs *j = r->j;
    job *jb = r->jb;
    pthread_mutex_lock(&j->mu);
    memcpy(jb->gpus, r->idx, r->n * sizeof *r->idx);
    jb->ngpus = r->n;
    jb->started_ms = gm_clock_wall_ms();
    set_state(jb, JOB_STARTING);
    pthread_mutex_unlock(&j->mu);
    if (jb->ctr.image) {
        int crc = start_container(j, jb, &r->ctx, r->col ? r->snap : NULL, r->idx, r->n, r->lease,
                                  r->reason, sizeof r->reason);
        if (crc == GM_ECANCELED || (crc < 0 && jb->stop && !jb->server_gone))
            r->end = JOB_CANCELLED;
        if (crc < 0)
            return crc;
    }
    gm_error err = {0};
    gm_bench_runner_options ro = {.cfg = &jb->cfg,
                                  .id = jb->id,
                                  .started_ms = jb->started_ms,
                                  .stop = &jb->stop,
                                  .max_in_flight = 1024,
                                  .sim_load = &jb->sim_load,
                                  .progress = on_progress,
                                  .live_figures = true,
                                  .on_point = on_point,
                                  .gone = jb->ctr.image ? on_gone : NULL,
                                  .arg = &r->ctx};
    gm_bench_ctr *ctr = r->ctx.ctr;
    if (gm_bench_runner_new(&ro, &r->run, &err) < 0 ||
        gm_bench_runner_connect(r->run, jb->cfg.url, &err) < 0 ||
        (r->col &&
         gm_bench_runner_gpus(r->run, r->col, r->n ? r->idx : NULL, r->n, false, &err) < 0) ||
        (r->col && ctr && gm_bench_ctr_pid(ctr) > 0 &&
         gm_bench_gpu_add_server(gm_bench_runner_gpu(r->run), (uint32_t)gm_bench_ctr_pid(ctr),
                                 &err) < 0) ||
        gm_bench_runner_check(r->run, &err) < 0) {
        snprintf(r->reason, sizeof r->reason, "%s", err.msg);
        if (jb->stop)
            r->end = JOB_CANCELLED;
        return err.code ? err.code : GM_EIO;
    }
    return GM_OK;
}

/* Runs the points and says how the job ended. */
static void measure(job_run *r)
{
    gm_jobs *j = r->j;
    job *jb = r->jb;
    gm_error err = {0};
    set_job_state(j, jb, JOB_RUNNING);
    int prc = gm_bench_runner_points(r->run, &err);
    if (prc < 0)
        snprintf(r->reason, sizeof r->reason, "%s", err.msg);
    else if (jb->server_gone) {
        pthread_mutex_lock(&j->mu);
        snprintf(r->reason, sizeof r->reason, "%s",
                 jb->ctr_error[0] ? jb->ctr_error : "the container ended during the benchmark");
        pthread_mutex_unlock(&j->mu);
    } else if (jb->stop)
        r->end = JOB_CANCELLED;
    else if (gm_bench_runner_any_empty(r->run))
        snprintf(r->reason, sizeof r->reason, "a point completed no request (see its errors)");
    else
        r->end = JOB_DONE;
}

/* Stores what was measured, whatever the end (as the CLI keeps it on Ctrl-C); a job done
 * whose result cannot be stored failed. */
static void store_result(job_run *r)
{
    gm_jobs *j = r->j;
    job *jb = r->jb;
    json_t *doc = NULL;
    if (gm_bench_runner_points_done(r->run) == 0 || !j->db_path[0] ||
        !(doc = gm_bench_runner_document(r->run, r->col ? gm_collector_provider(r->col) : "none")))
        return;
    json_object_set_new(doc, "job", json_pack("{s:s}", "id", jb->id));
    if (r->ctx.ctr)
        json_object_set_new(doc, "container", gm_bench_ctr_json(r->ctx.ctr));
    json_t *cmd = json_pack("[s, s]", "POST", "/api/benchmarks");
    int64_t ended = gm_clock_wall_ms();
    gm_error err = {0};
    gm_store *st = NULL;
    if (gm_store_open(j->db_path, &st, &err) < 0 ||
        gm_store_put_bench(st, doc, cmd, jb->started_ms, ended, gm_bench_runner_gpu_samples(r->run),
                           &err) < 0) {
        if (r->end == JOB_DONE) {
            r->end = JOB_FAILED;
            snprintf(r->reason, sizeof r->reason, "the result could not be stored: %s", err.msg);
        }
    } else {
        pthread_mutex_lock(&j->mu);
        jb->stored = true;
        pthread_mutex_unlock(&j->mu);
    }
    json_decref(cmd);
    json_decref(doc);
    gm_store_close(st);
}

/* Gives back what the run took. The sampling thread reads the collector: it stops first. Then
 * the container (stopped and removed: its last lines kept when the job failed), then the
 * lease. */
static void release_run(job_run *r)
{
    gm_bench_runner_free(r->run);
    if (r->ctx.ctr) {
        gm_bench_ctr_finish(r->ctx.ctr, r->end == JOB_FAILED);
        const json_t *logs = gm_bench_ctr_logs(r->ctx.ctr);
        pthread_mutex_lock(&r->j->mu);
        if (logs && r->end == JOB_FAILED)
            r->jb->logs = json_deep_copy(logs);
        pthread_mutex_unlock(&r->j->mu);
        gm_bench_ctr_close(r->ctx.ctr);
    }
    gm_lease_release(r->lease);
    gm_collector_close(r->col);
    gm_snapshot_free(r->snap);
}

static void run_job(gm_jobs *j, job *jb)
{
    job_run r = {.j = j, .jb = jb, .ctx = {j, jb, NULL}, .end = JOB_FAILED};
    r.snap = gm_snapshot_new();
    if (!r.snap)
        snprintf(r.reason, sizeof r.reason, "out of memory");
    else if (take_gpus(&r) == GM_OK && start_run(&r) == GM_OK) {
        measure(&r);
        /* The container goes before the result is stored, so the record says it was
         * removed. */
        gm_bench_ctr_finish(r.ctx.ctr, r.end != JOB_DONE && r.end != JOB_CANCELLED);
        store_result(&r);
    }
    release_run(&r);
    if (r.end == JOB_FAILED && !r.reason[0])
        snprintf(r.reason, sizeof r.reason, "failed");
    finish(j, jb, r.end, r.end == JOB_FAILED ? r.reason : NULL);
}

/* Each runner takes the oldest queued job. A job waiting for its GPUs holds only its runner,
 * so the jobs behind it run on the others; the leases keep running jobs' GPUs disjoint.
 * Without a lease directory nothing would, so jobs then run one at a time. */
static void *thread_main(void *arg)
{
    gm_jobs *j = arg;
    pthread_mutex_lock(&j->mu);
    while (!j->quit) {
        job *next = NULL;
        for (size_t i = 0; i < j->njobs && !next; i++)
            if (j->jobs[i]->state == JOB_QUEUED)
                next = j->jobs[i];
        if (!next || (!j->lease_dir[0] && j->running > 0)) {
            pthread_cond_wait(&j->cv, &j->mu);
            continue;
        }
        set_state(next, JOB_STARTING);
        j->running++;
        pthread_mutex_unlock(&j->mu);
        run_job(j, next);
        pthread_mutex_lock(&j->mu);
        j->running--;
        pthread_cond_broadcast(&j->cv);
    }
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

/* ---- the loop's calls ----------------------------------------------------------------------- */

int gm_jobs_start(const gm_jobs_options *o, gm_jobs **out, gm_error *err)
{
    *out = NULL;
    gm_jobs *j = calloc(1, sizeof *j);
    if (!j)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    snprintf(j->db_path, sizeof j->db_path, "%s", o->db_path ? o->db_path : "");
    snprintf(j->lease_dir, sizeof j->lease_dir, "%s", o->lease_dir ? o->lease_dir : "");
    j->have_provider = o->provider && *o->provider && strcmp(o->provider, "auto") != 0;
    snprintf(j->provider, sizeof j->provider, "%s", j->have_provider ? o->provider : "");
    j->simulate = o->simulate;
    j->seed = o->seed;
    snprintf(j->procfs, sizeof j->procfs, "%s", o->procfs_root ? o->procfs_root : "");
    j->check_s = o->check_s > 0 ? o->check_s : 1;
    snprintf(j->docker_host, sizeof j->docker_host, "%s", o->docker_host ? o->docker_host : "");
    if (o->nallow_image && !(j->allow = calloc(o->nallow_image, sizeof *j->allow))) {
        free(j);
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < o->nallow_image; i++)
        snprintf(j->allow[j->nallow++], sizeof *j->allow, "%s", o->allow_image[i]);
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    j->started = true;
    for (size_t i = 0; i < GM_JOBS_RUNNERS; i++) {
        if (pthread_create(&j->threads[i], NULL, thread_main, j) != 0) {
            gm_jobs_free(j);
            return gm_error_set(err, GM_EIO, "cannot start the benchmark jobs' threads");
        }
        j->nthreads++;
    }
    *out = j;
    return GM_OK;
}

void gm_jobs_stop(gm_jobs *j)
{
    if (!j || !j->started)
        return;
    pthread_mutex_lock(&j->mu);
    j->quit = true;
    for (size_t i = 0; i < j->njobs; i++) {
        job *jb = j->jobs[i];
        jb->stop = 1;
        if (jb->state == JOB_QUEUED) {
            snprintf(jb->reason, sizeof jb->reason, "the daemon stopped");
            set_state(jb, JOB_CANCELLED);
        }
    }
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    for (size_t i = 0; i < j->nthreads; i++)
        pthread_join(j->threads[i], NULL);
    j->nthreads = 0;
    j->started = false;
}

void gm_jobs_free(gm_jobs *j)
{
    if (!j)
        return;
    gm_jobs_stop(j);
    for (size_t i = 0; i < j->njobs; i++)
        job_free(j->jobs[i]);
    free(j->jobs);
    free(j->allow);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
}

/* Whether the daemon may start req's image: an engine, and a pattern that admits it. */
static int image_admitted(const gm_jobs *j, const char *image, gm_error *err)
{
    if (!j->docker_host[0])
        return gm_error_set(err, GM_EPERM,
                            "image: this daemon starts no containers; start the daemon with "
                            "--docker [HOST] (or DOCKER_HOST) and --allow-image PATTERN");
    char pats[1024] = "";
    for (size_t i = 0, used = 0; i < j->nallow; i++) {
        if (fnmatch(j->allow[i], image, 0) == 0)
            return GM_OK;
        if (used < sizeof pats)
            used += (size_t)snprintf(pats + used, sizeof pats - used, "%s%s", i ? ", " : "",
                                     j->allow[i]);
    }
    if (!j->nallow)
        return gm_error_set(err, GM_EPERM,
                            "image: %s is not admitted: the daemon was started with no "
                            "--allow-image PATTERN, so no image is",
                            image);
    return gm_error_set(err, GM_EPERM, "image: %s is not admitted by --allow-image %s", image,
                        pats);
}

/* The model a NIM image serves, read from its name: nvcr.io/nim/<org>/<model>:<tag> ->
 * "<org>/<model>"; NULL for any other image. */
static json_t *nim_model(const char *image)
{
    static const char prefix[] = "nvcr.io/nim/";
    if (strncmp(image, prefix, sizeof prefix - 1) != 0)
        return json_null();
    const char *m = image + sizeof prefix - 1;
    const char *slash = strrchr(m, '/');
    size_t len = strcspn(slash ? slash : m, ":@") + (size_t)(slash ? slash - m : 0);
    return len ? json_stringn(m, len) : json_null();
}

static int image_cmp(const void *a, const void *b)
{
    return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "image")),
                  json_string_value(json_object_get(*(json_t *const *)b, "image")));
}

int gm_jobs_images(gm_jobs *j, json_t **out, gm_error *err)
{
    *out = NULL;
    if (!j->docker_host[0])
        return gm_error_set(err, GM_ENOTSUP,
                            "this daemon starts no containers, so it lists no images; start the "
                            "daemon with --docker [HOST] (or DOCKER_HOST) and --allow-image "
                            "PATTERN");
    gm_docker *d = NULL;
    json_t *all = NULL;
    int rc = gm_docker_open(j->docker_host, &d, err);
    if (rc == GM_OK)
        rc = gm_docker_images(d, &all, err);
    gm_docker_close(d);
    if (rc < 0)
        return rc;
    size_t n = json_array_size(all), kept = 0;
    json_t **v = calloc(n ? n : 1, sizeof *v);
    if (!v) {
        json_decref(all);
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(all, i);
        gm_error ignored = {0};
        if (image_admitted(j, json_string_value(json_object_get(e, "image")), &ignored) == GM_OK)
            v[kept++] = e;
    }
    qsort(v, kept, sizeof *v, image_cmp);
    json_t *list = json_array();
    for (size_t i = 0; list && i < kept; i++) {
        const char *name = json_string_value(json_object_get(v[i], "image"));
        json_t *e = json_pack("{s:s, s:O, s:O, s:o}", "image", name, "size_bytes",
                              json_object_get(v[i], "size_bytes"), "created",
                              json_object_get(v[i], "created"), "model", nim_model(name));
        if (!e || json_array_append_new(list, e) < 0) {
            json_decref(list);
            list = NULL;
        }
    }
    free(v);
    json_decref(all);
    if (!list)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    *out = list;
    return GM_OK;
}

int gm_jobs_submit(gm_jobs *j, gm_jobs_request *req, char *id, gm_error *err)
{
    int arc = req->ctr.image ? image_admitted(j, req->ctr.image, err) : GM_OK;
    job *jb = arc == GM_OK ? calloc(1, sizeof *jb) : NULL;
    if (!jb) {
        gm_bench_config_free(&req->cfg);
        json_decref(req->body);
        req->body = NULL;
        return arc < 0 ? arc : gm_error_set(err, GM_ENOMEM, "out of memory");
    }
    jb->cfg = req->cfg;
    memset(&req->cfg, 0, sizeof req->cfg);
    jb->ctr = req->ctr;
    jb->body = req->body;
    req->body = NULL;
    jb->ready_s = NAN;
    jb->count = req->count;
    jb->wait_s = req->wait_s;
    jb->created_ms = gm_clock_wall_ms();
    gm_session_make_id(jb->id, sizeof jb->id, jb->created_ms);
    pthread_mutex_lock(&j->mu);
    size_t active = 0, done = 0;
    for (size_t i = 0; i < j->njobs; i++)
        finished(j->jobs[i]->state) ? done++ : active++;
    if (active >= GM_JOBS_QUEUE_MAX) {
        pthread_mutex_unlock(&j->mu);
        job_free(jb);
        return gm_error_set(err, GM_EBUSY, "%d benchmark jobs are queued or running; retry later",
                            GM_JOBS_QUEUE_MAX);
    }
    /* Finished jobs past the last GM_JOBS_KEEP are forgotten (their results stay stored). */
    while (done >= GM_JOBS_KEEP) {
        for (size_t i = 0; i < j->njobs; i++)
            if (finished(j->jobs[i]->state)) {
                job_free(j->jobs[i]);
                memmove(j->jobs + i, j->jobs + i + 1, (j->njobs - i - 1) * sizeof *j->jobs);
                j->njobs--;
                done--;
                break;
            }
    }
    if (j->njobs == j->cap) {
        size_t cap = j->cap ? j->cap * 2 : 16;
        job **nj = realloc(j->jobs, cap * sizeof *nj);
        if (!nj) {
            pthread_mutex_unlock(&j->mu);
            job_free(jb);
            return gm_error_set(err, GM_ENOMEM, "out of memory");
        }
        j->jobs = nj;
        j->cap = cap;
    }
    /* Two jobs in the same second get distinct ids: the id is the stored benchmark's. */
    for (size_t i = 0; i < j->njobs; i++)
        if (strcmp(j->jobs[i]->id, jb->id) == 0)
            gm_session_make_id(jb->id, sizeof jb->id, jb->created_ms), i = (size_t)-1;
    set_state(jb, JOB_QUEUED);
    j->jobs[j->njobs++] = jb;
    snprintf(id, GM_SESSION_ID_LEN, "%s", jb->id);
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return GM_OK;
}

static json_t *num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* Under the mutex. */
static json_t *job_json(const job *jb)
{
    char created[40], started[40], ended[40];
    gm_json_time(jb->created_ms, created, sizeof created);
    gm_json_time(jb->started_ms, started, sizeof started);
    gm_json_time(jb->ended_ms, ended, sizeof ended);
    json_t *gpus = json_array();
    for (size_t i = 0; gpus && i < jb->ngpus; i++)
        json_array_append_new(gpus, json_integer(jb->gpus[i]));
    char url[96];
    snprintf(url, sizeof url, "/api/benchmarks/jobs/%s", jb->id);
    json_t *o = json_pack(
        "{s:s, s:s, s:s, s:o, s:o, s:o, s:f, s:o, s:o, s:o, s:o, s:I, s:I}", "id", jb->id, "url",
        url, "state", state_names[jb->state], "created", json_string(created), "started",
        jb->started_ms ? json_string(started) : json_null(), "ended",
        finished(jb->state) ? json_string(ended) : json_null(), "state_seconds",
        gm_clock_mono_s() - jb->state_since, "server",
        jb->cfg.url ? gm_json_str(jb->cfg.url) : json_null(), "model",
        jb->cfg.model ? gm_json_str(jb->cfg.model) : json_null(), "label",
        jb->cfg.label ? gm_json_str(jb->cfg.label) : json_null(), "gpus", gpus ? gpus : json_null(),
        "points", (json_int_t)jb->cfg.npoints, "points_done", (json_int_t)jb->points_done);
    if (!o)
        return NULL;
    json_object_set_new(o, "benchmark_id", jb->stored ? json_string(jb->id) : json_null());
    /* An image's job: its container, how long it has been loading (or took to), its output's
     * last lines when it failed. */
    json_object_set_new(o, "image", jb->ctr.image ? gm_json_str(jb->ctr.image) : json_null());
    json_object_set_new(o, "container", jb->ctr_name[0] ? gm_json_str(jb->ctr_name) : json_null());
    json_object_set_new(o, "loading_seconds",
                        jb->state == JOB_LOADING ? json_real(gm_clock_mono_s() - jb->loading_since)
                        : isfinite(jb->ready_s)  ? json_real(jb->ready_s)
                                                 : json_null());
    json_object_set_new(o, "logs", jb->logs ? json_incref(jb->logs) : json_null());
    json_object_set_new(o, "reason", jb->reason[0] ? gm_json_str(jb->reason) : json_null());
    json_t *p = json_null();
    if (jb->have_progress && !finished(jb->state)) {
        const gm_bench_progress *g = &jb->prog;
        p = json_pack("{s:I, s:I, s:s, s:I, s:o, s:f, s:o, s:o, s:o}", "point",
                      (json_int_t)g->point + 1, "points", (json_int_t)g->npoints, "load", jb->load,
                      "requests_done", (json_int_t)g->done, "requests_total",
                      g->total ? json_integer((json_int_t)g->total) : json_null(), "elapsed_s",
                      g->elapsed_s, "ttft_p50_ms", num_or_null(g->ttft_p50_ms), "ttft_p99_ms",
                      num_or_null(g->ttft_p99_ms), "output_tokens_per_s",
                      num_or_null(g->output_tokens_per_s));
    }
    json_object_set_new(o, "progress", p ? p : json_null());
    return o;
}

json_t *gm_jobs_list(gm_jobs *j)
{
    json_t *a = json_array();
    pthread_mutex_lock(&j->mu);
    for (size_t i = j->njobs; a && i > 0; i--)
        json_array_append_new(a, job_json(j->jobs[i - 1]));
    pthread_mutex_unlock(&j->mu);
    return a;
}

json_t *gm_jobs_recent(gm_jobs *j, double seconds)
{
    json_t *a = json_array();
    double now = gm_clock_mono_s();
    pthread_mutex_lock(&j->mu);
    for (size_t i = 0; a && i < j->njobs; i++) {
        const job *jb = j->jobs[i];
        if (!finished(jb->state) || now - jb->state_since <= seconds)
            json_array_append_new(a, job_json(jb));
    }
    pthread_mutex_unlock(&j->mu);
    return a;
}

static job *find(gm_jobs *j, const char *id)
{
    for (size_t i = 0; i < j->njobs; i++)
        if (strcmp(j->jobs[i]->id, id) == 0)
            return j->jobs[i];
    return NULL;
}

json_t *gm_jobs_get(gm_jobs *j, const char *id)
{
    pthread_mutex_lock(&j->mu);
    job *jb = find(j, id);
    json_t *o = jb ? job_json(jb) : NULL;
    pthread_mutex_unlock(&j->mu);
    return o;
}

int gm_jobs_cancel(gm_jobs *j, const char *id, gm_error *err)
{
    pthread_mutex_lock(&j->mu);
    job *jb = find(j, id);
    int rc = GM_OK;
    if (!jb)
        rc = gm_error_set(err, GM_ENOENT, "no benchmark job %s", id);
    else if (finished(jb->state))
        rc = gm_error_set(err, GM_ESTATE, "benchmark job %s has already ended (%s)", id,
                          state_names[jb->state]);
    else {
        jb->stop = 1;
        if (jb->state == JOB_QUEUED)
            set_state(jb, JOB_CANCELLED);
    }
    pthread_mutex_unlock(&j->mu);
    return rc;
}
