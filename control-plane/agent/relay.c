/*
 * relay.c - a TCP listener inside a container's network namespace, relayed to trainyard's API.
 *
 * Owns: the relay's thread, its listener, a wake pipe, the agent's own namespace fd (only while
 * binding), every relayed pair of sockets, and the process-wide table of job budgets (one entry
 * per job with a relay running, shared by that job's relays). See relay.h for the contract.
 *
 * Invariants: the thread is in the target namespace only between the two setns calls of
 * relay_bind and never connects or accepts there; if it cannot get back it ends (the relay
 * fails to start). One poll loop serves the listener and every connection: no thread per
 * connection. A connection is a pair (client: accepted in the container's namespace, server:
 * connected to the target from the agent's) with one bounded buffer per direction; EOF is
 * passed on as a half-close (shutdown SHUT_WR) once the buffer towards that side is drained.
 */
#define _GNU_SOURCE
#include "relay.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ty_log.h"
#include "ty_time.h"

/* One direction of a connection: bytes read from one side, not yet written to the other. */
struct relay_dir {
    char *buf; /* RELAY_BUF bytes, owned */
    size_t off, len;
    int eof;  /* the reading side sent FIN (or failed) */
    int shut; /* FIN passed on to the writing side */
};

struct relay_conn {
    int cfd, sfd;          /* client (container side), server (trainyard side) */
    int connecting;        /* sfd's non-blocking connect is under way */
    double last;           /* monotonic seconds of the last byte either way (or of the accept) */
    struct relay_dir up;   /* client -> server */
    struct relay_dir down; /* server -> client */
};

/* A job's budget, shared by its relays; in relay_jobs while refs > 0. Guarded by relay_jobs_mu
   except open, which the relays' threads change atomically. */
struct relay_job {
    struct relay_job *next;
    char *job; /* owned */
    int refs;  /* relays of this job running */
    int max;   /* connections at once, all its relays together */
    atomic_int open;
};

static pthread_mutex_t relay_jobs_mu = PTHREAD_MUTEX_INITIALIZER;
static struct relay_job *relay_jobs;

/* Takes a reference on job's budget (creating it with max). NULL when out of memory. */
static struct relay_job *relay_job_get(const char *job, int max)
{
    struct relay_job *j;

    pthread_mutex_lock(&relay_jobs_mu);
    for (j = relay_jobs; j && strcmp(j->job, job) != 0; j = j->next)
        ;
    if (!j && (j = calloc(1, sizeof(*j))) != NULL) {
        if (!(j->job = strdup(job))) {
            free(j);
            j = NULL;
        } else {
            j->max = max;
            atomic_init(&j->open, 0);
            j->next = relay_jobs;
            relay_jobs = j;
        }
    }
    if (j)
        j->refs++;
    pthread_mutex_unlock(&relay_jobs_mu);
    return j;
}

/* Drops a reference taken by relay_job_get; the last one frees the entry. NULL no-op. */
static void relay_job_put(struct relay_job *j)
{
    if (!j)
        return;
    pthread_mutex_lock(&relay_jobs_mu);
    if (--j->refs == 0) {
        for (struct relay_job **pp = &relay_jobs; *pp; pp = &(*pp)->next)
            if (*pp == j) {
                *pp = j->next;
                break;
            }
        free(j->job);
        free(j);
    }
    pthread_mutex_unlock(&relay_jobs_mu);
}

/* The key of relay_source_addr's hash: random, drawn once per process, so that no tenant can
   search offline for a job name whose address is another job's. */
static unsigned char relay_addr_key[32];
static pthread_once_t relay_addr_once = PTHREAD_ONCE_INIT;

static void relay_addr_key_init(void)
{
    if (RAND_bytes(relay_addr_key, sizeof(relay_addr_key)) != 1) {
        /* no CSPRNG: the clock and the pid still make it unpredictable enough to be unkeyed
           by name alone, and the agent logs it */
        uint64_t t = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
        memcpy(relay_addr_key, &t, sizeof(t));
        ty_log(TY_LOG_WARN, "agent.relay.weak_key", "note='RAND_bytes failed'");
    }
}

