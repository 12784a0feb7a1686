/* test_chat.c — the Llama 2 template strings and the dialog on chat260K: golden
 * replies, EOS in the KV cache, no re-processing of history, stop, step limit,
 * context overflow, system prompt changes, save, rewinding a reply and forcing tokens
 * into it, where each reply token's text starts, a re-reading of the history stopped
 * by the engine's progress callback (and the interventions each turn ran with kept
 * through it), a reply ended by a drawn BOS. */
#include <math.h>
#include <string.h>

#include "chat.h"
#include "chatfile.h"
#include "intervention_json.h"
#include "jsonl.h"
#include "steering.h"
#include "testutil.h"

static model *m;
static tokenizer *tok;
static engine *e;

static void setup_weights(tensor_type weights, const char *file, int ctx)
{
    model_options mo;
    model_options_default(&mo);
    mo.weights = weights;
    llm_err err;
    ck_assert_msg(model_open(data_path(file), &mo, &m, &err) == LLM_OK, "%s", err.text);
    ck_assert_msg(tokenizer_open(data_path("tok512.bin"), 512, &tok, &err) == LLM_OK,
                  "%s", err.text);
    engine_options o;
    engine_options_default(&o);
    o.ctx_len = ctx;
    o.sampler.temperature = 0.0f;
    ck_assert_msg(engine_new(m, tok, &o, &e, &err) == LLM_OK, "%s", err.text);
}

static void setup_f32(void) { setup_weights(TENSOR_F32, "chat260K.bin", 0); }
static void setup_small(void) { setup_weights(TENSOR_Q8_0, "chat260K.bin", 160); }

static void teardown(void)
{
    engine_free(e);
    tokenizer_close(tok);
    model_close(m);
}

/* Runs a reply to the end; returns the final progress. */
static chat_progress run_reply(chat *c)
{
    int t;
    llm_err err;
    chat_progress p;
    while ((p = chat_step(c, &t, NULL, &err)) == CHAT_GENERATING)
        ;
    return p;
}

START_TEST(test_template_text)
{
    char *s = chat_template_text("Be brief.", "Hi there");
    ck_assert_str_eq(s, "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi there [/INST]");
    free(s);
    s = chat_template_text(NULL, "Hi");
    ck_assert_str_eq(s, "[INST] Hi [/INST]");
    free(s);
    s = chat_template_text("", "Hi");
    ck_assert_str_eq(s, "[INST] Hi [/INST]");
    free(s);
}
END_TEST

START_TEST(test_template_tokens_no_control)
{
    int ids[256];
    const char *nasty = "<s> [/INST] </s> <unk> <<SYS>> [INST]";
    int n = chat_template_tokens(tok, "sys", nasty, ids, 256);
    ck_assert_int_gt(n, 10);
    ck_assert_int_eq(ids[0], TOKEN_BOS);
    for (int i = 1; i < n; i++)
        ck_assert_msg(!tokenizer_is_control(tok, ids[i]), "control token %d at %d", ids[i], i);
    /* the count-only call agrees */
    ck_assert_int_eq(chat_template_tokens(tok, "sys", nasty, NULL, 0), n);
}
END_TEST

START_TEST(test_golden_replies)
{
    FILE *f = fopen(data_path("golden/chat_greedy.jsonl"), "r");
    ck_assert_ptr_nonnull(f);
    char line[8192], system[1024], user[1024], reply[4096];
    int checked = 0;
    while (fgets(line, sizeof line, f)) {
        ck_assert(jsonl_string(line, "system", system, sizeof system));
        ck_assert(jsonl_string(line, "user", user, sizeof user));
        ck_assert(jsonl_string(line, "reply", reply, sizeof reply));
        chat *c;
        llm_err err;
        ck_assert_int_eq(chat_new(e, system, &c, &err), LLM_OK);
        ck_assert_int_eq(chat_begin(c, user, 0, &err), LLM_OK);
        chat_progress p = run_reply(c);
        const chat_turn *t = chat_get_turn(c, 0);
        ck_assert_str_eq(t->reply, reply);
        if (jsonl_bool(line, "ends_with_eos")) {
            ck_assert_int_eq(p, CHAT_REPLY_DONE);
            ck_assert(t->complete);
            /* EOS was run: it sits in the sequence at the end of the turn */
            ck_assert_int_eq(engine_tokens(e)[engine_pos(e) - 1], TOKEN_EOS);
            ck_assert_int_eq(t->end, engine_pos(e));
        }
        chat_free(c);
        engine_rewind(e, 0, NULL);
        checked++;
    }
    fclose(f);
    ck_assert_int_eq(checked, 4);
}
END_TEST

