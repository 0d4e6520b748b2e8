/* bench_report.c - the benchmark document's GPU part, and its text forms (see bench_report.h). */
#include "core/bench_report.h"
#include "base/error.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- the GPU part ----------------------------------------------------------------------- */

static json_t *num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

int gm_bench_point_add_gpu(json_t *point, gm_session *s, double idle_power_w,
                           unsigned sample_errors)
{
    const char *keys[] = {"gpu_monitoring",          "energy_j",
                          "energy_source",           "idle_power_w",
                          "energy_above_idle_j",     "idle_power_unreliable",
                          "output_tokens_per_joule", "joules_per_request"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        json_object_set_new(point, keys[i], json_null());
    if (!s)
        return GM_OK;
    json_t *doc = gm_session_to_json(s);
    if (!doc)
        return GM_ENOMEM;
    json_t *mon = json_pack("{s:O, s:O, s:O, s:O}", "monitoring_duration_seconds",
                            json_object_get(doc, "monitoring_duration_seconds"), "sample_count",
                            json_object_get(doc, "sample_count"), "interval_seconds",
                            json_object_get(doc, "interval_seconds"), "gpu_stats",
                            json_object_get(doc, "gpu_stats"));
    if (!mon) {
        json_decref(doc);
        return GM_ENOMEM;
    }
    if (sample_errors)
        json_object_set_new(mon, "sample_errors", json_integer(sample_errors));
    json_object_set_new(point, "gpu_monitoring", mon);
    /* Energy: the session's total (null unless every GPU has one), and where it came from. */
    const json_t *total = json_object_get(doc, "energy_j");
    const char *source = NULL;
    const char *key;
    const json_t *g;
    json_object_foreach(json_object_get(doc, "gpu_stats"), key, g)
    {
        const char *src = json_string_value(json_object_get(g, "energy_source"));
        if (!src)
            continue;
        source = !source || strcmp(source, src) == 0 ? src : "mixed";
    }
    double joules = json_is_number(total) ? json_number_value(total) : NAN;
    json_object_set_new(point, "energy_j", num_or_null(joules));
    json_object_set_new(point, "energy_source",
                        isfinite(joules) && source ? json_string(source) : json_null());
    double dur = json_number_value(json_object_get(doc, "monitoring_duration_seconds"));
    json_object_set_new(point, "idle_power_w", num_or_null(idle_power_w));
    /* Below zero the GPUs drew more while "idle" than under load: something else ran on them
     * then, and the idle figure is not to be subtracted from anything. */
    double above = isfinite(idle_power_w) ? joules - idle_power_w * dur : NAN;
    bool unreliable = above < 0;
    json_object_set_new(point, "energy_above_idle_j", num_or_null(unreliable ? NAN : above));
    json_object_set_new(point, "idle_power_unreliable",
                        isfinite(above) ? json_boolean(unreliable) : json_null());
    double out = json_number_value(json_object_get(point, "output_tokens"));
    double done = json_number_value(json_object_get(point, "completed"));
    json_object_set_new(point, "output_tokens_per_joule",
                        num_or_null(joules > 0 ? out / joules : NAN));
    json_object_set_new(point, "joules_per_request", num_or_null(done > 0 ? joules / done : NAN));
    json_decref(doc);
    return GM_OK;
}

/* A value of the timeline: rounded to what a chart shows, null when absent. */
static json_t *tl_value(double v)
{
    return isfinite(v) ? json_real(round(v * 10) / 10) : json_null();
}

int gm_bench_point_add_timeline(json_t *point, gm_session *s, int64_t bench_started_ms)
{
    if (!s || gm_session_gpu_count(s) == 0 || gm_session_timeline_count(s) == 0)
        return json_object_set_new(point, "gpu_timeline", json_null()) < 0 ? GM_ENOMEM : GM_OK;
    static const int metrics[] = {GM_SM_UTIL, GM_SM_POWER_W};
    size_t ng = gm_session_gpu_count(s), n = gm_session_timeline_count(s);
    /* Every step-th sample, the last one always: a long point stays a chart's worth. */
    size_t step = (n + GM_BENCH_TIMELINE_MAX - 1) / GM_BENCH_TIMELINE_MAX;
    double offset = (double)(gm_session_started_ms(s) - bench_started_ms) / 1000;
    json_t *t = json_array(), *gpus = json_object();
    json_t *cols[GM_MAX_GPUS][2];
    if (!t || !gpus)
        goto oom;
    for (size_t k = 0; k < ng; k++) {
        json_t *g = json_object();
        char key[16];
        snprintf(key, sizeof key, "%u", gm_session_gpu_at(s, k)->index);
        if (!g || json_object_set_new(gpus, key, g) < 0)
            goto oom;
        for (size_t m = 0; m < 2; m++)
            if (!(cols[k][m] = json_array()) ||
                json_object_set_new(g, gm_session_metric_name(metrics[m]), cols[k][m]) < 0)
                goto oom;
    }
    for (size_t j = 0;; j += step) {
        size_t i = j < n ? j : n - 1;
        double ts;
        const double *v;
        if (gm_session_sample(s, i, &ts, &v) < 0 || !v)
            break;
        json_array_append_new(t, json_real(round((offset + ts) * 1000) / 1000));
        for (size_t k = 0; k < ng; k++)
            for (size_t m = 0; m < 2; m++)
                json_array_append_new(cols[k][m], tl_value(v[k * GM_SM__COUNT + metrics[m]]));
        if (i == n - 1)
            break;
    }
    json_t *tl = json_pack("{s:o, s:o}", "t_s", t, "gpus", gpus);
    if (!tl)
        return GM_ENOMEM;
    return json_object_set_new(point, "gpu_timeline", tl) < 0 ? GM_ENOMEM : GM_OK;
oom:
    json_decref(t);
    json_decref(gpus);
    return GM_ENOMEM;
}

void gm_bench_point_set_validity(json_t *point, json_t *reasons)
{
    if (!reasons)
        reasons = json_array();
    json_object_set_new(point, "valid", json_boolean(json_array_size(reasons) == 0));
    json_object_set_new(point, "invalid_reasons", reasons ? reasons : json_array());
}

void gm_bench_point_load(const json_t *point, char *buf, size_t len)
{
    const json_t *c = json_object_get(point, "concurrency");
    const json_t *r = json_object_get(point, "request_rate");
    if (json_is_integer(c))
        snprintf(buf, len, "concurrency %lld", (long long)json_integer_value(c));
    else if (json_is_string(r))
        snprintf(buf, len, "rate %s", json_string_value(r));
    else if (json_is_number(r))
        snprintf(buf, len, "rate %g/s", json_number_value(r));
    else
        snprintf(buf, len, "?");
}

/* ---- reading a point -------------------------------------------------------------------- */

static double num(const json_t *o, const char *key, const char *sub)
{
    const json_t *v = json_object_get(o, key);
    if (sub)
        v = json_object_get(v, sub);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static void row(FILE *out, const char *label, double v, int prec)
{
    char name[64];
    snprintf(name, sizeof name, "%s:", label);
    if (isfinite(v))
        fprintf(out, "%-40s %.*f\n", name, prec, v);
    else
        fprintf(out, "%-40s -\n", name);
}

static void title(FILE *out, const char *text, char fill)
{
    int n = (int)strlen(text);
    int left = n >= 50 ? 0 : (50 - n) / 2, right = n >= 50 ? 0 : 50 - n - left;
    for (int i = 0; i < left; i++)
        fputc(fill, out);
    fputs(text, out);
    for (int i = 0; i < right; i++)
        fputc(fill, out);
    fputc('\n', out);
}

static void latency_block(FILE *out, const json_t *p, const char *key, const char *head,
                          const char *name)
{
    const json_t *d = json_object_get(p, key);
    if (!json_is_object(d))
        return;
    title(out, head, '-');
    char l[64];
    snprintf(l, sizeof l, "Mean %s (ms)", name);
    row(out, l, num(p, key, "mean"), 2);
    snprintf(l, sizeof l, "Median %s (ms)", name);
    row(out, l, num(p, key, "p50"), 2);
    snprintf(l, sizeof l, "P90 %s (ms)", name);
    row(out, l, num(p, key, "p90"), 2);
    snprintf(l, sizeof l, "P99 %s (ms)", name);
    row(out, l, num(p, key, "p99"), 2);
}

void gm_bench_audit_text(const json_t *audit, char *buf, size_t len)
{
    if (!len)
        return;
    buf[0] = '\0';
    if (!json_is_object(audit))
        return;
    const char *v = json_string_value(json_object_get(audit, "verdict"));
    if (v && strcmp(v, "unchanged") == 0) {
        snprintf(buf, len, "Machine unchanged during the run");
        return;
    }
    if (!v || strcmp(v, "changed") != 0) {
        const char *why = json_string_value(json_object_get(audit, "reason"));
        snprintf(buf, len, "Machine state unknown: %s", why ? why : "no verdict");
        return;
    }
    size_t used = (size_t)snprintf(buf, len, "Machine changed during the run");
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(audit, "changes"), i, c)
    {
        const char *m = json_string_value(json_object_get(c, "message"));
        const char *what = json_string_value(json_object_get(c, "what"));
        if (used >= len)
            break;
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : ": ",
                                 m      ? m
                                 : what ? what
                                        : "?");
    }
}

