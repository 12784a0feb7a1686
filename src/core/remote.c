/* remote.c — a served model over HTTP (see remote.h): what the server is, its
 * tokenizer, and streamed completions read token by token. Owns the server's
 * description; the HTTP is http.c's, the stream's framing event_stream.c's. */
#define _GNU_SOURCE /* open_memstream */
#include "remote.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock.h"
#include "event_stream.h"
#include "json.h"
#include "textfmt.h"
#include "remote_internal.h"

struct remote {
    remote_info info;
    http_options http;
    char *base;     /* the URL without a user and password, and without a trailing /v1 */
    char *model;
    char *api_key;
    char *user;     /* from the URL (user:password@host), sent by libcurl, never shown */
    char *password;
};

const char *remote_api_name(remote_api api)
{
    switch (api) {
    case REMOTE_LLAMA_SERVER: return "llama-server";
    case REMOTE_OPENAI: return "openai";
    case REMOTE_OLLAMA: return "ollama";
    }
    return "?";
}

const remote_info *remote_describe(const remote *r)
{
    return &r->info;
}

void remote_close(remote *r)
{
    if (!r)
        return;
    free(r->base);
    free(r->model);
    char *secrets[] = {r->api_key, r->user, r->password};
    for (int i = 0; i < 3; i++)
        if (secrets[i]) {
            memset(secrets[i], 0, strlen(secrets[i]));
            free(secrets[i]);
        }
    free(r);
}

/* ---- requests ---- */

static char *url_of(const remote *r, const char *path)
{
    size_t n = strlen(r->base) + strlen(path) + 1;
    char *u = malloc(n);
    if (u)
        snprintf(u, n, "%s%s", r->base, path);
    return u;
}

/* The server's own message in an error body: {"error":{"message"}}, {"error":"..."},
 * {"message":...} or {"detail":...}; else the body's start. */
static void error_message(const char *body, size_t len, char *out, size_t size)
{
    json_value *v = NULL;
    llm_err ignored;
    const char *msg = NULL;
    if (body && json_parse(body, len, &v, &ignored) == LLM_OK) {
        const json_value *e = json_get(v, "error");
        if (!json_as_string(json_get(e, "message"), &msg) && !json_as_string(e, &msg) &&
            !json_as_string(json_get(v, "message"), &msg))
            json_as_string(json_get(v, "detail"), &msg);
    }
    if (msg)
        snprintf(out, size, "%s", msg);
    else if (body && len > 0)
        snprintf(out, size, "%.120s", body);
    else
        snprintf(out, size, "no message");
    for (char *p = out; *p; p++)
        if ((unsigned char)*p < 0x20)
            *p = ' ';
    json_free(v);
}

static llm_status status_failure(const char *url, const http_response *res, llm_err *err)
{
    char msg[300];
    error_message(res->body, res->length, msg, sizeof msg);
    if (res->status == 401 || res->status == 403)
        return llm_fail(err, LLM_ERR_IO, "%s refused the request (%ld: %s): check the API key "
                                         "(--api-key-env)", url, res->status, msg);
    return llm_fail(err, LLM_ERR_IO, "%s answered %ld: %s", url, res->status, msg);
}

/* GET or POST path; the body parsed into *out (the caller frees it). A status of 400 or
 * more fails with the server's message unless want_status, which then gets it and
 * *out NULL (the message in err all the same, for a caller that has a use for it). */
static llm_status request_json(remote *r, const char *method, const char *path, const char *body,
                               json_value **out, long *want_status, llm_err *err)
{
    *out = NULL;
    char *url = url_of(r, path);
    if (!url)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    http_response res;
    llm_status st = http_request(method, url, body, &r->http, NULL, NULL, &res, err);
    if (st == LLM_OK) {
        r->info.rtt_ms = res.first_byte_ms;
        if (res.status >= 400 || res.status < 200) {
            llm_status failed = status_failure(url, &res, err);
            if (want_status)
                *want_status = res.status;
            else
                st = failed;
        } else {
            if (want_status)
                *want_status = res.status;
            llm_err perr;
            if (json_parse(res.body, res.length, out, &perr) != LLM_OK)
                st = llm_fail(err, LLM_ERR_FORMAT, "%s answered something that is not JSON (%s)",
                              url, perr.text);
        }
    }
    http_response_free(&res);
    free(url);
    return st;
}

/* ---- what the server is ---- */

