/*
 * launcher_host.c - trainyard-launch's host of the job (launcher_int.h): staging /opt/ml from
 * trainyard's S3 with the role's credentials, the sandbox, relay and training container on the
 * node's engine, following it (lines, the executor's stop, Slurm's SIGTERM, a silent
 * executor), algo-1's upload, and removing everything after.
 */
#include "launcher_int.h"

#include "artifacts.h"
#include "docker.h"
#include "hostcfg.h"
#include "instances.h"
#include "objstore.h"
#include "reap.h"
#include "relay.h"
#include "s3client.h"
#include "s3uri.h"
#include "sandbox.h"
#include "seccomp.h"
#include "session.h"
#include "stage.h"
#include "transfer.h"
#include "ty_fs.h"
#include "ty_log.h"
#include "ty_time.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LAUNCHER_TICK_US 200000
#define LAUNCHER_TERM_S                                                                            \
    2                         /* grace after Slurm's SIGTERM: well within KillWait (30 s by        \
                                 default), so the launcher removes what it made before SIGKILL */
#define LAUNCHER_KILL_WAIT 30 /* after SIGKILL */
#define LAUNCHER_MAX_GPUS  16 /* GPUs of one node */

static void launcher_transfer_log(void *ud, const char *line)
{
    launcher_say(ud, "%s", line);
}

/* The checkpoint folder as a root the container cannot replace, and a path below it. */
static const char *launcher_ckpt_root(struct launcher *l, const char **rel)
{
    if (strncmp(l->sp.checkpoint_local, "/opt/ml/", 8) == 0) {
        *rel = l->sp.checkpoint_local + 8;
        return l->dir;
    }
    *rel = "";
    return l->ckpt;
}

/* An object store on trainyard's S3 with the role's fresh credentials, and a transfer on it.
   new: objstore_close. NULL with err (a FailureReason). */
static struct objstore *launcher_store(struct launcher *l, struct transfer *t, struct ty_err *err)
{
    char ak[64], sk[128], tok[2048];
    struct s3c_config cfg = {0};
    struct objstore *os;

    if (launcher_creds(l, ak, sizeof(ak), sk, sizeof(sk), tok, sizeof(tok), err) != 0)
        return NULL;
    cfg.endpoint = l->endpoint;
    cfg.access_key = ak;
    cfg.secret_key = sk;
    cfg.session_token = tok;
    cfg.region = l->region[0] ? l->region : NULL;
    os = objstore_open_remote(l->root, &cfg, err);
    memset(sk, 0, sizeof(sk));
    memset(tok, 0, sizeof(tok));
    if (!os) {
        ty_err_set(err, TY_EIO, NULL, "InternalServerError: trainyard's S3 at %s: %s", l->endpoint,
                   err->msg);
        return NULL;
    }
    memset(t, 0, sizeof(*t));
    t->os = os;
    t->region = l->region;
    t->log = launcher_transfer_log;
    t->ud = l;
    t->role_arn = l->sp.role_arn;
    t->role_creds = 1; /* trainyard's S3 checks the role on its own credentials */
    return os;
}

/* Writes the Slurm job's id into <root>/slurm-job, by which the Epilog (launcher_epilog) finds
   the folder of a launcher that was killed before it removed it. */
static void launcher_mark(struct launcher *l)
{
    const char *sj = getenv("SLURM_JOB_ID");
    char path[PATH_MAX + 16];
    FILE *f;

    snprintf(path, sizeof(path), "%.4000s/slurm-job", l->root);
    if (sj && (f = fopen(path, "we"))) {
        fprintf(f, "%s\n", sj);
        fclose(f);
    }
}

