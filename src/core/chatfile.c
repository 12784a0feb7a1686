/* chatfile.c — reads and writes saved chats (see chatfile.h for the format).
 *
 * Owns the chatfile's strings and arrays. Reading parses the JSON (json.c), checks
 * every member it knows for type and range, and ignores the rest; each refusal names
 * the file, the turn and the member. Writing goes through a temporary file in the
 * target's directory, fsync'd and renamed over the target, then the directory is
 * fsync'd, so that a crash at any moment leaves the old file or the new one. */
#define _POSIX_C_SOURCE 200809L
#include "chatfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "input_file.h"
#include "intervention_json.h"
#include "output_file.h"
#include "json.h"
#include "settings.h"

void chatfile_init(chatfile *cf)
{
    memset(cf, 0, sizeof *cf);
    cf->version = CHATFILE_VERSION;
    sampler_config_default(&cf->sampler);
}

static void branch_free(chatfile_branch *b)
{
    free(b->reply);
    free(b->reply_tokens);
    ran_with_clear(&b->ran);
}

static void turn_free(chatfile_turn *t)
{
    free(t->user);
    free(t->reply);
    free(t->reply_tokens);
    for (int i = 0; i < t->n_branches; i++)
        branch_free(&t->branches[i]);
    free(t->branches);
    ran_with_clear(&t->ran);
}

void chatfile_clear(chatfile *cf)
{
    for (int i = 0; i < cf->n_turns; i++)
        turn_free(&cf->turns[i]);
    free(cf->turns);
    free(cf->model);
    free(cf->tokenizer);
    free(cf->template_name);
    free(cf->system);
    free(cf->vocab_hash);
    free(cf->server);
    free(cf->server_api);
    free(cf->server_model);
    free(cf->steer);
    chatfile_init(cf);
}

llm_status chatfile_set(char **field, const char *s, llm_err *err)
{
    char *copy = NULL;
    if (s && !(copy = strdup(s)))
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    free(*field);
    *field = copy;
    return LLM_OK;
}

/* The turns an array holding n turns has room for: n rounded up to a power of two, 8
 * at least. */
static int turns_room(int n)
{
    int room = 8;
    while (room < n)
        room *= 2;
    return room;
}

llm_status chatfile_add_turn(chatfile *cf, const char *user, const char *reply,
                             const int *reply_tokens, int n_reply_tokens, bool complete,
                             bool cut, bool in_context, llm_err *err)
{
    if (n_reply_tokens < 0)
        n_reply_tokens = 0;
    chatfile_turn t = {.complete = complete, .cut = cut, .in_context = in_context,
                       .n_reply_tokens = reply_tokens ? n_reply_tokens : 0, .end_token = -1};
    t.user = strdup(user ? user : "");
    t.reply = strdup(reply ? reply : "");
    if (reply_tokens) {
        t.reply_tokens = malloc(sizeof(int) * (size_t)(n_reply_tokens > 0 ? n_reply_tokens : 1));
        if (t.reply_tokens)
            memcpy(t.reply_tokens, reply_tokens, sizeof(int) * (size_t)n_reply_tokens);
    }
    /* room for a power of two of turns (8 at least): a chat saved after every turn
     * would otherwise move its whole turn array once per turn per save */
    chatfile_turn *grown = cf->turns;
    if (!cf->turns || cf->n_turns == turns_room(cf->n_turns))
        grown = realloc(cf->turns, sizeof *grown * (size_t)turns_room(cf->n_turns + 1));
    if (!t.user || !t.reply || (reply_tokens && !t.reply_tokens) || !grown) {
        turn_free(&t);
        if (grown)
            cf->turns = grown;
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    }
    cf->turns = grown;
    cf->turns[cf->n_turns++] = t;
    return LLM_OK;
}

/* A malloc'd copy of n ids (NULL for none; *ok false on no memory). */
static int *copy_ids(const int *ids, int n, bool *ok)
{
    *ok = true;
    if (!ids)
        return NULL;
    int *copy = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (copy)
        memcpy(copy, ids, sizeof(int) * (size_t)n);
    *ok = copy != NULL;
    return copy;
}

