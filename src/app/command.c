/* command.c — the slash commands: the table, the parser and the handlers (see
 * command.h).
 *
 * Owns the table. A handler works on the host's chat and engine and tells the host
 * what changed; what the front end shows for it (a notice line, a redraw) is the
 * front end's. */
#include "command.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "parse_number.h"
#include "served.h"
#include "textfmt.h"
#include "force_expert_command.h"
#include "knock_command.h"
#include "vector_command.h"

/* Says a formatted line through the host. */
static void say(command_host *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(command_host *h, const char *fmt, ...)
{
    char buf[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    h->say(h, buf);
}

static const char *plural(int n)
{
    return n == 1 ? "" : "s";
}

/* Whether the command line gave the session interventions of its own. */
static bool options_steer(const app_options *o)
{
    return o->n_vectors || o->vector_first >= 0 || o->n_knocks || o->n_expert_knocks ||
           o->n_expert_forces;
}

command_loaded command_load(command_host *h, const char *path, bool resuming)
{
    llm_err err;
    char notice[2200];
    bool keep = resuming && !h->served && options_steer(h->s->o), apart = false;
    live_settings ls = h->served ? served_settings(h->served) : session_settings(h->s);
    llm_status st = h->served
                        ? served_load_chat(h->served, path, !resuming, &apart, notice,
                                           sizeof notice, &err)
                        : autosave_load_chat(h->s->c, h->s->e, path, keep, resuming ? NULL : &ls,
                                             &apart, notice, sizeof notice, &err);
    if (st != LLM_OK) {
        say(h, "%s", err.text);
        return COMMAND_LOAD_FAILED;
    }
    if (!h->served && !resuming)
        session_set_settings(h->s, &ls);
    h->changed(h, COMMAND_CHANGED_DIALOG);
    int turns = h->served ? remote_chat_turn_count(h->served->rc)
                          : chat_turn_count(h->s->c) + chat_dropped_count(h->s->c);
    say(h, "loaded %s (%d turn%s)", path, turns, plural(turns));
    if (*notice)
        say(h, "%s", notice);
    if (apart)
        say(h, "it goes on in a new file: %s keeps the interventions it was saved with", path);
    const app_options *o = h->served ? h->served->o : h->s->o;
    const char *saved_system = h->served ? remote_chat_system(h->served->rc) : chat_system(h->s->c);
    if (resuming && o->system_cli && /* -y over the saved chat's system prompt */
        strcmp(saved_system ? saved_system : "", o->system ? o->system : "") != 0) {
        const char *y = o->system && *o->system ? o->system : NULL;
        st = h->served ? remote_chat_set_system(h->served->rc, y, &err)
                       : chat_set_system(h->s->c, y, &err);
        if (st != LLM_OK) {
            say(h, "-y: %s", err.text);
        } else {
            h->changed(h, COMMAND_CHANGED_CHAT);
            say(h, "system prompt from -y, in place of the saved chat's");
        }
    }
    return apart ? COMMAND_LOADED_APART : COMMAND_LOADED;
}

static void run_reset(command_host *h, const char *arg)
{
    (void)arg;
    if (h->served)
        remote_chat_reset(h->served->rc);
    else
        chat_reset(h->s->c);
    autosave_start_over(h->served ? &h->served->save : &h->s->save); /* the old file keeps it */
    h->changed(h, COMMAND_CHANGED_DIALOG);
    say(h, "the conversation was reset");
}

static void run_system(command_host *h, const char *arg)
{
    llm_err err;
    llm_status st = h->served ? remote_chat_set_system(h->served->rc, *arg ? arg : NULL, &err)
                              : chat_set_system(h->s->c, *arg ? arg : NULL, &err);
    if (st != LLM_OK) {
        say(h, "/system: %s", err.text);
        return;
    }
    h->changed(h, COMMAND_CHANGED_CHAT);
    if (*arg)
        say(h, "system prompt: %s", arg);
    else
        say(h, "system prompt cleared");
}

static void run_save(command_host *h, const char *arg)
{
    bool all;
    llm_err err;
    const char *file = autosave_save_args(arg, &all);
    if (!*file)
        say(h, "/save needs a file name: /save [--all] FILE");
    else if ((h->served ? served_save_chat(h->served, file, &err)
                        : autosave_save_chat(h->s, file, all, &err)) != LLM_OK)
        say(h, "/save: %s", err.text);
    else
        say(h, "saved%s to %s", all ? " with every branch" : "", file);
}

static void run_load(command_host *h, const char *arg)
{
    if (!*arg)
        say(h, "/load needs a file name: /load FILE");
    else if (command_load(h, arg, false)) /* the chat so far stays in its file; this one goes on anew */
        autosave_start_over(h->served ? &h->served->save : &h->s->save);
}

/* /resume: the recent chats, or with N the N-th reopened (and saved to from then on). */
static void run_resume(command_host *h, const char *arg)
{
    saved_chat list[AUTOSAVE_RECENT_MAX];
    autosave_file *own = h->served ? &h->served->save : &h->s->save;
    int n = autosave_recent(list, AUTOSAVE_RECENT_MAX, own->path);
    if (!*arg) {
        if (n == 0) {
            say(h, "no saved chats yet");
            return;
        }
        say(h, "recent chats (/resume N reopens one):");
        for (int i = 0; i < n; i++) {
            char when[32], first[4 * sizeof list[i].first];
            struct tm tm;
            localtime_r(&list[i].when, &tm);
            strftime(when, sizeof when, "%Y-%m-%d %H:%M", &tm);
            textfmt_stream ts = {0};
            size_t k = textfmt_stream_put(&ts, list[i].first, strlen(list[i].first), first,
                                          sizeof first - 1);
            first[k] = '\0';
            say(h, "%2d  %s  %3d turn%s  %s", i + 1, when, list[i].n_turns,
                list[i].n_turns == 1 ? " " : "s", first);
        }
        return;
    }
    int k;
    if (n == 0) {
        say(h, "no saved chats yet: there is none to resume");
        return;
    }
    if (!parse_int(arg, 1, n, &k)) {
        say(h, n == 1 ? "/resume takes the number of a chat in the list (1)"
                      : "/resume takes the number of a chat in the list (1-%d)", n);
        return;
    }
    command_loaded loaded = command_load(h, list[k - 1].path, false);
    if (loaded == COMMAND_LOADED)
        autosave_use(own, list[k - 1].path);
    else if (loaded == COMMAND_LOADED_APART)
        autosave_start_over(own);
}

static void run_force(command_host *h, const char *arg)
{
    h->force(h, arg);
    h->changed(h, COMMAND_CHANGED_CHAT);
}

static void run_step(command_host *h, const char *arg)
{
    if (!*arg)
        say(h, "/step needs text: /step TEXT sends TEXT, its reply paused before the first token");
    else if (h->send_paused)
        h->send_paused(h, arg);
}

static void run_set(command_host *h, const char *arg)
{
    llm_err err;
    char shown[256];
    live_settings now;
    if (h->served)
        now = served_settings(h->served);
    else
        now = session_settings(h->s); /* the sampler's own: /load may have set them */
    if (*arg && settings_set_line(&now, arg, &err) != LLM_OK) {
        say(h, "/set: %s", err.text);
        return;
    }
    if (h->served && now.slow_motion_ms != 0) {
        say(h, "/set: slow-motion needs a local model: a served reply comes at the server's pace");
        return;
    }
    if (h->served)
        served_set_settings(h->served, &now);
    else
        session_set_settings(h->s, &now);
    settings_format(&now, shown, sizeof shown);
    say(h, "%s%s", *arg ? "from the next token: " : "", shown);
    h->changed(h, COMMAND_CHANGED_SETTINGS);
}

/* The argument of /vector, /knock and /force_expert, whose /help names "list": that
 * word asks for what the command alone shows. */
static const char *listing(const char *arg)
{
    return strcmp(arg, "list") ? arg : "";
}

/* /vector: the control vectors in force, or a change to them (vector_command.h). */
static void run_vector(command_host *h, const char *arg)
{
    arg = listing(arg);
    llm_err err;
    char shown[1024];
    if (vector_command(h->s->e, arg, shown, sizeof shown, &err) != LLM_OK) {
        say(h, "%s", err.text);
        return;
    }
    say(h, "%s%s", *arg ? "from the next token: " : "", shown);
    h->changed(h, COMMAND_CHANGED_SETTINGS);
}

/* /knock: the heads and experts knocked out, or a change to them (knock_command.h). */
static void run_knock(command_host *h, const char *arg)
{
    arg = listing(arg);
    llm_err err;
    char shown[1024];
    if (knock_command(h->s->e, arg, shown, sizeof shown, &err) != LLM_OK) {
        say(h, "%s", err.text);
        return;
    }
    say(h, "%s%s", *arg ? "from the next token: " : "", shown);
    h->changed(h, COMMAND_CHANGED_SETTINGS);
}

/* /force_expert: the experts forced, or a change to them (force_expert_command.h). */
static void run_force_expert(command_host *h, const char *arg)
{
    arg = listing(arg);
    llm_err err;
    char shown[1024];
    if (force_expert_command(h->s->e, arg, shown, sizeof shown, &err) != LLM_OK) {
        say(h, "%s", err.text);
        return;
    }
    say(h, "%s%s", *arg ? "from the next token: " : "", shown);
    h->changed(h, COMMAND_CHANGED_SETTINGS);
}

/* /think and /no_think: the chat template's thinking switch (qwen3's enable_thinking). */
static void set_thinking(command_host *h, bool on)
{
    const chat_template *t = chat_get_template(h->s->c);
    if (!chat_set_thinking(h->s->c, on)) {
        say(h, "/%s: the chat template %s has no thinking switch (qwen3's has)",
            on ? "think" : "no_think", template_name(t));
        return;
    }
    say(h, "thinking %s from the next message", on ? "on" : "off");
}

static void run_think(command_host *h, const char *arg)
{
    (void)arg;
    set_thinking(h, true);
}

static void run_no_think(command_host *h, const char *arg)
{
    (void)arg;
    set_thinking(h, false);
}

static void run_patch(command_host *h, const char *arg)
{
    if (!h->patch)
        say(h, "/patch: this front end has no patching view (llmchat -m patch)");
    else
        h->patch(h, arg);
}

static void run_experts(command_host *h, const char *arg)
{
    (void)arg;
    if (!h->open_view || !h->open_view(h, "experts"))
        say(h, "/experts: this front end has no experts view");
}

static void run_help(command_host *h, const char *arg)
{
    (void)arg;
    h->help(h);
}

static void run_quit(command_host *h, const char *arg)
{
    (void)arg;
    h->quit(h);
}

static const command_info table[] = {
    {.id = CMD_RESET, .name = "reset", .help = "forget the dialog; the system prompt stays",
     .front_ends = COMMAND_EVERYWHERE, .needs_model = true, .served = true,
     .stops_reply = true, .run = run_reset},
    {.id = CMD_SYSTEM, .name = "system", .arg = "TEXT",
     .help = "set the system prompt; without TEXT, clear it", .front_ends = COMMAND_EVERYWHERE,
     .needs_model = true, .served = true, .run = run_system},
    {.id = CMD_SAVE, .name = "save", .arg = "[--all] FILE",
     .help = "write the dialog to FILE; --all: every branch", .front_ends = COMMAND_EVERYWHERE,
     .needs_model = true, .served = true, .run = run_save},
    {.id = CMD_LOAD, .name = "load", .arg = "FILE",
     .help = "replace the dialog with the chat saved in FILE", .front_ends = COMMAND_EVERYWHERE,
     .needs_model = true, .served = true, .stops_reply = true, .run = run_load},
    {.id = CMD_RESUME, .name = "resume", .arg = "[N]",
     .help = "list the recent saved chats; with N, reopen the N-th",
     .front_ends = COMMAND_EVERYWHERE, .needs_model = true, .served = true,
     .stops_reply = true, .run = run_resume},
    {.id = CMD_FORCE, .name = "force", .arg = "TEXT",
     .help = "put TEXT's tokens into the newest reply", .front_ends = COMMAND_TUI,
     .needs_model = true, .served = true, .run = run_force},
    {.id = CMD_STEP, .name = "step", .arg = "TEXT",
     .help = "send TEXT with its reply paused: n steps, p runs", .front_ends = COMMAND_TUI,
     .needs_model = true, .run = run_step},
    {.id = CMD_SET, .name = "set", .arg = "[NAME VALUE]",
     .help = "show the sampler settings, or change one from the next token",
     .front_ends = COMMAND_EVERYWHERE, .needs_model = true, .served = true, .run = run_set},
    {.id = CMD_VECTOR, .name = "vector", .arg = "[ARGS]",
     .help = "control vectors: list; load FILE [SCALE]; NAME SCALE; drop NAME; layers F-L|all; "
             "make [--replace] NAME \"A\" \"B\"",
     .front_ends = COMMAND_EVERYWHERE, .needs_model = true, .run = run_vector},
    {.id = CMD_KNOCK, .name = "knock", .arg = "[ARGS]",
     .help = "knock-outs (from 0): list; head L:H; expert L:E (the router never chooses it); "
             "restore head|expert L:N",
     .front_ends = COMMAND_EVERYWHERE, .needs_model = true, .run = run_knock},
    {.id = CMD_FORCE_EXPERT, .name = "force_expert", .arg = "[ARGS]",
     .help = "forced experts (from 0): list; L:E (the router chooses it first at layer L; "
             "one a layer); off [L]",
     .front_ends = COMMAND_EVERYWHERE, .needs_model = true, .run = run_force_expert},
    {.id = CMD_THINK, .name = "think",
     .help = "let the model think before it answers (qwen3's template; the default)",
     .front_ends = COMMAND_EVERYWHERE, .needs_model = true, .run = run_think},
    {.id = CMD_NO_THINK, .name = "no_think",
     .help = "ask for answers without thinking (qwen3's enable_thinking=false)",
     .front_ends = COMMAND_EVERYWHERE, .needs_model = true, .run = run_no_think},
    {.id = CMD_PATCH, .name = "patch", .arg = "[TEXT]",
     .help = "activation patching: the newest message against TEXT in its place (the "
             "patching view; alone: the last grid)",
     .front_ends = COMMAND_TUI, .needs_model = true, .stops_reply = true, .run = run_patch},
    {.id = CMD_EXPERTS, .name = "experts",
     .help = "the experts view: the experts each layer chose for the selected token",
     .front_ends = COMMAND_TUI, .run = run_experts},
    {.id = CMD_HELP, .name = "help", .help = "list the commands",
     .front_ends = COMMAND_EVERYWHERE, .run = run_help},
    {.id = CMD_QUIT, .name = "quit", .aliases = "exit q", .help = "leave, as Ctrl-D does",
     .front_ends = COMMAND_EVERYWHERE, .run = run_quit},
};
enum { N_TABLE = sizeof table / sizeof table[0] };

const command_info *command_table(int *n)
{
    *n = N_TABLE;
    return table;
}

/* Is name one of the space-separated words of list? */
static bool in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        size_t w = strcspn(p, " ");
        if (w == n && !strncmp(p, name, n))
            return true;
        p += w;
        p += strspn(p, " ");
    }
    return false;
}

