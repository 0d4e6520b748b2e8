/* timeline.c - the timeline's text, written as samples arrive. Numbers are written the way
 * gm_json_dump writes a real (12 significant digits, ".0" on integral values), so a timeline
 * reads the same whether it came from memory or from the store. */
#include "core/timeline.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/error.h"

#define FLUSH_AT (64u << 10)

/* CSV columns: names with their units, and decimals fixed per column (what the sources
 * resolve: whole-percent utilization and degrees, MiB of bytes, mW and mJ). */
static const struct {
    const char *name;
    int decimals;
} csv_cols[GM_SM__COUNT] = {
    [GM_SM_UTIL] = {"utilization_percent", 1},
    [GM_SM_MEM_USED_MB] = {"memory_used_mib", 2},
    [GM_SM_MEM_PCT] = {"memory_used_percent", 2},
    [GM_SM_TEMP_C] = {"temperature_c", 1},
    [GM_SM_POWER_W] = {"power_w", 3},
    [GM_SM_ENERGY_J] = {"energy_counter_j", 3}, /* the board's counter, not the run's */
};

struct gm_timeline {
    gm_timeline_format fmt;
    int64_t start_ms; /* 0: unknown */
    bool simulated;
    bool doc; /* inside a document: close it too */
    gm_buf *out;
    FILE *file;
    int file_errno;
    size_t count;
};

static void flush(gm_timeline *tl, bool all)
{
    if (!tl->file || tl->out->failed || (!all && tl->out->len < FLUSH_AT) || !tl->out->len)
        return;
    if (!tl->file_errno && fwrite(tl->out->p, 1, tl->out->len, tl->file) != tl->out->len)
        tl->file_errno = errno ? errno : EIO;
    tl->out->len = 0;
    tl->out->p[0] = '\0';
}

static void put_real(gm_buf *b, double v)
{
    if (!isfinite(v)) {
        gm_buf_puts(b, "null");
        return;
    }
    char num[40];
    int n = snprintf(num, sizeof num, "%.12g", v);
    if (n > 0 && !strpbrk(num, ".eE"))
        snprintf(num + n, sizeof num - (size_t)n, ".0");
    gm_buf_puts(b, num);
}

static int start(gm_timeline_format f, gm_buf *out, FILE *file, gm_timeline **tl)
{
    *tl = calloc(1, sizeof **tl);
    if (!*tl)
        return GM_ENOMEM;
    (*tl)->fmt = f;
    (*tl)->out = out;
    (*tl)->file = file;
    return GM_OK;
}

int gm_timeline_open(gm_timeline_format f, gm_buf *out, FILE *file, gm_timeline **tl)
{
    if (start(f, out, file, tl) < 0)
        return GM_ENOMEM;
    if (f == GM_TIMELINE_CSV) {
        gm_buf_puts(out, "time,t_s,gpu");
        for (int m = 0; m < GM_SM__COUNT; m++)
            gm_buf_printf(out, ",%s", csv_cols[m].name);
        gm_buf_puts(out, ",simulated\n");
    } else {
        gm_buf_puts(out, "[");
    }
    return out->failed ? GM_ENOMEM : GM_OK;
}

int gm_timeline_open_doc(gm_timeline_format f, const json_t *doc, gm_buf *out, FILE *file,
                         gm_timeline **tl)
{
    *tl = NULL;
    if (!json_is_object(doc) || f == GM_TIMELINE_CSV)
        return GM_EINVAL;
    bool pretty = f == GM_TIMELINE_JSON_PRETTY;
    char *text =
        json_dumps(doc, JSON_REAL_PRECISION(12) | (pretty ? JSON_INDENT(2) : JSON_COMPACT));
    if (!text)
        return GM_ENOMEM;
    /* Everything but the closing brace (and, pretty, the newline before it), then the member. */
    size_t n = strlen(text);
    while (n && text[n - 1] != '}')
        n--;
    if (n)
        n--;
    if (pretty && n && text[n - 1] == '\n')
        n--;
    bool empty = n == 1; /* "{}" */
    if (start(f, out, file, tl) < 0) {
        free(text);
        return GM_ENOMEM;
    }
    (*tl)->doc = true;
    gm_buf_put(out, text, n);
    free(text);
    if (pretty)
        gm_buf_puts(out, empty ? "\n  \"timeline\": [" : ",\n  \"timeline\": [");
    else
        gm_buf_puts(out, empty ? "\"timeline\":[" : ",\"timeline\":[");
    return out->failed ? GM_ENOMEM : GM_OK;
}

/* A pretty line break at depth levels of two spaces, below the document's "timeline" member
 * (depth 2 holds the samples); the bare array starts at depth 1. */
