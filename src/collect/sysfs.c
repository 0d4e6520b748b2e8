/* sysfs.c - device files read under GPU_MONITOR_SYSFS_ROOT. */
#include "collect/sysfs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

const char *gm_sysfs_root(void)
{
    const char *r = getenv("GPU_MONITOR_SYSFS_ROOT");
    return r && *r ? r : "/";
}

bool gm_sysfs_path(char *buf, size_t cap, const char *path)
{
    const char *root = gm_sysfs_root();
    size_t rl = strlen(root);
    /* "/" + "/sys" and "/tmp/x/" + "/sys" must not double the slash. */
    while (rl > 0 && root[rl - 1] == '/')
        rl--;
    int n = snprintf(buf, cap, "%.*s%s", (int)rl, root, path);
    return n >= 0 && (size_t)n < cap;
}

int gm_sysfs_read(const char *path, char *buf, size_t cap)
{
    if (cap == 0)
        return GM_EINVAL;
    buf[0] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return GM_ENOENT;
    size_t used = 0;
    while (used + 1 < cap) {
        ssize_t r = read(fd, buf + used, cap - 1 - used);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            close(fd);
            buf[0] = '\0';
            /* Some attributes exist but answer EOPNOTSUPP or EINVAL on a board that lacks them. */
            return GM_ENOENT;
        }
        if (r == 0)
            break;
        used += (size_t)r;
    }
    close(fd);
    buf[used] = '\0';
    while (used > 0 && isspace((unsigned char)buf[used - 1]))
        buf[--used] = '\0';
    return GM_OK;
}

static bool read_in(const char *dir, const char *name, char *buf, size_t cap)
{
    char path[1024];
    int n = snprintf(path, sizeof path, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= sizeof path)
        return false;
    return gm_sysfs_read(path, buf, cap) == GM_OK;
}

bool gm_sysfs_read_u64(const char *dir, const char *name, uint64_t *out)
{
    char buf[64];
    if (!read_in(dir, name, buf, sizeof buf))
        return false;
    const char *s = buf;
    while (isspace((unsigned char)*s))
        s++;
    if (!isdigit((unsigned char)*s))
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s)
        return false;
    while (isspace((unsigned char)*end))
        end++;
    if (*end)
        return false;
    *out = v;
    return true;
}

bool gm_sysfs_read_str(const char *dir, const char *name, char *buf, size_t cap)
{
    return read_in(dir, name, buf, cap) && buf[0];
}

