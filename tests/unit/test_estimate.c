/* test_estimate.c - task config estimates: world size over every alias spelling, the model
 * method's memory (weights, KV cache, overhead; from the name, from a config.json written here
 * or built in, checked against the parameter counts the models publish), the size classes, and
 * the error named for each malformed field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "check.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/estimate.h"

static gm_estimate est;
static gm_error err;

/* The seed method: these tests predate the model method and check the classes. */
static int estimate(const char *text)
{
    memset(&err, 0, sizeof err);
    gm_estimate_options o;
    gm_estimate_options_init(&o);
    o.method = GM_ESTIMATE_SEED;
    return gm_estimate_task_text_opt(text, strlen(text), "t.json", &o, &est, &err);
}

/* The model method (the default), with options o (NULL: none). */
static int estimate_model(const char *text, const gm_estimate_options *o)
{
    memset(&err, 0, sizeof err);
    return gm_estimate_task_text_opt(text, strlen(text), "t.json", o, &est, &err);
}

static void expect_error(const char *text, const char *msg)
{
    assert_int_equal(estimate(text), GM_EPARSE);
    assert_string_equal(err.msg, msg);
}

static void test_seed_example(void **state)
{
    assert_int_equal(estimate("{\"model\": {\"id_or_path\": \"llama-3-70b\"}, \"parameters\": "
                              "{\"tp-size\": [1, 2, 4], \"pp-size\": [1], \"dp-size\": [1]}}"),
                     GM_OK);
    assert_int_equal(est.gpus, 4);
    assert_int_equal(est.memory_mib, 20000);
    assert_int_equal(est.size[GM_PAR_TP], 4);
    assert_string_equal(est.key[GM_PAR_TP], "tp-size");
    assert_string_equal(est.key[GM_PAR_CP], "");
    assert_string_equal(est.model, "llama-3-70b");
    assert_float_equal(est.model_params_b, 70, 0);
    assert_string_equal(est.memory_rule, "65B+ model");
}

static void test_every_spelling(void **state)
{
    static const char *const dims[][5] = {
        {"tensor-parallel-size", "tensor_parallel_size", "tp-size", "tp_size", "tp"},
        {"pipeline-parallel-size", "pipeline_parallel_size", "pp-size", "pp_size", "pp"},
        {"data-parallel-size", "data_parallel_size", "dp-size", "dp_size", "dp"},
        {"context-parallel-size", "context_parallel_size", "cp-size", "cp_size", "cp"},
        {"decode-context-parallel-size", "decode_context_parallel_size", "dcp-size", "dcp_size",
         "dcp"},
    };
    /* tp and pp multiply; dp, cp and dcp take the largest. */
    const unsigned expect[] = {3, 3, 3, 3, 3};
    for (int d = 0; d < GM_PAR__COUNT; d++)
        for (int k = 0; k < 5; k++) {
            char text[160];
            snprintf(text, sizeof text, "{\"parameters\": {\"%s\": [1, 3]}}", dims[d][k]);
            assert_int_equal(estimate(text), GM_OK);
            assert_int_equal(est.size[d], 3);
            assert_string_equal(est.key[d], dims[d][k]);
            assert_int_equal(est.gpus, expect[d]);
            /* Scalars work the same. */
            snprintf(text, sizeof text, "{\"parameters\": {\"%s\": 3}}", dims[d][k]);
            assert_int_equal(estimate(text), GM_OK);
            assert_int_equal(est.size[d], 3);
        }
    assert_string_equal(gm_estimate_parallel_name(GM_PAR_DCP), "dcp");
    assert_null(gm_estimate_parallel_name(GM_PAR__COUNT));
}

