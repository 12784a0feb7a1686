/* textfmt.c — making model text safe and readable on a terminal.
 *
 * Owns: UTF-8 validation (strict: no overlongs, surrogates or code points above
 * U+10FFFF), the escaping of token pieces for the Tokens pane and traces, the
 * streaming sanitizer that sits between decoded bytes and the terminal, and a
 * locale-independent display width (a wcwidth() built on the range tables below).
 * Does not: touch the terminal, allocate, or know about tokens or curses.
 *
 * Conventions shared by the functions here:
 * - escape_piece shows C0 controls as \n \t \r or \xNN, DEL as \x7F, C1 controls
 *   (U+0080..U+009F) as \u0080, each invalid byte as \xNN, and a backslash as \\ so
 *   that a piece holding a real backslash never reads like an escape.
 * - stream_put keeps valid UTF-8, \n and \t; other C0 controls become their control
 *   picture (U+2400 + byte, so ESC shows as ␛), DEL becomes ␡, C1 controls and
 *   invalid bytes become U+FFFD.
 * - width counts controls as 0 columns and each invalid byte as 1. */
#include "textfmt.h"

#include <stdio.h>

#include <stdint.h>
#include <string.h>

struct range {
    uint32_t first, last;
};

/* Generated from Python 3's unicodedata (Unicode 14.0): zero_width holds the
 * categories Mn, Me and Cf (without U+00AD and the Arabic/Syriac prepended
 * concatenation marks, which are drawn) plus the Hangul medial vowels and final
 * consonants U+1160..U+11FF; wide holds East Asian Width W and F plus the
 * ideograph planes 2 and 3. Unassigned code points between two ranges were
 * absorbed into them to keep the tables short. */