llm_status chatfile_add_branch(chatfile *cf, int turn, const char *reply,
                               const int *reply_tokens, int n_reply_tokens, bool complete,
                               bool cut, llm_err *err)
{
    if (turn < 0 || turn >= cf->n_turns)
        return llm_fail(err, LLM_ERR_ARG, "a branch needs a turn");
    chatfile_turn *t = &cf->turns[turn];
    if (n_reply_tokens < 0)
        n_reply_tokens = 0;
    bool ok;
    chatfile_branch b = {.complete = complete, .cut = cut,
                         .n_reply_tokens = reply_tokens ? n_reply_tokens : 0, .end_token = -1};
    b.reply = strdup(reply ? reply : "");
    b.reply_tokens = copy_ids(reply_tokens, n_reply_tokens, &ok);
    chatfile_branch *grown = realloc(t->branches, sizeof *grown * ((size_t)t->n_branches + 1));
    if (grown)
        t->branches = grown;
    if (!b.reply || !ok || !grown) {
        branch_free(&b);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    }
    t->branches[t->n_branches++] = b;
    return LLM_OK;
}

/* ---- reading ---- */

typedef struct {
    const char *name;   /* the file, for messages */
    llm_err *err;
} reader;

/* "name: what", the member named with its turn when turn >= 0. */
static llm_status bad(const reader *r, int turn, const char *member, const char *what)
{
    if (turn >= 0)
        return llm_fail(r->err, LLM_ERR_FORMAT, "%s: turn %d: \"%s\" %s", r->name, turn + 1,
                        member, what);
    return llm_fail(r->err, LLM_ERR_FORMAT, "%s: \"%s\" %s", r->name, member, what);
}

static llm_status wrong_type(const reader *r, int turn, const char *member, const json_value *v,
                             const char *want)
{
    char what[96];
    snprintf(what, sizeof what, "is %s, not %s", json_type_name(v->type), want);
    return bad(r, turn, member, what);
}

/* Copies an optional string member into *out (left alone when absent). */
static llm_status read_string(const reader *r, const json_value *obj, int turn,
                              const char *member, char **out)
{
    const json_value *v = json_get(obj, member);
    if (!v)
        return LLM_OK;
    if (v->type != JSON_STRING)
        return wrong_type(r, turn, member, v, "a string");
    if (strlen(v->text) != v->length)
        return bad(r, turn, member, "holds a NUL character (\\u0000)");
    return chatfile_set(out, v->text, r->err);
}

static llm_status read_bool(const reader *r, const json_value *obj, int turn, const char *member,
                            bool *out)
{
    const json_value *v = json_get(obj, member);
    if (v && !json_as_bool(v, out))
        return wrong_type(r, turn, member, v, "true or false");
    return LLM_OK;
}

static llm_status read_int(const reader *r, const json_value *obj, const char *member, int min,
                           int max, int *out)
{
    const json_value *v = json_get(obj, member);
    if (!v)
        return LLM_OK;
    int x;
    if (!json_as_int(v, &x) || x < min || x > max) {
        char what[96];
        snprintf(what, sizeof what, "must be a whole number from %d to %d", min, max);
        return bad(r, -1, member, what);
    }
    *out = x;
    return LLM_OK;
}

/* The "settings" object s: each of settings_table's rows with a chat key, under that
 * key ("top-p"), else under its trace key ("top_p"); what it leaves out keeps its
 * default. A member that is not a value of its setting is refused, with the range. */
/* A served chat's "server" object: its URL (required there), API and model. */
/* "steer": the interventions the chat was saved with (chatfile.h). */
static llm_status read_steer(const reader *r, const json_value *v, chatfile *cf)
{
    if (!v)
        return LLM_OK;
    bool nomem;
    if (!(cf->steer = intervention_read_json(v, 0, 0, &nomem)))
        return nomem ? llm_fail(r->err, LLM_ERR_NOMEM, "out of memory")
                     : bad(r, -1, "steer", "is not a set of interventions (\"vectors\", "
                                           "\"layers\", \"heads_out\"; llmchat(1), SAVED CHATS)");
    return LLM_OK;
}

