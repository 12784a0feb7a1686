/* test_capture.c — the pass's steps at one position (capture.c, engine_tensors) and the
 * weight behind a step (step_weight.c):
 *   - a capture has every step of its layers and those outside them, in the pass's
 *     order, with the shapes -m tensors writes, and takes capture_bytes;
 *   - engine_tensors is a what-if: the KV cache, the logits and the next steps are as
 *     without it (bit for bit), and the newest position's captured logits are the ones
 *     decoding computed;
 *   - the steps hang together: result_norm is the last l_out normed, a knocked-out
 *     head's kqv is 0 and the layers before it are untouched;
 *   - summaries (min, max, mean, L2, histogram, masked values);
 *   - the weight behind a step: its row's dot product is the step's value (fp32 and
 *     int8 weights), the input group is quantized as the pass quantizes it;
 *   - --trace-tensors: each finished record carries its steps while the observer sees
 *     it, and a trace holds them and reads them back. */
#include <math.h>
#include <string.h>

#include "capture.h"
#include "engine.h"
#include "kernels.h"
#include "step_weight.h"
#include "testutil.h"
#include "trace.h"
#include "trace_read.h"

static model *m;
static tokenizer *tok;

static void open_model(const char *name, tensor_type weights)
{
    model_options mo;
    model_options_default(&mo);
    mo.weights = weights;
    llm_err err;
    ck_assert_msg(model_open(data_path(name), &mo, &m, &err) == LLM_OK, "%s", err.text);
    ck_assert_msg(tokenizer_open(data_path("tok512.bin"), 512, &tok, &err) == LLM_OK, "%s",
                  err.text);
}

static void setup_f32(void) { open_model("stories260K.bin", TENSOR_F32); }
static void setup_q8(void) { open_model("stories260K.bin", TENSOR_Q8_0); }

static void teardown(void)
{
    tokenizer_close(tok);
    model_close(m);
}

static engine *new_engine(void)
{
    engine_options o;
    engine_options_default(&o);
    o.ctx_len = 64;
    o.sampler.temperature = 0.0f;
    engine *e;
    llm_err err;
    ck_assert_msg(engine_new(m, tok, &o, &e, &err) == LLM_OK, "%s", err.text);
    return e;
}

static void prefill(engine *e, const char *text)
{
    int ids[64];
    ids[0] = TOKEN_BOS;
    int k = tokenizer_encode(tok, text, ids + 1, 63) + 1;
    llm_err err;
    ck_assert_int_eq(engine_prefill(e, ids, k, &err), LLM_OK);
}

static const captured_step *need(const tensor_capture *cap, hook_point p, int layer)
{
    const captured_step *s = capture_find(cap, p, layer);
    ck_assert_msg(s != NULL, "%s of layer %d is not in the capture", hook_name(p), layer);
    return s;
}

