"""`gpumon select`, `gpumon wait` and `gpumon estimate` run for real against the fake NVML, with
leases taken by another process through the lock-file protocol."""
import fcntl
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from gmtest import FAKE_NVML, FIXTURES, GPUMON, env, run

SELECT_FX = os.path.join(FIXTURES, "select")
TASKS = os.path.join(FIXTURES, "tasks")
UUID = "GPU-5e1ec700-0000-4000-8000-00000000000%d"


class Base(unittest.TestCase):
    def setUp(self):
        self.lease_dir = tempfile.mkdtemp(prefix="gm-select-test-")

    def tearDown(self):
        shutil.rmtree(self.lease_dir, ignore_errors=True)

    def env(self, scenario="four_gpus.json", cuda=None, lease_dir=True):
        extra = {"GPU_MONITOR_LEASE_DIR": self.lease_dir} if lease_dir else {}
        e = env(nvml=FAKE_NVML, scenario=os.path.join(SELECT_FX, scenario), extra=extra)
        e.pop("CUDA_VISIBLE_DEVICES", None)
        e.pop("XDG_RUNTIME_DIR", None)
        if cuda is not None:
            e["CUDA_VISIBLE_DEVICES"] = cuda
        return e

    def gpumon(self, *args, scenario="four_gpus.json", cuda=None, timeout=30):
        return run(list(args), env=self.env(scenario, cuda), timeout=timeout)

    def select_json(self, *args, rc=0, **kw):
        p = self.gpumon("select", "--format", "json", *args, **kw)
        self.assertEqual(p.returncode, rc, p.stderr)
        return json.loads(p.stdout)


