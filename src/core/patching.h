/* patching.h — activation patching (causal tracing): a clean and a corrupted prompt of
 * the same length are run; then one corrupted run per cell of a grid, each with one
 * activation copied from the clean run, through editors at the forward pass's hook
 * points (hook.h); each cell says how much of the clean run's answer that activation
 * brings back. The sites (TransformerLens's names):
 *
 *   resid_pre  the residual stream entering layer l at position p (inp_embd's editor
 *              for layer 0, layer l - 1's l_out after it; layer n_layers: the stream
 *              after the last layer, what the final norm reads); grid (layer, position)
 *   attn_out   layer l's mixer output at p: kqv, every head side by side (what wo reads:
 *              the attention's output is wo of it; a Gated DeltaNet's value heads' too)
 *   mlp_out    what layer l's feed-forward block adds to the stream at p (l_out -
 *              ffn_inp of the clean run, added to the patched run's ffn_inp at l_out)
 *   head       head h of layer l at every position: its slice of kqv; grid (layer, head)
 *   head_q     query head h of layer l at every position: its slice of Qcur (after RoPE,
 *              which turns both runs' alike: patching it is patching the query)
 *   head_k     KV head h: its keys (Kcur, as the cache holds them); grid (layer, KV head)
 *   head_v     KV head h: its values (Vcur)
 *   The last three are an attention layer's: a Gated DeltaNet layer's cells, and a layer
 *   reading another's KV cache's head_k and head_v cells, are NAN.
 *   expert     expert e of layer l at every position: its weighted output as the clean
 *              run had it (0 where the clean run's router did not choose it) in place
 *              of the patched run's own (0 where its router did not), in the routed
 *              experts' sum (ffn_moe_out, before a shared expert is added); grid
 *              (layer, expert). A mixture of experts' only.
 *
 * The metric of a run is taken at the last position: the logit difference LD =
 * logit(answer) - logit(wrong), normalised (LD - LD_corrupt) / (LD_clean - LD_corrupt)
 * (0: the corrupted run's, 1: the clean run's), or the KL divergence of the clean run's
 * next-token distribution from the patched run's (0: the clean run's).
 *
 * A patched run at position p runs positions p..n-1 again over the corrupted run's KV
 * cache (and, on a hybrid model, its recurrent state at p): the positions before p are
 * the corrupted run's. A position's cells run together, one sequence each in one pass
 * (transformer_run_sequences), where the context has room for them (patching_ctx).
 * Runs go from the last position to the first, so the cache before each run's
 * position is always the corrupted run's. Every run is on the batch
 * kernels, so a position's numbers do not depend on how the runs split the prompt
 * (transformer.h): a cell whose patch changes nothing is exactly 0. So the cells of a
 * position before the first where the two prompts differ (resid_pre, attn_out,
 * mlp_out) take the corrupted run's value without a run: up to there both runs read the
 * same tokens, and the clean activation put back would be the corrupted run's own
 * (patching_cell_logits still runs such a cell, and gives those logits).
 *
 * Owns the grid and the logits it returns; the transformer is the caller's (its KV
 * cache is overwritten; the hooks it registers are removed before it returns). No
 * printing. */
#ifndef LLMCHAT_PATCHING_H
#define LLMCHAT_PATCHING_H

#include <signal.h>
#include <stdbool.h>

#include "status.h"
#include "transformer.h"

typedef enum {
    PATCH_RESID_PRE,
    PATCH_ATTN_OUT,
    PATCH_MLP_OUT,
    PATCH_HEAD,
    PATCH_HEAD_Q,
    PATCH_HEAD_K,
    PATCH_HEAD_V,
    PATCH_EXPERT,
    PATCH_SITE_COUNT
} patch_site;

typedef enum { PATCH_LOGIT_DIFF, PATCH_KL } patch_metric;

typedef struct {
    patch_site site;
    patch_metric metric;
    int answer, wrong;           /* PATCH_LOGIT_DIFF: the two tokens' ids; -1: the clean
                                    run's most probable next token (answer), the
                                    corrupted run's (wrong) */
    int layer_first, layer_last; /* the grid's rows (from 0); resid_pre's may reach
                                    n_layers (the stream after the last layer) */
    const volatile sig_atomic_t *stop; /* not NULL: *stop != 0 ends the runs early
                                          (Ctrl-C): patching_run fails, LLM_ERR_STOPPED */
} patch_spec;

