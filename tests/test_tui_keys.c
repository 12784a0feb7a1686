/* test_tui_keys.c — the TUI's key table: every binding is in the man page's KEYS
 * section (man/llmchat.1 under LLMCHAT_SRCDIR) under the same context, and every key
 * the man page lists there is a binding; no binding is shadowed by another that the
 * dispatcher asks first; look-ups find the right rows; every row of an action has
 * the same properties (steers, changes the chat); the help overlay shows every
 * binding, fits the screen (80x24 and others) and needs a single page at 120x40, never
 * splits an entry across columns nor cuts its keys. (That the v / V text names every
 * Attention view is tests/test_tui_views.c's: the views are a table of the TUI's.) */
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"
#include "tui/keys.h"

enum { MAX_KEYS = 512 };

typedef struct {
    char items[MAX_KEYS][64]; /* "Context\tkey" */
    int n;
} key_set;

static void set_add(key_set *s, const char *ctx, const char *key)
{
    ck_assert_int_lt(s->n, MAX_KEYS);
    snprintf(s->items[s->n++], sizeof s->items[0], "%s\t%s", ctx, key);
}

static bool set_has(const key_set *s, const char *item)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->items[i], item))
            return true;
    return false;
}

/* The table's keys, one item per key (a range row gives one per character). */
static void table_keys(key_set *s)
{
    int n;
    const key_binding *t = keys_table(&n);
    s->n = 0;
    for (int i = 0; i < n; i++) {
        const char *ctx = keys_context_get(t[i].ctx)->title;
        if (!t[i].last) {
            set_add(s, ctx, t[i].name);
            continue;
        }
        for (int c = t[i].code; c <= t[i].last; c++) {
            char one[2] = {(char)c, '\0'};
            set_add(s, ctx, one);
        }
    }
}

/* mdoc escapes in a word: \& vanishes, \- is a minus, \e a backslash. */
static void unescape(const char *in, char *out, size_t size)
{
    size_t o = 0;
    for (const char *p = in; *p && o + 1 < size; p++) {
        if (p[0] == '\\' && p[1] == '&') {
            p++;
        } else if (p[0] == '\\' && p[1] == '-') {
            out[o++] = '-';
            p++;
        } else if (p[0] == '\\' && p[1] == 'e') {
            out[o++] = '\\';
            p++;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = '\0';
}

static bool is_macro(const char *w)
{
    static const char *macros[] = {"Ic", "No", "Ar", "Cm", "Li", "Em", "Sy", "Pq", "Sx", "Fl", "Xr", "Ql", "Dq", "Qq"};
    for (size_t i = 0; i < sizeof macros / sizeof macros[0]; i++)
        if (!strcmp(w, macros[i]))
            return true;
    return false;
}

/* The words of an .It line's arguments: quoted strings are split at their spaces, mdoc
 * macros and the separators ",", "or" and "and" are dropped, "a ... b" is the range of
 * characters from a to b. */
static void item_keys(const char *args, const char *ctx, key_set *s)
{
    char words[32][64];
    int n = 0;
    const char *p = args;
    while (*p && n < 32) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        bool quoted = *p == '"';
        if (quoted)
            p++;
        const char *end = quoted ? strchr(p, '"') : p + strcspn(p, " ");
        if (!end)
            end = p + strlen(p);
        char chunk[128];
        snprintf(chunk, sizeof chunk, "%.*s", (int)(end - p), p);
        p = *end ? end + 1 : end;
        /* a quoted chunk holds several keys separated by spaces */
        for (char *save = NULL, *w = strtok_r(chunk, " ", &save); w && n < 32; w = strtok_r(NULL, " ", &save)) {
            if (!quoted && (is_macro(w) || !strcmp(w, ",") || !strcmp(w, "or") || !strcmp(w, "and")))
                continue;
            unescape(w, words[n++], sizeof words[0]);
        }
    }
    for (int i = 0; i < n; i++) {
        if (!strcmp(words[i], "...") && i > 0 && i + 1 < n && strlen(words[i - 1]) == 1 &&
            strlen(words[i + 1]) == 1) {
            for (char c = (char)(words[i - 1][0] + 1); c < words[i + 1][0]; c++) {
                char one[2] = {c, '\0'};
                set_add(s, ctx, one);
            }
            continue;
        }
        set_add(s, ctx, words[i]);
    }
}

/* The keys of the man page's KEYS section, per .Ss subsection. */
static void man_keys(key_set *s)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/man/llmchat.1", source_dir());
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char line[1024], ctx[64] = "";
    bool in_keys = false;
    s->n = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (!strncmp(line, ".Sh ", 4)) {
            in_keys = !strcmp(line + 4, "KEYS");
            ctx[0] = '\0';
        } else if (in_keys && !strncmp(line, ".Ss ", 4)) {
            snprintf(ctx, sizeof ctx, "%.63s", line + 4);
        } else if (in_keys && !strncmp(line, ".It ", 4) && ctx[0]) {
            item_keys(line + 4, ctx, s);
        }
    }
    fclose(f);
}

