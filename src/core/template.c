/* template.c — the chat templates (see template.h): recognition of Jinja templates,
 * rendering a turn into tokens, and the tokens that end a reply.
 *
 * A turn is built as a list of pieces: text (template text and the user's, joined)
 * and markers (BOS, EOS, "<|im_start|>", ...). A marker that the vocabulary has as a
 * special token becomes its id; one it lacks becomes text. Consecutive text is
 * tokenized in one call, as llama.cpp tokenizes the text between special tokens.
 * Owns the template object; borrows the tokenizer. */
#define _POSIX_C_SOURCE 200809L /* localtime_r */
#include "template.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const kind_names[TEMPLATE_COUNT] = {
    [TEMPLATE_LLAMA2] = "llama2",
    [TEMPLATE_MISTRAL] = "mistral",
    [TEMPLATE_ZEPHYR] = "zephyr",
    [TEMPLATE_CHATML] = "chatml",
    [TEMPLATE_LLAMA3] = "llama3",
    [TEMPLATE_QWEN3] = "qwen3",
    [TEMPLATE_GEMMA] = "gemma",
    [TEMPLATE_PHI3] = "phi3",
    [TEMPLATE_PHI4_MINI] = "phi4-mini",
    [TEMPLATE_HARMONY] = "harmony",
    [TEMPLATE_QWEN35] = "qwen35",
    [TEMPLATE_GEMMA4] = "gemma4",
    [TEMPLATE_LLAMA31] = "llama3.1",
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
    [TEMPLATE_LLAMA31] =
        "{{ bos_token }}{% if messages[0]['role'] == 'system' %}"
        "{% set system_message = messages[0]['content'] | trim %}{% set loop_messages = messages[1:] %}"
        "{% else %}{% set system_message = '' %}{% set loop_messages = messages %}{% endif %}"
        "{{ '<|start_header_id|>system<|end_header_id|>\\n\\nCutting Knowledge Date: December 2023\\n'"
        "+ 'Today Date: 26 Jul 2024\\n\\n' + system_message + '<|eot_id|>' }}"
        "{% for message in loop_messages %}"
        "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'"
        "+ message['content'] | trim + '<|eot_id|>' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}",
    [TEMPLATE_QWEN3] =
        "{% for message in messages %}"
        "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
        "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
        "{% if enable_thinking is defined and enable_thinking is false %}"
        "{{ '<think>\\n\\n</think>\\n\\n' }}{% endif %}{% endif %}",
    [TEMPLATE_GEMMA] =
        "{{ bos_token }}{% if messages[0]['role'] == 'system' %}"
        "{% set first_user_prefix = messages[0]['content'] + '\\n\\n' %}"
        "{% set loop_messages = messages[1:] %}{% else %}{% set first_user_prefix = '' %}"
        "{% set loop_messages = messages %}{% endif %}{% for message in loop_messages %}"
        "{% if message['role'] == 'assistant' %}{% set role = 'model' %}"
        "{% else %}{% set role = message['role'] %}{% endif %}"
        "{{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else '') }}"
        "{{ message['content'] | trim }}{{ '<end_of_turn>\\n' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}",
    [TEMPLATE_PHI3] =
        "{% for message in messages %}"
        "{% if message['role'] == 'system' and message['content'] %}"
        "{{ '<|system|>\\n' + message['content'] + '<|end|>\\n' }}"
        "{% elif message['role'] == 'user' %}{{ '<|user|>\\n' + message['content'] + '<|end|>\\n' }}"
        "{% elif message['role'] == 'assistant' %}"
        "{{ '<|assistant|>\\n' + message['content'] + '<|end|>\\n' }}{% endif %}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% else %}{{ eos_token }}{% endif %}",
    [TEMPLATE_PHI4_MINI] =
        "{% for message in messages %}"
        "{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% else %}{{ eos_token }}{% endif %}",
    [TEMPLATE_HARMONY] =
        "{{ '<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\\n'"
        " + 'Knowledge cutoff: 2024-06\\nCurrent date: ' + strftime_now('%Y-%m-%d') + '\\n\\n'"
        " + 'Reasoning: medium\\n\\n# Valid channels: analysis, commentary, final. '"
        " + 'Channel must be included for every message.<|end|>' }}"
        "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
        "{{ '<|start|>developer<|message|># Instructions\\n\\n' + messages[0]['content'] + '\\n\\n<|end|>' }}"
        "{% else %}{% set loop_messages = messages %}{% endif %}"
        "{% for message in loop_messages %}"
        "{% if message['role'] == 'assistant' %}"
        "{{ '<|start|>assistant<|channel|>final<|message|>' + message['content'] + '<|end|>' }}"
        "{% else %}{{ '<|start|>' + message['role'] + '<|message|>' + message['content'] + '<|end|>' }}"
        "{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|start|>assistant' }}{% endif %}",
    [TEMPLATE_QWEN35] =
        "{% for message in messages %}"
        "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
        "{% endfor %}{% if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
        "{% if enable_thinking is defined and enable_thinking is false %}"
        "{{- '<think>\\n\\n</think>\\n\\n' }}{% else %}{{- '<think>\\n' }}{% endif %}{% endif %}",
    [TEMPLATE_GEMMA4] =
        "{{ bos_token }}{% set thinking = enable_thinking is defined and enable_thinking %}"
        "{% if thinking or messages[0]['role'] == 'system' %}{{ '<|turn>system\\n' }}"
        "{% if thinking %}{{ '<|think|>\\n' }}{% endif %}"
        "{% if messages[0]['role'] == 'system' %}{{ messages[0]['content'] | trim }}"
        "{% endif %}{{ '<turn|>\\n' }}{% endif %}"
        "{% for message in messages %}{% if message['role'] != 'system' %}"
        "{{ '<|turn>' + ('model' if message['role'] == 'assistant' else message['role']) + '\\n' }}"
        "{{ message['content'] | trim }}{{ '<turn|>\\n' }}{% endif %}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|turn>model\\n' }}"
        "{% if not thinking %}{{ '<|channel>thought\\n<channel|>' }}{% endif %}{% endif %}",
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
    /* other names a user may know a template by */
    static const struct {
        const char *name;
        template_kind kind;
    } aliases[] = {
        {"tinyllama", TEMPLATE_ZEPHYR},
        {"chatml-think", TEMPLATE_QWEN3},
        {"gpt-oss", TEMPLATE_HARMONY},
        {"qwen3.5", TEMPLATE_QWEN35},
        {"gemma-4", TEMPLATE_GEMMA4},
        {"llama3.2", TEMPLATE_LLAMA31},
        {"llama3.3", TEMPLATE_LLAMA31},
    };
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (!strcmp(name, aliases[i].name)) {
            *out = aliases[i].kind;
            return true;
        }
    return false;
}

