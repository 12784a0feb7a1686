/* test_tui_format.c — the TUI's terminal-free parts: piece formatting, fitting and
 * wrapping text, probabilities, bars, shade buckets, heatmap windows and the layout
 * for a range of terminal sizes. Linked without curses. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "textfmt.h"
#include "tui/compare_strip.h"
#include "tui/format.h"
#include "tui/layout.h"

/* ---- pieces ---- */

START_TEST(test_piece_visible_space)
{
    char buf[64];
    tuifmt_piece(" the", false, buf, sizeof buf);
    ck_assert_str_eq(buf, "\xe2\x90\xa3the"); /* "␣the" */
}
END_TEST

START_TEST(test_piece_control_token)
{
    char buf[64];
    tuifmt_piece("\n<s>\n", true, buf, sizeof buf);
    ck_assert_str_eq(buf, "<s>");
    tuifmt_piece("\n</s>\n", true, buf, sizeof buf);
    ck_assert_str_eq(buf, "</s>");
}
END_TEST

START_TEST(test_piece_escapes_controls)
{
    char buf[64];
    tuifmt_piece("a\nb\x1b", false, buf, sizeof buf);
    ck_assert_ptr_null(strchr(buf, '\n'));
    ck_assert_ptr_null(strchr(buf, '\x1b'));
    ck_assert_ptr_nonnull(strstr(buf, "\\n"));
}
END_TEST

START_TEST(test_piece_tiny_buffer)
{
    char buf[4];
    tuifmt_piece(" hello world", false, buf, sizeof buf);
    ck_assert_uint_lt(strlen(buf), sizeof buf);
}
END_TEST

/* ---- fitting and wrapping ---- */

START_TEST(test_fit_short_and_cut)
{
    char buf[64];
    ck_assert_int_eq(tuifmt_fit("hello", 10, true, buf, sizeof buf), 5);
    ck_assert_str_eq(buf, "hello");
    ck_assert_int_eq(tuifmt_fit("hello world", 6, true, buf, sizeof buf), 6);
    ck_assert_str_eq(buf, "hello\xe2\x80\xa6");
    ck_assert_int_eq(tuifmt_fit("hello world", 6, false, buf, sizeof buf), 6);
    ck_assert_str_eq(buf, "hello~");
    ck_assert_int_eq(tuifmt_fit("hello", 0, true, buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "");
    ck_assert_int_eq(tuifmt_fit("hello", 1, true, buf, sizeof buf), 1);
    ck_assert_str_eq(buf, "\xe2\x80\xa6");
}
END_TEST

START_TEST(test_fit_utf8_boundaries)
{
    char buf[64];
    /* "ééé" is 3 columns, 6 bytes: cutting to 2 keeps one é and an ellipsis */
    ck_assert_int_eq(tuifmt_fit("\xc3\xa9\xc3\xa9\xc3\xa9", 2, true, buf, sizeof buf), 2);
    ck_assert_str_eq(buf, "\xc3\xa9\xe2\x80\xa6");
    /* a wide CJK character (2 columns) never overflows a 3-column fit */
    int cols = tuifmt_fit("\xe4\xb8\xad\xe4\xb8\xad", 3, true, buf, sizeof buf);
    ck_assert_int_le(cols, 3);
    ck_assert_int_eq(cols, 3); /* 中 + … */
}
END_TEST

START_TEST(test_wrap_words)
{
    const char *s = "the quick brown fox";
    size_t next;
    size_t n = tuifmt_wrap(s, strlen(s), 10, &next);
    ck_assert_uint_eq(n, 9); /* "the quick" */
    ck_assert_uint_eq(next, 10);
    n = tuifmt_wrap(s + next, strlen(s) - next, 10, &next);
    ck_assert_uint_eq(n, 9); /* "brown fox" */
    ck_assert_int_eq(tuifmt_wrap_count(s, strlen(s), 10), 2);
    ck_assert_int_eq(tuifmt_wrap_count(s, strlen(s), 100), 1);
}
END_TEST

START_TEST(test_wrap_long_word_and_newline)
{
    const char *s = "abcdefghij";
    size_t next;
    ck_assert_uint_eq(tuifmt_wrap(s, 10, 4, &next), 4);
    ck_assert_uint_eq(next, 4);
    ck_assert_int_eq(tuifmt_wrap_count(s, 10, 4), 3);
    const char *t = "ab\ncd";
    ck_assert_uint_eq(tuifmt_wrap(t, 5, 80, &next), 2);
    ck_assert_uint_eq(next, 3);
    ck_assert_int_eq(tuifmt_wrap_count(t, 5, 80), 2);
    ck_assert_int_eq(tuifmt_wrap_count("", 0, 80), 1);
    ck_assert_int_eq(tuifmt_wrap_count("x", 1, 1), 1);
}
END_TEST

START_TEST(test_wrap_width_one_never_stalls)
{
    const char *s = "\xe4\xb8\xad\xe4\xb8\xad a"; /* wide chars wider than the line */
    size_t len = strlen(s), off = 0;
    int lines = 0;
    while (off < len && lines < 100) {
        size_t next;
        tuifmt_wrap(s + off, len - off, 1, &next);
        ck_assert_uint_gt(next, 0);
        off += next;
        lines++;
    }
    ck_assert_uint_eq(off, len);
}
END_TEST

/* ---- numbers, bars, shades ---- */

START_TEST(test_prob_format)
{
    char b[16];
    tuifmt_prob(1.0f, b, sizeof b);
    ck_assert_str_eq(b, "100%");
    tuifmt_prob(0.456f, b, sizeof b);
    ck_assert_str_eq(b, "45.6%");
    tuifmt_prob(0.0012f, b, sizeof b);
    ck_assert_str_eq(b, "0.12%");
    tuifmt_prob(0.0000001f, b, sizeof b);
    ck_assert_str_eq(b, "<0.01%");
    tuifmt_prob(0.0f, b, sizeof b);
    ck_assert_str_eq(b, "0%");
    float ps[] = {0.99f, 0.1f, 0.05f, 0.5f, 1e-5f};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        tuifmt_prob(ps[i], b, sizeof b);
        ck_assert_uint_le(strlen(b), 6);
    }
}
END_TEST

