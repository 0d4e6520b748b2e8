/* cmd_smi.c - `gpumon smi`, and gpumon run through a link named nvidia-smi: nvidia-smi's
 * command line for reading GPUs (-L, --version, -h, --help-query-*, --query-gpu and the other
 * CSV queries, -q and -q -x, -i, -l, -lms, -f, the summary table), over gpumon's collector.
 * Options that change a GPU (-pm, -r, -e...) are refused, naming the option. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/file.h"
#include "base/parse.h"
#include "base/smi_format.h"
#include "collect/registry.h"

#define SMI_DEFAULT_LOOP_S 5 /* nvidia-smi's interval for -l without a number */

enum smi_action {
    ACT_SUMMARY,
    ACT_LIST,
    ACT_QUERY,
    ACT_CSV_GPU,
    ACT_CSV_APPS,
    ACT_CSV_RETIRED,
    ACT_CSV_REMAPPED,
};

/* -d sections of -q (text only, as nvidia-smi: "Doesn't work with -u or -x flags"). */
enum {
    D_MEMORY = 1 << 0,
    D_UTILIZATION = 1 << 1,
    D_ECC = 1 << 2,
    D_TEMPERATURE = 1 << 3,
    D_POWER = 1 << 4,
    D_CLOCK = 1 << 5,
    D_COMPUTE = 1 << 6,
    D_PIDS = 1 << 7,
    D_PERFORMANCE = 1 << 8,
    D_PAGE_RETIREMENT = 1 << 9,
    D_ENCODER_STATS = 1 << 10,
    D_ROW_REMAPPER = 1 << 11,
    D_OTHER = 1 << 12, /* types nvidia-smi knows and gpumon has nothing for */
    D_SUPPORTED_CLOCKS = 1 << 13,
    D_SUPPORTED_GPU_TARGET_TEMP = 1 << 14,
    D_FBC_STATS = 1 << 15,
    D_POWER_SMOOTHING = 1 << 16,
    D_POWER_PROFILES = 1 << 17,
    D_UNSORTED = 1 << 18, /* sections no -d type is known to show: printed only without -d */
};

static const struct {
    const char *name;
    unsigned bit;
} display_types[] = {
    {"MEMORY", D_MEMORY},
    {"UTILIZATION", D_UTILIZATION},
    {"ECC", D_ECC},
    {"TEMPERATURE", D_TEMPERATURE},
    {"POWER", D_POWER},
    {"CLOCK", D_CLOCK},
    {"COMPUTE", D_COMPUTE},
    {"PIDS", D_PIDS},
    {"PERFORMANCE", D_PERFORMANCE},
    {"SUPPORTED_CLOCKS", D_SUPPORTED_CLOCKS},
    {"PAGE_RETIREMENT", D_PAGE_RETIREMENT},
    {"ACCOUNTING", D_OTHER},
    {"ENCODER_STATS", D_ENCODER_STATS},
    {"SUPPORTED_GPU_TARGET_TEMP", D_SUPPORTED_GPU_TARGET_TEMP},
    {"VOLTAGE", D_OTHER},
    {"FBC_STATS", D_FBC_STATS},
    {"ROW_REMAPPER", D_ROW_REMAPPER},
    {"GSP_FIRMWARE_VERSION", D_OTHER},
    {"POWER_SMOOTHING", D_POWER_SMOOTHING},
    {"POWER_PROFILES", D_POWER_PROFILES},
};

typedef struct smi_opts {
    const char *me; /* "nvidia-smi" or "gpumon smi", for messages */
    enum smi_action action;
    bool xml;
    unsigned display; /* 0: everything */
    const char *query, *format, *file;
    gm_cli_gpu_filter filter;
    double loop_s;
    gm_cli_source src;
} smi_opts;

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* ---- the other queries' fields ------------------------------------------------------------- */

/* Fields of --query-compute-apps, --query-retired-pages and --query-remapped-rows. A field
 * that is also a --query-gpu field prints through that table (gpu_field); the rest are the
 * query's own (kind). */
enum { Q_GPU, Q_PID, Q_PROCESS_NAME, Q_USED_MEMORY, Q_PAGE_ADDRESS, Q_PAGE_TIME, Q_PAGE_CAUSE };

typedef struct qfield {
    const char *name, *alias, *header;
    int kind;
    int gpu_field; /* gm_smi_field for Q_GPU */
    const char *help;
} qfield;

#define QF_IDENTITY                                                                           \
    {"timestamp",                                                                             \
     NULL,                                                                                    \
     "timestamp",                                                                             \
     Q_GPU,                                                                                   \
     GM_SMI_F_TIMESTAMP,                                                                      \
     "The timestamp of when the query was made in format \"YYYY/MM/DD HH:MM:SS.msec\"."},     \
        {"gpu_name", NULL, "gpu_name", Q_GPU, GM_SMI_F_NAME, "The product name of the GPU."}, \
        {"gpu_bus_id",        NULL,                                                           \
         "gpu_bus_id",        Q_GPU,                                                          \
         GM_SMI_F_PCI_BUS_ID, "PCI bus id as \"domain:bus:device.function\", in hex."},       \
        {"gpu_serial",    NULL,                                                               \
         "gpu_serial",    Q_GPU,                                                              \
         GM_SMI_F_SERIAL, "The serial number printed on the board."},                         \
    {                                                                                         \
        "gpu_uuid", NULL, "gpu_uuid", Q_GPU, GM_SMI_F_UUID,                                   \
            "The globally unique identifier of the GPU."                                      \
    }

static const qfield apps_fields[] = {
    QF_IDENTITY,
    {"pid", NULL, "pid", Q_PID, 0, "Process ID of the compute application"},
    {"process_name", "name", "process_name", Q_PROCESS_NAME, 0, "Process Name"},
    {"used_gpu_memory", "used_memory", "used_gpu_memory [MiB]", Q_USED_MEMORY, 0,
     "Amount memory used on the device by the context."},
};

static const qfield retired_fields[] = {
    QF_IDENTITY,
    {"retired_pages.address", NULL, "retired_pages.address", Q_PAGE_ADDRESS, 0,
     "Address of a retired page."},
    {"retired_pages.timestamp", NULL, "retired_pages.timestamp", Q_PAGE_TIME, 0,
     "Timestamp at which the page was retired."},
    {"retired_pages.cause", NULL, "retired_pages.cause", Q_PAGE_CAUSE, 0,
     "Reason that describes why the page was retired: \"Single Bit ECC\" or \"Double Bit "
     "ECC\"."},
};

static const qfield remapped_fields[] = {
    QF_IDENTITY,
    {"remapped_rows.correctable", "remapped_rows.sbe", "remapped_rows.correctable", Q_GPU,
     GM_SMI_F_REMAPPED_ROWS_CORRECTABLE, "Number of rows remapped for correctable errors."},
    {"remapped_rows.uncorrectable", "remapped_rows.dbe", "remapped_rows.uncorrectable", Q_GPU,
     GM_SMI_F_REMAPPED_ROWS_UNCORRECTABLE, "Number of rows remapped for uncorrectable errors."},
    {"remapped_rows.pending", NULL, "remapped_rows.pending", Q_GPU, GM_SMI_F_REMAPPED_ROWS_PENDING,
     "Whether a remapping waits for a GPU reset."},
    {"remapped_rows.failure", NULL, "remapped_rows.failure", Q_GPU, GM_SMI_F_REMAPPED_ROWS_FAILURE,
     "Whether a remapping failed."},
};

#define NQ(a) (sizeof(a) / sizeof *(a))

static const qfield *qfield_find(const qfield *t, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(t[i].name, name) == 0 || (t[i].alias && strcmp(t[i].alias, name) == 0))
            return &t[i];
    return NULL;
}

/* Parses a comma-separated list of fields of table t into out; prints nvidia-smi's message for
 * an unknown one. */
static bool parse_qfields(const char *list, const qfield *t, size_t nt, const qfield **out,
                          size_t *n)
{
    *n = 0;
    const char *p = list;
    for (;;) {
        size_t len = strcspn(p, ",");
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)len, p);
        const qfield *f = len < sizeof name ? qfield_find(t, nt, name) : NULL;
        if (!f || *n >= GM_SMI_MAX_FIELDS) {
            fprintf(stderr, "Field \"%s\" is not a valid field to query.\n\n", name);
            return false;
        }
        out[(*n)++] = f;
        if (!p[len])
            return true;
        p += len + 1;
    }
}

/* ---- help ----------------------------------------------------------------------------------- */

static void print_help(FILE *out, const char *me)
{
    fprintf(out,
            "usage: gpumon smi [options]\n"
            "       nvidia-smi [options]    (gpumon run through a link named nvidia-smi)\n\n"
            "nvidia-smi's options for reading GPUs, answered from gpumon's collector (NVML,\n"
            "the nvidia-smi provider or simulated GPUs) in nvidia-smi's formats, so scripts\n"
            "and tools written for nvidia-smi work unchanged. Fields gpumon cannot read print\n"
            "what nvidia-smi prints when the driver cannot tell ([N/A]). Options that change\n"
            "a GPU (-pm, -e, -r...) are refused, naming the option.\n"
            "As %s, without options: the summary table.\n\n"
            "Options:\n"
            "  -h, --help                 print this help and exit\n"
            "      --version              NVIDIA-SMI, NVML, driver and CUDA versions\n"
            "  -L, --list-gpus            one line per GPU, with its UUID\n"
            "  -q, --query                everything gpumon knows of each GPU, as text\n"
            "  -x, --xml-format           with -q: the nvidia_smi_log XML\n"
            "      --dtd                  accepted with -x (the DTD is named, not embedded)\n"
            "  -d, --display TYPES        with -q: only MEMORY, UTILIZATION, ECC,\n"
            "                             TEMPERATURE, POWER, CLOCK, COMPUTE, PIDS,\n"
            "                             PERFORMANCE, PAGE_RETIREMENT, ENCODER_STATS,\n"
            "                             ROW_REMAPPER (comma-separated; nvidia-smi's other\n"
            "                             types print nothing); ignored with -x, which\n"
            "                             prints every section (as nvidia-smi: \"doesn't\n"
            "                             work with -u or -x flags\")\n"
            "  -i, --id LIST              only these GPUs: indices, UUIDs or PCI bus ids\n"
            "  -f, --filename FILE        write to FILE instead of standard output\n"
            "  -l, --loop [SECONDS]       repeat every SECONDS (default 5) until interrupted\n"
            "  -lms, --loop-ms MS         repeat every MS milliseconds until interrupted\n"
            "      --query-gpu LIST       GPU fields, nvidia-smi 590's 212 (--help-query-gpu)\n"
            "      --query-compute-apps LIST\n"
            "                             compute processes (--help-query-compute-apps)\n"
            "      --query-retired-pages LIST\n"
            "                             retired memory pages (--help-query-retired-pages)\n"
            "      --query-remapped-rows LIST\n"
            "                             remapped memory rows (--help-query-remapped-rows)\n"
            "      --format FMT           csv[,noheader][,nounits]; required with --query-*\n"
            "      --help-query-gpu       list the --query-gpu fields in nvidia-smi's layout\n"
            "      --help-query-compute-apps\n"
            "                             list the --query-compute-apps fields\n"
            "      --help-query-retired-pages\n"
            "                             list the --query-retired-pages fields\n"
            "      --help-query-remapped-rows\n"
            "                             list the --query-remapped-rows fields\n"
            "      --provider NAME        ",
            me);
    char providers[512];
    snprintf(providers, sizeof providers,
             "one of %s (default: auto, or $GPU_MONITOR_TELEMETRY_PROVIDER)", gm_provider_names());
    gm_opt_wrap(out, providers, 29, 29, 80);
    fprintf(out,
            "      --simulate N           use N simulated GPUs (provider sim, 1-%d)\n"
            "      --seed N               simulated GPUs read the same for the same N\n"
            "                             (default: each run reads differently, as real\n"
            "                             GPUs do)\n\n"
            "To be nvidia-smi for tools that run it:\n"
            "  ln -s \"$(command -v gpumon)\" ~/bin/nvidia-smi\n\n"
            "Exit status: 0 ok, 2 usage error (unknown option or field), 6 no GPU matches\n"
            "-i, 9 no GPU could be read (as nvidia-smi when the driver does not answer).\n",
            GM_MAX_GPUS);
}

/* The --help-query-gpu text of field i: the metric's description, or what the field is. */
static const char *gpu_field_help(int i)
{
    static const struct {
        int kind;
        const char *text;
    } by_kind[] = {
        {GM_SMI_K_TIMESTAMP,
         "The timestamp of when the query was made in format \"YYYY/MM/DD HH:MM:SS.msec\"."},
        {GM_SMI_K_DRIVER, "The version of the installed NVIDIA display driver."},
        {GM_SMI_K_COUNT, "The number of NVIDIA GPUs in the system."},
        {GM_SMI_K_INDEX, "Zero based index of the GPU. Can change at each boot."},
        {GM_SMI_K_NAME, "The official product name of the GPU."},
        {GM_SMI_K_UUID, "The globally unique immutable alphanumeric identifier of the GPU."},
        {GM_SMI_K_BUSID, "PCI bus id as \"domain:bus:device.function\", in hex."},
        {GM_SMI_K_SERIAL, "The serial number physically printed on the board."},
        {GM_SMI_K_VBIOS, "The BIOS of the GPU board."},
        {GM_SMI_K_PCI_DOMAIN, "PCI domain number, in hex."},
        {GM_SMI_K_PCI_BUS, "PCI bus number, in hex."},
        {GM_SMI_K_PCI_DEVICE, "PCI device number, in hex."},
        {GM_SMI_K_ACTIVE_BIT, "Whether this clock event reason holds the clocks down now."},
    };
    int kind = gm_smi_field_kind(i);
    for (size_t k = 0; k < NQ(by_kind); k++)
        if (by_kind[k].kind == kind)
            return by_kind[k].text;
    int m = gm_smi_field_metric(i);
    const gm_metric_info *mi = m >= 0 ? gm_metric_get((gm_metric)m) : NULL;
    return mi ? mi->description : "";
}

