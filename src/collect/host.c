/* host.c - host metrics (CPU, memory, load, uptime, identity) and process details from procfs. */
#include "collect/host.h"
#include "collect/calltime.h"
#include "base/clock.h"
#include "base/utf8.h"
#include "base/error.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HOST_DEFAULT_ROOT "/proc"
/* procfs files report size 0, so they are read into a buffer that grows by doubling. The cap
 * keeps a hostile or broken file from eating memory; /proc/stat on 1024 cores with a long
 * "intr" line is well under 1 MiB. */
#define HOST_BUF_INITIAL (64 * 1024)
#define HOST_BUF_MAX     (16 * 1024 * 1024)
/* /proc/cpuinfo (about 1 KB per logical CPU, the largest file read) and the kernel release do not
 * change while the host runs: read once a minute, their last reading served in between. */
#define HOST_STATIC_MS 60000
/* Bytes of /proc/<pid>/status read to find "Uid:" (about the tenth line). */
#define HOST_STATUS_MAX 4096
/* Longest command line kept by gm_host_describe_process (GM_CMD_LEN is far below). */
#define HOST_CMDLINE_MAX 4096

/* Jiffies of one /proc/stat "cpu" line, reduced to the two sums utilisation needs. */
typedef struct host_cpu_times {
    unsigned long id; /* N of "cpuN"; unused for the aggregate line */
    uint64_t busy;    /* user nice system irq softirq steal (guest is already in user) */
    uint64_t idle;    /* idle iowait */
} host_cpu_times;

struct gm_host_reader {
    char *root;
    bool real_proc; /* root is the live "/proc": the host name comes from gethostname() */
    char *buf;      /* reused for every file: the daemon reads every second */
    size_t cap;
    size_t len;
    bool have_prev_total;
    host_cpu_times prev_total;
    host_cpu_times *prev_cores; /* GM_MAX_CPUS entries, in /proc/stat line order */
    size_t prev_core_n;
    host_cpu_times *cur_cores;
    size_t cur_core_n;
    /* The last reading of the HOST_STATIC_MS files (cpu_model, kernel) and when it was made. */
    bool static_read, cpuinfo_ok, kernel_ok;
    int64_t static_ms;
    unsigned long processors;
    char cpu_model[sizeof(((gm_host *)0)->cpu_model)];
    char kernel[sizeof(((gm_host *)0)->kernel)];
};

/* ---- text helpers --------------------------------------------------------------------------- */

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static const char *skip_blanks(const char *p, const char *end)
{
    while (p < end && is_blank(*p))
        p++;
    return p;
}

/* Parses an unsigned decimal at *p (after blanks); advances *p. False on no digits or overflow. */
static bool parse_u64(const char **p, const char *end, uint64_t *out)
{
    const char *s = skip_blanks(*p, end);
    uint64_t v = 0;
    if (s >= end || !is_digit(*s))
        return false;
    while (s < end && is_digit(*s)) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
        s++;
    }
    *p = s;
    *out = v;
    return true;
}

/* Parses "123" or "123.45" at *p (after blanks) without strtod, whose decimal point follows the
 * process locale; the kernel always prints '.'. The number must end at a blank or line end. */
static bool parse_decimal(const char **p, const char *end, double *out)
{
    const char *s = skip_blanks(*p, end);
    uint64_t ip;
    double v, scale = 0.1;
    if (!parse_u64(&s, end, &ip))
        return false;
    v = (double)ip;
    if (s < end && *s == '.') {
        s++;
        if (s >= end || !is_digit(*s))
            return false;
        while (s < end && is_digit(*s)) {
            v += (*s - '0') * scale;
            scale /= 10;
            s++;
        }
    }
    if (s < end && !is_blank(*s) && *s != '\n')
        return false;
    *p = s;
    *out = v;
    return true;
}

/* Splits "Key<blanks>:<blanks>value" (cpuinfo, meminfo, status); false when there is no ':'. */
static bool split_key(const char *line, const char *end, const char **key, size_t *key_len,
                      const char **val)
{
    const char *colon = memchr(line, ':', (size_t)(end - line));
    const char *k_end;
    if (!colon)
        return false;
    k_end = colon;
    while (k_end > line && is_blank(k_end[-1]))
        k_end--;
    *key = line;
    *key_len = (size_t)(k_end - line);
    *val = skip_blanks(colon + 1, end);
    return true;
}

