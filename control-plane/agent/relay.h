/*
 * relay.h - trainyard's API on 127.0.0.1 inside a job container's network namespace.
 *
 * Owns: one listening TCP socket bound to 127.0.0.1:<port> inside the network namespace of a
 * process (a job host's sandbox container), one thread per relay that accepts connections on it
 * and copies bytes both ways between each accepted connection and a new connection to the one
 * target address given at start (trainyard's API: the agent's endpoint URL). It is not a proxy:
 * it never reads the bytes, never connects anywhere else. Does not own credentials (session.h)
 * or the container.
 *
 * How the socket gets into the container: the relay's thread opens /proc/<pid>/ns/net,
 * setns(CLONE_NEWNET) into it, creates, binds and listens, then setns back into the agent's own
 * namespace (an fd of it kept from before) before it connects anywhere. setns changes only the
 * calling thread; a socket stays in the namespace it was created in. Needs CAP_SYS_ADMIN (root).
 *
 * Per job: relayed traffic is a tenant of its own. With o->job set, every
 * relay of that job in this agent shares one budget of job_max connections at once (a table in
 * relay.c keyed by the job, reference-counted by relay_start/relay_stop; more are accepted and
 * closed at once), and when the target is this host's own API however it is spelled (an IPv4
 * loopback address, 0.0.0.0, ::, ::1, an IPv4-mapped one, or an address of one of this host's
 * interfaces; IPv6 spellings are reached through 127.0.0.1) the connections to it come from a
 * source address of the job's own, relay_source_addr(job): the server's per-client limit and
 * accounting then see each job apart from the others and from 127.0.0.1 (the admin's CLI,
 * local console users), and the server serves it the AWS APIs only. A target on another host is
 * reached from the agent's own address; with proxy_header (the agent's --relay-proxy: a
 * server's --proxy-listen, which trusts the header from its --proxy-from peers only) each
 * connection then names the job's own address in a PROXY protocol v1 header, so a server on
 * another host tells the job apart too. Without it, that server counts all of this agent's
 * jobs as one client and cannot tell them from the agent's host.
 *
 * Bounds: at most max_conns relayed connections at once (more are accepted and closed at once),
 * a connection idle (no byte either way) for idle_s seconds is closed, each direction buffers at
 * most RELAY_BUF bytes (a slow reader slows the writer). relay_stop closes every fd and joins
 * the thread. Thread-safety: relay_stop from one thread; relay_stats from any.
 */
#ifndef TY_CP_AGENT_RELAY_H
#define TY_CP_AGENT_RELAY_H

#include "ty_err.h"

/* Port of trainyard's API inside every job container (127.0.0.1:RELAY_PORT); documented in the
   README. Chosen well away from common framework ports (8080, 8888, 6006, 29500, 5000...). */
#define RELAY_PORT      9911
#define RELAY_MAX_CONNS 32    /* relayed connections per job host at once */
#define RELAY_IDLE_S    300   /* a relayed connection idle this long is closed */
#define RELAY_BUF       65536 /* bytes buffered per direction per connection */
#define RELAY_CONNECT_S 10    /* connecting to the target */
#define RELAY_JOB_MAX   16    /* relayed connections per job at once, all its hosts together */

struct relay_opts {
    int pid;            /* a process in the namespace to listen in; 0 = the agent's own */
    int port;           /* port on 127.0.0.1 there; 0 = any (see relay_port) */
    const char *target; /* "http://host:port[/...]" or "host:port": where connections go */
    int max_conns;      /* 0 = RELAY_MAX_CONNS */
    int idle_s;         /* 0 = RELAY_IDLE_S */
    const char *job;    /* the job (copied); NULL = no job budget, the agent's source address */
    int job_max;        /* 0 = RELAY_JOB_MAX; the first relay of a job sets the job's budget */
    int proxy_header;   /* 1: target is a server's --proxy-listen; every connection to it opens
                           with "PROXY TCP4 <relay_source_addr(job)> <target> <port> <port>\r\n"
                           (TCP6 with the IPv4-mapped form for an IPv6 target), from the
                           agent's own address; needs job */
};

/*
 * The IPv4 source address (host order) of job's relayed connections to a local target:
 * 127.a.b.c from an HMAC-SHA256 of job under a key drawn at random once per process (so no
 * tenant can search offline for a job name whose address is another job's), with a in 1..255
 * and c in 1..254, so never in 127.0.0.0/16 (127.0.0.1 is the admin's) nor a network or
 * broadcast-looking address. Stable within the process.
 */
unsigned relay_source_addr(const char *job);

struct relay;

/*
 * Resolves the target (in the agent's namespace), binds the listener inside pid's network
 * namespace and starts the relay's thread. new: caller stops and frees with relay_stop().
 * NULL with err (TY_EINVAL for a bad target, TY_EIO for a namespace or socket failure).
 */
struct relay *relay_start(const struct relay_opts *o, struct ty_err *err);

/* Closes the listener and every relayed connection, joins the thread, frees r. NULL no-op. */
void relay_stop(struct relay *r);

/* The port bound inside the namespace. */
int relay_port(const struct relay *r);

/* OUT: connections open now, accepted in total, refused over the cap (the host's or the
   job's), closed idle. */
void relay_stats(struct relay *r, int *open, long *accepted, long *refused, long *idled);

#endif
