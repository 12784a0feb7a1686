/* std_streams.h — standard input, output and error kept as a Unix tool keeps them.
 *
 * A program started with one of them closed would hand that number to the first file
 * it opens, and its output (or another's input) would go there: a closed one is
 * opened on /dev/null the other way round (output read-only, input write-only), so
 * that it stays as unusable as it was and no file takes its place. Output that could
 * not be written is said once, at the end, with a non-zero exit status. */
#ifndef LLMCHAT_APP_STD_STREAMS_H
#define LLMCHAT_APP_STD_STREAMS_H

#include <stdbool.h>

/* Opens each of descriptors 0, 1 and 2 that is closed on /dev/null, unusable as
 * said above. Call first in main, before anything opens a file. */
void std_streams_open(void);

/* Standard output flushed: false when something written to it was lost (the system's
 * reason kept for std_streams_close). For loops that write as they go and should stop
 * writing to nowhere. */
bool std_streams_flush(void);

/* Standard output flushed and closed: when anything written to it was lost, says so
 * on standard error as "PROGRAM: standard output: REASON" (nothing for a reader that
 * went away, EPIPE) and returns 1 if rc was 0. Otherwise returns rc. */
int std_streams_close(const char *program, int rc);

#endif
