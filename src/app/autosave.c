/* autosave.c — saved chats for the REPL and the TUI (see autosave.h).
 *
 * Owns the session's autosave path. Reading and writing the files is chatfile.c's,
 * putting a dialog into a chat chat.c's; this file adds the places (the chats
 * directory, the session's file name, the list of recent chats) and what only the
 * front end knows (the tokenizer's path, absolute paths). Prints nothing. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* realpath, localtime_r */
#endif
#include "autosave.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "intervention_json.h"
#include "session.h"
#include "steering.h"
#include "trace.h"

/* The nanoseconds of a file's last change (macOS names the field its own way). */
#ifdef __APPLE__
#define MTIME_NS(st) ((long)(st).st_mtimespec.tv_nsec)
#else
#define MTIME_NS(st) ((long)(st).st_mtim.tv_nsec)
#endif

/* The chats directory with a trailing slash (created when missing), malloc'd; NULL
 * when neither XDG_STATE_HOME nor HOME is usable. */
static char *chats_dir(void)
{
    return session_state_file("chats/");
}

/* A copy of path made absolute when it exists (so a resumed chat finds its model from
 * any directory), else of path as given. */
static char *absolute(const char *path)
{
    if (!path)
        return NULL;
    char *real = realpath(path, NULL);
    return real ? real : strdup(path);
}

/* *in's control-vector files by their absolute places (*in replaced; NULL stays NULL).
 * False on no memory. */
static bool absolute_vectors(intervention **in)
{
    if (!*in || (*in)->n_vectors == 0)
        return true;
    int n = (*in)->n_vectors;
    char **paths = calloc((size_t)n, sizeof *paths);
    bool ok = paths != NULL;
    for (int i = 0; ok && i < n; i++)
        ok = (paths[i] = absolute((*in)->vectors[i].path)) != NULL;
    intervention *copy = ok ? intervention_copy(*in, (const char *const *)paths) : NULL;
    for (int i = 0; paths && i < n; i++)
        free(paths[i]);
    free(paths);
    if (!copy)
        return false;
    free(*in);
    *in = copy;
    return true;
}

/* cf's control-vector files (those in force at the save and those turns ran with) by
 * their absolute places, as its model's: the chat may be resumed from another
 * directory. False on no memory. */
static bool absolute_steering(chatfile *cf)
{
    bool ok = absolute_vectors(&cf->steer);
    for (int i = 0; ok && i < cf->n_turns; i++)
        for (int b = -1; ok && b < cf->turns[i].n_branches; b++) {
            ran_with *ran = b < 0 ? &cf->turns[i].ran : &cf->turns[i].branches[b].ran;
            for (int k = 0; ok && k < ran->n; k++)
                ok = absolute_vectors(&ran->seg[k].in);
        }
    return ok;
}

llm_status autosave_chat_to_file(const session *s, bool all, chatfile *cf, llm_err *err)
{
    const chat *c = s->c;
    const app_options *o = s->o;
    llm_status st = chat_to_file(c, cf, err);
    if (st == LLM_OK && all && (st = chat_branches_to_file(c, cf, err)) != LLM_OK)
        chatfile_clear(cf);
    if (st != LLM_OK)
        return st;
    char *model_path = absolute(cf->model);
    char *tok_path = absolute(o->tokenizer_path);
    if ((cf->model && !model_path) || (o->tokenizer_path && !tok_path)) {
        free(model_path);
        free(tok_path);
        chatfile_clear(cf);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    }
    free(cf->model);
    cf->model = model_path;
    free(cf->tokenizer);
    cf->tokenizer = tok_path;
    cf->steps = s->steps;
    if (!absolute_steering(cf)) {
        chatfile_clear(cf);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    }
    return LLM_OK;
}

llm_status autosave_save_chat(const session *s, const char *path, bool all, llm_err *err)
{
    chatfile cf;
    llm_status st = autosave_chat_to_file(s, all, &cf, err);
    if (st == LLM_OK)
        st = chatfile_write(&cf, path, err);
    chatfile_clear(&cf);
    return st;
}

const char *autosave_save_args(const char *arg, bool *all)
{
    *all = !strncmp(arg, "--all", 5) && (arg[5] == '\0' || arg[5] == ' ' || arg[5] == '\t');
    if (*all)
        for (arg += 5; *arg == ' ' || *arg == '\t'; arg++)
            ;
    return arg;
}

/* ---- the session's autosave file ---- */