START_TEST(test_bar_widths)
{
    ck_assert_int_eq(tuifmt_bar_eighths(1.0f, 10), 80);
    ck_assert_int_eq(tuifmt_bar_eighths(0.5f, 10), 40);
    ck_assert_int_eq(tuifmt_bar_eighths(0.0f, 10), 0);
    ck_assert_int_eq(tuifmt_bar_eighths(2.0f, 10), 80);
    ck_assert_int_eq(tuifmt_bar_eighths(-1.0f, 10), 0);
    ck_assert_int_eq(tuifmt_bar_eighths(0.5f, 0), 0);
    char b[128];
    ck_assert_int_eq(tuifmt_bar(0.5f, 10, false, b, sizeof b), 5);
    ck_assert_str_eq(b, "#####");
    ck_assert_int_eq(tuifmt_bar(1.0f, 4, true, b, sizeof b), 4);
    ck_assert_str_eq(b, "\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88");
    /* 0.55 of 10 columns = 44 eighths: 5 full blocks and a half block */
    ck_assert_int_eq(tuifmt_bar(0.55f, 10, true, b, sizeof b), 6);
    ck_assert_str_eq(b + 5 * 3, "\xe2\x96\x8c");
    ck_assert_int_eq(tuifmt_bar(0.0f, 10, true, b, sizeof b), 0);
    ck_assert_str_eq(b, "");
}
END_TEST