static char *dup_str(const char *s)
{
    return s ? strdup(s) : NULL;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* The model's name as the server gives it, made safe to show: a control character
 * (a terminal's escape), invalid UTF-8 and the controls of text direction (U+202A-202E,
 * U+2066-2069, which turn what follows around) become '?'. */
static llm_status set_model(remote *r, const char *name, llm_err *err)
{
    free(r->model);
    r->model = dup_str(name ? name : "");
    r->info.model = r->model;
    if (!r->model)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    unsigned char *p = (unsigned char *)r->model;
    size_t n = strlen(r->model);
    for (size_t i = 0; i < n;) {
        int len = textfmt_utf8_len(p + i, n - i);
        bool bidi = len == 3 && p[i] == 0xe2 &&
                    ((p[i + 1] == 0x80 && p[i + 2] >= 0xaa && p[i + 2] <= 0xae) ||
                     (p[i + 1] == 0x81 && p[i + 2] >= 0xa6 && p[i + 2] <= 0xa9));
        if (len <= 0 || bidi || p[i] < 0x20 || p[i] == 0x7f) {
            int k = len > 0 ? len : 1;
            for (int j = 0; j < k; j++)
                p[i + j] = '?';
            i += (size_t)k;
        } else {
            i += (size_t)len;
        }
    }
    return LLM_OK;
}

/* llama-server: GET /props answered; the vocabulary's size from /v1/models' meta. */
static llm_status open_llama_server(remote *r, const json_value *props, llm_err *err)
{
    r->info.api = REMOTE_LLAMA_SERVER;
    r->info.ids = r->info.tokenizes = true;
    const char *name = NULL, *path = NULL;
    if (!json_as_string(json_get(props, "model_alias"), &name) || !*name)
        name = json_as_string(json_get(props, "model_path"), &path) ? base_name(path) : "";
    else if (strchr(name, '/'))
        name = base_name(name);
    json_as_int(json_get(json_get(props, "default_generation_settings"), "n_ctx"), &r->info.n_ctx);
    if (set_model(r, name, err) != LLM_OK)
        return LLM_ERR_NOMEM;
    json_value *models = NULL;
    long status = 0;
    llm_err ignored;
    if (request_json(r, "GET", "/v1/models", NULL, &models, &status, &ignored) == LLM_OK && models) {
        const json_value *meta = json_get(json_at(json_get(models, "data"), 0), "meta");
        json_as_int(json_get(meta, "n_vocab"), &r->info.n_vocab);
        if (!r->info.n_ctx)
            json_as_int(json_get(meta, "n_ctx"), &r->info.n_ctx);
    }
    json_free(models);
    return LLM_OK;
}

/* An OpenAI-compatible server: GET /v1/models lists what it serves. */
static llm_status open_openai(remote *r, const json_value *models, const char *want, llm_err *err)
{
    r->info.api = REMOTE_OPENAI;
    const json_value *data = json_get(models, "data");
    const json_value *pick = NULL;
    for (size_t i = 0; data && i < data->count; i++) {
        const char *id = NULL;
        if (!json_as_string(json_get(json_at(data, i), "id"), &id))
            continue;
        if (!want || strcmp(id, want) == 0) {
            pick = json_at(data, i);
            break;
        }
    }
    if (!pick)
        return want ? llm_fail(err, LLM_ERR_ARG, "%s does not serve a model named '%s' (GET "
                                                 "/v1/models lists those it does)", r->base, want)
                    : llm_fail(err, LLM_ERR_FORMAT, "%s serves no model (GET /v1/models)", r->base);
    const char *id = NULL, *owner = NULL;
    json_as_string(json_get(pick, "id"), &id);
    json_as_int(json_get(pick, "max_model_len"), &r->info.n_ctx);
    /* vLLM: token ids in the answers (return_tokens_as_token_ids) and POST /tokenize */
    if (json_as_string(json_get(pick, "owned_by"), &owner) && strcmp(owner, "vllm") == 0)
        r->info.ids = r->info.tokenizes = true;
    return set_model(r, id, err);
}

/* ollama: GET /api/version answered; the model is the one asked for, else the first of
 * GET /api/tags. */
static llm_status open_ollama(remote *r, const char *want, llm_err *err)
{
    r->info.api = REMOTE_OLLAMA;
    if (want)
        return set_model(r, want, err);
    json_value *tags = NULL;
    llm_status st = request_json(r, "GET", "/api/tags", NULL, &tags, NULL, err);
    if (st != LLM_OK)
        return st;
    const char *name = NULL;
    json_as_string(json_get(json_at(json_get(tags, "models"), 0), "name"), &name);
    if (!name) {
        json_free(tags);
        return llm_fail(err, LLM_ERR_ARG, "%s (ollama) has no model: pull one, or name it with "
                                          "--model", r->base);
    }
    st = set_model(r, name, err);
    json_free(tags);
    return st;
}

/* s[0..n) with its %XX escapes decoded (a user or password in a URL), or NULL. */
static char *url_decode(const char *s, size_t n)
{
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n && isxdigit((unsigned char)s[i + 1]) &&
            isxdigit((unsigned char)s[i + 2])) {
            char hex[3] = {s[i + 1], s[i + 2], '\0'};
            out[o++] = (char)strtol(hex, NULL, 16);
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
    return out;
}

/* The server's URL taken apart: r->base (the scheme in lower case, the host and port,
 * the path without trailing slashes or /v1), and a user and password in it into
 * r->user and r->password, which go to libcurl and are not part of anything shown or
 * saved. LLM_ERR_ARG, saying why, for a URL that is not one of a server. */
static llm_status take_url(remote *r, const char *url, llm_err *err)
{
    size_t scheme = !strncasecmp(url, "http://", 7) ? 7 : !strncasecmp(url, "https://", 8) ? 8 : 0;
    if (!scheme)
        return llm_fail(err, LLM_ERR_ARG, "'%s' is not an http:// or https:// URL", url);
    const char *auth = url + scheme;
    size_t auth_n = strcspn(auth, "/?#");
    if (strpbrk(auth, "?#"))
        return llm_fail(err, LLM_ERR_ARG, "a server's URL names the server, with no query (?) "
                                          "or fragment (#) after it: drop them from --server");
    const char *at = NULL;
    for (size_t i = 0; i < auth_n; i++)
        if (auth[i] == '@')
            at = auth + i;
    const char *host = at ? at + 1 : auth;
    size_t host_n = auth_n - (size_t)(host - auth);
    if (host_n == 0 || host[0] == ':')
        return llm_fail(err, LLM_ERR_ARG, "the URL names no host: give --server %.*sHOST:PORT",
                        (int)scheme, url);
    if (at) {
        size_t info_n = (size_t)(at - auth), colon = strcspn(auth, ":@");
        if (colon > info_n)
            colon = info_n;
        r->user = url_decode(auth, colon);
        r->password = url_decode(colon < info_n ? auth + colon + 1 : "",
                                 colon < info_n ? info_n - colon - 1 : 0);
        if (!r->user || !r->password)
            return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    }
    const char *path = host + host_n;
    size_t path_n = strlen(path);
    while (path_n > 0 && path[path_n - 1] == '/')
        path_n--;
    if (path_n >= 3 && memcmp(path + path_n - 3, "/v1", 3) == 0)
        path_n -= 3;
    while (path_n > 0 && path[path_n - 1] == '/')
        path_n--;
    size_t n = scheme + host_n + path_n;
    r->base = malloc(n + 1);
    if (!r->base)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < scheme; i++)
        r->base[i] = (char)tolower((unsigned char)url[i]);
    memcpy(r->base + scheme, host, host_n);
    memcpy(r->base + scheme + host_n, path, path_n);
    r->base[n] = '\0';
    return LLM_OK;
}

/* A probe's answer: a status that says the server itself failed (5xx: llama-server
 * answers 503 "Loading model" while it starts) is kept, the first one, to be said if
 * no probe finds a server llmchat knows. 404 and the like only say the path is not
 * there. */
static void keep_failure(llm_status st, long status, const llm_err *err, llm_err *kept,
                         bool *have)
{
    if (st != LLM_OK || status < 500 || *have)
        return;
    *kept = *err;
    if (status == 503) {
        size_t n = strlen(kept->text);
        snprintf(kept->text + n, sizeof kept->text - n, " (the server is not ready: try again "
                 "when it has loaded its model)");
    }
    *have = true;
}

