/* main.c — llmchat's entry point: parses options (config file and environment
 * included), opens the session the chosen mode needs (app/session.c: the one
 * front-end setup, in one order) and hands it to the mode's front end. The table of
 * modes below says what each front end needs set up. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "discover.h"
#include "load.h"
#include "openmp_wait.h"
#include "options.h"
#include "session.h"
#include "std_streams.h"
#include "tokenizer.h"
#include "trace_read.h"
#include "tui/tui.h"
#include "tui/tokens_pane.h"

/* -m tokenize with a tokenizer (-z, or the bundled one when no model is named
 * anywhere) and no MODEL on the command line needs no model. True when that is the
 * case: the tokenizer ran and *rc is its status. */
static bool tokenize_alone(app_options *o, int *rc)
{
    if (o->mode == MODE_TOKENIZE && !o->tokenizer_path && o->model_source == MODEL_FROM_NONE) {
        char bundled_tok[4200];
        snprintf(bundled_tok, sizeof bundled_tok, "%s/models/%s", discover_data_dir(), DISCOVER_BUNDLED_TOKENIZER);
        if (!load_set_owned(o, &o->tokenizer_path, bundled_tok)) {
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

static int run_tokenize(session *s)
{
    return cli_tokenize(s->o, s->tok);
}

/* Each mode with a model: its front end and what that needs set up. */
typedef struct {
    int (*run)(session *s);
    session_needs needs;
} front_end;

static const front_end front_ends[] = {
    [MODE_TUI] = {.run = tui_run,
                  .needs = {.engine = true, .chat = true, .terminal = true, .top_n = TUI_TOP_N,
                            .attention = true, .signals = SESSION_SIGNALS_QUIT}},
    [MODE_CHAT] = {.run = cli_repl,
                   .needs = {.engine = true, .chat = true, .top_n = 10,
                             .signals = SESSION_SIGNALS_QUIT}},
    [MODE_GENERATE] = {.run = cli_generate,
                       .needs = {.engine = true, .top_n = 0, .signals = SESSION_SIGNALS_STOP}},
    [MODE_TOKENIZE] = {.run = run_tokenize},
    [MODE_PERPLEXITY] = {.run = cli_perplexity,
                         .needs = {.engine = true, .top_n = 0, .record_prompt = true,
                                   .signals = SESSION_SIGNALS_STOP}},
    [MODE_TENSORS] = {.run = cli_tensors,
                      .needs = {.engine = true, .top_n = 0, .signals = SESSION_SIGNALS_STOP}},
    [MODE_PATCH] = {.run = cli_patch,
                    .needs = {.engine = true, .top_n = 0, .signals = SESSION_SIGNALS_STOP}},
    [MODE_COMPARE_SERVER] = {.run = cli_compare_server,
                             .needs = {.engine = true, .top_n = 0, .signals = SESSION_SIGNALS_STOP}},
    [MODE_REPLAY] = {.run = cli_replay,
                     .needs = {.engine = true, .top_n = 10, .prepare = cli_replay_open}},
};

static int run(app_options *o)
{
    int rc;
    if (tokenize_alone(o, &rc))
        return rc;
    if (o->mode == MODE_VIEW) /* no model: the trace holds what is shown */
        return tui_view(o);
    /* --resume first: a served chat's file names its server */
    if (o->resume && (rc = load_resume(o)) != 0)
        return rc;
    if (o->server_url && o->mode != MODE_REPLAY) /* no model: the server runs it */
        return o->mode == MODE_TUI          ? tui_remote(o)
               : o->mode == MODE_CHAT       ? cli_remote_repl(o)
               : o->mode == MODE_PERPLEXITY ? cli_remote_perplexity(o)
                                            : cli_remote_generate(o);
    const front_end *fe = &front_ends[o->mode];
    session s;
    rc = session_open(&s, o, &fe->needs);
    if (rc == 0) {
        rc = fe->run(&s);
        if (o->verbose)
            load_describe_memory(s.m);
    }
    s.failed = rc != 0;
    int closed = session_close(&s);
    return rc != 0 ? rc : closed;
}

int main(int argc, char **argv)
{
    std_streams_open();
    openmp_wait_apply(argv);
    app_options o;
    int rc = options_parse(argc, argv, &o);
    if (rc == 0)
        rc = run(&o);
    options_free(&o);
    return std_streams_close("llmchat", rc < 0 ? 0 : rc);
}