/* The fields of the loaded driver's nvidia-smi (its profile), in its order. */
static void print_help_query_gpu(FILE *out, const gm_smi_profile *prof)
{
    fprintf(out, "List of valid properties to query for the switch \"--query-gpu\":\n");
    for (int i = 0; i < GM_SMI_F__COUNT; i++) {
        if (!gm_smi_profile_has(prof, i))
            continue;
        /* nvidia-smi 590's name first (the header's), then the other spelling. */
        char primary[96];
        snprintf(primary, sizeof primary, "%s", gm_smi_field_header(i));
        char *bracket = strstr(primary, " [");
        if (bracket)
            *bracket = '\0';
        const char *name = gm_smi_field_name(i), *alias = gm_smi_field_alias(i);
        const char *other = strcmp(name, primary) != 0 ? name : alias;
        fprintf(out, "\n\"%s\"", primary);
        if (other && strcmp(other, primary) != 0)
            fprintf(out, " or \"%s\"", other);
        if (gm_smi_profile_deprecated(prof, i))
            fprintf(out, "\nDeprecated by this driver: always %s.\n",
                    gm_smi_profile_absent(prof, i));
        else if (gm_smi_field_kind(i) == GM_SMI_K_NA)
            fprintf(out, "\nNot read by gpumon: always %s.\n", gm_smi_profile_absent(prof, i));
        else
            fprintf(out, "\n%s\n", gpu_field_help(i));
    }
    fputc('\n', out);
}

static void print_help_qfields(FILE *out, const char *sw, const qfield *t, size_t n)
{
    fprintf(out, "List of valid properties to query for the switch \"%s\":\n", sw);
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "\n\"%s\"", t[i].name);
        if (t[i].alias)
            fprintf(out, " or \"%s\"", t[i].alias);
        fprintf(out, "\n%s\n", t[i].help);
    }
    fputc('\n', out);
}

/* ---- argument parsing --------------------------------------------------------------------- */

/* The value of an option given as --opt=VALUE, --opt VALUE, -o VALUE or -o=VALUE. */
static const char *take_value(int argc, char **argv, int *i, const char *arg, size_t name_len)
{
    if (arg[name_len] == '=')
        return arg + name_len + 1;
    if (arg[name_len] == '\0' && *i + 1 < argc)
        return argv[++*i];
    return NULL;
}

/* Is arg the option short (e.g. "-i") or long (e.g. "--id"), bare or with "=VALUE"? Returns the
 * length of the name matched, 0 when not. */
static size_t is_opt(const char *arg, const char *shrt, const char *lng)
{
    const char *names[2] = {shrt, lng};
    for (int k = 0; k < 2; k++) {
        if (!names[k])
            continue;
        size_t n = strlen(names[k]);
        if (strncmp(arg, names[k], n) == 0 && (arg[n] == '\0' || arg[n] == '='))
            return n;
    }
    return 0;
}

/* On a machine whose GPUs are another vendor's, says so: gpumon smi reads NVIDIA GPUs only. */
static void say_other_vendors(const gm_collector_options *nv)
{
    gm_collector_options o = *nv;
    o.vendor = NULL;
    o.provider = NULL;
    o.want = NULL;
    gm_collector *c = NULL;
    gm_snapshot *s = gm_snapshot_new();
    if (s && gm_collector_open(&o, &c, NULL) == GM_OK && gm_collector_sample(c, s, NULL) == GM_OK &&
        s->gpu_count > 0)
        fprintf(stderr,
                "gpumon smi shows NVIDIA GPUs only, as nvidia-smi does; this machine has %u GPU%s "
                "of another vendor (%s, read by %s): gpumon query and gpumon serve show them.\n\n",
                s->gpu_count, s->gpu_count == 1 ? "" : "s",
                s->gpus[0].vendor[0] ? s->gpus[0].vendor : "unknown", s->provider);
    gm_snapshot_free(s);
    gm_collector_close(c);
}

static int unsupported(const char *arg)
{
    fprintf(stderr,
            "Option \"%s\" is not supported by gpumon's nvidia-smi (it reads GPUs; it does not "
            "change them).\n"
            "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n\n",
            arg);
    return GM_EXIT_USAGE;
}

static int missing_value(const char *arg)
{
    fprintf(stderr,
            "Option \"%s\" needs a value.\n"
            "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n\n",
            arg);
    return GM_EXIT_USAGE;
}

static bool parse_display(const char *v, unsigned *out)
{
    *out = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", v);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        bool found = false;
        for (size_t k = 0; k < NQ(display_types) && !found; k++)
            if (strcasecmp(t, display_types[k].name) == 0) {
                *out |= display_types[k].bit;
                found = true;
            }
        if (!found) {
            fprintf(stderr,
                    "%s is not a valid display type.\n"
                    "Invalid combination of input arguments. Please run 'nvidia-smi -h' "
                    "for help.\n\n",
                    t);
            return false;
        }
    }
    return *out != 0;
}

typedef enum smi_help { HELP_NONE, HELP_GPU, HELP_APPS, HELP_RETIRED, HELP_REMAPPED } smi_help;

/* What the arguments ask for beyond smi_opts, read once they are all parsed. */
typedef struct smi_args {
    smi_help help;
    bool version;
    bool query_given;
} smi_args;

/* The argument parsers return ARG_NEXT when the argument was theirs and is stored, ARG_NOT_MINE
 * when it is not theirs, else the exit status. */
enum { ARG_NEXT = -1, ARG_NOT_MINE = -2 };

/* Switches without a value. */
static int parse_switch(const char *a, smi_opts *o, smi_args *p)
{
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
        print_help(stdout, o->me);
        return GM_EXIT_OK;
    } else if (strcmp(a, "--version") == 0) {
        p->version = true;
    } else if (strcmp(a, "--help-query-gpu") == 0) {
        p->help = HELP_GPU;
    } else if (strcmp(a, "--help-query-compute-apps") == 0) {
        p->help = HELP_APPS;
    } else if (strcmp(a, "--help-query-retired-pages") == 0) {
        p->help = HELP_RETIRED;
    } else if (strcmp(a, "--help-query-remapped-rows") == 0) {
        p->help = HELP_REMAPPED;
    } else if (strcmp(a, "-L") == 0 || strcmp(a, "--list-gpus") == 0) {
        o->action = ACT_LIST;
    } else if (strcmp(a, "-q") == 0 || strcmp(a, "--query") == 0) {
        o->action = ACT_QUERY;
    } else if (strcmp(a, "-x") == 0 || strcmp(a, "--xml-format") == 0) {
        o->xml = true;
    } else if (strcmp(a, "--dtd") == 0) {
        /* accepted: the DOCTYPE line names the DTD, which is not embedded */
    } else if (strcmp(a, "-x-q") == 0 || strcmp(a, "-qx") == 0 || strcmp(a, "-xq") == 0) {
        o->action = ACT_QUERY;
        o->xml = true;
    } else {
        return ARG_NOT_MINE;
    }
    return ARG_NEXT;
}

/* -lms/--loop-ms and -l/--loop. */
static int parse_loop(int argc, char **argv, int *i, smi_opts *o)
{
    const char *a = argv[*i];
    size_t n;
    if ((n = is_opt(a, "-lms", "--loop-ms"))) {
        const char *v = take_value(argc, argv, i, a, n);
        if (!v)
            return missing_value(a);
        unsigned long long ms;
        if (gm_parse_uint(v, 1, 86400000, &ms) < 0) {
            fprintf(stderr, "Invalid loop interval \"%s\" (milliseconds expected).\n\n", v);
            return GM_EXIT_USAGE;
        }
        o->loop_s = (double)ms / 1000.0;
        return ARG_NEXT;
    }
    if (!(n = is_opt(a, "-l", "--loop")))
        return ARG_NOT_MINE;
    /* -l alone loops every 5 s, as nvidia-smi; a number after it is the interval. */
    unsigned long long s = SMI_DEFAULT_LOOP_S;
    if (a[n] == '=') {
        if (gm_parse_uint(a + n + 1, 1, 86400, &s) < 0) {
            fprintf(stderr, "Invalid loop interval \"%s\" (seconds expected).\n\n", a + n + 1);
            return GM_EXIT_USAGE;
        }
    } else if (*i + 1 < argc && gm_parse_uint(argv[*i + 1], 1, 86400, &s) == 0) {
        (*i)++;
    } else {
        s = SMI_DEFAULT_LOOP_S;
    }
    o->loop_s = (double)s;
    return ARG_NEXT;
}

/* --query-gpu, --query-compute-apps, --query-retired-pages, --query-remapped-rows. */
static int parse_query_switch(int argc, char **argv, int *i, smi_opts *o, smi_args *p)
{
    const char *a = argv[*i];
    size_t n;
    if (!(n = is_opt(a, NULL, "--query-gpu")) && !(n = is_opt(a, NULL, "--query-compute-apps")) &&
        !(n = is_opt(a, NULL, "--query-retired-pages")) &&
        !(n = is_opt(a, NULL, "--query-remapped-rows")))
        return ARG_NOT_MINE;
    const char *v = take_value(argc, argv, i, a, n);
    if (!v)
        return missing_value(a);
    if (p->query_given) {
        fprintf(stderr, "Only one --query-* switch may be given.\n\n");
        return GM_EXIT_USAGE;
    }
    p->query_given = true;
    o->query = v;
    o->action = strncmp(a, "--query-gpu", 11) == 0             ? ACT_CSV_GPU
                : strncmp(a, "--query-compute-apps", 20) == 0  ? ACT_CSV_APPS
                : strncmp(a, "--query-retired-pages", 21) == 0 ? ACT_CSV_RETIRED
                                                               : ACT_CSV_REMAPPED;
    return ARG_NEXT;
}

/* The other options with a value, each spelled once: valued_opts[k] is option k. */
typedef enum valued_opt {
    OPT_DISPLAY,
    OPT_ID,
    OPT_FILENAME,
    OPT_FORMAT,
    OPT_PROVIDER,
    OPT_SIMULATE,
    OPT_SEED,
    OPT__COUNT
} valued_opt;

static const struct {
    const char *shrt, *lng;
} valued_opts[OPT__COUNT] = {
    [OPT_DISPLAY] = {"-d", "--display"},   [OPT_ID] = {"-i", "--id"},
    [OPT_FILENAME] = {"-f", "--filename"}, [OPT_FORMAT] = {NULL, "--format"},
    [OPT_PROVIDER] = {NULL, "--provider"}, [OPT_SIMULATE] = {NULL, "--simulate"},
    [OPT_SEED] = {NULL, "--seed"},
};

static int parse_valued(int argc, char **argv, int *i, smi_opts *o)
{
    const char *a = argv[*i];
    size_t n = 0;
    int k = 0;
    while (k < OPT__COUNT && !(n = is_opt(a, valued_opts[k].shrt, valued_opts[k].lng)))
        k++;
    if (k == OPT__COUNT)
        return ARG_NOT_MINE;
    const char *v = take_value(argc, argv, i, a, n);
    if (!v)
        return missing_value(a);
    unsigned long long u;
    switch ((valued_opt)k) {
    case OPT_DISPLAY:
        return parse_display(v, &o->display) ? ARG_NEXT : GM_EXIT_USAGE;
    case OPT_ID:
        return gm_cli_parse_gpu_filter("smi", v, &o->filter) ? ARG_NEXT : GM_EXIT_USAGE;
    case OPT_FILENAME:
        o->file = v;
        return ARG_NEXT;
    case OPT_FORMAT:
        o->format = v;
        return ARG_NEXT;
    case OPT_PROVIDER:
        o->src.provider = v;
        return ARG_NEXT;
    case OPT_SIMULATE:
        if (!gm_cli_parse_uint("smi", "--simulate", v, 1, GM_MAX_GPUS, &u))
            return GM_EXIT_USAGE;
        o->src.simulate = (unsigned)u;
        return ARG_NEXT;
    case OPT_SEED:
        if (!gm_cli_parse_uint("smi", "--seed", v, 0, UINT64_MAX, &u))
            return GM_EXIT_USAGE;
        o->src.seed = u;
        o->src.seed_arg = v;
        return ARG_NEXT;
    case OPT__COUNT:
        break;
    }
    return ARG_NOT_MINE; /* not reached: k < OPT__COUNT */
}

/* The checks that need every argument seen: help pages, --version, combinations. */
static int finish_args(const smi_opts *o, const smi_args *p)
{
    switch (p->help) {
    case HELP_GPU:
        return -3; /* the list is the loaded driver's: needs the collector */
    case HELP_APPS:
        print_help_qfields(stdout, "--query-compute-apps", apps_fields, NQ(apps_fields));
        return GM_EXIT_OK;
    case HELP_RETIRED:
        print_help_qfields(stdout, "--query-retired-pages", retired_fields, NQ(retired_fields));
        return GM_EXIT_OK;
    case HELP_REMAPPED:
        print_help_qfields(stdout, "--query-remapped-rows", remapped_fields, NQ(remapped_fields));
        return GM_EXIT_OK;
    case HELP_NONE:
        break;
    }
    if (p->version)
        return -2; /* needs the collector for the versions */
    if (p->query_given && !o->format) {
        fprintf(stderr, "--format is mandatory with --query-* switches (e.g. --format=csv).\n"
                        "Please run 'nvidia-smi -h' for help.\n\n");
        return GM_EXIT_USAGE;
    }
    if (o->xml && o->action != ACT_QUERY) {
        fprintf(stderr, "-x (XML) works with -q only.\n"
                        "Invalid combination of input arguments. Please run 'nvidia-smi -h' for "
                        "help.\n\n");
        return GM_EXIT_USAGE;
    }
    return -1;
}

