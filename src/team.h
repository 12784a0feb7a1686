/* team.h — how many threads the next token's forward pass uses, when other programs
 * take CPUs: one fewer after a token whose threads were preempted, one more after a
 * run of tokens whose threads were not.
 *
 * A token's threads meet at a barrier dozens of times; a thread that loses its CPU to
 * another process holds every barrier until the scheduler gives it one back. The sign
 * is the threads' involuntary context switches during the token (the kernel took the
 * CPU from a runnable thread), not time asleep at barriers (on an idle machine, uneven
 * shares of a matrix put threads to sleep too). Stepping one thread at a time keeps the
 * team as large as the free CPUs allow (15 of 16 beside one busy process), and a
 * machine that is idle again gets all threads back within a few dozen tokens. Owns
 * nothing; not thread-safe (one forward pass at a time). */
#ifndef LLMCHAT_TEAM_H
#define LLMCHAT_TEAM_H

enum {
    TEAM_PREEMPTED = 2,  /* preemptions in a token that make it starved */
    TEAM_GOOD_RUN = 8,   /* tokens in a row not starved before one more thread */
};

typedef struct {
    int size;  /* threads for the next token (0: not started, the maximum) */
    int good;  /* tokens in a row not starved at this size */
} team;

/* The threads the next token uses, at most `max` (>= 1). */
int team_threads(const team *t, int max);
/* After a token on `used` threads (at most max) whose threads were preempted
 * `preempted` times in all: sets the next token's size. */
void team_update(team *t, int used, int max, long preempted);
/* This thread's involuntary context switches so far (0 where the system does not
 * say): the difference over a token is its preemptions. */
long team_preemptions(void);

#endif
