/* test_gguf.c — the GGUF reader and writer, the ggml type table and the dequantizers:
 * the real files in tests/data parse to what they hold; every tensor with a line in
 * golden/gguf_dequant.jsonl (llama.cpp's own dequantization) decodes to the same
 * values; written files read back; every value type and nested arrays parse; hostile
 * files (gguf_bad.h, truncations at every length, random byte damage, absurd counts)
 * are refused with a message, never read out of bounds. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "dequant.h"
#include "ggml_type.h"
#include "gguf.h"
#include "gguf_bad.h"
#include "jsonl.h"
#include "testutil.h"

/* ---- helpers ---- */

static gguf *parse_ok(const void *buf, size_t size, const char *name)
{
    gguf *g = NULL;
    llm_err err = {{0}};
    llm_status s = gguf_parse(buf, size, name, &g, &err);
    ck_assert_msg(s == LLM_OK, "%s", err.text);
    ck_assert_ptr_nonnull(g);
    return g;
}

/* Parses buf expecting LLM_ERR_FORMAT with a message naming the file and holding each
 * fragment (NULL-terminated list). */
static void parse_fails(const void *buf, size_t size, const char *const *says)
{
    gguf *g = (gguf *)1;
    llm_err err = {{0}};
    llm_status s = gguf_parse(buf, size, "bad.gguf", &g, &err);
    ck_assert_msg(s == LLM_ERR_FORMAT, "status %s (%s)", llm_status_name(s), err.text);
    ck_assert_ptr_null(g);
    ck_assert_msg(strstr(err.text, "bad.gguf") == err.text, "message does not start with the file: %s",
                  err.text);
    for (int i = 0; says && says[i]; i++)
        ck_assert_msg(strstr(err.text, says[i]) != NULL, "message lacks \"%s\": %s", says[i], err.text);
}

/* A little builder for hand-made files. */
static void b_u32(bad_buf *b, uint32_t v) { bad_put_u32(b, v); }
static void b_u64(bad_buf *b, uint64_t v) { bad_put_u64(b, v); }
static void b_str(bad_buf *b, const char *s)
{
    bad_put_u64(b, strlen(s));
    bad_put(b, s, strlen(s));
}
static void b_header(bad_buf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    bad_put(b, "GGUF", 4);
    b_u32(b, version);
    b_u64(b, n_tensors);
    b_u64(b, n_kv);
}

/* ---- real files ---- */

START_TEST(test_stories_f32)
{
    size_t size;
    unsigned char *buf = read_whole_file(data_path("stories260K.gguf"), &size);
    gguf *g = parse_ok(buf, size, "stories260K.gguf");
    ck_assert_uint_eq(gguf_version(g), 3);
    ck_assert_uint_eq(gguf_alignment(g), 32);
    ck_assert_uint_eq(gguf_data_offset(g), STORIES_DATA);
    ck_assert_uint_eq(gguf_kv_count(g), 19);
    ck_assert_uint_eq(gguf_tensor_count(g), 48);

    ck_assert_str_eq(gguf_get_string(g, "general.architecture", NULL), "llama");
    uint64_t v;
    ck_assert(gguf_get_uint(g, "llama.embedding_length", &v) && v == 64);
    ck_assert(gguf_get_uint(g, "llama.block_count", &v) && v == 5);
    ck_assert(gguf_get_uint(g, "llama.attention.head_count_kv", &v) && v == 4);
    /* padding_token_id is uint32 0xFFFFFFFF in this file */
    ck_assert(gguf_get_uint(g, "tokenizer.ggml.padding_token_id", &v) && v == 0xFFFFFFFFu);
    double eps;
    ck_assert(gguf_get_float(g, "llama.attention.layer_norm_rms_epsilon", &eps));
    ck_assert_float_eq((float)eps, 1e-5f);
    ck_assert(!gguf_get_uint(g, "general.architecture", &v)); /* a string */
    ck_assert(!gguf_get_uint(g, "no.such.key", &v));
    ck_assert_int_eq(gguf_find_key(g, "no.such.key"), -1);
    ck_assert_str_eq(gguf_kv_key(g, 0), "tokenizer.ggml.tokens");
    ck_assert_int_eq(gguf_kv_type(g, 0), GGUF_TYPE_ARRAY);

    gguf_array a;
    ck_assert(gguf_get_array(g, "tokenizer.ggml.tokens", &a));
    ck_assert_int_eq(a.type, GGUF_TYPE_STRING);
    ck_assert_uint_eq(a.n, 512);
    const unsigned char *cur = NULL;
    const char *s;
    uint64_t len;
    const char *want[] = {"<unk>", "<s>", "</s>", "<0x00>"};
    for (int i = 0; i < 4; i++) {
        ck_assert(gguf_array_string(&a, &cur, &s, &len));
        ck_assert_uint_eq(len, strlen(want[i]));
        ck_assert(memcmp(s, want[i], len) == 0);
    }
    int count = 4;
    while (gguf_array_string(&a, &cur, &s, &len))
        count++;
    ck_assert_int_eq(count, 512);
    ck_assert(gguf_get_array(g, "tokenizer.ggml.token_type", &a));
    ck_assert_int_eq(a.type, GGUF_TYPE_INT32);
    ck_assert_int_eq(gguf_array_int(&a, 0), 2);
    ck_assert_int_eq(gguf_array_int(&a, 1), 3);
    ck_assert_int_eq(gguf_array_int(&a, 3), 6);
    ck_assert(gguf_get_array(g, "tokenizer.ggml.scores", &a));
    ck_assert_int_eq(a.type, GGUF_TYPE_FLOAT32);

    const gguf_tensor *t = gguf_find_tensor(g, "token_embd.weight");
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(t->n_dims, 2);
    ck_assert_uint_eq(t->dims[0], 64);
    ck_assert_uint_eq(t->dims[1], 512);
    ck_assert_uint_eq(t->type, GGML_TYPE_F32);
    ck_assert_uint_eq(t->bytes, 4 * 64 * 512);
    ck_assert_ptr_eq(t->data, buf + STORIES_DATA + t->offset);
    ck_assert_ptr_eq(gguf_tensor_at(g, 0), t);
    ck_assert_ptr_null(gguf_find_tensor(g, "token_embd"));
    ck_assert_ptr_nonnull(gguf_find_tensor(g, "blk.4.ffn_norm.weight"));
    gguf_free(g);
    free(buf);
}
END_TEST

