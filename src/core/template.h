/* template.h — chat templates: how one turn of a dialog becomes tokens, and which
 * tokens end a reply.
 *
 *   llama2   BOS "[INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST]" every turn with BOS
 *            (later turns: BOS "[INST] {user} [/INST]"); replies end with EOS.
 *   mistral  BOS "[INST] {system}\n\n{user} [/INST]" once, later "[INST] {user} [/INST]";
 *            replies end with EOS.
 *   zephyr   (TinyLlama's too) BOS "<|system|>\n{system}" EOS "\n<|user|>\n{user}" EOS
 *            "\n<|assistant|>\n", later turns start "\n<|user|>"; replies end with EOS.
 *   chatml   BOS <|im_start|> "system\n{system}" <|im_end|> "\n" <|im_start|> "user\n{user}"
 *            <|im_end|> "\n" <|im_start|> "assistant\n", later turns start with "\n";
 *            replies end with <|im_end|> (or EOS).
 *   llama3   BOS <|start_header_id|> "system" <|end_header_id|> "\n\n{system}" <|eot_id|>
 *            <|start_header_id|> "user" <|end_header_id|> "\n\n{user}" <|eot_id|>
 *            <|start_header_id|> "assistant" <|end_header_id|> "\n\n" (system and user
 *            trimmed of surrounding whitespace, as llama.cpp does); later turns start
 *            with <|start_header_id|>; replies end with <|eot_id|> (or EOS).
 *   qwen3    chatml with a thinking switch (Qwen3's enable_thinking): thinking on (the
 *            default), the assistant's header ends the turn and the model opens its reply
 *            with <think> ... </think>; off, the turn ends with an empty span,
 *            <think> "\n\n" </think> "\n\n", as enable_thinking=false renders it. Replies
 *            end with <|im_end|>. Earlier replies keep their thinking in the context (the
 *            Jinja template drops it from history it re-renders; llmchat does not re-render
 *            replies).
 *   gemma    <start_of_turn> "user\n" "{system}\n\n" "{user}" <end_of_turn> "\n"
 *            <start_of_turn> "model\n" (no system role: the system prompt opens the first
 *            user turn, as Gemma 3's template and llama.cpp fold it; the user's text
 *            trimmed); later turns start with "\n"; replies end with <end_of_turn>.
 *   phi3     <|system|> "\n{system}" <|end|> "\n" <|user|> "\n{user}" <|end|> "\n"
 *            <|assistant|> "\n" (Phi-3, Phi-3.5); later turns start with "\n"; replies end
 *            with <|end|>.
 *   phi4-mini  <|system|> "{system}" <|end|> <|user|> "{user}" <|end|> <|assistant|>, no
 *            newlines (Phi-4-mini); replies end with <|end|>.
 *   harmony  (gpt-oss) <|start|> "system" <|message|> "You are ChatGPT, a large language
 *            model trained by OpenAI.\nKnowledge cutoff: 2024-06\nCurrent date: {date}\n\n
 *            Reasoning: medium\n\n# Valid channels: analysis, commentary, final. Channel
 *            must be included for every message." <|end|>, then the system prompt as the
 *            developer's: <|start|> "developer" <|message|> "# Instructions\n\n{system}\n\n"
 *            <|end|>, then <|start|> "user" <|message|> "{user}" <|end|> <|start|>
 *            "assistant" (gpt-oss's template with its defaults: no tools, reasoning effort
 *            medium; no BOS). Later turns start with <|start|> "user". The model writes
 *            its channels itself: <|channel|> "analysis" <|message|> ... <|end|> <|start|>
 *            "assistant" <|channel|> "final" <|message|> ... and ends with <|return|> (or
 *            <|call|>); <|end|> does not end a reply. Earlier replies stay in the context
 *            as the model wrote them, analysis and <|return|> included (the Jinja template
 *            re-renders them as their final message closed by <|end|>; llmchat does not
 *            re-render replies). The date is the local date when the template is made.
 *   qwen35   (Qwen 3.5) qwen3's, but thinking on, the turn also opens the thinking span:
 *            the assistant's header, then <think> "\n", so the model's reply starts
 *            inside it and closes it with </think> (chat_turn.think_opened); off, the
 *            same empty span as qwen3's.
 *   gemma4   (Gemma 4) BOS <|turn> "system\n{system}" <turn|> "\n" <|turn> "user\n{user}"
 *            <turn|> "\n" <|turn> "model\n" (system and user trimmed), later turns start
 *            with "\n"; replies end with <turn|>. Thinking is off unless asked for (the
 *            template's enable_thinking defaults to false): off, the turn ends with an
 *            empty thought channel, <|channel> "thought\n" <channel|>; on, the first turn's
 *            system block (there even without a system prompt) opens with <|think|> "\n"
 *            (or <|think|> alone, as the model's own template says:
 *            template_follow_jinja) and the model writes its channel itself:
 *            <|channel> "thought\n" ... <channel|>, then the answer. Earlier replies
 *            stay as the model saw them, the empty thought channel before each
 *            included (the Jinja template renders them again without it).
 *   llama3.1 (Llama 3.1, 3.2, 3.3) llama3's, but the first turn always has the system
 *            block, which opens with "Cutting Knowledge Date: December 2023\nToday Date:
 *            {DD Mon YYYY}\n\n" before the system prompt: the date is 26 Jul 2024 as
 *            Llama 3.1's and 3.3's templates have it, or today's, as Llama 3.2's does
 *            (template_follow_jinja).
 * BOS opens the context for every template but llama2 when the vocabulary asks for it
 * (tokenizer.ggml.add_bos_token); llama2 opens every turn with it.
 *
 * A marker such as <|im_start|> is emitted as its token id when the vocabulary has it
 * as a control or user-defined token; otherwise (TinyLlama's "<|user|>") it is text.
 * The text between special tokens, the user's included, is tokenized as text in one
 * piece, so user text never yields a control token whatever it says. Text after a
 * special token gets SentencePiece's leading space, as llama.cpp tokenizes the rendered
 * prompt.
 *
 * Owns nothing but the template object, which borrows the tokenizer. */
