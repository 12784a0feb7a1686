/* kernels.c — chooses one kernel table at start and runs kernels through it (see
 * kernels.h); splits matrix products over OpenMP threads.
 *
 * Owns the chosen table: a copy of one instruction set's table (src/kernels/) whose
 * empty entries are filled from its base table, if it has one, then from the scalar
 * table, so every entry is callable. Knows which tables this build has (configure
 * defines HAVE_KERNELS_X86 when it builds the x86 files, HAVE_KERNELS_AMX the AMX one,
 * HAVE_KERNELS_AVX_VNNI the AVX-VNNI one, HAVE_KERNELS_ARM and HAVE_KERNELS_ARM_DOTPROD the AArch64 ones) and asks
 * each whether the CPU can run it. Beside choosing, it holds what every table shares:
 * splitting products over threads, the prefill GEMM's packing of the vectors and of
 * block-type rows (made exact Q8_0 a few at a time, their mins added after), the group
 * sums and the fp32 attention written over the row kernels, for tables without their
 * own; and the instruction sets' names, from kernels.h's one list.
 *
 * Every buffer it and the tables work in is a slot of the calling thread's scratch
 * (kernels/scratch.h), handed down from the caller's workspace: a parallel call gives
 * OpenMP thread i scratch i, grown before the region. A call made with none makes a
 * workspace (or scratch) for itself and frees it before it returns. */
#include "config.h"

#include "kernels.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "panels.h"
#include "table.h"

/* Every table this build has, best first. */
static const kernel_table *const tables[] = {
#ifdef HAVE_KERNELS_AMX
    &kernels_x86_amx,
#endif
#ifdef HAVE_KERNELS_X86
    &kernels_x86_avx512,
#endif
#ifdef HAVE_KERNELS_AVX_VNNI
    &kernels_x86_avx_vnni,
#endif
#ifdef HAVE_KERNELS_X86
    &kernels_x86_avx2,
#endif
#ifdef HAVE_KERNELS_ARM_DOTPROD
    &kernels_arm_neon_dotprod,
#endif
#ifdef HAVE_KERNELS_ARM
    &kernels_arm_neon,
#endif
    &kernels_scalar,
};
enum { N_TABLES = sizeof tables / sizeof tables[0] };

static kernel_table active;
static bool ready;

static const kernel_table *table_of(kernels_isa isa)
{
    for (int i = 0; i < N_TABLES; i++)
        if (tables[i]->isa == isa)
            return tables[i];
    return NULL;
}

/* kernels.h's list of names as a table. */
static const struct {
    kernels_isa isa;
    const char *name, *short_name;
} isa_names[] = {
#define ROW(value, name, short_name) {value, name, short_name},
    KERNELS_ISA_LIST(ROW)
#undef ROW
};
enum { ISA_NAMES = sizeof isa_names / sizeof isa_names[0] };
static_assert((int)ISA_NAMES == (int)KERNELS_COUNT,
              "KERNELS_ISA_LIST names every kernels_isa once");

const char *kernels_isa_name(kernels_isa isa)
{
    for (int i = 0; i < ISA_NAMES; i++)
        if (isa_names[i].isa == isa)
            return isa_names[i].name;
    return "?";
}

const char *kernels_isa_choices(void)
{
    return KERNELS_ISA_CHOICES;
}

bool kernels_isa_parse(const char *name, kernels_isa *out)
{
    for (int i = 0; i < ISA_NAMES; i++)
        if (strcmp(name, isa_names[i].name) == 0 || strcmp(name, isa_names[i].short_name) == 0) {
            *out = isa_names[i].isa;
            return true;
        }
    return false;
}

bool kernels_isa_supported(kernels_isa isa)
{
    if (isa == KERNELS_AUTO)
        return true;
    const kernel_table *t = table_of(isa);
    return t && t->cpu_supports();
}

/* fp32 attention one query at a time over the chosen table's row kernels: for tables
 * without a batched one. Needs no scratch. */
static void attention_by_rows(kernels_scratch *s, float *out, size_t out_stride, float *att,
                              size_t att_stride, const float *q, size_t q_stride,
                              const float *k, const float *v, size_t kv_stride, int n, int pos,
                              int hs, float scale)
{
    for (int i = 0; i < n; i++) {
        int keys = pos + i + 1;
        float *a = att + (size_t)i * att_stride;
        float *o = out + (size_t)i * out_stride;
        active.rows_dot(a, k, kv_stride, keys, q + (size_t)i * q_stride, hs);
        for (int t = 0; t < keys; t++)
            a[t] *= scale;
        active.softmax(a, keys);
        for (int t = keys; t < pos + n; t++)
            a[t] = 0.0f;
        memset(o, 0, sizeof(float) * hs);
        active.rows_axpy(o, v, kv_stride, keys, a, hs);
    }
}

/* The NULL entries of k taken from s. The GEMM (gemm_q8 with the pack it reads, its
 * row block and gemm_q8b), matvec_q8b, matmul_q8b, matmul_q8p, attention_f32 and gemm_mins only when
 * `all` (from a base table: the scalar table's are not fallbacks for those, kernels.c
 * has its own). A row dot comes with the order it reads x in. */
