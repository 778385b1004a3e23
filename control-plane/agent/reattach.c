/*
 * reattach.c - a job's run record and the plan to take its containers over (reattach.h).
 *
 * Owns: the record file's format ({"v":1, "t_start", "last_log_ts", "hosts": [{"stream",
 * "log_base", "exited", "exit_code", "oom_killed"}]}) and the plan. Does not talk to the engine
 * or Redis: the runner (run.c) lists the containers and acts on the plan.
 */
#define _GNU_SOURCE
#include "reattach.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ty_err.h"
#include "ty_fs.h"

#define REATTACH_RECORD_MAX (64 * 1024)

static void reattach_path(const char *job_dir, const char *leaf, char *out, size_t n)
{
    snprintf(out, n, "%s/%s", job_dir, leaf);
}

int reattach_record_write(const char *job_dir, const struct reattach_record *rec)
{
    char path[4200], tmp[4200];
    json_t *hosts = json_array(), *doc = NULL;
    char *text = NULL;
    size_t len;
    int fd = -1, rc = -TY_EIO;

    if (!hosts)
        return -TY_EIO;
    for (int i = 0; i < rec->nh && i < STAGE_MAX_HOSTS; i++) {
        const struct reattach_rec_host *h = &rec->h[i];
        json_array_append_new(hosts,
                              json_pack("{s:s, s:I, s:b, s:i, s:b}", "stream", h->stream,
                                        "log_base", (json_int_t)h->log_base, "exited", h->exited,
                                        "exit_code", h->exit_code, "oom_killed", h->oom_killed));
    }
    doc = json_pack("{s:i, s:f, s:I, s:o}", "v", 1, "t_start", rec->t_start, "last_log_ts",
                    (json_int_t)rec->last_log_ts, "hosts", hosts);
    if (!doc)
        return -TY_EIO;
    if (!(text = json_dumps(doc, JSON_COMPACT)))
        goto done;
    reattach_path(job_dir, REATTACH_RECORD, path, sizeof(path));
    reattach_path(job_dir, "." REATTACH_RECORD ".tmp", tmp, sizeof(tmp));
    unlink(tmp);
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
        goto done;
    len = strlen(text);
    if (ty_write_all(fd, text, len) < 0)
        goto done;
    if (fsync(fd) != 0 || close(fd) != 0) {
        fd = -1;
        goto done;
    }
    fd = -1;
    if (rename(tmp, path) != 0)
        goto done;
    rc = 0;
done:
    if (fd >= 0)
        close(fd);
    if (rc != 0)
        unlink(tmp);
    free(text);
    json_decref(doc);
    return rc;
}

int reattach_record_read(const char *job_dir, struct reattach_record *rec)
{
    char path[4200], *buf = NULL;
    struct stat st;
    json_t *doc = NULL, *hosts, *h;
    json_error_t jerr;
    size_t i, off = 0;
    int fd, rc = -TY_EINVAL;

    reattach_path(job_dir, REATTACH_RECORD, path, sizeof(path));
    fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return errno == ENOENT ? -TY_ENOTFOUND : -TY_EINVAL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > REATTACH_RECORD_MAX ||
        !(buf = malloc((size_t)st.st_size + 1)))
        goto done;
    while (off < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + off, (size_t)st.st_size - off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        off += (size_t)r;
    }
    buf[off] = '\0';
    if (!(doc = json_loads(buf, 0, &jerr)) || json_integer_value(json_object_get(doc, "v")) != 1)
        goto done;
    hosts = json_object_get(doc, "hosts");
    if (!json_is_array(hosts) || json_array_size(hosts) == 0 ||
        json_array_size(hosts) > STAGE_MAX_HOSTS)
        goto done;
    memset(rec, 0, sizeof(*rec));
    rec->nh = (int)json_array_size(hosts);
    rec->t_start = json_number_value(json_object_get(doc, "t_start"));
    rec->last_log_ts = (int64_t)json_integer_value(json_object_get(doc, "last_log_ts"));
    json_array_foreach(hosts, i, h)
    {
        struct reattach_rec_host *rh = &rec->h[i];
        const char *s = json_string_value(json_object_get(h, "stream"));
        json_t *base = json_object_get(h, "log_base");
        snprintf(rh->stream, sizeof(rh->stream), "%s", s ? s : "");
        rh->log_base = json_is_integer(base) ? (long)json_integer_value(base) : -1;
        rh->exited = json_is_true(json_object_get(h, "exited"));
        rh->exit_code = (int)json_integer_value(json_object_get(h, "exit_code"));
        rh->oom_killed = json_is_true(json_object_get(h, "oom_killed"));
    }
    rc = 0;
done:
    close(fd);
    free(buf);
    json_decref(doc);
    return rc;
}