static bool key_is(const char *key, size_t key_len, const char *want)
{
    return key_len == strlen(want) && memcmp(key, want, key_len) == 0;
}

/* Copies n bytes of src into dst (len bytes, always NUL-terminated) as printable UTF-8: NULs
 * become spaces, other control bytes and invalid UTF-8 become '?' (as ps shows them), a
 * multi-byte character is never split by truncation, and trailing spaces are trimmed. */
static void copy_text(char *dst, size_t len, const char *src, size_t n)
{
    const unsigned char *s = (const unsigned char *)src;
    size_t o = 0, i = 0;
    if (len == 0)
        return;
    while (i < n) {
        int sl = gm_utf8_seq_len(s + i, n - i);
        if (sl < 0)
            break; /* a character cut off by the end of the data read */
        if (sl == 0 || sl == 1) {
            unsigned char c = s[i];
            if (o + 1 >= len)
                break;
            if (c == 0)
                dst[o++] = ' ';
            else if (sl == 0 || c < 0x20 || c == 0x7F)
                dst[o++] = '?';
            else
                dst[o++] = (char)c;
            i++;
            continue;
        }
        if (o + (size_t)sl >= len)
            break;
        memcpy(dst + o, s + i, (size_t)sl);
        o += (size_t)sl;
        i += (size_t)sl;
    }
    while (o > 0 && dst[o - 1] == ' ')
        o--;
    dst[o] = '\0';
}

/* copy_text of a value with surrounding blanks removed and inner runs of blanks collapsed
 * (old Intel model names pad with spaces: "Intel(R) Xeon(R) CPU           E5-2680"). */
static void copy_value(char *dst, size_t len, const char *val, const char *end)
{
    char tmp[256];
    size_t n = 0;
    bool space = false;
    val = skip_blanks(val, end);
    for (const char *p = val; p < end && *p != '\n' && n < sizeof tmp; p++) {
        if (is_blank(*p) || *p == '\r') {
            space = true;
            continue;
        }
        if (space && n > 0 && n + 1 < sizeof tmp)
            tmp[n++] = ' ';
        space = false;
        tmp[n++] = *p;
    }
    copy_text(dst, len, tmp, n);
}

/* ---- file reading --------------------------------------------------------------------------- */

/* Reads fd to EOF into r->buf (NUL-terminated, r->len bytes). Beyond HOST_BUF_MAX the data is
 * cut at the last complete line so no parser sees a half number. False on a read error. */
static bool read_fd(gm_host_reader *r, int fd)
{
    r->len = 0;
    for (;;) {
        ssize_t got;
        if (r->len + 1 >= r->cap) {
            size_t ncap = r->cap * 2;
            char *nbuf;
            if (ncap > HOST_BUF_MAX) {
                char *nl = memrchr(r->buf, '\n', r->len);
                r->len = nl ? (size_t)(nl - r->buf) + 1 : 0;
                break;
            }
            nbuf = realloc(r->buf, ncap);
            if (!nbuf)
                return false;
            r->buf = nbuf;
            r->cap = ncap;
        }
        got = read(fd, r->buf + r->len, r->cap - 1 - r->len);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return false;
        }
        if (got == 0)
            break;
        r->len += (size_t)got;
    }
    r->buf[r->len] = '\0';
    return true;
}

/* Reads <root>/<rel> into r->buf. False when it is missing or unreadable. */
static bool read_file(gm_host_reader *r, const char *rel)
{
    char path[PATH_MAX];
    int fd, n;
    bool ok;
    n = snprintf(path, sizeof path, "%s/%s", r->root, rel);
    if (n < 0 || (size_t)n >= sizeof path)
        return false;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ok = read_fd(r, fd);
    close(fd);
    return ok;
}

/* Reads at most cap-1 bytes of path into buf (NUL-terminated); returns the count or -1. */
static ssize_t read_small(const char *path, char *buf, size_t cap)
{
    size_t len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    while (len + 1 < cap) {
        ssize_t got = read(fd, buf + len, cap - 1 - len);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            close(fd);
            return -1;
        }
        if (got == 0)
            break;
        len += (size_t)got;
    }
    close(fd);
    buf[len] = '\0';
    return (ssize_t)len;
}

ssize_t gm_host_read_small(const char *path, char *buf, size_t cap)
{
    return cap ? read_small(path, buf, cap) : -1;
}

