/*
 * docker_logfile.c - a container's log file read by byte offset (docker.h: docker_logfile_*):
 * Podman's k8s-file records and Docker's json-file records, partial records joined.
 */
#include "docker.h"
#include "docker_int.h"

#include "ty_buf.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOGFILE_CHUNK      65536
#define LOGFILE_RECORD_MAX (4 * 1024 * 1024) /* one record's bytes; json-file splits at 16 KiB */

struct docker_logfile {
    int fd;
    uint64_t offset;     /* first byte of the record not yet delivered */
    uint64_t pos;        /* next byte to read (offset + the bytes of rec read so far) */
    size_t max_line;     /* longest line delivered */
    struct ty_buf rec;   /* bytes of a record whose newline has not been read yet */
    struct ty_buf line;  /* a line whose partial records are being joined */
    int line_open;       /* line holds the start of a line */
    int line_stderr;     /* its stream */
    int64_t line_ts_ms;  /* its first record's time */
    int skipping_record; /* the current record outgrew LOGFILE_RECORD_MAX: skip to its newline */
    char *buf;           /* LOGFILE_CHUNK bytes of read scratch, kept across reads */
};

struct docker_logfile *docker_logfile_open(const char *path, size_t max_line, struct ty_err *err)
{
    struct docker_logfile *f;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