static void fill_entries(kernel_table *k, const kernel_table *s, bool all)
{
#define FILL(entry)                                                                       \
    if (!k->entry)                                                                        \
        k->entry = s->entry;
    if (all) {
        if (!k->gemm_q8) { /* with the pack it reads and its row block */
            k->gemm_q8 = s->gemm_q8;
            k->gemm_q8b = s->gemm_q8b;
            k->gemm_q8_small = s->gemm_q8_small;
            k->gemm_q8_halves = s->gemm_q8_halves;
            k->gemm_q8_nibbles = s->gemm_q8_nibbles;
            k->gemm_signed = s->gemm_signed;
            k->gemm_wide = s->gemm_wide;
            k->gemm_rows = s->gemm_rows;
        }
        FILL(matvec_q8b)
        FILL(matmul_q8b)
        FILL(matmul_q8p)
        if (!k->matvec_k4p) { /* with the row dot whose bits they have */
            k->matvec_k4p = s->matvec_k4p;
            k->matmul_k4p = s->matmul_k4p;
            k->k4p_dot = s->k4p_dot;
        }
        FILL(attention_f32)
        FILL(gemm_mins)
    }
    FILL(rows_q8)
    FILL(q8b_to_rows)
    FILL(rows_f32)
    FILL(dot_q8)
    FILL(quantize_row)
    FILL(dequantize_rows)
    FILL(unpack_row)
    FILL(unpack_k4_group)
    FILL(gemm_pack16)
    FILL(rows_dot)
    FILL(rows_axpy)
    FILL(softmax)
    FILL(swiglu)
    FILL(geglu)
    FILL(attention_q8)
#undef FILL
    /* a row dot comes with the order it reads x in */
    for (int t = 0; t < BLOCKS_TYPES; t++)
        if (!k->dot_blocks[t]) {
            k->dot_blocks[t] = s->dot_blocks[t];
            k->blocks_x[t] = s->blocks_x[t];
            k->dot_blocks_multi[t] = s->dot_blocks_multi[t];
        }
}

kernels_isa kernels_init_table(const kernel_table *t)
{
    kernel_table k = *t;
    if (t->base)
        fill_entries(&k, t->base, true);
    fill_entries(&k, &kernels_scalar, false);
    if (!k.attention_f32)
        k.attention_f32 = attention_by_rows;
    active = k;
    __atomic_store_n(&ready, true, __ATOMIC_RELEASE);
    return k.isa;
}

kernels_isa kernels_init(kernels_isa wanted)
{
    const kernel_table *t = NULL;
    if (wanted != KERNELS_AUTO && kernels_isa_supported(wanted))
        t = table_of(wanted);
    for (int i = 0; !t && i < N_TABLES; i++)
        if (tables[i]->cpu_supports())
            t = tables[i];
    return kernels_init_table(t);
}

/* First use without kernels_init picks the best kernels; safe inside parallel regions
 * (the attention helpers may be the first call a thread makes). */
const kernel_table *kernels_active(void)
{
    if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
#pragma omp critical(kernels_init)
        if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE))
            kernels_init(KERNELS_AUTO);
    }
    return &active;
}

void kernels_rows_dot(float *out, const float *rows, size_t row_stride, int n_rows,
                      const float *x, int len)
{
    kernels_active()->rows_dot(out, rows, row_stride, n_rows, x, len);
}

void kernels_rows_axpy(float *out, const float *rows, size_t row_stride, int n_rows,
                       const float *a, int len)
{
    kernels_active()->rows_axpy(out, rows, row_stride, n_rows, a, len);
}

void kernels_softmax(float *x, int n)
{
    kernels_active()->softmax(x, n);
}

void kernels_swiglu(float *gate, const float *up, int n)
{
    kernels_active()->swiglu(gate, up, n);
}

void kernels_geglu(float *gate, const float *up, int n)
{
    kernels_active()->geglu(gate, up, n);
}

bool kernels_attention_f32(kernels_scratch *s, float *out, size_t out_stride, float *att,
                           size_t att_stride, const float *q, size_t q_stride, const float *k,
                           const float *v, size_t kv_stride, int n, int pos, int hs,
                           float scale)
{
    kernels_scratch *own = s ? NULL : (s = kernels_scratch_new());
    if (!s)
        return false;
    unsigned failures = kernels_scratch_failures(s);
    kernels_active()->attention_f32(s, out, out_stride, att, att_stride, q, q_stride, k, v,
                                    kv_stride, n, pos, hs, scale);
    bool ok = kernels_scratch_failures(s) == failures;
    kernels_scratch_free(own);
    return ok;
}

void kernels_attention_q8(float *out, float *att, const float *q, const int8_t *k,
                          const float *ks, const int8_t *v, const float *vs, int n_keys, int hs,
                          float scale)
{
    kernels_active()->attention_q8(out, att, q, k, ks, v, vs, n_keys, hs, scale);
}

float kernels_dot_q8(const int8_t *a, const float *as, const int8_t *b, const float *bs, int len,
                     int group)
{
    return kernels_active()->dot_q8(a, as, b, bs, len, group);
}

float kernels_dot_q8_ref(const int8_t *a, const float *as, const int8_t *b, const float *bs,
                         int len, int group)
{
    return kernels_scalar_dot_q8(a, as, b, bs, len, group);
}

bool kernels_matvec(kernels_workspace *ws, float *out, const tensor *w, const float *x,
                    const qbatch *xq)
{
    return kernels_matmul(ws, out, w, x, xq, 1);
}

/* Rows r0..r0+n-1 (n <= BLOCK_ROWS_CONVERTED) of the Q8_0_BLOCKS tensor w as a Q8_0
 * tensor in the scratch's ROWS slots, to be read from row 0; rows keeps w's row count
 * so that kernels write their results where w's would go (out + r0). NULL when out of
 * memory. */
static const tensor *blocks_as_rows(kernels_scratch *s, const tensor *w, int r0, int n,
                                    tensor *view)
{
    size_t values = (size_t)BLOCK_ROWS_CONVERTED * w->cols;
    int8_t *q = kernels_scratch_get(s, SCRATCH_ROWS_Q, values);
    float *scale = kernels_scratch_get(s, SCRATCH_ROWS_SCALE,
                                       sizeof(float) * (values / QUANT_BLOCK));
    if (!q || !scale)
        return NULL;
    kernels_active()->q8b_to_rows(q, scale, w, r0, n);
    *view = (tensor){.type = TENSOR_Q8_0, .rows = w->rows, .cols = w->cols, .stride = w->cols,
                     .group = QUANT_BLOCK, .q = q, .scale = scale};
    return view;
}

