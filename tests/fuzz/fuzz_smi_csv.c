/* fuzz_smi_csv.c - nvidia-smi's output as the nvidia-smi provider reads it (base/smi_format.c):
 * the --query-gpu CSV, then the --query-compute-apps CSV from the same text (each parser skips
 * the other's rows), then what gpumon makes of the result: the CSV `query --query-gpu` prints
 * and the JSON the daemon serves. The fields are the provider's own list, or the list on a
 * first line "#query-gpu=<fields>" (which also fuzzes gm_smi_parse_fields), so the corpus can
 * hold real captures taken with other fields. The format flags come from the input's length. */
#include <jansson.h>

#include "base/json.h"
#include "base/smi_format.h"
#include "fuzz.h"

/* src/collect/smi.c full_fields, in its order. */
static const char provider_fields[] =
    "index,uuid,name,pci.bus_id,driver_version,utilization.gpu,utilization.memory,"
    "utilization.encoder,utilization.decoder,memory.total,memory.used,memory.free,"
    "memory.reserved,temperature.gpu,power.draw,enforced.power.limit,clocks.gr,clocks.sm,"
    "clocks.mem,clocks.max.gr,clocks.max.sm,clocks.max.mem,fan.speed,pstate,"
    "pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,"
    "clocks_throttle_reasons.active,persistence_mode";

static FILE *devnull(void)
{
    static FILE *f;
    if (!f)
        f = fopen("/dev/null", "w");
    FUZZ_CHECK(f);
    return f;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *all = fuzz_cstr(data, size);
    char *text = all;
    int ids[GM_SMI_MAX_FIELDS];
    size_t n = 0;
    gm_error err = {0};

    static const char prefix[] = "#query-gpu=";
    bool own = false;
    if (strncmp(all, prefix, sizeof prefix - 1) == 0) {
        char *nl = strchr(all, '\n');
        if (nl) {
            *nl = '\0';
            text = nl + 1;
        } else {
            text = all + strlen(all);
        }
        own =
            gm_smi_parse_fields(all + sizeof prefix - 1, ids, GM_SMI_MAX_FIELDS, &n, &err) == GM_OK;
        if (own)
            FUZZ_CHECK(n >= 1 && n <= GM_SMI_MAX_FIELDS);
    }
    if (!own)
        FUZZ_CHECK(gm_smi_parse_fields(provider_fields, ids, GM_SMI_MAX_FIELDS, &n, &err) == GM_OK);
    for (size_t i = 0; i < n; i++)
        FUZZ_CHECK(gm_smi_field_name(ids[i]) && gm_smi_field_header(ids[i]));
    unsigned flags = 0;
    static const char *const formats[] = {"csv", "csv,noheader", "csv,nounits",
                                          "nounits,csv,noheader"};
    FUZZ_CHECK(gm_smi_parse_format(formats[size % 4], &flags, &err) == GM_OK);

    /* One snapshot for every input, emptied each time: a fresh one is 1.4 MiB of calloc (room for
     * GM_MAX_PROCS processes), which would cost most of the time. */
    static gm_snapshot *snap;
    if (!snap)
        snap = gm_snapshot_new();
    FUZZ_CHECK(snap);
    gm_snapshot_reset(snap);
    snap->time_ms = 1764115200123; /* for the timestamp field */
    char warn[1024];
    int rc = gm_smi_parse_gpu_csv(text, ids, n, snap, warn, sizeof warn, &err);
    FUZZ_CHECK(fuzz_terminated(warn, sizeof warn));
    FUZZ_CHECK(rc == GM_OK || rc == GM_ENODEV || rc == GM_EPARSE);
    FUZZ_CHECK((rc == GM_OK) == (snap->gpu_count > 0));
    FUZZ_CHECK(snap->gpu_count <= GM_MAX_GPUS);
    if (rc < 0)
        FUZZ_CHECK(err.msg[0] && fuzz_terminated(err.msg, sizeof err.msg));
    for (unsigned i = 0; i < snap->gpu_count; i++) {
        const gm_gpu *g = &snap->gpus[i];
        FUZZ_CHECK(g->index < GM_MAX_GPUS);
        FUZZ_CHECK(i == 0 || snap->gpus[i - 1].index != g->index);
        FUZZ_CHECK(fuzz_terminated(g->name, sizeof g->name));
        FUZZ_CHECK(fuzz_terminated(g->uuid, sizeof g->uuid));
        FUZZ_CHECK(fuzz_terminated(g->pci_bus_id, sizeof g->pci_bus_id));
        for (int m = 0; g->lost && m < GM_M__COUNT; m++)
            FUZZ_CHECK(!gm_gpu_has(g, (gm_metric)m)); /* a lost GPU reports nothing */
    }
    for (unsigned i = 0; i < snap->gpu_count; i++)
        for (unsigned k = 0; k < i; k++)
            FUZZ_CHECK(snap->gpus[i].index != snap->gpus[k].index);
    FUZZ_CHECK(fuzz_terminated(snap->driver_version, sizeof snap->driver_version));

    FUZZ_CHECK(gm_smi_parse_apps_csv(text, snap, warn, sizeof warn, &err) == GM_OK);
    FUZZ_CHECK(fuzz_terminated(warn, sizeof warn));
    FUZZ_CHECK(snap->proc_count <= GM_MAX_PROCS);
    for (size_t i = 0; i < snap->proc_count; i++) {
        const gm_process *p = &snap->procs[i];
        FUZZ_CHECK(p->pid > 0 && gm_snapshot_gpu(snap, p->gpu_index) != NULL);
    }

    /* What `gpumon query --query-gpu` prints of it, then the daemon's JSON. */
    if (snap->gpu_count > 0) {
        FUZZ_CHECK(gm_smi_format_csv(devnull(), snap, ids, n, flags, NULL, 0, &err) == GM_OK);
        json_t *j = gm_json_snapshot(snap);
        FUZZ_CHECK(j);
        FUZZ_CHECK(json_array_size(json_object_get(j, "gpus")) == snap->gpu_count);
        char *dump = gm_json_dump(j, NULL);
        FUZZ_CHECK(dump);
        free(dump);
        json_decref(j);
        json_t *procs = gm_json_processes(snap);
        FUZZ_CHECK(procs && json_array_size(procs) == snap->proc_count);
        for (size_t i = 0; i < json_array_size(procs); i++) {
            const json_t *b = json_object_get(json_array_get(procs, i), "used_memory_bytes");
            FUZZ_CHECK(json_is_null(b) || json_integer_value(b) >= 0);
        }
        json_decref(procs);
    }

    free(all);
    return 0;
}
