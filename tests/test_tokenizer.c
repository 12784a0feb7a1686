/* test_tokenizer.c — the tokenizer against SentencePiece's own output.
 *
 * Owns: a small JSON Lines reader for tests/data/golden/tokenizer_llama2.jsonl
 * ({"text": "...", "ids": [...]}), a naive O(n^2) reference BPE used to cross-check
 * the heap-based encoder on long mixed inputs, the vocabularies of GGUF files (the same
 * ids as SentencePiece; control tokens never made from text), and the load-error
 * checks (vocab mismatch, truncated and garbage files, missing file, refused GGUF
 * tokenizer models). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "testutil.h"
#include "tokenizer.h"

/* ---- golden reader ---- */

typedef struct {
    char *text; /* UTF-8, NUL-terminated */
    int *ids;   /* (n_ids) */
    int n_ids;
} golden;

static size_t put_utf8(char *out, unsigned cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    } else if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    } else if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static int hex4(const char *p, unsigned *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        unsigned d;
        if (c >= '0' && c <= '9') d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') d = (unsigned)(c - 'A' + 10);
        else return -1;
        *v = *v * 16 + d;
    }
    return 0;
}

/* Parses the JSON string starting at the opening quote *pp; returns a malloc'd UTF-8
 * string and advances *pp past the closing quote, or NULL on a syntax error.
 * Lone surrogates become U+FFFD. */
static char *json_string(const char **pp)
{
    const char *p = *pp;
    if (*p != '"')
        return NULL;
    p++;
    char *out = malloc(strlen(p) + 1); /* escapes never grow the text */
    size_t o = 0;
    while (*p && *p != '"') {
        if (*p != '\\') {
            out[o++] = *p++;
            continue;
        }
        p++;
        switch (*p) {
        case '"': out[o++] = '"'; break;
        case '\\': out[o++] = '\\'; break;
        case '/': out[o++] = '/'; break;
        case 'b': out[o++] = '\b'; break;
        case 'f': out[o++] = '\f'; break;
        case 'n': out[o++] = '\n'; break;
        case 'r': out[o++] = '\r'; break;
        case 't': out[o++] = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (hex4(p + 1, &cp) < 0)
                goto fail;
            p += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF && p[1] == '\\' && p[2] == 'u' && hex4(p + 3, &lo) == 0 &&
                lo >= 0xDC00 && lo <= 0xDFFF) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                p += 6;
            } else if (cp >= 0xD800 && cp <= 0xDFFF) {
                cp = 0xFFFD;
            }
            o += put_utf8(out + o, cp);
            break;
        }
        default:
            goto fail;
        }
        p++;
    }
    if (*p != '"')
        goto fail;
    out[o] = '\0';
    *pp = p + 1;
    return out;
fail:
    free(out);
    return NULL;
}

/* Parses one line {"text": "...", "ids": [...]} (keys in any order). */
static int parse_golden(const char *line, golden *g)
{
    g->text = NULL;
    g->ids = NULL;
    g->n_ids = 0;
    const char *t = strstr(line, "\"text\"");
    const char *a = strstr(line, "\"ids\"");
    if (!t || !a)
        return -1;
    t += 6;
    while (*t == ' ' || *t == ':')
        t++;
    g->text = json_string(&t);
    a += 5;
    while (*a == ' ' || *a == ':')
        a++;
    if (!g->text || *a != '[')
        return -1;
    a++;
    int cap = 16;
    g->ids = malloc(cap * sizeof *g->ids);
    for (;;) {
        while (*a == ' ' || *a == ',')
            a++;
        if (*a == ']')
            return 0;
        char *end;
        long v = strtol(a, &end, 10);
        if (end == a)
            return -1;
        if (g->n_ids == cap)
            g->ids = realloc(g->ids, (cap *= 2) * sizeof *g->ids);
        g->ids[g->n_ids++] = (int)v;
        a = end;
    }
}

static golden *goldens;
static int n_goldens;

static void load_goldens(void)
{
    if (goldens)
        return;
    const char *path = data_path("golden/tokenizer_llama2.jsonl");
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    static char line[1 << 16];
    int cap = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] != '{')
            continue;
        if (n_goldens == cap) {
            cap = cap ? cap * 2 : 512;
            goldens = realloc(goldens, (size_t)cap * sizeof *goldens);
        }
        ck_assert_msg(parse_golden(line, &goldens[n_goldens]) == 0, "bad golden line %d: %s", n_goldens + 1, line);
        n_goldens++;
    }
    fclose(f);
    ck_assert_int_eq(n_goldens, 480);
}

static tokenizer *open_ok(const char *rel, int vocab)
{
    tokenizer *t = NULL;
    llm_err err = { "" };
    llm_status st = tokenizer_open(data_path(rel), vocab, &t, &err);
    ck_assert_msg(st == LLM_OK, "%s: %s", rel, err.text);
    return t;
}

static int id_of(const tokenizer *t, const char *piece)
{
    for (int i = 0; i < tokenizer_vocab_size(t); i++)
        if (strcmp(tokenizer_piece(t, i), piece) == 0)
            return i;
    return -1;
}

