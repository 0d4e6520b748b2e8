"""Starts the real `gpumon serve` on an ephemeral port for tests, and talks to it with libcurl
(pycurl) and an independent WebSocket client (python3-websockets)."""
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from gmtest import FAKE_NVML, GPUMON, env  # noqa: E402

import pycurl  # noqa: E402


class Daemon:
    """A gpumon serve process; use as a context manager."""

    def __init__(self, args=(), nvml=FAKE_NVML, scenario="two_gpus.json", extra_env=None, smi=False):
        self.tmp = tempfile.mkdtemp(prefix="gpumon-e2e-")
        self.port_file = os.path.join(self.tmp, "port")
        self.args = ["serve", "--listen", "127.0.0.1:0", "--port-file", self.port_file] + list(args)
        self.env = env(nvml=nvml, scenario=scenario, smi=smi, extra=extra_env)
        self.proc = None
        self.port = None
        self.stderr_path = os.path.join(self.tmp, "stderr")

    def start(self, timeout=20):
        self.stderr = open(self.stderr_path, "w")
        self.proc = subprocess.Popen([GPUMON] + self.args, env=self.env, stdout=subprocess.DEVNULL,
                                     stderr=self.stderr)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("gpumon serve exited %d: %s" % (self.proc.returncode, self.log()))
            try:
                with open(self.port_file) as f:
                    text = f.read()
                if text.endswith("\n"):
                    self.port = int(text)
                    return self
            except (FileNotFoundError, ValueError):
                pass
            time.sleep(0.02)
        raise AssertionError("gpumon serve did not listen in time: " + self.log())

    def log(self):
        try:
            with open(self.stderr_path) as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def stop(self, sig=signal.SIGTERM, timeout=10):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("gpumon serve did not stop on signal %d" % sig)
        if getattr(self, "stderr", None):
            self.stderr.close()
        return self.proc.returncode

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def base(self):
        return "http://127.0.0.1:%d" % self.port

    def rss_kib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def request(self, path, method="GET", headers=(), body=None, timeout=10, base=None,
                path_as_is=False):
        """Returns (status, headers dict with lower-case names, body bytes). base replaces
        http://127.0.0.1:PORT (e.g. another address of this host); path_as_is sends the path
        without curl's dot-segment cleanup (for traversal tests)."""
        c = pycurl.Curl()
        buf = io.BytesIO()
        hdrs = {}

        def on_header(line):
            line = line.decode("iso-8859-1").strip()
            if ":" in line:
                k, v = line.split(":", 1)
                hdrs[k.strip().lower()] = v.strip()

        c.setopt(pycurl.URL, (base or self.base) + path)
        if path_as_is:
            c.setopt(pycurl.PATH_AS_IS, 1)
        c.setopt(pycurl.WRITEDATA, buf)
        c.setopt(pycurl.HEADERFUNCTION, on_header)
        c.setopt(pycurl.TIMEOUT, timeout)
        c.setopt(pycurl.HTTPHEADER, list(headers))
        if method == "HEAD":
            c.setopt(pycurl.NOBODY, True)
        elif method != "GET":
            c.setopt(pycurl.CUSTOMREQUEST, method)
        if body is not None:
            c.setopt(pycurl.POSTFIELDS, body)
        c.perform()
        status = c.getinfo(pycurl.RESPONSE_CODE)
        c.close()
        return status, hdrs, buf.getvalue()

    def call(self, path, method="GET", obj=None, raw=None, headers=(),
             content_type="application/json", **kw):
        """A JSON API call: obj is sent as JSON (raw: bytes as they are), with content_type
        (None: no Content-Type header). Returns (status, headers, parsed body or None)."""
        hdrs = list(headers)
        body = raw if raw is not None else (json.dumps(obj).encode() if obj is not None else None)
        if body is not None:
            # No "Expect: 100-continue" round trip unless a test asks for it.
            if not any(h.lower().startswith("expect:") for h in hdrs):
                hdrs.append("Expect:")
            if content_type is not None:
                hdrs.append("Content-Type: " + content_type)
            else:
                hdrs.append("Content-Type:")
        status, rh, data = self.request(path, method=method, headers=hdrs, body=body, **kw)
        parsed = json.loads(data) if data and rh.get("content-type", "").startswith("application/json") else None
        return status, rh, parsed

    def get_json(self, path, expect=200, headers=()):
        status, hdrs, body = self.request(path, headers=headers)
        assert status == expect, "%s: %d %r" % (path, status, body[:300])
        assert hdrs.get("content-type", "").startswith("application/json"), hdrs
        return json.loads(body)

    def wait_for(self, predicate, timeout=10, interval=0.05):
        deadline = time.time() + timeout
        while time.time() < deadline:
            v = predicate()
            if v:
                return v
            time.sleep(interval)
        raise AssertionError("condition not met in %.1fs" % timeout)
