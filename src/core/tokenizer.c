/* tokenizer.c — loads a llama2.c tokenizer.bin or the tokenizer.ggml.* vocabulary of a
 * GGUF file, and encodes/decodes text the way SentencePiece BPE does for Llama.
 *
 * Owns: the vocabulary (pieces, scores, kinds, the special ids), a hash table from
 * piece text to id for the normal pieces, and the byte-token table. GGUF pieces spell
 * spaces as SentencePiece's "▁" (U+2581); they are stored with plain spaces, as
 * tokenizer.bin stores them. Token kinds come from tokenizer.ggml.token_type: control
 * tokens (BOS, EOS, "<|im_start|>") are never produced from text, so text typed by a
 * user cannot turn into them; chat templates insert them by id (tokenizer_special).
 * User-defined tokens are split out of the text before it is merged (the user_ids list,
 * longest first, as llama.cpp's special-token partition). Encoding is SentencePiece's own
 * algorithm: split the dummy-prefixed text into UTF-8 characters, keep a priority
 * queue of adjacent pairs whose concatenation is a normal piece (highest score
 * first, leftmost on ties), merge over a linked list of symbols, then map each final
 * symbol to its id, or to byte tokens (byte fallback), or to <unk> when the
 * vocabulary has no byte tokens (a run of unknown symbols gives one <unk>, as in
 * SentencePiece). O(n log n) in the text length; the text is merged stretch by
 * stretch between bytes no piece contains (newlines in Llama's vocabulary), which
 * gives the same ids with a queue that stays in cache.
 * Checked against SentencePiece 0.1.97 itself: the 480 goldens, ~9,000 random mixed
 * strings and a 1 MB text all give identical ids.
 * Does not: add BOS/EOS, apply chat templates, or sanitize text for the terminal
 * (see textfmt.c). Immutable after open, so it may be shared between readers. */
#include "tokenizer.h"

#include "input_file.h"
#include "textfmt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf.h"
#include "merge_heap.h"
#include "tokenizer_bpe.h"

/* NORMAL pieces are what merging makes; CONTROL tokens (BOS, EOS, <unk>, template
 * markers) and USER defined ones are never made from text; UNUSED ones never appear. */
enum piece_kind { KIND_NORMAL = 0, KIND_CONTROL, KIND_BYTE, KIND_USER, KIND_UNUSED };

struct tokenizer {
    int n_vocab;
    char **pieces;         /* (n_vocab) NUL-terminated pieces, pointing into blob */
    int *lens;             /* (n_vocab) piece lengths in bytes */
    float *scores;         /* (n_vocab) merge priority, larger merges first */
    unsigned char *kinds;  /* (n_vocab) enum piece_kind */
    short *byte_of;        /* (n_vocab) 0..255 for "<0xNN>" tokens, else -1 */
    int byte_id[256];      /* id of "<0xNN>", or -1 when the vocabulary lacks it */
    int n_byte_tokens;     /* 0 means no byte fallback: unknown text becomes <unk> */
    bool barrier[128];     /* ASCII bytes that no normal piece contains (e.g. '\n') */
    char *blob;            /* all pieces, each followed by a NUL */
    int *table;            /* (table_size) open-addressing hash of normal pieces, -1 = empty */
    size_t table_mask;     /* table_size - 1 (a power of two) */
    int bos, eos, unk;     /* special ids */
    bool add_bos;          /* the vocabulary asks for BOS before text */
    bool space_prefix;     /* SentencePiece's dummy prefix: one space before the text */
    tokenizer_bpe *bpe;    /* byte-level BPE (GGUF model "gpt2"), or NULL: SentencePiece */
    int *user_ids;         /* (n_user) the user-defined tokens, longest piece first */
    int n_user;
    int eot;               /* end of turn (<|eot_id|>, <|im_end|>), or -1 */
    int eog[16];           /* (n_eog) the ids that end a generation: EOS, EOT, EOM, ... */
    int n_eog;
};

/* ---- hashing of normal pieces ---- */

static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h ^ (h >> 29);
}

/* Id of the normal piece equal to s[0..len), or -1. */
static int lookup(const tokenizer *t, const char *s, size_t len)
{
    size_t i = (size_t)hash_bytes(s, len) & t->table_mask;
    for (;;) {
        int id = t->table[i];
        if (id < 0)
            return -1;
        if ((size_t)t->lens[id] == len && memcmp(t->pieces[id], s, len) == 0)
            return id;
        i = (i + 1) & t->table_mask;
    }
}

static void table_insert(tokenizer *t, int id)
{
    size_t i = (size_t)hash_bytes(t->pieces[id], (size_t)t->lens[id]) & t->table_mask;
    for (;;) {
        int other = t->table[i];
        if (other < 0) {
            t->table[i] = id;
            return;
        }
        if (t->lens[other] == t->lens[id] && memcmp(t->pieces[other], t->pieces[id], (size_t)t->lens[id]) == 0)
            return; /* duplicate piece: the first id wins */
        i = (i + 1) & t->table_mask;
    }
}

/* 0..255 when piece is exactly "<0xNN>" (upper-case hex, as SentencePiece writes it). */
static int parse_byte_piece(const char *p, int len)
{
    if (len != 6 || memcmp(p, "<0x", 3) != 0 || p[5] != '>')
        return -1;
    int v = 0;
    for (int i = 3; i < 5; i++) {
        char c = p[i];
        if (c >= '0' && c <= '9')
            v = v * 16 + (c - '0');
        else if (c >= 'A' && c <= 'F')
            v = v * 16 + (c - 'A' + 10);
        else
            return -1;
    }
    return v;
}

/* ---- building the vocabulary ---- */

/* A tokenizer for n pieces totalling piece_bytes (without terminators), every array
 * allocated and the tables empty; NULL when out of memory. */
