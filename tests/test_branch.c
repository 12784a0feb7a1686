/* test_branch.c — a reply's branches: the bookkeeping of branch.c (stash, divergence,
 * settling, swapping), and on chat260K: a rewind and a forced token keep the old
 * continuation, switching back restores its exact tokens, text and step records, the
 * KV cache after a switch gives the logits of a fresh prefill of that branch (and
 * only the positions after the fork were run), and the branches survive a
 * save --all / load round trip. */
#include <math.h>
#include <string.h>

#include "branch.h"
#include "chat.h"
#include "chatfile.h"
#include "intervention_json.h"
#include "steering.h"
#include "testutil.h"

/* ---- branch.c alone ---- */

/* A branch holding ids (no records). */
static reply_branch make_branch(const int *ids, int n, const char *text)
{
    reply_branch b = {.n_tokens = n, .complete = true};
    b.tokens = malloc(sizeof(int) * (size_t)n);
    memcpy(b.tokens, ids, sizeof(int) * (size_t)n);
    b.text = strdup(text);
    return b;
}

START_TEST(test_stash_and_divergence)
{
    reply_branches bs = {0};
    const int a[] = {5, 6, 7, 2};
    ck_assert_int_eq(branches_count(&bs), 1);
    ck_assert_int_eq(branches_current(&bs), 0);
    ck_assert_ptr_null(branches_get(&bs, 0));

    /* rewound to 1 token, then the same tokens again: no branch */
    reply_branch b = make_branch(a, 4, "A");
    branches_stash(&bs, &b);
    ck_assert_ptr_null(b.tokens); /* moved in */
    ck_assert_int_eq(branches_count(&bs), 2); /* pending: the cut-off one counts */
    ck_assert_int_eq(branches_current(&bs), 1);
    ck_assert_str_eq(branches_get(&bs, 0)->text, "A");
    ck_assert_int_eq(branches_note_token(&bs, 2, 6, NULL), LLM_OK);
    ck_assert(bs.stashed);
    ck_assert_int_eq(branches_note_token(&bs, 3, 7, NULL), LLM_OK);
    ck_assert_int_eq(branches_note_token(&bs, 4, 2, NULL), LLM_OK);
    ck_assert(!bs.stashed); /* the same reply again */
    ck_assert_int_eq(branches_count(&bs), 1);

    /* rewound to 2 tokens, a different third: A becomes branch 1, the reply branch 2 */
    b = make_branch(a, 4, "A");
    branches_stash(&bs, &b);
    reply_branch later = make_branch(a, 3, "shorter");
    branches_stash(&bs, &later); /* a second rewind keeps the first, longer stash */
    ck_assert_ptr_null(later.tokens);
    ck_assert_int_eq(branches_note_token(&bs, 3, 9, NULL), LLM_OK);
    ck_assert(!bs.stashed);
    ck_assert_int_eq(bs.n, 2);
    ck_assert_int_eq(branches_count(&bs), 2);
    ck_assert_int_eq(branches_current(&bs), 1);
    ck_assert_str_eq(branches_get(&bs, 0)->text, "A");
    ck_assert_ptr_null(branches_get(&bs, 1));
    ck_assert_ptr_null(branches_get(&bs, 2));

    /* from branch 2, rewind and diverge again: the old one keeps number 2 */
    const int bb[] = {5, 6, 9, 2};
    b = make_branch(bb, 4, "B");
    branches_stash(&bs, &b);
    ck_assert_int_eq(branches_count(&bs), 3);
    ck_assert_str_eq(branches_get(&bs, 1)->text, "B");
    ck_assert_int_eq(branches_note_token(&bs, 1, 8, NULL), LLM_OK);
    ck_assert_int_eq(branches_count(&bs), 3);
    ck_assert_int_eq(branches_current(&bs), 2);
    ck_assert_str_eq(branches_get(&bs, 0)->text, "A");
    ck_assert_str_eq(branches_get(&bs, 1)->text, "B");

    /* swapping with branch 1: the live reply takes slot 3 */
    reply_branch live = make_branch((const int[]){8}, 1, "C"), out;
    branches_swap(&bs, 0, &live, &out);
    ck_assert_str_eq(out.text, "A");
    ck_assert_int_eq(branches_current(&bs), 0);
    ck_assert_str_eq(branches_get(&bs, 2)->text, "C");
    branch_free(&out);

    /* a reply that grows past a cut-off shorter one simply extends it */
    reply_branches grow = {0};
    b = make_branch(a, 2, "cut");
    branches_stash(&grow, &b);
    ck_assert_int_eq(branches_note_token(&grow, 3, 7, NULL), LLM_OK);
    ck_assert(!grow.stashed);
    ck_assert_int_eq(branches_count(&grow), 1);

    ck_assert_int_eq(branch_common_prefix(a, 4, bb, 4), 2);
    ck_assert_int_eq(branch_common_prefix(a, 2, a, 4), 2);
    branches_free(&grow);
    branches_free(&bs);
}
END_TEST