/* ---- /proc/stat ----------------------------------------------------------------------------- */

/* Parses the jiffies after "cpu"/"cpuN" (proc(5): user nice system idle iowait irq softirq
 * steal guest guest_nice; older kernels print fewer). Every field must be a number and at
 * least the first four must be there, otherwise the line is ignored. */
static bool parse_cpu_fields(const char *p, const char *end, host_cpu_times *t)
{
    uint64_t f[10] = {0};
    unsigned n = 0;
    for (;;) {
        uint64_t v;
        p = skip_blanks(p, end);
        if (p >= end || *p == '\n' || *p == '\r')
            break;
        if (!parse_u64(&p, end, &v))
            return false;
        if (p < end && !is_blank(*p) && *p != '\n' && *p != '\r')
            return false;
        if (n < 10)
            f[n] = v;
        n++;
    }
    if (n < 4)
        return false;
    /* guest and guest_nice (f[8], f[9]) are already counted in user and nice. */
    t->busy = f[0] + f[1] + f[2] + f[5] + f[6] + f[7];
    t->idle = f[3] + f[4];
    return true;
}

/* Busy share (percent) of the jiffies between prev and cur; false when the counters went
 * backwards (CPU hotplug, counter reset) or no time elapsed. */
static bool cpu_util(const host_cpu_times *prev, const host_cpu_times *cur, double *pct)
{
    uint64_t db, di;
    if (cur->busy < prev->busy || cur->idle < prev->idle)
        return false;
    db = cur->busy - prev->busy;
    di = cur->idle - prev->idle;
    if (db + di == 0)
        return false;
    *pct = 100.0 * (double)db / (double)(db + di);
    return true;
}

/* Finds the previous counters of CPU id; lines normally keep their order, so try i first. */
static const host_cpu_times *prev_core(const gm_host_reader *r, size_t i, unsigned long id)
{
    if (i < r->prev_core_n && r->prev_cores[i].id == id)
        return &r->prev_cores[i];
    for (size_t j = 0; j < r->prev_core_n; j++)
        if (r->prev_cores[j].id == id)
            return &r->prev_cores[j];
    return NULL;
}

/* Reads /proc/stat: CPU count, and utilisation against the counters of the previous read. */
static bool read_stat(gm_host_reader *r, gm_host *out)
{
    const char *p, *end;
    host_cpu_times total = {0};
    bool have_total = false;
    unsigned long ncpu = 0;
    if (!read_file(r, "stat"))
        return false;
    p = r->buf;
    end = r->buf + r->len;
    r->cur_core_n = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        if (le - p > 3 && memcmp(p, "cpu", 3) == 0) {
            const char *q = p + 3;
            host_cpu_times t;
            if (is_blank(*q)) {
                if (!have_total && parse_cpu_fields(q, le, &t)) {
                    total = t;
                    have_total = true;
                }
            } else if (is_digit(*q)) {
                uint64_t id;
                if (parse_u64(&q, le, &id) && id <= ULONG_MAX && q < le && is_blank(*q) &&
                    parse_cpu_fields(q, le, &t)) {
                    t.id = (unsigned long)id;
                    ncpu++;
                    if (r->cur_core_n < GM_MAX_CPUS)
                        r->cur_cores[r->cur_core_n++] = t;
                }
            }
        }
        p = le + 1;
    }
    if (!have_total && ncpu == 0)
        return false;

    if (ncpu > 0)
        gm_host_set(out, GM_H_CPU_COUNT, (double)ncpu);
    if (have_total) {
        double pct;
        if (r->have_prev_total && cpu_util(&r->prev_total, &total, &pct))
            gm_host_set(out, GM_H_CPU_UTIL_PCT, pct);
        r->prev_total = total;
        r->have_prev_total = true;
    }
    /* Per-core entries only from the second reading that had cores; an entry without usable
     * previous counters is NAN, since the array has no validity bits of its own. */
    if (r->cur_core_n > 0 && r->prev_core_n > 0) {
        out->core_count = (unsigned)r->cur_core_n;
        for (size_t i = 0; i < r->cur_core_n; i++) {
            const host_cpu_times *pv = prev_core(r, i, r->cur_cores[i].id);
            double pct;
            out->core_util_pct[i] =
                pv && cpu_util(pv, &r->cur_cores[i], &pct) ? (float)pct : (float)NAN;
        }
    }
    if (r->cur_core_n > 0) {
        host_cpu_times *swap = r->prev_cores;
        r->prev_cores = r->cur_cores;
        r->cur_cores = swap;
        r->prev_core_n = r->cur_core_n;
    }
    return true;
}

