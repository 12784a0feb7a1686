/* test_transformer.c — the forward pass against llama2.c's golden greedy outputs, Q8_0
 * against F32, the int8 file against the fp32 file, batch against sequential, the
 * attention rows, the argument limits and running out of memory for the kernels'
 * scratch.
 *
 * The golden texts are decoded with a small llama2.c tokenizer reader and BPE encoder
 * of its own (below), so these tests do not depend on tokenizer.c. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "kernels.h"
#include "model.h"
#include "testutil.h"
#include "transformer.h"

/* ---- a minimal llama2.c tokenizer, for decoding (and encoding golden prompts) ---- */

typedef struct {
    int n;
    char **piece; /* (n) NUL-terminated */
    float *score; /* (n) */
} mini_tok;

static void mini_tok_load(mini_tok *t, const char *rel)
{
    FILE *f = fopen(data_path(rel), "rb");
    ck_assert_msg(f != NULL, "cannot open %s", data_path(rel));
    uint32_t max_len;
    ck_assert_int_eq(fread(&max_len, 4, 1, f), 1);
    int cap = 1024;
    t->n = 0;
    t->piece = malloc(sizeof(char *) * cap);
    t->score = malloc(sizeof(float) * cap);
    float score;
    int32_t len;
    while (fread(&score, 4, 1, f) == 1) {
        ck_assert_int_eq(fread(&len, 4, 1, f), 1);
        ck_assert(len >= 0 && len < 256);
        if (t->n == cap) {
            cap *= 2;
            t->piece = realloc(t->piece, sizeof(char *) * cap);
            t->score = realloc(t->score, sizeof(float) * cap);
        }
        char *p = malloc((size_t)len + 1);
        ck_assert_int_eq(fread(p, 1, (size_t)len, f), (size_t)len);
        p[len] = '\0';
        t->piece[t->n] = p;
        t->score[t->n++] = score;
    }
    fclose(f);
}

static void mini_tok_free(mini_tok *t)
{
    for (int i = 0; i < t->n; i++)
        free(t->piece[i]);
    free(t->piece);
    free(t->score);
}

/* Appends the text of token after prev to out (size cap). */
static void mini_tok_decode(const mini_tok *t, int prev, int token, char *out, size_t cap)
{
    const char *p = t->piece[token];
    if (prev == 1 && p[0] == ' ')
        p++;
    unsigned byte;
    char buf[2] = {0};
    if (sscanf(p, "<0x%02X>", &byte) == 1 && strlen(p) == 6) {
        buf[0] = (char)byte;
        p = buf;
    }
    size_t len = strlen(out);
    snprintf(out + len, cap - len, "%s", p);
}

static int mini_tok_lookup(const mini_tok *t, const char *s, size_t len)
{
    for (int i = 0; i < t->n; i++)
        if (strlen(t->piece[i]) == len && memcmp(t->piece[i], s, len) == 0)
            return i;
    return -1;
}

/* llama2.c's encode: dummy prefix, characters (or byte tokens), best-score merges.
 * Returns the number of ids written (no BOS). */
static int mini_tok_encode(const mini_tok *t, const char *text, int *ids)
{
    int n = 0;
    if (!*text)
        return 0;
    ids[n++] = mini_tok_lookup(t, " ", 1);
    ck_assert_int_ge(ids[0], 0);
    for (const char *c = text; *c;) {
        size_t len = 1;
        while (((unsigned char)c[len] & 0xC0) == 0x80 && len < 4)
            len++;
        int id = mini_tok_lookup(t, c, len);
        if (id >= 0) {
            ids[n++] = id;
        } else {
            for (size_t i = 0; i < len; i++)
                ids[n++] = (unsigned char)c[i] + 3;
        }
        c += len;
    }
    for (;;) {
        float best = -1e10f;
        int best_id = -1, best_at = -1;
        for (int i = 0; i + 1 < n; i++) {
            char pair[512];
            snprintf(pair, sizeof pair, "%s%s", t->piece[ids[i]], t->piece[ids[i + 1]]);
            int id = mini_tok_lookup(t, pair, strlen(pair));
            if (id >= 0 && t->score[id] > best) {
                best = t->score[id];
                best_id = id;
                best_at = i;
            }
        }
        if (best_at < 0)
            break;
        ids[best_at] = best_id;
        memmove(ids + best_at + 1, ids + best_at + 2, sizeof(int) * (size_t)(n - best_at - 2));
        n--;
    }
    return n;
}

/* ---- golden file ---- */

