/* estimate.c - GPU count and per-GPU memory of an inference task config (parallelism
 * parameters under their alias spellings, model-size memory classes). */
#include "core/estimate.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/utf8.h"

#define SPELLINGS     5
#define MAX_VALUES    1024
#define MAX_TASK_SIZE ((size_t)16 << 20)

static const struct dimension {
    const char *name;
    const char *what; /* for messages */
    const char *keys[SPELLINGS];
} dims[GM_PAR__COUNT] = {
    [GM_PAR_TP] = {"tp",
                   "tensor parallelism",
                   {"tensor-parallel-size", "tensor_parallel_size", "tp-size", "tp_size", "tp"}},
    [GM_PAR_PP] = {"pp",
                   "pipeline parallelism",
                   {"pipeline-parallel-size", "pipeline_parallel_size", "pp-size", "pp_size",
                    "pp"}},
    [GM_PAR_DP] = {"dp",
                   "data parallelism",
                   {"data-parallel-size", "data_parallel_size", "dp-size", "dp_size", "dp"}},
    [GM_PAR_CP] = {"cp",
                   "context parallelism",
                   {"context-parallel-size", "context_parallel_size", "cp-size", "cp_size", "cp"}},
    [GM_PAR_DCP] = {"dcp",
                    "decode context parallelism",
                    {"decode-context-parallel-size", "decode_context_parallel_size", "dcp-size",
                     "dcp_size", "dcp"}},
};

const char *gm_estimate_parallel_name(gm_parallel p)
{
    return (unsigned)p < GM_PAR__COUNT ? dims[p].name : NULL;
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "a list";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "?";
}

/* One size value; *out gets it. field names it in messages ("parameters.tp[1]"). */
static int size_value(const json_t *v, const char *field, unsigned *out, gm_error *err)
{
    double d;
    if (json_is_integer(v))
        d = (double)json_integer_value(v);
    else if (json_is_real(v))
        d = json_real_value(v);
    else
        return gm_error_set(err, GM_EPARSE, "%s must be a positive integer, got %s", field,
                            type_name(v));
    char shown[64];
    if (json_is_integer(v))
        snprintf(shown, sizeof shown, "%lld", (long long)json_integer_value(v));
    else
        snprintf(shown, sizeof shown, "%g", d);
    if (d != floor(d))
        return gm_error_set(err, GM_EPARSE, "%s must be a whole number, got %s", field, shown);
    if (d < 1)
        return gm_error_set(err, GM_EPARSE, "%s must be a positive integer, got %s", field, shown);
    if (d > GM_ESTIMATE_MAX_SIZE)
        return gm_error_set(err, GM_EPARSE, "%s is implausibly large (%s > %u)", field, shown,
                            GM_ESTIMATE_MAX_SIZE);
    *out = (unsigned)d;
    return GM_OK;
}

static int uint_cmp(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return x < y ? -1 : x > y;
}

/* Reads a scalar or list into vals as a sorted set; returns its size or a negative code. */
static int read_sizes(const json_t *v, const char *key, unsigned *vals, gm_error *err)
{
    char field[96];
    size_t n = 0;
    if (json_is_array(v)) {
        if (json_array_size(v) == 0)
            return gm_error_set(err, GM_EPARSE, "parameters.%s is an empty list", key);
        if (json_array_size(v) > MAX_VALUES)
            return gm_error_set(err, GM_EPARSE, "parameters.%s has more than %d values", key,
                                MAX_VALUES);
        size_t i;
        json_t *item;
        json_array_foreach(v, i, item)
        {
            snprintf(field, sizeof field, "parameters.%s[%zu]", key, i);
            int rc = size_value(item, field, &vals[n++], err);
            if (rc < 0)
                return rc;
        }
    } else if (json_is_integer(v) || json_is_real(v)) {
        snprintf(field, sizeof field, "parameters.%s", key);
        int rc = size_value(v, field, &vals[n++], err);
        if (rc < 0)
            return rc;
    } else {
        return gm_error_set(err, GM_EPARSE,
                            "parameters.%s must be a positive integer or a list of them, got %s",
                            key, type_name(v));
    }
    qsort(vals, n, sizeof vals[0], uint_cmp);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || vals[u - 1] != vals[i])
            vals[u++] = vals[i];
    return (int)u;
}

static void format_set(const unsigned *vals, int n, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used < len; i++) {
        int w = snprintf(buf + used, len - used, "%s%u", i ? ", " : "[", vals[i]);
        if (w < 0)
            return;
        used += (size_t)w;
    }
    if (used < len)
        snprintf(buf + used, len - used, "]");
}

