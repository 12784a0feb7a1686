/* session.c — what the front ends share to set up a session: reading -i/-f input,
 * the engine's options, attaching a --trace writer to an engine, and the paths of
 * state files. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "session.h"
#include "engine.h"
#include "kernels.h"
#include "template.h"
#include "trace.h"
#include "vector_files.h"
#include "xdg.h"

char *session_read_input(const app_options *o)
{
    if (!o->file)
        return strdup(o->prompt ? o->prompt : "");
    FILE *f = strcmp(o->file, "-") ? fopen(o->file, "rb") : stdin;
    if (!f) {
        fprintf(stderr, "llmchat: cannot read %s: %s\n", o->file, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fprintf(stderr, "llmchat: out of memory reading %s\n", o->file);
            break;
        }
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        cap *= 2;
        char *grown = realloc(buf, cap);
        if (!grown)
            free(buf);
        buf = grown;
    }
    bool failed = ferror(f);
    if (f != stdin)
        fclose(f);
    if (!buf)
        return NULL;
    if (failed) {
        fprintf(stderr, "llmchat: cannot read %s: %s\n", o->file, strerror(errno));
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    if (strlen(buf) != n)
        fprintf(stderr, "llmchat: warning: %s contains NUL bytes; the text ends at the first\n",
                o->file);
    return buf;
}

int *session_encode_input(const app_options *o, const tokenizer *tok, bool bos, int *n)
{
    char *text = session_read_input(o);
    if (!text)
        return NULL;
    int need = tokenizer_encode(tok, text, NULL, 0);
    int *ids = need >= 0 ? malloc(sizeof(int) * (need + 1)) : NULL;
    if (!ids) {
        fprintf(stderr, "llmchat: out of memory tokenizing the input\n");
        free(text);
        return NULL;
    }
    if (bos)
        ids[0] = tokenizer_bos(tok);
    *n = bos + tokenizer_encode(tok, text, ids + bos, need);
    free(text);
    return ids;
}

int session_open_trace(const app_options *o, const model *m, const tokenizer *tok, engine *e,
                   trace_writer **out)
{
    *out = NULL;
    if (!o->trace_path)
        return 0;
    llm_err err;
    if (trace_open(o->trace_path, tok, &m->config, o->trace_attn, out, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        return 1;
    }
    static const char *const mode_names[] = {
        [MODE_TUI] = "tui", [MODE_CHAT] = "chat", [MODE_GENERATE] = "generate",
        [MODE_PERPLEXITY] = "perplexity", [MODE_REPLAY] = "replay",
    };
    trace_run run = {
        .mode = o->mode < (int)(sizeof mode_names / sizeof mode_names[0]) ? mode_names[o->mode] : NULL,
        .m = m,
        .kernels = kernels_isa_name(kernels_init(o->isa)),
        .kv_cache = engine_kv_cache(e) == TRANSFORMER_KV_F32 ? "f32" : "q8_0",
        .sampler = engine_sampler_config(e),
        .steps = o->steps,
        .ctx = engine_ctx(e),
        .lens = o->trace_lens,
        .template_name = o->chat_template && (o->mode == MODE_CHAT || o->mode == MODE_TUI)
                             ? template_name(o->chat_template) : NULL,
    };
    trace_describe(*out, &run);
    engine_set_observer(e, trace_observe, *out);
    return 0;
}

int session_close_trace(trace_writer *t)
{
    if (!t)
        return 0;
    llm_err err;
    if (trace_close(t, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        return 1;
    }
    return 0;
}

int session_apply_vectors(const app_options *o, engine *e)
{
    steering *s = engine_steering(e);
    llm_err err;
    char path[4096 + 256];
    for (int i = 0; i < o->n_vectors; i++) {
        vector_files_find(o->vectors[i].path, path, sizeof path); /* a bare name: made here */
        if (steering_load(s, path, NULL, o->vectors[i].scale, &err) != LLM_OK) {
            fprintf(stderr, "llmchat: --control-vector: %s\n", err.text);
            return 1;
        }
        if (*steering_notice(s))
            fprintf(stderr, "llmchat: --control-vector: %s\n", steering_notice(s));
    }
    if (o->vector_first >= 0 &&
        steering_layers(s, o->vector_first, o->vector_last, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: --control-vector-layers: %s\n", err.text);
        return 2;
    }
    return 0;
}

void session_engine_options(const app_options *o, engine_options *eo)
{
    engine_options_default(eo);
    eo->ctx_len = o->ctx;
    if (o->attention_mib > 0)
        eo->attention_budget = (size_t)o->attention_mib << 20;
    eo->kv_cache = o->kv_cache;
    eo->sampler = o->sampler;
    /* a trace writes prompt positions' candidates as they finish; without one, the
     * engine computes them when a position is looked at (engine_record) */
    eo->record_prompt = o->trace_path != NULL;
    eo->record_lens = o->trace_lens;
}

char *session_state_file(const char *name)
{
    char rest[256], path[4096];
    snprintf(rest, sizeof rest, "llmchat/%s", name);
    if (!xdg_path("XDG_STATE_HOME", ".local/state", rest, path, sizeof path))
        return NULL;
    for (char *p = path + 1; *p; p++) { /* mkdir -p of the directory part */
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0700);
            *p = '/';
        }
    }
    return strdup(path);
}
