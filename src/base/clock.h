/* clock.h — the monotonic clock every timing in llmchat reads (engine statistics, the
 * barrier's sleep accounting, the TUI's frame pacing, the benchmark). */
#ifndef LLMCHAT_CLOCK_H
#define LLMCHAT_CLOCK_H

/* Nanoseconds of CLOCK_MONOTONIC. */
unsigned long long clock_ns(void);

/* Milliseconds of CLOCK_MONOTONIC. */
double clock_ms(void);

#endif
