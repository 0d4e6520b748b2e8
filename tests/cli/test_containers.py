"""gpumon bench --image, gpumon run --image and gpumon containers, through the Docker Engine API.

Two engines. A fake one (FakeEngine: a unix-socket HTTP server in this test that records every
request) checks what gpumon asks for, to the byte: the create body carries
HostConfig.DeviceRequests with exactly the leased GPUs' UUIDs and no CUDA_VISIBLE_DEVICES, the
port on 127.0.0.1, the labels; its inspect points at a fake OpenAI server, so the whole benchmark
runs. podman has no GPU here, which is why that part is checked against the fake.

And a real one: podman's Docker-compatible service, started by the test on a private socket and
storage (vfs, runc, cgroupfs, as docs/ARCHITECTURE.md says podman runs on these hosts), with an
image made offline: the statically linked fake OpenAI server and nothing else (podman import).
The full flow, a missing image, a server that never becomes ready, Ctrl-C while waiting, a
container that exits at once, and what a gpumon killed with -9 leaves. Those tests are skipped,
saying why, only where podman cannot run."""
import http.server
import json
import os
import re
import shutil
import signal
import socket
import socketserver
import sqlite3
import struct
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.parse

from gmtest import BUILD, FAKE_NVML, GPUMON, env, run

FAKE_OPENAI = os.environ.get("GM_FAKE_OPENAI") or os.path.join(BUILD, "tests/fakes/fake_openai")
FAKE_OPENAI_STATIC = os.environ.get("GM_FAKE_OPENAI_STATIC") or os.path.join(
    BUILD, "tests/fakes/fake_openai_static")
# two_gpus.json's GPUs.
UUID0 = "GPU-5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c50"
UUID1 = "GPU-5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c51"


def frames(text, stream=1):
    """The engine's log framing: {stream, 0, 0, 0, big-endian size} before each piece."""
    data = text.encode()
    return struct.pack(">BxxxI", stream, len(data)) + data


# ---- the fake engine ---------------------------------------------------------------------------

class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def address_string(self):
        return "engine"

    def send(self, status, obj=None, raw=None):
        data = raw if raw is not None else (json.dumps(obj).encode() if obj is not None else b"")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass  # the client went away (a request it gave up on)

    def do_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        self.server.engine.handle(self, self.command, body)

    do_GET = do_POST = do_DELETE = do_any


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class FakeEngine:
    """Docker Engine API v1.41, as much as gpumon uses; the containers' server is server_port."""

    def __init__(self, tmp, server_port, images=("fake/server:1",)):
        self.path = os.path.join(tmp, "engine.sock")
        self.server_port = server_port
        self.images = set(images)
        self.requests = []
        self.containers = {}
        self.lock = threading.Lock()
        self.srv = _Server(self.path, _Handler)
        self.srv.engine = self
        self.thread = threading.Thread(target=self.srv.serve_forever, args=(0.05,),
                                       daemon=True)
        self.thread.start()

    def stop(self):
        self.srv.shutdown()
        self.srv.server_close()

    def handle(self, h, method, body):
        url = urllib.parse.urlsplit(h.path)
        q = urllib.parse.parse_qs(url.query)
        with self.lock:
            self.requests.append((method, h.path, body))
        if not url.path.startswith("/v1.41/"):
            return h.send(404, {"message": "page not found"})
        p = url.path[len("/v1.41"):]
        if p == "/version":
            return h.send(200, {"Components": [{"Name": "Engine", "Version": "0-fake"}],
                                "Version": "0-fake"})
        if p == "/images/json":
            return h.send(200, [{"Id": "sha256:fake" + n, "RepoTags": [n], "Size": 1000 + i,
                                 "Created": 1700000000 + i}
                                for i, n in enumerate(sorted(self.images))]
                          + [{"Id": "sha256:untagged", "RepoTags": ["<none>:<none>"], "Size": 1,
                              "Created": 1}])
        m = re.fullmatch(r"/images/(.+)/json", p)
        if m:
            if m.group(1) in self.images:
                return h.send(200, {"Id": "sha256:fake" + m.group(1)})
            return h.send(404, {"message": "No such image: " + m.group(1)})
        if p == "/containers/create":
            name = q["name"][0]
            self.containers[name] = {"body": json.loads(body), "status": "created", "exit": 0}
            return h.send(201, {"Id": "id-" + name, "Warnings": []})
        if p == "/containers/json":
            return h.send(200, [{"Id": "id-" + n, "Names": ["/" + n], "Image": c["body"]["Image"],
                                 "State": c["status"], "Labels": c["body"].get("Labels")}
                                for n, c in self.containers.items()])
        m = re.fullmatch(r"/containers/(?:id-)?([^/]+)(/\w+)?", p)
        c = self.containers.get(m.group(1)) if m else None
        if not c:
            return h.send(404, {"message": "no such container"})
        op = m.group(2)
        if op == "/start":
            c["status"] = "running"
            return h.send(204)
        if op == "/json":
            return h.send(200, {
                "Id": "id-" + m.group(1), "Name": "/" + m.group(1), "Image": "sha256:fake",
                "Config": {"Image": c["body"]["Image"]},
                "State": {"Status": c["status"], "Running": c["status"] == "running", "Pid": 0,
                          "ExitCode": c["exit"], "OOMKilled": c.get("oom", False), "Error": ""},
                "NetworkSettings": {"Ports": {"8000/tcp": [
                    {"HostIp": "127.0.0.1", "HostPort": str(self.server_port)}]}}})
        if op in ("/stop", "/kill"):
            c["status"], c["exit"] = "exited", 143
            return h.send(204)
        if op == "/logs":
            return h.send(200, raw=frames("fake server output\n"))
        if op is None and method == "DELETE":
            del self.containers[m.group(1)]
            return h.send(204)
        return h.send(404, {"message": "not faked"})

    def create_bodies(self):
        return [json.loads(b) for (m, p, b) in self.requests if "/containers/create" in p]


class FakeEngineTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gm-ctr-")
        self.port_file = os.path.join(self.tmp, "port")
        self.server = subprocess.Popen([FAKE_OPENAI, "--port-file", self.port_file])
        for _ in range(500):
            if os.path.exists(self.port_file):
                break
            time.sleep(0.01)
        with open(self.port_file) as f:
            self.engine = FakeEngine(self.tmp, int(f.read()))
        self.env = env(nvml=FAKE_NVML, scenario="two_gpus.json",
                       extra={"DOCKER_HOST": "unix://" + self.engine.path,
                              "GPU_MONITOR_LEASE_DIR": os.path.join(self.tmp, "leases"),
                              "NGC_API_KEY": "s3cret-key-value"})
        self.env.pop("CUDA_VISIBLE_DEVICES", None)

    def tearDown(self):
        self.engine.stop()
        self.server.kill()
        self.server.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def bench(self, *args, timeout=60):
        out = os.path.join(self.tmp, "out-%d.json" % time.monotonic_ns())
        p = run(["bench", "--image", "fake/server:1", "--requests", "5", "--idle-seconds", "0",
                 "--wait", "0", "--no-db", "-o", out] + list(args), env=self.env, timeout=timeout)
        doc = None
        if os.path.exists(out):
            with open(out) as f:
                doc = json.load(f)
        return p, doc

    def test_env_values_are_never_stored(self):
        # Any spelling getopt accepts (--en, --env=) has its value redacted in the stored command.
        db = os.path.join(self.tmp, "gpumon.db")
        p = run(["bench", "--image", "fake/server:1", "--requests", "2", "--idle-seconds", "0",
                 "--wait", "0", "--db", db, "-q", "--en", "NIM_TOKEN=hunter2-a",
                 "--env=NIM_OTHER=hunter2-b", "--env", "NGC_API_KEY"], env=self.env, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.engine.create_bodies()[0]["Env"],
                         ["NIM_TOKEN=hunter2-a", "NIM_OTHER=hunter2-b",
                          "NGC_API_KEY=s3cret-key-value"])
        con = sqlite3.connect(db)
        rows = [r[0] for r in con.execute("SELECT command FROM sessions")]
        con.close()
        self.assertEqual(len(rows), 1)
        self.assertNotIn("hunter2", rows[0])
        self.assertNotIn("s3cret", rows[0])
        command = json.loads(rows[0])
        self.assertIn("NIM_TOKEN=<redacted>", command)
        self.assertIn("--env=NIM_OTHER=<redacted>", command)
        self.assertIn("NGC_API_KEY", command)

    def test_device_requests_carry_the_leased_uuids(self):
        p, doc = self.bench("--count", "2", "--env", "NGC_API_KEY", "--env", "NIM_LOG_LEVEL=INFO",
                            "--volume", "/srv/cache:/opt/nim/.cache", "--shm-size", "1g",
                            "--", "--served-model", "x")
        self.assertEqual(p.returncode, 0, p.stderr)
        bodies = self.engine.create_bodies()
        self.assertEqual(len(bodies), 1)
        b = bodies[0]
        hc = b["HostConfig"]
        self.assertEqual(hc["DeviceRequests"], [{"Driver": "nvidia", "DeviceIDs": [UUID0, UUID1],
                                                 "Capabilities": [["gpu"]]}])
        # The GPUs go by DeviceRequests only: no CUDA_VISIBLE_DEVICES.
        self.assertEqual(b["Env"], ["NGC_API_KEY=s3cret-key-value", "NIM_LOG_LEVEL=INFO"])
        self.assertEqual(hc["PortBindings"], {"8000/tcp": [{"HostIp": "127.0.0.1", "HostPort": ""}]})
        self.assertEqual(b["ExposedPorts"], {"8000/tcp": {}})
        self.assertEqual(hc["ShmSize"], 1 << 30)
        self.assertEqual(hc["Binds"], ["/srv/cache:/opt/nim/.cache"])
        self.assertEqual(b["Image"], "fake/server:1")
        self.assertEqual(b["Cmd"], ["--served-model", "x"])
        labels = b["Labels"]
        self.assertEqual(labels["gpumon.run"], doc["id"])
        self.assertRegex(labels["gpumon.owner"], r"^.+:\d+$")
        self.assertNotIn("gpumon.keep", labels)
        # Named after the benchmark; created, started, inspected, stopped, removed.
        name = "gpumon-" + doc["id"]
        self.assertIn(("POST", "/v1.41/containers/create?name=" + name), [(m, p) for m, p, _ in self.engine.requests])
        ops = [(m, p.split("?")[0]) for m, p, _ in self.engine.requests if "/containers/" in p]
        self.assertIn(("POST", "/v1.41/containers/id-%s/stop" % name), ops)
        self.assertEqual(ops[-1], ("DELETE", "/v1.41/containers/id-%s" % name))
        self.assertEqual(self.engine.containers, {})
        # The secret went to the engine only: not printed, not in the result.
        self.assertNotIn("s3cret", p.stdout + p.stderr)
        text = json.dumps(doc)
        self.assertNotIn("s3cret", text)
        c = doc["container"]
        self.assertEqual(c["env"], ["NGC_API_KEY", "NIM_LOG_LEVEL"])
        self.assertEqual(c["gpus"], [UUID0, UUID1])
        self.assertEqual(c["name"], name)
        self.assertTrue(c["ready"])
        self.assertEqual(c["ready_path"], "/health")  # the fake server has no /v1/health/ready
        self.assertTrue(c["removed"])
        self.assertEqual(c["exit"]["exit_code"], 143)
        self.assertTrue(c["exit"]["stopped_by_gpumon"])
        self.assertEqual(c["image_id"], "sha256:fakefake/server:1")
        # The loading was sampled on the leased GPUs: energy and memory after it.
        self.assertEqual([g["uuid"] for g in c["loading"]["gpus"]], [UUID0, UUID1])
        self.assertIsNotNone(c["loading"]["memory_used_mib_after"])
        self.assertEqual([g["uuid"] for g in doc["gpus"]], [UUID0, UUID1])
        self.assertEqual(doc["lease"]["uuids"], [UUID0, UUID1])
        self.assertEqual(doc["points"][0]["completed"], 5)
        self.assertEqual(doc["url"], "http://127.0.0.1:%d" % self.engine.server_port)

    def test_a_server_that_dies_mid_run_stops_the_benchmark(self):
        # Its requests fail at once; gpumon asks the engine, stops the run, prints how the
        # container ended with its output, marks the point invalid and exits 1, keeping what
        # was measured (the point, the container's exit) in the document.
        out = os.path.join(self.tmp, "died.json")
        p = subprocess.Popen([GPUMON, "bench", "--image", "fake/server:1", "--duration", "60",
                              "--concurrency", "2", "--idle-seconds", "0", "--wait", "0",
                              "--no-db", "-o", out], env=self.env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            for _ in range(1000):  # the benchmark is under way once it has asked for models
                if any(m == "POST" and "/start" in path for m, path, _ in self.engine.requests):
                    break
                time.sleep(0.01)
            time.sleep(1.0)
            name = next(iter(self.engine.containers))
            self.engine.containers[name].update(status="exited", exit=137)
            self.server.kill()
            self.server.wait()
            _, err = p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, 1, err)
        self.assertIn("exited with status 137 while it was being benchmarked", err)
        self.assertIn("fake server output", err)
        self.assertIn("the server's container ended during the benchmark; 1 of 1 point measured "
                      "(the last one cut short, marked invalid: server_exited)", err)
        with open(out) as f:
            doc = json.load(f)
        pt = doc["points"][0]
        self.assertFalse(pt["valid"])
        self.assertIn("server_exited", pt["invalid_reasons"])
        self.assertFalse(doc["interrupted"])
        c = doc["container"]
        self.assertEqual(c["failure"], "exited")
        self.assertEqual(c["exit"]["exit_code"], 137)
        self.assertFalse(c["exit"]["stopped_by_gpumon"])
        self.assertTrue(c["removed"])
        self.assertEqual(self.engine.containers, {})

    def test_ctrl_c_during_the_benchmark_removes_the_container(self):
        out = os.path.join(self.tmp, "int.json")
        p = subprocess.Popen([GPUMON, "bench", "--image", "fake/server:1", "--duration", "60",
                              "--concurrency", "2", "--idle-seconds", "0", "--wait", "0",
                              "--no-db", "-o", out], env=self.env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            for _ in range(1000):
                if any(m == "POST" and "/start" in path for m, path, _ in self.engine.requests):
                    break
                time.sleep(0.01)
            time.sleep(1.0)
            p.send_signal(signal.SIGINT)
            _, err = p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, 130, err)
        with open(out) as f:
            doc = json.load(f)
        self.assertTrue(doc["interrupted"])
        self.assertEqual(len(doc["points"]), 1)  # what was measured is kept
        self.assertGreater(doc["points"][0]["completed"], 0)
        c = doc["container"]
        self.assertTrue(c["exit"]["stopped_by_gpumon"])
        self.assertTrue(c["removed"])
        self.assertEqual(self.engine.containers, {})

    def test_gpus_limits_what_is_leased(self):
        p, doc = self.bench("--gpus", "1")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.engine.create_bodies()[0]["HostConfig"]["DeviceRequests"][0]["DeviceIDs"],
                         [UUID1])

    def test_leased_gpus_are_not_given_twice(self):
        gate = os.path.join(self.tmp, "go")
        holder = subprocess.Popen(
            [GPUMON, "run", "--count", "2", "--no-db", "-q", "--", "sh", "-c",
             "echo held; while [ ! -e %s ]; do sleep 0.02; done" % gate],
            env=self.env, stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(holder.stdout.readline().strip(), "held")
            p, doc = self.bench("--count", "1")
            self.assertEqual(p.returncode, 5, p.stderr)
            self.assertIn("leased", p.stderr)
            self.assertEqual(self.engine.create_bodies(), [])
        finally:
            open(gate, "w").close()
            holder.communicate(timeout=10)

    def test_missing_image_fails_before_any_gpu_is_leased(self):
        p = run(["bench", "--image", "fake/absent:2", "--no-db", "--wait", "0"], env=self.env)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("image fake/absent:2 is not on this machine", p.stderr)
        self.assertIn("No such image: fake/absent:2", p.stderr)  # the engine's own words
        self.assertIn("--pull", p.stderr)
        self.assertNotIn("leased", p.stderr)
        self.assertEqual(self.engine.create_bodies(), [])

    def test_run_image_passes_the_gpus_and_the_exit_status(self):
        # The fake engine's container "exits" 143 when stopped; run follows it until then.
        out_json = os.path.join(self.tmp, "run.json")
        follow = subprocess.Popen(
            [GPUMON, "run", "--count", "1", "--no-db", "-q", "-o", out_json, "--image",
             "fake/server:1", "--env", "NGC_API_KEY", "--", "serve"],
            env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(500):
            if self.engine.containers and next(iter(self.engine.containers.values()))["status"] == "running":
                break
            time.sleep(0.01)
        name = next(iter(self.engine.containers))
        self.engine.containers[name].update(status="exited", exit=3, oom=True)
        out, err = follow.communicate(timeout=30)
        self.assertEqual(follow.returncode, 3, err)
        self.assertIn("killed: out of memory", err)
        # The stored run has the container's end, not its state at the start.
        with open(out_json) as f:
            c = json.load(f)["container"]
        self.assertEqual((c["exit"]["exit_code"], c["exit"]["oom_killed"]), (3, True))
        self.assertFalse(c["exit"]["stopped_by_gpumon"])
        self.assertTrue(c["removed"])
        b = self.engine.create_bodies()[0]
        # GPU 1 is the better one (GPU 0 is 87% busy); no port published without --container-port.
        self.assertEqual(b["HostConfig"]["DeviceRequests"][0]["DeviceIDs"], [UUID1])
        self.assertNotIn("PortBindings", b["HostConfig"])
        self.assertEqual(b["Cmd"], ["serve"])
        self.assertEqual(b["Env"], ["NGC_API_KEY=s3cret-key-value"])
        self.assertIn("fake server output", out)
        self.assertNotIn("s3cret", out + err)
        self.assertEqual(self.engine.containers, {})

    def test_usage_errors(self):
        cases = [
            (["bench", "--url", "http://x", "--image", "a:1"], "not both"),
            (["bench", "--url", "http://x", "--env", "A=B"], "--env is for --image"),
            (["bench", "--url", "http://x", "--count", "2"], "for --image"),
            (["bench", "--image", "a:1", "--env", "=x"], "--env expects"),
            (["bench", "--image", "a:1", "--env", "CUDA_VISIBLE_DEVICES=0"],
             "--env CUDA_VISIBLE_DEVICES: gpumon gives the container the GPUs it leased"),
            (["run", "--image", "a:1", "--env", "NVIDIA_VISIBLE_DEVICES", "--", "true"],
             "--env NVIDIA_VISIBLE_DEVICES: gpumon gives the container the GPUs it leased"),
            (["bench", "--image", "a:1", "--volume", "relative"], "--volume expects"),
            (["bench", "--image", "a:1", "--shm-size", "lots"], "--shm-size expects"),
            (["bench", "--image", "a:1", "--ready-path", "health"], "--ready-path expects"),
            (["bench", "--image", "-rm"], "not an image reference"),
            (["bench", "--url", "http://x", "extra"], "extra"),
            (["run", "--image", "a:1", "--ready-timeout", "5"], "for gpumon bench"),
            (["run", "--env", "A=B", "--", "true"], "--env is for --image"),
            (["bench", "--image", "fake/server:1", "--env", "GM_UNSET_VARIABLE"], "not set"),
        ]
        for args, words in cases:
            p = run(args, env=self.env)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertIn(words, p.stderr, args)

    def test_engine_not_reachable(self):
        e = dict(self.env, DOCKER_HOST="unix://" + os.path.join(self.tmp, "none.sock"))
        p = run(["bench", "--image", "fake/server:1", "--no-db"], env=e)
        self.assertEqual(p.returncode, 1)
        self.assertIn("cannot reach the container engine at %s" % os.path.join(self.tmp, "none.sock"),
                      p.stderr)
        p = run(["containers", "list"], env=dict(self.env, DOCKER_HOST="tcp://127.0.0.1:2375"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("unix socket only", p.stderr)


# ---- podman's Docker-compatible service ----------------------------------------------------------

CONTAINERS_CONF = """[containers]
default_ulimits = []
[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
"""
IMAGE = "localhost/gpumon-test-openai:1"
SKIP = None


class Podman:
    """podman system service on a private socket and storage, with the test image."""

    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="gm-podman-")
        self.sock = os.path.join(self.tmp, "podman.sock")
        conf = os.path.join(self.tmp, "containers.conf")
        with open(conf, "w") as f:
            f.write(CONTAINERS_CONF)
        self.env = dict(os.environ, CONTAINERS_CONF=conf)
        self.base = ["podman", "--root", os.path.join(self.tmp, "root"), "--runroot",
                     os.path.join(self.tmp, "run"), "--storage-driver", "vfs"]
        self.service = None

    def cli(self, *args, check=True, timeout=60):
        p = subprocess.run(self.base + list(args), env=self.env, capture_output=True, text=True,
                           timeout=timeout)
        if check and p.returncode != 0:
            raise RuntimeError("podman %s: %s" % (" ".join(args), p.stderr.strip()[-400:]))
        return p

    def start(self):
        # The image: the static server as the whole root filesystem, listening on every
        # interface of the container (the engine forwards the published port to it).
        rootfs = os.path.join(self.tmp, "rootfs")
        os.mkdir(rootfs)
        shutil.copy(FAKE_OPENAI_STATIC, os.path.join(rootfs, "fake_openai"))
        tar = os.path.join(self.tmp, "rootfs.tar")
        subprocess.run(["tar", "-C", rootfs, "-cf", tar, "fake_openai"], check=True)
        self.cli("import", "--change",
                 'ENTRYPOINT ["/fake_openai", "--listen", "0.0.0.0", "--port", "8000"]', tar, IMAGE)
        self.service = subprocess.Popen(self.base + ["system", "service", "--time=0",
                                                     "unix://" + self.sock],
                                        env=self.env, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True)
        for _ in range(200):
            if os.path.exists(self.sock) and self.api("GET", "/version")[0] == 200:
                break
            if self.service.poll() is not None:
                raise RuntimeError("podman system service exited: " + self.service.stderr.read()[-400:])
            time.sleep(0.05)
        else:
            raise RuntimeError("podman system service did not answer on " + self.sock)
        # Can it run a container here at all? (--bogus: the server prints its usage, exits 2.)
        p = self.cli("run", "--rm", IMAGE, "--bogus", check=False, timeout=60)
        if "usage: fake_openai" not in p.stdout + p.stderr:
            raise RuntimeError("podman cannot run a container here: " + p.stderr.strip()[-400:])

    def stop(self):
        if self.service:
            self.cli("rm", "-af", "-t", "0", check=False)
            self.service.send_signal(signal.SIGTERM)
            try:
                self.service.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.service.kill()
                self.service.wait()
            self.service.stderr.close()
        # The storage is this test's alone (--root, --runroot): removing it removes the image.
        shutil.rmtree(self.tmp, ignore_errors=True)

    def api(self, method, path):
        """(status, decoded JSON or None) of one request on the socket."""
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(self.sock)
            s.sendall(("%s /v1.41%s HTTP/1.1\r\nHost: d\r\nConnection: close\r\n\r\n" % (method, path)).encode())
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except OSError:
            return 0, None
        finally:
            s.close()
        head, _, body = data.partition(b"\r\n\r\n")
        status = int(head.split()[1]) if head else 0
        if b"Transfer-Encoding: chunked" in head:
            out, rest = b"", body
            while rest:
                size, _, rest = rest.partition(b"\r\n")
                n = int(size, 16)
                if n == 0:
                    break
                out, rest = out + rest[:n], rest[n + 2:]
            body = out
        try:
            return status, json.loads(body)
        except ValueError:
            return status, None

    def gpumon_containers(self):
        f = urllib.parse.quote(json.dumps({"label": ["gpumon.owner"]}))
        return self.api("GET", "/containers/json?all=1&filters=" + f)[1] or []


def setUpModule():
    global PODMAN, SKIP
    PODMAN = None
    if not shutil.which("podman"):
        SKIP = "podman is not installed (scripts/install-deps.sh test installs it)"
    elif not os.path.exists(FAKE_OPENAI_STATIC):
        SKIP = "fake_openai_static was not built (libjansson.a missing: libjansson-dev)"
    else:
        PODMAN = Podman()
        try:
            PODMAN.start()
        except (RuntimeError, subprocess.SubprocessError, OSError) as e:
            SKIP = "podman cannot run here: %s" % e
            PODMAN.stop()
            PODMAN = None


def tearDownModule():
    if PODMAN:
        PODMAN.stop()


class PodmanTests(unittest.TestCase):
    def setUp(self):
        if SKIP:
            self.skipTest(SKIP)
        self.tmp = tempfile.mkdtemp(prefix="gm-ctr-")
        self.db = os.path.join(self.tmp, "gpumon.db")
        self.env = env(extra={"DOCKER_HOST": "unix://" + PODMAN.sock,
                              "GPU_MONITOR_LEASE_DIR": os.path.join(self.tmp, "leases")})

    def tearDown(self):
        if SKIP:
            return
        left = PODMAN.gpumon_containers()
        shutil.rmtree(self.tmp, ignore_errors=True)
        # Nothing is ever left behind (the kill -9 test cleans up after itself).
        self.assertEqual([c["Names"] for c in left], [])

    def gpumon(self, *args, timeout=60):
        return run(list(args), env=self.env, timeout=timeout)

    def bench_args(self, *extra):
        return ["bench", "--image", IMAGE, "--simulate", "2", "--idle-seconds", "0",
                "--requests", "10"] + list(extra)

    def stored(self, bench_id):
        with sqlite3.connect(self.db) as db:
            row = db.execute("SELECT doc FROM sessions WHERE id = ?", (bench_id,)).fetchone()
        return json.loads(row[0]) if row else None

    def wait_for_container(self, proc):
        """The container of gpumon process proc, once the engine lists it."""
        for _ in range(600):
            cs = [c for c in PODMAN.gpumon_containers()
                  if c["Labels"]["gpumon.owner"].endswith(":%d" % proc.pid)]
            if cs:
                return cs[0]
            if proc.poll() is not None:
                self.fail("gpumon ended before its container appeared: %s" % proc.stderr.read())
            time.sleep(0.05)
        self.fail("no container appeared")

    def test_full_flow(self):
        out = os.path.join(self.tmp, "out.json")
        proc = subprocess.Popen([GPUMON] + self.bench_args("-o", out, "--db", self.db, "--",
                                                           "--ready-after-ms", "1500"),
                                env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            c = self.wait_for_container(proc)
            # Published on 127.0.0.1 only: the engine says so, the loopback address answers
            # and this host's other addresses do not.
            ports = [p for p in c["Ports"] if p["PrivatePort"] == 8000]
            self.assertEqual([p["IP"] for p in ports], ["127.0.0.1"])
            port = ports[0]["PublicPort"]
            self.assertTrue(c["Names"][0].startswith("/gpumon-"))
            for _ in range(100):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.05)
            else:
                self.fail("nothing answers on 127.0.0.1:%d" % port)
            addrs = re.findall(r"inet (\d+\.\d+\.\d+\.\d+)/", subprocess.run(
                ["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout) \
                if shutil.which("ip") else []
            for a in addrs:
                if a.startswith("127.") or a.startswith("10.88."):
                    continue  # loopback; podman's own bridge reaches the container directly
                with self.assertRaises(OSError, msg="port %d answers on %s" % (port, a)):
                    socket.create_connection((a, port), timeout=1).close()
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.assertEqual(proc.returncode, 0, err)
        with open(out) as f:
            doc = json.load(f)
        c = doc["container"]
        # Readiness was waited for: the server said ready 1.5 s after it started, and only
        # then was it measured.
        self.assertGreaterEqual(c["time_to_ready_s"], 1.4)
        self.assertEqual(c["ready_path"], "/v1/health/ready")
        self.assertLess(err.index("ready after"), err.index("Serving Benchmark Result"))
        self.assertEqual(doc["points"][0]["completed"], 10)
        self.assertEqual(c["image"], IMAGE)
        self.assertTrue(c["image_id"].startswith("sha256:"))
        self.assertEqual(c["engine"].split()[0], "Podman")
        self.assertEqual(c["name"], "gpumon-" + doc["id"])
        self.assertEqual(c["exit"]["status"], "exited")
        self.assertTrue(c["exit"]["stopped_by_gpumon"])
        self.assertTrue(c["removed"])
        self.assertIsNone(c["logs"])
        self.assertGreater(c["loading"]["duration_s"], 1.4)
        self.assertIsNotNone(c["loading"]["energy_j"])
        self.assertIsNotNone(c["loading"]["memory_used_mib_after"])
        self.assertAlmostEqual(self.stored(doc["id"])["container"]["time_to_ready_s"],
                               c["time_to_ready_s"], places=6)
        # history show prints it.
        p = self.gpumon("history", "--db", self.db, "show", doc["id"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("container gpumon-" + doc["id"], p.stdout)

    def test_missing_image_fails_naming_it(self):
        p = self.gpumon("bench", "--image", "localhost/gpumon-absent:9", "--simulate", "2", "--no-db")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("image localhost/gpumon-absent:9 is not on this machine", p.stderr)
        self.assertIn("--pull", p.stderr)
        # --pull asks the engine, which has no registry to pull it from: its words, the image's
        # name.
        p = self.gpumon("bench", "--image", "localhost/gpumon-absent:9", "--pull", "--simulate", "2",
                        "--no-db")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("gpumon bench: pulling image localhost/gpumon-absent:9: ", p.stderr)
        self.assertNotIn("leased", p.stderr)

    def test_never_ready_times_out_and_is_removed(self):
        out = os.path.join(self.tmp, "out.json")
        p = self.gpumon(*self.bench_args("--ready-timeout", "2", "-o", out, "--db", self.db, "--",
                                         "--never-ready", "--say", "loading weights"))
        self.assertEqual(p.returncode, 5, p.stderr)
        self.assertIn("was not ready after 2 s (last: GET /v1/health/ready: 503)", p.stderr)
        self.assertIn("| loading weights", p.stderr)
        self.assertIn("removed container gpumon-", p.stderr)
        with open(out) as f:
            doc = json.load(f)
        self.assertEqual(doc["container"]["failure"], "timeout")
        self.assertEqual(doc["container"]["logs"], ["loading weights"])
        self.assertTrue(doc["container"]["removed"])
        self.assertEqual(doc["points"], [])
        self.assertIsNotNone(self.stored(doc["id"]))

    def test_sigint_or_sigterm_during_the_wait_removes_it(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            proc = subprocess.Popen([GPUMON] + self.bench_args("--no-db", "--", "--never-ready"),
                                    env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)
            self.wait_for_container(proc)
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=30)
            self.assertEqual(proc.returncode, 128 + sig, err)
            self.assertIn("removed container gpumon-", err)
            self.assertEqual(PODMAN.gpumon_containers(), [])

    def test_keep_container(self):
        p = self.gpumon(*self.bench_args("--no-db", "--keep-container"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("kept container gpumon-", p.stderr)
        kept = PODMAN.gpumon_containers()
        self.assertEqual([(c["State"], c["Labels"]["gpumon.keep"]) for c in kept], [("running", "1")])
        # Its gpumon is gone, but it was kept on purpose: only --all removes it.
        p = self.gpumon("containers", "cleanup")
        self.assertIn("removed 0 containers; 1 kept with --keep-container", p.stdout)
        p = self.gpumon("containers", "cleanup", "--all", "--dry-run")
        self.assertIn("would remove " + kept[0]["Names"][0][1:], p.stdout)
        self.assertEqual(len(PODMAN.gpumon_containers()), 1)
        p = self.gpumon("containers", "cleanup", "--all")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(PODMAN.gpumon_containers(), [])

    def test_exits_at_once_prints_its_output(self):
        out = os.path.join(self.tmp, "out.json")
        p = self.gpumon(*self.bench_args("-o", out, "--db", self.db, "--", "--no-such-flag"))
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertRegex(p.stderr, r"exited with status 2 after [\d.]+ s, before it was ready")
        self.assertIn("  | usage: fake_openai", p.stderr)
        with open(out) as f:
            doc = json.load(f)
        c = doc["container"]
        self.assertEqual(c["failure"], "exited")
        self.assertEqual(c["exit"]["exit_code"], 2)
        self.assertFalse(c["exit"]["stopped_by_gpumon"])
        self.assertTrue(c["logs"][0].startswith("usage: fake_openai"))
        self.assertLessEqual(len(c["logs"]), 50)
        self.assertEqual(self.stored(doc["id"])["container"]["logs"], c["logs"])

    def test_cleanup_removes_what_a_killed_gpumon_left(self):
        proc = subprocess.Popen([GPUMON] + self.bench_args("--no-db", "--", "--never-ready"),
                                env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.wait_for_container(proc)
        p = self.gpumon("containers", "cleanup")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("removed 0 containers; 1 in use by a running gpumon", p.stdout)
        proc.kill()
        proc.communicate()
        p = self.gpumon("containers", "list", "--format", "json")
        self.assertEqual(p.returncode, 0, p.stderr)
        listed = json.loads(p.stdout)
        self.assertEqual([c["owner_state"] for c in listed], ["gone"])
        self.assertTrue(listed[0]["owner"].endswith(":%d" % proc.pid))
        p = self.gpumon("containers", "cleanup")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("removed %s" % listed[0]["name"], p.stdout)
        self.assertEqual(PODMAN.gpumon_containers(), [])

    def test_run_image_records_it_and_passes_its_status(self):
        out = os.path.join(self.tmp, "run.json")
        p = self.gpumon("run", "--simulate", "2", "--db", self.db, "-o", out, "--image", IMAGE,
                        "--", "--no-such-flag")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("usage: fake_openai", p.stderr)  # its output, shown as it came
        with open(out) as f:
            doc = json.load(f)
        self.assertEqual(doc["kind"], "run")
        self.assertEqual(doc["exit_code"], 2)
        self.assertEqual(doc["command"], [IMAGE, "--no-such-flag"])
        self.assertEqual(doc["container"]["name"], "gpumon-" + doc["id"])
        self.assertIsNotNone(self.stored(doc["id"]))


if __name__ == "__main__":
    unittest.main()
