/* log.c - logfmt lines on stderr for the daemon, and the bridge that brings libwebsockets'
 * warnings and errors into the same format. */
#include "server/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static atomic_int min_level = GM_LOG_INFO;
static pthread_mutex_t limit_lock = PTHREAD_MUTEX_INITIALIZER;

void gm_log_set_level(gm_log_level level)
{
    atomic_store(&min_level, (int)level);
}

bool gm_log_enabled(gm_log_level level)
{
    return (int)level >= atomic_load(&min_level);
}

const char *gm_log_quote(const char *s, char *buf, size_t len)
{
    size_t o = 0;
    if (len < 3) {
        if (len)
            buf[0] = '\0';
        return buf;
    }
    buf[o++] = '"';
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        char esc[8];
        size_t n;
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            n = 2;
        } else if (*p == '\n') {
            memcpy(esc, "\\n", 2);
            n = 2;
        } else if (*p < 0x20 || *p == 0x7f) {
            n = (size_t)snprintf(esc, sizeof esc, "\\x%02x", *p);
        } else {
            esc[0] = (char)*p;
            n = 1;
        }
        if (o + n + 2 > len)
            break;
        memcpy(buf + o, esc, n);
        o += n;
    }
    buf[o++] = '"';
    buf[o] = '\0';
    return buf;
}

static void vlog(gm_log_level level, const char *msg, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
static void vlog(gm_log_level level, const char *msg, const char *fmt, va_list ap)
{
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    char line[2048], qmsg[768];
    int n = snprintf(line, sizeof line, "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03dZ level=%s msg=%s",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     (int)(tv.tv_usec / 1000), gm_log_level_name(level),
                     gm_log_quote(msg, qmsg, sizeof qmsg));
    if (n < 0)
        return;
    if ((size_t)n < sizeof line - 2 && fmt && *fmt) {
        line[n++] = ' ';
        int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
        n += m > 0 ? m : -1; /* nothing formatted: drop the separator again */
    }
    if ((size_t)n > sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    /* One write per line so lines from the sampler and the loop never interleave. */
    fwrite(line, 1, (size_t)n, stderr);
}

void gm_log(gm_log_level level, const char *msg, const char *fmt, ...)
{
    if (!gm_log_enabled(level))
        return;
    va_list ap;
    va_start(ap, fmt);
    vlog(level, msg, fmt, ap);
    va_end(ap);
}

bool gm_log_limit_pass(gm_log_limit *l, unsigned burst, int64_t interval_ms, int64_t now_ms,
                       uint64_t *held)
{
    bool pass;
    pthread_mutex_lock(&limit_lock);
    if (!l->window_end_ms || now_ms >= l->window_end_ms) {
        l->window_end_ms = now_ms + interval_ms;
        l->lines = 0;
    }
    pass = l->lines < burst;
    if (pass) {
        l->lines++;
        *held = l->held;
        l->held = 0;
    } else {
        l->held++;
        *held = 0;
    }
    pthread_mutex_unlock(&limit_lock);
    return pass;
}
