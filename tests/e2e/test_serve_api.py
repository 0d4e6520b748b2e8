"""`gpumon serve` end to end: every REST endpoint's status and body, against the fake NVML."""
import json
import os
import shutil
import subprocess
import time
import unittest

from daemon import Daemon

MIB = 1048576


class Endpoints(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon(["--poll-interval", "100"]).start()

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        assert rc == 0, "exit %s: %s" % (rc, cls.d.log())

    def test_health(self):
        h = self.d.get_json("/api/health")
        self.assertEqual(h["status"], "ok")
        self.assertEqual(h["provider"], "nvml")
        self.assertEqual(h["gpu_count"], 2)
        self.assertGreaterEqual(h["uptime_seconds"], 0)
        self.assertLess(h["last_sample_age_seconds"], 5)
        self.assertEqual(h["lost_gpus"], [])

    def test_config_never_shows_token(self):
        c = self.d.get_json("/api/config")
        self.assertIn("token_set", json.dumps(c))
        self.assertEqual(c["poll_interval_ms"] if "poll_interval_ms" in c else
                         c.get("poll_interval_ms", {}).get("value"), 100)

    def test_gpus_is_the_query_model(self):
        doc = self.d.get_json("/api/gpus")
        self.assertEqual(doc["provider"], "nvml")
        self.assertEqual(doc["gpu_count"], 2)
        g = doc["gpus"][0]
        self.assertEqual(g["utilization"]["gpu"], 87)
        self.assertEqual(g["memory"]["total_mib"], 81559)
        self.assertEqual(g["power"]["draw_w"], 512.345)
        self.assertEqual({p["pid"] for p in g["processes"]}, {4242, 5151})
        # Same keys as the CLI's JSON.
        from gmtest import env, run, FAKE_NVML
        cli = json.loads(run(["query", "--format", "json"], env=env(nvml=FAKE_NVML, scenario="two_gpus.json")).stdout)
        self.assertEqual(set(cli), set(doc))
        self.assertEqual(set(cli["gpus"][0]), set(g))

    def test_one_gpu(self):
        g = self.d.get_json("/api/gpus/1")
        self.assertEqual(g["index"], 1)
        self.assertEqual(g["uuid"], "GPU-5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c51")
        e = self.d.get_json("/api/gpus/7", expect=404)
        self.assertIn("error", e)
        e = self.d.get_json("/api/gpus/abc", expect=400)
        self.assertIn("error", e)

    def test_processes_and_system(self):
        procs = self.d.get_json("/api/processes")
        self.assertEqual(sorted(p["pid"] for p in procs if True) if isinstance(procs, list)
                         else sorted(p["pid"] for p in procs["processes"]), [4242, 5151])
        sysm = self.d.get_json("/api/system")
        self.assertGreater(sysm["memory"]["total_bytes"], 0)

    def test_history(self):
        self.d.wait_for(lambda: self.d.get_json("/api/health")["samples_total"] >= 3)
        h = self.d.get_json("/api/history?gpu=0&metric=utilization.gpu,memory.used&seconds=60")
        series = {(s["gpu"], s["metric"]): s for s in h["series"]}
        util = series[(0, "utilization.gpu")]
        self.assertGreaterEqual(len(util["points"]), 3)
        self.assertTrue(all(p[1] == 87 for p in util["points"]))
        mem = series[(0, "memory.used")]
        self.assertEqual(mem["unit"], "MiB")
        self.assertEqual(mem["points"][-1][1], 40960)
        # Several GPUs.
        h = self.d.get_json("/api/history?gpu=0,1&metric=temperature.gpu&seconds=10")
        self.assertEqual(sorted(s["gpu"] for s in h["series"]), [0, 1])

    def test_history_bad_input(self):
        for q, needle in [("gpu=0&metric=bogus.metric&seconds=60", "bogus.metric"),
                          ("gpu=0&metric=utilization.gpu&seconds=abc", "seconds"),
                          ("gpu=0&metric=utilization.gpu&seconds=-5", "seconds"),
                          ("gpu=0&metric=utilization.gpu&seconds=99999999", "seconds"),
                          ("gpu=9&metric=utilization.gpu&seconds=60", "gpu"),
                          ("gpu=x&metric=utilization.gpu", "gpu"),
                          ("gpu=0&metric=utilization.gpu&step=0", "step")]:
            with self.subTest(q=q):
                e = self.d.get_json("/api/history?" + q, expect=400)
                self.assertIn(needle, e["error"])

    def test_fleet_format(self):
        doc = self.d.get_json("/api/v1/monitoring/gpu-metrics")
        self.assertIn("timestamp", doc)
        g = doc["gpus"][0]
        self.assertEqual(g["id"], "gpu-0")
        self.assertEqual(g["name"], "NVIDIA H100 80GB HBM3")
        self.assertEqual(g["uuid"], "GPU-5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c50")
        self.assertEqual(g["utilization"], 87)
        self.assertEqual(g["memory"], {"total": 81559, "used": 40960, "free": 42010165248 // MIB})
        self.assertEqual(g["temperature"], 64)
        self.assertEqual(g["power_usage"], 512.345)
        self.assertEqual(g["clock_speeds"], {"graphics": 1755, "memory": 2619})

    def test_stats_inventory(self):
        doc = self.d.get_json("/stats")
        text = json.dumps(doc)
        self.assertIn("NVIDIA H100 80GB HBM3", text)
        self.assertIn("p2p", doc)
        self.assertIn("NS", text)   # NVLink between 0 and 1 not supported, per the fixture
        self.assertIn("GNS", text)  # atomics

    def test_sampler_call_stats(self):
        # The daemon (100 ms period) has sampled several times: its NVML calls are counted.
        self.d.wait_for(lambda: any(c["call"] == "nvmlDeviceGetUtilizationRates" and c["count"] >= 4
                                    for c in self.d.get_json("/stats").get("sampler_calls", [])))
        calls = {c["call"]: c for c in self.d.get_json("/stats")["sampler_calls"]}
        self.assertEqual(calls["nvmlInit_v2"]["count"], 1)
        self.assertGreaterEqual(calls["nvmlDeviceGetUtilizationRates"]["cpu_seconds"], 0)
        self.assertIn("/proc/stat", calls)
        text = self.d.request("/metrics")[2].decode()
        self.assertIn("# TYPE gpumon_sampler_call_seconds summary", text)
        self.assertRegex(text, r'(?m)^gpumon_sampler_call_seconds_count\{call="nvmlDeviceGetUtilizationRates"\} \d+$')
        self.assertRegex(text, r'(?m)^gpumon_sampler_call_cpu_seconds_total\{call="nvmlInit_v2"\} [0-9.e-]+$')

    def test_metrics(self):
        status, hdrs, body = self.d.request("/metrics")
        self.assertEqual(status, 200)
        self.assertTrue(hdrs["content-type"].startswith("text/plain; version=0.0.4"))
        text = body.decode()
        line = next(l for l in text.splitlines() if l.startswith("DCGM_FI_DEV_GPU_UTIL{") and 'gpu="0"' in l)
        self.assertTrue(line.endswith(" 87"), line)
        for label in ('UUID="GPU-5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c50"', 'pci_bus_id="00000000:1B:00.0"',
                      'device="nvidia0"', 'modelName="NVIDIA H100 80GB HBM3"', "Hostname="):
            self.assertIn(label, line)
        for name in ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_GPU_TEMP",
                     "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK",
                     "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL",
                     "gpumon_host_memory_total_bytes", "gpumon_process_gpu_memory_bytes"):
            self.assertRegex(text, "\n" + name + "[{ ]")
        self.assertNotIn("9223372036854775794", text)
        promtool = shutil.which("promtool")
        if promtool:
            p = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True)
            out = (p.stdout + p.stderr).decode()
            self.assertNotIn("error while", out.replace("error while linting", ""))
            self.assertIn(p.returncode, (0, 3), out)

    def test_gzip_for_clients_that_ask(self):
        import gzip
        for path in ("/metrics", "/api/gpus"):
            with self.subTest(path=path):
                status, hdrs, body = self.d.request(path, headers=["Accept-Encoding: gzip"])
                self.assertEqual(status, 200)
                self.assertEqual(hdrs.get("content-encoding"), "gzip")
                self.assertIn("Accept-Encoding", hdrs.get("vary", ""))
                text = gzip.decompress(body).decode()
                plain_status, plain_hdrs, plain = self.d.request(path)
                self.assertNotIn("content-encoding", plain_hdrs)
                self.assertIn("Accept-Encoding", plain_hdrs.get("vary", ""))
                # Same structure (the sample may have moved on between the two requests).
                self.assertEqual(text.splitlines()[0][:20], plain.decode().splitlines()[0][:20])
                self.assertLess(len(body), len(plain))
                status, hdrs, _ = self.d.request(path, headers=["Accept-Encoding: gzip;q=0"])
                self.assertNotIn("content-encoding", hdrs)

    def test_unknown_and_wrong_method(self):
        status, _, body = self.d.request("/nope")
        self.assertEqual(status, 404)
        self.assertIn("error", json.loads(body))
        status, hdrs, _ = self.d.request("/api/gpus", method="DELETE")
        self.assertEqual(status, 405)
        self.assertIn("GET", hdrs.get("allow", ""))
        status, hdrs, body = self.d.request("/api/gpus", method="HEAD")
        self.assertEqual(status, 200)
        self.assertEqual(body, b"")

    def test_oversized_url(self):
        status, _, _ = self.d.request("/api/gpus?" + "a" * 5000)
        self.assertEqual(status, 414)
        # Past the header budget the connection is closed without an answer.
        import pycurl
        try:
            status, _, _ = self.d.request("/api/gpus?" + "a" * 20000)
            self.assertGreaterEqual(status, 400)
        except pycurl.error:
            pass
        self.assertEqual(self.d.get_json("/api/health")["status"], "ok")


class Auth(unittest.TestCase):
    def test_token(self):
        with Daemon(["--token", "s3cret"]) as d:
            status, hdrs, body = d.request("/api/gpus")
            self.assertEqual(status, 401)
            self.assertIn("bearer", hdrs.get("www-authenticate", "").lower())
            self.assertIn("error", json.loads(body))
            status, _, _ = d.request("/api/gpus", headers=["Authorization: Bearer wrong"])
            self.assertEqual(status, 401)
            status, _, _ = d.request("/metrics", headers=["Authorization: Bearer s3cret"])
            self.assertEqual(status, 200)
            c = d.get_json("/api/config", headers=["Authorization: Bearer s3cret"])
            self.assertNotIn("s3cret", json.dumps(c))
            # The dashboard's page is code, not data: it loads without the token, then sends
            # the token (from its URL fragment) with every API and WebSocket request.
            status, _, body = d.request("/")
            self.assertEqual(status, 200)
            self.assertNotIn(b"s3cret", body)

    def test_token_from_env(self):
        with Daemon(extra_env={"GPU_MONITOR_TOKEN": "envtok"}) as d:
            self.assertEqual(d.request("/api/health")[0], 401)
            self.assertEqual(d.request("/api/health", headers=["Authorization: Bearer envtok"])[0], 200)


class Config(unittest.TestCase):
    def run_serve(self, args, extra_env=None):
        from gmtest import env, run
        return run(["serve", "--listen", "127.0.0.1:0"] + args, env=env(extra=extra_env), timeout=20)

    def test_invalid_values_rejected(self):
        cases = [([], {"GPU_MONITOR_POLL_INTERVAL_MS": "abc"}, "GPU_MONITOR_POLL_INTERVAL_MS"),
                 ([], {"GPU_MONITOR_POLL_INTERVAL_MS": "50"}, "GPU_MONITOR_POLL_INTERVAL_MS"),
                 ([], {"GPU_MONITOR_WS_MAX_RATE_HZ": "0"}, "GPU_MONITOR_WS_MAX_RATE_HZ"),
                 ([], {"GPU_MONITOR_LOG_LEVEL": "loud"}, "GPU_MONITOR_LOG_LEVEL"),
                 ([], {"GPU_MONITOR_ENABLE_SYSTEM_METRICS": "maybe"}, "GPU_MONITOR_ENABLE_SYSTEM_METRICS"),
                 ([], {"GPU_MONITOR_TELEMETRY_PROVIDER": "rocm"}, "GPU_MONITOR_TELEMETRY_PROVIDER"),
                 ([], {"GPU_MONITOR_HISTORY": "forever"}, "GPU_MONITOR_HISTORY"),
                 (["--poll-interval", "10"], None, "--poll-interval"),
                 (["--listen", "nowhere:99999"], None, "--listen")]
        for args, e, needle in cases:
            with self.subTest(args=args, env=e):
                p = self.run_serve(args, e)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(needle, p.stderr)

    def test_help(self):
        from gmtest import run
        p = run(["serve", "--help"])
        self.assertEqual(p.returncode, 0)
        for flag in ("--listen", "--token", "--history", "--simulate", "--provider", "--cors-origin"):
            self.assertIn(flag, p.stdout)


class NoGpu(unittest.TestCase):
    def test_host_metrics_without_gpu(self):
        with Daemon(nvml="/nonexistent/libnvidia-ml.so.1") as d:
            h = d.get_json("/api/health")
            self.assertEqual(h["provider"], "none")
            self.assertEqual(h["gpu_count"], 0)
            self.assertIn("nvml", h["diagnosis"])
            self.assertIn("nvidia-smi", h["diagnosis"])
            s = d.get_json("/api/system")
            self.assertGreater(s["memory"]["total_bytes"], 0)
            doc = d.get_json("/api/gpus")
            self.assertEqual(doc["gpus"], [])


class LostGpu(unittest.TestCase):
    def test_lost_mid_run(self):
        with Daemon(["--poll-interval", "100"], scenario="lost.json") as d:
            h = d.wait_for(lambda: (lambda h: h if h["status"] == "degraded" else None)(d.get_json("/api/health")))
            self.assertEqual(h["lost_gpus"], [1])
            a = d.get_json("/api/gpus")
            self.assertTrue(a["gpus"][1]["lost"])
            self.assertIsNone(a["gpus"][1]["utilization"]["gpu"])
            d.wait_for(lambda: d.get_json("/api/gpus")["seq"] > a["seq"] + 2)
            b = d.get_json("/api/gpus")
            self.assertFalse(b["gpus"][0]["lost"])
            self.assertIsNotNone(b["gpus"][0]["utilization"]["gpu"])
            status, _, body = d.request("/metrics")
            self.assertIn('gpumon_gpu_lost{gpu="1"', body.decode().replace("{gpu=\"1\"", "{gpu=\"1\""))

    def test_nvidia_smi_gpu_lost_before_start(self):
        # nvidia-smi exits 15 with GPU 0's row and a line for the lost GPU 1: the daemon serves
        # GPU 0 and reports GPU 1 lost, instead of "no GPU".
        with Daemon(["--poll-interval", "200", "--provider", "nvidia-smi"], nvml=None, smi=True,
                    extra_env={"GM_FAKE_SMI_MODE": "lost"}) as d:
            h = d.wait_for(lambda: (lambda h: h if h["gpu_count"] else None)(d.get_json("/api/health")))
            self.assertEqual(h["provider"], "nvidia-smi")
            self.assertEqual(h["gpu_count"], 2)
            self.assertEqual(h["status"], "degraded")
            self.assertEqual(h["lost_gpus"], [1])
            a = d.get_json("/api/gpus")
            self.assertFalse(a["gpus"][0]["lost"])
            self.assertEqual(a["gpus"][0]["utilization"]["gpu"], 45)
            self.assertTrue(a["gpus"][1]["lost"])
            self.assertEqual(a["gpus"][1]["pci_bus_id"], "00000000:3B:00.0")
            self.assertIsNone(a["gpus"][1]["utilization"]["gpu"])


class Shutdown(unittest.TestCase):
    def test_sigint_and_sigterm_exit_zero(self):
        import signal
        for sig in (signal.SIGINT, signal.SIGTERM):
            d = Daemon(["--simulate", "2"]).start()
            t = time.time()
            self.assertEqual(d.stop(sig), 0, d.log())
            self.assertLess(time.time() - t, 5)
            self.assertFalse(os.path.exists(d.port_file))


if __name__ == "__main__":
    unittest.main()
