/* tokenizer_bpe.c — byte-level BPE (see tokenizer_bpe.h): GPT-2's byte mapping, the
 * merges table, the pre-tokenizers and the encoder, as llama.cpp runs them.
 *
 * Owns: the merges (a blob of their halves' raw bytes and an open-addressing hash from
 * (pair text, split) to rank) and the compiled PCRE2 expressions of the pre-tokenizer.
 * Borrows the vocabulary lookup. Immutable after tokenizer_bpe_new; encoding allocates
 * its own work space, so several threads may encode at once.
 *
 * Text is first made valid UTF-8 as llama.cpp decodes it: a byte that does not start a
 * well-formed sequence becomes U+FFFD (so does a surrogate or a code point past
 * U+10FFFF, which llama.cpp rejects), an overlong sequence its code point. The
 * expressions are llama.cpp's (llama-vocab.cpp) with "\s" spelt out as llama.cpp's
 * whitespace table (Unicode White_Space: PCRE2's \s lacks U+0085), run one after the
 * other, each splitting the pieces the previous one left (matches and the text between
 * them). Does not: parse special tokens (templates insert them by id). */
#include "tokenizer_bpe.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "merge_heap.h"

enum { BPE_MAX_REGEX = 4 };

typedef struct {
    uint32_t off;       /* into blob: the pair's text, both halves */
    uint32_t left_len;  /* bytes of the left half */
    uint32_t len;       /* bytes of both */
    int rank;
} merge_entry;

struct tokenizer_bpe {
    pcre2_code *re[BPE_MAX_REGEX];
    int n_re;
    bool ignore_merges;     /* llama-bpe: a word that is a token is that token */
    bool spm_spaces;        /* gemma4: see pre_kind */
    merge_entry *merges;    /* (n_merges) */
    int n_merges;
    char *blob;             /* the merges' raw bytes */
    int *table;             /* (table_mask + 1) indices into merges, -1 = empty */
    size_t table_mask;
    bpe_lookup_fn lookup;
    const void *vocab;      /* borrowed */
};

/* ---- GPT-2's byte-to-character mapping ---- */

/* The printable Latin-1 bytes stand for themselves; the others (0-32, 127-160, 173)
 * are moved to U+0100 upwards, in order. */
static unsigned byte_to_cp(unsigned b)
{
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174)
        return b;
    unsigned n = 0;
    for (unsigned c = 0; c < b; c++)
        if (!((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || c >= 174))
            n++;
    return 256 + n;
}

/* One UTF-8 character at s (len bytes left): its code point and length, or 0 when
 * malformed (strict: no overlongs, no surrogates). */
static int utf8_strict(const unsigned char *s, size_t len, unsigned *cp)
{
    unsigned c = s[0];
    int n = c < 0x80 ? 1 : c >= 0xc2 && c < 0xe0 ? 2 : c >= 0xe0 && c < 0xf0 ? 3
            : c >= 0xf0 && c < 0xf5 ? 4 : 0;
    if (n == 0 || (size_t)n > len)
        return 0;
    unsigned v = n == 1 ? c : c & (0x3fu >> (n - 1));
    for (int k = 1; k < n; k++) {
        if ((s[k] & 0xc0) != 0x80)
            return 0;
        v = v << 6 | (s[k] & 0x3fu);
    }
    static const unsigned min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < min[n] || v > 0x10ffff || (v >= 0xd800 && v < 0xe000))
        return 0;
    *cp = v;
    return n;
}

int bpe_unmap(char *out, const char *s, size_t len)
{
    static short back[324];
    static int ready;
    if (!ready) { /* idempotent: racing threads write the same values */
        for (unsigned b = 0; b < 256; b++)
            back[byte_to_cp(b)] = (short)b;
        ready = 1;
    }
    int o = 0;
    for (size_t i = 0; i < len;) {
        unsigned cp;
        int n = utf8_strict((const unsigned char *)s + i, len - i, &cp);
        if (n == 0 || cp >= 324 || (cp < 256 && byte_to_cp(cp) != cp))
            return -1;
        out[o++] = (char)back[cp];
        i += (size_t)n;
    }
    return o;
}