static tokenizer *tokenizer_alloc(int n, size_t piece_bytes)
{
    tokenizer *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    size_t table_size = 16;
    while (table_size < (size_t)n * 2)
        table_size *= 2;
    t->n_vocab = n;
    t->pieces = malloc((size_t)n * sizeof *t->pieces);
    t->lens = malloc((size_t)n * sizeof *t->lens);
    t->scores = malloc((size_t)n * sizeof *t->scores);
    t->kinds = malloc((size_t)n);
    t->byte_of = malloc((size_t)n * sizeof *t->byte_of);
    t->blob = malloc(piece_bytes + (size_t)n + 1);
    t->table = malloc(table_size * sizeof *t->table);
    t->table_mask = table_size - 1;
    if (!t->pieces || !t->lens || !t->scores || !t->kinds || !t->byte_of || !t->blob || !t->table) {
        tokenizer_close(t);
        return NULL;
    }
    for (int b = 0; b < 256; b++)
        t->byte_id[b] = -1;
    for (size_t i = 0; i < table_size; i++)
        t->table[i] = -1;
    t->bos = TOKEN_BOS;
    t->eos = TOKEN_EOS;
    t->unk = TOKEN_UNK;
    t->eot = -1;
    t->add_bos = true;
    t->space_prefix = true;
    return t;
}

/* Sets token id (ids are set in order; *blob_used tracks the blob). A byte kind whose
 * piece is not "<0xNN>" becomes a control token. */
static void tokenizer_set(tokenizer *t, int id, const char *piece, int len, float score,
                          enum piece_kind kind, size_t *blob_used)
{
    t->scores[id] = score;
    t->pieces[id] = t->blob + *blob_used;
    t->lens[id] = len;
    memcpy(t->blob + *blob_used, piece, (size_t)len);
    t->blob[*blob_used + (size_t)len] = '\0';
    *blob_used += (size_t)len + 1;

    int byte = parse_byte_piece(t->pieces[id], len);
    if (kind == KIND_BYTE && byte < 0)
        kind = KIND_CONTROL;
    t->kinds[id] = (unsigned char)kind;
    t->byte_of[id] = (short)(kind == KIND_BYTE ? byte : -1);
    if (kind == KIND_BYTE && t->byte_id[byte] < 0) {
        t->byte_id[byte] = id;
        t->n_byte_tokens++;
    }
    if (kind == KIND_NORMAL && len > 0)
        table_insert(t, id);
}

/* After every token is set: the bytes no normal piece contains. */
static void tokenizer_finish(tokenizer *t)
{
    bool seen[128] = { false };
    for (int id = 0; id < t->n_vocab; id++)
        if (t->kinds[id] == KIND_NORMAL)
            for (int k = 0; k < t->lens[id]; k++)
                if ((unsigned char)t->pieces[id][k] < 128)
                    seen[(unsigned char)t->pieces[id][k]] = true;
    for (int b = 0; b < 128; b++)
        t->barrier[b] = !seen[b];
}

/* ---- loading a llama2.c tokenizer.bin ---- */

static llm_status read_file(const char *path, unsigned char **data, size_t *size, llm_err *err)
{
    const char *why;
    FILE *f = input_file_fopen(path, &why);
    if (!f)
        return llm_fail(err, LLM_ERR_IO, "%s: %s", path, why);
    if (fseek(f, 0, SEEK_END) != 0) {
        int e = errno;
        fclose(f);
        return llm_fail(err, LLM_ERR_IO, "%s: cannot seek: %s", path, strerror(e));
    }
    long n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0) {
        int e = errno;
        fclose(f);
        return llm_fail(err, LLM_ERR_IO, "%s: cannot determine the size: %s", path, strerror(e));
    }
    unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf) {
        fclose(f);
        return llm_fail(err, LLM_ERR_NOMEM, "%s: out of memory reading %ld bytes", path, n);
    }
    if (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        int e = ferror(f) ? errno : 0;
        fclose(f);
        free(buf);
        return llm_fail(err, LLM_ERR_IO, "%s: read failed: %s", path, e ? strerror(e) : "file shrank while reading");
    }
    fclose(f);
    *data = buf;
    *size = (size_t)n;
    return LLM_OK;
}

static int32_t get_i32(const unsigned char *p)
{
    uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    int32_t r;
    memcpy(&r, &v, sizeof r);
    return r;
}

static float get_f32(const unsigned char *p)
{
    uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    float r;
    memcpy(&r, &v, sizeof r);
    return r;
}

/* Walks the records once: counts them and the piece bytes, or reports where the file
 * stops making sense. */
static llm_status scan_records(const char *path, const unsigned char *data, size_t size,
                               int *count, size_t *piece_bytes, llm_err *err)
{
    char a[32], b[32];
    if (size < 4)
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: %zu bytes, too short for a tokenizer (a 4-byte header and token records)",
                        path, size);
    int32_t max_len = get_i32(data);
    if (max_len < 0)
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: the header's max_token_length is %d, not a length (not a tokenizer.bin?)",
                        path, (int)max_len);
    size_t off = 4, bytes = 0;
    long long n = 0;
    while (off < size) {
        if (size - off < 8)
            return llm_fail(err, LLM_ERR_FORMAT,
                            "%s: token %lld at byte %s needs an 8-byte score and length, but only %zu bytes remain (truncated?)",
                            path, n, llm_group_digits(a, sizeof a, (long long)off), size - off);
        int32_t len = get_i32(data + off + 4);
        if (len < 0 || (size_t)len > size - off - 8)
            return llm_fail(err, LLM_ERR_FORMAT,
                            "%s: token %lld at byte %s claims %d bytes, but %s remain (truncated or not a tokenizer.bin?)",
                            path, n, llm_group_digits(a, sizeof a, (long long)off), (int)len,
                            llm_group_digits(b, sizeof b, (long long)(size - off - 8)));
        if (len > max_len || len > TOKENIZER_PIECE_MAX)
            return llm_fail(err, LLM_ERR_FORMAT,
                            "%s: token %lld at byte %s is %d bytes long, more than the %d %s (a damaged tokenizer?)",
                            path, n, llm_group_digits(a, sizeof a, (long long)off), (int)len,
                            len > max_len ? (int)max_len : (int)TOKENIZER_PIECE_MAX,
                            len > max_len ? "its header allows (max_token_length)"
                                          : "this program accepts");
        off += 8 + (size_t)len;
        bytes += (size_t)len;
        if (++n > INT32_MAX / 2)
            return llm_fail(err, LLM_ERR_FORMAT, "%s: implausibly many tokens", path);
    }
    *count = (int)n;
    *piece_bytes = bytes;
    return LLM_OK;
}