class Select(Base):
    def test_best_two_ties_to_lower_index(self):
        # Scores: GPU0 0.75, GPU1 0.55, GPU2 0.64, GPU3 0.75 (tied with GPU0).
        p = self.gpumon("select", "--count", "2")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "0,3\n")
        self.assertEqual(self.gpumon("select", "-n", "3").stdout, "0,2,3\n")
        self.assertEqual(self.gpumon("select").stdout, "0\n")  # one by default

    def test_json_details(self):
        doc = self.select_json("--count", "2")
        self.assertTrue(doc["satisfied"])
        self.assertEqual(doc["indices"], [0, 3])
        self.assertEqual(doc["uuids"], [UUID % 0, UUID % 3])
        self.assertEqual(doc["selection"], "0,3")
        self.assertIsNone(doc["reason"])
        self.assertEqual(doc["provider"], "nvml")
        self.assertIsNone(doc["cuda_visible_devices"])
        self.assertEqual([g["index"] for g in doc["gpus"]], [0, 3, 2, 1])
        scores = {g["index"]: g["availability_score"] for g in doc["gpus"]}
        self.assertEqual(scores, {0: 0.75, 1: 0.55, 2: 0.64, 3: 0.75})
        g0 = doc["gpus"][0]
        self.assertEqual(g0["status"], "selected")
        self.assertEqual(g0["memory_free_mib"], 61440)
        self.assertEqual(g0["memory_total_mib"], 81920)
        self.assertEqual(g0["utilization_percent"], 25)
        self.assertEqual(g0["name"], "NVIDIA H100 80GB HBM3")
        self.assertEqual(doc["gpus"][2]["status"], "available")

    def test_uuid_format(self):
        p = self.gpumon("select", "-n", "2", "--format", "uuid")
        self.assertEqual(p.stdout, "%s,%s\n" % (UUID % 0, UUID % 3))

    def test_thresholds(self):
        # 30720 MiB free is exactly GPU 3's: inclusive.
        self.assertEqual(self.gpumon("select", "-n", "3", "--min-free-mb", "30720").stdout, "0,2,3\n")
        self.assertEqual(self.gpumon("select", "-n", "3", "--max-util", "25").stdout, "0,1,3\n")
        doc = self.select_json("-n", "1", "-m", "30721", "-u", "50")
        self.assertEqual(doc["indices"], [0])
        status = {g["index"]: (g["status"], g["reason"]) for g in doc["gpus"]}
        self.assertEqual(status[1], ("low_memory", "needs >= 30721 MiB free"))
        self.assertEqual(status[2], ("busy", "needs <= 50% util"))
        self.assertEqual(status[3], ("low_memory", "needs >= 30721 MiB free"))

    def test_not_enough_exit_4(self):
        p = self.gpumon("select", "-n", "4", "--min-free-mb", "30720")
        self.assertEqual(p.returncode, 4)
        self.assertEqual(p.stdout, "")
        self.assertEqual(
            p.stderr,
            "gpumon select: not enough GPUs: need 4 GPUs with >= 30720 MiB free; 3 qualify "
            "(GPU 0, GPU 3, GPU 2); best of the rest: GPU 1 (20480 MiB free, 0% util): needs "
            ">= 30720 MiB free\n")
        doc = self.select_json("-n", "5", rc=4)
        self.assertFalse(doc["satisfied"])
        self.assertEqual(doc["indices"], [])
        self.assertIn("need 5 GPUs; 4 qualify", doc["reason"])

    def test_absent_and_lost_are_excluded(self):
        doc = self.select_json("-n", "1", scenario="absent.json")
        self.assertEqual(doc["indices"], [0])
        by = {g["index"]: g for g in doc["gpus"]}
        self.assertEqual(by[1]["status"], "unscorable")
        self.assertEqual(by[1]["reason"], "utilization not reported")
        self.assertIsNone(by[1]["utilization_percent"])
        self.assertIsNone(by[1]["availability_score"])
        self.assertEqual(by[2]["reason"], "memory not reported")
        self.assertIsNone(by[2]["memory_free_mib"])
        self.assertEqual(by[3]["status"], "lost")
        p = self.gpumon("select", "-n", "2", "-v", scenario="absent.json")
        self.assertEqual(p.returncode, 4)
        self.assertIn("3    N/A           N/A        N/A   N/A  lost: fell off the bus", p.stderr)
        self.assertIn("GPU 1 (81920 MiB free): utilization not reported; GPU 2 (0% util): "
                      "memory not reported; GPU 3: fell off the bus", p.stderr)

    def test_id_filter(self):
        self.assertEqual(self.gpumon("select", "-i", "1,2").stdout, "2\n")
        self.assertEqual(self.gpumon("select", "-i", UUID % 1).stdout, "1\n")
        self.assertEqual(self.gpumon("select", "-i", "13:00.0").stdout, "3\n")  # bus id
        doc = self.select_json("-i", "1,2", "-n", "2")
        self.assertEqual({g["index"]: g["status"] for g in doc["gpus"]},
                         {0: "not_requested", 1: "selected", 2: "selected", 3: "not_requested"})
        p = self.gpumon("select", "-i", "9")
        self.assertEqual(p.returncode, 2)
        self.assertIn('no GPU matches "9"', p.stderr)

    def test_cuda_visible_devices(self):
        self.assertEqual(self.gpumon("select", cuda="1,2").stdout, "2\n")
        self.assertEqual(self.gpumon("select", cuda=UUID % 1).stdout, "1\n")
        self.assertEqual(self.gpumon("select", "--all-devices", cuda="1,2").stdout, "0\n")
        doc = self.select_json(cuda="1,2")
        self.assertEqual(doc["cuda_visible_devices"], "1,2")
        self.assertEqual(doc["gpus"][-1]["status"], "hidden")
        p = self.gpumon("select", cuda="")
        self.assertEqual(p.returncode, 4)
        self.assertIn("none qualifies; 4 GPUs not considered", p.stderr)

    def test_usage_errors(self):
        for args in (["--count", "0"], ["--count", "65"], ["--max-util", "101"],
                     ["--min-free-mb", "-5"], ["--format", "xml"], ["--timeout", "3"],
                     ["--interval", "1"], ["extra"], ["--bogus"]):
            p = self.gpumon("select", *args)
            self.assertEqual(p.returncode, 2, args)
            self.assertTrue(p.stderr.startswith("gpumon select: "), p.stderr)

    def test_no_gpu_exit_3(self):
        e = env(extra={"GPU_MONITOR_LEASE_DIR": self.lease_dir})
        p = run(["select"], env=e)
        self.assertEqual(p.returncode, 3)
        self.assertIn("no GPU found", p.stderr)

    def test_help(self):
        p = self.gpumon("select", "--help")
        self.assertEqual(p.returncode, 0)
        self.assertIn("CUDA_VISIBLE_DEVICES", p.stdout)


