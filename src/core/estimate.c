/* estimate.c - GPU count and per-GPU memory of an inference task config (parallelism
 * parameters under their alias spellings; memory from the model's parameters, dtype, KV cache
 * and overhead, or from size classes of the model's parameter count). */
#include "core/estimate.h"

#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "base/file.h"
#include "base/json.h"
#include "base/utf8.h"
#include "base/error.h"

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
        /* "1e200x1e200b", "1e300b": no size of a model. The largest models are a few thousand
         * billion; past a million billion the figures after it (x 1e9, cube roots) stop
         * meaning anything. */
        if (!isfinite(v) || v > GM_ESTIMATE_MAX_PARAMS_B)
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

/* ---- the model method ------------------------------------------------------------------- */

void gm_estimate_options_init(gm_estimate_options *o)
{
    memset(o, 0, sizeof *o);
    o->method = GM_ESTIMATE_MODEL;
    o->overhead_mib = -1;
}

double gm_estimate_dtype_bytes(const char *dtype, char *name)
{
    static const struct {
        const char *alias, *name;
        double bytes;
    } t[] = {
        {"fp32", "fp32", 4},          {"float32", "fp32", 4},        {"float", "fp32", 4},
        {"fp16", "fp16", 2},          {"float16", "fp16", 2},        {"half", "fp16", 2},
        {"bf16", "bf16", 2},          {"bfloat16", "bf16", 2},       {"fp8", "fp8", 1},
        {"float8", "fp8", 1},         {"fp8_e4m3", "fp8", 1},        {"fp8_e5m2", "fp8", 1},
        {"int8", "int8", 1},          {"w8a8", "int8", 1},           {"int4", "int4", 0.5},
        {"awq", "int4", 0.5},         {"gptq", "int4", 0.5},         {"awq_marlin", "int4", 0.5},
        {"gptq_marlin", "int4", 0.5}, {"nf4", "int4", 0.5},          {"fp4", "int4", 0.5},
        {"mxfp4", "int4", 0.5},       {"bitsandbytes", "int4", 0.5},
    };
    for (size_t i = 0; dtype && i < sizeof t / sizeof *t; i++)
        if (strcasecmp(dtype, t[i].alias) == 0) {
            if (name)
                snprintf(name, 8, "%s", t[i].name);
            return t[i].bytes;
        }
    return 0;
}

static const char *const context_keys[] = {"max-model-len", "max_model_len", "context-length",
                                           "context_length", NULL};
static const char *const batch_keys[] = {"batch-size", "batch_size", NULL};
static const char *const dtype_keys[] = {"dtype", NULL};
static const char *const quant_keys[] = {"quantization", "quantize", NULL};
static const char *const kv_keys[] = {"kv-cache-dtype", "kv_cache_dtype", NULL};

/* The largest whole number of the first of keys present (a number or a list); 0 when none. */
static int param_uint(const json_t *params, const char *const *keys, unsigned *out, gm_error *err)
{
    *out = 0;
    for (size_t k = 0; keys[k]; k++) {
        const json_t *v = json_object_get(params, keys[k]);
        if (!v || json_is_null(v))
            continue;
        size_t n = json_is_array(v) ? json_array_size(v) : 1;
        for (size_t i = 0; i < n; i++) {
            const json_t *x = json_is_array(v) ? json_array_get(v, i) : v;
            double d = json_is_integer(x) ? (double)json_integer_value(x)
                       : json_is_real(x)  ? json_real_value(x)
                                          : NAN;
            if (!(d >= 1 && d <= 1e8 && d == floor(d)))
                return gm_error_set(err, GM_EPARSE,
                                    "parameters.%s must be a whole number of tokens or "
                                    "sequences from 1 (or a list of them)",
                                    keys[k]);
            if ((unsigned)d > *out)
                *out = (unsigned)d;
        }
        return GM_OK;
    }
    return GM_OK;
}

