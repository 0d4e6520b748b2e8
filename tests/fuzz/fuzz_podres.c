/* fuzz_podres.c - the kubelet's pod-resources answer (collect/podres.c): protobuf-c's decoding
 * and what gpumon keeps of it. Checks, for any bytes: the answer is decoded or refused as
 * GM_EPARSE, nothing else; every kept allocation has a terminated device ID of printable ASCII
 * without quotes or backslashes, names that obey Kubernetes' rules (lower-case letters, digits,
 * '-', and '.' in a pod's), and a GPU UUID that is empty or a prefix of what its ID names; and
 * the tie to a snapshot never names a GPU or process with something the answer did not hold. */
#include "collect/podres.h"
#include "fuzz.h"

static void check_name(const char *s, size_t cap, bool dots)
{
    FUZZ_CHECK(fuzz_terminated(s, cap));
    size_t n = strlen(s);
    FUZZ_CHECK(n > 0);
    for (size_t i = 0; i < n; i++)
        FUZZ_CHECK((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
                   (dots && s[i] == '.'));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gm_podres_table t = {0};
    gm_error err = {0};
    int rc = gm_podres_decode(data, size, &t, &err);
    FUZZ_CHECK(rc == GM_OK || rc == GM_EPARSE);
    if (rc != GM_OK) {
        FUZZ_CHECK(t.n == 0);
        gm_podres_table_free(&t);
        return 0;
    }
    FUZZ_CHECK(t.n <= GM_PODRES_MAX_ALLOCS);
    for (size_t i = 0; i < t.n; i++) {
        const gm_podres_alloc *a = &t.allocs[i];
        FUZZ_CHECK(fuzz_terminated(a->device_id, sizeof a->device_id));
        for (const char *p = a->device_id; *p; p++)
            FUZZ_CHECK(*p > ' ' && *p <= '~' && *p != '"' && *p != '\\');
        FUZZ_CHECK(fuzz_terminated(a->gpu_uuid, sizeof a->gpu_uuid));
        if (a->gpu_uuid[0])
            FUZZ_CHECK(strncmp(a->gpu_uuid, "GPU-", 4) == 0 &&
                       strstr(a->device_id, a->gpu_uuid) != NULL);
        check_name(a->ref.pod, sizeof a->ref.pod, true);
        check_name(a->ref.pod_namespace, sizeof a->ref.pod_namespace, false);
        check_name(a->ref.container, sizeof a->ref.container, false);
    }

    /* Tie it to a snapshot whose GPUs are the first allocations' and whose processes sit in
     * pods: every name given is one the answer held. */
    gm_snapshot *s = gm_snapshot_new();
    FUZZ_CHECK(s != NULL);
    for (size_t i = 0; i < t.n && s->gpu_count < 4; i++) {
        gm_gpu *g = &s->gpus[s->gpu_count];
        g->index = s->gpu_count++;
        snprintf(g->uuid, sizeof g->uuid, "%s", t.allocs[i].gpu_uuid);
        gm_process p = {.gpu_index = g->index, .pid = (uint32_t)i + 1};
        snprintf(p.pod_uid, sizeof p.pod_uid, "0e886e9a-3879-45f9-b44d-86ef9df0322%u",
                 (unsigned)(i % 2));
        snprintf(p.container_id, sizeof p.container_id, "%064x", (unsigned)i);
        gm_snapshot_add_process(s, &p);
    }
    gm_podres_attribute(&t, true, s);
    for (unsigned i = 0; i < s->gpu_count; i++) {
        const gm_gpu *g = &s->gpus[i];
        FUZZ_CHECK(g->k8s_containers <= t.n);
        FUZZ_CHECK(!g->k8s.pod[0] || g->k8s_containers == 1);
    }
    for (size_t k = 0; k < s->proc_count; k++) {
        const gm_k8s_ref *r = &s->procs[k].k8s;
        bool held = !r->pod[0];
        for (size_t i = 0; i < t.n && !held; i++)
            held = strcmp(t.allocs[i].ref.pod, r->pod) == 0 &&
                   strcmp(t.allocs[i].ref.pod_namespace, r->pod_namespace) == 0;
        FUZZ_CHECK(held);
    }
    gm_snapshot_free(s);
    gm_podres_table_free(&t);
    return 0;
}
