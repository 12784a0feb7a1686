/* event_stream.c — server-sent events and JSON Lines split as they arrive (see
 * event_stream.h). Owns the bytes of the event not yet ended. */
#include "event_stream.h"

#include <stdlib.h>
#include <string.h>

void event_stream_init(event_stream *s, event_stream_kind kind, event_fn fn, void *user)
{
    *s = (event_stream){.kind = kind, .fn = fn, .user = user};
}

void event_stream_free(event_stream *s)
{
    free(s->buf);
    free(s->data);
    s->buf = s->data = NULL;
    s->len = s->cap = s->dlen = s->dcap = 0;
}

static bool grow(char **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return true;
    size_t c = *cap ? *cap : 1024;
    while (c < need)
        c *= 2;
    char *q = realloc(*p, c);
    if (!q)
        return false;
    *p = q;
    *cap = c;
    return true;
}

static bool emit(event_stream *s, const char *name, char *data, size_t n)
{
    data[n] = '\0';
    s->events++;
    if (!s->fn(s->user, name, data, n)) {
        s->stopped = true;
        return false;
    }
    return true;
}

/* An SSE event ends: its data, when it has any, goes out. */
static bool sse_dispatch(event_stream *s)
{
    bool ok = true;
    if (s->data && s->dlen > 0) {
        s->dlen--; /* the "\n" after the last data line */
        ok = emit(s, s->name, s->data, s->dlen);
    }
    s->dlen = 0;
    s->name[0] = '\0';
    return ok;
}

/* One SSE line (without its end of line). */
static bool sse_line(event_stream *s, char *line, size_t n)
{
    if (n == 0)
        return sse_dispatch(s);
    if (line[0] == ':')
        return true; /* a comment, a keep-alive */
    size_t field = 0;
    while (field < n && line[field] != ':')
        field++;
    const char *value = line + field;
    size_t vn = 0;
    if (field < n) {
        value = line + field + 1;
        vn = n - field - 1;
        if (vn > 0 && *value == ' ')
            value++, vn--;
    }
    if (field == 4 && memcmp(line, "data", 4) == 0) {
        if (!grow(&s->data, &s->dcap, s->dlen + vn + 2))
            return false;
        memcpy(s->data + s->dlen, value, vn);
        s->dlen += vn;
        s->data[s->dlen++] = '\n';
    } else if (field == 5 && memcmp(line, "event", 5) == 0) {
        size_t m = vn < sizeof s->name - 1 ? vn : sizeof s->name - 1;
        memcpy(s->name, value, m);
        s->name[m] = '\0';
    }
    return true;
}

static bool one_line(event_stream *s, char *line, size_t n)
{
    if (n > 0 && line[n - 1] == '\r')
        n--;
    if (s->kind == EVENT_STREAM_SSE)
        return sse_line(s, line, n);
    size_t a = 0;
    while (a < n && (line[a] == ' ' || line[a] == '\t'))
        a++;
    if (a == n)
        return true; /* a blank line between JSON lines */
    return emit(s, "", line, n);
}

bool event_stream_feed(event_stream *s, const char *bytes, size_t n)
{
    if (s->stopped || s->too_long)
        return false;
    if (!grow(&s->buf, &s->cap, s->len + n + 1))
        return false;
    memcpy(s->buf + s->len, bytes, n);
    s->len += n;
    size_t start = 0;
    for (size_t i = s->len - n; i < s->len; i++) {
        if (s->buf[i] != '\n')
            continue;
        if (!one_line(s, s->buf + start, i - start))
            return false;
        start = i + 1;
    }
    memmove(s->buf, s->buf + start, s->len - start);
    s->len -= start;
    if (s->len + s->dlen > EVENT_STREAM_MAX) {
        s->too_long = true;
        return false;
    }
    return true;
}

bool event_stream_end(event_stream *s)
{
    if (s->stopped || s->too_long)
        return false;
    s->unended = true;
    if (s->len > 0) {
        if (!grow(&s->buf, &s->cap, s->len + 1))
            return false;
        size_t n = s->len;
        s->len = 0;
        if (!one_line(s, s->buf, n))
            return false;
    }
    return s->kind == EVENT_STREAM_SSE ? sse_dispatch(s) : true;
}
