/* trace.h — writes step records as JSON Lines (one object per finished position).
 *
 * {"pos":int, "token":int, "piece":str, "phase":"prompt"|"gen"|"forced", "next":int,
 *  "next_prob":float, "next_rank":int, "top":[[id, logit, prob], ...],
 *  "sampler":{...} or null, "ms":float}
 * plus "attn":[[[w...] per head] per layer] when attention is on and the record has it.
 * The trace owns its FILE; it borrows the tokenizer and model config for pieces and
 * shapes. */
#ifndef LLMCHAT_TRACE_H
#define LLMCHAT_TRACE_H

#include <stdbool.h>
#include <stdio.h>

#include "model.h"
#include "status.h"
#include "step.h"
#include "tokenizer.h"

typedef struct trace_writer trace_writer;

llm_status trace_open(const char *path, const tokenizer *tok, const model_config *cfg,
                      bool with_attention, trace_writer **out, llm_err *err);
/* Writes one record as one line. Returns LLM_ERR_IO once writing fails. */
llm_status trace_write(trace_writer *t, const step_record *rec);
llm_status trace_close(trace_writer *t, llm_err *err); /* flushes; NULL does nothing */

/* Appends s as a JSON string literal (with quotes) to f. */
void trace_json_string(FILE *f, const char *s);

/* engine_observer adapter: user is a trace_writer*. (The type is not called "trace":
 * curses declares a function of that name.) */
void trace_observe(void *user, const step_record *rec);

#endif