START_TEST(test_steps_order_and_shapes)
{
    engine *e = new_engine();
    prefill(e, "Once upon a time");
    const model_config *c = &m->config;
    int pos = engine_pos(e) - 1;
    llm_err err;
    const tensor_capture *cap = engine_tensors(e, pos, 0, c->n_layers - 1, &err);
    ck_assert_msg(cap != NULL, "%s", err.text);
    int per_layer = 0;
    for (int p = 0; p < HOOK_COUNT; p++)
        per_layer += hook_in_layer((hook_point)p) && hook_fires(c, (hook_point)p);
    ck_assert_int_eq(cap->n_steps, 3 + c->n_layers * per_layer);
    ck_assert_int_eq(cap->steps[0].point, HOOK_INP_EMBD);
    ck_assert_int_eq(cap->steps[cap->n_steps - 2].point, HOOK_RESULT_NORM);
    ck_assert_int_eq(cap->steps[cap->n_steps - 1].point, HOOK_RESULT_OUTPUT);
    for (int i = 1; i < cap->n_steps - 2; i++) { /* layer by layer, in hook.h's order */
        const captured_step *s = &cap->steps[i], *prev = &cap->steps[i - 1];
        ck_assert_int_eq(s->layer, (i - 1) / per_layer);
        if (prev->layer == s->layer)
            ck_assert_int_lt(prev->point, s->point);
    }
    ck_assert_uint_eq(cap->bytes, capture_bytes(c, pos, 0, c->n_layers - 1));
    const captured_step *q = need(cap, HOOK_QCUR, 2), *kq = need(cap, HOOK_KQ_SOFT_MAX, 1);
    ck_assert(q->n_dims == 2 && q->shape[0] == c->n_heads && q->shape[1] == c->head_size);
    ck_assert(kq->n_dims == 2 && kq->shape[0] == c->n_heads && kq->shape[1] == pos + 1);
    const captured_step *k = need(cap, HOOK_KCUR, 0), *g = need(cap, HOOK_FFN_GATE_PAR, 0);
    ck_assert(k->shape[0] == c->n_kv_heads && g->n_dims == 1 && g->n == c->hidden_dim);
    ck_assert_int_eq(need(cap, HOOK_RESULT_OUTPUT, -1)->n, c->vocab_size);
    for (int h = 0; h < c->n_heads; h++) { /* each head's weights sum to 1 */
        double sum = 0;
        for (int j = 0; j <= pos; j++)
            sum += kq->values[h * (pos + 1) + j];
        ck_assert_msg(fabs(sum - 1.0) < 1e-5, "head %d's weights sum to %g", h, sum);
    }
    /* one layer: its steps and those outside the layers */
    cap = engine_tensors(e, pos, 3, 3, &err);
    ck_assert_int_eq(cap->n_steps, 3 + per_layer);
    ck_assert_ptr_null(capture_find(cap, HOOK_L_OUT, 2));
    ck_assert_ptr_nonnull(capture_find(cap, HOOK_L_OUT, 3));
    ck_assert_ptr_null(engine_tensors(e, engine_pos(e), 0, 0, &err)); /* no such position */
    engine_free(e);
}
END_TEST

/* result_norm is the last layer's l_out normed; ffn_inp is l_out of the layer before
 * plus kqv_out; in the capture as in the pass. */
START_TEST(test_steps_hang_together)
{
    engine *e = new_engine();
    prefill(e, "Tim had a red ball");
    const model_config *c = &m->config;
    int pos = engine_pos(e) - 1, last = c->n_layers - 1;
    const tensor_capture *cap = engine_tensors(e, pos, 0, last, NULL);
    const float *out = need(cap, HOOK_L_OUT, last)->values;
    float xn[512];
    double ss = 0;
    for (int i = 0; i < c->dim; i++)
        ss += (double)out[i] * out[i];
    float scale = 1.0f / sqrtf((float)(ss / c->dim) + c->rms_eps);
    const float *rn = need(cap, HOOK_RESULT_NORM, -1)->values;
    for (int i = 0; i < c->dim; i++) {
        xn[i] = m->rms_final[i] * (out[i] * scale);
        ck_assert_msg(fabsf(xn[i] - rn[i]) <= 1e-5f * (1 + fabsf(rn[i])), "result_norm[%d]", i);
    }
    for (int l = 1; l < c->n_layers; l++) {
        const float *prev = need(cap, HOOK_L_OUT, l - 1)->values;
        const float *att = need(cap, HOOK_KQV_OUT, l)->values, *inp = need(cap, HOOK_FFN_INP, l)->values;
        for (int i = 0; i < c->dim; i++)
            ck_assert(fabsf(prev[i] + att[i] - inp[i]) <= 1e-5f * (1 + fabsf(inp[i])));
    }
    engine_free(e);
}
END_TEST

/* engine_tensors leaves the run alone: the same tokens and logits bit for bit as a
 * run without it; and the newest position's captured logits are decoding's. */
