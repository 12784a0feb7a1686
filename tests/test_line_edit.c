/* test_line_edit.c — the TUI's own input line (tui/line_edit.h, used where libedit is
 * the readline): typing and the cursor over UTF-8 text, the deletion and kill keys, the
 * history walk with Up and Down (the line being typed comes back), the reverse search
 * (its prompt, the next match, failing, Backspace, Ctrl-G, a key that ends it), taking
 * a line, and a line of a megabyte typed a character at a time. */
#include <string.h>

#include "testutil.h"
#include "tui/line_edit.h"

static const char *lines[] = {"tell me a story", "the dog ran", "a story about a cat"};
static int n_lines;

static int count(void *ctx)
{
    (void)ctx;
    return n_lines;
}

static const char *line(void *ctx, int i)
{
    (void)ctx;
    return i >= 0 && i < n_lines ? lines[i] : NULL;
}

static line_edit *new_edit(int history)
{
    n_lines = history;
    line_history h = {.count = count, .line = line};
    line_edit *e = line_edit_new(&h);
    ck_assert_ptr_nonnull(e);
    return e;
}

static void type(line_edit *e, const char *s)
{
    /* one UTF-8 character at a time, as the TUI hands them over */
    while (*s) {
        size_t n = 1;
        while (((unsigned char)s[n] & 0xc0) == 0x80)
            n++;
        ck_assert(line_edit_type(e, s, n));
        s += n;
    }
}

static void cmd(line_edit *e, line_command c)
{
    ck_assert(line_edit_command(e, c));
}

/* The line is `want`, the cursor at byte `point`. */
static void check(const line_edit *e, const char *want, size_t point)
{
    size_t len, p;
    const char *s = line_edit_text(e, &len, &p);
    ck_assert_str_eq(s, want);
    ck_assert_uint_eq(len, strlen(want));
    ck_assert_uint_eq(p, point);
}

START_TEST(test_typing_and_cursor)
{
    line_edit *e = new_edit(0);
    check(e, "", 0);
    ck_assert_ptr_null(line_edit_prompt(e));
    type(e, "héllo 中");
    check(e, "héllo 中", 10);
    cmd(e, LINE_LEFT); /* over the 3 bytes of 中 */
    check(e, "héllo 中", 7);
    cmd(e, LINE_HOME);
    cmd(e, LINE_RIGHT);
    cmd(e, LINE_RIGHT); /* over the 2 bytes of é */
    check(e, "héllo 中", 3);
    type(e, "X");
    check(e, "héXllo 中", 4);
    cmd(e, LINE_BACKSPACE);
    cmd(e, LINE_BACKSPACE);
    check(e, "hllo 中", 1);
    cmd(e, LINE_END);
    cmd(e, LINE_RIGHT); /* at the end: stays */
    check(e, "hllo 中", 8);
    cmd(e, LINE_LEFT);
    cmd(e, LINE_DELETE);
    check(e, "hllo ", 5);
    cmd(e, LINE_DELETE); /* at the end: nothing */
    cmd(e, LINE_HOME);
    cmd(e, LINE_LEFT);
    cmd(e, LINE_BACKSPACE); /* at the start: nothing */
    check(e, "hllo ", 0);
    line_edit_free(e);
    line_edit_free(NULL);
}
END_TEST

START_TEST(test_kills)
{
    line_edit *e = new_edit(0);
    type(e, "one two  three");
    cmd(e, LINE_KILL_WORD);
    check(e, "one two  ", 9);
    cmd(e, LINE_KILL_WORD); /* the blanks before the cursor, then the word */
    check(e, "one ", 4);
    type(e, "four five");
    cmd(e, LINE_HOME);
    cmd(e, LINE_RIGHT);
    cmd(e, LINE_RIGHT);
    cmd(e, LINE_KILL_END);
    check(e, "on", 2);
    type(e, "ce more");
    cmd(e, LINE_LEFT);
    cmd(e, LINE_LEFT);
    cmd(e, LINE_KILL_START);
    check(e, "re", 0);
    line_edit_free(e);
}
END_TEST

