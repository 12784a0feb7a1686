/* test_control_vector.c — control vectors: the GGUF reader refuses hostile files with a
 * message and reads what it writes; steering sums vectors by scale and layer range as
 * llama.cpp does; applying a vector in the forward pass equals adding it to the
 * residual stream by hand (one-token and batch paths); /vector make moves the model
 * toward the first text; the trace records the vectors (with their files' checksums)
 * and reads them back; a vector for layers the model lacks is named or refused. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "control_vector.h"
#include "control_vectors.h"
#include "engine.h"
#include "ggml_type.h"
#include "gguf.h"
#include "knock_out.h"
#include "quant.h"
#include "steering.h"
#include "testutil.h"
#include "trace.h"
#include "trace_read.h"
#include "transformer.h"
#include "vector_command.h"

/* ---- hostile files ---- */

typedef struct {
    const char *name;
    uint32_t type;
    uint32_t n_dims;
    uint64_t dims[2];
    float fill; /* every value */
} spec;

/* Writes a GGUF holding the tensors of specs (values `fill`) to path. */
static void write_gguf(const char *path, const spec *specs, int n)
{
    gguf_writer *w = gguf_writer_new(0);
    ck_assert_ptr_nonnull(w);
    gguf_writer_add_string(w, "general.architecture", "controlvector");
    uint64_t bytes[8];
    for (int i = 0; i < n; i++) {
        bytes[i] = gguf_writer_add_tensor(w, specs[i].name, specs[i].type, specs[i].n_dims,
                                          specs[i].dims);
        ck_assert_uint_gt(bytes[i], 0);
    }
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    llm_err err;
    ck_assert_int_eq(gguf_writer_write_header(w, f, path, &err), LLM_OK);
    for (int i = 0; i < n; i++) {
        unsigned char buf[4096] = {0};
        ck_assert_uint_le(bytes[i], sizeof buf);
        if (specs[i].type == GGML_TYPE_F32)
            for (uint64_t j = 0; j < bytes[i] / 4; j++)
                memcpy(buf + 4 * j, &specs[i].fill, 4);
        ck_assert_uint_eq(fwrite(buf, 1, bytes[i], f), bytes[i]);
        ck_assert_int_eq(gguf_writer_pad(w, f, bytes[i], path, &err), LLM_OK);
    }
    fclose(f);
    gguf_writer_free(w);
}

/* Loading path fails with status st and a message containing want. */
static void refused(const char *path, llm_status st, const char *want)
{
    control_vector *cv = (control_vector *)1;
    llm_err err;
    err.text[0] = '\0';
    ck_assert_int_eq(control_vector_load(path, &cv, &err), st);
    ck_assert_ptr_null(cv);
    ck_assert_msg(strstr(err.text, want), "message '%s' lacks '%s'", err.text, want);
}

START_TEST(test_hostile_files)
{
    const char *p = temp_path("bad.gguf");
    spec good = {"direction.1", GGML_TYPE_F32, 1, {64, 1}, 0.5f};
    spec s[2];

    s[0] = good;
    s[0].name = "direction.x";
    write_gguf(p, s, 1);
    refused(p, LLM_ERR_FORMAT, "is not called direction.N");
    s[0].name = "blk.0.attn_q.weight";
    write_gguf(p, s, 1);
    refused(p, LLM_ERR_FORMAT, "not a control vector");
    s[0].name = "direction.0";
    write_gguf(p, s, 1);
    refused(p, LLM_ERR_FORMAT, "start at 1");
    s[0].name = "direction.4096";
    write_gguf(p, s, 1);
    refused(p, LLM_ERR_FORMAT, "is not called direction.N");
    s[0] = good;
    s[0].type = GGML_TYPE_F16;
    write_gguf(p, s, 1);
    refused(p, LLM_ERR_FORMAT, "a control vector is F32");
    s[0] = good;
    s[0].n_dims = 2;
    s[0].dims[0] = 32;
    s[0].dims[1] = 2;
    write_gguf(p, s, 1);
    refused(p, LLM_ERR_FORMAT, "one row");
    s[0] = good;
    s[1] = good;
    s[1].name = "direction.2";
    s[1].dims[0] = 32;
    write_gguf(p, s, 2);
    refused(p, LLM_ERR_FORMAT, "has 32 values but the tensors before it 64");
    s[0] = good;
    s[0].fill = NAN;
    write_gguf(p, s, 1);
    refused(p, LLM_ERR_NUMERIC, "NaN or infinite");
    write_gguf(p, s, 0);
    refused(p, LLM_ERR_FORMAT, "holds no direction.N tensors");

    /* not GGUF at all, cut short, absent */
    FILE *f = fopen(p, "wb");
    fputs("not a gguf file, just text\n", f);
    fclose(f);
    refused(p, LLM_ERR_FORMAT, p);
    write_gguf(p, &good, 1);
    size_t size;
    unsigned char *whole = read_whole_file(p, &size);
    f = fopen(p, "wb");
    fwrite(whole, 1, size - 100, f);
    fclose(f);
    free(whole);
    refused(p, LLM_ERR_FORMAT, p);
    remove(p);
    refused(p, LLM_ERR_IO, "cannot open control vector");
    refused(source_dir(), LLM_ERR_IO, "not a regular file");
}
END_TEST

/* What control_vector_write writes, control_vector_parse reads back exactly; layer 0
 * is never written (llama.cpp refuses direction.0). */
