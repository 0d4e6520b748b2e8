/* bench_html.c - the self-contained HTML report of one or several benchmarks (bench_html.h). */
#include "core/bench_html.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/bench_report.h"
#include "base/error.h"

#define MAX_DOCS 16

/* Colors told apart in print and by most color-blind readers (Okabe-Ito). */
static const char *const palette[] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7",
                                      "#e69f00", "#56b4e9", "#000000", "#f0e442"};
#define NCOLORS (sizeof palette / sizeof *palette)

static void esc(FILE *out, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", out);
            break;
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        case '\'':
            fputs("&#39;", out);
            break;
        default:
            fputc(*s, out);
        }
    }
}

static const char *str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static double num(const json_t *o, const char *key, const char *sub)
{
    const json_t *v = json_object_get(o, key);
    if (sub)
        v = json_object_get(v, sub);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* The load of a point as a number for an axis: its concurrency or its rate (NaN for "inf"). */
static double load_value(const json_t *p)
{
    const json_t *c = json_object_get(p, "concurrency");
    if (json_is_integer(c))
        return (double)json_integer_value(c);
    return num(p, "request_rate", NULL);
}

/* ---- SVG charts ------------------------------------------------------------------------- */

typedef struct series {
    char name[160];
    double *x, *y;
    size_t n;
    const char *color;
    bool dashed;
    bool dots; /* a mark at each point (a sweep), not for a long timeline */
} series;

static double nice_step(double range)
{
    if (!(range > 0))
        return 1;
    double raw = range / 5, mag = pow(10, floor(log10(raw))), f = raw / mag;
    return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
}

static void fmt_tick(char *buf, size_t len, double v, double step)
{
    if (fabs(v) < step / 1e6)
        v = 0;
    if (step >= 1)
        snprintf(buf, len, "%.0f", v);
    else if (step >= 0.1)
        snprintf(buf, len, "%.1f", v);
    else if (step >= 0.01)
        snprintf(buf, len, "%.2f", v);
    else
        snprintf(buf, len, "%.3g", v);
}

enum { W = 600, H = 300, ML = 64, MR = 16, MT = 16, MB = 44 };

/* A chart's plotting area: the data range its axes span, rounded out to whole ticks. */
typedef struct frame {
    double x0, x1, y0, y1, xs, ys, pw, ph;
} frame;

static double px(const frame *f, double v)
{
    return ML + (v - f->x0) / (f->x1 - f->x0) * f->pw;
}

static double py(const frame *f, double v)
{
    return MT + f->ph - (v - f->y0) / (f->y1 - f->y0) * f->ph;
}

/* The frame of the series' finite points, from 0 (or the data's minimum when below) to the
 * data's maximum; false when no point is finite. */
static bool chart_frame(const series *s, size_t ns, frame *f)
{
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    size_t count = 0;
    for (size_t i = 0; i < ns; i++)
        for (size_t k = 0; k < s[i].n; k++)
            if (isfinite(s[i].x[k]) && isfinite(s[i].y[k])) {
                x0 = fmin(x0, s[i].x[k]);
                x1 = fmax(x1, s[i].x[k]);
                y0 = fmin(y0, s[i].y[k]);
                y1 = fmax(y1, s[i].y[k]);
                count++;
            }
    if (count == 0)
        return false;
    if (x0 > 0)
        x0 = 0;
    if (y0 > 0)
        y0 = 0;
    if (!(x1 > x0))
        x1 = x0 + fmax(1, fabs(x0));
    if (!(y1 > y0))
        y1 = y0 + fmax(1, fabs(y0));
    double xs = nice_step(x1 - x0), ys = nice_step(y1 - y0);
    f->xs = xs;
    f->ys = ys;
    f->x0 = floor(x0 / xs) * xs;
    f->y0 = floor(y0 / ys) * ys;
    f->x1 = ceil(x1 / xs) * xs;
    f->y1 = ceil(y1 / ys) * ys;
    f->pw = W - ML - MR;
    f->ph = H - MT - MB;
    return true;
}

/* The grid with its tick labels, the two axes and their labels. */
static void svg_axes(FILE *out, const frame *f, const char *xlabel, const char *ylabel)
{
    char t[32];
    /* At most a dozen ticks, counted: a step lost in a huge value's precision ends too. */
    for (int k = 0; k <= 12; k++) {
        double v = f->y0 + k * f->ys;
        if (!(v <= f->y1 + f->ys / 2))
            break;
        fmt_tick(t, sizeof t, v, f->ys);
        fprintf(out,
                "<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>"
                "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                ML, W - MR, py(f, v), py(f, v), ML - 6, py(f, v) + 4, t);
    }
    for (int k = 0; k <= 12; k++) {
        double v = f->x0 + k * f->xs;
        if (!(v <= f->x1 + f->xs / 2))
            break;
        fmt_tick(t, sizeof t, v, f->xs);
        fprintf(out,
                "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%.1f\"/>"
                "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                px(f, v), px(f, v), MT, MT + f->ph, px(f, v), MT + f->ph + 16, t);
    }
    fprintf(out,
            "<line class=\"axis\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>"
            "<line class=\"axis\" x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%.1f\"/>\n",
            ML, W - MR, MT + f->ph, MT + f->ph, ML, ML, MT, MT + f->ph);
    fprintf(out, "<text class=\"label\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">",
            ML + f->pw / 2, H - 6);
    esc(out, xlabel);
    fprintf(out,
            "</text><text class=\"label\" transform=\"translate(14 %.1f) rotate(-90)\" "
            "text-anchor=\"middle\">",
            MT + f->ph / 2);
    esc(out, ylabel);
    fprintf(out, "</text>\n");
}

/* One series: a polyline broken where a value is absent, and its dots when it has them. */
static void svg_series(FILE *out, const frame *f, const series *s)
{
    bool open = false;
    for (size_t k = 0; k < s->n; k++) {
        bool ok = isfinite(s->x[k]) && isfinite(s->y[k]);
        if (ok && !open) {
            fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"",
                    s->color, s->dashed ? " stroke-dasharray=\"6 4\"" : "");
            open = true;
        } else if (!ok && open) {
            fprintf(out, "\"/>\n");
            open = false;
        }
        if (ok)
            fprintf(out, "%.1f,%.1f ", px(f, s->x[k]), py(f, s->y[k]));
    }
    if (open)
        fprintf(out, "\"/>\n");
    for (size_t k = 0; s->dots && k < s->n; k++)
        if (isfinite(s->x[k]) && isfinite(s->y[k])) {
            fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>",
                    px(f, s->x[k]), py(f, s->y[k]), s->color);
            esc(out, s->name);
            fprintf(out, ": %.4g, %.4g</title></circle>\n", s->x[k], s->y[k]);
        }
}

/* A line chart with axes from 0 (or the data's minimum when below) to the data's maximum, ticks
 * at round values, one polyline per series broken where a value is absent, and a legend. Says
 * "no data" instead of drawing empty axes. */
static void svg_chart(FILE *out, const char *title, const char *xlabel, const char *ylabel,
                      const series *s, size_t ns)
{
    frame f;
    bool any = chart_frame(s, ns, &f);
    fprintf(out, "<figure class=\"chart\"><figcaption>");
    esc(out, title);
    fprintf(out, "</figcaption>\n");
    if (!any) {
        fprintf(out, "<p class=\"none\">No data for this chart in %s.</p></figure>\n",
                ns > 1 ? "these benchmarks" : "this benchmark");
        return;
    }
    fprintf(out, "<svg viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"",
            W, H, W, H);
    esc(out, title);
    fprintf(out, "\">\n");
    svg_axes(out, &f, xlabel, ylabel);
    for (size_t i = 0; i < ns; i++)
        svg_series(out, &f, &s[i]);
    fprintf(out, "</svg>\n<div class=\"legend\">");
    for (size_t i = 0; i < ns; i++) {
        fprintf(out,
                "<span><svg width=\"24\" height=\"10\"><line x1=\"0\" x2=\"24\" y1=\"5\" "
                "y2=\"5\" stroke=\"%s\" stroke-width=\"2\"%s/></svg> ",
                s[i].color, s[i].dashed ? " stroke-dasharray=\"6 4\"" : "");
        esc(out, s[i].name);
        fprintf(out, "</span>");
    }
    fprintf(out, "</div></figure>\n");
}

static void series_free(series *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(s[i].x);
        free(s[i].y);
    }
}

