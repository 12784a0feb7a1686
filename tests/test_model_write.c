/* test_model_write.c — writing models (model_write.h, what llmchat-convert does): a model
 * written as GGUF F32 reads back with the same shape, numbers and tokenizer; as GGUF
 * Q8_0 each value within half a step (and the half-precision scale's rounding) (rows of 172 stay F32, as llama.cpp
 * needs); a llama2.c v1 file holds the numbers exactly, a v2 file the int8 values of a
 * Q8_0 GGUF it was written from; tokenizer.bin round-trips; a model whose RoPE base
 * llama2.c cannot store is refused, and so is any model whose description is not
 * llama's (each field that differs), whatever its family's name. */
#include <math.h>
#include <string.h>

#include "ggml_type.h"
#include "gguf.h"
#include "model.h"
#include "model_write.h"
#include "template.h"
#include "testutil.h"
#include "tokenizer.h"

static model *open_ok(const char *path, tensor_type type)
{
    model_options opt;
    model_options_default(&opt);
    opt.weights = type;
    model *m = NULL;
    llm_err err;
    ck_assert_msg(model_open(path, &opt, &m, &err) == LLM_OK, "%s", err.text);
    return m;
}

static void rows_equal(const tensor *a, const tensor *b, const char *what)
{
    ck_assert_int_eq(a->rows, b->rows);
    ck_assert_int_eq(a->cols, b->cols);
    float *x = malloc(sizeof(float) * (size_t)a->cols), *y = malloc(sizeof(float) * (size_t)a->cols);
    for (int r = 0; r < a->rows; r++) {
        quant_dequantize_row(x, a, r);
        quant_dequantize_row(y, b, r);
        ck_assert_msg(memcmp(x, y, sizeof(float) * (size_t)a->cols) == 0, "%s row %d", what, r);
    }
    free(x);
    free(y);
}

/* Every matrix and norm of a and b hold the same numbers. */
static void models_equal(const model *a, const model *b)
{
    ck_assert_int_eq(a->config.dim, b->config.dim);
    ck_assert_int_eq(a->config.n_layers, b->config.n_layers);
    ck_assert_int_eq(a->config.vocab_size, b->config.vocab_size);
    ck_assert_int_eq(a->config.n_kv_heads, b->config.n_kv_heads);
    ck_assert_int_eq(a->config.shared_classifier, b->config.shared_classifier);
    ck_assert_float_eq(a->config.rope_base, b->config.rope_base);
    ck_assert_float_eq(a->config.rms_eps, b->config.rms_eps);
    rows_equal(&a->token_embedding, &b->token_embedding, "token_embd");
    rows_equal(&a->wcls, &b->wcls, "output");
    ck_assert(memcmp(a->rms_final, b->rms_final, sizeof(float) * (size_t)a->config.dim) == 0);
    for (int l = 0; l < a->config.n_layers; l++) {
        const model_layer *x = &a->layers[l], *y = &b->layers[l];
        rows_equal(&x->wq, &y->wq, "wq");
        rows_equal(&x->wk, &y->wk, "wk");
        rows_equal(&x->wv, &y->wv, "wv");
        rows_equal(&x->wo, &y->wo, "wo");
        rows_equal(&x->w1, &y->w1, "w1");
        rows_equal(&x->w2, &y->w2, "w2");
        rows_equal(&x->w3, &y->w3, "w3");
        ck_assert(memcmp(x->rms_att, y->rms_att, sizeof(float) * (size_t)a->config.dim) == 0);
        ck_assert(memcmp(x->rms_ffn, y->rms_ffn, sizeof(float) * (size_t)a->config.dim) == 0);
    }
}

/* The writers through an output, as llmchat-convert uses them: the file opened, written
 * and committed, or abandoned when the writer fails (nothing left behind). */
typedef struct {
    const model *m;
    const tokenizer *tok;
    const char *tmpl;
    model_write_type type;
    int what; /* 0 GGUF, 1 llama2.c, 2 tokenizer.bin */
} write_job;