START_TEST(test_what_if_leaves_the_run)
{
    engine *a = new_engine(), *b = new_engine();
    prefill(a, "Lily saw a cat");
    prefill(b, "Lily saw a cat");
    llm_err err;
    for (int i = 0; i < 12; i++) {
        int ta, tb;
        const tensor_capture *cap = engine_tensors(b, engine_pos(b) - 1 - i % 3, 0, 4, &err);
        ck_assert_msg(cap != NULL, "%s", err.text);
        if (i % 3 == 0 && i > 0) { /* the newest position, which decoding ran alone */
            const captured_step *lo = need(cap, HOOK_RESULT_OUTPUT, -1);
            ck_assert_msg(memcmp(lo->values, engine_logits(b), sizeof(float) * lo->n) == 0,
                          "the captured logits of position %d are not decoding's", cap->pos);
        }
        ck_assert_int_eq(engine_step(a, &ta, &err), LLM_OK);
        ck_assert_int_eq(engine_step(b, &tb, &err), LLM_OK);
        ck_assert_int_eq(ta, tb);
        ck_assert(memcmp(engine_logits(a), engine_logits(b), sizeof(float) * m->config.vocab_size) == 0);
    }
    engine_free(a);
    engine_free(b);
}
END_TEST

/* A knocked-out head: its kqv is 0, the other heads' are as before, the steps before
 * its layer are the same bits, and the layers after move. */
START_TEST(test_knock_out_step_by_step)
{
    engine *e = new_engine();
    prefill(e, "The dog ran to the park");
    const model_config *c = &m->config;
    int pos = engine_pos(e) - 1, L = 2, H = 3, hs = c->head_size;
    size_t bytes = capture_bytes(c, pos, 0, c->n_layers - 1);
    const tensor_capture *cap = engine_tensors(e, pos, 0, c->n_layers - 1, NULL);
    float *saved = malloc(bytes);
    size_t at = 0;
    for (int i = 0; i < cap->n_steps; i++) {
        memcpy(saved + at, cap->steps[i].values, sizeof(float) * cap->steps[i].n);
        at += (size_t)cap->steps[i].n;
    }
    llm_err err;
    ck_assert_int_eq(steering_knock_out(engine_steering(e), L, H, true, &err), LLM_OK);
    cap = engine_tensors(e, pos, 0, c->n_layers - 1, NULL); /* the steering changed: a new pass */
    at = 0;
    for (int i = 0; i < cap->n_steps; i++) {
        const captured_step *s = &cap->steps[i];
        const float *old = saved + at;
        at += (size_t)s->n;
        bool same = memcmp(old, s->values, sizeof(float) * s->n) == 0;
        if (s->layer >= 0 && s->layer < L)
            ck_assert_msg(same, "%s of layer %d moved", hook_name(s->point), s->layer);
        if (s->point == HOOK_KQV && s->layer == L)
            for (int h = 0; h < c->n_heads; h++)
                for (int j = 0; j < hs; j++)
                    ck_assert(h == H ? s->values[h * hs + j] == 0.0f
                                     : s->values[h * hs + j] == old[h * hs + j]);
        if (s->point == HOOK_L_OUT && s->layer >= L)
            ck_assert_msg(!same, "l_out of layer %d did not move", s->layer);
    }
    free(saved);
    engine_free(e);
}
END_TEST

START_TEST(test_summaries)
{
    float v[20];
    for (int i = 0; i < 20; i++)
        v[i] = (float)i - 5.0f;
    v[3] = -INFINITY;
    step_tensor t;
    int shape[2] = {4, 5};
    capture_summarize("kq", 2, 2, shape, v, 20, &t);
    ck_assert_str_eq(t.name, "kq");
    ck_assert(t.layer == 2 && t.n == 20 && t.n_masked == 1 && t.n_first == STEP_TENSOR_FIRST);
    ck_assert(t.min == -5.0f && t.max == 14.0f);
    double sum = 0, ss = 0;
    unsigned counted = 0;
    for (int i = 0; i < 20; i++)
        if (i != 3) {
            sum += v[i];
            ss += v[i] * v[i];
        }
    ck_assert(fabs(t.mean - sum / 19) < 1e-6 && fabs(t.l2 - sqrt(ss)) < 1e-4);
    for (int b = 0; b < STEP_TENSOR_BINS; b++)
        counted += t.hist[b];
    ck_assert_uint_eq(counted, 19);
    unsigned want[STEP_TENSOR_BINS] = {0};
    for (int i = 0; i < 20; i++)
        if (i != 3) {
            int b = (int)((v[i] + 5.0) / 19.0 * STEP_TENSOR_BINS);
            want[b < STEP_TENSOR_BINS ? b : STEP_TENSOR_BINS - 1]++;
        }
    ck_assert(memcmp(t.hist, want, sizeof want) == 0);
    ck_assert(isinf(t.first[3]));
    float same[3] = {2, 2, 2};
    capture_summarize("x", -1, 1, shape, same, 3, &t);
    ck_assert_uint_eq(t.hist[STEP_TENSOR_BINS / 2], 3);
    float none[2] = {NAN, -INFINITY};
    capture_summarize("x", -1, 1, shape, none, 2, &t);
    ck_assert(t.n_masked == 2 && isnan(t.min) && isnan(t.l2));
}
END_TEST

