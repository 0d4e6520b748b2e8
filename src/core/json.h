/* json.h - the JSON form of the sample model (jansson), shared by `query --format json`,
 * the REST API and the WebSocket stream. Absent metrics are JSON null, never 0. */
#ifndef GM_JSON_H
#define GM_JSON_H

#include <jansson.h>

#include "gpumon.h"

/* Each returns a new reference, NULL only when out of memory. */
json_t *gm_json_gpu(const gm_snapshot *s, const gm_gpu *g); /* with its processes */
json_t *gm_json_host(const gm_host *h);
json_t *gm_json_processes(const gm_snapshot *s); /* array over all GPUs */
json_t *gm_json_snapshot(const gm_snapshot *s);  /* the full model */

/* ISO 8601 UTC with milliseconds ("2026-11-26T00:42:52.123Z") into buf (>= 32 bytes). */
void gm_json_time(int64_t time_ms, char *buf, size_t len);

/* Compact serialisation with reals at up to 12 significant digits; malloc'd, NUL-terminated,
 * *len (optional) gets its length. NULL when out of memory. Does not steal j. */
char *gm_json_dump(const json_t *j, size_t *len);

#endif
