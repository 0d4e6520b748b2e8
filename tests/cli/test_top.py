"""`gpumon top` in a real terminal: tmux runs it (send-keys types, capture-pane reads the
screen) against the fake NVML with processes of this test, so bars, graphs, sorting, the kill
with its question and its refusal, the 80x24 minimum and resizing are checked as a person would
see them."""
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from gmtest import FAKE_NVML, GPUMON, copy_for_others, env, run, scenario_file

GIB = 2**30
TMUX = shutil.which("tmux")


def scenario(victim_pid):
    gpus = [
        {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-70700000-0000-4000-8000-000000000000",
         "pci_bus_id": "00000000:1B:00.0", "util_gpu": [10, 20, 30, 40, 50, 60, 70, 80, 90, 95],
         "util_mem": 20, "mem_total": 80 * GIB, "mem_used": 40 * GIB, "mem_free": 40 * GIB,
         "temp": 64, "power_mw": 350000, "power_limit_mw": 700000, "fan": 40, "pstate": 0,
         "processes": [{"pid": victim_pid, "used_mem": 20 * GIB, "type": "compute"},
                       {"pid": 1, "used_mem": 1 * GIB, "type": "compute",
                        "util": {"sm": 70, "mem": 20, "enc": 0, "dec": 0}}]},
        {"name": "NVIDIA A100-SXM4-40GB", "uuid": "GPU-70700000-0000-4000-8000-000000000001",
         "pci_bus_id": "00000000:2A:00.0", "util_gpu": 3, "util_mem": 1, "mem_total": 40 * GIB,
         "mem_used": 1 * GIB, "mem_free": 39 * GIB, "temp": 31,
         "unsupported": ["power", "energy"], "processes": []},
    ]
    path = scenario_file({"driver_version": "550.54.15", "cuda_version": 12040, "gpus": gpus})
    os.chmod(path, 0o644)  # read by another user in the refusal test
    return path


class TmuxScreen:
    """A detached tmux server of its own for gpumon top: start() runs it in a window of a given
    size, screen() reads the window's text, keys() types. Mixed into a TestCase."""

    env = None

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gm-top-test-")
        os.chmod(self.tmp, 0o755)
        self.socket = "gm-top-%d-%d" % (os.getpid(), id(self))

    def tearDown(self):
        subprocess.run([TMUX, "-L", self.socket, "kill-server"], capture_output=True)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def tmux(self, *args):
        return subprocess.run([TMUX, "-L", self.socket] + list(args), capture_output=True, text=True,
                              timeout=10)

    def start(self, args, cols=100, rows=30, user=None, extra_env=None, binary=GPUMON):
        """Runs gpumon top in a detached tmux window of cols x rows; its exit status lands in a
        file, and the window stays so the screen can be read after."""
        self.status = os.path.join(self.tmp, "status")
        e = dict(self.env, **(extra_env or {}))
        exports = " ".join("%s='%s'" % (k, v) for k, v in e.items()
                           if k.startswith(("GPU_MONITOR_", "GM_FAKE_", "NO_COLOR", "LC_ALL")))
        cmd = "env %s %s top %s; echo $? > %s; sleep 60" % (exports, binary, " ".join(args), self.status)
        if user:
            cmd = "runuser -u %s -- sh -c \"%s\"" % (user, cmd.replace('"', '\\"'))
        p = self.tmux("-f", "/dev/null", "new-session", "-d", "-x", str(cols), "-y", str(rows),
                      "-s", "top", cmd)
        self.assertEqual(p.returncode, 0, p.stderr)

    def screen(self, escapes=False):
        p = self.tmux("capture-pane", "-p", "-t", "top", *(["-e"] if escapes else []))
        return p.stdout

    def wait_screen(self, predicate, timeout=15):
        deadline = time.time() + timeout
        text = ""
        while time.time() < deadline:
            text = self.screen()
            if predicate(text):
                return text
            time.sleep(0.1)
        self.fail("screen never matched; last:\n" + text)

    def keys(self, *keys):
        self.tmux("send-keys", "-t", "top", *keys)

    def exit_status(self, timeout=10):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                with open(self.status) as f:
                    text = f.read().strip()
                if text:
                    return int(text)
            except FileNotFoundError:
                pass
            time.sleep(0.05)
        self.fail("gpumon top did not exit; screen:\n" + self.screen())


