/* bench_import.c - vLLM and GenAI-Perf result files to and from benchmark documents (see
 * bench_import.h for the formats). */
#include "core/bench_import.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/file.h"
#include "base/json.h"
#include "base/error.h"

/* Python's json module writes NaN, Infinity and -Infinity, which JSON does not have: outside
 * strings they become null (absent), so a vLLM file with a statistic it could not compute
 * still reads. Returns a malloc'd copy (NUL-terminated, *olen its length) or NULL. */
static char *python_json(const char *text, size_t len, size_t *olen)
{
    char *o = malloc(len + len / 2 + 1);
    if (!o)
        return NULL;
    size_t j = 0;
    bool str = false;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (str) {
            o[j++] = c;
            if (c == '\\' && i + 1 < len)
                o[j++] = text[++i];
            else if (c == '"')
                str = false;
            continue;
        }
        if (c == '"') {
            str = true;
        } else if (len - i >= 3 && memcmp(text + i, "NaN", 3) == 0) {
            memcpy(o + j, "null", 4);
            j += 4;
            i += 2;
            continue;
        } else if (len - i >= 9 && memcmp(text + i, "-Infinity", 9) == 0) {
            memcpy(o + j, "null", 4);
            j += 4;
            i += 8;
            continue;
        } else if (len - i >= 8 && memcmp(text + i, "Infinity", 8) == 0) {
            memcpy(o + j, "null", 4);
            j += 4;
            i += 7;
            continue;
        }
        o[j++] = c;
    }
    o[j] = '\0';
    *olen = j;
    return o;
}

/* ---- typed reads: absent and null are "not given"; anything else of the wrong type is an
 * error naming the key ---------------------------------------------------------------------- */

typedef struct reader {
    const char *name; /* the file, for messages */
    gm_error *err;
    bool failed;
} reader;

static void bad(reader *r, const char *key, const char *what)
{
    if (!r->failed)
        gm_error_set(r->err, GM_EPARSE, "%s: \"%s\" is not %s", r->name, key, what);
    r->failed = true;
}

/* A finite number, or NaN when absent or null. */
static double get_num(reader *r, const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return NAN;
    if (!json_is_number(v)) {
        bad(r, key, "a number");
        return NAN;
    }
    return json_number_value(v);
}

/* A whole number >= 0 into *out: true when given. */
static bool get_count(reader *r, const json_t *o, const char *key, json_int_t *out)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return false;
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
        bad(r, key, "a whole number of at least 0");
        return false;
    }
    *out = json_integer_value(v);
    return true;
}

static const char *get_str(reader *r, const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return NULL;
    if (!json_is_string(v)) {
        bad(r, key, "a string");
        return NULL;
    }
    return json_string_value(v);
}

static void set_num(json_t *o, const char *key, double v)
{
    if (isfinite(v))
        json_object_set_new(o, key, json_real(v));
}

static void set_count(reader *r, json_t *p, const char *key, const json_t *src, const char *skey)
{
    json_int_t n;
    if (get_count(r, src, skey, &n))
        json_object_set_new(p, key, json_integer(n));
}

/* The "api" of a benchmark document for a vLLM backend or a GenAI-Perf endpoint type: only
 * the two gpumon knows; any other is not named. */
static const char *api_of(const char *backend)
{
    if (!backend)
        return NULL;
    if (strcmp(backend, "openai-chat") == 0 || strcmp(backend, "chat") == 0)
        return "chat";
    if (strcmp(backend, "openai") == 0 || strcmp(backend, "vllm") == 0 ||
        strcmp(backend, "completions") == 0)
        return "completions";
    return NULL;
}

/* ---- vLLM ------------------------------------------------------------------------------- */

static const struct {
    const char *vllm, *gm; /* "ttft" -> "ttft_ms" */
} vllm_dists[] = {{"ttft", "ttft_ms"}, {"tpot", "tpot_ms"}, {"itl", "itl_ms"}, {"e2el", "e2e_ms"}};

/* "p99_ttft_ms" -> "p99" for metric m ("ttft"); NULL when key is not a percentile of m. */
static bool vllm_percentile(const char *key, const char *m, char *buf, size_t len)
{
    if (key[0] != 'p' || !isdigit((unsigned char)key[1]))
        return false;
    const char *us = strchr(key, '_');
    if (!us || (size_t)(us - key) >= len)
        return false;
    for (const char *c = key + 1; c < us; c++)
        if (!isdigit((unsigned char)*c) && *c != '.')
            return false;
    size_t ml = strlen(m);
    if (strncmp(us + 1, m, ml) != 0 || strcmp(us + 1 + ml, "_ms") != 0)
        return false;
    memcpy(buf, key, (size_t)(us - key));
    buf[us - key] = '\0';
    return true;
}

