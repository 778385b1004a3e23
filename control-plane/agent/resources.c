/*
 * resources.c - the text of the ledger's options (AGENT_LEDGER_FLAGS) into
 * an agent_config (agent_resources_parse, agent.h), shared by trainyard-agent and the server's
 * embedded agents.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

#define RES_MAX_CPUS 100000
#define RES_MAX_GPUS 64 /* AGENT_MAX_GPUS */
#define RES_MAX_CDI  64

static int res_unset(const char *v)
{
    return !v || !*v || strcmp(v, "auto") == 0;
}

static int res_long(const char *v, long lo, long hi, long *out)
{
    char *end;
    long x;

    errno = 0;
    x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi)
        return -1;
    *out = x;
    return 0;
}

/* "64G", "512M", "1T", "1048576": bytes (binary units), or -1. */
static long long res_size(const char *v)
{
    char *end;
    double x;
    double unit = 1;

    errno = 0;
    x = strtod(v, &end);
    if (errno || end == v || !(x > 0))
        return -1;
    switch (*end) {
    case 'K':
    case 'k':
        unit = 1024.0;
        end++;
        break;
    case 'M':
    case 'm':
        unit = 1024.0 * 1024;
        end++;
        break;
    case 'G':
    case 'g':
        unit = 1024.0 * 1024 * 1024;
        end++;
        break;
    case 'T':
    case 't':
        unit = 1024.0 * 1024 * 1024 * 1024;
        end++;
        break;
    default:
        break;
    }
    if (*end == 'i' || *end == 'B')
        end += *end == 'i' && end[1] == 'B' ? 2 : 1;
    if (*end || x * unit > 9.0e18)
        return -1;
    return (long long)(x * unit);
}

int agent_resources_parse(struct agent_config *cfg, const char *cpus, const char *memory,
                          const char *gpus, const char *cpu_fallback, const char *overcommit,
                          struct ty_err *err)
{
    long n;

    cfg->cpus = 0;
    cfg->memory_bytes = 0;
    cfg->gpus = 0;
    cfg->overcommit = 1.0;
    if (!res_unset(cpus)) {
        if (res_long(cpus, 1, RES_MAX_CPUS, &n) != 0)
            return ty_err_set(err, TY_EINVAL, "cpus",
                              "--cpus is auto or a count of vCPUs, not '%.40s'", cpus);
        cfg->cpus = (int)n;
    }
    if (!res_unset(memory) && (cfg->memory_bytes = res_size(memory)) <= 0)
        return ty_err_set(err, TY_EINVAL, "memory",
                          "--memory is auto or a size such as 64G or 512M, not '%.40s'", memory);
    cfg->gpu_devices = NULL;
    if (gpus && strcmp(gpus, "none") == 0) {
        cfg->gpus = -1;
    } else if (gpus && strchr(gpus, '=')) {
        int count = 0;
        for (const char *p = gpus; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
            const char *end = strchr(p, ','), *eq = strchr(p, '=');
            size_t len = end ? (size_t)(end - p) : strlen(p);
            if (len == 0 || len >= 128 || !eq || (end && eq > end) || eq == p ||
                eq + 1 == p + len || !strchr(p, '/') || strchr(p, '/') > eq)
                return ty_err_set(err, TY_EINVAL, "gpus",
                                  "--gpus: '%.60s' is not a list of CDI device names "
                                  "(vendor/class=name,...)",
                                  gpus);
            count++;
        }
        if (count > RES_MAX_CDI)
            return ty_err_set(err, TY_EINVAL, "gpus", "--gpus: more than %d devices", RES_MAX_CDI);
        cfg->gpus = count;
        cfg->gpu_devices = gpus;
    } else if (!res_unset(gpus)) {
        if (res_long(gpus, 0, RES_MAX_GPUS, &n) != 0)
            return ty_err_set(err, TY_EINVAL, "gpus",
                              "--gpus is auto, none, a count of GPUs (at most %d) or a list of "
                              "CDI device names, not '%.40s'",
                              RES_MAX_GPUS, gpus);
        cfg->gpus = n > 0 ? (int)n : -1;
    }
    if (!cpu_fallback || !*cpu_fallback || strcmp(cpu_fallback, "yes") == 0)
        cfg->no_cpu_fallback = 0;
    else if (strcmp(cpu_fallback, "no") == 0)
        cfg->no_cpu_fallback = 1;
    else
        return ty_err_set(err, TY_EINVAL, "cpu-fallback",
                          "--cpu-fallback is yes or no, not '%.40s'", cpu_fallback);
    if (overcommit && *overcommit) {
        char *end;
        double f;
        errno = 0;
        f = strtod(overcommit, &end);
        if (errno || end == overcommit || *end || !(f >= 1.0 && f <= 64.0))
            return ty_err_set(err, TY_EINVAL, "overcommit",
                              "--overcommit is a factor from 1 to 64, not '%.40s'", overcommit);
        cfg->overcommit = f;
    }
    return 0;
}