unsigned relay_source_addr(const char *job)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int ml = 0;
    const char *j = job ? job : "";
    uint32_t h;
    unsigned a, b, c;

    pthread_once(&relay_addr_once, relay_addr_key_init);
    if (!HMAC(EVP_sha256(), relay_addr_key, sizeof(relay_addr_key), (const unsigned char *)j,
              strlen(j), md, &ml) ||
        ml < 4)
        memset(md, 0, sizeof(md));
    h = (uint32_t)md[0] | (uint32_t)md[1] << 8 | (uint32_t)md[2] << 16 | (uint32_t)md[3] << 24;
    a = 1 + (h & 0xff) % 255;           /* 1..255: never 127.0.x.x */
    b = (h >> 8) & 0xff;                /* 0..255 */
    c = 1 + ((h >> 16) & 0xffff) % 254; /* 1..254 */
    return (127u << 24) | (a << 16) | (b << 8) | c;
}

struct relay {
    struct relay_opts o;
    struct relay_job *job;  /* the job's shared budget; NULL without o.job */
    struct sockaddr_in src; /* source of connections to a local target; sin_family 0 = none */
    int local;              /* the target is this host's own (relay_target_local) */
    char proxy[112];        /* "PROXY TCP4 <job> <target> " (ports follow), "" = no header */
    struct sockaddr_storage target;
    socklen_t target_len;
    int lfd;     /* listener, in the container's namespace */
    int wake[2]; /* relay_stop writes a byte to wake[1] */
    int port;    /* bound port */
    pthread_t thr;
    int started;
    pthread_mutex_t mu; /* guards ready/bind_err during start */
    pthread_cond_t cv;
    int ready; /* 0 binding, 1 listening, -1 failed */
    char bind_err[200];
    struct relay_conn *conns; /* max_conns slots; cfd < 0 = free */
    atomic_int open;
    atomic_long accepted, refused, idled;
};

/*
 * Whether r->target is this host's own API, however it is spelled: an IPv4 loopback address,
 * 0.0.0.0, ::, ::1, an IPv4-mapped one of those, or an address of one of this host's
 * interfaces (one a socket can bind). Such a target is reached from the job's own loopback
 * address (relay_source_addr), so that the server tells the job's traffic from the host's own
 * whatever --listen and --endpoint-url say; an IPv6 spelling is reached through IPv4
 * 127.0.0.1 (a server on [::] takes IPv4 too; one on an IPv6 address alone is then not
 * reached, and the job's calls fail rather than arrive as the host's). Sets r->local.
 */