START_TEST(test_stories_q8_0_and_vocab)
{
    size_t size;
    unsigned char *buf = read_whole_file(data_path("stories260K-q8_0.gguf"), &size);
    gguf *g = parse_ok(buf, size, "stories260K-q8_0.gguf");
    ck_assert_uint_eq(gguf_version(g), 2);
    const gguf_tensor *t = gguf_find_tensor(g, "blk.0.ffn_down.weight");
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(t->type, GGML_TYPE_Q8_0);
    ck_assert_uint_eq(t->dims[0], 172); /* rows of 172: blocks of 32 straddle them */
    ck_assert_uint_eq(t->bytes, 172 * 64 / 32 * 34);
    gguf_free(g);
    free(buf);

    /* a vocabulary without tensors ends before the aligned data section */
    buf = read_whole_file(data_path("ggml-vocab-llama-spm.gguf"), &size);
    g = parse_ok(buf, size, "ggml-vocab-llama-spm.gguf");
    ck_assert_uint_eq(gguf_tensor_count(g), 0);
    ck_assert_uint_gt(gguf_data_offset(g), size);
    bool add_bos = false;
    ck_assert(gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &add_bos) && add_bos);
    gguf_array a;
    ck_assert(gguf_get_array(g, "tokenizer.ggml.tokens", &a) && a.n == 32000);
    gguf_free(g);
    free(buf);
}
END_TEST

/* Every line of golden/gguf_dequant.jsonl: the first 16 values of the tensor, the
 * sums of its first rows, its sum and sum of squares, computed by llama.cpp. */
START_TEST(test_dequant_goldens)
{
    FILE *f = fopen(data_path("golden/gguf_dequant.jsonl"), "r");
    ck_assert_msg(f != NULL, "cannot open golden/gguf_dequant.jsonl");
    static char line[1 << 16];
    char file[256] = "", tensor[256], type[32];
    unsigned char *buf = NULL;
    gguf *g = NULL;
    int lines = 0, quantized = 0;
    while (fgets(line, sizeof line, f)) {
        char want_file[256];
        ck_assert(jsonl_string(line, "file", want_file, sizeof want_file));
        ck_assert(jsonl_string(line, "tensor", tensor, sizeof tensor));
        ck_assert(jsonl_string(line, "type", type, sizeof type));
        if (strcmp(want_file, file) != 0) {
            gguf_free(g);
            free(buf);
            snprintf(file, sizeof file, "%s", want_file);
            size_t size;
            buf = read_whole_file(data_path(file), &size);
            g = parse_ok(buf, size, file);
        }
        const gguf_tensor *t = gguf_find_tensor(g, tensor);
        ck_assert_msg(t != NULL, "%s: no tensor %s", file, tensor);
        ck_assert_str_eq(ggml_type_name(t->type), type);
        ck_assert_msg(dequant_supported(t->type), "%s: %s not supported", tensor, type);
        double shape[4];
        int nd = jsonl_numbers(line, "shape", shape, 4);
        ck_assert_int_eq(nd, (int)t->n_dims);
        for (int d = 0; d < nd; d++)
            ck_assert_uint_eq(t->dims[d], (uint64_t)shape[d]);

        uint64_t cols = t->dims[0], rows = t->n_values / cols;
        float *x = malloc(t->n_values * sizeof *x);
        /* row by row, as the loader reads them (rows may straddle blocks) */
        for (uint64_t r = 0; r < rows; r++)
            dequant_range(t->type, t->data, r * cols, x + r * cols, (size_t)cols);
        double first[16];
        int n_first = jsonl_numbers(line, "first16", first, 16);
        ck_assert_int_eq(n_first, t->n_values < 16 ? (int)t->n_values : 16);
        bool is_float = t->type == GGML_TYPE_F32 || t->type == GGML_TYPE_F16 ||
                        t->type == GGML_TYPE_BF16;
        for (int i = 0; i < n_first; i++) {
            if (is_float)
                ck_assert_msg(fabs(x[i] - first[i]) <= 1e-6 * fabs(first[i]),
                              "%s %s [%d]: %.9g, reference %.9g", file, tensor, i, x[i], first[i]);
            else /* the same fp32 value, bit for bit */
                ck_assert_msg(x[i] == (float)first[i], "%s %s [%d]: %.9g, reference %.9g", file,
                              tensor, i, x[i], first[i]);
        }
        double row_sums[8];
        int n_rows = jsonl_numbers(line, "row_sums", row_sums, 8);
        ck_assert_int_eq(n_rows, rows < 4 ? (int)rows : 4);
        for (int r = 0; r < n_rows; r++) {
            double s = 0;
            for (uint64_t c = 0; c < cols; c++)
                s += x[r * cols + c];
            ck_assert_msg(fabs(s - row_sums[r]) < 1e-6, "%s %s row %d sums to %.12g, reference %.12g",
                          file, tensor, r, s, row_sums[r]);
        }
        double sum = 0, sumsq = 0;
        for (uint64_t i = 0; i < t->n_values; i++) {
            sum += x[i];
            sumsq += (double)x[i] * x[i];
        }
        ck_assert_msg(fabs(sum - jsonl_number(line, "sum")) < 1e-6, "%s %s: sum %.12g, reference %.12g",
                      file, tensor, sum, jsonl_number(line, "sum"));
        ck_assert_msg(fabs(sumsq - jsonl_number(line, "sumsq")) < 1e-6 * fmax(1, sumsq),
                      "%s %s: sum of squares %.12g, reference %.12g", file, tensor, sumsq,
                      jsonl_number(line, "sumsq"));
        free(x);
        lines++;
        quantized += !is_float;
    }
    fclose(f);
    gguf_free(g);
    free(buf);
    ck_assert_int_ge(lines, 100);
    ck_assert_int_ge(quantized, 40);
}
END_TEST