/* ---- /proc/meminfo -------------------------------------------------------------------------- */

enum { MI_TOTAL, MI_FREE, MI_AVAILABLE, MI_BUFFERS, MI_CACHED, MI_SWAP_TOTAL, MI_SWAP_FREE, MI__N };

static const char *const meminfo_keys[MI__N] = {"MemTotal", "MemFree",   "MemAvailable", "Buffers",
                                                "Cached",   "SwapTotal", "SwapFree"};

/* Reads /proc/meminfo. Used memory is total - available, as procps `free` computes it. */
static bool read_meminfo(gm_host_reader *r, gm_host *out)
{
    const char *p, *end;
    double v[MI__N] = {0};
    bool have[MI__N] = {false};
    bool any = false;
    if (!read_file(r, "meminfo"))
        return false;
    p = r->buf;
    end = r->buf + r->len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *key, *val;
        size_t key_len;
        if (split_key(p, le, &key, &key_len, &val)) {
            for (int k = 0; k < MI__N; k++) {
                uint64_t n;
                const char *q = val;
                if (have[k] || !key_is(key, key_len, meminfo_keys[k]))
                    continue;
                if (!parse_u64(&q, le, &n))
                    break;
                q = skip_blanks(q, le);
                if (le - q >= 2 && memcmp(q, "kB", 2) == 0) {
                    v[k] = (double)n * 1024.0;
                    q += 2;
                } else {
                    v[k] = (double)n;
                }
                q = skip_blanks(q, le);
                if (q < le && *q != '\r')
                    break; /* trailing garbage: malformed */
                have[k] = true;
                any = true;
                break;
            }
        }
        p = le + 1;
    }
    if (!any)
        return false;

    double avail = 0;
    bool have_avail = false;
    if (have[MI_AVAILABLE]) {
        avail = v[MI_AVAILABLE];
        have_avail = true;
    } else if (have[MI_FREE] && have[MI_BUFFERS] && have[MI_CACHED]) {
        /* Kernels before 3.14 have no MemAvailable. */
        avail = v[MI_FREE] + v[MI_BUFFERS] + v[MI_CACHED];
        have_avail = true;
    }
    if (have[MI_TOTAL])
        gm_host_set(out, GM_H_MEM_TOTAL_BYTES, v[MI_TOTAL]);
    if (have_avail)
        gm_host_set(out, GM_H_MEM_AVAILABLE_BYTES, avail);
    if (have[MI_TOTAL] && have_avail && avail <= v[MI_TOTAL])
        gm_host_set(out, GM_H_MEM_USED_BYTES, v[MI_TOTAL] - avail);
    if (have[MI_SWAP_TOTAL])
        gm_host_set(out, GM_H_SWAP_TOTAL_BYTES, v[MI_SWAP_TOTAL]);
    if (have[MI_SWAP_TOTAL] && have[MI_SWAP_FREE] && v[MI_SWAP_FREE] <= v[MI_SWAP_TOTAL])
        gm_host_set(out, GM_H_SWAP_USED_BYTES, v[MI_SWAP_TOTAL] - v[MI_SWAP_FREE]);
    return true;
}

/* ---- loadavg, uptime ------------------------------------------------------------------------ */

/* Reads /proc/loadavg ("0.52 0.58 0.59 1/467 12345"); stops at the first malformed field. */
static bool read_loadavg(gm_host_reader *r, gm_host *out)
{
    static const gm_host_metric ids[3] = {GM_H_LOAD1, GM_H_LOAD5, GM_H_LOAD15};
    const char *p;
    const char *end;
    bool any = false;
    if (!read_file(r, "loadavg"))
        return false;
    p = r->buf;
    end = r->buf + r->len;
    for (int i = 0; i < 3; i++) {
        double v;
        if (!parse_decimal(&p, end, &v))
            break;
        gm_host_set(out, ids[i], v);
        any = true;
    }
    return any;
}

