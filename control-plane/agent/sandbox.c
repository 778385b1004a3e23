/*
 * sandbox.c - making and removing a job host's sandbox container, and the names of spare
 * sandboxes (sandbox.h). Owns nothing between calls.
 */
#include "sandbox.h"

#include "docker.h"
#include "reap.h"

#include <stdio.h>
#include <string.h>

#define SANDBOX_MEMORY (64LL * 1024 * 1024)
#define SANDBOX_PIDS   8

int sandbox_remove(struct docker *d, const char *id, struct ty_err *err)
{
    docker_kill(d, id, "SIGKILL", err);
    return docker_remove(d, id, 1, err);
}

int sandbox_make(struct docker *d, const struct sandbox_opts *o, char *id, size_t n, int *pid,
                 struct ty_err *err)
{
    static const char *const ep[] = {"/bin/sleep", NULL};
    static const char *const cmd[] = {"2147483647", NULL};
    struct docker_create c = {0};
    struct docker_state st;
    struct ty_err e;
    int rc;

    id[0] = '\0';
    *pid = 0;
    docker_remove(d, o->name, 1, &e); /* a stale one with this name */
    c.image = o->image;
    c.name = o->name;
    c.hostname = o->hostname;
    c.entrypoint = ep;
    c.cmd = cmd;
    c.labels = o->labels;
    c.memory_bytes = SANDBOX_MEMORY;
    c.cap_drop_all = 1; /* it only sleeps: no capability, no new privilege, nothing to write */
    c.no_new_privileges = 1;
    c.seccomp = o->seccomp;
    c.readonly_rootfs = 1;
    c.pids_limit = SANDBOX_PIDS;
    if (o->network) {
        c.network = o->network;
        c.aliases = o->aliases;
    } else if (o->network_mode) {
        c.network_mode = o->network_mode;
    } else {
        c.network_none = 1;
    }
    c.extra_hosts = o->extra_hosts;
    if ((rc = docker_create(d, &c, id, n, err)) != 0) {
        id[0] = '\0';
        return rc;
    }
    if ((rc = docker_start(d, id, err)) == 0 && (rc = docker_inspect(d, id, &st, err)) == 0 &&
        st.pid <= 0)
        rc = ty_err_set(err, TY_EENGINE, NULL, "the sandbox has no State.Pid");
    if (rc != 0) {
        sandbox_remove(d, id, &e);
        id[0] = '\0';
        return rc;
    }
    *pid = st.pid;
    return 0;
}

void sandbox_spare_name(const char *deployment, const char *agent, char *out, size_t n)
{
    char prefix[160];
    size_t len;

    reap_job_name(deployment, "spare-", prefix, sizeof(prefix));
    snprintf(out, n, "%s%s", prefix, agent ? agent : "");
    for (len = strlen(prefix); len < n && out[len]; len++) {
        char ch = out[len];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '.' || ch == '-'))
            out[len] = '-';
    }
}

void sandbox_job_name(const char *deployment, const char *job, char *out, size_t n)
{
    char base[200];

    reap_job_name(deployment, job, base, sizeof(base));
    snprintf(out, n, "%s-algo-1-net", base);
}

int sandbox_spare_job(const char *deployment, const char *name, char *job, size_t n)
{
    static const char suffix[] = "-algo-1-net";
    char prefix[64];
    size_t lp, ln, lj;

    if (!name || n < 64)
        return 0;
    if (name[0] == '/')
        name++;
    reap_job_name(deployment, "", prefix, sizeof(prefix));
    lp = strlen(prefix);
    ln = strlen(name);
    if (ln <= lp + sizeof(suffix) - 1 || strncmp(name, prefix, lp) != 0 ||
        strcmp(name + ln - (sizeof(suffix) - 1), suffix) != 0)
        return 0;
    lj = ln - lp - (sizeof(suffix) - 1);
    if (lj > 63)
        return 0;
    for (size_t i = 0; i < lj; i++) { /* a job name: letters, digits and '-' */
        char ch = name[lp + i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '-'))
            return 0;
    }
    memcpy(job, name + lp, lj);
    job[lj] = '\0';
    return 1;
}
