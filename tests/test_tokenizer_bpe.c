/* test_tokenizer_bpe.c — the byte-level BPE tokenizer (tokenizer_bpe.c behind
 * tokenizer.h): 2,420 strings against the ids llama.cpp's llama-tokenize and two
 * JavaScript tokenizers all give, on Llama 3's vocabulary (llama-bpe) and GPT-2's
 * (gpt-2), and llama-tokenize's on GPT-2's merges under SmolLM's pre-tokenizer
 * (tests/data/golden/{llama3,gpt2,smollm}_bpe.jsonl.gz, see tests/data/README.md), StarCoder's,
 * Refact's and MPT's vocabularies (which lack some bytes) on llama.cpp's cases, decoding back,
 * special-token spellings in text, the ids read from the file, and vocabularies that
 * must be refused with a clear message. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf.h"
#include "gguf_copy.h"
#include "jsonl.h"
#include "testutil.h"
#include "tokenizer.h"

/* A decompressed tests/data/NAME.gz (make check decompresses them into the build tree). */
static const char *built_path(const char *name)
{
    static char path[4096];
    const char *dir = getenv("LLMCHAT_BUILDDIR");
    snprintf(path, sizeof path, "%s/tests/%s", dir && *dir ? dir : ".", name);
    return path;
}

static const char *built_vocab(const char *name)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s", built_path(name));
    return path;
}

static tokenizer *open_vocab(const char *name)
{
    tokenizer *t = NULL;
    llm_err err = {""};
    llm_status st = tokenizer_open(name[0] == '/' ? name : built_vocab(name), 0, &t, &err);
    ck_assert_msg(st == LLM_OK, "%s", err.text);
    return t;
}

static tokenizer *open_llama3(void)
{
    return open_vocab("llama3-vocab.gguf");
}

static int *encode_alloc(const tokenizer *t, const char *text, int *n)
{
    int need = tokenizer_encode(t, text, NULL, 0);
    check_each(need >= 0, "encoding failed (%d)", need);
    int *ids = malloc((size_t)(need + 1) * sizeof *ids);
    *n = tokenizer_encode(t, text, ids, need);
    check_each(*n == need, "%d ids, the count said %d", *n, need);
    return ids;
}

/* The ids' text (tokenizer_decode of each in turn, after BOS), malloc'd. */
static char *decode_all(const tokenizer *t, const int *ids, int n)
{
    size_t len = 0;
    char *s = malloc((size_t)n * (TOKENIZER_PIECE_MAX + 1) + 1);
    int prev = tokenizer_bos(t);
    for (int i = 0; i < n; i++) {
        len += tokenizer_decode(t, prev, ids[i], s + len, TOKENIZER_PIECE_MAX + 1);
        prev = ids[i];
    }
    s[len] = '\0';
    return s;
}

/* ---- core ---- */

/* Every line of golden file `golden` (a path) encodes to its ids with vocabulary
 * `vocab` and decodes back to its text; it has n_lines lines. */
static void check_golden_file(const char *vocab, const char *golden, int n_lines)
{
    FILE *f = fopen(golden, "r");
    const char *name = strrchr(golden, '/') ? strrchr(golden, '/') + 1 : golden;
    char shown[256];
    snprintf(shown, sizeof shown, "%s", name); /* open_vocab reuses built_path's buffer */
    tokenizer *t = open_vocab(vocab);
    ck_assert_ptr_nonnull(f);
    char *line = NULL, *text = malloc(1 << 20);
    size_t cap = 0;
    double *want = malloc(sizeof(double) * 65536);
    int lines = 0, matched = 0, first_bad = 0, round_trips = 0;
    while (getline(&line, &cap, f) > 0) {
        lines++;
        ck_assert(jsonl_string(line, "text", text, 1 << 20));
        int n_want = jsonl_numbers(line, "ids", want, 65536), n;
        check_each(n_want >= 0, "golden line %d: no ids", lines);
        int *ids = encode_alloc(t, text, &n);
        bool ok = n == n_want;
        for (int i = 0; ok && i < n; i++)
            ok = ids[i] == (int)want[i];
        matched += ok;
        if (!ok && !first_bad)
            first_bad = lines;
        char *back = decode_all(t, ids, n);
        round_trips += strcmp(back, text) == 0;
        free(back);
        free(ids);
    }
    fclose(f);
    free(line);
    free(text);
    free(want);
    fprintf(stderr, "%s on %s: %d/%d match the golden ids; %d decode back to the text\n", shown,
            vocab, matched, lines, round_trips);
    ck_assert_int_eq(lines, n_lines);
    ck_assert_msg(matched == lines, "%d/%d goldens match; the first mismatch is line %d", matched,
                  lines, first_bad);
    ck_assert_int_eq(round_trips, lines); /* every golden text is valid UTF-8 */
    tokenizer_close(t);
}

