/* llama2c.c — the llama2.c checkpoint layout: header encoding, the tensor order of each
 * version, implied sizes, and the writers (see llama2c.h). */
#include "llama2c.h"

#include <stdlib.h>
#include <string.h>

#include "quant.h"

static int32_t get_i32(const unsigned char *p)
{
    uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    int32_t v;
    memcpy(&v, &u, sizeof v);
    return v;
}

static void put_i32(unsigned char *p, int32_t v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(u >> (8 * i));
}

static void decode_fields(llama2c_header *h, const unsigned char *p)
{
    h->dim = get_i32(p);
    h->hidden_dim = get_i32(p + 4);
    h->n_layers = get_i32(p + 8);
    h->n_heads = get_i32(p + 12);
    h->n_kv_heads = get_i32(p + 16);
    h->vocab_size = get_i32(p + 20);
    h->seq_len = get_i32(p + 24);
}

bool llama2c_header_decode(const unsigned char *p, size_t size, llama2c_header *h)
{
    memset(h, 0, sizeof *h);
    if (size >= 4 && (uint32_t)get_i32(p) == LLAMA2C_MAGIC) {
        if (size < LLAMA2C_AK42_HEADER_BYTES)
            return false;
        h->version = get_i32(p + LLAMA2C_AT_VERSION);
        decode_fields(h, p + LLAMA2C_AT_FIELDS);
        h->shared = p[LLAMA2C_AT_SHARED];
        h->group = h->version == 2 ? get_i32(p + LLAMA2C_AT_GROUP) : 0;
        return true;
    }
    if (size < LLAMA2C_V0_HEADER_BYTES)
        return false;
    decode_fields(h, p);
    h->shared = h->vocab_size > 0;
    if (h->vocab_size < 0 && h->vocab_size != INT32_MIN)
        h->vocab_size = -h->vocab_size;
    return true;
}

size_t llama2c_header_encode(const llama2c_header *h, unsigned char out[LLAMA2C_AK42_HEADER_BYTES])
{
    memset(out, 0, LLAMA2C_AK42_HEADER_BYTES);
    const int32_t fields[7] = {h->dim, h->hidden_dim, h->n_layers, h->n_heads, h->n_kv_heads,
                               h->version == 0 && !h->shared ? -h->vocab_size : h->vocab_size,
                               h->seq_len};
    if (h->version == 0) {
        for (int i = 0; i < 7; i++)
            put_i32(out + 4 * i, fields[i]);
        return LLAMA2C_V0_HEADER_BYTES;
    }
    put_i32(out, (int32_t)LLAMA2C_MAGIC);
    put_i32(out + LLAMA2C_AT_VERSION, h->version);
    for (int i = 0; i < 7; i++)
        put_i32(out + LLAMA2C_AT_FIELDS + 4 * i, fields[i]);
    out[LLAMA2C_AT_SHARED] = (unsigned char)(h->shared != 0);
    if (h->version == 2)
        put_i32(out + LLAMA2C_AT_GROUP, h->group);
    return LLAMA2C_AK42_HEADER_BYTES;
}

static const llama2c_part order_v0[] = {
    LLAMA2C_TOKEN_EMBEDDING, LLAMA2C_RMS_ATT, LLAMA2C_WQ, LLAMA2C_WK, LLAMA2C_WV, LLAMA2C_WO,
    LLAMA2C_RMS_FFN, LLAMA2C_W1, LLAMA2C_W2, LLAMA2C_W3, LLAMA2C_RMS_FINAL, LLAMA2C_ROPE_TABLES,
    LLAMA2C_WCLS,
};
/* v1 and v2: the norms first, then the matrices */
static const llama2c_part order_ak42[] = {
    LLAMA2C_RMS_ATT, LLAMA2C_RMS_FFN, LLAMA2C_RMS_FINAL, LLAMA2C_TOKEN_EMBEDDING, LLAMA2C_WQ,
    LLAMA2C_WK, LLAMA2C_WV, LLAMA2C_WO, LLAMA2C_W1, LLAMA2C_W2, LLAMA2C_W3, LLAMA2C_WCLS,
};

const llama2c_part *llama2c_parts(const llama2c_header *h, int *n)
{
    /* wcls is last in both orders: leave it out when shared */
    if (h->version == 0) {
        *n = (int)(sizeof order_v0 / sizeof *order_v0) - (h->shared ? 1 : 0);
        return order_v0;
    }
    *n = (int)(sizeof order_ak42 / sizeof *order_ak42) - (h->shared ? 1 : 0);
    return order_ak42;
}