START_TEST(test_shade_linear)
{
    ck_assert_int_eq(tuifmt_shade(1.0f, 1.0f, 5, false), 4);
    ck_assert_int_eq(tuifmt_shade(0.5f, 1.0f, 5, false), 2);
    ck_assert_int_eq(tuifmt_shade(0.0f, 1.0f, 5, false), 0);
    ck_assert_int_eq(tuifmt_shade(0.01f, 1.0f, 5, false), 0);
    ck_assert_int_eq(tuifmt_shade(0.2f, 0.2f, 10, false), 9); /* relative to the row's max */
    ck_assert_int_eq(tuifmt_shade(0.3f, 0.0f, 5, false), 0);
    ck_assert_int_eq(tuifmt_shade(0.5f, 1.0f, 1, false), 0);
    /* monotonic */
    int prev = 0;
    for (int i = 0; i <= 100; i++) {
        int b = tuifmt_shade((float)i / 100.0f, 1.0f, 10, false);
        ck_assert_int_ge(b, prev);
        ck_assert_int_le(b, 9);
        prev = b;
    }
}
END_TEST

/* Signed values as precise as fit, then the sign alone; attribution parts named as the
 * view lists them. */
START_TEST(test_signed_and_parts)
{
    char b[32];
    ck_assert_int_eq(tuifmt_signed(2.314f, 6, b, sizeof b), 5);
    ck_assert_str_eq(b, "+2.31");
    ck_assert_int_eq(tuifmt_signed(2.314f, 4, b, sizeof b), 4);
    ck_assert_str_eq(b, "+2.3");
    ck_assert_int_eq(tuifmt_signed(-12.5f, 4, b, sizeof b), 3);
    ck_assert_str_eq(b, "-12");
    ck_assert_int_eq(tuifmt_signed(-12.5f, 2, b, sizeof b), 1);
    ck_assert_str_eq(b, "-");
    ck_assert_int_eq(tuifmt_signed(0.0f, 1, b, sizeof b), 1);
    ck_assert_str_eq(b, "0");
    ck_assert_int_eq(tuifmt_signed(1.0f, 0, b, sizeof b), 0);
    ck_assert_str_eq(b, "");
    ck_assert_int_eq(tuifmt_signed(1234.5f, 8, b, 4), 1); /* a small buffer: the sign */
    ck_assert_str_eq(b, "+");
    attribution_part p = {ATTRIBUTION_HEAD, 2, 6, 2.314f};
    tuifmt_attribution_part(&p, b, sizeof b);
    ck_assert_str_eq(b, "L3 H7 +2.31");
    p = (attribution_part){ATTRIBUTION_MLP, 3, -1, -1.8f};
    tuifmt_attribution_part(&p, b, sizeof b);
    ck_assert_str_eq(b, "L4 MLP -1.80");
    p = (attribution_part){ATTRIBUTION_EMBEDDING, -1, -1, 0.52f};
    tuifmt_attribution_part(&p, b, sizeof b);
    ck_assert_str_eq(b, "embedding +0.52");
    p = (attribution_part){ATTRIBUTION_VECTORS, -1, -1, 0.4f};
    tuifmt_attribution_part(&p, b, sizeof b);
    ck_assert_str_eq(b, "vectors +0.40");
    p = (attribution_part){ATTRIBUTION_EXPERT, 0, 4, 0.59f}; /* from 1, as the heads */
    tuifmt_attribution_part(&p, b, sizeof b);
    ck_assert_str_eq(b, "L1 E5 +0.59");
}
END_TEST

/* Issue 31: in the room a grid cell has, numbers keep their digits: the 0 before the
 * point goes before a decimal does ("+.12", not "+0"; ".93", not "0.…"). */
START_TEST(test_fixed_keeps_digits)
{
    char b[32];
    ck_assert_int_eq(tuifmt_signed(0.123f, 4, b, sizeof b), 4);
    ck_assert_str_eq(b, "+.12");
    ck_assert_int_eq(tuifmt_signed(-0.061f, 3, b, sizeof b), 3);
    ck_assert_str_eq(b, "-.1");
    ck_assert_int_eq(tuifmt_signed(0.123f, 5, b, sizeof b), 5);
    ck_assert_str_eq(b, "+0.12"); /* with room, the 0 stays */
    ck_assert_int_eq(tuifmt_fixed(1.551f, 3, 2, false, b, sizeof b), 3);
    ck_assert_str_eq(b, "1.6");
    ck_assert_int_eq(tuifmt_fixed(1.551f, 4, 2, false, b, sizeof b), 4);
    ck_assert_str_eq(b, "1.55");
    ck_assert_int_eq(tuifmt_fixed(0.931f, 3, 2, false, b, sizeof b), 3);
    ck_assert_str_eq(b, ".93");
    ck_assert_int_eq(tuifmt_fixed(0.0f, 3, 2, false, b, sizeof b), 3);
    ck_assert_str_eq(b, ".00");
    ck_assert_int_eq(tuifmt_fixed(123.0f, 2, 2, false, b, sizeof b), 1);
    ck_assert_str_eq(b, "*"); /* too large for the room */
}
END_TEST