/* ---- the pre-tokenizers ---- */

/* llama.cpp's whitespace: Unicode White_Space. */
#define WS "\\t\\n\\x{0B}\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}" \
           "\\x{202F}\\x{205F}\\x{3000}"
#define RE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WS "\\p{L}\\p{N}]+|[" WS \
                "]+(?![^" WS "])|[" WS "]+"
#define RE_LLAMA3 "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|" \
                  "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^" WS "\\p{L}\\p{N}]+[\\r\\n]*|" \
                  "[" WS "]*[\\r\\n]+|[" WS "]+(?![^" WS "])|[" WS "]+"
/* Qwen2's: Llama 3's with every digit alone */
#define RE_QWEN2 "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|" \
                 "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^" WS "\\p{L}\\p{N}]+[\\r\\n]*|" \
                 "[" WS "]*[\\r\\n]+|[" WS "]+(?![^" WS "])|[" WS "]+"
/* Qwen 3.5's: Qwen2's with combining marks (\p{M}) counted as letters, so that a word
 * keeps its marks */
#define RE_QWEN35 "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|" \
                  "[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^" WS "\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|" \
                  "[" WS "]*[\\r\\n]+|[" WS "]+(?![^" WS "])|[" WS "]+"
/* o200k (GPT-4o, Phi-4-mini): words split before capitals, a contraction kept with its
 * word (any case, as tiktoken's (?i:) matches it), digits by threes, "/" kept with
 * punctuation */
#define O200K_UPPER "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]"
#define O200K_LOWER "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]"
#define O200K_CONTRACTION "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
#define RE_O200K "[^\\r\\n\\p{L}\\p{N}]?" O200K_UPPER "*" O200K_LOWER "+" O200K_CONTRACTION "|" \
                 "[^\\r\\n\\p{L}\\p{N}]?" O200K_UPPER "+" O200K_LOWER "*" O200K_CONTRACTION "|" \
                 "\\p{N}{1,3}| ?[^" WS "\\p{L}\\p{N}]+[\\r\\n/]*|[" WS "]*[\\r\\n]+|" \
                 "[" WS "]+(?![^" WS "])|[" WS "]+"

typedef struct {
    const char *names[8];
    const char *re[BPE_MAX_REGEX];
    bool ignore_merges, add_bos;
    /* SentencePiece-style BPE (Gemma 4): merges and pieces spell a space "▁" and are
     * not GPT-2 byte-mapped; a typed "▁" is a space too (llama.cpp writes every space as
     * "▁" before merging, so the two cannot differ); a word of newlines alone that is a
     * token is that token */
    bool spm_spaces;
} pre_kind;

static const pre_kind pre_kinds[] = {
    {.names = {"llama-bpe", "llama3", "llama-v3"}, .re = {RE_LLAMA3}, .ignore_merges = true,
     .add_bos = true},
    {.names = {"qwen2", "deepseek-r1-qwen", "megrez", "stablelm2"}, .re = {RE_QWEN2}},
    {.names = {"qwen35"}, .re = {RE_QWEN35}},
    {.names = {"gpt-4o", "llama4"}, .re = {RE_O200K}},
    {.names = {"smollm", "starcoder", "refact"}, .re = {"\\p{N}", RE_GPT2}},
    {.names = {"gpt-2", "phi-2", "mpt", "olmo"}, .re = {RE_GPT2}},
    /* Gemma 4: no word splitting but at newlines (BPE lookups hold no newline) */
    {.names = {"gemma4"}, .re = {"[^\\n]+|[\\n]+"}, .add_bos = true, .spm_spaces = true},
    {.names = {"default"},
     .re = {"[\\p{P}\\$\\+<=>\\^~\\|]+", RE_GPT2, "\\p{N}+", "[0-9][0-9][0-9]"}},
};

