/* test_textfmt.c — piece escaping, the streaming terminal sanitizer, UTF-8 lengths
 * and display widths. No terminal needed: everything is compared as bytes. */
#include <string.h>

#include "testutil.h"
#include "textfmt.h"

static const char *esc(const char *piece, bool visible)
{
    static char out[256];
    size_t n = textfmt_escape_piece(piece, strlen(piece), visible, out, sizeof out);
    ck_assert_uint_eq(n, strlen(out));
    return out;
}

/* Feeds in to a fresh stream in chunks of `chunk` bytes and returns everything written. */
static const char *stream_chunks(const char *in, size_t len, size_t chunk)
{
    static char all[1024];
    textfmt_stream s = { { 0 }, 0 };
    size_t o = 0;
    for (size_t i = 0; i < len; i += chunk) {
        size_t k = len - i < chunk ? len - i : chunk;
        char out[64];
        size_t n = textfmt_stream_put(&s, in + i, k, out, sizeof out);
        ck_assert_uint_eq(n, strlen(out));
        memcpy(all + o, out, n);
        o += n;
    }
    all[o] = '\0';
    return all;
}

/* ---- core ---- */

START_TEST(test_escape_basic)
{
    ck_assert_str_eq(esc(" the", true), "\xe2\x90\xa3the"); /* ␣the */
    ck_assert_str_eq(esc(" the", false), " the");
    ck_assert_str_eq(esc("\n<s>\n", true), "\\n<s>\\n");
    ck_assert_str_eq(esc("a\tb\rc", false), "a\\tb\\rc");
    ck_assert_str_eq(esc("\x1b[31m", false), "\\x1B[31m");
    ck_assert_str_eq(esc("\x7f", false), "\\x7F");
    ck_assert_str_eq(esc("back\\slash", false), "back\\\\slash");
    ck_assert_str_eq(esc("caf\xc3\xa9 \xe4\xb8\xad", true), "caf\xc3\xa9\xe2\x90\xa3\xe4\xb8\xad");
    ck_assert_str_eq(esc("\xc2\x85", false), "\\u0085"); /* C1 control NEL */
}
END_TEST

/* BOS, EOS and other control tokens look the same in every front end: "<s>", not
 * "\n<s>\n"; a normal piece keeps its spaces. */
