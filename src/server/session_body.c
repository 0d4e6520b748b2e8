/* session_body.c - the body of POST /api/sessions: strict JSON, known fields only, GPUs that
 * exist in the newest sample, an interval that is a whole number of polls. */
#include "server/session_body.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/error.h"

static bool has_gpu(const gm_snapshot *snap, unsigned idx)
{
    return snap && gm_snapshot_gpu(snap, idx) != NULL;
}

static void gpu_list_text(const gm_snapshot *snap, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (unsigned i = 0; snap && i < snap->gpu_count && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%u", i ? ", " : "", snap->gpus[i].index);
}

static int cmp_uint(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return (x > y) - (x < y);
}

/* The body as a JSON object, or *doc NULL for a blank body (all defaults). */
static int load_doc(const char *body, size_t len, json_t **doc, gm_error *err)
{
    *doc = NULL;
    size_t blank = 0;
    /* body[blank] first: strchr finds a NUL too, and a body of NULs is not blank. */
    while (blank < len && body[blank] && strchr(" \t\r\n", body[blank]))
        blank++;
    if (blank == len)
        return GM_OK;
    json_error_t jerr;
    json_t *d = gm_json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (!d)
        return gm_error_set(err, GM_EINVAL,
                            "request body is not valid JSON: %s (line %d, column %d)", jerr.text,
                            jerr.line, jerr.column);
    if (!json_is_object(d)) {
        json_decref(d);
        return gm_error_set(err, GM_EINVAL,
                            "request body must be a JSON object such as {\"gpus\": [0], "
                            "\"interval\": 1, \"label\": \"name\"}");
    }
    *doc = d;
    return GM_OK;
}

static int check_fields(json_t *doc, gm_error *err)
{
    const char *key;
    json_t *v;
    json_object_foreach(doc, key, v)
    {
        if (strcmp(key, "gpus") != 0 && strcmp(key, "interval") != 0 && strcmp(key, "label") != 0)
            return gm_error_set(err, GM_EINVAL,
                                "unknown field \"%.64s\" (accepted: gpus, interval, label)", key);
    }
    return GM_OK;
}

/* The GPUs asked for, sorted without repeats; every GPU of the newest sample when none are. */
static int parse_gpus(const json_t *gpus, const gm_snapshot *snap, gm_session_request *out,
                      gm_error *err)
{
    if (!gpus || json_is_null(gpus)) {
        if (!snap || snap->gpu_count == 0)
            return gm_error_set(err, GM_EINVAL, "no GPU is visible: there is nothing to monitor");
        for (unsigned i = 0; i < snap->gpu_count; i++)
            out->gpus[out->ngpus++] = snap->gpus[i].index;
        qsort(out->gpus, out->ngpus, sizeof *out->gpus, cmp_uint);
        return GM_OK;
    }
    if (!json_is_array(gpus) || json_array_size(gpus) == 0 || json_array_size(gpus) > GM_MAX_GPUS)
        return gm_error_set(err, GM_EINVAL,
                            "\"gpus\" must be an array of 1 to %d GPU indices, e.g. [0, 1]",
                            GM_MAX_GPUS);
    char known[256];
    gpu_list_text(snap, known, sizeof known);
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g)
    {
        if (!json_is_integer(g) || json_integer_value(g) < 0 || json_integer_value(g) > INT_MAX)
            return gm_error_set(err, GM_EINVAL,
                                "\"gpus\"[%zu] is not a GPU index (a non-negative integer)", i);
        unsigned idx = (unsigned)json_integer_value(g);
        if (!has_gpu(snap, idx))
            return gm_error_set(err, GM_EINVAL, "no GPU with index %u (GPUs: %s)", idx,
                                known[0] ? known : "none");
        out->gpus[out->ngpus++] = idx;
    }
    qsort(out->gpus, out->ngpus, sizeof *out->gpus, cmp_uint);
    size_t w = 0;
    for (size_t k = 0; k < out->ngpus; k++)
        if (w == 0 || out->gpus[w - 1] != out->gpus[k])
            out->gpus[w++] = out->gpus[k];
    out->ngpus = w;
    return GM_OK;
}

/* The interval as a whole number of polls (every), one poll when none is asked for. */
static int parse_interval(const json_t *iv, unsigned poll_ms, gm_session_request *out,
                          gm_error *err)
{
    double poll_s = poll_ms / 1000.0;
    out->every = 1;
    if (iv && !json_is_null(iv)) {
        double s = json_is_number(iv) ? json_number_value(iv) : NAN;
        /* A thousandth of slack: 0.1 must pass a 100 ms poll despite binary fractions. */
        if (!isfinite(s) || s < poll_s * 0.999 || s > GM_SESSION_INTERVAL_MAX)
            return gm_error_set(err, GM_EINVAL,
                                "\"interval\" must be a number of seconds from %g (the poll "
                                "interval: sessions take the daemon's samples) to %g",
                                poll_s, GM_SESSION_INTERVAL_MAX);
        double k = round(s / poll_s);
        out->every = k < 1 ? 1 : (unsigned)k;
    }
    out->interval_s = out->every * poll_s;
    return GM_OK;
}

static int parse_label(const json_t *label, gm_session_request *out, gm_error *err)
{
    if (!label || json_is_null(label))
        return GM_OK;
    const char *t = json_string_value(label);
    size_t tl = t ? json_string_length(label) : 0;
    bool ok = t && tl <= GM_SESSION_LABEL_MAX && strlen(t) == tl;
    for (size_t k = 0; ok && k < tl; k++)
        if ((unsigned char)t[k] < 0x20 || t[k] == 0x7f)
            ok = false;
    if (!ok)
        return gm_error_set(err, GM_EINVAL,
                            "\"label\" must be a string of at most %d bytes without control "
                            "characters",
                            GM_SESSION_LABEL_MAX);
    memcpy(out->label, t, tl);
    out->label[tl] = '\0';
    out->has_label = true;
    return GM_OK;
}

int gm_session_request_parse(const char *body, size_t len, const gm_snapshot *snap,
                             unsigned poll_ms, gm_session_request *out, gm_error *err)
{
    memset(out, 0, sizeof *out);
    json_t *doc;
    int rc = load_doc(body, len, &doc, err);
    if (rc < 0)
        return rc;
    /* In the order a reader checks them: the first wrong thing is the one reported. */
    if ((rc = check_fields(doc, err)) >= 0 &&
        (rc = parse_gpus(json_object_get(doc, "gpus"), snap, out, err)) >= 0 &&
        (rc = parse_interval(json_object_get(doc, "interval"), poll_ms, out, err)) >= 0)
        rc = parse_label(json_object_get(doc, "label"), out, err);
    json_decref(doc);
    return rc;
}

/* ---- jobs and the queue ------------------------------------------------------------------- */