static const pre_kind *pre_find(const char *pre)
{
    for (size_t k = 0; k < sizeof pre_kinds / sizeof pre_kinds[0]; k++)
        for (int i = 0; i < 8 && pre_kinds[k].names[i]; i++)
            if (!strcmp(pre, pre_kinds[k].names[i]))
                return &pre_kinds[k];
    return NULL;
}

bool bpe_pre_known(const char *pre, bool *add_bos, bool *spm_pieces)
{
    const pre_kind *k = pre_find(pre);
    if (k && add_bos)
        *add_bos = k->add_bos;
    if (k && spm_pieces)
        *spm_pieces = k->spm_spaces;
    return k != NULL;
}

size_t spaces_unescaped(char *out, const char *s, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (i + 2 < len && (unsigned char)s[i] == 0xe2 && (unsigned char)s[i + 1] == 0x96 &&
            (unsigned char)s[i + 2] == 0x81) {
            out[o++] = ' ';
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    return o;
}

/* ---- the merges ---- */

static uint64_t hash_pair(const char *s, size_t len, size_t left_len)
{
    uint64_t h = 1469598103934665603ULL ^ left_len; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h ^ (h >> 29);
}

/* The rank of merging s[0..left_len) with s[left_len..len), or -1. */
static int merge_rank(const tokenizer_bpe *b, const char *s, size_t len, size_t left_len)
{
    size_t i = (size_t)hash_pair(s, len, left_len) & b->table_mask;
    for (;; i = (i + 1) & b->table_mask) {
        int k = b->table[i];
        if (k < 0)
            return -1;
        const merge_entry *e = &b->merges[k];
        if (e->len == len && e->left_len == left_len && !memcmp(b->blob + e->off, s, len))
            return e->rank;
    }
}

/* One merge string "a b": both halves unmapped into the blob at *used. */
static llm_status add_merge(tokenizer_bpe *b, const char *name, int rank, const char *s,
                            size_t len, size_t *used, llm_err *err)
{
    const char *space = len > 1 ? memchr(s + 1, ' ', len - 1) : NULL;
    if (!space)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: tokenizer.ggml.merges[%d] '%.*s' is not two "
                        "pieces separated by a space", name, rank, (int)(len < 60 ? len : 60), s);
    size_t l1 = (size_t)(space - s), l2 = len - l1 - 1;
    char *at = b->blob + *used;
    int r1 = b->spm_spaces ? (int)spaces_unescaped(at, s, l1) : bpe_unmap(at, s, l1);
    int r2 = r1 < 0               ? -1
             : b->spm_spaces ? (int)spaces_unescaped(at + r1, space + 1, l2)
                             : bpe_unmap(at + r1, space + 1, l2);
    const char *bad = r1 < 0 ? "its first half is not GPT-2 byte-mapped text"
                      : r2 < 0 ? "its second half is not GPT-2 byte-mapped text"
                      : b->lookup(b->vocab, at, (size_t)r1) < 0 ? "its first half is not a token"
                      : b->lookup(b->vocab, at + r1, (size_t)r2) < 0 ? "its second half is not a token"
                      : NULL;
    if (bad)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: tokenizer.ggml.merges[%d] '%.*s': %s of the "
                        "vocabulary", name, rank, (int)(len < 60 ? len : 60), s, bad);
    merge_entry *e = &b->merges[rank];
    *e = (merge_entry){.off = (uint32_t)*used, .left_len = (uint32_t)r1,
                       .len = (uint32_t)(r1 + r2), .rank = rank};
    *used += e->len;
    size_t i = (size_t)hash_pair(at, e->len, e->left_len) & b->table_mask;
    for (;; i = (i + 1) & b->table_mask) {
        int k = b->table[i];
        if (k < 0) {
            b->table[i] = rank;
            break;
        }
        const merge_entry *o = &b->merges[k];
        if (o->len == e->len && o->left_len == e->left_len && !memcmp(b->blob + o->off, at, e->len))
            break; /* a repeated merge keeps its first (lowest) rank */
    }
    return LLM_OK;
}