/* Returns -1 to go on, -2 for --version, -3 for --help-query-gpu, else the exit status. */
static int parse_args(int argc, char **argv, smi_opts *o)
{
    smi_args p = {.help = HELP_NONE};
    for (int i = 1; i < argc; i++) {
        int r = parse_switch(argv[i], o, &p);
        if (r == ARG_NOT_MINE)
            r = parse_loop(argc, argv, &i, o);
        if (r == ARG_NOT_MINE)
            r = parse_query_switch(argc, argv, &i, o, &p);
        if (r == ARG_NOT_MINE)
            r = parse_valued(argc, argv, &i, o);
        if (r == ARG_NOT_MINE)
            return unsupported(argv[i]);
        if (r != ARG_NEXT)
            return r;
    }
    return finish_args(o, &p);
}

/* ---- values ------------------------------------------------------------------------------- */

/* A gpu field's value as -q prints it: "N/A" where the CSV has "[N/A]". */
static void qvalue(const gm_snapshot *s, const gm_gpu *g, int field, char *buf, size_t cap)
{
    gm_smi_format_value(s, g, field, 0, buf, cap);
    size_t n = strlen(buf);
    if (n >= 2 && buf[0] == '[' && buf[n - 1] == ']') {
        memmove(buf, buf + 1, n - 2);
        buf[n - 2] = '\0';
    }
}

/* ---- -q and -q -x: one walk, two renderings ------------------------------------------------- */

typedef struct emit {
    gm_buf *b;
    gm_collector *c; /* for what is read on demand (supported clocks); NULL: not printed */
    bool xml;
    int depth;
    unsigned display; /* 0: all sections */
    unsigned skip;    /* > 0 while inside a section -d leaves out */
} emit;

static void xml_text(gm_buf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&':
            gm_buf_puts(b, "&amp;");
            break;
        case '<':
            gm_buf_puts(b, "&lt;");
            break;
        case '>':
            gm_buf_puts(b, "&gt;");
            break;
        case '"':
            gm_buf_puts(b, "&quot;");
            break;
        case '\'':
            gm_buf_puts(b, "&apos;");
            break;
        default:
            /* Control bytes are not allowed in XML 1.0: a garbled name must not break it. */
            if ((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n')
                gm_buf_put(b, "?", 1);
            else
                gm_buf_put(b, s, 1);
        }
    }
}

static void indent(emit *e)
{
    for (int i = 0; i < e->depth; i++)
        gm_buf_puts(e->b, "    ");
}

/* Opens a section: <xml> or "Label". d: the -d type it belongs to (0: shown with any). */
static void sec(emit *e, const char *xml, const char *label, unsigned d)
{
    if (e->skip || (!e->xml && e->display && d && !(e->display & d))) {
        e->skip++;
        return;
    }
    indent(e);
    if (e->xml)
        gm_buf_printf(e->b, "<%s>\n", xml);
    else
        gm_buf_printf(e->b, "%s\n", label);
    e->depth++;
}

static void end(emit *e, const char *xml)
{
    if (e->skip) {
        e->skip--;
        return;
    }
    e->depth--;
    if (e->xml) {
        indent(e);
        gm_buf_printf(e->b, "</%s>\n", xml);
    }
}

/* One value. In -q text the label is padded so the colons line up at column 55. */
static void leaf_d(emit *e, const char *xml, const char *label, const char *value, unsigned d)
{
    if (e->skip || (!e->xml && e->display && d && !(e->display & d)))
        return;
    indent(e);
    if (e->xml) {
        gm_buf_printf(e->b, "<%s>", xml);
        xml_text(e->b, value);
        gm_buf_printf(e->b, "</%s>\n", xml);
    } else {
        int width = 55 - 4 * e->depth;
        gm_buf_printf(e->b, "%-*s: %s\n", width > 0 ? width : 0, label, value);
    }
}

static void leaf(emit *e, const char *xml, const char *label, const char *value)
{
    leaf_d(e, xml, label, value, 0);
}

/* A leaf from a --query-gpu field. */
static void fleaf(emit *e, const gm_snapshot *s, const gm_gpu *g, const char *xml,
                  const char *label, int field)
{
    char v[GM_NAME_LEN + 32];
    qvalue(s, g, field, v, sizeof v);
    int kind = gm_smi_field_kind(field);
    bool hex = kind == GM_SMI_K_PCI_DOMAIN || kind == GM_SMI_K_PCI_BUS ||
               kind == GM_SMI_K_PCI_DEVICE || kind == GM_SMI_K_HEX || kind == GM_SMI_K_HEX32;
    if (e->xml && hex && strncmp(v, "0x", 2) == 0 &&
        gm_smi_profile_xml_bare_hex(gm_smi_profile_for(s->driver_version)))
        memmove(v, v + 2, strlen(v + 2) + 1);
    leaf(e, xml, label, v);
}

/* Writes v with the one number conversion of fmt ("%.0f MHz", "P%.0f", "%.0f %%"), without
 * passing a non-literal format to printf. */
static void num_text(char *buf, size_t cap, const char *fmt, double v)
{
    const char *pc = strstr(fmt, "%.");
    if (!pc || !isdigit((unsigned char)pc[2]) || pc[3] != 'f') {
        snprintf(buf, cap, "%g", v);
        return;
    }
    char suffix[32];
    size_t o = 0;
    for (const char *q = pc + 4; *q && o + 1 < sizeof suffix; q++) {
        if (q[0] == '%' && q[1] == '%')
            q++;
        suffix[o++] = *q;
    }
    suffix[o] = '\0';
    snprintf(buf, cap, "%.*s%.*f%s", (int)(pc - fmt), fmt, pc[2] - '0', v, suffix);
}

/* A metric with a unit ("45 %", "81559 MiB") or N/A. */
static void mleaf(emit *e, const gm_gpu *g, const char *xml, const char *label, gm_metric m,
                  double scale, const char *fmt)
{
    char v[64];
    if (!g->lost && gm_gpu_has(g, m))
        num_text(v, sizeof v, fmt, g->v[m] * scale);
    else
        snprintf(v, sizeof v, "N/A");
    leaf(e, xml, label, v);
}

static void mib_leaf(emit *e, const gm_gpu *g, const char *xml, const char *label, gm_metric m)
{
    char v[64];
    if (!g->lost && gm_gpu_has(g, m))
        snprintf(v, sizeof v, "%.0f MiB", ceil(g->v[m] * gm_metric_get(m)->scale));
    else
        snprintf(v, sizeof v, "N/A");
    leaf(e, xml, label, v);
}

/* nvidia-smi's words for the board's enumerations (nvml.h's nvmlBrandType_t and
 * NVML_DEVICE_ARCH_*; MultiGPU Board Yes/No); "N/A" when unread or a value without a word. */
static const char *enum_text(const gm_gpu *g, gm_metric m)
{
    static const char *const brands[] = {"Unknown",     "Quadro",       "Tesla",
                                         "NVS",         "Grid",         "GeForce",
                                         "Titan",       "NVIDIA vApps", "NVIDIA vPC",
                                         "NVIDIA vCS",  "NVIDIA vWS",   "NVIDIA Cloud Gaming",
                                         "Quadro RTX",  "NVIDIA RTX",   "NVIDIA",
                                         "GeForce RTX", "Titan RTX"};
    static const char *const archs[] = {NULL,           NULL,     "Kepler",   "Maxwell",
                                        "Pascal",       "Volta",  "Turing",   "Ampere",
                                        "Ada Lovelace", "Hopper", "Blackwell"};
    if (g->lost || !gm_gpu_has(g, m))
        return "N/A";
    long long v = (long long)g->v[m];
    if (m == GM_M_MULTI_GPU_BOARD)
        return v ? "Yes" : "No";
    if (m == GM_M_BRAND && v >= 0 && v < (long long)NQ(brands))
        return brands[v];
    if (m == GM_M_ARCHITECTURE && v >= 0 && v < (long long)NQ(archs) && archs[v])
        return archs[v];
    return "N/A";
}

/* nvmlGpuVirtualizationMode_t as nvidia-smi words it. */
static const char *virt_text(const gm_gpu *g)
{
    static const char *const modes[] = {"None", "Pass-Through", "VGPU", "Host VGPU", "Host VSGA"};
    if (g->lost || !gm_gpu_has(g, GM_M_VIRT_MODE))
        return "N/A";
    long long v = (long long)g->v[GM_M_VIRT_MODE];
    return v >= 0 && v < (long long)NQ(modes) ? modes[v] : "N/A";
}

/* A metric NVML gives as an enumeration, in nvidia-smi's words (words[value]); N/A when unread
 * or a value without a word. Words for values the 580 capture does not show are NVML's names. */
static const char *word_text(const gm_gpu *g, gm_metric m, const char *const *words, size_t n)
{
    if (g->lost || !gm_gpu_has(g, m))
        return "N/A";
    long long v = (long long)g->v[m];
    return v >= 0 && v < (long long)n && words[v] ? words[v] : "N/A";
}

static const char *const enabled_words[] = {"Disabled", "Enabled"};
static const char *const yes_no_words[] = {"No", "Yes"};

/* A string read once with the identity, N/A when the driver did not tell it. */
static const char *str_or_na(const gm_gpu *g, const char *s)
{
    return !g->lost && s[0] ? s : "N/A";
}

/* A bit mask as the numbers of its set bits ("0, 5"), N/A when unread. */
static void bits_leaf(emit *e, const gm_gpu *g, const char *xml, const char *label, gm_metric m)
{
    char v[160] = "N/A";
    if (!g->lost && gm_gpu_has(g, m)) {
        unsigned long long mask = (unsigned long long)g->v[m];
        size_t o = 0;
        v[0] = '\0';
        for (int b = 0; b < 64 && o < sizeof v - 8; b++)
            if (mask >> b & 1)
                o += (size_t)snprintf(v + o, sizeof v - o, "%s%d", o ? ", " : "", b);
        if (o == 0)
            snprintf(v, sizeof v, "None");
    }
    leaf(e, xml, label, v);
}

/* The board's supported clocks: each memory clock with the graphics clocks allowed at it. Read
 * from the driver on demand (static); nothing when it cannot tell. In -q text only with
 * -d SUPPORTED_CLOCKS, as nvidia-smi. */
static void emit_supported_clocks(emit *e, const gm_gpu *g)
{
    if (!e->c || g->lost || (!e->xml && !(e->display & D_SUPPORTED_CLOCKS)))
        return;
    unsigned mem[64], gr[1024];
    size_t nmem = 0, ngr = 0;
    gm_error err = {0};
    if (gm_collector_supported_clocks(e->c, g->index, 0, mem, NQ(mem), &nmem, &err) != GM_OK)
        return;
    char v[32];
    sec(e, "supported_clocks", "Supported Clocks", D_SUPPORTED_CLOCKS);
    for (size_t m = 0; m < nmem && m < NQ(mem); m++) {
        if (e->xml)
            sec(e, "supported_mem_clock", "", D_SUPPORTED_CLOCKS);
        snprintf(v, sizeof v, "%u MHz", mem[m]);
        leaf(e, "value", "Memory", v);
        if (!e->xml)
            e->depth++;
        if (gm_collector_supported_clocks(e->c, g->index, mem[m], gr, NQ(gr), &ngr, &err) ==
            GM_OK) {
            for (size_t k = 0; k < ngr && k < NQ(gr); k++) {
                snprintf(v, sizeof v, "%u MHz", gr[k]);
                leaf(e, "supported_graphics_clock", "Graphics", v);
            }
        }
        if (e->xml)
            end(e, "supported_mem_clock");
        else
            e->depth--;
    }
    end(e, "supported_clocks");
}

