/* options.c — the option table, and the command line, config file and environment
 * that go through it (see options.h and man/llmchat.1, OPTIONS).
 *
 * Owns: every option's parsing and checking (one setter per option; the live
 * settings' rows are made from settings_table and parsed by settings.c), the --help
 * text, the order in which the config file, the environment and the command line
 * apply. Does not: find the model (discover.c does, with model_source telling it where
 * to look), or read the config file's syntax (config_file.c). A bad value on the command line is
 * a usage error (exit status 2); in the config file it is a warning naming the file and
 * line, and the setting keeps its earlier value. */
#include "options.h"

#include "patching.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "engine.h"
#include "parse_number.h"
#include "template.h"
#include "settings.h"
#include "textfmt.h"

/* ---- value parsers (numbers: parse_number.h) ---- */

static bool parse_bool(const char *s, bool *out)
{
    static const char *yes[] = {"yes", "true", "on", "1"}, *no[] = {"no", "false", "off", "0"};
    for (int i = 0; i < 4; i++) {
        if (!strcmp(s, yes[i]))
            return *out = true, true;
        if (!strcmp(s, no[i]))
            return *out = false, true;
    }
    return false;
}

/* ---- one setter per option ---- */

/* Options that take their value as it is, and flags that set a constant. */
#define SET_STRING(fn, field)                                                                  \
    static const char *fn(app_options *o, const char *v)                                       \
    {                                                                                          \
        o->field = v;                                                                          \
        return NULL;                                                                           \
    }
#define SET_CONSTANT(fn, field, value)                                                         \
    static const char *fn(app_options *o, const char *v)                                       \
    {                                                                                          \
        (void)v;                                                                               \
        o->field = value;                                                                      \
        return NULL;                                                                           \
    }

static const char *set_model(app_options *o, const char *v)
{
    if (!*v)
        return "must name a model file";
    o->model_path = v;
    o->model_source = MODEL_FROM_ARGUMENT;
    return NULL;
}

static const char *set_tokenizer(app_options *o, const char *v)
{
    if (!*v)
        return "must name a tokenizer file";
    o->tokenizer_path = v;
    o->tokenizer_line = o->config_line;
    return NULL;
}

static const char *set_mode(app_options *o, const char *v)
{
    static const struct { const char *name; app_mode mode; } modes[] = {
        {"tui", MODE_TUI}, {"chat", MODE_CHAT}, {"generate", MODE_GENERATE},
        {"tokenize", MODE_TOKENIZE}, {"perplexity", MODE_PERPLEXITY},
        {"tensors", MODE_TENSORS}, {"patch", MODE_PATCH},
    };
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (!strcmp(v, modes[i].name)) {
            o->mode = modes[i].mode;
            return NULL;
        }
    return "must be tui, chat, generate, tokenize, perplexity, tensors or patch";
}

SET_STRING(set_prompt, prompt)

SET_STRING(set_file, file)

SET_STRING(set_system, system)

SET_STRING(set_patch_clean, patch_clean)

SET_STRING(set_patch_corrupt, patch_corrupt)

SET_STRING(set_patch_answer, patch_answer)

SET_STRING(set_patch_wrong, patch_wrong)

SET_CONSTANT(set_json, json, true)

static const char *set_patch_site(app_options *o, const char *v)
{
    patch_site s;
    if (!patch_site_parse(v, &s))
        return "must be resid_pre, attn_out, mlp_out, head, head_q, head_k, head_v or expert";
    o->patch_site = (int)s;
    return NULL;
}

static const char *set_patch_metric(app_options *o, const char *v)
{
    if (strcmp(v, "logit-diff") && strcmp(v, "kl"))
        return "must be logit-diff or kl";
    o->patch_kl = !strcmp(v, "kl");
    return NULL;
}

/* A live setting (settings_table's row): parsed and checked by settings.c, so that the
 * command line, the config file and /set agree. */
static const char *set_setting(app_options *o, const setting_info *row, const char *v)
{
    live_settings s = {.sampler = o->sampler, .steps = o->steps, .slow_motion_ms = o->slow_motion_ms};
    const char *why = settings_parse(row, &s, v);
    if (why)
        return why;
    o->sampler = s.sampler;
    o->steps = s.steps;
    o->slow_motion_ms = s.slow_motion_ms;
    o->seed_given |= row->type == SETTING_SEED;
    return NULL;
}

static const char *set_ctx(app_options *o, const char *v)
{
    if (!parse_int(v, 1, INT_MAX, &o->ctx))
        return "must be an integer from 1 to 2147483647";
    o->ctx_line = o->config_line;
    return NULL;
}

static const char *set_attention_mib(app_options *o, const char *v)
{
    return parse_int(v, 1, 1 << 20, &o->attention_mib) ? NULL : "must be an integer from 1 to 1048576";
}

static const char *set_threads(app_options *o, const char *v)
{
    return parse_int(v, 1, 1024, &o->threads) ? NULL : "must be an integer in 1..1024";
}

SET_STRING(set_trace, trace_path)

SET_CONSTANT(set_trace_attn, trace_attn, true)

SET_CONSTANT(set_lookup, lookup, true)

SET_STRING(set_draft, draft_path)

static const char *set_draft_max(app_options *o, const char *v)
{
    o->draft_bound_given = "--draft-max";
    return parse_int(v, 1, ENGINE_GUESS_MAX, &o->draft_max) ? NULL
                                                            : "must be an integer from 1 to 16";
}

static const char *set_draft_min(app_options *o, const char *v)
{
    o->draft_bound_given = "--draft-min";
    return parse_int(v, 0, ENGINE_GUESS_MAX, &o->draft_min) ? NULL
                                                            : "must be an integer from 0 to 16";
}

SET_CONSTANT(set_trace_lens, trace_lens, true)

SET_STRING(set_replay, replay_path)
SET_STRING(set_view, view_path)

SET_CONSTANT(set_compare, compare, true)

SET_CONSTANT(set_pieces, pieces, true)

SET_STRING(set_server_model, server_model)

static const char *check_url(const char *v)
{
    return strncasecmp(v, "http://", 7) == 0 || strncasecmp(v, "https://", 8) == 0
               ? NULL
               : "must be an http:// or https:// URL";
}

static const char *set_server(app_options *o, const char *v)
{
    o->server_url = v;
    return check_url(v);
}

static const char *set_compare_server(app_options *o, const char *v)
{
    o->compare_server = v;
    return check_url(v);
}

static const char *set_api_key_env(app_options *o, const char *v)
{
    o->api_key_env = v;
    for (const char *p = v; *p; p++)
        if (!(*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
              (p > v && *p >= '0' && *p <= '9')))
            return "must name an environment variable (letters, digits, _)";
    return *v ? NULL : "must name an environment variable (letters, digits, _)";
}

