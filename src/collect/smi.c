/* smi.c - the nvidia-smi provider: GPU readings from `nvidia-smi --query-gpu` CSV, for hosts where
 * gpumon cannot load libnvidia-ml itself (or is told not to). */
#include "base/smi_format.h"
#include "base/spawn.h"
#include "collect/calltime.h"
#include "collect/provider.h"
#include "base/error.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SMI_DEFAULT_TIMEOUT_MS 5000
/* Each rejected field costs one more nvidia-smi run at open; old drivers reject a handful. */
#define SMI_MAX_ATTEMPTS 8
#define SMI_WARN_LEN     1024

/* Everything the provider asks for, identity first so a row cut short still says which GPU it is.
 * clocks_throttle_reasons.active is the spelling both old and current drivers accept. */
static const int full_fields[] = {
    GM_SMI_F_INDEX,
    GM_SMI_F_UUID,
    GM_SMI_F_NAME,
    GM_SMI_F_PCI_BUS_ID,
    GM_SMI_F_DRIVER_VERSION,
    GM_SMI_F_UTIL_GPU,
    GM_SMI_F_UTIL_MEM,
    GM_SMI_F_UTIL_ENC,
    GM_SMI_F_UTIL_DEC,
    GM_SMI_F_MEM_TOTAL,
    GM_SMI_F_MEM_USED,
    GM_SMI_F_MEM_FREE,
    GM_SMI_F_MEM_RESERVED,
    GM_SMI_F_TEMP_GPU,
    GM_SMI_F_POWER_DRAW,
    GM_SMI_F_ENFORCED_POWER_LIMIT,
    GM_SMI_F_CLOCK_GR,
    GM_SMI_F_CLOCK_SM,
    GM_SMI_F_CLOCK_MEM,
    GM_SMI_F_CLOCK_MAX_GR,
    GM_SMI_F_CLOCK_MAX_SM,
    GM_SMI_F_CLOCK_MAX_MEM,
    GM_SMI_F_FAN_SPEED,
    GM_SMI_F_PSTATE,
    GM_SMI_F_PCIE_GEN_CUR,
    GM_SMI_F_PCIE_GEN_MAX,
    GM_SMI_F_PCIE_WIDTH_CUR,
    GM_SMI_F_PCIE_WIDTH_MAX,
    GM_SMI_F_THROTTLE_REASONS,
    GM_SMI_F_PERSISTENCE_MODE,
};

/* Fields newer drivers added (encoder/decoder utilisation, reserved memory since R510): the first
 * rejection drops them all at once, so an old driver costs one retry, not three. */
static const int newer_fields[] = {GM_SMI_F_UTIL_ENC, GM_SMI_F_UTIL_DEC, GM_SMI_F_MEM_RESERVED};

#define FIELD_COUNT (sizeof full_fields / sizeof *full_fields)

typedef struct smi_known {
    unsigned index;
    char uuid[GM_UUID_LEN];
    char name[GM_NAME_LEN];
    char pci_bus_id[GM_BUSID_LEN];
} smi_known;

typedef struct smi_state {
    char *prog;
    int timeout_ms;
    int ids[FIELD_COUNT];
    size_t n;
    char query_arg[1024]; /* "--query-gpu=index,uuid,..." for the field set that works */
    char driver_version[GM_VERSION_LEN];
    char cuda_version[GM_VERSION_LEN];
    unsigned known_count; /* GPUs seen at open: one missing later is reported lost */
    smi_known known[GM_MAX_GPUS];
    char last_warn[SMI_WARN_LEN];
} smi_state;

static void build_query_arg(smi_state *st)
{
    size_t used = (size_t)snprintf(st->query_arg, sizeof st->query_arg, "--query-gpu=");
    for (size_t i = 0; i < st->n && used < sizeof st->query_arg; i++)
        used += (size_t)snprintf(st->query_arg + used, sizeof st->query_arg - used, "%s%s",
                                 i ? "," : "", gm_smi_field_name(st->ids[i]));
}

static bool remove_field(smi_state *st, int id)
{
    for (size_t i = 0; i < st->n; i++)
        if (st->ids[i] == id) {
            memmove(&st->ids[i], &st->ids[i + 1], (st->n - i - 1) * sizeof *st->ids);
            st->n--;
            return true;
        }
    return false;
}

