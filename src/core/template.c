/* template.c — the chat templates (see template.h): recognition of Jinja templates,
 * rendering a turn into tokens, and the tokens that end a reply.
 *
 * A turn is built as a list of pieces: text (template text and the user's, joined)
 * and markers (BOS, EOS, "<|im_start|>", ...). A marker that the vocabulary has as a
 * special token becomes its id; one it lacks becomes text. Consecutive text is
 * tokenized in one call, as llama.cpp tokenizes the text between special tokens.
 * Owns the template object; borrows the tokenizer. */
#include "template.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[TEMPLATE_COUNT] = {
    [TEMPLATE_LLAMA2] = "llama2",
    [TEMPLATE_MISTRAL] = "mistral",
    [TEMPLATE_ZEPHYR] = "zephyr",
    [TEMPLATE_CHATML] = "chatml",
    [TEMPLATE_LLAMA3] = "llama3",
};

/* Jinja templates in the style of the models' own (Hugging Face chat templates). */
static const char *const kind_jinja[TEMPLATE_COUNT] = {
    [TEMPLATE_LLAMA2] =
        "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
        "{% set system_message = messages[0]['content'] %}{% else %}"
        "{% set loop_messages = messages %}{% set system_message = false %}{% endif %}"
        "{% for message in loop_messages %}"
        "{% if loop.index0 == 0 and system_message != false %}"
        "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
        "{% else %}{% set content = message['content'] %}{% endif %}"
        "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content + ' [/INST]' }}"
        "{% elif message['role'] == 'assistant' %}{{ ' ' + content + ' ' + eos_token }}{% endif %}"
        "{% endfor %}",
    [TEMPLATE_MISTRAL] =
        "{{ bos_token }}{% for message in messages %}"
        "{% if message['role'] == 'system' %}{% set system_message = message['content'] + '\\n\\n' %}"
        "{% elif message['role'] == 'user' %}"
        "{{ '[INST] ' + (system_message if loop.index0 == 1 else '') + message['content'] + ' [/INST]' }}"
        "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token }}{% endif %}"
        "{% endfor %}",
    [TEMPLATE_ZEPHYR] =
        "{% for message in messages %}"
        "{% if message['role'] == 'user' %}{{ '<|user|>\\n' + message['content'] + eos_token + '\\n' }}"
        "{% elif message['role'] == 'system' %}{{ '<|system|>\\n' + message['content'] + eos_token + '\\n' }}"
        "{% elif message['role'] == 'assistant' %}{{ '<|assistant|>\\n' + message['content'] + eos_token + '\\n' }}"
        "{% endif %}{% if loop.last and add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"
        "{% endfor %}",
    [TEMPLATE_CHATML] =
        "{% for message in messages %}"
        "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
        "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
    [TEMPLATE_LLAMA3] =
        "{% set loop_messages = messages %}{% for message in loop_messages %}"
        "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'"
        "+ message['content'] | trim + '<|eot_id|>' %}"
        "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
        "{{ content }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}",
};

const char *template_kind_name(template_kind k)
{
    return k >= 0 && k < TEMPLATE_COUNT ? kind_names[k] : "?";
}

bool template_kind_parse(const char *name, template_kind *out)
{
    for (int k = 0; k < TEMPLATE_COUNT; k++)
        if (!strcmp(name, kind_names[k])) {
            *out = (template_kind)k;
            return true;
        }
    if (!strcmp(name, "tinyllama")) {
        *out = TEMPLATE_ZEPHYR;
        return true;
    }
    return false;
}

const char *template_kind_list(void)
{
    return "llama2, mistral, zephyr (or tinyllama), chatml, llama3";
}

bool template_kind_detect(const char *jinja, template_kind *out)
{
    if (!jinja)
        return false;
    if (strstr(jinja, "<|im_start|>"))
        *out = TEMPLATE_CHATML;
    else if (strstr(jinja, "<|start_header_id|>") && strstr(jinja, "<|end_header_id|>"))
        *out = TEMPLATE_LLAMA3;
    else if (strstr(jinja, "<|user|>") && strstr(jinja, "<|assistant|>"))
        *out = TEMPLATE_ZEPHYR;
    else if (strstr(jinja, "[INST]"))
        *out = strstr(jinja, "<<SYS>>") ? TEMPLATE_LLAMA2 : TEMPLATE_MISTRAL;
    else
        return false;
    return true;
}

