/* source.c — reading positions from an engine or a trace (see source.h). Owns nothing. */
#include "source.h"

#include <string.h>

#include "textfmt.h"
#include "format.h"

int source_count(const tui_source *s)
{
    return s->e ? engine_pos(s->e) : s->n;
}

const step_record *source_record(const tui_source *s, int pos)
{
    if (s->e)
        return engine_record(s->e, pos);
    return pos >= 0 && pos < s->n ? s->seq[pos] : NULL;
}

const int *source_tokens(const tui_source *s)
{
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

bool source_live(const tui_source *s)
{
    return s->e != NULL;
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
    const char *piece = s->trace ? trace_reader_piece(s->trace, id) : NULL;
    return tuifmt_piece(piece ? piece : "", piece && source_piece_is_control(piece), out, size);
}
