/* conversation.c — the Conversation pane (see conversation.h).
 *
 * Owns the pane's entries (user turns, assistant replies as they stream in, and
 * notices such as "stopped" or command output), each kept as terminal-safe UTF-8
 * (textfmt), with the positions of a reply's tokens, and its scroll position; draws
 * them wrapped to the pane, scrolled from the bottom, reply tokens in their shade, a
 * reply's thinking (think.h) folded into one line or shown dimmed. */
#include "conversation.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "textfmt.h"
#include "think.h"
#include "format.h"

typedef struct {
    conv_kind kind;
    char *text;   /* (len) terminal-safe UTF-8, NUL-terminated, starting with the label */
    size_t len, cap;
    size_t label_len; /* bytes of the "You: " / "Assistant: " label at the start */
    /* a reply's tokens: token k sits at position span_pos[k] and its text starts
     * span_off[k] bytes after the label (ascending); none when unknown */
    int *span_pos;
    size_t *span_off;
    int n_spans, cap_spans;
    bool think_opened; /* a reply that starts inside its thinking span (qwen35) */
    unsigned version;  /* counts the changes to the text, spans and think_opened */
    /* the wrapped lines the entry's view took when last counted, and for what: a
     * frame counts again only the entries that changed (entry_lines) */
    int lines, lines_width;
    unsigned lines_version;
    bool lines_thinking, lines_utf8;
} conv_entry;

struct conv_pane {
    conv_entry *entries; /* (n_entries) */
    int n_entries, cap_entries;
    int stream_entry;      /* the entry the reply streams into (-1 none) */
    textfmt_stream stream; /* carries split UTF-8 of the streaming reply */
    bool writing;          /* the streaming reply shows a cursor */
    const tui_source *src; /* the records reply tokens are shaded by */
    const tui_selection *sel; /* the position highlighted */
    token_shade_mode shading;
    int scroll;            /* lines scrolled up from the bottom; 0 follows */
    int page;              /* lines of the last drawn page */
    bool show_thinking;    /* replies' thinking shown (dimmed) rather than folded */
    char *shown;           /* (shown_cap) an entry's text with its thinking folded */
    size_t shown_cap;
};

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
    en->version++;
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

/* Token pos's text starts here (the entry's current end). */
static void entry_add_span(conv_entry *en, int pos)
{
    if (en->n_spans == en->cap_spans) {
        int cap = en->cap_spans ? en->cap_spans * 2 : 64;
        int *p = realloc(en->span_pos, (size_t)cap * sizeof *p);
        if (p)
            en->span_pos = p;
        size_t *o = realloc(en->span_off, (size_t)cap * sizeof *o);
        if (o)
            en->span_off = o;
        if (!p || !o)
            tui_die("out of memory");
        en->cap_spans = cap;
    }
    en->span_pos[en->n_spans] = pos;
    en->span_off[en->n_spans++] = en->len - en->label_len;
    en->version++;
}

static void entry_free(conv_entry *en)
{
    free(en->text);
    free(en->span_pos);
    free(en->span_off);
}

conv_pane *conv_new(const tui_source *src, const tui_selection *sel)
{
    conv_pane *cv = calloc(1, sizeof *cv);
    if (!cv)
        tui_die("out of memory");
    cv->stream_entry = -1;
    cv->src = src;
    cv->sel = sel;
    return cv;
}

void conv_set_think_opened(conv_pane *cv, bool opened)
{
    if (cv->stream_entry >= 0) {
        cv->entries[cv->stream_entry].think_opened = opened;
        cv->entries[cv->stream_entry].version++;
    }
}

void conv_add(conv_pane *cv, conv_kind kind, const char *text)
{
    if (cv->n_entries == cv->cap_entries) {
        int cap = cv->cap_entries ? cv->cap_entries * 2 : 16;
        conv_entry *p = realloc(cv->entries, (size_t)cap * sizeof *p);
        if (!p)
            tui_die("out of memory");
        cv->entries = p;
        cv->cap_entries = cap;
    }
    conv_entry *en = &cv->entries[cv->n_entries++];
    memset(en, 0, sizeof *en);
    en->kind = kind;
    /* a user turn after earlier entries starts with an empty line: turns stand apart */
    const char *label = kind == ENTRY_USER ? (cv->n_entries > 1 ? "\nYou: " : "You: ")
                        : kind == ENTRY_ASSISTANT ? "Assistant: "
                                                  : "";
    entry_append(en, label, strlen(label));
    en->label_len = en->len;
    textfmt_stream st = {{0}, 0};
    if (text)
        entry_append_safe(en, &st, text, strlen(text));
    if (kind == ENTRY_ASSISTANT) {
        cv->stream_entry = cv->n_entries - 1;
        memset(&cv->stream, 0, sizeof cv->stream);
    }
    cv->scroll = 0;
}

