"""An idle `gpumon serve` (no clients) sleeps between samples: no thread of it wakes without work
(the event loop not at all, the others about once per sample), a request still gets the newest
sample, and a WebSocket client's first frame is the newest sample."""
import asyncio
import glob
import json
import time
import unittest

import websockets

from daemon import Daemon


def wakeups(pid):
    """{tid: voluntary context switches} of every thread of pid: each is a sleep, so a wake."""
    out = {}
    for status in glob.glob("/proc/%d/task/*/status" % pid):
        tid = int(status.split("/")[4])
        try:
            with open(status) as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        out[tid] = int(line.split()[1])
        except FileNotFoundError:
            pass
    return out


async def first_frame(url):
    async with websockets.connect(url, max_size=None, open_timeout=5) as ws:
        return json.loads(await asyncio.wait_for(ws.recv(), timeout=5))


class Idle(unittest.TestCase):
    def setUp(self):
        # The fake NVML GPUs take XID registration, so the XID watch is on as on real GPUs.
        self.d = Daemon(["--interval", "1", "--db", "none"], scenario="health.json").start()

    def tearDown(self):
        self.d.stop()

    def test_no_thread_wakes_without_work(self):
        pid = self.d.proc.pid
        time.sleep(1.5)  # the start's own wake-ups are over
        before = wakeups(pid)
        window = 4.0
        time.sleep(window)
        after = wakeups(pid)
        self.assertEqual(set(before), set(after), "threads came or went while idle")
        # No request, no connection, no WebSocket client: the loop has nothing to do.
        self.assertEqual(after[pid] - before[pid], 0, "the event loop woke while idle")
        # The sampler (and the session worker it feeds) wake once a sample: 4 or 5 in 4 s.
        # A thread polling on a timer (250 ms, 200 ms) would wake 16 or 20 times.
        for tid in after:
            self.assertLessEqual(after[tid] - before[tid], window + 3,
                                 "thread %d woke %d times in %.0f s at 1 Hz"
                                 % (tid, after[tid] - before[tid], window))

    def test_request_gets_the_newest_sample(self):
        a = self.d.get_json("/api/gpus")["seq"]
        time.sleep(2.5)
        b = self.d.get_json("/api/gpus")["seq"]
        self.assertGreaterEqual(b, a + 2, "a request after an idle stretch is served a stale sample")

    def test_websocket_first_frame_is_the_newest_sample(self):
        time.sleep(2.5)  # samples the loop was not woken for
        url = "ws://127.0.0.1:%d/ws/gpu" % self.d.port
        start = time.time()
        frame = asyncio.run(first_frame(url))
        # Taken within the last sampling period (1 s), not at the daemon's start.
        self.assertGreaterEqual(frame["timestamp_ms"] / 1000.0, start - 1.5)


if __name__ == "__main__":
    unittest.main()
