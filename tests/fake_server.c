/* fake_server.c — a tiny HTTP/1.1 server on 127.0.0.1 for the tests of the remote
 * client (tests/e2e_*.sh start it through start_fake_server in tests/lib.sh): it answers
 * from files as llama-server would (tests/data/remote/llama-server holds real answers),
 * or misbehaves on purpose: an error status, a body cut short, a stall, bytes that are not
 * HTTP. One connection at a time, one request a connection, then Connection: close.
 *
 *   fake_server --port-file FILE [--log FILE] [--routes DIR] [--status CODE] [--body FILE]
 *               [--cut-after N] [--stall] [--garbage] [--chunk-delay-ms MS]
 *               [--max-requests N] [--close-delimited]
 *
 * --port-file FILE   the port the kernel chose, and a newline, written (tmp file, then
 *                    rename) once the socket listens
 * --log FILE         one block a request appended: "METHOD TARGET", each header line as
 *                    received, "BODY: <body>", a blank line; flushed after each
 * --routes DIR       the body of GET/POST /a/b?q is DIR/a_b, its status DIR/a_b.status if
 *                    that exists (200 otherwise); a body whose first line starts "data: "
 *                    is an SSE stream, sent chunked, one chunk an event; a missing file is
 *                    llama-server's 404; when DIR/a_b does not exist, the route's Nth
 *                    request gets DIR/a_b.N (N from 1; its status DIR/a_b.N.status), so
 *                    that a sequence of requests gets a sequence of answers (one a
 *                    position of a scored text); past the last N, the 404
 * --status CODE, --body FILE   every request gets that status and that body (JSON)
 * --cut-after N      the connection is closed after N bytes of the body, mid-stream
 * --stall            reads the request and answers nothing, the connection held open
 * --garbage          answers bytes that are not HTTP, then closes
 * --chunk-delay-ms MS  the pause between two chunks of a stream
 * --max-requests N   exits after N requests
 * --close-delimited  a stream is sent as it is, not chunked, its end the connection's
 *                    close (HTTP/1.0's way, which servers behind some proxies still use):
 *                    then --cut-after looks like the stream's end to the client
 *
 * Runs until SIGTERM or SIGINT (exit status 0), or after --max-requests requests.
 * Exit status 2 for a usage error, 1 when the socket or a file cannot be set up. */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0
#endif

#define MAX_HEAD (64 * 1024)          /* request line and headers */
#define MAX_BODY (16 * 1024 * 1024)   /* a request body */
#define MAX_FILE (64 * 1024 * 1024)   /* a response body file */
#define REQUEST_TIMEOUT_MS 10000      /* to read one request */
#define LINGER_MS 1000                /* to wait for the client's close after answering */

static const char NOT_FOUND_BODY[] =
    "{\"error\":{\"message\":\"File Not Found\",\"type\":\"not_found_error\",\"code\":404}}";

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

struct options {
    const char *port_file;
    const char *log_file;
    const char *routes;
    const char *body_file;
    int status;              /* --status; 0: not given */
    long long cut_after;     /* -1: never */
    int close_delimited;     /* a stream not chunked: its end is the close */
    int stall;
    int garbage;
    long chunk_delay_ms;
    long long max_requests;  /* 0: no limit */
};

/* a request as read: the head's lines and the body, each NUL-terminated */
struct request {
    char *head;              /* request line and header lines, "\r\n" kept */
    size_t head_len;
    char *body;
    size_t body_len;
    char method[16];
    char target[2048];
};

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
_Noreturn static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fake_server: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

_Noreturn static void usage(const char *msg)
{
    fprintf(stderr, "fake_server: %s\n"
            "usage: fake_server --port-file FILE [--log FILE] [--routes DIR] [--status CODE]\n"
            "       [--body FILE] [--cut-after N] [--stall] [--garbage] [--chunk-delay-ms MS]\n"
            "       [--max-requests N]\n", msg);
    exit(2);
}

static long long parse_count(const char *opt, const char *s, long long max)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > max)
        usage(opt);
    return v;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* sleeps MS milliseconds, less if a signal asks to stop */