llm_status remote_open(const remote_options *o, remote **out, llm_err *err)
{
    *out = NULL;
    if (!o->url || !*o->url)
        return llm_fail(err, LLM_ERR_ARG, "no server URL");
    if (!http_available())
        return llm_fail(err, LLM_ERR_ARG, "--server needs libcurl: this llmchat was built without "
                                          "it (install libcurl4-openssl-dev and build again)");
    remote *r = calloc(1, sizeof *r);
    if (!r)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    r->http = o->http;
    llm_status taken = take_url(r, o->url, err);
    if (taken != LLM_OK) {
        remote_close(r);
        return taken;
    }
    r->api_key = dup_str(o->api_key);
    if (o->api_key && !r->api_key) {
        remote_close(r);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    }
    r->http.bearer = r->api_key;
    r->http.user = r->user;
    r->http.password = r->password;
    r->info.base_url = r->base;

    json_value *v = NULL;
    long status = 0;
    llm_err failed; /* the first probe the server answered with a failure of its own */
    bool server_failed = false;
    llm_status st = request_json(r, "GET", "/props", NULL, &v, &status, err);
    keep_failure(st, status, err, &failed, &server_failed);
    if (st == LLM_OK && status == 200 && v && json_get(v, "default_generation_settings")) {
        st = open_llama_server(r, v, err);
        goto done;
    }
    json_free(v);
    v = NULL;
    if (st != LLM_OK && st != LLM_ERR_FORMAT)
        goto done; /* nothing answered: the connection's failure says why */
    if (status == 401 || status == 403) {
        st = llm_fail(err, LLM_ERR_IO, "%s refused the request (%ld): check the API key "
                                       "(--api-key-env)", r->base, status);
        goto done;
    }
    st = request_json(r, "GET", "/v1/models", NULL, &v, &status, err);
    keep_failure(st, status, err, &failed, &server_failed);
    if (st == LLM_OK && status == 200 && v && json_get(v, "data")) {
        st = open_openai(r, v, o->model, err);
        goto done;
    }
    if (status == 401 || status == 403) {
        st = llm_fail(err, LLM_ERR_IO, "%s refused the request (%ld): check the API key "
                                       "(--api-key-env)", r->base, status);
        goto done;
    }
    json_free(v);
    v = NULL;
    st = request_json(r, "GET", "/api/version", NULL, &v, &status, err);
    keep_failure(st, status, err, &failed, &server_failed);
    if (st == LLM_OK && status == 200 && v && json_get(v, "version")) {
        st = open_ollama(r, o->model, err);
        goto done;
    }
    if (st == LLM_OK && server_failed) { /* a server that fails (starting, say): its words */
        *err = failed;
        st = LLM_ERR_IO;
    } else if (st == LLM_OK)
        st = llm_fail(err, LLM_ERR_FORMAT, "%s is not a server llmchat knows: neither GET /props "
                                           "(llama-server), GET /v1/models (OpenAI-compatible) nor "
                                           "GET /api/version (ollama) answered as expected",
                      r->base);
done:
    json_free(v);
    if (st != LLM_OK) {
        remote_close(r);
        return st;
    }
    *out = r;
    return LLM_OK;
}

/* ---- JSON bodies ---- */

typedef struct {
    char *text;
    size_t len;
    FILE *f;
} body_buf;

static bool body_begin(body_buf *b)
{
    *b = (body_buf){0};
    b->f = open_memstream(&b->text, &b->len);
    return b->f != NULL;
}

static char *body_end(body_buf *b)
{
    if (fclose(b->f) != 0) {
        free(b->text);
        return NULL;
    }
    return b->text;
}

/* A float as JSON: shortest text that reads back (C locale digits: %.9g with '.' ). */
static void put_float(FILE *f, const char *key, double x)
{
    char s[40];
    snprintf(s, sizeof s, "%.9g", x);
    for (char *p = s; *p; p++)
        if (*p == ',')
            *p = '.';
    fprintf(f, ",\"%s\":%s", key, s);
}

static void put_ids(FILE *f, const int *ids, int n)
{
    fputc('[', f);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%d", i ? "," : "", ids[i]);
    fputc(']', f);
}

static llm_status tokens_with_pieces(const remote *r, const json_value *v, int **ids, char ***pieces,
                                     int *n, llm_err *err);

/* remote_tokenize's and remote_tokenize_pieces' request: the pieces asked for (and
 * kept) when pieces is not NULL. */
static llm_status tokenize(remote *r, const char *text, bool add_special, int **ids, char ***pieces,
                           int *n, llm_err *err)
{
    *ids = NULL;
    *n = 0;
    if (pieces)
        *pieces = NULL;
    if (!r->info.tokenizes)
        return llm_fail(err, LLM_ERR_ARG, "%s (%s) does not tokenize text: open a local model or "
                                          "tokenizer beside it (-z)", r->base,
                        remote_api_name(r->info.api));
    body_buf b;
    if (!body_begin(&b))
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    if (r->info.api == REMOTE_LLAMA_SERVER) {
        fputs("{\"content\":", b.f);
        json_write_request_string(b.f, text);
    } else {
        fputs("{\"model\":", b.f);
        json_write_request_string(b.f, r->model);
        fputs(",\"prompt\":", b.f);
        json_write_request_string(b.f, text);
    }
    fprintf(b.f, ",\"%s\":%s", r->info.api == REMOTE_LLAMA_SERVER ? "add_special" : "add_special_tokens",
            add_special ? "true" : "false");
    if (pieces)
        fputs(r->info.api == REMOTE_LLAMA_SERVER ? ",\"with_pieces\":true" : ",\"return_token_strs\":true",
              b.f);
    fputc('}', b.f);
    char *body = body_end(&b);
    if (!body)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    json_value *v = NULL;
    llm_status st = request_json(r, "POST", "/tokenize", body, &v, NULL, err);
    free(body);
    if (st != LLM_OK)
        return st;
    char **got = NULL;
    st = tokens_with_pieces(r, v, ids, &got, n, err);
    if (pieces && st == LLM_OK)
        *pieces = got;
    else
        remote_pieces_free(got, *n);
    json_free(v);
    return st;
}