/* The widest dtype named by the first of keys present (a name or a list; "auto" says
 * nothing); *bytes 0 when none. */
static int param_dtype(const json_t *params, const char *const *keys, double *bytes, char *name,
                       gm_error *err)
{
    *bytes = 0;
    for (size_t k = 0; keys[k]; k++) {
        const json_t *v = json_object_get(params, keys[k]);
        if (!v || json_is_null(v))
            continue;
        size_t n = json_is_array(v) ? json_array_size(v) : 1;
        for (size_t i = 0; i < n; i++) {
            const json_t *x = json_is_array(v) ? json_array_get(v, i) : v;
            const char *str = json_string_value(x);
            if (!str)
                return gm_error_set(err, GM_EPARSE, "parameters.%s must be a string, got %s",
                                    keys[k], type_name(x));
            if (strcasecmp(str, "auto") == 0)
                continue;
            char nm[8];
            double b = gm_estimate_dtype_bytes(str, nm);
            if (b == 0)
                return gm_error_set(err, GM_EPARSE,
                                    "parameters.%s \"%s\" is not a dtype gpumon knows (fp32, "
                                    "fp16, bf16, fp8, int8, int4, awq, gptq...); give --dtype",
                                    keys[k], str);
            if (b > *bytes) {
                *bytes = b;
                snprintf(name, 8, "%s", nm);
            }
        }
        return GM_OK;
    }
    return GM_OK;
}

/* The model's size and shape. */
typedef struct shape {
    double params;
    unsigned layers, kv_heads, head_dim;
    double torch_bytes; /* config.json's torch_dtype, 0 when absent */
    char torch_name[8];
} shape;

/* A positive number of the first of keys in c; 0 when none. */
static double cfg_num(const json_t *c, const char *const *keys)
{
    for (size_t k = 0; keys[k]; k++) {
        const json_t *v = json_object_get(c, keys[k]);
        if (json_is_number(v) && json_number_value(v) > 0)
            return json_number_value(v);
    }
    return 0;
}

/* Parameters and shape from a Hugging Face config.json: embeddings (and an untied output
 * layer), then per layer attention (q and o of heads x head_dim, k and v of kv_heads x
 * head_dim), the MLP (3 matrices of the intermediate size when the config names one, as
 * gated Llama-style models do; else 2 of 4 x hidden), experts (each an MLP, plus a router)
 * and two norms. */
