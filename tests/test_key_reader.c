/* test_key_reader.c — the TUI's key reader (src/tui/key_reader.c): an arrow key whose
 * bytes came in separate reads (ESC, then "[D" later) is the arrow key, whatever the
 * gap below KEY_READER_ESC_MS; a lone Esc is Esc once nothing followed it for that
 * long, and not before; Esc then a letter is both; the ~ keys, SS3 keys and Shift-Tab;
 * unknown and mouse sequences are dropped; a sequence cut by a key curses decoded is
 * handed back as typed; bracketed paste's markers frame the pasted keys, newlines
 * included, even when the markers themselves are split. The times are the test's
 * own numbers: nothing here waits. */
#include <curses.h>
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

static Suite *make_suite(void)
{
    Suite *s = suite_create("key_reader");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_split_arrow);
    tcase_add_test(tc, test_lone_esc);
    tcase_add_test(tc, test_other_sequences);
    tcase_add_test(tc, test_paste);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(make_suite)