static const char *set_server_timeout(app_options *o, const char *v)
{
    float s;
    if (!parse_float(v, &s) || !(s >= 1 && s <= 86400))
        return "must be a number of seconds from 1 to 86400";
    o->server_timeout = s;
    return NULL;
}

static const char *set_weights(app_options *o, const char *v)
{
    if (!model_weights_parse(v, &o->weights))
        return "must be native, q8_0 or f32";
    o->weights_given = true;
    o->weights_line = o->config_line;
    return NULL;
}

static const char *set_kernels(app_options *o, const char *v)
{
    kernels_isa isa;
    if (!kernels_isa_parse(v, &isa))
        return "must be one of " KERNELS_ISA_CHOICES;
    if (!kernels_isa_supported(isa))
        return "names kernels this CPU or this build cannot run";
    o->isa = isa;
    o->kernels_line = o->config_line;
    return NULL;
}

static const char *set_panels(app_options *o, const char *v)
{
    if (!strcmp(v, "on")) o->no_panels = false, o->k4_panels = true;
    else if (!strcmp(v, "off")) o->no_panels = true, o->k4_panels = false;
    else return "must be on or off";
    o->panels_given = true;
    o->panels_line = o->config_line;
    return NULL;
}

static const char *set_huge_pages(app_options *o, const char *v)
{
    return model_huge_pages_parse(v, &o->huge_pages) ? NULL : "must be auto, on or off";
}

static const char *set_kv_cache(app_options *o, const char *v)
{
    if (!strcmp(v, "auto")) o->kv_cache = TRANSFORMER_KV_AUTO;
    else if (!strcmp(v, "q8_0") || !strcmp(v, "int8")) o->kv_cache = TRANSFORMER_KV_Q8_0;
    else if (!strcmp(v, "f32") || !strcmp(v, "fp32")) o->kv_cache = TRANSFORMER_KV_F32;
    else return "must be auto, q8_0 or f32";
    o->kv_cache_line = o->config_line;
    return NULL;
}

static const char *set_theme(app_options *o, const char *v)
{
    if (!strcmp(v, "dark")) o->theme = THEME_DARK;
    else if (!strcmp(v, "light")) o->theme = THEME_LIGHT;
    else if (!strcmp(v, "mono")) o->theme = THEME_MONO;
    else return "must be dark, light or mono";
    return NULL;
}

SET_CONSTANT(set_no_color, theme, THEME_MONO)

static const char *set_mouse(app_options *o, const char *v)
{
    return parse_bool(v, &o->mouse) ? NULL : "must be yes or no";
}

SET_CONSTANT(set_no_mouse, mouse, false)
SET_CONSTANT(set_resume, resume, true)

static const char *set_template(app_options *o, const char *v)
{
    template_kind k;
    if (!template_kind_parse(v, &k))
        return "must be llama2, mistral, zephyr (or tinyllama), chatml, llama3, llama3.1 (or "
               "llama3.2, llama3.3), qwen3 (or chatml-think), qwen35 (or qwen3.5), gemma, gemma4 "
               "(or gemma-4), phi3, phi4-mini or harmony (or gpt-oss)";
    o->template_name = v;
    return NULL;
}

static const char *set_verbose(app_options *o, const char *v)
{
    return parse_bool(v, &o->verbose) ? NULL : "must be yes or no";
}

static const char *set_history_size(app_options *o, const char *v)
{
    return parse_int(v, 0, CLI_HISTORY_MAX, &o->history_size) ? NULL
                                                               : "must be an integer from 0 to 1000000";
}

static const char *keep(app_options *o, char *s);

/* FILE or FILE:SCALE (llama.cpp's --control-vector-scaled FILE SCALE): the scale is
 * what follows the last colon. A name with a colon that is a file as it stands is
 * that file (scale 1); otherwise what follows the last colon must be a number. */
static const char *set_control_vector(app_options *o, const char *v)
{
    if (o->n_vectors == CLI_VECTORS_MAX)
        return "may be given at most 16 times";
    const char *colon = strrchr(v, ':');
    float scale = NAN; /* the file's suggested scale, else 1 (steering_load) */
    size_t len = strlen(v);
    if (colon && access(v, F_OK) != 0) {
        char *end;
        errno = 0;
        double d = strtod(colon + 1, &end);
        if (!colon[1] || *end || errno || end == colon + 1)
            return "takes FILE or FILE:SCALE, but what follows the last ':' is not a number "
                   "(a scale from -1e6 to 1e6), and no file has the whole name";
        if (!isfinite(d) || fabs(d) > 1e6)
            return "FILE:SCALE needs a scale from -1e6 to 1e6";
        scale = (float)d;
        len = (size_t)(colon - v);
    }
    if (len == 0)
        return "must name a control-vector GGUF file (FILE or FILE:SCALE)";
    const char *path = v;
    if (len != strlen(v) && !(path = keep(o, strndup(v, len))))
        return "could not be stored (out of memory)";
    o->vectors[o->n_vectors].path = path;
    o->vectors[o->n_vectors].line = o->config_line;
    o->vectors[o->n_vectors++].scale = scale;
    return NULL;
}

static const char *set_control_vector_layers(app_options *o, const char *v)
{
    int first, last;
    if (!parse_index_range(v, INT_MAX, &first, &last))
        return "must be FIRST-LAST with 0 <= FIRST <= LAST (layers numbered from 0, as "
               "llama.cpp's --control-vector-layer-range FIRST LAST)";
    o->vector_first = first;
    o->vector_last = last;
    o->vector_layers_line = o->config_line;
    return NULL;
}

/* FIRST-LAST, or one index N, or "all" (-1 -1), from 0: --layers, --trace-tensors and
 * --position's spans. */
static bool parse_span(const char *v, int *first, int *last)
{
    if (!strcmp(v, "all")) {
        *first = *last = -1;
        return true;
    }
    int a;
    const char *end;
    if (parse_index_range(v, INT_MAX, first, last))
        return true;
    if (parse_index_prefix(v, INT_MAX, &a, &end) && !*end) {
        *first = *last = a;
        return true;
    }
    return false;
}

static const char *set_layers(app_options *o, const char *v)
{
    return parse_span(v, &o->layer_first, &o->layer_last)
               ? NULL
               : "must be FIRST-LAST, one layer N or all (layers numbered from 0)";
}

static const char *set_trace_tensors(app_options *o, const char *v)
{
    if (!parse_span(v, &o->trace_tensor_first, &o->trace_tensor_last))
        return "must be FIRST-LAST, one layer N or all (layers numbered from 0)";
    o->trace_tensors = true;
    return NULL;
}

static const char *set_position(app_options *o, const char *v)
{
    if (!parse_span(v, &o->position, &o->position_last))
        return "must be a position P >= 0, a range FIRST-LAST or all";
    if (o->position < 0) /* all: from 0 through the input's last */
        o->position = 0;
    return NULL;
}

