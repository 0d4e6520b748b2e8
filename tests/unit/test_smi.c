/* test_smi.c - collect/smi: the nvidia-smi provider driven through the fake nvidia-smi on PATH
 * (timeouts, old drivers, lost GPUs, garbage, no GPU) and through the collector. The CSV table
 * and parser it uses are tested in test_smi_format.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/provider.h"

#include "smi_rows.h"

#define FAKE_UUID0 "GPU-5e4c2a0f-9b7d-4d3e-8f21-0a6c3b1d2e4f"

/* ---- the provider through the fake nvidia-smi ----------------------------------------------- */

static char log_path[64];

static void clear_fake_env(void)
{
    unsetenv("GM_FAKE_SMI_MODE");
    unsetenv("GM_FAKE_SMI_FILE");
    unsetenv("GM_FAKE_SMI_EXIT");
    unsetenv("GM_FAKE_SMI_APPS_FILE");
    unsetenv("GM_FAKE_SMI_BANNER_FILE");
    unsetenv("GM_FAKE_SMI_LOG");
}

static int provider_setup(void **state)
{
    (void)state;
    clear_fake_env();
    snprintf(log_path, sizeof log_path, "/tmp/gm-fake-smi-log-XXXXXX");
    int fd = mkstemp(log_path);
    if (fd < 0)
        return -1;
    close(fd);
    setenv("GM_FAKE_SMI_LOG", log_path, 1);
    return 0;
}

static int provider_teardown(void **state)
{
    (void)state;
    unlink(log_path);
    clear_fake_env();
    return 0;
}

/* Lines of the fake's invocation log containing needle. */
static int log_count(const char *needle)
{
    FILE *f = fopen(log_path, "r");
    assert_non_null(f);
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, needle))
            n++;
    fclose(f);
    return n;
}

static int open_smi(gm_collector_options *opt, void **st, gm_error *e)
{
    if (!opt->smi_timeout_ms)
        opt->smi_timeout_ms = 5000;
    return gm_provider_smi.open(opt, st, e);
}

static void test_provider_ok(void **state)
{
    (void)state;
    assert_string_equal(gm_provider_smi.name, "nvidia-smi");
    assert_null(gm_provider_smi.p2p);
    gm_collector_options opt = {0};
    void *st = NULL;
    gm_error e = {0};
    assert_int_equal(open_smi(&opt, &st, &e), GM_OK);
    assert_non_null(st);
    /* open: one query to verify, one banner read for the CUDA version. */
    assert_int_equal(log_count("--query-gpu="), 1);
    gm_snapshot *s = gm_snapshot_new();
    assert_int_equal(gm_provider_smi.sample(st, s, true, &e), GM_OK);
    assert_int_equal(s->gpu_count, 2);
    assert_string_equal(s->driver_version, "550.54.15");
    assert_string_equal(s->cuda_version, "12.4");
    const gm_gpu *g = gpu(s, 0);
    assert_string_equal(g->uuid, FAKE_UUID0);
    assert_string_equal(g->name, "NVIDIA H100 80GB HBM3");
    assert_metric(g, GM_M_UTIL_GPU_PCT, 45);
    assert_metric(g, GM_M_MEM_USED_BYTES, 1024 * MIB);
    assert_metric(g, GM_M_MEM_RESERVED_BYTES, 480 * MIB);
    assert_metric(g, GM_M_POWER_MW, 69480);
    assert_metric(g, GM_M_POWER_LIMIT_MW, 700000);
    assert_metric(g, GM_M_CLOCK_GR_MHZ, 1410);
    assert_metric(g, GM_M_CLOCK_MAX_MEM_MHZ, 2619);
    assert_metric(g, GM_M_THROTTLE_REASONS, 1);
    assert_absent(g, GM_M_FAN_PCT);      /* the fake's one [N/A] */
    assert_absent(g, GM_M_ENERGY_MJ);    /* not in --query-gpu */
    assert_absent(g, GM_M_PCIE_RX_KBPS); /* not in --query-gpu */
    g = gpu(s, 1);
    assert_metric(g, GM_M_FAN_PCT, 30);
    assert_metric(g, GM_M_PSTATE, 8);
    assert_metric(g, GM_M_PERSISTENCE_MODE, 0);
    assert_metric(g, GM_M_PCIE_GEN_CUR, 1);
    assert_metric(g, GM_M_PCIE_GEN_MAX, 4);

    assert_int_equal(s->proc_count, 2);
    assert_int_equal(s->procs[0].pid, 4242);
    assert_int_equal(s->procs[0].gpu_index, 0);
    assert_true(s->procs[0].mem_valid);
    assert_int_equal(s->procs[0].used_mem_bytes, 1010ULL << 20);
    assert_int_equal(s->procs[1].gpu_index, 1);
    assert_false(s->procs[1].mem_valid);

    /* Without processes: no --query-compute-apps run. */
    int apps_before = log_count("--query-compute-apps");
    gm_snapshot_reset(s);
    assert_int_equal(gm_provider_smi.sample(st, s, false, &e), GM_OK);
    assert_int_equal(s->proc_count, 0);
    assert_int_equal(log_count("--query-compute-apps"), apps_before);
    gm_provider_smi.close(st);
    gm_snapshot_free(s);
}