START_TEST(test_write_read_back)
{
    control_vector cv = {.n_embd = 8, .n_layers = 4, .data = calloc(32, sizeof(float))};
    for (int i = 8; i < 32; i++)
        cv.data[i] = (float)i * 0.25f - 3.0f;
    const char *p = temp_path("rt.gguf");
    llm_err err;
    ck_assert_int_eq(control_vector_write(&cv, p, "llama", &err), LLM_OK);
    control_vector *back;
    ck_assert_msg(control_vector_load(p, &back, &err) == LLM_OK, "%s", err.text);
    ck_assert_int_eq(back->n_embd, 8);
    ck_assert_int_eq(back->n_layers, 4);
    for (int i = 0; i < 8; i++)
        ck_assert_float_eq(back->data[i], 0.0f);
    ck_assert_mem_eq(back->data + 8, cv.data + 8, 24 * sizeof(float));
    ck_assert_float_eq(back->suggested_scale, 0.0f); /* none written: none read */
    control_vector_free(back);
    /* the scale it suggests goes with it; steering_load applies it when asked for NAN
     * (another file: this process has read rt.gguf, so no writer may replace it) */
    ck_assert_int_eq(control_vector_write(&cv, p, "llama", &err), LLM_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.text, "this run reads that file"));
    p = temp_path("rt-scaled.gguf");
    cv.suggested_scale = 0.34f;
    ck_assert_int_eq(control_vector_write(&cv, p, "llama", &err), LLM_OK);
    ck_assert_msg(control_vector_load(p, &back, &err) == LLM_OK, "%s", err.text);
    ck_assert_float_eq(back->suggested_scale, 0.34f);
    control_vector_free(back);
    steering *s;
    ck_assert_int_eq(steering_new(4, 1, 8, &s, &err), LLM_OK);
    ck_assert_int_eq(steering_load(s, p, "a", NAN, &err), LLM_OK);
    ck_assert_int_eq(steering_load(s, p, "b", 0.5f, &err), LLM_OK);
    ck_assert_float_eq(steering_state(s)->vectors[0].scale, 0.34f);
    ck_assert_float_eq(steering_state(s)->vectors[1].scale, 0.5f);
    steering_free(s);
    free(cv.data);
    remove(p);
}
END_TEST

/* ---- steering's sum ---- */

static const char *vector_file(const char *name, int n_layers, int dim, float base)
{
    control_vector cv = {.n_embd = dim, .n_layers = n_layers,
                         .data = calloc((size_t)n_layers * dim, sizeof(float))};
    for (int l = 1; l < n_layers; l++)
        for (int j = 0; j < dim; j++)
            cv.data[l * dim + j] = base * (float)l + 0.01f * (float)j;
    const char *p = temp_path(name);
    llm_err err;
    ck_assert_int_eq(control_vector_write(&cv, p, "llama", &err), LLM_OK);
    free(cv.data);
    return p;
}

/* Two vectors sum by scale, after layers 1..n_layers-1 only (never 0), within the
 * range; dropping and rescaling change the sum; each change is a new state and the
 * old ones stay readable. */
START_TEST(test_steering_sum)
{
    enum { L = 5, D = 4 };
    steering *s;
    llm_err err;
    ck_assert_int_eq(steering_new(L, 2, D, &s, &err), LLM_OK);
    ck_assert_ptr_null(steering_sum(s));
    ck_assert_ptr_null(steering_state(s));
    const char *a = vector_file("a.gguf", L, D, 1.0f);
    const char *b = vector_file("b.gguf", 3, D, 10.0f); /* shorter: layers 1, 2 */
    ck_assert_msg(steering_load(s, a, NULL, 0.5f, &err) == LLM_OK, "%s", err.text);
    ck_assert_msg(steering_load(s, b, "bee", -1.0f, &err) == LLM_OK, "%s", err.text);
    const intervention *two = steering_state(s);
    ck_assert_int_eq(two->n_vectors, 2);
    const char *n0 = two->vectors[0].name; /* the file's base name without .gguf */
    ck_assert_msg(strlen(n0) > 2 && !strcmp(n0 + strlen(n0) - 2, "-a"), "named '%s'", n0);
    ck_assert_str_eq(two->vectors[1].name, "bee");
    const float *sum = steering_sum(s);
    for (int j = 0; j < D; j++) {
        ck_assert_float_eq(sum[j], 0.0f);
        for (int l = 1; l < L; l++) {
            float want = 0.5f * ((float)l + 0.01f * (float)j);
            if (l < 3)
                want += -1.0f * (10.0f * (float)l + 0.01f * (float)j);
            ck_assert_float_eq_tol(sum[l * D + j], want, 1e-6);
        }
    }
    ck_assert_int_eq(steering_layers(s, 2, 3, &err), LLM_OK);
    for (int l = 0; l < L; l++)
        ck_assert_float_eq(sum[l * D] == 0.0f, l < 2 || l > 3);
    ck_assert_int_eq(steering_layers(s, 3, 9, &err), LLM_ERR_ARG);
    ck_assert_int_eq(steering_layers(s, 3, 2, &err), LLM_ERR_ARG);
    ck_assert_int_eq(steering_drop(s, "bee", &err), LLM_OK);
    ck_assert_int_eq(steering_rescale(s, "bee", 1.0f, &err), LLM_ERR_ARG);
    ck_assert_float_eq_tol(sum[2 * D], 0.5f * 2.0f, 1e-6);
    ck_assert_int_eq(steering_load(s, b, "bee", 1.0f, &err), LLM_OK);
    ck_assert_int_eq(steering_load(s, b, "bee", 1.0f, &err), LLM_ERR_ARG); /* the name is taken */
    ck_assert_int_eq(two->n_vectors, 2); /* an old state stays as it was */
    ck_assert_float_eq(two->vectors[1].scale, -1.0f);
    /* heads: knocked out and back, recorded in the state, set again by steering_set */
    ck_assert_ptr_null(steering_mask(s));
    ck_assert_int_eq(steering_knock_out(s, 3, 1, true, &err), LLM_OK);
    ck_assert_int_eq(steering_knock_out(s, 5, 0, true, &err), LLM_ERR_ARG);
    const intervention *ko = steering_state(s);
    ck_assert_int_eq(ko->n_heads_out, 1);
    ck_assert_int_eq(ko->heads_out[0], 3 * 2 + 1);
    char shown[128];
    steering_format(ko, shown, sizeof shown);
    ck_assert_msg(strstr(shown, "| heads out L4H2"), "%s", shown);
    ck_assert_int_eq(steering_knock_out(s, 3, 1, false, &err), LLM_OK);
    ck_assert_ptr_null(steering_mask(s));
    ck_assert_int_eq(steering_set(s, ko, &err), LLM_OK);
    ck_assert(steering_is_out(s, 3, 1) && !steering_is_out(s, 3, 0));
    ck_assert_ptr_nonnull(steering_mask(s));
    ck_assert_int_eq(steering_set(s, NULL, &err), LLM_OK);
    ck_assert_ptr_null(steering_sum(s));
    ck_assert_ptr_null(steering_mask(s));
    ck_assert_int_eq(steering_state(s)->n_vectors, 0);
    /* a vector of another width is refused, naming both widths */
    steering *wide;
    ck_assert_int_eq(steering_new(L, 2, 2 * D, &wide, &err), LLM_OK);
    ck_assert_int_eq(steering_load(wide, a, NULL, 1.0f, &err), LLM_ERR_MISMATCH);
    ck_assert_msg(strstr(err.text, "4 values per layer but the model 8"), "%s", err.text);
    steering_free(wide);
    steering_free(s);
    remove(a);
    remove(b);
}
END_TEST

