/* query.c - query-string parameters with fixed bounds, and GET /api/history validation. */
#include "server/query.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/config.h"
#include "server/request.h"
#include "base/parse.h"
#include "base/error.h"

void gm_query_init(gm_query *q)
{
    q->count = 0;
    q->used = 0;
}

/* Stores one decoded parameter. */
static int query_put(gm_query *q, const char *k, size_t klen, const char *v, size_t vlen,
                     gm_error *err)
{
    if (klen == 0)
        return gm_error_set(err, GM_EINVAL, "query parameter without a name");
    if (q->count >= GM_QUERY_MAX_PARAMS)
        return gm_error_set(err, GM_EINVAL, "more than %d query parameters", GM_QUERY_MAX_PARAMS);
    if (q->used + klen + vlen + 2 > sizeof q->buf)
        return gm_error_set(err, GM_EINVAL, "query string longer than %d bytes",
                            GM_QUERY_MAX_BYTES);
    char *kd = q->buf + q->used;
    memcpy(kd, k, klen);
    kd[klen] = '\0';
    char *vd = kd + klen + 1;
    if (vlen)
        memcpy(vd, v, vlen);
    vd[vlen] = '\0';
    q->used += klen + vlen + 2;
    q->p[q->count].key = kd;
    q->p[q->count].value = vd;
    q->count++;
    return GM_OK;
}

int gm_query_parse(gm_query *q, const char *raw, size_t n, gm_error *err)
{
    if (n > GM_QUERY_MAX_BYTES)
        return gm_error_set(err, GM_EINVAL, "query string longer than %d bytes",
                            GM_QUERY_MAX_BYTES);
    char key[GM_QUERY_MAX_BYTES + 1], val[GM_QUERY_MAX_BYTES + 1];
    const char *p = raw, *end = raw + n;
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *fe = amp ? amp : end;
        if (fe > p) { /* "a=1&&b=2": empty pieces are skipped */
            /* Split before decoding, so an encoded "=" (%3D) stays part of its key or value. */
            const char *eq = memchr(p, '=', (size_t)(fe - p));
            const char *ke = eq ? eq : fe;
            int kl = gm_http_pct_decode(p, (size_t)(ke - p), true, key, sizeof key, err);
            if (kl < 0)
                return kl;
            int vl =
                eq ? gm_http_pct_decode(eq + 1, (size_t)(fe - eq - 1), true, val, sizeof val, err)
                   : 0;
            if (vl < 0)
                return vl;
            int rc = query_put(q, key, (size_t)kl, val, (size_t)vl, err);
            if (rc < 0)
                return rc;
        }
        p = fe + (amp ? 1 : 0);
    }
    return GM_OK;
}

const char *gm_query_get(const gm_query *q, const char *key)
{
    for (size_t i = 0; i < q->count; i++)
        if (strcmp(q->p[i].key, key) == 0)
            return q->p[i].value;
    return NULL;
}

const char *gm_history_series_name(const gm_history_pick *r, char *buf, size_t len)
{
    if (r->source == GM_RING_HOST)
        snprintf(buf, len, "host.%s", gm_host_metric_name((gm_host_metric)r->metric));
    else
        snprintf(buf, len, "%s", gm_metric_get((gm_metric)r->metric)->name);
    return buf;
}

/* Calls fn for each comma-separated item of every value of key; stops at its first error. */
static int each_item(const gm_query *q, const char *key, int (*fn)(const char *item, void *ctx),
                     void *ctx, size_t *seen)
{
    *seen = 0;
    for (size_t i = 0; i < q->count; i++) {
        if (strcmp(q->p[i].key, key) != 0)
            continue;
        const char *p = q->p[i].value;
        for (;;) {
            const char *comma = strchr(p, ',');
            size_t n = comma ? (size_t)(comma - p) : strlen(p);
            char item[96];
            if (n >= sizeof item) {
                /* Cut and marked, so the cut never reads as another index or name: "000...03"
                 * cut to its zeros would be GPU 0. Refused, with the "..." in the message. */
                memcpy(item, p, sizeof item - 4);
                memcpy(item + sizeof item - 4, "...", 4);
            } else {
                memcpy(item, p, n);
                item[n] = '\0';
            }
            (*seen)++;
            int rc = fn(item, ctx);
            if (rc < 0)
                return rc;
            if (!comma)
                break;
            p = comma + 1;
        }
    }
    return GM_OK;
}

typedef struct parse_ctx {
    unsigned gpu_count;
    const bool *present;
    bool gpu_on[GM_MAX_GPUS];
    int gpu_metric[GM_M__COUNT];
    size_t n_gpu_metric;
    int host_metric[GM_H__COUNT];
    size_t n_host_metric;
    gm_error *err;
} parse_ctx;

static int take_gpu(const char *item, void *vctx)
{
    parse_ctx *c = vctx;
    unsigned long long idx;
    if (gm_parse_uint(item, 0, 1000000, &idx) < 0)
        return gm_error_set(c->err, GM_EINVAL, "gpu=\"%s\" is not a GPU index", item);
    if (idx >= c->gpu_count) {
        if (c->gpu_count == 0)
            return gm_error_set(c->err, GM_EINVAL, "gpu=%llu: no GPU is recorded", idx);
        return gm_error_set(c->err, GM_EINVAL, "gpu=%llu is not recorded (GPU indexes 0 to %u)",
                            idx, c->gpu_count - 1);
    }
    if (c->present && !c->present[idx])
        return gm_error_set(c->err, GM_EINVAL, "gpu=%llu is not in the latest sample", idx);
    c->gpu_on[idx] = true;
    return GM_OK;
}