static void test_provider_cuda_version_from_real_banner(void **state)
{
    (void)state;
    setenv("GM_FAKE_SMI_BANNER_FILE", fixture_path("real-h100-580-banner.txt"), 1);
    gm_collector_options opt = {0};
    void *st = NULL;
    gm_error e = {0};
    assert_int_equal(open_smi(&opt, &st, &e), GM_OK);
    gm_snapshot *s = gm_snapshot_new();
    assert_int_equal(gm_provider_smi.sample(st, s, false, &e), GM_OK);
    assert_string_equal(s->cuda_version, "13.0");
    gm_provider_smi.close(st);

    /* A banner without the CUDA line leaves the version unknown, not invented. */
    setenv("GM_FAKE_SMI_BANNER_FILE", fixture_path("real-580-bad-field.txt"), 1);
    assert_int_equal(open_smi(&opt, &st, &e), GM_OK);
    gm_snapshot_reset(s);
    assert_int_equal(gm_provider_smi.sample(st, s, false, &e), GM_OK);
    assert_string_equal(s->cuda_version, "");
    assert_string_equal(s->driver_version, "550.54.15");
    gm_provider_smi.close(st);
    gm_snapshot_free(s);
}

static void test_provider_explicit_path(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/fakes/nvidia-smi", getenv("GM_SOURCE_DIR"));
    char *saved = strdup(getenv("PATH"));
    setenv("PATH", "/nonexistent-gm-dir", 1);
    gm_collector_options opt = {.smi_path = path};
    void *st = NULL;
    gm_error e = {0};
    /* The fake's #! names /usr/bin/python3 itself, so it runs without PATH. */
    int rc = open_smi(&opt, &st, &e);
    setenv("PATH", saved, 1);
    free(saved);
    assert_int_equal(rc, GM_OK);
    gm_provider_smi.close(st);
}

static void test_provider_not_found(void **state)
{
    (void)state;
    gm_collector_options opt = {.smi_path = "gm-no-such-nvidia-smi"};
    void *st = (void *)1;
    gm_error e = {0};
    assert_int_equal(open_smi(&opt, &st, &e), GM_ESPAWN);
    assert_null(st);
    assert_string_equal(e.msg, "gm-no-such-nvidia-smi: not found on PATH");

    char *saved = strdup(getenv("PATH"));
    setenv("PATH", "/nonexistent-gm-dir", 1);
    gm_collector_options dflt = {0};
    int rc = open_smi(&dflt, &st, &e);
    setenv("PATH", saved, 1);
    free(saved);
    assert_int_equal(rc, GM_ESPAWN);
    assert_string_equal(e.msg, "nvidia-smi: not found on PATH");
}