static llm_status check_count(const char *path, int n, int vocab_size, llm_err *err)
{
    char a[32], b[32];
    if (vocab_size > 0 && n != vocab_size)
        return llm_fail(err, LLM_ERR_MISMATCH, "%s holds %s tokens, but the model's vocab_size is %s (wrong tokenizer for this model?)",
                        path, llm_group_digits(a, sizeof a, n), llm_group_digits(b, sizeof b, vocab_size));
    if (n < 3)
        return llm_fail(err, LLM_ERR_FORMAT, "%s holds %d token%s; a tokenizer needs at least <unk>, <s> and </s>", path, n, n == 1 ? "" : "s");
    return LLM_OK;
}

static llm_status open_bin(const char *path, const unsigned char *data, size_t size,
                           int vocab_size, tokenizer **out, llm_err *err)
{
    int n = 0;
    size_t piece_bytes = 0;
    llm_status st = scan_records(path, data, size, &n, &piece_bytes, err);
    if (st == LLM_OK)
        st = check_count(path, n, vocab_size, err);
    if (st != LLM_OK)
        return st;
    tokenizer *t = tokenizer_alloc(n, piece_bytes);
    if (!t)
        return llm_fail(err, LLM_ERR_NOMEM, "%s: out of memory for %d tokens", path, n);
    size_t off = 4, used = 0;
    for (int id = 0; id < n; id++) {
        int len = get_i32(data + off + 4);
        const char *piece = (const char *)data + off + 8;
        enum piece_kind kind = id == TOKEN_UNK || id == TOKEN_BOS || id == TOKEN_EOS ? KIND_CONTROL
                               : parse_byte_piece(piece, len) >= 0        ? KIND_BYTE
                                                                          : KIND_NORMAL;
        tokenizer_set(t, id, piece, len, get_f32(data + off), kind, &used);
        off += 8 + (size_t)len;
    }
    tokenizer_finish(t);
    *out = t;
    return LLM_OK;
}

/* ---- loading from GGUF metadata ---- */

/* GGUF token types (tokenizer.ggml.token_type). */
enum { GGUF_TOKEN_NORMAL = 1, GGUF_TOKEN_UNKNOWN, GGUF_TOKEN_CONTROL, GGUF_TOKEN_USER_DEFINED,
       GGUF_TOKEN_UNUSED, GGUF_TOKEN_BYTE };

/* An id key: absent gives fallback; present must be an id inside the vocabulary
 * (0xFFFFFFFF, "none", gives -1). */
static llm_status special_id(const gguf *g, const char *name, const char *key, int n, int fallback,
                             int *out, llm_err *err)
{
    uint64_t v;
    *out = fallback;
    if (gguf_find_key(g, key) < 0)
        return LLM_OK;
    if (!gguf_get_uint(g, key, &v))
        return llm_fail(err, LLM_ERR_FORMAT, "%s: %s is not a token id", name, key);
    if (v == 0xFFFFFFFFu || v == UINT64_MAX) {
        *out = -1;
        return LLM_OK;
    }
    if (v >= (uint64_t)n)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: %s is %llu, outside the vocabulary of %d tokens",
                        name, key, (unsigned long long)v, n);
    *out = (int)v;
    return LLM_OK;
}

/* The kind of GGUF token type `type` (0: the file has no types; decided from the
 * piece as for a tokenizer.bin). */
static enum piece_kind gguf_kind(int64_t type, int id, int bos, int eos, int unk,
                                 const char *piece, int plen)
{
    switch (type) {
    case GGUF_TOKEN_NORMAL: return KIND_NORMAL;
    case GGUF_TOKEN_BYTE: return KIND_BYTE;
    case GGUF_TOKEN_USER_DEFINED: return KIND_USER;
    case GGUF_TOKEN_UNUSED: return KIND_UNUSED;
    case GGUF_TOKEN_UNKNOWN:
    case GGUF_TOKEN_CONTROL: return KIND_CONTROL;
    default:
        return id == bos || id == eos || id == unk ? KIND_CONTROL
               : parse_byte_piece(piece, plen) >= 0 ? KIND_BYTE : KIND_NORMAL;
    }
}

/* The vocabularies tokenizer.ggml.model names (the names are the tokenizers', not the
 * model families' that share them): SentencePiece, byte-level BPE, and Gemma 4's BPE,
 * whose pre-tokenizer is always "gemma4" (as llama.cpp sets it), which reads
 * SentencePiece's pieces ("▁" for a space, "<0xNN>" byte tokens, no GPT-2 byte
 * mapping). */
static const struct {
    const char *name;
    bool bpe;
    const char *pre; /* the pre-tokenizer the model implies, or NULL: tokenizer.ggml.pre */
} vocab_models[] = {
    {.name = "llama", .bpe = false},
    {.name = "gpt2", .bpe = true},
    {.name = "gemma4", .bpe = true, .pre = "gemma4"},
};

/* The GGUF vocabulary's arrays, checked. */
typedef struct {
    gguf_array tokens, scores, types, merges;
    bool has_scores, has_types, bpe;
    bool spm_pieces; /* BPE whose pieces are SentencePiece's (its pre-tokenizer says) */
    const char *pre;
} gguf_vocab;