static bool series_alloc(series *s, size_t n)
{
    s->x = calloc(n ? n : 1, sizeof *s->x);
    s->y = calloc(n ? n : 1, sizeof *s->y);
    s->n = n;
    return s->x && s->y;
}

/* A benchmark's name in a legend: its label, else its id. */
static void doc_name(const json_t *doc, char *buf, size_t len)
{
    const char *label = str(doc, "label"), *id = str(doc, "id");
    snprintf(buf, len, "%s", label && *label ? label : id ? id : "benchmark");
}

/* The sweep charts: a series per benchmark (two for TTFT, p50 solid and p99 dashed). */
static int sweep_charts(FILE *out, const json_t *const *docs, size_t n)
{
    series s[2 * MAX_DOCS];
    memset(s, 0, sizeof s);
    bool rate = false;
    int rc = GM_OK;
    for (size_t d = 0; d < n && rc == GM_OK; d++) {
        const json_t *pts = json_object_get(docs[d], "points");
        size_t np = json_array_size(pts);
        char name[128];
        doc_name(docs[d], name, sizeof name);
        for (int q = 0; q < 2; q++) {
            series *x = &s[2 * d + (size_t)q];
            if (!series_alloc(x, np)) {
                rc = GM_ENOMEM;
                break;
            }
            x->color = palette[d % NCOLORS];
            x->dashed = q == 1;
            x->dots = true;
            snprintf(x->name, sizeof x->name, "%s%s", n > 1 ? name : "",
                     q ? (n > 1 ? " TTFT p99" : "TTFT p99") : (n > 1 ? " TTFT p50" : "TTFT p50"));
            for (size_t k = 0; k < np; k++) {
                const json_t *p = json_array_get(pts, k);
                x->x[k] = num(p, "output_tokens_per_s", NULL);
                x->y[k] = num(p, "ttft_ms", q ? "p99" : "p50");
                if (json_object_get(p, "request_rate"))
                    rate = true;
            }
        }
    }
    if (rc == GM_OK)
        svg_chart(out, "Time to first token against throughput", "output tokens/s", "TTFT (ms)", s,
                  2 * n);
    const char *load = rate ? "load (concurrency or requests/s)" : "concurrency";
    static const struct {
        const char *key, *title, *unit;
    } per_load[] = {
        {"output_tokens_per_s", "Output tokens/s against the load", "output tokens/s"},
        {"output_tokens_per_joule", "Output tokens per joule against the load",
         "output tokens per joule"},
    };
    series_free(s, 2 * n);
    for (size_t c = 0; c < sizeof per_load / sizeof *per_load && rc == GM_OK; c++) {
        memset(s, 0, sizeof s);
        for (size_t d = 0; d < n && rc == GM_OK; d++) {
            series *x = &s[d];
            const json_t *pts = json_object_get(docs[d], "points");
            if (!series_alloc(x, json_array_size(pts))) {
                rc = GM_ENOMEM;
                break;
            }
            x->dots = true;
            x->color = palette[d % NCOLORS];
            doc_name(docs[d], x->name, sizeof x->name);
            for (size_t k = 0; k < x->n; k++) {
                const json_t *p = json_array_get(pts, k);
                x->x[k] = load_value(p);
                x->y[k] = num(p, per_load[c].key, NULL);
            }
        }
        if (rc == GM_OK)
            svg_chart(out, per_load[c].title, load, per_load[c].unit, s, n);
        series_free(s, n);
    }
    return rc;
}

