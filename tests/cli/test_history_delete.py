"""`gpumon history delete ID...`: removes stored entries with everything attached to them
(samples, benchmark points), all or nothing, and leaves alone a session still being recorded."""
import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
import time
import unittest

from gmtest import GPUMON, env, run
from test_bench import FakeServer


class HistoryDelete(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gm_history_delete_")
        self.db = os.path.join(self.tmp, "gpumon.db")
        self.env = env()
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def record(self, label):
        p = run(["record", "--db", self.db, "--simulate", "2", "--interval", "0.05", "-q", "--label",
                 label, "--", "sleep", "0.2"], env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        return self.ids()[label]

    def ids(self):
        p = run(["history", "--db", self.db, "list", "--format", "json"], env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        return {e["label"]: e["id"] for e in json.loads(p.stdout)}

    def rows(self, table, column, id_):
        con = sqlite3.connect(self.db)
        try:
            return con.execute("SELECT count(*) FROM %s WHERE %s = ?" % (table, column),
                               (id_,)).fetchone()[0]
        finally:
            con.close()

    def delete(self, *ids):
        return run(["history", "--db", self.db, "delete", *ids], env=self.env)

    def test_deletes_a_session_and_its_samples_by_prefix(self):
        a = self.record("a")
        b = self.record("b")
        self.assertGreater(self.rows("samples", "session_id", a), 0)
        p = self.delete(a[:18])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "deleted %s\n" % a)
        self.assertEqual(self.ids(), {"b": b})
        self.assertEqual(self.rows("samples", "session_id", a), 0)
        self.assertGreater(self.rows("samples", "session_id", b), 0)
        shown = run(["history", "--db", self.db, "show", a], env=self.env)
        self.assertEqual(shown.returncode, 2)

    def test_all_or_nothing(self):
        a = self.record("a")
        b = self.record("b")
        p = self.delete(a, "no-such-id", b)
        self.assertEqual(p.returncode, 2)
        self.assertIn('no session "no-such-id"', p.stderr)
        self.assertEqual(p.stdout, "")
        self.assertEqual(set(self.ids()), {"a", "b"})
        p = self.delete(a, b)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.split("\n")[:2], ["deleted " + a, "deleted " + b])
        self.assertEqual(self.ids(), {})

    def test_deletes_a_benchmark_with_its_points(self):
        s = FakeServer(self.tmp)
        try:
            p = run(["bench", "--url", s.url, "--concurrency", "1,2", "--requests", "4",
                     "--output-tokens", "2", "--idle-seconds", "0", "-q", "--db", self.db, "--label",
                     "sweep", "-o", os.path.join(self.tmp, "b.json")], env=self.env, timeout=60)
        finally:
            s.stop()
        self.assertEqual(p.returncode, 0, p.stderr)
        bid = self.ids()["sweep"]
        self.assertEqual(self.rows("bench_points", "bench_id", bid), 2)
        p = self.delete(bid)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.rows("bench_points", "bench_id", bid), 0)
        self.assertEqual(self.rows("sessions", "id", bid), 0)

    def test_leaves_a_running_session_alone(self):
        rec = subprocess.Popen([GPUMON, "record", "--db", self.db, "--simulate", "1", "--interval",
                                "0.05", "-q", "--label", "live", "--", "sleep", "30"],
                               env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(rec)
        for _ in range(200):
            if os.path.exists(self.db) and "live" in self.ids():
                break
            time.sleep(0.05)
        live = self.ids()["live"]
        p = self.delete(live)
        self.assertEqual(p.returncode, 1)
        self.assertIn("still being recorded", p.stderr)
        self.assertEqual(self.rows("sessions", "id", live), 1)
        # Once its recorder is gone it reads as interrupted, and may go.
        rec.kill()
        rec.wait()
        p = self.delete(live)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.ids(), {})

    def test_usage_and_missing_database(self):
        p = self.delete()
        self.assertEqual(p.returncode, 2)
        self.assertIn("delete takes 1 to 16 IDs", p.stderr)
        p = run(["history", "--db", self.db, "delete", "x", "--format", "json"], env=self.env)
        self.assertEqual(p.returncode, 2)
        p = self.delete("abc")
        self.assertEqual(p.returncode, 2)
        self.assertIn("no database at", p.stderr)
        self.assertFalse(os.path.exists(self.db), "delete must not create a database")


if __name__ == "__main__":
    unittest.main()
