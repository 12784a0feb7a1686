/* output_file.c — checked places and temporary files renamed into place
 * (output_file.h).
 *
 * Owns each open output's stream and names until it is committed or abandoned. */
#define _XOPEN_SOURCE 700
#include "output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "input_file.h"

struct output_file {
    char *target; /* the name renamed over (a link's target) */
    char *temp;   /* NULL when writing to a FIFO or a character device directly */
    char *place;  /* target's directory made absolute, and its name: the key of open_places */
    FILE *f;
};

/* The places of the outputs open now (a trace open for the whole run, say): another
 * output named for one of them would be replaced by it when it is committed. */
static char **open_places;
static int n_open_places;

/* The name to rename over: path, or the file a symbolic link at path leads to (the
 * link followed as the system follows it, to a file that may not exist yet: a dangling
 * link's target is where the file goes, as with a shell's >). */
static char *target_of(const char *path)
{
    char *cur = strdup(path);
    for (int hops = 0; cur && hops < 40; hops++) {
        struct stat st;
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode))
            return cur;
        char link[PATH_MAX];
        ssize_t n = readlink(cur, link, sizeof link - 1);
        if (n < 0)
            return cur;
        link[n] = '\0';
        char *next;
        const char *slash = strrchr(cur, '/');
        if (link[0] == '/' || !slash) {
            next = strdup(link);
        } else { /* relative to the link's directory */
            size_t dir = (size_t)(slash - cur) + 1;
            next = malloc(dir + (size_t)n + 1);
            if (next) {
                memcpy(next, cur, dir);
                memcpy(next + dir, link, (size_t)n + 1);
            }
        }
        free(cur);
        cur = next;
    }
    return cur; /* a loop: the open fails on it and says so */
}

/* target's place: its directory's real path and its name ("/abs/dir/name"), so that
 * two names of one place compare equal; the target itself when its directory does not
 * resolve. */
static char *place_of(const char *target)
{
    const char *slash = strrchr(target, '/');
    char *dir = slash ? strndup(target, slash == target ? 1 : (size_t)(slash - target)) : strdup(".");
    char *real = dir ? realpath(dir, NULL) : NULL;
    free(dir);
    if (!real)
        return strdup(target);
    const char *name = slash ? slash + 1 : target;
    size_t n = strlen(real) + strlen(name) + 2;
    char *place = malloc(n);
    if (place)
        snprintf(place, n, "%s%s%s", real, strcmp(real, "/") ? "/" : "", name);
    free(real);
    return place;
}

static bool place_open(const char *place)
{
    for (int i = 0; place && i < n_open_places; i++)
        if (!strcmp(open_places[i], place))
            return true;
    return false;
}

static void place_forget(const char *place)
{
    for (int i = 0; place && i < n_open_places; i++)
        if (open_places[i] == place) {
            open_places[i] = open_places[--n_open_places];
            return;
        }
}

/* Places written directly, as a stream: a FIFO (another process reads it) or a
 * character device (/dev/null, a terminal). */
static bool is_stream(mode_t mode)
{
    return S_ISFIFO(mode) || S_ISCHR(mode);
}

llm_status output_file_check(const char *path, const char *what, llm_err *err)
{
    struct stat st;
    if (!*path)
        return llm_fail(err, LLM_ERR_ARG, "%s: an empty file name", what);
    if (stat(path, &st) != 0) {
        if (errno == ENOENT) /* a new file; its directory is checked by the open */
            return LLM_OK;
        return llm_fail(err, LLM_ERR_IO, "cannot write %s to %s: %s", what, path,
                        strerror(errno));
    }
    const char *kind = input_file_kind(st.st_mode);
    if (kind && !is_stream(st.st_mode))
        return llm_fail(err, LLM_ERR_ARG, "cannot write %s to %s: it is %s", what, path, kind);
    if (input_file_was_read(st.st_dev, st.st_ino))
        return llm_fail(err, LLM_ERR_ARG,
                        "will not write %s to %s: this run reads that file (it would be "
                        "replaced); give another name", what, path);
    if (!is_stream(st.st_mode) && access(path, W_OK) != 0 && errno == EACCES)
        return llm_fail(err, LLM_ERR_ARG, "will not write %s to %s: the file is "
                        "write-protected (as a shell's > would not); give another name, or "
                        "make it writable", what, path);
    return LLM_OK;
}

