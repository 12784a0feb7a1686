/* kernels/arm-neon-q8-body.h — a NEON table's Q8_0 kernels written once over its int8
 * dot step, compiled by kernels/arm-neon.c (widening multiplies) and
 * kernels/arm-neon-dotprod.c (sdot): the row walk of the matrix products and the single
 * dot. The includer defines
 *   Q8_FN(name)   the function's name for its table (rows_q8 -> rows_q8_neon)
 *   Q8_DOT        its dot step (neon_dot_step: dot_widening, dot_sdot)
 * and includes this inside its TARGET_BEGIN / TARGET_END region. */

#define Q8_CALL(R, N, out, w, xq, r, v) NEON_Q8_CALL(R, N, out, w, xq, r, v, Q8_DOT)

static void Q8_FN(rows_q8)(kernels_scratch *s, float *out, const tensor *w, const qbatch *xq,
                           int n, int r0, int r1)
{
#define CALL(r, R, v, N) BLOCK_DISPATCH(Q8_CALL, R, N, out, w, xq, r, v)
    WALK_BLOCKS(n, r0, r1, CALL, 0);
#undef CALL
}

static float Q8_FN(dot_q8)(const int8_t *a, const float *as, const int8_t *b, const float *bs, int len,
                           int group)
{
    if (group % 32)
        return kernels_scalar_dot_q8(a, as, b, bs, len, group);
    float out;
    neon_q8_block(1, 1, &out, 1, a, as, b, bs, len, group, Q8_DOT);
    return out;
}

#undef Q8_CALL