bool template_choose(const char *name, const char *jinja, template_kind *out, char *note,
                     size_t size)
{
    *out = TEMPLATE_LLAMA2;
    if (name) {
        if (!template_kind_parse(name, out))
            return false;
        snprintf(note, size, "chat template %s (--template)", kind_names[*out]);
    } else if (template_kind_detect(jinja, out)) {
        snprintf(note, size, "chat template %s (the model's)", kind_names[*out]);
    } else if (jinja) {
        snprintf(note, size, "the model's chat template is not one llmchat knows: using llama2 "
                 "(--template %s chooses another)", template_kind_list());
    } else {
        snprintf(note, size, "chat template llama2 (the default)");
    }
    return true;
}

const char *template_kind_jinja(template_kind k)
{
    return k >= 0 && k < TEMPLATE_COUNT ? kind_jinja[k] : "";
}

/* ---- the template object ---- */

/* The markers a template uses, by the piece a vocabulary gives them. */
enum { M_IM_START, M_IM_END, M_SYSTEM, M_USER, M_ASSISTANT, M_START_HEADER, M_END_HEADER,
       M_EOT, N_MARKERS };
static const char *const marker_text[N_MARKERS] = {
    [M_IM_START] = "<|im_start|>", [M_IM_END] = "<|im_end|>", [M_SYSTEM] = "<|system|>",
    [M_USER] = "<|user|>", [M_ASSISTANT] = "<|assistant|>",
    [M_START_HEADER] = "<|start_header_id|>", [M_END_HEADER] = "<|end_header_id|>",
    [M_EOT] = "<|eot_id|>",
};

struct chat_template {
    template_kind kind;
    const tokenizer *tok;    /* borrowed */
    int bos, eos;
    int marker[N_MARKERS];   /* token id, or -1 when the marker is text */
};

llm_status template_new(template_kind k, const tokenizer *tok, chat_template **out, llm_err *err)
{
    *out = NULL;
    if (k < 0 || k >= TEMPLATE_COUNT)
        return llm_fail(err, LLM_ERR_ARG, "unknown chat template %d", (int)k);
    chat_template *t = calloc(1, sizeof *t);
    if (!t)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for the chat template");
    t->kind = k;
    t->tok = tok;
    t->bos = tokenizer_bos(tok);
    t->eos = tokenizer_eos(tok);
    for (int i = 0; i < N_MARKERS; i++)
        t->marker[i] = tokenizer_special(tok, marker_text[i]);
    *out = t;
    return LLM_OK;
}

void template_free(chat_template *t)
{
    free(t);
}

template_kind template_kind_of(const chat_template *t) { return t->kind; }
const char *template_name(const chat_template *t) { return kind_names[t->kind]; }

bool template_is_stop(const chat_template *t, int id)
{
    if (id == t->eos || tokenizer_is_eog(t->tok, id))
        return true;
    for (int i = 0; i < N_MARKERS; i++)
        if (t->marker[i] >= 0 && id == t->marker[i])
            return true;
    return false;
}

int template_end_token(const chat_template *t)
{
    if (t->kind == TEMPLATE_CHATML && t->marker[M_IM_END] >= 0)
        return t->marker[M_IM_END];
    if (t->kind == TEMPLATE_LLAMA3 && t->marker[M_EOT] >= 0)
        return t->marker[M_EOT];
    return t->eos;
}

/* ---- rendering ---- */

/* A turn as it is built: ids written so far (counting past max), and the text not
 * yet tokenized. In text mode the specials are written as their pieces instead. */
typedef struct {
    const chat_template *t;
    int *ids;
    int max, n;
    char *text;         /* pending text (text mode: the whole turn) */
    size_t len, cap;
    bool as_text;
    bool failed;        /* out of memory */
} turn_builder;

static void add_text(turn_builder *b, const char *s)
{
    size_t n = strlen(s);
    if (b->failed || n == 0)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->len + n + 1) * 2;
        char *grown = realloc(b->text, cap);
        if (!grown) {
            b->failed = true;
            return;
        }
        b->text = grown;
        b->cap = cap;
    }
    memcpy(b->text + b->len, s, n + 1);
    b->len += n;
}

/* Tokenizes the pending text onto the ids. */
static void flush(turn_builder *b)
{
    if (b->failed || b->as_text || b->len == 0)
        return;
    int room = b->n < b->max ? b->max - b->n : 0;
    int got = tokenizer_encode(b->t->tok, b->text, room > 0 ? b->ids + b->n : NULL, room);
    if (got < 0) {
        b->failed = true;
        return;
    }
    b->n += got;
    b->len = 0;
    b->text[0] = '\0';
}

static void add_id(turn_builder *b, int id, const char *piece)
{
    if (b->as_text) {
        add_text(b, piece);
        return;
    }
    flush(b);
    if (b->ids && b->n < b->max)
        b->ids[b->n] = id;
    b->n++;
}