/* Identity and modes: product, display, persistence, MIG, serial, board, platform. */
static void emit_identity(emit *e, const gm_snapshot *s, const gm_gpu *g)
{
    char v[128];
    fleaf(e, s, g, "product_name", "Product Name", GM_SMI_F_NAME);
    leaf(e, "product_brand", "Product Brand", enum_text(g, GM_M_BRAND));
    leaf(e, "product_architecture", "Product Architecture", enum_text(g, GM_M_ARCHITECTURE));
    fleaf(e, s, g, "display_mode", "Display Mode", GM_SMI_F_DISPLAY_MODE);
    fleaf(e, s, g, "display_attached", "Display Attached", GM_SMI_F_DISPLAY_ATTACHED);
    fleaf(e, s, g, "display_active", "Display Active", GM_SMI_F_DISPLAY_ACTIVE);
    fleaf(e, s, g, "persistence_mode", "Persistence Mode", GM_SMI_F_PERSISTENCE_MODE);
    fleaf(e, s, g, "addressing_mode", "Addressing Mode", GM_SMI_F_ADDRESSING_MODE);
    sec(e, "mig_mode", "MIG Mode", 0);
    fleaf(e, s, g, "current_mig", "Current", GM_SMI_F_MIG_MODE_CURRENT);
    fleaf(e, s, g, "pending_mig", "Pending", GM_SMI_F_MIG_MODE_PENDING);
    end(e, "mig_mode");
    if (e->xml) /* -q text has no such line (580) */
        leaf(e, "mig_devices", "MIG Devices", "None");
    fleaf(e, s, g, "accounting_mode", "Accounting Mode", GM_SMI_F_ACCOUNTING_MODE);
    fleaf(e, s, g, "accounting_mode_buffer_size", "Accounting Mode Buffer Size",
          GM_SMI_F_ACCOUNTING_BUFFER_SIZE);
    sec(e, "driver_model", "Driver Model", 0);
    leaf(e, "current_dm", "Current", "N/A");
    leaf(e, "pending_dm", "Pending", "N/A");
    end(e, "driver_model");
    fleaf(e, s, g, "serial", "Serial Number", GM_SMI_F_SERIAL);
    fleaf(e, s, g, "uuid", "GPU UUID", GM_SMI_F_UUID);
    if (!g->lost && g->pdi[0]) /* drivers before nvmlDeviceGetPdi print no such line */
        leaf(e, "pdi", "GPU PDI", g->pdi);
    snprintf(v, sizeof v, "%u", g->index);
    leaf(e, "minor_number", "Minor Number", v);
    fleaf(e, s, g, "vbios_version", "VBIOS Version", GM_SMI_F_VBIOS_VERSION);
    leaf(e, "multigpu_board", "MultiGPU Board", enum_text(g, GM_M_MULTI_GPU_BOARD));
    if (!g->lost && gm_gpu_has(g, GM_M_BOARD_ID))
        snprintf(v, sizeof v, "0x%llx", (unsigned long long)g->v[GM_M_BOARD_ID]);
    else
        snprintf(v, sizeof v, "N/A");
    leaf(e, "board_id", "Board ID", v);
    leaf(e, "board_part_number", "Board Part Number", str_or_na(g, g->board_part_number));
    /* What nvmlDeviceGetPlatformInfo answers; absent where the driver lacks the call. */
    if (!g->lost && gm_gpu_has(g, GM_M_PLATFORM_MODULE_ID)) {
        sec(e, "platformInfo", "Platform Info", 0);
        leaf(e, "chassis_serial_number", "Chassis Serial Number",
             g->platform_serial[0] ? g->platform_serial : "N/A");
        fleaf(e, s, g, "slot_number", "Slot Number", GM_SMI_F_PLATFORM_SLOT_NUMBER);
        fleaf(e, s, g, "tray_index", "Tray Index", GM_SMI_F_PLATFORM_TRAY_INDEX);
        fleaf(e, s, g, "host_id", "Host ID", GM_SMI_F_PLATFORM_HOST_ID);
        fleaf(e, s, g, "peer_type", "Peer Type", GM_SMI_F_PLATFORM_PEER_TYPE);
        fleaf(e, s, g, "module_id", "Module Id", GM_SMI_F_PLATFORM_MODULE_ID);
        fleaf(e, s, g, "gpu_fabric_guid", "GPU Fabric GUID", GM_SMI_F_PLATFORM_GPU_FABRIC_GUID);
        end(e, "platformInfo");
    }
}

/* Firmware and virtualization: inforom, operation mode, C2C, vGPU, recovery, GSP. */
static void emit_firmware(emit *e, const gm_snapshot *s, const gm_gpu *g)
{
    sec(e, "inforom_version", "Inforom Version", 0);
    fleaf(e, s, g, "img_version", "Image Version", GM_SMI_F_INFOROM_IMG);
    fleaf(e, s, g, "oem_object", "OEM Object", GM_SMI_F_INFOROM_OEM);
    fleaf(e, s, g, "ecc_object", "ECC Object", GM_SMI_F_INFOROM_ECC);
    fleaf(e, s, g, "pwr_object", "Power Management Object", GM_SMI_F_INFOROM_PWR);
    end(e, "inforom_version");
    sec(e, "inforom_bbx_flush", "Inforom BBX Object Flush", 0);
    mleaf(e, g, "latest_timestamp", "Latest Timestamp", GM_M_BBX_FLUSH_TIME, 1, "%.0f");
    mleaf(e, g, "latest_duration", "Latest Duration", GM_M_BBX_FLUSH_DURATION_US, 1, "%.0f us");
    end(e, "inforom_bbx_flush");
    sec(e, "gpu_operation_mode", "GPU Operation Mode", 0);
    leaf(e, "current_gom", "Current", "N/A");
    leaf(e, "pending_gom", "Pending", "N/A");
    end(e, "gpu_operation_mode");
    fleaf(e, s, g, "c2c_mode", "GPU C2C Mode", GM_SMI_F_C2C_MODE);
    sec(e, "gpu_virtualization_mode", "GPU Virtualization Mode", 0);
    leaf(e, "virtualization_mode", "Virtualization Mode", virt_text(g));
    static const char *const host_vgpu[] = {"Non SR-IOV", "SR-IOV"};
    leaf(e, "host_vgpu_mode", "Host VGPU Mode",
         word_text(g, GM_M_HOST_VGPU_MODE, host_vgpu, NQ(host_vgpu)));
    leaf(e, "vgpu_heterogeneous_mode", "vGPU Heterogeneous Mode",
         word_text(g, GM_M_VGPU_HETERO_MODE, enabled_words, NQ(enabled_words)));
    end(e, "gpu_virtualization_mode");
    fleaf(e, s, g, "gpu_recovery_action", "GPU Recovery Action", GM_SMI_F_GPU_RECOVERY_ACTION);
    leaf(e, "gsp_firmware_version", "GSP Firmware Version", str_or_na(g, g->gsp_firmware_version));
}

/* PCI: bus identity, link generation and width, bridge chip, replays, throughput. */
static void emit_pci(emit *e, const gm_snapshot *s, const gm_gpu *g)
{
    sec(e, "pci", "PCI", 0);
    fleaf(e, s, g, "pci_bus", "Bus", GM_SMI_F_PCI_BUS);
    fleaf(e, s, g, "pci_device", "Device", GM_SMI_F_PCI_DEVICE);
    fleaf(e, s, g, "pci_domain", "Domain", GM_SMI_F_PCI_DOMAIN);
    fleaf(e, s, g, "pci_base_class", "Base Classcode", GM_SMI_F_PCI_BASECLASS);
    fleaf(e, s, g, "pci_sub_class", "Sub Classcode", GM_SMI_F_PCI_SUBCLASS);
    fleaf(e, s, g, "pci_device_id", "Device Id", GM_SMI_F_PCI_DEVICE_ID);
    fleaf(e, s, g, "pci_bus_id", "Bus Id", GM_SMI_F_PCI_BUS_ID);
    fleaf(e, s, g, "pci_sub_system_id", "Sub System Id", GM_SMI_F_PCI_SUB_DEVICE_ID);
    sec(e, "pci_gpu_link_info", "GPU Link Info", 0);
    sec(e, "pcie_gen", "PCIe Generation", 0);
    fleaf(e, s, g, "max_link_gen", "Max", GM_SMI_F_PCIE_GEN_MAX);
    fleaf(e, s, g, "current_link_gen", "Current", GM_SMI_F_PCIE_GEN_CUR);
    fleaf(e, s, g, "device_current_link_gen", "Device Current", GM_SMI_F_PCIE_GEN_GPUCUR);
    fleaf(e, s, g, "max_device_link_gen", "Device Max", GM_SMI_F_PCIE_LINK_GEN_GPUMAX);
    leaf(e, "max_host_link_gen", "Host Max", "N/A");
    end(e, "pcie_gen");
    sec(e, "link_widths", "Link Width", 0);
    mleaf(e, g, "max_link_width", "Max", GM_M_PCIE_WIDTH_MAX, 1, "%.0fx");
    mleaf(e, g, "current_link_width", "Current", GM_M_PCIE_WIDTH_CUR, 1, "%.0fx");
    end(e, "link_widths");
    end(e, "pci_gpu_link_info");
    sec(e, "pci_bridge_chip", "Bridge Chip", 0);
    static const char *const bridges[] = {"PLX", "BR04"}; /* nvmlBridgeChipType_t */
    leaf(e, "bridge_chip_type", "Type", word_text(g, GM_M_BRIDGE_CHIP_TYPE, bridges, NQ(bridges)));
    mleaf(e, g, "bridge_chip_fw", "Firmware", GM_M_BRIDGE_CHIP_FW, 1, "%.0f");
    end(e, "pci_bridge_chip");
    mleaf(e, g, "replay_counter", "Replays Since Reset", GM_M_PCIE_REPLAY, 1, "%.0f");
    mleaf(e, g, "replay_rollover_counter", "Replay Number Rollovers", GM_M_PCIE_REPLAY_ROLLOVER, 1,
          "%.0f");
    mleaf(e, g, "tx_util", "Tx Throughput", GM_M_PCIE_TX_KBPS, 1, "%.0f KB/s");
    mleaf(e, g, "rx_util", "Rx Throughput", GM_M_PCIE_RX_KBPS, 1, "%.0f KB/s");
    /* NVML_PCIE_ATOMICS_CAP_* masks as numbers (no capture shows nvidia-smi's words). */
    mleaf(e, g, "atomic_caps_outbound", "Atomic Caps Outbound", GM_M_PCIE_ATOMICS_OUT, 1, "%.0f");
    mleaf(e, g, "atomic_caps_inbound", "Atomic Caps Inbound", GM_M_PCIE_ATOMICS_IN, 1, "%.0f");
    end(e, "pci");
}

/* Performance state and the clocks event reasons with their counters. */
static void emit_performance(emit *e, const gm_snapshot *s, const gm_gpu *g)
{
    char v[128];
    fleaf(e, s, g, "performance_state", "Performance State", GM_SMI_F_PSTATE);
    sec(e, "clocks_event_reasons", "Clocks Event Reasons", D_PERFORMANCE);
    /* nvidia-smi's own words, which are not gpumon's JSON words: its XML says
     * "display_clocks_setting" where gpumon says "display_clock_setting". r is the reason's bit;
     * rows are in nvidia-smi 580's order (-q and -q -x). */
    static const struct {
        int r;
        const char *xml, *label;
    } rows[] = {
        {0, "gpu_idle", "Idle"},
        {1, "applications_clocks_setting", "Applications Clocks Setting"},
        {2, "sw_power_cap", "SW Power Cap"},
        {3, "hw_slowdown", "HW Slowdown"},
        {6, "hw_thermal_slowdown", "HW Thermal Slowdown"},
        {7, "hw_power_brake_slowdown", "HW Power Brake Slowdown"},
        {4, "sync_boost", "Sync Boost"},
        {5, "sw_thermal_slowdown", "SW Thermal Slowdown"},
        {8, "display_clocks_setting", "Display Clock Setting"},
    };
    for (size_t k = 0; k < sizeof rows / sizeof *rows; k++) {
        int r = rows[k].r;
        char xml[96];
        snprintf(xml, sizeof xml, "clocks_event_reason_%s", rows[k].xml);
        if (!g->lost && gm_gpu_has(g, GM_M_THROTTLE_REASONS))
            snprintf(v, sizeof v, "%s",
                     ((uint64_t)g->v[GM_M_THROTTLE_REASONS] >> r) & 1 ? "Active" : "Not Active");
        else
            snprintf(v, sizeof v, "N/A");
        leaf(e, xml, rows[k].label, v);
    }
    end(e, "clocks_event_reasons");
    /* Time spent in each reason since the driver loaded (nvidia-smi's counters). */
    sec(e, "clocks_event_reasons_counters", "Clocks Event Reasons Counters", D_PERFORMANCE);
    fleaf(e, s, g, "clocks_event_reasons_counters_sw_power_cap", "SW Power Capping",
          GM_SMI_F_CLOCKS_EVENT_REASONS_COUNTERS_SW_POWER_CAP);
    fleaf(e, s, g, "clocks_event_reasons_counters_sync_boost", "Sync Boost",
          GM_SMI_F_CLOCKS_EVENT_REASONS_COUNTERS_SYNC_BOOST);
    fleaf(e, s, g, "clocks_event_reasons_counters_sw_therm_slowdown", "SW Thermal Slowdown",
          GM_SMI_F_CLOCKS_EVENT_REASONS_COUNTERS_SW_THERMAL_SLOWDOWN);
    fleaf(e, s, g, "clocks_event_reasons_counters_hw_therm_slowdown", "HW Thermal Slowdown",
          GM_SMI_F_CLOCKS_EVENT_REASONS_COUNTERS_HW_THERMAL_SLOWDOWN);
    fleaf(e, s, g, "clocks_event_reasons_counters_hw_power_brake", "HW Power Braking",
          GM_SMI_F_CLOCKS_EVENT_REASONS_COUNTERS_HW_POWER_BRAKE_SLOWDOWN);
    end(e, "clocks_event_reasons_counters");
}

/* FB, BAR1 and confidential-compute memory. */
static void emit_memory(emit *e, const gm_snapshot *s, const gm_gpu *g)
{
    sec(e, "fb_memory_usage", "FB Memory Usage", D_MEMORY);
    mib_leaf(e, g, "total", "Total", GM_M_MEM_TOTAL_BYTES);
    mib_leaf(e, g, "reserved", "Reserved", GM_M_MEM_RESERVED_BYTES);
    mib_leaf(e, g, "used", "Used", GM_M_MEM_USED_BYTES);
    mib_leaf(e, g, "free", "Free", GM_M_MEM_FREE_BYTES);
    end(e, "fb_memory_usage");
    sec(e, "bar1_memory_usage", "BAR1 Memory Usage", D_MEMORY);
    mib_leaf(e, g, "total", "Total", GM_M_BAR1_TOTAL_BYTES);
    mib_leaf(e, g, "used", "Used", GM_M_BAR1_USED_BYTES);
    mib_leaf(e, g, "free", "Free", GM_M_BAR1_FREE_BYTES);
    end(e, "bar1_memory_usage");
    sec(e, "cc_protected_memory_usage", "Conf Compute Protected Memory Usage", D_MEMORY);
    fleaf(e, s, g, "total", "Total", GM_SMI_F_PROTECTED_MEMORY_TOTAL);
    fleaf(e, s, g, "used", "Used", GM_SMI_F_PROTECTED_MEMORY_USED);
    fleaf(e, s, g, "free", "Free", GM_SMI_F_PROTECTED_MEMORY_FREE);
    end(e, "cc_protected_memory_usage");
}

