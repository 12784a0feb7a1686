/* named_lily.h — the bundled chat260K asked, greedily, for "a story about a dog named
 * Lily": the run the tests of how it copies the name look at (test_lens, test_attribution).
 * It gives the engine and the chat (the caller frees both with named_lily_free), the
 * position of the reply's " named" (whose next token is " Lily") and the two ids. Fails
 * the test when the reply does not say "named Lily". */
#ifndef LLMCHAT_TEST_NAMED_LILY_H
#define LLMCHAT_TEST_NAMED_LILY_H

#include <check.h>
#include <string.h>

#include "chat.h"
#include "engine.h"

typedef struct {
    engine *e;
    chat *c;
    int pos;          /* the reply's " named" */
    int named, lily;  /* the ids of " named" and " Lily" */
} named_lily;

static inline void named_lily_run(const model *m, const tokenizer *tok, named_lily *out)
{
    engine_options o;
    engine_options_default(&o);
    o.sampler.temperature = 0.0f;
    llm_err err;
    ck_assert_int_eq(engine_new(m, tok, &o, &out->e, &err), LLM_OK);
    ck_assert_int_eq(chat_new(out->e, NULL, &out->c, &err), LLM_OK);
    ck_assert_int_eq(chat_begin(out->c, "Tell me a story about a dog named Lily.", 40, &err),
                     LLM_OK);
    int t;
    const char *text;
    while (chat_step(out->c, &t, &text, &err) == CHAT_GENERATING)
        ;
    const chat_turn *turn = chat_get_turn(out->c, 0);
    ck_assert_ptr_nonnull(strstr(turn->reply, "named Lily"));
    out->lily = out->named = -1;
    for (int i = 0; i < tokenizer_vocab_size(tok); i++) {
        if (strcmp(tokenizer_piece(tok, i), " Lily") == 0)
            out->lily = i;
        if (strcmp(tokenizer_piece(tok, i), " named") == 0)
            out->named = i;
    }
    ck_assert(out->lily >= 0 && out->named >= 0);
    out->pos = -1;
    for (int p = turn->reply_start; p < turn->end && out->pos < 0; p++)
        if (engine_tokens(out->e)[p] == out->named)
            out->pos = p;
    ck_assert_int_ge(out->pos, 0);
    ck_assert_int_eq(engine_record(out->e, out->pos)->next, out->lily);
}

static inline void named_lily_free(named_lily *n)
{
    chat_free(n->c);
    engine_free(n->e);
}

#endif
