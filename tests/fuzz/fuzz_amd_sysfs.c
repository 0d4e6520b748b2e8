/* fuzz_amd_sysfs.c - the text of amdgpu's sysfs files as the amdgpu provider parses it
 * (collect/sysfs.c): pp_dpm_sclk / pp_dpm_mclk levels and PCIe link speeds. */
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
    free(text);
    return 0;
}
