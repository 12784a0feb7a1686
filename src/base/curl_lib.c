/* curl_lib.c — libcurl opened on first use and its functions looked up (see curl_lib.h). */
#include "curl_lib.h"

#ifdef HAVE_LIBCURL

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* The directory pkg-config gave for libcurl when configure ran (CURL_LIBDIR), tried
 * after the dynamic linker's own search. */
#ifndef CURL_LIBDIR
#define CURL_LIBDIR ""
#endif

static void *open_library(char *why, size_t why_size)
{
    const char *names[] = {"libcurl.so.4", "libcurl.4.dylib"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
        if (i == 0) {
            const char *e = dlerror();
            snprintf(why, why_size, "%s", e ? e : "not found");
        }
    }
    if (CURL_LIBDIR[0]) {
        char path[4096];
        snprintf(path, sizeof path, "%s/libcurl.so.4", CURL_LIBDIR);
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    return NULL;
}

/* One function of the table, by its name in libcurl. */
#define FIND(field, symbol)                                                                 \
    do {                                                                                    \
        *(void **)&lib.field = dlsym(h, #symbol);                                           \
        if (!lib.field) {                                                                   \
            missing = #symbol;                                                              \
            goto lacking;                                                                   \
        }                                                                                   \
    } while (0)

const curl_lib *curl_lib_open(llm_err *err)
{
    static curl_lib lib;
    static bool tried, ok;
    static char failure[512];
    if (tried) {
        if (!ok)
            llm_fail(err, LLM_ERR_IO, "%s", failure);
        return ok ? &lib : NULL;
    }
    tried = true;
    char why[400] = "";
    void *h = open_library(why, sizeof why);
    if (!h) {
        snprintf(failure, sizeof failure, "libcurl cannot be loaded (%s): install libcurl4 "
                 "(Debian/Ubuntu) or libcurl", why);
        llm_fail(err, LLM_ERR_IO, "%s", failure);
        return NULL;
    }
    const char *missing = NULL;
    FIND(global_init, curl_global_init);
    FIND(easy_init, curl_easy_init);
    FIND(easy_setopt, curl_easy_setopt);
    FIND(easy_getinfo, curl_easy_getinfo);
    FIND(easy_cleanup, curl_easy_cleanup);
    FIND(easy_strerror, curl_easy_strerror);
    FIND(slist_append, curl_slist_append);
    FIND(slist_free_all, curl_slist_free_all);
    FIND(multi_init, curl_multi_init);
    FIND(multi_add_handle, curl_multi_add_handle);
    FIND(multi_remove_handle, curl_multi_remove_handle);
    FIND(multi_perform, curl_multi_perform);
    FIND(multi_poll, curl_multi_poll);
    FIND(multi_info_read, curl_multi_info_read);
    FIND(multi_cleanup, curl_multi_cleanup);
    if (lib.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) { /* kept open: it may hold state */
        snprintf(failure, sizeof failure, "libcurl cannot be set up");
        llm_fail(err, LLM_ERR_IO, "%s", failure);
        return NULL;
    }
    ok = true;
    return &lib;

lacking:
    dlclose(h);
    snprintf(failure, sizeof failure, "the libcurl found lacks %s (libcurl 7.68 or later "
             "is needed)", missing);
    llm_fail(err, LLM_ERR_IO, "%s", failure);
    return NULL;
}

#endif
