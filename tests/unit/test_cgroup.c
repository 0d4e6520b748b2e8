/* test_cgroup.c - collect/cgroup: pod UID and container ID from /proc/<pid>/cgroup. The files
 * below are real ones, collected from public sources (named with each case): the test data of
 * projects that parse the same files on real clusters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect/cgroup.h"

typedef struct cgroup_case {
    const char *what;
    const char *text;
    const char *pod_uid;      /* expected; "" for none */
    const char *container_id; /* expected; "" for none */
} cgroup_case;

/* Kubernetes, cgroup v1: every controller names the same cgroup. */
static const cgroup_case v1_cases[] = {
    {"spiffe/spire systemd_cgroups_pid_in_pod.txt: systemd driver, Docker, a dashed UID in the "
     "slice (kubelet before 1.10)",
     "11:hugetlb:/kubepods.slice/kubepods-burstable.slice/"
     "kubepods-burstable-pod2c48913c-b29f-11e7-9350-020968147796.slice/"
     "docker-9bca8d63d5fa610783847915bcff0ecac1273e5b4bed3f6fa1b07350e0135961.scope\n"
     "10:devices:/kubepods.slice/kubepods-burstable.slice/"
     "kubepods-burstable-pod2c48913c-b29f-11e7-9350-020968147796.slice/"
     "docker-9bca8d63d5fa610783847915bcff0ecac1273e5b4bed3f6fa1b07350e0135961.scope\n"
     "1:name=systemd:/kubepods.slice/kubepods-burstable.slice/"
     "kubepods-burstable-pod2c48913c-b29f-11e7-9350-020968147796.slice/"
     "docker-9bca8d63d5fa610783847915bcff0ecac1273e5b4bed3f6fa1b07350e0135961.scope\n",
     "2c48913c-b29f-11e7-9350-020968147796",
     "9bca8d63d5fa610783847915bcff0ecac1273e5b4bed3f6fa1b07350e0135961"},
    {"spiffe/spire systemd_crio_cgroups_pid_in_pod.txt: systemd driver, CRI-O, hybrid: the v2 "
     "line is CRI-O's service, the v1 lines the container",
     "12:hugetlb:/kubepods.slice/kubepods-besteffort.slice/"
     "kubepods-besteffort-poda2830d0d_b0f0_4ff0_81b5_0ee4e299cf80.slice/"
     "crio-09bc3d7ade839efec32b6bec4ec79d099027a668ddba043083ec21d3c3b8f1e6.scope\n"
     "3:rdma:/\n"
     "1:systemd:/kubepods.slice/kubepods-besteffort.slice/"
     "kubepods-besteffort-poda2830d0d_b0f0_4ff0_81b5_0ee4e299cf80.slice/"
     "crio-09bc3d7ade839efec32b6bec4ec79d099027a668ddba043083ec21d3c3b8f1e6.scope\n"
     "0::/system.slice/crio.service\n",
     "a2830d0d-b0f0-4ff0-81b5-0ee4e299cf80",
     "09bc3d7ade839efec32b6bec4ec79d099027a668ddba043083ec21d3c3b8f1e6"},
    {"spiffe/spire cgroups_pid_in_kind_pod.txt: kind (a node in a Docker container), cgroupfs "
     "driver; the node's own container ID comes first in the path and in the v2 line",
     "13:name=systemd:/docker/93529524695bb00d91c1f6dba692ea8d3550c3b94fb2463af7bc9ec82f992d26/"
     "kubepods/besteffort/poda2830d0d-b0f0-4ff0-81b5-0ee4e299cf80/"
     "09bc3d7ade839efec32b6bec4ec79d099027a668ddba043083ec21d3c3b8f1e6\n"
     "12:pids:/docker/93529524695bb00d91c1f6dba692ea8d3550c3b94fb2463af7bc9ec82f992d26/"
     "kubepods/besteffort/poda2830d0d-b0f0-4ff0-81b5-0ee4e299cf80/"
     "09bc3d7ade839efec32b6bec4ec79d099027a668ddba043083ec21d3c3b8f1e6\n"
     "0::/docker/93529524695bb00d91c1f6dba692ea8d3550c3b94fb2463af7bc9ec82f992d26/system.slice/"
     "containerd.service\n",
     "a2830d0d-b0f0-4ff0-81b5-0ee4e299cf80",
     "09bc3d7ade839efec32b6bec4ec79d099027a668ddba043083ec21d3c3b8f1e6"},
    {"DataDog/datadog-agent pkg/util/cgroups/pid_mapper_test.go (dindProcCgroup): Docker in "
     "Docker with a kubelet --cgroup-root",
     "14:name=systemd:/docker/88ea268ece65a02d68b169fd74bcbcb427eb7f28900db0e3b906fb2eeb7341df/"
     "kubelet/kubepods/burstable/poda5ea884f-9e60-4912-bd62-fef9a31db47a/"
     "a51a9f7d073f848e7fc59e56e8f11524f330a2175a4ed26327da2dfe0d28015e\n"
     "13:rdma:/\n"
     "0::/docker/88ea268ece65a02d68b169fd74bcbcb427eb7f28900db0e3b906fb2eeb7341df/system.slice/"
     "containerd.service",
     "a5ea884f-9e60-4912-bd62-fef9a31db47a",
     "a51a9f7d073f848e7fc59e56e8f11524f330a2175a4ed26327da2dfe0d28015e"},
    {"DataDog/datadog-agent pid_mapper_test.go (cgroupV1ProcCgroupWithColons): systemd's "
     "slice:prefix:id notation left as the cgroup name (runtime and kubelet drivers disagree)",
     "13:misc:/kubepods-burstable-pod5be537b8_3a4e_4607_af71_31598b3a4fd3.slice:cri-containerd:"
     "1c8f503430973935b7d8a80c4f58c0946b052a021e6855b358e5ec38601af120\n"
     "10:pids:/kuberuntime.slice/containerd.service/"
     "kubepods-burstable-pod5be537b8_3a4e_4607_af71_31598b3a4fd3.slice:cri-containerd:"
     "1c8f503430973935b7d8a80c4f58c0946b052a021e6855b358e5ec38601af120\n"
     "0::/\n",
     "5be537b8-3a4e-4607-af71-31598b3a4fd3",
     "1c8f503430973935b7d8a80c4f58c0946b052a021e6855b358e5ec38601af120"},
    {"elastic APM agents' cgroup tests: cgroupfs, a container ID in UUID form",
     "1:name=systemd:/kubepods/besteffort/pode9b90526-f47d-11e8-b2a5-080027b9f4fb/"
     "15aa6e53-b09a-40c7-8558-c6c31e36c88a",
     "e9b90526-f47d-11e8-b2a5-080027b9f4fb", "15aa6e53-b09a-40c7-8558-c6c31e36c88a"},
    {"elastic APM agents' cgroup tests: kubepods twice in the path",
     "12:pids:/kubepods/kubepods/besteffort/pod0e886e9a-3879-45f9-b44d-86ef9df03224/"
     "244a65edefdffe31685c42317c9054e71dc1193048cf9459e2a4dd35cbc1dba4",
     "0e886e9a-3879-45f9-b44d-86ef9df03224",
     "244a65edefdffe31685c42317c9054e71dc1193048cf9459e2a4dd35cbc1dba4"},
    {"elastic APM agents' cgroup tests: OpenShift, a Guaranteed pod (no QoS slice) under systemd",
     "9:freezer:/kubepods.slice/kubepods-pod22949dce_fd8b_11ea_8ede_98f2b32c645c.slice/"
     "docker-b15a5bdedd2e7645c3be271364324321b908314e4c77857bbfd32a041148c07f.scope",
     "22949dce-fd8b-11ea-8ede-98f2b32c645c",
     "b15a5bdedd2e7645c3be271364324321b908314e4c77857bbfd32a041148c07f"},
    {"grafana/pyroscope ebpf/sd/target_test.go: systemd driver, containerd, v1 cpuset line",
     "12:cpuset:/kubepods.slice/kubepods-burstable.slice/"
     "kubepods-burstable-pod471203d1_984f_477e_9c35_db96487ffe5e.slice/"
     "cri-containerd-a534eb629135e43beb13213976e37bb2ab95cba4c0d1d0b4e27c6bc4d8091b83.scope",
     "471203d1-984f-477e-9c35-db96487ffe5e",
     "a534eb629135e43beb13213976e37bb2ab95cba4c0d1d0b4e27c6bc4d8091b83"},
    {"grafana/pyroscope ebpf/sd/target_test.go: cgroupfs driver, Docker",
     "11:devices:/kubepods/besteffort/pod85adbef3-622f-4ef2-8f60-a8bdf3eb6c72/"
     "7edda1de1e0d1d366351e478359cf5fa16bb8ab53063a99bb119e56971bfb7e2",
     "85adbef3-622f-4ef2-8f60-a8bdf3eb6c72",
     "7edda1de1e0d1d366351e478359cf5fa16bb8ab53063a99bb119e56971bfb7e2"},
};