/* The pair "A:B" (from 0) at *at of a comma list, into *a and *b; moves *at past it and
 * its comma. False when *at does not start with one. */
static bool next_pair(const char **at, int *a, int *b)
{
    const char *end;
    if (!parse_index_prefix(*at, INT_MAX, a, &end) || *end != ':' ||
        !parse_index_prefix(end + 1, INT_MAX, b, &end) || (*end && *end != ',') ||
        (*end == ',' && !end[1])) /* a comma ends nothing: "0:1," is a pair missing */
        return false;
    *at = end + (*end == ',');
    return true;
}

/* LAYER:HEAD[:reset], or several as a comma list; from 0, as a trace's heads_out. */
static const char *set_knock_out(app_options *o, const char *v)
{
    static const char usage[] = "must be LAYER:HEAD or LAYER:HEAD:reset (from 0), or a comma "
                                "list of them";
    const char *at = v;
    while (*at) {
        int layer, head;
        const char *end;
        if (!parse_index_prefix(at, INT_MAX, &layer, &end) || *end != ':' ||
            !parse_index_prefix(end + 1, INT_MAX, &head, &end))
            return usage;
        bool reset = !strncmp(end, ":reset", 6);
        end += reset ? 6 : 0;
        if ((*end && *end != ',') || (*end == ',' && !end[1]))
            return usage;
        at = end + (*end == ',');
        for (int i = 0; i < o->n_knocks; i++)
            if (o->knocks[i].layer == layer && o->knocks[i].head == head &&
                o->knocks[i].reset != reset)
                return "names a head both with and without :reset (here or in the config "
                       "file): give it once";
        if (o->n_knocks == CLI_KNOCKS_MAX)
            return "names more than 256 heads";
        o->knocks[o->n_knocks].layer = layer;
        o->knocks[o->n_knocks].reset = reset;
        o->knocks[o->n_knocks].line = o->config_line;
        o->knocks[o->n_knocks++].head = head;
    }
    return at == v ? usage : NULL;
}

/* LAYER:EXPERT, or several as a comma list; from 0, as a trace's experts_out. */
static const char *set_knock_out_expert(app_options *o, const char *v)
{
    const char *at = v;
    while (*at) {
        int layer, expert;
        if (!next_pair(&at, &layer, &expert))
            return "must be LAYER:EXPERT (from 0), or a comma list of them";
        if (o->n_expert_knocks == CLI_KNOCKS_MAX)
            return "names more than 256 experts";
        o->expert_knocks[o->n_expert_knocks].layer = layer;
        o->expert_knocks[o->n_expert_knocks].line = o->config_line;
        o->expert_knocks[o->n_expert_knocks++].expert = expert;
    }
    return at == v ? "must be LAYER:EXPERT (from 0), or a comma list of them" : NULL;
}

/* LAYER:EXPERT, or several as a comma list; from 0, as a trace's experts_forced. */
static const char *set_force_expert(app_options *o, const char *v)
{
    const char *at = v;
    while (*at) {
        int layer, expert;
        if (!next_pair(&at, &layer, &expert))
            return "must be LAYER:EXPERT (from 0), or a comma list of them";
        if (o->n_expert_forces == CLI_KNOCKS_MAX)
            return "names more than 256 experts";
        o->expert_forces[o->n_expert_forces].layer = layer;
        o->expert_forces[o->n_expert_forces].line = o->config_line;
        o->expert_forces[o->n_expert_forces++].expert = expert;
    }
    return at == v ? "must be LAYER:EXPERT (from 0), or a comma list of them" : NULL;
}

static const char *set_autosave(app_options *o, const char *v)
{
    if (!strcmp(v, "interactive")) o->autosave = AUTOSAVE_INTERACTIVE;
    else if (!strcmp(v, "always")) o->autosave = AUTOSAVE_ALWAYS;
    else if (!strcmp(v, "never")) o->autosave = AUTOSAVE_NEVER;
    else return "must be interactive, always or never";
    return NULL;
}

static const char *set_keep_chats(app_options *o, const char *v)
{
    return parse_int(v, 0, OPTIONS_KEEP_CHATS_MAX, &o->keep_chats) ? NULL
                                                               : "must be an integer from 0 to 1000000";
}

/* ---- the table ---- */