/* The fullest wording that fits; the last one when none does. */
START_TEST(test_pick_wording)
{
    const char *t[] = {"model gave it 99.9% (rank 1) before the sampler", "model gave it 99.9% (rank 1)",
                       "model: 99.9%, rank 1"};
    ck_assert_int_eq(tuifmt_pick(t, 3, 60), 0);
    ck_assert_int_eq(tuifmt_pick(t, 3, (int)strlen(t[0])), 0);
    ck_assert_int_eq(tuifmt_pick(t, 3, (int)strlen(t[0]) - 1), 1);
    ck_assert_int_eq(tuifmt_pick(t, 3, 28), 1);
    ck_assert_int_eq(tuifmt_pick(t, 3, 27), 2);
    ck_assert_int_eq(tuifmt_pick(t, 3, 5), 2);
    const char *u[] = {"pos 3 \xe2\x86\x92 x"}; /* widths, not bytes */
    ck_assert_int_eq(tuifmt_pick(u, 1, 9), 0);
}
END_TEST

/* Which rows or columns a grid shows: all when they fit; else the window from the
 * first, or ending at the focus, with markers on the hidden sides. */
START_TEST(test_span)
{
    tuifmt_span s;
    tuifmt_span_compute(5, 0, 10, &s);
    ck_assert(s.first == 0 && s.count == 5 && !s.before && !s.after);
    tuifmt_span_compute(5, 0, 3, &s);
    ck_assert(s.first == 0 && s.count == 3 && !s.before && s.after);
    tuifmt_span_compute(5, 4, 3, &s);
    ck_assert(s.first == 2 && s.count == 3 && s.before && !s.after);
    tuifmt_span_compute(32, 10, 4, &s);
    ck_assert(s.first == 7 && s.count == 4 && s.before && s.after);
    tuifmt_span_compute(5, 2, 0, &s);
    ck_assert_int_eq(s.count, 0);
}
END_TEST

/* The layers x heads grid and the attribution view at the widths of 80, 100 and 120
 * columns: every head with its digits where they fit (a narrower label first), else
 * fewer heads around the cursor and a marker. */
START_TEST(test_grid_columns)
{
    tuifmt_grid g;
    tuifmt_grid_want heads = {.label_min = 3, .label_pref = 4, .cell_min = 4, .cell_max = 6};
    tuifmt_grid_columns(&heads, 52, 8, 0, &g); /* 120 columns: as before */
    ck_assert(g.label_w == 4 && g.cell_w == 6 && g.cols.count == 8);
    tuifmt_grid_columns(&heads, 43, 8, 0, &g); /* 100: "1.55" in a narrower label */
    ck_assert(g.label_w == 3 && g.cell_w == 5 && g.cols.count == 8 && !g.cols.after);
    tuifmt_grid_columns(&heads, 38, 8, 0, &g); /* 80: "1.6" */
    ck_assert(g.cell_w == 4 && g.cols.count == 8);
    tuifmt_grid_columns(&heads, 30, 8, 7, &g); /* too narrow: the heads around the cursor */
    ck_assert(g.label_w == 3 && g.cell_w == 4 && g.cols.count == 6);
    ck_assert(g.cols.first == 2 && g.cols.before && !g.cols.after);
    tuifmt_grid_want attr = {.label_min = 4, .label_pref = 4, .cell_min = 5, .cell_max = 7, .reserve = 7};
    tuifmt_grid_columns(&attr, 43, 8, 0, &g); /* 100: six heads of "+.12", the MLP column */
    ck_assert(g.cell_w == 5 && g.cols.count == 6 && !g.cols.before && g.cols.after);
    ck_assert_int_le(g.label_w + g.cols.count * g.cell_w + attr.reserve, 43);
    tuifmt_grid_columns(&attr, 52, 8, 0, &g); /* 120: all eight */
    ck_assert(g.cell_w == 5 && g.cols.count == 8 && !g.cols.after);
}
END_TEST