/* kernel(s, out, rows-of-w, arg, r0', r1') over rows r0..r1-1 of a Q8_0_BLOCKS w, a
 * few rows at a time made Q8_0: the same values, so the same bits as a Q8_0 tensor.
 * Stops when out of memory (counted in s). */
static void blocks_by_rows(kernels_scratch *s, float *out, const tensor *w, int r0, int r1,
                           void (*kernel)(kernels_scratch *, float *, const tensor *,
                                          const void *, int, int),
                           const void *arg)
{
    for (int r = r0; r < r1; r += BLOCK_ROWS_CONVERTED) {
        int n = r1 - r < BLOCK_ROWS_CONVERTED ? r1 - r : BLOCK_ROWS_CONVERTED;
        tensor view;
        const tensor *t = blocks_as_rows(s, w, r, n, &view);
        if (!t)
            return;
        kernel(s, out + r, t, arg, 0, n);
    }
}

typedef struct {
    const qbatch *xq;
    int n;
} rows_arg;

static void rows_q8_kernel(kernels_scratch *s, float *out, const tensor *w, const void *arg,
                           int r0, int r1)
{
    const rows_arg *a = arg;
    kernels_active()->rows_q8(s, out, w, a->xq, a->n, r0, r1);
}

static void gemm_q8_kernel(kernels_scratch *s, float *out, const tensor *w, const void *arg,
                           int r0, int r1)
{
    kernels_active()->gemm_q8(s, out, w, arg, r0, r1);
}

/* True for the block types whose dot products read the activations' group sums. */
static bool has_mins(int btype)
{
    return btype == GGML_TYPE_Q4_1 || btype == GGML_TYPE_Q5_1 || btype == GGML_TYPE_Q4_K ||
           btype == GGML_TYPE_Q5_K;
}

/* The width of the activation sums a block type's row dot reads as xsum (table.h):
 * 32 for the types with mins and for Q4_0 and Q5_0 (their offsets), 16 for Q6_K (its
 * offset per 16-value piece). */
static int sums_width(int btype)
{
    return btype == GGML_TYPE_Q6_K ? 16 : QUANT_BLOCK;
}

/* Σ q[i], i < n; inlined with n a constant, so that the compiler vectorizes it. */
static inline __attribute__((always_inline)) int sum_int8(const int8_t *q, int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += q[i];
    return s;
}

/* The scratch's slot for the group sums of n vectors of xq in pieces of `width` (see
 * group_sums); NULL when out of memory. */
static float *group_sums_buffer(kernels_scratch *s, const qbatch *xq, int n, int width)
{
    size_t need = (size_t)n * (xq->stride / width);
    return kernels_scratch_get(s, SCRATCH_GROUP_SUMS, sizeof(float) * need);
}

/* Rows v0..v1-1 of sums (n, stride / width): each piece's `width` int8 values of xq
 * (group 32) summed, times the scale of the piece's group. */
static void group_sums_fill(float *sums, const qbatch *xq, int v0, int v1, int width)
{
    int pieces = xq->stride / width, groups = xq->stride / QUANT_BLOCK;
    for (int v = v0; v < v1; v++)
        for (int g = 0; g < pieces; g++) {
            const int8_t *q = xq->q + (size_t)v * xq->stride + (size_t)g * width;
            int s = width == 16 ? sum_int8(q, 16) : sum_int8(q, QUANT_BLOCK);
            sums[(size_t)v * pieces + g] =
                xq->scale[(size_t)v * groups + g * width / QUANT_BLOCK] * (float)s;
        }
}

/* xsum (n, stride / width) of vectors 0..n-1 of xq, in the scratch; NULL when out of
 * memory. */
static const float *group_sums(kernels_scratch *s, const qbatch *xq, int n, int width)
{
    float *sums = group_sums_buffer(s, xq, n, width);
    if (sums)
        group_sums_fill(sums, xq, 0, n, width);
    return sums;
}

/* Vectors 0..n-1 of xq (their first cols values) in the order `order` writes, in the
 * scratch (stride xq->stride); NULL when out of memory. */
static const int8_t *blocks_x_order(kernels_scratch *s, blocks_x_fn order, const qbatch *xq,
                                    int n, int cols)
{
    int8_t *buf = kernels_scratch_get(s, SCRATCH_X_ORDER, (size_t)n * xq->stride);
    if (!buf)
        return NULL;
    for (int v = 0; v < n; v++)
        order(buf + (size_t)v * xq->stride, xq->q + (size_t)v * xq->stride, cols);
    return buf;
}

/* Rows r0..r1-1 of a Q4_K w with panels times vectors 0..n-1 of xq (their group sums
 * xsum, `pieces` a vector): every row of a whole group of K4_PANEL_ROWS from the panels
 * (a group the range cuts made whole, then the range's rows of it kept), the rows past
 * the last whole group by the row dot. The panel kernel has the row dot's bits for any
 * number of vectors, so a row's value depends neither on which of the two made it nor
 * on the other vectors. Up to BLOCKS_MULTI_MAX vectors go through the panels at once,
 * so that a group is read from memory once for all of them. */