START_TEST(test_table_keys_in_man_page)
{
    static key_set table, man;
    table_keys(&table);
    man_keys(&man);
    ck_assert_int_gt(man.n, 20);
    for (int i = 0; i < table.n; i++)
        ck_assert_msg(set_has(&man, table.items[i]), "the key table's [%s] is not in the man page's KEYS section",
                      table.items[i]);
    for (int i = 0; i < man.n; i++)
        ck_assert_msg(set_has(&table, man.items[i]), "the man page's KEYS lists [%s], which the key table does not bind",
                      man.items[i]);
}
END_TEST

/* The man-page parser itself, on the forms KEYS uses. */
START_TEST(test_man_item_parser)
{
    static key_set s;
    s.n = 0;
    item_keys("Ic 1 No ... Ic 4 , Ic 0", "X", &s);
    item_keys("Ic \"{ }\" No or Ic \"\\&, \\&.\"", "Y", &s);
    item_keys("Ic + , Ic = , Ic \\-", "Z", &s);
    const char *want[] = {"X\t1", "X\t2", "X\t3", "X\t4", "X\t0", "Y\t{", "Y\t}", "Y\t,", "Y\t.", "Z\t+", "Z\t=", "Z\t-"};
    ck_assert_int_eq(s.n, (int)(sizeof want / sizeof want[0]));
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_str_eq(s.items[i], want[i]);
}
END_TEST

/* The dispatcher asks Anywhere first, then the input line's or the panes' bindings
 * (Any pane before the focused pane's): a key bound in both would never reach the
 * second. The overlay's, the compute view's and the experts view's own keys are asked
 * first, and only, while they are shown. */
START_TEST(test_no_binding_is_shadowed)
{
    int n;
    const key_binding *t = keys_table(&n);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) {
            if (i == j || t[i].keycode != t[j].keycode)
                continue;
            int li = t[i].last ? t[i].last : t[i].code, lj = t[j].last ? t[j].last : t[j].code;
            bool overlap = t[i].code <= lj && t[j].code <= li;
            if (!overlap)
                continue;
            keys_context a = t[i].ctx, b = t[j].ctx;
            ck_assert_msg(a != b, "key %s is bound twice in %s", t[i].name, keys_context_get(a)->title);
            /* the help overlay, the compute, experts and patching views ask their own
             * keys first */
            bool shadows = (a == KEYS_ANYWHERE && b != KEYS_HELP && b != KEYS_COMPUTE &&
                            b != KEYS_EXPERTS && b != KEYS_PATCH) ||
                           (a == KEYS_PANES && (b == KEYS_CONV || b == KEYS_TOKENS || b == KEYS_ATTN));
            ck_assert_msg(!shadows, "%s in %s hides the same key in %s", t[i].name, keys_context_get(a)->title,
                          keys_context_get(b)->title);
        }
    }
}
END_TEST

START_TEST(test_find)
{
    const key_binding *b = keys_find(KEYS_ANYWHERE, 3, false);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(b->action, ACT_STOP);
    ck_assert_str_eq(b->name, "Ctrl-C");
    b = keys_find(KEYS_PANES, '7', false);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(b->action, ACT_CHOOSE);
    b = keys_find(KEYS_TOKENS, KEY_LEFT, true);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(b->action, ACT_SEL_PREV);
    /* a character whose value is a key code's is not that key */
    ck_assert_ptr_null(keys_find(KEYS_TOKENS, KEY_LEFT, false));
    ck_assert_ptr_null(keys_find(KEYS_CONV, 'x', false));
    ck_assert_ptr_null(keys_find(KEYS_ATTN, '+', false)); /* top-k is Tokens' */
}
END_TEST

