/*
 * outbox.c - a job's writes that Redis did not take, on disk and replayed in order (outbox.h).
 *
 * Owns: the files under <data_dir>/outbox/ and the replay rules (idempotent transitions, one
 * application of each log batch through the .done seq file).
 */
#include "outbox.h"

#include "queue.h"
#include "ty_fs.h"
#include "ty_log.h"
#include "ty_time.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define OUTBOX_LOG_GROUP "/aws/sagemaker/TrainingJobs"
#define OUTBOX_MSG_STOP  "Training job stopped"

/* <data_dir>/outbox[/<job><suffix>]. 0, or -1 when it does not fit. */
static int outbox_path(const char *data_dir, const char *job, const char *suffix, char *out,
                       size_t n)
{
    int w = job ? snprintf(out, n, "%s/outbox/%s%s", data_dir, job, suffix)
                : snprintf(out, n, "%s/outbox", data_dir);
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

static void outbox_fsync_dir(const char *data_dir)
{
    char dir[PATH_MAX];
    int fd;

    if (outbox_path(data_dir, NULL, "", dir, sizeof(dir)) != 0)
        return;
    if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
        fsync(fd);
        close(fd);
    }
}

int outbox_pending(const char *data_dir, const char *job)
{
    char p[PATH_MAX];

    return outbox_path(data_dir, job, ".jsonl", p, sizeof(p)) == 0 && access(p, F_OK) == 0;
}

/* Number of records (lines) in the open file fd. */
static long outbox_count(int fd)
{
    char buf[65536];
    long n = 0;
    ssize_t got;
    off_t off = 0;

    while ((got = pread(fd, buf, sizeof(buf), off)) > 0) {
        for (ssize_t i = 0; i < got; i++)
            n += buf[i] == '\n';
        off += got;
    }
    return n;
}

/* Appends rec (stolen) as the next record of job's outbox. cap > 0: refuses (1) when the file
   would grow past cap bytes. 0, 1, or -TY_EIO. */
static int outbox_append(const char *data_dir, const char *job, json_t *rec, long cap,
                         struct ty_err *err)
{
    char p[PATH_MAX], done[PATH_MAX];
    struct stat st;
    char *text = NULL;
    int fd = -1, rc = -1;

    if (!rec || outbox_path(data_dir, job, ".jsonl", p, sizeof(p)) != 0 ||
        outbox_path(data_dir, job, ".done", done, sizeof(done)) != 0) {
        json_decref(rec);
        return ty_err_set(err, TY_EIO, NULL, "outbox of job %s: no record or path too long", job);
    }
    outbox_path(data_dir, NULL, "", p, sizeof(p));
    if (mkdir(p, 0700) != 0 && errno != EEXIST) {
        rc = ty_err_set(err, TY_EIO, NULL, "cannot create '%s': %s", p, strerror(errno));
        goto done;
    }
    outbox_path(data_dir, job, ".jsonl", p, sizeof(p));
    if ((fd = open(p, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0600)) < 0 || fstat(fd, &st) != 0) {
        rc = ty_err_set(err, TY_EIO, NULL, "cannot open '%s': %s", p, strerror(errno));
        goto done;
    }
    if (st.st_size == 0)
        unlink(done); /* a stale seq of an earlier outbox of the same name */
    json_object_set_new(rec, "seq", json_integer(outbox_count(fd) + 1));
    if (!(text = json_dumps(rec, JSON_COMPACT))) {
        rc = ty_err_set(err, TY_EIO, NULL, "outbox of job %s: out of memory", job);
        goto done;
    }
    if (cap > 0 && st.st_size + (off_t)strlen(text) + 1 > cap) {
        rc = 1;
        goto done;
    }
    if (ty_write_all(fd, text, strlen(text)) != 0 || ty_write_all(fd, "\n", 1) != 0 ||
        fsync(fd) != 0) {
        /* a torn last line is skipped by the replay (it does not parse) */
        rc = ty_err_set(err, TY_EIO, NULL, "cannot write '%s': %s", p, strerror(errno));
        goto done;
    }
    if (st.st_size == 0)
        outbox_fsync_dir(data_dir);
    rc = 0;
done:
    if (fd >= 0)
        close(fd);
    free(text);
    json_decref(rec);
    return rc;
}

