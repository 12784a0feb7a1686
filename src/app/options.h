/* options.h — llmchat's settings and the one table of options that sets them.
 *
 * Every setting has one row in the option table (options_rows): its long option name
 * (which is also its config file key), its short option, its --help text, and the
 * function that parses and checks its value. The live settings' rows (the sampler's,
 * the seed, the step limit, slow motion) are made from settings_table (settings.h),
 * which /set reads too. The command line and the config file go through those rows,
 * so a value is checked in one place only. Settings come from, last one winning: built-in
 * defaults, the config file, the environment (LLMCHAT_MODEL, NO_COLOR,
 * LLMCHAT_STEP_DELAY_MS), the command
 * line. LLMCHAT_STEP_DELAY_MS is the environment's name for --slow-motion. */
#ifndef LLMCHAT_CLI_OPTIONS_H
#define LLMCHAT_CLI_OPTIONS_H

#include <stdbool.h>
#include <stdio.h>

#include "config_file.h"
#include "kernels.h"
#include "sampler.h"
#include "settings.h"
#include "transformer.h"

/* The input history keeps at most this many lines (--history-size). */
enum { CLI_HISTORY_MAX = 1000000, CLI_HISTORY_DEFAULT = 1000 };

/* --control-vector may be given this many times (the config file's and the command
 * line's together). */
enum { CLI_VECTORS_MAX = 16 };

/* --knock-out may name this many heads, --knock-out-expert and --force-expert this
 * many experts each (the config file's and the command line's together). */
enum { CLI_KNOCKS_MAX = 256 };

typedef enum {
    MODE_AUTO = 0, MODE_TUI, MODE_CHAT, MODE_GENERATE, MODE_TOKENIZE, MODE_PERPLEXITY,
    MODE_TENSORS, /* -m tensors */
    MODE_PATCH,   /* -m patch */
    MODE_REPLAY, /* --replay TRACE */
    MODE_VIEW,   /* --view TRACE */
    MODE_COMPARE_SERVER, /* --compare-server URL */
} app_mode;
typedef enum { THEME_DARK = 0, THEME_LIGHT, THEME_MONO } app_theme;
/* --autosave: which sessions save their chat under the state directory. */
typedef enum {
    AUTOSAVE_INTERACTIVE = 0, /* the TUI, and -m chat reading a terminal (the default) */
    AUTOSAVE_ALWAYS,          /* pipes and files too (-m chat < file) */
    AUTOSAVE_NEVER,
} autosave_policy;
/* --keep-chats: the autosaved chats kept (older ones are removed when a session first
 * saves); 0 keeps them all. */
enum { OPTIONS_KEEP_CHATS_DEFAULT = 30, OPTIONS_KEEP_CHATS_MAX = 1000000 };

/* --draft-max and --draft-min: the most and the fewest tokens speculative decoding
 * guesses a step, by default. */
enum { OPTIONS_DRAFT_MAX_DEFAULT = 8, OPTIONS_DRAFT_MIN_DEFAULT = 0 };
/* The most tokens -m generate writes without -n (its step limit -1). */
enum { GENERATE_STEPS_DEFAULT = 256 };

/* Where the model came from (see main.c's model discovery). */
typedef enum {
    MODEL_FROM_NONE = 0,
    MODEL_FROM_ARGUMENT, /* MODEL or --model */
    MODEL_FROM_ENV,      /* LLMCHAT_MODEL */
    MODEL_FROM_CONFIG,   /* the config file's model key */
    MODEL_FROM_BUNDLED,  /* none of those: the bundled demo model */
    MODEL_FROM_RESUMED,  /* --resume: the model the saved chat names */
} app_model_source;