/* ---- on chat260K ---- */

static model *m;
static tokenizer *tok;
static engine *e;

static void setup(void)
{
    model_options mo;
    model_options_default(&mo);
    mo.weights = TENSOR_F32;
    llm_err err;
    ck_assert_msg(model_open(data_path("chat260K.bin"), &mo, &m, &err) == LLM_OK, "%s", err.text);
    ck_assert_msg(tokenizer_open(data_path("tok512.bin"), 512, &tok, &err) == LLM_OK, "%s",
                  err.text);
    engine_options o;
    engine_options_default(&o);
    o.sampler.temperature = 0.0f;
    o.capture_attention = true;
    ck_assert_msg(engine_new(m, tok, &o, &e, &err) == LLM_OK, "%s", err.text);
}

static void teardown(void)
{
    engine_free(e);
    tokenizer_close(tok);
    model_close(m);
}

static chat_progress run_reply(chat *c)
{
    int t;
    llm_err err;
    chat_progress p;
    while ((p = chat_step(c, &t, NULL, &err)) == CHAT_GENERATING)
        ;
    return p;
}

enum { MAXT = 512 };

/* What a reply was: its tokens, text and the records of its positions. */
typedef struct {
    int ids[MAXT];
    int n;
    char text[4096];
    step_record rec[MAXT]; /* positions reply_start - 1 .. */
} reply_copy;

static void copy_reply(const chat *c, reply_copy *out)
{
    const chat_turn *t = chat_get_turn(c, chat_turn_count(c) - 1);
    out->n = t->end - t->reply_start;
    ck_assert_int_lt(out->n, MAXT);
    memcpy(out->ids, engine_tokens(e) + t->reply_start, sizeof(int) * (size_t)out->n);
    snprintf(out->text, sizeof out->text, "%s", t->reply);
    for (int i = 0; i <= out->n; i++)
        out->rec[i] = *engine_record(e, t->reply_start - 1 + i);
}

/* The reply in the context is exactly `want`: tokens, text, and each record's token,
 * phase, successor, sampler decision and candidates. */
static void assert_reply_is(const chat *c, const reply_copy *want)
{
    const chat_turn *t = chat_get_turn(c, chat_turn_count(c) - 1);
    ck_assert_int_eq(t->end - t->reply_start, want->n);
    ck_assert_int_eq(engine_pos(e), t->end);
    for (int i = 0; i < want->n; i++)
        ck_assert_int_eq(engine_tokens(e)[t->reply_start + i], want->ids[i]);
    ck_assert_str_eq(t->reply, want->text);
    for (int i = 0; i <= want->n; i++) {
        const step_record *r = engine_record(e, t->reply_start - 1 + i);
        const step_record *w = &want->rec[i];
        ck_assert_int_eq(r->pos, t->reply_start - 1 + i);
        ck_assert_int_eq(r->token, w->token);
        ck_assert_int_eq(r->phase, w->phase);
        ck_assert_int_eq(r->next, w->next);
        ck_assert_int_eq(r->sampled, w->sampled);
        ck_assert_int_eq(r->n_top, w->n_top);
        for (int k = 0; k < r->n_top; k++)
            ck_assert_int_eq(r->top[k].id, w->top[k].id);
        ck_assert(r->attn != NULL); /* recomputed with the positions */
    }
}

