"""`gpumon query --provider nvidia-smi` against the fake nvidia-smi: what nvidia-smi prints that
is not a plain healthy row (a GPU lost before gpumon starts, GPU indexes out of range)."""
import json
import os
import tempfile
import unittest

from gmtest import env, run


def smi_env(mode=None, rows=None, exit_code=None):
    """The fake nvidia-smi on PATH (no NVML); rows: text it prints for --query-gpu."""
    extra = {}
    if rows is not None:
        f = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False)
        f.write(rows)
        f.close()
        extra["GM_FAKE_SMI_FILE"] = f.name
    if exit_code is not None:
        extra["GM_FAKE_SMI_EXIT"] = str(exit_code)
    return env(smi=True, smi_mode=mode, extra=extra)


def cleanup(e):
    if "GM_FAKE_SMI_FILE" in e:
        os.unlink(e["GM_FAKE_SMI_FILE"])


class LostAtStart(unittest.TestCase):
    """GPU 1 fell off the bus before gpumon started: nvidia-smi prints GPU 0's row, "Unable to
    determine the device handle for GPU0000:3B:00.0: GPU is lost..." and exits 15."""

    def test_json_reports_the_lost_gpu_and_reads_the_other(self):
        p = run(["query", "--provider", "nvidia-smi", "--format", "json"], env=smi_env("lost"))
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["provider"], "nvidia-smi")
        self.assertEqual([g["index"] for g in doc["gpus"]], [0, 1])
        g0, g1 = doc["gpus"]
        self.assertFalse(g0["lost"])
        self.assertEqual(g0["utilization"]["gpu"], 45)
        self.assertTrue(g1["lost"])
        self.assertEqual(g1["pci_bus_id"], "00000000:3B:00.0")
        self.assertIsNone(g1["uuid"])  # never read: unknown, not invented
        self.assertIsNone(g1["utilization"]["gpu"])
        self.assertIn("GPU 1 (00000000:3B:00.0) does not answer: GPU is lost.", p.stderr)
        self.assertIn("nvidia-smi exited with status 15", p.stderr)

    def test_auto_falls_back_to_nvidia_smi_with_a_lost_gpu(self):
        p = run(["query"], env=smi_env("lost"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("provider nvidia-smi", p.stdout)
        self.assertIn("GPU is lost", p.stdout)
        self.assertIn("NVIDIA H100 80GB HBM3", p.stdout)

    def test_csv_prints_the_lost_gpu_as_nvidia_smi_would(self):
        p = run(["query", "--provider", "nvidia-smi", "--query-gpu=index,pci.bus_id,utilization.gpu",
                 "--format=csv,noheader"], env=smi_env("lost"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "0, 00000000:18:00.0, 45 %\n1, 00000000:3B:00.0, [GPU is lost]\n")

    def test_no_gpu_answering_is_still_no_gpu(self):
        e = smi_env(rows="Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost.  "
                         "Reboot the system to recover this GPU\n", exit_code=15)
        try:
            p = run(["query", "--provider", "nvidia-smi"], env=e)
        finally:
            cleanup(e)
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        self.assertIn("GPU is lost", p.stderr)


class IndexBound(unittest.TestCase):
    """An index no driver gives (the model holds 64 GPUs) is refused, not turned into a GPU."""

    def test_index_beyond_limit_is_refused(self):
        e = smi_env(rows="0, GPU-a, A, 00000000:01:00.0\n1048576, GPU-b, B, 00000000:02:00.0\n")
        try:
            p = run(["query", "--provider", "nvidia-smi", "--format", "json"], env=e)
        finally:
            cleanup(e)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual([g["index"] for g in doc["gpus"]], [0])
        self.assertIn('skipped row "1048576, GPU-b, B, 00000000:02:00.0": GPU index 1048576 is '
                      "beyond the 64 GPUs gpumon supports", p.stderr)

    def test_only_out_of_range_rows_is_no_gpu(self):
        e = smi_env(rows="1048576, GPU-b, B, 00000000:02:00.0\n")
        try:
            p = run(["query", "--provider", "nvidia-smi"], env=e)
        finally:
            cleanup(e)
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        self.assertIn("GPU index 1048576 is beyond the 64 GPUs gpumon supports", p.stderr)
        self.assertNotIn("1048576 B", p.stdout)


if __name__ == "__main__":
    unittest.main()