llm_status remote_tokenize(remote *r, const char *text, bool add_special, int **ids, int *n,
                           llm_err *err)
{
    return tokenize(r, text, add_special, ids, NULL, n, err);
}

llm_status remote_tokenize_pieces(remote *r, const char *text, bool add_special, int **ids,
                                  char ***pieces, int *n, llm_err *err)
{
    return tokenize(r, text, add_special, ids, pieces, n, err);
}

/* A piece of a /tokenize answer: a string, or (llama-server, for bytes that are not
 * UTF-8) a list of bytes; vLLM's raw vocabulary pieces with SentencePiece's U+2581 as a
 * space. malloc'd ("" when there is none); NULL when out of memory. */
static char *piece_of(const json_value *v)
{
    const char *text = NULL;
    if (json_as_string(v, &text)) {
        size_t n = strlen(text);
        char *out = malloc(n + 1), *o = out;
        if (!out)
            return NULL;
        for (size_t i = 0; i < n;) {
            if (i + 2 < n && (unsigned char)text[i] == 0xe2 && (unsigned char)text[i + 1] == 0x96 &&
                (unsigned char)text[i + 2] == 0x81) {
                *o++ = ' ';
                i += 3;
            } else {
                *o++ = text[i++];
            }
        }
        *o = '\0';
        return out;
    }
    char *out = malloc(v && v->type == JSON_ARRAY ? v->count + 1 : 1);
    size_t n = 0;
    for (size_t i = 0; out && v && v->type == JSON_ARRAY && i < v->count; i++) {
        int c;
        if (json_as_int(json_at(v, i), &c) && c > 0 && c < 256)
            out[n++] = (char)c;
    }
    if (out)
        out[n] = '\0';
    return out;
}

void remote_pieces_free(char **pieces, int n)
{
    for (int i = 0; pieces && i < n; i++)
        free(pieces[i]);
    free(pieces);
}

static void put_messages(FILE *f, const remote_message *m, int n)
{
    fputs("\"messages\":[", f);
    for (int i = 0; i < n; i++) {
        fputs(i ? ",{\"role\":" : "{\"role\":", f);
        json_write_request_string(f, m[i].role);
        fputs(",\"content\":", f);
        json_write_request_string(f, m[i].content);
        fputc('}', f);
    }
    fputc(']', f);
}

/* A /tokenize answer's ids and pieces: {"tokens": [{id, piece}] } (llama-server with
 * with_pieces) or {"tokens": [ids], "token_strs": [...]} (vLLM). */
static llm_status tokens_with_pieces(const remote *r, const json_value *v, int **ids, char ***pieces,
                                     int *n, llm_err *err)
{
    const json_value *list = json_get(v, "tokens"), *strs = json_get(v, "token_strs");
    if (!list || list->type != JSON_ARRAY)
        return llm_fail(err, LLM_ERR_FORMAT, "%s/tokenize answered without \"tokens\"", r->base);
    int *out = malloc((list->count + 1) * sizeof *out);
    char **ps = calloc(list->count + 1, sizeof *ps);
    if (!out || !ps) {
        free(out);
        free(ps);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < list->count; i++) {
        const json_value *t = json_at(list, i);
        if (!json_as_int(t, &out[i]) && !json_as_int(json_get(t, "id"), &out[i])) {
            free(out);
            remote_pieces_free(ps, (int)i);
            return llm_fail(err, LLM_ERR_FORMAT, "%s/tokenize: token %zu is not an id", r->base, i);
        }
        ps[i] = piece_of(json_get(t, "piece") ? json_get(t, "piece") : json_at(strs, i));
        if (!ps[i]) {
            free(out);
            remote_pieces_free(ps, (int)i);
            return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
        }
    }
    *ids = out;
    *pieces = ps;
    *n = (int)list->count;
    return LLM_OK;
}

llm_status remote_render_chat(remote *r, const remote_message *m, int n, int **ids, char ***pieces,
                              int *n_ids, llm_err *err)
{
    *ids = NULL;
    *pieces = NULL;
    *n_ids = 0;
    if (r->info.api == REMOTE_OLLAMA)
        return llm_fail(err, LLM_ERR_ARG, "ollama renders and tokenizes a dialog only inside a "
                                          "request (POST /api/chat)");
    body_buf b;
    if (!body_begin(&b))
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    fputc('{', b.f);
    if (r->info.api == REMOTE_OPENAI) {
        fputs("\"model\":", b.f);
        json_write_request_string(b.f, r->model);
        fputc(',', b.f);
    }
    put_messages(b.f, m, n);
    if (r->info.api == REMOTE_OPENAI)
        fputs(",\"add_generation_prompt\":true,\"return_token_strs\":true", b.f);
    fputc('}', b.f);
    char *body = body_end(&b);
    if (!body)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    json_value *v = NULL;
    llm_status st;
    if (r->info.api == REMOTE_OPENAI) { /* vLLM renders and tokenizes in one request */
        st = request_json(r, "POST", "/tokenize", body, &v, NULL, err);
    } else { /* llama-server: the template's text, then its tokens */
        st = request_json(r, "POST", "/apply-template", body, &v, NULL, err);
        const char *prompt = NULL;
        if (st == LLM_OK && !json_as_string(json_get(v, "prompt"), &prompt))
            st = llm_fail(err, LLM_ERR_FORMAT, "%s/apply-template answered without \"prompt\"",
                          r->base);
        body_buf t;
        char *tbody = NULL;
        if (st == LLM_OK && body_begin(&t)) {
            fputs("{\"content\":", t.f);
            json_write_request_string(t.f, prompt);
            fputs(",\"add_special\":true,\"with_pieces\":true}", t.f);
            tbody = body_end(&t);
        }
        json_free(v);
        v = NULL;
        if (st == LLM_OK && !tbody)
            st = llm_fail(err, LLM_ERR_NOMEM, "out of memory");
        if (st == LLM_OK)
            st = request_json(r, "POST", "/tokenize", tbody, &v, NULL, err);
        free(tbody);
    }
    free(body);
    if (st == LLM_OK)
        st = tokens_with_pieces(r, v, ids, pieces, n_ids, err);
    json_free(v);
    /* a template that writes BOS itself, tokenized with BOS added: one BOS */
    if (st == LLM_OK && *n_ids >= 2 && (*ids)[0] == (*ids)[1] && strcmp((*pieces)[0], (*pieces)[1]) == 0 &&
        (*pieces)[0][0] == '<') {
        free((*pieces)[0]);
        memmove(*ids, *ids + 1, (size_t)(*n_ids - 1) * sizeof **ids);
        memmove(*pieces, *pieces + 1, (size_t)(*n_ids - 1) * sizeof **pieces);
        (*n_ids)--;
    }
    return st;
}