/* The largest difference between the engine's newest logits and those of a fresh
 * engine prefilled with the same sequence in one batch. */
static float diff_from_fresh_prefill(void)
{
    engine *fresh;
    llm_err err;
    engine_options o;
    engine_options_default(&o);
    ck_assert_int_eq(engine_new(m, tok, &o, &fresh, &err), LLM_OK);
    ck_assert_int_eq(engine_prefill(fresh, engine_tokens(e), engine_pos(e), &err), LLM_OK);
    const float *a = engine_logits(e), *b = engine_logits(fresh);
    ck_assert_ptr_nonnull(a);
    float worst = 0.0f;
    int vocab = tokenizer_vocab_size(tok);
    int top_a = 0, top_b = 0;
    for (int i = 0; i < vocab; i++) {
        float d = fabsf(a[i] - b[i]);
        if (d > worst)
            worst = d;
        if (a[i] > a[top_a])
            top_a = i;
        if (b[i] > b[top_b])
            top_b = i;
    }
    ck_assert_int_eq(top_a, top_b);
    engine_free(fresh);
    return worst;
}

START_TEST(test_switch_back_restores_the_branch)
{
    chat *c;
    llm_err err;
    chat_progress p;
    static reply_copy first, second;
    ck_assert_int_eq(chat_new(e, NULL, &c, &err), LLM_OK);
    ck_assert_int_eq(chat_begin(c, "Tell me a story about a dog named Max.", 0, &err), LLM_OK);
    int start = chat_get_turn(c, 0)->reply_start;
    ck_assert_int_eq(run_reply(c), CHAT_REPLY_DONE);
    copy_reply(c, &first);
    ck_assert_int_gt(first.n, 12);
    ck_assert_int_eq(chat_branch_count(c, 0), 1);

    /* a rewind alone, then the same greedy tokens: nothing diverged */
    ck_assert_int_eq(chat_rewind(c, start + 8, &err), LLM_OK);
    ck_assert_int_eq(chat_branch_count(c, 0), 2); /* the cut-off rest counts meanwhile */
    ck_assert_int_eq(run_reply(c), CHAT_REPLY_DONE);
    ck_assert_int_eq(chat_branch_count(c, 0), 1);

    /* rewind to 6 reply tokens and force the model's second choice: a second branch */
    ck_assert_int_eq(chat_rewind(c, start + 6, &err), LLM_OK);
    const step_record *r = engine_record(e, start + 5);
    int other = r->top[0].id == first.ids[6] ? r->top[1].id : r->top[0].id;
    ck_assert_int_eq(chat_force(c, other, &p, NULL, &err), LLM_OK);
    ck_assert_int_eq(chat_branch_count(c, 0), 2);
    ck_assert_int_eq(chat_branch_current(c, 0), 1);
    ck_assert_int_eq(run_reply(c), CHAT_REPLY_DONE);
    copy_reply(c, &second);
    ck_assert_str_ne(second.text, first.text);

    chat_branch_view v;
    ck_assert(chat_branch_get(c, 0, 0, &v));
    ck_assert_int_eq(v.fork, start + 6);
    ck_assert_int_eq(v.n_tokens, first.n);
    ck_assert_str_eq(v.text, first.text);
    ck_assert(chat_branch_get(c, 0, 1, &v));
    ck_assert_int_eq(v.fork, -1);
    ck_assert(!chat_branch_get(c, 0, 2, &v));
    ck_assert_int_eq(chat_branch_switch(c, 2, &err), LLM_ERR_ARG);

    /* back to branch 1: its tokens, text and records; only the positions after the
     * fork were run again; the KV cache gives what a fresh prefill gives */
    ck_assert_int_eq(chat_branch_switch(c, 0, &err), LLM_OK);
    ck_assert_int_eq(chat_branch_current(c, 0), 0);
    ck_assert_int_eq(chat_branch_count(c, 0), 2);
    assert_reply_is(c, &first);
    ck_assert_int_eq(engine_get_stats(e)->prefill_tokens, first.n - 6);
    ck_assert(!chat_replying(c));
    ck_assert(chat_get_turn(c, 0)->complete);
    ck_assert_float_lt(diff_from_fresh_prefill(), 1e-3f);
    ck_assert_int_eq(engine_record(e, start + 5)->next, first.ids[6]);
    ck_assert(engine_record(e, start + 5)->sampled);

    /* and to branch 2: the forced token is FORCED again */
    ck_assert_int_eq(chat_branch_switch(c, 1, &err), LLM_OK);
    assert_reply_is(c, &second);
    ck_assert_int_eq(engine_record(e, start + 6)->phase, STEP_FORCED);
    ck_assert_float_lt(diff_from_fresh_prefill(), 1e-3f);

    /* a paused branch comes back open and goes on as it would have */
    ck_assert_int_eq(chat_rewind(c, start + 10, &err), LLM_OK); /* a prefix of branch 2 */
    ck_assert_int_eq(chat_force(c, TOKEN_EOS, &p, NULL, &err), LLM_OK); /* diverges */
    ck_assert_int_eq(chat_branch_count(c, 0), 3);
    ck_assert_int_eq(chat_branch_switch(c, 1, &err), LLM_OK);
    assert_reply_is(c, &second);
    ck_assert_int_eq(chat_rewind(c, start + 12, &err), LLM_OK); /* paused mid-reply */
    ck_assert_int_eq(chat_branch_switch(c, 0, &err), LLM_OK); /* the rest of 2 is stashed */
    ck_assert_int_eq(chat_branch_count(c, 0), 4);
    assert_reply_is(c, &first);
    ck_assert_int_eq(chat_branch_switch(c, 3, &err), LLM_OK);
    ck_assert(chat_replying(c));
    ck_assert_int_eq(engine_pos(e), start + 12);
    ck_assert_int_eq(run_reply(c), CHAT_REPLY_DONE); /* greedy: grows back into branch 2 */
    ck_assert_str_eq(chat_get_turn(c, 0)->reply, second.text);

    /* a reply left shorter when the next turn begins keeps the longer one */
    ck_assert_int_eq(chat_rewind(c, start + 4, &err), LLM_OK);
    ck_assert_int_eq(chat_begin(c, "And a cat?", 0, &err), LLM_OK);
    int kept = chat_branch_count(c, 0);
    ck_assert_int_ge(kept, 4);
    ck_assert_int_eq(chat_branch_current(c, 0), kept - 1);
    ck_assert_int_eq(chat_branch_count(c, 1), 1);
    ck_assert_int_eq(chat_branch_switch(c, 0, &err), LLM_OK); /* the newest reply has one */
    chat_free(c);
}
END_TEST

