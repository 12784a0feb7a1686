/* bench/shapes.c — the shape table (Llama 2 sizes, then a shape of each other family, each
 * with the values its published config has),
 * the weights' random streams and the llama2.c v2 writer (see bench/shapes.h). */
#include "shapes.h"

#include "llama2c.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LLAMA(n, d, h, L, H, KV, V, S, sh) \
    {.name = n, .arch = "llama", .llama2c = true, .dim = d, .hidden_dim = h, .n_layers = L, \
     .n_heads = H, .n_kv_heads = KV, .vocab_size = V, .seq_len = S, .shared = sh, \
     .rms_eps = 1e-5f, .rope_base = 10000.0f}
const shape bench_shapes[] = {
    LLAMA("15M", 288, 768, 6, 6, 6, 32000, 256, 1),
    LLAMA("42M", 512, 1376, 8, 8, 8, 32000, 1024, 1),
    LLAMA("110M", 768, 2048, 12, 12, 12, 32000, 1024, 1),
    LLAMA("1B", 2048, 5632, 22, 32, 4, 32000, 2048, 0),
    LLAMA("7B", 4096, 11008, 32, 32, 32, 32000, 4096, 0),
    /* Llama 3.2 1B's published config: 16 layers, grouped-query attention, a
     * 128,256-token vocabulary, tied embeddings (its "llama3" rope scaling left out: it
     * changes no operation's cost); a GGUF file only */
    {.name = "llama3.2-1B", .arch = "llama", .dim = 2048, .hidden_dim = 8192, .n_layers = 16,
     .n_heads = 32, .n_kv_heads = 8, .vocab_size = 128256, .seq_len = 4096, .shared = 1,
     .rms_eps = 1e-5f, .rope_base = 500000.0f},
    /* the other families, each as its published config (context cut to 4096) */
    {.name = "qwen2-0.5B", .arch = "qwen2", .dim = 896, .hidden_dim = 4864, .n_layers = 24,
     .n_heads = 14, .n_kv_heads = 2, .vocab_size = 151936, .seq_len = 4096, .shared = 1,
     .rms_eps = 1e-6f, .rope_base = 1e6f},
    {.name = "qwen3-0.6B", .arch = "qwen3", .dim = 1024, .hidden_dim = 3072, .n_layers = 28,
     .n_heads = 16, .n_kv_heads = 8, .head_size = 128, .vocab_size = 151936, .seq_len = 4096,
     .shared = 1, .rms_eps = 1e-6f, .rope_base = 1e6f},
    {.name = "phi3-3.8B", .arch = "phi3", .dim = 3072, .hidden_dim = 8192, .n_layers = 32,
     .n_heads = 32, .n_kv_heads = 32, .vocab_size = 32064, .seq_len = 4096, .shared = 0,
     .rms_eps = 1e-6f, .rope_base = 10000.0f, .window = 2047},
    {.name = "gemma-2B", .arch = "gemma", .dim = 2048, .hidden_dim = 16384, .n_layers = 18,
     .n_heads = 8, .n_kv_heads = 1, .head_size = 256, .vocab_size = 256000, .seq_len = 4096,
     .shared = 1, .rms_eps = 1e-6f, .rope_base = 10000.0f},
    {.name = "gemma2-2B", .arch = "gemma2", .dim = 2304, .hidden_dim = 9216, .n_layers = 26,
     .n_heads = 8, .n_kv_heads = 4, .head_size = 256, .vocab_size = 256000, .seq_len = 4096,
     .shared = 1, .rms_eps = 1e-6f, .rope_base = 10000.0f, .window = 4096},
    {.name = "gemma3-1B", .arch = "gemma3", .dim = 1152, .hidden_dim = 6912, .n_layers = 26,
     .n_heads = 4, .n_kv_heads = 1, .head_size = 256, .vocab_size = 262144, .seq_len = 4096,
     .shared = 1, .rms_eps = 1e-6f, .rope_base = 1e6f, .window = 512},
    /* mixtures of experts: a small one whose experts fit any machine (1.0B parameters,
     * 0.29B a token), and Qwen3-30B-A3B's published shape */
    {.name = "qwen3moe-1B-A0.3B", .arch = "qwen3moe", .dim = 1024, .hidden_dim = 3072,
     .n_layers = 12, .n_heads = 16, .n_kv_heads = 4, .head_size = 64, .vocab_size = 32000,
     .seq_len = 4096, .shared = 0, .rms_eps = 1e-6f, .rope_base = 1e6f, .experts = 32,
     .used = 8, .expert_ff = 768},
    {.name = "qwen3moe-30B-A3B", .arch = "qwen3moe", .dim = 2048, .hidden_dim = 6144,
     .n_layers = 48, .n_heads = 32, .n_kv_heads = 4, .head_size = 128, .vocab_size = 151936,
     .seq_len = 4096, .shared = 0, .rms_eps = 1e-6f, .rope_base = 1e6f, .experts = 128,
     .used = 8, .expert_ff = 768},
    /* gpt-oss: a small one (1.3B parameters, 0.23B a token) and gpt-oss-20b's published
     * shape (its experts in Q8_0 here, 22 GB: MXFP4 in the published file) */
    {.name = "gpt-oss-1B-A0.2B", .arch = "gpt-oss", .dim = 1024, .hidden_dim = 1024,
     .n_layers = 12, .n_heads = 16, .n_kv_heads = 4, .head_size = 64, .vocab_size = 32000,
     .seq_len = 4096, .shared = 0, .rms_eps = 1e-5f, .rope_base = 150000.0f, .window = 128,
     .experts = 32, .used = 4, .expert_ff = 1024, .yarn = 32.0f, .yarn_orig = 4096},
    {.name = "gpt-oss-20b", .arch = "gpt-oss", .dim = 2880, .hidden_dim = 2880,
     .n_layers = 24, .n_heads = 64, .n_kv_heads = 8, .head_size = 64, .vocab_size = 201088,
     .seq_len = 4096, .shared = 0, .rms_eps = 1e-5f, .rope_base = 150000.0f, .window = 128,
     .experts = 32, .used = 4, .expert_ff = 2880, .yarn = 32.0f, .yarn_orig = 4096},
    /* hybrids: Qwen3.5-0.8B's and Qwen3.5-4B's published configs (three layers in four
     * Gated DeltaNets, RoPE over 64 of each head's 256 values, tied embeddings) */
    {.name = "qwen3.5-0.8B", .arch = "qwen35", .dim = 1024, .hidden_dim = 3584, .n_layers = 24,
     .n_heads = 8, .n_kv_heads = 2, .head_size = 256, .vocab_size = 248320, .seq_len = 4096,
     .shared = 1, .rms_eps = 1e-6f, .rope_base = 1e7f, .rot = 64, .attn_every = 4, .dn_k = 16,
     .dn_v = 16, .dn_head = 128},
    {.name = "qwen3.5-4B", .arch = "qwen35", .dim = 2560, .hidden_dim = 9216, .n_layers = 32,
     .n_heads = 16, .n_kv_heads = 4, .head_size = 256, .vocab_size = 248320, .seq_len = 4096,
     .shared = 1, .rms_eps = 1e-6f, .rope_base = 1e7f, .rot = 64, .attn_every = 4, .dn_k = 16,
     .dn_v = 32, .dn_head = 128},
    /* Gemma-4-E2B's published config: four sliding layers (heads of 256) to one global
     * (512), one KV head, the last 20 layers reading the caches of layers 13 and 14 with
     * feed-forwards twice as wide, per-layer inputs of 256, tied embeddings */
    {.name = "gemma-4-E2B", .arch = "gemma4", .dim = 1536, .hidden_dim = 6144, .n_layers = 35,
     .n_heads = 8, .n_kv_heads = 1, .head_size = 512, .vocab_size = 262144, .seq_len = 4096,
     .shared = 1, .rms_eps = 1e-6f, .rope_base = 1e6f, .window = 512, .swa_head = 256,
     .kv_full = 1, .shared_kv = 20, .ple = 256},
    /* Gemma 4 with experts: the 26B-A4B's proportions (the dense feed-forward 3/4 of dim,
     * 128 experts of 1/4 of dim, 8 a token; no per-layer inputs or shared caches) at a
     * size any machine holds: 12 layers of 1024, 32 experts (0.68B parameters, 0.45B a
     * token with the tied 262,144-token classifier) */
    {.name = "gemma-4-moe-0.7B-A0.5B", .arch = "gemma4", .dim = 1024, .hidden_dim = 768, .n_layers = 12,
     .n_heads = 8, .n_kv_heads = 4, .head_size = 512, .vocab_size = 262144, .seq_len = 4096,
     .shared = 1, .rms_eps = 1e-6f, .rope_base = 1e6f, .window = 512, .swa_head = 256,
     .kv_full = 1, .experts = 32, .used = 8, .expert_ff = 256},
};
#undef LLAMA
const int bench_n_shapes = sizeof bench_shapes / sizeof bench_shapes[0];

