/* think.c — the thinking span of a reply's text (see think.h): Qwen3's <think> block,
 * Gemma 4's thought channel or harmony's analysis channel. */
#include "think.h"

#include <string.h>

/* The spans a tag opens and a tag closes: Qwen3's, Gemma 4's thought channel. */
static const struct {
    const char *open, *close;
} SPANS[] = {{"<think>", "</think>"}, {"<|channel>thought", "<channel|>"}};
enum { N_SPANS = sizeof SPANS / sizeof SPANS[0] };

/* Harmony's headers and the end of a message, as the reply's text spells them. */
static const char ANALYSIS[] = "<|channel|>analysis<|message|>",
                  FINAL[] = "<|channel|>final<|message|>", END[] = "<|end|>",
                  NEXT[] = "<|start|>assistant";

static bool is_space(char c)
{
    return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

/* The first occurrence of tag in text[from, len), or len. */
static size_t find_tag(const char *text, size_t from, size_t len, const char *tag)
{
    size_t n = strlen(tag);
    for (size_t i = from; i + n <= len; i++)
        if (text[i] == tag[0] && !memcmp(text + i, tag, n))
            return i;
    return len;
}

/* How text[at, len) stands to tag: 1 when it starts with it, 0 when it is a shorter
 * prefix of it (it may still become tag), -1 when it cannot. */
static int starts_with(const char *text, size_t at, size_t len, const char *tag)
{
    size_t n = strlen(tag), have = at < len ? len - at : 0;
    if (have >= n)
        return memcmp(text + at, tag, n) ? -1 : 1;
    if (have > 0 && memcmp(text + at, tag, have) != 0) /* nothing (text may be NULL): 0 */
        return -1;
    return 0;
}

static bool all_space(const char *text, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        if (!is_space(text[i]))
            return false;
    return true;
}

/* A harmony reply from s: analysis messages (each "<|channel|>analysis<|message|>" up to
 * "<|end|>", later ones after "<|start|>assistant"), then the final message's header.
 * The span covers the analysis and the headers, so that what follows is the answer. */
static think_state find_harmony(const char *text, size_t s, size_t len, think_span *out)
{
    out->start = s;
    out->empty = true;
    if (starts_with(text, s, len, FINAL) == 1) { /* no analysis: only the header to hide */
        out->body = out->body_end = out->end = s + strlen(FINAL);
        out->state = THINK_CLOSED;
        return out->state;
    }
    out->body = s + strlen(ANALYSIS);
    size_t at = out->body;
    for (;;) {
        size_t end = find_tag(text, at, len, END);
        out->empty = out->empty && all_space(text, at, end);
        out->body_end = end;
        if (end == len) {
            out->end = len;
            out->state = THINK_OPEN;
            return out->state;
        }
        size_t e = end + strlen(END);
        out->end = e;
        out->state = THINK_CLOSED;
        int next = starts_with(text, e, len, NEXT);
        if (next <= 0) {
            out->end = next == 0 ? len : e; /* a header on its way is not the answer yet */
            return out->state;
        }
        e += strlen(NEXT);
        int more = starts_with(text, e, len, ANALYSIS), fin = starts_with(text, e, len, FINAL);
        if (more == 1) {
            at = e + strlen(ANALYSIS);
            continue;
        }
        if (fin == 1)
            out->end = e + strlen(FINAL);
        else
            out->end = more == 0 || fin == 0 ? len : end + strlen(END);
        return out->state;
    }
}

/* The span whose opening tag (or the prompt's) starts at start and whose thinking starts
 * at body: up to the first closing tag and the whitespace after it, or open. */
static think_state close_span(const char *text, size_t start, size_t body, size_t len,
                              const char *close, think_span *out)
{
    out->start = start;
    out->body = body;
    out->body_end = find_tag(text, body, len, close);
    out->empty = all_space(text, body, out->body_end);
    if (out->body_end == len) {
        out->end = len;
        out->state = THINK_OPEN;
        return out->state;
    }
    size_t e = out->body_end + strlen(close);
    while (e < len && is_space(text[e]))
        e++;
    out->end = e;
    out->state = THINK_CLOSED;
    return out->state;
}

think_state think_find_in(const char *text, size_t len, bool opened, think_span *out)
{
    if (!opened)
        return think_find(text, len, out);
    *out = (think_span){.state = THINK_NONE};
    return close_span(text, 0, 0, len, SPANS[0].close, out); /* the prompt opened it */
}

think_state think_find(const char *text, size_t len, think_span *out)
{
    *out = (think_span){.state = THINK_NONE};
    size_t s = 0;
    while (s < len && is_space(text[s]))
        s++;
    if (starts_with(text, s, len, ANALYSIS) == 1 || starts_with(text, s, len, FINAL) == 1)
        return find_harmony(text, s, len, out);
    bool unsure = s == len || starts_with(text, s, len, ANALYSIS) == 0 ||
                  starts_with(text, s, len, FINAL) == 0;
    for (int k = 0; k < N_SPANS; k++) {
        int at = starts_with(text, s, len, SPANS[k].open);
        if (at == 1)
            return close_span(text, s, s + strlen(SPANS[k].open), len, SPANS[k].close, out);
        unsure = unsure || at == 0;
    }
    if (unsure)
        out->state = THINK_UNSURE;
    return out->state;
}
