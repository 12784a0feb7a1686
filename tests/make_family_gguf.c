/* make_family_gguf.c — writes the tiny random-weight model of one family (family_gguf.h)
 * for the end-to-end tests, which need one without numpy:
 *     make_family_gguf NAME OUT.gguf [VOCAB.gguf] [--arch ARCH | --type TYPE]
 * NAME is one of family_gguf.h's shapes (llama, llama256, qwen2, qwen3, phi3,
 * phi3-partial, gemma, gemma2, gemma3); VOCAB's tokenizer.* keys (and chat template) are
 * copied in; --arch writes another general.architecture (a file llmchat must refuse);
 * --type writes the matrices as TYPE (F32, F16, BF16, Q8_0, or random blocks of Q4_0,
 * Q4_1, Q5_0, Q5_1, Q2_K ... Q6_K, MXFP4: a name as llama.cpp writes it). Exit status 0, or 1
 * with a message. */
#include <stdio.h>

#include "family_gguf.h"

int main(int argc, char **argv)
{
    family_edit e = {0};
    if (argc >= 5 && !strcmp(argv[argc - 2], "--arch")) {
        e.string_key = "general.architecture";
        e.string_value = argv[argc - 1];
        argc -= 2;
    } else if (argc >= 5 && !strcmp(argv[argc - 2], "--type")) {
        uint32_t t = 0;
        while (t < GGML_TYPE_LIMIT &&
               !(ggml_type_get(t) && !strcmp(ggml_type_get(t)->name, argv[argc - 1])))
            t++;
        bool writable = family_halves(t) || t == GGML_TYPE_F32 || t == GGML_TYPE_F16 ||
                        t == GGML_TYPE_BF16 || t == GGML_TYPE_Q8_0;
        if (t == GGML_TYPE_LIMIT || !writable) {
            fprintf(stderr, "make_family_gguf: cannot write type '%s'\n", argv[argc - 1]);
            return 1;
        }
        e.type = t;
        argc -= 2;
    }
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: make_family_gguf NAME OUT.gguf [VOCAB.gguf] [--arch ARCH | --type TYPE]\n");
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
