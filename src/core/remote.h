/* remote.h — a model served by another program: llama.cpp's llama-server (on one
 * machine, or over several with its RPC backend), an OpenAI-compatible server (vLLM,
 * SGLang) or ollama, reached over HTTP (http.h).
 *
 * remote_open asks the server what it is (llama-server's GET /props, else GET
 * /v1/models, else ollama's GET /api/version) and which model it serves. A completion
 * streams the reply; each token arrives with what the server says about it: its id
 * (llama-server; vLLM with return_tokens_as_token_ids), its bytes, its log-probability
 * and its most probable alternatives (top_logprobs), and becomes a step record
 * (remote_record) as a local engine's would, less what only the weights know (logits,
 * entropy, the sampler's stages, attention). The sampler's settings go with each
 * request. The API key goes into the Authorization header only.
 *
 * Docs: docs/remote.md (what each server returns and what it does not). Owns the
 * server's description; no printing. */
#ifndef LLMCHAT_REMOTE_H
#define LLMCHAT_REMOTE_H

#include <stdbool.h>
#include <stddef.h>

#include "http.h"
#include "sampler.h"
#include "status.h"
#include "step.h"

typedef enum {
    REMOTE_LLAMA_SERVER = 0, /* llama.cpp: POST /completion, ids in and out */
    REMOTE_OPENAI,           /* OpenAI-compatible: POST /v1/completions (vLLM, SGLang) */
    REMOTE_OLLAMA,           /* ollama: POST /api/generate (raw), JSON Lines */
} remote_api;

const char *remote_api_name(remote_api api); /* "llama-server", "openai", "ollama" */

typedef struct {
    const char *url;        /* the server: http[s]://host:port, a path after it (/v1) is
                               dropped */
    const char *api_key;    /* sent as a bearer token, or NULL */
    const char *model;      /* the model to ask for (OpenAI-compatible, ollama); NULL: the
                               server's first */
    http_options http;      /* timeouts, retries, cancelling (the bearer is set from
                               api_key) */
} remote_options;

typedef struct remote remote;

/* Connects: asks what the server is and serves. Fails with one line when nothing
 * answers, the answer is not one of the servers above, or the model asked for is not
 * served. */
llm_status remote_open(const remote_options *o, remote **out, llm_err *err);
void remote_close(remote *r); /* NULL does nothing */

typedef struct {
    remote_api api;
    const char *base_url;   /* the URL requests go to (without the path) */
    const char *model;      /* the model's name as the server gives it */
    int n_ctx;              /* the context the server runs (0: not said) */
    int n_vocab;            /* its vocabulary's size (0: not said) */
    double rtt_ms;          /* the round trip of the last request's first byte */
    bool ids;               /* completions carry token ids */
    bool tokenizes;         /* the server tokenizes (POST /tokenize) */
} remote_info;
const remote_info *remote_describe(const remote *r);

/* Tokenizes text as the server's model does (llama-server, vLLM: POST /tokenize),
 * special tokens added when add_special (BOS). *ids is malloc'd. Fails (LLM_ERR_ARG)
 * when the server has no tokenizer endpoint. */
llm_status remote_tokenize(remote *r, const char *text, bool add_special, int **ids, int *n,
                           llm_err *err);
/* The same with each token's text (*pieces malloc'd; free with remote_pieces_free). */
llm_status remote_tokenize_pieces(remote *r, const char *text, bool add_special, int **ids,
                                  char ***pieces, int *n, llm_err *err);

/* One message of a dialog: role is "system", "user" or "assistant". */
typedef struct {
    const char *role;
    const char *content;
} remote_message;

/* A dialog rendered by the server's chat template and tokenized by the server, ready
 * for the assistant's reply: llama-server's POST /apply-template then POST /tokenize
 * (with BOS, once), vLLM's POST /tokenize with the messages. *ids and *pieces (each
 * token's text; free with remote_pieces_free) are malloc'd. Fails (LLM_ERR_ARG) for
 * ollama, which renders a dialog only inside a request (remote_request.messages). */
llm_status remote_render_chat(remote *r, const remote_message *m, int n, int **ids, char ***pieces,
                              int *n_ids, llm_err *err);
