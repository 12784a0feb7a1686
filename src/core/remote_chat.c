/* remote_chat.c — a dialog with a served model: turns, the sequence, its records (see
 * remote_chat.h). */
#include "remote_chat.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { REMOTE_CHAT_TOP = 20 }; /* alternatives asked per token (vLLM's default cap) */

typedef struct {
    char *user;
    char *reply;
    size_t reply_len, reply_cap;
    int *span_pos;
    size_t *span_off;
    int n_spans, cap_pos, cap_off;
    remote_turn view; /* what remote_chat_turn hands out */
} turn;

struct remote_chat {
    remote *r;
    char *system;
    sampler_config sampler;
    turn *turns;
    int n_turns, cap_turns;
    int *seq;
    step_record *recs;
    int n, cap_seq, cap_recs;
    char **pieces; /* by id */
    int n_pieces;
    remote_stream *stream;
    remote_result res;
    int arrived;   /* tokens since the last step */
    remote_chat_observer observe;
    void *observe_user;
    bool nomem;    /* a token could not be kept */
    bool by_text;  /* the server renders the dialog inside the request and names tokens
                      by their text (ollama; an OpenAI-compatible server that does not
                      tokenize): the chat numbers them */
};

llm_status remote_chat_new(remote *r, const char *system, const sampler_config *s,
                           remote_chat **out, llm_err *err)
{
    remote_chat *c = calloc(1, sizeof *c);
    if (!c || (system && *system && !(c->system = strdup(system)))) {
        free(c);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    }
    c->r = r;
    const remote_info *in = remote_describe(r);
    c->by_text = in->api == REMOTE_OLLAMA || (in->api == REMOTE_OPENAI && !in->tokenizes);
    if (s)
        c->sampler = *s;
    else
        sampler_config_default(&c->sampler);
    *out = c;
    return LLM_OK;
}

static void free_turns(remote_chat *c)
{
    for (int i = 0; i < c->n_turns; i++) {
        free(c->turns[i].user);
        free(c->turns[i].reply);
        free(c->turns[i].span_pos);
        free(c->turns[i].span_off);
    }
    c->n_turns = 0;
}

void remote_chat_free(remote_chat *c)
{
    if (!c)
        return;
    remote_stream_close(c->stream);
    free_turns(c);
    free(c->turns);
    for (int i = 0; i < c->n_pieces; i++)
        free(c->pieces[i]);
    free(c->pieces);
    free(c->seq);
    free(c->recs);
    free(c->system);
    free(c);
}

const char *remote_chat_system(const remote_chat *c)
{
    return c->system;
}

llm_status remote_chat_set_system(remote_chat *c, const char *system, llm_err *err)
{
    char *copy = NULL;
    if (system && *system && !(copy = strdup(system)))
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    free(c->system);
    c->system = copy;
    return LLM_OK;
}

void remote_chat_reset(remote_chat *c)
{
    remote_chat_stop(c);
    free_turns(c);
    c->n = 0;
}

void remote_chat_set_observer(remote_chat *c, remote_chat_observer fn, void *user)
{
    c->observe = fn;
    c->observe_user = user;
}

void remote_chat_finish(remote_chat *c)
{
    if (c->observe && c->n > 0 && c->recs[c->n - 1].next < 0)
        c->observe(c->observe_user, &c->recs[c->n - 1]);
}

void remote_chat_set_sampler(remote_chat *c, const sampler_config *s)
{
    c->sampler = *s;
}

const sampler_config *remote_chat_sampler(const remote_chat *c)
{
    return &c->sampler;
}

remote *remote_chat_remote(const remote_chat *c)
{
    return c->r;
}

bool remote_chat_replying(const remote_chat *c)
{
    return c->stream != NULL;
}

int remote_chat_turn_count(const remote_chat *c)
{
    return c->n_turns;
}

const remote_turn *remote_chat_turn(const remote_chat *c, int i)
{
    if (i < 0 || i >= c->n_turns)
        return NULL;
    turn *t = &c->turns[i];
    t->view.user = t->user;
    t->view.reply = t->reply ? t->reply : "";
    return &t->view;
}