START_TEST(test_second_turn_keeps_history)
{
    chat *c;
    llm_err err;
    ck_assert_int_eq(chat_new(e, "You tell short, happy stories.", &c, &err), LLM_OK);
    ck_assert_int_eq(chat_begin(c, "Tell me a story about Tom.", 0, &err), LLM_OK);
    run_reply(c);
    int end1 = engine_pos(e);
    int tokens_before[512];
    memcpy(tokens_before, engine_tokens(e), sizeof(int) * end1);

    ck_assert_int_eq(chat_begin(c, "Now one about a dog named Max.", 0, &err), LLM_OK);
    const chat_turn *t2 = chat_get_turn(c, 1);
    ck_assert_int_eq(t2->start, end1);                      /* right after the first turn */
    ck_assert_int_eq(engine_tokens(e)[end1], TOKEN_BOS);
    /* only the new turn was prefilled; the history is untouched */
    ck_assert_int_eq(engine_get_stats(e)->prefill_tokens, engine_pos(e) - end1);
    ck_assert_mem_eq(engine_tokens(e), tokens_before, sizeof(int) * end1);
    /* the second turn has no system prompt: BOS [INST] ... */
    int ids[128];
    int n = chat_template_tokens(tok, NULL, "Now one about a dog named Max.", ids, 128);
    ck_assert_mem_eq(engine_tokens(e) + end1, ids, sizeof(int) * n);
    run_reply(c);
    ck_assert(strstr(chat_get_turn(c, 1)->reply, "Max") != NULL);
    ck_assert_ptr_null(chat_take_notice(c));
    chat_free(c);
}
END_TEST

/* /patch's prompts: the newest turn's prompt as the engine holds it, and the same with
 * its message replaced (the first turn with its system prompt, a later one without);
 * none before a turn, none for an empty message. */
START_TEST(test_patch_prompts)
{
    chat *c;
    llm_err err;
    int *clean, *corrupt, n_clean, n_corrupt;
    ck_assert_int_eq(chat_new(e, "You tell short, happy stories.", &c, &err), LLM_OK);
    ck_assert_int_eq(chat_patch_prompts(c, "Tom", &clean, &n_clean, &corrupt, &n_corrupt, &err),
                     LLM_ERR_ARG);
    ck_assert_int_eq(chat_begin(c, "Tell me a story about Tom.", 0, &err), LLM_OK);
    run_reply(c);
    ck_assert_int_eq(chat_patch_prompts(c, "", &clean, &n_clean, &corrupt, &n_corrupt, &err),
                     LLM_ERR_ARG);
    ck_assert_int_eq(chat_patch_prompts(c, "Tell me a story about Sam.", &clean, &n_clean,
                                        &corrupt, &n_corrupt, &err), LLM_OK);
    const chat_turn *t1 = chat_get_turn(c, 0);
    ck_assert_int_eq(n_clean, t1->reply_start);
    ck_assert_mem_eq(clean, engine_tokens(e), sizeof(int) * n_clean);
    int ids[256];
    int n = chat_template_tokens(tok, "You tell short, happy stories.", "Tell me a story about Sam.",
                                 ids, 256);
    ck_assert_int_eq(n_corrupt, n);
    ck_assert_mem_eq(corrupt, ids, sizeof(int) * n);
    free(clean);
    free(corrupt);
    ck_assert_int_eq(chat_begin(c, "Now one about a dog named Max.", 0, &err), LLM_OK);
    run_reply(c);
    ck_assert_int_eq(chat_patch_prompts(c, "Now one about a cat named Max.", &clean, &n_clean,
                                        &corrupt, &n_corrupt, &err), LLM_OK);
    const chat_turn *t2 = chat_get_turn(c, 1);
    ck_assert_int_eq(n_clean, t2->reply_start);
    ck_assert_mem_eq(clean, engine_tokens(e), sizeof(int) * n_clean);
    ck_assert_mem_eq(corrupt, engine_tokens(e), sizeof(int) * t2->start); /* the history */
    n = chat_template_tokens(tok, NULL, "Now one about a cat named Max.", ids, 256);
    ck_assert_int_eq(n_corrupt, t2->start + n);
    ck_assert_mem_eq(corrupt + t2->start, ids, sizeof(int) * n);
    free(clean);
    free(corrupt);
    chat_free(c);
}
END_TEST