/* Decodes ids after a BOS into a malloc'd string. */
static char *decode_all(const tokenizer *t, const int *ids, int n)
{
    size_t cap = 64, len = 0;
    char *s = malloc(cap);
    int prev = TOKEN_BOS;
    for (int i = 0; i < n; i++) {
        char piece[256];
        size_t k = tokenizer_decode(t, prev, ids[i], piece, sizeof piece);
        if (len + k + 1 > cap) {
            while (len + k + 1 > cap)
                cap *= 2;
            s = realloc(s, cap);
        }
        memcpy(s + len, piece, k);
        len += k;
        prev = ids[i];
    }
    s[len] = '\0';
    return s;
}

static int *encode_alloc(const tokenizer *t, const char *text, int *n)
{
    int need = tokenizer_encode(t, text, NULL, 0);
    ck_assert_int_ge(need, 0);
    int *ids = malloc((size_t)(need + 1) * sizeof *ids);
    *n = tokenizer_encode(t, text, ids, need);
    ck_assert_int_eq(*n, need);
    return ids;
}

/* ---- core ---- */

START_TEST(test_json_reader)
{
    const char *line = "{\"ids\": [1, 22,333], \"text\": \"a\\\"b\\\\c\\n\\u00e9\\ud83d\\ude00\\u4e2d\\/\"}";
    golden g;
    ck_assert_int_eq(parse_golden(line, &g), 0);
    ck_assert_str_eq(g.text, "a\"b\\c\n\xc3\xa9\xf0\x9f\x98\x80\xe4\xb8\xad/");
    ck_assert_int_eq(g.n_ids, 3);
    ck_assert_int_eq(g.ids[2], 333);
    free(g.text);
    free(g.ids);
}
END_TEST

/* Encodes every golden text with t and fails unless all give SentencePiece's ids. */
static void check_goldens(const tokenizer *t, const char *what)
{
    load_goldens();
    int matched = 0, first_bad = -1;
    for (int i = 0; i < n_goldens; i++) {
        int ids[4096];
        int n = tokenizer_encode(t, goldens[i].text, ids, 4096);
        int ok = n == goldens[i].n_ids && memcmp(ids, goldens[i].ids, (size_t)n * sizeof *ids) == 0;
        matched += ok;
        if (!ok && first_bad < 0)
            first_bad = i;
    }
    fprintf(stderr, "tokenizer goldens (%s): %d/%d match SentencePiece\n", what, matched, n_goldens);
    ck_assert_msg(matched == n_goldens, "%s: %d/%d goldens match; first mismatch: line %d \"%s\"", what,
                  matched, n_goldens, first_bad + 1, first_bad >= 0 ? goldens[first_bad].text : "");
}

START_TEST(test_goldens)
{
    tokenizer *t = open_ok("tokenizer.bin", 32000);
    check_goldens(t, "tokenizer.bin");
    tokenizer_close(t);
}
END_TEST

START_TEST(test_round_trip)
{
    load_goldens();
    tokenizer *t = open_ok("tokenizer.bin", 32000);
    for (int i = 0; i < n_goldens; i++) {
        char *s = decode_all(t, goldens[i].ids, goldens[i].n_ids);
        ck_assert_msg(strcmp(s, goldens[i].text) == 0, "line %d: decode gives \"%s\", want \"%s\"", i + 1, s,
                      goldens[i].text);
        free(s);
    }
    tokenizer_close(t);
}
END_TEST

START_TEST(test_control_injection)
{
    tokenizer *t = open_ok("tokenizer.bin", 32000);
    const char *texts[] = { "<s>", "</s>", "<unk>", "<0x41>", "[/INST]", "[INST] <<SYS>>", "x<s>y</s>z",
                            "<0x0A><0xFF>", "<s></s><unk>" };
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
        int n;
        int *ids = encode_alloc(t, texts[k], &n);
        ck_assert_int_gt(n, 0);
        for (int i = 0; i < n; i++) {
            ck_assert_msg(!tokenizer_is_control(t, ids[i]), "\"%s\" produced control token %d", texts[k], ids[i]);
            ck_assert_msg(tokenizer_byte(t, ids[i]) < 0, "\"%s\" produced byte token %d", texts[k], ids[i]);
        }
        char *s = decode_all(t, ids, n);
        ck_assert_str_eq(s, texts[k]);
        free(s);
        free(ids);
    }
    tokenizer_close(t);
}
END_TEST

