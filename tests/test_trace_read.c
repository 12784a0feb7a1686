/* test_trace_read.c — the trace reader: a real run's trace reads back as the
 * engine's records (tokens, candidates, sampler decisions, attention, lens); bad,
 * cut and foreign lines are reported with their line numbers and skipped; headerless
 * (version 0) traces still read; a newer version is refused; a rewound run's final
 * sequence is the one on screen, records in any other order are read by position or
 * refused naming both lines of a position held twice; what is not a trace says so in
 * one line; a patching run's line reads back exactly, a malformed one is skipped with
 * its problem; and no damage to a buffer makes it crash. */
#include <math.h>
#include <string.h>

#include "engine.h"
#include "patching.h"
#include "steering.h"
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
    ck_assert_int_eq(h->panels, -1); /* a llama2.c file has no GGUF Q8_0 to pack */
    ck_assert_int_eq(h->k4_panels, -1); /* nor Q4_K */
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

/* A header with "raw_bytes" makes \udcXX a raw byte and \u00e9 an é in every line; a
 * trace without it (older, or headerless) reads \u00XX as the byte it was written for. */
START_TEST(test_raw_bytes_escapes)
{
    const char *now = "{\"llmchat_trace\":1,\"raw_bytes\":\"\\\\udcXX\",\"model\":{\"n_layers\":1,"
                      "\"n_heads\":2,\"dim\":8,\"vocab_size\":4},"
                      "\"vocab\":[\"\\u00e9\",\"\\udcff\",\"\\udce2\\udc82x\",\"d\"]}\n"
                      REC(0, 1, 2) "\n";
    trace_reader *r;
    llm_err err;
    ck_assert_int_eq(trace_read_buffer(now, strlen(now), &r, &err), LLM_OK);
    ck_assert_str_eq(trace_reader_piece(r, 0), "\xc3\xa9");
    ck_assert_str_eq(trace_reader_piece(r, 1), "\xff");
    ck_assert_str_eq(trace_reader_piece(r, 2), "\xe2\x82x");
    ck_assert_int_eq(trace_reader_count(r), 1);
    trace_reader_free(r);

    const char *v0 = "{\"pos\":0,\"token\":1,\"piece\":\"\\u00e9\",\"phase\":\"prompt\",\"next\":2,"
                     "\"top\":[]}\n"
                     "{\"pos\":1,\"token\":2,\"piece\":\"\\u00e9\",\"phase\":\"prompt\",\"next\":3,"
                     "\"top\":[]}\n";
    ck_assert_int_eq(trace_read_buffer(v0, strlen(v0), &r, &err), LLM_OK);
    ck_assert_str_eq(trace_reader_piece(r, 1), "\xe9");
    ck_assert_str_eq(trace_reader_piece(r, 2), "\xe9");
    trace_reader_free(r);

    /* a first line that is not JSON: without "raw_bytes" in it, an older trace */
    char broken[512];
    snprintf(broken, sizeof broken, "{\"llmchat_trace\":1,\"vocab\":[\n%s", v0);
    ck_assert_int_eq(trace_read_buffer(broken, strlen(broken), &r, &err), LLM_OK);
    ck_assert_str_eq(trace_reader_piece(r, 1), "\xe9");
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

    /* the panels a header says: Q8_0's and Q4_K's, on, off or not said (-1) */
    static const struct {
        const char *model;
        int panels, k4;
    } said[] = {
        {"{\"panels\":\"on\",\"k4_panels\":\"off\"}", 1, 0},
        {"{\"k4_panels\":\"on\"}", -1, 1},
        {"{\"panels\":\"off\",\"k4_panels\":\"maybe\"}", 0, -1},
    };
    for (size_t i = 0; i < sizeof said / sizeof said[0]; i++) {
        char buf[160];
        snprintf(buf, sizeof buf, "{\"llmchat_trace\":1,\"model\":%s}\n", said[i].model);
        ck_assert_int_eq(trace_read_buffer(buf, strlen(buf), &r, &err), LLM_OK);
        h = trace_reader_header(r);
        ck_assert_int_eq(h->panels, said[i].panels);
        ck_assert_int_eq(h->k4_panels, said[i].k4);
        trace_reader_free(r);
    }

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

/* Reads text (NUL-terminated) and its sequence; the reader in *r, the status returned. */
static llm_status sequence_of(const char *text, trace_reader **r, const step_record ***seq,
                              trace_sequence_info *info, llm_err *err)
{
    ck_assert_int_eq(trace_read_buffer(text, strlen(text), r, err), LLM_OK);
    return trace_reader_sequence(*r, seq, info, err);
}

/* Records in any order: a shuffled straight trace reads by position (the steering
 * carried over by position too); copies are ignored; positions missing are NULL. */
START_TEST(test_sequence_any_order)
{
    const char *steer = ",\"steer\":{\"vectors\":[],\"layers\":null,\"heads_out\":[[0,1]]}";
    char text[2048];
    snprintf(text, sizeof text, "%s%s\n%s\n%.*s%s}\n%s\n%s\n%s\n", HEADER, REC(3, 0, 1), REC(0, 1, 2),
             (int)strlen(REC(2, 3, 0)) - 1, REC(2, 3, 0), steer, REC(4, 1, -1), REC(1, 2, 3),
             REC(0, 1, 2));
    trace_reader *r;
    const step_record **seq;
    trace_sequence_info info;
    llm_err err;
    ck_assert_msg(sequence_of(text, &r, &seq, &info, &err) == LLM_OK, "%s", err.text);
    ck_assert_int_eq(info.n, 5);
    ck_assert_int_eq(info.held, 5);
    ck_assert(info.by_position);
    ck_assert_int_eq(info.copies, 1);
    ck_assert_int_eq(info.replaced, 0);
    ck_assert_msg(strstr(info.disorder, "line 2: the first record is of position 3"), "%s", info.disorder);
    ck_assert(!info.cut_short);
    for (int p = 0; p < 5; p++) {
        ck_assert_int_eq(seq[p]->pos, p);
        /* the steer on position 2's line holds from position 2 on, by position */
        ck_assert(p < 2 ? seq[p]->intervention == NULL : seq[p]->intervention != NULL);
    }
    free(seq);
    trace_reader_free(r);

    /* in order, positions missing: the sequence says so; the end is cut short */
    const char *gaps = HEADER REC(0, 1, 2) "\n" REC(1, 2, 3) "\n" REC(4, 1, 2) "\n";
    ck_assert_msg(sequence_of(gaps, &r, &seq, &info, &err) == LLM_OK, "%s", err.text);
    ck_assert_int_eq(info.n, 5);
    ck_assert_int_eq(info.held, 3);
    ck_assert(!info.by_position); /* ascending: nothing reordered */
    ck_assert(seq[2] == NULL && seq[3] == NULL && seq[4] != NULL);
    free(seq);
    trace_reader_free(r);
    const char *cut = "{\"llmchat_trace\":1,\"options\":{\"ctx\":8}}\n" REC(0, 1, 2) "\n" REC(1, 2, 3) "\n";
    ck_assert_int_eq(sequence_of(cut, &r, &seq, &info, &err), LLM_OK);
    ck_assert(info.cut_short); /* position 1 chose a token for position 2, which has no record */
    free(seq);
    trace_reader_free(r);
}
END_TEST

/* Rewinds keep working; what cannot be told apart from a rewind is refused, naming both
 * lines. */
START_TEST(test_sequence_rewinds_and_conflicts)
{
    trace_reader *r;
    const step_record **seq;
    trace_sequence_info info;
    llm_err err;
    /* a rewind, then a copy of the line in force for position 0: the copy forgets nothing */
    const char *rewound = HEADER REC(0, 1, 2) "\n" REC(1, 2, 3) "\n" REC(2, 3, 0) "\n"
        REC(1, 2, 0) "\n" REC(2, 0, -1) "\n" REC(0, 1, 2) "\n";
    ck_assert_msg(sequence_of(rewound, &r, &seq, &info, &err) == LLM_OK, "%s", err.text);
    ck_assert_int_eq(info.n, 3);
    ck_assert_int_eq(info.replaced, 2);
    ck_assert_int_eq(info.copies, 1);
    ck_assert(!info.by_position);
    ck_assert_ptr_eq(seq[1], trace_reader_record(r, 3));
    ck_assert_ptr_eq(seq[2], trace_reader_record(r, 4));
    free(seq);
    trace_reader_free(r);

    /* an unreadable line may have held the position a record skips, even in a trace
     * that rewinds: still read by the rewind rule */
    const char *damaged = HEADER REC(0, 1, 2) "\n" REC(1, 2, 3) "\n" REC(2, 3, 0) "\n"
        "garbage\n" REC(4, 3, 1) "\n" REC(2, 3, 1) "\n" REC(3, 1, -1) "\n";
    ck_assert_msg(sequence_of(damaged, &r, &seq, &info, &err) == LLM_OK, "%s", err.text);
    ck_assert_int_eq(info.n, 4);
    ck_assert_int_eq(info.replaced, 2);
    ck_assert(!info.by_position);
    ck_assert_int_eq(trace_reader_lines_skipped(r), 1);
    free(seq);
    trace_reader_free(r);

    /* a position written again with another token (no rewind does that) next to a line
     * out of order: the two records of position 1 are named */
    const char *conflict = HEADER REC(0, 1, 2) "\n" REC(1, 2, 3) "\n" REC(2, 3, 0) "\n"
        REC(1, 0, 0) "\n";
    ck_assert_int_eq(sequence_of(conflict, &r, &seq, &info, &err), LLM_ERR_FORMAT);
    ck_assert_msg(strstr(err.text, "lines 3 and 5 both hold position 1, with different records") &&
                  strstr(err.text, "line 5: position 1 is written again with token 0 where line 3 has 2"),
                  "%s", err.text);
    ck_assert_ptr_null(seq);
    /* --view still shows something: the rewind rule over the file as it stands */
    ck_assert_int_eq(trace_reader_final(r, &seq), 2);
    free(seq);
    trace_reader_free(r);
    const char *shuffled = HEADER REC(2, 3, 0) "\n" REC(0, 1, 2) "\n" REC(1, 2, 3) "\n"
        REC(2, 3, 1) "\n";
    ck_assert_int_eq(sequence_of(shuffled, &r, &seq, &info, &err), LLM_ERR_FORMAT);
    ck_assert_msg(strstr(err.text, "lines 2 and 5 both hold position 2") &&
                  strstr(err.text, "line 2: the first record is of position 2"), "%s", err.text);
    trace_reader_free(r);
}
END_TEST

/* A knocked-out head stays [layer, head] until the replaying model is known: an 8-head
 * trace's [1, 2] is head 2 of layer 1 on a 4-head model too, and a head the model lacks
 * is refused by name, not folded into another. */
START_TEST(test_steer_heads_stay_pairs)
{
    const char *eight =
        "{\"llmchat_trace\":1,\"model\":{\"n_layers\":5,\"n_heads\":8,\"dim\":64,\"vocab_size\":4}}\n"
        "{\"pos\":0,\"token\":1,\"phase\":\"prompt\",\"next\":-1,\"top\":[],"
        "\"steer\":{\"vectors\":[],\"layers\":null,\"heads_out\":[[1,2]]}}\n";
    const char *no_model =
        "{\"llmchat_trace\":1}\n"
        "{\"pos\":0,\"token\":1,\"phase\":\"prompt\",\"next\":-1,\"top\":[],"
        "\"steer\":{\"vectors\":[],\"layers\":null,\"heads_out\":[[0,9]]}}\n";
    trace_reader *r;
    llm_err err;
    ck_assert_int_eq(trace_read_buffer(eight, strlen(eight), &r, &err), LLM_OK);
    const intervention *in = trace_reader_record(r, 0)->intervention;
    ck_assert_ptr_nonnull(in);
    steering *four;
    ck_assert_int_eq(steering_new(4, 4, 64, &four, &err), LLM_OK);
    ck_assert_msg(steering_check(four, in, NULL, 0, &err) == LLM_OK, "%s", err.text);
    ck_assert_int_eq(steering_set(four, in, &err), LLM_OK);
    ck_assert(steering_is_out(four, 1, 2));
    ck_assert(!steering_is_out(four, 2, 2)); /* what 1 * 8 + 2 is on a 4-head model */
    steering_free(four);
    trace_reader_free(r);

    ck_assert_int_eq(trace_read_buffer(no_model, strlen(no_model), &r, &err), LLM_OK);
    in = trace_reader_record(r, 0)->intervention;
    steering *s;
    ck_assert_int_eq(steering_new(5, 8, 64, &s, &err), LLM_OK);
    ck_assert_int_eq(steering_check(s, in, NULL, 0, &err), LLM_ERR_MISMATCH);
    ck_assert_msg(strstr(err.text, "head [0, 9] is knocked out ([layer, head], from 0), but the model "
                                   "has 5 layers (0-4) of 8 heads (0-7)"), "%s", err.text);
    ck_assert_int_eq(steering_set(s, in, &err), LLM_ERR_MISMATCH);
    ck_assert_ptr_null(steering_mask(s));
    ck_assert(!steering_is_out(s, 1, 1)); /* what 0 * 8 + 9 would be */
    steering_free(s);
    trace_reader_free(r);
}
END_TEST

/* A head knocked out with its state reset comes back as heads_reset's [layer, head],
 * beside heads_out; a malformed heads_reset drops the steer with a problem line; a
 * model whose layer has no state (here: a steering not attached to a hybrid's pass,
 * so every layer is taken as attention) refuses it by name. */
START_TEST(test_steer_heads_reset)
{
    const char *text =
        "{\"llmchat_trace\":1,\"model\":{\"n_layers\":3,\"n_heads\":8,\"dim\":64,\"vocab_size\":4}}\n"
        "{\"pos\":0,\"token\":1,\"phase\":\"prompt\",\"next\":-1,\"top\":[],"
        "\"steer\":{\"vectors\":[],\"layers\":null,\"heads_out\":[[0,1],[2,5]],"
        "\"heads_reset\":[[2,5]]}}\n";
    trace_reader *r;
    llm_err err;
    ck_assert_int_eq(trace_read_buffer(text, strlen(text), &r, &err), LLM_OK);
    ck_assert_int_eq(trace_reader_problem_count(r), 0);
    const intervention *in = trace_reader_record(r, 0)->intervention;
    ck_assert_ptr_nonnull(in);
    ck_assert(in->n_heads_out == 2 && in->heads_out[1] == 2 * 8 + 5);
    ck_assert(in->n_heads_reset == 1 && in->heads_reset[0] == 2 * 8 + 5);
    steering *s;
    ck_assert_int_eq(steering_new(3, 8, 64, &s, &err), LLM_OK);
    ck_assert_int_eq(steering_check(s, in, NULL, 0, &err), LLM_ERR_MISMATCH);
    ck_assert_msg(strstr(err.text, "head [2, 5] is knocked out with its state reset"), "%s", err.text);
    ck_assert_int_eq(steering_set(s, in, &err), LLM_ERR_MISMATCH);
    ck_assert_ptr_null(steering_mask(s));
    steering_free(s);
    trace_reader_free(r);

    const char *bad[] = {"\"heads_reset\":3", "\"heads_reset\":[[0]]", "\"heads_reset\":[[3,0]]",
                         "\"heads_reset\":[[0,8]]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char line[512];
        snprintf(line, sizeof line,
                 "{\"llmchat_trace\":1,\"model\":{\"n_layers\":3,\"n_heads\":8,\"dim\":64,"
                 "\"vocab_size\":4}}\n{\"pos\":0,\"token\":1,\"phase\":\"prompt\",\"next\":-1,"
                 "\"top\":[],\"steer\":{\"vectors\":[],\"layers\":null,\"heads_out\":[],%s}}\n",
                 bad[i]);
        ck_assert_int_eq(trace_read_buffer(line, strlen(line), &r, &err), LLM_OK);
        ck_assert_msg(trace_reader_problem_count(r) == 1 &&
                          strstr(trace_reader_problem(r, 0), "\"heads_reset\""),
                      "%s: %s", bad[i],
                      trace_reader_problem_count(r) ? trace_reader_problem(r, 0) : "no problem");
        ck_assert_ptr_null(trace_reader_record(r, 0)->intervention);
        trace_reader_free(r);
    }
}
END_TEST

/* Knocked-out experts come back as the [layer, expert] pairs written, beside the heads;
 * a steer without experts_out (a trace written before it) has none; a malformed
 * experts_out drops the steer with a problem line. */
START_TEST(test_steer_experts)
{
    const char *moe =
        "{\"llmchat_trace\":1,\"model\":{\"n_layers\":2,\"n_heads\":4,\"dim\":64,\"vocab_size\":4}}\n"
        "{\"pos\":0,\"token\":1,\"phase\":\"prompt\",\"next\":2,\"top\":[],"
        "\"steer\":{\"vectors\":[],\"layers\":null,\"heads_out\":[[0,3]],"
        "\"experts_out\":[[0,5],[1,2]]}}\n"
        "{\"pos\":1,\"token\":2,\"phase\":\"prompt\",\"next\":-1,\"top\":[],"
        "\"steer\":{\"vectors\":[],\"layers\":null,\"heads_out\":[]}}\n";
    trace_reader *r;
    llm_err err;
    ck_assert_int_eq(trace_read_buffer(moe, strlen(moe), &r, &err), LLM_OK);
    ck_assert_int_eq(trace_reader_problem_count(r), 0);
    const intervention *in = trace_reader_record(r, 0)->intervention;
    ck_assert_ptr_nonnull(in);
    ck_assert_int_eq(in->n_heads_out, 1);
    ck_assert_int_eq(in->heads_out[0], 3);
    ck_assert_int_eq(in->n_experts_out, 2);
    ck_assert(in->experts_out[0].layer == 0 && in->experts_out[0].expert == 5);
    ck_assert(in->experts_out[1].layer == 1 && in->experts_out[1].expert == 2);
    const intervention *old = trace_reader_record(r, 1)->intervention;
    ck_assert_ptr_nonnull(old);
    ck_assert_int_eq(old->n_experts_out, 0);
    ck_assert_int_eq(old->n_heads_out, 0);
    steering *s;
    ck_assert_int_eq(steering_new(2, 4, 64, &s, &err), LLM_OK);
    ck_assert_int_eq(steering_experts(s, 8, 2, &err), LLM_OK);
    ck_assert_msg(steering_set(s, in, &err) == LLM_OK, "%s", err.text);
    ck_assert(steering_expert_is_out(s, 0, 5) && steering_expert_is_out(s, 1, 2) &&
              steering_is_out(s, 0, 3));
    ck_assert_int_eq(steering_set(s, old, &err), LLM_OK);
    ck_assert(!steering_expert_is_out(s, 0, 5));
    steering_free(s);
    trace_reader_free(r);

    const char *bad[] = {"\"experts_out\":[[0]]", "\"experts_out\":3",
                         "\"experts_out\":[[2,0]]", "\"experts_out\":[[0,-1]]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "{\"llmchat_trace\":1,\"model\":{\"n_layers\":2,\"n_heads\":4,\"dim\":64,"
                 "\"vocab_size\":4}}\n{\"pos\":0,\"token\":1,\"phase\":\"prompt\",\"next\":-1,"
                 "\"top\":[],\"steer\":{\"vectors\":[],\"layers\":null,\"heads_out\":[],%s}}\n",
                 bad[i]);
        ck_assert_int_eq(trace_read_buffer(text, strlen(text), &r, &err), LLM_OK);
        ck_assert_msg(trace_reader_problem_count(r) == 1 &&
                          strstr(trace_reader_problem(r, 0), "\"experts_out\" ([layer, expert])"),
                      "%s: %s", bad[i],
                      trace_reader_problem_count(r) ? trace_reader_problem(r, 0) : "no problem");
        ck_assert_ptr_null(trace_reader_record(r, 0)->intervention);
        trace_reader_free(r);
    }
}
END_TEST

/* Forced experts come back as the [layer, expert] pairs written, beside the experts
 * out; a steer without experts_forced (a trace written before it) has none; a
 * malformed experts_forced drops the steer with a problem line. */
START_TEST(test_steer_forced_experts)
{
    const char *moe =
        "{\"llmchat_trace\":1,\"model\":{\"n_layers\":2,\"n_heads\":4,\"dim\":64,\"vocab_size\":4}}\n"
        "{\"pos\":0,\"token\":1,\"phase\":\"prompt\",\"next\":2,\"top\":[],"
        "\"steer\":{\"vectors\":[],\"layers\":null,\"heads_out\":[[0,3]],"
        "\"experts_out\":[[0,5]],\"experts_forced\":[[0,1],[1,6]]}}\n"
        "{\"pos\":1,\"token\":2,\"phase\":\"prompt\",\"next\":-1,\"top\":[],"
        "\"steer\":{\"vectors\":[],\"layers\":null,\"heads_out\":[],"
        "\"experts_out\":[[1,2]]}}\n";
    trace_reader *r;
    llm_err err;
    ck_assert_int_eq(trace_read_buffer(moe, strlen(moe), &r, &err), LLM_OK);
    ck_assert_int_eq(trace_reader_problem_count(r), 0);
    const intervention *in = trace_reader_record(r, 0)->intervention;
    ck_assert_ptr_nonnull(in);
    ck_assert_int_eq(in->n_heads_out, 1);
    ck_assert_int_eq(in->heads_out[0], 3);
    ck_assert_int_eq(in->n_experts_out, 1);
    ck_assert(in->experts_out[0].layer == 0 && in->experts_out[0].expert == 5);
    ck_assert_int_eq(in->n_experts_forced, 2);
    ck_assert(in->experts_forced[0].layer == 0 && in->experts_forced[0].expert == 1);
    ck_assert(in->experts_forced[1].layer == 1 && in->experts_forced[1].expert == 6);
    const intervention *old = trace_reader_record(r, 1)->intervention;
    ck_assert_ptr_nonnull(old);
    ck_assert_int_eq(old->n_experts_forced, 0);
    ck_assert_int_eq(old->n_experts_out, 1);
    steering *s;
    ck_assert_int_eq(steering_new(2, 4, 64, &s, &err), LLM_OK);
    ck_assert_int_eq(steering_experts(s, 8, 2, &err), LLM_OK);
    ck_assert_msg(steering_set(s, in, &err) == LLM_OK, "%s", err.text);
    ck_assert(steering_expert_forced(s, 0) == 1 && steering_expert_forced(s, 1) == 6 &&
              steering_expert_is_out(s, 0, 5));
    ck_assert_int_eq(steering_set(s, old, &err), LLM_OK);
    ck_assert(steering_expert_forced(s, 0) == -1 && steering_expert_forced(s, 1) == -1);
    steering_free(s);
    trace_reader_free(r);

    const char *bad[] = {"\"experts_forced\":[[0]]", "\"experts_forced\":3",
                         "\"experts_forced\":[[2,0]]", "\"experts_forced\":[[0,-1]]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "{\"llmchat_trace\":1,\"model\":{\"n_layers\":2,\"n_heads\":4,\"dim\":64,"
                 "\"vocab_size\":4}}\n{\"pos\":0,\"token\":1,\"phase\":\"prompt\",\"next\":-1,"
                 "\"top\":[],\"steer\":{\"vectors\":[],\"layers\":null,\"heads_out\":[],%s}}\n",
                 bad[i]);
        ck_assert_int_eq(trace_read_buffer(text, strlen(text), &r, &err), LLM_OK);
        ck_assert_msg(trace_reader_problem_count(r) == 1 &&
                          strstr(trace_reader_problem(r, 0), "\"experts_forced\" ([layer, expert])"),
                      "%s: %s", bad[i],
                      trace_reader_problem_count(r) ? trace_reader_problem(r, 0) : "no problem");
        ck_assert_ptr_null(trace_reader_record(r, 0)->intervention);
        trace_reader_free(r);
    }
}
END_TEST

/* What is not a trace says so in one line; an empty file says it is empty. */
START_TEST(test_usable)
{
    const struct {
        const char *text;
        const char *says;
    } cases[] = {
        {"", "t.jsonl is empty: not an llmchat trace"},
        {"\n  \n", "t.jsonl is empty: not an llmchat trace"},
        {"# llmchat\n\nsome text\n", "t.jsonl is not an llmchat trace (line 1: not JSON"},
        {"{\"name\": \"x\"}\n", "t.jsonl is not an llmchat trace (line 1: no \"pos\""},
        {HEADER, "t.jsonl holds no step records"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        trace_reader *r;
        llm_err err;
        ck_assert_int_eq(trace_read_buffer(cases[i].text, strlen(cases[i].text), &r, &err), LLM_OK);
        ck_assert_int_eq(trace_reader_usable(r, "t.jsonl", &err), LLM_ERR_FORMAT);
        ck_assert_msg(strncmp(err.text, cases[i].says, strlen(cases[i].says)) == 0, "case %zu: %s",
                      i, err.text);
        trace_reader_free(r);
    }
    trace_reader *r;
    llm_err err;
    const char *ok = HEADER REC(0, 1, -1) "\n";
    ck_assert_int_eq(trace_read_buffer(ok, strlen(ok), &r, &err), LLM_OK);
    ck_assert_int_eq(trace_reader_usable(r, "t.jsonl", &err), LLM_OK);
    trace_reader_free(r);
}
END_TEST

/* A patching run written by trace_write_patch reads back as it was: the prompts, the
 * site, the metric, the tokens and every cell bit for bit (null for a NAN cell), the
 * baselines to 9 digits; a trace of the header and that line is usable. */
START_TEST(test_patch_round_trip)
{
    static const int clean[] = {1, 317, 269, 326, 263, 377, 267};
    static const int corrupt[] = {1, 326, 269, 317, 263, 377, 267};
    int n = 7;
    for (int kl = 0; kl < 2; kl++) {
        transformer *t;
        llm_err err;
        ck_assert_int_eq(transformer_new(m, n, &t, &err), LLM_OK);
        patch_spec sp = {.site = kl ? PATCH_HEAD_K : PATCH_RESID_PRE,
                         .metric = kl ? PATCH_KL : PATCH_LOGIT_DIFF, .answer = 326,
                         .wrong = 317, .layer_first = 1, .layer_last = kl ? 4 : 5};
        patch_result res;
        ck_assert_msg(patching_run(t, clean, corrupt, n, &sp, &res, &err) == LLM_OK, "%s",
                      err.text);
        res.grid[1] = NAN; /* as a layer without such a head has it */
        const char *path = temp_path("patch.jsonl");
        trace_writer *w;
        ck_assert_int_eq(trace_open(path, tok, &m->config, false, &w, &err), LLM_OK);
        trace_describe(w, &(trace_run){.mode = "patch", .m = m, .ctx = n});
        ck_assert_int_eq(trace_write_patch(w, &sp, &res, clean, corrupt, n), LLM_OK);
        ck_assert_int_eq(trace_close(w, &err), LLM_OK);
        trace_reader *r;
        ck_assert_int_eq(trace_read_file(path, &r, &err), LLM_OK);
        ck_assert_int_eq(trace_reader_problem_count(r), 0);
        ck_assert_int_eq(trace_reader_count(r), 0);
        ck_assert_int_eq(trace_reader_usable(r, path, &err), LLM_OK);
        ck_assert_str_eq(trace_reader_header(r)->mode, "patch");
        const trace_patch *p = trace_reader_patch(r);
        ck_assert_ptr_nonnull(p);
        ck_assert_int_eq(p->site, sp.site);
        ck_assert_int_eq(p->metric, sp.metric);
        ck_assert_int_eq(p->layer_first, 1);
        ck_assert_int_eq(p->layer_last, sp.layer_last);
        ck_assert_int_eq(p->n, n);
        ck_assert_mem_eq(p->ids, clean, sizeof clean);
        ck_assert_mem_eq(p->corrupt_ids, corrupt, sizeof corrupt);
        ck_assert_int_eq(p->answer, kl ? -1 : res.answer);
        ck_assert_int_eq(p->wrong, kl ? -1 : res.wrong);
        ck_assert_int_eq(p->rows, res.rows);
        ck_assert_int_eq(p->cols, kl ? m->config.n_kv_heads : n);
        ck_assert_int_eq(p->runs, res.runs);
        ck_assert_int_eq(p->positions_run, res.positions_run);
        ck_assert(isnan(p->grid[1]));
        for (int i = 0; i < res.rows * res.cols; i++)
            ck_assert_msg(i == 1 || memcmp(&p->grid[i], &res.grid[i], sizeof(float)) == 0,
                          "cell %d: %.9g, written %.9g", i, p->grid[i], res.grid[i]);
        ck_assert_double_eq_tol(p->clean, res.clean, 1e-8 * fmax(1, fabs(res.clean)));
        ck_assert_double_eq_tol(p->corrupt, res.corrupt, 1e-8 * fmax(1, fabs(res.corrupt)));
        trace_reader_free(r);
        unlink(path);
        patch_result_free(&res);
        transformer_free(t);
    }
}
END_TEST

/* resid_pre of the header's one layer (0-1), two tokens; %s: the grid */
#define PATCH_LINE(site, ids, answer, rows, grid) \
    "{\"patch\":{\"site\":\"" site "\",\"metric\":\"logit_diff\",\"layers\":[0,1]," \
    "\"ids\":" ids ",\"corrupt_ids\":[0,2],\"answer\":" answer ",\"wrong\":2," \
    "\"clean\":1.5,\"corrupt\":-0.25,\"rows\":" rows ",\"cols\":2,\"grid\":" grid "}}\n"
#define PATCH_GOOD PATCH_LINE("resid_pre", "[0,1]", "1", "2", "[[0,0.5],[null,1]]")

/* A good patch line is read exactly; a malformed one is skipped with a problem on its
 * line (the trace then holds nothing usable, and says why); a second is skipped. */
START_TEST(test_patch_bad_lines)
{
    trace_reader *r;
    llm_err err;
    const char *good = HEADER PATCH_GOOD;
    ck_assert_int_eq(trace_read_buffer(good, strlen(good), &r, &err), LLM_OK);
    ck_assert_int_eq(trace_reader_problem_count(r), 0);
    ck_assert_int_eq(trace_reader_usable(r, "t.jsonl", &err), LLM_OK);
    const trace_patch *p = trace_reader_patch(r);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(p->site, PATCH_RESID_PRE);
    ck_assert_int_eq(p->metric, PATCH_LOGIT_DIFF);
    ck_assert(p->layer_first == 0 && p->layer_last == 1 && p->rows == 2 && p->cols == 2);
    ck_assert(p->n == 2 && p->ids[1] == 1 && p->corrupt_ids[1] == 2);
    ck_assert(p->answer == 1 && p->wrong == 2 && p->clean == 1.5 && p->corrupt == -0.25);
    ck_assert(p->grid[0] == 0 && p->grid[1] == 0.5f && isnan(p->grid[2]) && p->grid[3] == 1);
    trace_reader_free(r);

    const struct {
        const char *line;
        const char *says;
    } cases[] = {
        {PATCH_LINE("nowhere", "[0,1]", "1", "2", "[[0,0.5],[null,1]]"), "\"site\" is not a patching site"},
        {PATCH_LINE("head", "[0,1]", "1", "2", "[[0,0.5],[null,1]]"), "\"layers\" are not [first, last] of layers 0-0"},
        {PATCH_LINE("resid_pre", "[0,7]", "1", "2", "[[0,0.5],[null,1]]"), "an id outside the vocabulary (0-3)"},
        {PATCH_LINE("resid_pre", "[0,1,2]", "1", "2", "[[0,0.5],[null,1]]"), "are not two prompts of one length"},
        {PATCH_LINE("resid_pre", "[0,1]", "2", "2", "[[0,0.5],[null,1]]"), "\"answer\" and \"wrong\" are not two token ids"},
        {PATCH_LINE("resid_pre", "[0,1]", "null", "2", "[[0,0.5],[null,1]]"), "\"answer\" and \"wrong\""},
        {PATCH_LINE("resid_pre", "[0,1]", "1", "3", "[[0,0.5],[null,1]]"), "\"rows\" and \"cols\" are not 2 layers x 2 positions"},
        {PATCH_LINE("resid_pre", "[0,1]", "1", "2", "[[0,0.5],[1]]"), "\"grid\" is not 2 rows x 2 columns"},
        {PATCH_LINE("resid_pre", "[0,1]", "1", "2", "[[0,0.5]]"), "\"grid\" is not 2 rows x 2 columns"},
        {PATCH_LINE("resid_pre", "[0,1]", "1", "2", "[[0,\"x\"],[null,1]]"), "cell (0, 1) of the patch line's \"grid\" is not a number"},
        {PATCH_LINE("resid_pre", "[0,1]", "1", "2", "{}"), "\"grid\" is not 2 rows"},
        {"{\"patch\":5}\n", "\"patch\" is not an object"},
        {"{\"patch\":{\"site\":\"mlp_out\",\"metric\":\"l2\"}}\n", "\"metric\" is not logit_diff or kl"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text, "%s%s", HEADER, cases[i].line);
        ck_assert_int_eq(trace_read_buffer(text, strlen(text), &r, &err), LLM_OK);
        ck_assert_ptr_null(trace_reader_patch(r));
        ck_assert_int_eq(trace_reader_problem_count(r), 1);
        ck_assert_int_eq(trace_reader_lines_skipped(r), 1);
        ck_assert_msg(strncmp(trace_reader_problem(r, 0), "line 2: ", 8) == 0 &&
                          strstr(trace_reader_problem(r, 0), cases[i].says),
                      "case %zu: %s", i, trace_reader_problem(r, 0));
        ck_assert_int_eq(trace_reader_usable(r, "t.jsonl", &err), LLM_ERR_FORMAT);
        ck_assert_msg(strstr(err.text, "t.jsonl holds no step records that could be read (line 2: "),
                      "case %zu: %s", i, err.text);
        trace_reader_free(r);
    }
    const char *twice = HEADER PATCH_GOOD PATCH_LINE("mlp_out", "[0,1]", "1", "2", "[[0,0.5],[null,1]]");
    ck_assert_int_eq(trace_read_buffer(twice, strlen(twice), &r, &err), LLM_OK);
    ck_assert_ptr_nonnull(trace_reader_patch(r));
    ck_assert_int_eq(trace_reader_patch(r)->site, PATCH_RESID_PRE);
    ck_assert_str_eq(trace_reader_problem(r, 0), "line 3: a second patch line; skipped");
    trace_reader_free(r);
    size_t len = strlen(good); /* every prefix and damaged copies: no crash, no leak */
    char copy[1024];
    unsigned x = 777;
    for (size_t round = 0; round < len + 400; round++) {
        size_t n = round <= len ? round : len;
        memcpy(copy, good, n);
        for (int k = 0; round > len && k < 1 + (int)(round % 4); k++) {
            x = x * 1103515245u + 12345u;
            copy[(x >> 8) % len] = "{}[],:\"0123456789-.enul "[(x >> 16) % 24];
        }
        if (trace_read_buffer(copy, n, &r, &err) == LLM_OK) {
            const trace_patch *q = trace_reader_patch(r);
            if (q)
                ck_assert(q->rows * q->cols >= 1 && q->n >= 1 && q->ids && q->grid);
            trace_reader_free(r);
        }
    }
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
    tcase_add_test(c, test_raw_bytes_escapes);
    tcase_add_test(c, test_final_sequence);
    tcase_add_test(c, test_sequence_any_order);
    tcase_add_test(c, test_sequence_rewinds_and_conflicts);
    tcase_add_test(c, test_steer_heads_stay_pairs);
    tcase_add_test(c, test_steer_experts);
    tcase_add_test(c, test_steer_heads_reset);
    tcase_add_test(c, test_steer_forced_experts);
    tcase_add_test(c, test_usable);
    tcase_add_test(c, test_patch_round_trip);
    tcase_add_test(c, test_patch_bad_lines);
    tcase_add_test(c, test_damage_never_crashes);
    suite_add_tcase(s, c);
    return s;
}

TEST_MAIN(reader_suite)
