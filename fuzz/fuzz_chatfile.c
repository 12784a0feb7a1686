/* fuzz_chatfile.c — libFuzzer target: the saved-chat reader (chatfile_parse, and
 * with it the JSON reader) on arbitrary bytes. A file that parses must print and
 * parse back to the same chat, and print the same bytes again; then it is restored
 * into a chat on the bundled model with a 64-token context, which must keep the
 * dialog whole (dropped plus kept turns) and the sequence inside the context. */
#include "fuzz.h"

#include <string.h>

#include "chat.h"
#include "chatfile.h"
#include "engine.h"

static model *mdl;
static tokenizer *tok;
static engine *eng;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    llm_err err;
    engine_options eo;
    engine_options_default(&eo);
    eo.ctx_len = 64;
    eo.record_prompt = false;
    if (model_open(fuzz_source_path("data/models/chat260K.bin"), NULL, &mdl, &err) != LLM_OK ||
        tokenizer_open(fuzz_source_path("data/models/tok512.bin"), 512, &tok, &err) != LLM_OK ||
        engine_new(mdl, tok, &eo, &eng, &err) != LLM_OK) {
        fprintf(stderr, "fuzz_chatfile: %s\n", err.text);
        exit(1);
    }
    return 0;
}

/* chatfile_print into a malloc'd string. */
static char *print(const chatfile *cf, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    FUZZ_CHECK(f != NULL);
    chatfile_print(f, cf);
    FUZZ_CHECK(fclose(f) == 0);
    return buf;
}

static bool same_string(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void check_same(const chatfile *a, const chatfile *b)
{
    FUZZ_CHECK(same_string(a->model, b->model));
    FUZZ_CHECK(same_string(a->tokenizer, b->tokenizer));
    FUZZ_CHECK(same_string(a->system, b->system));
    FUZZ_CHECK(a->vocab_size == b->vocab_size && a->steps == b->steps && a->ctx == b->ctx);
    FUZZ_CHECK(a->sampler.top_k == b->sampler.top_k && a->sampler.seed == b->sampler.seed);
    FUZZ_CHECK(a->sampler.temperature == b->sampler.temperature);
    FUZZ_CHECK(a->sampler.top_p == b->sampler.top_p && a->sampler.min_p == b->sampler.min_p);
    FUZZ_CHECK(a->n_turns == b->n_turns);
    for (int i = 0; i < a->n_turns; i++) {
        const chatfile_turn *x = &a->turns[i], *y = &b->turns[i];
        FUZZ_CHECK(strcmp(x->user, y->user) == 0 && strcmp(x->reply, y->reply) == 0);
        FUZZ_CHECK(x->complete == y->complete && x->cut == y->cut && x->in_context == y->in_context);
        FUZZ_CHECK(x->n_reply_tokens == y->n_reply_tokens);
        FUZZ_CHECK(x->n_reply_tokens == 0 ||
                   memcmp(x->reply_tokens, y->reply_tokens, sizeof(int) * (size_t)x->n_reply_tokens) == 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    chatfile cf;
    llm_err err;
    if (chatfile_parse("fuzz.json", (const char *)data, size, &cf, &err) != LLM_OK) {
        FUZZ_CHECK(cf.n_turns == 0 && strncmp(err.text, "fuzz.json: ", 11) == 0);
        return 0;
    }
    size_t len1, len2;
    char *text1 = print(&cf, &len1);
    chatfile back;
    if (chatfile_parse("printed", text1, len1, &back, &err) != LLM_OK) {
        fprintf(stderr, "the printed chat does not parse: %s\n%s\n", err.text, text1);
        abort();
    }
    check_same(&cf, &back);
    char *text2 = print(&back, &len2);
    FUZZ_CHECK(len1 == len2 && memcmp(text1, text2, len1) == 0);
    free(text1);
    free(text2);
    chatfile_clear(&back);

    chat *c;
    FUZZ_CHECK(chat_new(eng, NULL, &c, &err) == LLM_OK);
    if (chat_restore(c, &cf, &err) == LLM_OK) {
        FUZZ_CHECK(chat_dropped_count(c) + chat_turn_count(c) == cf.n_turns);
        FUZZ_CHECK(engine_pos(eng) <= engine_ctx(eng));
        for (int i = 0; i < chat_turn_count(c); i++)
            FUZZ_CHECK(chat_get_turn(c, i)->end <= engine_pos(eng));
    } else {
        FUZZ_CHECK(chat_turn_count(c) == 0 && chat_dropped_count(c) == 0);
    }
    chat_free(c);
    chatfile_clear(&cf);
    return 0;
}