bool conv_drop_notice(conv_pane *cv, const char *text)
{
    for (int i = cv->n_entries - 1; i >= 0; i--) {
        conv_entry *en = &cv->entries[i];
        if (en->kind != ENTRY_NOTICE || strcmp(en->text, text) != 0)
            continue;
        entry_free(en);
        memmove(en, en + 1, sizeof *en * (size_t)(cv->n_entries - i - 1));
        cv->n_entries--;
        if (cv->stream_entry > i)
            cv->stream_entry--;
        return true;
    }
    return false;
}

void conv_stream_token(conv_pane *cv, int pos, const char *bytes, size_t len)
{
    if (cv->stream_entry < 0 || cv->stream_entry >= cv->n_entries || len == 0)
        return;
    conv_entry *en = &cv->entries[cv->stream_entry];
    entry_add_span(en, pos);
    entry_append_safe(en, &cv->stream, bytes, len);
}

/* en's text becomes text (after its label), whose n tokens start at byte offsets off
 * and sit at positions pos. */
static void entry_set_tokens(conv_entry *en, textfmt_stream *st, const char *text, const int *pos,
                             const size_t *off, int n)
{
    en->len = en->label_len;
    en->text[en->len] = '\0';
    en->n_spans = 0;
    en->version++;
    memset(st, 0, sizeof *st);
    size_t len = strlen(text), at = 0;
    for (int k = 0; k <= n; k++) {
        size_t to = k < n && off[k] < len ? off[k] : len;
        if (to > at) {
            entry_append_safe(en, st, text + at, to - at);
            at = to;
        }
        if (k < n && off[k] < len)
            entry_add_span(en, pos[k]);
    }
}

void conv_set_reply_tokens(conv_pane *cv, const char *reply, const int *pos, const size_t *off, int n)
{
    if (cv->stream_entry < 0 || cv->stream_entry >= cv->n_entries)
        return;
    entry_set_tokens(&cv->entries[cv->stream_entry], &cv->stream, reply, pos, off, n);
}

void conv_set_message_tokens(conv_pane *cv, const char *text, const int *pos, const size_t *off, int n)
{
    for (int i = cv->n_entries - 1; i >= 0; i--) {
        if (cv->entries[i].kind == ENTRY_USER) {
            textfmt_stream st;
            entry_set_tokens(&cv->entries[i], &st, text, pos, off, n);
            return;
        }
    }
}

void conv_set_shading(conv_pane *cv, token_shade_mode mode)
{
    cv->shading = mode;
}

token_shade_mode conv_shading(const conv_pane *cv)
{
    return cv->shading;
}

void conv_set_branch(conv_pane *cv, int number, int count)
{
    if (cv->stream_entry < 0 || cv->stream_entry >= cv->n_entries)
        return;
    conv_entry *en = &cv->entries[cv->stream_entry];
    char label[64] = "Assistant: ";
    if (count > 1)
        snprintf(label, sizeof label, "Assistant [branch %d/%d]: ", number, count);
    size_t n = strlen(label), body = en->len - en->label_len;
    if (n == en->label_len && !memcmp(en->text, label, n))
        return;
    char *text = malloc(n + body + 1);
    if (!text)
        tui_die("out of memory");
    memcpy(text, label, n);
    memcpy(text + n, en->text + en->label_len, body + 1);
    free(en->text);
    en->text = text;
    en->len = n + body;
    en->cap = en->len + 1;
    en->label_len = n;
    en->version++;
}

void conv_set_show_thinking(conv_pane *cv, bool show)
{
    cv->show_thinking = show;
}

bool conv_shows_thinking(const conv_pane *cv)
{
    return cv->show_thinking;
}