static int take_metric(const char *item, void *vctx)
{
    parse_ctx *c = vctx;
    if (strncmp(item, "host.", 5) == 0) {
        for (int m = 0; m < GM_H__COUNT; m++)
            if (strcmp(item + 5, gm_host_metric_name((gm_host_metric)m)) == 0) {
                for (size_t i = 0; i < c->n_host_metric; i++)
                    if (c->host_metric[i] == m)
                        return GM_OK;
                c->host_metric[c->n_host_metric++] = m;
                return GM_OK;
            }
    } else {
        int m = gm_metric_find(item);
        if (m >= 0) {
            for (size_t i = 0; i < c->n_gpu_metric; i++)
                if (c->gpu_metric[i] == m)
                    return GM_OK;
            c->gpu_metric[c->n_gpu_metric++] = m;
            return GM_OK;
        }
    }
    return gm_error_set(c->err, GM_EINVAL,
                        "unknown metric \"%s\" (GPU metrics by their canonical name, e.g. "
                        "utilization.gpu or memory.used; host metrics as host.<name>, e.g. "
                        "host.cpu.utilization)",
                        item);
}

int gm_history_params_parse(const gm_query *q, unsigned gpu_count, const bool *present,
                            unsigned history_s, unsigned poll_ms, gm_history_params *out,
                            gm_error *err)
{
    static const char *const known[] = {"gpu", "metric", "seconds", "step", "token"};
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < q->count; i++) {
        size_t k = 0;
        while (k < sizeof known / sizeof *known && strcmp(q->p[i].key, known[k]) != 0)
            k++;
        if (k == sizeof known / sizeof *known)
            return gm_error_set(err, GM_EINVAL,
                                "unknown parameter \"%s\" (accepted: gpu, metric, seconds, step)",
                                q->p[i].key);
    }
    if (history_s == 0)
        return gm_error_set(err, GM_EINVAL, "history is disabled (--history 0)");

    parse_ctx c = {.gpu_count = gpu_count, .present = present, .err = err};
    size_t seen;
    int rc = each_item(q, "metric", take_metric, &c, &seen);
    if (rc < 0)
        return rc;
    if (seen == 0)
        return gm_error_set(err, GM_EINVAL,
                            "metric is required, e.g. metric=utilization.gpu,memory.used or "
                            "metric=host.cpu.utilization");
    rc = each_item(q, "gpu", take_gpu, &c, &seen);
    if (rc < 0)
        return rc;
    if (seen == 0)
        for (unsigned g = 0; g < gpu_count && g < GM_MAX_GPUS; g++)
            c.gpu_on[g] = !present || present[g];

    unsigned range_s =
        GM_HISTORY_DEFAULT_SECONDS < history_s ? GM_HISTORY_DEFAULT_SECONDS : history_s;
    out->range_ms = (int64_t)range_s * 1000;
    const char *v = gm_query_get(q, "seconds");
    if (v) {
        if (gm_parse_duration_ms(v, 1, (int64_t)UINT32_MAX * 1000, &out->range_ms) < 0)
            return gm_error_set(err, GM_EINVAL, "seconds=\"%s\" is not a positive duration (%s)", v,
                                gm_parse_duration_help());
        if (out->range_ms > (int64_t)history_s * 1000)
            return gm_error_set(err, GM_EINVAL,
                                "seconds=%s is more than the %u s of history kept (--history)", v,
                                history_s);
        range_s = (unsigned)((out->range_ms + 999) / 1000);
    }

    v = gm_query_get(q, "step");
    if (v && gm_parse_duration_ms(v, 1, out->range_ms, &out->step_ms) < 0)
        return gm_error_set(err, GM_EINVAL,
                            "step=\"%s\" is not a duration from 1ms to the range (%s)", v,
                            gm_parse_duration_help());

    int64_t resolution = out->step_ms > (int64_t)poll_ms ? out->step_ms : (int64_t)poll_ms;
    int64_t per_series = out->range_ms / resolution + 1;
    if (per_series > GM_HISTORY_MAX_POINTS) {
        int64_t min_step_s = (out->range_ms + (int64_t)GM_HISTORY_MAX_POINTS * 1000 - 1) /
                             ((int64_t)GM_HISTORY_MAX_POINTS * 1000);
        return gm_error_set(err, GM_EINVAL,
                            "%u s at %lld ms resolution is %lld points per series, over the "
                            "limit of %d: use step=%lld or more",
                            range_s, (long long)resolution, (long long)per_series,
                            GM_HISTORY_MAX_POINTS, (long long)(min_step_s < 1 ? 1 : min_step_s));
    }

    for (size_t m = 0; m < c.n_gpu_metric; m++)
        for (unsigned g = 0; g < GM_MAX_GPUS; g++) {
            if (!c.gpu_on[g])
                continue;
            if (out->count >= GM_HISTORY_MAX_SERIES)
                return gm_error_set(err, GM_EINVAL, "more than %d series in one request",
                                    GM_HISTORY_MAX_SERIES);
            out->series[out->count++] = (gm_history_pick){GM_RING_GPU, g, c.gpu_metric[m]};
        }
    for (size_t m = 0; m < c.n_host_metric; m++) {
        if (out->count >= GM_HISTORY_MAX_SERIES)
            return gm_error_set(err, GM_EINVAL, "more than %d series in one request",
                                GM_HISTORY_MAX_SERIES);
        out->series[out->count++] = (gm_history_pick){GM_RING_HOST, 0, c.host_metric[m]};
    }
    if ((int64_t)out->count * per_series > GM_HISTORY_MAX_TOTAL_POINTS)
        return gm_error_set(err, GM_EINVAL,
                            "%zu series of %lld points is over the limit of %d points per "
                            "request: ask for fewer series or a larger step",
                            out->count, (long long)per_series, GM_HISTORY_MAX_TOTAL_POINTS);
    return GM_OK;
}
