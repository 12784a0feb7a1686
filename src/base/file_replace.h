/* file_replace.h — writing a file whole or not at all: the bytes go to a temporary file
 * beside it, which is synced and then renamed over it, so a crash or a full disk never
 * leaves half a file where a good one was. */
#ifndef LLMCHAT_BASE_FILE_REPLACE_H
#define LLMCHAT_BASE_FILE_REPLACE_H

#include <stdio.h>

#include "status.h"

/* Writes the file's bytes to f; path is the final name, for messages. */
typedef llm_status (*file_writer)(FILE *f, const char *path, const void *ctx, llm_err *err);

/* Writes path through fn (with ctx); on any failure the temporary file is removed and
 * path is as it was. */
llm_status file_replace(const char *path, file_writer fn, const void *ctx, llm_err *err);

#endif