/* The weight behind a step: the row's dot product is the step's value. */
static void check_weights(float tol)
{
    engine *e = new_engine();
    prefill(e, "She liked to sing");
    const model_config *c = &m->config;
    int pos = engine_pos(e) - 1;
    const tensor_capture *cap = engine_tensors(e, pos, 1, 1, NULL);
    static const hook_point exact[] = {HOOK_VCUR, HOOK_KQV_OUT, HOOK_FFN_GATE, HOOK_FFN_UP,
                                       HOOK_FFN_OUT, HOOK_RESULT_OUTPUT};
    step_weight w;
    llm_err err;
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        for (int k = 0; k < 4; k++) {
            int layer = exact[i] == HOOK_RESULT_OUTPUT ? -1 : 1;
            int row = k * 13 % capture_find(cap, exact[i], layer)->n;
            ck_assert_msg(step_weight_explain(m, cap, exact[i], layer, row, 1, &w, &err) == LLM_OK,
                          "%s", err.text);
            ck_assert_msg(fabsf(w.row_total - w.step_value) <= tol * (1 + fabsf(w.step_value)),
                          "%s row %d: the row's dot product %.9g, the pass %.9g", hook_name(exact[i]),
                          row, w.row_total, w.step_value);
            ck_assert(w.note == NULL && w.group == 1 && w.row == row);
            ck_assert_int_eq(w.quantized, m->layers[1].wq.type != TENSOR_F32);
        }
    ck_assert_int_eq(step_weight_explain(m, cap, HOOK_QCUR, 1, 5, 99, &w, &err), LLM_OK);
    ck_assert(w.note != NULL && w.group == w.groups - 1); /* after RoPE; the group clamped */
    ck_assert_int_eq(w.groups, (c->dim + 31) / 32);
    ck_assert(step_weight_explain(m, cap, HOOK_KQ, 1, 0, 0, &w, &err) != LLM_OK);
    ck_assert(step_weight_explain(m, cap, HOOK_VCUR, 3, 0, 0, &w, &err) != LLM_OK); /* not captured */
    engine_free(e);
}

START_TEST(test_weight_f32) { check_weights(1e-5f); }
END_TEST

/* int8 weights: the input group is quantized as the pass does (xq = round(x / xs)). */
START_TEST(test_weight_q8)
{
    check_weights(1e-5f);
    engine *e = new_engine();
    prefill(e, "She liked to sing");
    const tensor_capture *cap = engine_tensors(e, engine_pos(e) - 1, 0, 0, NULL);
    step_weight w;
    llm_err err;
    ck_assert_int_eq(step_weight_explain(m, cap, HOOK_FFN_OUT, 0, 7, 0, &w, &err), LLM_OK);
    ck_assert(w.quantized && w.xs > 0);
    float amax = 0;
    for (int i = 0; i < w.group_len; i++)
        amax = fmaxf(amax, fabsf(w.x[i]));
    ck_assert(w.xs == amax / 127.0f);
    for (int i = 0; i < w.group_len; i++)
        ck_assert_int_eq(w.xq[i], (int)lrintf(w.x[i] * (1.0f / w.xs)));
    ck_assert_int_eq(w.input, HOOK_FFN_GATE_PAR);
    engine_free(e);
}
END_TEST