static json_t *vllm_point(reader *r, const json_t *o)
{
    json_t *p = json_object();
    if (!p)
        return NULL;
    /* The load: a concurrency limit with requests sent at once ("inf") is a closed loop of
     * that many; otherwise a rate, with its concurrency cap kept beside it. */
    json_int_t conc = 0;
    bool has_conc = get_count(r, o, "max_concurrency", &conc);
    const json_t *rate = json_object_get(o, "request_rate");
    bool rate_inf = json_is_string(rate) && strcmp(json_string_value(rate), "inf") == 0;
    if (rate && !json_is_null(rate) && !rate_inf &&
        !(json_is_number(rate) && json_number_value(rate) > 0))
        bad(r, "request_rate", "a rate above 0 or \"inf\"");
    if (has_conc && (!rate || json_is_null(rate) || rate_inf)) {
        json_object_set_new(p, "concurrency", json_integer(conc));
    } else if (rate && !json_is_null(rate)) {
        json_object_set_new(p, "request_rate",
                            rate_inf ? json_string("inf") : json_real(json_number_value(rate)));
        if (has_conc)
            json_object_set_new(p, "max_concurrency", json_integer(conc));
        set_num(p, "burstiness", get_num(r, o, "burstiness"));
    }
    set_count(r, p, "requests", o, "num_prompts");
    set_count(r, p, "completed", o, "completed");
    set_count(r, p, "failed", o, "failed");
    set_num(p, "duration_s", get_num(r, o, "duration"));
    set_num(p, "requests_per_s", get_num(r, o, "request_throughput"));
    set_num(p, "output_tokens_per_s", get_num(r, o, "output_throughput"));
    set_num(p, "total_tokens_per_s", get_num(r, o, "total_token_throughput"));
    set_count(r, p, "output_tokens", o, "total_output_tokens");
    set_count(r, p, "input_tokens", o, "total_input_tokens");
    set_num(p, "goodput_requests_per_s", get_num(r, o, "request_goodput"));
    set_num(p, "peak_concurrency", get_num(r, o, "max_concurrent_requests"));
    for (size_t d = 0; d < sizeof vllm_dists / sizeof *vllm_dists; d++) {
        const char *m = vllm_dists[d].vllm;
        char key[64];
        json_t *dist = json_object();
        if (!dist)
            break;
        snprintf(key, sizeof key, "mean_%s_ms", m);
        set_num(dist, "mean", get_num(r, o, key));
        snprintf(key, sizeof key, "std_%s_ms", m);
        set_num(dist, "std", get_num(r, o, key));
        snprintf(key, sizeof key, "median_%s_ms", m);
        set_num(dist, "p50", get_num(r, o, key));
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)o, k, v)
        {
            char pct[16];
            if (vllm_percentile(k, m, pct, sizeof pct))
                set_num(dist, pct, get_num(r, o, k));
        }
        if (json_object_size(dist))
            json_object_set_new(p, vllm_dists[d].gm, dist);
        else
            json_decref(dist);
    }
    return p;
}

/* "20261126-091102" (local time, as vLLM writes it) -> epoch ms, -1 when not that. */
static int64_t vllm_date(const char *s)
{
    struct tm tm = {0};
    if (!s)
        return -1;
    const char *end = strptime(s, "%Y%m%d-%H%M%S", &tm);
    if (!end || *end)
        return -1;
    tm.tm_isdst = -1;
    time_t t = mktime(&tm);
    return t == (time_t)-1 ? -1 : (int64_t)t * 1000;
}

static bool is_vllm(const json_t *o)
{
    const json_t *rt = json_object_get(o, "request_throughput");
    return (json_is_number(rt) || json_is_null(rt)) && json_object_get(o, "duration") &&
           json_object_get(o, "completed");
}

static bool is_genai_perf(const json_t *o)
{
    return json_is_object(json_object_get(o, "request_throughput")) &&
           (json_object_get(o, "time_to_first_token") || json_object_get(o, "request_latency"));
}

/* ---- GenAI-Perf ------------------------------------------------------------------------- */