static void test_provider_hang(void **state)
{
    (void)state;
    setenv("GM_FAKE_SMI_MODE", "hang", 1);
    gm_collector_options opt = {.smi_timeout_ms = 300};
    void *st = NULL;
    gm_error e = {0};
    assert_int_equal(open_smi(&opt, &st, &e), GM_ETIMEDOUT);
    assert_string_equal(e.msg, "nvidia-smi did not answer within 300 ms");
    assert_null(st);
}

static void test_provider_hang_while_sampling(void **state)
{
    (void)state;
    gm_collector_options opt = {.smi_timeout_ms =
                                    3000}; /* a loaded machine starts the fake slowly */
    void *st = NULL;
    gm_error e = {0};
    assert_int_equal(open_smi(&opt, &st, &e), GM_OK);
    setenv("GM_FAKE_SMI_MODE", "hang", 1);
    gm_snapshot *s = gm_snapshot_new();
    assert_int_equal(gm_provider_smi.sample(st, s, true, &e), GM_ETIMEDOUT);
    assert_string_equal(e.msg, "nvidia-smi did not answer within 3000 ms");
    /* The driver recovers: the next sample works again. */
    unsetenv("GM_FAKE_SMI_MODE");
    gm_snapshot_reset(s);
    assert_int_equal(gm_provider_smi.sample(st, s, false, &e), GM_OK);
    assert_int_equal(s->gpu_count, 2);
    gm_provider_smi.close(st);
    gm_snapshot_free(s);
}

static void test_provider_garbage(void **state)
{
    (void)state;
    setenv("GM_FAKE_SMI_MODE", "garbage", 1);
    gm_collector_options opt = {0};
    void *st = NULL;
    gm_error e = {0};
    assert_int_equal(open_smi(&opt, &st, &e), GM_EPARSE);
    assert_non_null(strstr(e.msg, "\"Segmentation fault?"));
    assert_null(st);
}

static void test_provider_driver_failure(void **state)
{
    (void)state;
    setenv("GM_FAKE_SMI_MODE", "fail", 1);
    gm_collector_options opt = {0};
    void *st = NULL;
    gm_error e = {0};
    assert_int_equal(open_smi(&opt, &st, &e), GM_EIO);
    assert_string_equal(e.msg, "nvidia-smi exited with status 9: NVIDIA-SMI has failed because it "
                               "couldn't communicate with the NVIDIA driver. Make sure that the "
                               "latest NVIDIA driver is installed and running.");
    assert_int_equal(log_count("--query-gpu="), 1); /* no pointless retries */
}

static void test_provider_old_driver(void **state)
{
    (void)state;
    setenv("GM_FAKE_SMI_MODE", "old", 1);
    gm_collector_options opt = {0};
    void *st = NULL;
    gm_error e = {0};
    assert_int_equal(open_smi(&opt, &st, &e), GM_OK);
    /* One rejection, one retry with the base set. */
    assert_int_equal(log_count("--query-gpu="), 2);
    assert_int_equal(log_count("utilization.encoder"), 1);
    gm_snapshot *s = gm_snapshot_new();
    assert_int_equal(gm_provider_smi.sample(st, s, false, &e), GM_OK);
    assert_int_equal(s->gpu_count, 2);
    const gm_gpu *g = gpu(s, 0);
    assert_absent(g, GM_M_UTIL_ENC_PCT);
    assert_absent(g, GM_M_UTIL_DEC_PCT);
    assert_absent(g, GM_M_MEM_RESERVED_BYTES);
    assert_metric(g, GM_M_UTIL_GPU_PCT, 45);
    assert_metric(g, GM_M_MEM_USED_BYTES, 1024 * MIB);
    assert_metric(g, GM_M_THROTTLE_REASONS, 1);
    assert_metric(g, GM_M_PERSISTENCE_MODE, 1);
    /* The working set is remembered: sampling does not retry the rejected fields. */
    assert_int_equal(log_count("--query-gpu="), 3);
    assert_int_equal(log_count("utilization.encoder"), 1);
    gm_provider_smi.close(st);
    gm_snapshot_free(s);
}