static llm_status write_file(const write_job *j, const char *path, llm_err *err)
{
    output_file *out;
    llm_status st = output_file_open(path, "the test's file", OUTPUT_FILE_MODE, &out, err);
    if (st != LLM_OK)
        return st;
    st = j->what == 0   ? model_write_gguf(j->m, j->tok, j->tmpl, j->type, out, NULL, err)
         : j->what == 1 ? model_write_llama2c(j->m, j->type, out, NULL, err)
                        : model_write_tokenizer_bin(j->tok, out, err);
    if (st != LLM_OK) {
        output_file_abandon(out);
        return st;
    }
    return output_file_commit(out, err);
}

static llm_status write_gguf(const model *m, const tokenizer *tok, const char *tmpl,
                             model_write_type type, const char *path, llm_err *err)
{
    write_job j = {m, tok, tmpl, type, 0};
    return write_file(&j, path, err);
}

static llm_status write_llama2c(const model *m, model_write_type type, const char *path,
                                llm_err *err)
{
    write_job j = {m, NULL, NULL, type, 1};
    return write_file(&j, path, err);
}

static llm_status write_tokenizer(const tokenizer *tok, const char *path, llm_err *err)
{
    write_job j = {NULL, tok, NULL, MODEL_WRITE_F32, 2};
    return write_file(&j, path, err);
}

START_TEST(test_gguf_f32_round_trip)
{
    model *m = open_ok(data_path("stories260K.bin"), TENSOR_F32);
    tokenizer *tok;
    llm_err err;
    ck_assert(tokenizer_open(data_path("tok512.bin"), 512, &tok, &err) == LLM_OK);
    const char *path = temp_path("w.gguf");
    ck_assert_msg(write_gguf(m, tok, template_kind_jinja(TEMPLATE_CHATML), MODEL_WRITE_F32, path,
                             &err) == LLM_OK,
                  "%s", err.text);
    model *g = open_ok(path, TENSOR_F32);
    ck_assert_int_eq(g->format, MODEL_FORMAT_GGUF);
    ck_assert_int_eq(g->config.seq_len, 512);
    models_equal(m, g);
    ck_assert_int_eq(g->owned_bytes, 0); /* F32, used in place */

    /* the tokenizer: the same pieces, scores, special ids and encodings */
    tokenizer *t2;
    ck_assert(tokenizer_from_gguf(g->meta, path, 512, &t2, &err) == LLM_OK);
    for (int id = 3; id < 512; id++) {
        ck_assert_str_eq(tokenizer_piece(t2, id), tokenizer_piece(tok, id));
        ck_assert_float_eq(tokenizer_score(t2, id), tokenizer_score(tok, id));
    }
    ck_assert_str_eq(tokenizer_piece(t2, 1), "<s>"); /* not tokenizer.bin's "\n<s>\n" */
    ck_assert(tokenizer_is_control(t2, 2));
    int a[64], b[64];
    int na = tokenizer_encode(tok, "Once upon a time, Lily saw a big dog.", a, 64);
    int nb = tokenizer_encode(t2, "Once upon a time, Lily saw a big dog.", b, 64);
    ck_assert_int_eq(na, nb);
    ck_assert(memcmp(a, b, sizeof(int) * (size_t)na) == 0);
    template_kind k;
    ck_assert(template_kind_detect(gguf_get_string(g->meta, "tokenizer.chat_template", NULL), &k));
    ck_assert_int_eq(k, TEMPLATE_CHATML);

    /* and on to llama2.c v1: exactly the same numbers again */
    const char *v1 = temp_path("w-v1.bin");
    ck_assert_msg(write_llama2c(g, MODEL_WRITE_F32, v1, &err) == LLM_OK, "%s", err.text);
    model *back = open_ok(v1, TENSOR_F32);
    ck_assert_int_eq(back->format, MODEL_FORMAT_LLAMA2C_V1);
    models_equal(m, back);

    model_close(back);
    tokenizer_close(t2);
    model_close(g);
    tokenizer_close(tok);
    model_close(m);
    remove(path);
    remove(v1);
}
END_TEST

