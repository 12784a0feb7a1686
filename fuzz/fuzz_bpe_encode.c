/* fuzz_bpe_encode.c — libFuzzer target: the byte-level BPE encoder (tokenizer_bpe.c) on
 * arbitrary bytes with Llama 3's vocabulary (tests/data/llama3-vocab.gguf.gz, read
 * through gzip once). Checks, besides memory safety: the count asked for first equals
 * the ids written, every id is a normal token (text never yields a special token), and
 * when the text is well-formed UTF-8 decoding the ids gives it back byte for byte. */
#include "fuzz.h"

#include <string.h>

#include "gguf.h"
#include "tokenizer.h"

static tokenizer *tok;
static unsigned char *vocab_buf;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "gzip -dc '%s'", fuzz_source_path("tests/data/llama3-vocab.gguf.gz"));
    FILE *p = popen(cmd, "r");
    size_t cap = 16u << 20, n = 0, got;
    vocab_buf = malloc(cap);
    while (p && vocab_buf && (got = fread(vocab_buf + n, 1, cap - n, p)) > 0)
        n += got;
    gguf *g = NULL;
    llm_err err = {"cannot read the vocabulary through gzip"};
    if (!p || pclose(p) != 0 || gguf_parse(vocab_buf, n, "llama3-vocab.gguf", &g, &err) != LLM_OK ||
        tokenizer_from_gguf(g, "llama3-vocab.gguf", 0, &tok, &err) != LLM_OK) {
        fprintf(stderr, "fuzz_bpe_encode: %s\n", err.text);
        exit(1);
    }
    gguf_free(g);
    return 0;
}

/* Well-formed UTF-8: no overlongs, surrogates or code points past U+10FFFF. */
static bool utf8_ok(const unsigned char *s, size_t len)
{
    for (size_t i = 0; i < len;) {
        unsigned c = s[i], n = c < 0x80 ? 1 : c >= 0xc2 && c < 0xe0 ? 2 : c >= 0xe0 && c < 0xf0 ? 3
                                : c >= 0xf0 && c < 0xf5 ? 4 : 0;
        if (n == 0 || i + n > len)
            return false;
        unsigned v = n == 1 ? c : c & (0x7fu >> n);
        for (unsigned k = 1; k < n; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
            v = v << 6 | (s[i + k] & 0x3fu);
        }
        if ((n == 3 && v < 0x800) || (n == 4 && (v < 0x10000 || v > 0x10ffff)) ||
            (v >= 0xd800 && v < 0xe000))
            return false;
        i += n;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    size_t len = strlen(text);

    int need = tokenizer_encode(tok, text, NULL, 0);
    FUZZ_CHECK(need >= 0);
    FUZZ_CHECK(len == 0 ? need == 0 : need > 0);
    int *ids = malloc(sizeof(int) * (size_t)(need + 1));
    FUZZ_CHECK(ids != NULL);
    FUZZ_CHECK(tokenizer_encode(tok, text, ids, need) == need);

    char *back = malloc(3 * len + 2);
    size_t n = 0;
    char piece[TOKENIZER_PIECE_MAX + 1];
    for (int i = 0; i < need; i++) {
        FUZZ_CHECK(ids[i] >= 0 && ids[i] < tokenizer_vocab_size(tok));
        FUZZ_CHECK(tokenizer_token_type(tok, ids[i]) == 1);
        size_t k = tokenizer_decode(tok, i ? ids[i - 1] : tokenizer_bos(tok), ids[i], piece, sizeof piece);
        FUZZ_CHECK(n + k <= 3 * len + 1); /* U+FFFD (3 bytes) is the most a byte becomes */
        memcpy(back + n, piece, k);
        n += k;
    }
    if (utf8_ok((const unsigned char *)text, len))
        FUZZ_CHECK(n == len && memcmp(back, text, len) == 0);
    free(back);
    free(ids);
    free(text);
    return 0;
}