static llm_status compile_pre(tokenizer_bpe *b, const char *name, const pre_kind *k, llm_err *err)
{
    for (int i = 0; i < BPE_MAX_REGEX && k->re[i]; i++) {
        int code;
        PCRE2_SIZE at;
        b->re[i] = pcre2_compile((PCRE2_SPTR)k->re[i], PCRE2_ZERO_TERMINATED, PCRE2_UTF, &code,
                                 &at, NULL);
        if (!b->re[i]) {
            PCRE2_UCHAR msg[120];
            pcre2_get_error_message(code, msg, sizeof msg);
            return llm_fail(err, LLM_ERR_FORMAT, "%s: pre-tokenizer expression %d: %s", name, i,
                            (const char *)msg);
        }
        pcre2_jit_compile(b->re[i], PCRE2_JIT_COMPLETE); /* faster where available */
        b->n_re = i + 1;
    }
    b->ignore_merges = k->ignore_merges;
    b->spm_spaces = k->spm_spaces;
    return LLM_OK;
}

llm_status tokenizer_bpe_new(const char *name, const char *pre, const gguf_array *merges,
                             bpe_lookup_fn lookup, const void *vocab, tokenizer_bpe **out,
                             llm_err *err)
{
    *out = NULL;
    const pre_kind *k = pre_find(pre);
    if (!k)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: pre-tokenizer '%.40s' (tokenizer.ggml.pre) is "
                        "not supported: llmchat runs llama-bpe (Llama 3), qwen2, qwen35, gpt-4o, smollm, "
                        "gpt-2 and default", name, pre);
    if (merges->type != GGUF_TYPE_STRING || merges->n > (uint64_t)INT32_MAX / 4)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: tokenizer.ggml.merges is not an array of "
                        "strings", name);
    tokenizer_bpe *b = calloc(1, sizeof *b);
    size_t bytes = (size_t)(merges->end - merges->data), table = 16;
    while (table < merges->n * 2)
        table *= 2;
    if (b) {
        b->n_merges = (int)merges->n;
        b->merges = malloc((merges->n ? merges->n : 1) * sizeof *b->merges);
        b->blob = malloc(bytes + 1);
        b->table = malloc(table * sizeof *b->table);
        b->table_mask = table - 1;
        b->lookup = lookup;
        b->vocab = vocab;
    }
    if (!b || !b->merges || !b->blob || !b->table) {
        tokenizer_bpe_free(b);
        return llm_fail(err, LLM_ERR_NOMEM, "%s: out of memory for the merges", name);
    }
    memset(b->table, 0xff, table * sizeof *b->table);
    llm_status st = compile_pre(b, name, k, err);
    const unsigned char *cur = NULL;
    size_t used = 0;
    for (int r = 0; r < b->n_merges && st == LLM_OK; r++) {
        const char *s;
        uint64_t len;
        gguf_array_string(merges, &cur, &s, &len);
        st = add_merge(b, name, r, s, (size_t)len, &used, err);
    }
    if (st != LLM_OK) {
        tokenizer_bpe_free(b);
        return st;
    }
    *out = b;
    return LLM_OK;
}

void tokenizer_bpe_free(tokenizer_bpe *b)
{
    if (!b)
        return;
    for (int i = 0; i < b->n_re; i++)
        pcre2_code_free(b->re[i]);
    free(b->merges);
    free(b->blob);
    free(b->table);
    free(b);
}

/* ---- encoding ---- */

/* A growing list of ints (split offsets, ids). */
typedef struct {
    int *v;
    size_t n, cap;
    bool failed;
} int_list;

