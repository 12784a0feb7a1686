/* curl_lib.h — libcurl, opened the first time a request needs it (dlopen), its
 * functions reached through one table.
 *
 * Linked in, libcurl and the thirty libraries it brings (TLS, Kerberos, LDAP, ...) are
 * loaded and relocated at every start of every program, served model or not: 13 ms of
 * a 20 ms `llmchat --version` (docs/remote.md). Opened here, only a run that talks
 * to a server pays for them. The headers are the ones configure found; the library is
 * the system's (soname libcurl.so.4, the same ABI since libcurl 7.16), looked for as
 * the dynamic linker looks (LD_LIBRARY_PATH included), then in the directory pkg-config
 * named at configure time. Built without libcurl, nothing here exists. */
#ifndef LLMCHAT_CURL_LIB_H
#define LLMCHAT_CURL_LIB_H

#include "config.h"

#ifdef HAVE_LIBCURL
#include <curl/curl.h>

#include "status.h"

typedef struct {
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *curl, CURLoption option, ...);
    CURLcode (*easy_getinfo)(CURL *curl, CURLINFO info, ...);
    void (*easy_cleanup)(CURL *curl);
    const char *(*easy_strerror)(CURLcode rc);
    struct curl_slist *(*slist_append)(struct curl_slist *list, const char *s);
    void (*slist_free_all)(struct curl_slist *list);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_add_handle)(CURLM *multi, CURL *curl);
    CURLMcode (*multi_remove_handle)(CURLM *multi, CURL *curl);
    CURLMcode (*multi_perform)(CURLM *multi, int *running);
    CURLMcode (*multi_poll)(CURLM *multi, struct curl_waitfd *extra, unsigned int n_extra,
                            int timeout_ms, int *ret);
    CURLMsg *(*multi_info_read)(CURLM *multi, int *left);
    CURLMcode (*multi_cleanup)(CURLM *multi);
} curl_lib;

/* The table, with curl_global_init done, or NULL with err set: libcurl is not
 * installed (its name, and the package to install), lacks a function, or cannot be set
 * up. Opened once; later calls return the first outcome. Not thread-safe: the first
 * call comes from the thread that makes requests. */
const curl_lib *curl_lib_open(llm_err *err);

#endif
#endif
