/* tty_reader.h — GNU readline's keys read from the terminal as many at a time as one
 * read() brings. Readline's own rl_getc reads one byte a system call: a pasted megabyte
 * took seconds of system time in `-m chat`. Installed, readline takes its bytes from a
 * buffer this fills (rl_getc_function), and asks it whether more input waits
 * (rl_input_available_hook: the buffer, else the terminal within readline's keyboard
 * timeout, so an escape sequence split across reads is still one key).
 *
 * A select() or poll() on the terminal does not see the bytes in the buffer: a loop
 * that waits for input asks tty_reader_pending first. Not with libedit, nor with a
 * readline without rl_input_available_hook: there tty_reader_install changes nothing. */
#ifndef LLMCHAT_CLI_TTY_READER_H
#define LLMCHAT_CLI_TTY_READER_H

#include <stdbool.h>

/* Readline reads through the buffer from now on (where it can: see above). */
void tty_reader_install(void);
/* Bytes read from the terminal and not yet handed to readline. */
bool tty_reader_pending(void);

#endif
