/* fuzz_bpe_vocab.c — libFuzzer target: the byte-level BPE vocabulary loader
 * (tokenizer_from_gguf with tokenizer.ggml.model "gpt2": tokens, merges, pre) on
 * vocabularies built from the input. The input is lines: the pre-tokenizer's name,
 * then token texts up to a line "--", then merges ("a b"). The 256 GPT-2 byte tokens
 * come first unless the name line starts with '!'. A vocabulary is refused with a
 * message or loads; one that loads must encode the input itself (as text) and a fixed
 * string into ids inside the vocabulary, the count asked for first equal to the ids
 * written. */
#include "fuzz.h"

#include <string.h>

#include "gguf.h"
#include "tokenizer.h"

enum { MAX_LINES = 4096 };

/* GPT-2's character for byte b, as UTF-8 into out (NUL-terminated). */
static void byte_char(int b, char *out)
{
    unsigned cp = (unsigned)b;
    if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174)) {
        unsigned k = 0;
        for (int c = 0; c < b; c++)
            k += !((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || c >= 174);
        cp = 256 + k;
    }
    if (cp < 0x80) {
        out[0] = (char)cp, out[1] = 0;
    } else {
        out[0] = (char)(0xc0 | cp >> 6), out[1] = (char)(0x80 | (cp & 0x3f)), out[2] = 0;
    }
}

static void check_encode(const tokenizer *t, const char *text)
{
    int need = tokenizer_encode(t, text, NULL, 0);
    FUZZ_CHECK(need >= 0);
    int *ids = malloc(sizeof(int) * (size_t)(need + 1));
    FUZZ_CHECK(ids != NULL);
    FUZZ_CHECK(tokenizer_encode(t, text, ids, need) == need);
    for (int i = 0; i < need; i++)
        FUZZ_CHECK(ids[i] >= 0 && ids[i] < tokenizer_vocab_size(t));
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    static char bytes[256][4];
    static const char *lines[MAX_LINES], *tokens[MAX_LINES + 256], *merges[MAX_LINES];
    static size_t tlens[MAX_LINES + 256], mlens[MAX_LINES];
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char *copy = strdup(text);
    int n_lines = 0;
    for (char *s = copy, *nl; s && n_lines < MAX_LINES; s = nl ? nl + 1 : NULL) {
        nl = strchr(s, '\n');
        if (nl)
            *nl = '\0';
        lines[n_lines++] = s;
    }
    const char *pre = n_lines ? lines[0] : "";
    int nt = 0, nm = 0, i = 1;
    if (pre[0] != '!')
        for (int b = 0; b < 256; b++) {
            byte_char(b, bytes[b]);
            tokens[nt] = bytes[b], tlens[nt++] = strlen(bytes[b]);
        }
    else
        pre++;
    for (; i < n_lines && strcmp(lines[i], "--") != 0; i++)
        tokens[nt] = lines[i], tlens[nt++] = strlen(lines[i]);
    for (i++; i < n_lines; i++)
        merges[nm] = lines[i], mlens[nm++] = strlen(lines[i]);

    gguf_writer *w = gguf_writer_new(0);
    gguf_writer_add_string(w, "tokenizer.ggml.model", "gpt2");
    gguf_writer_add_string(w, "tokenizer.ggml.pre", pre);
    gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", tokens, tlens, (uint64_t)nt);
    gguf_writer_add_string_array(w, "tokenizer.ggml.merges", merges, mlens, (uint64_t)nm);
    gguf_writer_add_uint32(w, "tokenizer.ggml.bos_token_id", 0);
    gguf_writer_add_uint32(w, "tokenizer.ggml.eos_token_id", 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    llm_err err;
    FUZZ_CHECK(f && gguf_writer_write_header(w, f, "fuzz", &err) == LLM_OK);
    fclose(f);
    gguf_writer_free(w);

    gguf *g = NULL;
    tokenizer *t = NULL;
    if (gguf_parse(buf, len, "fuzz", &g, &err) == LLM_OK) {
        if (tokenizer_from_gguf(g, "fuzz", 0, &t, &err) == LLM_OK) {
            check_encode(t, text);
            check_encode(t, "Hello world! 12345 don't  \n\n x");
            tokenizer_close(t);
        } else {
            FUZZ_CHECK(err.text[0] != '\0');
        }
        gguf_free(g);
    }
    free(buf);
    free(copy);
    free(text);
    return 0;
}
