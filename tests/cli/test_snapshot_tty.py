"""`gpumon snapshot` averages power over a window of seconds: on a terminal it says so on stderr
while it waits and takes the line back after; piped, stderr stays empty."""
import json
import os
import pty
import select
import shutil
import subprocess
import tempfile
import time
import unittest

from gmtest import GPUMON, env, run


class SnapshotSaysWhatItWaitsFor(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gm-snap-tty-")
        self.out = os.path.join(self.tmp, "snap.json")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_on_a_terminal(self):
        master, slave = pty.openpty()
        proc = subprocess.Popen([GPUMON, "snapshot", "--simulate", "1", "--power-window", "1s",
                                 "-o", self.out], env=env(), stdout=slave, stderr=slave)
        os.close(slave)
        data, first_seen, deadline = b"", None, time.time() + 20
        while time.time() < deadline:
            r, _, _ = select.select([master], [], [], 0.1)
            if r:
                try:
                    chunk = os.read(master, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                data += chunk
            if first_seen is None and b"averaging GPU power over 1 s" in data:
                first_seen = proc.poll()  # said while it still runs
            if proc.poll() is not None and not r:
                break
        proc.wait(timeout=10)
        os.close(master)
        text = data.decode(errors="replace")
        self.assertEqual(proc.returncode, 0, text)
        self.assertIn("gpumon snapshot: averaging GPU power over 1 s...", text)
        self.assertIsNone(first_seen)
        # The line is taken back: nothing of it stays on the screen.
        self.assertTrue(text.endswith("\r\x1b[K"), repr(text[-60:]))
        with open(self.out) as f:
            self.assertIn("gpus", json.load(f))

    def test_piped_it_is_silent(self):
        p = run(["snapshot", "--simulate", "1", "--power-window", "200ms", "-o", self.out],
                env=env())
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "")
        self.assertEqual(p.stdout, "")


if __name__ == "__main__":
    unittest.main()