static void k4_panel_rows(float *out, const tensor *w, blocks_dot_fn dot, const qbatch *xq,
                          int n, const float *xsum, int pieces, int r0, int r1)
{
    const kernel_table *k = kernels_active();
    const int g = K4_PANEL_ROWS, whole = w->rows / g * g; /* rows in whole groups */
    const int end = r1 < whole ? r1 : whole, groups = xq->stride / QUANT_BLOCK;
#define K4_VECTORS(v) xq->q + (size_t)(v) * xq->stride, (size_t)xq->stride, \
                      xq->scale + (size_t)(v) * groups, (size_t)groups, \
                      xsum + (size_t)(v) * pieces, (size_t)pieces
    for (int v = 0; v < n; v += BLOCKS_MULTI_MAX) {
        const int nv = n - v < BLOCKS_MULTI_MAX ? n - v : BLOCKS_MULTI_MAX;
        float *o = out + (size_t)v * w->rows;
        int r = r0;
        while (r < end) {
            const int group = r / g * g;
            const bool whole_groups = r == group && end - r >= g;
            const int stop = whole_groups ? r + (end - r) / g * g
                                          : group + g < end ? group + g : end;
            float cut[BLOCKS_MULTI_MAX * K4_PANEL_ROWS]; /* a group the range cuts */
            float *dst = whole_groups ? o + r : cut;
            const int last = whole_groups ? stop : group + g;
            if (nv == 1)
                k->matvec_k4p(dst, w, xq->q + (size_t)v * xq->stride,
                              xq->scale + (size_t)v * groups, xsum + (size_t)v * pieces, group,
                              last);
            else
                k->matmul_k4p(dst, whole_groups ? (size_t)w->rows : K4_PANEL_ROWS, w,
                              K4_VECTORS(v), nv, group, last);
            if (!whole_groups)
                for (int u = 0; u < nv; u++)
                    memcpy(o + (size_t)u * w->rows + r, cut + u * K4_PANEL_ROWS + (r - group),
                           sizeof(float) * (size_t)(stop - r));
            r = stop;
        }
    }
#undef K4_VECTORS
    for (int r = end > r0 ? end : r0; r < r1; r++)
        for (int v = 0; v < n; v++)
            out[(size_t)v * w->rows + r] =
                dot(tensor_row_blocks(w, r), xq->q + (size_t)v * xq->stride,
                    xq->scale + (size_t)v * groups, xsum + (size_t)v * pieces, w->cols);
}

/* Rows r0..r1-1 of a BLOCKS w times vectors 0..n-1 of xq, one row dot each: the
 * vectors in tiles, so that a range's rows are read from cache across a tile. */
static void blocks_rows(kernels_scratch *s, float *out, const tensor *w, const qbatch *xq,
                        int n, int r0, int r1)
{
    const kernel_table *k = kernels_active();
    /* a Q4_K tensor with panels, on a table with their kernel: every product with the
       panel kernel's row dots; on any table, rows held in panels gathered back */
    const bool panels = w->panels && kernels_panels_read(w);
    uint8_t *gathered = NULL;
    if (w->panels && !panels &&
        !(gathered = kernels_scratch_get(s, SCRATCH_ROW_GATHERED, w->row_bytes)))
        return; /* out of memory, counted in s */
    blocks_dot_fn dot = panels ? k->k4p_dot : k->dot_blocks[w->btype];
    int groups = xq->stride / QUANT_BLOCK, width = sums_width(w->btype);
    const float *xsum = group_sums(s, xq, n, width);
    int pieces = xq->stride / width;
    blocks_x_fn order = panels ? NULL : k->blocks_x[w->btype];
    const int8_t *xv = order ? blocks_x_order(s, order, xq, n, w->cols) : xq->q;
    if (!xsum || !xv)
        return; /* out of memory, counted in s */
    if (panels) {
        k4_panel_rows(out, w, dot, xq, n, xsum, pieces, r0, r1);
        return;
    }
    blocks_dot_multi_fn multi = n == 1 ? NULL : k->dot_blocks_multi[w->btype];
    for (int vt = 0; vt < n; vt += TILE_VECS) {
        int ve = vt + TILE_VECS < n ? vt + TILE_VECS : n;
        for (int r = r0; r < r1; r++) {
            const uint8_t *row = tensor_row_read(w, r, gathered);
            if (multi) { /* the row's weights unpacked once for several vectors */
                for (int v = vt; v < ve; v += BLOCKS_MULTI_MAX)
                    multi(row, xv + (size_t)v * xq->stride, (size_t)xq->stride,
                          xq->scale + (size_t)v * groups, (size_t)groups, xsum + (size_t)v * pieces,
                          (size_t)pieces, w->cols, ve - v < BLOCKS_MULTI_MAX ? ve - v : BLOCKS_MULTI_MAX,
                          out + (size_t)v * w->rows + r, (size_t)w->rows);
                continue;
            }
            for (int v = vt; v < ve; v++)
                out[(size_t)v * w->rows + r] =
                    dot(row, xv + (size_t)v * xq->stride, xq->scale + (size_t)v * groups,
                        xsum + (size_t)v * pieces, w->cols);
        }
    }
}

/* kernels_matmul_rows in the scratch s. */
static void matmul_rows(kernels_scratch *s, float *out, const tensor *w, const float *x,
                        const qbatch *xq, int n, int r0, int r1)
{
    const kernel_table *k = kernels_active();
    if (w->type == TENSOR_BLOCKS) {
        blocks_rows(s, out, w, xq, n, r0, r1);
    } else if (w->type == TENSOR_F32) {
        k->rows_f32(out, w, x, n, r0, r1);
    } else if (w->type == TENSOR_Q8_0_BLOCKS && w->panels && k->matmul_q8p) {
        k->matmul_q8p(s, out, w, xq, n, r0, r1);
    } else if (w->type == TENSOR_Q8_0_BLOCKS) {
        if (n == 1 && k->matvec_q8b) {
            k->matvec_q8b(s, out, w, xq, r0, r1);
        } else if (n <= BLOCKS_MULTI_MAX && k->matmul_q8b) {
            k->matmul_q8b(s, out, w, xq, n, r0, r1);
        } else {
            rows_arg a = {xq, n};
            blocks_by_rows(s, out, w, r0, r1, rows_q8_kernel, &a);
        }
    } else if (w->group % 32 == 0) {
        k->rows_q8(s, out, w, xq, n, r0, r1);
    } else {
        kernels_scalar.rows_q8(s, out, w, xq, n, r0, r1);
    }
}