static void test_world_size(void **state)
{
    /* 2 x 2 x max(1, 2, 3) = 12; other parameters are ignored. */
    assert_int_equal(estimate("{\"model\": \"meta-llama/Llama-2-13b-chat-hf\", \"parameters\": "
                              "{\"tensor-parallel-size\": 2, \"pp_size\": [1, 2], "
                              "\"data-parallel-size\": [1], \"context_parallel_size\": [2], "
                              "\"dcp\": 3, \"mem-fraction-static\": [0.8]}}"),
                     GM_OK);
    assert_int_equal(est.gpus, 12);
    assert_int_equal(est.memory_mib, 12000);
    /* dp dominating cp and dcp. */
    assert_int_equal(estimate("{\"parameters\": {\"tp\": 2, \"dp\": [8, 4], \"cp\": 2}}"), GM_OK);
    assert_int_equal(est.gpus, 16);
    /* Nothing given: one GPU, base memory. */
    assert_int_equal(estimate("{}"), GM_OK);
    assert_int_equal(est.gpus, 1);
    assert_int_equal(est.memory_mib, 8000);
    assert_string_equal(est.memory_rule, "base (model size unknown)");
    assert_int_equal(estimate("{\"parameters\": null, \"model\": null}"), GM_OK);
    assert_int_equal(est.gpus, 1);
    /* Integral reals count; the largest sizes multiply without overflow. */
    assert_int_equal(estimate("{\"parameters\": {\"tp\": 2.0}}"), GM_OK);
    assert_int_equal(est.gpus, 2);
    assert_int_equal(estimate("{\"parameters\": {\"tp\": 65536, \"pp\": 65536, \"dp\": 65536}}"),
                     GM_OK);
    check_eq(est.gpus, (uint64_t)65536 * 65536 * 65536);
}

static void test_aliases_agreeing_or_not(void **state)
{
    /* The same set under two spellings (order and repeats aside) is fine. */
    assert_int_equal(estimate("{\"parameters\": {\"tp\": [4, 2], \"tp-size\": [2, 4, 4]}}"), GM_OK);
    assert_int_equal(est.size[GM_PAR_TP], 4);
    assert_string_equal(est.key[GM_PAR_TP], "tp-size"); /* first in the spelling order */
    expect_error("{\"parameters\": {\"tp-size\": [1, 2], \"tensor_parallel_size\": [4]}}",
                 "t.json: parameters.tensor_parallel_size [4] and parameters.tp-size [1, 2] both "
                 "set tensor parallelism, to different values; keep one");
    expect_error("{\"parameters\": {\"dcp\": 2, \"dcp_size\": [2, 1]}}",
                 "t.json: parameters.dcp_size [1, 2] and parameters.dcp [2] both set decode "
                 "context parallelism, to different values; keep one");
    /* One key twice in the object is caught by the parser. */
    assert_int_equal(estimate("{\"parameters\": {\"tp\": 1, \"tp\": 2}}"), GM_EPARSE);
    assert_non_null(strstr(err.msg, "duplicate object key"));
}

static void test_malformed(void **state)
{
    assert_int_equal(estimate("{\n  \"parameters\": {\"tp-size\": [1, 2,]}\n}"), GM_EPARSE);
    assert_non_null(strstr(err.msg, "t.json: not valid JSON: line 2, column"));
    expect_error("[1, 2]", "t.json: a task config must be a JSON object, got a list");
    expect_error("{\"parameters\": [1]}", "t.json: parameters must be an object, got a list");
    expect_error("{\"parameters\": {\"tp-size\": \"4\"}}",
                 "t.json: parameters.tp-size must be a positive integer or a list of them, got a "
                 "string");
    expect_error("{\"parameters\": {\"pp-size\": [1, 0]}}",
                 "t.json: parameters.pp-size[1] must be a positive integer, got 0");
    expect_error("{\"parameters\": {\"pp\": -2}}",
                 "t.json: parameters.pp must be a positive integer, got -2");
    expect_error("{\"parameters\": {\"dp\": 1.5}}",
                 "t.json: parameters.dp must be a whole number, got 1.5");
    expect_error("{\"parameters\": {\"cp\": []}}", "t.json: parameters.cp is an empty list");
    expect_error("{\"parameters\": {\"cp\": [true]}}",
                 "t.json: parameters.cp[0] must be a positive integer, got a boolean");
    expect_error("{\"parameters\": {\"tp\": 65537}}",
                 "t.json: parameters.tp is implausibly large (65537 > 65536)");
    expect_error("{\"model\": 70}",
                 "t.json: model must be a string or an object with \"id_or_path\", got an "
                 "integer");
    expect_error("{\"model\": {\"id_or_path\": [\"x\"]}}",
                 "t.json: model.id_or_path must be a string, got a list");
}