static int read_dimension(const json_t *params, gm_parallel p, gm_estimate *out, gm_error *err)
{
    unsigned vals[2][MAX_VALUES];
    int nvals = 0;
    const char *first = NULL;
    out->size[p] = 1;
    for (int k = 0; k < SPELLINGS; k++) {
        const char *key = dims[p].keys[k];
        const json_t *v = json_object_get(params, key);
        if (!v)
            continue;
        int n = read_sizes(v, key, vals[first ? 1 : 0], err);
        if (n < 0)
            return n;
        if (!first) {
            first = key;
            nvals = n;
            continue;
        }
        if (n != nvals || memcmp(vals[0], vals[1], (size_t)n * sizeof vals[0][0]) != 0) {
            char a[128], b[128];
            format_set(vals[0], nvals, a, sizeof a);
            format_set(vals[1], n, b, sizeof b);
            return gm_error_set(err, GM_EPARSE,
                                "parameters.%s %s and parameters.%s %s both set %s, to different "
                                "values; keep one",
                                first, a, key, b, dims[p].what);
        }
    }
    if (first) {
        out->size[p] = vals[0][nvals - 1];
        snprintf(out->key[p], sizeof out->key[p], "%s", first);
    }
    return GM_OK;
}

/* Parameters in billions from size tokens like "70b", "1.5B", "8x7b" (56): the largest one
 * found, 0 when none. A token must stand alone ("-70b-", not "llama370b"). */
static double params_billions(const char *model)
{
    double best = 0;
    size_t len = strlen(model);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)model[i];
        if (!isdigit(c))
            continue;
        if (i > 0 && (isalnum((unsigned char)model[i - 1]) || model[i - 1] == '.'))
            continue;
        char *end;
        double v = strtod(model + i, &end);
        if (end == model + i || !isfinite(v))
            continue;
        if ((*end == 'x' || *end == 'X') && isdigit((unsigned char)end[1])) {
            char *end2;
            double w = strtod(end + 1, &end2);
            v *= w;
            end = end2;
        }
        if (!isfinite(v)) /* "1e200x1e200b": no model has infinitely many parameters */
            v = 0;
        if ((*end == 'b' || *end == 'B') && !isalnum((unsigned char)end[1]) && v > best)
            best = v;
        i = (size_t)(end - model);
    }
    return best;
}

unsigned gm_estimate_memory_mib(const char *model, double *params_b, const char **rule)
{
    double b = model ? params_billions(model) : 0;
    if (params_b)
        *params_b = b;
    const char *r;
    unsigned mib;
    if (b >= 65) {
        mib = GM_ESTIMATE_MEM_LARGE_MIB;
        r = "65B+ model";
    } else if (b >= 7) {
        mib = GM_ESTIMATE_MEM_MID_MIB;
        r = "7B-65B model";
    } else if (b > 0) {
        mib = GM_ESTIMATE_MEM_BASE_MIB;
        r = "small model (under 7B)";
    } else {
        mib = GM_ESTIMATE_MEM_BASE_MIB;
        r = "base (model size unknown)";
    }
    if (rule)
        *rule = r;
    return mib;
}

static int read_model(const json_t *task, gm_estimate *out, gm_error *err)
{
    const json_t *m = json_object_get(task, "model");
    const char *name = NULL;
    if (!m || json_is_null(m))
        return GM_OK;
    if (json_is_string(m)) {
        name = json_string_value(m);
    } else if (json_is_object(m)) {
        static const char *const keys[] = {"id_or_path", "name", "id", "path"};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0] && !name; k++) {
            const json_t *v = json_object_get(m, keys[k]);
            if (!v || json_is_null(v))
                continue;
            if (!json_is_string(v))
                return gm_error_set(err, GM_EPARSE, "model.%s must be a string, got %s", keys[k],
                                    type_name(v));
            name = json_string_value(v);
        }
    } else {
        return gm_error_set(err, GM_EPARSE,
                            "model must be a string or an object with \"id_or_path\", got %s",
                            type_name(m));
    }
    if (name)
        /* Cut a long id before a character that would not fit whole: half a character is not
         * UTF-8, and the JSON report could not hold it. */
        gm_utf8_repair(out->model, sizeof out->model, name, strlen(name));
    return GM_OK;
}

