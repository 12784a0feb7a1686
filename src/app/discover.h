/* discover.h — which model opens (discover.c): the one named on the command line or
 * in the environment or config file, a fetched model's name, else the bundled demo
 * model; and where the data and fetched models live. */
#ifndef LLMCHAT_DISCOVER_H
#define LLMCHAT_DISCOVER_H

#include <stddef.h>

#include "model.h"
#include "options.h"

/* The bundled demo model and its tokenizer, in DATADIR/models. */
#define DISCOVER_BUNDLED_MODEL "chat260K.bin"
#define DISCOVER_BUNDLED_TOKENIZER "tok512.bin"
/* The data directory (models.tsv, models/): $LLMCHAT_DATADIR; else, for a program
 * run from its build tree (not installed), the source tree's data/; else the
 * installed one. */
const char *discover_data_dir(void);
/* llmchat-fetch's default directory, $XDG_DATA_HOME/llmchat/models (else under
 * ~/.local/share), in buf; NULL when neither variable is usable. */
const char *discover_fetch_dir(char *buf, size_t size);
/* Settles o->model_path: the one options_parse found (a file, or a models.tsv name fetched
 * into the fetch directory), else the bundled model. buf holds the path when it is
 * made here. Returns 0, or 1 with a message naming the command that gets a model. */
int discover_model(app_options *o, char *buf, size_t size);
/* Which model is open and why, in a sentence for the TUI and the REPL banner. */
void discover_model_note(const app_options *o, const model *m, char *buf, size_t size);

#endif
