/* fuzz_trace_order.c — libFuzzer target: --replay over a real trace whose lines the
 * input shuffles, copies, deletes and damages. Two traces are made once, on the
 * bundled chat model: a straight sampled run, and one that rewinds and goes on with
 * another token. Each input is a list of edits of their record lines (3 bytes each:
 * what, line, line); the edited trace is read, ordered (trace_reader_sequence) and
 * replayed, and what --replay would conclude (replay_report.c: every position checked,
 * the records of one run, every sampled token chosen again) is checked against what
 * the edits did:
 *   - moved or copied lines of the straight run replay it whole, reproduced;
 *   - once a position of the straight run is lost (its line deleted or damaged, no
 *     copy left), the replay never says every position was checked;
 *   - a replay that says every position was checked ran the run's own sequence (the
 *     straight run's tokens; for the rewound run, its length), and the rewound run with
 *     lines moved or copied is refused, replayed as it ended, or (a record swapped with
 *     the other branch's at its position) said to hold records not of one run. */
#include "fuzz.h"

#include <stdbool.h>
#include <string.h>

#include "replay.h"
#include "trace.h"
#include "trace_read.h"

enum { MAX_EDITS = 24, MAX_LINES = 256 };

typedef struct {
    char *text;          /* the trace (owned) */
    const char *line[MAX_LINES]; /* its record lines (into text, NUL-terminated) */
    int n_lines;
    char *header;        /* its first line */
    int tokens[MAX_LINES]; /* the sequence the run ended with */
    int n;
} base_trace;

static model *mdl;
static tokenizer *tok;
static base_trace bases[2]; /* straight, rewound */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf && (n += fread(buf + n, 1, cap - n, f)) == cap) {
        char *grown = realloc(buf, (cap *= 2) + 1);
        if (!grown)
            free(buf);
        buf = grown;
    }
    fclose(f);
    if (buf)
        buf[n] = '\0';
    return buf;
}

/* A sampled run of the bundled model traced (rewound: back to position 12, another
 * token there, on again) into b. */
static void make_base(base_trace *b, bool rewound)
{
    char path[] = "/tmp/fuzz_trace_order.XXXXXX";
    int fd = mkstemp(path);
    FUZZ_CHECK(fd >= 0);
    close(fd);
    engine_options eo;
    engine_options_default(&eo);
    eo.record_prompt = true;
    eo.sampler.temperature = 1.0f;
    eo.sampler.top_p = 0.9f;
    eo.sampler.seed = 7;
    engine *e;
    trace_writer *t;
    llm_err err;
    FUZZ_CHECK(engine_new(mdl, tok, &eo, &e, &err) == LLM_OK);
    FUZZ_CHECK(trace_open(path, tok, &mdl->config, false, &t, &err) == LLM_OK);
    trace_run run = {.mode = "generate", .m = mdl, .sampler = &eo.sampler, .ctx = engine_ctx(e)};
    trace_describe(t, &run);
    engine_set_observer(e, trace_observe, t);
    int ids[64] = {TOKEN_BOS}, id;
    int n = 1 + tokenizer_encode(tok, "Once upon a time", ids + 1, 63);
    FUZZ_CHECK(engine_prefill(e, ids, n, &err) == LLM_OK);
    for (int i = 0; i < 24; i++)
        FUZZ_CHECK(engine_step(e, &id, &err) == LLM_OK);
    if (rewound) {
        int other = (engine_tokens(e)[12] + 1) % mdl->config.vocab_size;
        FUZZ_CHECK(engine_rewind(e, 12, &err) == LLM_OK);
        FUZZ_CHECK(engine_force(e, other, &err) == LLM_OK);
        for (int i = 0; i < 10; i++)
            FUZZ_CHECK(engine_step(e, &id, &err) == LLM_OK);
    }
    engine_finish(e);
    FUZZ_CHECK(trace_close(t, &err) == LLM_OK);
    b->n = engine_pos(e);
    memcpy(b->tokens, engine_tokens(e), sizeof(int) * (size_t)b->n);
    engine_free(e);
    b->text = slurp(path);
    unlink(path);
    FUZZ_CHECK(b->text != NULL);
    char *save, *l = strtok_r(b->text, "\n", &save);
    b->header = l;
    while ((l = strtok_r(NULL, "\n", &save)) && b->n_lines < MAX_LINES)
        b->line[b->n_lines++] = l;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    llm_err err;
    if (model_open(fuzz_source_path("data/models/chat260K.bin"), NULL, &mdl, &err) != LLM_OK ||
        tokenizer_open(fuzz_source_path("data/models/tok512.bin"), 512, &tok, &err) != LLM_OK) {
        fprintf(stderr, "fuzz_trace_order: %s\n", err.text);
        exit(1);
    }
    make_base(&bases[0], false);
    make_base(&bases[1], true);
    FUZZ_CHECK(bases[0].n_lines == bases[0].n); /* line p holds position p */
    return 0;
}

/* The edited record lines: which line of the base each one is (-1: damaged). */
typedef struct {
    int from[MAX_LINES];
    int n;
    bool only_moved;  /* lines moved and copied, none deleted or damaged */
} edited;