static const char *const gp_stats[][2] = {
    {"avg", "mean"}, {"std", "std"}, {"min", "min"}, {"p25", "p25"}, {"p50", "p50"},
    {"p75", "p75"},  {"p90", "p90"}, {"p95", "p95"}, {"p99", "p99"}, {"max", "max"},
};

/* The statistics object key of o, NULL when absent; an error when not an object, or when a
 * time is in another unit than ms. */
static const json_t *gp_metric(reader *r, const json_t *o, const char *key, bool time)
{
    const json_t *m = json_object_get(o, key);
    if (!m || json_is_null(m))
        return NULL;
    if (!json_is_object(m)) {
        bad(r, key, "a statistics object ({\"unit\", \"avg\", ...})");
        return NULL;
    }
    const char *unit = get_str(r, m, "unit");
    if (time && unit && strcmp(unit, "ms") != 0) {
        if (!r->failed)
            gm_error_set(r->err, GM_EPARSE, "%s: \"%s\" is in \"%s\", not ms", r->name, key, unit);
        r->failed = true;
        return NULL;
    }
    return m;
}

static void gp_dist(reader *r, json_t *p, const json_t *o, const char *key, const char *gm)
{
    const json_t *m = gp_metric(r, o, key, true);
    if (!m)
        return;
    json_t *dist = json_object();
    if (!dist)
        return;
    for (size_t i = 0; i < sizeof gp_stats / sizeof *gp_stats; i++)
        set_num(dist, gp_stats[i][1], get_num(r, m, gp_stats[i][0]));
    if (json_object_size(dist))
        json_object_set_new(p, gm, dist);
    else
        json_decref(dist);
}

static double gp_avg(reader *r, const json_t *o, const char *key)
{
    const json_t *m = gp_metric(r, o, key, false);
    return m ? get_num(r, m, "avg") : NAN;
}

/* input_config's model: a name, or the list of names it was given. */
static json_t *gp_model(reader *r, const json_t *cfg)
{
    const json_t *m = json_object_get(cfg, "model");
    if (!m || json_is_null(m))
        m = json_object_get(cfg, "model_names");
    if (!m || json_is_null(m))
        return NULL;
    if (json_is_string(m))
        return json_string(json_string_value(m));
    if (json_is_array(m) && json_array_size(m) > 0) {
        char buf[512] = "";
        size_t i;
        const json_t *s;
        json_array_foreach(m, i, s)
        {
            if (!json_is_string(s)) {
                bad(r, "model", "a name or a list of names");
                return NULL;
            }
            size_t used = strlen(buf);
            snprintf(buf + used, sizeof buf - used, "%s%s", i ? "," : "", json_string_value(s));
        }
        return json_string(buf);
    }
    bad(r, "model", "a name or a list of names");
    return NULL;
}

static json_t *genai_perf_doc(reader *r, const json_t *o)
{
    json_t *p = json_object();
    json_t *doc = json_object();
    if (!p || !doc) {
        json_decref(p);
        json_decref(doc);
        return NULL;
    }
    const json_t *cfg = json_object_get(o, "input_config");
    if (cfg && !json_is_object(cfg))
        bad(r, "input_config", "an object");
    json_int_t conc;
    double rate = get_num(r, cfg, "request_rate");
    if (get_count(r, cfg, "concurrency", &conc) && conc > 0 && !(rate > 0))
        json_object_set_new(p, "concurrency", json_integer(conc));
    else if (rate > 0)
        json_object_set_new(p, "request_rate", json_real(rate));
    json_int_t count;
    if (get_count(r, cfg, "request_count", &count) && count > 0) /* 0: for a time instead */
        json_object_set_new(p, "requests", json_integer(count));
    double rps = gp_avg(r, o, "request_throughput");
    if (!isfinite(rps) && !r->failed)
        bad(r, "request_throughput", "a statistics object with \"avg\"");
    set_num(p, "requests_per_s", rps);
    set_num(p, "output_tokens_per_s", gp_avg(r, o, "output_token_throughput"));
    set_num(p, "goodput_requests_per_s", gp_avg(r, o, "request_goodput"));
    gp_dist(r, p, o, "time_to_first_token", "ttft_ms");
    gp_dist(r, p, o, "inter_token_latency", "tpot_ms");
    gp_dist(r, p, o, "request_latency", "e2e_ms");
    /* The mean tokens per request: there is no total in the file. */
    set_num(p, "output_tokens_mean", gp_avg(r, o, "output_sequence_length"));
    set_num(p, "input_tokens_mean", gp_avg(r, o, "input_sequence_length"));

    json_t *model = gp_model(r, cfg);
    const char *url = get_str(r, cfg, "url");
    if (!url && !r->failed && json_is_string(json_object_get(cfg, "u")))
        url = json_string_value(json_object_get(cfg, "u"));
    const char *api = api_of(get_str(r, cfg, "endpoint_type"));
    json_object_set_new(doc, "model", model ? model : json_null());
    json_object_set_new(doc, "url", url ? json_string(url) : json_null());
    json_object_set_new(doc, "api", api ? json_string(api) : json_null());
    json_t *pts = json_array();
    json_array_append_new(pts, p);
    json_object_set_new(doc, "points", pts);
    return doc;
}