/* Utilization, encoder and FBC sessions, DRAM encryption. */
static void emit_utilization(emit *e, const gm_gpu *g)
{
    sec(e, "utilization", "Utilization", D_UTILIZATION);
    mleaf(e, g, "gpu_util", "GPU", GM_M_UTIL_GPU_PCT, 1, "%.0f %%");
    mleaf(e, g, "memory_util", "Memory", GM_M_UTIL_MEM_PCT, 1, "%.0f %%");
    mleaf(e, g, "encoder_util", "Encoder", GM_M_UTIL_ENC_PCT, 1, "%.0f %%");
    mleaf(e, g, "decoder_util", "Decoder", GM_M_UTIL_DEC_PCT, 1, "%.0f %%");
    mleaf(e, g, "jpeg_util", "JPEG", GM_M_UTIL_JPEG_PCT, 1, "%.0f %%");
    mleaf(e, g, "ofa_util", "OFA", GM_M_UTIL_OFA_PCT, 1, "%.0f %%");
    end(e, "utilization");
    sec(e, "encoder_stats", "Encoder Stats", D_ENCODER_STATS);
    mleaf(e, g, "session_count", "Active Sessions", GM_M_ENC_SESSIONS, 1, "%.0f");
    mleaf(e, g, "average_fps", "Average FPS", GM_M_ENC_FPS, 1, "%.0f");
    mleaf(e, g, "average_latency", "Average Latency", GM_M_ENC_LATENCY_US, 1, "%.0f");
    end(e, "encoder_stats");
    sec(e, "fbc_stats", "FBC Stats", D_FBC_STATS);
    mleaf(e, g, "session_count", "Active Sessions", GM_M_FBC_SESSIONS, 1, "%.0f");
    mleaf(e, g, "average_fps", "Average FPS", GM_M_FBC_FPS, 1, "%.0f");
    mleaf(e, g, "average_latency", "Average Latency", GM_M_FBC_LATENCY_US, 1, "%.0f");
    end(e, "fbc_stats");
    sec(e, "dram_encryption_mode", "DRAM Encryption Mode", D_UNSORTED);
    leaf(e, "current_dram_encryption", "Current",
         word_text(g, GM_M_DRAM_ENC_CUR, enabled_words, NQ(enabled_words)));
    leaf(e, "pending_dram_encryption", "Pending",
         word_text(g, GM_M_DRAM_ENC_PENDING, enabled_words, NQ(enabled_words)));
    end(e, "dram_encryption_mode");
}

/* ECC mode and error counters, SRAM sources, pending repairs. */
static void emit_ecc(emit *e, const gm_snapshot *s, const gm_gpu *g)
{
    sec(e, "ecc_mode", "ECC Mode", D_ECC);
    fleaf(e, s, g, "current_ecc", "Current", GM_SMI_F_ECC_MODE_CURRENT);
    fleaf(e, s, g, "pending_ecc", "Pending", GM_SMI_F_ECC_MODE_PENDING);
    end(e, "ecc_mode");
    sec(e, "ecc_errors", "ECC Errors", D_ECC);
    static const char *const counters[2] = {"volatile", "aggregate"};
    static const char *const counter_labels[2] = {"Volatile", "Aggregate"};
    static const gm_metric ecc[2][4] = {
        {GM_M_ECC_CORR_VOL_SRAM, GM_M_ECC_UNCORR_VOL_SRAM, GM_M_ECC_CORR_VOL_DRAM,
         GM_M_ECC_UNCORR_VOL_DRAM},
        {GM_M_ECC_CORR_AGG_SRAM, GM_M_ECC_UNCORR_AGG_SRAM, GM_M_ECC_CORR_AGG_DRAM,
         GM_M_ECC_UNCORR_AGG_DRAM},
    };
    /* SRAM uncorrectable errors split by the protection that caught them (parity or SEC-DED). */
    static const int sram_split[2][2] = {
        {GM_SMI_F_ECC_ERRORS_UNCORRECTED_VOLATILE_SRAM_PARITY,
         GM_SMI_F_ECC_ERRORS_UNCORRECTED_VOLATILE_SRAM_SECDED},
        {GM_SMI_F_ECC_ERRORS_UNCORRECTED_AGGREGATE_SRAM_PARITY,
         GM_SMI_F_ECC_ERRORS_UNCORRECTED_AGGREGATE_SRAM_SECDED},
    };
    for (int c = 0; c < 2; c++) {
        sec(e, counters[c], counter_labels[c], D_ECC);
        mleaf(e, g, "sram_correctable", "SRAM Correctable", ecc[c][0], 1, "%.0f");
        fleaf(e, s, g, "sram_uncorrectable_parity", "SRAM Uncorrectable Parity", sram_split[c][0]);
        fleaf(e, s, g, "sram_uncorrectable_secded", "SRAM Uncorrectable SEC-DED", sram_split[c][1]);
        mleaf(e, g, "dram_correctable", "DRAM Correctable", ecc[c][2], 1, "%.0f");
        mleaf(e, g, "dram_uncorrectable", "DRAM Uncorrectable", ecc[c][3], 1, "%.0f");
        if (c == 1)
            fleaf(e, s, g, "sram_threshold_exceeded", "SRAM Threshold Exceeded",
                  GM_SMI_F_ECC_ERRORS_UNCORRECTED_AGGREGATE_SRAM_THRESHOLDEXCEEDED);
        end(e, counters[c]);
    }
    sec(e, "aggregate_uncorrectable_sram_sources", "Aggregate Uncorrectable SRAM Sources", D_ECC);
    fleaf(e, s, g, "sram_l2", "SRAM L2", GM_SMI_F_ECC_ERRORS_UNCORRECTED_AGGREGATE_SRAM_L2);
    fleaf(e, s, g, "sram_sm", "SRAM SM", GM_SMI_F_ECC_ERRORS_UNCORRECTED_AGGREGATE_SRAM_SM);
    fleaf(e, s, g, "sram_microcontroller", "SRAM Microcontroller",
          GM_SMI_F_ECC_ERRORS_UNCORRECTED_AGGREGATE_SRAM_MCU);
    fleaf(e, s, g, "sram_pcie", "SRAM PCIE", GM_SMI_F_ECC_ERRORS_UNCORRECTED_AGGREGATE_SRAM_PCIE);
    fleaf(e, s, g, "sram_other", "SRAM Other",
          GM_SMI_F_ECC_ERRORS_UNCORRECTED_AGGREGATE_SRAM_OTHER);
    end(e, "aggregate_uncorrectable_sram_sources");
    leaf(e, "channel_repair_pending", "Channel Repair Pending",
         word_text(g, GM_M_REPAIR_CHANNEL_PENDING, yes_no_words, NQ(yes_no_words)));
    leaf(e, "tpc_repair_pending", "TPC Repair Pending",
         word_text(g, GM_M_REPAIR_TPC_PENDING, yes_no_words, NQ(yes_no_words)));
    leaf(e, "unrepairable_memory", "Unrepairable Memory",
         word_text(g, GM_M_UNREPAIRABLE_MEMORY, yes_no_words, NQ(yes_no_words)));
    end(e, "ecc_errors");
}

/* Retired pages (single and double bit) and the pending blacklist. */
static void emit_retired_pages(emit *e, const gm_snapshot *s, const gm_gpu *g)
{
    sec(e, "retired_pages", "Retired Pages", D_PAGE_RETIREMENT);
    static const char *const retire_xml[2] = {"multiple_single_bit_retirement",
                                              "double_bit_retirement"};
    static const char *const retire_label[2] = {"Single Bit ECC", "Double Bit ECC"};
    static const gm_metric retire_m[2] = {GM_M_RETIRED_SBE, GM_M_RETIRED_DBE};
    for (int k = 0; k < 2; k++) {
        bool known = !g->lost && gm_gpu_has(g, retire_m[k]);
        if (!known && !e->xml) {
            /* A GPU without page retirement: one N/A line in -q text, as nvidia-smi. */
            leaf_d(e, retire_xml[k], retire_label[k], "N/A", D_PAGE_RETIREMENT);
            continue;
        }
        sec(e, retire_xml[k], retire_label[k], D_PAGE_RETIREMENT);
        mleaf(e, g, "retired_count", "Retired Count", retire_m[k], 1, "%.0f");
        if (!known) /* the list is as unsupported as its count */
            leaf(e, "retired_pagelist", "Retired Pages", "N/A");
        end(e, retire_xml[k]);
    }
    if (e->xml)
        fleaf(e, s, g, "pending_blacklist", "Pending Page Blacklist",
              GM_SMI_F_RETIRED_PAGES_PENDING);
    fleaf(e, s, g, "pending_retirement", "Pending Page Blacklist", GM_SMI_F_RETIRED_PAGES_PENDING);
    end(e, "retired_pages");
}

/* Remapped rows and the bank availability histogram. */
static void emit_remapped_rows(emit *e, const gm_snapshot *s, const gm_gpu *g)
{
    sec(e, "remapped_rows", "Remapped Rows", D_ROW_REMAPPER);
    /* Inactive rows: drivers with nvmlDeviceGetRemappedRows_v2 (580) print them. */
    bool inactive = !g->lost && gm_gpu_has(g, GM_M_REMAP_CORR_INACTIVE);
    fleaf(e, s, g, "remapped_row_corr", "Correctable Error", GM_SMI_F_REMAPPED_ROWS_CORRECTABLE);
    if (inactive)
        fleaf(e, s, g, "remapped_row_corr_inactive", "Inactive Correctable Error",
              GM_SMI_F_REMAPPED_ROWS_CORRECTABLE_INACTIVE);
    fleaf(e, s, g, "remapped_row_unc", "Uncorrectable Error", GM_SMI_F_REMAPPED_ROWS_UNCORRECTABLE);
    if (inactive)
        fleaf(e, s, g, "remapped_row_unc_inactive", "Inactive Uncorrectable Error",
              GM_SMI_F_REMAPPED_ROWS_UNCORRECTABLE_INACTIVE);
    fleaf(e, s, g, "remapped_row_pending", "Pending", GM_SMI_F_REMAPPED_ROWS_PENDING);
    fleaf(e, s, g, "remapped_row_failure", "Remapping Failure Occurred",
          GM_SMI_F_REMAPPED_ROWS_FAILURE);
    sec(e, "row_remapper_histogram", "Bank Remap Availability Histogram", D_ROW_REMAPPER);
    static const char *const hist[5] = {"max", "high", "partial", "low", "none"};
    static const char *const hist_labels[5] = {"Max", "High", "Partial", "Low", "None"};
    for (int k = 0; k < 5; k++) {
        char xml[64];
        snprintf(xml, sizeof xml, "row_remapper_histogram_%s", hist[k]);
        mleaf(e, g, xml, hist_labels[k], (gm_metric)(GM_M_REMAP_HIST_MAX + k), 1, "%.0f bank(s)");
    }
    end(e, "row_remapper_histogram");
    end(e, "remapped_rows");
}

/* Temperatures and thresholds; the supported target range. */
static void emit_temperature(emit *e, const gm_gpu *g)
{
    sec(e, "temperature", "Temperature", D_TEMPERATURE);
    mleaf(e, g, "gpu_temp", "GPU Current Temp", GM_M_TEMP_C, 1, "%.0f C");
    mleaf(e, g, "gpu_temp_tlimit", "GPU T.Limit Temp", GM_M_TEMP_TLIMIT_C, 1, "%.0f C");
    mleaf(e, g, "gpu_temp_max_tlimit_threshold", "GPU Shutdown T.Limit Temp",
          GM_M_TEMP_SHUTDOWN_TLIMIT_C, 1, "%.0f C");
    mleaf(e, g, "gpu_temp_slow_tlimit_threshold", "GPU Slowdown T.Limit Temp",
          GM_M_TEMP_SLOWDOWN_TLIMIT_C, 1, "%.0f C");
    mleaf(e, g, "gpu_temp_max_gpu_tlimit_threshold", "GPU Max Operating T.Limit Temp",
          GM_M_TEMP_GPU_MAX_TLIMIT_C, 1, "%.0f C");
    mleaf(e, g, "gpu_target_temperature", "GPU Target Temperature", GM_M_TEMP_TARGET_C, 1,
          "%.0f C");
    mleaf(e, g, "memory_temp", "Memory Current Temp", GM_M_TEMP_MEM_C, 1, "%.0f C");
    mleaf(e, g, "gpu_temp_max_mem_tlimit_threshold", "Memory Max Operating T.Limit Temp",
          GM_M_TEMP_MEM_MAX_TLIMIT_C, 1, "%.0f C");
    end(e, "temperature");
    if (e->xml || (e->display & D_SUPPORTED_GPU_TARGET_TEMP)) {
        sec(e, "supported_gpu_target_temp", "Supported GPU Target Temp",
            D_SUPPORTED_GPU_TARGET_TEMP);
        mleaf(e, g, "gpu_target_temp_min", "GPU Target Temp Min", GM_M_TEMP_TARGET_MIN_C, 1,
              "%.0f C");
        mleaf(e, g, "gpu_target_temp_max", "GPU Target Temp Max", GM_M_TEMP_TARGET_MAX_C, 1,
              "%.0f C");
        end(e, "supported_gpu_target_temp");
    }
}

