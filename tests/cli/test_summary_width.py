"""The summary `gpumon record` and `gpumon run` print on stderr fits 80 columns (it was 120-133
wide), and fewer where COLUMNS says so: a long command line ends in "...", the GPU table keeps
utilization mean/p95/max, the most memory and temperature, power mean/max and energy."""
import os
import shutil
import tempfile
import unittest

from gmtest import env, run


class SummaryFits80Columns(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gm-summary-")
        self.db = os.path.join(self.tmp, "gpumon.db")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def summary(self, args, columns):
        p = run(args, env=env(extra={"COLUMNS": str(columns)}), timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stderr.splitlines()

    def check(self, lines, width):
        long = [l for l in lines if len(l) > width]
        self.assertFalse(long, "\n".join(long))
        header = next(l for l in lines if l.startswith("GPU "))
        for word in ("NAME", "UTILIZATION %", "MEM MiB", "TEMP", "POWER W", "ENERGY J"):
            self.assertIn(word, header)
        rows = [l for l in lines if l[:1].isdigit() and ("H100" in l or "A100" in l)]
        self.assertTrue(rows, "\n".join(lines))
        for r in rows:  # nine figures after the name: util x3, memory x2, temp, power x2, energy
            figures = r.split()[-9:]
            self.assertTrue(all(f.rstrip("*").replace(".", "").isdigit() or f == "-"
                                for f in figures), r)

    def test_record_at_80_columns(self):
        words = ["word%02d" % i for i in range(30)]  # a command line of 210 characters
        lines = self.summary(["record", "--simulate", "16", "--db", self.db, "--", "sh", "-c",
                              "sleep 1", "sh"] + words, 80)
        self.check(lines, 80)
        self.assertEqual(len([l for l in lines if "H100" in l or "A100" in l]), 16)
        command = next(l for l in lines if l.startswith("command: "))
        self.assertTrue(command.endswith("..."), command)
        self.assertEqual(len(command), 80)

    def test_columns_narrows_it(self):
        lines = self.summary(["record", "--simulate", "2", "--db", self.db, "--", "sleep", "1"], 72)
        self.check(lines, 72)
        # The name column gives the columns up: "H100 80GB HBM3" shortened to its first word.
        self.assertTrue([l for l in lines if l.startswith("0   H100 ")], "\n".join(lines))

    def test_run_at_80_columns(self):
        lines = self.summary(["run", "--count", "1", "--simulate", "4", "--db", self.db,
                              "--lease-dir", os.path.join(self.tmp, "leases"), "--", "sleep", "1"],
                             80)
        self.check(lines, 80)
        self.assertTrue([l for l in lines if l.startswith("run ")], "\n".join(lines))


if __name__ == "__main__":
    unittest.main()