void gm_bench_print_point(FILE *out, const json_t *p)
{
    gm_bench_print_point_audit(out, p, NULL);
}

/* Requests, tokens and throughput. */
static void print_counts(FILE *out, const json_t *p)
{
    row(out, "Successful requests", num(p, "completed", NULL), 0);
    double failed = num(p, "failed", NULL);
    if (failed > 0) {
        row(out, "Failed requests", failed, 0);
        const char *k;
        const json_t *v;
        json_object_foreach(json_object_get(p, "errors"), k, v)
        {
            char l[64];
            snprintf(l, sizeof l, "  %s", k);
            row(out, l, json_number_value(v), 0);
        }
    }
    row(out, "Benchmark duration (s)", num(p, "duration_s", NULL), 2);
    row(out, "Total input tokens", num(p, "input_tokens", NULL), 0);
    row(out, "Total generated tokens", num(p, "output_tokens", NULL), 0);
    const char *src = json_string_value(json_object_get(p, "output_tokens_source"));
    double distrusted = num(p, "usage_distrusted", NULL);
    if (src && strcmp(src, "usage") != 0)
        fprintf(out, "%-40s %s\n", "Generated tokens counted from:",
                strcmp(src, "chunks") != 0 ? "usage and content chunks (mixed)"
                : distrusted > 0           ? "content chunks (the server's usage contradicted them)"
                                           : "content chunks (no usage from the server)");
    if (distrusted > 0)
        row(out, "Usage set aside (requests)", distrusted, 0);
    double shorts = num(p, "short_outputs", NULL);
    if (shorts > 0)
        row(out, "Outputs shorter than asked", shorts, 0);
    row(out, "Request throughput (req/s)", num(p, "requests_per_s", NULL), 2);
    if (json_object_get(p, "goodput_requests_per_s"))
        row(out, "Request goodput (req/s)", num(p, "goodput_requests_per_s", NULL), 2);
    row(out, "Output token throughput (tok/s)", num(p, "output_tokens_per_s", NULL), 2);
    row(out, "Total Token throughput (tok/s)", num(p, "total_tokens_per_s", NULL), 2);
    row(out, "Peak concurrent requests", num(p, "peak_concurrency", NULL), 0);
}

