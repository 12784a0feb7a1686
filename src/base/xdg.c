/* xdg.c — XDG base directories with their $HOME defaults (see xdg.h). */
#include "xdg.h"

#include <stdio.h>
#include <stdlib.h>

const char *xdg_path(const char *var, const char *home_default, const char *rest, char *buf,
                     size_t size)
{
    const char *dir = getenv(var);
    const char *home = getenv("HOME");
    int n;
    if (dir && *dir == '/')
        n = snprintf(buf, size, "%s/%s", dir, rest);
    else if (home && *home == '/') /* a relative HOME would put files below the current directory */
        n = snprintf(buf, size, "%s/%s/%s", home, home_default, rest);
    else
        return NULL;
    return n >= 0 && (size_t)n < size ? buf : NULL;
}
