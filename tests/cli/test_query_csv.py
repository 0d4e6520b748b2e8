"""`gpumon query --query-gpu=... --format=csv[...]`: nvidia-smi's CSV, byte for byte, against the
fake NVML."""
import signal
import subprocess
import time
import unittest

from gmtest import FAKE_NVML, GPUMON, env, run

FIELDS = ("index,name,uuid,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw,"
          "clocks.gr,fan.speed,pstate,pcie.link.gen.current")
HEADER = ("index, name, uuid, utilization.gpu [%], memory.used [MiB], memory.total [MiB], "
          "temperature.gpu, power.draw [W], clocks.current.graphics [MHz], fan.speed [%], pstate, "
          "pcie.link.gen.current\n")
ROW0 = ("0, NVIDIA H100 80GB HBM3, GPU-5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c50, 87 %, 40960 MiB, "
        "81559 MiB, 64, 512.35 W, 1755 MHz, 35 %, P0, 5\n")
ROW1 = ("1, NVIDIA H100 80GB HBM3, GPU-5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c51, 3 %, 1 MiB, "
        "81559 MiB, 31, 71.23 W, 345 MHz, 0 %, P8, 3\n")
ROW1_NOUNITS = ("1, NVIDIA H100 80GB HBM3, GPU-5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c51, 3, 1, 81559, "
                "31, 71.23, 345, 0, P8, 3\n")


def csv(fmt, fields=FIELDS, scenario="two_gpus.json", extra=()):
    return run(["query", "--query-gpu=" + fields, "--format=" + fmt] + list(extra),
               env=env(nvml=FAKE_NVML, scenario=scenario))


class CompatibleCsv(unittest.TestCase):
    def test_header_units_and_values(self):
        p = csv("csv")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, HEADER + ROW0 + ROW1)

    def test_noheader_nounits_and_id(self):
        p = csv("csv,noheader,nounits", extra=["-i", "1"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, ROW1_NOUNITS)
        # Modifiers in any order, as nvidia-smi takes them.
        self.assertEqual(csv("csv,nounits,noheader", extra=["-i", "1"]).stdout, ROW1_NOUNITS)

    def test_query_gpu_alone_implies_csv(self):
        p = run(["query", "--query-gpu=" + FIELDS], env=env(nvml=FAKE_NVML, scenario="two_gpus.json"))
        self.assertEqual(p.stdout, HEADER + ROW0 + ROW1)

    def test_unsupported_values_are_na(self):
        p = csv("csv,nounits", fields="index,fan.speed,utilization.encoder,pstate,power.limit",
                scenario="unsupported.json")
        self.assertEqual(p.stdout, "index, fan.speed [%], utilization.encoder [%], pstate, "
                                   "power.limit [W]\n0, [N/A], [N/A], [N/A], [N/A]\n")

    def test_unknown_field_names_it(self):
        p = csv("csv", fields="index,bogus.field")
        self.assertEqual(p.returncode, 2)
        self.assertIn('Field "bogus.field" is not a valid field to query.', p.stderr)
        self.assertEqual(p.stdout, "")

    def test_bad_format(self):
        p = csv("csv,fancy")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--format", p.stderr)

    def test_list_fields(self):
        p = run(["query", "--list-fields"])
        self.assertEqual(p.returncode, 0)
        for name in ("utilization.gpu", "memory.reserved", "clocks.max.mem", "pcie.link.width.max",
                     "enforced.power.limit", "persistence_mode"):
            self.assertIn(name, p.stdout)

    def test_loop_prints_header_once(self):
        proc = subprocess.Popen([GPUMON, "query", "--query-gpu=index,utilization.gpu",
                                 "--format=csv", "-l", "0.1"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                env=env(nvml=FAKE_NVML, scenario="two_gpus.json"))
        time.sleep(0.7)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
        self.assertEqual(proc.returncode, 0, err)
        lines = out.splitlines()
        self.assertEqual(lines[0], "index, utilization.gpu [%]")
        self.assertEqual(lines.count("index, utilization.gpu [%]"), 1)
        self.assertGreaterEqual(len(lines), 5)
        self.assertEqual(set(lines[1:]), {"0, 87 %", "1, 3 %"})


if __name__ == "__main__":
    unittest.main()