static llm_status read_server(const reader *r, const json_value *s, chatfile *cf)
{
    if (!s)
        return LLM_OK;
    if (s->type != JSON_OBJECT)
        return wrong_type(r, -1, "server", s, "an object");
    llm_status st;
    if ((st = read_string(r, s, -1, "url", &cf->server)) != LLM_OK ||
        (st = read_string(r, s, -1, "api", &cf->server_api)) != LLM_OK ||
        (st = read_string(r, s, -1, "model", &cf->server_model)) != LLM_OK)
        return st;
    if (!cf->server || !*cf->server)
        return bad(r, -1, "server", "has no \"url\"");
    return LLM_OK;
}

static llm_status read_settings(const reader *r, const json_value *s, chatfile *cf)
{
    if (!s)
        return LLM_OK;
    if (s->type != JSON_OBJECT)
        return wrong_type(r, -1, "settings", s, "an object");
    live_settings saved = {.sampler = cf->sampler, .steps = cf->steps};
    for (const setting_info *row = settings_table; row->name; row++) {
        if (!row->chat_key)
            continue;
        const char *key = row->chat_key;
        const json_value *v = json_get(s, key);
        if (!v && row->trace_key)
            v = json_get(s, key = row->trace_key);
        const char *why = v ? settings_from_json(row, &saved, v) : NULL;
        if (v && !why)
            cf->settings_held |= 1u << (row - settings_table);
        if (!why)
            continue;
        char what[160];
        if (v->type == JSON_NUMBER)
            snprintf(what, sizeof what, "%s, got %s", why, v->text);
        else
            snprintf(what, sizeof what, "%s, not %s", why, json_type_name(v->type));
        return bad(r, -1, key, what);
    }
    cf->sampler = saved.sampler;
    cf->steps = saved.steps;
    return read_int(r, s, "ctx", 0, INT_MAX, &cf->ctx);
}

unsigned chatfile_settings_onto(const chatfile *cf, live_settings *s, unsigned keep)
{
    live_settings saved = {.sampler = cf->sampler, .steps = cf->steps};
    unsigned set = 0;
    for (const setting_info *row = settings_table; row->name; row++) {
        unsigned bit = 1u << (row - settings_table);
        if (!(cf->settings_held & bit) || (keep & bit))
            continue;
        settings_copy(row, s, &saved);
        set |= bit;
    }
    return set;
}

/* Reads an optional array of token ids (member `member` of v; ids only mean something
 * with the vocabulary they come from, so they are skipped without one) into *ids. */
static llm_status read_ids(const reader *r, const json_value *v, int i, const char *member,
                           const chatfile *cf, int **ids, int *n_ids)
{
    const json_value *tokens = json_get(v, member);
    *ids = NULL;
    *n_ids = 0;
    if (tokens && tokens->type != JSON_ARRAY)
        return wrong_type(r, i, member, tokens, "an array");
    if (!tokens || cf->vocab_size <= 0)
        return LLM_OK;
    if (tokens->count > INT_MAX / 2)
        return bad(r, i, member, "is implausibly long");
    int *out = malloc(sizeof(int) * (tokens->count ? tokens->count : 1));
    if (!out)
        return llm_fail(r->err, LLM_ERR_NOMEM, "out of memory");
    for (size_t k = 0; k < tokens->count; k++) {
        int id;
        if (!json_as_int(&tokens->items[k], &id) || id < 0 || id >= cf->vocab_size) {
            char what[96];
            snprintf(what, sizeof what, "item %zu is not a token id from 0 to %d", k + 1,
                     cf->vocab_size - 1);
            free(out);
            return bad(r, i, member, what);
        }
        out[k] = id;
    }
    *ids = out;
    *n_ids = (int)tokens->count;
    return LLM_OK;
}

/* Reads the optional "end_token" of v (turn i, or one of its branches) into *out: a
 * token id of the file's vocabulary, kept only when the file names one (as ids are). */
static llm_status read_end_token(const reader *r, const json_value *v, int i,
                                 const chatfile *cf, int *out)
{
    const json_value *end = json_get(v, "end_token");
    int id;
    *out = -1;
    if (!end || cf->vocab_size <= 0)
        return LLM_OK;
    if (!json_as_int(end, &id) || id < 0 || id >= cf->vocab_size) {
        char what[96];
        snprintf(what, sizeof what, "must be a token id from 0 to %d", cf->vocab_size - 1);
        return bad(r, i, "end_token", what);
    }
    *out = id;
    return LLM_OK;
}

/* The "ran_with" of v (turn i's or one of its branches') into ran: segments by
 * "from", ascending, each with its "steer". */