/* ---- the document ------------------------------------------------------------------------ */

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int finish(json_t *doc, const char *name, const char *format, const char *tool, json_t **out)
{
    char source[64];
    snprintf(source, sizeof source, "imported from %s", tool);
    json_object_set_new(doc, "kind", json_string("bench"));
    if (!json_is_string(json_object_get(doc, "label")))
        json_object_set_new(doc, "label", gm_json_str(base_name(name)));
    json_object_set_new(doc, "source", json_string(source));
    json_object_set_new(doc, "imported",
                        json_pack("{s:s, s:s}", "format", format, "file", base_name(name)));
    json_object_set_new(doc, "provider", json_null());
    json_object_set_new(doc, "gpus", json_array());
    json_object_set_new(doc, "interrupted", json_false());
    const json_t *pts = json_object_get(doc, "points");
    const json_t *p0 = json_array_get(pts, 0);
    json_t *cfg = json_object();
    json_object_set_new(cfg, "load",
                        json_string(json_object_get(p0, "concurrency")    ? "concurrency"
                                    : json_object_get(p0, "request_rate") ? "request_rate"
                                                                          : "unknown"));
    const json_t *req = json_object_get(p0, "requests");
    json_object_set_new(cfg, "requests", req ? json_copy((json_t *)req) : json_null());
    json_object_set_new(doc, "config", cfg);
    *out = doc;
    return GM_OK;
}

/* The JSON objects of clean[0..n) into objs: one object, or (vLLM's --append-result) several,
 * one per line. */
static int read_objects(const char *clean, size_t n, const char *name, json_t *objs, gm_error *err)
{
    size_t at = 0;
    for (;;) {
        while (at < n && isspace((unsigned char)clean[at]))
            at++;
        if (at == n)
            return GM_OK;
        json_error_t je;
        json_t *o = gm_json_loadb(clean + at, n - at, JSON_DISABLE_EOF_CHECK, &je);
        if (!o)
            return gm_error_set(err, GM_EPARSE, "%s: not JSON (line %d: %s)", name, je.line,
                                je.text);
        if (!json_is_object(o)) {
            json_decref(o);
            return gm_error_set(err, GM_EPARSE, "%s: not a result file (a JSON object)", name);
        }
        if (json_array_size(objs) >= GM_BENCH_IMPORT_MAX_POINTS) {
            json_decref(o);
            return gm_error_set(err, GM_EPARSE, "%s: more than %d results in one file", name,
                                GM_BENCH_IMPORT_MAX_POINTS);
        }
        json_array_append_new(objs, o);
        at += (size_t)je.position;
    }
}

/* The document of one or more vLLM results into *doc (the caller frees it on failure); a
 * point per result, the run's model, label, API and start from the first. */
static int vllm_import(reader *r, const json_t *objs, const char *name, json_t **doc, json_t **out,
                       int64_t *started_ms)
{
    gm_error *err = r->err;
    const json_t *first = json_array_get(objs, 0);
    int rc = GM_OK;
    json_t *pts = json_array();
    *doc = json_object();
    if (!pts || !*doc) {
        json_decref(pts);
        rc = gm_error_set(err, GM_ENOMEM, "out of memory");
    } else {
        json_object_set_new(*doc, "points", pts);
    }
    size_t i;
    const json_t *o;
    json_array_foreach(objs, i, o)
    {
        if (rc != GM_OK || r->failed)
            break;
        if (!is_vllm(o)) {
            rc = gm_error_set(err, GM_EPARSE, "%s: result %zu is not a vLLM result like the first",
                              name, i + 1);
            break;
        }
        if (get_num(r, o, "duration") < 0 || isnan(get_num(r, o, "duration")))
            bad(r, "duration", "a number of seconds of at least 0");
        json_int_t c;
        if (!get_count(r, o, "completed", &c) && !r->failed)
            bad(r, "completed", "a whole number of at least 0");
        json_t *p = vllm_point(r, o);
        if (!p) {
            rc = gm_error_set(err, GM_ENOMEM, "out of memory");
            break;
        }
        json_array_append_new(pts, p);
    }
    if (rc != GM_OK || r->failed)
        return rc;
    const char *model = get_str(r, first, "model_id");
    const char *label = get_str(r, first, "label");
    const char *backend = get_str(r, first, "backend");
    if (!backend)
        backend = get_str(r, first, "endpoint_type");
    const char *api = api_of(backend);
    const char *date = get_str(r, first, "date");
    *started_ms = vllm_date(date);
    json_object_set_new(*doc, "model", model ? json_string(model) : json_null());
    if (label)
        json_object_set_new(*doc, "label", gm_json_str(label));
    json_object_set_new(*doc, "url", json_null());
    json_object_set_new(*doc, "api", api ? json_string(api) : json_null());
    if (backend)
        json_object_set_new(*doc, "backend", gm_json_str(backend));
    if (!r->failed)
        rc = finish(*doc, name, "vllm", "vLLM", out);
    return rc;
}

