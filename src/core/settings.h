/* settings.h — the settings a user may change while chatting (/set NAME VALUE): the
 * sampler's, the seed, the reply's step limit and the TUI's slow motion.
 *
 * One table, settings_table, gives each of them everything the program knows of it:
 * its name (which is also its long option and its config file key), its member in a
 * trace and in a saved chat, its default, its bounds, its type, its short option, its
 * --help text, its short form in the sampler's summary and where it lives. Everything
 * that reads, writes, checks or shows a value goes through that table: /set in the
 * REPL and the TUI (settings_set_line), the command line and the config file
 * (options.c makes their rows and --help's lines from it), the sampler's defaults and
 * check (sampler_config_default, sampler_config_check), the trace's writer and reader
 * (trace.c, trace_read.c), the saved chat's (chatfile.c) and the display
 * (settings_format, settings_format_short). A value therefore means the same, is
 * refused with the same words and is written under the same key everywhere.
 *
 * live_settings is a value: a whole set of them, to parse into, check and show. It
 * is nobody's copy to keep: while a model runs, the sampler holds the sampler's
 * settings (engine_sampler_config) and the session the others (app/session.h). */
#ifndef LLMCHAT_SETTINGS_H
#define LLMCHAT_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>

#include "sampler.h"
#include "status.h"

struct json_value; /* json.h */

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

typedef enum {
    SETTING_NUMBER,  /* a float field: a finite decimal */
    SETTING_INTEGER, /* an int field: a whole number */
    SETTING_SEED,    /* a uint64_t field: any whole number from 0 to 2^64 - 1 */
} setting_type;

/* One row of the table. */
typedef struct {
    const char *name;      /* /set NAME, --NAME and the config file's key */
    const char *trace_key; /* its member in a trace's "options" and in a record's
                              "sampler" ("top_p"); NULL: traces do not hold it */
    const char *chat_key;  /* its member in a saved chat's "settings" ("top-p"); NULL:
                              saved chats do not hold it */
    int chat_place;        /* where chat_key comes among a saved chat's "settings", from
                              1 (the file's order, which differs from the table's) */
    char short_name;       /* the short option (-t), 0 for none */
    const char *arg;       /* the value's name in --help ("F", "N", "MS") */
    setting_type type;
    double default_value;  /* the value a live_settings starts with (settings_default,
                              sampler_config_default), and that of a trace or a saved
                              chat that leaves the setting out */
    const char *default_words; /* --help's words for the default where the program
                              chooses it as it starts (the seed, the step limit by
                              mode); NULL: the default is default_value */
    bool has_off;          /* off is the value that turns the setting off: */
    double off;            /* --help says "= off", the summary leaves it out */
    const char *brief;     /* its short form in the sampler's summary ("T", "k"), NULL:
                              not in the summary */
    double min, max;       /* the bounds; max HUGE_VAL (a number) or INT32_MAX (an
                              integer): none but the type's own */
    bool min_excluded;     /* min itself is refused: "(min, ..." */
    bool max_excluded;     /* max itself is refused: "..., max)" */
    const char *unit;      /* said in the range ("a number of milliseconds from 0 to
                              10000"); NULL: "an integer" */
    size_t offset;         /* the field in live_settings (offsetof) */
    const char *help;      /* --help's text, which settings_help ends with the default */
} setting_info;

/* How many settings there are (the rows of settings_table before its end). */
enum { SETTINGS_COUNT = 9 };

/* Every setting, in the order settings_format shows them and --help lists them; ends
 * with a row whose name is NULL. */
extern const setting_info settings_table[];

/* The setting of row in `to` made the one in `from`. */
void settings_copy(const setting_info *row, live_settings *to, const live_settings *from);
/* The row of the setting name, or NULL. */
const setting_info *settings_find(const char *name);

/* Is row one of the sampler's settings (a field of sampler_config)? */
bool settings_of_sampler(const setting_info *row);

/* Is name (temperature, top-k, top-p, min-p, repeat-penalty, repeat-last-n, seed,
 * steps, slow-motion) one of the live settings? */
bool settings_is_live(const char *name);

/* What row allows, as a phrase that follows its name: "must be in (0, 1]", "must be
 * an integer from 0 to 2147483647", "must be a number of milliseconds from 0 to 10000". Static
 * storage, one string per row. */
const char *settings_range(const setting_info *row);

/* Every setting at its row's default_value (the seed 0, the step limit 0). */
void settings_default(live_settings *s);

/* Row's --help text: its help, then its default in parentheses ("nucleus sampling
 * (default 0.9; 1 = off)", "random seed (default: time-based, shown in the status)").
 * Static storage, one string per row. */
const char *settings_help(const setting_info *row);

/* Row's value in s as a double (a seed: the nearest one). */
double settings_value(const setting_info *row, const live_settings *s);

/* Is row's value in s within its bounds? */
bool settings_in_range(const setting_info *row, const live_settings *s);

/* Row's value in s as text ("0.7", "40", "42"), as settings_format shows it, into
 * buf. Returns buf. */
const char *settings_value_text(const setting_info *row, const live_settings *s, char *buf,
                                size_t size);

/* Sets row's setting in s to value. Returns NULL, or what is wrong (settings_range's
 * phrase), leaving s unchanged. */
const char *settings_parse(const setting_info *row, live_settings *s, const char *value);

/* Sets row's setting in s to a JSON value, a trace's or a saved chat's member: a
 * number for a number row, a whole number for an integer or the seed, within the
 * bounds. Returns NULL, or what is wrong (settings_range's phrase), leaving s
 * unchanged. */
const char *settings_from_json(const setting_info *row, live_settings *s,
                               const struct json_value *v);

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

/* The sampler's settings, short, for a status line: each row's brief and value, "T 0.7
 * k 40 p 0.9 min-p 0.05 rep 1.1" (rows without a brief, and settings that are off,
 * left out). */
int settings_format_short(const sampler_config *c, char *buf, size_t size);

#endif
