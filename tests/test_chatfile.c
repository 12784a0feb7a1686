/* test_chatfile.c — saved chats: the file format round-trips every field and any
 * bytes; unknown members are ignored; broken or foreign files are refused with a
 * message naming the member; writing is atomic (no temporary left, an unwritable
 * place leaves the old file). On chat260K: a chat saved and restored into a fresh
 * engine holds the same tokens and turns and goes on with the same greedy reply;
 * a smaller context keeps the newest turns and says so; turns dropped from the
 * context are saved too. On stories260K with ChatML markers: a reply stopped by
 * <|im_start|> (not the end token), one that ran into the end of the context and
 * one holding BOS come back token for token; an older file (no end tokens, no
 * fingerprint) still loads; ids of another vocabulary of the same size are not used. */
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>

#include "chat.h"
#include "chatfile.h"
#include "gguf_copy.h"
#include "intervention_json.h"
#include "testutil.h"

static const char odd_text[] = "line one\nline \"two\"\t\\ caf\xc3\xa9 \xff\xfe bad \x01\x1b[31m";

static void parse_fails(const char *text, const char *want)
{
    chatfile cf;
    llm_err err;
    ck_assert_msg(chatfile_parse("t.json", text, strlen(text), &cf, &err) != LLM_OK,
                  "accepted: %s", text);
    ck_assert_msg(strstr(err.text, want) != NULL, "%s -> %s", text, err.text);
    ck_assert_msg(strncmp(err.text, "t.json: ", 8) == 0, "%s", err.text);
    ck_assert_int_eq(cf.n_turns, 0);
    chatfile_clear(&cf);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* cf written to path (chatfile_write), and the file's text (slurp's buffer). */
static const char *written_text(const chatfile *cf, const char *path)
{
    llm_err err;
    ck_assert_msg(chatfile_write(cf, path, &err) == LLM_OK, "%s", err.text);
    return slurp(path);
}

START_TEST(test_round_trip)
{
    chatfile cf, back;
    llm_err err;
    chatfile_init(&cf);
    ck_assert_int_eq(chatfile_set(&cf.model, "/models/m \"1\".bin", &err), LLM_OK);
    ck_assert_int_eq(chatfile_set(&cf.tokenizer, "tok.bin", &err), LLM_OK);
    ck_assert_int_eq(chatfile_set(&cf.system, odd_text, &err), LLM_OK);
    cf.vocab_size = 512;
    cf.sampler.temperature = 0.7f;
    cf.sampler.top_p = 0.95f;
    cf.sampler.top_k = 40;
    cf.sampler.min_p = 0.05f;
    cf.sampler.repeat_penalty = 1.1f;
    cf.sampler.repeat_last_n = 32;
    cf.sampler.seed = UINT64_MAX;
    cf.steps = 77;
    cf.ctx = 300;
    int ids[] = {5, 0, 511, 2};
    ck_assert_int_eq(chatfile_add_turn(&cf, "old", "gone", NULL, 0, true, false, false, &err), LLM_OK);
    ck_assert_int_eq(chatfile_add_turn(&cf, odd_text, "r\xc3\xa9ply", ids, 4, true, false, true, &err), LLM_OK);
    cf.turns[1].end_token = 2;
    ck_assert_int_eq(chatfile_add_turn(&cf, "cut", "", ids, 0, false, true, true, &err), LLM_OK);
    ck_assert_int_eq(chatfile_set(&cf.vocab_hash, "0123456789abcdef", &err), LLM_OK);

    const char *path = temp_path("rt.json");
    ck_assert_int_eq(chatfile_write(&cf, path, &err), LLM_OK);
    ck_assert_msg(chatfile_read(path, &back, &err) == LLM_OK, "%s", err.text);
    unlink(path);

    ck_assert_int_eq(back.version, 1); /* no branches: the version older readers read */
    ck_assert_str_eq(back.model, cf.model);
    ck_assert_str_eq(back.tokenizer, "tok.bin");
    ck_assert_str_eq(back.template_name, "llama2");
    ck_assert_str_eq(back.system, odd_text);
    ck_assert_int_eq(back.vocab_size, 512);
    ck_assert(back.sampler.temperature == 0.7f);
    ck_assert(back.sampler.top_p == 0.95f);
    ck_assert_int_eq(back.sampler.top_k, 40);
    ck_assert(back.sampler.min_p == 0.05f);
    ck_assert(back.sampler.repeat_penalty == 1.1f);
    ck_assert_int_eq(back.sampler.repeat_last_n, 32);
    ck_assert(back.sampler.seed == UINT64_MAX);
    ck_assert_int_eq(back.steps, 77);
    ck_assert_int_eq(back.ctx, 300);
    ck_assert_int_eq(back.n_turns, 3);
    ck_assert_str_eq(back.turns[0].user, "old");
    ck_assert(!back.turns[0].in_context);
    ck_assert_ptr_null(back.turns[0].reply_tokens);
    ck_assert_str_eq(back.turns[1].user, odd_text);
    ck_assert_str_eq(back.turns[1].reply, "r\xc3\xa9ply");
    ck_assert_int_eq(back.turns[1].n_reply_tokens, 4);
    ck_assert_mem_eq(back.turns[1].reply_tokens, ids, sizeof ids);
    ck_assert(back.turns[1].complete && !back.turns[1].cut && back.turns[1].in_context);
    ck_assert_int_eq(back.turns[1].end_token, 2);
    ck_assert_str_eq(back.vocab_hash, "0123456789abcdef");
    ck_assert(!back.turns[2].complete && back.turns[2].cut);
    ck_assert_int_eq(back.turns[2].end_token, -1);
    ck_assert_int_eq(back.turns[2].n_reply_tokens, 0);
    ck_assert_ptr_nonnull(back.turns[2].reply_tokens);
    chatfile_clear(&back);
    chatfile_clear(&cf);
}
END_TEST

