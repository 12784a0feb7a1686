/* main.c — llmchat's entry point: parses options (config file and environment
 * included), finds the model (discover.c), opens it and its tokenizer, and hands
 * them to the front end of the chosen mode. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "chatfile.h"
#include "cpus.h"
#include "cli.h"
#include "session.h"
#include "discover.h"
#include "options.h"
#include "progress.h"
#include "autosave.h"
#include "gguf.h"
#include "model.h"
#include "template.h"
#include "kernels.h"
#include "tokenizer.h"
#include "trace_read.h"
#include "tui/tui.h"

static bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Finds the tokenizer for a model: -z when given, else the one embedded in a GGUF
 * model, else tokenizer.bin or tok<vocab>.bin beside the model, then in the data
 * directory's models/; the first whose vocabulary matches. */
static int open_tokenizer(const app_options *o, const model *m, tokenizer **out)
{
    llm_err err;
    int vocab = m->config.vocab_size;
    if (o->tokenizer_path) {
        if (tokenizer_open(o->tokenizer_path, vocab, out, &err) != LLM_OK) {
            fprintf(stderr, "llmchat: %s\n", err.text);
            return 1;
        }
        if (o->verbose)
            fprintf(stderr, "llmchat: tokenizer: %s\n", o->tokenizer_path);
        return 0;
    }
    if (m->meta && gguf_find_key(m->meta, "tokenizer.ggml.model") >= 0) {
        if (tokenizer_from_gguf(m->meta, o->model_path, vocab, out, &err) != LLM_OK) {
            fprintf(stderr, "llmchat: %s\n", err.text);
            return 1;
        }
        if (o->verbose)
            fprintf(stderr, "llmchat: tokenizer: the model's own (%d tokens)\n", vocab);
        return 0;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", o->model_path);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[1] = '\0';
    else
        strcpy(dir, "./");
    char data_models[4200];
    snprintf(data_models, sizeof data_models, "%s/models", discover_data_dir());
    const char *dirs[] = {dir, data_models};
    char tried[4][4200];
    int n_tried = 0;
    for (int d = 0; d < 2; d++) {
        char names[2][64];
        snprintf(names[0], sizeof names[0], "tokenizer.bin");
        snprintf(names[1], sizeof names[1], "tok%d.bin", vocab);
        for (int i = 0; i < 2; i++) {
            char path[4200];
            snprintf(path, sizeof path, "%s%s%s", dirs[d],
                     dirs[d][strlen(dirs[d]) - 1] == '/' ? "" : "/", names[i]);
            if (!file_exists(path))
                continue;
            snprintf(tried[n_tried++], sizeof tried[0], "%s", path);
            if (tokenizer_open(path, vocab, out, &err) == LLM_OK) {
                if (o->verbose)
                    fprintf(stderr, "llmchat: tokenizer: %s\n", path);
                return 0;
            }
        }
    }
    fprintf(stderr, "llmchat: no tokenizer with %d tokens found for %s", vocab, o->model_path);
    for (int i = 0; i < n_tried; i++)
        fprintf(stderr, "%s%s", i == 0 ? " (tried " : ", ", tried[i]);
    fprintf(stderr, "%s; give one with -z FILE\n", n_tried ? ")" : "");
    return 1;
}

/* --verbose: what the file is and what loading made of it. */
static void describe_model(const model *m)
{
    const model_config *c = &m->config;
    char params[32];
    fprintf(stderr, "llmchat: %s: %s, %s parameters: dim %d, hidden %d, %d layers, %d heads "
            "(%d KV), vocab %d, context %d, RoPE base %g, RMS epsilon %g%s\n",
            m->path, m->format_name, llm_group_digits(params, sizeof params, m->n_params),
            c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads, c->vocab_size,
            c->seq_len, c->rope_base, c->rms_eps,
            c->shared_classifier ? ", classifier shared with the embedding" : "");
    fprintf(stderr, "llmchat: weights: %s\n", m->load_summary);
}

/* --verbose, at the end: resident memory now and at its peak (VmRSS, VmHWM of
 * /proc/self/status; nothing where there is no /proc), beside the model file. */
static void describe_memory(const model *m)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return;
    char line[256];
    long rss = -1, hwm = -1;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "VmRSS:", 6))
            rss = strtol(line + 6, NULL, 10);
        else if (!strncmp(line, "VmHWM:", 6))
            hwm = strtol(line + 6, NULL, 10);
    }
    fclose(f);
    if (rss >= 0 && hwm >= 0)
        fprintf(stderr, "llmchat: resident memory: %.1f MB, peak %.1f MB (VmRSS, VmHWM; the model "
                "file is %.1f MB)\n", rss * 1024 / 1e6, hwm * 1024 / 1e6, m->file_bytes / 1e6);
}

/* Sets *field to a copy of s that o owns; false, saying so, when memory runs out. */
static bool set_owned(app_options *o, const char **field, const char *s)
{
    const char *copy = options_keep(o, strdup(s));
    if (!copy) {
        fprintf(stderr, "llmchat: out of memory\n");
        return false;
    }
    *field = copy;
    return true;
}