/* Reads /proc/uptime ("350735.47 234388.90"): seconds since boot. */
static bool read_uptime(gm_host_reader *r, gm_host *out)
{
    const char *p;
    double v;
    if (!read_file(r, "uptime"))
        return false;
    p = r->buf;
    if (!parse_decimal(&p, r->buf + r->len, &v))
        return false;
    gm_host_set(out, GM_H_UPTIME_S, v);
    return true;
}

/* ---- /proc/cpuinfo -------------------------------------------------------------------------- */

typedef struct arm_part {
    unsigned implementer;
    unsigned part;
    const char *name;
} arm_part;

/* Cores found beside GPUs (servers, Jetson, Grace), named as lscpu names them; from the MIDR
 * implementer and part numbers in the Arm Architecture Reference Manual and vendor manuals. */
static const arm_part arm_parts[] = {
    {0x41, 0xd03, "ARM Cortex-A53"},  {0x41, 0xd05, "ARM Cortex-A55"},
    {0x41, 0xd07, "ARM Cortex-A57"},  {0x41, 0xd08, "ARM Cortex-A72"},
    {0x41, 0xd09, "ARM Cortex-A73"},  {0x41, 0xd0b, "ARM Cortex-A76"},
    {0x41, 0xd0c, "ARM Neoverse-N1"}, {0x41, 0xd40, "ARM Neoverse-V1"},
    {0x41, 0xd41, "ARM Cortex-A78"},  {0x41, 0xd42, "ARM Cortex-A78AE"},
    {0x41, 0xd49, "ARM Neoverse-N2"}, {0x41, 0xd4f, "ARM Neoverse-V2"},
    {0x41, 0xd84, "ARM Neoverse-V3"}, {0x41, 0xd8e, "ARM Neoverse-N3"},
    {0x4e, 0x003, "NVIDIA Denver 2"}, {0x4e, 0x004, "NVIDIA Carmel"},
    {0xc0, 0xac3, "Ampere Ampere-1"}, {0xc0, 0xac4, "Ampere Ampere-1a"},
};

/* Parses a "0x41"-style hex value; false when it is not one. */
static bool parse_hex(const char *p, const char *end, unsigned *out)
{
    unsigned v = 0;
    int digits = 0;
    if (end - p < 3 || p[0] != '0' || (p[1] != 'x' && p[1] != 'X'))
        return false;
    for (p += 2; p < end && digits < 8; p++, digits++) {
        char c = *p;
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            break;
        v = v * 16 + d;
    }
    if (digits == 0)
        return false;
    *out = v;
    return true;
}

/* Keys that name the CPU, best first: x86 and many others print "model name"; ARM kernels
 * print "Hardware" (32-bit SoCs) or only MIDR fields ("CPU part"); MIPS "cpu model"; old ARM
 * "Processor"; POWER "cpu"; RISC-V "uarch". */
enum {
    CI_MODEL_NAME,
    CI_HARDWARE,
    CI_CPU_PART,
    CI_CPU_MODEL,
    CI_PROCESSOR,
    CI_CPU,
    CI_UARCH,
    CI__N
};
static const char *const cpuinfo_keys[CI__N] = {"model name", "Hardware", "CPU part", "cpu model",
                                                "Processor",  "cpu",      "uarch"};

/* Reads /proc/cpuinfo: the CPU model of the first processor and the processor count. */
static bool read_cpuinfo(gm_host_reader *r, gm_host *out, unsigned long *processors)
{
    const char *p, *end;
    const char *val[CI__N] = {NULL}, *val_end[CI__N] = {NULL};
    unsigned implementer = 0;
    bool have_impl = false;
    *processors = 0;
    if (!read_file(r, "cpuinfo"))
        return false;
    p = r->buf;
    end = r->buf + r->len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *key, *v;
        size_t key_len;
        if (split_key(p, le, &key, &key_len, &v)) {
            if (key_is(key, key_len, "processor")) {
                uint64_t n;
                const char *q = v;
                if (parse_u64(&q, le, &n))
                    (*processors)++;
            } else if (key_is(key, key_len, "CPU implementer") && !have_impl) {
                have_impl = parse_hex(v, le, &implementer);
            } else {
                for (int k = 0; k < CI__N; k++) {
                    if (!val[k] && v < le && key_is(key, key_len, cpuinfo_keys[k])) {
                        val[k] = v;
                        val_end[k] = le;
                    }
                }
            }
        }
        p = le + 1;
    }
    for (int k = 0; k < CI__N; k++) {
        if (!val[k])
            continue;
        if (k == CI_CPU_PART) {
            unsigned part;
            const char *name = NULL;
            if (have_impl && parse_hex(val[k], val_end[k], &part)) {
                for (size_t i = 0; i < sizeof arm_parts / sizeof arm_parts[0]; i++)
                    if (arm_parts[i].implementer == implementer && arm_parts[i].part == part)
                        name = arm_parts[i].name;
            }
            if (name) {
                snprintf(out->cpu_model, sizeof out->cpu_model, "%s", name);
            } else {
                char raw[64];
                copy_value(raw, sizeof raw, val[k], val_end[k]);
                snprintf(out->cpu_model, sizeof out->cpu_model, "CPU part %s", raw);
            }
        } else {
            copy_value(out->cpu_model, sizeof out->cpu_model, val[k], val_end[k]);
        }
        if (out->cpu_model[0])
            break;
    }
    return true;
}