/* GPU, memory and module power readings, smoothing, workload profiles. */
static void emit_power(emit *e, const gm_snapshot *s, const gm_gpu *g)
{
    sec(e, "gpu_power_readings", "GPU Power Readings", D_POWER);
    if (e->xml)
        fleaf(e, s, g, "power_state", "Power State", GM_SMI_F_PSTATE);
    mleaf(e, g, "power_draw", "Power Draw", GM_M_POWER_MW, 0.001, "%.2f W");
    mleaf(e, g, "average_power_draw", "Average Power Draw", GM_M_POWER_AVG_MW, 0.001, "%.2f W");
    mleaf(e, g, "instant_power_draw", "Instantaneous Power Draw", GM_M_POWER_INSTANT_MW, 0.001,
          "%.2f W");
    mleaf(e, g, "current_power_limit", "Current Power Limit", GM_M_POWER_LIMIT_MW, 0.001, "%.2f W");
    mleaf(e, g, "requested_power_limit", "Requested Power Limit", GM_M_POWER_REQ_LIMIT_MW, 0.001,
          "%.2f W");
    mleaf(e, g, "default_power_limit", "Default Power Limit", GM_M_POWER_DEFAULT_LIMIT_MW, 0.001,
          "%.2f W");
    mleaf(e, g, "min_power_limit", "Min Power Limit", GM_M_POWER_MIN_LIMIT_MW, 0.001, "%.2f W");
    mleaf(e, g, "max_power_limit", "Max Power Limit", GM_M_POWER_MAX_LIMIT_MW, 0.001, "%.2f W");
    end(e, "gpu_power_readings");
    /* nvidia-smi 580's -q text has this label with a trailing space. */
    sec(e, "gpu_memory_power_readings", "GPU Memory Power Readings ", D_POWER);
    mleaf(e, g, "average_power_draw", "Average Power Draw", GM_M_POWER_MEM_AVG_MW, 0.001, "%.2f W");
    mleaf(e, g, "instant_power_draw", "Instantaneous Power Draw", GM_M_POWER_MEM_INSTANT_MW, 0.001,
          "%.2f W");
    end(e, "gpu_memory_power_readings");
    sec(e, "module_power_readings", "Module Power Readings", D_POWER);
    if (e->xml)
        fleaf(e, s, g, "power_state", "Power State", GM_SMI_F_PSTATE);
    static const struct {
        const char *xml, *label;
        gm_metric m;
    } module[] = {
        {"average_power_draw", "Average Power Draw", GM_M_POWER_MODULE_AVG_MW},
        {"instant_power_draw", "Instantaneous Power Draw", GM_M_POWER_MODULE_INSTANT_MW},
        {"current_power_limit", "Current Power Limit", GM_M_POWER_MODULE_LIMIT_MW},
        {"requested_power_limit", "Requested Power Limit", GM_M_POWER_MODULE_REQ_LIMIT_MW},
        {"default_power_limit", "Default Power Limit", GM_M_POWER_MODULE_DEFAULT_LIMIT_MW},
        {"min_power_limit", "Min Power Limit", GM_M_POWER_MODULE_MIN_LIMIT_MW},
        {"max_power_limit", "Max Power Limit", GM_M_POWER_MODULE_MAX_LIMIT_MW},
    };
    for (size_t k = 0; k < NQ(module); k++)
        mleaf(e, g, module[k].xml, module[k].label, module[k].m, 0.001, "%.2f W");
    end(e, "module_power_readings");
    leaf_d(e, "power_smoothing", "Power Smoothing",
           word_text(g, GM_M_POWER_SMOOTHING, enabled_words, NQ(enabled_words)), D_POWER_SMOOTHING);
    sec(e, "power_profiles", "Workload Power Profiles", D_POWER_PROFILES);
    bits_leaf(e, g, "power_profile_requested_profiles", "Requested Profiles",
              GM_M_POWER_PROFILES_REQUESTED);
    bits_leaf(e, g, "power_profile_enforced_profiles", "Enforced Profiles",
              GM_M_POWER_PROFILES_ENFORCED);
    end(e, "power_profiles");
}

/* Current, application, default, max and boost clocks, clock policy. */
static void emit_clocks(emit *e, const gm_snapshot *s, const gm_gpu *g)
{
    sec(e, "clocks", "Clocks", D_CLOCK);
    mleaf(e, g, "graphics_clock", "Graphics", GM_M_CLOCK_GR_MHZ, 1, "%.0f MHz");
    mleaf(e, g, "sm_clock", "SM", GM_M_CLOCK_SM_MHZ, 1, "%.0f MHz");
    mleaf(e, g, "mem_clock", "Memory", GM_M_CLOCK_MEM_MHZ, 1, "%.0f MHz");
    mleaf(e, g, "video_clock", "Video", GM_M_CLOCK_VIDEO_MHZ, 1, "%.0f MHz");
    end(e, "clocks");
    sec(e, "applications_clocks", "Applications Clocks", D_CLOCK);
    fleaf(e, s, g, "graphics_clock", "Graphics", GM_SMI_F_CLOCKS_APPLICATIONS_GRAPHICS);
    fleaf(e, s, g, "mem_clock", "Memory", GM_SMI_F_CLOCKS_APPLICATIONS_MEMORY);
    end(e, "applications_clocks");
    sec(e, "default_applications_clocks", "Default Applications Clocks", D_CLOCK);
    fleaf(e, s, g, "graphics_clock", "Graphics", GM_SMI_F_CLOCKS_DEFAULT_APPLICATIONS_GRAPHICS);
    fleaf(e, s, g, "mem_clock", "Memory", GM_SMI_F_CLOCKS_DEFAULT_APPLICATIONS_MEMORY);
    end(e, "default_applications_clocks");
    sec(e, "max_clocks", "Max Clocks", D_CLOCK);
    mleaf(e, g, "graphics_clock", "Graphics", GM_M_CLOCK_MAX_GR_MHZ, 1, "%.0f MHz");
    mleaf(e, g, "sm_clock", "SM", GM_M_CLOCK_MAX_SM_MHZ, 1, "%.0f MHz");
    mleaf(e, g, "mem_clock", "Memory", GM_M_CLOCK_MAX_MEM_MHZ, 1, "%.0f MHz");
    mleaf(e, g, "video_clock", "Video", GM_M_CLOCK_MAX_VIDEO_MHZ, 1, "%.0f MHz");
    end(e, "max_clocks");
    sec(e, "max_customer_boost_clocks", "Max Customer Boost Clocks", D_CLOCK);
    mleaf(e, g, "graphics_clock", "Graphics", GM_M_CLOCK_MAX_BOOST_GR_MHZ, 1, "%.0f MHz");
    end(e, "max_customer_boost_clocks");
    sec(e, "clock_policy", "Clock Policy", D_CLOCK);
    static const char *const on_off[] = {"Off", "On"};
    leaf(e, "auto_boost", "Auto Boost", word_text(g, GM_M_AUTO_BOOST, on_off, NQ(on_off)));
    leaf(e, "auto_boost_default", "Auto Boost Default",
         word_text(g, GM_M_AUTO_BOOST_DEFAULT, on_off, NQ(on_off)));
    end(e, "clock_policy");
}

/* Fabric state, status, clique, cluster and health. */
static void emit_fabric(emit *e, const gm_snapshot *s, const gm_gpu *g)
{
    sec(e, "fabric", "Fabric", 0);
    fleaf(e, s, g, "state", "State", GM_SMI_F_FABRIC_STATE);
    fleaf(e, s, g, "status", "Status", GM_SMI_F_FABRIC_STATUS);
    fleaf(e, s, g, "cliqueId", "CliqueId", GM_SMI_F_FABRIC_CLIQUEID);
    fleaf(e, s, g, "clusterUuid", "ClusterUUID", GM_SMI_F_FABRIC_CLUSTERUUID);
    sec(e, "health", "Health", 0);
    fleaf(e, s, g, "summary", "Summary", GM_SMI_F_FABRIC_HEALTH_SUMMARY);
    fleaf(e, s, g, "bandwidth", "Bandwidth", GM_SMI_F_FABRIC_HEALTH_BANDWIDTH);
    fleaf(e, s, g, "route_recovery_in_progress", "Route Recovery in progress",
          GM_SMI_F_FABRIC_HEALTH_ROUTE_RECOVERY_IN_PROGRESS);
    fleaf(e, s, g, "route_unhealthy", "Route Unhealthy", GM_SMI_F_FABRIC_HEALTH_ROUTE_UNHEALTHY);
    fleaf(e, s, g, "access_timeout_recovery", "Access Timeout Recovery",
          GM_SMI_F_FABRIC_HEALTH_ACCESS_TIMEOUT_RECOVERY);
    fleaf(e, s, g, "incorrect_configuration", "Incorrect Configuration",
          GM_SMI_F_FABRIC_HEALTH_INCORRECT_CONFIGURATION);
    fleaf(e, s, g, "partition_assigned", "Partition Assigned",
          GM_SMI_F_FABRIC_HEALTH_PARTITION_ASSIGNED);
    end(e, "health");
    end(e, "fabric");
}

/* Processes: compute and graphics, with their memory (nvidia-smi lists both here). */
static void emit_processes(emit *e, const gm_snapshot *s, const gm_gpu *g)
{
    char v[128];
    bool any = false;
    for (size_t p = 0; p < s->proc_count && !any; p++)
        any = s->procs[p].gpu_index == g->index;
    if (!any) {
        if (e->xml) {
            sec(e, "processes", "Processes", D_PIDS);
            end(e, "processes");
        } else {
            leaf_d(e, "processes", "Processes", "None", D_PIDS);
        }
    } else {
        sec(e, "processes", "Processes", D_PIDS);
        for (size_t p = 0; p < s->proc_count; p++) {
            const gm_process *pr = &s->procs[p];
            if (pr->gpu_index != g->index)
                continue;
            sec(e, "process_info", "Process", D_PIDS);
            leaf(e, "gpu_instance_id", "GPU instance ID", "N/A");
            leaf(e, "compute_instance_id", "Compute instance ID", "N/A");
            snprintf(v, sizeof v, "%u", pr->pid);
            leaf(e, "pid", "Process ID", v);
            leaf(e, "type", "Type",
                 pr->type == (GM_PROC_COMPUTE | GM_PROC_GRAPHICS) ? "C+G"
                 : pr->type == GM_PROC_GRAPHICS                   ? "G"
                                                                  : "C");
            char name[GM_CMD_LEN];
            size_t n = strcspn(pr->command, " ");
            snprintf(name, sizeof name, "%.*s", (int)n, pr->command);
            leaf(e, "process_name", "Name", name[0] ? name : "N/A");
            if (pr->mem_valid)
                snprintf(v, sizeof v, "%llu MiB",
                         (unsigned long long)(pr->used_mem_bytes / GM_BYTES_PER_MIB));
            else
                snprintf(v, sizeof v, "N/A");
            leaf(e, "used_memory", "Used GPU Memory", v);
            end(e, "process_info");
        }
        end(e, "processes");
    }
}

static void emit_gpu(emit *e, const gm_snapshot *s, const gm_gpu *g)
{
    if (e->xml) {
        indent(e);
        gm_buf_puts(e->b, "<gpu id=\"");
        xml_text(e->b, g->pci_bus_id[0] ? g->pci_bus_id : "N/A");
        gm_buf_puts(e->b, "\">\n");
    } else {
        gm_buf_printf(e->b, "GPU %s\n", g->pci_bus_id[0] ? g->pci_bus_id : "N/A");
    }
    e->depth++;
    unsigned all = e->xml ? 0 : e->display; /* identity lines only without -d */
    if (!all) {
        emit_identity(e, s, g);
        emit_firmware(e, s, g);
        emit_pci(e, s, g);
        fleaf(e, s, g, "fan_speed", "Fan Speed", GM_SMI_F_FAN_SPEED);
    }
    if (!all || (all & D_PERFORMANCE))
        emit_performance(e, s, g);
    emit_memory(e, s, g);
    if (!all || (all & D_COMPUTE))
        fleaf(e, s, g, "compute_mode", "Compute Mode", GM_SMI_F_COMPUTE_MODE);
    emit_utilization(e, g);
    emit_ecc(e, s, g);
    emit_retired_pages(e, s, g);
    emit_remapped_rows(e, s, g);
    emit_temperature(e, g);
    emit_power(e, s, g);
    emit_clocks(e, s, g);
    if (!all)
        emit_fabric(e, s, g);
    emit_supported_clocks(e, g);
    emit_processes(e, s, g);
    if (e->xml) {
        sec(e, "accounted_processes", "Accounted Processes", 0);
        end(e, "accounted_processes");
    }
    sec(e, "capabilities", "Capabilities", D_UNSORTED);
    static const char *const egm[] = {"disabled", "enabled"}; /* NVML_DEV_CAP_EGM */
    leaf(e, "egm", "EGM", word_text(g, GM_M_EGM, egm, NQ(egm)));
    end(e, "capabilities");
    e->depth--;
    if (e->xml) {
        indent(e);
        gm_buf_puts(e->b, "</gpu>\n");
    }
    if (!e->xml)
        gm_buf_puts(e->b, "\n");
}

static void format_log_time(int64_t ms, char *buf, size_t cap)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, cap, "%a %b %e %H:%M:%S %Y", &tm);
}