static int shape_from_json(const json_t *root, const char *path, shape *sh, gm_error *err)
{
    const json_t *c = root;
    static const char *const hidden_k[] = {"hidden_size", "n_embd", "d_model", "dim", NULL};
    if (cfg_num(c, hidden_k) == 0 && json_is_object(json_object_get(root, "text_config")))
        c = json_object_get(root, "text_config"); /* multimodal: the language model's */
    static const char *const layers_k[] = {"num_hidden_layers", "n_layer", "num_layers", "n_layers",
                                           NULL};
    static const char *const vocab_k[] = {"vocab_size", "padded_vocab_size", NULL};
    static const char *const heads_k[] = {"num_attention_heads", "n_head", "n_heads", NULL};
    static const char *const kv_k[] = {"num_key_value_heads", "num_kv_heads", "n_kv_heads",
                                       "multi_query_group_num", NULL};
    static const char *const hd_k[] = {"head_dim", NULL};
    static const char *const inter_k[] = {"intermediate_size", NULL};
    static const char *const inter2_k[] = {"ffn_dim", "n_inner", "ffn_hidden_size", NULL};
    static const char *const experts_k[] = {"num_local_experts", "n_routed_experts", "num_experts",
                                            NULL};
    static const char *const moe_inter_k[] = {"moe_intermediate_size", NULL};
    static const char *const shared_k[] = {"n_shared_experts", NULL};
    static const char *const shared_inter_k[] = {"shared_expert_intermediate_size", NULL};
    double h = cfg_num(c, hidden_k), L = cfg_num(c, layers_k), V = cfg_num(c, vocab_k),
           H = cfg_num(c, heads_k);
    const char *missing = h == 0   ? "hidden_size"
                          : L == 0 ? "num_hidden_layers"
                          : V == 0 ? "vocab_size"
                          : H == 0 ? "num_attention_heads"
                                   : NULL;
    if (missing)
        return gm_error_set(err, GM_EPARSE,
                            "%s has no %s: gpumon cannot size the model from it (give "
                            "--method size-classes)",
                            path, missing);
    double KV = cfg_num(c, kv_k), d = cfg_num(c, hd_k);
    if (KV == 0)
        KV = H;
    if (d == 0)
        d = floor(h / H);
    double I = cfg_num(c, inter_k), mlp;
    if (I > 0)
        mlp = 3 * h * I;
    else {
        I = cfg_num(c, inter2_k);
        mlp = 2 * h * (I > 0 ? I : 4 * h);
    }
    double E = cfg_num(c, experts_k);
    if (E > 1) {
        double Ie = cfg_num(c, moe_inter_k);
        if (Ie == 0)
            Ie = I > 0 ? I : 4 * h;
        double S = cfg_num(c, shared_k), Is = cfg_num(c, shared_inter_k);
        mlp = (E + S) * 3 * h * Ie + h * E + (Is > 0 ? 3 * h * Is : 0);
    }
    double attn = h * H * d + 2 * h * KV * d + H * d * h;
    bool tied = json_is_true(json_object_get(c, "tie_word_embeddings")) ||
                json_is_true(json_object_get(root, "tie_word_embeddings"));
    sh->params = V * h * (tied ? 1 : 2) + L * (attn + mlp + 2 * h) + h;
    /* Figures no model has (a typo, a hostile file) would overflow the casts below. */
    const char *huge = L > 1e6                                           ? "num_hidden_layers"
                       : KV > 1e6                                        ? "num_key_value_heads"
                       : d > 1e6                                         ? "head_dim"
                       : !(sh->params <= GM_ESTIMATE_MAX_PARAMS_B * 1e9) ? "the parameter count"
                                                                         : NULL;
    if (huge)
        return gm_error_set(err, GM_EPARSE, "%s: %s is larger than any model gpumon can size", path,
                            huge);
    sh->layers = (unsigned)L;
    sh->kv_heads = (unsigned)KV;
    sh->head_dim = (unsigned)d;
    const char *td = json_string_value(json_object_get(root, "torch_dtype"));
    if (!td)
        td = json_string_value(json_object_get(c, "torch_dtype"));
    sh->torch_bytes = td ? gm_estimate_dtype_bytes(td, sh->torch_name) : 0;
    return GM_OK;
}

static int read_config(const char *path, shape *sh, gm_error *err)
{
    struct stat sb;
    if (stat(path, &sb) < 0 || sb.st_size > (16 << 20))
        return gm_error_set(err, GM_EPARSE, "%s: cannot be read or is too large", path);
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root || !json_is_object(root)) {
        json_decref(root);
        return gm_error_set(err, GM_EPARSE, "%s: not valid JSON: line %d: %s", path, je.line,
                            je.text);
    }
    int rc = shape_from_json(root, path, sh, err);
    json_decref(root);
    return rc;
}

/* Models gpumon knows by name: the shape of each as its published Hugging Face config.json
 * gives it (num_hidden_layers, hidden_size, intermediate_size, num_attention_heads,
 * num_key_value_heads, vocab_size, num_local_experts), sized by the same formula as a
 * config.json read from disk. Names are matched without case, organisation ("meta-llama/"),
 * "Meta-" and trailing -hf, -chat, -instruct, -base, -v0.1 or -v0.2. */
