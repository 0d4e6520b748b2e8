/* test_podres.c - collect/podres: the kubelet's pod-resources answer decoded (from bytes encoded
 * here by hand, with the fields a kubelet sends that gpumon does not read), GPU device IDs,
 * the tie from allocations to GPUs and processes, the gRPC call and the watcher against
 * tests/fakes/fake_kubelet.py (Google's grpcio and protobuf on a unix socket). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "collect/podres.h"

extern char **environ;

/* ---- a protobuf writer, just enough to build the messages by hand ------------------------- */

typedef struct pb {
    uint8_t b[4096];
    size_t n;
} pb;

static void pb_varint(pb *p, uint64_t v)
{
    do {
        check_lt(p->n, sizeof p->b);
        p->b[p->n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
}

static void pb_bytes(pb *p, unsigned field, const void *data, size_t len)
{
    pb_varint(p, (uint64_t)field << 3 | 2);
    pb_varint(p, len);
    check_le(p->n + len, sizeof p->b);
    memcpy(p->b + p->n, data, len);
    p->n += len;
}

static void pb_str(pb *p, unsigned field, const char *s)
{
    pb_bytes(p, field, s, strlen(s));
}

static void pb_msg(pb *p, unsigned field, const pb *m)
{
    pb_bytes(p, field, m->b, m->n);
}

/* ContainerDevices {resource_name = 1; device_ids = 2; topology = 3 {nodes = 1 {ID = 1}}} */
static void devices(pb *out, const char *resource, const char *const *ids, size_t n)
{
    pb d = {0}, topo = {0}, node = {0};
    pb_str(&d, 1, resource);
    for (size_t i = 0; i < n; i++)
        pb_str(&d, 2, ids[i]);
    pb_varint(&node, 1 << 3 | 0); /* ID = 1, varint */
    pb_varint(&node, 1);
    pb_msg(&topo, 1, &node);
    pb_msg(&d, 3, &topo);
    pb_msg(out, 2, &d);
}

/* ContainerResources {name = 1; devices = 2; cpu_ids = 3 (packed int64); memory = 4} */
static void container(pb *pod, const char *name, const pb *devs)
{
    pb c = {0}, mem = {0};
    pb_str(&c, 1, name);
    memcpy(c.b + c.n, devs->b, devs->n);
    c.n += devs->n;
    static const uint8_t cpu_ids[] = {2, 3, 0x80, 0x01}; /* 2, 3, 128 */
    pb_bytes(&c, 3, cpu_ids, sizeof cpu_ids);
    pb_str(&mem, 1, "memory");
    pb_varint(&mem, 2 << 3 | 0);
    pb_varint(&mem, 1073741824);
    pb_msg(&c, 4, &mem);
    pb_msg(pod, 3, &c);
}

/* PodResources {name = 1; namespace = 2; containers = 3}, plus a field of a later API version
 * (a fixed64 under number 9) that must be skipped. */
static void pod(pb *resp, const char *name, const char *ns, const pb *containers)
{
    pb p = {0};
    pb_str(&p, 1, name);
    pb_str(&p, 2, ns);
    memcpy(p.b + p.n, containers->b, containers->n);
    p.n += containers->n;
    pb_varint(&p, 9 << 3 | 1);
    for (int i = 0; i < 8; i++)
        p.b[p.n++] = (uint8_t)i;
    pb_msg(resp, 1, &p);
}

#define GPU0   "GPU-9e0c0000-0000-0000-0000-000000000000"
#define GPU1   "GPU-9e0c0000-0000-0000-0000-000000000001"
#define MIG_ID "MIG-5a2d0e2c-1c7e-5c4b-9c8e-0a6f8d5c2b11"

/* Two pods: trainer-0 (ns ml, container main) with GPU0 and a NIC; notebook (ns lab, container
 * jupyter) with two time-slicing replicas of GPU1 and a MIG device; a pod without devices. */
static void sample_response(pb *resp)
{
    memset(resp, 0, sizeof *resp);
    pb devs = {0}, conts = {0};
    devices(&devs, "nvidia.com/gpu", (const char *const[]){GPU0}, 1);
    devices(&devs, "example.com/nic", (const char *const[]){"eth7"}, 1);
    container(&conts, "main", &devs);
    pod(resp, "trainer-0", "ml", &conts);

    memset(&devs, 0, sizeof devs);
    memset(&conts, 0, sizeof conts);
    devices(&devs, "nvidia.com/gpu.shared", (const char *const[]){GPU1 "::0", GPU1 "::3"}, 2);
    devices(&devs, "nvidia.com/mig-1g.10gb", (const char *const[]){MIG_ID}, 1);
    container(&conts, "jupyter", &devs);
    pod(resp, "notebook", "lab", &conts);

    memset(&conts, 0, sizeof conts);
    pb none = {0};
    container(&conts, "sidecar", &none);
    pod(resp, "web-7d4b9c-x2x", "default", &conts);
}

static void test_resource_names(void **state)
{
    (void)state;
    assert_true(gm_podres_is_gpu_resource("nvidia.com/gpu"));
    assert_true(gm_podres_is_gpu_resource("nvidia.com/gpu.shared"));
    assert_true(gm_podres_is_gpu_resource("nvidia.com/mig-1g.10gb"));
    assert_true(gm_podres_is_gpu_resource("nvidia.com/mig-3g.40gb.shared"));
    assert_false(gm_podres_is_gpu_resource("nvidia.com/gpumem"));
    assert_false(gm_podres_is_gpu_resource("nvidia.com/mig-"));
    assert_false(gm_podres_is_gpu_resource("amd.com/gpu"));
    assert_false(gm_podres_is_gpu_resource("cpu"));
    assert_false(gm_podres_is_gpu_resource(""));
}

static void test_gpu_of(void **state)
{
    (void)state;
    char u[GM_UUID_LEN];
    gm_podres_gpu_of(GPU0, u, sizeof u);
    assert_string_equal(u, GPU0);
    gm_podres_gpu_of(GPU0 "::7", u, sizeof u); /* a time-slicing replica */
    assert_string_equal(u, GPU0);
    gm_podres_gpu_of("MIG-" GPU0 "/1/0", u, sizeof u); /* MIG before driver R470 */
    assert_string_equal(u, GPU0);
    gm_podres_gpu_of(MIG_ID, u, sizeof u); /* only the driver knows its GPU */
    assert_string_equal(u, "");
    gm_podres_gpu_of("nvidia0", u, sizeof u);
    assert_string_equal(u, "");
    gm_podres_gpu_of("GPU-", u, sizeof u);
    assert_string_equal(u, "");
    gm_podres_gpu_of(GPU0, u, 8); /* too long for the room: nothing rather than a cut UUID */
    assert_string_equal(u, "");
}

static void test_decode(void **state)
{
    (void)state;
    pb resp;
    sample_response(&resp);
    gm_podres_table t = {0};
    gm_error err = {0};
    assert_int_equal(gm_podres_decode(resp.b, resp.n, &t, &err), GM_OK);
    assert_int_equal(t.pods, 3);
    assert_int_equal(t.skipped, 0);
    assert_int_equal(t.n, 4); /* GPU0, two replicas of GPU1, the MIG device; not the NIC */
    assert_string_equal(t.allocs[0].device_id, GPU0);
    assert_string_equal(t.allocs[0].gpu_uuid, GPU0);
    assert_string_equal(t.allocs[0].ref.pod, "trainer-0");
    assert_string_equal(t.allocs[0].ref.pod_namespace, "ml");
    assert_string_equal(t.allocs[0].ref.container, "main");
    assert_string_equal(t.allocs[1].device_id, GPU1 "::0");
    assert_string_equal(t.allocs[1].gpu_uuid, GPU1);
    assert_string_equal(t.allocs[2].gpu_uuid, GPU1);
    assert_string_equal(t.allocs[3].device_id, MIG_ID);
    assert_string_equal(t.allocs[3].gpu_uuid, "");
    assert_string_equal(t.allocs[3].ref.container, "jupyter");

    /* An empty answer (no pods) is a valid message of zero bytes. */
    assert_int_equal(gm_podres_decode((const uint8_t *)"", 0, &t, &err), GM_OK);
    assert_int_equal(t.n, 0);
    assert_int_equal(t.pods, 0);

    /* Cut short anywhere inside: refused, never half read. */
    for (size_t cut = 1; cut < resp.n; cut += 7) {
        int rc = gm_podres_decode(resp.b, cut, &t, &err);
        if (rc != GM_OK && rc != GM_EPARSE)
            fail_msg("cut at %zu: %d", cut, rc);
    }
    assert_int_equal(gm_podres_decode(resp.b, resp.n - 1, &t, &err), GM_EPARSE);
    assert_non_null(strstr(err.msg, "ListPodResourcesResponse"));
    static const uint8_t garbage[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01};
    assert_int_equal(gm_podres_decode(garbage, sizeof garbage, &t, &err), GM_EPARSE);
    gm_podres_table_free(&t);
}

/* Names Kubernetes cannot have given are left out, not shown. */
static void test_decode_rejects_odd_names(void **state)
{
    (void)state;
    static const struct {
        const char *pod, *ns, *container, *id;
    } bad[] = {
        {"Trainer", "ml", "main", GPU0},         /* upper case */
        {"trainer\"} 1\nx", "ml", "main", GPU0}, /* would break a label */
        {"trainer", "m.l", "main", GPU0},        /* a dot in a DNS label */
        {"trainer", "ml", "", GPU0},             /* no container name */
        {"trainer", "ml", "main", "GPU-\"x"},    /* a quote in the ID */
        {"trainer", "ml", "main", ""},           /* no ID */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pb resp = {0}, devs = {0}, conts = {0};
        devices(&devs, "nvidia.com/gpu", (const char *const[]){bad[i].id}, 1);
        container(&conts, bad[i].container, &devs);
        pod(&resp, bad[i].pod, bad[i].ns, &conts);
        gm_podres_table t = {0};
        assert_int_equal(gm_podres_decode(resp.b, resp.n, &t, NULL), GM_OK);
        if (t.n != 0 || t.skipped != 1)
            fail_msg("case %zu: %zu kept, %zu skipped", i, t.n, t.skipped);
        gm_podres_table_free(&t);
    }
    /* A pod name may have dots (a DNS subdomain), up to 253 bytes. */
    char longname[254];
    memset(longname, 'a', 253);
    longname[253] = '\0';
    longname[10] = '.';
    pb resp = {0}, devs = {0}, conts = {0};
    devices(&devs, "nvidia.com/gpu", (const char *const[]){GPU0}, 1);
    container(&conts, "main", &devs);
    pod(&resp, longname, "ml", &conts);
    gm_podres_table t = {0};
    assert_int_equal(gm_podres_decode(resp.b, resp.n, &t, NULL), GM_OK);
    assert_int_equal(t.n, 1);
    assert_string_equal(t.allocs[0].ref.pod, longname);
    gm_podres_table_free(&t);
}

/* ---- attribution ---------------------------------------------------------------------------- */

#define UID_A "0e886e9a-3879-45f9-b44d-86ef9df03224"
#define UID_B "15513b48-e7a5-48fc-b9e3-92f713f36504"
#define UID_C "a2830d0d-b0f0-4ff0-81b5-0ee4e299cf80"
#define CID_1 "a51a9f7d073f848e7fc59e56e8f11524f330a2175a4ed26327da2dfe0d28015f"
#define CID_2 "09bc3d7ade839efec32b6bec4ec79d099027a668ddba043083ec21d3c3b8f1e6"
#define CID_3 "244a65edefdffe31685c42317c9054e71dc1193048cf9459e2a4dd35cbc1dba4"

static void add_gpu(gm_snapshot *s, const char *uuid)
{
    gm_gpu *g = &s->gpus[s->gpu_count];
    g->index = s->gpu_count++;
    snprintf(g->uuid, sizeof g->uuid, "%s", uuid);
}

static gm_process *add_proc(gm_snapshot *s, unsigned gpu, uint32_t pid, const char *uid,
                            const char *cid)
{
    gm_process p = {.gpu_index = gpu, .pid = pid, .type = GM_PROC_COMPUTE};
    snprintf(p.pod_uid, sizeof p.pod_uid, "%s", uid);
    snprintf(p.container_id, sizeof p.container_id, "%s", cid);
    assert_true(gm_snapshot_add_process(s, &p));
    return &s->procs[s->proc_count - 1];
}

static void add_alloc(gm_podres_table *t, const char *id, const char *podname, const char *ns,
                      const char *cont)
{
    check_lt(t->n, t->cap);
    gm_podres_alloc *a = &t->allocs[t->n++];
    memset(a, 0, sizeof *a);
    snprintf(a->device_id, sizeof a->device_id, "%s", id);
    gm_podres_gpu_of(id, a->gpu_uuid, sizeof a->gpu_uuid);
    snprintf(a->ref.pod, sizeof a->ref.pod, "%s", podname);
    snprintf(a->ref.pod_namespace, sizeof a->ref.pod_namespace, "%s", ns);
    snprintf(a->ref.container, sizeof a->ref.container, "%s", cont);
}

static void expect_names(const gm_k8s_ref *r, const char *podname, const char *ns, const char *cont,
                         const char *what)
{
    if (strcmp(r->pod, podname) || strcmp(r->pod_namespace, ns) || strcmp(r->container, cont))
        fail_msg("%s: got %s/%s/%s, want %s/%s/%s", what, r->pod_namespace, r->pod, r->container,
                 ns, podname, cont);
}

static void test_attribute(void **state)
{
    (void)state;
    gm_snapshot *s = gm_snapshot_new();
    assert_non_null(s);
    gm_podres_alloc room[16];
    gm_podres_table t = {.allocs = room, .cap = 16};

    /* GPU0: trainer-0/main alone, two processes of its container and a host process.
     * GPU1: not allocated, but trainer-0/main's process runs there too (it sees every GPU).
     * GPU2: two replicas for two notebooks' containers: shared.
     * GPU3: two replicas for the same container: one holder.
     * GPU4: held by one container but used by two pods: it tells nothing. */
    for (int i = 0; i < 5; i++) {
        char u[64];
        snprintf(u, sizeof u, "GPU-9e0c0000-0000-0000-0000-00000000000%d", i);
        add_gpu(s, u);
    }
    add_alloc(&t, "GPU-9e0c0000-0000-0000-0000-000000000000", "trainer-0", "ml", "main");
    add_alloc(&t, "GPU-9e0c0000-0000-0000-0000-000000000002::0", "nb-a", "lab", "jupyter");
    add_alloc(&t, "GPU-9e0c0000-0000-0000-0000-000000000002::1", "nb-b", "lab", "jupyter");
    add_alloc(&t, "GPU-9e0c0000-0000-0000-0000-000000000003::0", "nb-c", "lab", "jupyter");
    add_alloc(&t, "GPU-9e0c0000-0000-0000-0000-000000000003::1", "nb-c", "lab", "jupyter");
    add_alloc(&t, "GPU-9e0c0000-0000-0000-0000-000000000004", "infer", "serve", "vllm");

    gm_process *p0 = add_proc(s, 0, 100, UID_A, CID_1);
    gm_process *p0b = add_proc(s, 0, 101, UID_A, CID_1);
    gm_process *host = add_proc(s, 0, 102, "", "");
    gm_process *p1 = add_proc(s, 1, 100, UID_A, CID_1);
    gm_process *p2a = add_proc(s, 2, 200, UID_B, CID_2);
    gm_process *p4a = add_proc(s, 4, 300, UID_C, CID_3);
    gm_process *p4b = add_proc(s, 4, 301, UID_B, CID_2);

    gm_podres_attribute(&t, true, s);
    unsigned want_containers[] = {1, 0, 2, 1, 1};
    for (int i = 0; i < 5; i++) {
        assert_true(s->gpus[i].k8s_known);
        assert_int_equal(s->gpus[i].k8s_containers, want_containers[i]);
    }
    expect_names(&s->gpus[0].k8s, "trainer-0", "ml", "main", "GPU0");
    expect_names(&s->gpus[1].k8s, "", "", "", "GPU1 (not allocated)");
    expect_names(&s->gpus[2].k8s, "", "", "", "GPU2 (two holders)");
    expect_names(&s->gpus[3].k8s, "nb-c", "lab", "jupyter", "GPU3 (two replicas, one holder)");
    expect_names(&s->gpus[4].k8s, "infer", "serve", "vllm", "GPU4");

    expect_names(&p0->k8s, "trainer-0", "ml", "main", "pid 100 on GPU0");
    expect_names(&p0b->k8s, "trainer-0", "ml", "main", "pid 101 on GPU0");
    expect_names(&host->k8s, "", "", "", "a host process on an allocated GPU");
    expect_names(&p1->k8s, "trainer-0", "ml", "main", "pid 100 on the unallocated GPU1");
    expect_names(&p2a->k8s, "", "", "", "a process on a shared GPU");
    expect_names(&p4a->k8s, "", "", "", "pod C on GPU4 beside pod B");
    expect_names(&p4b->k8s, "", "", "", "pod B on GPU4 beside pod C");

    /* An allocation no GPU here matches (an unplaced MIG device, another plugin's IDs): the
     * GPUs nobody seems to hold may be its, so they are not known; the others are. */
    gm_snapshot_reset(s);
    for (int i = 0; i < 2; i++) {
        char u[64];
        snprintf(u, sizeof u, "GPU-9e0c0000-0000-0000-0000-00000000000%d", i);
        add_gpu(s, u);
    }
    t.n = 1; /* trainer-0 on GPU0 */
    add_alloc(&t, MIG_ID, "other", "lab", "x");
    gm_podres_attribute(&t, true, s);
    assert_true(s->gpus[0].k8s_known);
    assert_int_equal(s->gpus[0].k8s_containers, 1);
    assert_false(s->gpus[1].k8s_known);
    t.n = 1;
    add_alloc(&t, "nvidia1", "gke", "lab", "x");
    gm_podres_attribute(&t, true, s);
    assert_false(s->gpus[1].k8s_known);

    /* Not known (no answer yet, or too old): nothing is written. */
    gm_snapshot_reset(s);
    add_gpu(s, "GPU-9e0c0000-0000-0000-0000-000000000000");
    p0 = add_proc(s, 0, 100, UID_A, CID_1);
    gm_podres_attribute(&t, false, s);
    assert_false(s->gpus[0].k8s_known);
    expect_names(&s->gpus[0].k8s, "", "", "", "unknown");
    expect_names(&p0->k8s, "", "", "", "unknown");
    gm_snapshot_free(s);
}

/* One pod on one GPU with two containers: the pod is known, the container is not. Two GPUs
 * that tie one pod UID to two pods: neither name is given. */
static void test_attribute_doubt(void **state)
{
    (void)state;
    gm_snapshot *s = gm_snapshot_new();
    assert_non_null(s);
    gm_podres_alloc room[8];
    gm_podres_table t = {.allocs = room, .cap = 8};
    add_gpu(s, GPU0);
    add_gpu(s, GPU1);
    add_gpu(s, "GPU-9e0c0000-0000-0000-0000-000000000002");
    add_alloc(&t, GPU0, "trainer-0", "ml", "main");
    add_alloc(&t, GPU1, "trainer-1", "ml", "main");
    add_alloc(&t, "GPU-9e0c0000-0000-0000-0000-000000000002", "solo", "ml", "main");
    gm_process *a = add_proc(s, 0, 100, UID_A, CID_1);
    gm_process *b = add_proc(s, 0, 101, UID_A, CID_2); /* a sidecar of the same pod */
    gm_process *c = add_proc(s, 1, 102, UID_B, CID_3);
    gm_process *d = add_proc(s, 2, 103, UID_B, CID_3); /* pod B seen as two pods */
    gm_podres_attribute(&t, true, s);
    expect_names(&a->k8s, "trainer-0", "ml", "", "main's process beside a sidecar");
    expect_names(&b->k8s, "trainer-0", "ml", "", "the sidecar");
    expect_names(&c->k8s, "", "", "", "a pod UID tied to two pods");
    expect_names(&d->k8s, "", "", "", "a pod UID tied to two pods");
    gm_snapshot_free(s);
}

/* ---- the fake kubelet ------------------------------------------------------------------------ */

typedef struct kubelet {
    char dir[64];
    char sock[128];
    char alloc[128];
    pid_t pid;
} kubelet;

static void write_file(const char *path, const char *text)
{
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(rename(tmp, path), 0);
}

static const char *alloc_one =
    "{\"pods\": [{\"name\": \"trainer-0\", \"namespace\": \"ml\", \"containers\": [{\"name\": "
    "\"main\", \"devices\": [{\"resource_name\": \"nvidia.com/gpu\", \"device_ids\": "
    "[\"" GPU0 "\"]}], \"cpu_ids\": [2, 3], \"memory\": 1024}]}, {\"name\": \"web\", "
    "\"namespace\": \"default\", \"containers\": [{\"name\": \"nginx\"}]}]}";

static void kubelet_start(kubelet *k, const char *allocations)
{
    snprintf(k->dir, sizeof k->dir, "/tmp/gm_podres_XXXXXX");
    assert_non_null(mkdtemp(k->dir));
    snprintf(k->sock, sizeof k->sock, "%s/kubelet.sock", k->dir);
    snprintf(k->alloc, sizeof k->alloc, "%s/alloc.json", k->dir);
    char ready[128], script[1024];
    snprintf(ready, sizeof ready, "%s/ready", k->dir);
    const char *src = getenv("GM_SOURCE_DIR");
    snprintf(script, sizeof script, "%s/tests/fakes/fake_kubelet.py", src ? src : "../..");
    write_file(k->alloc, allocations);
    char *argv[] = {"/usr/bin/python3", script,         "--socket", k->sock, "--allocations",
                    k->alloc,           "--ready-file", ready,      NULL};
    assert_int_equal(posix_spawn(&k->pid, argv[0], NULL, NULL, argv, environ), 0);
    for (int i = 0; i < 300 && access(ready, F_OK) != 0; i++) {
        int status;
        if (waitpid(k->pid, &status, WNOHANG) == k->pid)
            fail_msg("fake_kubelet.py exited (python3-grpcio and python3-protobuf are needed: "
                     "scripts/install-deps.sh test)");
        usleep(50000);
    }
    assert_int_equal(access(ready, F_OK), 0);
    unlink(ready);
}

static void kubelet_kill(kubelet *k)
{
    if (k->pid > 0) {
        kill(k->pid, SIGTERM);
        waitpid(k->pid, NULL, 0);
        k->pid = 0;
    }
}

static void kubelet_stop(kubelet *k)
{
    kubelet_kill(k);
    unlink(k->sock);
    unlink(k->alloc);
    rmdir(k->dir);
}

static void test_list(void **state)
{
    (void)state;
    kubelet k;
    kubelet_start(&k, alloc_one);
    gm_podres_table t = {0};
    gm_error err = {0};
    assert_int_equal(gm_podres_list(k.sock, 5000, NULL, &t, &err), GM_OK);
    assert_int_equal(t.pods, 2);
    assert_int_equal(t.n, 1);
    assert_string_equal(t.allocs[0].gpu_uuid, GPU0);
    assert_string_equal(t.allocs[0].ref.pod, "trainer-0");
    assert_string_equal(t.allocs[0].ref.pod_namespace, "ml");
    assert_string_equal(t.allocs[0].ref.container, "main");

    /* An error the service answers: its gRPC code and message. */
    write_file(k.alloc, "{\"grpc_status\": 14, \"grpc_message\": \"kubelet is shutting down\"}");
    assert_int_equal(gm_podres_list(k.sock, 5000, NULL, &t, &err), GM_EIO);
    assert_non_null(strstr(err.msg, "UNAVAILABLE"));
    assert_non_null(strstr(err.msg, "kubelet is shutting down"));
    assert_int_equal(t.n, 0);

    /* An answer that comes too late. */
    write_file(k.alloc, "{\"delay_s\": 3}");
    int64_t t0 = gm_clock_mono_ms();
    assert_int_equal(gm_podres_list(k.sock, 300, NULL, &t, &err), GM_ETIMEDOUT);
    check_lt(gm_clock_mono_ms() - t0, 2500);

    /* Nobody listening on the socket any more. */
    kubelet_kill(&k);
    int rc = gm_podres_list(k.sock, 2000, NULL, &t, &err);
    if (rc != GM_EIO && rc != GM_ENOENT) /* grpc may unlink its socket when it stops */
        fail_msg("%d: %s", rc, err.msg);
    kubelet_stop(&k);

    assert_int_equal(gm_podres_list("/nonexistent/kubelet.sock", 1000, NULL, &t, &err), GM_ENOENT);
    assert_int_equal(gm_podres_list("/etc/hostname", 1000, NULL, &t, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "not a socket"));
    gm_podres_table_free(&t);
}

/* A socket that is bound but never accepts: refused at once. */
static void test_list_refused(void **state)
{
    (void)state;
    char path[] = "/tmp/gm_podres_refused.sock";
    unlink(path);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    check_ge(fd, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    gm_podres_table t = {0};
    gm_error err = {0};
    assert_int_equal(gm_podres_list(path, 2000, NULL, &t, &err), GM_EIO);
    assert_non_null(strstr(err.msg, "refused"));
    close(fd);
    unlink(path);
}

static bool wait_take(gm_podres_watch *w, uint64_t *gen, gm_podres_table *t, bool want_known,
                      size_t want_n, int timeout_ms)
{
    int64_t end = gm_clock_mono_ms() + timeout_ms;
    while (gm_clock_mono_ms() < end) {
        bool known;
        gm_podres_watch_take(w, gen, t, &known);
        if (known == want_known && t->n == want_n)
            return true;
        usleep(20000);
    }
    return false;
}

static void test_watch(void **state)
{
    (void)state;
    kubelet k;
    kubelet_start(&k, alloc_one);
    gm_podres_watch *w;
    gm_error err = {0};
    assert_int_equal(gm_podres_watch_start(k.sock, 200, &w, &err), GM_OK);
    uint64_t gen = 0;
    gm_podres_table t = {0};
    assert_true(wait_take(w, &gen, &t, true, 1, 5000));
    gm_k8s_status st;
    gm_podres_watch_status(w, &st);
    assert_int_equal(st.state, GM_K8S_OK);
    assert_int_equal(st.pods, 2);
    assert_int_equal(st.gpu_devices, 1);
    assert_string_equal(st.socket, k.sock);
    uint64_t changes = st.changes;

    /* A second pod gets a GPU: seen at the next refresh. */
    write_file(k.alloc, "{\"pods\": [{\"name\": \"a\", \"namespace\": \"n\", \"containers\": "
                        "[{\"name\": \"c\", \"devices\": [{\"resource_name\": \"nvidia.com/gpu\","
                        " \"device_ids\": [\"" GPU0 "\", \"" GPU1 "\"]}]}]}]}");
    assert_true(wait_take(w, &gen, &t, true, 2, 5000));

    /* The kubelet fails: the last answer stays for three periods, then goes. */
    write_file(k.alloc, "{\"grpc_status\": 14}");
    assert_true(wait_take(w, &gen, &t, false, 0, 5000));
    gm_podres_watch_status(w, &st);
    assert_int_equal(st.state, GM_K8S_FAILED);
    assert_non_null(strstr(st.message, "UNAVAILABLE"));
    check_gt(st.changes, changes);
    changes = st.changes;
    usleep(600000); /* the same failure again and again: no new change */
    gm_podres_watch_status(w, &st);
    assert_int_equal(st.changes, changes);

    /* It answers again. */
    write_file(k.alloc, alloc_one);
    assert_true(wait_take(w, &gen, &t, true, 1, 5000));

    /* Stopping does not wait for a slow answer. */
    write_file(k.alloc, "{\"delay_s\": 10}");
    usleep(300000);
    int64_t t0 = gm_clock_mono_ms();
    gm_podres_watch_stop(w);
    check_lt(gm_clock_mono_ms() - t0, 2500);
    gm_podres_table_free(&t);
    kubelet_stop(&k);
}

/* A nudge refreshes long before the period; an answer like the last one is no news. */
static void test_watch_nudge(void **state)
{
    (void)state;
    kubelet k;
    kubelet_start(&k, alloc_one);
    gm_podres_watch *w;
    assert_int_equal(gm_podres_watch_start(k.sock, 600000, &w, NULL), GM_OK);
    uint64_t gen = 0;
    gm_podres_table t = {0};
    assert_true(wait_take(w, &gen, &t, true, 1, 5000));
    uint64_t first = gen;
    /* The same allocations again: no new table. */
    gm_podres_watch_nudge(w);
    usleep(1500000);
    bool known;
    assert_false(gm_podres_watch_take(w, &gen, &t, &known));
    assert_int_equal(gen, first);
    /* New allocations, then a nudge: seen within seconds, not the ten-minute period. */
    write_file(k.alloc, "{\"pods\": []}");
    gm_podres_watch_nudge(w);
    assert_true(wait_take(w, &gen, &t, true, 0, 5000));
    check_ne(gen, first);
    gm_podres_watch_stop(w);
    gm_podres_table_free(&t);
    kubelet_stop(&k);
}

/* A node without a kubelet: the watcher waits for the socket to appear. */
static void test_watch_no_socket(void **state)
{
    (void)state;
    gm_podres_watch *w;
    assert_int_equal(gm_podres_watch_start("/nonexistent/kubelet.sock", 100, &w, NULL), GM_OK);
    gm_k8s_status st = {0};
    for (int i = 0; i < 200 && st.state != GM_K8S_NO_SOCKET; i++) {
        usleep(10000);
        gm_podres_watch_status(w, &st);
    }
    assert_int_equal(st.state, GM_K8S_NO_SOCKET);
    uint64_t gen = 0;
    gm_podres_table t = {0};
    bool known = true;
    assert_false(gm_podres_watch_take(w, &gen, &t, &known));
    assert_false(known);
    gm_podres_watch_nudge(w);
    gm_podres_watch_stop(w);
    assert_int_equal(gm_podres_watch_start("", 100, &w, NULL), GM_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resource_names),
        cmocka_unit_test(test_gpu_of),
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_decode_rejects_odd_names),
        cmocka_unit_test(test_attribute),
        cmocka_unit_test(test_attribute_doubt),
        cmocka_unit_test(test_list),
        cmocka_unit_test(test_list_refused),
        cmocka_unit_test(test_watch),
        cmocka_unit_test(test_watch_nudge),
        cmocka_unit_test(test_watch_no_socket),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