bool llama2c_part_is_matrix(llama2c_part p)
{
    return p != LLAMA2C_RMS_ATT && p != LLAMA2C_RMS_FFN && p != LLAMA2C_RMS_FINAL &&
           p != LLAMA2C_ROPE_TABLES;
}

bool llama2c_part_per_layer(llama2c_part p)
{
    return p != LLAMA2C_TOKEN_EMBEDDING && p != LLAMA2C_RMS_FINAL && p != LLAMA2C_ROPE_TABLES &&
           p != LLAMA2C_WCLS;
}

void llama2c_part_shape(const llama2c_header *h, llama2c_part p, uint64_t *rows, uint64_t *cols)
{
    uint64_t dim = (uint64_t)h->dim, hidden = (uint64_t)h->hidden_dim;
    uint64_t head = dim / (uint64_t)h->n_heads;
    uint64_t kv_dim = (uint64_t)h->n_kv_heads * head;
    *cols = dim;
    switch (p) {
    case LLAMA2C_TOKEN_EMBEDDING:
    case LLAMA2C_WCLS: *rows = (uint64_t)h->vocab_size; break;
    case LLAMA2C_WQ:
    case LLAMA2C_WO: *rows = dim; break;
    case LLAMA2C_WK:
    case LLAMA2C_WV: *rows = kv_dim; break;
    case LLAMA2C_W1:
    case LLAMA2C_W3: *rows = hidden; break;
    case LLAMA2C_W2: *rows = dim; *cols = hidden; break;
    case LLAMA2C_ROPE_TABLES: *rows = 2 * (uint64_t)h->seq_len; *cols = head / 2; break;
    default: *rows = 1; break; /* the norms */
    }
}

uint64_t llama2c_file_bytes(const llama2c_header *h)
{
    int n;
    const llama2c_part *parts = llama2c_parts(h, &n);
    uint64_t bytes = h->version == 0 ? LLAMA2C_V0_HEADER_BYTES : LLAMA2C_AK42_HEADER_BYTES;
    for (int i = 0; i < n; i++) {
        uint64_t rows, cols;
        llama2c_part_shape(h, parts[i], &rows, &cols);
        uint64_t values = rows * cols * (llama2c_part_per_layer(parts[i]) ? (uint64_t)h->n_layers : 1);
        if (h->version == 2 && llama2c_part_is_matrix(parts[i])) {
            uint64_t per = rows * cols; /* each layer's tensor has its own scales */
            uint64_t count = llama2c_part_per_layer(parts[i]) ? (uint64_t)h->n_layers : 1;
            bytes += count * (per + 4 * (per / (uint64_t)h->group));
        } else {
            bytes += 4 * values;
        }
    }
    return bytes;
}

llm_status llama2c_write_header(FILE *f, const llama2c_header *h, const char *path, llm_err *err)
{
    unsigned char buf[LLAMA2C_AK42_HEADER_BYTES];
    size_t n = llama2c_header_encode(h, buf);
    if (fwrite(buf, 1, n, f) != n)
        return llm_fail(err, LLM_ERR_IO, "cannot write %s", path);
    return LLM_OK;
}

llm_status llama2c_write_q8(FILE *f, const float *x, uint64_t n, int group, const char *path,
                            llm_err *err)
{
    /* quantized in chunks of whole groups; values first, then all the scales */
    enum { CHUNK_GROUPS = 4096 };
    size_t chunk = (size_t)group * CHUNK_GROUPS;
    int8_t *q = malloc(chunk);
    float *scales = malloc(sizeof(float) * (size_t)(n / (uint64_t)group + 1));
    if (!q || !scales) {
        free(q);
        free(scales);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory writing %s", path);
    }
    llm_status st = LLM_OK;
    for (uint64_t done = 0; done < n && st == LLM_OK; done += chunk) {
        size_t k = n - done < chunk ? (size_t)(n - done) : chunk;
        quant_quantize_row(q, scales + done / (uint64_t)group, x + done, (int)k, (int)k, group);
        if (fwrite(q, 1, k, f) != k)
            st = llm_fail(err, LLM_ERR_IO, "cannot write %s", path);
    }
    size_t n_scales = (size_t)(n / (uint64_t)group);
    if (st == LLM_OK && fwrite(scales, sizeof(float), n_scales, f) != n_scales)
        st = llm_fail(err, LLM_ERR_IO, "cannot write %s", path);
    free(q);
    free(scales);
    return st;
}
