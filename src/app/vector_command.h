/* vector_command.h — what /vector does, shared by the REPL and the TUI so that both
 * read its argument by the same rules and say the same thing:
 *
 *   /vector                          list the control vectors in force
 *   /vector load FILE [SCALE]        read a control-vector GGUF (scale default 1); a bare
 *                                    name is also looked for in the vectors directory
 *                                    (vector_files.h)
 *   /vector NAME SCALE               rescale a loaded vector
 *   /vector drop NAME                stop applying it
 *   /vector layers FIRST-LAST | all  the layers vectors apply after (from 0)
 *   /vector make NAME "TEXT A" "TEXT B"
 *       the mean difference of the two texts' residual streams after each layer,
 *       written to the vectors directory's NAME.gguf (a path with a '/': there) and
 *       applied at the scale that makes it VECTOR_MAKE_FRACTION of the residual
 *       stream's norm, on average over the layers
 *
 * Changes the engine's steering (from the next position run on). Writes one line for
 * the user into msg; never prints. */
#ifndef LLMCHAT_VECTOR_COMMAND_H
#define LLMCHAT_VECTOR_COMMAND_H

#include <stddef.h>

#include "engine.h"
#include "status.h"

/* What /vector make's vector is scaled to by default: this fraction of the mean norm of
 * the residual stream after each layer, over the two texts (on chat260K, 0.2 already
 * turns stories into runs of letters; 0.1 changes them and keeps them text). */
#define VECTOR_MAKE_FRACTION 0.1

/* Runs /vector's argument (arg, "" for none) on e. On success msg says what is in
 * force now (after make, first where the vector was written and at what scale it
 * applies; after a load, what it has to say: layers of the vector the model lacks,
 * ignored: steering_notice); on failure err says what is wrong (and nothing changed). */
llm_status vector_command(engine *e, const char *arg, char *msg, size_t size, llm_err *err);

/* The control vectors in force as one line ("control vectors: happy 0.60 (happy.gguf);
 * layers: all" or "no control vectors"). */
void vector_describe(const engine *e, char *msg, size_t size);

#endif