#ifndef LLMCHAT_TEMPLATE_H
#define LLMCHAT_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>

#include "status.h"
#include "tokenizer.h"

typedef enum {
    TEMPLATE_LLAMA2 = 0,
    TEMPLATE_MISTRAL,
    TEMPLATE_ZEPHYR,
    TEMPLATE_CHATML,
    TEMPLATE_LLAMA3,
    TEMPLATE_QWEN3,
    TEMPLATE_GEMMA,
    TEMPLATE_PHI3,
    TEMPLATE_PHI4_MINI,
    TEMPLATE_HARMONY,
    TEMPLATE_QWEN35,
    TEMPLATE_GEMMA4,
    TEMPLATE_LLAMA31,
    TEMPLATE_COUNT
} template_kind;

/* "llama2", "mistral", "zephyr", "chatml", "llama3", "qwen3", "gemma", "phi3",
 * "phi4-mini", "harmony", "qwen35", "gemma4", "llama3.1". */
const char *template_kind_name(template_kind k);

/* A name as --template takes it (the names above; "tinyllama" is zephyr, "chatml-think"
 * qwen3, "gpt-oss" harmony, "qwen3.5" qwen35, "gemma-4" gemma4, "llama3.2" and "llama3.3"
 * llama3.1); false when unknown. */
bool template_kind_parse(const char *name, template_kind *out);

/* The names --template takes, for messages: "llama2, mistral, zephyr (or tinyllama),
 * chatml, llama3, llama3.1 (or llama3.2, llama3.3), qwen3 (or chatml-think), qwen35 (or
 * qwen3.5), gemma, gemma4 (or gemma-4), phi3, phi4-mini, harmony (or gpt-oss)". */
const char *template_kind_list(void);

/* Recognises a Jinja chat template (a GGUF file's tokenizer.chat_template) by its
 * structure: <|channel|> with <|start|> and <|message|> is harmony; <|im_start|> is chatml
 * (SmolLM2's, Qwen2.5's), qwen35 when its generation prompt ends in '<think>\n' (Qwen 3.5's,
 * QwQ's), qwen3 when it speaks of enable_thinking or <think> otherwise; <|start_header_id|>
 * with <|end_header_id|> is llama3.1 when it writes a "Cutting Knowledge Date" (Llama 3.1,
 * 3.2 and 3.3's), else llama3; <|turn> with <turn|> is gemma4;
 * <start_of_turn> with <end_of_turn> is gemma; <|end|> with <|assistant|> is phi3 when
 * the marker is followed by a newline, else phi4-mini; <|user|> with <|assistant|> (and
 * no <|end|>) is zephyr; [INST] with a <<SYS>> block is llama2, without one mistral.
 * False for anything else. */
bool template_kind_detect(const char *jinja, template_kind *out);

/* The template to use: name (--template) when given, else the kind the model's Jinja
 * template renders (jinja may be NULL: none), else llama2. note receives what was
 * chosen and why ("chat template chatml (the model's)"; a template not recognised gets
 * a notice that llama2 is used). False when name is not a template's name. */
bool template_choose(const char *name, const char *jinja, template_kind *out, char *note,
                     size_t size);