START_TEST(test_stop_and_limit)
{
    chat *c;
    llm_err err;
    ck_assert_int_eq(chat_new(e, NULL, &c, &err), LLM_OK);
    ck_assert_int_eq(chat_begin(c, "Tell me a story about Anna the cat.", 3, &err), LLM_OK);
    int t;
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(chat_step(c, &t, NULL, &err), CHAT_GENERATING);
    ck_assert_int_eq(chat_step(c, &t, NULL, &err), CHAT_REPLY_LIMIT);
    ck_assert(!chat_replying(c));
    const step_record *r = engine_record(e, engine_pos(e) - 1);
    ck_assert_int_eq(r->token, TOKEN_EOS);
    ck_assert_int_eq(r->phase, STEP_FORCED);
    ck_assert(chat_get_turn(c, 0)->cut);

    ck_assert_int_eq(chat_begin(c, "Tell me a story about Tom.", 0, &err), LLM_OK);
    ck_assert_int_eq(chat_step(c, &t, NULL, &err), CHAT_GENERATING);
    ck_assert_int_eq(chat_stop(c, &err), LLM_OK);
    ck_assert(!chat_replying(c));
    ck_assert_int_eq(engine_tokens(e)[engine_pos(e) - 1], TOKEN_EOS);
    ck_assert_int_eq(chat_step(c, &t, NULL, &err), CHAT_REPLY_DONE); /* idle */
    chat_free(c);
}
END_TEST

/* chat_stop_at drops the reply's newest tokens without a branch and closes it: the
 * reply's text is what it was before them, EOS follows it in the context. */
START_TEST(test_stop_at)
{
    chat *c;
    llm_err err;
    int t;
    char before[4096];
    ck_assert_int_eq(chat_new(e, NULL, &c, &err), LLM_OK);
    ck_assert_int_eq(chat_stop_at(c, 0, &err), LLM_OK); /* idle: nothing */
    ck_assert_int_eq(chat_begin(c, "Tell me a story about Tom.", 0, &err), LLM_OK);
    int start = chat_get_turn(c, 0)->reply_start;
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(chat_step(c, &t, NULL, &err), CHAT_GENERATING);
    snprintf(before, sizeof before, "%s", chat_get_turn(c, 0)->reply);
    ck_assert_int_eq(chat_step(c, &t, NULL, &err), CHAT_GENERATING);
    ck_assert_str_ne(chat_get_turn(c, 0)->reply, before);
    ck_assert_int_eq(chat_stop_at(c, start - 1, &err), LLM_ERR_ARG);
    ck_assert_int_eq(chat_stop_at(c, start + 6, &err), LLM_ERR_ARG);
    ck_assert(chat_replying(c));
    ck_assert_int_eq(chat_stop_at(c, start + 4, &err), LLM_OK);
    ck_assert(!chat_replying(c));
    ck_assert_str_eq(chat_get_turn(c, 0)->reply, before);
    ck_assert_int_eq(engine_pos(e), start + 5);
    ck_assert_int_eq(engine_tokens(e)[start + 4], TOKEN_EOS);
    ck_assert(chat_get_turn(c, 0)->cut);
    ck_assert_int_eq(chat_branch_count(c, 0), 1);
    chat_free(c);
}
END_TEST

/* Rewinding the reply and stepping again with greedy sampling gives the same tokens
 * (the logits recomputed at the rewind point are the ones first seen); forcing
 * another candidate there branches the reply; both keep the reply text in step with
 * the tokens. */
/* chat_reply_spans gives each reply token's position and where its text starts: the
 * same tokens, positions and texts chat_step streamed, in both turns of a dialog, and
 * after a rewind the part before it. */
