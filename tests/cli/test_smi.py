"""gpumon as nvidia-smi (issue #12): `gpumon smi` and a link named nvidia-smi against the fake
NVML. The --query-gpu header over nvidia-smi 590's 212 fields equals a real 590 capture's;
nvidia_gpu_exporter's two field lists (discovered through --help-query-gpu, and its built-in
one) are accepted; -q -x is read by netdata's python.d nvidia_smi collector itself."""
import contextlib
import importlib.util
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest
import xml.etree.ElementTree as ET

from gmtest import FAKE_NVML, FAKE_NVML_OLD, FIXTURES, GPUMON, env

SMI_FIXTURES = os.path.join(FIXTURES, "smi")


def smi(args, nvml=FAKE_NVML, scenario="health.json", argv0=None, timeout=30):
    if argv0:
        return subprocess.run([argv0] + list(args), capture_output=True, text=True,
                              timeout=timeout, env=env(nvml=nvml, scenario=scenario))
    return subprocess.run([GPUMON, "smi"] + list(args), capture_output=True, text=True,
                          timeout=timeout, env=env(nvml=nvml, scenario=scenario))


def capture_fields():
    """The 212 field names of nvidia-smi 590, as nvidia_gpu_exporter extracts them."""
    with open(os.path.join(SMI_FIXTURES, "real-h100-590-help-query-gpu.txt")) as f:
        return exporter_extract(f.read())


def exporter_extract(text):
    # nvidia_gpu_exporter's fieldRegex: a field is a quoted name at a line start after a blank line.
    return re.findall(r'(?m)\n\s*\n^"([^"]+)"', text)


class QueryGpu(unittest.TestCase):
    def test_header_of_all_212_fields_equals_nvidia_smi_590(self):
        fields = capture_fields()
        self.assertEqual(len(fields), 212)
        with open(os.path.join(SMI_FIXTURES, "real-h100-590-query-gpu-all.csv")) as f:
            want_header = f.readline().rstrip("\n")
        p = smi(["--query-gpu=" + ",".join(fields), "--format=csv"])
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual(lines[0], want_header)
        self.assertEqual(len(lines), 3)  # header and two GPUs
        self.assertEqual(len(lines[1].split(", ")), 212)

    def test_help_lists_the_same_fields_in_the_same_order(self):
        p = smi(["--help-query-gpu"])
        self.assertEqual(p.returncode, 0)
        self.assertEqual(exporter_extract(p.stdout), capture_fields())
        self.assertIn('"clocks.current.graphics" or "clocks.gr"', p.stdout)
        self.assertIn('"clocks_event_reasons.active" or "clocks_throttle_reasons.active"', p.stdout)

    def test_values_formatted_as_nvidia_smi(self):
        fields = ["index", "serial", "vbios_version", "pci.domain", "pci.bus", "pci.device",
                  "pci.device_id", "pci.sub_device_id", "clocks_event_reasons.supported",
                  "clocks_event_reasons.active", "clocks_event_reasons.sw_power_cap",
                  "clocks_event_reasons.gpu_idle", "clocks_event_reasons_counters.sw_power_cap",
                  "compute_mode", "compute_cap", "ecc.mode.current",
                  "ecc.errors.corrected.volatile.device_memory",
                  "ecc.errors.uncorrected.aggregate.total", "ecc.errors.corrected.volatile.l1_cache",
                  "retired_pages.double_bit.count", "retired_pages.pending",
                  "remapped_rows.uncorrectable", "remapped_rows.failure",
                  "remapped_rows.histogram.max", "temperature.memory", "power.draw.average",
                  "power.draw.instant", "power.limit", "power.min_limit", "clocks.video",
                  "mig.mode.current", "pcie.link.gen.gpumax", "inforom.img"]
        p = smi(["--query-gpu=" + ",".join(fields), "--format=csv,noheader"])
        self.assertEqual(p.returncode, 0, p.stderr)
        row0, row1 = [l.split(", ") for l in p.stdout.splitlines()]
        want0 = ["0", "1652923012345", "96.00.A5.00.01", "0x0000", "0x1B", "0x00", "0x233010DE",
                 "0x16C110DE", "0x00000000000001FF", "0x0000000000000004", "Active", "Not Active",
                 "1500000 us", "Default", "9.0", "Enabled", "10", "3", "[N/A]", "2", "No", "2",
                 "No", "2558", "71", "511.87 W", "515.62 W", "700.00 W", "200.00 W", "1545 MHz",
                 "Disabled", "5", "G520.0200.00.05"]
        self.assertEqual(dict(zip(fields, row0)), dict(zip(fields, want0)))
        # GPU 1: ECC off, MIG on, exclusive process, no remapper: absent is [N/A], never 0.
        d1 = dict(zip(fields, row1))
        self.assertEqual(d1["ecc.mode.current"], "Disabled")
        self.assertEqual(d1["ecc.errors.uncorrected.aggregate.total"], "[N/A]")
        self.assertEqual(d1["compute_mode"], "Exclusive_Process")
        self.assertEqual(d1["mig.mode.current"], "Enabled")
        self.assertEqual(d1["remapped_rows.failure"], "[N/A]")
        self.assertEqual(d1["serial"], "[N/A]")
        p = smi(["--query-gpu=power.draw.average,clocks_event_reasons_counters.sw_power_cap",
                 "--format=csv,nounits", "-i", "0"])
        self.assertEqual(p.stdout, "power.draw.average [W], clocks_event_reasons_counters.sw_power_cap [us]\n"
                                   "511.87, 1500000\n")

    def test_old_driver_prints_na(self):
        p = smi(["--query-gpu=index,serial,temperature.memory,ecc.mode.current,utilization.gpu",
                 "--format=csv,noheader"], nvml=FAKE_NVML_OLD)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.splitlines()[0], "0, [N/A], [N/A], [N/A], 87 %")

    def test_nvidia_gpu_exporter_field_lists(self):
        # Its default: the fields --help-query-gpu lists, all in one query.
        auto = exporter_extract(smi(["--help-query-gpu"]).stdout)
        p = smi(["--query-gpu=" + ",".join(auto), "--format=csv"])
        self.assertEqual(p.returncode, 0, p.stderr)
        header, *rows = p.stdout.splitlines()
        self.assertEqual(len(header.split(", ")), len(auto))
        for r in rows:
            self.assertEqual(len(r.split(", ")), len(auto))
        # Its built-in list, with the pre-535 clocks_throttle_reasons.* spellings.
        with open(os.path.join(SMI_FIXTURES, "nvidia_gpu_exporter-fallback-fields.txt")) as f:
            builtin = f.read().split()
        self.assertEqual(len(builtin), 116)
        p = smi(["--query-gpu=" + ",".join(builtin), "--format=csv"])
        self.assertEqual(p.returncode, 0, p.stderr)
        header = p.stdout.splitlines()[0].split(", ")
        self.assertEqual(len(header), 116)
        # nvidia-smi prints the current name whichever spelling was asked for.
        self.assertIn("clocks_event_reasons.gpu_idle", header)

    def test_unknown_field_and_option(self):
        p = smi(["--query-gpu=index,foo", "--format=csv"])
        self.assertEqual(p.returncode, 2)
        self.assertIn('Field "foo" is not a valid field to query.', p.stderr)
        p = smi(["-pm", "1"])
        self.assertEqual(p.returncode, 2)
        self.assertIn('"-pm"', p.stderr)
        self.assertIn("Invalid combination of input arguments", p.stderr)
        p = smi(["--query-gpu=index"])
        self.assertEqual(p.returncode, 2)
        self.assertIn("--format", p.stderr)


