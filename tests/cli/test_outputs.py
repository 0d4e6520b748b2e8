"""Every file gpumon writes (snapshot -o, record -o, history export -o, smi -f, bench -o and
--trace, serve --port-file) and the database path, against each kind of path: a regular file,
a symbolic link (followed like cp: the link stays, its target is written), a dangling link
(refused), a FIFO (written in place), a character device (written, never replaced; a full one
is an error naming the path and the cause) and a directory (refused). gpumon often runs as
root, where replacing /dev/null or following a planted link does real damage.

The devices are made with mknod in the test's own directory (root only; those cases are
skipped otherwise), so no system device is at risk even on a gpumon that replaces them."""
import json
import re
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
import unittest

from gmtest import FAKE_NVML, GPUMON, env, run
from test_bench import FakeServer

ROOT = os.geteuid() == 0
ENOSPC = "No space left on device"


class Paths(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gm-outputs-")
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            if s.proc.poll() is None:
                s.proc.kill()
                s.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def device(self, name, minor):
        """A character device of the memory driver (3 null, 7 full) in the test's directory."""
        if not ROOT:
            self.skipTest("making a device node needs root")
        p = self.path(name)
        os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
        return p

    def assert_kind(self, p, test):
        self.assertTrue(test(os.lstat(p).st_mode), "%s is now %s" % (p, oct(os.lstat(p).st_mode)))

    # ---- each writer ---------------------------------------------------------------------

    def writers(self):
        """(name, function of the output path returning the finished process)."""
        db = self.path("gpumon.db")
        p = run(["record", "--db", db, "--simulate", "1", "--interval", "0.05", "-q", "--",
                 "true"], env=env())
        self.assertEqual(p.returncode, 0, p.stderr)
        sid = json.loads(run(["history", "list", "--db", db, "--format", "json"],
                             env=env()).stdout)[0]["id"]
        server = FakeServer(self.dir)
        self.servers.append(server)

        def bench(flag):
            return lambda out: run(["bench", "--url", server.url, "--requests", "2",
                                    "--output-tokens", "2", "--idle-seconds", "0", "-q",
                                    "--no-db", flag, out], env=env(), timeout=60)

        return [
            ("snapshot", lambda out: run(["snapshot", "--simulate", "1", "--power-window", "0",
                                          "-o", out], env=env())),
            ("record", lambda out: run(["record", "--no-db", "--simulate", "1", "--interval",
                                        "0.05", "-o", out, "--", "true"], env=env())),
            ("history export", lambda out: run(["history", "export", sid, "--db", db, "-o", out],
                                               env=env())),
            ("smi -f", lambda out: run(["smi", "--query-gpu=index,name", "--format=csv", "-f",
                                        out], env=env(nvml=FAKE_NVML, scenario="health.json"))),
            ("bench -o", bench("-o")),
            ("bench --trace", bench("--trace")),
        ]

    def test_symlink_is_followed_and_stays_a_link(self):
        for name, write in self.writers():
            with self.subTest(name):
                tgt, link = self.path("target"), self.path("link")
                with open(tgt, "w") as f:
                    f.write("orig\n")
                os.symlink("target", link)
                p = write(link)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assert_kind(link, stat.S_ISLNK)
                self.assertEqual(os.readlink(link), "target")
                with open(tgt) as f:
                    self.assertNotEqual(f.read(), "orig\n")
                os.unlink(link)
                os.unlink(tgt)

    def test_dangling_link_and_directory_are_refused(self):
        for name, write in self.writers():
            with self.subTest(name):
                link = self.path("dangling")
                os.symlink("nowhere", link)
                p = write(link)
                self.assertNotEqual(p.returncode, 0)
                self.assertIn("symbolic link to nothing", p.stderr)
                self.assertFalse(os.path.lexists(self.path("nowhere")))
                os.unlink(link)
                d = self.path("adir")
                os.mkdir(d)
                p = write(d)
                self.assertNotEqual(p.returncode, 0)
                self.assertIn("is a directory", p.stderr)
                os.rmdir(d)

    def test_null_device_is_written_not_replaced(self):
        null = self.device("null", 3)
        for name, write in self.writers():
            with self.subTest(name):
                p = write(null)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assert_kind(null, stat.S_ISCHR)
        # Nothing left beside it: no temporary file, no rename.
        self.assertEqual([n for n in os.listdir(self.dir) if "null" in n], ["null"])

    def test_full_device_is_an_error_naming_path_and_cause(self):
        full = self.device("full", 7)
        for name, write in self.writers():
            with self.subTest(name):
                p = write(full)
                self.assertNotEqual(p.returncode, 0, p.stderr)
                self.assertIn(full, p.stderr)
                self.assertIn(ENOSPC, p.stderr)
                self.assertNotIn("written to", p.stderr)
                self.assert_kind(full, stat.S_ISCHR)

    def test_fifo_is_written_in_place(self):
        fifo = self.path("fifo")
        os.mkfifo(fifo)
        for name, write in self.writers():
            with self.subTest(name):
                got = []

                def read():
                    with open(fifo, "rb") as f:
                        got.append(f.read())

                reader = threading.Thread(target=read)
                reader.start()
                p = write(fifo)
                reader.join(timeout=30)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertTrue(got and got[0], "nothing came through the FIFO")
                self.assert_kind(fifo, stat.S_ISFIFO)



class Streaming(unittest.TestCase):
    """Outputs written continuously (smi -f with a loop, bench --trace) are written where they
    are as they come, so that `tail -f` follows them: never held back until the command ends,
    never renamed into place, with the same rules for links and devices."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gm-stream-")
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def start(self, argv, e):
        p = subprocess.Popen([GPUMON] + argv, env=e, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
        self.procs.append(p)
        return p

    def lines_while_running(self, proc, path, want):
        """Waits (up to 60 s) for want complete lines in path while proc still runs; returns
        them, or fails saying what was there when proc ended or the time ran out."""
        deadline = time.monotonic() + 60
        text = ""
        while time.monotonic() < deadline and proc.poll() is None:
            if os.path.exists(path):
                with open(path) as f:
                    text = f.read()
                if text.count("\n") >= want:
                    return text.split("\n")[:want]
            time.sleep(0.05)
        self.fail("%d lines not in %s while the command ran (exit %s; it held %r)" %
                  (want, path, proc.poll(), text))

    def wait_until(self, proc, cond, what):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if cond():
                return
            time.sleep(0.02)
        self.fail("%s: not while the command ran (exit %s)" % (what, proc.poll()))

    def stop(self, proc):
        """SIGINT, once the command has taken it over: sent earlier (a slow or sanitizer build
        still starting) it would kill the command instead of ending its loop."""
        def catches_sigint():
            try:
                with open("/proc/%d/status" % proc.pid) as f:
                    caught = [ln for ln in f if ln.startswith("SigCgt:")]
            except FileNotFoundError:
                return False
            return bool(caught) and int(caught[0].split()[1], 16) & (1 << (signal.SIGINT - 1))

        self.wait_until(proc, catches_sigint, "SIGINT handled")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        return proc.returncode, err

    def has_open(self, proc, path):
        """Whether proc holds path open (its own descriptors, as /proc shows them)."""
        fds = "/proc/%d/fd" % proc.pid
        try:
            return any(os.readlink(os.path.join(fds, n)) == path for n in os.listdir(fds))
        except OSError:
            return False

    def smi(self, out):
        return self.start(["smi", "--query-gpu=index,name", "--format=csv,noheader", "-lms",
                           "100", "-f", out], env(nvml=FAKE_NVML, scenario="health.json"))

    def test_smi_loop_file_grows_in_place(self):
        out = self.path("smi.csv")
        with open(out, "w") as f:
            f.write("old contents that are cut, " * 100)
        ino = os.stat(out).st_ino
        p = self.smi(out)
        lines = self.lines_while_running(p, out, 3)
        self.assertNotIn("old contents", "".join(lines))
        self.assertTrue(all(re.match(r"\d+, ", line) for line in lines), lines)
        rc, err = self.stop(p)
        self.assertEqual(rc, 0, err)
        self.assertEqual(os.stat(out).st_ino, ino, "the file was replaced, not written")
        self.assertEqual(os.listdir(self.dir), ["smi.csv"])

    def test_smi_loop_follows_a_planted_link_like_cp(self):
        tgt, link = self.path("target"), self.path("link")
        with open(tgt, "w") as f:
            f.write("orig\n")
        os.symlink("target", link)
        p = self.smi(link)
        self.lines_while_running(p, tgt, 2)
        rc, err = self.stop(p)
        self.assertEqual(rc, 0, err)
        self.assertTrue(stat.S_ISLNK(os.lstat(link).st_mode))
        self.assertEqual(os.readlink(link), "target")
        with open(tgt) as f:
            self.assertNotIn("orig", f.read())
        # A dangling link is refused: nothing is created where it points.
        os.symlink("nowhere", self.path("dangling"))
        p = self.smi(self.path("dangling"))
        _, err = p.communicate(timeout=30)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("symbolic link to nothing", err)
        self.assertFalse(os.path.lexists(self.path("nowhere")))

    def test_smi_loop_device_is_written_not_replaced(self):
        if not ROOT:
            self.skipTest("making a device node needs root")
        null, full = self.path("null"), self.path("full")
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
        p = self.smi(null)
        self.wait_until(p, lambda: self.has_open(p, null), "the device open")
        rc, err = self.stop(p)
        self.assertEqual(rc, 0, err)
        self.assertTrue(stat.S_ISCHR(os.lstat(null).st_mode))
        # A full device: the first loop's write fails, naming the path and the cause.
        p = self.smi(full)
        _, err = p.communicate(timeout=30)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(full, err)
        self.assertIn(ENOSPC, err)
        self.assertTrue(stat.S_ISCHR(os.lstat(full).st_mode))
        self.assertEqual(sorted(os.listdir(self.dir)), ["full", "null"])

    def test_bench_trace_grows_while_the_run_goes(self):
        server = FakeServer(self.dir, "--ttft-ms", "5")
        self.procs.append(server.proc)
        trace = self.path("trace.jsonl")
        p = self.start(["bench", "--url", server.url, "--duration", "120", "--output-tokens",
                        "2", "--idle-seconds", "0", "-q", "--no-db", "--trace", trace], env())
        for line in self.lines_while_running(p, trace, 3):
            self.assertIn("sent_ns", json.loads(line))
        self.assertEqual(sorted(n for n in os.listdir(self.dir) if n.startswith("trace")),
                         ["trace.jsonl"])
        self.stop(p)
        with open(trace) as f:
            for line in f:
                json.loads(line)

class PortFile(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gm-portfile-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def serve(self, port_file, ready=lambda: True):
        """Runs the daemon until it listens (its port file written) and ready() holds, then
        stops it with SIGTERM; returns its status and stderr. The wait is on the daemon's own
        "listening on" line: a signal sent before it has taken over SIGTERM (a fixed sleep, on
        a slow or sanitizer build) would kill it instead of stopping it."""
        d = subprocess.Popen([GPUMON, "serve", "--listen", "127.0.0.1:0", "--port-file", port_file,
                              "--simulate", "1", "--db", "none", "--log-level", "error"], env=env(),
                             stderr=subprocess.PIPE, text=True)
        lines, listening = [], threading.Event()

        def drain():
            for line in d.stderr:
                lines.append(line)
                if line.startswith("gpumon: listening on "):
                    listening.set()

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and d.poll() is None and not (
                listening.is_set() and ready()):
            time.sleep(0.02)
        up = listening.is_set()
        if d.poll() is None:
            d.send_signal(signal.SIGTERM)
        d.wait(timeout=60)
        reader.join(timeout=60)
        err = "".join(lines)
        self.assertTrue(up, "the daemon never listened: " + err)
        return d.returncode, err

    def test_planted_link_beside_the_port_file_is_not_followed(self):
        target = os.path.join(self.dir, "precious")
        with open(target, "w") as f:
            f.write("precious\n")
        port = os.path.join(self.dir, "port")
        os.symlink(target, port + ".tmp")
        seen = []

        def ready():
            if os.path.exists(port) and os.path.getsize(port):
                with open(port) as f:
                    seen.append(int(f.read()))
                return True
            return False

        rc, err = self.serve(port, ready)
        self.assertEqual(rc, 0, err)
        self.assertTrue(seen and seen[0] > 0, err)
        with open(target) as f:
            self.assertEqual(f.read(), "precious\n")
        self.assertTrue(os.path.islink(port + ".tmp"))
        # Removed at exit: it is still the file written.
        self.assertFalse(os.path.lexists(port))
        self.assertEqual(sorted(os.listdir(self.dir)), ["port.tmp", "precious"])

    def test_device_port_file_is_written_and_never_removed(self):
        if not ROOT:
            self.skipTest("making a device node needs root")
        null = os.path.join(self.dir, "null")
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        rc, err = self.serve(null)
        self.assertEqual(rc, 0, err)
        self.assertTrue(stat.S_ISCHR(os.lstat(null).st_mode))
        self.assertEqual(os.listdir(self.dir), ["null"])

    def test_port_file_replaced_meanwhile_is_left_alone(self):
        port = os.path.join(self.dir, "port")

        def swap():
            if os.path.exists(port) and os.path.getsize(port):
                os.unlink(port)
                os.mkfifo(port)
                return True
            return False

        rc, err = self.serve(port, swap)
        self.assertEqual(rc, 0, err)
        self.assertTrue(stat.S_ISFIFO(os.lstat(port).st_mode))


class Database(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gm-dbpath-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_fifo_database_is_refused_without_blocking(self):
        fifo = os.path.join(self.dir, "db")
        os.mkfifo(fifo)
        for argv in (["history", "list"], ["history", "list", "--db", fifo]):
            p = run(argv, env=env(extra={"GPU_MONITOR_DB": fifo}))
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("is a FIFO, not a regular file", p.stderr)
        p = run(["record", "--db", fifo, "--simulate", "1", "-q", "--", "true"], env=env())
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("is a FIFO, not a regular file", p.stderr)
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))

    def test_device_database_is_refused_and_nothing_made_beside_it(self):
        if not ROOT:
            self.skipTest("making a device node needs root")
        null = os.path.join(self.dir, "null")
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        e = env(extra={"GPU_MONITOR_DB": null})
        for argv in (["history", "list"], ["record", "--simulate", "1", "-q", "--", "true"],
                     ["history", "prune", "--older-than", "1d"]):
            p = run(argv, env=e)
            self.assertIn("is a character device, not a regular file", p.stderr)
        self.assertEqual(os.listdir(self.dir), ["null"])

    def test_dangling_link_database_is_refused(self):
        link = os.path.join(self.dir, "db")
        os.symlink("nowhere", link)
        p = run(["record", "--db", link, "--simulate", "1", "-q", "--", "true"], env=env())
        self.assertIn("symbolic link to nothing", p.stderr)
        self.assertFalse(os.path.lexists(os.path.join(self.dir, "nowhere")))


if __name__ == "__main__":
    unittest.main()
