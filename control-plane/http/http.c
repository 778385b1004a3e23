/*
 * http.c - libmicrohttpd front end: bound socket, thread pool, whole-request buffering, limits.
 *
 * The raw request URI (needed byte-for-byte by SigV4) is captured through MHD's URI log
 * callback, which runs before MHD unescapes the path. Each connection's state is a struct
 * http_request allocated there and freed in the completion callback.
 *
 * Limits: MHD enforces the connection caps (total, per address) and the idle timeout. MHD
 * 0.9.75 has no read deadline (its timeout restarts on every byte), so each connection is
 * tracked from MHD's connection notification (struct http__conn, on a list) with the deadline
 * of the phase it is in; a reaper thread shuts down the socket of every connection past its
 * deadline, and MHD then closes it as a client gone. MHD notifies CLOSED before it closes the
 * socket, and the list is locked around both, so the reaper never touches a reused fd.
 */
#include "http.h"

#include "http_proxy.h"
#include "metrics.h"
#include "ty_log.h"
#include "ty_time.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <microhttpd.h>
#include <netdb.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* One open connection, from MHD's STARTED notification to its CLOSED one. */
struct http__conn {
    struct http__conn *prev, *next;
    int fd;          /* borrowed from MHD */
    double deadline; /* monotonic seconds; 0 = none in this phase */
};

struct http_server {
    struct MHD_Daemon *mhd;
    int fd;
    int port;
    http_handler handler;
    void *ud;
    _Atomic(http_prepare) prepare;
    struct http_limits lim;
    pthread_mutex_t mu; /* guards conns, every deadline, stopping */
    pthread_cond_t cv;
    struct http__conn *conns;
    int stopping;
    int reaper_started;
    pthread_t reaper;
    struct http__proxy *proxy; /* http_proxy_listen's listener; NULL = none */
};

/* Sets the deadline of conn's current phase: secs from now, none when secs <= 0. */
static void http_deadline(struct http_server *srv, struct MHD_Connection *conn, int secs)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct http__conn *c = ci ? ci->socket_context : NULL;
    if (!c)
        return;
    pthread_mutex_lock(&srv->mu);
    c->deadline = secs > 0 ? ty_mono_s() + secs : 0;
    pthread_mutex_unlock(&srv->mu);
}

static void http_notify_conn(void *cls, struct MHD_Connection *conn, void **socket_context,
                             enum MHD_ConnectionNotificationCode toe)
{
    struct http_server *srv = cls;
    struct http__conn *c;

    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        c = calloc(1, sizeof(*c));
        if (!c || !ci) {
            free(c);
            *socket_context = NULL;
            return;
        }
        c->fd = ci->connect_fd;
        pthread_mutex_lock(&srv->mu);
        c->deadline = srv->lim.header_timeout_s > 0 ? ty_mono_s() + srv->lim.header_timeout_s : 0;
        c->next = srv->conns;
        if (srv->conns)
            srv->conns->prev = c;
        srv->conns = c;
        pthread_mutex_unlock(&srv->mu);
        *socket_context = c;
        return;
    }
    c = *socket_context;
    if (!c)
        return;
    pthread_mutex_lock(&srv->mu);
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&srv->mu);
    free(c);
    *socket_context = NULL;
}

/* The reaper: every 200 ms, shuts down the sockets of connections past their deadline. */
static void *http_reaper(void *arg)
{
    struct http_server *srv = arg;
    pthread_mutex_lock(&srv->mu);
    while (!srv->stopping) {
        struct timespec ts;
        double now = ty_mono_s();
        int cut = 0;
        for (struct http__conn *c = srv->conns; c; c = c->next) {
            if (c->deadline > 0 && now >= c->deadline) {
                shutdown(c->fd, SHUT_RDWR);
                c->deadline = 0;
                cut++;
            }
        }
        if (cut)
            ty_log(TY_LOG_INFO, "http.deadline", "closed=%d reason=\"request not read in time\"",
                   cut);
        ty_deadline_ms(&ts, 200);
        pthread_cond_timedwait(&srv->cv, &srv->mu, &ts);
    }
    pthread_mutex_unlock(&srv->mu);
    return NULL;
}

