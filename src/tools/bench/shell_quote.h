/* shell_quote.h — the command lines llmchat-bench hands to sh (popen) for the programs it
 * runs beside itself: llama.cpp's llama-bench, the TUI timing script. */
#ifndef LLMCHAT_TOOLS_SHELL_QUOTE_H
#define LLMCHAT_TOOLS_SHELL_QUOTE_H

#include <stddef.h>

/* Appends s to the string in buf (size bytes) single-quoted for sh ('it'\''s'); what
 * does not fit is left off, buf stays NUL-terminated. */
void shell_quote(char *buf, size_t size, const char *s);

#endif
