"""`gpumon cluster` and GET /api/fleet on a real Prometheus (Debian's, on loopback, scraping every
second): four `gpumon serve` daemons with different --hostname and loads (the fake NVML), one of
them also started with --prometheus. `cluster status` shows every node with its idle GPUs and
health, `cluster select` chooses the node with the most idle GPUs (ties: lower mean
utilization), changes its choice when that node's daemon dies, exits 4 when no node has N idle
GPUs and 1 when Prometheus is unreachable or answers an error; the daemon serves the same view
at /api/fleet. The scenario helpers and the way Prometheus is started are test_prometheus.py's."""
import copy
import gzip
import http.server
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

from daemon import Daemon
from test_prometheus import BASE, PROMETHEUS, free_port
from gmtest import GPUMON, scenario_file

# Per node: (utilization %, memory used share) of its two GPUs. Idle is below 30 % and 50 %.
NODES = {
    "node-a": ((87, 0.6), (3, 0.0)),   # 1 idle
    "node-b": ((3, 0.0), (3, 0.0)),    # 2 idle, mean 3 %
    "node-c": ((87, 0.6), (95, 0.9)),  # none idle; GPU 0 has uncorrectable ECC errors
    "node-d": ((20, 0.1), (20, 0.1)),  # 2 idle, mean 20 %
}

# GPU 0 of node-c: ECC on, two uncorrected errors since the driver loaded.
ECC = {"ecc_mode": 1, "ecc_mode_pending": 1,
       "ecc": {"corrected.volatile.total": 0, "uncorrected.volatile.total": 2,
               "corrected.aggregate.total": 0, "uncorrected.aggregate.total": 2}}


def scenario(name):
    s = copy.deepcopy(BASE)
    for g, (util, share) in zip(s["gpus"], NODES[name]):
        usable = g["mem_total"] - g["mem_reserved"]
        used = max(1 << 20, int(usable * share))
        g.update(util_gpu=util, mem_used=used, mem_free=usable - used, processes=[])
    if name == "node-c":
        s["gpus"][0].update(ECC)
    return scenario_file(s)


class FakePrometheus(http.server.BaseHTTPRequestHandler):
    """Answers every query with Prometheus's own error shape."""

    def do_GET(self):
        body = json.dumps({"status": "error", "errorType": "execution",
                           "error": "query processing would load too many samples"}).encode()
        self.send_response(422)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def cluster(*args, env=None):
    e = dict(os.environ)
    e.pop("GPU_MONITOR_PROMETHEUS_URL", None)
    e.update(env or {})
    return subprocess.run([GPUMON, "cluster", *args], capture_output=True, text=True, timeout=60,
                          env=e)


def get(base, path):
    try:
        with urllib.request.urlopen(base + path, timeout=30) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


