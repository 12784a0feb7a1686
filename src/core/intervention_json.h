/* intervention_json.h — an intervention (intervention.h) as the JSON object traces (a
 * record's "steer") and saved chats ("steer") write it:
 *
 *   {"vectors":[{"name":..,"path":..,"scale":..,"fnv1a64":"16 hex digits"}, ...],
 *    "layers":[first,last] | null, "heads_out":[[layer,head], ...]}
 *
 * and, only when there are some, "heads_reset":[[layer,head], ...] (those of heads_out
 * whose state is reset), "experts_out":[[layer,expert], ...] and
 * "experts_forced":[[layer,expert], ...] before the closing brace (layers, heads and
 * experts from 0; "fnv1a64" only when the file's checksum is known). Reading needs no
 * model: a head is kept as [layer, head] with the row width given, so that it comes back
 * whole on any model (steering_set checks it against the one it is set on). */
#ifndef LLMCHAT_INTERVENTION_JSON_H
#define LLMCHAT_INTERVENTION_JSON_H

#include <stdbool.h>
#include <stdio.h>

#include "intervention.h"
#include "json.h"

/* Writes in as the object above. */
void intervention_write_json(FILE *f, const intervention *in);

/* Reads the object v for a model of n_layers layers of n_heads heads a layer (0: not
 * known; any layer or head below 4096 is taken then). Returns one malloc'd block (the
 * intervention, its arrays and strings) the caller frees with free(), or NULL: *nomem
 * true when memory ran out, else v is not such an object. */
intervention *intervention_read_json(const json_value *v, int n_layers, int n_heads, bool *nomem);

/* Whether in changes nothing (NULL, or no vector, head or expert). */
bool intervention_is_empty(const intervention *in);

/* Whether a and b change the pass the same way: the same JSON above (NULL and every
 * empty one alike; heads compared as [layer, head], whatever row width each holds).
 * False when memory runs out for the comparison. */
bool intervention_same(const intervention *a, const intervention *b);

/* A copy of in as one malloc'd block (free() frees it), or NULL on no memory; with
 * paths (in->n_vectors of them), the vectors' files are those. */
intervention *intervention_copy(const intervention *in, const char *const *paths);

#endif