static void push(int_list *l, int x)
{
    if (l->failed)
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        int *v = realloc(l->v, cap * sizeof *v);
        if (!v) {
            l->failed = true;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = x;
}

/* text made valid UTF-8 as llama.cpp decodes it (see the top); *out_len its length. */
static char *normalize(const char *text, size_t len, size_t *out_len)
{
    char *out = malloc(len * 3 + 1);
    if (!out)
        return NULL;
    const unsigned char *s = (const unsigned char *)text;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        unsigned c = s[i], cp = 0;
        int n = (c & 0x80) == 0 ? 1 : (c & 0x40) == 0 ? 0 : (c & 0x20) == 0 ? 2
                : (c & 0x10) == 0 ? 3 : (c & 0x08) == 0 ? 4 : 0;
        if (n > 0 && (size_t)n <= len - i) {
            cp = n == 1 ? c : c & (0x7fu >> n);
            for (int k = 1; k < n && n > 0; k++)
                if ((s[i + k] & 0xc0) != 0x80)
                    n = 0;
                else
                    cp = cp << 6 | (s[i + k] & 0x3fu);
        } else {
            n = 0;
        }
        if (n == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000))
            cp = 0xfffd, n = n ? n : 1;
        i += (size_t)n;
        if (cp < 0x80) {
            out[o++] = (char)cp;
        } else if (cp < 0x800) {
            out[o++] = (char)(0xc0 | cp >> 6);
            out[o++] = (char)(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
            out[o++] = (char)(0xe0 | cp >> 12);
            out[o++] = (char)(0x80 | (cp >> 6 & 0x3f));
            out[o++] = (char)(0x80 | (cp & 0x3f));
        } else {
            out[o++] = (char)(0xf0 | cp >> 18);
            out[o++] = (char)(0x80 | (cp >> 12 & 0x3f));
            out[o++] = (char)(0x80 | (cp >> 6 & 0x3f));
            out[o++] = (char)(0x80 | (cp & 0x3f));
        }
    }
    *out_len = o;
    return out;
}

/* Splits each piece of `in` (boundaries: in->v[0] = 0 < ... < end) by expression re
 * into `out`: every match and every stretch between matches is a piece. */
static bool split(const pcre2_code *re, pcre2_match_data *md, const char *text, const int_list *in,
                  int_list *out)
{
    out->n = 0;
    push(out, 0);
    for (size_t p = 0; p + 1 < in->n; p++) {
        size_t start = (size_t)in->v[p], end = (size_t)in->v[p + 1], at = 0, len = end - start;
        while (at < len) {
            int rc = pcre2_match(re, (PCRE2_SPTR)(text + start), len, at, PCRE2_NO_UTF_CHECK, md,
                                 NULL);
            if (rc < 0)
                break; /* no more matches (or a match limit): the rest is one piece */
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            if (ov[1] <= ov[0]) /* the expressions never match empty; stay safe */
                break;
            if (ov[0] > at)
                push(out, (int)(start + ov[0]));
            push(out, (int)(start + ov[1]));
            at = ov[1];
        }
        if (at < len)
            push(out, (int)end);
    }
    return !out->failed;
}

typedef merge_symbol bpe_symbol;

/* What try_pair reads: the merges and the word. */
typedef struct {
    const tokenizer_bpe *b;
    const char *w;
} bpe_word;

/* Queues the pair (l, r) if the merges have it, by its rank (a merge_pair_fn). */
static bool try_pair(void *ctx, const bpe_symbol *sym, int l, int r, merge_heap *h)
{
    const bpe_word *bw = ctx;
    if (l < 0 || r < 0)
        return true;
    int size = sym[l].len + sym[r].len;
    int rank = merge_rank(bw->b, bw->w + sym[l].start, (size_t)size, (size_t)sym[l].len);
    return rank < 0 || merge_heap_push(h, (merge_pair){(float)rank, l, r, size});
}

