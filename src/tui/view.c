/* view.c — a trace read back for the TUI (see view.h). Owns the reader, the final
 * sequence and its tokens. */
#include "view.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "textfmt.h"
#include "trace_read.h"

struct trace_view {
    char *path;
    trace_reader *r;
    const step_record **seq; /* (n) the final sequence, borrowed from r; NULL: a lost line */
    int n;
    int *tokens;             /* (n) each position's token (-1 when no line says it) */
    int last_token;          /* the token after the last position, -1 when none */
    model_config cfg;        /* the shape the panes are told (never 0 layers or heads) */
    bool has_attn, has_lens; /* some record carries attention / a lens */
};

void view_close(trace_view *v)
{
    if (!v)
        return;
    free(v->path);
    free(v->seq);
    free(v->tokens);
    trace_reader_free(v->r);
    free(v);
}

/* Closes what view_open had built and returns st: the caller formats the message first,
 * as `close_failed(v, llm_fail(err, ...))`, since the reader's words die with v. */
static llm_status close_failed(trace_view *v, llm_status st)
{
    view_close(v);
    return st;
}

llm_status view_open(const char *path, trace_view **out, llm_err *err)
{
    *out = NULL;
    trace_view *v = calloc(1, sizeof *v);
    if (!v || !(v->path = strdup(path))) {
        free(v);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory reading the trace %s", path);
    }
    llm_status st = trace_read_file(path, &v->r, err);
    if (st != LLM_OK) {
        view_close(v);
        return st;
    }
    const trace_header *h = trace_reader_header(v->r);
    if (trace_reader_usable(v->r, path, err) != LLM_OK) /* empty, not a trace, no records */
        return close_failed(v, LLM_ERR_FORMAT);
    v->n = trace_reader_final(v->r, &v->seq);
    if (v->n < 0 || !(v->tokens = malloc(sizeof *v->tokens * (size_t)(v->n > 0 ? v->n : 1))))
        return close_failed(v, llm_fail(err, LLM_ERR_NOMEM, "out of memory reading the trace %s", path));
    for (int p = 0; p < v->n; p++) {
        const step_record *prev = p > 0 ? v->seq[p - 1] : NULL;
        v->tokens[p] = v->seq[p] ? v->seq[p]->token : prev ? prev->next : -1;
        v->has_attn |= v->seq[p] && v->seq[p]->attn;
        v->has_lens |= v->seq[p] && v->seq[p]->lens;
    }
    const step_record *last = v->n > 0 ? v->seq[v->n - 1] : NULL;
    v->last_token = last ? last->next : -1;
    v->cfg = h->config;
    if (v->cfg.n_layers <= 0)
        v->cfg.n_layers = 1;
    if (v->cfg.n_heads <= 0)
        v->cfg.n_heads = 1;
    *out = v;
    return LLM_OK;
}

const trace_patch *view_patch(const trace_view *v)
{
    return trace_reader_patch(v->r);
}

tui_source view_source(const trace_view *v)
{
    return (tui_source){.seq = v->seq, .n = v->n, .tokens = v->tokens, .cfg = &v->cfg, .trace = v->r};
}

/* ---- the dialog ---- */

/* Appends token id's text to buf: a byte piece ("<0x0A>") as its byte, a piece that
 * looks like a control token as nothing (keep_control: as the token, "<s>"), any
 * other piece as it is. */
static void append_text(const trace_view *v, int id, bool keep_control, char *buf, size_t *len, size_t cap)
{
    const char *piece = id >= 0 ? trace_reader_piece(v->r, id) : NULL;
    if (!piece)
        return;
    char byte[2], control[64];
    unsigned value;
    if (strlen(piece) == 6 && sscanf(piece, "<0x%2X>", &value) == 1) {
        byte[0] = (char)value;
        byte[1] = '\0';
        piece = byte;
    } else if (source_piece_is_control(piece)) {
        if (!keep_control)
            return;
        textfmt_token_piece(piece, true, false, control, sizeof control);
        piece = control;
    }
    size_t n = strlen(piece);
    if (*len + n + 1 > cap)
        n = *len + 1 < cap ? cap - *len - 1 : 0;
    memcpy(buf + *len, piece, n);
    *len += n;
    buf[*len] = '\0';
}

