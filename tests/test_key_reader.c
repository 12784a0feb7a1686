/* test_key_reader.c — the TUI's key reader (src/tui/key_reader.c): an arrow key whose
 * bytes came in separate reads (ESC, then "[D" later) is the arrow key, whatever the
 * gap below KEY_READER_ESC_MS; a lone Esc is Esc once nothing followed it for that
 * long, and not before; Esc then a letter is both; the ~ keys, SS3 keys and Shift-Tab;
 * unknown and mouse sequences are dropped; a sequence cut by a key curses decoded is
 * handed back as typed; bracketed paste's markers frame the pasted keys, newlines
 * included, even when the markers themselves are split. Bytes read in bulk during a
 * paste (key_reader_feed_bytes): cut into two reads at every place, or a byte a read,
 * the pasted text comes out whole and byte for byte (UTF-8 characters cut between
 * reads included), the keys around the paste as keys, an escape sequence inside it as
 * pasted keys, a byte that starts no character dropped; and for 3,000 random strings
 * of the bytes a terminal sends, the same events and text whatever the cuts. The times
 * are the test's own numbers: nothing here waits. */
#include <curses.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "tui/key_reader.h"

enum { ESC = 27 };

typedef struct {
    key_event ev[256];
    int n;
} events;

/* Feeds the characters of s at time t, collecting the events. */
static void feed(key_reader *r, events *e, const char *s, double t)
{
    for (; *s; s++) {
        ck_assert_int_lt(e->n + KEY_READER_EVENTS_MAX, 256);
        e->n += key_reader_feed(r, false, (unsigned char)*s, t, e->ev + e->n);
    }
}

static void idle(key_reader *r, events *e, double t)
{
    e->n += key_reader_idle(r, t, e->ev + e->n);
}

static void assert_key(const events *e, int i, bool keycode, int key)
{
    ck_assert_int_gt(e->n, i);
    ck_assert_int_eq(e->ev[i].kind, KEY_EVENT_KEY);
    ck_assert_msg(e->ev[i].keycode == keycode && e->ev[i].key == key,
                  "event %d: keycode %d key %d, wanted keycode %d key %d", i, e->ev[i].keycode,
                  e->ev[i].key, keycode, key);
}

START_TEST(test_split_arrow)
{
    key_reader r;
    events e = {.n = 0};
    key_reader_init(&r);
    feed(&r, &e, "\033", 1000);
    ck_assert_int_eq(e.n, 0);
    ck_assert_int_gt(key_reader_wait_ms(&r, 1000), 0);
    idle(&r, &e, 1000 + KEY_READER_ESC_MS / 2); /* not yet decided */
    ck_assert_int_eq(e.n, 0);
    feed(&r, &e, "[", 1000 + KEY_READER_ESC_MS / 2);
    idle(&r, &e, 1000 + KEY_READER_ESC_MS); /* the wait counts from the newest byte */
    ck_assert_int_eq(e.n, 0);
    feed(&r, &e, "D", 1000 + KEY_READER_ESC_MS + 10);
    ck_assert_int_eq(e.n, 1);
    assert_key(&e, 0, true, KEY_LEFT);
    ck_assert_int_eq(key_reader_wait_ms(&r, 5000), -1);
    /* every arrow, CSI and SS3, and with a modifier (ESC [1;5C) */
    e.n = 0;
    feed(&r, &e, "\033[A\033[B\033[C\033OD\033[H\033[F\033[1;5C\033[Z", 2000);
    ck_assert_int_eq(e.n, 8);
    int want[] = {KEY_UP, KEY_DOWN, KEY_RIGHT, KEY_LEFT, KEY_HOME, KEY_END, KEY_RIGHT, KEY_BTAB};
    for (int i = 0; i < 8; i++)
        assert_key(&e, i, true, want[i]);
    /* with Shift (modifier 2): the shifted keys curses has codes for; a Shift-Left in
     * two writes too (a terminal whose terminfo lacks kLFT leaves it to this reader) */
    e.n = 0;
    feed(&r, &e, "\033[1;2C\033[1;2A\033[1;2B\033[1;2H\033[1;2F\033[3;2~\033[1;2P", 3000);
    feed(&r, &e, "\033", 3100);
    feed(&r, &e, "[1;2D", 3100 + KEY_READER_ESC_MS / 2);
    int shifted[] = {KEY_SRIGHT, KEY_SR, KEY_SF, KEY_SHOME, KEY_SEND, KEY_SDC, KEY_F(13), KEY_SLEFT};
    ck_assert_int_eq(e.n, 8);
    for (int i = 0; i < 8; i++)
        assert_key(&e, i, true, shifted[i]);
}
END_TEST