static bool only_newlines(const char *w, int n)
{
    for (int i = 0; i < n; i++)
        if (w[i] != '\n')
            return false;
    return n > 0;
}

/* One word (w, n bytes) to ids: merged pairwise by rank, as llama.cpp's BPE session. */
static bool encode_word(const tokenizer_bpe *b, const int *byte_id, const char *w, int n,
                        bpe_symbol *sym, merge_heap *h, int_list *ids)
{
    if (b->ignore_merges || (b->spm_spaces && only_newlines(w, n))) {
        int id = b->lookup(b->vocab, w, (size_t)n);
        if (id >= 0) {
            push(ids, id);
            return true;
        }
    }
    /* the symbols merging starts from: bytes (byte-level: each stands for one
     * character of the GPT-2-mapped text), or characters (Gemma 4's, whose merges are
     * of UTF-8 text; the text is valid UTF-8 here) */
    int n_sym = 0;
    for (int i = 0, len; i < n; i += len, n_sym++) {
        unsigned char c = (unsigned char)w[i];
        len = !b->spm_spaces || c < 0xc0 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
        if (len > n - i)
            len = n - i;
        sym[n_sym] = (bpe_symbol){.start = i, .len = len, .prev = n_sym - 1, .next = -1};
        if (n_sym > 0)
            sym[n_sym - 1].next = n_sym;
    }
    h->n = 0;
    bpe_word bw = {.b = b, .w = w};
    for (int i = 1; i < n_sym; i++)
        if (!try_pair(&bw, sym, i - 1, i, h))
            return false;
    if (!merge_heap_run(h, sym, try_pair, &bw))
        return false;
    for (int i = 0; i >= 0 && n > 0; i = sym[i].next) {
        int id = b->lookup(b->vocab, w + sym[i].start, (size_t)sym[i].len);
        if (id >= 0)
            push(ids, id);
        else /* a merge whose result is not a token: its bytes (a byte without a token
              * is dropped, as llama.cpp does: see finish_bpe in tokenizer.c) */
            for (int k = 0; k < sym[i].len; k++) /* id: the byte's */
                if ((id = byte_id[(unsigned char)w[sym[i].start + k]]) >= 0)
                    push(ids, id);
    }
    return true;
}

int tokenizer_bpe_encode(const tokenizer_bpe *b, const int *byte_id, const char *text,
                         size_t len, int *ids, int max)
{
    if (len == 0)
        return 0;
    if (len > (size_t)INT32_MAX / 4)
        return -1;
    size_t nlen = 0;
    char *norm = normalize(text, len, &nlen);
    if (norm && b->spm_spaces)
        nlen = spaces_unescaped(norm, norm, nlen);
    int_list a = {0}, c = {0}, out = {0};
    bpe_symbol *sym = malloc(nlen * sizeof *sym);
    merge_heap heap = {0};
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    int result = -1;
    if (!norm || !sym || !md)
        goto done;
    push(&a, 0);
    push(&a, (int)nlen);
    int_list *cur = &a, *next = &c;
    for (int i = 0; i < b->n_re; i++) {
        if (!split(b->re[i], md, norm, cur, next))
            goto done;
        int_list *t = cur;
        cur = next;
        next = t;
    }
    for (size_t p = 0; p + 1 < cur->n; p++)
        if (!encode_word(b, byte_id, norm + cur->v[p], cur->v[p + 1] - cur->v[p], sym, &heap, &out))
            goto done;
    if (out.failed)
        goto done;
    for (size_t i = 0; ids && i < out.n && i < (size_t)max; i++)
        ids[i] = out.v[i];
    result = (int)out.n;
done:
    free(norm);
    free(a.v);
    free(c.v);
    free(out.v);
    free(sym);
    merge_heap_free(&heap);
    pcre2_match_data_free(md);
    return result;
}
