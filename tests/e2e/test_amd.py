"""A machine with two NVIDIA GPUs (the fake NVML, two_gpus.json) and two AMD GPUs (the fake
amdgpu sysfs tree: a Radeon RX 580 at bus 03 and an MI300X at bus 83) end to end: `query`,
the daemon's /api/gpus and /metrics (gpumon's families for all four, AMD's device-metrics-
exporter names for the AMD two), `select --format env` and `run` handing AMD GPUs over in
ROCR/HIP_VISIBLE_DEVICES, and `smi` on a machine with AMD GPUs only."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import urllib.request

from daemon import Daemon

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from gmtest import FAKE_NVML, SOURCE, env, run, run_json  # noqa: E402


def fake_tree(tmp):
    root = os.path.join(tmp, "sysfs")
    subprocess.run([sys.executable, os.path.join(SOURCE, "tests", "fakes", "fake_amd_sysfs.py"), root,
                    "--nvidia"], check=True)
    return root


class Mixed(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gpumon-amd-")
        cls.root = fake_tree(cls.tmp)
        cls.env = env(nvml=FAKE_NVML, scenario="two_gpus.json",
                      extra={"GPU_MONITOR_SYSFS_ROOT": cls.root})

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def check_gpus(self, gpus):
        self.assertEqual([g["index"] for g in gpus], [0, 1, 2, 3])
        self.assertEqual([g["vendor"] for g in gpus], ["NVIDIA", "NVIDIA", "AMD", "AMD"])
        self.assertEqual([g["provider"] for g in gpus], ["nvml", "nvml", "amdgpu", "amdgpu"])
        self.assertEqual([g["pci_bus_id"] for g in gpus],
                         ["00000000:1B:00.0", "00000000:2A:00.0", "0000:03:00.0", "0000:83:00.0"])
        rx, mi = gpus[2], gpus[3]
        self.assertEqual(mi["name"], "AMD Instinct MI300X OAM")
        self.assertEqual(mi["utilization"]["gpu"], 37)
        self.assertEqual(mi["memory"]["total_mib"], 196592)
        self.assertEqual(mi["temperature_junction_c"], 52)
        self.assertEqual(mi["power"]["draw_w"], 321)
        self.assertIsNone(mi["fan_percent"])
        self.assertEqual(rx["fan_percent"], 40)
        self.assertIsNone(rx["temperature_junction_c"])
        self.assertIsNone(rx["uuid"])
        self.assertIsNone(rx["utilization"]["encoder"])

    def test_query(self):
        d = run_json(["query"], env=self.env)
        self.assertEqual(d["provider"], "nvml+amdgpu")
        self.check_gpus(d["gpus"])

    def test_daemon(self):
        with Daemon(["--db", "none"], extra_env={"GPU_MONITOR_SYSFS_ROOT": self.root}) as dm:
            doc = dm.get_json("/api/gpus")
            gpus = doc["gpus"] if isinstance(doc, dict) else doc
            self.check_gpus(gpus)
            with urllib.request.urlopen(dm.base + "/metrics", timeout=10) as r:
                text = r.read().decode()
        # gpumon's own families: all four GPUs.
        util = re.findall(r'^DCGM_FI_DEV_GPU_UTIL\{gpu="(\d)"', text, re.M)
        self.assertEqual(util, ["0", "1", "2", "3"])
        self.assertNotIn('device="nvidia2"', text)
        # AMD's names for the AMD GPUs only, numbered among them.
        self.assertIn("# TYPE gpu_gfx_activity gauge", text)
        self.assertRegex(text, r'(?m)^gpu_gfx_activity\{card_model="102-G30211-00",gpu_id="1",'
                               r'gpu_uuid="5f2c7a31b4e0d001",hostname="[^"]+",serial_number="692251001124"\} 37$')
        self.assertRegex(text, r'(?m)^gpu_gfx_activity\{gpu_id="0",hostname="[^"]+"\} 5$')
        self.assertRegex(text, r'(?m)^gpu_junction_temperature\{[^}]*gpu_id="1"[^}]*\} 52$')
        self.assertNotRegex(text, r'(?m)^gpu_junction_temperature\{[^}]*gpu_id="0"')
        self.assertRegex(text, r'(?m)^gpu_edge_temperature\{[^}]*gpu_id="0"[^}]*\} 41$')
        self.assertRegex(text, r'(?m)^gpu_used_vram\{[^}]*gpu_id="1"[^}]*\} 81920$')
        self.assertRegex(text, r'(?m)^gpu_power_usage\{[^}]*gpu_id="1"[^}]*\} 321$')
        self.assertRegex(text, r'(?m)^gpu_clock\{card_model="102-G30211-00",clock_type="system",gpu_id="1"')
        self.assertRegex(text, r'(?m)^pcie_speed\{[^}]*gpu_id="1"[^}]*\} 32$')
        self.assertRegex(text, r'(?m)^gpu_nodes_total\{hostname="[^"]+"\} 2$')
        self.assertEqual(text.count("# TYPE gpu_clock gauge"), 1)
        self.assertEqual(len(re.findall(r"(?m)^gpu_gfx_activity\{", text)), 2)

    def test_select_env(self):
        p = run(["select", "-n", "4", "--format", "env"], env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "CUDA_VISIBLE_DEVICES=0,1\nROCR_VISIBLE_DEVICES=0,1\n"
                                   "HIP_VISIBLE_DEVICES=0,1\n")
        # -i 3: the MI300X alone is the second AMD GPU, and CUDA_VISIBLE_DEVICES stays unset
        # (HIP reads it too).
        d = run_json(["select", "-n", "1", "-i", "3"], env=self.env)
        self.assertEqual(d["visible_devices"], {"ROCR_VISIBLE_DEVICES": "1", "HIP_VISIBLE_DEVICES": "1"})

    def test_run_env(self):
        script = "echo CUDA=${CUDA_VISIBLE_DEVICES-unset} ROCR=$ROCR_VISIBLE_DEVICES HIP=$HIP_VISIBLE_DEVICES"
        common = ["--no-db", "-w", "0", "--lease-dir", os.path.join(self.tmp, "leases")]
        # Only the MI300X has 100000 MiB free: the second AMD GPU, CUDA_VISIBLE_DEVICES unset.
        p = run(["run", "-n", "1", "-m", "100000"] + common + ["--", "sh", "-c", script], env=self.env,
                timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("CUDA=unset ROCR=1 HIP=1", p.stdout)
        # The idle H100 (GPU 1) and the MI300X: each runtime gets its own.
        p = run(["run", "-n", "2", "-m", "60000"] + common + ["--", "sh", "-c", script], env=self.env,
                timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("CUDA=1 ROCR=1 HIP=1", p.stdout)


class Nvtop(unittest.TestCase):
    """The fake nvtop on PATH (tests/fixtures/nvtop/snapshot.json: an H100 and an Intel Arc):
    the last resort adds only the GPU no other provider read."""

    def test_last_resort(self):
        with tempfile.TemporaryDirectory() as tmp:
            e = env(nvml=FAKE_NVML, scenario="two_gpus.json",
                    extra={"GPU_MONITOR_SYSFS_ROOT": fake_tree(tmp),
                           "GPU_MONITOR_NVTOP": os.path.join(SOURCE, "tests", "fakes", "nvtop-bin", "nvtop")})
            d = run_json(["query"], env=e)
            self.assertEqual(d["provider"], "nvml+amdgpu+nvtop")
            self.assertEqual(len(d["gpus"]), 5)
            arc = d["gpus"][4]
            self.assertEqual((arc["index"], arc["vendor"], arc["provider"]), (4, "Intel", "nvtop"))
            self.assertEqual(arc["name"], "Intel(R) Arc(TM) A770 Graphics")
            self.assertEqual(arc["utilization"]["gpu"], 12)
            self.assertEqual(arc["utilization"]["encoder"], 3)
            self.assertEqual(arc["power"]["draw_w"], 48)
            self.assertIsNone(arc["temperature_c"])
            self.assertEqual([p["pid"] for p in arc["processes"]], [777])
            # nvtop alone, forced: both of its GPUs, numbered from 0.
            d = run_json(["query", "--provider", "nvtop"], env=e)
            self.assertEqual([g["vendor"] for g in d["gpus"]], ["NVIDIA", "Intel"])
            # nvtop that sees only GPUs already read is not run at every sample.
            only_h100 = os.path.join(tmp, "h100.json")
            with open(os.path.join(SOURCE, "tests", "fixtures", "nvtop", "snapshot.json")) as f:
                snap = json.load(f)
            with open(only_h100, "w") as f:
                json.dump(snap[:1], f)
            d = run_json(["query"], env=dict(e, GM_FAKE_NVTOP_FILE=only_h100))
            self.assertEqual(d["provider"], "nvml+amdgpu")
            self.assertEqual(len(d["gpus"]), 4)
            # nvtop that sees no GPU, or fails: not used, and said why only when nothing works.
            for mode in ("none", "fail"):
                d = run_json(["query"], env=dict(e, GM_FAKE_NVTOP_MODE=mode))
                self.assertEqual(d["provider"], "nvml+amdgpu")


class SysfsProcesses(unittest.TestCase):
    """Without AMD's library, the amdgpu reader's processes come from the DRM clients' fdinfo
    (fake_amd_sysfs.py --procs)."""

    def test_query_and_metrics(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = os.path.join(tmp, "sysfs")
            subprocess.run([sys.executable, os.path.join(SOURCE, "tests", "fakes", "fake_amd_sysfs.py"), root,
                            "--procs"], check=True)
            e = env(extra={"GPU_MONITOR_SYSFS_ROOT": root})
            d = run_json(["query"], env=e)
            rx, mi = d["gpus"]
            self.assertEqual([(p["pid"], p["used_memory_mib"]) for p in mi["processes"]], [(5001, 8192), (5002, 1024)])
            self.assertEqual([(p["pid"], p["used_memory_mib"]) for p in rx["processes"]], [(5001, 256)])
            self.assertEqual(mi["processes"][0]["type"], "graphics")
            self.assertIsNone(mi["processes"][0]["utilization"]["memory"])
            with Daemon(["--db", "none"], nvml=None, scenario=None, extra_env={"GPU_MONITOR_SYSFS_ROOT": root}) as dm:
                with urllib.request.urlopen(dm.base + "/metrics", timeout=10) as r:
                    text = r.read().decode()
            self.assertRegex(text, r'(?m)^gpumon_process_gpu_memory_bytes\{gpu="1",UUID="5f2c7a31b4e0d001",'
                                   r'pid="5001"[^}]*\} 8589934592$')


class AmdOnly(unittest.TestCase):
    def test_smi_says_nvidia_only(self):
        with tempfile.TemporaryDirectory() as tmp:
            e = env(extra={"GPU_MONITOR_SYSFS_ROOT": fake_tree(tmp)})
            p = run(["smi"], env=e)
            self.assertEqual(p.returncode, 9)
            self.assertIn("gpumon smi shows NVIDIA GPUs only", p.stderr)
            self.assertIn("2 GPUs of another vendor (AMD, read by amdgpu)", p.stderr)
            d = run_json(["query"], env=e)
            self.assertEqual(d["provider"], "amdgpu")
            self.assertEqual(len(d["gpus"]), 2)


if __name__ == "__main__":
    unittest.main()