static llm_status read_ran_with(const reader *r, const json_value *v, int i, ran_with *ran)
{
    const json_value *list = json_get(v, "ran_with");
    if (!list)
        return LLM_OK;
    if (list->type != JSON_ARRAY)
        return wrong_type(r, i, "ran_with", list, "an array");
    for (size_t k = 0; k < list->count; k++) {
        const json_value *seg = &list->items[k];
        int from;
        if (seg->type != JSON_OBJECT || !json_as_int(json_get(seg, "from"), &from) ||
            from < -(1 << 30) || from > 1 << 30 || (ran->n && from <= ran->seg[ran->n - 1].from))
            return bad(r, i, "ran_with", "must list objects whose \"from\" are whole numbers, "
                                         "ascending");
        bool nomem;
        intervention *in = intervention_read_json(json_get(seg, "steer"), 0, 0, &nomem);
        if (!in)
            return nomem ? llm_fail(r->err, LLM_ERR_NOMEM, "out of memory")
                         : bad(r, i, "ran_with", "holds a \"steer\" that is not a set of "
                                                 "interventions (llmchat(1), SAVED CHATS)");
        bool kept = ran_with_add(ran, from, in); /* the same as the one before: merged */
        free(in);
        if (!kept)
            return llm_fail(r->err, LLM_ERR_NOMEM, "out of memory");
    }
    return LLM_OK;
}

/* Reads turn i's "branch" and "branches" into the newest turn of cf. */
static llm_status read_branches(const reader *r, const json_value *v, int i, chatfile *cf)
{
    const json_value *list = json_get(v, "branches");
    if (!list)
        return LLM_OK;
    if (list->type != JSON_ARRAY)
        return wrong_type(r, i, "branches", list, "an array");
    if (list->count > INT_MAX / 2)
        return bad(r, i, "branches", "holds implausibly many branches");
    llm_status st = LLM_OK;
    for (size_t k = 0; k < list->count && st == LLM_OK; k++) {
        const json_value *b = &list->items[k];
        char *reply = NULL;
        int *ids = NULL, n_ids = 0, end = -1;
        bool complete = false, cut = false;
        chatfile_turn *t = &cf->turns[cf->n_turns - 1];
        if (b->type != JSON_OBJECT)
            st = wrong_type(r, i, "branches", b, "an array of objects");
        else if ((st = read_string(r, b, i, "reply", &reply)) == LLM_OK &&
                 (st = read_bool(r, b, i, "complete", &complete)) == LLM_OK &&
                 (st = read_bool(r, b, i, "cut", &cut)) == LLM_OK &&
                 (st = read_ids(r, b, i, "reply_tokens", cf, &ids, &n_ids)) == LLM_OK &&
                 (st = read_end_token(r, b, i, cf, &end)) == LLM_OK &&
                 (st = chatfile_add_branch(cf, cf->n_turns - 1, reply, ids, n_ids, complete,
                                           cut, r->err)) == LLM_OK) {
            t->branches[t->n_branches - 1].end_token = end;
            st = read_ran_with(r, b, i, &t->branches[t->n_branches - 1].ran);
        }
        free(reply);
        free(ids);
    }
    chatfile_turn *t = &cf->turns[cf->n_turns - 1];
    int which = 1;
    const json_value *at = json_get(v, "branch");
    if (st == LLM_OK && at &&
        (!json_as_int(at, &which) || which < 1 || which > t->n_branches + 1)) {
        char what[96];
        snprintf(what, sizeof what, "must be a whole number from 1 to %d", t->n_branches + 1);
        st = bad(r, i, "branch", what);
    }
    t->branch = which - 1;
    return st;
}