static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (!stop_requested && nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* waits until FD is readable or MS have passed; 1 readable (or hung up), 0 not, -1 stop */
static int wait_readable(int fd, int ms)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    if (stop_requested)
        return -1;
    int r = poll(&p, 1, ms);
    if (stop_requested)
        return -1;
    return r > 0 ? 1 : 0;
}

/* sends all of BUF; 0 on success, -1 when the peer is gone */
static int send_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR && !stop_requested)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_FILE) {
        fclose(f);
        return NULL;
    }
    size_t n = (size_t)st.st_size;
    char *buf = malloc(n + 1);
    if (!buf || fread(buf, 1, n, f) != n) {
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

static const char *reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Status";
    }
}

/* the value of header NAME in the request's head (case-insensitive name), copied into
 * OUT; 1 if found */
static int header_value(const struct request *rq, const char *name, char *out, size_t cap)
{
    size_t nlen = strlen(name);
    const char *line = strstr(rq->head, "\n");
    while (line && line[1]) {
        line++;
        const char *eol = strchr(line, '\n');
        if (!eol)
            break;
        if ((size_t)(eol - line) > nlen && strncasecmp(line, name, nlen) == 0 && line[nlen] == ':') {
            const char *v = line + nlen + 1;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            const char *e = eol;
            while (e > v && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
                e--;
            size_t n = (size_t)(e - v);
            if (n >= cap)
                n = cap - 1;
            memcpy(out, v, n);
            out[n] = '\0';
            return 1;
        }
        line = eol;
    }
    return 0;
}

/* reads up to N bytes into BUF before the deadline: the count read, 0 at the end of the
 * stream, -1 on an error, the deadline or a signal to stop */
static ssize_t recv_some(int fd, char *buf, size_t n, long long deadline)
{
    for (;;) {
        long long left = deadline - now_ms();
        if (left <= 0)
            return -1;
        int r = wait_readable(fd, left > 200 ? 200 : (int)left);
        if (r < 0)
            return -1;
        if (r == 0)
            continue;
        ssize_t got = recv(fd, buf, n, 0);
        if (got < 0 && errno == EINTR)
            continue;
        return got;
    }
}

/* the bytes received but not yet used: what follows the head */
struct inbuf {
    char *p;
    size_t len, cap;
};

static int inbuf_fill(int fd, struct inbuf *in, size_t limit, long long deadline)
{
    if (in->len >= limit)
        return -1;
    if (in->cap - in->len < 4096) {
        size_t cap = in->cap ? in->cap * 2 : 8192;
        char *p = realloc(in->p, cap + 1);
        if (!p)
            return -1;
        in->p = p;
        in->cap = cap;
    }
    ssize_t got = recv_some(fd, in->p + in->len, in->cap - in->len, deadline);
    if (got <= 0)
        return -1;
    in->len += (size_t)got;
    in->p[in->len] = '\0';
    return 0;
}

/* consumes N bytes from the front of IN */
static void inbuf_drop(struct inbuf *in, size_t n)
{
    memmove(in->p, in->p + n, in->len - n);
    in->len -= n;
    in->p[in->len] = '\0';
}

/* reads a chunked request body into RQ; 0 on success */
static int read_chunked(int fd, struct inbuf *in, struct request *rq, long long deadline)
{
    size_t cap = 0;
    for (;;) {
        char *eol;
        while (!(eol = strstr(in->p ? in->p : "", "\r\n")))
            if (inbuf_fill(fd, in, MAX_HEAD, deadline) != 0)
                return -1;
        char *end;
        unsigned long long size = strtoull(in->p, &end, 16);
        if (end == in->p || size > MAX_BODY || rq->body_len + size > MAX_BODY)
            return -1;
        inbuf_drop(in, (size_t)(eol + 2 - in->p));
        if (size == 0) {
            /* trailers, up to the blank line */
            for (;;) {
                while (!(eol = strstr(in->p, "\r\n")))
                    if (inbuf_fill(fd, in, MAX_HEAD, deadline) != 0)
                        return -1;
                int blank = eol == in->p;
                inbuf_drop(in, (size_t)(eol + 2 - in->p));
                if (blank)
                    return 0;
            }
        }
        while (in->len < size + 2)
            if (inbuf_fill(fd, in, MAX_BODY + MAX_HEAD, deadline) != 0)
                return -1;
        if (rq->body_len + size + 1 > cap) {
            cap = rq->body_len + (size_t)size + 1;
            char *b = realloc(rq->body, cap);
            if (!b)
                return -1;
            rq->body = b;
        }
        memcpy(rq->body + rq->body_len, in->p, (size_t)size);
        rq->body_len += (size_t)size;
        rq->body[rq->body_len] = '\0';
        inbuf_drop(in, (size_t)size + 2);
    }
}

/* reads one request; 0 on success, -1 when none came whole (the connection is dropped),
 * or the HTTP status to answer a request that cannot be served (400, 413) */
static int read_request(int fd, struct request *rq)
{
    struct inbuf in = { 0 };
    long long deadline = now_ms() + REQUEST_TIMEOUT_MS;
    size_t head_end = 0, sep = 0;
    int ret = -1;

    memset(rq, 0, sizeof *rq);
    for (;;) {
        if (in.p) {
            char *e = strstr(in.p, "\r\n\r\n");
            char *e2 = strstr(in.p, "\n\n");
            if (e && (!e2 || e <= e2)) {
                head_end = (size_t)(e - in.p);
                sep = 4;
                break;
            }
            if (e2) {
                head_end = (size_t)(e2 - in.p);
                sep = 2;
                break;
            }
        }
        if (inbuf_fill(fd, &in, MAX_HEAD, deadline) != 0) {
            if (in.len >= MAX_HEAD)
                ret = 413;
            goto out;
        }
    }
    rq->head = malloc(head_end + 3);
    if (!rq->head)
        goto out;
    memcpy(rq->head, in.p, head_end);
    memcpy(rq->head + head_end, sep == 4 ? "\r\n" : "\n", sep / 2);
    rq->head_len = head_end + sep / 2;
    rq->head[rq->head_len] = '\0';
    inbuf_drop(&in, head_end + sep);

    /* the request line: METHOD TARGET VERSION */
    {
        const char *sp1 = strchr(rq->head, ' ');
        const char *eol = strpbrk(rq->head, "\r\n");
        const char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
        if (!sp1 || !eol || sp1 > eol || (size_t)(sp1 - rq->head) >= sizeof rq->method) {
            ret = 400;
            goto out;
        }
        if (!sp2 || sp2 > eol)
            sp2 = eol;
        memcpy(rq->method, rq->head, (size_t)(sp1 - rq->head));
        size_t tlen = (size_t)(sp2 - sp1 - 1);
        if (tlen >= sizeof rq->target) {
            ret = 400;
            goto out;
        }
        memcpy(rq->target, sp1 + 1, tlen);
    }

    char value[256];
    if (header_value(rq, "Expect", value, sizeof value) && strcasecmp(value, "100-continue") == 0)
        if (send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25) != 0)
            goto out;
    if (header_value(rq, "Transfer-Encoding", value, sizeof value) &&
        strcasecmp(value, "chunked") == 0) {
        if (read_chunked(fd, &in, rq, deadline) != 0)
            goto out;
    } else if (header_value(rq, "Content-Length", value, sizeof value)) {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(value, &end, 10);
        if (errno || end == value || *end) {
            ret = 400;
            goto out;
        }
        if (n > MAX_BODY) {
            ret = 413;
            goto out;
        }
        while (in.len < n)
            if (inbuf_fill(fd, &in, MAX_BODY + MAX_HEAD, deadline) != 0)
                goto out;
        rq->body = malloc((size_t)n + 1);
        if (!rq->body)
            goto out;
        memcpy(rq->body, in.p ? in.p : "", (size_t)n);
        rq->body_len = (size_t)n;
    }
    if (!rq->body) {
        rq->body = malloc(1);
        if (!rq->body)
            goto out;
    }
    rq->body[rq->body_len] = '\0';
    ret = 0;
out:
    free(in.p);
    if (ret != 0 && !rq->body) {
        rq->body = malloc(1);
        if (rq->body)
            rq->body[0] = '\0';
    }
    return ret;
}

