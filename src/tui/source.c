/* source.c — reading positions from an engine or a trace (see source.h). Owns nothing. */
#include "source.h"

#include <stdio.h>
#include <string.h>

#include "textfmt.h"
#include "format.h"

int source_count(const tui_source *s)
{
    if (s->rc)
        return remote_chat_count(s->rc);
    return s->e ? engine_pos(s->e) : s->n;
}

const step_record *source_record(const tui_source *s, int pos)
{
    if (s->rc)
        return remote_chat_record(s->rc, pos);
    if (s->e)
        return engine_record(s->e, pos);
    return pos >= 0 && pos < s->n ? s->seq[pos] : NULL;
}

step_phase source_phase(const tui_source *s, int pos)
{
    if (s->e)
        return engine_phase(s->e, pos);
    const step_record *r = source_record(s, pos);
    return r ? r->phase : STEP_PROMPT;
}

const int *source_tokens(const tui_source *s)
{
    if (s->rc)
        return remote_chat_tokens(s->rc);
    return s->e ? engine_tokens(s->e) : s->tokens;
}

const step_lens_layer *source_lens(const tui_source *s, int pos)
{
    if (s->e)
        return engine_lens(s->e, pos, NULL);
    const step_record *r = source_record(s, pos);
    return r ? r->lens : NULL;
}

const float *source_attention(const tui_source *s, int pos)
{
    if (s->e)
        return engine_attention(s->e, pos, NULL);
    const step_record *r = source_record(s, pos);
    return r ? r->attn : NULL;
}

const sampler_config *source_sampler(const tui_source *s)
{
    if (s->rc)
        return remote_chat_sampler(s->rc);
    return s->e ? engine_sampler_config(s->e) : NULL;
}

int source_window(const tui_source *s, int layer)
{
    if (layer < 0 || layer >= s->cfg->n_layers)
        return 0;
    if (s->e)
        return engine_model(s->e)->layers[layer].window;
    const trace_header *h = s->trace ? trace_reader_header(s->trace) : NULL;
    return h && h->windows && layer < h->config.n_layers ? h->windows[layer] : 0;
}

bool source_recurrent(const tui_source *s, int layer)
{
    if (layer < 0 || layer >= s->cfg->n_layers)
        return false;
    if (s->e)
        return engine_model(s->e)->layers[layer].kind == MODEL_LAYER_DELTA_NET;
    const trace_header *h = s->trace ? trace_reader_header(s->trace) : NULL;
    return h && h->recurrent && layer < h->config.n_layers && h->recurrent[layer];
}

int source_layer_heads(const tui_source *s, int layer)
{
    if (layer < 0 || layer >= s->cfg->n_layers)
        return s->cfg->n_heads;
    if (s->e)
        return model_layer_heads(engine_model(s->e), layer);
    const trace_header *h = s->trace ? trace_reader_header(s->trace) : NULL;
    if (!h || !h->recurrent)
        return s->cfg->n_heads;
    int n = source_recurrent(s, layer) ? h->dn_heads : h->attn_heads;
    return n > 0 && n <= s->cfg->n_heads ? n : s->cfg->n_heads;
}

bool source_live(const tui_source *s)
{
    return s->e != NULL;
}

const expert_routes *source_routes(const tui_source *s)
{
    return s->e ? engine_routes(s->e) : NULL;
}

bool source_head_out(const tui_source *s, int layer, int head)
{
    return s->e && steering_is_out(engine_steering(s->e), layer, head);
}

const step_whatif *source_whatif(const tui_source *s, int pos)
{
    return s->e && steering_mask(engine_steering(s->e)) ? engine_whatif(s->e, pos, NULL) : NULL;
}

const step_attribution *source_attribution(const tui_source *s, int pos, int token)
{
    return s->e ? engine_attribution(s->e, pos, token, NULL) : NULL;
}