/* Experts knocked out: refused on dense layers, out of range, or past what the router
 * needs (n_experts_used left in a layer); each change a new state listing [layer,
 * expert] in order; steering_check and steering_set take a state back (a trace's), and
 * refuse one this model cannot run, changing nothing. */
START_TEST(test_steering_experts)
{
    steering *s;
    llm_err err;
    ck_assert_int_eq(steering_new(3, 2, 4, &s, &err), LLM_OK);
    ck_assert_int_eq(steering_knock_out_expert(s, 0, 1, true, &err), LLM_ERR_ARG);
    ck_assert_msg(strstr(err.text, "the model has no experts"), "%s", err.text);
    ck_assert_ptr_null(steering_state(s));
    ck_assert_int_eq(steering_experts(s, 4, 5, &err), LLM_ERR_ARG);
    ck_assert_int_eq(steering_experts(s, 4, 2, &err), LLM_OK);
    ck_assert_int_eq(steering_knock_out_expert(s, 3, 0, true, &err), LLM_ERR_ARG);
    ck_assert_msg(strstr(err.text, "no layer 3: the model has layers 0-2 (numbered from 0)"), "%s",
                  err.text);
    ck_assert_int_eq(steering_knock_out_expert(s, 0, 4, true, &err), LLM_ERR_ARG);
    ck_assert_msg(strstr(err.text, "no expert 4 in layer 0: the model has experts 0-3 a layer"),
                  "%s", err.text);
    ck_assert_int_eq(steering_knock_out_expert(s, 2, 3, true, &err), LLM_OK);
    const intervention *one = steering_state(s);
    ck_assert_int_eq(steering_knock_out_expert(s, 0, 1, true, &err), LLM_OK);
    ck_assert_int_eq(steering_knock_out_expert(s, 0, 2, true, &err), LLM_OK);
    /* 2 of layer 0's 4 left: a third is refused, the same one again is no change */
    ck_assert_int_eq(steering_knock_out_expert(s, 0, 0, true, &err), LLM_ERR_ARG);
    ck_assert_msg(strstr(err.text, "cannot knock expert 0 of layer 0 out: 1 of the layer's 4 "
                                   "experts would be left, but the router chooses 2"), "%s", err.text);
    ck_assert_int_eq(steering_knock_out_expert(s, 0, 2, true, &err), LLM_OK);
    const intervention *three = steering_state(s);
    ck_assert_int_eq(one->n_experts_out, 1); /* an old state stays as it was */
    ck_assert_int_eq(three->n_experts_out, 3);
    const int want[3][2] = {{0, 1}, {0, 2}, {2, 3}};
    for (int i = 0; i < 3; i++)
        ck_assert(three->experts_out[i].layer == want[i][0] &&
                  three->experts_out[i].expert == want[i][1]);
    ck_assert(steering_expert_is_out(s, 0, 2) && !steering_expert_is_out(s, 0, 0) &&
              !steering_expert_is_out(s, 9, 0));
    char shown[128];
    ck_assert_int_eq(steering_knock_out(s, 1, 0, true, &err), LLM_OK);
    steering_format(steering_state(s), shown, sizeof shown);
    ck_assert_str_eq(shown, "heads out L2H1 | experts out L1E2 L1E3 L3E4");
    ck_assert_int_eq(steering_knock_out(s, 1, 0, false, &err), LLM_OK);
    /* back in, one by one; then the three again from the old state */
    ck_assert_int_eq(steering_knock_out_expert(s, 0, 1, false, &err), LLM_OK);
    ck_assert_int_eq(steering_knock_out_expert(s, 0, 0, true, &err), LLM_OK); /* room now */
    ck_assert_int_eq(steering_check(s, three, NULL, 0, &err), LLM_OK);
    ck_assert_int_eq(steering_set(s, three, &err), LLM_OK);
    ck_assert(steering_expert_is_out(s, 0, 1) && !steering_expert_is_out(s, 0, 0));
    ck_assert_int_eq(steering_state(s)->n_experts_out, 3);
    ck_assert_int_eq(steering_set(s, NULL, &err), LLM_OK);
    ck_assert_int_eq(steering_state(s)->n_experts_out, 0);
    ck_assert(!steering_expert_is_out(s, 2, 3));
    /* a state this model cannot run: refused by both, nothing changed */
    intervention_expert too_many[3] = {{1, 0}, {1, 1}, {1, 2}}, missing[1] = {{1, 7}};
    intervention bad = {.first_layer = -1, .last_layer = -1, .n_experts_out = 3,
                        .experts_out = too_many};
    const intervention *before = steering_state(s);
    ck_assert_int_eq(steering_check(s, &bad, NULL, 0, &err), LLM_ERR_MISMATCH);
    ck_assert_msg(strstr(err.text, "cannot knock expert 2 of layer 1 out"), "%s", err.text);
    ck_assert_int_eq(steering_set(s, &bad, &err), LLM_ERR_MISMATCH);
    bad.n_experts_out = 1;
    bad.experts_out = missing;
    ck_assert_int_eq(steering_check(s, &bad, NULL, 0, &err), LLM_ERR_MISMATCH);
    ck_assert_msg(strstr(err.text, "no expert 7 in layer 1"), "%s", err.text);
    ck_assert_ptr_eq(steering_state(s), before);
    ck_assert(!steering_expert_is_out(s, 1, 0));
    steering_free(s);
    /* a dense model refuses a state with experts out */
    intervention_expert some[1] = {{0, 1}};
    bad.experts_out = some;
    ck_assert_int_eq(steering_new(3, 2, 4, &s, &err), LLM_OK);
    ck_assert_int_eq(steering_set(s, &bad, &err), LLM_ERR_MISMATCH);
    ck_assert_msg(strstr(err.text, "expert [0, 1] is knocked out ([layer, expert], from 0), but "
                                   "the model has no experts"), "%s", err.text);
    steering_free(s);
}
END_TEST