void http_response_header(struct http_response *resp, const char *name, const char *value)
{
    if (resp->nhdr >= HTTP_MAX_RESP_HEADERS)
        return;
    resp->hdr_name[resp->nhdr] = name;
    resp->hdr_value[resp->nhdr] = strdup(value ? value : "");
    resp->nhdr++;
}

void http_response_header_dup(struct http_response *resp, const char *name, const char *value)
{
    char *n;
    if (resp->nhdr >= HTTP_MAX_RESP_HEADERS || !(n = strdup(name)))
        return;
    resp->hdr_name_dyn[resp->nhdr] = n;
    http_response_header(resp, n, value);
}

void http_set_prepare(struct http_server *srv, http_prepare fn)
{
    atomic_store(&srv->prepare, fn);
}

const char *http_header(const struct http_request *req, const char *name)
{
    for (size_t i = 0; i < req->nheaders; i++) {
        if (strcasecmp(req->headers[i].name, name) == 0)
            return req->headers[i].value;
    }
    return NULL;
}

/* splitmix64's finaliser: a bijection of 64-bit words that mixes every bit into every bit. */
static uint64_t http_mix(uint64_t x)
{
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/*
 * OUT: id (37 bytes) = a new request id in UUID form. Per thread: a key drawn once from the
 * kernel and a counter; the first half is a bijection of the counter (unique per thread for 2^64
 * requests), so no id repeats on a thread and threads differ by their keys. Not a secret: it
 * only names a request in logs and answers, so one draw per thread instead of one per request.
 */
static void http_request_id(char *id)
{
    static _Thread_local uint64_t key[2], ctr;
    static _Thread_local int seeded;
    static const char hex[] = "0123456789abcdef";
    static const int groups[] = {8, 4, 4, 4, 12};
    uint64_t w[2];
    int g = 0, left = groups[0];

    if (!seeded) {
        if (RAND_bytes((unsigned char *)key, sizeof(key)) != 1)
            key[0] = (uint64_t)ty_mono_s() * 1000003ULL ^ (uint64_t)(uintptr_t)&seeded;
        seeded = 1;
    }
    w[0] = http_mix(key[0] + ++ctr * 0x9e3779b97f4a7c15ULL);
    w[1] = http_mix(w[0] ^ key[1]);
    for (int i = 0; i < 32; i++) {
        *id++ = hex[(w[i / 16] >> (60 - 4 * (i % 16))) & 15];
        if (--left == 0 && g < 4) {
            *id++ = '-';
            left = groups[++g];
        }
    }
    *id = '\0';
}

static void *http_uri_log(void *cls, const char *uri, struct MHD_Connection *conn)
{
    struct http_request *req;
    const char *q;
    (void)cls;
    (void)conn;

    req = calloc(1, sizeof(*req));
    if (!req)
        return NULL;
    q = strchr(uri, '?');
    if (q) {
        req->path = strndup(uri, (size_t)(q - uri));
        req->query = strdup(q + 1);
    } else {
        req->path = strdup(uri);
        req->query = strdup("");
    }
    ty_buf_init(&req->body, HTTP_MAX_BODY);
    http_request_id(req->request_id);
    return req;
}

static void http_request_free(struct http_request *req)
{
    if (!req)
        return;
    if (req->sink.free)
        req->sink.free(req->sink.ctx);
    free(req->path);
    free(req->query);
    ty_buf_cleanup(&req->body);
    free(req);
}

static void http_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                           enum MHD_RequestTerminationCode toe)
{
    struct http_server *srv = cls;
    (void)toe;
    http_request_free(*con_cls);
    *con_cls = NULL;
    /* the next request on this connection has the header deadline from now */
    http_deadline(srv, conn, srv->lim.header_timeout_s);
}

static enum MHD_Result http_collect_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                           const char *value)
{
    struct http_request *req = cls;
    (void)kind;
    if (req->nheaders < HTTP_MAX_HEADERS) {
        req->headers[req->nheaders].name = key;
        req->headers[req->nheaders].value = value ? value : "";
        req->nheaders++;
    }
    return MHD_YES;
}

struct http__stream {
    long (*read)(void *ctx, char *buf, size_t max);
    void (*free)(void *ctx);
    void *ctx;
    unsigned long long len, done;
};