static llm_status vocab_arrays(const gguf *g, const char *name, gguf_vocab *v, llm_err *err)
{
    const char *model = gguf_get_string(g, "tokenizer.ggml.model", NULL);
    if (!model && gguf_string_has_nul(g, "tokenizer.ggml.model"))
        return llm_fail(err, LLM_ERR_FORMAT, "%s: tokenizer.ggml.model holds a NUL byte: a "
                        "corrupt file", name);
    if (!model)
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: no tokenizer in the file (tokenizer.ggml.model is missing); give one "
                        "with -z FILE", name);
    size_t k = 0;
    while (k < sizeof vocab_models / sizeof vocab_models[0] && strcmp(vocab_models[k].name, model))
        k++;
    if (k == sizeof vocab_models / sizeof vocab_models[0])
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: tokenizer model '%.40s' is not supported: llmchat runs SentencePiece "
                        "('llama'), byte-level BPE ('gpt2') and Gemma 4's ('gemma4') "
                        "vocabularies", name, model);
    v->bpe = vocab_models[k].bpe;
    if (v->bpe) {
        v->pre = vocab_models[k].pre ? vocab_models[k].pre
                                     : gguf_get_string(g, "tokenizer.ggml.pre", NULL);
        if (!v->pre && gguf_string_has_nul(g, "tokenizer.ggml.pre"))
            return llm_fail(err, LLM_ERR_FORMAT, "%s: tokenizer.ggml.pre holds a NUL byte: a "
                            "corrupt file", name);
        if (!v->pre)
            return llm_fail(err, LLM_ERR_FORMAT, "%s: a byte-level BPE vocabulary without "
                            "tokenizer.ggml.pre: which pre-tokenizer it needs is unknown", name);
        if (!bpe_pre_known(v->pre, NULL, &v->spm_pieces))
            return llm_fail(err, LLM_ERR_FORMAT, "%s: pre-tokenizer '%.40s' (tokenizer.ggml.pre) "
                            "is not supported: llmchat runs llama-bpe (Llama 3), qwen2, qwen35, gpt-4o, "
                            "smollm, gpt-2 and default", name, v->pre);
        if (!gguf_get_array(g, "tokenizer.ggml.merges", &v->merges) ||
            v->merges.type != GGUF_TYPE_STRING)
            return llm_fail(err, LLM_ERR_FORMAT, "%s: tokenizer.ggml.merges is missing or not an "
                            "array of strings (a byte-level BPE vocabulary needs its merges)", name);
    }
    v->has_scores = gguf_get_array(g, "tokenizer.ggml.scores", &v->scores);
    v->has_types = gguf_get_array(g, "tokenizer.ggml.token_type", &v->types);
    if (!gguf_get_array(g, "tokenizer.ggml.tokens", &v->tokens) || v->tokens.type != GGUF_TYPE_STRING)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: tokenizer.ggml.tokens is missing or not an "
                        "array of strings", name);
    if (v->tokens.n > (uint64_t)INT32_MAX / 2)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: implausibly many tokens", name);
    if (v->has_scores && (v->scores.n != v->tokens.n || (v->scores.type != GGUF_TYPE_FLOAT32 &&
                                                         v->scores.type != GGUF_TYPE_FLOAT64)))
        return llm_fail(err, LLM_ERR_FORMAT, "%s: tokenizer.ggml.scores does not hold one number "
                        "per token", name);
    gguf_value_type tt = v->types.type;
    if (v->has_types && (v->types.n != v->tokens.n || tt == GGUF_TYPE_STRING ||
                         tt == GGUF_TYPE_ARRAY || tt == GGUF_TYPE_FLOAT32 || tt == GGUF_TYPE_FLOAT64))
        return llm_fail(err, LLM_ERR_FORMAT, "%s: tokenizer.ggml.token_type does not hold one "
                        "integer per token", name);
    return LLM_OK;
}

/* Reads every piece into t: SentencePiece's "▁" becomes a space (in Gemma 4's BPE
 * pieces too); a byte-level BPE normal piece becomes the bytes it stands for (one that
 * is not GPT-2 byte-mapped text is kept as it is and never produced). */
static llm_status read_pieces(tokenizer *t, const gguf_vocab *v, const char *name, int unk,
                              char *piece, llm_err *err)
{
    const unsigned char *cur = NULL;
    size_t used = 0;
    for (int id = 0; id < t->n_vocab; id++) {
        const char *s;
        uint64_t len;
        gguf_array_string(&v->tokens, &cur, &s, &len);
        int64_t type = v->has_types ? gguf_array_int(&v->types, (uint64_t)id) : 0;
        int plen = -1;
        bool byte_level = v->bpe && !v->spm_pieces;
        if (byte_level && (type == GGUF_TOKEN_NORMAL || !v->has_types))
            plen = bpe_unmap(piece, s, (size_t)len);
        bool raw = plen < 0;
        if (raw)
            plen = byte_level ? (int)len : (int)spaces_unescaped(piece, s, (size_t)len);
        if (len > 4 * (uint64_t)TOKENIZER_PIECE_MAX || plen > TOKENIZER_PIECE_MAX)
            return llm_fail(err, LLM_ERR_FORMAT, "%s: token %d of tokenizer.ggml.tokens has %llu "
                            "bytes, more than the %d a piece may have", name, id,
                            (unsigned long long)len, TOKENIZER_PIECE_MAX);
        if (byte_level && raw)
            memcpy(piece, s, (size_t)plen);
        enum piece_kind kind = gguf_kind(type, id, t->bos, t->eos, unk, piece, plen);
        if (byte_level && kind == KIND_NORMAL && raw)
            kind = KIND_UNUSED;
        float score = v->has_scores ? (float)gguf_array_float(&v->scores, (uint64_t)id) : 0.0f;
        tokenizer_set(t, id, piece, plen, score, kind, &used);
    }
    return LLM_OK;
}

