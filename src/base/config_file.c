/* config_file.c — reads `key = value` config files into entries and problems with
 * their line numbers (see config_file.h). Owns the syntax only: which keys exist
 * and what their values mean is the option table's business (src/app/options.c). */
#include "config_file.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input_file.h"
#include "xdg.h"

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static bool is_key_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_' || c == '.';
}

/* Trims blanks from both ends of [*s, *e). */
static void trim(const char **s, const char **e)
{
    while (*s < *e && is_blank(**s))
        (*s)++;
    while (*e > *s && is_blank((*e)[-1]))
        (*e)--;
}

static char *copy_range(const char *s, const char *e)
{
    size_t n = (size_t)(e - s);
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

static bool add_problem(config_file *cf, int *cap, int line, const char *text)
{
    if (cf->n_problems == *cap) {
        int n = *cap ? *cap * 2 : 8;
        config_problem *p = realloc(cf->problems, sizeof *p * (size_t)n);
        if (!p)
            return false;
        cf->problems = p;
        *cap = n;
    }
    config_problem *p = &cf->problems[cf->n_problems++];
    p->line = line;
    snprintf(p->text, sizeof p->text, "%s", text);
    return true;
}

static bool add_entry(config_file *cf, int *cap, int line, const char *ks, const char *ke,
                      const char *vs, const char *ve)
{
    if (cf->n_entries == *cap) {
        int n = *cap ? *cap * 2 : 16;
        config_entry *p = realloc(cf->entries, sizeof *p * (size_t)n);
        if (!p)
            return false;
        cf->entries = p;
        *cap = n;
    }
    char *key = copy_range(ks, ke), *value = copy_range(vs, ve);
    if (!key || !value) {
        free(key);
        free(value);
        return false;
    }
    config_entry *en = &cf->entries[cf->n_entries++];
    en->line = line;
    en->key = key;
    en->value = value;
    return true;
}

/* One line [s, e) without its newline: an entry, a problem, or nothing. */
static bool parse_line(config_file *cf, int *cap_e, int *cap_p, int line, const char *s,
                       const char *e)
{
    if (memchr(s, '\0', (size_t)(e - s)))
        return add_problem(cf, cap_p, line, "the line holds a NUL byte");
    trim(&s, &e);
    if (s == e || *s == '#')
        return true;
    const char *eq = memchr(s, '=', (size_t)(e - s));
    if (!eq)
        return add_problem(cf, cap_p, line, "expected 'key = value'");
    const char *ks = s, *ke = eq, *vs = eq + 1, *ve = e;
    trim(&ks, &ke);
    trim(&vs, &ve);
    if (ks == ke)
        return add_problem(cf, cap_p, line, "no key before '='");
    for (const char *k = ks; k < ke; k++)
        if (!is_key_char(*k))
            return add_problem(cf, cap_p, line,
                               "a key is made of letters, digits and '-' (expected 'key = value')");
    if (ve - vs >= 2 && *vs == '"' && ve[-1] == '"') {
        vs++;
        ve--;
    }
    return add_entry(cf, cap_e, line, ks, ke, vs, ve);
}

llm_status config_parse(const char *text, size_t len, config_file *out, llm_err *err)
{
    memset(out, 0, sizeof *out);
    int cap_e = 0, cap_p = 0, line = 0;
    const char *p = text, *end = text + len;
    if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) /* a byte order mark some editors write */
        p += 3;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        if (line == 0x7fffffff)
            break; /* more lines than an int counts: unreachable below CONFIG_FILE_MAX */
        line++;
        if (!parse_line(out, &cap_e, &cap_p, line, p, le)) {
            config_free(out);
            return llm_fail(err, LLM_ERR_NOMEM, "out of memory reading the config file");
        }
        p = nl ? nl + 1 : end;
    }
    return LLM_OK;
}

llm_status config_read(const char *path, config_file *out, llm_err *err)
{
    memset(out, 0, sizeof *out);
    const char *why;
    FILE *f = input_file_fopen(path, &why);
    if (!f) {
        int open_errno = errno;
        llm_fail(err, LLM_ERR_IO, "cannot read %s: %s", path, why);
        errno = open_errno;
        return LLM_ERR_IO;
    }
    char *buf = malloc(CONFIG_FILE_MAX + 1);
    if (!buf) {
        fclose(f);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory reading %s", path);
    }
    size_t n = fread(buf, 1, CONFIG_FILE_MAX + 1, f);
    int read_errno = ferror(f) ? errno : 0;
    fclose(f);
    llm_status s;
    if (read_errno) {
        s = llm_fail(err, LLM_ERR_IO, "cannot read %s: %s", path, strerror(read_errno));
        errno = read_errno;
    } else if (n > CONFIG_FILE_MAX) {
        s = llm_fail(err, LLM_ERR_FORMAT, "%s is larger than %d bytes: not a config file", path,
                     CONFIG_FILE_MAX);
    } else {
        s = config_parse(buf, n, out, err);
    }
    free(buf);
    return s;
}

void config_free(config_file *cf)
{
    for (int i = 0; i < cf->n_entries; i++) {
        free(cf->entries[i].key);
        free(cf->entries[i].value);
    }
    free(cf->entries);
    free(cf->problems);
    memset(cf, 0, sizeof *cf);
}

const char *config_default_path(char *buf, size_t size)
{
    return xdg_path("XDG_CONFIG_HOME", ".config", "llmchat/config", buf, size);
}
