"""`gpumon query --connect URL` against a real `gpumon serve` on the fake NVML: the daemon's GPUs
printed exactly as a local query prints the same GPUs (JSON, CSV, the table, -i), and a daemon
that cannot be reached, refuses the token or answers something else said in words with exit
status 1."""
import copy
import json
import os
import shutil
import socket
import sys
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from daemon import Daemon

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from gmtest import FAKE_NVML, env, run  # noqa: E402

SCENARIO = "two_gpus.json"

# What moves between two readings, or is the reader's own (its host, its clock): not compared.
VOLATILE_TOP = {"timestamp", "timestamp_ms", "seq", "system"}
VOLATILE_PROC = {"user", "command", "pod_uid", "container_id", "pod", "namespace", "container"}


def stable(doc):
    d = {k: v for k, v in copy.deepcopy(doc).items() if k not in VOLATILE_TOP}
    for g in d["gpus"]:
        # The daemon watches XID events as it runs; a one-shot query has not watched: null.
        g["health"] = dict(g["health"], xid=None)
        # Processes of the fake NVML are PIDs of no process here: /proc tells nothing either way.
        g["processes"] = [{k: v for k, v in p.items() if k not in VOLATILE_PROC}
                          for p in g["processes"]]
    return d


class QueryConnect(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon(["--interval", "0.2", "--token", "s3cret"], scenario=SCENARIO).start()
        cls.env = env(nvml=FAKE_NVML, scenario=SCENARIO)

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()
        shutil.rmtree(cls.d.tmp, ignore_errors=True)

    def remote(self, args, token="s3cret", url=None):
        extra = ["--token", token] if token else []
        return run(["query", "--connect", url or self.d.base] + extra + list(args), env=self.env)

    def local(self, args):
        return run(["query"] + list(args), env=self.env)

    def test_json_is_a_local_querys(self):
        r = self.remote(["--format", "json"])
        self.assertEqual(r.returncode, 0, r.stderr)
        l = self.local(["--format", "json"])
        self.assertEqual(l.returncode, 0, l.stderr)
        rd, ld = json.loads(r.stdout), json.loads(l.stdout)
        self.assertEqual(rd["gpu_count"], 2)
        self.assertEqual(stable(rd), stable(ld))
        # The daemon's host: its name and memory, not nulls.
        self.assertEqual(rd["system"]["hostname"], ld["system"]["hostname"])
        self.assertEqual(rd["system"]["memory"]["total_bytes"], ld["system"]["memory"]["total_bytes"])
        self.assertEqual(rd["gpus"][0]["processes"][0]["pid"], 4242)
        self.assertEqual(rd["gpus"][0]["health"]["xid"], {"last": 0, "count": 0, "last_time": None})
        # gpustat's --json, and -i by UUID: one GPU.
        r = self.remote(["--json", "-i", "GPU-5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c51"])
        self.assertEqual(r.returncode, 0, r.stderr)
        one = json.loads(r.stdout)
        self.assertEqual([g["index"] for g in one["gpus"]], [1])
        self.assertEqual(one["gpu_count"], 1)

    def test_csv_and_query_gpu(self):
        fields = ("index,name,uuid,pci.bus_id,memory.total,memory.used,power.draw,power.limit,"
                  "temperature.gpu,utilization.gpu,pstate,clocks.max.sm,pcie.link.gen.current")
        for args in (["--format", "csv"], ["--query-gpu", fields],
                     ["--query-gpu", fields, "--format", "csv,noheader,nounits", "-i", "1"],
                     ["--format", "csv", "-i", "2A:00.0"]):
            with self.subTest(args=args):
                r, l = self.remote(args), self.local(args)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(l.returncode, 0, l.stderr)
                self.assertEqual(r.stdout, l.stdout)

    def test_table_is_a_local_querys(self):
        r, l = self.remote(["--color", "never"]), self.local(["--color", "never"])
        self.assertEqual(r.returncode, 0, r.stderr)
        rl, ll = r.stdout.splitlines(), l.stdout.splitlines()
        self.assertEqual(len(rl), len(ll), r.stdout)
        # Title: host, time (its own second), driver, CUDA, provider.
        self.assertEqual(rl[0].split()[0], ll[0].split()[0])
        self.assertEqual(rl[0].split()[3:], ll[0].split()[3:])
        self.assertIn("provider nvml", rl[0])
        # The GPU and process rows, the same; the host line has the daemon's host.
        self.assertEqual(rl[1:-1], ll[1:-1])
        self.assertTrue(rl[-1].startswith("host "), rl[-1])
        self.assertRegex(r.stdout, r"0   NVIDIA H100 80GB HBM3 +64C +87% +40960 / 81559 +512 / 700")

    def test_unknown_id_is_a_usage_error(self):
        r = self.remote(["-i", "7"])
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr, 'gpumon query: no GPU matches "7" (have 2 GPUs)\n')
        self.assertEqual(r.stdout, "")

    def test_token_refused(self):
        r = self.remote([], token=None)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, "gpumon query: %s answered 401: give its token with --token or "
                                   "GPU_MONITOR_TOKEN\n" % self.d.base)
        r = self.remote([], token="wrong")
        self.assertEqual(r.returncode, 1)
        self.assertIn("answered 401", r.stderr)
        # The token from the environment, and a URL without its scheme.
        r = run(["query", "--connect", self.d.base.replace("http://", ""), "--format", "csv"],
                env=dict(self.env, GPU_MONITOR_TOKEN="s3cret"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(r.stdout.splitlines()), 3)

    def test_usage(self):
        for args, msg in ((["--connect", self.d.base, "--simulate", "2"],
                           "--connect reads the daemon's GPUs"),
                          (["--token", "x"], "--token is for --connect"),
                          (["--connect", "ftp://h"], "only http:// and https:// URLs")):
            with self.subTest(args=args):
                p = run(["query"] + args, env=self.env)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(msg, p.stderr)


class Answer(BaseHTTPRequestHandler):
    body = b""
    status = 200

    def do_GET(self):
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


class QueryConnectFailures(unittest.TestCase):
    def serve(self, body, status=200):
        handler = type("H", (Answer,), {"body": body, "status": status})
        srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        return "http://127.0.0.1:%d" % srv.server_address[1]

    def test_nothing_listening(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        p = run(["query", "--connect", "127.0.0.1:%d" % port], env=env())
        self.assertEqual(p.returncode, 1)
        self.assertRegex(p.stderr, r"^gpumon query: http://127\.0\.0\.1:%d: (Couldn't|Could not) "
                                   r"connect to server\n$" % port)
        self.assertEqual(p.stdout, "")

    def test_not_its_api(self):
        for body, status, msg in ((b"<html>hello</html>", 200, "/api/gpus is not JSON"),
                                  (b'{"gpus": 3}', 200, "/api/gpus is not the JSON expected"),
                                  (b'{"error": "no"}', 404, "answered 404 to GET /api/gpus")):
            with self.subTest(body=body):
                url = self.serve(body, status)
                p = run(["query", "--connect", url], env=env())
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertTrue(p.stderr.startswith("gpumon query: %s" % url), p.stderr)
                self.assertIn(msg, p.stderr)
                self.assertEqual(p.stdout, "")


if __name__ == "__main__":
    unittest.main()