# Fields nvidia-smi 590 gave a value for on the captured H100 that gpumon does not read (it prints
# [N/A]): docs/SMI.md says why. Any other difference from the capture is a failure.
UNREAD_WITH_VALUE_ON_H100 = {
    "inforom.checksum_validation", "platform.chassis_serial_number", "platform.slot_number",
    "platform.tray_index", "platform.host_id", "platform.peer_type", "platform.module_id",
    "platform.gpu_fabric_guid",
}

# What gpumon reads once at open (or once a minute) beyond identity, with the capture's value.
STATIC_FIELDS = {
    "pci.baseClass": "0x3", "pci.subClass": "0x2", "accounting.mode": "Disabled",
    "accounting.buffer_size": "4000", "inforom.img": "G520.0200.00.05", "inforom.oem": "2.1",
    "inforom.ecc": "7.16", "gsp.mode.current": "Enabled", "gsp.mode.default": "Enabled",
    "temperature.gpu.tlimit": "46",
}

# Modes, fabric, confidential-computing memory and SRAM error status (optional NVML calls of
# drivers 550 and newer, none of them in the old-driver fake), with the capture's value.
MODE_FIELDS = {
    "display_attached": "Yes", "display_active": "Disabled", "addressing_mode": "None",
    "gpu_recovery_action": "None", "edpp_multiplier": "100.00 %", "c2c.mode": "Disabled",
    "protected_memory.total": "0 MiB", "protected_memory.used": "0 MiB",
    "protected_memory.free": "0 MiB", "fabric.state": "Completed",
    "fabric.status": "Success", "fabric.cliqueId": "0",
    "fabric.clusterUuid": "00000000-0000-0000-0000-000000000000",
    "ecc.errors.uncorrected.volatile.sram.parity": "0",
    "ecc.errors.uncorrected.volatile.sram.secded": "0",
    "ecc.errors.uncorrected.aggregate.sram.parity": "0",
    "ecc.errors.uncorrected.aggregate.sram.secded": "0",
    "ecc.errors.uncorrected.aggregate.sram.thresholdExceeded": "No",
    "ecc.errors.uncorrected.aggregate.sram.l2": "0", "ecc.errors.uncorrected.aggregate.sram.sm": "0",
    "ecc.errors.uncorrected.aggregate.sram.mcu": "0",
    "ecc.errors.uncorrected.aggregate.sram.pcie": "0",
    "ecc.errors.uncorrected.aggregate.sram.other": "0",
}


def capture_row():
    with open(os.path.join(SMI_FIXTURES, "real-h100-590-query-gpu-all.csv")) as f:
        f.readline()
        return f.readline().rstrip("\n").split(", ")


def is_placeholder(v):
    return v == "N/A" or (v.startswith("[") and v.endswith("]"))