static void test_memory_classes(void **state)
{
    static const struct {
        const char *model;
        double params_b;
        unsigned mib;
    } cases[] = {
        {"llama-3-70b", 70, 20000},
        {"huggyllama/llama-65b", 65, 20000},
        {"meta-llama/Meta-Llama-3.1-405B-Instruct", 405, 20000},
        {"Qwen/Qwen2.5-72B-Instruct", 72, 20000},
        {"meta-llama/Llama-2-13b-chat-hf", 13, 12000},
        {"mistral-7b", 7, 12000},
        {"llama3.1:8b", 8, 12000},
        {"mistralai/Mixtral-8x7B-Instruct-v0.1", 56, 12000},
        {"Qwen/Qwen2.5-1.5B-Instruct", 1.5, 8000},
        {"/models/phi-2", 0, 8000},
        {"llama370b", 0, 8000}, /* a size must stand alone */
        {"bert-base", 0, 8000},
        {"", 0, 8000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double b = -1;
        const char *rule = NULL;
        unsigned mib = gm_estimate_memory_mib(cases[i].model, &b, &rule);
        if (mib != cases[i].mib || b != cases[i].params_b)
            fail_msg("%s: got %u MiB, %gB; want %u MiB, %gB", cases[i].model, mib, b, cases[i].mib,
                     cases[i].params_b);
        assert_non_null(rule);
    }
    assert_int_equal(gm_estimate_memory_mib(NULL, NULL, NULL), 8000);
    /* The model object's other keys. */
    assert_int_equal(estimate("{\"model\": {\"name\": \"x-70b\"}}"), GM_OK);
    assert_int_equal(est.memory_mib, 20000);
}

/* Caught by fuzz_estimate's check: gm_estimate_json failed (the CLI said "out of memory") for a
 * model id cut inside a character to fit gm_estimate.model, and for a size token that overflows
 * ("1e200x1e200b", infinitely many parameters). */
static void test_model_ids_the_report_must_hold(void **state)
{
    char text[400], id[300];
    memset(id, 'a', 254);
    snprintf(id + 254, sizeof id - 254, "\xc3\xa9-70b"); /* é straddles byte 255 */
    snprintf(text, sizeof text, "{\"model\": \"%s\"}", id);
    assert_int_equal(estimate(text), GM_OK);
    assert_int_equal(strlen(est.model), 254); /* cut before the character, not inside it */
    json_t *j = gm_estimate_json(&est);
    assert_non_null(j);
    json_decref(j);

    assert_int_equal(estimate("{\"model\": \"m-1e200x1e200b\"}"), GM_OK);
    check_eq(est.model_params_b, 0);
    assert_int_equal(est.memory_mib, GM_ESTIMATE_MEM_BASE_MIB);
    j = gm_estimate_json(&est);
    assert_non_null(j);
    json_decref(j);
}

/* Found by fuzz_estimate: jansson 2.14 drops a NUL byte right after a number. */
static void test_nul_byte(void **state)
{
    static const char nul[] = "{\"parameters\": {\"tp\": 2\0}}";
    assert_int_equal(gm_estimate_task_text(nul, sizeof nul - 1, "t.json", &est, &err), GM_EPARSE);
    assert_non_null(strstr(err.msg, "NUL byte"));
}

static void test_files_and_json(void **state)
{
    const char *fx = getenv("GM_FIXTURES");
    if (!fx)
        fail_msg("GM_FIXTURES not set (run through ctest)");
    char path[1024];
    snprintf(path, sizeof path, "%s/tasks/seed_example.json", fx);
    assert_int_equal(gm_estimate_task_file(path, &est, &err), GM_OK);
    json_t *j = gm_estimate_json(&est);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "gpus")), 4);
    /* llama-3-70b is built in: 80 layers, 70.55e9 parameters; 33642.6 MiB of fp16 weights at tp
     * 4, 320 MiB of KV cache (2 x 80 x 2 heads x 128 x 2 bytes x 4096 tokens), 2048 overhead. */
    assert_int_equal(json_integer_value(json_object_get(j, "memory_per_gpu_mib")), 36011);
    assert_string_equal(json_string_value(json_object_get(j, "method")), "model");
    json_t *mem = json_object_get(j, "memory");
    assert_int_equal(json_integer_value(json_object_get(mem, "layers")), 80);
    assert_float_equal(json_real_value(json_object_get(mem, "kv_cache_mib")), 320, 1e-9);
    assert_string_equal(json_string_value(json_object_get(mem, "source")), "built-in");
    assert_true(json_is_null(json_object_get(mem, "config")));
    assert_string_equal(json_string_value(json_object_get(j, "model")), "llama-3-70b");
    assert_float_equal(json_number_value(json_object_get(j, "model_params_b")), 70.5537, 1e-4);
    json_t *tp = json_object_get(json_object_get(j, "parallel"), "tp");
    assert_int_equal(json_integer_value(json_object_get(tp, "size")), 4);
    assert_string_equal(json_string_value(json_object_get(tp, "parameter")), "tp-size");
    json_t *cp = json_object_get(json_object_get(j, "parallel"), "cp");
    assert_int_equal(json_integer_value(json_object_get(cp, "size")), 1);
    assert_true(json_is_null(json_object_get(cp, "parameter")));
    json_decref(j);

    snprintf(path, sizeof path, "%s/tasks/not_json.json", fx);
    assert_int_equal(gm_estimate_task_file(path, &est, &err), GM_EPARSE);
    char want[1100];
    snprintf(want, sizeof want, "%s: not valid JSON: line 3, column", path);
    assert_non_null(strstr(err.msg, want));

    snprintf(path, sizeof path, "%s/tasks/does-not-exist.json", fx);
    assert_int_equal(gm_estimate_task_file(path, &est, &err), GM_ENOENT);
    assert_non_null(strstr(err.msg, "No such file"));
    /* A directory is a model directory only with a config.json. */
    assert_int_equal(gm_estimate_task_file(fx, &est, &err), GM_ENOENT);
    assert_non_null(strstr(err.msg, "without a config.json"));
    /* The seed method's JSON has no memory breakdown. */
    snprintf(path, sizeof path, "%s/tasks/seed_example.json", fx);
    gm_estimate_options o;
    gm_estimate_options_init(&o);
    o.method = GM_ESTIMATE_SEED;
    assert_int_equal(gm_estimate_task_file_opt(path, &o, &est, &err), GM_OK);
    j = gm_estimate_json(&est);
    assert_int_equal(json_integer_value(json_object_get(j, "memory_per_gpu_mib")), 20000);
    assert_string_equal(json_string_value(json_object_get(j, "method")), "size-classes");
    assert_true(json_is_null(json_object_get(j, "memory")));
    json_decref(j);
}