START_TEST(test_lone_esc)
{
    key_reader r;
    events e = {.n = 0};
    key_reader_init(&r);
    feed(&r, &e, "\033", 0);
    idle(&r, &e, KEY_READER_ESC_MS - 1);
    ck_assert_int_eq(e.n, 0);
    ck_assert_int_eq(key_reader_wait_ms(&r, KEY_READER_ESC_MS), 0);
    idle(&r, &e, KEY_READER_ESC_MS);
    ck_assert_int_eq(e.n, 1);
    assert_key(&e, 0, false, ESC);
    /* two Escs: the first stood alone at once, the second after the wait */
    e.n = 0;
    feed(&r, &e, "\033\033", 10000);
    ck_assert_int_eq(e.n, 1);
    idle(&r, &e, 20000);
    ck_assert_int_eq(e.n, 2);
    assert_key(&e, 1, false, ESC);
    /* Esc then a letter (Alt-x): both, as typed */
    e.n = 0;
    feed(&r, &e, "\033x", 30000);
    ck_assert_int_eq(e.n, 2);
    assert_key(&e, 0, false, ESC);
    assert_key(&e, 1, false, 'x');
    /* Esc, '[' and nothing more: typed, once the wait is over */
    e.n = 0;
    feed(&r, &e, "\033[", 40000);
    ck_assert_int_eq(e.n, 0);
    idle(&r, &e, 50000);
    ck_assert_int_eq(e.n, 2);
    assert_key(&e, 0, false, ESC);
    assert_key(&e, 1, false, '[');
}
END_TEST

START_TEST(test_other_sequences)
{
    key_reader r;
    events e = {.n = 0};
    key_reader_init(&r);
    feed(&r, &e, "\033[3~\033[5~\033[6~\033[2~\033[15~\033OP\033OM", 0);
    int want[] = {KEY_DC, KEY_PPAGE, KEY_NPAGE, KEY_IC, KEY_F(5), KEY_F(1), KEY_ENTER};
    ck_assert_int_eq(e.n, 7);
    for (int i = 0; i < 7; i++)
        assert_key(&e, i, true, want[i]);
    /* unknown keys, colours, SGR and old mouse reports: nothing */
    e.n = 0;
    feed(&r, &e, "\033[99~\033[31m\033[<0;12;4M\033[M !!\033[?1h", 0);
    ck_assert_int_eq(e.n, 0);
    feed(&r, &e, "a", 0);
    ck_assert_int_eq(e.n, 1);
    assert_key(&e, 0, false, 'a');
    /* a sequence far too long: dropped, and the reader reads on */
    e.n = 0;
    feed(&r, &e, "\033[", 0);
    for (int i = 0; i < 100; i++)
        feed(&r, &e, "1", 0);
    feed(&r, &e, "~b", 0);
    ck_assert_int_ge(e.n, 1);
    assert_key(&e, e.n - 1, false, 'b');
    /* a key curses decoded cuts a partial sequence: the sequence as typed, then the key */
    e.n = 0;
    feed(&r, &e, "\033[", 0);
    e.n += key_reader_feed(&r, true, KEY_RESIZE, 0, e.ev + e.n);
    ck_assert_int_eq(e.n, 3);
    assert_key(&e, 0, false, ESC);
    assert_key(&e, 1, false, '[');
    assert_key(&e, 2, true, KEY_RESIZE);
    /* a control byte inside CSI: typed, then the byte */
    e.n = 0;
    feed(&r, &e, "\033[1\r", 0);
    ck_assert_int_eq(e.n, 4);
    assert_key(&e, 2, false, '1');
    assert_key(&e, 3, false, '\r');
}
END_TEST