static char *completion_body(const remote *r, const remote_request *q)
{
    body_buf b;
    if (!body_begin(&b))
        return NULL;
    FILE *f = b.f;
    const sampler_config *s = &q->sampler;
    int top_n = q->top_n < 1 ? 1 : q->top_n > STEP_TOP_MAX ? STEP_TOP_MAX : q->top_n;
    switch (r->info.api) {
    case REMOTE_LLAMA_SERVER:
        fputs("{\"prompt\":", f);
        if (q->prompt)
            put_ids(f, q->prompt, q->n_prompt);
        else
            json_write_request_string(f, q->text);
        fprintf(f, ",\"n_predict\":%d,\"n_probs\":%d,\"stream\":true,\"cache_prompt\":%s",
                q->max_tokens > 0 ? q->max_tokens : -1, top_n, q->uncached ? "false" : "true");
        fputs(",\"post_sampling_probs\":false", f);
        if (q->ignore_eos)
            fputs(",\"ignore_eos\":true", f);
        put_float(f, "temperature", s->temperature);
        fprintf(f, ",\"top_k\":%d", s->top_k);
        put_float(f, "top_p", s->top_p);
        put_float(f, "min_p", s->min_p);
        put_float(f, "repeat_penalty", s->repeat_penalty);
        fprintf(f, ",\"repeat_last_n\":%d,\"seed\":%u}", s->repeat_last_n, (unsigned)(s->seed & 0xffffffffu));
        break;
    case REMOTE_OPENAI:
        fputs("{\"model\":", f);
        json_write_request_string(f, r->model);
        if (!q->prompt && !q->text && q->messages) {
            /* POST /v1/chat/completions: the server renders the dialog; only the
               parameters every OpenAI-compatible server takes */
            fputc(',', f);
            put_messages(f, q->messages, q->n_messages);
            if (q->max_tokens > 0)
                fprintf(f, ",\"max_tokens\":%d", q->max_tokens);
            fprintf(f, ",\"logprobs\":true,\"top_logprobs\":%d,\"stream\":true",
                    top_n > 20 ? 20 : top_n);
            put_float(f, "temperature", s->temperature);
            put_float(f, "top_p", s->top_p);
            fprintf(f, ",\"seed\":%u}", (unsigned)(s->seed & 0x7fffffffu));
            break;
        }
        fputs(",\"prompt\":", f);
        if (q->prompt)
            put_ids(f, q->prompt, q->n_prompt);
        else
            json_write_request_string(f, q->text);
        if (q->max_tokens > 0)
            fprintf(f, ",\"max_tokens\":%d", q->max_tokens);
        fprintf(f, ",\"logprobs\":%d,\"stream\":true", top_n > 20 ? 20 : top_n);
        if (r->info.ids)
            fputs(",\"return_tokens_as_token_ids\":true", f);
        if (q->ignore_eos)
            fputs(",\"ignore_eos\":true", f);
        put_float(f, "temperature", s->temperature);
        put_float(f, "top_p", s->top_p);
        if (s->top_k > 0)
            fprintf(f, ",\"top_k\":%d", s->top_k);
        put_float(f, "min_p", s->min_p);
        put_float(f, "repetition_penalty", s->repeat_penalty);
        fprintf(f, ",\"seed\":%u}", (unsigned)(s->seed & 0x7fffffffu));
        break;
    case REMOTE_OLLAMA:
        fputs("{\"model\":", f);
        json_write_request_string(f, r->model);
        if (!q->text && q->messages) { /* POST /api/chat: ollama renders the dialog */
            fputc(',', f);
            put_messages(f, q->messages, q->n_messages);
        } else {
            fputs(",\"prompt\":", f);
            json_write_request_string(f, q->text ? q->text : "");
            fputs(",\"raw\":true", f);
        }
        fprintf(f, ",\"stream\":true,\"logprobs\":true,\"top_logprobs\":%d", top_n > 20 ? 20 : top_n);
        fputs(",\"options\":{", f);
        fprintf(f, "\"num_predict\":%d", q->max_tokens > 0 ? q->max_tokens : -1);
        put_float(f, "temperature", s->temperature);
        fprintf(f, ",\"top_k\":%d", s->top_k);
        put_float(f, "top_p", s->top_p);
        put_float(f, "min_p", s->min_p);
        put_float(f, "repeat_penalty", s->repeat_penalty);
        fprintf(f, ",\"repeat_last_n\":%d,\"seed\":%u}}", s->repeat_last_n, (unsigned)(s->seed & 0x7fffffffu));
        break;
    }
    return body_end(&b);
}

/* ---- the stream ---- */

typedef struct {
    remote *r;
    remote_token_fn fn;
    void *user;
    remote_result *res;
    event_stream events;
    double t0;
    bool done;        /* the last event came */
    bool stopped;     /* fn said stop */
    llm_err why;      /* a bad event */
    bool bad;
    remote_token tok;
} stream_state;

/* The stream cannot be read on: why (what, with detail when not NULL). */
static bool bad_event(stream_state *s, const char *what, const char *detail)
{
    if (detail)
        snprintf(s->why.text, sizeof s->why.text, "%s (%.200s)", what, detail);
    else
        snprintf(s->why.text, sizeof s->why.text, "%s", what);
    s->bad = true;
    return false;
}

/* "token_id:123" (vLLM's return_tokens_as_token_ids) to 123, else -1. */
static int id_of_text(const char *t)
{
    if (strncmp(t, "token_id:", 9) != 0 || t[9] < '0' || t[9] > '9') /* digits only */
        return -1;
    char *end;
    long v = strtol(t + 9, &end, 10);
    return *end == '\0' && v >= 0 && v < (1L << 30) ? (int)v : -1;
}

