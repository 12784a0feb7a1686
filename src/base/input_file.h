/* input_file.h — opening a file the program reads, and remembering that it did.
 *
 * Only a regular file is opened: a FIFO, a directory, a device or a socket gets a
 * refusal that says what it is, instead of a read that blocks forever (a FIFO with no
 * writer) or fails strangely. The open itself does not block (O_NONBLOCK, cleared
 * once the file is known to be regular), so a FIFO put there between a check and the
 * open cannot hang the program either.
 *
 * Every file opened here is noted by its device and inode: output_file.h refuses to
 * write over a file this run reads, whatever name it is given (a hard link, a path
 * through another directory). The notes live until the process ends, each with a
 * descriptor kept on the file (the first 256), so that a file removed meanwhile cannot
 * hand its inode number to a new one; they are not thread-safe (the program opens its
 * files from one thread). */
#ifndef LLMCHAT_BASE_INPUT_FILE_H
#define LLMCHAT_BASE_INPUT_FILE_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

/* Opens path for reading (close-on-exec) when it is a regular file, and notes it. On
 * failure -1, errno set and *why (when why is not NULL) a static text saying what went
 * wrong: strerror(errno), or "is a FIFO (named pipe), not a regular file", and so on. */
int input_file_open(const char *path, const char **why);

/* input_file_open as a stdio stream ("rb"); NULL on failure, with *why. */
FILE *input_file_fopen(const char *path, const char **why);
/* The same for a document the user loads to change and may save over again (a chat):
 * it is not noted, so an output may replace it. */
FILE *input_file_fopen_document(const char *path, const char **why);
/* The same for text read as a stream (-f FILE): a FIFO or a character device is taken
 * too (a pipe from another program, as the shell's <(...) gives), and read as it
 * comes; a regular file is noted. */
FILE *input_file_fopen_stream(const char *path, const char **why);

/* Notes a file opened some other way (fd open on it) as read by this run. */
void input_file_note_fd(int fd);

/* Whether this run has read the file with that device and inode. */
bool input_file_was_read(dev_t dev, ino_t ino);

/* What the file mode says a non-regular file is ("a directory", "a FIFO (named pipe)",
 * "a character device", ...), or NULL for a regular file. */
const char *input_file_kind(mode_t mode);

#endif