@unittest.skipUnless(TMUX, "tmux is not installed (scripts/install-deps.sh test)")
class Top(TmuxScreen, unittest.TestCase):
    def setUp(self):
        super().setUp()
        self.victim = subprocess.Popen(["bash", "-c", "exec -a gm-top-victim sleep 120"])
        self.scenario = scenario(self.victim.pid)
        self.env = env(nvml=FAKE_NVML, scenario=self.scenario)
        self.env.pop("NO_COLOR", None)

    def tearDown(self):
        super().tearDown()
        if self.victim.poll() is None:
            self.victim.kill()
        self.victim.wait()
        os.unlink(self.scenario)

    def process_rows(self, text):
        return [l for l in text.splitlines() if re.match(r"^ *\d+ \S+ +\d+ ", l)]

    def test_screen_sort_and_quit(self):
        self.start(["--interval", "0.2"])
        text = self.wait_screen(lambda t: "gm-top-victim" in t and "GPU 0 utilization" in t)
        lines = text.splitlines()
        self.assertTrue(lines[0].startswith(" gpumon top  nvml  "), lines[0])
        self.assertIn("driver 550.54.15  CUDA 12.4", lines[0])
        self.assertIn("2 GPUs  2 processes  provider nvml", lines[1])
        # Both GPUs with their four bars; what a GPU does not report reads N/A, never 0.
        self.assertRegex(text, r"0   NVIDIA H100 80GB HBM3 +UTIL\[\|+ +\d+%\] MEM \[\|+ *40960/81920MiB\]")
        self.assertRegex(text, r"POW \[\|+ *350/700W\] TEMP\[\|+ *64C\]")
        self.assertRegex(text, r"1   NVIDIA A100-SXM4-40GB +UTIL\[\|? +3%\]")
        self.assertRegex(text, r"POW \[ +N/A\]")
        # The graph of GPU 0 fills from the right as readings come.
        self.assertIn("GPU 0 memory used %", text)
        text = self.wait_screen(lambda t: t.count("|||") > 6)
        # Processes sorted by GPU memory: ours (20 GiB) above pid 1 (1 GiB), selected first.
        header = next(l for l in text.splitlines() if "COMMAND" in l)
        self.assertIn("GPU-MEM*", header)
        rows = self.process_rows(text)
        self.assertEqual([int(r.split()[0]) for r in rows], [self.victim.pid, 1])
        self.assertIn("20480MiB", rows[0])
        self.assertRegex(rows[0], r"\d+MiB +\d+:\d\d  gm-top-victim")  # host memory, age from /proc
        # Sorting by PID puts pid 1 first; by CPU marks that column.
        self.keys("p")
        # The terminal is rewritten top to bottom: the rows may trail the header by a capture.
        def pid_first(t):
            rows = self.process_rows(t)
            return "PID*" in t and rows and int(rows[0].split()[0]) == 1
        text = self.wait_screen(pid_first)
        self.assertEqual(int(self.process_rows(text)[0].split()[0]), 1)
        self.keys("c")
        self.wait_screen(lambda t: "CPU%*" in t and "sort (CPU)" in t)
        # S: by SM share, where NVML gave one (pid 1's 70 %); ours has none and reads "-".
        self.keys("S")
        def sm_first(t):
            rows = self.process_rows(t)
            return "SM%*" in t and "sort (SM)" in t and rows and int(rows[0].split()[0]) == 1
        rows = self.process_rows(self.wait_screen(sm_first))
        self.assertRegex(rows[0], r"MiB +70 ")
        self.assertRegex(rows[1], r"MiB +- ")
        # g: the next GPU's graph; ?: the key list, closed by any key.
        self.keys("g")
        self.wait_screen(lambda t: "GPU 1 utilization" in t)
        self.keys("?")
        self.wait_screen(lambda t: "gpumon top: keys" in t)
        self.keys("x")
        self.wait_screen(lambda t: "gpumon top: keys" not in t)
        self.keys("q")
        self.assertEqual(self.exit_status(), 0)

    def test_kill_asks_then_sends_sigterm(self):
        self.start(["--interval", "0.2"])
        self.wait_screen(lambda t: "gm-top-victim" in t)
        self.keys("K")
        text = self.wait_screen(lambda t: "[y/N]" in t)
        self.assertIn("Send SIGTERM to pid %d (gm-top-victim 120) of %s? [y/N]"
                      % (self.victim.pid, pwd.getpwuid(os.getuid()).pw_name), text)
        self.keys("n")
        self.wait_screen(lambda t: "not sent" in t)
        time.sleep(0.3)
        self.assertIsNone(self.victim.poll())
        self.keys("F9")
        self.wait_screen(lambda t: "[y/N]" in t)
        self.keys("y")
        self.wait_screen(lambda t: "sent SIGTERM to pid %d" % self.victim.pid in t)
        self.assertEqual(self.victim.wait(timeout=10), -signal.SIGTERM)
        self.keys("q")
        self.assertEqual(self.exit_status(), 0)

    @unittest.skipUnless(os.geteuid() == 0, "needs root to run gpumon top as another user")
    def test_kill_refused_for_another_users_process(self):
        # As nobody, the victim (root's) and pid 1 may not be killed: no question is asked.
        os.chmod(self.tmp, 0o777)  # for the exit status file
        # The build may sit where nobody cannot reach it (a clone in /root): nobody runs copies.
        gpumon = copy_for_others(GPUMON, self.tmp)
        nvml = copy_for_others(FAKE_NVML, self.tmp, 0o644)
        self.start(["--interval", "0.2"], user="nobody", binary=gpumon,
                   extra_env={"GPU_MONITOR_NVML_LIB": nvml})
        self.wait_screen(lambda t: "gm-top-victim" in t)
        self.keys("K")
        text = self.wait_screen(lambda t: "only your own processes" in t)
        self.assertIn("kill: pid %d belongs to root: only your own processes (or run as root)"
                      % self.victim.pid, text)
        self.assertNotIn("[y/N]", text)
        self.keys("Down", "K")
        self.wait_screen(lambda t: "kill: pid 1 belongs to root" in t)
        self.assertIsNone(self.victim.poll())
        self.keys("q")
        self.assertEqual(self.exit_status(), 0)

    def test_minimum_size_and_resize(self):
        self.start(["--interval", "0.2"], cols=70, rows=20)
        self.wait_screen(lambda t: "gpumon top needs a terminal of at least 80x24 (this one is 70x20)" in t)
        self.tmux("resize-window", "-t", "top", "-x", "80", "-y", "24")
        text = self.wait_screen(lambda t: "gm-top-victim" in t)
        lines = text.splitlines()
        self.assertLessEqual(max(len(l) for l in lines), 80)
        self.assertIn("UTIL[", text)
        self.assertTrue(lines[-1].startswith("q quit") or "q quit" in text)
        self.tmux("resize-window", "-t", "top", "-x", "120", "-y", "40")
        text = self.wait_screen(lambda t: any(len(l) > 100 for l in t.splitlines()))
        self.keys("q")
        self.assertEqual(self.exit_status(), 0)

    def test_id_filter(self):
        # -i as query reads it: an index, a UUID, a PCI bus id (short or whole).
        for ids in ("1", "GPU-70700000-0000-4000-8000-000000000001", "2A:00.0",
                    "00000000:2a:00.0"):
            with self.subTest(ids=ids):
                self.start(["--interval", "0.2", "-i", ids])
                # The key line is the frame's last row: the frame is whole once it is there.
                text = self.wait_screen(lambda t: "GPU 1 utilization" in t and "q quit" in t)
                self.assertIn("1 GPU", text.splitlines()[1])
                self.assertRegex(text, r"1   NVIDIA A100-SXM4-40GB +UTIL\[")
                self.assertNotIn("H100", text)
                # GPU 0's processes go with it.
                self.assertNotIn("gm-top-victim", text)
                self.assertIn("no GPU processes", text)
                self.keys("q")
                self.assertEqual(self.exit_status(), 0)
                self.tmux("kill-server")
                self.socket += "-b"
                os.unlink(self.status)
        self.start(["--interval", "0.2", "-i", "0,1"])
        text = self.wait_screen(lambda t: "gm-top-victim" in t and "q quit" in t)
        self.assertIn("2 GPUs", text.splitlines()[1])
        self.keys("q")
        self.assertEqual(self.exit_status(), 0)

    def test_unknown_id(self):
        # Said as query says it, before the screen is taken, with the usage status.
        self.start(["-i", "7"])
        self.assertEqual(self.exit_status(), 2)
        self.assertIn('gpumon top: no GPU matches "7" (have 2 GPUs)', self.screen())

    def test_colour_and_no_color(self):
        self.start(["--interval", "0.2"])
        self.wait_screen(lambda t: "gm-top-victim" in t)
        self.assertRegex(self.screen(escapes=True), r"\x1b\[3[1-3]m")
        self.keys("q")
        self.exit_status()
        self.tmux("kill-server")
        self.socket += "-b"  # a fresh server: the old one may still be going away
        os.unlink(self.status)
        self.start(["--interval", "0.2"], extra_env={"NO_COLOR": "1"})
        self.wait_screen(lambda t: "gm-top-victim" in t)
        self.assertNotRegex(self.screen(escapes=True), r"\x1b\[(3[0-7]|4[0-7]|9[0-7])m")
        self.keys("q")
        self.assertEqual(self.exit_status(), 0)