static llm_status read_turn(const reader *r, const json_value *v, int i, chatfile *cf)
{
    if (v->type != JSON_OBJECT) {
        char what[64];
        snprintf(what, sizeof what, "is %s, not an object", json_type_name(v->type));
        return llm_fail(r->err, LLM_ERR_FORMAT, "%s: turn %d %s", r->name, i + 1, what);
    }
    char *user = NULL, *reply = NULL;
    int *ids = NULL;
    int n_ids = 0, end = -1;
    bool complete = false, cut = false, in_context = true;
    llm_status st;
    if ((st = read_string(r, v, i, "user", &user)) != LLM_OK ||
        (st = read_string(r, v, i, "reply", &reply)) != LLM_OK ||
        (st = read_bool(r, v, i, "complete", &complete)) != LLM_OK ||
        (st = read_bool(r, v, i, "cut", &cut)) != LLM_OK ||
        (st = read_bool(r, v, i, "in_context", &in_context)) != LLM_OK)
        goto done;
    if (!user) {
        st = bad(r, i, "user", "is missing");
        goto done;
    }
    if ((st = read_ids(r, v, i, "reply_tokens", cf, &ids, &n_ids)) != LLM_OK ||
        (st = read_end_token(r, v, i, cf, &end)) != LLM_OK)
        goto done;
    if ((st = chatfile_add_turn(cf, user, reply, ids, n_ids, complete, cut, in_context,
                                r->err)) == LLM_OK) {
        cf->turns[cf->n_turns - 1].end_token = end;
        if ((st = read_branches(r, v, i, cf)) == LLM_OK)
            st = read_ran_with(r, v, i, &cf->turns[cf->n_turns - 1].ran);
    }
done:
    free(user);
    free(reply);
    free(ids);
    return st;
}

llm_status chatfile_parse(const char *name, const char *data, size_t len, chatfile *cf,
                          llm_err *err)
{
    chatfile_init(cf);
    reader r = {.name = name, .err = err};
    json_value *root;
    llm_err why;
    llm_status st = json_parse(data, len, &root, &why);
    if (st == LLM_OK && !json_has_raw_bytes_member(root)) { /* an older file (chatfile.h) */
        json_free(root);
        st = json_parse_bytes(data, len, JSON_LATIN1_BYTES, &root, &why);
    }
    if (st != LLM_OK)
        return llm_fail(err, st, "%s: not a saved chat: %s", name, why.text);
    if (root->type != JSON_OBJECT || !json_get(root, "llmchat_chat")) {
        json_free(root);
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: not a saved chat (a JSON object with \"llmchat_chat\" expected)",
                        name);
    }
    if (!json_as_int(json_get(root, "llmchat_chat"), &cf->version) || cf->version < 1) {
        json_free(root);
        return bad(&r, -1, "llmchat_chat", "must be a version number (1 or more)");
    }
    if (cf->version > CHATFILE_VERSION) {
        int v = cf->version;
        json_free(root);
        chatfile_init(cf);
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: saved by a newer llmchat (format version %d; this one reads up "
                        "to %d)", name, v, CHATFILE_VERSION);
    }
    const json_value *turns = json_get(root, "turns");
    if ((st = read_string(&r, root, -1, "model", &cf->model)) != LLM_OK ||
        (st = read_string(&r, root, -1, "tokenizer", &cf->tokenizer)) != LLM_OK ||
        (st = read_string(&r, root, -1, "template", &cf->template_name)) != LLM_OK ||
        (st = read_string(&r, root, -1, "system", &cf->system)) != LLM_OK ||
        (st = read_int(&r, root, "vocab_size", 0, INT_MAX, &cf->vocab_size)) != LLM_OK ||
        (st = read_string(&r, root, -1, "vocab_hash", &cf->vocab_hash)) != LLM_OK ||
        (st = read_settings(&r, json_get(root, "settings"), cf)) != LLM_OK ||
        (st = read_steer(&r, json_get(root, "steer"), cf)) != LLM_OK ||
        (st = read_server(&r, json_get(root, "server"), cf)) != LLM_OK)
        goto done;
    if (!cf->system && (st = chatfile_set(&cf->system, "", err)) != LLM_OK)
        goto done;
    if (!turns) {
        st = bad(&r, -1, "turns", "is missing");
        goto done;
    }
    if (turns->type != JSON_ARRAY) {
        st = wrong_type(&r, -1, "turns", turns, "an array");
        goto done;
    }
    if (turns->count > INT_MAX / 2) {
        st = bad(&r, -1, "turns", "holds implausibly many turns");
        goto done;
    }
    for (size_t i = 0; i < turns->count && st == LLM_OK; i++)
        st = read_turn(&r, &turns->items[i], (int)i, cf);
done:
    json_free(root);
    if (st != LLM_OK)
        chatfile_clear(cf);
    return st;
}

