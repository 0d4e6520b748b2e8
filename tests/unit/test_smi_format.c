/* test_smi_format.c - base/smi_format: the nvidia-smi field table, printing checked byte for
 * byte against real nvidia-smi output, and the CSV parser on fixture texts (the provider that
 * runs nvidia-smi is tested in test_smi.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/smi_format.h"

#include "smi_rows.h"

/* The field order of the provider's query (full_fields in src/collect/smi.c); the provider-*
 * fixtures are written in it. */
static const char provider_fields[] =
    "index,uuid,name,pci.bus_id,driver_version,utilization.gpu,utilization.memory,"
    "utilization.encoder,utilization.decoder,memory.total,memory.used,memory.free,memory.reserved,"
    "temperature.gpu,power.draw,enforced.power.limit,clocks.gr,clocks.sm,clocks.mem,clocks.max.gr,"
    "clocks.max.sm,clocks.max.mem,fan.speed,pstate,pcie.link.gen.current,pcie.link.gen.max,"
    "pcie.link.width.current,pcie.link.width.max,clocks_throttle_reasons.active,persistence_mode";

/* ---- helpers -------------------------------------------------------------------------------- */

static char *slurp(const char *name)
{
    const char *path = fixture_path(name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open fixture %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
    buf[len] = '\0';
    fclose(f);
    return buf;
}

static size_t fields(const char *list, int *ids)
{
    size_t n = 0;
    gm_error e = {0};
    if (gm_smi_parse_fields(list, ids, GM_SMI_MAX_FIELDS, &n, &e) != GM_OK)
        fail_msg("%s", e.msg);
    return n;
}

/* Formats s with ids into a malloc'd string. */
static char *format(const gm_snapshot *s, const int *ids, size_t n, unsigned flags,
                    const unsigned *gpus, size_t ngpus, int *rc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    gm_error e = {0};
    int r = gm_smi_format_csv(f, s, ids, n, flags, gpus, ngpus, &e);
    fclose(f);
    if (rc)
        *rc = r;
    else if (r != GM_OK)
        fail_msg("%s", e.msg);
    return buf;
}

/* Parses fixture `name` with the provider's field list into s. */
static int parse_fixture(const char *name, gm_snapshot *s, char *warn, size_t cap, gm_error *e)
{
    int ids[GM_SMI_MAX_FIELDS];
    size_t n = fields(provider_fields, ids);
    char *text = slurp(name);
    int rc = gm_smi_parse_gpu_csv(text, ids, n, s, warn, cap, e);
    free(text);
    return rc;
}

/* Time of "YYYY/MM/DD HH:MM:SS.mmm" in the current time zone, in ms. */
static int64_t parse_stamp(const char *text)
{
    struct tm tm = {0};
    int ms = 0;
    assert_int_equal(sscanf(text, "%d/%d/%d %d:%d:%d.%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                            &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms),
                     7);
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    tm.tm_isdst = -1;
    return (int64_t)mktime(&tm) * 1000 + ms;
}

/* ---- the field table ------------------------------------------------------------------------ */

static void test_field_names_and_aliases(void **state)
{
    (void)state;
    static const char *const same[][2] = {
        {"clocks.gr", "clocks.current.graphics"},
        {"clocks.sm", "clocks.current.sm"},
        {"clocks.mem", "clocks.current.memory"},
        {"clocks.max.gr", "clocks.max.graphics"},
        {"clocks.max.mem", "clocks.max.memory"},
        {"gpu_name", "name"},
        {"gpu_uuid", "uuid"},
        {"gpu_bus_id", "pci.bus_id"},
        {"clocks_throttle_reasons.active", "clocks_event_reasons.active"},
        {"enforced.power.limit", "gpu.power.current_limit"},
        {"power.limit", "gpu.power.requested_limit"},
    };
    for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
        int a = gm_smi_field_find(same[i][0]);
        check_ge(a, 0);
        assert_int_equal(a, gm_smi_field_find(same[i][1]));
    }
    static const char *const known[] = {"index",
                                        "count",
                                        "driver_version",
                                        "timestamp",
                                        "persistence_mode",
                                        "pstate",
                                        "fan.speed",
                                        "temperature.gpu",
                                        "memory.total",
                                        "memory.used",
                                        "memory.free",
                                        "memory.reserved",
                                        "utilization.gpu",
                                        "utilization.memory",
                                        "utilization.encoder",
                                        "utilization.decoder",
                                        "power.draw",
                                        "clocks.max.sm",
                                        "pcie.link.gen.current",
                                        "pcie.link.gen.max",
                                        "pcie.link.width.current",
                                        "pcie.link.width.max",
                                        "pcie.link.gen.gpucurrent"};
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (gm_smi_field_find(known[i]) < 0)
            fail_msg("%s unknown", known[i]);
    /* nvidia-smi matches exactly: no case folding, no trimming. */
    assert_int_equal(gm_smi_field_find("foo"), -1);
    assert_int_equal(gm_smi_field_find("INDEX"), -1);
    assert_int_equal(gm_smi_field_find(" name"), -1);
    assert_int_equal(gm_smi_field_find(""), -1);
    assert_int_equal(gm_smi_field_find(NULL), -1);

    assert_int_equal(gm_smi_field_metric(gm_smi_field_find("memory.used")), GM_M_MEM_USED_BYTES);
    assert_int_equal(gm_smi_field_metric(gm_smi_field_find("name")), -1);
    assert_int_equal(gm_smi_field_metric(GM_SMI_F__COUNT), -1);
    assert_null(gm_smi_field_header(-1));
    assert_null(gm_smi_field_name(GM_SMI_F__COUNT));
    assert_string_equal(gm_smi_field_unit(GM_SMI_F_POWER_DRAW), "W");
    assert_int_equal(gm_smi_field_kind(GM_SMI_F_MEM_USED), GM_SMI_K_MIB);
    /* The provider sends the spelling old drivers know. */
    assert_string_equal(gm_smi_field_name(GM_SMI_F_THROTTLE_REASONS),
                        "clocks_throttle_reasons.active");
}

static void test_headers(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"clocks.gr", "clocks.current.graphics [MHz]"},
        {"clocks.max.mem", "clocks.max.memory [MHz]"},
        {"utilization.gpu", "utilization.gpu [%]"},
        {"memory.used", "memory.used [MiB]"},
        {"power.draw", "power.draw [W]"},
        {"enforced.power.limit", "enforced.power.limit [W]"},
        {"temperature.gpu", "temperature.gpu"},
        {"fan.speed", "fan.speed [%]"},
        {"gpu_name", "name"},
        {"gpu_bus_id", "pci.bus_id"},
        {"clocks_throttle_reasons.active", "clocks_event_reasons.active"},
        {"pstate", "pstate"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        assert_string_equal(gm_smi_field_header(gm_smi_field_find(cases[i][0])), cases[i][1]);
}

static void test_parse_fields(void **state)
{
    (void)state;
    int ids[GM_SMI_MAX_FIELDS];
    size_t n = 0;
    gm_error e = {0};
    assert_int_equal(gm_smi_parse_fields("index,clocks.gr,index", ids, GM_SMI_MAX_FIELDS, &n, &e),
                     GM_OK);
    assert_int_equal(n, 3);
    assert_int_equal(ids[0], GM_SMI_F_INDEX);
    assert_int_equal(ids[1], GM_SMI_F_CLOCK_GR);
    assert_int_equal(ids[2], GM_SMI_F_INDEX);

    /* Word for word what nvidia-smi says (tests/fixtures/smi/real-580-bad-field.txt). */
    assert_int_equal(gm_smi_parse_fields("index,foo", ids, GM_SMI_MAX_FIELDS, &n, &e), GM_EINVAL);
    char *real = slurp("real-580-bad-field.txt");
    real[strcspn(real, "\n")] = '\0';
    assert_string_equal(e.msg, real);
    free(real);

    assert_int_equal(gm_smi_parse_fields("index, name", ids, GM_SMI_MAX_FIELDS, &n, &e), GM_EINVAL);
    assert_string_equal(e.msg, "Field \" name\" is not a valid field to query.");
    assert_int_equal(gm_smi_parse_fields("index,,name", ids, GM_SMI_MAX_FIELDS, &n, &e), GM_EINVAL);
    assert_string_equal(e.msg, "Field \"\" is not a valid field to query.");
    assert_int_equal(gm_smi_parse_fields("", ids, GM_SMI_MAX_FIELDS, &n, &e), GM_EINVAL);
    assert_int_equal(gm_smi_parse_fields("index,name,uuid", ids, 2, &n, &e), GM_EINVAL);
}

static void test_parse_format(void **state)
{
    (void)state;
    unsigned flags = 99;
    gm_error e = {0};
    assert_int_equal(gm_smi_parse_format("csv", &flags, &e), GM_OK);
    assert_int_equal(flags, 0);
    assert_int_equal(gm_smi_parse_format("csv,noheader", &flags, &e), GM_OK);
    assert_int_equal(flags, GM_SMI_NOHEADER);
    assert_int_equal(gm_smi_parse_format("nounits,csv,noheader", &flags, &e), GM_OK);
    assert_int_equal(flags, GM_SMI_NOHEADER | GM_SMI_NOUNITS);
    assert_int_equal(gm_smi_parse_format("json", &flags, &e), GM_EINVAL);
    assert_non_null(strstr(e.msg, "json"));
    assert_int_equal(gm_smi_parse_format("noheader", &flags, &e), GM_EINVAL);
    assert_int_equal(gm_smi_parse_format("", &flags, &e), GM_EINVAL);
}

/* ---- printing: identical to real nvidia-smi output ----------------------------------------- */

/* Parses a real nvidia-smi capture (header line first), then prints the same fields with the
 * same flags: the bytes must match, header included. */
static void check_round_trip(const char *name, const char *list, unsigned flags)
{
    int ids[GM_SMI_MAX_FIELDS];
    size_t n = fields(list, ids);
    char *real = slurp(name);
    gm_snapshot *s = gm_snapshot_new();
    gm_error e = {0};
    char warn[512];
    if (gm_smi_parse_gpu_csv(real, ids, n, s, warn, sizeof warn, &e) != GM_OK)
        fail_msg("%s: %s", name, e.msg);
    assert_string_equal(warn, "");
    assert_int_equal(s->gpu_count, 1);
    /* The captures carry their own timestamp; count is the number of GPUs. */
    const char *stamp = strstr(real, "2026/");
    if (stamp)
        s->time_ms = parse_stamp(stamp);
    char *mine = format(s, ids, n, flags, NULL, 0, NULL);
    assert_string_equal(mine, real);
    free(mine);
    free(real);
    gm_snapshot_free(s);
}

static void test_format_matches_real_nvidia_smi(void **state)
{
    (void)state;
    static const char mem_power[] =
        "utilization.gpu,utilization.memory,utilization.encoder,utilization.decoder,memory.total,"
        "memory.used,memory.free,memory.reserved,temperature.gpu,power.draw,power.limit,"
        "enforced.power.limit,fan.speed";
    /* These lists have no index column: the parser numbers rows in order. */
    check_round_trip("real-h100-580-mem-power.csv", mem_power, 0);
    check_round_trip("real-h100-580-mem-power-nounits.csv", mem_power, GM_SMI_NOUNITS);
    check_round_trip("real-h100-580-mem-power-noheader.csv", mem_power, GM_SMI_NOHEADER);
    check_round_trip("real-h100-580-clocks.csv",
                     "clocks.gr,clocks.sm,clocks.mem,clocks.max.gr,clocks.max.sm,clocks.max.mem,"
                     "clocks.current.graphics,clocks.max.graphics,clocks.max.memory,"
                     "clocks.current.memory,clocks.current.sm",
                     0);
    check_round_trip("real-h100-580-identity.csv",
                     "index,count,name,gpu_name,uuid,gpu_uuid,pci.bus_id,gpu_bus_id,driver_version,"
                     "timestamp,persistence_mode,pstate",
                     0);
}

static void test_format_matches_real_pcie_and_throttle(void **state)
{
    (void)state;
    /* The capture also has fields gpumon does not know (power.draw.average...): compare the
     * first seven columns of each line. */
    char *real = slurp("real-h100-580-pcie-throttle.csv");
    char expected[1024] = "";
    for (char *line = strtok(real, "\n"); line; line = strtok(NULL, "\n")) {
        char *p = line;
        for (int col = 0; col < 7; col++)
            p = strchr(p, ',') + (col < 6);
        *p = '\0';
        strcat(expected, line);
        strcat(expected, "\n");
    }
    free(real);
    int ids[GM_SMI_MAX_FIELDS];
    size_t n = fields("pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,"
                      "pcie.link.width.max,clocks_throttle_reasons.active,"
                      "clocks_event_reasons.active,pcie.link.gen.gpucurrent",
                      ids);
    gm_snapshot *s = gm_snapshot_new();
    assert_int_equal(gm_smi_parse_gpu_csv(expected, ids, n, s, NULL, 0, NULL), GM_OK);
    assert_metric(&s->gpus[0], GM_M_THROTTLE_REASONS, 1);
    char *mine = format(s, ids, n, 0, NULL, 0, NULL);
    assert_string_equal(mine, expected);
    free(mine);
    gm_snapshot_free(s);
}

static gm_snapshot *two_gpu_snapshot(void)
{
    gm_snapshot *s = gm_snapshot_new();
    assert_non_null(s);
    s->gpu_count = 2;
    snprintf(s->driver_version, sizeof s->driver_version, "550.54.15");
    gm_gpu *g = &s->gpus[0];
    g->index = 0;
    snprintf(g->name, sizeof g->name, "NVIDIA H100 80GB HBM3");
    snprintf(g->uuid, sizeof g->uuid, "%s", UUID0);
    snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "00000000:18:00.0");
    gm_gpu_set(g, GM_M_UTIL_GPU_PCT, 45);
    gm_gpu_set(g, GM_M_MEM_USED_BYTES, 1024 * MIB);
    gm_gpu_set(g, GM_M_MEM_TOTAL_BYTES, 81559 * MIB);
    gm_gpu_set(g, GM_M_POWER_MW, 69480);
    gm_gpu_set(g, GM_M_CLOCK_GR_MHZ, 1410);
    gm_gpu_set(g, GM_M_TEMP_C, 45);
    gm_gpu_set(g, GM_M_PSTATE, 0);
    gm_gpu_set(g, GM_M_PERSISTENCE_MODE, 1);
    gm_gpu_set(g, GM_M_THROTTLE_REASONS, 0x24);
    g = &s->gpus[1];
    g->index = 1;
    snprintf(g->name, sizeof g->name, "NVIDIA RTX A6000");
    snprintf(g->uuid, sizeof g->uuid, "%s", UUID1);
    snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "00000000:3B:00.0");
    gm_gpu_set(g, GM_M_UTIL_GPU_PCT, 3);
    gm_gpu_set(g, GM_M_MEM_TOTAL_BYTES, 49140 * MIB);
    gm_gpu_set(g, GM_M_PSTATE, 8);
    gm_gpu_set(g, GM_M_PERSISTENCE_MODE, 0);
    gm_gpu_set(g, GM_M_FAN_PCT, 30);
    return s;
}