/* Each type with golden lines must be among them: the suite checks every decoder. */
START_TEST(test_every_decoder_has_a_golden)
{
    static const uint32_t decoded[] = {
        GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q4_0, GGML_TYPE_Q4_1,
        GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q8_0, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K,
        GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K, GGML_TYPE_MXFP4,
    };
    size_t size;
    unsigned char *text = read_whole_file(data_path("golden/gguf_dequant.jsonl"), &size);
    text = realloc(text, size + 1);
    text[size] = '\0';
    int supported = 0;
    for (uint32_t t = 0; t < GGML_TYPE_LIMIT; t++)
        supported += dequant_supported(t);
    ck_assert_int_eq(supported, (int)(sizeof decoded / sizeof decoded[0]));
    for (size_t i = 0; i < sizeof decoded / sizeof decoded[0]; i++) {
        ck_assert(dequant_supported(decoded[i]));
        char pat[64];
        snprintf(pat, sizeof pat, "\"type\": \"%s\"", ggml_type_name(decoded[i]));
        ck_assert_msg(strstr((char *)text, pat) != NULL, "no golden line for %s", pat);
    }
    free(text);
    ck_assert(!dequant_supported(GGML_TYPE_Q8_K));
    ck_assert(!dequant_supported(GGML_TYPE_IQ2_XXS));
    ck_assert(!dequant_supported(GGML_TYPE_IQ4_NL));
    ck_assert(!dequant_supported(4)); /* removed from the format */
    ck_assert_ptr_null(ggml_type_get(4));
    ck_assert_str_eq(ggml_type_name(99), "type 99");
    ck_assert_str_eq(ggml_type_name(GGML_TYPE_Q4_K), "Q4_K");
}
END_TEST

/* golden/mxfp4_blocks.txt: every e2m1 code in both nibbles under exponents from 0 to 255,
 * and llama.cpp's values: dequant's are the same fp32 bits, infinities included. */
START_TEST(test_mxfp4_every_code)
{
    FILE *f = fopen(data_path("golden/mxfp4_blocks.txt"), "r");
    ck_assert_msg(f != NULL, "cannot open golden/mxfp4_blocks.txt");
    char line[1024];
    int blocks = 0;
    bool seen_e[256] = {false}, seen_code[16] = {false};
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#')
            continue;
        uint8_t block[GGML_MXFP4_BYTES];
        const char *p = line;
        int used;
        unsigned e;
        ck_assert_int_eq(sscanf(p, "%2x%n", &e, &used), 1);
        block[0] = (uint8_t)e;
        p += used + 1;
        for (int j = 0; j < 16; j++, p += 2) {
            unsigned byte;
            ck_assert_int_eq(sscanf(p, "%2x", &byte), 1);
            block[1 + j] = (uint8_t)byte;
            seen_code[byte & 0x0f] = seen_code[byte >> 4] = true;
        }
        float got[32];
        dequant_range(GGML_TYPE_MXFP4, block, 0, got, 32);
        for (int i = 0; i < 32; i++) {
            unsigned want;
            ck_assert_int_eq(sscanf(p, " %8x%n", &want, &used), 1);
            p += used;
            uint32_t bits;
            memcpy(&bits, &got[i], 4);
            ck_assert_msg(bits == want, "e %u value %d: 0x%08x (%g), llama.cpp 0x%08x", e, i,
                          (unsigned)bits, got[i], want);
        }
        seen_e[e] = true;
        blocks++;
    }
    fclose(f);
    ck_assert_int_ge(blocks, 16);
    ck_assert(seen_e[0] && seen_e[1] && seen_e[127] && seen_e[254] && seen_e[255]);
    for (int c = 0; c < 16; c++)
        ck_assert(seen_code[c]);
}
END_TEST