/* A key is named as the help names it: every binding's own name (its .name, as the
 * help and the man page write it) holds keys_name's name for its key. */
START_TEST(test_key_names_as_the_help)
{
    int n;
    const key_binding *t = keys_table(&n);
    int checked = 0;
    for (int i = 0; i < n; i++) {
        if (t[i].last || !t[i].name)
            continue;
        char name[32];
        keys_name(t[i].code, t[i].keycode, name, sizeof name);
        ck_assert_msg(strstr(t[i].name, name) != NULL, "binding %d (%s): keys_name says '%s'", i,
                      t[i].name, name);
        checked++;
    }
    ck_assert_int_gt(checked, 40);
    char name[32];
    keys_name(KEY_F(5), true, name, sizeof name);
    ck_assert_str_eq(name, "F5");
    keys_name(KEY_SR, true, name, sizeof name);
    ck_assert_str_eq(name, "Shift-Up");
    keys_name(24, false, name, sizeof name);
    ck_assert_str_eq(name, "Ctrl-X");
}
END_TEST

/* The properties of an action are the same in every row that binds it (in any
 * context), a key that changes the chat steers (it needs one), and on the input line
 * the rows that steer are the ones whose text says so. */
START_TEST(test_action_properties_agree)
{
    int n;
    const key_binding *t = keys_table(&n);
    for (int i = 0; i < n; i++) {
        ck_assert_msg(!t[i].changes_chat || t[i].steers, "%s in %s changes the chat but does not steer",
                      t[i].name, keys_context_get(t[i].ctx)->title);
        for (int j = 0; j < i; j++) {
            if (t[j].action != t[i].action)
                continue;
            ck_assert_msg(t[i].steers == t[j].steers && t[i].changes_chat == t[j].changes_chat,
                          "%s in %s and %s in %s run the same action with different properties", t[i].name,
                          keys_context_get(t[i].ctx)->title, t[j].name, keys_context_get(t[j].ctx)->title);
        }
        if (t[i].ctx == KEYS_INPUT)
            ck_assert_msg(t[i].steers == !strncmp(t[i].help, "steer:", 6),
                          "the input line's %s: steers is %d, its text '%s'", t[i].name, t[i].steers, t[i].help);
    }
    /* a few rows by key: what the dispatcher did with its lists before they were fields */
    const key_binding *b = keys_find(KEYS_PANES, 'p', false);
    ck_assert(b && b->steers && !b->changes_chat);
    b = keys_find(KEYS_PANES, KEY_BACKSPACE, true);
    ck_assert(b && b->steers && b->changes_chat);
    b = keys_find(KEYS_INPUT, '5', false);
    ck_assert(b && b->steers && b->changes_chat);
    b = keys_find(KEYS_PANES, 's', false);
    ck_assert(b && b->steers && !b->changes_chat);
    b = keys_find(KEYS_PANES, '?', false);
    ck_assert(b && !b->steers && !b->changes_chat);
    b = keys_find(KEYS_ATTN, 'x', false);
    ck_assert(b && !b->steers); /* knocking a head out is not steering the reply */
}
END_TEST

/* Every binding's name is on some line of the overlay's pages. */
static void check_layout_shows_all(const keys_help_layout *l, int cols, int rows)
{
    ck_assert_int_ge(l->n_pages, 1);
    ck_assert_int_le(l->width, cols);
    ck_assert_int_le(l->height, rows);
    ck_assert_int_eq(l->col_start[0], 0);
    ck_assert_int_eq(l->col_start[l->n_columns], l->n_lines);
    for (int c = 0; c < l->n_columns; c++) {
        int lines = l->col_start[c + 1] - l->col_start[c] + (l->col_heading[c] ? 1 : 0);
        ck_assert_msg(lines <= l->col_height, "%dx%d: column %d has %d lines for %d", cols, rows, c, lines,
                      l->col_height);
    }
    /* no text is cut: each line fits the text column, and every text is shown whole */
    for (int k = 0; k < l->n_lines; k++)
        ck_assert_msg((int)strlen(l->lines[k].help) <= l->text_width, "%dx%d: '%s' is wider than %d", cols, rows,
                      l->lines[k].help, l->text_width);
    int n;
    const key_binding *t = keys_table(&n);
    for (int i = 0; i < n; i++) {
        char whole[256] = "";
        for (int k = 0; k < l->n_lines && !strstr(whole, t[i].help); k++) {
            if (!l->lines[k].help[0]) {
                whole[0] = '\0'; /* a heading, or keys whose text starts on the next line */
                continue;
            }
            if (l->lines[k].keys[0] || !whole[0]) /* a text starts */
                snprintf(whole, sizeof whole, "%s", l->lines[k].help);
            else
                snprintf(whole + strlen(whole), sizeof whole - strlen(whole), " %s", l->lines[k].help);
        }
        ck_assert_msg(strstr(whole, t[i].help) != NULL, "%dx%d: the overlay cuts '%s'", cols, rows, t[i].help);
    }
    for (int i = 0; i < n; i++) {
        bool found = false;
        for (int k = 0; k < l->n_lines && !found; k++) {
            const char *keys = l->lines[k].keys;
            size_t len = strlen(t[i].name);
            for (const char *p = strstr(keys, t[i].name); p && !found; p = strstr(p + 1, t[i].name))
                found = (p == keys || p[-1] == ' ') && (p[len] == '\0' || p[len] == ' ');
        }
        ck_assert_msg(found, "%dx%d: the overlay does not show %s (%s)", cols, rows, t[i].name, t[i].help);
    }
}