typedef struct {
    app_mode mode;
    const char *model_path;      /* borrowed from argv, the environment or the config */
    app_model_source model_source;
    int model_line;              /* the config line that set it (MODEL_FROM_CONFIG) */
    const char *template_name;   /* --template: a template_kind_parse name; NULL: the
                                    model's (its tokenizer.chat_template), else llama2 */
    const char *tokenizer_path;  /* NULL: beside the model, then the data dir */
    bool tokenizer_resumed;      /* tokenizer_path is the one --resume's saved chat names */
    int tokenizer_line;          /* the config file's line that gave it; 0: not the file */
    const char *prompt;          /* -i */
    const char *file;            /* -f */
    const char *system;          /* -y */
    sampler_config sampler;      /* -t -p -k --min-p --repeat-penalty --repeat-last-n -s: the
                                    sampler's first settings (once the engine is made,
                                    its sampler holds them: engine_sampler_config) */
    bool seed_given;
    unsigned settings_cli;       /* the live settings the command line gave (bit i:
                                    settings_table's row i): --resume keeps them over
                                    the saved chat's */
    bool ctx_cli, template_cli, system_cli; /* -c, --template, -y on the command line */
    int steps;                   /* -n; -1 = mode default (the session's first step limit) */
    int slow_motion_ms;          /* --slow-motion (LLMCHAT_STEP_DELAY_MS): tui: wait after
                                    each reply token, ms (the session's first value) */
    int ctx;                     /* -c; 0 = model's */
    int ctx_line;                /* the config file's line that gave ctx; 0: not the file */
    int threads;                 /* -T; 0 = the CPUs this process may run on */
    int attention_mib;           /* --attention-mib; 0 = the engine's default */
    const char *trace_path;      /* --trace */
    bool trace_attn;             /* --trace-attn */
    bool trace_lens;             /* --trace-lens */
    bool trace_tensors;          /* --trace-tensors FIRST-LAST: the steps of these layers */
    int trace_tensor_first, trace_tensor_last;
    bool lookup;                 /* --lookup: speculative decoding with prompt lookup */
    const char *draft_path;      /* --draft FILE: speculative decoding with that draft model */
    int draft_max;               /* --draft-max N: most tokens guessed a step (1..ENGINE_GUESS_MAX) */
    const char *draft_bound_given; /* "--draft-max" or "--draft-min" when either was given
                                    (the last; even as the default), else NULL */
    int draft_min;               /* --draft-min N: fewest (0..draft_max); between the two, as
                                    many as pay (engine_options.guess_min) */
    int position, position_last; /* -m tensors --position P, A-B or all: the first and the
                                    last position written; -1 -1: the input's last only,
                                    position_last -1: through the input's last */
    int layer_first, layer_last; /* -m tensors, patch --layers; -1 -1: every layer */
    const char *patch_clean;     /* -m patch --clean TEXT */
    const char *patch_corrupt;   /* --corrupt TEXT */
    const char *patch_answer;    /* --answer WORD|#ID; NULL: the clean run's top token */
    const char *patch_wrong;     /* --wrong WORD|#ID; NULL: the corrupted run's */
    int patch_site;              /* --site (patching.h's patch_site) */
    bool patch_kl;               /* --metric kl */
    bool json;                   /* -m patch --json */
    const char *replay_path;     /* --replay TRACE */
    bool compare;                /* --compare */
    const char *view_path;       /* --view TRACE */
    bool pieces;                 /* tokenize --pieces */
    const char *server_url;      /* --server URL: a served model instead of a local one */
    bool server_given;           /* ... given on the command line (the config's is ignored
                                    when MODEL is) */
    const char *compare_server;  /* --compare-server URL */
    const char *server_model;    /* --server-model NAME: the model asked of the server */
    const char *api_key_env;     /* --api-key-env NAME: the environment variable holding the
                                    server's API key */
    double server_timeout;       /* --server-timeout S: the most a server may stay silent */
    tensor_type weights;         /* --weights q8_0|f32 */
    bool weights_given;          /* --weights was set (command line or config) */
    int weights_line, kernels_line, kv_cache_line, panels_line; /* the config file's line
                                    that set each; 0: the command line or nothing */
    bool no_panels;              /* --panels off: GGUF Q8_0 read from the file's blocks alone;
                                    without panels_given, kernels_panels_by_default decides */
    bool k4_panels;              /* --panels on (or a replayed trace's k4_panels): Q4_K
                                    matrices get panels too */
    bool panels_given;           /* --panels was set (command line, config or replayed trace) */
    model_huge_pages huge_pages; /* --huge-pages auto|on|off (default auto) */
    kernels_isa isa;               /* --kernels auto|scalar|avx2|avx512|amx|neon|neon-dotprod */
    transformer_kv kv_cache;     /* --kv-cache auto|q8_0|f32 */
    bool mouse;                  /* tui --mouse */
    app_theme theme;             /* --theme; mono with --no-color or NO_COLOR */
    int history_size;            /* --history-size: input lines kept across runs */
    int top_k_shown;             /* tui: candidates shown in the Tokens pane (default 10) */
    bool verbose;                /* --verbose: say what loading did on stderr */
    bool resume;                 /* --resume: reopen the newest saved chat */
    struct {
        const char *path;        /* borrowed, or kept in owned */
        float scale;             /* FILE:SCALE; NAN: the file's suggested scale, else 1 */
        int line;                /* the config file's line that gave it; 0: the command line */
    } vectors[CLI_VECTORS_MAX];  /* --control-vector, in the order given */
    int n_vectors;
    int vector_first, vector_last; /* --control-vector-layers; -1 -1: every layer */
    int vector_layers_line;      /* the config file's line that gave them; 0: not the file */
    struct {
        int layer, head;         /* from 0 */
        bool reset;              /* :reset: a Gated DeltaNet head's state emptied too */
        int line;                /* the config file's line that gave it; 0: the command line */
    } knocks[CLI_KNOCKS_MAX];    /* --knock-out: heads whose attention output is zeroed */
    int n_knocks;
    struct {
        int layer, expert;       /* from 0 */
        int line;                /* the config file's line that gave it; 0: the command line */
    } expert_knocks[CLI_KNOCKS_MAX]; /* --knock-out-expert: experts the router never chooses */
    int n_expert_knocks;
    struct {
        int layer, expert;       /* from 0 */
        int line;                /* the config file's line that gave it; 0: the command line */
    } expert_forces[CLI_KNOCKS_MAX]; /* --force-expert: experts the router chooses first, in
                                        the order given (a later one at a layer replaces) */
    int n_expert_forces;
    autosave_policy autosave; /* --autosave */
    int keep_chats;              /* --keep-chats */
    const char *resume_path;     /* that chat's file (set by session_open), NULL without
                                    --resume */

    int config_line;             /* while a config file's line is applied: its number */
    /* owned: the config file that was read (its values are borrowed above) */
    char *config_path;           /* NULL when none was read */
    config_file config;
    char **owned;                /* (n_owned) strings made while setting options */
    int n_owned;
} app_options;