/* Experts forced: refused on dense layers, out of range, or for an expert knocked out
 * (and a forced one cannot be knocked out); one a layer, a second replacing the first
 * with a notice; each change a new state listing [layer, expert] by layer; -1 lets a
 * layer go; steering_check and steering_set take a state back and refuse one with an
 * expert both forced and knocked out, two at a layer, or one the model lacks. */
START_TEST(test_steering_forced_experts)
{
    steering *s;
    llm_err err;
    ck_assert_int_eq(steering_new(3, 2, 4, &s, &err), LLM_OK);
    ck_assert_int_eq(steering_force_expert(s, 0, 1, &err), LLM_ERR_ARG);
    ck_assert_msg(strstr(err.text, "the model has no experts"), "%s", err.text);
    ck_assert_int_eq(steering_expert_forced(s, 0), -1);
    ck_assert_int_eq(steering_experts(s, 4, 2, &err), LLM_OK);
    ck_assert_int_eq(steering_force_expert(s, 3, 0, &err), LLM_ERR_ARG);
    ck_assert_msg(strstr(err.text, "no layer 3: the model has layers 0-2 (numbered from 0)"), "%s",
                  err.text);
    ck_assert_int_eq(steering_force_expert(s, 0, 4, &err), LLM_ERR_ARG);
    ck_assert_int_eq(steering_force_expert(s, 0, -2, &err), LLM_ERR_ARG);
    ck_assert_ptr_null(steering_state(s));
    ck_assert_int_eq(steering_force_expert(s, 2, 3, &err), LLM_OK);
    ck_assert_str_eq(steering_notice(s), "");
    const intervention *one = steering_state(s);
    ck_assert_int_eq(steering_force_expert(s, 0, 1, &err), LLM_OK);
    ck_assert_int_eq(steering_force_expert(s, 0, 2, &err), LLM_OK); /* replaces 1 */
    ck_assert_str_eq(steering_notice(s), "expert 2 of layer 0 is forced instead of expert 1 "
                                         "(one expert a layer)");
    const intervention *two = steering_state(s);
    ck_assert_int_eq(one->n_experts_forced, 1);
    ck_assert_int_eq(two->n_experts_forced, 2);
    ck_assert(two->experts_forced[0].layer == 0 && two->experts_forced[0].expert == 2 &&
              two->experts_forced[1].layer == 2 && two->experts_forced[1].expert == 3);
    ck_assert_int_eq(steering_expert_forced(s, 0), 2);
    ck_assert_int_eq(steering_expert_forced(s, 1), -1);
    ck_assert_int_eq(steering_expert_forced(s, 9), -1);
    /* forced and knocked out: refused both ways, nothing changed */
    ck_assert_int_eq(steering_knock_out_expert(s, 0, 2, true, &err), LLM_ERR_ARG);
    ck_assert_msg(strstr(err.text, "cannot knock expert 2 of layer 0 out: it is the layer's forced "
                                   "expert"), "%s", err.text);
    ck_assert_int_eq(steering_knock_out_expert(s, 1, 0, true, &err), LLM_OK);
    ck_assert_int_eq(steering_force_expert(s, 1, 0, &err), LLM_ERR_ARG);
    ck_assert_msg(strstr(err.text, "cannot force expert 0 of layer 1: it is knocked out"), "%s",
                  err.text);
    ck_assert_int_eq(steering_expert_forced(s, 1), -1);
    char shown[128];
    steering_format(steering_state(s), shown, sizeof shown);
    ck_assert_str_eq(shown, "experts out L2E1 | experts forced L1E3 L3E4");
    /* let go, then the old state again */
    ck_assert_int_eq(steering_force_expert(s, 0, -1, &err), LLM_OK);
    ck_assert_int_eq(steering_expert_forced(s, 0), -1);
    ck_assert_int_eq(steering_state(s)->n_experts_forced, 1);
    ck_assert_int_eq(steering_check(s, two, NULL, 0, &err), LLM_OK);
    ck_assert_int_eq(steering_set(s, two, &err), LLM_OK);
    ck_assert(steering_expert_forced(s, 0) == 2 && steering_expert_forced(s, 2) == 3 &&
              !steering_expert_is_out(s, 1, 0));
    ck_assert_int_eq(steering_set(s, NULL, &err), LLM_OK);
    ck_assert_int_eq(steering_state(s)->n_experts_forced, 0);
    ck_assert_int_eq(steering_expert_forced(s, 2), -1);
    /* states this model cannot run: refused by both, nothing changed */
    intervention_expert pair[2] = {{1, 0}, {1, 2}}, out[1] = {{1, 2}}, missing[1] = {{1, 7}};
    intervention bad = {.first_layer = -1, .last_layer = -1, .n_experts_forced = 2,
                        .experts_forced = pair};
    const intervention *before = steering_state(s);
    ck_assert_int_eq(steering_check(s, &bad, NULL, 0, &err), LLM_ERR_MISMATCH);
    ck_assert_msg(strstr(err.text, "experts 0 and 2 are both forced at layer 1"), "%s", err.text);
    ck_assert_int_eq(steering_set(s, &bad, &err), LLM_ERR_MISMATCH);
    bad.n_experts_forced = 1;
    bad.experts_forced = out;
    bad.n_experts_out = 1;
    bad.experts_out = out;
    ck_assert_int_eq(steering_check(s, &bad, NULL, 0, &err), LLM_ERR_MISMATCH);
    ck_assert_msg(strstr(err.text, "expert [1, 2] is both forced and knocked out"), "%s",
                  err.text);
    ck_assert_int_eq(steering_set(s, &bad, &err), LLM_ERR_MISMATCH);
    bad.n_experts_out = 0;
    bad.experts_forced = missing;
    ck_assert_int_eq(steering_check(s, &bad, NULL, 0, &err), LLM_ERR_MISMATCH);
    ck_assert_msg(strstr(err.text, "expert [1, 7] is forced"), "%s", err.text);
    ck_assert_ptr_eq(steering_state(s), before);
    ck_assert(!steering_expert_is_out(s, 1, 2) && steering_expert_forced(s, 1) == -1);
    steering_free(s);
    /* a dense model refuses a state with experts forced */
    bad.experts_forced = out;
    ck_assert_int_eq(steering_new(3, 2, 4, &s, &err), LLM_OK);
    ck_assert_int_eq(steering_set(s, &bad, &err), LLM_ERR_MISMATCH);
    ck_assert_msg(strstr(err.text, "expert [1, 2] is forced ([layer, expert], from 0), but the "
                                   "model has no experts"), "%s", err.text);
    steering_free(s);
}
END_TEST