/* ---- kernel, hostname ----------------------------------------------------------------------- */

/* Reads the first line of <root>/<rel> into dst; false when missing or empty. */
static bool read_line(gm_host_reader *r, const char *rel, char *dst, size_t len)
{
    if (!read_file(r, rel))
        return false;
    copy_value(dst, len, r->buf, r->buf + r->len);
    return dst[0] != '\0';
}

/* ---- the reader ----------------------------------------------------------------------------- */

int gm_host_reader_open(const char *root, gm_host_reader **out, gm_error *err)
{
    gm_host_reader *r;
    size_t n;
    if (!out)
        return gm_error_set(err, GM_EINVAL, "gm_host_reader_open: out is NULL");
    *out = NULL;
    if (!root || !root[0])
        root = HOST_DEFAULT_ROOT;
    n = strlen(root);
    if (n >= PATH_MAX - 64)
        return gm_error_set(err, GM_EINVAL, "procfs root is too long (%zu bytes)", n);
    r = calloc(1, sizeof *r);
    if (!r)
        goto nomem;
    r->root = strdup(root);
    r->buf = malloc(HOST_BUF_INITIAL);
    r->prev_cores = calloc(GM_MAX_CPUS, sizeof *r->prev_cores);
    r->cur_cores = calloc(GM_MAX_CPUS, sizeof *r->cur_cores);
    if (!r->root || !r->buf || !r->prev_cores || !r->cur_cores)
        goto nomem;
    r->cap = HOST_BUF_INITIAL;
    /* "/proc/" and "/proc" are the same place; a trailing slash would also double in paths. */
    while (n > 1 && r->root[n - 1] == '/')
        r->root[--n] = '\0';
    r->real_proc = strcmp(r->root, HOST_DEFAULT_ROOT) == 0;
    *out = r;
    return GM_OK;
nomem:
    gm_host_reader_close(r);
    return gm_error_set(err, GM_ENOMEM, "out of memory opening the host reader");
}

void gm_host_reader_close(gm_host_reader *r)
{
    if (!r)
        return;
    free(r->root);
    free(r->buf);
    free(r->prev_cores);
    free(r->cur_cores);
    free(r);
}

