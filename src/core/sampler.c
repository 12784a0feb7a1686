/* sampler.c — chooses the next token from logits, stage by stage (see sampler.h).
 *
 * Owns a scratch array of (id, logit, prob) candidates sized to the vocabulary, a
 * stamp array used to count each penalised token once, and the RNG state. It never
 * writes to the caller's logits and keeps no pointer to them or to the history.
 *
 * Cost per decision for a vocabulary of n: one O(n) copy, top-k by an in-place
 * min-heap of k (O(n log k)), one O(n) softmax (SIMD through kernels_softmax when
 * it covers the whole vocabulary), one more for the record's raw-logit probability
 * unless the first already was that (temperature 1, no penalty), top-p by
 * pre-filtering candidates that cannot be in the nucleus and then a quickselect on
 * the probability mass (expected O(n), no full sort), min-p and the draw O(kept). */
#include "sampler.h"

#include "kernels.h"
#include "settings.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int id;
    float logit; /* penalised logit */
    float prob;  /* after temperature and softmax; not normalised after cuts */
} candidate;

struct sampler {
    int n_vocab;
    sampler_config cfg;
    uint64_t rng;          /* xorshift64* state, never 0 */
    candidate *cand;       /* (n_vocab) scratch */
    float *probs;          /* (n_vocab) scratch for the vectorised softmax, by token id */
    unsigned *stamp;       /* (n_vocab) stamp[id] == cur_stamp: already penalised */
    unsigned cur_stamp;
    /* What the last decision did to each id (sampler_fate): mark[id] >> 2 == gen when
     * the id survived one of its stages, mark & 3 the last stage survived (FATE_*);
     * p_final[id] is its final probability when it survived them all. */
    uint32_t *mark;        /* (n_vocab) */
    float *p_final;        /* (n_vocab) */
    uint32_t gen;
    struct {
        bool greedy, top_k, top_p, min_p; /* the stages that ran */
        int chosen;
    } last;
    float next_draw;       /* used instead of the RNG by the next draw when >= 0 */
};

enum { FATE_TOP_K = 1, FATE_TOP_P = 2, FATE_FINAL = 3 };

/* ---- configuration ---- */

/* The defaults are the settings table's (settings.c), as a file that leaves a setting
 * out and --help take them. */
void sampler_config_default(sampler_config *c)
{
    live_settings s;
    settings_default(&s);
    *c = s.sampler;
}

/* The bounds are the settings table's (settings.c), as /set and the options check them. */
llm_status sampler_config_check(const sampler_config *c, llm_err *err)
{
    live_settings s = {.sampler = *c};
    for (const setting_info *row = settings_table; row->name; row++) {
        if (!settings_of_sampler(row) || settings_in_range(row, &s))
            continue;
        char value[32];
        return llm_fail(err, LLM_ERR_ARG, "--%s %s, got %s", row->name, settings_range(row),
                        settings_value_text(row, &s, value, sizeof value));
    }
    return LLM_OK;
}

/* ---- RNG: splitmix64 to mix the seed, xorshift64* to draw ---- */

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static void rng_seed(sampler *s, uint64_t seed)
{
    s->rng = splitmix64(seed);
    if (s->rng == 0)
        s->rng = 0x9E3779B97F4A7C15ull;
}

static uint64_t rng_next(sampler *s)
{
    s->rng ^= s->rng >> 12;
    s->rng ^= s->rng << 25;
    s->rng ^= s->rng >> 27;
    return s->rng * 0x2545F4914F6CDD1Dull;
}

/* Uniform in [0, 1) from the top 24 bits. */
static float rng_float(sampler *s)
{
    return (float)(rng_next(s) >> 40) / 16777216.0f;
}

/* ---- life cycle ---- */

llm_status sampler_new(int n_vocab, const sampler_config *c, sampler **out, llm_err *err)
{
    *out = NULL;
    if (n_vocab <= 0)
        return llm_fail(err, LLM_ERR_ARG, "sampler: vocabulary size must be > 0, got %d", n_vocab);
    llm_status st = sampler_config_check(c, err);
    if (st != LLM_OK)
        return st;
    sampler *s = calloc(1, sizeof *s);
    if (s) {
        s->cand = malloc((size_t)n_vocab * sizeof *s->cand);
        s->stamp = calloc((size_t)n_vocab, sizeof *s->stamp);
        s->probs = malloc((size_t)n_vocab * sizeof *s->probs);
        s->mark = calloc((size_t)n_vocab, sizeof *s->mark);
        s->p_final = malloc((size_t)n_vocab * sizeof *s->p_final);
    }
    if (!s || !s->cand || !s->stamp || !s->probs || !s->mark || !s->p_final) {
        sampler_free(s);
        return llm_fail(err, LLM_ERR_NOMEM, "sampler: out of memory for a vocabulary of %d", n_vocab);
    }
    s->n_vocab = n_vocab;
    s->cfg = *c;
    s->last.greedy = true;
    s->last.chosen = -1;
    s->next_draw = -1.0f;
    rng_seed(s, c->seed);
    *out = s;
    return LLM_OK;
}

