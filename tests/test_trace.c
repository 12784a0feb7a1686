/* test_trace.c — the JSON Lines trace: every line is strict JSON with the right values.
 *
 * The test carries its own strict JSON parser (RFC 8259: no NaN, no raw control
 * characters, valid UTF-8, paired surrogates, no trailing garbage; a lone \udc80..\udcff
 * is the raw byte llmchat writes that way, as Python's surrogateescape reads it) so it
 * depends on nothing outside the tree. Pieces come from a tiny tokenizer.bin written here with
 * nasty pieces (quote, backslash, newline, invalid UTF-8), and from tok512.bin. */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "json.h"
#include "trace.h"

/* ---------------------------------------------------------------- a strict JSON parser */

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;

typedef struct jval {
    jtype type;
    bool b;
    double num;
    char *str;           /* J_STR: decoded UTF-8, NUL-terminated */
    size_t len;          /* J_STR: bytes */
    int n;               /* J_ARR, J_OBJ: items */
    struct jval *items;  /* (n) */
    char **keys;         /* J_OBJ: (n) */
} jval;

typedef struct {
    const char *p, *end;
    const char *error;
} jparser;

static bool jfail(jparser *ps, const char *why)
{
    if (!ps->error)
        ps->error = why;
    return false;
}

static void jskip(jparser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static void jfree(jval *v)
{
    if (!v)
        return;
    free(v->str);
    for (int i = 0; i < v->n; i++) {
        jfree(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
}

static void put_utf8(char *out, size_t *o, uint32_t cp)
{
    if (cp < 0x80) {
        out[(*o)++] = (char)cp;
    } else if (cp < 0x800) {
        out[(*o)++] = (char)(0xC0 | cp >> 6);
        out[(*o)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out[(*o)++] = (char)(0xE0 | cp >> 12);
        out[(*o)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*o)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        out[(*o)++] = (char)(0xF0 | cp >> 18);
        out[(*o)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[(*o)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*o)++] = (char)(0x80 | (cp & 0x3F));
    }
}

/* Length of a valid UTF-8 sequence at s (bounded by end), 0 if invalid. */
static int utf8_len(const unsigned char *s, const unsigned char *end)
{
    if (s[0] < 0x80)
        return 1;
    int len = s[0] >= 0xC2 && s[0] <= 0xDF ? 2 : s[0] >= 0xE0 && s[0] <= 0xEF ? 3
            : s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : 0;
    if (len == 0 || end - s < len)
        return 0;
    uint32_t cp = s[0] & (0x7F >> len);
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    uint32_t min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

static bool jhex4(jparser *ps, uint32_t *out)
{
    if (ps->end - ps->p < 4)
        return jfail(ps, "short \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = *ps->p++;
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (uint32_t)(c - 'A' + 10);
        else
            return jfail(ps, "bad hex digit in \\u escape");
    }
    *out = v;
    return true;
}

static bool jstring(jparser *ps, char **out, size_t *out_len)
{
    ps->p++; /* the opening quote */
    char *s = malloc((size_t)(ps->end - ps->p) * 4 + 1);
    size_t o = 0;
    for (;;) {
        if (ps->p >= ps->end) {
            free(s);
            return jfail(ps, "unterminated string");
        }
        unsigned char c = (unsigned char)*ps->p;
        if (c == '"') {
            ps->p++;
            break;
        }
        if (c < 0x20) {
            free(s);
            return jfail(ps, "raw control character in string");
        }
        if (c == '\\') {
            ps->p++;
            if (ps->p >= ps->end) {
                free(s);
                return jfail(ps, "dangling backslash");
            }
            char e = *ps->p++;
            uint32_t cp;
            switch (e) {
            case '"': s[o++] = '"'; break;
            case '\\': s[o++] = '\\'; break;
            case '/': s[o++] = '/'; break;
            case 'b': s[o++] = '\b'; break;
            case 'f': s[o++] = '\f'; break;
            case 'n': s[o++] = '\n'; break;
            case 'r': s[o++] = '\r'; break;
            case 't': s[o++] = '\t'; break;
            case 'u':
                if (!jhex4(ps, &cp)) {
                    free(s);
                    return false;
                }
                if (cp >= 0xDC80 && cp <= 0xDCFF) { /* a raw byte, as Python's surrogateescape */
                    s[o++] = (char)(cp - 0xDC00);
                    break;
                }
                if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    free(s);
                    return jfail(ps, "lone low surrogate");
                }
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    uint32_t lo;
                    if (ps->end - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u') {
                        free(s);
                        return jfail(ps, "lone high surrogate");
                    }
                    ps->p += 2;
                    if (!jhex4(ps, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
                        free(s);
                        return jfail(ps, "bad surrogate pair");
                    }
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
                put_utf8(s, &o, cp);
                break;
            default:
                free(s);
                return jfail(ps, "unknown escape");
            }
            continue;
        }
        int len = utf8_len((const unsigned char *)ps->p, (const unsigned char *)ps->end);
        if (len == 0) {
            free(s);
            return jfail(ps, "invalid UTF-8 in string");
        }
        memcpy(s + o, ps->p, (size_t)len);
        o += (size_t)len;
        ps->p += len;
    }
    s[o] = '\0';
    *out = s;
    *out_len = o;
    return true;
}

static bool jnumber(jparser *ps, double *out)
{
    const char *start = ps->p;
    if (ps->p < ps->end && *ps->p == '-')
        ps->p++;
    if (ps->p >= ps->end)
        return jfail(ps, "bad number");
    if (*ps->p == '0') {
        ps->p++;
    } else if (*ps->p >= '1' && *ps->p <= '9') {
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
            ps->p++;
    } else {
        return jfail(ps, "bad number");
    }
    if (ps->p < ps->end && *ps->p == '.') {
        ps->p++;
        if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
            return jfail(ps, "no digits after the decimal point");
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
            ps->p++;
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
            ps->p++;
        if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
            return jfail(ps, "no digits in the exponent");
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
            ps->p++;
    }
    char buf[64];
    size_t n = (size_t)(ps->p - start);
    if (n >= sizeof buf)
        return jfail(ps, "number too long");
    memcpy(buf, start, n);
    buf[n] = '\0';
    *out = strtod(buf, NULL);
    return true;
}

static bool jliteral(jparser *ps, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return jfail(ps, "unexpected character");
    ps->p += n;
    return true;
}

static bool jvalue(jparser *ps, jval *v, int depth)
{
    memset(v, 0, sizeof *v);
    if (depth > 64)
        return jfail(ps, "nested too deep");
    jskip(ps);
    if (ps->p >= ps->end)
        return jfail(ps, "unexpected end");
    char c = *ps->p;
    if (c == '"') {
        v->type = J_STR;
        return jstring(ps, &v->str, &v->len);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        v->type = J_NUM;
        return jnumber(ps, &v->num);
    }
    if (c == 't' || c == 'f') {
        v->type = J_BOOL;
        v->b = c == 't';
        return jliteral(ps, c == 't' ? "true" : "false");
    }
    if (c == 'n') {
        v->type = J_NULL;
        return jliteral(ps, "null");
    }
    if (c == '[' || c == '{') {
        bool obj = c == '{';
        v->type = obj ? J_OBJ : J_ARR;
        ps->p++;
        int cap = 0;
        jskip(ps);
        if (ps->p < ps->end && *ps->p == (obj ? '}' : ']')) {
            ps->p++;
            return true;
        }
        for (;;) {
            if (v->n == cap) {
                cap = cap ? cap * 2 : 8;
                v->items = realloc(v->items, (size_t)cap * sizeof *v->items);
                if (obj)
                    v->keys = realloc(v->keys, (size_t)cap * sizeof *v->keys);
            }
            if (obj) {
                jskip(ps);
                if (ps->p >= ps->end || *ps->p != '"')
                    return jfail(ps, "object key is not a string");
                size_t klen;
                char *key;
                if (!jstring(ps, &key, &klen))
                    return false;
                for (int i = 0; i < v->n; i++)
                    if (strcmp(v->keys[i], key) == 0) {
                        free(key);
                        return jfail(ps, "duplicate key");
                    }
                jskip(ps);
                if (ps->p >= ps->end || *ps->p != ':') {
                    free(key);
                    return jfail(ps, "missing colon");
                }
                ps->p++;
                v->keys[v->n] = key;
            }
            bool ok = jvalue(ps, &v->items[v->n], depth + 1);
            v->n++;
            if (!ok)
                return false;
            jskip(ps);
            if (ps->p < ps->end && *ps->p == ',') {
                ps->p++;
                continue;
            }
            if (ps->p < ps->end && *ps->p == (obj ? '}' : ']')) {
                ps->p++;
                return true;
            }
            return jfail(ps, "expected a comma or a closing bracket");
        }
    }
    return jfail(ps, "unexpected character");
}

/* Parses exactly one JSON value from [s, s+len); returns NULL with *why on error. */
static jval *jparse(const char *s, size_t len, const char **why)
{
    jparser ps = {s, s + len, NULL};
    jval *v = calloc(1, sizeof *v);
    bool ok = jvalue(&ps, v, 0);
    if (ok) {
        jskip(&ps);
        if (ps.p != ps.end)
            ok = jfail(&ps, "trailing characters");
    }
    if (!ok) {
        *why = ps.error;
        jfree(v);
        free(v);
        return NULL;
    }
    return v;
}

static void jdelete(jval *v)
{
    jfree(v);
    free(v);
}

static const jval *jget(const jval *obj, const char *key)
{
    if (!obj || obj->type != J_OBJ)
        return NULL;
    for (int i = 0; i < obj->n; i++)
        if (strcmp(obj->keys[i], key) == 0)
            return &obj->items[i];
    return NULL;
}

static const jval *jneed(const jval *obj, const char *key, jtype type)
{
    const jval *v = jget(obj, key);
    ck_assert_msg(v != NULL, "missing key \"%s\"", key);
    ck_assert_msg(v->type == type, "key \"%s\" has type %d, want %d", key, v->type, type);
    return v;
}

static double jnum(const jval *obj, const char *key)
{
    return jneed(obj, key, J_NUM)->num;
}

/* ---------------------------------------------------------------- helpers */

/* A trace file's lines: each must be valid JSON; the file must end with a newline.
 * The first line is the header (version 1); line[] holds the records after it. */
typedef struct {
    jval *header;
    int n;
    jval *line[64];
} lines;

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    *len = n;
    return buf;
}

static void read_lines(const char *path, lines *out)
{
    size_t len;
    char *buf = slurp(path, &len);
    out->n = 0;
    ck_assert_msg(len > 0 && buf[len - 1] == '\n', "%s does not end with a newline", path);
    size_t start = 0;
    out->header = NULL;
    for (size_t i = 0; i < len; i++) {
        if (buf[i] != '\n')
            continue;
        const char *why = NULL;
        jval *v = jparse(buf + start, i - start, &why);
        int line = out->n + 1 + (out->header != NULL);
        ck_assert_msg(v != NULL, "line %d is not JSON (%s): %.200s", line, why, buf + start);
        ck_assert_msg(v->type == J_OBJ, "line %d is not an object", line);
        start = i + 1;
        if (!out->header) {
            const jval *version = jget(v, "llmchat_trace");
            ck_assert_msg(version && version->type == J_NUM && version->num == TRACE_FORMAT_VERSION,
                          "the first line is not a version %d header", TRACE_FORMAT_VERSION);
            out->header = v;
            continue;
        }
        ck_assert_ptr_null(jget(v, "llmchat_trace")); /* one header only */
        ck_assert_int_lt(out->n, 64);
        out->line[out->n++] = v;
    }
    ck_assert_msg(out->header != NULL, "%s has no header line", path);
    free(buf);
}

static void free_lines(lines *l)
{
    jdelete(l->header);
    l->header = NULL;
    for (int i = 0; i < l->n; i++)
        jdelete(l->line[i]);
    l->n = 0;
}

/* json_write_string into a string. */
static char *json_of(const char *s)
{
    char *out = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&out, &size);
    json_write_string(f, s);
    fclose(f);
    return out;
}

/* Writes a llama2.c tokenizer.bin with the given pieces. */
static void write_tokenizer(const char *path, const char *const *pieces, int n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    uint32_t max_len = 0;
    for (int i = 0; i < n; i++)
        if (strlen(pieces[i]) > max_len)
            max_len = (uint32_t)strlen(pieces[i]);
    fwrite(&max_len, sizeof max_len, 1, f);
    for (int i = 0; i < n; i++) {
        float score = -(float)i;
        int32_t len = (int32_t)strlen(pieces[i]);
        fwrite(&score, sizeof score, 1, f);
        fwrite(&len, sizeof len, 1, f);
        fwrite(pieces[i], 1, (size_t)len, f);
    }
    ck_assert_int_eq(fclose(f), 0);
}

enum { NASTY_N = 12 };
static const char *const nasty[NASTY_N] = {
    "<unk>", "\n<s>\n", "\n</s>\n",
    "\"",            /* 3: a quote */
    "\\",            /* 4: a backslash */
    "\n",            /* 5: a newline */
    "\xff",          /* 6: not UTF-8 */
    " hello",        /* 7 */
    "\xc3\xa9",      /* 8: é */
    "a\"b\\c\x01\t", /* 9: everything at once */
    "\xe2\x82",      /* 10: a truncated euro sign */
    "\xf0\x9f\x98\x80", /* 11: an emoji (4 bytes) */
};

static tokenizer *nasty_tokenizer(void)
{
    const char *path = temp_path("nasty-tok.bin");
    write_tokenizer(path, nasty, NASTY_N);
    tokenizer *tok = NULL;
    llm_err err = {{0}};
    llm_status st = tokenizer_open(path, NASTY_N, &tok, &err);
    ck_assert_msg(st == LLM_OK, "tokenizer_open: %s", err.text);
    unlink(path);
    return tok;
}

static model_config small_config(int n_layers, int n_heads)
{
    model_config c;
    memset(&c, 0, sizeof c);
    c.n_layers = n_layers;
    c.n_heads = n_heads;
    c.n_kv_heads = n_heads;
    c.dim = 8 * n_heads;
    c.head_size = 8;
    c.kv_dim = c.dim;
    c.vocab_size = NASTY_N;
    c.seq_len = 4096;
    return c;
}

static step_record base_record(int pos, int token, step_phase phase)
{
    step_record r;
    memset(&r, 0, sizeof r);
    r.pos = pos;
    r.token = token;
    r.phase = phase;
    r.next = -1;
    r.next_rank = 0;
    r.n_top = 3;
    for (int i = 0; i < 3; i++) {
        r.top[i].id = 7 + i;
        r.top[i].logit = 4.5f - (float)i;
        r.top[i].prob = 0.5f / (float)(i + 1);
    }
    r.forward_ms = 1.25;
    r.sample_ms = 0.25;
    return r;
}

/* ---------------------------------------------------------------- core */

START_TEST(test_phase_names)
{
    ck_assert_str_eq(step_phase_name(STEP_PROMPT), "prompt");
    ck_assert_str_eq(step_phase_name(STEP_GEN), "gen");
    ck_assert_str_eq(step_phase_name(STEP_FORCED), "forced");
}
END_TEST

START_TEST(test_json_string_escaping)
{
    struct { const char *in, *out; } cases[] = {
        {"plain", "\"plain\""},
        {"", "\"\""},
        {"a\"b\\c", "\"a\\\"b\\\\c\""},
        {"\n\t\r", "\"\\n\\t\\r\""},
        {"\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\""},
        {"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\""},
        {"\xff\xfe", "\"\\udcff\\udcfe\""},                  /* bytes that are never UTF-8 */
        {"x\xe2\x82", "\"x\\udce2\\udc82\""},                /* truncated sequence */
        {"\xe2\x82x", "\"\\udce2\\udc82x\""},                /* interrupted sequence */
        {"\xc0\xaf", "\"\\udcc0\\udcaf\""},                  /* overlong '/' */
        {"\xed\xa0\x80", "\"\\udced\\udca0\\udc80\""},       /* UTF-16 surrogate */
        {"\xf4\x90\x80\x80", "\"\\udcf4\\udc90\\udc80\\udc80\""}, /* above U+10FFFF */
        {"\x80", "\"\\udc80\""},                             /* lone continuation */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = json_of(cases[i].in);
        ck_assert_msg(strcmp(got, cases[i].out) == 0, "case %zu: got %s want %s", i, got,
                      cases[i].out);
        const char *why = NULL;
        jval *v = jparse(got, strlen(got), &why);
        ck_assert_msg(v != NULL, "case %zu: %s is not JSON: %s", i, got, why);
        ck_assert_int_eq(v->type, J_STR);
        jdelete(v);
        free(got);
    }
    char *got = json_of(NULL);
    ck_assert_str_eq(got, "\"\"");
    free(got);
}
END_TEST

START_TEST(test_records_round_trip)
{
    tokenizer *tok = nasty_tokenizer();
    model_config cfg = small_config(2, 3);
    const char *path = temp_path("records.jsonl");
    trace_writer *t = NULL;
    llm_err err = {{0}};
    ck_assert_int_eq(trace_open(path, tok, &cfg, true, &t, &err), LLM_OK);
    sampler_config run_sampler;
    sampler_config_default(&run_sampler);
    run_sampler.temperature = 0.5f;
    run_sampler.seed = 99;
    trace_run run = {.mode = "chat", .sampler = &run_sampler, .steps = 7, .ctx = 64, .lens = true};
    trace_describe(t, &run);

    /* pos 0: prompt, not sampled, no attention captured */
    step_record r0 = base_record(0, 1, STEP_PROMPT);
    r0.next = 9;
    r0.next_prob = 0.125f;
    r0.next_rank = 2;
    r0.entropy = 1.5f;
    ck_assert_int_eq(trace_write(t, &r0), LLM_OK);

    /* pos 1: generated and sampled, attention (2 layers, 3 heads, 2 keys) */
    step_record r1 = base_record(1, 9, STEP_GEN);
    float attn1[2 * 3 * 2];
    for (int l = 0; l < 2; l++)
        for (int h = 0; h < 3; h++)
            for (int k = 0; k < 2; k++)
                attn1[(l * 3 + h) * 2 + k] = (float)(l * 100 + h * 10 + k) / 1000.0f;
    r1.attn = attn1;
    r1.next = 6;
    r1.next_prob = 0.03125f;
    r1.next_rank = 5;
    r1.sampled = true;
    sampler_config_default(&r1.sampler.config);
    r1.sampler.config.temperature = 0.8f;
    r1.sampler.config.top_k = 40;
    r1.sampler.config.min_p = 0.05f;
    r1.sampler.config.repeat_penalty = 1.1f;
    r1.sampler.n_vocab = NASTY_N;
    r1.sampler.n_penalized = 3;
    r1.sampler.kept_top_k = 10;
    r1.sampler.kept_top_p = 4;
    r1.sampler.kept_min_p = 2;
    r1.sampler.greedy = false;
    r1.sampler.draw = 0.75f;
    r1.sampler.chosen = 6;
    r1.sampler.chosen_prob = 0.375f;
    r1.sampler.chosen_model_prob = 0.03125f;
    r1.sampler.chosen_rank = 5;
    r1.top[0].p_final = 0.625f;
    r1.top[1].cut = SAMPLER_CUT_TOP_P;
    r1.top[2].cut = SAMPLER_CUT_MIN_P;
    ck_assert_int_eq(trace_write(t, &r1), LLM_OK);

    /* pos 2: forced; NaN and infinities where numbers go; attention with a NaN */
    step_record r2 = base_record(2, 6, STEP_FORCED);
    r2.top[1].logit = NAN;
    r2.top[2].prob = INFINITY;
    r2.next_prob = -INFINITY;
    r2.entropy = NAN;
    r2.next = 2;
    r2.next_rank = 1;
    r2.forward_ms = NAN;
    float attn2[2 * 3 * 3];
    for (int i = 0; i < 18; i++)
        attn2[i] = 1.0f / 3.0f;
    attn2[4] = NAN;
    r2.attn = attn2;
    step_lens_layer lens2[2] = {
        {{5, 2, -1}, {0.75f, 0.125f, 0.0f}, 3, 0.0625f},
        {{2, 5, 9}, {0.5f, 0.25f, 0.125f}, 1, 0.5f},
    };
    r2.lens = lens2;
    ck_assert_int_eq(trace_write(t, &r2), LLM_OK);

    /* pos 3..11: every nasty piece, through the observer adapter; last one unfinished */
    for (int id = 3; id < NASTY_N; id++) {
        step_record r = base_record(id, id, STEP_GEN);
        r.n_top = id == 3 ? 0 : STEP_TOP_MAX;
        for (int i = 0; i < r.n_top; i++) {
            r.top[i].id = i;
            r.top[i].logit = -(float)i;
            r.top[i].prob = 1e-30f;
        }
        if (id == NASTY_N - 1)
            r.next = -1;
        trace_observe(t, &r);
    }
    ck_assert_int_eq(trace_close(t, &err), LLM_OK);

    lines L;
    read_lines(path, &L);
    ck_assert_int_eq(L.n, 3 + (NASTY_N - 3)); /* one line per record, nothing else */

    /* the header: the shape, the flags, and the vocabulary decoding back to the pieces */
    const jval *h = L.header;
    ck_assert_str_eq(jneed(h, "program", J_STR)->str, "llmchat");
    ck_assert_str_eq(jneed(h, "mode", J_STR)->str, "chat");
    const jval *hm = jneed(h, "model", J_OBJ);
    ck_assert_int_eq(jnum(hm, "n_layers"), 2);
    ck_assert_int_eq(jnum(hm, "n_heads"), 3);
    ck_assert_int_eq(jnum(hm, "vocab_size"), NASTY_N);
    ck_assert(jneed(h, "attn", J_BOOL)->b);
    ck_assert(jneed(h, "lens", J_BOOL)->b);
    const jval *ho = jneed(h, "options", J_OBJ);
    ck_assert((float)jnum(ho, "temperature") == 0.5f);
    ck_assert_int_eq(jnum(ho, "seed"), 99);
    ck_assert_int_eq(jnum(ho, "steps"), 7);
    const jval *vocab = jneed(h, "vocab", J_ARR);
    ck_assert_int_eq(vocab->n, NASTY_N);
    ck_assert_str_eq(vocab->items[9].str, nasty[9]);
    ck_assert_str_eq(vocab->items[6].str, "\xff"); /* byte 0xff, written \udcff */

    /* pos 0 */
    const jval *a = L.line[0];
    ck_assert_int_eq(jnum(a, "pos"), 0);
    ck_assert_int_eq(jnum(a, "token"), 1);
    ck_assert_str_eq(jneed(a, "piece", J_STR)->str, "\n<s>\n");
    ck_assert_str_eq(jneed(a, "phase", J_STR)->str, "prompt");
    ck_assert_int_eq(jnum(a, "next"), 9);
    ck_assert(jnum(a, "next_prob") == 0.125);
    ck_assert(jnum(a, "entropy") == 1.5);
    ck_assert_int_eq(jnum(a, "next_rank"), 2);
    ck_assert(jnum(a, "ms") == 1.5);
    ck_assert_int_eq(jneed(a, "sampler", J_NULL)->type, J_NULL);
    ck_assert_ptr_null(jget(a, "attn"));
    const jval *top = jneed(a, "top", J_ARR);
    ck_assert_int_eq(top->n, 3);
    for (int i = 0; i < 3; i++) {
        const jval *e = &top->items[i];
        ck_assert_int_eq(e->type, J_ARR);
        ck_assert_int_eq(e->n, 3);
        ck_assert(e->items[0].num == 7 + i);
        ck_assert((float)e->items[1].num == 4.5f - (float)i);
        ck_assert((float)e->items[2].num == 0.5f / (float)(i + 1)); /* %.9g round-trips a float */
    }

    /* pos 1: the sampler object and the attention shape and values */
    const jval *b = L.line[1];
    ck_assert_str_eq(jneed(b, "piece", J_STR)->str, nasty[9]);
    ck_assert_str_eq(jneed(b, "phase", J_STR)->str, "gen");
    const jval *s = jneed(b, "sampler", J_OBJ);
    ck_assert((float)jnum(s, "temperature") == 0.8f);
    ck_assert_int_eq(jnum(s, "top_k"), 40);
    ck_assert((float)jnum(s, "top_p") == 0.9f);
    ck_assert((float)jnum(s, "min_p") == 0.05f);
    ck_assert((float)jnum(s, "repeat_penalty") == 1.1f);
    ck_assert_int_eq(jnum(s, "repeat_last_n"), 64);
    ck_assert_int_eq(jnum(s, "n_penalized"), 3);
    ck_assert_int_eq(jnum(s, "kept_top_k"), 10);
    ck_assert_int_eq(jnum(s, "kept_top_p"), 4);
    ck_assert_int_eq(jnum(s, "kept_min_p"), 2);
    ck_assert(!jneed(s, "greedy", J_BOOL)->b);
    ck_assert(jnum(s, "draw") == 0.75);
    ck_assert_int_eq(jnum(s, "chosen"), 6);
    ck_assert(jnum(s, "chosen_prob") == 0.375);
    ck_assert_int_eq(jnum(s, "chosen_rank"), 5);
    const jval *pf = jneed(s, "p_final", J_ARR), *kept = jneed(s, "kept", J_ARR);
    const jval *cut = jneed(s, "cut", J_ARR);
    ck_assert(pf->n == 3 && kept->n == 3 && cut->n == 3);
    ck_assert(pf->items[0].num == 0.625 && pf->items[1].num == 0 && pf->items[2].num == 0);
    ck_assert(kept->items[0].type == J_BOOL && kept->items[0].b);
    ck_assert(kept->items[1].type == J_BOOL && !kept->items[1].b && !kept->items[2].b);
    ck_assert_int_eq(cut->items[0].type, J_NULL);
    ck_assert_str_eq(cut->items[1].str, "top-p");
    ck_assert_str_eq(cut->items[2].str, "min-p");
    const jval *at = jneed(b, "attn", J_ARR);
    ck_assert_int_eq(at->n, 2);
    for (int l = 0; l < 2; l++) {
        ck_assert_int_eq(at->items[l].type, J_ARR);
        ck_assert_int_eq(at->items[l].n, 3);
        for (int hh = 0; hh < 3; hh++) {
            const jval *row = &at->items[l].items[hh];
            ck_assert_int_eq(row->type, J_ARR);
            ck_assert_int_eq(row->n, 2);
            for (int k = 0; k < 2; k++) {
                ck_assert_int_eq(row->items[k].type, J_NUM);
                ck_assert_double_eq_tol(row->items[k].num, (l * 100 + hh * 10 + k) / 1000.0, 1e-6);
            }
        }
    }

    /* pos 2: non-finite numbers are null; the attention shape grows with pos */
    const jval *c = L.line[2];
    ck_assert_str_eq(jneed(c, "phase", J_STR)->str, "forced");
    ck_assert_str_eq(jneed(c, "piece", J_STR)->str, "\xff"); /* byte 0xff, written \udcff */
    ck_assert_int_eq(jneed(c, "next_prob", J_NULL)->type, J_NULL);
    ck_assert_int_eq(jneed(c, "entropy", J_NULL)->type, J_NULL);
    ck_assert_int_eq(jneed(c, "ms", J_NULL)->type, J_NULL);
    top = jneed(c, "top", J_ARR);
    ck_assert_int_eq(top->items[1].items[1].type, J_NULL);
    ck_assert_int_eq(top->items[1].items[2].type, J_NUM);
    ck_assert_int_eq(top->items[2].items[2].type, J_NULL);
    at = jneed(c, "attn", J_ARR);
    ck_assert_int_eq(at->n, 2);
    for (int l = 0; l < 2; l++)
        for (int hh = 0; hh < 3; hh++)
            ck_assert_int_eq(at->items[l].items[hh].n, 3);
    ck_assert_int_eq(at->items[0].items[1].items[1].type, J_NULL); /* attn2[4] */
    ck_assert_double_eq_tol(at->items[1].items[2].items[2].num, 1.0 / 3.0, 1e-6);
    const jval *lens = jneed(c, "lens", J_ARR);
    ck_assert_int_eq(lens->n, 2);
    const jval *l0 = jneed(&lens->items[0], "top", J_ARR);
    ck_assert_int_eq(l0->n, 2); /* an id of -1 is no candidate */
    ck_assert(l0->items[0].items[0].num == 5 && l0->items[0].items[1].num == 0.75);
    ck_assert(l0->items[1].items[0].num == 2 && l0->items[1].items[1].num == 0.125);
    ck_assert_int_eq(jnum(&lens->items[0], "next_rank"), 3);
    ck_assert(jnum(&lens->items[0], "next_prob") == 0.0625);
    ck_assert_int_eq(jneed(&lens->items[1], "top", J_ARR)->n, 3);
    ck_assert_ptr_null(jget(L.line[1], "lens"));

    /* the nasty pieces decode back to themselves, invalid bytes too */
    for (int id = 3; id < NASTY_N; id++) {
        const jval *v = L.line[id];
        ck_assert_int_eq(jnum(v, "pos"), id);
        ck_assert_str_eq(jneed(v, "piece", J_STR)->str, nasty[id]);
        ck_assert_int_eq(jneed(v, "top", J_ARR)->n, id == 3 ? 0 : STEP_TOP_MAX);
        ck_assert_ptr_null(jget(v, "attn"));
    }
    ck_assert_int_eq(jnum(L.line[NASTY_N - 1], "next"), -1);
    free_lines(&L);
    unlink(path);
    tokenizer_close(tok);
}
END_TEST

START_TEST(test_attention_off)
{
    tokenizer *tok = nasty_tokenizer();
    model_config cfg = small_config(1, 2);
    const char *path = temp_path("noattn.jsonl");
    trace_writer *t = NULL;
    llm_err err;
    ck_assert_int_eq(trace_open(path, tok, &cfg, false, &t, &err), LLM_OK);
    step_record r = base_record(1, 7, STEP_PROMPT);
    float attn[1 * 2 * 2] = {0.5f, 0.5f, 0.25f, 0.75f};
    r.attn = attn;
    ck_assert_int_eq(trace_write(t, &r), LLM_OK);
    ck_assert_int_eq(trace_close(t, &err), LLM_OK);
    lines L;
    read_lines(path, &L);
    ck_assert_int_eq(L.n, 1);
    ck_assert_ptr_null(jget(L.line[0], "attn"));
    ck_assert_str_eq(jneed(L.line[0], "piece", J_STR)->str, " hello");
    free_lines(&L);

    /* No tokenizer: the piece is "" and the rest is unchanged. */
    ck_assert_int_eq(trace_open(path, NULL, &cfg, true, &t, &err), LLM_OK);
    ck_assert_int_eq(trace_write(t, &r), LLM_OK);
    ck_assert_int_eq(trace_close(t, &err), LLM_OK);
    read_lines(path, &L);
    ck_assert_str_eq(jneed(L.line[0], "piece", J_STR)->str, "");
    ck_assert_int_eq(jneed(L.line[0], "attn", J_ARR)->items[0].items[1].n, 2);
    free_lines(&L);
    unlink(path);
    tokenizer_close(tok);
}
END_TEST

START_TEST(test_every_piece_of_tok512)
{
    tokenizer *tok = NULL;
    llm_err err = {{0}};
    const char *tpath = data_path("tok512.bin");
    ck_assert_msg(tokenizer_open(tpath, 0, &tok, &err) == LLM_OK, "%s", err.text);
    int n = tokenizer_vocab_size(tok);
    ck_assert_int_eq(n, 512);
    /* Each piece is its own trace string; all are strict JSON and decode back. */
    for (int id = 0; id < n; id++) {
        const char *piece = tokenizer_piece(tok, id);
        char *js = json_of(piece);
        const char *why = NULL;
        jval *v = jparse(js, strlen(js), &why);
        ck_assert_msg(v != NULL, "piece %d: %s is not JSON: %s", id, js, why);
        ck_assert_msg(strcmp(v->str, piece) == 0, "piece %d does not round-trip", id);
        jdelete(v);
        free(js);
    }
    tokenizer_close(tok);
}
END_TEST

START_TEST(test_open_errors)
{
    trace_writer *t = (trace_writer *)1;
    llm_err err = {{0}};
    const char *path = "/nonexistent-llmchat-dir/sub/trace.jsonl";
    ck_assert_int_eq(trace_open(path, NULL, NULL, false, &t, &err), LLM_ERR_IO);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(err.text, path) != NULL, "message lacks the path: %s", err.text);
    ck_assert_msg(strstr(err.text, strerror(ENOENT)) != NULL, "message lacks the reason: %s", err.text);
    ck_assert_int_eq(trace_close(NULL, &err), LLM_OK);
}
END_TEST

START_TEST(test_disk_full_at_close)
{
    ck_assert_msg(access("/dev/full", W_OK) == 0, "/dev/full is needed for this test");
    trace_writer *t = NULL;
    llm_err err = {{0}};
    model_config cfg = small_config(1, 1);
    ck_assert_int_eq(trace_open("/dev/full", NULL, &cfg, false, &t, &err), LLM_OK);
    step_record r = base_record(0, 7, STEP_PROMPT);
    trace_write(t, &r); /* in the buffer, unless a second passed (then it fails already) */
    ck_assert_int_eq(trace_close(t, &err), LLM_ERR_IO);
    ck_assert_msg(strstr(err.text, "/dev/full") && strstr(err.text, strerror(ENOSPC)),
                  "message: %s", err.text);
}
END_TEST

/* ---------------------------------------------------------------- limits */

START_TEST(test_disk_full_while_writing)
{
    /* More than the buffer holds: trace_write itself reports the failure, keeps
     * reporting it, the observer adapter swallows it, and close reports it once more. */
    ck_assert_msg(access("/dev/full", W_OK) == 0, "/dev/full is needed for this test");
    trace_writer *t = NULL;
    llm_err err = {{0}};
    model_config cfg = small_config(4, 8);
    ck_assert_int_eq(trace_open("/dev/full", NULL, &cfg, true, &t, &err), LLM_OK);
    enum { POS = 1023 };
    float *attn = calloc((size_t)4 * 8 * (POS + 1), sizeof *attn);
    step_record r = base_record(POS, 7, STEP_GEN);
    r.attn = attn;
    int first_fail = -1;
    for (int i = 0; i < 100; i++) {
        llm_status st = trace_write(t, &r);
        if (st != LLM_OK && first_fail < 0)
            first_fail = i;
        if (first_fail >= 0)
            ck_assert_int_eq(st, LLM_ERR_IO);
    }
    ck_assert_int_ge(first_fail, 0);
    ck_assert_int_lt(first_fail, 20); /* a record is ~70 KB; the buffer 1 MiB */
    trace_observe(t, &r);
    ck_assert_int_eq(trace_close(t, &err), LLM_ERR_IO);
    ck_assert_msg(strstr(err.text, strerror(ENOSPC)) != NULL, "message: %s", err.text);
    free(attn);
}
END_TEST

START_TEST(test_big_attention_record)
{
    /* 4 layers x 8 heads x 2048 keys: one line, exact shape, values intact. */
    model_config cfg = small_config(4, 8);
    const char *path = temp_path("bigattn.jsonl");
    trace_writer *t = NULL;
    llm_err err;
    ck_assert_int_eq(trace_open(path, NULL, &cfg, true, &t, &err), LLM_OK);
    enum { POS = 2047, KEYS = POS + 1 };
    float *attn = malloc((size_t)4 * 8 * KEYS * sizeof *attn);
    for (int i = 0; i < 4 * 8 * KEYS; i++)
        attn[i] = (float)(i % 1000) * 1e-3f + 1e-7f;
    step_record r = base_record(POS, 7, STEP_GEN);
    r.attn = attn;
    ck_assert_int_eq(trace_write(t, &r), LLM_OK);
    ck_assert_int_eq(trace_close(t, &err), LLM_OK);
    lines L;
    read_lines(path, &L);
    ck_assert_int_eq(L.n, 1);
    const jval *at = jneed(L.line[0], "attn", J_ARR);
    ck_assert_int_eq(at->n, 4);
    for (int l = 0; l < 4; l++) {
        ck_assert_int_eq(at->items[l].n, 8);
        for (int h = 0; h < 8; h++) {
            const jval *row = &at->items[l].items[h];
            ck_assert_int_eq(row->n, KEYS);
            for (int k = 0; k < KEYS; k += 97) {
                double want = attn[((size_t)l * 8 + h) * KEYS + k];
                ck_assert_double_eq_tol(row->items[k].num, want, 1e-6 * want + 1e-12);
            }
        }
    }
    free_lines(&L);
    free(attn);
    unlink(path);
}
END_TEST

START_TEST(test_attention_number_range)
{
    /* Attention numbers use their own formatter: every magnitude a float can take
     * comes back within half a unit of the sixth digit, and the text is printf's. */
    const float vals[] = {0.0f, 1.0f, 0.5f, 1e-4f, 9.99999e-5f, 1.5e-5f, 1e-30f, 1e-40f /* subnormal */,
                          3.4028235e38f, 123456.0f, 999999.5f, 1e6f, 1234567.0f, -0.25f, -7e-9f,
                          0.1f, 0.333333343f, 2.5f, 100.0f, 0.000123456f};
    enum { NV = sizeof vals / sizeof vals[0] };
    model_config cfg = small_config(1, 1);
    const char *path = temp_path("numbers.jsonl");
    trace_writer *t = NULL;
    llm_err err;
    ck_assert_int_eq(trace_open(path, NULL, &cfg, true, &t, &err), LLM_OK);
    step_record r = base_record(NV - 1, 7, STEP_GEN);
    r.attn = vals;
    ck_assert_int_eq(trace_write(t, &r), LLM_OK);
    ck_assert_int_eq(trace_close(t, &err), LLM_OK);
    size_t len;
    char *text = slurp(path, &len);
    lines L;
    read_lines(path, &L);
    const jval *row = &jneed(L.line[0], "attn", J_ARR)->items[0].items[0];
    ck_assert_int_eq(row->n, NV);
    char want[64];
    for (int i = 0; i < NV; i++) {
        double v = vals[i];
        ck_assert_msg(fabs(row->items[i].num - v) <= fabs(v) * 5e-6,
                      "attn %d: %.9g came back as %.9g", i, v, row->items[i].num);
        snprintf(want, sizeof want, i ? ",%.6g" : "[%.6g", v);
        ck_assert_msg(strstr(text, want) != NULL, "%s not in the trace", want);
    }
    free(text);
    free_lines(&L);
    unlink(path);
}
END_TEST

START_TEST(test_bad_token_id)
{
    tokenizer *tok = nasty_tokenizer();
    const char *path = temp_path("badid.jsonl");
    trace_writer *t = NULL;
    llm_err err;
    ck_assert_int_eq(trace_open(path, tok, NULL, true, &t, &err), LLM_OK);
    step_record r = base_record(0, 99999, STEP_PROMPT);
    float attn[1] = {1.0f};
    r.attn = attn; /* no model config: no attention, no crash */
    r.n_top = STEP_TOP_MAX + 5; /* clamped */
    ck_assert_int_eq(trace_write(t, &r), LLM_OK);
    ck_assert_int_eq(trace_close(t, &err), LLM_OK);
    lines L;
    read_lines(path, &L);
    ck_assert_str_eq(jneed(L.line[0], "piece", J_STR)->str, "");
    ck_assert_int_eq(jneed(L.line[0], "top", J_ARR)->n, STEP_TOP_MAX);
    ck_assert_ptr_null(jget(L.line[0], "attn"));
    free_lines(&L);
    unlink(path);
    tokenizer_close(tok);
}
END_TEST

START_TEST(test_parser_is_strict)
{
    /* The validator must reject what a lax writer could produce. */
    const char *bad[] = {
        "{\"a\":NaN}", "{\"a\":nan}", "{\"a\":inf}", "{\"a\":1,}", "{\"a\":01}", "{\"a\":1.}",
        "{\"a\":\"\n\"}", "{\"a\":\"\\x41\"}", "{\"a\":\"\xff\"}", "{\"a\":1}}", "{\"a\":1,\"a\":2}",
        "{\"a\":\"\\ud800\"}", "{'a':1}", "{\"a\":.5}", "{\"a\":-}", "[1 2]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *why = NULL;
        jval *v = jparse(bad[i], strlen(bad[i]), &why);
        ck_assert_msg(v == NULL, "accepted %s", bad[i]);
    }
    const char *good = "{\"a\":[1,-2.5e-3,0,true,false,null,\"\\u00e9\\ud83d\\ude00\\/\"],\"b\":{}}";
    const char *why = NULL;
    jval *v = jparse(good, strlen(good), &why);
    ck_assert_msg(v != NULL, "rejected valid JSON: %s", why);
    ck_assert_str_eq(jget(v, "a")->items[6].str, "\xc3\xa9\xf0\x9f\x98\x80/");
    jdelete(v);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("trace");
    TCase *core = tcase_create("core");
    tcase_add_test(core, test_phase_names);
    tcase_add_test(core, test_json_string_escaping);
    tcase_add_test(core, test_records_round_trip);
    tcase_add_test(core, test_attention_off);
    tcase_add_test(core, test_every_piece_of_tok512);
    tcase_add_test(core, test_open_errors);
    tcase_add_test(core, test_disk_full_at_close);
    suite_add_tcase(s, core);
    TCase *limits = tcase_create("limits");
    tcase_add_test(limits, test_disk_full_while_writing);
    tcase_add_test(limits, test_big_attention_record);
    tcase_add_test(limits, test_attention_number_range);
    tcase_add_test(limits, test_bad_token_id);
    tcase_add_test(limits, test_parser_is_strict);
    suite_add_tcase(s, limits);
    return s;
}

TEST_MAIN(make_suite)