/* The whole file at path, NUL-terminated; *size its bytes. */
static char *text_of(const char *path, size_t *size)
{
    unsigned char *raw = read_whole_file(path, size);
    char *text = malloc(*size + 1);
    ck_assert_ptr_nonnull(text);
    memcpy(text, raw, *size);
    text[*size] = '\0';
    free(raw);
    return text;
}

/* llama.cpp's own tokenizer test cases (its models/ggml-vocab-NAME.gguf.inp and .out:
 * texts separated by "\n__ggml_vocab_test__\n", then one line of ids each, no BOS) give
 * the same ids with vocabulary `vocab` (a path); there are n_cases. */
static void check_llamacpp_cases(const char *vocab, const char *cases, int n_cases)
{
    char name[512];
    snprintf(name, sizeof name, "%s.inp", cases);
    size_t in_size, out_size;
    char *in = text_of(data_path(name), &in_size);
    snprintf(name, sizeof name, "%s.out", cases);
    char *out = text_of(data_path(name), &out_size);
    tokenizer *t = NULL;
    llm_err err = {""};
    ck_assert_msg(tokenizer_open(vocab, 0, &t, &err) == LLM_OK, "%s", err.text);
    /* as llama.cpp's test-tokenizer-0 reads them: texts separated by sep, the last one
     * (when not empty) ended by the file */
    static const char sep[] = "\n__ggml_vocab_test__\n";
    char *text = in, *line = out, *stop = in + in_size;
    int cases_seen = 0, matched = 0;
    while (text < stop) {
        char *end = strstr(text, sep), *eol = strchr(line, '\n');
        ck_assert_msg(eol != NULL, "%s.out: fewer lines than texts", cases);
        if (!end)
            end = stop;
        *end = '\0', *eol = '\0';
        int n, want[4096], n_want = 0;
        for (char *p = line, *q; n_want < 4096; p = q) {
            long v = strtol(p, &q, 10);
            if (q == p)
                break;
            want[n_want++] = (int)v;
        }
        int *ids = encode_alloc(t, text, &n);
        bool ok = n == n_want;
        for (int i = 0; ok && i < n; i++)
            ok = ids[i] == want[i];
        if (!ok)
            fprintf(stderr, "%s case %d: %d ids, llama.cpp's test gives %d\n", cases,
                    cases_seen + 1, n, n_want);
        matched += ok;
        cases_seen++;
        free(ids);
        text = end == stop ? stop : end + strlen(sep);
        line = eol + 1;
    }
    fprintf(stderr, "%s: %d/%d of llama.cpp's cases match\n", cases, matched, cases_seen);
    ck_assert_int_eq(cases_seen, n_cases);
    ck_assert_int_eq(matched, cases_seen);
    tokenizer_close(t);
    free(in);
    free(out);
}

/* golden: tests/data/golden/NAME.gz, decompressed into the build tree by make check */
static void check_goldens(const char *vocab, const char *golden)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", built_path(golden));
    check_golden_file(vocab, path, 2420);
}

START_TEST(test_llama3_goldens)
{
    check_goldens("llama3-vocab.gguf", "llama3_bpe.jsonl");
}
END_TEST

START_TEST(test_gpt2_goldens)
{
    check_goldens("gpt2-vocab.gguf", "gpt2_bpe.jsonl");
}
END_TEST

/* GPT-2's merges under SmolLM's pre-tokenizer (every digit alone) */
START_TEST(test_smollm_goldens)
{
    check_goldens("smollm-pre-vocab.gguf", "smollm_bpe.jsonl");
}
END_TEST

/* The byte-level vocabularies that lack tokens for some bytes: StarCoder's and Refact's
 * (the `starcoder` and `refact` pre-tokenizers) and MPT's (`mpt`), each cut to what its
 * texts reach (make_reduced_vocab.py), on llama.cpp's own 46 test cases for it, and on
 * texts holding the bytes they lack (golden/lacking_bytes.jsonl: llama-tokenize 0.4.0's
 * ids on the full vocabularies): such a byte (F1, which only planes 4-7 use) is
 * dropped, as llama.cpp drops it, and every other byte keeps its token. */