shape_rng shape_rng_for(const shape *s, int kind, int layer)
{
    uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)s->dim * 1000003u;
    seed ^= ((uint64_t)kind << 40) ^ ((uint64_t)(layer + 1) << 20);
    return (shape_rng){seed ? seed : 1};
}

uint64_t shape_rng_next(shape_rng *r)
{
    uint64_t x = r->state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

void shape_rng_int8(shape_rng *r, int8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        uint64_t x = shape_rng_next(r);
        for (size_t j = 0; j < 8 && i + j < n; j++) {
            int8_t v = (int8_t)(x >> (8 * j));
            out[i + j] = v == -128 ? -127 : v;
        }
    }
}

void shape_agreeing_model(const shape *s, int layers, shape *model, char *name,
                          size_t name_size)
{
    snprintf(name, name_size, "%s-quiet-from-%d", s->name, layers);
    *model = *s;
    model->name = name;
    model->quiet_from = layers;
    model->text_only = true;
}

bool shape_has_llama2c(const shape *s)
{
    return s->llama2c;
}

int shape_head_size(const shape *s)
{
    return s->head_size > 0 ? s->head_size : s->dim / s->n_heads;
}

int shape_group(const shape *s)
{
    int g = 64;
    while (g > 32 && (s->dim % g || s->hidden_dim % g))
        g /= 2;
    return g;
}