bool kernels_matmul_rows(kernels_scratch *s, float *out, const tensor *w, const float *x,
                         const qbatch *xq, int n, int r0, int r1)
{
    kernels_scratch *own = s ? NULL : (s = kernels_scratch_new());
    if (!s)
        return false;
    unsigned failures = kernels_scratch_failures(s);
    matmul_rows(s, out, w, x, xq, n, r0, r1);
    bool ok = kernels_scratch_failures(s) == failures;
    kernels_scratch_free(own);
    return ok;
}

int kernels_row_block_of(const tensor *w)
{
    if (!w->panels || !kernels_panels_read(w))
        return BLOCK_ROWS;
    return w->type == TENSOR_Q8_0_BLOCKS ? PANEL_ROWS : K4_PANEL_ROWS;
}

/* Block b of a wide pack (gemm_pack's wide_x): each vector's pairs of values as int16,
 * 16 vectors' pair p side by side; padding vectors zero. */
static void gemm_pack_wide(gemm_pack *p, const qbatch *xq, int b)
{
    const int stride = p->stride;
    int16_t *dst = (int16_t *)(void *)p->q + (size_t)b * stride * GEMM_VECS;
    for (int v = 0; v < GEMM_VECS; v++) {
        int t = b * GEMM_VECS + v;
        int16_t *d = dst + 2 * v;
        if (t >= p->n) {
            for (int i = 0; i < stride; i += 2, d += 2 * GEMM_VECS)
                d[0] = d[1] = 0;
            continue;
        }
        const int8_t *src = xq->q + (size_t)t * xq->stride;
        for (int i = 0; i < stride; i += 2, d += 2 * GEMM_VECS) {
            d[0] = src[i];
            d[1] = src[i + 1];
        }
    }
}

/* Packs vectors [b0 * GEMM_VECS, b1 * GEMM_VECS) of xq into p (see gemm_pack): the
 * values of whole blocks with the table's gemm_pack16 where it has one, the rest 4
 * bytes at a time (or as int16 pairs); then the scales. */
static void gemm_pack_blocks(gemm_pack *p, const qbatch *xq, int b0, int b1)
{
    const int stride = p->stride, groups = stride / p->group;
    const uint32_t offset = p->signed_x ? 0 : 0x80808080u; /* the bytes of a zero value */
    const kernel_table *table = kernels_active();
    for (int b = b0; b < b1; b++) {
        uint8_t *dst = p->q + (size_t)b * stride * GEMM_VECS;
        float *ds = p->scale + (size_t)b * groups * GEMM_VECS;
        if (p->wide_x) {
            gemm_pack_wide(p, xq, b);
        } else if ((b + 1) * GEMM_VECS <= p->n && table->gemm_pack16) {
            const int8_t *rows[GEMM_VECS];
            for (int v = 0; v < GEMM_VECS; v++)
                rows[v] = xq->q + (size_t)(b * GEMM_VECS + v) * xq->stride;
            table->gemm_pack16(dst, rows, stride, offset);
        } else {
            for (int v = 0; v < GEMM_VECS; v++) {
                int t = b * GEMM_VECS + v;
                const int8_t *src = xq->q + (size_t)t * xq->stride;
                for (int k = 0; k < stride / 4; k++) {
                    uint32_t piece = 0; /* padding: a zero value */
                    if (t < p->n)
                        memcpy(&piece, src + 4 * k, 4);
                    piece ^= offset; /* x + 128 as unsigned bytes, or x */
                    memcpy(dst + ((size_t)k * GEMM_VECS + v) * 4, &piece, 4);
                }
            }
        }
        for (int v = 0; v < GEMM_VECS; v++) {
            int t = b * GEMM_VECS + v;
            for (int g = 0; g < groups; g++)
                ds[g * GEMM_VECS + v] = t < p->n ? xq->scale[(size_t)t * groups + g] : 0.0f;
        }
    }
}

/* *pack in the calling thread's scratch s (its PACK slots), to hold n vectors of
 * stride values (as signed x when signed_x, int16 pairs when wide_x too); false when
 * out of memory. The slots are kept between calls: prefill packs once per matrix. */
static bool gemm_pack_for(kernels_scratch *s, gemm_pack *pack, int n, int stride, int group,
                          bool signed_x, bool wide_x)
{
    int blocks = (n + GEMM_VECS - 1) / GEMM_VECS;
    size_t q_bytes = (size_t)blocks * stride * GEMM_VECS * (wide_x ? sizeof(int16_t) : 1);
    size_t s_bytes = sizeof(float) * (size_t)blocks * (stride / group) * GEMM_VECS;
    *pack = (gemm_pack){.n = n, .blocks = blocks, .stride = stride, .group = group,
                        .signed_x = signed_x, .wide_x = wide_x,
                        .q = kernels_scratch_get(s, SCRATCH_PACK_Q, q_bytes),
                        .scale = kernels_scratch_get(s, SCRATCH_PACK_SCALE, s_bytes)};
    return pack->q && pack->scale;
}

/* Below this many multiply-adds a matmul runs on the calling thread. */
enum {
    PARALLEL_MIN_WORK = 1 << 16,
    ROW_RANGES_PER_THREAD = 16,
    MIN_RANGE_ROWS = 16,
};

/* The rows of one range when nt threads share rows: about ROW_RANGES_PER_THREAD ranges a
 * thread, a multiple of the row block, at least MIN_RANGE_ROWS. */
