/* test_trace_read.c — the trace reader: a real run's trace reads back as the
 * engine's records (tokens, candidates, sampler decisions, attention, lens); bad,
 * cut and foreign lines are reported with their line numbers and skipped; headerless
 * (version 0) traces still read; a newer version is refused; a rewound run's final
 * sequence is the one on screen; and no damage to a buffer makes it crash. */
#include <math.h>
#include <string.h>

#include "engine.h"
#include "testutil.h"
#include "trace.h"
#include "trace_read.h"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    ck_assert_int_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

static model *m;
static tokenizer *tok;

static void setup(void)
{
    model_options mo;
    model_options_default(&mo);
    llm_err err;
    ck_assert_msg(model_open(data_path("stories260K.bin"), &mo, &m, &err) == LLM_OK, "%s",
                  err.text);
    ck_assert_msg(tokenizer_open(data_path("tok512.bin"), 512, &tok, &err) == LLM_OK, "%s",
                  err.text);
}

static void teardown(void)
{
    tokenizer_close(tok);
    model_close(m);
}

/* A sampled run of stories260K with attention and the lens, traced to path; the
 * engine is returned (still holding the records) for comparison. */
static engine *traced_run(const char *path, int steps)
{
    engine_options o;
    engine_options_default(&o);
    o.ctx_len = 64;
    o.capture_attention = true;
    o.record_lens = true;
    o.sampler.temperature = 0.9f;
    o.sampler.top_k = 20;
    o.sampler.seed = 5;
    engine *e;
    llm_err err;
    ck_assert_int_eq(engine_new(m, tok, &o, &e, &err), LLM_OK);
    trace_writer *t;
    ck_assert_int_eq(trace_open(path, tok, &m->config, true, &t, &err), LLM_OK);
    trace_run run = {.mode = "generate", .m = m, .kernels = "scalar", .kv_cache = "q8_0",
                     .sampler = &o.sampler, .steps = steps, .ctx = 64, .lens = true};
    trace_describe(t, &run);
    engine_set_observer(e, trace_observe, t);
    int ids[32];
    ids[0] = TOKEN_BOS;
    int n = 1 + tokenizer_encode(tok, "One day a frog", ids + 1, 31);
    ck_assert_int_eq(engine_prefill(e, ids, n, &err), LLM_OK);
    for (int i = 0; i < steps; i++) {
        int id;
        ck_assert_int_eq(engine_step(e, &id, &err), LLM_OK);
    }
    engine_finish(e);
    ck_assert_int_eq(trace_close(t, &err), LLM_OK);
    engine_set_observer(e, NULL, NULL);
    return e;
}

START_TEST(test_round_trip)
{
    const char *path = temp_path("rt.jsonl");
    engine *e = traced_run(path, 12);
    trace_reader *r;
    llm_err err;
    ck_assert_msg(trace_read_file(path, &r, &err) == LLM_OK, "%s", err.text);
    ck_assert_int_eq(trace_reader_problem_count(r), 0);
    const trace_header *h = trace_reader_header(r);
    ck_assert_int_eq(h->version, TRACE_FORMAT_VERSION);
    ck_assert_str_eq(h->mode, "generate");
    ck_assert_str_eq(h->model_name, "stories260K.bin");
    ck_assert_str_eq(h->weights, "q8_0");
    ck_assert(h->has_config && h->config.n_layers == 5 && h->config.n_heads == 8);
    ck_assert(h->has_sampler && h->sampler.top_k == 20 && h->sampler.seed == 5);
    ck_assert(h->attn && h->lens);
    ck_assert_int_eq(h->n_vocab, 512);
    for (int id = 0; id < 512; id++)
        ck_assert_str_eq(trace_reader_piece(r, id), tokenizer_piece(tok, id));
    ck_assert_int_eq(trace_reader_count(r), engine_pos(e));
    int L = m->config.n_layers, H = m->config.n_heads;
    for (int i = 0; i < trace_reader_count(r); i++) {
        const step_record *got = trace_reader_record(r, i), *want = engine_record(e, i);
        ck_assert_int_eq(trace_reader_line(r, i), i + 2);
        ck_assert_int_eq(got->pos, want->pos);
        ck_assert_int_eq(got->token, want->token);
        ck_assert_int_eq(got->phase, want->phase);
        ck_assert_int_eq(got->next, want->next);
        ck_assert_int_eq(got->next_rank, want->next_rank);
        if (isfinite(want->entropy)) /* written with 6 digits */
            ck_assert(fabsf(got->entropy - want->entropy) <= 1e-5f * (1.0f + want->entropy));
        else
            ck_assert(isnan(got->entropy));
        ck_assert_int_eq(got->n_top, want->n_top);
        for (int j = 0; j < got->n_top; j++) {
            ck_assert_int_eq(got->top[j].id, want->top[j].id);
            ck_assert(got->top[j].logit == want->top[j].logit); /* %.9g round-trips */
            ck_assert(got->top[j].prob == want->top[j].prob);
        }
        ck_assert_int_eq(got->sampled, want->sampled);
        if (want->sampled) {
            ck_assert_int_eq(got->sampler.chosen, want->sampler.chosen);
            ck_assert(got->sampler.draw == want->sampler.draw);
            ck_assert_int_eq(got->sampler.kept_top_k, want->sampler.kept_top_k);
            ck_assert_int_eq(got->sampler.kept_top_p, want->sampler.kept_top_p);
            ck_assert(got->sampler.config.temperature == want->sampler.config.temperature);
            for (int j = 0; j < got->n_top; j++) {
                ck_assert_int_eq(got->top[j].cut, want->top[j].cut);
                ck_assert(got->top[j].p_final == want->top[j].p_final);
            }
        }
        ck_assert_ptr_nonnull(got->attn);
        for (int k = 0; k < L * H * (i + 1); k++)
            ck_assert(fabsf(got->attn[k] - want->attn[k]) <= 5e-6f * fabsf(want->attn[k]));
        ck_assert_ptr_nonnull(got->lens);
        const step_lens_layer *wl = engine_lens(e, i, &err);
        for (int l = 0; l < L; l++) {
            ck_assert_int_eq(got->lens[l].next_rank, wl[l].next_rank);
            for (int j = 0; j < STEP_LENS_TOP; j++) {
                ck_assert_int_eq(got->lens[l].id[j], wl[l].id[j]);
                ck_assert(got->lens[l].prob[j] == wl[l].prob[j]);
            }
        }
    }
    trace_reader_free(r);
    engine_free(e);
    unlink(path);
}
END_TEST

