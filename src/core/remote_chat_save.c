/* remote_chat_save.c — a served dialog to a saved chat and back (see
 * remote_chat_save.h). */
#include "remote_chat_save.h"

#include <stdio.h>
#include <string.h>

llm_status remote_chat_to_file(const remote_chat *c, chatfile *cf, llm_err *err)
{
    chatfile_init(cf);
    const remote_info *in = remote_describe(remote_chat_remote(c));
    const char *system = remote_chat_system(c);
    llm_status st;
    if ((st = chatfile_set(&cf->server, in->base_url, err)) != LLM_OK ||
        (st = chatfile_set(&cf->server_api, remote_api_name(in->api), err)) != LLM_OK ||
        (st = chatfile_set(&cf->server_model, in->model, err)) != LLM_OK ||
        (st = chatfile_set(&cf->system, system ? system : "", err)) != LLM_OK)
        goto fail;
    cf->sampler = *remote_chat_sampler(c);
    /* ctx stays 0: the server's is the server's */
    bool replying = remote_chat_replying(c);
    int n = remote_chat_turn_count(c);
    for (int i = 0; i < n; i++) {
        const remote_turn *t = remote_chat_turn(c, i);
        bool open = replying && i == n - 1;
        if ((st = chatfile_add_turn(cf, t->user, t->reply, NULL, 0, t->complete && !open,
                                    t->cut || open, true, err)) != LLM_OK)
            goto fail;
    }
    return LLM_OK;
fail:
    chatfile_clear(cf);
    return st;
}

llm_status remote_chat_restore(remote_chat *c, const chatfile *cf, char *notice, size_t size,
                               llm_err *err)
{
    if (size)
        notice[0] = '\0';
    remote_chat_reset(c);
    llm_status st = remote_chat_set_system(c, cf->system && *cf->system ? cf->system : NULL, err);
    int branches = 0;
    for (int i = 0; st == LLM_OK && i < cf->n_turns; i++) {
        const chatfile_turn *t = &cf->turns[i];
        branches += t->n_branches;
        st = remote_chat_add_turn(c, t->user, t->reply, t->complete, t->cut, err);
    }
    if (st != LLM_OK) {
        remote_chat_reset(c);
        return st;
    }
    const remote_info *in = remote_describe(remote_chat_remote(c));
    size_t o = 0;
    if (cf->model && size)
        o = (size_t)snprintf(notice, size, "saved with %s; it goes on with %s at %s", cf->model,
                             in->model, in->base_url);
    else if (cf->server && size &&
             (strcmp(cf->server, in->base_url) != 0 ||
              (cf->server_model && strcmp(cf->server_model, in->model) != 0)))
        o = (size_t)snprintf(notice, size, "saved with %s at %s; it goes on with %s at %s",
                             cf->server_model ? cf->server_model : "a model", cf->server,
                             in->model, in->base_url);
    if (branches > 0 && o < size)
        snprintf(notice + o, size - o, "%s%d other branch%s of replies left out: a served chat "
                 "keeps the replies in the context", o ? "; " : "", branches,
                 branches == 1 ? " was" : "es were");
    return LLM_OK;
}