static char *new_session_path(void)
{
    char *dir = chats_dir();
    if (!dir)
        return NULL;
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    size_t n = strlen(dir) + 64;
    char *path = malloc(n);
    /* a session that moves on to a new file within the second it started takes the
     * next number (20250101-120000-1234-2.json) */
    for (int k = 1; path && k < 1000; k++) {
        if (k == 1)
            snprintf(path, n, "%s%s-%ld.json", dir, stamp, (long)getpid());
        else
            snprintf(path, n, "%s%s-%ld-%d.json", dir, stamp, (long)getpid(), k);
        if (access(path, F_OK) != 0)
            break;
    }
    free(dir);
    return path;
}

void autosave_init(autosave_file *a, const app_options *o, bool interactive)
{
    a->never = o->autosave == AUTOSAVE_NEVER;
    a->off = a->never || (o->autosave == AUTOSAVE_INTERACTIVE && !interactive);
    a->keep = o->keep_chats;
}

/* Is name an autosave's (20250101-120000-1234.json, or -1234-2.json for a session's
 * second file)? Files put there by hand stay. */
static bool autosave_name(const char *name)
{
    unsigned date, time_of_day, pid, k;
    char end[8];
    if (sscanf(name, "%8u-%6u-%u%7s", &date, &time_of_day, &pid, end) == 4 && !strcmp(end, ".json"))
        return true;
    return sscanf(name, "%8u-%6u-%u-%u%7s", &date, &time_of_day, &pid, &k, end) == 5 &&
           !strcmp(end, ".json");
}

typedef struct {
    char *path;
    time_t when;
    long when_ns; /* the nanoseconds of when: saves within one second are told apart */
} dir_entry;

static dir_entry *list_files(int *n);

/* Does the session that named the autosave file `name` still run (its process id,
 * the name's last number)? A process of another user counts too. */
static bool session_alive(const char *name)
{
    unsigned date, time_of_day, pid;
    if (sscanf(name, "%8u-%6u-%u", &date, &time_of_day, &pid) != 3 || pid == 0 ||
        pid == (unsigned)getpid())
        return false;
    return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

/* Removes the autosaved chats beyond the newest keep, never current, spare (NULL:
 * none) nor a running session's (0: keeps all). */
static void prune(int keep, const char *current, const char *spare)
{
    int n, kept = 0;
    dir_entry *list = keep > 0 ? list_files(&n) : NULL;
    if (!list)
        return;
    for (int i = 0; i < n; i++) {
        const char *slash = strrchr(list[i].path, '/');
        const char *name = slash ? slash + 1 : list[i].path;
        if (!autosave_name(name) || !strcmp(list[i].path, current) ||
            (spare && !strcmp(list[i].path, spare)))
            continue;
        if (++kept >= keep && !session_alive(name)) /* this session's file is one of the keep */
            unlink(list[i].path);
    }
    for (int i = 0; i < n; i++)
        free(list[i].path);
    free(list);
}


/* path's identity and last change as read now into *st; false when it is gone. */
static bool look(const char *path, struct stat *st)
{
    return path && stat(path, st) == 0;
}

/* Has the file changed since *was (another process wrote it: a rename puts a new
 * file in its place, an edit changes its size or time)? */
static bool changed(const struct stat *was, const struct stat *now)
{
    return was->st_dev != now->st_dev || was->st_ino != now->st_ino ||
           was->st_size != now->st_size || was->st_mtime != now->st_mtime ||
           MTIME_NS(*was) != MTIME_NS(*now);
}

bool autosave_write(autosave_file *a, const chatfile *cf, char *msg, size_t size)
{
    if (size)
        msg[0] = '\0';
    if (a->off || (!a->path && cf->n_turns == 0))
        return true;
    llm_err err;
    llm_status st;
    struct stat now;
    char *left = NULL; /* the file another session changed, left as it is */
    if (a->path && a->have_known && look(a->path, &now) && changed(&a->known, &now)) {
        left = a->path;
        a->path = NULL;
    }
    bool fresh = !a->path;
    if (!a->path)
        a->path = new_session_path();
    int dir_errno = a->path ? session_make_parents(a->path) : 0;
    if (!a->path)
        st = llm_fail(&err, LLM_ERR_IO, "neither XDG_STATE_HOME nor HOME names a directory");
    else if (dir_errno)
        st = llm_fail(&err, LLM_ERR_IO, "cannot make the directory of %s: %s", a->path,
                      strerror(dir_errno));
    else
        st = chatfile_write(cf, a->path, &err);
    a->have_known = st == LLM_OK && look(a->path, &a->known);
    if (st == LLM_OK && fresh) /* the file left (for another session, or by /reset) stays too */
        prune(a->keep, a->path, left ? left : a->left);
    if (st == LLM_OK && left && size)
        snprintf(msg, size, "%s changed since this session saved or read it (another llmchat "
                 "saved to it?): it stays as it is, and this chat goes on in %s", left, a->path);
    free(left);
    if (st == LLM_OK)
        return true;
    if (!a->warned && size)
        snprintf(msg, size, "cannot autosave the chat (%s); it goes on, but unsaved: /save FILE "
                 "saves it elsewhere", err.text);
    a->warned = true;
    return false;
}

bool autosave_now(session *s, char *msg, size_t size)
{
    trace_flush(s->trace); /* the trace's records so far to its file, autosave or not */
    autosave_file *a = &s->save;
    if (size)
        msg[0] = '\0';
    if (a->off || !s->c || (!a->path && chat_turn_count(s->c) + chat_dropped_count(s->c) == 0))
        return true;
    chatfile cf;
    llm_err err;
    if (autosave_chat_to_file(s, true, &cf, &err) != LLM_OK) {
        if (!a->warned && size)
            snprintf(msg, size, "cannot autosave the chat (%s); it goes on, but unsaved: "
                     "/save FILE saves it elsewhere", err.text);
        a->warned = true;
        return false;
    }
    bool saved = autosave_write(a, &cf, msg, size);
    chatfile_clear(&cf);
    return saved;
}

void autosave_use(autosave_file *a, const char *path)
{
    char *copy = absolute(path);
    if (!copy)
        return;
    free(a->path);
    a->path = copy;
    a->off = a->never;
    a->have_known = look(a->path, &a->known); /* as it was read */
}

void autosave_start_over(autosave_file *a)
{
    if (a->path) {
        free(a->left);
        a->left = a->path;
    }
    a->path = NULL;
    a->have_known = false;
}

void autosave_free(autosave_file *a)
{
    free(a->path);
    free(a->left);
    a->path = a->left = NULL;
}

/* ---- loading ---- */

/* Same file, by identity when both exist, else by name. */
static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    return strcmp(a, b) == 0;
}

