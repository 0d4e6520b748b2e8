"""nvml_floor.py - bench/nvml_floor.c's loop through pynvml: the 13 NVML calls the live GPU cards
need (utilization, memory, temperature, power, 3 clocks, pstate, PCIe generation and width,
compute processes, encoder, decoder), per GPU per sample, CPU per sample at 10 Hz.
Usage: python3 bench/nvml_floor.py [SAMPLES]   (needs pynvml and a real driver)"""
import sys
import time

import pynvml

samples = int(sys.argv[1]) if len(sys.argv) > 1 else 50
t0 = time.monotonic()
pynvml.nvmlInit()
devs = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
open_ms = (time.monotonic() - t0) * 1e3
cpu = wall = 0.0
nxt = time.monotonic()
for _ in range(samples):
    c0, w0 = time.thread_time(), time.monotonic()
    for d in devs:
        pynvml.nvmlDeviceGetUtilizationRates(d)
        pynvml.nvmlDeviceGetMemoryInfo(d)
        pynvml.nvmlDeviceGetTemperature(d, 0)
        pynvml.nvmlDeviceGetPowerUsage(d)
        for clk in (0, 1, 2):
            pynvml.nvmlDeviceGetClockInfo(d, clk)
        pynvml.nvmlDeviceGetPerformanceState(d)
        pynvml.nvmlDeviceGetCurrPcieLinkGeneration(d)
        pynvml.nvmlDeviceGetCurrPcieLinkWidth(d)
        pynvml.nvmlDeviceGetComputeRunningProcesses(d)
        pynvml.nvmlDeviceGetEncoderUtilization(d)
        pynvml.nvmlDeviceGetDecoderUtilization(d)
    cpu += time.thread_time() - c0
    wall += time.monotonic() - w0
    nxt += 0.1
    time.sleep(max(0.0, nxt - time.monotonic()))
n = len(devs)
print("pynvml floor: %d samples at 10 Hz, %d GPU(s), 13 calls per GPU: cpu %.1f us/sample "
      "(%.1f us/call), wall %.1f us/sample; init+open %.1f ms"
      % (samples, n, cpu / samples * 1e6, cpu / samples / (13 * n) * 1e6, wall / samples * 1e6, open_ms))
