/*
 * docker.c - Docker Engine API client (Docker, or Podman's compatible service) over libcurl.
 *
 * Owns: one curl easy handle per struct docker, reset (not recreated) before each request so
 * that the engine connection is kept alive between calls; the JSON bodies of the calls in
 * docker.h; the log-stream demultiplexer (docker_int.h). Does not own job semantics.
 * Invariants: every response body is read into a buffer with a ceiling (TY_DOCKER_MAX_RESP,
 * TY_DOCKER_MAX_ERRBODY) and every log line is bounded (TY_DOCKER_MAX_LINE); names that go into
 * a URL path are checked against a conservative character set, query values are escaped.
 */
#include "docker.h"
#include "docker_int.h"

#include "ty_buf.h"
#include "ty_err.h"
#include "ty_log.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TY_DOCKER_API         "/v1.41"
#define TY_DOCKER_MAX_RESP    ((size_t)16 * 1024 * 1024) /* JSON answers (list, inspect) */
#define TY_DOCKER_MAX_ERRBODY ((size_t)64 * 1024)        /* error bodies, import progress tail */
#define TY_DOCKER_MAX_LINE    ((size_t)256 * 1024)       /* one log line */
#define TY_DOCKER_MAX_URL     4096
#define TY_DOCKER_CONNECT_S   5L
#define TY_DOCKER_SHORT_S     30L   /* ping, inspect, kill, list */
#define TY_DOCKER_LONG_S      3600L /* create, start, remove: vfs copies a whole rootfs */
#define TY_DOCKER_NO_TIMEOUT  0L

struct docker {
    CURL *curl;
    char *sock_path; /* unix socket, NULL for tcp */
    char base[256];  /* "http://d" or "http://host:port" */
    char host[512];  /* as given, for messages */
    char errbuf[CURL_ERROR_SIZE];
};

/* ---------------------------------------------------------------------------------------------
 * RFC 3339 times
 */

static int parse_digits(const char *s, size_t len, size_t *pos, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (*pos >= len || s[*pos] < '0' || s[*pos] > '9')
            return -1;
        v = v * 10 + (s[*pos] - '0');
        (*pos)++;
    }
    *out = v;
    return 0;
}

static int expect_char(const char *s, size_t len, size_t *pos, const char *set)
{
    if (*pos >= len || !strchr(set, s[*pos]) || s[*pos] == '\0')
        return -1;
    (*pos)++;
    return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

size_t docker__parse_time(const char *s, size_t len, int64_t *epoch_ns)
{
    size_t pos = 0;
    int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
    int64_t frac_ns = 0, ns;

    if (parse_digits(s, len, &pos, 4, &y) || expect_char(s, len, &pos, "-") ||
        parse_digits(s, len, &pos, 2, &mo) || expect_char(s, len, &pos, "-") ||
        parse_digits(s, len, &pos, 2, &d) || expect_char(s, len, &pos, "Tt ") ||
        parse_digits(s, len, &pos, 2, &h) || expect_char(s, len, &pos, ":") ||
        parse_digits(s, len, &pos, 2, &mi) || expect_char(s, len, &pos, ":") ||
        parse_digits(s, len, &pos, 2, &sec))
        return 0;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return 0;
    if (pos < len && s[pos] == '.') {
        int64_t scale = 100000000;
        pos++;
        if (pos >= len || s[pos] < '0' || s[pos] > '9')
            return 0;
        while (pos < len && s[pos] >= '0' && s[pos] <= '9') {
            frac_ns += (s[pos] - '0') * scale;
            scale /= 10;
            pos++;
        }
    }
    if (pos < len && (s[pos] == 'Z' || s[pos] == 'z')) {
        pos++;
    } else if (pos < len && (s[pos] == '+' || s[pos] == '-')) {
        sign = s[pos] == '+' ? 1 : -1;
        pos++;
        if (parse_digits(s, len, &pos, 2, &oh) || expect_char(s, len, &pos, ":") ||
            parse_digits(s, len, &pos, 2, &om))
            return 0;
    } else {
        return 0;
    }
    ns = days_from_civil(y, mo, d) * 86400 + (int64_t)h * 3600 + (int64_t)mi * 60 + sec;
    ns -= sign * ((int64_t)oh * 3600 + (int64_t)om * 60);
    /* Go's zero time (year 1) and far futures do not fit in ns: saturate */
    if (ns <= INT64_MIN / 1000000000 + 1)
        ns = INT64_MIN;
    else if (ns >= INT64_MAX / 1000000000 - 1)
        ns = INT64_MAX;
    else
        ns = ns * 1000000000 + frac_ns;
    *epoch_ns = ns;
    return pos;
}

/* Epoch seconds of an engine time; 0 for Go's zero time ("0001-01-01T00:00:00Z") or junk. */
static double time_to_epoch_s(const char *s)
{
    int64_t ns;
    if (!s || !docker__parse_time(s, strlen(s), &ns) || ns <= 0)
        return 0;
    return (double)(ns / 1000000000) + (double)(ns % 1000000000) / 1e9;
}

/* ---------------------------------------------------------------------------------------------
 * Log stream demultiplexer
 */

void docker__demux_init(struct docker__demux *dm, int timestamps, size_t max_line,
                        docker_line_cb cb, void *ud)
{
    memset(dm, 0, sizeof(*dm));
    dm->timestamps = timestamps;
    dm->cb = cb;
    dm->ud = ud;
    dm->frame_stream = 1;
    ty_buf_init(&dm->partial[0], max_line ? max_line : 1);
    ty_buf_init(&dm->partial[1], max_line ? max_line : 1);
}

void docker__demux_cleanup(struct docker__demux *dm)
{
    ty_buf_cleanup(&dm->partial[0]);
    ty_buf_cleanup(&dm->partial[1]);
}

/* Delivers one line (no newline); returns 1 when the callback asks to stop. */
static int demux_emit(struct docker__demux *dm, const char *line, size_t len, int is_stderr)
{
    int64_t ts_ms = 0;
    if (dm->stopped)
        return 1;
    if (dm->timestamps) {
        int64_t ns;
        size_t n = docker__parse_time(line, len, &ns);
        if (n) {
            ts_ms = ns / 1000000;
            line += n;
            len -= n;
            if (len && *line == ' ') {
                line++;
                len--;
            }
        }
    }
    if (dm->cb && dm->cb(line, len, ts_ms, is_stderr, dm->ud))
        dm->stopped = 1;
    return dm->stopped;
}

/* Adds payload bytes of one stream, delivering each complete line. */
static int demux_payload(struct docker__demux *dm, const char *p, size_t n, int is_stderr)
{
    struct ty_buf *b = &dm->partial[is_stderr ? 1 : 0];

    while (n) {
        const char *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) : n;
        size_t room = b->max - b->len;
        int rc;

        if (take > room) {
            /* Over the ceiling: deliver what fits as a line of its own. */
            rc = ty_buf_append(b, p, room);
            if (rc)
                return rc;
            rc = demux_emit(dm, b->data ? b->data : "", b->len, is_stderr);
            ty_buf_reset(b);
            if (rc)
                return 1;
            p += room;
            n -= room;
            continue;
        }
        rc = ty_buf_append(b, p, take);
        if (rc)
            return rc;
        p += take;
        n -= take;
        if (!nl)
            break;
        p++; /* the newline */
        n--;
        rc = demux_emit(dm, b->data ? b->data : "", b->len, is_stderr);
        ty_buf_reset(b);
        if (rc)
            return 1;
    }
    return 0;
}