static const app_option own_rows[] = {
    {.name = "model", .arg = "FILE", .config = true, .path = true,
     .help = "the model (default: see MODEL below)", .set = set_model},
    {.name = "tokenizer", .short_name = 'z', .arg = "FILE", .config = true, .path = true,
     .help = "tokenizer.bin or GGUF vocabulary (default: the GGUF\nmodel's own, else tokenizer.bin or tokN.bin beside\nthe model, then the data directory)",
     .set = set_tokenizer},
    {.name = "mode", .short_name = 'm', .arg = "MODE",
     .help = "tui | chat | generate | tokenize | perplexity | tensors |\npatch (default: tui on a terminal that can draw, else chat)",
     .set = set_mode},
    {.name = "prompt", .short_name = 'i', .arg = "TEXT",
     .help = "generate/tokenize: the input; chat/tui: the first message", .set = set_prompt},
    {.name = "file", .short_name = 'f', .arg = "FILE", .help = "read the input text from FILE (- for stdin)",
     .set = set_file},
    {.name = "system", .short_name = 'y', .arg = "TEXT", .config = true, .help = "system prompt",
     .set = set_system},
    {.name = "template", .arg = "NAME", .config = true,
     .help = "chat template: llama2, mistral, zephyr (tinyllama),\nchatml, llama3, llama3.1, qwen3, "
             "qwen35, gemma,\ngemma4, phi3, phi4-mini or harmony (gpt-oss)\n(default: the model's, "
             "else llama2)",
     .set = set_template},
    {.settings = true}, /* settings_table's rows (settings.h) go here */
    {.name = "ctx", .short_name = 'c', .arg = "N", .config = true,
     .help = "context length (default: the model's)", .set = set_ctx},
    {.name = "threads", .short_name = 'T', .arg = "N", .config = true,
     .help = "threads (default: the CPUs this process may run on)", .set = set_threads},
    {.name = "attention-mib", .arg = "N", .config = true,
     .help = "memory for the newest positions' attention rows (the\nheatmap, the heads views, --trace-attn), in MiB\n(default 64)",
     .set = set_attention_mib},
    {.name = "control-vector", .arg = "FILE[:SCALE]", .config = true, .path = true,
     .help = "add a control vector (llama.cpp's GGUF: direction.N\nadded after layer N) times SCALE (default: the\nscale the file suggests, else 1); repeatable",
     .set = set_control_vector},
    {.name = "control-vector-layers", .arg = "FIRST-LAST", .config = true,
     .help = "apply control vectors after layers FIRST..LAST only\n(numbered from 0, as llama.cpp does)",
     .set = set_control_vector_layers},
    {.name = "knock-out", .arg = "LAYER:HEAD[:reset]", .config = true,
     .help = "zero that head's attention output (kqv) before the\noutput projection; from 0; repeatable or a comma list;\n:reset (a Gated DeltaNet head) also empties its state",
     .set = set_knock_out},
    {.name = "knock-out-expert", .arg = "LAYER:EXPERT", .config = true,
     .help = "a mixture of experts: the router never chooses that\nexpert (its logit -inf; the others renormalised); from\n0; repeatable or a comma list",
     .set = set_knock_out_expert},
    {.name = "force-expert", .arg = "LAYER:EXPERT", .config = true,
     .help = "a mixture of experts: the router chooses that expert\nfirst for every token (its logit just above the\nothers'); one a layer; from 0; repeatable or a comma\nlist",
     .set = set_force_expert},
    {.name = "trace", .arg = "FILE", .help = "write one JSON line per step record", .set = set_trace},
    {.name = "trace-attn", .help = "include attention weights in the trace", .set = set_trace_attn},
    {.name = "trace-lens", .help = "include the logit lens of every position in the trace",
     .set = set_trace_lens},
    {.name = "trace-tensors", .arg = "LAYERS",
     .help = "include a summary of every step of the forward pass\n(FIRST-LAST, N or all) in the trace",
     .set = set_trace_tensors},
    {.name = "lookup",
     .help = "generate, chat, tui: speculative decoding with prompt\nlookup: the tokens that followed the last "
             "match of the newest few\nearlier in the text are guessed and checked in one\npass "
             "(the output is the same, token for token)",
     .set = set_lookup},
    {.name = "draft", .arg = "FILE", .path = true,
     .help = "generate, chat, tui: speculative decoding with FILE, a\nsmaller model with the same vocabulary, "
             "guessing greedily\n(the output is the same, token for token)",
     .set = set_draft},
    {.name = "draft-max", .arg = "N",
     .help = "most tokens --lookup or --draft guesses a step (1..16,\ndefault 8)", .set = set_draft_max},
    {.name = "draft-min", .arg = "N",
     .help = "fewest tokens --lookup or --draft asks for a step\n(0..16, default 0); between the two, as many as pay\n"
             "by the acceptance and the measured cost of a check\n(equal to --draft-max: always that many)",
     .set = set_draft_min},
    {.name = "position", .arg = "P",
     .help = "tensors: the position whose steps are written (from 0;\ndefault: the last), "
             "FIRST-LAST or all (each in turn)",
     .set = set_position},
    {.name = "layers", .arg = "LAYERS",
     .help = "tensors: only these layers' steps; patch: these layers'\nrows (FIRST-LAST, N or all; from 0)",
     .set = set_layers},
    {.name = "clean", .arg = "TEXT", .help = "patch: the clean prompt", .set = set_patch_clean},
    {.name = "corrupt", .arg = "TEXT",
     .help = "patch: the corrupted prompt (as many tokens as the clean)",
     .set = set_patch_corrupt},
    {.name = "answer", .arg = "WORD",
     .help = "patch: the clean answer, one token as it reads after a\nspace, or #ID (default: the clean run's top token)",
     .set = set_patch_answer},
    {.name = "wrong", .arg = "WORD",
     .help = "patch: the corrupted answer, the same way (default: the\ncorrupted run's top token)",
     .set = set_patch_wrong},
    {.name = "site", .arg = "SITE",
     .help = "patch: resid_pre (default), attn_out, mlp_out, head,\nhead_q, head_k, head_v or expert",
     .set = set_patch_site},
    {.name = "metric", .arg = "NAME",
     .help = "patch: logit-diff (default: normalised, 0 corrupted, 1\nclean) or kl (from the clean distribution)",
     .set = set_patch_metric},
    {.name = "json", .help = "patch, --compare-server, --replay --server: print one JSON object;\n--server -m generate: one JSON line per token (id, bytes,\nlog-probability, top)",
     .set = set_json},
    {.name = "replay", .arg = "TRACE",
     .help = "run MODEL (default: the trace's) over a trace's tokens\nand check that it makes the same choices",
     .set = set_replay},
    {.name = "compare",
     .help = "with --replay: compare MODEL's predictions with the\ntrace's (top-1 agreement, KL divergence)",
     .set = set_compare},
    {.name = "view", .arg = "TRACE",
     .help = "browse a trace in the TUI, read-only, with no model\n(Conversation, Tokens, Attention, the logit lens)",
     .set = set_view},
    {.name = "pieces", .help = "tokenize: print pieces instead of ids", .set = set_pieces},
    {.name = "server", .arg = "URL", .config = true,
     .help = "chat (TUI, -m chat), generate or score (-m perplexity) with the model\na server runs (llama-server, vLLM, ollama: docs/remote.md) instead of a\nlocal one; with --replay TRACE, compare the trace's tokens on both",
     .set = set_server},
    {.name = "compare-server", .arg = "URL",
     .help = "run MODEL and the server's model on the same tokens and compare\ntheir distributions per position (KL, top-1 agreement)",
     .set = set_compare_server},
    {.name = "server-model", .arg = "NAME", .config = true,
     .help = "the model to ask the server for (default: the first it serves)",
     .set = set_server_model},
    {.name = "api-key-env", .arg = "NAME", .config = true,
     .help = "read the server's API key from the environment variable NAME\n(sent as a bearer token, written nowhere)",
     .set = set_api_key_env},
    {.name = "server-timeout", .arg = "S", .config = true,
     .help = "fail when the server sends nothing for S seconds (default 300)",
     .set = set_server_timeout},
    {.name = "weights", .arg = "TYPE", .config = true,
     .help = "native (default), q8_0 or f32: compute the file's block types in place\n(Q4_0..Q6_K, MXFP4, Q8_0; others become Q8_0), or convert all to int8 / fp32",
     .set = set_weights},
    {.name = "kernels", .arg = "ISA", .config = true,
     .help = KERNELS_ISA_CHOICES " (default auto)",
     .set = set_kernels},
    {.name = "panels", .arg = "on|off", .config = true,
     .help = "on: GGUF Q8_0 weights also kept 16 rows side by side, which decode\n"
             "reads faster on Intel's AVX-512 VNNI CPUs (their memory twice), and Q4_K\n"
             "ones held 8 rows side by side on x86 (no memory more); off: the file's\n"
             "blocks alone (default: Q8_0 on Intel, Q4_K on x86)",
     .set = set_panels},
    {.name = "huge-pages", .arg = "auto|on|off", .config = true,
     .help = "on: the weights in memory of 2 MiB pages (the file read in, not\n"
             "mapped), which decode streams faster; off: the file mapped (default:\n"
             "auto, on where the kernel offers them and the file takes at most half\n"
             "the memory available)",
     .set = set_huge_pages},
    {.name = "kv-cache", .arg = "TYPE", .config = true,
     .help = "q8_0 or f32 (default: q8_0 with int8 weights, f32 with f32)", .set = set_kv_cache},
    {.name = "theme", .arg = "NAME", .config = true, .help = "tui colours: dark (default), light or mono",
     .set = set_theme},
    {.name = "no-color", .help = "tui: no colours, as --theme mono (also when NO_COLOR is set)",
     .set = set_no_color},
    {.name = "mouse", .config = true, .help = "tui: enable the mouse (wheel scrolls)", .set = set_mouse},
    {.name = "no-mouse", .help = "tui: no mouse (when the config file enables it)", .set = set_no_mouse},
    {.name = "history-size", .arg = "N", .config = true,
     .help = "input lines kept in the history (default 1000; 0 = none)", .set = set_history_size},
    {.name = "verbose", .config = true,
     .help = "say what loading did: format, shape, conversions,\ntokenizer", .set = set_verbose},
    {.name = "resume", .help = "chat/tui: reopen the newest saved chat, with its model,\nsettings and dialog",
     .set = set_resume},
    {.name = "autosave", .arg = "WHEN", .config = true,
     .help = "save chats under the state directory: interactive (the\nTUI, -m chat on a terminal; default), always, never",
     .set = set_autosave},
    {.name = "keep-chats", .arg = "N", .config = true,
     .help = "autosaved chats kept, the newest; older ones are removed\n(default 30; 0 = keep all)",
     .set = set_keep_chats},
    {.name = "config", .arg = "FILE", .path = true,
     .help = "read settings from FILE instead of the config file"},
    {.name = "no-config", .help = "read no config file"},
    {.name = "help", .short_name = 'h', .help = "show this help"},
    {.name = "version", .short_name = 'V', .help = "show the version"},
    {.name = NULL},
};

