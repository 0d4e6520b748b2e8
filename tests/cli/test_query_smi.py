"""`gpumon query --provider nvidia-smi` against the fake nvidia-smi: what nvidia-smi prints that
is not a plain healthy row (GPU indexes out of range)."""
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
