"""AMD GPUs read through AMD's amdsmi library (the fake libamd_smi.so with
tests/fixtures/amd_smi/two_gpus.json: an MI300X and a Radeon PRO W7900, three processes) beside two
NVIDIA GPUs (the fake NVML) end to end: amdsmi is preferred over the ROCm SMI library and the amdgpu
sysfs tree that are also there; a library of another amdsmi version is refused and ROCm SMI reads
the GPUs instead; `--provider` forces either; `query`, /api/gpus and /metrics (gpumon's families,
AMD's device-metrics-exporter names, the per-process VRAM) show amdsmi's GPUs and processes."""
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
from gmtest import (FAKE_AMDSMI, FAKE_AMDSMI_OTHER, FAKE_NVML, FAKE_RSMI, FIXTURES, SOURCE,  # noqa: E402
                    env, run, run_json)

MI_UUID = "c1ff74a1-0000-1000-8047-ce01fa2c5b2d"
W_UUID = "52ff7448-0000-1000-80a3-0a1b2c3d4e5f"


class AmdSmi(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gpumon-amdsmi-")
        cls.root = os.path.join(cls.tmp, "sysfs")
        subprocess.run([sys.executable, os.path.join(SOURCE, "tests", "fakes", "fake_amd_sysfs.py"),
                        cls.root], check=True)
        cls.extra = {"GPU_MONITOR_SYSFS_ROOT": cls.root,
                     "GPU_MONITOR_AMD_SMI_LIB": FAKE_AMDSMI,
                     "GM_FAKE_AMDSMI_SCENARIO": os.path.join(FIXTURES, "amd_smi", "two_gpus.json"),
                     "GPU_MONITOR_ROCM_SMI_LIB": FAKE_RSMI,
                     "GM_FAKE_RSMI_SCENARIO": os.path.join(FIXTURES, "rocm_smi", "two_gpus.json")}
        cls.env = env(nvml=FAKE_NVML, scenario="two_gpus.json", extra=cls.extra)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def check_gpus(self, gpus, procs_inline=True):
        self.assertEqual([g["index"] for g in gpus], [0, 1, 2, 3])
        self.assertEqual([g["vendor"] for g in gpus], ["NVIDIA", "NVIDIA", "AMD", "AMD"])
        self.assertEqual([g["provider"] for g in gpus], ["nvml", "nvml", "amd_smi", "amd_smi"])
        mi, w = gpus[2], gpus[3]
        self.assertEqual(mi["name"], "AMD Instinct MI300X")
        self.assertEqual(mi["uuid"], MI_UUID)
        self.assertEqual(mi["pci_bus_id"], "0000:0c:00.0")
        self.assertEqual(mi["utilization"]["gpu"], 37)
        self.assertIsNone(mi["utilization"]["memory"])  # not given: absent, not 0
        self.assertEqual(mi["memory"]["total_mib"], 196592)
        self.assertEqual(mi["memory"]["used_mib"], 81920)
        self.assertEqual(mi["temperature_junction_c"], 52)
        self.assertEqual(mi["power"]["draw_w"], 321)
        self.assertIsNone(mi["fan_percent"])
        self.assertEqual(w["name"], "AMD Radeon PRO W7900")
        self.assertEqual(w["uuid"], W_UUID)
        self.assertEqual(w["fan_percent"], 40)
        self.assertEqual(w["temperature_c"], 41)
        if procs_inline:
            self.assertEqual([(p["pid"], p["used_memory_mib"]) for p in mi["processes"]],
                             [(4242, 8192), (4343, 1024)])
            self.assertEqual([(p["pid"], p["used_memory_mib"]) for p in w["processes"]], [(4343, 2048)])

    def test_query(self):
        d = run_json(["query"], env=self.env)
        self.assertEqual(d["provider"], "nvml+amd_smi")
        self.check_gpus(d["gpus"])

    def test_forced(self):
        d = run_json(["query", "--provider", "amd_smi"], env=self.env)
        self.assertEqual(d["provider"], "amd_smi")
        self.assertEqual([(g["index"], g["name"], g["provider"]) for g in d["gpus"]],
                         [(0, "AMD Instinct MI300X", "amd_smi"), (1, "AMD Radeon PRO W7900", "amd_smi")])
        # The older library still reads the same GPUs when asked for.
        d = run_json(["query", "--provider", "rocm_smi"], env=self.env)
        self.assertEqual([g["uuid"] for g in d["gpus"]], ["5f2c7a31b4e0d001", "0a1b2c3d4e5f6071"])

    def test_fallback_order(self):
        # Another amdsmi version: refused, ROCm SMI reads the GPUs; forced, it says why.
        e = dict(self.env, GPU_MONITOR_AMD_SMI_LIB=FAKE_AMDSMI_OTHER)
        d = run_json(["query"], env=e)
        self.assertEqual(d["provider"], "nvml+rocm_smi")
        self.assertEqual([g["provider"] for g in d["gpus"]], ["nvml", "nvml", "rocm_smi", "rocm_smi"])
        p = run(["query", "--provider", "amd_smi"], env=e)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(FAKE_AMDSMI_OTHER + " is amdsmi 24.7.1; gpumon reads amdsmi 24.6 (ROCm 6.2) only",
                      p.stderr)
        # Neither library: the amdgpu sysfs reader.
        e = dict(self.env, GPU_MONITOR_AMD_SMI_LIB="/nonexistent/libamd_smi.so",
                 GPU_MONITOR_ROCM_SMI_LIB="/nonexistent/librocm_smi64.so.1")
        self.assertEqual(run_json(["query"], env=e)["provider"], "nvml+amdgpu")
        p = run(["query", "--provider", "amd_smi"], env=e)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("cannot load amdsmi library /nonexistent/libamd_smi.so", p.stderr)

    def test_default_library(self):
        # No path given: libamd_smi.so as the dynamic linker finds it (here the fake's directory
        # on LD_LIBRARY_PATH), loaded only where the amdgpu driver binds a card.
        e = {k: v for k, v in self.env.items() if k != "GPU_MONITOR_AMD_SMI_LIB"}
        e["LD_LIBRARY_PATH"] = os.path.dirname(FAKE_AMDSMI)
        self.assertEqual(run_json(["query"], env=e)["provider"], "nvml+amd_smi")
        e["GPU_MONITOR_SYSFS_ROOT"] = "/nonexistent-gm-sysfs"
        p = run(["query", "--provider", "amd_smi"], env=e)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("no GPU driven by amdgpu under /nonexistent-gm-sysfs/sys/class/drm", p.stderr)

    def test_help_lists_it(self):
        p = run(["query", "--help"], env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("amd_smi", p.stdout)

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
                               r'gpu_uuid="' + MI_UUID + r'",hostname="[^"]+",serial_number="692251001124"\} 37$')
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
        self.assertRegex(text, r'(?m)^gpumon_process_gpu_memory_bytes\{gpu="2",UUID="' + MI_UUID +
                               r'",pid="4242"[^}]*\} 8589934592$')
        self.assertRegex(text, r'(?m)^gpumon_process_gpu_memory_bytes\{gpu="3",UUID="' + W_UUID +
                               r'",pid="4343"[^}]*\} 2147483648$')


if __name__ == "__main__":
    unittest.main()
