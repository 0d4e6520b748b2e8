"""Benchmark jobs through the daemon's API (POST /api/benchmarks): a job against the fake OpenAI
server runs to done and its result is in history as a CLI run's is; a job waits for GPUs leased
by `gpumon run` and starts when they are released; cancel during a point keeps what was
measured and releases the lease; SIGTERM with a job running stops it and releases the lease;
every field of a bad body is named in a 400; the token is always required.

Jobs with an image, against the fake Docker engine of tests/cli/test_containers.py: the states
(starting, loading with its seconds, running, done, failed with the reason and the container's
last lines, cancelled) and the container removed and the lease released on every way out
(done, failed, cancel while loading or running, SIGTERM); the engine and the allow list guard
them (403). Jobs on disjoint GPUs run at the same time. And one real image job through podman's
engine where test_containers.py can run it."""
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import websockets

from daemon import Daemon

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from gmtest import GPUMON, env, run  # noqa: E402
from test_bench import FakeServer  # noqa: E402
import test_containers  # noqa: E402
from test_containers import FakeEngine  # noqa: E402

TOKEN = "jobs-token-0123456789"
AUTH = ("Authorization: Bearer " + TOKEN,)


class Jobs(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gm-jobs-")
        self.leases = os.path.join(self.tmp, "leases")
        self.db = os.path.join(self.tmp, "gpumon.db")
        self.servers = []
        self.procs = []
        self.d = Daemon(["--simulate", "1", "--db", self.db, "--token", TOKEN, "--log-level",
                         "error"], nvml=None, extra_env={"GPU_MONITOR_LEASE_DIR": self.leases})
        self.d.start()

    def tearDown(self):
        self.d.stop()
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            for f in (p.stdin, p.stdout):
                if f and not f.closed:
                    f.close()
        for s in self.servers:
            if s.proc.poll() is None:
                s.proc.kill()
                s.proc.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def server(self, *flags):
        s = FakeServer(self.tmp, *flags)
        self.servers.append(s)
        return s

    def submit(self, body, expect=202):
        status, hdrs, doc = self.d.call("/api/benchmarks", "POST", body, headers=AUTH)
        self.assertEqual(status, expect, doc)
        return doc

    def job(self, jid):
        return self.d.get_json("/api/benchmarks/jobs/" + jid, headers=AUTH)

    def wait_state(self, jid, states, timeout=30):
        return self.d.wait_for(lambda: (lambda j: j if j["state"] in states else None)(
            self.job(jid)), timeout=timeout)

    def lease_free(self):
        """True when GPU 0 can be leased now (nobody holds it)."""
        p = run(["run", "--simulate", "1", "--lease-dir", self.leases, "--count", "1", "--wait",
                 "0", "--no-db", "-q", "--", "true"], env=env())
        return p.returncode == 0

    def test_a_job_runs_to_done_and_is_stored(self):
        s = self.server()
        doc = self.submit({"url": s.url, "concurrency": [1, 2], "requests": 6,
                           "output_tokens": 4, "idle_seconds": 0, "label": "from the api"})
        self.assertEqual(doc["url"], "/api/benchmarks/jobs/" + doc["id"])
        j = self.wait_state(doc["id"], ("done", "failed", "cancelled"))
        self.assertEqual(j["state"], "done", j)
        self.assertEqual(j["benchmark_id"], doc["id"])
        self.assertEqual(j["points_done"], 2)
        self.assertEqual(j["gpus"], [0])
        # As GET /api/benchmarks/{id} and gpumon history know it.
        b = self.d.get_json("/api/benchmarks/" + j["benchmark_id"], headers=AUTH)
        self.assertEqual(b["label"], "from the api")
        self.assertEqual([p["concurrency"] for p in b["points"]], [1, 2])
        self.assertEqual([p["completed"] for p in b["points"]], [6, 6])
        self.assertEqual(b["config"]["output_tokens"], 4)
        lst = json.loads(run(["history", "--db", self.db, "list", "--format", "json"],
                             env=env()).stdout)
        self.assertIn(doc["id"], json.dumps(lst))
        listing = self.d.get_json("/api/benchmarks/jobs", headers=AUTH)
        self.assertEqual([x["id"] for x in listing["jobs"]], [doc["id"]])
        # The server saw exactly the check request and the measured ones.
        self.assertEqual(len(s.stop()), 1 + 12)
        self.assertTrue(self.lease_free())

    def test_an_audited_job_has_its_verdict(self):
        s = self.server()
        doc = self.submit({"url": s.url, "requests": 3, "output_tokens": 2, "idle_seconds": 0,
                           "snapshot": True, "snapshot_window_ms": 0})
        j = self.wait_state(doc["id"], ("done", "failed", "cancelled"))
        self.assertEqual(j["state"], "done", j)
        b = self.d.get_json("/api/benchmarks/" + j["benchmark_id"], headers=AUTH)
        self.assertIn(b["audit"]["verdict"], ("unchanged", "changed"), b["audit"])
        self.assertEqual(b["audit"]["before"]["kind"], "gpumon-snapshot")
        self.assertEqual(b["audit"]["after"]["kind"], "gpumon-snapshot")
        self.assertIsInstance(b["audit"]["changes"], list)
        # A flag takes true or false only, in the CLI's words.
        bad = self.submit({"url": s.url, "snapshot": "yes"}, expect=400)
        self.assertTrue(bad["error"].startswith("snapshot: --snapshot takes no value"), bad)

    def test_a_job_waits_for_gpus_leased_by_gpumon_run(self):
        s = self.server()
        holder = subprocess.Popen([GPUMON, "run", "--simulate", "1", "--lease-dir", self.leases,
                                   "--count", "1", "--no-db", "-q", "--", "sh", "-c",
                                   "echo held; read x"], env=env(), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        self.procs.append(holder)
        self.assertEqual(holder.stdout.readline().strip(), "held")
        doc = self.submit({"url": s.url, "requests": 3, "output_tokens": 2, "idle_seconds": 0,
                           "wait": "60s"})
        j = self.wait_state(doc["id"], ("waiting_gpus",))
        time.sleep(1.5)
        self.assertEqual(self.job(doc["id"])["state"], "waiting_gpus")
        holder.stdin.close()
        holder.wait(timeout=10)
        j = self.wait_state(doc["id"], ("done", "failed", "cancelled"))
        self.assertEqual(j["state"], "done", j)

    def test_a_job_that_waits_too_long_fails_saying_why(self):
        s = self.server()
        holder = subprocess.Popen([GPUMON, "run", "--simulate", "1", "--lease-dir", self.leases,
                                   "--count", "1", "--no-db", "-q", "--", "sh", "-c",
                                   "echo held; read x"], env=env(), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        self.procs.append(holder)
        self.assertEqual(holder.stdout.readline().strip(), "held")
        doc = self.submit({"url": s.url, "requests": 3, "idle_seconds": 0, "wait": 1})
        j = self.wait_state(doc["id"], ("done", "failed", "cancelled"))
        self.assertEqual(j["state"], "failed")
        self.assertIn("timed out waiting for GPUs", j["reason"])
        self.assertIsNone(j["benchmark_id"])

    def test_cancel_during_a_point_keeps_what_was_measured(self):
        s = self.server("--ttft-ms", "3", "--itl-ms", "20")
        doc = self.submit({"url": s.url, "concurrency": [2, 2], "requests": 1000,
                           "output_tokens": 10, "idle_seconds": 0})
        self.wait_state(doc["id"], ("running",))
        self.d.wait_for(lambda: (self.job(doc["id"])["progress"] or {}).get("requests_done", 0)
                        >= 4, timeout=30)
        p = self.job(doc["id"])["progress"]
        self.assertEqual((p["point"], p["points"], p["load"]), (1, 2, "concurrency 2"))
        self.assertGreater(p["ttft_p50_ms"], 0)
        self.assertGreater(p["output_tokens_per_s"], 0)
        status, _, c = self.d.call("/api/benchmarks/jobs/%s/cancel" % doc["id"], "POST",
                                   headers=AUTH)
        self.assertEqual(status, 202, c)
        j = self.wait_state(doc["id"], ("done", "failed", "cancelled"))
        self.assertEqual(j["state"], "cancelled")
        self.assertEqual(j["benchmark_id"], doc["id"])
        b = self.d.get_json("/api/benchmarks/" + doc["id"], headers=AUTH)
        self.assertTrue(b["interrupted"])
        self.assertEqual(len(b["points"]), 1)
        self.assertGreaterEqual(b["points"][0]["completed"], 4)
        self.assertTrue(self.lease_free())
        # Cancelling what has ended is a conflict; an unknown job is 404.
        status, _, _ = self.d.call("/api/benchmarks/jobs/%s/cancel" % doc["id"], "POST",
                                   headers=AUTH)
        self.assertEqual(status, 409)
        status, _, _ = self.d.call("/api/benchmarks/jobs/20990101-000000-abcdef/cancel", "POST",
                                   headers=AUTH)
        self.assertEqual(status, 404)

    def test_sigterm_with_a_job_running_releases_its_lease(self):
        s = self.server("--itl-ms", "20")
        doc = self.submit({"url": s.url, "concurrency": 2, "requests": 1000, "output_tokens": 10,
                           "idle_seconds": 0})
        self.wait_state(doc["id"], ("running",))
        self.assertFalse(self.lease_free())
        t0 = time.monotonic()
        self.d.proc.send_signal(signal.SIGTERM)
        self.assertEqual(self.d.proc.wait(timeout=20), 0)
        self.assertLess(time.monotonic() - t0, 15)
        self.assertTrue(self.lease_free())
        # What was measured until then is stored, marked interrupted.
        shown = run(["history", "--db", self.db, "show", doc["id"], "--format", "json"],
                    env=env())
        self.assertEqual(shown.returncode, 0, shown.stderr)
        self.assertTrue(json.loads(shown.stdout)["interrupted"])

    def test_progress_on_the_websocket_stream(self):
        s = self.server("--ttft-ms", "3", "--itl-ms", "5")
        url = "ws://127.0.0.1:%d/ws/benchmarks?token=%s" % (self.d.port, TOKEN)

        async def watch(seconds):
            seen = []
            async with websockets.connect(url, max_size=None, open_timeout=5) as ws:
                doc = self.submit({"url": s.url, "concurrency": [2], "requests": 60,
                                   "output_tokens": 10, "idle_seconds": 0})
                t0 = time.monotonic()
                while time.monotonic() - t0 < seconds:
                    try:
                        msg = await asyncio.wait_for(ws.recv(), timeout=1)
                    except asyncio.TimeoutError:
                        continue
                    jobs = json.loads(msg)["jobs"]
                    seen.append(jobs)
                    if jobs and jobs[-1]["state"] == "done":
                        break
            return doc["id"], seen

        jid, seen = asyncio.run(watch(30))
        mine = [j for frame in seen for j in frame if j["id"] == jid]
        self.assertEqual(mine[-1]["state"], "done")
        running = [j["progress"] for j in mine if j["state"] == "running" and j["progress"]]
        self.assertTrue(running, [j["state"] for j in mine])
        done = [p["requests_done"] for p in running]
        self.assertEqual(done, sorted(done))
        self.assertTrue(all(p["ttft_p50_ms"] > 0 and p["ttft_p99_ms"] >= p["ttft_p50_ms"]
                            for p in running if p["ttft_p50_ms"] is not None), running)
        # Without the token the stream is refused.
        async def refused():
            async with websockets.connect("ws://127.0.0.1:%d/ws/benchmarks" % self.d.port,
                                          open_timeout=5):
                pass
        with self.assertRaises(Exception):
            asyncio.run(refused())

    def test_bad_bodies_name_their_field(self):
        url = "http://127.0.0.1:9"
        cases = {
            "url": {"url": "ftp://x"},
            "model": {"url": url, "model": ""},
            "api": {"url": url, "api": "grpc"},
            "concurrency": {"url": url, "concurrency": [1, 0]},
            "request_rate": {"url": url, "request_rate": [-1]},
            "burstiness": {"url": url, "request_rate": [1], "burstiness": 0},
            "requests": {"url": url, "requests": "many"},
            "duration": {"url": url, "duration": "forever"},
            "warmup": {"url": url, "warmup": -1},
            "input_tokens": {"url": url, "input_tokens": 0},
            "output_tokens": {"url": url, "output_tokens": 2000000},
            "slo": {"url": url, "slo": {"ttft": "fast"}},
            "header": {"url": url, "header": ["no colon"]},
            "timeout": {"url": url, "timeout": "soon"},
            "gpus": {"url": url, "gpus": 0},
            "count": {"url": url, "count": 999},
            "interval": {"url": url, "interval": 0},
            "idle_seconds": {"url": url, "idle_seconds": 9999},
            "label": {"url": url, "label": "x" * 200},
            "wait": {"url": url, "wait": "later"},
            "output": {"url": url, "output": "/tmp/x.json"},
            "db": {"url": url, "db": "/tmp/x.db"},
            "prompts": {"url": url, "prompts": "/etc/passwd"},
            "api_key_env": {"url": url, "api_key_env": "HOME"},
            "colour": {"url": url, "colour": "red"},
        }
        for field, body in cases.items():
            status, _, doc = self.d.call("/api/benchmarks", "POST", body, headers=AUTH)
            self.assertEqual(status, 400, (field, doc))
            self.assertEqual(doc["field"], field, doc)
            self.assertTrue(doc["error"].startswith(field + ":") or field == "url", doc)
        # The CLI's own words.
        status, _, doc = self.d.call("/api/benchmarks", "POST", {"url": url, "requests": 0},
                                     headers=AUTH)
        self.assertEqual(doc["error"],
                         "requests: --requests expects a whole number from 1 to 1000000, got \"0\"")
        # Conflicts between fields, as the CLI says them.
        status, _, doc = self.d.call("/api/benchmarks", "POST",
                                     {"url": url, "concurrency": [1], "request_rate": [1]},
                                     headers=AUTH)
        self.assertEqual(status, 400)
        self.assertEqual(doc["error"], "give --concurrency or --request-rate, not both")
        status, _, doc = self.d.call("/api/benchmarks", "POST", {}, headers=AUTH)
        self.assertEqual((status, doc["field"]), (400, "url"))
        status, _, doc = self.d.call("/api/benchmarks", "POST", raw=b"[1]", headers=AUTH)
        self.assertEqual(status, 400)
        # Container fields, with the CLI's setter and words, and what a request may not name.
        img = "fake/server:1"
        ctr_cases = {
            "image": ({"image": "-bad"}, "--image \"-bad\" is not an image reference"),
            "container_port": ({"image": img, "container_port": 0}, "--container-port expects"),
            "env": ({"image": img, "env": ["HOME"]}, "NAME=VALUE"),
            "volume": ({"image": img, "volume": ["/:/host"]}, "host path"),
            "shm_size": ({"image": img, "shm_size": "1k"}, "--shm-size expects"),
            "ready_path": ({"image": img, "ready_path": "health"}, "--ready-path expects"),
            "ready_timeout": ({"image": img, "ready_timeout": "never"}, "--ready-timeout"),
            "pull": ({"image": img, "pull": "yes"}, "true or false"),
            "keep_container": ({"image": img, "keep_container": True}, "always removed"),
        }
        for field, (body, words) in ctr_cases.items():
            status, _, doc = self.d.call("/api/benchmarks", "POST", body, headers=AUTH)
            self.assertEqual((status, doc["field"]), (400, field), doc)
            self.assertIn(words, doc["error"])
            self.assertTrue(doc["error"].startswith(field + ":"), doc)
        status, _, doc = self.d.call("/api/benchmarks", "POST", {"url": url, "env": ["A=1"]},
                                     headers=AUTH)
        self.assertEqual((status, doc["field"]), (400, "env"), doc)
        # This daemon has no engine: an image is refused, saying how to give it one.
        status, _, doc = self.d.call("/api/benchmarks", "POST", {"image": "nvcr.io/nim/x"},
                                     headers=AUTH)
        self.assertEqual(status, 403, doc)
        self.assertIn("start the daemon with --docker", doc["error"])
        self.assertEqual(self.d.get_json("/api/benchmarks/jobs", headers=AUTH)["jobs"], [])

    def test_no_images_without_an_engine(self):
        status, _, doc = self.d.call("/api/images", headers=AUTH)
        self.assertEqual(status, 503, doc)
        self.assertIn("--docker", doc["error"])

    def test_the_token_is_always_required(self):
        status, _, _ = self.d.call("/api/benchmarks", "POST", {"url": "http://127.0.0.1:9"})
        self.assertEqual(status, 401)
        status, _, _ = self.d.call("/api/benchmarks/jobs", headers=("Authorization: Bearer no",))
        self.assertEqual(status, 401)
        # A daemon without a token refuses jobs even from this host, and says why.
        with Daemon(["--simulate", "1", "--db", "none", "--log-level", "error"], nvml=None) as d:
            status, _, doc = d.call("/api/benchmarks", "POST", {"url": "http://127.0.0.1:9"})
            self.assertEqual(status, 403)
            self.assertIn("--token", doc["error"])
            status, _, doc = d.call("/api/benchmarks/jobs/20990101-000000-abcdef/cancel", "POST")
            self.assertEqual(status, 403)


class ImageJobs(unittest.TestCase):
    """Jobs with an image, on two simulated GPUs, through the fake engine."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gm-ijobs-")
        self.leases = os.path.join(self.tmp, "leases")
        self.db = os.path.join(self.tmp, "gpumon.db")
        self.srv = FakeServer(self.tmp, "--itl-ms", "20")
        self.engine = FakeEngine(self.tmp, self.srv.port)
        self.d = None

    def start(self, *extra):
        self.d = Daemon(["--simulate", "2", "--db", self.db, "--token", TOKEN, "--log-level",
                         "error", "--docker", self.engine.path, "--allow-image", "fake/*",
                         "--allow-image", "other/x:1"] + list(extra), nvml=None,
                        extra_env={"GPU_MONITOR_LEASE_DIR": self.leases})
        self.d.start()

    def tearDown(self):
        if self.d:
            self.d.stop()
        self.engine.stop()
        if self.srv.proc.poll() is None:
            self.srv.proc.kill()
            self.srv.proc.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)

    submit = Jobs.submit
    job = Jobs.job
    wait_state = Jobs.wait_state

    def lease_free(self):
        p = run(["run", "--simulate", "2", "--lease-dir", self.leases, "--count", "2", "--wait",
                 "0", "--no-db", "-q", "--", "true"], env=env())
        return p.returncode == 0

    def states_until_end(self, jid, timeout=60):
        seen = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            j = self.job(jid)
            if not seen or seen[-1] != j["state"]:
                seen.append(j["state"])
            if j["state"] in ("done", "failed", "cancelled"):
                return seen, j
            time.sleep(0.02)
        self.fail("job %s did not end: %s" % (jid, seen))

    def test_an_image_job_runs_to_done_and_removes_its_container(self):
        self.start()
        doc = self.submit({"image": "fake/server:1", "requests": 4, "output_tokens": 2,
                           "idle_seconds": 0, "env": ["A=1"], "volume": "cache:/cache",
                           "shm_size": "1g", "label": "image job"})
        seen, j = self.states_until_end(doc["id"])
        self.assertEqual(j["state"], "done", j)
        self.assertIn("running", seen)
        self.assertEqual(j["image"], "fake/server:1")
        self.assertEqual(j["container"], "gpumon-" + doc["id"])
        self.assertIsNotNone(j["loading_seconds"])
        self.assertIsNone(j["logs"])
        # Created on the leased GPU by UUID, port on 127.0.0.1, as gpumon bench --image does.
        body = self.engine.create_bodies()[0]
        self.assertEqual(body["Image"], "fake/server:1")
        self.assertIn("A=1", body["Env"])
        self.assertEqual(body["HostConfig"]["Binds"], ["cache:/cache"])
        uuids = body["HostConfig"]["DeviceRequests"][0]["DeviceIDs"]
        self.assertEqual(len(uuids), 1)
        self.assertTrue(uuids[0].startswith("GPU-"), uuids)
        self.assertEqual(self.engine.containers, {})
        self.assertTrue(self.lease_free())
        b = self.d.get_json("/api/benchmarks/" + doc["id"], headers=AUTH)
        self.assertEqual(b["points"][0]["completed"], 4)
        self.assertEqual(b["label"], "image job")

    def test_an_image_not_admitted_is_refused(self):
        self.start()
        status, _, doc = self.d.call("/api/benchmarks", "POST", {"image": "nvcr.io/nim/x:1"},
                                     headers=AUTH)
        self.assertEqual(status, 403, doc)
        self.assertIn("nvcr.io/nim/x:1", doc["error"])
        self.assertIn("fake/*", doc["error"])
        self.assertIn("other/x:1", doc["error"])
        cfg = self.d.get_json("/api/config", headers=AUTH)
        self.assertEqual(cfg["allow_image"], ["fake/*", "other/x:1"])
        self.assertEqual(cfg["docker"], "unix://" + self.engine.path)
        self.assertEqual(self.engine.create_bodies(), [])

    def test_the_images_offered_are_the_engines_that_the_allow_list_admits(self):
        nim = "nvcr.io/nim/meta/llama-3.1-8b-instruct:1.0"
        self.engine.images = {"fake/server:2", "fake/server:1", "other/x:1", "other/x:2",
                              "elsewhere/y:1", nim, "nvcr.io/nim/nvidia/nv-embedqa:latest"}
        self.start("--allow-image", "nvcr.io/nim/meta/*")
        known = {n: (1000 + i, 1700000000 + i)
                 for i, n in enumerate(sorted(self.engine.images))}
        status, _, doc = self.d.call("/api/images", headers=AUTH)
        self.assertEqual(status, 200, doc)
        self.assertEqual([e["image"] for e in doc["images"]],
                         ["fake/server:1", "fake/server:2", nim, "other/x:1"])
        for e in doc["images"]:
            self.assertEqual((e["size_bytes"], e["created"]), known[e["image"]])
            self.assertEqual(e["model"], "meta/llama-3.1-8b-instruct" if e["image"] == nim
                             else None)
        self.assertEqual(self.d.call("/api/images")[0], 401)
        # The engine gone: its failure, said as the engine's client says it.
        self.engine.stop()
        status, _, doc = self.d.call("/api/images", headers=AUTH)
        self.assertEqual(status, 502, doc)
        self.assertIn(self.engine.path, doc["error"])

    def test_never_ready_fails_with_its_last_lines_and_is_removed(self):
        self.start()
        doc = self.submit({"image": "fake/server:1", "ready_path": "/never",
                           "ready_timeout": "2s", "idle_seconds": 0})
        j = self.wait_state(doc["id"], ("loading",))
        self.assertGreaterEqual(j["loading_seconds"], 0)
        time.sleep(1)
        self.assertGreater(self.job(doc["id"])["loading_seconds"], j["loading_seconds"])
        j = self.wait_state(doc["id"], ("done", "failed", "cancelled"))
        self.assertEqual(j["state"], "failed", j)
        self.assertIn("was not ready after 2 s", j["reason"])
        self.assertEqual(j["logs"], ["fake server output"])
        self.assertEqual(self.engine.containers, {})
        self.assertTrue(self.lease_free())

    def test_exits_before_ready_fails_saying_how(self):
        self.start()
        orig = self.engine.handle

        def handle(h, method, body):
            orig(h, method, body)
            if h.path.endswith("/start"):
                for c in self.engine.containers.values():
                    c["status"], c["exit"] = "exited", 3
        self.engine.handle = handle
        doc = self.submit({"image": "fake/server:1", "idle_seconds": 0})
        j = self.wait_state(doc["id"], ("done", "failed", "cancelled"))
        self.assertEqual(j["state"], "failed", j)
        self.assertIn("exited with status 3", j["reason"])
        self.assertEqual(j["logs"], ["fake server output"])
        self.assertEqual(self.engine.containers, {})
        self.assertTrue(self.lease_free())

    def test_cancel_while_loading_removes_the_container(self):
        self.start()
        doc = self.submit({"image": "fake/server:1", "ready_path": "/never", "idle_seconds": 0})
        self.wait_state(doc["id"], ("loading",))
        self.assertEqual(len(self.engine.containers), 1)
        status, _, _ = self.d.call("/api/benchmarks/jobs/%s/cancel" % doc["id"], "POST",
                                   headers=AUTH)
        self.assertEqual(status, 202)
        j = self.wait_state(doc["id"], ("done", "failed", "cancelled"))
        self.assertEqual(j["state"], "cancelled", j)
        self.assertEqual(self.engine.containers, {})
        self.assertTrue(self.lease_free())

    def test_cancel_while_running_removes_the_container_and_keeps_the_points(self):
        self.start()
        doc = self.submit({"image": "fake/server:1", "concurrency": [2, 2], "requests": 1000,
                           "output_tokens": 10, "idle_seconds": 0})
        self.wait_state(doc["id"], ("running",))
        self.d.wait_for(lambda: (self.job(doc["id"])["progress"] or {}).get("requests_done", 0)
                        >= 2, timeout=30)
        self.d.call("/api/benchmarks/jobs/%s/cancel" % doc["id"], "POST", headers=AUTH)
        j = self.wait_state(doc["id"], ("done", "failed", "cancelled"))
        self.assertEqual(j["state"], "cancelled", j)
        self.assertEqual(self.engine.containers, {})
        self.assertTrue(self.lease_free())
        b = self.d.get_json("/api/benchmarks/" + doc["id"], headers=AUTH)
        self.assertTrue(b["interrupted"])
        self.assertTrue(b["container"]["removed"])

    def test_sigterm_while_running_removes_the_container(self):
        self.start()
        doc = self.submit({"image": "fake/server:1", "concurrency": 2, "requests": 1000,
                           "output_tokens": 10, "idle_seconds": 0})
        self.wait_state(doc["id"], ("running",))
        self.assertEqual(len(self.engine.containers), 1)
        self.d.proc.send_signal(signal.SIGTERM)
        self.assertEqual(self.d.proc.wait(timeout=30), 0)
        self.assertEqual(self.engine.containers, {})
        self.assertTrue(self.lease_free())

    def test_sigterm_while_loading_removes_the_container(self):
        self.start()
        doc = self.submit({"image": "fake/server:1", "ready_path": "/never", "idle_seconds": 0})
        self.wait_state(doc["id"], ("loading",))
        self.assertEqual(len(self.engine.containers), 1)
        self.d.proc.send_signal(signal.SIGTERM)
        self.assertEqual(self.d.proc.wait(timeout=30), 0)
        self.assertEqual(self.engine.containers, {})
        self.assertTrue(self.lease_free())

    def test_jobs_on_disjoint_gpus_run_at_once_and_a_third_waits(self):
        self.start()
        body = {"url": self.srv.url, "concurrency": 1, "requests": 1000, "output_tokens": 10,
                "idle_seconds": 0, "count": 1, "wait": "60s"}
        ids = [self.submit(body)["id"] for _ in range(3)]

        # Which two get the GPUs is a race between the runners (a waiting job never holds up
        # the ones behind it), so the test asks only that two run on different GPUs while the
        # third waits.
        def two_running_one_waiting():
            jobs = [self.job(x) for x in ids]
            running = [j for j in jobs if j["state"] == "running"]
            waiting = [j for j in jobs if j["state"] == "waiting_gpus"]
            return (running, waiting) if len(running) == 2 and len(waiting) == 1 else None

        try:
            running, waiting = self.d.wait_for(two_running_one_waiting, timeout=60)
        except AssertionError:
            self.fail("not two running and one waiting: %s" %
                      json.dumps([self.job(x) for x in ids]))
        self.assertNotEqual(running[0]["gpus"], running[1]["gpus"])
        self.assertEqual(sorted(running[0]["gpus"] + running[1]["gpus"]), [0, 1])
        time.sleep(1)
        self.assertEqual(self.job(waiting[0]["id"])["state"], "waiting_gpus")
        # When one ends, the waiting one gets its GPU.
        a, c = running[0]["id"], waiting[0]["id"]
        self.d.call("/api/benchmarks/jobs/%s/cancel" % a, "POST", headers=AUTH)
        j = self.wait_state(c, ("running",))
        self.assertEqual(j["gpus"], self.job(a)["gpus"])
        for x in ids:
            if x != a:
                self.d.call("/api/benchmarks/jobs/%s/cancel" % x, "POST", headers=AUTH)
                self.wait_state(x, ("cancelled",))
        self.assertTrue(self.lease_free())


class PodmanImageJob(unittest.TestCase):
    """One real image job through podman's engine, as test_containers.py runs it."""

    @classmethod
    def setUpClass(cls):
        test_containers.setUpModule()

    @classmethod
    def tearDownClass(cls):
        test_containers.tearDownModule()

    def test_a_real_image_job(self):
        if test_containers.SKIP:
            self.skipTest(test_containers.SKIP)
        podman = test_containers.PODMAN
        tmp = tempfile.mkdtemp(prefix="gm-pjobs-")
        self.addCleanup(shutil.rmtree, tmp, True)
        db = os.path.join(tmp, "gpumon.db")
        d = Daemon(["--simulate", "1", "--db", db, "--token", TOKEN, "--log-level", "error",
                    "--docker", podman.sock, "--allow-image", "localhost/gpumon-test-*"],
                   nvml=None, extra_env={"GPU_MONITOR_LEASE_DIR": os.path.join(tmp, "leases")})
        with d:
            status, _, doc = d.call("/api/benchmarks", "POST",
                                    {"image": test_containers.IMAGE, "requests": 5,
                                     "output_tokens": 2, "idle_seconds": 0}, headers=AUTH)
            self.assertEqual(status, 202, doc)
            j = d.wait_for(lambda: (lambda x: x if x["state"] in ("done", "failed",
                                                                   "cancelled") else None)(
                d.get_json("/api/benchmarks/jobs/" + doc["id"], headers=AUTH)), timeout=120)
            self.assertEqual(j["state"], "done", j)
            b = d.get_json("/api/benchmarks/" + doc["id"], headers=AUTH)
            self.assertEqual(b["points"][0]["completed"], 5)
            self.assertEqual(b["container"]["engine"].split()[0], "Podman")
            self.assertTrue(b["container"]["removed"])
        self.assertEqual(podman.gpumon_containers(), [])


if __name__ == "__main__":
    unittest.main()