static const struct range zero_width[] = {
    {0x0300, 0x036F}, {0x0483, 0x0489}, {0x0591, 0x05BD}, {0x05BF, 0x05BF}, {0x05C1, 0x05C2},
    {0x05C4, 0x05C5}, {0x05C7, 0x05C7}, {0x0610, 0x061A}, {0x061C, 0x061C}, {0x064B, 0x065F},
    {0x0670, 0x0670}, {0x06D6, 0x06DC}, {0x06DF, 0x06E4}, {0x06E7, 0x06E8}, {0x06EA, 0x06ED},
    {0x0711, 0x0711}, {0x0730, 0x074A}, {0x07A6, 0x07B0}, {0x07EB, 0x07F3}, {0x07FD, 0x07FD},
    {0x0816, 0x0819}, {0x081B, 0x0823}, {0x0825, 0x0827}, {0x0829, 0x082D}, {0x0859, 0x085B},
    {0x0890, 0x089F}, {0x08CA, 0x08E1}, {0x08E3, 0x0902}, {0x093A, 0x093A}, {0x093C, 0x093C},
    {0x0941, 0x0948}, {0x094D, 0x094D}, {0x0951, 0x0957}, {0x0962, 0x0963}, {0x0981, 0x0981},
    {0x09BC, 0x09BC}, {0x09C1, 0x09C4}, {0x09CD, 0x09CD}, {0x09E2, 0x09E3}, {0x09FE, 0x0A02},
    {0x0A3C, 0x0A3C}, {0x0A41, 0x0A51}, {0x0A70, 0x0A71}, {0x0A75, 0x0A75}, {0x0A81, 0x0A82},
    {0x0ABC, 0x0ABC}, {0x0AC1, 0x0AC8}, {0x0ACD, 0x0ACD}, {0x0AE2, 0x0AE3}, {0x0AFA, 0x0B01},
    {0x0B3C, 0x0B3C}, {0x0B3F, 0x0B3F}, {0x0B41, 0x0B44}, {0x0B4D, 0x0B56}, {0x0B62, 0x0B63},
    {0x0B82, 0x0B82}, {0x0BC0, 0x0BC0}, {0x0BCD, 0x0BCD}, {0x0C00, 0x0C00}, {0x0C04, 0x0C04},
    {0x0C3C, 0x0C3C}, {0x0C3E, 0x0C40}, {0x0C46, 0x0C56}, {0x0C62, 0x0C63}, {0x0C81, 0x0C81},
    {0x0CBC, 0x0CBC}, {0x0CBF, 0x0CBF}, {0x0CC6, 0x0CC6}, {0x0CCC, 0x0CCD}, {0x0CE2, 0x0CE3},
    {0x0D00, 0x0D01}, {0x0D3B, 0x0D3C}, {0x0D41, 0x0D44}, {0x0D4D, 0x0D4D}, {0x0D62, 0x0D63},
    {0x0D81, 0x0D81}, {0x0DCA, 0x0DCA}, {0x0DD2, 0x0DD6}, {0x0E31, 0x0E31}, {0x0E34, 0x0E3A},
    {0x0E47, 0x0E4E}, {0x0EB1, 0x0EB1}, {0x0EB4, 0x0EBC}, {0x0EC8, 0x0ECD}, {0x0F18, 0x0F19},
    {0x0F35, 0x0F35}, {0x0F37, 0x0F37}, {0x0F39, 0x0F39}, {0x0F71, 0x0F7E}, {0x0F80, 0x0F84},
    {0x0F86, 0x0F87}, {0x0F8D, 0x0FBC}, {0x0FC6, 0x0FC6}, {0x102D, 0x1030}, {0x1032, 0x1037},
    {0x1039, 0x103A}, {0x103D, 0x103E}, {0x1058, 0x1059}, {0x105E, 0x1060}, {0x1071, 0x1074},
    {0x1082, 0x1082}, {0x1085, 0x1086}, {0x108D, 0x108D}, {0x109D, 0x109D}, {0x1160, 0x11FF},
    {0x135D, 0x135F}, {0x1712, 0x1714}, {0x1732, 0x1733}, {0x1752, 0x1753}, {0x1772, 0x1773},
    {0x17B4, 0x17B5}, {0x17B7, 0x17BD}, {0x17C6, 0x17C6}, {0x17C9, 0x17D3}, {0x17DD, 0x17DD},
    {0x180B, 0x180F}, {0x1885, 0x1886}, {0x18A9, 0x18A9}, {0x1920, 0x1922}, {0x1927, 0x1928},
    {0x1932, 0x1932}, {0x1939, 0x193B}, {0x1A17, 0x1A18}, {0x1A1B, 0x1A1B}, {0x1A56, 0x1A56},
    {0x1A58, 0x1A60}, {0x1A62, 0x1A62}, {0x1A65, 0x1A6C}, {0x1A73, 0x1A7F}, {0x1AB0, 0x1B03},
    {0x1B34, 0x1B34}, {0x1B36, 0x1B3A}, {0x1B3C, 0x1B3C}, {0x1B42, 0x1B42}, {0x1B6B, 0x1B73},
    {0x1B80, 0x1B81}, {0x1BA2, 0x1BA5}, {0x1BA8, 0x1BA9}, {0x1BAB, 0x1BAD}, {0x1BE6, 0x1BE6},
    {0x1BE8, 0x1BE9}, {0x1BED, 0x1BED}, {0x1BEF, 0x1BF1}, {0x1C2C, 0x1C33}, {0x1C36, 0x1C37},
    {0x1CD0, 0x1CD2}, {0x1CD4, 0x1CE0}, {0x1CE2, 0x1CE8}, {0x1CED, 0x1CED}, {0x1CF4, 0x1CF4},
    {0x1CF8, 0x1CF9}, {0x1DC0, 0x1DFF}, {0x200B, 0x200F}, {0x202A, 0x202E}, {0x2060, 0x206F},
    {0x20D0, 0x20F0}, {0x2CEF, 0x2CF1}, {0x2D7F, 0x2D7F}, {0x2DE0, 0x2DFF}, {0x302A, 0x302D},
    {0x3099, 0x309A}, {0xA66F, 0xA672}, {0xA674, 0xA67D}, {0xA69E, 0xA69F}, {0xA6F0, 0xA6F1},
    {0xA802, 0xA802}, {0xA806, 0xA806}, {0xA80B, 0xA80B}, {0xA825, 0xA826}, {0xA82C, 0xA82C},
    {0xA8C4, 0xA8C5}, {0xA8E0, 0xA8F1}, {0xA8FF, 0xA8FF}, {0xA926, 0xA92D}, {0xA947, 0xA951},
    {0xA980, 0xA982}, {0xA9B3, 0xA9B3}, {0xA9B6, 0xA9B9}, {0xA9BC, 0xA9BD}, {0xA9E5, 0xA9E5},
    {0xAA29, 0xAA2E}, {0xAA31, 0xAA32}, {0xAA35, 0xAA36}, {0xAA43, 0xAA43}, {0xAA4C, 0xAA4C},
    {0xAA7C, 0xAA7C}, {0xAAB0, 0xAAB0}, {0xAAB2, 0xAAB4}, {0xAAB7, 0xAAB8}, {0xAABE, 0xAABF},
    {0xAAC1, 0xAAC1}, {0xAAEC, 0xAAED}, {0xAAF6, 0xAAF6}, {0xABE5, 0xABE5}, {0xABE8, 0xABE8},
    {0xABED, 0xABED}, {0xFB1E, 0xFB1E}, {0xFE00, 0xFE0F}, {0xFE20, 0xFE2F}, {0xFEFF, 0xFEFF},
    {0xFFF9, 0xFFFB}, {0x101FD, 0x101FD}, {0x102E0, 0x102E0}, {0x10376, 0x1037A},
    {0x10A01, 0x10A0F}, {0x10A38, 0x10A3F}, {0x10AE5, 0x10AE6}, {0x10D24, 0x10D27},
    {0x10EAB, 0x10EAC}, {0x10F46, 0x10F50}, {0x10F82, 0x10F85}, {0x11001, 0x11001},
    {0x11038, 0x11046}, {0x11070, 0x11070}, {0x11073, 0x11074}, {0x1107F, 0x11081},
    {0x110B3, 0x110B6}, {0x110B9, 0x110BA}, {0x110C2, 0x110C2}, {0x11100, 0x11102},
    {0x11127, 0x1112B}, {0x1112D, 0x11134}, {0x11173, 0x11173}, {0x11180, 0x11181},
    {0x111B6, 0x111BE}, {0x111C9, 0x111CC}, {0x111CF, 0x111CF}, {0x1122F, 0x11231},
    {0x11234, 0x11234}, {0x11236, 0x11237}, {0x1123E, 0x1123E}, {0x112DF, 0x112DF},
    {0x112E3, 0x112EA}, {0x11300, 0x11301}, {0x1133B, 0x1133C}, {0x11340, 0x11340},
    {0x11366, 0x11374}, {0x11438, 0x1143F}, {0x11442, 0x11444}, {0x11446, 0x11446},
    {0x1145E, 0x1145E}, {0x114B3, 0x114B8}, {0x114BA, 0x114BA}, {0x114BF, 0x114C0},
    {0x114C2, 0x114C3}, {0x115B2, 0x115B5}, {0x115BC, 0x115BD}, {0x115BF, 0x115C0},
    {0x115DC, 0x115DD}, {0x11633, 0x1163A}, {0x1163D, 0x1163D}, {0x1163F, 0x11640},
    {0x116AB, 0x116AB}, {0x116AD, 0x116AD}, {0x116B0, 0x116B5}, {0x116B7, 0x116B7},
    {0x1171D, 0x1171F}, {0x11722, 0x11725}, {0x11727, 0x1172B}, {0x1182F, 0x11837},
    {0x11839, 0x1183A}, {0x1193B, 0x1193C}, {0x1193E, 0x1193E}, {0x11943, 0x11943},
    {0x119D4, 0x119DB}, {0x119E0, 0x119E0}, {0x11A01, 0x11A0A}, {0x11A33, 0x11A38},
    {0x11A3B, 0x11A3E}, {0x11A47, 0x11A47}, {0x11A51, 0x11A56}, {0x11A59, 0x11A5B},
    {0x11A8A, 0x11A96}, {0x11A98, 0x11A99}, {0x11C30, 0x11C3D}, {0x11C3F, 0x11C3F},
    {0x11C92, 0x11CA7}, {0x11CAA, 0x11CB0}, {0x11CB2, 0x11CB3}, {0x11CB5, 0x11CB6},
    {0x11D31, 0x11D45}, {0x11D47, 0x11D47}, {0x11D90, 0x11D91}, {0x11D95, 0x11D95},
    {0x11D97, 0x11D97}, {0x11EF3, 0x11EF4}, {0x13430, 0x13438}, {0x16AF0, 0x16AF4},
    {0x16B30, 0x16B36}, {0x16F4F, 0x16F4F}, {0x16F8F, 0x16F92}, {0x16FE4, 0x16FE4},
    {0x1BC9D, 0x1BC9E}, {0x1BCA0, 0x1CF46}, {0x1D167, 0x1D169}, {0x1D173, 0x1D182},
    {0x1D185, 0x1D18B}, {0x1D1AA, 0x1D1AD}, {0x1D242, 0x1D244}, {0x1DA00, 0x1DA36},
    {0x1DA3B, 0x1DA6C}, {0x1DA75, 0x1DA75}, {0x1DA84, 0x1DA84}, {0x1DA9B, 0x1DAAF},
    {0x1E000, 0x1E02A}, {0x1E130, 0x1E136}, {0x1E2AE, 0x1E2AE}, {0x1E2EC, 0x1E2EF},
    {0x1E8D0, 0x1E8D6}, {0x1E944, 0x1E94A}, {0xE0001, 0xE01EF},
};
static const struct range wide[] = {
    {0x1100, 0x115F}, {0x231A, 0x231B}, {0x2329, 0x232A}, {0x23E9, 0x23EC}, {0x23F0, 0x23F0},
    {0x23F3, 0x23F3}, {0x25FD, 0x25FE}, {0x2614, 0x2615}, {0x2648, 0x2653}, {0x267F, 0x267F},
    {0x2693, 0x2693}, {0x26A1, 0x26A1}, {0x26AA, 0x26AB}, {0x26BD, 0x26BE}, {0x26C4, 0x26C5},
    {0x26CE, 0x26CE}, {0x26D4, 0x26D4}, {0x26EA, 0x26EA}, {0x26F2, 0x26F3}, {0x26F5, 0x26F5},
    {0x26FA, 0x26FA}, {0x26FD, 0x26FD}, {0x2705, 0x2705}, {0x270A, 0x270B}, {0x2728, 0x2728},
    {0x274C, 0x274C}, {0x274E, 0x274E}, {0x2753, 0x2755}, {0x2757, 0x2757}, {0x2795, 0x2797},
    {0x27B0, 0x27B0}, {0x27BF, 0x27BF}, {0x2B1B, 0x2B1C}, {0x2B50, 0x2B50}, {0x2B55, 0x2B55},
    {0x2E80, 0x303E}, {0x3041, 0x3247}, {0x3250, 0x4DBF}, {0x4E00, 0xA4C6}, {0xA960, 0xA97C},
    {0xAC00, 0xD7A3}, {0xF900, 0xFAD9}, {0xFE10, 0xFE19}, {0xFE30, 0xFE6B}, {0xFF01, 0xFF60},
    {0xFFE0, 0xFFE6}, {0x16FE0, 0x1B2FB}, {0x1F004, 0x1F004}, {0x1F0CF, 0x1F0CF},
    {0x1F18E, 0x1F18E}, {0x1F191, 0x1F19A}, {0x1F200, 0x1F320}, {0x1F32D, 0x1F335},
    {0x1F337, 0x1F37C}, {0x1F37E, 0x1F393}, {0x1F3A0, 0x1F3CA}, {0x1F3CF, 0x1F3D3},
    {0x1F3E0, 0x1F3F0}, {0x1F3F4, 0x1F3F4}, {0x1F3F8, 0x1F43E}, {0x1F440, 0x1F440},
    {0x1F442, 0x1F4FC}, {0x1F4FF, 0x1F53D}, {0x1F54B, 0x1F54E}, {0x1F550, 0x1F567},
    {0x1F57A, 0x1F57A}, {0x1F595, 0x1F596}, {0x1F5A4, 0x1F5A4}, {0x1F5FB, 0x1F64F},
    {0x1F680, 0x1F6C5}, {0x1F6CC, 0x1F6CC}, {0x1F6D0, 0x1F6D2}, {0x1F6D5, 0x1F6DF},
    {0x1F6EB, 0x1F6EC}, {0x1F6F4, 0x1F6FC}, {0x1F7E0, 0x1F7F0}, {0x1F90C, 0x1F93A},
    {0x1F93C, 0x1F945}, {0x1F947, 0x1F9FF}, {0x1FA70, 0x1FAF6}, {0x20000, 0x3FFFD},
};