int gm_bench_import(const char *text, size_t len, const char *name, json_t **out,
                    int64_t *started_ms, gm_error *err)
{
    *out = NULL;
    *started_ms = -1;
    size_t n = 0;
    char *clean = python_json(text, len, &n);
    if (!clean)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    reader r = {name, err, false};
    json_t *objs = json_array();
    int rc = objs ? read_objects(clean, n, name, objs, err) : GM_OK;
    free(clean);
    if (!objs)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    if (rc == GM_OK && json_array_size(objs) == 0)
        rc = gm_error_set(err, GM_EPARSE, "%s: empty", name);
    const json_t *first = json_array_get(objs, 0);
    json_t *doc = NULL;
    if (rc == GM_OK && is_genai_perf(first)) {
        if (json_array_size(objs) > 1)
            rc = gm_error_set(err, GM_EPARSE, "%s: a GenAI-Perf export holds one object", name);
        else if (!(doc = genai_perf_doc(&r, first)))
            rc = gm_error_set(err, GM_ENOMEM, "out of memory");
        if (rc == GM_OK && !r.failed)
            rc = finish(doc, name, "genai-perf", "GenAI-Perf", out);
    } else if (rc == GM_OK && is_vllm(first)) {
        rc = vllm_import(&r, objs, name, &doc, out, started_ms);
    } else if (rc == GM_OK) {
        rc = gm_error_set(err, GM_EPARSE,
                          "%s: neither a vLLM result (vllm bench serve --save-result: "
                          "\"request_throughput\", \"duration\", \"completed\") nor a "
                          "GenAI-Perf export (profile_export_genai_perf.json: "
                          "\"request_throughput\": {\"avg\": ...}, \"time_to_first_token\")",
                          name);
    }
    if (rc == GM_OK && r.failed)
        rc = GM_EPARSE;
    if (rc != GM_OK) {
        json_decref(doc);
        *out = NULL;
        *started_ms = -1;
    }
    json_decref(objs);
    return rc;
}

int gm_bench_import_file(const char *path, json_t **out, int64_t *started_ms, gm_error *err)
{
    *out = NULL;
    *started_ms = -1;
    char *buf;
    size_t len;
    int rc = gm_file_read_all(path, GM_BENCH_IMPORT_MAX_BYTES, "result file", &buf, &len, err);
    if (rc < 0)
        return rc;
    rc = gm_bench_import(buf, len, path, out, started_ms, err);
    free(buf);
    return rc;
}

/* ---- export ----------------------------------------------------------------------------- */

static void put_num(json_t *o, const char *key, const json_t *v)
{
    if (json_is_number(v))
        json_object_set_new(o, key, json_real(json_number_value(v)));
}

static void put_int(json_t *o, const char *key, const json_t *v)
{
    if (json_is_integer(v))
        json_object_set_new(o, key, json_integer(json_integer_value(v)));
    else if (json_is_real(v) && isfinite(json_real_value(v)))
        json_object_set_new(o, key, json_integer((json_int_t)llround(json_real_value(v))));
}

/* "2026-11-26T09:11:02.412Z" -> "20261126-091102" in local time, as vLLM names its runs. */
static bool vllm_date_of(const char *iso, char *buf, size_t len)
{
    struct tm tm = {0};
    if (!iso)
        return false;
    const char *end = strptime(iso, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!end)
        return false;
    time_t t = timegm(&tm);
    struct tm lt;
    localtime_r(&t, &lt);
    return strftime(buf, len, "%Y%m%d-%H%M%S", &lt) > 0;
}

