/* test_think.c — the thinking span of a reply's text (think.h): closed, open while a
 * reply streams (every prefix of one), absent, empty (as /no_think renders it), and
 * found the same whether <think> is Qwen3's token, decoded, or plain text pieces; and
 * harmony's analysis channel (gpt-oss), up to the final channel's header. */
#include <string.h>

#include "template.h"
#include "testutil.h"
#include "think.h"
#include "tokenizer.h"

static think_span find(const char *text)
{
    think_span sp;
    think_state st = think_find(text, strlen(text), &sp);
    ck_assert_int_eq(st, sp.state);
    return sp;
}

/* A span the prompt opened (Qwen 3.5's template ends the turn with "<think>\n"): the
 * reply's text starts inside it; the first "</think>" closes it; every prefix before
 * that is OPEN (no UNSURE: nothing has to open it), and an empty body is empty. */
START_TEST(test_opened_by_prompt)
{
    const char *r = "Let me see.\n</think>\n\nHello there.";
    think_span sp;
    ck_assert_int_eq(think_find_in(r, strlen(r), true, &sp), THINK_CLOSED);
    ck_assert_uint_eq(sp.start, 0);
    ck_assert_uint_eq(sp.body, 0);
    ck_assert_uint_eq(sp.body_end, (size_t)(strstr(r, "</think>") - r));
    ck_assert_uint_eq(sp.end, (size_t)(strstr(r, "Hello") - r));
    ck_assert(!sp.empty);
    size_t close = (size_t)(strstr(r, "</think>") - r);
    for (size_t n = 0; n < close + 7; n++) {
        ck_assert_int_eq(think_find_in(r, n, true, &sp), THINK_OPEN);
        ck_assert_uint_eq(sp.end, n);
    }
    ck_assert_int_eq(think_find_in("\n\n</think>\n\nHi", 15, true, &sp), THINK_CLOSED);
    ck_assert(sp.empty);
    /* not opened: the same text has no span */
    ck_assert_int_eq(think_find_in(r, strlen(r), false, &sp), THINK_NONE);
}
END_TEST

START_TEST(test_closed)
{
    const char *r = "<think>\nLet me see.\n</think>\n\nHello there.";
    think_span sp = find(r);
    ck_assert_int_eq(sp.state, THINK_CLOSED);
    ck_assert_uint_eq(sp.start, 0);
    ck_assert_uint_eq(sp.body, 7);
    ck_assert_uint_eq(sp.body_end, (size_t)(strstr(r, "</think>") - r));
    ck_assert_uint_eq(sp.end, (size_t)(strstr(r, "Hello") - r));
    ck_assert(!sp.empty);
    /* whitespace before <think> belongs before the span; only the first </think> closes it */
    r = " \n<think>a</think>b</think>c";
    sp = find(r);
    ck_assert_int_eq(sp.state, THINK_CLOSED);
    ck_assert_uint_eq(sp.start, 2);
    ck_assert_uint_eq(sp.body_end, 10);
    ck_assert_uint_eq(sp.end, 18);
}
END_TEST

/* gpt-oss's reply: the analysis message, then the final message's header; the span covers
 * both, so that what is left is the answer. */
START_TEST(test_harmony)
{
    const char *r = "<|channel|>analysis<|message|>User greets.<|end|><|start|>assistant"
                    "<|channel|>final<|message|>Hello!";
    think_span sp = find(r);
    ck_assert_int_eq(sp.state, THINK_CLOSED);
    ck_assert_uint_eq(sp.start, 0);
    ck_assert_uint_eq(sp.body, strlen("<|channel|>analysis<|message|>"));
    ck_assert_uint_eq(sp.body_end, (size_t)(strstr(r, "<|end|>") - r));
    ck_assert_uint_eq(sp.end, (size_t)(strstr(r, "Hello") - r));
    ck_assert(!sp.empty);
    /* two analysis messages are one span */
    r = "<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>analysis<|message|>b"
        "<|end|><|start|>assistant<|channel|>final<|message|>c";
    sp = find(r);
    ck_assert_int_eq(sp.state, THINK_CLOSED);
    ck_assert_uint_eq(sp.end, strlen(r) - 1);
    /* only the final channel: an empty span, the header hidden */
    r = "<|channel|>final<|message|>Hi.";
    sp = find(r);
    ck_assert_int_eq(sp.state, THINK_CLOSED);
    ck_assert(sp.empty);
    ck_assert_uint_eq(sp.end, strlen(r) - 3);
    /* after the analysis, something other than a final message is not hidden */
    r = "<|channel|>analysis<|message|>a<|end|>x";
    sp = find(r);
    ck_assert_int_eq(sp.state, THINK_CLOSED);
    ck_assert_uint_eq(sp.end, strlen(r) - 1);
    ck_assert_int_eq(find("<|channel|>commentary<|message|>x").state, THINK_NONE);
}
END_TEST

/* Every prefix of a harmony reply as it streams: unsure until the header is whole, open
 * through the analysis, closed with the answer empty until the final header is whole. */
