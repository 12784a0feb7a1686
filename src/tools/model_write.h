/* model_write.h — writing an open model as a GGUF file or a llama2.c checkpoint: what
 * llmchat-convert does.
 *
 * GGUF: version 3, the llama architecture's keys (shape, RoPE base, epsilon), the
 * tokenizer as tokenizer.ggml.* (pieces spelled with "▁", scores, token types,
 * BOS/EOS/UNK ids), an optional tokenizer.chat_template, and the tensors under their
 * standard names in Q8_0 (blocks of 32 with a half-precision scale; tensors whose rows
 * are not a multiple of 32 stay F32, as llama.cpp's quantizer leaves them, so that
 * llama.cpp can read the file) or F32. Norms are F32.
 * llama2.c: version 2 (int8, one fp32 scale per 32 values of the flattened tensor) for
 * Q8_0, version 1 for F32; the RoPE base and epsilon must be llama2.c's (10000, 1e-5),
 * which the format cannot store. The tokenizer goes to a separate tokenizer.bin.
 *
 * The weights are read back from the model's tensors row by row (quant_dequantize_row),
 * so a model loaded in fp32 is quantized once, here. Each writer writes into an open
 * output (output_file.h: a temporary file the caller commits, so that several outputs
 * can be committed together or abandoned together) and fails, writing nothing, when the
 * model cannot be stored in that format. Owns nothing. */
#ifndef LLMCHAT_MODEL_WRITE_H
#define LLMCHAT_MODEL_WRITE_H

#include "model.h"
#include "output_file.h"
#include "status.h"
#include "tokenizer.h"

typedef enum { MODEL_WRITE_Q8_0 = 0, MODEL_WRITE_F32 } model_write_type;

/* Where a writer reports its progress: fn(user, done, total) over the matrices' values,
 * after every row. */
typedef struct {
    model_progress_fn fn;
    void *user;
} model_write_progress;

/* Writes m (with tokenizer tok; chat_template, a Jinja string, may be NULL) as a GGUF
 * file into out. progress may be NULL. */
llm_status model_write_gguf(const model *m, const tokenizer *tok, const char *chat_template,
                            model_write_type type, output_file *out,
                            const model_write_progress *progress, llm_err *err);

/* Writes m as a llama2.c checkpoint into out (v2 for Q8_0, v1 for F32). */
llm_status model_write_llama2c(const model *m, model_write_type type, output_file *out,
                               const model_write_progress *progress, llm_err *err);

/* Writes tok as a llama2.c tokenizer.bin into out. */
llm_status model_write_tokenizer_bin(const tokenizer *tok, output_file *out, llm_err *err);

#endif