int gm_bench_export_vllm(const json_t *doc, size_t k, json_t **out, gm_error *err)
{
    *out = NULL;
    const json_t *pts = json_object_get(doc, "points");
    const json_t *p = json_array_get(pts, k);
    if (!json_is_object(p))
        return gm_error_set(err, GM_EINVAL, "no point %zu: the benchmark has %zu point%s", k + 1,
                            json_array_size(pts), json_array_size(pts) == 1 ? "" : "s");
    json_t *o = json_object();
    if (!o)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    char date[32];
    if (vllm_date_of(json_string_value(json_object_get(doc, "started")), date, sizeof date))
        json_object_set_new(o, "date", json_string(date));
    const char *api = json_string_value(json_object_get(doc, "api"));
    const char *backend = json_string_value(json_object_get(doc, "backend"));
    if (!backend && api)
        backend = strcmp(api, "chat") == 0 ? "openai-chat" : "openai";
    if (backend) {
        json_object_set_new(o, "endpoint_type", json_string(backend));
        json_object_set_new(o, "backend", json_string(backend));
    }
    const json_t *label = json_object_get(doc, "label");
    json_object_set_new(o, "label",
                        json_is_string(label) ? json_copy((json_t *)label) : json_null());
    const json_t *model = json_object_get(doc, "model");
    json_object_set_new(o, "model_id",
                        json_is_string(model) ? json_copy((json_t *)model) : json_null());
    json_object_set_new(o, "tokenizer_id",
                        json_is_string(model) ? json_copy((json_t *)model) : json_null());
    put_int(o, "num_prompts", json_object_get(p, "requests"));
    const json_t *conc = json_object_get(p, "concurrency");
    const json_t *rate = json_object_get(p, "request_rate");
    if (json_is_number(rate))
        json_object_set_new(o, "request_rate", json_real(json_number_value(rate)));
    else
        json_object_set_new(o, "request_rate", json_string("inf"));
    const json_t *burst = json_object_get(p, "burstiness");
    json_object_set_new(o, "burstiness",
                        json_real(json_is_number(burst) ? json_number_value(burst) : 1.0));
    if (!conc)
        conc = json_object_get(p, "max_concurrency");
    json_object_set_new(o, "max_concurrency",
                        json_is_integer(conc) ? json_integer(json_integer_value(conc))
                                              : json_null());
    put_num(o, "duration", json_object_get(p, "duration_s"));
    put_int(o, "completed", json_object_get(p, "completed"));
    put_int(o, "failed", json_object_get(p, "failed"));
    put_int(o, "total_input_tokens", json_object_get(p, "input_tokens"));
    put_int(o, "total_output_tokens", json_object_get(p, "output_tokens"));
    put_num(o, "request_throughput", json_object_get(p, "requests_per_s"));
    const json_t *good = json_object_get(p, "goodput_requests_per_s");
    json_object_set_new(o, "request_goodput",
                        json_is_number(good) ? json_real(json_number_value(good)) : json_null());
    put_num(o, "output_throughput", json_object_get(p, "output_tokens_per_s"));
    put_num(o, "total_token_throughput", json_object_get(p, "total_tokens_per_s"));
    put_int(o, "max_concurrent_requests", json_object_get(p, "peak_concurrency"));
    for (size_t d = 0; d < sizeof vllm_dists / sizeof *vllm_dists; d++) {
        const json_t *dist = json_object_get(p, vllm_dists[d].gm);
        if (!json_is_object(dist))
            continue;
        const char *m = vllm_dists[d].vllm;
        char key[64];
        snprintf(key, sizeof key, "mean_%s_ms", m);
        put_num(o, key, json_object_get(dist, "mean"));
        snprintf(key, sizeof key, "median_%s_ms", m);
        put_num(o, key, json_object_get(dist, "p50"));
        snprintf(key, sizeof key, "std_%s_ms", m);
        put_num(o, key, json_object_get(dist, "std"));
        const char *s;
        const json_t *v;
        json_object_foreach((json_t *)dist, s, v)
        {
            if (s[0] == 'p' && isdigit((unsigned char)s[1]) && strcmp(s, "p50") != 0) {
                snprintf(key, sizeof key, "%s_%s_ms", s, m);
                put_num(o, key, v);
            }
        }
    }
    *out = o;
    return GM_OK;
}