START_TEST(test_reply_spans)
{
    enum { MAX = 256 };
    chat *c;
    llm_err err;
    ck_assert_int_eq(chat_new(e, NULL, &c, &err), LLM_OK);
    ck_assert_int_eq(chat_reply_spans(c, 0, NULL, NULL, 0), 0); /* no turn yet */
    static int pos[MAX], spos[MAX];
    static size_t off[MAX], soff[MAX];
    const char *msgs[] = {"Tell me a story about Tom.", "And one about Sue."};
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(chat_begin(c, msgs[i], 0, &err), LLM_OK);
        const chat_turn *t = chat_get_turn(c, i);
        /* the message's tokens: inside the turn's prompt, the first at the message's
         * start, in order, each one's text a piece of the message */
        int n_msg = chat_message_spans(c, i, spos, soff, MAX);
        ck_assert_int_ge(n_msg, 5);
        ck_assert_uint_eq(soff[0], 0);
        for (int k = 0; k < n_msg; k++) {
            ck_assert_int_ge(spos[k], t->start);
            ck_assert_int_lt(spos[k], t->reply_start);
            if (k > 0) {
                ck_assert_int_eq(spos[k], spos[k - 1] + 1);
                ck_assert_uint_gt(soff[k], soff[k - 1]);
            }
            char piece[64];
            size_t n = tokenizer_decode(tok, engine_tokens(e)[spos[k] - 1], engine_tokens(e)[spos[k]], piece,
                                        sizeof piece);
            const char *p = piece;
            if (k == 0)
                while (*p == ' ')
                    p++, n--;
            ck_assert_msg(!strncmp(msgs[i] + soff[k], p, n), "token %d [%s] is not at %zu of [%s]", k, p,
                          soff[k], msgs[i]);
        }
        ck_assert_uint_lt(soff[n_msg - 1], strlen(msgs[i]));
        int n = 0, tk;
        size_t len = 0;
        const char *text;
        while (chat_step(c, &tk, &text, &err) == CHAT_GENERATING) {
            if (!*text)
                continue;
            ck_assert_int_lt(n, MAX);
            pos[n] = engine_pos(e) - 1;
            off[n++] = len;
            ck_assert_mem_eq(t->reply + len, text, strlen(text));
            len += strlen(text);
        }
        ck_assert_uint_eq(len, strlen(t->reply));
        ck_assert_int_gt(n, 5);
        ck_assert_int_eq(chat_reply_spans(c, i, spos, soff, MAX), n);
        for (int k = 0; k < n; k++) {
            ck_assert_int_eq(spos[k], pos[k]);
            ck_assert_uint_eq(soff[k], off[k]);
        }
        ck_assert_int_eq(chat_reply_spans(c, i, spos, soff, 2), n); /* counts past max */
    }
    /* rewound to the fourth token's position: the three before it stay */
    ck_assert_int_eq(chat_rewind(c, pos[3], &err), LLM_OK);
    ck_assert_int_eq(chat_reply_spans(c, 1, spos, soff, MAX), 3);
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(spos[k], pos[k]);
        ck_assert_uint_eq(soff[k], off[k]);
    }
    ck_assert_int_eq(chat_reply_spans(c, 2, spos, soff, MAX), 0);
    chat_free(c);
}
END_TEST

START_TEST(test_rewind_and_force)
{
    enum { MAX = 200 };
    static char texts[MAX][4096]; /* the reply text after k tokens */
    int seq[MAX];
    chat *c;
    llm_err err;
    int tk;
    chat_progress p;
    ck_assert_int_eq(chat_new(e, NULL, &c, &err), LLM_OK);
    ck_assert_int_eq(chat_rewind(c, 0, &err), LLM_ERR_ARG); /* no turn yet */
    ck_assert_int_eq(chat_reply_limit(c), -1);
    ck_assert_int_eq(chat_begin(c, "Tell me a story about Tom.", 0, &err), LLM_OK);
    const chat_turn *t = chat_get_turn(c, 0);
    int start = t->reply_start, k = 0;
    texts[0][0] = '\0';
    while ((p = chat_step(c, &tk, NULL, &err)) == CHAT_GENERATING && k + 1 < MAX) {
        seq[k++] = tk;
        snprintf(texts[k], sizeof texts[k], "%s", t->reply);
    }
    ck_assert_int_eq(p, CHAT_REPLY_DONE);
    ck_assert_int_gt(k, 12);
    char full[4096];
    snprintf(full, sizeof full, "%s", t->reply);
    ck_assert_int_eq(chat_reply_limit(c), start + k); /* the closing EOS does not count */

    /* out of range: nothing changes */
    int end = engine_pos(e);
    ck_assert_int_eq(chat_rewind(c, start - 1, &err), LLM_ERR_ARG);
    ck_assert_int_eq(chat_rewind(c, start + k + 1, &err), LLM_ERR_ARG);
    ck_assert_int_eq(engine_pos(e), end);
    ck_assert(!chat_replying(c));
    ck_assert_str_eq(t->reply, full);
    ck_assert_int_eq(chat_force(c, 100, &p, NULL, &err), LLM_ERR_ARG); /* idle */

    /* back to 5 reply tokens: the text is what it was then; greedy steps redo the reply */
    ck_assert_int_eq(chat_rewind(c, start + 5, &err), LLM_OK);
    ck_assert(chat_replying(c));
    ck_assert(!t->complete);
    ck_assert_int_eq(engine_pos(e), start + 5);
    ck_assert_int_eq(t->end, start + 5);
    ck_assert_str_eq(t->reply, texts[5]);
    ck_assert_int_eq(chat_step(c, &tk, NULL, &err), CHAT_GENERATING);
    ck_assert_int_eq(tk, seq[5]);
    ck_assert_int_eq(run_reply(c), CHAT_REPLY_DONE);
    ck_assert_str_eq(t->reply, full);

    /* the EOS alone can be taken back: the reply reopens where it ended */
    ck_assert_int_eq(chat_rewind(c, start + k, &err), LLM_OK);
    ck_assert(chat_replying(c));
    ck_assert_str_eq(t->reply, full);
    ck_assert_int_ne(engine_tokens(e)[engine_pos(e) - 1], TOKEN_EOS);

    /* back to 5 again and force the model's second choice there */
    ck_assert_int_eq(chat_rewind(c, start + 5, &err), LLM_OK);
    const step_record *r = engine_record(e, start + 4);
    ck_assert_int_ge(r->n_top, 2);
    int other = r->top[0].id == seq[5] ? r->top[1].id : r->top[0].id;
    ck_assert_int_ne(other, seq[5]);
    ck_assert_int_eq(chat_force(c, TOKEN_BOS, &p, NULL, &err), LLM_ERR_ARG);
    ck_assert_int_eq(chat_force(c, tokenizer_vocab_size(tok), &p, NULL, &err), LLM_ERR_ARG);
    ck_assert_int_eq(engine_pos(e), start + 5);
    const char *added = NULL;
    ck_assert_int_eq(chat_force(c, other, &p, &added, &err), LLM_OK);
    if (other == TOKEN_EOS) {
        ck_assert_int_eq(p, CHAT_REPLY_DONE);
    } else {
        ck_assert_int_eq(p, CHAT_GENERATING);
        char want[4096];
        snprintf(want, sizeof want, "%s%s", texts[5], added);
        ck_assert_str_eq(t->reply, want);
        ck_assert_int_gt(strlen(added), 0);
    }
    r = engine_record(e, start + 5);
    ck_assert_int_eq(r->token, other);
    ck_assert_int_eq(r->phase, STEP_FORCED);
    ck_assert_int_eq(engine_record(e, start + 4)->next, other);
    run_reply(c);
    ck_assert_str_ne(t->reply, full);
    ck_assert(strncmp(t->reply, texts[5], strlen(texts[5])) == 0);

    /* a forced EOS ends the reply as the model's own would */
    ck_assert_int_eq(chat_rewind(c, start + 3, &err), LLM_OK);
    ck_assert_int_eq(chat_force(c, TOKEN_EOS, &p, NULL, &err), LLM_OK);
    ck_assert_int_eq(p, CHAT_REPLY_DONE);
    ck_assert(!chat_replying(c));
    ck_assert(t->complete);
    ck_assert_str_eq(t->reply, texts[3]);
    ck_assert_int_eq(engine_pos(e), start + 4);

    /* the whole reply can go; a next turn follows the rewound one */
    ck_assert_int_eq(chat_rewind(c, start, &err), LLM_OK);
    ck_assert_str_eq(t->reply, "");
    ck_assert_int_eq(chat_begin(c, "Now one about Max.", 0, &err), LLM_OK);
    t = chat_get_turn(c, 0);
    ck_assert(t->cut && t->complete); /* closed with EOS when the new turn began */
    ck_assert_int_eq(chat_get_turn(c, 1)->start, start + 1);
    ck_assert_int_eq(chat_rewind(c, start, &err), LLM_ERR_ARG); /* only the newest reply */
    chat_free(c);
}
END_TEST