class AgainstCapture(unittest.TestCase):
    """gpumon's row on a fake H100 carrying the captured board's readings (h100-590.json) against
    nvidia-smi 590's own row for that board, field by field."""

    def row(self, nvml):
        fields = capture_fields()
        p = smi(["--query-gpu=" + ",".join(fields), "--format=csv,noheader"], nvml=nvml,
                scenario="h100-590.json")
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual(len(lines), 1)
        got = lines[0].split(", ")
        self.assertEqual(len(got), 212)
        return fields, got

    def test_placeholders_equal_nvidia_smi_590(self):
        fields, got = self.row(FAKE_NVML)
        want = capture_row()
        compared = {}
        for f, w, g in zip(fields, want, got):
            if is_placeholder(w):
                compared[w] = compared.get(w, 0) + 1
                with self.subTest(field=f):
                    self.assertEqual(g, w)
        # The capture's placeholders: the common one and the two others 590 prints.
        self.assertEqual(compared, {"[N/A]": 61, "[Requested functionality has been deprecated]": 6,
                                    "N/A": 6})

    def test_values_equal_nvidia_smi_590_except_unread_fields(self):
        fields, got = self.row(FAKE_NVML)
        want = capture_row()
        differ = {f for f, w, g in zip(fields, want, got) if w != g}
        self.assertRegex(got[0], r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d{3}$")
        self.assertEqual(differ - {"timestamp"}, UNREAD_WITH_VALUE_ON_H100)
        for f, w, g in zip(fields, want, got):
            if f in UNREAD_WITH_VALUE_ON_H100:
                self.assertEqual(g, "[N/A]", f)
        d = dict(zip(fields, got))
        self.assertEqual({f: d[f] for f in STATIC_FIELDS}, STATIC_FIELDS)
        self.assertEqual({f: d[f] for f in MODE_FIELDS}, MODE_FIELDS)
        self.assertEqual({f: w for f, w in zip(fields, want) if f in MODE_FIELDS}, MODE_FIELDS)

    def test_old_driver_lacks_the_static_fields(self):
        fields, got = self.row(FAKE_NVML_OLD)
        d = dict(zip(fields, got))
        self.assertEqual({f: d[f] for f in STATIC_FIELDS}, {f: "[N/A]" for f in STATIC_FIELDS})
        self.assertEqual({f: d[f] for f in MODE_FIELDS}, {f: "[N/A]" for f in MODE_FIELDS})
        # The placeholders do not depend on the driver.
        for f, w in zip(fields, capture_row()):
            if is_placeholder(w):
                self.assertEqual(d[f], w, f)

    def test_q_text_shows_them_as_590_does(self):
        p = smi(["-q"], scenario="h100-590.json")
        self.assertEqual(p.returncode, 0, p.stderr)
        for line in ["    Display Mode                                       : Requested functionality has been deprecated",
                     "    Display Attached                                   : Yes",
                     "    Display Active                                     : Disabled",
                     "    Addressing Mode                                    : None",
                     "    Accounting Mode                                    : Disabled",
                     "    Accounting Mode Buffer Size                        : 4000",
                     "        Image Version                                  : G520.0200.00.05",
                     "        OEM Object                                     : 2.1",
                     "        ECC Object                                     : 7.16",
                     "        Power Management Object                        : N/A",
                     "        Base Classcode                                 : 0x3",
                     "        Sub Classcode                                  : 0x2",
                     "        GPU T.Limit Temp                               : 46 C",
                     "        Graphics                                       : Requested functionality has been deprecated"]:
            self.assertIn(line + "\n", p.stdout)

    def test_json_carries_them_and_old_driver_null(self):
        def gpu0(nvml):
            p = subprocess.run([GPUMON, "query", "--format", "json"], capture_output=True,
                               text=True, timeout=30, env=env(nvml=nvml, scenario="h100-590.json"))
            self.assertEqual(p.returncode, 0, p.stderr)
            return json.loads(p.stdout)["gpus"][0]
        g = gpu0(FAKE_NVML)
        self.assertEqual(g["inforom"], {"image": "G520.0200.00.05", "oem": "2.1", "ecc": "7.16",
                                        "pwr": None})
        self.assertEqual(g["accounting"], {"mode": False, "buffer_size": 4000})
        self.assertEqual(g["gsp_firmware_mode"], {"current": True, "default": True})
        self.assertEqual(g["temperature_tlimit_c"], 46)
        self.assertEqual((g["pcie"]["base_class"], g["pcie"]["sub_class"]), (3, 2))
        self.assertEqual(g["display"], {"attached": True, "active": False})
        self.assertEqual((g["addressing_mode"], g["c2c_mode"], g["edpp_multiplier_percent"]),
                         ("None", False, 100))
        self.assertEqual(g["protected_memory"], {"total_mib": 0, "used_mib": 0, "free_mib": 0})
        self.assertEqual(g["fabric"], {"state": "Completed", "status": "Success", "clique_id": 0,
                                       "cluster_uuid": "00000000-0000-0000-0000-000000000000"})
        self.assertEqual(g["health"]["recovery_action"], 0)
        self.assertEqual(g["health"]["ecc"]["sram"], {
            "uncorrected_volatile_parity": 0, "uncorrected_volatile_secded": 0,
            "uncorrected_aggregate_parity": 0, "uncorrected_aggregate_secded": 0,
            "threshold_exceeded": False,
            "uncorrected_aggregate_by_unit": {"l2": 0, "sm": 0, "mcu": 0, "pcie": 0, "other": 0}})
        g = gpu0(FAKE_NVML_OLD)
        self.assertEqual(g["display"], {"attached": None, "active": None})
        self.assertEqual((g["addressing_mode"], g["c2c_mode"], g["edpp_multiplier_percent"]),
                         (None, None, None))
        self.assertEqual(g["protected_memory"],
                         {"total_mib": None, "used_mib": None, "free_mib": None})
        self.assertEqual(g["fabric"], {"state": None, "status": None, "clique_id": None,
                                       "cluster_uuid": None})
        self.assertIsNone(g["health"]["recovery_action"])
        self.assertIsNone(g["health"]["ecc"]["sram"])
        self.assertEqual(g["inforom"], {"image": None, "oem": None, "ecc": None, "pwr": None})
        self.assertEqual(g["accounting"], {"mode": None, "buffer_size": None})
        self.assertEqual(g["gsp_firmware_mode"], {"current": None, "default": None})
        self.assertIsNone(g["temperature_tlimit_c"])
        self.assertEqual((g["pcie"]["base_class"], g["pcie"]["sub_class"]), (None, None))


class OtherQueries(unittest.TestCase):
    def test_list_version_id_and_file(self):
        p = smi(["-L"])
        self.assertEqual(p.stdout.splitlines()[0],
                         "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c50)")
        p = smi(["--version"])
        self.assertIn("DRIVER version      : 590.48.01", p.stdout)
        self.assertIn("CUDA Version        : 13.1", p.stdout)
        for sel in ("1", "GPU-5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c51", "00000000:2A:00.0"):
            p = smi(["--query-gpu=index", "--format=csv,noheader", "--id=" + sel])
            self.assertEqual(p.stdout, "1\n", sel)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "out.csv")
            p = smi(["--query-gpu=index,name", "--format=csv", "-f", path])
            self.assertEqual(p.stdout, "")
            with open(path) as f:
                self.assertEqual(f.read().splitlines()[1], "0, NVIDIA H100 80GB HBM3")

    def test_compute_apps_retired_pages_remapped_rows(self):
        p = smi(["--query-compute-apps=gpu_uuid,pid,used_gpu_memory", "--format=csv"])
        self.assertEqual(p.stdout.splitlines(),
                         ["gpu_uuid, pid, used_gpu_memory [MiB]",
                          "GPU-5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c50, 4242, 38912 MiB"])
        p = smi(["--query-retired-pages=gpu_bus_id,retired_pages.address,retired_pages.cause",
                 "--format=csv,noheader"])
        self.assertEqual(p.stdout.splitlines(),
                         ["00000000:1B:00.0, 0x0000000000001000, Double Bit ECC",
                          "00000000:1B:00.0, 0x0000000000002000, Double Bit ECC",
                          "00000000:2A:00.0, [N/A], Single Bit ECC",
                          "00000000:2A:00.0, [N/A], Double Bit ECC"])
        p = smi(["--query-remapped-rows=gpu_uuid,remapped_rows.correctable,remapped_rows.pending",
                 "--format=csv", "-i", "0"])
        self.assertEqual(p.stdout.splitlines()[1], "GPU-5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c50, 1, No")

    def test_q_text_and_display_sections(self):
        p = smi(["-q"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("==============NVSMI LOG==============", p.stdout)
        self.assertRegex(p.stdout, r"\n    Product Name {39}: NVIDIA H100 80GB HBM3\n")
        self.assertRegex(p.stdout, r"\n        Uncorrectable Error {28}: 2\n")
        p = smi(["-q", "-d", "MEMORY", "-i", "0"])
        self.assertIn("FB Memory Usage", p.stdout)
        self.assertNotIn("Product Name", p.stdout)
        self.assertNotIn("Temperature", p.stdout)

    def test_summary(self):
        p = smi([])
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertIn("NVIDIA-SMI 590.48.01", lines[2])
        for l in lines[1:]:
            if l.startswith(("|", "+")):
                self.assertEqual(len(l), 91, l)

    def test_link_named_nvidia_smi_and_loop(self):
        with tempfile.TemporaryDirectory() as d:
            link = os.path.join(d, "nvidia-smi")
            os.symlink(os.path.abspath(GPUMON), link)
            p = smi(["-L"], argv0=link)
            self.assertTrue(p.stdout.startswith("GPU 0: "), p.stderr)
            proc = subprocess.Popen([link, "--query-gpu=index", "--format=csv", "-lms", "100"],
                                    stdout=subprocess.PIPE, text=True,
                                    env=env(nvml=FAKE_NVML, scenario="health.json"))
            lines = [proc.stdout.readline() for _ in range(7)]
            proc.terminate()
            proc.wait(timeout=10)
            self.assertEqual(lines, ["index\n"] + ["0\n", "1\n"] * 3)


class Xml(unittest.TestCase):
    def test_xml_ignores_display_filter(self):
        # nvidia-smi's help: -d "doesn't work with -u or -x flags"; gpumon's help says so too.
        whole = smi(["-q", "-x"])
        self.assertEqual(whole.returncode, 0, whole.stderr)
        filtered = smi(["-q", "-x", "-d", "MEMORY"])
        self.assertEqual(filtered.returncode, 0, filtered.stderr)
        def steady(xml):  # the sampling time differs between two runs
            return [l for l in xml.splitlines() if "<timestamp>" not in l]
        self.assertEqual(steady(filtered.stdout), steady(whole.stdout))
        self.assertIn("<temperature>", filtered.stdout)
        self.assertIn("ignored with -x", smi(["-h"]).stdout)

    def test_xml_elements_netdata_and_others_read(self):
        p = smi(["-q", "-x"])
        self.assertEqual(p.returncode, 0, p.stderr)
        root = ET.fromstring(p.stdout)
        self.assertEqual(root.tag, "nvidia_smi_log")
        self.assertEqual(root.findtext("driver_version"), "590.48.01")
        self.assertEqual(root.findtext("attached_gpus"), "2")
        g = root.findall("gpu")[0]
        self.assertEqual(g.get("id"), "00000000:1B:00.0")
        want = {"product_name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c50",
                "fan_speed": "35 %", "performance_state": "P0", "utilization/gpu_util": "87 %",
                "utilization/memory_util": "42 %", "utilization/encoder_util": "3 %",
                "fb_memory_usage/used": "40960 MiB", "fb_memory_usage/total": "81559 MiB",
                "temperature/gpu_temp": "64 C", "temperature/memory_temp": "71 C",
                "clocks/graphics_clock": "1755 MHz", "clocks/video_clock": "1545 MHz",
                "pci/tx_util": "123456 KB/s", "pci/replay_counter": "9",
                "gpu_power_readings/power_draw": "512.35 W",
                "gpu_power_readings/average_power_draw": "511.87 W",
                "ecc_mode/current_ecc": "Enabled",
                "ecc_errors/volatile/dram_uncorrectable": "2",
                "remapped_rows/remapped_row_unc": "2", "remapped_rows/remapped_row_failure": "No",
                "clocks_event_reasons/clocks_event_reason_sw_power_cap": "Active",
                "processes/process_info/pid": "4242",
                "processes/process_info/used_memory": "38912 MiB"}
        for path, value in want.items():
            self.assertEqual(g.findtext(path), value, path)
        self.assertEqual(root.findall("gpu")[1].findtext("ecc_errors/volatile/dram_uncorrectable"), "N/A")

    def test_xml_escapes_names(self):
        import json
        with open(os.path.join(FIXTURES, "nvml", "health.json")) as f:
            sc = json.load(f)
        sc["gpus"][0]["name"] = "GPU <&> \"x\""
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(sc, f)
        try:
            root = ET.fromstring(smi(["-q", "-x"], scenario=f.name).stdout)
            self.assertEqual(root.find("gpu").findtext("product_name"), "GPU <&> \"x\"")
        finally:
            os.unlink(f.name)


def netdata_python_d():
    """Where Debian's netdata-plugins-python keeps python.d (installed, or unpacked by
    scripts/install-deps.sh into its cache)."""
    for d in (os.environ.get("GM_NETDATA_PYTHON_D"), "/usr/lib/netdata/python.d",
              "/var/cache/gpumon-test/netdata-plugins-python/usr/lib/netdata/python.d"):
        if d and os.path.exists(os.path.join(d, "nvidia_smi.chart.py")):
            return d
    return None


class Netdata(unittest.TestCase):
    """netdata's python.d nvidia_smi collector, unmodified, runs `nvidia-smi -x -q` (and, in
    its loop mode, `nvidia-smi -x -q -l N`) from PATH: here a link to gpumon."""

    @classmethod
    def setUpClass(cls):
        cls.pyd = netdata_python_d()
        if not cls.pyd:
            raise AssertionError("netdata's python.d nvidia_smi collector is missing: run "
                                 "scripts/install-deps.sh test (it unpacks Debian's "
                                 "netdata-plugins-python)")
        # python.d reads PATH once, when its bases.collection is first imported: the link's
        # folder must be on PATH by then, and stay for the whole class.
        cls.tmp = tempfile.TemporaryDirectory()
        os.symlink(os.path.abspath(GPUMON), os.path.join(cls.tmp.name, "nvidia-smi"))
        cls.saved = dict(os.environ)
        os.environ.update(env(nvml=FAKE_NVML, scenario="health.json"))
        os.environ["PATH"] = cls.tmp.name + ":" + os.environ["PATH"]
        sys.path.insert(0, os.path.join(cls.pyd, "python_modules"))
        spec = importlib.util.spec_from_file_location("nvidia_smi", os.path.join(cls.pyd, "nvidia_smi.chart.py"))
        cls.mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(cls.mod)

    @classmethod
    def tearDownClass(cls):
        os.environ.clear()
        os.environ.update(cls.saved)
        sys.path.remove(os.path.join(cls.pyd, "python_modules"))
        cls.tmp.cleanup()

    def service(self, loop):
        conf = {"loop_mode": loop, "poll_seconds": 1, "update_every": 1, "job_name": "",
                "override_name": None, "priority": 70000, "chart_cleanup": 10, "penalty": True}
        s = self.mod.Service(configuration=conf, name="nvidia_smi")
        self.assertTrue(s.check())
        with contextlib.redirect_stdout(io.StringIO()):  # the chart definitions netdata reads
            s.create()
        return s

    def test_collector_reads_gpumon(self):
        s = self.service(loop=False)
        self.assertIn("gpu0_gpu_utilization", s.charts)
        self.assertIn("gpu1_temperature", s.charts)
        data = s.get_data()
        want = {"gpu0_gpu_util": "87", "gpu0_memory_util": "42", "gpu0_encoder_util": "3",
                "gpu0_decoder_util": "7", "gpu0_fb_memory_used": "40960", "gpu0_fb_memory_free": "40065",
                "gpu0_gpu_temp": "64", "gpu0_graphics_clock": "1755", "gpu0_sm_clock": "1755",
                "gpu0_mem_clock": "2619", "gpu0_video_clock": "1545", "gpu0_rx_util": "654321",
                "gpu0_tx_util": "123456", "gpu0_fan_speed": "35",
                "gpu0_process_mem_4242": 38912, "gpu1_gpu_util": "3"}
        for k, v in want.items():
            self.assertEqual(data.get(k), v, k)
        # As with nvidia-smi 535 and later, power sits under gpu_power_readings, which this
        # collector (written for older drivers) does not read: no power value or state, no error.
        self.assertNotIn("gpu0_power_draw", data)
        self.assertEqual(data.get("gpu0_power_state_p0"), 0)

    def test_loop_mode(self):
        s = self.service(loop=True)
        try:
            data = None
            deadline = time.time() + 10
            while time.time() < deadline and not data:
                data = s.get_data()
                time.sleep(0.1)
            self.assertEqual(data and data.get("gpu0_gpu_util"), "87")
        finally:
            s.poller.shutdown()
            s.poller.smi.kill()



def capture_580(name):
    return os.path.join(SMI_FIXTURES, "real-h200-580-" + name)


def xml_leaves(text):
    """Leaf elements of an nvidia_smi_log as (path, n-th occurrence) -> text, in document order."""
    out, seen = [], {}

    def walk(e, path):
        kids = list(e)
        if not kids:
            key = (path + "/" + e.tag, seen.get(path + "/" + e.tag, 0) + 1)
            seen[key[0]] = key[1]
            out.append((key, (e.text or "").strip()))
        for k in kids:
            walk(k, path + "/" + e.tag)
    walk(ET.fromstring(text), "")
    return out


def q_keyed(text):
    """The keyed lines of nvidia-smi -q ("Label : value") as ((section/.../label, n-th), value),
    in order; section lines (no colon) give the path by their indentation (4 spaces a level)."""
    out, stack, seen = [], [], {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("="):
            continue
        depth = (len(line) - len(line.lstrip(" "))) // 4
        m = re.match(r"^\s*(.*?)\s*: (.*)$", line) if " : " in line else None
        if not m:
            stack = stack[:depth] + [line.strip()]
            continue
        stack = stack[:depth]
        key = "/".join(stack + [m.group(1)])
        seen[key] = seen.get(key, 0) + 1
        out.append(((key, seen[key]), m.group(2).strip()))
    return out


class Driver580(unittest.TestCase):
    """A fake H200 on driver 580.159.04 (h200-580.json) against nvidia-smi 580's own outputs on
    that board (tests/fixtures/smi/real-h200-580-*): the 580 profile applies."""
    # Fields that move by themselves between two runs: only the time of the query.
    MOVING = {"timestamp": "the time of the query"}

    def run580(self, args):
        return smi(args, scenario="h200-580.json")

    def fields(self):
        with open(capture_580("help-query-gpu.txt")) as f:
            return exporter_extract(f.read())

    def test_all_214_fields_equal_the_capture(self):
        fields = self.fields()
        self.assertEqual(len(fields), 214)
        p = self.run580(["--query-gpu=" + ",".join(fields), "--format=csv"])
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(capture_580("query-gpu-all.csv")) as f:
            want = [r.split(", ") for r in f.read().splitlines()]
        got = [r.split(", ") for r in p.stdout.splitlines()]
        self.assertEqual(got[0], want[0])
        differ = {h: (w, g) for h, w, g in zip(want[0], want[1], got[1]) if w != g}
        self.assertEqual(set(differ), set(self.MOVING), differ)

    def test_help_lists_this_drivers_fields(self):
        p = self.run580(["--help-query-gpu"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(exporter_extract(p.stdout), self.fields())

    def test_a_field_580_lacks_is_refused(self):
        p = self.run580(["--query-gpu=edpp_multiplier", "--format=csv"])
        self.assertEqual(p.returncode, 2)
        self.assertIn('Field "edpp_multiplier" is not a valid field to query.', p.stderr)

    def test_590_does_not_know_the_580_fields(self):
        p = smi(["--query-gpu=remapped_rows.correctable_inactive", "--format=csv"],
                scenario="h100-590.json")
        self.assertEqual(p.returncode, 2)

    def test_version_prints_nvml_as_580_does(self):
        p = self.run580(["--version"])
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(capture_580("version.txt")) as f:
            self.assertEqual(p.stdout, f.read())

    def test_xml_with_display_refused_as_580_does(self):
        p = self.run580(["-q", "-x", "-d", "MEMORY"])
        self.assertEqual(p.returncode, 2)
        with open(capture_580("q-x-d-MEMORY.txt")) as f:
            self.assertEqual(p.stdout, f.read())

    def test_summary_disp_a_from_display_active(self):
        p = self.run580([])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("|   0  NVIDIA H200                    On  |   00000000:00:06.0 Off |", p.stdout)

    def test_xml_elements_against_the_capture(self):
        """Element by element, in order: the values gpumon prints equal the capture's except
        readings that moved; the elements gpumon does not print yet are listed (the gaps)."""
        p = self.run580(["-q", "-x"])
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(capture_580("q-x.xml")) as f:
            want = xml_leaves(f.read())
        got = xml_leaves(p.stdout)
        w, g = dict(want), dict(got)
        # Readings of the XML's own second (it was taken apart from the CSV) and the clock.
        moving = {"timestamp", "graphics_clock", "sm_clock", "average_power_draw",
                  "instant_power_draw", "power_draw", "replay_counter", "rx_util", "tx_util",
                  "gpu_temp", "gpu_temp_tlimit", "memory_temp"}
        differ = sorted(k for k in g if k in w and w[k] != g[k]
                        and k[0].rsplit("/", 1)[1] not in moving)
        missing = [k for k, _ in want if k not in g]
        extra = [k for k, _ in got if k not in w]
        sys.stderr.write("\n-q -x against 580: %d of nvidia-smi's %d elements printed, %d differ "
                         "(moving readings aside), %d missing:\n  %s\n" % (
                             len(w) - len(missing), len(w), len(differ), len(missing),
                             "\n  ".join("%s[%d]" % k for k in missing)))
        for k in differ:
            sys.stderr.write("  differs: %s[%d]: nvidia-smi %r, gpumon %r\n" % (k + (w[k], g[k])))
        # nvidia-smi 580's -q prints N/A for these platform values where its own --query-gpu (and
        # gpumon, from nvmlDeviceGetPlatformInfo) print them: 0, 0, 1, Direct Connected, 0x0...
        platform = "/nvidia_smi_log/gpu/platformInfo/"
        self.assertEqual(differ, [(platform + f, 1) for f in (
            "gpu_fabric_guid", "host_id", "peer_type", "slot_number", "tray_index")])
        # gpumon's element 580 does not print (it has no power_draw beside the average and
        # instant ones).
        self.assertEqual(extra, [("/nvidia_smi_log/gpu/gpu_power_readings/power_draw", 1)])
        # The ratchet: what is printed only grows.
        self.assertGreaterEqual(len(w) - len(missing), 432)
        # The common elements come in the capture's order.
        order_w = [k for k, _ in want if k in g]
        order_g = [k for k, _ in got if k in w]
        order_g = [k for k in order_g if k in set(order_w)]
        self.assertEqual(order_g, order_w)

    def test_q_text_against_the_capture(self):
        """-q line by line: every keyed line gpumon prints has the capture's key, in its order,
        and its value but for readings that moved; the lines it lacks are listed (the gaps)."""
        p = self.run580(["-q"])
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(capture_580("q.txt")) as f:
            want = q_keyed(f.read())
        got = q_keyed(p.stdout)
        w, g = dict(want), dict(got)
        gpu = "GPU 00000000:00:06.0/"
        # Readings of the capture's own second, and the fake's idle values (the CSV's second).
        moving = {
            "Timestamp": "the time of the query",
            gpu + "PCI/Replays Since Reset": "the capture's board replayed between its runs",
            gpu + "PCI/Tx Throughput": "PCIe traffic of that second",
            gpu + "PCI/Rx Throughput": "PCIe traffic of that second",
            gpu + "Temperature/GPU Current Temp": "temperature of that second",
            gpu + "Temperature/GPU T.Limit Temp": "temperature of that second",
            gpu + "Temperature/Memory Current Temp": "temperature of that second",
            gpu + "GPU Power Readings/Average Power Draw": "power of that second",
            gpu + "GPU Power Readings/Instantaneous Power Draw": "power of that second",
            gpu + "GPU Memory Power Readings/Average Power Draw": "power of that second",
            gpu + "Clocks/Graphics": "the idle clock moves",
            gpu + "Clocks/SM": "the idle clock moves",
        }
        differ = sorted(k[0] for k in g if k in w and w[k] != g[k] and k[0] not in moving)
        missing = [k for k, _ in want if k not in g]
        extra = [k for k, _ in got if k not in w]
        sys.stderr.write("\n-q against 580: %d of nvidia-smi's %d keyed lines printed, %d differ "
                         "(moving readings aside), %d missing:\n  %s\n" % (
                             len(w) - len(missing), len(w), len(differ), len(missing),
                             "\n  ".join("%s[%d]" % k for k in missing)))
        # As in -q -x: nvidia-smi 580's -q prints N/A for these where its --query-gpu prints
        # nvmlDeviceGetPlatformInfo's values (gpumon prints the values).
        self.assertEqual(differ, sorted(gpu + "Platform Info/" + f for f in (
            "Slot Number", "Tray Index", "Host ID", "Peer Type", "GPU Fabric GUID")))
        self.assertEqual(extra, [(gpu + "GPU Power Readings/Power Draw", 1)])
        self.assertGreaterEqual(len(w) - len(missing), 201)
        order_g = [k for k, _ in got if k in w]
        self.assertEqual(order_g, [k for k, _ in want if k in g])


class ExtraReadings(unittest.TestCase):
    """What -q -x prints from the readings the H200 does not support, on a board that answers
    them all (the words for values no capture shows are NVML's names)."""
    SCENARIO = {"gpus": [{
        "name": "NVIDIA GB200", "temp": 40, "pstate": 0, "bbx_flush_time": 1700000000,
        "bbx_flush_duration_us": 1500, "host_vgpu_mode": 1, "vgpu_heterogeneous_mode": 0,
        "bridge_chips": [{"type": 1, "fw": 42}], "pcie_atomics_out": 127, "pcie_atomics_in": 3,
        "fbc_sessions": 2, "fbc_fps": 30, "fbc_latency": 900, "dram_encryption": 1,
        "dram_encryption_pending": 0, "repair_channel_pending": 1, "repair_tpc_pending": 0,
        "unrepairable_memory": 1, "memory_power_avg_mw": 30000, "memory_power_instant_mw": 31000,
        "module_power_avg_mw": 900000, "module_power_instant_mw": 910000,
        "module_power_limit_mw": 2700000, "module_power_req_limit_mw": 2600000,
        "module_power_default_limit_mw": 2700000, "module_power_min_limit_mw": 1000000,
        "module_power_max_limit_mw": 2700000, "power_smoothing": 1,
        "power_profiles_requested": 33, "power_profiles_enforced": 0, "auto_boost": 1,
        "auto_boost_default": 0, "capabilities": 1, "board_part_number": "699-2G548-0200-000",
        "gsp_firmware_version": "590.48.01", "pdi": "0x00000000000000ff"}]}

    def test_values_and_words(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(self.SCENARIO, f)
        try:
            p = smi(["-q", "-x"], scenario=f.name)
        finally:
            os.unlink(f.name)
        self.assertEqual(p.returncode, 0, p.stderr)
        g = dict(xml_leaves(p.stdout))
        gpu = "/nvidia_smi_log/gpu/"
        want = {
            "pdi": "0x00000000000000ff", "board_part_number": "699-2G548-0200-000",
            "gsp_firmware_version": "590.48.01",
            "inforom_bbx_flush/latest_timestamp": "1700000000",
            "inforom_bbx_flush/latest_duration": "1500 us",
            "gpu_virtualization_mode/host_vgpu_mode": "SR-IOV",
            "gpu_virtualization_mode/vgpu_heterogeneous_mode": "Disabled",
            "pci/pci_bridge_chip/bridge_chip_type": "BR04",
            "pci/pci_bridge_chip/bridge_chip_fw": "42",
            "pci/atomic_caps_outbound": "127", "pci/atomic_caps_inbound": "3",
            "fbc_stats/session_count": "2", "fbc_stats/average_fps": "30",
            "fbc_stats/average_latency": "900",
            "dram_encryption_mode/current_dram_encryption": "Enabled",
            "dram_encryption_mode/pending_dram_encryption": "Disabled",
            "ecc_errors/channel_repair_pending": "Yes", "ecc_errors/tpc_repair_pending": "No",
            "ecc_errors/unrepairable_memory": "Yes",
            "gpu_memory_power_readings/average_power_draw": "30.00 W",
            "gpu_memory_power_readings/instant_power_draw": "31.00 W",
            "module_power_readings/power_state": "P0",
            "module_power_readings/average_power_draw": "900.00 W",
            "module_power_readings/instant_power_draw": "910.00 W",
            "module_power_readings/current_power_limit": "2700.00 W",
            "module_power_readings/requested_power_limit": "2600.00 W",
            "module_power_readings/default_power_limit": "2700.00 W",
            "module_power_readings/min_power_limit": "1000.00 W",
            "module_power_readings/max_power_limit": "2700.00 W",
            "power_smoothing": "Enabled",
            "power_profiles/power_profile_requested_profiles": "0, 5",
            "power_profiles/power_profile_enforced_profiles": "None",
            "clock_policy/auto_boost": "On", "clock_policy/auto_boost_default": "Off",
            "capabilities/egm": "enabled",
        }
        got = {k: g.get((gpu + k, 1)) for k in want}
        self.assertEqual(got, want)

    def test_display_types_select_the_new_sections(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(self.SCENARIO, f)
        try:
            p = smi(["-q", "-d", "FBC_STATS,POWER_PROFILES"], scenario=f.name)
        finally:
            os.unlink(f.name)
        self.assertEqual(p.returncode, 0, p.stderr)
        keys = [k for (k, _), _ in q_keyed(p.stdout) if "/" in k]
        self.assertEqual([k.split("/", 1)[1] for k in keys], [
            "FBC Stats/Active Sessions", "FBC Stats/Average FPS", "FBC Stats/Average Latency",
            "Workload Power Profiles/Requested Profiles",
            "Workload Power Profiles/Enforced Profiles"])


class MigList(unittest.TestCase):
    def test_list_shows_mig_devices_under_their_gpu(self):
        p = smi(["-L"], scenario="h100-mig.json")
        self.assertEqual(p.returncode, 0, p.stderr)
        # nvidia-smi's columns: "MIG <profile>" padded to 15, the device number to 2.
        self.assertEqual(p.stdout.splitlines(), [
            "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-6a3c1e52-7d41-4c8e-9b2a-5f0d3e8c1a47)",
            "  MIG 3g.40gb     Device  0: (UUID: MIG-0d2c6f9e-4a7b-5c3e-8f1d-2b9a6e4c7d10)",
            "  MIG 1g.10gb     Device  1: (UUID: MIG-7e5b3a1c-9d2f-5e4a-b6c8-0f1e2d3c4b5a)",
            "  MIG 1g.10gb     Device  2: (UUID: MIG-a1b2c3d4-e5f6-5a7b-8c9d-0e1f2a3b4c5d)",
            "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-9f8e7d6c-5b4a-4c3d-8e2f-1a0b9c8d7e6f)",
        ])


if __name__ == "__main__":
    unittest.main()