static void relay_target_local(struct relay *r)
{
    in_port_t port = 0;
    uint32_t v4 = 0;
    int have_v4 = 0, local = 0, fd;

    if (r->target.ss_family == AF_INET) {
        struct sockaddr_in *sa = (struct sockaddr_in *)&r->target;
        v4 = ntohl(sa->sin_addr.s_addr);
        port = sa->sin_port;
        have_v4 = 1;
    } else if (r->target.ss_family == AF_INET6) {
        struct sockaddr_in6 *sa = (struct sockaddr_in6 *)&r->target;
        port = sa->sin6_port;
        if (IN6_IS_ADDR_V4MAPPED(&sa->sin6_addr)) {
            memcpy(&v4, &sa->sin6_addr.s6_addr[12], 4);
            v4 = ntohl(v4);
            have_v4 = 1;
        } else if (IN6_IS_ADDR_LOOPBACK(&sa->sin6_addr) ||
                   IN6_IS_ADDR_UNSPECIFIED(&sa->sin6_addr)) {
            local = 1;
        }
    }
    if (have_v4 && (v4 >> 24 == 127 || v4 == 0))
        local = 1;
    if (!local && (fd = socket(r->target.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0) {
        struct sockaddr_storage probe = r->target;
        if (probe.ss_family == AF_INET)
            ((struct sockaddr_in *)&probe)->sin_port = 0;
        else
            ((struct sockaddr_in6 *)&probe)->sin6_port = 0;
        local = bind(fd, (struct sockaddr *)&probe, r->target_len) == 0; /* one of ours */
        close(fd);
    }
    r->local = local;
    if (!local)
        return;
    if (!have_v4 || v4 == 0) { /* ::, ::1, 0.0.0.0, an IPv6 address of ours: 127.0.0.1 */
        struct sockaddr_in *sa = (struct sockaddr_in *)&r->target;
        memset(&r->target, 0, sizeof(r->target));
        sa->sin_family = AF_INET;
        sa->sin_port = port;
        sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        r->target_len = sizeof(*sa);
    } else if (r->target.ss_family == AF_INET6) { /* ::ffff:a.b.c.d: a.b.c.d */
        struct sockaddr_in *sa = (struct sockaddr_in *)&r->target;
        memset(&r->target, 0, sizeof(r->target));
        sa->sin_family = AF_INET;
        sa->sin_port = port;
        sa->sin_addr.s_addr = htonl(v4);
        r->target_len = sizeof(*sa);
    }
}

/* "http://host:port/path", "host:port", "[::1]:port": resolves into r->target. */
static int relay_resolve(struct relay *r, const char *target, struct ty_err *err)
{
    char host[256], port[16];
    const char *p = target, *end, *colon;
    struct addrinfo hints, *res = NULL, *pick;
    size_t hl;
    int def = 80, rc;

    if (!p || !*p)
        return ty_err_set(err, TY_EINVAL, NULL, "relay: no target address");
    if (strncmp(p, "http://", 7) == 0) {
        p += 7;
    } else if (strncmp(p, "https://", 8) == 0) {
        p += 8;
        def = 443;
    }
    end = p + strcspn(p, "/?#");
    if (*p == '[') {
        const char *rb = memchr(p, ']', (size_t)(end - p));
        if (!rb)
            return ty_err_set(err, TY_EINVAL, NULL, "relay: bad target '%s'", target);
        hl = (size_t)(rb - p - 1);
        if (hl >= sizeof(host))
            return ty_err_set(err, TY_EINVAL, NULL, "relay: bad target '%s'", target);
        memcpy(host, p + 1, hl);
        colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
    } else {
        colon = memchr(p, ':', (size_t)(end - p));
        hl = (size_t)((colon ? colon : end) - p);
        if (hl == 0 || hl >= sizeof(host))
            return ty_err_set(err, TY_EINVAL, NULL, "relay: bad target '%s'", target);
        memcpy(host, p, hl);
    }
    host[hl] = '\0';
    if (colon) {
        size_t pl = (size_t)(end - colon - 1);
        if (pl == 0 || pl >= sizeof(port))
            return ty_err_set(err, TY_EINVAL, NULL, "relay: bad target port in '%s'", target);
        memcpy(port, colon + 1, pl);
        port[pl] = '\0';
    } else {
        snprintf(port, sizeof(port), "%d", def);
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0 || !res)
        return ty_err_set(err, TY_EINVAL, NULL, "relay: cannot resolve '%s': %s", host,
                          gai_strerror(rc));
    pick =
        res; /* IPv4 first: "localhost" may resolve to ::1 while trainyard listens on 127.0.0.1 */
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next)
        if (ai->ai_family == AF_INET) {
            pick = ai;
            break;
        }
    memcpy(&r->target, pick->ai_addr, pick->ai_addrlen);
    r->target_len = pick->ai_addrlen;
    freeaddrinfo(res);
    relay_target_local(r);
    return 0;
}

/* Socket, bind 127.0.0.1:port, listen, in the calling thread's current namespace. */
static int relay_listen(struct relay *r)
{
    struct sockaddr_in a;
    socklen_t al = sizeof(a);
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -errno;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)r->o.port);
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 64) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &al) != 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    r->lfd = fd;
    r->port = ntohs(a.sin_port);
    return 0;
}

