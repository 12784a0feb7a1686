/* trace_read.h — reads a JSON Lines trace (docs/trace-format.md) back into step
 * records (or a patching run's grid): for --replay, --compare and --view.
 *
 * Reads version 1 (a header line, then records, or a patching run's one line) and the
 * headerless traces written before versioning (version 0). A line that is not JSON, is
 * cut short or lacks a record's (or the patch line's) fields is skipped and reported
 * with its line number; the rest is read.
 * Only an unreadable file, a newer format version or no memory fail as a whole.
 * The reader owns everything it returns; nothing is printed. */
#ifndef LLMCHAT_TRACE_READ_H
#define LLMCHAT_TRACE_READ_H

#include <stdbool.h>
#include <stddef.h>

#include "model.h"
#include "sampler.h"
#include "status.h"
#include "step.h"

typedef struct {
    int version;            /* 0: no header line */
    const char *mode;       /* "chat", "generate", ... or NULL */
    const char *model_path; /* as written, or NULL */
    const char *model_name;
    const char *weights;    /* "q8_0" / "f32" or NULL */
    int panels;             /* the model's GGUF Q8_0 read from decode panels: 1, 0, or -1
                               when the header does not say (older traces, llama2.c files) */
    int k4_panels;          /* its Q4_K read from decode panels (--panels on): 1, 0, or -1
                               when the header does not say (older traces, no Q4_K) */
    const char *kv_cache;
    const char *kernels;
    const char *template_name; /* the chat template ("llama2", ...), or NULL */
    bool has_config;        /* config holds the header's shape (or the one the records imply) */
    model_config config;    /* dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len */
    const char *arch;       /* the model's architecture ("gemma2"), or NULL */
    const int *windows;     /* (config.n_layers) each layer's sliding window (0: none), or
                               NULL when the header lists none */
    const int *recurrent;   /* (config.n_layers) 1 for a Gated DeltaNet layer (a hybrid
                               model's), or NULL when the header lists none */
    int attn_heads;         /* an attention layer's heads (config.n_heads is the most a
                               layer's records hold: a hybrid's may be more) */
    int dn_heads;           /* a Gated DeltaNet layer's value heads (0: none) */
    bool has_sampler;
    sampler_config sampler; /* the settings at the start */
    int steps, ctx;
    bool attn, lens;        /* the run asked for attention / the lens */
    bool tensors;           /* the run asked for the steps' summaries (--trace-tensors) */
    int tensor_first, tensor_last; /* of these layers */
    int n_vocab;            /* pieces in the header's vocabulary (0: none) */
    bool has_batch;         /* the records say which kernels ran them ("batch"); traces
                               before it do not, and their records' batch is false */
} trace_header;

/* A patching run (-m patch --trace: the trace's "patch" line; patching.h says what the
 * grid holds). */
typedef struct {
    int site;                 /* patch_site */
    int metric;               /* patch_metric */
    int layer_first, layer_last; /* the grid's rows */
    int n;                    /* tokens of each prompt */
    int *ids, *corrupt_ids;   /* (n) each: the clean and the corrupted prompt */
    int answer, wrong;        /* the logit difference's tokens; -1 with the KL metric */
    int rows, cols;           /* layer_last - layer_first + 1; positions (n) or heads */
    float *grid;              /* (rows, cols); NAN where the trace has null */
    double clean, corrupt;    /* the two runs' baselines */
    int runs;                 /* patched runs made (0 when the line does not say) */
    long positions_run;       /* positions they ran (0 when the line does not say) */
} trace_patch;

typedef struct trace_reader trace_reader;

/* Reads a trace from buf[0..len) (need not be NUL-terminated). */
llm_status trace_read_buffer(const char *buf, size_t len, trace_reader **out, llm_err *err);
/* Reads the trace file at path. */
llm_status trace_read_file(const char *path, trace_reader **out, llm_err *err);
void trace_reader_free(trace_reader *r); /* NULL does nothing */

const trace_header *trace_reader_header(const trace_reader *r);
/* Records in file order (a rewound run writes a position again: see trace-format.md);
 * a record's control vectors are those of the last "steer" before it, by file order, or
 * by position when the trace is read by position. */
int trace_reader_count(const trace_reader *r);
const step_record *trace_reader_record(const trace_reader *r, int i);
/* The line record i was read from (1-based). */
int trace_reader_line(const trace_reader *r, int i);
/* The piece of token id: from the header's vocabulary, else from a record whose input
 * it was; NULL when the trace does not say. */
const char *trace_reader_piece(const trace_reader *r, int id);

/* The trace's patching run (-m patch --trace), or NULL when it has none. Valid until
 * trace_reader_free. */
const trace_patch *trace_reader_patch(const trace_reader *r);

/* Lines skipped or partly read, each "line N: why" (at most the first 100 are kept;
 * trace_reader_problem_count counts them all). */
int trace_reader_problem_count(const trace_reader *r);
int trace_reader_problems_kept(const trace_reader *r);
const char *trace_reader_problem(const trace_reader *r, int i);

/* Lines that gave no record (not JSON, cut short, a record's fields missing, a
 * second header): each may have held a position. */
int trace_reader_lines_skipped(const trace_reader *r);
/* Records read without their "sampler" or "steer" (dropped as malformed): a replay
 * cannot run them as they ran. */
int trace_reader_records_partial(const trace_reader *r);

/* LLM_OK when r holds step records or a patching run; otherwise LLM_ERR_FORMAT and one
 * line for the user: path is empty, is not an llmchat trace (the first problem, when no
 * line was a header or a record) or holds neither (with the first problem when a line
 * was skipped). */
llm_status trace_reader_usable(const trace_reader *r, const char *path, llm_err *err);

/* How the sequence was put together (trace-format.md, "Order, rewinds and
 * regeneration"). */
typedef struct {
    int n;              /* positions: one past the last position of the sequence */
    int held;           /* of which have a record */
    int replaced;       /* records a rewind replaced (or forgot): not in the sequence */
    int copies;         /* lines repeating the record in force at their position byte for
                           byte: ignored */
    bool by_position;   /* the records were not in the order llmchat writes them, and no
                           position held two different ones: taken by position */
    char disorder[160]; /* when by_position, the first place out of order ("line 5:
                           position 17 follows position 0") */
    bool cut_short;     /* the last record chose a token for a position that has none,
                           inside the header's context: the end of the run is missing */
} trace_sequence_info;

/* The records of the sequence as it stood at the end of the run: out[p] for p < info->n
 * (an array the caller frees; its records are borrowed from r, which must outlive it),
 * NULL for a position the trace has no record of. Records in llmchat's order are read
 * by the rewind rule (a record for p replaces the one before it for p and forgets those
 * after p; a line repeating the record in force is a copy); records out of that order
 * are taken by position. Fails with LLM_ERR_FORMAT, naming the two lines, when records
 * out of order hold one position twice with different content, or LLM_ERR_NOMEM. */
llm_status trace_reader_sequence(const trace_reader *r, const step_record ***out,
                                 trace_sequence_info *info, llm_err *err);

/* The same sequence for --view: out[p] for p < the returned count (freed by the caller),
 * or -1 on no memory. Where trace_reader_sequence refuses, the rewind rule over the file
 * order as it stands. */
int trace_reader_final(const trace_reader *r, const step_record ***out);

#endif