START_TEST(test_vocabularies_lacking_bytes)
{
    static const char *const names[] = {"starcoder", "refact", "mpt"};
    for (int v = 0; v < 3; v++) {
        char vocab[4096], cases[256];
        snprintf(cases, sizeof cases, "%s-vocab.gguf", names[v]);
        snprintf(vocab, sizeof vocab, "%s", built_vocab(cases)); /* open_vocab reuses its buffer */
        snprintf(cases, sizeof cases, "llamacpp-vocab/ggml-vocab-%s.gguf", names[v]);
        check_llamacpp_cases(vocab, cases, 46);

        FILE *f = fopen(data_path("golden/lacking_bytes.jsonl"), "r");
        ck_assert_ptr_nonnull(f);
        tokenizer *t = open_vocab(vocab);
        char *line = NULL, text[4096];
        size_t cap = 0;
        double want[256];
        int lines = 0, dropped = 0;
        while (getline(&line, &cap, f) > 0) {
            lines++;
            ck_assert(jsonl_string(line, "text", text, sizeof text));
            int n_want = jsonl_numbers(line, names[v], want, 256), n;
            ck_assert_int_ge(n_want, 1);
            int *ids = encode_alloc(t, text, &n);
            ck_assert_msg(n == n_want, "%s, line %d: %d ids, llama.cpp gives %d", names[v], lines,
                          n, n_want);
            for (int i = 0; i < n; i++)
                ck_assert_int_eq(ids[i], (int)want[i]);
            /* decoded: the text, but for StarCoder's and Refact's without the F1 bytes */
            char *back = decode_all(t, ids, n);
            bool holds_f1 = strchr(text, '\xf1') != NULL;
            ck_assert_int_eq(strcmp(back, text) != 0, v < 2 && holds_f1);
            dropped += v < 2 && holds_f1;
            free(back);
            free(ids);
        }
        ck_assert_int_eq(lines, 8);
        ck_assert_int_eq(dropped, v < 2 ? 5 : 0); /* five of the texts hold F1 */
        free(line);
        fclose(f);
        tokenizer_close(t);
    }
}
END_TEST

/* The newer families' vocabularies (tests/data/make_hf_vocab.py) against their goldens
 * (make_bpe_goldens.mjs; stored compressed, decompressed by make check): Qwen3's
 * byte-level BPE under the qwen2 pre-tokenizer (llama-tokenize's ids), Phi-4-mini's o200k
 * under gpt-4o (tiktoken's: gpt-tokenizer's o200k_base), Gemma 3's SentencePiece
 * vocabulary without a dummy prefix, with byte fallback and user-defined tokens
 * (llama-tokenize's, which Hugging Face's tokenizer agrees with on every line). */
START_TEST(test_qwen3_goldens)
{
    check_golden_file("qwen3-vocab.gguf", built_path("qwen3_tok.jsonl"), 2444);
}
END_TEST

/* Qwen 3.5's pre-tokenizer ("qwen35": a word keeps its combining marks) on Qwen3's
 * vocabulary, which llama.cpp's own Qwen 3.5 test vocabulary shares (tokens and merges):
 * the ids llama.cpp 0.4.0's llama-tokenize gives for the 2,444 strings (312 of them
 * differ from qwen2's), and llama.cpp's own test cases for that vocabulary
 * (tests/data/llamacpp-vocab/ggml-vocab-qwen35.gguf.inp and .out). */
START_TEST(test_qwen35_goldens)
{
    write_string_variant(built_path("qwen3-vocab.gguf"), "qwen35-vocab.gguf", "tokenizer.ggml.pre",
                         "qwen35");
    char vocab[4096];
    snprintf(vocab, sizeof vocab, "%s", temp_path("qwen35-vocab.gguf"));
    check_golden_file(vocab, built_path("qwen35_tok.jsonl"), 2444);
    check_llamacpp_cases(vocab, "llamacpp-vocab/ggml-vocab-qwen35.gguf", 50);
    unlink(vocab);
}
END_TEST