/* ---- conversions ---- */

START_TEST(test_half_precision)
{
    ck_assert_float_eq(ggml_fp16_to_f32(0x3c00), 1.0f);
    ck_assert_float_eq(ggml_fp16_to_f32(0xc000), -2.0f);
    ck_assert_float_eq(ggml_fp16_to_f32(0x7bff), 65504.0f);
    ck_assert_float_eq(ggml_fp16_to_f32(0x0001), 0x1p-24f); /* smallest subnormal */
    ck_assert_float_eq(ggml_fp16_to_f32(0x0400), 0x1p-14f); /* smallest normal */
    ck_assert(isinf(ggml_fp16_to_f32(0x7c00)) && ggml_fp16_to_f32(0xfc00) < 0);
    ck_assert(isnan(ggml_fp16_to_f32(0x7e00)));
    ck_assert(signbit(ggml_fp16_to_f32(0x8000)));
    ck_assert_uint_eq(ggml_f32_to_fp16(1.0f), 0x3c00);
    ck_assert_uint_eq(ggml_f32_to_fp16(65504.0f), 0x7bff);
    ck_assert_uint_eq(ggml_f32_to_fp16(65519.0f), 0x7bff);  /* below the midpoint */
    ck_assert_uint_eq(ggml_f32_to_fp16(65520.0f), 0x7c00);  /* ties to even: infinity */
    ck_assert_uint_eq(ggml_f32_to_fp16(1e9f), 0x7c00);
    ck_assert_uint_eq(ggml_f32_to_fp16(-1e9f), 0xfc00);
    ck_assert_uint_eq(ggml_f32_to_fp16(NAN) & 0x7fff, 0x7e00);
    ck_assert_uint_eq(ggml_f32_to_fp16(0x1p-25f), 0x0000);  /* tie to even: zero */
    ck_assert_uint_eq(ggml_f32_to_fp16(0x1.8p-24f), 0x0002); /* tie to even: 2 */
    ck_assert_uint_eq(ggml_f32_to_fp16(1.0f + 0x1p-11f), 0x3c00); /* tie to even */
    ck_assert_uint_eq(ggml_f32_to_fp16(1.0f + 0x1.8p-10f), 0x3c02); /* tie to even */
    ck_assert_uint_eq(ggml_f32_to_fp16(1.0f + 0x1.8p-11f), 0x3c01);
    /* every half survives a round trip through fp32 */
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = ggml_fp16_to_f32((uint16_t)h);
        if (!isnan(f))
            ck_assert_msg(ggml_f32_to_fp16(f) == h, "half 0x%04x -> %g -> 0x%04x", h, f,
                          ggml_f32_to_fp16(f));
    }
    ck_assert_float_eq(ggml_bf16_to_f32(0x3f80), 1.0f);
    ck_assert_float_eq(ggml_bf16_to_f32(0xc040), -3.0f);
}
END_TEST

START_TEST(test_quantize_q8_0)
{
    float x[64];
    uint64_t rng = 42;
    for (int i = 0; i < 64; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((int)(rng >> 40) % 2001 - 1000) / 1000.0f;
    }
    x[5] = 0.0f;
    ggml_block_q8_0 blocks[2];
    ggml_quantize_q8_0(blocks, x, 64);
    float y[64];
    dequant_range(GGML_TYPE_Q8_0, blocks, 0, y, 64);
    for (int b = 0; b < 2; b++) {
        float amax = 0;
        for (int i = 0; i < 32; i++)
            amax = fmaxf(amax, fabsf(x[32 * b + i]));
        float d = ggml_fp16_to_f32(blocks[b].d);
        ck_assert_float_eq_tol(d, amax / 127, amax / 127 * 1e-3f);
        for (int i = 0; i < 32; i++)
            ck_assert_float_eq_tol(y[32 * b + i], x[32 * b + i], d * 0.51f + amax * 1e-3f);
    }
    /* a block with a NaN or an infinity gets a NaN scale */
    x[40] = INFINITY;
    ggml_quantize_q8_0(blocks, x, 64);
    ck_assert(!isnan(ggml_fp16_to_f32(blocks[0].d)));
    ck_assert(isnan(ggml_fp16_to_f32(blocks[1].d)));
}
END_TEST

/* ---- writing ---- */