START_TEST(test_token_piece)
{
    char out[64];
    ck_assert(textfmt_piece_is_control("\n<s>\n"));
    ck_assert(textfmt_piece_is_control("\n</s>\n"));
    ck_assert(textfmt_piece_is_control("<|im_end|>"));
    ck_assert(!textfmt_piece_is_control(" <"));
    ck_assert(!textfmt_piece_is_control("<>"));
    ck_assert(!textfmt_piece_is_control(NULL));
    textfmt_token_piece("\n<s>\n", true, false, out, sizeof out);
    ck_assert_str_eq(out, "<s>");
    textfmt_token_piece("\n</s>\n", true, true, out, sizeof out);
    ck_assert_str_eq(out, "</s>");
    textfmt_token_piece(" Lily", false, true, out, sizeof out);
    ck_assert_str_eq(out, "\xe2\x90\xa3Lily");
    textfmt_token_piece(" Lily", false, false, out, sizeof out);
    ck_assert_str_eq(out, " Lily");
    textfmt_token_piece(NULL, false, false, out, sizeof out);
    ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(test_escape_invalid_utf8)
{
    ck_assert_str_eq(esc("\xff", false), "\\xFF");
    ck_assert_str_eq(esc("a\xe2\x96", false), "a\\xE2\\x96");      /* truncated ▁ */
    ck_assert_str_eq(esc("\xc0\xaf", false), "\\xC0\\xAF");        /* overlong / */
    ck_assert_str_eq(esc("\xed\xa0\x80", false), "\\xED\\xA0\\x80"); /* surrogate */
    /* a NUL inside the piece is a control byte */
    char out[32];
    ck_assert_uint_eq(textfmt_escape_piece("a\0b", 3, false, out, sizeof out), 6);
    ck_assert_str_eq(out, "a\\x00b");
}
END_TEST

START_TEST(test_escape_truncation)
{
    char out[8];
    /* "中中中" is 9 bytes: with room for 7 only two characters fit */
    ck_assert_uint_eq(textfmt_escape_piece("\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad", 9, false, out, 8), 6);
    ck_assert_str_eq(out, "\xe4\xb8\xad\xe4\xb8\xad");
    /* an escape is never cut in half: "ab\n" needs 4, room for 3 */
    ck_assert_uint_eq(textfmt_escape_piece("ab\n", 3, false, out, 4), 2);
    ck_assert_str_eq(out, "ab");
    ck_assert_uint_eq(textfmt_escape_piece("  ", 2, true, out, 4), 3);
    ck_assert_str_eq(out, "\xe2\x90\xa3");
    ck_assert_uint_eq(textfmt_escape_piece("abc", 3, false, out, 1), 0);
    ck_assert_str_eq(out, "");
    out[0] = 'X';
    ck_assert_uint_eq(textfmt_escape_piece("abc", 3, false, out, 0), 0);
    ck_assert_int_eq(out[0], 'X'); /* size 0: nothing written */
}
END_TEST

START_TEST(test_stream_plain_and_controls)
{
    const char *in = "Hi\tthere\n\x1b[2J\r\x07\x7f\x01!";
    ck_assert_str_eq(stream_chunks(in, strlen(in), 100),
                     "Hi\tthere\n\xe2\x90\x9b[2J\xe2\x90\x8d\xe2\x90\x87\xe2\x90\xa1\xe2\x90\x81!"); /* ␛ ␍ ␇ ␡ ␁ */
    /* NUL becomes ␀ */
    ck_assert_str_eq(stream_chunks("a\0b", 3, 100), "a\xe2\x90\x80" "b");
    /* C1 control (CSI, U+009B) and invalid bytes become U+FFFD */
    ck_assert_str_eq(stream_chunks("x\xc2\x9by", 4, 100), "x\xef\xbf\xbdy");
    ck_assert_str_eq(stream_chunks("x\xffy\xc0\xaf", 5, 100), "x\xef\xbf\xbdy\xef\xbf\xbd\xef\xbf\xbd");
}
END_TEST

START_TEST(test_stream_carry)
{
    /* "é€😀" split at every possible place, one byte per call */
    const char *in = "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80.";
    for (size_t chunk = 1; chunk <= 4; chunk++)
        ck_assert_str_eq(stream_chunks(in, strlen(in), chunk), in);

    textfmt_stream s = { { 0 }, 0 };
    char out[64];
    ck_assert_uint_eq(textfmt_stream_put(&s, "ab\xf0\x9f", 4, out, sizeof out), 2);
    ck_assert_str_eq(out, "ab");
    ck_assert_int_eq(s.n_carry, 2); /* held, not dropped */
    ck_assert_uint_eq(textfmt_stream_put(&s, "\x98", 1, out, sizeof out), 0);
    ck_assert_int_eq(s.n_carry, 3);
    ck_assert_uint_eq(textfmt_stream_put(&s, "\x80z", 2, out, sizeof out), 5);
    ck_assert_str_eq(out, "\xf0\x9f\x98\x80z");
    ck_assert_int_eq(s.n_carry, 0);

    /* a held lead byte followed by something that cannot continue it */
    ck_assert_uint_eq(textfmt_stream_put(&s, "\xe2\x82", 2, out, sizeof out), 0);
    ck_assert_uint_eq(textfmt_stream_put(&s, "A\xe2", 2, out, sizeof out), 7);
    ck_assert_str_eq(out, "\xef\xbf\xbd\xef\xbf\xbd" "A");
    ck_assert_int_eq(s.n_carry, 1);
    /* the carried E2 followed by a newline: U+FFFD then the newline */
    ck_assert_uint_eq(textfmt_stream_put(&s, "\n", 1, out, sizeof out), 4);
    ck_assert_str_eq(out, "\xef\xbf\xbd\n");
}
END_TEST

START_TEST(test_utf8_len)
{
    const unsigned char *u = (const unsigned char *)"a\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80";
    ck_assert_int_eq(textfmt_utf8_len(u, 10), 1);
    ck_assert_int_eq(textfmt_utf8_len(u + 1, 9), 2);
    ck_assert_int_eq(textfmt_utf8_len(u + 3, 7), 3);
    ck_assert_int_eq(textfmt_utf8_len(u + 6, 4), 4);
    ck_assert_int_eq(textfmt_utf8_len(u + 6, 3), 0); /* truncated */
    ck_assert_int_eq(textfmt_utf8_len(u + 2, 8), 0); /* continuation byte */
    ck_assert_int_eq(textfmt_utf8_len((const unsigned char *)"\xc0\xaf", 2), 0);
    ck_assert_int_eq(textfmt_utf8_len((const unsigned char *)"\xe0\x80\xaf", 3), 0);
    ck_assert_int_eq(textfmt_utf8_len((const unsigned char *)"\xed\xa0\x80", 3), 0);
    ck_assert_int_eq(textfmt_utf8_len((const unsigned char *)"\xf4\x90\x80\x80", 4), 0);
    ck_assert_int_eq(textfmt_utf8_len((const unsigned char *)"\xf4\x8f\xbf\xbf", 4), 4); /* U+10FFFF */
    ck_assert_int_eq(textfmt_utf8_len((const unsigned char *)"\xff", 1), 0);
    ck_assert_int_eq(textfmt_utf8_len((const unsigned char *)"x", 0), 0);
}
END_TEST

START_TEST(test_width)
{
    ck_assert_int_eq(textfmt_width(""), 0);
    ck_assert_int_eq(textfmt_width("hello"), 5);
    ck_assert_int_eq(textfmt_width("caf\xc3\xa9"), 4);              /* precomposed é */
    ck_assert_int_eq(textfmt_width("cafe\xcc\x81"), 4);             /* e + U+0301 */
    ck_assert_int_eq(textfmt_width("\xe4\xb8\xad\xe6\x96\x87"), 4); /* 中文 */
    ck_assert_int_eq(textfmt_width("\xf0\x9f\x98\x80"), 2);         /* 😀 */
    ck_assert_int_eq(textfmt_width("\xf0\x9f\x92\x82!"), 3);        /* 💂! */
    ck_assert_int_eq(textfmt_width("\xed\x95\x9c"), 2);             /* 한 */
    ck_assert_int_eq(textfmt_width("\xef\xbc\xa1"), 2);             /* fullwidth Ａ */
    ck_assert_int_eq(textfmt_width("\xe2\x90\xa3"), 1);             /* ␣ */
    ck_assert_int_eq(textfmt_width("\xe2\x80\x8b"), 0);             /* zero width space */
    ck_assert_int_eq(textfmt_width("\xe0\xa4\x95\xe0\xa4\xbf"), 2); /* कि: spacing vowel sign */
    ck_assert_int_eq(textfmt_width("\xe0\xa4\x95\xe0\xa5\x8d"), 1); /* क्: virama combines */
    ck_assert_int_eq(textfmt_width("\xf0\xa0\x80\x80"), 2);         /* U+20000, plane 2 */
    ck_assert_int_eq(textfmt_width("a\xff" "b"), 3);                /* invalid byte: 1 */
    ck_assert_int_eq(textfmt_width("a\nb"), 2);                     /* controls: 0 */
}
END_TEST

/* ---- limits ---- */

START_TEST(test_stream_small_output)
{
    /* out too small: a clean prefix at a character boundary, always NUL-terminated */
    textfmt_stream s = { { 0 }, 0 };
    char out[6];
    size_t n = textfmt_stream_put(&s, "ab\x1b" "cd", 5, out, sizeof out);
    ck_assert_uint_eq(n, 5);
    ck_assert_str_eq(out, "ab\xe2\x90\x9b");
    n = textfmt_stream_put(&s, "\xe4\xb8\xad\xe4\xb8\xad", 6, out, 5);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(out, "\xe4\xb8\xad");
    out[0] = 'X';
    ck_assert_uint_eq(textfmt_stream_put(&s, "a", 1, out, 0), 0);
    ck_assert_int_eq(out[0], 'X');
    ck_assert_int_eq(s.n_carry, 0);
}
END_TEST

START_TEST(test_stream_every_byte)
{
    /* every single byte value alone: output is valid UTF-8 free of controls except \n \t */
    for (int b = 0; b < 256; b++) {
        textfmt_stream s = { { 0 }, 0 };
        char in[2] = { (char)b, 'z' };
        char out[32];
        size_t n = textfmt_stream_put(&s, in, 2, out, sizeof out);
        ck_assert_int_eq(s.n_carry, 0); /* 'z' settles any lead byte */
        for (size_t i = 0; i < n;) {
            int k = textfmt_utf8_len((const unsigned char *)out + i, n - i);
            ck_assert_msg(k > 0, "byte 0x%02X: invalid UTF-8 in output", b);
            unsigned c = (unsigned char)out[i];
            ck_assert_msg(k > 1 || c >= 0x20 || c == '\n' || c == '\t', "byte 0x%02X: raw control 0x%02X", b, c);
            ck_assert_msg(c != 0x7f, "byte 0x%02X: raw DEL", b);
            i += (size_t)k;
        }
        ck_assert_int_eq(out[n - 1], 'z');
    }
}
END_TEST

START_TEST(test_escape_every_byte)
{
    /* an escaped piece never holds a raw control byte */
    for (int b = 0; b < 256; b++) {
        char in[1] = { (char)b }, out[16];
        size_t n = textfmt_escape_piece(in, 1, false, out, sizeof out);
        ck_assert_uint_gt(n, 0);
        for (size_t i = 0; i < n; i++) {
            unsigned c = (unsigned char)out[i];
            ck_assert_msg(c >= 0x20 && c != 0x7f && c < 0x80, "byte 0x%02X escapes to raw 0x%02X", b, c);
        }
    }
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("textfmt");
    TCase *core = tcase_create("core");
    tcase_add_test(core, test_escape_basic);
    tcase_add_test(core, test_escape_invalid_utf8);
    tcase_add_test(core, test_token_piece);
    tcase_add_test(core, test_escape_truncation);
    tcase_add_test(core, test_stream_plain_and_controls);
    tcase_add_test(core, test_stream_carry);
    tcase_add_test(core, test_utf8_len);
    tcase_add_test(core, test_width);
    suite_add_tcase(s, core);
    TCase *limits = tcase_create("limits");
    tcase_add_test(limits, test_stream_small_output);
    tcase_add_test(limits, test_stream_every_byte);
    tcase_add_test(limits, test_escape_every_byte);
    suite_add_tcase(s, limits);
    return s;
}

TEST_MAIN(make_suite)
