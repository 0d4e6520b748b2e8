/* answers_sessions.h - the session worker's answers to /api/sessions (worker.h's GM_JOB_CREATE,
 * STOP, LIST, GET, DELETE, EXPORT): each fills the job's status and body. Worker thread only. */
#ifndef GM_SERVER_ANSWERS_SESSIONS_H
#define GM_SERVER_ANSWERS_SESSIONS_H

#include "server/worker.h"

/* POST /api/sessions -> 201 (the new session), 409 (too many running), 503. */
void gm_answer_session_create(gm_worker *m, gm_worker_job *j);
/* POST /api/sessions/{id}/stop -> 200 (the stopped session), 404, 409 (not running here). */
void gm_answer_session_stop(gm_worker *m, gm_worker_job *j);
/* GET /api/sessions -> 200: this daemon's sessions and the stored ones, newest first. */
void gm_answer_session_list(gm_worker *m, gm_worker_job *j);
/* GET /api/sessions/{id} -> 200 (with its timeline when asked), 404, 413 (timeline too large). */
void gm_answer_session_get(gm_worker *m, gm_worker_job *j);
/* DELETE /api/sessions/{id} -> 204, 404, 409 (being recorded by another process). */
void gm_answer_session_delete(gm_worker *m, gm_worker_job *j);
/* GET /api/sessions/{id}/export -> 200 (a CSV or JSON file), 400, 404, 413. */
void gm_answer_session_export(gm_worker *m, gm_worker_job *j);

#endif
