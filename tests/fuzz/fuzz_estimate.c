/* fuzz_estimate.c - task configs as `gpumon estimate` and `gpumon run --task` read them
 * (core/estimate.c): JSON text to GPU count and per-GPU memory, by both methods, then the JSON
 * report (--format json). Checks what the estimate promises: sizes from 1 to
 * GM_ESTIMATE_MAX_SIZE, gpus = tp x pp x max(dp, cp, dcp), a memory class for the seed method
 * (and for the model method when the model's size is unknown), else the sum of weights, KV
 * cache and overhead rounded up; a report whenever there is an estimate. The input's text also
 * goes to the model-size scanner on its own. A model path in the input may name a config.json
 * on this machine: the figures are checked for consistency, not for given values. */
#include <jansson.h>
#include <math.h>

#include "core/estimate.h"
#include "fuzz.h"

static void check(const uint8_t *data, size_t size, gm_estimate_method method)
{
    gm_estimate_options o;
    gm_estimate_options_init(&o);
    o.method = method;
    gm_estimate e;
    gm_error err = {0};
    int rc = gm_estimate_task_text_opt((const char *)data, size, "fuzz.json", &o, &e, &err);
    if (memchr(data, '\0', size))
        FUZZ_CHECK(rc < 0); /* JSON text holds no NUL byte */
    if (rc == GM_OK) {
        unsigned wide = 1;
        for (int p = 0; p < GM_PAR__COUNT; p++) {
            FUZZ_CHECK(e.size[p] >= 1 && e.size[p] <= GM_ESTIMATE_MAX_SIZE);
            FUZZ_CHECK(fuzz_terminated(e.key[p], sizeof e.key[p]));
            FUZZ_CHECK((e.key[p][0] != '\0') || e.size[p] == 1);
            if (p >= GM_PAR_DP && e.size[p] > wide)
                wide = e.size[p];
        }
        FUZZ_CHECK(e.gpus == (uint64_t)e.size[GM_PAR_TP] * e.size[GM_PAR_PP] * wide);
        if (e.method == GM_ESTIMATE_SEED) {
            FUZZ_CHECK(method == GM_ESTIMATE_SEED || e.mem.params == 0);
            FUZZ_CHECK(e.memory_mib == GM_ESTIMATE_MEM_LARGE_MIB ||
                       e.memory_mib == GM_ESTIMATE_MEM_MID_MIB ||
                       e.memory_mib == GM_ESTIMATE_MEM_BASE_MIB);
        } else {
            const gm_estimate_memory *m = &e.mem;
            FUZZ_CHECK(method == GM_ESTIMATE_MODEL && m->params > 0 && isfinite(m->params));
            FUZZ_CHECK(m->weight_bytes > 0 && m->kv_bytes > 0 && m->context && m->batch);
            FUZZ_CHECK(m->weights_mib >= 0 && m->kv_mib >= 0 && m->overhead_mib >= 0);
            double total = ceil(m->weights_mib + m->kv_mib + m->overhead_mib);
            FUZZ_CHECK(e.memory_mib == (total > 4e9 ? 4000000000u : (unsigned)total));
            FUZZ_CHECK(fuzz_terminated(m->dtype, sizeof m->dtype) &&
                       fuzz_terminated(m->kv_dtype, sizeof m->kv_dtype) &&
                       fuzz_terminated(m->config, sizeof m->config));
        }
        FUZZ_CHECK(e.memory_rule && fuzz_terminated(e.model, sizeof e.model));
        FUZZ_CHECK(!(e.model_params_b < 0));
        json_t *j = gm_estimate_json(&e);
        FUZZ_CHECK(j); /* the CLI would say "out of memory" */
        char *text = json_dumps(j, JSON_COMPACT);
        FUZZ_CHECK(text);
        free(text);
        json_decref(j);
    } else {
        FUZZ_CHECK((rc == GM_EPARSE || rc == GM_EINVAL) && err.msg[0] &&
                   fuzz_terminated(err.msg, sizeof err.msg));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check(data, size, GM_ESTIMATE_SEED);
    check(data, size, GM_ESTIMATE_MODEL);

    char *model = fuzz_cstr(data, size);
    double b = -1;
    const char *rule = NULL;
    unsigned mib = gm_estimate_memory_mib(model, &b, &rule);
    FUZZ_CHECK(rule && !(b < 0));
    FUZZ_CHECK(mib == (b >= 65  ? GM_ESTIMATE_MEM_LARGE_MIB
                       : b >= 7 ? GM_ESTIMATE_MEM_MID_MIB
                                : GM_ESTIMATE_MEM_BASE_MIB));
    free(model);
    return 0;
}
