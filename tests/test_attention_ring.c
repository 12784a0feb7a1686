/* test_attention_ring.c — the reused block of attention rows: rows never overlap, the
 * oldest go first, the evicted are reported, given-back space is reused, and a row
 * larger than the ring is refused. Checked against a shadow of what each live row
 * must still hold. */
#include <stdint.h>
#include <string.h>

#include "attention_ring.h"
#include "testutil.h"

enum { MAX_POS = 400 };

typedef struct {
    float *row[MAX_POS];   /* what the ring gave each live position, or NULL */
    size_t bytes[MAX_POS];
    int evicted[MAX_POS * 4];
    int n_evicted;
} shadow;

static void on_evict(void *user, int pos)
{
    shadow *s = user;
    ck_assert_ptr_nonnull(s->row[pos]); /* only live rows are reported */
    s->row[pos] = NULL;
    s->evicted[s->n_evicted++] = pos;
}

static void fill(float *row, size_t bytes, int pos)
{
    for (size_t i = 0; i < bytes / sizeof(float); i++)
        row[i] = (float)pos + (float)(i % 7) / 8.0f;
}

/* Every live row still holds its own pattern (no row overwrote another). */
static void check_live(const shadow *s)
{
    for (int p = 0; p < MAX_POS; p++)
        for (size_t i = 0; s->row[p] && i < s->bytes[p] / sizeof(float); i++)
            if (s->row[p][i] != (float)p + (float)(i % 7) / 8.0f)
                ck_abort_msg("row of %d overwritten at %zu", p, i);
}

static float *take(attention_ring *r, shadow *s, int pos, size_t bytes)
{
    int before = s->n_evicted;
    float *row = attention_ring_take(r, pos, bytes, on_evict, s);
    for (int i = before; i < s->n_evicted; i++) /* the evicted are older than what is kept */
        for (int p = 0; p < MAX_POS; p++)
            if (s->row[p] && p != pos)
                ck_assert_int_lt(s->evicted[i], p);
    if (row) {
        ck_assert_uint_eq((uintptr_t)row % 64, 0);
        s->row[pos] = row;
        s->bytes[pos] = bytes;
        fill(row, bytes, pos);
    }
    check_live(s);
    return row;
}

static void give_back_from(attention_ring *r, shadow *s, int pos)
{
    for (int p = pos; p < MAX_POS; p++)
        if (s->row[p]) {
            attention_ring_give_back(r, p);
            s->row[p] = NULL;
        }
}

/* Rows growing with the position, as attention rows do: (pos + 1) keys of 16 floats. */
static size_t row_bytes(int pos) { return (size_t)(pos + 1) * 16 * sizeof(float); }

START_TEST(test_sequence_keeps_the_newest)
{
    static shadow s;
    memset(&s, 0, sizeof s);
    attention_ring *r = attention_ring_new(256 * 1024, MAX_POS);
    ck_assert_ptr_nonnull(r);
    for (int pos = 0; pos < 300; pos++)
        ck_assert_ptr_nonnull(take(r, &s, pos, row_bytes(pos)));
    ck_assert_int_gt(s.n_evicted, 0);
    for (int i = 0; i < s.n_evicted; i++) /* oldest first */
        ck_assert_int_eq(s.evicted[i], i);
    int kept = attention_ring_rows(r);
    ck_assert_int_eq(kept, 300 - s.n_evicted);
    size_t held = 0;
    for (int p = 300 - kept; p < 300; p++) {
        ck_assert_ptr_nonnull(s.row[p]);
        held += row_bytes(p);
    }
    ck_assert_uint_le(held, attention_ring_size(r));
    ck_assert_uint_gt(held + row_bytes(300 - kept - 1), attention_ring_size(r) / 2);
    attention_ring_free(r);
}
END_TEST

START_TEST(test_give_back_reuses_the_space)
{
    static shadow s;
    memset(&s, 0, sizeof s);
    attention_ring *r = attention_ring_new(64 * 1024, MAX_POS);
    for (int pos = 0; pos < 20; pos++)
        take(r, &s, pos, row_bytes(pos));
    float *at15 = s.row[15];
    give_back_from(r, &s, 15); /* a rewind to 15 */
    ck_assert_int_eq(attention_ring_rows(r), 15);
    ck_assert_ptr_eq(take(r, &s, 15, row_bytes(15)), at15);
    give_back_from(r, &s, 0);
    ck_assert_int_eq(attention_ring_rows(r), 0);
    ck_assert_int_eq(s.n_evicted, 0);
    attention_ring_free(r);
}
END_TEST

START_TEST(test_too_large_is_refused)
{
    static shadow s;
    memset(&s, 0, sizeof s);
    attention_ring *r = attention_ring_new(4096, MAX_POS);
    ck_assert_ptr_nonnull(take(r, &s, 0, 1000));
    ck_assert_ptr_null(take(r, &s, 1, 5000));
    ck_assert_int_eq(s.n_evicted, 0);       /* nothing was dropped for it */
    ck_assert_ptr_nonnull(s.row[0]);
    ck_assert_ptr_nonnull(take(r, &s, 2, 4096)); /* the whole ring: everything else goes */
    ck_assert_int_eq(attention_ring_rows(r), 1);
    attention_ring_free(r);
}
END_TEST

START_TEST(test_max_rows)
{
    static shadow s;
    memset(&s, 0, sizeof s);
    attention_ring *r = attention_ring_new(1 << 20, 8);
    for (int pos = 0; pos < 20; pos++)
        take(r, &s, pos, 64);
    ck_assert_int_eq(attention_ring_rows(r), 8);
    for (int p = 12; p < 20; p++)
        ck_assert_ptr_nonnull(s.row[p]);
    attention_ring_free(r);
}
END_TEST

/* Random runs of steps and rewinds, as a chat with regenerations makes them. */
START_TEST(test_random_steps_and_rewinds)
{
    static shadow s;
    for (unsigned seed = 1; seed <= 40; seed++) {
        memset(&s, 0, sizeof s);
        unsigned x = seed * 2654435761u;
        attention_ring *r = attention_ring_new(8192 + (seed % 7) * 5000, MAX_POS);
        ck_assert_ptr_nonnull(r);
        int n = 0;
        for (int op = 0; op < 600; op++) {
            x = x * 1103515245u + 12345u;
            unsigned roll = (x >> 16) % 100;
            if (roll < 8 && n > 0) {
                n = (int)((x >> 8) % (unsigned)n);
                give_back_from(r, &s, n);
            } else if (n < MAX_POS) {
                size_t bytes = (size_t)(n + 1) * (4 + (seed % 3) * 4);
                float *row = take(r, &s, n, bytes);
                ck_assert(row != NULL || bytes > attention_ring_size(r));
                n++;
            }
            int runs = 0; /* the live positions are one run: the newest that fit */
            for (int p = 0; p < n; p++)
                runs += s.row[p] && (p == 0 || !s.row[p - 1]);
            ck_assert_msg(runs <= 1, "seed %u: %d runs of kept rows", seed, runs);
        }
        attention_ring_free(r);
    }
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("attention_ring");
    TCase *core = tcase_create("core");
    tcase_add_test(core, test_sequence_keeps_the_newest);
    tcase_add_test(core, test_give_back_reuses_the_space);
    tcase_add_test(core, test_too_large_is_refused);
    tcase_add_test(core, test_max_rows);
    tcase_add_test(core, test_random_steps_and_rewinds);
    suite_add_tcase(s, core);
    return s;
}

TEST_MAIN(make_suite)
