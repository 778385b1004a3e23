/*
 * http.h - the HTTP front end: libmicrohttpd with a thread pool on one listening socket.
 *
 * Owns: the listening socket (bound here, so a port in use is one clear error), the MHD
 * daemon, reading each request whole into a bounded buffer, and writing the response the
 * handler produced, and the front door's limits (connections in total and per client
 * address, idle timeout, header and body read deadlines). Does not own routing or protocols
 * (route.c). The handler runs on MHD's pool threads (each an epoll loop), concurrently.
 */
#ifndef TY_CP_HTTP_H
#define TY_CP_HTTP_H

#include <stddef.h>

#include "ty_buf.h"
#include "ty_err.h"
#include "ty_kv.h"

#define HTTP_MAX_HEADERS      96
#define HTTP_MAX_BODY         (16u * 1024u * 1024u)
#define HTTP_MAX_RESP_HEADERS 64

/*
 * A body sink: when set on a request (by the prepare hook, at header time), every upload
 * chunk goes to write(ctx, data, n) instead of the bounded buffer. A non-zero return stops
 * the writes (the rest of the body is drained and dropped; sink_failed is set). free(ctx)
 * runs when the request completes, whatever happened.
 */
struct http_sink {
    int (*write)(void *ctx, const char *data, size_t n);
    void (*free)(void *ctx);
    void *ctx;
};

struct http_request {
    const char *method; /* borrowed from MHD */
    char *path;         /* raw path, percent-encoding kept */
    char *query;        /* raw query without '?', "" when none */
    struct ty_kv headers[HTTP_MAX_HEADERS];
    size_t nheaders;
    struct ty_buf body;
    int too_big;           /* the body went over HTTP_MAX_BODY */
    char client[64];       /* the peer's numeric address ("127.0.0.2", "::1"; "" unknown) */
    char request_id[40];   /* x-amzn-RequestId of this request */
    struct http_sink sink; /* set by the prepare hook to stream the body; zero otherwise */
    int sink_failed;       /* sink.write returned non-zero */
    /* what metrics.c counts this request under, set by the handler (borrowed static strings;
       NULL: "other") */
    const char *metric_service, *metric_op;
};

struct http_response {
    int status;
    const char *content_type; /* borrowed static string */
    char *body;               /* new (malloc'd): freed by http.c (MHD) after sending */
    size_t len;
    const char *hdr_name[HTTP_MAX_RESP_HEADERS]; /* borrowed static strings */
    char *hdr_value[HTTP_MAX_RESP_HEADERS];      /* new: freed by http.c */
    int nhdr;
    /* A body streamed from a file instead of body: file_len bytes of file_fd from file_off.
       http.c owns (and closes) file_fd once has_file is set. */
    int has_file;
    int file_fd;
    unsigned long long file_off, file_len;
    char *hdr_name_dyn[HTTP_MAX_RESP_HEADERS]; /* new: names added by http_response_header_dup */
    /* Or a body produced by a reader: stream_len bytes, read in turn by stream_read (bytes
       read, 0 at the end, -1 on error; it may block). http.c calls stream_free(stream_ctx) once
       the response is done with (sent, or the client went away). */
    long (*stream_read)(void *ctx, char *buf, size_t max);
    void (*stream_free)(void *ctx);
    void *stream_ctx;
    unsigned long long stream_len;
};

struct http_server;

/*
 * The front door's limits. Connections beyond max_connections or max_per_client are closed
 * as soon as they are accepted; a connection is closed when nothing moved either way for
 * idle_timeout_s, when a request's line and headers took longer than header_timeout_s (counted
 * from the connection's start or the end of its previous response: slowloris), or when its
 * body took longer than body_timeout_s after the headers (0: no body deadline).
 */
struct http_limits {
    int max_connections;
    int max_per_client;
    int idle_timeout_s;
    int header_timeout_s;
    int body_timeout_s;
};
#define HTTP_LIMITS_DEFAULT                                                                        \
    {                                                                                              \
        4096, 256, 60, 30, 3600                                                                    \
    }

/* The request handler. Fills resp; resp->body may be NULL for an empty body. */
typedef void (*http_handler)(struct http_request *req, struct http_response *resp, void *ud);

/* Adds a response header (value copied). Silently ignores more than HTTP_MAX_RESP_HEADERS. */
void http_response_header(struct http_response *resp, const char *name, const char *value);
/* As http_response_header with the name copied too (for names built at run time). */
void http_response_header_dup(struct http_response *resp, const char *name, const char *value);

/*
 * Called once per request at header time (method, path, query and headers known, no body
 * yet), before anything else; it may set req->sink to stream the body. ud is the server's.
 */
typedef void (*http_prepare)(struct http_request *req, void *ud);
/* Installs the prepare hook; call right after http_start (requests before it are buffered). */
void http_set_prepare(struct http_server *srv, http_prepare fn);

/* First value of header name (case-insensitive), or NULL. borrowed: valid while req lives. */
const char *http_header(const struct http_request *req, const char *name);

/*
 * Binds listen ("HOST:PORT", "[::1]:PORT") and starts threads worker threads calling h, under
 * limits (NULL: HTTP_LIMITS_DEFAULT; max_connections is lowered to fit RLIMIT_NOFILE, whose
 * soft limit is raised to the hard one first; both logged). new: caller stops and frees with
 * http_stop(). NULL and err with one clear line ("cannot listen on 127.0.0.1:8080: Address
 * already in use") on failure.
 */
struct http_server *http_start(const char *listen, int threads, const struct http_limits *limits,
                               http_handler h, void *ud, struct ty_err *err);
/* The port actually bound (useful with port 0). */
int http_port(const struct http_server *srv);
/*
 * A second listener, for trainyard's agents on other hosts (--proxy-listen, --proxy-from):
 * every connection to listen_addr must come from a peer in allow (a comma-separated list of
 * addresses and CIDR blocks) and open with a PROXY protocol v1 header ("PROXY TCP4 <src> <dst>
 * <sport> <dport>\r\n", or TCP6) within 5 seconds; what follows is served as if it came from
 * <src> (the per-client limit, the logs, req->client). Anything else is closed unanswered. The
 * main listener never reads such a header. 0, or -TY_E* with err (a bad list, the address in
 * use).
 */
int http_proxy_listen(struct http_server *srv, const char *listen_addr, const char *allow,
                      struct ty_err *err);
/* The port http_proxy_listen bound; 0 when there is none. */
int http_proxy_port(const struct http_server *srv);
/* Stops accepting, finishes in-flight requests and frees srv. NULL is a no-op. */
void http_stop(struct http_server *srv);

#endif