/* s without the whitespace at either end (llama.cpp trims Llama 3's messages). */
static void add_trimmed(turn_builder *b, const char *s)
{
    static const char ws[] = " \t\n\r\v\f";
    while (*s && strchr(ws, *s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && strchr(ws, s[n - 1]))
        n--;
    char *copy = malloc(n + 1);
    if (!copy) {
        b->failed = true;
        return;
    }
    memcpy(copy, s, n);
    copy[n] = '\0';
    add_text(b, copy);
    free(copy);
}

/* A marker: its token when the vocabulary has one, else its text. */
static void add_marker(turn_builder *b, int m)
{
    if (b->t->marker[m] >= 0)
        add_id(b, b->t->marker[m], marker_text[m]);
    else
        add_text(b, marker_text[m]);
}

/* BOS as rendered text: a byte-level BPE vocabulary's own piece
 * ("<|begin_of_text|>"), else SentencePiece's "<s>". */
static const char *bos_text(const chat_template *t)
{
    return tokenizer_is_bpe(t->tok) ? tokenizer_piece(t->tok, t->bos) : "<s>";
}

static void build(turn_builder *b, const char *system, const char *user, bool first)
{
    const chat_template *t = b->t;
    bool with_system = first && system && *system;
    bool open_bos = first && tokenizer_adds_bos(t->tok);
    switch (t->kind) {
    case TEMPLATE_LLAMA2:
        add_id(b, t->bos, bos_text(t));
        add_text(b, "[INST] ");
        if (with_system) {
            add_text(b, "<<SYS>>\n");
            add_text(b, system);
            add_text(b, "\n<</SYS>>\n\n");
        }
        add_text(b, user);
        add_text(b, " [/INST]");
        break;
    case TEMPLATE_MISTRAL:
        if (open_bos)
            add_id(b, t->bos, bos_text(t));
        add_text(b, "[INST] ");
        if (with_system) {
            add_text(b, system);
            add_text(b, "\n\n");
        }
        add_text(b, user);
        add_text(b, " [/INST]");
        break;
    case TEMPLATE_ZEPHYR:
        if (open_bos)
            add_id(b, t->bos, bos_text(t));
        if (!first)
            add_text(b, "\n");
        if (with_system) {
            add_marker(b, M_SYSTEM);
            add_text(b, "\n");
            add_text(b, system);
            add_id(b, t->eos, "</s>");
            add_text(b, "\n");
        }
        add_marker(b, M_USER);
        add_text(b, "\n");
        add_text(b, user);
        add_id(b, t->eos, "</s>");
        add_text(b, "\n");
        add_marker(b, M_ASSISTANT);
        add_text(b, "\n");
        break;
    case TEMPLATE_CHATML:
        if (open_bos)
            add_id(b, t->bos, bos_text(t));
        if (!first)
            add_text(b, "\n");
        if (with_system) {
            add_marker(b, M_IM_START);
            add_text(b, "system\n");
            add_text(b, system);
            add_marker(b, M_IM_END);
            add_text(b, "\n");
        }
        add_marker(b, M_IM_START);
        add_text(b, "user\n");
        add_text(b, user);
        add_marker(b, M_IM_END);
        add_text(b, "\n");
        add_marker(b, M_IM_START);
        add_text(b, "assistant\n");
        break;
    case TEMPLATE_LLAMA3:
        if (open_bos)
            add_id(b, t->bos, bos_text(t));
        if (with_system) {
            add_marker(b, M_START_HEADER);
            add_text(b, "system");
            add_marker(b, M_END_HEADER);
            add_text(b, "\n\n");
            add_trimmed(b, system);
            add_marker(b, M_EOT);
        }
        add_marker(b, M_START_HEADER);
        add_text(b, "user");
        add_marker(b, M_END_HEADER);
        add_text(b, "\n\n");
        add_trimmed(b, user);
        add_marker(b, M_EOT);
        add_marker(b, M_START_HEADER);
        add_text(b, "assistant");
        add_marker(b, M_END_HEADER);
        add_text(b, "\n\n");
        break;
    case TEMPLATE_COUNT:
        break;
    }
    flush(b);
}

int template_render(const chat_template *t, const char *system, const char *user, bool first,
                    int *ids, int max)
{
    turn_builder b = {.t = t, .ids = ids, .max = ids ? max : 0};
    build(&b, system, user, first);
    free(b.text);
    return b.failed ? -1 : b.n;
}

char *template_render_text(const chat_template *t, const char *system, const char *user,
                           bool first)
{
    turn_builder b = {.t = t, .as_text = true};
    add_text(&b, "");
    build(&b, system, user, first);
    if (!b.failed && !b.text) {
        b.text = calloc(1, 1);
        b.failed = !b.text;
    }
    if (b.failed) {
        free(b.text);
        return NULL;
    }
    return b.text;
}