START_TEST(test_paste)
{
    key_reader r;
    events e = {.n = 0};
    key_reader_init(&r);
    feed(&r, &e, "x\033[200~one\rtwo\033[201~y", 0);
    ck_assert_int_eq(e.n, 11);
    assert_key(&e, 0, false, 'x');
    ck_assert(!e.ev[0].pasted);
    ck_assert_int_eq(e.ev[1].kind, KEY_EVENT_PASTE_BEGIN);
    const char *text = "one\rtwo";
    for (int i = 0; i < 7; i++) {
        assert_key(&e, 2 + i, false, (unsigned char)text[i]);
        ck_assert(e.ev[2 + i].pasted);
    }
    ck_assert_int_eq(e.ev[9].kind, KEY_EVENT_PASTE_END);
    assert_key(&e, 10, false, 'y');
    ck_assert(!e.ev[10].pasted);
    /* the markers split across reads, far apart */
    e.n = 0;
    feed(&r, &e, "\033", 0);
    feed(&r, &e, "[20", 100);
    feed(&r, &e, "0~a", 200);
    feed(&r, &e, "\033[2", 10000);
    idle(&r, &e, 10000 + KEY_READER_ESC_MS / 2);
    feed(&r, &e, "01~", 10000 + KEY_READER_ESC_MS);
    ck_assert_int_eq(e.n, 3);
    ck_assert_int_eq(e.ev[0].kind, KEY_EVENT_PASTE_BEGIN);
    assert_key(&e, 1, false, 'a');
    ck_assert(e.ev[1].pasted);
    ck_assert_int_eq(e.ev[2].kind, KEY_EVENT_PASTE_END);
}
END_TEST

/* What key_reader_feed_bytes hands on: the events (a text run as one event) and the
 * pasted text, runs joined. */
typedef struct {
    key_event ev[256];
    int n;
    char text[512];
    size_t text_len;
    int text_events;
} bulk;

static void bulk_sink(void *user, const key_event *ev, const char *text)
{
    bulk *b = user;
    ck_assert_msg((ev->kind == KEY_EVENT_PASTE_TEXT) == (text != NULL), "text comes with text events only");
    if (text) {
        ck_assert_int_gt(ev->key, 0);
        ck_assert_uint_le(b->text_len + (size_t)ev->key, sizeof b->text);
        memcpy(b->text + b->text_len, text, (size_t)ev->key);
        b->text_len += (size_t)ev->key;
        b->text_events++;
        if (b->n > 0 && b->ev[b->n - 1].kind == KEY_EVENT_PASTE_TEXT)
            return; /* one run, cut by a read */
    }
    ck_assert_int_lt(b->n, 256);
    b->ev[b->n++] = *ev;
}

/* Reads s (n bytes) as cut at the places in cuts (ascending, ncut of them). */
static void feed_cut(key_reader *r, bulk *b, const char *s, size_t n, const size_t *cuts, int ncut)
{
    size_t from = 0;
    for (int i = 0; i <= ncut; i++) {
        size_t to = i < ncut ? cuts[i] : n;
        key_reader_feed_bytes(r, s + from, to - from, 0, bulk_sink, b);
        from = to;
    }
}

/* A UTF-8 locale for the characters of more than one byte; the test needs one. */
static void utf8_locale(void)
{
    ck_assert_msg(setlocale(LC_CTYPE, "C.UTF-8") || setlocale(LC_CTYPE, "en_US.UTF-8"),
                  "no UTF-8 locale (C.UTF-8 or en_US.UTF-8) to decode the paste with");
}