/* Gemma 4's BPE over SentencePiece's pieces (tokenizer.ggml.model "gemma4": "▁" for a
 * space, merges of UTF-8 characters, "<0xNN>" byte tokens, words split at newlines
 * only), on its vocabulary cut to what the texts reach (tests/data/make_reduced_vocab.py;
 * llama.cpp tokenizes every golden string on it as on the full one): the 2,444 strings'
 * ids from llama.cpp 0.4.0's llama-tokenize, and llama.cpp's own 46 test cases for
 * Gemma 4 (whose ids it made on the full vocabulary). */
START_TEST(test_gemma4_goldens)
{
    check_golden_file("gemma4-vocab.gguf", built_path("gemma4_tok.jsonl"), 2444);
    char vocab[4096];
    snprintf(vocab, sizeof vocab, "%s", built_vocab("gemma4-vocab.gguf"));
    check_llamacpp_cases(vocab, "llamacpp-vocab/ggml-vocab-gemma-4.gguf", 46);
    tokenizer *t = open_vocab("gemma4-vocab.gguf");
    ck_assert(tokenizer_adds_bos(t)); /* llama.cpp 0.4.0 adds Gemma 4's BOS whatever the file says */
    ck_assert_int_eq(tokenizer_bos(t), 2);
    ck_assert_int_eq(tokenizer_eot(t), 106); /* <turn|> */
    tokenizer_close(t);

    /* a gemma4 vocabulary without the <0xNN> byte tokens is refused, saying so */
    const char *bad = write_string_variant(built_path("qwen3-vocab.gguf"), "gemma4-bad.gguf",
                                           "tokenizer.ggml.model", "gemma4");
    llm_err err = {""};
    ck_assert(tokenizer_open(bad, 0, &t, &err) != LLM_OK);
    ck_assert_msg(strstr(err.text, "lacks the tokens of 256 of the 256 bytes"), "%s", err.text);
    unlink(bad);
}
END_TEST

START_TEST(test_phi4_mini_goldens)
{
    check_golden_file("phi4-mini-vocab.gguf", built_path("phi4-mini_tok.jsonl"), 2444);
}
END_TEST

START_TEST(test_gemma3_goldens)
{
    check_golden_file("gemma3-vocab.gguf", built_path("gemma3_tok.jsonl"), 2444);
}
END_TEST

START_TEST(test_llama3_ids_from_the_file)
{
    tokenizer *t = open_llama3();
    ck_assert(tokenizer_is_bpe(t));
    ck_assert_int_eq(tokenizer_vocab_size(t), 128256);
    ck_assert_int_eq(tokenizer_bos(t), 128000);
    ck_assert_int_eq(tokenizer_eos(t), 128001);
    ck_assert_int_eq(tokenizer_eot(t), 128009); /* <|eot_id|>, found by its text */
    ck_assert(tokenizer_adds_bos(t));           /* llama-bpe's default */
    ck_assert(tokenizer_is_eog(t, 128001) && tokenizer_is_eog(t, 128009));
    ck_assert(!tokenizer_is_eog(t, 128006));
    ck_assert_int_eq(tokenizer_special(t, "<|start_header_id|>"), 128006);
    ck_assert_int_eq(tokenizer_special(t, "<|end_header_id|>"), 128007);
    ck_assert_int_eq(tokenizer_token_type(t, 128000), 3);
    ck_assert_int_eq(tokenizer_token_type(t, 9906), 1);
    ck_assert_str_eq(tokenizer_piece(t, 9906), "Hello");
    ck_assert_str_eq(tokenizer_piece(t, 1917), " world"); /* "Ġworld" in the file */
    ck_assert_str_eq(tokenizer_piece(t, 198), "\n");      /* "Ċ" */
    char buf[64];
    /* no dummy prefix: the first piece after BOS keeps its space */
    ck_assert_uint_eq(tokenizer_decode(t, 128000, 1917, buf, sizeof buf), 6);
    ck_assert_str_eq(buf, " world");
    ck_assert_uint_eq(tokenizer_decode(t, 9906, 128009, buf, sizeof buf), 0); /* control */
    tokenizer_close(t);
}
END_TEST

/* User text that spells a special token is text (llama-tokenize --no-parse-special's
 * ids), and invalid UTF-8 becomes U+FFFD as in llama.cpp. */
