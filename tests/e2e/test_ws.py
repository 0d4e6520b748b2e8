"""`gpumon serve` WebSocket streams (src/server/ws.c) end to end and hostile clients: rate cap, slow
readers, malformed input."""
import asyncio
import json
import os
import socket
import time
import unittest

import websockets

from daemon import Daemon


async def collect(url, seconds, headers=None):
    frames = []
    async with websockets.connect(url, max_size=None, open_timeout=5) as ws:
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            try:
                msg = await asyncio.wait_for(ws.recv(), timeout=max(0.01, seconds - (time.monotonic() - t0)))
            except asyncio.TimeoutError:
                break
            frames.append((time.monotonic() - t0, json.loads(msg)))
    return frames


class Streams(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # Samples at 20 Hz, frames capped at 5 Hz per client.
        cls.d = Daemon(["--poll-interval", "100", "--ws-max-rate", "5"], scenario="two_gpus.json").start()

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def ws(self, path):
        return "ws://127.0.0.1:%d%s" % (self.d.port, path)

    def test_gpu_stream_first_frame_then_capped_rate(self):
        frames = asyncio.run(collect(self.ws("/ws/gpu"), 3.0))
        self.assertGreater(len(frames), 0)
        self.assertLess(frames[0][0], 1.0, "the latest snapshot arrives on connect")
        first = frames[0][1]
        self.assertEqual(first["gpu_count"], 2)
        self.assertEqual(first["gpus"][0]["utilization"]["gpu"], 87)
        # 10 Hz sampling, 5 Hz cap: about 15 frames in 3 s, never much more.
        self.assertLessEqual(len(frames), 17)
        self.assertGreaterEqual(len(frames), 10)
        seqs = [f[1]["seq"] for f in frames]
        self.assertEqual(seqs, sorted(set(seqs)), "frames are new samples, in order")

    def test_metrics_stream(self):
        frames = asyncio.run(collect(self.ws("/ws/metrics"), 1.0))
        self.assertGreater(len(frames), 0)
        m = frames[0][1]
        self.assertEqual(m["gpu_metrics"][0]["gpu_utilization"], 87)
        self.assertEqual(m["gpu_metrics"][0]["power_draw"], 512.345)

    def test_unknown_ws_path_refused(self):
        async def attempt():
            async with websockets.connect(self.ws("/ws/nope"), open_timeout=5):
                pass
        with self.assertRaises(Exception):
            asyncio.run(attempt())
        self.assertEqual(self.d.get_json("/api/health")["status"], "ok")


class Hostile(unittest.TestCase):
    def raw(self, port, data, read=True, timeout=5):
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        s.sendall(data)
        out = b""
        if read:
            try:
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    out += chunk
                    if b"\r\n\r\n" in out and len(out) > 12:
                        break
            except socket.timeout:
                pass
        s.close()
        return out

    def test_malformed_requests_then_still_serving(self):
        with Daemon(["--simulate", "2", "--poll-interval", "200"]) as d:
            for junk in (b"GARBAGE\r\n\r\n", b"GET\r\n\r\n", b"\x00\x01\x02\xff\r\n\r\n",
                         b"GET /api/gpus HTTP/1.1\r\nHost: x\r\n" + b"X-Big: " + b"a" * 20000 + b"\r\n\r\n",
                         b"POST /api/gpus HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\nabc",
                         b"GET /api/history?gpu=%zz HTTP/1.1\r\nHost: x\r\n\r\n"):
                out = self.raw(d.port, junk)
                if out:
                    status = int(out.split(b" ")[1])
                    self.assertGreaterEqual(status, 400, out[:200])
                    self.assertLess(status, 500, out[:200])
            self.assertEqual(d.get_json("/api/health")["status"], "ok")
            doc = d.get_json("/api/gpus")
            self.assertEqual(doc["gpu_count"], 2)

    def test_never_reading_clients_leave_memory_flat(self):
        # 16 GPUs at 10 Hz: ~20 KB frames; 40 clients that complete the handshake and never read.
        # Under AddressSanitizer freed blocks sit in a quarantine (256 MiB by default) and RSS
        # grows until it fills, whatever the server does; keep it small so RSS means something.
        asan = {"ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=1"}
        with Daemon(["--simulate", "16", "--poll-interval", "100", "--ws-max-rate", "10"],
                    extra_env=asan) as d:
            socks = []
            req = ("GET /ws/gpu HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                   "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                   "Sec-WebSocket-Version: 13\r\n\r\n").encode()
            for _ in range(40):
                s = socket.create_connection(("127.0.0.1", d.port))
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.sendall(req)
                socks.append(s)
            time.sleep(1.5)
            rss_start = d.rss_kib()
            time.sleep(4)
            rss_end = d.rss_kib()
            # A reading client still gets fresh frames meanwhile.
            frames = asyncio.run(collect("ws://127.0.0.1:%d/ws/gpu" % d.port, 1.0))
            self.assertGreater(len(frames), 3)
            for s in socks:
                s.close()
            self.assertLess(rss_end - rss_start, 4096, "RSS grew from %d to %d KiB" % (rss_start, rss_end))
            self.assertEqual(d.get_json("/api/health")["status"], "ok")


if __name__ == "__main__":
    unittest.main()
