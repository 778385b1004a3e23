/*
 * http.c - libmicrohttpd front end: bound socket, thread pool, whole-request buffering.
 *
 * The raw request URI (needed byte-for-byte by SigV4) is captured through MHD's URI log
 * callback, which runs before MHD unescapes the path. Each connection's state is a struct
 * http_request allocated there and freed in the completion callback.
 */
#include "http.h"

#include "ty_log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <openssl/rand.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

struct http_server {
    struct MHD_Daemon *mhd;
    int fd;
    int port;
    http_handler handler;
    void *ud;
    _Atomic(http_prepare) prepare;
};

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

static void *http__uri_log(void *cls, const char *uri, struct MHD_Connection *conn)
{
    struct http_request *req;
    const char *q;
    unsigned char rnd[16];
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
    if (RAND_bytes(rnd, sizeof(rnd)) != 1)
        memset(rnd, 0, sizeof(rnd));
    snprintf(req->request_id, sizeof(req->request_id),
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1],
             rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7], rnd[8], rnd[9], rnd[10], rnd[11],
             rnd[12], rnd[13], rnd[14], rnd[15]);
    return req;
}

static void http__request_free(struct http_request *req)
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

static void http__completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                            enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    http__request_free(*con_cls);
    *con_cls = NULL;
}

static enum MHD_Result http__collect_header(void *cls, enum MHD_ValueKind kind, const char *key,
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

static ssize_t http__stream_read(void *cls, uint64_t pos, char *buf, size_t max)
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

static void http__stream_free(void *cls)
{
    struct http__stream *st = cls;
    if (st->free)
        st->free(st->ctx);
    free(st);
}

static enum MHD_Result http__send(struct MHD_Connection *conn, struct http_response *resp)
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
            r = MHD_create_response_from_callback(resp->stream_len, 64 * 1024, http__stream_read,
                                                  st, http__stream_free);
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
        r = MHD_create_response_from_buffer(resp->len, resp->body ? resp->body : (void *)"",
                                            MHD_RESPMEM_MUST_COPY);
    }
    if (!r)
        ret = MHD_NO;
    else {
        if (resp->content_type)
            MHD_add_response_header(r, "Content-Type", resp->content_type);
        for (int i = 0; i < resp->nhdr; i++)
            MHD_add_response_header(r, resp->hdr_name[i], resp->hdr_value[i]);
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

static enum MHD_Result http__access(void *cls, struct MHD_Connection *conn, const char *url,
                                    const char *method, const char *version,
                                    const char *upload_data, size_t *upload_data_size,
                                    void **con_cls)
{
    struct http_server *srv = cls;
    struct http_request *req = *con_cls;
    struct http_response resp;
    (void)url;
    (void)version;

    if (!req)
        return MHD_NO;
    if (!req->method) {
        /* first call: headers only */
        req->method = method;
        MHD_get_connection_values(conn, MHD_HEADER_KIND, http__collect_header, req);
        {
            http_prepare prep = atomic_load(&srv->prepare);
            if (prep)
                prep(req, srv->ud);
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
    memset(&resp, 0, sizeof(resp));
    resp.status = 500;
    if (!req->body.data)
        ty_buf_append(&req->body, "", 0);
    srv->handler(req, &resp, srv->ud);
    return http__send(conn, &resp);
}

static int http__bind(const char *listen_addr, int *port_out, struct ty_err *err)
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

struct http_server *http_start(const char *listen_addr, int threads, http_handler h, void *ud,
                               struct ty_err *err)
{
    struct http_server *srv = calloc(1, sizeof(*srv));
    int fd;

    if (!srv) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    fd = http__bind(listen_addr, &srv->port, err);
    if (fd < 0) {
        free(srv);
        return NULL;
    }
    srv->fd = fd;
    srv->handler = h;
    srv->ud = ud;
    srv->mhd = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, NULL, NULL,
        http__access, srv, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_THREAD_POOL_SIZE,
        (unsigned)(threads > 0 ? threads : 1), MHD_OPTION_URI_LOG_CALLBACK, http__uri_log, NULL,
        MHD_OPTION_NOTIFY_COMPLETED, http__completed, NULL, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)120, MHD_OPTION_CONNECTION_LIMIT, (unsigned)1000, MHD_OPTION_END);
    if (!srv->mhd) {
        close(fd);
        free(srv);
        ty_err_set(err, TY_EIO, "listen", "cannot start the http server on %s", listen_addr);
        return NULL;
    }
    return srv;
}

int http_port(const struct http_server *srv)
{
    return srv->port;
}

void http_stop(struct http_server *srv)
{
    if (!srv)
        return;
    MHD_stop_daemon(srv->mhd);
    close(srv->fd);
    free(srv);
}
