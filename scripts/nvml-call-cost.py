#!/usr/bin/env python3
"""Times each NVML call gpumon makes per sample (wall and CPU, mean of 20 calls) on GPU 0 of a
real machine, to find what a sampling pass spends its time on. Needs only libnvidia-ml.so.1."""
import ctypes
import time

n = ctypes.CDLL("libnvidia-ml.so.1")
assert n.nvmlInit_v2() == 0
h = ctypes.c_void_p()
n.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h))
u, u2, ull = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_ulonglong()
buf = ctypes.create_string_buffer(256)
two = (ctypes.c_uint * 2)()
mem = (ctypes.c_ulonglong * 3)()
ref = ctypes.byref
calls = {
    "utilization": lambda: n.nvmlDeviceGetUtilizationRates(h, two),
    "encoder": lambda: n.nvmlDeviceGetEncoderUtilization(h, ref(u), ref(u2)),
    "memory": lambda: n.nvmlDeviceGetMemoryInfo(h, mem),
    "temperature": lambda: n.nvmlDeviceGetTemperature(h, 0, ref(u)),
    "power": lambda: n.nvmlDeviceGetPowerUsage(h, ref(u)),
    "power_limit": lambda: n.nvmlDeviceGetEnforcedPowerLimit(h, ref(u)),
    "energy": lambda: n.nvmlDeviceGetTotalEnergyConsumption(h, ref(ull)),
    "clock_sm": lambda: n.nvmlDeviceGetClockInfo(h, 1, ref(u)),
    "max_clock_sm": lambda: n.nvmlDeviceGetMaxClockInfo(h, 1, ref(u)),
    "fan": lambda: n.nvmlDeviceGetFanSpeed(h, ref(u)),
    "pcie_gen": lambda: n.nvmlDeviceGetCurrPcieLinkGeneration(h, ref(u)),
    "pcie_width_max": lambda: n.nvmlDeviceGetMaxPcieLinkWidth(h, ref(u)),
    "pcie_tx": lambda: n.nvmlDeviceGetPcieThroughput(h, 0, ref(u)),
    "pstate": lambda: n.nvmlDeviceGetPerformanceState(h, ref(u)),
    "throttle": lambda: n.nvmlDeviceGetCurrentClocksEventReasons(h, ref(ull)),
    "persistence": lambda: n.nvmlDeviceGetPersistenceMode(h, ref(u)),
    "compute_procs": lambda: n.nvmlDeviceGetComputeRunningProcesses_v3(h, ref(ctypes.c_uint(0)), None),
    "graphics_procs": lambda: n.nvmlDeviceGetGraphicsRunningProcesses_v3(h, ref(ctypes.c_uint(0)), None),
    "name": lambda: n.nvmlDeviceGetName(h, buf, 96),
}
for name, call in calls.items():
    w0, c0 = time.perf_counter(), time.process_time()
    for _ in range(20):
        call()
    wall = (time.perf_counter() - w0) / 20 * 1e3
    cpu = (time.process_time() - c0) / 20 * 1e3
    print(f"{name:15s} wall {wall:8.3f} ms  cpu {cpu:8.3f} ms")
n.nvmlShutdown()