START_TEST(test_shade_log)
{
    ck_assert_int_eq(tuifmt_shade(1.0f, 1.0f, 4, true), 3);
    ck_assert_int_eq(tuifmt_shade(0.1f, 1.0f, 4, true), 2);
    ck_assert_int_eq(tuifmt_shade(0.01f, 1.0f, 4, true), 1);
    ck_assert_int_eq(tuifmt_shade(0.0001f, 1.0f, 4, true), 0);
    /* log lifts small weights that linear leaves at 0 */
    ck_assert_int_eq(tuifmt_shade(0.02f, 1.0f, 10, false), 0);
    ck_assert_int_gt(tuifmt_shade(0.02f, 1.0f, 10, true), 0);
}
END_TEST

START_TEST(test_counts_and_rates)
{
    char b[32];
    textfmt_count(260000, b, sizeof b);
    ck_assert_str_eq(b, "260K");
    textfmt_count(15200000, b, sizeof b);
    ck_assert_str_eq(b, "15.2M");
    textfmt_count(6740000000LL, b, sizeof b);
    ck_assert_str_eq(b, "6.74B");
    textfmt_count(999, b, sizeof b);
    ck_assert_str_eq(b, "999");
    tuifmt_rate(500, 1000, b, sizeof b);
    ck_assert_str_eq(b, "500");
    tuifmt_rate(5, 1000, b, sizeof b);
    ck_assert_str_eq(b, "5.0");
    tuifmt_rate(0, 0, b, sizeof b);
    ck_assert_str_eq(b, "-");
}
END_TEST

/* ---- the input line's horizontal scroll ---- */

/* The characters of s[from..len) that a view of avail columns shows when `skip`
 * columns from `from` stay left of it: their offsets and columns in the view.
 * Returns how many. */
static int line_view(const char *s, int len, int from, int skip, int avail, int *at, int *col_of)
{
    int n = 0, col = 0;
    for (int i = from; i < len;) {
        int b, cw = tuifmt_line_char_width(s + i, (size_t)(len - i), &b, NULL);
        if (col >= skip && col + cw - skip <= avail) {
            at[n] = i;
            col_of[n++] = col - skip;
        }
        col += cw;
        i += b;
    }
    return n;
}