/* The events after a paste read in bulk: x, the paste, y, é, Left. */
static void assert_bulk_paste(const bulk *b, const char *pasted, const char *how)
{
    ck_assert_msg(b->n == 7, "%s: %d events, wanted 7", how, b->n);
    ck_assert_msg(b->ev[0].kind == KEY_EVENT_KEY && b->ev[0].key == 'x' && !b->ev[0].pasted, "%s: x", how);
    ck_assert_msg(b->ev[1].kind == KEY_EVENT_PASTE_BEGIN, "%s: the paste's start", how);
    ck_assert_msg(b->ev[2].kind == KEY_EVENT_PASTE_TEXT && b->ev[2].pasted, "%s: the text", how);
    ck_assert_msg(b->text_len == strlen(pasted) && memcmp(b->text, pasted, b->text_len) == 0,
                  "%s: pasted \"%.*s\", wanted \"%s\"", how, (int)b->text_len, b->text, pasted);
    ck_assert_msg(b->ev[3].kind == KEY_EVENT_PASTE_END, "%s: the paste's end", how);
    ck_assert_msg(b->ev[4].kind == KEY_EVENT_KEY && b->ev[4].key == 'y' && !b->ev[4].pasted, "%s: y", how);
    ck_assert_msg(b->ev[5].kind == KEY_EVENT_KEY && !b->ev[5].keycode && b->ev[5].key == 0xe9, "%s: é", how);
    ck_assert_msg(b->ev[6].kind == KEY_EVENT_KEY && b->ev[6].keycode && b->ev[6].key == KEY_LEFT, "%s: Left", how);
}

START_TEST(test_paste_bytes)
{
    utf8_locale();
    const char *pasted = "one\r\ntwo\tü — 日本語\rend";
    char in[256];
    int len = snprintf(in, sizeof in, "x\033[200~%s\033[201~y\xc3\xa9\033[D", pasted);
    ck_assert(len > 0 && (size_t)len < sizeof in);
    size_t n = (size_t)len;
    for (size_t cut = 0; cut <= n; cut++) { /* two reads, cut at every place */
        key_reader r;
        bulk b = {.n = 0};
        key_reader_init(&r);
        feed_cut(&r, &b, in, n, &cut, 1);
        char how[32];
        snprintf(how, sizeof how, "cut at %zu", cut);
        assert_bulk_paste(&b, pasted, how);
    }
    key_reader r;
    bulk b = {.n = 0};
    key_reader_init(&r);
    size_t cuts[256];
    for (size_t i = 0; i + 1 < n; i++)
        cuts[i] = i + 1;
    feed_cut(&r, &b, in, n, cuts, (int)n - 1); /* a byte a read */
    assert_bulk_paste(&b, pasted, "a byte a read");
    ck_assert_int_gt(b.text_events, 1);
    /* the whole in one read: one text event */
    key_reader_init(&r);
    bulk one = {.n = 0};
    key_reader_feed_bytes(&r, in, n, 0, bulk_sink, &one);
    assert_bulk_paste(&one, pasted, "one read");
    ck_assert_int_eq(one.text_events, 1);
}
END_TEST

START_TEST(test_paste_bytes_odd)
{
    utf8_locale();
    key_reader r;
    bulk b = {.n = 0};
    key_reader_init(&r);
    /* a byte that starts no character, inside the paste and after it: dropped */
    const char *in = "\033[200~a\xff" "b\033[201~\xfe!";
    key_reader_feed_bytes(&r, in, strlen(in), 0, bulk_sink, &b);
    ck_assert_int_eq(b.n, 4);
    ck_assert_int_eq(b.ev[0].kind, KEY_EVENT_PASTE_BEGIN);
    ck_assert_int_eq(b.ev[1].kind, KEY_EVENT_PASTE_TEXT);
    ck_assert_uint_eq(b.text_len, 2);
    ck_assert(memcmp(b.text, "ab", 2) == 0);
    ck_assert_int_eq(b.text_events, 2); /* the dropped byte cut the run */
    ck_assert_int_eq(b.ev[2].kind, KEY_EVENT_PASTE_END);
    ck_assert(b.ev[3].kind == KEY_EVENT_KEY && b.ev[3].key == '!' && !b.ev[3].pasted);
}
END_TEST

START_TEST(test_paste_bytes_escapes)
{
    utf8_locale();
    key_reader r;
    bulk b = {.n = 0};
    key_reader_init(&r);
    /* inside a paste: a colour sequence (dropped, as when typed), an arrow and Esc-a as
     * pasted keys; the text around them as text */
    const char *in = "\033[200~ab\033[31mc\033[Dd\033ae\033[201~";
    key_reader_feed_bytes(&r, in, strlen(in), 0, bulk_sink, &b);
    ck_assert_uint_eq(b.text_len, 5);
    ck_assert(memcmp(b.text, "abcde", 5) == 0);
    int keys = 0, left = 0, esc = 0;
    for (int i = 0; i < b.n; i++) {
        if (b.ev[i].kind != KEY_EVENT_KEY)
            continue;
        ck_assert(b.ev[i].pasted);
        keys++;
        left += b.ev[i].keycode && b.ev[i].key == KEY_LEFT;
        esc += !b.ev[i].keycode && b.ev[i].key == ESC;
    }
    ck_assert_int_eq(keys, 3); /* Left, Esc, a */
    ck_assert_int_eq(left, 1);
    ck_assert_int_eq(esc, 1);
    ck_assert_int_eq(b.ev[b.n - 1].kind, KEY_EVENT_PASTE_END);
    ck_assert(!key_reader_pasting(&r));
}
END_TEST