START_TEST(test_minimal_and_unknown_members)
{
    const char *text =
        "{\"llmchat_chat\": 1, \"future\": {\"x\": [1, 2]}, \"turns\": [\n"
        "  {\"user\": \"hi\", \"branches\": [{\"at\": 3, \"reply\": \"other\"}]},\n"
        "  {\"user\": \"again\", \"reply\": \"yes\", \"reply_tokens\": [1, 2, 3]}]}";
    chatfile cf;
    llm_err err;
    ck_assert_msg(chatfile_parse("t.json", text, strlen(text), &cf, &err) == LLM_OK, "%s", err.text);
    ck_assert_int_eq(cf.n_turns, 2);
    ck_assert_str_eq(cf.system, "");
    ck_assert_ptr_null(cf.model);
    ck_assert_str_eq(cf.turns[0].reply, "");
    ck_assert(cf.turns[0].in_context && !cf.turns[0].complete);
    /* ids without a vocabulary size mean nothing and are not kept */
    ck_assert_ptr_null(cf.turns[1].reply_tokens);
    sampler_config def;
    sampler_config_default(&def);
    ck_assert(cf.sampler.top_p == def.top_p);
    chatfile_clear(&cf);
}
END_TEST

/* Raw bytes: a file with "raw_bytes" reads \udcXX as the byte and \u00e9 as é (what
 * Python's json.dumps writes for a chat it rewrote); a file from before the member reads
 * \u00e9 as the byte 0xE9, as it was written. */
START_TEST(test_raw_bytes_escapes)
{
    const char *now = "{\"llmchat_chat\": 1, \"raw_bytes\": \"\\\\udcXX\", \"turns\": [\n"
                      "  {\"user\": \"caf\\u00e9 \\udcff\\udce2\\udc82\", \"reply\": \"\\u4e2d\"}]}";
    const char *before = "{\"llmchat_chat\": 1, \"turns\": [\n"
                         "  {\"user\": \"caf\\u00e9 \\u00ff\", \"reply\": \"\\u4e2d\"}]}";
    chatfile cf;
    llm_err err;
    ck_assert_msg(chatfile_parse("t.json", now, strlen(now), &cf, &err) == LLM_OK, "%s", err.text);
    ck_assert_str_eq(cf.turns[0].user, "caf\xc3\xa9 \xff\xe2\x82");
    ck_assert_str_eq(cf.turns[0].reply, "\xe4\xb8\xad");
    chatfile_clear(&cf);
    ck_assert_msg(chatfile_parse("t.json", before, strlen(before), &cf, &err) == LLM_OK, "%s",
                  err.text);
    ck_assert_str_eq(cf.turns[0].user, "caf\xe9 \xff");
    ck_assert_str_eq(cf.turns[0].reply, "\xe4\xb8\xad");
    chatfile_clear(&cf);
    /* what llmchat writes says how it escapes, and writes no \u00XX for a raw byte */
    chatfile_init(&cf);
    ck_assert_int_eq(chatfile_add_turn(&cf, "\xe9t\xc3\xa9", "", NULL, 0, true, false, true, &err),
                     LLM_OK);
    const char *path = temp_path("raw.json");
    const char *text = written_text(&cf, path);
    ck_assert_ptr_nonnull(strstr(text, "\"raw_bytes\": \"\\\\udcXX\""));
    ck_assert_ptr_nonnull(strstr(text, "\"\\udce9t\xc3\xa9\""));
    chatfile_clear(&cf);
    unlink(path);
}
END_TEST

/* Interventions: written as "steer" (version 3), read back the same; a broken one is
 * refused naming the member. */
START_TEST(test_steer_round_trip)
{
    const char *steer = "{\"vectors\":[{\"name\":\"happy\",\"path\":\"/v/h \\\"1\\\".gguf\","
                        "\"scale\":-0.5,\"fnv1a64\":\"00000000000000ff\"}],\"layers\":[1,3],"
                        "\"heads_out\":[[0,1],[4,4]],\"experts_out\":[[1,5]],"
                        "\"experts_forced\":[[0,2]]}";
    char text[1024];
    snprintf(text, sizeof text, "{\"llmchat_chat\": 3, \"steer\": %s, \"turns\": []}", steer);
    chatfile cf, back;
    llm_err err;
    ck_assert_msg(chatfile_parse("t.json", text, strlen(text), &cf, &err) == LLM_OK, "%s", err.text);
    ck_assert_ptr_nonnull(cf.steer);
    ck_assert_int_eq(cf.steer->n_heads_out, 2);
    ck_assert_int_eq(cf.steer->heads_out[1], 4 * cf.steer->n_heads + 4);
    ck_assert_str_eq(cf.steer->vectors[0].path, "/v/h \"1\".gguf");
    const char *path = temp_path("steer.json");
    const char *written = written_text(&cf, path);
    ck_assert_ptr_nonnull(strstr(written, "\"llmchat_chat\": 3,"));
    ck_assert_ptr_nonnull(strstr(written, steer));
    ck_assert_msg(chatfile_read(path, &back, &err) == LLM_OK, "%s", err.text);
    ck_assert_int_eq(back.steer->n_experts_forced, 1);
    ck_assert_int_eq(back.steer->experts_forced[0].expert, 2);
    ck_assert(back.steer->vectors[0].scale == -0.5f);
    ck_assert_int_eq(back.steer->first_layer, 1);
    chatfile_clear(&back);
    chatfile_clear(&cf);
    unlink(path);
    parse_fails("{\"llmchat_chat\": 3, \"steer\": {\"vectors\": 1}, \"turns\": []}", "\"steer\"");
    parse_fails("{\"llmchat_chat\": 3, \"steer\": {\"vectors\": [], \"layers\": null, "
                "\"heads_out\": [[-1, 0]]}, \"turns\": []}", "\"steer\"");
    /* no interventions: version 1 and no "steer", as before */
    chatfile_init(&cf);
    written = written_text(&cf, path);
    ck_assert_ptr_nonnull(strstr(written, "\"llmchat_chat\": 1,"));
    ck_assert_ptr_null(strstr(written, "steer"));
    chatfile_clear(&cf);
    unlink(path);
}
END_TEST