static int run_gpu_query(smi_state *st, gm_spawn_result *res, gm_error *err)
{
    const char *argv[] = {st->prog, st->query_arg, "--format=csv,noheader,nounits", NULL};
    return GM_TIMED("nvidia-smi --query-gpu", gm_spawn_run(argv, st->timeout_ms, 0, res, err));
}

/* Returns the field named in nvidia-smi's `Field "x" is not a valid field to query.`, -2 when the
 * output has no such complaint, -1 when it names a field gpumon does not know. */
static int rejected_field(const gm_spawn_result *res)
{
    static const char tail[] = "\" is not a valid field to query";
    const char *texts[] = {res->out, res->err};
    for (int t = 0; t < 2; t++) {
        const char *p = texts[t] ? strstr(texts[t], "Field \"") : NULL;
        if (!p)
            continue;
        p += strlen("Field \"");
        const char *end = strstr(p, tail);
        if (!end || end - p >= 128)
            continue;
        char name[128];
        memcpy(name, p, (size_t)(end - p));
        name[end - p] = '\0';
        return gm_smi_field_find(name);
    }
    return -2;
}

static bool says_no_devices(const gm_spawn_result *res)
{
    return (res->out && strstr(res->out, "No devices were found")) ||
           (res->err && strstr(res->err, "No devices were found"));
}

/* Pulls "13.0" out of the banner ("CUDA Version: 13.0") or of --version ("CUDA Version : 13.0"). */
static void parse_cuda_version(const char *text, char *buf, size_t cap)
{
    const char *p = text ? strstr(text, "CUDA Version") : NULL;
    if (!p)
        return;
    p += strlen("CUDA Version");
    while (*p == ' ' || *p == ':')
        p++;
    size_t n = 0;
    while ((isdigit((unsigned char)p[n]) || p[n] == '.') && n + 1 < cap)
        n++;
    if (n && isdigit((unsigned char)p[0])) {
        memcpy(buf, p, n);
        buf[n] = '\0';
    }
}

static void smi_close(void *state)
{
    smi_state *st = state;
    if (!st)
        return;
    free(st->prog);
    free(st);
}

/* Prints a parse note once per change so a persistently odd row does not flood the log. */
static void report_warning(smi_state *st, const char *warn)
{
    if (strcmp(st->last_warn, warn) == 0)
        return;
    snprintf(st->last_warn, sizeof st->last_warn, "%s", warn);
    if (warn[0])
        fprintf(stderr, "gpumon: nvidia-smi: %s\n", warn);
}

static void append_note(char *warn, size_t cap, const char *note)
{
    size_t used = strlen(warn);
    snprintf(warn + used, cap - used, "%s%s", used ? "; " : "", note);
}

/* Runs the GPU query, dropping the fields this nvidia-smi rejects (the newer ones all at the
 * first rejection) until it takes the rest or gives up; res holds the last run's output. */
static int query_accepted_fields(smi_state *st, gm_spawn_result *res, gm_error *err)
{
    int rc;
    bool reduced = false;
    for (int attempt = 0;; attempt++) {
        build_query_arg(st);
        rc = run_gpu_query(st, res, err);
        if (rc != GM_EIO)
            break;
        int f = rejected_field(res);
        if (f == -2 || attempt + 1 >= SMI_MAX_ATTEMPTS)
            break;
        bool changed = false;
        if (!reduced) {
            for (size_t i = 0; i < sizeof newer_fields / sizeof *newer_fields; i++)
                changed |= remove_field(st, newer_fields[i]);
            reduced = true;
        }
        if (f == GM_SMI_F_INDEX || f == GM_SMI_F_UUID)
            break; /* without these rows cannot be told apart: give up with nvidia-smi's words */
        if (f >= 0)
            changed |= remove_field(st, f);
        if (!changed)
            break;
        gm_spawn_result_free(res);
    }
    return rc;
}

/* The GPUs of the first reading, so that one missing later is reported lost. */
static void remember_gpus(smi_state *st, const gm_snapshot *scratch)
{
    for (unsigned i = 0; i < scratch->gpu_count; i++) {
        const gm_gpu *g = &scratch->gpus[i];
        smi_known *k = &st->known[st->known_count++];
        k->index = g->index;
        memcpy(k->uuid, g->uuid, sizeof k->uuid);
        memcpy(k->name, g->name, sizeof k->name);
        memcpy(k->pci_bus_id, g->pci_bus_id, sizeof k->pci_bus_id);
    }
    memcpy(st->driver_version, scratch->driver_version, sizeof st->driver_version);
}

