"""/metrics of a daemon over an H100 in MIG mode beside one that is not (the fake NVML's
h100-mig.json): each MIG device's memory as its own series with dcgm-exporter's GPU_I_PROFILE
and GPU_I_ID labels, GPM activity per GPU instance under dcgm-exporter's DCGM_FI_PROF_* names,
processes labelled with their instance, and per-process utilization only with
--process-metrics."""
import json
import re
import shutil
import subprocess
import time
import unittest

from daemon import Daemon


def series(text, name):
    """name's samples as (labels dict, value) pairs."""
    out = []
    for line in text.splitlines():
        m = re.match(r"^%s\{(.*)\} (\S+)$" % re.escape(name), line)
        if m:
            labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(1)))
            out.append((labels, float(m.group(2))))
    return out


def check_promtool(test, body):
    promtool = shutil.which("promtool")
    if promtool:
        p = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True)
        out = (p.stdout + p.stderr).decode()
        test.assertNotIn("error while", out.replace("error while linting", ""))
        test.assertIn(p.returncode, (0, 3), out)


class MigMetrics(unittest.TestCase):
    def scrape(self, args=()):
        with Daemon(args=["--interval", "0.2"] + list(args), scenario="h100-mig.json") as d:
            # The per-process samples come with the second pass: wait for a pass with them.
            deadline = time.time() + 10
            while True:
                status, _, body = d.request("/metrics")
                self.assertEqual(status, 200)
                text = body.decode()
                if "gpumon_process_gpu_memory_bytes" in text or time.time() > deadline:
                    return text, body
                time.sleep(0.1)

    def test_mig_devices_have_their_own_series(self):
        text, body = self.scrape()
        used = series(text, "DCGM_FI_DEV_FB_USED")
        mig = {(l["GPU_I_PROFILE"], l["GPU_I_ID"]): (l, v) for l, v in used if "GPU_I_ID" in l}
        self.assertEqual(sorted(mig), [("1g.10gb", "7"), ("1g.10gb", "8"), ("3g.40gb", "2")])
        labels, value = mig[("1g.10gb", "7")]
        self.assertEqual(value, 6144)
        self.assertEqual(labels["gpu"], "0")
        self.assertEqual(labels["UUID"], "GPU-6a3c1e52-7d41-4c8e-9b2a-5f0d3e8c1a47")
        self.assertEqual(labels["modelName"], "NVIDIA H100 80GB HBM3")
        # The GPU's own series stays, without instance labels; the other GPU has no MIG series.
        self.assertEqual([v for l, v in used if l["gpu"] == "0" and "GPU_I_ID" not in l], [18432])
        self.assertFalse([l for l, v in used if l["gpu"] == "1" and "GPU_I_ID" in l])
        free = {l["GPU_I_ID"]: v for l, v in series(text, "DCGM_FI_DEV_FB_FREE") if "GPU_I_ID" in l}
        self.assertEqual(free, {"2": 27904, "7": 3840, "8": 9970})
        total = {l["GPU_I_ID"]: v for l, v in series(text, "DCGM_FI_DEV_FB_TOTAL") if "GPU_I_ID" in l}
        self.assertEqual(total["2"], 40192)
        # A process carries its instance's labels.
        procs = {l["pid"]: l for l, v in series(text, "gpumon_process_gpu_memory_bytes")}
        self.assertEqual((procs["5002"]["GPU_I_PROFILE"], procs["5002"]["GPU_I_ID"]), ("1g.10gb", "7"))
        self.assertNotIn("GPU_I_ID", procs["6001"])
        # Per-process utilization is off by default (a series per process and engine).
        self.assertNotIn("gpumon_process_utilization_percent", text)
        check_promtool(self, body)

    def test_gpm_per_mig_device(self):
        # GPM needs two passes: wait for a scrape that has the instances' SM activity.
        with Daemon(args=["--interval", "0.2"], scenario="h100-mig.json") as d:
            deadline = time.time() + 10
            while True:
                status, _, body = d.request("/metrics")
                text = body.decode()
                if "DCGM_FI_PROF_SM_ACTIVE{" in text or time.time() > deadline:
                    break
                time.sleep(0.1)
            status, _, js = d.request("/api/gpus")
        sm = {(l["GPU_I_PROFILE"], l["GPU_I_ID"]): (l, v)
              for l, v in series(text, "DCGM_FI_PROF_SM_ACTIVE") if "GPU_I_ID" in l}
        self.assertEqual(sorted(sm), [("1g.10gb", "7"), ("1g.10gb", "8"), ("3g.40gb", "2")])
        labels, value = sm[("1g.10gb", "7")]
        self.assertEqual(value, 0.88)  # a ratio, as dcgm-exporter's
        self.assertEqual((labels["gpu"], labels["UUID"]), ("0", "GPU-6a3c1e52-7d41-4c8e-9b2a-5f0d3e8c1a47"))
        self.assertIn(sm[("3g.40gb", "2")][1], (0.625, 0.64))
        self.assertEqual(sm[("1g.10gb", "8")][1], 0)
        dram = {l["GPU_I_ID"]: v for l, v in series(text, "DCGM_FI_PROF_DRAM_ACTIVE") if "GPU_I_ID" in l}
        self.assertEqual(dram, {"2": 0.3125, "7": 0.125, "8": 0})
        # Not given for GI 7: no series, never a 0.
        tensor = {l["GPU_I_ID"]: v for l, v in series(text, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")
                  if "GPU_I_ID" in l}
        self.assertEqual(sorted(tensor), ["2", "8"])
        # Nor for the GPU itself, which the fake gives no GPU-wide GPM reading.
        self.assertFalse([l for l, v in series(text, "DCGM_FI_PROF_SM_ACTIVE") if "GPU_I_ID" not in l])
        check_promtool(self, body)
        # The JSON: a "utilization" object per MIG device, null where GPM gave nothing.
        self.assertEqual(status, 200)
        doc = json.loads(js)
        gpus = doc["gpus"] if isinstance(doc, dict) else doc
        util = {m["gpu_instance_id"]: m["utilization"] for m in gpus[0]["mig_devices"]}
        self.assertEqual(util[7], {"sm_active_percent": 88, "dram_active_percent": 12.5,
                                   "tensor_active_percent": None})
        self.assertEqual(util[8]["tensor_active_percent"], 0)

    def test_process_metrics_flag(self):
        text, body = self.scrape(["--process-metrics"])
        util = {(l["pid"], l["engine"]): v for l, v in series(text, "gpumon_process_utilization_percent")}
        self.assertIn(util[("6001", "sm")], (87, 89))
        self.assertEqual(util[("6003", "decoder")], 30)
        # No sample, no series: never a 0 for what NVML did not tell.
        self.assertFalse([k for k in util if k[0] in ("6002", "5001", "5002")])
        self.assertEqual(text.count("# TYPE gpumon_process_utilization_percent gauge"), 1)
        check_promtool(self, body)


if __name__ == "__main__":
    unittest.main()