static void nl(gm_timeline *tl, int depth)
{
    if (tl->fmt != GM_TIMELINE_JSON_PRETTY)
        return;
    gm_buf_puts(tl->out, "\n");
    for (int i = 0; i < depth - (tl->doc ? 0 : 1); i++)
        gm_buf_puts(tl->out, "  ");
}

void gm_timeline_add(gm_timeline *tl, double t_s, size_t ngpus, const unsigned *gpu,
                     const double *values)
{
    gm_buf *b = tl->out;
    if (tl->fmt == GM_TIMELINE_CSV) {
        char when[40] = "";
        if (tl->start_ms)
            gm_json_time(tl->start_ms + (int64_t)llround(t_s * 1000), when, sizeof when);
        for (size_t k = 0; k < ngpus; k++) {
            gm_buf_printf(b, "%s,%.3f,%u", when, t_s, gpu[k]);
            for (int m = 0; m < GM_SM__COUNT; m++) {
                double v = values[k * GM_SM__COUNT + m];
                if (isfinite(v))
                    gm_buf_printf(b, ",%.*f", csv_cols[m].decimals, v);
                else
                    gm_buf_puts(b, ",");
            }
            gm_buf_puts(b, tl->simulated ? ",true\n" : ",false\n");
        }
    } else {
        const char *sep = tl->fmt == GM_TIMELINE_JSON_PRETTY ? ": " : ":";
        if (tl->count)
            gm_buf_puts(b, ",");
        nl(tl, 2);
        gm_buf_puts(b, "{");
        nl(tl, 3);
        gm_buf_printf(b, "\"t\"%s", sep);
        put_real(b, t_s);
        gm_buf_puts(b, ",");
        nl(tl, 3);
        gm_buf_printf(b, "\"gpus\"%s{", sep);
        for (size_t k = 0; k < ngpus; k++) {
            if (k)
                gm_buf_puts(b, ",");
            nl(tl, 4);
            gm_buf_printf(b, "\"%u\"%s{", gpu[k], sep);
            for (int m = 0; m < GM_SM__COUNT; m++) {
                if (m)
                    gm_buf_puts(b, ",");
                nl(tl, 5);
                gm_buf_printf(b, "\"%s\"%s", gm_session_metric_name(m), sep);
                put_real(b, values[k * GM_SM__COUNT + m]);
            }
            nl(tl, 4);
            gm_buf_puts(b, "}");
        }
        if (ngpus)
            nl(tl, 3);
        gm_buf_puts(b, "}");
        nl(tl, 2);
        gm_buf_puts(b, "}");
    }
    tl->count++;
    flush(tl, false);
}

void gm_timeline_set_start_ms(gm_timeline *tl, int64_t started_ms)
{
    tl->start_ms = started_ms;
}

void gm_timeline_set_simulated(gm_timeline *tl, bool simulated)
{
    tl->simulated = simulated;
}

void gm_timeline_add_session(gm_timeline *tl, const gm_session *s)
{
    if (!tl->start_ms)
        tl->start_ms = gm_session_started_ms(s);
    size_t ng = gm_session_gpu_count(s);
    unsigned idx[GM_MAX_GPUS];
    for (size_t k = 0; k < ng && k < GM_MAX_GPUS; k++)
        idx[k] = gm_session_gpu_at(s, k)->index;
    for (size_t i = 0; i < gm_session_timeline_count(s) && !tl->out->failed; i++) {
        double t;
        const double *v;
        if (gm_session_sample(s, i, &t, &v) < 0)
            break;
        gm_timeline_add(tl, t, ng, idx, v);
    }
}

size_t gm_timeline_count(const gm_timeline *tl)
{
    return tl->count;
}

int gm_timeline_close(gm_timeline *tl, gm_error *err)
{
    gm_buf *b = tl->out;
    if (tl->fmt != GM_TIMELINE_CSV) {
        if (tl->count)
            nl(tl, 1);
        gm_buf_puts(b, "]");
        if (tl->doc) {
            if (tl->fmt == GM_TIMELINE_JSON_PRETTY)
                gm_buf_puts(b, "\n");
            gm_buf_puts(b, "}");
        }
        if (tl->fmt == GM_TIMELINE_JSON_PRETTY || tl->file)
            gm_buf_puts(b, "\n");
    }
    flush(tl, true);
    int rc = GM_OK;
    if (b->failed)
        rc = gm_error_set(err, GM_ENOMEM, "out of memory writing the timeline");
    else if (tl->file_errno)
        rc = gm_error_set(err, GM_EIO, "writing the timeline: %s", strerror(tl->file_errno));
    free(tl);
    return rc;
}