const char *template_kind_list(void)
{
    return "llama2, mistral, zephyr (or tinyllama), chatml, llama3, llama3.1 (or llama3.2, "
           "llama3.3), qwen3 (or chatml-think), qwen35 (or qwen3.5), gemma, gemma4 (or gemma-4), "
           "phi3, phi4-mini, harmony (or gpt-oss)";
}

/* The role marker followed by a newline, in the Jinja source (an escaped "\n" in a
 * string literal) or as a real newline. */
static bool marker_then_newline(const char *jinja, const char *marker)
{
    char a[40], b[40];
    snprintf(a, sizeof a, "%s\\n", marker);
    snprintf(b, sizeof b, "%s\n", marker);
    return strstr(jinja, a) || strstr(jinja, b);
}

bool template_kind_detect(const char *jinja, template_kind *out)
{
    if (!jinja)
        return false;
    if (strstr(jinja, "<|channel|>") && strstr(jinja, "<|start|>") && strstr(jinja, "<|message|>"))
        *out = TEMPLATE_HARMONY;
    else if (strstr(jinja, "<|turn>") && strstr(jinja, "<turn|>"))
        *out = TEMPLATE_GEMMA4;
    else if (strstr(jinja, "<|im_start|>"))
        *out = strstr(jinja, "<think>\\n' }}") ? TEMPLATE_QWEN35
               : strstr(jinja, "enable_thinking") || strstr(jinja, "<think>") ? TEMPLATE_QWEN3
                                                                           : TEMPLATE_CHATML;
    else if (strstr(jinja, "<|start_header_id|>") && strstr(jinja, "<|end_header_id|>"))
        *out = strstr(jinja, "Cutting Knowledge Date") ? TEMPLATE_LLAMA31 : TEMPLATE_LLAMA3;
    else if (strstr(jinja, "<start_of_turn>") && strstr(jinja, "<end_of_turn>"))
        *out = TEMPLATE_GEMMA;
    else if (strstr(jinja, "<|end|>") && strstr(jinja, "<|assistant|>"))
        *out = marker_then_newline(jinja, "<|assistant|>") ? TEMPLATE_PHI3 : TEMPLATE_PHI4_MINI;
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
       M_EOT, M_START_OF_TURN, M_END_OF_TURN, M_END, M_THINK, M_END_THINK, M_START, M_MESSAGE,
       M_CHANNEL, M_RETURN, M_CALL, M_TURN, M_END_TURN, M_THINK_ON, M_CHANNEL_OPEN,
       M_CHANNEL_CLOSE, N_MARKERS };
