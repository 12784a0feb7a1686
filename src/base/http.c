/* http.c — one HTTP request at a time on libcurl's easy interface (see http.h). Owns
 * each request's handle; libcurl itself is opened by the first request (curl_lib.h). */
#include "http.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "config.h"

void http_options_default(http_options *o)
{
    *o = (http_options){.connect_timeout_s = 10, .idle_timeout_s = 300, .retries = 2};
}

void http_response_free(http_response *res)
{
    if (!res)
        return;
    free(res->body);
    *res = (http_response){0};
}

#ifndef HAVE_LIBCURL

bool http_available(void)
{
    return false;
}

llm_status http_stream_open(const char *method, const char *url, const char *body,
                            const http_options *o, http_sink sink, void *user, http_response *res,
                            http_stream **out, llm_err *err)
{
    (void)method, (void)body, (void)o, (void)sink, (void)user;
    *out = NULL;
    *res = (http_response){0};
    return llm_fail(err, LLM_ERR_ARG, "cannot reach %s: this llmchat was built without libcurl "
                                      "(install libcurl4-openssl-dev and build again)", url);
}

llm_status http_stream_poll(http_stream *s, int timeout_ms, bool *done, llm_err *err)
{
    (void)s, (void)timeout_ms, (void)err;
    *done = true;
    return LLM_ERR_ARG;
}

void http_stream_close(http_stream *s)
{
    (void)s;
}

llm_status http_request(const char *method, const char *url, const char *body,
                        const http_options *o, http_sink sink, void *user, http_response *res,
                        llm_err *err)
{
    (void)method, (void)body, (void)o, (void)sink, (void)user;
    *res = (http_response){0};
    return llm_fail(err, LLM_ERR_ARG, "cannot reach %s: this llmchat was built without libcurl "
                                      "(install libcurl4-openssl-dev and build again)", url);
}

#else

#include "curl_lib.h"

/* libcurl's functions: set by the first request (curl_ready), before any other use. */
static const curl_lib *lib;

bool http_available(void)
{
    return true;
}

typedef struct {
    CURL *curl;
    const http_options *o;
    http_sink sink;
    void *user;
    http_response *res;
    size_t cap;
    size_t received;   /* body bytes of this try */
    bool sink_stopped; /* the sink said stop */
    bool nomem;
    bool too_big;      /* an answer kept whole outgrew HTTP_BODY_MAX */
    bool idle;         /* nothing moved for idle_timeout_s */
    double sent_ms;
    double moved_ms;   /* when bytes last went either way (the request's start at first) */
    curl_off_t moved;  /* bytes gone either way by then */
} transfer;

/* An answer kept whole (not streamed to a sink) is at most this long: a server's
 * longest, a prompt's tokens with their candidates, is far shorter, and one that never
 * ends must not take the machine's memory. An error's body (status 400 and above) is
 * kept to its first HTTP_ERROR_BODY_MAX bytes: the message is at the start. */
enum { HTTP_ERROR_BODY_MAX = 1 << 20 };
#define HTTP_BODY_MAX ((size_t)256 << 20)

static bool keep(transfer *x, const char *data, size_t n)
{
    http_response *res = x->res;
    if (res->length + n > HTTP_BODY_MAX) {
        x->too_big = true;
        return false;
    }
    if (res->length + n + 1 > x->cap) {
        size_t cap = x->cap ? x->cap : 4096;
        while (cap < res->length + n + 1)
            cap *= 2;
        char *b = realloc(res->body, cap);
        if (!b)
            return false;
        res->body = b;
        x->cap = cap;
    }
    memcpy(res->body + res->length, data, n);
    res->length += n;
    res->body[res->length] = '\0';
    return true;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *p)
{
    transfer *x = p;
    size_t n = size * nmemb;
    if (x->received == 0 && n > 0)
        x->res->first_byte_ms = clock_ms() - x->sent_ms;
    x->received += n;
    long status = 0;
    lib->easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &status);
    if (x->sink && status < 400) {
        if (!x->sink(x->user, data, n)) {
            x->sink_stopped = true;
            return 0; /* libcurl stops the transfer: CURLE_WRITE_ERROR */
        }
        return n;
    }
    if (status >= 400 && x->res->length + n > HTTP_ERROR_BODY_MAX) { /* the rest is dropped */
        size_t room = x->res->length < HTTP_ERROR_BODY_MAX ? HTTP_ERROR_BODY_MAX - x->res->length : 0;
        if (room > 0 && !keep(x, data, room)) {
            x->nomem = true;
            return 0;
        }
        return n;
    }
    if (!keep(x, data, n)) {
        x->nomem = !x->too_big;
        return 0;
    }
    return n;
}