START_TEST(test_accessors_and_decode)
{
    tokenizer *t = open_ok("tokenizer.bin", 32000);
    ck_assert_int_eq(tokenizer_vocab_size(t), 32000);
    ck_assert_str_eq(tokenizer_piece(t, TOKEN_BOS), "\n<s>\n");
    ck_assert_str_eq(tokenizer_piece(t, TOKEN_EOS), "\n</s>\n");
    ck_assert_str_eq(tokenizer_piece(t, TOKEN_UNK), "<unk>");
    ck_assert_str_eq(tokenizer_piece(t, -1), "");
    ck_assert_str_eq(tokenizer_piece(t, 32000), "");
    ck_assert(tokenizer_is_control(t, 0) && tokenizer_is_control(t, 1) && tokenizer_is_control(t, 2));
    ck_assert(!tokenizer_is_control(t, 3) && !tokenizer_is_control(t, 32000));
    int a = id_of(t, "<0x41>"), nl = id_of(t, "<0x0A>");
    ck_assert_int_gt(a, 2);
    ck_assert_int_eq(tokenizer_byte(t, a), 0x41);
    ck_assert_int_eq(tokenizer_byte(t, id_of(t, " the")), -1);
    ck_assert_int_eq(tokenizer_byte(t, TOKEN_BOS), -1);
    ck_assert(tokenizer_score(t, id_of(t, " t")) > tokenizer_score(t, id_of(t, " the")));

    char buf[64];
    int the = id_of(t, " the");
    ck_assert_uint_eq(tokenizer_decode(t, TOKEN_BOS, the, buf, sizeof buf), 3);
    ck_assert_str_eq(buf, "the");
    ck_assert_uint_eq(tokenizer_decode(t, the, the, buf, sizeof buf), 4);
    ck_assert_str_eq(buf, " the");
    ck_assert_uint_eq(tokenizer_decode(t, the, nl, buf, sizeof buf), 1);
    ck_assert_str_eq(buf, "\n");
    ck_assert_uint_eq(tokenizer_decode(t, the, TOKEN_EOS, buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "");
    ck_assert_uint_eq(tokenizer_decode(t, the, TOKEN_UNK, buf, sizeof buf), 0);
    ck_assert_uint_eq(tokenizer_decode(t, the, 99999, buf, sizeof buf), 0);
    /* truncation: at most size-1 bytes plus the NUL */
    ck_assert_uint_eq(tokenizer_decode(t, the, the, buf, 3), 2);
    ck_assert_str_eq(buf, " t");
    tokenizer_close(t);
}
END_TEST

START_TEST(test_empty_and_small_buffer)
{
    tokenizer *t = open_ok("tokenizer.bin", 32000);
    int ids[8] = { -7, -7, -7, -7, -7, -7, -7, -7 };
    ck_assert_int_eq(tokenizer_encode(t, "", ids, 8), 0);
    ck_assert_int_eq(ids[0], -7);
    int n_full;
    int *full = encode_alloc(t, "Hello world, this is a test of the buffer.", &n_full);
    ck_assert_int_gt(n_full, 4);
    ck_assert_int_eq(tokenizer_encode(t, "Hello world, this is a test of the buffer.", ids, 3), n_full);
    ck_assert_int_eq(memcmp(ids, full, 3 * sizeof *ids), 0);
    ck_assert_int_eq(ids[3], -7); /* nothing written past max */
    free(full);
    tokenizer_close(t);
}
END_TEST

START_TEST(test_invalid_utf8)
{
    tokenizer *t = open_ok("tokenizer.bin", 32000);
    /* a stray 0xFF, a truncated 3-byte sequence, an overlong '/', a surrogate */
    const char *text = "a\xff" "b\xe2\x96" "c\xc0\xaf" "d\xed\xa0\x80";
    int n;
    int *ids = encode_alloc(t, text, &n);
    int bytes[16], nb = 0;
    for (int i = 0; i < n; i++)
        if (tokenizer_byte(t, ids[i]) >= 0)
            bytes[nb++] = tokenizer_byte(t, ids[i]);
    int want[] = { 0xff, 0xe2, 0x96, 0xc0, 0xaf, 0xed, 0xa0, 0x80 };
    ck_assert_int_eq(nb, 8);
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(bytes[i], want[i]);
    char *s = decode_all(t, ids, n);
    ck_assert_str_eq(s, text);
    free(s);
    free(ids);
    tokenizer_close(t);
}
END_TEST

START_TEST(test_tok512_byte_fallback)
{
    tokenizer *t = open_ok("tok512.bin", 512);
    ck_assert_int_eq(tokenizer_vocab_size(t), 512);
    const char *text = "Tom saw \xe6\x97\xa5 and \xd0\xb6 for \xe2\x82\xac.";
    int n;
    int *ids = encode_alloc(t, text, &n);
    int nb = 0, first = -1;
    for (int i = 0; i < n; i++) {
        ck_assert(!tokenizer_is_control(t, ids[i]));
        if (tokenizer_byte(t, ids[i]) >= 0 && first < 0)
            first = i;
        nb += tokenizer_byte(t, ids[i]) >= 0;
    }
    ck_assert_int_eq(nb, 5); /* 日 and ж are not in the vocabulary (€ is): 3 + 2 byte tokens */
    ck_assert_int_eq(tokenizer_byte(t, ids[first]), 0xe6);
    char *s = decode_all(t, ids, n);
    ck_assert_str_eq(s, text);
    free(s);
    free(ids);
    tokenizer_close(t);
}
END_TEST

START_TEST(test_no_byte_tokens_gives_unk)
{
    tokenizer *t = open_ok("babyllama_tok105.bin", 105);
    ck_assert_int_eq(id_of(t, "<0x41>"), -1);
    int n;
    /* 日本 is unknown: one <unk> for the run, as SentencePiece does; then text again */
    int *ids = encode_alloc(t, "a \xe6\x97\xa5\xe6\x9c\xac b", &n);
    int unk = 0;
    for (int i = 0; i < n; i++)
        unk += ids[i] == TOKEN_UNK;
    ck_assert_int_eq(unk, 1);
    ck_assert_int_eq(ids[0] == TOKEN_UNK, 0);
    ck_assert_int_eq(ids[n - 1] == TOKEN_UNK, 0);
    free(ids);
    /* two unknown runs separated by known text: two <unk> */
    ids = encode_alloc(t, "\xe6\x97\xa5 a \xe6\x9c\xac", &n);
    unk = 0;
    for (int i = 0; i < n; i++)
        unk += ids[i] == TOKEN_UNK;
    ck_assert_int_eq(unk, 2);
    free(ids);
    tokenizer_close(t);
}
END_TEST

/* ---- reference BPE: SentencePiece's rule by rescanning every pair each round ---- */

static int naive_lookup(const tokenizer *t, const char *s, int len)
{
    for (int i = 0; i < tokenizer_vocab_size(t); i++)
        if (!tokenizer_is_control(t, i) && tokenizer_byte(t, i) < 0 && (int)strlen(tokenizer_piece(t, i)) == len &&
            memcmp(tokenizer_piece(t, i), s, (size_t)len) == 0)
            return i;
    return -1;
}

/* ASCII/valid-UTF-8 only; vocabulary with byte tokens. Slow, for short texts. */
static int naive_encode(const tokenizer *t, const char *text, int *ids)
{
    size_t tlen = strlen(text);
    char *norm = malloc(tlen + 2);
    norm[0] = ' ';
    memcpy(norm + 1, text, tlen + 1);
    int nlen = (int)tlen + 1;
    int *start = malloc(sizeof(int) * (size_t)(nlen + 1)), n = 0;
    for (int o = 0; o < nlen;) {
        start[n++] = o;
        unsigned char c = (unsigned char)norm[o];
        o += c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    }
    start[n] = nlen;
    for (;;) {
        int best = -1;
        float best_score = 0;
        for (int i = 0; i + 1 < n; i++) {
            int id = naive_lookup(t, norm + start[i], start[i + 2] - start[i]);
            if (id >= 0 && (best < 0 || tokenizer_score(t, id) > best_score)) {
                best = i;
                best_score = tokenizer_score(t, id);
            }
        }
        if (best < 0)
            break;
        memmove(start + best + 1, start + best + 2, sizeof(int) * (size_t)(n - best - 1));
        n--;
    }
    int k = 0;
    for (int i = 0; i < n; i++) {
        int id = naive_lookup(t, norm + start[i], start[i + 1] - start[i]);
        if (id >= 0) {
            ids[k++] = id;
        } else {
            for (int b = start[i]; b < start[i + 1]; b++) {
                char piece[8];
                snprintf(piece, sizeof piece, "<0x%02X>", (unsigned char)norm[b]);
                ids[k++] = id_of(t, piece);
            }
        }
    }
    free(norm);
    free(start);
    return k;
}

START_TEST(test_matches_reference_bpe)
{
    /* tok512 has few pieces, so ties and long merge chains are common */
    tokenizer *t = open_ok("tok512.bin", 512);
    const char *words[] = { "the", " ", "  ", "and", "Lily", "x", "\xc3\xa9", "aaaa", "ee", "th", "\n", "ing", "." };
    unsigned seed = 12345;
    for (int round = 0; round < 60; round++) {
        char text[256] = "";
        int nw = 1 + round % 20;
        for (int w = 0; w < nw; w++) {
            seed = seed * 1103515245u + 12345u;
            strcat(text, words[(seed >> 16) % (sizeof words / sizeof words[0])]);
        }
        int got[512], want[512];
        int n = tokenizer_encode(t, text, got, 512);
        int m = naive_encode(t, text, want);
        ck_assert_msg(n == m && memcmp(got, want, sizeof(int) * (size_t)n) == 0, "differs from reference on \"%s\"",
                      text);
    }
    tokenizer_close(t);
}
END_TEST


/* ---- vocabularies from GGUF files ---- */

/* The Llama 2 vocabulary as llama.cpp ships it in GGUF gives SentencePiece's ids too. */
START_TEST(test_gguf_vocab_goldens)
{
    tokenizer *t = open_ok("ggml-vocab-llama-spm.gguf", 32000);
    check_goldens(t, "ggml-vocab-llama-spm.gguf");
    for (int i = 0; i < n_goldens; i++) {
        char *s = decode_all(t, goldens[i].ids, goldens[i].n_ids);
        ck_assert_msg(strcmp(s, goldens[i].text) == 0, "line %d: decode gives \"%s\"", i + 1, s);
        free(s);
    }
    ck_assert_int_eq(tokenizer_bos(t), 1);
    ck_assert_int_eq(tokenizer_eos(t), 2);
    ck_assert_int_eq(tokenizer_unk(t), 0);
    ck_assert(tokenizer_adds_bos(t));
    ck_assert_int_eq(tokenizer_special(t, "<s>"), 1);
    ck_assert_int_eq(tokenizer_special(t, "</s>"), 2);
    ck_assert_int_eq(tokenizer_special(t, "the"), -1); /* normal pieces are not special */
    ck_assert_int_eq(tokenizer_token_type(t, 0), 2);
    ck_assert_int_eq(tokenizer_token_type(t, 1), 3);
    ck_assert_int_eq(tokenizer_token_type(t, 3), 6);
    ck_assert_int_eq(tokenizer_token_type(t, 1000), 1);
    tokenizer_close(t);
}
END_TEST

/* A typed "▁" (U+2581) is the space SentencePiece writes it for: the ids llama.cpp
 * 0.4.0's llama-tokenize gives (--no-bos --no-escape) on ggml-vocab-llama-spm.gguf. */
START_TEST(test_typed_space_mark)
{
    tokenizer *t = open_ok("ggml-vocab-llama-spm.gguf", 32000);
    static const struct {
        const char *text;
        int ids[4], n;
    } cases[] = {
        {"a\xe2\x96\x81" "b", {263, 289}, 2},
        {"\xe2\x96\x81", {259}, 1},
        {"\xe2\x96\x81\xe2\x96\x81" "Hello world", {259, 15043, 3186}, 3},
        {"x\xe2\x96\x81", {921, 29871}, 2},
        {"\xe2\x96", {29871, 229, 153}, 3}, /* a cut one stays bytes */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int ids[16];
        int n = tokenizer_encode(t, cases[i].text, ids, 16);
        ck_assert_msg(n == cases[i].n, "case %zu: %d ids", i, n);
        for (int k = 0; k < n; k++)
            ck_assert_msg(ids[k] == cases[i].ids[k], "case %zu: id %d is %d", i, k, ids[k]);
    }
    tokenizer_close(t);
}
END_TEST

/* stories260K.gguf embeds the vocabulary of tok512.bin: the same pieces (spaces spelled
 * "▁" in the file), scores and ids. */
START_TEST(test_gguf_model_vocab_equals_bin)
{
    tokenizer *bin = open_ok("tok512.bin", 512);
    tokenizer *gg = open_ok("stories260K.gguf", 512);
    ck_assert_int_eq(tokenizer_vocab_size(gg), 512);
    for (int id = 3; id < 512; id++) {
        ck_assert_str_eq(tokenizer_piece(gg, id), tokenizer_piece(bin, id));
        ck_assert_float_eq(tokenizer_score(gg, id), tokenizer_score(bin, id));
        ck_assert_int_eq(tokenizer_byte(gg, id), tokenizer_byte(bin, id));
    }
    for (int id = 0; id < 3; id++)
        ck_assert(tokenizer_is_control(gg, id) && tokenizer_is_control(bin, id));
    load_goldens();
    for (int i = 0; i < n_goldens; i++) {
        int a[4096], b[4096];
        int na = tokenizer_encode(bin, goldens[i].text, a, 4096);
        int nb = tokenizer_encode(gg, goldens[i].text, b, 4096);
        ck_assert_int_eq(na, nb);
        ck_assert_msg(memcmp(a, b, (size_t)na * sizeof *a) == 0, "line %d differs", i + 1);
    }
    tokenizer_close(bin);
    tokenizer_close(gg);
}
END_TEST

/* Writes a GGUF vocabulary: the pieces (spaces as "▁"), token types, and the keys given
 * as "key=value" strings (string values) plus an optional uint32 bos id. */
static void write_vocab(const char *path, const char *model, const char *const *pieces,
                        const int32_t *types, int n, long bos)
{
    gguf_writer *w = gguf_writer_new(0);
    if (model)
        gguf_writer_add_string(w, "tokenizer.ggml.model", model);
    size_t lens[64];
    float scores[64];
    for (int i = 0; i < n; i++) {
        lens[i] = strlen(pieces[i]);
        scores[i] = (float)-i;
    }
    gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", pieces, lens, (uint64_t)n);
    gguf_writer_add_float32_array(w, "tokenizer.ggml.scores", scores, (uint64_t)n);
    gguf_writer_add_int32_array(w, "tokenizer.ggml.token_type", types, (uint64_t)n);
    if (bos >= 0)
        gguf_writer_add_uint32(w, "tokenizer.ggml.bos_token_id", (uint32_t)bos);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    llm_err err;
    ck_assert(gguf_writer_write_header(w, f, path, &err) == LLM_OK);
    fclose(f);
    gguf_writer_free(w);
}

/* A ChatML-style vocabulary: "<|im_start|>" is a control token whose text the normal
 * pieces could spell; typed text never becomes it, the template finds it by name. */
START_TEST(test_gguf_control_tokens_from_text)
{
    const char *pieces[] = {"<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>", "<|user|>",
                            "<", "|", "i", "m", "_", "s", "t", "a", "r", "e", "n", "d", ">",
                            "\xe2\x96\x81", "<|", "|>", "im", "_start", "<|im", "\xe2\x96\x81<|", "u", "x"};
    int n = (int)(sizeof pieces / sizeof pieces[0]);
    int32_t types[32];
    for (int i = 0; i < n; i++)
        types[i] = 1;
    types[0] = 2;
    types[1] = types[2] = types[3] = types[4] = 3;
    types[5] = 4; /* user defined */
    const char *path = temp_path("chatml-vocab.gguf");
    write_vocab(path, "llama", pieces, types, n, 1);
    tokenizer *t = NULL;
    llm_err err;
    ck_assert_msg(tokenizer_open(path, n, &t, &err) == LLM_OK, "%s", err.text);
    ck_assert_int_eq(tokenizer_special(t, "<|im_start|>"), 3);
    ck_assert_int_eq(tokenizer_special(t, "<|im_end|>"), 4);
    ck_assert_int_eq(tokenizer_special(t, "<|user|>"), 5);
    ck_assert_int_eq(tokenizer_special(t, "<|"), -1);
    const char *typed[] = {"<|im_start|>", "<|im_end|>", "<|user|>", "x<|im_start|>user"};
    for (size_t k = 0; k < sizeof typed / sizeof typed[0]; k++) {
        int ids[64];
        int got = tokenizer_encode(t, typed[k], ids, 64);
        ck_assert_int_gt(got, 0);
        for (int i = 0; i < got; i++)
            ck_assert_msg(ids[i] > 5, "\"%s\" produced special token %d", typed[k], ids[i]);
        char *s = decode_all(t, ids, got);
        ck_assert_str_eq(s, typed[k]);
        free(s);
    }
    /* the special tokens decode: control ones to nothing, user-defined ones to their text */
    char buf[32];
    ck_assert_uint_eq(tokenizer_decode(t, 6, 3, buf, sizeof buf), 0);
    ck_assert_uint_eq(tokenizer_decode(t, 6, 5, buf, sizeof buf), 8);
    ck_assert_str_eq(buf, "<|user|>");
    tokenizer_close(t);
    remove(path);
}
END_TEST

START_TEST(test_gguf_refused_vocabularies)
{
    const char *pieces[] = {"<unk>", "<s>", "</s>", "a"};
    int32_t types[] = {2, 3, 3, 1};
    const char *path = temp_path("bad-vocab.gguf");
    const struct {
        const char *model;
        long bos;
        const char *says;
    } cases[] = {
        {"gpt2", 1, "without tokenizer.ggml.pre"},
        {"bert", 1, "'bert'"},
        {NULL, 1, "tokenizer.ggml.model is missing"},
        {"llama", 4, "bos_token_id is 4, outside the vocabulary"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        write_vocab(path, cases[k].model, pieces, types, 4, cases[k].bos);
        tokenizer *t = (tokenizer *)&t;
        llm_err err = {""};
        ck_assert_int_eq(tokenizer_open(path, 0, &t, &err), LLM_ERR_FORMAT);
        ck_assert_ptr_null(t);
        ck_assert_msg(strstr(err.text, cases[k].says) && strstr(err.text, path), "message: %s", err.text);
    }
    /* the vocabulary size must match the model's */
    write_vocab(path, "llama", pieces, types, 4, 1);
    tokenizer *t = NULL;
    llm_err err = {""};
    ck_assert_int_eq(tokenizer_open(path, 512, &t, &err), LLM_ERR_MISMATCH);
    /* a broken GGUF file is refused with the reader's message */
    ck_assert_int_eq(tokenizer_open(data_path("stories260K-gguf-v1-head.gguf"), 0, &t, &err),
                     LLM_ERR_FORMAT);
    ck_assert_msg(strstr(err.text, "obsolete") != NULL, "message: %s", err.text);
    remove(path);
}
END_TEST

/* ---- limits ---- */

START_TEST(test_vocab_mismatch)
{
    tokenizer *t = (tokenizer *)&t;
    llm_err err = { "" };
    const char *path = data_path("tokenizer.bin");
    ck_assert_int_eq(tokenizer_open(path, 512, &t, &err), LLM_ERR_MISMATCH);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(err.text, "32,000") && strstr(err.text, "512") && strstr(err.text, path), "message: %s",
                  err.text);
}
END_TEST

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

static void *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    void *d = malloc(*n);
    ck_assert_uint_eq(fread(d, 1, *n, f), *n);
    fclose(f);
    return d;
}

