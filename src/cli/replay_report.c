/* replay_report.c — `--replay TRACE [--compare]`: runs a model over a trace's tokens.
 *
 * Plain replay checks that the model makes the trace's choices again (each sampled
 * token decided with the trace's settings and draw) and says where it does not.
 * --compare prints, per position, the trace's and the new model's top-1 and the KL
 * divergence between their distributions, then the top-1 agreement and the mean and
 * largest KL. The work is replay.c's; this file reads the trace and prints. Without
 * MODEL, or with MODEL the very file the trace names, it runs the trace's model with
 * the trace's weight and KV cache types, panels and kernels unless the command line
 * names them; another MODEL runs with that file's own defaults. A
 * trace of a patching run is replay_patch.c's; --replay TRACE --server URL (the trace
 * compared with a served model) is replay_server.c's. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "session.h"
#include "replay.h"
#include "textfmt.h"
#include "trace.h"
#include "trace_read.h"

/* A replay runs the interventions its trace records (its steer records): the command
 * line's are refused, the config file's left out, saying so. Returns 0 or 2. */
static int replay_interventions(app_options *o)
{
    bool config = o->vector_layers_line > 0;
    bool cli = o->vector_layers_line == 0 && o->vector_first >= 0;
    for (int i = 0; i < o->n_vectors; i++)
        *(o->vectors[i].line ? &config : &cli) = true;
    for (int i = 0; i < o->n_knocks; i++)
        *(o->knocks[i].line ? &config : &cli) = true;
    for (int i = 0; i < o->n_expert_knocks; i++)
        *(o->expert_knocks[i].line ? &config : &cli) = true;
    for (int i = 0; i < o->n_expert_forces; i++)
        *(o->expert_forces[i].line ? &config : &cli) = true;
    if (cli) {
        fprintf(stderr, "llmchat: --replay runs the interventions its trace records: drop "
                        "--control-vector, --control-vector-layers, --knock-out, "
                        "--knock-out-expert and --force-expert\n");
        return 2;
    }
    if (config)
        fprintf(stderr, "llmchat: the config file's interventions are left out: --replay runs "
                        "the ones its trace records\n");
    o->n_vectors = o->n_knocks = o->n_expert_knocks = o->n_expert_forces = 0;
    o->vector_first = o->vector_last = -1;
    return 0;
}

/* Is path a the file path b names (the same device and inode)? */
static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return a && b && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* The trace's weights, panels, KV cache and kernels over the config file's: only the
 * command line's change what the trace ran with. Returns 0. */
static int trace_settings(app_options *o, const trace_header *h)
{
    if ((!o->weights_given || o->weights_line > 0) && h->weights &&
        !model_weights_parse(h->weights, &o->weights))
        o->weights = TENSOR_Q8_0;
    if ((!o->panels_given || o->panels_line > 0) && (h->panels >= 0 || h->k4_panels >= 0)) {
        /* the trace's, not this CPU's defaults */
        o->k4_panels = h->k4_panels == 1;
        o->no_panels = h->panels == 0;
        o->panels_given = true;
    }
    if ((o->kv_cache == TRANSFORMER_KV_AUTO || o->kv_cache_line > 0) && h->kv_cache)
        o->kv_cache = strcmp(h->kv_cache, "f32") == 0 ? TRANSFORMER_KV_F32 : TRANSFORMER_KV_Q8_0;
    kernels_isa isa;
    if ((o->isa == KERNELS_AUTO || o->kernels_line > 0) && h->kernels &&
        kernels_isa_parse(h->kernels, &isa)) {
        if (kernels_isa_supported(isa))
            o->isa = isa;
        else
            fprintf(stderr, "llmchat: %s ran on the %s kernels, which this CPU or build cannot "
                            "run: the replay runs on its own (the logits may differ in their "
                            "last bits)\n", o->replay_path, h->kernels);
    }
    return 0;
}