/* Polled by libcurl about every second, and at every piece of the transfer: stops
 * it when the caller cancels, or when no byte has gone either way for
 * idle_timeout_s (the request sent and no answer yet counts: a server may think that
 * long before its first token). */
static int on_progress(void *p, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)dltotal, (void)ultotal;
    transfer *x = p;
    double now = clock_ms();
    if (dlnow + ulnow != x->moved) {
        x->moved = dlnow + ulnow;
        x->moved_ms = now;
    } else if (x->o->idle_timeout_s > 0 && now - x->moved_ms > x->o->idle_timeout_s * 1e3) {
        x->idle = true;
        return 1;
    }
    return x->o->cancelled && x->o->cancelled(x->o->cancel_user) ? 1 : 0;
}

/* Errors worth another try: nothing was sent to a server that took it. */
static bool cannot_connect(CURLcode rc)
{
    return rc == CURLE_COULDNT_CONNECT;
}

static void sleep_s(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* The proxy libcurl takes from the environment for url, or NULL: the scheme's
 * variable (http_proxy; https_proxy or HTTPS_PROXY), else all_proxy or ALL_PROXY,
 * unless no_proxy (NO_PROXY) is "*" or names the URL's host. *var: the variable. */
static const char *proxy_for(const char *url, const char **var)
{
    bool https = strncmp(url, "https:", 6) == 0;
    const char *names[] = {https ? "https_proxy" : "http_proxy", https ? "HTTPS_PROXY" : NULL,
                           "all_proxy", "ALL_PROXY"};
    const char *proxy = NULL;
    for (size_t i = 0; i < 4 && !proxy; i++) {
        const char *v = names[i] ? getenv(names[i]) : NULL;
        if (v && *v) {
            proxy = v;
            *var = names[i];
        }
    }
    if (!proxy)
        return NULL;
    const char *no = getenv("no_proxy");
    if (!no || !*no)
        no = getenv("NO_PROXY");
    if (no && *no) {
        const char *host = strstr(url, "://");
        host = host ? host + 3 : url;
        size_t n = strcspn(host, ":/?#");
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), host);
        if (!strcmp(no, "*") || (*name && strstr(no, name)))
            return NULL;
    }
    return proxy;
}

/* The one line a failed transfer gets. */
static llm_status transfer_failure(CURL *curl, CURLcode rc, const char *url, const char *curl_err,
                                   const http_options *o, size_t received, llm_err *err)
{
    const char *detail = curl_err[0] ? curl_err : lib->easy_strerror(rc);
    const char *proxy_var = NULL, *proxy = proxy_for(url, &proxy_var);
    curl_off_t connected_us = 0;
    lib->easy_getinfo(curl, CURLINFO_CONNECT_TIME_T, &connected_us);
    if ((rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_PROXY ||
         (rc == CURLE_OPERATION_TIMEDOUT && connected_us == 0)) && proxy)
        return llm_fail(err, LLM_ERR_IO, "cannot connect to %s through the proxy %s (from %s): %s",
                        url, proxy, proxy_var, detail);
    if (rc == CURLE_OPERATION_TIMEDOUT && connected_us == 0)
        return llm_fail(err, LLM_ERR_IO, "cannot connect to %s within %g s (is the server running, "
                                         "and reachable from here?)", url, o->connect_timeout_s);
    switch (rc) {
    case CURLE_COULDNT_CONNECT:
        return llm_fail(err, LLM_ERR_IO, "cannot connect to %s (is the server running?): %s", url,
                        detail);
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        return llm_fail(err, LLM_ERR_IO, "cannot find the host of %s: %s", url, detail);
    case CURLE_OPERATION_TIMEDOUT:
        if (received == 0)
            return llm_fail(err, LLM_ERR_IO, "%s did not answer within %g s (--server-timeout)", url,
                            o->idle_timeout_s);
        return llm_fail(err, LLM_ERR_IO, "%s stopped sending for %g s in the middle of its answer "
                                         "(--server-timeout)", url, o->idle_timeout_s);
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
        if (received == 0)
            return llm_fail(err, LLM_ERR_IO, "%s closed the connection without an answer", url);
        return llm_fail(err, LLM_ERR_IO, "%s closed the connection in the middle of its answer "
                                         "(%zu bytes in)", url, received);
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_UNSUPPORTED_PROTOCOL:
        return llm_fail(err, LLM_ERR_IO, "%s answered something that is not HTTP: %s", url, detail);
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CONNECT_ERROR:
        return llm_fail(err, LLM_ERR_IO, "%s: the TLS connection failed: %s", url, detail);
    default:
        return llm_fail(err, LLM_ERR_IO, "%s: %s", url, detail);
    }
}