@unittest.skipUnless(PROMETHEUS, "prometheus (Debian package) is not installed")
class Cluster(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gpumon-cluster-")
        cls.port = free_port()
        cls.url = "http://127.0.0.1:%d" % cls.port
        cls.scenarios, cls.daemons = [], {}
        for name in NODES:
            scen = scenario(name)
            cls.scenarios.append(scen)
            extra = ["--prometheus", cls.url] if name == "node-a" else []
            cls.daemons[name] = Daemon(["--hostname", name, "--db", "none"] + extra,
                                       scenario=scen).start()
        targets = ", ".join('"127.0.0.1:%d"' % d.port for d in cls.daemons.values())
        cfg = os.path.join(cls.tmp, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: gpumon\n    scrape_interval: 1s\n"
                    "    scrape_timeout: 1s\n    static_configs:\n      - targets: [%s]\n" % targets)
        cls.prom = subprocess.Popen(
            [PROMETHEUS, "--config.file=" + cfg, "--storage.tsdb.path=" + os.path.join(cls.tmp, "data"),
             "--web.listen-address=127.0.0.1:%d" % cls.port, "--log.level=warn"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(cls.tmp, "prometheus.log"), "w"))
        # Ready when every node is up with its GPUs and node-c's ECC series is in.
        deadline = time.time() + 60
        while True:
            p = cluster("status", "--format", "json", "--prometheus", cls.url)
            if p.returncode == 0:
                doc = json.loads(p.stdout)
                if (doc["totals"] == {"nodes": 4, "nodes_up": 4, "gpus": 8, "idle_gpus": 5} and
                        doc["nodes"][2]["health"]["status"] == "degraded"):
                    break
            if time.time() > deadline:
                raise AssertionError("the fleet did not come up: %s %s" % (p.stdout, p.stderr))
            time.sleep(0.25)

    @classmethod
    def tearDownClass(cls):
        cls.prom.terminate()
        cls.prom.wait(timeout=20)
        for d in cls.daemons.values():
            d.stop()
        for s in cls.scenarios:
            os.unlink(s)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def wait_for(self, fn, what, timeout=30):
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            last = fn()
            if last:
                return last
            time.sleep(0.25)
        self.fail("%s: not reached in %ss (last: %r)" % (what, timeout, last))

    def test_a_status_table(self):
        p = cluster("status", "--prometheus", self.url)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual(lines[0].split()[:5], ["NODE", "STATE", "GPUS", "IDLE", "UTIL"])
        rows = {ln.split()[0]: ln.split() for ln in lines[1:5]}
        self.assertEqual(sorted(rows), list(NODES))
        self.assertEqual({n: r[1:4] for n, r in rows.items()},
                         {"node-a": ["up", "2", "1"], "node-b": ["up", "2", "2"],
                          "node-c": ["up", "2", "0"], "node-d": ["up", "2", "2"]})
        self.assertIn("DEGRADED", rows["node-c"])
        self.assertIn("4 nodes (4 up), 8 GPUs, 5 idle (utilization < 30 %, memory < 50 %)", p.stdout)
        self.assertIn("node-c: GPU 0: 2 uncorrectable ECC errors", p.stdout)

    def test_a_status_json_from_the_environment(self):
        p = cluster("status", "--format", "json", env={"GPU_MONITOR_PROMETHEUS_URL": self.url + "/"})
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["prometheus"], self.url)
        self.assertEqual(doc["job"], "gpumon")
        nodes = {n["name"]: n for n in doc["nodes"]}
        a = nodes["node-a"]
        self.assertTrue(a["up"])
        self.assertEqual(a["url"], "http://127.0.0.1:%d/" % self.daemons["node-a"].port)
        self.assertEqual(a["targets"][0]["instance"], "127.0.0.1:%d" % self.daemons["node-a"].port)
        self.assertLess(a["last_scrape_age_seconds"], 30)
        self.assertEqual(a["utilization_mean_percent"], 45)
        self.assertEqual(a["hottest"], {"gpu": "0", "temperature_c": 64})
        self.assertEqual([g["idle"] for g in a["gpus"]], [False, True])
        self.assertEqual(a["gpus"][1]["uuid"], BASE["gpus"][1]["uuid"])
        self.assertAlmostEqual(a["power_w"], (BASE["gpus"][0]["power_mw"] + BASE["gpus"][1]["power_mw"]) / 1000)
        self.assertEqual(nodes["node-b"]["utilization_mean_percent"], 3)
        self.assertEqual(nodes["node-c"]["health"],
                         {"status": "degraded", "problems": ["GPU 0: 2 uncorrectable ECC errors"]})
        self.assertEqual(nodes["node-b"]["health"]["status"], "ok")

    def test_b_select(self):
        # node-b and node-d both have 2 idle GPUs: node-b's mean utilization is lower.
        for n in ("2", "1"):
            p = cluster("select", "-n", n, "--prometheus", self.url)
            self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "node-b\n", ""))
        # --gpus, the old name of -n/--count here, still works, with a note.
        p = cluster("select", "--gpus", "2", "--prometheus", self.url)
        self.assertEqual((p.returncode, p.stdout), (0, "node-b\n"))
        self.assertEqual(p.stderr, "gpumon cluster select: --gpus is deprecated; use -n/--count\n")
        p = cluster("select", "-n", "2", "--format", "json", "--prometheus", self.url)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual((doc["chosen"], doc["gpus_needed"]), ("node-b", 2))
        reasons = {n["name"]: (n["fits"], n["chosen"], n["reason"]) for n in doc["nodes"]}
        self.assertEqual(reasons["node-b"],
                         (True, True, "chosen: the most idle GPUs (2), mean utilization 3 %"))
        self.assertEqual(reasons["node-d"], (True, False,
                         "fits (2 idle), but node-b has as many idle GPUs and a lower mean "
                         "utilization (3 % vs 20 %)"))
        self.assertEqual(reasons["node-a"], (False, False, "1 idle GPU, 2 needed"))
        self.assertEqual(reasons["node-c"], (False, False, "0 idle GPUs, 2 needed"))
        # Thresholds as flags: below 20 % node-d's GPUs are busy; below 2 % nothing is idle.
        p = cluster("select", "-n", "2", "--max-util", "20", "--format", "json",
                    "--prometheus", self.url)
        doc = json.loads(p.stdout)
        self.assertEqual({n["name"]: n["idle_gpu_count"] for n in doc["nodes"]},
                         {"node-a": 1, "node-b": 2, "node-c": 0, "node-d": 0})
        p = cluster("select", "-n", "1", "--max-util", "2", "--prometheus", self.url)
        self.assertEqual(p.returncode, 4, p.stderr)

    def test_b_none_fits(self):
        p = cluster("select", "-n", "3", "--prometheus", self.url)
        self.assertEqual((p.returncode, p.stdout), (4, ""))
        self.assertIn("no node that is up has 3 idle GPUs", p.stderr)
        self.assertIn("  node-b: 2 idle GPUs, 3 needed\n", p.stderr)
        p = cluster("select", "-n", "3", "--format", "json", "--prometheus", self.url)
        self.assertEqual(p.returncode, 4)
        self.assertIsNone(json.loads(p.stdout)["chosen"])

    def test_c_unreachable_or_failing(self):
        port = free_port()  # nobody listens there
        for sub in (["status"], ["select", "-n", "1"]):
            p = cluster(*sub, "--prometheus", "http://127.0.0.1:%d" % port)
            self.assertEqual((p.returncode, p.stdout), (1, ""))
            self.assertIn("cannot reach Prometheus at http://127.0.0.1:%d" % port, p.stderr)
        # Prometheus answers an error: its errorType and message are shown.
        srv = http.server.HTTPServer(("127.0.0.1", 0), FakePrometheus)
        t = threading.Thread(target=srv.serve_forever, daemon=True)
        t.start()
        try:
            p = cluster("select", "-n", "1", "--prometheus",
                        "http://127.0.0.1:%d" % srv.server_address[1])
        finally:
            srv.shutdown()
            srv.server_close()
        self.assertEqual(p.returncode, 1)
        self.assertIn("answered an error (HTTP 422, execution): query processing would load too "
                      "many samples", p.stderr)
        # Something that is not Prometheus (a gpumon daemon).
        p = cluster("status", "--prometheus", "http://127.0.0.1:%d" % self.daemons["node-b"].port)
        self.assertEqual(p.returncode, 1)
        self.assertIn("answered HTTP 404", p.stderr)
        # A job nobody scrapes.
        p = cluster("status", "--job", "nobody", "--prometheus", self.url)
        self.assertEqual(p.returncode, 1)
        self.assertIn('has no target in job "nobody"', p.stderr)

    def test_c_usage(self):
        for args, says in ((["select", "--prometheus", self.url], "-n/--count N is required"),
                           (["status"], "GPU_MONITOR_PROMETHEUS_URL"),
                           (["status", "--prometheus", "prom:9090"], "not a Prometheus URL"),
                           (["status", "--format", "text", "--prometheus", self.url], "table or json"),
                           (["select", "--gpus", "0", "--prometheus", self.url], "--gpus"),
                           (["select", "-n", "1", "--max-mem-percent", "101", "--prometheus",
                             self.url], "--max-mem-percent"),
                           (["top"], "unknown subcommand"),
                           ([], "usage: gpumon cluster")):
            p = cluster(*args)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertIn(says, p.stderr)
        p = cluster("--help")
        self.assertEqual(p.returncode, 0)
        self.assertIn("gpumon cluster select", p.stdout)

    def test_d_api_fleet(self):
        a = self.daemons["node-a"].base
        status, cfg = get(a, "/api/config")
        self.assertEqual(cfg["prometheus"], self.url)
        status, doc = get(a, "/api/fleet?gpus=2")
        self.assertEqual(status, 200, doc)
        self.assertEqual(doc["chosen"], "node-b")
        self.assertEqual(doc["prometheus"], self.url)
        self.assertEqual([n["name"] for n in doc["nodes"]], list(NODES))
        self.assertEqual([n["idle_gpu_count"] for n in doc["nodes"]], [1, 2, 0, 2])
        # Gzip'd for a client that takes it (a big fleet's answer is megabytes), the same JSON.
        req = urllib.request.Request(a + "/api/fleet?gpus=2", headers={"Accept-Encoding": "gzip"})
        with urllib.request.urlopen(req, timeout=30) as r:
            self.assertEqual(r.headers["Content-Encoding"], "gzip")
            self.assertIn("Accept-Encoding", r.headers["Vary"])
            zdoc = json.loads(gzip.decompress(r.read()))
        self.assertEqual(zdoc["chosen"], "node-b")
        self.assertEqual(zdoc["nodes"], doc["nodes"])
        status, doc = get(a, "/api/fleet?max_util=10")
        self.assertEqual(doc["thresholds"]["max_util_percent"], 10)
        self.assertEqual(doc["nodes"][3]["idle_gpu_count"], 0)
        self.assertNotIn("chosen", doc)
        # Without --prometheus the view is off.
        status, doc = get(self.daemons["node-b"].base, "/api/fleet")
        self.assertEqual(status, 404)
        self.assertIn("--prometheus", doc["error"])
        status, cfg = get(self.daemons["node-b"].base, "/api/config")
        self.assertIsNone(cfg["prometheus"])

    def test_d_api_fleet_prometheus_down(self):
        # A daemon whose Prometheus is unreachable: 502 naming the cause, still serving.
        with Daemon(["--db", "none", "--prometheus", "http://127.0.0.1:%d" % free_port()]) as d:
            status, doc = get(d.base, "/api/fleet")
            self.assertEqual(status, 502)
            self.assertIn("cannot reach Prometheus", doc["error"])
            self.assertTrue(doc["prometheus"].startswith("http://127.0.0.1:"))
            self.assertEqual(get(d.base, "/api/health")[0], 200)

    def test_z_daemon_dies(self):
        # node-b's daemon dies: once Prometheus sees its target down, node-d is chosen.
        self.daemons["node-b"].stop()

        def choice():
            p = cluster("select", "-n", "2", "--prometheus", self.url)
            return p.stdout.strip() if p.returncode == 0 and p.stdout.strip() != "node-b" else None

        self.assertEqual(self.wait_for(choice, "node-d chosen"), "node-d")
        p = cluster("status", "--format", "json", "--prometheus", self.url)
        b = [n for n in json.loads(p.stdout)["nodes"] if n["name"] == "node-b"][0]
        self.assertFalse(b["up"])
        self.assertIsNone(b["gpu_count"])  # unknown while down, not 0
        p = cluster("select", "-n", "2", "--format", "json", "--prometheus", self.url)
        reasons = {n["name"]: n["reason"] for n in json.loads(p.stdout)["nodes"]}
        self.assertEqual(reasons["node-b"], "its target 127.0.0.1:%d is down"
                         % self.daemons["node-b"].port)
        p = cluster("status", "--prometheus", self.url)
        self.assertIn("node-b: target 127.0.0.1:%d is down" % self.daemons["node-b"].port, p.stdout)
        # The daemon's view follows within its cache time.
        a = self.daemons["node-a"].base
        self.wait_for(lambda: get(a, "/api/fleet?gpus=2")[1].get("chosen") == "node-d",
                      "/api/fleet chooses node-d")
        # No node has 3 idle GPUs now either.
        self.assertEqual(cluster("select", "-n", "3", "--prometheus", self.url).returncode, 4)


if __name__ == "__main__":
    unittest.main()