typedef struct app_option {
    const char *name;  /* long option, and the config file key when config is true */
    char short_name;   /* 0: none */
    const char *arg;   /* the value's name in --help ("F", "FILE"); NULL: a flag */
    bool config;       /* may be set in the config file */
    bool path;         /* a file name: the config file may start it with "~/" */
    const char *help;  /* --help text; '\n' starts a continuation line */
    /* Parses and checks value ("yes" for a flag given on the command line) into o.
     * Returns NULL, or what is wrong as a phrase that follows the option's name
     * ("must be a number >= 0"). NULL for the options options_parse handles itself
     * and for the live settings. */
    const char *(*set)(app_options *o, const char *value);
    const setting_info *setting; /* a live setting's row: settings.c parses and checks it */
    bool settings;     /* options.c's own table: the live settings' rows go here */
} app_option;

/* Every option, in --help order; ends with a row whose name is NULL. */
const app_option *options_rows(void);

/* The row of the option or config key name (without "--"), or NULL. */
const app_option *options_find(const char *name);

/* Built-in defaults (no config file, no environment). */
void options_default(app_options *o);

/* Applies a parsed config file to o: each entry through its option's row. Writes a
 * warning per problem, unknown key and bad value to warn, as "llmchat: SHOWN:LINE: ...",
 * and returns how many it wrote. Values are borrowed from cf, which must outlive o. */
int options_apply_config(app_options *o, const config_file *cf, const char *shown, FILE *warn);

/* Parses argv, reading the config file (default, --config FILE or none with
 * --no-config) and the environment first. Returns 0 on success, 1 when --config FILE
 * cannot be read, 2 on a usage error (message printed to stderr), or -1 when --help
 * or --version was handled (exit 0). */
int options_parse(int argc, char **argv, app_options *o);

/* Frees what options_parse and the setters allocated. */
void options_free(app_options *o);
/* How a message names an option whose value the model refuses once loaded: "--ctx"
 * from the command line, "~/.config/llmchat/config:3: ctx" from the config file's line
 * (line > 0). */
const char *options_origin(const app_options *o, const char *key, int line, char *buf,
                           size_t size);
/* Takes the malloc'd string s into o's owned strings (freed by options_free) and
 * returns it; NULL, s freed, when s is NULL or memory runs out. */
const char *options_keep(app_options *o, char *s);

/* The --help text, made from the table. */
void options_usage(FILE *f);

/* path with a leading $HOME shown as "~" (for messages), in buf. */
const char *options_shown_path(const char *path, char *buf, size_t size);

#endif
