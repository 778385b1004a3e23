/*
 * http_proxy.c - the PROXY protocol v1 listener for agents on other hosts (http_proxy.h).
 *
 * Every connection is judged before MHD sees a byte of it: a peer outside the allow list is
 * closed at once; an allowed peer must send one v1 header line within HTTP_PROXY_DEADLINE
 * seconds, read one byte at a time so that nothing after the CRLF is consumed; the socket is
 * then given to MHD with the header's source address, so MHD's per-address limit, the logs and
 * route.c's fence see the job the agent relayed, not the agent. The main listener never reads
 * a PROXY header: a job cannot name its own address there. One thread accepts and reads in
 * turn; only allowed peers (trainyard's agents) can hold it, for the deadline at most.
 */
#define _GNU_SOURCE /* accept4 */
#include "http_proxy.h"

#include "ty_log.h"
#include "ty_net.h"
#include "ty_time.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct http__proxy {
    struct MHD_Daemon *mhd;
    int fd, port;
    int wake[2]; /* http__proxy_stop writes wake[1] */
    pthread_t thr;
    struct ty_cidr allow[HTTP_PROXY_ALLOW_MAX];
    size_t nallow;
    atomic_long refused;
};

/* The next space-separated field of line[*i..n) into out (size cap). 1, or 0 when empty or
   too long. */
static int http_proxy_field(const char *line, size_t n, size_t *i, char *out, size_t cap)
{
    size_t k = 0;
    while (*i < n && line[*i] != ' ') {
        if (k + 1 >= cap)
            return 0;
        out[k++] = line[(*i)++];
    }
    out[k] = '\0';
    if (*i < n)
        (*i)++; /* the single space */
    return k > 0;
}

static int http_proxy_port_of(const char *s, unsigned *port)
{
    unsigned v = 0;
    size_t k = strlen(s);
    if (k == 0 || k > 5 || (k > 1 && s[0] == '0'))
        return 0;
    for (size_t i = 0; i < k; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v > 65535)
        return 0;
    *port = v;
    return 1;
}

int http_proxy_parse(const char *line, size_t n, struct sockaddr_storage *src, socklen_t *srclen)
{
    char proto[8], sa[48], da[48], sp[8], dp[8];
    unsigned sport, dport;
    size_t i = 0;
    int fam;

    if (n < 6 || memcmp(line, "PROXY ", 6) != 0 || memchr(line, '\0', n))
        return -1;
    i = 6;
    if (!http_proxy_field(line, n, &i, proto, sizeof(proto)) ||
        !http_proxy_field(line, n, &i, sa, sizeof(sa)) ||
        !http_proxy_field(line, n, &i, da, sizeof(da)) ||
        !http_proxy_field(line, n, &i, sp, sizeof(sp)) ||
        !http_proxy_field(line, n, &i, dp, sizeof(dp)) || i != n || line[n - 1] == ' ')
        return -1;
    if (strcmp(proto, "TCP4") == 0)
        fam = AF_INET;
    else if (strcmp(proto, "TCP6") == 0)
        fam = AF_INET6;
    else
        return -1;
    if (!http_proxy_port_of(sp, &sport) || !http_proxy_port_of(dp, &dport))
        return -1;
    memset(src, 0, sizeof(*src));
    if (fam == AF_INET) {
        struct sockaddr_in *s4 = (struct sockaddr_in *)src;
        struct in_addr d4;
        if (inet_pton(AF_INET, sa, &s4->sin_addr) != 1 || inet_pton(AF_INET, da, &d4) != 1)
            return -1;
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)sport);
        *srclen = sizeof(*s4);
    } else {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)src;
        struct in6_addr d6;
        if (inet_pton(AF_INET6, sa, &s6->sin6_addr) != 1 || inet_pton(AF_INET6, da, &d6) != 1)
            return -1;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)sport);
        *srclen = sizeof(*s6);
    }
    return 0;
}

/* 1 when the peer's address is on the allow list (an IPv4-mapped peer counts as IPv4). */
static int http_proxy_allowed(const struct http__proxy *p, const struct sockaddr_storage *peer)
{
    struct ty_cidr ip = {0};
    if (peer->ss_family == AF_INET) {
        ip.bits = 32;
        memcpy(ip.a, &((const struct sockaddr_in *)peer)->sin_addr, 4);
    } else if (peer->ss_family == AF_INET6) {
        const struct in6_addr *a6 = &((const struct sockaddr_in6 *)peer)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a6)) {
            ip.bits = 32;
            memcpy(ip.a, a6->s6_addr + 12, 4);
        } else {
            ip.v6 = 1;
            ip.bits = 128;
            memcpy(ip.a, a6->s6_addr, 16);
        }
    } else {
        return 0;
    }
    for (size_t i = 0; i < p->nallow; i++)
        if (ty_cidr_has(&p->allow[i], &ip))
            return 1;
    return 0;
}