static int range_rows(int rows, int nt, int block)
{
    int per = rows / (nt * ROW_RANGES_PER_THREAD);
    per = (per + block - 1) / block * block;
    return per < MIN_RANGE_ROWS ? MIN_RANGE_ROWS : per;
}

/* The threads a parallel region of ours may have (its scratches are reserved for). */
static int max_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* This thread's number in the innermost region, and the threads there. */
static void thread_of(int *tid, int *nt)
{
    *tid = 0;
    *nt = 1;
#ifdef _OPENMP
    *tid = omp_get_thread_num();
    *nt = omp_get_num_threads();
#endif
}

/* The workspace a parallel call runs in: ws, or one made for the call (*own, which the
 * caller frees) when ws is NULL or the call comes from inside a parallel region (whose
 * threads would all be thread 0 of their nested regions, in one scratch). NULL when
 * out of memory. */
static kernels_workspace *workspace_for(kernels_workspace *ws, kernels_workspace **own)
{
    *own = NULL;
#ifdef _OPENMP
    if (omp_in_parallel())
        ws = NULL;
#endif
    if (!ws)
        ws = *own = kernels_workspace_new();
    return ws;
}

/* kernels_matmul in ws (not NULL). */
static bool matmul_in(kernels_workspace *ws, float *out, const tensor *w, const float *x,
                      const qbatch *xq, int n)
{
    if (n <= 0 || w->rows <= 0)
        return true;
    if (!kernels_workspace_reserve(ws, max_threads()))
        return false;
    int rows = w->rows;
    long long work = (long long)rows * w->stride * n;
    (void)work; /* unused without OpenMP */
    bool failed = false;

#pragma omp parallel if (work >= PARALLEL_MIN_WORK)
    {
        int tid, nt;
        thread_of(&tid, &nt);
        kernels_scratch *s = kernels_workspace_scratch(ws, tid);
        unsigned failures = kernels_scratch_failures(s);
        /* Row ranges handed out as threads come free, big ones first (guided): a
         * thread slowed by another process on its core takes fewer, and the last
         * ones are small so nobody waits long at the end. Each range is contiguous,
         * a multiple of the row block, and streams front to back. */
        int per = range_rows(rows, nt, kernels_row_block_of(w));
        int ranges = (rows + per - 1) / per;
        /* nowait: each thread then looks at its own scratch, and the region's end is
         * the one barrier (a barrier more would cost a futex call per product) */
#pragma omp for schedule(guided, 1) nowait
        for (int i = 0; i < ranges; i++) {
            int r0 = i * per;
            matmul_rows(s, out, w, x, xq, n, r0, r0 + per < rows ? r0 + per : rows);
        }
        if (kernels_scratch_failures(s) != failures) {
#pragma omp atomic write
            failed = true;
        }
    }
    return !failed;
}

bool kernels_matmul(kernels_workspace *ws, float *out, const tensor *w, const float *x,
                    const qbatch *xq, int n)
{
    kernels_active();
    kernels_workspace *own;
    ws = workspace_for(ws, &own);
    bool ok = ws && matmul_in(ws, out, w, x, xq, n);
    kernels_workspace_free(own);
    return ok;
}

/* out[v * ldo + i] += part[v * ld + i] for v < n, i < nr; vectorized by the compiler
 * when nr is BLOCK_ROWS_CONVERTED (a fixed trip count, restrict pointers). */
static void add_rows(float *restrict out, size_t ldo, const float *restrict part, size_t ld,
                     int n, int nr)
{
    for (int v = 0; v < n; v++) {
        float *restrict o = out + (size_t)v * ldo;
        const float *restrict a = part + (size_t)v * ld;
        if (nr == BLOCK_ROWS_CONVERTED)
            for (int i = 0; i < BLOCK_ROWS_CONVERTED; i++)
                o[i] += a[i];
        else
            for (int i = 0; i < nr; i++)
                o[i] += a[i];
    }
}

/* Rows r..r+nr-1 of the BLOCKS w unpacked by the table k (unpack_row, part `part`, H
 * scales a group) to q, scale and min, a row cols values (groups · H scales, groups
 * mins) after another: a Q4_K group held in panels at once where k can
 * (unpack_k4_group), any other row held in panels first gathered into `gathered`. */
static void unpack_rows(const kernel_table *k, const tensor *w, int r, int nr, int part, int H,
                        int8_t *q, float *scale, float *min, uint8_t *gathered)
{
    const int cols = w->cols, groups = cols / QUANT_BLOCK;
    for (int i = 0; i < nr;) {
        if (k->unpack_k4_group && (r + i) % K4_PANEL_ROWS == 0 && i + K4_PANEL_ROWS <= nr &&
            tensor_row_in_panels(w, r + i)) { /* only Q4_K: one part, one scale a group */
            const uint8_t *group = w->panels + (size_t)((r + i) / K4_PANEL_ROWS) *
                                                   k4_panel_bytes((size_t)cols / 256);
            k->unpack_k4_group(group, cols, q + (size_t)i * cols, (size_t)cols,
                               scale + (size_t)i * groups, min + (size_t)i * groups,
                               (size_t)groups);
            i += K4_PANEL_ROWS;
            continue;
        }
        k->unpack_row(w->btype, tensor_row_read(w, r + i, gathered), cols, part,
                      q + (size_t)i * cols, scale + (size_t)i * groups * H,
                      min + (size_t)i * groups);
        i++;
    }
}

/* Prefill of a BLOCKS w: rows r0..r1-1, a few at a time made exact Q8_0 (the table's
 * unpack_row, or unpack_k4_group for a Q4_K group in panels: unpack_rows) in the
 * scratch's UNPACK slots, multiplied by the packed vectors with the
 * GEMM kernel, which is told the next rows' blocks (tensor.ahead) to prefetch while it
 * works; the mins' part (Σ_g min · xsum: the table's gemm_mins, or rows_f32) and Q6_K's
 * second part are added after (or Q6_K's rows go whole to the table's gemm_q8_halves,
 * the same bits in one pass). xsum: the group sums of p's vectors for the types with
 * mins. Stops when out of memory (counted in s). */