static int in_table(uint32_t cp, const struct range *t, size_t n)
{
    if (cp < t[0].first || cp > t[n - 1].last)
        return 0;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp > t[mid].last)
            lo = mid + 1;
        else if (cp < t[mid].first)
            hi = mid;
        else
            return 1;
    }
    return 0;
}

/* Status of the bytes at s: the length (1..4) of the valid UTF-8 character there,
 * 0 when the first byte cannot start one, or -1 when all avail bytes are a valid
 * but unfinished prefix of a character (more input may complete it). */
static int utf8_status(const unsigned char *s, size_t avail)
{
    if (avail == 0)
        return -1;
    unsigned c = s[0];
    int need;
    unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80)
        return 1;
    else if (c >= 0xC2 && c <= 0xDF)
        need = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0) lo = 0xA0; /* no overlongs */
        if (c == 0xED) hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F; /* nothing above U+10FFFF */
    } else
        return 0;
    for (int i = 1; i < need; i++) {
        if ((size_t)i >= avail)
            return -1;
        unsigned b = s[i];
        if (i == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF))
            return 0;
    }
    return need;
}

static uint32_t utf8_decode(const unsigned char *s, int len)
{
    switch (len) {
    case 1: return s[0];
    case 2: return (uint32_t)(s[0] & 0x1F) << 6 | (s[1] & 0x3F);
    case 3: return (uint32_t)(s[0] & 0x0F) << 12 | (uint32_t)(s[1] & 0x3F) << 6 | (s[2] & 0x3F);
    default: return (uint32_t)(s[0] & 0x07) << 18 | (uint32_t)(s[1] & 0x3F) << 12 | (uint32_t)(s[2] & 0x3F) << 6 | (s[3] & 0x3F);
    }
}