/* --query-gpu has no CUDA field; the banner has it. One extra run at open, failure is fine. */
static void read_cuda_version(smi_state *st)
{
    gm_spawn_result res = {0};
    const char *banner_argv[] = {st->prog, NULL};
    if (GM_TIMED("nvidia-smi (banner)", gm_spawn_run(banner_argv, st->timeout_ms, 0, &res, NULL)) ==
        GM_OK)
        parse_cuda_version(res.out, st->cuda_version, sizeof st->cuda_version);
    gm_spawn_result_free(&res);
}

static int smi_open(const gm_collector_options *opt, void **state, gm_error *err)
{
    *state = NULL;
    smi_state *st = calloc(1, sizeof *st);
    gm_snapshot *scratch = gm_snapshot_new();
    if (!st || !scratch) {
        free(st);
        gm_snapshot_free(scratch);
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    }
    int rc;
    gm_spawn_result res = {0};
    st->prog = strdup(opt && opt->smi_path && opt->smi_path[0] ? opt->smi_path : "nvidia-smi");
    if (!st->prog) {
        rc = gm_error_set(err, GM_ENOMEM, "out of memory");
        goto fail;
    }
    st->timeout_ms = opt && opt->smi_timeout_ms > 0 ? opt->smi_timeout_ms : SMI_DEFAULT_TIMEOUT_MS;
    memcpy(st->ids, full_fields, sizeof full_fields);
    st->n = FIELD_COUNT;

    rc = query_accepted_fields(st, &res, err);
    /* One GPU failing makes nvidia-smi exit non-zero after printing the others' rows and a line
     * for the failed one: open with the GPUs that answer, as sampling does. */
    bool partial = rc == GM_EIO && res.out && res.out[0] && rejected_field(&res) == -2 &&
                   !says_no_devices(&res);
    if (rc < 0 && !partial) {
        if (rc == GM_EIO && says_no_devices(&res))
            rc = gm_error_set(err, GM_ENODEV, "nvidia-smi: No devices were found");
        goto fail;
    }

    char warn[SMI_WARN_LEN];
    gm_error perr = {0};
    int prc = gm_smi_parse_gpu_csv(res.out, st->ids, st->n, scratch, warn, sizeof warn, &perr);
    unsigned readable = 0;
    for (unsigned i = 0; prc == GM_OK && i < scratch->gpu_count; i++)
        readable += !scratch->gpus[i].lost;
    if (partial && readable == 0)
        goto fail; /* rc and err: the exit status and nvidia-smi's own words */
    if (prc < 0) {
        rc = gm_error_set(err, prc, "%s", perr.msg);
        goto fail;
    }
    if (readable == 0) {
        rc = gm_error_set(err, GM_ELOST, "nvidia-smi: every GPU is lost%s%s", warn[0] ? ": " : "",
                          warn);
        goto fail;
    }
    if (partial) {
        char note[SMI_WARN_LEN];
        if (res.exited)
            snprintf(note, sizeof note, "nvidia-smi exited with status %d", res.exit_code);
        else
            snprintf(note, sizeof note, "%s", err ? err->msg : "nvidia-smi failed");
        append_note(warn, sizeof warn, note);
    }
    rc = GM_OK;
    report_warning(st, warn);
    remember_gpus(st, scratch);
    gm_spawn_result_free(&res);
    read_cuda_version(st);

    gm_snapshot_free(scratch);
    *state = st;
    return GM_OK;
fail:
    gm_spawn_result_free(&res);
    gm_snapshot_free(scratch);
    smi_close(st);
    return rc;
}

static int cmp_gpu_index(const void *a, const void *b)
{
    unsigned x = ((const gm_gpu *)a)->index, y = ((const gm_gpu *)b)->index;
    return (x > y) - (x < y);
}

/* Fills the empty ones of uuid, name and bus from the src_ strings. */
static void fill_identity(char *uuid, char *name, char *bus, const char *src_uuid,
                          const char *src_name, const char *src_bus)
{
    if (!uuid[0])
        snprintf(uuid, GM_UUID_LEN, "%s", src_uuid);
    if (!name[0])
        snprintf(name, GM_NAME_LEN, "%s", src_name);
    if (!bus[0])
        snprintf(bus, GM_BUSID_LEN, "%s", src_bus);
}