static ssize_t http_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct http__stream *st = cls;
    long n;

    (void)pos;
    if (st->done >= st->len)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (max > st->len - st->done)
        max = (size_t)(st->len - st->done);
    n = st->read(st->ctx, buf, max);
    if (n == 0 && st->len == MHD_SIZE_UNKNOWN)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (n <= 0) /* an error, or the body ended before its Content-Length */
        return MHD_CONTENT_READER_END_WITH_ERROR;
    st->done += (unsigned long long)n;
    return (ssize_t)n;
}

static void http_stream_free(void *cls)
{
    struct http__stream *st = cls;
    if (st->free)
        st->free(st->ctx);
    free(st);
}

/* Queues resp on conn; with close, "Connection: close" (MHD then closes the connection once it
   is sent, whatever of the request's body is left unread). */
static enum MHD_Result http_send(struct MHD_Connection *conn, struct http_response *resp,
                                 int close_after)
{
    struct MHD_Response *r;
    enum MHD_Result ret;

    if (resp->stream_read) {
        struct http__stream *st = calloc(1, sizeof(*st));
        r = NULL;
        if (st) {
            st->read = resp->stream_read;
            st->free = resp->stream_free;
            st->ctx = resp->stream_ctx;
            st->len = resp->stream_len;
            r = MHD_create_response_from_callback(resp->stream_len, 64 * 1024, http_stream_read, st,
                                                  http_stream_free);
            if (!r)
                free(st);
        }
        if (!r && resp->stream_free)
            resp->stream_free(resp->stream_ctx);
    } else if (resp->has_file) {
        r = MHD_create_response_from_fd_at_offset64(resp->file_len, resp->file_fd, resp->file_off);
        if (!r)
            close(resp->file_fd); /* MHD closes it once it took it */
    } else {
        /* the body was malloc'd (http.h): MHD frees it once sent, no copy */
        if (resp->body)
            r = MHD_create_response_from_buffer(resp->len, resp->body, MHD_RESPMEM_MUST_FREE);
        else
            r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        if (r)
            resp->body = NULL;
    }
    if (!r)
        ret = MHD_NO;
    else {
        if (resp->content_type)
            MHD_add_response_header(r, "Content-Type", resp->content_type);
        for (int i = 0; i < resp->nhdr; i++) {
            const char *v = resp->hdr_value[i];
            /* MHD refuses an empty value; for user metadata (S3's x-amz-meta-* with "") a lone
               space, optional whitespace that every client strips to the empty value */
            if ((!v || !v[0]) && strncasecmp(resp->hdr_name[i], "x-amz-meta-", 11) == 0)
                v = " ";
            MHD_add_response_header(r, resp->hdr_name[i], v);
        }
        if (close_after)
            MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
        ret = MHD_queue_response(conn, (unsigned)resp->status, r);
        MHD_destroy_response(r);
    }
    free(resp->body);
    for (int i = 0; i < resp->nhdr; i++) {
        free(resp->hdr_value[i]);
        free(resp->hdr_name_dyn[i]);
    }
    return ret;
}

/* Runs the handler on req and queues its answer (close: see http_send). */
static enum MHD_Result http_answer(struct http_server *srv, struct MHD_Connection *conn,
                                   struct http_request *req, int close_after)
{
    struct http_response resp;
    struct timespec t0, t1;