START_TEST(test_truncated_file)
{
    size_t n;
    unsigned char *data = read_all(data_path("tok512.bin"), &n);
    const char *tmp = temp_path("tok-truncated.bin");
    size_t cuts[] = { n - 1, n - 3, n / 2 + 1, 9, 5, 2, 0 };
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
        write_file(tmp, data, cuts[k]);
        tokenizer *t = NULL;
        llm_err err = { "" };
        llm_status st = tokenizer_open(tmp, 0, &t, &err);
        /* a cut that lands exactly between records is a complete but shorter vocabulary */
        if (st == LLM_OK) {
            ck_assert_int_lt(tokenizer_vocab_size(t), 512);
            tokenizer_close(t);
            ck_assert_int_eq(tokenizer_open(tmp, 512, &t, &err), LLM_ERR_MISMATCH);
            continue;
        }
        ck_assert_msg(st == LLM_ERR_FORMAT, "cut at %zu: %s", cuts[k], err.text);
        ck_assert_ptr_null(t);
        ck_assert_msg(strstr(err.text, tmp) != NULL, "message lacks the path: %s", err.text);
    }
    /* the last record's length cut by 1 byte must fail, not be silently dropped */
    write_file(tmp, data, n - 1);
    tokenizer *t = NULL;
    llm_err err = { "" };
    ck_assert_int_eq(tokenizer_open(tmp, 512, &t, &err), LLM_ERR_FORMAT);
    ck_assert_msg(strstr(err.text, "truncated") != NULL, "message: %s", err.text);
    remove(tmp);
    free(data);
}
END_TEST