/* A turn's interventions by segment: written as "ran_with" (version 4), read back the
 * same, looked up by position; broken ones refused naming the turn and member. */
START_TEST(test_ran_with_round_trip)
{
    const char *none = "{\"vectors\":[],\"layers\":null,\"heads_out\":[]}";
    const char *heads = "{\"vectors\":[],\"layers\":null,\"heads_out\":[[1,1]]}";
    char text[1024];
    snprintf(text, sizeof text,
             "{\"llmchat_chat\": 4, \"turns\": [{\"user\": \"a\", \"reply\": \"b\", "
             "\"ran_with\": [{\"from\": -5, \"steer\": %s}, {\"from\": 2, \"steer\": %s}]}, "
             "{\"user\": \"c\"}]}", none, heads);
    chatfile cf, back;
    llm_err err;
    ck_assert_msg(chatfile_parse("t.json", text, strlen(text), &cf, &err) == LLM_OK, "%s", err.text);
    const ran_with *ran = &cf.turns[0].ran;
    ck_assert_int_eq(ran->n, 2);
    ck_assert_ptr_null(ran->seg[0].in);
    ck_assert_int_eq(ran->seg[1].from, 2);
    ck_assert_int_eq(ran->seg[1].in->n_heads_out, 1);
    ck_assert_ptr_null(ran_with_at(ran, -9)); /* the first covers what is before it */
    ck_assert_ptr_null(ran_with_at(ran, 1));
    ck_assert_ptr_eq(ran_with_at(ran, 2), ran->seg[1].in);
    ck_assert_ptr_eq(ran_with_at(ran, 40), ran->seg[1].in);
    ck_assert(ran_with_differs(ran, NULL));
    ck_assert_int_eq(cf.turns[1].ran.n, 0);
    const char *path = temp_path("ran.json");
    const char *written = written_text(&cf, path);
    ck_assert_ptr_nonnull(strstr(written, "\"llmchat_chat\": 4,"));
    ck_assert_ptr_nonnull(strstr(written, heads));
    ck_assert_msg(chatfile_read(path, &back, &err) == LLM_OK, "%s", err.text);
    ck_assert_int_eq(back.turns[0].ran.n, 2);
    ck_assert_int_eq(back.turns[0].ran.seg[0].from, -5);
    ck_assert(intervention_same(back.turns[0].ran.seg[1].in, ran->seg[1].in));
    ck_assert(!intervention_same(back.turns[0].ran.seg[1].in, NULL));
    chatfile_clear(&back);
    chatfile_clear(&cf);
    unlink(path);
    parse_fails("{\"llmchat_chat\": 4, \"turns\": [{\"user\": \"a\", \"ran_with\": 1}]}",
                "turn 1: \"ran_with\" is a number, not an array");
    snprintf(text, sizeof text,
             "{\"llmchat_chat\": 4, \"turns\": [{\"user\": \"a\", \"ran_with\": "
             "[{\"from\": 3, \"steer\": %s}, {\"from\": 3, \"steer\": %s}]}]}", none, heads);
    parse_fails(text, "\"from\" are whole numbers, ascending");
    parse_fails("{\"llmchat_chat\": 4, \"turns\": [{\"user\": \"a\", \"ran_with\": "
                "[{\"from\": 0, \"steer\": {\"vectors\": 1}}]}]}",
                "\"steer\" that is not a set of interventions");
}
END_TEST

/* A served chat: the server object round-trips, no template or model is written. */
START_TEST(test_served_chat)
{
    chatfile cf, back;
    llm_err err;
    chatfile_init(&cf);
    ck_assert_int_eq(chatfile_set(&cf.server, "http://gpu:8080", &err), LLM_OK);
    ck_assert_int_eq(chatfile_set(&cf.server_api, "llama-server", &err), LLM_OK);
    ck_assert_int_eq(chatfile_set(&cf.server_model, "m \"q4\".gguf", &err), LLM_OK);
    ck_assert_int_eq(chatfile_add_turn(&cf, "hi", "hello", NULL, 0, true, false, true, &err), LLM_OK);
    const char *path = temp_path("served.json");
    ck_assert_int_eq(chatfile_write(&cf, path, &err), LLM_OK);
    ck_assert_msg(chatfile_read(path, &back, &err) == LLM_OK, "%s", err.text);
    unlink(path);
    ck_assert_str_eq(back.server, "http://gpu:8080");
    ck_assert_str_eq(back.server_api, "llama-server");
    ck_assert_str_eq(back.server_model, "m \"q4\".gguf");
    ck_assert_ptr_null(back.model);
    ck_assert_ptr_null(back.template_name); /* the server's template, not llama2 */
    ck_assert_int_eq(back.n_turns, 1);
    ck_assert_ptr_null(back.turns[0].reply_tokens);
    chatfile_clear(&back);
    chatfile_clear(&cf);
    /* a local chat names no server */
    const char *local = "{\"llmchat_chat\": 1, \"model\": \"m.bin\", \"turns\": []}";
    ck_assert_int_eq(chatfile_parse("l.json", local, strlen(local), &back, &err), LLM_OK);
    ck_assert_ptr_null(back.server);
    chatfile_clear(&back);
}
END_TEST