START_TEST(test_harmony_streaming)
{
    const char *r = "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant"
                    "<|channel|>final<|message|>Answer.";
    size_t len = strlen(r), head = strlen("<|channel|>analysis<|message|>");
    size_t end = (size_t)(strstr(r, "<|end|>") - r), answer = (size_t)(strstr(r, "Answer") - r);
    for (size_t n = 0; n <= len; n++) {
        think_span sp;
        think_state st = think_find(r, n, &sp);
        if (n < head)
            ck_assert_msg(st == THINK_UNSURE, "%zu: %d", n, st);
        else if (n < end + strlen("<|end|>"))
            ck_assert_msg(st == THINK_OPEN && sp.end == n, "%zu: %d", n, st);
        else
            ck_assert_msg(st == THINK_CLOSED && sp.end == (n < answer ? n : answer), "%zu: %d %zu",
                          n, st, sp.end);
    }
}
END_TEST

/* /no_think's empty span, and one the model writes itself. */
START_TEST(test_empty)
{
    think_span sp = find("<think>\n\n</think>\n\nAnswer.");
    ck_assert_int_eq(sp.state, THINK_CLOSED);
    ck_assert(sp.empty);
    ck_assert_uint_eq(sp.end, 19);
    sp = find("<think></think>");
    ck_assert_int_eq(sp.state, THINK_CLOSED);
    ck_assert(sp.empty);
    ck_assert_uint_eq(sp.end, 15);
}
END_TEST

START_TEST(test_none)
{
    const char *no[] = {"Hello.", "Hello <think>x</think>", "<thinking>x</think>", "think>",
                        "</think>answer", "x<think>"};
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        ck_assert_msg(find(no[i]).state == THINK_NONE, "%s", no[i]);
    /* text that may still become <think> */
    const char *maybe[] = {"", "\n", "<", "<thi", " <think"};
    for (size_t i = 0; i < sizeof maybe / sizeof maybe[0]; i++)
        ck_assert_msg(find(maybe[i]).state == THINK_UNSURE, "[%s]", maybe[i]);
    /* the length counts, not the NUL */
    think_span sp;
    ck_assert_int_eq(think_find("<think>x</think>", 10, &sp), THINK_OPEN);
    ck_assert_int_eq(think_find(NULL, 0, &sp), THINK_UNSURE);
}
END_TEST

/* Streamed in plain text pieces ("<", "think", ">"): every prefix says unsure, then open
 * (the span running to the text's end), then closed, its start never moving. */
START_TEST(test_streaming_pieces)
{
    const char *pieces[] = {"<", "think", ">", "\n", "Hm", "m.", "</", "think", ">", "\n\n", "Yes", "."};
    char text[128] = "";
    think_state want[] = {THINK_UNSURE, THINK_UNSURE, THINK_OPEN, THINK_OPEN, THINK_OPEN,
                          THINK_OPEN, THINK_OPEN, THINK_OPEN, THINK_CLOSED, THINK_CLOSED,
                          THINK_CLOSED, THINK_CLOSED};
    for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) {
        strcat(text, pieces[i]);
        think_span sp = find(text);
        ck_assert_msg(sp.state == want[i], "after [%s]: %d", text, (int)sp.state);
        if (sp.state == THINK_OPEN) {
            ck_assert_uint_eq(sp.start, 0);
            ck_assert_uint_eq(sp.body_end, strlen(text));
            ck_assert_uint_eq(sp.end, strlen(text));
            ck_assert(sp.empty == (i < 4));
        } else if (sp.state == THINK_CLOSED) {
            ck_assert_uint_eq(sp.body_end, 12);
            ck_assert_uint_eq(sp.end, i < 9 ? 20 : 22);
        }
    }
    /* byte by byte, a whole reply */
    const char *r = "<think>ab</think>\n\nc";
    for (size_t n = 0; n <= strlen(r); n++) {
        think_span sp;
        think_find(r, n, &sp);
        think_state w = n < 7 ? THINK_UNSURE : n < 17 ? THINK_OPEN : THINK_CLOSED;
        ck_assert_msg(sp.state == w, "%zu bytes: %d", n, (int)sp.state);
    }
}
END_TEST

static const char *built_file(const char *name)
{
    static char path[4096];
    const char *dir = getenv("LLMCHAT_BUILDDIR");
    snprintf(path, sizeof path, "%s/tests/%s", dir && *dir ? dir : ".", name);
    return path;
}

/* Qwen3's <think> and </think> are user-defined tokens: decoded, they are their text,
 * and the span found in the reply's text starts at <think>'s bytes and closes after
 * </think>'s, the tokens template_think_span finds. */