static void blocks_gemm_rows(kernels_scratch *s, float *out, const tensor *w,
                             const gemm_pack *p, const float *xsum, int r0, int r1)
{
    enum { ROWS = BLOCK_ROWS_CONVERTED };
    const int cols = w->cols, groups = cols / QUANT_BLOCK, n = p->n;
    const kernel_table *k = kernels_active();
    size_t values = (size_t)ROWS * cols;
    /* both halves of Q6_K's groups in one pass, where the table can and the pack is the
     * one its products of blocks read (gemm_q8_small's, else gemm_q8's) */
    const bool halves = kernels_unpack_parts(w->btype) == 2 && k->gemm_q8_halves &&
                        (k->gemm_q8_small ? !p->signed_x : p->signed_x == k->gemm_signed);
    const int per_group = halves ? 2 : 1; /* scales a group */
    /* nibbles by a pack of signed bytes: packed so for this table's kernel only */
    const bool nibbles = p->signed_x && !p->wide_x && k->gemm_q8_nibbles &&
                         kernels_unpacks_nibbles(w->btype);
    int8_t *q = kernels_scratch_get(s, SCRATCH_UNPACK_Q, values);
    float *scale = kernels_scratch_get(s, SCRATCH_UNPACK_SCALE,
                                       sizeof(float) * (values / QUANT_BLOCK) * per_group);
    float *min = kernels_scratch_get(s, SCRATCH_UNPACK_MIN,
                                     sizeof(float) * (values / QUANT_BLOCK));
    float *part = kernels_scratch_get(s, SCRATCH_UNPACK_PART, sizeof(float) * (size_t)n * ROWS);
    uint8_t *gathered = w->panels ? kernels_scratch_get(s, SCRATCH_ROW_GATHERED, w->row_bytes)
                                  : NULL;
    if (!q || !scale || !min || !part || (w->panels && !gathered))
        return;
    const int parts = halves ? 1 : kernels_unpack_parts(w->btype);
    const bool mins = has_mins(w->btype);
    for (int r = r0; r < r1; r += ROWS) {
        int nr = r1 - r < ROWS ? r1 - r : ROWS;
        for (int part_i = 0; part_i < parts; part_i++) {
            unpack_rows(k, w, r, nr, halves ? KERNELS_UNPACK_HALVES : part_i, per_group, q,
                        scale, min, gathered);
            /* part 0 straight into out (rows keep w's count: out + r); the others into
             * `part`, then added */
            tensor view = {.type = TENSOR_Q8_0, .rows = part_i ? ROWS : w->rows, .cols = cols,
                           .stride = cols, .group = QUANT_BLOCK, .q = q, .scale = scale};
            if (part_i == parts - 1 && r + ROWS < r1) { /* the next rows' bytes: a Q4_K
                                                           group takes its rows' place */
                view.ahead = (tensor_row_in_panels(w, r + ROWS) ? w->panels : w->blocks) +
                             (size_t)(r + ROWS) * w->row_bytes;
                view.ahead_bytes = (size_t)(r1 - r - ROWS < ROWS ? r1 - r - ROWS : ROWS) *
                                   w->row_bytes;
            }
            /* a pack of unsigned x where the table's gemm_q8 reads signed x: the kernel
             * for small weights (kernels_gemm packs so only for it) */
            if (halves)
                k->gemm_q8_halves(s, out + r, &view, p, 0, nr);
            else if (nibbles)
                k->gemm_q8_nibbles(s, out + r, &view, p, 0, nr);
            else if (p->signed_x == k->gemm_signed)
                k->gemm_q8(s, part_i ? part : out + r, &view, p, 0, nr);
            else
                k->gemm_q8_small(s, part_i ? part : out + r, &view, p, 0, nr);
            if (part_i)
                add_rows(out + r, (size_t)w->rows, part, ROWS, n, nr);
        }
        if (mins && k->gemm_mins) { /* the table's outer product */
            k->gemm_mins(s, out + r, (size_t)w->rows, min, groups, xsum, n, nr);
        } else if (mins) { /* part (n, ROWS) = xsum (n, groups) · minᵀ: the fp32 row kernel */
            tensor m = {.type = TENSOR_F32, .rows = ROWS, .cols = groups, .stride = groups,
                        .f = min};
            k->rows_f32(part, &m, xsum, n, 0, nr);
            add_rows(out + r, (size_t)w->rows, part, ROWS, n, nr);
        }
    }
}

/* Whether w's products go to the GEMM kernel from a pack of x made for w0 (the same
 * stride and group). */
static bool gemm_packs(const kernel_table *k, const tensor *w, const tensor *w0)
{
    return tensor_is_q8(w) && k->gemm_q8 && w->group % 32 == 0 && w->stride == w0->stride &&
           w->group == w0->group;
}

/* Rows r0..r1-1 of w's product with the packed vectors, on the calling thread, in its
 * scratch s. */
static void gemm_range(const kernel_table *k, kernels_scratch *s, float *out, const tensor *w,
                       const gemm_pack *p, const float *xsum, int r0, int r1)
{
    if (w->type == TENSOR_BLOCKS)
        blocks_gemm_rows(s, out, w, p, xsum, r0, r1);
    else if (w->type == TENSOR_Q8_0_BLOCKS && k->gemm_q8b)
        k->gemm_q8b(s, out, w, p, r0, r1);
    else if (w->type == TENSOR_Q8_0_BLOCKS)
        blocks_by_rows(s, out, w, r0, r1, gemm_q8_kernel, p);
    else
        k->gemm_q8(s, out, w, p, r0, r1);
}

