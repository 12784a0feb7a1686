/* line_edit.c — a line being edited: text, cursor, history walk, reverse search (see
 * line_edit.h). The cursor moves by whole UTF-8 characters; bytes that are not UTF-8
 * move one at a time. */
#include "line_edit.h"

#include <stdlib.h>
#include <string.h>

/* A growable NUL-terminated string. */
typedef struct {
    char *s;
    size_t len, cap; /* cap > len: room for the NUL */
} text;

struct line_edit {
    line_history h;
    text line;
    size_t point;          /* the cursor, in bytes */
    int walk;              /* the history line shown, -1: the line being typed */
    text draft;            /* the line being typed, while the walk shows another */
    bool searching;
    bool failed;           /* the search string is in no earlier line */
    int match;             /* the history line the search shows, -1: none yet */
    text query;            /* the search string */
    text before;           /* the line as it was when the search started */
    size_t before_point;
    int before_walk;
    text prompt;           /* the search's prompt, made when the search string changes */
};

static bool text_reserve(text *t, size_t len)
{
    if (len < t->cap)
        return true;
    size_t cap = t->cap ? t->cap : 64;
    while (cap <= len)
        cap *= 2;
    char *s = realloc(t->s, cap);
    if (!s)
        return false;
    t->s = s;
    t->cap = cap;
    return true;
}

static bool text_insert(text *t, size_t at, const char *s, size_t n)
{
    if (!text_reserve(t, t->len + n))
        return false;
    memmove(t->s + at + n, t->s + at, t->len - at + 1);
    memcpy(t->s + at, s, n);
    t->len += n;
    return true;
}

static bool text_set(text *t, const char *s, size_t n)
{
    if (!text_reserve(t, n))
        return false;
    memmove(t->s, s, n);
    t->s[n] = '\0';
    t->len = n;
    return true;
}

static void text_erase(text *t, size_t from, size_t to)
{
    memmove(t->s + from, t->s + to, t->len - to + 1);
    t->len -= to - from;
}

static bool is_continuation(char c)
{
    return ((unsigned char)c & 0xc0) == 0x80;
}

/* The start of the character before byte i (i > 0). */
static size_t char_before(const text *t, size_t i)
{
    size_t j = i - 1;
    while (j > 0 && i - j < 4 && is_continuation(t->s[j]))
        j--;
    return j;
}