START_TEST(test_writer_round_trip)
{
    const char *path = temp_path("writer.gguf");
    for (int pass = 0; pass < 2; pass++) {
        uint32_t alignment = pass == 0 ? 0 : 64;
        gguf_writer *w = gguf_writer_new(alignment);
        ck_assert_ptr_nonnull(w);
        gguf_writer_add_string(w, "general.architecture", "llama");
        gguf_writer_add_uint32(w, "llama.block_count", 7);
        gguf_writer_add_int32(w, "some.int", -5);
        gguf_writer_add_float32(w, "llama.rope.freq_base", 1e6f);
        gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", true);
        const char *tokens[] = {"<unk>", "a\0b", "\xe2\x96\x81the"};
        size_t lens[] = {5, 3, 6};
        gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", tokens, lens, 3);
        float scores[] = {0.0f, -1.5f, 2.25f};
        gguf_writer_add_float32_array(w, "tokenizer.ggml.scores", scores, 3);
        int32_t types[] = {2, 1, 1};
        gguf_writer_add_int32_array(w, "tokenizer.ggml.token_type", types, 3);

        float f[3 * 5];
        for (int i = 0; i < 15; i++)
            f[i] = (float)i - 7.5f;
        uint64_t dims_f[] = {5, 3};
        ck_assert_uint_eq(gguf_writer_add_tensor(w, "a.weight", GGML_TYPE_F32, 2, dims_f), 60);
        float q[64];
        for (int i = 0; i < 64; i++)
            q[i] = (float)(i % 17) / 16.0f - 0.5f;
        ggml_block_q8_0 blocks[2];
        ggml_quantize_q8_0(blocks, q, 64);
        uint64_t dims_q[] = {64};
        ck_assert_uint_eq(gguf_writer_add_tensor(w, "b.weight", GGML_TYPE_Q8_0, 1, dims_q), 68);
        uint64_t bad_dims[] = {33};
        ck_assert_uint_eq(gguf_writer_add_tensor(w, "c.weight", GGML_TYPE_Q8_0, 1, bad_dims), 0);
        ck_assert_uint_eq(gguf_writer_add_tensor(w, "d.weight", 99, 1, dims_q), 0);

        FILE *out = fopen(path, "wb");
        ck_assert_ptr_nonnull(out);
        llm_err err;
        ck_assert(gguf_writer_write_header(w, out, path, &err) == LLM_OK);
        ck_assert_int_eq(fwrite(f, 4, 15, out), 15);
        ck_assert(gguf_writer_pad(w, out, 60, path, &err) == LLM_OK);
        ck_assert_int_eq(fwrite(blocks, 1, 68, out), 68);
        ck_assert(gguf_writer_pad(w, out, 68, path, &err) == LLM_OK);
        fclose(out);
        gguf_writer_free(w);

        size_t size;
        unsigned char *buf = read_whole_file(path, &size);
        gguf *g = parse_ok(buf, size, path);
        ck_assert_uint_eq(gguf_version(g), 3);
        ck_assert_uint_eq(gguf_alignment(g), pass == 0 ? 32 : 64);
        ck_assert_uint_eq(gguf_kv_count(g), pass == 0 ? 8 : 9);
        ck_assert_str_eq(gguf_get_string(g, "general.architecture", NULL), "llama");
        uint64_t u;
        double d;
        bool b;
        ck_assert(gguf_get_uint(g, "llama.block_count", &u) && u == 7);
        ck_assert(!gguf_get_uint(g, "some.int", &u)); /* negative */
        ck_assert(gguf_get_float(g, "some.int", &d) && d == -5);
        ck_assert(gguf_get_float(g, "llama.rope.freq_base", &d) && d == 1e6);
        ck_assert(gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &b) && b);
        gguf_array a;
        ck_assert(gguf_get_array(g, "tokenizer.ggml.tokens", &a) && a.n == 3);
        const unsigned char *cur = NULL;
        const char *s;
        uint64_t len;
        for (int i = 0; i < 3; i++) {
            ck_assert(gguf_array_string(&a, &cur, &s, &len));
            ck_assert_uint_eq(len, lens[i]);
            ck_assert(memcmp(s, tokens[i], lens[i]) == 0);
        }
        ck_assert(!gguf_array_string(&a, &cur, &s, &len));
        ck_assert(gguf_get_array(g, "tokenizer.ggml.scores", &a));
        ck_assert(gguf_array_float(&a, 2) == 2.25);
        ck_assert(gguf_get_array(g, "tokenizer.ggml.token_type", &a));
        ck_assert_int_eq(gguf_array_int(&a, 0), 2);

        ck_assert_uint_eq(gguf_tensor_count(g), 2);
        const gguf_tensor *t = gguf_find_tensor(g, "a.weight");
        ck_assert_ptr_nonnull(t);
        ck_assert_uint_eq(t->dims[0], 5);
        ck_assert_uint_eq(t->dims[1], 3);
        ck_assert(memcmp(t->data, f, sizeof f) == 0);
        t = gguf_find_tensor(g, "b.weight");
        ck_assert_ptr_nonnull(t);
        ck_assert_uint_eq(t->offset, pass == 0 ? 64 : 64);
        ck_assert(memcmp(t->data, blocks, 68) == 0);
        ck_assert_uint_eq(gguf_data_offset(g) % gguf_alignment(g), 0);
        gguf_free(g);
        free(buf);
    }
    remove(path);
}
END_TEST