static void test_provider_not_supported(void **state)
{
    (void)state;
    setenv("GM_FAKE_SMI_MODE", "notsupported", 1);
    gm_collector_options opt = {0};
    void *st = NULL;
    gm_error e = {0};
    assert_int_equal(open_smi(&opt, &st, &e), GM_OK);
    gm_snapshot *s = gm_snapshot_new();
    assert_int_equal(gm_provider_smi.sample(st, s, false, &e), GM_OK);
    for (unsigned i = 0; i < 2; i++) {
        const gm_gpu *g = gpu(s, i);
        assert_false(g->lost);
        assert_absent(g, GM_M_FAN_PCT);
        assert_absent(g, GM_M_POWER_MW);
        assert_absent(g, GM_M_POWER_LIMIT_MW);
        assert_absent(g, GM_M_UTIL_ENC_PCT);
        assert_absent(g, GM_M_MEM_RESERVED_BYTES);
        assert_absent(g, GM_M_THROTTLE_REASONS);
        assert_true(gm_gpu_has(g, GM_M_UTIL_GPU_PCT));
        assert_true(gm_gpu_has(g, GM_M_TEMP_C));
    }
    gm_provider_smi.close(st);
    gm_snapshot_free(s);
}

static void test_provider_gpu_lost(void **state)
{
    (void)state;
    gm_collector_options opt = {0};
    void *st = NULL;
    gm_error e = {0};
    assert_int_equal(open_smi(&opt, &st, &e), GM_OK);
    /* GPU 1 falls off the bus: nvidia-smi prints GPU 0's row, a complaint, and exits 15. */
    setenv("GM_FAKE_SMI_MODE", "lost", 1);
    gm_snapshot *s = gm_snapshot_new();
    assert_int_equal(gm_provider_smi.sample(st, s, false, &e), GM_OK);
    assert_int_equal(s->gpu_count, 2);
    assert_false(gpu(s, 0)->lost);
    assert_metric(gpu(s, 0), GM_M_UTIL_GPU_PCT, 45);
    const gm_gpu *g = gpu(s, 1);
    assert_int_equal(s->gpus[1].index, 1); /* in index order */
    assert_true(g->lost);
    assert_int_equal(g->valid[0] | g->valid[GM_M_WORDS - 1], 0);
    assert_string_equal(g->name, "NVIDIA RTX A6000");
    assert_string_equal(g->pci_bus_id, "00000000:3B:00.0");
    assert_string_equal(g->uuid, "GPU-0b9a8c7d-6e5f-4a3b-9c2d-1e0f2a3b4c5d");
    gm_provider_smi.close(st);
    gm_snapshot_free(s);
}

/* A GPU already lost when gpumon starts: the others are served, the lost one is reported lost
 * by the bus id nvidia-smi names, as the NVML provider reports a GPU it cannot open. */
static void test_provider_gpu_lost_at_open(void **state)
{
    (void)state;
    setenv("GM_FAKE_SMI_MODE", "lost", 1);
    gm_collector_options opt = {0};
    void *st = NULL;
    gm_error e = {0};
    assert_int_equal(open_smi(&opt, &st, &e), GM_OK);
    gm_snapshot *s = gm_snapshot_new();
    for (int pass = 0; pass < 2; pass++) {
        gm_snapshot_reset(s);
        assert_int_equal(gm_provider_smi.sample(st, s, true, &e), GM_OK);
        assert_int_equal(s->gpu_count, 2);
        assert_false(gpu(s, 0)->lost);
        assert_metric(gpu(s, 0), GM_M_UTIL_GPU_PCT, 45);
        assert_int_equal(s->gpus[1].index, 1);
        assert_true(s->gpus[1].lost);
        assert_int_equal(s->gpus[1].valid[0] | s->gpus[1].valid[GM_M_WORDS - 1], 0);
        assert_string_equal(s->gpus[1].pci_bus_id, "00000000:3B:00.0");
        assert_string_equal(s->gpus[1].uuid, ""); /* never read: unknown, not invented */
    }

    /* It comes back: read in full, and remembered with its identity from then on. */
    unsetenv("GM_FAKE_SMI_MODE");
    gm_snapshot_reset(s);
    assert_int_equal(gm_provider_smi.sample(st, s, false, &e), GM_OK);
    assert_false(gpu(s, 1)->lost);
    assert_string_equal(gpu(s, 1)->uuid, "GPU-0b9a8c7d-6e5f-4a3b-9c2d-1e0f2a3b4c5d");
    setenv("GM_FAKE_SMI_MODE", "lost", 1);
    gm_snapshot_reset(s);
    assert_int_equal(gm_provider_smi.sample(st, s, false, &e), GM_OK);
    assert_true(gpu(s, 1)->lost);
    assert_string_equal(gpu(s, 1)->uuid, "GPU-0b9a8c7d-6e5f-4a3b-9c2d-1e0f2a3b4c5d");
    assert_string_equal(gpu(s, 1)->name, "NVIDIA RTX A6000");
    gm_provider_smi.close(st);
    gm_snapshot_free(s);
}

