/*
 * fence.h - keeps the containers on a job's network (several hosts) away from the engine host.
 *
 * Owns: the host firewall rules of one job network's bridge. An internal network (docker.h's
 * docker_network_create with internal) has no default route and no NAT, but the host still
 * holds the bridge's gateway address, so a container could connect to any host service bound to
 * 0.0.0.0 (Redis, the API, an engine on tcp://) through it. fence_bridge inserts, for the bridge
 * interface ifname, in the host's INPUT chain (iptables, and ip6tables when present):
 *   -i IF -p udp --dport 53 -j ACCEPT   (the engine's DNS for the hosts' names, on the gateway)
 *   -i IF -p tcp --dport 53 -j ACCEPT
 *   -i IF -j REJECT                     (everything else addressed to the host)
 * Traffic between containers on the bridge is forwarded, never INPUT, so it is not affected.
 * Runs /usr/sbin/iptables (or iptables on PATH) with -w; needs root on the engine's host, as the
 * relay does (relay.h). Does not own the network itself (docker.h).
 * Thread-safety: the rules are idempotent (checked with -C before -I); call from any thread.
 */
#ifndef TY_CP_AGENT_FENCE_H
#define TY_CP_AGENT_FENCE_H

#include <stddef.h>

#include "ty_err.h"

/* Linux interface names are at most 15 characters. */
#define FENCE_IFNAME_MAX 16

/* The bridge interface name of the job network named net: "ty-" and 12 hex digits of a hash of
   net (stable, so a later agent finds a dead one's rules). OUT: ifname (n >= FENCE_IFNAME_MAX). */
void fence_ifname(const char *net, char *ifname, size_t n);

/* Inserts the rules above for ifname. 0, or -TY_EIO with the command's error (no iptables,
   not root, ...). IPv6 rules are added when ip6tables exists; their failure is only logged. */
int fence_bridge(const char *ifname, struct ty_err *err);

/* Deletes every rule fence_bridge inserted for ifname (missing rules are not an error). */
void fence_unbridge(const char *ifname);

#endif