int launcher_stage(struct launcher *l, char *reason, size_t n)
{
    struct transfer t;
    struct objstore *os;
    struct ty_err err;
    int rc = 0, count = 0;

    ty_err_clear(&err);
    snprintf(l->root, sizeof(l->root), "%s/%s-%d-%s", l->staging_root, l->job, l->attempt, l->name);
    snprintf(l->dir, sizeof(l->dir), "%.4000s/ml", l->root);
    snprintf(l->ckpt, sizeof(l->ckpt), "%.4000s/checkpoints", l->root);
    stage_remove(l->root);
    if (ty_mkdirs(l->root, 0700) != 0) {
        snprintf(reason, n, "InternalServerError: cannot create '%s' on node %s: %s", l->root,
                 l->node, strerror(errno));
        return -1;
    }
    launcher_mark(l);
    launcher_say(l,
                 "trainyard: %s runs on Slurm node %s; its /opt/ml is a folder of the node's "
                 "disk (VolumeSizeInGB is not enforced on Slurm nodes)",
                 l->name, l->node);
    if (stage_prepare(l->dir, &l->sp, l->host, NULL, &err) != 0) {
        snprintf(reason, n, "%s", err.msg);
        return -1;
    }
    if (json_array_size(l->sp.channels) == 0 && !l->sp.checkpoint_uri[0] &&
        !json_object_get(l->sp.hyperparameters, "sagemaker_submit_directory"))
        return 0;
    if (!(os = launcher_store(l, &t, &err))) {
        snprintf(reason, n, "%s", err.msg);
        return -1;
    }
    rc = transfer_channels(&t, &l->sp, l->dir, l->root, l->host, l->hosts, &err);
    if (rc == 0)
        rc = transfer_code(&t, &l->sp, l->dir, &err);
    if (rc == 0 && l->sp.checkpoint_uri[0]) {
        const char *rel, *root = launcher_ckpt_root(l, &rel);
        if (rel[0])
            rc = stage_ckpt_dir(root, rel, l->sp.checkpoint_local, &err);
        else if (ty_mkdirs(l->ckpt, 0777) != 0 || chmod(l->ckpt, 0777) != 0)
            rc = ty_err_set(&err, TY_EIO, NULL, "InternalServerError: cannot create '%s'", l->ckpt);
        if (rc == 0)
            rc = transfer_download_prefix(&t, l->sp.checkpoint_uri, root, rel, &count, &err);
        if (rc == 0 && count > 0)
            launcher_say(l, "Restored %d checkpoint files from %s into %s", count,
                         l->sp.checkpoint_uri, l->sp.checkpoint_local);
    }
    objstore_close(os);
    if (rc != 0)
        snprintf(reason, n, "%s", err.msg);
    return rc == 0 ? 0 : -1;
}

/* The seccomp profile on Podman: its default with new user namespaces refused (seccomp.h), as
   the local agent gives it. Docker's default already refuses them. */
static void launcher_seccomp(struct launcher *l)
{
    struct ty_err err;
    int podman = docker_is_podman(l->d, &err), rc;

    l->seccomp[0] = '\0';
    l->engine_docker = podman == 0;
    if (podman != 1)
        return;
    /* in the host's own folder: launchers of other jobs (or hosts, on a test cluster's shared
       machine) write theirs at the same time */
    snprintf(l->seccomp, sizeof(l->seccomp), "%.4000s/seccomp-no-userns.json", l->root);
    rc = seccomp_write_profile(SECCOMP_PODMAN_DEFAULT, l->seccomp, &err);
    if (rc == -TY_ENOTFOUND)
        launcher_say(l,
                     "trainyard: node %s has no %s: the container keeps Podman's default "
                     "seccomp profile",
                     l->node, SECCOMP_PODMAN_DEFAULT);
    else if (rc != 0)
        launcher_say(l, "trainyard: the container keeps Podman's default seccomp profile: %s",
                     err.msg);
    if (rc != 0)
        l->seccomp[0] = '\0';
}

/* The GPUs Slurm gave this node's step (SLURM_JOB_GPUS, "0,1"): their CDI names and ids. */
static int launcher_gpus(const char **cdi, const char **ids, char (*names)[48], char (*idv)[16],
                         int max)
{
    const char *v = getenv("SLURM_JOB_GPUS");
    int n = 0;

    while (v && *v && n < max) {
        size_t len = strcspn(v, ",");
        if (len > 0 && len < 16 && strspn(v, "0123456789") == len) {
            snprintf(idv[n], 16, "%.*s", (int)len, v);
            snprintf(names[n], 48, "nvidia.com/gpu=%s", idv[n]);
            cdi[n] = names[n];
            ids[n] = idv[n];
            n++;
        }
        v += len + (v[len] == ',');
    }
    cdi[n] = ids[n] = NULL;
    return n;
}

/* A job of several hosts runs in its node's own network, where the hosts reach each other at
   the nodes' addresses: the launcher's own namespace, as Podman's "ns:" path to it (the node's
   even when the engine's service runs in another: the netns test cluster), or "host" (Docker;
   and Podman when that namespace is the machine's own, which runc refuses by path: the caller
   tries it after the path). Fills mode and hosts[] ("algo-N:addr", NULL-terminated, from the
   assignment's addrs; storage in lines). 1 when it applies, 0 for a single host or
   EnableNetworkIsolation (no network but the relay). */