static const struct builtin {
    const char *names[4];
    unsigned layers, hidden, inter, heads, kv_heads, vocab, experts;
} builtins[] = {
    /* Llama 2 7B and 13B: the printed module tree of both (embeddings 32000 x 4096 / 5120, 32 / 40
     * layers, q/k/v 4096 / 5120 wide, MLP 11008 / 13824), Retruth/deontic
     * nlp_models/llama2/README.md; 13B as meta-llama/Llama-2-13b's params.json, thamada/modelQuery
     * README.md. */
    {{"llama-2-7b", "llama2-7b"}, 32, 4096, 11008, 32, 32, 32000, 0},
    {{"llama-2-13b", "llama2-13b"}, 40, 5120, 13824, 40, 40, 32000, 0},
    /* Llama 3 / 3.1 8B: meta-llama/Llama-3.1-8B config.json as quoted in citsjtu2020/LLM-Prof
     * sglang/Model_Config.md; the table of oumi's configs/recipes/llama3_1/README.md (Llama 3
     * has the same shape: thamada/modelQuery README.md counts 8030261248 parameters for both). */
    {{"llama-3-8b", "llama3-8b", "llama-3.1-8b", "llama3.1-8b"}, 32, 4096, 14336, 32, 8, 128256, 0},
    /* Llama 3 / 3.1 / 3.3 70B: 80 layers, 8192 hidden, 28672 MLP, 64 heads, 8 KV heads, 128256
     * vocabulary, oumi's configs/recipes/llama3_1/README.md and llama3_3/README.md. */
    {{"llama-3-70b", "llama3-70b", "llama-3.1-70b", "llama-3.3-70b"},
     80,
     8192,
     28672,
     64,
     8,
     128256,
     0},
    /* Mistral 7B: dim 4096, 32 layers, hidden_dim 14336, 32 heads, 8 KV heads, vocabulary
     * 32000, edadaltocg/mistral-src-finetune finetune/config.py. */
    {{"mistral-7b"}, 32, 4096, 14336, 32, 8, 32000, 0},
    /* Mixtral 8x7B: 8 experts of Mistral 7B's MLP, keras-team/keras-hub
     * keras_hub/src/models/mixtral/README.md (the printed MixtralForCausalLM). */
    {{"mixtral-8x7b"}, 32, 4096, 14336, 32, 8, 32000, 8},
};

/* The model id as the table spells names: lower case, the part after the last '/', without
 * "meta-" in front and -hf, -chat, -instruct, -base at the end. */
static void builtin_key(const char *model, char *key, size_t len)
{
    const char *slash = strrchr(model, '/');
    const char *p = slash ? slash + 1 : model;
    size_t n = 0;
    for (; *p && n + 1 < len; p++)
        key[n++] = (char)tolower((unsigned char)*p);
    key[n] = '\0';
    if (strncmp(key, "meta-", 5) == 0)
        memmove(key, key + 5, strlen(key + 5) + 1);
    /* Mistral's v0.1 and v0.2 share a shape (v0.3 has a larger vocabulary). */
    static const char *const tails[] = {"-hf", "-chat", "-instruct", "-base", "-v0.1", "-v0.2"};
    for (bool cut = true; cut;) {
        cut = false;
        for (size_t t = 0; t < sizeof tails / sizeof *tails; t++) {
            size_t kl = strlen(key), tl = strlen(tails[t]);
            if (kl > tl && strcmp(key + kl - tl, tails[t]) == 0) {
                key[kl - tl] = '\0';
                cut = true;
            }
        }
    }
}

static const struct builtin *builtin_find(const char *model)
{
    char key[256];
    if (!model || !*model)
        return NULL;
    builtin_key(model, key, sizeof key);
    for (size_t i = 0; i < sizeof builtins / sizeof *builtins; i++)
        for (size_t k = 0; k < 4 && builtins[i].names[k]; k++)
            if (strcmp(key, builtins[i].names[k]) == 0)
                return &builtins[i];
    return NULL;
}

const char *gm_estimate_builtin_name(size_t i)
{
    return i < sizeof builtins / sizeof *builtins ? builtins[i].names[0] : NULL;
}

