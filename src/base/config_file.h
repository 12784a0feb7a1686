/* config_file.h — the syntax of llmchat's configuration file, and where it is.
 *
 * A config file holds `key = value` lines; blank lines and lines whose first
 * non-blank character is '#' are ignored; spaces around the key and the value are
 * dropped; a value in double quotes keeps its inner spaces (the quotes go).
 * config_parse turns such text into entries (key, value, line number) and problems
 * (line number, what is wrong) in file order. It knows no keys: what a key means and
 * whether its value is good is decided by the caller (src/app/options.c).
 * Never prints; the caller owns the config_file and frees it with config_free. */
#ifndef LLMCHAT_CONFIG_FILE_H
#define LLMCHAT_CONFIG_FILE_H

#include <stddef.h>

#include "status.h"

/* The largest file config_read accepts: a config file is a few hundred bytes. */
enum { CONFIG_FILE_MAX = 1 << 20 };

typedef struct {
    int line;    /* 1-based line number */
    char *key;   /* NUL-terminated, not empty */
    char *value; /* NUL-terminated, may be empty */
} config_entry;

typedef struct {
    int line;
    char text[128]; /* what is wrong with the line, e.g. "expected 'key = value'" */
} config_problem;

typedef struct {
    config_entry *entries;   /* (n_entries) in file order; a key may repeat (the last wins) */
    int n_entries;
    config_problem *problems; /* (n_problems) in file order */
    int n_problems;
} config_file;

/* Parses len bytes of text (NUL bytes included: such a line is a problem). *out is
 * filled (and must later go to config_free) on LLM_OK; LLM_ERR_NOMEM leaves it empty. */
llm_status config_parse(const char *text, size_t len, config_file *out, llm_err *err);

/* Reads and parses the file at path. LLM_ERR_IO when it cannot be read (errno is
 * kept, so that the caller can tell a missing file, ENOENT, from other failures),
 * LLM_ERR_FORMAT when it is larger than CONFIG_FILE_MAX. */
llm_status config_read(const char *path, config_file *out, llm_err *err);

/* Frees what config_parse put in cf and empties it; an empty cf is fine. */
void config_free(config_file *cf);

/* The default config file: $XDG_CONFIG_HOME/llmchat/config when XDG_CONFIG_HOME is
 * an absolute path, else $HOME/.config/llmchat/config. Writes it to buf and returns
 * buf, or returns NULL when neither variable is usable or the path does not fit. */
const char *config_default_path(char *buf, size_t size);

#endif