typedef struct {
    int len, id;
} sized_id;

static int longer_first(const void *a, const void *b)
{
    const sized_id *x = a, *y = b;
    return x->len != y->len ? y->len - x->len : x->id - y->id;
}

/* A user-defined token that text is split at: not one spelt as a template marker
 * ("<|user|>"), which the GGUF converters make control tokens (a file that calls one
 * user-defined still never gets it from typed text). Others are split out as Hugging
 * Face's tokenizers split added tokens, also those llama.cpp 0.4.0 takes for control
 * tokens by their spelling ("</s>" in Gemma 3's and Phi-3's vocabularies, which the
 * goldens' references give as the token). */
static bool splits_text(const tokenizer *t, int id)
{
    const char *p = t->pieces[id];
    int len = t->lens[id];
    bool marker = len >= 4 && p[0] == '<' && p[1] == '|' && p[len - 2] == '|' && p[len - 1] == '>';
    return t->kinds[id] == KIND_USER && len > 0 && !marker;
}

/* The user-defined tokens (Gemma's newline, tab and space runs and HTML tags, Qwen's
 * <think>), longest first: text is split at them before it is encoded, as llama.cpp
 * and Hugging Face's tokenizers split out added tokens. False when out of memory. */
static bool collect_user(tokenizer *t)
{
    int n = 0;
    for (int id = 0; id < t->n_vocab; id++)
        n += splits_text(t, id);
    if (n == 0)
        return true;
    sized_id *order = malloc((size_t)n * sizeof *order);
    t->user_ids = malloc((size_t)n * sizeof *t->user_ids);
    if (!order || !t->user_ids) {
        free(order);
        return false;
    }
    for (int id = 0; id < t->n_vocab; id++)
        if (splits_text(t, id))
            order[t->n_user++] = (sized_id){t->lens[id], id};
    qsort(order, (size_t)n, sizeof *order, longer_first);
    for (int i = 0; i < n; i++)
        t->user_ids[i] = order[i].id;
    free(order);
    return true;
}

/* The ids that end a generation, as llama.cpp collects them: EOS, the EOT and EOM keys,
 * and the control tokens spelt as the end-of-turn markers of the common templates
 * (harmony's <|return|> and <|call|> among them). */
static void collect_eog(tokenizer *t, int eot, int eom)
{
    static const char *const texts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
                                        "<|endoftext|>", "<|eom_id|>", "<EOT>", "<|return|>",
                                        "<|call|>", "<turn|>"};
    t->eot = eot;
    for (size_t k = 0; k < sizeof texts / sizeof texts[0] && t->eot < 0; k++)
        t->eot = tokenizer_special(t, texts[k]);
    int cand[2 + sizeof texts / sizeof texts[0]];
    int n = 0;
    cand[n++] = t->eot;
    cand[n++] = eom;
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++)
        cand[n++] = tokenizer_special(t, texts[k]);
    t->n_eog = 0;
    t->eog[t->n_eog++] = t->eos;
    for (int i = 0; i < n; i++) {
        bool dup = cand[i] < 0;
        for (int j = 0; j < t->n_eog && !dup; j++)
            dup = t->eog[j] == cand[i];
        if (!dup && t->n_eog < (int)(sizeof t->eog / sizeof t->eog[0]))
            t->eog[t->n_eog++] = cand[i];
    }
}

/* o200k_harmony (gpt-oss), as llama.cpp 0.4.0 adjusts it: the headers a reply is made of
 * (<|channel|>, <|message|>, <|start|>, <|constrain|>) are written as text, like
 * user-defined tokens, so that a reply's text shows its channels; and when the vocabulary
 * ends a generation with <|return|> and <|call|>, <|end|>, which only closes one message
 * of a reply, is not an end of generation, and is written as text too. Typed text still
 * never yields them (splits_text leaves markers out). */
static void adjust_harmony(tokenizer *t)
{
    static const char *const headers[] = {"<|channel|>", "<|message|>", "<|start|>",
                                          "<|constrain|>"};
    for (size_t k = 0; k < sizeof headers / sizeof headers[0]; k++) {
        int id = tokenizer_special(t, headers[k]);
        if (id >= 0)
            t->kinds[id] = KIND_USER;
    }
    int end = tokenizer_special(t, "<|end|>");
    bool has_return = false, has_call = false, has_end = false;
    for (int i = 0; i < t->n_eog; i++) {
        const char *p = t->pieces[t->eog[i]];
        has_return |= !strcmp(p, "<|return|>");
        has_call |= !strcmp(p, "<|call|>");
        has_end |= t->eog[i] == end;
    }
    if (!(has_return && has_call && has_end))
        return;
    int kept = 0;
    for (int i = 0; i < t->n_eog; i++)
        if (t->eog[i] != end)
            t->eog[kept++] = t->eog[i];
    t->n_eog = kept;
    t->kinds[end] = KIND_USER;
}

static int lookup_vocab(const void *vocab, const char *s, size_t len)
{
    return lookup(vocab, s, len);
}

/* Can a vocabulary lack byte b's token and still encode every character? C0, C1 and
 * F5-FF occur in no valid UTF-8 (the encoder makes text valid first), F1 and F2 only in
 * code points of planes 4-11, where Unicode assigns nothing; llama.cpp drops such a
 * byte, and so does the encoder (StarCoder's, Refact's and MPT's vocabularies lack
 * some of them). */
static bool byte_may_lack(int b)
{
    return b == 0xc0 || b == 0xc1 || b == 0xf1 || b == 0xf2 || b >= 0xf5;
}

/* The BPE half: every byte that assigned characters hold must be a token (byte-level:
 * its one-byte piece; Gemma 4: its "<0xNN>", found as the pieces were read); the merges
 * and pre-tokenizer. */