START_TEST(test_garbage_file)
{
    const char *tmp = temp_path("tok-garbage.bin");
    /* header, then a record whose length is negative */
    unsigned char neg[16] = { 10, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 'a', 'b', 'c', 'd' };
    write_file(tmp, neg, sizeof neg);
    tokenizer *t = NULL;
    llm_err err = { "" };
    ck_assert_int_eq(tokenizer_open(tmp, 0, &t, &err), LLM_ERR_FORMAT);
    ck_assert_ptr_null(t);
    /* a record claiming 2 GB */
    unsigned char huge[16] = { 10, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f, 'a', 'b', 'c', 'd' };
    write_file(tmp, huge, sizeof huge);
    ck_assert_int_eq(tokenizer_open(tmp, 0, &t, &err), LLM_ERR_FORMAT);
    /* a model file is not a tokenizer */
    ck_assert_int_eq(tokenizer_open(data_path("stories260K.bin"), 512, &t, &err), LLM_ERR_FORMAT);
    ck_assert_ptr_null(t);
    remove(tmp);
}
END_TEST

/* Writes a tokenizer.bin: header max_len, then the pieces (scores 0). */
static void write_tokenizer(const char *path, int max_len, const char *const *pieces, int n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fwrite(&max_len, 4, 1, f);
    for (int i = 0; i < n; i++) {
        float score = 0.0f;
        int len = (int)strlen(pieces[i]);
        fwrite(&score, 4, 1, f);
        fwrite(&len, 4, 1, f);
        fwrite(pieces[i], 1, (size_t)len, f);
    }
    fclose(f);
}

