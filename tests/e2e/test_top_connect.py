"""`gpumon top --connect URL` against a real `gpumon serve` (REST /api/gpus through libcurl),
in tmux: the token from --token or GPU_MONITOR_TOKEN, a 401 said in words, and a daemon that
goes away shown as such while the last reading stays."""
import json
import os
import re
import shutil
import sys
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from daemon import Daemon

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from gmtest import env  # noqa: E402
from test_top import TMUX, TmuxScreen  # noqa: E402


@unittest.skipUnless(TMUX, "tmux is not installed (scripts/install-deps.sh test)")
class TopConnect(TmuxScreen, unittest.TestCase):
    def setUp(self):
        super().setUp()
        self.d = Daemon(["--simulate", "2", "--interval", "0.2", "--token", "s3cret"]).start()
        self.env = env()

    def tearDown(self):
        self.d.stop()
        shutil.rmtree(self.d.tmp, ignore_errors=True)
        super().tearDown()

    def test_token_401_and_daemon_gone(self):
        # No token: the daemon says 401 and top says what to do.
        self.start(["--connect", self.d.base, "--interval", "0.2"])
        text = self.wait_screen(lambda t: "answered 401" in t)
        self.assertIn("%s answered 401: give its token with --token or GPU_MONITOR_TOKEN" % self.d.base, text)
        self.keys("q")
        self.assertEqual(self.exit_status(), 0)
        self.tmux("kill-server")
        self.socket += "-b"

        # The token from the environment; the daemon's GPUs and processes, by URL.
        self.start(["--connect", self.d.base.replace("http://", ""), "--interval", "0.2"],
                   extra_env={"GPU_MONITOR_TOKEN": "s3cret"})
        text = self.wait_screen(lambda t: "python train.py --simulated" in t)
        lines = text.splitlines()
        self.assertTrue(lines[0].startswith(" gpumon top  %s  " % self.d.base), lines[0])
        self.assertIn("2 GPUs", lines[1])
        self.assertIn("provider sim", lines[1])
        self.assertRegex(text, r"0   H100 80GB HBM3 +UTIL\[")
        self.assertRegex(text, r"1   H100 80GB HBM3 +UTIL\[")
        # Simulated processes have PIDs no process of this host has: not killable.
        self.keys("K")
        self.wait_screen(lambda t: "is not a process this host shows in /proc" in t)

        # The daemon stops: the error, with the last reading still on the screen.
        self.d.stop()
        text = self.wait_screen(lambda t: "(showing the last reading)" in t)
        self.assertIn("python train.py --simulated", text)
        self.keys("q")
        self.assertEqual(self.exit_status(), 0)

    def test_id_filter(self):
        self.start(["--connect", self.d.base, "--token", "s3cret", "--interval", "0.2", "-i", "1"])
        text = self.wait_screen(lambda t: "GPU 1 utilization" in t and "q quit" in t)
        self.assertIn("1 GPU ", text.splitlines()[1])
        self.assertRegex(text, r"1   H100 80GB HBM3 +UTIL\[")
        self.assertNotRegex(text, r"0   H100 80GB HBM3")
        self.keys("q")
        self.assertEqual(self.exit_status(), 0)
        self.tmux("kill-server")
        self.socket += "-b"
        os.unlink(self.status)
        # An id the daemon has no GPU for: said before the screen is taken.
        self.start(["--connect", self.d.base, "--token", "s3cret", "-i", "5"])
        self.assertEqual(self.exit_status(), 2)
        self.assertIn('gpumon top: no GPU matches "5" (have 2 GPUs)', self.screen())

    def test_token_flag(self):
        self.start(["--connect", self.d.base + "/", "--token", "s3cret", "--interval", "0.2"])
        self.wait_screen(lambda t: "python train.py --simulated" in t)
        self.keys("q")
        self.assertEqual(self.exit_status(), 0)


def gpu(index, uuid, util):
    return {"index": index, "name": "GPU %s" % uuid[-1], "uuid": uuid,
            "pci_bus_id": "00000000:%02X:00.0" % (0x1B + index), "lost": False,
            "utilization": {"gpu": util}, "memory": {"total_bytes": 2**30, "used_bytes": 2**29},
            "processes": []}


class Reordering(BaseHTTPRequestHandler):
    """A daemon that lists its two GPUs in turn in one order and the other: GPU A always at
    100 %, GPU B idle."""
    n = 0

    def do_GET(self):
        a = gpu(0, "GPU-aaaaaaaa-0000-4000-8000-00000000000a", 100)
        b = gpu(1, "GPU-bbbbbbbb-0000-4000-8000-00000000000b", 0)
        type(self).n += 1
        doc = {"hostname": "far", "provider": "nvml", "gpu_count": 2,
               "gpus": [a, b] if self.n % 2 else [b, a], "system": None}
        body = json.dumps(doc).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@unittest.skipUnless(TMUX, "tmux is not installed (scripts/install-deps.sh test)")
class TopConnectOrder(TmuxScreen, unittest.TestCase):
    def setUp(self):
        super().setUp()
        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), Reordering)
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self.env = env()

    def tearDown(self):
        self.srv.shutdown()
        self.srv.server_close()
        super().tearDown()

    def test_history_follows_the_gpu_not_its_position(self):
        url = "http://127.0.0.1:%d" % self.srv.server_address[1]
        self.start(["--connect", url, "--interval", "0.1"], extra_env={"LC_ALL": "C"})

        def graph_left(t):
            """The utilization graph's rows (the left half, ASCII: '|' a filled cell)."""
            lines = t.splitlines()
            try:
                top = next(i for i, l in enumerate(lines) if "utilization %" in l)
                end = next(i for i, l in enumerate(lines) if "power %" in l or "COMMAND" in l)
            except StopIteration:
                return []
            return [l[1:49] for l in lines[top + 1:end]]

        # GPU A's graph grows reading after reading (each of its columns full: 100 %), although
        # it is listed first, then second, then first...
        text = self.wait_screen(lambda t: "q quit" in t and len(graph_left(t)) > 1
                                and graph_left(t)[-1].count("|") >= 12)
        self.assertIn("GPU 0 utilization", text)
        for row in graph_left(text):
            # A gap between filled columns would be GPU B's idle readings mixed into A's graph.
            self.assertIsNone(re.search(r"\|[ _]+\|", row), row)
        self.keys("q")
        self.assertEqual(self.exit_status(), 0)


if __name__ == "__main__":
    unittest.main()