/* Every value type, arrays of arrays, and the getters' conversions. */
START_TEST(test_every_value_type)
{
    bad_buf b = {0};
    b_header(&b, 3, 0, 14);
    b_str(&b, "v.u8"); b_u32(&b, GGUF_TYPE_UINT8); bad_put(&b, "\xfe", 1);
    b_str(&b, "v.i8"); b_u32(&b, GGUF_TYPE_INT8); bad_put(&b, "\xfe", 1);
    b_str(&b, "v.u16"); b_u32(&b, GGUF_TYPE_UINT16); bad_put(&b, "\x34\x12", 2);
    b_str(&b, "v.i16"); b_u32(&b, GGUF_TYPE_INT16); bad_put(&b, "\xff\xff", 2);
    b_str(&b, "v.u32"); b_u32(&b, GGUF_TYPE_UINT32); b_u32(&b, 4000000000u);
    b_str(&b, "v.i32"); b_u32(&b, GGUF_TYPE_INT32); b_u32(&b, (uint32_t)-7);
    b_str(&b, "v.f32"); b_u32(&b, GGUF_TYPE_FLOAT32); b_u32(&b, 0x3fc00000); /* 1.5 */
    b_str(&b, "v.bool"); b_u32(&b, GGUF_TYPE_BOOL); bad_put(&b, "\x00", 1);
    b_str(&b, "v.str"); b_u32(&b, GGUF_TYPE_STRING); b_str(&b, "hello");
    b_str(&b, "v.u64"); b_u32(&b, GGUF_TYPE_UINT64); b_u64(&b, (uint64_t)1 << 63);
    b_str(&b, "v.i64"); b_u32(&b, GGUF_TYPE_INT64); b_u64(&b, (uint64_t)-3);
    b_str(&b, "v.f64"); b_u32(&b, GGUF_TYPE_FLOAT64); b_u64(&b, 0x4004000000000000ull); /* 2.5 */
    /* [[["a", "bc"], []], [["d"]]] */
    b_str(&b, "v.nested"); b_u32(&b, GGUF_TYPE_ARRAY);
    b_u32(&b, GGUF_TYPE_ARRAY); b_u64(&b, 2);
    b_u32(&b, GGUF_TYPE_ARRAY); b_u64(&b, 2);
    b_u32(&b, GGUF_TYPE_STRING); b_u64(&b, 2); b_str(&b, "a"); b_str(&b, "bc");
    b_u32(&b, GGUF_TYPE_STRING); b_u64(&b, 0);
    b_u32(&b, GGUF_TYPE_ARRAY); b_u64(&b, 1);
    b_u32(&b, GGUF_TYPE_STRING); b_u64(&b, 1); b_str(&b, "d");
    b_str(&b, "v.u16s"); b_u32(&b, GGUF_TYPE_ARRAY); b_u32(&b, GGUF_TYPE_UINT16); b_u64(&b, 2);
    bad_put(&b, "\x01\x00\xff\xff", 4);

    gguf *g = parse_ok(b.p, b.n, "types.gguf");
    ck_assert_uint_eq(gguf_kv_count(g), 14);
    uint64_t u;
    double d;
    bool flag = true;
    ck_assert(gguf_get_uint(g, "v.u8", &u) && u == 254);
    ck_assert(!gguf_get_uint(g, "v.i8", &u));
    ck_assert(gguf_get_float(g, "v.i8", &d) && d == -2);
    ck_assert(gguf_get_uint(g, "v.u16", &u) && u == 0x1234);
    ck_assert(gguf_get_float(g, "v.i16", &d) && d == -1);
    ck_assert(gguf_get_uint(g, "v.u32", &u) && u == 4000000000u);
    ck_assert(gguf_get_float(g, "v.i32", &d) && d == -7);
    ck_assert(gguf_get_float(g, "v.f32", &d) && d == 1.5);
    ck_assert(!gguf_get_uint(g, "v.f32", &u));
    ck_assert(gguf_get_bool(g, "v.bool", &flag) && !flag);
    ck_assert(!gguf_get_uint(g, "v.bool", &u));
    size_t len;
    ck_assert_str_eq(gguf_get_string(g, "v.str", &len), "hello");
    ck_assert_uint_eq(len, 5);
    ck_assert_ptr_null(gguf_get_string(g, "v.u8", &len));
    ck_assert(gguf_get_uint(g, "v.u64", &u) && u == (uint64_t)1 << 63);
    ck_assert(!gguf_get_uint(g, "v.i64", &u));
    ck_assert(gguf_get_float(g, "v.i64", &d) && d == -3);
    ck_assert(gguf_get_float(g, "v.f64", &d) && d == 2.5);
    gguf_array a;
    ck_assert(gguf_get_array(g, "v.nested", &a));
    ck_assert_int_eq(a.type, GGUF_TYPE_ARRAY);
    ck_assert_uint_eq(a.n, 2);
    ck_assert(gguf_get_array(g, "v.u16s", &a));
    ck_assert_int_eq(gguf_array_int(&a, 1), 65535);
    ck_assert(gguf_array_float(&a, 0) == 1.0);
    ck_assert_int_eq(gguf_array_int(&a, 2), 0); /* out of range */
    ck_assert(!gguf_get_array(g, "v.str", &a));
    gguf_free(g);
    free(b.p);
}
END_TEST

/* ---- hostile files ---- */