START_TEST(test_branches_survive_save_all)
{
    chat *c;
    llm_err err;
    chat_progress p;
    static reply_copy first, second;
    ck_assert_int_eq(chat_new(e, "Be kind.", &c, &err), LLM_OK);
    ck_assert_int_eq(chat_begin(c, "Tell me a story about a dog named Max.", 0, &err), LLM_OK);
    int start = chat_get_turn(c, 0)->reply_start;
    run_reply(c);
    copy_reply(c, &first);
    ck_assert_int_eq(chat_rewind(c, start + 3, &err), LLM_OK);
    int other = engine_record(e, start + 2)->top[1].id;
    if (other == first.ids[3])
        other = engine_record(e, start + 2)->top[0].id;
    ck_assert_int_eq(chat_force(c, other, &p, NULL, &err), LLM_OK);
    run_reply(c);
    copy_reply(c, &second);
    ck_assert_int_eq(chat_branch_count(c, 0), 2);

    /* /save: the branch on screen only, a file older readers read */
    chatfile cf;
    ck_assert_int_eq(chat_to_file(c, &cf, &err), LLM_OK);
    ck_assert_int_eq(cf.turns[0].n_branches, 0);
    const char *plain = temp_path("plain.json");
    ck_assert_int_eq(chatfile_write(&cf, plain, &err), LLM_OK);
    chatfile_clear(&cf);
    ck_assert_int_eq(chatfile_read(plain, &cf, &err), LLM_OK);
    ck_assert_int_eq(cf.version, 1);
    chatfile_clear(&cf);

    /* /save --all: version 2 with the other branch */
    ck_assert_int_eq(chat_to_file(c, &cf, &err), LLM_OK);
    ck_assert_int_eq(chat_branches_to_file(c, &cf, &err), LLM_OK);
    ck_assert_int_eq(cf.turns[0].n_branches, 1);
    ck_assert_int_eq(cf.turns[0].branch, 1);
    const char *all = temp_path("all.json");
    ck_assert_int_eq(chatfile_write(&cf, all, &err), LLM_OK);
    chatfile_clear(&cf);
    ck_assert_int_eq(chatfile_read(all, &cf, &err), LLM_OK);
    ck_assert_int_eq(cf.version, 2);
    ck_assert_int_eq(cf.turns[0].n_branches, 1);
    ck_assert_str_eq(cf.turns[0].branches[0].reply, first.text);
    ck_assert_int_eq(cf.turns[0].branches[0].n_reply_tokens, first.n - 1); /* no EOS */

    /* loaded into a new chat: two branches, the second on screen; switching gives the
     * first's tokens and text back (its positions re-read as prompt positions) */
    chat *d;
    ck_assert_int_eq(chat_new(e, NULL, &d, &err), LLM_OK);
    chat_free(c);
    ck_assert_int_eq(chat_restore(d, &cf, &err), LLM_OK);
    chatfile_clear(&cf);
    ck_assert_int_eq(chat_branch_count(d, 0), 2);
    ck_assert_int_eq(chat_branch_current(d, 0), 1);
    ck_assert_str_eq(chat_get_turn(d, 0)->reply, second.text);
    ck_assert_int_eq(chat_branch_switch(d, 0, &err), LLM_OK);
    const chat_turn *t = chat_get_turn(d, 0);
    ck_assert_int_eq(t->end - t->reply_start, first.n);
    for (int i = 0; i < first.n; i++)
        ck_assert_int_eq(engine_tokens(e)[t->reply_start + i], first.ids[i]);
    ck_assert_str_eq(t->reply, first.text);
    ck_assert_float_lt(diff_from_fresh_prefill(), 1e-3f);
    ck_assert_int_eq(chat_branch_switch(d, 1, &err), LLM_OK);
    ck_assert_str_eq(chat_get_turn(d, 0)->reply, second.text);

    /* saved again with --all and read back: the same tree */
    ck_assert_int_eq(chat_to_file(d, &cf, &err), LLM_OK);
    ck_assert_int_eq(chat_branches_to_file(d, &cf, &err), LLM_OK);
    ck_assert_int_eq(cf.turns[0].n_branches, 1);
    ck_assert_int_eq(cf.turns[0].branch, 1);
    ck_assert_str_eq(cf.turns[0].branches[0].reply, first.text);
    chatfile_clear(&cf);
    chat_free(d);
    remove(plain);
    remove(all);
}
END_TEST