#define HEADER \
    "{\"llmchat_trace\":1,\"model\":{\"n_layers\":1,\"n_heads\":2,\"dim\":8,\"vocab_size\":4}," \
    "\"vocab\":[\"a\",\"b\",\"c\",\"\\u00ff\"]}\n"
#define REC(pos, tok, next) \
    "{\"pos\":" #pos ",\"token\":" #tok ",\"piece\":\"x\",\"phase\":\"prompt\",\"next\":" #next \
    ",\"top\":[[1,2.5,0.5],[0,1,null]],\"sampler\":null,\"ms\":0.1}"

START_TEST(test_bad_lines)
{
    const char *text =
        HEADER                                             /* 1 */
        REC(0, 1, 2) "\n"                                  /* 2 good */
        "this is not json\n"                               /* 3 */
        "\n"                                               /* 4 blank: ignored */
        "[1,2,3]\n"                                        /* 5 not an object */
        "{\"pos\":1,\"token\":9,\"phase\":\"gen\",\"next\":0,\"top\":[]}\n" /* 6 token 9 > vocab */
        "{\"pos\":1,\"token\":2,\"phase\":\"sideways\",\"next\":0,\"top\":[]}\n" /* 7 */
        "{\"pos\":1,\"token\":2,\"phase\":\"gen\",\"next\":0,\"top\":[[7,1,1]]}\n" /* 8 */
        "{\"pos\":1,\"token\":2,\"phase\":\"gen\",\"next\":3,\"top\":[],"
        "\"attn\":[[[0.5],[0.5,0.5]]]}\n"                 /* 9 good, attention dropped */
        "{\"llmchat_trace\":1}\n"                          /* 10 a second header */
        "{\"pos\":2,\"token\":3,\"phase\":\"gen\",\"next\":-1,\"top\":[],"
        "\"attn\":[[[0.2,0.3,0.5],[1,0,null]]],\"lens\":[{\"top\":[[3,0.9]],\"next_rank\":0}]}\n"
        "{\"pos\":3,\"token\":1,\"pha";                   /* 12 cut short */
    trace_reader *r;
    llm_err err;
    ck_assert_int_eq(trace_read_buffer(text, strlen(text), &r, &err), LLM_OK);
    ck_assert_int_eq(trace_reader_count(r), 3);
    ck_assert_int_eq(trace_reader_line(r, 0), 2);
    ck_assert_int_eq(trace_reader_line(r, 1), 9);
    ck_assert_int_eq(trace_reader_line(r, 2), 11);
    ck_assert_ptr_null(trace_reader_record(r, 1)->attn);
    const step_record *last = trace_reader_record(r, 2);
    ck_assert_ptr_nonnull(last->attn);
    ck_assert(last->attn[2] == 0.5f && isnan(last->attn[5]));
    ck_assert_ptr_nonnull(last->lens);
    ck_assert_int_eq(last->lens[0].id[0], 3);
    ck_assert_int_eq(last->lens[0].id[1], -1);
    ck_assert_str_eq(trace_reader_piece(r, 3), "\xff");
    ck_assert(isnan(trace_reader_record(r, 0)->top[1].prob));
    const char *want[] = {"line 3: not JSON", "line 5: not a JSON object", "line 6: no \"token\"",
                          "line 7: no \"phase\"", "line 8: candidate 1", "line 9: \"attn\"",
                          "line 10: a header after", "line 12: cut short"};
    int n = (int)(sizeof want / sizeof want[0]);
    ck_assert_int_eq(trace_reader_problem_count(r), n);
    for (int i = 0; i < n; i++)
        ck_assert_msg(strncmp(trace_reader_problem(r, i), want[i], strlen(want[i])) == 0,
                      "problem %d: '%s', want '%s...'", i, trace_reader_problem(r, i), want[i]);
    trace_reader_free(r);
}
END_TEST