int textfmt_utf8_len(const unsigned char *s, size_t avail)
{
    int st = utf8_status(s, avail);
    return st > 0 ? st : 0;
}

/* ---- piece escaping ---- */

static const char hex_digits[] = "0123456789ABCDEF";

/* Writes the display form of the character (or invalid byte) at p into unit;
 * returns its length and sets *used to the input bytes it stands for. */
static size_t escape_unit(const unsigned char *p, size_t avail, bool visible_spaces, char unit[8], size_t *used)
{
    int len = utf8_status(p, avail);
    if (len <= 0) {
        *used = 1;
        unit[0] = '\\', unit[1] = 'x', unit[2] = hex_digits[p[0] >> 4], unit[3] = hex_digits[p[0] & 15];
        return 4;
    }
    *used = (size_t)len;
    uint32_t cp = utf8_decode(p, len);
    if (cp == ' ' && visible_spaces) {
        memcpy(unit, "\xe2\x90\xa3", 3); /* ␣ */
        return 3;
    }
    switch (cp) {
    case '\n': memcpy(unit, "\\n", 2); return 2;
    case '\t': memcpy(unit, "\\t", 2); return 2;
    case '\r': memcpy(unit, "\\r", 2); return 2;
    case '\\': memcpy(unit, "\\\\", 2); return 2;
    }
    if (cp < 0x20 || cp == 0x7F) {
        unit[0] = '\\', unit[1] = 'x', unit[2] = hex_digits[cp >> 4], unit[3] = hex_digits[cp & 15];
        return 4;
    }
    if (cp >= 0x80 && cp <= 0x9F) {
        memcpy(unit, "\\u00", 4);
        unit[4] = hex_digits[cp >> 4], unit[5] = hex_digits[cp & 15];
        return 6;
    }
    memcpy(unit, p, (size_t)len);
    return (size_t)len;
}

