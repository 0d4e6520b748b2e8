"""`gpumon serve --retention`: the session worker deletes stored entries that ended longer ago
than the retention, at start and then periodically, never a running session; and the daemon
and `gpumon history` use the same status words and both mark simulated GPUs."""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

from daemon import Daemon

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from gmtest import GPUMON, env  # noqa: E402

DAY_MS = 86400000


def history(db, *args):
    p = subprocess.run([GPUMON, "history", "--db", db] + list(args), capture_output=True, text=True,
                       timeout=30, env=env())
    assert p.returncode == 0, p.stderr
    return p.stdout


class Retention(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gpumon-retention-")
        self.db = os.path.join(self.tmp, "gpumon.db")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def record(self, label):
        p = subprocess.run([GPUMON, "record", "--db", self.db, "--simulate", "1", "--interval", "0.05",
                            "-q", "--label", label, "--", "sleep", "0.1"], capture_output=True,
                           text=True, timeout=30, env=env())
        self.assertEqual(p.returncode, 0, p.stderr)

    def labels(self, d):
        return {s["label"] for s in d.get_json("/api/sessions")["sessions"]}

    def test_old_entries_go_at_start_recent_ones_stay(self):
        self.record("old")
        self.record("recent")
        with sqlite3.connect(self.db) as db:
            db.execute("UPDATE sessions SET started_ms = started_ms - 40 * ?1, "
                       "ended_ms = ended_ms - 40 * ?1 WHERE label = 'old'", (DAY_MS,))
        with Daemon(["--simulate", "1", "--interval", "0.1", "--db", self.db,
                     "--retention", "30d"]) as d:
            self.assertEqual(d.get_json("/api/config")["retention_seconds"], 30 * 86400)
            d.wait_for(lambda: self.labels(d) == {"recent"}, timeout=20)
            self.assertIn("sessions past retention deleted", d.log())
        self.assertNotIn("old", history(self.db, "list"))

    def test_periodic_and_never_a_running_session(self):
        with Daemon(["--simulate", "2", "--interval", "0.1", "--db", self.db,
                     "--retention", "2s"]) as d:
            status, _, done = d.call("/api/sessions", "POST", obj={"label": "done"})
            self.assertEqual(status, 201, done)
            status, _, live = d.call("/api/sessions", "POST", obj={"label": "live"})
            self.assertEqual(status, 201, live)
            d.wait_for(lambda: d.get_json("/api/sessions/%s?timeline=0" % done["id"])["sample_count"] >= 2,
                       timeout=20)
            stopped = d.call("/api/sessions/%s/stop" % done["id"], "POST")[2]
            self.assertEqual(stopped["status"], "stopped")

            # The same words and the simulated mark, through the API and through the CLI.
            api = {s["id"]: s for s in d.get_json("/api/sessions")["sessions"]}
            cli = {e["id"]: e for e in json.loads(history(self.db, "list", "--format", "json"))}
            self.assertEqual(api[done["id"]]["status"], "stopped")
            self.assertEqual(cli[done["id"]]["status"], "stopped")
            self.assertEqual(api[live["id"]]["status"], cli[live["id"]]["status"])
            self.assertIs(api[done["id"]]["simulated"], True)
            self.assertIs(cli[done["id"]]["simulated"], True)
            self.assertIs(json.loads(history(self.db, "export", done["id"]))["simulated"], True)
            # The API's export says the same as the CLI's.
            status, _, body = d.request("/api/sessions/%s/export?format=csv" % done["id"])
            self.assertEqual(status, 200)
            self.assertEqual(body.decode(), history(self.db, "export", done["id"], "--format", "csv"))
            self.assertTrue(body.startswith(b"time,t_s,gpu,utilization_percent,"))
            self.assertTrue(body.endswith(b",true\n"))
            status, _, body = d.request("/api/sessions/%s/export" % done["id"])
            self.assertIs(json.loads(body)["simulated"], True)

            # Two seconds after its end, the stopped one goes; the running one, older than
            # that, stays.
            d.wait_for(lambda: self.labels(d) == {"live"}, timeout=20)
            time.sleep(1.5)
            self.assertEqual(self.labels(d), {"live"})
            self.assertEqual(d.get_json("/api/sessions/%s?timeline=0" % live["id"])["status"],
                             "running")

    def test_bad_retention(self):
        for value in ("soon", "-1d", "0.5"):
            p = subprocess.run([GPUMON, "serve", "--retention", value], capture_output=True,
                               text=True, timeout=10, env=env())
            self.assertEqual(p.returncode, 2, (value, p.stderr))
            self.assertTrue(p.stderr.startswith("gpumon serve: --retention: "), p.stderr)
        p = subprocess.run([GPUMON, "serve", "--retentoin", "1d"], capture_output=True, text=True,
                           timeout=10, env=env())
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr, 'gpumon serve: unknown option "--retentoin"; did you mean "--retention"?\n')


if __name__ == "__main__":
    unittest.main()