/* The largest difference between e's logits now and those of a fresh engine that
 * reads e's tokens with head 1:2 knocked out (as every position of the branch ran). */
static float diff_from_prefill(bool knocked)
{
    engine *fresh;
    llm_err err;
    engine_options o;
    engine_options_default(&o);
    ck_assert_int_eq(engine_new(m, tok, &o, &fresh, &err), LLM_OK);
    if (knocked)
        ck_assert_int_eq(steering_knock_out(engine_steering(fresh), 1, 2, true, &err), LLM_OK);
    ck_assert_int_eq(engine_prefill(fresh, engine_tokens(e), engine_pos(e), &err), LLM_OK);
    const float *a = engine_logits(e), *b = engine_logits(fresh);
    float worst = 0.0f;
    for (int i = 0; i < tokenizer_vocab_size(tok); i++)
        worst = fmaxf(worst, fabsf(a[i] - b[i]));
    engine_free(fresh);
    return worst;
}

/* A branch made with a head knocked out, saved with --all while the branch made after
 * the head came back is on screen: the file holds the segments of both (version 4),
 * and in the loaded chat the first comes back as it ran when switched to (the
 * position before the fork, which the rewind ran again without the head, and its
 * own, with the head out): its logits are a fresh knocked-out read's. Without its
 * segments it is read with the head in, and they are not. */