int docker__demux_feed(struct docker__demux *dm, const void *data, size_t n)
{
    const unsigned char *p = data;

    if (dm->stopped)
        return 1;
    while (n) {
        if (dm->mode == DOCKER__DEMUX_RAW)
            return demux_payload(dm, (const char *)p, n, 0);
        if (dm->mode == DOCKER__DEMUX_FAILED) {
            struct ty_buf *b = &dm->partial[0];
            size_t room = b->max - b->len;
            if (room && ty_buf_append(b, (const char *)p, n < room ? n : room))
                return -TY_ENOMEM;
            return 0;
        }
        if (dm->mode == DOCKER__DEMUX_DETECT) {
            /* A frame header starts with 0, 1 or 2; a raw timestamped line with a digit. Podman
               answers 200 before it reads the logs and, when that read fails (the container
               exiting meanwhile: "read /proc/N/cgroup: no such process"), writes its JSON error
               into the body: never a log line. */
            if (dm->timestamps && p[0] == '{')
                dm->mode = DOCKER__DEMUX_FAILED;
            else
                dm->mode = p[0] <= 2 ? DOCKER__DEMUX_MUX : DOCKER__DEMUX_RAW;
            continue;
        }
        if (dm->frame_left) {
            size_t take = n < dm->frame_left ? n : dm->frame_left;
            int rc;
            struct ty_buf *pb = &dm->partial[dm->frame_stream == 2 ? 1 : 0];
            if (dm->frame_start && dm->timestamps && pb->len) {
                /* A frame that continues a line written without its newline (Podman) starts
                   with a timestamp of its own: not part of the line's text. */
                int64_t ns;
                size_t ts = docker__parse_time((const char *)p, take, &ns);
                if (ts && ts < take && p[ts] == ' ')
                    ts++;
                p += ts;
                n -= ts;
                take -= ts;
                dm->frame_left -= (uint32_t)ts;
            }
            dm->frame_start = 0;
            rc = demux_payload(dm, (const char *)p, take, dm->frame_stream == 2);
            if (rc)
                return rc;
            p += take;
            n -= take;
            dm->frame_left -= (uint32_t)take;
            continue;
        }
        while (n && dm->hdr_len < sizeof(dm->hdr)) {
            dm->hdr[dm->hdr_len++] = *p++;
            n--;
        }
        if (dm->hdr_len < sizeof(dm->hdr))
            break;
        if (dm->hdr[0] > 2 || dm->hdr[1] || dm->hdr[2] || dm->hdr[3])
            return -TY_EENGINE;
        dm->frame_stream = dm->hdr[0] == 2 ? 2 : 1;
        dm->frame_left = (uint32_t)dm->hdr[4] << 24 | (uint32_t)dm->hdr[5] << 16 |
                         (uint32_t)dm->hdr[6] << 8 | (uint32_t)dm->hdr[7];
        dm->hdr_len = 0;
        dm->frame_start = 1;
    }
    return 0;
}

