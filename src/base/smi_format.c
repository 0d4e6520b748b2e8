/* smi_format.c - reads and writes nvidia-smi's --query-gpu CSV with one table of fields. */
#include "base/smi_format.h"
#include "base/str.h"
#include "base/error.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct smi_field_info {
    const char *name;
    const char *alias;
    const char *header; /* with " [unit]" appended when there is a unit */
    gm_smi_kind kind;
    int metric;
    const char *unit;
    int arg;
} smi_field_info;

static const smi_field_info field_table[GM_SMI_F__COUNT] = {
#define GM__SMI_FIELD_ROW(id, nm, al, hd, kd, mt, un, ag) \
    [GM_SMI_F_##id] = {nm, al, hd, kd, (int)(mt), un, ag},
    GM_SMI_FIELD_MAP(GM__SMI_FIELD_ROW)
#undef GM__SMI_FIELD_ROW
};

/* ---- driver profiles --------------------------------------------------------------------- */

#define SMI_DEPRECATED "[Requested functionality has been deprecated]"

/* A field and what a profile prints for it when there is no value (or always, for deprecated). */
typedef struct smi_word {
    int id;
    const char *text;
} smi_word;

/* The fabric health fields, unbracketed N/A in both captures. */
#define SMI_FABRIC_HEALTH_NA                                                            \
    {GM_SMI_F_FABRIC_HEALTH_SUMMARY, "N/A"}, {GM_SMI_F_FABRIC_HEALTH_BANDWIDTH, "N/A"}, \
        {GM_SMI_F_FABRIC_HEALTH_ROUTE_RECOVERY_IN_PROGRESS, "N/A"},                     \
        {GM_SMI_F_FABRIC_HEALTH_ROUTE_UNHEALTHY, "N/A"},                                \
        {GM_SMI_F_FABRIC_HEALTH_ACCESS_TIMEOUT_RECOVERY, "N/A"},                        \
        {GM_SMI_F_FABRIC_HEALTH_INCORRECT_CONFIGURATION, "N/A"},                        \
    {                                                                                   \
        GM_SMI_F_FABRIC_HEALTH_PARTITION_ASSIGNED, "N/A"                                \
    }

struct gm_smi_profile {
    const char *name;
    unsigned major;
    const int *lacks;         /* fields its --help-query-gpu does not list; -1 ends */
    const int *deprecated;    /* printed SMI_DEPRECATED whatever the driver says; -1 ends */
    const smi_word *absent;   /* placeholders other than "[N/A]"; id -1 ends */
    unsigned nvml_parts;      /* --version prints this many parts of NVML's version; 0 all */
    bool refuses_xml_display; /* -q -x -d: exit 2 */
    bool xml_bare_hex;        /* -q -x: PCI ids without 0x */
};

/* 580.159.04 on an H200 (tests/fixtures/smi/real-h200-580-*): three fields 590 dropped, no
 * edpp_multiplier; application clocks and power management still answered; the fabric fields
 * print an unbracketed N/A when the GPU is in no fabric; NVML's version as major.minor. */
static const int lacks_580[] = {GM_SMI_F_EDPP_MULTIPLIER, -1};
static const int deprecated_580[] = {GM_SMI_F_DISPLAY_MODE, -1};
static const smi_word absent_580[] = {
    {GM_SMI_F_FABRIC_STATE, "N/A"},
    {GM_SMI_F_FABRIC_STATUS, "N/A"},
    {GM_SMI_F_FABRIC_CLIQUEID, "N/A"},
    {GM_SMI_F_FABRIC_CLUSTERUUID, "N/A"},
    SMI_FABRIC_HEALTH_NA,
    {-1, NULL},
};
/* 590.48.01 on an H100 (tests/fixtures/smi/real-h100-590-*). */
static const int lacks_590[] = {GM_SMI_F_REMAPPED_ROWS_CORRECTABLE_INACTIVE,
                                GM_SMI_F_REMAPPED_ROWS_UNCORRECTABLE_INACTIVE,
                                GM_SMI_F_FABRIC_HEALTH_PARTITION_ASSIGNED, -1};
static const int deprecated_590[] = {GM_SMI_F_DISPLAY_MODE,
                                     GM_SMI_F_POWER_MANAGEMENT,
                                     GM_SMI_F_CLOCKS_APPLICATIONS_GRAPHICS,
                                     GM_SMI_F_CLOCKS_APPLICATIONS_MEMORY,
                                     GM_SMI_F_CLOCKS_DEFAULT_APPLICATIONS_GRAPHICS,
                                     GM_SMI_F_CLOCKS_DEFAULT_APPLICATIONS_MEMORY,
                                     -1};
static const smi_word absent_590[] = {SMI_FABRIC_HEALTH_NA, {-1, NULL}};

/* Oldest first. */
static const gm_smi_profile profiles[] = {
    {"580", 580, lacks_580, deprecated_580, absent_580, 2, true, true},
    {"590", 590, lacks_590, deprecated_590, absent_590, 0, false, false},
};
#define N_PROFILES (sizeof profiles / sizeof *profiles)

const gm_smi_profile *gm_smi_profile_for(const char *driver_version)
{
    char *endp = NULL;
    unsigned long major = driver_version ? strtoul(driver_version, &endp, 10) : 0;
    if (!driver_version || endp == driver_version)
        return &profiles[N_PROFILES - 1];
    const gm_smi_profile *p = &profiles[0];
    for (size_t i = 0; i < N_PROFILES; i++)
        if (profiles[i].major <= major)
            p = &profiles[i];
    return p;
}

const char *gm_smi_profile_name(const gm_smi_profile *p)
{
    return p->name;
}

static bool in_list(const int *l, int id)
{
    for (; *l >= 0; l++)
        if (*l == id)
            return true;
    return false;
}

bool gm_smi_profile_has(const gm_smi_profile *p, int id)
{
    return id >= 0 && id < GM_SMI_F__COUNT && !in_list(p->lacks, id);
}

bool gm_smi_profile_deprecated(const gm_smi_profile *p, int id)
{
    return in_list(p->deprecated, id);
}

const char *gm_smi_profile_absent(const gm_smi_profile *p, int id)
{
    if (id < 0 || id >= GM_SMI_F__COUNT)
        return NULL;
    if (in_list(p->deprecated, id))
        return SMI_DEPRECATED;
    for (const smi_word *w = p->absent; w->id >= 0; w++)
        if (w->id == id)
            return w->text;
    return "[N/A]";
}

bool gm_smi_profile_refuses_xml_display(const gm_smi_profile *p)
{
    return p->refuses_xml_display;
}

bool gm_smi_profile_xml_bare_hex(const gm_smi_profile *p)
{
    return p->xml_bare_hex;
}

const char *gm_smi_profile_xml_display_error(void)
{
    return "Invalid combination of input arguments: --display/-d flags can not be combined with "
           "-x/--xml-format flags.";
}

void gm_smi_profile_nvml_version(const gm_smi_profile *p, const char *nvml, char *buf, size_t cap)
{
    if (!cap)
        return;
    if (!nvml || !nvml[0]) {
        snprintf(buf, cap, "N/A");
        return;
    }
    /* NVML's string carries the API major in front (13.580.159.04): nvidia-smi drops it. */
    const char *dot = strchr(nvml, '.');
    if (dot && strchr(dot + 1, '.'))
        nvml = dot + 1;
    size_t n = strlen(nvml);
    if (p->nvml_parts) {
        unsigned parts = 1;
        for (size_t i = 0; i < n; i++)
            if (nvml[i] == '.' && ++parts > p->nvml_parts) {
                n = i;
                break;
            }
    }
    snprintf(buf, cap, "%.*s", (int)n, nvml);
}

/* Headers with their unit, built once: "memory.used [MiB]". */
static char header_text[GM_SMI_F__COUNT][96];

static void build_headers(void)
{
    for (int i = 0; i < GM_SMI_F__COUNT; i++) {
        const smi_field_info *f = &field_table[i];
        if (f->unit[0])
            snprintf(header_text[i], sizeof header_text[i], "%s [%s]", f->header, f->unit);
        else
            snprintf(header_text[i], sizeof header_text[i], "%s", f->header);
    }
}

static bool valid_id(int id)
{
    return id >= 0 && id < GM_SMI_F__COUNT;
}

int gm_smi_field_find(const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < GM_SMI_F__COUNT; i++) {
        const smi_field_info *f = &field_table[i];
        if (strcmp(f->name, name) == 0 || (f->alias && strcmp(f->alias, name) == 0))
            return i;
    }
    return -1;
}