/* Reads fd's header line, a byte at a time, within the deadline. OUT: line (CRLF dropped),
 *n. 0, or -1 (too long, malformed end, closed, too slow, stopping). */
static int http_proxy_read_line(struct http__proxy *p, int fd, char *line, size_t *n)
{
    double until = ty_mono_s() + HTTP_PROXY_DEADLINE;
    size_t k = 0;

    while (k < HTTP_PROXY_LINE_MAX) {
        struct pollfd pf[2] = {{.fd = fd, .events = POLLIN}, {.fd = p->wake[0], .events = POLLIN}};
        double left = until - ty_mono_s();
        ssize_t r;
        if (left <= 0 || poll(pf, 2, (int)(left * 1000) + 1) <= 0 || pf[1].revents)
            return -1;
        r = recv(fd, line + k, 1, 0);
        if (r < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (r <= 0)
            return -1;
        k++;
        if (k >= 2 && line[k - 2] == '\r' && line[k - 1] == '\n') {
            *n = k - 2;
            return 0;
        }
    }
    return -1;
}

static void http_proxy_one(struct http__proxy *p, int fd, const struct sockaddr_storage *peer)
{
    char line[HTTP_PROXY_LINE_MAX + 1], who[64] = "";
    struct sockaddr_storage src;
    socklen_t srclen;
    size_t n = 0;

    getnameinfo((const struct sockaddr *)peer, sizeof(*peer), who, sizeof(who), NULL, 0,
                NI_NUMERICHOST);
    if (!http_proxy_allowed(p, peer)) {
        atomic_fetch_add(&p->refused, 1);
        ty_log(TY_LOG_WARN, "http.proxy.refused", "peer=%s reason='not in --proxy-from'", who);
        close(fd);
        return;
    }
    if (http_proxy_read_line(p, fd, line, &n) != 0 || http_proxy_parse(line, n, &src, &srclen)) {
        atomic_fetch_add(&p->refused, 1);
        ty_log(TY_LOG_WARN, "http.proxy.refused",
               "peer=%s reason='no valid PROXY protocol v1 header'", who);
        close(fd);
        return;
    }
    /* MHD closes fd itself when it cannot take it */
    if (MHD_add_connection(p->mhd, fd, (const struct sockaddr *)&src, srclen) != MHD_YES)
        ty_log(TY_LOG_WARN, "http.proxy.refused", "peer=%s reason='the server is full'", who);
}

static void *http_proxy_thread(void *arg)
{
    struct http__proxy *p = arg;
    for (;;) {
        struct pollfd pf[2] = {{.fd = p->fd, .events = POLLIN},
                               {.fd = p->wake[0], .events = POLLIN}};
        struct sockaddr_storage peer;
        socklen_t plen = sizeof(peer);
        int fd;
        if (poll(pf, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (pf[1].revents)
            break;
        memset(&peer, 0, sizeof(peer));
        fd = accept4(p->fd, (struct sockaddr *)&peer, &plen, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        http_proxy_one(p, fd, &peer);
    }
    return NULL;
}

struct http__proxy *http__proxy_start(struct MHD_Daemon *mhd, const char *listen, const char *allow,
                                      struct ty_err *err)
{
    struct http__proxy *p = calloc(1, sizeof(*p));
    if (!p) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    p->mhd = mhd;
    p->fd = p->wake[0] = p->wake[1] = -1;
    if (ty_cidr_list(allow, p->allow, HTTP_PROXY_ALLOW_MAX, &p->nallow, err) != 0) {
        ty_err_set(err, TY_EINVAL, "proxy-from", "--proxy-from: %s", err->msg);
        goto fail;
    }
    p->fd = http__bind(listen, &p->port, err);
    if (p->fd < 0)
        goto fail;
    if (pipe2(p->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        ty_err_set(err, TY_EIO, NULL, "proxy listener: pipe: %s", strerror(errno));
        goto fail;
    }
    if (pthread_create(&p->thr, NULL, http_proxy_thread, p) != 0) {
        ty_err_set(err, TY_EIO, NULL, "proxy listener: cannot start its thread");
        goto fail;
    }
    ty_log(TY_LOG_INFO, "http.proxy.listening", "listen=%s port=%d allow='%s'", listen, p->port,
           allow);
    return p;
fail:
    if (p->fd >= 0)
        close(p->fd);
    if (p->wake[0] >= 0) {
        close(p->wake[0]);
        close(p->wake[1]);
    }
    free(p);
    return NULL;
}

int http__proxy_port(const struct http__proxy *p)
{
    return p ? p->port : 0;
}

void http__proxy_stop(struct http__proxy *p)
{
    if (!p)
        return;
    if (write(p->wake[1], "x", 1) < 0) {
        /* the pipe is never full: one byte, once */
    }
    pthread_join(p->thr, NULL);
    close(p->fd);
    close(p->wake[0]);
    close(p->wake[1]);
    free(p);
}