/* The GPUs of one benchmark over its run, from its points' timelines: power and utilization,
 * a series per GPU, broken between points. */
static int gpu_charts(FILE *out, const json_t *doc)
{
    const json_t *pts = json_object_get(doc, "points");
    char gpus[16][16];
    size_t ng = 0, total = 0, i;
    const json_t *p;
    json_array_foreach(pts, i, p)
    {
        const json_t *tl = json_object_get(p, "gpu_timeline");
        total += json_array_size(json_object_get(tl, "t_s")) + 1;
        const char *k;
        const json_t *g;
        json_object_foreach((json_t *)json_object_get(tl, "gpus"), k, g)
        {
            bool seen = false;
            for (size_t j = 0; j < ng; j++)
                seen = seen || strcmp(gpus[j], k) == 0;
            if (!seen && ng < 16)
                snprintf(gpus[ng++], sizeof gpus[0], "%s", k);
        }
    }
    if (ng == 0) {
        fprintf(out, "<p class=\"none\">No GPU timeline: %s.</p>\n",
                json_object_get(doc, "imported") ? "an imported result has no GPU samples"
                                                 : "the GPUs were not sampled");
        return GM_OK;
    }
    static const struct {
        const char *key, *title, *unit;
    } metric[] = {{"power_draw_w", "GPU power over the run", "power (W)"},
                  {"utilization", "GPU utilization over the run", "utilization (%)"}};
    int rc = GM_OK;
    for (size_t m = 0; m < 2 && rc == GM_OK; m++) {
        series s[16];
        memset(s, 0, sizeof s);
        for (size_t g = 0; g < ng; g++) {
            if (!series_alloc(&s[g], total)) {
                rc = GM_ENOMEM;
                ng = g + 1;
                break;
            }
            snprintf(s[g].name, sizeof s[g].name, "GPU %s", gpus[g]);
            s[g].color = palette[g % NCOLORS];
            size_t at = 0;
            json_array_foreach(pts, i, p)
            {
                const json_t *tl = json_object_get(p, "gpu_timeline");
                const json_t *t = json_object_get(tl, "t_s");
                const json_t *v = json_object_get(
                    json_object_get(json_object_get(tl, "gpus"), gpus[g]), metric[m].key);
                for (size_t k = 0; k < json_array_size(t) && at < total; k++, at++) {
                    const json_t *tv = json_array_get(t, k), *vv = json_array_get(v, k);
                    s[g].x[at] = json_is_number(tv) ? json_number_value(tv) : NAN;
                    s[g].y[at] = json_is_number(vv) ? json_number_value(vv) : NAN;
                }
                if (at < total) { /* a gap between points */
                    s[g].x[at] = NAN;
                    s[g].y[at++] = NAN;
                }
            }
            s[g].n = at;
        }
        if (rc == GM_OK)
            svg_chart(out, metric[m].title, "seconds since the benchmark started", metric[m].unit,
                      s, ng);
        series_free(s, ng);
    }
    return rc;
}

