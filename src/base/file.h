/* file.h - the one way gpumon writes an output file (-o, --output, --trace, -f, --port-file),
 * written to be safe when gpumon runs as root:
 *
 * - A path that is a FIFO or a character device (/dev/null, /dev/full, a terminal) is opened
 *   and written directly; it is never replaced. /dev/stdout, /dev/stderr, /dev/fd/N and
 *   /proc/self/fd/N write to that descriptor of this process (its offset and O_APPEND kept).
 * - Symbolic links are followed as cp(1) follows them: the final target gets the rules above
 *   and below; a link itself is never replaced. A dangling link is refused (writing through
 *   it would create a file wherever it points).
 * - A regular file, or a path that does not exist yet, is written to a temporary file with a
 *   random name created O_CREAT|O_EXCL|O_NOFOLLOW beside the final target, synced, and
 *   renamed over it: a reader sees the old contents or the new, never a half. A replaced file
 *   keeps its permission bits (and, for root, its owner).
 * - A directory, a block device or a socket is refused.
 * - With GM_FILE_STREAM (an output written continuously: smi -f with a loop, bench --trace)
 *   the same target is instead opened where it is, O_TRUNC|O_NOFOLLOW, and written through
 *   line by line, so that a reader (tail -f) sees it grow; nothing is renamed, and what was
 *   written stays even when the command fails or is interrupted.
 * - Every write, the flush, fsync and close are checked: a full disk (ENOSPC, /dev/full) is an
 *   error naming the path and the cause, and the temporary file is removed. */
#ifndef GM_FILE_H
#define GM_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "gpumon.h"

typedef struct gm_file gm_file;

/* Which file a commit wrote, so that it can be removed later only if it is still that one. */
typedef struct gm_file_id {
    bool regular; /* a regular file was written (false: a FIFO, a device: never removed) */
    dev_t dev;
    ino_t ino;
    char path[4096]; /* the final target, symbolic links resolved */
} gm_file_id;

/* Flags of gm_file_open_output. */
enum {
    GM_FILE_REPLACE = 0,     /* one-shot: a regular file is replaced whole at the commit */
    GM_FILE_STREAM = 1 << 0, /* continuous: written in place as it comes, line-buffered */
};

/* Opens path for writing by the rules above. A FIFO blocks here until it has a reader, as a
 * shell redirection would. GM_EINVAL (a directory, a block device, a socket, a dangling link),
 * GM_EIO (with errno's text), GM_ENOMEM; the message names path. */
int gm_file_open_output(const char *path, unsigned flags, gm_file **out, gm_error *err);

/* The stream to write to. Write errors are remembered and reported by gm_file_commit. */
FILE *gm_file_stream(gm_file *f);

/* Whether the output goes through a temporary file renamed into place (a regular file or a
 * new one, without GM_FILE_STREAM), as opposed to being written directly. */
bool gm_file_replaces(const gm_file *f);

/* Flushes, syncs, closes and (for a regular file) renames into place; frees f. id, when not
 * NULL, says which file was written. GM_EIO with "cannot write PATH: cause" when any write,
 * the flush, fsync, close or rename failed (the target then keeps its old contents, unless it
 * was streamed: then it holds what could be written). */
int gm_file_commit(gm_file *f, gm_file_id *id, gm_error *err);

/* Closes and frees f without committing: a temporary file is removed, the target untouched
 * (a streamed one keeps what was written, a FIFO or device got it already). NULL is a no-op. */
void gm_file_abort(gm_file *f);

/* Writes len bytes of data to path in one go (open, write, commit). */
int gm_file_write(const char *path, const void *data, size_t len, gm_file_id *id, gm_error *err);

/* The one way gpumon reads a whole input file (a snapshot, a task config, prompts, a result to
 * import): into *out (malloc'd, NUL-terminated; *len bytes before the NUL), at most max bytes,
 * so /dev/zero or a runaway file is refused rather than read into memory. Errors name the path:
 * GM_ENOENT, GM_EPERM or GM_EIO "cannot read PATH: why"; GM_EPARSE "PATH: larger than 16 MiB,
 * not a WHAT" (what: "task config"); GM_ENOMEM. */
int gm_file_read_all(const char *path, size_t max, const char *what, char **out, size_t *len,
                     gm_error *err);

/* Removes the file id names, only if it is still the regular file written then (same device and
 * inode): never a device, a FIFO, or a file put there since. GM_OK when removed, GM_ENOENT
 * when nothing is there, GM_ESTATE when something else is. */
int gm_file_remove_if_same(const gm_file_id *id);

#endif