def many_processes_scenario(pids):
    """Two GPUs, the first with one process per pid, GPU memory falling with the position so
    the list sorted by GPU memory keeps their order."""
    procs = [{"pid": pid, "used_mem": (len(pids) - i) * GIB, "type": "compute"}
             for i, pid in enumerate(pids)]
    gpus = [
        {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-70700000-0000-4000-8000-000000000010",
         "pci_bus_id": "00000000:1B:00.0", "util_gpu": [10, 30, 50, 70, 90, 100, 60, 40],
         "util_mem": 20, "mem_total": 80 * GIB, "mem_used": 60 * GIB, "mem_free": 20 * GIB,
         "temp": 64, "power_mw": 350000, "power_limit_mw": 700000, "fan": 40, "pstate": 0,
         "processes": procs},
        {"name": "NVIDIA A100-SXM4-40GB", "uuid": "GPU-70700000-0000-4000-8000-000000000011",
         "pci_bus_id": "00000000:2A:00.0", "util_gpu": 3, "util_mem": 1, "mem_total": 40 * GIB,
         "mem_used": 1 * GIB, "mem_free": 39 * GIB, "temp": 31, "power_mw": 60000,
         "power_limit_mw": 400000, "processes": []},
    ]
    path = scenario_file({"driver_version": "550.54.15", "cuda_version": 12040, "gpus": gpus})
    os.chmod(path, 0o644)
    return path