/* The energy figures and each GPU's mean utilization and power, when GPUs were monitored. */
static void print_energy(FILE *out, const json_t *p)
{
    title(out, "GPU Energy", '-');
    row(out, "GPU energy (J)", num(p, "energy_j", NULL), 1);
    const char *es = json_string_value(json_object_get(p, "energy_source"));
    fprintf(out, "%-40s %s\n", "Energy from:",
            !es                                    ? "-"
            : strcmp(es, "counter") == 0           ? "the energy counter"
            : strcmp(es, "power_integration") == 0 ? "power x time (no energy counter)"
                                                   : "counter and power x time (mixed)");
    row(out, "Output tokens per joule", num(p, "output_tokens_per_joule", NULL), 3);
    row(out, "Joules per request", num(p, "joules_per_request", NULL), 2);
    row(out, "Idle power (W)", num(p, "idle_power_w", NULL), 1);
    if (json_is_true(json_object_get(p, "idle_power_unreliable")))
        fprintf(out, "%-40s %s\n",
                "Energy above idle (J):", "- (idle power above this point's: not reliable)");
    else
        row(out, "Energy above idle (J)", num(p, "energy_above_idle_j", NULL), 1);
    const json_t *stats = json_object_get(json_object_get(p, "gpu_monitoring"), "gpu_stats");
    const char *k;
    const json_t *g;
    json_object_foreach((json_t *)stats, k, g)
    {
        char l[64];
        snprintf(l, sizeof l, "GPU %s util %% / power W (mean):", k);
        double u = num(g, "utilization", "mean"), w = num(g, "power_draw_w", "mean");
        fprintf(out, "%-40s ", l);
        if (isfinite(u))
            fprintf(out, "%.1f", u);
        else
            fprintf(out, "-");
        if (isfinite(w))
            fprintf(out, " / %.1f\n", w);
        else
            fprintf(out, " / -\n");
    }
}

/* The client's own cost and timing, then whether the point is valid and why not. */
static void print_client(FILE *out, const json_t *p, const json_t *audit)
{
    title(out, "Client", '-');
    row(out, "Client CPU (% of a core)", num(json_object_get(p, "client"), "cpu_percent", NULL), 1);
    const json_t *c = json_object_get(p, "client");
    row(out, "Schedule lag P99 (ms)", num(c, "schedule_lag_ms", "p99"), 3);
    row(out, "Receive-to-parse P99 (us)", num(c, "receive_to_parse_us", "p99"), 1);
    row(out, "Wake-to-receive P99 (us)", num(c, "wake_to_receive_us", "p99"), 1);
    const json_t *reasons = json_object_get(p, "invalid_reasons");
    if (json_is_false(json_object_get(p, "valid"))) {
        fprintf(out, "%-40s %s\n", "Valid:", "NO");
        size_t i;
        const json_t *r;
        json_array_foreach(reasons, i, r) fprintf(out, "  %s\n", json_string_value(r));
    } else if (json_is_true(json_object_get(p, "valid"))) {
        fprintf(out, "%-40s %s\n", "Valid:", "yes");
    }
    char line[2048];
    gm_bench_audit_text(audit, line, sizeof line);
    if (line[0])
        fprintf(out, "%s\n", line);
}

void gm_bench_print_point_audit(FILE *out, const json_t *p, const json_t *audit)
{
    char load[64], head[96];
    gm_bench_point_load(p, load, sizeof load);
    snprintf(head, sizeof head, " Serving Benchmark Result (%s) ", load);
    title(out, head, '=');
    print_counts(out, p);
    latency_block(out, p, "ttft_ms", "Time to First Token", "TTFT");
    latency_block(out, p, "tpot_ms", "Time per Output Token (excl. 1st token)", "TPOT");
    latency_block(out, p, "itl_ms", "Inter-token Latency", "ITL");
    latency_block(out, p, "e2e_ms", "End-to-end Latency", "E2EL");
    if (json_object_get(p, "ttft_from_schedule_ms")) {
        title(out, "From the Scheduled Send Time", '-');
        row(out, "Median TTFT (ms)", num(p, "ttft_from_schedule_ms", "p50"), 2);
        row(out, "P99 TTFT (ms)", num(p, "ttft_from_schedule_ms", "p99"), 2);
        row(out, "Median E2EL (ms)", num(p, "e2e_from_schedule_ms", "p50"), 2);
        row(out, "P99 E2EL (ms)", num(p, "e2e_from_schedule_ms", "p99"), 2);
    }
    if (json_object_get(p, "gpu_monitoring") && !json_is_null(json_object_get(p, "gpu_monitoring")))
        print_energy(out, p);
    print_client(out, p, audit);
    if (json_is_true(json_object_get(p, "interrupted")))
        fprintf(out, "(interrupted: the point was stopped by a signal)\n");
    for (int i = 0; i < 50; i++)
        fputc('=', out);
    fputc('\n', out);
}

