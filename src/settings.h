/* settings.h — the settings a user may change while chatting (/set NAME VALUE): the
 * sampler's, the reply's step limit and the seed, named like the long options.
 *
 * Parses and checks one NAME VALUE, and formats the settings for display. Applying
 * them (to the engine's sampler, the chat's step limit) is the front end's part; the
 * sampler takes them from the next token on. No printing. */
#ifndef LLMCHAT_SETTINGS_H
#define LLMCHAT_SETTINGS_H

#include <stddef.h>

#include "sampler.h"
#include "status.h"

/* The most tokens a reply may be limited to (--steps, /set steps). */
enum { SETTINGS_STEPS_MAX = 1000000 };

typedef struct {
    sampler_config sampler;
    int steps;              /* most new tokens per reply; 0 = until the model ends it */
} live_settings;

/* Sets NAME (temperature, top-k, top-p, min-p, repeat-penalty, repeat-last-n, seed,
 * steps) to VALUE. A bad name or value fails with LLM_ERR_ARG, a message naming the
 * allowed names or range, and s unchanged. */
llm_status settings_set(live_settings *s, const char *name, const char *value, llm_err *err);

/* Parses "NAME VALUE" (spaces around and between) and sets it like settings_set. */
llm_status settings_set_line(live_settings *s, const char *line, llm_err *err);

/* Writes every setting as "name value" pairs separated by two spaces into buf, e.g.
 * "temperature 0.7  top-k 40  top-p 0.9  min-p 0  repeat-penalty 1  repeat-last-n 64
 * seed 42  steps 0". Returns the length (as snprintf). */
int settings_format(const live_settings *s, char *buf, size_t size);

/* The names, NULL-terminated, in the order settings_format writes them. */
extern const char *const settings_names[];

#endif