/* The products of count matrices (all gemm_packs with w[0]) with the n vectors of xq, in
 * one parallel region: the vectors packed once (in scratch 0 of ws, the calling
 * thread's), then the row ranges of every matrix handed out from one list. False when
 * out of memory. */
static bool gemm_packed(kernels_workspace *ws, const kernel_table *k, int count,
                        float *const *out, const tensor *const *w, const qbatch *xq, int n)
{
    if (!kernels_workspace_reserve(ws, max_threads()))
        return false;
    kernels_scratch *s0 = kernels_workspace_scratch(ws, 0);
    gemm_pack pack, *p = &pack;
    /* signed x as the GEMM kernel reads it, but unsigned for a table's kernel for small
     * weights when every matrix is of ggml blocks (made exact Q8_0 of |w| <= 32), and
     * signed bytes for its kernel for nibbles when every one is of a type made nibbles */
    bool signed_x = k->gemm_signed, wide_x = k->gemm_signed && k->gemm_wide;
    bool all_blocks = true, all_nibbles = k->gemm_q8_nibbles != NULL;
    for (int j = 0; j < count; j++) {
        all_blocks = all_blocks && w[j]->type == TENSOR_BLOCKS;
        all_nibbles = all_nibbles && w[j]->type == TENSOR_BLOCKS &&
                      kernels_unpacks_nibbles(w[j]->btype);
    }
    if (all_nibbles)
        signed_x = true, wide_x = false;
    else if (k->gemm_q8_small && all_blocks)
        signed_x = wide_x = false;
    if (!gemm_pack_for(s0, p, n, w[0]->stride, w[0]->group, signed_x, wide_x))
        return false;
    float *xsum = NULL; /* the group sums (n, groups), for the mins: made beside the pack */
    for (int j = 0; j < count && !xsum; j++)
        if (w[j]->type == TENSOR_BLOCKS && has_mins(w[j]->btype) &&
            !(xsum = group_sums_buffer(s0, xq, n, QUANT_BLOCK)))
            return false;
    bool failed = false;
#pragma omp parallel
    {
        int tid, nt;
        thread_of(&tid, &nt);
        kernels_scratch *s = kernels_workspace_scratch(ws, tid);
        unsigned failures = kernels_scratch_failures(s);
#pragma omp for schedule(static)
        for (int b = 0; b < p->blocks; b++) {
            gemm_pack_blocks(p, xq, b, b + 1);
            if (xsum)
                group_sums_fill(xsum, xq, b * GEMM_VECS,
                                (b + 1) * GEMM_VECS < n ? (b + 1) * GEMM_VECS : n, QUANT_BLOCK);
        }
        /* row ranges as in kernels_matmul, sized from all the matrices' rows together,
         * in whole row blocks of the GEMM kernel when it names one; matrix after matrix
         * in one list. One size for all: guided hands out ranges by count, so ranges of
         * unequal sizes would give one thread the big matrix and another the small ones. */
        int total = 0, first[KERNELS_GEMM_SHARED_MAX + 1];
        for (int j = 0; j < count; j++)
            total += w[j]->rows;
        int per = range_rows(total, nt, BLOCK_ROWS);
        if (k->gemm_rows > 1)
            per = (per + k->gemm_rows - 1) / k->gemm_rows * k->gemm_rows;
        first[0] = 0;
        for (int j = 0; j < count; j++)
            first[j + 1] = first[j] + (w[j]->rows + per - 1) / per;
#pragma omp for schedule(guided, 1) nowait /* as in matmul_in */
        for (int i = 0; i < first[count]; i++) {
            int j = 0;
            while (i >= first[j + 1])
                j++;
            int rows = w[j]->rows, r0 = (i - first[j]) * per;
            int r1 = r0 + per < rows ? r0 + per : rows;
            gemm_range(k, s, out[j], w[j], p, xsum, r0, r1);
        }
        if (kernels_scratch_failures(s) != failures) {
#pragma omp atomic write
            failed = true;
        }
    }
    return !failed;
}

/* w's product by the GEMM kernel where the table and w's type have one, for any n;
 * else kernels_matmul's. In ws (not NULL). */
static bool gemm_any(kernels_workspace *ws, float *out, const tensor *w, const float *x,
                     const qbatch *xq, int n)
{
    const kernel_table *k = kernels_active();
    if (!gemm_packs(k, w, w))
        return matmul_in(ws, out, w, x, xq, n);
    return gemm_packed(ws, k, 1, &out, &w, xq, n);
}

bool kernels_gemm(kernels_workspace *ws, float *out, const tensor *w, const float *x,
                  const qbatch *xq, int n)
{
    kernels_active();
    kernels_workspace *own;
    ws = workspace_for(ws, &own);
    bool ok = ws && (n < KERNELS_GEMM_MIN_VECS ? matmul_in(ws, out, w, x, xq, n)
                                               : gemm_any(ws, out, w, x, xq, n));
    kernels_workspace_free(own);
    return ok;
}

bool kernels_gemm_shared(kernels_workspace *ws, int count, float *const *out,
                         const tensor *const *w, const float *x, const qbatch *xq, int n)
{
    const kernel_table *k = kernels_active();
    kernels_workspace *own;
    ws = workspace_for(ws, &own);
    bool packs = count <= KERNELS_GEMM_SHARED_MAX, ok = ws != NULL;
    for (int j = 0; j < count && packs; j++)
        packs = gemm_packs(k, w[j], w[0]);
    if (ok && packs)
        ok = gemm_packed(ws, k, count, out, w, xq, n);
    else
        for (int j = 0; j < count && ok; j++)
            ok = gemm_any(ws, out[j], w[j], x, xq, n);
    kernels_workspace_free(own);
    return ok;
}
