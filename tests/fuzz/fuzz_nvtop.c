/* fuzz_nvtop.c - nvtop's JSON snapshot (`nvtop -s`) as the nvtop provider reads it
 * (collect/nvtop.c), then the JSON the daemon serves from the result. */
#include <jansson.h>

#include "base/json.h"
#include "collect/nvtop.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static gm_snapshot *s;
    if (!s)
        s = gm_snapshot_new();
    FUZZ_CHECK(s);
    gm_snapshot_reset(s);
    gm_error err = {0};
    if (gm_nvtop_parse((const char *)data, size, s, true, &err) == GM_OK) {
        FUZZ_CHECK(s->gpu_count <= GM_MAX_GPUS);
        for (unsigned i = 0; i < s->gpu_count; i++) {
            FUZZ_CHECK(s->gpus[i].index == i);
            FUZZ_CHECK(fuzz_terminated(s->gpus[i].name, sizeof s->gpus[i].name));
        }
        for (size_t p = 0; p < s->proc_count; p++)
            FUZZ_CHECK(s->procs[p].gpu_index < s->gpu_count);
        json_t *j = gm_json_snapshot(s);
        FUZZ_CHECK(j);
        json_decref(j);
    } else {
        FUZZ_CHECK(err.code == GM_EPARSE && err.msg[0]);
    }
    return 0;
}
