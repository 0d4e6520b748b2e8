"""`gpumon history` reads a database it may not write (another user's, or on a read-only mount):
readers open it read-only, with no WAL switch, migration or side file.

The tests run as root here, whom file permissions do not stop, so the reading runs as `nobody`
(setpriv) on a database and directory that nobody may only read; as another user the same
checks run directly."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from gmtest import GPUMON, copy_for_others, env, run

SETPRIV = shutil.which("setpriv")
IS_ROOT = os.geteuid() == 0


def as_reader(args, e, tmp):
    """Runs gpumon with args as a user who may read but not write the test database."""
    cmd = [GPUMON] + list(args)
    if IS_ROOT:
        cmd = [SETPRIV, "--reuid=nobody", "--regid=nogroup", "--clear-groups",
               copy_for_others(GPUMON, tmp)] + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30, env=e)


@unittest.skipIf(IS_ROOT and not SETPRIV, "needs setpriv to drop root")
class ReadOnlyDatabase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gm_history_ro_")
        self.dir = os.path.join(self.tmp, "state")
        os.mkdir(self.dir)
        self.db = os.path.join(self.dir, "gpumon.db")
        self.env = env()
        p = run(["record", "--db", self.db, "--simulate", "1", "--interval", "0.05", "-q", "--", "sleep", "0.2"],
                env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.id = json.loads(run(["history", "--db", self.db, "list", "--format", "json"],
                                 env=self.env).stdout)[0]["id"]
        # The tree is traversable by anyone; the file and its directory are nobody's to write.
        os.chmod(self.tmp, 0o755)
        os.chmod(self.db, 0o444)
        os.chmod(self.dir, 0o555)
        self.before = self.fingerprint()

    def tearDown(self):
        os.chmod(self.dir, 0o755)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def fingerprint(self):
        with open(self.db, "rb") as f:
            return sorted(os.listdir(self.dir)), f.read()

    def test_the_reader_cannot_write_here(self):
        # What makes the other tests mean something: the reader really may not write.
        p = as_reader(["record", "--db", self.db, "--simulate", "1", "--interval", "0.05", "-q", "--", "true"],
                      self.env, self.tmp)
        self.assertIn("not stored", p.stderr)
        self.assertIn("readonly", p.stderr)

    def test_list_show_export(self):
        p = as_reader(["history", "--db", self.db, "list", "--format", "json"], self.env, self.tmp)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual([e["id"] for e in json.loads(p.stdout)], [self.id])
        p = as_reader(["history", "--db", self.db, "show", self.id], self.env, self.tmp)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(self.id, p.stdout)
        p = as_reader(["history", "--db", self.db, "export", self.id, "--format", "csv"], self.env, self.tmp)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(p.stdout.startswith("time,t_s,gpu,utilization_percent,"))
        self.assertGreater(len(p.stdout.splitlines()), 2)
        # Nothing written, converted or left behind (no -wal, no -shm).
        self.assertEqual(self.fingerprint(), self.before)

    def test_missing_database_is_a_clear_message(self):
        missing = os.path.join(self.dir, "none.db")
        p = as_reader(["history", "--db", missing, "list"], self.env, self.tmp)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "no sessions stored yet (no database at %s)\n" % missing)
        p = as_reader(["history", "--db", missing, "show", "abc"], self.env, self.tmp)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr, 'gpumon history: no session "abc": no database at %s (nothing '
                                   "recorded there yet)\n" % missing)
        self.assertFalse(os.path.exists(missing))


if __name__ == "__main__":
    unittest.main()
