/* served.c — a chat with a served model for the front ends (see served.h). */
#include "served.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chatfile.h"
#include "intervention_json.h"
#include "output_file.h"
#include "remote_chat_save.h"
#include "remote_connect.h"
#include "signals.h"
#include "trace.h"

static const char *piece_of(void *user, int id)
{
    return remote_chat_piece(user, id);
}

/* --trace: the records the server's answers make, as they are finished. */
static int open_trace(served_session *s, const char *mode)
{
    const app_options *o = s->o;
    llm_err err;
    if (o->resume_path &&
        output_file_check_not(o->trace_path, "the trace", o->resume_path, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        return 1;
    }
    if (trace_open(o->trace_path, NULL, NULL, false, &s->trace, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        return 1;
    }
    const remote_info *in = remote_describe(s->rem);
    trace_run run = {.mode = mode, .sampler = remote_chat_sampler(s->rc), .steps = s->steps,
                     .ctx = in->n_ctx, .server = in->base_url,
                     .server_api = remote_api_name(in->api), .server_model = in->model,
                     .server_ctx = in->n_ctx, .server_vocab = in->n_vocab};
    trace_describe(s->trace, &run);
    trace_set_pieces(s->trace, piece_of, s->rc);
    remote_chat_set_observer(s->rc, trace_observe, s->trace);
    return 0;
}

int served_open(served_session *s, const app_options *o, const char *mode, bool interactive)
{
    memset(s, 0, sizeof *s);
    s->o = o;
    if (o->slow_motion_ms > 0)
        fprintf(stderr, "llmchat: --slow-motion does nothing with a served model: its reply "
                        "comes at the server's pace\n");
    s->steps = o->steps < 0 ? 0 : o->steps;
    if (!(s->rem = remote_connect(o, o->server_url)))
        return 1;
    llm_err err;
    if (remote_chat_new(s->rem, o->system, &o->sampler, &s->rc, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        served_close(s);
        return 1;
    }
    if (o->trace_path && open_trace(s, mode) != 0) {
        served_close(s);
        return 1;
    }
    autosave_init(&s->save, o, interactive);
    return 0;
}

int served_close(served_session *s)
{
    int rc = 0;
    if (s->rc)
        remote_chat_stop(s->rc);
    if (s->trace) {
        llm_err err;
        remote_chat_finish(s->rc);
        if (trace_close(s->trace, &err) != LLM_OK) {
            fprintf(stderr, "llmchat: %s\n", err.text);
            rc = 1;
        }
        s->trace = NULL;
    }
    remote_chat_free(s->rc);
    s->rc = NULL;
    remote_close(s->rem);
    s->rem = NULL;
    autosave_free(&s->save);
    return rc;
}

live_settings served_settings(const served_session *s)
{
    return (live_settings){.sampler = *remote_chat_sampler(s->rc), .steps = s->steps};
}

void served_set_settings(served_session *s, const live_settings *ls)
{
    remote_chat_set_sampler(s->rc, &ls->sampler);
    s->steps = ls->steps;
}

/* The chat as a file: the dialog, and the step limit only the session knows. */
static llm_status to_file(const served_session *s, chatfile *cf, llm_err *err)
{
    llm_status st = remote_chat_to_file(s->rc, cf, err);
    if (st == LLM_OK)
        cf->steps = s->steps;
    return st;
}

llm_status served_save_chat(const served_session *s, const char *path, llm_err *err)
{
    chatfile cf;
    llm_status st = to_file(s, &cf, err);
    if (st == LLM_OK)
        st = chatfile_write(&cf, path, err);
    chatfile_clear(&cf);
    return st;
}

llm_status served_load_chat(served_session *s, const char *path, bool settings, bool *apart,
                            char *notice, size_t size, llm_err *err)
{
    chatfile cf;
    llm_status st = chatfile_read(path, &cf, err);
    if (st != LLM_OK)
        return st;
    st = remote_chat_restore(s->rc, &cf, notice, size, err);
    if (st == LLM_OK && settings) {
        live_settings ls = served_settings(s);
        chatfile_settings_onto(&cf, &ls, 0);
        served_set_settings(s, &ls);
    }
    *apart = !intervention_is_empty(cf.steer); /* a local chat's: no server takes them */
    size_t o = strlen(notice);
    if (st == LLM_OK && *apart && o < size)
        snprintf(notice + o, size - o, "%sits interventions do not apply to a served model",
                 o ? "; " : "");
    chatfile_clear(&cf);
    return st;
}

bool served_autosave_now(served_session *s, char *msg, size_t size)
{
    trace_flush(s->trace); /* the trace's records so far to its file, autosave or not */
    if (size)
        msg[0] = '\0';
    if (s->save.off || (!s->save.path && remote_chat_turn_count(s->rc) == 0))
        return true;
    chatfile cf;
    llm_err err;
    if (to_file(s, &cf, &err) != LLM_OK) {
        if (!s->save.warned && size)
            snprintf(msg, size, "cannot autosave the chat (%s); it goes on, but unsaved: "
                     "/save FILE saves it elsewhere", err.text);
        s->save.warned = true;
        return false;
    }
    bool saved = autosave_write(&s->save, &cf, msg, size);
    chatfile_clear(&cf);
    return saved;
}

int served_quit_on_signal(served_session *s)
{
    int sig = signals_quit;
    if (!sig)
        return 0;
    char msg[700];
    served_autosave_now(s, msg, sizeof msg);
    if (*msg)
        fprintf(stderr, "llmchat: %s\n", msg);
    if (s->save.path && !s->save.warned)
        fprintf(stderr, "llmchat: quitting on %s; the chat is saved in %s\n", signals_name(sig),
                s->save.path);
    else
        fprintf(stderr, "llmchat: quitting on %s\n", signals_name(sig));
    return 128 + sig;
}
