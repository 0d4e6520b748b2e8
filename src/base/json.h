/* json.h - the JSON form of the sample model (jansson), shared by `query --format json`,
 * the REST API and the WebSocket stream. Absent metrics are JSON null, never 0. */
#ifndef GM_JSON_H
#define GM_JSON_H

#include <jansson.h>
#include <stdarg.h>

#include "gpumon.h"

/* Each returns a new reference, NULL only when out of memory. */
json_t *gm_json_gpu(const gm_snapshot *s, const gm_gpu *g); /* with its processes */
json_t *gm_json_host(const gm_host *h);
json_t *gm_json_processes(const gm_snapshot *s); /* array over all GPUs */
json_t *gm_json_snapshot(const gm_snapshot *s);  /* the full model */

/* The building blocks of the inventory documents (`gpumon snapshot`, /stats), shared so that
 * both spell every value the same way. Each returns a new reference, NULL only when out of
 * memory. */

/* A number, integral values as JSON integers (45, not 45.0); null when not finite, which JSON
 * cannot carry. */
json_t *gm_json_number(double v);
/* A fixed-size text field (at most max bytes) as a string, null when empty. Malformed UTF-8
 * (a garbled host or model name) keeps its ASCII and gets U+FFFD for each other byte rather than
 * failing the whole document. */
json_t *gm_json_text(const char *s, size_t max);
/* Text from outside (argv, the environment, /proc, a container's log, a server's answer, the
 * database) as a JSON string: bytes that are not UTF-8 become U+FFFD (gm_utf8_repair), since
 * jansson refuses such a string and one stray byte must not lose a whole document. NULL only
 * when out of memory. gm_json_strn takes n bytes of s (NUL bytes become U+0000). */
json_t *gm_json_str(const char *s);
json_t *gm_json_strn(const char *s, size_t n);
/* Host metric m of s as gm_json_number; null when the host was not read or m is absent. */
json_t *gm_json_host_number(const gm_snapshot *s, gm_host_metric m);
/* PCIe bandwidth in GB/s (gm_pcie_gbps) of g's link generation gen and width width; null when
 * g is lost, either metric is absent, or the generation is unknown to the table. */
json_t *gm_json_pcie_gbps(const gm_gpu *g, gm_metric gen, gm_metric width);
/* The key of P2P capability c in gm_json_p2p's object: "read", "write", "nvlink", "atomics",
 * "pci"; NULL when c is out of range. */
const char *gm_json_p2p_cap_name(gm_p2p_cap c);
/* The P2P matrix: {"gpus": [driver indices of the rows], "read": [[code...]], "write",
 * "nvlink", "atomics", "pci"}, one square matrix of `nvidia-smi topo -p2p` status codes per
 * capability with "X" on the diagonal; rows follow s's GPU order. JSON null when t is NULL or
 * not known. */
json_t *gm_json_p2p(const gm_snapshot *s, const gm_topology *t);

/* ISO 8601 UTC with milliseconds ("2026-11-26T00:42:52.123Z") into buf (>= 32 bytes). */
void gm_json_time(int64_t time_ms, char *buf, size_t len);

/* Compact serialisation with reals at up to 12 significant digits; malloc'd, NUL-terminated,
 * *len (optional) gets its length. NULL when out of memory. Does not steal j. */
char *gm_json_dump(const json_t *j, size_t *len);

/* json_loadb for text from outside (a request body, a file a person names). jansson 2.14 lets a
 * NUL byte right after a number through ("[1\0]" loads as [1]; akheron/jansson#331), and JSON
 * text never holds one, so text with a NUL byte anywhere is refused first: NULL, with err (may
 * be NULL) filled as jansson fills it for a syntax error. */
json_t *gm_json_loadb(const char *text, size_t len, size_t flags, json_error_t *err);

/* The error body every API answer uses, {"error": "<fmt formatted, at most 600 bytes>"}, as
 * malloc'd text (*len its length); NULL when out of memory. */
char *gm_json_error_vtext(size_t *len, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

#endif