llm_status chatfile_read(const char *path, chatfile *cf, llm_err *err)
{
    chatfile_init(cf);
    const char *why;
    FILE *f = input_file_fopen_document(path, &why);
    if (!f)
        return llm_fail(err, LLM_ERR_IO, "%s: %s", path, why);
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0) {
        fclose(f);
        return llm_fail(err, LLM_ERR_IO, "%s: %s", path, strerror(errno));
    }
    if (sb.st_size > CHATFILE_MAX_BYTES) {
        fclose(f);
        return llm_fail(err, LLM_ERR_FORMAT, "%s: %lld bytes, more than a saved chat may hold "
                        "(%d)", path, (long long)sb.st_size, (int)CHATFILE_MAX_BYTES);
    }
    size_t size = (size_t)sb.st_size;
    char *data = malloc(size + 1);
    if (!data) {
        fclose(f);
        return llm_fail(err, LLM_ERR_NOMEM, "%s: out of memory", path);
    }
    size_t got = fread(data, 1, size, f);
    int read_errno = ferror(f) ? errno : 0;
    fclose(f);
    if (got != size) {
        free(data);
        return llm_fail(err, LLM_ERR_IO, "%s: read failed: %s", path,
                        read_errno ? strerror(read_errno) : "the file shrank while reading");
    }
    llm_status st = chatfile_parse(path, data, size, cf, err);
    free(data);
    return st;
}

/* ---- writing ---- */

/* A JSON number that reads back as the same float (at most 9 significant digits),
 * whatever the locale's decimal point. */
static void put_float(FILE *f, float x)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%.6g", (double)x); /* the short form when it reads back exactly */
    if (strtof(buf, NULL) != x)
        snprintf(buf, sizeof buf, "%.9g", (double)x);
    const char *point = localeconv()->decimal_point;
    if (point && point[0] && strcmp(point, ".") != 0) {
        char *p = strstr(buf, point);
        if (p) {
            size_t n = strlen(point);
            *p = '.';
            memmove(p + 1, p + n, strlen(p + n) + 1);
        }
    }
    fputs(buf, f);
}

static void put_member_string(FILE *f, const char *name, const char *s)
{
    fprintf(f, ",\n  \"%s\": ", name);
    json_write_string(f, s);
}

/* A reply's "reply_tokens" and "end_token" (after `lead`), when the file names their
 * vocabulary. */
static void put_ids(FILE *f, const chatfile *cf, const char *lead, const int *ids, int n,
                    int end_token)
{
    if (!ids || cf->vocab_size <= 0)
        return;
    fprintf(f, "%s\"reply_tokens\": [", lead);
    for (int k = 0; k < n; k++)
        fprintf(f, k ? ", %d" : "%d", ids[k]);
    fputc(']', f);
    if (end_token >= 0)
        fprintf(f, ", \"end_token\": %d", end_token);
}

/* A turn's or a branch's "ran_with" member, when it has segments. */
static void put_ran_with(FILE *f, const ran_with *ran)
{
    static const intervention none = {.first_layer = -1, .last_layer = -1};
    for (int k = 0; k < ran->n; k++) {
        fprintf(f, "%s{\"from\": %d, \"steer\": ", k ? ",\n       " : ",\n     \"ran_with\": [",
                ran->seg[k].from);
        intervention_write_json(f, ran->seg[k].in ? ran->seg[k].in : &none);
        fputc('}', f);
    }
    if (ran->n > 0)
        fputc(']', f);
}

/* Turn t's "branch" and "branches" members, when its reply has other branches. */
static void put_branches(FILE *f, const chatfile *cf, const chatfile_turn *t)
{
    if (t->n_branches == 0)
        return;
    fprintf(f, ",\n     \"branch\": %d, \"branches\": [", t->branch + 1);
    for (int k = 0; k < t->n_branches; k++) {
        const chatfile_branch *b = &t->branches[k];
        fputs(k ? ",\n       {\"reply\": " : "\n       {\"reply\": ", f);
        json_write_string(f, b->reply);
        put_ids(f, cf, ", ", b->reply_tokens, b->n_reply_tokens, b->end_token);
        fprintf(f, ", \"complete\": %s, \"cut\": %s", b->complete ? "true" : "false",
                b->cut ? "true" : "false");
        put_ran_with(f, &b->ran);
        fputc('}', f);
    }
    fputc(']', f);
}

