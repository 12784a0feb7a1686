/* http.c — one HTTP request at a time on libcurl's easy interface (see http.h). Owns
 * libcurl's global state (set up on the first request) and each request's handle. */
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

#include <curl/curl.h>

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
    double sent_ms;
} transfer;

static bool keep(transfer *x, const char *data, size_t n)
{
    http_response *res = x->res;
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
    curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &status);
    if (x->sink && status < 400) {
        if (!x->sink(x->user, data, n)) {
            x->sink_stopped = true;
            return 0; /* libcurl stops the transfer: CURLE_WRITE_ERROR */
        }
        return n;
    }
    if (!keep(x, data, n)) {
        x->nomem = true;
        return 0;
    }
    return n;
}

static int on_progress(void *p, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    transfer *x = p;
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

/* The one line a failed transfer gets. */
static llm_status transfer_failure(CURLcode rc, const char *url, const char *curl_err,
                                   const http_options *o, size_t received, llm_err *err)
{
    const char *detail = curl_err[0] ? curl_err : curl_easy_strerror(rc);
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
    static bool done, ok;
    if (!done) {
        ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
        done = true;
    }
    if (!ok)
        llm_fail(err, LLM_ERR_IO, "libcurl cannot be set up");
    return ok;
}

llm_status http_request(const char *method, const char *url, const char *body,
                        const http_options *o, http_sink sink, void *user, http_response *res,
                        llm_err *err)
{
    http_options defaults;
    if (!o) {
        http_options_default(&defaults);
        o = &defaults;
    }
    *res = (http_response){0};
    if (!curl_ready(err))
        return LLM_ERR_IO;
    CURL *curl = curl_easy_init();
    if (!curl)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for an HTTP request");
    struct curl_slist *headers = NULL;
    char auth[1024];
    headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Accept: application/json, text/event-stream");
    if (o->bearer && *o->bearer) {
        int w = snprintf(auth, sizeof auth, "Authorization: Bearer %s", o->bearer);
        struct curl_slist *h = w > 0 && (size_t)w < sizeof auth ? curl_slist_append(headers, auth)
                                                                : NULL;
        memset(auth, 0, sizeof auth);
        if (!h) {
            curl_slist_free_all(headers);
            curl_easy_cleanup(curl);
            return llm_fail(err, LLM_ERR_ARG, "the API key is too long or out of memory");
        }
        headers = h;
    }
    char curl_err[CURL_ERROR_SIZE];
    transfer x = {.curl = curl, .o = o, .sink = sink, .user = user, .res = res};
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "llmchat/" PACKAGE_VERSION);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, curl_err);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &x);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long)(o->connect_timeout_s * 1e3));
    /* idle: under 1 byte/s for idle_timeout_s seconds */
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, (long)(o->idle_timeout_s + 0.5));
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");
    if (strcmp(method, "GET") != 0)
        curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    if (body)
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    else if (strcmp(method, "GET") == 0)
        curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);

    double t0 = clock_ms(), backoff = 0.25;
    CURLcode rc = CURLE_OK;
    for (int attempt = 0;; attempt++) {
        curl_err[0] = '\0';
        x.received = 0;
        x.sent_ms = clock_ms();
        res->length = 0;
        rc = curl_easy_perform(curl);
        if (rc == CURLE_OK || !cannot_connect(rc) || attempt >= o->retries)
            break;
        if (o->cancelled && o->cancelled(o->cancel_user))
            break;
        sleep_s(backoff);
        backoff *= 2;
    }
    res->total_ms = clock_ms() - t0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &res->status);
    llm_status st = LLM_OK;
    if (x.nomem)
        st = llm_fail(err, LLM_ERR_NOMEM, "out of memory for %s's answer", url);
    else if (x.sink_stopped || rc == CURLE_ABORTED_BY_CALLBACK)
        st = llm_fail(err, LLM_ERR_STOPPED, "stopped");
    else if (rc != CURLE_OK)
        st = transfer_failure(rc, url, curl_err, o, x.received, err);
    else if (!res->body && !sink && !keep(&x, "", 0))
        st = llm_fail(err, LLM_ERR_NOMEM, "out of memory for %s's answer", url);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    return st;
}

#endif
