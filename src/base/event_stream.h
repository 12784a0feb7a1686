/* event_stream.h — splits a streamed HTTP body into its events as the pieces arrive:
 * server-sent events (text/event-stream: "data: ..." lines, an event ended by a blank
 * line, as llama-server, vLLM and SGLang stream) or JSON Lines (one object per line, as
 * ollama streams).
 *
 * The splitter keeps the bytes of an event not yet ended; each finished event's data
 * (for SSE the "data:" lines joined by "\n", without the field name and its one
 * optional space; comments and other fields dropped) is handed to a callback. An event
 * larger than EVENT_STREAM_MAX fails the stream. No printing. */
#ifndef LLMCHAT_EVENT_STREAM_H
#define LLMCHAT_EVENT_STREAM_H

#include <stdbool.h>
#include <stddef.h>

enum { EVENT_STREAM_MAX = 16 << 20 };

typedef enum { EVENT_STREAM_SSE = 0, EVENT_STREAM_LINES } event_stream_kind;

/* Gets one event's data (NUL-terminated, n bytes, borrowed for the call) and the SSE
 * event name ("" when none; always "" for lines). Returns false to stop the stream. */
typedef bool (*event_fn)(void *user, const char *event, const char *data, size_t n);

typedef struct {
    event_stream_kind kind;
    event_fn fn;
    void *user;
    char *buf;       /* the bytes not yet split */
    size_t len, cap;
    char *data;      /* SSE: the current event's data so far */
    size_t dlen, dcap;
    char name[64];   /* SSE: the current event's name */
    bool too_long;   /* an event outgrew EVENT_STREAM_MAX */
    bool stopped;    /* the callback said stop */
    bool unended;    /* the event being handed over is the last, which the body's end cut
                        off (no blank line, no newline after it): it may be cut short */
    size_t events;   /* events handed over */
} event_stream;

void event_stream_init(event_stream *s, event_stream_kind kind, event_fn fn, void *user);
/* Takes the next bytes. False when the stream cannot go on (out of memory, an event
 * too long, the callback said stop). */
bool event_stream_feed(event_stream *s, const char *bytes, size_t n);
/* The body ended: a last event not ended by a blank line (SSE) or newline (lines) is
 * handed over, with unended set (a callback that cannot read it can tell a stream cut
 * short from bad data). False as event_stream_feed. */
bool event_stream_end(event_stream *s);
void event_stream_free(event_stream *s);

#endif
