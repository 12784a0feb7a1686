/* load.h — what a session runs on, opened from files: the model, its tokenizer, its
 * chat template, and the saved chat --resume goes on with (load.c). The steps of
 * session_open (session.h) that read files; each prints why it failed (this is the
 * program layer) and returns 0 or the exit status. */
#ifndef LLMCHAT_LOAD_H
#define LLMCHAT_LOAD_H

#include <stdbool.h>
#include <stddef.h>

#include "model.h"
#include "options.h"
#include "template.h"
#include "tokenizer.h"

/* Sets *field to a copy of s that o owns (options_keep); false, saying so, when
 * memory runs out. */
bool load_set_owned(app_options *o, const char **field, const char *s);

/* --resume: finds the newest saved chat and takes from it what the command line did
 * not give: the model (unless MODEL was named), the tokenizer (unless -z), the context
 * (unless -c), the step limit (unless -n), the template (unless --template), and the
 * sampler settings. Sets o->resume_path, whose dialog the front end reads. The paths
 * are o's (options_keep). */
int load_resume(app_options *o);

/* Opens the model at o->model_path (the progress line on a terminal; --verbose says
 * what loading did) and fits --ctx to it. */
int load_model(app_options *o, model **out);

/* The tokenizer for m: -z when given, else the one embedded in a GGUF model, else
 * tokenizer.bin or tok<vocab>.bin beside the model, then in the data directory's
 * models/; the first whose vocabulary matches. */
int load_tokenizer(const app_options *o, const model *m, tokenizer **out);

/* --draft: the draft model at o->draft_path, opened as the model is (--weights,
 * --panels), which must have the vocabulary of the model's tokenizer tok: as many
 * tokens and, where the draft's GGUF file has a vocabulary of its own, the same pieces. */
int load_draft(const app_options *o, const tokenizer *tok, model **out);

/* The chat template: --template, else the one the model's tokenizer.chat_template
 * renders, else llama2. note receives what was chosen and why (for the first notice,
 * the REPL's banner and --verbose). */
int load_template(const app_options *o, const model *m, const tokenizer *tok,
                  chat_template **out, char *note, size_t size);

/* --verbose, at the end: resident memory now and at its peak, beside the model file's
 * size (nothing where there is no /proc). */
void load_describe_memory(const model *m);

#endif