bool gm_sysfs_parse_dpm(const char *text, unsigned *max_mhz, unsigned *cur_mhz)
{
    *max_mhz = 0;
    *cur_mhz = 0;
    bool any = false;
    const char *line = text;
    while (line && *line) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        /* "N: 1234Mhz" with an optional " *"; the level number and colon come first. */
        const char *p = line, *end = line + len;
        while (p < end && isdigit((unsigned char)*p))
            p++;
        if (p > line && p < end && *p == ':') {
            p++;
            while (p < end && *p == ' ')
                p++;
            unsigned long mhz = 0;
            const char *d = p;
            while (p < end && isdigit((unsigned char)*p) && mhz < 1000000)
                mhz = mhz * 10 + (unsigned long)(*p++ - '0');
            /* A level of 0 MHz is no clock: skipped, so max is 0 only when nothing parsed. */
            if (p > d && p + 3 <= end && strncasecmp(p, "mhz", 3) == 0 && mhz > 0 &&
                mhz < 1000000) {
                any = true;
                if (mhz > *max_mhz)
                    *max_mhz = (unsigned)mhz;
                if (memchr(p, '*', (size_t)(end - p)))
                    *cur_mhz = (unsigned)mhz;
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    return any;
}

unsigned gm_sysfs_pcie_gen(const char *text)
{
    char *end;
    double gts = strtod(text, &end);
    if (end == text || !(gts > 0))
        return 0;
    static const double rates[] = {2.5, 5, 8, 16, 32, 64};
    for (unsigned i = 0; i < sizeof rates / sizeof *rates; i++)
        if (gts > rates[i] * 0.9 && gts < rates[i] * 1.1)
            return i + 1;
    return 0;
}

/* A size in fdinfo ("8192 KiB", "3 MiB", or bytes without a unit) in bytes; false when it is
 * not a number or does not fit. */
static bool fdinfo_bytes(const char *v, uint64_t *out)
{
    if (!isdigit((unsigned char)*v))
        return false;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno)
        return false;
    while (*end == ' ' || *end == '\t')
        end++;
    uint64_t mul = strncmp(end, "KiB", 3) == 0   ? 1024
                   : strncmp(end, "MiB", 3) == 0 ? GM_BYTES_PER_MIB
                   : strncmp(end, "GiB", 3) == 0 ? GM_BYTES_PER_MIB * 1024
                                                 : 1;
    if (n > UINT64_MAX / mul)
        return false;
    *out = (uint64_t)n * mul;
    return true;
}

static bool fdinfo_u64(const char *v, uint64_t *out)
{
    if (!isdigit((unsigned char)*v))
        return false;
    errno = 0;
    unsigned long long n = strtoull(v, NULL, 10);
    if (errno)
        return false;
    *out = n;
    return true;
}

void gm_sysfs_parse_fdinfo(const char *text, gm_drm_fdinfo *c)
{
    memset(c, 0, sizeof *c);
    bool memory_vram = false;
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        const char *colon = memchr(line, ':', len);
        char key[64], v[128];
        if (colon && (size_t)(colon - line) < sizeof key) {
            size_t kl = (size_t)(colon - line);
            memcpy(key, line, kl);
            key[kl] = '\0';
            const char *val = colon + 1;
            while (val < line + len && (*val == ' ' || *val == '\t'))
                val++;
            size_t vl = (size_t)(line + len - val);
            if (vl >= sizeof v)
                vl = sizeof v - 1;
            memcpy(v, val, vl);
            v[vl] = '\0';
            uint64_t n;
            if (strcmp(key, "drm-driver") == 0)
                c->amdgpu = strcmp(v, "amdgpu") == 0;
            else if (strcmp(key, "drm-pdev") == 0)
                snprintf(c->pdev, sizeof c->pdev, "%s", v);
            else if (strcmp(key, "drm-client-id") == 0)
                c->have_id = fdinfo_u64(v, &c->id);
            /* The VRAM the client holds: drm-memory-vram, or on kernels that give only the
             * common keys, drm-resident-vram. */
            else if (strcmp(key, "drm-memory-vram") == 0 && fdinfo_bytes(v, &n)) {
                c->vram_bytes = n;
                c->have_vram = memory_vram = true;
            } else if (strcmp(key, "drm-resident-vram") == 0 && !memory_vram &&
                       fdinfo_bytes(v, &n)) {
                c->vram_bytes = n;
                c->have_vram = true;
            } else if ((strcmp(key, "drm-engine-gfx") == 0 ||
                        strcmp(key, "drm-engine-compute") == 0) &&
                       fdinfo_u64(v, &n)) {
                c->busy_ns = n > UINT64_MAX - c->busy_ns ? UINT64_MAX : c->busy_ns + n;
                c->have_busy = true;
                if (key[11] == 'g' && n > 0) /* "drm-engine-gfx" */
                    c->gfx = true;
            }
        }
        line = nl ? nl + 1 : NULL;
    }
}

bool gm_sysfs_amdgpu_bound(void)
{
    char drm[512];
    if (!gm_sysfs_path(drm, sizeof drm, "/sys/class/drm"))
        return false;
    DIR *d = opendir(drm);
    if (!d)
        return false;
    bool found = false;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        if (strncmp(e->d_name, "card", 4) != 0 || strchr(e->d_name, '-'))
            continue;
        char dir[800], uevent[1024];
        snprintf(dir, sizeof dir, "%s/%s/device", drm, e->d_name);
        found = gm_sysfs_read_str(dir, "uevent", uevent, sizeof uevent) &&
                strstr(uevent, "DRIVER=amdgpu\n");
    }
    closedir(d);
    return found;
}