bool gm_estimate_builtin_known(const char *model)
{
    return builtin_find(model) != NULL;
}

static int builtin_shape(const struct builtin *b, shape *sh, gm_error *err)
{
    json_t *c = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "num_hidden_layers", (json_int_t)b->layers,
        "hidden_size", (json_int_t)b->hidden, "intermediate_size", (json_int_t)b->inter,
        "num_attention_heads", (json_int_t)b->heads, "num_key_value_heads", (json_int_t)b->kv_heads,
        "vocab_size", (json_int_t)b->vocab, "num_local_experts", (json_int_t)b->experts);
    if (!c)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    int rc = shape_from_json(c, b->names[0], sh, err);
    json_decref(c);
    return rc;
}

/* The directory of a local model (holding config.json): model as given, else under base_dir. */
static bool model_dir(const char *model, const char *base_dir, char *cfg, size_t len)
{
    if (!model || !*model)
        return false;
    char cand[2][4096];
    int n = 0;
    snprintf(cand[n++], sizeof cand[0], "%s", model);
    if (model[0] != '/' && base_dir && *base_dir)
        snprintf(cand[n++], sizeof cand[0], "%s/%s", base_dir, model);
    for (int i = 0; i < n; i++) {
        char path[4200];
        struct stat sb;
        /* A config.json named itself (any *.json file that is not a directory). */
        size_t cl = strlen(cand[i]);
        if (cl > 5 && strcmp(cand[i] + cl - 5, ".json") == 0 && stat(cand[i], &sb) == 0 &&
            S_ISREG(sb.st_mode)) {
            snprintf(cfg, len, "%s", cand[i]);
            return true;
        }
        snprintf(path, sizeof path, "%s/config.json", cand[i]);
        if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
            snprintf(cfg, len, "%s", path);
            return true;
        }
    }
    return false;
}