/* A position past the context the header names is a problem line, so a hostile trace
 * cannot make --view allocate for millions of positions. */
START_TEST(test_position_past_context)
{
    const char *text =
        "{\"llmchat_trace\":1,\"model\":{\"n_layers\":1,\"n_heads\":2,\"dim\":8,\"vocab_size\":4,"
        "\"seq_len\":32},\"options\":{\"ctx\":8},\"vocab\":[\"a\",\"b\",\"c\",\"d\"]}\n"
        REC(7, 1, 2) "\n"
        REC(8, 1, 2) "\n"
        REC(16000000, 1, 2) "\n";
    trace_reader *r;
    llm_err err;
    ck_assert_int_eq(trace_read_buffer(text, strlen(text), &r, &err), LLM_OK);
    ck_assert_int_eq(trace_reader_count(r), 1);
    ck_assert_int_eq(trace_reader_problem_count(r), 2);
    ck_assert_msg(strstr(trace_reader_problem(r, 0), "line 3: position 8 is past the context of 8") != NULL,
                  "%s", trace_reader_problem(r, 0));
    const step_record **seq;
    ck_assert_int_eq(trace_reader_final(r, &seq), 8);
    free(seq);
    trace_reader_free(r);
}
END_TEST

START_TEST(test_versions)
{
    /* version 0: no header; the shape comes from the attention, pieces from records */
    const char *v0 = "{\"pos\":0,\"token\":1,\"piece\":\"hi\",\"phase\":\"prompt\",\"next\":5,"
                     "\"top\":[],\"attn\":[[[1]],[[1]]]}\n";
    trace_reader *r;
    llm_err err;
    ck_assert_int_eq(trace_read_buffer(v0, strlen(v0), &r, &err), LLM_OK);
    const trace_header *h = trace_reader_header(r);
    ck_assert_int_eq(h->version, 0);
    ck_assert(h->has_config && h->config.n_layers == 2 && h->config.n_heads == 1);
    ck_assert_str_eq(trace_reader_piece(r, 1), "hi");
    ck_assert_ptr_null(trace_reader_piece(r, 5));
    ck_assert_int_eq(trace_reader_count(r), 1);
    trace_reader_free(r);

    /* version 0, a lens of one layer first: it fixes the layers, so a later lens or
     * attention of two layers is dropped (every record's lens stays as long as the
     * shape) */
    const char *v0_lens = "{\"pos\":0,\"token\":1,\"phase\":\"prompt\",\"next\":2,\"top\":[],"
                          "\"lens\":[{\"top\":[[1,0.5]]}]}\n"
                          "{\"pos\":1,\"token\":2,\"phase\":\"gen\",\"next\":3,\"top\":[],"
                          "\"lens\":[{\"top\":[[1,0.5]]},{\"top\":[[2,0.5]]}]}\n"
                          "{\"pos\":2,\"token\":3,\"phase\":\"gen\",\"next\":-1,\"top\":[],"
                          "\"attn\":[[[0.5,0.5,0]],[[0.5,0.5,0]]],\"lens\":[{\"top\":[[1,0.5]]}]}\n";
    ck_assert_int_eq(trace_read_buffer(v0_lens, strlen(v0_lens), &r, &err), LLM_OK);
    h = trace_reader_header(r);
    ck_assert_int_eq(h->config.n_layers, 1);
    ck_assert_int_eq(trace_reader_count(r), 3);
    ck_assert_ptr_nonnull(trace_reader_record(r, 0)->lens);
    ck_assert_ptr_null(trace_reader_record(r, 1)->lens);
    ck_assert_ptr_null(trace_reader_record(r, 2)->attn);
    ck_assert_ptr_nonnull(trace_reader_record(r, 2)->lens);
    ck_assert_int_eq(trace_reader_problem_count(r), 2);
    ck_assert_msg(strstr(trace_reader_problem(r, 0), "\"lens\" has 2 layers, not 1") != NULL, "%s",
                  trace_reader_problem(r, 0));
    ck_assert_msg(strstr(trace_reader_problem(r, 1), "\"attn\"") != NULL, "%s",
                  trace_reader_problem(r, 1));
    trace_reader_free(r);

    const char *v9 = "{\"llmchat_trace\":9}\n";
    ck_assert_int_eq(trace_read_buffer(v9, strlen(v9), &r, &err), LLM_ERR_FORMAT);
    ck_assert_ptr_null(r);
    ck_assert_msg(strstr(err.text, "version 9") != NULL, "%s", err.text);

    ck_assert_int_eq(trace_read_buffer("", 0, &r, &err), LLM_OK);
    ck_assert_int_eq(trace_reader_count(r), 0);
    ck_assert_int_eq(trace_reader_problem_count(r), 1);
    trace_reader_free(r);

    ck_assert_int_eq(trace_read_file("/nonexistent/trace.jsonl", &r, &err), LLM_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err.text, "/nonexistent/trace.jsonl"));
}
END_TEST

