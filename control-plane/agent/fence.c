/*
 * fence.c - the host firewall rules that keep a job network's containers away from the host
 * (see fence.h): iptables/ip6tables run with posix_spawn, output captured for the error.
 */
#define _GNU_SOURCE /* pipe2 */
#include "fence.h"

#include "ty_log.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

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

/* The path of tool ("iptables"), or NULL when not installed. */
static const char *fence_tool(const char *tool, char *buf, size_t n)
{
    static const char *const dirs[] = {"/usr/sbin", "/sbin", "/usr/bin", "/bin", NULL};
    for (size_t i = 0; dirs[i]; i++) {
        snprintf(buf, n, "%s/%s", dirs[i], tool);
        if (access(buf, X_OK) == 0)
            return buf;
    }
    return NULL;
}

/* Runs tool -w 5 op INPUT -i ifname <rule>. Returns the exit status (0 ok), -1 when it could
   not run. OUT: out (its stdout+stderr, truncated), may be NULL. */
static int fence_run(const char *tool, const char *op, const char *ifname, size_t rule, char *out,
                     size_t n)
{
    const char *argv[16];
    posix_spawn_file_actions_t fa;
    int p[2], status = 0, argc = 0, rc;
    size_t got = 0;
    pid_t pid;

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
    if (out && n)
        out[0] = '\0';
    if (pipe2(p, O_CLOEXEC) != 0)
        return -1;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    posix_spawn_file_actions_adddup2(&fa, p[1], 2);
    rc = posix_spawn(&pid, tool, &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    if (rc != 0) {
        close(p[0]);
        if (out && n)
            snprintf(out, n, "%s", strerror(rc));
        return -1;
    }
    for (;;) {
        char buf[256];
        ssize_t r = read(p[0], buf, sizeof(buf));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        for (ssize_t i = 0; out && i < r && got + 1 < n; i++)
            out[got++] = buf[i] == '\n' ? ' ' : buf[i];
    }
    if (out && n)
        out[got < n ? got : n - 1] = '\0';
    close(p[0]);
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
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
    const char *tool = fence_tool("iptables", path, sizeof(path));

    if (!tool)
        return ty_err_set(err, TY_EIO, NULL,
                          "no iptables on the engine's host: the job network cannot be fenced "
                          "from the host (apt-get install -y iptables)");
    if (fence_insert(tool, ifname, out, sizeof(out)) != 0) {
        fence_unbridge(ifname);
        return ty_err_set(err, TY_EIO, NULL, "iptables (fencing bridge %s from the host): %s",
                          ifname, out[0] ? out : "failed");
    }
    tool = fence_tool("ip6tables", path, sizeof(path));
    if (tool && fence_insert(tool, ifname, out, sizeof(out)) != 0)
        ty_log(TY_LOG_WARN, "agent.fence.ipv6_failed", "bridge=%s error='%s'", ifname, out);
    return 0;
}

void fence_unbridge(const char *ifname)
{
    static const char *const tools[] = {"iptables", "ip6tables", NULL};
    char path[64];

    for (size_t t = 0; tools[t]; t++) {
        const char *tool = fence_tool(tools[t], path, sizeof(path));
        for (size_t i = 0; tool && i < FENCE_NRULES; i++) {
            /* a rule inserted twice (two agents raced) goes with as many deletes */
            for (int k = 0; k < 4 && fence_run(tool, "-D", ifname, i, NULL, 0) == 0; k++)
                ;
        }
    }
}
