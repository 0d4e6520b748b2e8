#!/usr/bin/env python3
"""Writes a fake /sys tree holding the amdgpu driver's files of AMD GPUs, for
GPU_MONITOR_SYSFS_ROOT (tests/fakes/README.md).

    fake_amd_sysfs.py ROOT [--cards mi300x,rx580] [--nvidia] [--procs]

File names, units and which files a board has follow the kernel's amdgpu documentation
("GPU Power/Thermal Controls and Monitoring", "Misc AMDGPU driver information"): hwmon
temperatures in millidegrees C (temp2/temp3, junction and mem, on SOC15 boards only), power in
microwatts (power1_input on MI300-class boards, power1_average on older ones), clocks in Hz,
pwm1 0..255. An MI300X has no edge sensor and no fan (AMD's device-metrics-exporter lists
the edge temperature for MI2xx only); a Radeon RX 580 (Polaris, before SOC15) has only the
edge sensor, a fan, and none of the FRU files (product name, number, serial) or unique_id."""
import argparse
import os

CARDS = {
    "mi300x": {
        "slot": "0000:83:00.0",
        "device": "0x74a1",
        "files": {
            "product_name": "AMD Instinct MI300X OAM",
            "product_number": "102-G30211-00",
            "serial_number": "692251001124",
            "unique_id": "5f2c7a31b4e0d001",
            "vbios_version": "113-M3000100-102",
            "gpu_busy_percent": "37",
            "mem_busy_percent": "12",
            "mem_info_vram_total": str(196592 * 1048576),
            "mem_info_vram_used": str(81920 * 1048576),
            "pp_dpm_sclk": "0: 500Mhz\n1: 1420Mhz *\n2: 2100Mhz\n",
            "pp_dpm_mclk": "0: 900Mhz\n1: 1300Mhz *\n",
            "current_link_speed": "32.0 GT/s PCIe",
            "max_link_speed": "32.0 GT/s PCIe",
            "current_link_width": "16",
            "max_link_width": "16",
            "current_compute_partition": "SPX",
            "ras/umc_err_count": "ue: 0\nce: 2\n",
            "ras/gfx_err_count": "ue: 1\nce: 0\n",
        },
        "hwmon": {
            "name": "amdgpu",
            "temp2_input": "52000",
            "temp2_label": "junction",
            "temp3_input": "44000",
            "temp3_label": "mem",
            "power1_input": "321000000",
            "power1_cap": "750000000",
            "power1_cap_max": "750000000",
            "power1_cap_min": "0",
            "freq1_input": "1420000000",
            "freq1_label": "sclk",
            "freq2_input": "1300000000",
            "freq2_label": "mclk",
        },
    },
    "rx580": {
        "slot": "0000:03:00.0",
        "device": "0x67df",
        "files": {
            "vbios_version": "113-D0090100-102",
            "gpu_busy_percent": "5",
            "mem_busy_percent": "3",
            "mem_info_vram_total": str(8 * 1073741824),
            "mem_info_vram_used": str(1073741824),
            "pp_dpm_sclk": "0: 300Mhz *\n1: 600Mhz\n2: 900Mhz\n3: 1145Mhz\n4: 1215Mhz\n"
                           "5: 1257Mhz\n6: 1300Mhz\n7: 1340Mhz\n",
            "pp_dpm_mclk": "0: 300Mhz *\n1: 2000Mhz\n",
            "current_link_speed": "2.5 GT/s PCIe",
            "max_link_speed": "8.0 GT/s PCIe",
            "current_link_width": "16",
            "max_link_width": "16",
        },
        "hwmon": {
            "name": "amdgpu",
            "temp1_input": "41000",
            "temp1_label": "edge",
            "power1_average": "35000000",
            "power1_cap": "185000000",
            "power1_cap_max": "185000000",
            "pwm1": "102",
            "pwm1_max": "255",
            "fan1_input": "1200",
            "freq1_input": "300000000",
            "freq1_label": "sclk",
            "freq2_input": "300000000",
            "freq2_label": "mclk",
        },
    },
}


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text if text.endswith("\n") else text + "\n")


