/* chat.c — the dialog on top of an engine (chat.h): turns rendered by a chat template
 * (template.h; Llama 2's by default), replies that run until one of its stop tokens.
 *
 * Owns the system prompt, each turn's user and reply texts, and the default template
 * (a template given to chat_new_template is borrowed). The engine holds the
 * token sequence; a turn remembers where its tokens sit in it. When a new turn does
 * not fit, the oldest turns are dropped and the kept ones re-prefilled: their reply
 * tokens are copied from the engine (exactly what the model produced), their
 * template re-rendered so that the first kept turn carries the system prompt.
 * Dropped turns stay in the dialog, out of the context (their texts only), so that a
 * saved chat holds the whole conversation. Saving and restoring are chat_save.c's. */
#include "chat.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "branch.h"
#include "chat_internal.h"
#include "intervention_json.h"
#include "steering.h"
#include "template.h"

char *chat_template_text(const char *system, const char *user)
{
    static const char sys_fmt[] = "[INST] <<SYS>>\n%s\n<</SYS>>\n\n%s [/INST]";
    static const char plain_fmt[] = "[INST] %s [/INST]";
    bool with_system = system && *system;
    size_t n = strlen(user) + (with_system ? strlen(system) + sizeof sys_fmt : sizeof plain_fmt);
    char *s = malloc(n);
    if (!s)
        return NULL;
    if (with_system)
        snprintf(s, n, sys_fmt, system, user);
    else
        snprintf(s, n, plain_fmt, user);
    return s;
}

int chat_template_tokens(const tokenizer *tok, const char *system, const char *user,
                         int *ids, int max)
{
    chat_template *t;
    if (template_new(TEMPLATE_LLAMA2, tok, &t, NULL) != LLM_OK)
        return -1;
    int n = template_render(t, system, user, true, ids, max);
    template_free(t);
    return n;
}

/* The tokens one turn takes: with the system prompt when it opens the context. */
static int turn_size(const chat *c, const char *user, bool first)
{
    template_flags flags = {.no_think = c->no_think};
    return template_render_with(c->tmpl, first ? c->system : NULL, user, first, flags, NULL, 0);
}

/* A malloc'd token array for one turn's template; *n receives its length. */
static int *render_turn(const chat *c, const char *user, bool first, int *n)
{
    int need = turn_size(c, user, first);
    if (need < 0)
        return NULL;
    int *ids = malloc(sizeof(int) * (need > 0 ? need : 1));
    template_flags flags = {.no_think = c->no_think};
    if (ids)
        template_render_with(c->tmpl, first ? c->system : NULL, user, first, flags, ids, need);
    *n = need;
    return ids;
}

llm_status chat_new_template(engine *e, const chat_template *tmpl, const char *system, chat **out,
                             llm_err *err)
{
    chat *c = calloc(1, sizeof *c);
    if (!c)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory creating the chat");
    c->e = e;
    c->tok = engine_tokenizer(e);
    c->tmpl = tmpl;
    llm_status st = LLM_OK;
    if (!tmpl && (st = template_new(TEMPLATE_LLAMA2, c->tok, &c->own_tmpl, err)) == LLM_OK)
        c->tmpl = c->own_tmpl;
    c->system = strdup(system ? system : "");
    c->no_think = c->tmpl && !template_thinks_by_default(c->tmpl);
    if (st != LLM_OK || !c->system) {
        template_free(c->own_tmpl);
        free(c->system);
        free(c);
        return st != LLM_OK ? st : llm_fail(err, LLM_ERR_NOMEM, "out of memory creating the chat");
    }
    *out = c;
    return LLM_OK;
}

llm_status chat_new(engine *e, const char *system, chat **out, llm_err *err)
{
    return chat_new_template(e, NULL, system, out, err);
}

const chat_template *chat_get_template(const chat *c) { return c->tmpl; }

bool chat_set_thinking(chat *c, bool on)
{
    if (!template_can_think(c->tmpl))
        return false;
    c->no_think = !on;
    return true;
}

bool chat_thinking(const chat *c)
{
    return template_can_think(c->tmpl) && !c->no_think;
}

static void free_turn(turn *t)
{
    free(t->user);
    free(t->reply);
    free(t->restored);
    ran_with_clear(&t->ran);
    branches_free(&t->br);
}

/* Turn i of those in the context (0 = the oldest kept). */
static turn *live(const chat *c, int i) { return &c->turns[c->first + i]; }
static int n_live(const chat *c) { return c->n_turns - c->first; }

