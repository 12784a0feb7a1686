/* make_family_gguf.c — writes the tiny random-weight model of one family (family_gguf.h)
 * for the end-to-end tests, which need one without numpy:
 *     make_family_gguf NAME OUT.gguf [VOCAB.gguf] [--arch ARCH]
 * NAME is one of family_gguf.h's shapes (llama, qwen2, qwen3, phi3, phi3-partial, gemma,
 * gemma2, gemma3); VOCAB's tokenizer.* keys (and chat template) are copied in; --arch
 * writes another general.architecture (a file llmchat must refuse). Exit status 0, or
 * 1 with a message. */
#include <stdio.h>

#include "family_gguf.h"

int main(int argc, char **argv)
{
    family_edit e = {0};
    if (argc >= 5 && !strcmp(argv[argc - 2], "--arch")) {
        e.string_key = "general.architecture";
        e.string_value = argv[argc - 1];
        argc -= 2;
    }
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: make_family_gguf NAME OUT.gguf [VOCAB.gguf] [--arch ARCH]\n");
        return 1;
    }
    if (!family_shape_find(argv[1])) {
        fprintf(stderr, "make_family_gguf: no family shape '%s'\n", argv[1]);
        return 1;
    }
    if (!family_gguf_write(argv[2], argv[1], &e, argc == 4 ? argv[3] : NULL)) {
        fprintf(stderr, "make_family_gguf: cannot write %s (or read %s)\n", argv[2],
                argc == 4 ? argv[3] : "-");
        return 1;
    }
    return 0;
}
