/* make_bad_gguf.c — writes the hostile GGUF variants of gguf_bad.h into a directory,
 * for the end-to-end tests: make_bad_gguf STORIES260K.GGUF OUTDIR writes
 * OUTDIR/stories260K-NAME.gguf for every variant. Exit status 0, or 1 with a message. */
#include <stdio.h>

#include "gguf_bad.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: make_bad_gguf STORIES260K.GGUF OUTDIR\n");
        return 1;
    }
    FILE *f = fopen(argv[1], "rb");
    static unsigned char src[STORIES_GGUF_BYTES + 1];
    size_t n = f ? fread(src, 1, sizeof src, f) : 0;
    if (f)
        fclose(f);
    for (size_t i = 0; i < sizeof gguf_bad_variants / sizeof gguf_bad_variants[0]; i++) {
        bad_buf b;
        if (!gguf_bad_make(gguf_bad_variants[i].name, src, n, &b)) {
            fprintf(stderr, "make_bad_gguf: %s is not stories260K.gguf\n", argv[1]);
            return 1;
        }
        char path[4096];
        snprintf(path, sizeof path, "%s/stories260K-%s.gguf", argv[2], gguf_bad_variants[i].name);
        FILE *o = fopen(path, "wb");
        if (!o || fwrite(b.p, 1, b.n, o) != b.n || fclose(o) != 0) {
            fprintf(stderr, "make_bad_gguf: cannot write %s\n", path);
            return 1;
        }
        free(b.p);
    }
    return 0;
}