START_TEST(test_history_walk)
{
    line_edit *e = new_edit(3);
    type(e, "draft");
    cmd(e, LINE_NEXT); /* not walking: nothing */
    check(e, "draft", 5);
    cmd(e, LINE_PREV);
    check(e, "a story about a cat", 19);
    cmd(e, LINE_PREV);
    cmd(e, LINE_PREV);
    check(e, "tell me a story", 15);
    cmd(e, LINE_PREV); /* the oldest: stays */
    check(e, "tell me a story", 15);
    cmd(e, LINE_NEXT);
    check(e, "the dog ran", 11);
    cmd(e, LINE_NEXT);
    cmd(e, LINE_NEXT); /* past the newest: the line being typed again */
    check(e, "draft", 5);
    cmd(e, LINE_PREV);
    type(e, "!");
    char *got = line_edit_take(e);
    ck_assert_str_eq(got, "a story about a cat!");
    free(got);
    check(e, "", 0);
    cmd(e, LINE_PREV); /* the walk starts again at the newest */
    check(e, "a story about a cat", 19);
    line_edit_free(e);

    e = new_edit(0);
    cmd(e, LINE_PREV); /* no history: nothing */
    check(e, "", 0);
    line_edit_free(e);
}
END_TEST

START_TEST(test_search)
{
    line_edit *e = new_edit(3);
    type(e, "typed");
    cmd(e, LINE_SEARCH);
    ck_assert_str_eq(line_edit_prompt(e), "(reverse-i-search)`': ");
    type(e, "sto");
    ck_assert_str_eq(line_edit_prompt(e), "(reverse-i-search)`sto': ");
    check(e, "a story about a cat", 2);
    cmd(e, LINE_SEARCH); /* the next older match */
    check(e, "tell me a story", 10);
    cmd(e, LINE_SEARCH); /* none older: it fails, the line stays */
    ck_assert_str_eq(line_edit_prompt(e), "(failed reverse-i-search)`sto': ");
    check(e, "tell me a story", 10);
    type(e, "x");
    ck_assert_str_eq(line_edit_prompt(e), "(failed reverse-i-search)`stox': ");
    cmd(e, LINE_BACKSPACE); /* the search string loses x and searches from the newest */
    ck_assert_str_eq(line_edit_prompt(e), "(reverse-i-search)`sto': ");
    check(e, "a story about a cat", 2);
    cmd(e, LINE_CANCEL); /* Ctrl-G: the line as before the search */
    ck_assert_ptr_null(line_edit_prompt(e));
    check(e, "typed", 5);

    cmd(e, LINE_SEARCH);
    type(e, "dog");
    check(e, "the dog ran", 4);
    cmd(e, LINE_END); /* ends the search on its line, then acts */
    ck_assert_ptr_null(line_edit_prompt(e));
    check(e, "the dog ran", 11);
    cmd(e, LINE_PREV); /* the walk goes on from the line found */
    check(e, "tell me a story", 15);
    cmd(e, LINE_NEXT);
    cmd(e, LINE_NEXT);
    cmd(e, LINE_NEXT); /* and ends on the line typed before the search */
    check(e, "typed", 5);

    cmd(e, LINE_SEARCH);
    type(e, "cat");
    char *got = line_edit_take(e); /* Enter takes the line found */
    ck_assert_str_eq(got, "a story about a cat");
    free(got);
    ck_assert_ptr_null(line_edit_prompt(e));
    check(e, "", 0);
    line_edit_free(e);
}
END_TEST

/* A pasted megabyte arrives a character at a time: linear, not quadratic. */
START_TEST(test_long_line)
{
    line_edit *e = new_edit(0);
    enum { N = 1 << 20 };
    for (int i = 0; i < N; i++)
        ck_assert(line_edit_type(e, "abcdefgh" + i % 8, 1));
    size_t len, point;
    const char *s = line_edit_text(e, &len, &point);
    ck_assert_uint_eq(len, N);
    ck_assert_uint_eq(point, N);
    ck_assert_int_eq(s[N - 1], 'h');
    ck_assert_int_eq(s[N], '\0');
    char *got = line_edit_take(e);
    ck_assert_uint_eq(strlen(got), N);
    free(got);
    line_edit_free(e);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("line_edit");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_typing_and_cursor);
    tcase_add_test(tc, test_kills);
    tcase_add_test(tc, test_history_walk);
    tcase_add_test(tc, test_search);
    suite_add_tcase(s, tc);
    TCase *lim = tcase_create("limits");
    tcase_add_test(lim, test_long_line);
    suite_add_tcase(s, lim);
    return s;
}

TEST_MAIN(make_suite)