static int launcher_node_net(struct launcher *l, char *mode, size_t n, const char **hosts,
                             char (*lines)[80], int max)
{
    int k = 0;

    if (l->hosts < 2 || l->sp.network_isolation)
        return 0;
    if (l->engine_docker)
        snprintf(mode, n, "host");
    else
        snprintf(mode, n, "ns:/proc/%ld/ns/net", (long)getpid());
    for (int i = 0; i < l->hosts && k < max; i++) {
        const char *a = json_string_value(json_array_get(l->addrs, (size_t)i));
        if (!a || !a[0] || strlen(a) >= 64 || strpbrk(a, " \t\n"))
            continue;
        snprintf(lines[k], sizeof(lines[k]), "algo-%d:%s", i + 1, a);
        hosts[k] = lines[k];
        k++;
    }
    hosts[k] = NULL;
    return 1;
}

/* The sandbox that owns the host's network namespace, with the relay bound in it when the
   job has trainyard's API inside. 0 or -1 with reason. */
static int launcher_sandbox(struct launcher *l, char *reason, size_t n)
{
    char mode[64], lines[LAUNCHER_MAX_HOSTS][80];
    const char *hosts[LAUNCHER_MAX_HOSTS + 1];
    struct sandbox_opts o = {0};
    struct relay_opts ro = {0};
    struct ty_err err;
    json_t *labels =
        json_pack("{s:s, s:s, s:s, s:s, s:s}", "trainyard.deployment", l->deployment,
                  "trainyard.job", l->job, "trainyard.host", l->name, SANDBOX_LABEL, "1",
                  LAUNCHER_SLURM_LABEL, getenv("SLURM_JOB_ID") ? getenv("SLURM_JOB_ID") : "");
    int pid = 0, rc;

    o.image = l->runtime_image;
    o.name = l->sbname;
    o.hostname = l->name;
    o.labels = labels;
    o.seccomp = l->seccomp[0] ? l->seccomp : NULL;
    if (launcher_node_net(l, mode, sizeof(mode), hosts, lines, LAUNCHER_MAX_HOSTS)) {
        o.network_mode = mode;
        o.extra_hosts = hosts;
    }
    rc = labels ? sandbox_make(l->d, &o, l->sbid, sizeof(l->sbid), &pid, &err) : -TY_ENOMEM;
    if (rc != 0 && labels && o.network_mode && strncmp(o.network_mode, "ns:", 3) == 0) {
        o.network_mode = "host"; /* the machine's own namespace: runc takes it only so */
        rc = sandbox_make(l->d, &o, l->sbid, sizeof(l->sbid), &pid, &err);
    }
    json_decref(labels);
    if (rc != 0) {
        snprintf(reason, n, "InternalServerError: cannot make the sandbox on node %s: %s", l->node,
                 labels ? err.msg : "out of memory");
        return -1;
    }
    if (!l->endpoint[0] || l->sp.network_isolation)
        return 0;
    ro.pid = pid;
    ro.port = RELAY_PORT;
    ro.target = l->endpoint;
    ro.job = l->job;
    if (!(l->relay = relay_start(&ro, &err)))
        launcher_say(l, "trainyard: no trainyard API inside %s: %s", l->name, err.msg);
    return 0;
}

