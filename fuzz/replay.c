/* replay.c — a plain main() for the fuzz targets, without libFuzzer: feeds every
 * file named on the command line (a directory: each regular file in it, in name
 * order) to LLVMFuzzerTestOneInput once. `make check` builds each target with it and
 * replays the corpus under fuzz/corpus/, so every input that once crashed a target
 * stays a regression test in the normal build (and under the sanitizers in CI). */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fprintf(stderr, "replay: %s: out of memory\n", path);
            fclose(f);
            return -1;
        }
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        cap *= 2;
        uint8_t *grown = realloc(buf, cap);
        if (!grown)
            free(buf);
        buf = grown;
    }
    fclose(f);
    /* an exact-size copy, so that reading past the input is caught under ASan */
    uint8_t *exact = malloc(n ? n : 1);
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

static int filter_regular(const struct dirent *d) { return d->d_name[0] != '.'; }

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 2;
    }
    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    int count = 0, failed = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            failed++;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            failed += replay_file(argv[i]) != 0;
            count++;
            continue;
        }
        struct dirent **names;
        int n = scandir(argv[i], &names, filter_regular, alphasort);
        if (n < 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            failed++;
            continue;
        }
        for (int k = 0; k < n; k++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], names[k]->d_name);
            free(names[k]);
            failed += replay_file(path) != 0;
            count++;
        }
        free(names);
    }
    fprintf(stderr, "replay: %d inputs, %d unreadable\n", count, failed);
    return failed ? 1 : 0;
}
