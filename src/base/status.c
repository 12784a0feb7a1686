/* status.c — status names, error formatting and number formatting for messages. */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>

const char *llm_status_name(llm_status s)
{
    switch (s) {
    case LLM_OK: return "ok";
    case LLM_ERR_IO: return "I/O error";
    case LLM_ERR_FORMAT: return "format error";
    case LLM_ERR_MISMATCH: return "mismatch";
    case LLM_ERR_NOMEM: return "out of memory";
    case LLM_ERR_ARG: return "invalid argument";
    case LLM_ERR_CONTEXT: return "context full";
    case LLM_ERR_NUMERIC: return "numeric error";
    case LLM_ERR_STOPPED: return "stopped";
    }
    return "unknown error";
}

llm_status llm_fail(llm_err *err, llm_status s, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->text, sizeof err->text, fmt, ap);
        va_end(ap);
    }
    return s;
}

const char *llm_group_digits_u64(char *buf, size_t size, unsigned long long n)
{
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%llu", n);
    size_t o = 0;
    for (int i = 0; i < len && o + 1 < size; i++) {
        buf[o++] = digits[i];
        int left = len - 1 - i;
        if (left > 0 && left % 3 == 0 && o + 1 < size)
            buf[o++] = ',';
    }
    if (size > 0)
        buf[o < size ? o : size - 1] = '\0';
    return buf;
}

const char *llm_group_digits(char *buf, size_t size, long long n)
{
    if (n >= 0 || size < 2)
        return llm_group_digits_u64(buf, size, n >= 0 ? (unsigned long long)n : 0);
    buf[0] = '-';
    llm_group_digits_u64(buf + 1, size - 1, 0ULL - (unsigned long long)n);
    return buf;
}