class Leases(Base):
    """Another process holds GPU 0 through the lease protocol: flock(LOCK_EX) on
    <lease dir>/<uuid> with its pid as the content."""

    def hold(self, index, pid_text=None):
        f = open(os.path.join(self.lease_dir, UUID % index), "a+")
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        f.truncate(0)
        f.write(pid_text if pid_text is not None else "%d\n" % os.getpid())
        f.flush()
        self.addCleanup(f.close)
        return f

    def test_leased_gpu_is_skipped_and_shown(self):
        self.hold(0)
        self.assertEqual(self.gpumon("select", "-n", "2").stdout, "2,3\n")
        doc = self.select_json()
        g0 = [g for g in doc["gpus"] if g["index"] == 0][0]
        self.assertEqual(g0["status"], "leased")
        self.assertEqual(g0["leased_by_pid"], os.getpid())
        self.assertEqual(g0["reason"], "leased by pid %d" % os.getpid())
        # --ignore-leases: chosen again, still marked.
        doc = self.select_json("--ignore-leases")
        self.assertEqual(doc["indices"], [0])
        self.assertTrue(doc["gpus"][0]["leased"])
        self.assertEqual(doc["gpus"][0]["status"], "selected")

    def test_released_lease_is_free_again(self):
        f = self.hold(0, pid_text="")
        doc = self.select_json()
        g0 = [g for g in doc["gpus"] if g["index"] == 0][0]
        self.assertEqual(g0["reason"], "leased by another gpumon process")
        self.assertIsNone(g0["leased_by_pid"])
        fcntl.flock(f, fcntl.LOCK_UN)
        self.assertEqual(self.gpumon("select").stdout, "0\n")

    def test_lease_dir_option(self):
        other = tempfile.mkdtemp(prefix="gm-select-test-other-")
        self.addCleanup(shutil.rmtree, other, True)
        self.hold(0)  # in the environment's directory, which --lease-dir replaces
        p = self.gpumon("select", "--lease-dir", other)
        self.assertEqual(p.stdout, "0\n")

    def test_default_dir_under_xdg_runtime_dir(self):
        xdg = tempfile.mkdtemp(prefix="gm-select-xdg-")
        self.addCleanup(shutil.rmtree, xdg, True)
        os.makedirs(os.path.join(xdg, "gpumon", "leases"))
        f = open(os.path.join(xdg, "gpumon", "leases", UUID % 0), "w")
        self.addCleanup(f.close)
        fcntl.flock(f, fcntl.LOCK_EX)
        e = self.env(lease_dir=False)
        e["XDG_RUNTIME_DIR"] = xdg
        self.assertEqual(run(["select"], env=e).stdout, "3\n")