static void render_query(gm_buf *b, gm_collector *c, const gm_snapshot *s, const unsigned *sel,
                         size_t nsel, const smi_opts *o)
{
    emit e = {.b = b, .c = c, .xml = o->xml, .display = o->display};
    char ts[64];
    format_log_time(s->time_ms, ts, sizeof ts);
    char count[16];
    snprintf(count, sizeof count, "%u", s->gpu_count);
    const char *drv = s->driver_version[0] ? s->driver_version : "N/A";
    const char *cuda = s->cuda_version[0] ? s->cuda_version : "N/A";
    if (o->xml) {
        gm_buf_puts(b, "<?xml version=\"1.0\" ?>\n"
                       "<!DOCTYPE nvidia_smi_log SYSTEM \"nvsmi_device_v12.dtd\">\n"
                       "<nvidia_smi_log>\n");
        e.depth = 1;
        leaf(&e, "timestamp", "Timestamp", ts);
        leaf(&e, "driver_version", "Driver Version", drv);
        leaf(&e, "cuda_version", "CUDA Version", cuda);
        leaf(&e, "attached_gpus", "Attached GPUs", count);
    } else {
        gm_buf_puts(b, "\n==============NVSMI LOG==============\n\n");
        leaf(&e, "timestamp", "Timestamp", ts);
        leaf(&e, "driver_version", "Driver Version", drv);
        leaf(&e, "cuda_version", "CUDA Version", cuda);
        gm_buf_puts(b, "\n");
        leaf(&e, "attached_gpus", "Attached GPUs", count);
    }
    for (size_t k = 0; k < nsel; k++) {
        const gm_gpu *g = gm_snapshot_gpu(s, sel[k]);
        if (g)
            emit_gpu(&e, s, g);
    }
    if (o->xml)
        gm_buf_puts(b, "\n</nvidia_smi_log>\n");
}

/* ---- the summary (no arguments), as nvidia-smi 590 lays it out ------------------------------ */

static void fmt_or_na(char *buf, size_t cap, const gm_gpu *g, gm_metric m, double scale,
                      const char *fmt)
{
    if (!g->lost && gm_gpu_has(g, m))
        num_text(buf, cap, fmt, g->v[m] * scale);
    else
        snprintf(buf, cap, "N/A");
}

static const char summary_rule[] = "+-----------------------------------------+------------------"
                                   "------+----------------------+\n";

/* The time, the versions and the column heads. */
static void summary_header(gm_buf *b, const gm_snapshot *s)
{
    char ts[64];
    format_log_time(s->time_ms, ts, sizeof ts);
    gm_buf_printf(b, "%s       \n", ts);
    gm_buf_puts(b, "+-----------------------------------------------------------------------------"
                   "------------+\n");
    char head[128];
    snprintf(head, sizeof head, "NVIDIA-SMI %-22s Driver Version: %-14s CUDA Version: %-8s",
             s->driver_version[0] ? s->driver_version : "N/A",
             s->driver_version[0] ? s->driver_version : "N/A",
             s->cuda_version[0] ? s->cuda_version : "N/A");
    gm_buf_printf(b, "| %-87s |\n", head);
    gm_buf_puts(b, summary_rule);
    gm_buf_puts(b, "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile "
                   "Uncorr. ECC |\n"
                   "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  "
                   "Compute M. |\n"
                   "|                                         |                        |          "
                   "     MIG M. |\n"
                   "|=========================================+========================+=========="
                   "============|\n");
}

/* A GPU's three lines and the rule under them. */
static void summary_gpu(gm_buf *b, const gm_gpu *g)
{
    char persist[8], ecc[16], fan[16], temp[16], perf[8], pwr[16], cap[16], used[24], total[24],
        util[16], cm[24], mig[16];
    snprintf(persist, sizeof persist, "%s",
             !g->lost && gm_gpu_has(g, GM_M_PERSISTENCE_MODE)
                 ? (g->v[GM_M_PERSISTENCE_MODE] != 0 ? "On" : "Off")
                 : "N/A");
    fmt_or_na(ecc, sizeof ecc, g, GM_M_ECC_UNCORR_VOL, 1, "%.0f");
    fmt_or_na(fan, sizeof fan, g, GM_M_FAN_PCT, 1, "%.0f%%");
    fmt_or_na(temp, sizeof temp, g, GM_M_TEMP_C, 1, "%.0fC");
    fmt_or_na(perf, sizeof perf, g, GM_M_PSTATE, 1, "P%.0f");
    fmt_or_na(pwr, sizeof pwr, g, GM_M_POWER_MW, 0.001, "%.0fW");
    fmt_or_na(cap, sizeof cap, g, GM_M_POWER_LIMIT_MW, 0.001, "%.0fW");
    fmt_or_na(used, sizeof used, g, GM_M_MEM_USED_BYTES, gm_metric_get(GM_M_MEM_USED_BYTES)->scale,
              "%.0fMiB");
    fmt_or_na(total, sizeof total, g, GM_M_MEM_TOTAL_BYTES,
              gm_metric_get(GM_M_MEM_TOTAL_BYTES)->scale, "%.0fMiB");
    fmt_or_na(util, sizeof util, g, GM_M_UTIL_GPU_PCT, 1, "%.0f%%");
    /* The summary abbreviates the exclusive modes, as nvidia-smi's does. */
    static const char *const modes[] = {"Default", "E. Thread", "Prohibited", "E. Process"};
    int mode = !g->lost && gm_gpu_has(g, GM_M_COMPUTE_MODE) ? (int)g->v[GM_M_COMPUTE_MODE] : -1;
    snprintf(cm, sizeof cm, "%s", mode >= 0 && mode <= 3 ? modes[mode] : "N/A");
    snprintf(mig, sizeof mig, "%s",
             !g->lost && gm_gpu_has(g, GM_M_MIG_MODE_CUR)
                 ? (g->v[GM_M_MIG_MODE_CUR] != 0 ? "Enabled" : "Disabled")
                 : "N/A");
    char pw[40], mem[48], cell[64];
    snprintf(pw, sizeof pw, "%s / %5s", pwr, cap);
    snprintf(mem, sizeof mem, "%s / %9s", used, total);
    /* Cell widths of nvidia-smi 590's table (41, 24 and 22 columns). */
    snprintf(cell, sizeof cell, "%-29.29s%4s", g->name, persist);
    /* Disp.A: whether a display is initialised on the GPU (display_active). */
    const char *disp = !g->lost && gm_gpu_has(g, GM_M_DISPLAY_ACTIVE)
                           ? (g->v[GM_M_DISPLAY_ACTIVE] != 0 ? "On" : "Off")
                           : "N/A";
    gm_buf_printf(b, "| %3u  %s  |%19s %3s |%21s |\n", g->index, cell, g->pci_bus_id, disp, ecc);
    gm_buf_printf(b, "| %3s%6s%6s%24s |%23s |%8s%13s |\n", fan, temp, perf, pw, mem, util, cm);
    gm_buf_printf(b, "| %39s |%23s |%21s |\n", "", "", mig);
    gm_buf_puts(b, summary_rule);
}

/* The process table: the processes of the selected GPUs. */
static void summary_processes(gm_buf *b, const gm_snapshot *s, const unsigned *sel, size_t nsel)
{
    gm_buf_puts(b, "+-----------------------------------------------------------------------------"
                   "------------+\n"
                   "| Processes:                                                                  "
                   "            |\n"
                   "|  GPU   GI   CI              PID   Type   Process name                       "
                   " GPU Memory |\n"
                   "|        ID   ID                                                              "
                   " Usage      |\n"
                   "|============================================================================="
                   "============|\n");
    bool any = false;
    for (size_t p = 0; p < s->proc_count; p++) {
        const gm_process *pr = &s->procs[p];
        bool wanted = false;
        for (size_t k = 0; k < nsel && !wanted; k++)
            wanted = sel[k] == pr->gpu_index;
        if (!wanted)
            continue;
        any = true;
        char mem[24];
        if (pr->mem_valid)
            snprintf(mem, sizeof mem, "%lluMiB",
                     (unsigned long long)(pr->used_mem_bytes / GM_BYTES_PER_MIB));
        else
            snprintf(mem, sizeof mem, "N/A");
        const char *type = pr->type == (GM_PROC_COMPUTE | GM_PROC_GRAPHICS) ? "C+G"
                           : pr->type == GM_PROC_GRAPHICS                   ? "G"
                                                                            : "C";
        char name[40];
        size_t n = strcspn(pr->command, " ");
        snprintf(name, sizeof name, "%.*s", (int)(n < 36 ? n : 36), pr->command);
        gm_buf_printf(b, "|%5u%6s%5s%16u%7s   %-36.36s%10s |\n", pr->gpu_index, "N/A", "N/A",
                      pr->pid, type, name[0] ? name : "N/A", mem);
    }
    if (!any)
        gm_buf_puts(b, "|  No running processes found                                             "
                       "                |\n");
    gm_buf_puts(b, "+-----------------------------------------------------------------------------"
                   "------------+\n");
}

static void render_summary(gm_buf *b, const gm_snapshot *s, const unsigned *sel, size_t nsel)
{
    summary_header(b, s);
    for (size_t k = 0; k < nsel; k++) {
        const gm_gpu *g = gm_snapshot_gpu(s, sel[k]);
        if (g)
            summary_gpu(b, g);
    }
    gm_buf_puts(b, "\n");
    summary_processes(b, s, sel, nsel);
}

/* ---- the CSV queries ---------------------------------------------------------------------- */

static void csv_header(gm_buf *b, const qfield *const *f, size_t n, unsigned flags)
{
    if (flags & GM_SMI_NOHEADER)
        return;
    for (size_t i = 0; i < n; i++) {
        const char *h = f[i]->header;
        char plain[96];
        if (flags & GM_SMI_NOUNITS) {
            /* nvidia-smi keeps the units in the header: as it does, we do too. */
        }
        snprintf(plain, sizeof plain, "%s", h);
        gm_buf_printf(b, "%s%s", i ? ", " : "", plain);
    }
    gm_buf_puts(b, "\n");
}

static void csv_gpu_value(gm_buf *b, const gm_snapshot *s, const gm_gpu *g, int field,
                          unsigned flags)
{
    char v[GM_NAME_LEN + 32];
    gm_smi_format_value(s, g, field, flags, v, sizeof v);
    gm_buf_puts(b, v);
}

static void render_apps(gm_buf *b, const gm_snapshot *s, const unsigned *sel, size_t nsel,
                        const qfield *const *f, size_t n, unsigned flags)
{
    for (size_t p = 0; p < s->proc_count; p++) {
        const gm_process *pr = &s->procs[p];
        if (!(pr->type & GM_PROC_COMPUTE))
            continue;
        const gm_gpu *g = NULL;
        for (size_t k = 0; k < nsel && !g; k++)
            if (sel[k] == pr->gpu_index)
                g = gm_snapshot_gpu(s, pr->gpu_index);
        if (!g)
            continue;
        for (size_t i = 0; i < n; i++) {
            if (i)
                gm_buf_puts(b, ", ");
            switch (f[i]->kind) {
            case Q_GPU:
                csv_gpu_value(b, s, g, f[i]->gpu_field, flags);
                break;
            case Q_PID:
                gm_buf_printf(b, "%u", pr->pid);
                break;
            case Q_PROCESS_NAME: {
                size_t len = strcspn(pr->command, " ");
                if (len)
                    gm_buf_printf(b, "%.*s", (int)len, pr->command);
                else
                    gm_buf_puts(b, "[N/A]");
                break;
            }
            case Q_USED_MEMORY:
                if (pr->mem_valid)
                    gm_buf_printf(b, "%llu%s",
                                  (unsigned long long)(pr->used_mem_bytes / GM_BYTES_PER_MIB),
                                  flags & GM_SMI_NOUNITS ? "" : " MiB");
                else
                    gm_buf_puts(b, "[N/A]");
                break;
            default:
                gm_buf_puts(b, "[N/A]");
            }
        }
        gm_buf_puts(b, "\n");
    }
}

static void render_retired(gm_buf *b, gm_collector *c, const gm_snapshot *s, const unsigned *sel,
                           size_t nsel, const qfield *const *f, size_t n, unsigned flags)
{
    static const char *const causes[2] = {"Single Bit ECC", "Double Bit ECC"};
    enum { MAX_PAGES = 512 };
    uint64_t addr[MAX_PAGES], when[MAX_PAGES];
    for (size_t k = 0; k < nsel; k++) {
        const gm_gpu *g = gm_snapshot_gpu(s, sel[k]);
        if (!g)
            continue;
        for (int cause = 0; cause < 2; cause++) {
            size_t count = 0;
            gm_error err = {0};
            /* A GPU that cannot tell gets one row of [N/A] per cause, as nvidia-smi prints. */
            bool known = !g->lost && gm_collector_retired_pages(c, g->index, cause, addr, when,
                                                                MAX_PAGES, &count, &err) == GM_OK;
            size_t rows = known ? (count < MAX_PAGES ? count : MAX_PAGES) : 1;
            for (size_t r = 0; r < rows; r++) {
                for (size_t i = 0; i < n; i++) {
                    if (i)
                        gm_buf_puts(b, ", ");
                    switch (f[i]->kind) {
                    case Q_GPU:
                        csv_gpu_value(b, s, g, f[i]->gpu_field, flags);
                        break;
                    case Q_PAGE_ADDRESS:
                        if (known)
                            gm_buf_printf(b, "0x%016llx", (unsigned long long)addr[r]);
                        else
                            gm_buf_puts(b, "[N/A]");
                        break;
                    case Q_PAGE_TIME:
                        if (known && when[r]) {
                            char t[40];
                            time_t tt = (time_t)when[r];
                            struct tm tm;
                            localtime_r(&tt, &tm);
                            strftime(t, sizeof t, "%Y/%m/%d %H:%M:%S", &tm);
                            gm_buf_puts(b, t);
                        } else {
                            gm_buf_puts(b, "[N/A]");
                        }
                        break;
                    case Q_PAGE_CAUSE:
                        gm_buf_puts(b, causes[cause]);
                        break;
                    default:
                        gm_buf_puts(b, "[N/A]");
                    }
                }
                gm_buf_puts(b, "\n");
            }
        }
    }
}

