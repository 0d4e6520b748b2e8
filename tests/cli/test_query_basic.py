"""`gpumon` top level and `gpumon query` with simulated GPUs: help, exit codes, output forms."""
import json
import signal
import subprocess
import time
import unittest

from gmtest import GPUMON, env, run


class TopLevel(unittest.TestCase):
    def test_version(self):
        p = run(["--version"])
        self.assertEqual(p.returncode, 0)
        self.assertRegex(p.stdout, r"^gpumon \d+\.\d+\.\d+\n$")

    def test_help_lists_commands(self):
        p = run(["--help"])
        self.assertEqual(p.returncode, 0)
        for cmd in ("query", "serve"):
            self.assertIn(cmd, p.stdout)

    def test_no_args_is_usage_error(self):
        p = run([])
        self.assertEqual(p.returncode, 2)
        self.assertIn("usage:", p.stderr)

    def test_unknown_command(self):
        p = run(["frobnicate"])
        self.assertEqual(p.returncode, 2)
        self.assertIn('unknown command "frobnicate"', p.stderr)

    def test_query_help(self):
        p = run(["query", "--help"])
        self.assertEqual(p.returncode, 0)
        for flag in ("--id", "--loop", "--format", "--query-gpu", "--provider", "--simulate"):
            self.assertIn(flag, p.stdout)
        self.assertEqual(run(["help", "query"]).stdout, p.stdout)


