/* load.c — opening what a session runs on (see load.h): the model, its tokenizer and
 * chat template, and --resume's saved chat; session_open (session.c) calls them in
 * order. Owns nothing it returns: the caller closes what it got. */
#include "load.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "autosave.h"
#include "chatfile.h"
#include "discover.h"
#include "gguf.h"
#include "huge_pages.h"
#include "progress.h"
#include "session.h"

static bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int load_tokenizer(const app_options *o, const model *m, tokenizer **out)
{
    llm_err err;
    int vocab = m->config.vocab_size;
    if (o->tokenizer_path) {
        if (tokenizer_open(o->tokenizer_path, vocab, out, &err) != LLM_OK) {
            if (o->tokenizer_resumed) /* a path the user did not type: say where it came from */
                fprintf(stderr, "llmchat: cannot open the tokenizer the saved chat %s names: %s "
                                "(-z FILE gives another)\n", o->resume_path, err.text);
            else if (o->tokenizer_line > 0) { /* nor one typed on this command line */
                char from[4200];
                fprintf(stderr, "llmchat: %s: cannot open the tokenizer: %s\n",
                        options_origin(o, "tokenizer", o->tokenizer_line, from, sizeof from),
                        err.text);
            } else
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
    fprintf(stderr, "llmchat: %s: %s, %s parameters: dim %d, hidden %d, %d layer%s, %d head%s "
            "(%d KV), vocab %d, context %d, RoPE base %g, RMS epsilon %g%s\n",
            m->path, m->format_name, llm_group_digits(params, sizeof params, m->n_params),
            c->dim, c->hidden_dim, c->n_layers, c->n_layers == 1 ? "" : "s", c->n_heads,
            c->n_heads == 1 ? "" : "s", c->n_kv_heads, c->vocab_size,
            c->seq_len, c->rope_base, c->rms_eps,
            c->shared_classifier ? ", classifier shared with the embedding" : "");
    fprintf(stderr, "llmchat: weights: %s\n", m->load_summary);
    fprintf(stderr, "llmchat: memory: %s; %.0f MB of this process in 2 MiB pages\n",
            m->file_read     ? "the file read into memory that asked for 2 MiB pages"
            : m->huge_pages ? "the file mapped, what loading made asked for 2 MiB pages"
                            : "the file mapped (4 KiB pages; --huge-pages)",
            (double)huge_pages_backing(NULL, SIZE_MAX) / 1e6);
}

/* VmRSS and VmHWM of /proc/self/status. */
void load_describe_memory(const model *m)
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

bool load_set_owned(app_options *o, const char **field, const char *s)
{
    const char *copy = options_keep(o, strdup(s));
    if (!copy) {
        fprintf(stderr, "llmchat: out of memory\n");
        return false;
    }
    *field = copy;
    return true;
}

/* The saved chat's settings into o, but those the command line gave, which it names
 * when they differ from the chat's ("temperature 0 (saved: 0.7)"). */
static void resume_settings(app_options *o, const chatfile *cf)
{
    live_settings now = {.sampler = o->sampler, .steps = o->steps,
                         .slow_motion_ms = o->slow_motion_ms};
    live_settings saved = now;
    chatfile_settings_onto(cf, &saved, 0);
    unsigned set = chatfile_settings_onto(cf, &now, o->settings_cli);
    o->sampler = now.sampler;
    o->steps = now.steps;
    char kept[512];
    size_t n = 0;
    kept[0] = '\0';
    for (const setting_info *row = settings_table; row->name; row++) {
        unsigned bit = 1u << (row - settings_table);
        o->seed_given |= (set & bit) && row->type == SETTING_SEED;
        char a[32], b[32];
        if (!(o->settings_cli & bit) || !(cf->settings_held & bit) ||
            !strcmp(settings_value_text(row, &now, a, sizeof a),
                    settings_value_text(row, &saved, b, sizeof b)) ||
            n >= sizeof kept)
            continue;
        n += (size_t)snprintf(kept + n, sizeof kept - n, "%s%s %s (saved: %s)", n ? ", " : "",
                              row->name, a, b);
    }
    if (*kept)
        fprintf(stderr, "llmchat: --resume: from the command line: %s\n", kept);
}

int load_resume(app_options *o)
{
    char path[4096], skipped[600];
    if (o->mode != MODE_AUTO && o->mode != MODE_CHAT && o->mode != MODE_TUI) {
        fprintf(stderr, "llmchat: --resume works in the chat and tui modes\n");
        return 2;
    }
    bool found = autosave_latest(path, sizeof path, skipped, sizeof skipped);
    if (*skipped) /* a newer chat that cannot be read is not passed over in silence */
        fprintf(stderr, "llmchat: --resume: the newest saved chat cannot be read (%s)%s\n",
                skipped, found ? "; resuming the newest that can" : "");
    if (!found) {
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
    /* a served chat goes on with its server, unless the command line names a model or
     * a server; a local one outranks the config's server */
    bool resumed_server = o->model_source != MODEL_FROM_ARGUMENT && !o->server_given && cf.server;
    if (resumed_model && !o->server_given)
        o->server_url = NULL;
    if (resumed_server &&
        (!load_set_owned(o, &o->server_url, cf.server) ||
         (!o->server_model && cf.server_model && !load_set_owned(o, &o->server_model, cf.server_model)))) {
        chatfile_clear(&cf);
        return 1;
    }
    o->tokenizer_resumed = !o->tokenizer_path && cf.tokenizer;
    if (!load_set_owned(o, &o->resume_path, path) ||
        (resumed_model && !load_set_owned(o, &o->model_path, cf.model)) ||
        (o->tokenizer_resumed && !load_set_owned(o, &o->tokenizer_path, cf.tokenizer))) {
        chatfile_clear(&cf);
        return 1;
    }
    if (resumed_model)
        o->model_source = MODEL_FROM_RESUMED;
    /* the command line over the saved chat over the config file */
    if (!o->ctx_cli && cf.ctx > 0)
        o->ctx = cf.ctx;
    resume_settings(o, &cf);
    if (!o->template_cli && cf.template_name) {
        template_kind kind;
        if (template_kind_parse(cf.template_name, &kind))
            o->template_name = template_kind_name(kind); /* a static string */
    }
    chatfile_clear(&cf);
    return 0;
}

int load_template(const app_options *o, const model *m, const tokenizer *tok,
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
    template_follow_jinja(*out, jinja);
    if (o->template_name && !strcmp(o->template_name, "llama3.2"))
        template_date_today(*out); /* Llama 3.2's template, by its name */
    return 0;
}

/* --panels into mo: as given (or as a replayed trace says), else this CPU's defaults. */
static void panels_from_options(model_options *mo, const app_options *o)
{
    mo->no_panels = o->panels_given ? o->no_panels : !kernels_panels_by_default();
    mo->k4_panels = o->panels_given ? o->k4_panels : kernels_k4_panels_by_default();
}

int load_model(app_options *o, model **out)
{
    model_options mo;
    model_options_default(&mo);
    mo.weights = o->weights;
    panels_from_options(&mo, o);
    mo.huge_pages = o->huge_pages;
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
        char from[4200];
        fprintf(stderr, "llmchat: %s %d is larger than the model's context (%d)\n",
                options_origin(o, "ctx", o->ctx_line, from, sizeof from), o->ctx, m->config.seq_len);
        return 2;
    }
    return 0;
}

int load_draft(const app_options *o, const tokenizer *tok, model **out)
{
    model_options mo;
    model_options_default(&mo);
    mo.weights = o->weights;
    panels_from_options(&mo, o);
    mo.huge_pages = o->huge_pages;
    llm_err err;
    if (model_open(o->draft_path, &mo, out, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: --draft: %s\n", err.text);
        return 1;
    }
    const model *d = *out;
    int vocab = tokenizer_vocab_size(tok);
    if (d->config.vocab_size != vocab) {
        fprintf(stderr, "llmchat: --draft: %s has a vocabulary of %d tokens, the model's has %d: "
                        "a draft model must share the model's vocabulary\n",
                o->draft_path, d->config.vocab_size, vocab);
        return 1;
    }
    if (d->meta && gguf_find_key(d->meta, "tokenizer.ggml.model") >= 0) {
        tokenizer *own;
        if (tokenizer_from_gguf(d->meta, o->draft_path, vocab, &own, &err) != LLM_OK) {
            fprintf(stderr, "llmchat: --draft: %s\n", err.text);
            return 1;
        }
        int differ = -1;
        for (int id = 0; id < vocab && differ < 0; id++)
            if (!tokenizer_is_control(tok, id) && !tokenizer_is_control(own, id) &&
                strcmp(tokenizer_piece(own, id), tokenizer_piece(tok, id)) != 0)
                differ = id; /* control tokens are spelt differently by the formats */
        tokenizer_close(own);
        if (differ >= 0) {
            fprintf(stderr, "llmchat: --draft: %s names token %d otherwise than the model's "
                            "vocabulary: a draft model must share the model's vocabulary\n",
                    o->draft_path, differ);
            return 1;
        }
    }
    if (o->verbose)
        fprintf(stderr, "llmchat: draft model: %s (%d layers, dim %d, %s weights)\n",
                o->draft_path, d->config.n_layers, d->config.dim, model_weights_name(d));
    return 0;
}