int remote_chat_reply_spans(const remote_chat *c, int i, int *pos, size_t *off, int max)
{
    if (i < 0 || i >= c->n_turns)
        return 0;
    const turn *t = &c->turns[i];
    for (int k = 0; k < t->n_spans && k < max; k++) {
        pos[k] = t->span_pos[k];
        off[k] = t->span_off[k];
    }
    return t->n_spans;
}

int remote_chat_count(const remote_chat *c)
{
    return c->n;
}

const int *remote_chat_tokens(const remote_chat *c)
{
    return c->seq;
}

const step_record *remote_chat_record(const remote_chat *c, int pos)
{
    return pos >= 0 && pos < c->n ? &c->recs[pos] : NULL;
}

const char *remote_chat_piece(const remote_chat *c, int id)
{
    return id >= 0 && id < c->n_pieces ? c->pieces[id] : NULL;
}

/* ---- growing ---- */

static bool grow(void **p, int *cap, int need, size_t size)
{
    if (need <= *cap)
        return true;
    int n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, (size_t)n * size);
    if (!q)
        return false;
    *p = q;
    *cap = n;
    return true;
}

/* Keeps id's text (the first the server gave). */
static bool set_piece(remote_chat *c, int id, const char *bytes, size_t len)
{
    if (id < 0 || id >= (1 << 24))
        return true;
    if (id >= c->n_pieces) {
        int n = c->n_pieces ? c->n_pieces : 1024;
        while (n <= id)
            n *= 2;
        char **p = realloc(c->pieces, (size_t)n * sizeof *p);
        if (!p)
            return false;
        memset(p + c->n_pieces, 0, (size_t)(n - c->n_pieces) * sizeof *p);
        c->pieces = p;
        c->n_pieces = n;
    }
    if (!c->pieces[id] && !(c->pieces[id] = strndup(bytes, len)))
        return false;
    return true;
}

/* A prompt position at the end of the sequence: no candidates yet. */
static bool push(remote_chat *c, int id, step_phase phase)
{
    if (!grow((void **)&c->seq, &c->cap_seq, c->n + 1, sizeof *c->seq) ||
        !grow((void **)&c->recs, &c->cap_recs, c->n + 1, sizeof *c->recs))
        return false;
    step_record *r = &c->recs[c->n];
    memset(r, 0, sizeof *r);
    r->pos = c->n;
    r->token = id;
    r->phase = phase;
    r->next = -1;
    r->next_prob = NAN;
    r->entropy = NAN;
    r->forward_ms = r->sample_ms = NAN;
    c->seq[c->n++] = id;
    return true;
}

/* The record of pos learns that next follows it. */
static void set_next(step_record *r, int next)
{
    r->next = next;
    r->next_prob = NAN;
    r->next_rank = 0;
    for (int k = 0; k < r->n_top; k++)
        if (r->top[k].id == next) {
            r->next_prob = r->top[k].prob;
            r->next_rank = k + 1;
            break;
        }
}

/* ---- a server that renders the dialog itself and names tokens by their text ---- */

/* Such a server renders the dialog inside the request and says nothing of its tokens:
 * each message is one position standing for the whole dialog rendered (this id, with
 * this piece), and the reply's tokens are numbered by their text as they first come. */
enum { DIALOG_ID = 0 };
static const char DIALOG_PIECE[] = "<dialog>";

/* The id the chat gives a token the server names by its text: the text's, when
 * another token had it, else the next free one; -1 on no memory. */
static int text_id(remote_chat *c, const char *text, size_t len)
{
    for (int id = DIALOG_ID + 1; id < c->n_pieces && c->pieces[id]; id++)
        if (strlen(c->pieces[id]) == len && memcmp(c->pieces[id], text, len) == 0)
            return id;
    int id = DIALOG_ID + 1;
    while (id < c->n_pieces && c->pieces[id])
        id++;
    return set_piece(c, id, text, len) ? id : -1;
}