/* ---- tables ----------------------------------------------------------------------------- */

static void td_num(FILE *out, double v, int prec)
{
    if (isfinite(v))
        fprintf(out, "<td>%.*f</td>", prec, v);
    else
        fprintf(out, "<td class=\"na\">-</td>");
}

static void points_table(FILE *out, const json_t *doc)
{
    fprintf(out, "<table class=\"points\"><thead><tr><th>load</th><th>requests/s</th>"
                 "<th>output tokens/s</th><th>TTFT p50 (ms)</th><th>TTFT p99 (ms)</th>"
                 "<th>TPOT p50 (ms)</th><th>ITL p50 (ms)</th><th>E2E p50 (ms)</th>"
                 "<th>goodput (req/s)</th><th>energy (J)</th><th>tokens/J</th><th>J/request</th>"
                 "<th>valid</th></tr></thead><tbody>\n");
    size_t i;
    const json_t *p;
    json_array_foreach(json_object_get(doc, "points"), i, p)
    {
        char load[64];
        gm_bench_point_load(p, load, sizeof load);
        fprintf(out, "<tr><td>");
        esc(out, load);
        fprintf(out, "</td>");
        td_num(out, num(p, "requests_per_s", NULL), 2);
        td_num(out, num(p, "output_tokens_per_s", NULL), 1);
        td_num(out, num(p, "ttft_ms", "p50"), 2);
        td_num(out, num(p, "ttft_ms", "p99"), 2);
        td_num(out, num(p, "tpot_ms", "p50"), 2);
        td_num(out, num(p, "itl_ms", "p50"), 2);
        td_num(out, num(p, "e2e_ms", "p50"), 1);
        td_num(out, num(p, "goodput_requests_per_s", NULL), 2);
        td_num(out, num(p, "energy_j", NULL), 0);
        td_num(out, num(p, "output_tokens_per_joule", NULL), 3);
        td_num(out, num(p, "joules_per_request", NULL), 2);
        const json_t *v = json_object_get(p, "valid");
        if (json_is_false(v)) {
            fprintf(out, "<td class=\"bad\">no: ");
            size_t j;
            const json_t *r;
            json_array_foreach(json_object_get(p, "invalid_reasons"), j, r)
            {
                if (j)
                    fprintf(out, "; ");
                esc(out, json_string_value(r));
            }
            fprintf(out, "</td>");
        } else {
            fprintf(out, "<td>%s</td>", json_is_true(v) ? "yes" : "-");
        }
        fprintf(out, "</tr>\n");
    }
    fprintf(out, "</tbody></table>\n");
}

