/* parse.h - the one grammar for what people type: numbers, durations and booleans read from a
 * flag, an environment variable, a query parameter or a config file are accepted or refused the
 * same way everywhere. Each returns GM_OK or GM_EINVAL; the caller names the flag or parameter
 * in its message (gm_parse_*_help says what is accepted). Nothing around the value is allowed:
 * no spaces, no sign on whole numbers, no hex, no exponent, no "inf" or "nan". */
#ifndef GM_PARSE_H
#define GM_PARSE_H

#include <stdbool.h>
#include <stdint.h>

#include "gpumon.h"

/* Decimal digits only, in [min, max]. */
int gm_parse_uint(const char *s, unsigned long long min, unsigned long long max,
                  unsigned long long *out);

/* A decimal number: [-]digits[.digits] ("5", "0.5", "-3"), finite, in [min, max]. */
int gm_parse_number(const char *s, double min, double max, double *out);

/* true/false, 1/0, yes/no, on/off, any case. */
int gm_parse_bool(const char *s, bool *out);

/* A duration, to the millisecond, in [min_ms, max_ms]: a plain number is seconds ("90", "0.5");
 * else components in the order d, h, m, s, ms, each at most once, the last one may have a
 * fraction ("1h30m", "2.5s", "500ms", "1d12h"). Units in any case. */
int gm_parse_duration_ms(const char *s, int64_t min_ms, int64_t max_ms, int64_t *out_ms);

/* A size in bytes, in [min, max]: a number with an optional unit, powers of 1024 as Docker
 * reads --shm-size ("16GB", "16g", "512MiB", "1.5G", "65536"): b, k/kb/kib, m/mb/mib,
 * g/gb/gib, t/tb/tib, any case. A fraction is rounded down to whole bytes. */
int gm_parse_size_bytes(const char *s, int64_t min, int64_t max, int64_t *out);

/* A GPU list as -i/--id and a job's "gpus" take it: indices, UUIDs or PCI bus ids separated by
 * commas, spaces around each trimmed, into items[0..*n-1] (at most GM_MAX_GPUS). GM_EINVAL,
 * with the message in err, for an empty list or item, an item of GM_UUID_LEN bytes or more or
 * with a control character, or more than GM_MAX_GPUS items. */
int gm_parse_gpu_list(const char *list, char items[][GM_UUID_LEN], size_t *n, gm_error *err);

/* What gm_parse_duration_ms accepts, for messages: "a duration such as 90, 0.5, 500ms, 15m,
 * 1h30m or 1d". */
const char *gm_parse_duration_help(void);

#endif