/* The llama2.c v2 header of shape s. */
static llama2c_header shape_header(const shape *s)
{
    return (llama2c_header){.version = 2, .dim = s->dim, .hidden_dim = s->hidden_dim,
                            .n_layers = s->n_layers, .n_heads = s->n_heads,
                            .n_kv_heads = s->n_kv_heads, .vocab_size = s->vocab_size,
                            .seq_len = s->seq_len, .shared = s->shared, .group = shape_group(s)};
}

uint64_t shape_llama2c_bytes(const shape *s)
{
    llama2c_header h = shape_header(s);
    return llama2c_file_bytes(&h);
}

/* Writes n weights of stream r (int8 values, then n / group scales), in chunks. */
static int write_q8_tensor(FILE *f, uint64_t n, int group, shape_rng r)
{
    enum { CHUNK = 1 << 20 };
    static int8_t buf[CHUNK];
    static float sbuf[CHUNK / 4];
    for (uint64_t done = 0; done < n;) {
        size_t k = n - done < CHUNK ? (size_t)(n - done) : CHUNK;
        shape_rng_int8(&r, buf, k);
        if (fwrite(buf, 1, k, f) != k)
            return -1;
        done += k;
    }
    for (size_t i = 0; i < CHUNK / 4; i++)
        sbuf[i] = SHAPE_WEIGHT_SCALE;
    for (uint64_t left = n / group; left > 0;) {
        size_t k = left < CHUNK / 4 ? (size_t)left : CHUNK / 4;
        if (fwrite(sbuf, 4, k, f) != k)
            return -1;
        left -= k;
    }
    return 0;
}

static int write_llama2c(FILE *f, const shape *s)
{
    uint64_t d = s->dim, h = s->hidden_dim, L = s->n_layers, V = s->vocab_size;
    uint64_t kv = (uint64_t)s->n_kv_heads * (d / s->n_heads);
    int g = shape_group(s);
    llama2c_header head = shape_header(s);
    int bad = llama2c_write_header(f, &head, "the model file", NULL) != LLM_OK;
    /* rms_att, rms_ffn (layers, dim), rms_final (dim): all ones */
    float one = 1.0f;
    for (uint64_t i = 0; i < 2 * L * d + d && !bad; i++)
        bad = fwrite(&one, 4, 1, f) != 1;
    bad = bad || write_q8_tensor(f, V * d, g, shape_rng_for(s, 0, 0));
    const uint64_t sizes[7] = {d * d, kv * d, kv * d, d * d, h * d, d * h, h * d};
    for (int t = 0; t < 7 && !bad; t++)
        for (uint64_t l = 0; l < L && !bad; l++)
            bad = write_q8_tensor(f, sizes[t], g, shape_rng_for(s, 1 + t, (int)l));
    if (!s->shared && !bad)
        bad = write_q8_tensor(f, V * d, g, shape_rng_for(s, 8, 0));
    return bad ? -1 : 0;
}

/* Writes path with fn unless a file of `bytes` is there (see shapes.h). */
static int write_once(const char *path, uint64_t bytes, const shape *s,
                      int (*fn)(FILE *, const shape *), char *err, size_t err_size)
{
    struct stat st;
    if (stat(path, &st) == 0 && (uint64_t)st.st_size == bytes)
        return 0;
    fprintf(stderr, "llmchat-bench: writing %s (%.1f MB)...\n", path, bytes / 1e6);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        snprintf(err, err_size, "cannot write %s: %s", tmp, strerror(errno));
        return -1;
    }
    int bad = fn(f, s);
    if (bad || fflush(f) != 0 || fsync(fileno(f)) != 0) {
        snprintf(err, err_size, "writing %s failed: %s", tmp, strerror(errno));
        fclose(f);
        unlink(tmp);
        return -1;
    }
    fclose(f);
    if (stat(tmp, &st) != 0 || (uint64_t)st.st_size != bytes) {
        snprintf(err, err_size, "%s came out %lld bytes, not %llu", tmp,
                 (long long)st.st_size, (unsigned long long)bytes);
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, path) != 0) {
        snprintf(err, err_size, "cannot rename %s: %s", tmp, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

int shape_write_llama2c(const shape *s, const char *path, char *err, size_t err_size)
{
    return write_once(path, shape_llama2c_bytes(s), s, write_llama2c, err, err_size);
}

int shape_write_file(const shape *s, const char *path, uint64_t bytes,
                     int (*fn)(FILE *, const shape *), char *err, size_t err_size)
{
    return write_once(path, bytes, s, fn, err, err_size);
}
