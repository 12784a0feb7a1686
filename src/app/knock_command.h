/* knock_command.h — what /knock does, shared by the REPL and the TUI so that both read
 * its argument by the same rules and say the same thing:
 *
 *   /knock                                  list the heads and experts knocked out
 *   /knock head LAYER:HEAD                  zero that head's attention output
 *   /knock head LAYER:HEAD reset            a Gated DeltaNet head: its output zeroed and
 *                                           its state emptied while it is out
 *   /knock expert LAYER:EXPERT              the router never chooses that expert (a
 *                                           mixture of experts; the others renormalised)
 *   /knock restore head|expert LAYER:N      put it back in
 *
 * Layers, heads and experts are numbered from 0, as --knock-out and
 * --knock-out-expert number them. Changes the engine's steering (from the next
 * position run on). Writes one line for the user into msg; never prints. */
#ifndef LLMCHAT_KNOCK_COMMAND_H
#define LLMCHAT_KNOCK_COMMAND_H

#include <stddef.h>

#include "engine.h"
#include "status.h"

/* Runs /knock's argument (arg, "" for none) on e. On success msg says what is out now;
 * on failure err says what is wrong (and nothing changed). */
llm_status knock_command(engine *e, const char *arg, char *msg, size_t size, llm_err *err);

/* The heads and experts knocked out as one line ("knocked out: heads 1:2; experts 0:3
 * 1:5 (LAYER:N, from 0)" or "nothing is knocked out"). */
void knock_describe(const engine *e, char *msg, size_t size);

#endif
