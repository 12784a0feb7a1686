/* http.h — one HTTP request at a time, on libcurl: what the served-model client
 * (remote.h) sends and reads.
 *
 * A request goes to a URL with an optional JSON body and an optional bearer token; the
 * answer's body either comes back whole (http_response.body) or, for a stream, is
 * handed to a sink as it arrives. HTTPS certificates are verified and proxies are
 * taken from the environment (http_proxy, https_proxy, no_proxy), as libcurl does by
 * default. A request that cannot connect is tried again after a back-off (0.25 s,
 * doubling), and only then: a server that answered is never asked twice. The bearer
 * token goes into the Authorization header and nowhere else: no message of this file
 * quotes a request's headers.
 *
 * Failures come back as one line in llm_err: the server down (or the proxy the
 * environment names), no answer within the limits, the connection closed in the middle
 * of an answer, an answer that is not HTTP, one kept whole that goes on past 256 MiB
 * (an error's body is kept to its first 1 MiB). A status of 400 or above is not a failure here: the caller reads the status
 * and the body (the server's own message). Built without libcurl, every request fails
 * saying so. No printing, no exit. */
#ifndef LLMCHAT_HTTP_H
#define LLMCHAT_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "status.h"

typedef struct {
    double connect_timeout_s; /* to open the connection (default 10; no longer than
                                 idle_timeout_s) */
    double idle_timeout_s;    /* no byte goes either way for this long: it fails (default
                                 300); a server may think that long before its first token */
    int retries;              /* more tries when it cannot connect (default 2) */
    const char *bearer;       /* the API key (Authorization: Bearer), or NULL */
    const char *user;         /* HTTP authentication (a URL's user:password@), or NULL; */
    const char *password;     /* quoted by no message */
    /* Polled while waiting (about every 100 ms and at each piece of the answer): true
       stops the request, which fails with LLM_ERR_STOPPED. NULL: never. */
    bool (*cancelled)(void *user);
    void *cancel_user;
} http_options;

void http_options_default(http_options *o);

/* Takes each piece of a successful answer's body (status below 400) as it arrives;
 * returning false stops the request (LLM_ERR_STOPPED). */
typedef bool (*http_sink)(void *user, const char *data, size_t n);

typedef struct {
    long status;          /* the HTTP status (0 when none came) */
    char *body;           /* the body (NUL-terminated, malloc'd; the caller frees it), or
                             with a sink only that of an error status (400 and above) */
    size_t length;
    double first_byte_ms; /* from the request sent (after connecting) to its first byte */
    double total_ms;      /* the whole request, tries included */
} http_response;

/* Sends method ("GET", "POST") to url with body (JSON; NULL: none) and fills *res.
 * With a sink the body of an answer below 400 goes there instead of into res->body.
 * LLM_OK once an answer came, whatever its status; LLM_ERR_IO (with why) when none
 * came whole; LLM_ERR_STOPPED when cancelled or the sink said stop; LLM_ERR_NOMEM.
 * res->body is freed and zeroed first only by http_response_free. */
llm_status http_request(const char *method, const char *url, const char *body,
                        const http_options *o, http_sink sink, void *user, http_response *res,
                        llm_err *err);
void http_response_free(http_response *res);

/* The same request without waiting for it: open it, then poll it between other work
 * (a TUI's keys) until *done; the sink gets the body as it arrives, *res is filled
 * when it is done. http_request is this with a poll every 100 ms. */
typedef struct http_stream http_stream;
llm_status http_stream_open(const char *method, const char *url, const char *body,
                            const http_options *o, http_sink sink, void *user, http_response *res,
                            http_stream **out, llm_err *err);
/* Waits up to timeout_ms (0: not at all) for the answer to go on, hands what came to
 * the sink; *done once it ended, and then returns http_request's outcome (LLM_OK while
 * it runs). A connection refused is tried again here, after the back-off. */
llm_status http_stream_poll(http_stream *s, int timeout_ms, bool *done, llm_err *err);
/* Ends the request (cancels it when it still runs). NULL does nothing. */
void http_stream_close(http_stream *s);

/* Whether this build talks HTTP (configure found libcurl). */
bool http_available(void);

#endif