START_TEST(test_special_tokens)
{
    tokenizer *tok;
    llm_err err;
    ck_assert(tokenizer_open(built_file("qwen3-vocab.gguf"), 0, &tok, &err) == LLM_OK);
    int think = tokenizer_special(tok, "<think>"), end_think = tokenizer_special(tok, "</think>");
    ck_assert(think >= 0 && end_think >= 0);
    int ids[64], n = 0;
    ids[n++] = think;
    n += tokenizer_encode(tok, "\nThe user greets me.\n", ids + n, 64 - n);
    ids[n++] = end_think;
    n += tokenizer_encode(tok, "\n\nHello!", ids + n, 64 - n);
    ck_assert_int_lt(n, 64);
    /* the reply's text, and where each token's bytes start */
    char text[256] = "";
    size_t off[64], len = 0;
    for (int i = 0; i < n; i++) {
        off[i] = len;
        len += tokenizer_decode(tok, i ? ids[i - 1] : -1, ids[i], text + len, sizeof text - len);
    }
    ck_assert_str_eq(text, "<think>\nThe user greets me.\n</think>\n\nHello!");
    think_span sp = find(text);
    ck_assert_int_eq(sp.state, THINK_CLOSED);
    chat_template *t;
    ck_assert(template_new(TEMPLATE_QWEN3, tok, &t, &err) == LLM_OK);
    template_span ts;
    ck_assert(template_think_span(t, ids, n, &ts) && ts.closed);
    ck_assert_uint_eq(sp.start, off[ts.start]);
    ck_assert_uint_eq(sp.body_end, off[ts.end - 1]);
    ck_assert_uint_eq(sp.end, (size_t)(strstr(text, "Hello") - text));
    /* encoded as text, "<think>" becomes the token again (the tokenizer splits at
     * user-defined tokens): a saved chat's reply text finds the same span */
    int again[64];
    int m = tokenizer_encode(tok, text, again, 64);
    ck_assert_int_gt(m, 0);
    ck_assert_int_eq(again[0], think);
    template_free(t);
    tokenizer_close(tok);
}
END_TEST

/* Gemma 4's thought channel: <|channel> and <channel|> are user-defined tokens, decoded
 * as their text; "<|channel>thought" opens the span, "<channel|>" closes it, the same
 * span in the text and in the tokens (template_think_span of gemma4); a prefix of
 * "<|channel>thought" is unsure, and an empty channel (the prompt's, with thinking off)
 * is empty. */
START_TEST(test_gemma4_channel)
{
    tokenizer *tok;
    llm_err err;
    ck_assert(tokenizer_open(built_file("gemma4-vocab.gguf"), 0, &tok, &err) == LLM_OK);
    int open = tokenizer_special(tok, "<|channel>"), close = tokenizer_special(tok, "<channel|>");
    ck_assert(open >= 0 && close >= 0);
    int ids[96], n = 0;
    ids[n++] = open;
    n += tokenizer_encode(tok, "thought\nThe user greets me.\n", ids + n, 96 - n);
    ids[n++] = close;
    n += tokenizer_encode(tok, "Hello!", ids + n, 96 - n);
    ck_assert_int_lt(n, 96);
    char text[256] = "";
    size_t off[96], len = 0;
    for (int i = 0; i < n; i++) {
        off[i] = len;
        len += tokenizer_decode(tok, i ? ids[i - 1] : -1, ids[i], text + len, sizeof text - len);
    }
    ck_assert_str_eq(text, "<|channel>thought\nThe user greets me.\n<channel|>Hello!");
    think_span sp = find(text);
    ck_assert_int_eq(sp.state, THINK_CLOSED);
    ck_assert(!sp.empty);
    chat_template *t;
    ck_assert(template_new(TEMPLATE_GEMMA4, tok, &t, &err) == LLM_OK);
    template_span ts;
    ck_assert(template_think_span(t, ids, n, &ts) && ts.closed);
    ck_assert_uint_eq(sp.start, off[ts.start]);
    ck_assert_uint_eq(sp.body_end, off[ts.end - 1]);
    ck_assert_uint_eq(sp.end, (size_t)(strstr(text, "Hello") - text));
    ck_assert(!template_is_stop(t, open) && !template_is_stop(t, close));
    ck_assert(template_is_stop(t, template_end_token(t)));
    template_free(t);
    tokenizer_close(tok);
    ck_assert_int_eq(find("<|chan").state, THINK_UNSURE);
    ck_assert_int_eq(find("<|channel>thou").state, THINK_UNSURE);
    ck_assert_int_eq(find("<|channel>thought\nhm").state, THINK_OPEN);
    ck_assert(find("<|channel>thought\n<channel|>").empty);
    ck_assert_int_eq(find("<|channel>final").state, THINK_NONE);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("think");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_gemma4_channel);
    tcase_add_test(tc, test_closed);
    tcase_add_test(tc, test_opened_by_prompt);
    tcase_add_test(tc, test_harmony);
    tcase_add_test(tc, test_harmony_streaming);
    tcase_add_test(tc, test_empty);
    tcase_add_test(tc, test_none);
    tcase_add_test(tc, test_streaming_pieces);
    tcase_add_test(tc, test_special_tokens);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(make_suite)
