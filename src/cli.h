/* cli.h — the front ends main.c dispatches to. Each returns the process exit status
 * (0 success, 1 runtime failure, 2 usage error) and prints its own messages. */
#ifndef LLMCHAT_CLI_H
#define LLMCHAT_CLI_H

#include "cli_options.h"
#include "model.h"
#include "tokenizer.h"

int cli_generate(const cli_options *o, const model *m, const tokenizer *tok);
int cli_chat(const cli_options *o, const model *m, const tokenizer *tok);
int cli_tokenize(const cli_options *o, const tokenizer *tok);
int cli_perplexity(const cli_options *o, const model *m, const tokenizer *tok);

/* Reads the whole input text of -f FILE (or returns a copy of -i TEXT). The caller
 * frees it. NULL with a message printed on failure. */
char *cli_read_input(const cli_options *o);

/* Set by the SIGINT handler; front ends poll it between tokens. */
extern volatile int cli_interrupted;
void cli_install_sigint(void);

#endif
