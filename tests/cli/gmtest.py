"""Shared helpers for tests that run the real gpumon binary against the fakes."""
import json
import os
import shutil
import subprocess
import tempfile

BUILD = os.environ.get("GM_BUILD_DIR") or os.path.join(os.path.dirname(__file__), "..", "..", "build")
SOURCE = os.environ.get("GM_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
GPUMON = os.path.join(BUILD, "gpumon")
FAKE_NVML = os.environ.get("GM_FAKE_NVML") or os.path.join(BUILD, "tests/fakes/nvml-current/libnvidia-ml.so.1")
FAKE_NVML_OLD = os.environ.get("GM_FAKE_NVML_OLD") or os.path.join(BUILD, "tests/fakes/nvml-old/libnvidia-ml.so.1")
FAKE_RSMI = os.environ.get("GM_FAKE_RSMI") or os.path.join(BUILD, "tests/fakes/rocm-smi-current/librocm_smi64.so.1")
FAKE_AMDSMI = os.environ.get("GM_FAKE_AMDSMI") or os.path.join(BUILD, "tests/fakes/amd-smi-current/libamd_smi.so")
FAKE_AMDSMI_OTHER = os.environ.get("GM_FAKE_AMDSMI_OTHER") or os.path.join(
    BUILD, "tests/fakes/amd-smi-other/libamd_smi.so")
FIXTURES = os.environ.get("GM_FIXTURES") or os.path.join(SOURCE, "tests", "fixtures")
FAKE_SMI_DIR = os.path.join(SOURCE, "tests", "fakes")
MISSING_LIB = "/nonexistent/libnvidia-ml.so.1"

# A PATH without any real nvidia-smi, so "auto" falls through deterministically.
BASE_PATH = "/usr/local/sbin:/usr/sbin:/sbin:/bin:/usr/bin"


def env(nvml=None, scenario=None, smi=False, smi_mode=None, extra=None):
    """Environment for a gpumon run: which fake NVML (or none), whether the fake nvidia-smi is
    on PATH, and in which mode."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("GPU_MONITOR_") and not k.startswith("GM_FAKE_")}
    e["PATH"] = (FAKE_SMI_DIR + ":" if smi else "") + BASE_PATH
    e["GPU_MONITOR_NVML_LIB"] = nvml or MISSING_LIB
    # No AMD GPU unless a test writes a fake tree: the amdgpu provider never sees this machine's.
    e["GPU_MONITOR_SYSFS_ROOT"] = "/nonexistent-gm-sysfs"
    # Nor AMD's SMI library, where this machine has it installed.
    e["GPU_MONITOR_AMD_SMI_LIB"] = "/nonexistent/libamd_smi.so"
    e["GPU_MONITOR_ROCM_SMI_LIB"] = "/nonexistent/librocm_smi64.so.1"
    # Nor an nvtop this machine may have installed.
    e["GPU_MONITOR_NVTOP"] = "/nonexistent-gm-nvtop"
    if scenario:
        e["GM_FAKE_NVML_SCENARIO"] = scenario if os.path.isabs(scenario) else os.path.join(FIXTURES, "nvml", scenario)
    if smi_mode:
        e["GM_FAKE_SMI_MODE"] = smi_mode
    e.update(extra or {})
    return e


def run(args, timeout=30, **kw):
    """Runs gpumon with args; returns CompletedProcess with text output."""
    return subprocess.run([GPUMON] + list(args), capture_output=True, text=True, timeout=timeout, **kw)


def run_json(args, **kw):
    p = run(list(args) + ["--format", "json"], **kw)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def copy_for_others(path, tmp, mode=0o755):
    """A copy of path in tmp that another user can read and run: tests that drop root run
    copies, as the build may sit where others cannot reach it (a clone in /root, umask 077)."""
    dst = os.path.join(tmp, os.path.basename(path))
    shutil.copyfile(path, dst)
    os.chmod(dst, mode)
    return dst


def scenario_file(obj):
    """Writes a scenario dict to a temporary JSON file and returns its path."""
    f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump(obj, f)
    f.close()
    return f.name