static int model_memory(const json_t *params, const gm_estimate_options *o, gm_estimate *e,
                        gm_error *err)
{
    gm_estimate_memory *m = &e->mem;
    shape sh = {0};
    if (model_dir(e->model, o->base_dir, m->config, sizeof m->config)) {
        int rc = read_config(m->config, &sh, err);
        if (rc < 0)
            return rc;
        m->source = "config.json";
    } else if (builtin_find(e->model)) {
        int rc = builtin_shape(builtin_find(e->model), &sh, err);
        if (rc < 0)
            return rc;
        m->source = "built-in";
        m->config[0] = '\0';
    } else if (e->model_params_b > 0) {
        /* A dense transformer about 128 wide per layer: P ~ 12 L (128 L)^2. */
        sh.params = e->model_params_b * 1e9;
        sh.layers = (unsigned)lround(cbrt(sh.params / (12.0 * 128 * 128)));
        if (sh.layers == 0)
            sh.layers = 1;
        sh.kv_heads = 8;
        sh.head_dim = 128;
        m->shape_assumed = true;
        m->source = "name";
        m->config[0] = '\0';
    } else {
        return GM_OK; /* unknown size: the size classes stand */
    }
    /* Weights: an option, else the task's quantization, then dtype, then config.json. */
    char qname[8] = "", dname[8] = "";
    double qbytes = 0, dbytes = 0;
    int rc = param_dtype(params, quant_keys, &qbytes, qname, err);
    if (rc == GM_OK)
        rc = param_dtype(params, dtype_keys, &dbytes, dname, err);
    if (rc < 0)
        return rc;
    double act = dbytes ? dbytes : sh.torch_bytes ? sh.torch_bytes : 2;
    const char *act_name = dbytes ? dname : sh.torch_bytes ? sh.torch_name : "fp16";
    if (o->dtype) {
        m->weight_bytes = gm_estimate_dtype_bytes(o->dtype, m->dtype);
        if (m->weight_bytes == 0)
            return gm_error_set(err, GM_EINVAL, "dtype \"%s\" is not one gpumon knows", o->dtype);
    } else if (qbytes) {
        m->weight_bytes = qbytes;
        snprintf(m->dtype, sizeof m->dtype, "%s", qname);
    } else {
        m->weight_bytes = act;
        snprintf(m->dtype, sizeof m->dtype, "%s", act_name);
    }
    /* The KV cache: an option, else the task's, else the activations' dtype (16 bits at
     * least). */
    char kname[8] = "";
    double kbytes = 0;
    if ((rc = param_dtype(params, kv_keys, &kbytes, kname, err)) < 0)
        return rc;
    if (o->kv_dtype) {
        m->kv_bytes = gm_estimate_dtype_bytes(o->kv_dtype, m->kv_dtype);
        if (m->kv_bytes == 0)
            return gm_error_set(err, GM_EINVAL, "KV cache dtype \"%s\" is not one gpumon knows",
                                o->kv_dtype);
    } else if (kbytes) {
        m->kv_bytes = kbytes;
        snprintf(m->kv_dtype, sizeof m->kv_dtype, "%s", kname);
    } else if (o->dtype && m->weight_bytes >= 2) {
        m->kv_bytes = m->weight_bytes;
        snprintf(m->kv_dtype, sizeof m->kv_dtype, "%s", m->dtype);
    } else {
        m->kv_bytes = act >= 2 ? act : 2;
        snprintf(m->kv_dtype, sizeof m->kv_dtype, "%s", act >= 2 ? act_name : "fp16");
    }
    unsigned v;
    if ((rc = param_uint(params, context_keys, &v, err)) < 0)
        return rc;
    m->context = o->context ? o->context : v ? v : GM_ESTIMATE_CONTEXT;
    if ((rc = param_uint(params, batch_keys, &v, err)) < 0)
        return rc;
    m->batch = o->batch ? o->batch : v ? v : GM_ESTIMATE_BATCH;
    m->overhead_mib = o->overhead_mib >= 0 ? o->overhead_mib : GM_ESTIMATE_OVERHEAD_MIB;
    m->params = sh.params;
    e->model_params_b = sh.params / 1e9;
    m->layers = sh.layers;
    m->kv_heads = sh.kv_heads;
    m->head_dim = sh.head_dim;
    unsigned tp = e->size[GM_PAR_TP], pp = e->size[GM_PAR_PP];
    /* Layers split over the pipeline; KV heads over tensor parallelism, at least one per GPU
     * (fewer heads than GPUs are replicated). */
    double layers_gpu = ceil((double)sh.layers / pp);
    double heads_gpu = ceil((double)sh.kv_heads / tp);
    m->kv_bytes_per_token = 2 * layers_gpu * heads_gpu * sh.head_dim * m->kv_bytes;
    m->weights_mib = sh.params * m->weight_bytes / ((double)tp * pp) / GM_BYTES_PER_MIB;
    m->kv_mib = (double)m->context * m->batch * m->kv_bytes_per_token / GM_BYTES_PER_MIB;
    double total = ceil(m->weights_mib + m->kv_mib + m->overhead_mib);
    e->memory_mib = total > 4e9 ? 4000000000u : (unsigned)total;
    e->method = GM_ESTIMATE_MODEL;
    e->memory_rule = "model";
    return GM_OK;
}

int gm_estimate_task(const json_t *task, gm_estimate *out, gm_error *err)
{
    return gm_estimate_task_opt(task, NULL, out, err);
}

