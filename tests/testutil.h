/* testutil.h — helpers shared by the Check test programs: where the test fixtures and
 * golden files are (tests/data/, see its README), and a main() that runs one suite. */
#ifndef LLMCHAT_TESTUTIL_H
#define LLMCHAT_TESTUTIL_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
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

/* A temporary file path unique to this process. */
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

#define TEST_MAIN(suite_fn)                                         \
    int main(void)                                                  \
    {                                                               \
        SRunner *sr = srunner_create(suite_fn());                   \
        srunner_run_all(sr, CK_NORMAL);                             \
        int failed = srunner_ntests_failed(sr);                     \
        srunner_free(sr);                                           \
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;           \
    }

#endif