/* Copies the JSON string value of "key" in line into out (unescaped). */
static bool json_string(const char *line, const char *key, char *out, size_t cap)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": \"", key);
    const char *p = strstr(line, pat);
    if (!p)
        return false;
    p += strlen(pat);
    size_t o = 0;
    while (*p && *p != '"' && o + 4 < cap) {
        if (*p == '\\') {
            p++;
            switch (*p) {
            case 'n': out[o++] = '\n'; break;
            case 't': out[o++] = '\t'; break;
            case 'u': {
                unsigned u = 0;
                sscanf(p + 1, "%4x", &u);
                p += 4;
                if (u < 0x80) {
                    out[o++] = (char)u;
                } else if (u < 0x800) {
                    out[o++] = (char)(0xC0 | u >> 6);
                    out[o++] = (char)(0x80 | (u & 0x3F));
                } else {
                    out[o++] = (char)(0xE0 | u >> 12);
                    out[o++] = (char)(0x80 | (u >> 6 & 0x3F));
                    out[o++] = (char)(0x80 | (u & 0x3F));
                }
                break;
            }
            default: out[o++] = *p; break;
            }
            p++;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
    return *p == '"';
}

static int json_int(const char *line, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(line, pat);
    return p ? atoi(p + strlen(pat)) : -1;
}

typedef struct {
    char model[128], tokenizer[128], prompt[256], text[8192];
    int steps;
} golden;

/* Reads entry `index` of generate_greedy.jsonl; false past the end. */
static bool golden_read(int index, golden *g)
{
    FILE *f = fopen(data_path("golden/generate_greedy.jsonl"), "r");
    ck_assert_msg(f != NULL, "cannot open the golden file");
    static char line[16384];
    bool found = false;
    for (int i = 0; fgets(line, sizeof line, f); i++) {
        if (i == index) {
            ck_assert(json_string(line, "model", g->model, sizeof g->model));
            ck_assert(json_string(line, "tokenizer", g->tokenizer, sizeof g->tokenizer));
            ck_assert(json_string(line, "prompt", g->prompt, sizeof g->prompt));
            ck_assert(json_string(line, "text", g->text, sizeof g->text));
            g->steps = json_int(line, "steps");
            found = true;
            break;
        }
    }
    fclose(f);
    return found;
}

/* ---- helpers ---- */

static model *open_model(const char *rel, tensor_type type)
{
    model_options opt;
    model_options_default(&opt);
    opt.weights = type;
    model *m = NULL;
    llm_err err;
    llm_status s = model_open(rel[0] == '/' ? rel : data_path(rel), &opt, &m, &err);
    ck_assert_msg(s == LLM_OK, "%s", err.text);
    return m;
}

static transformer *new_transformer_kv(const model *m, int ctx, transformer_kv kv)
{
    transformer *t = NULL;
    llm_err err;
    ck_assert_msg(transformer_new_kv(m, ctx, kv, &t, &err) == LLM_OK, "%s", err.text);
    return t;
}

static transformer *new_transformer(const model *m, int ctx)
{
    return new_transformer_kv(m, ctx, TRANSFORMER_KV_AUTO);
}

static int argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

/* Greedy generation as llama2.c's run does (BOS, prompt, then argmax until pos reaches
 * steps or BOS comes up); writes the decoded text. Returns the number of positions. */
static int greedy_text(const model *m, const mini_tok *tok, const char *prompt, int steps,
                       char *out, size_t cap, int *ids_out)
{
    transformer *t = new_transformer(m, 0);
    int prompt_ids[512];
    int n_prompt = mini_tok_encode(tok, prompt, prompt_ids);
    out[0] = '\0';
    int token = 1, pos = 0;
    while (pos < steps) {
        const float *logits = transformer_forward(t, token, pos, NULL);
        ck_assert_ptr_nonnull(logits);
        int next = pos < n_prompt ? prompt_ids[pos] : argmax(logits, m->config.vocab_size);
        if (ids_out)
            ids_out[pos] = next;
        pos++;
        if (next == 1)
            break;
        mini_tok_decode(tok, token, next, out, cap);
        token = next;
    }
    transformer_free(t);
    return pos;
}

static size_t common_prefix(const char *a, const char *b)
{
    size_t n = 0;
    while (a[n] && a[n] == b[n])
        n++;
    return n;
}

static char text_buf[8192];

/* ---- golden greedy ---- */

START_TEST(test_golden_f32_empty_prompt)
{
    /* BOS then argmax-greedy from stories260K with F32 weights vs llama2.c. */
    golden g;
    bool found = false;
    for (int i = 0; !found && golden_read(i, &g); i++)
        found = strcmp(g.prompt, "") == 0 && strcmp(g.model, "stories260K.bin") == 0;
    ck_assert_msg(found, "no golden entry with an empty prompt");
    mini_tok tok;
    mini_tok_load(&tok, "tok512.bin");
    model *m = open_model("stories260K.bin", TENSOR_F32);
    /* with the plain-C kernels and with the best the CPU has */
    const kernels_isa isas[] = {KERNELS_SCALAR, KERNELS_AUTO};
    for (int k = 0; k < 2; k++) {
        kernels_isa isa = kernels_init(isas[k]);
        greedy_text(m, &tok, "", g.steps, text_buf, sizeof text_buf, NULL);
        size_t same = common_prefix(text_buf, g.text);
        fprintf(stderr, "golden F32 (empty prompt, %s kernels): %zu of %zu characters match\n",
                kernels_isa_name(isa), same, strlen(g.text));
        ck_assert_msg(same >= 100, "%s kernels: only %zu characters match:\n%s",
                      kernels_isa_name(isa), same, text_buf);
    }
    model_close(m);
    mini_tok_free(&tok);
}
END_TEST

START_TEST(test_golden_f32_all)
{
    /* Every golden entry (three models: GQA and not), prompts encoded here. */
    golden g;
    int entries = 0;
    for (int i = 0; golden_read(i, &g); i++, entries++) {
        char rel[300];
        mini_tok tok;
        snprintf(rel, sizeof rel, "%s", g.tokenizer);
        mini_tok_load(&tok, rel);
        snprintf(rel, sizeof rel, "%s", g.model);
        model *m = open_model(rel, TENSOR_F32);
        ck_assert_int_eq(tok.n, m->config.vocab_size);
        greedy_text(m, &tok, g.prompt, g.steps, text_buf, sizeof text_buf, NULL);
        size_t same = common_prefix(text_buf, g.text);
        size_t want = strlen(g.text) < 100 ? strlen(g.text) : 100;
        fprintf(stderr, "golden F32 %s \"%s\": %zu of %zu characters match\n", g.model,
                g.prompt, same, strlen(g.text));
        ck_assert_msg(same >= want, "%s \"%s\": only %zu characters match:\n%s", g.model,
                      g.prompt, same, text_buf);
        model_close(m);
        mini_tok_free(&tok);
    }
    ck_assert_int_ge(entries, 10);
}
END_TEST

START_TEST(test_golden_q8)
{
    /* Q8_0 (stories260K.bin quantized at load): report the agreement; the first
     * sentence must match. */
    golden g;
    bool found = false;
    for (int i = 0; !found && golden_read(i, &g); i++)
        found = strcmp(g.prompt, "") == 0 && strcmp(g.model, "stories260K.bin") == 0;
    ck_assert(found);
    mini_tok tok;
    mini_tok_load(&tok, "tok512.bin");
    const char *files[] = {"stories260K.bin", "stories260K_q80.bin"};
    const kernels_isa isas[] = {KERNELS_SCALAR, KERNELS_AUTO};
    for (int k = 0; k < 4; k++) {
        kernels_isa isa = kernels_init(isas[k / 2]);
        model *m = open_model(files[k % 2], TENSOR_Q8_0);
        greedy_text(m, &tok, "", g.steps, text_buf, sizeof text_buf, NULL);
        size_t same = common_prefix(text_buf, g.text);
        fprintf(stderr, "golden Q8_0 (%s, %s kernels): %zu of %zu characters match\n",
                files[k % 2], kernels_isa_name(isa), same, strlen(g.text));
        const char *first = "Once upon a time, there was a little girl named Lily.";
        ck_assert_msg(strncmp(text_buf, first, strlen(first)) == 0, "%s: %s", files[k % 2],
                      text_buf);
        model_close(m);
    }
    mini_tok_free(&tok);
}
END_TEST

START_TEST(test_golden_chat)
{
    /* chat260K answers Llama 2 chat-template prompts as in chat_greedy.jsonl: the reply
     * (greedy, up to EOS) after BOS + "[INST] ... [/INST]" encoded as text. */
    FILE *f = fopen(data_path("golden/chat_greedy.jsonl"), "r");
    ck_assert_ptr_nonnull(f);
    mini_tok tok;
    mini_tok_load(&tok, "tok512.bin");
    model *models[2] = {open_model("chat260K.bin", TENSOR_F32),
                        open_model("chat260K_q80.bin", TENSOR_Q8_0)};
    static char line[8192], sys[1024], user[1024], reply[4096], prompt[4096];
    int entries = 0, q8_exact = 0;
    while (fgets(line, sizeof line, f)) {
        ck_assert(json_string(line, "system", sys, sizeof sys));
        ck_assert(json_string(line, "user", user, sizeof user));
        ck_assert(json_string(line, "reply", reply, sizeof reply));
        if (sys[0])
            snprintf(prompt, sizeof prompt, "[INST] <<SYS>>\n%s\n<</SYS>>\n\n%s [/INST]", sys, user);
        else
            snprintf(prompt, sizeof prompt, "[INST] %s [/INST]", user);
        int ids[1024];
        int n = mini_tok_encode(&tok, prompt, ids);
        for (int k = 0; k < 2; k++) {
            transformer *t = new_transformer(models[k], 0);
            const float *logits = transformer_forward(t, 1, 0, NULL);
            for (int i = 0; i < n; i++)
                logits = transformer_forward(t, ids[i], i + 1, NULL);
            char out[4096] = "";
            int pos = n + 1, prev = ids[n - 1];
            bool eos = false;
            while (pos < 400) {
                int next = argmax(logits, models[k]->config.vocab_size);
                if (next == 2) {
                    eos = true;
                    break;
                }
                mini_tok_decode(&tok, prev, next, out, sizeof out);
                logits = transformer_forward(t, next, pos++, NULL);
                prev = next;
            }
            const char *text = out[0] == ' ' ? out + 1 : out;
            if (k == 0) {
                ck_assert_msg(eos && strcmp(text, reply) == 0, "F32 reply to \"%s\":\n%s", user,
                              text);
            } else {
                q8_exact += eos && strcmp(text, reply) == 0;
                ck_assert_msg(common_prefix(text, reply) >= 20, "Q8_0 reply to \"%s\":\n%s",
                              user, text);
            }
            transformer_free(t);
        }
        entries++;
    }
    fprintf(stderr, "golden chat: F32 %d/%d replies exact, chat260K_q80 %d/%d exact\n", entries,
            entries, q8_exact, entries);
    ck_assert_int_ge(entries, 4);
    fclose(f);
    model_close(models[0]);
    model_close(models[1]);
    mini_tok_free(&tok);
}
END_TEST

/* ---- Q8_0 vs F32 ---- */

/* Teacher-forces ids[0..n) through both transformers; returns the max |logit
 * difference| over the logit range and counts argmax agreements. Frees both. */
static double compare_runs(transformer *ta, transformer *tb, const int *ids, int n, int *agree)
{
    int vocab = transformer_model(ta)->config.vocab_size;
    double worst = 0.0;
    *agree = 0;
    for (int pos = 0; pos < n; pos++) {
        const float *la = transformer_forward(ta, ids[pos], pos, NULL);
        const float *lb = transformer_forward(tb, ids[pos], pos, NULL);
        float lo = la[0], hi = la[0], diff = 0.0f;
        for (int i = 0; i < vocab; i++) {
            lo = fminf(lo, la[i]);
            hi = fmaxf(hi, la[i]);
            diff = fmaxf(diff, fabsf(la[i] - lb[i]));
        }
        worst = fmax(worst, diff / (hi - lo));
        *agree += argmax(la, vocab) == argmax(lb, vocab);
    }
    transformer_free(ta);
    transformer_free(tb);
    return worst;
}

/* compare_runs of two models, each with the KV cache its weights imply. */
static double compare_logits(const model *a, const model *b, const int *ids, int n,
                             int *agree)
{
    return compare_runs(new_transformer(a, 0), new_transformer(b, 0), ids, n, agree);
}

START_TEST(test_q8_vs_f32_logits)
{
    mini_tok tok;
    mini_tok_load(&tok, "tok512.bin");
    model *f = open_model("stories260K.bin", TENSOR_F32);
    int ids[128];
    ids[0] = 1;
    int n = greedy_text(f, &tok, "", 100, text_buf, sizeof text_buf, ids + 1);
    const char *others[] = {"stories260K.bin", "stories260K_q80.bin"};
    for (int i = 0; i < 2; i++) {
        model *q = open_model(others[i], TENSOR_Q8_0);
        int agree;
        double rel = compare_logits(f, q, ids, n, &agree);
        fprintf(stderr, "Q8_0 %s vs F32: max |dlogit| / range %.4f, argmax agrees %d/%d\n",
                others[i], rel, agree, n);
        ck_assert_msg(rel < 0.05, "%s: logits differ by %.3f of their range", others[i], rel);
        ck_assert_msg(agree >= n * 9 / 10, "%s: argmax agrees on %d of %d", others[i], agree, n);
        model_close(q);
    }
    /* The int8 file dequantized to F32 agrees with the fp32 file too. */
    model *qf = open_model("stories260K_q80.bin", TENSOR_F32);
    int agree;
    double rel = compare_logits(f, qf, ids, n, &agree);
    ck_assert_msg(rel < 0.05 && agree >= n * 9 / 10, "q80 as F32: %.3f, %d/%d", rel, agree, n);
    model_close(qf);
    model_close(f);
    mini_tok_free(&tok);
}
END_TEST

/* The int8 KV cache against the fp32 one, with the same weights: logits close, the
 * same greedy choices nearly everywhere, on three head sizes (8, 16 and 8 without GQA). */
START_TEST(test_kv_q8_vs_f32)
{
    const char *files[] = {"stories260K.bin", "babyllama_tok105_model5000.bin",
                           "aidreams260K.bin"};
    for (int f = 0; f < 3; f++)
        for (int type = 0; type < 2; type++) {
            model *m = open_model(files[f], type ? TENSOR_Q8_0 : TENSOR_F32);
            enum { N = 120 };
            int ids[N];
            for (int i = 0; i < N; i++)
                ids[i] = i == 0 ? 1 : (i * 29 + 5) % m->config.vocab_size;
            transformer *a = new_transformer_kv(m, N, TRANSFORMER_KV_F32);
            transformer *b = new_transformer_kv(m, N, TRANSFORMER_KV_Q8_0);
            ck_assert_int_eq(transformer_kv_type(a), TRANSFORMER_KV_F32);
            ck_assert_int_eq(transformer_kv_type(b), TRANSFORMER_KV_Q8_0);
            ck_assert(transformer_kv_bytes(b) * 2 < transformer_kv_bytes(a)); /* hs 8: 1.5 B a value */
            int agree;
            double rel = compare_runs(a, b, ids, N, &agree);
            fprintf(stderr, "KV Q8_0 vs F32 (%s, %s weights): max |dlogit| / range %.4f, "
                    "argmax agrees %d/%d\n", files[f], type ? "Q8_0" : "F32", rel, agree, N);
            ck_assert_msg(rel < 0.05, "%s: logits differ by %.3f of their range", files[f], rel);
            ck_assert_msg(agree >= N * 9 / 10, "%s: argmax agrees on %d of %d", files[f], agree,
                          N);
            model_close(m);
        }
    /* AUTO follows the weights */
    model *f32 = open_model("stories260K.bin", TENSOR_F32);
    model *q8 = open_model("stories260K.bin", TENSOR_Q8_0);
    transformer *a = new_transformer(f32, 8), *b = new_transformer(q8, 8);
    ck_assert_int_eq(transformer_kv_type(a), TRANSFORMER_KV_F32);
    ck_assert_int_eq(transformer_kv_type(b), TRANSFORMER_KV_Q8_0);
    transformer_free(a);
    transformer_free(b);
    model_close(f32);
    model_close(q8);
}
END_TEST

START_TEST(test_q80_file_greedy_agrees)
{
    /* A short greedy run of the int8 file and of the fp32 file pick the same tokens. */
    mini_tok tok;
    mini_tok_load(&tok, "tok512.bin");
    model *f = open_model("stories260K.bin", TENSOR_F32);
    model *q = open_model("stories260K_q80.bin", TENSOR_Q8_0);
    int a[64], b[64];
    char ta[4096], tb[4096];
    int na = greedy_text(f, &tok, "", 40, ta, sizeof ta, a);
    int nb = greedy_text(q, &tok, "", 40, tb, sizeof tb, b);
    ck_assert_int_eq(na, nb);
    for (int i = 0; i < na; i++)
        ck_assert_msg(a[i] == b[i], "position %d: %d vs %d\n%s\n%s", i, a[i], b[i], ta, tb);
    model_close(q);
    model_close(f);
    mini_tok_free(&tok);
}
END_TEST

/* ---- batch vs sequential, attention ---- */

/* Batched prefill against one token at a time, both with a KV cache of type kv. */
static void check_batch(const char *rel, tensor_type type, transformer_kv kv, float tol)
{
    model *m = open_model(rel, type); /* a fixture name (data_path), or an absolute path */
    const model_config *c = &m->config;
    int vocab = c->vocab_size, n1 = 70, n2 = 9, n = n1 + n2;
    int ids[79];
    for (int i = 0; i < n; i++)
        ids[i] = i == 0 ? 1 : (i * 37 + 11) % vocab;

    transformer *seq = new_transformer_kv(m, 128, kv);
    float *want = malloc(sizeof(float) * (size_t)n * vocab);
    size_t attn_stride = (size_t)c->n_layers * c->n_heads * n;
    float *want_attn = calloc((size_t)n * attn_stride, sizeof(float));
    for (int pos = 0; pos < n; pos++) {
        const float *l = transformer_forward(seq, ids[pos], pos, want_attn + pos * attn_stride);
        memcpy(want + (size_t)pos * vocab, l, sizeof(float) * vocab);
    }

    transformer *bat = new_transformer_kv(m, 128, kv);
    float *got = malloc(sizeof(float) * (size_t)n * vocab);
    float *got_attn = calloc((size_t)n * attn_stride, sizeof(float));
    float *attn_ptrs[79];
    for (int i = 0; i < n; i++)
        attn_ptrs[i] = i % 3 ? got_attn + i * attn_stride : NULL; /* some not captured */
    const float *last = transformer_forward_batch(bat, ids, n1, 0, got, attn_ptrs);
    ck_assert_ptr_nonnull(last);
    ck_assert(memcmp(last, got + (size_t)(n1 - 1) * vocab, sizeof(float) * vocab) == 0);
    /* second batch without all-position logits: only the last is returned */
    last = transformer_forward_batch(bat, ids + n1, n2, n1, NULL, attn_ptrs + n1);
    memcpy(got + (size_t)(n - 1) * vocab, last, sizeof(float) * vocab);

    /* Prefill's int8 GEMM sums in another order than decode's kernel: with int8 weights
     * a rounding difference can move an activation to the next int8 step, so those are
     * compared like Q8_0 against F32 (a share of the logit range, argmax agreement) */
    double worst = 0.0, worst_rel = 0.0;
    int agree = 0, compared = 0;
    for (int pos = 0; pos < n; pos++) {
        if (pos >= n1 && pos < n - 1)
            continue;
        const float *w0 = want + (size_t)pos * vocab, *g0 = got + (size_t)pos * vocab;
        float lo = w0[0], hi = w0[0], diff = 0.0f;
        for (int i = 0; i < vocab; i++) {
            lo = fminf(lo, w0[i]);
            hi = fmaxf(hi, w0[i]);
            diff = fmaxf(diff, fabsf(w0[i] - g0[i]));
        }
        worst = fmax(worst, diff);
        worst_rel = fmax(worst_rel, diff / (hi - lo));
        agree += argmax(w0, vocab) == argmax(g0, vocab);
        compared++;
    }
    const char *wname = type == TENSOR_F32 ? "f32" : "q8_0";
    const char *kvname = kv == TRANSFORMER_KV_F32 ? "f32" : "q8_0";
    fprintf(stderr, "batch vs sequential (%s, weights %s, KV cache %s): max |dlogit| %.3g, "
            "%.4f of the range, argmax agrees %d/%d\n", rel, wname, kvname, worst, worst_rel,
            agree, compared);
    if (type == TENSOR_F32 && kv == TRANSFORMER_KV_F32) {
        ck_assert_msg(worst <= tol, "%s (weights %s, KV cache %s): batch logits differ from "
                      "sequential by %g", rel, wname, kvname, worst);
    } else {
        ck_assert_msg(worst_rel < 0.05, "%s (weights %s, KV cache %s): batch logits differ "
                      "from sequential by %.3f of their range", rel, wname, kvname, worst_rel);
        ck_assert_msg(agree >= compared * 9 / 10, "%s: argmax agrees on %d of %d", rel, agree,
                      compared);
    }
    /* any position's logits again, from what each transformer kept: the same bits as
     * the forward call gave, one at a time or in a batch */
    float *again = malloc(sizeof(float) * (size_t)n * vocab);
    transformer_logits(seq, 0, n, again);
    ck_assert(memcmp(again, want, sizeof(float) * (size_t)n * vocab) == 0);
    for (int pos = n - 1; pos >= 0; pos -= 5) {
        transformer_logits(seq, pos, 1, again);
        ck_assert(memcmp(again, want + (size_t)pos * vocab, sizeof(float) * vocab) == 0);
    }
    transformer_logits(bat, 0, n1, again);
    ck_assert(memcmp(again, got, sizeof(float) * (size_t)n1 * vocab) == 0);
    transformer_logits(bat, n - 1, 1, again);
    ck_assert(memcmp(again, got + (size_t)(n - 1) * vocab, sizeof(float) * vocab) == 0);
    free(again);
    double worst_attn = 0.0;
    for (int pos = 0; pos < n; pos++) {
        if (!attn_ptrs[pos])
            continue;
        size_t used = (size_t)c->n_layers * c->n_heads * (pos + 1);
        for (size_t i = 0; i < used; i++)
            worst_attn = fmax(worst_attn, fabs(want_attn[pos * attn_stride + i] -
                                               got_attn[pos * attn_stride + i]));
        for (size_t i = used; i < attn_stride; i++)
            check_each(got_attn[pos * attn_stride + i] == 0.0f, "position %d: a weight written "
                       "past its %zu, at %zu", pos, used, i);
    }
    fprintf(stderr, "   attention weights differ by at most %.3g\n", worst_attn);
    ck_assert_msg(worst_attn <= (type == TENSOR_F32 && kv == TRANSFORMER_KV_F32 ? 1e-4 : 0.05),
                  "%s: batch attention differs by %g", rel, worst_attn);

    transformer_free(seq);
    transformer_free(bat);
    free(want);
    free(got);
    free(want_attn);
    free(got_attn);
    model_close(m);
}

START_TEST(test_batch_equals_sequential)
{
    const transformer_kv F32 = TRANSFORMER_KV_F32, Q8 = TRANSFORMER_KV_Q8_0;
    check_batch("stories260K.bin", TENSOR_F32, F32, 1e-4f);
    check_batch("stories260K.bin", TENSOR_Q8_0, F32, 1e-3f);
    check_batch("stories260K_q80.bin", TENSOR_Q8_0, F32, 1e-3f);
    check_batch("aidreams260K.bin", TENSOR_Q8_0, F32, 1e-3f);
    check_batch("babyllama_tok105_model5000.bin", TENSOR_F32, F32, 1e-4f);
    /* An int8 KV cache: prefill reads the same int8 rows as decode (made fp32 again),
     * but decode's int8 attention and prefill's batched fp32 attention sum a score in
     * different orders (AVX2: 8-lane partial sums against one chain per key), so a
     * layer's output can differ by a rounding error and the next layer's key round to
     * the next int8 step (seen on AVX2: 0.035 of a logit, 0.2% of the range): these
     * are compared like int8 weights, by a share of the range and the argmax. With
     * int8 weights and an int8 cache, test_kv_q8_vs_f32 compares by closeness. */
    check_batch("stories260K.bin", TENSOR_F32, Q8, 1e-3f);
    check_batch("babyllama_tok105_model5000.bin", TENSOR_F32, Q8, 1e-3f);
}
END_TEST

START_TEST(test_attention_rows)
{
    const char *files[] = {"stories260K.bin", "aidreams260K.bin",
                           "babyllama_tok105_model5000.bin"};
    for (int f = 0; f < 3; f++) {
        model *m = open_model(files[f], TENSOR_Q8_0);
        const model_config *c = &m->config;
        transformer *t = new_transformer(m, 32);
        int rows = c->n_layers * c->n_heads;
        float *attn = malloc(sizeof(float) * ((size_t)rows * 32 + 1));
        for (int pos = 0; pos < 32; pos++) {
            size_t used = (size_t)rows * (pos + 1);
            attn[used] = -7.0f; /* sentinel just past what this position fills */
            const float *l = transformer_forward(t, pos ? (pos * 5) % c->vocab_size : 1, pos, attn);
            ck_assert_ptr_nonnull(l);
            ck_assert(attn[used] == -7.0f);
            for (int r = 0; r < rows; r++) {
                double sum = 0.0;
                for (int k = 0; k <= pos; k++) {
                    float w = attn[(size_t)r * (pos + 1) + k];
                    check_each(w >= 0.0f && w <= 1.0f, "%s pos %d row %d: weight %g", files[f], pos,
                               r, w);
                    check_each(pos > 0 || w == 1.0f, /* position 0 sees only itself */
                               "%s row %d: position 0's own weight %g", files[f], r, w);
                    sum += w;
                }
                ck_assert_msg(fabs(sum - 1.0) < 1e-4, "%s pos %d row %d sums to %g", files[f],
                              pos, r, sum);
            }
            for (int i = 0; i < c->vocab_size; i++)
                check_each(isfinite(l[i]), "%s pos %d: logit %d is %g", files[f], pos, i, l[i]);
        }
        free(attn);
        transformer_free(t);
        model_close(m);
    }
}
END_TEST

/* ---- thread counts ---- */

/* Logits and attention of `steps` one-token calls (and of one batch) run with
 * `threads` OpenMP threads into logits (steps + 1, vocab) and attn. */
static void run_with_threads(const model *m, int threads, const int *ids, int steps,
                             float *logits, float *attn)
{
#ifdef _OPENMP
    omp_set_num_threads(threads);
#else
    (void)threads;
#endif
    const model_config *c = &m->config;
    transformer *t = new_transformer(m, 64);
    size_t rows = (size_t)c->n_layers * c->n_heads;
    for (int pos = 0; pos < steps; pos++) {
        const float *l = transformer_forward(t, ids[pos], pos, attn);
        memcpy(logits + (size_t)pos * c->vocab_size, l, sizeof(float) * c->vocab_size);
        attn += rows * (pos + 1);
    }
    const float *l = transformer_forward_batch(t, ids, steps, 0, NULL, NULL);
    memcpy(logits + (size_t)steps * c->vocab_size, l, sizeof(float) * c->vocab_size);
    transformer_free(t);
}

/* The one-token path splits rows and heads among threads in one parallel region; the
 * batch path splits rows, heads and (between the matmuls) tokens. How many threads
 * there are must not change a single bit of what either computes. */
START_TEST(test_threads_agree)
{
    const char *files[] = {"babyllama_tok105_model5000.bin", "stories260K.bin"};
    for (int f = 0; f < 2; f++)
        for (int type = 0; type < 2; type++) {
            model *m = open_model(files[f], type ? TENSOR_Q8_0 : TENSOR_F32);
            const model_config *c = &m->config;
            enum { STEPS = 40 };
            int ids[STEPS];
            for (int i = 0; i < STEPS; i++)
                ids[i] = i == 0 ? 1 : (i * 31 + 7) % c->vocab_size;
            size_t n_logits = (size_t)(STEPS + 1) * c->vocab_size;
            size_t n_attn = (size_t)c->n_layers * c->n_heads * STEPS * (STEPS + 1) / 2;
            float *l1 = malloc(sizeof(float) * n_logits), *l3 = malloc(sizeof(float) * n_logits);
            float *a1 = malloc(sizeof(float) * n_attn), *a3 = malloc(sizeof(float) * n_attn);
            run_with_threads(m, 1, ids, STEPS, l1, a1);
            run_with_threads(m, 3, ids, STEPS, l3, a3);
            ck_assert_msg(memcmp(l1, l3, sizeof(float) * n_logits) == 0,
                          "%s: logits differ between 1 and 3 threads", files[f]);
            ck_assert_msg(memcmp(a1, a3, sizeof(float) * n_attn) == 0,
                          "%s: attention differs between 1 and 3 threads", files[f]);
            free(l1);
            free(l3);
            free(a1);
            free(a3);
            model_close(m);
        }
#ifdef _OPENMP
    omp_set_num_threads(omp_get_num_procs());
#endif
}
END_TEST

/* ---- odd shapes ---- */

/* Writes a random v0 model with widths that are not multiples of 32 (rows padded in
 * Q8_0), GQA and a separate classifier. */
static const char *write_odd_model(void)
{
    const int32_t dim = 48, hidden = 100, layers = 2, heads = 6, kv_heads = 2, vocab = 37,
                  seq = 128;
    const int32_t header[7] = {dim, hidden, layers, heads, kv_heads, -vocab, seq};
    int32_t kv_dim = kv_heads * (dim / heads), hs = dim / heads;
    size_t n = (size_t)vocab * dim + layers * ((size_t)dim * 2 + 2 * (size_t)dim * dim +
                                               2 * (size_t)kv_dim * dim + 3 * (size_t)hidden * dim) +
               dim + (size_t)seq * hs + (size_t)vocab * dim;
    float *w = malloc(sizeof(float) * n);
    uint32_t r = 42;
    for (size_t i = 0; i < n; i++) {
        r = r * 1664525u + 1013904223u;
        w[i] = ((float)(r >> 8) / (float)(1 << 24) - 0.5f) * 0.5f;
    }
    /* RMSNorm weights near 1: rms_att follows the embedding, rms_ffn the attention */
    size_t at = (size_t)vocab * dim;
    for (size_t i = 0; i < (size_t)layers * dim; i++)
        w[at + i] = 1.0f + w[at + i] * 0.2f;
    const char *path = temp_path("odd.bin");
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fwrite(header, 4, 7, f);
    fwrite(w, 4, n, f);
    fclose(f);
    free(w);
    return path;
}

START_TEST(test_odd_shapes)
{
    const char *path = write_odd_model();
    model_options opt;
    model_options_default(&opt);
    model *q = NULL, *f = NULL;
    llm_err err;
    ck_assert_msg(model_open(path, &opt, &q, &err) == LLM_OK, "%s", err.text);
    opt.weights = TENSOR_F32;
    ck_assert_msg(model_open(path, &opt, &f, &err) == LLM_OK, "%s", err.text);
    ck_assert_int_eq(q->layers[0].wq.stride, 64);
    ck_assert_int_eq(q->layers[0].w2.stride, 128);
    ck_assert(!q->config.shared_classifier);

    int ids[80];
    for (int i = 0; i < 80; i++)
        ids[i] = (i * 7 + 3) % 37;
    int agree;
    double rel = compare_logits(f, q, ids, 80, &agree);
    fprintf(stderr, "odd shapes: Q8_0 vs F32 max |dlogit| / range %.4f, argmax agrees %d/80\n",
            rel, agree);
    ck_assert_msg(rel < 0.05, "Q8_0 vs F32 on odd shapes: %.3f of the range", rel);
    model_close(q);
    model_close(f);
    check_batch(path, TENSOR_Q8_0, TRANSFORMER_KV_F32, 1e-3f);
    check_batch(path, TENSOR_F32, TRANSFORMER_KV_F32, 1e-4f);
    check_batch(path, TENSOR_F32, TRANSFORMER_KV_Q8_0, 1e-3f);
    unlink(path);
}
END_TEST

/* ---- limits ---- */

START_TEST(test_limits)
{
    model *m = open_model("aidreams260K.bin", TENSOR_Q8_0);
    transformer *t = NULL;
    llm_err err;
    ck_assert_int_eq(transformer_new(m, m->config.seq_len + 1, &t, &err), LLM_ERR_ARG);
    ck_assert_ptr_null(t);
    ck_assert_ptr_nonnull(strstr(err.text, "129"));
    ck_assert_int_eq(transformer_new(m, -1, &t, &err), LLM_ERR_ARG);
    ck_assert_int_eq(transformer_new(m, 0, &t, &err), LLM_OK);
    ck_assert_int_eq(transformer_ctx(t), m->config.seq_len);
    ck_assert_ptr_eq(transformer_model(t), m);
    ck_assert_ptr_null(transformer_forward(t, m->config.vocab_size, 0, NULL));
    ck_assert_ptr_null(transformer_forward(t, -1, 0, NULL));
    ck_assert_ptr_null(transformer_forward(t, 1, m->config.seq_len, NULL));
    int ids[4] = {1, 2, 3, 4};
    ck_assert_ptr_null(transformer_forward_batch(t, ids, 4, m->config.seq_len - 3, NULL, NULL));
    ck_assert_ptr_null(transformer_forward_batch(t, ids, 0, 0, NULL, NULL));
    ck_assert_ptr_nonnull(transformer_forward(t, 1, m->config.seq_len - 1, NULL));
    ck_assert_ptr_nonnull(transformer_forward_batch(t, ids, 4, m->config.seq_len - 4, NULL, NULL));
    transformer_free(t);
    transformer_free(NULL);
    /* A context of exactly 1 position works. */
    ck_assert_int_eq(transformer_new(m, 1, &t, &err), LLM_OK);
    ck_assert_ptr_nonnull(transformer_forward(t, 1, 0, NULL));
    transformer_free(t);
    model_close(m);
}
END_TEST

/* Out of memory for the kernels' scratch: transformer_run returns NULL and
 * transformer_error says why; with memory back, the same transformer runs the same
 * positions to the bits of one that never failed. */
START_TEST(test_kernels_out_of_memory)
{
    /* the scalar table on every machine: its prompt GEMM packs the vectors in scratch */
    ck_assert_int_eq(kernels_init(KERNELS_SCALAR), KERNELS_SCALAR);
    model *m = open_model("stories260K.bin", TENSOR_Q8_0);
    int vocab = m->config.vocab_size, ids[24];
    for (int i = 0; i < 24; i++)
        ids[i] = i == 0 ? 1 : (i * 37) % vocab;
    transformer *t = new_transformer(m, 64), *ref = new_transformer(m, 64);
    llm_err err = {{0}};
    ck_assert_int_eq(transformer_error(t, &err), LLM_OK);
    kernels_scratch_limit_bytes(0);
    ck_assert_ptr_null(transformer_run(t, ids, 24, 0, TRANSFORMER_KERNELS_BATCH, NULL, NULL));
    ck_assert_int_eq(transformer_error(t, &err), LLM_ERR_NOMEM);
    ck_assert_msg(strstr(err.text, "out of memory for the kernels' scratch"), "%s", err.text);
    ck_assert_ptr_null(transformer_forward(t, vocab, 0, NULL)); /* a bad token: another why */
    ck_assert_int_eq(transformer_error(t, &err), LLM_ERR_ARG);
    kernels_scratch_limit_bytes(SIZE_MAX);
    const float *got = transformer_run(t, ids, 24, 0, TRANSFORMER_KERNELS_BATCH, NULL, NULL);
    ck_assert_ptr_nonnull(got);
    ck_assert_int_eq(transformer_error(t, &err), LLM_OK);
    const float *want = transformer_run(ref, ids, 24, 0, TRANSFORMER_KERNELS_BATCH, NULL, NULL);
    ck_assert_ptr_nonnull(want);
    ck_assert(memcmp(got, want, sizeof(float) * vocab) == 0);
    transformer_free(t);
    transformer_free(ref);
    model_close(m);
    kernels_init(KERNELS_AUTO);
}
END_TEST

START_TEST(test_long_batch)
{
    /* A whole context in one call (512 positions: several chunks), all logits. fp32
     * weights and cache: with int8 ones a key can round to the next int8 step on one
     * path and not the other (see test_batch_equals_sequential). */
    model *m = open_model("stories260K.bin", TENSOR_F32);
    int n = m->config.seq_len, vocab = m->config.vocab_size;
    int *ids = malloc(sizeof(int) * n);
    for (int i = 0; i < n; i++)
        ids[i] = i == 0 ? 1 : (i * 13) % vocab;
    float *logits = malloc(sizeof(float) * (size_t)n * vocab);
    transformer *t = new_transformer(m, 0), *s = new_transformer(m, 0);
    const float *last = transformer_forward_batch(t, ids, n, 0, logits, NULL);
    ck_assert_ptr_nonnull(last);
    const float *l = NULL;
    for (int pos = 0; pos < n; pos++)
        l = transformer_forward(s, ids[pos], pos, NULL);
    for (int i = 0; i < vocab; i++) {
        ck_assert(fabsf(l[i] - last[i]) < 1e-3f);
        ck_assert(fabsf(l[i] - logits[(size_t)(n - 1) * vocab + i]) < 1e-3f);
    }
    transformer_free(t);
    transformer_free(s);
    free(ids);
    free(logits);
    model_close(m);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("transformer");
    TCase *core = tcase_create("core");
    tcase_set_timeout(core, 120);
    tcase_add_test(core, test_golden_f32_empty_prompt);
    tcase_add_test(core, test_golden_f32_all);
    tcase_add_test(core, test_golden_q8);
    tcase_add_test(core, test_golden_chat);
    tcase_add_test(core, test_q8_vs_f32_logits);
    tcase_add_test(core, test_q80_file_greedy_agrees);
    tcase_add_test(core, test_kv_q8_vs_f32);
    tcase_add_test(core, test_batch_equals_sequential);
    tcase_add_test(core, test_attention_rows);
    tcase_add_test(core, test_odd_shapes);
    tcase_add_test(core, test_threads_agree);
    suite_add_tcase(s, core);
    TCase *limits = tcase_create("limits");
    tcase_set_timeout(limits, 60);
    tcase_add_test(limits, test_limits);
    tcase_add_test(limits, test_long_batch);
    tcase_add_test(limits, test_kernels_out_of_memory);
    suite_add_tcase(s, limits);
    return s;
}

TEST_MAIN(make_suite)