void sampler_free(sampler *s)
{
    if (!s)
        return;
    free(s->cand);
    free(s->stamp);
    free(s->probs);
    free(s->mark);
    free(s->p_final);
    free(s);
}

void sampler_configure(sampler *s, const sampler_config *c)
{
    bool reseed = c->seed != s->cfg.seed;
    s->cfg = *c;
    if (reseed)
        rng_seed(s, c->seed);
}

const sampler_config *sampler_get_config(const sampler *s)
{
    return &s->cfg;
}

/* ---- stages ---- */

/* a ranks before b: higher logit, then lower id. */
static bool better(const candidate *a, const candidate *b)
{
    return a->logit > b->logit || (a->logit == b->logit && a->id < b->id);
}

/* Repetition penalty over the last repeat_last_n history tokens, each distinct id once.
 * cand[i].id == i on entry. Returns the number of ids whose logit changed. */
static int apply_penalty(sampler *s, const int *history, int n_history)
{
    float pen = s->cfg.repeat_penalty;
    int last = s->cfg.repeat_last_n;
    if (pen == 1.0f || last <= 0 || n_history <= 0 || !history)
        return 0;
    if (++s->cur_stamp == 0) { /* wrapped: forget every old stamp */
        memset(s->stamp, 0, (size_t)s->n_vocab * sizeof *s->stamp);
        s->cur_stamp = 1;
    }
    int n_changed = 0;
    int from = n_history > last ? n_history - last : 0;
    for (int i = from; i < n_history; i++) {
        int id = history[i];
        if (id < 0 || id >= s->n_vocab || s->stamp[id] == s->cur_stamp)
            continue;
        s->stamp[id] = s->cur_stamp;
        float old = s->cand[id].logit;
        float now = old > 0.0f ? old / pen : old < 0.0f ? old * pen : old;
        if (now != old) {
            s->cand[id].logit = now;
            n_changed++;
        }
    }
    return n_changed;
}

/* Min-heap on `better` (the root is the worst candidate). */
static void sift_down_min(candidate *h, int n, int i)
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && better(&h[m], &h[l]))
            m = l;
        if (r < n && better(&h[m], &h[r]))
            m = r;
        if (m == i)
            return;
        candidate t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* Moves the k best candidates (by `better`) to c[0..k), in no particular order. */
static void select_top_k(candidate *c, int n, int k)
{
    for (int i = k / 2 - 1; i >= 0; i--)
        sift_down_min(c, k, i);
    for (int i = k; i < n; i++) {
        if (better(&c[i], &c[0])) {
            candidate t = c[0];
            c[0] = c[i];
            c[i] = t;
            sift_down_min(c, k, 0);
        }
    }
}

/* a is more probable than b, ties to the lower id. */
static bool more_probable(const candidate *a, const candidate *b)
{
    return a->prob > b->prob || (a->prob == b->prob && a->id < b->id);
}

static void swap_candidates(candidate *a, candidate *b)
{
    candidate t = *a;
    *a = *b;
    *b = t;
}

static int cmp_more_probable(const void *a, const void *b)
{
    return more_probable(a, b) ? -1 : more_probable(b, a) ? 1 : 0;
}

/* Partitions c[0..n) (n >= 3) around the median of its first, middle and last
 * candidates: returns k with c[0..k) more probable than c[k] and c[k+1..n) less. */
static int partition(candidate *c, int n)
{
    int mid = n / 2;
    if (more_probable(&c[mid], &c[0]))
        swap_candidates(&c[mid], &c[0]);
    if (more_probable(&c[n - 1], &c[0]))
        swap_candidates(&c[n - 1], &c[0]);
    if (more_probable(&c[mid], &c[n - 1]))
        swap_candidates(&c[mid], &c[n - 1]);
    /* now c[0] >= c[n-1] >= c[mid]: c[n-1] is the median, the pivot */
    candidate pivot = c[n - 1];
    int store = 0;
    for (int i = 0; i < n - 1; i++)
        if (more_probable(&c[i], &pivot))
            swap_candidates(&c[i], &c[store++]);
    swap_candidates(&c[store], &c[n - 1]);
    return store;
}

