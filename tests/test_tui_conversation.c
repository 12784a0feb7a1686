/* test_tui_conversation.c — the Conversation pane drawn (src/tui/conversation.c): a
 * pane drawn after every change of a chat (a user turn, a reply streamed token by token
 * through its thinking, the thinking shown and folded again, a branch label, the reply
 * replaced after a rewind, more turns than the window holds, a notice dropped, the
 * window narrower and wide again) shows, character and attribute for character and
 * attribute, what a pane given the same changes and drawn once shows: the lines it
 * keeps counted for each entry are counted again whenever what they depend on changed.
 * Draws into curses windows on a screen that writes to /dev/null. */
#include <stdio.h>
#include <string.h>

#include "curses_window.h"
#include "testutil.h"
#include "tui/conversation.h"

enum { WIN_ROWS = 14, WIN_COLS = 52, WIN_NARROW = 31 };

static const char *const reply_pieces[] = {
    "<think>", "\n", "The", " user", " wants", " a", " story", " about", " a", " cat", ".",
    " Keep", " it", " short", ".", "</think>", "\n\n", "Once", " upon", " a", " time", ",",
    " a", " cat", " named", " Tom", " lived", " in", " a", " big", " house", " by", " the",
    " sea", ".", " He", " liked", " fish", ".",
};
enum { PIECES = sizeof reply_pieces / sizeof reply_pieces[0] };

/* The changes, in order; change k of the script applied to cv. Returns false past the
 * last one. */
static bool change(conv_pane *cv, int k)
{
    static const int pos[4] = {40, 41, 42, 43};
    static const size_t off[4] = {0, 5, 10, 13};
    if (k == 0) {
        conv_add(cv, ENTRY_USER, "Tell me a story about a cat who lived in a big house by the sea.");
        return true;
    }
    if (k == 1) {
        conv_add(cv, ENTRY_ASSISTANT, NULL);
        conv_set_writing(cv, true);
        return true;
    }
    k -= 2;
    if (k < PIECES) {
        conv_stream_token(cv, 20 + k, reply_pieces[k], strlen(reply_pieces[k]));
        return true;
    }
    k -= PIECES;
    switch (k) {
    case 0: conv_set_show_thinking(cv, true); return true;
    case 1: conv_set_show_thinking(cv, false); return true;
    case 2: conv_set_branch(cv, 2, 3); return true;
    case 3: conv_set_reply_tokens(cv, "Once upon a time there was a dog.", pos, off, 4); return true;
    case 4: conv_set_writing(cv, false); return true;
    case 5: conv_add(cv, ENTRY_NOTICE, "[stopped]"); return true;
    case 6:
        conv_add(cv, ENTRY_USER, "And another one, longer this time: a story of a dog, a cat and a "
                                 "bird who went to the park on a sunny day and played all afternoon.");
        return true;
    case 7: conv_add(cv, ENTRY_ASSISTANT, "Sure. The dog ran, the cat sat, the bird sang."); return true;
    case 8: conv_set_branch(cv, 1, 1); return true;
    case 9: return conv_drop_notice(cv, "[stopped]");
    case 10: conv_add(cv, ENTRY_NOTICE, "[the end]"); return true;
    default: return false;
    }
}

static const tui_screen scr = {.utf8 = false, .rows = WIN_ROWS + 2, .cols = WIN_COLS};

/* w's characters with their attributes, row after row, into out (WIN_ROWS x WIN_COLS). */
static void cells_of(WINDOW *w, chtype *out)
{
    for (int y = 0; y < WIN_ROWS; y++) {
        chtype row[WIN_COLS + 1];
        int n = mvwinchnstr(w, y, 0, row, WIN_COLS);
        ck_assert_int_eq(n, WIN_COLS);
        memcpy(out + (size_t)y * WIN_COLS, row, sizeof(chtype) * WIN_COLS);
    }
}

START_TEST(test_drawn_as_fresh)
{
    ck_assert_msg(open_terminal(), "no terminal type (xterm, vt100, dumb) to draw with");
    tui_selection sel = {-1};
    tui_source src = {0};
    WINDOW *wide = newwin(WIN_ROWS, WIN_COLS, 0, 0), *narrow = newwin(WIN_ROWS, WIN_NARROW, 0, 0);
    WINDOW *fresh_w = newwin(WIN_ROWS, WIN_COLS, 0, 0);
    ck_assert(wide && narrow && fresh_w);
    conv_pane *cv = conv_new(&src, &sel);
    int k = 0;
    for (; change(cv, k); k++) {
        if (k % 5 == 4) /* now and then narrower first: every entry wraps again */
            conv_pane_ops.draw(cv, narrow, &scr, false);
        conv_pane_ops.draw(cv, wide, &scr, false);
        conv_pane *fresh = conv_new(&src, &sel);
        for (int j = 0; j <= k; j++)
            change(fresh, j);
        conv_pane_ops.draw(fresh, fresh_w, &scr, false);
        static chtype a[WIN_ROWS * WIN_COLS], b[WIN_ROWS * WIN_COLS];
        cells_of(wide, a);
        cells_of(fresh_w, b);
        for (int i = 0; i < WIN_ROWS * WIN_COLS; i++)
            check_each(a[i] == b[i], "after change %d, row %d column %d: drawn '%c' (attributes %#lx), "
                       "a fresh pane draws '%c' (%#lx)", k, i / WIN_COLS, i % WIN_COLS, (int)(a[i] & A_CHARTEXT),
                       (unsigned long)(a[i] & A_ATTRIBUTES), (int)(b[i] & A_CHARTEXT),
                       (unsigned long)(b[i] & A_ATTRIBUTES));
        conv_free(fresh);
    }
    ck_assert_int_ge(k, PIECES + 12); /* every change ran (conv_drop_notice found its notice) */
    /* the last frame shows the newest turn and the notice at the bottom */
    ck_assert(window_has(wide, "[the end]"));
    if (!window_has(wide, "bird sang.")) {
        char line[256];
        for (int y = 0; y < WIN_ROWS; y++) {
            row_of(wide, y, line, sizeof line);
            fprintf(stderr, "[%s]\n", line);
        }
        ck_abort_msg("the newest reply is not at the bottom");
    }
    conv_free(cv);
    delwin(wide);
    delwin(narrow);
    delwin(fresh_w);
    close_terminal();
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("tui_conversation");
    TCase *tc = tcase_create("drawn");
    tcase_add_test(tc, test_drawn_as_fresh);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(make_suite)
