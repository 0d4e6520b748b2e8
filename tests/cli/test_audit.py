"""`gpumon snapshot` and `gpumon diff` run for real against the fake libnvidia-ml.so.1 (and the
fake nvidia-smi): the audit inventory, its P2P matrix, atomic files, verdicts and exit codes."""
import copy
import json
import os
import shutil
import tempfile
import unittest

from gmtest import FAKE_NVML, FAKE_NVML_OLD, FIXTURES, env, run, scenario_file

MIB = 1048576
AUDIT = os.path.join(FIXTURES, "audit")
# Short windows keep the suite quick: 4 readings 100 ms apart.
WINDOW = ["--power-window", "300ms", "--power-interval", "100ms"]


def two_gpus():
    with open(os.path.join(FIXTURES, "nvml", "two_gpus.json")) as f:
        return json.load(f)


class Tmp(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gm_audit_cli_")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def scenario(self, obj):
        """A scenario file in the test's directory (removed with it)."""
        path = scenario_file(obj)
        dest = self.path(os.path.basename(path))
        shutil.move(path, dest)
        return dest

    def snapshot(self, scenario="two_gpus.json", nvml=FAKE_NVML, out=None, args=WINDOW):
        """Runs gpumon snapshot; returns the parsed document (from -o out when given)."""
        argv = ["snapshot"] + list(args) + (["-o", out] if out else [])
        p = run(argv, env=env(nvml=nvml, scenario=scenario))
        self.assertEqual(p.returncode, 0, p.stderr)
        if out:
            self.assertEqual(p.stdout, "")
            with open(out) as f:
                return json.load(f)
        return json.loads(p.stdout)

    def diff(self, *args):
        return run(["diff"] + list(args))


class Snapshot(Tmp):
    def test_two_gpus_inventory(self):
        doc = self.snapshot()
        self.assertEqual(doc["kind"], "gpumon-snapshot")
        self.assertEqual(doc["schema"], 1)
        self.assertTrue(doc["gpumon_version"])
        self.assertRegex(doc["timestamp"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        self.assertEqual(doc["provider"], "nvml")
        self.assertEqual(doc["driver_version"], "550.54.15")
        self.assertEqual(doc["cuda_version"], "12.4")
        self.assertEqual(doc["nvml_version"], "12.550.54.15")
        sysinfo = doc["system"]
        for key in ("hostname", "kernel", "processor_name"):
            self.assertIsInstance(sysinfo[key], str, key)
        self.assertEqual(sysinfo["cpu_count"], os.cpu_count())
        self.assertGreater(sysinfo["memory_total_bytes"], 0)
        self.assertEqual(doc["power_window"], {"window_ms": 300, "interval_ms": 100, "samples": 4,
                                               "elapsed_ms": doc["power_window"]["elapsed_ms"]})
        self.assertEqual(doc["gpu_count"], 2)

        g0, g1 = doc["gpus"]
        self.assertEqual((g0["index"], g0["name"], g0["uuid"], g0["pci_bus_id"], g0["lost"]),
                         (0, "NVIDIA H100 80GB HBM3", "GPU-5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c50",
                          "00000000:1B:00.0", False))
        self.assertEqual(g0["memory_total_mib"], 81559)
        self.assertEqual(g0["memory_used_mib"], 40960)
        self.assertEqual(g0["memory_total_bytes"], 85520809984)
        self.assertEqual(g0["memory_used_bytes"], 42949672960)
        self.assertEqual((g0["power_draw_w"], g0["power_draw_min_w"], g0["power_draw_max_w"],
                          g0["power_draw_samples"]), (512.345, 512.345, 512.345, 4))
        self.assertEqual(g0["power_limit_w"], 700)
        self.assertIs(g0["persistence_mode"], True)
        self.assertIs(g1["persistence_mode"], False)
        self.assertEqual(g0["pcie"], {"gen_current": 5, "gen_max": 5, "width_current": 16,
                                      "width_max": 16, "bandwidth_current_gb_per_s": 63.008,
                                      "bandwidth_max_gb_per_s": 63.008})
        # GPU 1 idles at gen3 x8 on a gen5 x16 link.
        self.assertEqual(g1["pcie"], {"gen_current": 3, "gen_max": 5, "width_current": 8,
                                      "width_max": 16, "bandwidth_current_gb_per_s": 7.88,
                                      "bandwidth_max_gb_per_s": 63.008})
        self.assertEqual(sorted(p["pid"] for p in g0["processes"]), [4242, 5151])
        self.assertEqual(g1["processes"], [])

        # P2P as the fixture defines it: NVLink NS and atomics GNS between 0 and 1, OK otherwise.
        self.assertIs(doc["p2p_known"], True)
        p2p = doc["p2p"]
        self.assertEqual(p2p["gpus"], [0, 1])
        for cap, code in (("read", "OK"), ("write", "OK"), ("nvlink", "NS"), ("atomics", "GNS"),
                          ("pci", "OK")):
            self.assertEqual(p2p[cap], [["X", code], [code, "X"]], cap)
        self.assertNotIn("p2p_error", doc)

    def test_same_keys_as_stats_where_they_overlap(self):
        # The daemon's /stats inventory names: a client of one reads the other.
        doc = self.snapshot(args=["--power-window", "0"])
        for key in ("timestamp", "timestamp_ms", "provider", "driver_version", "cuda_version",
                    "nvml_version", "system", "gpu_count", "gpus", "p2p_known", "p2p"):
            self.assertIn(key, doc)
        for key in ("hostname", "kernel", "processor_name", "cpu_count", "memory_total_bytes"):
            self.assertIn(key, doc["system"])
        for key in ("index", "name", "uuid", "pci_bus_id", "lost", "memory_total_mib",
                    "memory_used_mib", "power_draw_w", "power_limit_w", "persistence_mode", "pcie"):
            self.assertIn(key, doc["gpus"][0])
        self.assertEqual(doc["power_window"]["samples"], 1)

    def test_old_driver(self):
        new = self.snapshot(args=["--power-window", "0"])
        old = self.snapshot(nvml=FAKE_NVML_OLD, args=["--power-window", "0"])
        self.assertEqual(old["provider"], "nvml")
        self.assertEqual(old["cuda_version"], "12.4")
        self.assertEqual(old["p2p"], new["p2p"])
        for a, b in zip(new["gpus"], old["gpus"]):
            for key in ("index", "name", "uuid", "pci_bus_id", "memory_total_bytes", "power_draw_w",
                        "pcie", "persistence_mode"):
                self.assertEqual(a[key], b[key], key)
        # v1 memory counts the reserved part as used: 535 MiB more on GPU 0, over the default
        # tolerance, so the diff says so.
        scn = two_gpus()
        self.assertEqual(old["gpus"][0]["memory_used_bytes"],
                         scn["gpus"][0]["mem_used"] + scn["gpus"][0]["mem_reserved"])
        before, after = self.path("new.json"), self.path("old.json")
        for path, doc in ((before, new), (after, old)):
            with open(path, "w") as f:
                json.dump(doc, f)
        p = self.diff(before, after)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("CHANGED: GPU 0 memory used 40960 MiB -> 41495 MiB (+535 MiB, over the "
                      "256 MiB tolerance)", p.stdout)

    def test_power_window_mean_min_max(self):
        scn = two_gpus()
        # Alternating per reading: 4 readings average 200 W wherever the sequence starts.
        scn["gpus"][0]["power_mw"] = [100000, 300000]
        del scn["gpus"][1]["power_mw"]
        doc = self.snapshot(scenario=self.scenario(scn))
        g0, g1 = doc["gpus"]
        self.assertEqual((g0["power_draw_w"], g0["power_draw_min_w"], g0["power_draw_max_w"],
                          g0["power_draw_samples"]), (200, 100, 300, 4))
        # Not supported: null, never 0.
        self.assertEqual((g1["power_draw_w"], g1["power_draw_min_w"], g1["power_draw_max_w"],
                          g1["power_draw_samples"]), (None, None, None, 0))

    def test_output_file_is_written_atomically(self):
        out = self.path("before.json")
        with open(out, "w") as f:
            f.write("old contents")
        doc = self.snapshot(out=out, args=["--power-window", "0"])
        self.assertEqual(doc["gpu_count"], 2)
        self.assertEqual(os.listdir(self.dir), ["before.json"])  # no temporary left behind

        p = run(["snapshot", "--power-window", "0", "-o", self.path("no/such/dir.json")],
                env=env(nvml=FAKE_NVML, scenario="two_gpus.json"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("no/such/dir.json", p.stderr)

    def test_no_gpu_is_explained(self):
        p = run(["snapshot", "--power-window", "0"], env=env(nvml=FAKE_NVML, scenario="no_gpus.json"))
        self.assertEqual(p.returncode, 3)
        self.assertEqual(p.stdout, "")
        self.assertIn("no GPU found", p.stderr)
        self.assertIn("nvml:", p.stderr)
        p = run(["snapshot", "--provider", "nvml"], env=env(nvml=FAKE_NVML, scenario="init_error.json"))
        self.assertEqual(p.returncode, 3)
        self.assertIn("Driver Not Loaded", p.stderr)

    def test_nvidia_smi_cannot_tell_p2p(self):
        p = run(["snapshot", "--power-window", "0"], env=env(smi=True))
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["provider"], "nvidia-smi")
        self.assertIs(doc["p2p_known"], False)
        self.assertIsNone(doc["p2p"])
        self.assertEqual(doc["gpu_count"], 2)

    def test_bad_flags(self):
        for args in (["--power-window", "abc"], ["--power-window", "11m"],
                     ["--power-window", "-1"], ["--power-interval", "0"], ["--bogus"], ["extra"],
                     ["-o"]):
            p = run(["snapshot"] + args, env=env(nvml=FAKE_NVML, scenario="two_gpus.json"))
            self.assertEqual(p.returncode, 2, args)
            self.assertIn("gpumon snapshot:", p.stderr)


class Diff(Tmp):
    def pair(self, after_scenario, before_scenario="two_gpus.json"):
        before, after = self.path("before.json"), self.path("after.json")
        self.snapshot(scenario=before_scenario, out=before)
        self.snapshot(scenario=after_scenario, out=after)
        return before, after

    def test_same_system_is_unchanged(self):
        before, after = self.pair("two_gpus.json")
        p = self.diff(before, after)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        lines = p.stdout.splitlines()
        self.assertTrue(lines[0].startswith("before: "))
        self.assertTrue(lines[1].startswith("after: "))
        self.assertEqual(lines[-1], "UNCHANGED")
        self.assertEqual(len(lines), 3)
        report = json.loads(self.diff(before, after, "--format", "json").stdout)
        self.assertEqual((report["verdict"], report["changed"], report["differences"]),
                         ("UNCHANGED", False, []))

    def test_clocks_changed(self):
        scn = two_gpus()
        scn["gpus"][0]["clock_max_sm"] = 1755
        before, after = self.pair(self.scenario(scn))
        with open(before) as f:
            self.assertEqual(json.load(f)["gpus"][0]["clock_max_sm_mhz"], 1980)
        p = self.diff(before, after)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("CHANGED: GPU 0 max SM clock 1980 MHz -> 1755 MHz\n", p.stdout)

    def test_driver_and_memory_changed(self):
        scn = two_gpus()
        scn["driver_version"] = "550.90.07"
        scn["nvml_version"] = "12.550.90.07"
        scn["gpus"][1]["mem_used"] += 2048 * MIB
        scn["gpus"][1]["mem_free"] -= 2048 * MIB
        before, after = self.pair(self.scenario(scn))
        p = self.diff(before, after)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("CHANGED: driver 550.54.15 -> 550.90.07\n", p.stdout)
        self.assertIn("CHANGED: GPU 1 memory used 1 MiB -> 2049 MiB (+2048 MiB, over the 256 MiB "
                      "tolerance)\n", p.stdout)
        self.assertTrue(p.stdout.endswith("CHANGED (3 changes)\n"), p.stdout)

        # Enough memory tolerance leaves the driver, which no tolerance excuses.
        p = self.diff(before, after, "--mem-tolerance-mb", "4096", "--format", "json")
        self.assertEqual(p.returncode, 1)
        report = json.loads(p.stdout)
        self.assertEqual(report["verdict"], "CHANGED")
        self.assertEqual(report["tolerance"], {"memory_mib": 4096, "power_w": 25})
        self.assertEqual([(d["severity"], d["field"]) for d in report["differences"]],
                         [("changed", "driver_version"), ("changed", "nvml_version"),
                          ("note", "memory_used_bytes")])
        mem = report["differences"][2]
        self.assertEqual((mem["gpu"], mem["uuid"], mem["before"], mem["after"]),
                         (1, "GPU-5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c51", MIB, 2049 * MIB))

    def test_idle_power_rise(self):
        scn = two_gpus()
        scn["gpus"][1]["power_mw"] += 40000
        before, after = self.pair(self.scenario(scn))
        p = self.diff(before, after)
        self.assertEqual(p.returncode, 1)
        self.assertIn("CHANGED: GPU 1 mean power 71.2 W -> 111.2 W (+40.0 W, over the 25 W "
                      "tolerance)", p.stdout)
        self.assertEqual(self.diff(before, after, "--power-tolerance-w", "50").returncode, 0)

    def test_link_downtrain_is_a_warning(self):
        scn = two_gpus()
        scn["gpus"][1]["pcie_gen"] = 1
        before, after = self.pair(self.scenario(scn))
        p = self.diff(before, after)
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertIn("WARNING: GPU 1 PCIe current link generation 3 -> 1", p.stdout)
        self.assertTrue(p.stdout.endswith("UNCHANGED (1 warning)\n"), p.stdout)
        p = self.diff("--strict", before, after)
        self.assertEqual(p.returncode, 1)
        self.assertTrue(p.stdout.endswith("CHANGED (1 warning; strict)\n"), p.stdout)

    def test_p2p_changed(self):
        scn = two_gpus()
        scn["p2p"]["pairs"] = [[0, 1, "atomics", 2]]  # NVLink came up: NS -> OK
        before, after = self.pair(self.scenario(scn))
        p = self.diff(before, after)
        self.assertEqual(p.returncode, 1)
        self.assertIn("CHANGED: P2P nvlink GPU 0 <-> GPU 1 NS -> OK\n", p.stdout)

    def test_gpu_removed(self):
        scn = two_gpus()
        del scn["gpus"][1]
        del scn["p2p"]
        before, after = self.pair(self.scenario(scn))
        p = self.diff(before, after)
        self.assertEqual(p.returncode, 1)
        self.assertIn("CHANGED: GPU count 2 -> 1\n", p.stdout)
        self.assertIn("CHANGED: GPU 1 removed: NVIDIA H100 80GB HBM3 "
                      "GPU-5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c51 at 00000000:2A:00.0\n", p.stdout)
        # Swapped around, the same GPU shows as added.
        p = self.diff(after, before)
        self.assertIn("CHANGED: GPU 1 added: NVIDIA H100 80GB HBM3 "
                      "GPU-5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c51", p.stdout)

    def test_process_started_and_ended(self):
        # Between the snapshots a job took 20 GiB of GPU 1 and the 1 GiB graphics client on
        # GPU 0 went away; the 38 GiB job on GPU 0, in both, is no change.
        scn = two_gpus()
        scn["gpus"][1]["processes"] = [{"pid": 3999999, "used_mem": 20480 * MIB, "type": "compute"}]
        scn["gpus"][0]["processes"] = [p for p in scn["gpus"][0]["processes"] if p["pid"] != 5151]
        before, after = self.pair(self.scenario(scn))
        p = self.diff(before, after)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"\nCHANGED: GPU 1: process 3999999 \([^\n]*\) started during the "
                                   r"run, 20480 MiB\n")
        self.assertRegex(p.stdout, r"\nCHANGED: GPU 0: process 5151 \([^\n]*\) ended during the "
                                   r"run, 1024 MiB\n")
        self.assertNotIn("process 4242", p.stdout)
        report = json.loads(self.diff(before, after, "--format", "json").stdout)
        procs = [d for d in report["differences"] if d["field"] == "processes"]
        self.assertEqual([(d["severity"], d["gpu"], d["before"] and d["before"]["pid"],
                           d["after"] and d["after"]["pid"]) for d in procs],
                         [("changed", 0, 5151, None), ("changed", 1, None, 3999999)])
        self.assertEqual(procs[1]["after"]["used_memory_mib"], 20480)

    def test_process_without_memory_is_a_warning(self):
        scn = two_gpus()
        scn["gpus"][1]["processes"] = [{"pid": 3999998, "used_mem": 0, "type": "compute"}]
        before, after = self.pair(self.scenario(scn))
        p = self.diff(before, after)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"\nWARNING: GPU 1: process 3999998 \([^\n]*\) started during "
                                   r"the run, 0 MiB\n")
        self.assertTrue(p.stdout.endswith("UNCHANGED (1 warning)\n"), p.stdout)
        self.assertEqual(self.diff("--strict", before, after).returncode, 1)

    def test_committed_snapshots(self):
        # Files written by gpumon 0.1.0 (schema 1) stay readable, with this exact verdict.
        before = os.path.join(AUDIT, "before.json")
        after = os.path.join(AUDIT, "after_changed.json")
        self.assertEqual(self.diff(before, before).returncode, 0)
        p = self.diff(before, after)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stdout, (
            "before: 2026-03-02T09:00:00.000Z on node1, 2 GPUs (nvml, gpumon 0.1.0)\n"
            "after:  2026-03-02T10:30:00.000Z on node1, 2 GPUs (nvml, gpumon 0.1.0)\n"
            "CHANGED: driver 550.54.15 -> 550.90.07\n"
            "CHANGED: NVML 12.550.54.15 -> 12.550.90.07\n"
            "note:    GPU 0 mean power 512.3 W -> 530.2 W (+17.9 W, within tolerance)\n"
            "CHANGED: GPU 1 memory used 1 MiB -> 2049 MiB (+2048 MiB, over the 256 MiB tolerance)\n"
            "WARNING: GPU 1 PCIe current link generation 3 -> 1 (links train down at idle; "
            "--strict fails on this)\n"
            "CHANGED: P2P nvlink GPU 0 <-> GPU 1 NS -> OK\n"
            "CHANGED (4 changes, 1 warning, 1 note)\n"))

    def test_bad_input_exits_2_naming_the_file(self):
        good = os.path.join(AUDIT, "before.json")
        garbage = self.path("garbage.json")
        with open(garbage, "w") as f:
            f.write("this is not JSON {")
        p = self.diff(good, garbage)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stdout, "")
        self.assertIn("gpumon diff: " + garbage + ": not JSON", p.stderr)

        foreign = self.path("query.json")
        q = run(["query", "--format", "json"], env=env(nvml=FAKE_NVML, scenario="two_gpus.json"))
        self.assertEqual(q.returncode, 0, q.stderr)
        with open(foreign, "w") as f:
            f.write(q.stdout)
        p = self.diff(foreign, good)
        self.assertEqual(p.returncode, 2)
        self.assertIn(foreign + ": not a gpumon snapshot", p.stderr)

        with open(good) as f:
            doc = json.load(f)
        bad = copy.deepcopy(doc)
        bad["gpus"][1]["memory_used_mib"] = "lots"
        broken = self.path("broken.json")
        with open(broken, "w") as f:
            json.dump(bad, f)
        p = self.diff(good, broken)
        self.assertEqual(p.returncode, 2)
        self.assertIn(broken + ": gpus[1].memory_used_mib must be a number or null, not a string",
                      p.stderr)

        p = self.diff(good, self.path("missing.json"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("missing.json: No such file or directory", p.stderr)

    def test_usage_errors(self):
        good = os.path.join(AUDIT, "before.json")
        for args in ([good], [good, good, good], [good, good, "--format", "xml"],
                     [good, good, "--mem-tolerance-mb", "-5"],
                     [good, good, "--power-tolerance-w", "many"], [good, good, "--bogus"]):
            p = self.diff(*args)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn("gpumon diff:", p.stderr)
        p = self.diff("--help")
        self.assertEqual(p.returncode, 0)
        self.assertIn("--strict", p.stdout)


if __name__ == "__main__":
    unittest.main()