/* A piece longer than the header's max_token_length, a negative max_token_length, or
 * a piece beyond TOKENIZER_PIECE_MAX: refused with a message, never loaded. */
START_TEST(test_piece_lengths)
{
    const char *tmp = temp_path("tok-lengths.bin");
    tokenizer *t = NULL;
    llm_err err = { "" };
    const char *ok[] = { "<unk>", "\n<s>\n", "\n</s>\n", "abcdefgh" };
    write_tokenizer(tmp, 8, ok, 4);
    ck_assert_msg(tokenizer_open(tmp, 4, &t, &err) == LLM_OK, "%s", err.text);
    tokenizer_close(t);

    write_tokenizer(tmp, 7, ok, 4);
    ck_assert_int_eq(tokenizer_open(tmp, 0, &t, &err), LLM_ERR_FORMAT);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(err.text, "token 3") && strstr(err.text, "8 bytes long") &&
                  strstr(err.text, "max_token_length") && strstr(err.text, tmp), "%s", err.text);

    write_tokenizer(tmp, -1, ok, 4);
    ck_assert_int_eq(tokenizer_open(tmp, 0, &t, &err), LLM_ERR_FORMAT);
    ck_assert_msg(strstr(err.text, "max_token_length is -1"), "%s", err.text);

    char long_piece[TOKENIZER_PIECE_MAX + 2];
    memset(long_piece, 'x', sizeof long_piece - 1);
    long_piece[sizeof long_piece - 1] = '\0';
    const char *big[] = { "<unk>", "<s>", "</s>", long_piece };
    write_tokenizer(tmp, 1 << 20, big, 4);
    ck_assert_int_eq(tokenizer_open(tmp, 0, &t, &err), LLM_ERR_FORMAT);
    ck_assert_msg(strstr(err.text, "this program accepts"), "%s", err.text);
    remove(tmp);
}
END_TEST

