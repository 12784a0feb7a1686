/* remote_connect.c — the served model the options name, connected (see
 * remote_connect.h). Owns nothing once it returns: the key is copied into the
 * connection and the buffer that held it cleared. */
#include "remote_connect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "signals.h"

static bool interrupted(void *user)
{
    (void)user;
    return signals_interrupted != 0;
}

remote *remote_connect(const app_options *o, const char *url)
{
    remote_options ro = {.url = url, .model = o->server_model};
    http_options_default(&ro.http);
    ro.http.idle_timeout_s = o->server_timeout > 0 ? o->server_timeout : ro.http.idle_timeout_s;
    ro.http.cancelled = interrupted;
    if (o->api_key_env) {
        const char *key = getenv(o->api_key_env);
        if (!key || !*key) {
            fprintf(stderr, "llmchat: the environment variable %s (--api-key-env) is not set\n",
                    o->api_key_env);
            return NULL;
        }
        ro.api_key = key;
    }
    remote *r;
    llm_err err;
    if (remote_open(&ro, &r, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        return NULL;
    }
    return r;
}

void remote_connect_describe(const remote *r, char *out, size_t size)
{
    const remote_info *in = remote_describe(r);
    int w = snprintf(out, size, "%s at %s, model %s", remote_api_name(in->api), in->base_url,
                     *in->model ? in->model : "(unnamed)");
    if (in->n_ctx > 0 && w > 0 && (size_t)w < size)
        snprintf(out + w, size - (size_t)w, " (ctx %d)", in->n_ctx);
}
