/* testutil.h — helpers shared by the Check test programs: where the test fixtures and
 * golden files are (tests/data/, see its README), temporary files in a directory of the
 * program's own, a check for loops over many values, and a main() that runs one suite. */
#ifndef LLMCHAT_TESTUTIL_H
#define LLMCHAT_TESTUTIL_H

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The source tree's top directory: LLMCHAT_SRCDIR (set by make check), else the one
 * this test was configured in. */
static inline const char *source_dir(void)
{
    const char *dir = getenv("LLMCHAT_SRCDIR");
    return dir && *dir ? dir : LLMCHAT_TOP_SRCDIR;
}

/* Path of a test fixture: tests/data/NAME, or the bundled model data/models/NAME when
 * tests/data has no such file. A static buffer rotating among 8 slots, so a few can
 * be used at once. */
static inline const char *data_path(const char *name)
{
    static char bufs[8][4096];
    static int slot;
    char *b = bufs[slot++ % 8];
    snprintf(b, sizeof bufs[0], "%s/tests/data/%s", source_dir(), name);
    if (access(b, F_OK) != 0)
        snprintf(b, sizeof bufs[0], "%s/data/models/%s", source_dir(), name);
    return b;
}

/* A temporary file path unique to this process, in TMPDIR: TEST_MAIN points TMPDIR at a
 * directory of the test program's own, removed with everything in it when the program
 * ends, so a test that fails before its cleanup leaves nothing behind. */
static inline const char *temp_path(const char *name)
{
    static char bufs[4][4096];
    static int slot;
    const char *tmp = getenv("TMPDIR");
    char *b = bufs[slot++ % 4];
    snprintf(b, sizeof bufs[0], "%s/llmchat-test-%d-%s", tmp && *tmp ? tmp : "/tmp", (int)getpid(), name);
    return b;
}

/* The whole file at path in a malloc'd buffer of exactly its size (so that a read past
 * its end is caught by the sanitizers); *size receives the size. Fails the test when
 * the file cannot be read. */
static inline unsigned char *read_whole_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
    ck_assert_msg(b != NULL && fread(b, 1, (size_t)n, f) == (size_t)n, "cannot read %s", path);
    fclose(f);
    *size = (size_t)n;
    return b;
}

/* Removes path and, when it is a directory, everything under it (links are removed,
 * not followed). Quietly does what it can: it only tidies up after tests. */
static inline void remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d)) != NULL) {
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                    continue;
                char child[4096];
                if (snprintf(child, sizeof child, "%s/%s", path, e->d_name) < (int)sizeof child)
                    remove_tree(child);
            }
            closedir(d);
        }
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* Makes dir (a buffer of 4096) a new private directory in TMPDIR (or /tmp) and points
 * TMPDIR at it, for temp_path and for the programs the tests start. Returns 0, or -1
 * with a message when it cannot be made. */
static inline int enter_private_temp_dir(char *dir)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, 4096, "%s/llmchat-test.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        perror(dir);
        return -1;
    }
    setenv("TMPDIR", dir, 1);
    return 0;
}

/* ck_assert_msg (a message is required) for a check made over many values (each output of a kernel, each
 * decoded weight): a ck_assert that passes still writes a record to Check's log, a
 * system call, and millions of them were most of the time of the programs that check
 * every value. This one does nothing while expr holds and fails the test as
 * ck_assert_msg does when it does not (evaluating expr again: no side effects). */
#define check_each(expr, ...)                                       \
    do {                                                            \
        if (!(expr))                                                \
            ck_assert_msg(expr, __VA_ARGS__);                       \
    } while (0)

#define TEST_MAIN(suite_fn)                                         \
    int main(void)                                                  \
    {                                                               \
        char temp_dir[4096];                                        \
        if (enter_private_temp_dir(temp_dir) != 0)                  \
            return 99;                                              \
        SRunner *sr = srunner_create(suite_fn());                   \
        srunner_run_all(sr, CK_NORMAL);                             \
        int failed = srunner_ntests_failed(sr);                     \
        srunner_free(sr);                                           \
        remove_tree(temp_dir);                                      \
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;           \
    }

#endif
