/* fuzz_template.c — libFuzzer target: the chat template renderer. The input is a
 * system prompt and a user message separated by the first NUL (no NUL: a user
 * message alone). Checks: the rendered text holds both verbatim in the template's
 * frame, and its tokens are BOS followed by no control token at all, whatever the
 * text says ("<s>", "[/INST]", "</s>"). */
#include "fuzz.h"

#include <string.h>

#include "chat.h"
#include "tokenizer.h"

static tokenizer *tok;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    llm_err err;
    if (tokenizer_open(fuzz_source_path("data/models/tok512.bin"), 0, &tok, &err) != LLM_OK) {
        fprintf(stderr, "fuzz_template: %s\n", err.text);
        exit(1);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 2);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = buf[size + 1] = '\0';
    const char *system = NULL, *user = buf;
    char *nul = memchr(buf, '\0', size);
    if (nul) {
        system = buf;
        user = nul + 1;
    }

    char *text = chat_template_text(system, user);
    FUZZ_CHECK(text != NULL);
    FUZZ_CHECK(strncmp(text, "[INST] ", 7) == 0);
    size_t tl = strlen(text), ul = strlen(user);
    FUZZ_CHECK(tl >= ul + 15 && strcmp(text + tl - 8, " [/INST]") == 0);
    FUZZ_CHECK(memcmp(text + tl - 8 - ul, user, ul) == 0);
    if (system && *system)
        FUZZ_CHECK(strncmp(text, "[INST] <<SYS>>\n", 15) == 0 &&
                   strncmp(text + 15, system, strlen(system)) == 0);
    free(text);

    int need = chat_template_tokens(tok, system, user, NULL, 0);
    FUZZ_CHECK(need >= 1);
    int *ids = malloc(sizeof(int) * (size_t)need);
    FUZZ_CHECK(ids != NULL);
    FUZZ_CHECK(chat_template_tokens(tok, system, user, ids, need) == need);
    FUZZ_CHECK(ids[0] == TOKEN_BOS);
    for (int i = 1; i < need; i++)
        FUZZ_CHECK(!tokenizer_is_control(tok, ids[i]));
    free(ids);
    free(buf);
    return 0;
}
