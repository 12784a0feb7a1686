/* parse_number.h — a whole value as a number: the one place the program turns option
 * values, config values, /set values and command arguments into numbers.
 *
 * Each function takes the whole text (nothing may follow the number), writes *out
 * only on success and returns whether it succeeded. A decimal point is '.' whatever
 * the locale says (the TUI runs under the user's locale). Never prints. */
#ifndef LLMCHAT_PARSE_NUMBER_H
#define LLMCHAT_PARSE_NUMBER_H

#include <stdbool.h>
#include <stdint.h>

/* A base-10 integer from min to max: an optional sign and digits ("+5", "-3"), no
 * blanks. */
bool parse_int(const char *text, long min, long max, int *out);

/* A finite decimal that fits a float ("0.5", "-.5", "1e-3", "+2"): an optional sign,
 * digits with an optional '.', an optional exponent; no blanks, no hex, not NaN, not
 * infinite, not out of the float's range (1e-50 too small as 1e39 too large). */
bool parse_float(const char *text, float *out);

/* A base-10 integer from 0 to UINT64_MAX: digits, after an optional '+' (as
 * parse_int takes it); no '-', no blanks. */
bool parse_u64(const char *text, uint64_t *out);

/* An index (a layer, a head, a position) at the start of text: digits only, from 0 to
 * max; *end receives where the digits stop. For texts that hold several ("2-5",
 * "1:3,2:0"): a number too large for max is refused, never wrapped. */
bool parse_index_prefix(const char *text, long max, int *out, const char **end);

/* "FIRST-LAST", the whole text, with 0 <= FIRST <= LAST <= max. */
bool parse_index_range(const char *text, long max, int *first, int *last);

#endif
