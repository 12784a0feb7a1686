/* conversation.c — the Conversation pane: the dialog as the user sees it.
 *
 * Owns the pane's entries (user turns, assistant replies as they stream in, and
 * notices such as "stopped" or command output), each kept as terminal-safe UTF-8
 * (textfmt), and draws them wrapped to the pane, scrolled from the bottom. The
 * chat keeps the real dialog; these entries are only what is shown. */
#include <stdlib.h>
#include <string.h>

#include "draw.h"
#include "format.h"

static void entry_append(conv_entry *en, const char *s, size_t n)
{
    if (en->len + n + 1 > en->cap) {
        size_t cap = en->cap ? en->cap : 64;
        while (en->len + n + 1 > cap)
            cap *= 2;
        char *p = realloc(en->text, cap);
        if (!p)
            tui_die("out of memory");
        en->text = p;
        en->cap = cap;
    }
    memcpy(en->text + en->len, s, n);
    en->len += n;
    en->text[en->len] = '\0';
}

/* Appends the terminal-safe form of raw bytes. */
static void entry_append_safe(conv_entry *en, textfmt_stream *st, const char *s, size_t n)
{
    char buf[1024];
    while (n > 0) {
        size_t chunk = n > 200 ? 200 : n; /* each byte grows to at most 4 */
        size_t out = textfmt_stream_put(st, s, chunk, buf, sizeof buf);
        entry_append(en, buf, out);
        s += chunk;
        n -= chunk;
    }
}

void conv_add(tui *t, conv_kind kind, const char *text)
{
    if (t->n_entries == t->cap_entries) {
        int cap = t->cap_entries ? t->cap_entries * 2 : 16;
        conv_entry *p = realloc(t->entries, (size_t)cap * sizeof *p);
        if (!p)
            tui_die("out of memory");
        t->entries = p;
        t->cap_entries = cap;
    }
    conv_entry *en = &t->entries[t->n_entries++];
    memset(en, 0, sizeof *en);
    en->kind = kind;
    /* a user turn after earlier entries starts with an empty line: turns stand apart */
    const char *label = kind == ENTRY_USER ? (t->n_entries > 1 ? "\nYou: " : "You: ")
                        : kind == ENTRY_ASSISTANT ? "Assistant: "
                                                  : "";
    entry_append(en, label, strlen(label));
    en->label_len = en->len;
    textfmt_stream st = {{0}, 0};
    if (text)
        entry_append_safe(en, &st, text, strlen(text));
    if (kind == ENTRY_ASSISTANT) {
        t->stream_entry = t->n_entries - 1;
        memset(&t->stream, 0, sizeof t->stream);
    }
    t->conv_scroll = 0;
    t->dirty |= DIRTY_CONV;
}

void conv_stream(tui *t, const char *bytes, size_t len)
{
    if (t->stream_entry < 0 || t->stream_entry >= t->n_entries || len == 0)
        return;
    entry_append_safe(&t->entries[t->stream_entry], &t->stream, bytes, len);
    t->dirty |= DIRTY_CONV;
}

void conv_set_reply(tui *t, const char *reply)
{
    if (t->stream_entry < 0 || t->stream_entry >= t->n_entries)
        return;
    conv_entry *en = &t->entries[t->stream_entry];
    en->len = en->label_len;
    en->text[en->len] = '\0';
    memset(&t->stream, 0, sizeof t->stream);
    entry_append_safe(en, &t->stream, reply, strlen(reply));
    t->dirty |= DIRTY_CONV;
}

void conv_clear(tui *t)
{
    for (int i = 0; i < t->n_entries; i++)
        free(t->entries[i].text);
    t->n_entries = 0;
    t->stream_entry = -1;
    t->conv_scroll = 0;
    t->dirty |= DIRTY_CONV;
}

void conv_free(tui *t)
{
    conv_clear(t);
    free(t->entries);
    t->entries = NULL;
    t->cap_entries = 0;
}

