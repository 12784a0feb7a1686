/* test_block_decode.c — the compute view's block decoder (src/kernels/block_decode.c)
 * against the reference dequantization: for every tensor of golden/gguf_dequant.jsonl
 * (every type: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K,
 * Q6_K, MXFP4), each block's values rebuilt from the decoded fields equal dequant.c's bit for
 * bit over the whole tensor, and the first 16 equal llama.cpp's (the golden file); the
 * fields lie in their formats' ranges. And the partial dot products: the groups' parts
 * of a row, added in order, are the plain-C row kernel's result bit for bit, and each
 * part is the formula the view prints from the fields and the integer sums. */
#include "testutil.h"

#include <math.h>
#include <string.h>

#include "block_decode.h"
#include "dequant.h"
#include "ggml_type.h"
#include "gguf.h"
#include "jsonl.h"
#include "quant.h"
#include "table.h"

/* The fields of b lie where its format puts them. */
static void check_ranges(const block_decoded *b, const char *what)
{
    int qmax = b->low_bits ? (1 << (b->low_bits + b->high_bits)) - 1 : 0;
    for (int i = 0; i < b->n && b->low_bits && b->type != GGML_TYPE_Q8_0; i++)
        check_each(b->quant[i] >= 0 && b->quant[i] <= qmax, "%s: quant %d of %d out of 0..%d",
                   what, b->quant[i], i, qmax);
    for (int i = 0; i < b->n && b->high_bits; i++)
        check_each(b->high[i] >= 0 && b->high[i] < (1 << b->high_bits), "%s: high bits", what);
    for (int s = 0; s < b->n_sub && b->sub_scales && b->scale_bits < 8; s++) {
        int lo = b->type == GGML_TYPE_Q3_K ? -32 : 0;
        check_each(b->scale[s] >= lo && b->scale[s] < lo + (1 << b->scale_bits),
                   "%s: scale %d of sub-block %d", what, b->scale[s], s);
    }
    check_each(b->n_sub * b->sub_len == b->n, "%s: %d sub-blocks of %d for %d values", what,
               b->n_sub, b->sub_len, b->n);
}

/* Every block of tensor t decoded; its values against dequant_range's. Returns the
 * tensor's values (malloc'd). */
static float *decode_all(const gguf_tensor *t, const char *what)
{
    const ggml_type_info *info = ggml_type_get(t->type);
    int bv = block_decode_values(t->type);
    size_t bytes = block_decode_bytes(t->type);
    ck_assert_msg(bv > 0, "%s: type %s not decoded", what, info->name);
    float *ref = malloc(sizeof(float) * t->n_values);
    dequant_range(t->type, t->data, 0, ref, (size_t)t->n_values);
    block_decoded b;
    for (uint64_t first = 0; first + (uint64_t)bv <= t->n_values; first += (uint64_t)bv) {
        const uint8_t *at = (const uint8_t *)t->data + (info->block == 1 ? first * info->bytes
                                                                          : first / info->block * bytes);
        block_decode(t->type, at, &b);
        check_each(b.n == bv, "%s: a block of %d values, not %d", what, b.n, bv);
        for (int i = 0; i < bv; i++)
            check_each(memcmp(&b.value[i], &ref[first + i], sizeof(float)) == 0,
                       "%s value %llu: %.9g from the fields, dequant.c %.9g", what,
                       (unsigned long long)(first + i), b.value[i], ref[first + i]);
        check_ranges(&b, what);
    }
    return ref;
}