/* No GPU answers at all: nothing can be read, so opening fails with nvidia-smi's words. */
static void test_provider_every_gpu_lost_at_open(void **state)
{
    (void)state;
    char path[] = "/tmp/gm-lost-smi-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char text[] = "Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost.  "
                        "Reboot the system to recover this GPU\n";
    assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
    setenv("GM_FAKE_SMI_FILE", path, 1);
    setenv("GM_FAKE_SMI_EXIT", "15", 1);
    gm_collector_options opt = {0};
    void *st = NULL;
    gm_error e = {0};
    assert_int_equal(open_smi(&opt, &st, &e), GM_EIO);
    assert_null(st);
    assert_non_null(strstr(e.msg, "exited with status 15"));
    assert_non_null(strstr(e.msg, "GPU0000:3B:00.0: GPU is lost"));

    /* Rows that say every GPU is lost (exit 0): nothing can be read either. */
    FILE *f = fopen(path, "w");
    fputs("0, [GPU is lost], [GPU is lost], 00000000:3B:00.0\n", f);
    fclose(f);
    unsetenv("GM_FAKE_SMI_EXIT");
    assert_int_equal(open_smi(&opt, &st, &e), GM_ELOST);
    assert_null(st);
    assert_string_equal(e.msg, "nvidia-smi: every GPU is lost");
    unlink(path);
}

static void test_provider_fixture_file(void **state)
{
    (void)state;
    setenv("GM_FAKE_SMI_FILE", fixture_path("provider-two.csv"), 1);
    gm_collector_options opt = {0};
    void *st = NULL;
    gm_error e = {0};
    assert_int_equal(open_smi(&opt, &st, &e), GM_OK);
    gm_snapshot *s = gm_snapshot_new();
    assert_int_equal(gm_provider_smi.sample(st, s, false, &e), GM_OK);
    assert_int_equal(s->gpu_count, 2);
    check_h100_row(gpu(s, 0));
    check_a6000_row(gpu(s, 1));
    assert_string_equal(s->driver_version, "580.159.04");

    /* Later rows with junk around them: the good rows still count. */
    setenv("GM_FAKE_SMI_FILE", fixture_path("mixed-garbage.csv"), 1);
    gm_snapshot_reset(s);
    assert_int_equal(gm_provider_smi.sample(st, s, false, &e), GM_OK);
    assert_int_equal(s->gpu_count, 2);
    check_h100_row(gpu(s, 0));

    /* Nothing parses any more: an error quoting the output. */
    setenv("GM_FAKE_SMI_FILE", fixture_path("all-garbage.csv"), 1);
    gm_snapshot_reset(s);
    assert_int_equal(gm_provider_smi.sample(st, s, false, &e), GM_EPARSE);
    assert_non_null(strstr(e.msg, "NVIDIA-SMI couldn't find libnvidia-ml.so"));

    /* A non-zero exit with nothing usable reports the exit. */
    setenv("GM_FAKE_SMI_FILE", fixture_path("all-garbage.csv"), 1);
    setenv("GM_FAKE_SMI_EXIT", "12", 1);
    gm_snapshot_reset(s);
    assert_int_equal(gm_provider_smi.sample(st, s, false, &e), GM_EIO);
    assert_non_null(strstr(e.msg, "exited with status 12"));
    gm_provider_smi.close(st);
    gm_snapshot_free(s);
}