void remote_pieces_free(char **pieces, int n);

/* One token as the server gave it. */
enum { REMOTE_PIECE_MAX = 256 };
typedef struct {
    int id;                        /* -1 when the server names tokens by their text only */
    char piece[REMOTE_PIECE_MAX];  /* its bytes (NUL-terminated; cut at the end) */
    size_t piece_len;
    float logprob;                 /* NaN when not given */
    int n_top;                     /* alternatives below, most probable first */
    struct {
        int id;                    /* -1 as above */
        char piece[REMOTE_PIECE_MAX];
        size_t piece_len;
        float logprob;
    } top[STEP_TOP_MAX];
} remote_token;

typedef struct {
    const int *prompt;       /* the prompt's ids (sent as ids where the server takes
                                them: llama-server, OpenAI-compatible) ... */
    int n_prompt;
    const char *text;        /* ... or its text (ollama: sent raw; used when prompt is
                                NULL) ... */
    const remote_message *messages; /* ... or a dialog the server renders (ollama's POST
                                       /api/chat, an OpenAI-compatible server's POST
                                       /v1/chat/completions; used when both above are
                                       NULL) */
    int n_messages;
    int max_tokens;          /* 0: until the model stops or the context is full */
    int top_n;               /* alternatives per token (0..STEP_TOP_MAX; servers cap it:
                                vLLM 20, OpenAI 5) */
    sampler_config sampler;  /* temperature 0 = greedy */
    bool ignore_eos;         /* go on past the end of text (a benchmark's fixed length;
                                llama-server and vLLM) */
    bool uncached;           /* llama-server: the whole prompt computed again, not taken
                                from its prompt cache (whose reuse moves log-probabilities
                                by about 1e-6: a comparison wants them as one pass gives) */
} remote_request;

/* Gets each token as it arrives; false stops the request (it then fails with
 * LLM_ERR_STOPPED, the tokens so far delivered). */
typedef bool (*remote_token_fn)(void *user, const remote_token *t);

typedef struct {
    int generated;           /* tokens delivered */
    int prompt_tokens;       /* as the server counted them (0: not said) */
    char stop[32];           /* why it stopped: "eos", "limit", "stop", or the server's word */
    double first_token_ms;   /* from sending to the first token */
    double total_ms;
    /* llama-server's own timings of the reply (0: not said): its decode tokens per
     * second, and with speculative decoding the tokens its draft guessed and the ones
     * the model accepted */
    double server_decode_tok_s;
    int server_drafted, server_draft_accepted;
} remote_result;

/* Streams a completion of q. Fails with one line on a connection failure, an error
 * status (the server's message quoted), a stream that is cut or not JSON. The tokens
 * delivered before a failure stay delivered. */
llm_status remote_complete(remote *r, const remote_request *q, remote_token_fn fn, void *user,
                           remote_result *res, llm_err *err);

/* The same without waiting: open the request, then poll it between other work (a
 * TUI's keys) until *done; tokens go to fn as they arrive. remote_stream_poll waits up
 * to timeout_ms and returns LLM_OK while the reply goes on, remote_complete's outcome
 * once it is done. res is filled as it goes and must outlive the stream. Closing a
 * stream that runs cancels the request. */
typedef struct remote_stream remote_stream;
llm_status remote_stream_open(remote *r, const remote_request *q, remote_token_fn fn, void *user,
                              remote_result *res, remote_stream **out, llm_err *err);
llm_status remote_stream_poll(remote_stream *rs, int timeout_ms, bool *done, llm_err *err);
void remote_stream_close(remote_stream *rs); /* NULL does nothing */

/* The step record of the position before a served token: pos and its input token
 * `input`, with next = t's id (-1 when the server gave none), next_prob its
 * probability, next_rank its place among the alternatives (0 when not among them), the
 * alternatives as candidates (logit: the log-probability; prob its exp), phase as
 * given, entropy NaN (the server gives only the top), no sampler decision. */
void remote_record(const remote_token *t, int pos, int input, step_phase phase, step_record *out);

#endif
