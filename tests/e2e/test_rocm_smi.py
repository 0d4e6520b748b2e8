"""AMD GPUs read through AMD's ROCm SMI library (the fake librocm_smi64.so.1 with
tests/fixtures/rocm_smi/two_gpus.json: an MI300X and a Radeon PRO W7900, three processes) beside two
NVIDIA GPUs (the fake NVML) end to end: the library is preferred over the amdgpu sysfs tree that
is also there, `--provider` forces either, and `query`, /api/gpus and /metrics show the library's
GPUs and processes (amd_lib.py, shared with the amdsmi library's test)."""
import os
import unittest

from amd_lib import FAKE_RSMI, FIXTURES, run, run_json, AmdLibCases


class RocmSmi(AmdLibCases, unittest.TestCase):
    PROVIDER = "rocm_smi"
    LIB_VAR = "GPU_MONITOR_ROCM_SMI_LIB"
    FAKE = FAKE_RSMI
    MI_UUID = "5f2c7a31b4e0d001"
    W_UUID = "0a1b2c3d4e5f6071"
    EXTRA = {"GM_FAKE_RSMI_SCENARIO": os.path.join(FIXTURES, "rocm_smi", "two_gpus.json")}

    def test_forced(self):
        d = run_json(["query", "--provider", "rocm_smi"], env=self.env)
        self.assertEqual(d["provider"], "rocm_smi")
        self.assertEqual([(g["index"], g["name"]) for g in d["gpus"]],
                         [(0, "AMD Instinct MI300X"), (1, "AMD Radeon PRO W7900")])
        # The sysfs reader still reads its own tree when asked for.
        d = run_json(["query", "--provider", "amdgpu"], env=self.env)
        self.assertEqual(d["provider"], "amdgpu")
        self.assertEqual([g["pci_bus_id"] for g in d["gpus"]], ["0000:03:00.0", "0000:83:00.0"])

    def test_fallback(self):
        # Without the library, auto falls back to sysfs; forced, it says why it failed.
        e = dict(self.env, GPU_MONITOR_ROCM_SMI_LIB="/nonexistent/librocm_smi64.so.1")
        self.assertEqual(run_json(["query"], env=e)["provider"], "nvml+amdgpu")
        p = run(["query", "--provider", "rocm_smi"], env=e)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("cannot load ROCm SMI library /nonexistent/librocm_smi64.so.1", p.stderr)

    def test_no_amdgpu_no_library(self):
        # The default library is not loaded where no card is driven by amdgpu: NVIDIA's alone.
        e = {k: v for k, v in self.env.items() if k != self.LIB_VAR}
        e["LD_LIBRARY_PATH"] = os.path.dirname(FAKE_RSMI)
        e["GPU_MONITOR_SYSFS_ROOT"] = "/nonexistent-gm-sysfs"
        self.assertEqual(run_json(["query"], env=e)["provider"], "nvml")


if __name__ == "__main__":
    unittest.main()