static llm_status finish_bpe(tokenizer *t, const gguf_vocab *v, const char *name, llm_err *err)
{
    int missing = 0, first = -1; /* all the bytes lacking; the first that may not */
    for (int b = 0; b < 256; b++) {
        char c = (char)b;
        if (!v->spm_pieces)
            t->byte_id[b] = lookup(t, &c, 1);
        missing += t->byte_id[b] < 0;
        if (t->byte_id[b] < 0 && !byte_may_lack(b) && first < 0)
            first = b;
    }
    if (first >= 0)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: the BPE vocabulary lacks the tokens of %d of "
                        "the 256 bytes (the first: 0x%02X): it cannot encode every text",
                        name, missing, first);
    t->n_byte_tokens = 256;
    return tokenizer_bpe_new(name, v->pre, &v->merges, lookup_vocab, t, &t->bpe, err);
}

llm_status tokenizer_from_gguf(const gguf *g, const char *name, int vocab_size, tokenizer **out,
                               llm_err *err)
{
    *out = NULL;
    gguf_vocab v = {0};
    llm_status st = vocab_arrays(g, name, &v, err);
    int n = (int)v.tokens.n;
    if (st != LLM_OK || (st = check_count(name, n, vocab_size, err)) != LLM_OK)
        return st;

    /* llama.cpp's defaults for a BPE vocabulary without the keys: 11, and no UNK */
    int dflt_bos = v.bpe ? 11 : TOKEN_BOS, dflt_eos = v.bpe ? 11 : TOKEN_EOS;
    int bos, eos, unk, eot, eom;
    if ((st = special_id(g, name, "tokenizer.ggml.bos_token_id", n, dflt_bos, &bos, err)) != LLM_OK ||
        (st = special_id(g, name, "tokenizer.ggml.eos_token_id", n, dflt_eos, &eos, err)) != LLM_OK ||
        (st = special_id(g, name, "tokenizer.ggml.unknown_token_id", n, v.bpe ? -1 : TOKEN_UNK,
                         &unk, err)) != LLM_OK ||
        (st = special_id(g, name, "tokenizer.ggml.eot_token_id", n, -1, &eot, err)) != LLM_OK ||
        (st = special_id(g, name, "tokenizer.ggml.eom_token_id", n, -1, &eom, err)) != LLM_OK)
        return st;
    if (bos < 0 || eos < 0 || bos >= n || eos >= n)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: the vocabulary has no %s token", name,
                        bos < 0 || bos >= n ? "BOS" : "EOS");

    /* the pieces' bytes: the strings' total length bounds them ("▁" and GPT-2's
     * mapping only shrink them) */
    size_t piece_bytes = (size_t)(v.tokens.end - v.tokens.data) - 8 * (size_t)n;
    tokenizer *t = tokenizer_alloc(n, piece_bytes);
    char *piece = malloc(piece_bytes + 1);
    if (!t || !piece) {
        tokenizer_close(t);
        free(piece);
        return llm_fail(err, LLM_ERR_NOMEM, "%s: out of memory for %d tokens", name, n);
    }
    t->bos = bos;
    t->eos = eos;
    t->unk = unk >= 0 ? unk : v.bpe ? -1 : TOKEN_UNK;
    bool flag, add_bos = true;
    if (v.bpe)
        bpe_pre_known(v.pre, &add_bos, NULL);
    t->space_prefix = !v.bpe;
    if (gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", &flag) && !v.bpe)
        t->space_prefix = flag;
    t->add_bos = gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &flag) ? flag : add_bos;
    if (v.spm_pieces) /* llama.cpp 0.4.0 always adds Gemma 4's BOS, whatever the file says */
        t->add_bos = true;

    st = read_pieces(t, &v, name, unk, piece, err);
    free(piece);
    if (st == LLM_OK)
        tokenizer_finish(t);
    if (st == LLM_OK && v.bpe)
        st = finish_bpe(t, &v, name, err);
    if (st != LLM_OK) {
        tokenizer_close(t);
        return st;
    }
    if (!collect_user(t)) {
        tokenizer_close(t);
        return llm_fail(err, LLM_ERR_NOMEM, "%s: out of memory for the user-defined tokens", name);
    }
    collect_eog(t, eot, eom);
    adjust_harmony(t);
    *out = t;
    return LLM_OK;
}

/* A GGUF file given to tokenizer_open: mapped, parsed, its vocabulary read. */
static llm_status open_gguf(const char *path, int vocab_size, tokenizer **out, llm_err *err)
{
    const char *why;
    int fd = input_file_open(path, &why);
    if (fd < 0)
        return llm_fail(err, LLM_ERR_IO, "%s: %s", path, why);
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size <= 0) {
        close(fd);
        return llm_fail(err, LLM_ERR_IO, "%s: cannot read its size", path);
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int map_errno = errno;
    close(fd);
    if (map == MAP_FAILED)
        return llm_fail(err, LLM_ERR_IO, "%s: cannot map: %s", path, strerror(map_errno));
    gguf *g;
    llm_status s = gguf_parse(map, (size_t)st.st_size, path, &g, err);
    if (s == LLM_OK) {
        s = tokenizer_from_gguf(g, path, vocab_size, out, err);
        gguf_free(g);
    }
    munmap(map, (size_t)st.st_size);
    return s;
}

llm_status tokenizer_open(const char *path, int vocab_size, tokenizer **out, llm_err *err)
{
    *out = NULL;
    const char *why;
    FILE *f = input_file_fopen(path, &why);
    if (!f)
        return llm_fail(err, LLM_ERR_IO, "%s: %s", path, why);
    unsigned char magic[4] = {0};
    size_t got = fread(magic, 1, 4, f);
    fclose(f);
    if (got == 4 && memcmp(magic, "GGUF", 4) == 0)
        return open_gguf(path, vocab_size, out, err);

    unsigned char *data = NULL;
    size_t size = 0;
    llm_status st = read_file(path, &data, &size, err);
    if (st != LLM_OK)
        return st;
    st = open_bin(path, data, size, vocab_size, out, err);
    free(data);
    return st;
}

