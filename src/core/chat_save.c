/* chat_save.c — a dialog to and from a chatfile (chat.h: chat_to_file,
 * chat_branches_to_file, chat_save, chat_restore).
 *
 * Saving writes each turn's texts, its token ids as the engine holds them (the token
 * that closed the reply apart, as "end_token") and its reply's other branches, with a
 * fingerprint of the vocabulary and the engine's interventions (set again by the
 * caller before chat_restore, autosave_load_chat) and, for a turn that ran with others,
 * its own by segment (ran_with.h). Restoring rebuilds the turns and re-prefills those the
 * file says were in the context: with the same vocabulary, the saved ids and end tokens,
 * so that the context is token for token the one saved; with another, the texts
 * tokenized again, each reply closed with the template's end token. When this context
 * is smaller, more of the oldest turns stay out. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_internal.h"
#include "chatfile.h"
#include "intervention_json.h"

enum { FINGERPRINT_CHARS = 16 };

/* The fingerprint of tok's vocabulary in out (16 hex digits and a NUL): FNV-1a, 64
 * bits, over the size, the BOS and EOS ids and every token's type and piece. Two
 * vocabularies of one size (Llama 2's and Mistral's: 32,000 tokens) differ in it, so
 * saved ids are used only with the vocabulary they come from. */
static void vocab_fingerprint(const tokenizer *tok, char out[FINGERPRINT_CHARS + 1])
{
    uint64_t h = 14695981039346656037u;
    int n = tokenizer_vocab_size(tok);
    int head[3] = {n, tokenizer_bos(tok), tokenizer_eos(tok)};
    for (size_t k = 0; k < sizeof head; k++)
        h = (h ^ ((const unsigned char *)head)[k]) * 1099511628211u;
    for (int id = 0; id < n; id++) {
        h = (h ^ (unsigned char)tokenizer_token_type(tok, id)) * 1099511628211u;
        for (const unsigned char *p = (const unsigned char *)tokenizer_piece(tok, id);; p++) {
            h = (h ^ *p) * 1099511628211u;
            if (!*p)
                break;
        }
    }
    snprintf(out, FINGERPRINT_CHARS + 1, "%016" PRIx64, h);
}

/* Splits the reply ids[0..*n) as the engine holds them: a closing stop token leaves
 * them (*n one less) and is returned; -1 when none closes them. */
static int take_end_token(const chat *c, const int *ids, int *n)
{
    if (*n > 0 && template_is_stop(c->tmpl, ids[*n - 1]))
        return ids[--*n];
    return -1;
}

