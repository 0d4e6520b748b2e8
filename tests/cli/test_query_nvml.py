"""`gpumon query` against the fake libnvidia-ml.so.1, loaded through the real dlopen path."""
import json
import os
import signal
import subprocess
import time
import unittest

from gmtest import FAKE_NVML, FAKE_NVML_OLD, FIXTURES, GPUMON, env, run, scenario_file

MIB = 1048576


def query_json(nvml=FAKE_NVML, scenario="two_gpus.json", args=()):
    p = run(["query", "--format", "json"] + list(args), env=env(nvml=nvml, scenario=scenario))
    if p.returncode != 0:
        raise AssertionError(p.stderr)
    return json.loads(p.stdout)


class FullModel(unittest.TestCase):
    def test_every_field_with_units(self):
        doc = query_json()
        self.assertEqual(doc["provider"], "nvml")
        self.assertEqual(doc["driver_version"], "550.54.15")
        self.assertEqual(doc["cuda_version"], "12.4")
        self.assertEqual(doc["nvml_version"], "12.550.54.15")
        self.assertEqual(doc["gpu_count"], 2)
        self.assertTrue(doc["hostname"])
        g = doc["gpus"][0]
        self.assertEqual(g["index"], 0)
        self.assertEqual(g["name"], "NVIDIA H100 80GB HBM3")
        self.assertEqual(g["uuid"], "GPU-5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c50")
        self.assertEqual(g["pci_bus_id"], "00000000:1B:00.0")
        self.assertFalse(g["lost"])
        self.assertEqual(g["utilization"], {"gpu": 87, "memory": 42, "encoder": 3, "decoder": 7,
                                            "jpeg": None, "ofa": None})
        m = g["memory"]
        self.assertEqual(m["total_mib"], 81559)
        self.assertEqual(m["used_mib"], 40960)
        self.assertEqual(m["free_mib"], 42010165248 / MIB)
        self.assertEqual(m["reserved_mib"], 560971776 / MIB)
        self.assertEqual(m["total_bytes"], 85520809984)
        self.assertEqual(m["used_bytes"], 42949672960)
        self.assertEqual(m["reserved_bytes"], 560971776)
        self.assertAlmostEqual(m["used_percent"], 50.22, places=2)
        self.assertEqual(g["temperature_c"], 64)
        self.assertEqual(g["power"], {"draw_w": 512.345, "limit_w": 700, "draw_average_w": None,
                                      "draw_instant_w": None, "requested_limit_w": None,
                                      "default_limit_w": None, "min_limit_w": None,
                                      "max_limit_w": None})
        self.assertEqual(g["energy_j"], 123456789.012)
        self.assertEqual(g["clocks"], {"graphics_mhz": 1755, "sm_mhz": 1755, "memory_mhz": 2619,
                                       "max_graphics_mhz": 1980, "max_sm_mhz": 1980,
                                       "max_memory_mhz": 2619, "video_mhz": None})
        self.assertEqual(g["fan_percent"], 35)
        self.assertEqual(g["pcie"], {"gen_current": 5, "gen_max": 5, "width_current": 16,
                                     "width_max": 16, "tx_kbps": 123456, "rx_kbps": 654321,
                                     "gen_gpu_max": None, "base_class": None, "sub_class": None})
        self.assertEqual(g["pstate"], "P0")
        self.assertEqual(g["throttle_reasons"]["mask"], "0x0000000000000004")
        self.assertEqual(g["throttle_reasons"]["active"], ["sw_power_cap"])
        self.assertIs(g["throttle_reasons"]["reasons"]["sw_power_cap"], True)
        self.assertIs(g["throttle_reasons"]["reasons"]["gpu_idle"], False)
        self.assertIsNone(g["throttle_reasons"]["supported_mask"])
        # Health the two_gpus scenario does not give is null, never 0.
        self.assertIsNone(g["health"]["xid"])
        self.assertIsNone(g["health"]["ecc"]["uncorrected_volatile"])
        self.assertIs(g["health"]["degraded"], False)
        self.assertIs(g["persistence_mode"], True)
        procs = {p["pid"]: p for p in g["processes"]}
        self.assertEqual(set(procs), {4242, 5151})
        self.assertEqual(procs[4242]["type"], "compute")
        self.assertEqual(procs[4242]["used_memory_mib"], 38912)
        self.assertEqual(procs[4242]["used_memory_bytes"], 40802189312)
        self.assertEqual(procs[5151]["type"], "graphics")
        g1 = doc["gpus"][1]
        self.assertEqual(g1["fan_percent"], 0)  # a real zero stays zero
        self.assertIs(g1["persistence_mode"], False)
        self.assertEqual(g1["pstate"], "P8")
        self.assertEqual(g1["processes"], [])
        self.assertIsNotNone(doc["system"]["memory"]["total_bytes"])

    def test_unsupported_fields_are_null(self):
        doc = query_json(scenario="unsupported.json")
        g = doc["gpus"][0]
        self.assertIsNone(g["fan_percent"])
        self.assertIsNone(g["utilization"]["encoder"])
        self.assertIsNone(g["utilization"]["decoder"])
        self.assertIsNone(g["energy_j"])
        self.assertIsNone(g["pcie"]["tx_kbps"])
        self.assertIsNone(g["pcie"]["rx_kbps"])
        self.assertIsNone(g["clocks"]["max_memory_mhz"])
        self.assertIsNone(g["power"]["limit_w"])  # NO_PERMISSION
        self.assertIsNone(g["throttle_reasons"])
        self.assertIsNone(g["pstate"])  # NVML's 32 = unknown
        self.assertIsNone(g["persistence_mode"])
        self.assertEqual(g["utilization"]["gpu"], 55)
        self.assertEqual(g["power"]["draw_w"], 250)
        self.assertEqual(doc["cuda_version"], "12.2")

    def test_process_owner_and_command_from_proc(self):
        me = os.getpid()
        path = scenario_file({"gpus": [{"name": "NVIDIA L4", "util_gpu": 1, "util_mem": 1,
                                        "processes": [{"pid": me, "used_mem": 5 * MIB}]}]})
        try:
            doc = query_json(scenario=path)
        finally:
            os.unlink(path)
        procs = doc["gpus"][0]["processes"]
        self.assertEqual(len(procs), 1)
        self.assertEqual(procs[0]["pid"], me)
        self.assertEqual(procs[0]["used_memory_mib"], 5)
        import pwd
        self.assertEqual(procs[0]["user"], pwd.getpwuid(os.getuid()).pw_name)
        self.assertIn("unittest", procs[0]["command"])

    def test_old_driver_through_fallbacks(self):
        new = query_json()
        old = query_json(nvml=FAKE_NVML_OLD)
        self.assertEqual(old["provider"], "nvml")
        for a, b in zip(new["gpus"], old["gpus"]):
            self.assertEqual(a["uuid"], b["uuid"])
            self.assertEqual(a["pci_bus_id"], b["pci_bus_id"])
            self.assertEqual(a["utilization"], b["utilization"])
            self.assertEqual(a["memory"]["total_mib"], b["memory"]["total_mib"])
            self.assertEqual(a["power"], b["power"])
            self.assertEqual(sorted(p["pid"] for p in a["processes"]),
                             sorted(p["pid"] for p in b["processes"]))
            # v1 memory: "used" includes the reserved part, and reserved is unknown.
            self.assertIsNone(b["memory"]["reserved_mib"])
            self.assertEqual(b["memory"]["used_bytes"], a["memory"]["used_bytes"] + a["memory"]["reserved_bytes"])
        self.assertEqual(old["cuda_version"], "12.4")

    def test_id_by_uuid_and_bus_id(self):
        doc = query_json(args=["-i", "GPU-5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c51"])
        self.assertEqual([g["index"] for g in doc["gpus"]], [1])
        doc = query_json(args=["-i", "00000000:1B:00.0"])
        self.assertEqual([g["index"] for g in doc["gpus"]], [0])

    def test_table(self):
        p = run(["query"], env=env(nvml=FAKE_NVML, scenario="two_gpus.json"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("driver 550.54.15  CUDA 12.4  provider nvml", p.stdout)
        row0 = next(l for l in p.stdout.splitlines() if l.startswith("0 "))
        for part in ("NVIDIA H100 80GB HBM3", "64C", "87%", "40960 / 81559", "512 / 700", "35%", "P0", "5x16"):
            self.assertIn(part, row0)
        self.assertIn("pid 4242", p.stdout)


class Failures(unittest.TestCase):
    def test_init_failure_is_explained(self):
        p = run(["query", "--provider", "nvml"], env=env(nvml=FAKE_NVML, scenario="init_error.json"))
        self.assertEqual(p.returncode, 3)
        self.assertIn("Driver Not Loaded", p.stderr)

    def test_no_gpus(self):
        p = run(["query"], env=env(nvml=FAKE_NVML, scenario="no_gpus.json"))
        self.assertEqual(p.returncode, 3)
        self.assertIn("nvml:", p.stderr)

    def test_lost_gpu_mid_loop_others_keep_reporting(self):
        proc = subprocess.Popen([GPUMON, "query", "--format", "json", "-l", "0.1"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env(nvml=FAKE_NVML, scenario="lost.json"))
        lines = []
        deadline = time.time() + 15
        while len(lines) < 6 and time.time() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(json.loads(line))
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=10)
        self.assertEqual(proc.returncode, 0)
        self.assertGreaterEqual(len(lines), 6)
        self.assertFalse(lines[0]["gpus"][1]["lost"])
        self.assertEqual(lines[0]["gpus"][1]["utilization"]["gpu"], 99)
        for doc in lines[3:]:
            lost = doc["gpus"][1]
            self.assertTrue(lost["lost"])
            self.assertEqual(lost["uuid"], "GPU-10570000-0000-0000-0000-000000000001")
            self.assertIsNone(lost["utilization"]["gpu"])
            self.assertEqual(lost["processes"], [])
        utils = [d["gpus"][0]["utilization"]["gpu"] for d in lines]
        self.assertEqual(utils[:5], [10, 20, 30, 40, 50])
        self.assertFalse(any(d["gpus"][0]["lost"] for d in lines))

    def test_lost_gpu_in_table(self):
        proc = subprocess.Popen([GPUMON, "query", "-l", "0.1"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                env=env(nvml=FAKE_NVML, scenario="lost_only.json"))
        time.sleep(0.8)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=10)
        self.assertIn("GPU is lost", out)



def profile_rows(stderr):
    """The --profile table's rows: (call, count, wall ms, cpu ms) in printed order."""
    rows, inside = [], False
    for line in stderr.splitlines():
        if line.startswith("call "):
            inside = True
            continue
        if inside and not line.startswith("("):
            f = line.split()
            rows.append((f[0], int(f[1]), float(f[2]), float(f[3])))
    return rows


SEVEN = "index,name,memory.used,utilization.gpu,temperature.gpu,power.draw,clocks.sm"


class Profile(unittest.TestCase):
    """`query --profile` books every driver call; the fake's cost profile shows through it."""

    def query(self, fields=SEVEN, costs=None, scenario="two_gpus.json", args=()):
        extra = {"GM_FAKE_NVML_COSTS": costs} if costs else None
        p = run(["query", "--provider", "nvml", "--query-gpu=" + fields,
                 "--format=csv,noheader", "--profile"] + list(args),
                env=env(nvml=FAKE_NVML, scenario=scenario, extra=extra))
        self.assertEqual(p.returncode, 0, p.stderr)
        return p, profile_rows(p.stderr)

    def test_table_on_stderr_csv_untouched(self):
        p, rows = self.query()
        self.assertEqual(len(p.stdout.splitlines()), 2)  # the CSV alone on stdout
        self.assertIn("collector: open", p.stderr)
        calls = {r[0]: r for r in rows}
        self.assertEqual(calls["nvmlDeviceGetUtilizationRates"][1], 2)  # one per GPU
        self.assertEqual(calls["nvmlInit_v2"][1], 1)
        walls = [r[2] for r in rows]
        self.assertEqual(walls, sorted(walls, reverse=True))  # slowest first

    def test_seven_fields_read_only_their_getters(self):
        _, rows = self.query()
        names = {r[0] for r in rows}
        for needed in ("nvmlDeviceGetUtilizationRates", "nvmlDeviceGetMemoryInfo_v2",
                       "nvmlDeviceGetTemperature", "nvmlDeviceGetPowerUsage",
                       "nvmlDeviceGetClockInfo", "nvmlDeviceGetName"):
            self.assertIn(needed, names)
        # Static, slow and health getters the seven fields do not print are never called.
        for unwanted in ("nvmlDeviceGetEccMode", "nvmlDeviceGetTotalEccErrors",
                         "nvmlDeviceGetMemoryErrorCounter", "nvmlDeviceGetNvLinkState",
                         "nvmlDeviceGetRemappedRows", "nvmlDeviceGetSerial",
                         "nvmlDeviceGetVbiosVersion", "nvmlDeviceGetInforomVersion",
                         "nvmlDeviceGetMaxClockInfo", "nvmlDeviceGetGpuFabricInfoV",
                         "nvmlDeviceGetSramEccErrorStatus", "nvmlGpmQueryDeviceSupport",
                         "nvmlDeviceGetTotalEnergyConsumption", "nvmlDeviceGetFanSpeed",
                         "nvmlDeviceGetComputeRunningProcesses_v3"):
            self.assertNotIn(unwanted, names)
        self.assertFalse([n for n in names if n.startswith("nvmlDeviceGetFieldValues")])
        self.assertFalse([n for n in names if n.startswith("/proc/")])  # no host metrics
        self.assertNotIn("first CPU window (sleep)", names)

    def test_board_strings_read_when_printed(self):
        p, rows = self.query(fields="index,serial,inforom.img")
        names = {r[0] for r in rows}
        self.assertIn("nvmlDeviceGetSerial", names)
        self.assertIn("nvmlDeviceGetInforomImageVersion", names)
        self.assertNotIn("nvmlDeviceGetUtilizationRates", names)

    def test_ecc_counter_reads_the_ecc_mode_it_depends_on(self):
        p, rows = self.query(fields="index,ecc.errors.corrected.volatile.total",
                             scenario="health.json")
        names = {r[0] for r in rows}
        self.assertIn("nvmlDeviceGetEccMode", names)
        self.assertIn("nvmlDeviceGetTotalEccErrors", names)
        self.assertNotIn("nvmlDeviceGetMemoryErrorCounter", names)
        self.assertEqual(p.stdout.splitlines()[0], "0, 12")

    def test_expensive_call_named_first(self):
        costs = scenario_file({"calls": {"nvmlDeviceGetTemperature": {"cpu_us": 5000,
                                                                      "wall_us": 60000}}})
        try:
            _, rows = self.query(costs=costs)
        finally:
            os.unlink(costs)
        self.assertEqual(rows[0][0], "nvmlDeviceGetTemperature")
        self.assertGreaterEqual(rows[0][3], 2 * 5.0)  # two GPUs, 5 ms of CPU each at least

    def test_h200_cost_profile(self):
        costs = os.path.join(FIXTURES, "nvml", "costs-h200-580.json")
        _, rows = self.query(costs=costs, scenario=None)
        self.assertEqual(rows[0][0], "nvmlInit_v2")
        calls = {r[0]: r for r in rows}
        self.assertGreaterEqual(calls["nvmlInit_v2"][3], 3.0)
        # The hot calls burn their measured 27 us of CPU each (a floor: never less).
        self.assertGreaterEqual(calls["nvmlDeviceGetUtilizationRates"][3], 0.027)


class MigAndProcessUtilization(unittest.TestCase):
    """An H100 in MIG mode (a 3g.40gb and two 1g.10gb devices, a process in each of the first
    two) beside one that is not, whose processes NVML gives utilization samples for."""

    def test_mig_devices_and_process_placement(self):
        doc = query_json(scenario="h100-mig.json")
        g = doc["gpus"][0]
        self.assertEqual([(m["profile"], m["gpu_instance_id"], m["compute_instance_id"])
                          for m in g["mig_devices"]],
                         [("3g.40gb", 2, 0), ("1g.10gb", 7, 0), ("1g.10gb", 8, 0)])
        m = g["mig_devices"][1]
        self.assertEqual(m["uuid"], "MIG-7e5b3a1c-9d2f-5e4a-b6c8-0f1e2d3c4b5a")
        self.assertEqual(m["memory"], {"used_mib": 6144, "total_mib": 9984, "free_mib": 3840})
        procs = {p["pid"]: p for p in g["processes"]}
        self.assertEqual(procs[5001]["mig_device"], g["mig_devices"][0]["uuid"])
        self.assertEqual(procs[5002]["mig_device"], g["mig_devices"][1]["uuid"])
        # MIG mode: NVML gives no per-process utilization, which is unknown, not 0.
        self.assertEqual(procs[5001]["utilization"],
                         {"sm": None, "memory": None, "encoder": None, "decoder": None})
        # Not in MIG mode: no list of MIG devices at all.
        self.assertNotIn("mig_devices", doc["gpus"][1])

    def test_process_utilization(self):
        doc = query_json(scenario="h100-mig.json")
        procs = {p["pid"]: p for p in doc["gpus"][1]["processes"]}
        self.assertEqual(procs[6001]["utilization"], {"sm": 87, "memory": 41, "encoder": 0, "decoder": 0})
        self.assertEqual(procs[6003]["utilization"], {"sm": 2, "memory": 1, "encoder": 12, "decoder": 30})
        self.assertEqual(procs[6002]["utilization"],
                         {"sm": None, "memory": None, "encoder": None, "decoder": None})
        self.assertIsNone(procs[6001]["mig_device"])
        # A driver that refuses the call: unknown for every process.
        doc = query_json(nvml=FAKE_NVML_OLD, scenario="h100-mig.json")
        for g in doc["gpus"]:
            for p in g["processes"]:
                self.assertEqual(set(p["utilization"].values()), {None})

    def test_text_view_shows_sm_share_and_mig_profile(self):
        p = run(["query"], env=env(nvml=FAKE_NVML, scenario="h100-mig.json"))
        self.assertEqual(p.returncode, 0, p.stderr)
        line = next(l for l in p.stdout.splitlines() if "pid 6001" in l)
        self.assertIn("sm  87%", line)
        line = next(l for l in p.stdout.splitlines() if "pid 5002" in l)
        self.assertIn("MIG 1g.10gb", line)
        self.assertNotIn("sm ", next(l for l in p.stdout.splitlines() if "pid 6002" in l))


if __name__ == "__main__":
    unittest.main()