size_t textfmt_escape_piece(const char *piece, size_t len, bool visible_spaces, char *out, size_t size)
{
    if (size == 0)
        return 0;
    const unsigned char *p = (const unsigned char *)piece;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        char unit[8];
        size_t used;
        size_t k = escape_unit(p + i, len - i, visible_spaces, unit, &used);
        if (o + k > size - 1)
            break; /* never cut a character or an escape in half */
        memcpy(out + o, unit, k);
        o += k;
        i += used;
    }
    out[o] = '\0';
    return o;
}

/* Trims newlines and spaces around s[0..*len): returns the new start. */
static const char *trim_blanks(const char *s, size_t *len)
{
    while (*len > 0 && (*s == '\n' || *s == ' ')) {
        s++;
        (*len)--;
    }
    while (*len > 0 && (s[*len - 1] == '\n' || s[*len - 1] == ' '))
        (*len)--;
    return s;
}

bool textfmt_piece_is_control(const char *piece)
{
    if (!piece)
        return false;
    size_t len = strlen(piece);
    piece = trim_blanks(piece, &len);
    return len >= 3 && piece[0] == '<' && piece[len - 1] == '>';
}

size_t textfmt_token_piece(const char *piece, bool control, bool visible_spaces, char *out,
                           size_t size)
{
    if (!piece)
        piece = "";
    size_t len = strlen(piece);
    if (control)
        piece = trim_blanks(piece, &len);
    return textfmt_escape_piece(piece, len, visible_spaces, out, size);
}