/* A piece from "bytes" (exact) or else the token's text. */
static void take_piece(const json_value *o, const char *text, char *piece, size_t *len)
{
    const json_value *bytes = json_get(o, "bytes");
    size_t n = 0;
    if (bytes && bytes->type == JSON_ARRAY) {
        for (size_t i = 0; i < bytes->count && n < REMOTE_PIECE_MAX - 1; i++) {
            int c;
            if (json_as_int(json_at(bytes, i), &c) && c >= 0 && c < 256)
                piece[n++] = (char)c;
        }
    } else if (text && id_of_text(text) < 0) {
        n = strlen(text);
        if (n > REMOTE_PIECE_MAX - 1)
            n = REMOTE_PIECE_MAX - 1;
        memcpy(piece, text, n);
    }
    piece[n] = '\0';
    *len = n;
}

static float logprob_of(const json_value *v)
{
    double x;
    return json_as_double(v, &x) ? (float)x : NAN;
}

/* One token object: {id?, token, bytes?, logprob, top_logprobs: [{id?, token, bytes?,
 * logprob}]} (llama-server, ollama, llama-server's /v1 answers). */
static bool token_object(const json_value *o, remote_token *t)
{
    const char *text = NULL;
    json_as_string(json_get(o, "token"), &text);
    if (!json_as_int(json_get(o, "id"), &t->id))
        t->id = text ? id_of_text(text) : -1;
    take_piece(o, text, t->piece, &t->piece_len);
    t->logprob = logprob_of(json_get(o, "logprob"));
    const json_value *top = json_get(o, "top_logprobs");
    t->n_top = 0;
    for (size_t i = 0; top && top->type == JSON_ARRAY && i < top->count && t->n_top < STEP_TOP_MAX; i++) {
        const json_value *c = json_at(top, i);
        const char *ct = NULL;
        json_as_string(json_get(c, "token"), &ct);
        int k = t->n_top++;
        if (!json_as_int(json_get(c, "id"), &t->top[k].id))
            t->top[k].id = ct ? id_of_text(ct) : -1;
        take_piece(c, ct, t->top[k].piece, &t->top[k].piece_len);
        t->top[k].logprob = logprob_of(json_get(c, "logprob"));
    }
    return text || t->id >= 0;
}

/* A logprob no probability has: not finite, or above 0 by more than rounding. */
static bool logprob_bad(float lp)
{
    return !isnan(lp) && (!isfinite(lp) || lp > 1e-3f);
}

bool remote_token_logprobs_ok(const remote_token *t, char *why, size_t size)
{
    if (logprob_bad(t->logprob)) {
        snprintf(why, size, "token %d has the logprob %g, which no probability has", t->id,
                 (double)t->logprob);
        return false;
    }
    for (int k = 0; k < t->n_top; k++)
        if (logprob_bad(t->top[k].logprob)) {
            snprintf(why, size, "candidate %d of token %d has the logprob %g, which no probability "
                     "has", t->top[k].id, t->id, (double)t->top[k].logprob);
            return false;
        }
    return true;
}

static bool deliver(stream_state *s)
{
    char why[160];
    if (!remote_token_logprobs_ok(&s->tok, why, sizeof why))
        return bad_event(s, "the stream holds a number that is not a logprob", why);
    if (s->res->generated == 0)
        s->res->first_token_ms = clock_ms() - s->t0;
    s->res->generated++;
    if (!s->fn(s->user, &s->tok)) {
        s->stopped = true;
        return false;
    }
    return true;
}

static int by_logprob(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x < y) - (x > y);
}

/* The legacy OpenAI shape: parallel lists tokens, token_logprobs, top_logprobs (one
 * {text: logprob} object per token). */
static bool legacy_tokens(stream_state *s, const json_value *lp, const char *chunk_text)
{
    const json_value *toks = json_get(lp, "tokens");
    const json_value *lps = json_get(lp, "token_logprobs");
    const json_value *tops = json_get(lp, "top_logprobs");
    for (size_t i = 0; toks && toks->type == JSON_ARRAY && i < toks->count; i++) {
        remote_token *t = &s->tok;
        const char *text = NULL;
        json_as_string(json_at(toks, i), &text);
        t->id = text ? id_of_text(text) : -1;
        take_piece(NULL, text, t->piece, &t->piece_len);
        /* named by id: the chunk's text goes with its first token, so that the tokens'
           pieces still spell the reply */
        if (t->piece_len == 0 && i == 0 && chunk_text)
            take_piece(NULL, chunk_text, t->piece, &t->piece_len);
        t->logprob = logprob_of(json_at(lps, i));
        const json_value *top = json_at(tops, i);
        t->n_top = 0;
        float keyed[STEP_TOP_MAX][2];
        for (size_t k = 0; top && top->type == JSON_OBJECT && k < top->count && t->n_top < STEP_TOP_MAX; k++) {
            int j = t->n_top++;
            t->top[j].id = id_of_text(top->keys[k]);
            take_piece(NULL, top->keys[k], t->top[j].piece, &t->top[j].piece_len);
            t->top[j].logprob = logprob_of(&top->items[k]);
            keyed[j][0] = t->top[j].logprob;
            keyed[j][1] = (float)j;
        }
        /* most probable first (an object's members have no order) */
        qsort(keyed, (size_t)t->n_top, sizeof keyed[0], by_logprob);
        remote_token sorted = *t;
        for (int j = 0; j < t->n_top; j++)
            sorted.top[j] = t->top[(int)keyed[j][1]];
        memcpy(t->top, sorted.top, sizeof t->top);
        if (!deliver(s))
            return false;
    }
    return true;
}

static void set_stop(stream_state *s, const char *why)
{
    snprintf(s->res->stop, sizeof s->res->stop, "%s", why);
}

/* Each token object of list (token_object's shape) delivered in order; false when one
 * has neither id nor text or fn said stop. */
static bool deliver_objects(stream_state *s, const json_value *list)
{
    for (size_t i = 0; list && list->type == JSON_ARRAY && i < list->count; i++) {
        memset(&s->tok, 0, sizeof s->tok);
        if (!token_object(json_at(list, i), &s->tok))
            return bad_event(s, "a token without id or text", NULL);
        if (!deliver(s))
            return false;
    }
    return true;
}

/* A chunk of text without log-probabilities, delivered as one token without an id. */
static bool deliver_text(stream_state *s, const char *text)
{
    if (!text || !*text)
        return true;
    memset(&s->tok, 0, sizeof s->tok);
    s->tok.id = -1;
    take_piece(NULL, text, s->tok.piece, &s->tok.piece_len);
    s->tok.logprob = NAN;
    return deliver(s);
}

