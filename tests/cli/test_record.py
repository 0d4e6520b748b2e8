"""`gpumon record` and `gpumon history` against the fake NVML: exit status, signals, exact
statistics, storage as samples are taken (including after kill -9), export."""
import csv
import datetime
import io
import json
import os
import pty
import re
import resource
import select
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from gmtest import FAKE_NVML, FIXTURES, GPUMON, env, run

SCENARIO = os.path.join(FIXTURES, "record", "arrays.json")
UTIL = [10, 20, 30, 40, 50]
GIB_MIB = 1024.0


def percentile(values, p):
    """numpy.percentile's default (linear) method, as the issue asks."""
    v = sorted(values)
    h = (len(v) - 1) * p / 100.0
    lo = int(h)
    if lo >= len(v) - 1:
        return v[-1]
    return v[lo] + (h - lo) * (v[lo + 1] - v[lo])


def load(path):
    with open(path) as f:
        return json.load(f)


class RecordBase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gm_record_")
        self.db = os.path.join(self.tmp, "gpumon.db")
        self.env = env(nvml=FAKE_NVML, scenario=SCENARIO)
        self.env.pop("CUDA_VISIBLE_DEVICES", None)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def assertClose(self, got, want, msg=None):
        # Documents carry 12 significant digits.
        self.assertLessEqual(abs(got - want), 1e-10 * max(1.0, abs(want)), msg)

    def record(self, args, command, **kw):
        return run(["record", "--db", self.db] + list(args) + ["--"] + list(command),
                   env=kw.pop("env", self.env), **kw)

    def history(self, *args):
        return run(["history", "--db", self.db] + list(args), env=self.env)

    def listing(self):
        p = self.history("list", "--format", "json")
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def start(self, args, command):
        return subprocess.Popen([GPUMON, "record", "--db", self.db] + list(args) + ["--"] + list(command),
                                env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class ExitStatus(RecordBase):
    def test_exit_code_and_output(self):
        out = os.path.join(self.tmp, "run.json")
        p = self.record(["--interval", "0.1", "--output", out, "--label", "short"],
                        ["sh", "-c", "echo to-stdout; sleep 0.6; exit 3"])
        self.assertEqual(p.returncode, 3, p.stderr)
        # stdout is the command's alone; the summary goes to stderr.
        self.assertEqual(p.stdout, "to-stdout\n")
        self.assertIn("command exited 3", p.stderr)
        self.assertIn("UTILIZATION", p.stderr)
        self.assertNotIn("\r", p.stderr)  # no progress line when stderr is not a terminal
        doc = load(out)
        self.assertEqual(doc["exit_code"], 3)
        self.assertIsNone(doc["signal"])
        self.assertEqual(doc["command"], ["sh", "-c", "echo to-stdout; sleep 0.6; exit 3"])
        self.assertEqual(doc["label"], "short")
        self.assertEqual(doc["kind"], "record")
        self.assertEqual(doc["status"], "stopped")
        self.assertEqual(doc["session_id"], doc["id"])
        self.assertEqual(doc["interval_seconds"], 0.1)
        self.assertGreaterEqual(doc["monitoring_duration_seconds"], 0.6)
        self.assertLess(doc["monitoring_duration_seconds"], 5)
        self.assertTrue(doc["started_at"].endswith("Z") and doc["ended_at"].endswith("Z"))
        self.assertEqual([(g["index"], g["uuid"]) for g in doc["gpus"]],
                         [(0, "GPU-7e57a000-0000-0000-0000-000000000000"),
                          (1, "GPU-7e57a000-0000-0000-0000-000000000001")])
        # A sample at the start, about one per 0.1 s, one at the end.
        self.assertGreaterEqual(doc["sample_count"], 4)
        self.assertEqual(len(doc["timeline"]), doc["sample_count"])

    def test_zero_exit(self):
        p = self.record(["--interval", "0.05", "-q"], ["true"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "")

    def test_command_not_found(self):
        p = self.record([], ["/nonexistent/gpumon-test-cmd"])
        self.assertEqual(p.returncode, 127)
        self.assertIn("cannot run", p.stderr)
        self.assertEqual(self.listing(), [])  # nothing ran, nothing stored

    def test_usage_errors(self):
        for args in (["--interval", "0"], ["--interval", "abc"], ["--interval", "-1"],
                     ["--interval", "nan"], ["--gpus", "0,,1"], ["--gpus", "7"],
                     ["--gpus", "GPU-nope"], ["--bogus"]):
            p = self.record(args, ["true"])
            self.assertEqual(p.returncode, 2, (args, p.stderr))
        p = run(["record", "--db", self.db], env=self.env)
        self.assertEqual(p.returncode, 2)
        self.assertIn("no command", p.stderr)

    def test_no_gpu_still_runs_the_command(self):
        e = env()  # no NVML, no nvidia-smi: provider "none"
        e.pop("CUDA_VISIBLE_DEVICES", None)
        out = os.path.join(self.tmp, "run.json")
        p = self.record(["--interval", "0.05", "-o", out], ["sh", "-c", "echo ran; exit 5"], env=e)
        self.assertEqual(p.returncode, 5, p.stderr)
        self.assertEqual(p.stdout, "ran\n")
        self.assertIn("no GPU found", p.stderr)
        doc = load(out)
        self.assertEqual((doc["gpu_stats"], doc["gpus"], doc["energy_j"]), ({}, [], None))
        # Asking for a GPU that cannot be read is an error before anything runs.
        p = self.record(["--gpus", "0"], ["sh", "-c", "echo ran"], env=e)
        self.assertEqual((p.returncode, p.stdout), (3, ""))

    def test_killed_by_signal_is_128_plus(self):
        p = self.record(["--interval", "0.1"], ["sh", "-c", "kill -KILL $$"])
        self.assertEqual(p.returncode, 137, p.stderr)
        self.assertIn("signal 9", p.stderr)


class Statistics(RecordBase):
    def test_exact_stats_from_per_read_arrays(self):
        out = os.path.join(self.tmp, "run.json")
        p = self.record(["--interval", "0.1", "--output", out, "-q"], ["sleep", "0.5"])
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = load(out)
        tl = doc["timeline"]
        n = doc["sample_count"]
        self.assertEqual(len(tl), n)
        ts = [row["t"] for row in tl]
        self.assertEqual(ts, sorted(ts))
        self.assertLessEqual(ts[0], 0.05)

        g0 = [row["gpus"]["0"] for row in tl]
        util = [g["utilization"] for g in g0]
        # Every sample is a fresh read: the values walk the cycle 10, 20, ..., 50 in order.
        start = UTIL.index(util[0])
        self.assertEqual(util, [UTIL[(start + k) % 5] for k in range(n)])
        mem = [g["memory_used_mb"] for g in g0]
        self.assertTrue(set(mem) <= {8192.0, 16384.0, 24576.0, 32768.0}, mem)
        for g in g0:
            self.assertClose(g["memory_usage_percent"], g["memory_used_mb"] / (80 * GIB_MIB) * 100)

        s0 = doc["gpu_stats"]["0"]
        self.assertEqual(s0["name"], "NVIDIA H100 80GB HBM3")
        for metric in ("utilization", "memory_used_mb", "memory_usage_percent", "temperature_c", "power_draw_w"):
            values = [g[metric] for g in g0]
            st = s0[metric]
            self.assertEqual(st["count"], n, metric)
            self.assertEqual(st["min"], min(values), metric)
            self.assertEqual(st["max"], max(values), metric)
            self.assertClose(st["mean"], sum(values) / n, metric)
            self.assertClose(st["p50"], percentile(values, 50), metric)
            self.assertClose(st["p95"], percentile(values, 95), metric)
        self.assertEqual(s0["utilization"]["samples"], n)  # seed 003's name for the count

        # Energy: the counter's last - first (it grows 50 J per read and never wraps here).
        counter = [g["energy_counter_j"] for g in g0]
        self.assertEqual([b - a for a, b in zip(counter, counter[1:])], [50.0] * (n - 1))
        self.assertClose(s0["energy_j"], counter[-1] - counter[0])
        self.assertEqual(s0["energy_source"], "counter")

        # GPU 1 has no power and no energy counter: null, never 0.
        s1 = doc["gpu_stats"]["1"]
        self.assertIsNone(s1["power_draw_w"])
        self.assertIsNone(s1["energy_j"])
        self.assertIsNone(s1["energy_source"])
        self.assertEqual(s1["utilization"]["mean"], 3)
        self.assertEqual(s1["memory_used_mb"]["max"], 1024)
        self.assertIsNone(tl[0]["gpus"]["1"]["power_draw_w"])
        self.assertIsNone(doc["energy_j"])  # the total needs every GPU's energy

    def test_gpu_selection(self):
        out = os.path.join(self.tmp, "run.json")
        p = self.record(["--gpus", "1", "-o", out, "-q", "--interval", "0.05"], ["true"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(list(load(out)["gpu_stats"]), ["1"])
        # Default: what CUDA_VISIBLE_DEVICES shows the command, by index or by UUID.
        for cvd, want in (("1", ["1"]), ("GPU-7e57a000-0000-0000-0000-000000000000", ["0"]),
                          ("0,1", ["0", "1"]), ("", [])):
            e = dict(self.env, CUDA_VISIBLE_DEVICES=cvd)
            p = self.record(["-o", out, "-q", "--interval", "0.05"], ["true"], env=e)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(list(load(out)["gpu_stats"]), want, cvd)


class Signals(RecordBase):
    def wait_ready(self, proc):
        # The command says "ready" once it runs (and has its trap set).
        self.assertEqual(proc.stdout.readline(), "ready\n")

    def test_sigterm_forwarded_exit_143(self):
        proc = self.start(["--interval", "0.1"], ["sh", "-c", "echo ready; exec sleep 30"])
        self.wait_ready(proc)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
        self.assertEqual(proc.returncode, 143, err)
        self.assertIn("signal 15", err)
        doc = self.listing()[0]
        self.assertEqual((doc["status"], doc["exit_code"]), ("stopped", 143))

    def test_child_handles_forwarded_signals(self):
        script = ('trap "echo got-TERM; exit 0" TERM; trap "echo got-USR1" USR1; '
                  'trap "echo got-HUP" HUP; echo ready; '
                  'while :; do sleep 0.05; done')
        proc = self.start(["--interval", "0.1"], ["sh", "-c", script])
        self.wait_ready(proc)
        proc.send_signal(signal.SIGUSR1)
        self.assertEqual(proc.stdout.readline(), "got-USR1\n")
        proc.send_signal(signal.SIGHUP)
        self.assertEqual(proc.stdout.readline(), "got-HUP\n")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
        self.assertEqual(out, "got-TERM\n")
        self.assertEqual(proc.returncode, 0, err)  # the command chose how to end


class Storage(RecordBase):
    def test_kill_9_leaves_interrupted_session_with_samples(self):
        proc = subprocess.Popen([GPUMON, "record", "--db", self.db, "--interval", "0.05", "--label", "doomed",
                                 "--", "sh", "-c", "echo $$; exec sleep 30"],
                                env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        child = int(proc.stdout.readline())
        try:
            # Samples are committed as they are taken: wait until a few are visible.
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                listed = self.listing()
                if listed and listed[0]["samples"] >= 3:
                    break
                time.sleep(0.05)
            self.assertEqual(listed[0]["status"], "running")
            proc.kill()
            proc.wait(timeout=10)
        finally:
            os.kill(child, signal.SIGKILL)
        proc.stdout.close()
        proc.stderr.close()
        entry = self.listing()[0]
        self.assertEqual(entry["status"], "interrupted")
        self.assertEqual(entry["label"], "doomed")
        self.assertGreaterEqual(entry["samples"], 3)
        self.assertIsNone(entry["exit_code"])
        table = self.history("list")
        self.assertIn("interrupted", table.stdout)
        # The document is rebuilt from the stored samples.
        p = self.history("export", entry["id"], "--format", "json")
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["status"], "interrupted")
        self.assertEqual(doc["sample_count"], entry["samples"])
        self.assertEqual(len(doc["timeline"]), entry["samples"])
        self.assertEqual(doc["gpu_stats"]["0"]["utilization"]["count"], entry["samples"])
        show = self.history("show", entry["id"][:17])
        self.assertEqual(show.returncode, 0, show.stderr)
        self.assertIn("interrupted", show.stdout)
        rows = list(csv.DictReader(io.StringIO(self.history("export", entry["id"], "--format", "csv").stdout)))
        self.assertEqual(len(rows), 2 * entry["samples"])

    def test_export_matches_record_output(self):
        out = os.path.join(self.tmp, "run.json")
        p = self.record(["--interval", "0.1", "-o", out], ["sleep", "0.3"])
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = load(out)
        self.assertIn("stored as " + doc["id"], p.stderr)
        listed = self.listing()
        self.assertEqual(len(listed), 1)
        self.assertEqual(listed[0]["id"], doc["id"])
        self.assertEqual(listed[0]["kind"], "record")
        self.assertEqual(listed[0]["status"], "stopped")
        self.assertEqual(listed[0]["samples"], doc["sample_count"])
        self.assertEqual(listed[0]["command"], "sleep 0.3")
        self.assertEqual(listed[0]["exit_code"], 0)

        # json: the very document record wrote.
        p = self.history("export", doc["id"], "--format", "json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout), doc)
        exported = os.path.join(self.tmp, "exp.json")
        p = self.history("export", doc["id"], "--format", "json", "--output", exported)
        self.assertEqual((p.returncode, p.stdout), (0, ""))
        self.assertEqual(load(exported), doc)

        # No --format: JSON as well.
        p = self.history("export", doc["id"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout), doc)
        self.assertIs(doc["simulated"], False)

        # csv: the timeline, one row per sample per GPU, empty where absent; absolute times in
        # ISO 8601 UTC, fixed decimals, units in the column names.
        p = self.history("export", doc["id"], "--format", "csv")
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = list(csv.DictReader(io.StringIO(p.stdout)))
        self.assertEqual(list(rows[0]), ["time", "t_s", "gpu", "utilization_percent", "memory_used_mib",
                                         "memory_used_percent", "temperature_c", "power_w", "energy_counter_j",
                                         "simulated"])
        self.assertEqual(len(rows), 2 * doc["sample_count"])
        start = datetime.datetime.fromisoformat(doc["started_at"].replace("Z", "+00:00"))
        for i, row in enumerate(doc["timeline"]):
            r0, r1 = rows[2 * i], rows[2 * i + 1]
            self.assertEqual((r0["gpu"], r1["gpu"]), ("0", "1"))
            self.assertAlmostEqual(float(r0["t_s"]), row["t"], 3)
            self.assertRegex(r0["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
            when = datetime.datetime.fromisoformat(r0["time"].replace("Z", "+00:00"))
            self.assertAlmostEqual((when - start).total_seconds(), row["t"], delta=0.0015)
            self.assertRegex(r0["utilization_percent"], r"^\d+\.\d$")
            self.assertRegex(r0["power_w"], r"^\d+\.\d{3}$")
            self.assertEqual(float(r0["utilization_percent"]), row["gpus"]["0"]["utilization"])
            self.assertAlmostEqual(float(r0["power_w"]), row["gpus"]["0"]["power_draw_w"], 3)
            self.assertAlmostEqual(float(r0["memory_used_mib"]), row["gpus"]["0"]["memory_used_mb"], 2)
            self.assertEqual(r1["power_w"], "")
            self.assertEqual(r1["energy_counter_j"], "")
            self.assertEqual((r0["simulated"], r1["simulated"]), ("false", "false"))

        # show: the summary table; json without the timeline.
        p = self.history("show", doc["id"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("stopped", p.stdout)
        self.assertIn("NVIDIA H100", p.stdout)
        p = self.history("show", doc["id"], "--format", "json")
        shown = json.loads(p.stdout)
        self.assertNotIn("timeline", shown)
        self.assertEqual(shown["gpu_stats"], doc["gpu_stats"])

    def test_history_errors(self):
        p = self.history("list")
        self.assertEqual(p.returncode, 0)
        self.assertIn("no sessions", p.stdout)
        self.assertFalse(os.path.exists(self.db))  # reading creates nothing
        p = self.history("show", "20990101-000000-abcdef")
        self.assertEqual(p.returncode, 2)
        self.record(["-q", "--interval", "0.05"], ["true"])
        for args in (["show", "nope"], ["export", "nope", "--format", "csv"], ["show"],
                     ["export", self.listing()[0]["id"], "--format", "table"], ["frobnicate"],
                     ["list", "--format", "csv"], ["prune"], ["list", "--older-than", "1d"],
                     ["prune", "--older-than", "0"]):
            p = self.history(*args)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
        self.assertIn('no session "nope"', self.history("show", "nope").stderr)

    def test_unwritable_db_does_not_stop_the_command(self):
        blocker = os.path.join(self.tmp, "file")
        open(blocker, "w").close()
        out = os.path.join(self.tmp, "run.json")
        p = run(["record", "--db", os.path.join(blocker, "sub", "gpumon.db"), "--interval", "0.05", "-o", out,
                 "--", "sh", "-c", "echo ran; exit 4"], env=self.env)
        self.assertEqual(p.returncode, 4)
        self.assertEqual(p.stdout, "ran\n")
        self.assertIn("warning", p.stderr)
        self.assertIn("not stored", p.stderr)
        self.assertEqual(load(out)["exit_code"], 4)

    def test_bytes_that_are_not_utf8_are_stored_repaired(self):
        # A command argument or a label that is not UTF-8 (a Latin-1 file name) is stored with
        # each stray byte as U+FFFD, never losing the session as "out of memory".
        name = os.fsdecode(b"caf\xe9.txt")
        p = self.record(["-q", "--interval", "0.05"], ["true", name])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("out of memory", p.stderr)
        self.assertNotIn("not stored", p.stderr)
        p = self.record(["-q", "--interval", "0.05", "--label", os.fsdecode(b"\xff\xfe")], ["true"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("out of memory", p.stderr)
        rows = self.listing()
        self.assertEqual(len(rows), 2, rows)
        by_cmd = {r["command"]: r for r in rows}
        self.assertIn("true 'caf\ufffd.txt'", by_cmd)
        self.assertEqual(by_cmd["true"]["label"], "\ufffd\ufffd")
        doc = json.loads(self.history("show", by_cmd["true 'caf\ufffd.txt'"]["id"],
                                      "--format", "json").stdout)
        self.assertEqual(doc["command"], ["true", "caf\ufffd.txt"])

    def test_db_from_environment(self):
        e = dict(self.env, GPU_MONITOR_DB=os.path.join(self.tmp, "env.db"))
        p = run(["record", "-q", "--interval", "0.05", "--", "true"], env=e)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = run(["history", "list", "--format", "json"], env=e)
        self.assertEqual(len(json.loads(p.stdout)), 1)
        # XDG_STATE_HOME when GPU_MONITOR_DB is unset.
        e = dict(self.env, XDG_STATE_HOME=os.path.join(self.tmp, "state"))
        e.pop("GPU_MONITOR_DB", None)
        p = run(["record", "-q", "--interval", "0.05", "--", "true"], env=e)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.exists(os.path.join(self.tmp, "state", "gpumon", "gpumon.db")))


class DiskFull(RecordBase):
    """The database fails mid-run, for real: RLIMIT_FSIZE 0 on the running gpumon makes every
    write(2) to a file fail (EFBIG), which SQLite reports as an I/O error where a full disk's
    ENOSPC gives SQLITE_FULL; raising the limit back is space returning. SIGXFSZ is ignored so
    the write fails instead of killing gpumon."""

    def start_and_fill(self, seconds, ignore_sigxfsz=True):
        pre = (lambda: signal.signal(signal.SIGXFSZ, signal.SIG_IGN)) if ignore_sigxfsz else None
        # The command runs until the limit is in place, then `seconds` more: on a loaded machine
        # (a sanitizer build, parallel tests) a fixed sleep could end before the limit is set.
        flag = self.db + ".filled"
        p = subprocess.Popen([GPUMON, "record", "--db", self.db, "--simulate", "1", "--interval", "0.05", "--",
                              "sh", "-c", 'until [ -e "$0" ]; do sleep 0.02; done; sleep "$1"',
                              flag, str(seconds)], env=self.env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, preexec_fn=pre)
        deadline = time.time() + 10
        while time.time() < deadline:
            rows = json.loads(self.history("list", "--format", "json").stdout or "[]")
            if rows and rows[0]["samples"] >= 3:
                break
            time.sleep(0.02)
        self.limits = resource.prlimit(p.pid, resource.RLIMIT_FSIZE)
        resource.prlimit(p.pid, resource.RLIMIT_FSIZE, (0, self.limits[1]))
        open(flag, "w").close()
        return p

    def test_space_returns_during_the_run_stores_it_whole(self):
        p = self.start_and_fill(1.5)
        time.sleep(0.4)
        resource.prlimit(p.pid, resource.RLIMIT_FSIZE, self.limits)
        _, err = p.communicate(timeout=20)
        self.assertEqual(p.returncode, 0, err)
        self.assertIn("samples are kept and written when the database can take them", err)
        self.assertIn("stored as ", err)
        entry = self.listing()[0]
        self.assertEqual(entry["status"], "stopped")
        doc = json.loads(self.history("export", entry["id"], "--format", "json").stdout)
        self.assertEqual(entry["samples"], doc["sample_count"])
        self.assertEqual(len(doc["timeline"]), doc["sample_count"])
        self.assertGreater(doc["sample_count"], 20)

    def test_still_full_at_the_end_says_what_the_database_keeps(self):
        p = self.start_and_fill(0.6)
        _, err = p.communicate(timeout=20)
        self.assertEqual(p.returncode, 0, err)
        self.assertNotIn("stored as ", err)
        # The deletion of the partial entry cannot be written either: gpumon says so, and what
        # it says is what the database holds.
        m = re.search(r"the session stays interrupted in the database: (\S+) holds (\d+) of "
                      r"(\d+) samples and not its end", err)
        self.assertIsNotNone(m, err)
        # The summary claims nothing the database does not hold.
        self.assertNotIn("incomplete", err)
        entry = self.listing()[0]
        self.assertEqual(entry["id"], m.group(1))
        self.assertEqual(entry["status"], "interrupted")
        self.assertEqual(entry["samples"], int(m.group(2)))
        self.assertLess(int(m.group(2)), int(m.group(3)))


    def test_a_file_size_limit_does_not_kill_record(self):
        # ulimit -f: the kernel sends SIGXFSZ, whose default action would kill gpumon and leave
        # the command running unwatched; gpumon ignores it and takes the failed write as one.
        p = self.start_and_fill(0.6, ignore_sigxfsz=False)
        _, err = p.communicate(timeout=20)
        self.assertEqual(p.returncode, 0, err)
        self.assertIn("the session stays interrupted in the database", err)
        # The command gets SIGXFSZ as gpumon got it (not ignored: bit 25 of SigIgn clear).
        p = self.record(["-q", "--no-db"], ["sh", "-c", "grep SigIgn /proc/$$/status"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertFalse(int(p.stdout.split()[1], 16) & (1 << (signal.SIGXFSZ - 1)), p.stdout)


class DiskFillsUp(RecordBase):
    """A disk that really fills up: the database on a small tmpfs of its own, mounted in a
    private mount namespace (unshare -m), which the recorded command fills to the last byte."""

    # The command samples a while, fills the filesystem, samples on, then exits 5.
    SCRIPT = r"""
mnt=$1 gpumon=$2 out=$3
mount -t tmpfs -o size=24m tmpfs "$mnt" || exit 90
"$gpumon" record --db "$mnt/gpumon.db" --simulate 1 --interval 0.05 -- sh -c '
    sleep 0.5; dd if=/dev/zero of="$1/fill" bs=64k 2>"$2/dd.err"; sleep 0.6; exit 5' \
    sh "$mnt" "$out" 2>"$out/record.err"
echo $? >"$out/record.rc"
df -k "$mnt" >"$out/df"
"$gpumon" history --db "$mnt/gpumon.db" list --format json >"$out/list.json" 2>&1
id=$(sed -n 's/^ *"id": "\([^"]*\)".*/\1/p' "$out/list.json" | head -n 1)
COLUMNS=200 "$gpumon" history --db "$mnt/gpumon.db" list >"$out/list.txt" 2>&1
"$gpumon" history --db "$mnt/gpumon.db" show "$id" >"$out/show.txt" 2>&1
"""

    def setUp(self):
        super().setUp()
        self.mnt = os.path.join(self.tmp, "mnt")
        os.mkdir(self.mnt)
        # Only a place that cannot mount (no CAP_SYS_ADMIN, a container) skips; a missing
        # unshare(1) is an error.
        probe = subprocess.run(["unshare", "-m", "mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", self.mnt],
                               capture_output=True, text=True, timeout=30)
        if probe.returncode != 0:
            self.skipTest("mounting a tmpfs in a private mount namespace cannot run here: %s"
                          % probe.stderr.strip())

    def read(self, name):
        with open(os.path.join(self.tmp, name)) as f:
            return f.read()

    def test_command_fills_the_disk_session_is_incomplete(self):
        p = subprocess.run(["unshare", "-m", "sh", "-c", self.SCRIPT, "sh", self.mnt, GPUMON, self.tmp],
                           env=self.env, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        err = self.read("record.err")
        # The disk was really full: dd stopped at ENOSPC with nothing left.
        self.assertIn("No space left on device", self.read("dd.err"))
        # record exits with the command's status.
        self.assertEqual(self.read("record.rc").strip(), "5", err)
        # It says why it stopped storing, and that the database marks the run incomplete.
        self.assertIn("disk full: ", err)
        self.assertIn(" free on %s" % self.mnt, err)
        m = re.search(r"the database keeps (\S+) as incomplete, with (\d+) of (\d+) samples", err)
        self.assertIsNotNone(m, err)
        sid, stored, taken = m.group(1), int(m.group(2)), int(m.group(3))
        self.assertGreater(stored, 3, err)
        self.assertGreater(taken - stored, 3, err)
        m = re.search(r"^incomplete: (\d+) samples not stored \(disk full: \d+ MiB free on ", err, re.M)
        self.assertIsNotNone(m, err)
        self.assertEqual(int(m.group(1)), taken - stored)
        self.assertNotIn("interrupted", err)
        # What the database holds says the same.
        entry = json.loads(self.read("list.json"))[0]
        self.assertEqual(entry["id"], sid)
        self.assertEqual(entry["status"], "incomplete")
        self.assertEqual(entry["samples"], stored)
        self.assertEqual(entry["exit_code"], 5)
        self.assertRegex(self.read("list.txt"), r"%s .* incomplete +%d +5 " % (sid, stored))
        show = self.read("show.txt")
        self.assertIn("incomplete: %d samples not stored (disk full: " % (taken - stored), show)
        self.assertNotIn("interrupted", show)


class Terminal(RecordBase):
    def test_progress_only_on_a_tty(self):
        master, slave = pty.openpty()
        proc = subprocess.Popen([GPUMON, "record", "--db", self.db, "--interval", "0.05", "--", "sleep", "0.4"],
                                env=self.env, stdout=subprocess.DEVNULL, stderr=slave)
        os.close(slave)
        data = b""
        while True:
            r, _, _ = select.select([master], [], [], 10)
            if not r:
                break
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
        proc.wait(timeout=10)
        os.close(master)
        text = data.decode()
        self.assertIn("\r\x1b[K", text)
        self.assertIn("samples", text)
        self.assertIn("stopped", text)


class Snapshot(RecordBase):
    def test_snapshot_before_after_with_diff(self):
        out = os.path.join(self.tmp, "run.json")
        p = self.record(["--snapshot", "--snapshot-window-ms", "0", "--interval", "0.1", "-o", out], ["true"])
        self.assertEqual(p.returncode, 0, p.stderr)
        audit = load(out)["audit"]
        self.assertEqual(audit["before"]["kind"], "gpumon-snapshot")
        self.assertEqual(audit["after"]["kind"], "gpumon-snapshot")
        self.assertIn(audit["diff"]["verdict"], ("CHANGED", "UNCHANGED"))
        self.assertIn("system snapshot: " + audit["diff"]["verdict"], p.stderr)


    def test_snapshot_names_a_process_that_came_during_the_command(self):
        # A 20 GiB job appears on the GPU from its 4th read on: after the snapshot before, in
        # the one after. The command's own processes are never on the fake's GPU, so this is
        # another job, and the verdict says so.
        scn = os.path.join(self.tmp, "proc.json")
        with open(scn, "w") as f:
            json.dump({"gpus": [{"util_gpu": 50, "power_mw": 200000, "processes": [
                {"pid": 3999995, "used_mem": 20480 * 1048576, "from_read": 3}]}]}, f)
        out = os.path.join(self.tmp, "run.json")
        p = self.record(["--snapshot", "--snapshot-window-ms", "0", "--interval", "0.1", "-o", out],
                        ["sleep", "0.3"], env=env(nvml=FAKE_NVML, scenario=scn))
        self.assertEqual(p.returncode, 0, p.stderr)
        audit = load(out)["audit"]
        self.assertEqual(audit["before"]["gpus"][0]["processes"], [])
        self.assertEqual([x["pid"] for x in audit["after"]["gpus"][0]["processes"]], [3999995])
        procs = [d for d in audit["diff"]["differences"] if d["field"] == "processes"]
        self.assertEqual([(d["severity"], d["after"]["pid"]) for d in procs],
                         [("changed", 3999995)])
        self.assertIn("system snapshot: CHANGED", p.stderr)

    def test_snapshot_leaves_out_the_commands_own_processes(self):
        # In a PID namespace of its own, gpumon is PID 1 and the command and its child small
        # PIDs; the fake lists PIDs 2-40 on the GPU from the command's start on. Those two are
        # the run's own work; the others (none of them gpumon's descendants) are reported.
        if not shutil.which("unshare") or subprocess.run(
                ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount-proc",
                 "true"], capture_output=True).returncode != 0:
            self.skipTest("no unprivileged PID namespaces here")
        scn = os.path.join(self.tmp, "proc.json")
        with open(scn, "w") as f:
            json.dump({"gpus": [{"util_gpu": 50, "power_mw": 200000, "processes": [
                {"pid": pid, "used_mem": 1024 * 1048576, "from_read": 2}
                for pid in range(2, 41)]}]}, f)
        out, pidfile = os.path.join(self.tmp, "run.json"), os.path.join(self.tmp, "pid")
        p = subprocess.run(
            ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount-proc", GPUMON,
             "record", "--db", self.db, "--snapshot", "--snapshot-window-ms", "0", "--interval",
             "0.1", "-o", out, "--", "sh", "-c", 'echo $$ > "$0"; sleep 0.5 & echo $! >> "$0"; wait',
             pidfile],
            capture_output=True, text=True, timeout=60, env=env(nvml=FAKE_NVML, scenario=scn))
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(pidfile) as f:
            own = [int(x) for x in f.read().split()]
        self.assertEqual(len(own), 2)
        self.assertTrue(all(2 <= pid <= 40 for pid in own), own)
        audit = load(out)["audit"]
        self.assertEqual(audit["before"]["gpus"][0]["processes"], [])
        self.assertEqual(len(audit["after"]["gpus"][0]["processes"]), 39)
        reported = [d["after"]["pid"] for d in audit["diff"]["differences"]
                    if d["field"] == "processes"]
        self.assertEqual(sorted(reported), [pid for pid in range(2, 41) if pid not in own])

if __name__ == "__main__":
    unittest.main()
