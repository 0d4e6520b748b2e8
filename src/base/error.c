/* error.c - the error table behind gm_strerror, gm_err_name and the gm_error helper. */
#include "base/error.h"

#include <stdarg.h>
#include <stdio.h>

const char *gm_strerror(int code)
{
    switch (code) {
    case GM_OK:
        return "success";
#define GM__ERRNO_CASE(name, msg) \
    case GM_##name:               \
        return msg;
        GM_ERRNO_MAP(GM__ERRNO_CASE)
#undef GM__ERRNO_CASE
    default:
        return "unknown error";
    }
}

const char *gm_err_name(int code)
{
    switch (code) {
    case GM_OK:
        return "GM_OK";
#define GM__ERRNO_NAME(name, msg) \
    case GM_##name:               \
        return "GM_" #name;
        GM_ERRNO_MAP(GM__ERRNO_NAME)
#undef GM__ERRNO_NAME
    default:
        return "GM_UNKNOWN";
    }
}

int gm_error_set(gm_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        err->code = code;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}