/* A vector for other layers than the model's: the layers it lacks are named; one none
 * of whose layers the model has is refused; loading says nothing when all apply. */
START_TEST(test_vector_depth)
{
    const char *p = temp_path("deep.gguf");
    spec deep[4];
    const char *names[4] = {"direction.11", "direction.12", "direction.13", "direction.14"};
    for (int i = 0; i < 4; i++)
        deep[i] = (spec){names[i], GGML_TYPE_F32, 1, {64, 1}, 0.25f};
    write_gguf(p, deep, 4);
    steering *s;
    llm_err err;
    ck_assert_int_eq(steering_new(5, 8, 64, &s, &err), LLM_OK);
    ck_assert_int_eq(steering_load(s, p, NULL, 1.0f, &err), LLM_ERR_MISMATCH);
    ck_assert_msg(strstr(err.text, "deep.gguf: its directions are for layers 11-14, but the model has "
                                   "5 layers (0-4; a vector applies after layers 1-4): it was made "
                                   "for another model"), "%s", err.text);
    ck_assert_ptr_null(steering_sum(s));
    /* direction.2 and .11: 2 applies, 11 is named */
    spec some[2] = {{"direction.2", GGML_TYPE_F32, 1, {64, 1}, 0.5f}, deep[0]};
    write_gguf(p, some, 2);
    ck_assert_msg(steering_load(s, p, "some", 1.0f, &err) == LLM_OK, "%s", err.text);
    ck_assert_msg(strstr(steering_notice(s), "deep.gguf: direction.11 ignored: the model has 5 "
                                             "layers (0-4); the vector applies after layer 2"),
                  "%s", steering_notice(s));
    ck_assert_int_eq(steering_rescale(s, "some", 2.0f, &err), LLM_OK);
    ck_assert_str_eq(steering_notice(s), ""); /* said once */
    steering_free(s);
    /* a 5-layer vector (direction.1-4) on a 4-layer model: direction.4 named */
    const char *five = vector_file("five.gguf", 5, 64, 1.0f);
    ck_assert_int_eq(steering_new(4, 4, 64, &s, &err), LLM_OK);
    ck_assert_msg(steering_load(s, five, NULL, 1.0f, &err) == LLM_OK, "%s", err.text);
    ck_assert_msg(strstr(steering_notice(s), "five.gguf: direction.4 ignored: the model has 4 layers "
                                             "(0-3); the vector applies after layers 1-3"),
                  "%s", steering_notice(s));
    steering_free(s);
    ck_assert_int_eq(steering_new(5, 8, 64, &s, &err), LLM_OK);
    ck_assert_int_eq(steering_load(s, five, NULL, 1.0f, &err), LLM_OK);
    ck_assert_str_eq(steering_notice(s), "");
    steering_free(s);
    remove(p);
    remove(five);
}
END_TEST

/* ---- the forward pass ---- */

static model *m;
static tokenizer *tok;

