/* nvtop.h - the parser of nvtop's JSON snapshot (`nvtop -s`), for the nvtop provider. */
#ifndef GM_NVTOP_H
#define GM_NVTOP_H

#include "gpumon.h"

#include <stddef.h>

/* Parses the text `nvtop -s` prints (an array with one object per GPU, every reading a string
 * with its unit: "1410MHz", "45C", "30%", "250W", bytes as digits; null when nvtop could not
 * read it) into out's GPUs (numbered from 0, vendor guessed from the name) and, with
 * want_procs, their processes. GM_EPARSE when the text is not such an array. */
int gm_nvtop_parse(const char *text, size_t len, gm_snapshot *out, bool want_procs, gm_error *err);

#endif