static void free_request(struct request *rq)
{
    free(rq->head);
    free(rq->body);
    rq->head = rq->body = NULL;
}

static void log_request(FILE *log, const struct request *rq)
{
    if (!log)
        return;
    fprintf(log, "%s %s\n", rq->method, rq->target);
    /* the header lines, each as received, without its line end */
    const char *line = rq->head ? strchr(rq->head, '\n') : NULL;
    while (line && line[1]) {
        line++;
        const char *eol = strchr(line, '\n');
        if (!eol)
            break;
        size_t n = (size_t)(eol - line);
        if (n > 0 && line[n - 1] == '\r')
            n--;
        fwrite(line, 1, n, log);
        fputc('\n', log);
        line = eol;
    }
    fputs("BODY: ", log);
    fwrite(rq->body, 1, rq->body_len, log);
    fputs("\n\n", log);
    fflush(log);
}

/* what a request is answered */
struct response {
    int status;
    char *body;              /* malloc'd */
    size_t len;
    int stream;              /* SSE: chunked, one chunk an event */
};

/* the route file's name for TARGET: the path without its leading '/' and its query,
 * '/' made '_'; 0 when there is none */
static int route_name(const char *target, char *name, size_t cap)
{
    const char *p = target;
    if (*p == '/')
        p++;
    size_t n = strcspn(p, "?#");
    if (n == 0 || n >= cap)
        return 0;
    for (size_t i = 0; i < n; i++)
        name[i] = p[i] == '/' ? '_' : p[i];
    name[n] = '\0';
    return strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

static void not_found(struct response *res)
{
    res->status = 404;
    res->len = sizeof NOT_FOUND_BODY - 1;
    res->body = malloc(res->len + 1);
    if (res->body)
        memcpy(res->body, NOT_FOUND_BODY, res->len + 1);
    else
        res->len = 0;
}

static int parse_status(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
        end++;
    return (end != s && !*end && v >= 100 && v <= 999) ? (int)v : 0;
}

/* how many requests each route has had: the N of the answers DIR/a_b.N */
#define MAX_ROUTES 64
static struct {
    char name[1024];
    long count;
} route_counts[MAX_ROUTES];

static long next_request_of(const char *name)
{
    int i = 0;
    while (i < MAX_ROUTES && route_counts[i].name[0] && strcmp(route_counts[i].name, name) != 0)
        i++;
    if (i == MAX_ROUTES)
        return 0;
    if (!route_counts[i].name[0])
        snprintf(route_counts[i].name, sizeof route_counts[i].name, "%s", name);
    return ++route_counts[i].count;
}

static void route(const struct options *o, const struct request *rq, struct response *res)
{
    memset(res, 0, sizeof *res);
    if (o->status || o->body_file) {
        res->status = o->status ? o->status : 200;
        if (o->body_file) {
            res->body = read_file(o->body_file, &res->len);
            if (!res->body)
                die("cannot read %s", o->body_file);
        }
        return;
    }
    char name[1024], path[4096];
    if (!o->routes || !route_name(rq->target, name, sizeof name)) {
        not_found(res);
        return;
    }
    snprintf(path, sizeof path, "%s/%s", o->routes, name);
    res->body = read_file(path, &res->len);
    if (!res->body) { /* a sequence of answers: DIR/a_b.N for the route's Nth request */
        long nth = next_request_of(name);
        size_t len = strlen(name);
        int w = snprintf(name + len, sizeof name - len, ".%ld", nth);
        snprintf(path, sizeof path, "%s/%s", o->routes, name);
        res->body = nth > 0 && w > 0 && (size_t)w < sizeof name - len ? read_file(path, &res->len)
                                                                      : NULL;
    }
    if (!res->body) {
        not_found(res);
        return;
    }
    res->status = 200;
    snprintf(path, sizeof path, "%s/%s.status", o->routes, name);
    size_t slen;
    char *s = read_file(path, &slen);
    if (s) {
        res->status = parse_status(s);
        free(s);
        if (!res->status)
            die("%s/%s.status does not hold an HTTP status", o->routes, name);
    }
    res->stream = strncmp(res->body, "data: ", 6) == 0;
}

/* sends the response; returns when it is sent, cut, or the peer is gone */
static void respond(int fd, const struct options *o, const struct request *rq,
                    const struct response *res)
{
    char head[512];
    int no_body = res->status == 204 || res->status == 304 || strcmp(rq->method, "HEAD") == 0;
    if (res->stream && o->close_delimited)
        snprintf(head, sizeof head,
                 "HTTP/1.1 %d %s\r\nServer: fake_server\r\nContent-Type: text/event-stream\r\n"
                 "Cache-Control: no-cache\r\nConnection: close\r\n\r\n",
                 res->status, reason(res->status));
    else if (res->stream)
        snprintf(head, sizeof head,
                 "HTTP/1.1 %d %s\r\nServer: fake_server\r\nContent-Type: text/event-stream\r\n"
                 "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
                 res->status, reason(res->status));
    else
        snprintf(head, sizeof head,
                 "HTTP/1.1 %d %s\r\nServer: fake_server\r\n"
                 "Content-Type: application/json; charset=utf-8\r\nContent-Length: %zu\r\n"
                 "Connection: close\r\n\r\n",
                 res->status, reason(res->status), res->status == 204 ? (size_t)0 : res->len);
    if (send_all(fd, head, strlen(head)) != 0 || no_body)
        return;

    /* the body's bytes still allowed by --cut-after */
    size_t budget = o->cut_after < 0 || (unsigned long long)o->cut_after > SIZE_MAX
                        ? SIZE_MAX : (size_t)o->cut_after;
    if (!res->stream || o->close_delimited) {
        size_t n = res->len < budget ? res->len : budget;
        send_all(fd, res->body, n);
        return;
    }
    size_t pos = 0;
    int first = 1;
    while (pos < res->len) {
        const char *sep = strstr(res->body + pos, "\n\n");
        size_t end = sep ? (size_t)(sep - res->body) + 2 : res->len;
        size_t n = end - pos;
        if (!first && o->chunk_delay_ms > 0)
            sleep_ms(o->chunk_delay_ms);
        if (stop_requested)
            return;
        first = 0;
        char size_line[32];
        snprintf(size_line, sizeof size_line, "%zx\r\n", n);
        if (send_all(fd, size_line, strlen(size_line)) != 0)
            return;
        if (n > budget) {   /* the server dies in the middle of this event */
            send_all(fd, res->body + pos, budget);
            return;
        }
        if (send_all(fd, res->body + pos, n) != 0 || send_all(fd, "\r\n", 2) != 0)
            return;
        budget -= n;
        pos = end;
        if (budget == 0 && pos < res->len)
            return;
    }
    send_all(fd, "0\r\n\r\n", 5);
}

/* a FIN, then the client's own close awaited (briefly) so that what it still sends does
 * not turn the close into a reset that could lose the end of the answer */
static void close_gently(int fd)
{
    shutdown(fd, SHUT_WR);
    long long deadline = now_ms() + LINGER_MS;
    char buf[4096];
    for (;;) {
        long long left = deadline - now_ms();
        if (left <= 0 || wait_readable(fd, (int)left) != 1)
            break;
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n == 0 || (n < 0 && errno != EINTR))
            break;
    }
    close(fd);
}

