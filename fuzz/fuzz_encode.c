/* fuzz_encode.c — libFuzzer target: tokenizer_encode on arbitrary bytes with the
 * bundled 512-token vocabulary (which has byte fallback). Checks, besides memory
 * safety: the count asked for first equals the ids written, no control token comes
 * out of text, and decoding the ids gives back the text byte for byte, but for U+2581
 * ("▁", SentencePiece's space), which the tokenizer reads as a space, as SentencePiece
 * and llama.cpp do ("a▁b" is "a b"'s tokens), and which so decodes as one. */
#include "fuzz.h"

#include <stdbool.h>
#include <string.h>

#include "tokenizer.h"

static tokenizer *tok;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    llm_err err;
    if (tokenizer_open(fuzz_source_path("data/models/tok512.bin"), 0, &tok, &err) != LLM_OK) {
        fprintf(stderr, "fuzz_encode: %s\n", err.text);
        exit(1);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    size_t len = strlen(text); /* the text ends at its first NUL, as a C string */

    int need = tokenizer_encode(tok, text, NULL, 0);
    FUZZ_CHECK(need >= 0);
    FUZZ_CHECK(len == 0 ? need == 0 : need > 0);
    int *ids = malloc(sizeof(int) * (size_t)(need + 1));
    FUZZ_CHECK(ids != NULL);
    FUZZ_CHECK(tokenizer_encode(tok, text, ids, need) == need);

    char *back = malloc(len + 2);
    size_t n = 0;
    char piece[256];
    for (int i = 0; i < need; i++) {
        FUZZ_CHECK(ids[i] >= 0 && ids[i] < tokenizer_vocab_size(tok));
        FUZZ_CHECK(!tokenizer_is_control(tok, ids[i]));
        size_t k = tokenizer_decode(tok, i ? ids[i - 1] : TOKEN_BOS, ids[i], piece, sizeof piece);
        FUZZ_CHECK(n + k <= len + 1);
        memcpy(back + n, piece, k);
        n += k;
    }
    char *want = malloc(len + 1);
    FUZZ_CHECK(want != NULL);
    size_t w = 0;
    for (size_t i = 0; i < len; i++) {
        bool space = i + 2 < len && (unsigned char)text[i] == 0xe2 &&
                     (unsigned char)text[i + 1] == 0x96 && (unsigned char)text[i + 2] == 0x81;
        want[w++] = space ? ' ' : text[i];
        i += space ? 2 : 0;
    }
    /* the dummy prefix space comes off with the first piece after BOS */
    FUZZ_CHECK(n == w && memcmp(back, want, w) == 0);
    free(want);
    free(back);
    free(ids);
    free(text);
    return 0;
}