/* The option rows: own_rows with settings_table's rows in the place of its marker. */
enum { N_OPTIONS = sizeof own_rows / sizeof own_rows[0] - 2 + SETTINGS_COUNT };

const app_option *options_rows(void)
{
    static app_option rows[N_OPTIONS + 1];
    if (rows[0].name)
        return rows;
    int n = 0;
    for (const app_option *r = own_rows; r->name || r->settings; r++) {
        if (!r->settings) {
            rows[n++] = *r;
            continue;
        }
        for (const setting_info *st = settings_table; st->name; st++)
            rows[n++] = (app_option){.name = st->name, .short_name = st->short_name,
                                     .arg = st->arg, .config = true, .help = settings_help(st),
                                     .setting = st};
    }
    return rows;
}

/* Sets row's option in o to value: through its setter, or settings.c for a live
 * setting. Returns NULL or what is wrong, as app_option.set. */
static const char *option_set(const app_option *r, app_options *o, const char *value)
{
    return r->setting ? set_setting(o, r->setting, value) : r->set(o, value);
}

const app_option *options_find(const char *name)
{
    for (const app_option *r = options_rows(); r->name; r++)
        if (!strcmp(r->name, name))
            return r;
    return NULL;
}

/* --help's columns: the option, then its text from HELP_INDENT, lines at most HELP_WIDTH
 * columns (a terminal of 80). */
enum { HELP_INDENT = 26, HELP_WIDTH = 80 };

/* An option's help text from the column HELP_INDENT (where the cursor is), its words
 * wrapped to HELP_WIDTH columns (a newline in the text is a blank), then a newline. */
static void print_wrapped(FILE *f, const char *text)
{
    int col = HELP_INDENT;
    const char *p = text;
    bool first = true;
    while (*p) {
        while (*p == ' ' || *p == '\n')
            p++;
        size_t len = strcspn(p, " \n");
        if (!len)
            break;
        char word[128];
        snprintf(word, sizeof word, "%.*s", (int)(len < sizeof word ? len : sizeof word - 1), p);
        int w = textfmt_width(word);
        if (!first && col + 1 + w > HELP_WIDTH) {
            fprintf(f, "\n%*s", HELP_INDENT, "");
            col = HELP_INDENT;
            first = true;
        }
        col += fprintf(f, "%s%s", first ? "" : " ", word) - (int)strlen(word) + w;
        first = false;
        p += len;
    }
    fputc('\n', f);
}

void options_usage(FILE *f)
{
    fputs("usage: llmchat [OPTIONS] [MODEL]\n"
          "Chat with a local language model (Llama, Qwen, Gemma, Phi) and watch what it\n"
          "does.\n"
          "\n",
          f);
    for (const app_option *r = options_rows(); r->name; r++) {
        char left[64];
        int n;
        if (r->short_name)
            n = snprintf(left, sizeof left, "  -%c, --%s%s%s", r->short_name, r->name,
                         r->arg ? " " : "", r->arg ? r->arg : "");
        else
            n = snprintf(left, sizeof left, "      --%s%s%s", r->name, r->arg ? " " : "",
                         r->arg ? r->arg : "");
        fputs(left, f);
        if (n >= HELP_INDENT - 1)
            fprintf(f, "\n%*s", HELP_INDENT, "");
        else
            fprintf(f, "%*s", HELP_INDENT - n, "");
        print_wrapped(f, r->help);
    }
    fputs("\n"
          "MODEL is a model file (GGUF in F32, F16, BF16, Q8_0, Q4_0..Q5_1, Q2_K..Q6_K\n"
          "or MXFP4, or a llama2.c .bin), or the name of a model fetched with\n"
          "llmchat-fetch (llmchat-fetch --list). Without one: $LLMCHAT_MODEL, then the\n"
          "config file's model, then the bundled demo model.\n"
          "\n"
          "The config file ($XDG_CONFIG_HOME/llmchat/config, else ~/.config/llmchat/config)\n"
          "holds 'key = value' lines; options on the command line override it. Keys:\n",
          f);
    int col = 0;
    for (const app_option *r = options_rows(); r->name; r++) {
        if (!r->config)
            continue;
        int len = (int)strlen(r->name);
        if (col + 1 + len > 78) {
            fputc('\n', f);
            col = 0;
        }
        col += fprintf(f, " %s", r->name);
    }
    fputs("\n"
          "\n"
          "Exit status: 0 success, 1 runtime failure, 2 usage error.\n"
          "See llmchat(1) for the modes, the chat commands, the TUI keys and the files.\n",
          f);
}

/* ---- applying settings ---- */

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "llmchat: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nTry 'llmchat --help' for more information.\n");
    va_end(ap);
    return 2;
}