class Wait(Base):
    def test_timeout_exit_5_with_what_was_missing(self):
        start = time.monotonic()
        p = self.gpumon("wait", "-n", "2", "--min-free-mb", "70000", "--max-util", "10",
                        "--timeout", "0.5", "--interval", "0.1", "-q", timeout=20)
        elapsed = time.monotonic() - start
        self.assertEqual(p.returncode, 5, p.stderr)
        self.assertGreaterEqual(elapsed, 0.5)
        self.assertEqual(p.stdout, "")
        self.assertEqual(
            p.stderr,
            "gpumon wait: timed out after 0.5s: need 2 GPUs with >= 70000 MiB free and <= 10% "
            "util; none qualifies; best of the rest: GPU 0 (61440 MiB free, 25% util): needs >= "
            "70000 MiB free and <= 10% util; GPU 3 (30720 MiB free, 25% util): needs >= 70000 "
            "MiB free and <= 10% util; GPU 2 (81920 MiB free, 90% util): needs <= 10% util; "
            "GPU 1 (20480 MiB free, 0% util): needs >= 70000 MiB free\n")

    def test_more_gpus_than_could_ever_qualify_fail_at_once(self):
        p = self.gpumon("wait", "-n", "5", "--timeout", "600")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(p.stderr, "gpumon wait: 5 GPUs asked for, but there are only 4 here; "
                                   "waiting cannot change that\n")
        p = self.gpumon("wait", "-n", "3", "-i", "0,1", "--timeout", "600")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("3 GPUs asked for, but only 2 of the 4 here may be chosen", p.stderr)

    def test_progress_at_each_check(self):
        # Not met: a line per check on stderr, with the time waited and what each GPU lacks;
        # stdout stays empty for the caller's $(...). -q silences them, the verdict stays.
        p = self.gpumon("wait", "-n", "2", "--min-free-mb", "70000", "--max-util", "10",
                        "--timeout", "0.5", "--interval", "0.2", timeout=20)
        self.assertEqual(p.returncode, 5, p.stderr)
        self.assertEqual(p.stdout, "")
        lines = p.stderr.splitlines()
        progress = [l for l in lines if l.startswith("gpumon wait: waiting ")]
        self.assertGreaterEqual(len(progress), 3, p.stderr)  # at 0, 0.2, 0.4 and 0.5 s
        self.assertRegex(progress[0], r"^gpumon wait: waiting 0\.\d s of 0\.5 s: 0 of 2 GPUs free \(")
        self.assertIn("GPU 0: 61440 MiB free < 70000 MiB, 25% util > 10%; "
                      "GPU 1: 20480 MiB free < 70000 MiB; GPU 2: 90% util > 10%; "
                      "GPU 3: 30720 MiB free < 70000 MiB, 25% util > 10%)", progress[0])
        waited = [float(l.split()[3]) for l in progress]
        self.assertEqual(waited, sorted(waited))
        self.assertTrue(lines[-1].startswith("gpumon wait: timed out after 0.5s"), p.stderr)

        q = self.gpumon("wait", "-n", "2", "-m", "70000", "--timeout", "0.3", "--interval",
                        "0.1", "--quiet", timeout=20)
        self.assertEqual(q.returncode, 5)
        self.assertNotIn("waiting", q.stderr)
        self.assertIn("timed out", q.stderr)
        # select never waits: --quiet is wait's.
        self.assertEqual(self.gpumon("select", "--quiet").returncode, 2)

    def test_timeout_json_has_last_check(self):
        p = self.gpumon("wait", "-n", "4", "-m", "30000", "--timeout", "0", "--format", "json")
        self.assertEqual(p.returncode, 5)
        doc = json.loads(p.stdout)
        self.assertFalse(doc["satisfied"])
        self.assertEqual(doc["eligible"], 3)

    def test_gpu_becomes_free(self):
        # GPU 0 reads full and busy three times (the first read resolves -i), then frees up.
        p = self.gpumon("wait", "-m", "10000", "-u", "50", "--timeout", "20", "--interval", "0.05",
                        "-v", scenario="becomes_free.json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "0\n")
        self.assertIn("gpumon wait: check 1: need 1 GPU with >= 10000 MiB free and <= 50% util; "
                      "none qualifies", p.stderr)
        self.assertIn("gpumon wait: check 2: need", p.stderr)
        self.assertIn("gpumon wait: check 3: selected GPU 0 (score 0.905)", p.stderr)
        self.assertNotIn("check 4", p.stderr)

    def test_satisfied_at_once(self):
        p = self.gpumon("wait", "-n", "2", "--interval", "30")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "0,3\n")

    def test_waits_for_a_lease_to_end(self):
        f = open(os.path.join(self.lease_dir, UUID % 0), "w")
        fcntl.flock(f, fcntl.LOCK_EX)
        proc = subprocess.Popen([GPUMON, "wait", "-i", "0", "--timeout", "20", "--interval",
                                 "0.05", "-v"], env=self.env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            line = proc.stderr.readline()
            self.assertIn("check 1:", line)
            self.assertIn("GPU 0 (61440 MiB free, 25% util): leased by another gpumon process", line)
            f.close()  # the holder ends: the lock goes with it
            out, err = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.assertEqual(proc.returncode, 0, err)
        self.assertEqual(out, "0\n")

    def test_sigint_exits_130(self):
        proc = subprocess.Popen([GPUMON, "wait", "-n", "4", "-m", "70000", "--timeout", "600",
                                 "--interval", "30", "-v"], env=self.env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            self.assertIn("check 1:", proc.stderr.readline())  # now sleeping 30 s
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.assertEqual(proc.returncode, 130)
        self.assertEqual(out, "")
        self.assertIn("gpumon wait: interrupted", err)

    def test_usage_errors(self):
        for args in (["--interval", "0"], ["--interval", "abc"], ["--timeout", "-1"],
                     ["--count", "x"], ["-t"]):
            p = self.gpumon("wait", *args)
            self.assertEqual(p.returncode, 2, args)
            self.assertTrue(p.stderr.startswith("gpumon wait: "), p.stderr)
        p = self.gpumon("wait", "--help")
        self.assertEqual(p.returncode, 0)
        self.assertIn("--interval", p.stdout)


class Estimate(unittest.TestCase):
    def estimate(self, *args):
        return run(["estimate"] + list(args), env=env())

    def test_seed_example(self):
        p = self.estimate("--task", os.path.join(TASKS, "seed_example.json"),
                          "--method", "size-classes")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout,
                         "GPUs needed:     4  (tp 4 x pp 1 x max(dp 1, cp 1, dcp 1))\n"
                         "Memory per GPU:  20000 MiB  (llama-3-70b: 65B+ model)\n"
                         "Wait for them:   gpumon wait --count 4 --min-free-mb 20000\n")

    def test_model_method(self):
        # llama-3-70b (built in: 80 layers, 70.55e9 parameters) at tp 4 in fp16.
        p = self.estimate("--task", os.path.join(TASKS, "seed_example.json"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("Memory per GPU:  36011 MiB  (llama-3-70b: 70.6B parameters from its "
                      "published shape, fp16)\n", p.stdout)
        self.assertIn("  weights:       33643 MiB  70.6B parameters x 2 bytes / (tp 4 x pp 1)\n",
                      p.stdout)
        self.assertIn("  KV cache:        320 MiB  4096 tokens x batch 1 x 81920 bytes", p.stdout)
        self.assertIn("Wait for them:   gpumon wait --count 4 --min-free-mb 36011\n", p.stdout)
        doc = json.loads(self.estimate("--task", os.path.join(TASKS, "seed_example.json"),
                                       "--format", "json", "--dtype", "fp8", "--context", "8192",
                                       "--batch", "2", "--overhead-mib", "1000").stdout)
        m = doc["memory"]
        self.assertEqual((doc["method"], m["dtype"], m["kv_dtype"], m["context"], m["batch"]),
                         ("model", "fp8", "fp16", 8192, 2))
        self.assertAlmostEqual(m["weights_mib"], m["params"] / 4 / 2**20)
        self.assertAlmostEqual(m["params"], 70553706496)
        self.assertEqual(m["overhead_mib"], 1000)
        self.assertEqual(doc["memory_per_gpu_mib"],
                         int(-(-(m["weights_mib"] + m["kv_cache_mib"] + 1000) // 1)))
        # A model directory: its config.json.
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump({"hidden_size": 4096, "intermediate_size": 14336,
                           "num_attention_heads": 32, "num_hidden_layers": 32,
                           "num_key_value_heads": 8, "vocab_size": 128256,
                           "torch_dtype": "bfloat16"}, f)
            doc = json.loads(self.estimate("--task", d, "--format", "json").stdout)
            self.assertEqual(doc["memory"]["params"], 8030261248)
            self.assertEqual(doc["memory"]["config"], os.path.join(d, "config.json"))
        for bad in (["--method", "guess"], ["--dtype", "fp7"], ["--context", "0"]):
            p = self.estimate("--task", os.path.join(TASKS, "seed_example.json"), *bad)
            self.assertEqual(p.returncode, 2, bad)
            self.assertIn(bad[0], p.stderr)

    def test_json(self):
        p = self.estimate("--task", os.path.join(TASKS, "aliases.json"), "--format", "json",
                          "--method", "seed")  # the method's former name still works
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["method"], "size-classes")
        self.assertEqual(doc["gpus"], 12)  # 2 x 2 x max(1, 2, 3)
        self.assertEqual(doc["memory_per_gpu_mib"], 12000)
        self.assertEqual(doc["model"], "meta-llama/Llama-2-13b-chat-hf")
        self.assertEqual(doc["parallel"]["tp"], {"size": 2, "parameter": "tensor-parallel-size"})
        self.assertEqual(doc["parallel"]["pp"], {"size": 2, "parameter": "pp_size"})
        self.assertEqual(doc["parallel"]["cp"], {"size": 2, "parameter": "context_parallel_size"})
        self.assertEqual(doc["parallel"]["dcp"], {"size": 3, "parameter": "dcp"})

    def test_agreeing_aliases_and_no_parameters(self):
        doc = json.loads(self.estimate(os.path.join(TASKS, "same_alias_twice.json"),
                                       "--format", "json").stdout)
        self.assertEqual(doc["gpus"], 4)
        # Mixtral 8x7B is built in: 46.7B (the experts share attention), not 8 x 7.
        self.assertAlmostEqual(doc["model_params_b"], 46.7, delta=0.05)
        p = self.estimate("--task", os.path.join(TASKS, "no_parameters.json"))
        self.assertIn("GPUs needed:     1 ", p.stdout)
        self.assertIn("8000 MiB  (/models/phi-2: base (model size unknown))", p.stdout)

    def test_stdin(self):
        p = run(["estimate", "--task", "-", "--format", "json"], env=env(),
                input='{"parameters": {"tp": 8}, "model": "llama-3-70b"}')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)["gpus"], 8)

    def test_malformed_configs_exit_2(self):
        cases = {
            "not_json.json": "not valid JSON: line 3, column",
            "conflicting_aliases.json": "parameters.tensor_parallel_size [4] and "
                                        "parameters.tp-size [1, 2] both set tensor parallelism",
            "zero_size.json": "parameters.pp-size[1] must be a positive integer, got 0",
            "fractional_size.json": "parameters.dp must be a whole number, got 1.5",
            "string_size.json": "parameters.tp-size must be a positive integer or a list of them, "
                                "got a string",
            "missing.json": "No such file or directory",
        }
        for name, msg in cases.items():
            path = os.path.join(TASKS, name)
            p = self.estimate("--task", path)
            self.assertEqual(p.returncode, 2, name)
            self.assertEqual(p.stdout, "")
            self.assertTrue(p.stderr.startswith("gpumon estimate: "), p.stderr)
            self.assertIn(path, p.stderr)
            self.assertIn(msg, p.stderr)

    def test_usage(self):
        self.assertEqual(self.estimate().returncode, 2)
        self.assertEqual(self.estimate("--task", "a", "b").returncode, 2)
        self.assertEqual(self.estimate("--format", "xml", "--task", "a").returncode, 2)
        p = self.estimate("--help")
        self.assertEqual(p.returncode, 0)
        self.assertIn("tensor_parallel_size", p.stdout)
        # The formula is stated.
        self.assertIn("P x dtype bytes / (tp x pp)", p.stdout)
        self.assertIn("ceil(kv_heads/tp)", p.stdout)


if __name__ == "__main__":
    unittest.main()