START_TEST(test_final_sequence)
{
    /* 0 1 2 3, then a rewind to 2 re-finishes 1 and goes on with another 2 */
    const char *text = HEADER REC(0, 1, 2) "\n" REC(1, 2, 3) "\n" REC(2, 3, 0) "\n"
        REC(3, 0, -1) "\n" REC(1, 2, 0) "\n" REC(2, 0, -1) "\n";
    trace_reader *r;
    llm_err err;
    ck_assert_int_eq(trace_read_buffer(text, strlen(text), &r, &err), LLM_OK);
    ck_assert_int_eq(trace_reader_count(r), 6);
    const step_record **seq;
    ck_assert_int_eq(trace_reader_final(r, &seq), 3);
    ck_assert_ptr_eq(seq[0], trace_reader_record(r, 0));
    ck_assert_ptr_eq(seq[1], trace_reader_record(r, 4));
    ck_assert_ptr_eq(seq[2], trace_reader_record(r, 5));
    ck_assert_int_eq(seq[1]->next, 0);
    free(seq);
    trace_reader_free(r);
}
END_TEST

/* Every prefix of a real trace, and many damaged copies, read without a crash (the
 * sanitizer build makes this a memory-safety check) and never report more records
 * than lines. */
START_TEST(test_damage_never_crashes)
{
    const char *path = temp_path("dmg.jsonl");
    engine *e = traced_run(path, 3);
    engine_free(e);
    size_t len;
    char *good = slurp(path, &len);
    unlink(path);
    int lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += good[i] == '\n';
    for (size_t cut = 0; cut <= len; cut += 1 + cut / 64) {
        trace_reader *r;
        llm_err err;
        char *copy = malloc(cut ? cut : 1); /* exactly cut bytes: no NUL to lean on */
        memcpy(copy, good, cut);
        ck_assert_int_eq(trace_read_buffer(copy, cut, &r, &err), LLM_OK);
        ck_assert_int_le(trace_reader_count(r), lines);
        trace_reader_free(r);
        free(copy);
    }
    unsigned x = 12345;
    char *copy = malloc(len);
    static const char junk[] = "{}[],:\"\\0123456789-+.eEtrunlfa \n\x80\xff";
    for (int round = 0; round < 400; round++) {
        memcpy(copy, good, len);
        for (int k = 0; k < 1 + round % 8; k++) {
            x = x * 1103515245u + 12345u;
            size_t at = (x >> 8) % len;
            x = x * 1103515245u + 12345u;
            copy[at] = junk[(x >> 8) % (sizeof junk - 1)];
        }
        trace_reader *r;
        llm_err err;
        llm_status st = trace_read_buffer(copy, len, &r, &err);
        ck_assert(st == LLM_OK || st == LLM_ERR_FORMAT);
        if (st == LLM_OK) {
            const step_record **seq;
            int n = trace_reader_final(r, &seq);
            ck_assert_int_ge(n, 0);
            free(seq);
            trace_reader_free(r);
        }
    }
    free(copy);
    free(good);
}
END_TEST

static Suite *reader_suite(void)
{
    Suite *s = suite_create("trace_read");
    TCase *c = tcase_create("core");
    tcase_add_checked_fixture(c, setup, teardown);
    tcase_add_test(c, test_round_trip);
    tcase_add_test(c, test_bad_lines);
    tcase_add_test(c, test_position_past_context);
    tcase_add_test(c, test_versions);
    tcase_add_test(c, test_final_sequence);
    tcase_add_test(c, test_damage_never_crashes);
    suite_add_tcase(s, c);
    return s;
}

TEST_MAIN(reader_suite)
