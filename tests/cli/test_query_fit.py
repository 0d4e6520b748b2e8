"""`gpumon query -l` on a terminal fits the terminal as `top` does: a frame never runs past the
last line (which would scroll its header away); process rows go first, then GPU rows, each
with a line saying what was left out. Piped, the output is whole. And the first one-shot
reading's CPU % comes from a window long enough to mean something, or reads n/a."""
import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import tempfile
import termios
import threading
import time
import unittest

from gmtest import GPUMON, env, run

CSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def read_frames(master, frames, timeout=15):
    data, deadline = b"", time.time() + timeout
    while time.time() < deadline and data.count(b"\x1b[J") < frames:
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                data += os.read(master, 65536)
            except OSError:
                break
    return data.decode(errors="replace")


def on_pty(args, rows, cols, frames=2, extra_env=None):
    """Runs gpumon query on a pty of rows x cols; returns the text of the second frame."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    e = env(extra=dict({"TERM": "xterm"}, **(extra_env or {})))
    proc = subprocess.Popen([GPUMON, "query"] + args, env=e, stdout=slave, stderr=slave)
    os.close(slave)
    try:
        text = read_frames(master, frames)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)
        os.close(master)
    parts = text.split("\x1b[H")
    assert len(parts) > frames, repr(text[:300])
    frame = parts[frames].split("\x1b[J")[0]
    return [CSI.sub("", l) for l in frame.replace("\r", "").split("\n")[:-1]]


class QueryFitsTheTerminal(unittest.TestCase):
    SIM16 = ["-l", "0.2", "--simulate", "16", "--seed", "7"]

    def test_16_gpus_in_80x24_keep_their_header(self):
        lines = on_pty(self.SIM16, 24, 80)
        self.assertLessEqual(len(lines), 23, "\n".join(lines))  # the cursor's line is left free
        self.assertIn("provider sim", lines[0])
        self.assertTrue(lines[1].startswith("GPU NAME"), lines[1])
        gpu_rows = [l for l in lines if re.match(r"^\d+ ", l)]
        self.assertEqual(len(gpu_rows), 16, "\n".join(lines))  # every GPU, one row each
        self.assertFalse([l for l in lines if "pid " in l], "\n".join(lines))  # processes went
        self.assertTrue(any(re.search(r"\(\d+ processes not shown: a taller terminal", l)
                            for l in lines), "\n".join(lines))
        self.assertTrue(lines[-1].startswith("host "), lines[-1])
        self.assertTrue(all(len(l) <= 80 for l in lines))

    def test_gpus_that_do_not_fit_are_counted(self):
        lines = on_pty(self.SIM16, 12, 80)
        self.assertLessEqual(len(lines), 11, "\n".join(lines))
        self.assertTrue(lines[1].startswith("GPU NAME"), lines[1])
        gpu_rows = [l for l in lines if re.match(r"^\d+ ", l)]
        self.assertEqual(len(gpu_rows), 11 - 4)
        self.assertIn("+9 GPUs not shown", "\n".join(lines))
        self.assertTrue(lines[-1].startswith("host "), lines[-1])

    def test_a_tall_terminal_shows_everything(self):
        lines = on_pty(self.SIM16, 60, 100)
        self.assertEqual(len([l for l in lines if re.match(r"^\d+ ", l)]), 16)
        self.assertTrue([l for l in lines if "pid " in l])
        self.assertFalse([l for l in lines if "not shown" in l])

    def test_piped_output_is_whole(self):
        p = run(["query", "--simulate", "16", "--seed", "7"], env=env())
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual(len([l for l in lines if re.match(r"^\d+ ", l)]), 16)
        self.assertGreater(len(lines), 24)
        self.assertTrue([l for l in lines if "pid " in l])
        self.assertNotIn("not shown", p.stdout)


def stat_text(busy, idle):
    return "cpu  %d 0 0 %d 0 0 0 0 0 0\ncpu0 %d 0 0 %d 0 0 0 0 0 0\n" % (busy, idle, busy, idle)


class FirstCpuReading(unittest.TestCase):
    """/proc/stat is a FIFO in a fake /proc (GM_TEST_PROCFS_ROOT): the test answers each read
    and notes when it came, so the window between the two readings is seen."""

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="gm-procfs-")
        self.fifo = os.path.join(self.root, "stat")
        os.mkfifo(self.fifo)

    def tearDown(self):
        os.unlink(self.fifo)
        os.rmdir(self.root)

    def query(self, contents, args):
        times = []

        def serve():
            for text in contents:
                with open(self.fifo, "w") as f:  # blocks until gpumon opens it
                    times.append(time.monotonic())
                    f.write(text)
                # gpumon closes its end right after the end of file; reopened before that, the
                # next text would go to the same reading.
                time.sleep(0.05)

        t = threading.Thread(target=serve, daemon=True)
        t.start()
        p = run(["query", "--simulate", "1", "--no-processes"] + args, timeout=20,
                env=env(extra={"GM_TEST_PROCFS_ROOT": self.root}))
        t.join(timeout=5)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(times), len(contents))
        return p.stdout, times[-1] - times[0]

    def test_one_shot_waits_a_real_window(self):
        out, window = self.query([stat_text(100, 1000), stat_text(130, 1000)], ["--format", "json"])
        # 150 ms: with 10 ms ticks a 30 ms window reads 0 % for a host busy most of the time.
        self.assertGreaterEqual(window, 0.14)
        self.assertAlmostEqual(json.loads(out)["system"]["cpu_percent"], 100.0, delta=0.01)

    def test_no_window_reads_n_a_not_zero(self):
        # Counters that did not move: no CPU figure at all.
        out, _ = self.query([stat_text(100, 1000), stat_text(100, 1000)], [])
        host = next(l for l in out.splitlines() if l.startswith("host "))
        self.assertIn("cpu n/a", host)
        self.assertNotIn("0.0%", host)


if __name__ == "__main__":
    unittest.main()