/* An OpenAI-style finish reason ("length", "stop", ...) in remote_result's words. */
static const char *stop_word(const char *why)
{
    return strcmp(why, "length") == 0 ? "limit" : strcmp(why, "stop") == 0 ? "eos" : why;
}

/* A llama-server event's tokens without log-probabilities: its "tokens" ids, the
 * event's text the first one's piece (the server sends no piece per id). With
 * speculative decoding (-md) it sends the tokens its draft guessed right this way. */
static bool deliver_ids(stream_state *s, const json_value *ids, const char *text)
{
    if (!ids || ids->type != JSON_ARRAY || ids->count == 0)
        return deliver_text(s, text);
    for (size_t i = 0; i < ids->count; i++) {
        memset(&s->tok, 0, sizeof s->tok);
        if (!json_as_int(json_at(ids, i), &s->tok.id))
            return bad_event(s, "a token id that is not a number", NULL);
        if (i == 0 && text)
            take_piece(NULL, text, s->tok.piece, &s->tok.piece_len);
        s->tok.logprob = NAN;
        if (!deliver(s))
            return false;
    }
    return true;
}

/* llama-server's /completion events: a token with its log-probabilities, or (as the
 * speculative server sends the draft's accepted tokens) its id and text alone. */
static bool llama_event(stream_state *s, const json_value *v)
{
    const json_value *probs = json_get(v, "completion_probabilities");
    if (probs && probs->type == JSON_ARRAY && probs->count > 0) {
        if (!deliver_objects(s, probs))
            return false;
    } else {
        const char *text = NULL;
        json_as_string(json_get(v, "content"), &text);
        if (!deliver_ids(s, json_get(v, "tokens"), text))
            return false;
    }
    bool stop = false;
    json_as_bool(json_get(v, "stop"), &stop);
    if (stop) {
        const char *type = NULL;
        bool eos = false;
        if (json_as_string(json_get(v, "stop_type"), &type))
            set_stop(s, strcmp(type, "word") == 0 ? "stop" : type);
        else if (json_as_bool(json_get(v, "stopped_eos"), &eos) && eos)
            set_stop(s, "eos");
        json_as_int(json_get(v, "tokens_evaluated"), &s->res->prompt_tokens);
        const json_value *t = json_get(v, "timings");
        json_as_double(json_get(t, "predicted_per_second"), &s->res->server_decode_tok_s);
        json_as_int(json_get(t, "draft_n"), &s->res->server_drafted);
        json_as_int(json_get(t, "draft_n_accepted"), &s->res->server_draft_accepted);
        s->done = true;
    }
    return true;
}

/* An OpenAI-compatible chunk: choices[0] with text, logprobs and finish_reason. */
static bool openai_event(stream_state *s, const json_value *v)
{
    const json_value *c = json_at(json_get(v, "choices"), 0);
    const json_value *lp = json_get(c, "logprobs");
    const char *text = NULL;
    if (!json_as_string(json_get(c, "text"), &text)) /* a chat's chunk: its delta */
        json_as_string(json_get(json_get(c, "delta"), "content"), &text);
    const json_value *content = json_get(lp, "content");
    bool ok;
    if (content && content->type == JSON_ARRAY) { /* llama-server's own /v1 shape */
        ok = deliver_objects(s, content);
    } else if (lp && lp->type == JSON_OBJECT) {
        memset(&s->tok, 0, sizeof s->tok);
        ok = legacy_tokens(s, lp, text);
    } else {
        ok = deliver_text(s, text);
    }
    if (!ok)
        return false;
    const char *finish = NULL;
    if (json_as_string(json_get(c, "finish_reason"), &finish)) {
        set_stop(s, stop_word(finish));
        json_as_int(json_get(json_get(v, "usage"), "prompt_tokens"), &s->res->prompt_tokens);
    }
    return true;
}

/* ollama's /api/generate and /api/chat lines: response text (a chat's
 * message.content), logprobs [token objects], done. */
static bool ollama_event(stream_state *s, const json_value *v)
{
    const json_value *lps = json_get(v, "logprobs");
    const char *text = NULL;
    if (!json_as_string(json_get(v, "response"), &text))
        json_as_string(json_get(json_get(v, "message"), "content"), &text);
    if (!(lps && lps->type == JSON_ARRAY ? deliver_objects(s, lps) : deliver_text(s, text)))
        return false;
    bool done = false;
    if (json_as_bool(json_get(v, "done"), &done) && done) {
        const char *why = NULL;
        set_stop(s, json_as_string(json_get(v, "done_reason"), &why) ? stop_word(why) : "eos");
        json_as_int(json_get(v, "prompt_eval_count"), &s->res->prompt_tokens);
        s->done = true;
    }
    return true;
}

static bool on_event(void *user, const char *event, const char *data, size_t n)
{
    stream_state *s = user;
    if (s->done)
        return true; /* after the last event: nothing more is read */
    if (strcmp(data, "[DONE]") == 0) {
        s->done = true;
        return true;
    }
    json_value *v = NULL;
    llm_err perr;
    if (json_parse(data, n, &v, &perr) != LLM_OK && s->events.unended) {
        snprintf(s->why.text, sizeof s->why.text, "the connection closed in the middle of an "
                 "event of the stream (%d token%s in)", s->res->generated,
                 s->res->generated == 1 ? "" : "s");
        s->bad = true;
        return false;
    }
    if (!v)
        return bad_event(s, "the stream holds something that is not JSON", perr.text);
    bool ok;
    const json_value *e = json_get(v, "error");
    if (e || strcmp(event, "error") == 0) {
        char msg[300];
        error_message(data, n, msg, sizeof msg);
        snprintf(s->why.text, sizeof s->why.text, "the server failed in the middle of the reply: %s", msg);
        s->bad = true;
        ok = false;
    } else if (s->r->info.api == REMOTE_LLAMA_SERVER) {
        ok = llama_event(s, v);
    } else if (s->r->info.api == REMOTE_OPENAI) {
        ok = openai_event(s, v);
    } else {
        ok = ollama_event(s, v);
    }
    json_free(v);
    return ok;
}

static bool on_bytes(void *user, const char *data, size_t n)
{
    stream_state *s = user;
    return event_stream_feed(&s->events, data, n);
}