static bool curl_ready(llm_err *err)
{
    if (!lib)
        lib = curl_lib_open(err);
    return lib != NULL;
}

struct http_stream {
    CURLM *multi;
    CURL *curl;
    struct curl_slist *headers;
    http_options o;
    transfer x;
    char *url;
    char *body;
    char curl_err[CURL_ERROR_SIZE];
    int attempt;
    double t0;
    bool done;
    llm_status st;
    llm_err err;
};

void http_stream_close(http_stream *s)
{
    if (!s)
        return;
    if (s->multi && s->curl)
        lib->multi_remove_handle(s->multi, s->curl);
    if (s->curl)
        lib->easy_cleanup(s->curl);
    if (s->multi)
        lib->multi_cleanup(s->multi);
    lib->slist_free_all(s->headers);
    free(s->url);
    free(s->body);
    free(s);
}

/* The stream's headers: JSON, and the bearer key when there is one. */
static bool set_headers(http_stream *s)
{
    s->headers = lib->slist_append(NULL, "Content-Type: application/json");
    struct curl_slist *h = s->headers ? lib->slist_append(s->headers, "Accept: application/json, text/event-stream") : NULL;
    if (!h)
        return false;
    s->headers = h;
    if (s->o.bearer && *s->o.bearer) {
        char auth[1024];
        int w = snprintf(auth, sizeof auth, "Authorization: Bearer %s", s->o.bearer);
        h = w > 0 && (size_t)w < sizeof auth ? lib->slist_append(s->headers, auth) : NULL;
        memset(auth, 0, sizeof auth);
        if (!h)
            return false;
        s->headers = h;
    }
    return true;
}

static void start_try(http_stream *s)
{
    s->curl_err[0] = '\0';
    s->x.received = 0;
    s->x.res->length = 0;
    s->x.sent_ms = s->x.moved_ms = clock_ms();
    s->x.moved = 0;
    s->x.idle = false;
    lib->multi_add_handle(s->multi, s->curl);
}

llm_status http_stream_open(const char *method, const char *url, const char *body,
                            const http_options *o, http_sink sink, void *user, http_response *res,
                            http_stream **out, llm_err *err)
{
    *out = NULL;
    *res = (http_response){0};
    if (!curl_ready(err))
        return LLM_ERR_IO;
    http_stream *s = calloc(1, sizeof *s);
    if (!s)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for an HTTP request");
    if (o)
        s->o = *o;
    else
        http_options_default(&s->o);
    if (s->o.idle_timeout_s > 0 && s->o.idle_timeout_s < s->o.connect_timeout_s)
        s->o.connect_timeout_s = s->o.idle_timeout_s; /* a shorter wait covers connecting too */
    s->url = strdup(url);
    s->body = body ? strdup(body) : NULL;
    s->multi = lib->multi_init();
    s->curl = lib->easy_init();
    if (!s->url || (body && !s->body) || !s->multi || !s->curl || !set_headers(s)) {
        http_stream_close(s);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for an HTTP request (or the API key "
                                            "is too long)");
    }
    s->x = (transfer){.curl = s->curl, .o = &s->o, .sink = sink, .user = user, .res = res};
    CURL *curl = s->curl;
    lib->easy_setopt(curl, CURLOPT_URL, s->url);
    lib->easy_setopt(curl, CURLOPT_HTTPHEADER, s->headers);
    lib->easy_setopt(curl, CURLOPT_USERAGENT, "llmchat/" PACKAGE_VERSION);
    lib->easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    lib->easy_setopt(curl, CURLOPT_ERRORBUFFER, s->curl_err);
    lib->easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    lib->easy_setopt(curl, CURLOPT_WRITEDATA, &s->x);
    lib->easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    lib->easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
    lib->easy_setopt(curl, CURLOPT_XFERINFODATA, &s->x);
    lib->easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long)(s->o.connect_timeout_s * 1e3));
    /* idle_timeout_s: on_progress (libcurl's low-speed check is seconds late) */
    if (s->o.user) {
        lib->easy_setopt(curl, CURLOPT_USERNAME, s->o.user);
        lib->easy_setopt(curl, CURLOPT_PASSWORD, s->o.password ? s->o.password : "");
    }
    lib->easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
    lib->easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");
    if (strcmp(method, "GET") != 0)
        lib->easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    if (s->body)
        lib->easy_setopt(curl, CURLOPT_POSTFIELDS, s->body);
    else if (strcmp(method, "GET") == 0)
        lib->easy_setopt(curl, CURLOPT_HTTPGET, 1L);
    s->t0 = clock_ms();
    start_try(s);
    *out = s;
    return LLM_OK;
}

