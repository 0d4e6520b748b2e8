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

int gm_session_request_parse(const char *body, size_t len, const gm_snapshot *snap,
                             unsigned poll_ms, gm_session_request *out, gm_error *err)
{
    memset(out, 0, sizeof *out);
    json_t *doc = NULL;
    size_t blank = 0;
    /* body[blank] first: strchr finds a NUL too, and a body of NULs is not blank. */
    while (blank < len && body[blank] && strchr(" \t\r\n", body[blank]))
        blank++;
    if (blank < len) {
        json_error_t jerr;
        doc = gm_json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
        if (!doc)
            return gm_error_set(err, GM_EINVAL,
                                "request body is not valid JSON: %s (line %d, column %d)",
                                jerr.text, jerr.line, jerr.column);
        if (!json_is_object(doc)) {
            json_decref(doc);
            return gm_error_set(err, GM_EINVAL,
                                "request body must be a JSON object such as {\"gpus\": [0], "
                                "\"interval\": 1, \"label\": \"name\"}");
        }
    }
    int rc = GM_OK;
    const char *key;
    json_t *v;
    json_object_foreach(doc, key, v)
    {
        if (strcmp(key, "gpus") != 0 && strcmp(key, "interval") != 0 && strcmp(key, "label") != 0) {
            rc = gm_error_set(err, GM_EINVAL,
                              "unknown field \"%.64s\" (accepted: gpus, interval, label)", key);
            goto done;
        }
    }

    char known[256];
    gpu_list_text(snap, known, sizeof known);
    json_t *gpus = json_object_get(doc, "gpus");
    if (gpus && !json_is_null(gpus)) {
        if (!json_is_array(gpus) || json_array_size(gpus) == 0 ||
            json_array_size(gpus) > GM_MAX_GPUS) {
            rc = gm_error_set(err, GM_EINVAL,
                              "\"gpus\" must be an array of 1 to %d GPU indices, e.g. [0, 1]",
                              GM_MAX_GPUS);
            goto done;
        }
        size_t i;
        json_t *g;
        json_array_foreach(gpus, i, g)
        {
            if (!json_is_integer(g) || json_integer_value(g) < 0 ||
                json_integer_value(g) > INT_MAX) {
                rc = gm_error_set(err, GM_EINVAL,
                                  "\"gpus\"[%zu] is not a GPU index (a non-negative integer)", i);
                goto done;
            }
            unsigned idx = (unsigned)json_integer_value(g);
            if (!has_gpu(snap, idx)) {
                rc = gm_error_set(err, GM_EINVAL, "no GPU with index %u (GPUs: %s)", idx,
                                  known[0] ? known : "none");
                goto done;
            }
            out->gpus[out->ngpus++] = idx;
        }
        qsort(out->gpus, out->ngpus, sizeof *out->gpus, cmp_uint);
        size_t w = 0;
        for (size_t k = 0; k < out->ngpus; k++)
            if (w == 0 || out->gpus[w - 1] != out->gpus[k])
                out->gpus[w++] = out->gpus[k];
        out->ngpus = w;
    } else {
        if (!snap || snap->gpu_count == 0) {
            rc = gm_error_set(err, GM_EINVAL, "no GPU is visible: there is nothing to monitor");
            goto done;
        }
        for (unsigned i = 0; i < snap->gpu_count; i++)
            out->gpus[out->ngpus++] = snap->gpus[i].index;
        qsort(out->gpus, out->ngpus, sizeof *out->gpus, cmp_uint);
    }

    double poll_s = poll_ms / 1000.0;
    out->every = 1;
    json_t *iv = json_object_get(doc, "interval");
    if (iv && !json_is_null(iv)) {
        double s = json_is_number(iv) ? json_number_value(iv) : NAN;
        /* A thousandth of slack: 0.1 must pass a 100 ms poll despite binary fractions. */
        if (!isfinite(s) || s < poll_s * 0.999 || s > GM_SESSION_INTERVAL_MAX) {
            rc = gm_error_set(err, GM_EINVAL,
                              "\"interval\" must be a number of seconds from %g (the poll "
                              "interval: sessions take the daemon's samples) to %g",
                              poll_s, GM_SESSION_INTERVAL_MAX);
            goto done;
        }
        double k = round(s / poll_s);
        out->every = k < 1 ? 1 : (unsigned)k;
    }
    out->interval_s = out->every * poll_s;

    json_t *label = json_object_get(doc, "label");
    if (label && !json_is_null(label)) {
        const char *t = json_string_value(label);
        size_t tl = t ? json_string_length(label) : 0;
        bool ok = t && tl <= GM_SESSION_LABEL_MAX && strlen(t) == tl;
        for (size_t k = 0; ok && k < tl; k++)
            if ((unsigned char)t[k] < 0x20 || t[k] == 0x7f)
                ok = false;
        if (!ok) {
            rc = gm_error_set(err, GM_EINVAL,
                              "\"label\" must be a string of at most %d bytes without control "
                              "characters",
                              GM_SESSION_LABEL_MAX);
            goto done;
        }
        memcpy(out->label, t, tl);
        out->label[tl] = '\0';
        out->has_label = true;
    }
done:
    json_decref(doc);
    return rc;
}

/* ---- jobs and the queue ------------------------------------------------------------------- */
