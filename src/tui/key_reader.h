/* key_reader.h — the keys as the terminal sent them, put together: an escape sequence
 * that curses handed back byte by byte (its parts came in separate reads, more than
 * ESCDELAY apart, or curses does not know it) becomes the key it stands for, a lone
 * Esc is told from the start of a sequence by waiting KEY_READER_ESC_MS for what
 * follows, and bracketed paste's markers (ESC [200~ ... ESC [201~) say which keys were
 * pasted rather than typed.
 *
 * Fed what curses' wget_wch returns, with the time it came (monotonic ms); hands back
 * events in the order typed. While a paste is under way it is fed the terminal's bytes
 * instead, as many as one read brings (key_reader_feed_bytes): curses would hand them
 * over one system call or more a byte. Keeps only the partial sequence, a partial
 * character and whether a paste is under way; no curses calls (the KEY_* codes are
 * curses' constants), no terminal output: tested in tests/test_key_reader.c. */
#ifndef LLMCHAT_TUI_KEY_READER_H
#define LLMCHAT_TUI_KEY_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <wchar.h>

enum {
    KEY_READER_ESC_MS = 300, /* how long a partial sequence waits for its next byte:
                                after that a lone Esc is Esc, a cut sequence is typed */
    KEY_READER_SEQ_MAX = 32, /* bytes of a sequence after ESC; a longer one is dropped */
    KEY_READER_EVENTS_MAX = KEY_READER_SEQ_MAX + 3, /* events one call hands back */
};

typedef enum {
    KEY_EVENT_KEY = 0,   /* a key: keycode (a curses KEY_* code) or a character */
    KEY_EVENT_PASTE_BEGIN, /* the keys that follow were pasted ... */
    KEY_EVENT_PASTE_END,   /* ... until here */
    KEY_EVENT_PASTE_TEXT,  /* pasted text read as bytes: key is its length, the bytes
                              are handed with the event (key_reader_feed_bytes) */
} key_event_kind;

typedef struct {
    key_event_kind kind;
    bool keycode;
    int key;
    bool pasted; /* a key between the paste markers: text, not a command */
} key_event;

typedef struct {
    int state;                     /* where in a sequence (key_reader.c) */
    char seq[KEY_READER_SEQ_MAX];  /* (len) the bytes after ESC so far */
    int len;
    double last_ms;                /* when the sequence's newest byte came */
    int drop;                      /* bytes of an old-style mouse report still to drop */
    bool pasting;                  /* between ESC [200~ and ESC [201~ */
    mbstate_t partial;             /* a character whose first bytes came in an earlier
                                      key_reader_feed_bytes */
} key_reader;

/* Where key_reader_feed_bytes hands its events, in order; text: the bytes of a
 * KEY_EVENT_PASTE_TEXT (valid during the call), else NULL. */
typedef void key_sink(void *user, const key_event *ev, const char *text);

void key_reader_init(key_reader *r);

/* One key as wget_wch returned it (keycode: KEY_CODE_YES), at now_ms. Writes 0 to
 * KEY_READER_EVENTS_MAX events into out and returns how many: none while a sequence
 * is incomplete; a recognised sequence as its key (ESC [ D: KEY_LEFT) or paste
 * marker; an unknown one as nothing; a broken one as the keys typed. */
int key_reader_feed(key_reader *r, bool keycode, int key, double now_ms, key_event *out);

/* Between ESC [200~ and ESC [201~: the caller reads the terminal's bytes itself and
 * hands them to key_reader_feed_bytes. */
bool key_reader_pasting(const key_reader *r);

/* n bytes read from the terminal at now_ms, characters in the locale's encoding (a
 * character cut by the end of bytes is finished by the next call). The characters of
 * a paste outside any escape sequence go to sink as KEY_EVENT_PASTE_TEXT events, one
 * for each run of them, their bytes as read; every other character is fed to
 * key_reader_feed as a key and its events go to sink. Bytes that make no character
 * are dropped. Where the reads are cut makes no difference to what sink gets, beyond
 * how a text run is split into events. */
void key_reader_feed_bytes(key_reader *r, const char *bytes, size_t n, double now_ms, key_sink *sink,
                           void *user);

/* No key came at now_ms: a partial sequence whose newest byte is KEY_READER_ESC_MS
 * old or older is handed back as the keys typed (a lone ESC: the Esc key). Returns
 * the number of events written. */
int key_reader_idle(key_reader *r, double now_ms, key_event *out);

/* Milliseconds until key_reader_idle would decide a partial sequence (0: now), or
 * -1 when none waits. */
int key_reader_wait_ms(const key_reader *r, double now_ms);

#endif