static void cell(FILE *out, double v, int width, int prec)
{
    if (isfinite(v))
        fprintf(out, " %*.*f", width, prec, v);
    else
        fprintf(out, " %*s", width, "-");
}

/* line (a whole line, without its newline) cut to width columns, counting UTF-8 characters. */
static void put_line_cut(FILE *out, const char *line, int width)
{
    int cols = 0;
    const char *c = line;
    for (; *c; c++) {
        if (((unsigned char)*c & 0xC0) != 0x80 && cols++ == width)
            break;
        fputc(*c, out);
    }
    fputc('\n', out);
}

/* The table of the points: one, 113 columns wide; or (width below that) two of at most 80,
 * throughput and latency, then goodput, energy and validity. */
static void print_table(FILE *out, const json_t *doc, int width)
{
    bool one = width <= 0 || width >= 113;
    for (int part = 0; part < (one ? 1 : 2); part++) {
        if (part)
            fputc('\n', out);
        fprintf(out, "%-16s", "LOAD");
        if (one || part == 0)
            fprintf(out, " %8s %9s %8s %8s %8s %8s %8s", "REQ/S", "OUT TOK/S", "TTFT p50",
                    "TTFT p99", "TPOT p50", "ITL p50", "E2E p50");
        if (one || part == 1)
            fprintf(out, " %8s %8s %8s %5s", "GOODPUT", "J/REQ", "TOK/J", "VALID");
        fputc('\n', out);
        size_t i;
        const json_t *p;
        json_array_foreach(json_object_get(doc, "points"), i, p)
        {
            char load[64];
            gm_bench_point_load(p, load, sizeof load);
            fprintf(out, "%-16.16s", load);
            if (one || part == 0) {
                cell(out, num(p, "requests_per_s", NULL), 8, 2);
                cell(out, num(p, "output_tokens_per_s", NULL), 9, 1);
                cell(out, num(p, "ttft_ms", "p50"), 8, 2);
                cell(out, num(p, "ttft_ms", "p99"), 8, 2);
                cell(out, num(p, "tpot_ms", "p50"), 8, 2);
                cell(out, num(p, "itl_ms", "p50"), 8, 2);
                cell(out, num(p, "e2e_ms", "p50"), 8, 1);
            }
            if (one || part == 1) {
                cell(out, num(p, "goodput_requests_per_s", NULL), 8, 2);
                cell(out, num(p, "joules_per_request", NULL), 8, 2);
                cell(out, num(p, "output_tokens_per_joule", NULL), 8, 3);
                const json_t *v = json_object_get(p, "valid");
                fprintf(out, " %5s", json_is_true(v) ? "yes" : json_is_false(v) ? "NO" : "-");
            }
            fputc('\n', out);
        }
    }
}

void gm_bench_print_table(FILE *out, const json_t *doc)
{
    print_table(out, doc, 0);
}

void gm_bench_print_report(FILE *out, const json_t *doc)
{
    gm_bench_print_report_width(out, doc, 0);
}

void gm_bench_print_report_width(FILE *out, const json_t *doc, int width)
{
    const char *id = json_string_value(json_object_get(doc, "id"));
    const char *label = json_string_value(json_object_get(doc, "label"));
    char who[300], what[1024];
    snprintf(who, sizeof who, "bench %s%s%s%s", id ? id : "?", label ? " \"" : "",
             label ? label : "", label ? "\"" : "");
    snprintf(what, sizeof what, "%s %s, model %s, api %s",
             json_string_value(json_object_get(doc, "started")) ?: "",
             json_string_value(json_object_get(doc, "url"))
                 ?: json_object_get(doc, "imported") ? "(server not in the file)"
                                                     : "(no server)",
             json_string_value(json_object_get(doc, "model")) ?: "?",
             json_string_value(json_object_get(doc, "api")) ?: "?");
    if (width <= 0 || (int)(strlen(who) + 2 + strlen(what)) <= width) {
        fprintf(out, "%s: %s\n", who, what);
    } else { /* the benchmark on one line, when and where below */
        put_line_cut(out, who, width);
        char line[1100];
        snprintf(line, sizeof line, "  %s", what);
        put_line_cut(out, line, width);
    }
    const char *source = json_string_value(json_object_get(doc, "source"));
    if (source) /* another tool's result: its figures, no GPU side, no validity checks */
        fprintf(out, "%s (%s)\n", source,
                json_string_value(json_object_get(json_object_get(doc, "imported"), "file"))
                    ?: "?");
    gm_bench_print_container(out, doc);
    size_t i;
    const json_t *p;
    const json_t *audit = json_object_get(doc, "audit");
    json_array_foreach(json_object_get(doc, "points"), i, p)
        gm_bench_print_point_audit(out, p, audit);
    if (json_array_size(json_object_get(doc, "points")) > 1)
        print_table(out, doc, width);
}