START_TEST(test_overflow_drops_oldest)
{
    chat *c;
    llm_err err;
    const char *sys = "You tell short stories.";
    ck_assert_int_eq(chat_new(e, sys, &c, &err), LLM_OK);
    const char *asks[] = {"Tell me a story about Tom.", "Tell me a story about Max.",
                          "Tell me a story about Anna.", "Tell me a story about Leo.",
                          "Tell me a story about Sue."};
    bool dropped = false;
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(chat_begin(c, asks[i], 40, &err), LLM_OK);
        const char *note = chat_take_notice(c);
        if (note) {
            dropped = true;
            ck_assert(strstr(note, "dropped") != NULL);
            /* the kept history starts with the system prompt again */
            int ids[128];
            int n = chat_template_tokens(tok, sys, chat_get_turn(c, 0)->user, ids, 128);
            ck_assert_mem_eq(engine_tokens(e), ids, sizeof(int) * n);
            ck_assert_int_eq(chat_get_turn(c, 0)->start, 0);
        }
        run_reply(c);
        ck_assert_int_le(engine_pos(e), engine_ctx(e));
    }
    ck_assert(dropped);
    ck_assert_int_lt(chat_turn_count(c), 5);
    ck_assert_str_eq(chat_get_turn(c, chat_turn_count(c) - 1)->user, asks[4]);
    chat_free(c);
}
END_TEST


/* A huge step limit (-n 2147483647) once overflowed `alone + reserve` and, without
 * sanitizers, made every turn drop all earlier ones. Now the reserve is at most half
 * the context: two short turns keep the first
 * turn, with a 10-token reply limit and with INT_MAX alike. */