static json_t *outbox_str(const char *s)
{
    return s ? json_string(s) : json_null();
}

int outbox_transition(const char *data_dir, const char *job, const struct store_transition *t,
                      struct ty_err *err)
{
    json_t *rec = json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:O?, s:f}", "k", "t", "expect",
                            outbox_str(t->expect), "expect2", outbox_str(t->expect_secondary),
                            "status", outbox_str(t->status), "secondary", outbox_str(t->secondary),
                            "message", outbox_str(t->message), "set", t->set, "now", t->now);
    return outbox_append(data_dir, job, rec, 0, err);
}

int outbox_logs(const char *data_dir, const char *job, const char *region, const char *account,
                const char *stream, json_t *events, struct ty_err *err)
{
    json_t *rec = json_pack("{s:s, s:s, s:s, s:s, s:s, s:O}", "k", "l", "region",
                            region ? region : "", "account", account ? account : "", "group",
                            OUTBOX_LOG_GROUP, "stream", stream, "events", events);
    return outbox_append(data_dir, job, rec, OUTBOX_MAX_BYTES, err);
}

int outbox_metrics(const char *data_dir, const char *job, const char *ns, const char *metric,
                   json_t *dims, const struct store_metric_point *p, size_t n, struct ty_err *err)
{
    json_t *pts = json_array(), *rec;

    for (size_t i = 0; pts && i < n; i++)
        json_array_append_new(
            pts, json_pack("[I, I, f]", (json_int_t)p[i].ts_ms, (json_int_t)p[i].seq, p[i].value));
    rec = json_pack("{s:s, s:s, s:s, s:O?, s:o}", "k", "m", "ns", ns, "metric", metric, "dims",
                    dims, "points", pts);
    return outbox_append(data_dir, job, rec, OUTBOX_MAX_BYTES, err);
}

int outbox_ack(const char *data_dir, const char *job, const char *entry_id, struct ty_err *err)
{
    return outbox_append(data_dir, job, json_pack("{s:s, s:s}", "k", "a", "entry", entry_id), 0,
                         err);
}

/* ---- replay ---- */

static const char *outbox_s(json_t *rec, const char *k)
{
    const char *v = json_string_value(json_object_get(rec, k));
    return v;
}

static int outbox_terminal(const char *status)
{
    return strcmp(status, "Completed") == 0 || strcmp(status, "Failed") == 0 ||
           strcmp(status, "Stopped") == 0;
}

/* Applies one transition record. 0 (applied or already applied), or a negative code. */
static int outbox_apply_transition(struct store *s, const char *job, json_t *rec,
                                   struct ty_err *err)
{
    struct store_transition t = {
        .expect = outbox_s(rec, "expect"),
        .expect_secondary = outbox_s(rec, "expect2"),
        .status = outbox_s(rec, "status"),
        .secondary = outbox_s(rec, "secondary"),
        .message = outbox_s(rec, "message"),
        .set = json_object_get(rec, "set"),
        .now = json_number_value(json_object_get(rec, "now")),
    };
    char cur[64];
    json_t *doc;

