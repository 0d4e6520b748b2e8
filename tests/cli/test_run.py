"""`gpumon run` against the fake NVML: concurrent runs lease different GPUs, the command sees
them in CUDA_VISIBLE_DEVICES, waiting times out, task estimates pick the count."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from gmtest import FAKE_NVML, GPUMON, env, run

# two_gpus.json: GPU 0 87% busy with 40 GiB used, GPU 1 3% busy and nearly empty.
SCENARIO = "two_gpus.json"
SHOW = 'echo "CVD=$CUDA_VISIBLE_DEVICES ORDER=$CUDA_DEVICE_ORDER"'


def load(path):
    with open(path) as f:
        return json.load(f)


class Run(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gm_run_")
        self.db = os.path.join(self.tmp, "gpumon.db")
        self.env = env(nvml=FAKE_NVML, scenario=SCENARIO)
        self.env.pop("CUDA_VISIBLE_DEVICES", None)
        self.common = ["--db", self.db, "--lease-dir", os.path.join(self.tmp, "leases"),
                       "--check-interval", "0.1", "--interval", "0.1"]

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def start(self, args, script):
        return subprocess.Popen([GPUMON, "run"] + self.common + list(args) + ["--", "sh", "-c", script],
                                env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def history(self):
        p = run(["history", "--db", self.db, "list", "--format", "json"], env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def test_concurrent_runs_get_different_gpus(self):
        # Each command holds its GPU until the test creates the gate file, so the third run
        # finds both leased.
        gate = os.path.join(self.tmp, "go")
        script = SHOW + "; while [ ! -e %s ]; do sleep 0.02; done" % gate
        a = self.start(["--count", "1", "--wait", "10", "-q"], script)
        b = self.start(["--count", "1", "--wait", "10", "-q"], script)
        try:
            seen = {a.stdout.readline().strip(), b.stdout.readline().strip()}
            self.assertEqual(seen, {"CVD=0 ORDER=PCI_BUS_ID", "CVD=1 ORDER=PCI_BUS_ID"})
            third = run(["run"] + self.common + ["--count", "1", "--wait", "0", "--", "true"], env=self.env)
            self.assertEqual(third.returncode, 5, third.stderr)
            self.assertIn("leased", third.stderr)
        finally:
            open(gate, "w").close()
            a.communicate(timeout=10)
            b.communicate(timeout=10)
        self.assertEqual((a.returncode, b.returncode), (0, 0))
        runs = self.history()
        self.assertEqual(len(runs), 2)
        self.assertEqual({r["kind"] for r in runs}, {"run"})
        self.assertEqual({r["status"] for r in runs}, {"stopped"})
        # Released when the commands exit: a new run gets a GPU at once.
        p = run(["run"] + self.common + ["--count", "2", "--wait", "0", "-q", "--", "sh", "-c", SHOW],
                env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "CVD=0,1 ORDER=PCI_BUS_ID\n")

    def test_progress_while_waiting(self):
        # While its GPUs are not free, run says at each check how long it has waited and what
        # each GPU lacks (stderr; stdout is the command's); -q keeps only the verdict.
        args = ["run"] + self.common + ["--count", "2", "--max-util", "10", "--wait", "0.5",
                                        "--check-interval", "0.2", "--", "true"]
        p = run(args, env=self.env)
        self.assertEqual(p.returncode, 5, p.stderr)
        self.assertEqual(p.stdout, "")
        progress = [l for l in p.stderr.splitlines() if l.startswith("gpumon run: waiting ")]
        self.assertGreaterEqual(len(progress), 3, p.stderr)  # at about 0.1, 0.2, 0.4, 0.5 s
        for line in progress:
            self.assertRegex(line, r"^gpumon run: waiting \d+\.\d s of 0\.5 s: 1 of 2 GPUs free "
                                   r"\(GPU 0: 87% util > 10%\)$")
        waited = [float(l.split()[3]) for l in progress]
        self.assertEqual(waited, sorted(waited))
        self.assertIn("gpumon run: timed out after 0.5s", p.stderr.splitlines()[-1])
        q = run(args[:1] + ["-q"] + args[1:], env=self.env)
        self.assertEqual(q.returncode, 5)
        self.assertNotIn("waiting", q.stderr)
        self.assertIn("timed out", q.stderr)

    def test_run_document(self):
        out = os.path.join(self.tmp, "run.json")
        p = run(["run"] + self.common + ["--count", "1", "--wait", "0", "-o", out, "--label", "job",
                                         "--", "sh", "-c", SHOW + "; exit 6"], env=self.env)
        self.assertEqual(p.returncode, 6, p.stderr)
        self.assertEqual(p.stdout, "CVD=1 ORDER=PCI_BUS_ID\n")  # the idle GPU scores best
        self.assertIn("leased GPU 1", p.stderr)
        doc = load(out)
        self.assertEqual(doc["kind"], "run")
        self.assertEqual(doc["label"], "job")
        self.assertEqual(doc["exit_code"], 6)
        self.assertEqual(list(doc["gpu_stats"]), ["1"])  # sampled only what it leased
        self.assertEqual(doc["lease"]["cuda_visible_devices"], "1")
        self.assertEqual(doc["lease"]["uuids"], ["GPU-5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c51"])
        self.assertEqual(doc["selection"]["indices"], [1])
        entry = self.history()[0]
        self.assertEqual((entry["id"], entry["kind"], entry["exit_code"]), (doc["id"], "run", 6))

    def test_a_label_that_is_not_utf8_is_stored_repaired(self):
        p = run(["run"] + self.common + ["--count", "1", "--wait", "0", "-q",
                                         "--label", os.fsdecode(b"\xe9"), "--", "true"],
                env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("out of memory", p.stderr)
        entry = self.history()[0]
        self.assertEqual((entry["kind"], entry["label"]), ("run", "\ufffd"))

    def test_task_estimate(self):
        task = os.path.join(self.tmp, "task.json")
        with open(task, "w") as f:
            json.dump({"model": {"id_or_path": "llama-3-8b"}, "parameters": {"tp": [1, 2]}}, f)
        out = os.path.join(self.tmp, "run.json")
        p = run(["run"] + self.common + ["--task", task, "--wait", "0", "-q", "-o", out,
                                         "--", "sh", "-c", SHOW], env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "CVD=0,1 ORDER=PCI_BUS_ID\n")
        doc = load(out)
        self.assertEqual(doc["estimate"]["gpus"], 2)
        self.assertEqual(sorted(doc["gpu_stats"]), ["0", "1"])
        # Llama 3 8B (built in: 8.03e9 parameters, 32 layers, 8 KV heads) at tp 2: 7658 MiB of
        # fp16 weights + 256 MiB of KV cache + 2048 MiB per GPU; GPU 0 has about 40 GiB free,
        # so both qualify.
        self.assertEqual(doc["selection"]["min_free_mib"], 9963)
        # Asking for more memory than GPU 0 has free makes it wait, then time out.
        p = run(["run"] + self.common + ["--task", task, "--min-free-mb", "60000", "--wait", "0.3",
                                         "--", "true"], env=self.env)
        self.assertEqual(p.returncode, 5, p.stderr)

    def test_usage_errors(self):
        for args in (["--count", "0"], ["--count", "1", "--task", "x.json"], ["--wait", "-1"],
                     ["--max-util", "101"], ["--bogus"], ["--interval", "0"]):
            p = run(["run"] + self.common + args + ["--", "true"], env=self.env)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
        p = run(["run"] + self.common, env=self.env)
        self.assertEqual(p.returncode, 2)
        # A provider that does not exist is the user's mistake, as in every other command.
        p = run(["run", "--provider", "bogus", "--", "true"], env=self.env)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn('--provider "bogus" is not one of nvml', p.stderr)
        p = run(["run"] + self.common + ["--task", os.path.join(self.tmp, "missing.json"), "--", "true"],
                env=self.env)
        self.assertEqual(p.returncode, 2)

    def test_lease_and_container_option_errors_name_the_command_and_the_option(self):
        # run and bench share these rows and their setters: each says which command and option.
        cases = [
            (["--count", "0"], '--count expects a whole number from 1 to 64, got "0"'),
            (["--max-util", "101"], '--max-util expects a utilization in % from 0 to 100, got "101"'),
            (["--min-free-mb", "-1"], '--min-free-mb expects a number from 0 to 1000000000, got "-1"'),
            (["--wait", "x"], "--wait expects a duration from 0s to 604800s (such as 90, 0.5, "
                              '500ms, 15m, 1h30m), got "x"'),
            (["--check-interval", "0"], "--check-interval expects a duration from 0.05s to 3600s "
                                        '(such as 90, 0.5, 500ms, 15m, 1h30m), got "0"'),
            (["--container-port", "0"], '--container-port expects a whole number from 1 to 65535, '
                                        'got "0"'),
            (["--volume", "x"], "--volume expects HOST:CONTAINER[:OPTIONS] with an absolute "
                                'CONTAINER path, got "x"'),
        ]
        for cmd in ("run", "bench"):
            for args, said in cases:
                p = run([cmd] + args + ["--", "true"], env=self.env)
                self.assertEqual(p.returncode, 2, (cmd, args, p.stderr))
                self.assertEqual(p.stderr, "gpumon %s: %s\n" % (cmd, said), (cmd, args))
        p = run(["run", "-c", "0", "--", "true"], env=self.env)
        self.assertEqual(p.stderr, 'gpumon run: --count expects a whole number from 1 to 64, got "0"\n')
        p = run(["bench", "--url", "http://127.0.0.1:1", "--wait", "10"], env=self.env)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("lease options are for --image", p.stderr)

    def test_command_not_found(self):
        p = run(["run"] + self.common + ["--wait", "0", "--", "/nonexistent/cmd"], env=self.env)
        self.assertEqual(p.returncode, 127, p.stderr)


if __name__ == "__main__":
    unittest.main()
