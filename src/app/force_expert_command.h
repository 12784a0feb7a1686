/* force_expert_command.h — what /force_expert does, shared by the REPL and the TUI so
 * that both read its argument by the same rules and say the same thing:
 *
 *   /force_expert                    list the experts forced
 *   /force_expert LAYER:EXPERT       the router chooses that expert first at that layer for
 *                                    every token (a mixture of experts; one a layer: it
 *                                    replaces the one forced there before)
 *   /force_expert off [LAYER]        stop forcing (at LAYER, else at every layer)
 *
 * Layers and experts are numbered from 0, as --force-expert numbers them. Changes the
 * engine's steering (from the next position run on). Writes one line for the user into
 * msg; never prints. */
#ifndef LLMCHAT_FORCE_EXPERT_COMMAND_H
#define LLMCHAT_FORCE_EXPERT_COMMAND_H

#include <stddef.h>

#include "engine.h"
#include "status.h"

/* Runs /force_expert's argument (arg, "" for none) on e. On success msg says what is forced
 * now (and which expert a new one replaced); on failure err says what is wrong (and
 * nothing changed). */
llm_status force_expert_command(engine *e, const char *arg, char *msg, size_t size,
                                llm_err *err);

/* The experts forced as one line ("forced (LAYER:EXPERT, from 0): 0:3 1:5" or "no
 * expert is forced ..."). */
void force_expert_describe(const engine *e, char *msg, size_t size);

#endif
