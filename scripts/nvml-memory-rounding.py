#!/usr/bin/env python3
"""Prints NVML's memory figures in exact MiB next to what nvidia-smi prints for them, to tell
how nvidia-smi rounds bytes to MiB. Needs libnvidia-ml.so.1 and nvidia-smi."""
import ctypes
import subprocess


class MemoryV2(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("total", ctypes.c_ulonglong),
                ("reserved", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                ("used", ctypes.c_ulonglong)]


n = ctypes.CDLL("libnvidia-ml.so.1")
assert n.nvmlInit_v2() == 0
count = ctypes.c_uint()
n.nvmlDeviceGetCount_v2(ctypes.byref(count))
for i in range(count.value):
    h = ctypes.c_void_p()
    n.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(h))
    m = MemoryV2(version=ctypes.sizeof(MemoryV2) | (2 << 24))
    assert n.nvmlDeviceGetMemoryInfo_v2(h, ctypes.byref(m)) == 0
    smi = subprocess.run(["nvidia-smi", "-i", str(i), "--query-gpu=memory.total,memory.used,"
                          "memory.free,memory.reserved", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True).stdout.strip()
    exact = ", ".join("%.4f" % (getattr(m, f) / 1048576) for f in ("total", "used", "free", "reserved"))
    print("GPU %d NVML MiB (total, used, free, reserved): %s | nvidia-smi: %s" % (i, exact, smi))
n.nvmlShutdown()