/* An entry (its keys and its text) is never split across columns unless it is taller
 * than a column, and keys that do not fit the keys column wrap within the column instead
 * of being cut. */
static void check_entries_whole(const keys_help_layout *l, int cols, int rows)
{
    for (int c = 1; c < l->n_columns; c++) {
        int first = l->col_start[c];
        if (!l->lines[first].cont)
            continue;
        int start = first, end = first;
        while (start > 0 && l->lines[start].cont)
            start--;
        while (end + 1 < l->n_lines && l->lines[end + 1].cont)
            end++;
        ck_assert_msg(end - start + 1 > l->col_height - 1,
                      "%dx%d: column %d starts inside the entry of '%s' (%d lines, columns of %d)", cols, rows,
                      c, l->lines[start].keys, end - start + 1, l->col_height);
    }
    for (int k = 0; k < l->n_lines; k++) {
        const keys_help_line *ln = &l->lines[k];
        int room = ln->help[0] ? l->key_width - 1 : l->key_width + l->text_width;
        ck_assert_msg(ln->heading || (int)strlen(ln->keys) <= room, "%dx%d: keys '%s' are wider than %d", cols,
                      rows, ln->keys, room);
    }
}

START_TEST(test_help_entries_whole)
{
    static keys_help_layout l;
    static const int sizes[][2] = {{60, 20}, {80, 24}, {100, 30}, {120, 40}, {50, 12}, {70, 18}, {40, 15}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        keys_help_layout_compute(sizes[i][0], sizes[i][1], &l);
        check_layout_shows_all(&l, sizes[i][0], sizes[i][1]);
        check_entries_whole(&l, sizes[i][0], sizes[i][1]);
    }
}
END_TEST

START_TEST(test_help_layout)
{
    static keys_help_layout l;
    keys_help_layout_compute(80, 24, &l);
    check_layout_shows_all(&l, 80, 24);
    ck_assert_int_eq(l.n_cols, 2);
    keys_help_layout_compute(120, 40, &l);
    check_layout_shows_all(&l, 120, 40);
    /* two pages since the experts view's keys; the panes' sections (up to the compute
     * view's) all on the first */
    ck_assert_int_eq(l.n_pages, 2);
    int compute = 0;
    while (compute < l.n_lines && !(l.lines[compute].heading &&
                                    !strcmp(l.lines[compute].heading, "Compute view")))
        compute++;
    ck_assert_int_ge(l.col_start[2], compute);
    keys_help_layout_compute(50, 12, &l);
    check_layout_shows_all(&l, 50, 12);
    ck_assert_int_eq(l.n_cols, 1);
    ck_assert_int_gt(l.n_pages, 1);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("tui_keys");
    TCase *tc = tcase_create("keys");
    tcase_add_test(tc, test_table_keys_in_man_page);
    tcase_add_test(tc, test_man_item_parser);
    tcase_add_test(tc, test_no_binding_is_shadowed);
    tcase_add_test(tc, test_find);
    tcase_add_test(tc, test_key_names_as_the_help);
    tcase_add_test(tc, test_action_properties_agree);
    tcase_add_test(tc, test_help_layout);
    tcase_add_test(tc, test_help_entries_whole);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(make_suite)
