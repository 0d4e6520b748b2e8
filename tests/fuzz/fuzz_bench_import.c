/* fuzz_bench_import.c - other tools' result files as `gpumon history import` reads them
 * (core/bench_import.c): gm_bench_import on the bytes (a vLLM result, several appended, or a
 * GenAI-Perf export). A file it takes makes a benchmark document with 1 to
 * GM_BENCH_IMPORT_MAX_POINTS points, each exported back as a vLLM result; those results
 * imported again make as many points with the same throughput; and the HTML report of the
 * document is written. A file it refuses leaves nothing and says which file. */
#include <jansson.h>
#include <math.h>

#include "base/json.h"
#include "core/bench_html.h"
#include "core/bench_import.h"
#include "fuzz.h"

static FILE *devnull(void)
{
    static FILE *f;
    if (!f)
        f = fopen("/dev/null", "w");
    FUZZ_CHECK(f);
    return f;
}

static bool same_number(const json_t *a, const json_t *b)
{
    if (!a || !b)
        return !a && !b;
    double x = json_number_value(a), y = json_number_value(b);
    return fabs(x - y) <= fabs(x) * 1e-9;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *doc = NULL;
    int64_t started = 0;
    gm_error err = {0};
    int rc = gm_bench_import((const char *)data, size, "in.json", &doc, &started, &err);
    if (rc < 0) {
        FUZZ_CHECK(rc == GM_EPARSE || rc == GM_ENOMEM);
        FUZZ_CHECK(!doc && started == -1);
        FUZZ_CHECK(rc == GM_ENOMEM || strncmp(err.msg, "in.json: ", 9) == 0);
        return 0;
    }
    FUZZ_CHECK(doc);
    const json_t *pts = json_object_get(doc, "points");
    size_t n = json_array_size(pts);
    FUZZ_CHECK(n >= 1 && n <= GM_BENCH_IMPORT_MAX_POINTS);
    FUZZ_CHECK(strcmp(json_string_value(json_object_get(doc, "kind")), "bench") == 0);

    /* Every point out as vLLM's result, one per line, and back in. */
    char *lines = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&lines, &len);
    FUZZ_CHECK(mem);
    for (size_t k = 0; k < n; k++) {
        json_t *v = NULL;
        FUZZ_CHECK(gm_bench_export_vllm(doc, k, &v, &err) == GM_OK);
        char *s = gm_json_dump(v, NULL);
        FUZZ_CHECK(s);
        fprintf(mem, "%s\n", s);
        free(s);
        json_decref(v);
    }
    json_t *none = NULL;
    FUZZ_CHECK(gm_bench_export_vllm(doc, n, &none, &err) == GM_EINVAL && !none);
    FUZZ_CHECK(fclose(mem) == 0);
    json_t *again = NULL;
    rc = gm_bench_import(lines, len, "again.json", &again, &started, &err);
    /* What was exported may lack what vLLM always writes (a GenAI-Perf export has no
     * duration): refused then, never taken wrongly. */
    if (rc == GM_OK) {
        const json_t *pts2 = json_object_get(again, "points");
        FUZZ_CHECK(json_array_size(pts2) == n);
        for (size_t k = 0; k < n; k++) {
            const json_t *a = json_array_get(pts, k), *b = json_array_get(pts2, k);
            FUZZ_CHECK(same_number(json_object_get(a, "requests_per_s"),
                                   json_object_get(b, "requests_per_s")));
            FUZZ_CHECK(same_number(json_object_get(a, "output_tokens_per_s"),
                                   json_object_get(b, "output_tokens_per_s")));
        }
    } else {
        FUZZ_CHECK(rc == GM_EPARSE && !again);
    }
    json_decref(again);
    free(lines);

    const json_t *docs[1] = {doc};
    FUZZ_CHECK(gm_bench_html_report(devnull(), docs, 1, &err) == GM_OK);
    json_decref(doc);
    return 0;
}
