/* settings.h — the settings a user may change while chatting (/set NAME VALUE): the
 * sampler's, the seed, the reply's step limit and the TUI's slow motion, named like
 * the long options.
 *
 * The one place their values are parsed and checked: the command line and the config
 * file (options.c's rows for these options) and /set in the REPL and the TUI all
 * go through settings_apply, so a value means the same everywhere. Applying them to
 * the engine's sampler and the chat's step limit is the front end's part; the
 * sampler takes them from the next token on. Also formats them for display. */
#ifndef LLMCHAT_SETTINGS_H
#define LLMCHAT_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>

#include "sampler.h"
#include "status.h"

/* The most tokens a reply may be limited to (--steps, /set steps): far beyond any
 * context, small enough that no count derived from it overflows. */
enum { SETTINGS_STEPS_MAX = 1000000 };
/* The longest wait after each token in slow motion (--slow-motion, /set slow-motion), ms. */
enum { SETTINGS_SLOW_MOTION_MAX = 10000 };

typedef struct {
    sampler_config sampler;
    int steps;              /* most new tokens per reply; 0 = until the model ends it */
    int slow_motion_ms;     /* the TUI waits this long after each reply token (keys still
                               work meanwhile): 0 = full speed */
} live_settings;

/* Is name (temperature, top-k, top-p, min-p, repeat-penalty, repeat-last-n, seed,
 * steps, slow-motion) one of the live settings? */
bool settings_is_live(const char *name);

/* Sets the live setting name to value in s. Returns NULL, or what is wrong as a
 * phrase that follows the name ("must be in (0, 1]"), leaving s unchanged. */
const char *settings_apply(live_settings *s, const char *name, const char *value);

/* /set's argument, "NAME VALUE" (blanks around and between): sets it like
 * settings_apply. Fails with LLM_ERR_ARG and a message ("top-p must be in (0, 1], got
 * '2'"; "unknown setting 'x': one of ...") leaving s unchanged. */
llm_status settings_set_line(live_settings *s, const char *line, llm_err *err);

/* Every setting as "name value" pairs separated by two spaces ("temperature 0.7  top-k
 * 40  top-p 0.9  min-p 0  repeat-penalty 1  repeat-last-n 64  seed 42  steps 0  slow-motion 0") into
 * buf. Returns the length, as snprintf. */
int settings_format(const live_settings *s, char *buf, size_t size);

/* The same, short, for a status line: "T 0.7 k 40 p 0.9 min-p 0.05 rep 1.1" (settings
 * that are off left out). */
int settings_format_short(const sampler_config *c, char *buf, size_t size);

/* The names, NULL-terminated, in the order settings_format writes them. */
extern const char *const settings_names[];

#endif
