"""Issue #12 end to end: the health signals of the fake NVML's health.json (ECC, remapped rows,
violations, NVLink, GPM, and XID events delivered while the daemon samples) in /metrics under
dcgm-exporter's names (promtool-clean), in /api/gpus, and /api/health turning "degraded"."""
import re
import shutil
import subprocess
import unittest

from daemon import Daemon


def series(body, name):
    """{labels-text: value} of every sample of family name."""
    out = {}
    for line in body.splitlines():
        m = re.match(r"^%s(\{[^}]*\})? (\S+)$" % re.escape(name), line)
        if m:
            out[m.group(1) or ""] = float(m.group(2))
    return out


def gpu0(body, name):
    vals = [v for k, v in series(body, name).items() if 'gpu="0"' in k]
    return vals[0] if len(vals) == 1 else None


class Health(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon(args=["--poll-interval", "100"], scenario="health.json")
        cls.d.start()
        # The XIDs of health.json fire at the GPU's reads 2 and 3: wait until both show.
        cls.d.wait_for(lambda: cls.d.get_json("/api/gpus")["gpus"][0]["health"]["xid"]["count"] == 2)
        # GPM and the slow counters need a second pass; one more for good measure.
        cls.d.wait_for(lambda: cls.d.get_json("/api/gpus")["seq"] >= 4)

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def test_metrics_under_dcgm_names(self):
        status, _, body = self.d.request("/metrics")
        self.assertEqual(status, 200)
        text = body.decode()
        want = {
            "DCGM_FI_DEV_XID_ERRORS": 48,
            "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": 12,
            "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": 2,
            "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL": 40,
            "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": 3,
            "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": 1,
            "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": 2,
            "DCGM_FI_DEV_ROW_REMAP_FAILURE": 0,
            "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": 9,
            "DCGM_FI_DEV_MEMORY_TEMP": 71,
            "DCGM_FI_DEV_POWER_VIOLATION": 1500000,  # us
            "DCGM_FI_DEV_THERMAL_VIOLATION": 250,
            "DCGM_FI_DEV_RETIRED_DBE": 2,
            "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": 1,
            "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL": 3,
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.915,
            "DCGM_FI_PROF_SM_ACTIVE": 0.8025,
            "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.555,
            "DCGM_FI_PROF_DRAM_ACTIVE": 0.33,
            "DCGM_FI_PROF_PCIE_TX_BYTES": 100 * 1048576,
            "DCGM_FI_PROF_NVLINK_RX_BYTES": 2000 * 1048576,
            "DCGM_FI_DEV_POWER_MGMT_LIMIT_MIN": 200,
            "gpumon_gpu_xid_errors_total": 2,
            "gpumon_gpu_power_average_watts": 511.87,
            "gpumon_gpu_nvlink_links_active": 17,
            "gpumon_gpu_nvlink_tx_bytes_total": 1048576 * 1024,
        }
        for name, value in want.items():
            with self.subTest(name=name):
                self.assertIn("# TYPE %s " % name, text)
                self.assertIn("# HELP %s " % name, text)
                self.assertAlmostEqual(gpu0(text, name), value, places=6)
        # Labelled families: reasons, ECC per location, the info line.
        self.assertIn('reason="sw_power_cap"} 1', text)
        self.assertIn('reason="gpu_idle"} 0', text)
        self.assertRegex(text, r'gpumon_gpu_ecc_errors\{gpu="0".*location="dram",error="uncorrected",'
                               r'counter="volatile"\} 2')
        self.assertRegex(text, r'gpumon_gpu_info\{gpu="0".*serial="1652923012345",'
                               r'vbios_version="96.00.A5.00.01",compute_cap="9.0"\} 1')
        # GPU 1 has ECC off and no XID watch: its series are absent, not 0.
        for name in ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_XID_ERRORS",
                     "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_PROF_SM_ACTIVE"):
            with self.subTest(absent=name):
                self.assertFalse([k for k in series(text, name) if 'gpu="1"' in k])
        promtool = shutil.which("promtool")
        if promtool:
            p = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True)
            out = (p.stdout + p.stderr).decode()
            self.assertNotIn("error while", out.replace("error while linting", ""))
            self.assertIn(p.returncode, (0, 3), out)

    def test_json(self):
        g = self.d.get_json("/api/gpus")["gpus"][0]
        h = g["health"]
        self.assertEqual(h["xid"]["last"], 48)
        self.assertEqual(h["xid"]["count"], 2)
        self.assertRegex(h["xid"]["last_time"], r"^\d{4}-\d\d-\d\dT.*Z$")
        self.assertEqual(h["ecc"]["mode"], {"current": True, "pending": True})
        self.assertEqual(h["ecc"]["uncorrected_volatile"], 2)
        self.assertEqual(h["ecc"]["locations"]["dram"]["corrected_volatile"], 10)
        self.assertNotIn("l1_cache", h["ecc"]["locations"])
        self.assertEqual(h["retired_pages"], {"single_bit": 0, "double_bit": 2, "pending": False})
        self.assertEqual(h["remapped_rows"]["uncorrectable"], 2)
        self.assertEqual(h["remapped_rows"]["histogram"]["max"], 2558)
        self.assertEqual(h["violations_us"]["power"], 1500000)
        self.assertEqual(h["nvlink"]["links_active"], 17)
        self.assertTrue(h["degraded"])
        self.assertIn("XID 48", h["reasons"])
        self.assertIn("2 uncorrected ECC errors", h["reasons"])
        self.assertEqual(g["profiling"]["tensor_active_percent"], 55.5)
        self.assertEqual(g["power"]["draw_average_w"], 511.87)
        self.assertEqual(g["power"]["min_limit_w"], 200)
        self.assertEqual(g["serial"], "1652923012345")
        self.assertEqual(g["compute_capability"], "9.0")
        self.assertEqual(g["compute_mode"], "Default")
        self.assertEqual(g["temperature_memory_c"], 71)
        g1 = self.d.get_json("/api/gpus")["gpus"][1]
        self.assertIsNone(g1["health"]["xid"])
        self.assertIsNone(g1["health"]["ecc"]["uncorrected_volatile"])
        self.assertIs(g1["health"]["degraded"], False)
        self.assertEqual(g1["compute_mode"], "Exclusive_Process")
        self.assertEqual(g1["mig_mode"], {"current": True, "pending": False})

    def test_history_of_counters(self):
        """The counters that move have rings: /api/history serves them, absent ones as null."""
        names = ["xid.count", "ecc.errors.corrected.volatile.total",
                 "ecc.errors.uncorrected.volatile.total", "pcie.replay_counter",
                 "clocks_event_reasons_counters.sw_power_cap", "violation.thermal"]
        h = self.d.get_json("/api/history?gpu=0,1&seconds=60&metric=" + ",".join(names))
        got = {(s["gpu"], s["metric"]): s for s in h["series"]}
        self.assertEqual(len(got), 12)
        last = {"xid.count": 2, "ecc.errors.corrected.volatile.total": 12,
                "ecc.errors.uncorrected.volatile.total": 2, "pcie.replay_counter": 9,
                "clocks_event_reasons_counters.sw_power_cap": 1500000, "violation.thermal": 250}
        for name, value in last.items():
            with self.subTest(gpu=0, metric=name):
                pts = got[(0, name)]["points"]
                self.assertGreaterEqual(len(pts), 4)
                self.assertEqual(pts[-1][1], value)
        self.assertEqual(got[(0, "violation.thermal")]["unit"], "us")
        # XID count rose while the daemon sampled (events at the GPU's reads 2 and 3): the ring
        # holds the step, not only the latest value, and never goes down.
        xid = [v for _, v in got[(0, "xid.count")]["points"] if v is not None]
        self.assertLess(xid[0], 2)
        self.assertEqual(xid, sorted(xid))
        # GPU 1 has ECC off, no XID watch, no replay or violation counters: null points, never 0.
        for name in names:
            with self.subTest(gpu=1, metric=name):
                pts = got[(1, name)]["points"]
                self.assertTrue(pts)
                self.assertEqual({v for _, v in pts}, {None})
        # Counters that rarely move are still read from the latest sample only.
        e = self.d.get_json("/api/history?metric=remapped_rows.pending", expect=400)
        self.assertIn("remapped_rows.pending", e["error"])

    def test_api_health_degraded(self):
        h = self.d.get_json("/api/health")
        self.assertEqual(h["status"], "degraded")
        self.assertEqual([x["gpu"] for x in h["degraded_gpus"]], [0])
        self.assertIn("XID 48", h["degraded_gpus"][0]["reasons"])


class Healthy(unittest.TestCase):
    def test_ok_without_health_trouble(self):
        with Daemon(args=["--poll-interval", "100"]) as d:
            d.wait_for(lambda: d.get_json("/api/health")["status"] == "ok")
            self.assertEqual(d.get_json("/api/health")["degraded_gpus"], [])


if __name__ == "__main__":
    unittest.main()