static attr_t entry_attr(const tui *t, conv_kind k, bool label)
{
    switch (k) {
    case ENTRY_USER:
        return draw_attr(t, PAIR_USER, label ? A_BOLD : A_NORMAL) | (label ? A_BOLD : 0);
    case ENTRY_ASSISTANT:
        return label ? draw_attr(t, PAIR_ASSISTANT, A_BOLD) | A_BOLD : A_NORMAL;
    case ENTRY_NOTICE:
        return draw_attr(t, PAIR_NOTICE, A_DIM);
    }
    return A_NORMAL;
}

/* Draws one wrapped line (bytes s[0..n) of entry en starting at byte off). */
static void draw_line(tui *t, WINDOW *w, int y, const conv_entry *en, size_t off, size_t n)
{
    wmove(w, y, 1);
    size_t end = off + n;
    while (off < end) {
        bool label = off < en->label_len;
        size_t stop = label ? (en->label_len < end ? en->label_len : end) : end;
        attr_t a = entry_attr(t, en->kind, label);
        wattron(w, a);
        /* tabs would jump past the border: write them as one space */
        size_t i = off;
        while (i < stop) {
            size_t j = i;
            while (j < stop && en->text[j] != '\t')
                j++;
            waddnstr(w, en->text + i, (int)(j - i));
            if (j < stop) {
                waddch(w, ' ');
                j++;
            }
            i = j;
        }
        wattroff(w, a);
        off = stop;
    }
}

void conv_draw(tui *t)
{
    WINDOW *w = t->w_conv;
    if (!w)
        return;
    draw_box(t, w, "Conversation", t->focus == FOCUS_CONV);
    int h = getmaxy(w) - 2, width = getmaxx(w) - 2;
    if (h <= 0 || width <= 0)
        return;
    t->conv_page = h;
    int total = 0;
    for (int i = 0; i < t->n_entries; i++)
        total += tuifmt_wrap_count(t->entries[i].text, t->entries[i].len, width);
    int max_scroll = total > h ? total - h : 0;
    if (t->conv_scroll > max_scroll)
        t->conv_scroll = max_scroll;
    if (t->conv_scroll < 0)
        t->conv_scroll = 0;
    int first = total - h - t->conv_scroll; /* first line shown */
    if (first < 0)
        first = 0;
    int line = 0, y = 1;
    for (int i = 0; i < t->n_entries && y <= h; i++) {
        const conv_entry *en = &t->entries[i];
        int lines = tuifmt_wrap_count(en->text, en->len, width);
        if (line + lines <= first) {
            line += lines;
            continue;
        }
        size_t off = 0;
        for (int k = 0; k < lines && y <= h; k++, line++) {
            size_t next = 0, n = 0;
            if (off < en->len)
                n = tuifmt_wrap(en->text + off, en->len - off, width, &next);
            if (line >= first) {
                draw_line(t, w, y++, en, off, n);
                /* the reply being written ends in a block cursor */
                if (i == t->stream_entry && k == lines - 1 && t->state == RUN_GENERATING &&
                    getcurx(w) <= width)
                    waddstr(w, t->utf8 ? "\xe2\x96\x8c" : "_");
            }
            off += next;
        }
    }
    if (t->conv_scroll > 0 && width > 12) {
        char buf[32];
        snprintf(buf, sizeof buf, " +%d lines ", t->conv_scroll);
        draw_text(t, w, h + 1, width - (int)strlen(buf), (int)strlen(buf), buf, A_REVERSE);
    }
}

void conv_scroll_by(tui *t, int lines)
{
    t->conv_scroll += lines;
    if (t->conv_scroll < 0)
        t->conv_scroll = 0;
    t->dirty |= DIRTY_CONV;
}

bool conv_act(tui *t, key_action a)
{
    int page = t->conv_page > 1 ? t->conv_page - 1 : 1;
    switch (a) {
    case ACT_SCROLL_UP: conv_scroll_by(t, 1); return true;
    case ACT_SCROLL_DOWN: conv_scroll_by(t, -1); return true;
    case ACT_PAGE_UP: conv_scroll_by(t, page); return true;
    case ACT_PAGE_DOWN: conv_scroll_by(t, -page); return true;
    case ACT_SCROLL_TOP: conv_scroll_by(t, 1 << 28); return true;
    case ACT_SCROLL_END: t->conv_scroll = 0; t->dirty |= DIRTY_CONV; return true;
    default: return false;
    }
}
