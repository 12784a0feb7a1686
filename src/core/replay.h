/* replay.h — runs a model over a trace's token sequence (--replay) and compares what
 * it predicts with what the trace recorded (--compare).
 *
 * Every position of the sequence is run in order: prompt tokens as prompt, forced
 * tokens forced, and a sampled token is decided again by the engine's sampler with
 * the trace's settings and the trace's uniform draw, so that the same model and
 * options choose the same token. When the new choice differs, the trace's token is
 * forced instead, so that every later position is compared on the same text. After
 * each position, its top-1 and the KL divergence between the trace's distribution
 * and the new one are computed. Borrows the engine; no printing. */
#ifndef LLMCHAT_REPLAY_H
#define LLMCHAT_REPLAY_H

#include <stdbool.h>

#include "engine.h"
#include "status.h"
#include "step.h"

/* What replaying one position gave. */
typedef struct {
    int pos;
    int token;              /* the trace's token at pos */
    step_phase phase;       /* how the trace got it */
    bool redecided;         /* the trace sampled it, and the sampler decided again */
    bool unsampled;         /* the trace says it was sampled, but the record before has
                               no sampler: it ran as forced, unchecked */
    int new_choice;         /* what the sampler chose (when redecided) */
    bool compared;          /* the trace has pos's top candidates: the fields below are set */
    int trace_top1, new_top1;          /* the most probable next token, trace and new */
    float trace_top1_prob, new_top1_prob;
    double kl;              /* KL(trace || new) in nats over the trace's top candidates and
                               the rest of the vocabulary as one more outcome */
} replay_position;

typedef struct {
    int positions;          /* positions run */
    int compared;           /* of which had the trace's candidates */
    int top1_same;          /* of which the new top-1 is the trace's */
    int first_top1_diff;    /* the first position whose top-1 differs, or -1 */
    int first_top1_diff_token;   /* the token at that position (the trace's, or the one
                                    known from the record before), or -1 */
    int sampled;            /* sampled tokens decided again */
    int unsampled;          /* tokens the trace says were sampled whose record before has
                               no sampler to decide them again with (run as forced) */
    int sampled_same;       /* of which the same token was chosen */
    int first_choice_diff;  /* the first position whose token was chosen differently, or -1 */
    int first_choice_diff_token; /* the trace's token there, or -1 */
    int first_choice_diff_chosen; /* the token the replay chose there, or -1 */
    int logits_same;        /* compared positions whose candidates' logits are the trace's
                               exactly (the same build, kernels and weights reproduce them
                               bit for bit; the trace holds them to 9 digits, which read
                               back as the same float) */
    int first_logits_diff;  /* the first compared position where one differs, or -1 */
    float logits_max_diff;  /* the largest difference of a candidate's logit */
    double kl_mean, kl_max;
    int kl_max_pos;         /* -1 when nothing was compared */
    int filled;             /* positions without a record, run from the one before's next */
    int gap;                /* the first position the trace does not say, where the replay
                               ended; -1 when it went to the end */
    int unlinked;           /* positions whose record holds another token than the record
                               before it chose (records of two runs spliced) */
    int first_unlinked;     /* the first of them, or -1 */
    int first_unlinked_token, first_unlinked_chosen; /* its token, and the one chosen */
    char steer_notice[320]; /* what the trace's control vectors have to say on this model
                               (layers it lacks, ignored: steering_check), or "" */
} replay_summary;

typedef void (*replay_observer)(void *user, const replay_position *p);

/* Runs e, which must be empty, over seq[0..n) with the control vectors each record ran
 * with (its intervention: the files it names are read again), each position on the
 * kernels it ran on (its record's batch when kernels_known, as trace_header.has_batch
 * says; else as the engine chose for a trace written before records said it) (a trace's final sequence:
 * trace_reader_sequence; NULL for a position without a record), calling fn (when not
 * NULL) after each position. A missing record's token is the previous record's next
 * (it is not compared); where that is unknown too, the replay ends (summary's gap).
 * Fails, with nothing run, when the sequence does not fit the context, holds ids
 * outside the model's vocabulary, or has control vectors or knocked-out heads the
 * model cannot take (steering_check: a head it lacks, a vector file changed since, of
 * another width or depth; err says from which position); or when the engine fails
 * (err says where). */
llm_status replay_run(engine *e, const step_record *const *seq, int n, bool kernels_known,
                      replay_observer fn, void *user, replay_summary *out, llm_err *err);

/* KL(P || Q) in nats, P the trace's top candidates (probabilities of the raw logits)
 * plus the rest of the mass as one outcome, Q the same outcomes under probs (a whole
 * distribution over the vocabulary, by id). A lower bound of the full KL. */
double replay_kl(const step_candidate *top, int n_top, const float *probs, int vocab);

#endif