/* Top-p over c[0..n) whose probs sum to `total`: moves the smallest set of most
 * probable candidates whose mass reaches p * total to c[0..m), in no particular
 * order, and returns m. Ties go to the lower id. Expected O(n): a quickselect on the
 * mass instead of a sort. */
static int select_top_p(candidate *c, int n, double total, float p)
{
    if (n <= 1)
        return n;
    /* Candidates below (1 - p) / (n - 1) of the mass cannot be in the nucleus: even all
     * of them together (at most n - 1) weigh less than 1 - p. */
    float cutoff = (float)((1.0 - p) / (n - 1) * total);
    int hi = 0;
    for (int i = 0; i < n; i++)
        if (c[i].prob >= cutoff)
            swap_candidates(&c[i], &c[hi++]);
    /* The argument needs someone above the cutoff: when p < 1/n, every candidate can be
     * below it, and then no candidate is ruled out. */
    if (hi == 0)
        hi = n;
    /* Invariant: c[0..lo) is in the nucleus, which is c[0..lo) plus the most probable
     * few of c[lo..hi); `need` is the mass still missing. */
    double need = (double)p * total;
    int lo = 0;
    for (int round = 0; hi - lo > 16 && round < 64; round++) {
        int k = lo + partition(c + lo, hi - lo);
        double upper = 0.0;
        for (int i = lo; i < k; i++)
            upper += c[i].prob;
        if (upper >= need) {
            hi = k;
        } else if (upper + c[k].prob >= need) {
            return k + 1;
        } else {
            need -= upper + c[k].prob;
            lo = k + 1;
        }
    }
    /* A few left (or a run of bad pivots): sort them and take what is needed. */
    qsort(c + lo, (size_t)(hi - lo), sizeof *c, cmp_more_probable);
    double cum = 0.0;
    for (int i = lo; i < hi; i++) {
        cum += c[i].prob;
        if (cum >= need)
            return i + 1;
    }
    return hi > 0 ? hi : 1; /* rounding: the whole rest, and never nothing */
}

/* Marks c[0..m) as having survived stage `stage` of the current decision. */
static void mark_survivors(sampler *s, const candidate *c, int m, uint32_t stage)
{
    for (int i = 0; i < m; i++)
        s->mark[c[i].id] = s->gen << 2 | stage;
}

/* Starts a decision's marks: every older mark becomes stale. */
static void marks_begin(sampler *s)
{
    if (++s->gen >= (1u << 30)) { /* wrapped: forget every old mark */
        memset(s->mark, 0, (size_t)s->n_vocab * sizeof *s->mark);
        s->gen = 1;
    }
}

/* What one choice went through: the stages' survivors, the draw and the result. */
typedef struct {
    int best;                 /* the highest raw logit's id (after the penalty) */
    float maxl;               /* its logit */
    bool all_finite;          /* every raw logit finite */
    int n_penalized;
    int kept_top_k, kept_top_p, kept_min_p;
    bool greedy;
    bool raw_softmax;         /* s->probs holds the softmax of the raw logits */
    float draw;               /* -1 when greedy */
    int chosen;
    float chosen_prob;
} choice;

/* The candidates from the logits (NaN as -inf), the repetition penalty, the best one. */
static void load_candidates(sampler *s, const float *logits, const int *history, int n_history,
                            choice *ch)
{
    int n = s->n_vocab;
    candidate *c = s->cand;
    ch->all_finite = true;
    for (int i = 0; i < n; i++) {
        c[i].id = i;
        c[i].logit = isnan(logits[i]) ? -INFINITY : logits[i];
        ch->all_finite &= isfinite(logits[i]) != 0;
    }
    ch->n_penalized = apply_penalty(s, history, n_history);
    ch->best = 0;
    for (int i = 1; i < n; i++)
        if (c[i].logit > c[ch->best].logit)
            ch->best = i;
    ch->maxl = c[ch->best].logit; /* before top-k reorders c */
}

/* Temperature and softmax over the first m candidates; returns their total weight and
 * sets *top_weight to the top candidate's. Over the whole vocabulary this is the
 * vectorised, normalised softmax; after top-k a scalar one shifted by the maximum
 * (which top-k kept), so the top candidate's weight is exactly 1. */
