/* xdg.h — where llmchat keeps its files, after the XDG Base Directory specification.
 *
 * $XDG_CONFIG_HOME (the config file), $XDG_STATE_HOME (the input history) and
 * $XDG_DATA_HOME (fetched models) count only when they hold an absolute path; else
 * the default below $HOME is used, and $HOME too counts only when it is absolute. Never
 * prints; creates nothing. */
#ifndef LLMCHAT_XDG_H
#define LLMCHAT_XDG_H

#include <stddef.h>

/* Writes $VAR/REST, or $HOME/HOME_DEFAULT/REST when VAR is unset or not absolute, to
 * buf and returns buf; NULL when neither variable is usable or the path does not fit.
 * Example: xdg_path("XDG_CONFIG_HOME", ".config", "llmchat/config", buf, size). */
const char *xdg_path(const char *var, const char *home_default, const char *rest, char *buf,
                     size_t size);

#endif