/* The transfer ended with rc: another try, or the outcome. */
static void transfer_ended(http_stream *s, CURLcode rc)
{
    lib->multi_remove_handle(s->multi, s->curl);
    bool cancelled = s->o.cancelled && s->o.cancelled(s->o.cancel_user);
    if (cannot_connect(rc) && s->attempt < s->o.retries && !cancelled) {
        sleep_s(0.25 * (double)(1 << s->attempt));
        s->attempt++;
        start_try(s);
        return;
    }
    http_response *res = s->x.res;
    res->total_ms = clock_ms() - s->t0;
    lib->easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &res->status);
    s->done = true;
    s->st = LLM_OK;
    if (s->x.nomem)
        s->st = llm_fail(&s->err, LLM_ERR_NOMEM, "out of memory for %s's answer", s->url);
    else if (s->x.too_big)
        s->st = llm_fail(&s->err, LLM_ERR_IO, "%s's answer goes on past %zu MiB: not an answer "
                         "llmchat reads", s->url, HTTP_BODY_MAX >> 20);
    else if (s->x.idle)
        s->st = transfer_failure(s->curl, CURLE_OPERATION_TIMEDOUT, s->url, "", &s->o,
                                 s->x.received, &s->err);
    else if (s->x.sink_stopped || rc == CURLE_ABORTED_BY_CALLBACK)
        s->st = llm_fail(&s->err, LLM_ERR_STOPPED, "stopped");
    else if (rc != CURLE_OK)
        s->st = transfer_failure(s->curl, rc, s->url, s->curl_err, &s->o, s->x.received, &s->err);
    else if (!res->body && !s->x.sink && !keep(&s->x, "", 0))
        s->st = llm_fail(&s->err, LLM_ERR_NOMEM, "out of memory for %s's answer", s->url);
}

llm_status http_stream_poll(http_stream *s, int timeout_ms, bool *done, llm_err *err)
{
    if (!s->done) {
        int running = 0;
        lib->multi_perform(s->multi, &running);
        if (running && timeout_ms > 0) {
            lib->multi_poll(s->multi, NULL, 0, timeout_ms, NULL);
            lib->multi_perform(s->multi, &running);
        }
        int left;
        CURLMsg *m;
        while (!s->done && (m = lib->multi_info_read(s->multi, &left)) != NULL)
            if (m->msg == CURLMSG_DONE)
                transfer_ended(s, m->data.result);
    }
    *done = s->done;
    if (s->done && s->st != LLM_OK && err)
        *err = s->err;
    return s->done ? s->st : LLM_OK;
}

llm_status http_request(const char *method, const char *url, const char *body,
                        const http_options *o, http_sink sink, void *user, http_response *res,
                        llm_err *err)
{
    http_stream *s;
    llm_status st = http_stream_open(method, url, body, o, sink, user, res, &s, err);
    bool done = false;
    while (st == LLM_OK && !done)
        st = http_stream_poll(s, 100, &done, err);
    http_stream_close(s);
    return st;
}

#endif