static void test_format_units_header_and_na(void **state)
{
    (void)state;
    gm_snapshot *s = two_gpu_snapshot();
    int ids[GM_SMI_MAX_FIELDS];
    size_t n = fields("index,name,utilization.gpu,memory.used,power.draw,clocks.gr,temperature.gpu,"
                      "fan.speed,pstate,persistence_mode,clocks_throttle_reasons.active",
                      ids);
    char *out = format(s, ids, n, 0, NULL, 0, NULL);
    assert_string_equal(
        out, "index, name, utilization.gpu [%], memory.used [MiB], power.draw [W], "
             "clocks.current.graphics [MHz], temperature.gpu, fan.speed [%], pstate, "
             "persistence_mode, clocks_event_reasons.active\n"
             "0, NVIDIA H100 80GB HBM3, 45 %, 1024 MiB, 69.48 W, 1410 MHz, 45, [N/A], P0, "
             "Enabled, 0x0000000000000024\n"
             "1, NVIDIA RTX A6000, 3 %, [N/A], [N/A], [N/A], [N/A], 30 %, P8, Disabled, "
             "[N/A]\n");
    free(out);

    out = format(s, ids, n, GM_SMI_NOHEADER | GM_SMI_NOUNITS, NULL, 0, NULL);
    assert_string_equal(out,
                        "0, NVIDIA H100 80GB HBM3, 45, 1024, 69.48, 1410, 45, [N/A], P0, "
                        "Enabled, 0x0000000000000024\n"
                        "1, NVIDIA RTX A6000, 3, [N/A], [N/A], [N/A], [N/A], 30, P8, Disabled, "
                        "[N/A]\n");
    free(out);

    /* nounits keeps the units in the header, as nvidia-smi does. */
    n = fields("memory.total,driver_version,count", ids);
    out = format(s, ids, n, GM_SMI_NOUNITS, NULL, 0, NULL);
    assert_string_equal(out, "memory.total [MiB], driver_version, count\n"
                             "81559, 550.54.15, 2\n"
                             "49140, 550.54.15, 2\n");
    free(out);

    s->driver_version[0] = '\0';
    s->gpus[1].uuid[0] = '\0';
    n = fields("uuid,driver_version", ids);
    out = format(s, ids, n, GM_SMI_NOHEADER, NULL, 0, NULL);
    assert_string_equal(out, UUID0 ", [N/A]\n[N/A], [N/A]\n");
    free(out);
    gm_snapshot_free(s);
}

