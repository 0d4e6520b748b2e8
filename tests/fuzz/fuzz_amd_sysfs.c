/* fuzz_amd_sysfs.c - the text of amdgpu's sysfs files as the amdgpu provider parses it
 * (collect/sysfs.c): pp_dpm_sclk / pp_dpm_mclk levels, PCIe link speeds, and a DRM client's
 * /proc/PID/fdinfo. */
#include "collect/sysfs.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size);
    unsigned max = 7, cur = 7;
    bool ok = gm_sysfs_parse_dpm(text, &max, &cur);
    if (ok)
        FUZZ_CHECK(max > 0 && max < 1000000 && cur <= max);
    else
        FUZZ_CHECK(max == 0 && cur == 0);
    unsigned gen = gm_sysfs_pcie_gen(text);
    FUZZ_CHECK(gen <= 6);
    gm_drm_fdinfo c;
    gm_sysfs_parse_fdinfo(text, &c);
    FUZZ_CHECK(strlen(c.pdev) < sizeof c.pdev);
    FUZZ_CHECK(c.have_vram || c.vram_bytes == 0);
    FUZZ_CHECK(c.have_busy || (c.busy_ns == 0 && !c.gfx));
    free(text);
    return 0;
}