/* The settings as the members of "settings": each of settings_table's rows with a chat
 * key, in the order of their chat_place. */
static void put_settings(FILE *f, const chatfile *cf)
{
    live_settings saved = {.sampler = cf->sampler, .steps = cf->steps};
    int n = 0;
    for (int place = 1; place <= SETTINGS_COUNT; place++)
        for (const setting_info *row = settings_table; row->name; row++) {
            if (!row->chat_key || row->chat_place != place)
                continue;
            fprintf(f, "%s\"%s\": ", n++ ? ", " : "", row->chat_key);
            char text[32];
            if (row->type == SETTING_NUMBER)
                put_float(f, (float)settings_value(row, &saved));
            else
                fputs(settings_value_text(row, &saved, text, sizeof text), f);
        }
}

void chatfile_print(FILE *f, const chatfile *cf)
{
    int version = 1; /* older readers read a chat without branches */
    for (int i = 0; i < cf->n_turns; i++)
        if (cf->turns[i].n_branches > 0)
            version = 2;
    if (!intervention_is_empty(cf->steer))
        version = 3;
    for (int i = 0; i < cf->n_turns; i++)
        for (int k = -1; k < cf->turns[i].n_branches; k++)
            if ((k < 0 ? &cf->turns[i].ran : &cf->turns[i].branches[k].ran)->n > 0)
                version = 4; /* a reader before it would read such a turn as the save's */
    fprintf(f, "{\n  \"llmchat_chat\": %d, \"" JSON_RAW_BYTES_KEY "\": " JSON_RAW_BYTES_VALUE,
            version);
    if (cf->model)
        put_member_string(f, "model", cf->model);
    if (cf->tokenizer)
        put_member_string(f, "tokenizer", cf->tokenizer);
    if (cf->template_name || !cf->server) /* a served chat's is the server's */
        put_member_string(f, "template", cf->template_name ? cf->template_name : "llama2");
    if (cf->server) {
        fputs(",\n  \"server\": {\"url\": ", f);
        json_write_string(f, cf->server);
        if (cf->server_api) {
            fputs(", \"api\": ", f);
            json_write_string(f, cf->server_api);
        }
        if (cf->server_model) {
            fputs(", \"model\": ", f);
            json_write_string(f, cf->server_model);
        }
        fputc('}', f);
    }
    put_member_string(f, "system", cf->system ? cf->system : "");
    fprintf(f, ",\n  \"vocab_size\": %d", cf->vocab_size);
    if (cf->vocab_hash) {
        fputs(", \"vocab_hash\": ", f);
        json_write_string(f, cf->vocab_hash);
    }
    fputs(",\n  \"settings\": {", f);
    put_settings(f, cf);
    fprintf(f, ", \"ctx\": %d}", cf->ctx);
    if (!intervention_is_empty(cf->steer)) {
        fputs(",\n  \"steer\": ", f);
        intervention_write_json(f, cf->steer);
    }
    fputs(",\n  \"turns\": [", f);
    for (int i = 0; i < cf->n_turns; i++) {
        const chatfile_turn *t = &cf->turns[i];
        fputs(i ? ",\n    {\"user\": " : "\n    {\"user\": ", f);
        json_write_string(f, t->user);
        fputs(",\n     \"reply\": ", f);
        json_write_string(f, t->reply);
        put_ids(f, cf, ",\n     ", t->reply_tokens, t->n_reply_tokens, t->end_token);
        fprintf(f, ",\n     \"complete\": %s, \"cut\": %s, \"in_context\": %s",
                t->complete ? "true" : "false", t->cut ? "true" : "false",
                t->in_context ? "true" : "false");
        put_branches(f, cf, t);
        put_ran_with(f, &t->ran);
        fputc('}', f);
    }
    fputs(cf->n_turns ? "\n  ]\n}\n" : "]\n}\n", f);
}

static llm_status print_chat(FILE *f, const char *path, const void *ctx, llm_err *err)
{
    (void)path;
    (void)err;
    chatfile_print(f, ctx);
    return LLM_OK;
}

llm_status chatfile_write(const chatfile *cf, const char *path, llm_err *err)
{
    return output_file_write(path, "the chat", OUTPUT_FILE_PRIVATE, print_chat, cf, err);
}
