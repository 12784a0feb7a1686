/* signals.h — how the program takes signals. The one-shot modes (generate,
 * perplexity) install signals_install_sigint: SIGINT sets signals_interrupted. The interactive
 * front ends (the REPL and the TUI) install signals_install:
 *
 *   SIGINT           stops the reply being written (signals_interrupted); a second one
 *                    within a second asks to quit (signals_quit = SIGINT)
 *   SIGTERM, SIGHUP  ask to quit (signals_quit = the signal)
 *   SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT
 *                    a crash: the terminal is put back (the bytes registered with
 *                    signals_terminal_reset, then the terminal modes saved at
 *                    install time), then the signal takes its previous course (the
 *                    default action, or a sanitizer's own handler)
 *
 * The handlers only set flags and call async-signal-safe functions (clock_gettime,
 * write, tcsetattr, sigaction, raise); the front end polls the flags between tokens
 * and in its input loop, and on signals_quit restores the terminal, saves the chat
 * and exits with 128 + the signal number. */
#ifndef LLMCHAT_CLI_SIGNALS_H
#define LLMCHAT_CLI_SIGNALS_H

#include <signal.h>

/* Set by SIGINT (either handler); the front ends poll it between tokens and clear it. */
extern volatile sig_atomic_t signals_interrupted;

/* The one-shot modes' handler: SIGINT sets signals_interrupted, nothing else. */
void signals_install_sigint(void);

/* Set to the signal that asks to quit (SIGTERM, SIGHUP, or SIGINT twice within a
 * second); 0 while none has. */
extern volatile sig_atomic_t signals_quit;

/* Installs the handlers (without SA_RESTART, so a blocking read returns EINTR and
 * the front end sees the flags at once) and saves the terminal modes of stdin when it
 * is a terminal. */
void signals_install(void);

/* Bytes a crash writes to stdout before restoring the terminal modes, e.g. the TUI's
 * "leave the alternate screen, show the cursor, mouse reporting off". Copied (at most
 * 255 bytes); NULL or "" for none. */
void signals_terminal_reset(const char *bytes);

/* "SIGTERM", "SIGHUP", "SIGINT" (twice) ...: for the exit message. */
const char *signals_name(int sig);

#endif