static void test_provider_no_gpu(void **state)
{
    (void)state;
    char path[] = "/tmp/gm-empty-smi-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    setenv("GM_FAKE_SMI_FILE", path, 1);
    gm_collector_options opt = {0};
    void *st = NULL;
    gm_error e = {0};
    assert_int_equal(open_smi(&opt, &st, &e), GM_ENODEV);
    assert_null(st);

    /* What nvidia-smi really does without GPUs: "No devices were found", exit 6. */
    FILE *f = fopen(path, "w");
    fputs("No devices were found\n", f);
    fclose(f);
    setenv("GM_FAKE_SMI_EXIT", "6", 1);
    assert_int_equal(open_smi(&opt, &st, &e), GM_ENODEV);
    assert_string_equal(e.msg, "nvidia-smi: No devices were found");
    unlink(path);
}

static void test_provider_through_collector(void **state)
{
    (void)state;
    gm_collector_options opt = {.provider = "nvidia-smi", .no_host = true};
    gm_collector *c = NULL;
    gm_error e = {0};
    assert_int_equal(gm_collector_open(&opt, &c, &e), GM_OK);
    assert_string_equal(gm_collector_provider(c), "nvidia-smi");
    gm_snapshot *s = gm_snapshot_new();
    assert_int_equal(gm_collector_sample(c, s, &e), GM_OK);
    assert_int_equal(s->gpu_count, 2);
    assert_string_equal(s->provider, "nvidia-smi");
    gm_topology topo;
    assert_int_equal(gm_collector_topology(c, &topo, &e), GM_OK);
    assert_false(topo.known);
    gm_collector_close(c);
    gm_snapshot_free(s);
}

int main(void)
{
    /* The fake answers as "nvidia-smi" from tests/fakes, ahead of any real one. */
    const char *src = getenv("GM_SOURCE_DIR");
    if (!src) {
        fprintf(stderr, "GM_SOURCE_DIR is not set (ctest sets it)\n");
        return 1;
    }
    char path[8192];
    snprintf(path, sizeof path, "%s/tests/fakes:%s", src, getenv("PATH") ? getenv("PATH") : "");
    setenv("PATH", path, 1);

    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_provider_ok, provider_setup, provider_teardown),
        cmocka_unit_test_setup_teardown(test_provider_cuda_version_from_real_banner, provider_setup,
                                        provider_teardown),
        cmocka_unit_test_setup_teardown(test_provider_explicit_path, provider_setup,
                                        provider_teardown),
        cmocka_unit_test_setup_teardown(test_provider_not_found, provider_setup, provider_teardown),
        cmocka_unit_test_setup_teardown(test_provider_hang, provider_setup, provider_teardown),
        cmocka_unit_test_setup_teardown(test_provider_hang_while_sampling, provider_setup,
                                        provider_teardown),
        cmocka_unit_test_setup_teardown(test_provider_garbage, provider_setup, provider_teardown),
        cmocka_unit_test_setup_teardown(test_provider_driver_failure, provider_setup,
                                        provider_teardown),
        cmocka_unit_test_setup_teardown(test_provider_old_driver, provider_setup,
                                        provider_teardown),
        cmocka_unit_test_setup_teardown(test_provider_not_supported, provider_setup,
                                        provider_teardown),
        cmocka_unit_test_setup_teardown(test_provider_gpu_lost, provider_setup, provider_teardown),
        cmocka_unit_test_setup_teardown(test_provider_gpu_lost_at_open, provider_setup,
                                        provider_teardown),
        cmocka_unit_test_setup_teardown(test_provider_every_gpu_lost_at_open, provider_setup,
                                        provider_teardown),
        cmocka_unit_test_setup_teardown(test_provider_fixture_file, provider_setup,
                                        provider_teardown),
        cmocka_unit_test_setup_teardown(test_provider_no_gpu, provider_setup, provider_teardown),
        cmocka_unit_test_setup_teardown(test_provider_through_collector, provider_setup,
                                        provider_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