START_TEST(test_missing_file)
{
    tokenizer *t = NULL;
    llm_err err = { "" };
    const char *path = temp_path("no-such-tokenizer.bin");
    ck_assert_int_eq(tokenizer_open(path, 32000, &t, &err), LLM_ERR_IO);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(err.text, path) && strstr(err.text, strerror(ENOENT)), "message: %s", err.text);
    tokenizer_close(NULL);
}
END_TEST

START_TEST(test_long_text)
{
    load_goldens();
    tokenizer *t = open_ok("tokenizer.bin", 32000);
    /* ~1 MB made of the golden texts, one per line */
    size_t cap = 1100000, len = 0;
    char *text = malloc(cap);
    for (int i = 0; len < 1000000; i = (i + 1) % n_goldens) {
        size_t k = strlen(goldens[i].text);
        memcpy(text + len, goldens[i].text, k);
        len += k;
        text[len++] = '\n';
    }
    text[len] = '\0';
    int n;
    int *ids = encode_alloc(t, text, &n);
    ck_assert_int_gt(n, 100000);
    char *back = decode_all(t, ids, n);
    ck_assert_msg(strcmp(back, text) == 0, "1 MB text does not round-trip");
    free(back);
    free(ids);
    free(text);
    tokenizer_close(t);
}
END_TEST

