/* fuzz_model.c — libFuzzer target: the llama2.c model loader (header, shape, size,
 * weights' finiteness) on arbitrary bytes, through model_open on an in-memory file.
 * A file that opens is opened again with fp32 weights, and when it is small it runs
 * two positions of the forward pass, so that odd but valid shapes (one head, grouped
 * KV heads, a tiny vocabulary) reach the kernels too. */
#include "fuzz.h"

#include <string.h>

#include "model.h"
#include "transformer.h"

/* Runs tokens 0 and 1 at positions 0 and 1 (when the context holds them). */
static void run_two_positions(const model *m)
{
    transformer *t;
    llm_err err;
    int ctx = m->config.seq_len < 2 ? m->config.seq_len : 2;
    if (transformer_new(m, ctx, &t, &err) != LLM_OK)
        return;
    for (int pos = 0; pos < ctx; pos++) {
        const float *logits = transformer_forward(t, pos % m->config.vocab_size, pos, NULL);
        FUZZ_CHECK(logits != NULL);
    }
    transformer_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_memfile(data, size, path, sizeof path);
    if (fd < 0)
        return 0;
    const tensor_type types[] = {TENSOR_Q8_0, TENSOR_F32};
    for (int i = 0; i < 2; i++) {
        model_options mo;
        model_options_default(&mo);
        mo.weights = types[i];
        model *m;
        llm_err err;
        llm_status st = model_open(path, &mo, &m, &err);
        if (st != LLM_OK) {
            FUZZ_CHECK(m == NULL);
            FUZZ_CHECK(strlen(err.text) > 0);
            break;
        }
        FUZZ_CHECK(m->config.head_size * m->config.n_heads == m->config.dim);
        if (m->n_params < 200000 && m->config.seq_len * (long long)m->config.kv_dim < 1000000)
            run_two_positions(m);
        model_close(m);
    }
    close(fd);
    return 0;
}
