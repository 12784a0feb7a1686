/* branch.c — the branches of one reply (see branch.h).
 *
 * Owns the stored branches and the stash. Knows nothing of the engine or the chat. */
#include "branch.h"

#include <stdlib.h>
#include <string.h>

void branch_free(reply_branch *b)
{
    free(b->tokens);
    free(b->records);
    ran_with_clear(&b->ran);
    free(b->text);
    memset(b, 0, sizeof *b);
}

void branches_free(reply_branches *bs)
{
    for (int i = 0; i < bs->n; i++)
        branch_free(&bs->slot[i]);
    free(bs->slot);
    branch_free(&bs->stash);
    memset(bs, 0, sizeof *bs);
}

int branches_count(const reply_branches *bs)
{
    return (bs->n ? bs->n : 1) + (bs->stashed ? 1 : 0);
}

int branches_current(const reply_branches *bs)
{
    if (bs->stashed)
        return branches_count(bs) - 1; /* settling makes the reply the newest branch */
    return bs->n ? bs->cur : 0;
}

const reply_branch *branches_get(const reply_branches *bs, int i)
{
    if (i < 0 || i >= branches_count(bs) || i == branches_current(bs))
        return NULL;
    if (bs->stashed && (bs->n == 0 || i == bs->cur))
        return &bs->stash; /* it takes the slot of the reply it was cut from */
    return &bs->slot[i];
}

void branches_stash(reply_branches *bs, reply_branch *snap)
{
    if (bs->stashed) {
        branch_free(snap);
        return;
    }
    bs->stash = *snap;
    bs->stashed = true;
    memset(snap, 0, sizeof *snap);
}

static void forget_stash(reply_branches *bs)
{
    branch_free(&bs->stash);
    bs->stashed = false;
}

/* Room for one more slot. */
static bool grow(reply_branches *bs, int more)
{
    reply_branch *s = realloc(bs->slot, sizeof *s * (size_t)(bs->n + more));
    if (!s)
        return false;
    memset(s + bs->n, 0, sizeof *s * (size_t)more);
    bs->slot = s;
    return true;
}

llm_status branches_settle(reply_branches *bs, llm_err *err)
{
    if (!bs->stashed)
        return LLM_OK;
    int more = bs->n == 0 ? 2 : 1;
    if (!grow(bs, more)) {
        forget_stash(bs);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory keeping the reply's old branch");
    }
    int old = bs->n == 0 ? 0 : bs->cur;
    bs->n += more;
    bs->slot[old] = bs->stash; /* the slot of the reply it was cut from was empty */
    memset(&bs->stash, 0, sizeof bs->stash);
    bs->stashed = false;
    bs->cur = bs->n - 1;
    return LLM_OK;
}

llm_status branches_note_token(reply_branches *bs, int live_len, int tok, llm_err *err)
{
    if (!bs->stashed)
        return LLM_OK;
    int k = live_len - 1;
    /* The reply is a prefix of the stash up to k: only its newest token is new. */
    if (k >= bs->stash.n_tokens) {
        forget_stash(bs); /* it grew past the stash: the stash was a shorter cut of it */
        return LLM_OK;
    }
    if (bs->stash.tokens[k] != tok)
        return branches_settle(bs, err);
    if (live_len == bs->stash.n_tokens)
        forget_stash(bs); /* the same reply again */
    return LLM_OK;
}

void branches_swap(reply_branches *bs, int i, reply_branch *live, reply_branch *out)
{
    *out = bs->slot[i];
    bs->slot[bs->cur] = *live;
    memset(&bs->slot[i], 0, sizeof bs->slot[i]);
    memset(live, 0, sizeof *live);
    bs->cur = i;
}

llm_status branches_append(reply_branches *bs, reply_branch *b, bool current, llm_err *err)
{
    if (!grow(bs, 1))
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    if (current) {
        bs->cur = bs->n;
    } else {
        bs->slot[bs->n] = *b;
        memset(b, 0, sizeof *b);
    }
    bs->n++;
    return LLM_OK;
}

int branch_common_prefix(const int *a, int na, const int *b, int nb)
{
    int k = 0;
    while (k < na && k < nb && a[k] == b[k])
        k++;
    return k;
}