START_TEST(test_gguf_q8_0_and_llama2c_v2)
{
    model *m = open_ok(data_path("stories260K.bin"), TENSOR_F32);
    tokenizer *tok;
    llm_err err;
    ck_assert(tokenizer_open(data_path("tok512.bin"), 512, &tok, &err) == LLM_OK);
    const char *path = temp_path("w8.gguf");
    ck_assert(write_gguf(m, tok, NULL, MODEL_WRITE_Q8_0, path, &err) == LLM_OK);

    /* Q8_0 where rows are whole blocks, F32 for ffn_down (rows of 172) */
    size_t size;
    unsigned char *buf = read_whole_file(path, &size);
    gguf *gg;
    ck_assert(gguf_parse(buf, size, path, &gg, &err) == LLM_OK);
    ck_assert_uint_eq(gguf_find_tensor(gg, "blk.0.attn_q.weight")->type, GGML_TYPE_Q8_0);
    ck_assert_uint_eq(gguf_find_tensor(gg, "blk.0.ffn_gate.weight")->type, GGML_TYPE_Q8_0);
    ck_assert_uint_eq(gguf_find_tensor(gg, "blk.0.ffn_down.weight")->type, GGML_TYPE_F32);
    ck_assert_uint_eq(gguf_find_tensor(gg, "blk.0.attn_norm.weight")->type, GGML_TYPE_F32);
    ck_assert_ptr_null(gguf_find_tensor(gg, "output.weight")); /* shared classifier */
    ck_assert_ptr_null(gguf_get_string(gg, "tokenizer.chat_template", NULL));
    gguf_free(gg);
    free(buf);

    /* each value within half a step of the fp32 original, plus what the half-precision
     * scale adds (127 steps x 2^-11 of a step) */
    model *g = open_ok(path, TENSOR_F32);
    float x[192], y[192];
    for (int l = 0; l < 5; l++) {
        const tensor *ta = &m->layers[l].wq, *tb = &g->layers[l].wq;
        for (int r = 0; r < ta->rows; r++) {
            quant_dequantize_row(x, ta, r);
            quant_dequantize_row(y, tb, r);
            for (int b = 0; b < ta->cols; b += 32) {
                float amax = 0;
                for (int i = b; i < b + 32; i++)
                    amax = fmaxf(amax, fabsf(x[i]));
                for (int i = b; i < b + 32; i++)
                    ck_assert_float_eq_tol(y[i], x[i], amax / 127 * (0.5f + 127.0f / 2048) + 1e-9f);
            }
        }
        rows_equal(&m->layers[l].w2, &g->layers[l].w2, "w2 (F32)");
    }

    /* written as llama2.c v2 from the GGUF loaded in Q8_0 (its blocks used in place): the
     * same int8 values and (in fp32) the same scales */
    model *gq = open_ok(path, TENSOR_Q8_0);
    const char *v2 = temp_path("w-v2.bin");
    ck_assert_msg(write_llama2c(gq, MODEL_WRITE_Q8_0, v2, &err) == LLM_OK, "%s", err.text);
    model *back = open_ok(v2, TENSOR_Q8_0);
    ck_assert_int_eq(back->format, MODEL_FORMAT_LLAMA2C_V2);
    ck_assert_int_eq(back->file_group, 32);
    const tensor *qa = &gq->layers[2].wk, *qb = &back->layers[2].wk;
    ck_assert_int_eq(qa->type, TENSOR_Q8_0_BLOCKS);
    ck_assert_int_eq(qb->type, TENSOR_Q8_0);
    ck_assert_int_eq(qb->stride, qa->cols);
    for (int r = 0; r < qa->rows; r++)
        for (int blk = 0; blk < qa->cols / 32; blk++) {
            const uint8_t *block = tensor_block(qa, r, blk);
            const size_t at = (size_t)r * qb->stride + (size_t)blk * 32;
            ck_assert(memcmp(quant_block_values(block), qb->q + at, 32) == 0);
            float scale = quant_block_scale(block);
            ck_assert_float_eq_tol(qb->scale[at / 32], scale, fabsf(scale) * 1e-6f);
        }

    model_close(back);
    model_close(gq);
    model_close(g);
    tokenizer_close(tok);
    model_close(m);
    remove(path);
    remove(v2);
}
END_TEST

