/*
 * http_proxy.h - private to ty_http: the PROXY protocol v1 listener (http_proxy_listen in
 * http.h) and its header parser.
 *
 * Owns: the second listening socket, its accept thread, the allow list of peers, reading and
 * checking each connection's header, and handing the connection to MHD under the header's
 * source address (MHD_add_connection). Does not own MHD or the requests.
 */
#ifndef TY_CP_HTTP_PROXY_H
#define TY_CP_HTTP_PROXY_H

#include <stddef.h>
#include <sys/socket.h>

#include "ty_err.h"

#define HTTP_PROXY_LINE_MAX  107 /* the v1 header's longest form, CRLF included */
#define HTTP_PROXY_DEADLINE  5   /* seconds a peer has to send the whole header */
#define HTTP_PROXY_ALLOW_MAX 64  /* entries of the allow list */

/*
 * One v1 header line (without its CRLF): "PROXY TCP4 <src> <dst> <sport> <dport>" or TCP6,
 * addresses in inet_pton's forms of that family, ports 0..65535 without leading zeros.
 * "PROXY UNKNOWN" and anything else are refused. OUT: src (the source address and port). 0
 * or -1.
 */
int http_proxy_parse(const char *line, size_t n, struct sockaddr_storage *src, socklen_t *srclen);

struct MHD_Daemon;
struct http__proxy;

/* Binds listen (http__bind) and starts the accept thread. new: http__proxy_stop frees. NULL
   with err on failure (a bad allow list, the address in use). */
struct http__proxy *http__proxy_start(struct MHD_Daemon *mhd, const char *listen, const char *allow,
                                      struct ty_err *err);
int http__proxy_port(const struct http__proxy *p);
/* Stops accepting (joins the thread) and closes the socket. NULL is a no-op. Call before
   MHD_stop_daemon. */
void http__proxy_stop(struct http__proxy *p);

/* http.c's bind: a listening socket on "HOST:PORT" / "[V6]:PORT". OUT: *port. fd or -1 + err. */
int http__bind(const char *listen_addr, int *port_out, struct ty_err *err);

#endif
