"""What the end-to-end tests of the two AMD library providers (test_amd_smi.py: the fake
libamd_smi.so, test_rocm_smi.py: the fake librocm_smi64.so.1) check alike. Both fixtures'
two_gpus.json describe the same MI300X and Radeon PRO W7900 with three processes, beside two NVIDIA
GPUs (the fake NVML) and an amdgpu sysfs tree: `query`, the default library's loading, and
/api/gpus and /metrics (gpumon's families, AMD's device-metrics-exporter names, the per-process
VRAM) show the library's GPUs and processes. A test class mixes AmdLibCases in before
unittest.TestCase and names its library in the class attributes; gmtest's names come with it."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request

from daemon import Daemon

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from gmtest import (FAKE_AMDSMI, FAKE_AMDSMI_OTHER, FAKE_NVML, FAKE_RSMI, FIXTURES,  # noqa: E402,F401
                    SOURCE, env, run, run_json)


class AmdLibCases:
    PROVIDER = None  # "amd_smi"
    LIB_VAR = None  # the variable naming the library: GPU_MONITOR_AMD_SMI_LIB
    FAKE = None  # the fake library's path
    MI_UUID = W_UUID = None  # the two GPUs' UUIDs as the library gives them
    EXTRA = {}  # the rest of the environment: the scenario, other libraries

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gpumon-" + cls.PROVIDER + "-")
        cls.root = os.path.join(cls.tmp, "sysfs")
        subprocess.run([sys.executable, os.path.join(SOURCE, "tests", "fakes", "fake_amd_sysfs.py"),
                        cls.root], check=True)
        cls.extra = dict(cls.EXTRA, GPU_MONITOR_SYSFS_ROOT=cls.root)
        cls.extra[cls.LIB_VAR] = cls.FAKE
        cls.env = env(nvml=FAKE_NVML, scenario="two_gpus.json", extra=cls.extra)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def check_gpus(self, gpus, procs_inline=True):
        self.assertEqual([g["index"] for g in gpus], [0, 1, 2, 3])
        self.assertEqual([g["vendor"] for g in gpus], ["NVIDIA", "NVIDIA", "AMD", "AMD"])
        self.assertEqual([g["provider"] for g in gpus], ["nvml", "nvml", self.PROVIDER, self.PROVIDER])
        mi, w = gpus[2], gpus[3]
        self.assertEqual(mi["name"], "AMD Instinct MI300X")
        self.assertEqual(mi["uuid"], self.MI_UUID)
        self.assertEqual(mi["pci_bus_id"], "0000:0c:00.0")
        self.assertEqual(mi["utilization"]["gpu"], 37)
        self.assertIsNone(mi["utilization"]["memory"])  # not given: absent, not 0
        self.assertEqual(mi["memory"]["total_mib"], 196592)
        self.assertEqual(mi["memory"]["used_mib"], 81920)
        self.assertEqual(mi["temperature_junction_c"], 52)
        self.assertEqual(mi["power"]["draw_w"], 321)
        self.assertIsNone(mi["fan_percent"])
        self.assertEqual(w["name"], "AMD Radeon PRO W7900")
        self.assertEqual(w["uuid"], self.W_UUID)
        self.assertEqual(w["fan_percent"], 40)
        self.assertEqual(w["temperature_c"], 41)
        if procs_inline:
            self.assertEqual([(p["pid"], p["used_memory_mib"]) for p in mi["processes"]],
                             [(4242, 8192), (4343, 1024)])
            self.assertEqual([(p["pid"], p["used_memory_mib"]) for p in w["processes"]], [(4343, 2048)])

    def test_query(self):
        d = run_json(["query"], env=self.env)
        self.assertEqual(d["provider"], "nvml+" + self.PROVIDER)
        self.check_gpus(d["gpus"])

    def test_default_library(self):
        # No path given: the library as the dynamic linker finds it (here the fake's directory
        # on LD_LIBRARY_PATH), loaded only where the amdgpu driver binds a card.
        e = {k: v for k, v in self.env.items() if k != self.LIB_VAR}
        e["LD_LIBRARY_PATH"] = os.path.dirname(self.FAKE)
        self.assertEqual(run_json(["query"], env=e)["provider"], "nvml+" + self.PROVIDER)
        e["GPU_MONITOR_SYSFS_ROOT"] = "/nonexistent-gm-sysfs"
        p = run(["query", "--provider", self.PROVIDER], env=e)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("no GPU driven by amdgpu under /nonexistent-gm-sysfs/sys/class/drm", p.stderr)

    def test_daemon(self):
        with Daemon(["--db", "none"], extra_env=self.extra) as dm:
            doc = dm.get_json("/api/gpus")
            gpus = doc["gpus"] if isinstance(doc, dict) else doc
            self.check_gpus(gpus, procs_inline=False)
            with urllib.request.urlopen(dm.base + "/metrics", timeout=10) as r:
                text = r.read().decode()
        self.assertEqual(re.findall(r'^DCGM_FI_DEV_GPU_UTIL\{gpu="(\d)"', text, re.M), ["0", "1", "2", "3"])
        # AMD's device-metrics-exporter names, the GPUs numbered among the AMD ones.
        self.assertRegex(text, r'(?m)^gpu_gfx_activity\{card_model="AMD Instinct MI300X",gpu_id="0",'
                               r'gpu_uuid="' + self.MI_UUID +
                               r'",hostname="[^"]+",serial_number="692251001124"\} 37$')
        self.assertRegex(text, r'(?m)^gpu_gfx_activity\{[^}]*gpu_id="1"[^}]*\} \d+$')
        self.assertNotRegex(text, r'(?m)^gpu_umc_activity\{[^}]*gpu_id="0"')
        self.assertRegex(text, r'(?m)^gpu_umc_activity\{[^}]*gpu_id="1"[^}]*\} 4$')
        self.assertRegex(text, r'(?m)^gpu_junction_temperature\{[^}]*gpu_id="0"[^}]*\} 52$')
        self.assertNotRegex(text, r'(?m)^gpu_edge_temperature\{[^}]*gpu_id="0"')
        self.assertRegex(text, r'(?m)^gpu_package_power\{[^}]*gpu_id="0"[^}]*\} 321$')
        self.assertRegex(text, r'(?m)^gpu_average_package_power\{[^}]*gpu_id="1"[^}]*\} 95$')
        self.assertRegex(text, r'(?m)^gpu_energy_consumed\{[^}]*gpu_id="0"[^}]*\} 15625000$')
        self.assertNotRegex(text, r'(?m)^gpu_energy_consumed\{[^}]*gpu_id="1"')
        self.assertRegex(text, r'(?m)^gpu_used_vram\{[^}]*gpu_id="0"[^}]*\} 81920$')
        self.assertRegex(text, r'(?m)^gpu_clock\{card_model="AMD Instinct MI300X",clock_type="system",'
                               r'gpu_id="0"[^}]*\} 1420$')
        self.assertRegex(text, r'(?m)^pcie_speed\{[^}]*gpu_id="0"[^}]*\} 32$')
        self.assertRegex(text, r'(?m)^gpu_ecc_correct_total\{[^}]*gpu_id="0"[^}]*\} 5$')
        self.assertRegex(text, r'(?m)^gpu_ecc_uncorrect_total\{[^}]*gpu_id="0"[^}]*\} 1$')
        self.assertNotRegex(text, r'(?m)^gpu_ecc_correct_total\{[^}]*gpu_id="1"')
        self.assertRegex(text, r'(?m)^gpu_nodes_total\{hostname="[^"]+"\} 2$')
        # The processes with their VRAM on each AMD GPU.
        self.assertRegex(text, r'(?m)^gpumon_process_gpu_memory_bytes\{gpu="2",UUID="' + self.MI_UUID +
                               r'",pid="4242"[^}]*\} 8589934592$')
        self.assertRegex(text, r'(?m)^gpumon_process_gpu_memory_bytes\{gpu="3",UUID="' + self.W_UUID +
                               r'",pid="4343"[^}]*\} 2147483648$')