START_TEST(test_line_scroll_matches_a_whole_scan)
{
    /* ASCII, two-byte, wide, four-byte wide, combining (zero columns), tab, newline,
     * invalid bytes, a stray continuation byte, a cut lead, an overlong form, runs of
     * continuation bytes */
    static const char *parts[] = {"a", " ", "\xc3\xa9", "\xe4\xb8\xad", "\xf0\x9f\x98\x80",
                                  "\xcc\x81", "\t", "\n", "\xff", "\x80", "\xe2\x82",
                                  "\xc0\xaf", "\x80\x80\x80\x80\x80"};
    unsigned rng = 12345;
    static char s[1024];
    static int at_a[1024], col_a[1024], at_b[1024], col_b[1024], bounds[1025];
    for (int round = 0; round < 2000; round++) {
        int len = 0;
        rng = rng * 1103515245u + 12345u;
        int pieces = (int)((rng >> 16) % 120);
        for (int k = 0; k < pieces; k++) {
            rng = rng * 1103515245u + 12345u;
            unsigned pick = (rng >> 16) % (sizeof parts / sizeof parts[0]);
            if (round % 2 && pick % 4) /* mostly combining marks: the scroll backs off */
                pick = pick % 2 ? 5 : 4;
            const char *p = parts[pick];
            memcpy(s + len, p, strlen(p));
            len += (int)strlen(p);
        }
        /* the character boundaries of a scan from the start, the end included */
        int nb = 0;
        for (int i = 0; i < len;) {
            int b;
            tuifmt_line_char_width(s + i, (size_t)(len - i), &b, NULL);
            bounds[nb++] = i;
            i += b;
        }
        bounds[nb++] = len;
        rng = rng * 1103515245u + 12345u;
        int point = bounds[(rng >> 16) % (unsigned)nb];
        rng = rng * 1103515245u + 12345u;
        int avail = 1 + (int)((rng >> 16) % 40);

        int cur = 0; /* the whole scan: the cursor's column, then the view's start */
        for (int i = 0; i < point;) {
            int b;
            cur += tuifmt_line_char_width(s + i, (size_t)(len - i), &b, NULL);
            i += b;
        }
        int n_a = line_view(s, len, 0, cur >= avail ? cur - avail + 1 : 0, avail, at_a, col_a);

        int skip = -1;
        size_t first = tuifmt_line_scroll(s, (size_t)len, (size_t)point, avail, &skip);
        ck_assert_int_ge(skip, 0);
        ck_assert_int_le((int)first, point);
        int n_b = line_view(s, len, (int)first, skip, avail, at_b, col_b);
        ck_assert_msg(n_a == n_b, "round %d: %d characters shown, a whole scan shows %d",
                      round, n_b, n_a);
        for (int k = 0; k < n_a; k++) {
            ck_assert_int_eq(at_a[k], at_b[k]);
            ck_assert_int_eq(col_a[k], col_b[k]);
        }
    }
}
END_TEST

START_TEST(test_line_scroll_reads_the_end_of_a_long_line)
{
    size_t len = 1 << 20;
    char *s = malloc(len);
    ck_assert_ptr_nonnull(s);
    memset(s, 'a', len);
    int skip;
    size_t first = tuifmt_line_scroll(s, len, len, 70, &skip);
    ck_assert_uint_ge(first, len - 4 * 70 - 4); /* not a scan from the start */
    ck_assert_int_eq((int)(len - first) - skip, 69); /* the cursor in the last column */
    first = tuifmt_line_scroll(s, len, 10, 70, &skip);
    ck_assert_uint_eq(first, 0);
    ck_assert_int_eq(skip, 0);
    free(s);
}
END_TEST

/* ---- windows ---- */

START_TEST(test_window_start)
{
    ck_assert_int_eq(tuifmt_window_start(100, 99, 10), 90);  /* follows the newest */
    ck_assert_int_eq(tuifmt_window_start(100, 50, 10), 41);  /* focus at the bottom */
    ck_assert_int_eq(tuifmt_window_start(100, 95, 10), 90);  /* newest still fits */
    ck_assert_int_eq(tuifmt_window_start(5, 2, 10), 0);
    ck_assert_int_eq(tuifmt_window_start(0, 0, 10), 0);
    ck_assert_int_eq(tuifmt_window_start(10, 3, 0), 0);
}
END_TEST

START_TEST(test_heat_window_follows_newest)
{
    tuifmt_heat_window w;
    tuifmt_heat_window_compute(200, -1, 20, 50, &w);
    ck_assert_int_eq(w.n_rows, 20);
    ck_assert_int_eq(w.row0, 180);
    ck_assert_int_eq(w.n_cols, 50);
    ck_assert_int_eq(w.col0, 150);
    ck_assert_int_eq(w.row0 + w.n_rows - 1, 199);
    ck_assert_int_eq(w.col0 + w.n_cols - 1, 199);
}
END_TEST