/* The end of the character at byte i (i < len). */
static size_t char_after(const text *t, size_t i)
{
    size_t j = i + 1;
    while (j < t->len && j - i < 4 && is_continuation(t->s[j]))
        j++;
    return j;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

line_edit *line_edit_new(const line_history *h)
{
    line_edit *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->h = *h;
    e->walk = -1;
    if (!text_set(&e->line, "", 0) || !text_set(&e->query, "", 0)) {
        line_edit_free(e);
        return NULL;
    }
    return e;
}

void line_edit_free(line_edit *e)
{
    if (!e)
        return;
    free(e->line.s);
    free(e->draft.s);
    free(e->query.s);
    free(e->before.s);
    free(e->prompt.s);
    free(e);
}

/* Shows history line i (or, for i == -1, the line being typed), the cursor at its end. */
static bool show(line_edit *e, int i)
{
    const char *s = i >= 0 ? e->h.line(e->h.ctx, i) : e->draft.s;
    if (!s)
        s = "";
    if (!text_set(&e->line, s, strlen(s)))
        return false;
    e->point = e->line.len;
    e->walk = i;
    return true;
}

static bool walk_prev(line_edit *e)
{
    int n = e->h.count(e->h.ctx);
    if (e->walk == -1) {
        if (n == 0)
            return true;
        if (!text_set(&e->draft, e->line.s, e->line.len))
            return false;
        e->walk = n;
    }
    return e->walk > 0 ? show(e, e->walk - 1) : true;
}

static bool walk_next(line_edit *e)
{
    if (e->walk == -1)
        return true;
    return show(e, e->walk + 1 < e->h.count(e->h.ctx) ? e->walk + 1 : -1);
}

/* readline's prompt for the search: "(reverse-i-search)`query': ", "(failed ...". */
static bool make_prompt(line_edit *e)
{
    const char *head = e->failed ? "(failed reverse-i-search)`" : "(reverse-i-search)`";
    return text_set(&e->prompt, head, strlen(head)) &&
           text_insert(&e->prompt, e->prompt.len, e->query.s, e->query.len) &&
           text_insert(&e->prompt, e->prompt.len, "': ", 3);
}

/* The search from history line `from` down: the newest line holding the search string
 * is shown, the cursor where the string starts; with none, the line stays (failed). */
static bool search_from(line_edit *e, int from)
{
    e->failed = true;
    for (int i = from; i >= 0 && e->failed; i--) {
        const char *s = e->h.line(e->h.ctx, i);
        const char *at = s ? strstr(s, e->query.s) : NULL;
        if (!at)
            continue;
        if (!text_set(&e->line, s, strlen(s)))
            return false;
        e->point = (size_t)(at - s);
        e->match = i;
        e->failed = false;
    }
    return make_prompt(e);
}

/* Shows the line as it was before the search. */
static bool show_before(line_edit *e)
{
    if (!text_set(&e->line, e->before.s, e->before.len))
        return false;
    e->point = e->before_point;
    return true;
}

static bool search_start(line_edit *e)
{
    if (!text_set(&e->before, e->line.s, e->line.len))
        return false;
    e->before_point = e->point;
    e->before_walk = e->walk;
    e->query.len = 0;
    e->query.s[0] = '\0';
    e->match = -1;
    e->failed = false;
    e->searching = true;
    return make_prompt(e);
}

/* Leaves the search: with `keep`, on the line it found (the history walk goes on from
 * there), else on the line as it was before. */
static bool search_end(line_edit *e, bool keep)
{
    e->searching = false;
    if (keep && e->match >= 0) {
        if (e->before_walk == -1 && !text_set(&e->draft, e->before.s, e->before.len))
            return false;
        e->walk = e->match;
        return true;
    }
    e->walk = e->before_walk;
    return show_before(e);
}

static bool search_command(line_edit *e, line_command c)
{
    int newest = e->h.count(e->h.ctx) - 1;
    switch (c) {
    case LINE_SEARCH:
        return search_from(e, e->match >= 0 ? e->match - 1 : newest);
    case LINE_CANCEL:
        return search_end(e, false);
    default: /* LINE_BACKSPACE: the search string loses its last character */
        if (e->query.len == 0)
            return true;
        text_erase(&e->query, char_before(&e->query, e->query.len), e->query.len);
        e->match = -1;
        if (e->query.len > 0)
            return search_from(e, newest);
        e->failed = false;
        return make_prompt(e) && show_before(e);
    }
}

bool line_edit_type(line_edit *e, const char *s, size_t n)
{
    if (e->searching) {
        if (!text_insert(&e->query, e->query.len, s, n))
            return false;
        return search_from(e, e->match >= 0 ? e->match : e->h.count(e->h.ctx) - 1);
    }
    if (!text_insert(&e->line, e->point, s, n))
        return false;
    e->point += n;
    return true;
}

bool line_edit_command(line_edit *e, line_command c)
{
    if (e->searching) {
        if (c == LINE_SEARCH || c == LINE_CANCEL || c == LINE_BACKSPACE)
            return search_command(e, c);
        if (!search_end(e, true))
            return false;
    }
    text *t = &e->line;
    switch (c) {
    case LINE_LEFT:
        if (e->point > 0)
            e->point = char_before(t, e->point);
        break;
    case LINE_RIGHT:
        if (e->point < t->len)
            e->point = char_after(t, e->point);
        break;
    case LINE_HOME: e->point = 0; break;
    case LINE_END: e->point = t->len; break;
    case LINE_BACKSPACE:
        if (e->point > 0) {
            size_t from = char_before(t, e->point);
            text_erase(t, from, e->point);
            e->point = from;
        }
        break;
    case LINE_DELETE:
        if (e->point < t->len)
            text_erase(t, e->point, char_after(t, e->point));
        break;
    case LINE_KILL_END: text_erase(t, e->point, t->len); break;
    case LINE_KILL_START:
        text_erase(t, 0, e->point);
        e->point = 0;
        break;
    case LINE_KILL_WORD: {
        size_t from = e->point;
        while (from > 0 && is_blank(t->s[from - 1]))
            from--;
        while (from > 0 && !is_blank(t->s[from - 1]))
            from--;
        text_erase(t, from, e->point);
        e->point = from;
        break;
    }
    case LINE_PREV: return walk_prev(e);
    case LINE_NEXT: return walk_next(e);
    case LINE_SEARCH: return search_start(e);
    case LINE_CANCEL: break;
    }
    return true;
}

const char *line_edit_text(const line_edit *e, size_t *len, size_t *point)
{
    *len = e->line.len;
    *point = e->point;
    return e->line.s;
}

const char *line_edit_prompt(const line_edit *e)
{
    return e->searching ? e->prompt.s : NULL;
}

char *line_edit_take(line_edit *e)
{
    if (e->searching && !search_end(e, true))
        return NULL;
    char *s = malloc(e->line.len + 1);
    if (!s)
        return NULL;
    memcpy(s, e->line.s, e->line.len + 1);
    e->line.len = 0;
    e->line.s[0] = '\0';
    e->point = 0;
    e->walk = -1;
    return s;
}
