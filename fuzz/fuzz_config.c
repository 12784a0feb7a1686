/* fuzz_config.c — libFuzzer target: the config file reader (config_parse) on
 * arbitrary bytes. Every line becomes an entry or a problem, in order, with its line
 * number; keys are never empty; keys and values are NUL-terminated strings. */
#include "fuzz.h"

#include <string.h>

#include "config_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    config_file cf;
    llm_err err;
    if (config_parse((const char *)data, size, &cf, &err) != LLM_OK)
        return 0; /* out of memory only */
    size_t lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    int last = 0;
    for (int i = 0; i < cf.n_entries; i++) {
        const config_entry *e = &cf.entries[i];
        FUZZ_CHECK(e->key && *e->key && e->value);
        FUZZ_CHECK(e->line > last && (size_t)e->line <= lines);
        last = e->line;
        FUZZ_CHECK(strlen(e->key) + strlen(e->value) <= size);
    }
    last = 0;
    for (int i = 0; i < cf.n_problems; i++) {
        FUZZ_CHECK(cf.problems[i].line > last && (size_t)cf.problems[i].line <= lines);
        last = cf.problems[i].line;
        FUZZ_CHECK(memchr(cf.problems[i].text, '\0', sizeof cf.problems[i].text) != NULL);
    }
    config_free(&cf);
    return 0;
}