class QuerySim(unittest.TestCase):
    def test_json_full_model(self):
        p = run(["query", "--simulate", "3", "--format", "json"], env=env())
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["provider"], "sim")
        self.assertEqual(doc["gpu_count"], 3)
        self.assertEqual([g["index"] for g in doc["gpus"]], [0, 1, 2])
        g = doc["gpus"][0]
        for key in ("name", "uuid", "pci_bus_id", "utilization", "memory", "temperature_c", "power",
                    "energy_j", "clocks", "fan_percent", "pcie", "pstate", "throttle_reasons",
                    "persistence_mode", "processes"):
            self.assertIn(key, g)
        self.assertIn("simulated", g["name"])
        # Data-centre models have no fan: absent is null, never 0.
        self.assertIsNone(g["fan_percent"])
        self.assertLessEqual(g["memory"]["used_mib"], g["memory"]["total_mib"])
        self.assertEqual(g["memory"]["total_bytes"], round(g["memory"]["total_mib"] * 1048576))
        self.assertIsNotNone(doc["system"])
        self.assertGreater(doc["system"]["memory"]["total_bytes"], 0)

    def test_same_seed_same_readings(self):
        a = json.loads(run(["query", "--simulate", "2", "--seed", "7", "--format", "json"], env=env()).stdout)
        b = json.loads(run(["query", "--simulate", "2", "--seed", "7", "--format", "json"], env=env()).stdout)
        for ga, gb in zip(a["gpus"], b["gpus"]):
            self.assertEqual(ga["utilization"], gb["utilization"])
            self.assertEqual(ga["memory"]["used_mib"], gb["memory"]["used_mib"])

    def test_runs_read_differently_without_seed(self):
        # Simulated GPUs move between two one-shot readings, as real ones do; the GPUs themselves
        # (models, UUIDs) stay. Eight GPUs: all four readings of all eight the same by chance
        # is out of reach.
        def read():
            p = run(["query", "--simulate", "8", "--format", "json"], env=env())
            self.assertEqual(p.returncode, 0, p.stderr)
            gpus = json.loads(p.stdout)["gpus"]
            return ([(g["name"], g["uuid"]) for g in gpus],
                    [(g["utilization"]["gpu"], g["memory"]["used_mib"], g["temperature_c"],
                      g["power"]["draw_w"]) for g in gpus])
        (ids_a, a), (ids_b, b) = read(), read()
        self.assertEqual(ids_a, ids_b)
        self.assertNotEqual(a, b)
        smi = ["smi", "--simulate", "8", "--query-gpu=uuid,utilization.gpu,memory.used,temperature.gpu,power.draw",
               "--format=csv,noheader"]
        x, y = run(smi, env=env()), run(smi, env=env())
        self.assertEqual(x.returncode, 0, x.stderr)
        self.assertNotEqual(x.stdout, y.stdout)
        self.assertEqual([l.split(",")[0] for l in x.stdout.splitlines()],
                         [l.split(",")[0] for l in y.stdout.splitlines()])
        # --seed in smi too: the same readings.
        x, y = run(smi + ["--seed", "3"], env=env()), run(smi + ["--seed", "3"], env=env())
        self.assertEqual(x.stdout, y.stdout)

    def test_id_filter(self):
        doc = json.loads(run(["query", "--simulate", "4", "-i", "1,3", "--format", "json"], env=env()).stdout)
        self.assertEqual([g["index"] for g in doc["gpus"]], [1, 3])

    def test_id_unknown(self):
        p = run(["query", "--simulate", "2", "-i", "5"], env=env())
        self.assertEqual(p.returncode, 2)
        self.assertIn('no GPU matches "5"', p.stderr)

    def test_table(self):
        p = run(["query", "--simulate", "2"], env=env())
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertIn("provider sim", lines[0])
        self.assertTrue(lines[1].startswith("GPU"))
        self.assertTrue(any(l.startswith("0 ") for l in lines))
        self.assertTrue(any(l.startswith("1 ") for l in lines))
        self.assertTrue(lines[-1].startswith("host "))

    def test_loop_json_lines(self):
        proc = subprocess.Popen([GPUMON, "query", "--simulate", "1", "--format", "json", "-l", "0.2"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
        time.sleep(1.1)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
        self.assertEqual(proc.returncode, 0, err)
        docs = [json.loads(l) for l in out.splitlines()]
        self.assertGreaterEqual(len(docs), 3)
        seqs = [d["seq"] for d in docs]
        self.assertEqual(seqs, sorted(seqs))

    def test_bad_flags(self):
        cases = [
            (["query", "--simulate", "0"], "--simulate"),
            (["query", "--simulate", "65"], "--simulate"),
            (["query", "--simulate", "x"], "--simulate"),
            (["query", "--format", "xml"], "--format"),
            (["query", "-l", "0"], "--loop"),
            (["query", "--bogus"], "--bogus"),
            (["query", "--provider", "rocm"], "rocm"),
            (["query", "--simulate", "1", "-i", ""], "GPU list"),
        ]
        for args, needle in cases:
            with self.subTest(args=args):
                p = run(args, env=env())
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(needle, p.stderr)

    def test_csv_without_fields_prints_the_default_set(self):
        # --format csv alone was refused; it now prints a documented field set.
        for args in (["--format=csv"], ["--format", "csv,noheader"]):
            with self.subTest(args=args):
                p = run(["query", "--simulate", "2"] + args, env=env())
                self.assertEqual(p.returncode, 0, p.stderr)
                lines = p.stdout.splitlines()
                if "noheader" in args[-1]:
                    self.assertEqual(len(lines), 2)
                    self.assertTrue(lines[0].startswith("0, "), lines[0])
                else:
                    self.assertEqual(lines[0], "index, name, utilization.gpu [%], memory.used [MiB], "
                                     "memory.total [MiB], temperature.gpu, power.draw [W]")
                    self.assertEqual(len(lines), 3)

    def test_json_flag_and_bare_loop(self):
        # --json is gpustat's spelling of --format json; -l alone loops every 5 s (--loop=N and
        # -lN take a value too).
        p = run(["query", "--simulate", "1", "--json"], env=env())
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)["gpu_count"], 1)
        for flag in ("-l0.05", "--loop=0.05"):
            p = run(["query", "--simulate", "1", flag], env=env())
            self.assertEqual(p.returncode, 2)
            self.assertIn("--loop expects a duration from 0.1s", p.stderr)
        help_text = run(["query", "--help"], env=env()).stdout
        self.assertIn("-l, --loop, --interval[=SECONDS]", help_text)
        self.assertIn("default 5", help_text)

    def test_bad_env_provider(self):
        p = run(["query"], env=env(extra={"GPU_MONITOR_TELEMETRY_PROVIDER": "pynvml"}))
        self.assertEqual(p.returncode, 2)
        self.assertIn("GPU_MONITOR_TELEMETRY_PROVIDER", p.stderr)

    def test_env_provider_sim(self):
        doc = json.loads(run(["query", "--format", "json"], env=env(extra={"GPU_MONITOR_TELEMETRY_PROVIDER": "sim"})).stdout)
        self.assertEqual(doc["provider"], "sim")


class NoGpu(unittest.TestCase):
    def test_no_gpu_exit_3_with_reasons(self):
        p = run(["query"], env=env())
        self.assertEqual(p.returncode, 3)
        self.assertIn("no GPU found", p.stderr)
        self.assertIn("nvml:", p.stderr)
        self.assertIn("/nonexistent/libnvidia-ml.so.1", p.stderr)
        self.assertIn("nvidia-smi:", p.stderr)
        self.assertEqual(p.stdout, "")

    def test_forced_provider_fails(self):
        p = run(["query", "--provider", "nvml"], env=env())
        self.assertEqual(p.returncode, 3)
        self.assertIn("/nonexistent/libnvidia-ml.so.1", p.stderr)


if __name__ == "__main__":
    unittest.main()
