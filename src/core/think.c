/* think.c — the thinking span of a reply's text (see think.h). */
#include "think.h"

#include <string.h>

static const char OPEN_TAG[] = "<think>", CLOSE_TAG[] = "</think>";
enum { OPEN_LEN = sizeof OPEN_TAG - 1, CLOSE_LEN = sizeof CLOSE_TAG - 1 };

static bool is_space(char c)
{
    return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

/* The first "</think>" in text[from, len), or len. */
static size_t find_close(const char *text, size_t from, size_t len)
{
    for (size_t i = from; i + CLOSE_LEN <= len; i++)
        if (text[i] == '<' && !memcmp(text + i, CLOSE_TAG, CLOSE_LEN))
            return i;
    return len;
}

think_state think_find(const char *text, size_t len, think_span *out)
{
    *out = (think_span){.state = THINK_NONE};
    size_t s = 0;
    while (s < len && is_space(text[s]))
        s++;
    size_t have = len - s;
    if (have < OPEN_LEN) {
        if (have == 0 || !memcmp(text + s, OPEN_TAG, have))
            out->state = THINK_UNSURE;
        return out->state;
    }
    if (memcmp(text + s, OPEN_TAG, OPEN_LEN) != 0)
        return out->state;
    out->start = s;
    out->body = s + OPEN_LEN;
    out->body_end = find_close(text, out->body, len);
    out->empty = true;
    for (size_t i = out->body; i < out->body_end && out->empty; i++)
        out->empty = is_space(text[i]);
    if (out->body_end == len) {
        out->end = len;
        out->state = THINK_OPEN;
        return out->state;
    }
    size_t e = out->body_end + CLOSE_LEN;
    while (e < len && is_space(text[e]))
        e++;
    out->end = e;
    out->state = THINK_CLOSED;
    return out->state;
}