/* t with the chat's ids in place of the missing ones. */
static bool number_by_text(remote_chat *c, const remote_token *t, remote_token *out)
{
    *out = *t;
    if (out->id < 0 && (out->id = text_id(c, t->piece, t->piece_len)) < 0)
        return false;
    for (int k = 0; k < t->n_top; k++)
        if (out->top[k].id < 0 &&
            (out->top[k].id = text_id(c, t->top[k].piece, t->top[k].piece_len)) < 0)
            return false;
    return true;
}

/* ---- a message and its reply ---- */

/* Appends token id (its text piece) to the sequence and to the newest turn's reply;
 * false on no memory. */
static bool append_to_reply(remote_chat *c, turn *tn, int id, step_phase phase, const char *piece,
                            size_t len)
{
    if (!push(c, id, phase) ||
        !grow((void **)&tn->span_pos, &tn->cap_pos, tn->n_spans + 1, sizeof *tn->span_pos) ||
        !grow((void **)&tn->span_off, &tn->cap_off, tn->n_spans + 1, sizeof *tn->span_off))
        return false;
    if (tn->reply_len + len + 1 > tn->reply_cap) {
        size_t n = tn->reply_cap ? tn->reply_cap : 256;
        while (n < tn->reply_len + len + 1)
            n *= 2;
        char *p = realloc(tn->reply, n);
        if (!p)
            return false;
        tn->reply = p;
        tn->reply_cap = n;
    }
    tn->span_pos[tn->n_spans] = c->n - 1;
    tn->span_off[tn->n_spans++] = tn->reply_len;
    memcpy(tn->reply + tn->reply_len, piece, len);
    tn->reply_len += len;
    tn->reply[tn->reply_len] = '\0';
    tn->view.end = c->n;
    return true;
}

/* Whether a piece of t (the token's or a candidate's) holds a NUL byte. */
static bool has_nul(const remote_token *t)
{
    if (memchr(t->piece, '\0', t->piece_len))
        return true;
    for (int k = 0; k < t->n_top; k++)
        if (memchr(t->top[k].piece, '\0', t->top[k].piece_len))
            return true;
    return false;
}

/* The piece's NUL bytes as U+2400 (the symbol for NUL, three bytes), as much as
 * REMOTE_PIECE_MAX holds. */
static void nul_pictures(char *piece, size_t *len)
{
    char out[REMOTE_PIECE_MAX];
    size_t o = 0;
    for (size_t i = 0; i < *len; i++) {
        bool nul = piece[i] == '\0';
        if (o + (nul ? 3 : 1) > sizeof out - 1)
            break;
        if (nul) {
            memcpy(out + o, "\xe2\x90\x80", 3);
            o += 3;
        } else {
            out[o++] = piece[i];
        }
    }
    memcpy(piece, out, o);
    piece[o] = '\0';
    *len = o;
}

static bool on_token(void *user, const remote_token *given)
{
    remote_chat *c = user;
    remote_token numbered, clean;
    const remote_token *t = given;
    if (has_nul(given)) { /* the chat's texts are C strings: a NUL byte shows as U+2400 */
        clean = *given;
        nul_pictures(clean.piece, &clean.piece_len);
        for (int k = 0; k < clean.n_top; k++)
            nul_pictures(clean.top[k].piece, &clean.top[k].piece_len);
        given = t = &clean;
    }
    if (c->by_text) {
        if (!number_by_text(c, given, &numbered)) {
            c->nomem = true;
            return false;
        }
        t = &numbered;
    }
    turn *tn = &c->turns[c->n_turns - 1];
    int pos = c->n - 1;
    step_record *r = &c->recs[pos];
    remote_record(t, pos, r->token, r->phase, r);
    bool ok = set_piece(c, t->id, t->piece, t->piece_len);
    for (int k = 0; ok && k < t->n_top; k++)
        ok = set_piece(c, t->top[k].id, t->top[k].piece, t->top[k].piece_len);
    if (c->observe) /* after the pieces: a trace writes the candidates' */
        c->observe(c->observe_user, r);
    if (!ok || !append_to_reply(c, tn, t->id, STEP_GEN, t->piece, t->piece_len)) {
        c->nomem = true;
        return false;
    }
    c->arrived++;
    return true;
}

