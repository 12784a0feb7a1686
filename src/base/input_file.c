/* input_file.c — opening regular files only, and the device and inode of each file
 * read (input_file.h).
 *
 * Owns the list of files read and a descriptor on each (grown as needed, kept until
 * exit). */
#define _POSIX_C_SOURCE 200809L
#include "input_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A file read: its device and inode, and a descriptor kept open on it, which keeps the
 * inode from being given to another file should this one be removed (an inode number
 * freed and reused would otherwise make a new file look like one read). */
typedef struct {
    dev_t dev;
    ino_t ino;
    int fd;
} file_id;

/* Files kept open at most; past it the inode is noted alone. */
enum { PINNED_MAX = 256 };

static file_id *read_ids;
static size_t n_read, cap_read;

static void note(int fd, dev_t dev, ino_t ino)
{
    if (input_file_was_read(dev, ino))
        return;
    if (n_read == cap_read) {
        size_t cap = cap_read ? 2 * cap_read : 16;
        file_id *grown = realloc(read_ids, sizeof *grown * cap);
        if (!grown)
            return; /* the output check then knows one file less: it still refuses the
                       files noted before */
        read_ids = grown;
        cap_read = cap;
    }
    int pin = n_read < PINNED_MAX ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
    read_ids[n_read++] = (file_id){dev, ino, pin};
}

bool input_file_was_read(dev_t dev, ino_t ino)
{
    for (size_t i = 0; i < n_read; i++)
        if (read_ids[i].dev == dev && read_ids[i].ino == ino)
            return true;
    return false;
}

void input_file_note_fd(int fd)
{
    struct stat st;
    if (fstat(fd, &st) == 0)
        note(fd, st.st_dev, st.st_ino);
}

const char *input_file_kind(mode_t mode)
{
    if (S_ISREG(mode))
        return NULL;
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO (named pipe)";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a regular file";
}

/* How a file may be opened: a regular file only (noted or not), or a stream too. */
typedef enum { OPEN_NOTED, OPEN_DOCUMENT, OPEN_STREAM } open_kind;

/* input_file_open with `how`. */
static int open_regular(const char *path, const char **why, open_kind how)
{
    static char text[96];
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (why)
            *why = strerror(errno);
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        if (why)
            *why = strerror(e);
        return -1;
    }
    const char *kind = input_file_kind(st.st_mode);
    if (how == OPEN_STREAM && S_ISFIFO(st.st_mode)) {
        /* a stream asked for: wait for its writer, as cat does */
        close(fd);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 && why)
            *why = strerror(errno);
        return fd;
    }
    if (how == OPEN_STREAM && S_ISCHR(st.st_mode))
        kind = NULL;
    if (kind) {
        close(fd);
        snprintf(text, sizeof text, "is %s, not a regular file", kind);
        if (why)
            *why = text;
        errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        return -1;
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0)
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    if (how != OPEN_DOCUMENT && S_ISREG(st.st_mode))
        note(fd, st.st_dev, st.st_ino);
    return fd;
}

int input_file_open(const char *path, const char **why)
{
    return open_regular(path, why, OPEN_NOTED);
}

static FILE *fopen_regular(const char *path, const char **why, open_kind how)
{
    int fd = open_regular(path, why, how);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        close(fd);
        errno = e;
        if (why)
            *why = strerror(e);
    }
    return f;
}

FILE *input_file_fopen(const char *path, const char **why)
{
    return fopen_regular(path, why, OPEN_NOTED);
}

FILE *input_file_fopen_document(const char *path, const char **why)
{
    return fopen_regular(path, why, OPEN_DOCUMENT);
}

FILE *input_file_fopen_stream(const char *path, const char **why)
{
    return fopen_regular(path, why, OPEN_STREAM);
}