void conv_set_writing(conv_pane *cv, bool writing)
{
    cv->writing = writing;
}

void conv_clear(conv_pane *cv)
{
    for (int i = 0; i < cv->n_entries; i++)
        entry_free(&cv->entries[i]);
    cv->n_entries = 0;
    cv->stream_entry = -1;
    cv->scroll = 0;
}

void conv_free(conv_pane *cv)
{
    if (!cv)
        return;
    conv_clear(cv);
    free(cv->entries);
    free(cv->shown);
    free(cv);
}

static attr_t entry_attr(const tui_screen *scr, conv_kind k, bool label)
{
    switch (k) {
    case ENTRY_USER:
        return draw_attr(scr, PAIR_USER, label ? A_BOLD : A_NORMAL) | (label ? A_BOLD : 0);
    case ENTRY_ASSISTANT:
        return label ? draw_attr(scr, PAIR_ASSISTANT, A_BOLD) | A_BOLD : A_NORMAL;
    case ENTRY_NOTICE:
        return draw_attr(scr, PAIR_NOTICE, A_DIM);
    }
    return A_NORMAL;
}

/* The last of en's tokens whose text starts at or before body byte b, or -1. */
static int span_at(const conv_entry *en, size_t b)
{
    int lo = 0, hi = en->n_spans - 1, found = -1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (en->span_off[mid] <= b) {
            found = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return found;
}

/* The attribute of the token at pos in an entry drawn with base: its shade in place
 * of the entry's colour when the tokens are shaded, and reverse video where the
 * selection was put. */
static attr_t token_attr(const conv_pane *cv, const tui_screen *scr, int pos, attr_t base)
{
    attr_t a = base;
    if (cv->shading != SHADE_OFF) {
        int lv = token_shade_level(cv->shading, source_record(cv->src, pos - 1));
        if (lv >= 0)
            a = (base & ~(A_COLOR | A_DIM)) | token_shade_attr(scr, lv);
    }
    if (!selection_follows(cv->sel, cv->src) && selection_get(cv->sel, cv->src) == pos)
        a |= A_REVERSE;
    return a;
}

/* What an entry shows: its text, or, with a reply's thinking folded, the text before
 * the span, one line in its place, and the answer after it. Shown bytes before cut are
 * the entry's own; [cut, cut + fold_len) is the fold line; the rest are the entry's
 * from resume on. */
typedef struct {
    const char *text; /* (len) what is drawn */
    size_t len;
    size_t cut, fold_len, resume;
    size_t think_from, think_to; /* the entry's bytes of its thinking (dimmed when shown) */
    int fold_first, fold_end;    /* the tokens folded away: span indices [first, end) */
} entry_view;

/* The first of en's tokens whose text starts at or after body byte b. */
static int span_from(const conv_entry *en, size_t b)
{
    int k = span_at(en, b);
    if (k < 0 || en->span_off[k] != b)
        return k + 1;
    while (k > 0 && en->span_off[k - 1] == b) /* tokens that added no bytes of their own */
        k--;
    return k;
}

/* The fold line of a span of n tokens (n < 0: not known), closed or still open. */
static size_t fold_line(const tui_screen *scr, bool closed, int n, char *buf, size_t size)
{
    const char *mark = scr->utf8 ? "\xe2\x96\xb8" : ">", *dots = scr->utf8 ? "\xe2\x80\xa6" : "...";
    char count[48] = "";
    if (n >= 0)
        snprintf(count, sizeof count, closed ? " for %d token%s" : " %d token%s", n, n == 1 ? "" : "s");
    int w = snprintf(buf, size, "%s %s%s%s (z: unfold)%s", mark, closed ? "thought" : "thinking", closed ? "" : dots,
                     count, closed ? "\n" : "");
    return w < 0 ? 0 : (size_t)w < size ? (size_t)w : size - 1;
}

static void entry_view_of(conv_pane *cv, const tui_screen *scr, const conv_entry *en, entry_view *v)
{
    *v = (entry_view){.text = en->text, .len = en->len, .cut = en->len, .resume = en->len,
                      .think_from = en->len, .think_to = en->len};
    think_span sp;
    if (en->kind != ENTRY_ASSISTANT)
        return;
    think_state st = think_find_in(en->text + en->label_len, en->len - en->label_len,
                                   en->think_opened, &sp);
    if (st != THINK_OPEN && st != THINK_CLOSED)
        return;
    v->think_from = en->label_len + sp.start;
    v->think_to = en->label_len + sp.end;
    if (cv->show_thinking)
        return;
    v->fold_first = span_from(en, sp.start);
    v->fold_end = st == THINK_OPEN ? en->n_spans : span_from(en, sp.end);
    char line[128];
    size_t n = 0;
    if (st == THINK_OPEN || !sp.empty) /* an empty span (/no_think's) folds to nothing */
        n = fold_line(scr, st == THINK_CLOSED, en->n_spans > 0 ? v->fold_end - v->fold_first : -1, line,
                      sizeof line);
    v->cut = v->think_from;
    v->fold_len = n;
    v->resume = v->think_to;
    v->len = v->cut + n + (en->len - v->resume);
    if (v->len + 1 > cv->shown_cap) {
        char *p = realloc(cv->shown, v->len + 1);
        if (!p)
            tui_die("out of memory");
        cv->shown = p;
        cv->shown_cap = v->len + 1;
    }
    memcpy(cv->shown, en->text, v->cut);
    memcpy(cv->shown + v->cut, line, n);
    memcpy(cv->shown + v->cut + n, en->text + v->resume, en->len - v->resume + 1);
    v->text = cv->shown;
}

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* The fold line's attribute: dim, reversed when the selected position is folded in it. */
static attr_t fold_attr(const conv_pane *cv, const tui_screen *scr, const conv_entry *en, const entry_view *v)
{
    attr_t a = draw_attr(scr, PAIR_DIM, A_DIM);
    if (selection_follows(cv->sel, cv->src))
        return a;
    int sel = selection_get(cv->sel, cv->src);
    for (int k = v->fold_first; k < v->fold_end; k++)
        if (en->span_pos[k] == sel)
            return a | A_REVERSE;
    return a;
}

/* The attribute of shown byte off of entry en (not the label, not the fold line) and
 * *stop, the shown byte where it may change: a token's shade and highlight, the
 * thinking dimmed. */
static attr_t text_attr(const conv_pane *cv, const tui_screen *scr, const conv_entry *en, const entry_view *v,
                        size_t off, size_t *stop)
{
    size_t src = off < v->cut ? off : off - v->cut - v->fold_len + v->resume; /* the entry's byte */
    size_t limit = off < v->cut ? v->cut : en->len; /* the entry's byte where this stretch ends */
    attr_t a = entry_attr(scr, en->kind, false);
    if (src >= v->think_from && src < v->think_to) {
        a = draw_attr(scr, PAIR_DIM, A_DIM);
        limit = min_size(limit, v->think_to);
    } else if (src < v->think_from) {
        limit = min_size(limit, v->think_from);
    }
    if (en->n_spans > 0) {
        int k = span_at(en, src - en->label_len);
        limit = min_size(limit, en->label_len + (k + 1 < en->n_spans ? en->span_off[k + 1] : en->len));
        if (k >= 0)
            a = token_attr(cv, scr, en->span_pos[k], a);
    }
    *stop = off + (limit - src);
    return a;
}

/* Draws one wrapped line (shown bytes [off, off + n) of entry en's view v): the label,
 * then runs of one attribute (a token, text before the first, the fold line). */
static void draw_line(const conv_pane *cv, const tui_screen *scr, WINDOW *w, int y, const conv_entry *en,
                      const entry_view *v, size_t off, size_t n)
{
    wmove(w, y, 1);
    size_t end = off + n;
    while (off < end) {
        size_t stop;
        attr_t a;
        if (off < en->label_len) {
            stop = en->label_len;
            a = entry_attr(scr, en->kind, true);
        } else if (off >= v->cut && off < v->cut + v->fold_len) {
            stop = v->cut + v->fold_len;
            a = fold_attr(cv, scr, en, v);
        } else {
            a = text_attr(cv, scr, en, v, off, &stop);
        }
        stop = min_size(stop, end);
        wattron(w, a);
        /* tabs would jump past the border: write them as one space */
        size_t i = off;
        while (i < stop) {
            size_t j = i;
            while (j < stop && v->text[j] != '\t')
                j++;
            waddnstr(w, v->text + i, (int)(j - i));
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

/* The lines en's view takes wrapped to width: counted again only when the entry, the
 * width or the thinking's folding changed since the last count (a long chat's every
 * entry wrapped on every frame took a 400 KB chat's frame from 0.6 to 10 ms). */
static int entry_lines(conv_pane *cv, const tui_screen *scr, conv_entry *en, int width)
{
    if (en->lines_width != width || en->lines_version != en->version ||
        en->lines_thinking != cv->show_thinking || en->lines_utf8 != scr->utf8) {
        entry_view v;
        entry_view_of(cv, scr, en, &v);
        en->lines = tuifmt_wrap_count(v.text, v.len, width);
        en->lines_width = width;
        en->lines_version = en->version;
        en->lines_thinking = cv->show_thinking;
        en->lines_utf8 = scr->utf8;
    }
    return en->lines;
}

static void conv_draw(void *state, WINDOW *w, const tui_screen *scr, bool focused)
{
    conv_pane *cv = state;
    draw_box(scr, w, conv_pane_ops.name, focused);
    int h = getmaxy(w) - 2, width = getmaxx(w) - 2;
    if (h <= 0 || width <= 0)
        return;
    cv->page = h;
    int total = 0;
    entry_view v;
    for (int i = 0; i < cv->n_entries; i++)
        total += entry_lines(cv, scr, &cv->entries[i], width);
    int max_scroll = total > h ? total - h : 0;
    if (cv->scroll > max_scroll)
        cv->scroll = max_scroll;
    if (cv->scroll < 0)
        cv->scroll = 0;
    int first = total - h - cv->scroll; /* first line shown */
    if (first < 0)
        first = 0;
    int line = 0, y = 1;
    for (int i = 0; i < cv->n_entries && y <= h; i++) {
        conv_entry *en = &cv->entries[i];
        int lines = entry_lines(cv, scr, en, width);
        if (line + lines <= first) {
            line += lines;
            continue;
        }
        entry_view_of(cv, scr, en, &v);
        size_t off = 0;
        for (int k = 0; k < lines && y <= h; k++, line++) {
            size_t next = 0, n = 0;
            if (off < v.len)
                n = tuifmt_wrap(v.text + off, v.len - off, width, &next);
            if (line >= first) {
                draw_line(cv, scr, w, y++, en, &v, off, n);
                /* the reply being written ends in a block cursor */
                if (i == cv->stream_entry && k == lines - 1 && cv->writing && getcurx(w) <= width)
                    waddstr(w, scr->utf8 ? "\xe2\x96\x8c" : "_");
            }
            off += next;
        }
    }
    if (cv->scroll > 0 && width > 12) {
        char buf[32];
        snprintf(buf, sizeof buf, " +%d line%s ", cv->scroll, cv->scroll == 1 ? "" : "s");
        draw_text(scr, w, h + 1, width - (int)strlen(buf), (int)strlen(buf), buf, A_REVERSE);
    }
}

void conv_scroll_by(conv_pane *cv, int lines)
{
    cv->scroll += lines;
    if (cv->scroll < 0)
        cv->scroll = 0;
}

static bool conv_act(void *state, key_action a)
{
    conv_pane *cv = state;
    int page = cv->page > 1 ? cv->page - 1 : 1;
    switch (a) {
    case ACT_SCROLL_UP: conv_scroll_by(cv, 1); return true;
    case ACT_SCROLL_DOWN: conv_scroll_by(cv, -1); return true;
    case ACT_PAGE_UP: conv_scroll_by(cv, page); return true;
    case ACT_PAGE_DOWN: conv_scroll_by(cv, -page); return true;
    case ACT_SCROLL_TOP: conv_scroll_by(cv, 1 << 28); return true;
    case ACT_SCROLL_END: cv->scroll = 0; return true;
    default: return false;
    }
}

static const char *conv_why_not(void *state, key_action a)
{
    conv_pane *cv = state;
    if ((a == ACT_SCROLL_DOWN || a == ACT_SCROLL_END) && cv->scroll == 0)
        return "Conversation already shows its end";
    return NULL;
}

const view_ops conv_pane_ops = {
    .name = "Conversation",
    .keys = KEYS_CONV,
    .place = VIEW_PANE,
    .draw = conv_draw,
    .act = conv_act,
    .why_not = conv_why_not,
};