static void test_format_rounding(void **state)
{
    (void)state;
    gm_snapshot *s = gm_snapshot_new();
    s->gpu_count = 1;
    gm_gpu *g = &s->gpus[0];
    char buf[64];
    static const struct {
        gm_metric m;
        double raw;
        int field;
        const char *want;
    } cases[] = {
        /* MiB: bytes rounded up, like nvidia-smi (615.0625 MiB printed as 616 on an H200). */
        {GM_M_MEM_USED_BYTES, 1048575, GM_SMI_F_MEM_USED, "1 MiB"},
        {GM_M_MEM_USED_BYTES, 1.5 * MIB, GM_SMI_F_MEM_USED, "2 MiB"},
        {GM_M_MEM_RESERVED_BYTES, 615.0625 * MIB, GM_SMI_F_MEM_RESERVED, "616 MiB"},
        {GM_M_MEM_USED_BYTES, 1048576, GM_SMI_F_MEM_USED, "1 MiB"},
        {GM_M_MEM_USED_BYTES, 0, GM_SMI_F_MEM_USED, "0 MiB"},
        {GM_M_MEM_TOTAL_BYTES, 85520809984.0, GM_SMI_F_MEM_TOTAL, "81559 MiB"},
        /* W: two decimals. */
        {GM_M_POWER_MW, 69480, GM_SMI_F_POWER_DRAW, "69.48 W"},
        {GM_M_POWER_LIMIT_MW, 700000, GM_SMI_F_ENFORCED_POWER_LIMIT, "700.00 W"},
        {GM_M_POWER_REQ_LIMIT_MW, 700000, GM_SMI_F_POWER_LIMIT, "700.00 W"},
        {GM_M_POWER_MW, 71604, GM_SMI_F_POWER_DRAW, "71.60 W"},
        {GM_M_POWER_MW, 0, GM_SMI_F_POWER_DRAW, "0.00 W"},
        /* % and MHz: integers, rounded half away from zero. */
        {GM_M_UTIL_GPU_PCT, 45.4, GM_SMI_F_UTIL_GPU, "45 %"},
        {GM_M_UTIL_GPU_PCT, 45.5, GM_SMI_F_UTIL_GPU, "46 %"},
        {GM_M_UTIL_GPU_PCT, 100, GM_SMI_F_UTIL_GPU, "100 %"},
        {GM_M_FAN_PCT, 112, GM_SMI_F_FAN_SPEED, "112 %"},
        {GM_M_CLOCK_SM_MHZ, 1979.6, GM_SMI_F_CLOCK_SM, "1980 MHz"},
        {GM_M_TEMP_C, 33.2, GM_SMI_F_TEMP_GPU, "33"},
        {GM_M_PCIE_WIDTH_CUR, 16, GM_SMI_F_PCIE_WIDTH_CUR, "16"},
        {GM_M_PSTATE, 12, GM_SMI_F_PSTATE, "P12"},
        {GM_M_THROTTLE_REASONS, 0, GM_SMI_F_THROTTLE_REASONS, "0x0000000000000000"},
        {GM_M_THROTTLE_REASONS, 0x100 | 0xa, GM_SMI_F_THROTTLE_REASONS, "0x000000000000010A"},
        /* Out-of-range doubles are clamped, never cast blindly. */
        {GM_M_THROTTLE_REASONS, 18446744073709551615.0, GM_SMI_F_THROTTLE_REASONS,
         "0xFFFFFFFFFFFFFFFF"},
        {GM_M_MEM_USED_BYTES, 1e30, GM_SMI_F_MEM_USED, "17592186044416 MiB"},
        {GM_M_MEM_USED_BYTES, -5, GM_SMI_F_MEM_USED, "0 MiB"},
        {GM_M_UTIL_GPU_PCT, 1e30, GM_SMI_F_UTIL_GPU, "9223372036854775807 %"},
        /* Enum words; values without one stay at the placeholder. */
        {GM_M_ADDRESSING_MODE, 0, GM_SMI_F_ADDRESSING_MODE, "None"},
        {GM_M_ADDRESSING_MODE, 2, GM_SMI_F_ADDRESSING_MODE, "ATS"},
        {GM_M_ADDRESSING_MODE, 3, GM_SMI_F_ADDRESSING_MODE, "[N/A]"},
        {GM_M_RECOVERY_ACTION, 0, GM_SMI_F_GPU_RECOVERY_ACTION, "None"},
        {GM_M_RECOVERY_ACTION, 4, GM_SMI_F_GPU_RECOVERY_ACTION, "Drain and Reset"},
        {GM_M_FABRIC_STATE, 0, GM_SMI_F_FABRIC_STATE, "[N/A]"},
        {GM_M_FABRIC_STATE, 2, GM_SMI_F_FABRIC_STATE, "In Progress"},
        {GM_M_FABRIC_STATE, 3, GM_SMI_F_FABRIC_STATE, "Completed"},
        {GM_M_EDPP_MULTIPLIER_PCT, 100, GM_SMI_F_EDPP_MULTIPLIER, "100.00 %"},
        {GM_M_DISPLAY_ATTACHED, 1, GM_SMI_F_DISPLAY_ATTACHED, "Yes"},
        {GM_M_C2C_MODE, 0, GM_SMI_F_C2C_MODE, "Disabled"},
        {GM_M_SRAM_THRESHOLD_EXCEEDED, 1,
         GM_SMI_F_ECC_ERRORS_UNCORRECTED_AGGREGATE_SRAM_THRESHOLDEXCEEDED, "Yes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        memset(g, 0, sizeof *g);
        gm_gpu_set(g, cases[i].m, cases[i].raw);
        int len = gm_smi_format_value(s, g, cases[i].field, 0, buf, sizeof buf);
        assert_string_equal(buf, cases[i].want);
        assert_int_equal(len, (int)strlen(cases[i].want));
    }
    /* The fabric strings, and the words parsed back (the nvidia-smi provider's direction). */
    memset(g, 0, sizeof *g);
    gm_smi_format_value(s, g, GM_SMI_F_FABRIC_STATUS, 0, buf, sizeof buf);
    assert_string_equal(buf, "[N/A]");
    snprintf(g->fabric_status, sizeof g->fabric_status, "Success");
    gm_smi_format_value(s, g, GM_SMI_F_FABRIC_STATUS, 0, buf, sizeof buf);
    assert_string_equal(buf, "Success");
    int ids[3];
    size_t n = fields("fabric.state,gpu_recovery_action,edpp_multiplier", ids);
    char warn[256];
    gm_snapshot *p = gm_snapshot_new();
    assert_int_equal(
        gm_smi_parse_gpu_csv("In Progress, Reboot, 87.50 %\n", ids, n, p, warn, sizeof warn, NULL),
        GM_OK);
    assert_string_equal(warn, "");
    check_eq(p->gpus[0].v[GM_M_FABRIC_STATE], 2);
    check_eq(p->gpus[0].v[GM_M_RECOVERY_ACTION], 2);
    check_eq(p->gpus[0].v[GM_M_EDPP_MULTIPLIER_PCT], 87.5);
    gm_snapshot_free(p);
    gm_smi_format_value(s, g, GM_SMI_F_EDPP_MULTIPLIER, GM_SMI_NOUNITS, buf, sizeof buf);
    assert_string_equal(buf, "[N/A]");
    /* Never a number for something not read. */
    memset(g, 0, sizeof *g);
    gm_gpu_set(g, GM_M_POWER_MW, NAN);
    gm_smi_format_value(s, g, GM_SMI_F_POWER_DRAW, 0, buf, sizeof buf);
    assert_string_equal(buf, "[N/A]");
    assert_int_equal(gm_smi_format_value(s, g, 999, 0, buf, sizeof buf), GM_EINVAL);
    /* A short buffer is truncated, terminated. */
    gm_gpu_set(g, GM_M_POWER_MW, 69480);
    gm_smi_format_value(s, g, GM_SMI_F_POWER_DRAW, 0, buf, 4);
    assert_string_equal(buf, "69.");
    gm_snapshot_free(s);
}

static void test_format_timestamp(void **state)
{
    (void)state;
    char *tz = getenv("TZ") ? strdup(getenv("TZ")) : NULL;
    setenv("TZ", "UTC", 1);
    tzset();
    gm_snapshot *s = gm_snapshot_new();
    s->gpu_count = 1;
    s->time_ms = INT64_C(1795654083) * 1000 + 7;
    char buf[64];
    gm_smi_format_value(s, &s->gpus[0], GM_SMI_F_TIMESTAMP, 0, buf, sizeof buf);
    assert_string_equal(buf, "2026/11/26 00:48:03.007");
    s->time_ms = 0;
    gm_smi_format_value(s, &s->gpus[0], GM_SMI_F_TIMESTAMP, 0, buf, sizeof buf);
    assert_string_equal(buf, "[N/A]");
    gm_snapshot_free(s);
    if (tz) {
        setenv("TZ", tz, 1);
        free(tz);
    } else {
        unsetenv("TZ");
    }
    tzset();
}

static void test_format_lost_gpu(void **state)
{
    (void)state;
    gm_snapshot *s = two_gpu_snapshot();
    s->gpus[1].lost = true;
    gm_gpu_clear(&s->gpus[1]);
    int ids[GM_SMI_MAX_FIELDS];
    size_t n = fields("index,uuid,utilization.gpu,memory.total", ids);
    char *out = format(s, ids, n, GM_SMI_NOHEADER, NULL, 0, NULL);
    assert_string_equal(out, "0, " UUID0 ", 45 %, 81559 MiB\n"
                             "1, " UUID1 ", [GPU is lost], [GPU is lost]\n");
    free(out);
    gm_snapshot_free(s);
}

static void test_format_gpu_filter(void **state)
{
    (void)state;
    gm_snapshot *s = two_gpu_snapshot();
    int ids[GM_SMI_MAX_FIELDS];
    size_t n = fields("index,count", ids);
    unsigned only1[] = {1};
    char *out = format(s, ids, n, GM_SMI_NOHEADER, only1, 1, NULL);
    assert_string_equal(out, "1, 2\n");
    free(out);
    unsigned bad[] = {0, 7};
    int rc;
    out = format(s, ids, n, 0, bad, 2, &rc);
    assert_int_equal(rc, GM_ENOENT);
    assert_string_equal(out, ""); /* nothing half-written */
    free(out);
    int none[1];
    out = format(s, none, 0, 0, NULL, 0, &rc);
    assert_int_equal(rc, GM_EINVAL);
    free(out);
    gm_snapshot_free(s);
}

/* ---- parsing fixture texts ------------------------------------------------------------------ */

static void test_parse_clean_rows(void **state)
{
    (void)state;
    gm_snapshot *s = gm_snapshot_new();
    char warn[512];
    gm_error e = {0};
    assert_int_equal(parse_fixture("provider-two.csv", s, warn, sizeof warn, &e), GM_OK);
    assert_string_equal(warn, "");
    assert_int_equal(s->gpu_count, 2);
    assert_string_equal(s->driver_version, "580.159.04");
    check_h100_row(gpu(s, 0));
    check_a6000_row(gpu(s, 1));

    /* With the header and units of --format=csv the readings are the same. */
    gm_snapshot *u = gm_snapshot_new();
    assert_int_equal(parse_fixture("header-units.csv", u, warn, sizeof warn, &e), GM_OK);
    assert_string_equal(warn, "");
    assert_int_equal(u->gpu_count, 2);
    for (unsigned i = 0; i < 2; i++) {
        assert_memory_equal(u->gpus[i].valid, s->gpus[i].valid, sizeof s->gpus[i].valid);
        assert_memory_equal(u->gpus[i].v, s->gpus[i].v, sizeof u->gpus[i].v);
    }
    gm_snapshot_free(u);
    gm_snapshot_free(s);
}

static void test_parse_crlf_and_spacing(void **state)
{
    (void)state;
    gm_snapshot *s = gm_snapshot_new();
    char warn[512];
    assert_int_equal(parse_fixture("crlf-spacing.csv", s, warn, sizeof warn, NULL), GM_OK);
    assert_string_equal(warn, "");
    assert_int_equal(s->gpu_count, 2);
    check_h100_row(gpu(s, 0));
    check_a6000_row(gpu(s, 1));
    gm_snapshot_free(s);
}

static void test_parse_placeholders_and_lost(void **state)
{
    (void)state;
    gm_snapshot *s = gm_snapshot_new();
    char warn[512];
    assert_int_equal(parse_fixture("placeholders.csv", s, warn, sizeof warn, NULL), GM_OK);
    assert_string_equal(warn, "");
    assert_int_equal(s->gpu_count, 2);
    const gm_gpu *g = gpu(s, 0);
    assert_false(g->lost);
    assert_absent(g, GM_M_UTIL_GPU_PCT);       /* [N/A] */
    assert_absent(g, GM_M_UTIL_MEM_PCT);       /* [Not Supported] */
    assert_absent(g, GM_M_UTIL_ENC_PCT);       /* N/A */
    assert_absent(g, GM_M_UTIL_DEC_PCT);       /* [Unknown Error] */
    assert_absent(g, GM_M_MEM_RESERVED_BYTES); /* [Insufficient Permissions] */
    assert_absent(g, GM_M_POWER_MW);
    assert_absent(g, GM_M_THROTTLE_REASONS);
    assert_metric(g, GM_M_TEMP_C, 33);
    assert_metric(g, GM_M_MEM_USED_BYTES, 0);

    g = gpu(s, 1);
    assert_true(g->lost);
    assert_int_equal(g->valid[0] | g->valid[GM_M_WORDS - 1],
                     0); /* nothing read from a lost GPU is kept */
    assert_string_equal(g->uuid, UUID1);
    assert_string_equal(g->name, "NVIDIA RTX A6000");
    assert_string_equal(g->pci_bus_id, "00000000:3B:00.0");
    gm_snapshot_free(s);
}

static void test_parse_short_and_extra_rows(void **state)
{
    (void)state;
    gm_snapshot *s = gm_snapshot_new();
    char warn[512];
    assert_int_equal(parse_fixture("short-and-extra.csv", s, warn, sizeof warn, NULL), GM_OK);
    assert_string_equal(warn, "");
    assert_int_equal(s->gpu_count, 2);
    const gm_gpu *g = gpu(s, 0);
    assert_metric(g, GM_M_TEMP_C, 33); /* last field present */
    assert_absent(g, GM_M_POWER_MW);   /* cut off after it */
    assert_absent(g, GM_M_PERSISTENCE_MODE);
    check_a6000_row(gpu(s, 1)); /* trailing extras ignored */
    gm_snapshot_free(s);
}

static void test_parse_garbage_between_rows(void **state)
{
    (void)state;
    gm_snapshot *s = gm_snapshot_new();
    char warn[1024];
    gm_error e = {0};
    assert_int_equal(parse_fixture("mixed-garbage.csv", s, warn, sizeof warn, &e), GM_OK);
    assert_int_equal(s->gpu_count, 2);
    check_h100_row(gpu(s, 0));
    const gm_gpu *g = gpu(s, 1);
    assert_absent(g, GM_M_TEMP_C);   /* "hot" */
    assert_absent(g, GM_M_POWER_MW); /* "12.5 MHz": wrong unit */
    assert_metric(g, GM_M_FAN_PCT, 76);
    assert_non_null(strstr(warn, "skipped row \"WARNING: infoROM is corrupted"));
    assert_non_null(strstr(warn, "skipped row \"Unable to determine the device handle"));
    assert_non_null(strstr(warn, "skipped row \"x1, "));
    assert_non_null(strstr(warn, "repeated GPU index"));
    assert_non_null(strstr(warn, "GPU 1: temperature.gpu \"hot\" does not parse"));
    gm_snapshot_free(s);
}

static void test_parse_all_garbage(void **state)
{
    (void)state;
    gm_snapshot *s = gm_snapshot_new();
    gm_error e = {0};
    assert_int_equal(parse_fixture("all-garbage.csv", s, NULL, 0, &e), GM_EPARSE);
    assert_int_equal(e.code, GM_EPARSE);
    assert_non_null(strstr(e.msg, "\"NVIDIA-SMI couldn't find libnvidia-ml.so library"));
    assert_non_null(strstr(e.msg, "...\"")); /* the long line is cut */
    assert_null(strstr(e.msg, "<html>"));    /* only the first bad line is quoted */
    assert_int_equal(s->gpu_count, 0);
    gm_snapshot_free(s);
}

static void test_parse_empty_and_no_devices(void **state)
{
    (void)state;
    gm_snapshot *s = gm_snapshot_new();
    int ids[GM_SMI_MAX_FIELDS];
    size_t n = fields(provider_fields, ids);
    gm_error e = {0};
    assert_int_equal(gm_smi_parse_gpu_csv("", ids, n, s, NULL, 0, &e), GM_ENODEV);
    assert_int_equal(gm_smi_parse_gpu_csv("\r\n  \n", ids, n, s, NULL, 0, &e), GM_ENODEV);
    assert_int_equal(gm_smi_parse_gpu_csv("No devices were found\n", ids, n, s, NULL, 0, &e),
                     GM_ENODEV);
    assert_non_null(strstr(e.msg, "No devices were found"));
    assert_int_equal(gm_smi_parse_gpu_csv("0, x", ids, 0, s, NULL, 0, &e), GM_EINVAL);
    gm_snapshot_free(s);
}

static void test_parse_values(void **state)
{
    (void)state;
    int ids[GM_SMI_MAX_FIELDS];
    size_t n = fields("index,pstate,persistence_mode,clocks_throttle_reasons.active,power.draw,"
                      "memory.used,utilization.gpu",
                      ids);
    gm_snapshot *s = gm_snapshot_new();
    char warn[1024];
    assert_int_equal(gm_smi_parse_gpu_csv("3, P15, Disabled, 0x8000000000000000, 0.5, 1, 100\n"
                                          "4, P16, maybe, 0xZZ, -1, 1 KiB, 5 W\n"
                                          "5, p0, enabled, 12, inf, nan, 45 MHz\n"
                                          "6, P0, Enabled, 0xffffffffffffffff, 1e300, 1e30, 1\n",
                                          ids, n, s, warn, sizeof warn, NULL),
                     GM_OK);
    assert_int_equal(s->gpu_count, 4);
    const gm_gpu *g = gpu(s, 3);
    assert_metric(g, GM_M_PSTATE, 15);
    assert_metric(g, GM_M_PERSISTENCE_MODE, 0);
    assert_metric(g, GM_M_THROTTLE_REASONS, 9223372036854775808.0);
    assert_metric(g, GM_M_POWER_MW, 500);
    assert_metric(g, GM_M_MEM_USED_BYTES, MIB);
    assert_metric(g, GM_M_UTIL_GPU_PCT, 100);
    /* Every value of GPUs 4 and 5 is malformed: absent, each named in warn. */
    for (unsigned i = 4; i <= 5; i++)
        for (int m = 0; m < GM_M__COUNT; m++)
            assert_absent(gpu(s, i), (gm_metric)m);
    assert_non_null(strstr(warn, "GPU 4: pstate \"P16\""));
    assert_non_null(strstr(warn, "GPU 5: clocks_throttle_reasons.active \"12\""));
    assert_non_null(strstr(warn, "GPU 5: utilization.gpu \"45 MHz\""));
    g = gpu(s, 6);
    assert_metric(g, GM_M_THROTTLE_REASONS, 18446744073709551615.0);
    assert_absent(g, GM_M_POWER_MW); /* absurd magnitudes are garbage */
    assert_absent(g, GM_M_MEM_USED_BYTES);
    assert_metric(g, GM_M_UTIL_GPU_PCT, 1);
    gm_snapshot_free(s);
}

static void test_parse_without_index_column(void **state)
{
    (void)state;
    int ids[GM_SMI_MAX_FIELDS];
    size_t n = fields("name,memory.used", ids);
    gm_snapshot *s = gm_snapshot_new();
    assert_int_equal(gm_smi_parse_gpu_csv("A, 1\nB, 2\n", ids, n, s, NULL, 0, NULL), GM_OK);
    assert_int_equal(s->gpu_count, 2);
    assert_string_equal(gpu(s, 1)->name, "B"); /* rows numbered in order */
    gm_snapshot_free(s);
}

static void test_parse_too_many_rows(void **state)
{
    (void)state;
    int ids[GM_SMI_MAX_FIELDS];
    size_t n = fields("index,utilization.gpu", ids);
    char *text = malloc(GM_MAX_GPUS * 16 + 64);
    text[0] = '\0';
    for (int i = 0; i <= GM_MAX_GPUS; i++)
        sprintf(text + strlen(text), "%d, %d\n", i, i % 100);
    gm_snapshot *s = gm_snapshot_new();
    char warn[256];
    assert_int_equal(gm_smi_parse_gpu_csv(text, ids, n, s, warn, sizeof warn, NULL), GM_OK);
    assert_int_equal(s->gpu_count, GM_MAX_GPUS);
    assert_non_null(strstr(warn, "GPU index 64 is beyond the 64 GPUs gpumon supports"));

    /* Without an index column rows are numbered in order: the same bound, said as a count. */
    n = fields("utilization.gpu", ids);
    text[0] = '\0';
    for (int i = 0; i <= GM_MAX_GPUS; i++)
        sprintf(text + strlen(text), "%d\n", i % 100);
    assert_int_equal(gm_smi_parse_gpu_csv(text, ids, n, s, warn, sizeof warn, NULL), GM_OK);
    assert_int_equal(s->gpu_count, GM_MAX_GPUS);
    assert_non_null(strstr(warn, "more GPUs than gpumon keeps"));
    free(text);
    gm_snapshot_free(s);
}

/* An index nvidia-smi could never print for a real GPU (the sample model holds GM_MAX_GPUS) is
 * refused with the reason, instead of becoming a GPU that history and sessions cannot follow. */
static void test_parse_index_beyond_limit(void **state)
{
    (void)state;
    int ids[GM_SMI_MAX_FIELDS];
    size_t n = fields("index,name", ids);
    gm_snapshot *s = gm_snapshot_new();
    char warn[512];
    gm_error e = {0};
    assert_int_equal(
        gm_smi_parse_gpu_csv("0, A\n64, B\n1048576, C\n", ids, n, s, warn, sizeof warn, &e), GM_OK);
    assert_int_equal(s->gpu_count, 1);
    assert_int_equal(s->gpus[0].index, 0);
    assert_non_null(strstr(warn, "skipped row \"64, B\": GPU index 64 is beyond the 64 GPUs"));
    assert_non_null(strstr(warn, "GPU index 1048576 is beyond the 64 GPUs"));

    /* The highest index that fits is kept. */
    char row[64];
    snprintf(row, sizeof row, "%d, Last\n", GM_MAX_GPUS - 1);
    assert_int_equal(gm_smi_parse_gpu_csv(row, ids, n, s, warn, sizeof warn, &e), GM_OK);
    assert_int_equal(s->gpus[0].index, GM_MAX_GPUS - 1);

    /* Nothing else: an error naming the reason. */
    assert_int_equal(gm_smi_parse_gpu_csv("1048576, C\n", ids, n, s, warn, sizeof warn, &e),
                     GM_EPARSE);
    assert_int_equal(s->gpu_count, 0);
    assert_non_null(strstr(e.msg, "\"1048576, C\" (GPU index 1048576 is beyond the 64 GPUs"));
    gm_snapshot_free(s);
}

/* nvidia-smi prints one line per GPU in index order; a GPU it cannot reach gets "Unable to
 * determine the device handle for GPU<bus id>: <reason>" in its place. */
static void test_parse_unreachable_gpu(void **state)
{
    (void)state;
    int ids[GM_SMI_MAX_FIELDS];
    size_t n = fields("index,uuid,name,pci.bus_id,utilization.gpu", ids);
    gm_snapshot *s = gm_snapshot_new();
    char warn[512];
    gm_error e = {0};
    const char *text = "0, GPU-a, A, 00000000:18:00.0, 45\n"
                       "Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost.  "
                       "Reboot the system to recover this GPU\n"
                       "2, GPU-c, C, 00000000:5E:00.0, 7\n";
    assert_int_equal(gm_smi_parse_gpu_csv(text, ids, n, s, warn, sizeof warn, &e), GM_OK);
    assert_int_equal(s->gpu_count, 3);
    const gm_gpu *g = gpu(s, 1);
    assert_int_equal(s->gpus[1].index, 1); /* in index order */
    assert_true(g->lost);
    assert_int_equal(g->valid[0] | g->valid[GM_M_WORDS - 1], 0);
    assert_string_equal(g->pci_bus_id, "00000000:3B:00.0"); /* as pci.bus_id spells it */
    assert_string_equal(g->uuid, "");
    assert_string_equal(g->name, "");
    assert_false(gpu(s, 0)->lost);
    assert_metric(gpu(s, 2), GM_M_UTIL_GPU_PCT, 7);
    assert_non_null(strstr(warn, "GPU 1 (00000000:3B:00.0) does not answer: GPU is lost."));

    /* Older drivers put a space before the bus id; any reason counts. */
    assert_int_equal(
        gm_smi_parse_gpu_csv("Unable to determine the device handle for GPU 0000:0B:00.0: "
                             "Unknown Error\n1, GPU-b, B, 00000000:0C:00.0, 3\n",
                             ids, n, s, warn, sizeof warn, &e),
        GM_OK);
    assert_int_equal(s->gpu_count, 2);
    assert_true(gpu(s, 0)->lost);
    assert_string_equal(gpu(s, 0)->pci_bus_id, "00000000:0B:00.0");
    assert_non_null(strstr(warn, "GPU 0 (00000000:0B:00.0) does not answer: Unknown Error"));

    /* Every GPU unreachable: they are all there, lost (the provider decides what that means). */
    assert_int_equal(gm_smi_parse_gpu_csv("Unable to determine the device handle for "
                                          "GPU0000:3B:00.0: Unknown Error\n",
                                          ids, n, s, warn, sizeof warn, &e),
                     GM_OK);
    assert_int_equal(s->gpu_count, 1);
    assert_true(s->gpus[0].lost);

    /* Rows out of index order: the position says nothing, so the line is only reported. */
    assert_int_equal(gm_smi_parse_gpu_csv("1, GPU-b, B, 00000000:0C:00.0, 3\n"
                                          "Unable to determine the device handle for "
                                          "GPU0000:3B:00.0: Unknown Error\n",
                                          ids, n, s, warn, sizeof warn, &e),
                     GM_OK);
    assert_int_equal(s->gpu_count, 1);
    assert_non_null(strstr(warn, "skipped row \"Unable to determine the device handle for "
                                 "GPU0000:3B:00.0: Unknown Error\": cannot tell its GPU index"));
    gm_snapshot_free(s);
}

static void test_parse_apps(void **state)
{
    (void)state;
    gm_snapshot *s = gm_snapshot_new();
    assert_int_equal(parse_fixture("provider-two.csv", s, NULL, 0, NULL), GM_OK);
    char *text = slurp("apps.csv");
    char warn[1024];
    assert_int_equal(gm_smi_parse_apps_csv(text, s, warn, sizeof warn, NULL), GM_OK);
    free(text);
    assert_int_equal(s->proc_count, 3);
    assert_int_equal(s->procs[0].pid, 4242);
    assert_int_equal(s->procs[0].gpu_index, 0);
    assert_int_equal(s->procs[0].type, GM_PROC_COMPUTE);
    assert_true(s->procs[0].mem_valid);
    assert_int_equal(s->procs[0].used_mem_bytes, 1010ULL * 1048576ULL);
    assert_int_equal(s->procs[1].pid, 4243);
    assert_int_equal(s->procs[1].gpu_index, 1);
    assert_false(s->procs[1].mem_valid); /* [N/A]: withheld, not zero */
    assert_int_equal(s->procs[2].pid, 4244);
    assert_int_equal(s->procs[2].used_mem_bytes, 30000ULL * 1048576ULL);
    assert_non_null(strstr(warn, "unknown GPU uuid"));
    assert_non_null(strstr(warn, "bad pid"));
    assert_non_null(strstr(warn, "too few fields"));

    /* A memory figure no GPU has (more bytes than 64 bits hold) is withheld, not wrapped. */
    gm_snapshot_reset(s);
    assert_int_equal(parse_fixture("provider-two.csv", s, NULL, 0, NULL), GM_OK);
    assert_int_equal(
        gm_smi_parse_apps_csv(UUID0 ", 4245, 999999999999999\n", s, warn, sizeof warn, NULL),
        GM_OK);
    assert_int_equal(s->proc_count, 1);
    assert_int_equal(s->procs[0].pid, 4245);
    assert_false(s->procs[0].mem_valid);
    assert_non_null(strstr(warn, "process 4245: used memory \"999999999999999\" is out of range"));

    gm_snapshot_reset(s);
    assert_int_equal(gm_smi_parse_apps_csv("", s, warn, sizeof warn, NULL), GM_OK);
    assert_int_equal(s->proc_count, 0);
    assert_string_equal(warn, "");
    gm_snapshot_free(s);
}

/* The profile follows the loaded driver: 580 and 590 their own, a newer driver the newest, an
 * older one the oldest, an empty or unparsable version the newest. */
/* Compute-mode words come from the one enum table: formatted, parsed back, and the same words the
 * enum table gives; a value without a word stays at the placeholder. */
static void test_compute_mode_words(void **state)
{
    (void)state;
    static const char *const want[] = {"Default", "Exclusive_Thread", "Prohibited",
                                       "Exclusive_Process"};
    gm_snapshot *s = gm_snapshot_new();
    gm_gpu *g = &s->gpus[0];
    char buf[64];
    int ids[1];
    assert_int_equal(fields("compute_mode", ids), 1);
    for (int k = 0; k < 4; k++) {
        assert_string_equal(gm_smi_enum_word(GM_SMI_K_COMPUTE_MODE, k), want[k]);
        memset(g, 0, sizeof *g);
        gm_gpu_set(g, GM_M_COMPUTE_MODE, k);
        gm_smi_format_value(s, g, GM_SMI_F_COMPUTE_MODE, 0, buf, sizeof buf);
        assert_string_equal(buf, want[k]);

        char row[64], warn[256];
        snprintf(row, sizeof row, "%s\n", want[k]);
        gm_snapshot *p = gm_snapshot_new();
        assert_int_equal(gm_smi_parse_gpu_csv(row, ids, 1, p, warn, sizeof warn, NULL), GM_OK);
        assert_string_equal(warn, "");
        assert_true(gm_gpu_has(&p->gpus[0], GM_M_COMPUTE_MODE));
        assert_int_equal((int)p->gpus[0].v[GM_M_COMPUTE_MODE], k);
        gm_snapshot_free(p);
    }
    assert_null(gm_smi_enum_word(GM_SMI_K_COMPUTE_MODE, 4));
    assert_null(gm_smi_enum_word(GM_SMI_K_COMPUTE_MODE, -1));
    memset(g, 0, sizeof *g);
    gm_gpu_set(g, GM_M_COMPUTE_MODE, 4);
    gm_smi_format_value(s, g, GM_SMI_F_COMPUTE_MODE, 0, buf, sizeof buf);
    assert_string_equal(buf, "[N/A]");
    gm_snapshot_free(s);
}

static void test_profile_selection(void **state)
{
    (void)state;
    const gm_smi_profile *p580 = gm_smi_profile_for("580.159.04");
    const gm_smi_profile *p590 = gm_smi_profile_for("590.48.01");
    assert_string_equal(gm_smi_profile_name(p580), "580");
    assert_string_equal(gm_smi_profile_name(p590), "590");
    assert_ptr_equal(gm_smi_profile_for("585.05"), p580);     /* between: the one below */
    assert_ptr_equal(gm_smi_profile_for("610.10.02"), p590);  /* newer than every profile */
    assert_ptr_equal(gm_smi_profile_for("535.183.01"), p580); /* older than every profile */
    assert_ptr_equal(gm_smi_profile_for(""), p590);
    assert_ptr_equal(gm_smi_profile_for("not-a-version"), p590);
    assert_ptr_equal(gm_smi_profile_for(NULL), p590);
    /* What differs: 580 knows the inactive remapped rows and not edpp_multiplier, 590 the
     * reverse; 580 still prints power management; 580 refuses -q -x -d and prints bare hex. */
    assert_true(gm_smi_profile_has(p580, GM_SMI_F_REMAPPED_ROWS_CORRECTABLE_INACTIVE));
    assert_false(gm_smi_profile_has(p590, GM_SMI_F_REMAPPED_ROWS_CORRECTABLE_INACTIVE));
    assert_false(gm_smi_profile_has(p580, GM_SMI_F_EDPP_MULTIPLIER));
    assert_true(gm_smi_profile_has(p590, GM_SMI_F_EDPP_MULTIPLIER));
    assert_false(gm_smi_profile_deprecated(p580, GM_SMI_F_POWER_MANAGEMENT));
    assert_true(gm_smi_profile_deprecated(p590, GM_SMI_F_POWER_MANAGEMENT));
    assert_true(gm_smi_profile_refuses_xml_display(p580));
    assert_false(gm_smi_profile_refuses_xml_display(p590));
    assert_true(gm_smi_profile_xml_bare_hex(p580));
    assert_false(gm_smi_profile_xml_bare_hex(p590));
    char v[32];
    gm_smi_profile_nvml_version(p580, "13.580.159.04", v, sizeof v);
    assert_string_equal(v, "580.159");
    gm_smi_profile_nvml_version(p590, "13.590.48.01", v, sizeof v);
    assert_string_equal(v, "590.48.01");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_field_names_and_aliases),
        cmocka_unit_test(test_headers),
        cmocka_unit_test(test_parse_fields),
        cmocka_unit_test(test_parse_format),
        cmocka_unit_test(test_format_matches_real_nvidia_smi),
        cmocka_unit_test(test_format_matches_real_pcie_and_throttle),
        cmocka_unit_test(test_format_units_header_and_na),
        cmocka_unit_test(test_format_rounding),
        cmocka_unit_test(test_format_timestamp),
        cmocka_unit_test(test_format_lost_gpu),
        cmocka_unit_test(test_format_gpu_filter),
        cmocka_unit_test(test_parse_clean_rows),
        cmocka_unit_test(test_parse_crlf_and_spacing),
        cmocka_unit_test(test_parse_placeholders_and_lost),
        cmocka_unit_test(test_parse_short_and_extra_rows),
        cmocka_unit_test(test_parse_garbage_between_rows),
        cmocka_unit_test(test_parse_all_garbage),
        cmocka_unit_test(test_parse_empty_and_no_devices),
        cmocka_unit_test(test_parse_values),
        cmocka_unit_test(test_parse_without_index_column),
        cmocka_unit_test(test_parse_too_many_rows),
        cmocka_unit_test(test_parse_index_beyond_limit),
        cmocka_unit_test(test_parse_unreachable_gpu),
        cmocka_unit_test(test_parse_apps),
        cmocka_unit_test(test_compute_mode_words),
        cmocka_unit_test(test_profile_selection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