llm_status chat_patch_prompts(const chat *c, const char *user, int **clean, int *n_clean,
                              int **corrupt, int *n_corrupt, llm_err *err)
{
    *clean = *corrupt = NULL;
    if (n_live(c) == 0 || c->turns[c->n_turns - 1].view.start < 0)
        return llm_fail(err, LLM_ERR_ARG, "no message in the context to patch: send one first");
    if (!user || !*user)
        return llm_fail(err, LLM_ERR_ARG, "an empty message");
    const chat_turn *v = &c->turns[c->n_turns - 1].view;
    const int *ctx = engine_tokens(c->e);
    int n_turn = 0;
    int *turn_ids = render_turn(c, user, c->n_turns - 1 == c->first, &n_turn);
    *clean = malloc(sizeof(int) * (size_t)(v->reply_start > 0 ? v->reply_start : 1));
    *corrupt = malloc(sizeof(int) * (size_t)(v->start + n_turn + 1));
    if (!turn_ids || !*clean || !*corrupt || engine_pos(c->e) < v->reply_start) {
        free(turn_ids);
        free(*clean);
        free(*corrupt);
        *clean = *corrupt = NULL;
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for the prompts");
    }
    memcpy(*clean, ctx, sizeof(int) * (size_t)v->reply_start);
    memcpy(*corrupt, ctx, sizeof(int) * (size_t)v->start);
    memcpy(*corrupt + v->start, turn_ids, sizeof(int) * (size_t)n_turn);
    free(turn_ids);
    *n_clean = v->reply_start;
    *n_corrupt = v->start + n_turn;
    return LLM_OK;
}

void chat_free(chat *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n_turns; i++)
        free_turn(&c->turns[i]);
    free(c->turns);
    free(c->system);
    template_free(c->own_tmpl);
    free(c);
}

llm_status chat_set_system(chat *c, const char *system, llm_err *err)
{
    char *s = strdup(system ? system : "");
    if (!s)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    free(c->system);
    c->system = s;
    c->system_stale = n_live(c) > 0;
    return LLM_OK;
}

const char *chat_system(const chat *c) { return c->system; }

void chat_reset(chat *c)
{
    engine_finish(c->e); /* the observer (a trace) gets the newest position before it goes */
    for (int i = 0; i < c->n_turns; i++)
        free_turn(&c->turns[i]);
    c->n_turns = 0;
    c->first = 0;
    c->replying = false;
    c->system_stale = false;
    engine_rewind(c->e, 0, NULL);
}