/* --stall: nothing is sent; the connection is held until the client gives up or a
 * signal stops the server */
static void stall(int fd)
{
    char buf[4096];
    for (;;) {
        int r = wait_readable(fd, 200);
        if (r < 0)
            return;
        if (r == 0)
            continue;
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n == 0 || (n < 0 && errno != EINTR))
            return;
    }
}

/* answers one connection; 1 if a request came, 0 if none did */
static int serve(int fd, const struct options *o, FILE *log)
{
    struct request rq;
    int r = read_request(fd, &rq);
    if (r < 0) {
        free_request(&rq);
        close(fd);
        return 0;
    }
    log_request(log, &rq);
    if (o->stall) {
        stall(fd);
        close(fd);
    } else if (o->garbage) {
        static const char junk[] = "\x00\xffNOT HTTP AT ALL\r\n\r\n";
        for (int i = 0; i < 4; i++)
            if (send_all(fd, junk, sizeof junk - 1) != 0)
                break;
        close_gently(fd);
    } else {
        struct response res = { 0 };
        if (r > 0) {
            static const char fmt[] =
                "{\"error\":{\"code\":%d,\"message\":\"%s\",\"type\":\"invalid_request_error\"}}";
            res.status = r;
            char buf[256];
            int n = snprintf(buf, sizeof buf, fmt, r, reason(r));
            res.body = malloc((size_t)n + 1);
            if (res.body) {
                memcpy(res.body, buf, (size_t)n + 1);
                res.len = (size_t)n;
            }
        } else {
            route(o, &rq, &res);
        }
        respond(fd, o, &rq, &res);
        free(res.body);
        close_gently(fd);
    }
    free_request(&rq);
    return 1;
}