int docker__demux_finish(struct docker__demux *dm)
{
    if (dm->mode == DOCKER__DEMUX_FAILED)
        return -TY_EENGINE;
    if (dm->stopped)
        return 1;
    for (int i = 0; i < 2; i++) {
        struct ty_buf *b = &dm->partial[i];
        if (b->len) {
            int rc = demux_emit(dm, b->data, b->len, i);
            ty_buf_reset(b);
            if (rc)
                return 1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Requests
 */

struct docker *docker_open(const char *host, struct ty_err *err)
{
    struct docker *d;

    if (!host || !*host)
        host = "unix:///var/run/docker.sock";
    d = calloc(1, sizeof(*d));
    if (!d) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    snprintf(d->host, sizeof(d->host), "%s", host);
    if (!strncmp(host, "unix://", 7)) {
        const char *path = host + 7;
        if (!*path || strlen(path) >= 108) {
            ty_err_set(err, TY_EINVAL, NULL, "invalid docker host '%s': bad socket path", host);
            goto fail;
        }
        d->sock_path = strdup(path);
        if (!d->sock_path) {
            ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
            goto fail;
        }
        snprintf(d->base, sizeof(d->base), "http://d");
    } else if (!strncmp(host, "tcp://", 6) || !strncmp(host, "http://", 7)) {
        const char *hp = strstr(host, "://") + 3;
        size_t n = strcspn(hp, "/");
        if (!n || n >= sizeof(d->base) - 8) {
            ty_err_set(err, TY_EINVAL, NULL, "invalid docker host '%s'", host);
            goto fail;
        }
        snprintf(d->base, sizeof(d->base), "http://%.*s", (int)n, hp);
    } else {
        ty_err_set(err, TY_EINVAL, NULL,
                   "invalid docker host '%s': expected unix:///path or tcp://host:port", host);
        goto fail;
    }
    d->curl = curl_easy_init();
    if (!d->curl) {
        ty_err_set(err, TY_ENOMEM, NULL, "curl_easy_init failed");
        goto fail;
    }
    return d;
fail:
    docker_close(d);
    return NULL;
}

void docker_close(struct docker *d)
{
    if (!d)
        return;
    if (d->curl)
        curl_easy_cleanup(d->curl);
    free(d->sock_path);
    free(d);
}

/* What a request writes its answer into. */
struct sink {
    struct docker *d;
    struct ty_buf *body;      /* JSON answer, or the error body when the status is >= 300 */
    int keep_tail;            /* body keeps only its last bytes instead of failing when full */
    struct docker__demux *dm; /* log stream, used when the status is < 300 */
    int failed;               /* demux error, or body over its ceiling */
    int status_known;
    long status;
};

static void buf_keep_tail(struct ty_buf *b, const char *p, size_t n)
{
    if (n >= b->max) {
        ty_buf_reset(b);
        (void)ty_buf_append(b, p + n - b->max, b->max);
        return;
    }
    if (b->len + n > b->max) {
        size_t drop = b->len + n - b->max;
        memmove(b->data, b->data + drop, b->len - drop);
        b->len -= drop;
        b->data[b->len] = '\0';
    }
    (void)ty_buf_append(b, p, n);
}

static size_t sink_write(char *p, size_t size, size_t nmemb, void *ud)
{
    struct sink *s = ud;
    size_t n = size * nmemb;

    if (!s->status_known) {
        curl_easy_getinfo(s->d->curl, CURLINFO_RESPONSE_CODE, &s->status);
        s->status_known = 1;
    }
    if (s->dm && s->status < 300) {
        int rc = docker__demux_feed(s->dm, p, n);
        if (rc) {
            if (rc < 0)
                s->failed = rc;
            return 0; /* stop the transfer */
        }
        return n;
    }
    if (!s->body)
        return n;
    if (s->keep_tail || s->status >= 300) {
        buf_keep_tail(s->body, p, n);
        return n;
    }
    if (ty_buf_append(s->body, p, n)) {
        s->failed = -TY_ETOOBIG;
        return 0;
    }
    return n;
}

struct upload {
    FILE *f;
};

static size_t upload_read(char *p, size_t size, size_t nmemb, void *ud)
{
    struct upload *u = ud;
    size_t n = fread(p, 1, size * nmemb, u->f);
    if (n == 0 && ferror(u->f))
        return CURL_READFUNC_ABORT;
    return n;
}

struct request {
    const char *method;
    const char *path; /* after the API prefix, query escaped already */
    const char *json; /* request body, may be NULL */
    FILE *upload;     /* streamed request body (application/x-tar), may be NULL */
    curl_off_t upload_size;
    long timeout_s; /* 0 = none */
    struct sink sink;
};

/*
 * Runs one request. OUT: req->sink.status. Returns 0 when the engine answered (any status), or
 * -TY_EENGINE when it could not be reached, -TY_ETOOBIG when the answer was over its ceiling.
 */
static int do_request(struct docker *d, struct request *req, const char *what, struct ty_err *err)
{
    char url[TY_DOCKER_MAX_URL];
    struct curl_slist *hdrs = NULL;
    struct upload up = {req->upload};
    CURLcode cc;
    int n, rc = 0;

    /* the compatible API under its version; Podman's libpod API (docker_libpod.c) under its own */
    n = snprintf(url, sizeof(url), "%s%s%s", d->base,
                 strncmp(req->path, "/v4.", 4) == 0 ? "" : TY_DOCKER_API, req->path);
    if (n < 0 || (size_t)n >= sizeof(url))
        return ty_err_set(err, TY_EINVAL, NULL, "%s: request url too long", what);

    curl_easy_reset(d->curl); /* keeps the connection cache */
    d->errbuf[0] = '\0';
    curl_easy_setopt(d->curl, CURLOPT_URL, url);
    if (d->sock_path)
        curl_easy_setopt(d->curl, CURLOPT_UNIX_SOCKET_PATH, d->sock_path);
    curl_easy_setopt(d->curl, CURLOPT_ERRORBUFFER, d->errbuf);
    curl_easy_setopt(d->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(d->curl, CURLOPT_CONNECTTIMEOUT, TY_DOCKER_CONNECT_S);
    curl_easy_setopt(d->curl, CURLOPT_TIMEOUT, req->timeout_s);
    curl_easy_setopt(d->curl, CURLOPT_WRITEFUNCTION, sink_write);
    curl_easy_setopt(d->curl, CURLOPT_WRITEDATA, &req->sink);
    hdrs = curl_slist_append(hdrs, "Expect:");
    if (hdrs && (req->upload || req->json)) {
        struct curl_slist *h2 =
            curl_slist_append(hdrs, req->upload ? "Content-Type: application/x-tar"
                                                : "Content-Type: application/json");
        if (!h2)
            curl_slist_free_all(hdrs);
        hdrs = h2;
    }
    if (req->upload) {
        curl_easy_setopt(d->curl, CURLOPT_POST, 1L);
        curl_easy_setopt(d->curl, CURLOPT_READFUNCTION, upload_read);
        curl_easy_setopt(d->curl, CURLOPT_READDATA, &up);
        curl_easy_setopt(d->curl, CURLOPT_POSTFIELDSIZE_LARGE, req->upload_size);
    } else if (req->json) {
        curl_easy_setopt(d->curl, CURLOPT_POSTFIELDS, req->json);
        curl_easy_setopt(d->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(req->json));
    } else if (!strcmp(req->method, "POST")) {
        curl_easy_setopt(d->curl, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(d->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
    }
    if (strcmp(req->method, "GET") && strcmp(req->method, "POST"))
        curl_easy_setopt(d->curl, CURLOPT_CUSTOMREQUEST, req->method);
    if (!hdrs)
        return ty_err_set(err, TY_ENOMEM, NULL, "%s: out of memory", what);
    curl_easy_setopt(d->curl, CURLOPT_HTTPHEADER, hdrs);

    req->sink.d = d;
    req->sink.status_known = 0;
    req->sink.status = 0;
    req->sink.failed = 0;
    cc = curl_easy_perform(d->curl);
    curl_easy_getinfo(d->curl, CURLINFO_RESPONSE_CODE, &req->sink.status);
    if (req->sink.failed == -TY_ETOOBIG) {
        rc = ty_err_set(err, TY_ETOOBIG, NULL, "%s: engine answer over %zu bytes", what,
                        TY_DOCKER_MAX_RESP);
    } else if (req->sink.failed) {
        rc = ty_err_set(err, TY_EENGINE, NULL, "%s: malformed log stream from the engine", what);
    } else if (cc == CURLE_WRITE_ERROR && req->sink.dm && req->sink.dm->stopped) {
        rc = 0; /* the line callback asked to stop */
    } else if (cc == CURLE_COULDNT_CONNECT && d->sock_path) {
        long oserr = 0;
        curl_easy_getinfo(d->curl, CURLINFO_OS_ERRNO, &oserr);
        rc = ty_err_set(err, TY_EENGINE, NULL,
                        "%s: cannot talk to the container engine at '%s': connect: %s (is the "
                        "engine running?)",
                        what, d->host, oserr ? strerror((int)oserr) : "failed");
    } else if (cc != CURLE_OK) {
        rc =
            ty_err_set(err, TY_EENGINE, NULL, "%s: cannot talk to the container engine at '%s': %s",
                       what, d->host, d->errbuf[0] ? d->errbuf : curl_easy_strerror(cc));
    }
    curl_slist_free_all(hdrs);
    return rc;
}

long docker__last_connects(struct docker *d)
{
    long n = -1;
    if (curl_easy_getinfo(d->curl, CURLINFO_NUM_CONNECTS, &n) != CURLE_OK)
        return -1;
    return n;
}

/* Turns a status >= 300 into an error carrying the engine's "message". */
static int engine_error(struct request *req, const char *what, struct ty_err *err)
{
    const char *msg = NULL;
    json_t *j = NULL;
    struct ty_buf *b = req->sink.body;
    int code = req->sink.status == 404 ? TY_ENOTFOUND : TY_EENGINE;
    int rc;

    if (b && b->len) {
        j = json_loadb(b->data, b->len, 0, NULL);
        msg = json_string_value(json_object_get(j, "message"));
        if (!msg)
            msg = b->data;
    }
    rc = ty_err_set(err, code, NULL, "%s: %s (HTTP %ld)", what, msg && *msg ? msg : "no message",
                    req->sink.status);
    json_decref(j);
    return rc;
}

/* A name for a URL path: image references and container ids or names. */
static int check_name(const char *s, const char *what, struct ty_err *err)
{
    if (!s || !*s || strlen(s) > 255)
        return ty_err_set(err, TY_EINVAL, NULL, "%s: missing or too long name", what);
    for (const char *p = s; *p; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr("._-/:@", *p)))
            return ty_err_set(err, TY_EINVAL, NULL, "%s: invalid name '%s'", what, s);
    }
    if (strstr(s, ".."))
        return ty_err_set(err, TY_EINVAL, NULL, "%s: invalid name '%s'", what, s);
    return 0;
}

/* Appends "&key=<escaped value>" (or "?key=" when first) to b. */
static int query_add(CURL *c, struct ty_buf *b, const char *key, const char *value)
{
    char *esc = curl_easy_escape(c, value, 0);
    int rc;
    if (!esc)
        return -TY_ENOMEM;
    rc = ty_buf_printf(b, "%c%s=%s", strchr(b->data ? b->data : "", '?') ? '&' : '?', key, esc);
    curl_free(esc);
    return rc;
}

/* Simple call: method path [json] -> status; the body of a 2xx answer in *out when out. */
static int call(struct docker *d, const char *method, const char *path, const char *json,
                long timeout_s, const char *what, long *status, json_t **out, struct ty_err *err)
{
    struct ty_buf body;
    struct request req = {0};
    int rc;

    ty_buf_init(&body, TY_DOCKER_MAX_RESP);
    req.method = method;
    req.path = path;
    req.json = json;
    req.timeout_s = timeout_s;
    req.sink.body = &body;
    rc = do_request(d, &req, what, err);
    if (rc)
        goto out;
    *status = req.sink.status;
    if (req.sink.status >= 300) {
        rc = engine_error(&req, what, err);
        goto out;
    }
    if (out) {
        json_error_t je;
        *out = json_loadb(body.data ? body.data : "", body.len, JSON_DECODE_ANY, &je);
        if (!*out)
            rc = ty_err_set(err, TY_EENGINE, NULL, "%s: engine answer is not JSON: %s", what,
                            je.text);
    }
out:
    ty_buf_cleanup(&body);
    return rc;
}

int docker_ping(struct docker *d, struct ty_err *err)
{
    struct ty_buf body;
    struct request req = {0};
    int rc;

    ty_buf_init(&body, TY_DOCKER_MAX_ERRBODY);
    req.method = "GET";
    req.path = "/_ping";
    req.timeout_s = TY_DOCKER_SHORT_S;
    req.sink.body = &body;
    rc = do_request(d, &req, "ping", err);
    if (!rc && (req.sink.status != 200 || !body.data || strncmp(body.data, "OK", 2)))
        rc = ty_err_set(err, TY_EENGINE, NULL,
                        "ping: the container engine at '%s' answered HTTP %ld, not OK", d->host,
                        req.sink.status);
    ty_buf_cleanup(&body);
    return rc;
}

int docker_is_podman(struct docker *d, struct ty_err *err)
{
    json_t *v = NULL, *comp;
    long status = 0;
    size_t i;
    int rc = call(d, "GET", "/version", NULL, TY_DOCKER_SHORT_S, "version", &status, &v, err);

    if (rc)
        return rc;
    rc = 0;
    json_array_foreach(json_object_get(v, "Components"), i, comp)
    {
        const char *name = json_string_value(json_object_get(comp, "Name"));
        if (name && strstr(name, "Podman"))
            rc = 1;
    }
    json_decref(v);
    return rc;
}

int docker_image_exists(struct docker *d, const char *image, struct ty_err *err)
{
    char path[512];
    long status = 0;
    int rc = check_name(image, "image inspect", err);
    if (rc)
        return rc;
    snprintf(path, sizeof(path), "/images/%s/json", image);
    rc = call(d, "GET", path, NULL, TY_DOCKER_SHORT_S, "image inspect", &status, NULL, err);
    if (rc == -TY_ENOTFOUND) {
        ty_err_clear(err);
        return 0;
    }
    return rc ? rc : 1;
}

/* Splits "repo[:tag]" at the tag's colon (one after the last slash). */
static void split_repo_tag(const char *repo_tag, char *repo, size_t rn, char *tag, size_t tn)
{
    const char *slash = strrchr(repo_tag, '/');
    const char *colon = strrchr(slash ? slash : repo_tag, ':');
    if (colon) {
        snprintf(repo, rn, "%.*s", (int)(colon - repo_tag), repo_tag);
        snprintf(tag, tn, "%s", colon + 1);
    } else {
        snprintf(repo, rn, "%s", repo_tag);
        snprintf(tag, tn, "latest");
    }
}

/*
 * Scans the (tail of the) import answer, a sequence of JSON objects: an "error" member means
 * the import failed; the last "sha256:" id seen (Docker: "status", Podman: "id") is the image.
 */
static int import_result(const struct ty_buf *b, char *image_id, size_t n, struct ty_err *err)
{
    const char *p = b->data ? b->data : "";
    size_t left = b->len;

    while (left) {
        json_error_t je;
        json_t *j;
        const char *e, *id;
        while (left && (*p == ' ' || *p == '\r' || *p == '\n' || *p == '\t')) {
            p++;
            left--;
        }
        if (!left)
            break;
        j = json_loadb(p, left, JSON_DISABLE_EOF_CHECK, &je);
        if (!j) {
            /* A cut first object of a tail: skip to the next line. */
            const char *nl = memchr(p, '\n', left);
            if (!nl)
                break;
            left -= (size_t)(nl + 1 - p);
            p = nl + 1;
            continue;
        }
        e = json_string_value(json_object_get(j, "error"));
        if (e) {
            int rc = ty_err_set(err, TY_EENGINE, NULL, "image import: %s", e);
            json_decref(j);
            return rc;
        }
        id = json_string_value(json_object_get(j, "id"));
        if (!id || strncmp(id, "sha256:", 7))
            id = json_string_value(json_object_get(j, "status"));
        if (id && !strncmp(id, "sha256:", 7))
            snprintf(image_id, n, "%s", id);
        json_decref(j);
        if (je.position == 0 || (size_t)je.position > left)
            break;
        p += je.position;
        left -= (size_t)je.position;
    }
    return 0;
}

int docker_image_import(struct docker *d, const char *tar_path, const char *repo_tag,
                        const char *const *changes, struct ty_err *err)
{
    char repo[256], tag[128], image_id[80] = "";
    struct ty_buf q, body;
    struct request req = {0};
    struct stat st;
    FILE *f = NULL;
    long status = 0;
    int rc;

    ty_buf_init(&q, TY_DOCKER_MAX_URL - 64);
    ty_buf_init(&body, TY_DOCKER_MAX_ERRBODY);
    rc = check_name(repo_tag, "image import", err);
    if (rc)
        goto out;
    split_repo_tag(repo_tag, repo, sizeof(repo), tag, sizeof(tag));
    f = fopen(tar_path, "rb");
    if (!f || fstat(fileno(f), &st)) {
        rc = ty_err_set(err, TY_EIO, NULL, "image import: cannot open '%s': %s", tar_path,
                        strerror(errno));
        goto out;
    }
    rc = ty_buf_puts(&q, "/images/create?fromSrc=-");
    /* repo=name:tag (what Podman honours) and tag= (what Docker honours). */
    if (!rc)
        rc = query_add(d->curl, &q, "repo", repo_tag);
    if (!rc)
        rc = query_add(d->curl, &q, "tag", tag);
    for (size_t i = 0; !rc && changes && changes[i]; i++)
        rc = query_add(d->curl, &q, "changes", changes[i]);
    if (rc) {
        rc = ty_err_set(err, -rc, NULL, "image import: query too long");
        goto out;
    }
    req.method = "POST";
    req.path = q.data;
    req.upload = f;
    req.upload_size = (curl_off_t)st.st_size;
    req.timeout_s = TY_DOCKER_NO_TIMEOUT;
    req.sink.body = &body;
    req.sink.keep_tail = 1; /* Docker streams progress messages; only the end matters */
    ty_log(TY_LOG_INFO, "docker.import", "image='%s' file='%s' bytes=%lld", repo_tag, tar_path,
           (long long)st.st_size);
    rc = do_request(d, &req, "image import", err);
    if (rc)
        goto out;
    if (req.sink.status >= 300) {
        rc = engine_error(&req, "image import", err);
        goto out;
    }
    rc = import_result(&body, image_id, sizeof(image_id), err);
    if (rc)
        goto out;
    rc = docker_image_exists(d, repo_tag, err);
    if (rc < 0)
        goto out;
    if (rc == 0) {
        /* Podman 4.3 names the import docker.io/<repo>:latest: tag it as asked. */
        const char *src = image_id[0] ? image_id : repo;
        ty_buf_reset(&q);
        rc = ty_buf_printf(&q, "/images/%s/tag", src);
        if (!rc)
            rc = query_add(d->curl, &q, "repo", repo);
        if (!rc)
            rc = query_add(d->curl, &q, "tag", tag);
        if (rc) {
            rc = ty_err_set(err, -rc, NULL, "image tag: query too long");
            goto out;
        }
        rc = call(d, "POST", q.data, NULL, TY_DOCKER_SHORT_S, "image tag", &status, NULL, err);
        if (rc)
            goto out;
        rc = docker_image_exists(d, repo_tag, err);
        if (rc == 0)
            rc = ty_err_set(err, TY_EENGINE, NULL,
                            "image import: '%s' not found after import and tag", repo_tag);
        if (rc < 0)
            goto out;
    }
    rc = 0;
    ty_log(TY_LOG_INFO, "docker.imported", "image='%s' id=%s", repo_tag,
           image_id[0] ? image_id : "?");
out:
    if (f)
        fclose(f);
    ty_buf_cleanup(&q);
    ty_buf_cleanup(&body);
    return rc;
}

/* Adds a NULL-terminated string list as a JSON array member (nothing when list is NULL). */
static int set_strv(json_t *o, const char *key, const char *const *list)
{
    json_t *a;
    if (!list)
        return 0;
    a = json_array();
    if (!a)
        return -TY_ENOMEM;
    for (size_t i = 0; list[i]; i++) {
        if (json_array_append_new(a, json_string(list[i]))) {
            json_decref(a);
            return -TY_EINVAL; /* not UTF-8 */
        }
    }
    return json_object_set_new(o, key, a) ? -TY_ENOMEM : 0;
}

/* Adds the confinement members of c to HostConfig hc. 0, or nonzero when out of memory. */
static int create_confine(json_t *hc, const struct docker_create *c)
{
    int rc = 0;

    rc |= json_object_set_new(hc, "Privileged", json_false());
    if (c->cap_drop_all)
        rc |= json_object_set_new(hc, "CapDrop", json_pack("[s]", "ALL"));
    if (c->cap_add)
        rc |= set_strv(hc, "CapAdd", c->cap_add);
    if (c->no_new_privileges || c->seccomp) {
        json_t *so = json_array();
        char *opt = NULL;
        if (c->no_new_privileges)
            rc |= so ? json_array_append_new(so, json_string("no-new-privileges")) : -1;
        if (c->seccomp && (opt = malloc(strlen(c->seccomp) + 9)) != NULL)
            snprintf(opt, strlen(c->seccomp) + 9, "seccomp=%s", c->seccomp);
        if (c->seccomp)
            rc |= so && opt ? json_array_append_new(so, json_string(opt)) : -1;
        free(opt);
        rc |= so ? json_object_set_new(hc, "SecurityOpt", so) : -1;
    }
    if (c->pids_limit > 0)
        rc |= json_object_set_new(hc, "PidsLimit", json_integer(c->pids_limit));
    if (c->readonly_rootfs)
        rc |= json_object_set_new(hc, "ReadonlyRootfs", json_true());
    if (c->tmpfs) {
        json_t *t = json_object();
        for (size_t i = 0; t && c->tmpfs[i]; i++) {
            const char *colon = strchr(c->tmpfs[i], ':');
            char *path =
                strndup(c->tmpfs[i], colon ? (size_t)(colon - c->tmpfs[i]) : strlen(c->tmpfs[i]));
            rc |= path ? json_object_set_new(t, path, json_string(colon ? colon + 1 : "")) : -1;
            free(path);
        }
        rc |= t ? json_object_set_new(hc, "Tmpfs", t) : -1;
    }
    if (c->shm_bytes > 0)
        rc |= json_object_set_new(hc, "ShmSize", json_integer(c->shm_bytes));
    if (c->userns_mode)
        rc |= json_object_set_new(hc, "UsernsMode", json_string(c->userns_mode));
    return rc;
}

static json_t *create_body(const struct docker_create *c, struct ty_err *err)
{
    json_t *o = json_object(), *hc = json_object();
    int rc = 0;

    if (!o || !hc)
        goto nomem;
    rc |= json_object_set_new(o, "Image", json_string(c->image));
    if (c->hostname)
        rc |= json_object_set_new(o, "Hostname", json_string(c->hostname));
    if (c->working_dir)
        rc |= json_object_set_new(o, "WorkingDir", json_string(c->working_dir));
    rc |= json_object_set_new(o, "AttachStdout", json_true());
    rc |= json_object_set_new(o, "AttachStderr", json_true());
    rc |= json_object_set_new(o, "Tty", json_false());
    if (c->labels && !json_is_object(c->labels)) {
        json_decref(o);
        json_decref(hc);
        ty_err_set(err, TY_EINVAL, "labels", "container create: labels must be an object");
        return NULL;
    }
    if (c->labels) {
        const char *k;
        json_t *v;
        json_object_foreach(c->labels, k, v)
        {
            if (!json_is_string(v)) {
                json_decref(o);
                json_decref(hc);
                ty_err_set(err, TY_EINVAL, "labels", "container create: label '%s' is not a string",
                           k);
                return NULL;
            }
        }
        rc |= json_object_set(o, "Labels", c->labels);
    }
    if (set_strv(o, "Entrypoint", c->entrypoint) || set_strv(o, "Cmd", c->cmd) ||
        set_strv(o, "Env", c->env) || set_strv(hc, "Binds", c->binds)) {
        json_decref(o);
        json_decref(hc);
        ty_err_set(err, TY_EINVAL, NULL, "container create: argument is not valid UTF-8");
        return NULL;
    }
    if (c->memory_bytes > 0) {
        rc |= json_object_set_new(hc, "Memory", json_integer(c->memory_bytes));
        /* No swap beyond the limit, as on a SageMaker instance. */
        rc |= json_object_set_new(hc, "MemorySwap", json_integer(c->memory_bytes));
    }
    if (c->nano_cpus > 0)
        rc |= json_object_set_new(hc, "NanoCpus", json_integer(c->nano_cpus));
    if (c->net_container) {
        char mode[256];
        snprintf(mode, sizeof(mode), "container:%s", c->net_container);
        rc |= json_object_set_new(hc, "NetworkMode", json_string(mode));
    } else if (c->network_none)
        rc |= json_object_set_new(hc, "NetworkMode", json_string("none"));
    else if (c->network) {
        json_t *ep = json_object(), *al = json_array();
        rc |= json_object_set_new(hc, "NetworkMode", json_string(c->network));
        for (size_t i = 0; c->aliases && c->aliases[i]; i++)
            rc |= json_array_append_new(al, json_string(c->aliases[i]));
        rc |= json_object_set_new(ep, "Aliases", al);
        rc |= json_object_set_new(o, "NetworkingConfig",
                                  json_pack("{s:{s:o}}", "EndpointsConfig", c->network, ep));
    } else if (c->network_mode) {
        rc |= json_object_set_new(hc, "NetworkMode", json_string(c->network_mode));
    }
    if (c->extra_hosts && c->extra_hosts[0]) {
        json_t *eh = json_array();
        for (size_t i = 0; eh && c->extra_hosts[i]; i++)
            rc |= json_array_append_new(eh, json_string(c->extra_hosts[i]));
        rc |= eh ? json_object_set_new(hc, "ExtraHosts", eh) : -1;
    }
    rc |= create_confine(hc, c);
    if (c->devices && c->devices[0] && c->device_ids) {
        json_t *ids = json_array(), *dr;
        for (size_t i = 0; ids && c->device_ids[i]; i++)
            rc |= json_array_append_new(ids, json_string(c->device_ids[i]));
        dr = ids ? json_pack("[{s:s, s:o, s:[[s]]}]", "Driver", "nvidia", "DeviceIDs", ids,
                             "Capabilities", "gpu")
                 : NULL;
        rc |= dr ? json_object_set_new(hc, "DeviceRequests", dr) : -1;
    } else if (c->gpus) {
        json_t *dr = json_pack("[{s:s, s:I, s:[[s]]}]", "Driver", "nvidia", "Count",
                               (json_int_t)(c->gpus < 0 ? -1 : c->gpus), "Capabilities", "gpu");
        rc |= dr ? json_object_set_new(hc, "DeviceRequests", dr) : -1;
    }
    rc |= json_object_set_new(o, "HostConfig", hc);
    hc = NULL;
    if (rc)
        goto nomem;
    return o;
nomem:
    json_decref(o);
    json_decref(hc);
    ty_err_set(err, TY_ENOMEM, NULL, "container create: out of memory");
    return NULL;
}

json_t *docker__create_body(const struct docker_create *c, struct ty_err *err)
{
    return create_body(c, err);
}

int docker_create(struct docker *d, const struct docker_create *c, char *id, size_t n,
                  struct ty_err *err)
{
    struct ty_buf q;
    json_t *body = NULL, *resp = NULL, *w;
    char *json = NULL;
    const char *cid;
    long status = 0;
    int rc, lp;

    ty_buf_init(&q, 1024);
    if (!c || !c->image)
        return ty_err_set(err, TY_EINVAL, NULL, "container create: no image");
    rc = check_name(c->image, "container create", err);
    if (rc)
        return rc;
    lp = c->libpod && c->devices && c->devices[0];
    rc = ty_buf_puts(&q, lp ? "/v4.0.0/libpod/containers/create" : "/containers/create");
    if (!rc && c->name && !lp)
        rc = query_add(d->curl, &q, "name", c->name);
    if (rc) {
        rc = ty_err_set(err, -rc, NULL, "container create: name too long");
        goto out;
    }
    body = lp ? docker__libpod_body(c, err) : create_body(c, err);
    if (!body) {
        rc = err ? -err->code : -TY_EINVAL;
        goto out;
    }
    json = json_dumps(body, JSON_COMPACT);
    if (!json) {
        rc = ty_err_set(err, TY_ENOMEM, NULL, "container create: out of memory");
        goto out;
    }
    rc = call(d, "POST", q.data, json, TY_DOCKER_LONG_S, "container create", &status, &resp, err);
    if (rc == -TY_ENOTFOUND) {
        /* "no such image" is the engine's word; keep it an engine error */
        rc = -TY_EENGINE;
        if (err)
            err->code = TY_EENGINE;
    }
    if (rc)
        goto out;
    cid = json_string_value(json_object_get(resp, "Id"));
    if (!cid || strlen(cid) + 1 > n) {
        rc = ty_err_set(err, TY_EENGINE, NULL, "container create: no usable Id in the answer");
        goto out;
    }
    w = json_object_get(resp, "Warnings");
    for (size_t i = 0; i < json_array_size(w); i++) {
        const char *s = json_string_value(json_array_get(w, i));
        if (s && *s)
            ty_log(TY_LOG_WARN, "docker.create.warning", "image='%s' warning='%s'", c->image, s);
    }
    memcpy(id, cid, strlen(cid) + 1);
out:
    free(json);
    json_decref(body);
    json_decref(resp);
    ty_buf_cleanup(&q);
    return rc;
}

int docker_start(struct docker *d, const char *id, struct ty_err *err)
{
    char path[320];
    long status = 0;
    int rc = check_name(id, "container start", err);
    if (rc)
        return rc;
    snprintf(path, sizeof(path), "/containers/%s/start", id);
    /* 304: already started. */
    return call(d, "POST", path, NULL, TY_DOCKER_LONG_S, "container start", &status, NULL, err);
}

int docker_rename(struct docker *d, const char *id, const char *name, struct ty_err *err)
{
    char path[600];
    long status = 0;
    int rc = check_name(id, "container rename", err);
    if (!rc)
        rc = check_name(name, "container rename", err);
    if (rc)
        return rc;
    snprintf(path, sizeof(path), "/containers/%s/rename?name=%s", id, name);
    return call(d, "POST", path, NULL, TY_DOCKER_LONG_S, "container rename", &status, NULL, err);
}

int docker_kill(struct docker *d, const char *id, const char *signal, struct ty_err *err)
{
    struct ty_err e;
    char path[400];
    long status = 0;
    int rc = check_name(id, "container kill", err);
    if (rc)
        return rc;
    if (!signal)
        signal = "SIGKILL";
    for (const char *p = signal; *p; p++) {
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')) || p - signal > 16)
            return ty_err_set(err, TY_EINVAL, NULL, "container kill: invalid signal '%s'", signal);
    }
    snprintf(path, sizeof(path), "/containers/%s/kill?signal=%s", id, signal);
    ty_err_clear(&e);
    rc = call(d, "POST", path, NULL, TY_DOCKER_SHORT_S, "container kill", &status, NULL, &e);
    if (rc == -TY_EENGINE &&
        (status == 409 || strstr(e.msg, "not running") || strstr(e.msg, "can only kill running") ||
         strstr(e.msg, "state improper")))
        return 0; /* Docker: 409 "is not running"; Podman 4.3: 500 "can only kill running
                     containers ...: container state improper" */
    if (rc && err)
        *err = e;
    return rc;
}

int docker_inspect(struct docker *d, const char *id, struct docker_state *st, struct ty_err *err)
{
    char path[320];
    long status = 0;
    json_t *resp = NULL, *s;
    const char *str;
    struct docker_state out;
    int rc = check_name(id, "container inspect", err);
    if (rc)
        return rc;
    snprintf(path, sizeof(path), "/containers/%s/json", id);
    rc = call(d, "GET", path, NULL, TY_DOCKER_SHORT_S, "container inspect", &status, &resp, err);
    if (rc)
        return rc;
    s = json_object_get(resp, "State");
    if (!json_is_object(s)) {
        json_decref(resp);
        return ty_err_set(err, TY_EENGINE, NULL, "container inspect: no State in the answer");
    }
    memset(&out, 0, sizeof(out));
    out.running = json_is_true(json_object_get(s, "Running"));
    out.exit_code = (int)json_integer_value(json_object_get(s, "ExitCode"));
    out.oom_killed = json_is_true(json_object_get(s, "OOMKilled"));
    str = json_string_value(json_object_get(s, "Status"));
    snprintf(out.status, sizeof(out.status), "%s", str ? str : "");
    out.started_at = time_to_epoch_s(json_string_value(json_object_get(s, "StartedAt")));
    out.finished_at = time_to_epoch_s(json_string_value(json_object_get(s, "FinishedAt")));
    out.pid = (int)json_integer_value(json_object_get(s, "Pid"));
    str = json_string_value(json_object_get(resp, "LogPath"));
    if (str && strlen(str) < sizeof(out.log_path))
        memcpy(out.log_path, str, strlen(str) + 1);
    str = json_string_value(json_object_get(resp, "Id"));
    if (str && strlen(str) < sizeof(out.id))
        memcpy(out.id, str, strlen(str) + 1);
    json_decref(resp);
    *st = out;
    return 0;
}

int docker_stats(struct docker *d, const char *id, struct docker_stats *st, struct ty_err *err)
{
    char path[320];
    long status = 0;
    json_t *resp = NULL, *cpu, *mem;
    struct docker_stats out;
    int rc = check_name(id, "container stats", err);
    if (rc)
        return rc;
    snprintf(path, sizeof(path), "/containers/%s/stats?stream=false&one-shot=true", id);
    rc = call(d, "GET", path, NULL, TY_DOCKER_SHORT_S, "container stats", &status, &resp, err);
    if (rc)
        return rc;
    memset(&out, 0, sizeof(out));
    cpu = json_object_get(resp, "cpu_stats");
    mem = json_object_get(resp, "memory_stats");
    out.cpu_total_ns =
        json_number_value(json_object_get(json_object_get(cpu, "cpu_usage"), "total_usage"));
    out.system_ns = json_number_value(json_object_get(cpu, "system_cpu_usage"));
    out.online_cpus = (int)json_integer_value(json_object_get(cpu, "online_cpus"));
    out.mem_usage = json_number_value(json_object_get(mem, "usage"));
    out.mem_limit = json_number_value(json_object_get(mem, "limit"));
    json_decref(resp);
    *st = out;
    return 0;
}

int docker_wait(struct docker *d, const char *id, int *exit_code, struct ty_err *err)
{
    char path[320];
    long status = 0;
    json_t *resp = NULL, *code;
    const char *emsg;
    int rc = check_name(id, "container wait", err);
    if (rc)
        return rc;
    snprintf(path, sizeof(path), "/containers/%s/wait", id);
    rc = call(d, "POST", path, NULL, TY_DOCKER_NO_TIMEOUT, "container wait", &status, &resp, err);
    if (rc)
        return rc;
    code = json_object_get(resp, "StatusCode");
    emsg = json_string_value(json_object_get(json_object_get(resp, "Error"), "Message"));
    if (!json_is_integer(code)) {
        rc = ty_err_set(err, TY_EENGINE, NULL, "container wait: %s",
                        emsg ? emsg : "no StatusCode in the answer");
    } else {
        *exit_code = (int)json_integer_value(code);
    }
    json_decref(resp);
    return rc;
}

int docker_logs(struct docker *d, const char *id, int follow, int64_t since_s, docker_line_cb cb,
                void *ud, struct ty_err *err)
{
    char path[400];
    struct docker__demux dm;
    struct ty_buf ebody;
    struct request req = {0};
    int rc = check_name(id, "container logs", err);
    if (rc)
        return rc;
    if (since_s > 0)
        snprintf(path, sizeof(path),
                 "/containers/%s/logs?stdout=1&stderr=1&timestamps=1&follow=%d&since=%lld", id,
                 follow ? 1 : 0, (long long)since_s);
    else
        snprintf(path, sizeof(path), "/containers/%s/logs?stdout=1&stderr=1&timestamps=1&follow=%d",
                 id, follow ? 1 : 0);
    docker__demux_init(&dm, 1, TY_DOCKER_MAX_LINE, cb, ud);
    ty_buf_init(&ebody, TY_DOCKER_MAX_ERRBODY);
    req.method = "GET";
    req.path = path;
    req.timeout_s = follow ? TY_DOCKER_NO_TIMEOUT : TY_DOCKER_LONG_S;
    req.sink.body = &ebody;
    req.sink.dm = &dm;
    rc = do_request(d, &req, "container logs", err);
    if (!rc && req.sink.status >= 300)
        rc = engine_error(&req, "container logs", err);
    if (!rc && !dm.stopped && docker__demux_finish(&dm) == -TY_EENGINE) {
        json_t *e =
            json_loadb(dm.partial[0].data ? dm.partial[0].data : "", dm.partial[0].len, 0, NULL);
        const char *msg = json_string_value(json_object_get(e, "message"));
        rc = ty_err_set(err, TY_EENGINE, NULL,
                        "container logs: the engine failed while sending "
                        "them: %s",
                        msg ? msg : "an error body instead of the log stream");
        json_decref(e);
    }
    docker__demux_cleanup(&dm);
    ty_buf_cleanup(&ebody);
    return rc;
}

int docker_remove(struct docker *d, const char *id, int force, struct ty_err *err)
{
    char path[400];
    long status = 0;
    int rc = check_name(id, "container remove", err);
    if (rc)
        return rc;
    snprintf(path, sizeof(path), "/containers/%s?v=1%s", id, force ? "&force=1" : "");
    rc = call(d, "DELETE", path, NULL, TY_DOCKER_LONG_S, "container remove", &status, NULL, err);
    if (rc == -TY_ENOTFOUND) {
        ty_err_clear(err);
        return 0;
    }
    return rc;
}

int docker_image_tag(struct docker *d, const char *src, const char *repo_tag, struct ty_err *err)
{
    char repo[256], tag[128];
    struct ty_buf q;
    long status = 0;
    int rc = check_name(src, "image tag", err);

    if (!rc)
        rc = check_name(repo_tag, "image tag", err);
    if (rc)
        return rc;
    split_repo_tag(repo_tag, repo, sizeof(repo), tag, sizeof(tag));
    ty_buf_init(&q, TY_DOCKER_MAX_URL - 64);
    rc = ty_buf_printf(&q, "/images/%s/tag", src);
    if (!rc)
        rc = query_add(d->curl, &q, "repo", repo);
    if (!rc)
        rc = query_add(d->curl, &q, "tag", tag);
    if (rc)
        rc = ty_err_set(err, -rc, NULL, "image tag: query too long");
    else
        rc = call(d, "POST", q.data, NULL, TY_DOCKER_SHORT_S, "image tag", &status, NULL, err);
    ty_buf_cleanup(&q);
    return rc;
}

int docker_image_remove(struct docker *d, const char *image, struct ty_err *err)
{
    char path[400];
    long status = 0;
    int rc = check_name(image, "image remove", err);

    if (rc)
        return rc;
    snprintf(path, sizeof(path), "/images/%s", image);
    rc = call(d, "DELETE", path, NULL, TY_DOCKER_LONG_S, "image remove", &status, NULL, err);
    if (rc == -TY_ENOTFOUND) {
        ty_err_clear(err);
        return 0;
    }
    return rc;
}

json_t *docker_image_list(struct docker *d, struct ty_err *err)
{
    json_t *resp = NULL;
    long status = 0;

    if (call(d, "GET", "/images/json", NULL, TY_DOCKER_SHORT_S, "image list", &status, &resp,
             err) != 0)
        return NULL;
    if (!json_is_array(resp)) {
        json_decref(resp);
        ty_err_set(err, TY_EENGINE, NULL, "image list: the engine's answer is not a list");
        return NULL;
    }
    return resp;
}

int docker_network_create(struct docker *d, const char *name, int internal, const char *bridge,
                          json_t *labels, struct ty_err *err)
{
    json_t *body;
    char *json;
    long status = 0;
    int rc = check_name(name, "network create", err);

    if (rc)
        return rc;
    body = json_pack("{s:s, s:s, s:b, s:b, s:O*}", "Name", name, "Driver", "bridge",
                     "CheckDuplicate", 1, "Internal", internal != 0, "Labels", labels);
    if (body && bridge &&
        json_object_set_new(body, "Options",
                            json_pack("{s:s}", "com.docker.network.bridge.name", bridge))) {
        json_decref(body);
        body = NULL;
    }
    json = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!json)
        return ty_err_set(err, TY_ENOMEM, NULL, "network create: out of memory");
    rc = call(d, "POST", "/networks/create", json, TY_DOCKER_LONG_S, "network create", &status,
              NULL, err);
    free(json);
    if (rc && status == 409) { /* already there: a job restarted on this engine */
        ty_err_clear(err);
        return 0;
    }
    return rc;
}

int docker_network_remove(struct docker *d, const char *name, struct ty_err *err)
{
    char path[400];
    long status = 0;
    int rc = check_name(name, "network remove", err);

    if (rc)
        return rc;
    snprintf(path, sizeof(path), "/networks/%s", name);
    rc = call(d, "DELETE", path, NULL, TY_DOCKER_LONG_S, "network remove", &status, NULL, err);
    if (rc == -TY_ENOTFOUND) {
        ty_err_clear(err);
        return 0;
    }
    return rc;
}

json_t *docker_list(struct docker *d, const char *label_filter, struct ty_err *err)
{
    struct ty_buf q;
    json_t *resp = NULL;
    long status = 0;
    int rc;

    ty_buf_init(&q, TY_DOCKER_MAX_URL - 64);
    rc = ty_buf_puts(&q, "/containers/json?all=1");
    if (!rc && label_filter) {
        json_t *f = json_pack("{s:[s]}", "label", label_filter);
        char *fs = f ? json_dumps(f, JSON_COMPACT) : NULL;
        rc = fs ? query_add(d->curl, &q, "filters", fs) : -TY_EINVAL;
        free(fs);
        json_decref(f);
    }
    if (rc) {
        ty_err_set(err, -rc, NULL, "container list: invalid label filter");
        goto out;
    }
    rc = call(d, "GET", q.data, NULL, TY_DOCKER_SHORT_S, "container list", &status, &resp, err);
    if (!rc && !json_is_array(resp)) {
        ty_err_set(err, TY_EENGINE, NULL, "container list: answer is not an array");
        json_decref(resp);
        resp = NULL;
    }
out:
    ty_buf_cleanup(&q);
    return rc ? NULL : resp;
}