void chat_add_notice(chat *c, const char *fmt, ...)
{
    size_t o = c->has_notice ? strlen(c->notice) : 0;
    if (o && o + 2 < sizeof c->notice) {
        memcpy(c->notice + o, "; ", 3);
        o += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    if (o < sizeof c->notice)
        vsnprintf(c->notice + o, sizeof c->notice - o, fmt, ap);
    va_end(ap);
    c->has_notice = true;
}

const char *chat_take_notice(chat *c)
{
    if (!c->has_notice)
        return NULL;
    c->has_notice = false;
    return c->notice;
}

/* Reply tokens a turn brings to a rebuild. */
static int reply_count(const turn *t)
{
    if (t->restored)
        return t->n_restored;
    return t->view.end > t->view.reply_start ? t->view.end - t->view.reply_start : 0;
}

/* Takes a turn out of the context: its texts stay, its positions go. */
void chat_drop_turn(turn *t)
{
    t->view.start = t->view.reply_start = t->view.end = -1;
    char *fit = realloc(t->reply, t->reply_len + 1);
    if (fit) {
        t->reply = fit;
        t->view.reply = fit;
        t->reply_cap = t->reply_len + 1;
    }
    free(t->restored);
    t->restored = NULL;
    ran_with_clear(&t->ran);
}

bool chat_turn_ran_with(const chat *c, const turn *t, ran_with *out)
{
    if (t->ran.n > 0)
        return ran_with_copy(out, &t->ran);
    ran_with_clear(out);
    const intervention *last = NULL;
    for (int p = t->view.start; p < t->view.end && !t->restored; p++) {
        const intervention *in = engine_ran_with(c->e, p);
        if ((p == t->view.start || in != last) &&  /* compared where the state changes */
            !ran_with_add(out, p - t->view.reply_start, in))
            return false;
        last = in;
    }
    return out->n > 0 || ran_with_add(out, 0, engine_intervention(c->e));
}

/* A copy of ids[0..n) (n > 0) for a turn's `restored`, its count in *count; NULL when
 * out of memory. */
static int *keep_ids(const int *ids, int n, int *count)
{
    int *copy = malloc(sizeof(int) * (size_t)n);
    if (copy)
        memcpy(copy, ids, sizeof(int) * (size_t)n);
    *count = copy ? n : 0;
    return copy;
}

/* Prefills ids[0..n) after what the engine holds, position p with the interventions
 * at[p] (NULL: none), then sets the state in force again. A state that cannot be set
 * (a vector file gone or changed) is said, and its positions run with the state in
 * force; all of them do, said, when the state in force could not be set back (a
 * vector file of its own no longer reads as it did when loaded). */
static llm_status prefill_as_ran(chat *c, const int *ids, const intervention *const *at, int n,
                                 llm_err *err)
{
    steering *s = engine_steering(c->e);
    const intervention *now = engine_intervention(c->e);
    bool apart = false; /* states are compared where the pointer changes */
    const intervention *checked = now; /* the last state whose files were read */
    llm_err why;
    for (int p = 0; p < n; p++) {
        if ((p > 0 && at[p] == at[p - 1]) || intervention_same(at[p], now) ||
            intervention_same(at[p], checked))
            continue;
        apart = true;
        checked = at[p];
        if (steering_check_reload(s, at[p], &why) != LLM_OK) {
            chat_add_notice(c, "the context is read again with the interventions in force, "
                               "not those it ran with: %s", why.text);
            apart = false;
            break;
        }
    }
    if (!apart)
        return engine_prefill(c->e, ids, n, err);
    const intervention *in_force = now;
    llm_status st = LLM_OK;
    bool said = false;
    for (int p = 0, end; p < n && st == LLM_OK; p = end) {
        for (end = p + 1; end < n && (at[end] == at[end - 1] || intervention_same(at[end], at[p]));)
            end++;
        if (!intervention_same(at[p], in_force)) {
            llm_err ignored;
            if (steering_set(s, at[p], &why) == LLM_OK) {
                in_force = at[p];
            } else {
                steering_set(s, now, &ignored); /* as it was, a part set before */
                in_force = now;
                if (!said)
                    chat_add_notice(c, "positions %d-%d are read again with the "
                                       "interventions in force, not those they ran with: %s",
                                    p, end - 1, why.text);
                said = true;
            }
        }
        st = engine_prefill(c->e, ids + p, end - p, err);
    }
    llm_err ignored;
    if (!intervention_same(in_force, now))
        steering_set(s, now, &ignored); /* its files were checked above */
    return st;
}

/* Drops the `drop` oldest turns in the context and re-prefills the rest from
 * position 0, the first with the system prompt. When the prefill fails (or its
 * progress callback stops it), the kept turns hold their reply ids (`restored`) and
 * interventions (`ran`) and the history is marked to be read again by the next turn. */
llm_status chat_rebuild(chat *c, int drop, llm_err *err)
{
    const int *seq = engine_tokens(c->e);
    size_t cap = 0, n = 0;
    int *ids = NULL;
    llm_status st = LLM_OK;
    int first = c->first + drop;
    for (int i = first; i < c->n_turns; i++) { /* before the engine forgets them */
        turn *t = &c->turns[i];
        if (t->ran.n == 0 && !chat_turn_ran_with(c, t, &t->ran))
            return llm_fail(err, LLM_ERR_NOMEM, "out of memory re-reading the dialog");
    }
    for (int i = first; i < c->n_turns; i++) {
        turn *t = &c->turns[i];
        int tn;
        int *tmpl = render_turn(c, t->user, i == first, &tn);
        int reply_n = reply_count(t);
        if (!tmpl || n + tn + reply_n > cap) {
            cap = (n + tn + reply_n) * 2 + 16;
            int *grown = tmpl ? realloc(ids, sizeof(int) * cap) : NULL;
            if (!grown) {
                free(tmpl);
                free(ids);
                return llm_fail(err, LLM_ERR_NOMEM, "out of memory re-reading the dialog");
            }
            ids = grown;
        }
        memcpy(ids + n, tmpl, sizeof(int) * tn);
        free(tmpl);
        memcpy(ids + n + tn, t->restored ? t->restored : seq + t->view.reply_start,
               sizeof(int) * reply_n);
        t->view.start = (int)n;
        t->view.reply_start = (int)(n + tn);
        t->view.end = (int)(n + tn + reply_n);
        n += tn + reply_n;
    }
    const intervention **at = malloc(sizeof *at * (n ? n : 1));
    if (!at) {
        free(ids);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory re-reading the dialog");
    }
    for (int i = first; i < c->n_turns; i++) {
        const turn *t = &c->turns[i];
        for (int p = t->view.start; p < t->view.end; p++)
            at[p] = ran_with_at(&t->ran, p - t->view.reply_start);
    }
    for (int i = c->first; i < first; i++)
        chat_drop_turn(&c->turns[i]);
    c->first = first;
    engine_rewind(c->e, 0, NULL);
    if (n > 0)
        st = prefill_as_ran(c, ids, at, (int)n, err);
    free(at);
    for (int i = first; i < c->n_turns; i++) {
        turn *t = &c->turns[i];
        if (st != LLM_OK) { /* stopped or failed: the next turn reads them again from here */
            if (!t->restored && reply_count(t) > 0)
                t->restored = keep_ids(ids + t->view.reply_start, reply_count(t), &t->n_restored);
            continue;
        }
        free(t->restored);
        t->restored = NULL;
        ran_with_clear(&t->ran); /* the engine's records say it now */
    }
    free(ids);
    c->system_stale = st != LLM_OK;
    return st;
}

/* The fewest of the oldest turns in the context to drop so that the rest, rebuilt
 * (the first kept one with the system prompt), takes at most `room` tokens: n_live(c)
 * when none fits. One pass from the newest turn back, so long dialogs cost linear
 * time. */
int chat_drop_to_fit(const chat *c, long room)
{
    int n = n_live(c), best = n;
    long tail = 0; /* tokens of the turns after `drop`, without the system prompt */
    for (int drop = n - 1; drop >= 0; drop--) {
        const turn *t = live(c, drop);
        long with_system = turn_size(c, t->user, true) + reply_count(t);
        if (with_system + tail <= room)
            best = drop;
        tail += turn_size(c, t->user, false) + reply_count(t);
    }
    return best;
}

llm_status chat_begin(chat *c, const char *user, int max_reply, llm_err *err)
{
    llm_status st;
    if (c->replying && (st = chat_stop(c, err)) != LLM_OK)
        return st;
    int ctx = engine_ctx(c->e);
    /* Room kept free for the reply: its step limit, or a quarter of the context. At
     * most half the context, so that a generous limit does not push out all history
     * (a reply that runs into the end is closed, and the next turn makes room). */
    int reserve = max_reply > 0 ? max_reply : ctx / 4;
    if (reserve > ctx / 2)
        reserve = ctx / 2;

    /* The new turn alone, as the first turn (with the system prompt). */
    int alone = turn_size(c, user, true);
    if (alone < 0)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory tokenizing the message");
    if (alone >= ctx)
        return llm_fail(err, LLM_ERR_CONTEXT,
                        "the message takes %d tokens with the template, but the context "
                        "holds %d: shorten it (or raise -c)", alone, ctx);
    if (reserve > ctx - alone)
        reserve = ctx - alone;

    /* The new turn after the kept history (no system prompt), unless it is the first. */
    int later = n_live(c) == 0 ? alone : turn_size(c, user, false);
    int dropped = 0;
    if (c->system_stale || engine_pos(c->e) + later + reserve > ctx)
        dropped = chat_drop_to_fit(c, (long)ctx - later - reserve);
    if (dropped > 0 || c->system_stale) {
        if ((st = chat_rebuild(c, dropped, err)) != LLM_OK)
            return st;
        if (dropped == 1)
            chat_add_notice(c, "context full: dropped the oldest turn and re-read the rest");
        else if (dropped > 1)
            chat_add_notice(c, "context full: dropped the %d oldest turns and re-read the rest",
                            dropped);
    }

    if (n_live(c) > 0)
        branches_settle(&c->turns[c->n_turns - 1].br, NULL); /* on no memory it is lost */
    int n;
    int *ids = render_turn(c, user, n_live(c) == 0, &n);
    if (!ids)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory tokenizing the message");
    if (c->n_turns == c->cap_turns) {
        int cap = c->cap_turns ? c->cap_turns * 2 : 8;
        turn *grown = realloc(c->turns, sizeof(turn) * cap);
        if (!grown) {
            free(ids);
            return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
        }
        c->turns = grown;
        c->cap_turns = cap;
    }
    turn *t = &c->turns[c->n_turns];
    memset(t, 0, sizeof *t);
    t->user = strdup(user);
    t->reply_cap = 256;
    t->reply = calloc(1, t->reply_cap);
    t->view.user = t->user;
    t->view.reply = t->reply;
    if (!t->user || !t->reply) {
        free_turn(t);
        free(ids);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    }
    t->view.start = engine_pos(c->e);
    t->view.think_opened = template_opens_think(c->tmpl, (template_flags){.no_think = c->no_think});
    st = engine_prefill(c->e, ids, n, err);
    free(ids);
    if (st != LLM_OK) {
        free_turn(t);
        return st;
    }
    t->view.reply_start = t->view.end = engine_pos(c->e);
    c->n_turns++;
    c->replying = true;
    c->max_reply = max_reply;
    c->reply_tokens = 0;
    return LLM_OK;
}

static void append_reply(turn *t, const char *s, size_t n)
{
    if (t->reply_len + n + 1 > t->reply_cap) {
        size_t cap = (t->reply_len + n + 1) * 2;
        char *grown = realloc(t->reply, cap);
        if (!grown)
            return; /* the text is also in the engine's tokens; keep going */
        t->reply = grown;
        t->view.reply = grown;
        t->reply_cap = cap;
    }
    memcpy(t->reply + t->reply_len, s, n);
    t->reply_len += n;
    t->reply[t->reply_len] = '\0';
}

/* Tells the reply's branches about its newest token (a rewound reply that diverges
 * from what it was keeps the old continuation as a branch). */
static void note_token(chat *c, turn *t)
{
    int n = t->view.end - t->view.reply_start;
    if (n > 0)
        branches_note_token(&t->br, n, engine_tokens(c->e)[t->view.end - 1], NULL);
}

/* Closes the open reply with the template's end token (EOS, <|im_end|>) when there is
 * room for it. */
static void close_reply(chat *c, bool cut)
{
    turn *t = &c->turns[c->n_turns - 1];
    int pos = engine_pos(c->e);
    if (pos > 0 && !template_is_stop(c->tmpl, engine_tokens(c->e)[pos - 1]) && pos < engine_ctx(c->e))
        engine_force(c->e, template_end_token(c->tmpl), NULL);
    t->view.end = engine_pos(c->e);
    t->view.complete = template_is_stop(c->tmpl, engine_tokens(c->e)[t->view.end - 1]);
    t->view.cut = cut;
    c->replying = false;
    note_token(c, t);
}

/* The text token tok adds after prev to a reply that holds reply_len bytes so far (no
 * leading spaces on the reply's first bytes): decoded into buf, returned, its length in
 * *n. */
static const char *token_text(const chat *c, size_t reply_len, int prev, int tok, char *buf,
                              size_t size, size_t *n)
{
    *n = tokenizer_decode(c->tok, prev, tok, buf, size);
    const char *s = buf;
    if (reply_len == 0)
        while (*s == ' ')
            s++, (*n)--;
    return s;
}

/* Appends the text token tok adds after prev to the reply; returns those bytes in
 * c->text, or "" when none. */
static const char *reply_add_token(chat *c, turn *t, int prev, int tok)
{
    size_t n;
    const char *s = token_text(c, t->reply_len, prev, tok, c->text, sizeof c->text, &n);
    append_reply(t, s, n);
    return s;
}

int chat_message_spans(const chat *c, int i, int *pos, size_t *offset, int max)
{
    const chat_turn *v = chat_get_turn(c, i);
    if (!v || v->start < 0 || v->reply_start <= v->start || !*v->user)
        return 0;
    /* the turn's prompt decoded, each token's start noted, then the message found in it */
    const int *tokens = engine_tokens(c->e);
    int n_tok = v->reply_start - v->start;
    size_t cap = 256, len = 0;
    char *text = malloc(cap);
    size_t *start = malloc(sizeof *start * (size_t)(n_tok + 1));
    char buf[TOKENIZER_PIECE_MAX + 1];
    int n = 0;
    if (!text || !start)
        goto done;
    for (int p = v->start; p < v->reply_start; p++) {
        size_t bytes = 0;
        if (!tokenizer_is_control(c->tok, tokens[p]))
            bytes = tokenizer_decode(c->tok, p > 0 ? tokens[p - 1] : tokenizer_bos(c->tok), tokens[p], buf,
                                     sizeof buf);
        if (len + bytes + 1 > cap) {
            while (len + bytes + 1 > cap)
                cap *= 2;
            char *grown = realloc(text, cap);
            if (!grown)
                goto done;
            text = grown;
        }
        start[p - v->start] = len;
        memcpy(text + len, buf, bytes);
        len += bytes;
        text[len] = '\0';
    }
    start[n_tok] = len;
    size_t ulen = strlen(v->user);
    const char *found = NULL;
    for (const char *s = strstr(text, v->user); s; s = strstr(s + 1, v->user))
        found = s;
    if (!found)
        goto done;
    size_t u0 = (size_t)(found - text), u1 = u0 + ulen;
    for (int k = 0; k < n_tok; k++) {
        if (start[k + 1] <= u0 || start[k] >= u1 || start[k + 1] == start[k])
            continue;
        if (n < max) {
            pos[n] = v->start + k;
            offset[n] = start[k] > u0 ? start[k] - u0 : 0;
        }
        n++;
    }
done:
    free(text);
    free(start);
    return n;
}

int chat_reply_spans(const chat *c, int i, int *pos, size_t *offset, int max)
{
    const chat_turn *v = chat_get_turn(c, i);
    if (!v || v->reply_start <= 0)
        return 0;
    const int *tokens = engine_tokens(c->e);
    size_t len = 0, reply_len = strlen(v->reply);
    int n = 0;
    char buf[TOKENIZER_PIECE_MAX + 1];
    for (int p = v->reply_start; p < v->end && len < reply_len; p++) {
        int tok = tokens[p];
        if (template_is_stop(c->tmpl, tok) || tok == tokenizer_bos(c->tok))
            continue;
        size_t bytes;
        token_text(c, len, tokens[p - 1], tok, buf, sizeof buf, &bytes);
        if (bytes == 0)
            continue;
        if (n < max) {
            pos[n] = p;
            offset[n] = len;
        }
        n++;
        len += bytes;
    }
    return n;
}

/* The reply's token tok at position p, which the engine has run: counted, and the
 * reply's text, end and state brought up to it. A stop token closes the reply, BOS ends
 * it (the end token takes its place); either is the newest token the engine ran
 * (reply_guesser asks for no guess past it). *text: the bytes it adds. */
static chat_progress took_token(chat *c, turn *t, int p, int tok, bool forced, const char **text)
{
    *text = "";
    c->reply_tokens++;
    t->view.end = p + 1;
    if (tok == tokenizer_bos(c->tok)) {
        /* A new sequence would start: the reply is over. The end token takes BOS's place,
         * the record keeping what the sampler drew. */
        if (forced || engine_replace_sampled(c->e, template_end_token(c->tmpl), NULL) != LLM_OK)
            engine_rewind(c->e, p, NULL);
        close_reply(c, false);
        return CHAT_REPLY_DONE;
    }
    note_token(c, t);
    if (template_is_stop(c->tmpl, tok)) {
        t->view.complete = true;
        c->replying = false;
        return CHAT_REPLY_DONE;
    }
    *text = reply_add_token(c, t, engine_tokens(c->e)[p - 1], tok);
    return CHAT_GENERATING;
}

/* Whether the open reply may take another token; closes it (*progress says why) when
 * not. */
static bool reply_has_room(chat *c, bool forced, chat_progress *progress)
{
    if (!forced && c->max_reply > 0 && c->reply_tokens >= c->max_reply) {
        close_reply(c, true);
        *progress = CHAT_REPLY_LIMIT;
        return false;
    }
    if (engine_pos(c->e) >= engine_ctx(c->e)) {
        close_reply(c, true);
        *progress = CHAT_REPLY_FULL;
        return false;
    }
    return true;
}

/* One reply token: sampled (forced < 0) or the caller's. */
static chat_progress advance(chat *c, int forced, int *token, const char **text, llm_err *err)
{
    *token = -1;
    if (text)
        *text = "";
    if (!c->replying)
        return CHAT_REPLY_DONE;
    turn *t = &c->turns[c->n_turns - 1];
    chat_progress progress;
    if (!reply_has_room(c, forced >= 0, &progress))
        return progress;
    int tok = forced;
    llm_status st = forced < 0 ? engine_step(c->e, &tok, err) : engine_force(c->e, forced, err);
    *token = tok;
    if (st != LLM_OK) {
        close_reply(c, true);
        return st == LLM_ERR_CONTEXT ? CHAT_REPLY_FULL : CHAT_REPLY_ERROR;
    }
    const char *s;
    progress = took_token(c, t, engine_pos(c->e) - 1, tok, forced >= 0, &s);
    if (text)
        *text = s;
    return progress;
}

void chat_set_guesser(chat *c, engine_guesser guesser, void *user, int max_guess)
{
    c->guesser = max_guess > 0 ? guesser : NULL;
    c->guesser_user = user;
    c->max_guess = guesser ? max_guess : 0;
}

/* The chat's guesser as the engine calls it: none after a token that ends the reply
 * (a stop token, BOS), and the guesses cut after the first such one, so that no draw of
 * the sampler is spent past the reply's end (plain steps spend none there). */
static int reply_guesser(void *user, const int *tokens, int n, int *guess, int max)
{
    chat *c = user;
    int x = tokens[n - 1];
    if (template_is_stop(c->tmpl, x) || x == tokenizer_bos(c->tok))
        return 0;
    int g = c->guesser(c->guesser_user, tokens, n, guess, max);
    for (int i = 0; i < g; i++)
        if (template_is_stop(c->tmpl, guess[i]) || guess[i] == tokenizer_bos(c->tok))
            return i + 1;
    return g;
}

chat_progress chat_step_run(chat *c, chat_run *run, llm_err *err)
{
    run->n = 0;
    run->first = engine_pos(c->e);
    run->offset[0] = 0;
    run->text[0] = '\0';
    if (!c->replying)
        return CHAT_REPLY_DONE;
    turn *t = &c->turns[c->n_turns - 1];
    chat_progress progress;
    if (!reply_has_room(c, false, &progress))
        return progress;
    int max = c->guesser ? c->max_guess : 0;
    if (c->max_reply > 0 && max > c->max_reply - c->reply_tokens - 1)
        max = c->max_reply - c->reply_tokens - 1; /* x and the guesses within the limit */
    int got[ENGINE_GUESS_MAX + 1], n_got;
    int pos = engine_pos(c->e);
    llm_status st = engine_step_guessed(c->e, c->guesser ? reply_guesser : NULL, c, max, got,
                                        &n_got, err);
    if (st != LLM_OK) {
        close_reply(c, true);
        return st == LLM_ERR_CONTEXT ? CHAT_REPLY_FULL : CHAT_REPLY_ERROR;
    }
    size_t len = 0;
    progress = CHAT_GENERATING;
    for (int i = 0; i < n_got && progress == CHAT_GENERATING; i++) {
        const char *s;
        progress = took_token(c, t, pos + i, got[i], false, &s);
        size_t n = strlen(s);
        if (len + n >= sizeof run->text)
            n = sizeof run->text - 1 - len; /* cannot happen: each piece fits its share */
        memcpy(run->text + len, s, n);
        len += n;
        run->text[len] = '\0';
        run->tokens[run->n++] = got[i];
        run->offset[run->n] = len;
    }
    return progress;
}

chat_progress chat_step(chat *c, int *token, const char **text, llm_err *err)
{
    return advance(c, -1, token, text, err);
}

llm_status chat_force(chat *c, int token, chat_progress *progress, const char **text, llm_err *err)
{
    int vocab = tokenizer_vocab_size(c->tok);
    if (!c->replying)
        return llm_fail(err, LLM_ERR_ARG, "no reply is open to force a token into");
    if (token < 0 || token >= vocab)
        return llm_fail(err, LLM_ERR_ARG, "token id %d is outside the vocabulary (0..%d)", token,
                        vocab - 1);
    if (token == tokenizer_bos(c->tok))
        return llm_fail(err, LLM_ERR_ARG, "BOS starts a new sequence and cannot be part of a reply");
    int got;
    *progress = advance(c, token, &got, text, err);
    return LLM_OK;
}

/* One past the last reply token of the newest turn, not counting a closing EOS. */
int chat_reply_limit(const chat *c)
{
    if (n_live(c) == 0)
        return -1;
    const chat_turn *v = &c->turns[c->n_turns - 1].view;
    return v->complete ? v->end - 1 : v->end;
}

/* A copy of turn t's reply (the newest) as a branch: its tokens, the records that
 * made them, its text and state. */
static llm_status snapshot_reply(chat *c, const turn *t, reply_branch *out, llm_err *err)
{
    memset(out, 0, sizeof *out);
    int rs = t->view.reply_start, n = t->view.end - rs;
    out->tokens = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    out->records = malloc(sizeof(step_record) * (size_t)(n + 1));
    out->text = strdup(t->reply);
    if (!out->tokens || !out->records || !out->text) {
        branch_free(out);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory keeping the reply's branch");
    }
    memcpy(out->tokens, engine_tokens(c->e) + rs, sizeof(int) * (size_t)n);
    for (int i = 0; i <= n; i++) {
        step_record *r = &out->records[i];
        *r = *engine_record(c->e, rs - 1 + i);
        r->attn = NULL; /* the engine's, recomputed when the branch comes back */
        r->lens = NULL;
    }
    out->n_tokens = n;
    out->open = c->replying;
    out->complete = t->view.complete;
    out->cut = t->view.cut;
    return LLM_OK;
}

/* Forgets the newest reply's tokens from pos on (engine and text); nothing else. */
static llm_status cut_reply(chat *c, turn *t, int pos, llm_err *err)
{
    llm_status st = engine_rewind(c->e, pos, err);
    if (st != LLM_OK)
        return st;
    const int *seq = engine_tokens(c->e);
    t->reply_len = 0;
    t->reply[0] = '\0';
    for (int i = t->view.reply_start; i < pos; i++)
        reply_add_token(c, t, seq[i - 1], seq[i]);
    t->view.end = pos;
    c->reply_tokens = pos - t->view.reply_start;
    return LLM_OK;
}

llm_status chat_rewind(chat *c, int pos, llm_err *err)
{
    if (n_live(c) == 0)
        return llm_fail(err, LLM_ERR_ARG, "there is no reply to rewind");
    turn *t = &c->turns[c->n_turns - 1];
    int limit = chat_reply_limit(c);
    if (pos < t->view.reply_start || pos > limit)
        return llm_fail(err, LLM_ERR_ARG,
                        "cannot rewind to position %d: the last reply spans positions %d-%d",
                        pos, t->view.reply_start, limit);
    llm_status st;
    if (pos < t->view.end && !t->br.stashed) {
        reply_branch cut_off; /* kept until the reply diverges from it (branch.h) */
        if ((st = snapshot_reply(c, t, &cut_off, err)) != LLM_OK)
            return st;
        branches_stash(&t->br, &cut_off);
    }
    if ((st = cut_reply(c, t, pos, err)) != LLM_OK)
        return st;
    t->view.complete = false;
    t->view.cut = false;
    c->replying = true;
    return LLM_OK;
}

llm_status chat_stop(chat *c, llm_err *err)
{
    if (c->replying)
        close_reply(c, true);
    return LLM_OK;
}

llm_status chat_stop_at(chat *c, int pos, llm_err *err)
{
    if (!c->replying)
        return LLM_OK;
    turn *t = &c->turns[c->n_turns - 1];
    if (pos < t->view.reply_start || pos > t->view.end)
        return llm_fail(err, LLM_ERR_ARG,
                        "cannot stop the reply at position %d: it spans positions %d-%d", pos,
                        t->view.reply_start, t->view.end);
    llm_status st;
    if (pos < t->view.end && (st = cut_reply(c, t, pos, err)) != LLM_OK)
        return st;
    close_reply(c, true);
    return LLM_OK;
}

bool chat_replying(const chat *c) { return c->replying; }
int chat_turn_count(const chat *c) { return n_live(c); }

const chat_turn *chat_get_turn(const chat *c, int i)
{
    if (i < 0 || i >= n_live(c))
        return NULL;
    return &live(c, i)->view;
}

int chat_dropped_count(const chat *c) { return c->first; }

const chat_turn *chat_get_dropped(const chat *c, int i)
{
    if (i < 0 || i >= c->first)
        return NULL;
    return &c->turns[i].view;
}

/* ---- branches ---- */

int chat_branch_count(const chat *c, int i)
{
    return i >= 0 && i < n_live(c) ? branches_count(&live(c, i)->br) : 0;
}

int chat_branch_current(const chat *c, int i)
{
    return i >= 0 && i < n_live(c) ? branches_current(&live(c, i)->br) : -1;
}

bool chat_branch_get(const chat *c, int i, int k, chat_branch_view *out)
{
    if (i < 0 || i >= n_live(c) || k < 0 || k >= branches_count(&live(c, i)->br))
        return false;
    const turn *t = live(c, i);
    const int *ids = engine_tokens(c->e) + t->view.reply_start;
    int n = t->view.end - t->view.reply_start;
    const reply_branch *b = branches_get(&t->br, k);
    if (!b) {
        *out = (chat_branch_view){.tokens = ids, .n_tokens = n, .text = t->reply, .fork = -1,
                                  .complete = t->view.complete,
                                  .open = c->replying && i == n_live(c) - 1};
        return true;
    }
    *out = (chat_branch_view){.tokens = b->tokens, .n_tokens = b->n_tokens, .text = b->text,
                              .complete = b->complete, .open = b->open};
    out->fork = t->view.reply_start + branch_common_prefix(ids, n, b->tokens, b->n_tokens);
    return true;
}

/* The interventions branch b's record r (position reply_start - 1 + r) ran with, into
 * *in: from its records, or from a saved chat's segments; false when not known. */
static bool branch_ran_with(const reply_branch *b, int r, const intervention **in)
{
    if (b->records)
        *in = b->records[r].intervention;
    else if (b->ran.n > 0)
        *in = ran_with_at(&b->ran, r - 1);
    return b->records || b->ran.n > 0;
}

/* Branch b, read from a saved chat, back into the context from position `from` (its
 * token `at` in b: the last one before the fork when the reply has one, which ran with
 * the branch's own interventions too): each position with those it ran with (b->ran),
 * the position before `from` kept as it ran. */
static llm_status branch_as_ran(chat *c, int from, const reply_branch *b, int at, llm_err *err)
{
    int n = b->n_tokens - at;
    const intervention **ran = malloc(sizeof *ran * (size_t)n);
    if (!ran)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory switching branches");
    for (int j = 0; j < n; j++)
        ran[j] = ran_with_at(&b->ran, at + j);
    llm_status st = engine_rewind_as_ran(c->e, from, err);
    if (st == LLM_OK)
        st = prefill_as_ran(c, b->tokens + at, ran, n, err);
    free(ran);
    return st;
}

llm_status chat_branch_switch(chat *c, int k, llm_err *err)
{
    if (n_live(c) == 0)
        return llm_fail(err, LLM_ERR_ARG, "there is no reply to switch branches of");
    turn *t = &c->turns[c->n_turns - 1];
    int count = branches_count(&t->br);
    if (k < 0 || k >= count)
        return llm_fail(err, LLM_ERR_ARG, "the reply has %d branch%s: there is no branch %d",
                        count, count == 1 ? "" : "es", k + 1);
    if (k == branches_current(&t->br))
        return LLM_OK;
    llm_status st = branches_settle(&t->br, err); /* keeps k's number */
    reply_branch now, back;
    if (st != LLM_OK || (st = snapshot_reply(c, t, &now, err)) != LLM_OK)
        return st;
    const reply_branch *b = &t->br.slot[k];
    int rs = t->view.reply_start;
    int fork = branch_common_prefix(now.tokens, now.n_tokens, b->tokens, b->n_tokens);
    /* A position before the fork run again since with other interventions than the
     * branch's (a take-back after /knock runs the position before it again; a step
     * may then choose the branch's token anew) holds another cache: the branch comes
     * back from there (records[r] is position rs - 1 + r). */
    const intervention *in;
    for (int r = 0; now.records && r < fork; r++)
        if (branch_ran_with(b, r, &in) && !intervention_same(now.records[r].intervention, in)) {
            fork = r;
            break;
        }
    /* The KV cache up to the fork is the same for both: only the rest runs again. */
    int at = fork > 0 ? fork - 1 : 0; /* the reply's position before the fork, too */
    if (!b->records && b->ran.n > 0)
        st = branch_as_ran(c, rs + at, b, at, err);
    else
        st = engine_restore(c->e, rs + fork, b->tokens + fork, b->n_tokens - fork,
                            b->records ? b->records + fork : NULL, err);
    if (st != LLM_OK) {
        if (engine_pos(c->e) < rs + fork) /* cut before the fork: read back as prompt */
            engine_prefill(c->e, now.tokens + fork - 1, now.n_tokens - fork + 1, NULL);
        else
            engine_restore(c->e, rs + fork, now.tokens + fork, now.n_tokens - fork,
                           now.records + fork, NULL);
        branch_free(&now);
        return st;
    }
    branches_swap(&t->br, k, &now, &back);
    free(t->reply);
    t->reply = back.text;
    t->reply_len = strlen(back.text);
    t->reply_cap = t->reply_len + 1;
    t->view.reply = t->reply;
    back.text = NULL;
    t->view.end = rs + back.n_tokens;
    t->view.complete = back.complete;
    t->view.cut = back.cut;
    c->replying = back.open;
    c->reply_tokens = back.n_tokens;
    branch_free(&back);
    return LLM_OK;
}