int gm_host_reader_read(gm_host_reader *r, gm_host *out, gm_error *err)
{
    struct stat st;
    unsigned long processors = 0;
    bool any = false;
    if (!r || !out)
        return gm_error_set(err, GM_EINVAL, "gm_host_reader_read: NULL argument");
    memset(out, 0, sizeof *out);
    /* A root given for tests or a chroot is checked each time; the live /proc is not. */
    if (!r->real_proc) {
        if (stat(r->root, &st) != 0)
            return gm_error_set(err, GM_EIO, "cannot read procfs root '%s': %s", r->root,
                                strerror(errno));
        if (!S_ISDIR(st.st_mode))
            return gm_error_set(err, GM_EIO, "procfs root '%s' is not a directory", r->root);
    }

    any |= GM_TIMED("/proc/stat", read_stat(r, out));
    any |= GM_TIMED("/proc/meminfo", read_meminfo(r, out));
    any |= GM_TIMED("/proc/loadavg", read_loadavg(r, out));
    any |= GM_TIMED("/proc/uptime", read_uptime(r, out));
    int64_t now = gm_clock_mono_ms();
    if (!r->static_read || now - r->static_ms >= HOST_STATIC_MS) {
        r->cpuinfo_ok = GM_TIMED("/proc/cpuinfo", read_cpuinfo(r, out, &r->processors));
        memcpy(r->cpu_model, out->cpu_model, sizeof r->cpu_model);
        r->kernel_ok = GM_TIMED("/proc/sys/kernel/osrelease",
                                read_line(r, "sys/kernel/osrelease", r->kernel, sizeof r->kernel));
        if (!r->kernel_ok)
            r->kernel[0] = '\0';
        r->static_read = true;
        r->static_ms = now;
    }
    memcpy(out->cpu_model, r->cpu_model, sizeof out->cpu_model);
    memcpy(out->kernel, r->kernel, sizeof out->kernel);
    processors = r->processors;
    any |= r->cpuinfo_ok || r->kernel_ok;
    /* Without /proc/stat the processor lines of cpuinfo still tell how many CPUs there are. */
    if (!gm_host_has(out, GM_H_CPU_COUNT) && processors > 0)
        gm_host_set(out, GM_H_CPU_COUNT, (double)processors);
    /* The live host's name is the UTS namespace's, as /proc/sys/kernel/hostname shows it:
     * gethostname() reads it in one system call instead of an open, a read and a close. */
    if (!r->real_proc)
        any |= GM_TIMED("/proc/sys/kernel/hostname",
                        read_line(r, "sys/kernel/hostname", out->hostname, sizeof out->hostname));
    if (!any)
        return gm_error_set(err, GM_EIO, "nothing could be read from procfs root '%s'", r->root);
    if (r->real_proc) {
        char name[GM_HOSTNAME_LEN];
        if (GM_TIMED("gethostname", gethostname(name, sizeof name)) == 0) {
            name[sizeof name - 1] = '\0';
            copy_text(out->hostname, sizeof out->hostname, name, strlen(name));
        }
    }
    return GM_OK;
}

/* ---- processes ------------------------------------------------------------------------------ */

/* Resolves uid to a user name, or its number when the passwd database has no entry. */
static void uid_to_user(uid_t uid, char *user, size_t user_len)
{
    char stackbuf[4096];
    char *buf = stackbuf;
    size_t buflen = sizeof stackbuf;
    struct passwd pw, *res = NULL;
    int rc;
    for (;;) {
        rc = getpwuid_r(uid, &pw, buf, buflen, &res);
        if (rc != ERANGE || buflen >= 1024 * 1024)
            break;
        /* An entry bigger than the stack buffer (long gecos, NSS): grow on the heap. */
        char *nbuf = realloc(buf == stackbuf ? NULL : buf, buflen * 4);
        if (!nbuf)
            break;
        buf = nbuf;
        buflen *= 4;
    }
    if (rc == 0 && res && res->pw_name && res->pw_name[0])
        copy_text(user, user_len, res->pw_name, strlen(res->pw_name));
    else
        snprintf(user, user_len, "%lu", (unsigned long)uid);
    if (buf != stackbuf)
        free(buf);
}

/* Finds the real UID (first field of "Uid:") in the text of /proc/<pid>/status. */
/* The first number of field key ("Uid", "PPid") of a /proc/<pid>/status text. */
static bool status_u64(const char *text, size_t len, const char *want, uint64_t *out)
{
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *key, *val;
        size_t key_len;
        if (split_key(p, le, &key, &key_len, &val) && key_is(key, key_len, want))
            return parse_u64(&val, le, out);
        p = le + 1;
    }
    return false;
}

static bool status_uid(const char *text, size_t len, uid_t *uid)
{
    uint64_t v;
    if (!status_u64(text, len, "Uid", &v) || v > (uid_t)-1)
        return false;
    *uid = (uid_t)v;
    return true;
}

int gm_host_parent_pid(const char *root, uint32_t pid, uint32_t *ppid)
{
    char path[PATH_MAX];
    char buf[HOST_STATUS_MAX];
    if (!root || !root[0])
        root = HOST_DEFAULT_ROOT;
    int plen = snprintf(path, sizeof path, "%s/%u/status", root, (unsigned)pid);
    if (plen < 0 || (size_t)plen >= sizeof path)
        return GM_EINVAL;
    ssize_t n = read_small(path, buf, HOST_STATUS_MAX);
    uint64_t v;
    if (n <= 0)
        return GM_ENOENT;
    if (!status_u64(buf, (size_t)n, "PPid", &v) || v > UINT32_MAX)
        return GM_EPARSE;
    *ppid = (uint32_t)v;
    return GM_OK;
}