START_TEST(test_tokenizer_bin_round_trip)
{
    tokenizer *a, *b;
    llm_err err;
    ck_assert(tokenizer_open(data_path("ggml-vocab-llama-spm.gguf"), 32000, &a, &err) == LLM_OK);
    const char *path = temp_path("tok.bin");
    ck_assert(write_tokenizer(a, path, &err) == LLM_OK);
    ck_assert(tokenizer_open(path, 32000, &b, &err) == LLM_OK);
    for (int id = 0; id < 32000; id++) {
        ck_assert_str_eq(tokenizer_piece(a, id), tokenizer_piece(b, id));
        ck_assert_float_eq(tokenizer_score(a, id), tokenizer_score(b, id));
    }
    const char *text = "Hello, world! Ça va? 日本語 <s>";
    int x[64], y[64];
    int nx = tokenizer_encode(a, text, x, 64), ny = tokenizer_encode(b, text, y, 64);
    ck_assert_int_eq(nx, ny);
    ck_assert(memcmp(x, y, sizeof(int) * (size_t)nx) == 0);
    tokenizer_close(a);
    tokenizer_close(b);
    remove(path);
}
END_TEST

START_TEST(test_refusals)
{
    llm_err err;
    /* llama2.c cannot store another RoPE base */
    model *m = open_ok(data_path("stories260K.bin"), TENSOR_F32);
    m->config.rope_base = 1e6f;
    const char *path = temp_path("refused.bin");
    ck_assert_int_eq(write_llama2c(m, MODEL_WRITE_F32, path, &err), LLM_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.text, "RoPE base 1e+06"));
    ck_assert_int_ne(access(path, F_OK), 0); /* nothing left behind */
    m->config.rope_base = 10000.0f;
    /* a tokenizer of another size */
    tokenizer *tok;
    ck_assert(tokenizer_open(data_path("tokenizer.bin"), 32000, &tok, &err) == LLM_OK);
    ck_assert_int_eq(write_gguf(m, tok, NULL, MODEL_WRITE_Q8_0, path, &err), LLM_ERR_MISMATCH);
    /* a description other than llama's, by any one field */
    const model_arch llama = m->config.arch;
    for (int k = 0; k < 6; k++) {
        model_arch *a = &m->config.arch;
        *a = llama;
        a->name = "qwen9";
        switch (k) {
        case 0: a->rope_layout = MODEL_ROPE_HALVES; break;
        case 1: a->qk_norm = true; break;
        case 2: a->post_norms = true; break;
        case 3: a->final_softcap = 30.0f; break;
        case 4: a->embed_scale = 2.0f; break;
        case 5: a->sliding_window = 8; break;
        }
        ck_assert(!model_arch_is_llama(&m->config));
        ck_assert_int_eq(write_llama2c(m, MODEL_WRITE_F32, path, &err), LLM_ERR_ARG);
        ck_assert_msg(strstr(err.text, "a qwen9 model cannot be stored in a llama2.c file"), "%s",
                      err.text);
        ck_assert_int_eq(write_gguf(m, tok, NULL, MODEL_WRITE_F32, path, &err), LLM_ERR_ARG);
        ck_assert_msg(strstr(err.text, "a qwen9 model is written as the GGUF file it came from"),
                      "%s", err.text);
        ck_assert_int_ne(access(path, F_OK), 0);
    }
    m->config.arch = llama;
    ck_assert(model_arch_is_llama(&m->config));
    tokenizer_close(tok);
    /* a directory that does not exist */
    ck_assert_int_eq(write_llama2c(m, MODEL_WRITE_F32, "/nonexistent-dir/x.bin", &err), LLM_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err.text, "/nonexistent-dir/x.bin"));
    model_close(m);
}
END_TEST

static Suite *model_write_suite(void)
{
    Suite *s = suite_create("model_write");
    TCase *core = tcase_create("core");
    tcase_set_timeout(core, 120);
    tcase_add_test(core, test_gguf_f32_round_trip);
    tcase_add_test(core, test_gguf_q8_0_and_llama2c_v2);
    tcase_add_test(core, test_tokenizer_bin_round_trip);
    tcase_add_test(core, test_refusals);
    suite_add_tcase(s, core);
    return s;
}

TEST_MAIN(model_write_suite)
