/* mxfp4_ggml.c — llama.cpp's own MXFP4 dequantization, written out for llmchat's tests to
 * hold its decoder to (not built or run by make check: it needs the prebuilt llama.cpp
 * 0.4.0 libraries, which the suite does not).
 *
 *   mxfp4_ggml blocks                 every e2m1 code, in the low and in the high nibble,
 *                                     under a range of E8M0 exponents (0, 1, 2, 127, 254,
 *                                     255, ...): one line a block, "e qs v0 .. v31" in hex
 *                                     (v: the fp32 bits ggml gives), after # comments
 *   mxfp4_ggml tensor FILE TENSOR     a golden/gguf_dequant.jsonl line for an MXFP4 tensor
 *                                     of a GGUF file, read and decoded by ggml
 *
 * Both decode through ggml_get_type_traits(GGML_TYPE_MXFP4)->to_float (ggml-quants.c's
 * dequantize_row_mxfp4). How to build and run it (llama.cpp 0.4.0 as node-llama-cpp
 * 3.21.1 ships it: its source under /work/npm/llama.cpp-0.4.0-src, its libraries in the
 * @node-llama-cpp/linux-x64 package):
 *
 *   L=/work/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
 *   cc -O2 -o /tmp/mxfp4_ggml tests/ref/mxfp4_ggml.c \
 *       -I/work/npm/llama.cpp-0.4.0-src/ggml/include -L$L -lggml-base -Wl,-rpath,$L
 *   /tmp/mxfp4_ggml blocks > tests/data/golden/mxfp4_blocks.txt
 *   /tmp/mxfp4_ggml tensor tests/data/gguf-types/rand256-mxfp4.gguf blk.0.attn_q.weight
 *       (the line appended to tests/data/golden/gguf_dequant.jsonl, with the file named
 *        gguf-types/rand256-mxfp4.gguf)
 *
 * tests/test_gguf.c compares llmchat's dequant with both, bit for bit. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "gguf.h"

enum { QK = 32, BYTES = 17 };

static const struct ggml_type_traits *mxfp4(void)
{
    const struct ggml_type_traits *t = ggml_get_type_traits(GGML_TYPE_MXFP4);
    if (!t || !t->to_float || t->blck_size != QK || t->type_size != BYTES) {
        fprintf(stderr, "mxfp4_ggml: this ggml has no MXFP4 of 32 values in 17 bytes\n");
        exit(1);
    }
    return t;
}

/* Every code in both nibbles (low nibble j: code j, high nibble: code 15 - j) for each
 * exponent, decoded by ggml. */
static int dump_blocks(void)
{
    static const int exps[] = {0,   1,   2,   3,   64,  100, 117, 120, 126, 127,
                               128, 129, 160, 200, 250, 252, 253, 254, 255};
    const struct ggml_type_traits *t = mxfp4();
    printf("# MXFP4 blocks and their values as llama.cpp 0.4.0's ggml decodes them\n"
           "# (ggml_get_type_traits(GGML_TYPE_MXFP4)->to_float), written by\n"
           "# tests/ref/mxfp4_ggml.c blocks. A line: e (the E8M0 byte), the 16 bytes of\n"
           "# codes, then the 32 values' fp32 bits, all in hex.\n");
    for (size_t k = 0; k < sizeof exps / sizeof exps[0]; k++) {
        uint8_t block[BYTES];
        block[0] = (uint8_t)exps[k];
        for (int j = 0; j < 16; j++)
            block[1 + j] = (uint8_t)(j | (15 - j) << 4);
        float y[QK];
        t->to_float(block, y, QK);
        printf("%02x ", block[0]);
        for (int j = 0; j < 16; j++)
            printf("%02x", block[1 + j]);
        for (int i = 0; i < QK; i++) {
            uint32_t bits;
            memcpy(&bits, &y[i], 4);
            printf(" %08" PRIx32, bits);
        }
        printf("\n");
    }
    return 0;
}

/* The golden/gguf_dequant.jsonl line of one tensor: its first 16 values, the sums of its
 * first 4 rows, its sum and sum of squares (doubles over the fp32 values). */
static int dump_tensor(const char *path, const char *name)
{
    struct ggml_context *ctx = NULL;
    struct gguf_init_params params = {.no_alloc = false, .ctx = &ctx};
    struct gguf_context *g = gguf_init_from_file(path, params);
    if (!g) {
        fprintf(stderr, "mxfp4_ggml: cannot read %s\n", path);
        return 1;
    }
    struct ggml_tensor *t = ggml_get_tensor(ctx, name);
    if (!t || t->type != GGML_TYPE_MXFP4) {
        fprintf(stderr, "mxfp4_ggml: %s: no MXFP4 tensor %s\n", path, name);
        return 1;
    }
    int64_t n = ggml_nelements(t), cols = t->ne[0], rows = n / cols;
    float *y = malloc(sizeof(float) * (size_t)n);
    mxfp4()->to_float(t->data, y, n);
    printf("{\"file\": \"%s\", \"tensor\": \"%s\", \"type\": \"MXFP4\", \"shape\": [", path, name);
    for (int d = 0; d < ggml_n_dims(t); d++)
        printf("%s%" PRId64, d ? ", " : "", t->ne[d]);
    printf("], \"first16\": [");
    for (int i = 0; i < 16 && i < n; i++)
        printf("%s%.17g", i ? ", " : "", (double)y[i]);
    printf("], \"row_sums\": [");
    for (int64_t r = 0; r < rows && r < 4; r++) {
        double s = 0;
        for (int64_t c = 0; c < cols; c++)
            s += y[r * cols + c];
        printf("%s%.17g", r ? ", " : "", s);
    }
    double sum = 0, sumsq = 0;
    for (int64_t i = 0; i < n; i++) {
        sum += y[i];
        sumsq += (double)y[i] * y[i];
    }
    printf("], \"sum\": %.17g, \"sumsq\": %.17g}\n", sum, sumsq);
    free(y);
    gguf_free(g);
    ggml_free(ctx);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "blocks"))
        return dump_blocks();
    if (argc == 4 && !strcmp(argv[1], "tensor"))
        return dump_tensor(argv[2], argv[3]);
    fprintf(stderr, "usage: mxfp4_ggml blocks | mxfp4_ggml tensor FILE.gguf TENSOR\n");
    return 2;
}
