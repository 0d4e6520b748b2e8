"""Kubernetes attribution end to end: `gpumon serve` over the fake NVML, a procfs root whose GPU
processes have real cgroup files of Kubernetes pods, and the fake kubelet
(tests/fakes/fake_kubelet.py: grpcio on a unix socket) allocating the GPUs to pods. The labels
pod, namespace and container must reach /metrics and the same fields /api/gpus and
/api/processes, only where the kubelet and the cgroups agree; the daemon must keep serving when
the kubelet goes away."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from daemon import Daemon

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from gmtest import FIXTURES, SOURCE, scenario_file  # noqa: E402

FAKE_KUBELET = os.path.join(SOURCE, "tests", "fakes", "fake_kubelet.py")
PYTHON = "/usr/bin/python3"

U0 = "GPU-7a1c0000-0000-4000-8000-000000000000"
U1 = "GPU-7a1c0000-0000-4000-8000-000000000001"
U2 = "GPU-7a1c0000-0000-4000-8000-000000000002"
U3 = "GPU-7a1c0000-0000-4000-8000-000000000003"
U4 = "GPU-7a1c0000-0000-4000-8000-000000000004"
# MIG devices, allocated by their own UUIDs: two of GPU 3 for two pods, one of GPU 4.
MIG3A = "MIG-5a2d0e2c-1c7e-5c4b-9c8e-0a6f8d5c2b11"
MIG3B = "MIG-8f1e6b3a-2d4c-5e7f-8a9b-1c2d3e4f5a6b"
MIG4A = "MIG-0c4d2e6f-7a8b-5c9d-8e0f-1a2b3c4d5e6f"

# Real cgroup files (the unit tests name their sources): a containerd pod under the systemd
# driver (cgroup v2), a CRI-O pod on a hybrid v1+v2 node, a k3s pod seen from another cgroup
# namespace, and a login session on the host.
POD_A_UID = "f9a04ecc-1875-491b-926c-d2f64757704e"
POD_A_CID = "47e320f795efcec1ecf2001c3a09c95e3701ed87de8256837b70b10e23818251"
POD_A_CGROUP = ("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
                "f9a04ecc_1875_491b_926c_d2f64757704e.slice/cri-containerd-" + POD_A_CID + ".scope\n")
POD_B_UID = "a2830d0d-b0f0-4ff0-81b5-0ee4e299cf80"
POD_B_CID = "09bc3d7ade839efec32b6bec4ec79d099027a668ddba043083ec21d3c3b8f1e6"
POD_B_CGROUP = "".join(
    "%s:/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"
    "a2830d0d_b0f0_4ff0_81b5_0ee4e299cf80.slice/crio-%s.scope\n" % (c, POD_B_CID)
    for c in ("12:hugetlb", "7:memory", "1:name=systemd")) + "0::/system.slice/crio.service\n"
POD_C_UID = "fecd2321-17b5-49b9-9f75-8c5be777fbfb"
POD_C_CID = "397529d07efebd566f15dbc7e8af9f3ef586033f5e753adfa96b2bf730102c64"
POD_C_CGROUP = ("0::/../../kubepods-besteffort-podfecd2321_17b5_49b9_9f75_8c5be777fbfb.slice/"
                "cri-containerd-" + POD_C_CID + ".scope\n")
HOST_CGROUP = "0::/user.slice/user-1000.slice/session-2.scope\n"

# The GPU processes: pid -> (cgroup, command).
PROCS = {
    4100: (POD_A_CGROUP, "python3 train.py"),
    4101: (POD_A_CGROUP, "python3 -m torch.distributed.run"),
    4200: (POD_B_CGROUP, "jupyter-kernel"),
    4300: (HOST_CGROUP, "nvtop"),
    4400: (POD_C_CGROUP, "vllm serve"),
}

# The late pod's process appears at this read of GPU 2 (samples every 100 ms).
LATE_READ = 40


def gpu(index, uuid, procs):
    return {"name": "NVIDIA H100 80GB HBM3", "uuid": uuid, "pci_bus_id": "00000000:%02X:00.0" % (0x17 + index),
            "util_gpu": 50, "util_mem": 10, "temp": 40 + index, "mem_total": 85520809984,
            "mem_used": 1 << 30, "mem_free": 85520809984 - (1 << 30), "processes": procs}


SCENARIO = {"gpus": [
    gpu(0, U0, [{"pid": 4100, "used_mem": 1 << 30}, {"pid": 4101, "used_mem": 1 << 29}]),
    gpu(1, U1, [{"pid": 4200, "used_mem": 1 << 28}]),
    gpu(2, U2, [{"pid": 4300, "used_mem": 1 << 20},
                {"pid": 4400, "used_mem": 1 << 31, "from_read": LATE_READ}]),
    dict(gpu(3, U3, []), mig_devices=[MIG3A, MIG3B]),
    dict(gpu(4, U4, []), mig_devices=[MIG4A]),
]}


def pod(name, namespace, container, resource, ids):
    return {"name": name, "namespace": namespace,
            "containers": [{"name": container, "devices": [{"resource_name": resource, "device_ids": ids}],
                            "cpu_ids": [4, 5]}]}


ALLOCATIONS = {"pods": [
    pod("trainer-0", "ml", "main", "nvidia.com/gpu", [U0]),
    # Two time-slicing replicas of GPU 1 for the same container.
    pod("notebook-7c9f", "lab", "jupyter", "nvidia.com/gpu.shared", [U1 + "::0", U1 + "::3"]),
    pod("web", "default", "nginx", "example.com/nic", ["eth1"]),
    pod("mig-a", "lab", "a", "nvidia.com/mig-1g.10gb", [MIG3A]),
    pod("mig-b", "lab", "b", "nvidia.com/mig-1g.10gb", [MIG3B]),
    pod("mig-solo", "lab", "solo", "nvidia.com/mig-3g.40gb", [MIG4A]),
]}
LATE = pod("llm-0", "serve", "vllm", "nvidia.com/gpu", [U2])


def write_json(path, obj):
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f)
    os.rename(path + ".tmp", path)


class Kubelet:
    def __init__(self, tmp, allocations):
        self.sock = os.path.join(tmp, "kubelet.sock")
        self.alloc = os.path.join(tmp, "alloc.json")
        self.ready = os.path.join(tmp, "kubelet.ready")
        write_json(self.alloc, allocations)
        self.proc = subprocess.Popen([PYTHON, FAKE_KUBELET, "--socket", self.sock, "--allocations",
                                      self.alloc, "--ready-file", self.ready])
        deadline = time.time() + 20
        while not os.path.exists(self.ready):
            if self.proc.poll() is not None:
                raise AssertionError("fake_kubelet.py exited %d (python3-grpcio, python3-protobuf: "
                                     "scripts/install-deps.sh test)" % self.proc.returncode)
            if time.time() > deadline:
                raise AssertionError("fake_kubelet.py did not start")
            time.sleep(0.05)

    def set(self, allocations):
        write_json(self.alloc, allocations)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=10)


def make_procfs(tmp):
    """The x86 fixture's host files, and one directory per GPU process."""
    root = os.path.join(tmp, "proc")
    shutil.copytree(os.path.join(FIXTURES, "proc", "x86"), root, symlinks=True)
    for pid, (cgroup, command) in PROCS.items():
        d = os.path.join(root, str(pid))
        os.makedirs(d)
        with open(os.path.join(d, "status"), "w") as f:
            f.write("Name:\t%s\nUid:\t0\t0\t0\t0\n" % command.split()[0])
        with open(os.path.join(d, "cmdline"), "wb") as f:
            f.write(command.replace(" ", "\0").encode() + b"\0")
        with open(os.path.join(d, "cgroup"), "w") as f:
            f.write(cgroup)
    return root


