/* team.h — how many threads the next token's forward pass uses, when other programs
 * take CPUs: one fewer after a token whose threads waited too long for a CPU, one more
 * after a run of tokens whose threads did not.
 *
 * A token's threads meet at a barrier dozens of times; a thread that waits for a CPU
 * (another program runs on it) holds every barrier until the scheduler runs it again.
 * The sign is that wait itself, the time the threads were runnable but not running
 * (the kernel's schedstat run delay), as a share of the token: not time asleep at
 * barriers (on an idle machine uneven shares of a matrix put threads to sleep too), and
 * not the number of preemptions (a kernel thread takes a CPU for microseconds many
 * times a second). Stepping one thread at a time keeps the team as large as the free
 * CPUs allow (15 of 16 beside one busy program), and an idle machine gets a thread back
 * every TEAM_GOOD_RUN tokens. Owns nothing; not thread-safe (one forward pass at a
 * time). */
#ifndef LLMCHAT_TEAM_H
#define LLMCHAT_TEAM_H

enum {
    TEAM_WAIT_PART = 8, /* a token is starved when its threads' waits for a CPU, summed,
                           exceed 1/TEAM_WAIT_PART of its wall time */
    TEAM_GOOD_RUN = 8,  /* tokens in a row not starved before one more thread */
};

typedef struct {
    int size;  /* threads for the next token (0: not started, the maximum) */
    int good;  /* tokens in a row not starved at this size */
} team;

/* The threads the next token uses, at most `max` (>= 1). */
int team_threads(const team *t, int max);
/* After a token of token_ns wall time on `used` threads (at most max) that waited
 * waited_ns for a CPU in all: sets the next token's size. */
void team_update(team *t, int used, int max, long long waited_ns, long long token_ns);
/* Nanoseconds this thread has been runnable but waiting for a CPU, so far: the kernel's
 * run delay (/proc/thread-self/schedstat), else its involuntary context switches times
 * a scheduler slice, else 0. The difference over a token is its wait. */
long long team_cpu_wait_ns(void);

#endif
