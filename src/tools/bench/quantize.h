/* bench/quantize.h — making the benchmark's file in another GGUF type (--quant) with
 * llama.cpp's llama-quantize, from the Q8_0 GGUF file the benchmark writes. Part of the
 * benchmark. */
#ifndef LLMCHAT_BENCH_QUANTIZE_H
#define LLMCHAT_BENCH_QUANTIZE_H

#include <stddef.h>

/* The llama-quantize to run: `path` when not NULL, else $LLMCHAT_ANCHOR_LLAMA_QUANTIZE,
 * else the llama-quantize beside `llama_bench` (when not NULL). NULL, with the reason
 * in why, when there is none or it is not executable; the result may be in a static
 * buffer. */
const char *quantize_find(const char *path, const char *llama_bench, char *why, size_t why_size);

/* True for the type names --quant takes: q4_0, q4_1, q5_0, q5_1, q4_k_m, q4_k_s, q5_k_m,
 * q5_k_s, q6_k (lower case, as llama-quantize's names are). */
int quantize_type_ok(const char *type);

/* Writes `out` from the GGUF file `in` as `type` (llama-quantize --allow-requantize in
 * out TYPE threads), unless out exists already. Returns 0, or -1 with a message in why. */
int quantize_file(const char *llama_quantize, const char *in, const char *out, const char *type,
                  int threads, char *why, size_t why_size);

#endif