static void apply_edits(const uint8_t *data, size_t size, int n_base, edited *ed)
{
    ed->n = n_base;
    ed->only_moved = true;
    for (int i = 0; i < n_base; i++)
        ed->from[i] = i;
    for (size_t k = 1; k + 2 < size && k / 3 < MAX_EDITS && ed->n > 0; k += 3) {
        int a = data[k + 1] % ed->n, b = data[k + 2] % ed->n, keep;
        switch (data[k] % 4) {
        case 0: /* swap */
            keep = ed->from[a];
            ed->from[a] = ed->from[b];
            ed->from[b] = keep;
            break;
        case 1: /* copy a before b */
            if (ed->n == MAX_LINES)
                break;
            keep = ed->from[a];
            memmove(&ed->from[b + 1], &ed->from[b], sizeof(int) * (size_t)(ed->n - b));
            ed->from[b] = keep;
            ed->n++;
            break;
        case 2: /* delete */
            memmove(&ed->from[a], &ed->from[a + 1], sizeof(int) * (size_t)(ed->n - a - 1));
            ed->n--;
            ed->only_moved = false;
            break;
        default: /* damage */
            ed->from[a] = -1;
            ed->only_moved = false;
        }
    }
}

/* The trace text of the edits. */
static char *edited_text(const base_trace *b, const edited *ed, size_t *len)
{
    size_t cap = strlen(b->header) + 2;
    for (int i = 0; i < ed->n; i++)
        cap += (ed->from[i] >= 0 ? strlen(b->line[ed->from[i]]) : 8) + 1;
    char *text = malloc(cap);
    FUZZ_CHECK(text != NULL);
    size_t o = (size_t)sprintf(text, "%s\n", b->header);
    for (int i = 0; i < ed->n; i++)
        o += (size_t)sprintf(text + o, "%s\n", ed->from[i] >= 0 ? b->line[ed->from[i]] : "{\"pos\":");
    *len = o;
    return text;
}

/* Whether every position of the straight run still has a line. */
static bool all_positions_kept(const base_trace *b, const edited *ed)
{
    for (int p = 0; p < b->n_lines; p++) {
        bool kept = false;
        for (int i = 0; i < ed->n && !kept; i++)
            kept = ed->from[i] == p; /* line p of the straight run holds position p */
        if (!kept)
            return false;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const base_trace *b = &bases[size > 0 ? data[0] & 1 : 0];
    bool straight = b == &bases[0];
    edited ed;
    apply_edits(data, size, b->n_lines, &ed);
    size_t len;
    char *text = edited_text(b, &ed, &len);
    trace_reader *r;
    llm_err err;
    FUZZ_CHECK(trace_read_buffer(text, len, &r, &err) == LLM_OK);
    const step_record **seq = NULL;
    trace_sequence_info info;
    llm_status st = trace_reader_sequence(r, &seq, &info, &err);
    /* the straight run holds no position twice with different records: never refused */
    FUZZ_CHECK(st == LLM_OK || (!straight && st == LLM_ERR_FORMAT && strlen(err.text) > 0));
    if (st != LLM_OK || info.n == 0) {
        FUZZ_CHECK(st != LLM_OK || !straight || ed.n == 0 || !ed.only_moved);
        trace_reader_free(r);
        free(text);
        free(seq);
        return 0;
    }
    engine_options eo;
    engine_options_default(&eo);
    engine *e;
    FUZZ_CHECK(engine_new(mdl, tok, &eo, &e, &err) == LLM_OK);
    replay_summary s;
    bool known = trace_reader_header(r)->has_batch;
    FUZZ_CHECK(replay_run(e, seq, info.n, known, NULL, NULL, &s, &err) == LLM_OK);
    FUZZ_CHECK(s.positions <= info.n && s.sampled_same <= s.sampled);
    /* what --replay concludes (replay_report.c: print_incomplete, print_unlinked) */
    int missing = 0;
    for (int p = 0; p < info.n; p++)
        missing += seq[p] == NULL;
    bool checked_all = missing == 0 && s.gap < 0 && trace_reader_lines_skipped(r) == 0 &&
                       trace_reader_records_partial(r) == 0 && !info.cut_short;
    bool reproduced = checked_all && s.unlinked == 0 && s.first_choice_diff < 0;
    bool same_tokens = info.n == b->n;
    for (int p = 0; same_tokens && p < info.n; p++)
        same_tokens = seq[p] && seq[p]->token == b->tokens[p];
    if (straight && ed.only_moved)
        FUZZ_CHECK(reproduced && same_tokens && s.positions == b->n);
    if (straight && !all_positions_kept(b, &ed))
        FUZZ_CHECK(!checked_all);
    if (checked_all)
        FUZZ_CHECK(info.n == b->n && s.positions == info.n);
    if (checked_all && straight)
        FUZZ_CHECK(same_tokens);
    /* the rewound run with lines moved: a record of one branch swapped with the other's
     * at the same position leaves the writer's order intact, so only the links between
     * records (a record's token against the choice of the one before) can tell: such a
     * replay must say the records are not of one run, and never that it reproduced */
    if (checked_all && !straight && ed.only_moved)
        FUZZ_CHECK(same_tokens || (s.unlinked > 0 && !reproduced));
    engine_free(e);
    free(seq);
    trace_reader_free(r);
    free(text);
    return 0;
}
