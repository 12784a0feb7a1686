/* session.c — the one front-end setup (see session.h for its order): opens what a
 * mode needs, closes it again, and what the front ends share while it runs (the live
 * settings, autosave, quitting on a signal, the input text, state files).
 *
 * Owns the session's objects: the model, tokenizer, template, --replay's trace, the
 * engine, the chat, the --trace writer and the autosave file. The files a session
 * reads are opened by load.c; which model is discover.c's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "session.h"
#include "command.h"
#include "cpus.h"
#include "discover.h"
#include "draft.h"
#include "lookup.h"
#include "input_file.h"
#include "output_file.h"
#include "kernels.h"
#include "load.h"
#include "signals.h"
#include "trace.h"
#include "trace_read.h"
#include "vector_files.h"
#include "xdg.h"

/* ---- the steps of session_open ---- */

/* 2. The thread count: -T (or the config's `threads`), else the CPUs this process may
 * run on, never more. More than those is allowed and said: threads then take turns on
 * the CPUs. The TUI says it in its first notice; other modes on stderr. */
static void open_threads(session *s)
{
    const app_options *o = s->o;
    int cpus = cpus_usable(), over = 0;
    int n = cpus_threads(o->threads, cpus, &over);
#ifdef _OPENMP
    omp_set_num_threads(n);
#else
    n = 1;
    over = 0;
#endif
    if (over)
        snprintf(s->threads_said, sizeof s->threads_said, "-T %d oversubscribes: more threads "
                 "than the %d CPU%s this process may run on, so they take turns (slower)", n,
                 cpus, cpus == 1 ? "" : "s");
    if (over && o->mode != MODE_TUI)
        fprintf(stderr, "llmchat: %s\n", s->threads_said);
    if (o->verbose) {
        fprintf(stderr, "llmchat: %d thread%s (%d CPU%s this process may run on)\n", n,
                n == 1 ? "" : "s", cpus, cpus == 1 ? "" : "s");
        fprintf(stderr, "llmchat: kernels: %s (%s)\n", s->kernels,
                o->isa == KERNELS_AUTO ? "the best this CPU and build have; --kernels chooses"
                                       : "chosen with --kernels");
    }
}

/* 5. The note that says which model runs (and in the TUI and the REPL, with which
 * template and threads); the fallback to the bundled model is told on stderr where no
 * banner shows it. */
static void make_note(session *s, const char *template_note)
{
    const app_options *o = s->o;
    size_t size = sizeof s->note;
    discover_model_note(o, s->m, s->note, size);
    if (o->mode == MODE_CHAT || o->mode == MODE_TUI)
        snprintf(s->note + strlen(s->note), size - strlen(s->note), "; %s", template_note);
    if (o->mode == MODE_TUI && s->threads_said[0])
        snprintf(s->note + strlen(s->note), size - strlen(s->note), "; %s", s->threads_said);
    bool repl = o->mode == MODE_CHAT && isatty(STDIN_FILENO);
    if (o->model_source == MODEL_FROM_BUNDLED && o->mode != MODE_TUI && !repl)
        fprintf(stderr, "llmchat: no model given: %s\n", s->note);
}

/* 3-5. --resume, what the mode reads first, the model, its tokenizer and template. */
static int open_model(session *s)
{
    app_options *o = s->o;
    int rc;
    if (o->resume && !o->resume_path && (rc = load_resume(o)) != 0)
        return rc;
    if (s->needs->prepare && (rc = s->needs->prepare(o, &s->replay)) != 0)
        return rc;
    if (s->needs->prepare) /* a replay may run on the kernels its trace names */
        s->kernels = kernels_isa_name(kernels_init(o->isa));
    char found[4200], template_note[256];
    if ((rc = discover_model(o, found, sizeof found)) != 0)
        return rc;
    if (o->model_path == found && !load_set_owned(o, &o->model_path, found)) /* o outlives found */
        return 1;
    if ((rc = load_model(o, &s->m)) != 0 ||
        (rc = load_tokenizer(o, s->m, &s->tok)) != 0 ||
        (rc = load_template(o, s->m, s->tok, &s->tmpl, template_note, sizeof template_note)) != 0)
        return rc;
    if (o->verbose)
        fprintf(stderr, "llmchat: %s\n", template_note);
    make_note(s, template_note);
    return 0;
}