void gm_bench_print_container(FILE *out, const json_t *doc)
{
    const json_t *c = json_object_get(doc, "container");
    if (!json_is_object(c))
        return;
    const char *s;
    fprintf(out, "container %s: image %s",
            json_string_value(json_object_get(c, "name")) ?: "(not created)",
            json_string_value(json_object_get(c, "image")) ?: "?");
    if ((s = json_string_value(json_object_get(c, "image_id"))))
        fprintf(out, " (%.19s)", s);
    const json_t *ready = json_object_get(c, "time_to_ready_s");
    if (json_is_number(ready))
        fprintf(out, ", ready after %.1f s (GET %s)", json_number_value(ready),
                json_string_value(json_object_get(c, "ready_path")) ?: "?");
    else if ((s = json_string_value(json_object_get(c, "failure"))))
        fprintf(out, ", never ready (%s)",
                strcmp(s, "exited") == 0    ? "it exited first"
                : strcmp(s, "timeout") == 0 ? "timed out"
                                            : s);
    const json_t *load = json_object_get(c, "loading");
    const json_t *e = json_object_get(load, "energy_j"),
                 *m = json_object_get(load, "memory_used_mib_after");
    if (json_is_number(e))
        fprintf(out, ", loading %.1f J", json_number_value(e));
    if (json_is_number(m))
        fprintf(out, ", GPU memory after loading %.0f MiB", json_number_value(m));
    const json_t *x = json_object_get(c, "exit");
    if (json_is_object(x))
        fprintf(out, "; %s with status %lld%s%s",
                json_string_value(json_object_get(x, "status")) ?: "?",
                (long long)json_integer_value(json_object_get(x, "exit_code")),
                json_is_true(json_object_get(x, "oom_killed")) ? " (out of memory)" : "",
                json_is_true(json_object_get(x, "stopped_by_gpumon")) ? ", stopped by gpumon" : "");
    fprintf(out, "%s\n",
            json_is_true(json_object_get(c, "removed")) ? ", removed"
            : json_is_true(json_object_get(c, "kept"))  ? ", kept"
                                                        : "");
    size_t i;
    const json_t *l;
    json_array_foreach(json_object_get(c, "logs"), i, l)
        fprintf(out, "  | %s\n", json_string_value(l) ?: "");
}

/* ---- CSV -------------------------------------------------------------------------------- */

/* Every statistic of a distribution, in the document's order. */
static const char *const dist_stats[] = {"mean", "std", "min", "p50",  "p90",
                                         "p95",  "p99", "max", "count"};
static const struct {
    const char *key, *col; /* "ttft_ms" -> ttft_p50_ms */
    const char *unit;
} csv_dists[] = {
    {"ttft_ms", "ttft", "_ms"},
    {"tpot_ms", "tpot", "_ms"},
    {"itl_ms", "itl", "_ms"},
    {"e2e_ms", "e2e", "_ms"},
    {"ttft_from_schedule_ms", "ttft_from_schedule", "_ms"},
    {"e2e_from_schedule_ms", "e2e_from_schedule", "_ms"},
};
static const char *const csv_head[] = {"concurrency",
                                       "request_rate",
                                       "requests",
                                       "completed",
                                       "failed",
                                       "duration_s",
                                       "requests_per_s",
                                       "output_tokens_per_s",
                                       "total_tokens_per_s",
                                       "output_tokens",
                                       "input_tokens",
                                       "usage_distrusted",
                                       "short_outputs",
                                       "peak_concurrency"};
static const char *const csv_tail[] = {"goodput_requests_per_s",
                                       "energy_j",
                                       "energy_source",
                                       "idle_power_w",
                                       "energy_above_idle_j",
                                       "idle_power_unreliable",
                                       "output_tokens_per_joule",
                                       "joules_per_request",
                                       "valid",
                                       "invalid_reasons"};
#define NELEM(a) (sizeof(a) / sizeof *(a))

/* One CSV field: numbers as they are, booleans 1/0, text quoted when it must be (RFC
 * 4180), null or absent empty. */
static void csv_value(FILE *out, const json_t *v)
{
    fputc(',', out);
    if (json_is_integer(v)) {
        fprintf(out, "%lld", (long long)json_integer_value(v));
    } else if (json_is_real(v)) {
        fprintf(out, "%.10g", json_real_value(v));
    } else if (json_is_boolean(v)) {
        fputc(json_is_true(v) ? '1' : '0', out); /* as bench_points stores it, for SQL */
    } else if (json_is_string(v) || json_is_array(v)) {
        /* A list (invalid_reasons) is one field, its items joined by "; ". */
        fputc('"', out);
        size_t i;
        const json_t *item;
        const json_t *one[1] = {v};
        size_t n = json_is_array(v) ? json_array_size(v) : 1;
        for (i = 0; i < n; i++) {
            item = json_is_array(v) ? json_array_get(v, i) : one[0];
            if (i)
                fputs("; ", out);
            for (const char *c = json_string_value(item) ?: ""; *c; c++) {
                if (*c == '"')
                    fputc('"', out);
                fputc(*c, out);
            }
        }
        fputc('"', out);
    }
}