int cli_replay_open(app_options *o, trace_reader **out)
{
    llm_err err;
    if (trace_read_file(o->replay_path, out, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        return 1;
    }
    const trace_reader *r = *out;
    if (trace_reader_usable(r, o->replay_path, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text); /* not a trace: one line, not its lines */
        return 1;
    }
    for (int i = 0; i < trace_reader_problems_kept(r); i++)
        fprintf(stderr, "llmchat: %s: %s\n", o->replay_path, trace_reader_problem(r, i));
    if (trace_reader_problem_count(r) > trace_reader_problems_kept(r))
        fprintf(stderr, "llmchat: %s: %d more problems\n", o->replay_path,
                trace_reader_problem_count(r) - trace_reader_problems_kept(r));
    const trace_header *h = trace_reader_header(r);
    int rc = replay_interventions(o);
    if (rc != 0)
        return rc;
    bool named = o->model_path && o->model_source == MODEL_FROM_ARGUMENT;
    if (named && !same_file(o->model_path, h->model_path))
        return 0; /* another model: its own defaults */
    if (named)
        return trace_settings(o, h); /* the trace's own file, named */
    if (!h->model_path || !*h->model_path) {
        fprintf(stderr, "llmchat: %s does not name its model: give MODEL\n", o->replay_path);
        return 2;
    }
    if (o->server_url && access(h->model_path, R_OK) != 0) { /* --server: one line */
        fprintf(stderr, "llmchat: %s names the model %s, which cannot be read (%s): give MODEL, "
                        "a local copy of the model the server runs\n", o->replay_path,
                h->model_path, strerror(errno));
        return 1;
    }
    /* The trace's model: what the command line leaves open is as the trace says. */
    o->model_path = h->model_path;
    o->model_source = MODEL_FROM_ARGUMENT;
    return trace_settings(o, h);
}


typedef struct {
    const app_options *o;
    const trace_reader *r;
    const tokenizer *tok;
} printer;

/* A token's piece, quoted and escaped for one table cell; a control token by its
 * name alone (<s>, not the newlines around it in the vocabulary), as the TUI shows it. */
static const char *piece_text(const printer *pr, int id, char *buf, size_t size)
{
    const char *p = trace_reader_piece(pr->r, id);
    bool known = id >= 0 && id < tokenizer_vocab_size(pr->tok);
    if (!p && known)
        p = tokenizer_piece(pr->tok, id);
    if (!p)
        p = "?";
    char esc[64];
    textfmt_token_piece(p, known && tokenizer_is_control(pr->tok, id), false, esc, sizeof esc);
    snprintf(buf, size, "'%s'", esc);
    return buf;
}

static void print_position(void *user, const replay_position *p)
{
    const printer *pr = user;
    if (!pr->o->compare)
        return;
    char tok[80], a[80], b[80];
    piece_text(pr, p->token, tok, sizeof tok);
    if (!p->compared) {
        printf("%5d  %-6s  %-14s  (the trace has no candidates here)\n", p->pos,
               step_phase_name(p->phase), tok);
        return;
    }
    printf("%5d  %-6s  %-14s  %-14s %5.3f   %-14s %5.3f  %s %9.6f\n", p->pos,
           step_phase_name(p->phase), tok, piece_text(pr, p->trace_top1, a, sizeof a),
           p->trace_top1_prob, piece_text(pr, p->new_top1, b, sizeof b), p->new_top1_prob,
           p->trace_top1 == p->new_top1 ? " " : "*", p->kl);
}

/* The positions from..to-1 of seq without a record, as "0, 7-9" (the first few
 * ranges, then how many more) into buf; returns how many there are. */
static int missing_positions(const step_record *const *seq, int from, int to, char *buf,
                             size_t size)
{
    int count = 0, ranges = 0;
    size_t o = 0;
    buf[0] = '\0';
    for (int p = from; p < to; p++) {
        if (seq[p])
            continue;
        int end = p;
        while (end + 1 < to && !seq[end + 1])
            end++;
        count += end - p + 1;
        if (++ranges <= 8 && o < size)
            o += (size_t)(end > p ? snprintf(buf + o, size - o, "%s%d-%d", o ? ", " : "", p, end)
                                  : snprintf(buf + o, size - o, "%s%d", o ? ", " : "", p));
        else if (ranges == 9 && o < size)
            o += (size_t)snprintf(buf + o, size - o, ", ...");
        p = end;
    }
    return count;
}

/* Appends "; " (after the first) and a reason to buf. */
static void add_reason(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void add_reason(char *buf, size_t size, const char *fmt, ...)
{
    size_t o = strlen(buf);
    if (o + 3 >= size)
        return;
    if (o)
        o += (size_t)snprintf(buf + o, size - o, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + o, size - o, fmt, ap);
    va_end(ap);
}

/* Whether the replay checked every position the trace holds: 0, or 1 with what it could
 * not check printed (positions without a record, positions after one whose token is
 * unknown, unreadable lines, records read in part, a trace cut short). */
static int print_incomplete(const printer *pr, const step_record *const *seq,
                            const trace_sequence_info *info, const replay_summary *s)
{
    char why[LLM_ERR_TEXT_MAX] = "", list[200];
    int n = info->n;
    if (missing_positions(seq, 0, n, list, sizeof list) > 0)
        add_reason(why, sizeof why, "no record for position%s %s", strpbrk(list, ",-") ? "s" : "", list);
    if (s->gap >= 0 && s->gap + 1 < n)
        add_reason(why, sizeof why, "positions %d-%d not run (what position %d holds is unknown)",
                   s->gap + 1, n - 1, s->gap);
    int skipped = trace_reader_lines_skipped(pr->r), partial = trace_reader_records_partial(pr->r);
    if (skipped > 0)
        add_reason(why, sizeof why, "%d line%s could not be read (above)", skipped, skipped > 1 ? "s" : "");
    if (partial > 0)
        add_reason(why, sizeof why, "%d record%s lost %s sampler or control vectors (above)", partial,
                   partial > 1 ? "s" : "", partial > 1 ? "their" : "its");
    if (s->unsampled > 0)
        add_reason(why, sizeof why, "%d sampled token%s could not be decided again (the record "
                   "before has no sampler)", s->unsampled, s->unsampled > 1 ? "s" : "");
    if (info->cut_short && s->gap < 0)
        add_reason(why, sizeof why, "the trace ends at position %d, whose record chose a token for "
                   "position %d (cut short?)", n - 1, n);
    if (!*why)
        return 0;
    fflush(stdout);
    fprintf(stderr, "llmchat: %s: incomplete: %d of its %d position%s checked: %s\n",
            pr->o->replay_path, s->positions - s->filled, n, n == 1 ? "" : "s", why);
    return 1;
}

/* Records spliced from two runs: one line, 1; else 0. */
static int print_unlinked(const printer *pr, const replay_summary *s)
{
    if (s->unlinked == 0)
        return 0;
    char a[80], b[80];
    fflush(stdout);
    fprintf(stderr, "llmchat: %s: position %d holds %s, but the record of position %d chose %s: "
                    "the records are not of one run (%d such position%s)\n",
            pr->o->replay_path, s->first_unlinked,
            piece_text(pr, s->first_unlinked_token, a, sizeof a), s->first_unlinked - 1,
            piece_text(pr, s->first_unlinked_chosen, b, sizeof b), s->unlinked,
            s->unlinked > 1 ? "s" : "");
    return 1;
}

/* The --compare lines after the per-position rows. */
static void print_comparison(const printer *pr, const replay_summary *s)
{
    char a[80];
    printf("\n");
    if (s->first_top1_diff >= 0)
        printf("first top-1 difference: position %d (after %s)\n", s->first_top1_diff,
               piece_text(pr, s->first_top1_diff_token, a, sizeof a));
    else if (s->compared > 0)
        printf("first top-1 difference: none\n");
    if (s->compared > 0) {
        printf("top-1 agreement: %.2f%% (%d of %d position%s)\n",
               100.0 * s->top1_same / s->compared, s->top1_same, s->compared,
               s->compared == 1 ? "" : "s");
        printf("KL divergence (nats, trace || new, over the trace's candidates and the "
               "rest): mean %.6f, max %.6f at position %d\n", s->kl_mean, s->kl_max,
               s->kl_max_pos);
    } else {
        printf("the trace records no candidates to compare (written with -n but no top?)\n");
    }
}

/* The summary after the per-position rows; returns the exit status: 1 when a plain
 * replay made another choice than the trace, or when the replay did not check every
 * position the trace holds, or the records are not of one run. */
static int print_summary(const printer *pr, const step_record *const *seq,
                         const trace_sequence_info *info, const replay_summary *s)
{
    const app_options *o = pr->o;
    char b[80];
    if (s->filled > 0)
        printf("positions without a record, run from the one before: %d\n", s->filled);
    if (s->gap == 0)
        printf("the trace does not say what position 0 holds: nothing was replayed\n");
    else if (s->gap > 0)
        printf("the trace does not say what position %d holds: replayed the %d position%s "
               "before it\n", s->gap, s->gap, s->gap == 1 ? "" : "s");
    if (o->compare)
        print_comparison(pr, s);
    if (s->sampled > 0)
        printf("sampled tokens chosen again with the trace's draws: %d of %d\n",
               s->sampled_same, s->sampled);
    if (s->first_logits_diff >= 0 && isnan(s->logits_max_diff))
        printf("logits: the trace's at %d of %d positions; from position %d they differ, one "
               "side's not a number there (a null in the trace, or a NaN now)\n",
               s->logits_same, s->compared, s->first_logits_diff);
    else if (s->first_logits_diff >= 0)
        printf("logits: the trace's at %d of %d positions; from position %d they differ by up "
               "to %.3g (other weights, kernels or build than the trace's)\n", s->logits_same,
               s->compared, s->first_logits_diff, s->logits_max_diff);
    else if (s->compared > 0)
        printf("logits: the trace's, bit for bit, at all %d positions with candidates\n",
               s->compared);
    int rc = print_incomplete(pr, seq, info, s) | print_unlinked(pr, s);
    if (s->first_choice_diff < 0) {
        if (!o->compare && rc == 0)
            printf("reproduced: every position ran, every sampled token was chosen again\n");
        return rc;
    }
    piece_text(pr, s->first_choice_diff_token, b, sizeof b);
    if (o->compare) {
        printf("first different choice: position %d (the trace has %s)\n",
               s->first_choice_diff, b);
        return rc;
    }
    fflush(stdout);
    char chosen[80];
    piece_text(pr, s->first_choice_diff_chosen, chosen, sizeof chosen);
    fprintf(stderr, "llmchat: the replay differs from the trace at position %d: the trace "
                    "has %s, the replay chose %s\n", s->first_choice_diff, b, chosen);
    return 1;
}

/* The trace's final sequence, checked against the model: NULL (a message printed) when
 * it cannot be replayed. What the order of the records implies is said on stderr. */
/* A warning when the trace's vocabulary (its header's pieces) is another than tok's of
 * the same size: the ids then stand for other text, and every difference after is
 * the vocabulary's, not the weights'. */
static void say_other_vocabulary(const app_options *o, const trace_reader *r, const tokenizer *tok)
{
    const trace_header *h = trace_reader_header(r);
    if (!tok || h->n_vocab <= 0 || h->n_vocab != tokenizer_vocab_size(tok))
        return;
    int differ = 0, first = -1;
    for (int id = 0; id < h->n_vocab; id++) {
        const char *p = trace_reader_piece(r, id);
        if (p && strcmp(p, tokenizer_piece(tok, id)) != 0) {
            differ++;
            if (first < 0)
                first = id;
        }
    }
    if (differ > 0)
        fprintf(stderr, "llmchat: warning: %s: the trace's vocabulary is another than this "
                        "model's: %d of its %d pieces differ (the first: token %d); the ids mean "
                        "other text here\n", o->replay_path, differ, h->n_vocab, first);
}

static const step_record **replayable(const app_options *o, const model *m,
                                      const trace_reader *r, trace_sequence_info *info)
{
    const trace_header *h = trace_reader_header(r);
    const step_record **seq;
    llm_err err;
    if (trace_reader_sequence(r, &seq, info, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s: %s\n", o->replay_path, err.text);
        return NULL;
    }
    int n = info->n;
    if (n == 0) {
        fprintf(stderr, "llmchat: %s holds no positions to replay\n", o->replay_path);
        free(seq);
        return NULL;
    }
    if (info->by_position)
        fprintf(stderr, "llmchat: %s: the records are not in the order llmchat writes them "
                        "(%s): replayed by position\n", o->replay_path, info->disorder);
    if (info->copies > 0)
        fprintf(stderr, "llmchat: %s: %d line%s repeat%s a record of the same position byte for "
                        "byte: ignored\n", o->replay_path, info->copies, info->copies > 1 ? "s" : "",
                info->copies > 1 ? "" : "s");
    if (h->n_vocab > 0 && h->n_vocab != m->config.vocab_size)
        fprintf(stderr, "llmchat: warning: the trace's vocabulary has %d tokens, %s has %d\n",
                h->n_vocab, m->name, m->config.vocab_size);
    if (o->ctx == 0 && n > m->config.seq_len) {
        fprintf(stderr, "llmchat: the trace holds %d positions, more than %s's context (%d)\n",
                n, m->name, m->config.seq_len);
        free(seq);
        return NULL;
    }
    return seq;
}

int cli_replay(session *sess)
{
    const app_options *o = sess->o;
    const model *m = sess->m;
    trace_reader *r = sess->replay;
    const trace_header *h = trace_reader_header(r);
    if (o->server_url) /* compared with a served model */
        return cli_replay_server(sess);
    if (trace_reader_patch(r)) /* a patching run: its grid is checked, not records */
        return cli_replay_patch(sess);
    trace_sequence_info info;
    const step_record **seq = replayable(o, m, r, &info);
    if (!seq)
        return 1;
    say_other_vocabulary(o, r, sess->tok);
    int n = info.n;
    engine *e = sess->e;
    llm_err err;
    int rc;
    printf("%s %s: %d position%s, traced with %s (%s weights)\n",
           o->compare ? "comparing" : "replaying", o->replay_path, n, n == 1 ? "" : "s",
           h->model_name ? h->model_name : "an unnamed model", h->weights ? h->weights : "?");
    printf("now: %s (%s weights, %s%s%s KV cache, %s kernels)\n", m->name,
           model_weights_option(m),
           !model_has_q8_blocks(m) ? "" : m->panel_bytes ? "panels on, " : "panels off, ",
           !model_has_k4_blocks(m) ? ""
           : m->k4_panel_bytes     ? "Q4_K panels on, "
                                   : "Q4_K panels off, ",
           engine_kv_cache(e) == TRANSFORMER_KV_F32 ? "f32" : "q8_0", sess->kernels);
    if (info.replaced > 0)
        printf("the run rewound: %d record%s replaced by later ones for %s position%s %s "
               "not replayed\n", info.replaced, info.replaced == 1 ? "" : "s",
               info.replaced == 1 ? "its" : "their", info.replaced == 1 ? "" : "s",
               info.replaced == 1 ? "is" : "are");
    if (o->compare)
        printf("\n  pos  phase   token           trace top-1            new top-1              KL\n");
    printer pr = {o, r, sess->tok};
    replay_summary s;
    llm_status st = replay_run(e, seq, n, h->has_batch, print_position, &pr, &s, &err);
    if (s.steer_notice[0])
        fprintf(stderr, "llmchat: %s: %s\n", o->replay_path, s.steer_notice);
    if (st != LLM_OK) {
        fflush(stdout);
        if (s.positions == 0)
            fprintf(stderr, "llmchat: %s: %s\n", o->replay_path, err.text);
        else
            fprintf(stderr, "llmchat: replay stopped after %d position%s: %s\n", s.positions,
                    s.positions == 1 ? "" : "s", err.text);
        rc = 1;
    } else {
        rc = print_summary(&pr, seq, &info, &s);
    }
    free(seq);
    return rc;
}