START_TEST(test_reference_bad_files)
{
    size_t size;
    unsigned char *src = read_whole_file(data_path("stories260K.gguf"), &size);
    for (size_t i = 0; i < sizeof gguf_bad_variants / sizeof gguf_bad_variants[0]; i++) {
        bad_buf b;
        ck_assert_msg(gguf_bad_make(gguf_bad_variants[i].name, src, size, &b), "%s",
                      gguf_bad_variants[i].name);
        if (!strcmp(gguf_bad_variants[i].name, "arch-gpt2")) {
            /* a well-formed file of another architecture: the loader refuses it */
            gguf *g = parse_ok(b.p, b.n, "gpt2.gguf");
            ck_assert_str_eq(gguf_get_string(g, "general.architecture", NULL), "gpt2");
            gguf_free(g);
        } else {
            /* an exactly sized copy, so that any read past the end is caught by ASan */
            unsigned char *exact = malloc(b.n);
            memcpy(exact, b.p, b.n);
            parse_fails(exact, b.n, gguf_bad_variants[i].says);
            free(exact);
        }
        free(b.p);
    }
    free(src);

    src = read_whole_file(data_path("stories260K-gguf-v1-head.gguf"), &size);
    parse_fails(src, size, (const char *[]){"version 1", "obsolete", NULL});
    free(src);
}
END_TEST

/* Every prefix of the header and metadata is refused cleanly; so is every prefix of a
 * file's data section that cuts a tensor. */
START_TEST(test_every_truncation)
{
    size_t size;
    unsigned char *src = read_whole_file(data_path("stories260K-q8_0.gguf"), &size);
    for (size_t n = 0; n < 14240 + 64; n++) {
        unsigned char *cut = malloc(n ? n : 1);
        memcpy(cut, src, n);
        gguf *g = NULL;
        llm_err err = {{0}};
        llm_status s = gguf_parse(cut, n, "cut.gguf", &g, &err);
        ck_assert_msg(s == LLM_ERR_FORMAT && g == NULL, "%zu bytes: status %s", n, llm_status_name(s));
        ck_assert_msg(strstr(err.text, "cut.gguf: ") == err.text, "%zu bytes: %s", n, err.text);
        free(cut);
    }
    /* the whole file parses, one byte less does not */
    gguf_free(parse_ok(src, size, "whole.gguf"));
    parse_fails(src, size - 1, (const char *[]){"output.weight", "past the end", NULL});
    free(src);
}
END_TEST

/* Random damage to the header and metadata: parsed or refused, never a crash or a read
 * out of bounds (with sanitizers), and what parses is consistent. */
START_TEST(test_random_damage)
{
    size_t size;
    unsigned char *src = read_whole_file(data_path("stories260K-q8_0.gguf"), &size);
    unsigned char *copy = malloc(size);
    uint64_t rng = 12345;
    int parsed = 0, refused = 0;
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(copy, src, size);
        int flips = 1 + iter % 4;
        for (int k = 0; k < flips; k++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            size_t pos = (size_t)(rng >> 33) % 14240;
            copy[pos] ^= (unsigned char)(1u << ((rng >> 20) & 7));
            if (iter % 7 == 0) /* sometimes a big value in a length or count */
                copy[pos] = 0xff;
        }
        gguf *g = NULL;
        llm_err err = {{0}};
        llm_status s = gguf_parse(copy, size, "damaged.gguf", &g, &err);
        if (s == LLM_OK) {
            parsed++;
            for (uint64_t i = 0; i < gguf_tensor_count(g); i++) {
                const gguf_tensor *t = gguf_tensor_at(g, i);
                ck_assert((const unsigned char *)t->data + t->bytes <= copy + size);
                ck_assert_ptr_eq(gguf_find_tensor(g, t->name), t);
            }
            gguf_free(g);
        } else {
            refused++;
            ck_assert_int_eq(s, LLM_ERR_FORMAT);
            ck_assert_ptr_null(g);
            ck_assert(strstr(err.text, "damaged.gguf: ") == err.text);
        }
    }
    ck_assert_int_gt(parsed, 0);
    ck_assert_int_gt(refused, 0);
    free(copy);
    free(src);
}
END_TEST

