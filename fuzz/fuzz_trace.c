/* fuzz_trace.c — libFuzzer target: the trace reader behind --view and --replay
 * (trace_read_buffer) on arbitrary bytes, then the replay behind --replay --compare on
 * the bundled chat model. A trace that reads must hand out records whose candidate,
 * attention and lens arrays are as long as the header's shape says (ASan watches every
 * read), a piece for every vocabulary id, and problems that are NUL-terminated lines.
 * Its sequence (holes, reordered and duplicated positions as the file has them) is
 * refused with a message or has a record at position p only at p, and replays without
 * a crash; every position and token the replay's summary names for the report is one
 * that the replay ran. fuzz_trace_order.c edits real traces instead. */
#include "fuzz.h"

#include <string.h>

#include "replay.h"
#include "trace_read.h"

static model *mdl;
static tokenizer *tok;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    llm_err err;
    if (model_open(fuzz_source_path("data/models/chat260K.bin"), NULL, &mdl, &err) != LLM_OK ||
        tokenizer_open(fuzz_source_path("data/models/tok512.bin"), 512, &tok, &err) != LLM_OK) {
        fprintf(stderr, "fuzz_trace: %s\n", err.text);
        exit(1);
    }
    return 0;
}

/* Replays the trace's final sequence as --replay --compare does and checks the summary
 * that its report prints from. */
static void replay_sequence(const trace_reader *r)
{
    const step_record **seq;
    trace_sequence_info info;
    llm_err err;
    llm_status st = trace_reader_sequence(r, &seq, &info, &err);
    FUZZ_CHECK(st == LLM_OK || (st == LLM_ERR_FORMAT && seq == NULL && strlen(err.text) > 0));
    if (st != LLM_OK) /* --view's fallback reads it all the same */
        FUZZ_CHECK(trace_reader_final(r, &seq) >= 0);
    int n = st == LLM_OK ? info.n : 0, held = 0;
    for (int p = 0; p < n; p++)
        held += seq[p] != NULL && seq[p]->pos == p;
    FUZZ_CHECK(held == info.held || st != LLM_OK);
    if (n == 0 || n > mdl->config.seq_len) {
        free(seq);
        return;
    }
    engine_options eo;
    engine_options_default(&eo);
    engine *e;
    FUZZ_CHECK(engine_new(mdl, tok, &eo, &e, &err) == LLM_OK);
    replay_summary s;
    replay_run(e, seq, n, trace_reader_header(r)->has_batch, NULL, NULL, &s, &err);
    int vocab = mdl->config.vocab_size;
    FUZZ_CHECK(s.positions <= n && s.compared <= s.positions && s.top1_same <= s.compared);
    FUZZ_CHECK(s.sampled_same <= s.sampled && s.sampled <= s.positions);
    if (s.first_top1_diff >= 0)
        FUZZ_CHECK(s.first_top1_diff < s.positions && s.first_top1_diff_token >= 0 &&
                   s.first_top1_diff_token < vocab);
    if (s.first_unlinked >= 0) /* the report names both tokens */
        FUZZ_CHECK(s.first_unlinked > 0 && s.first_unlinked < s.positions &&
                   s.first_unlinked_token >= 0 && s.first_unlinked_token < vocab &&
                   s.first_unlinked_chosen >= 0);
    if (s.first_choice_diff >= 0)
        FUZZ_CHECK(s.first_choice_diff < s.positions && s.first_choice_diff_token >= 0 &&
                   s.first_choice_diff_token < vocab);
    engine_free(e);
    free(seq);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    trace_reader *r;
    llm_err err;
    if (trace_read_buffer((const char *)data, size, &r, &err) != LLM_OK) {
        FUZZ_CHECK(r == NULL && strlen(err.text) > 0);
        return 0;
    }
    const trace_header *h = trace_reader_header(r);
    FUZZ_CHECK(h != NULL);
    for (int id = 0; id < h->n_vocab && id < 100000; id++)
        FUZZ_CHECK(trace_reader_piece(r, id) != NULL);
    trace_reader_piece(r, -1); /* NULL: the trace does not say */
    trace_reader_piece(r, h->n_vocab + 100000);
    volatile float sink = 0;
    for (int i = 0; i < trace_reader_count(r); i++) {
        const step_record *rec = trace_reader_record(r, i);
        FUZZ_CHECK(rec != NULL);
        FUZZ_CHECK(trace_reader_line(r, i) >= 1);
        FUZZ_CHECK(rec->n_top >= 0 && rec->n_top <= STEP_TOP_MAX);
        for (int k = 0; k < rec->n_top; k++)
            sink += rec->top[k].logit + rec->top[k].prob;
        /* attention and lens arrays are as long as the header's shape says */
        if (rec->attn) {
            FUZZ_CHECK(h->has_config && rec->pos >= 0);
            size_t n = (size_t)h->config.n_layers * (size_t)h->config.n_heads * ((size_t)rec->pos + 1);
            for (size_t k = 0; k < n; k++)
                sink += rec->attn[k];
        }
        if (rec->lens) {
            /* a headerless trace with a lens but no attention implies the layers only */
            FUZZ_CHECK(h->config.n_layers > 0);
            for (int l = 0; l < h->config.n_layers; l++)
                sink += rec->lens[l].prob[0] + (float)rec->lens[l].id[0];
        }
    }
    for (int i = 0; i < trace_reader_problem_count(r); i++)
        FUZZ_CHECK(strlen(trace_reader_problem(r, i)) < 4096);
    replay_sequence(r);
    (void)sink;
    trace_reader_free(r);
    return 0;
}