/* --resume: finds the newest saved chat and takes from it what the command line did
 * not give: the model (unless MODEL was named), the tokenizer (unless -z), the context
 * (unless -c), the step limit (unless -n), and the sampler settings. The front end
 * then reads the dialog from o->resume_path. The paths are o's (options_keep). */
static int prepare_resume(app_options *o)
{
    char path[4096];
    if (o->mode != MODE_AUTO && o->mode != MODE_CHAT && o->mode != MODE_TUI) {
        fprintf(stderr, "llmchat: --resume works in the chat and tui modes\n");
        return 2;
    }
    if (!autosave_latest(path, sizeof path)) {
        char *dir = session_state_file("chats/");
        fprintf(stderr, "llmchat: --resume: no saved chat in %s\n", dir ? dir : "$XDG_STATE_HOME/llmchat/chats");
        free(dir);
        return 1;
    }
    chatfile cf;
    llm_err err;
    if (chatfile_read(path, &cf, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: --resume: %s\n", err.text);
        return 1;
    }
    bool resumed_model = o->model_source != MODEL_FROM_ARGUMENT && cf.model;
    if (!set_owned(o, &o->resume_path, path) ||
        (resumed_model && !set_owned(o, &o->model_path, cf.model)) ||
        (!o->tokenizer_path && cf.tokenizer && !set_owned(o, &o->tokenizer_path, cf.tokenizer))) {
        chatfile_clear(&cf);
        return 1;
    }
    if (resumed_model)
        o->model_source = MODEL_FROM_RESUMED;
    if (o->ctx == 0 && cf.ctx > 0)
        o->ctx = cf.ctx;
    if (o->steps < 0 && cf.steps > 0)
        o->steps = cf.steps;
    o->sampler = cf.sampler;
    o->seed_given = true;
    if (!o->template_name && cf.template_name) {
        template_kind kind;
        if (template_kind_parse(cf.template_name, &kind))
            o->template_name = template_kind_name(kind); /* a static string */
    }
    chatfile_clear(&cf);
    return 0;
}

/* The chat template: --template, else the one the model's tokenizer.chat_template
 * renders, else llama2. note receives what was chosen and why, for the TUI's first
 * notice, the REPL's banner and --verbose. */
static int choose_template(const app_options *o, const model *m, const tokenizer *tok,
                           chat_template **out, char *note, size_t size)
{
    const char *jinja = m->meta ? gguf_get_string(m->meta, "tokenizer.chat_template", NULL) : NULL;
    template_kind kind;
    template_choose(o->template_name, jinja, &kind, note, size); /* the name was checked */
    llm_err err;
    if (template_new(kind, tok, out, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        return 1;
    }
    return 0;
}

/* The thread count: -T (or the config's `threads`), else the CPUs this process may run
 * on, never more. More than those is allowed and said: threads then take turns on the
 * CPUs. `said` receives that sentence (empty when not oversubscribed) for the TUI's and
 * the REPL's first notice; other modes print it to stderr. */
static void choose_threads(const app_options *o, char *said, size_t size)
{
    int cpus = cpus_usable(), over = 0;
    int n = cpus_threads(o->threads, cpus, &over);
    said[0] = '\0';
#ifdef _OPENMP
    omp_set_num_threads(n);
#else
    n = 1;
    over = 0;
#endif
    if (over)
        snprintf(said, size, "-T %d oversubscribes: more threads than the %d CPU%s this "
                 "process may run on, so they take turns (slower)", n, cpus, cpus == 1 ? "" : "s");
    if (over && o->mode != MODE_TUI)
        fprintf(stderr, "llmchat: %s\n", said);
    if (o->verbose)
        fprintf(stderr, "llmchat: %d thread%s (%d CPU%s this process may run on)\n", n,
                n == 1 ? "" : "s", cpus, cpus == 1 ? "" : "s");
}

/* -m tokenize with a tokenizer (-z, or the bundled one when no model is named
 * anywhere) and no MODEL on the command line needs no model. True when that is the
 * case: the tokenizer ran and *rc is its status. */
static bool tokenize_alone(app_options *o, int *rc)
{
    if (o->mode == MODE_TOKENIZE && !o->tokenizer_path && o->model_source == MODEL_FROM_NONE) {
        char bundled_tok[4200];
        snprintf(bundled_tok, sizeof bundled_tok, "%s/models/%s", discover_data_dir(), DISCOVER_BUNDLED_TOKENIZER);
        if (!set_owned(o, &o->tokenizer_path, bundled_tok)) {
            *rc = 1;
            return true;
        }
    }
    if (o->mode != MODE_TOKENIZE || !o->tokenizer_path || o->model_source == MODEL_FROM_ARGUMENT)
        return false;
    tokenizer *tok;
    llm_err err;
    if (tokenizer_open(o->tokenizer_path, 0, &tok, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        *rc = 1;
        return true;
    }
    *rc = cli_tokenize(o, tok);
    tokenizer_close(tok);
    return true;
}

/* What run opens for a front end; each NULL until opened, freed by unload. */
typedef struct {
    trace_reader *replay; /* --replay's trace */
    model *m;
    tokenizer *tok;
    chat_template *tmpl;
} loaded;

static void unload(loaded *l)
{
    template_free(l->tmpl);
    tokenizer_close(l->tok);
    model_close(l->m);
    trace_reader_free(l->replay);
}

/* Opens the model found at o->model_path (the progress line on a terminal) and fits
 * --ctx to it. Returns 0, or the exit status after saying why. */
static int open_model(app_options *o, model **out)
{
    model_options mo;
    model_options_default(&mo);
    mo.weights = o->weights;
    if (isatty(STDERR_FILENO)) { /* a log gets the --verbose summary instead */
        mo.progress = progress_show;
        mo.progress_user = (void *)o->model_path;
    }
    llm_err err;
    if (model_open(o->model_path, &mo, out, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        return 1;
    }
    const model *m = *out;
    if (o->verbose)
        describe_model(m);
    if (o->resume && o->ctx > m->config.seq_len)
        o->ctx = m->config.seq_len; /* the saved chat's context, on a model with less */
    if (o->ctx > m->config.seq_len) {
        fprintf(stderr, "llmchat: --ctx %d is larger than the model's context (%d)\n", o->ctx,
                m->config.seq_len);
        return 2;
    }
    return 0;
}

/* The line that says which model runs (and in the TUI and the REPL, with which
 * template and threads), into note; the fallback to the bundled model is told on
 * stderr where no banner shows it. */
static void model_note(app_options *o, const model *m, const char *tnote, const char *threads_said,
                       char *note, size_t size)
{
    discover_model_note(o, m, note, size);
    if (o->mode == MODE_CHAT || o->mode == MODE_TUI)
        snprintf(note + strlen(note), size - strlen(note), "; %s", tnote);
    if (o->mode == MODE_TUI && threads_said[0])
        snprintf(note + strlen(note), size - strlen(note), "; %s", threads_said);
    o->model_note = note;
    /* the TUI and the REPL's banner show the note; elsewhere only the fallback is told */
    bool repl = o->mode == MODE_CHAT && isatty(STDIN_FILENO);
    if (o->model_source == MODEL_FROM_BUNDLED && o->mode != MODE_TUI && !repl)
        fprintf(stderr, "llmchat: no model given: %s\n", note);
}

/* Finds and opens what the mode needs: --replay's trace, the model, its tokenizer and
 * chat template. Returns 0, or the exit status after saying why (l holds what was
 * opened). */
static int load(app_options *o, loaded *l, char *tnote, size_t tnote_size)
{
    int rc;
    if (o->resume && (rc = prepare_resume(o)) != 0)
        return rc;
    if (o->mode == MODE_REPLAY && (rc = cli_replay_open(o, &l->replay)) != 0)
        return rc;
    char found[4200];
    if ((rc = discover_model(o, found, sizeof found)) != 0)
        return rc;
    if (o->model_path == found && !set_owned(o, &o->model_path, found)) /* o outlives found */
        return 1;
    if ((rc = open_model(o, &l->m)) != 0 || (rc = open_tokenizer(o, l->m, &l->tok)) != 0 ||
        (rc = choose_template(o, l->m, l->tok, &l->tmpl, tnote, tnote_size)) != 0)
        return rc;
    o->chat_template = l->tmpl;
    if (o->verbose)
        fprintf(stderr, "llmchat: %s\n", tnote);
    return 0;
}

static int run(app_options *o)
{
    kernels_init(o->isa);
    char threads_said[160];
    choose_threads(o, threads_said, sizeof threads_said);
    int rc;
    if (tokenize_alone(o, &rc))
        return rc;
    if (o->mode == MODE_VIEW) /* no model: the trace holds what is shown */
        return tui_view(o);
    loaded l = {0};
    char tnote[256], note[4600];
    if ((rc = load(o, &l, tnote, sizeof tnote)) != 0) {
        unload(&l);
        return rc;
    }
    model_note(o, l.m, tnote, threads_said, note, sizeof note);
    switch (o->mode) {
    case MODE_TUI: rc = tui_run(o, l.m, l.tok); break;
    case MODE_GENERATE: rc = cli_generate(o, l.m, l.tok); break;
    case MODE_TOKENIZE: rc = cli_tokenize(o, l.tok); break;
    case MODE_PERPLEXITY: rc = cli_perplexity(o, l.m, l.tok); break;
    case MODE_REPLAY: rc = cli_replay(o, l.m, l.tok, l.replay); break;
    case MODE_CHAT:
    default: rc = cli_repl(o, l.m, l.tok); break;
    }
    if (o->verbose)
        describe_memory(l.m);
    unload(&l);
    return rc;
}

int main(int argc, char **argv)
{
    app_options o;
    int rc = options_parse(argc, argv, &o);
    if (rc == 0)
        rc = run(&o);
    options_free(&o);
    return rc < 0 ? 0 : rc;
}
