/* output_file.h — how every tool writes a file: whole or not at all, and never over
 * something it must not replace.
 *
 * Before anything is written, the place is checked (output_file_check): a file this
 * run reads (input_file.h: the same device and inode, whatever the name), a directory,
 * a block device or a socket is refused with a sentence that says which. A FIFO or a
 * character device (/dev/null, a pipe another process reads) is written directly, as
 * the stream it is (a FIFO nobody reads is refused rather than waited on). The bytes
 * then go to a temporary file beside the target (NAME.tmp-XXXXXX, created exclusively,
 * with the target's permissions when it exists), which is synced and renamed over the
 * target only when all of it was written: a failure, a full disk or a crash never
 * leaves half a file where a good one was, and a reader that has the old file open or
 * mapped keeps reading the old bytes. A symbolic link is followed: its target is
 * replaced, the link stays. */
#ifndef LLMCHAT_BASE_OUTPUT_FILE_H
#define LLMCHAT_BASE_OUTPUT_FILE_H

#include <stdbool.h>
#include <stdio.h>

#include "status.h"

typedef struct output_file output_file;

/* Whether path may be written as `what` ("the trace", "the model"): LLM_OK when it does
 * not exist, is a regular file this run does not read, or a FIFO or character device;
 * else LLM_ERR_ARG with why. */
llm_status output_file_check(const char *path, const char *what, llm_err *err);

/* output_file_check, and also refuses path when it is the file `input` names (one the
 * run reads later; NULL: none). */
llm_status output_file_check_not(const char *path, const char *what, const char *input,
                                 llm_err *err);

/* Checks path (output_file_check) and opens a temporary file beside it for writing;
 * *out receives the handle, output_file_stream gives its stream. mode: the permissions
 * of a new file (OUTPUT_FILE_MODE, or OUTPUT_FILE_PRIVATE for what only its owner
 * should read), less the umask; a file replaced keeps its own. */
enum { OUTPUT_FILE_MODE = 0666, OUTPUT_FILE_PRIVATE = 0600 };
llm_status output_file_open(const char *path, const char *what, int mode, output_file **out,
                            llm_err *err);
FILE *output_file_stream(const output_file *o);
/* The temporary file's name (what a reader watching the run can open), and the name
 * it will have (the target: path, or the file a link at path leads to). */
const char *output_file_temp_name(const output_file *o);
const char *output_file_target(const output_file *o);

/* Flushes, syncs and closes the temporary file, renames it over the target and syncs
 * the directory (so that the rename survives a power cut); on any
 * failure removes it instead (the target is as it was) and says why. A target the run
 * has read since the open (a chat loaded from that name) is not replaced: the new file
 * stays under its temporary name, which the message gives. Frees o; NULL does
 * nothing. */
llm_status output_file_commit(output_file *o, llm_err *err);

/* Removes the temporary file: the target is as it was. Frees o; NULL does nothing. */
void output_file_abandon(output_file *o);

/* Writes the file's bytes to f; path is the final name, for messages. */
typedef llm_status (*output_writer)(FILE *f, const char *path, const void *ctx, llm_err *err);

/* The whole file at once: output_file_open, fn, then commit (or abandon when fn
 * fails). */
llm_status output_file_write(const char *path, const char *what, int mode, output_writer fn,
                             const void *ctx, llm_err *err);

#endif