void options_default(app_options *o)
{
    memset(o, 0, sizeof *o);
    sampler_config_default(&o->sampler);
    o->steps = -1;
    o->draft_max = OPTIONS_DRAFT_MAX_DEFAULT;
    o->draft_min = OPTIONS_DRAFT_MIN_DEFAULT;
    o->weights = TENSOR_BLOCKS;
    o->isa = KERNELS_AUTO;
    o->kv_cache = TRANSFORMER_KV_AUTO;
    o->theme = THEME_DARK;
    o->history_size = CLI_HISTORY_DEFAULT;
    o->top_k_shown = 10;
    o->vector_first = o->vector_last = -1;
    o->position = o->position_last = -1;
    o->layer_first = o->layer_last = -1;
    o->keep_chats = OPTIONS_KEEP_CHATS_DEFAULT;
    o->server_timeout = 300;
}

static const char *keep(app_options *o, char *s)
{
    if (!s)
        return NULL;
    char **grown = realloc(o->owned, sizeof *grown * (size_t)(o->n_owned + 1));
    if (!grown) {
        free(s);
        return NULL;
    }
    o->owned = grown;
    o->owned[o->n_owned++] = s;
    return s;
}

const char *options_keep(app_options *o, char *s)
{
    return keep(o, s);
}

const char *options_shown_path(const char *path, char *buf, size_t size)
{
    const char *home = getenv("HOME");
    size_t n = home ? strlen(home) : 0;
    if (n > 1 && !strncmp(path, home, n) && path[n] == '/')
        snprintf(buf, size, "~%s", path + n);
    else
        snprintf(buf, size, "%s", path);
    return buf;
}

/* Levenshtein distance of two short strings, capped at 9. */
static int distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 30 || lb > 30)
        return 9;
    int d[31][31];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            d[i][j] = best;
        }
    return d[la][lb] > 9 ? 9 : d[la][lb];
}

/* The config key closest to an unknown one (a typo), or NULL. */
static const char *closest_key(const char *key)
{
    const char *best = NULL;
    int best_d = 3;
    for (const app_option *r = options_rows(); r->name; r++) {
        if (!r->config)
            continue;
        int d = distance(key, r->name);
        if (d < best_d) {
            best_d = d;
            best = r->name;
        }
    }
    return best;
}

/* The usage error for a long option getopt did not take: one that abbreviates several
 * ("--temp": --temperature, --template) names them; a typo names the closest. */
static int unknown_long_option(const char *arg)
{
    char name[64];
    size_t n = strcspn(arg + 2, "=");
    snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), arg + 2);
    const char *match[N_OPTIONS];
    int prefixed = 0;
    for (const app_option *r = options_rows(); r->name && strncmp(arg, "--", 2) == 0; r++)
        if (n > 0 && !strncmp(r->name, name, n))
            match[prefixed++] = r->name;
    if (prefixed > 1) {
        char list[256] = "";
        for (int i = 0; i < prefixed; i++) {
            size_t used = strlen(list);
            snprintf(list + used, sizeof list - used, "%s--%s",
                     i == 0 ? "" : i == prefixed - 1 ? " or " : ", ", match[i]);
        }
        return usage_error("option '--%s' is ambiguous: did you mean %s?", name, list);
    }
    const char *best = NULL;
    int best_d = 3;
    for (const app_option *r = options_rows(); r->name && strncmp(arg, "--", 2) == 0; r++) {
        int d = distance(name, r->name);
        if (d < best_d) {
            best_d = d;
            best = r->name;
        }
    }
    if (best)
        return usage_error("unknown option '%s' (did you mean '--%s'?)", arg, best);
    return usage_error("unknown option '%s'", arg);
}

/* A file name from the config file: "~/x" is $HOME/x (a string kept in o), anything
 * else stays as it is. NULL when out of memory. */
static const char *expand_home(app_options *o, const char *value)
{
    const char *home = getenv("HOME");
    if (value[0] != '~' || value[1] != '/' || !home || !*home)
        return value;
    size_t len = strlen(home) + strlen(value);
    char *full = malloc(len);
    if (!full)
        return NULL;
    snprintf(full, len, "%s%s", home, value + 1);
    return keep(o, full);
}

int options_apply_config(app_options *o, const config_file *cf, const char *shown, FILE *warn)
{
    int n_warn = 0;
    int ip = 0;
    for (int ie = 0; ie <= cf->n_entries; ie++) {
        /* problems and entries interleaved in line order */
        int line = ie < cf->n_entries ? cf->entries[ie].line : INT_MAX;
        for (; ip < cf->n_problems && cf->problems[ip].line < line; ip++, n_warn++)
            fprintf(warn, "llmchat: %s:%d: %s\n", shown, cf->problems[ip].line, cf->problems[ip].text);
        if (ie == cf->n_entries)
            break;
        const config_entry *en = &cf->entries[ie];
        const app_option *r = options_find(en->key);
        if (r && !r->config) {
            fprintf(warn, "llmchat: %s:%d: '%s' cannot be set in the config file (only --%s on the command line)\n",
                    shown, en->line, en->key, r->name);
            n_warn++;
            continue;
        }
        if (!r) {
            const char *near = closest_key(en->key);
            fprintf(warn, "llmchat: %s:%d: unknown key '%s'", shown, en->line, en->key);
            if (near)
                fprintf(warn, " (did you mean '%s'?)", near);
            fputc('\n', warn);
            n_warn++;
            continue;
        }
        const char *value = r->path ? expand_home(o, en->value) : en->value;
        if (!value) {
            fprintf(warn, "llmchat: %s:%d: out of memory\n", shown, en->line);
            n_warn++;
            continue;
        }
        o->config_line = en->line;
        const char *why = option_set(r, o, value);
        o->config_line = 0;
        if (why) {
            char shown_value[256];
            textfmt_escape_piece(en->value, strlen(en->value), false, shown_value, sizeof shown_value);
            fprintf(warn, "llmchat: %s:%d: %s %s, got '%s'\n", shown, en->line, r->name, why, shown_value);
            n_warn++;
        } else if (r->set == set_model) {
            o->model_source = MODEL_FROM_CONFIG;
            o->model_line = en->line;
        }
    }
    return n_warn;
}

/* Reads the config file (the default one, or --config FILE when explicit) into o.
 * Returns 0, or 1 when an explicit file cannot be read. */
static int read_config(app_options *o, const char *explicit_path)
{
    char buf[4096];
    const char *path = explicit_path ? explicit_path : config_default_path(buf, sizeof buf);
    if (!path)
        return 0;
    llm_err err;
    llm_status s = config_read(path, &o->config, &err);
    if (s == LLM_ERR_IO && errno == ENOENT && !explicit_path)
        return 0; /* no config file: the defaults stand */
    char shown[4096];
    options_shown_path(path, shown, sizeof shown);
    if (s != LLM_OK) {
        if (explicit_path) {
            fprintf(stderr, "llmchat: --config: %s\n", err.text);
            return 1;
        }
        fprintf(stderr, "llmchat: warning: %s; using the defaults\n", err.text);
        return 0;
    }
    o->config_path = strdup(path);
    options_apply_config(o, &o->config, shown, stderr);
    return 0;
}

