"""`gpumon query`'s table as a terminal shows it: 80 columns with names shortened on word
boundaries, `-l N` redrawn in place on a terminal (like watch) and scrolling when piped, colour
on a terminal unless NO_COLOR or --color=never says otherwise."""
import os
import pty
import re
import select
import signal
import subprocess
import time
import unittest

from gmtest import FAKE_NVML, GPUMON, env, run, scenario_file

SGR = re.compile(r"\x1b\[[0-9;]*m")
LONG_NAME = "NVIDIA GeForce RTX 4090 Laptop GPU Founders Edition"


def scenario(pid):
    gpu = {"name": LONG_NAME, "uuid": "GPU-77770000-0000-4000-8000-000000000000",
           "pci_bus_id": "00000000:01:00.0", "util_gpu": 95, "util_mem": 40,
           "mem_total": 24 * 2**30, "mem_used": 23 * 2**30, "mem_free": 2**30, "temp": 88,
           "power_mw": 150000, "power_limit_mw": 450000, "fan": 100, "pstate": 0,
           "pcie_gen": 4, "pcie_width": 16,
           "processes": [{"pid": pid, "used_mem": 20 * 2**30, "type": "compute"}]}
    return scenario_file({"driver_version": "550.54.15", "cuda_version": 12040, "gpus": [gpu]})


def read_pty(master, until, timeout=10):
    data, deadline = b"", time.time() + timeout
    while time.time() < deadline and not until(data):
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                data += os.read(master, 65536)
            except OSError:
                break
    return data.decode(errors="replace")


class QueryView(unittest.TestCase):
    def setUp(self):
        # A process with a long command line for the GPU's process list.
        self.child = subprocess.Popen(["bash", "-c", "exec -a python3-long-training-script-name-"
                                       + "x" * 80 + " sleep 60"])
        self.scenario = scenario(self.child.pid)
        self.env = env(nvml=FAKE_NVML, scenario=self.scenario)
        self.env.pop("NO_COLOR", None)
        self.env["TERM"] = "xterm"

    def tearDown(self):
        self.child.kill()
        self.child.wait()
        os.unlink(self.scenario)

    def on_pty(self, args, extra_env=None, frames=2):
        master, slave = pty.openpty()
        e = dict(self.env, **(extra_env or {}))
        proc = subprocess.Popen([GPUMON, "query"] + args, env=e, stdout=slave, stderr=slave)
        os.close(slave)
        try:
            text = read_pty(master, lambda d: d.count(b"\x1b[J") >= frames)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=10)
            os.close(master)
        return text

    def test_fits_80_columns_with_names_cut_on_words(self):
        p = run(["query"], env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertTrue(all(len(l) <= 80 for l in lines), "\n".join(l for l in lines if len(l) > 80))
        self.assertEqual(len(lines[1]), 80)  # the header uses the whole width
        row = next(l for l in lines if l.startswith("0 "))
        # "NVIDIA " dropped, then cut after the last whole word that fits the 24 columns.
        self.assertEqual(row[4:29], "GeForce RTX 4090 Laptop  ")
        for part in ("88C", "95%", "23552 / 24576", "150 / 450", "100%", "P0", "4x16"):
            self.assertIn(part, row)
        proc_line = next(l for l in lines if "pid %d" % self.child.pid in l)
        self.assertEqual(len(proc_line), 80)
        self.assertIn("python3-long-training-script", proc_line)
        self.assertNotIn("\x1b", p.stdout)  # piped: no colour, no cursor movement

    def test_loop_scrolls_when_piped(self):
        proc = subprocess.Popen([GPUMON, "query", "-l", "0.1"], env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        # Until three readings came (the first waits its CPU window; a sanitized build is slow).
        out, deadline = "", time.time() + 15
        while out.count("GPU NAME") < 3 and time.time() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            out += line
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=10)
        out += rest
        self.assertEqual(proc.returncode, 0, err)
        self.assertNotIn("\x1b", out)
        frames = [f for f in out.split("\n\n") if f.strip()]
        self.assertGreaterEqual(len(frames), 3)
        for f in frames:
            self.assertIn("GPU NAME", f)

    def test_loop_redraws_in_place_on_a_terminal(self):
        text = self.on_pty(["-l", "0.1"], frames=3)
        # The first frame clears the screen, every later one starts at home and none scrolls:
        # each line clears its own end, each frame what is below it.
        self.assertTrue(text.startswith("\x1b[H\x1b[2J"), repr(text[:40]))
        frames = text.split("\x1b[H")[1:]
        self.assertGreaterEqual(len(frames), 3)
        self.assertEqual(text.count("\x1b[2J"), 1)
        for f in frames[:-1]:
            self.assertTrue(f.rstrip("\r\n").endswith("\x1b[J"), repr(f[-40:]))
            self.assertNotIn("\n\n", f.replace("\r", ""))
            body = SGR.sub("", f)
            self.assertIn("GPU NAME", body)
            for line in body.replace("\r", "").split("\n")[:-1]:
                self.assertTrue(line.endswith("\x1b[K"), repr(line))
                self.assertLessEqual(len(line) - 3, 96)

    def test_colour_on_a_terminal(self):
        text = self.on_pty(["-l", "0.1"], frames=1)
        self.assertIn("\x1b[31m88C\x1b[0m", text)  # hot: red
        self.assertIn("\x1b[31m95%\x1b[0m", text)  # busy: red
        self.assertIn("\x1b[32m150 / 450\x1b[0m", text)  # a third of the limit: green
        # NO_COLOR (any non-empty value) and --color=never turn it off, not the redraw.
        for args, extra in ((["-l", "0.1"], {"NO_COLOR": "1"}), (["-l", "0.1", "--color=never"], None)):
            with self.subTest(args=args, extra=extra):
                plain = self.on_pty(args, extra, frames=1)
                self.assertIsNone(SGR.search(plain), repr(plain[:200]))
                self.assertIn("\x1b[H", plain)
        # --color=always colours a pipe too.
        p = run(["query", "--color", "always"], env=self.env)
        self.assertIn("\x1b[31m88C\x1b[0m", p.stdout)
        p = run(["query", "--color", "sometimes"], env=self.env)
        self.assertEqual(p.returncode, 2)
        self.assertIn('invalid --color "sometimes"', p.stderr)


if __name__ == "__main__":
    unittest.main()