def card(root, n, vendor, device, driver, slot, files, hwmon):
    dev = os.path.join(root, "sys/class/drm", "card%d" % n, "device")
    write(os.path.join(dev, "vendor"), vendor)
    write(os.path.join(dev, "device"), device)
    write(os.path.join(dev, "uevent"),
          "DRIVER=%s\nPCI_CLASS=30000\nPCI_ID=%s:%s\nPCI_SLOT_NAME=%s\n"
          % (driver, vendor[2:].upper(), device[2:].upper(), slot))
    for name, text in files.items():
        write(os.path.join(dev, name), text)
    for name, text in hwmon.items():
        write(os.path.join(dev, "hwmon", "hwmon%d" % (n + 2), name), text)
    # A connector of the card: not a GPU of its own.
    os.makedirs(os.path.join(root, "sys/class/drm", "card%d-DP-1" % n), exist_ok=True)


# DRM clients in ROOT/proc (--procs), as the kernel's "DRM client usage stats" lays out
# /proc/PID/fdinfo/FD of an amdgpu render node: (pid, fd, device, client id, pdev, VRAM KiB,
# gfx ns, compute ns). PID 5001 holds client 7 of the MI300X twice (a dup'ed fd: counted
# once) and a client of the RX 580; 5002 computes on the MI300X; 5003's only fd is /dev/null.
PROCS = [
    (5001, 3, "renderD128", 7, "0000:83:00.0", 8388608, 1000000000, 0),
    (5001, 4, "renderD128", 7, "0000:83:00.0", 8388608, 1000000000, 0),
    (5001, 5, "renderD129", 3, "0000:03:00.0", 262144, 0, 0),
    (5002, 3, "renderD128", 9, "0000:83:00.0", 1048576, 0, 500000000),
]


def procs(root):
    for pid, fd, dev, client, pdev, vram_kib, gfx, compute in PROCS:
        base = os.path.join(root, "proc", str(pid))
        os.makedirs(os.path.join(base, "fd"), exist_ok=True)
        os.symlink("/dev/dri/" + dev, os.path.join(base, "fd", str(fd)))
        write(os.path.join(base, "fdinfo", str(fd)),
              "pos:\t0\nflags:\t02100002\nmnt_id:\t26\nino:\t685\ndrm-driver:\tamdgpu\n"
              "drm-client-id:\t%d\ndrm-pdev:\t%s\npasid:\t32771\ndrm-memory-vram:\t%d KiB\n"
              "drm-memory-gtt:\t2048 KiB\ndrm-memory-cpu:\t0 KiB\namd-memory-visible-vram:\t0 KiB\n"
              "drm-engine-gfx:\t%d ns\ndrm-engine-compute:\t%d ns\ndrm-engine-dma:\t0 ns\n"
              % (client, pdev, vram_kib, gfx, compute))
    os.makedirs(os.path.join(root, "proc", "5003", "fd"), exist_ok=True)
    os.symlink("/dev/null", os.path.join(root, "proc", "5003", "fd", "0"))
    os.makedirs(os.path.join(root, "proc", "self"), exist_ok=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--cards", default="mi300x,rx580")
    ap.add_argument("--nvidia", action="store_true",
                    help="also an NVIDIA card (driver nvidia), which the amdgpu reader skips")
    ap.add_argument("--procs", action="store_true",
                    help="also processes holding DRM clients of the cards, under ROOT/proc")
    a = ap.parse_args()
    n = 0
    for name in [c for c in a.cards.split(",") if c]:
        c = CARDS[name]
        card(a.root, n, "0x1002", c["device"], "amdgpu", c["slot"], c["files"], c["hwmon"])
        n += 1
    if a.nvidia:
        card(a.root, n, "0x10de", "0x2330", "nvidia", "0000:1b:00.0", {}, {})
    os.makedirs(os.path.join(a.root, "sys/class/drm"), exist_ok=True)
    write(os.path.join(a.root, "sys/class/drm/version"), "drm 1.1.0 20060810")
    if a.procs:
        procs(a.root)


if __name__ == "__main__":
    main()