int source_attribution_target(const step_record *r, int i, int *id, int *rank)
{
    *id = -1;
    *rank = 0;
    int first = r->next >= 0 ? r->next : r->n_top > 0 ? r->top[0].id : -1;
    if (first < 0)
        return 0;
    int count = 1;
    for (int j = 0; j < r->n_top; j++)
        count += r->top[j].id != first;
    i %= count;
    if (i < 0)
        i += count;
    for (int j = 0, k = 1; j < r->n_top; j++) {
        if (r->top[j].id == first) {
            if (i == 0)
                *rank = j + 1;
        } else if (k++ == i) {
            *id = r->top[j].id;
            *rank = j + 1;
        }
    }
    if (i == 0)
        *id = first;
    return count;
}

bool source_piece_is_control(const char *piece)
{
    return textfmt_piece_is_control(piece);
}

size_t source_token(const tui_source *s, int id, char *out, size_t size)
{
    if (s->tok)
        return tuifmt_token(s->tok, id, out, size);
    const char *piece = s->trace ? trace_reader_piece(s->trace, id)
                        : s->rc  ? remote_chat_piece(s->rc, id)
                                 : NULL;
    return tuifmt_piece(piece ? piece : "", piece && source_piece_is_control(piece), out, size);
}

/* Whether a step of a capture or a record belongs to `layer` as source_steps counts
 * them: its own layer, or before / after the layers. */
static bool in_list(int step_layer, bool before, int layer, int n_layers)
{
    if (layer >= 0 && layer < n_layers)
        return step_layer == layer;
    return step_layer < 0 && before == (layer < 0);
}

static int live_steps(const tui_source *s, int pos, int layer, int near, source_step *out,
                      int max, const char **why)
{
    static char text[LLM_ERR_TEXT_MAX];
    int n_layers = s->cfg->n_layers;
    int l = layer >= 0 && layer < n_layers ? layer : near;
    llm_err err;
    const tensor_capture *cap = engine_tensors(s->e, pos, l, l, &err);
    if (!cap) {
        snprintf(text, sizeof text, "%s", err.text);
        *why = text;
        return 0;
    }
    int n = 0;
    bool before = true;
    for (int i = 0; i < cap->n_steps && n < max; i++) {
        const captured_step *c = &cap->steps[i];
        before = before && c->layer < 0;
        if (!in_list(c->layer, before, layer, n_layers))
            continue;
        capture_summarize_step(c, &out[n].sum);
        out[n].values = c->values;
        out[n++].point = c->point;
    }
    return n;
}

int source_steps(const tui_source *s, int pos, int layer, int near, source_step *out, int max,
                 const char **why)
{
    *why = "no steps here";
    if (pos < 0 || pos >= source_count(s))
        return 0;
    if (s->e)
        return live_steps(s, pos, layer, near, out, max, why);
    if (s->rc) {
        *why = "a served model's steps are on the server: the compute view needs a local model";
        return 0;
    }
    const step_record *r = source_record(s, pos);
    if (!r || !r->tensors) {
        *why = "this trace has no steps here (write it with --trace-tensors LAYERS)";
        return 0;
    }
    int n = 0;
    bool before = true;
    for (int i = 0; i < r->n_tensors && n < max; i++) {
        const step_tensor *t = &r->tensors[i];
        before = before && t->layer < 0;
        if (!in_list(t->layer, before, layer, s->cfg->n_layers))
            continue;
        out[n].sum = *t;
        out[n].values = NULL;
        if (!hook_parse(t->name, &out[n].point))
            out[n].point = HOOK_COUNT;
        n++;
    }
    if (n == 0)
        *why = "the trace did not record this layer (--trace-tensors names the layers)";
    return n;
}

bool source_step_weight(const tui_source *s, int pos, int layer, int near, hook_point p, int row,
                        int group, step_weight *out, const char **why)
{
    static char text[LLM_ERR_TEXT_MAX];
    if (!s->e) {
        *why = "the weights need the model: a trace has none";
        return false;
    }
    if (!step_weight_has(p)) {
        *why = "this step multiplies by no weight";
        return false;
    }
    int l = layer >= 0 && layer < s->cfg->n_layers ? layer : near;
    llm_err err;
    const tensor_capture *cap = engine_tensors(s->e, pos, l, l, &err);
    if (!cap || step_weight_explain(engine_model(s->e), cap, p, layer, row, group, out, &err) !=
                    LLM_OK) {
        snprintf(text, sizeof text, "%s", err.text);
        *why = text;
        return false;
    }
    return true;
}
