/* fuzz_tokenizer.c — libFuzzer target: loading a llama2.c tokenizer.bin from
 * arbitrary bytes (tokenizer_open on an in-memory file). A file that loads must then
 * encode and decode text without fault: every id it gives is inside the vocabulary,
 * and every id decodes. */
#include "fuzz.h"

#include <string.h>

#include "tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_memfile(data, size, path, sizeof path);
    if (fd < 0)
        return 0;
    tokenizer *t;
    llm_err err;
    if (tokenizer_open(path, 0, &t, &err) != LLM_OK) {
        FUZZ_CHECK(t == NULL);
        FUZZ_CHECK(strlen(err.text) > 0);
        close(fd);
        return 0;
    }
    close(fd);
    int n_vocab = tokenizer_vocab_size(t);
    FUZZ_CHECK(n_vocab >= 3);
    static const char text[] = "Hello world! <s> [INST] caf\xc3\xa9 \xff\n\t 123";
    int ids[256];
    int n = tokenizer_encode(t, text, ids, 256);
    FUZZ_CHECK(n >= 0 && n <= 256);
    char buf[512];
    for (int i = 0; i < n; i++) {
        FUZZ_CHECK(ids[i] >= 0 && ids[i] < n_vocab);
        tokenizer_decode(t, i ? ids[i - 1] : TOKEN_BOS, ids[i], buf, sizeof buf);
    }
    for (int id = 0; id < n_vocab && id < 4096; id++) {
        tokenizer_piece(t, id);
        tokenizer_score(t, id);
        tokenizer_byte(t, id);
        size_t len = tokenizer_decode(t, TOKEN_BOS, id, buf, sizeof buf);
        FUZZ_CHECK(len < sizeof buf && buf[len] == '\0');
    }
    tokenizer_close(t);
    return 0;
}
