/*
 * http.h - the HTTP front end: libmicrohttpd with a thread pool on one listening socket.
 *
 * Owns: the listening socket (bound here, so a port in use is one clear error), the MHD
 * daemon, reading each request whole into a bounded buffer, and writing the response the
 * handler produced. Does not own routing or protocols (route.c). The handler runs on MHD's
 * pool threads, concurrently.
 */
#ifndef TY_CP_HTTP_H
#define TY_CP_HTTP_H

#include <stddef.h>

#include "sigv4.h"
#include "ty_buf.h"
#include "ty_err.h"

#define HTTP_MAX_HEADERS 96
#define HTTP_MAX_BODY    (16u * 1024u * 1024u)

struct http_request {
    const char *method;  /* borrowed from MHD */
    char *path;          /* raw path, percent-encoding kept */
    char *query;         /* raw query without '?', "" when none */
    struct sigv4_header headers[HTTP_MAX_HEADERS];
    size_t nheaders;
    struct ty_buf body;
    int too_big;         /* the body went over HTTP_MAX_BODY */
    char request_id[40]; /* x-amzn-RequestId of this request */
};

struct http_response {
    int status;
    const char *content_type; /* borrowed static string */
    char *body;               /* new: freed by http.c after sending */
    size_t len;
    const char *hdr_name[8];  /* borrowed static strings */
    char *hdr_value[8];       /* new: freed by http.c */
    int nhdr;
};

/* The request handler. Fills resp; resp->body may be NULL for an empty body. */
typedef void (*http_handler)(struct http_request *req, struct http_response *resp, void *ud);

/* Adds a response header (value copied). Silently ignores more than 8 headers. */
void http_response_header(struct http_response *resp, const char *name, const char *value);

/* First value of header name (case-insensitive), or NULL. borrowed: valid while req lives. */
const char *http_header(const struct http_request *req, const char *name);

struct http_server;

/*
 * Binds listen ("HOST:PORT", "[::1]:PORT") and starts threads worker threads calling h.
 * new: caller stops and frees with http_stop(). NULL and err with one clear line
 * ("cannot listen on 127.0.0.1:8080: Address already in use") on failure.
 */
struct http_server *http_start(const char *listen, int threads, http_handler h, void *ud,
                               struct ty_err *err);
/* The port actually bound (useful with port 0). */
int http_port(const struct http_server *srv);
/* Stops accepting, finishes in-flight requests and frees srv. NULL is a no-op. */
void http_stop(struct http_server *srv);

#endif