START_TEST(test_heat_window_selected_and_small)
{
    tuifmt_heat_window w;
    tuifmt_heat_window_compute(200, 30, 20, 50, &w);
    ck_assert_int_eq(w.row0 + w.n_rows - 1, 30); /* the selected query is the last row */
    ck_assert_int_eq(w.row0, 11);
    ck_assert_int_eq(w.col0, 0);                 /* keys 0..30 all fit */
    ck_assert_int_eq(w.n_cols, 31);
    tuifmt_heat_window_compute(3, -1, 20, 50, &w);
    ck_assert_int_eq(w.row0, 0);
    ck_assert_int_eq(w.n_rows, 3);
    ck_assert_int_eq(w.n_cols, 3);
    tuifmt_heat_window_compute(0, -1, 20, 50, &w);
    ck_assert_int_eq(w.n_rows, 0);
    ck_assert_int_eq(w.n_cols, 0);
    tuifmt_heat_window_compute(50, 10, 0, -3, &w);
    ck_assert_int_eq(w.n_rows, 0);
    ck_assert_int_eq(w.n_cols, 0);
    tuifmt_heat_window_compute(50, 500, 5, 5, &w); /* a stale selection clamps to the newest */
    ck_assert_int_eq(w.row0 + w.n_rows - 1, 49);
}
END_TEST

/* ---- layout ---- */

static void check_rect_inside(const tui_rect *r, int cols, int rows, const char *what)
{
    if (!r->visible) {
        ck_assert_msg(r->w == 0 && r->h == 0, "%s folded but sized", what);
        return;
    }
    ck_assert_msg(r->x >= 0 && r->y >= 0 && r->w > 0 && r->h > 0, "%s has a bad size", what);
    ck_assert_msg(r->x + r->w <= cols && r->y + r->h <= rows, "%s leaves the %dx%d screen", what, cols, rows);
}

static bool overlap(const tui_rect *a, const tui_rect *b)
{
    if (!a->visible || !b->visible)
        return false;
    return a->x < b->x + b->w && b->x < a->x + a->w && a->y < b->y + b->h && b->y < a->y + a->h;
}

static void check_layout(int cols, int rows, tui_layout *l)
{
    layout_compute(cols, rows, l);
    const tui_rect *rs[] = {&l->conv, &l->tokens, &l->attn, &l->status, &l->input};
    const char *names[] = {"Conversation", "Tokens", "Attention", "status", "input"};
    for (int i = 0; i < 5; i++) {
        check_rect_inside(rs[i], cols, rows, names[i]);
        if (i < 3 && rs[i]->visible)
            ck_assert_msg((int)strlen(names[i]) + 4 <= rs[i]->w, "%s title does not fit at %dx%d",
                          names[i], cols, rows);
        for (int j = 0; j < i; j++)
            ck_assert_msg(!overlap(rs[i], rs[j]), "%s overlaps %s at %dx%d", names[i], names[j], cols, rows);
    }
}

START_TEST(test_layout_80x24_all_panes)
{
    tui_layout l;
    check_layout(80, 24, &l);
    ck_assert(l.conv.visible && l.tokens.visible && l.attn.visible);
    ck_assert(l.status.visible && l.input.visible);
    ck_assert_int_eq(l.input.y, 23);
    ck_assert_int_eq(l.status.y, 22);
    ck_assert_int_ge(l.tokens.h, 10); /* room for a useful top-k */
    ck_assert_int_ge(l.attn.w - 2, 30);
}
END_TEST

START_TEST(test_layout_wide_sizes)
{
    int sizes[][2] = {{120, 40}, {200, 60}, {100, 24}};
    for (int i = 0; i < 3; i++) {
        tui_layout l;
        check_layout(sizes[i][0], sizes[i][1], &l);
        ck_assert_int_eq(l.kind, LAYOUT_WIDE);
        ck_assert(l.conv.visible && l.tokens.visible && l.attn.visible);
        ck_assert_int_gt(l.conv.w, l.tokens.w); /* the conversation is the large pane */
        ck_assert_int_eq(l.tokens.x, l.attn.x);
        ck_assert_int_eq(l.conv.w + l.tokens.w, sizes[i][0]);
        ck_assert_int_eq(l.tokens.h + l.attn.h, sizes[i][1] - 2);
    }
    tui_layout l;
    layout_compute(120, 40, &l);
    ck_assert_int_ge(l.tokens.h - 2, 17); /* 10 candidates with their header and sampler lines */
}
END_TEST