START_TEST(test_blocks_equal_the_reference)
{
    FILE *f = fopen(data_path("golden/gguf_dequant.jsonl"), "r");
    ck_assert_msg(f != NULL, "cannot open golden/gguf_dequant.jsonl");
    static char line[1 << 16];
    char file[256] = "", name[256];
    unsigned char *buf = NULL;
    gguf *g = NULL;
    bool seen[GGML_TYPE_LIMIT] = {false};
    int lines = 0;
    while (fgets(line, sizeof line, f)) {
        char want[256], what[600];
        ck_assert(jsonl_string(line, "file", want, sizeof want));
        ck_assert(jsonl_string(line, "tensor", name, sizeof name));
        if (strcmp(want, file) != 0) {
            gguf_free(g);
            free(buf);
            snprintf(file, sizeof file, "%s", want);
            size_t size;
            llm_err err;
            buf = read_whole_file(data_path(file), &size);
            ck_assert_msg(gguf_parse(buf, size, file, &g, &err) == LLM_OK, "%s", err.text);
        }
        const gguf_tensor *t = gguf_find_tensor(g, name);
        ck_assert_msg(t != NULL, "%s: no %s", file, name);
        snprintf(what, sizeof what, "%s %s (%s)", file, name, ggml_type_name(t->type));
        float *x = decode_all(t, what);
        double first[16];
        int n = jsonl_numbers(line, "first16", first, 16);
        bool is_float = ggml_type_get(t->type)->block == 1;
        block_decoded b;
        block_decode(t->type, t->data, &b); /* the first block: its values are llama.cpp's */
        for (int i = 0; i < n && i < b.n; i++)
            ck_assert_msg(is_float ? fabs(b.value[i] - first[i]) <= 1e-6 * fabs(first[i])
                                   : b.value[i] == (float)first[i],
                          "%s [%d]: %.9g, llama.cpp %.9g", what, i, b.value[i], first[i]);
        free(x);
        seen[t->type] = true;
        lines++;
    }
    fclose(f);
    gguf_free(g);
    free(buf);
    ck_assert_int_ge(lines, 100);
    static const uint32_t types[] = {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q8_0,
                                     GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1,
                                     GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K,
                                     GGML_TYPE_Q6_K, GGML_TYPE_MXFP4};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        ck_assert_msg(seen[types[i]], "no golden tensor of type %s", ggml_type_name(types[i]));
}
END_TEST

/* A pseudo-random activation row of n values, quantized as the pass quantizes it. */
static void activation(int n, float *x, int8_t *xq, float *xs, unsigned seed)
{
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = ((float)(seed >> 8 & 0xffff) / 65536.0f - 0.5f) * (i % 7 == 0 ? 6.0f : 2.0f);
    }
    quant_quantize_row(xq, xs, x, n, n, 32);
}

/* The formula the weight view prints, from the decoded fields. */
static float formula(const block_decoded *b, int g, const int8_t *xq, float xs)
{
    int32_t s[2];
    int n = block_group_sums(b, g, xq, s);
    int isum = 0;
    for (int i = 0; i < 32; i++)
        isum += xq[i];
    float xsum = xs * (float)isum;
    int sub = 32 * g / b->sub_len;
    if (n == 2)
        return b->d * xs * (float)(b->scale[sub] * s[0] + b->scale[sub + 1] * s[1]);
    if (b->sub_mins)
        return b->d * (float)b->scale[sub] * xs * (float)s[0] -
               b->dmin * (float)b->min[sub] * xsum;
    if (b->has_min)
        return b->d * xs * (float)s[0] + b->dmin * xsum;
    if (b->type == GGML_TYPE_Q8_0 || b->type == BLOCK_Q8_ROWS)
        return (float)s[0] * b->d * xs; /* kernels_scalar_dot_q8's order */
    return b->d * xs * (float)s[0];
}

