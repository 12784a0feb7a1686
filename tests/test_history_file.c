/* test_history_file.c — the line editor's history saved at the end of a session
 * (src/app/history_file.c): this session's lines go after those another session wrote
 * meanwhile (GNU readline appends), at most max_lines stay, and a disk that fills
 * during the append (RLIMIT_FSIZE, SIGXFSZ ignored) leaves the file as it was, with no
 * half line. */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#ifdef HAVE_LIBEDIT
#include <editline/readline.h>
#else
#include <readline/history.h>
#endif

#include "history_file.h"
#include "testutil.h"

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

static char *read_text(const char *path)
{
    size_t n;
    unsigned char *b = read_whole_file(path, &n);
    ck_assert_ptr_nonnull(b);
    char *text = malloc(n + 1);
    ck_assert_ptr_nonnull(text);
    memcpy(text, b, n);
    text[n] = '\0';
    free(b);
    return text;
}

START_TEST(test_appends_after_other_sessions)
{
    const char *path = temp_path("history");
    using_history();
    clear_history();
    stifle_history(100);
    write_text(path, "old one\nold two\n");
    read_history(path);
    add_history("mine one");
    add_history("mine two");
    /* another session ended meanwhile and appended its line */
    write_text(path, "old one\nold two\ntheirs\n");
    ck_assert_int_eq(history_file_save(path, 2, 100), 0);
    char *text = read_text(path);
#ifdef HAVE_LIBEDIT
    ck_assert_ptr_nonnull(strstr(text, "mine")); /* libedit rewrites the file whole, its own way */
#else
    ck_assert_str_eq(text, "old one\nold two\ntheirs\nmine one\nmine two\n");
#endif
    free(text);
}
END_TEST

#ifndef HAVE_LIBEDIT
START_TEST(test_keeps_max_lines)
{
    const char *path = temp_path("history-max");
    using_history();
    clear_history();
    write_text(path, "a\nb\nc\n");
    add_history("d");
    add_history("e");
    ck_assert_int_eq(history_file_save(path, 2, 3), 0);
    char *text = read_text(path);
    ck_assert_str_eq(text, "c\nd\ne\n");
    free(text);
}
END_TEST

START_TEST(test_full_disk_leaves_the_file_whole)
{
    const char *path = temp_path("history-full");
    using_history();
    clear_history();
    write_text(path, "kept line\n");
    char long_line[9000];
    memset(long_line, 'x', sizeof long_line - 1);
    long_line[sizeof long_line - 1] = '\0';
    add_history(long_line);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit old, small = {.rlim_cur = 4096, .rlim_max = RLIM_INFINITY};
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    small.rlim_max = old.rlim_max;
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
    int e = history_file_save(path, 1, 100);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
    ck_assert_int_ne(e, 0);
    char *text = read_text(path);
    ck_assert_str_eq(text, "kept line\n");
    free(text);
}
END_TEST
#endif

static Suite *history_file_suite(void)
{
    Suite *s = suite_create("history_file");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_appends_after_other_sessions);
#ifndef HAVE_LIBEDIT
    tcase_add_test(tc, test_keeps_max_lines);
    tcase_add_test(tc, test_full_disk_leaves_the_file_whole);
#endif
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(history_file_suite)
