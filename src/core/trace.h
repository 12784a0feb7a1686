/* trace.h — writes step records as JSON Lines (one object per finished position),
 * after a first line that describes the run. docs/trace-format.md is the schema:
 *
 * {"llmchat_trace":1, "raw_bytes":"\\udcXX", "mode":..., "model":{path, shape, weights},
 *  "template":...,
 *  "kv_cache":...,
 *  "kernels":..., "template":..., "options":{sampler settings, steps, ctx}, "attn":bool,
 *  "lens":bool, "tensors":[first layer, last layer] or null, "vocab":[piece, ...]}
 * {"pos":int, "token":int, "piece":str, "phase":"prompt"|"gen"|"forced", "next":int,
 *  "next_prob":float, "next_rank":int, "top":[[id, logit, prob], ...],
 *  "sampler":{... "p_final":[...], "kept":[...], "cut":[...]} or null, "ms":float}
 * plus "attn":[[[w...] per head] per layer] when attention is on and the record has
 * it, "lens":[{"top":[[id, prob], ...], "next_rank":int, "next_prob":float} per
 * layer] when the run asked for the lens and the record has it, and "tensors":[{"name",
 * "layer", "shape", "min", "max", "mean", "l2", "masked", "first", "hist"} per step of
 * the pass] when the run asked for them (--trace-tensors).
 * A served model's run has no "model" and no "vocab"; its header has "server":{"url",
 * "api", "model", "ctx", "n_vocab"} instead, and its records "top_pieces":[piece, ...]
 * (the pieces of "top"'s ids, as the server gave them).
 * A patching run (-m patch) writes, after the header, one line instead of records:
 * {"patch":{"site", "metric", "layers":[first, last], "ids", "corrupt_ids", "answer",
 *  "wrong" (ids, or null with the KL metric), "clean", "corrupt", "rows", "cols",
 *  "grid":[[cell, ...] per row] (null for a NAN cell), "runs", "positions_run"}}.
 * A byte of a string that is not valid UTF-8 is written as the lone surrogate \udcXX,
 * as "raw_bytes" says (json.h); traces without that member wrote it \u00XX, and the
 * reader reads them so. The trace owns its FILE; it borrows the tokenizer and model config for pieces and
 * shapes. */
#ifndef LLMCHAT_TRACE_H
#define LLMCHAT_TRACE_H

#include <stdbool.h>
#include <stdio.h>

#include "model.h"
#include "patching.h"
#include "status.h"
#include "step.h"
#include "tokenizer.h"

enum { TRACE_FORMAT_VERSION = 1 };

typedef struct trace_writer trace_writer;

/* What the first line says about the run. Every field may be left 0 / NULL. */
typedef struct {
    const char *mode;              /* "generate", "chat", "tui", "replay", "patch" */
    const model *m;                /* path, shape and weight type */
    const char *kernels;           /* the kernels in use (kernels_isa_name) */
    const char *kv_cache;          /* "q8_0" or "f32" */
    const sampler_config *sampler; /* the settings at the start (records carry changes) */
    int steps;                     /* most new tokens per reply, 0 = until EOS */
    int ctx;                       /* context length in use */
    bool lens;                     /* records carry "lens" (--trace-lens) */
    bool tensors;                  /* records carry "tensors" (--trace-tensors) ... */
    int tensor_first, tensor_last; /* ... of these layers */
    const char *template_name;     /* the chat template of a chat ("llama2", "chatml") */
    const char *server;            /* a served model's run (--server): its URL ... */
    const char *server_api;        /* ... API ("llama-server") ... */
    const char *server_model;      /* ... and model; the header's "server" object */
    int server_ctx, server_vocab;  /* its context and vocabulary size (0: not said) */
} trace_run;

/* Opens a trace to be written at path (output_file.h: refused when path is a file this
 * run reads, a directory or a FIFO; the records go to a temporary file beside it). */
llm_status trace_open(const char *path, const tokenizer *tok, const model_config *cfg,
                      bool with_attention, trace_writer **out, llm_err *err);
/* Sets what the first line says; call before the first trace_write (the line is
 * written with the first record, or at trace_close when there is none). */
void trace_describe(trace_writer *t, const trace_run *run);
/* Where pieces come from when the trace has no tokenizer (a served model's: the
 * server's pieces of the ids it gave): fn(user, id) is id's text, or NULL when not
 * known. Records then carry "top_pieces" beside "top" too, since the header has no
 * vocabulary. */
typedef const char *(*trace_piece_fn)(void *user, int id);
void trace_set_pieces(trace_writer *t, trace_piece_fn fn, void *user);
/* Writes one record as one line. Returns LLM_ERR_IO once writing fails. */
llm_status trace_write(trace_writer *t, const step_record *rec);
/* Writes a patching run as the patch line (see the top): s and r as patching_run took
 * and gave them, clean and corrupt its prompts (n ids each). Returns LLM_ERR_IO once
 * writing fails. */
llm_status trace_write_patch(trace_writer *t, const patch_spec *s, const patch_result *r,
                             const int *clean, const int *corrupt, int n);
/* The records written so far to the temporary file now (a reply ended; the front end
 * waits for the user): what a crash leaves holds them. trace_write does so itself at
 * least once a second. NULL does nothing. */
void trace_flush(trace_writer *t);
/* Flushes the trace and renames it into place; after a write error removes it instead
 * (the file at path is as it was) and says why. NULL does nothing. */
llm_status trace_close(trace_writer *t, llm_err *err);

/* Removes the trace's temporary file and frees t: the file at path is as it was (a run
 * that failed leaves no trace). NULL does nothing. */
void trace_abandon(trace_writer *t);
/* Whether a record (or a patch line) was written: a failed run with none leaves no
 * trace (trace_abandon), so that a file of that name stays as it was. */
bool trace_has_records(const trace_writer *t);

/* engine_observer adapter: user is a trace_writer*. (The type is not called "trace":
 * curses declares a function of that name.) */
void trace_observe(void *user, const step_record *rec);

#endif
