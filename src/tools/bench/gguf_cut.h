/* bench/gguf_cut.h — a GGUF model cut to its first layers: the draft of
 * --agreeing-draft, made from the model file itself so that its layers are the model's
 * byte for byte whatever type llama-quantize chose for each (Q4_K_M gives a layer more
 * bits or fewer by its place among all the layers). Part of the benchmark. */
#ifndef LLMCHAT_BENCH_GGUF_CUT_H
#define LLMCHAT_BENCH_GGUF_CUT_H

#include <stddef.h>

/* Writes to `out` the GGUF file `in` with only the tensors of layers below `layers`
 * (blk.N.* with N < layers) and every tensor outside the layers, its metadata the same
 * bytes but for ARCH.block_count, set to `layers`. Written under a temporary name and
 * renamed when complete; reused when `out` is there and newer than `in`. Returns 0, or
 * -1 with a message in err. */
int gguf_cut_layers(const char *in, const char *out, int layers, char *err, size_t err_size);

#endif