static void apply_environment(app_options *o)
{
    const char *env_model = getenv("LLMCHAT_MODEL");
    if (env_model && *env_model) {
        o->model_path = env_model;
        o->model_source = MODEL_FROM_ENV;
    }
    const char *nc = getenv("NO_COLOR");
    if (nc && *nc)
        o->theme = THEME_MONO;
    /* the older name of --slow-motion; a bad value is ignored, as before */
    const char *delay = getenv("LLMCHAT_STEP_DELAY_MS");
    if (delay && *delay)
        set_setting(o, settings_find("slow-motion"), delay);
}

typedef struct {
    const app_option *row;
    const char *value;
} given_option;

/* What the command line says, collected before anything is applied (the config file
 * and the environment go first, the command line over them). */
typedef struct {
    given_option *given; /* the options to apply, in order (owned) */
    int n_given;
    const char *config_path; /* --config FILE */
    bool no_config;          /* --no-config */
    bool model_option;       /* --model was given */
} command_line;

/* getopt's tables, made from ours: a long-only option's value is 256 + its row. */
static void getopt_tables(struct option *longs, char *shorts)
{
    int ns = 0;
    shorts[ns++] = ':';
    const app_option *rows = options_rows();
    for (int i = 0; i < N_OPTIONS; i++) {
        const app_option *r = &rows[i];
        longs[i] = (struct option){r->name, r->arg ? required_argument : no_argument, NULL,
                                   r->short_name ? r->short_name : 256 + i};
        if (r->short_name) {
            shorts[ns++] = r->short_name;
            if (r->arg)
                shorts[ns++] = ':';
        }
    }
    longs[N_OPTIONS] = (struct option){NULL, 0, NULL, 0};
    shorts[ns] = '\0';
}

/* The row getopt_long's answer c stands for, NULL for an error. */
static const app_option *row_of(int c)
{
    if (c >= 256 && c < 256 + N_OPTIONS)
        return &options_rows()[c - 256];
    if (c != ':' && c != '?')
        for (const app_option *t = options_rows(); t->name; t++)
            if (t->short_name == c)
                return t;
    return NULL;
}

/* Did getopt_long's error come from a flag written with a value ("--json=1")? It
 * names the flag in optopt then: its row's code, or its short letter. */
static bool flag_given_value(const char *arg, int optopt_seen)
{
    const app_option *r = row_of(optopt_seen);
    if (!r || strncmp(arg, "--", 2) != 0 || !strchr(arg, '='))
        return false;
    size_t n = strcspn(arg + 2, "=");
    return n > 0 && !strncmp(r->name, arg + 2, n);
}

/* Step 1: collects the command line into cl; --help, --version and --config act at
 * once. Returns as options_parse. */