START_TEST(test_layout_folds_small)
{
    tui_layout l;
    check_layout(40, 10, &l);
    ck_assert(l.conv.visible);
    ck_assert(!l.attn.visible);
    check_layout(40, 24, &l);
    ck_assert(l.conv.visible && l.tokens.visible && !l.attn.visible);
    check_layout(20, 5, &l);
    ck_assert(l.conv.visible && !l.tokens.visible && !l.attn.visible);
    ck_assert(l.input.visible && l.status.visible);
    check_layout(1, 1, &l);
    ck_assert(!l.conv.visible && !l.tokens.visible && !l.attn.visible && !l.status.visible);
    ck_assert(l.input.visible);
    ck_assert_int_eq(l.input.w, 1);
    check_layout(0, 0, &l);
    ck_assert(!l.input.visible);
    check_layout(-5, 3, &l);
    ck_assert(!l.input.visible);
}
END_TEST

START_TEST(test_layout_every_size)
{
    for (int rows = 1; rows <= 70; rows++)
        for (int cols = 1; cols <= 220; cols += 3) {
            tui_layout l;
            check_layout(cols, rows, &l);
            ck_assert(l.input.visible);
        }
}
END_TEST

/* The strip's cells: below 1e-5 nats the lowest, one step a decade (and half), 0.1
 * and more the highest; NaN (no number) the highest too. */
START_TEST(test_compare_strip_levels)
{
    ck_assert_int_eq(compare_strip_level(0.0), 0);
    ck_assert_int_eq(compare_strip_level(9.9e-6), 0);
    ck_assert_int_eq(compare_strip_level(1e-5), 1);
    ck_assert_int_eq(compare_strip_level(5e-4), 2);
    ck_assert_int_eq(compare_strip_level(2e-3), 3);
    ck_assert_int_eq(compare_strip_level(5e-3), 4);
    ck_assert_int_eq(compare_strip_level(2e-2), 5);
    ck_assert_int_eq(compare_strip_level(5e-2), 6);
    ck_assert_int_eq(compare_strip_level(0.1), 7);
    ck_assert_int_eq(compare_strip_level(3.0), 7);
    ck_assert_int_eq(compare_strip_level(NAN), 7);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("tui_format");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_piece_visible_space);
    tcase_add_test(tc, test_piece_control_token);
    tcase_add_test(tc, test_piece_escapes_controls);
    tcase_add_test(tc, test_fit_short_and_cut);
    tcase_add_test(tc, test_fit_utf8_boundaries);
    tcase_add_test(tc, test_wrap_words);
    tcase_add_test(tc, test_wrap_long_word_and_newline);
    tcase_add_test(tc, test_prob_format);
    tcase_add_test(tc, test_bar_widths);
    tcase_add_test(tc, test_shade_linear);
    tcase_add_test(tc, test_shade_log);
    tcase_add_test(tc, test_signed_and_parts);
    tcase_add_test(tc, test_fixed_keeps_digits);
    tcase_add_test(tc, test_pick_wording);
    tcase_add_test(tc, test_span);
    tcase_add_test(tc, test_compare_strip_levels);
    tcase_add_test(tc, test_grid_columns);
    tcase_add_test(tc, test_counts_and_rates);
    tcase_add_test(tc, test_window_start);
    tcase_add_test(tc, test_line_scroll_matches_a_whole_scan);
    tcase_add_test(tc, test_line_scroll_reads_the_end_of_a_long_line);
    tcase_add_test(tc, test_heat_window_follows_newest);
    tcase_add_test(tc, test_heat_window_selected_and_small);
    tcase_add_test(tc, test_layout_80x24_all_panes);
    tcase_add_test(tc, test_layout_wide_sizes);
    suite_add_tcase(s, tc);
    TCase *lim = tcase_create("limits");
    tcase_add_test(lim, test_piece_tiny_buffer);
    tcase_add_test(lim, test_wrap_width_one_never_stalls);
    tcase_add_test(lim, test_layout_folds_small);
    tcase_add_test(lim, test_layout_every_size);
    suite_add_tcase(s, lim);
    return s;
}

TEST_MAIN(make_suite)
