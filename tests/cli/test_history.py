"""`gpumon history` as a person meets it: export defaults to JSON, CSV with absolute times and
unit-true columns, runs on simulated GPUs marked as such, the API's status words, and
`history prune --older-than` deleting what ended long ago and nothing else."""
import csv
import io
import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
import unittest

from gmtest import FAKE_NVML, GPUMON, env, run

DAY_MS = 86400000


class History(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gm-history-test-")
        self.db = os.path.join(self.tmp, "gpumon.db")
        self.env = env(nvml=FAKE_NVML, scenario="two_gpus.json")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def gpumon(self, *args):
        return run(list(args), env=self.env)

    def history(self, *args, rc=0):
        p = self.gpumon("history", "--db", self.db, *args)
        self.assertEqual(p.returncode, rc, p.stderr)
        return p

    def record(self, *args):
        p = self.gpumon("record", "--db", self.db, "--interval", "0.05", "-q", *args, "--",
                        "sleep", "0.2")
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(self.history("list", "--format", "json").stdout)[0]["id"]

    def listing_while_recording(self, label, samples):
        """The list once the running record `label` has written samples (the database may not
        even be created when the first look comes)."""
        for _ in range(300):
            p = self.gpumon("history", "--db", self.db, "list", "--format", "json")
            listed = json.loads(p.stdout) if p.returncode == 0 else []
            mine = [e for e in listed if e["label"] == label]
            if mine and mine[0]["samples"] >= samples:
                return listed
            subprocess.run(["sleep", "0.05"])
        self.fail("the record never showed in the list")

    def age(self, sid, days):
        """Moves entry sid's start and end days into the past, as if it ran then."""
        with sqlite3.connect(self.db) as db:
            db.execute("UPDATE sessions SET started_ms = started_ms - ?1, ended_ms = ended_ms - ?1 "
                       "WHERE id = ?2", (days * DAY_MS, sid))

    def test_simulated_runs_are_marked(self):
        real = self.record("--label", "real")
        sim = self.record("--label", "sim", "--simulate", "1")
        listed = {e["id"]: e for e in json.loads(self.history("list", "--format", "json").stdout)}
        self.assertIs(listed[real]["simulated"], False)
        self.assertIs(listed[sim]["simulated"], True)
        table = self.history("list").stdout.splitlines()
        self.assertIn("KIND", table[0])
        sim_line = next(l for l in table if l.startswith(sim))
        real_line = next(l for l in table if l.startswith(real))
        self.assertIn("record (sim)", sim_line)
        self.assertNotIn("(sim)", real_line)

        doc = json.loads(self.history("export", sim).stdout)
        self.assertIs(doc["simulated"], True)
        self.assertEqual(doc["provider"], "sim")
        self.assertIs(json.loads(self.history("export", real).stdout)["simulated"], False)
        rows = list(csv.DictReader(io.StringIO(self.history("export", sim, "--format", "csv").stdout)))
        self.assertTrue(rows)
        self.assertEqual({r["simulated"] for r in rows}, {"true"})
        self.assertIn("simulated GPUs (provider sim)", self.history("show", sim).stdout)
        self.assertNotIn("simulated GPUs", self.history("show", real).stdout)

    def test_export_defaults_to_json(self):
        sid = self.record()
        p = self.history("export", sid)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["id"], sid)
        self.assertGreater(len(doc["timeline"]), 0)
        out = os.path.join(self.tmp, "x.json")
        self.assertEqual(self.history("export", sid, "-o", out).stdout, "")
        with open(out) as f:
            self.assertEqual(json.load(f), doc)

    def test_status_words_are_the_apis(self):
        sid = self.record()
        entry = json.loads(self.history("list", "--format", "json").stdout)[0]
        self.assertEqual(entry["status"], "stopped")
        self.assertEqual(json.loads(self.history("show", sid, "--format", "json").stdout)["status"],
                         "stopped")
        self.assertIn(" stopped ", self.history("list").stdout)
        # A record killed before its end reads as interrupted.
        proc = subprocess.Popen([GPUMON, "record", "--db", self.db, "--interval", "0.05", "-q",
                                 "--label", "killed", "--", "sleep", "30"], env=self.env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            listed = self.listing_while_recording("killed", 2)
            self.assertEqual([e["status"] for e in listed if e["label"] == "killed"], ["running"])
        finally:
            proc.kill()
            proc.wait()
        listed = json.loads(self.history("list", "--format", "json").stdout)
        self.assertEqual([e["status"] for e in listed if e["label"] == "killed"], ["interrupted"])

    def test_prune_older_than(self):
        old = self.record("--label", "old")
        old_sim = self.record("--label", "old-sim", "--simulate", "1")
        week = self.record("--label", "week")
        new = self.record("--label", "new")
        self.age(old, 40)
        self.age(old_sim, 31)
        self.age(week, 7)
        p = self.history("prune", "--older-than", "30d")
        self.assertRegex(p.stdout, r"^deleted 2 entries that ended before \d{4}-\d\d-\d\dT[\d:.]+Z\n$")
        left = {e["label"] for e in json.loads(self.history("list", "--format", "json").stdout)}
        self.assertEqual(left, {"week", "new"})
        with sqlite3.connect(self.db) as db:  # the samples went with them
            self.assertEqual(db.execute("SELECT count(*) FROM samples WHERE session_id IN (?, ?)",
                                        (old, old_sim)).fetchone()[0], 0)
        self.assertTrue(self.history("prune", "--older-than", "30d").stdout.startswith("deleted 0 "))
        self.assertTrue(self.history("prune", "--older-than", "6d").stdout.startswith("deleted 1 entry "))

    def test_prune_keeps_what_is_still_recording(self):
        proc = subprocess.Popen([GPUMON, "record", "--db", self.db, "--interval", "0.05", "-q",
                                 "--label", "live", "--", "sleep", "30"], env=self.env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            listed = self.listing_while_recording("live", 1)
            self.age(listed[0]["id"], 60)
            self.assertTrue(self.history("prune", "--older-than", "1d").stdout.startswith("deleted 0 "))
            self.assertEqual(len(json.loads(self.history("list", "--format", "json").stdout)), 1)
        finally:
            proc.kill()
            proc.wait()
        # Its process gone, it is interrupted and old: it goes.
        self.assertTrue(self.history("prune", "--older-than", "1d").stdout.startswith("deleted 1 "))

    def test_prune_without_database_creates_none(self):
        p = self.history("prune", "--older-than", "30d")
        self.assertIn("nothing to prune", p.stdout)
        self.assertFalse(os.path.exists(self.db))

    def at_columns(self, columns, *args):
        e = dict(self.env)
        e.pop("COLUMNS", None)
        if columns:
            e["COLUMNS"] = str(columns)
        p = run(["history", "--db", self.db] + list(args), env=e)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout.splitlines()

    def assertFits(self, lines, width):
        self.assertTrue(lines)
        wide = [l for l in lines if len(l) > width]
        self.assertEqual(wide, [], "lines over %d columns" % width)

    def test_80_columns(self):
        """list, show and compare fit 80 columns at COLUMNS=80, and when written to a pipe;
        a wider COLUMNS gets every column and more of the command."""
        long_label = "a-label-longer-than-any-column-would-hold-" * 2
        sid = self.record("--label", long_label)
        imports = os.path.join(os.environ.get("GM_FIXTURES", ""), "import")
        for name in ("vllm_rate_sweep_appended.json", "vllm_concurrency8.json",
                     "profile_export_genai_perf.json"):
            self.history("import", os.path.join(imports, name))
        listed = json.loads(self.history("list", "--format", "json").stdout)
        benches = [e["id"] for e in listed if e["kind"] == "bench"]
        sweep = next(e["id"] for e in listed if e["label"] == "sweep-rate")
        for columns in (80, None):  # None: a pipe, no COLUMNS
            table = self.at_columns(columns, "list")
            self.assertFits(table, 80)
            self.assertIn("STATUS", table[0])
            row = next(l for l in table if l.startswith(sid))
            self.assertIn("stopped", row)
            self.assertTrue(row.endswith("..."), row)  # the label, cut
            show = self.at_columns(columns, "show", sweep)
            self.assertFits(show, 80)
            self.assertIn("TTFT p99", "\n".join(show))
            self.assertIn("TOK/J", "\n".join(show))  # the table's second half
            compare = self.at_columns(columns, "compare", *benches)
            self.assertFits(compare, 80)
            self.assertEqual(sum(1 for l in compare if l.startswith("requests/s")), 2)
        wide = self.at_columns(200, "list")
        self.assertIn("SAMPLES", wide[0])
        self.assertFits(wide, 200)
        row = next(l for l in wide if l.startswith(sid))
        self.assertIn("sleep 0.2", row)
        # A wide terminal: one table of the points, compare's columns side by side.
        self.assertEqual(sum(1 for l in self.at_columns(200, "show", sweep)
                             if l.startswith("LOAD")), 1)
        self.assertEqual(sum(1 for l in self.at_columns(200, "compare", *benches)
                             if l.startswith("requests/s")), 1)

    def test_usage(self):
        for args, msg in (
            (["prune"], "gpumon history: prune needs --older-than DURATION (e.g. 30d)\n"),
            (["prune", "--older-than", "soon"], None),
            (["list", "--older-than", "1d"], "gpumon history: --older-than is for prune\n"),
            (["prune", "--older-than", "1d", "--format", "json"], "gpumon history: prune takes no --format\n"),
            (["prnue"], 'gpumon history: unknown action "prnue"; did you mean "prune"?\n'),
            (["expotr", "x"], 'gpumon history: unknown action "expotr"; did you mean "export"?\n'),
            (["-n", "3"], "gpumon history: -n is no longer short for --limit; use --limit (-n is --count, "
                          "a number of GPUs, in every command)\n"),
        ):
            with self.subTest(args=args):
                p = self.history(*args, rc=2)
                if msg:
                    self.assertEqual(p.stderr, msg)


if __name__ == "__main__":
    unittest.main()