llm_status remote_chat_add_turn(remote_chat *c, const char *user, const char *reply,
                                bool complete, bool cut, llm_err *err)
{
    if (c->stream)
        return llm_fail(err, LLM_ERR_ARG, "a reply is being written");
    if (!grow((void **)&c->turns, &c->cap_turns, c->n_turns + 1, sizeof *c->turns))
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    turn *t = &c->turns[c->n_turns];
    memset(t, 0, sizeof *t);
    t->user = strdup(user);
    t->reply = strdup(reply ? reply : "");
    if (!t->user || !t->reply) {
        free(t->user);
        free(t->reply);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    }
    t->reply_len = strlen(t->reply);
    t->reply_cap = t->reply_len + 1;
    t->view.complete = complete;
    t->view.cut = cut;
    c->n_turns++;
    return LLM_OK;
}

/* The dialog so far and the new message, as messages. */
static remote_message *messages(const remote_chat *c, const char *user, int *n)
{
    remote_message *m = malloc((size_t)(2 * c->n_turns + 2) * sizeof *m);
    if (!m)
        return NULL;
    int k = 0;
    if (c->system)
        m[k++] = (remote_message){"system", c->system};
    for (int i = 0; i < c->n_turns; i++) {
        m[k++] = (remote_message){"user", c->turns[i].user};
        m[k++] = (remote_message){"assistant", c->turns[i].reply ? c->turns[i].reply : ""};
    }
    m[k++] = (remote_message){"user", user};
    *n = k;
    return m;
}

/* Adds a turn for user's message, its reply at the end of the sequence; false on no
 * memory. */
static bool add_open_turn(remote_chat *c, const char *user)
{
    if (!grow((void **)&c->turns, &c->cap_turns, c->n_turns + 1, sizeof *c->turns))
        return false;
    turn *t = &c->turns[c->n_turns];
    memset(t, 0, sizeof *t);
    if (!(t->user = strdup(user)))
        return false;
    t->view.reply_start = t->view.end = c->n;
    c->n_turns++;
    return true;
}

/* ollama (POST /api/chat), an OpenAI-compatible server that does not tokenize (POST
 * /v1/chat/completions): the dialog goes as messages and is rendered inside the
 * request; the sequence gets one position standing for it (DIALOG_ID). Takes m. */
static llm_status begin_rendered_there(remote_chat *c, const char *user, remote_message *m,
                                       int n_msg, int max_reply, llm_err *err)
{
    int before = c->n;
    if (!set_piece(c, DIALOG_ID, DIALOG_PIECE, strlen(DIALOG_PIECE)) ||
        !push(c, DIALOG_ID, STEP_PROMPT) || !add_open_turn(c, user)) {
        c->n = before;
        free(m);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    }
    if (before > 0) {
        c->recs[before - 1].next = DIALOG_ID;
        if (c->observe)
            c->observe(c->observe_user, &c->recs[before - 1]);
    }
    remote_request q = {.messages = m, .n_messages = n_msg, .top_n = REMOTE_CHAT_TOP,
                        .sampler = c->sampler, .max_tokens = max_reply};
    c->arrived = 0;
    c->nomem = false;
    llm_status st = remote_stream_open(c->r, &q, on_token, c, &c->res, &c->stream, err);
    free(m); /* the request's body holds them now */
    if (st != LLM_OK) {
        c->n_turns--;
        free(c->turns[c->n_turns].user);
        c->n = before;
    }
    return st;
}