int launcher_run(struct launcher *l, char *reason, size_t n)
{
    char visible[256] = "", base[200], names[LAUNCHER_MAX_GPUS][48], idv[LAUNCHER_MAX_GPUS][16];
    const char *cdi[LAUNCHER_MAX_GPUS + 1], *ids[LAUNCHER_MAX_GPUS + 1];
    struct instances_limits lim;
    struct stage_env_opts eo = {0};
    struct hostcfg_in in = {0};
    struct hostcfg cfg;
    struct ty_err err;
    json_t *labels;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int64_t mem = (int64_t)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE);
    int ex, ngpu, rc;

    if (!(l->d = docker_open(l->docker_host, &err))) {
        snprintf(reason, n, "InternalServerError: node %s's container engine: %s", l->node,
                 err.msg);
        return -1;
    }
    ex = docker_image_exists(l->d, l->sp.image, &err);
    if (ex <= 0) {
        snprintf(reason, n,
                 ex == 0 ? "ClientError: image '%s' not found on node %s's container engine"
                         : "InternalServerError: node %s's container engine: %s",
                 ex == 0 ? l->sp.image : l->node, ex == 0 ? l->node : err.msg);
        return -1;
    }
    launcher_seccomp(l);
    reap_job_name(l->deployment, l->job, base, sizeof(base));
    snprintf(l->cname, sizeof(l->cname), "%.180s-%s", base, l->name);
    snprintf(l->sbname, sizeof(l->sbname), "%s-net", l->cname);
    docker_remove(l->d, l->cname, 1, &err); /* what an earlier launcher of the job left */
    if (launcher_sandbox(l, reason, n) != 0)
        return -1;
    ngpu = launcher_gpus(cdi, ids, names, idv, LAUNCHER_MAX_GPUS);
    instances_limits(l->sp.instance_type, (int)cpus, mem, ngpu, &lim);
    if (ngpu > lim.gpus) { /* Slurm gives an exclusive node's every GPU: the type's only */
        ngpu = lim.gpus > 0 ? lim.gpus : 0;
        cdi[ngpu] = ids[ngpu] = NULL;
    }
    for (int i = 0; i < ngpu; i++)
        snprintf(visible + strlen(visible), sizeof(visible) - strlen(visible), "%s%s", i ? "," : "",
                 ids[i]);
    eo.cpus = lim.cpus;
    eo.gpus = ngpu > 0 ? ngpu : lim.gpus;
    eo.visible_devices = visible;
    eo.region = l->region;
    eo.endpoint_url = l->endpoint;
    eo.host = l->host;
    if (l->relay) {
        eo.relay_port = RELAY_PORT;
        eo.creds_path = SESSION_CREDENTIALS_PATH;
        eo.creds_token = l->creds_token[0] ? l->creds_token : NULL;
    }
    labels =
        json_pack("{s:s, s:s, s:s, s:s, s:s}", "trainyard.deployment", l->deployment,
                  "trainyard.job", l->job, "trainyard.host", l->name, "trainyard.node", l->node,
                  LAUNCHER_SLURM_LABEL, getenv("SLURM_JOB_ID") ? getenv("SLURM_JOB_ID") : "");
    in.sp = &l->sp;
    in.lim = &lim;
    in.eo = &eo;
    in.name = l->cname;
    in.hostname = l->name;
    in.opt_ml = l->dir;
    in.ckpt_dir = l->ckpt;
    in.gpu_cdi = cdi;
    in.gpu_ids = ids;
    in.ngpu = ngpu;
    in.libpod = !l->engine_docker;
    in.seccomp = l->seccomp[0] ? l->seccomp : NULL;
    in.net_sandbox = l->sbid;
    in.engine_docker = l->engine_docker;
    in.labels = labels;
    if (!labels || hostcfg_build(&in, &cfg) != 0) {
        json_decref(labels);
        snprintf(reason, n, "InternalServerError: out of memory");
        return -1;
    }
    rc = docker_create(l->d, &cfg.c, l->cid, sizeof(l->cid), &err);
    hostcfg_free(&cfg);
    json_decref(labels);
    if (rc != 0 || docker_start(l->d, l->cid, &err) != 0) {
        snprintf(reason, n, "ClientError: cannot %s the training container on node %s: %s",
                 rc ? "create" : "start", l->node, err.msg);
        return -1;
    }
    launcher_set_phase(l, LAUNCHWIRE_RUNNING, ty_wall_s());
    ty_log(TY_LOG_INFO, "launch.started", "job=%s host=%s node=%s container=%.12s", l->job, l->name,
           l->node, l->cid);
    return 0;
}

static int launcher_on_line(const char *line, size_t len, int64_t ts_ms, int is_stderr, void *ud)
{
    launcher_line(ud, line, len, ts_ms > 0 ? ts_ms : (int64_t)(ty_wall_s() * 1000.0), is_stderr);
    return 0;
}

/* Sends signal to the container; with SIGTERM, the time after which SIGKILL follows. */
static double launcher_signal(struct launcher *l, const char *signal, int grace_s)
{
    struct ty_err err;

    docker_kill(l->d, l->cid, signal, &err);
    return ty_mono_s() + grace_s;
}