static int collect_command_line(int argc, char **argv, command_line *cl)
{
    struct option longs[N_OPTIONS + 1];
    char shorts[2 * N_OPTIONS + 3];
    getopt_tables(longs, shorts);
    cl->given = calloc((size_t)argc + 1, sizeof *cl->given);
    if (!cl->given) {
        fprintf(stderr, "llmchat: out of memory\n");
        return 1;
    }
    int c, rc = 0;
    opterr = 0;
    optind = 1;
    while (rc == 0 && (c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
        const app_option *r = row_of(c);
        if (!r) {
            /* a flag given a value first: BSD's getopt_long answers ':' for it */
            if (optopt && flag_given_value(argv[optind - 1], optopt))
                rc = usage_error("option '--%s' takes no value", row_of(optopt)->name);
            else if (c == ':')
                rc = usage_error("option '%s' needs a value", argv[optind - 1]);
            else if (optopt)
                rc = usage_error("unknown option '-%c'", optopt);
            else
                rc = unknown_long_option(argv[optind - 1]);
        } else if (!strcmp(r->name, "help")) {
            options_usage(stdout);
            rc = -1;
        } else if (!strcmp(r->name, "version")) {
            printf("llmchat %s\n", PACKAGE_VERSION);
            rc = -1;
        } else if (!strcmp(r->name, "config")) {
            cl->config_path = optarg;
        } else if (!strcmp(r->name, "no-config")) {
            cl->no_config = true;
        } else {
            cl->model_option |= r->set == set_model;
            cl->given[cl->n_given++] = (given_option){r, r->arg ? optarg : "yes"};
        }
    }
    if (rc == 0 && optind < argc - 1)
        rc = usage_error("unexpected argument '%s'", argv[optind + 1]);
    if (rc == 0 && cl->config_path && cl->no_config)
        rc = usage_error("give --config FILE or --no-config, not both");
    return rc;
}

/* Step 5: the options that only make sense together, the modes --replay and --view
 * imply, the seed when none was given, and the mode when -m was not given. model_given:
 * a model was named (--model or MODEL). Returns 0 or 2, as options_parse. */
static int settle(app_options *o, bool model_given)
{
    if (o->trace_attn && !o->trace_path)
        return usage_error("--trace-attn needs --trace FILE");
    if (o->trace_lens && !o->trace_path)
        return usage_error("--trace-lens needs --trace FILE");
    if (o->trace_tensors && !o->trace_path)
        return usage_error("--trace-tensors needs --trace FILE");
    bool speculates = o->mode == MODE_GENERATE || o->mode == MODE_CHAT || o->mode == MODE_TUI ||
                      (o->mode == MODE_AUTO && !o->replay_path && !o->view_path);
    if (o->lookup && !speculates)
        return usage_error("--lookup is for -m generate, -m chat and the TUI");
    if (o->draft_path && !speculates)
        return usage_error("--draft is for -m generate, -m chat and the TUI");
    if (o->draft_path && o->lookup)
        return usage_error("give --lookup or --draft FILE, not both");
    if (o->draft_bound_given && !o->lookup && !o->draft_path) /* given, even as the default */
        return usage_error("%s is for --lookup and --draft", o->draft_bound_given);
    if (o->draft_min > o->draft_max)
        return usage_error("--draft-min %d is more than --draft-max %d", o->draft_min,
                           o->draft_max);
    if (o->position >= 0 && o->mode != MODE_TENSORS)
        return usage_error("--position is for -m tensors");
    if (o->layer_first >= 0 && o->mode != MODE_TENSORS && o->mode != MODE_PATCH)
        return usage_error("--layers is for -m tensors and -m patch");
    bool patch_options = o->patch_clean || o->patch_corrupt || o->patch_answer ||
                         o->patch_wrong || o->patch_site || o->patch_kl;
    if (patch_options && o->mode != MODE_PATCH)
        return usage_error("--clean, --corrupt, --answer, --wrong, --site and --metric are for "
                           "-m patch");
    if (o->mode == MODE_PATCH && (!o->patch_clean || !o->patch_corrupt))
        return usage_error("-m patch needs --clean TEXT and --corrupt TEXT");
    if (o->mode == MODE_PATCH && (o->trace_attn || o->trace_lens || o->trace_tensors))
        return usage_error("-m patch traces its grid, not step records: drop --trace-attn, "
                           "--trace-lens and --trace-tensors");
    if (o->mode == MODE_PATCH && o->patch_kl && (o->patch_answer || o->patch_wrong))
        return usage_error("--answer and --wrong are for the logit difference, not --metric kl");
    if (o->replay_path && o->mode != MODE_AUTO)
        return usage_error("--replay is a mode of its own: drop -m");
    if (o->replay_path)
        o->mode = MODE_REPLAY;
    if (o->view_path && (o->mode != MODE_AUTO || o->replay_path))
        return usage_error("--view is a mode of its own: drop -m and --replay");
    if (o->view_path && model_given)
        return usage_error("--view needs no model: the trace holds what it shows");
    if (o->view_path)
        o->mode = MODE_VIEW;
    if (o->compare && !o->replay_path)
        return usage_error("--compare needs --replay TRACE");
    if (o->server_url && (model_given || o->replay_path) && !o->server_given)
        o->server_url = NULL; /* MODEL on the command line outranks the config's server, and
                                 a replay compares with a server only when asked to */
    if (o->compare_server) {
        if (o->server_url && o->server_given)
            return usage_error("--compare-server names the server: drop --server");
        if (o->mode != MODE_AUTO && o->mode != MODE_GENERATE && o->mode != MODE_TUI)
            return usage_error("--compare-server compares -i's continuation, or with -m tui the "
                               "chat's replies: drop -m");
        if (o->replay_path || o->view_path)
            return usage_error("--compare-server does not take --replay or --view");
        o->server_url = NULL;
        if (o->lookup || o->draft_path)
            return usage_error("--compare-server runs the model plainly: drop --lookup and "
                               "--draft");
        if (o->mode != MODE_TUI) /* the TUI checks each reply against the server */
            o->mode = MODE_COMPARE_SERVER;
    }
    if (o->server_url) {
        if (model_given && !o->replay_path)
            return usage_error("give MODEL or --server, not both (--compare-server URL compares "
                               "MODEL with the server's; --replay TRACE --server URL the trace's "
                               "model, or MODEL)");
        if (o->view_path)
            return usage_error("--server does not take --view: the trace holds what it shows");
        if (o->mode != MODE_GENERATE && o->mode != MODE_TUI && o->mode != MODE_CHAT &&
            o->mode != MODE_PERPLEXITY && o->mode != MODE_REPLAY && o->mode != MODE_AUTO)
            return usage_error("--server works in the TUI, -m chat, -m generate, -m perplexity "
                               "and --replay (and --compare-server with a MODEL)");
        if (o->trace_path && (o->mode == MODE_GENERATE || o->mode == MODE_PERPLEXITY ||
                              o->mode == MODE_REPLAY))
            return usage_error("a served model's trace is written by the TUI and -m chat: "
                               "--json gives each token's record");
        if (o->trace_attn || o->trace_lens || o->trace_tensors)
            return usage_error("a served model's trace has no attention, lens or tensors "
                               "(they need the weights)");
        if (o->lookup || o->draft_path)
            return usage_error("--lookup and --draft speed up the local model: drop --server");
        if (o->json && o->mode != MODE_GENERATE && o->mode != MODE_REPLAY)
            return usage_error("--json is for --server -m generate and --replay --server");
        if (o->compare && o->mode == MODE_REPLAY)
            return usage_error("--replay --server compares the local model with the server: "
                               "drop --compare (which compares it with the trace)");
    }
    if (o->json && o->mode != MODE_PATCH && o->mode != MODE_COMPARE_SERVER && !o->server_url)
        return usage_error("--json is for -m patch, --compare-server, --server -m generate and "
                           "--replay --server");
    if (o->prompt && o->file)
        return usage_error("give the input with -i or -f, not both");
    if (o->mode == MODE_TOKENIZE && o->trace_path)
        return usage_error("--trace records the model's steps, and -m tokenize runs none");
    if (o->pieces && o->mode != MODE_TOKENIZE)
        return usage_error("--pieces is for -m tokenize");
    if (!o->seed_given)
        o->sampler.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    if (o->mode == MODE_AUTO) {
        /* the TUI needs two terminals, and one that can draw (not TERM=dumb or unset) */
        const char *term = getenv("TERM");
        bool drawable = term && *term && strcmp(term, "dumb") != 0;
        o->mode = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO) && drawable ? MODE_TUI : MODE_CHAT;
    }
    return 0;
}

int options_parse(int argc, char **argv, app_options *o)
{
    options_default(o);
    /* 1. collect the command line, 2. the config file, 3. the environment, 4. the
     * command line over them, 5. what they mean together */
    command_line cl = {0};
    int rc = collect_command_line(argc, argv, &cl);
    if (rc == 0 && !cl.no_config)
        rc = read_config(o, cl.config_path);
    if (rc == 0)
        apply_environment(o);
    for (int i = 0; rc == 0 && i < cl.n_given; i++) {
        const char *why = option_set(cl.given[i].row, o, cl.given[i].value);
        if (why)
            rc = usage_error("--%s %s, got '%s'", cl.given[i].row->name, why, cl.given[i].value);
    }
    for (int i = 0; i < cl.n_given; i++) {
        const app_option *r = cl.given[i].row;
        o->server_given |= r->set == set_server;
        o->ctx_cli |= r->set == set_ctx;
        o->template_cli |= r->set == set_template;
        o->system_cli |= r->set == set_system;
        if (r->setting)
            o->settings_cli |= 1u << (r->setting - settings_table);
    }
    free(cl.given);
    if (rc != 0)
        return rc;
    if (optind < argc) {
        if (cl.model_option)
            return usage_error("give the model once: as MODEL or with --model, not both");
        if (set_model(o, argv[optind]))
            return usage_error("the MODEL argument is empty");
    }
    return settle(o, cl.model_option || optind < argc);
}

const char *options_origin(const app_options *o, const char *key, int line, char *buf,
                           size_t size)
{
    if (line <= 0 || !o->config_path) {
        snprintf(buf, size, "--%s", key);
        return buf;
    }
    char shown[4096];
    options_shown_path(o->config_path, shown, sizeof shown);
    snprintf(buf, size, "%s:%d: %s", shown, line, key);
    return buf;
}

void options_free(app_options *o)
{
    for (int i = 0; i < o->n_owned; i++)
        free(o->owned[i]);
    free(o->owned);
    o->owned = NULL;
    o->n_owned = 0;
    free(o->config_path);
    o->config_path = NULL;
    config_free(&o->config);
}