static const char *const marker_text[N_MARKERS] = {
    [M_IM_START] = "<|im_start|>", [M_IM_END] = "<|im_end|>", [M_SYSTEM] = "<|system|>",
    [M_USER] = "<|user|>", [M_ASSISTANT] = "<|assistant|>",
    [M_START_HEADER] = "<|start_header_id|>", [M_END_HEADER] = "<|end_header_id|>",
    [M_EOT] = "<|eot_id|>", [M_START_OF_TURN] = "<start_of_turn>",
    [M_END_OF_TURN] = "<end_of_turn>", [M_END] = "<|end|>", [M_THINK] = "<think>",
    [M_END_THINK] = "</think>", [M_START] = "<|start|>", [M_MESSAGE] = "<|message|>",
    [M_CHANNEL] = "<|channel|>", [M_RETURN] = "<|return|>", [M_CALL] = "<|call|>",
    [M_TURN] = "<|turn>", [M_END_TURN] = "<turn|>", [M_THINK_ON] = "<|think|>",
    [M_CHANNEL_OPEN] = "<|channel>", [M_CHANNEL_CLOSE] = "<channel|>",
};

/* The markers that end a reply when the model writes them. Harmony: <|return|> (the
 * answer is complete) and <|call|> (a tool call), not <|end|>, which closes each message
 * of a reply (the analysis before the answer). The others: all but those that structure
 * a reply from inside, the thinking span's and harmony's headers. */
static bool marker_stops(template_kind k, int m)
{
    if (k == TEMPLATE_HARMONY)
        return m == M_RETURN || m == M_CALL;
    return m != M_THINK && m != M_END_THINK && m != M_START && m != M_MESSAGE && m != M_CHANNEL &&
           m != M_THINK_ON && m != M_CHANNEL_OPEN && m != M_CHANNEL_CLOSE;
}

struct chat_template {
    template_kind kind;
    const tokenizer *tok;    /* borrowed */
    int bos, eos;
    int marker[N_MARKERS];   /* token id, or -1 when the marker is text */
    char date[11];           /* harmony's and llama3.1's date: YYYY-MM-DD */
    bool think_newline;      /* gemma4: "\n" after <|think|> (template_follow_jinja) */
    bool dated_today;        /* llama3.1: today's date, not 26 Jul 2024 */
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
    time_t now = time(NULL);
    struct tm local;
    if (now == (time_t)-1 || !localtime_r(&now, &local) ||
        strftime(t->date, sizeof t->date, "%Y-%m-%d", &local) == 0)
        snprintf(t->date, sizeof t->date, "1970-01-01");
    t->think_newline = true;
    *out = t;
    return LLM_OK;
}

void template_free(chat_template *t)
{
    free(t);
}

void template_set_date(chat_template *t, const char *date)
{
    snprintf(t->date, sizeof t->date, "%s", date);
}

void template_follow_jinja(chat_template *t, const char *jinja)
{
    template_kind k;
    if (!template_kind_detect(jinja, &k) || k != t->kind)
        return;
    if (k == TEMPLATE_GEMMA4)
        t->think_newline = marker_then_newline(jinja, "<|think|>");
    else if (k == TEMPLATE_LLAMA31)
        t->dated_today = strstr(jinja, "strftime_now") != NULL;
}

void template_date_today(chat_template *t)
{
    t->dated_today = true;
}

/* llama3.1's "Today Date": "07 Dec 2026" from YYYY-MM-DD, with English month names
 * whatever the locale (Python's and llama.cpp's strftime in the C locale). */