void tokenizer_close(tokenizer *t)
{
    if (!t)
        return;
    tokenizer_bpe_free(t->bpe);
    free(t->user_ids);
    free(t->pieces);
    free(t->lens);
    free(t->scores);
    free(t->kinds);
    free(t->byte_of);
    free(t->blob);
    free(t->table);
    free(t);
}

int tokenizer_vocab_size(const tokenizer *t) { return t->n_vocab; }
int tokenizer_bos(const tokenizer *t) { return t->bos; }
int tokenizer_eos(const tokenizer *t) { return t->eos; }
int tokenizer_unk(const tokenizer *t) { return t->unk; }
int tokenizer_eot(const tokenizer *t) { return t->eot; }
bool tokenizer_adds_bos(const tokenizer *t) { return t->add_bos; }
bool tokenizer_is_bpe(const tokenizer *t) { return t->bpe != NULL; }

bool tokenizer_is_eog(const tokenizer *t, int id)
{
    for (int i = 0; i < t->n_eog; i++)
        if (t->eog[i] == id)
            return true;
    return id == t->eos;
}

int tokenizer_special(const tokenizer *t, const char *piece)
{
    size_t len = strlen(piece);
    for (int id = 0; id < t->n_vocab; id++)
        if ((t->kinds[id] == KIND_CONTROL || t->kinds[id] == KIND_USER) &&
            (size_t)t->lens[id] == len && memcmp(t->pieces[id], piece, len) == 0)
            return id;
    return -1;
}

int tokenizer_token_type(const tokenizer *t, int id)
{
    if (id < 0 || id >= t->n_vocab)
        return 0;
    switch ((enum piece_kind)t->kinds[id]) {
    case KIND_NORMAL: return 1;
    case KIND_CONTROL: return id == t->unk ? 2 : 3;
    case KIND_USER: return 4;
    case KIND_UNUSED: return 5;
    case KIND_BYTE: return 6;
    }
    return 1;
}

/* Borrowed: points into the tokenizer, valid until tokenizer_close. */
const char *tokenizer_piece(const tokenizer *t, int id)
{
    return id >= 0 && id < t->n_vocab ? t->pieces[id] : "";
}

float tokenizer_score(const tokenizer *t, int id)
{
    return id >= 0 && id < t->n_vocab ? t->scores[id] : 0.0f;
}

bool tokenizer_is_control(const tokenizer *t, int id)
{
    return id >= 0 && id < t->n_vocab && t->kinds[id] == KIND_CONTROL;
}

int tokenizer_byte(const tokenizer *t, int id)
{
    return id >= 0 && id < t->n_vocab ? t->byte_of[id] : -1;
}

/* ---- encoding ---- */

typedef merge_symbol symbol;

/* What maybe_push reads: the vocabulary and the normalized text. */
typedef struct {
    const tokenizer *t;
    const char *text;
} spm_text;

/* Queues the pair (left, right) if their concatenation is a normal piece (a
 * merge_pair_fn). */
static bool maybe_push(void *ctx, const symbol *sym, int left, int right, merge_heap *h)
{
    const spm_text *st = ctx;
    if (left < 0 || right < 0 || sym[left].frozen || sym[right].frozen)
        return true;
    int size = sym[left].len + sym[right].len;
    int id = lookup(st->t, st->text + sym[left].start, (size_t)size);
    if (id < 0)
        return true;
    /* the highest score merges first */
    return merge_heap_push(h, (merge_pair){-st->t->scores[id], left, right, size});
}

/* Appends id to the output (counting past max). */
static void emit(int *ids, int max, int *n, int id)
{
    if (ids && *n < max)
        ids[*n] = id;
    (*n)++;
}

/* SentencePiece over text[0..tlen) (no NUL needed): the dummy prefix, then merging. */
static int encode_spm(const tokenizer *t, const char *text, size_t tlen, int *ids, int max)
{
    if (tlen > (size_t)INT32_MAX - 2)
        return -1;

    /* The normalized text: the dummy-prefix space (unless the vocabulary says
     * otherwise), then the text with a typed "▁" (U+2581) as the space it stands for:
     * SentencePiece writes every space as one, so the two are the same to it. */
    char *norm = malloc(tlen + 2);
    symbol *sym = malloc((tlen + 1) * sizeof *sym);
    merge_heap heap = {0};
    int n = -1;
    if (!norm || !sym)
        goto done;
    size_t prefix = t->space_prefix ? 1 : 0;
    norm[0] = ' ';
    size_t nlen = prefix;
    for (size_t i = 0; i < tlen; i++) {
        if (text[i] == '\xe2' && i + 2 < tlen && text[i + 1] == '\x96' && text[i + 2] == '\x81') {
            norm[nlen++] = ' ';
            i += 2;
        } else {
            norm[nlen++] = text[i];
        }
    }
    norm[nlen] = '\0';

    int n_sym = 0;
    for (size_t off = 0; off < nlen;) {
        int len = textfmt_utf8_len((const unsigned char *)norm + off, nlen - off);
        symbol *s = &sym[n_sym];
        s->start = (int)off;
        s->len = len ? len : 1;
        s->frozen = len == 0;
        s->prev = n_sym - 1;
        s->next = n_sym + 1;
        off += (size_t)s->len;
        n_sym++;
    }
    sym[n_sym - 1].next = -1;

    /* A barrier symbol (an invalid byte, or an ASCII byte such as '\n' that no piece
     * contains) can never be part of a merge, so the stretches between barriers
     * merge independently: each is run to completion on its own. The result is the
     * same as one queue over the whole text, but the queue stays small (one line,
     * not the whole file), which keeps it in cache. */
    spm_text st = {.t = t, .text = norm};
    for (int i = 0; i <= n_sym; i++) {
        int is_barrier = i == n_sym || sym[i].frozen ||
                         (sym[i].len == 1 && (unsigned char)norm[sym[i].start] < 128 &&
                          t->barrier[(unsigned char)norm[sym[i].start]]);
        if (!is_barrier) {
            if (i > 0 && !maybe_push(&st, sym, i - 1, i, &heap))
                goto done;
            continue;
        }
        if (!merge_heap_run(&heap, sym, maybe_push, &st))
            goto done;
    }

    n = 0;
    int prev_unk = 0;
    for (int i = 0; i >= 0; i = sym[i].next) {
        const symbol *s = &sym[i];
        int id = s->frozen ? -1 : lookup(t, norm + s->start, (size_t)s->len);
        if (id >= 0) {
            emit(ids, max, &n, id);
            prev_unk = 0;
        } else if (t->n_byte_tokens > 0) {
            for (int k = 0; k < s->len; k++) {
                int b = t->byte_id[(unsigned char)norm[s->start + k]];
                emit(ids, max, &n, b >= 0 ? b : t->unk);
            }
            prev_unk = 0;
        } else {
            if (!prev_unk) /* SentencePiece folds a run of unknown symbols into one <unk> */
                emit(ids, max, &n, t->unk);
            prev_unk = 1;
        }
    }

done:
    free(norm);
    free(sym);
    merge_heap_free(&heap);
    return n;
}

