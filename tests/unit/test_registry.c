/* test_registry.c - collect/registry: the one list of providers. gm_provider_find takes exact
 * names, gm_provider_canonical what people write (any case, "auto"), the automatic order is
 * NVML then nvidia-smi and never the simulator, and gm_provider_names lists them all. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <stdio.h>
#include <string.h>

#include "collect/provider.h"
#include "collect/registry.h"

static const gm_provider *const every[] = {
    &gm_provider_nvml,   &gm_provider_smi,   &gm_provider_amd_smi, &gm_provider_rocm_smi,
    &gm_provider_amdgpu, &gm_provider_nvtop, &gm_provider_sim};

static void test_find(void **state)
{
    (void)state;
    assert_ptr_equal(gm_provider_find("nvml"), &gm_provider_nvml);
    assert_ptr_equal(gm_provider_find("nvidia-smi"), &gm_provider_smi);
    assert_ptr_equal(gm_provider_find("sim"), &gm_provider_sim);
    assert_ptr_equal(gm_provider_find("rocm_smi"), &gm_provider_rocm_smi);
    assert_ptr_equal(gm_provider_find("amd_smi"), &gm_provider_amd_smi);
    /* Exact names only: callers canonicalise first. */
    static const char *const unknown[] = {"NVML",       "auto",  "none",      "",    "smi",
                                          "nvidia_smi", "nvml ", "simulator", "rocm"};
    for (size_t i = 0; i < sizeof unknown / sizeof *unknown; i++)
        if (gm_provider_find(unknown[i]))
            fail_msg("\"%s\" found", unknown[i]);
}

static void test_providers_are_whole(void **state)
{
    (void)state;
    assert_string_equal(gm_provider_nvml.name, "nvml");
    assert_string_equal(gm_provider_smi.name, "nvidia-smi");
    assert_string_equal(gm_provider_sim.name, "sim");
    for (size_t i = 0; i < sizeof every / sizeof *every; i++) {
        assert_non_null(every[i]->open);
        assert_non_null(every[i]->close);
        assert_non_null(every[i]->sample);
        /* The names fit the snapshot's provider field. */
        check_lt(strlen(every[i]->name), sizeof((gm_snapshot *)0)->provider);
        assert_ptr_equal(gm_provider_find(every[i]->name), every[i]);
    }
    /* P2P: NVML and the simulator can tell, nvidia-smi cannot. */
    assert_non_null(gm_provider_nvml.p2p);
    assert_non_null(gm_provider_sim.p2p);
    assert_null(gm_provider_smi.p2p);
}

static void test_canonical(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"nvml", "nvml"},
        {"NVML", "nvml"},
        {"Nvml", "nvml"},
        {"nvidia-smi", "nvidia-smi"},
        {"NVIDIA-SMI", "nvidia-smi"},
        {"Nvidia-Smi", "nvidia-smi"},
        {"sim", "sim"},
        {"SIM", "sim"},
        {"auto", "auto"},
        {"AUTO", "auto"},
        {"Auto", "auto"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *got = gm_provider_canonical(cases[i].in);
        if (!got || strcmp(got, cases[i].out) != 0)
            fail_msg("\"%s\": \"%s\", want \"%s\"", cases[i].in, got ? got : "(null)",
                     cases[i].out);
    }
    /* The canonical name is the provider's own string. */
    assert_ptr_equal(gm_provider_canonical("NVML"), gm_provider_nvml.name);
    assert_ptr_equal(gm_provider_canonical("Nvidia-SMI"), gm_provider_smi.name);
    static const char *const unknown[] = {"",      "none",  "smi",         "nvidia_smi",
                                          " nvml", "nvml ", "autom",       "au",
                                          "rocm",  "dcgm",  "nvidia-smi2", "simulate"};
    for (size_t i = 0; i < sizeof unknown / sizeof *unknown; i++)
        if (gm_provider_canonical(unknown[i]))
            fail_msg("\"%s\" is a provider", unknown[i]);
    assert_null(gm_provider_canonical(NULL));
}

static void test_auto_order(void **state)
{
    (void)state;
    /* The richest source first, then the fallback, NVIDIA's before AMD's; the simulator is
     * only ever asked for. */
    assert_ptr_equal(gm_provider_auto_order[0], &gm_provider_nvml);
    assert_ptr_equal(gm_provider_auto_order[1], &gm_provider_smi);
    /* AMD's libraries, the newer first, before the amdgpu sysfs reader: the first that opens
     * reads AMD's GPUs. */
    assert_ptr_equal(gm_provider_auto_order[2], &gm_provider_amd_smi);
    assert_ptr_equal(gm_provider_auto_order[3], &gm_provider_rocm_smi);
    assert_ptr_equal(gm_provider_auto_order[4], &gm_provider_amdgpu);
    assert_ptr_equal(gm_provider_auto_order[5], &gm_provider_nvtop);
    assert_null(gm_provider_auto_order[6]);
    for (size_t i = 0; gm_provider_auto_order[i]; i++)
        assert_ptr_not_equal(gm_provider_auto_order[i], &gm_provider_sim);
}

static void test_names_for_messages(void **state)
{
    (void)state;
    const char *names = gm_provider_names();
    assert_string_equal(names, "nvml, nvidia-smi, amd_smi, rocm_smi, amdgpu, nvtop, sim, auto");
    /* Every name it lists is accepted, and every provider is listed. */
    char copy[128];
    snprintf(copy, sizeof copy, "%s", names);
    size_t listed = 0;
    for (char *save = NULL, *tok = strtok_r(copy, ", ", &save); tok;
         tok = strtok_r(NULL, ", ", &save)) {
        const char *c = gm_provider_canonical(tok);
        assert_non_null(c);
        assert_string_equal(c, tok);
        listed++;
    }
    assert_int_equal(listed, sizeof every / sizeof *every + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find),
        cmocka_unit_test(test_providers_are_whole),
        cmocka_unit_test(test_canonical),
        cmocka_unit_test(test_auto_order),
        cmocka_unit_test(test_names_for_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