START_TEST(test_crafted_errors)
{
    bad_buf b = {0};

    /* counts no file of this size can hold */
    b_header(&b, 3, (uint64_t)1 << 62, 0);
    parse_fails(b.p, b.n, (const char *[]){"4,611,686,018,427,387,904 tensors", NULL});
    b.n = 0;
    b_header(&b, 3, 0, UINT64_MAX);
    parse_fails(b.p, b.n, (const char *[]){"metadata keys", NULL});
    b.n = 0;

    /* unknown versions, and not GGUF at all */
    b_header(&b, 4, 0, 0);
    parse_fails(b.p, b.n, (const char *[]){"version 4", NULL});
    b.n = 0;
    b_header(&b, 0, 0, 0);
    parse_fails(b.p, b.n, (const char *[]){"version 0", NULL});
    b.n = 0;
    bad_put(&b, "GGUX\3\0\0\0", 8);
    parse_fails(b.p, b.n, (const char *[]){"not a GGUF file", NULL});
    b.n = 0;
    parse_fails("GG", 2, (const char *[]){"magic", NULL});

    /* a value type that does not exist, a bool of 2, an array of a bad type */
    b_header(&b, 3, 0, 1);
    b_str(&b, "k"); b_u32(&b, 13); b_u32(&b, 0);
    parse_fails(b.p, b.n, (const char *[]){"'k'", "value type 13", NULL});
    b.n = 0;
    b_header(&b, 3, 0, 1);
    b_str(&b, "k"); b_u32(&b, GGUF_TYPE_BOOL); bad_put(&b, "\x02", 1);
    parse_fails(b.p, b.n, (const char *[]){"bool of 2", NULL});
    b.n = 0;
    b_header(&b, 3, 0, 1);
    b_str(&b, "k"); b_u32(&b, GGUF_TYPE_ARRAY); b_u32(&b, 77); b_u64(&b, 0);
    parse_fails(b.p, b.n, (const char *[]){"array of type 77", NULL});
    b.n = 0;

    /* arrays nested too deep */
    b_header(&b, 3, 0, 1);
    b_str(&b, "deep"); b_u32(&b, GGUF_TYPE_ARRAY);
    for (int i = 0; i < 40; i++) {
        b_u32(&b, GGUF_TYPE_ARRAY);
        b_u64(&b, 1);
    }
    parse_fails(b.p, b.n, (const char *[]){"'deep'", "nests arrays", NULL});
    b.n = 0;

    /* a key twice; an empty key */
    b_header(&b, 3, 0, 2);
    b_str(&b, "a.b"); b_u32(&b, GGUF_TYPE_UINT8); bad_put(&b, "\1", 1);
    b_str(&b, "a.b"); b_u32(&b, GGUF_TYPE_UINT8); bad_put(&b, "\1", 1);
    parse_fails(b.p, b.n, (const char *[]){"'a.b' appears twice", NULL});
    b.n = 0;
    b_header(&b, 3, 0, 1);
    b_str(&b, ""); b_u32(&b, GGUF_TYPE_UINT8); bad_put(&b, "\1", 1);
    parse_fails(b.p, b.n, (const char *[]){"empty", NULL});
    b.n = 0;

    /* general.alignment of the wrong type */
    b_header(&b, 3, 0, 1);
    b_str(&b, "general.alignment"); b_u32(&b, GGUF_TYPE_STRING); b_str(&b, "32");
    parse_fails(b.p, b.n, (const char *[]){"general.alignment", "string", NULL});
    b.n = 0;

    /* tensors: a name twice, dimensions whose product overflows, a count of values
     * that is not a whole number of blocks, a misaligned offset */
    const struct {
        uint64_t dims[2];
        uint32_t type;
        uint64_t offset;
        const char *says;
    } tensors[] = {
        {{1ull << 40, 1ull << 40}, GGML_TYPE_F32, 0, "more than 2^63 values"},
        {{33, 1}, GGML_TYPE_Q8_0, 0, "not a whole number of Q8_0 blocks"},
        {{8, 1}, GGML_TYPE_F32, 16, "not a multiple of the alignment"},
        {{8, 1}, GGML_TYPE_F32, 0, "'t' appears twice"},
    };
    for (size_t i = 0; i < sizeof tensors / sizeof tensors[0]; i++) {
        int twice = strstr(tensors[i].says, "twice") != NULL;
        b_header(&b, 3, 1 + (uint64_t)twice, 0);
        for (int k = 0; k <= twice; k++) {
            b_str(&b, "t");
            b_u32(&b, 2);
            b_u64(&b, tensors[i].dims[0]);
            b_u64(&b, tensors[i].dims[1]);
            b_u32(&b, tensors[i].type);
            b_u64(&b, tensors[i].offset + 32 * (uint64_t)k);
        }
        while (b.n % 32)
            bad_put(&b, "", 1);
        for (int k = 0; k < 64; k++)
            bad_put(&b, "", 1);
        parse_fails(b.p, b.n, (const char *[]){tensors[i].says, NULL});
        b.n = 0;
    }
    free(b.p);
}
END_TEST

static Suite *gguf_suite(void)
{
    Suite *s = suite_create("gguf");
    TCase *core = tcase_create("core");
    tcase_add_test(core, test_stories_f32);
    tcase_add_test(core, test_stories_q8_0_and_vocab);
    tcase_add_test(core, test_dequant_goldens);
    tcase_add_test(core, test_every_decoder_has_a_golden);
    tcase_add_test(core, test_mxfp4_every_code);
    tcase_add_test(core, test_half_precision);
    tcase_add_test(core, test_quantize_q8_0);
    tcase_add_test(core, test_writer_round_trip);
    tcase_add_test(core, test_every_value_type);
    suite_add_tcase(s, core);
    TCase *limits = tcase_create("limits");
    tcase_set_timeout(limits, 300);
    tcase_add_test(limits, test_reference_bad_files);
    tcase_add_test(limits, test_every_truncation);
    tcase_add_test(limits, test_random_damage);
    tcase_add_test(limits, test_crafted_errors);
    suite_add_tcase(s, limits);
    return s;
}

TEST_MAIN(gguf_suite)