const char *gm_smi_field_name(int id)
{
    return valid_id(id) ? field_table[id].name : NULL;
}

const char *gm_smi_field_alias(int id)
{
    return valid_id(id) ? field_table[id].alias : NULL;
}

const char *gm_smi_field_header(int id)
{
    if (!valid_id(id))
        return NULL;
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, build_headers);
    return header_text[id];
}

const char *gm_smi_field_unit(int id)
{
    return valid_id(id) ? field_table[id].unit : NULL;
}

int gm_smi_field_metric(int id)
{
    if (!valid_id(id) || field_table[id].metric >= GM_M__COUNT)
        return -1;
    return field_table[id].metric;
}

int gm_smi_field_kind(int id)
{
    return valid_id(id) ? (int)field_table[id].kind : -1;
}

void gm_smi_fields_want(const int *fields, size_t n, gm_metric_set *w)
{
    for (size_t i = 0; i < n; i++) {
        int m = gm_smi_field_metric(fields[i]);
        if (m >= 0 && m < GM_M__COUNT)
            gm_metric_set_add(w, (gm_metric)m);
        switch (gm_smi_field_kind(fields[i])) {
        case GM_SMI_K_SERIAL:
        case GM_SMI_K_VBIOS:
        case GM_SMI_K_INFOROM:
            w->board_strings = true;
            break;
        case GM_SMI_K_PLATFORM_SERIAL:
        case GM_SMI_K_PLATFORM_GUID:
            gm_metric_set_add(w, GM_M_PLATFORM_SLOT);
            break;
        case GM_SMI_K_FABRIC_STATUS:
        case GM_SMI_K_FABRIC_UUID:
            gm_metric_set_add(w, GM_M_FABRIC_STATE);
            break;
        default:
            break;
        }
    }
}

const char *gm_smi_field_absent(int id)
{
    return gm_smi_profile_absent(&profiles[N_PROFILES - 1], id);
}

/* ---- printing ------------------------------------------------------------------------------ */

int gm_smi_parse_fields(const char *list, int *ids, size_t max, size_t *n, gm_error *err)
{
    return gm_smi_parse_fields_for(NULL, list, ids, max, n, err);
}

int gm_smi_parse_fields_for(const gm_smi_profile *prof, const char *list, int *ids, size_t max,
                            size_t *n, gm_error *err)
{
    *n = 0;
    if (!list)
        list = "";
    const char *p = list;
    for (;;) {
        size_t len = strcspn(p, ",");
        char name[128];
        if (len >= sizeof name)
            return gm_error_set(err, GM_EINVAL, "Field \"%.*s\" is not a valid field to query.",
                                (int)len, p);
        memcpy(name, p, len);
        name[len] = '\0';
        int id = gm_smi_field_find(name);
        if (id < 0 || (prof && !gm_smi_profile_has(prof, id)))
            return gm_error_set(err, GM_EINVAL, "Field \"%s\" is not a valid field to query.",
                                name);
        if (*n >= max)
            return gm_error_set(err, GM_EINVAL, "too many fields to query (at most %zu)", max);
        ids[(*n)++] = id;
        if (!p[len])
            break;
        p += len + 1;
    }
    return GM_OK;
}

