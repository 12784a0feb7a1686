/* tty_reader.c — readline's keys read from the terminal in bulk (see tty_reader.h). */
#include "config.h"

#include "tty_reader.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <unistd.h>

#if !defined(HAVE_LIBEDIT) && HAVE_DECL_RL_INPUT_AVAILABLE_HOOK
#include <readline/readline.h>

#include "signals.h"

static unsigned char buf[1 << 16]; /* [at, len): read, not yet handed to readline */
static size_t at, len;

/* rl_getc_function: the next byte, reading the terminal when the buffer is empty; EOF
 * at the end of input, on an error, or when asked to quit while waiting (as readline's
 * own rl_getc does for SIGTERM and SIGHUP). */
static int buffered_getc(FILE *f)
{
    while (at == len) {
        ssize_t n = read(fileno(f), buf, sizeof buf);
        if (n > 0) {
            at = 0;
            len = (size_t)n;
        } else if (n < 0 && errno == EINTR && !signals_quit) {
#if HAVE_DECL_RL_CHECK_SIGNALS
            rl_check_signals(); /* readline's own: a resize, as its rl_getc would */
#endif
            continue;
        } else {
            return EOF;
        }
    }
    return buf[at++];
}

/* rl_input_available_hook: bytes in the buffer, or on the terminal within readline's
 * keyboard timeout (what readline waits for the rest of an escape sequence). */
static int buffered_available(void)
{
    if (at < len)
        return 1;
    int us = rl_set_keyboard_input_timeout(0); /* the timeout asked for, put back */
    rl_set_keyboard_input_timeout(us);
    struct pollfd p = {.fd = fileno(rl_instream ? rl_instream : stdin), .events = POLLIN};
    return poll(&p, 1, us > 0 ? (us + 999) / 1000 : 0) > 0;
}

void tty_reader_install(void)
{
    at = len = 0;
    rl_getc_function = buffered_getc;
    rl_input_available_hook = buffered_available;
}

bool tty_reader_pending(void)
{
    return at < len;
}

#else

void tty_reader_install(void)
{
}

bool tty_reader_pending(void)
{
    return false;
}

#endif
