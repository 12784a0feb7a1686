/* discover.c — which model llmchat opens, and the sentence that says why.
 *
 * The model comes from, first found: the MODEL argument or --model, LLMCHAT_MODEL,
 * the config file's model key (options_parse records which), then the bundled demo model
 * DATADIR/models/chat260K.bin. DATADIR is $LLMCHAT_DATADIR; else, when the program
 * runs from the build tree it was built in (/proc/self/exe is in the configure-time
 * LLMCHAT_BUILDDIR, so it was not installed), the source tree's data/
 * (LLMCHAT_SRCDATA); else the installed LLMCHAT_DATADIR. A name with no '/' that is not a file is looked up in
 * DATADIR/models.tsv (its name or file column) and opened from llmchat-fetch's
 * directory, so that `llmchat-fetch tinyllama-chat` then `llmchat tinyllama-chat`
 * works. A model that is not there gets a message with the command that fetches one.
 * Owns: the data and fetch directories. Does not: open the model or the tokenizer. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* realpath, readlink */
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "discover.h"
#include "input_file.h"
#include "textfmt.h"
#include "xdg.h"

#ifndef LLMCHAT_DATADIR
#define LLMCHAT_DATADIR "/usr/local/share/llmchat"
#endif

/* What `llmchat-fetch` gets for a user who has only the demo model. */
#define REAL_MODEL "tinyllama-chat"

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The source tree's data/ when this executable lives in the build tree it was built
 * in (an installed copy lives elsewhere, and never looks there), else NULL. */
static const char *build_tree_data(void)
{
#if defined(LLMCHAT_BUILDDIR) && defined(LLMCHAT_SRCDATA)
    char exe[4096], *built = realpath(LLMCHAT_BUILDDIR, NULL);
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    bool inside = false;
    if (built && n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
        inside = !strcmp(exe, built);
    }
    free(built);
    return inside && is_dir(LLMCHAT_SRCDATA) ? LLMCHAT_SRCDATA : NULL;
#else
    return NULL;
#endif
}

const char *discover_data_dir(void)
{
    const char *env = getenv("LLMCHAT_DATADIR");
    if (env && *env)
        return env;
    const char *src = build_tree_data();
    return src ? src : LLMCHAT_DATADIR;
}

const char *discover_fetch_dir(char *buf, size_t size)
{
    return xdg_path("XDG_DATA_HOME", ".local/share", "llmchat/models", buf, size);
}

/* Looks name up in DATADIR/models.tsv (name, file, url, ...: tab-separated, '#'
 * comments, a header line): writes the file column of the row whose name or file
 * is name into file. */
static bool catalog_lookup(const char *name, char *file, size_t size)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/models.tsv", discover_data_dir());
    FILE *f = input_file_fopen(path, NULL);
    if (!f)
        return false;
    char *line = NULL;
    size_t cap = 0;
    bool found = false;
    for (int n = 0; !found && getline(&line, &cap, f) > 0; n++) {
        if (n == 0 || line[0] == '#')
            continue;
        char *tab1 = strchr(line, '\t');
        char *tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL;
        if (!tab2)
            continue;
        *tab1 = *tab2 = '\0';
        const char *col_name = line, *col_file = tab1 + 1;
        if ((!strcmp(col_name, name) || !strcmp(col_file, name)) && strlen(col_file) < size &&
            !strchr(col_file, '/')) {
            snprintf(file, size, "%s", col_file);
            found = true;
        }
    }
    free(line);
    fclose(f);
    return found;
}

/* Where the model in o came from, for messages: "command line", "LLMCHAT_MODEL",
 * "~/.config/llmchat/config:3". */
static const char *source_name(const app_options *o, char *buf, size_t size)
{
    switch (o->model_source) {
    case MODEL_FROM_ENV: return "LLMCHAT_MODEL";
    case MODEL_FROM_CONFIG: {
        char shown[4096];
        options_shown_path(o->config_path ? o->config_path : "config", shown, sizeof shown);
        snprintf(buf, size, "%s:%d", shown, o->model_line);
        return buf;
    }
    case MODEL_FROM_BUNDLED: return "the bundled demo model";
    case MODEL_FROM_RESUMED:
        snprintf(buf, size, "the saved chat %s", o->resume_path ? o->resume_path : "");
        return buf;
    case MODEL_FROM_ARGUMENT:
    case MODEL_FROM_NONE: break;
    }
    return "the command line";
}

int discover_model(app_options *o, char *buf, size_t size)
{
    char src[4200];
    if (!o->model_path) {
        snprintf(buf, size, "%s/models/%s", discover_data_dir(), DISCOVER_BUNDLED_MODEL);
        if (!is_file(buf)) {
            fprintf(stderr,
                    "llmchat: no model given, and the bundled demo model is not at %s\n"
                    "llmchat: (LLMCHAT_DATADIR names another data directory)\n"
                    "llmchat: get a real chat model with: llmchat-fetch %s   then run: llmchat %s\n",
                    buf, REAL_MODEL, REAL_MODEL);
            return 1;
        }
        o->model_path = buf;
        o->model_source = MODEL_FROM_BUNDLED;
        return 0;
    }
    if (is_file(o->model_path))
        return 0;
    const char *from = source_name(o, src, sizeof src);
    char file[256], dir[4096] = "~/.local/share/llmchat/models";
    if (!strchr(o->model_path, '/') && catalog_lookup(o->model_path, file, sizeof file)) {
        if (discover_fetch_dir(dir, sizeof dir)) {
            snprintf(buf, size, "%s/%s", dir, file);
            if (is_file(buf)) {
                o->model_path = buf;
                return 0;
            }
        }
        fprintf(stderr,
                "llmchat: %s (from %s) has not been fetched (no %s/%s)\n"
                "llmchat: fetch it with: llmchat-fetch %s\n",
                o->model_path, from, dir, file, o->model_path);
        return 1;
    }
    struct stat st;
    const char *why = stat(o->model_path, &st) == 0 ? "not a regular file" : strerror(errno);
    fprintf(stderr,
            "llmchat: cannot open the model %s (from %s): %s\n"
            "llmchat: llmchat-fetch --list shows the models it can fetch; a real chat model: "
            "llmchat-fetch %s   then run: llmchat %s\n",
            o->model_path, from, why, REAL_MODEL, REAL_MODEL);
    return 1;
}

void discover_model_note(const app_options *o, const model *m, char *buf, size_t size)
{
    char params[32], src[4200];
    textfmt_count(m->n_params, params, sizeof params);
    if (o->model_source == MODEL_FROM_BUNDLED)
        snprintf(buf, size,
                 "bundled demo model %s, %s parameters: `llmchat-fetch %s` for a real one",
                 m->name, params, REAL_MODEL);
    else if (m->config.arch.name && !model_arch_is_llama(&m->config))
        snprintf(buf, size, "model %s (%s, %s parameters, from %s)", o->model_path,
                 m->config.arch.name, params, source_name(o, src, sizeof src));
    else
        snprintf(buf, size, "model %s (%s parameters, from %s)", o->model_path, params,
                 source_name(o, src, sizeof src));
}