static void setup(void)
{
    model_options mo;
    model_options_default(&mo);
    mo.weights = TENSOR_F32;
    llm_err err;
    ck_assert_msg(model_open(data_path("stories260K.bin"), &mo, &m, &err) == LLM_OK, "%s", err.text);
    ck_assert_msg(tokenizer_open(data_path("tok512.bin"), 512, &tok, &err) == LLM_OK, "%s", err.text);
}

static void teardown(void)
{
    tokenizer_close(tok);
    model_close(m);
}

/* A vector with a value in every layer and element. */
static float *some_steer(const model_config *c, int only_layer)
{
    float *v = calloc((size_t)c->n_layers * c->dim, sizeof(float));
    for (int l = 0; l < c->n_layers; l++)
        for (int j = 0; j < c->dim; j++)
            if (only_layer < 0 || l == only_layer)
                v[l * c->dim + j] = 0.3f * sinf((float)(l * 7 + j));
    return v;
}

/* The control-vector editor (control_vectors.c, as steering.c registers it) on t:
 * *vectors->sum added at l_out from the next pass on. */
static void attach_vectors(transformer *t, control_vectors *vectors)
{
    const model_config *c = &transformer_model(t)->config;
    hook h = {.edit = control_vectors_edit, .user = vectors, .points = HOOK_BIT(HOOK_L_OUT),
              .layer_first = 0, .layer_last = c->n_layers - 1, .pos = -1};
    int id;
    llm_err err;
    ck_assert_msg(transformer_hook_add(t, &h, &id, &err) == LLM_OK, "%s", err.text);
}

/* Applying a vector after layer l equals adding it by hand: the residual streams after
 * the layers before l are those of the unsteered run bit for bit, after l they are
 * the unsteered ones plus the vector; and a vector after the last layer gives the
 * logits of the final norm and classifier applied by hand to (x + v). */
START_TEST(test_apply_equals_by_hand)
{
    const model_config *c = &m->config;
    int toks[6] = {1, 403, 407, 261, 378, 1000 % c->vocab_size};
    int n = 6, L = c->n_layers, dim = c->dim;
    size_t per = (size_t)L * dim;
    float *plain = malloc(sizeof(float) * per * n), *steered = malloc(sizeof(float) * per * n);
    transformer *t;
    llm_err err;
    ck_assert_int_eq(transformer_new(m, 16, &t, &err), LLM_OK);
    ck_assert_int_eq(transformer_residuals(t, toks, n, plain, &err), LLM_OK);
    int at = 2;
    float *v = some_steer(c, at);
    const float *sum = v;
    control_vectors vectors = {.sum = &sum, .dim = dim};
    attach_vectors(t, &vectors);
    ck_assert_int_eq(transformer_residuals(t, toks, 1, steered, &err), LLM_OK);
    for (int l = 0; l < at; l++)
        ck_assert_mem_eq(steered + (size_t)l * dim, plain + (size_t)l * dim, sizeof(float) * dim);
    for (int j = 0; j < dim; j++)
        ck_assert_float_eq(steered[(size_t)at * dim + j], plain[(size_t)at * dim + j] + v[at * dim + j]);
    free(v);

    /* after the last layer: the logits by hand */
    v = some_steer(c, L - 1);
    sum = v;
    const float *logits = NULL;
    for (int p = 0; p < n; p++)
        logits = transformer_forward(t, toks[p], p, NULL);
    const float *x = plain + (size_t)(n - 1) * per + (size_t)(L - 1) * dim;
    float *xs = malloc(sizeof(float) * dim), *row = malloc(sizeof(float) * dim);
    double ss = 0;
    for (int j = 0; j < dim; j++) {
        xs[j] = x[j] + v[(L - 1) * dim + j];
        ss += (double)xs[j] * xs[j];
    }
    float scale = 1.0f / sqrtf((float)(ss / dim) + c->rms_eps);
    for (int tkn = 0; tkn < c->vocab_size; tkn++) {
        quant_dequantize_row(row, &m->wcls, tkn);
        double dot = 0;
        for (int j = 0; j < dim; j++)
            dot += (double)row[j] * m->rms_final[j] * scale * xs[j];
        ck_assert_msg(fabs(dot - logits[tkn]) < 1e-4 * (1 + fabs(dot)), "token %d: %g by hand, %g",
                      tkn, dot, logits[tkn]);
    }
    free(row);
    free(xs);
    free(v);
    free(plain);
    free(steered);
    transformer_free(t);
}
END_TEST

/* With a vector on every layer, a batch (the prefill path) gives the logits that one
 * token at a time (the decode path) gives, and they differ from the unsteered ones. */
START_TEST(test_batch_equals_one_token)
{
    const model_config *c = &m->config;
    int toks[12];
    for (int i = 0; i < 12; i++)
        toks[i] = i ? (i * 37 + 11) % c->vocab_size : 1;
    float *v = some_steer(c, -1);
    transformer *a, *b, *plain;
    llm_err err;
    ck_assert_int_eq(transformer_new(m, 32, &a, &err), LLM_OK);
    ck_assert_int_eq(transformer_new(m, 32, &b, &err), LLM_OK);
    ck_assert_int_eq(transformer_new(m, 32, &plain, &err), LLM_OK);
    const float *sum = v;
    control_vectors vectors = {.sum = &sum, .dim = c->dim};
    attach_vectors(a, &vectors);
    attach_vectors(b, &vectors);
    const float *la = transformer_forward_batch(a, toks, 12, 0, NULL, NULL);
    const float *lb = NULL, *lp = NULL;
    for (int p = 0; p < 12; p++) {
        lb = transformer_forward(b, toks[p], p, NULL);
        lp = transformer_forward(plain, toks[p], p, NULL);
    }
    double diff_plain = 0;
    for (int i = 0; i < c->vocab_size; i++) {
        ck_assert_msg(fabsf(la[i] - lb[i]) < 1e-3f, "token %d: batch %g, one token %g", i, la[i], lb[i]);
        diff_plain += fabs(lb[i] - lp[i]);
    }
    ck_assert_msg(diff_plain > 1.0, "the vector changed the logits by only %g", diff_plain);
    transformer_free(a);
    transformer_free(b);
    transformer_free(plain);
    free(v);
}
END_TEST

