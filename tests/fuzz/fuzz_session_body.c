/* fuzz_session_body.c - the body of POST /api/sessions (gm_session_request_parse in
 * server/session_body.c) against a small fixed sample (GPUs 0, 1 and 3: a gap in the indexes) and
 * against a sample with no GPU, at the shortest and the default poll interval; then, as the
 * route does, the session made from an accepted request, with one sample added. Checks
 * what a valid request promises: known GPUs, ascending, no duplicates; an interval that is a
 * whole number of polls within the limit; a label without control characters. */
#include <math.h>

#include "core/session.h"
#include "server/session_body.h"
#include "fuzz.h"

static gm_snapshot *sample(unsigned ngpus)
{
    static const unsigned idx[] = {0, 1, 3};
    gm_snapshot *s = gm_snapshot_new();
    FUZZ_CHECK(s);
    s->time_ms = 1764115200000;
    s->mono_ms = 5000;
    snprintf(s->provider, sizeof s->provider, "sim");
    for (unsigned i = 0; i < ngpus; i++) {
        gm_gpu *g = &s->gpus[s->gpu_count++];
        g->index = idx[i];
        snprintf(g->name, sizeof g->name, "Simulated GPU %u", idx[i]);
        snprintf(g->uuid, sizeof g->uuid, "GPU-sim-%u", idx[i]);
        gm_gpu_set(g, GM_M_UTIL_GPU_PCT, 50);
        gm_gpu_set(g, GM_M_POWER_MW, 300000);
        gm_gpu_set(g, GM_M_MEM_USED_BYTES, 1 << 30);
    }
    return s;
}

static void check(const char *body, size_t len, const gm_snapshot *snap, unsigned poll_ms)
{
    gm_session_request r;
    gm_error err = {0};
    int rc = gm_session_request_parse(body, len, snap, poll_ms, &r, &err);
    if (memchr(body, '\0', len))
        FUZZ_CHECK(rc < 0); /* JSON text holds no NUL byte */
    if (rc < 0) {
        FUZZ_CHECK(rc == GM_EINVAL && err.msg[0] && fuzz_terminated(err.msg, sizeof err.msg));
        return;
    }
    FUZZ_CHECK(r.ngpus >= 1 && r.ngpus <= snap->gpu_count);
    for (size_t i = 0; i < r.ngpus; i++) {
        FUZZ_CHECK(gm_snapshot_gpu(snap, r.gpus[i]) != NULL);
        FUZZ_CHECK(i == 0 || r.gpus[i - 1] < r.gpus[i]);
    }
    double poll_s = poll_ms / 1000.0;
    FUZZ_CHECK(r.every >= 1 && fabs(r.interval_s - r.every * poll_s) < 1e-9);
    FUZZ_CHECK(r.interval_s <= GM_SESSION_INTERVAL_MAX + poll_s);
    if (r.has_label) {
        size_t n = strnlen(r.label, sizeof r.label);
        FUZZ_CHECK(n <= GM_SESSION_LABEL_MAX);
        for (size_t i = 0; i < n; i++)
            FUZZ_CHECK((unsigned char)r.label[i] >= 0x20 && r.label[i] != 0x7f);
    } else {
        FUZZ_CHECK(r.label[0] == '\0');
    }

    gm_session *s = NULL;
    FUZZ_CHECK(gm_session_new(r.has_label ? r.label : NULL, r.gpus, r.ngpus, r.interval_s, &s,
                              &err) == GM_OK);
    FUZZ_CHECK(gm_session_add(s, snap, &err) == GM_OK);
    gm_session_finish(s);
    json_t *doc = gm_session_to_json(s);
    FUZZ_CHECK(doc && json_object_get(doc, "gpu_stats"));
    json_decref(doc);
    gm_session_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static gm_snapshot *three, *none;
    if (!three) {
        three = sample(3);
        none = sample(0);
    }
    /* An exact-size copy: the body arrives with a length, not a NUL. */
    char *body = malloc(size ? size : 1);
    FUZZ_CHECK(body);
    memcpy(body, data, size);
    check(body, size, three, 1000);
    check(body, size, three, 100);
    check(body, size, none, 250);
    free(body);
    return 0;
}