/* The last occurrence of needle in s, or NULL. */
static char *last_of(char *s, const char *needle)
{
    char *found = NULL;
    for (char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
        found = p;
    return found;
}

/* s without the blanks around it (ends it with a NUL). */
static char *trimmed(char *s)
{
    while (*s == ' ' || *s == '\n')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\n'))
        s[--n] = '\0';
    return s;
}

/* The markers of a chat template (template.h) around the user's message and the
 * system prompt; NULL where it has none. */
typedef struct {
    const char *name, *user_open, *user_close, *user_close2, *sys_open, *sys_close;
} template_marks;

static const template_marks marks[] = {
    {"llama2", "[INST]", "[/INST]", NULL, "<<SYS>>", "<</SYS>>"},
    {"mistral", "[INST]", "[/INST]", NULL, NULL, NULL},
    {"zephyr", "<|user|>", "</s>", "<|assistant|>", "<|system|>", "</s>"},
    {"chatml", "<|im_start|>user", "<|im_end|>", NULL, "<|im_start|>system", "<|im_end|>"},
};

/* Finds, in text (a prompt rendered by template name, control tokens as their pieces),
 * the user's message and the system prompt, as the live TUI shows them; writes NULs
 * into text. False when the text does not hold the template's markers. */
static bool untemplate(const char *name, char *text, char **user, char **system)
{
    const template_marks *m = NULL;
    for (size_t i = 0; name && i < sizeof marks / sizeof marks[0]; i++)
        if (!strcmp(marks[i].name, name))
            m = &marks[i];
    *system = NULL;
    char *open = m ? last_of(text, m->user_open) : NULL;
    if (!open)
        return false;
    char *sys = m->sys_open ? strstr(text, m->sys_open) : NULL;
    char *sys_end = sys ? strstr(sys + strlen(m->sys_open), m->sys_close) : NULL;
    char *u = open + strlen(m->user_open);
    if (sys_end && sys_end >= u) /* llama2: the system block is inside [INST] */
        u = sys_end + strlen(m->sys_close);
    char *end = strstr(u, m->user_close);
    char *end2 = m->user_close2 ? strstr(u, m->user_close2) : NULL;
    if (!end || (end2 && end2 < end))
        end = end2;
    if (!end)
        return false;
    *end = '\0';
    if (sys_end) {
        *sys_end = '\0';
        *system = trimmed(sys + strlen(m->sys_open));
    }
    *user = trimmed(u);
    return true;
}

/* The positions of the tokens in the text being gathered, and where each one's text
 * starts in it. */
typedef struct {
    int *pos;
    size_t *off;
    int n;
} text_spans;

/* Adds buf (trimmed) as an entry of kind, unless it is empty; a user entry of a chat
 * whose template is known (tmpl) shows the message without the template's markers,
 * and its system prompt as a notice, as the live TUI does; a reply keeps its tokens'
 * positions (sp). */
static void flush_entry(conv_pane *cv, conv_kind kind, const char *tmpl, char *buf, size_t *len,
                        text_spans *sp)
{
    int n_spans = sp->n;
    sp->n = 0;
    char *user, *system;
    size_t total = *len;
    if (kind == ENTRY_USER && tmpl && untemplate(tmpl, buf, &user, &system)) {
        if (system && *system) {
            char line[1200];
            snprintf(line, sizeof line, "[system prompt: %s]", system);
            conv_add(cv, ENTRY_NOTICE, line);
        }
        conv_add(cv, kind, user);
        /* the tokens whose text falls inside the message */
        size_t u0 = (size_t)(user - buf), u1 = u0 + strlen(user);
        int n = 0;
        for (int k = 0; k < n_spans; k++) {
            size_t end = k + 1 < n_spans ? sp->off[k + 1] : total;
            if (end <= u0 || sp->off[k] >= u1)
                continue;
            sp->pos[n] = sp->pos[k];
            sp->off[n++] = sp->off[k] > u0 ? sp->off[k] - u0 : 0;
        }
        conv_set_message_tokens(cv, user, sp->pos, sp->off, n);
        *len = 0;
        buf[0] = '\0';
        return;
    }
    char *s = buf, *e = buf + *len;
    while (s < e && (*s == ' ' || *s == '\n'))
        s++;
    while (e > s && (e[-1] == ' ' || e[-1] == '\n'))
        e--;
    *e = '\0';
    if (*s) {
        size_t lead = (size_t)(s - buf);
        for (int k = 0; k < n_spans; k++)
            sp->off[k] = sp->off[k] > lead ? sp->off[k] - lead : 0;
        conv_add(cv, kind, s);
        if (kind == ENTRY_ASSISTANT)
            conv_set_reply_tokens(cv, s, sp->pos, sp->off, n_spans);
        else
            conv_set_message_tokens(cv, s, sp->pos, sp->off, n_spans);
    }
    *len = 0;
    buf[0] = '\0';
}

static void show_tokens(const trace_view *v, conv_pane *cv)
{
    size_t cap = 64 * 1024, len = 0;
    char *buf = malloc(cap);
    text_spans sp = {malloc(sizeof *sp.pos * (size_t)(v->n + 1)), malloc(sizeof *sp.off * (size_t)(v->n + 1)), 0};
    if (!buf || !sp.pos || !sp.off) {
        free(buf);
        free(sp.pos);
        free(sp.off);
        return;
    }
    buf[0] = '\0';
    const char *tmpl = trace_reader_header(v->r)->template_name;
    conv_kind kind = ENTRY_USER;
    for (int p = 0; p <= v->n; p++) {
        int id;
        conv_kind k = kind; /* a lost line continues what came before it */
        if (p < v->n) {
            id = v->tokens[p];
            if (v->seq[p])
                k = v->seq[p]->phase == STEP_PROMPT ? ENTRY_USER : ENTRY_ASSISTANT;
        } else { /* the token after the last position */
            const step_record *last = v->n > 0 ? v->seq[v->n - 1] : NULL;
            id = v->last_token;
            if (last && (last->sampled || last->phase != STEP_PROMPT))
                k = ENTRY_ASSISTANT;
        }
        if (k != kind)
            flush_entry(cv, kind, tmpl, buf, &len, &sp);
        kind = k;
        size_t at = len;
        append_text(v, id, kind == ENTRY_USER && tmpl, buf, &len, cap);
        if (len > at) {
            sp.pos[sp.n] = p;
            sp.off[sp.n++] = at;
        }
    }
    flush_entry(cv, kind, tmpl, buf, &len, &sp);
    free(buf);
    free(sp.pos);
    free(sp.off);
}

void view_show_dialog(const trace_view *v, conv_pane *cv)
{
    char line[1200];
    const trace_header *h = trace_reader_header(v->r);
    char mode[48] = "";
    if (h->mode)
        snprintf(mode, sizeof mode, ", a %s run", h->mode);
    snprintf(line, sizeof line, "[viewing the trace %s (read-only): %d position%s%s]", v->path, v->n,
             v->n == 1 ? "" : "s", mode);
    conv_add(cv, ENTRY_NOTICE, line);
    int kept = trace_reader_problems_kept(v->r), all = trace_reader_problem_count(v->r);
    if (all > 0) {
        snprintf(line, sizeof line, "[%d problem%s reading the trace; what could be read is shown:]", all,
                 all == 1 ? "" : "s");
        conv_add(cv, ENTRY_NOTICE, line);
        for (int i = 0; i < kept; i++) {
            snprintf(line, sizeof line, "[%s]", trace_reader_problem(v->r, i));
            conv_add(cv, ENTRY_NOTICE, line);
        }
        if (all > kept) {
            snprintf(line, sizeof line, "[and %d more]", all - kept);
            conv_add(cv, ENTRY_NOTICE, line);
        }
    }
    int lost = 0;
    for (int p = 0; p < v->n; p++)
        lost += v->seq[p] == NULL;
    if (lost > 0) {
        snprintf(line, sizeof line, "[%d position%s no record: the Tokens and Attention panes show them empty]",
                 lost, lost == 1 ? " has" : "s have");
        conv_add(cv, ENTRY_NOTICE, line);
    }
    show_tokens(v, cv);
    if (!v->has_attn || !v->has_lens) {
        snprintf(line, sizeof line, "[the trace has %s%s%s]", v->has_attn ? "" : "no attention (--trace-attn)",
                 !v->has_attn && !v->has_lens ? " and " : "", v->has_lens ? "" : "no logit lens (--trace-lens)");
        conv_add(cv, ENTRY_NOTICE, line);
    }
}

void view_describe(const trace_view *v, char *out, size_t size)
{
    const trace_header *h = trace_reader_header(v->r);
    const char *base = strrchr(v->path, '/');
    base = base ? base + 1 : v->path;
    int all = trace_reader_problem_count(v->r);
    char model_part[200] = "", shape[64] = "", tmpl[48] = "", problems[48] = "";
    if (h->model_name)
        snprintf(model_part, sizeof model_part, " | %s%s%s", h->model_name, h->weights ? " " : "",
                 h->weights ? h->weights : "");
    if (h->has_config)
        snprintf(shape, sizeof shape, " | %d layers x %d heads", h->config.n_layers, h->config.n_heads);
    if (h->template_name)
        snprintf(tmpl, sizeof tmpl, " | %s", h->template_name);
    if (all > 0)
        snprintf(problems, sizeof problems, " | %d problem%s", all, all == 1 ? "" : "s");
    snprintf(out, size, "viewing %s (read-only)%s%s%s%s | %d positions%s%s", base, problems, model_part, tmpl, shape,
             v->n, v->has_attn ? " | attention" : "", v->has_lens ? " | lens" : "");
}
