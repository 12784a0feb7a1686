/* vector_files.h — where control vectors live: /vector make writes a bare NAME to
 * $XDG_DATA_HOME/llmchat/vectors/NAME.gguf (~/.local/share/llmchat/vectors by default),
 * and /vector load and --control-vector find a bare name there when it is not a file in
 * the current directory. A word with a '/' is a path and is used as it is.
 *
 * Paths only: never prints; creates the directory only when asked to (make). */
#ifndef LLMCHAT_VECTOR_FILES_H
#define LLMCHAT_VECTOR_FILES_H

#include <stdbool.h>
#include <stddef.h>

#include "status.h"

/* The vectors directory ($XDG_DATA_HOME/llmchat/vectors) into buf; NULL when neither
 * XDG_DATA_HOME nor HOME is usable. */
const char *vector_files_dir(char *buf, size_t size);

/* Where /vector make writes arg: a path (arg has a '/') as given, with ".gguf" added
 * when missing; a bare name in the vectors directory, which is created. The vector's
 * name (the base name without ".gguf") into name. */
llm_status vector_files_make_path(const char *arg, char *path, size_t psize, char *name,
                                  size_t nsize, llm_err *err);

/* The file arg names for reading: arg itself when it exists or has a '/', else the
 * vectors directory's NAME (NAME.gguf, or NAME when it ends in ".gguf") when that
 * exists, else arg (whose reading then fails, saying so). Returns whether it is the
 * vectors directory's. */
bool vector_files_find(const char *arg, char *path, size_t size);

#endif