llm_status remote_chat_begin(remote_chat *c, const char *user, int max_reply, llm_err *err)
{
    if (c->stream)
        return llm_fail(err, LLM_ERR_ARG, "a reply is being written");
    int n_msg;
    remote_message *m = messages(c, user, &n_msg);
    if (!m)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    const remote_info *in = remote_describe(c->r);
    if (c->by_text)
        return begin_rendered_there(c, user, m, n_msg, max_reply, err);
    int *ids, n_ids;
    char **pieces;
    llm_status st = remote_render_chat(c->r, m, n_msg, &ids, &pieces, &n_ids, err);
    free(m);
    if (st != LLM_OK)
        return st;
    if (in->n_ctx > 0 && n_ids >= in->n_ctx) {
        st = llm_fail(err, LLM_ERR_CONTEXT, "the dialog is %d tokens and the server's context %d: "
                                            "no room for a reply", n_ids, in->n_ctx);
        goto out;
    }
    if (!grow((void **)&c->turns, &c->cap_turns, c->n_turns + 1, sizeof *c->turns)) {
        st = llm_fail(err, LLM_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < n_ids; i++)
        if (!set_piece(c, ids[i], pieces[i], strlen(pieces[i]))) {
            st = llm_fail(err, LLM_ERR_NOMEM, "out of memory");
            goto out;
        }
    /* the positions the new prompt shares with the sequence keep their records */
    int same = 0;
    while (same < c->n && same < n_ids && c->seq[same] == ids[same])
        same++;
    c->n = same;
    if (same > 0)
        set_next(&c->recs[same - 1], same < n_ids ? ids[same] : -1);
    for (int i = same; i < n_ids; i++) {
        if (!push(c, ids[i], STEP_PROMPT)) {
            st = llm_fail(err, LLM_ERR_NOMEM, "out of memory");
            goto out;
        }
        if (i > 0)
            c->recs[i - 1].next = ids[i];
    }
    if (c->observe)
        for (int i = same > 0 ? same - 1 : 0; i < n_ids - 1; i++)
            c->observe(c->observe_user, &c->recs[i]);
    turn *t = &c->turns[c->n_turns];
    memset(t, 0, sizeof *t);
    if (!(t->user = strdup(user))) {
        st = llm_fail(err, LLM_ERR_NOMEM, "out of memory");
        goto out;
    }
    t->view.reply_start = t->view.end = n_ids;
    c->n_turns++;
    remote_request q = {.prompt = ids, .n_prompt = n_ids, .top_n = REMOTE_CHAT_TOP,
                        .sampler = c->sampler};
    q.max_tokens = max_reply > 0 ? max_reply : in->n_ctx > 0 ? in->n_ctx - n_ids : 0;
    c->arrived = 0;
    c->nomem = false;
    st = remote_stream_open(c->r, &q, on_token, c, &c->res, &c->stream, err);
    if (st != LLM_OK) {
        c->n_turns--;
        free(t->user);
    }
out:
    free(ids);
    remote_pieces_free(pieces, n_ids);
    return st;
}

remote_chat_progress remote_chat_step(remote_chat *c, int timeout_ms, int *n_new, llm_err *err)
{
    *n_new = 0;
    if (!c->stream)
        return REMOTE_CHAT_DONE;
    bool done = false;
    c->arrived = 0;
    llm_status st = remote_stream_poll(c->stream, timeout_ms, &done, err);
    *n_new = c->arrived;
    if (!done)
        return REMOTE_CHAT_GENERATING;
    remote_stream_close(c->stream);
    c->stream = NULL;
    turn *t = &c->turns[c->n_turns - 1];
    if (st == LLM_OK) {
        /* the step limit cuts a reply short; the model's end or a stop string ends it */
        t->view.complete = strcmp(c->res.stop, "limit") != 0;
        t->view.cut = !t->view.complete;
        return REMOTE_CHAT_DONE;
    }
    if (c->nomem)
        llm_fail(err, LLM_ERR_NOMEM, "out of memory for the reply's tokens");
    t->view.cut = true;
    return REMOTE_CHAT_ERROR;
}

void remote_chat_stop(remote_chat *c)
{
    if (!c->stream)
        return;
    remote_stream_close(c->stream);
    c->stream = NULL;
    c->turns[c->n_turns - 1].view.cut = true;
}

llm_status remote_chat_resume_at(remote_chat *c, int pos, const int *forced, int n_forced,
                                 int max_reply, int max_new, llm_err *err)
{
    if (c->by_text)
        return llm_fail(err, LLM_ERR_ARG, "the server renders the dialog itself and takes no "
                                          "token ids: a reply cannot go on from a chosen position");
    if (c->n_turns == 0)
        return llm_fail(err, LLM_ERR_ARG, "there is no reply");
    turn *tn = &c->turns[c->n_turns - 1];
    if (tn->view.end != c->n || pos < tn->view.reply_start || pos > c->n || pos < 1)
        return llm_fail(err, LLM_ERR_ARG, "position %d is not in the newest reply (%d-%d)", pos,
                        tn->view.reply_start, c->n);
    for (int i = 0; i < n_forced; i++)
        if (!remote_chat_piece(c, forced[i]))
            return llm_fail(err, LLM_ERR_ARG, "token %d: the server never named it", forced[i]);
    remote_chat_stop(c);
    /* the reply from pos on is forgotten */
    c->n = pos;
    while (tn->n_spans > 0 && tn->span_pos[tn->n_spans - 1] >= pos)
        tn->reply_len = tn->span_off[--tn->n_spans];
    if (tn->reply)
        tn->reply[tn->reply_len] = '\0';
    tn->view.end = pos;
    tn->view.complete = tn->view.cut = false;
    set_next(&c->recs[pos - 1], n_forced > 0 ? forced[0] : -1);
    for (int i = 0; i < n_forced; i++) {
        const char *piece = remote_chat_piece(c, forced[i]);
        if (i > 0)
            set_next(&c->recs[c->n - 1], forced[i]);
        if (c->observe)
            c->observe(c->observe_user, &c->recs[c->n - 1]);
        if (!append_to_reply(c, tn, forced[i], STEP_FORCED, piece, strlen(piece)))
            return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    }
    const remote_info *in = remote_describe(c->r);
    /* the tokens the request may bring: what the step limit or the context leaves, and
       at most max_new */
    int made = c->n - tn->view.reply_start, left = 0;
    bool limited = max_reply > 0 || in->n_ctx > 0;
    if (max_reply > 0)
        left = max_reply - made;
    else if (in->n_ctx > 0)
        left = in->n_ctx - c->n;
    if (max_new < 0 || (limited && left <= 0)) {
        tn->view.cut = true; /* nothing more comes now: the reply stays stopped */
        return LLM_OK;
    }
    if (max_new > 0 && (!limited || max_new < left))
        left = max_new;
    remote_request q = {.prompt = c->seq, .n_prompt = c->n, .top_n = REMOTE_CHAT_TOP,
                        .sampler = c->sampler, .max_tokens = left};
    c->arrived = 0;
    c->nomem = false;
    return remote_stream_open(c->r, &q, on_token, c, &c->res, &c->stream, err);
}

llm_status remote_chat_force_text(remote_chat *c, const char *text, int max_reply, llm_err *err)
{
    if (c->by_text)
        return llm_fail(err, LLM_ERR_ARG, "the server renders the dialog itself and takes no "
                                          "token ids: text cannot be forced into a reply");
    if (c->n_turns == 0)
        return llm_fail(err, LLM_ERR_ARG, "there is no reply to force text into: send a message "
                                          "first");
    int *ids, n;
    char **pieces;
    llm_status st = remote_tokenize_pieces(c->r, text, false, &ids, &pieces, &n, err);
    if (st != LLM_OK)
        return st;
    for (int i = 0; st == LLM_OK && i < n; i++)
        if (!set_piece(c, ids[i], pieces[i], strlen(pieces[i])))
            st = llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    if (st == LLM_OK && n == 0)
        st = llm_fail(err, LLM_ERR_ARG, "the text has no tokens");
    if (st == LLM_OK)
        st = remote_chat_resume_at(c, c->turns[c->n_turns - 1].view.end, ids, n, max_reply, 0,
                                   err);
    free(ids);
    remote_pieces_free(pieces, n);
    return st;
}
