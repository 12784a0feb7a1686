/* session.h — the one front-end setup (session.c): everything a mode that runs a
 * model opens, in one order, and closes again; and what the front ends share while it
 * runs: the live settings the session holds, autosave, quitting on a signal, the
 * input text, the paths of state files.
 *
 * session_open's order, each step only where the mode needs it (session_needs):
 *
 *   1. the kernels (kernels_init: the table's name kept for the trace and --replay)
 *   2. the threads (-T, else the CPUs this process may run on)
 *   3. --resume's saved chat (its model, tokenizer, settings)
 *   4. what the mode reads first (--replay's trace, which can name the model)
 *   5. the model (discover.c finds it), its tokenizer, its chat template, and the note
 *      that says which model runs and why
 *   6. the terminal the TUI needs
 *   7. the engine (the sampler with the options' settings), the control vectors, and
 *      speculative decoding's guesser (--lookup; --draft FILE: its model and engine)
 *   8. the chat over the engine (chat, tui), guessing with that guesser
 *   9. --trace, attached to the engine as its observer
 *  10. autosave (chat, tui)
 *  11. signal handling (Ctrl-C stops; in chat and tui also SIGTERM, SIGHUP, Ctrl-C
 *      twice quit after saving)
 *
 * session_close undoes them in the opposite order. Each function that can fail prints
 * its message (this is the program layer). */
#ifndef LLMCHAT_SESSION_H
#define LLMCHAT_SESSION_H

#include <stdbool.h>
#include <stddef.h>

#include "autosave.h"
#include "chat.h"
#include "engine.h"
#include "model.h"
#include "options.h"
#include "settings.h"
#include "template.h"
#include "tokenizer.h"

struct trace_reader;
struct trace_writer;

/* How a mode takes signals (signals.h). */
typedef enum {
    SESSION_SIGNALS_DEFAULT = 0, /* left as they are: Ctrl-C ends the program (replay) */
    SESSION_SIGNALS_STOP,        /* Ctrl-C sets signals_interrupted: the work ends early
                                    (generate, perplexity) */
    SESSION_SIGNALS_QUIT,        /* the interactive ones (signals_install): Ctrl-C stops a
                                    reply; SIGTERM, SIGHUP or Ctrl-C twice quit (chat, tui) */
} session_signals;

/* What a mode needs set up; main.c's table of modes gives one per front end. */
typedef struct {
    bool engine;             /* an engine over the model (all but tokenize) */
    bool chat;               /* a chat over the engine, autosaved (chat, tui) */
    bool terminal;           /* stdin and stdout must be a terminal (tui) */
    int top_n;               /* candidates per record (a trace gets 10 at least) */
    bool attention;          /* capture attention (else only with --trace-attn) */
    bool record_prompt;      /* prompt positions' candidates at prefill (else only with
                                --trace) */
    session_signals signals;
    /* What the mode reads before the model is found (--replay's trace, which can name
     * it), or NULL. Returns 0, or the exit status with a message printed. */
    int (*prepare)(app_options *o, struct trace_reader **replay);
} session_needs;

typedef struct session {
    app_options *o;                 /* borrowed; steps 3-5 settle what it leaves open */
    const session_needs *needs;     /* borrowed */
    const char *kernels;            /* the kernel table in use ("avx2"), static */
    char threads_said[160];         /* -T oversubscribes: the sentence, else "" */
    char note[4600];                /* which model runs and why (and in chat and tui with
                                       which template): the first notice, the banner */
    struct trace_reader *replay;    /* --replay's trace (owned), else NULL */
    model *m;                       /* owned */
    tokenizer *tok;                 /* owned */
    chat_template *tmpl;            /* owned */
    engine *e;                      /* owned; NULL for tokenize */
    chat *c;                        /* owned; chat and tui only */
    engine_guesser guesser;         /* --lookup or --draft: speculative decoding's guesses
                                       (engine.h), else NULL ... */
    void *guesser_user;             /* ... and what it is given (the draft) */
    const char *guesser_name;       /* "lookup", "draft", or NULL */
    model *draft_model;             /* owned; --draft's model, else NULL */
    struct draft *draft;            /* owned; its engine, else NULL */
    struct trace_writer *trace;     /* owned; NULL without --trace */
    autosave_file save;             /* chat and tui: this session's saved-chat file */
    /* The live settings besides the sampler's, which only the sampler holds
     * (engine_sampler_config): /set and the TUI's keys change them here. */
    int steps;                      /* most tokens per reply; 0 = until the model ends it */
    int slow_motion_ms;             /* the TUI waits this long after each reply token */
    bool failed;                    /* the run failed (its front end's status not 0): a
                                       trace with no record is not written (session_close) */
} session;