static const char *completion_path(remote_api api, const remote_request *q)
{
    return api == REMOTE_LLAMA_SERVER ? "/completion"
           : api == REMOTE_OPENAI     ? (!q->prompt && !q->text && q->messages
                                             ? "/v1/chat/completions" : "/v1/completions")
           : !q->text && q->messages  ? "/api/chat"
                                      : "/api/generate";
}

struct remote_stream {
    stream_state s;
    remote_result *res;
    char *body, *url;
    http_stream *http;
    http_response hr;
    bool done;
    llm_status st;
    llm_err err;
};

void remote_stream_close(remote_stream *rs)
{
    if (!rs)
        return;
    http_stream_close(rs->http);
    event_stream_free(&rs->s.events);
    http_response_free(&rs->hr);
    free(rs->body);
    free(rs->url);
    free(rs);
}

llm_status remote_stream_open(remote *r, const remote_request *q, remote_token_fn fn, void *user,
                              remote_result *res, remote_stream **out, llm_err *err)
{
    *out = NULL;
    *res = (remote_result){0};
    if (!q->prompt && !q->text && !q->messages)
        return llm_fail(err, LLM_ERR_ARG, "no prompt");
    if (r->info.api == REMOTE_OLLAMA && !q->text && !q->messages)
        return llm_fail(err, LLM_ERR_ARG, "ollama takes a prompt as text, not ids");
    if (r->info.api == REMOTE_LLAMA_SERVER && !q->prompt && !q->text)
        return llm_fail(err, LLM_ERR_ARG, "llama-server's /completion takes a prompt");
    remote_stream *rs = calloc(1, sizeof *rs);
    if (!rs)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    rs->res = res;
    rs->body = completion_body(r, q);
    rs->url = url_of(r, completion_path(r->info.api, q));
    if (!rs->body || !rs->url) {
        remote_stream_close(rs);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    }
    rs->s = (stream_state){.r = r, .fn = fn, .user = user, .res = res, .t0 = clock_ms()};
    event_stream_init(&rs->s.events, r->info.api == REMOTE_OLLAMA ? EVENT_STREAM_LINES : EVENT_STREAM_SSE,
                      on_event, &rs->s);
    llm_status st = http_stream_open("POST", rs->url, rs->body, &r->http, on_bytes, &rs->s, &rs->hr,
                                     &rs->http, err);
    if (st != LLM_OK) {
        remote_stream_close(rs);
        return st;
    }
    *out = rs;
    return LLM_OK;
}

/* The request ended (http's outcome st): the stream's outcome. */
static llm_status stream_outcome(remote_stream *rs, llm_status st, llm_err *err)
{
    stream_state *s = &rs->s;
    remote_result *res = rs->res;
    const char *url = rs->url;
    http_response *hr = &rs->hr;
    if (st == LLM_OK && hr->status >= 200 && hr->status < 300)
        event_stream_end(&s->events);
    res->total_ms = clock_ms() - s->t0;
    if (st == LLM_OK)
        s->r->info.rtt_ms = hr->first_byte_ms;
    if (s->stopped) {
        st = llm_fail(err, LLM_ERR_STOPPED, "stopped");
    } else if (s->bad) {
        st = llm_fail(err, LLM_ERR_FORMAT, "%s: %s", url, s->why.text);
    } else if (st == LLM_ERR_STOPPED && s->events.too_long) {
        st = llm_fail(err, LLM_ERR_FORMAT, "%s: an event of the stream is larger than %d MiB", url,
                      EVENT_STREAM_MAX >> 20);
    } else if (st == LLM_OK && (hr->status >= 300 || hr->status < 200)) {
        st = status_failure(url, hr, err);
    } else if (st == LLM_OK && !s->done) {
        st = llm_fail(err, LLM_ERR_IO, "%s: the stream ended before the reply did (%d token%s in)",
                      url, res->generated, res->generated == 1 ? "" : "s");
    }
    return st;
}

llm_status remote_stream_poll(remote_stream *rs, int timeout_ms, bool *done, llm_err *err)
{
    if (!rs->done) {
        bool ended = false;
        llm_status st = http_stream_poll(rs->http, timeout_ms, &ended, &rs->err);
        if (ended) {
            rs->done = true;
            rs->st = stream_outcome(rs, st, &rs->err);
        }
    }
    *done = rs->done;
    if (rs->done && rs->st != LLM_OK && err)
        *err = rs->err;
    return rs->done ? rs->st : LLM_OK;
}

llm_status remote_complete(remote *r, const remote_request *q, remote_token_fn fn, void *user,
                           remote_result *res, llm_err *err)
{
    remote_stream *rs;
    llm_status st = remote_stream_open(r, q, fn, user, res, &rs, err);
    bool done = false;
    while (st == LLM_OK && !done)
        st = remote_stream_poll(rs, 100, &done, err);
    remote_stream_close(rs);
    return st;
}

/* ---- for the other files of the client (remote_internal.h) ---- */

llm_status remote_post_json(remote *r, const char *path, const char *body, json_value **out,
                            llm_err *err)
{
    return request_json(r, "POST", path, body, out, NULL, err);
}

bool remote_cancelled(const remote *r)
{
    return r->http.cancelled && r->http.cancelled(r->http.cancel_user);
}

bool remote_token_object(const json_value *o, remote_token *t)
{
    return token_object(o, t);
}

void remote_piece_of_text(const char *text, char *piece, size_t *len)
{
    take_piece(NULL, text, piece, len);
}

int remote_id_of_text(const char *text)
{
    return id_of_text(text);
}

void remote_record(const remote_token *t, int pos, int input, step_phase phase, step_record *out)
{
    memset(out, 0, sizeof *out);
    out->pos = pos;
    out->token = input;
    out->phase = phase;
    out->next = t->id;
    out->next_prob = isnan(t->logprob) ? NAN : expf(t->logprob);
    out->entropy = NAN;
    out->n_top = t->n_top;
    for (int i = 0; i < t->n_top; i++) {
        out->top[i].id = t->top[i].id;
        out->top[i].logit = t->top[i].logprob;
        out->top[i].prob = expf(t->top[i].logprob);
        if (t->id >= 0 && t->top[i].id == t->id && out->next_rank == 0)
            out->next_rank = i + 1;
    }
    out->forward_ms = NAN;
    out->sample_ms = NAN;
}