void gm_bench_print_csv(FILE *out, const json_t *doc)
{
    fputs("point,load", out);
    for (size_t k = 0; k < NELEM(csv_head); k++)
        fprintf(out, ",%s", csv_head[k]);
    for (size_t d = 0; d < NELEM(csv_dists); d++)
        for (size_t k = 0; k < NELEM(dist_stats); k++)
            fprintf(out, ",%s_%s%s", csv_dists[d].col, dist_stats[k],
                    strcmp(dist_stats[k], "count") == 0 ? "" : csv_dists[d].unit);
    for (size_t k = 0; k < NELEM(csv_tail); k++)
        fprintf(out, ",%s", csv_tail[k]);
    fputc('\n', out);
    size_t i;
    const json_t *p;
    json_array_foreach(json_object_get(doc, "points"), i, p)
    {
        char load[64];
        gm_bench_point_load(p, load, sizeof load);
        fprintf(out, "%zu,%s", i, load);
        for (size_t k = 0; k < NELEM(csv_head); k++)
            csv_value(out, json_object_get(p, csv_head[k]));
        for (size_t d = 0; d < NELEM(csv_dists); d++) {
            const json_t *dist = json_object_get(p, csv_dists[d].key);
            for (size_t k = 0; k < NELEM(dist_stats); k++)
                csv_value(out, json_object_get(dist, dist_stats[k]));
        }
        for (size_t k = 0; k < NELEM(csv_tail); k++)
            csv_value(out, json_object_get(p, csv_tail[k]));
        fputc('\n', out);
    }
}

/* ---- comparing -------------------------------------------------------------------------- */

static const struct {
    const char *name, *key, *sub;
    int prec;
    bool higher_better;
} metrics[] = {
    {"requests/s", "requests_per_s", NULL, 2, true},
    {"output tok/s", "output_tokens_per_s", NULL, 1, true},
    {"total tok/s", "total_tokens_per_s", NULL, 1, true},
    {"goodput req/s", "goodput_requests_per_s", NULL, 2, true},
    {"TTFT p50 ms", "ttft_ms", "p50", 2, false},
    {"TTFT p99 ms", "ttft_ms", "p99", 2, false},
    {"TPOT p50 ms", "tpot_ms", "p50", 2, false},
    {"TPOT p99 ms", "tpot_ms", "p99", 2, false},
    {"ITL p50 ms", "itl_ms", "p50", 2, false},
    {"ITL p99 ms", "itl_ms", "p99", 2, false},
    {"E2E p50 ms", "e2e_ms", "p50", 1, false},
    {"E2E p99 ms", "e2e_ms", "p99", 1, false},
    {"failed", "failed", NULL, 0, false},
    {"energy J", "energy_j", NULL, 1, false},
    {"output tok/J", "output_tokens_per_joule", NULL, 3, true},
    {"J/request", "joules_per_request", NULL, 2, false},
};

/* The settings that make two benchmarks' figures comparable: what a run was asked to do and
 * what it ran against (a container's image rather than its URL, a fresh port every run). */
static const struct {
    const char *name, *key;
    bool in_config;
} settings[] = {
    {"requests", "requests", true},
    {"duration_s", "duration_s", true},
    {"input_tokens", "input_tokens", true},
    {"prompts", "prompts", true},
    {"output_tokens", "output_tokens", true},
    {"api", "api", false},
    {"server", NULL, false},
};
#define NSETTINGS (sizeof settings / sizeof *settings)

static const json_t *setting_of(const json_t *doc, size_t k)
{
    if (!settings[k].key) {
        const json_t *image = json_object_get(json_object_get(doc, "container"), "image");
        return json_is_string(image) ? image : json_object_get(doc, "url");
    }
    const json_t *from = settings[k].in_config ? json_object_get(doc, "config") : doc;
    return json_object_get(from, settings[k].key);
}

/* Absent and null are the same setting (not given). */
static bool same_setting(const json_t *a, const json_t *b)
{
    bool an = !a || json_is_null(a), bn = !b || json_is_null(b);
    if (an || bn)
        return an && bn;
    return json_equal((json_t *)a, (json_t *)b);
}

json_t *gm_bench_settings_differ(const json_t *const *docs, size_t n)
{
    json_t *out = json_array();
    for (size_t k = 0; out && k < NSETTINGS; k++) {
        const json_t *a = setting_of(docs[0], k);
        bool differ = false;
        for (size_t d = 1; d < n && !differ; d++) {
            const json_t *b = setting_of(docs[d], k);
            differ = !same_setting(a, b);
        }
        if (!differ)
            continue;
        json_t *values = json_array();
        for (size_t d = 0; values && d < n; d++) {
            const json_t *v = setting_of(docs[d], k);
            json_array_append_new(values, v ? json_deep_copy(v) : json_null());
        }
        json_array_append_new(out, json_pack("{s:s, s:o}", "setting", settings[k].name, "values",
                                             values ? values : json_array()));
    }
    return out;
}

