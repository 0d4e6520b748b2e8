"""`gpumon serve` monitoring sessions and GPU allocation over REST: every status of
POST/GET/DELETE /api/sessions, statistics checked against the fake NVML's per-read values,
persistence across a daemon killed with SIGKILL, the token and the loopback rule, and
GET /api/allocation with real lease files."""
import fcntl
import json
import math
import os
import shutil
import signal
import csv
import io
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

from daemon import Daemon

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from gmtest import FAKE_NVML, GPUMON, env, scenario_file  # noqa: E402

GIB = 1 << 30
MIB = 1 << 20
N = 100  # length of the per-read arrays: read k of GPU 0 sees element k % N

# GPU 0: every metric a function of the read number u = k % N, so each timeline row can be
# checked on its own and consecutive rows show which reads the session took. GPU 1: constant,
# without power and energy (absent, never 0).
SCENARIO = {
    "gpus": [
        {
            "name": "NVIDIA H100 80GB HBM3",
            "uuid": "GPU-5e550000-0000-0000-0000-000000000000",
            "util_gpu": list(range(N)),
            "util_mem": 5,
            "mem_total": 80 * GIB,
            "mem_used": [(u % 10 + 1) * GIB for u in range(N)],
            "mem_free": [80 * GIB - (u % 10 + 1) * GIB for u in range(N)],
            "temp": [50 + u % 7 for u in range(N)],
            "power_mw": [100000 + 1000 * u for u in range(N)],
            "energy_mj": [1000000 + 10000 * u for u in range(N)],
        },
        {
            "name": "NVIDIA H100 80GB HBM3",
            "uuid": "GPU-5e550000-0000-0000-0000-000000000001",
            "util_gpu": 3,
            "util_mem": 1,
            "mem_total": 80 * GIB,
            "mem_used": 2 * GIB,
            "mem_free": 78 * GIB,
            "temp": 31,
            "unsupported": ["power", "energy"],
        },
    ]
}

METRICS = ("utilization", "memory_used_mb", "memory_usage_percent", "temperature_c", "power_draw_w")


def percentile(values, p):
    """numpy's default (linear) percentile, as the daemon documents."""
    s = sorted(values)
    h = (len(s) - 1) * p / 100.0
    lo = math.floor(h)
    if lo >= len(s) - 1:
        return s[-1]
    return s[lo] + (h - lo) * (s[lo + 1] - s[lo])


def expected_gpu0(u):
    """The metrics of GPU 0 at read u, in the session's units."""
    used = (u % 10 + 1) * GIB
    return {"utilization": float(u), "memory_used_mb": used / MIB,
            "memory_usage_percent": used / (80 * GIB) * 100, "temperature_c": 50.0 + u % 7,
            "power_draw_w": 100.0 + u}


def nonloopback_ipv4():
    """An IPv4 address of this host that is not loopback, or None."""
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the route's source
        addr = s.getsockname()[0]
        s.close()
    except OSError:
        return None
    return None if addr.startswith("127.") else addr


class Base(unittest.TestCase):
    """A daemon at 100 ms on the scenario above, with a store in a temporary directory."""

    args = ()

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gpumon-sessions-")
        cls.db = os.path.join(cls.tmp, "state", "gpumon.db")
        cls.scenario = scenario_file(SCENARIO)
        cls.d = Daemon(["--poll-interval", "100", "--db", cls.db] + list(cls.args),
                       scenario=cls.scenario).start()

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        os.unlink(cls.scenario)
        shutil.rmtree(cls.tmp, ignore_errors=True)
        assert rc == 0, "exit %s: %s" % (rc, cls.d.log())

    def create(self, obj=None, expect=201, **kw):
        status, hdrs, doc = self.d.call("/api/sessions", "POST", obj=obj, **kw)
        self.assertEqual(status, expect, doc)
        if status == 201:
            self.assertEqual(hdrs.get("location"), "/api/sessions/" + doc["id"])
        return doc

    def get(self, sid, query="", expect=200):
        status, _, doc = self.d.call("/api/sessions/%s%s" % (sid, query))
        self.assertEqual(status, expect, doc)
        return doc

    def wait_samples(self, sid, n):
        return self.d.wait_for(lambda: self.get(sid, "?timeline=0")["sample_count"] >= n and True,
                               timeout=30)

    def delete(self, sid, expect=204):
        status, _, body = self.d.call("/api/sessions/" + sid, "DELETE")
        self.assertEqual(status, expect, body)