/* A Jinja template that renders like kind k (what the converter writes into GGUF
 * files). A static string. */
const char *template_kind_jinja(template_kind k);

typedef struct chat_template chat_template;

/* The template of kind k over tok (which must outlive it): its markers resolved to
 * token ids where the vocabulary has them. */
llm_status template_new(template_kind k, const tokenizer *tok, chat_template **out, llm_err *err);
void template_free(chat_template *t); /* NULL does nothing */

/* The date harmony's and llama3.1's system messages give from now on: date is
 * "YYYY-MM-DD" (tests and replays ask for a fixed one); the local date when the template
 * was made until then. */
void template_set_date(chat_template *t, const char *date);

/* Takes from a model's own Jinja template (jinja; NULL does nothing) the details its
 * family's templates do not agree on: for gemma4, whether <|think|> is followed by a
 * newline (google-gemma-4-31B-it's is, the template some Gemma 4 GGUF files carry is
 * not); for llama3.1, whether "Today Date" is today's (Llama 3.2's strftime_now) or the
 * fixed 26 Jul 2024 of Llama 3.1's and 3.3's. A template of another family changes
 * nothing. Without it: gemma4 writes the newline and llama3.1 the fixed date. */
void template_follow_jinja(chat_template *t, const char *jinja);
/* llama3.1's "Today Date" is today's from now on, as Llama 3.2's template has it
 * (--template llama3.2 asks for it where the model has no template of its own). */
void template_date_today(chat_template *t);

template_kind template_kind_of(const chat_template *t);
const char *template_name(const chat_template *t);

/* The tokens of one turn: the template with system and user filled in, up to the
 * assistant's first token. first: the turn opens the context (BOS; the system prompt,
 * NULL or "" for none, goes only there). Writes at most max ids; returns how many the
 * turn needs (may be more than max: call again with room), or -1 when out of memory. */
int template_render(const chat_template *t, const char *system, const char *user, bool first,
                    int *ids, int max);

/* The same turn as text, special tokens written as their pieces ("<|im_start|>",
 * "<s>"): for display and tests. A malloc'd string, NULL when out of memory. */
char *template_render_text(const chat_template *t, const char *system, const char *user,
                           bool first);

/* What a turn may ask of templates that have the switch (template_render is all false). */
typedef struct {
    bool no_think; /* qwen3, qwen35, gemma4: thinking off (enable_thinking=false) */
} template_flags;

int template_render_with(const chat_template *t, const char *system, const char *user,
                         bool first, template_flags flags, int *ids, int max);
char *template_render_text_with(const chat_template *t, const char *system, const char *user,
                                bool first, template_flags flags);

/* Whether the template has a thinking switch (qwen3, qwen35, gemma4), and whether
 * thinking is on when nobody asks (its template's enable_thinking default: qwen3's and
 * qwen35's on, gemma4's off). */
bool template_can_think(const chat_template *t);
bool template_thinks_by_default(const chat_template *t);

/* Whether a turn rendered with flags ends inside an open thinking span, so that the
 * reply starts in it (qwen35 with thinking on). */
bool template_opens_think(const chat_template *t, template_flags flags);

/* Where a reply's thinking is, in token positions of the reply (gemma4's: <|channel>
 * and <channel|> for <think> and </think>). */
typedef struct {
    int start;   /* the <think> token, or 0 when the prompt opened the span */
    int end;     /* one past </think>; n when the span is still open */
    bool closed; /* </think> came */
} template_span;

/* The thinking span of reply (n ids from the reply's first token: with a chat, the
 * engine's tokens from chat_turn.reply_start): from <think> to </think> inclusive, or
 * from the start to </think> when the reply begins inside the span (a template that opens
 * it in the prompt), or from <think> to the end while it is open. False when the
 * vocabulary has no <think> and </think> tokens or the reply has no span. A front end
 * folds [start, end) to show the answer alone. */
bool template_think_span(const chat_template *t, const int *reply, int n, template_span *out);

/* True for a token that ends a reply (EOS, the vocabulary's end-of-generation ids such
 * as <|eot_id|>; <|im_end|> for chatml, and the template's other markers when they
 * are tokens, but not <think>, </think> and harmony's headers; for harmony only
 * <|return|> and <|call|> of its markers). */
bool template_is_stop(const chat_template *t, int id);

/* The token that closes a reply cut short (EOS; <|im_end|> for chatml, qwen3 and qwen35,
 * <|eot_id|> for llama3 and llama3.1, <end_of_turn> for gemma, <turn|> for gemma4,
 * <|end|> for phi3 and phi4-mini, <|return|> for harmony, when the vocabulary has it). */
int template_end_token(const chat_template *t);

#endif