START_TEST(test_refusals)
{
    parse_fails("", "not a saved chat: line 1");
    parse_fails("User: hi\n", "not a saved chat");
    parse_fails("[1]", "\"llmchat_chat\" expected");
    parse_fails("{\"turns\": []}", "\"llmchat_chat\" expected");
    parse_fails("{\"llmchat_chat\": \"1\", \"turns\": []}", "version number");
    parse_fails("{\"llmchat_chat\": 0, \"turns\": []}", "version number");
    parse_fails("{\"llmchat_chat\": 5, \"turns\": []}", "newer llmchat (format version 5");
    parse_fails("{\"llmchat_chat\": 1}", "\"turns\" is missing");
    parse_fails("{\"llmchat_chat\": 1, \"turns\": {}}", "\"turns\" is an object, not an array");
    parse_fails("{\"llmchat_chat\": 1, \"turns\": [3]}", "turn 1 is a number, not an object");
    parse_fails("{\"llmchat_chat\": 1, \"turns\": [{\"reply\": \"x\"}]}", "turn 1: \"user\" is missing");
    parse_fails("{\"llmchat_chat\": 1, \"turns\": [{\"user\": 5}]}", "\"user\" is a number, not a string");
    parse_fails("{\"llmchat_chat\": 1, \"turns\": [{\"user\": \"a\\u0000b\"}]}", "NUL");
    parse_fails("{\"llmchat_chat\": 1, \"turns\": [{\"user\": \"a\", \"cut\": 1}]}", "true or false");
    parse_fails("{\"llmchat_chat\": 1, \"system\": null, \"turns\": []}", "\"system\" is null");
    parse_fails("{\"llmchat_chat\": 1, \"vocab_size\": 4, \"turns\": [{\"user\": \"a\", "
                "\"reply_tokens\": [1, 4]}]}", "item 2 is not a token id from 0 to 3");
    parse_fails("{\"llmchat_chat\": 1, \"vocab_size\": 4, \"turns\": [{\"user\": \"a\", "
                "\"reply_tokens\": 7}]}", "\"reply_tokens\" is a number, not an array");
    parse_fails("{\"llmchat_chat\": 1, \"vocab_size\": 4, \"turns\": [{\"user\": \"a\", "
                "\"reply_tokens\": [1], \"end_token\": 4}]}",
                "turn 1: \"end_token\" must be a token id from 0 to 3");
    parse_fails("{\"llmchat_chat\": 1, \"vocab_hash\": 5, \"turns\": []}",
                "\"vocab_hash\" is a number, not a string");
    parse_fails("{\"llmchat_chat\": 1, \"settings\": {\"top-p\": 7}, \"turns\": []}",
                "\"top-p\" must be in (0, 1], got 7");
    parse_fails("{\"llmchat_chat\": 1, \"settings\": {\"top-k\": \"40\"}, \"turns\": []}",
                "\"top-k\" must be an integer from 0 to 2147483647, not a string");
    parse_fails("{\"llmchat_chat\": 1, \"settings\": {\"steps\": 1000001}, \"turns\": []}",
                "\"steps\" must be an integer from 0 to 1000000, got 1000001");
    parse_fails("{\"llmchat_chat\": 1, \"settings\": {\"top-k\": -1}, \"turns\": []}", "\"top-k\"");
    parse_fails("{\"llmchat_chat\": 1, \"settings\": {\"temperature\": 1e99}, \"turns\": []}",
                "\"temperature\" must be a number");
    parse_fails("{\"llmchat_chat\": 1, \"settings\": {\"seed\": -1}, \"turns\": []}", "\"seed\"");
    parse_fails("{\"llmchat_chat\": 1, \"settings\": [], \"turns\": []}", "\"settings\" is an array");
    parse_fails("{\"llmchat_chat\": 1, \"server\": \"http://x\", \"turns\": []}",
                "\"server\" is a string, not an object");
    parse_fails("{\"llmchat_chat\": 1, \"server\": {\"api\": \"openai\"}, \"turns\": []}",
                "\"server\" has no \"url\"");
    parse_fails("{\"llmchat_chat\": 1, \"server\": {\"url\": 3}, \"turns\": []}",
                "\"url\" is a number, not a string");

    chatfile cf;
    llm_err err;
    ck_assert_int_eq(chatfile_read("/nonexistent/chat.json", &cf, &err), LLM_ERR_IO);
    ck_assert(strstr(err.text, "/nonexistent/chat.json") != NULL);
    ck_assert_int_eq(chatfile_read("/", &cf, &err), LLM_ERR_IO);
}
END_TEST

/* No temporary file is left, and a failed write leaves the old file whole. */
START_TEST(test_atomic_write)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", temp_path("dir"));
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    char path[4200];
    snprintf(path, sizeof path, "%s/chat.json", dir);
    chatfile cf;
    llm_err err;
    chatfile_init(&cf);
    ck_assert_int_eq(chatfile_add_turn(&cf, "first", "one", NULL, 0, true, false, true, &err), LLM_OK);
    ck_assert_int_eq(chatfile_write(&cf, path, &err), LLM_OK);
    ck_assert_int_eq(chatfile_add_turn(&cf, "second", "two", NULL, 0, true, false, true, &err), LLM_OK);
    ck_assert_int_eq(chatfile_write(&cf, path, &err), LLM_OK);
    DIR *d = opendir(dir);
    struct dirent *de;
    int files = 0;
    while ((de = readdir(d)))
        if (de->d_name[0] != '.')
            files++;
    closedir(d);
    ck_assert_int_eq(files, 1);
    ck_assert(strstr(slurp(path), "second") != NULL);

    if (geteuid() != 0) { /* root writes anywhere */
        chmod(dir, 0500);
        ck_assert_int_eq(chatfile_add_turn(&cf, "third", "", NULL, 0, true, false, true, &err), LLM_OK);
        ck_assert_int_eq(chatfile_write(&cf, path, &err), LLM_ERR_IO);
        ck_assert(strstr(err.text, path) != NULL);
        ck_assert(strstr(slurp(path), "second") != NULL);
        ck_assert(strstr(slurp(path), "third") == NULL);
        chmod(dir, 0700);
    }
    chatfile_clear(&cf);
    unlink(path);
    rmdir(dir);
}
END_TEST

