/* json_read.h - the sample model read back from its JSON form (base/json.h's gm_json_snapshot,
 * which a daemon serves at GET /api/gpus), so that a client shows a daemon's GPUs with the same
 * code that shows GPUs read here. What the JSON does not carry stays absent, never zero. */
#ifndef GM_JSON_READ_H
#define GM_JSON_READ_H

#include <jansson.h>

#include "gpumon.h"

/* Fills s (from gm_snapshot_new; reset first) from doc, a gm_json_snapshot document. GM_EPARSE
 * with a message when doc is not such a document (not an object, "gpus" not an array, a GPU
 * that is not an object or lacks its index). Values out of a field's range are left absent. */
int gm_json_read_snapshot(const json_t *doc, gm_snapshot *s, gm_error *err);

#endif
