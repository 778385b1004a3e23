/*
 * run_slurm_rec.c - the record of a job's Slurm attempt (run_int.h, struct run_slurm_rec) in
 * <data_dir>/slurm/<job>.json, mode 0600 (it holds the attempt's launch token and the role's
 * container token): what an agent restarted mid-job needs to follow the same Slurm job
 * instead of running the script again (run_slurm.c).
 *
 * Owns: the file's form, its atomic replacement (a temporary file, fsync, rename) and its
 * removal. The record is written by the job's runner alone.
 */
#include "run_int.h"

#include "ty_fs.h"
#include "ty_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* <data_dir>/slurm[/<job>.json<suffix>]. 0, or -1 when it does not fit. */
static int rec_path(const struct run_ctx *r, const char *suffix, char *out, size_t n)
{
    int w = suffix ? snprintf(out, n, "%s/slurm/%s.json%s", r->a->cfg.data_dir, r->job, suffix)
                   : snprintf(out, n, "%s/slurm", r->a->cfg.data_dir);
    return w > 0 && (size_t)w < n ? 0 : -1;
}

static json_t *rec_host_json(const struct run_slurm_rec_host *h)
{
    return json_pack("{s:s, s:I, s:I, s:i, s:f, s:i, s:s, s:i, s:i, s:i, s:s, s:s, s:s}", "stream",
                     h->stream, "acked", (json_int_t)h->acked, "last_ts", (json_int_t)h->last_ts,
                     "phase", h->phase, "started", h->started, "ended", h->ended, "node", h->node,
                     "exit_code", h->exit_code, "exit_signal", h->exit_signal, "stopped",
                     h->stopped, "failure", h->failure, "model_error", h->model_error, "error",
                     h->error);
}

int run__slurm_rec_write(const struct run_ctx *r, const struct run_slurm_rec *rec)
{
    char dir[PATH_MAX], path[PATH_MAX], tmp[PATH_MAX];
    json_t *doc, *hosts = json_array();
    char *text = NULL;
    int fd = -1, rc = -1;

    for (int i = 0; hosts && i < rec->nh; i++)
        json_array_append_new(hosts, rec_host_json(&rec->h[i]));
    doc = json_pack("{s:i, s:I, s:i, s:s, s:s, s:s, s:f, s:i, s:i, s:o}", "v", 1, "slurm_id",
                    (json_int_t)rec->slurm_id, "attempt", rec->attempt, "token", rec->token,
                    "creds", rec->creds, "partition", rec->partition, "t_start", rec->t_start,
                    "said", rec->said, "stop", rec->stop, "hosts", hosts);
    if (!doc || !(text = json_dumps(doc, JSON_COMPACT)) || rec_path(r, NULL, dir, sizeof(dir)) ||
        rec_path(r, "", path, sizeof(path)) || rec_path(r, ".tmp", tmp, sizeof(tmp)))
        goto out;
    if ((mkdir(dir, 0700) != 0 && errno != EEXIST) ||
        (fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
        goto out;
    if (ty_write_all(fd, text, strlen(text)) != 0 || fsync(fd) != 0)
        goto out;
    close(fd);
    fd = -1;
    rc = rename(tmp, path);
out:
    if (fd >= 0) {
        close(fd);
        unlink(tmp);
    }
    free(text);
    json_decref(doc);
    return rc;
}

/* Copies member key of o (a string) into out. */
static void rec_str(json_t *o, const char *key, char *out, size_t n)
{
    const char *s = json_string_value(json_object_get(o, key));
    snprintf(out, n, "%s", s ? s : "");
}

int run__slurm_rec_read(const struct run_ctx *r, struct run_slurm_rec *rec)
{
    char path[PATH_MAX];
    json_error_t jerr;
    json_t *doc, *hosts, *h;
    size_t i;

    memset(rec, 0, sizeof(*rec));
    if (rec_path(r, "", path, sizeof(path)) != 0 || !(doc = json_load_file(path, 0, &jerr)))
        return -1;
    hosts = json_object_get(doc, "hosts");
    rec->slurm_id = (long)json_integer_value(json_object_get(doc, "slurm_id"));
    rec->attempt = (int)json_integer_value(json_object_get(doc, "attempt"));
    rec_str(doc, "token", rec->token, sizeof(rec->token));
    rec_str(doc, "creds", rec->creds, sizeof(rec->creds));
    rec_str(doc, "partition", rec->partition, sizeof(rec->partition));
    rec->t_start = json_number_value(json_object_get(doc, "t_start"));
    rec->said = (int)json_integer_value(json_object_get(doc, "said"));
    rec->stop = (int)json_integer_value(json_object_get(doc, "stop"));
    rec->nh = (int)json_array_size(hosts);
    if (json_integer_value(json_object_get(doc, "v")) != 1 || rec->slurm_id <= 0 || rec->nh < 1 ||
        rec->nh > STAGE_MAX_HOSTS || !launchwire_token_ok(rec->token)) {
        json_decref(doc);
        return -1;
    }
    json_array_foreach(hosts, i, h)
    {
        struct run_slurm_rec_host *rh = &rec->h[i];
        rec_str(h, "stream", rh->stream, sizeof(rh->stream));
        rec_str(h, "node", rh->node, sizeof(rh->node));
        rec_str(h, "failure", rh->failure, sizeof(rh->failure));
        rec_str(h, "model_error", rh->model_error, sizeof(rh->model_error));
        rec_str(h, "error", rh->error, sizeof(rh->error));
        rh->acked = (long long)json_integer_value(json_object_get(h, "acked"));
        rh->last_ts = (int64_t)json_integer_value(json_object_get(h, "last_ts"));
        rh->phase = (int)json_integer_value(json_object_get(h, "phase"));
        rh->started = json_number_value(json_object_get(h, "started"));
        rh->ended = (int)json_integer_value(json_object_get(h, "ended"));
        rh->exit_code = (int)json_integer_value(json_object_get(h, "exit_code"));
        rh->exit_signal = (int)json_integer_value(json_object_get(h, "exit_signal"));
        rh->stopped = (int)json_integer_value(json_object_get(h, "stopped"));
    }
    json_decref(doc);
    return 0;
}

void run__slurm_rec_drop(const struct run_ctx *r)
{
    char path[PATH_MAX];

    if (rec_path(r, "", path, sizeof(path)) == 0 && unlink(path) != 0 && errno != ENOENT)
        ty_log(TY_LOG_WARN, "agent.slurm.record_drop_failed", "job=%s error='%s'", r->job,
               strerror(errno));
}