/* A 70b model gpumon does not know, at tp 4, from its name: 70e9 x 2 bytes / 4 = 33378.6 MiB of
 * weights (the "about 35 GB per GPU"), 71 layers assumed (12 x 71 x (128 x 71)^2 = 70.4e9),
 * 8 KV heads over 4 GPUs: 2 each. */
static void test_model_from_the_name(void **state)
{
    (void)state;
    const char *task = "{\"model\": {\"id_or_path\": \"acme-70b\"}, \"parameters\": "
                       "{\"tp-size\": [1, 2, 4]}}";
    assert_int_equal(estimate_model(task, NULL), GM_OK);
    assert_int_equal(est.method, GM_ESTIMATE_MODEL);
    assert_string_equal(est.mem.source, "name");
    assert_true(est.mem.shape_assumed);
    assert_float_equal(est.mem.weights_mib, 70e9 * 2 / 4 / 1048576, 1e-6);
    assert_int_equal(est.mem.layers, 71);
    assert_int_equal(est.mem.kv_heads, 8);
    assert_float_equal(est.mem.kv_bytes_per_token, 2 * 71 * 2 * 128 * 2, 0);
    assert_float_equal(est.mem.kv_mib, 284, 1e-9);
    assert_float_equal(est.mem.overhead_mib, 2048, 0);
    assert_int_equal(est.memory_mib, 35711);
    assert_int_equal(est.gpus, 4);
    /* pp splits the layers: tp 2 x pp 2 holds ceil(71 / 2) layers and 4 heads per GPU. */
    assert_int_equal(estimate_model("{\"model\": \"acme-70b\", \"parameters\": {\"tp\": 2, "
                                    "\"pp\": 2}}",
                                    NULL),
                     GM_OK);
    assert_float_equal(est.mem.kv_bytes_per_token, 2 * 36 * 4 * 128 * 2, 0);
    /* Options: int4 weights, an fp8 KV cache, 32k context, 8 sequences, no overhead. */
    gm_estimate_options o;
    gm_estimate_options_init(&o);
    o.dtype = "awq";
    o.kv_dtype = "fp8";
    o.context = 32768;
    o.batch = 8;
    o.overhead_mib = 0;
    assert_int_equal(estimate_model(task, &o), GM_OK);
    assert_string_equal(est.mem.dtype, "int4");
    assert_float_equal(est.mem.weights_mib, 70e9 * 0.5 / 4 / 1048576, 1e-6);
    assert_string_equal(est.mem.kv_dtype, "fp8");
    assert_float_equal(est.mem.kv_mib, 32768.0 * 8 * (2 * 71 * 2 * 128 * 1) / 1048576, 1e-9);
    assert_int_equal(est.memory_mib,
                     (unsigned)ceil(70e9 * 0.5 / 4 / 1048576 + 32768.0 * 8 * 36352 / 1048576));
    /* No size anywhere: the seed classes stand, and say so. */
    assert_int_equal(estimate_model("{\"model\": \"bert-base\"}", NULL), GM_OK);
    assert_int_equal(est.method, GM_ESTIMATE_SEED);
    assert_int_equal(est.memory_mib, 8000);
}

