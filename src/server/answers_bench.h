/* answers_bench.h - the session worker's answers to /api/benchmarks and /api/images (worker.h's
 * GM_JOB_BENCH_LIST, BENCH_GET, BENCH_COMPARE, IMAGES): each fills the job's status and body.
 * Worker thread only. */
#ifndef GM_SERVER_ANSWERS_BENCH_H
#define GM_SERVER_ANSWERS_BENCH_H

#include "server/worker.h"

/* GET /api/benchmarks -> 200: what `gpumon bench` stored, newest first. */
void gm_answer_bench_list(gm_worker *m, gm_worker_job *j);
/* GET /api/benchmarks/{id} -> 200 (the document, or its HTML report), 404. */
void gm_answer_bench_get(gm_worker *m, gm_worker_job *j);
/* GET /api/benchmarks/compare?ids= -> 200, 400, 404. */
void gm_answer_bench_compare(gm_worker *m, gm_worker_job *j);
/* GET /api/images -> 200, 502 (the engine failed), 503 (no engine). */
void gm_answer_images(gm_worker *m, gm_worker_job *j);

#endif