    if (fd < 0) {
        ty_err_set(err, errno == ENOENT ? TY_ENOTFOUND : TY_EIO, NULL,
                   "container log file '%s': %s", path, strerror(errno));
        return NULL;
    }
    if (!(f = calloc(1, sizeof(*f))) || !(f->buf = malloc(LOGFILE_CHUNK))) {
        free(f);
        close(fd);
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    f->fd = fd;
    f->max_line = max_line ? max_line : 1;
    ty_buf_init(&f->rec, LOGFILE_RECORD_MAX);
    ty_buf_init(&f->line, max_line + 1);
    return f;
}

void docker_logfile_close(struct docker_logfile *f)
{
    if (!f)
        return;
    close(f->fd);
    free(f->buf);
    ty_buf_cleanup(&f->rec);
    ty_buf_cleanup(&f->line);
    free(f);
}

uint64_t docker_logfile_offset(const struct docker_logfile *f)
{
    return f->offset;
}

/* Adds text to the open line (dropping what passes max_line). */
static void logfile_append(struct docker_logfile *f, const char *p, size_t n)
{
    size_t room = f->max_line > f->line.len ? f->max_line - f->line.len : 0;
    if (n > room)
        n = room;
    if (n)
        ty_buf_append(&f->line, p, n);
}

/* Delivers the open line. 1 when cb asked to stop. */
static int logfile_emit(struct docker_logfile *f, docker_line_cb cb, void *ud)
{
    int stop;
    f->line_open = 0;
    stop = cb(f->line.data ? f->line.data : "", f->line.len, f->line_ts_ms, f->line_stderr, ud);
    ty_buf_reset(&f->line);
    return stop != 0;
}

/* One record's fields: its time, stream and text, and whether a later record continues it. */
struct logfile_rec {
    int64_t ts_ms;
    int is_stderr;
    int partial;
    const char *text;
    size_t len;
    json_t *owner; /* json-file: the document text points into */
};

/* Parses the record r[0..n) (no newline). 0, or -1 when it is in neither form. */
static int logfile_parse(const char *r, size_t n, struct logfile_rec *out)
{
    int64_t ns = 0;
    size_t t;

    memset(out, 0, sizeof(*out));
    if (n > 0 && r[0] == '{') { /* json-file */
        json_t *doc = json_loadb(r, n, 0, NULL), *log;
        const char *stream, *time;
        if (!doc)
            return -1;
        log = json_object_get(doc, "log");
        stream = json_string_value(json_object_get(doc, "stream"));
        time = json_string_value(json_object_get(doc, "time"));
        if (!json_is_string(log)) {
            json_decref(doc);
            return -1;
        }
        out->owner = doc;
        out->text = json_string_value(log);
        out->len = json_string_length(log);
        out->partial = !(out->len > 0 && out->text[out->len - 1] == '\n');
        if (!out->partial)
            out->len--;
        out->is_stderr = stream && strcmp(stream, "stderr") == 0;
        if (time && docker__parse_time(time, strlen(time), &ns))
            out->ts_ms = ns / 1000000;
        return 0;
    }
    /* k8s-file: "<RFC 3339> <stream> <F|P> <text>" */
    if (!(t = docker__parse_time(r, n, &ns)) || t >= n || r[t] != ' ')
        return -1;
    r += t + 1;
    n -= t + 1;
    if (n >= 7 && memcmp(r, "stdout ", 7) == 0) {
        r += 7;
        n -= 7;
    } else if (n >= 7 && memcmp(r, "stderr ", 7) == 0) {
        out->is_stderr = 1;
        r += 7;
        n -= 7;
    } else {
        return -1;
    }
    if (n < 1 || (r[0] != 'F' && r[0] != 'P'))
        return -1;
    out->partial = r[0] == 'P';
    r++;
    n--;
    /* the tag may carry more after a ':' in newer conmon ("F:..."): skip to the space */
    while (n > 0 && r[0] != ' ') {
        r++;
        n--;
    }
    if (n > 0) { /* the space before the text; an empty line has none in some versions */
        r++;
        n--;
    }
    out->ts_ms = ns / 1000000;
    out->text = r;
    out->len = n;
    return 0;
}

/* Takes one complete record. 1 when cb asked to stop, else 0. */
static int logfile_record(struct docker_logfile *f, const char *r, size_t n, docker_line_cb cb,
                          void *ud, long *lines)
{
    struct logfile_rec rec;
    int stop = 0;

    if (logfile_parse(r, n, &rec) != 0) {
        /* in neither form (another driver's, a newer layout): its bytes as a line, never lost */
        memset(&rec, 0, sizeof(rec));
        rec.text = r;
        rec.len = n;
    }
    if (f->line_open && rec.is_stderr != f->line_stderr) {
        /* the other stream's record in the middle of a partial line: deliver what we have */
        stop = logfile_emit(f, cb, ud);
        (*lines)++;
    }
    if (!f->line_open) {
        f->line_open = 1;
        f->line_stderr = rec.is_stderr;
        f->line_ts_ms = rec.ts_ms;
    }
    logfile_append(f, rec.text, rec.len);
    json_decref(rec.owner);
    if (!rec.partial && !stop) {
        stop = logfile_emit(f, cb, ud);
        (*lines)++;
    }
    return stop;
}

long docker_logfile_read(struct docker_logfile *f, docker_line_cb cb, void *ud, struct ty_err *err)
{
    char *buf = f->buf;
    long lines = 0;

    for (;;) {
        ssize_t got = pread(f->fd, buf, LOGFILE_CHUNK, (off_t)f->pos);
        size_t i = 0;
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            return ty_err_set(err, TY_EIO, NULL, "container log file: %s", strerror(errno));
        }
        if (got == 0)
            break;
        f->pos += (uint64_t)got;
        while (i < (size_t)got) {
            const char *nl = memchr(buf + i, '\n', (size_t)got - i);
            size_t take = nl ? (size_t)(nl - (buf + i)) : (size_t)got - i;
            int rc = 0;
            if (!f->skipping_record && f->rec.len + take > LOGFILE_RECORD_MAX) {
                f->skipping_record = 1; /* not a record of either form: dropped whole */
                ty_buf_reset(&f->rec);
            }
            if (!f->skipping_record && take && ty_buf_append(&f->rec, buf + i, take) != 0) {
                return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
            }
            if (!nl)
                break;
            i += take + 1;
            f->offset = f->pos - ((size_t)got - i); /* consumed through this newline */
            if (!f->skipping_record)
                rc = logfile_record(f, f->rec.data ? f->rec.data : "", f->rec.len, cb, ud, &lines);
            f->skipping_record = 0;
            ty_buf_reset(&f->rec);
            if (rc != 0) {
                f->pos = f->offset; /* what follows in buf is read again next time */
                return lines;
            }
        }
    }
    return lines;
}

int docker_logfile_finish(struct docker_logfile *f, docker_line_cb cb, void *ud)
{
    if (!f->line_open)
        return 0;
    logfile_emit(f, cb, ud);
    return 1;
}