/* The task's own parameters: quantization over dtype for the weights, kv-cache-dtype, the
 * largest max-model-len and batch-size. */
static void test_model_task_parameters(void **state)
{
    (void)state;
    assert_int_equal(estimate_model("{\"model\": \"x-8b\", \"parameters\": {\"quantization\": "
                                    "\"awq\", \"dtype\": \"bfloat16\", \"kv-cache-dtype\": "
                                    "\"fp8_e5m2\", \"max-model-len\": [2048, 8192], "
                                    "\"batch_size\": 16}}",
                                    NULL),
                     GM_OK);
    assert_string_equal(est.mem.dtype, "int4");
    assert_string_equal(est.mem.kv_dtype, "fp8");
    assert_int_equal(est.mem.context, 8192);
    assert_int_equal(est.mem.batch, 16);
    /* dtype alone, and "auto" saying nothing. */
    assert_int_equal(estimate_model("{\"model\": \"x-8b\", \"parameters\": {\"dtype\": "
                                    "[\"auto\", \"float32\"]}}",
                                    NULL),
                     GM_OK);
    assert_string_equal(est.mem.dtype, "fp32");
    assert_string_equal(est.mem.kv_dtype, "fp32");
    assert_int_equal(estimate_model("{\"model\": \"x-8b\", \"parameters\": {\"dtype\": "
                                    "\"auto\"}}",
                                    NULL),
                     GM_OK);
    assert_string_equal(est.mem.dtype, "fp16");
    assert_int_equal(estimate_model("{\"model\": \"x-8b\", \"parameters\": {\"dtype\": "
                                    "\"float13\"}}",
                                    NULL),
                     GM_EPARSE);
    assert_string_equal(err.msg, "t.json: parameters.dtype \"float13\" is not a dtype gpumon "
                                 "knows (fp32, fp16, bf16, fp8, int8, int4, awq, gptq...); give "
                                 "--dtype");
    assert_int_equal(estimate_model("{\"model\": \"x-8b\", \"parameters\": {\"max-model-len\": "
                                    "0}}",
                                    NULL),
                     GM_EPARSE);
    assert_non_null(strstr(err.msg, "parameters.max-model-len must be a whole number"));
    assert_float_equal(gm_estimate_dtype_bytes("BF16", NULL), 2, 0);
    assert_float_equal(gm_estimate_dtype_bytes("auto", NULL), 0, 0);
    assert_float_equal(gm_estimate_dtype_bytes(NULL, NULL), 0, 0);
}

static char model_root[256];

static void write_model(const char *name, const char *config)
{
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/%s", model_root, name);
    mkdir(model_root, 0755);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(config, f);
    fclose(f);
}

/* Parameter counts from config.json against what the models publish: Llama 3 8B has
 * 8,030,261,248 parameters, Mixtral 8x7B 46.7B. */