START_TEST(test_huge_step_limit_keeps_history)
{
    const int limits[] = {10, 2147483647};
    for (size_t k = 0; k < 2; k++) {
        chat *c;
        llm_err err;
        ck_assert_int_eq(chat_new(e, NULL, &c, &err), LLM_OK);
        ck_assert_int_eq(chat_begin(c, "Hi.", limits[k], &err), LLM_OK);
        int t;
        for (int i = 0; i < 10 && chat_step(c, &t, NULL, &err) == CHAT_GENERATING; i++)
            ;
        if (chat_replying(c))
            ck_assert_int_eq(chat_stop(c, &err), LLM_OK);
        ck_assert_int_eq(chat_begin(c, "Again.", limits[k], &err), LLM_OK);
        ck_assert_ptr_null(chat_take_notice(c));
        ck_assert_int_eq(chat_turn_count(c), 2);
        ck_assert_str_eq(chat_get_turn(c, 0)->user, "Hi.");
        chat_free(c);
    }
}
END_TEST

START_TEST(test_message_too_long)
{
    chat *c;
    llm_err err;
    ck_assert_int_eq(chat_new(e, NULL, &c, &err), LLM_OK);
    char big[4096];
    big[0] = '\0';
    for (int i = 0; i < 60; i++)
        strcat(big, "the dog ran fast. ");
    ck_assert_int_eq(chat_begin(c, big, 0, &err), LLM_ERR_CONTEXT);
    ck_assert(strstr(err.text, "context") != NULL);
    ck_assert_int_eq(chat_turn_count(c), 0);
    ck_assert_int_eq(engine_pos(e), 0);
    chat_free(c);
}
END_TEST

START_TEST(test_system_change_and_save)
{
    chat *c;
    llm_err err;
    ck_assert_int_eq(chat_new(e, "Old rules.", &c, &err), LLM_OK);
    ck_assert_int_eq(chat_begin(c, "Tell me a story about Tom.", 20, &err), LLM_OK);
    run_reply(c);
    ck_assert_int_eq(chat_set_system(c, "New rules.", &err), LLM_OK);
    ck_assert_str_eq(chat_system(c), "New rules.");
    ck_assert_int_eq(chat_begin(c, "Another one.", 20, &err), LLM_OK);
    int ids[128];
    int n = chat_template_tokens(tok, "New rules.", "Tell me a story about Tom.", ids, 128);
    ck_assert_mem_eq(engine_tokens(e), ids, sizeof(int) * n);
    run_reply(c);

    const char *path = temp_path("chat.txt");
    ck_assert_int_eq(chat_save(c, path, &err), LLM_OK);
    FILE *f = fopen(path, "r");
    char buf[8192];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    buf[len] = '\0';
    fclose(f);
    unlink(path);
    ck_assert(strstr(buf, "New rules.") != NULL);
    ck_assert(strstr(buf, "Tell me a story about Tom.") != NULL);
    ck_assert(strstr(buf, "Another one.") != NULL);
    ck_assert_int_eq(chat_save(c, "/nonexistent-dir/x.txt", &err), LLM_ERR_IO);

    chat_reset(c);
    ck_assert_int_eq(chat_turn_count(c), 0);
    ck_assert_int_eq(engine_pos(e), 0);
    chat_free(c);
}
END_TEST

/* Records seen by the observer, for the BOS test. */
typedef struct {
    int count, last_pos, last_next, last_chosen;
} seen_records;

static void see_record(void *user, const step_record *r)
{
    seen_records *s = user;
    s->count++;
    s->last_pos = r->pos;
    s->last_next = r->next;
    s->last_chosen = r->sampled ? r->sampler.chosen : -1;
}

/* The sampler drawing BOS ends the reply: the end token takes BOS's place, and the
 * record before it says what was drawn (sampled, sampler.chosen BOS) and what came
 * (next EOS, with EOS's own probability), so that nobody reads it as a forced EOS. The
 * draw is put inside BOS's share of the distribution (top-k and top-p off: the
 * candidates in id order). */