static double weigh(sampler *s, int m, choice *ch, float *top_weight)
{
    int n = s->n_vocab;
    candidate *c = s->cand;
    float t = s->cfg.temperature;
    double total = 0.0;
    *top_weight = 1.0f;
    if (m == n && ch->all_finite) {
        /* The logits are shifted by their maximum before scaling, so that a cold
         * temperature sends them to -inf (weight 0), never to +inf. */
        float inv_t = 1.0f / t;
        for (int i = 0; i < n; i++)
            s->probs[i] = (c[i].logit - ch->maxl) * inv_t;
        kernels_softmax(s->probs, n);
        for (int i = 0; i < n; i++) {
            c[i].prob = s->probs[i];
            total += c[i].prob;
        }
        ch->raw_softmax = t == 1.0f && ch->n_penalized == 0;
        *top_weight = s->probs[ch->best];
    } else {
        for (int i = 0; i < m; i++) {
            c[i].prob = expf((c[i].logit - ch->maxl) / t);
            total += c[i].prob;
        }
    }
    return total;
}

/* min-p: keeps the candidates at least threshold probable (always one); returns how
 * many, their total weight in *total. */
static int keep_min_p(candidate *c, int m, float threshold, double *total)
{
    int k = 0;
    *total = 0.0;
    for (int i = 0; i < m; i++)
        if (c[i].prob >= threshold) {
            c[k++] = c[i];
            *total += c[i].prob;
        }
    if (k == 0) { /* rounding: keep the most probable one */
        int top = 0;
        for (int i = 1; i < m; i++)
            if (more_probable(&c[i], &c[top]))
                top = i;
        c[0] = c[top];
        *total = c[0].prob;
        k = 1;
    }
    return k;
}

/* The sampled path: top-k, temperature, top-p, min-p, then the draw. */
static void sample(sampler *s, choice *ch)
{
    const sampler_config *cfg = &s->cfg;
    int n = s->n_vocab;
    candidate *c = s->cand;
    int m = n;
    if (cfg->top_k > 0 && cfg->top_k < n) {
        select_top_k(c, n, cfg->top_k);
        m = ch->kept_top_k = cfg->top_k;
        mark_survivors(s, c, m, FATE_TOP_K);
        s->last.top_k = true;
    }
    float top_weight;
    double total = weigh(s, m, ch, &top_weight);
    ch->kept_top_p = ch->kept_min_p = m; /* a stage that is off keeps what reaches it */
    if (cfg->top_p < 1.0f) {
        m = ch->kept_top_p = ch->kept_min_p = select_top_p(c, m, total, cfg->top_p);
        total = 0.0;
        for (int i = 0; i < m; i++)
            total += c[i].prob;
        mark_survivors(s, c, m, FATE_TOP_P);
        s->last.top_p = true;
    }
    if (cfg->min_p > 0.0f) {
        m = ch->kept_min_p = keep_min_p(c, m, cfg->min_p * top_weight, &total);
        s->last.min_p = true;
    }
    ch->draw = s->next_draw >= 0.0f ? s->next_draw : rng_float(s);
    double r = ch->draw * total, cum = 0.0;
    int pick = m - 1;
    for (int i = 0; i < m; i++) {
        cum += c[i].prob;
        if (r < cum) {
            pick = i;
            break;
        }
    }
    ch->chosen = c[pick].id;
    ch->chosen_prob = (float)(c[pick].prob / total);
    mark_survivors(s, c, m, FATE_FINAL);
    for (int i = 0; i < m; i++)
        s->p_final[c[i].id] = (float)(c[i].prob / total);
}

/* The record of a choice, with the chosen token's probability and rank in the model's
 * own distribution (the softmax of the raw logits). */
static void fill_record(sampler *s, const float *logits, const choice *ch, sampler_record *rec)
{
    int n = s->n_vocab;
    rec->config = s->cfg;
    rec->n_vocab = n;
    rec->n_penalized = ch->n_penalized;
    rec->kept_top_k = ch->kept_top_k;
    rec->kept_top_p = ch->kept_top_p;
    rec->kept_min_p = ch->kept_min_p;
    rec->greedy = ch->greedy;
    rec->draw = ch->draw;
    rec->chosen = ch->chosen;
    rec->chosen_prob = ch->chosen_prob;
    if (ch->all_finite) {
        if (!ch->raw_softmax) {
            memcpy(s->probs, logits, sizeof(float) * n);
            kernels_softmax(s->probs, n);
        }
        rec->chosen_model_prob = s->probs[ch->chosen];
        rec->chosen_rank = sampler_rank(logits, n, ch->chosen);
    } else {
        sampler_model_prob(logits, n, ch->chosen, &rec->chosen_model_prob, &rec->chosen_rank);
    }
}