const command_info *command_find(const char *name)
{
    for (int i = 0; i < N_TABLE; i++)
        if (!strcmp(table[i].name, name) || in_list(table[i].aliases, name))
            return &table[i];
    return NULL;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

bool command_parse(char *line, command_call *call)
{
    while (is_blank(*line))
        line++;
    if (*line != '/')
        return false;
    char *name = line + 1;
    char *p = name;
    while (*p && !is_blank(*p))
        p++;
    char *arg = p;
    if (*p) {
        *p = '\0';
        arg = p + 1;
        while (is_blank(*arg))
            arg++;
        size_t n = strlen(arg);
        while (n > 0 && is_blank(arg[n - 1]))
            arg[--n] = '\0';
    }
    call->name = name;
    call->arg = arg;
    call->info = command_find(name);
    call->id = call->info ? call->info->id : CMD_UNKNOWN;
    return true;
}

void command_run(command_host *h, const command_call *call)
{
    const command_info *ci = call->info;
    if (!ci) {
        say(h, "unknown command /%s (try /help)", call->name);
        return;
    }
    if (!(ci->front_ends & h->front_end)) {
        say(h, "/%s works only in %s", call->name, command_only_in(ci));
        return;
    }
    bool served = h->served && ci->served;
    if (ci->needs_model && (!h->s || !h->s->c) && !served) {
        if (h->read_only)
            h->read_only(h);
        else
            say(h, "read-only: viewing a trace");
        return;
    }
    if (ci->stops_reply && h->stop_reply)
        h->stop_reply(h);
    ci->run(h, call->arg);
}

int command_usage(const command_info *ci, char *buf, size_t size)
{
    return snprintf(buf, size, "/%s%s%s", ci->name, ci->arg ? " " : "", ci->arg ? ci->arg : "");
}

const char *command_only_in(const command_info *ci)
{
    switch (ci->front_ends) {
    case COMMAND_TUI: return "the TUI";
    case COMMAND_REPL: return "-m chat";
    default: return NULL;
    }
}

void command_describe(const command_info *ci, char *buf, size_t size)
{
    const char *only = command_only_in(ci);
    size_t o = (size_t)snprintf(buf, size, "%s", ci->help);
    if (only && o < size)
        o += (size_t)snprintf(buf + o, size - o, "; only in %s", only);
    const char *p = ci->aliases;
    for (bool first = true; p && *p && o < size; first = false) {
        size_t w = strcspn(p, " ");
        o += (size_t)snprintf(buf + o, size - o, "%s/%.*s", first ? "; also " : ", ", (int)w, p);
        p += w;
        p += strspn(p, " ");
    }
}

bool command_words(const char *arg, char (*w)[COMMAND_WORD_MAX], int max, int *n)
{
    *n = 0;
    for (const char *p = arg; *p;) {
        p += strspn(p, " \t");
        size_t len = strcspn(p, " \t");
        if (!len)
            break;
        if (*n == max || len >= COMMAND_WORD_MAX)
            return false;
        memcpy(w[*n], p, len);
        w[(*n)++][len] = '\0';
        p += len;
    }
    return true;
}
