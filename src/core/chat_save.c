/* chat_save.c — a dialog to and from a chatfile (chat.h: chat_to_file,
 * chat_branches_to_file, chat_save, chat_restore).
 *
 * Saving writes each turn's texts, its token ids as the engine holds them and its
 * reply's other branches; restoring rebuilds the turns, re-prefills those the file
 * says were in the context (their saved ids when the vocabulary matches, else the
 * texts tokenized again) and drops more of the oldest when this context is smaller. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_internal.h"
#include "chatfile.h"

llm_status chat_to_file(const chat *c, chatfile *cf, llm_err *err)
{
    chatfile_init(cf);
    const int *seq = engine_tokens(c->e);
    cf->vocab_size = tokenizer_vocab_size(c->tok);
    cf->sampler = *engine_sampler_config(c->e);
    cf->steps = c->max_reply;
    cf->ctx = engine_ctx(c->e);
    llm_status st;
    if ((st = chatfile_set(&cf->model, engine_model(c->e)->path, err)) != LLM_OK ||
        (st = chatfile_set(&cf->template_name, template_name(c->tmpl), err)) != LLM_OK ||
        (st = chatfile_set(&cf->system, c->system, err)) != LLM_OK)
        goto fail;
    for (int i = 0; i < c->n_turns; i++) {
        const turn *t = &c->turns[i];
        const int *ids = NULL;
        int n = 0;
        if (i >= c->first) {
            ids = seq + t->view.reply_start;
            n = t->view.end - t->view.reply_start;
            if (n > 0 && template_is_stop(c->tmpl, ids[n - 1]))
                n--; /* the closing token: restoring closes every reply again */
        }
        if ((st = chatfile_add_turn(cf, t->user, t->reply, ids, n, t->view.complete, t->view.cut,
                                    i >= c->first, err)) != LLM_OK)
            goto fail;
    }
    return LLM_OK;
fail:
    chatfile_clear(cf);
    return st;
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
            if (n > 0 && template_is_stop(c->tmpl, b->tokens[n - 1]))
                n--; /* the closing token, as for the reply */
            llm_status st = chatfile_add_branch(cf, i, b->text, b->tokens, n, b->complete,
                                                b->cut, err);
            if (st != LLM_OK)
                return st;
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

/* The ids of a saved reply (text, and its ids when known) followed by the end token
 * when `close`, from the file when they belong to this vocabulary, else from
 * tokenizing the text; *n receives the count. */
static int *saved_reply_ids(const chat *c, const chatfile *cf, const char *reply,
                            const int *reply_tokens, int n_reply_tokens, bool close, int *n)
{
    int vocab = tokenizer_vocab_size(c->tok);
    int count;
    int *ids;
    if (reply_tokens && cf->vocab_size == vocab) {
        count = n_reply_tokens;
        ids = malloc(sizeof(int) * ((size_t)count + 1));
        if (ids)
            memcpy(ids, reply_tokens, sizeof(int) * (size_t)count);
    } else {
        count = *reply ? tokenizer_encode(c->tok, reply, NULL, 0) : 0;
        if (count < 0)
            return NULL;
        ids = malloc(sizeof(int) * ((size_t)count + 1));
        if (ids && count > 0)
            tokenizer_encode(c->tok, reply, ids, count);
    }
    if (!ids)
        return NULL;
    for (int k = 0; k < count; k++)
        if (ids[k] < 0 || ids[k] >= vocab || ids[k] == tokenizer_bos(c->tok))
            ids[k] = tokenizer_unk(c->tok); /* cannot happen for a checked file; keeps the cache sane */
    ids[count] = template_end_token(c->tmpl);
    *n = count + (close ? 1 : 0);
    return ids;
}

/* The ids of a saved turn's reply followed by the end token. */
static int *restored_ids(const chat *c, const chatfile *cf, const chatfile_turn *ft, int *n)
{
    return saved_reply_ids(c, cf, ft->reply, ft->reply_tokens, ft->n_reply_tokens, true, n);
}

/* Turn t's branches from the saved turn ft (the reply in the context is the turn's). */
static llm_status restore_branches(chat *c, const chatfile *cf, const chatfile_turn *ft,
                                   turn *t, llm_err *err)
{
    for (int k = 0; k <= ft->n_branches && ft->n_branches > 0; k++) {
        if (k == ft->branch) {
            if (branches_append(&t->br, NULL, true, err) != LLM_OK)
                return LLM_ERR_NOMEM;
            continue;
        }
        const chatfile_branch *fb = &ft->branches[k < ft->branch ? k : k - 1];
        reply_branch b = {.open = !fb->complete, .complete = fb->complete, .cut = fb->cut};
        b.tokens = saved_reply_ids(c, cf, fb->reply, fb->reply_tokens, fb->n_reply_tokens,
                                   fb->complete, &b.n_tokens);
        b.text = strdup(fb->reply);
        if (!b.tokens || !b.text || branches_append(&t->br, &b, false, err) != LLM_OK) {
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
    /* Every turn comes back closed; those out of the context in the file stay out. */
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
        if (t->user && t->reply && i >= kept_first)
            t->restored = restored_ids(c, cf, ft, &t->n_restored);
        if (!t->user || !t->reply || (i >= kept_first && !t->restored) ||
            restore_branches(c, cf, ft, t, err) != LLM_OK) {
            c->n_turns = i + 1;
            chat_reset(c);
            return llm_fail(err, LLM_ERR_NOMEM, "out of memory restoring the chat");
        }
        t->view.user = t->user;
        t->view.reply = t->reply;
        t->view.start = t->view.reply_start = t->view.end = -1;
        t->view.complete = true;
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
    if (drop > 0) {
        c->has_notice = true;
        snprintf(c->notice, sizeof c->notice,
                 "the context holds %d tokens: the %d oldest turn%s of the saved chat stay "
                 "out of it", ctx, drop, drop == 1 ? "" : "s");
    }
    return LLM_OK;
}