/* Knocking a head out equals zeroing its output by hand: a copy of the model whose wo
 * has that head's columns zeroed gives the same logits bit for bit (the zeroed products
 * are exact zeros either way), in the one-token and the batch path; and the engine's
 * what-if of a position equals running that position (only) on that copy. */
START_TEST(test_knock_out_equals_zeroing_by_hand)
{
    const model_config *c = &m->config;
    int layer = 1, head = 2, hs = c->head_size, n = 10;
    int toks[10];
    for (int i = 0; i < n; i++)
        toks[i] = i ? (i * 53 + 7) % c->vocab_size : 1;
    unsigned char *mask = calloc((size_t)c->n_layers * c->n_heads, 1);
    mask[layer * c->n_heads + head] = 1;
    transformer *ko, *ko_batch, *hand;
    llm_err err;
    ck_assert_int_eq(transformer_new(m, 16, &ko, &err), LLM_OK);
    ck_assert_int_eq(transformer_new(m, 16, &ko_batch, &err), LLM_OK);
    const unsigned char *in_force = mask;
    bool on = true;
    knock_out heads = {.mask = &in_force, .enabled = &on, .n_heads = c->n_heads,
                       .attn_heads = c->n_heads, .head_size = hs};
    hook h = {.edit = knock_out_edit, .user = &heads, .points = HOOK_BIT(HOOK_KQV),
              .layer_first = 0, .layer_last = c->n_layers - 1, .pos = -1};
    int id;
    ck_assert_int_eq(transformer_hook_add(ko, &h, &id, &err), LLM_OK);
    ck_assert_int_eq(transformer_hook_add(ko_batch, &h, &id, &err), LLM_OK);
    float *want = malloc(sizeof(float) * c->vocab_size), *got = malloc(sizeof(float) * c->vocab_size);
    const float *l1 = NULL;
    for (int p = 0; p < n; p++)
        l1 = transformer_forward(ko, toks[p], p, NULL);
    memcpy(got, l1, sizeof(float) * c->vocab_size);
    const float *lb = transformer_forward_batch(ko_batch, toks, n, 0, NULL, NULL);

    /* by hand: wo (dim, dim) with the head's columns zeroed */
    tensor *wo = &m->layers[layer].wo;
    ck_assert_int_eq(wo->type, TENSOR_F32);
    const float *orig = wo->f;
    float *zeroed = malloc(sizeof(float) * (size_t)wo->rows * wo->stride);
    memcpy(zeroed, orig, sizeof(float) * (size_t)wo->rows * wo->stride);
    for (int r = 0; r < wo->rows; r++)
        memset(zeroed + (size_t)r * wo->stride + head * hs, 0, sizeof(float) * hs);
    wo->f = zeroed;
    ck_assert_int_eq(transformer_new(m, 16, &hand, &err), LLM_OK);
    const float *lh = NULL;
    for (int p = 0; p < n; p++)
        lh = transformer_forward(hand, toks[p], p, NULL);
    memcpy(want, lh, sizeof(float) * c->vocab_size);
    const float *lhb = transformer_forward_batch(hand, toks, n, 0, NULL, NULL);
    ck_assert_mem_eq(got, want, sizeof(float) * c->vocab_size);
    ck_assert_mem_eq(lb, lhb, sizeof(float) * c->vocab_size);
    /* the what-if changes only the position run again: the earlier ones ran with the
     * head in, so by hand the zeroed wo serves the last position only */
    wo->f = orig;
    transformer *last;
    ck_assert_int_eq(transformer_new(m, 16, &last, &err), LLM_OK);
    for (int p = 0; p < n - 1; p++)
        transformer_forward(last, toks[p], p, NULL);
    wo->f = zeroed;
    memcpy(want, transformer_forward(last, toks[n - 1], n - 1, NULL), sizeof(float) * c->vocab_size);
    wo->f = orig;
    transformer_free(last);

    /* the engine's what-if at the last position: "after" is the zeroed model's logits */
    engine *e;
    ck_assert_int_eq(engine_new(m, tok, NULL, &e, &err), LLM_OK);
    for (int p = 0; p < n; p++)
        ck_assert_int_eq(engine_force(e, toks[p], &err), LLM_OK);
    ck_assert_ptr_null(engine_whatif(e, n - 1, &err)); /* nothing out yet */
    ck_assert_int_eq(steering_knock_out(engine_steering(e), layer, head, true, &err), LLM_OK);
    const step_whatif *wi = engine_whatif(e, n - 1, &err);
    ck_assert_msg(wi != NULL, "%s", err.text);
    ck_assert_float_eq(wi->target_logit_after, want[wi->target]);
    ck_assert_float_eq(wi->target_logit_before, engine_logits(e)[wi->target]);
    ck_assert_int_eq(engine_pos(e), n); /* the sequence is as it was */
    engine_free(e);
    transformer_free(ko);
    transformer_free(ko_batch);
    transformer_free(hand);
    free(zeroed);
    free(want);
    free(got);
    free(mask);
}
END_TEST

