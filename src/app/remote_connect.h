/* remote_connect.h — opening the served model the options name (--server,
 * --compare-server): the API key read from the environment variable --api-key-env
 * names, the timeouts, Ctrl-C cancelling a request (signals_interrupted), and the
 * connection's failure said on stderr in one line. */
#ifndef LLMCHAT_REMOTE_CONNECT_H
#define LLMCHAT_REMOTE_CONNECT_H

#include "options.h"
#include "remote.h"

/* Connects to url as o says. NULL, with the reason printed ("llmchat: ..."), when the
 * key's variable is not set or the server cannot be reached or is not one llmchat
 * knows. */
remote *remote_connect(const app_options *o, const char *url);

/* One line naming the server: "llama-server at http://127.0.0.1:8080, model
 * stories260K.gguf (ctx 512)". */
void remote_connect_describe(const remote *r, char *out, size_t size);

#endif