int gm_estimate_task(const json_t *task, gm_estimate *out, gm_error *err)
{
    if (!task || !out)
        return gm_error_set(err, GM_EINVAL, "gm_estimate_task: NULL argument");
    memset(out, 0, sizeof *out);
    for (int p = 0; p < GM_PAR__COUNT; p++)
        out->size[p] = 1;
    if (!json_is_object(task))
        return gm_error_set(err, GM_EPARSE, "a task config must be a JSON object, got %s",
                            type_name(task));
    const json_t *params = json_object_get(task, "parameters");
    if (params && !json_is_null(params)) {
        if (!json_is_object(params))
            return gm_error_set(err, GM_EPARSE, "parameters must be an object, got %s",
                                type_name(params));
        for (int p = 0; p < GM_PAR__COUNT; p++) {
            int rc = read_dimension(params, (gm_parallel)p, out, err);
            if (rc < 0)
                return rc;
        }
    }
    int rc = read_model(task, out, err);
    if (rc < 0)
        return rc;
    unsigned wide = out->size[GM_PAR_DP];
    if (out->size[GM_PAR_CP] > wide)
        wide = out->size[GM_PAR_CP];
    if (out->size[GM_PAR_DCP] > wide)
        wide = out->size[GM_PAR_DCP];
    /* Each factor is at most 2^16, so the product fits 48 bits. */
    out->gpus = (uint64_t)out->size[GM_PAR_TP] * out->size[GM_PAR_PP] * wide;
    out->memory_mib = gm_estimate_memory_mib(out->model, &out->model_params_b, &out->memory_rule);
    return GM_OK;
}

int gm_estimate_task_text(const char *text, size_t len, const char *origin, gm_estimate *out,
                          gm_error *err)
{
    if (!text || !out)
        return gm_error_set(err, GM_EINVAL, "gm_estimate_task_text: NULL argument");
    if (!origin)
        origin = "task";
    json_error_t je;
    /* Duplicate keys are rejected: "tp" twice in one object is as ambiguous as two aliases. */
    json_t *root = gm_json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return gm_error_set(err, GM_EPARSE, "%s: not valid JSON: line %d, column %d: %s", origin,
                            je.line, je.column, je.text);
    gm_error inner = {0};
    int rc = gm_estimate_task(root, out, &inner);
    json_decref(root);
    if (rc < 0)
        return gm_error_set(err, rc, "%s: %s", origin, inner.msg);
    return GM_OK;
}

int gm_estimate_task_file(const char *path, gm_estimate *out, gm_error *err)
{
    if (!path || !out)
        return gm_error_set(err, GM_EINVAL, "gm_estimate_task_file: NULL argument");
    FILE *f = fopen(path, "rb");
    if (!f)
        return gm_error_set(err,
                            errno == ENOENT                       ? GM_ENOENT
                            : (errno == EACCES || errno == EPERM) ? GM_EPERM
                                                                  : GM_EIO,
                            "cannot read %s: %s", path, strerror(errno));
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap);
    int rc = GM_OK;
    for (;;) {
        if (!buf) {
            rc = gm_error_set(err, GM_ENOMEM, "out of memory");
            break;
        }
        if (len == cap) {
            if (cap >= MAX_TASK_SIZE) {
                rc = gm_error_set(err, GM_EPARSE, "%s: larger than %zu MiB, not a task config",
                                  path, MAX_TASK_SIZE >> 20);
                break;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                rc = gm_error_set(err, GM_ENOMEM, "out of memory");
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0) {
            if (ferror(f))
                rc = gm_error_set(err, GM_EIO, "cannot read %s: %s", path, strerror(errno));
            else
                rc = gm_estimate_task_text(buf, len, path, out, err);
            break;
        }
    }
    fclose(f);
    free(buf);
    return rc;
}

json_t *gm_estimate_json(const gm_estimate *e)
{
    json_t *par = json_object();
    for (int p = 0; p < GM_PAR__COUNT; p++)
        json_object_set_new(par, dims[p].name,
                            json_pack("{s:I, s:o}", "size", (json_int_t)e->size[p], "parameter",
                                      e->key[p][0] ? json_string(e->key[p]) : json_null()));
    return json_pack("{s:I, s:I, s:s, s:o, s:o, s:o, s:s}", "gpus", (json_int_t)e->gpus,
                     "memory_per_gpu_mib", (json_int_t)e->memory_mib, "world_size",
                     "tp x pp x max(dp, cp, dcp)", "parallel", par, "model",
                     e->model[0] ? json_string(e->model) : json_null(), "model_params_b",
                     e->model_params_b > 0 ? json_real(e->model_params_b) : json_null(),
                     "memory_rule", e->memory_rule ? e->memory_rule : "");
}