/* Joins this sample with the GPUs seen before: a known GPU now unreachable keeps the identity
 * it had (nvidia-smi's line for it names only its bus id); one absent altogether failed alone
 * and is reported lost; one known only as unreachable learns its identity once it answers. */
static void add_missing_as_lost(smi_state *st, gm_snapshot *out)
{
    for (unsigned k = 0; k < st->known_count; k++) {
        smi_known *kn = &st->known[k];
        gm_gpu *now = (gm_gpu *)gm_snapshot_gpu(out, kn->index);
        /* The same GPU only when the bus ids agree: positions could mislead. */
        bool same = !now || !now->pci_bus_id[0] || !kn->pci_bus_id[0] ||
                    strcasecmp(now->pci_bus_id, kn->pci_bus_id) == 0;
        if (now && now->lost && same)
            fill_identity(now->uuid, now->name, now->pci_bus_id, kn->uuid, kn->name,
                          kn->pci_bus_id);
        else if (now && same)
            fill_identity(kn->uuid, kn->name, kn->pci_bus_id, now->uuid, now->name,
                          now->pci_bus_id);
        if (now || out->gpu_count >= GM_MAX_GPUS)
            continue;
        gm_gpu *g = &out->gpus[out->gpu_count++];
        memset(g, 0, sizeof *g);
        g->index = kn->index;
        g->lost = true;
        memcpy(g->uuid, kn->uuid, sizeof g->uuid);
        memcpy(g->name, kn->name, sizeof g->name);
        memcpy(g->pci_bus_id, kn->pci_bus_id, sizeof g->pci_bus_id);
    }
    qsort(out->gpus, out->gpu_count, sizeof *out->gpus, cmp_gpu_index);
}

static int smi_sample(void *state, gm_snapshot *out, bool want_procs, gm_error *err)
{
    smi_state *st = state;
    gm_spawn_result res;
    int rc = run_gpu_query(st, &res, err);
    /* A non-zero exit may still come with rows for the GPUs that answered (one GPU lost). */
    if (rc < 0 && !(rc == GM_EIO && res.out && res.out[0])) {
        gm_spawn_result_free(&res);
        return rc;
    }
    char warn[SMI_WARN_LEN], note[SMI_WARN_LEN];
    gm_error perr = {0};
    int prc = gm_smi_parse_gpu_csv(res.out, st->ids, st->n, out, warn, sizeof warn, &perr);
    if (rc < 0) {
        /* The skipped-row notes already quote nvidia-smi's complaint; add only the status. */
        if (res.exited)
            snprintf(note, sizeof note, "nvidia-smi exited with status %d", res.exit_code);
        else
            snprintf(note, sizeof note, "%s", err ? err->msg : "nvidia-smi failed");
        append_note(warn, sizeof warn, note);
    }
    gm_spawn_result_free(&res);
    if (prc < 0) {
        if (rc < 0)
            return rc; /* the exit status explains more than the leftovers */
        return gm_error_set(err, prc, "%s", perr.msg);
    }
    add_missing_as_lost(st, out);
    if (!out->driver_version[0])
        memcpy(out->driver_version, st->driver_version, sizeof out->driver_version);
    memcpy(out->cuda_version, st->cuda_version, sizeof out->cuda_version);

    if (want_procs) {
        const char *argv[] = {st->prog, "--query-compute-apps=gpu_uuid,pid,used_memory",
                              "--format=csv,noheader,nounits", NULL};
        gm_error aerr = {0};
        if (GM_TIMED("nvidia-smi --query-compute-apps",
                     gm_spawn_run(argv, st->timeout_ms, 0, &res, &aerr)) == GM_OK) {
            gm_smi_parse_apps_csv(res.out, out, note, sizeof note, NULL);
            if (note[0])
                append_note(warn, sizeof warn, note);
        } else {
            /* GPU readings stand on their own; a failed process list only leaves it empty. */
            snprintf(note, sizeof note, "processes: %s", aerr.msg);
            append_note(warn, sizeof warn, note);
        }
        gm_spawn_result_free(&res);
    }
    report_warning(st, warn);
    return GM_OK;
}

const gm_provider gm_provider_smi = {
    .name = "nvidia-smi",
    .vendor = "NVIDIA",
    .open = smi_open,
    .close = smi_close,
    .sample = smi_sample,
    .p2p = NULL,
};