int sampler_choose(sampler *s, const float *logits, const int *history, int n_history,
                   sampler_record *rec)
{
    int n = s->n_vocab;
    choice ch = {.kept_top_k = n, .kept_top_p = n, .kept_min_p = n, .draw = -1.0f,
                 .chosen_prob = 1.0f};
    load_candidates(s, logits, history, n_history, &ch);
    /* A temperature so small that 1/t overflows would turn the scaled logits into NaN:
     * it is the limit t -> 0, which is greedy. */
    float t = s->cfg.temperature;
    ch.greedy = t == 0.0f || !isfinite(1.0f / t) || !isfinite(ch.maxl);
    marks_begin(s);
    s->last.greedy = ch.greedy;
    s->last.top_k = s->last.top_p = s->last.min_p = false;
    if (ch.greedy)
        ch.chosen = ch.best;
    else
        sample(s, &ch);
    s->last.chosen = ch.chosen;
    s->next_draw = -1.0f;
    if (rec)
        fill_record(s, logits, &ch, rec);
    return ch.chosen;
}

void sampler_set_next_draw(sampler *s, float draw)
{
    s->next_draw = draw >= 0.0f && draw < 1.0f ? draw : -1.0f;
}

const char *sampler_cut_name(sampler_cut cut)
{
    switch (cut) {
    case SAMPLER_KEPT: return "kept";
    case SAMPLER_CUT_TOP_K: return "top-k";
    case SAMPLER_CUT_TOP_P: return "top-p";
    case SAMPLER_CUT_MIN_P: return "min-p";
    case SAMPLER_CUT_GREEDY: return "greedy";
    }
    return "?";
}

void sampler_fate(const sampler *s, int id, sampler_cut *cut, float *p_final)
{
    *cut = SAMPLER_KEPT;
    *p_final = 0.0f;
    if (id < 0 || id >= s->n_vocab || s->last.chosen < 0) {
        *cut = SAMPLER_CUT_GREEDY;
        return;
    }
    if (s->last.greedy) {
        if (id == s->last.chosen)
            *p_final = 1.0f;
        else
            *cut = SAMPLER_CUT_GREEDY;
        return;
    }
    uint32_t level = s->mark[id] >> 2 == s->gen ? s->mark[id] & 3 : 0;
    if (level == FATE_FINAL)
        *p_final = s->p_final[id];
    else if (s->last.top_k && level < FATE_TOP_K)
        *cut = SAMPLER_CUT_TOP_K;
    else if (s->last.top_p && level < FATE_TOP_P)
        *cut = SAMPLER_CUT_TOP_P;
    else
        *cut = SAMPLER_CUT_MIN_P;
}

void sampler_model_prob(const float *logits, int n_vocab, int id, float *prob, int *rank)
{
    if (id < 0 || id >= n_vocab || isnan(logits[id])) {
        *prob = 0.0f;
        *rank = 0;
        return;
    }
    float maxl = -INFINITY;
    for (int i = 0; i < n_vocab; i++)
        if (logits[i] > maxl)
            maxl = logits[i];
    float mine = logits[id];
    double total = 0.0;
    for (int i = 0; i < n_vocab; i++) {
        float l = logits[i];
        if (l > -INFINITY) /* false for NaN too */
            total += expf(l - maxl);
    }
    *rank = sampler_rank(logits, n_vocab, id);
    if (!(maxl > -INFINITY) || !isfinite(maxl))
        *prob = mine == maxl ? 1.0f / (float)(n_vocab - (*rank - 1)) : 0.0f;
    else
        *prob = (float)(expf(mine - maxl) / total);
}

int sampler_rank(const float *v, int n, int id)
{
    int above = 0;
    for (int i = 0; i < n; i++)
        above += v[i] > v[id];
    return above + 1;
}

int sampler_top_k(const float *v, int n, int k, int *out)
{
    if (k > n)
        k = n;
    if (k <= 0)
        return 0;
    int m = 0; /* out[0..m) sorted, descending */
    for (int i = 0; i < n; i++) {
        if (m == k && !(v[i] > v[out[k - 1]]))
            continue;
        int j = m < k ? m++ : k - 1;
        while (j > 0 && v[i] > v[out[j - 1]]) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = i;
    }
    return m;
}