int gm_estimate_task_opt(const json_t *task, const gm_estimate_options *opt, gm_estimate *out,
                         gm_error *err)
{
    if (!task || !out)
        return gm_error_set(err, GM_EINVAL, "gm_estimate_task: NULL argument");
    gm_estimate_options defaults;
    if (!opt) {
        gm_estimate_options_init(&defaults);
        opt = &defaults;
    }
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
    /* Sizes given as options stand over the task's. */
    for (int p = 0; p < GM_PAR__COUNT; p++)
        if (opt->size[p]) {
            out->size[p] = opt->size[p];
            snprintf(out->key[p], sizeof out->key[p], "--%s", dims[p].name);
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
    out->method = GM_ESTIMATE_SEED;
    if (opt->method == GM_ESTIMATE_MODEL)
        return model_memory(json_is_object(params) ? params : NULL, opt, out, err);
    return GM_OK;
}

int gm_estimate_task_text(const char *text, size_t len, const char *origin, gm_estimate *out,
                          gm_error *err)
{
    return gm_estimate_task_text_opt(text, len, origin, NULL, out, err);
}

int gm_estimate_task_text_opt(const char *text, size_t len, const char *origin,
                              const gm_estimate_options *opt, gm_estimate *out, gm_error *err)
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
    int rc = gm_estimate_task_opt(root, opt, out, &inner);
    json_decref(root);
    if (rc < 0)
        return gm_error_set(err, rc, "%s: %s", origin, inner.msg);
    return GM_OK;
}

int gm_estimate_task_file(const char *path, gm_estimate *out, gm_error *err)
{
    return gm_estimate_task_file_opt(path, NULL, out, err);
}

/* A Hugging Face config.json rather than a task: an object with neither "model" nor
 * "parameters", but a model's shape (or a multimodal model's text_config). */
static bool looks_like_model_config(const char *text, size_t len)
{
    json_error_t je;
    json_t *root = gm_json_loadb(text, len, 0, &je);
    bool cfg = json_is_object(root) && !json_object_get(root, "model") &&
               !json_object_get(root, "parameters") &&
               (json_object_get(root, "num_hidden_layers") ||
                json_object_get(root, "hidden_size") || json_object_get(root, "text_config"));
    json_decref(root);
    return cfg;
}

/* The task of serving model (a name, a directory or a config.json) as it is. */
static int estimate_model_path(const char *model, const gm_estimate_options *o, gm_estimate *out,
                               gm_error *err)
{
    json_t *task = json_pack("{s:s}", "model", model);
    if (!task)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    gm_error inner = {0};
    int rc = gm_estimate_task_opt(task, o, out, &inner);
    json_decref(task);
    return rc < 0 ? gm_error_set(err, rc, "%s", inner.msg) : GM_OK;
}

int gm_estimate_model(const char *model, const gm_estimate_options *opt, gm_estimate *out,
                      gm_error *err)
{
    if (!model || !out)
        return gm_error_set(err, GM_EINVAL, "gm_estimate_model: NULL argument");
    struct stat sb;
    if (stat(model, &sb) == 0)
        return gm_estimate_task_file_opt(model, opt, out, err);
    if (!builtin_find(model) && params_billions(model) == 0) {
        char names[512];
        size_t used = 0;
        names[0] = '\0';
        for (size_t i = 0; i < sizeof builtins / sizeof *builtins && used < sizeof names; i++)
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "",
                                     builtins[i].names[0]);
        return gm_error_set(err, GM_ENOENT,
                            "\"%s\" is neither a file nor a model gpumon knows (%s; or give "
                            "the model's config.json or directory)",
                            model, names);
    }
    gm_estimate_options o;
    if (opt)
        o = *opt;
    else
        gm_estimate_options_init(&o);
    return estimate_model_path(model, &o, out, err);
}