    memset(&resp, 0, sizeof(resp));
    resp.status = 500;
    if (!req->body.data)
        ty_buf_append(&req->body, "", 0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    srv->handler(req, &resp, srv->ud);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    metrics_observe(req->metric_service, req->metric_op, resp.status,
                    (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    return http_send(conn, &resp, close_after);
}

/* 1 when req's Content-Length announces more than HTTP_MAX_BODY bytes (or is not a number). */
static int http_announced_over(const struct http_request *req)
{
    for (size_t i = 0; i < req->nheaders; i++) {
        const char *v = req->headers[i].value;
        char *end;
        unsigned long long n;

        if (!req->headers[i].name || strcasecmp(req->headers[i].name, "content-length") != 0 || !v)
            continue;
        errno = 0;
        n = strtoull(v, &end, 10);
        if (end == v || errno == ERANGE)
            return *v != '\0'; /* a malformed length: MHD refuses it anyway */
        return n > HTTP_MAX_BODY;
    }
    return 0;
}

/* The numeric address of conn's peer into out ("" when MHD does not say). */
static void http_client_addr(struct MHD_Connection *conn, char *out, size_t n)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    out[0] = '\0';
    if (!sa)
        return;
    if (getnameinfo(sa,
                    sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                              : sizeof(struct sockaddr_in),
                    out, (socklen_t)n, NULL, 0, NI_NUMERICHOST) != 0)
        out[0] = '\0';
}

static enum MHD_Result http_access(void *cls, struct MHD_Connection *conn, const char *url,
                                   const char *method, const char *version, const char *upload_data,
                                   size_t *upload_data_size, void **con_cls)
{
    struct http_server *srv = cls;
    struct http_request *req = *con_cls;
    (void)url;
    (void)version;

    if (!req)
        return MHD_NO;
    if (!req->method) {
        /* first call: headers only; the body has its own deadline from here */
        http_deadline(srv, conn, srv->lim.body_timeout_s);
        req->method = method;
        http_client_addr(conn, req->client, sizeof(req->client));
        MHD_get_connection_values(conn, MHD_HEADER_KIND, http_collect_header, req);
        {
            http_prepare prep = atomic_load(&srv->prepare);
            if (prep)
                prep(req, srv->ud);
        }
        if (!req->sink.write && http_announced_over(req)) {
            /* refused from the headers, before any of the body is read, and the connection
               closed after the answer: a client announcing 1 GB is not read to its end */
            req->too_big = 1;
            return http_answer(srv, conn, req, 1);
        }
        return MHD_YES;
    }
    if (*upload_data_size) {
        if (req->sink.write) {
            if (!req->sink_failed &&
                req->sink.write(req->sink.ctx, upload_data, *upload_data_size) != 0)
                req->sink_failed = 1;
        } else if (!req->too_big &&
                   ty_buf_append(&req->body, upload_data, *upload_data_size) != 0) {
            req->too_big = 1;
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    http_deadline(srv, conn, 0); /* read whole: only the idle timeout from here */
    return http_answer(srv, conn, req, 0);
}

int http__bind(const char *listen_addr, int *port_out, struct ty_err *err)
{
    char host[256];
    const char *colon, *port;
    struct addrinfo hints, *res = NULL;
    int fd = -1, one = 1, rc;
    size_t hl;

    colon = strrchr(listen_addr, ':');
    if (!colon)
        return ty_err_set(err, TY_EINVAL, "listen", "--listen '%s' is not HOST:PORT", listen_addr);
    hl = (size_t)(colon - listen_addr);
    if (hl >= sizeof(host))
        return ty_err_set(err, TY_EINVAL, "listen", "--listen host is too long");
    memcpy(host, listen_addr, hl);
    host[hl] = '\0';
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
        memmove(host, host + 1, hl - 2);
        host[hl - 2] = '\0';
    }
    port = colon + 1;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
    if (rc != 0)
        return ty_err_set(err, TY_EINVAL, "listen", "cannot listen on %s: %s", listen_addr,
                          gai_strerror(rc));
    fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        goto fail;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, res->ai_addr, res->ai_addrlen) != 0)
        goto fail;
    if (listen(fd, 512) != 0)
        goto fail;
    {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        getsockname(fd, (struct sockaddr *)&ss, &sl);
        if (ss.ss_family == AF_INET)
            *port_out = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        else
            *port_out = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    }
    freeaddrinfo(res);
    return fd;
fail:
    rc = errno;
    if (fd >= 0)
        close(fd);
    freeaddrinfo(res);
    return ty_err_set(err, TY_EIO, "listen", "cannot listen on %s: %s", listen_addr, strerror(rc));
}

/* Raises RLIMIT_NOFILE's soft limit to the hard one; returns the soft limit now in force. */
static long http_raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return -1;
    if (rl.rlim_cur < rl.rlim_max) {
        rlim_t old = rl.rlim_cur;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            rl.rlim_cur = old;
    }
    return rl.rlim_cur == RLIM_INFINITY ? LONG_MAX : (long)rl.rlim_cur;
}