START_TEST(test_partials_add_up_to_the_row)
{
    static const struct {
        const char *file;
        uint32_t type;
        blocks_dot_fn dot; /* NULL: Q8_0 */
    } cases[] = {
        {"gguf-types/rand256-q8_0.gguf", GGML_TYPE_Q8_0, NULL},
        {"gguf-types/rand256-q4_0.gguf", GGML_TYPE_Q4_0, kernels_scalar_dot_q4_0},
        {"gguf-types/rand256-q4_1.gguf", GGML_TYPE_Q4_1, kernels_scalar_dot_q4_1},
        {"gguf-types/rand256-q5_0.gguf", GGML_TYPE_Q5_0, kernels_scalar_dot_q5_0},
        {"gguf-types/rand256-q5_1.gguf", GGML_TYPE_Q5_1, kernels_scalar_dot_q5_1},
        {"gguf-types/rand256-q4_k_m.gguf", GGML_TYPE_Q4_K, kernels_scalar_dot_q4_k},
        {"gguf-types/rand256-q5_k_m.gguf", GGML_TYPE_Q5_K, kernels_scalar_dot_q5_k},
        {"gguf-types/rand256-q6_k.gguf", GGML_TYPE_Q6_K, kernels_scalar_dot_q6_k},
        {"gguf-types/rand256-mxfp4.gguf", GGML_TYPE_MXFP4, kernels_scalar_dot_mxfp4},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t size;
        llm_err err;
        gguf *g;
        unsigned char *buf = read_whole_file(data_path(cases[c].file), &size);
        ck_assert_msg(gguf_parse(buf, size, cases[c].file, &g, &err) == LLM_OK, "%s", err.text);
        const gguf_tensor *t = gguf_find_tensor(g, "blk.0.attn_q.weight");
        ck_assert(t && t->type == cases[c].type);
        int cols = (int)t->dims[0], groups = cols / 32, bv = block_decode_values(t->type);
        size_t row_bytes = (size_t)cols / ggml_type_get(t->type)->block * ggml_type_get(t->type)->bytes;
        float x[256], xs[8], xsum[16];
        int8_t xq[256];
        for (int r = 0; r < 4; r++) {
            const uint8_t *row = (const uint8_t *)t->data + (size_t)r * row_bytes;
            activation(cols, x, xq, xs, (unsigned)(r + 7 * c));
            float total = 0.0f;
            for (int gi = 0; gi < groups; gi++) {
                const uint8_t *blk = row + (size_t)(gi * 32 / bv) * block_decode_bytes(t->type);
                float part = block_partial_dot(t->type, blk, gi * 32 % bv / 32, xq + 32 * gi, xs[gi],
                                               NULL);
                block_decoded b;
                block_decode(t->type, blk, &b);
                float want = formula(&b, gi * 32 % bv / 32, xq + 32 * gi, xs[gi]);
                ck_assert_msg(part == want, "%s row %d group %d: part %.9g, the printed formula %.9g",
                              cases[c].file, r, gi, part, want);
                total += part;
            }
            float ref;
            if (!cases[c].dot) {
                int8_t w[256];
                float ws[8];
                for (int gi = 0; gi < groups; gi++) {
                    memcpy(w + 32 * gi, row + 34 * gi + 2, 32);
                    ws[gi] = ggml_fp16_to_f32((uint16_t)(row[34 * gi] | row[34 * gi + 1] << 8));
                }
                ref = kernels_scalar_dot_q8(w, ws, xq, xs, cols, 32);
            } else {
                for (int gi = 0; gi < groups; gi++) { /* the kernels' group sums */
                    int s = 0, s2 = 0;
                    for (int i = 0; i < 16; i++) {
                        s += xq[32 * gi + i];
                        s2 += xq[32 * gi + 16 + i];
                    }
                    if (t->type == GGML_TYPE_Q6_K) {
                        xsum[2 * gi] = xs[gi] * (float)s;
                        xsum[2 * gi + 1] = xs[gi] * (float)s2;
                    } else {
                        xsum[gi] = xs[gi] * (float)(s + s2);
                    }
                }
                ref = cases[c].dot(row, xq, xs, xsum, cols);
            }
            ck_assert_msg(total == ref, "%s row %d: the parts add up to %.9g, the row kernel %.9g",
                          cases[c].file, r, total, ref);
        }
        gguf_free(g);
        free(buf);
    }
}
END_TEST

/* llmchat's own Q8_0 rows: the fp32 scale and the int8 values; the part is the kernel's. */
START_TEST(test_q8_rows)
{
    int8_t q[32], xq[32];
    for (int i = 0; i < 32; i++) {
        q[i] = (int8_t)(i * 7 - 100);
        xq[i] = (int8_t)(50 - i * 3);
    }
    block_decoded b;
    block_decode_q8_rows(q, 0.0125f, 32, &b);
    ck_assert_int_eq(b.type, BLOCK_Q8_ROWS);
    for (int i = 0; i < 32; i++)
        ck_assert(b.value[i] == (float)q[i] * 0.0125f && b.quant[i] == q[i]);
    int32_t s[2];
    ck_assert_int_eq(block_group_sums(&b, 0, xq, s), 1);
    int32_t want = 0;
    for (int i = 0; i < 32; i++)
        want += q[i] * xq[i];
    ck_assert_int_eq(s[0], want);
    float xs = 0.03f;
    ck_assert(block_partial_dot_q8_rows(q, 0.0125f, xq, xs, 32) == (float)want * 0.0125f * xs);
    ck_assert(!block_decode_supported(GGML_TYPE_IQ2_XXS));
    ck_assert_int_eq(block_decode_values(GGML_TYPE_Q4_K), 256);
    ck_assert_int_eq(block_decode_values(GGML_TYPE_F16), BLOCK_RUN);
}
END_TEST

static Suite *block_decode_suite(void)
{
    Suite *s = suite_create("block_decode");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_blocks_equal_the_reference);
    tcase_add_test(tc, test_partials_add_up_to_the_row);
    tcase_add_test(tc, test_q8_rows);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(block_decode_suite)