/* Sets s up for o's mode as needs says, in the order above. Returns 0, or the exit
 * status after saying why; either way session_close frees what was opened. */
int session_open(session *s, app_options *o, const session_needs *needs);

/* Finishes the engine's last record (the trace gets it), closes the trace and frees
 * everything, in the opposite order. Returns 0, or 1 when writing the trace failed
 * (said). */
int session_close(session *s);

/* With --lookup or --draft: how speculative decoding went, one line on stderr ("lookup:
 * 40 guessed, 31 accepted (78%) in 12 checks"). Nothing without a guesser. */
void session_say_guesses(const session *s);

/* Is there a terminal on stdin and stdout? Says what to do instead when not (the TUI
 * needs one). */
bool session_have_terminal(void);

/* The live settings in force: the sampler's (asked of the engine) and the session's. */
live_settings session_settings(const session *s);
/* Puts ls in force: the sampler's from the next token on, the rest in s. */
void session_set_settings(session *s, const live_settings *ls);

/* --resume: loads the saved chat into the session's chat through the front end's
 * command host (as /load does, so the front end shows it and says what was loaded)
 * and saves to that file from then on. True when there is none to load, or it was
 * loaded. */
struct command_host;
bool session_resume(session *s, struct command_host *h);

/* After a signal asked to quit (signals_quit): saves the chat and says so on stderr
 * ("llmchat: quitting on SIGTERM; the chat is saved in FILE"); s NULL (the TUI on a
 * trace): only says it. Returns the exit status, 128 + the signal; 0 (and does
 * nothing) when no signal asked. */
int session_quit_on_signal(session *s);

/* The most bytes of text -f reads (1 GiB): more is refused, not read. */
#define SESSION_INPUT_MAX (1 << 30)

/* Reads the whole input text of -f FILE (or returns a copy of -i TEXT), up to its first
 * NUL byte (said in a warning) and at most SESSION_INPUT_MAX bytes. The caller frees
 * it. NULL with a message printed on failure. */
char *session_read_input(const app_options *o);

/* Tokenizes text, with a leading BOS when bos is true. Returns a malloc'd array and its
 * length in *n, or NULL with a message printed. */
int *session_encode_text(const tokenizer *tok, const char *text, bool bos, int *n);
/* The same with the input (-i/-f). */
int *session_encode_input(const app_options *o, const tokenizer *tok, bool bos, int *n);
/* The input as a prompt the model runs (-m generate, -m tensors): a leading BOS when the
 * vocabulary asks for one (llama.cpp's rule; SmolLM2's does not), and BOS alone for an
 * empty input, as the model needs a first position. *bos says whether ids[0] is that
 * BOS (bos may be NULL). NULL with a message printed on failure. */
int *session_encode_prompt(const app_options *o, const tokenizer *tok, int *n, bool *bos);

/* The path of state file NAME: $XDG_STATE_HOME/llmchat/NAME (an absolute
 * $XDG_STATE_HOME), else $HOME/.local/state/llmchat/NAME, with its directories made
 * (mode 0700). malloc'd; NULL when neither variable is set or out of memory. */
char *session_state_file(const char *name);
/* The directories above the file path made where missing (mkdir -p, mode 0700); 0, or
 * the errno of the one that could not be made (a read-only file system, no permission),
 * so that a failed save can say why rather than "No such file or directory". */
int session_make_parents(const char *path);

#endif