/* ---- with the chat model ---- */

static model *m;
static tokenizer *tok;

static void setup(void)
{
    llm_err err;
    ck_assert_msg(model_open(data_path("chat260K.bin"), NULL, &m, &err) == LLM_OK, "%s", err.text);
    ck_assert_msg(tokenizer_open(data_path("tok512.bin"), 512, &tok, &err) == LLM_OK, "%s", err.text);
}

static void teardown(void)
{
    tokenizer_close(tok);
    model_close(m);
}

static engine *new_engine(int ctx)
{
    engine_options o;
    engine_options_default(&o);
    o.ctx_len = ctx;
    o.sampler.temperature = 0.0f;
    engine *e;
    llm_err err;
    ck_assert_msg(engine_new(m, tok, &o, &e, &err) == LLM_OK, "%s", err.text);
    return e;
}

static void run_reply(chat *c)
{
    int t;
    llm_err err;
    while (chat_step(c, &t, NULL, &err) == CHAT_GENERATING)
        ;
}

/* Runs one more greedy turn and returns its reply (static). */
static const char *next_reply(chat *c, const char *user)
{
    static char out[2][4096];
    static int slot;
    llm_err err;
    ck_assert_msg(chat_begin(c, user, 0, &err) == LLM_OK, "%s", err.text);
    run_reply(c);
    char *o = out[slot++ % 2];
    snprintf(o, sizeof out[0], "%s", chat_get_turn(c, chat_turn_count(c) - 1)->reply);
    return o;
}

START_TEST(test_save_restore_same_state)
{
    engine *e1 = new_engine(0), *e2 = new_engine(0);
    chat *c1, *c2;
    llm_err err;
    ck_assert_int_eq(chat_new(e1, "You tell stories.", &c1, &err), LLM_OK);
    next_reply(c1, "Tell me a story about a dog named Max.");
    ck_assert_int_eq(chat_begin(c1, "And one about Tom.", 12, &err), LLM_OK);
    run_reply(c1); /* cut at 12 tokens */
    ck_assert(chat_get_turn(c1, 1)->cut);

    const char *path = temp_path("chat.json");
    ck_assert_int_eq(chat_save(c1, path, &err), LLM_OK);
    chatfile cf;
    ck_assert_msg(chatfile_read(path, &cf, &err) == LLM_OK, "%s", err.text);
    unlink(path);
    ck_assert_int_eq(cf.n_turns, 2);
    ck_assert_str_eq(cf.model, m->path);
    ck_assert_int_eq(cf.steps, 12);
    ck_assert_int_eq(cf.ctx, engine_ctx(e1));
    ck_assert(cf.sampler.temperature == 0.0f);

    ck_assert_int_eq(chat_new(e2, NULL, &c2, &err), LLM_OK);
    ck_assert_msg(chat_restore(c2, &cf, &err) == LLM_OK, "%s", err.text);
    chatfile_clear(&cf);
    ck_assert_ptr_null(chat_take_notice(c2));
    ck_assert_str_eq(chat_system(c2), "You tell stories.");
    ck_assert_int_eq(engine_pos(e2), engine_pos(e1));
    ck_assert_mem_eq(engine_tokens(e2), engine_tokens(e1), sizeof(int) * (size_t)engine_pos(e1));
    ck_assert_int_eq(chat_turn_count(c2), 2);
    for (int i = 0; i < 2; i++) {
        const chat_turn *a = chat_get_turn(c1, i), *b = chat_get_turn(c2, i);
        ck_assert_str_eq(a->user, b->user);
        ck_assert_str_eq(a->reply, b->reply);
        ck_assert_int_eq(a->start, b->start);
        ck_assert_int_eq(a->reply_start, b->reply_start);
        ck_assert_int_eq(a->end, b->end);
        ck_assert_int_eq(a->cut, b->cut);
    }
    /* both go on alike: the KV cache holds the same history */
    ck_assert_str_eq(next_reply(c1, "Tell me a story about Anna."),
                     next_reply(c2, "Tell me a story about Anna."));
    chat_free(c1);
    chat_free(c2);
    engine_free(e1);
    engine_free(e2);
}
END_TEST

/* An open reply is saved as it stands and comes back closed (cut). */
START_TEST(test_open_reply_comes_back_cut)
{
    engine *e1 = new_engine(0), *e2 = new_engine(0);
    chat *c1, *c2;
    llm_err err;
    ck_assert_int_eq(chat_new(e1, NULL, &c1, &err), LLM_OK);
    ck_assert_int_eq(chat_begin(c1, "Tell me a story about Tom.", 0, &err), LLM_OK);
    int t;
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(chat_step(c1, &t, NULL, &err), CHAT_GENERATING);
    chatfile cf;
    ck_assert_int_eq(chat_to_file(c1, &cf, &err), LLM_OK);
    ck_assert(!cf.turns[0].complete && !cf.turns[0].cut);
    ck_assert_int_eq(cf.turns[0].n_reply_tokens, 5);
    ck_assert_int_eq(chat_new(e2, NULL, &c2, &err), LLM_OK);
    ck_assert_int_eq(chat_restore(c2, &cf, &err), LLM_OK);
    ck_assert(!chat_replying(c2));
    ck_assert(chat_get_turn(c2, 0)->cut);
    ck_assert_str_eq(chat_get_turn(c2, 0)->reply, chat_get_turn(c1, 0)->reply);
    ck_assert_int_eq(engine_tokens(e2)[engine_pos(e2) - 1], TOKEN_EOS);
    ck_assert_int_eq(engine_pos(e2), engine_pos(e1) + 1);
    chatfile_clear(&cf);
    chat_free(c1);
    chat_free(c2);
    engine_free(e1);
    engine_free(e2);
}
END_TEST