/* One stretch of text without user-defined tokens. */
static int encode_text(const tokenizer *t, const char *text, size_t len, int *ids, int max)
{
    if (len == 0)
        return 0;
    if (t->bpe)
        return tokenizer_bpe_encode(t->bpe, t->byte_id, text, len, ids, max);
    return encode_spm(t, text, len, ids, max);
}

/* A stretch of the text: bytes [start, start + len), or the user-defined token id. */
typedef struct {
    size_t start, len;
    int id; /* -1: text */
} segment;

/* The first occurrence of needle (nlen > 0 bytes) in hay (hlen bytes), or NULL. */
static const char *find_bytes(const char *hay, size_t hlen, const char *needle, size_t nlen)
{
    for (const char *p = hay; nlen <= hlen && p <= hay + (hlen - nlen); p++) {
        p = memchr(p, needle[0], (size_t)(hay + (hlen - nlen) - p) + 1);
        if (!p)
            return NULL;
        if (!memcmp(p, needle, nlen))
            return p;
    }
    return NULL;
}

/* A growing list of segments. */
typedef struct {
    segment *v;
    size_t n, cap;
} segment_list;

static bool push_segment(segment_list *l, segment s)
{
    if (l->n == l->cap) {
        size_t cap = l->cap * 2 + 16;
        segment *grown = realloc(l->v, cap * sizeof *grown);
        if (!grown)
            return false;
        l->v = grown;
        l->cap = cap;
    }
    l->v[l->n++] = s;
    return true;
}

/* Copies in to out with every text segment split at each occurrence of user-defined
 * token id, leftmost first (llama.cpp's special-token partition, one token at a time,
 * longest first). False when out of memory. */
static bool split_at(const tokenizer *t, const char *text, int id, const segment_list *in,
                     segment_list *out)
{
    const char *piece = t->pieces[id];
    size_t plen = (size_t)t->lens[id];
    out->n = 0;
    for (size_t i = 0; i < in->n; i++) {
        segment s = in->v[i];
        const char *hit;
        while (s.id < 0 && s.len >= plen && (hit = find_bytes(text + s.start, s.len, piece, plen))) {
            size_t at = (size_t)(hit - text), left = at - s.start;
            if ((left > 0 && !push_segment(out, (segment){s.start, left, -1})) ||
                !push_segment(out, (segment){at, plen, id}))
                return false;
            s = (segment){at + plen, s.start + s.len - at - plen, -1};
        }
        if ((s.id >= 0 || s.len > 0) && !push_segment(out, s))
            return false;
    }
    return true;
}

int tokenizer_encode(const tokenizer *t, const char *text, int *ids, int max)
{
    size_t tlen = strlen(text);
    if (t->n_user == 0)
        return encode_text(t, text, tlen, ids, max);
    segment_list a = {0}, b = {0};
    bool ok = push_segment(&a, (segment){0, tlen, -1});
    for (int u = 0; u < t->n_user && ok; u++) {
        ok = split_at(t, text, t->user_ids[u], &a, &b);
        segment_list swap = a;
        a = b;
        b = swap;
    }
    int total = ok ? 0 : -1;
    for (size_t i = 0; i < a.n && total >= 0; i++) {
        if (a.v[i].id >= 0) {
            emit(ids, max, &total, a.v[i].id);
            continue;
        }
        int room = total < max ? max - total : 0;
        int got = encode_text(t, text + a.v[i].start, a.v[i].len, room > 0 ? ids + total : NULL,
                              room);
        total = got < 0 ? -1 : total + got;
    }
    free(a.v);
    free(b.v);
    return total;
}

/* ---- decoding ---- */

/* Returns the number of bytes written (before the NUL). A byte token "<0x00>" writes
 * one NUL byte and returns 1, so callers should use the length, not strlen. */
size_t tokenizer_decode(const tokenizer *t, int prev, int id, char *buf, size_t size)
{
    if (size == 0)
        return 0;
    buf[0] = '\0';
    if (id < 0 || id >= t->n_vocab || t->kinds[id] == KIND_CONTROL)
        return 0;
    if (t->kinds[id] == KIND_BYTE) {
        if (size < 2)
            return 0;
        buf[0] = (char)t->byte_of[id];
        buf[1] = '\0';
        return 1;
    }
    const char *p = t->pieces[id];
    size_t len = (size_t)t->lens[id];
    if (prev == t->bos && t->space_prefix && len > 0 && p[0] == ' ') {
        p++;
        len--;
    }
    if (len > size - 1)
        len = size - 1;
    memcpy(buf, p, len);
    buf[len] = '\0';
    return len;
}