void launcher_follow(struct launcher *l, struct launchwire_report *end)
{
    struct docker_logfile *f = NULL;
    struct docker_state st = {0};
    struct ty_err err;
    double kill_at = 0, killed_at = 0;
    int stopping = 0, rc;

    if (docker_inspect(l->d, l->cid, &st, &err) == 0 && st.log_path[0])
        f = docker_logfile_open(st.log_path, LAUNCHER_MAX_LINE, &err);
    if (!f)
        launcher_say(l, "trainyard: cannot read the container's log on node %s: %s", l->node,
                     err.msg);
    for (;;) {
        int stop, grace, upload, gone;
        double silent;

        if (f)
            docker_logfile_read(f, launcher_on_line, l, &err);
        rc = docker_inspect(l->d, l->cid, &st, &err);
        if (rc == 0 && !st.running) {
            end->exit_code = st.exit_code;
            break;
        }
        if (rc == -TY_ENOTFOUND) {
            snprintf(end->error, sizeof(end->error),
                     "InternalServerError: the training container on node %s was removed "
                     "outside trainyard",
                     l->node);
            break;
        }
        if (killed_at > 0 && ty_mono_s() > killed_at + LAUNCHER_KILL_WAIT) {
            snprintf(end->error, sizeof(end->error),
                     "InternalServerError: the container on node %s did not end after SIGKILL",
                     l->node);
            break;
        }
        launcher_orders(l, &stop, &grace, &upload, &gone, &silent);
        if (!stopping && (stop || l->sig_stop)) { /* StopTrainingJob or MaxRuntimeInSeconds */
            stopping = 1;
            end->stopped = 1;
            launcher_say(l, "trainyard: stopping %s (SIGTERM, %d s to end)", l->name,
                         stop && grace > 0 ? grace : l->stop_grace);
            kill_at = launcher_signal(l, "SIGTERM", stop && grace > 0 ? grace : l->stop_grace);
        } else if (!stopping && (l->sig_term || gone || silent > l->orphan_s)) {
            stopping = 2; /* Slurm ends the step, or the executor is gone: nothing uploaded */
            end->stopped = 1;
            launcher_say(l, "trainyard: %s is stopped: %s", l->name,
                         l->sig_term ? "Slurm ends the job"
                         : gone      ? "the executor ended this attempt"
                                     : "no answer from the executor");
            kill_at = launcher_signal(
                l, "SIGTERM", l->stop_grace < LAUNCHER_TERM_S ? l->stop_grace : LAUNCHER_TERM_S);
        }
        if (kill_at > 0 && !killed_at && ty_mono_s() > kill_at)
            killed_at = launcher_signal(l, "SIGKILL", 0);
        usleep(LAUNCHER_TICK_US);
    }
    if (f) {
        docker_logfile_read(f, launcher_on_line, l, &err);
        docker_logfile_finish(f, launcher_on_line, l);
        docker_logfile_close(f);
    }
    if (end->exit_code > 128 && end->exit_code < 128 + 65)
        end->exit_signal = end->exit_code - 128;
    stage_read_failure(l->dir, end->failure, sizeof(end->failure));
    if (stopping == 2)
        end->stopped = 2; /* the caller uploads nothing */
}

void launcher_upload(struct launcher *l, int with_model, char *reason, size_t n)
{
    char bucket[256], prefix[1100], key[1400], tmp[PATH_MAX + 32], uri[1700];
    struct transfer t;
    struct objstore *os;
    struct ty_err err;

    reason[0] = '\0';
    if (!l->endpoint[0] || !l->creds_token[0]) { /* no trainyard endpoint, or no role inside */
        if (with_model && l->host == 0 && l->sp.output_path[0])
            snprintf(reason, n,
                     "ClientError: the model cannot be uploaded from node %s: the job has no "
                     "role credentials there",
                     l->node);
        return;
    }
    if (!(os = launcher_store(l, &t, &err))) {
        snprintf(reason, n, "%s", err.msg);
        return;
    }
    if (l->sp.checkpoint_uri[0]) { /* every host's last checkpoints */
        const char *rel, *root = launcher_ckpt_root(l, &rel);
        if (transfer_upload_tree(&t, root, rel, l->sp.checkpoint_uri, NULL, 0, NULL, &err) != 0)
            launcher_say(l, "trainyard: checkpoints not uploaded: %s", err.msg);
    }
    if (l->host != 0 || !l->sp.output_path[0]) {
        objstore_close(os);
        return;
    }
    if (s3uri_parse(l->sp.output_path, bucket, sizeof(bucket), prefix, sizeof(prefix))) {
        snprintf(reason, n, "ClientError: OutputDataConfig.S3OutputPath '%s' is not an S3 URI",
                 l->sp.output_path);
        objstore_close(os);
        return;
    }
    for (int i = with_model ? 0 : 1; i < 2; i++) {
        const char *file = i == 0 ? (l->sp.output_uncompressed ? "model" : "model.tar.gz")
                                  : (l->sp.output_uncompressed ? "data" : "output.tar.gz");
        const char *src = i == 0 ? "model" : "output/data"; /* below dir, confined */
        int rc;
        if (artifacts_output_key(prefix, l->sp.name, file, key, sizeof(key)) != 0) {
            snprintf(reason, n, "ClientError: S3OutputPath too long");
            break;
        }
        snprintf(uri, sizeof(uri), "s3://%s/%s", bucket, key);
        if (l->sp.output_uncompressed) { /* as SageMaker's uncompressed mode: file by file */
            rc = transfer_upload_tree(&t, l->dir, src, uri, NULL, 0, NULL, &err);
        } else {
            snprintf(tmp, sizeof(tmp), "%s/%s", l->root, file);
            rc = artifacts_targz(l->dir, src, tmp, &err);
            if (rc == 0)
                rc = transfer_put_file(&t, tmp, bucket, key, NULL, &err);
            unlink(tmp);
        }
        if (rc != 0) {
            snprintf(reason, n, "InternalServerError: cannot upload %s: %s", file, err.msg);
            break;
        }
        launcher_say(l, "trainyard: uploaded %s", uri);
    }
    objstore_close(os);
}