/* Turns dropped to make room stay in the dialog and in the file; a small context
 * takes only the newest turns back, and says so. Without the ids (another
 * vocabulary), the reply text is tokenized instead. */
START_TEST(test_dropped_turns_and_small_context)
{
    engine *e1 = new_engine(256);
    chat *c1;
    llm_err err;
    ck_assert_int_eq(chat_new(e1, "Be short.", &c1, &err), LLM_OK);
    const char *asks[] = {"Tell me a story about Tom.", "Tell me a story about Max.",
                          "Tell me a story about Anna.", "Tell me a story about Leo."};
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(chat_begin(c1, asks[i], 40, &err), LLM_OK);
        run_reply(c1);
    }
    ck_assert_int_gt(chat_dropped_count(c1), 0);
    ck_assert_int_ge(chat_turn_count(c1), 2);
    ck_assert_int_eq(chat_dropped_count(c1) + chat_turn_count(c1), 4);
    ck_assert_str_eq(chat_get_dropped(c1, 0)->user, asks[0]);
    ck_assert_int_eq(chat_get_dropped(c1, 0)->start, -1);
    ck_assert_ptr_null(chat_get_dropped(c1, chat_dropped_count(c1)));

    chatfile cf;
    ck_assert_int_eq(chat_to_file(c1, &cf, &err), LLM_OK);
    ck_assert_int_eq(cf.n_turns, 4);
    ck_assert(!cf.turns[0].in_context);
    ck_assert(cf.turns[3].in_context);

    /* the same context: the same turns in it, the same tokens */
    engine *e2 = new_engine(256);
    chat *c2;
    ck_assert_int_eq(chat_new(e2, NULL, &c2, &err), LLM_OK);
    ck_assert_int_eq(chat_restore(c2, &cf, &err), LLM_OK);
    ck_assert_int_eq(chat_dropped_count(c2), chat_dropped_count(c1));
    ck_assert_int_eq(engine_pos(e2), engine_pos(e1));
    ck_assert_mem_eq(engine_tokens(e2), engine_tokens(e1), sizeof(int) * (size_t)engine_pos(e1));

    /* a smaller context: fewer turns fit; the notice says so */
    engine *e3 = new_engine(100);
    chat *c3;
    ck_assert_int_eq(chat_new(e3, NULL, &c3, &err), LLM_OK);
    ck_assert_int_eq(chat_restore(c3, &cf, &err), LLM_OK);
    ck_assert_int_gt(chat_dropped_count(c3), chat_dropped_count(c1));
    ck_assert_int_le(engine_pos(e3), 100);
    ck_assert_int_ge(chat_turn_count(c3), 1);
    const char *note = chat_take_notice(c3);
    ck_assert_ptr_nonnull(note);
    ck_assert(strstr(note, "out of it") != NULL);
    ck_assert_str_eq(chat_get_turn(c3, chat_turn_count(c3) - 1)->user, asks[3]);

    /* ids from another vocabulary are not used: the text is tokenized */
    cf.vocab_size = 32000;
    chat_reset(c2);
    ck_assert_int_eq(chat_restore(c2, &cf, &err), LLM_OK);
    const chat_turn *last = chat_get_turn(c2, chat_turn_count(c2) - 1);
    ck_assert_str_eq(last->reply, cf.turns[3].reply);
    int n = tokenizer_encode(tok, last->reply, NULL, 0);
    ck_assert_int_eq(last->end - last->reply_start, n + 1);

    chatfile_clear(&cf);
    chat_free(c1);
    chat_free(c2);
    chat_free(c3);
    engine_free(e1);
    engine_free(e2);
    engine_free(e3);
}
END_TEST

/* ---- a vocabulary with more stop tokens than the end token ---- */

enum { IM_START = 510, IM_END = 511 }; /* the markers write_chatml_variant puts in */

static const char *marker_path;
static model *mm;
static tokenizer *mtok;
static chat_template *chatml;

static void setup_markers(void)
{
    llm_err err;
    marker_path = write_chatml_variant("stories260K.gguf", "chatml-chat.gguf", false, NULL);
    ck_assert_msg(model_open(marker_path, NULL, &mm, &err) == LLM_OK, "%s", err.text);
    ck_assert_msg(tokenizer_open(marker_path, 512, &mtok, &err) == LLM_OK, "%s", err.text);
    ck_assert(template_new(TEMPLATE_CHATML, mtok, &chatml, &err) == LLM_OK);
    ck_assert_int_eq(template_end_token(chatml), IM_END);
    ck_assert(template_is_stop(chatml, IM_START)); /* a stop token that is not the end token */
}

static void teardown_markers(void)
{
    template_free(chatml);
    tokenizer_close(mtok);
    model_close(mm);
    remove(marker_path);
}

/* A chatml chat on a fresh engine of the marker model (ctx 0: the model's). */
static chat *marker_chat(int ctx, engine **e)
{
    engine_options o;
    engine_options_default(&o);
    o.ctx_len = ctx;
    o.sampler.temperature = 0.0f;
    llm_err err;
    ck_assert_msg(engine_new(mm, mtok, &o, e, &err) == LLM_OK, "%s", err.text);
    chat *c;
    ck_assert(chat_new_template(*e, chatml, "Tell stories.", &c, &err) == LLM_OK);
    return c;
}