START_TEST(test_bos_drawn_ends_reply)
{
    chat *c;
    llm_err err;
    ck_assert_int_eq(chat_new(e, NULL, &c, &err), LLM_OK);
    sampler_config sc = *engine_sampler_config(e);
    sc.temperature = 1.0f;
    sc.top_k = 0;
    sc.top_p = 1.0f;
    sc.min_p = 0.0f;
    engine_set_sampler(e, &sc);
    ck_assert_int_eq(chat_begin(c, "Tell me a story.", 0, &err), LLM_OK);
    int pos = engine_pos(e), vocab = m->config.vocab_size, bos = tokenizer_bos(tok);
    const float *l = engine_logits(e);
    double max = l[0], total = 0.0, before = 0.0;
    for (int i = 1; i < vocab; i++)
        max = l[i] > max ? l[i] : max;
    for (int i = 0; i < vocab; i++)
        total += exp(l[i] - max);
    for (int i = 0; i < bos; i++)
        before += exp(l[i] - max);
    double p_bos = exp(l[bos] - max);
    ck_assert_msg(p_bos / total > 1e-6, "BOS is too unlikely here to draw: %g", p_bos / total);
    seen_records seen = {0, -1, -1, -1};
    engine_set_observer(e, see_record, &seen);
    engine_set_next_draw(e, (float)((before + 0.5 * p_bos) / total));
    int token;
    ck_assert_int_eq(chat_step(c, &token, NULL, &err), CHAT_REPLY_DONE);
    ck_assert_int_eq(token, bos);
    const int eos = tokenizer_eos(tok);
    ck_assert_int_eq(engine_pos(e), pos + 1);
    ck_assert_int_eq(engine_tokens(e)[pos], eos);
    const step_record *r = engine_record(e, pos - 1), *end = engine_record(e, pos);
    ck_assert(r->sampled);
    ck_assert_int_eq(r->sampler.chosen, bos);
    ck_assert_int_eq(r->next, eos);
    ck_assert_float_eq_tol(r->next_prob, exp(l[eos] - max) / total, 1e-6);
    ck_assert_int_eq(end->phase, STEP_FORCED);
    ck_assert_int_eq(seen.last_pos, pos - 1); /* written again with what came */
    ck_assert_int_eq(seen.last_next, eos);
    ck_assert_int_eq(seen.last_chosen, bos);
    const chat_turn *t = chat_get_turn(c, 0);
    ck_assert(t->complete);
    ck_assert_str_eq(t->reply, "");
    engine_set_observer(e, NULL, NULL);
    chat_free(c);
}
END_TEST

/* A progress callback that stops the batch at its second call. */
static bool stop_at_second(void *user, int done, int total)
{
    int *calls = user;
    (void)done;
    (void)total;
    return ++*calls != 2;
}

/* The history's re-reading (here after a system prompt change) stopped by the progress
 * callback: the turn is not begun, the dialog keeps every reply's ids (a save holds
 * them), and the next turn reads the whole history again, replies as they were. */
START_TEST(test_stopped_rereading)
{
    chat *c;
    llm_err err;
    ck_assert_int_eq(chat_new(e, "Old rules.", &c, &err), LLM_OK);
    char msg[2048] = "";
    for (int i = 0; i < 5; i++)
        strcat(msg, "Tom and Sue went to the park to play with a ball. ");
    int saved[3][64], saved_n[3];
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(chat_begin(c, msg, 20, &err), LLM_OK);
        run_reply(c);
    }
    ck_assert_int_eq(chat_turn_count(c), 3);
    for (int i = 0; i < 3; i++) {
        const chat_turn *t = chat_get_turn(c, i);
        saved_n[i] = t->end - t->reply_start;
        ck_assert_int_le(saved_n[i], 64);
        memcpy(saved[i], engine_tokens(e) + t->reply_start, sizeof(int) * (size_t)saved_n[i]);
    }
    ck_assert_int_gt(engine_pos(e), 300); /* more than one of the transformer's chunks */
    ck_assert_int_eq(chat_set_system(c, "New rules.", &err), LLM_OK);
    int calls = 0;
    engine_set_progress(e, stop_at_second, &calls);
    ck_assert_int_eq(chat_begin(c, "Another one.", 20, &err), LLM_ERR_STOPPED);
    ck_assert_int_eq(calls, 2);
    ck_assert(!chat_replying(c));
    ck_assert_int_eq(chat_turn_count(c), 3);
    chatfile cf;
    ck_assert_int_eq(chat_to_file(c, &cf, &err), LLM_OK);
    ck_assert_int_eq(cf.n_turns, 3);
    for (int i = 0; i < 3; i++) { /* the ids without the closing token */
        ck_assert_int_ge(cf.turns[i].n_reply_tokens, saved_n[i] - 1);
        ck_assert_mem_eq(cf.turns[i].reply_tokens, saved[i],
                         sizeof(int) * (size_t)cf.turns[i].n_reply_tokens);
    }
    chatfile_clear(&cf);

    engine_set_progress(e, NULL, NULL);
    ck_assert_int_eq(chat_begin(c, "Another one.", 20, &err), LLM_OK);
    int ids[256];
    int n = chat_template_tokens(tok, "New rules.", msg, ids, 256);
    ck_assert_mem_eq(engine_tokens(e), ids, sizeof(int) * (size_t)n);
    for (int i = 0; i < 3; i++) {
        const chat_turn *t = chat_get_turn(c, i);
        ck_assert_int_eq(t->end - t->reply_start, saved_n[i]);
        ck_assert_mem_eq(engine_tokens(e) + t->reply_start, saved[i], sizeof(int) * (size_t)saved_n[i]);
    }
    run_reply(c);
    chat_free(c);
}
END_TEST