void launcher_cleanup(struct launcher *l)
{
    struct ty_err err;

    relay_stop(l->relay);
    l->relay = NULL;
    if (l->d && l->cid[0])
        docker_remove(l->d, l->cid, 1, &err);
    if (l->d && l->sbid[0])
        sandbox_remove(l->d, l->sbid, &err);
    if (l->root[0])
        stage_remove(l->root);
    docker_close(l->d);
    l->d = NULL;
}

/* The folders under root whose slurm-job file names job id (launcher_mark): removed. */
static int launcher_epilog_dirs(const char *root, const char *id)
{
    char path[PATH_MAX + 300], have[32];
    struct dirent *e;
    DIR *d = opendir(root);
    int n = 0;

    while (d && (e = readdir(d))) {
        FILE *f;
        if (e->d_name[0] == '.' || strlen(root) > PATH_MAX - 1)
            continue;
        snprintf(path, sizeof(path), "%.4000s/%s/slurm-job", root, e->d_name);
        if (!(f = fopen(path, "re")))
            continue;
        have[0] = '\0';
        if (!fgets(have, sizeof(have), f))
            have[0] = '\0';
        fclose(f);
        have[strcspn(have, "\n")] = '\0';
        if (strcmp(have, id) != 0)
            continue;
        snprintf(path, sizeof(path), "%.4000s/%s", root, e->d_name);
        if (stage_remove(path) == 0)
            n++;
    }
    if (d)
        closedir(d);
    return n;
}

int launcher_epilog(const char *docker_host, const char *staging_root)
{
    const char *id = getenv("SLURM_JOB_ID");
    char filter[96];
    struct ty_err err;
    struct docker *d;
    json_t *list, *c;
    size_t i;
    int removed = 0, dirs;

    if (!id || !id[0] || strlen(id) > 20 || strspn(id, "0123456789") != strlen(id))
        return 0;
    dirs = launcher_epilog_dirs(staging_root, id);
    snprintf(filter, sizeof(filter), "%s=%s", LAUNCHER_SLURM_LABEL, id);
    if (!(d = docker_open(docker_host, &err)) || !(list = docker_list(d, filter, &err))) {
        ty_log(TY_LOG_WARN, "launch.epilog.engine", "slurm_job=%s engine='%s' error='%s'", id,
               docker_host, err.msg);
        docker_close(d);
        return 0;
    }
    for (int pass = 0; pass < 2; pass++) { /* the training containers first: they live in
                                                the sandboxes' namespaces */
        json_array_foreach(list, i, c)
        {
            const char *cid = json_string_value(json_object_get(c, "Id"));
            int sandbox = json_object_get(json_object_get(c, "Labels"), SANDBOX_LABEL) != NULL;
            if (!cid || sandbox != pass)
                continue;
            if ((sandbox ? sandbox_remove(d, cid, &err) : docker_remove(d, cid, 1, &err)) == 0)
                removed++;
            else
                ty_log(TY_LOG_WARN, "launch.epilog.remove",
                       "slurm_job=%s container=%.12s "
                       "error='%s'",
                       id, cid, err.msg);
        }
    }
    ty_log(TY_LOG_INFO, "launch.epilog", "slurm_job=%s containers_removed=%d folders_removed=%d",
           id, removed, dirs);
    json_decref(list);
    docker_close(d);
    return 0;
}