START_TEST(test_llama3_specials_and_bad_utf8)
{
    tokenizer *t = open_llama3();
    const struct {
        const char *text;
        int ids[8];
        int n;
    } cases[] = {
        {"<|eot_id|>", {27, 91, 68, 354, 851, 91, 29}, 7},
        {"say <|begin_of_text|> now", {37890, 83739, 7413, 3659, 4424, 91, 29, 1457}, 8},
        {"a\xff" "b", {64, 5809, 65}, 3},     /* 5809: U+FFFD */
        {"\xe4\xb8", {10178}, 1},             /* two U+FFFD */
        {"x\xc0\x80y", {87, 188, 88}, 3},     /* an overlong NUL is a NUL */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int n;
        int *ids = encode_alloc(t, cases[k].text, &n);
        ck_assert_int_eq(n, cases[k].n);
        for (int i = 0; i < n; i++) {
            ck_assert_int_eq(ids[i], cases[k].ids[i]);
            ck_assert(!tokenizer_is_control(t, ids[i]));
        }
        free(ids);
    }
    /* a short buffer: the count is still the whole text's */
    int one[1];
    ck_assert_int_eq(tokenizer_encode(t, "say <|begin_of_text|> now", one, 1), 8);
    ck_assert_int_eq(one[0], 37890);
    ck_assert_int_eq(tokenizer_encode(t, "", one, 1), 0);
    tokenizer_close(t);
}
END_TEST

/* ---- limits ---- */

/* A small byte-level vocabulary: the 256 byte pieces (GPT-2 mapped), "ab", "<|end|>",
 * with merges and pre as given (NULL: the key is left out; a pre of "qwen2" followed by
 * a NUL is written as those 6 bytes when pre_nul). */
static void write_bpe_vocab(const char *path, const char *pre, bool pre_nul,
                            const char *const *merges, int n_merges, int drop_byte)
{
    static char mapped[258][8];
    const char *pieces[258];
    size_t lens[258];
    int32_t types[258];
    int n = 0;
    for (int b = 0; b < 256; b++) {
        if (b == drop_byte)
            continue;
        unsigned cp = b;
        if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174)) {
            unsigned k = 0;
            for (int c = 0; c < b; c++)
                k += !((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || c >= 174);
            cp = 256 + k;
        }
        size_t len = jsonl_put_utf8(mapped[n], cp);
        mapped[n][len] = '\0';
        pieces[n] = mapped[n];
        types[n++] = 1;
    }
    pieces[n] = "ab";
    types[n++] = 1;
    pieces[n] = "<|end|>";
    types[n++] = 3;
    for (int i = 0; i < n; i++)
        lens[i] = strlen(pieces[i]);
    gguf_writer *w = gguf_writer_new(0);
    gguf_writer_add_string(w, "tokenizer.ggml.model", "gpt2");
    if (pre)
        gguf_writer_add_string_n(w, "tokenizer.ggml.pre", pre, strlen(pre) + (pre_nul ? 1 : 0));
    gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", pieces, lens, (uint64_t)n);
    gguf_writer_add_int32_array(w, "tokenizer.ggml.token_type", types, (uint64_t)n);
    if (merges) {
        size_t mlens[8];
        for (int i = 0; i < n_merges; i++)
            mlens[i] = strlen(merges[i]);
        gguf_writer_add_string_array(w, "tokenizer.ggml.merges", merges, mlens, (uint64_t)n_merges);
    }
    gguf_writer_add_uint32(w, "tokenizer.ggml.bos_token_id", (uint32_t)(n - 1));
    gguf_writer_add_uint32(w, "tokenizer.ggml.eos_token_id", (uint32_t)(n - 1));
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    llm_err err;
    ck_assert(gguf_writer_write_header(w, f, path, &err) == LLM_OK);
    fclose(f);
    gguf_writer_free(w);
}

START_TEST(test_small_vocab_works)
{
    const char *path = temp_path("bpe-ok.gguf");
    const char *merges[] = {"a b"};
    write_bpe_vocab(path, "gpt-2", false, merges, 1, -1);
    tokenizer *t = NULL;
    llm_err err = {""};
    ck_assert_msg(tokenizer_open(path, 0, &t, &err) == LLM_OK, "%s", err.text);
    int ids[8];
    /* "abc ab": words "abc", " ab"; "a b" merges in both */
    ck_assert_int_eq(tokenizer_encode(t, "abc ab", ids, 8), 4);
    ck_assert_int_eq(ids[0], 256);
    ck_assert_int_eq(ids[1], 'c');
    ck_assert_int_eq(ids[2], ' ');
    ck_assert_int_eq(ids[3], 256);
    ck_assert(!tokenizer_adds_bos(t)); /* gpt-2's default */
    ck_assert_int_eq(tokenizer_eot(t), 257); /* <|end|> */
    tokenizer_close(t);
    remove(path);
}
END_TEST