/* bench --snapshot: did the machine stay the same from the first point to the last? */
static void audit_block(FILE *out, const json_t *doc)
{
    const json_t *a = json_object_get(doc, "audit");
    if (!json_is_object(a))
        return;
    const char *v = str(a, "verdict");
    bool changed = v && strcmp(v, "changed") == 0;
    bool same = v && strcmp(v, "unchanged") == 0;
    fprintf(out, "<p class=\"audit%s\"><strong>System snapshot:</strong> ", changed ? " warn" : "");
    if (same) {
        fprintf(out, "the machine was unchanged during the run.</p>\n");
        return;
    }
    if (!changed) {
        fprintf(out, "no verdict (");
        esc(out, str(a, "reason") ? str(a, "reason") : "unknown");
        fprintf(out, ").</p>\n");
        return;
    }
    fprintf(out, "the machine changed during the run:</p>\n"
                 "<ul class=\"audit-changes\">\n");
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(a, "changes"), i, c)
    {
        fprintf(out, "<li>");
        esc(out, str(c, "message") ? str(c, "message") : str(c, "what") ? str(c, "what") : "?");
        fprintf(out, "</li>\n");
    }
    fprintf(out, "</ul>\n");
}

static void dl_item(FILE *out, const char *k, const char *v)
{
    if (!v || !*v)
        return;
    fprintf(out, "<dt>%s</dt><dd>", k);
    esc(out, v);
    fprintf(out, "</dd>");
}

static void settings(FILE *out, const json_t *doc, size_t d)
{
    char name[128], buf[512];
    doc_name(doc, name, sizeof name);
    fprintf(out,
            "<section class=\"bench\"><h2><span class=\"swatch\" style=\"background:%s\">"
            "</span>",
            palette[d % NCOLORS]);
    esc(out, name);
    if (json_is_string(json_object_get(doc, "provider")) &&
        strcmp(str(doc, "provider"), "sim") == 0)
        fprintf(out, " <span class=\"badge\">simulated GPUs</span>");
    fprintf(out, "</h2>\n<dl>");
    dl_item(out, "id", str(doc, "id"));
    dl_item(out, "started", str(doc, "started"));
    dl_item(out, "source", str(doc, "source"));
    const json_t *imp = json_object_get(doc, "imported");
    dl_item(out, "file", str(imp, "file"));
    const json_t *c = json_object_get(doc, "container");
    dl_item(out, "server", str(c, "image") ? str(c, "image") : str(doc, "url"));
    dl_item(out, "model", str(doc, "model"));
    dl_item(out, "api", str(doc, "api"));
    const json_t *cfg = json_object_get(doc, "config");
    buf[0] = '\0';
    static const char *const keys[] = {"requests", "duration_s", "input_tokens", "output_tokens",
                                       "prompts"};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        const json_t *v = json_object_get(cfg, keys[k]);
        size_t used = strlen(buf);
        if (json_is_integer(v))
            snprintf(buf + used, sizeof buf - used, "%s%s %lld", used ? ", " : "", keys[k],
                     (long long)json_integer_value(v));
        else if (json_is_real(v))
            snprintf(buf + used, sizeof buf - used, "%s%s %g", used ? ", " : "", keys[k],
                     json_real_value(v));
        else if (json_is_string(v))
            snprintf(buf + used, sizeof buf - used, "%s%s %s", used ? ", " : "", keys[k],
                     json_string_value(v));
    }
    dl_item(out, "settings", buf);
    buf[0] = '\0';
    size_t i;
    const json_t *g;
    json_array_foreach(json_object_get(doc, "gpus"), i, g)
    {
        size_t used = strlen(buf);
        snprintf(buf + used, sizeof buf - used, "%s%lld: %s", i ? ", " : "",
                 (long long)json_integer_value(json_object_get(g, "index")),
                 str(g, "name") ? str(g, "name") : "?");
    }
    dl_item(out, "GPUs", buf);
    fprintf(out, "</dl>\n");
}