START_TEST(test_random_bytes_round_trip)
{
    /* arbitrary bytes (mostly invalid UTF-8) encode without control tokens and decode back */
    tokenizer *t = open_ok("tokenizer.bin", 32000);
    unsigned seed = 777;
    for (int round = 0; round < 300; round++) {
        char text[201];
        seed = seed * 1103515245u + 12345u;
        int len = 1 + (int)((seed >> 16) % 200);
        for (int i = 0; i < len; i++) {
            seed = seed * 1103515245u + 12345u;
            unsigned r = seed >> 16;
            /* mix ASCII, spaces and high bytes so valid characters appear too */
            text[i] = (char)(r % 3 == 0 ? 'a' + r % 26 : r % 3 == 1 ? ' ' + (r >> 4) % 2 : 0x80 + (r >> 4) % 128);
            if (r % 7 == 0)
                text[i] = (char)(1 + (r >> 8) % 255);
        }
        text[len] = '\0';
        int n;
        int *ids = encode_alloc(t, text, &n);
        for (int i = 0; i < n; i++)
            ck_assert(!tokenizer_is_control(t, ids[i]));
        char *back = decode_all(t, ids, n);
        ck_assert_msg(strcmp(back, text) == 0, "round %d does not round-trip", round);
        free(back);
        free(ids);
    }
    tokenizer_close(t);
}
END_TEST

START_TEST(test_mutated_files)
{
    /* corrupting bytes of a tokenizer.bin must give an error or a usable tokenizer, never a crash */
    size_t n;
    unsigned char *orig = read_all(data_path("tok512.bin"), &n);
    unsigned char *data = malloc(n);
    const char *tmp = temp_path("tok-mutated.bin");
    unsigned seed = 4242;
    int errors = 0;
    for (int round = 0; round < 200; round++) {
        memcpy(data, orig, n);
        for (int k = 0; k < 3; k++) {
            seed = seed * 1103515245u + 12345u;
            size_t at = (seed >> 8) % n;
            seed = seed * 1103515245u + 12345u;
            data[at] = (unsigned char)(seed >> 16);
        }
        write_file(tmp, data, n);
        tokenizer *t = NULL;
        llm_err err = { "" };
        llm_status st = tokenizer_open(tmp, 512, &t, &err);
        ck_assert(st == LLM_OK || st == LLM_ERR_FORMAT || st == LLM_ERR_MISMATCH);
        if (st != LLM_OK) {
            ck_assert_ptr_null(t);
            ck_assert(err.text[0] != '\0');
            errors++;
            continue;
        }
        int ids[256];
        int m = tokenizer_encode(t, "Once upon a time, \xe6\x97\xa5 <s>", ids, 256);
        ck_assert_int_gt(m, 0);
        tokenizer_close(t);
    }
    ck_assert_int_gt(errors, 0); /* some mutations hit a length field */
    remove(tmp);
    free(data);
    free(orig);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("tokenizer");
    TCase *core = tcase_create("core");
    tcase_add_test(core, test_json_reader);
    tcase_add_test(core, test_goldens);
    tcase_add_test(core, test_round_trip);
    tcase_add_test(core, test_control_injection);
    tcase_add_test(core, test_accessors_and_decode);
    tcase_add_test(core, test_empty_and_small_buffer);
    tcase_add_test(core, test_invalid_utf8);
    tcase_add_test(core, test_tok512_byte_fallback);
    tcase_add_test(core, test_no_byte_tokens_gives_unk);
    tcase_add_test(core, test_matches_reference_bpe);
    tcase_add_test(core, test_gguf_vocab_goldens);
    tcase_add_test(core, test_typed_space_mark);
    tcase_add_test(core, test_gguf_model_vocab_equals_bin);
    tcase_add_test(core, test_gguf_control_tokens_from_text);
    suite_add_tcase(s, core);

    TCase *limits = tcase_create("limits");
    tcase_set_timeout(limits, 30);
    tcase_add_test(limits, test_vocab_mismatch);
    tcase_add_test(limits, test_gguf_refused_vocabularies);
    tcase_add_test(limits, test_truncated_file);
    tcase_add_test(limits, test_garbage_file);
    tcase_add_test(limits, test_piece_lengths);
    tcase_add_test(limits, test_missing_file);
    tcase_add_test(limits, test_long_text);
    tcase_add_test(limits, test_random_bytes_round_trip);
    tcase_add_test(limits, test_mutated_files);
    suite_add_tcase(s, limits);
    return s;
}

TEST_MAIN(make_suite)
