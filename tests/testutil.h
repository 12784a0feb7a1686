/* testutil.h — helpers shared by the Check test programs: where the shared models and
 * golden files are, and a main() that runs one suite. */
#ifndef LLMCHAT_TESTUTIL_H
#define LLMCHAT_TESTUTIL_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Path of a file under ../shared (LLMCHAT_SHARED overrides), in a static buffer
 * rotating among 8 slots so a few can be used at once. */
static inline const char *shared_path(const char *rel)
{
    static char bufs[8][4096];
    static int slot;
    const char *root = getenv("LLMCHAT_SHARED");
    char *b = bufs[slot++ % 8];
    snprintf(b, sizeof bufs[0], "%s/%s", root && *root ? root : "../shared", rel);
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
