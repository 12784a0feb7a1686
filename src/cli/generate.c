/* generate.c — `-m generate`: one-shot continuation of a prompt, printed as
 * llama2.c's run prints it (the prompt, then the continuation, then a newline), with
 * a speed summary on stderr; with --lookup or --draft FILE, speculative decoding
 * (engine_step_guessed) that prints the same tokens. Stops at BOS or an end-of-generation token (EOS, EOT), after -n new tokens, at the end of
 * the context, or on Ctrl-C (the session installed its handler). */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "session.h"
#include "signals.h"
#include "engine.h"
#include "textfmt.h"
#include "std_streams.h"

/* Writes the bytes token adds after prev, made safe for a terminal. */
static void put_token(textfmt_stream *ts, const tokenizer *tok, int prev, int token)
{
    char piece[TOKENIZER_PIECE_MAX + 1], safe[4 * TOKENIZER_PIECE_MAX + 16];
    size_t n = tokenizer_decode(tok, prev, token, piece, sizeof piece);
    size_t m = textfmt_stream_put(ts, piece, n, safe, sizeof safe);
    fwrite(safe, 1, m, stdout);
}

int cli_generate(session *s)
{
    const app_options *o = s->o;
    const tokenizer *tok = s->tok;
    engine *e = s->e;
    llm_err err;
    int n;
    bool bos;
    int *ids = session_encode_prompt(o, tok, &n, &bos);
    if (!ids)
        return 1;
    int rc = 0;
    if (n > engine_ctx(e)) {
        fprintf(stderr, "llmchat: the prompt is %d tokens (with BOS), but the context holds %d "
                        "(see -c)\n", n, engine_ctx(e));
        rc = 1;
        goto out;
    }
    if (engine_prefill(e, ids, n, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        rc = 1;
        goto out;
    }
    textfmt_stream ts = {0};
    for (int i = bos ? 1 : 0; i < n; i++)
        put_token(&ts, tok, i > 0 ? ids[i - 1] : -1, ids[i]);
    if (!std_streams_flush()) { /* said by main, at the end */
        rc = 1;
        goto out;
    }

    int steps = o->steps < 0 ? GENERATE_STEPS_DEFAULT : o->steps == 0 ? engine_ctx(e) : o->steps;
    engine_guesser guesser = s->guesser; /* --lookup, --draft (session.c) */
    void *guesser_user = s->guesser_user;

    int prev = ids[n - 1], generated = 0;
    bool done = false;
    while (!done && generated < steps && !signals_interrupted) {
        int got[ENGINE_GUESS_MAX + 1], n_got;
        int guesses = steps - generated - 1 < o->draft_max ? steps - generated - 1 : o->draft_max;
        /* without a guesser, engine_step */
        llm_status st = engine_step_guessed(e, guesser, guesser_user, guesses, got, &n_got, &err);
        if (st == LLM_ERR_CONTEXT)
            break; /* the context is full: the generation ends there */
        if (st != LLM_OK) {
            putchar('\n');
            fprintf(stderr, "llmchat: %s\n", err.text);
            rc = 1;
            break;
        }
        for (int i = 0; i < n_got && !done; i++) {
            int next = got[i];
            /* EOS, or another end of generation such as <|eot_id|>; the guesses after it
             * (accepted, so the model would have gone on so) are not the output */
            done = next == tokenizer_bos(tok) || tokenizer_is_eog(tok, next);
            if (done)
                break;
            put_token(&ts, tok, prev, next);
            prev = next;
            generated++;
        }
        if (!std_streams_flush()) { /* nowhere to write to: said by main, at the end */
            rc = 1;
            break;
        }
    }
    putchar('\n');
    fflush(stdout);

    const engine_stats *stats = engine_get_stats(e);
    fprintf(stderr, "prompt: %d tok, %.1f tok/s; generated: %d tok, %.1f tok/s%s\n",
            stats->prefill_tokens,
            stats->prefill_ms > 0 ? stats->prefill_tokens * 1e3 / stats->prefill_ms : 0.0, generated,
            stats->decode_ms > 0 ? stats->decode_tokens * 1e3 / stats->decode_ms : 0.0,
            signals_interrupted ? " (interrupted)" : "");
    session_say_guesses(s);
out:
    free(ids);
    return rc;
}