/* --trace-tensors: records carry their steps while observed; the trace round-trips. */
static int observed, with_tensors;
static trace_writer *tw;
static void observe(void *user, const step_record *r)
{
    (void)user;
    int per_layer = 0;
    for (int p = 0; p < HOOK_COUNT; p++)
        per_layer += hook_in_layer((hook_point)p) && hook_fires(&m->config, (hook_point)p);
    observed++;
    with_tensors += r->tensors != NULL && r->n_tensors == 3 + 2 * per_layer;
    trace_write(tw, r);
}

START_TEST(test_trace_tensors)
{
    engine_options o;
    engine_options_default(&o);
    o.ctx_len = 64;
    o.sampler.temperature = 0.0f;
    o.record_tensors = true;
    o.tensor_first = 1;
    o.tensor_last = 2;
    engine *e;
    llm_err err;
    ck_assert_int_eq(engine_new(m, tok, &o, &e, &err), LLM_OK);
    const char *path = temp_path("tensors.jsonl");
    ck_assert_int_eq(trace_open(path, tok, &m->config, false, &tw, &err), LLM_OK);
    trace_run run = {.mode = "generate", .m = m, .tensors = true, .tensor_first = 1, .tensor_last = 2};
    trace_describe(tw, &run);
    engine_set_observer(e, observe, NULL);
    prefill(e, "A big tree");
    int t;
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(engine_step(e, &t, &err), LLM_OK);
    engine_finish(e);
    ck_assert_int_eq(observed, engine_pos(e));
    ck_assert_int_eq(with_tensors, observed);
    ck_assert_ptr_null(engine_record(e, 1)->tensors); /* only while observed */
    const tensor_capture *cap = engine_tensors(e, 2, 1, 2, NULL);
    ck_assert_int_eq(trace_close(tw, &err), LLM_OK);
    trace_reader *r;
    ck_assert_int_eq(trace_read_file(path, &r, &err), LLM_OK);
    const trace_header *h = trace_reader_header(r);
    ck_assert(h->tensors && h->tensor_first == 1 && h->tensor_last == 2);
    ck_assert_int_eq(trace_reader_problem_count(r), 0);
    const step_record *rec = trace_reader_record(r, 2);
    ck_assert_int_eq(rec->n_tensors, cap->n_steps);
    for (int i = 0; i < cap->n_steps; i++) {
        step_tensor want;
        capture_summarize_step(&cap->steps[i], &want);
        const step_tensor *got = &rec->tensors[i];
        ck_assert_str_eq(got->name, want.name);
        ck_assert(got->layer == want.layer && got->n == want.n && got->n_dims == want.n_dims);
        ck_assert(fabsf(got->l2 - want.l2) <= 1e-5f * want.l2 && got->n_first == want.n_first);
        ck_assert(memcmp(got->hist, want.hist, sizeof want.hist) == 0);
        for (int k = 0; k < want.n_first; k++)
            ck_assert(fabsf(got->first[k] - want.first[k]) <= 1e-5f * (1 + fabsf(want.first[k])));
    }
    trace_reader_free(r);
    remove(path);
    engine_free(e);
}
END_TEST

static Suite *capture_suite(void)
{
    Suite *s = suite_create("capture");
    TCase *tc = tcase_create("f32");
    tcase_add_checked_fixture(tc, setup_f32, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_steps_order_and_shapes);
    tcase_add_test(tc, test_steps_hang_together);
    tcase_add_test(tc, test_what_if_leaves_the_run);
    tcase_add_test(tc, test_knock_out_step_by_step);
    tcase_add_test(tc, test_weight_f32);
    tcase_add_test(tc, test_trace_tensors);
    suite_add_tcase(s, tc);
    TCase *q8 = tcase_create("q8");
    tcase_add_checked_fixture(q8, setup_q8, teardown);
    tcase_set_timeout(q8, 120);
    tcase_add_test(q8, test_weight_q8);
    tcase_add_test(q8, test_what_if_leaves_the_run);
    suite_add_tcase(s, q8);
    TCase *plain = tcase_create("summaries");
    tcase_add_test(plain, test_summaries);
    suite_add_tcase(s, plain);
    return s;
}

TEST_MAIN(capture_suite)