/* "heads out L5H5 | vectors happy 2.00" as the TUI shows them, or "none". */
static void steering_said(const intervention *in, char *buf, size_t size)
{
    if (intervention_is_empty(in) || steering_format(in, buf, size) <= 0)
        snprintf(buf, size, "none");
}

/* The interventions of the chat being loaded (chatfile.h): set before its context is
 * read again, unless keep (the command line gave this session its own); what changed
 * or could not be set goes to said ("" when nothing). True when they were set: *before
 * is then the state to go back to if the chat cannot be restored. */
static bool load_steering(engine *e, const chatfile *cf, bool keep, const intervention **before,
                          bool *apart, char *said, size_t size)
{
    const intervention *now = engine_intervention(e);
    char text[400], was[400];
    said[0] = '\0';
    *before = now;
    *apart = false;
    if (intervention_same(now, cf->steer))
        return false;
    *apart = true; /* until they are set */
    steering_said(cf->steer, text, sizeof text);
    steering_said(now, was, sizeof was);
    if (keep) {
        snprintf(said, size, "saved with the interventions %s; this session keeps its own: %s",
                 text, was);
        return false;
    }
    steering *s = engine_steering(e);
    char warning[300];
    llm_err why;
    llm_status st = steering_check(s, cf->steer, warning, sizeof warning, &why);
    if (st == LLM_OK && (st = steering_set(s, cf->steer, &why)) != LLM_OK) {
        llm_err ignored; /* a part set before a later part failed: back as it was */
        steering_set(s, now, &ignored);
    }
    if (st != LLM_OK) {
        snprintf(said, size, "its interventions (%s) were not set again, it is read back with "
                 "this session's (%s): %s", text, was, why.text);
        return false;
    }
    snprintf(said, size, "interventions as saved: %s (were: %s)%s%s", text, was,
             *warning ? "; " : "", warning);
    *apart = false;
    return true;
}