/* Binds the listener inside pid's network namespace; the thread ends up back in its own. 0, or
   -1 with r->bind_err; *lost is set when the thread could not return to its namespace. */
static int relay_bind(struct relay *r, int *lost)
{
    char path[64];
    int self = -1, ns = -1, rc = -1, e;

    *lost = 0;
    if (r->o.pid <= 0) {
        if ((e = relay_listen(r)) != 0)
            snprintf(r->bind_err, sizeof(r->bind_err), "listen on 127.0.0.1:%d: %s", r->o.port,
                     strerror(-e));
        return e ? -1 : 0;
    }
    self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (self < 0)
        self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    snprintf(path, sizeof(path), "/proc/%d/ns/net", r->o.pid);
    ns = open(path, O_RDONLY | O_CLOEXEC);
    if (self < 0 || ns < 0) {
        snprintf(r->bind_err, sizeof(r->bind_err), "open %s: %s",
                 self < 0 ? "/proc/self/ns/net" : path, strerror(errno));
        goto done;
    }
    if (setns(ns, CLONE_NEWNET) != 0) {
        snprintf(r->bind_err, sizeof(r->bind_err), "setns %s: %s", path, strerror(errno));
        goto done;
    }
    e = relay_listen(r);
    if (setns(self, CLONE_NEWNET) != 0) {
        *lost = 1;
        snprintf(r->bind_err, sizeof(r->bind_err), "setns back: %s", strerror(errno));
        goto done;
    }
    if (e != 0) {
        snprintf(r->bind_err, sizeof(r->bind_err), "listen on 127.0.0.1:%d in %s: %s", r->o.port,
                 path, strerror(-e));
        goto done;
    }
    rc = 0;
done:
    if (self >= 0)
        close(self);
    if (ns >= 0)
        close(ns);
    return rc;
}

static void relay_conn_close(struct relay *r, struct relay_conn *c)
{
    if (c->cfd < 0)
        return;
    /* counted first: whoever sees the close also sees the count (tests read it then) */
    atomic_fetch_sub(&r->open, 1);
    if (r->job)
        atomic_fetch_sub(&r->job->open, 1);
    close(c->cfd);
    if (c->sfd >= 0)
        close(c->sfd);
    free(c->up.buf);
    free(c->down.buf);
    memset(c, 0, sizeof(*c));
    c->cfd = c->sfd = -1;
}

/* The target's port (host order). */
static unsigned relay_target_port(const struct relay *r)
{
    if (r->target.ss_family == AF_INET)
        return ntohs(((const struct sockaddr_in *)&r->target)->sin_port);
    return ntohs(((const struct sockaddr_in6 *)&r->target)->sin6_port);
}

/* r->proxy: "PROXY TCP4 <src> <target> " for an IPv4 target, "PROXY TCP6 ::ffff:<src>
   <target> " for an IPv6 one (v1 wants both addresses of one family). 0 or -1. */
static int relay_proxy_prefix(struct relay *r, unsigned src)
{
    char s[INET_ADDRSTRLEN], t[INET6_ADDRSTRLEN];
    struct in_addr a = {.s_addr = htonl(src)};
    int v6 = r->target.ss_family == AF_INET6, w;
    const void *ta = v6 ? (const void *)&((struct sockaddr_in6 *)&r->target)->sin6_addr
                        : (const void *)&((struct sockaddr_in *)&r->target)->sin_addr;

    if (!inet_ntop(AF_INET, &a, s, sizeof(s)) ||
        !inet_ntop(v6 ? AF_INET6 : AF_INET, ta, t, sizeof(t)))
        return -1;
    w = snprintf(r->proxy, sizeof(r->proxy), "PROXY %s %s%s %s ", v6 ? "TCP6" : "TCP4",
                 v6 ? "::ffff:" : "", s, t);
    return w > 0 && (size_t)w < sizeof(r->proxy) ? 0 : -1;
}