static void render_remapped(gm_buf *b, const gm_snapshot *s, const unsigned *sel, size_t nsel,
                            const qfield *const *f, size_t n, unsigned flags)
{
    for (size_t k = 0; k < nsel; k++) {
        const gm_gpu *g = gm_snapshot_gpu(s, sel[k]);
        if (!g)
            continue;
        for (size_t i = 0; i < n; i++) {
            if (i)
                gm_buf_puts(b, ", ");
            csv_gpu_value(b, s, g, f[i]->gpu_field, flags);
        }
        gm_buf_puts(b, "\n");
    }
}

/* ---- the run -------------------------------------------------------------------------------- */

static void print_version(FILE *out, const gm_snapshot *s, const gm_smi_profile *prof)
{
    char nvml[GM_VERSION_LEN];
    gm_smi_profile_nvml_version(prof, s->nvml_version, nvml, sizeof nvml);
    const char *drv = s->driver_version[0] ? s->driver_version : "N/A";
    fprintf(out,
            "NVIDIA-SMI version  : %s\n"
            "NVML version        : %s\n"
            "DRIVER version      : %s\n"
            "CUDA Version        : %s\n",
            drv, nvml, drv, s->cuda_version[0] ? s->cuda_version : "N/A");
}

/* What a query asks for: the --format flags and the fields of the --query-* given. */
typedef struct smi_query {
    unsigned flags;
    int gpu_ids[GM_SMI_MAX_FIELDS];      /* --query-gpu */
    const qfield *qf[GM_SMI_MAX_FIELDS]; /* --query-compute-apps, -retired-pages, -remapped-rows */
    size_t nf;
} smi_query;

/* Reads --format and the fields of the query; false (the complaint printed) when one is wrong. */
static bool parse_query(const smi_opts *o, smi_query *q)
{
    gm_error err = {0};
    if (o->format && gm_smi_parse_format(o->format, &q->flags, &err) < 0) {
        fprintf(stderr, "%s\n\n", err.msg);
        return false;
    }
    switch (o->action) {
    case ACT_CSV_GPU:
        if (gm_smi_parse_fields(o->query, q->gpu_ids, GM_SMI_MAX_FIELDS, &q->nf, &err) < 0) {
            fprintf(stderr, "%s\n\n", err.msg);
            return false;
        }
        return true;
    case ACT_CSV_APPS:
        return parse_qfields(o->query, apps_fields, NQ(apps_fields), q->qf, &q->nf);
    case ACT_CSV_RETIRED:
        return parse_qfields(o->query, retired_fields, NQ(retired_fields), q->qf, &q->nf);
    case ACT_CSV_REMAPPED:
        return parse_qfields(o->query, remapped_fields, NQ(remapped_fields), q->qf, &q->nf);
    default:
        return true;
    }
}

/* Opens the collector reading what the action prints (copt and want are filled here and must
 * outlive it); NULL with the exit status in *rc. */
static gm_collector *open_collector(smi_opts *o, const smi_query *q, bool help_gpu,
                                    gm_collector_options *copt, gm_metric_set *want, int *rc)
{
    if (!gm_cli_collector_options("smi", &o->src, copt)) {
        *rc = GM_EXIT_USAGE;
        return NULL;
    }
    gm_cli_vary_simulation(&o->src, copt);
    copt->no_host = true;      /* nvidia-smi shows no host metrics (the host name is kept) */
    copt->slow_period_ms = -1; /* every reading fresh: each line is a request */
    copt->no_processes =
        !(o->action == ACT_QUERY || o->action == ACT_SUMMARY || o->action == ACT_CSV_APPS);
    if (help_gpu)
        copt->no_processes = true;
    /* --query-gpu reads what its fields print and nothing else, as nvidia-smi does. */
    memset(want, 0, sizeof *want);
    if (o->action == ACT_CSV_GPU && !help_gpu) {
        gm_smi_fields_want(q->gpu_ids, q->nf, want);
        copt->want = want;
    }
    copt->vendor = "NVIDIA"; /* as nvidia-smi: an AMD GPU beside them is not listed */
    return gm_cli_collector_open("smi", copt, rc);
}

/* The GPUs -i selects, or all; false (said) when one is not there. */
static bool select_gpus(smi_opts *o, const gm_snapshot *s, unsigned *sel, size_t *nsel)
{
    *nsel = 0;
    if (o->filter.count) {
        if (!gm_cli_gpu_filter_resolve("smi", &o->filter, s, sel, nsel)) {
            fprintf(stderr, "No devices were found\n");
            return false;
        }
        return true;
    }
    for (unsigned i = 0; i < s->gpu_count; i++)
        sel[(*nsel)++] = s->gpus[i].index;
    return true;
}

/* What this driver's nvidia-smi refuses once it has found the GPUs: -q -x with -d on some, a
 * --query-gpu field it does not know. The exit status, or -1 when nothing is refused. */
static int profile_refuses(const smi_opts *o, const smi_query *q, const gm_smi_profile *prof,
                           FILE *out)
{
    if (o->action == ACT_QUERY && o->xml && o->display &&
        gm_smi_profile_refuses_xml_display(prof)) {
        fprintf(out, "%s\n", gm_smi_profile_xml_display_error());
        return GM_EXIT_USAGE;
    }
    if (o->action == ACT_CSV_GPU) {
        for (size_t i = 0; i < q->nf; i++)
            if (!gm_smi_profile_has(prof, q->gpu_ids[i])) {
                fprintf(stderr, "Field \"%s\" is not a valid field to query.\n\n",
                        gm_smi_field_name(q->gpu_ids[i]));
                return GM_EXIT_USAGE;
            }
    }
    return -1;
}

/* -L: each GPU, then its MIG devices, numbered per GPU, in nvidia-smi's columns. */
static void render_list(gm_buf *b, const gm_snapshot *s, const unsigned *sel, size_t nsel)
{
    for (size_t k = 0; k < nsel; k++) {
        const gm_gpu *g = gm_snapshot_gpu(s, sel[k]);
        gm_buf_printf(b, "GPU %u: %s (UUID: %s)\n", g->index, g->name[0] ? g->name : "N/A",
                      g->uuid[0] ? g->uuid : "N/A");
        for (unsigned m = 0; m < g->mig_count && m < GM_MAX_MIG; m++) {
            char mig_name[GM_MIG_PROFILE_LEN + 8];
            snprintf(mig_name, sizeof mig_name, "MIG %s",
                     g->mig[m].profile[0] ? g->mig[m].profile : "N/A");
            gm_buf_printf(b, "  %-15s Device %2u: (UUID: %s)\n", mig_name, m,
                          g->mig[m].uuid[0] ? g->mig[m].uuid : "N/A");
        }
    }
}

/* --query-gpu: one CSV, the header once (header_done: printed already), then rows at each
 * interval. */
static void render_csv_gpu(gm_buf *b, const gm_snapshot *s, const unsigned *sel, size_t nsel,
                           const smi_query *q, bool header_done)
{
    if (!((q->flags | (header_done ? GM_SMI_NOHEADER : 0)) & GM_SMI_NOHEADER)) {
        for (size_t i = 0; i < q->nf; i++)
            gm_buf_printf(b, "%s%s", i ? ", " : "", gm_smi_field_header(q->gpu_ids[i]));
        gm_buf_puts(b, "\n");
    }
    for (size_t k = 0; k < nsel; k++) {
        const gm_gpu *g = gm_snapshot_gpu(s, sel[k]);
        for (size_t i = 0; i < q->nf; i++) {
            if (i)
                gm_buf_puts(b, ", ");
            csv_gpu_value(b, s, g, q->gpu_ids[i], q->flags);
        }
        gm_buf_puts(b, "\n");
    }
}

/* One pass of the action over the selected GPUs into b. */
static void render(gm_buf *b, gm_collector *c, const gm_snapshot *s, const unsigned *sel,
                   size_t nsel, const smi_opts *o, const smi_query *q, bool header_done)
{
    switch (o->action) {
    case ACT_LIST:
        render_list(b, s, sel, nsel);
        break;
    case ACT_QUERY:
        render_query(b, c, s, sel, nsel, o);
        break;
    case ACT_SUMMARY:
        render_summary(b, s, sel, nsel);
        break;
    case ACT_CSV_GPU:
        render_csv_gpu(b, s, sel, nsel, q, header_done);
        break;
    case ACT_CSV_APPS:
    case ACT_CSV_RETIRED:
    case ACT_CSV_REMAPPED:
        if (!header_done)
            csv_header(b, q->qf, q->nf, q->flags);
        if (o->action == ACT_CSV_APPS)
            render_apps(b, s, sel, nsel, q->qf, q->nf, q->flags);
        else if (o->action == ACT_CSV_RETIRED)
            render_retired(b, c, s, sel, nsel, q->qf, q->nf, q->flags);
        else
            render_remapped(b, s, sel, nsel, q->qf, q->nf, q->flags);
        break;
    }
}

/* Samples and prints, once or every -l seconds until a signal; the exit status. */
static int run_loop(smi_opts *o, const smi_query *q, gm_collector *c, gm_snapshot *s, FILE *out,
                    bool version, bool help_gpu)
{
    gm_error err = {0};
    int rc = GM_EXIT_OK;
    bool header_done = false;
    double next = gm_clock_mono_s();
    do {
        if (gm_collector_sample(c, s, &err) < 0) {
            fprintf(stderr, "Unable to read the GPUs: %s\n", err.msg);
            rc = GM_EXIT_NO_GPU;
            if (o->loop_s == 0)
                break;
            next += o->loop_s;
            continue;
        }
        unsigned sel[GM_MAX_GPUS];
        size_t nsel = 0;
        if (!select_gpus(o, s, sel, &nsel))
            return 6; /* nvidia-smi's status for a GPU not found */
        const gm_smi_profile *prof = gm_smi_profile_for(s->driver_version);
        if (help_gpu) {
            print_help_query_gpu(out, prof);
            break;
        }
        int refused = header_done ? -1 : profile_refuses(o, q, prof, out);
        if (refused >= 0)
            return refused;
        gm_buf b;
        gm_buf_init(&b, 0);
        if (version)
            print_version(out, s, prof);
        else
            render(&b, c, s, sel, nsel, o, q, header_done);
        header_done = true;
        size_t len = 0;
        char *text = gm_buf_take(&b, &len);
        if (!text || fwrite(text, 1, len, out) != len || fflush(out) != 0) {
            fprintf(stderr, "%s: cannot write %s: %s\n", o->me, o->file ? o->file : "the output",
                    text ? strerror(errno) : "out of memory");
            free(text);
            return GM_EXIT_FAILURE;
        }
        free(text);
        if (version)
            break;
        next += o->loop_s;
        /* nvidia-smi separates the summaries of a loop with a blank line. */
    } while (o->loop_s > 0 && gm_clock_sleep_until(next, &stop_requested));
    return rc;
}

int gm_cli_smi(int argc, char **argv)
{
    smi_opts o = {0};
    const char *base = strrchr(argv[0], '/');
    base = base ? base + 1 : argv[0];
    o.me = strcmp(base, "smi") == 0 ? "gpumon smi" : "nvidia-smi";
    int rc = parse_args(argc, argv, &o);
    bool version = rc == -2, help_gpu = rc == -3;
    if (rc >= 0)
        return rc;

    smi_query q = {0};
    if (!parse_query(&o, &q))
        return GM_EXIT_USAGE;
    gm_collector_options copt;
    gm_metric_set want;
    gm_collector *c = open_collector(&o, &q, help_gpu, &copt, &want, &rc);
    if (!c)
        return rc;
    if (help_gpu && strcmp(gm_collector_provider(c), "none") == 0) {
        /* No driver to ask: the newest driver's list. */
        print_help_query_gpu(stdout, gm_smi_profile_for(NULL));
        gm_collector_close(c);
        return GM_EXIT_OK;
    }
    if (strcmp(gm_collector_provider(c), "none") == 0) {
        /* What nvidia-smi says when the driver answers nothing. */
        fprintf(stderr, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                        "driver. Make sure that the latest NVIDIA driver is installed and "
                        "running.\n\n");
        say_other_vendors(&copt);
        gm_cli_require_gpu("smi", c, false);
        gm_collector_close(c);
        return 9; /* nvidia-smi's status for "driver not loaded" */
    }

    gm_error err = {0};
    FILE *out = stdout;
    gm_file *file = NULL;
    if (o.file) {
        if (gm_file_open_output(o.file, o.loop_s > 0 ? GM_FILE_STREAM : GM_FILE_REPLACE, &file,
                                &err) < 0) {
            fprintf(stderr, "Failed to open file %s: %s\n\n", o.file, err.msg);
            gm_collector_close(c);
            return GM_EXIT_FAILURE;
        }
        out = gm_file_stream(file);
    }
    gm_snapshot *s = gm_snapshot_new();
    if (!s) {
        fprintf(stderr, "%s: out of memory\n", o.me);
        gm_file_abort(file);
        gm_collector_close(c);
        return GM_EXIT_FAILURE;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    rc = run_loop(&o, &q, c, s, out, version, help_gpu);

    gm_snapshot_free(s);
    if (file && gm_file_commit(file, NULL, &err) < 0 && rc == GM_EXIT_OK) {
        fprintf(stderr, "%s: %s\n", o.me, err.msg);
        rc = GM_EXIT_FAILURE;
    }
    gm_collector_close(c);
    return rc;
}
