"""AMD GPUs read through AMD's amdsmi library (the fake libamd_smi.so with
tests/fixtures/amd_smi/two_gpus.json: an MI300X and a Radeon PRO W7900, three processes) beside two
NVIDIA GPUs (the fake NVML) end to end: amdsmi is preferred over the ROCm SMI library and the amdgpu
sysfs tree that are also there; a library of another amdsmi version is refused and ROCm SMI reads
the GPUs instead; `--provider` forces either; `query`, /api/gpus and /metrics (gpumon's families,
AMD's device-metrics-exporter names, the per-process VRAM) show amdsmi's GPUs and processes
(amd_lib.py, shared with the ROCm SMI library's test)."""
import os
import unittest

from amd_lib import FAKE_AMDSMI, FAKE_AMDSMI_OTHER, FAKE_RSMI, FIXTURES, run, run_json, AmdLibCases


class AmdSmi(AmdLibCases, unittest.TestCase):
    PROVIDER = "amd_smi"
    LIB_VAR = "GPU_MONITOR_AMD_SMI_LIB"
    FAKE = FAKE_AMDSMI
    MI_UUID = "c1ff74a1-0000-1000-8047-ce01fa2c5b2d"
    W_UUID = "52ff7448-0000-1000-80a3-0a1b2c3d4e5f"
    EXTRA = {"GM_FAKE_AMDSMI_SCENARIO": os.path.join(FIXTURES, "amd_smi", "two_gpus.json"),
             "GPU_MONITOR_ROCM_SMI_LIB": FAKE_RSMI,
             "GM_FAKE_RSMI_SCENARIO": os.path.join(FIXTURES, "rocm_smi", "two_gpus.json")}

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

    def test_help_lists_it(self):
        p = run(["query", "--help"], env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("amd_smi", p.stdout)


if __name__ == "__main__":
    unittest.main()
