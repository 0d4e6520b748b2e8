"""The fleet on a real Prometheus (Debian's prometheus 2.42, on loopback): three `gpumon serve`
daemons with different --hostname and loads, scraped as job "gpumon" with
deploy/prometheus's rules; the recording rules count each node's idle GPUs; a daemon that
dies shows as down; every PromQL expression of deploy/grafana's dashboard evaluates."""
import copy
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

from daemon import Daemon

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from gmtest import FIXTURES, scenario_file  # noqa: E402

PROMETHEUS = shutil.which("prometheus")
ROOT = os.environ.get("GM_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")

with open(os.path.join(FIXTURES, "nvml", "two_gpus.json")) as f:
    BASE = json.load(f)


def scenario(busy):
    """two_gpus.json with GPU i busy (util 87 %, half the memory) or idle (3 %, 1 MiB)."""
    s = copy.deepcopy(BASE)
    for g, b in zip(s["gpus"], busy):
        if b:
            g.update(util_gpu=87, mem_used=g["mem_total"] // 2 + (1 << 30),
                     mem_free=g["mem_total"] // 2 - (1 << 30) - g["mem_reserved"])
        else:
            g.update(util_gpu=3, mem_used=1 << 20, mem_free=g["mem_total"] - (1 << 20) - g["mem_reserved"])
    return scenario_file(s)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@unittest.skipUnless(PROMETHEUS, "prometheus (Debian package) is not installed")
class Fleet(unittest.TestCase):
    NODES = {"node-a": (True, False), "node-b": (False, False), "node-c": (True, True)}

    @classmethod
    def setUpClass(cls):
        cls.scenarios, cls.daemons = [], {}
        for name, busy in cls.NODES.items():
            scen = scenario(busy)
            cls.scenarios.append(scen)
            cls.daemons[name] = Daemon(["--hostname", name, "--db", "none"], scenario=scen).start()
        cls.tmp = tempfile.mkdtemp(prefix="gpumon-prom-")
        rules = os.path.join(ROOT, "deploy", "prometheus")
        targets = ", ".join('"127.0.0.1:%d"' % d.port for d in cls.daemons.values())
        cfg = """
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - %s/gpumon-recording.yml
  - %s/gpumon-alerts.yml
scrape_configs:
  - job_name: gpumon
    scrape_interval: 1s
    scrape_timeout: 1s
    static_configs:
      - targets: [%s]
""" % (rules, rules, targets)
        path = os.path.join(cls.tmp, "prometheus.yml")
        with open(path, "w") as f:
            f.write(cfg)
        cls.port = free_port()
        cls.prom = subprocess.Popen(
            [PROMETHEUS, "--config.file=" + path, "--storage.tsdb.path=" + os.path.join(cls.tmp, "data"),
             "--web.listen-address=127.0.0.1:%d" % cls.port, "--log.level=warn"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(cls.tmp, "prometheus.log"), "w"))
        cls.url = "http://127.0.0.1:%d" % cls.port

    @classmethod
    def tearDownClass(cls):
        cls.prom.terminate()
        cls.prom.wait(timeout=20)
        for d in cls.daemons.values():
            d.stop()
        for s in cls.scenarios:
            os.unlink(s)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def query(self, expr):
        u = self.url + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(u, timeout=5) as r:
            doc = json.load(r)
        self.assertEqual(doc["status"], "success", doc)
        return doc["data"]["result"]

    def by_host(self, expr):
        return {r["metric"].get("Hostname"): float(r["value"][1]) for r in self.query(expr)}

    def wait(self, predicate, timeout=30):
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            try:
                last = predicate()
                if last:
                    return last
            except OSError:
                pass
            time.sleep(0.25)
        self.fail("not reached in %ss (last: %r)" % (timeout, last))

    def test_fleet(self):
        # Every node scraped, under its own name.
        self.wait(lambda: len(self.query('up{job="gpumon"} == 1')) == 3)
        gpus = self.wait(lambda: (lambda v: v if len(v) == 3 else None)(
            self.by_host("Hostname:gpumon_gpus:count")))
        self.assertEqual(gpus, {"node-a": 2, "node-b": 2, "node-c": 2})
        idle = self.wait(lambda: (lambda v: v if len(v) == 3 else None)(
            self.by_host("Hostname:gpumon_gpus_idle:count")))
        self.assertEqual(idle, {"node-a": 1, "node-b": 2, "node-c": 0})
        hottest = self.by_host("Hostname:gpumon_gpu_temp:max")
        self.assertEqual(hottest["node-a"], 64)

        # Every expression of the Grafana dashboard evaluates, its variables at "all".
        with open(os.path.join(ROOT, "deploy", "grafana", "gpumon-dashboard.json")) as f:
            dash = json.load(f)
        exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
        self.assertTrue(exprs)
        core = 0
        for e in exprs:
            with self.subTest(expr=e):
                res = self.query(re.sub(r"\$[A-Za-z]+", ".*", e))
                core += bool(res)
        self.assertGreaterEqual(core, 10)  # all but the health panels, absent on a clean GPU
        for q in ("label_values(DCGM_FI_DEV_GPU_TEMP, Hostname)",):
            label = q[q.rindex(",") + 1:-1].strip()
            u = self.url + "/api/v1/label/%s/values" % label
            with urllib.request.urlopen(u, timeout=5) as r:
                self.assertEqual(sorted(json.load(r)["data"]), ["node-a", "node-b", "node-c"])

        # A daemon that dies: its target goes down, the others stay up.
        self.daemons["node-c"].stop()
        down = self.wait(lambda: self.query('up{job="gpumon"} == 0'))
        self.assertEqual(len(down), 1)
        self.assertEqual(down[0]["metric"]["instance"],
                         "127.0.0.1:%d" % self.daemons["node-c"].port)


if __name__ == "__main__":
    unittest.main()