static void write_port_file(const char *path, int port)
{
    size_t n = strlen(path) + 16;
    char *tmp = malloc(n);
    if (!tmp)
        die("out of memory");
    snprintf(tmp, n, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", port) < 0 || fclose(f) != 0)
        die("cannot write %s: %s", tmp, strerror(errno));
    if (rename(tmp, path) != 0)
        die("cannot rename %s to %s: %s", tmp, path, strerror(errno));
    free(tmp);
}

int main(int argc, char **argv)
{
    struct options o = { .cut_after = -1 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--stall") == 0) {
            o.stall = 1;
            continue;
        }
        if (strcmp(a, "--close-delimited") == 0) {
            o.close_delimited = 1;
            continue;
        }
        if (strcmp(a, "--garbage") == 0) {
            o.garbage = 1;
            continue;
        }
        if (!v)
            usage(strncmp(a, "--", 2) == 0 ? "an option lacks its value" : "unknown argument");
        i++;
        if (strcmp(a, "--port-file") == 0)
            o.port_file = v;
        else if (strcmp(a, "--log") == 0)
            o.log_file = v;
        else if (strcmp(a, "--routes") == 0)
            o.routes = v;
        else if (strcmp(a, "--body") == 0)
            o.body_file = v;
        else if (strcmp(a, "--status") == 0) {
            o.status = parse_status(v);
            if (!o.status)
                usage("--status takes an HTTP status (100-999)");
        } else if (strcmp(a, "--cut-after") == 0)
            o.cut_after = parse_count("--cut-after takes a byte count", v, LLONG_MAX);
        else if (strcmp(a, "--chunk-delay-ms") == 0)
            o.chunk_delay_ms = (long)parse_count("--chunk-delay-ms takes milliseconds", v, 3600000);
        else if (strcmp(a, "--max-requests") == 0) {
            o.max_requests = parse_count("--max-requests takes a count", v, LLONG_MAX);
            if (o.max_requests == 0)
                usage("--max-requests takes a count of 1 or more");
        } else
            usage("unknown option");
    }
    if (!o.port_file)
        usage("--port-file is required");
    if (o.routes && (o.status || o.body_file))
        usage("--routes and --status/--body do not go together");
    if (o.stall && o.garbage)
        usage("--stall and --garbage do not go together");
    if (o.body_file) {   /* refused now rather than at the first request */
        size_t n;
        char *b = read_file(o.body_file, &n);
        if (!b)
            die("cannot read %s", o.body_file);
        free(b);
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    sa.sa_handler = on_signal;   /* no SA_RESTART: a blocked call returns EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    FILE *log = NULL;
    if (o.log_file && !(log = fopen(o.log_file, "a")))
        die("cannot open %s: %s", o.log_file, strerror(errno));

    int ls = socket(AF_INET, SOCK_STREAM, 0);
    if (ls < 0)
        die("socket: %s", strerror(errno));
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t alen = sizeof addr;
    if (bind(ls, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(ls, 16) != 0 ||
        getsockname(ls, (struct sockaddr *)&addr, &alen) != 0)
        die("cannot listen on 127.0.0.1: %s", strerror(errno));
    fcntl(ls, F_SETFD, FD_CLOEXEC);
    write_port_file(o.port_file, ntohs(addr.sin_port));

    long long served = 0;
    while (!stop_requested && (o.max_requests == 0 || served < o.max_requests)) {
        int r = wait_readable(ls, 200);
        if (r <= 0)
            continue;
        int fd = accept(ls, NULL, NULL);
        if (fd < 0)
            continue;
        served += serve(fd, &o, log);
    }
    close(ls);
    if (log)
        fclose(log);
    return 0;
}
