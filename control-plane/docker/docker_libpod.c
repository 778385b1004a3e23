/*
 * docker_libpod.c - the create body of Podman's libpod API (docker__libpod_body, docker_int.h):
 * the same container as the Docker-compatible create (docker.c's create_body: image, command,
 * environment, labels, binds, tmpfs, limits, network, confinement) in SpecGenerator form, plus
 * CDI devices. Podman 4.3's Docker-compatible API ignores DeviceRequests and fails to start a
 * container given a CDI name in Devices; its libpod API attaches CDI devices
 * (../docs/resources.md). Only containers that get GPUs are created this way.
 */
#include <stdlib.h>
#include <string.h>

#include "docker_int.h"

/* "a,b,c" -> ["a","b","c"] appended to arr (empty items skipped). 0, or -1. */
static int lp_split(json_t *arr, const char *s)
{
    int rc = 0;
    while (s && *s) {
        const char *comma = strchr(s, ',');
        size_t n = comma ? (size_t)(comma - s) : strlen(s);
        if (n > 0)
            rc |= json_array_append_new(arr, json_stringn(s, n));
        s = comma ? comma + 1 : NULL;
    }
    return rc ? -1 : 0;
}

/* NULL-terminated list -> new JSON array, NULL when an item is not UTF-8. */
static json_t *lp_strv(const char *const *v)
{
    json_t *a = json_array();
    for (size_t i = 0; a && v && v[i]; i++) {
        if (json_array_append_new(a, json_string(v[i])) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* Binds ("/host:/dst[:opts]") and Tmpfs ("/dst:opts") as OCI mounts. 0, or -1. */
static int lp_mounts(json_t *o, const struct docker_create *c)
{
    json_t *mounts = json_array();
    int rc = mounts ? 0 : -1;

    for (size_t i = 0; !rc && c->binds && c->binds[i]; i++) {
        const char *b = c->binds[i], *c1 = strchr(b, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        json_t *opts = json_pack("[s]", "rbind"), *m;
        if (!c1 || !opts) {
            json_decref(opts);
            rc = -1;
            break;
        }
        rc |= lp_split(opts, c2 ? c2 + 1 : "rw");
        m = json_pack("{s:s%, s:s%, s:s, s:o}", "source", b, (size_t)(c1 - b), "destination",
                      c1 + 1, c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1), "type", "bind",
                      "options", opts);
        rc |= m ? json_array_append_new(mounts, m) : -1;
    }
    for (size_t i = 0; !rc && c->tmpfs && c->tmpfs[i]; i++) {
        const char *t = c->tmpfs[i], *colon = strchr(t, ':');
        json_t *opts = json_array(), *m;
        rc |= opts ? lp_split(opts, colon ? colon + 1 : "") : -1;
        m = opts ? json_pack("{s:s%, s:s, s:s, s:o}", "destination", t,
                             colon ? (size_t)(colon - t) : strlen(t), "source", "tmpfs", "type",
                             "tmpfs", "options", opts)
                 : NULL;
        rc |= m ? json_array_append_new(mounts, m) : -1;
    }
    if (!mounts)
        return -1;
    return json_object_set_new(o, "mounts", mounts) || rc ? -1 : 0;
}

/* Limits: memory (no swap beyond it), CPU quota over a 100 ms period, pids. */
static json_t *lp_limits(const struct docker_create *c)
{
    json_t *r = json_object();
    int rc = r ? 0 : -1;

    if (!rc && c->memory_bytes > 0)
        rc |= json_object_set_new(r, "memory",
                                  json_pack("{s:I, s:I}", "limit", (json_int_t)c->memory_bytes,
                                            "swap", (json_int_t)c->memory_bytes));
    if (!rc && c->nano_cpus > 0)
        rc |=
            json_object_set_new(r, "cpu",
                                json_pack("{s:I, s:I}", "quota", (json_int_t)(c->nano_cpus / 10000),
                                          "period", (json_int_t)100000));
    if (!rc && c->pids_limit > 0)
        rc |=
            json_object_set_new(r, "pids", json_pack("{s:I}", "limit", (json_int_t)c->pids_limit));
    if (rc) {
        json_decref(r);
        return NULL;
    }
    return r;
}

/* Network: another container's namespace, none, a network with DNS aliases, or a mode as it is
   (host, a namespace's path); and /etc/hosts lines. */
static int lp_network(json_t *o, const struct docker_create *c)
{
    int rc = 0;

    if (c->net_container) {
        rc |= json_object_set_new(
            o, "netns", json_pack("{s:s, s:s}", "nsmode", "container", "value", c->net_container));
    } else if (c->network_none) {
        rc |= json_object_set_new(o, "netns", json_pack("{s:s}", "nsmode", "none"));
    } else if (c->network) {
        json_t *al = lp_strv(c->aliases);
        rc |= json_object_set_new(o, "netns", json_pack("{s:s}", "nsmode", "bridge"));
        rc |= al ? json_object_set_new(o, "Networks",
                                       json_pack("{s:{s:o}}", c->network, "aliases", al))
                 : -1;
    } else if (c->network_mode && strncmp(c->network_mode, "ns:", 3) == 0) {
        rc |= json_object_set_new(
            o, "netns", json_pack("{s:s, s:s}", "nsmode", "path", "value", c->network_mode + 3));
    } else if (c->network_mode) {
        rc |= json_object_set_new(o, "netns", json_pack("{s:s}", "nsmode", c->network_mode));
    }
    if (c->extra_hosts && c->extra_hosts[0]) {
        json_t *eh = lp_strv(c->extra_hosts);
        rc |= eh ? json_object_set_new(o, "hostadd", eh) : -1;
    }
    return rc ? -1 : 0;
}

/* KEY=VALUE list -> {"KEY": "VALUE"}. */
static json_t *lp_env(const char *const *env)
{
    json_t *e = json_object();
    for (size_t i = 0; e && env && env[i]; i++) {
        const char *eq = strchr(env[i], '=');
        char *k = eq ? strndup(env[i], (size_t)(eq - env[i])) : NULL;
        json_t *v = eq ? json_string(eq + 1) : NULL;
        int bad = !k || !v || json_object_set_new(e, k, v) != 0;
        if (!k || !eq)
            json_decref(v);
        free(k);
        if (bad) {
            json_decref(e);
            return NULL;
        }
    }
    return e;
}

json_t *docker__libpod_body(const struct docker_create *c, struct ty_err *err)
{
    json_t *o = json_object(), *devs = json_array(), *v;
    int rc = o && devs ? 0 : -1;

    for (size_t i = 0; !rc && c->devices && c->devices[i]; i++)
        rc |= json_array_append_new(devs, json_pack("{s:s}", "path", c->devices[i]));
    if (!rc) {
        rc |= json_object_set_new(o, "devices", devs);
        devs = NULL;
    }
    rc |= o ? json_object_set_new(o, "image", json_string(c->image)) : -1;
    if (c->name)
        rc |= json_object_set_new(o, "name", json_string(c->name));
    if (c->hostname)
        rc |= json_object_set_new(o, "hostname", json_string(c->hostname));
    if (c->working_dir)
        rc |= json_object_set_new(o, "work_dir", json_string(c->working_dir));
    if (c->entrypoint)
        rc |= (v = lp_strv(c->entrypoint)) ? json_object_set_new(o, "entrypoint", v) : -1;
    if (c->cmd)
        rc |= (v = lp_strv(c->cmd)) ? json_object_set_new(o, "command", v) : -1;
    rc |= (v = lp_env(c->env)) ? json_object_set_new(o, "env", v) : -1;
    if (c->labels)
        rc |= json_object_set(o, "labels", c->labels);
    rc |= lp_mounts(o, c);
    rc |= (v = lp_limits(c)) ? json_object_set_new(o, "resource_limits", v) : -1;
    rc |= lp_network(o, c);
    rc |= json_object_set_new(o, "privileged", json_false());
    if (c->cap_drop_all)
        rc |= json_object_set_new(o, "cap_drop", json_pack("[s]", "ALL"));
    if (c->cap_add)
        rc |= (v = lp_strv(c->cap_add)) ? json_object_set_new(o, "cap_add", v) : -1;
    if (c->no_new_privileges)
        rc |= json_object_set_new(o, "no_new_privileges", json_true());
    if (c->seccomp)
        rc |= json_object_set_new(o, "seccomp_profile_path", json_string(c->seccomp));
    if (c->readonly_rootfs)
        rc |= json_object_set_new(o, "read_only_filesystem", json_true());
    if (c->shm_bytes > 0)
        rc |= json_object_set_new(o, "shm_size", json_integer(c->shm_bytes));
    if (c->userns_mode)
        rc |= json_object_set_new(o, "userns", json_pack("{s:s}", "nsmode", c->userns_mode));
    if (rc) {
        json_decref(o);
        json_decref(devs);
        ty_err_set(err, TY_EINVAL, NULL,
                   "container create: an argument is not valid UTF-8, or out of memory");
        return NULL;
    }
    return o;
}