llm_status chat_to_file(const chat *c, chatfile *cf, llm_err *err)
{
    chatfile_init(cf);
    const int *seq = engine_tokens(c->e);
    cf->vocab_size = tokenizer_vocab_size(c->tok);
    cf->sampler = *engine_sampler_config(c->e);
    cf->steps = c->max_reply;
    cf->ctx = engine_ctx(c->e);
    char fingerprint[FINGERPRINT_CHARS + 1];
    vocab_fingerprint(c->tok, fingerprint);
    llm_status st;
    if ((st = chatfile_set(&cf->model, engine_model(c->e)->path, err)) != LLM_OK ||
        (st = chatfile_set(&cf->vocab_hash, fingerprint, err)) != LLM_OK ||
        (st = chatfile_set(&cf->template_name, template_name(c->tmpl), err)) != LLM_OK ||
        (st = chatfile_set(&cf->system, c->system, err)) != LLM_OK)
        goto fail;
    const intervention *in = engine_intervention(c->e);
    if (!intervention_is_empty(in) && !(cf->steer = intervention_copy(in, NULL))) {
        st = llm_fail(err, LLM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (int i = 0; i < c->n_turns; i++) {
        const turn *t = &c->turns[i];
        const int *ids = NULL;
        int n = 0, end = -1;
        if (i >= c->first) { /* a context not read again yet holds its ids aside */
            ids = t->restored ? t->restored : seq + t->view.reply_start;
            n = t->restored ? t->n_restored : t->view.end - t->view.reply_start;
            end = take_end_token(c, ids, &n);
        }
        if ((st = chatfile_add_turn(cf, t->user, t->reply, ids, n, t->view.complete, t->view.cut,
                                    i >= c->first, err)) != LLM_OK)
            goto fail;
        chatfile_turn *ft = &cf->turns[cf->n_turns - 1];
        ft->end_token = end;
        if (i >= c->first && !chat_turn_ran_with(c, t, &ft->ran)) {
            st = llm_fail(err, LLM_ERR_NOMEM, "out of memory");
            goto fail;
        }
        if (!ran_with_differs(&ft->ran, in)) /* the file's "steer" says it */
            ran_with_clear(&ft->ran);
    }
    return LLM_OK;
fail:
    chatfile_clear(cf);
    return st;
}

/* Branch b's interventions by segment into out (emptied first): its records' (from
 * the position before the reply, -1), else those it was read with. False on no memory. */
static bool branch_ran_with(const reply_branch *b, ran_with *out)
{
    if (!b->records)
        return ran_with_copy(out, &b->ran);
    ran_with_clear(out);
    for (int k = 0; k <= b->n_tokens; k++)
        if ((k == 0 || b->records[k].intervention != b->records[k - 1].intervention) &&
            !ran_with_add(out, k - 1, b->records[k].intervention))
            return false;
    return true;
}

llm_status chat_branches_to_file(const chat *c, chatfile *cf, llm_err *err)
{
    for (int i = 0; i < c->n_turns && i < cf->n_turns; i++) {
        const reply_branches *bs = &c->turns[i].br;
        int count = branches_count(bs);
        for (int k = 0; k < count && count > 1; k++) {
            const reply_branch *b = branches_get(bs, k);
            if (!b) {
                cf->turns[i].branch = k;
                continue;
            }
            int n = b->n_tokens;
            int end = take_end_token(c, b->tokens, &n);
            llm_status st = chatfile_add_branch(cf, i, b->text, b->tokens, n, b->complete,
                                                b->cut, err);
            if (st != LLM_OK)
                return st;
            chatfile_branch *fb = &cf->turns[i].branches[cf->turns[i].n_branches - 1];
            fb->end_token = end;
            if (!branch_ran_with(b, &fb->ran))
                return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
            if (!ran_with_differs(&fb->ran, cf->steer)) /* the file's "steer" says it */
                ran_with_clear(&fb->ran);
        }
    }
    return LLM_OK;
}

llm_status chat_save(const chat *c, const char *path, llm_err *err)
{
    chatfile cf;
    llm_status st = chat_to_file(c, &cf, err);
    if (st == LLM_OK)
        st = chatfile_write(&cf, path, err);
    chatfile_clear(&cf);
    return st;
}

/* A saved reply as the restore reads it: its text, its ids and the token that closed
 * it (both -1 / NULL when not known), and how it ended. */
typedef struct {
    const char *text;
    const int *ids;
    int n_ids;
    int end_token;
    bool complete, cut;
    bool branch;         /* one of a turn's other branches: left open unless complete */
} saved_reply;

/* Whether cf's ids belong to this chat's vocabulary: the same size and, when the file
 * has a fingerprint (files from before it have none), the same fingerprint. */
static bool same_vocabulary(const chat *c, const chatfile *cf)
{
    if (cf->vocab_size != tokenizer_vocab_size(c->tok))
        return false;
    char fingerprint[FINGERPRINT_CHARS + 1];
    vocab_fingerprint(c->tok, fingerprint);
    return !cf->vocab_hash || strcmp(cf->vocab_hash, fingerprint) == 0;
}

/* The token that closes reply r in the restored context, or -1 for none. With its ids
 * (exact): the token that closed it when saved (when it still ends a reply here),
 * else the template's end token for one closed in a file without "end_token" or
 * still open (it comes back stopped), nothing for one that ran into the end of the
 * context or a branch left open. From its text: the template's end token, for every
 * reply but a branch left open. */
static int closing_token(const chat *c, const saved_reply *r, bool exact)
{
    if (r->branch && !r->complete)
        return -1;
    if (!exact)
        return template_end_token(c->tmpl);
    if (r->end_token >= 0 && template_is_stop(c->tmpl, r->end_token))
        return r->end_token;
    if (!r->complete && r->cut)
        return -1;
    return template_end_token(c->tmpl);
}

/* Reply r's ids followed by the token that closes it, if any: the saved ids when
 * they belong to this vocabulary (same_vocab, and every one inside it), else the text
 * tokenized; *n receives the count, *closed whether a stop token closes them. NULL on
 * no memory. */
static int *saved_reply_ids(const chat *c, bool same_vocab, const saved_reply *r, int *n,
                            bool *closed)
{
    int vocab = tokenizer_vocab_size(c->tok);
    bool exact = r->ids && same_vocab;
    for (int k = 0; exact && k < r->n_ids; k++)
        exact = r->ids[k] >= 0 && r->ids[k] < vocab;
    int count = exact ? r->n_ids : *r->text ? tokenizer_encode(c->tok, r->text, NULL, 0) : 0;
    if (count < 0)
        return NULL;
    int *ids = malloc(sizeof(int) * ((size_t)count + 1));
    if (!ids)
        return NULL;
    if (exact)
        memcpy(ids, r->ids, sizeof(int) * (size_t)count);
    else if (count > 0)
        tokenizer_encode(c->tok, r->text, ids, count);
    int end = closing_token(c, r, exact);
    if (end >= 0 && end < vocab)
        ids[count++] = end;
    *closed = count > 0 && template_is_stop(c->tmpl, ids[count - 1]);
    *n = count;
    return ids;
}

/* The saved turn ft's reply. */
static saved_reply turn_reply(const chatfile_turn *ft)
{
    return (saved_reply){.text = ft->reply, .ids = ft->reply_tokens,
                         .n_ids = ft->n_reply_tokens, .end_token = ft->end_token,
                         .complete = ft->complete, .cut = ft->cut};
}

/* Turn t's branches from the saved turn ft (the reply in the context is the turn's);
 * same_vocab: the file's ids belong to this vocabulary. */
static llm_status restore_branches(chat *c, bool same_vocab, const chatfile_turn *ft, turn *t,
                                   llm_err *err)
{
    for (int k = 0; k <= ft->n_branches && ft->n_branches > 0; k++) {
        if (k == ft->branch) {
            if (branches_append(&t->br, NULL, true, err) != LLM_OK)
                return LLM_ERR_NOMEM;
            continue;
        }
        const chatfile_branch *fb = &ft->branches[k < ft->branch ? k : k - 1];
        reply_branch b = {.open = !fb->complete, .complete = fb->complete, .cut = fb->cut};
        saved_reply r = {.text = fb->reply, .ids = fb->reply_tokens,
                         .n_ids = fb->n_reply_tokens, .end_token = fb->end_token,
                         .complete = fb->complete, .cut = fb->cut, .branch = true};
        bool closed;
        b.tokens = saved_reply_ids(c, same_vocab, &r, &b.n_tokens, &closed);
        b.text = strdup(fb->reply);
        if (!b.tokens || !b.text || !ran_with_copy(&b.ran, &fb->ran) ||
            branches_append(&t->br, &b, false, err) != LLM_OK) {
            branch_free(&b);
            return llm_fail(err, LLM_ERR_NOMEM, "out of memory restoring the chat's branches");
        }
    }
    return LLM_OK;
}

llm_status chat_restore(chat *c, const chatfile *cf, llm_err *err)
{
    llm_status st;
    chat_reset(c);
    if ((st = chat_set_system(c, cf->system, err)) != LLM_OK)
        return st;
    c->system_stale = false;
    if (cf->n_turns > c->cap_turns) {
        turn *grown = realloc(c->turns, sizeof(turn) * (size_t)cf->n_turns);
        if (!grown)
            return llm_fail(err, LLM_ERR_NOMEM, "out of memory restoring the chat");
        c->turns = grown;
        c->cap_turns = cf->n_turns;
    }
    bool same_vocab = same_vocabulary(c, cf);
    /* Those out of the context in the file stay out. */
    int kept_first = cf->n_turns;
    for (int i = 0; i < cf->n_turns; i++) {
        const chatfile_turn *ft = &cf->turns[i];
        turn *t = &c->turns[i];
        memset(t, 0, sizeof *t);
        t->user = strdup(ft->user);
        t->reply_len = strlen(ft->reply);
        t->reply_cap = t->reply_len + 1;
        t->reply = malloc(t->reply_cap);
        if (t->reply)
            memcpy(t->reply, ft->reply, t->reply_cap);
        if (ft->in_context && kept_first == cf->n_turns)
            kept_first = i;
        saved_reply r = turn_reply(ft);
        bool closed = true;
        bool ran = true; /* the file's segments, else the state it set (autosave.h) */
        if (t->user && t->reply && i >= kept_first) {
            t->restored = saved_reply_ids(c, same_vocab, &r, &t->n_restored, &closed);
            ran = ft->ran.n > 0 ? ran_with_copy(&t->ran, &ft->ran)
                                : ran_with_add(&t->ran, 0, engine_intervention(c->e));
        }
        if (!t->user || !t->reply || (i >= kept_first && (!t->restored || !ran)) ||
            restore_branches(c, same_vocab, ft, t, err) != LLM_OK) {
            c->n_turns = i + 1;
            chat_reset(c);
            return llm_fail(err, LLM_ERR_NOMEM, "out of memory restoring the chat");
        }
        t->view.user = t->user;
        t->view.reply = t->reply;
        t->view.start = t->view.reply_start = t->view.end = -1;
        t->view.think_opened = /* as the history is rendered again */
            template_opens_think(c->tmpl, (template_flags){.no_think = c->no_think});
        t->view.complete = closed;
        t->view.cut = ft->cut || !ft->complete;
        c->n_turns = i + 1;
    }
    for (int i = 0; i < kept_first; i++)
        chat_drop_turn(&c->turns[i]);
    c->first = kept_first;

    /* Drop more of the oldest when the rest does not fit this context. */
    int ctx = engine_ctx(c->e);
    int drop = chat_drop_to_fit(c, ctx);
    if ((st = chat_rebuild(c, drop, err)) != LLM_OK) {
        chat_reset(c);
        return st;
    }
    if (drop > 0)
        chat_add_notice(c, "the context holds %d tokens: the %d oldest turn%s of the saved chat "
                           "stay out of it", ctx, drop, drop == 1 ? "" : "s");
    return LLM_OK;
}
