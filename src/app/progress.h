/* progress.h — the progress line the programs print on standard error while a big
 * model's weights are converted at load (a model_progress_fn; see model.h), or a model
 * is written (llmchat-convert). Shared by llmchat and llmchat-convert; a front end: it
 * prints. */
#ifndef LLMCHAT_CLI_PROGRESS_H
#define LLMCHAT_CLI_PROGRESS_H

#include <stdint.h>

/* Sets the program name the line starts with ("llmchat"). */
void progress_program(const char *name);

/* model_options.progress: "\rPROGRAM: loading FILE:  42%" on stderr, updated when the
 * percentage changes, a newline at the end; user is the file name. */
void progress_show(void *user, uint64_t done, uint64_t total);

/* The same line with another verb: "\rPROGRAM: VERB FILE:  42%". */
void progress_show_verb(const char *verb, const char *file, uint64_t done, uint64_t total);

#endif
