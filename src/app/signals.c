/* signals.c — every signal handler of the program (see signals.h): the one-shot
 * modes' SIGINT, and the interactive front ends' SIGINT, SIGTERM, SIGHUP and crash
 * path.
 *
 * Owns the handlers, the flags they set, the saved terminal modes and the crash
 * path's reset bytes. Both SIGINT handlers set signals_interrupted, so the code that stops
 * a reply polls one flag whichever handler set it. Everything a handler
 * touches is a sig_atomic_t, a buffer filled before the handlers were installed, or
 * an async-signal-safe call. */
#define _POSIX_C_SOURCE 200809L
#include "signals.h"

#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>


volatile sig_atomic_t signals_quit;
volatile sig_atomic_t signals_interrupted;

static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
enum { N_CRASH = sizeof crash_signals / sizeof crash_signals[0] };

static struct sigaction previous[N_CRASH]; /* what each crash signal did before us */
static struct termios saved_modes;
static volatile sig_atomic_t have_modes;
static char reset_bytes[256];
static volatile sig_atomic_t reset_len;
static volatile sig_atomic_t last_int_sec = -10; /* CLOCK_MONOTONIC seconds ... */
static volatile sig_atomic_t last_int_ms;        /* ... and milliseconds of the last SIGINT */

void signals_terminal_reset(const char *bytes)
{
    reset_len = 0;
    size_t n = bytes ? strlen(bytes) : 0;
    if (n >= sizeof reset_bytes)
        n = sizeof reset_bytes - 1;
    memcpy(reset_bytes, bytes ? bytes : "", n);
    reset_len = (sig_atomic_t)n;
}

static void put_terminal_back(void)
{
    if (reset_len > 0) {
        ssize_t w = write(STDOUT_FILENO, reset_bytes, (size_t)reset_len);
        (void)w;
    }
    if (have_modes)
        tcsetattr(STDIN_FILENO, TCSANOW, &saved_modes);
}

static void on_int(int sig)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long ms = (long)(now.tv_nsec / 1000000);
    long since = ((long)now.tv_sec - (long)last_int_sec) * 1000 + (ms - (long)last_int_ms);
    if (since >= 0 && since < 1000)
        signals_quit = sig;
    last_int_sec = (sig_atomic_t)now.tv_sec;
    last_int_ms = (sig_atomic_t)ms;
    signals_interrupted = 1;
}

static void on_quit(int sig)
{
    signals_quit = sig;
    signals_interrupted = 1;
}

static void on_crash(int sig, siginfo_t *info, void *context)
{
    put_terminal_back();
    for (int i = 0; i < N_CRASH; i++) {
        if (crash_signals[i] != sig)
            continue;
        sigaction(sig, &previous[i], NULL);
        if ((previous[i].sa_flags & SA_SIGINFO) && previous[i].sa_sigaction) {
            previous[i].sa_sigaction(sig, info, context); /* e.g. ASan's report */
            return;
        }
        if (!(previous[i].sa_flags & SA_SIGINFO) && previous[i].sa_handler != SIG_DFL &&
            previous[i].sa_handler != SIG_IGN) {
            previous[i].sa_handler(sig);
            return;
        }
    }
    /* The default action: pending until this handler returns (the signal is blocked
     * meanwhile); a fault from an instruction simply happens again. */
    raise(sig);
}

static void on_sigint(int sig)
{
    (void)sig;
    signals_interrupted = 1;
}

void signals_install_sigint(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: a blocking read returns so the flag is seen */
    sigaction(SIGINT, &sa, NULL);
}

void signals_install(void)
{
    if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved_modes) == 0)
        have_modes = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_int;
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = on_quit;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    struct sigaction crash;
    memset(&crash, 0, sizeof crash);
    sigemptyset(&crash.sa_mask);
    crash.sa_sigaction = on_crash;
    crash.sa_flags = SA_SIGINFO;
    for (int i = 0; i < N_CRASH; i++)
        sigaction(crash_signals[i], &crash, &previous[i]);
}

const char *signals_name(int sig)
{
    switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
    }
}