static void test_model_from_config_json(void **state)
{
    (void)state;
    snprintf(model_root, sizeof model_root, "/tmp/gm-test-estimate-%d", (int)getpid());
    write_model("llama3-8b",
                "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 4096, "
                "\"intermediate_size\": 14336, \"num_attention_heads\": 32, "
                "\"num_hidden_layers\": 32, \"num_key_value_heads\": 8, \"tie_word_embeddings\": "
                "false, \"torch_dtype\": \"bfloat16\", \"vocab_size\": 128256}");
    write_model("mixtral",
                "{\"hidden_size\": 4096, \"intermediate_size\": 14336, \"num_attention_heads\": 32,"
                " \"num_hidden_layers\": 32, \"num_key_value_heads\": 8, \"num_local_experts\": 8,"
                " \"vocab_size\": 32000, \"torch_dtype\": \"bfloat16\"}");
    write_model("broken", "{\"hidden_size\": 4096}");
    char task[1024];
    snprintf(task, sizeof task, "{\"model\": \"%s/llama3-8b\", \"parameters\": {\"tp\": 2}}",
             model_root);
    assert_int_equal(estimate_model(task, NULL), GM_OK);
    assert_string_equal(est.mem.source, "config.json");
    assert_false(est.mem.shape_assumed);
    assert_float_equal(est.mem.params, 8030261248.0, 0);
    assert_string_equal(est.mem.dtype, "bf16"); /* torch_dtype */
    assert_int_equal(est.mem.layers, 32);
    /* 8 KV heads of 128 over tp 2: 4 per GPU. */
    assert_float_equal(est.mem.kv_bytes_per_token, 2 * 32 * 4 * 128 * 2, 0);
    assert_float_equal(est.mem.weights_mib, 8030261248.0 * 2 / 2 / 1048576, 1e-6);
    char path[512];
    snprintf(path, sizeof path, "%s/mixtral", model_root);
    /* --task naming the model directory itself. */
    assert_int_equal(gm_estimate_task_file(path, &est, &err), GM_OK);
    assert_float_equal(est.mem.params, 46702792704.0, 0);
    assert_int_equal(est.gpus, 1);
    /* A relative path is found next to the task file. */
    snprintf(path, sizeof path, "%s/task.json", model_root);
    FILE *f = fopen(path, "w");
    fputs("{\"model\": {\"id_or_path\": \"llama3-8b\"}}", f);
    fclose(f);
    assert_int_equal(gm_estimate_task_file(path, &est, &err), GM_OK);
    assert_string_equal(est.mem.source, "config.json");
    /* A local model whose config says too little is an error, not a guess. */
    snprintf(task, sizeof task, "{\"model\": \"%s/broken\"}", model_root);
    assert_int_equal(estimate_model(task, NULL), GM_EPARSE);
    assert_non_null(strstr(err.msg, "config.json has no num_hidden_layers"));
    /* Nor one whose figures no model has (they would overflow the shape's integers). */
    write_model("huge", "{\"hidden_size\": 4096, \"num_attention_heads\": 32, "
                        "\"num_hidden_layers\": 1e30, \"vocab_size\": 32000}");
    snprintf(task, sizeof task, "{\"model\": \"%s/huge\"}", model_root);
    assert_int_equal(estimate_model(task, NULL), GM_EPARSE);
    assert_non_null(strstr(err.msg, "num_hidden_layers is larger than any model"));
    write_model("wide", "{\"hidden_size\": 1e12, \"num_attention_heads\": 1e6, "
                        "\"num_hidden_layers\": 100, \"vocab_size\": 32000}");
    snprintf(task, sizeof task, "{\"model\": \"%s/wide\"}", model_root);
    assert_int_equal(estimate_model(task, NULL), GM_EPARSE);
    assert_non_null(strstr(err.msg, "the parameter count is larger than any model"));
    /* A size token past a million billion is no size: the seed classes apply. */
    assert_int_equal(estimate_model("{\"model\": \"x-1e300b\"}", NULL), GM_OK);
    assert_int_equal(est.method, GM_ESTIMATE_SEED);
    assert_float_equal(est.model_params_b, 0, 0);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", model_root);
    assert_int_equal(system(cmd), 0);
}

/* Built-in models: the shape of each from its published config.json, its parameter count
 * within 1 % of the published one. Published counts: Llama 2 7B 6738415616 (keras-hub's Llama
 * presets), Llama 2 13B 13016279168, Llama 3 8B 8030261248 and Llama 3 70B 70562938880
 * (thamada/modelQuery, from Meta's params.json), Mistral 7B 7241732096 (its GGUF
 * general.parameter_count), Mixtral 8x7B 46.7B (Mistral AI's announcement). */