    if (t.set && !json_is_object(t.set))
        t.set = NULL;
    ty_err_clear(err);
    if ((doc = store_job_transition(s, job, &t, err)) != NULL) {
        json_decref(doc);
        return 0;
    }
    if (err->code == TY_ENOTFOUND)
        return 0; /* deleted meanwhile */
    if (err->code != TY_ECONFLICT)
        return -err->code;
    snprintf(cur, sizeof(cur), "%.63s", err->msg);
    if ((t.status && strcmp(cur, t.status) == 0) || outbox_terminal(cur)) {
        ty_log(TY_LOG_INFO, "agent.outbox.already", "job=%s status=%s to=%s", job, cur,
               t.status ? t.status : "-");
        return 0;
    }
    if (strcmp(cur, "Stopping") == 0 && t.status && outbox_terminal(t.status)) {
        /* StopTrainingJob won while Redis was away for us: the job ends Stopped */
        t.expect = "Stopping";
        t.expect_secondary = NULL;
        t.status = "Stopped";
        t.secondary = "Stopped";
        t.message = OUTBOX_MSG_STOP;
        ty_err_clear(err);
        if ((doc = store_job_transition(s, job, &t, err)) != NULL) {
            json_decref(doc);
            return 0;
        }
        if (err->code == TY_ECONFLICT || err->code == TY_ENOTFOUND)
            return 0;
        return -err->code;
    }
    ty_log(TY_LOG_INFO, "agent.outbox.skipped", "job=%s status=%s to=%s/%s", job, cur,
           t.status ? t.status : "-", t.secondary ? t.secondary : "-");
    return 0;
}

/* Puts one record's metric points again. 0, or a negative code while Redis is away. */
static int outbox_apply_metrics(struct store *s, const char *job, json_t *rec, struct ty_err *err)
{
    json_t *pts = json_object_get(rec, "points"), *pt, *dims = json_object_get(rec, "dims");
    struct store_metric_point *p;
    size_t i, n = 0;
    int rc;

    if (!outbox_s(rec, "ns") || !outbox_s(rec, "metric") || json_array_size(pts) == 0)
        return 0;
    if (!(p = calloc(json_array_size(pts), sizeof(*p))))
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    json_array_foreach(pts, i, pt)
    {
        if (json_array_size(pt) != 3)
            continue;
        p[n].ts_ms = (int64_t)json_integer_value(json_array_get(pt, 0));
        p[n].seq = (long)json_integer_value(json_array_get(pt, 1));
        p[n].value = json_number_value(json_array_get(pt, 2));
        n++;
    }
    ty_err_clear(err);
    rc = n ? store_metrics_put(s, outbox_s(rec, "ns"), outbox_s(rec, "metric"),
                               json_is_array(dims) ? dims : NULL, p, n, (int64_t)ty_wall_ms(), err)
           : 0;
    free(p);
    if (rc != 0 && err->code != TY_EREDIS) {
        ty_log(TY_LOG_WARN, "agent.outbox.metrics_refused", "job=%s metric='%s' error='%s'", job,
               outbox_s(rec, "metric"), err->msg);
        return 0;
    }
    return rc;
}

/* Applies one record. 0 or a negative code (the replay stops there). */
static int outbox_apply(struct store *s, const char *job, json_t *rec, struct ty_err *err)
{
    const char *k = outbox_s(rec, "k");
    int rc;

    if (!k)
        return 0;
    if (strcmp(k, "t") == 0)
        return outbox_apply_transition(s, job, rec, err);
    if (strcmp(k, "l") == 0) {
        const char *acct = outbox_s(rec, "account");
        json_t *ev = json_object_get(rec, "events");
        if (!outbox_s(rec, "stream") || !json_is_array(ev) || json_array_size(ev) == 0)
            return 0;
        store_set_identity(s, outbox_s(rec, "region"), acct && acct[0] ? acct : NULL);
        ty_err_clear(err);
        rc = store_log_append(s, outbox_s(rec, "group") ? outbox_s(rec, "group") : OUTBOX_LOG_GROUP,
                              outbox_s(rec, "stream"), ev, err);
        if (rc != 0 && err->code != TY_EREDIS) {
            ty_log(TY_LOG_WARN, "agent.outbox.logs_refused", "job=%s stream='%s' error='%s'", job,
                   outbox_s(rec, "stream"), err->msg);
            return 0; /* refused for good: replaying it again would not help */
        }
        return rc;
    }
    if (strcmp(k, "m") == 0)
        return outbox_apply_metrics(s, job, rec, err);
    if (strcmp(k, "a") == 0 && outbox_s(rec, "entry")) {
        ty_err_clear(err);
        rc = queue_ack(s, outbox_s(rec, "entry"), err);
        return rc != 0 && err->code == TY_EREDIS ? rc : 0;
    }
    return 0;
}