START_TEST(test_saved_branch_as_it_ran)
{
    chat *c;
    llm_err err;
    chat_progress p;
    static reply_copy first;
    steering *s = engine_steering(e);
    ck_assert_int_eq(chat_new(e, NULL, &c, &err), LLM_OK);
    ck_assert_int_eq(steering_knock_out(s, 1, 2, true, &err), LLM_OK);
    ck_assert_int_eq(chat_begin(c, "Tell me a story about a dog named Max.", 0, &err), LLM_OK);
    int start = chat_get_turn(c, 0)->reply_start;
    run_reply(c);
    copy_reply(c, &first);
    ck_assert_int_eq(steering_knock_out(s, 1, 2, false, &err), LLM_OK);
    ck_assert_int_eq(chat_rewind(c, start + 3, &err), LLM_OK); /* start + 2 runs again */
    int other = engine_record(e, start + 2)->top[1].id;
    if (other == first.ids[3])
        other = engine_record(e, start + 2)->top[0].id;
    ck_assert_int_eq(chat_force(c, other, &p, NULL, &err), LLM_OK);
    run_reply(c);
    chatfile cf;
    ck_assert_int_eq(chat_to_file(c, &cf, &err), LLM_OK);
    ck_assert_int_eq(chat_branches_to_file(c, &cf, &err), LLM_OK);
    chat_free(c);
    ck_assert_ptr_null(cf.steer);
    ck_assert_int_eq(cf.turns[0].ran.n, 2); /* the head out, then in from start + 2 */
    ck_assert_int_eq(cf.turns[0].ran.seg[1].from, 2);
    ck_assert_int_eq(cf.turns[0].branches[0].ran.n, 1);
    ck_assert_int_eq(cf.turns[0].branches[0].ran.seg[0].in->n_heads_out, 1);
    const char *path = temp_path("ran.json");
    ck_assert_int_eq(chatfile_write(&cf, path, &err), LLM_OK);
    chatfile_clear(&cf);
    ck_assert_int_eq(chatfile_read(path, &cf, &err), LLM_OK);
    ck_assert_int_eq(cf.version, 4);
    ck_assert_int_eq(cf.turns[0].branches[0].ran.n, 1);
    for (int with = 1; with >= 0; with--) {
        chat *d;
        ck_assert_int_eq(chat_new(e, NULL, &d, &err), LLM_OK);
        if (!with)
            ran_with_clear(&cf.turns[0].branches[0].ran);
        ck_assert_int_eq(chat_restore(d, &cf, &err), LLM_OK);
        ck_assert_int_eq(chat_branch_switch(d, 0, &err), LLM_OK);
        const chat_turn *t = chat_get_turn(d, 0);
        for (int i = 0; i < first.n; i++)
            ck_assert_int_eq(engine_tokens(e)[t->reply_start + i], first.ids[i]);
        ck_assert(intervention_is_empty(engine_intervention(e))); /* in force: the head in */
        float worst = diff_from_prefill(true);
        if (with)
            ck_assert_msg(worst < 1e-4f, "the branch read back as it ran: %g", worst);
        else
            ck_assert_msg(worst > 1e-2f, "the head changes nothing here: %g", worst);
        chat_free(d);
    }
    chatfile_clear(&cf);
    remove(path);
}
END_TEST

/* A reply run with nothing out; head 1:2 knocked out; two tokens taken back, each a
 * rewind that runs the position before it again, with the head out; the first of them
 * put back (forced), so that the first reply, a branch again, forks one token later than
 * the take-backs reached. Switching back to it runs it again from the position the
 * take-backs changed: its logits are a fresh read's with nothing out, and the tokens
 * are its own. */