static void llama31_date(const chat_template *t, char *out, size_t size)
{
    static const char *const month[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                           "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    int y, m, d;
    if (!t->dated_today || sscanf(t->date, "%d-%d-%d", &y, &m, &d) != 3 || m < 1 || m > 12)
        snprintf(out, size, "26 Jul 2024");
    else
        snprintf(out, size, "%02d %s %d", d, month[m - 1], y);
}

template_kind template_kind_of(const chat_template *t) { return t->kind; }
const char *template_name(const chat_template *t) { return kind_names[t->kind]; }

bool template_is_stop(const chat_template *t, int id)
{
    if (id == t->eos || tokenizer_is_eog(t->tok, id))
        return true;
    for (int i = 0; i < N_MARKERS; i++)
        if (t->marker[i] >= 0 && id == t->marker[i] && marker_stops(t->kind, i))
            return true;
    return false;
}

int template_end_token(const chat_template *t)
{
    static const int end_marker[TEMPLATE_COUNT] = {
        [TEMPLATE_LLAMA2] = -1, [TEMPLATE_MISTRAL] = -1, [TEMPLATE_ZEPHYR] = -1,
        [TEMPLATE_CHATML] = M_IM_END, [TEMPLATE_LLAMA3] = M_EOT, [TEMPLATE_QWEN3] = M_IM_END,
        [TEMPLATE_GEMMA] = M_END_OF_TURN, [TEMPLATE_PHI3] = M_END, [TEMPLATE_PHI4_MINI] = M_END,
        [TEMPLATE_HARMONY] = M_RETURN, [TEMPLATE_QWEN35] = M_IM_END,
        [TEMPLATE_GEMMA4] = M_END_TURN, [TEMPLATE_LLAMA31] = M_EOT,
    };
    int m = end_marker[t->kind];
    return m >= 0 && t->marker[m] >= 0 ? t->marker[m] : t->eos;
}

bool template_can_think(const chat_template *t)
{
    return t->kind == TEMPLATE_QWEN3 || t->kind == TEMPLATE_QWEN35 || t->kind == TEMPLATE_GEMMA4;
}

bool template_thinks_by_default(const chat_template *t)
{
    return template_can_think(t) && t->kind != TEMPLATE_GEMMA4;
}

bool template_opens_think(const chat_template *t, template_flags flags)
{
    return t->kind == TEMPLATE_QWEN35 && !flags.no_think;
}

bool template_think_span(const chat_template *t, const int *reply, int n, template_span *out)
{
    bool channel = t->kind == TEMPLATE_GEMMA4;
    int open = t->marker[channel ? M_CHANNEL_OPEN : M_THINK];
    int close = t->marker[channel ? M_CHANNEL_CLOSE : M_END_THINK];
    *out = (template_span){.start = -1, .end = -1};
    if (open < 0 || close < 0)
        return false;
    for (int i = 0; i < n; i++) {
        if (out->start < 0 && reply[i] == open) {
            out->start = i;
        } else if (reply[i] == close) {
            out->start = out->start < 0 ? 0 : out->start; /* opened by the prompt */
            out->end = i + 1;
            out->closed = true;
            return true;
        }
    }
    if (out->start < 0)
        return false;
    out->end = n; /* still thinking, or cut short */
    return true;
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
    bool no_think;      /* qwen3: an empty thinking span after the assistant's header */
    bool strip;         /* phi3: the next text loses its leading whitespace (see flush) */
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

/* Tokenizes the pending text onto the ids. Phi-3's special tokens take the whitespace
 * that follows them (Hugging Face's rstrip on its added tokens, which llama.cpp applies
 * to Phi-3 vocabularies): the newline after <|user|> or <|end|> is in the rendered text
 * but not in the ids. */
static void flush(turn_builder *b)
{
    if (b->failed || b->as_text || b->len == 0)
        return;
    size_t skip = 0;
    while (b->strip && skip < b->len && strchr(" \t\n\r\v\f", b->text[skip]))
        skip++;
    b->strip = false;
    int room = b->n < b->max ? b->max - b->n : 0;
    int got = skip == b->len ? 0
              : tokenizer_encode(b->t->tok, b->text + skip, room > 0 ? b->ids + b->n : NULL, room);
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
    if (b->t->marker[m] >= 0) {
        add_id(b, b->t->marker[m], marker_text[m]);
        b->strip = b->t->kind == TEMPLATE_PHI3;
    } else {
        add_text(b, marker_text[m]);
    }
}

/* BOS as rendered text: the vocabulary's own piece when it is spelt as a marker
 * ("<|begin_of_text|>", Gemma's "<bos>"), else SentencePiece's "<s>" (llama2.c's
 * tokenizer.bin stores BOS as "\n<s>\n"). */
static const char *bos_text(const chat_template *t)
{
    const char *piece = tokenizer_piece(t->tok, t->bos);
    return piece[0] == '<' ? piece : "<s>";
}

/* BOS when the turn opens the context and the vocabulary asks for it. */
static void open_context(turn_builder *b, bool first)
{
    if (first && tokenizer_adds_bos(b->t->tok))
        add_id(b, b->t->bos, bos_text(b->t));
}

/* ChatML; Qwen 3.5's template trims the system prompt and the user's text ("| trim"). */
static void build_chatml(turn_builder *b, const char *system, const char *user, bool first)
{
    bool trim = b->t->kind == TEMPLATE_QWEN35;
    open_context(b, first);
    if (!first)
        add_text(b, "\n");
    if (first && system && *system) {
        add_marker(b, M_IM_START);
        add_text(b, "system\n");
        if (trim)
            add_trimmed(b, system);
        else
            add_text(b, system);
        add_marker(b, M_IM_END);
        add_text(b, "\n");
    }
    add_marker(b, M_IM_START);
    add_text(b, "user\n");
    if (trim)
        add_trimmed(b, user);
    else
        add_text(b, user);
    add_marker(b, M_IM_END);
    add_text(b, "\n");
    add_marker(b, M_IM_START);
    add_text(b, "assistant\n");
}

/* Gemma has no system role: the system prompt opens the first user turn, followed by
 * a blank line (Gemma 3's template; Gemma 2's refuses a system message). The user's text
 * is trimmed, as the template's "| trim" does. */
static void build_gemma(turn_builder *b, const char *system, const char *user, bool first)
{
    open_context(b, first);
    if (!first)
        add_text(b, "\n");
    add_marker(b, M_START_OF_TURN);
    add_text(b, "user\n");
    if (first && system && *system) {
        add_text(b, system);
        add_text(b, "\n\n");
    }
    add_trimmed(b, user);
    add_marker(b, M_END_OF_TURN);
    add_text(b, "\n");
    add_marker(b, M_START_OF_TURN);
    add_text(b, "model\n");
}

/* Gemma 4: a system block when there is a system prompt or thinking is on (which it
 * opens with <|think|>), the user's turn, the model's header, then, thinking off, the
 * empty thought channel. System and user trimmed, as the template's "| trim". */
static void build_gemma4(turn_builder *b, const char *system, const char *user, bool first)
{
    bool think = !b->no_think, with_system = first && system && *system;
    open_context(b, first);
    if (!first)
        add_text(b, "\n");
    if (first && (think || with_system)) {
        add_marker(b, M_TURN);
        add_text(b, "system\n");
        if (think) {
            add_marker(b, M_THINK_ON);
            if (b->t->think_newline)
                add_text(b, "\n");
        }
        if (with_system)
            add_trimmed(b, system);
        add_marker(b, M_END_TURN);
        add_text(b, "\n");
    }
    add_marker(b, M_TURN);
    add_text(b, "user\n");
    add_trimmed(b, user);
    add_marker(b, M_END_TURN);
    add_text(b, "\n");
    add_marker(b, M_TURN);
    add_text(b, "model\n");
    if (!think) {
        add_marker(b, M_CHANNEL_OPEN);
        add_text(b, "thought\n");
        add_marker(b, M_CHANNEL_CLOSE);
    }
}

/* Phi-3 / 3.5: each role marker and each <|end|> followed by a newline; Phi-4-mini:
 * the same without the newlines. */
static void build_phi(turn_builder *b, const char *system, const char *user, bool first)
{
    const char *nl = b->t->kind == TEMPLATE_PHI3 ? "\n" : "";
    open_context(b, first);
    if (!first) {
        add_text(b, nl);
        b->strip = b->t->kind == TEMPLATE_PHI3; /* it follows the reply's <|end|> */
    }
    if (first && system && *system) {
        add_marker(b, M_SYSTEM);
        add_text(b, nl);
        add_text(b, system);
        add_marker(b, M_END);
        add_text(b, nl);
    }
    add_marker(b, M_USER);
    add_text(b, nl);
    add_text(b, user);
    add_marker(b, M_END);
    add_text(b, nl);
    add_marker(b, M_ASSISTANT);
    add_text(b, nl);
}

/* One harmony message: <|start|> role <|message|> text <|end|>. */
static void harmony_message(turn_builder *b, const char *role, const char *text)
{
    add_marker(b, M_START);
    add_text(b, role);
    add_marker(b, M_MESSAGE);
    add_text(b, text);
    add_marker(b, M_END);
}

/* gpt-oss's template with its defaults (no tools, reasoning effort medium): a system
 * message naming the model, its knowledge cutoff, the date and the channels; the system
 * prompt as the developer's instructions; the user's message; the assistant's header
 * without a channel, which the model writes itself. No BOS: the template has none. */
static void build_harmony(turn_builder *b, const char *system, const char *user, bool first)
{
    if (first) {
        char head[512];
        snprintf(head, sizeof head, "You are ChatGPT, a large language model trained by OpenAI.\n"
                 "Knowledge cutoff: 2024-06\nCurrent date: %s\n\nReasoning: medium\n\n"
                 "# Valid channels: analysis, commentary, final. Channel must be included for "
                 "every message.", b->t->date);
        harmony_message(b, "system", head);
        if (system && *system) {
            add_marker(b, M_START);
            add_text(b, "developer");
            add_marker(b, M_MESSAGE);
            add_text(b, "# Instructions\n\n");
            add_text(b, system);
            add_text(b, "\n\n");
            add_marker(b, M_END);
        }
    }
    harmony_message(b, "user", user);
    add_marker(b, M_START);
    add_text(b, "assistant");
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
        build_chatml(b, system, user, first);
        break;
    case TEMPLATE_LLAMA3:
    case TEMPLATE_LLAMA31:
        if (open_bos)
            add_id(b, t->bos, bos_text(t));
        if (with_system || (first && t->kind == TEMPLATE_LLAMA31)) {
            add_marker(b, M_START_HEADER);
            add_text(b, "system");
            add_marker(b, M_END_HEADER);
            add_text(b, "\n\n");
            if (t->kind == TEMPLATE_LLAMA31) {
                char date[32], line[96];
                llama31_date(t, date, sizeof date);
                snprintf(line, sizeof line,
                         "Cutting Knowledge Date: December 2023\nToday Date: %s\n\n", date);
                add_text(b, line);
            }
            if (with_system)
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
    case TEMPLATE_QWEN3:
    case TEMPLATE_QWEN35:
        build_chatml(b, system, user, first);
        if (t->kind == TEMPLATE_QWEN35 && !b->no_think) {
            add_marker(b, M_THINK);
            add_text(b, "\n");
        } else if (b->no_think) {
            add_marker(b, M_THINK);
            add_text(b, "\n\n");
            add_marker(b, M_END_THINK);
            add_text(b, "\n\n");
        }
        break;
    case TEMPLATE_GEMMA:
        build_gemma(b, system, user, first);
        break;
    case TEMPLATE_GEMMA4:
        build_gemma4(b, system, user, first);
        break;
    case TEMPLATE_PHI3:
    case TEMPLATE_PHI4_MINI:
        build_phi(b, system, user, first);
        break;
    case TEMPLATE_HARMONY:
        build_harmony(b, system, user, first);
        break;
    case TEMPLATE_COUNT:
        break;
    }
    flush(b);
}

int template_render_with(const chat_template *t, const char *system, const char *user,
                         bool first, template_flags flags, int *ids, int max)
{
    turn_builder b = {.t = t, .ids = ids, .max = ids ? max : 0, .no_think = flags.no_think};
    build(&b, system, user, first);
    free(b.text);
    return b.failed ? -1 : b.n;
}

int template_render(const chat_template *t, const char *system, const char *user, bool first,
                    int *ids, int max)
{
    return template_render_with(t, system, user, first, (template_flags){0}, ids, max);
}

char *template_render_text(const chat_template *t, const char *system, const char *user,
                           bool first)
{
    return template_render_text_with(t, system, user, first, (template_flags){0});
}

char *template_render_text_with(const chat_template *t, const char *system, const char *user,
                                bool first, template_flags flags)
{
    turn_builder b = {.t = t, .as_text = true, .no_think = flags.no_think};
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