/* c's dialog through a file (what /save then /load do) into a fresh chat on a fresh
 * engine of context ctx; *e2 receives the engine. */
static chat *through_file(const chat *c, int ctx, engine **e2)
{
    llm_err err;
    const char *path = temp_path("markers.json");
    ck_assert_int_eq(chat_save(c, path, &err), LLM_OK);
    chatfile cf;
    ck_assert_msg(chatfile_read(path, &cf, &err) == LLM_OK, "%s", err.text);
    unlink(path);
    chat *c2 = marker_chat(ctx, e2);
    ck_assert_msg(chat_restore(c2, &cf, &err) == LLM_OK, "%s", err.text);
    chatfile_clear(&cf);
    return c2;
}

/* The two engines hold the same context, token for token, and the chats the same turns. */
static void same_context(const chat *c1, const engine *e1, const chat *c2, const engine *e2)
{
    ck_assert_int_eq(engine_pos(e2), engine_pos(e1));
    for (int p = 0; p < engine_pos(e1); p++)
        ck_assert_msg(engine_tokens(e2)[p] == engine_tokens(e1)[p],
                      "position %d: %d restored, %d live", p, engine_tokens(e2)[p],
                      engine_tokens(e1)[p]);
    ck_assert_int_eq(chat_turn_count(c2), chat_turn_count(c1));
    for (int i = 0; i < chat_turn_count(c1); i++) {
        const chat_turn *a = chat_get_turn(c1, i), *b = chat_get_turn(c2, i);
        ck_assert_str_eq(b->reply, a->reply);
        ck_assert_int_eq(b->end, a->end);
        ck_assert_int_eq(b->complete, a->complete);
    }
}

/* Frees two chats and their engines. */
static void free_both(chat *c1, engine *e1, chat *c2, engine *e2)
{
    chat_free(c1);
    chat_free(c2);
    engine_free(e1);
    engine_free(e2);
}

/* The live chat c1 and the loaded c2 go on alike: the same greedy reply to user, the
 * same context after it. Frees both and their engines. */
static void go_on_alike(chat *c1, engine *e1, chat *c2, engine *e2, const char *user)
{
    ck_assert_str_eq(next_reply(c1, user), next_reply(c2, user));
    same_context(c1, e1, c2, e2);
    free_both(c1, e1, c2, e2);
}

/* A reply that ended with <|im_start|> (forced here; a model may write it), a stop
 * token that is not the template's end token <|im_end|>, keeps it when saved and
 * loaded: the loaded context is the live one token for token, and the next greedy reply
 * is the same in both sessions. */
START_TEST(test_stop_marker_comes_back)
{
    engine *e1, *e2;
    chat *c1 = marker_chat(0, &e1);
    llm_err err;
    chat_progress p;
    int words[16];
    ck_assert_int_ge(tokenizer_encode(mtok, "The dog", words, 16), 2);
    ck_assert_int_eq(chat_begin(c1, "Once upon a time", 0, &err), LLM_OK);
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(chat_force(c1, words[i], &p, NULL, &err), LLM_OK);
    ck_assert_int_eq(chat_force(c1, IM_START, &p, NULL, &err), LLM_OK);
    ck_assert_int_eq(p, CHAT_REPLY_DONE);
    ck_assert(chat_get_turn(c1, 0)->complete);
    ck_assert_int_eq(engine_tokens(e1)[chat_get_turn(c1, 0)->end - 1], IM_START);
    ck_assert_int_eq(chat_begin(c1, "The end", 4, &err), LLM_OK);
    run_reply(c1);
    ck_assert(template_is_stop(chatml, engine_tokens(e1)[engine_pos(e1) - 1]));

    chat *c2 = through_file(c1, 0, &e2);
    same_context(c1, e1, c2, e2);
    /* the file has the ids without the stop token, which is "end_token" */
    chatfile cf;
    ck_assert_int_eq(chat_to_file(c1, &cf, &err), LLM_OK);
    ck_assert_ptr_nonnull(cf.vocab_hash);
    ck_assert_int_eq((int)strlen(cf.vocab_hash), 16);
    ck_assert_int_eq(cf.turns[0].end_token, IM_START);
    ck_assert_int_eq(cf.turns[0].n_reply_tokens, 2);
    ck_assert_int_eq(cf.turns[1].end_token, engine_tokens(e1)[engine_pos(e1) - 1]);
    chatfile_clear(&cf);
    go_on_alike(c1, e1, c2, e2, "Tell me more.");
}
END_TEST

/* A reply that ran into the end of the context has no token closing it; it comes back
 * without one (not with an <|im_end|> that would not fit), and the next turn makes
 * room alike in both sessions. */
START_TEST(test_full_context_reply_comes_back_open_ended)
{
    enum { CTX = 64 };
    engine *e1, *e2;
    chat *c1 = marker_chat(CTX, &e1);
    llm_err err;
    chat_progress p = CHAT_GENERATING;
    ck_assert_int_eq(chat_begin(c1, "Once upon a time", 0, &err), LLM_OK);
    int filler[16];
    ck_assert_int_ge(tokenizer_encode(mtok, "dog", filler, 16), 1);
    for (int i = 0; i < CTX && p == CHAT_GENERATING; i++)
        ck_assert_int_eq(chat_force(c1, filler[0], &p, NULL, &err), LLM_OK);
    ck_assert_int_eq(p, CHAT_REPLY_FULL);
    ck_assert_int_eq(engine_pos(e1), CTX);
    ck_assert(!chat_get_turn(c1, 0)->complete);

    chat *c2 = through_file(c1, CTX, &e2);
    ck_assert_ptr_null(chat_take_notice(c2)); /* it fits as it was */
    same_context(c1, e1, c2, e2);
    go_on_alike(c1, e1, c2, e2, "More.");
}
END_TEST