struct http_server *http_start(const char *listen_addr, int threads,
                               const struct http_limits *limits, http_handler h, void *ud,
                               struct ty_err *err)
{
    static const struct http_limits defaults = HTTP_LIMITS_DEFAULT;
    struct http_server *srv = calloc(1, sizeof(*srv));
    unsigned nthreads = (unsigned)(threads > 0 ? threads : 1);
    long nofile;
    int fd;

    if (!srv) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    srv->lim = limits ? *limits : defaults;
    /* every connection is a descriptor: keep 512 for redis, the engine, files and agents */
    nofile = http_raise_nofile();
    if (nofile > 0 && srv->lim.max_connections > nofile - 512) {
        int fit = nofile > 512 + 16 ? (int)(nofile - 512) : 16;
        ty_log(TY_LOG_WARN, "http.limits",
               "max_connections=%d lowered to %d to fit the open-file limit %ld (raise ulimit -n)",
               srv->lim.max_connections, fit, nofile);
        srv->lim.max_connections = fit;
    }
    /* MHD splits the total cap between its pool threads */
    if ((unsigned)srv->lim.max_connections < nthreads)
        srv->lim.max_connections = (int)nthreads;
    fd = http__bind(listen_addr, &srv->port, err);
    if (fd < 0) {
        free(srv);
        return NULL;
    }
    srv->fd = fd;
    srv->handler = h;
    srv->ud = ud;
    pthread_mutex_init(&srv->mu, NULL);
    pthread_cond_init(&srv->cv, NULL);
    srv->mhd = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_USE_ITC, 0, NULL,
        NULL, http_access, srv, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_THREAD_POOL_SIZE, nthreads,
        MHD_OPTION_URI_LOG_CALLBACK, http_uri_log, NULL, MHD_OPTION_NOTIFY_COMPLETED,
        http_completed, srv, MHD_OPTION_NOTIFY_CONNECTION, http_notify_conn, srv,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)srv->lim.idle_timeout_s,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)srv->lim.max_connections,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)srv->lim.max_per_client, MHD_OPTION_END);
    if (!srv->mhd) {
        ty_err_set(err, TY_EIO, "listen", "cannot start the http server on %s", listen_addr);
        goto fail;
    }
    if (pthread_create(&srv->reaper, NULL, http_reaper, srv) != 0) {
        ty_err_set(err, TY_EIO, "listen", "cannot start the http deadline thread");
        MHD_stop_daemon(srv->mhd);
        goto fail;
    }
    srv->reaper_started = 1;
    ty_log(TY_LOG_INFO, "http.limits",
           "mode=epoll threads=%u max_connections=%d max_connections_per_client=%d "
           "idle_timeout=%d header_timeout=%d body_timeout=%d nofile=%ld",
           nthreads, srv->lim.max_connections, srv->lim.max_per_client, srv->lim.idle_timeout_s,
           srv->lim.header_timeout_s, srv->lim.body_timeout_s, nofile);
    return srv;
fail:
    close(fd);
    pthread_cond_destroy(&srv->cv);
    pthread_mutex_destroy(&srv->mu);
    free(srv);
    return NULL;
}

int http_port(const struct http_server *srv)
{
    return srv->port;
}

int http_proxy_listen(struct http_server *srv, const char *listen_addr, const char *allow,
                      struct ty_err *err)
{
    if (srv->proxy)
        return ty_err_set(err, TY_EINVAL, NULL, "the proxy listener is already started");
    srv->proxy = http__proxy_start(srv->mhd, listen_addr, allow, err);
    return srv->proxy ? 0 : -err->code;
}

int http_proxy_port(const struct http_server *srv)
{
    return http__proxy_port(srv->proxy);
}

void http_stop(struct http_server *srv)
{
    if (!srv)
        return;
    if (srv->reaper_started) {
        pthread_mutex_lock(&srv->mu);
        srv->stopping = 1;
        pthread_cond_signal(&srv->cv);
        pthread_mutex_unlock(&srv->mu);
        pthread_join(srv->reaper, NULL);
    }
    http__proxy_stop(srv->proxy);
    MHD_stop_daemon(srv->mhd);
    close(srv->fd);
    pthread_cond_destroy(&srv->cv);
    pthread_mutex_destroy(&srv->mu);
    free(srv);
}