/* Mean log-probability of text's tokens after BOS, teacher-forced on e. */
static double mean_logprob(engine *e, const char *text)
{
    int ids[128];
    ids[0] = tokenizer_bos(tok);
    int n = 1 + tokenizer_encode(tok, text, ids + 1, 127);
    llm_err err;
    ck_assert_int_eq(engine_rewind(e, 0, &err), LLM_OK);
    double sum = 0;
    for (int p = 0; p < n; p++) {
        ck_assert_int_eq(engine_prefill(e, &ids[p], 1, &err), LLM_OK);
        if (p + 1 < n) {
            const float *l = engine_logits(e);
            double mx = l[0], z = 0;
            for (int i = 1; i < m->config.vocab_size; i++)
                mx = l[i] > mx ? l[i] : mx;
            for (int i = 0; i < m->config.vocab_size; i++)
                z += exp(l[i] - mx);
            sum += l[ids[p + 1]] - mx - log(z);
        }
    }
    return sum / (n - 1);
}

/* /vector make from two texts raises the first text's likelihood and lowers the
 * second's; the file it writes loads again; the trace records the vector where it
 * came in and the reader gives it back to the records from there on. */
START_TEST(test_make_moves_toward_first_text)
{
    const char *happy = "She was happy and laughed and smiled.", *sad = "She was sad and cried.";
    engine *e;
    llm_err err;
    ck_assert_int_eq(engine_new(m, tok, NULL, &e, &err), LLM_OK);
    const char *tr = temp_path("cv.jsonl");
    trace_writer *tw;
    ck_assert_int_eq(trace_open(tr, tok, &m->config, false, &tw, &err), LLM_OK);
    engine_set_observer(e, trace_observe, tw);
    double a0 = mean_logprob(e, happy), b0 = mean_logprob(e, sad);
    char msg[512], cmd[256];
    const char *out = temp_path("mood.gguf");
    snprintf(cmd, sizeof cmd, "make %s \"%s\" \"%s\"", out, happy, sad);
    ck_assert_msg(vector_command(e, cmd, msg, sizeof msg, &err) == LLM_OK, "%s", err.text);
    /* applied at the scale measured against the residual stream, which the file keeps */
    ck_assert_msg(strstr(msg, "makes it 10% of the residual stream's norm"), "%s", msg);
    const intervention *made = engine_intervention(e);
    ck_assert_int_eq(made->n_vectors, 1);
    ck_assert_msg(made->vectors[0].scale > 0.0f && made->vectors[0].scale < 1.0f, "scale %g",
                  made->vectors[0].scale);
    control_vector *back;
    ck_assert_int_eq(control_vector_load(out, &back, &err), LLM_OK);
    ck_assert_float_eq(back->suggested_scale, made->vectors[0].scale);
    control_vector_free(back);
    ck_assert_int_eq(vector_command(e, "layers 1-4", msg, sizeof msg, &err), LLM_OK);
    const char *name = strrchr(out, '/') + 1;
    char rescale[128];
    snprintf(rescale, sizeof rescale, "%.*s 0.5", (int)(strlen(name) - 5), name);
    ck_assert_msg(vector_command(e, rescale, msg, sizeof msg, &err) == LLM_OK, "%s", err.text);
    double a1 = mean_logprob(e, happy), b1 = mean_logprob(e, sad);
    ck_assert_msg(a1 > a0 && b1 < b0, "happy %.3f -> %.3f, sad %.3f -> %.3f", a0, a1, b0, b1);
    ck_assert_int_eq(vector_command(e, "make x \"unclosed", msg, sizeof msg, &err), LLM_ERR_ARG);
    ck_assert_int_eq(vector_command(e, "frobnicate", msg, sizeof msg, &err), LLM_ERR_ARG);
    engine_finish(e);
    ck_assert_int_eq(trace_close(tw, &err), LLM_OK);

    trace_reader *r;
    ck_assert_int_eq(trace_read_file(tr, &r, &err), LLM_OK);
    int n = trace_reader_count(r), with = 0;
    for (int i = 0; i < n; i++) {
        const intervention *in = trace_reader_record(r, i)->intervention;
        if (!in)
            continue;
        with++;
        ck_assert_int_eq(in->n_vectors, 1);
        ck_assert_str_eq(in->vectors[0].path, out);
        ck_assert_float_eq(in->vectors[0].scale, 0.5f);
        ck_assert_int_eq(in->first_layer, 1);
        ck_assert_int_eq(in->last_layer, 4);
        uint64_t sum; /* the file's checksum, for a replay to tell a later file apart */
        ck_assert_int_eq(control_vector_hash_file(out, &sum, &err), LLM_OK);
        ck_assert(in->vectors[0].fnv1a == sum && sum != 0);
    }
    ck_assert_int_gt(with, 0);
    ck_assert_int_lt(with, n); /* the unsteered records before it have none */
    ck_assert_ptr_null(trace_reader_record(r, 0)->intervention);
    trace_reader_free(r);
    engine_free(e);
    remove(tr);
    remove(out);
}
END_TEST

static Suite *control_vector_suite(void)
{
    Suite *s = suite_create("control_vector");
    TCase *file = tcase_create("file");
    tcase_add_test(file, test_hostile_files);
    tcase_add_test(file, test_write_read_back);
    tcase_add_test(file, test_steering_sum);
    tcase_add_test(file, test_vector_depth);
    tcase_add_test(file, test_steering_experts);
    tcase_add_test(file, test_steering_forced_experts);
    suite_add_tcase(s, file);
    TCase *core = tcase_create("core");
    tcase_add_checked_fixture(core, setup, teardown);
    tcase_set_timeout(core, 60);
    tcase_add_test(core, test_apply_equals_by_hand);
    tcase_add_test(core, test_batch_equals_one_token);
    tcase_add_test(core, test_knock_out_equals_zeroing_by_hand);
    tcase_add_test(core, test_make_moves_toward_first_text);
    suite_add_tcase(s, core);
    return s;
}

TEST_MAIN(control_vector_suite)