/* Accepts every pending connection: relays it, or closes it when the cap is reached. */
static void relay_accept(struct relay *r)
{
    for (;;) {
        struct relay_conn *c = NULL;
        struct sockaddr_in peer = {0};
        socklen_t plen = sizeof(peer);
        int fd = accept4(r->lfd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC),
            sfd;

        if (fd < 0)
            return; /* EAGAIN, or a transient error: poll again */
        atomic_fetch_add(&r->accepted, 1);
        for (int i = 0; i < r->o.max_conns && !c; i++)
            if (r->conns[i].cfd < 0)
                c = &r->conns[i];
        if (c && r->job && atomic_fetch_add(&r->job->open, 1) >= r->job->max) {
            atomic_fetch_sub(&r->job->open, 1);
            c = NULL; /* the job's budget is spent, by this host or another */
        }
        if (!c) {
            atomic_fetch_add(&r->refused, 1);
            close(fd);
            continue;
        }
        sfd = socket(r->target.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        c->up.buf = malloc(RELAY_BUF);
        c->down.buf = malloc(RELAY_BUF);
        if (sfd < 0 || !c->up.buf || !c->down.buf ||
            (r->src.sin_family && bind(sfd, (struct sockaddr *)&r->src, sizeof(r->src)) != 0) ||
            (connect(sfd, (struct sockaddr *)&r->target, r->target_len) != 0 &&
             errno != EINPROGRESS)) {
            if (r->src.sin_family && sfd >= 0)
                ty_log(TY_LOG_WARN, "agent.relay.connect_failed", "port=%d error='%s'", r->port,
                       strerror(errno));
            if (r->job)
                atomic_fetch_sub(&r->job->open, 1);
            free(c->up.buf);
            free(c->down.buf);
            c->up.buf = c->down.buf = NULL;
            if (sfd >= 0)
                close(sfd);
            close(fd);
            continue;
        }
        if (r->proxy[0]) { /* the header goes first, before any byte of the job's */
            int w = snprintf(c->up.buf, RELAY_BUF, "%s%u %u\r\n", r->proxy,
                             (unsigned)ntohs(peer.sin_port), relay_target_port(r));
            c->up.len = w > 0 ? (size_t)w : 0;
        }
        c->cfd = fd;
        c->sfd = sfd;
        c->connecting = 1;
        c->last = ty_mono_s();
        atomic_fetch_add(&r->open, 1);
    }
}

/* Reads from fd into d. 1 progress, 0 nothing, -1 fatal. */
static int relay_read(int fd, struct relay_dir *d)
{
    ssize_t n;

    if (d->eof || d->len == RELAY_BUF)
        return 0;
    n = recv(fd, d->buf + d->len, RELAY_BUF - d->len, 0);
    if (n > 0) {
        d->len += (size_t)n;
        return 1;
    }
    if (n == 0) {
        d->eof = 1;
        return 1;
    }
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
}

/* Writes d's bytes to fd, then passes EOF on once drained. 1 progress, 0 nothing, -1 fatal. */
static int relay_write(int fd, struct relay_dir *d)
{
    ssize_t n;

    if (d->off < d->len) {
        n = send(fd, d->buf + d->off, d->len - d->off, MSG_NOSIGNAL);
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
        d->off += (size_t)n;
        if (d->off == d->len)
            d->off = d->len = 0;
        else if (d->len == RELAY_BUF) {
            memmove(d->buf, d->buf + d->off, d->len - d->off);
            d->len -= d->off;
            d->off = 0;
        }
        if (d->len > 0 || !d->eof)
            return n > 0;
    }
    if (d->eof && !d->shut && d->len == 0) {
        shutdown(fd, SHUT_WR);
        d->shut = 1;
        return 1;
    }
    return 0;
}

/* Serves connection c after poll: revents of its client and server fds. */
static void relay_serve(struct relay *r, struct relay_conn *c, short cev, short sev, double now)
{
    int p = 0, rc;

    if (c->connecting) {
        int e = 0;
        socklen_t el = sizeof(e);
        if (!(sev & (POLLOUT | POLLERR | POLLHUP))) {
            if (now - c->last > RELAY_CONNECT_S)
                relay_conn_close(r, c);
            return;
        }
        if (getsockopt(c->sfd, SOL_SOCKET, SO_ERROR, &e, &el) != 0 || e != 0) {
            ty_log(TY_LOG_WARN, "agent.relay.connect_failed", "port=%d error='%s'", r->port,
                   strerror(e ? e : errno));
            relay_conn_close(r, c);
            return;
        }
        c->connecting = 0;
    }
    (void)cev;
    if ((rc = relay_read(c->cfd, &c->up)) < 0)
        goto close;
    p |= rc;
    if ((rc = relay_write(c->sfd, &c->up)) < 0)
        goto close;
    p |= rc;
    if ((rc = relay_read(c->sfd, &c->down)) < 0)
        goto close;
    p |= rc;
    if ((rc = relay_write(c->cfd, &c->down)) < 0)
        goto close;
    p |= rc;
    if (p)
        c->last = now;
    if (c->up.shut && c->down.shut) {
        relay_conn_close(r, c);
        return;
    }
    if (now - c->last > r->o.idle_s) {
        atomic_fetch_add(&r->idled, 1);
        relay_conn_close(r, c);
    }
    return;
close:
    relay_conn_close(r, c);
}

static short relay_events(const struct relay_dir *in, const struct relay_dir *out)
{
    short ev = 0;
    if (!in->eof && in->len < RELAY_BUF)
        ev |= POLLIN;
    if (out->len > out->off || (out->eof && !out->shut))
        ev |= POLLOUT;
    return ev;
}

static void *relay_thread(void *arg)
{
    struct relay *r = arg;
    int n = r->o.max_conns, lost = 0, rc;
    struct pollfd *pf = calloc((size_t)(2 + 2 * n), sizeof(*pf));

    rc = pf ? relay_bind(r, &lost) : -1;
    if (!pf)
        snprintf(r->bind_err, sizeof(r->bind_err), "out of memory");
    pthread_mutex_lock(&r->mu);
    r->ready = rc == 0 ? 1 : -1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    if (rc != 0) {
        free(pf);
        return NULL; /* a thread left in the wrong namespace ends here, having done nothing */
    }
    (void)lost;
    for (;;) {
        double now;
        pf[0] = (struct pollfd){.fd = r->wake[0], .events = POLLIN};
        pf[1] = (struct pollfd){.fd = r->lfd, .events = POLLIN};
        for (int i = 0; i < n; i++) {
            struct relay_conn *c = &r->conns[i];
            if (c->cfd < 0) {
                pf[2 + 2 * i] = (struct pollfd){.fd = -1};
                pf[3 + 2 * i] = (struct pollfd){.fd = -1};
                continue;
            }
            pf[2 + 2 * i] = (struct pollfd){
                .fd = c->cfd, .events = c->connecting ? 0 : relay_events(&c->up, &c->down)};
            pf[3 + 2 * i] = (struct pollfd){
                .fd = c->sfd, .events = c->connecting ? POLLOUT : relay_events(&c->down, &c->up)};
        }
        if (poll(pf, (nfds_t)(2 + 2 * n), 1000) < 0 && errno != EINTR)
            break;
        if (pf[0].revents)
            break; /* relay_stop */
        now = ty_mono_s();
        for (int i = 0; i < n; i++)
            if (r->conns[i].cfd >= 0)
                relay_serve(r, &r->conns[i], pf[2 + 2 * i].revents, pf[3 + 2 * i].revents, now);
        if (pf[1].revents & POLLIN)
            relay_accept(r);
    }
    for (int i = 0; i < n; i++)
        relay_conn_close(r, &r->conns[i]);
    free(pf);
    return NULL;
}

struct relay *relay_start(const struct relay_opts *o, struct ty_err *err)
{
    struct relay *r = calloc(1, sizeof(*r));

    if (!r) {
        ty_err_set(err, TY_ENOMEM, NULL, "relay: out of memory");
        return NULL;
    }
    r->o = *o;
    r->o.target = NULL;
    if (r->o.max_conns <= 0)
        r->o.max_conns = RELAY_MAX_CONNS;
    if (r->o.idle_s <= 0)
        r->o.idle_s = RELAY_IDLE_S;
    r->lfd = r->wake[0] = r->wake[1] = -1;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    if (relay_resolve(r, o->target, err) != 0)
        goto fail;
    if (o->job) {
        if (!(r->job = relay_job_get(o->job, o->job_max > 0 ? o->job_max : RELAY_JOB_MAX))) {
            ty_err_set(err, TY_ENOMEM, NULL, "relay: out of memory");
            goto fail;
        }
        if (o->proxy_header) {
            if (relay_proxy_prefix(r, relay_source_addr(o->job)) != 0) {
                ty_err_set(err, TY_EINVAL, NULL, "relay: cannot name the target in a header");
                goto fail;
            }
        } else if (r->local && r->target.ss_family == AF_INET) {
            r->src.sin_family = AF_INET;
            r->src.sin_addr.s_addr = htonl(relay_source_addr(o->job));
        } else {
            static atomic_int said;
            if (atomic_exchange(&said, 1) == 0)
                ty_log(TY_LOG_WARN, "agent.relay.shared_address",
                       "target='%s' note='the API is on another host: it sees every job of this "
                       "agent as this host; start the agent with --relay-proxy (the server's "
                       "--proxy-listen) so that each job is told apart'",
                       o->target);
        }
    } else if (o->proxy_header) {
        ty_err_set(err, TY_EINVAL, NULL, "relay: a PROXY header needs the job");
        goto fail;
    }
    r->o.job = NULL;
    if (!(r->conns = calloc((size_t)r->o.max_conns, sizeof(*r->conns)))) {
        ty_err_set(err, TY_ENOMEM, NULL, "relay: out of memory");
        goto fail;
    }
    for (int i = 0; i < r->o.max_conns; i++)
        r->conns[i].cfd = r->conns[i].sfd = -1;
    if (pipe2(r->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        ty_err_set(err, TY_EIO, NULL, "relay: pipe: %s", strerror(errno));
        goto fail;
    }
    if (pthread_create(&r->thr, NULL, relay_thread, r) != 0) {
        ty_err_set(err, TY_EIO, NULL, "relay: cannot start its thread");
        goto fail;
    }
    r->started = 1;
    pthread_mutex_lock(&r->mu);
    while (r->ready == 0)
        pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
    if (r->ready < 0) {
        ty_err_set(err, TY_EIO, NULL, "relay: %s", r->bind_err);
        goto fail;
    }
    return r;
fail:
    relay_stop(r);
    return NULL;
}

void relay_stop(struct relay *r)
{
    if (!r)
        return;
    if (r->started) {
        if (r->wake[1] >= 0 && write(r->wake[1], "x", 1) < 0)
            ty_log(TY_LOG_WARN, "agent.relay.wake_failed", "error='%s'", strerror(errno));
        pthread_join(r->thr, NULL);
    }
    if (r->lfd >= 0)
        close(r->lfd);
    for (int i = 0; i < 2; i++)
        if (r->wake[i] >= 0)
            close(r->wake[i]);
    free(r->conns);
    relay_job_put(r->job);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}

int relay_port(const struct relay *r)
{
    return r ? r->port : 0;
}

void relay_stats(struct relay *r, int *open, long *accepted, long *refused, long *idled)
{
    if (open)
        *open = atomic_load(&r->open);
    if (accepted)
        *accepted = atomic_load(&r->accepted);
    if (refused)
        *refused = atomic_load(&r->refused);
    if (idled)
        *idled = atomic_load(&r->idled);
}