static const char css[] =
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;"
    "max-width:1340px;padding:0 16px;color:#1b1f24;background:#fff}"
    "h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em}"
    "dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px}dt{color:#57606a}"
    "dd{margin:0;overflow-wrap:anywhere}"
    ".charts{display:flex;flex-wrap:wrap;gap:16px}"
    ".chart{margin:0;border:1px solid #d0d7de;border-radius:6px;padding:8px;max-width:600px}"
    "figcaption{font-weight:600;margin-bottom:4px}"
    "svg .grid{stroke:#eaeef2}svg .axis{stroke:#57606a}"
    "svg text{font-size:11px;fill:#57606a}svg .label{font-size:12px;fill:#1b1f24}"
    ".legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px}"
    "table{border-collapse:collapse;font-variant-numeric:tabular-nums;margin:8px 0}"
    "th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:right}td{white-space:nowrap}"
    "th{background:#f6f8fa}td:first-child{text-align:left}"
    ".na{color:#8c959f}.bad{color:#cf222e;text-align:left}"
    ".badge{background:#fff8c5;border:1px solid #d4a72c;border-radius:10px;font-size:.7em;"
    "padding:1px 8px;vertical-align:middle}"
    ".swatch{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:6px}"
    ".warn{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:8px 12px}"
    ".none{color:#57606a;font-style:italic}"
    "footer{margin-top:2em;color:#57606a;font-size:.85em}"
    "@media print{.chart{break-inside:avoid}}";

int gm_bench_html_report(FILE *out, const json_t *const *docs, size_t n, gm_error *err)
{
    if (n == 0 || n > MAX_DOCS)
        return gm_error_set(err, GM_EINVAL, "a report has 1 to %d benchmarks", MAX_DOCS);
    for (size_t d = 0; d < n; d++)
        if (!json_is_array(json_object_get(docs[d], "points")))
            return gm_error_set(err, GM_EINVAL, "%s is not a benchmark",
                                str(docs[d], "id") ? str(docs[d], "id") : "a document");
    char name[128];
    doc_name(docs[0], name, sizeof name);
    fprintf(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                 "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                 "<title>");
    if (n > 1)
        fprintf(out, "Benchmark comparison: %zu benchmarks", n);
    else {
        fprintf(out, "Benchmark report: ");
        esc(out, name);
    }
    fprintf(out, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>", css);
    if (n > 1)
        fprintf(out, "Benchmark comparison");
    else {
        fprintf(out, "Benchmark report: ");
        esc(out, name);
    }
    fprintf(out, "</h1>\n");
    if (n > 1) {
        json_t *diff = gm_bench_settings_differ(docs, n);
        if (json_array_size(diff) > 0) {
            fprintf(out, "<div class=\"warn\"><strong>These benchmarks ran with different "
                         "settings</strong>, so their figures differ for that reason too:<ul>");
            size_t i;
            const json_t *s;
            json_array_foreach(diff, i, s)
            {
                fprintf(out, "<li>");
                esc(out, str(s, "setting"));
                fprintf(out, ": ");
                size_t j;
                const json_t *v;
                json_array_foreach(json_object_get(s, "values"), j, v)
                {
                    char *t = json_is_string(v) || json_is_null(v)
                                  ? NULL
                                  : json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
                    fprintf(out, "%s", j ? " / " : "");
                    esc(out, json_is_string(v) ? json_string_value(v) : t ? t : "-");
                    free(t);
                }
                fprintf(out, "</li>");
            }
            fprintf(out, "</ul></div>\n");
        }
        json_decref(diff);
    }
    for (size_t d = 0; d < n; d++)
        settings(out, docs[d], d), fprintf(out, "</section>\n");
    fprintf(out, "<h2>The sweep</h2>\n<div class=\"charts\">\n");
    int rc = sweep_charts(out, docs, n);
    fprintf(out, "</div>\n");
    for (size_t d = 0; d < n && rc == GM_OK; d++) {
        doc_name(docs[d], name, sizeof name);
        fprintf(out, "<h2>");
        esc(out, name);
        fprintf(out, ": points</h2>\n");
        points_table(out, docs[d]);
        audit_block(out, docs[d]);
        fprintf(out, "<h3>The GPUs over the run</h3>\n<div class=\"charts\">\n");
        rc = gpu_charts(out, docs[d]);
        fprintf(out, "</div>\n");
    }
    fprintf(out, "<footer>Written by gpumon %s.</footer>\n</body>\n</html>\n", GM_VERSION);
    if (rc == GM_ENOMEM)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    return GM_OK;
}