/* A setting's value for people: "500", "http://x:8000", "-" when absent. */
static void setting_text(const json_t *v, char *buf, size_t len)
{
    if (json_is_string(v))
        snprintf(buf, len, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(buf, len, "%lld", (long long)json_integer_value(v));
    else if (json_is_number(v))
        snprintf(buf, len, "%g", json_number_value(v));
    else
        snprintf(buf, len, "-");
}
#define NMETRICS (sizeof metrics / sizeof *metrics)

static bool is_bench(const json_t *doc)
{
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    return json_is_array(json_object_get(doc, "points")) && kind && strcmp(kind, "bench") == 0;
}

/* The point of doc matching the load of ref (same load label), else the one at index i. */
static const json_t *match_point(const json_t *doc, const json_t *ref, size_t i)
{
    char want[64], have[64];
    gm_bench_point_load(ref, want, sizeof want);
    size_t k;
    const json_t *p;
    json_array_foreach(json_object_get(doc, "points"), k, p)
    {
        gm_bench_point_load(p, have, sizeof have);
        if (strcmp(want, have) == 0)
            return p;
    }
    return json_array_get(json_object_get(doc, "points"), i);
}

static int check_docs(const json_t *const *docs, size_t n, gm_error *err)
{
    if (n < 2)
        return gm_error_set(err, GM_EINVAL, "compare needs two benchmarks or more");
    for (size_t i = 0; i < n; i++)
        if (!is_bench(docs[i]))
            return gm_error_set(err, GM_EINVAL, "%s is not a benchmark (kind %s)",
                                json_string_value(json_object_get(docs[i], "id")) ?: "?",
                                json_string_value(json_object_get(docs[i], "kind")) ?: "?");
    return GM_OK;
}

/* The letter that names benchmark d in the tables. */
static int bench_letter(size_t d)
{
    return (int)('A' + (d < 26 ? d : 25));
}

/* A line per benchmark: its letter, id, label, server, model and API. */
static void compare_print_benches(FILE *out, const json_t *const *docs, size_t n, int width)
{
    for (size_t d = 0; d < n; d++) {
        const char *label = json_string_value(json_object_get(docs[d], "label"));
        char who[256], what[768], line[1100];
        snprintf(who, sizeof who, "%c: %s%s%s%s", bench_letter(d),
                 json_string_value(json_object_get(docs[d], "id")) ?: "?", label ? " \"" : "",
                 label ? label : "", label ? "\"" : "");
        snprintf(what, sizeof what, "%s, model %s, api %s",
                 json_string_value(json_object_get(docs[d], "url")) ?: "?",
                 json_string_value(json_object_get(docs[d], "model")) ?: "?",
                 json_string_value(json_object_get(docs[d], "api")) ?: "?");
        snprintf(line, sizeof line, "%s %s", who, what);
        if ((int)strlen(line) <= width) {
            fprintf(out, "%s\n", line);
        } else { /* the benchmark on one line, its server and model below */
            put_line_cut(out, who, width);
            snprintf(line, sizeof line, "   %s", what);
            put_line_cut(out, line, width);
        }
    }
}

/* How to read the changes: better or worse when the settings are alike, else the settings that
 * differ (gm_bench_settings_differ's list), each benchmark's value on one line if it fits. */
static void compare_print_settings(FILE *out, const json_t *differ, int width)
{
    if (json_array_size(differ) == 0) {
        fprintf(out, "Changes are from A's figures: better or worse (lower latency, energy\n"
                     "and failures are better).\n");
        return;
    }
    /* Runs asked to do different things: their figures differ for that reason, so no
     * change is called better or worse. */
    fprintf(out, "The settings differ, so the changes are not better or worse:\n");
    size_t k;
    const json_t *dv;
    json_array_foreach(differ, k, dv)
    {
        char line[2048];
        const char *setting = json_string_value(json_object_get(dv, "setting"));
        size_t used = (size_t)snprintf(line, sizeof line, "  %s:", setting);
        size_t d;
        const json_t *v;
        json_array_foreach(json_object_get(dv, "values"), d, v)
        {
            char text[256];
            setting_text(v, text, sizeof text);
            if (used < sizeof line)
                used += (size_t)snprintf(line + used, sizeof line - used, " %c %s", bench_letter(d),
                                         text);
        }
        if ((int)used <= width) {
            fprintf(out, "%s\n", line);
            continue;
        }
        fprintf(out, "  %s:\n", setting); /* too long for one line: a value a line */
        json_array_foreach(json_object_get(dv, "values"), d, v)
        {
            char text[256], item[300];
            setting_text(v, text, sizeof text);
            snprintf(item, sizeof item, "    %c %s", bench_letter(d), text);
            put_line_cut(out, item, width);
        }
    }
}

/* One block of a point's table: A's column and benchmarks from..to-1, ref being A's point i. */
typedef struct compare_block {
    const json_t *const *docs;
    const json_t *ref;
    size_t i, from, to;
    bool alike, color;
} compare_block;

/* Metric m's row: A's figure, then each benchmark's with its change from A. */
static void compare_print_metric(FILE *out, const compare_block *b, size_t m)
{
    const char *green = b->color ? "\033[32m" : "", *red = b->color ? "\033[31m" : "",
               *reset = b->color ? "\033[0m" : "";
    double a = num(b->ref, metrics[m].key, metrics[m].sub);
    fprintf(out, "%-16s", metrics[m].name);
    cell(out, a, 10, metrics[m].prec);
    for (size_t d = b->from; d < b->to; d++) {
        const json_t *p = match_point(b->docs[d], b->ref, b->i);
        double v = p ? num(p, metrics[m].key, metrics[m].sub) : NAN;
        cell(out, v, 10, metrics[m].prec);
        double pct = isfinite(a) && isfinite(v) && a != 0 ? (v - a) / fabs(a) * 100 : NAN;
        /* Under 0.05 % prints as 0.0 %: neither. */
        bool moved = b->alike && isfinite(pct) && fabs(pct) >= 0.05;
        bool better = moved && (pct > 0) == metrics[m].higher_better;
        if (isfinite(pct))
            fprintf(out, " %s(%+7.1f%%%s)%s",
                    !moved   ? ""
                    : better ? green
                             : red,
                    pct,
                    !moved   ? "       "
                    : better ? " better"
                             : "  worse",
                    moved ? reset : "");
        else if (d + 1 < b->to)
            fprintf(out, " %17s", "");
    }
    fputc('\n', out);
}

static void compare_print_block(FILE *out, const compare_block *b)
{
    if (b->from > 1)
        fputc('\n', out);
    fprintf(out, "%-16s %10c", "", 'A');
    for (size_t d = b->from; d < b->to; d++)
        fprintf(out, " %27c", bench_letter(d));
    fputc('\n', out);
    for (size_t m = 0; m < NMETRICS; m++)
        compare_print_metric(out, b, m);
    fprintf(out, "%-16s", "valid");
    for (size_t d = 0; d < b->to; d = d ? d + 1 : b->from) {
        const json_t *p = d ? match_point(b->docs[d], b->ref, b->i) : b->ref;
        const json_t *v = json_object_get(p, "valid");
        fprintf(out, " %10s%s",
                json_is_true(v)    ? "yes"
                : json_is_false(v) ? "NO"
                                   : "-",
                d && d + 1 < b->to ? "                 " : "");
    }
    fputc('\n', out);
}

int gm_bench_print_compare(FILE *out, const json_t *const *docs, size_t n, bool color, int width,
                           gm_error *err)
{
    int rc = check_docs(docs, n, err);
    if (rc < 0)
        return rc;
    if (width < 56)
        width = 56; /* the reference and one benchmark, whatever the terminal */
    json_t *differ = gm_bench_settings_differ(docs, n);
    bool alike = json_array_size(differ) == 0;
    compare_print_benches(out, docs, n, width);
    compare_print_settings(out, differ, width);
    json_decref(differ);
    /* A's column, then as many others as width holds, each with its change from A: more
     * benchmarks than that make more blocks, each again with A's column. */
    size_t per = (size_t)(width - 27) / 29;
    if (per < 1)
        per = 1;
    size_t i;
    const json_t *ref;
    json_array_foreach(json_object_get(docs[0], "points"), i, ref)
    {
        char load[64];
        gm_bench_point_load(ref, load, sizeof load);
        fprintf(out, "\n%s\n", load);
        for (size_t from = 1; from < n; from += per) {
            compare_block b = {.docs = docs,
                               .ref = ref,
                               .i = i,
                               .from = from,
                               .to = from + per < n ? from + per : n,
                               .alike = alike,
                               .color = color};
            compare_print_block(out, &b);
        }
    }
    return GM_OK;
}

json_t *gm_bench_compare_json(const json_t *const *docs, size_t n, gm_error *err)
{
    if (check_docs(docs, n, err) < 0)
        return NULL;
    json_t *benches = json_array(), *points = json_array();
    for (size_t d = 0; benches && d < n; d++)
        json_array_append_new(benches, json_pack("{s:O?, s:O?, s:O?, s:O?}", "id",
                                                 json_object_get(docs[d], "id"), "label",
                                                 json_object_get(docs[d], "label"), "url",
                                                 json_object_get(docs[d], "url"), "model",
                                                 json_object_get(docs[d], "model")));
    size_t i;
    const json_t *ref;
    json_array_foreach(json_object_get(docs[0], "points"), i, ref)
    {
        char load[64];
        gm_bench_point_load(ref, load, sizeof load);
        json_t *values = json_object(), *change = json_object();
        for (size_t m = 0; values && change && m < NMETRICS; m++) {
            json_t *va = json_array(), *ca = json_array();
            double a = num(ref, metrics[m].key, metrics[m].sub);
            for (size_t d = 0; va && ca && d < n; d++) {
                const json_t *p = d ? match_point(docs[d], ref, i) : ref;
                double b = p ? num(p, metrics[m].key, metrics[m].sub) : NAN;
                json_array_append_new(va, num_or_null(b));
                json_array_append_new(ca, num_or_null(isfinite(a) && a != 0 && isfinite(b)
                                                          ? (b - a) / fabs(a) * 100
                                                          : NAN));
            }
            char name[64];
            snprintf(name, sizeof name, "%s%s%s", metrics[m].key, metrics[m].sub ? "." : "",
                     metrics[m].sub ? metrics[m].sub : "");
            json_object_set_new(values, name, va);
            json_object_set_new(change, name, ca);
        }
        json_array_append_new(points, json_pack("{s:s, s:o, s:o}", "load", load, "values",
                                                values ? values : json_null(), "change_percent",
                                                change ? change : json_null()));
    }
    json_t *differ = gm_bench_settings_differ(docs, n);
    if (!benches || !points || !differ) {
        json_decref(benches);
        json_decref(points);
        json_decref(differ);
        return NULL;
    }
    return json_pack("{s:o, s:o, s:o}", "benchmarks", benches, "settings_differ", differ, "points",
                     points);
}