/* Kubernetes, cgroup v2: one line, maybe seen from another cgroup namespace. */
static const cgroup_case v2_cases[] = {
    {"grafana/pyroscope ebpf/sd/target_test.go: systemd driver, CRI-O",
     "0::/kubepods.slice/kubepods-burstable.slice/"
     "kubepods-burstable-podb57320a0_e7eb_4ac8_a791_4c4472796867.slice/"
     "crio-0ecc7949cbaf17e883264ea1055f60b184a7cb264fd759c4a692e1155086fe2d.scope",
     "b57320a0-e7eb-4ac8-a791-4c4472796867",
     "0ecc7949cbaf17e883264ea1055f60b184a7cb264fd759c4a692e1155086fe2d"},
    {"grafana/pyroscope ebpf/sd/target_test.go: systemd driver, containerd",
     "0::/kubepods.slice/kubepods-burstable.slice/"
     "kubepods-burstable-podf9a04ecc_1875_491b_926c_d2f64757704e.slice/"
     "cri-containerd-47e320f795efcec1ecf2001c3a09c95e3701ed87de8256837b70b10e23818251.scope",
     "f9a04ecc-1875-491b-926c-d2f64757704e",
     "47e320f795efcec1ecf2001c3a09c95e3701ed87de8256837b70b10e23818251"},
    {"grafana/pyroscope ebpf/sd/target_test.go: Docker, read from another cgroup namespace",
     "0::/../../kubepods-besteffort-pod88f6f4e3_59c0_4ce8_9ecf_391c8b5a60ad.slice/"
     "docker-656959d9ee87a0b131c601ce9d9f8f76b1dda60e8608c503b5979d849cbdc714.scope",
     "88f6f4e3-59c0-4ce8-9ecf-391c8b5a60ad",
     "656959d9ee87a0b131c601ce9d9f8f76b1dda60e8608c503b5979d849cbdc714"},
    {"gravitational/teleport workloadattest test (k3s v1.28.6+k3s2): another cgroup namespace",
     "0::/../../kubepods-besteffort-podfecd2321_17b5_49b9_9f75_8c5be777fbfb.slice/"
     "cri-containerd-397529d07efebd566f15dbc7e8af9f3ef586033f5e753adfa96b2bf730102c64.scope",
     "fecd2321-17b5-49b9-9f75-8c5be777fbfb",
     "397529d07efebd566f15dbc7e8af9f3ef586033f5e753adfa96b2bf730102c64"},
    {"gravitational/teleport workloadattest test (OrbStack v1.6.4): cgroupfs, the QoS level out of "
     "sight of the reader's namespace",
     "0::/../../pod36827f77-691f-45aa-a470-0989cf3749c4/"
     "64dd9bf5199ff782835247cb072e4842dc3d0135ef02f6498cb6bb6f37a320d2",
     "36827f77-691f-45aa-a470-0989cf3749c4",
     "64dd9bf5199ff782835247cb072e4842dc3d0135ef02f6498cb6bb6f37a320d2"},
    {"DataDog/datadog-agent pid_mapper_test.go (cgroupV2ProcCgroup): cgroupfs driver",
     "0::/kubepods/burstable/pod15513b48-e7a5-48fc-b9e3-92f713f36504/"
     "a51a9f7d073f848e7fc59e56e8f11524f330a2175a4ed26327da2dfe0d28015f",
     "15513b48-e7a5-48fc-b9e3-92f713f36504",
     "a51a9f7d073f848e7fc59e56e8f11524f330a2175a4ed26327da2dfe0d28015f"},
    {"DataDog/datadog-agent pid_mapper_test.go (cgroupV2ProcCgroupNoHost): a relative path",
     "0::../../../kubepods-burstable.slice/"
     "kubepods-burstable-pod562c01d6_6aba_49fe_ae52_61c40c04eca4.slice/"
     "docker-a51a9f7d073f848e7fc59e56e8f11524f330a2175a4ed26327da2dfe0d28015f.scope",
     "562c01d6-6aba-49fe-ae52-61c40c04eca4",
     "a51a9f7d073f848e7fc59e56e8f11524f330a2175a4ed26327da2dfe0d28015f"},
};