static long outbox_done_read(const char *path)
{
    char buf[32] = "";
    FILE *f = fopen(path, "re");
    long v = 0;

    if (!f)
        return 0;
    if (fgets(buf, sizeof(buf), f))
        v = strtol(buf, NULL, 10);
    fclose(f);
    return v > 0 ? v : 0;
}

/* Records seq as applied: a temp file renamed over the .done file. */
static int outbox_done_write(const char *path, long seq)
{
    char tmp[PATH_MAX + 8], buf[32];
    int fd, n, rc = -1;

    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
        return -1;
    n = snprintf(buf, sizeof(buf), "%ld\n", seq);
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0)
        return -1;
    if (ty_write_all(fd, buf, (size_t)n) == 0 && fsync(fd) == 0)
        rc = 0;
    close(fd);
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -1;
    if (rc != 0)
        unlink(tmp);
    return rc;
}

int outbox_replay(struct store *s, const char *data_dir, const char *job, struct ty_err *err)
{
    char p[PATH_MAX], done[PATH_MAX];
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long applied, n = 0;
    FILE *f;
    int rc = 0;

    if (outbox_path(data_dir, job, ".jsonl", p, sizeof(p)) != 0 ||
        outbox_path(data_dir, job, ".done", done, sizeof(done)) != 0)
        return ty_err_set(err, TY_EIO, NULL, "outbox of job %s: path too long", job);
    if (!(f = fopen(p, "re")))
        return errno == ENOENT
                   ? 0
                   : ty_err_set(err, TY_EIO, NULL, "cannot open '%s': %s", p, strerror(errno));
    applied = outbox_done_read(done);
    while ((len = getline(&line, &cap, f)) > 0) {
        json_t *rec;
        long seq;
        if (line[len - 1] != '\n')
            break; /* torn by a crash while it was written: never acknowledged */
        if (!(rec = json_loads(line, 0, NULL)))
            continue;
        seq = (long)json_integer_value(json_object_get(rec, "seq"));
        if (seq > applied) {
            rc = outbox_apply(s, job, rec, err);
            if (rc == 0) {
                applied = seq;
                n++;
                if (outbox_done_write(done, applied) != 0)
                    rc = ty_err_set(err, TY_EIO, NULL, "cannot write '%s': %s", done,
                                    strerror(errno));
            }
        }
        json_decref(rec);
        if (rc != 0)
            break;
    }
    free(line);
    fclose(f);
    if (rc != 0) {
        ty_log(TY_LOG_WARN, "agent.outbox.replay_paused", "job=%s applied=%ld error='%s'", job,
               applied, err->msg);
        return rc;
    }
    unlink(p); /* the records first: a crash between the two replays nothing twice */
    unlink(done);
    outbox_fsync_dir(data_dir);
    ty_log(TY_LOG_INFO, "agent.outbox.replayed", "job=%s records=%ld", job, n);
    return 0;
}

int outbox_replay_all(struct store *s, const char *data_dir, int (*skip)(const char *, void *),
                      void *ud)
{
    char dir[PATH_MAX], job[256];
    struct dirent *de;
    struct ty_err err;
    int left = 0;
    DIR *d;

    if (outbox_path(data_dir, NULL, "", dir, sizeof(dir)) != 0)
        return -1;
    if (!(d = opendir(dir)))
        return errno == ENOENT ? 0 : -1;
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (l <= 6 || l - 6 >= sizeof(job) || strcmp(de->d_name + l - 6, ".jsonl") != 0)
            continue;
        memcpy(job, de->d_name, l - 6);
        job[l - 6] = '\0';
        if (skip && skip(job, ud))
            continue;
        if (outbox_replay(s, data_dir, job, &err) != 0)
            left++;
    }
    closedir(d);
    return left;
}
