/*
 * fence.c - the host firewall rules that keep a job network's containers away from the host
 * (see fence.h): iptables/ip6tables run through ty_proc_run, output captured for the error.
 */
#include "fence.h"

#include "ty_log.h"
#include "ty_proc.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define FENCE_OUT_MAX 400 /* bytes of a failing command's output kept for the error */

/* The rule specs after "-I INPUT"/"-D INPUT"/"-C INPUT" and "-i IF" (NULL-terminated rows,
   inserted in reverse so that they end up in this order). */
static const char *const fence_rules[][7] = {
    {"-p", "udp", "--dport", "53", "-j", "ACCEPT", NULL},
    {"-p", "tcp", "--dport", "53", "-j", "ACCEPT", NULL},
    {"-j", "REJECT", NULL},
};
#define FENCE_NRULES (sizeof(fence_rules) / sizeof(fence_rules[0]))

void fence_ifname(const char *net, char *ifname, size_t n)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a 64 */
    for (const unsigned char *p = (const unsigned char *)net; p && *p; p++) {
        h ^= *p;
        h *= 1099511628211ULL;
    }
    snprintf(ifname, n, "ty-%012llx", (unsigned long long)(h & 0xffffffffffffULL));
}

/* Runs tool -w 5 op INPUT -i ifname <rule>. Returns the exit status (0 ok), -1 when it could
   not run. OUT: out (its stdout+stderr, truncated), may be NULL. */
static int fence_run(const char *tool, const char *op, const char *ifname, size_t rule, char *out,
                     size_t n)
{
    const char *argv[16];
    int argc = 0;

    argv[argc++] = tool;
    argv[argc++] = "-w";
    argv[argc++] = "5";
    argv[argc++] = op;
    argv[argc++] = "INPUT";
    argv[argc++] = "-i";
    argv[argc++] = ifname;
    for (size_t i = 0; fence_rules[rule][i]; i++)
        argv[argc++] = fence_rules[rule][i];
    argv[argc] = NULL;
    return ty_proc_run(argv, out, n);
}

/* Inserts the rules with tool (absent ones only). 0, or -1 with out filled. */
static int fence_insert(const char *tool, const char *ifname, char *out, size_t n)
{
    for (size_t i = FENCE_NRULES; i-- > 0;) {
        if (fence_run(tool, "-C", ifname, i, NULL, 0) == 0)
            continue; /* already there: a restarted job */
        if (fence_run(tool, "-I", ifname, i, out, n) != 0)
            return -1;
    }
    return 0;
}

int fence_bridge(const char *ifname, struct ty_err *err)
{
    char path[64], out[FENCE_OUT_MAX];
    const char *tool = ty_proc_find("iptables", path, sizeof(path));

    if (!tool)
        return ty_err_set(err, TY_EIO, NULL,
                          "no iptables on the engine's host: the job network cannot be fenced "
                          "from the host (apt-get install -y iptables)");
    if (fence_insert(tool, ifname, out, sizeof(out)) != 0) {
        fence_unbridge(ifname);
        return ty_err_set(err, TY_EIO, NULL, "iptables (fencing bridge %s from the host): %s",
                          ifname, out[0] ? out : "failed");
    }
    tool = ty_proc_find("ip6tables", path, sizeof(path));
    if (tool && fence_insert(tool, ifname, out, sizeof(out)) != 0)
        ty_log(TY_LOG_WARN, "agent.fence.ipv6_failed", "bridge=%s error='%s'", ifname, out);
    return 0;
}

void fence_unbridge(const char *ifname)
{
    static const char *const tools[] = {"iptables", "ip6tables", NULL};
    char path[64];

    for (size_t t = 0; tools[t]; t++) {
        const char *tool = ty_proc_find(tools[t], path, sizeof(path));
        for (size_t i = 0; tool && i < FENCE_NRULES; i++) {
            /* a rule inserted twice (two agents raced) goes with as many deletes */
            for (int k = 0; k < 4 && fence_run(tool, "-D", ifname, i, NULL, 0) == 0; k++)
                ;
        }
    }
}