/* Containers outside Kubernetes, and processes in none. */
static const cgroup_case other_cases[] = {
    {"spiffe/spire cgroups_pid_in_crio_pod.txt: CRI-O seen from a sibling cgroup namespace, "
     "the pod out of sight",
     "0::/../crio-09bc3d7ade839efec32b6bec4ec79d099027a668ddba043083ec21d3c3b8f1e6.scope", "",
     "09bc3d7ade839efec32b6bec4ec79d099027a668ddba043083ec21d3c3b8f1e6"},
    {"elastic APM agents' cgroup tests: Docker, cgroupfs",
     "13:name=systemd:/docker/3726184226f5d3147c25fdeab5b60097e378e8a720503a5e19ecfdf29f869860\n"
     "12:pids:/docker/3726184226f5d3147c25fdeab5b60097e378e8a720503a5e19ecfdf29f869860\n",
     "", "3726184226f5d3147c25fdeab5b60097e378e8a720503a5e19ecfdf29f869860"},
    {"elastic APM agents' cgroup tests: Docker, systemd",
     "1:name=systemd:/system.slice/"
     "docker-cde7c2bab394630a42d73dc610b9c57415dced996106665d427f6d0566594411.scope",
     "", "cde7c2bab394630a42d73dc610b9c57415dced996106665d427f6d0566594411"},
    {"elastic APM agents' cgroup tests: a user session is no container",
     "1:name=systemd:/user.slice/user-1000.slice/user@1000.service/gnome-terminal-server.service\n"
     "0::/user.slice/user-1000.slice/session-2.scope\n",
     "", ""},
    {"elastic APM agents' cgroup tests: Cloud Foundry Garden (not a runtime this knows)",
     "1:name=systemd:/system.slice/garden.service/garden/70eb4ce5-a065-4401-6990-88ed", "", ""},
    {"DataDog/datadog-agent pid_mapper_test.go (ecsFargateCgroup): not a container ID here",
     "11:perf_event:/ecs/8474ac4cec7a4f488834b00591271ec3/8474ac4cec7a4f488834b00591271ec3-"
     "3054012820\n",
     "", ""},
    {"a host process on cgroup v2", "0::/init.scope\n", "", ""},
    {"the kubelet itself", "0::/system.slice/kubelet.service\n", "", ""},
};