class Create(Base):
    def test_without_body_follows_every_gpu(self):
        doc = self.create()
        self.assertRegex(doc["id"], r"^\d{8}-\d{6}-[0-9a-f]{6}$")
        self.assertEqual(doc["session_id"], doc["id"])
        self.assertEqual(doc["kind"], "session")
        self.assertEqual(doc["status"], "running")
        self.assertIsNone(doc["label"])
        self.assertEqual([g["index"] for g in doc["gpus"]], [0, 1])
        self.assertAlmostEqual(doc["interval_seconds"], 0.1)
        self.assertIn(doc["sample_count"], (0, 1))
        self.assertIsNone(doc["ended_at"])
        self.assertEqual(set(doc["gpu_stats"]), {"0", "1"})
        self.delete(doc["id"])

    def test_with_fields(self):
        doc = self.create({"gpus": [1], "interval": 0.3, "label": "bench A"})
        self.assertEqual([g["index"] for g in doc["gpus"]], [1])
        self.assertAlmostEqual(doc["interval_seconds"], 0.3)
        self.assertEqual(doc["label"], "bench A")
        self.assertEqual(list(doc["gpu_stats"]), ["1"])
        # An empty JSON object and explicit nulls are the defaults.
        d2 = self.create({"gpus": None, "interval": None, "label": None})
        self.assertEqual([g["index"] for g in d2["gpus"]], [0, 1])
        d3 = self.create(raw=b"{}")
        self.assertAlmostEqual(d3["interval_seconds"], 0.1)
        # Expect: 100-continue is answered (curl would otherwise wait a second).
        d4 = self.create({"label": "x" * 100}, headers=["Expect: 100-continue"])
        self.assertEqual(d4["label"], "x" * 100)
        for d in (doc, d2, d3, d4):
            self.delete(d["id"])

    def test_bad_bodies(self):
        cases = [
            (b"{bad", "application/json", 400, "not valid JSON"),
            (b"[0, 1]", "application/json", 400, "JSON object"),
            (b'{"gpus": "0"}', "application/json", 400, '"gpus" must be an array'),
            (b'{"gpus": [0, "1"]}', "application/json", 400, '"gpus"[1] is not a GPU index'),
            (b'{"gpus": [7]}', "application/json", 400, "no GPU with index 7 (GPUs: 0, 1)"),
            (b'{"interval": "1"}', "application/json", 400, '"interval" must be a number'),
            (b'{"interval": 0.05}', "application/json", 400, "from 0.1 (the poll interval"),
            (b'{"label": 1}', "application/json", 400, '"label" must be a string'),
            (b'{"gpu": [0]}', "application/json", 400, 'unknown field "gpu"'),
            (b'{"label": "a"}', "text/plain", 415, "application/json"),
            (b'{"label": "a"}', None, 415, "application/json"),
            (b'{"label": "' + b"a" * 70000 + b'"}', "application/json", 413, "65536"),
        ]
        for raw, ctype, status, needle in cases:
            with self.subTest(body=raw[:40], ctype=ctype):
                st, hdrs, doc = self.d.call("/api/sessions", "POST", raw=raw, content_type=ctype)
                self.assertEqual(st, status, doc)
                self.assertIn(needle, doc["error"])
        # The application/json type may carry parameters.
        d = self.create(raw=b"{}", content_type="application/json; charset=utf-8")
        self.delete(d["id"])
        # Chunked bodies are refused (lws 4.1 cannot bound them by their length).
        with socket.create_connection(("127.0.0.1", self.d.port), timeout=5) as s:
            s.sendall(b"POST /api/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
            self.assertTrue(s.recv(4096).startswith(b"HTTP/1.1 411 "))
        # Nothing was created by any of them.
        self.assertEqual(self.d.call("/api/sessions")[2]["running"], 0)

    def test_running_cap(self):
        ids = [self.create({"gpus": [1], "interval": 10})["id"] for _ in range(16)]
        status, _, doc = self.d.call("/api/sessions", "POST", obj={})
        self.assertEqual(status, 409)
        self.assertIn("16 sessions are already running", doc["error"])
        self.delete(ids.pop())
        ids.append(self.create({"gpus": [1], "interval": 10})["id"])
        for sid in ids:
            self.delete(sid)


class Lifecycle(Base):
    def test_stop_returns_exact_statistics(self):
        doc = self.create({"label": "exact"})
        sid = doc["id"]
        self.wait_samples(sid, 12)
        status, _, stats = self.d.call("/api/sessions/%s/stop" % sid, "POST")
        self.assertEqual(status, 200, stats)
        self.assertEqual(stats["status"], "stopped")
        self.assertEqual(stats["stop_reason"], "request")
        self.assertIsNotNone(stats["ended_at"])
        self.assertTrue(stats["persisted"])
        self.assertEqual(stats["samples_dropped"], 0)
        # Stopping twice is a conflict, not a second set of numbers.
        status, _, again = self.d.call("/api/sessions/%s/stop" % sid, "POST")
        self.assertEqual(status, 409)
        self.assertIn("not running", again["error"])

        full = self.get(sid)  # now read back from the store
        tl = full["timeline"]
        n = stats["sample_count"]
        self.assertGreaterEqual(n, 12)
        self.assertEqual(len(tl), n)
        self.assertEqual(full["sample_count"], n)
        self.assertEqual(full["gpu_stats"], stats["gpu_stats"])

        # Each row is one sampling pass of the fake (every metric agrees with its read number)
        # and consecutive rows are consecutive passes: nothing skipped, nothing doubled.
        reads = []
        for row in tl:
            g0 = row["gpus"]["0"]
            u = int(g0["utilization"])
            reads.append(u)
            for k, v in expected_gpu0(u).items():
                self.assertAlmostEqual(g0[k], v, places=6, msg="%s at read %d" % (k, u))
            g1 = row["gpus"]["1"]
            self.assertEqual(g1["utilization"], 3.0)
            self.assertEqual(g1["memory_used_mb"], 2048.0)
            self.assertIsNone(g1["power_draw_w"])
            # The daemon reads the energy counter only every slow period (10 s), so sessions
            # leave it out rather than count a cached reading.
            self.assertIsNone(g0["energy_counter_j"])
            self.assertIsNone(g1["energy_counter_j"])
        for a, b in zip(reads, reads[1:]):
            self.assertEqual(b, (a + 1) % N, reads)
        ts = [row["t"] for row in tl]
        self.assertEqual(ts, sorted(ts))
        self.assertGreater(ts[0], 0)
        self.assertLessEqual(ts[-1], stats["monitoring_duration_seconds"])

        # The statistics, by hand from the timeline.
        for gpu in ("0", "1"):
            for m in METRICS:
                vals = [row["gpus"][gpu][m] for row in tl if row["gpus"][gpu][m] is not None]
                block = stats["gpu_stats"][gpu][m]
                if not vals:
                    self.assertIsNone(block, (gpu, m))
                    continue
                self.assertEqual(block["count"], len(vals))
                self.assertAlmostEqual(block["min"], min(vals), places=6)
                self.assertAlmostEqual(block["max"], max(vals), places=6)
                self.assertAlmostEqual(block["mean"], sum(vals) / len(vals), places=6)
                self.assertAlmostEqual(block["p50"], percentile(vals, 50), places=6)
                self.assertAlmostEqual(block["p95"], percentile(vals, 95), places=6)
        self.assertEqual(stats["gpu_stats"]["0"]["utilization"]["samples"], n)
        # Energy integrated from power draw (trapezoids between consecutive samples). GPU 1 has
        # no power at all, so no energy, and neither has the session as a whole.
        pw = [(row["t"], row["gpus"]["0"]["power_draw_w"]) for row in tl]
        want = sum((p0 + p1) / 2 * (t1 - t0) for (t0, p0), (t1, p1) in zip(pw, pw[1:]))
        self.assertEqual(stats["gpu_stats"]["0"]["energy_source"], "power_integration")
        self.assertAlmostEqual(stats["gpu_stats"]["0"]["energy_j"], want, places=6)
        self.assertIsNone(stats["gpu_stats"]["1"]["energy_j"])
        self.assertIsNone(stats["energy_j"])
        self.assertEqual(stats["gpu_stats"]["0"]["name"], "NVIDIA H100 80GB HBM3")
        self.assertEqual(stats["gpus"][1]["uuid"], "GPU-5e550000-0000-0000-0000-000000000001")

        # Listed as stopped with the same count; ?timeline=0 leaves the timeline out.
        row = [s for s in self.d.call("/api/sessions")[2]["sessions"] if s["id"] == sid][0]
        self.assertEqual((row["status"], row["sample_count"], row["label"]), ("stopped", n, "exact"))
        self.assertNotIn("timeline", self.get(sid, "?timeline=0"))
        self.delete(sid)

    def test_interval_decimates(self):
        doc = self.create({"gpus": [0], "interval": 0.2})
        sid = doc["id"]
        self.wait_samples(sid, 8)
        tl = self.get(sid)["timeline"]
        reads = [int(r["gpus"]["0"]["utilization"]) for r in tl]
        steps = [(b - a) % N for a, b in zip(reads, reads[1:])]
        # Every second pass, by time (half a period of slack): a pass late by that much (a
        # loaded machine under ASan) is taken one read after the last and the next one read
        # later, so steps of one and three occur; the spacing in time below never shrinks.
        self.assertTrue(all(s in (1, 2, 3) for s in steps), steps)
        self.assertGreaterEqual(steps.count(2), len(steps) // 2, steps)
        self.assertTrue(all(b - a >= 0.15 for a, b in zip([r["t"] for r in tl], [r["t"] for r in tl][1:])))
        self.assertEqual(list(tl[0]["gpus"]), ["0"])
        self.delete(sid)

    def test_running_session_reads_live(self):
        sid = self.create({"gpus": [0]})["id"]
        self.wait_samples(sid, 3)
        doc = self.get(sid)
        self.assertEqual(doc["status"], "running")
        self.assertEqual(len(doc["timeline"]), doc["sample_count"])
        self.assertIsNone(doc["ended_at"])
        status, hdrs, body = self.d.request("/api/sessions/" + sid, method="HEAD")
        self.assertEqual((status, body), (200, b""))
        self.assertGreater(int(hdrs["content-length"]), 0)
        # DELETE stops and removes it, from memory and from the store.
        self.delete(sid)
        self.get(sid, expect=404)
        self.assertNotIn(sid, [s["id"] for s in self.d.call("/api/sessions")[2]["sessions"]])
        with sqlite3.connect(self.db) as db:
            self.assertEqual(db.execute("SELECT count(*) FROM sessions WHERE id = ?", (sid,)).fetchone()[0], 0)
            self.assertEqual(db.execute("SELECT count(*) FROM samples WHERE session_id = ?", (sid,)).fetchone()[0], 0)

    def test_not_found_and_methods(self):
        for method, path in (("GET", "/api/sessions/20200101-000000-000000"),
                             ("POST", "/api/sessions/20200101-000000-000000/stop"),
                             ("DELETE", "/api/sessions/20200101-000000-000000"),
                             ("GET", "/api/sessions/bad$id"),
                             ("GET", "/api/sessions/x/y")):
            with self.subTest(method=method, path=path):
                status, _, doc = self.d.call(path, method)
                self.assertEqual(status, 404)
                self.assertIn("error", doc)
        sid = self.create({"gpus": [1]})["id"]
        status, hdrs, _ = self.d.call("/api/sessions/%s/stop" % sid)
        self.assertEqual((status, hdrs.get("allow")), (405, "POST, OPTIONS"))
        status, hdrs, _ = self.d.call("/api/sessions/" + sid, "POST", obj={})
        self.assertEqual(status, 405)
        self.assertEqual(hdrs.get("allow"), "GET, HEAD, DELETE, OPTIONS")
        status, hdrs, _ = self.d.call("/api/sessions", "DELETE")
        self.assertEqual(status, 405)
        for q in ("?timeline=maybe", "?nope=1"):
            self.assertEqual(self.d.call("/api/sessions/%s%s" % (sid, q))[0], 400, q)
        for q in ("?limit=0", "?limit=1001", "?limit=x", "?kind=BAD", "?nope=1"):
            self.assertEqual(self.d.call("/api/sessions" + q)[0], 400, q)
        self.delete(sid)
        self.delete(sid, expect=404)

    def test_list(self):
        a = self.create({"gpus": [1], "label": "first"})["id"]
        time.sleep(0.02)
        b = self.create({"gpus": [1], "label": "second"})["id"]
        self.wait_samples(b, 2)
        self.d.call("/api/sessions/%s/stop" % a, "POST")
        doc = self.d.call("/api/sessions")[2]
        self.assertEqual(doc["max_running"], 16)
        self.assertTrue(doc["stored"])
        self.assertIsNone(doc["store_error"])
        rows = {s["id"]: s for s in doc["sessions"]}
        self.assertEqual(rows[a]["status"], "stopped")
        self.assertEqual(rows[b]["status"], "running")
        self.assertEqual(rows[b]["label"], "second")
        self.assertGreaterEqual(rows[b]["sample_count"], 2)
        self.assertGreater(rows[b]["monitoring_duration_seconds"], 0)
        for key in ("kind", "started_at", "persisted"):
            self.assertIn(key, rows[a])
        ids = [s["id"] for s in doc["sessions"]]
        self.assertLess(ids.index(b), ids.index(a))  # newest first
        self.assertEqual(len(self.d.call("/api/sessions?limit=1")[2]["sessions"]), 1)
        self.assertEqual(self.d.call("/api/sessions?kind=record")[2]["sessions"], [])
        status, _, body = self.d.request("/api/sessions", method="HEAD")
        self.assertEqual((status, body), (200, b""))
        self.delete(a)
        self.delete(b)


class Store(Base):
    """What the daemon leaves in the store: deletions through the store's own call, bounded
    sessions' fields and exports, and metadata of an interrupted `gpumon record`."""

    def rows(self, sid):
        with sqlite3.connect(self.db) as db:
            return (db.execute("SELECT count(*) FROM sessions WHERE id = ?", (sid,)).fetchone()[0],
                    db.execute("SELECT count(*) FROM samples WHERE session_id = ?", (sid,)).fetchone()[0])

    def history(self, *args):
        p = subprocess.run([GPUMON, "history", "--db", self.db] + list(args), capture_output=True,
                           text=True, timeout=30, env=env())
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def test_delete_stopped_session_removes_its_rows(self):
        sid = self.create({"gpus": [1]})["id"]
        self.wait_samples(sid, 3)
        n = self.d.call("/api/sessions/%s/stop" % sid, "POST")[2]["sample_count"]
        self.assertEqual(self.rows(sid), (1, n))
        self.delete(sid)
        self.assertEqual(self.rows(sid), (0, 0))
        self.get(sid, expect=404)
        self.delete(sid, expect=404)

    def test_every_sample_counted_and_exported(self):
        sid = self.create({"label": "export me"})["id"]
        self.wait_samples(sid, 5)
        live = self.get(sid, "?timeline=0")
        # Under the in-memory bound: percentiles cover every sample, the timeline is whole.
        self.assertFalse(live["timeline_truncated"])
        self.assertEqual(live["percentiles_over_samples"], live["sample_count"])
        self.assertNotIn("stop_reason", live)
        stats = self.d.call("/api/sessions/%s/stop" % sid, "POST")[2]
        n = stats["sample_count"]
        self.assertEqual(stats["percentiles_over_samples"], n)
        self.assertFalse(stats["timeline_truncated"])
        # `gpumon history export` has every stored sample, one CSV row per sample per GPU.
        rows = list(csv.DictReader(io.StringIO(self.history("export", sid, "--format", "csv"))))
        self.assertEqual(len(rows), 2 * n)
        self.assertEqual(sorted({r["gpu"] for r in rows}), ["0", "1"])
        doc = json.loads(self.history("export", sid, "--format", "json"))
        self.assertEqual(len(doc["timeline"]), n)
        self.assertEqual(doc["sample_count"], n)
        self.assertEqual(doc["stop_reason"], "request")
        self.delete(sid)

    def test_list_says_what_each_run_measured(self):
        # What the dashboard's Sessions table shows, for a session of this daemon (memory), a
        # stopped one (its stored document) and a `gpumon record` run (another process).
        sid = self.create({"label": "brief"})["id"]
        self.wait_samples(sid, 4)
        live = {r["id"]: r for r in self.d.call("/api/sessions")[2]["sessions"]}[sid]
        self.assertEqual([g["index"] for g in live["gpus"]], [0, 1])
        self.assertEqual(live["provider"], "nvml")
        self.assertIsNone(live["command"])
        self.assertIsNotNone(live["utilization_max"])
        doc = self.d.call("/api/sessions/%s/stop" % sid, "POST")[2]
        rec = subprocess.run([GPUMON, "record", "--db", self.db, "--interval", "0.1", "-q", "--label",
                              "brief-record", "--", "sleep", "0.4"],
                             env=env(nvml=FAKE_NVML, scenario=self.scenario), capture_output=True,
                             text=True, timeout=30)
        self.assertEqual(rec.returncode, 0, rec.stderr)
        rows = {r["label"]: r for r in self.d.call("/api/sessions")[2]["sessions"]}
        for label, want in (("brief", doc), ("brief-record", None)):
            row = rows[label]
            if want is None:
                want = self.get(row["id"], "?timeline=0")
            stats = [g["utilization"] for g in want["gpu_stats"].values()]
            mean = sum(u["mean"] * u["count"] for u in stats) / sum(u["count"] for u in stats)
            self.assertAlmostEqual(row["utilization_mean"], mean, places=6)
            self.assertEqual(row["utilization_max"], max(u["max"] for u in stats))
            # GPU 1 reports no power: the run's energy is unknown, never 0.
            self.assertIsNone(row["energy_j"])
            self.assertEqual(row["gpus"], [{"index": g["index"], "name": g["name"]}
                                           for g in want["gpus"]])
            self.assertEqual(row["provider"], "nvml")
        self.assertEqual(rows["brief-record"]["command"], "sleep 0.4")
        self.delete(sid)
        self.delete(rows["brief-record"]["id"])

    def test_export_is_what_history_export_writes(self):
        sid = self.create({"label": "export via API"})["id"]
        self.wait_samples(sid, 4)
        self.d.call("/api/sessions/%s/stop" % sid, "POST")
        status, hdrs, body = self.d.request("/api/sessions/%s/export?format=csv" % sid)
        self.assertEqual(status, 200, body)
        self.assertEqual(hdrs["content-type"], "text/csv; charset=utf-8")
        self.assertEqual(hdrs["content-disposition"],
                         'attachment; filename="gpumon-%s.csv"' % sid)
        self.assertEqual(body.decode(), self.history("export", sid, "--format", "csv"))
        status, hdrs, body = self.d.request("/api/sessions/%s/export" % sid)
        self.assertEqual(status, 200, body)
        self.assertEqual(hdrs["content-disposition"],
                         'attachment; filename="gpumon-%s.json"' % sid)
        got = json.loads(body)
        want = json.loads(self.history("export", sid, "--format", "json"))
        self.assertEqual(len(got["timeline"]), got["sample_count"])
        for doc in (got, want):  # the API's own words for these two
            doc.pop("status")
            doc.pop("persisted", None)
        self.assertEqual(got, want)
        self.assertEqual(self.d.request("/api/sessions/20200101-000000-000000/export")[0], 404)
        self.assertEqual(self.d.request("/api/sessions/%s/export?format=xml" % sid)[0], 400)
        self.assertEqual(self.d.request("/api/sessions/%s/export" % sid, method="DELETE")[0], 405)
        self.delete(sid)

    def test_interrupted_record_keeps_provider_hostname_driver(self):
        # A `gpumon record` killed with SIGKILL never writes its end: what it knew at its start
        # must still be in the store.
        proc = subprocess.Popen([GPUMON, "record", "--db", self.db, "--interval", "0.1", "-q", "--label", "killed",
                                 "--", "sh", "-c", "echo $$; exec sleep 30"],
                                env=env(nvml=FAKE_NVML, scenario=self.scenario),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        child = int(proc.stdout.readline())
        try:
            def recorded():
                rows = [r for r in self.d.call("/api/sessions?kind=record")[2]["sessions"]
                        if r["label"] == "killed"]
                return rows[0] if rows and rows[0]["sample_count"] >= 2 else None
            row = self.d.wait_for(recorded, timeout=30)
            proc.kill()
            proc.wait(timeout=10)
        finally:
            os.kill(child, signal.SIGKILL)
            proc.stdout.close()
            proc.stderr.close()
        doc = self.get(row["id"], "?timeline=0")
        self.assertEqual(doc["status"], "interrupted")
        self.assertEqual(doc["provider"], "nvml")
        self.assertEqual(doc["driver_version"], "550.54.15")
        self.assertEqual(doc["hostname"], socket.gethostname())
        self.assertEqual(doc["command"], ["sh", "-c", "echo $$; exec sleep 30"])
        self.assertGreaterEqual(doc["sample_count"], 2)
        # The same through `gpumon history`, which reads the store itself.
        exported = json.loads(self.history("export", row["id"], "--format", "json"))
        self.assertEqual((exported["provider"], exported["hostname"]), ("nvml", socket.gethostname()))
        self.delete(row["id"])
        self.assertEqual(self.rows(row["id"]), (0, 0))


class Persistence(unittest.TestCase):
    def test_killed_daemon_leaves_an_interrupted_session(self):
        tmp = tempfile.mkdtemp(prefix="gpumon-sessions-")
        db = os.path.join(tmp, "gpumon.db")
        scen = scenario_file(SCENARIO)
        try:
            d = Daemon(["--poll-interval", "100", "--db", db], scenario=scen).start()
            status, _, doc = d.call("/api/sessions", "POST", obj={"label": "crash"})
            self.assertEqual(status, 201, doc)
            sid = doc["id"]
            d.wait_for(lambda: d.call("/api/sessions/%s?timeline=0" % sid)[2]["sample_count"] >= 5,
                       timeout=30)
            seen = d.call("/api/sessions/%s?timeline=0" % sid)[2]["sample_count"]
            # A clean stop elsewhere in the same store must survive too.
            other = d.call("/api/sessions", "POST", obj={"gpus": [1]})[2]["id"]
            d.wait_for(lambda: d.call("/api/sessions/%s?timeline=0" % other)[2]["sample_count"] >= 1)
            self.assertEqual(d.call("/api/sessions/%s/stop" % other, "POST")[0], 200)
            d.stop(sig=signal.SIGKILL)

            d2 = Daemon(["--poll-interval", "100", "--db", db], scenario=scen).start()
            try:
                rows = {s["id"]: s for s in d2.call("/api/sessions")[2]["sessions"]}
                self.assertEqual(rows[sid]["status"], "interrupted")
                self.assertEqual(rows[sid]["label"], "crash")
                self.assertGreaterEqual(rows[sid]["sample_count"], seen)
                self.assertEqual(rows[other]["status"], "stopped")
                full = d2.call("/api/sessions/" + sid)[2]
                self.assertEqual(full["status"], "interrupted")
                self.assertEqual(len(full["timeline"]), rows[sid]["sample_count"])
                self.assertEqual(full["sample_count"], rows[sid]["sample_count"])
                self.assertEqual(full["gpu_stats"]["0"]["utilization"]["count"], full["sample_count"])
                reads = [int(r["gpus"]["0"]["utilization"]) for r in full["timeline"]]
                for a, b in zip(reads, reads[1:]):
                    self.assertEqual(b, (a + 1) % N)
                # Not running any more: stop is a conflict; delete removes it.
                status, _, err = d2.call("/api/sessions/%s/stop" % sid, "POST")
                self.assertEqual(status, 409)
                self.assertIn("interrupted", err["error"])
                self.assertEqual(d2.call("/api/sessions/" + sid, "DELETE")[0], 204)
                self.assertEqual(d2.call("/api/sessions/" + sid)[0], 404)
                # A session running at SIGTERM is stopped and stored as such.
                sid3 = d2.call("/api/sessions", "POST", obj={"gpus": [1]})[2]["id"]
                d2.wait_for(lambda: d2.call("/api/sessions/%s?timeline=0" % sid3)[2]["sample_count"] >= 2)
            finally:
                self.assertEqual(d2.stop(), 0, d2.log())
            d3 = Daemon(["--poll-interval", "100", "--db", db], scenario=scen).start()
            try:
                doc = d3.call("/api/sessions/%s?timeline=0" % sid3)[2]
                self.assertEqual(doc["status"], "stopped")
                self.assertEqual(doc["stop_reason"], "daemon_stopped")
            finally:
                self.assertEqual(d3.stop(), 0, d3.log())
        finally:
            os.unlink(scen)
            shutil.rmtree(tmp, ignore_errors=True)

    def test_memory_only_and_no_database_written(self):
        tmp = tempfile.mkdtemp(prefix="gpumon-sessions-")
        try:
            # The default store lives under XDG_STATE_HOME: a daemon whose sessions are not
            # used creates nothing there.
            with Daemon(["--poll-interval", "100"], extra_env={"XDG_STATE_HOME": tmp}) as d:
                self.assertEqual(d.call("/api/sessions")[2]["sessions"], [])
                self.assertEqual(os.listdir(tmp), [])
                self.assertEqual(d.get_json("/api/config")["db_path"],
                                 os.path.join(tmp, "gpumon", "gpumon.db"))
            with Daemon(["--poll-interval", "100", "--db", "none"]) as d:
                doc = d.call("/api/sessions", "POST", obj={})[2]
                self.assertFalse(doc["persisted"])
                d.wait_for(lambda: d.call("/api/sessions/%s?timeline=0" % doc["id"])[2]["sample_count"] >= 2)
                stats = d.call("/api/sessions/%s/stop" % doc["id"], "POST")[2]
                self.assertFalse(stats["persisted"])
                # Kept in memory after the stop, since no store has it.
                self.assertEqual(d.call("/api/sessions/" + doc["id"])[2]["status"], "stopped")
                self.assertFalse(d.call("/api/sessions")[2]["stored"])
                self.assertEqual(d.get_json("/api/config")["db"], "none")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class Access(unittest.TestCase):
    def test_token_required(self):
        with Daemon(["--token", "s3cret", "--db", "none"]) as d:
            auth = ["Authorization: Bearer s3cret"]
            status, hdrs, _ = d.call("/api/sessions", "POST", obj={})
            self.assertEqual(status, 401)
            self.assertIn("bearer", hdrs.get("www-authenticate", "").lower())
            self.assertEqual(d.call("/api/sessions", "POST", obj={}, headers=["Authorization: Bearer no"])[0], 401)
            self.assertEqual(d.call("/api/sessions")[0], 401)
            status, _, doc = d.call("/api/sessions", "POST", obj={}, headers=auth)
            self.assertEqual(status, 201)
            sid = doc["id"]
            self.assertEqual(d.call("/api/sessions/" + sid)[0], 401)
            self.assertEqual(d.call("/api/sessions/%s/stop" % sid, "POST")[0], 401)
            self.assertEqual(d.call("/api/sessions/" + sid, "DELETE")[0], 401)
            self.assertEqual(d.call("/api/allocation")[0], 401)
            self.assertEqual(d.call("/api/sessions/%s/stop" % sid, "POST", headers=auth)[0], 200)
            self.assertEqual(d.call("/api/sessions/" + sid, "DELETE", headers=auth)[0], 204)

    def test_other_web_sites_cannot_change_state(self):
        # A page of another origin open in a browser on this host reaches the daemon from
        # loopback; its Origin header gives it away (a form or a no-cors fetch needs no
        # preflight, so CORS alone would not stop it).
        with Daemon(["--db", "none", "--cors-origin", "http://localhost:5173"]) as d:
            own = "Origin: http://127.0.0.1:%d" % d.port
            for origin in ("Origin: https://evil.example", "Origin: null",
                           "Origin: http://127.0.0.1:%d" % (d.port + 1)):
                with self.subTest(origin=origin):
                    status, _, doc = d.call("/api/sessions", "POST", obj={}, headers=[origin])
                    self.assertEqual(status, 403)
                    self.assertIn("another origin", doc["error"])
                    # Reading stays as open as CORS makes it.
                    self.assertEqual(d.call("/api/sessions", headers=[origin])[0], 200)
            status, _, doc = d.call("/api/sessions", "POST", obj={}, headers=[own])
            self.assertEqual(status, 201)
            self.assertEqual(d.call("/api/sessions/%s/stop" % doc["id"], "POST",
                                    headers=["Origin: https://evil.example"])[0], 403)
            self.assertEqual(d.call("/api/sessions/%s/stop" % doc["id"], "POST",
                                    headers=["Origin: http://localhost:5173"])[0], 200)
            self.assertEqual(d.call("/api/sessions/" + doc["id"], "DELETE", headers=[own])[0], 204)
        with Daemon(["--db", "none", "--token", "t"]) as d:
            # With a token the browser cannot send it by itself: Origin no longer matters.
            status, _, _ = d.call("/api/sessions", "POST", obj={},
                                  headers=["Origin: https://elsewhere.example", "Authorization: Bearer t"])
            self.assertEqual(status, 201)

    def test_other_hosts_need_a_token_to_change_state(self):
        addr = nonloopback_ipv4()
        if not addr:
            self.skipTest("this host has no non-loopback IPv4 address")
        with Daemon(["--listen", ":0", "--db", "none"]) as d:
            remote = "http://%s:%d" % (addr, d.port)
            # Reading is open, as without a token anywhere.
            self.assertEqual(d.call("/api/sessions", base=remote)[0], 200)
            status, _, doc = d.call("/api/sessions", "POST", obj={}, base=remote)
            self.assertEqual(status, 403)
            self.assertIn("--token", doc["error"])
            # This host itself may.
            status, _, doc = d.call("/api/sessions", "POST", obj={})
            self.assertEqual(status, 201)
            self.assertEqual(d.call("/api/sessions/" + doc["id"], "DELETE", base=remote)[0], 403)
            self.assertEqual(d.call("/api/sessions/%s/stop" % doc["id"], "POST", base=remote)[0], 403)
            self.assertEqual(d.call("/api/sessions/" + doc["id"], "DELETE")[0], 204)
        with Daemon(["--listen", ":0", "--db", "none", "--token", "t0k"]) as d:
            remote = "http://%s:%d" % (addr, d.port)
            status, _, doc = d.call("/api/sessions", "POST", obj={}, base=remote,
                                    headers=["Authorization: Bearer t0k"])
            self.assertEqual(status, 201, doc)


class Allocation(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.leases = tempfile.mkdtemp(prefix="gpumon-leases-")
        cls.d = Daemon(["--poll-interval", "100", "--db", "none"],
                       extra_env={"GPU_MONITOR_LEASE_DIR": cls.leases}).start()

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        shutil.rmtree(cls.leases, ignore_errors=True)
        assert rc == 0, "exit %s: %s" % (rc, cls.d.log())

    def test_best_gpu(self):
        doc = self.d.get_json("/api/allocation")
        self.assertTrue(doc["satisfied"])
        self.assertEqual(doc["indices"], [1])  # 3% busy and 81024 MiB free beats 87% and 40064
        self.assertEqual(doc["selection"], "1")
        self.assertEqual(doc["lease_dir"], self.leases)
        self.assertEqual(doc["allocation_method"], "availability_score")
        doc = self.d.get_json("/api/allocation?count=2&min_free_mb=30000&max_util=90")
        self.assertTrue(doc["satisfied"])
        self.assertEqual(doc["indices"], [0, 1])

    def test_unsatisfied_is_200(self):
        for q in ("count=3", "count=2&max_util=50", "count=1&min_free_mb=100000"):
            with self.subTest(q=q):
                doc = self.d.get_json("/api/allocation?" + q)
                self.assertFalse(doc["satisfied"])
                self.assertEqual(doc["indices"], [])
                self.assertTrue(doc["reason"])

    def test_bad_parameters(self):
        for q in ("count=0", "count=65", "count=x", "count=-1", "min_free_mb=-5", "min_free_mb=abc",
                  "max_util=101", "max_util=-1", "ignore_leases=maybe", "gpu=0"):
            with self.subTest(q=q):
                status, _, doc = self.d.call("/api/allocation?" + q)
                self.assertEqual(status, 400)
                self.assertIn("error", doc)

    def test_leases_are_honoured(self):
        path = os.path.join(self.leases, "GPU-5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c51")
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, b"%d\n" % os.getpid())
            doc = self.d.get_json("/api/allocation")
            self.assertEqual(doc["indices"], [0])
            g1 = [g for g in doc["gpus"] if g["index"] == 1][0]
            self.assertTrue(g1["leased"])
            self.assertEqual(g1["leased_by_pid"], os.getpid())
            self.assertEqual(g1["status"], "leased")
            self.assertEqual(self.d.get_json("/api/allocation?ignore_leases=1")["indices"], [1])
        finally:
            os.close(fd)
        self.assertEqual(self.d.get_json("/api/allocation")["indices"], [1])


if __name__ == "__main__":
    unittest.main()