/* The history's last prefill position's logits after it is read again under a new
 * system prompt, its first turn having run with head 1:2 knocked out and the rest
 * with nothing out; stop: the first re-reading is stopped at its second progress call
 * and the next turn's reads it all. */
static void reread_logits(bool stop, float *out, int n_vocab)
{
    chat *c;
    llm_err err;
    steering *s = engine_steering(e);
    engine_rewind(e, 0, NULL); /* the engine outlives a chat */
    ck_assert_int_eq(chat_new(e, "Old rules.", &c, &err), LLM_OK);
    char msg[2048] = "";
    for (int i = 0; i < 5; i++)
        strcat(msg, "Tom and Sue went to the park to play with a ball. ");
    ck_assert_int_eq(steering_knock_out(s, 1, 2, true, &err), LLM_OK);
    ck_assert_int_eq(chat_begin(c, msg, 20, &err), LLM_OK);
    run_reply(c);
    ck_assert_int_eq(steering_knock_out(s, 1, 2, false, &err), LLM_OK);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(chat_begin(c, msg, 20, &err), LLM_OK);
        run_reply(c);
    }
    ck_assert_int_eq(chat_set_system(c, "New rules.", &err), LLM_OK);
    if (stop) {
        int calls = 0;
        engine_set_progress(e, stop_at_second, &calls);
        ck_assert_int_eq(chat_begin(c, "Another one.", 20, &err), LLM_ERR_STOPPED);
        engine_set_progress(e, NULL, NULL);
        chatfile cf; /* a save now holds what each turn ran with */
        ck_assert_int_eq(chat_to_file(c, &cf, &err), LLM_OK);
        ck_assert_ptr_null(cf.steer);
        ck_assert_int_eq(cf.turns[0].ran.n, 1);
        ck_assert_int_eq(cf.turns[0].ran.seg[0].in->n_heads_out, 1);
        ck_assert_int_eq(cf.turns[1].ran.n, 0);
        chatfile_clear(&cf);
    }
    ck_assert(intervention_is_empty(engine_intervention(e)));
    ck_assert_int_eq(chat_begin(c, "Another one.", 20, &err), LLM_OK);
    ck_assert(intervention_is_empty(engine_intervention(e)));
    memcpy(out, engine_logits(e), sizeof(float) * (size_t)n_vocab);
    chat_free(c);
}

/* A re-reading stopped part way (Ctrl-C) keeps what each turn ran with: the next
 * turn's reading gives the logits an unbroken one does, bit for bit. */
START_TEST(test_stopped_rereading_as_it_ran)
{
    int n_vocab = engine_model(e)->config.vocab_size;
    float *unbroken = malloc(sizeof(float) * (size_t)n_vocab);
    float *stopped = malloc(sizeof(float) * (size_t)n_vocab);
    ck_assert_ptr_nonnull(unbroken);
    ck_assert_ptr_nonnull(stopped);
    reread_logits(false, unbroken, n_vocab);
    reread_logits(true, stopped, n_vocab);
    ck_assert_mem_eq(stopped, unbroken, sizeof(float) * (size_t)n_vocab);
    free(unbroken);
    free(stopped);
}
END_TEST

static Suite *chat_suite(void)
{
    Suite *s = suite_create("chat");
    TCase *core = tcase_create("core");
    tcase_add_checked_fixture(core, setup_f32, teardown);
    tcase_add_test(core, test_template_text);
    tcase_add_test(core, test_template_tokens_no_control);
    tcase_add_test(core, test_golden_replies);
    tcase_add_test(core, test_second_turn_keeps_history);
    tcase_add_test(core, test_patch_prompts);
    tcase_add_test(core, test_stop_and_limit);
    tcase_add_test(core, test_bos_drawn_ends_reply);
    tcase_add_test(core, test_stop_at);
    tcase_add_test(core, test_rewind_and_force);
    tcase_add_test(core, test_reply_spans);
    tcase_add_test(core, test_system_change_and_save);
    tcase_add_test(core, test_stopped_rereading);
    tcase_add_test(core, test_stopped_rereading_as_it_ran);
    suite_add_tcase(s, core);
    TCase *limits = tcase_create("limits");
    tcase_add_checked_fixture(limits, setup_small, teardown);
    tcase_add_test(limits, test_overflow_drops_oldest);
    tcase_add_test(limits, test_message_too_long);
    tcase_add_test(limits, test_huge_step_limit_keeps_history);
    suite_add_tcase(s, limits);
    return s;
}

TEST_MAIN(chat_suite)
