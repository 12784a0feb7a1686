/* shell_quote.c — single-quoting words for sh (see shell_quote.h). */
#include "shell_quote.h"

#include <string.h>

void shell_quote(char *buf, size_t size, const char *s)
{
    size_t n = strlen(buf);
    if (n + 1 < size)
        buf[n++] = '\'';
    for (; *s && n + 5 < size; s++) {
        if (*s == '\'') {
            memcpy(buf + n, "'\\''", 4);
            n += 4;
        } else {
            buf[n++] = *s;
        }
    }
    if (n + 1 < size)
        buf[n++] = '\'';
    buf[n] = '\0';
}