/* Whether path names the place of an output open now (the run would replace what is
 * written there when it commits that one). */
static llm_status check_not_open(const char *path, const char *what, llm_err *err)
{
    char *target = target_of(path);
    char *place = target ? place_of(target) : NULL;
    bool taken = place_open(place);
    free(target);
    free(place);
    if (taken)
        return llm_fail(err, LLM_ERR_ARG, "will not write %s to %s: this run is writing that "
                        "file already (a trace, say), and would replace it; give another name",
                        what, path);
    return LLM_OK;
}

llm_status output_file_check_not(const char *path, const char *what, const char *input,
                                 llm_err *err)
{
    struct stat a, b;
    if (input && stat(path, &a) == 0 && stat(input, &b) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino)
        return llm_fail(err, LLM_ERR_ARG,
                        "will not write %s to %s: this run reads that file (it would be "
                        "replaced); give another name", what, path);
    return output_file_check(path, what, err);
}

/* Creates a new file named target.tmp-XXXXXX (random letters) with mode; its fd. */
static int create_temp(const char *target, char *temp, size_t size, mode_t mode)
{
    static const char letters[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    uint64_t seed = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ (uint64_t)time(NULL) ^
                    (uint64_t)(uintptr_t)temp;
    for (int attempt = 0; attempt < 100; attempt++) {
        char tag[7];
        for (int i = 0; i < 6; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            tag[i] = letters[(seed >> 33) % (sizeof letters - 1)];
        }
        tag[6] = '\0';
        snprintf(temp, size, "%s.tmp-%s", target, tag);
        int fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

/* A FIFO or a character device, written directly: the open does not wait for a reader
 * (a FIFO nobody reads is refused). */
static llm_status open_stream(const char *path, const char *what, output_file **out,
                              llm_err *err)
{
    output_file *o = calloc(1, sizeof *o);
    char *target = o ? strdup(path) : NULL;
    if (!target) {
        free(o);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory writing %s", path);
    }
    int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        llm_status st = errno == ENXIO
                            ? llm_fail(err, LLM_ERR_IO, "cannot write %s to %s: no process is "
                                       "reading that FIFO", what, path)
                            : llm_fail(err, LLM_ERR_IO, "cannot write %s to %s: %s", what, path,
                                       strerror(errno));
        free(o);
        free(target);
        return st;
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0)
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    o->target = target;
    o->f = fdopen(fd, "wb");
    if (!o->f) {
        close(fd);
        free(target);
        free(o);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory writing %s", path);
    }
    *out = o;
    return LLM_OK;
}

llm_status output_file_open(const char *path, const char *what, int mode, output_file **out,
                            llm_err *err)
{
    *out = NULL;
    llm_status st = output_file_check(path, what, err);
    if (st == LLM_OK)
        st = check_not_open(path, what, err);
    if (st != LLM_OK)
        return st;
    struct stat old;
    if (stat(path, &old) == 0 && is_stream(old.st_mode))
        return open_stream(path, what, out, err);
    output_file *o = calloc(1, sizeof *o);
    char *target = o ? target_of(path) : NULL;
    size_t n = target ? strlen(target) + 16 : 0;
    char *temp = n ? malloc(n) : NULL;
    if (!o || !target || !temp) {
        free(o);
        free(target);
        free(temp);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory writing %s", path);
    }
    int fd = create_temp(target, temp, n, (mode_t)mode);
    if (fd >= 0 && stat(target, &old) == 0)
        fchmod(fd, old.st_mode & 07777); /* the mode as it was, not as umask cuts it */
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        int e = errno;
        if (fd >= 0) {
            close(fd);
            unlink(temp);
        }
        st = llm_fail(err, LLM_ERR_IO, "cannot write %s to %s: %s", what, path, strerror(e));
        free(o);
        free(target);
        free(temp);
        return st;
    }
    o->target = target;
    o->temp = temp;
    o->f = f;
    o->place = place_of(target);
    char **grown = o->place ? realloc(open_places, sizeof *grown * (size_t)(n_open_places + 1))
                            : NULL;
    if (grown) { /* without memory for the list, the check above only misses this one */
        open_places = grown;
        open_places[n_open_places++] = o->place;
    }
    *out = o;
    return LLM_OK;
}

FILE *output_file_stream(const output_file *o)
{
    return o->f;
}

const char *output_file_temp_name(const output_file *o)
{
    return o->temp ? o->temp : o->target;
}

const char *output_file_target(const output_file *o)
{
    return o->target;
}

/* fsyncs the directory holding path, so that a rename in it is durable. */
static void sync_directory(const char *path)
{
    char *dir = strdup(path);
    if (!dir)
        return;
    char *slash = strrchr(dir, '/');
    const char *d = ".";
    if (slash == dir)
        d = "/";
    else if (slash) {
        *slash = '\0';
        d = dir;
    }
    int fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(dir);
}

static void output_free(output_file *o)
{
    place_forget(o->place);
    free(o->place);
    free(o->target);
    free(o->temp);
    free(o);
}

llm_status output_file_commit(output_file *o, llm_err *err)
{
    if (!o)
        return LLM_OK;
    llm_status st = LLM_OK;
    if (!o->temp) { /* a stream */
        if (fflush(o->f) != 0 || ferror(o->f))
            st = llm_fail(err, LLM_ERR_IO, "cannot write %s: %s", o->target,
                          strerror(errno ? errno : EIO));
        if (fclose(o->f) != 0 && st == LLM_OK)
            st = llm_fail(err, LLM_ERR_IO, "cannot write %s: %s", o->target, strerror(errno));
        output_free(o);
        return st;
    }
    if (fflush(o->f) != 0 || ferror(o->f) || fsync(fileno(o->f)) != 0)
        st = llm_fail(err, LLM_ERR_IO, "cannot write %s: %s", o->target,
                      strerror(errno ? errno : EIO));
    if (fclose(o->f) != 0 && st == LLM_OK)
        st = llm_fail(err, LLM_ERR_IO, "cannot write %s: %s", o->target, strerror(errno));
    struct stat now;
    if (st == LLM_OK && stat(o->target, &now) == 0 && input_file_was_read(now.st_dev, now.st_ino)) {
        /* read since the open (a chat loaded from that name): keep both */
        st = llm_fail(err, LLM_ERR_ARG, "%s was read by this run since it was named for "
                      "writing: the new file is %s", o->target, o->temp);
        output_free(o);
        return st;
    }
    if (st == LLM_OK && rename(o->temp, o->target) != 0)
        st = llm_fail(err, LLM_ERR_IO, "cannot rename %s to %s: %s", o->temp, o->target,
                      strerror(errno));
    if (st != LLM_OK)
        unlink(o->temp);
    else
        sync_directory(o->target);
    output_free(o);
    return st;
}

void output_file_abandon(output_file *o)
{
    if (!o)
        return;
    fclose(o->f);
    if (o->temp)
        unlink(o->temp);
    output_free(o);
}

llm_status output_file_write(const char *path, const char *what, int mode, output_writer fn,
                             const void *ctx, llm_err *err)
{
    output_file *o;
    llm_status st = output_file_open(path, what, mode, &o, err);
    if (st != LLM_OK)
        return st;
    st = fn(o->f, path, ctx, err);
    if (st != LLM_OK) {
        output_file_abandon(o);
        return st;
    }
    return output_file_commit(o, err);
}
