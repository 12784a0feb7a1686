/* step_weight.h — the weight behind a step of the forward pass, for the compute view.
 *
 * For a step that multiplies by a weight matrix (Qcur ← attn_q, Kcur ← attn_k, Vcur ←
 * attn_v, kqv_out ← attn_output, ffn_gate, ffn_up, ffn_out ← ffn_down, result_output ←
 * output or the tied token_embd): which tensor it is (its GGUF name, the type in the
 * file and the type llmchat computes with), the block of one row (one output element)
 * that one group of the step's input meets, decoded (block_decode.h) beside the
 * file's own block when the loader converted it, that group of the input quantized as
 * llmchat quantizes activations (Q8_0: int8 with one fp32 scale per 32 values, the
 * weight's group for llama2.c's int8 files; fp32 weights take the input as it is), its
 * part of the row's dot product and the whole row's, both in the plain-C kernels'
 * arithmetic, and the value the pass computed for that element.
 *
 * Reads the model's tensors and a capture of the position (capture.h); owns nothing,
 * no printing. */
#ifndef LLMCHAT_STEP_WEIGHT_H
#define LLMCHAT_STEP_WEIGHT_H

#include <stdbool.h>
#include <stdint.h>

#include "block_decode.h"
#include "capture.h"
#include "hook.h"
#include "model.h"
#include "status.h"

typedef struct {
    hook_point step;        /* the step, and the step whose values the weight multiplies */
    hook_point input;
    int layer;              /* -1 for result_output */
    char tensor[64];        /* its name as GGUF has it: "blk.2.attn_q.weight" */
    char file_type[48];     /* the type in the file: "Q4_K"; "F32 (llama2.c)" */
    char computed[64];      /* how llmchat computes with it: "Q4_K in place",
                               "Q8_0, converted at load" */
    bool converted;         /* the loader made it another type than the file's */
    int rows, cols;         /* the matrix (out, in) */
    int row;                /* the output element shown */
    int group, groups;      /* the input group shown, of the row's groups */
    int group_len;          /* values in a group: 32 (llama2.c int8: its group size) */
    block_decoded block;    /* the computed tensor's block that holds the group */
    int block_no;           /* its index within the row */
    int value0;             /* the group's first value within the block */
    bool file_block_ok;     /* file_block holds the file's block (tensors the loader
                               converted or repacked, of a GGUF file whose type
                               block_decode takes) */
    block_decoded file_block;
    int file_value0;        /* the group's first value within the file's block */
    bool quantized;         /* the input is quantized (else fp32 weights) */
    float x[BLOCK_VALUES_MAX];   /* the group of the input as the pass handed it */
    int8_t xq[BLOCK_VALUES_MAX]; /* quantized: the int8 values */
    float xs;               /* their scale */
    float xsum;             /* xs times their sum (what the types with mins read) */
    int n_sums;             /* integer sums of weight quants times xq (block_group_sums) */
    int32_t sums[2];
    float partial;          /* the group's part of the row's dot product */
    float row_total;        /* the whole row's, the groups' parts added in order */
    float step_value;       /* the step's value at `row`, as the pass computed it */
    const char *note;       /* why step_value is not row_total beyond summation order
                               ("Qcur is this after RoPE"), or NULL */
} step_weight;

/* True for the steps that multiply by a weight matrix. */
bool step_weight_has(hook_point p);

/* What the weight behind step (at layer; -1 for result_output) does to output element
 * row, shown at input group `group` (both clamped into range), from the capture of the
 * position (which must hold the step and its input) into out. Fails when the step has
 * no weight or the capture lacks the steps. */
llm_status step_weight_explain(const model *m, const tensor_capture *cap, hook_point step,
                               int layer, int row, int group, step_weight *out, llm_err *err);

#endif