int gm_host_process_usage(const char *root, uint32_t pid, gm_host_proc_usage *out)
{
    char path[PATH_MAX];
    char buf[HOST_STATUS_MAX];
    memset(out, 0, sizeof *out);
    if (!root || !root[0])
        root = HOST_DEFAULT_ROOT;
    int plen = snprintf(path, sizeof path, "%s/%u/stat", root, (unsigned)pid);
    if (plen < 0 || (size_t)plen >= sizeof path - 8)
        return GM_EINVAL;
    ssize_t n = read_small(path, buf, sizeof buf);
    if (n <= 0)
        return GM_ENOENT;
    /* "pid (comm) state ppid ...": comm may hold spaces and ')', so fields count from the
     * last ')'. utime is field 14, stime 15, starttime 22, rss (pages) 24. */
    const char *end = buf + n, *p = NULL;
    for (const char *q = buf; q < end; q++)
        if (*q == ')')
            p = q + 1;
    if (!p)
        return GM_EPARSE;
    uint64_t field[25] = {0};
    p = skip_blanks(p, end);
    if (p < end)
        out->state = *p;
    while (p < end && !is_blank(*p)) /* state, a letter */
        p++;
    for (int k = 4; k <= 24; k++) {
        const char *before = p;
        if (!parse_u64(&p, end, &field[k])) {
            /* Signed fields (priority, nice) may be negative: skip them as words. */
            p = skip_blanks(before, end);
            if (p < end && *p == '-')
                p++;
            if (!parse_u64(&p, end, &field[k]))
                return GM_EPARSE;
            field[k] = 0;
        }
    }
    long hz = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    out->cpu_s = (double)(field[14] + field[15]) / (double)(hz > 0 ? hz : 100);
    out->start_ticks = field[22];
    out->rss_bytes = field[24] * (uint64_t)(page > 0 ? page : 4096);
    snprintf(path + plen - 4, sizeof path - (size_t)plen + 4, "status");
    n = read_small(path, buf, HOST_STATUS_MAX);
    if (n > 0 && status_uid(buf, (size_t)n, &out->uid))
        out->has_uid = true;
    return GM_OK;
}

int gm_host_describe_process(const char *root, uint32_t pid, char *user, size_t user_len,
                             char *command, size_t command_len)
{
    char path[PATH_MAX];
    char buf[HOST_CMDLINE_MAX];
    struct stat st;
    ssize_t n;
    uid_t uid;
    int plen;
    if (!user || !command || user_len == 0 || command_len == 0)
        return GM_EINVAL;
    user[0] = '\0';
    command[0] = '\0';
    if (!root || !root[0])
        root = HOST_DEFAULT_ROOT;
    plen = snprintf(path, sizeof path, "%s/%u", root, (unsigned)pid);
    if (plen < 0 || (size_t)plen >= sizeof path - 16)
        return GM_EINVAL;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return GM_ENOENT;

    strcpy(path + plen, "/status");
    n = read_small(path, buf, HOST_STATUS_MAX);
    if (n > 0 && status_uid(buf, (size_t)n, &uid))
        uid_to_user(uid, user, user_len);

    /* Only what fits is read: cmdline can be megabytes. copy_text drops a character that the
     * limit cut in half. */
    strcpy(path + plen, "/cmdline");
    n = read_small(path, buf, command_len < sizeof buf ? command_len : sizeof buf);
    if (n > 0) {
        while (n > 0 && buf[n - 1] == '\0')
            n--;
        copy_text(command, command_len, buf, (size_t)n);
    }
    if (!command[0]) {
        /* Kernel threads and zombies have an empty cmdline; ps shows them as [comm]. */
        strcpy(path + plen, "/comm");
        n = read_small(path, buf + 1, sizeof buf - 2);
        if (n > 0) {
            while (n > 0 && (buf[n] == '\n' || buf[n] == '\0'))
                n--;
            if (n > 0) {
                buf[0] = '[';
                buf[n + 1] = ']';
                copy_text(command, command_len, buf, (size_t)n + 2);
            }
        }
    }
    /* A process that vanished between stat() and the reads, or whose details hidepid hides. */
    if (!user[0] && !command[0])
        return GM_ENOENT;
    return GM_OK;
}