typedef struct {
    int rows, cols;         /* layer_last - layer_first + 1; patch_site_cols: positions,
                               heads or experts */
    float *grid;            /* (rows, cols): the metric of each cell's run (see the top);
                               NAN where layer l has no head h */
    double clean, corrupt;  /* the two runs' LD; for KL: 0 and the corrupted run's KL */
    int answer, wrong;      /* PATCH_LOGIT_DIFF: the tokens measured (the spec's, or the
                               runs' top tokens it left to them) */
    float *clean_logits;    /* (vocab) at the last position */
    float *corrupt_logits;  /* (vocab) */
    int runs;               /* patched runs made (cells run; not the cells before the
                               prompts' first difference) */
    int passes;             /* forward passes they took: a position's cells run together
                               are one (patching_ctx) */
    long positions_run;     /* positions they ran (the clean and corrupted runs not
                               counted) */
} patch_result;

/* "resid_pre", "attn_out", "mlp_out", "head", "head_q", "head_k", "head_v", "expert";
 * NULL outside the enum. */
const char *patch_site_name(patch_site s);
bool patch_site_parse(const char *name, patch_site *out);
/* Whether the site's grid runs across positions (resid_pre, attn_out, mlp_out), else
 * across heads or experts (each cell patches every position). */
bool patch_site_positions(patch_site s);
/* What a column of the site's grid is: "position", "head" or "expert". */
const char *patch_site_column(patch_site s);
/* The grid's columns for site s on a model of config c and prompts of n tokens: n, the
 * heads (model_heads_max; head_k, head_v: n_kv_heads) or the experts. */
int patch_site_cols(patch_site s, const model_config *c, int n);

/* The context a transformer of m for prompts of n tokens needs so that patching runs a
 * position's cells together, one sequence each in one pass over the weights
 * (transformer_run_sequences; on a hybrid model each from the recurrent state at the
 * position): n and a batch chunk's places more, as far as the model's context allows.
 * With a context of n each cell is its own run. */
int patching_ctx(const model *m, int n);

/* Runs the clean and corrupted prompts (n ids each, the same length, n <= the
 * transformer's context) and every cell's patched run on t, into *out (freed with
 * patch_result_free, also after a failure). Fails (LLM_ERR_ARG) on layers the model
 * lacks, token ids outside the vocabulary, n < 1, the expert site on a model without
 * experts, a site whose clean activations would take more than 4 GiB (fewer layers
 * then), and for the logit difference when
 * the answer and the wrong token are one token or the two runs' LD are equal (nothing
 * to normalise by); as transformer_run fails. */
llm_status patching_run(transformer *t, const int *clean, const int *corrupt, int n,
                        const patch_spec *s, patch_result *out, llm_err *err);
void patch_result_free(patch_result *r);

/* The same a cell at a time, for a front end that draws the grid as it fills (and
 * stops between cells): patching_begin checks the spec and runs the two prompts (the
 * grid all NAN, the baselines set; fails as patching_run does); each patching_step
 * runs the next cell in the run order (heads row by row; positions from the last, the
 * layers of a position together) until patching_finished. The spec's stop is not
 * read. The patching borrows t until patching_free. */
typedef struct patching patching;
llm_status patching_begin(transformer *t, const int *clean, const int *corrupt, int n,
                          const patch_spec *s, patching **out, llm_err *err);
llm_status patching_step(patching *p, llm_err *err);
bool patching_finished(const patching *p);
int patching_cells_done(const patching *p);
int patching_cell_count(const patching *p);
/* Whether cell (row, col) has run (its grid value is its metric, or NAN for a head the
 * layer lacks). */
bool patching_cell_ran(const patching *p, int row, int col);
const patch_result *patching_result(const patching *p); /* valid until patching_free */
const patch_spec *patching_spec(const patching *p);
/* Runs cell (row, col) again and writes its patched run's next-token logits (vocab)
 * into logits (what Enter on a cell shows); the grid and its counts are unchanged.
 * Fails (LLM_ERR_ARG) on a cell outside the grid or a head its layer lacks. */
llm_status patching_cell_logits(patching *p, int row, int col, float *logits, llm_err *err);
void patching_free(patching *p); /* NULL does nothing */

/* The metric of logits (vocab) against the clean and corrupted runs of r, as the grid
 * holds it. */
double patching_metric(const patch_spec *s, const patch_result *r, const float *logits,
                       int vocab);

#endif
