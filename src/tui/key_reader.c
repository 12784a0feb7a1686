/* key_reader.c — escape sequences put together across reads, a lone Esc told from a
 * sequence's start, bracketed paste's markers (see key_reader.h).
 *
 * The sequences read: CSI (ESC [ parameters final: the arrows, Home, End, F1-F4,
 * Shift-Tab, the ~ keys, with Shift (modifier 2) the shifted keys, the paste markers;
 * old-style and SGR mouse reports, which are dropped)
 * and SS3 (ESC O final: the arrows, Home, End, F1-F4, keypad Enter). Owns nothing. */
#include "key_reader.h"

#include <curses.h>
#include <limits.h>
#include <string.h>

enum { ESC = 27 };

enum { GROUND = 0, AFTER_ESC, IN_CSI, IN_SS3, IN_MOUSE };

void key_reader_init(key_reader *r)
{
    memset(r, 0, sizeof *r);
}

static int put(key_event *out, int n, key_event_kind kind, bool keycode, int key, bool pasted)
{
    out[n] = (key_event){.kind = kind, .keycode = keycode, .key = key, .pasted = pasted};
    return n + 1;
}

/* The partial sequence handed back as the keys typed (ESC, then its bytes). */
static int hand_back(key_reader *r, key_event *out, int n)
{
    if (r->state == IN_MOUSE) { /* the rest of a mouse report that never came */
        r->state = GROUND;
        return n;
    }
    if (r->state != GROUND) {
        n = put(out, n, KEY_EVENT_KEY, false, ESC, r->pasting);
        for (int i = 0; i < r->len; i++)
            n = put(out, n, KEY_EVENT_KEY, false, (unsigned char)r->seq[i], r->pasting);
    }
    r->state = GROUND;
    r->len = 0;
    return n;
}

/* The key of CSI's ~ sequences by their first parameter (ESC [ 3 ~ is Delete). */
static int tilde_key(int p)
{
    switch (p) {
    case 1: case 7: return KEY_HOME;
    case 2: return KEY_IC;
    case 3: return KEY_DC;
    case 4: case 8: return KEY_END;
    case 5: return KEY_PPAGE;
    case 6: return KEY_NPAGE;
    case 11: case 12: case 13: case 14: case 15: return KEY_F(p - 10);
    case 17: case 18: case 19: case 20: case 21: return KEY_F(p - 11);
    case 23: case 24: return KEY_F(p - 12);
    default: return 0;
    }
}

/* The key of a final byte shared by CSI and SS3 (the arrows, Home, End), or 0. */
static int final_key(int c)
{
    switch (c) {
    case 'A': return KEY_UP;
    case 'B': return KEY_DOWN;
    case 'C': return KEY_RIGHT;
    case 'D': return KEY_LEFT;
    case 'H': return KEY_HOME;
    case 'F': return KEY_END;
    default: return 0;
    }
}

/* The shifted key of key (xterm's modifier parameter 2: ESC [ 1 ; 2 D is Shift-Left),
 * for the keys curses has a code for shifted; else key. */
static int shifted(int key)
{
    switch (key) {
    case KEY_LEFT: return KEY_SLEFT;
    case KEY_RIGHT: return KEY_SRIGHT;
    case KEY_UP: return KEY_SR;
    case KEY_DOWN: return KEY_SF;
    case KEY_HOME: return KEY_SHOME;
    case KEY_END: return KEY_SEND;
    case KEY_DC: return KEY_SDC;
    default: /* Shift-F1 .. Shift-F12 are F13 .. F24, as terminfo names them */
        return key >= KEY_F(1) && key <= KEY_F(12) ? key + 12 : key;
    }
}

/* A whole CSI sequence (seq: parameters, intermediates, the final byte). */
static int csi_done(key_reader *r, key_event *out, int n)
{
    char final = r->seq[r->len - 1];
    int p = 0, mod = 0, field = 0; /* the first parameter, the second (the modifiers) */
    bool digits = true;
    for (int i = 0; i < r->len - 1; i++) {
        char c = r->seq[i];
        if (c == ';')
            field++;
        else if (c < '0' || c > '9')
            digits = false;
        else if (field == 0 && p < 100000)
            p = p * 10 + (c - '0');
        else if (field == 1 && mod < 1000)
            mod = mod * 10 + (c - '0');
    }
    r->state = GROUND;
    r->len = 0;
    if (!digits) /* private (?), SGR mouse (<) and the like: nothing for the keys */
        return n;
    if (final == '~' && (p == 200 || p == 201)) {
        r->pasting = p == 200;
        return put(out, n, p == 200 ? KEY_EVENT_PASTE_BEGIN : KEY_EVENT_PASTE_END, false, 0, false);
    }
    int key = final == '~'                   ? tilde_key(p)
              : final == 'Z'                 ? KEY_BTAB
              : final >= 'P' && final <= 'S' ? KEY_F(final - 'P' + 1) /* F1-F4 with modifiers */
                                             : final_key(final);
    if (mod == 2) /* Shift; other modifiers (Ctrl, Alt) leave the key as it is */
        key = shifted(key);
    return key ? put(out, n, KEY_EVENT_KEY, true, key, r->pasting) : n;
}

/* The final byte of ESC O. */
static int ss3_key(int c)
{
    if (c >= 'P' && c <= 'S')
        return KEY_F(c - 'P' + 1);
    if (c == 'M')
        return KEY_ENTER;
    return final_key(c);
}

