/* sysfs.c - device files read under GPU_MONITOR_SYSFS_ROOT. */
#include "collect/sysfs.h"

#include <ctype.h>
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
