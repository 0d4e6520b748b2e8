/* sysfs.h - reads of /sys (and of /proc where it is about devices) under one root, so that tests
 * point the readers at a fake tree: $GPU_MONITOR_SYSFS_ROOT when set, else "/". */
#ifndef GM_SYSFS_H
#define GM_SYSFS_H

#include "gpumon.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The root every device path is read under: $GPU_MONITOR_SYSFS_ROOT, "/" when unset or empty.
 * Read at each call (cheap), so a test may change it between collectors. */
const char *gm_sysfs_root(void);

/* Writes root + path (path absolute, "/sys/class/drm") into buf; false when it does not fit. */
bool gm_sysfs_path(char *buf, size_t cap, const char *path);

/* Reads the small file at the already-rooted path into buf (NUL-terminated, trailing
 * whitespace removed). GM_ENOENT when it is absent or unreadable, GM_EIO on a read error. */
int gm_sysfs_read(const char *path, char *buf, size_t cap);

/* Reads dir/name as a decimal or 0x-hex unsigned integer; false when absent or malformed. */
bool gm_sysfs_read_u64(const char *dir, const char *name, uint64_t *out);

/* Reads dir/name as a string (trailing whitespace removed); false when absent or empty. */
bool gm_sysfs_read_str(const char *dir, const char *name, char *buf, size_t cap);

/* amdgpu's pp_dpm_sclk / pp_dpm_mclk text ("0: 500Mhz\n1: 2100Mhz *\n"): the highest level
 * into *max_mhz and the one marked '*' into *cur_mhz (each 0 when not found). false when no
 * level parses. */
bool gm_sysfs_parse_dpm(const char *text, unsigned *max_mhz, unsigned *cur_mhz);

/* A PCI link speed as sysfs writes it ("16.0 GT/s PCIe", "8 GT/s"): its generation (1..6),
 * 0 when unknown. */
unsigned gm_sysfs_pcie_gen(const char *text);

/* What a DRM client's /proc/PID/fdinfo/FD says (the kernel's "DRM client usage stats"). */
typedef struct gm_drm_fdinfo {
    bool amdgpu;             /* drm-driver is amdgpu */
    char pdev[GM_BUSID_LEN]; /* drm-pdev, the GPU's PCI bus id; "" when absent */
    bool have_id;            /* drm-client-id given, in id */
    bool have_vram;          /* drm-memory-vram (else drm-resident-vram) given, in vram_bytes */
    bool have_busy;          /* drm-engine-gfx or -compute given, their sum in busy_ns */
    bool gfx;                /* the gfx engine ran */
    uint64_t id, vram_bytes, busy_ns;
} gm_drm_fdinfo;

/* Parses fdinfo text ("key:\tvalue" lines; sizes with an optional KiB/MiB/GiB unit, engine
 * times in ns) into out. Unknown keys and malformed values are skipped. */
void gm_sysfs_parse_fdinfo(const char *text, gm_drm_fdinfo *out);

/* Whether the amdgpu driver binds a card under the root (a card's device/uevent says
 * DRIVER=amdgpu): AMD's SMI libraries are loaded only where it does. */
bool gm_sysfs_amdgpu_bound(void);

#endif
