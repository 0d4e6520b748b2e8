"""`gpumon select/wait/run --mig` against the fake NVML: MIG devices as the units handed out (by
their MIG-... UUIDs), leases keyed by those UUIDs, and a lease on a GPU and one on a MIG device of
it excluding each other."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from gmtest import FAKE_NVML, GPUMON, env, run, scenario_file

# h100-mig.json: GPU 0 in MIG mode, processes in its 3g.40gb (GI 2) and first 1g.10gb (GI 7);
# its second 1g.10gb (GI 8) is free. GPU 1 is not in MIG mode (91% busy).
FREE_MIG = "MIG-a1b2c3d4-e5f6-5a7b-8c9d-0e1f2a3b4c5d"
MIG_A = "MIG-00000000-0000-5000-8000-00000000000a"
MIG_B = "MIG-00000000-0000-5000-8000-00000000000b"


def mig_gpu(util=0):
    """One H100 in MIG mode with two free 1g.10gb devices, reporting utilization (so the GPU
    could be handed out whole)."""
    dev = lambda uuid, gi: {"uuid": uuid, "profile": "1g.10gb", "gpu_instance_id": gi,
                            "compute_instance_id": 0, "mem_total": 10468982784,
                            "mem_used": 14680064, "mem_free": 10454302720}
    return {"driver_version": "570.124.06", "gpus": [{
        "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-00000000-0000-4000-8000-000000000001",
        "pci_bus_id": "00000000:1B:00.0", "util_gpu": util, "util_mem": 0,
        "mem_total": 85520809984, "mem_used": 29360128, "mem_free": 85491449856,
        "mig_mode": 1, "mig_mode_pending": 1,
        "mig_devices": [dev(MIG_A, 7), dev(MIG_B, 8)]}]}


class MigBase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gm-mig-test-")
        self.lease_dir = os.path.join(self.tmp, "leases")
        self.scenario = "h100-mig.json"

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def env(self):
        e = env(nvml=FAKE_NVML, scenario=self.scenario,
                extra={"GPU_MONITOR_LEASE_DIR": self.lease_dir})
        e.pop("CUDA_VISIBLE_DEVICES", None)
        e.pop("XDG_RUNTIME_DIR", None)
        return e

    def gpumon(self, *args, timeout=30):
        return run(list(args), env=self.env(), timeout=timeout)

    def start_run(self, args, gate):
        """A `gpumon run` whose command prints CUDA_VISIBLE_DEVICES and holds its lease until
        the gate file exists."""
        script = 'echo "CVD=$CUDA_VISIBLE_DEVICES"; while [ ! -e %s ]; do sleep 0.02; done' % gate
        cmd = [GPUMON, "run", "--no-db", "-q", "--check-interval", "0.1", "--interval", "0.1"]
        return subprocess.Popen(cmd + list(args) + ["--", "sh", "-c", script], env=self.env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def finish(self, proc, gate):
        open(gate, "w").close()
        out, err = proc.communicate(timeout=20)
        self.assertEqual(proc.returncode, 0, err)


class SelectMig(MigBase):
    def test_env_names_the_free_mig_device(self):
        p = self.gpumon("select", "--mig", "--format", "env")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "CUDA_VISIBLE_DEVICES=%s\n" % FREE_MIG)
        p = self.gpumon("select", "--mig")
        self.assertEqual(p.stdout, FREE_MIG + "\n")

    def test_why_not_names_device_and_gpu(self):
        p = self.gpumon("select", "--mig", "-n", "2", "-v")
        self.assertEqual(p.returncode, 4, p.stderr)
        self.assertIn("not enough MIG devices", p.stderr)
        self.assertIn("MIG device 1g.10gb GI 7 on GPU 0", p.stderr)
        self.assertIn("process 5002 runs in it", p.stderr)
        self.assertIn("MIG device 3g.40gb GI 2 on GPU 0", p.stderr)
        self.assertIn("process 5001 runs in it", p.stderr)

    def test_json(self):
        p = self.gpumon("select", "--mig", "--format", "json")
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertTrue(doc["mig"])
        self.assertEqual(doc["uuids"], [FREE_MIG])
        self.assertEqual(doc["selection"], FREE_MIG)
        self.assertEqual(doc["visible_devices"], {"CUDA_VISIBLE_DEVICES": FREE_MIG})
        chosen = [g for g in doc["gpus"] if g["status"] == "selected"]
        self.assertEqual(len(chosen), 1)
        self.assertEqual((chosen[0]["gpu_index"], chosen[0]["gpu_instance_id"],
                          chosen[0]["profile"]), (0, 8, "1g.10gb"))
        self.assertEqual(len(doc["gpus"]), 3)  # the MIG devices, not GPU 1

    def test_no_gpu_in_mig_mode(self):
        self.scenario = "two_gpus.json"
        for cmd in (["select"], ["wait", "--timeout", "0"]):
            p = self.gpumon(*cmd, "--mig")
            self.assertEqual(p.returncode, 3, p.stderr)
            self.assertIn("no GPU is in MIG mode", p.stderr)
        p = self.gpumon("run", "--mig", "--no-db", "--wait", "0", "--", "true")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("no GPU is in MIG mode", p.stderr)

    def test_help_mentions_mig(self):
        for cmd in ("select", "wait", "run"):
            p = self.gpumon(cmd, "--help")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("--mig", p.stdout)
            self.assertTrue(all(len(l) <= 80 for l in p.stdout.splitlines()), p.stdout)


class RunMig(MigBase):
    def test_two_runs_never_share_a_mig_device(self):
        self.scenario = scenario_file(mig_gpu())
        self.addCleanup(os.unlink, self.scenario)
        gate = os.path.join(self.tmp, "go")
        a = self.start_run(["--mig", "-n", "1", "--wait", "10"], gate)
        b = self.start_run(["--mig", "-n", "1", "--wait", "10"], gate)
        try:
            seen = {a.stdout.readline().strip(), b.stdout.readline().strip()}
            self.assertEqual(seen, {"CVD=" + MIG_A, "CVD=" + MIG_B})
            # Both taken: a third waits in vain, naming the leases.
            p = self.gpumon("run", "--mig", "--no-db", "--wait", "0", "--", "true")
            self.assertEqual(p.returncode, 5, p.stderr)
            self.assertIn("leased by pid", p.stderr)
            # The lock files are the MIG devices' UUIDs.
            self.assertTrue(os.path.exists(os.path.join(self.lease_dir, MIG_A)))
        finally:
            self.finish(a, gate)
            self.finish(b, gate)

    def test_mig_lease_and_gpu_lease_exclude_each_other(self):
        self.scenario = scenario_file(mig_gpu())
        self.addCleanup(os.unlink, self.scenario)
        gate = os.path.join(self.tmp, "go")
        a = self.start_run(["--mig", "-n", "1", "--wait", "10"], gate)
        try:
            self.assertEqual(a.stdout.readline().strip(), "CVD=" + MIG_A)
            # The GPU is not handed out whole while one of its MIG devices is leased.
            p = self.gpumon("select", "--format", "json")
            self.assertEqual(p.returncode, 4, p.stderr)
            gpu = json.loads(p.stdout)["gpus"][0]
            self.assertEqual(gpu["status"], "leased")
            self.assertIn("a MIG device of it is leased by pid %d" % a.pid, gpu["reason"])
            p = self.gpumon("run", "--no-db", "--wait", "0", "--", "true")
            self.assertEqual(p.returncode, 5, p.stderr)
        finally:
            self.finish(a, gate)
        gate2 = os.path.join(self.tmp, "go2")
        whole = self.start_run(["-n", "1", "--wait", "10"], gate2)
        try:
            self.assertEqual(whole.stdout.readline().strip(), "CVD=0")
            # Its MIG devices are taken with it.
            p = self.gpumon("run", "--mig", "--no-db", "--wait", "0", "--", "true")
            self.assertEqual(p.returncode, 5, p.stderr)
            self.assertIn("its GPU is leased whole", p.stderr)
        finally:
            self.finish(whole, gate2)


class WaitMig(MigBase):
    def test_wait_until_a_mig_device_is_released(self):
        self.scenario = scenario_file(mig_gpu())
        self.addCleanup(os.unlink, self.scenario)
        gate = os.path.join(self.tmp, "go")
        a = self.start_run(["--mig", "-n", "2", "--wait", "10"], gate)
        try:
            self.assertEqual(a.stdout.readline().strip(), "CVD=%s,%s" % (MIG_A, MIG_B))
            w = subprocess.Popen([GPUMON, "wait", "--mig", "--timeout", "20", "--interval", "0.1",
                                  "--format", "env"], env=self.env(), stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            # Its first check finds both leased and says so; only then is the lease released.
            first = w.stderr.readline()
            self.assertIn("0 of 1 MIG device free", first)
            self.assertIn("leased by pid %d" % a.pid, first)
            self.assertIsNone(w.poll(), "wait ended while every MIG device was leased")
        finally:
            self.finish(a, gate)
        out, err = w.communicate(timeout=20)
        self.assertEqual(w.returncode, 0, err)
        self.assertIn(out, ("CUDA_VISIBLE_DEVICES=%s\n" % MIG_A, "CUDA_VISIBLE_DEVICES=%s\n" % MIG_B))

    def test_wait_times_out_saying_what_is_busy(self):
        p = self.gpumon("wait", "--mig", "-n", "2", "--timeout", "0.3", "--interval", "0.1")
        self.assertEqual(p.returncode, 5, p.stderr)
        self.assertIn("1 of 2 MIG devices free", p.stderr)
        self.assertIn("process 5002 runs in it", p.stderr)


if __name__ == "__main__":
    unittest.main()