/* A BOS among a saved reply's ids (a chat can not make one; a file can hold one) comes
 * back as it is: neither the unknown token (-1 in a byte-level BPE vocabulary, which
 * made the restore fail) nor a dropped turn. */
START_TEST(test_bos_in_saved_reply)
{
    engine *e1, *e2;
    chat *c1 = marker_chat(0, &e1);
    llm_err err;
    ck_assert_int_eq(chat_begin(c1, "Once upon a time", 6, &err), LLM_OK);
    run_reply(c1);
    chatfile cf;
    ck_assert_int_eq(chat_to_file(c1, &cf, &err), LLM_OK);
    ck_assert_int_ge(cf.turns[0].n_reply_tokens, 2);
    cf.turns[0].reply_tokens[1] = tokenizer_bos(mtok);
    chat *c2 = marker_chat(0, &e2);
    ck_assert_msg(chat_restore(c2, &cf, &err) == LLM_OK, "%s", err.text);
    ck_assert_int_eq(chat_turn_count(c2), 1);
    const chat_turn *t = chat_get_turn(c2, 0);
    ck_assert_int_eq(t->end - t->reply_start, cf.turns[0].n_reply_tokens + 1);
    ck_assert_mem_eq(engine_tokens(e2) + t->reply_start, cf.turns[0].reply_tokens,
                     sizeof(int) * (size_t)cf.turns[0].n_reply_tokens);
    ck_assert_int_eq(engine_tokens(e2)[t->end - 1], cf.turns[0].end_token);
    chatfile_clear(&cf);
    free_both(c1, e1, c2, e2);
}
END_TEST

/* A file from before "end_token" and "vocab_hash" loads as it did: its ids used, each
 * reply closed with the end token. A fingerprint of another vocabulary (of the same
 * size) makes the text count instead of the ids. */
START_TEST(test_older_file_and_other_vocabulary)
{
    engine *e1, *e2;
    chat *c1 = marker_chat(0, &e1);
    llm_err err;
    int t;
    chat_progress p;
    ck_assert_int_eq(chat_begin(c1, "Once upon a time", 0, &err), LLM_OK);
    ck_assert_int_eq(chat_step(c1, &t, NULL, &err), CHAT_GENERATING);
    ck_assert_int_eq(chat_step(c1, &t, NULL, &err), CHAT_GENERATING);
    ck_assert_int_eq(chat_force(c1, IM_START, &p, NULL, &err), LLM_OK);
    chatfile cf;
    ck_assert_int_eq(chat_to_file(c1, &cf, &err), LLM_OK);
    ck_assert_int_eq(cf.turns[0].end_token, IM_START);

    free(cf.vocab_hash);
    cf.vocab_hash = NULL;
    cf.turns[0].end_token = -1;
    chat *c2 = marker_chat(0, &e2);
    ck_assert_int_eq(chat_restore(c2, &cf, &err), LLM_OK);
    const chat_turn *r = chat_get_turn(c2, 0);
    ck_assert_int_eq(r->end - r->reply_start, 3);
    ck_assert_mem_eq(engine_tokens(e2) + r->reply_start, cf.turns[0].reply_tokens, 2 * sizeof(int));
    ck_assert_int_eq(engine_tokens(e2)[r->end - 1], IM_END);
    ck_assert(r->complete);

    ck_assert_int_eq(chatfile_set(&cf.vocab_hash, "0000000000000000", &err), LLM_OK);
    cf.turns[0].end_token = IM_START;
    chat_reset(c2);
    ck_assert_int_eq(chat_restore(c2, &cf, &err), LLM_OK);
    r = chat_get_turn(c2, 0);
    int n = tokenizer_encode(mtok, cf.turns[0].reply, NULL, 0);
    ck_assert_int_eq(r->end - r->reply_start, n + 1);
    ck_assert_int_eq(engine_tokens(e2)[r->end - 1], IM_END);
    chatfile_clear(&cf);
    free_both(c1, e1, c2, e2);
}
END_TEST

static Suite *chatfile_suite(void)
{
    Suite *s = suite_create("chatfile");
    TCase *core = tcase_create("core");
    tcase_add_test(core, test_round_trip);
    tcase_add_test(core, test_minimal_and_unknown_members);
    tcase_add_test(core, test_atomic_write);
    tcase_add_test(core, test_served_chat);
    tcase_add_test(core, test_raw_bytes_escapes);
    tcase_add_test(core, test_steer_round_trip);
    tcase_add_test(core, test_ran_with_round_trip);
    suite_add_tcase(s, core);
    TCase *limits = tcase_create("limits");
    tcase_add_test(limits, test_refusals);
    suite_add_tcase(s, limits);
    TCase *dialog = tcase_create("chat");
    tcase_add_checked_fixture(dialog, setup, teardown);
    tcase_add_test(dialog, test_save_restore_same_state);
    tcase_add_test(dialog, test_open_reply_comes_back_cut);
    tcase_add_test(dialog, test_dropped_turns_and_small_context);
    suite_add_tcase(s, dialog);
    TCase *markers = tcase_create("markers");
    tcase_add_checked_fixture(markers, setup_markers, teardown_markers);
    tcase_add_test(markers, test_stop_marker_comes_back);
    tcase_add_test(markers, test_full_context_reply_comes_back_open_ended);
    tcase_add_test(markers, test_bos_in_saved_reply);
    tcase_add_test(markers, test_older_file_and_other_vocabulary);
    suite_add_tcase(s, markers);
    return s;
}

TEST_MAIN(chatfile_suite)