START_TEST(test_branch_back_after_take_backs)
{
    chat *c;
    llm_err err;
    chat_progress p;
    static reply_copy first;
    steering *s = engine_steering(e);
    ck_assert_int_eq(chat_new(e, NULL, &c, &err), LLM_OK);
    ck_assert_int_eq(chat_begin(c, "Tell me a story about a dog named Max.", 0, &err), LLM_OK);
    run_reply(c);
    copy_reply(c, &first);
    int end = engine_pos(e), start = chat_get_turn(c, 0)->reply_start;
    ck_assert_int_ge(end - start, 4);
    ck_assert_int_eq(steering_knock_out(s, 1, 2, true, &err), LLM_OK);
    ck_assert_int_eq(chat_rewind(c, end - 1, &err), LLM_OK);
    ck_assert_int_eq(chat_rewind(c, end - 2, &err), LLM_OK); /* end - 3 runs with the head out */
    ck_assert_int_eq(chat_force(c, first.ids[end - 2 - start], &p, NULL, &err), LLM_OK);
    ck_assert_int_eq(chat_branch_count(c, 0), 2);
    ck_assert_int_eq(chat_branch_switch(c, 0, &err), LLM_OK);
    ck_assert_int_eq(engine_pos(e), end);
    ck_assert_mem_eq(engine_tokens(e) + start, first.ids, sizeof(int) * (size_t)first.n);
    float worst = diff_from_prefill(false);
    ck_assert_msg(worst < 1e-4f, "the first reply came back as it ran: %g", worst);
    ck_assert_int_eq(steering_knock_out(s, 1, 2, false, &err), LLM_OK);
    chat_free(c);
}
END_TEST

/* A version 2 file's branches are checked like its turns. */
START_TEST(test_branches_in_the_file)
{
    chatfile cf;
    llm_err err;
    const char *ok = "{\"llmchat_chat\": 2, \"vocab_size\": 512, \"turns\": [{\"user\": \"hi\", "
                     "\"reply\": \"b\", \"branch\": 2, \"branches\": [{\"reply\": \"a\", "
                     "\"reply_tokens\": [5, 6], \"complete\": true}]}]}";
    ck_assert_int_eq(chatfile_parse("t.json", ok, strlen(ok), &cf, &err), LLM_OK);
    ck_assert_int_eq(cf.turns[0].n_branches, 1);
    ck_assert_int_eq(cf.turns[0].branch, 1);
    ck_assert_int_eq(cf.turns[0].branches[0].n_reply_tokens, 2);
    chatfile_clear(&cf);
    const char *bad_at = "{\"llmchat_chat\": 2, \"turns\": [{\"user\": \"hi\", \"branch\": 3, "
                         "\"branches\": [{\"reply\": \"a\"}]}]}";
    ck_assert_int_eq(chatfile_parse("t.json", bad_at, strlen(bad_at), &cf, &err),
                     LLM_ERR_FORMAT);
    ck_assert_msg(strstr(err.text, "turn 1: \"branch\"") != NULL, "%s", err.text);
    const char *bad_id = "{\"llmchat_chat\": 2, \"vocab_size\": 512, \"turns\": [{\"user\": "
                         "\"hi\", \"branches\": [{\"reply\": \"a\", \"reply_tokens\": [600]}]}]}";
    ck_assert_int_eq(chatfile_parse("t.json", bad_id, strlen(bad_id), &cf, &err),
                     LLM_ERR_FORMAT);
    ck_assert_msg(strstr(err.text, "reply_tokens") != NULL, "%s", err.text);
    const char *newer = "{\"llmchat_chat\": 5, \"turns\": []}";
    ck_assert_int_eq(chatfile_parse("t.json", newer, strlen(newer), &cf, &err), LLM_ERR_FORMAT);
}
END_TEST

static Suite *branch_suite(void)
{
    Suite *s = suite_create("branch");
    TCase *core = tcase_create("bookkeeping");
    tcase_add_test(core, test_stash_and_divergence);
    tcase_add_test(core, test_branches_in_the_file);
    suite_add_tcase(s, core);
    TCase *dialog = tcase_create("chat");
    tcase_add_checked_fixture(dialog, setup, teardown);
    tcase_set_timeout(dialog, 120);
    tcase_add_test(dialog, test_switch_back_restores_the_branch);
    tcase_add_test(dialog, test_branches_survive_save_all);
    tcase_add_test(dialog, test_saved_branch_as_it_ran);
    tcase_add_test(dialog, test_branch_back_after_take_backs);
    suite_add_tcase(s, dialog);
    return s;
}

TEST_MAIN(branch_suite)