/* ---- streaming sanitizer ---- */

/* Appends the safe form of one whole character (or one invalid byte when len is 0)
 * at p to out, if it fits before the NUL; once something does not fit, *full is set
 * and nothing more is written, so the output is a clean prefix. */
static void put_safe(const unsigned char *p, int len, char *out, size_t size, size_t *o, bool *full)
{
    char unit[4];
    size_t k;
    if (len <= 0) {
        memcpy(unit, "\xef\xbf\xbd", 3); /* U+FFFD */
        k = 3;
    } else {
        uint32_t cp = utf8_decode(p, len);
        if (cp == '\n' || cp == '\t') {
            unit[0] = (char)cp;
            k = 1;
        } else if (cp < 0x20) { /* control picture U+2400 + cp: E2 90 80+cp */
            unit[0] = '\xe2', unit[1] = '\x90', unit[2] = (char)(0x80 + cp);
            k = 3;
        } else if (cp == 0x7F) {
            memcpy(unit, "\xe2\x90\xa1", 3); /* ␡ */
            k = 3;
        } else if (cp >= 0x80 && cp <= 0x9F) {
            memcpy(unit, "\xef\xbf\xbd", 3);
            k = 3;
        } else {
            memcpy(unit, p, (size_t)len);
            k = (size_t)len;
        }
    }
    if (*full || *o + k > size - 1) {
        *full = true;
        return;
    }
    memcpy(out + *o, unit, k);
    *o += k;
}

/* Every input byte becomes at most 3 output bytes, so out never overflows when
 * size >= 3 * (len + 4) + 1 (the +4 covers the carry); with less room the output
 * is cut at a character boundary and the rest of this call's text is lost. */
size_t textfmt_stream_put(textfmt_stream *s, const char *in, size_t len, char *out, size_t size)
{
    if (size == 0)
        return 0;
    const unsigned char *p = (const unsigned char *)in;
    size_t o = 0, i = 0;
    bool full = false;

    /* Finish what the previous call left: feed input bytes into the carry until
     * its first character is complete or proves invalid. */
    while (s->n_carry > 0) {
        int st = utf8_status(s->carry, (size_t)s->n_carry);
        if (st < 0) {
            if (i == len)
                break; /* still unfinished: keep holding it */
            s->carry[s->n_carry++] = p[i++];
            continue;
        }
        int used = st > 0 ? st : 1;
        put_safe(s->carry, st, out, size, &o, &full);
        memmove(s->carry, s->carry + used, (size_t)(s->n_carry - used));
        s->n_carry -= used;
    }

    while (i < len && s->n_carry == 0) {
        int st = utf8_status(p + i, len - i);
        if (st < 0) { /* an unfinished character at the end of the input */
            memcpy(s->carry, p + i, len - i);
            s->n_carry = (int)(len - i);
            break;
        }
        put_safe(p + i, st, out, size, &o, &full);
        i += st > 0 ? (size_t)st : 1;
    }
    out[o] = '\0';
    return o;
}

/* ---- display width ---- */

int textfmt_width(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t avail = strlen(s);
    int w = 0;
    while (avail > 0) {
        int len = utf8_status(p, avail);
        if (len <= 0) { /* an invalid byte: shown as one replacement character */
            w++;
            p++;
            avail--;
            continue;
        }
        uint32_t cp = utf8_decode(p, len);
        if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F))
            ;
        else if (in_table(cp, zero_width, sizeof zero_width / sizeof zero_width[0]))
            ;
        else if (in_table(cp, wide, sizeof wide / sizeof wide[0]))
            w += 2;
        else
            w++;
        p += len;
        avail -= (size_t)len;
    }
    return w;
}

void textfmt_count(long long n, char *buf, size_t size)
{
    double v = (double)n;
    if (n < 1000)
        snprintf(buf, size, "%lld", n);
    else if (n < 1000000)
        snprintf(buf, size, v < 9999.5 ? "%.1fK" : "%.0fK", v / 1e3);
    else if (n < 1000000000LL)
        snprintf(buf, size, v < 99950000.0 ? "%.1fM" : "%.0fM", v / 1e6);
    else
        snprintf(buf, size, "%.2fB", v / 1e9);
}