int gm_estimate_task_file_opt(const char *path, const gm_estimate_options *opt, gm_estimate *out,
                              gm_error *err)
{
    if (!path || !out)
        return gm_error_set(err, GM_EINVAL, "gm_estimate_task_file: NULL argument");
    gm_estimate_options o;
    if (opt)
        o = *opt;
    else
        gm_estimate_options_init(&o);
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        /* A model directory: the task of serving it as it is. */
        char cfg[4200];
        snprintf(cfg, sizeof cfg, "%s/config.json", path);
        if (stat(cfg, &sb) < 0)
            return gm_error_set(err, GM_ENOENT,
                                "%s is a directory without a config.json: neither a task config "
                                "nor a model",
                                path);
        json_t *task = json_pack("{s:s}", "model", path);
        if (!task)
            return gm_error_set(err, GM_ENOMEM, "out of memory");
        gm_error inner = {0};
        int rc = gm_estimate_task_opt(task, &o, out, &inner);
        json_decref(task);
        return rc < 0 ? gm_error_set(err, rc, "%s", inner.msg) : GM_OK;
    }
    /* A model path in the task may be relative to the task file. */
    char dir[4096];
    if (!o.base_dir) {
        snprintf(dir, sizeof dir, "%s", path);
        o.base_dir = dirname(dir);
    }
    char *buf;
    size_t len;
    int rc = gm_file_read_all(path, MAX_TASK_SIZE, "task config", &buf, &len, err);
    if (rc < 0)
        return rc;
    if (looks_like_model_config(buf, len))
        rc = estimate_model_path(path, &o, out, err);
    else
        rc = gm_estimate_task_text_opt(buf, len, path, &o, out, err);
    free(buf);
    return rc;
}

/* The formula, as `estimate --help` and the JSON say it. */
#define FORMULA                                                                     \
    "params x dtype bytes / (tp x pp) + context x batch x 2 x ceil(layers / pp) x " \
    "ceil(kv_heads / tp) x head_dim x kv bytes + overhead"

json_t *gm_estimate_json(const gm_estimate *e)
{
    json_t *par = json_object();
    for (int p = 0; p < GM_PAR__COUNT; p++)
        json_object_set_new(par, dims[p].name,
                            json_pack("{s:I, s:o}", "size", (json_int_t)e->size[p], "parameter",
                                      e->key[p][0] ? json_string(e->key[p]) : json_null()));
    json_t *mem = json_null();
    const gm_estimate_memory *m = &e->mem;
    if (e->method == GM_ESTIMATE_MODEL) {
        mem =
            json_pack("{s:s, s:f, s:s, s:o, s:s, s:f, s:s, s:f, s:I, s:I, s:I, s:I, s:I, s:b, "
                      "s:f, s:f, s:f, s:f}",
                      "formula", FORMULA, "params", m->params, "source", m->source, "config",
                      m->config[0] ? gm_json_str(m->config) : json_null(), "dtype", m->dtype,
                      "weight_bytes", m->weight_bytes, "kv_dtype", m->kv_dtype, "kv_bytes",
                      m->kv_bytes, "context", (json_int_t)m->context, "batch", (json_int_t)m->batch,
                      "layers", (json_int_t)m->layers, "kv_heads", (json_int_t)m->kv_heads,
                      "head_dim", (json_int_t)m->head_dim, "shape_assumed", m->shape_assumed,
                      "kv_bytes_per_token", m->kv_bytes_per_token, "weights_mib", m->weights_mib,
                      "kv_cache_mib", m->kv_mib, "overhead_mib", m->overhead_mib);
    }
    return json_pack("{s:I, s:I, s:s, s:o, s:o, s:o, s:s, s:s, s:o}", "gpus", (json_int_t)e->gpus,
                     "memory_per_gpu_mib", (json_int_t)e->memory_mib, "world_size",
                     "tp x pp x max(dp, cp, dcp)", "parallel", par, "model",
                     e->model[0] ? gm_json_str(e->model) : json_null(), "model_params_b",
                     e->method == GM_ESTIMATE_MODEL && m->params > 0 ? json_real(m->params / 1e9)
                     : e->model_params_b > 0                         ? json_real(e->model_params_b)
                                                                     : json_null(),
                     "memory_rule", e->memory_rule ? e->memory_rule : "", "method",
                     e->method == GM_ESTIMATE_MODEL ? "model" : "size-classes", "memory",
                     mem ? mem : json_null());
}