/* 7. The engine, with what the mode needs recorded, and the control vectors. */
static int open_engine(session *s)
{
    const app_options *o = s->o;
    const session_needs *n = s->needs;
    engine_options eo;
    engine_options_default(&eo);
    int traced_top_n = eo.top_n; /* a trace writes the default number of candidates */
    eo.ctx_len = o->ctx;
    if (o->attention_mib > 0)
        eo.attention_budget = (size_t)o->attention_mib << 20;
    eo.kv_cache = o->kv_cache;
    eo.sampler = o->sampler;
    eo.guess_min = o->draft_min; /* the guesses a step adapt above it */
    eo.top_n = o->trace_path && n->top_n < traced_top_n ? traced_top_n : n->top_n;
    eo.capture_attention = n->attention || o->trace_attn;
    /* a trace writes prompt positions' candidates as they finish; without one, the
     * engine computes them when a position is looked at (engine_record) */
    eo.record_prompt = n->record_prompt || o->trace_path != NULL;
    eo.record_lens = o->trace_lens;
    eo.record_tensors = o->trace_tensors;
    if (o->trace_tensors && o->trace_tensor_first >= 0 && o->trace_tensor_last >= s->m->config.n_layers) {
        char span[32];
        snprintf(span, sizeof span, o->trace_tensor_first == o->trace_tensor_last ? "%d" : "%d-%d",
                 o->trace_tensor_first, o->trace_tensor_last);
        fprintf(stderr, "llmchat: --trace-tensors %s: the model has layers 0-%d\n", span,
                s->m->config.n_layers - 1);
        return 2;
    }
    eo.tensor_first = o->trace_tensor_first < 0 ? 0 : o->trace_tensor_first;
    eo.tensor_last = o->trace_tensor_first < 0 ? s->m->config.n_layers - 1 : o->trace_tensor_last;
    llm_err err;
    if (engine_new(s->m, s->tok, &eo, &s->e, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        return 1;
    }
    steering *st = engine_steering(s->e);
    char path[4096 + 256], from[4400]; /* from: the option, or the config file's line */
    for (int i = 0; i < o->n_vectors; i++) {
        vector_files_find(o->vectors[i].path, path, sizeof path); /* a bare name: made here */
        options_origin(o, "control-vector", o->vectors[i].line, from, sizeof from);
        if (steering_load(st, path, NULL, o->vectors[i].scale, &err) != LLM_OK) {
            fprintf(stderr, "llmchat: %s: %s\n", from, err.text);
            return 1;
        }
        if (*steering_notice(st))
            fprintf(stderr, "llmchat: %s: %s\n", from, steering_notice(st));
    }
    if (o->vector_first >= 0 && steering_layers(st, o->vector_first, o->vector_last, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s: %s\n",
                options_origin(o, "control-vector-layers", o->vector_layers_line, from, sizeof from),
                err.text);
        return 2;
    }
    const model_config *c = &s->m->config;
    for (int i = 0; i < o->n_knocks; i++) {
        int l = o->knocks[i].layer, h = o->knocks[i].head;
        options_origin(o, "knock-out", o->knocks[i].line, from, sizeof from);
        if (l >= c->n_layers || h >= model_layer_heads(s->m, l)) {
            fprintf(stderr, "llmchat: %s %d:%d: the model has layers 0-%d and heads "
                            "0-%d (numbered from 0)\n", from, l, h, c->n_layers - 1,
                    (l < c->n_layers ? model_layer_heads(s->m, l) : c->n_heads) - 1);
            return 2;
        }
        llm_status ks = o->knocks[i].reset ? steering_knock_out_reset(st, l, h, &err)
                                           : steering_knock_out(st, l, h, true, &err);
        if (ks != LLM_OK) {
            fprintf(stderr, "llmchat: %s %d:%d%s: %s\n", from, l, h,
                    o->knocks[i].reset ? ":reset" : "", err.text);
            return ks == LLM_ERR_ARG ? 2 : 1;
        }
    }
    for (int i = 0; i < o->n_expert_knocks; i++) {
        int l = o->expert_knocks[i].layer, x = o->expert_knocks[i].expert;
        if (steering_knock_out_expert(st, l, x, true, &err) != LLM_OK) {
            fprintf(stderr, "llmchat: %s %d:%d: %s\n",
                    options_origin(o, "knock-out-expert", o->expert_knocks[i].line, from, sizeof from),
                    l, x, err.text);
            return 2;
        }
    }
    for (int i = 0; i < o->n_expert_forces; i++) {
        int l = o->expert_forces[i].layer, x = o->expert_forces[i].expert;
        /* one a layer: a later one at the layer replaces this one, which is never set
         * (an expert knocked out and then replaced is no conflict) */
        bool replaced = false;
        int before = -1; /* the last one at the layer before this one */
        for (int j = 0; j < o->n_expert_forces; j++) {
            if (o->expert_forces[j].layer != l || j == i)
                continue;
            if (j > i)
                replaced = true;
            else
                before = j;
        }
        if (replaced)
            continue;
        if (before >= 0 && o->expert_forces[before].expert != x)
            fprintf(stderr, "llmchat: %s %d:%d: expert %d of layer %d is forced instead of "
                            "expert %d (one expert a layer)\n",
                    options_origin(o, "force-expert", o->expert_forces[i].line, from, sizeof from),
                    l, x, x, l, o->expert_forces[before].expert);
        options_origin(o, "force-expert", o->expert_forces[i].line, from, sizeof from);
        if (steering_force_expert(st, l, x, &err) != LLM_OK) {
            fprintf(stderr, "llmchat: %s %d:%d: %s\n", from, l, x, err.text);
            return 2;
        }
        if (*steering_notice(st))
            fprintf(stderr, "llmchat: %s %d:%d: %s\n", from, l, x, steering_notice(st));
    }
    return 0;
}

/* 7b. Speculative decoding's guesser: prompt lookup (--lookup), or a draft model
 * (--draft FILE) in an engine of its own, as long a context as the model's where the
 * draft's allows. */
static int open_guesser(session *s)
{
    const app_options *o = s->o;
    llm_err err;
    if (o->lookup) {
        s->guesser = lookup_guesser;
        s->guesser_name = "lookup";
        return 0;
    }
    if (!o->draft_path)
        return 0;
    if (load_draft(o, s->tok, &s->draft_model) != 0)
        return 1;
    int ctx = engine_ctx(s->e) < s->draft_model->config.seq_len ? engine_ctx(s->e)
                                                                 : s->draft_model->config.seq_len;
    if (draft_new(s->draft_model, ctx, &s->draft, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: --draft: %s\n", err.text);
        return 1;
    }
    s->guesser = draft_guesser;
    s->guesser_user = s->draft;
    s->guesser_name = "draft";
    return 0;
}

/* 8. The chat over the engine, with the template and the system prompt, guessing with
 * the session's guesser. */
static int open_chat(session *s)
{
    llm_err err;
    if (chat_new_template(s->e, s->tmpl, s->o->system, &s->c, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        return 1;
    }
    chat_set_guesser(s->c, s->guesser, s->guesser_user, s->o->draft_max);
    return 0;
}

/* 9. --trace FILE, described and attached to the engine as its observer. Refused the
 * place of a file the run reads: those read so far (the model, the tokenizer, the
 * config, the control vectors: output_file.h) and those the options name for later
 * (-f, --replay, --view, --resume's chat). */
static int open_trace(session *s)
{
    const app_options *o = s->o;
    llm_err err;
    const char *later[] = {o->file, o->replay_path, o->view_path, o->resume_path};
    for (size_t i = 0; i < sizeof later / sizeof later[0]; i++)
        if (output_file_check_not(o->trace_path, "the trace", later[i], &err) != LLM_OK) {
            fprintf(stderr, "llmchat: %s\n", err.text);
            return 1;
        }
    if (trace_open(o->trace_path, s->tok, &s->m->config, o->trace_attn, &s->trace, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        return 1;
    }
    static const char *const mode_names[] = {
        [MODE_TUI] = "tui", [MODE_CHAT] = "chat", [MODE_GENERATE] = "generate",
        [MODE_PERPLEXITY] = "perplexity", [MODE_REPLAY] = "replay", [MODE_TENSORS] = "tensors",
        [MODE_PATCH] = "patch",
    };
    trace_run run = {
        .mode = o->mode < (int)(sizeof mode_names / sizeof mode_names[0]) ? mode_names[o->mode] : NULL,
        .m = s->m,
        .kernels = s->kernels,
        .kv_cache = engine_kv_cache(s->e) == TRANSFORMER_KV_F32 ? "f32" : "q8_0",
        .sampler = engine_sampler_config(s->e),
        .steps = o->steps >= 0 ? o->steps : o->mode == MODE_GENERATE ? GENERATE_STEPS_DEFAULT : 0,
        .ctx = engine_ctx(s->e),
        .lens = o->trace_lens,
        .tensors = o->trace_tensors,
        .tensor_first = o->trace_tensor_first < 0 ? 0 : o->trace_tensor_first,
        .tensor_last = o->trace_tensor_first < 0 ? s->m->config.n_layers - 1 : o->trace_tensor_last,
        .template_name = s->c ? template_name(chat_get_template(s->c)) : NULL,
    };
    trace_describe(s->trace, &run);
    engine_set_observer(s->e, trace_observe, s->trace);
    return 0;
}

void session_say_guesses(const session *s)
{
    if (!s->guesser || !s->e)
        return;
    const engine_stats *st = engine_get_stats(s->e);
    fprintf(stderr, "%s: %lld guessed, %lld accepted (%.0f%%) in %lld checks\n", s->guesser_name,
            st->guessed, st->accepted, st->guessed ? 100.0 * st->accepted / st->guessed : 0.0,
            st->guess_rounds);
}

bool session_have_terminal(void)
{
    if (isatty(STDIN_FILENO) && isatty(STDOUT_FILENO))
        return true;
    fprintf(stderr, "llmchat: the TUI needs a terminal on stdin and stdout; use -m chat for pipes\n");
    return false;
}

int session_open(session *s, app_options *o, const session_needs *needs)
{
    memset(s, 0, sizeof *s);
    s->o = o;
    s->needs = needs;
    s->kernels = kernels_isa_name(kernels_init(o->isa));
    open_threads(s);
    int rc = open_model(s);
    if (rc == 0 && needs->terminal && !session_have_terminal())
        rc = 2;
    if (rc == 0 && needs->engine)
        rc = open_engine(s);
    if (rc == 0 && needs->engine)
        rc = open_guesser(s);
    if (rc == 0 && needs->chat)
        rc = open_chat(s);
    if (rc == 0 && o->trace_path && s->e)
        rc = open_trace(s);
    if (rc != 0)
        return rc;
    s->steps = o->steps > 0 ? o->steps : 0;
    s->slow_motion_ms = o->slow_motion_ms;
    if (needs->chat)
        autosave_init(&s->save, o, isatty(STDIN_FILENO));
    if (needs->signals == SESSION_SIGNALS_STOP)
        signals_install_sigint();
    else if (needs->signals == SESSION_SIGNALS_QUIT)
        signals_install();
    return 0;
}

int session_close(session *s)
{
    int rc = 0;
    llm_err err;
    if (s->e)
        engine_finish(s->e); /* the trace gets the last position too */
    if (s->failed && s->trace && !trace_has_records(s->trace)) {
        trace_abandon(s->trace); /* nothing ran: a file of its name stays as it was */
        s->trace = NULL;
    }
    autosave_free(&s->save);
    chat_free(s->c);
    if (s->trace && trace_close(s->trace, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        rc = 1;
    }
    engine_free(s->e);
    draft_free(s->draft);
    model_close(s->draft_model);
    template_free(s->tmpl);
    tokenizer_close(s->tok);
    model_close(s->m);
    trace_reader_free(s->replay);
    memset(s, 0, sizeof *s);
    return rc;
}

/* ---- while it runs ---- */

live_settings session_settings(const session *s)
{
    return (live_settings){.sampler = *engine_sampler_config(s->e), .steps = s->steps,
                           .slow_motion_ms = s->slow_motion_ms};
}

void session_set_settings(session *s, const live_settings *ls)
{
    engine_set_sampler(s->e, &ls->sampler);
    s->steps = ls->steps;
    s->slow_motion_ms = ls->slow_motion_ms;
}

bool session_resume(session *s, struct command_host *h)
{
    const char *path = s->o->resume_path;
    if (!path)
        return true;
    command_loaded loaded = command_load(h, path, true);
    if (loaded == COMMAND_LOADED) /* else the file keeps what this session lacks */
        autosave_use(&s->save, path);
    return loaded != COMMAND_LOAD_FAILED;
}

int session_quit_on_signal(session *s)
{
    int sig = signals_quit;
    if (!sig)
        return 0;
    char msg[700];
    msg[0] = '\0';
    if (s)
        autosave_now(s, msg, sizeof msg); /* a failure's warning, or where it went on */
    if (*msg)
        fprintf(stderr, "llmchat: %s\n", msg);
    if (s && s->save.path && !s->save.warned)
        fprintf(stderr, "llmchat: quitting on %s; the chat is saved in %s\n", signals_name(sig),
                s->save.path);
    else
        fprintf(stderr, "llmchat: quitting on %s\n", signals_name(sig));
    return 128 + sig;
}

/* ---- the input text, state files ---- */

char *session_read_input(const app_options *o)
{
    if (!o->file)
        return strdup(o->prompt ? o->prompt : "");
    const char *why = "";
    FILE *f = strcmp(o->file, "-") ? input_file_fopen_stream(o->file, &why) : stdin;
    if (!f) {
        fprintf(stderr, "llmchat: cannot read %s: %s\n", o->file, why);
        return NULL;
    }
    /* The text ends at its first NUL byte: reading stops there (/dev/zero is empty
     * text), and at SESSION_INPUT_MAX bytes (`yes |` is not text either) */
    size_t cap = 1 << 16, n = 0;
    struct stat st; /* a file known too long is refused before it is read */
    bool too_long = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) &&
                    (uintmax_t)st.st_size > (uintmax_t)SESSION_INPUT_MAX;
    char *buf = too_long ? NULL : malloc(cap);
    bool nul = false;
    for (; !too_long;) {
        if (!buf) {
            fprintf(stderr, "llmchat: out of memory reading %s\n", o->file);
            break;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        char *z = memchr(buf + n, '\0', got);
        n += got;
        if (z) {
            n = (size_t)(z - buf);
            nul = true;
            break;
        }
        if (n < cap - 1)
            break;
        if (n >= SESSION_INPUT_MAX) { /* full at the most: one byte more says whether more came */
            too_long = fgetc(f) != EOF;
            break;
        }
        cap = 2 * cap - 1 > (size_t)SESSION_INPUT_MAX ? (size_t)SESSION_INPUT_MAX + 1 : 2 * cap;
        char *grown = realloc(buf, cap);
        if (!grown)
            free(buf);
        buf = grown;
    }
    bool failed = ferror(f);
    int why_failed = errno;
    if (f != stdin)
        fclose(f);
    if (!buf && !too_long)
        return NULL;
    if (failed || too_long) {
        if (too_long)
            fprintf(stderr, "llmchat: %s holds more than 1 GiB, the most text llmchat reads\n",
                    strcmp(o->file, "-") ? o->file : "standard input");
        else
            fprintf(stderr, "llmchat: cannot read %s: %s\n", o->file, strerror(why_failed));
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    if (nul)
        fprintf(stderr, "llmchat: warning: %s contains NUL bytes; the text ends at the first\n",
                strcmp(o->file, "-") ? o->file : "standard input");
    return buf;
}

int *session_encode_text(const tokenizer *tok, const char *text, bool bos, int *n)
{
    int need = tokenizer_encode(tok, text, NULL, 0);
    int *ids = need >= 0 ? malloc(sizeof(int) * (need + 1)) : NULL;
    if (!ids) {
        fprintf(stderr, "llmchat: out of memory tokenizing the input\n");
        return NULL;
    }
    if (bos)
        ids[0] = tokenizer_bos(tok);
    *n = bos + tokenizer_encode(tok, text, ids + bos, need);
    return ids;
}

int *session_encode_input(const app_options *o, const tokenizer *tok, bool bos, int *n)
{
    char *text = session_read_input(o);
    if (!text)
        return NULL;
    int *ids = session_encode_text(tok, text, bos, n);
    free(text);
    return ids;
}

int *session_encode_prompt(const app_options *o, const tokenizer *tok, int *n, bool *bos)
{
    bool first = tokenizer_adds_bos(tok);
    int *ids = session_encode_input(o, tok, first, n);
    if (ids && *n == 0) {
        ids[0] = tokenizer_bos(tok);
        *n = 1;
        first = true;
    }
    if (bos)
        *bos = first;
    return ids;
}

char *session_state_file(const char *name)
{
    char rest[256], path[4096];
    snprintf(rest, sizeof rest, "llmchat/%s", name);
    if (!xdg_path("XDG_STATE_HOME", ".local/state", rest, path, sizeof path))
        return NULL;
    session_make_parents(path); /* a failure is said by the save that needs them */
    return strdup(path);
}

int session_make_parents(const char *path)
{
    char *dir = strdup(path);
    if (!dir)
        return ENOMEM;
    int e = 0;
    for (char *p = dir + 1; *p && !e; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        struct stat st;
        if (stat(dir, &st) != 0 && mkdir(dir, 0700) != 0 && errno != EEXIST)
            e = errno;
        *p = '/';
    }
    free(dir);
    return e;
}