static void check(const cgroup_case *c)
{
    gm_cgroup_ident id;
    bool found = gm_cgroup_parse(c->text, strlen(c->text), &id);
    if (strcmp(id.pod_uid, c->pod_uid) != 0 || strcmp(id.container_id, c->container_id) != 0)
        fail_msg("%s:\n  got pod \"%s\" container \"%s\"\n  want pod \"%s\" container \"%s\"",
                 c->what, id.pod_uid, id.container_id, c->pod_uid, c->container_id);
    assert_int_equal(found, c->pod_uid[0] || c->container_id[0]);
}

static void test_kubernetes_v1(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof v1_cases / sizeof *v1_cases; i++)
        check(&v1_cases[i]);
}

static void test_kubernetes_v2(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof v2_cases / sizeof *v2_cases; i++)
        check(&v2_cases[i]);
}

static void test_not_kubernetes(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof other_cases / sizeof *other_cases; i++)
        check(&other_cases[i]);
}

/* Shapes of the layout that the real files above do not show, and names that look close. */
static void test_edges(void **state)
{
    (void)state;
    static const cgroup_case cases[] = {
        {"a static pod: its UID is a 32-digit hash",
         "0::/kubepods.slice/kubepods-burstable.slice/"
         "kubepods-burstable-pod6c49a7b3ab0f7a7d4bbfef2a1e8f9be9.slice/"
         "cri-containerd-1111111111111111111111111111111111111111111111111111111111111111.scope",
         "6c49a7b3ab0f7a7d4bbfef2a1e8f9be9",
         "1111111111111111111111111111111111111111111111111111111111111111"},
        {"kind's kubelet-kubepods slices (--cgroup-root=/kubelet, systemd driver)",
         "0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
         "kubelet-kubepods-besteffort-pod26a1a59b_8013_459b_9a20_a611facb1888.slice/"
         "cri-containerd-1207db63eaeb133a85d2b614d12d95d4dff3f29af60d7a7b3c7d39abdf4bd119.scope",
         "26a1a59b-8013-459b-9a20-a611facb1888",
         "1207db63eaeb133a85d2b614d12d95d4dff3f29af60d7a7b3c7d39abdf4bd119"},
        {"a process in a child cgroup of its container (CRI-O's crio-<id>.scope/container)",
         "0::/kubepods.slice/kubepods-besteffort.slice/"
         "kubepods-besteffort-poda2830d0d_b0f0_4ff0_81b5_0ee4e299cf80.slice/"
         "crio-09bc3d7ade839efec32b6bec4ec79d099027a668ddba043083ec21d3c3b8f1e6.scope/container",
         "a2830d0d-b0f0-4ff0-81b5-0ee4e299cf80",
         "09bc3d7ade839efec32b6bec4ec79d099027a668ddba043083ec21d3c3b8f1e6"},
        {"CRI-O's monitor (conmon) is in the pod, not in a container",
         "0::/kubepods.slice/kubepods-besteffort.slice/"
         "kubepods-besteffort-poda2830d0d_b0f0_4ff0_81b5_0ee4e299cf80.slice/"
         "crio-conmon-09bc3d7ade839efec32b6bec4ec79d099027a668ddba043083ec21d3c3b8f1e6.scope",
         "a2830d0d-b0f0-4ff0-81b5-0ee4e299cf80", ""},
        {"the pod's own cgroup", "0::/kubepods/besteffort/pod0e886e9a-3879-45f9-b44d-86ef9df03224",
         "0e886e9a-3879-45f9-b44d-86ef9df03224", ""},
        {"podman",
         "0::/machine.slice/libpod-"
         "3726184226f5d3147c25fdeab5b60097e378e8a720503a5e19ecfdf29f869860.scope",
         "", "3726184226f5d3147c25fdeab5b60097e378e8a720503a5e19ecfdf29f869860"},
        {"a slice whose name only ends like a pod's is not one",
         "0::/system.slice/myapp-pod0e886e9a_3879_45f9_b44d_86ef9df03224.slice", "", ""},
        {"a UID one digit short",
         "0::/kubepods/besteffort/pod0e886e9a-3879-45f9-b44d-86ef9df0322/x", "", ""},
        {"a UID with an upper-case digit", "0::/kubepods/pod0E886E9A-3879-45F9-B44D-86EF9DF03224/x",
         "", ""},
        {"a container ID one digit short outside a pod",
         "0::/docker/3726184226f5d3147c25fdeab5b60097e378e8a720503a5e19ecfdf29f86986", "", ""},
        {"no path", "0::\n", "", ""},
        {"no colons", "kubepods/pod0e886e9a-3879-45f9-b44d-86ef9df03224\n", "", ""},
        {"a line without a newline at the end still counts",
         "2:cpu:/\n0::/kubepods/pod0e886e9a-3879-45f9-b44d-86ef9df03224/"
         "244a65edefdffe31685c42317c9054e71dc1193048cf9459e2a4dd35cbc1dba4",
         "0e886e9a-3879-45f9-b44d-86ef9df03224",
         "244a65edefdffe31685c42317c9054e71dc1193048cf9459e2a4dd35cbc1dba4"},
        {"empty", "", "", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        check(&cases[i]);
}

/* Parsing stops at len: a buffer with no NUL, and a cut in the middle of an ID. */
static void test_length_bound(void **state)
{
    (void)state;
    const char *text = v2_cases[0].text;
    size_t n = strlen(text);
    char *copy = malloc(n);
    assert_non_null(copy);
    memcpy(copy, text, n); /* no terminating NUL: ASan catches a read past n */
    gm_cgroup_ident id;
    assert_true(gm_cgroup_parse(copy, n, &id));
    assert_string_equal(id.container_id, v2_cases[0].container_id);
    /* Cut in the middle of the pod's UID: neither pod nor container. */
    size_t cut = (size_t)(strstr(text, "-podb57320a0") - text) + 12;
    assert_false(gm_cgroup_parse(copy, cut, &id));
    assert_string_equal(id.pod_uid, "");
    assert_string_equal(id.container_id, "");
    free(copy);
}

/* gm_cgroup_read: <root>/<pid>/cgroup, and a process that is gone. */
static void test_read(void **state)
{
    (void)state;
    char root[] = "/tmp/gm_cgroup_XXXXXX";
    assert_non_null(mkdtemp(root));
    char path[256];
    snprintf(path, sizeof path, "%s/4242", root);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/4242/cgroup", root);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(v1_cases[1].text, f);
    fclose(f);

    gm_cgroup_ident id;
    assert_int_equal(gm_cgroup_read(root, 4242, &id), GM_OK);
    assert_string_equal(id.pod_uid, v1_cases[1].pod_uid);
    assert_string_equal(id.container_id, v1_cases[1].container_id);
    assert_int_equal(gm_cgroup_read(root, 4243, &id), GM_ENOENT);
    assert_string_equal(id.pod_uid, "");

    /* A file bigger than what is read: the line cut at the limit is left out. */
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("0::/kubepods/pod0e886e9a-3879-45f9-b44d-86ef9df03224/"
          "244a65edefdffe31685c42317c9054e71dc1193048cf9459e2a4dd35cbc1dba4\n",
          f);
    for (int i = 0; i < 400; i++)
        fputs("9:x:/system.slice/a-long-service-name-that-fills-the-file-up.service\n", f);
    fclose(f);
    assert_int_equal(gm_cgroup_read(root, 4242, &id), GM_OK);
    assert_string_equal(id.pod_uid, "0e886e9a-3879-45f9-b44d-86ef9df03224");

    /* Our own process: a real file, whatever it says, parses without error. */
    assert_int_equal(gm_cgroup_read(NULL, (uint32_t)getpid(), &id), GM_OK);

    unlink(path);
    snprintf(path, sizeof path, "%s/4242", root);
    rmdir(path);
    rmdir(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kubernetes_v1),  cmocka_unit_test(test_kubernetes_v2),
        cmocka_unit_test(test_not_kubernetes), cmocka_unit_test(test_edges),
        cmocka_unit_test(test_length_bound),   cmocka_unit_test(test_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