/* What bulk reads hand on, text runs joined, as one string: an event a line. */
static size_t describe(const bulk *b, char *out, size_t cap)
{
    size_t n = 0;
    for (int i = 0; i < b->n && n < cap; i++) {
        const key_event *ev = &b->ev[i];
        if (ev->kind == KEY_EVENT_PASTE_TEXT) { /* a run, however many reads it took */
            n += (size_t)snprintf(out + n, cap - n, "text\n");
            continue;
        }
        n += (size_t)snprintf(out + n, cap - n, "%d %d %d %d\n", ev->kind, ev->keycode, ev->key,
                              ev->pasted);
    }
    return n < cap ? n : cap;
}

/* Random bytes of the kinds a terminal sends (text, UTF-8 and pieces of it, bytes that
 * start no character, ESC and the bytes of sequences, the paste markers), fed in one
 * read and cut at random places: the same events and the same text, whatever the cuts. */
START_TEST(test_paste_bytes_any_cuts)
{
    utf8_locale();
    static const char *const parts[] = {
        "a", "Z", " ", "\r", "\n", "\t", "\x7f", "\x01", "\xc3\xa9", "\xe2\x80\x94",
        "\xf0\x9f\x98\x80", "\xc3", "\xa9", "\xff", "\033", "[", "O", "0", "2", "~", "D",
        "\033[200~", "\033[201~", "\033[D", "\033OP", "\033[3~", "\033[<0;1;1M", "\033[M!!!",
    };
    enum { PARTS = sizeof parts / sizeof parts[0] };
    unsigned seed = 12345;
    for (int round = 0; round < 3000; round++) {
        char in[128];
        size_t n = 0;
        for (int k = 0; k < 24; k++) {
            seed = seed * 1103515245u + 12345u;
            const char *p = parts[(seed >> 16) % PARTS];
            size_t len = strlen(p);
            if (n + len > sizeof in)
                break;
            memcpy(in + n, p, len);
            n += len;
        }
        key_reader whole, cut;
        bulk a = {.n = 0}, b = {.n = 0};
        key_reader_init(&whole);
        key_reader_init(&cut);
        key_reader_feed_bytes(&whole, in, n, 0, bulk_sink, &a);
        size_t cuts[8];
        int ncut = 0;
        for (int k = 0; k < 8; k++) {
            seed = seed * 1103515245u + 12345u;
            size_t c = (seed >> 16) % (n + 1);
            if (ncut == 0 || c > cuts[ncut - 1])
                cuts[ncut++] = c;
        }
        feed_cut(&cut, &b, in, n, cuts, ncut);
        char da[4096], db[4096];
        size_t la = describe(&a, da, sizeof da), lb = describe(&b, db, sizeof db);
        check_each(la == lb && memcmp(da, db, la) == 0, "round %d: the events differ when the reads are cut", round);
        check_each(a.text_len == b.text_len && memcmp(a.text, b.text, a.text_len) == 0,
                   "round %d: the text differs when the reads are cut", round);
        check_each(key_reader_pasting(&whole) == key_reader_pasting(&cut),
                   "round %d: whether a paste is under way differs", round);
    }
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("key_reader");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_split_arrow);
    tcase_add_test(tc, test_lone_esc);
    tcase_add_test(tc, test_other_sequences);
    tcase_add_test(tc, test_paste);
    tcase_add_test(tc, test_paste_bytes);
    tcase_add_test(tc, test_paste_bytes_odd);
    tcase_add_test(tc, test_paste_bytes_escapes);
    tcase_add_test(tc, test_paste_bytes_any_cuts);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(make_suite)