static void check_builtin(const char *model, unsigned layers, unsigned kv_heads, double published)
{
    gm_estimate_options o;
    gm_estimate_options_init(&o);
    memset(&err, 0, sizeof err);
    assert_int_equal(gm_estimate_model(model, &o, &est, &err), GM_OK);
    assert_int_equal(est.method, GM_ESTIMATE_MODEL);
    assert_string_equal(est.mem.source, "built-in");
    assert_false(est.mem.shape_assumed);
    assert_int_equal(est.mem.layers, layers);
    assert_int_equal(est.mem.kv_heads, kv_heads);
    assert_int_equal(est.mem.head_dim, 128);
    if (fabs(est.mem.params - published) > 0.01 * published)
        fail_msg("%s: %.0f parameters, published %.0f", model, est.mem.params, published);
}

static void test_builtin_llama_2_7b(void **state)
{
    (void)state;
    check_builtin("llama-2-7b", 32, 32, 6738415616.0);
}

static void test_builtin_llama_2_13b(void **state)
{
    (void)state;
    check_builtin("meta-llama/Llama-2-13b-chat-hf", 40, 40, 13016279168.0);
}

static void test_builtin_llama_3_8b(void **state)
{
    (void)state;
    check_builtin("llama-3-8b", 32, 8, 8030261248.0);
    check_builtin("meta-llama/Meta-Llama-3.1-8B-Instruct", 32, 8, 8030261248.0);
}

/* Was 71 layers, from the size in the name. */
static void test_builtin_llama_3_70b(void **state)
{
    (void)state;
    check_builtin("llama-3-70b", 80, 8, 70562938880.0);
    check_builtin("meta-llama/Llama-3.3-70B-Instruct", 80, 8, 70562938880.0);
}

static void test_builtin_mistral_7b(void **state)
{
    (void)state;
    check_builtin("mistralai/Mistral-7B-v0.1", 32, 8, 7241732096.0);
}

/* Was 56B (8 x 7) with 8 KV heads of 128 and 73 layers guessed from it. */
static void test_builtin_mixtral_8x7b(void **state)
{
    (void)state;
    check_builtin("mistralai/Mixtral-8x7B-Instruct-v0.1", 32, 8, 46.7e9);
}

/* A name that is no file and no model gpumon knows is an error, not a guess; the options'
 * parallel sizes stand over the task's. */
static void test_model_names_and_sizes(void **state)
{
    (void)state;
    gm_estimate_options o;
    gm_estimate_options_init(&o);
    assert_int_equal(gm_estimate_model("no-such-model", &o, &est, &err), GM_ENOENT);
    assert_non_null(strstr(err.msg, "llama-3-70b"));
    assert_int_equal(gm_estimate_model("acme-13b", &o, &est, &err), GM_OK);
    assert_string_equal(est.mem.source, "name");
    o.size[GM_PAR_TP] = 8;
    o.size[GM_PAR_PP] = 2;
    assert_int_equal(
        estimate_model("{\"model\": \"llama-3-70b\", \"parameters\": {\"tp\": 2}}", &o), GM_OK);
    assert_int_equal(est.gpus, 16);
    assert_string_equal(est.key[GM_PAR_TP], "--tp");
    assert_int_equal(est.mem.kv_heads, 8);
    assert_float_equal(est.mem.kv_bytes_per_token, 2 * 40 * 1 * 128 * 2, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_from_the_name),
        cmocka_unit_test(test_model_task_parameters),
        cmocka_unit_test(test_model_from_config_json),
        cmocka_unit_test(test_seed_example),
        cmocka_unit_test(test_every_spelling),
        cmocka_unit_test(test_world_size),
        cmocka_unit_test(test_aliases_agreeing_or_not),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_memory_classes),
        cmocka_unit_test(test_files_and_json),
        cmocka_unit_test(test_nul_byte),
        cmocka_unit_test(test_model_ids_the_report_must_hold),
        cmocka_unit_test(test_builtin_llama_2_7b),
        cmocka_unit_test(test_builtin_llama_2_13b),
        cmocka_unit_test(test_builtin_llama_3_8b),
        cmocka_unit_test(test_builtin_llama_3_70b),
        cmocka_unit_test(test_builtin_mistral_7b),
        cmocka_unit_test(test_builtin_mixtral_8x7b),
        cmocka_unit_test(test_model_names_and_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