@unittest.skipUnless(TMUX, "tmux is not installed (scripts/install-deps.sh test)")
class TopLayout(TmuxScreen, unittest.TestCase):
    """The screen at 80x24 and 200x50 with more processes than fit: every line within the
    terminal, the help box inside it and gone without a trace, graphs as tall as the terminal
    allows, the "+N more" line, scrolling and the filters."""

    N = 25  # more than the list's rows at 200x50

    def setUp(self):
        super().setUp()
        self.procs = [subprocess.Popen(["bash", "-c", "exec -a gm-top-p%02d sleep 120" % (i + 1)])
                      for i in range(self.N)]
        self.scenario = many_processes_scenario([p.pid for p in self.procs])
        self.env = env(nvml=FAKE_NVML, scenario=self.scenario)
        self.env.pop("NO_COLOR", None)

    def tearDown(self):
        super().tearDown()
        for p in self.procs:
            p.kill()
            p.wait()
        os.unlink(self.scenario)

    def names(self, text):
        return re.findall(r"gm-top-p(\d\d)", text)

    def assert_within(self, text, cols):
        for line in text.splitlines():
            self.assertLessEqual(len(line), cols, line)

    def test_80x24_more_line_scroll_help_and_filters(self):
        self.start(["--interval", "0.2"], cols=80, rows=24, extra_env={"LC_ALL": "C.UTF-8"})
        text = self.wait_screen(lambda t: "gm-top-p01" in t and "more" in t)
        self.assert_within(text, 80)
        self.assertEqual(len(text.splitlines()), 24)
        shown = self.names(text)
        self.assertEqual(shown, ["%02d" % (i + 1) for i in range(len(shown))])
        self.assertGreaterEqual(len(shown), 3)
        self.assertLess(len(shown), self.N)
        self.assertIn("  +%d more" % (self.N - len(shown)), text)
        self.assertIn("%d processes" % self.N, text.splitlines()[1])
        # Each process's age, as ps prints it.
        row = next(l for l in text.splitlines() if "gm-top-p01" in l)
        self.assertRegex(row, r" \d+:\d\d  gm-top-p01")

        # The key list fits the terminal, and closing it leaves nothing of it behind.
        self.keys("?")
        text = self.wait_screen(lambda t: "gpumon top: keys" in t)
        self.assert_within(text, 80)
        self.assertIn("this help (any key closes it)", text)
        self.keys("x")
        text = self.wait_screen(lambda t: "gpumon top: keys" not in t and "+" in t)
        time.sleep(0.5)
        text = self.screen()
        self.assert_within(text, 80)
        for line in text.splitlines():
            if "]" in line:  # only the bars close with ']'
                self.assertRegex(line, r"^(\d|    )", line)
                self.assertTrue(line.rstrip().endswith("]"), line)
            self.assertNotIn("sort by the next", line)

        # Down past the window scrolls it: the later processes come into view.
        self.keys("End")
        text = self.wait_screen(lambda t: "gm-top-p%02d" % self.N in t)
        self.assertNotIn("gm-top-p01", text)
        self.assertRegex(text, r"\d+ above")
        self.keys("Home")
        self.wait_screen(lambda t: "gm-top-p01" in t and "more" in t)
        for _ in range(len(shown) + 1):
            self.keys("j")
        text = self.wait_screen(lambda t: "gm-top-p%02d" % (len(shown) + 2) in t)
        self.assertNotIn("gm-top-p01", text)
        self.keys("PgUp", "PgUp")
        self.wait_screen(lambda t: "gm-top-p01" in t)

        # "/" keeps the processes whose user or command has the text.
        self.keys("/")
        self.wait_screen(lambda t: "show processes matching: _" in t)
        self.keys("p03", "Enter")
        text = self.wait_screen(lambda t: "filter p03: 1 of %d" % self.N in t)
        self.assertEqual(self.names(text), ["03"])
        self.assertNotIn("more", text)
        # "u" keeps one user's processes; a user without any says so.
        self.keys("u")
        self.wait_screen(lambda t: "show the processes of user: _" in t)
        self.keys("nosuchuser", "Enter")
        text = self.wait_screen(lambda t: "no process matches the filter" in t)
        self.assertEqual(self.names(text), [])
        me = pwd.getpwuid(os.getuid()).pw_name
        self.keys("u", "BSpace", "BSpace", "BSpace", "BSpace", "BSpace", "BSpace", "BSpace",
                  "BSpace", "BSpace", "BSpace")
        self.keys(me, "Enter")
        text = self.wait_screen(lambda t: "user %s: %d of %d" % (me, self.N, self.N) in t)
        # Enter alone shows every process again.
        self.keys("/", "Enter")
        text = self.wait_screen(lambda t: "gm-top-p01" in t and " of %d" % self.N not in t
                                and "more" in t)
        self.assertIn("more", text)
        self.keys("q")
        self.assertEqual(self.exit_status(), 0)

    def graph_rows(self, text):
        """The rows from the first graph title to the list's header."""
        lines = text.splitlines()
        top = next(i for i, l in enumerate(lines) if "utilization %" in l)
        header = next(i for i, l in enumerate(lines) if "COMMAND" in l)
        return lines[top:header]

    def test_200x50_graphs_fill_the_height(self):
        self.start(["--interval", "0.1"], cols=200, rows=50, extra_env={"LC_ALL": "C.UTF-8"})
        # The "+N more" row is the frame's last: waiting for it keeps the capture from
        # landing while the terminal is still drawing a frame (seen under ASan in CI).
        text = self.wait_screen(lambda t: "gm-top-p01" in t and " more" in t
                                and sum(c in t for c in "▁▂▃▄▅▆▇█") >= 3)
        self.assert_within(text, 200)
        lines = text.splitlines()
        self.assertEqual(len(lines), 50)
        graph = self.graph_rows(text)
        # Title, host, two GPUs of two rows; the list takes a row per process up to half of
        # the rest: the graphs take all the remaining rows, with no empty row under them.
        list_rows = 50 - 1 - (6 + len(graph)) - 1
        self.assertEqual(len(graph) + list_rows, 50 - 6 - 2)
        self.assertGreaterEqual(len(graph), 20)
        self.assertIn("_", graph[-1])  # the lower graphs' baseline right above the header
        self.assertTrue(any("power % of its limit" in l for l in graph))
        self.assertTrue(any("temperature C" in l for l in graph))
        # Block characters, and the list below: a row per process that fits, then "+N more".
        self.assertTrue(any(c in "".join(graph) for c in "▁▂▃▄▅▆▇█"))
        self.assertIn("+%d more" % (self.N - len(self.names(text))), text)
        # Taller still: taller graphs. The pane is 60 rows as soon as tmux resizes it, while
        # top's 50-row frame may still be what it shows (seen under ASan in CI): wait for a
        # frame drawn for the new height, whose graphs must have grown.
        self.tmux("resize-window", "-t", "top", "-x", "200", "-y", "60")

        def taller(t):
            return (len(t.splitlines()) == 60 and "COMMAND" in t and "utilization %" in t
                    and len(self.graph_rows(t)) > len(graph))
        text = self.wait_screen(taller)
        self.assertGreater(len(self.graph_rows(text)), len(graph))
        self.keys("q")
        self.assertEqual(self.exit_status(), 0)

    def test_ascii_graphs_without_a_utf8_locale(self):
        self.start(["--interval", "0.1"], cols=100, rows=30, extra_env={"LC_ALL": "C"})
        text = self.wait_screen(lambda t: "gm-top-p01" in t and t.count("|") > 40)
        graph = "\n".join(self.graph_rows(text))
        self.assertTrue(all(ord(c) < 128 for c in graph), graph)
        self.assertIn("|", graph)
        self.keys("q")
        self.assertEqual(self.exit_status(), 0)

    def test_too_small_message_is_whole_in_a_narrow_terminal(self):
        self.start(["--interval", "0.2"], cols=40, rows=12)
        text = self.wait_screen(lambda t: "enlarge it" in t)
        self.assert_within(text, 40)
        words = " ".join(text.split())
        self.assertIn("gpumon top needs a terminal of at least 80x24 (this one is 40x12) "
                      "enlarge it, or press q to quit", words)
        self.keys("q")
        self.assertEqual(self.exit_status(), 0)


class TopWithoutTerminal(unittest.TestCase):
    def test_needs_a_terminal_and_good_options(self):
        p = run(["top", "--simulate", "1"], env=env())
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr, "gpumon top: needs a terminal; in scripts use gpumon query -l SECONDS\n")
        for args, msg in ((["--sort", "size"], 'gpumon top: invalid --sort "size" (expected mem, cpu, pid or sm)'),
                          (["--interval", "0"], "gpumon top: --interval expects a duration"),
                          (["--connect", "http://127.0.0.1:1", "--simulate", "2"], "--connect reads the daemon's GPUs"),
                          (["--color", "blue"], 'gpumon top: invalid --color "blue"'),
                          (["-i", "0,,1"], 'gpumon top: invalid GPU list "0,,1"'),
                          (["--conect", "x"], 'gpumon top: unknown option "--conect"; did you mean "--connect"?')):
            with self.subTest(args=args):
                p = run(["top"] + args, env=env())
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(msg, p.stderr)


if __name__ == "__main__":
    unittest.main()