int gm_smi_parse_format(const char *spec, unsigned *flags, gm_error *err)
{
    *flags = 0;
    bool csv = false;
    const char *p = spec ? spec : "";
    for (;;) {
        size_t len = strcspn(p, ",");
        if (len == 3 && strncmp(p, "csv", 3) == 0)
            csv = true;
        else if (len == 8 && strncmp(p, "noheader", 8) == 0)
            *flags |= GM_SMI_NOHEADER;
        else if (len == 7 && strncmp(p, "nounits", 7) == 0)
            *flags |= GM_SMI_NOUNITS;
        else
            return gm_error_set(err, GM_EINVAL,
                                "Format modifier \"%.*s\" is not recognized (expected csv, "
                                "noheader, nounits).",
                                (int)len, p);
        if (!p[len])
            break;
        p += len + 1;
    }
    if (!csv)
        return gm_error_set(err, GM_EINVAL, "--format must include \"csv\".");
    return GM_OK;
}

static int put(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int put(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
    if (r < 0) {
        if (cap)
            buf[0] = '\0';
        return 0;
    }
    return (size_t)r >= cap && cap ? (int)cap - 1 : r;
}

static int put_str(char *buf, size_t cap, const char *s)
{
    return put(buf, cap, "%s", s && s[0] ? s : "[N/A]");
}

static int format_timestamp(int64_t ms, char *buf, size_t cap)
{
    if (ms <= 0)
        return put(buf, cap, "[N/A]");
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (!localtime_r(&t, &tm))
        return put(buf, cap, "[N/A]");
    return put(buf, cap, "%04d/%02d/%02d %02d:%02d:%02d.%03d", tm.tm_year + 1900, tm.tm_mon + 1,
               tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

/* nvidia-smi's words for the enum values of a kind; NULL for a value it has none for.
 * Checked against nvidia-smi 590's H100 capture: "None" (addressing mode, recovery action) and
 * "Completed"; the other words are NVML's names of the values (nvml.h, and NVIDIA's "Error
 * Recovery and Response Flags" for the recovery actions), not seen in a capture yet. */
const char *gm_smi_enum_word(gm_smi_kind kind, long long v)
{
    static const char *const addressing[] = {"None", "HMM", "ATS"};
    static const char *const recovery[] = {"None",      "Reset",           "Reboot",
                                           "Drain P2P", "Drain and Reset", "Recover IMEX Domain"};
    /* NVML_GPU_FABRIC_STATE_NOT_SUPPORTED (0) has no word: the field stays at the placeholder. */
    static const char *const fabric[] = {NULL, "Not Started", "In Progress", "Completed"};
    static const char *const compute_mode[] = {"Default", "Exclusive_Thread", "Prohibited",
                                               "Exclusive_Process"};
    const char *const *t = NULL;
    long long n = 0;
    switch (kind) {
    case GM_SMI_K_COMPUTE_MODE:
        t = compute_mode, n = 4;
        break;
    case GM_SMI_K_ADDRESSING:
        t = addressing, n = 3;
        break;
    case GM_SMI_K_RECOVERY:
        t = recovery, n = 6;
        break;
    case GM_SMI_K_FABRIC_STATE:
        t = fabric, n = 4;
        break;
    default:
        return NULL;
    }
    return v >= 0 && v < n ? t[v] : NULL;
}

/* Readings arrive as doubles; out-of-range ones are clamped rather than cast (undefined). */
static unsigned long long to_u64(double v)
{
    if (!(v > 0))
        return 0;
    if (v >= 18446744073709551615.0)
        return ULLONG_MAX;
    return (unsigned long long)v;
}

static long long to_i64(double v)
{
    if (v >= 9.2e18)
        return LLONG_MAX;
    if (v <= -9.2e18)
        return LLONG_MIN;
    return llround(v);
}

/* The helpers below return NOT_MINE for a kind they do not format; put() never returns it. */
enum { NOT_MINE = -1 };

/* Fields read from the snapshot or the GPU's identity: printed even for a lost GPU. */
static int format_identity(const gm_snapshot *s, const gm_gpu *g, const smi_field_info *f,
                           const char *absent, char *buf, size_t cap)
{
    switch (f->kind) {
    case GM_SMI_K_TIMESTAMP:
        return format_timestamp(s->time_ms, buf, cap);
    case GM_SMI_K_DRIVER:
        return put_str(buf, cap, s->driver_version);
    case GM_SMI_K_COUNT:
        return put(buf, cap, "%u", s->gpu_count);
    case GM_SMI_K_INDEX:
        return put(buf, cap, "%u", g->index);
    case GM_SMI_K_NAME:
        return put_str(buf, cap, g->name);
    case GM_SMI_K_UUID:
        return put_str(buf, cap, g->uuid);
    case GM_SMI_K_BUSID:
        return put_str(buf, cap, g->pci_bus_id);
    case GM_SMI_K_NA:
        return put(buf, cap, "%s", absent);
    default:
        return NOT_MINE;
    }
}

/* Text fields of a reachable GPU, and the PCI parts cut from its bus id. */
static int format_text(const gm_gpu *g, const smi_field_info *f, const char *absent, char *buf,
                       size_t cap)
{
    switch (f->kind) {
    case GM_SMI_K_SERIAL:
        return put_str(buf, cap, g->serial);
    case GM_SMI_K_VBIOS:
        return put_str(buf, cap, g->vbios);
    case GM_SMI_K_INFOROM:
        return put_str(buf, cap, g->inforom[f->arg % GM_INFOROM__COUNT]);
    case GM_SMI_K_FABRIC_STATUS:
    case GM_SMI_K_FABRIC_UUID: {
        const char *t =
            f->kind == GM_SMI_K_FABRIC_STATUS ? g->fabric_status : g->fabric_cluster_uuid;
        return put(buf, cap, "%s", t[0] ? t : absent);
    }
    case GM_SMI_K_PLATFORM_SERIAL:
        /* 580 printed an empty chassis serial as nothing at all: the platform was read. */
        if (gm_gpu_has(g, GM_M_PLATFORM_SLOT))
            return put(buf, cap, "%s", g->platform_serial);
        return put(buf, cap, "%s", absent);
    case GM_SMI_K_PLATFORM_GUID:
        return put_str(buf, cap, g->platform_guid);
    case GM_SMI_K_PCI_DOMAIN:
    case GM_SMI_K_PCI_BUS:
    case GM_SMI_K_PCI_DEVICE: {
        unsigned dom, bus, dev, fn;
        if (sscanf(g->pci_bus_id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4)
            return put(buf, cap, "[N/A]");
        if (f->kind == GM_SMI_K_PCI_DOMAIN)
            return put(buf, cap, "0x%04X", dom & 0xffffu);
        return put(buf, cap, "0x%02X", (f->kind == GM_SMI_K_PCI_BUS ? bus : dev) & 0xffu);
    }
    default:
        return NOT_MINE;
    }
}

/* A reading v of the field's metric, as nvidia-smi prints it. */
static int format_reading(const smi_field_info *f, double v, unsigned flags, char *buf, size_t cap)
{
    /* nvidia-smi separates value and unit by one space: "45 %", "1024 MiB". */
    const char *sep = (flags & GM_SMI_NOUNITS) || !f->unit[0] ? "" : " ";
    const char *unit = (flags & GM_SMI_NOUNITS) ? "" : f->unit;
    switch (f->kind) {
    case GM_SMI_K_INT:
        return put(buf, cap, "%lld%s%s", to_i64(v), sep, unit);
    case GM_SMI_K_MIB:
        /* nvidia-smi rounds bytes up to whole MiB: on an H200 (driver 580) NVML's 615.0625 MiB
         * reserved printed as 616 and 141389.125 MiB free as 141390
         * (scripts/nvml-memory-rounding.py). */
        {
            unsigned long long b = to_u64(v);
            return put(buf, cap, "%llu%s%s", b / GM_BYTES_PER_MIB + (b % GM_BYTES_PER_MIB != 0),
                       sep, unit);
        }
    case GM_SMI_K_WATT:
        return put(buf, cap, "%.2f%s%s", v / 1000.0, sep, unit);
    case GM_SMI_K_PSTATE:
        return put(buf, cap, "P%lld", to_i64(v));
    case GM_SMI_K_US:
        return put(buf, cap, "%llu%s%s", to_u64(v) / 1000ULL, sep, unit);
    case GM_SMI_K_ENABLED:
        return put(buf, cap, "%s", v != 0 ? "Enabled" : "Disabled");
    case GM_SMI_K_YESNO:
        return put(buf, cap, "%s", v != 0 ? "Yes" : "No");
    case GM_SMI_K_VALID:
        return put(buf, cap, "%s", v != 0 ? "valid" : "invalid");
    case GM_SMI_K_PEER_TYPE:
        /* Both captures print "Direct Connected" for 0; nvml.h names no other value yet. */
        return to_i64(v) == 0 ? put(buf, cap, "Direct Connected") : put(buf, cap, "[N/A]");
    case GM_SMI_K_ACTIVE_BIT:
        return put(buf, cap, "%s", (to_u64(v) >> (f->arg & 63)) & 1 ? "Active" : "Not Active");
    case GM_SMI_K_HEX64:
        return put(buf, cap, "0x%016llX", to_u64(v));
    case GM_SMI_K_HEX32:
        return put(buf, cap, "0x%08llX", to_u64(v) & 0xffffffffULL);
    case GM_SMI_K_HEX:
        return put(buf, cap, "0x%llX", to_u64(v));
    case GM_SMI_K_COMPUTE_CAP: {
        long long c = to_i64(v);
        return put(buf, cap, "%lld.%lld", c / 10, c % 10);
    }
    case GM_SMI_K_PCT2:
        return put(buf, cap, "%.2f%s%s", v, sep, unit);
    case GM_SMI_K_COMPUTE_MODE:
    case GM_SMI_K_ADDRESSING:
    case GM_SMI_K_RECOVERY:
    case GM_SMI_K_FABRIC_STATE: {
        const char *word = gm_smi_enum_word(f->kind, to_i64(v));
        return put(buf, cap, "%s", word ? word : "[N/A]");
    }
    default:
        return put(buf, cap, "[N/A]");
    }
}

int gm_smi_format_value(const gm_snapshot *s, const gm_gpu *g, int id, unsigned flags, char *buf,
                        size_t cap)
{
    if (!valid_id(id)) {
        if (cap)
            buf[0] = '\0';
        return GM_EINVAL;
    }
    const smi_field_info *f = &field_table[id];
    const gm_smi_profile *prof = gm_smi_profile_for(s->driver_version);
    if (gm_smi_profile_deprecated(prof, id))
        return put(buf, cap, "%s", SMI_DEPRECATED);
    const char *absent = gm_smi_profile_absent(prof, id);
    int r = format_identity(s, g, f, absent, buf, cap);
    if (r != NOT_MINE)
        return r;
    if (g->lost)
        return put(buf, cap, "[GPU is lost]");
    r = format_text(g, f, absent, buf, cap);
    if (r != NOT_MINE)
        return r;
    if (!gm_gpu_has(g, (gm_metric)f->metric) || !isfinite(g->v[f->metric]))
        return put(buf, cap, "%s", absent);
    return format_reading(f, g->v[f->metric], flags, buf, cap);
}

int gm_smi_format_csv(FILE *out, const gm_snapshot *s, const int *ids, size_t n, unsigned flags,
                      const unsigned *gpus, size_t ngpus, gm_error *err)
{
    if (n == 0)
        return gm_error_set(err, GM_EINVAL, "no field to query");
    for (size_t i = 0; i < n; i++)
        if (!valid_id(ids[i]))
            return gm_error_set(err, GM_EINVAL, "unknown field id %d", ids[i]);
    if (!gpus)
        ngpus = 0;
    for (size_t k = 0; k < ngpus; k++)
        if (!gm_snapshot_gpu(s, gpus[k]))
            return gm_error_set(err, GM_ENOENT, "no GPU with index %u", gpus[k]);

    if (!(flags & GM_SMI_NOHEADER)) {
        for (size_t i = 0; i < n; i++)
            fprintf(out, "%s%s", i ? ", " : "", gm_smi_field_header(ids[i]));
        fputc('\n', out);
    }
    for (unsigned gi = 0; gi < s->gpu_count; gi++) {
        const gm_gpu *g = &s->gpus[gi];
        if (ngpus) {
            bool wanted = false;
            for (size_t k = 0; k < ngpus && !wanted; k++)
                wanted = gpus[k] == g->index;
            if (!wanted)
                continue;
        }
        for (size_t i = 0; i < n; i++) {
            char value[GM_NAME_LEN + 32];
            gm_smi_format_value(s, g, ids[i], flags, value, sizeof value);
            fprintf(out, "%s%s", i ? ", " : "", value);
        }
        fputc('\n', out);
    }
    if (fflush(out) != 0 || ferror(out))
        return gm_error_set(err, GM_EIO, "cannot write output: %s", strerror(errno));
    return GM_OK;
}

/* ---- parsing ------------------------------------------------------------------------------- */

/* Appends one "; "-separated note to warn. */
static void warn_add(char *warn, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void warn_add(char *warn, size_t cap, const char *fmt, ...)
{
    if (!warn || !cap)
        return;
    size_t used = strnlen(warn, cap);
    if (used + 3 >= cap)
        return;
    if (used) {
        memcpy(warn + used, "; ", 3);
        used += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(warn + used, cap - used, fmt, ap);
    va_end(ap);
}

/* Cuts text into lines in place: returns the next line (without CR/LF) or NULL at the end. */
static char *next_line(char **cursor)
{
    char *p = *cursor;
    if (!p || !*p)
        return NULL;
    char *nl = strchr(p, '\n');
    if (nl) {
        *nl = '\0';
        *cursor = nl + 1;
    } else {
        *cursor = p + strlen(p);
    }
    size_t len = strlen(p);
    while (len && (p[len - 1] == '\r' || isspace((unsigned char)p[len - 1])))
        p[--len] = '\0';
    return p;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t len = strlen(s);
    while (len && isspace((unsigned char)s[len - 1]))
        s[--len] = '\0';
    return s;
}

/* Splits line at commas into at most max trimmed columns; returns how many there were in all. */
static size_t split_columns(char *line, char **cols, size_t max)
{
    size_t n = 0;
    char *p = line;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (n < max)
            cols[n] = trim(p);
        n++;
        if (!comma)
            break;
        p = comma + 1;
    }
    return n;
}

static void quote_line(const char *line, char *buf, size_t cap)
{
    size_t len = strlen(line);
    if (len + 1 <= cap || cap < 4) {
        snprintf(buf, cap, "%s", line);
        return;
    }
    snprintf(buf, cap, "%.*s...", (int)(cap - 4), line);
}

typedef enum value_class { VAL_NUMBER, VAL_ABSENT, VAL_LOST } value_class;

/* Sorts nvidia-smi's placeholders: "[N/A]", "[Not Supported]", "[Unknown Error]"... are absent,
 * "[GPU is lost]" and "[GPU requires reset]" mean the GPU fell off. */
static value_class classify(const char *v)
{
    if (!v[0] || strcmp(v, "N/A") == 0 || strcmp(v, "Not Supported") == 0)
        return VAL_ABSENT;
    if (strcasestr(v, "GPU is lost") || strcasestr(v, "GPU requires reset"))
        return VAL_LOST;
    if (v[0] == '[')
        return VAL_ABSENT;
    return VAL_NUMBER;
}

/* Parses "12", "12.5" or "12.5 W" (unit optional but, when present, the field's own). */
static bool parse_number(const char *text, const char *unit, double *out)
{
    if (!isdigit((unsigned char)text[0]) && text[0] != '.')
        return false;
    errno = 0;
    char *end;
    double v = strtod(text, &end);
    /* No reading nvidia-smi prints comes near 1e15; larger is garbage, not a value. */
    if (end == text || errno == ERANGE || !isfinite(v) || v > 1e15)
        return false;
    while (*end == ' ')
        end++;
    if (*end && (!unit[0] || strcmp(end, unit) != 0))
        return false;
    *out = v;
    return true;
}

static bool parse_uint(const char *text, unsigned long long max, unsigned long long *out)
{
    if (!isdigit((unsigned char)text[0]))
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (*end || errno == ERANGE || v > max)
        return false;
    *out = v;
    return true;
}

static void copy_text(char *dst, size_t cap, const char *src)
{
    if (classify(src) != VAL_NUMBER)
        return; /* placeholders are not names */
    gm_str_copy(dst, cap, src);
}

/* The string of g (or s) a text field is stored in, with its size; NULL for other kinds. */
static char *text_slot(const smi_field_info *f, gm_gpu *g, gm_snapshot *s, size_t *cap)
{
    switch (f->kind) {
    case GM_SMI_K_NAME:
        *cap = sizeof g->name;
        return g->name;
    case GM_SMI_K_UUID:
        *cap = sizeof g->uuid;
        return g->uuid;
    case GM_SMI_K_BUSID:
        *cap = sizeof g->pci_bus_id;
        return g->pci_bus_id;
    case GM_SMI_K_DRIVER:
        *cap = sizeof s->driver_version;
        return s->driver_version;
    case GM_SMI_K_SERIAL:
        *cap = sizeof g->serial;
        return g->serial;
    case GM_SMI_K_VBIOS:
        *cap = sizeof g->vbios;
        return g->vbios;
    case GM_SMI_K_INFOROM:
        *cap = GM_INFOROM_LEN;
        return g->inforom[f->arg % GM_INFOROM__COUNT];
    case GM_SMI_K_FABRIC_STATUS:
        *cap = sizeof g->fabric_status;
        return g->fabric_status;
    case GM_SMI_K_FABRIC_UUID:
        *cap = sizeof g->fabric_cluster_uuid;
        return g->fabric_cluster_uuid;
    default:
        return NULL;
    }
}

/* Kinds whose column the parser leaves alone. */
static bool ignored_when_parsing(gm_smi_kind kind)
{
    switch (kind) {
    case GM_SMI_K_TIMESTAMP:
    case GM_SMI_K_COUNT:
    case GM_SMI_K_PCI_DOMAIN:
    case GM_SMI_K_PCI_BUS:
    case GM_SMI_K_PCI_DEVICE:
    case GM_SMI_K_NA:
    case GM_SMI_K_VALID: /* not asked by the nvidia-smi provider */
    case GM_SMI_K_PEER_TYPE:
    case GM_SMI_K_PLATFORM_SERIAL:
    case GM_SMI_K_PLATFORM_GUID:
    case GM_SMI_K_INDEX: /* read by the row parser */
        return true;
    default:
        return false;
    }
}

/* One of two words, the first meaning 1 and the second 0. */
static bool parse_flag(const char *text, const char *one, const char *zero, double *out)
{
    if (strcmp(text, one) == 0)
        *out = 1;
    else if (strcmp(text, zero) == 0)
        *out = 0;
    else
        return false;
    return true;
}

static bool parse_enum(gm_smi_kind kind, const char *text, double *out)
{
    for (long long k = 0; k < 8; k++) {
        const char *word = gm_smi_enum_word(kind, k);
        if (word && strcmp(word, text) == 0) {
            *out = (double)k;
            return true;
        }
    }
    return false;
}

/* "0x" and hex digits, nothing after them. */
static bool parse_hex(const char *text, double *out)
{
    if (text[0] != '0' || (text[1] != 'x' && text[1] != 'X') || !isxdigit((unsigned char)text[2]))
        return false;
    errno = 0;
    char *end;
    unsigned long long mask = strtoull(text + 2, &end, 16);
    if (*end || errno == ERANGE)
        return false;
    *out = (double)mask;
    return true;
}

/* Converts a reading nvidia-smi printed back into the unit gpumon keeps; false if it does not
 * parse. */
static bool parse_reading(const smi_field_info *f, const char *text, double *out)
{
    double v;
    switch (f->kind) {
    case GM_SMI_K_INT:
    case GM_SMI_K_PCT2:
        return parse_number(text, f->unit, out);
    case GM_SMI_K_MIB:
        if (!parse_number(text, f->unit, &v))
            return false;
        *out = v * (double)GM_BYTES_PER_MIB;
        return true;
    case GM_SMI_K_WATT:
        if (!parse_number(text, f->unit, &v))
            return false;
        *out = (double)llround(v * 1000.0);
        return true;
    case GM_SMI_K_US:
        if (!parse_number(text, f->unit, &v))
            return false;
        *out = v * 1000.0;
        return true;
    case GM_SMI_K_PSTATE: {
        unsigned long long p;
        if (text[0] != 'P' || !parse_uint(text + 1, 15, &p))
            return false;
        *out = (double)p;
        return true;
    }
    case GM_SMI_K_ENABLED:
        return parse_flag(text, "Enabled", "Disabled", out);
    case GM_SMI_K_YESNO:
        return parse_flag(text, "Yes", "No", out);
    case GM_SMI_K_COMPUTE_MODE:
    case GM_SMI_K_ADDRESSING:
    case GM_SMI_K_RECOVERY:
    case GM_SMI_K_FABRIC_STATE:
        return parse_enum(f->kind, text, out);
    case GM_SMI_K_COMPUTE_CAP: {
        unsigned major, minor;
        char extra;
        if (sscanf(text, "%u.%u%c", &major, &minor, &extra) != 2 || minor > 9 || major > 1000)
            return false;
        *out = major * 10.0 + minor;
        return true;
    }
    case GM_SMI_K_HEX:
    case GM_SMI_K_HEX32:
    case GM_SMI_K_HEX64:
        return parse_hex(text, out);
    default:
        return false;
    }
}

/* Stores the text of field id into g. Returns 0 when stored or absent, 1 when the value says the
 * GPU is lost, -1 when it does not parse. */
static int parse_value(int id, const char *text, gm_gpu *g, gm_snapshot *s)
{
    const smi_field_info *f = &field_table[id];
    size_t cap;
    char *slot = text_slot(f, g, s, &cap);
    if (f->kind == GM_SMI_K_DRIVER) {
        /* one driver version per snapshot: the first one read stays */
        if (!slot[0])
            copy_text(slot, cap, text);
        return 0;
    }
    if (slot) {
        copy_text(slot, cap, text);
        return classify(text) == VAL_LOST;
    }
    if (ignored_when_parsing(f->kind))
        return 0;

    value_class c = classify(text);
    if (c == VAL_LOST)
        return 1;
    if (c == VAL_ABSENT)
        return 0;
    if (f->kind == GM_SMI_K_ACTIVE_BIT) /* the mask itself comes from clocks_event_reasons.active */
        return strcmp(text, "Active") == 0 || strcmp(text, "Not Active") == 0 ? 0 : -1;
    double v;
    if (!parse_reading(f, text, &v))
        return -1;
    gm_gpu_set(g, (gm_metric)f->metric, v);
    return 0;
}

/* nvidia-smi's line for a GPU it cannot reach, printed where that GPU's row would be:
 * "Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost.  Reboot the system
 * to recover this GPU" (older drivers put a space before the bus id; the reason varies, e.g.
 * "Unknown Error"). Writes the bus id as pci.bus_id spells it (8-digit domain) into bus and
 * points *reason at the text after it. False when line is not such a line. */
static bool parse_unreachable(const char *line, char *bus, size_t cap, const char **reason)
{
    static const char prefix[] = "Unable to determine the device handle for GPU";
    if (strncmp(line, prefix, sizeof prefix - 1) != 0)
        return false;
    const char *p = line + sizeof prefix - 1;
    while (*p == ' ')
        p++;
    size_t len = 0;
    while (isxdigit((unsigned char)p[len]) || p[len] == ':' || p[len] == '.')
        len++;
    const char *rest = p + len;
    while (len && p[len - 1] == ':') /* the colon before the reason */
        len--;
    const char *colon = memchr(p, ':', len);
    size_t domain = colon ? (size_t)(colon - p) : 0;
    if (!colon || domain == 0 || domain > 8 || len - domain < 8 || len - domain >= cap)
        return false;
    snprintf(bus, cap, "%.*s%.*s", (int)(8 - domain), "00000000", (int)len, p);
    while (*rest == ':' || *rest == ' ')
        rest++;
    *reason = rest;
    return true;
}

static int cmp_gpu_index(const void *a, const void *b)
{
    unsigned x = ((const gm_gpu *)a)->index, y = ((const gm_gpu *)b)->index;
    return (x > y) - (x < y);
}

/* What reading a --query-gpu CSV has gathered so far. */
typedef struct csv_parse {
    const int *ids;
    size_t n, index_col; /* index_col: the index column, n when there is none */
    gm_snapshot *out;
    char *warn;
    size_t cap;
    char **cols; /* n columns of the line at hand */
    char first_bad[160], first_reason[96];
    size_t rows, bad;
    bool no_devices;
    /* nvidia-smi prints one line per GPU in index order, a row or an "Unable to determine"
     * line, so an unreachable GPU's index is its line's position among them, as long as every
     * row sits at the position of its own index. */
    const char *unreachable[GM_MAX_GPUS];
    size_t unreachable_pos[GM_MAX_GPUS], n_unreachable, pos;
    bool positional;
} csv_parse;

/* Counts a line skipped for reason, remembering the first for the error when none is left. */
static void skip_row(csv_parse *p, const char *raw, const char *reason)
{
    p->bad++;
    if (!p->first_bad[0]) {
        snprintf(p->first_bad, sizeof p->first_bad, "%s", raw);
        snprintf(p->first_reason, sizeof p->first_reason, "%s", reason);
    }
    warn_add(p->warn, p->cap, "skipped row \"%s\": %s", raw, reason);
}

/* Why the row with columns have cannot be a GPU of its own (NULL when it can); its index in
 * *index (the row's position when there is no index column). */
static const char *row_refusal(csv_parse *p, size_t have, unsigned long long *index, char *why,
                               size_t why_cap)
{
    const char *reason = NULL;
    *index = p->rows;
    bool has_index = p->index_col < have && parse_uint(p->cols[p->index_col], ULLONG_MAX, index);
    if (p->index_col < p->n && !has_index)
        reason = "no GPU index";
    if (has_index && *index != p->pos++)
        p->positional = false;
    /* Indexes are the driver's enumeration order, so a real one is below the number of GPUs
     * gpumon keeps; a larger one would name a GPU nothing else can follow. */
    if (!reason && p->index_col < p->n && *index >= GM_MAX_GPUS) {
        snprintf(why, why_cap, "GPU index %llu is beyond the %d GPUs gpumon supports", *index,
                 GM_MAX_GPUS);
        reason = why;
    }
    for (unsigned k = 0; !reason && k < p->out->gpu_count; k++)
        if (p->out->gpus[k].index == *index)
            reason = "repeated GPU index";
    if (!reason && p->out->gpu_count >= GM_MAX_GPUS)
        reason = "more GPUs than gpumon keeps";
    return reason;
}

/* One line of values (trimmed, not blank, not an unreachable GPU): a GPU, a header, or skipped. */
static void parse_row(csv_parse *p, char *line)
{
    char raw[160];
    quote_line(line, raw, sizeof raw);
    size_t ncols = split_columns(line, p->cols, p->n);
    size_t have = ncols < p->n ? ncols : p->n;
    const int *ids = p->ids;
    /* A header line (format without noheader) names the first field instead of a value. */
    if (p->rows == 0 && have > 0 &&
        (strcmp(p->cols[0], field_table[ids[0]].header) == 0 ||
         strcmp(p->cols[0], gm_smi_field_header(ids[0])) == 0))
        return;

    char why[96];
    unsigned long long index;
    const char *reason = row_refusal(p, have, &index, why, sizeof why);
    if (reason) {
        skip_row(p, raw, reason);
        return;
    }

    gm_gpu *g = &p->out->gpus[p->out->gpu_count];
    memset(g, 0, sizeof *g);
    g->index = (unsigned)index;
    bool lost = false;
    for (size_t i = 0; i < have; i++) {
        int r = parse_value(ids[i], p->cols[i], g, p->out);
        if (r > 0)
            lost = true;
        else if (r < 0)
            warn_add(p->warn, p->cap, "GPU %u: %s \"%s\" does not parse", g->index,
                     field_table[ids[i]].name, p->cols[i]);
    }
    if (lost) {
        /* No reading of a GPU that fell off the bus is trustworthy. */
        g->lost = true;
        gm_gpu_clear(g);
    }
    p->out->gpu_count++;
    p->rows++;
}

/* Unreachable GPUs: reported lost, identified by their bus id, when their index is known. */
static void place_unreachable(csv_parse *p)
{
    gm_snapshot *out = p->out;
    bool placed = false;
    for (size_t u = 0; u < p->n_unreachable; u++) {
        char bus[GM_BUSID_LEN], raw[160];
        const char *why_not = "";
        parse_unreachable(p->unreachable[u], bus, sizeof bus, &why_not);
        quote_line(p->unreachable[u], raw, sizeof raw);
        unsigned index = (unsigned)p->unreachable_pos[u];
        if (!p->positional || index >= GM_MAX_GPUS || gm_snapshot_gpu(out, index) ||
            out->gpu_count >= GM_MAX_GPUS) {
            skip_row(p, raw, "cannot tell its GPU index");
            continue;
        }
        gm_gpu *g = &out->gpus[out->gpu_count++];
        memset(g, 0, sizeof *g);
        g->index = index;
        g->lost = true;
        snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%s", bus);
        quote_line(why_not, raw, sizeof raw);
        warn_add(p->warn, p->cap, "GPU %u (%s) does not answer: %s", index, bus, raw);
        placed = true;
    }
    if (placed)
        qsort(out->gpus, out->gpu_count, sizeof *out->gpus, cmp_gpu_index);
}

int gm_smi_parse_gpu_csv(const char *text, const int *ids, size_t n, gm_snapshot *out, char *warn,
                         size_t cap, gm_error *err)
{
    if (warn && cap)
        warn[0] = '\0';
    out->gpu_count = 0;
    if (n == 0 || n > GM_SMI_MAX_FIELDS)
        return gm_error_set(err, GM_EINVAL, "bad field list");
    for (size_t i = 0; i < n; i++)
        if (!valid_id(ids[i]))
            return gm_error_set(err, GM_EINVAL, "unknown field id %d", ids[i]);
    char *copy = strdup(text ? text : "");
    char **cols = malloc(n * sizeof *cols);
    if (!copy || !cols) {
        free(copy);
        free(cols);
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    }
    csv_parse parse = {
        .ids = ids, .n = n, .index_col = n, .out = out, .warn = warn, .cap = cap, .cols = cols};
    csv_parse *p = &parse;
    for (size_t i = 0; i < n && p->index_col == n; i++)
        if (ids[i] == GM_SMI_F_INDEX)
            p->index_col = i;
    p->positional = p->index_col < n;

    char *cursor = copy;
    for (char *line; (line = next_line(&cursor));) {
        line = trim(line);
        if (!line[0])
            continue;
        if (strstr(line, "No devices were found")) {
            p->no_devices = true;
            continue;
        }
        char bus[GM_BUSID_LEN];
        const char *why_not;
        if (!parse_unreachable(line, bus, sizeof bus, &why_not)) {
            parse_row(p, line);
            continue;
        }
        if (p->n_unreachable < GM_MAX_GPUS) {
            p->unreachable[p->n_unreachable] = line; /* copy lives until the end */
            p->unreachable_pos[p->n_unreachable++] = p->pos;
        } else {
            p->positional = false;
        }
        p->pos++;
    }
    place_unreachable(p);

    int rc;
    if (out->gpu_count > 0)
        rc = GM_OK;
    else if (p->bad > 0)
        rc = gm_error_set(err, GM_EPARSE,
                          "nvidia-smi printed no GPU row gpumon understands: \"%s\" (%s)",
                          p->first_bad, p->first_reason);
    else if (p->no_devices)
        rc = gm_error_set(err, GM_ENODEV, "nvidia-smi: No devices were found");
    else
        rc = gm_error_set(err, GM_ENODEV, "nvidia-smi lists no GPU");
    free(copy);
    free(cols);
    return rc;
}

int gm_smi_parse_apps_csv(const char *text, gm_snapshot *out, char *warn, size_t cap, gm_error *err)
{
    if (warn && cap)
        warn[0] = '\0';
    char *copy = strdup(text ? text : "");
    if (!copy)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    char *cursor = copy;
    for (char *line; (line = next_line(&cursor));) {
        line = trim(line);
        if (!line[0] || strstr(line, "No running processes found"))
            continue;
        char raw[160];
        quote_line(line, raw, sizeof raw);
        char *cols[3];
        size_t ncols = split_columns(line, cols, 3);
        if (ncols < 3) {
            warn_add(warn, cap, "skipped process row \"%s\": too few fields", raw);
            continue;
        }
        if (strcmp(cols[0], "gpu_uuid") == 0)
            continue; /* header line */
        const gm_gpu *g = NULL;
        for (unsigned k = 0; k < out->gpu_count && !g; k++)
            if (out->gpus[k].uuid[0] && strcmp(out->gpus[k].uuid, cols[0]) == 0)
                g = &out->gpus[k];
        unsigned long long pid;
        if (!g || !parse_uint(cols[1], UINT32_MAX, &pid) || pid == 0) {
            warn_add(warn, cap, "skipped process row \"%s\": %s", raw,
                     g ? "bad pid" : "unknown GPU uuid");
            continue;
        }
        gm_process p = {.gpu_index = g->index, .pid = (uint32_t)pid, .type = GM_PROC_COMPUTE};
        double mib;
        if (classify(cols[2]) == VAL_NUMBER && parse_number(cols[2], "MiB", &mib)) {
            /* Converting a double past 2^64 is undefined: such a figure is no reading. */
            if (mib * (double)GM_BYTES_PER_MIB < 18446744073709551615.0) {
                p.mem_valid = true;
                p.used_mem_bytes = (uint64_t)(mib * (double)GM_BYTES_PER_MIB);
            } else {
                warn_add(warn, cap, "process %llu: used memory \"%s\" is out of range", pid,
                         cols[2]);
            }
        }
        gm_snapshot_add_process(out, &p);
    }
    free(copy);
    return GM_OK;
}