llm_status autosave_load_chat(chat *c, engine *e, const char *path, bool keep_steering,
                              live_settings *settings, bool *apart, char *notice, size_t size,
                              llm_err *err)
{
    if (size)
        notice[0] = '\0';
    chatfile cf;
    llm_status st = chatfile_read(path, &cf, err);
    if (st != LLM_OK)
        return st;
    const intervention *before;
    char steer_said[1500];
    bool set = load_steering(e, &cf, keep_steering, &before, apart, steer_said,
                             sizeof steer_said);
    for (int i = 0; *apart && i < cf.n_turns; i++) { /* read with this session's throughout */
        ran_with_clear(&cf.turns[i].ran);
        for (int b = 0; b < cf.turns[i].n_branches; b++)
            ran_with_clear(&cf.turns[i].branches[b].ran);
    }
    st = chat_restore(c, &cf, err);
    if (st != LLM_OK && set) { /* as it was before the load */
        llm_err ignored;
        steering_set(engine_steering(e), before, &ignored);
    }
    if (st == LLM_OK) {
        if (settings)
            chatfile_settings_onto(&cf, settings, 0);
        const char *current = engine_model(e)->path;
        const char *dropped = chat_take_notice(c);
        size_t o = 0;
        if (cf.model && !same_file(cf.model, current) && size)
            o = (size_t)snprintf(notice, size, "saved with %s; it goes on with %s", cf.model, current);
        else if (cf.server && size)
            o = (size_t)snprintf(notice, size, "saved with %s at %s; it goes on with %s",
                                 cf.server_model ? cf.server_model : "a served model", cf.server,
                                 current);
        if (dropped && o < size)
            o += (size_t)snprintf(notice + o, size - o, "%s%s", o ? "; " : "", dropped);
        if (*steer_said && o < size)
            snprintf(notice + o, size - o, "%s%s", o ? "; " : "", steer_said);
    }
    chatfile_clear(&cf);
    return st;
}

/* ---- the list of saved chats ---- */

static int newest_first(const void *a, const void *b)
{
    const dir_entry *x = a, *y = b;
    if (x->when != y->when)
        return x->when < y->when ? 1 : -1;
    if (x->when_ns != y->when_ns)
        return x->when_ns < y->when_ns ? 1 : -1;
    return strcmp(y->path, x->path); /* the same time: the later name first */
}

/* Every *.json file of the chats directory, newest first; *n receives the count. */
static dir_entry *list_files(int *n)
{
    *n = 0;
    char *dir = chats_dir();
    DIR *d = dir ? opendir(dir) : NULL;
    if (!d) {
        free(dir);
        return NULL;
    }
    dir_entry *list = NULL;
    int cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (de->d_name[0] == '.' || len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
            continue;
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s%s", dir, de->d_name) >= (int)sizeof path)
            continue;
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            dir_entry *grown = realloc(list, sizeof *grown * (size_t)cap);
            if (!grown)
                break;
            list = grown;
        }
        list[*n].path = strdup(path);
        list[*n].when = st.st_mtime;
        list[*n].when_ns = MTIME_NS(st);
        if (list[*n].path)
            (*n)++;
    }
    closedir(d);
    free(dir);
    if (*n > 1)
        qsort(list, (size_t)*n, sizeof *list, newest_first);
    return list;
}

/* autosave_recent, and why the newest file that does not read is passed over into
 * unread ("" when none was; size 0: not wanted). */
static int recent(saved_chat *out, int max, const char *skip, char *unread, size_t unread_size)
{
    int n, got = 0;
    if (unread_size)
        unread[0] = '\0';
    dir_entry *list = list_files(&n);
    for (int i = 0; i < n && got < max; i++) {
        chatfile cf;
        llm_err err;
        if (skip && same_file(list[i].path, skip))
            continue;
        if (chatfile_read(list[i].path, &cf, &err) != LLM_OK) {
            if (unread_size && !unread[0])
                snprintf(unread, unread_size, "%s", err.text);
            continue;
        }
        saved_chat *s = &out[got++];
        snprintf(s->path, sizeof s->path, "%s", list[i].path);
        s->when = list[i].when;
        s->n_turns = cf.n_turns;
        s->first[0] = '\0';
        if (cf.n_turns > 0) {
            /* cut at a character boundary, on one line */
            const char *u = cf.turns[0].user;
            size_t k = 0;
            while (u[k] && k < sizeof s->first - 1) {
                size_t len = 1;
                while (len < 4 && ((unsigned char)u[k + len] & 0xC0) == 0x80)
                    len++;
                if (k + len > sizeof s->first - 1)
                    break;
                for (size_t j = 0; j < len; j++)
                    s->first[k + j] = (u[k + j] == '\n' || u[k + j] == '\t') ? ' ' : u[k + j];
                k += len;
            }
            s->first[k] = '\0';
        }
        chatfile_clear(&cf);
    }
    for (int i = 0; i < n; i++)
        free(list[i].path);
    free(list);
    return got;
}

int autosave_recent(saved_chat *out, int max, const char *skip)
{
    return recent(out, max, skip, NULL, 0);
}

bool autosave_latest(char *buf, size_t size, char *skipped, size_t skipped_size)
{
    saved_chat latest;
    if (recent(&latest, 1, NULL, skipped, skipped_size) != 1)
        return false;
    snprintf(buf, size, "%s", latest.path);
    return true;
}
