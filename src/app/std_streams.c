/* std_streams.c — standard input, output and error kept as a Unix tool keeps them
 * (see std_streams.h). */
#include "std_streams.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void std_streams_open(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
            continue;
        /* the lowest free number: fd itself */
        int got = open("/dev/null", fd == STDIN_FILENO ? O_WRONLY : O_RDONLY);
        if (got != fd && got >= 0)
            close(got);
    }
}

static int lost_why; /* errno of the first write to standard output that failed */

bool std_streams_flush(void)
{
    errno = 0;
    if (fflush(stdout) != 0 && lost_why == 0)
        lost_why = errno;
    return !ferror(stdout);
}

int std_streams_close(const char *program, int rc)
{
    bool lost = !std_streams_flush();
    /* the failed write's errno may be gone (a long fprintf flushes inside): an empty
     * write finds it again where the write itself fails (a full device such as
     * /dev/full, a descriptor not open for writing); a full file system answers an
     * empty write with 0, and the message then gives no reason */
    if (lost && lost_why == 0 && write(STDOUT_FILENO, "", 0) < 0)
        lost_why = errno;
    errno = 0;
    if (fclose(stdout) != 0) {
        lost = true;
        if (lost_why == 0)
            lost_why = errno;
    }
    if (!lost)
        return rc;
    if (lost_why != EPIPE) {
        if (lost_why != 0)
            fprintf(stderr, "%s: standard output: %s\n", program, strerror(lost_why));
        else
            fprintf(stderr, "%s: standard output: not all of it could be written\n", program);
    }
    return rc != 0 ? rc : 1;
}