int key_reader_feed(key_reader *r, bool keycode, int key, double now_ms, key_event *out)
{
    int n = 0;
    if (keycode) { /* curses decoded this one: whatever was partial was typed */
        n = hand_back(r, out, n);
        return put(out, n, KEY_EVENT_KEY, true, key, r->pasting);
    }
    r->last_ms = now_ms;
    switch (r->state) {
    case GROUND:
        if (key == ESC) {
            r->state = AFTER_ESC;
            r->len = 0;
            return 0;
        }
        return put(out, n, KEY_EVENT_KEY, false, key, r->pasting);
    case AFTER_ESC:
        if (key == '[' || key == 'O') {
            r->state = key == '[' ? IN_CSI : IN_SS3;
            r->seq[r->len++] = (char)key;
            return 0;
        }
        if (key == ESC) /* the first one stood alone */
            return put(out, n, KEY_EVENT_KEY, false, ESC, r->pasting);
        r->state = GROUND; /* ESC and a key (Alt and that key): both as typed */
        n = put(out, n, KEY_EVENT_KEY, false, ESC, r->pasting);
        return put(out, n, KEY_EVENT_KEY, false, key, r->pasting);
    case IN_SS3: {
        r->state = GROUND;
        r->len = 0;
        int k = ss3_key(key);
        return k ? put(out, n, KEY_EVENT_KEY, true, k, r->pasting) : 0;
    }
    case IN_MOUSE:
        if (--r->drop <= 0)
            r->state = GROUND;
        return 0;
    case IN_CSI:
        if (key < 0x20 || key > 0x7e) { /* not a sequence after all: typed, then this key */
            n = hand_back(r, out, n);
            return n + key_reader_feed(r, false, key, now_ms, out + n);
        }
        if (r->len == 1 && key == 'M') { /* ESC [ M and three bytes: an old mouse report */
            r->state = IN_MOUSE;
            r->drop = 3;
            r->len = 0;
            return 0;
        }
        if (r->len == KEY_READER_SEQ_MAX) { /* too long to be a key: dropped */
            r->state = GROUND;
            r->len = 0;
            return 0;
        }
        r->seq[r->len++] = (char)key;
        if (key >= 0x40) { /* the final byte (without the '[' in front) */
            memmove(r->seq, r->seq + 1, (size_t)--r->len);
            return csi_done(r, out, n);
        }
        return 0;
    default: return 0;
    }
}

bool key_reader_pasting(const key_reader *r)
{
    return r->pasting;
}

/* The text run bytes[from, to), if any, as one KEY_EVENT_PASTE_TEXT. */
static void text_run(const char *bytes, size_t from, size_t to, key_sink *sink, void *user)
{
    if (to > from) {
        key_event ev = {.kind = KEY_EVENT_PASTE_TEXT, .key = (int)(to - from), .pasted = true};
        sink(user, &ev, bytes + from);
    }
}

void key_reader_feed_bytes(key_reader *r, const char *bytes, size_t n, double now_ms, key_sink *sink,
                           void *user)
{
    enum { RUN_MAX = 1 << 20 }; /* a text event's length fits an int whatever n is */
    key_event ev[KEY_READER_EVENTS_MAX];
    size_t run = 0; /* where the text run not yet handed on starts */
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)bytes[i];
        bool carried = !mbsinit(&r->partial); /* this character began in an earlier call */
        wchar_t wc = c;
        size_t len = 1;
        if (c >= 0x80 || carried) {
            len = mbrtowc(&wc, bytes + i, n - i, &r->partial);
            if (len == (size_t)-2) { /* the rest of it comes in the next call */
                text_run(bytes, run, i, sink, user);
                return;
            }
            if (len == (size_t)-1) { /* no character: the byte that starts it dropped */
                memset(&r->partial, 0, sizeof r->partial);
                text_run(bytes, run, i, sink, user);
                if (!carried) /* (a character begun in an earlier call: those bytes are the
                                 ones dropped, and this byte is read again afresh) */
                    i++;
                run = i;
                continue;
            }
            if (len == 0) /* the NUL character */
                len = 1;
        }
        bool text = r->pasting && r->state == GROUND && wc != ESC;
        if (text && !carried && i + len - run <= RUN_MAX) {
            i += len;
            continue;
        }
        text_run(bytes, run, i, sink, user);
        if (text) { /* the bytes read before are not here: the character written again */
            char mb[MB_LEN_MAX];
            mbstate_t st;
            memset(&st, 0, sizeof st);
            size_t m = carried ? wcrtomb(mb, wc, &st) : 0;
            if (m != (size_t)-1 && m > 0)
                text_run(mb, 0, m, sink, user);
            run = carried ? i + len : i;
            i += len;
            continue;
        }
        int k = key_reader_feed(r, false, (int)wc, now_ms, ev);
        for (int j = 0; j < k; j++)
            sink(user, &ev[j], NULL);
        i += len;
        run = i;
    }
    text_run(bytes, run, n, sink, user);
}

int key_reader_wait_ms(const key_reader *r, double now_ms)
{
    if (r->state == GROUND)
        return -1;
    double left = r->last_ms + KEY_READER_ESC_MS - now_ms;
    return left <= 0 ? 0 : (int)left + 1;
}

int key_reader_idle(key_reader *r, double now_ms, key_event *out)
{
    if (r->state == GROUND || now_ms - r->last_ms < KEY_READER_ESC_MS)
        return 0;
    return hand_back(r, out, 0);
}
