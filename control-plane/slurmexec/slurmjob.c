/*
 * slurmjob.c - one attempt's submission to Slurm (slurmjob.h). Owns nothing between calls.
 */
#include "slurmjob.h"

#include "slurmscript.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A value the environment carries as given: printable ASCII without quotes or spaces. */
static int slurmjob_env_ok(const char *v)
{
    size_t n = strlen(v);

    if (n == 0 || n > 1024)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (v[i] <= ' ' || v[i] > '~' || v[i] == '"' || v[i] == '\'' || v[i] == '\\')
            return 0;
    return 1;
}

int slurmjob_build(const struct slurmjob_in *in, struct slurmjob *j, struct ty_err *err)
{
    struct slurmscript_job sj = {in->deployment, in->job, in->hosts, in->launcher};
    long runtime = in->max_runtime_s > 0 ? in->max_runtime_s : SLURMJOB_DEFAULT_RUNTIME_S;
    char attempt[16];
    int bad = 0;

    memset(j, 0, sizeof(*j));
    if (!in->deployment || strlen(in->deployment) < 8 || !in->job || !in->job[0] || in->hosts < 1 ||
        in->attempt < 1 || !in->place || !in->launch_url ||
        strncmp(in->launch_url, "http://", 7) != 0 || !slurmjob_env_ok(in->launch_url) ||
        !in->token || !slurmjob_env_ok(in->token) ||
        (in->node_docker_host && !slurmjob_env_ok(in->node_docker_host)) ||
        (in->node_staging_dir && !slurmjob_env_ok(in->node_staging_dir)))
        return ty_err_set(err, TY_EINVAL, NULL,
                          "the Slurm submission of %s lacks a member, or one the environment "
                          "cannot carry",
                          in->job ? in->job : "(no job)");
    if (!(j->script = slurmscript_batch(&sj)))
        return ty_err_set(err, TY_EINVAL, NULL,
                          "the launcher's path '%s' cannot be put in a batch script",
                          in->launcher ? in->launcher : "");
    slurmscript_name(in->deployment, in->job, j->name, sizeof(j->name));
    snprintf(j->comment, sizeof(j->comment), "trainyard %.8s %s attempt %d", in->deployment,
             in->job, in->attempt);
    snprintf(j->gres, sizeof(j->gres), "%s", in->place->gres);
    snprintf(j->output, sizeof(j->output), "%s/%%x-%%j.out", in->workdir ? in->workdir : "/tmp");
    snprintf(attempt, sizeof(attempt), "%d", in->attempt);
    if (!(j->env = json_object())) {
        slurmjob_free(j);
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    bad |= json_object_set_new(j->env, "PATH", json_string("/usr/local/bin:/usr/bin:/bin"));
    bad |= json_object_set_new(j->env, "TY_LAUNCH_URL", json_string(in->launch_url));
    bad |= json_object_set_new(j->env, "TY_LAUNCH_TOKEN", json_string(in->token));
    bad |= json_object_set_new(j->env, "TY_LAUNCH_JOB", json_string(in->job));
    bad |= json_object_set_new(j->env, "TY_LAUNCH_ATTEMPT", json_string(attempt));
    if (in->node_docker_host)
        bad |=
            json_object_set_new(j->env, "TRAINYARD_DOCKER_HOST", json_string(in->node_docker_host));
    if (in->node_staging_dir)
        bad |= json_object_set_new(j->env, "TRAINYARD_LAUNCH_STAGING_DIR",
                                   json_string(in->node_staging_dir));
    if (bad) {
        slurmjob_free(j);
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    j->sub.name = j->name;
    j->sub.script = j->script;
    j->sub.partition = in->place->partition;
    j->sub.comment = j->comment;
    j->sub.cwd = in->workdir ? in->workdir : "/tmp";
    j->sub.stdout_path = j->output;
    j->sub.gres = j->gres[0] ? j->gres : NULL;
    j->sub.nodes = in->hosts;
    j->sub.tasks_per_node = 1;
    j->sub.exclusive = 1; /* one instance is one node */
    j->sub.time_limit_min =
        (int)((runtime + (in->stop_grace_s > 0 ? in->stop_grace_s : 0) + SLURMJOB_SLACK_S + 59) /
              60);
    j->sub.environment = j->env;
    return 0;
}

void slurmjob_free(struct slurmjob *j)
{
    free(j->script);
    json_decref(j->env);
    j->script = NULL;
    j->env = NULL;
}
