/*
 * seccomp.c - a job container's seccomp profile on Podman: the engine's default with new user
 * namespaces refused (see seccomp.h).
 */
#include "seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SECCOMP_CLONE_NEWUSER 0x10000000 /* <linux/sched.h> */
#define SECCOMP_EPERM         1
#define SECCOMP_ENOSYS        38

/* The syscalls whose rules this file writes itself: every other rule naming them loses them. */
static const char *const seccomp_owned[] = {"unshare", "clone", "clone3"};

static int seccomp_is_owned(const char *name)
{
    for (size_t i = 0; i < sizeof(seccomp_owned) / sizeof(seccomp_owned[0]); i++) {
        if (strcmp(name, seccomp_owned[i]) == 0)
            return 1;
    }
    return 0;
}

/* new: {"names": [name...], "action": action, "args": [flags & NEWUSER == want], ...}. */
static json_t *seccomp_rule_newuser(const char *action, int errno_ret, json_int_t want)
{
    json_t *r = json_pack(
        "{s:[s,s], s:s, s:[{s:i, s:I, s:I, s:s}], s:s}", "names", "unshare", "clone", "action",
        action, "args", "index", 0, "value", (json_int_t)SECCOMP_CLONE_NEWUSER, "valueTwo", want,
        "op", "SCMP_CMP_MASKED_EQ", "comment", "trainyard: no new user namespace (seccomp.h)");
    if (r && errno_ret && json_object_set_new(r, "errnoRet", json_integer(errno_ret)) != 0) {
        json_decref(r);
        return NULL;
    }
    return r;
}

/* Sets err and returns NULL, for the constructor below. */
static json_t *seccomp_fail(struct ty_err *err, int code, const char *msg, size_t rule)
{
    ty_err_set(err, code, NULL, "seccomp profile: %s (rule %zu)", msg, rule);
    return NULL;
}

json_t *seccomp_no_userns(json_t *base, struct ty_err *err)
{
    json_t *out, *calls, *kept, *rule, *add[3];
    size_t i, j;

    if (!json_is_object(base) || !json_is_array(json_object_get(base, "syscalls")))
        return seccomp_fail(err, TY_EINVAL, "not an object with a \"syscalls\" array", 0);
    if (!(out = json_deep_copy(base)) || !(kept = json_array())) {
        json_decref(out);
        return seccomp_fail(err, TY_ENOMEM, "out of memory", 0);
    }
    calls = json_object_get(out, "syscalls");
    json_array_foreach(calls, i, rule)
    {
        json_t *names = json_object_get(rule, "names"), *left;
        json_t *name;
        if (!json_is_array(names)) {
            json_decref(kept);
            json_decref(out);
            return seccomp_fail(err, TY_EINVAL, "a rule without a \"names\" array", i);
        }
        if (!(left = json_array()))
            goto nomem;
        json_array_foreach(names, j, name)
        {
            const char *s = json_string_value(name);
            if ((!s || !seccomp_is_owned(s)) && json_array_append(left, name) != 0) {
                json_decref(left);
                goto nomem;
            }
        }
        if (json_array_size(left) == 0) {
            json_decref(left); /* a rule only about the syscalls written below: dropped */
            continue;
        }
        if (json_object_set_new(rule, "names", left) != 0 || json_array_append(kept, rule) != 0)
            goto nomem;
    }
    add[0] = seccomp_rule_newuser("SCMP_ACT_ALLOW", 0, 0);
    add[1] = seccomp_rule_newuser("SCMP_ACT_ERRNO", SECCOMP_EPERM, SECCOMP_CLONE_NEWUSER);
    add[2] = json_pack("{s:[s], s:s, s:i, s:s}", "names", "clone3", "action", "SCMP_ACT_ERRNO",
                       "errnoRet", SECCOMP_ENOSYS, "comment",
                       "trainyard: its flags are out of seccomp's sight; libc falls back to clone");
    for (i = 0; i < 3; i++) {
        if (!add[i] || json_array_append_new(kept, add[i]) != 0) {
            for (j = i + 1; j < 3; j++)
                json_decref(add[j]);
            goto nomem;
        }
    }
    if (json_object_set_new(out, "syscalls", kept) != 0) {
        json_decref(out);
        return seccomp_fail(err, TY_ENOMEM, "out of memory", 0);
    }
    return out;
nomem:
    json_decref(kept);
    json_decref(out);
    return seccomp_fail(err, TY_ENOMEM, "out of memory", i);
}

int seccomp_write_profile(const char *base_path, const char *out_path, struct ty_err *err)
{
    char tmp[4096];
    json_error_t je;
    json_t *base, *out;
    int fd, rc = 0;

    if (access(base_path, F_OK) != 0 && errno == ENOENT)
        return ty_err_set(err, TY_ENOTFOUND, NULL, "seccomp profile '%s' does not exist",
                          base_path);
    if (!(base = json_load_file(base_path, JSON_REJECT_DUPLICATES, &je)))
        return ty_err_set(err, TY_EINVAL, NULL, "seccomp profile '%s': %s (line %d)", base_path,
                          je.text, je.line);
    out = seccomp_no_userns(base, err);
    json_decref(base);
    if (!out)
        return -err->code;
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", out_path) >= (int)sizeof(tmp)) {
        json_decref(out);
        return ty_err_set(err, TY_EINVAL, NULL, "seccomp profile: path too long: '%s'", out_path);
    }
    unlink(tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 || fchmod(fd, 0644) != 0 || json_dumpfd(out, fd, JSON_INDENT(1)) != 0 ||
        fsync(fd) != 0)
        rc = ty_err_set(err, TY_EIO, NULL, "cannot write '%s': %s", tmp, strerror(errno));
    if (fd >= 0 && close(fd) != 0 && rc == 0)
        rc = ty_err_set(err, TY_EIO, NULL, "cannot write '%s': %s", tmp, strerror(errno));
    if (rc == 0 && rename(tmp, out_path) != 0)
        rc = ty_err_set(err, TY_EIO, NULL, "cannot rename '%s': %s", tmp, strerror(errno));
    if (rc != 0)
        unlink(tmp);
    json_decref(out);
    return rc;
}