void reattach_record_remove(const char *job_dir)
{
    char path[4200];

    reattach_path(job_dir, REATTACH_RECORD, path, sizeof(path));
    unlink(path);
}

/* Host index of a trainyard.host label "algo-<n>" (0-based), -1 when not one of nh. */
static int reattach_host_index(const char *name, int nh)
{
    char *end;
    long n;

    if (!name || strncmp(name, "algo-", 5) != 0 || name[5] < '1' || name[5] > '9')
        return -1;
    n = strtol(name + 5, &end, 10);
    if (*end || n < 1 || n > nh)
        return -1;
    return (int)n - 1;
}

/* State of a container summary: OUT: *started, *running. */
static void reattach_state(json_t *c, int *started, int *running)
{
    const char *st = json_string_value(json_object_get(c, "State"));

    *started = 1;
    *running = 0;
    if (!st)
        return; /* unknown: the safe side is "it may have run" */
    if (strcmp(st, "created") == 0 || strcmp(st, "configured") == 0 ||
        strcmp(st, "initialized") == 0) {
        *started = 0;
        return;
    }
    *running = strcmp(st, "running") == 0 || strcmp(st, "paused") == 0 ||
               strcmp(st, "restarting") == 0 || strcmp(st, "stopping") == 0;
}

static void reattach_copy_id(char *out, size_t n, json_t *c)
{
    const char *id = json_string_value(json_object_get(c, "Id"));
    snprintf(out, n, "%s", id ? id : "");
}

void reattach_plan(json_t *containers, const struct reattach_record *rec, int nh,
                   const char *secondary, struct reattach_plan *plan)
{
    int found = 0, started = 0, recorded = 0;
    json_t *c;
    size_t k;

    memset(plan, 0, sizeof(*plan));
    if (nh < 1)
        nh = 1;
    if (nh > STAGE_MAX_HOSTS)
        nh = STAGE_MAX_HOSTS;
    plan->nh = nh;
    if (!secondary)
        secondary = "";
    json_array_foreach(containers, k, c)
    {
        json_t *labels = json_object_get(c, "Labels");
        int i =
            reattach_host_index(json_string_value(json_object_get(labels, "trainyard.host")), nh);
        struct reattach_host *h;
        int st, run;
        if (i < 0 || !json_string_value(json_object_get(c, "Id"))) {
            plan->extra++;
            continue;
        }
        h = &plan->h[i];
        if (json_object_get(labels, "trainyard.sandbox")) {
            if (!h->sbid[0])
                reattach_copy_id(h->sbid, sizeof(h->sbid), c);
            else
                plan->extra++;
            continue;
        }
        reattach_state(c, &st, &run);
        if (h->cid[0] && (h->running || !run)) {
            plan->extra++; /* a second one for the host: the first (or the running one) wins */
            continue;
        }
        reattach_copy_id(h->cid, sizeof(h->cid), c);
        h->started = st;
        h->running = run;
        snprintf(h->gpus, sizeof(h->gpus), "%s",
                 json_string_value(json_object_get(labels, "trainyard.gpus"))
                     ? json_string_value(json_object_get(labels, "trainyard.gpus"))
                     : "");
    }
    for (int i = 0; i < nh; i++) {
        struct reattach_host *h = &plan->h[i];
        if (h->cid[0]) {
            found++;
            started += h->started;
        } else if (rec && i < rec->nh && rec->h[i].exited) {
            h->from_record = 1;
            h->exit_code = rec->h[i].exit_code;
            h->oom_killed = rec->h[i].oom_killed;
            recorded++;
        }
    }
    if (started == 0 && recorded == 0) {
        if (found > 0 ||
            (strcmp(secondary, "Training") != 0 && strcmp(secondary, "Uploading") != 0)) {
            plan->action = REATTACH_FRESH; /* nothing ever ran */
            return;
        }
        if (strcmp(secondary, "Uploading") == 0) {
            /* every host exited 0 and the containers were removed: upload what they left */
            for (int i = 0; i < nh; i++)
                plan->h[i].from_record = 1;
            plan->action = REATTACH_ATTACH;
            return;
        }
        plan->action = REATTACH_FAIL;
        snprintf(plan->reason, sizeof(plan->reason),
                 "InternalServerError: the agent running this job was lost while it trained, "
                 "and the container engine of the agent that took the job over has none of its "
                 "containers (they ran on another host, or were removed); the training script "
                 "is not run again");
        return;
    }
    for (int i = 0; i < nh; i++) {
        if (plan->h[i].cid[0] || plan->h[i].from_record)
            continue;
        plan->action = REATTACH_FAIL;
        snprintf(plan->reason, sizeof(plan->reason),
                 "InternalServerError: the agent running this job was lost, and the container "
                 "of host algo-%d is gone from the container engine; the training script is "
                 "not run again",
                 i + 1);
        return;
    }
    plan->action = REATTACH_ATTACH;
}