def by_index(gpus):
    return {g["index"]: g for g in gpus}


def metric_lines(text, name):
    return [l for l in text.splitlines() if l.startswith(name + "{")]


class KubernetesAttribution(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gpumon-k8s-")
        self.procfs = make_procfs(self.tmp)
        self.kubelet = Kubelet(self.tmp, ALLOCATIONS)
        self.d = Daemon(["--pod-resources", self.kubelet.sock, "--procfs", self.procfs,
                         "--poll-interval", "100", "--log-level", "debug"],
                        scenario=scenario_file(SCENARIO)).start()

    def tearDown(self):
        self.d.stop()
        self.kubelet.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def gpus_when(self, predicate, timeout=15):
        return self.d.wait_for(lambda: (lambda g: g if predicate(g) else None)(
            by_index(self.d.get_json("/api/gpus")["gpus"])), timeout=timeout)

    def test_labels_and_fields(self):
        gpus = self.gpus_when(lambda g: g[0]["pod"] == "trainer-0")
        g0, g1, g2 = gpus[0], gpus[1], gpus[2]
        self.assertEqual((g0["pod"], g0["namespace"], g0["container"], g0["k8s_containers"]),
                         ("trainer-0", "ml", "main", 1))
        # Two replicas, one container: still one holder.
        self.assertEqual((g1["pod"], g1["namespace"], g1["container"], g1["k8s_containers"]),
                         ("notebook-7c9f", "lab", "jupyter", 1))
        # Not allocated: known to hold nothing.
        self.assertEqual((g2["pod"], g2["namespace"], g2["container"], g2["k8s_containers"]),
                         (None, None, None, 0))
        # MIG devices placed on their GPUs by NVML: two pods share GPU 3 (no names), one holds
        # GPU 4's only device.
        self.assertEqual((gpus[3]["pod"], gpus[3]["k8s_containers"]), (None, 2))
        self.assertEqual((gpus[4]["pod"], gpus[4]["namespace"], gpus[4]["container"],
                          gpus[4]["k8s_containers"]), ("mig-solo", "lab", "solo", 1))

        procs = {p["pid"]: p for g in gpus.values() for p in g["processes"]}
        for pid in (4100, 4101):
            self.assertEqual((procs[pid]["pod"], procs[pid]["namespace"], procs[pid]["container"]),
                             ("trainer-0", "ml", "main"), pid)
            self.assertEqual((procs[pid]["pod_uid"], procs[pid]["container_id"]), (POD_A_UID, POD_A_CID))
        self.assertEqual((procs[4200]["pod"], procs[4200]["container"], procs[4200]["pod_uid"],
                          procs[4200]["container_id"]), ("notebook-7c9f", "jupyter", POD_B_UID, POD_B_CID))
        host = procs[4300]
        self.assertEqual((host["pod"], host["namespace"], host["container"], host["pod_uid"],
                          host["container_id"]), (None,) * 5)
        self.assertEqual(host["command"], "nvtop")

        # /api/processes carries the same fields.
        flat = {p["pid"]: p for p in self.d.get_json("/api/processes")}
        self.assertEqual(flat[4100]["pod"], "trainer-0")
        self.assertEqual(flat[4100]["pod_uid"], POD_A_UID)
        self.assertIsNone(flat[4300]["pod"])

        # /metrics: dcgm-exporter's labels on every series of an allocated GPU.
        status, _, body = self.d.request("/metrics")
        self.assertEqual(status, 200)
        text = body.decode()
        util = {l.split('gpu="')[1].split('"')[0]: l for l in metric_lines(text, "DCGM_FI_DEV_GPU_UTIL")}
        self.assertIn('container="main",namespace="ml",pod="trainer-0"}', util["0"])
        self.assertIn('container="jupyter",namespace="lab",pod="notebook-7c9f"}', util["1"])
        self.assertNotIn("pod=", util["2"])
        self.assertNotIn("pod=", util["3"])
        self.assertIn('pod="mig-solo"', util["4"])
        temp0 = metric_lines(text, "DCGM_FI_DEV_GPU_TEMP")[0]
        self.assertIn('pod="trainer-0"', temp0)
        mem = {l.split('pid="')[1].split('"')[0]: l for l in metric_lines(text, "gpumon_process_gpu_memory_bytes")}
        self.assertIn('container="main",namespace="ml",pod="trainer-0",pod_uid="%s",container_id="%s"}'
                      % (POD_A_UID, POD_A_CID), mem["4100"])
        self.assertIn('pod="notebook-7c9f"', mem["4200"])
        self.assertNotIn("pod", mem["4300"])

        # A new pod gets GPU 2 and its process starts on it: named without a restart.
        self.kubelet.set({"pods": ALLOCATIONS["pods"] + [LATE]})
        gpus = self.gpus_when(lambda g: g[2]["pod"] == "llm-0" and any(
            p["pid"] == 4400 and p["pod"] == "llm-0" for p in g[2]["processes"]))
        late = [p for p in gpus[2]["processes"] if p["pid"] == 4400][0]
        self.assertEqual((late["namespace"], late["container"], late["pod_uid"], late["container_id"]),
                         ("serve", "vllm", POD_C_UID, POD_C_CID))
        self.assertEqual(gpus[2]["k8s_containers"], 1)
        self.assertIsNone([p for p in gpus[2]["processes"] if p["pid"] == 4300][0]["pod"])

        # The config says where it reads.
        cfg = self.d.get_json("/api/config")
        self.assertEqual(cfg["pod_resources"], self.kubelet.sock)
        self.assertEqual(cfg["procfs"], self.procfs)
        self.assertIn('msg="reading the kubelet\'s pod-resources"', self.d.log())

    def test_kubelet_gone(self):
        self.gpus_when(lambda g: g[0]["pod"] == "trainer-0")
        self.kubelet.stop()
        # Within a refresh period the failure is logged, once; the daemon keeps serving, and
        # the last answer is kept a while (a kubelet restarting keeps the pods running).
        self.d.wait_for(lambda: "cannot read the kubelet" in self.d.log(), timeout=15)
        status, _, _ = self.d.request("/api/health")
        self.assertEqual(status, 200)
        self.assertEqual(by_index(self.d.get_json("/api/gpus")["gpus"])[0]["pod"], "trainer-0")
        self.assertEqual(self.d.log().count("cannot read the kubelet"), 1)


class NoKubelet(unittest.TestCase):
    def test_no_socket_and_off(self):
        tmp = tempfile.mkdtemp(prefix="gpumon-k8s-")
        try:
            procfs = make_procfs(tmp)
            sock = os.path.join(tmp, "absent.sock")
            with Daemon(["--pod-resources", sock, "--procfs", procfs],
                        scenario=scenario_file(SCENARIO)) as d:
                gpus = by_index(d.get_json("/api/gpus")["gpus"])
                # No kubelet: the GPUs' holders are unknown, yet the processes' IDs are there.
                self.assertIsNone(gpus[0]["k8s_containers"])
                self.assertIsNone(gpus[0]["pod"])
                p = [p for p in gpus[0]["processes"] if p["pid"] == 4100][0]
                self.assertEqual((p["pod_uid"], p["container_id"], p["pod"]), (POD_A_UID, POD_A_CID, None))
                text = d.request("/metrics")[2].decode()
                self.assertNotIn("pod=", text)
                self.assertIn('pod_uid="%s"' % POD_A_UID, text)
                self.assertNotIn("level=warn", d.log())
            with Daemon(["--pod-resources", "none", "--procfs", procfs],
                        scenario=scenario_file(SCENARIO)) as d:
                self.assertEqual(d.get_json("/api/config")["pod_resources"], "none")
                self.assertIsNone(d.get_json("/api/gpus")["gpus"][0]["k8s_containers"])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