START_TEST(test_bad_vocabularies)
{
    const char *path = temp_path("bpe-bad.gguf");
    const char *good[] = {"a b"};
    const char *unknown[] = {"a b", "ab c", "x yz"};
    const char *no_space[] = {"ab"};
    const char *unmapped[] = {"a \x01"};
    const struct {
        const char *pre;
        bool pre_nul;
        const char *const *merges;
        int n_merges, drop_byte;
        const char *says;
    } cases[] = {
        {NULL, false, good, 1, -1, "without tokenizer.ggml.pre"},
        {"qwen2", true, good, 1, -1, "tokenizer.ggml.pre holds a NUL byte"},
        {"falcon", false, good, 1, -1, "pre-tokenizer 'falcon' (tokenizer.ggml.pre) is not supported"},
        {"llama-bpe", false, NULL, 0, -1, "tokenizer.ggml.merges is missing"},
        {"llama-bpe", false, unknown, 3, -1, "tokenizer.ggml.merges[2] 'x yz': its second half is not a token"},
        {"smollm", false, no_space, 1, -1, "merges[0] 'ab' is not two pieces"},
        {"default", false, unmapped, 1, -1, "not GPT-2 byte-mapped text"},
        {"gpt-2", false, good, 1, 'Z', "lacks the tokens of 1 of the 256 bytes (the first: 0x5A)"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        write_bpe_vocab(path, cases[k].pre, cases[k].pre_nul, cases[k].merges, cases[k].n_merges,
                        cases[k].drop_byte);
        tokenizer *t = (tokenizer *)&t;
        llm_err err = {""};
        ck_assert_int_eq(tokenizer_open(path, 0, &t, &err), LLM_ERR_FORMAT);
        ck_assert_ptr_null(t);
        ck_assert_msg(strstr(err.text, cases[k].says) && strstr(err.text, path), "case %zu: %s",
                      k, err.text);
    }
    remove(path);
}
END_TEST

/* Random bytes: never a crash, always ids inside the vocabulary. */
START_TEST(test_random_bytes)
{
    tokenizer *t = open_llama3();
    unsigned seed = 7;
    char text[257];
    for (int round = 0; round < 300; round++) {
        int len = (int)(seed % 256);
        for (int i = 0; i < len; i++) {
            seed = seed * 1103515245u + 12345u;
            text[i] = (char)(1 + (seed >> 16) % 255);
        }
        text[len] = '\0';
        int n;
        int *ids = encode_alloc(t, text, &n);
        for (int i = 0; i < n; i++)
            check_each(ids[i] >= 0 && ids[i] < 128000, "id %d is %d", i, ids[i]);
        free(ids);
        seed = seed * 1103515245u + 12345u;
    }
    tokenizer_close(t);
}
END_TEST

static Suite *tokenizer_bpe_suite(void)
{
    Suite *s = suite_create("tokenizer_bpe");
    TCase *core = tcase_create("core");
    tcase_set_timeout(core, 300);
    tcase_add_test(core, test_llama3_goldens);
    tcase_add_test(core, test_gpt2_goldens);
    tcase_add_test(core, test_smollm_goldens);
    tcase_add_test(core, test_vocabularies_lacking_bytes);
    tcase_add_test(core, test_qwen3_goldens);
    tcase_add_test(core, test_qwen35_goldens);
    tcase_add_test(core, test_gemma4_goldens);
    tcase_add_test(core, test_phi4_mini_goldens);
    tcase_add_test(core, test_gemma3_goldens);
    tcase_add_test(core, test_llama3_ids_from_the_file);
    tcase_add_test(core, test_llama3_specials_and_bad_utf8);
    tcase_add_test(core, test_small_vocab_works);
    suite_add_tcase(s, core);
    TCase *limits = tcase_create("limits");
    tcase_set_timeout(limits, 300);
    tcase_add_test(limits, test_bad_vocabularies);
    tcase_add_test(limits, test_random_bytes);
    suite_add_tcase(s, limits);
    return s;
}

TEST_MAIN(tokenizer_bpe_suite)
