"""deploy/nginx/gpumon.conf through a real nginx: the dashboard under /gpumon/ with its assets
(relative URLs), the API, /metrics, a POST from the dashboard's own origin, and the WebSocket
stream through the upgrade."""
import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

from daemon import Daemon

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
CHROMIUM = shutil.which("chromium")
ROOT = os.environ.get("GM_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@unittest.skipUnless(NGINX, "nginx (Debian package nginx-light) is not installed")
class BehindNginx(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon(["--db", "none", "--simulate", "2"]).start()
        cls.tmp = tempfile.mkdtemp(prefix="gpumon-nginx-")
        cls.port = free_port()
        with open(os.path.join(ROOT, "deploy", "nginx", "gpumon.conf")) as f:
            site = f.read()
        # The shipped file, pointed at this test's daemon and port.
        site = site.replace("server 127.0.0.1:9401;", "server 127.0.0.1:%d;" % cls.d.port)
        site = site.replace("listen 80;", "listen 127.0.0.1:%d;" % cls.port)
        t = cls.tmp
        conf = """
pid %s/nginx.pid;
error_log %s/error.log warn;
worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path %s/body; proxy_temp_path %s/proxy;
    fastcgi_temp_path %s/fcgi; uwsgi_temp_path %s/uwsgi; scgi_temp_path %s/scgi;
    %s
}
""" % (t, t, t, t, t, t, t, site)
        if os.geteuid() == 0:
            conf = "user root;\n" + conf
        path = os.path.join(t, "nginx.conf")
        with open(path, "w") as f:
            f.write(conf)
        check = subprocess.run([NGINX, "-t", "-p", t, "-c", path], capture_output=True, text=True)
        assert check.returncode == 0, check.stderr
        cls.nginx = subprocess.Popen([NGINX, "-p", t, "-c", path, "-g", "daemon off;"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", cls.port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        cls.base = "http://127.0.0.1:%d" % cls.port

    @classmethod
    def tearDownClass(cls):
        cls.nginx.terminate()
        cls.nginx.wait(timeout=10)
        cls.d.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def get(self, path, **kw):
        return self.d.request(path, base=self.base, **kw)

    def test_a_browser_renders_the_dashboard_under_the_sub_path(self):
        # Debian's Chromium, headless, driven over its DevTools protocol (python3-websockets):
        # the page at /gpumon/ loads its scripts and styles, asks the API and opens the stream
        # through nginx by relative URLs, and fills a card per GPU.
        if not CHROMIUM:
            self.skipTest("chromium is not installed (scripts/install-deps.sh test)")
        import urllib.request

        import websockets

        prof = os.path.join(self.tmp, "chromium")
        chrome = subprocess.Popen([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu",
                                   "--no-first-run", "--remote-debugging-port=0",
                                   "--user-data-dir=" + prof, "about:blank"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            devtools = None
            deadline = time.time() + 30
            while time.time() < deadline and devtools is None:
                line = chrome.stderr.readline()
                m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line or "")
                if m:
                    devtools = int(m.group(1))
            self.assertIsNotNone(devtools, "Chromium did not start its DevTools endpoint")
            with urllib.request.urlopen("http://127.0.0.1:%d/json/list" % devtools) as r:
                page = next(t for t in json.load(r) if t["type"] == "page")

            async def drive():
                async with websockets.connect(page["webSocketDebuggerUrl"], max_size=None) as ws:
                    n = 0

                    async def call(method, **params):
                        nonlocal n
                        n += 1
                        await ws.send(json.dumps({"id": n, "method": method, "params": params}))
                        while True:
                            msg = json.loads(await ws.recv())
                            if msg.get("id") == n:
                                return msg.get("result", {})

                    await call("Page.navigate", url=self.base + "/gpumon/")
                    probe = ("JSON.stringify([document.querySelectorAll('[data-gpu-index]').length,"
                             " document.body ? document.body.innerText : ''])")
                    end = time.time() + 20
                    while True:
                        r = await call("Runtime.evaluate", expression=probe, returnByValue=True)
                        cards, text = json.loads(r["result"]["value"])
                        if cards >= 2 or time.time() > end:
                            return cards, text
                        await asyncio.sleep(0.2)

            cards, text = asyncio.run(drive())
        finally:
            chrome.terminate()
            chrome.wait(timeout=10)
            chrome.stderr.close()
        self.assertGreaterEqual(cards, 2, text[:500])
        self.assertIn("H100", text)  # a simulated GPU's name, from the stream through nginx

    def test_dashboard_and_assets_under_the_sub_path(self):
        status, hdrs, body = self.get("/gpumon")
        self.assertEqual(status, 301)
        status, hdrs, body = self.get("/gpumon/")
        self.assertEqual(status, 200, body[:200])
        page = body.decode()
        assets = re.findall(r'(?:src|href)="(\./assets/[^"]+)"', page)
        self.assertTrue(assets, page)  # relative: resolved under /gpumon/
        for a in assets:
            status, hdrs, _ = self.get("/gpumon/" + a[2:])
            self.assertEqual(status, 200, a)

    def test_api_and_metrics(self):
        status, _, body = self.get("/gpumon/api/health")
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body)["status"], "ok")
        status, _, body = self.get("/gpumon/metrics")
        self.assertEqual(status, 200)
        self.assertIn(b"DCGM_FI_DEV_GPU_UTIL", body)

    def test_post_from_the_dashboard_origin(self):
        # The browser's Origin is the proxy's host and port; nginx passes that Host on.
        status, _, doc = self.d.call("/gpumon/api/sessions", "POST", obj={"gpus": [0]},
                                     base=self.base,
                                     headers=["Origin: http://127.0.0.1:%d" % self.port])
        self.assertEqual(status, 201, doc)
        status, _, _ = self.d.call("/gpumon/api/sessions/%s/stop" % doc["id"], "POST",
                                   base=self.base,
                                   headers=["Origin: http://127.0.0.1:%d" % self.port])
        self.assertEqual(status, 200)
        status, _, _ = self.d.call("/gpumon/api/sessions", "POST", obj={}, base=self.base,
                                   headers=["Origin: http://evil.example"])
        self.assertEqual(status, 403)

    def test_websocket_through_the_upgrade(self):
        import websockets

        async def first_frame():
            url = "ws://127.0.0.1:%d/gpumon/ws/gpu" % self.port
            async with websockets.connect(url, open_timeout=10) as ws:
                return json.loads(await asyncio.wait_for(ws.recv(), 10))

        doc = asyncio.run(first_frame())
        self.assertEqual(len(doc["gpus"]), 2)


if __name__ == "__main__":
    unittest.main()
