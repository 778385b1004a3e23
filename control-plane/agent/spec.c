/*
 * spec.c - reads a training job's document into a struct spec, checking every member it uses.
 * Unknown members are ignored; a missing optional member takes its AWS default.
 */
#include "spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copies the string member key of obj into out (size n). 0 when absent (out = ""), 1 when
   copied, -1 when present but not a string or too long. */
static int spec_str(json_t *obj, const char *key, char *out, size_t n)
{
    json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    const char *s;

    out[0] = '\0';
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return -1;
    s = json_string_value(v);
    if (strlen(s) >= n)
        return -1;
    memcpy(out, s, strlen(s) + 1);
    return 1;
}

/*
 * 0 when path is a plain absolute folder path a checkpoint folder may be bound at: '/'
 * followed by non-empty segments of [A-Za-z0-9._-], none "." or ".." (so no link trick, no bind
 * option separator), no trailing '/', and neither "/", "/opt", "/opt/ml" nor a path under
 * /proc, /sys or /dev. Under /opt/ml the agent creates it without following links (stage.h).
 */
static int spec_local_path_ok(const char *path)
{
    static const char *const refused[] = {"/opt", "/opt/ml"};
    static const char *const below[] = {"/proc", "/sys", "/dev"};
    const char *seg = path;

    if (path[0] != '/' || !path[1])
        return -1;
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        if (strcmp(path, refused[i]) == 0)
            return -1;
    }
    for (size_t i = 0; i < sizeof(below) / sizeof(below[0]); i++) {
        size_t l = strlen(below[i]);
        if (strncmp(path, below[i], l) == 0 && (path[l] == '\0' || path[l] == '/'))
            return -1;
    }
    while (*seg == '/') {
        size_t sl = 0;
        seg++;
        while (seg[sl] && seg[sl] != '/') {
            char c = seg[sl];
            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-'))
                return -1;
            sl++;
        }
        if (sl == 0 || (sl == 1 && seg[0] == '.') || (sl == 2 && seg[0] == '.' && seg[1] == '.'))
            return -1;
        seg += sl;
    }
    return *seg ? -1 : 0;
}

static void spec_strv_free(char **v)
{
    if (!v)
        return;
    for (char **p = v; *p; p++)
        free(*p);
    free(v);
}

/* new: NULL-terminated copy of a JSON array of strings, or NULL with *bad = 1. */
static char **spec_strv(json_t *arr, int *bad)
{
    size_t n, i;
    char **v;

    if (!json_is_array(arr) || json_array_size(arr) > SPEC_MAX_ARGS) {
        *bad = 1;
        return NULL;
    }
    n = json_array_size(arr);
    v = calloc(n + 1, sizeof(*v));
    if (!v) {
        *bad = 1;
        return NULL;
    }
    for (i = 0; i < n; i++) {
        json_t *e = json_array_get(arr, i);
        if (!json_is_string(e) || !(v[i] = strdup(json_string_value(e)))) {
            spec_strv_free(v);
            *bad = 1;
            return NULL;
        }
    }
    return v;
}

/* new: object string -> string copied from obj (NULL/absent -> {}); non-string scalar values
   are written as their JSON text, as the toolkit would read them. NULL when obj is not an
   object or a value is a container. */
static json_t *spec_strmap(json_t *obj)
{
    json_t *out = json_object();
    const char *k;
    json_t *v;

    if (!out)
        return NULL;
    if (!obj || json_is_null(obj))
        return out;
    if (!json_is_object(obj))
        goto fail;
    json_object_foreach(obj, k, v)
    {
        if (json_is_string(v)) {
            if (json_object_set_new(out, k, json_string(json_string_value(v))))
                goto fail;
        } else if (json_is_number(v) || json_is_boolean(v)) {
            char *t = json_dumps(v, JSON_ENCODE_ANY);
            int rc = t ? json_object_set_new(out, k, json_string(t)) : -1;
            free(t);
            if (rc)
                goto fail;
        } else {
            goto fail;
        }
    }
    return out;
fail:
    json_decref(out);
    return NULL;
}

void spec_cleanup(struct spec *sp)
{
    spec_strv_free(sp->entrypoint);
    spec_strv_free(sp->arguments);
    json_decref(sp->hyperparameters);
    json_decref(sp->environment);
    json_decref(sp->channels);
    json_decref(sp->metric_defs);
    memset(sp, 0, sizeof(*sp));
}

/* InstanceCount (1 when absent or out of 1..100) and VolumeSizeInGB (30, the SDK's default, when
   absent or out of 1..16384) of ResourceConfig rc. */
static void spec_counts(struct spec *sp, json_t *rc)
{
    json_t *v = json_object_get(rc, "InstanceCount");
    if (json_is_integer(v) && json_integer_value(v) >= 1 && json_integer_value(v) <= 100)
        sp->instance_count = (int)json_integer_value(v);
    v = json_object_get(rc, "VolumeSizeInGB");
    sp->volume_gb = 30;
    if (json_is_integer(v) && json_integer_value(v) >= 1 && json_integer_value(v) <= 16384)
        sp->volume_gb = (int)json_integer_value(v);
}

int spec_parse(json_t *doc, struct spec *sp, struct ty_err *err)
{
    json_t *alg, *rc, *sc, *odc, *v;
    int bad = 0;

    memset(sp, 0, sizeof(*sp));
    if (!json_is_object(doc))
        return ty_err_set(err, TY_EINVAL, NULL, "ClientError: the job document is not an object");
    if (spec_str(doc, "TrainingJobName", sp->name, sizeof(sp->name)) != 1 || !sp->name[0])
        return ty_err_set(err, TY_EINVAL, "TrainingJobName",
                          "ClientError: TrainingJobName is missing or invalid");
    if (spec_str(doc, "TrainingJobArn", sp->arn, sizeof(sp->arn)) < 0)
        return ty_err_set(err, TY_EINVAL, "TrainingJobArn",
                          "ClientError: TrainingJobArn is invalid");

    if (spec_str(doc, "RoleArn", sp->role_arn, sizeof(sp->role_arn)) < 0)
        return ty_err_set(err, TY_EINVAL, "RoleArn", "ClientError: RoleArn is invalid");

    alg = json_object_get(doc, "AlgorithmSpecification");
    if (!json_is_object(alg))
        return ty_err_set(err, TY_EINVAL, "AlgorithmSpecification",
                          "ClientError: AlgorithmSpecification is missing");
    if (spec_str(alg, "TrainingImage", sp->image, sizeof(sp->image)) != 1 || !sp->image[0])
        return ty_err_set(err, TY_EINVAL, "AlgorithmSpecification.TrainingImage",
                          "ClientError: AlgorithmSpecification.TrainingImage is missing or "
                          "invalid (algorithms by name are not supported)");
    if (spec_str(alg, "TrainingInputMode", sp->input_mode, sizeof(sp->input_mode)) < 0)
        return ty_err_set(err, TY_EINVAL, "AlgorithmSpecification.TrainingInputMode",
                          "ClientError: TrainingInputMode is invalid");
    if (!sp->input_mode[0])
        snprintf(sp->input_mode, sizeof(sp->input_mode), "File");

    v = json_object_get(alg, "ContainerEntrypoint");
    if (v && !json_is_null(v) && !(sp->entrypoint = spec_strv(v, &bad)))
        goto bad_args;
    v = json_object_get(alg, "ContainerArguments");
    if (v && !json_is_null(v) && !(sp->arguments = spec_strv(v, &bad)))
        goto bad_args;

    rc = json_object_get(doc, "ResourceConfig");
    sp->instance_count = 1;
    if (rc && !json_is_object(rc)) {
        spec_cleanup(sp);
        return ty_err_set(err, TY_EINVAL, "ResourceConfig",
                          "ClientError: ResourceConfig is invalid");
    }
    if (spec_str(rc, "InstanceType", sp->instance_type, sizeof(sp->instance_type)) < 0) {
        spec_cleanup(sp);
        return ty_err_set(err, TY_EINVAL, "ResourceConfig.InstanceType",
                          "ClientError: ResourceConfig.InstanceType is invalid");
    }
    spec_counts(sp, rc);

    sc = json_object_get(doc, "StoppingCondition");
    v = json_is_object(sc) ? json_object_get(sc, "MaxRuntimeInSeconds") : NULL;
    if (json_is_number(v) && json_number_value(v) >= 1)
        sp->max_runtime_s = (long)json_number_value(v);

    odc = json_object_get(doc, "OutputDataConfig");
    if (spec_str(odc, "S3OutputPath", sp->output_path, sizeof(sp->output_path)) < 0) {
        spec_cleanup(sp);
        return ty_err_set(err, TY_EINVAL, "OutputDataConfig.S3OutputPath",
                          "ClientError: OutputDataConfig.S3OutputPath is invalid");
    }
    v = json_object_get(odc, "CompressionType");
    if (v && !json_is_null(v)) {
        const char *ct = json_string_value(v);
        if (!ct || (strcmp(ct, "GZIP") != 0 && strcmp(ct, "NONE") != 0)) {
            spec_cleanup(sp);
            return ty_err_set(err, TY_EINVAL, "OutputDataConfig.CompressionType",
                              "ClientError: OutputDataConfig.CompressionType must be GZIP or NONE");
        }
        sp->output_uncompressed = strcmp(ct, "NONE") == 0;
    }
    v = json_object_get(doc, "CheckpointConfig");
    if (spec_str(v, "S3Uri", sp->checkpoint_uri, sizeof(sp->checkpoint_uri)) < 0 ||
        spec_str(v, "LocalPath", sp->checkpoint_local, sizeof(sp->checkpoint_local)) < 0 ||
        (sp->checkpoint_local[0] && spec_local_path_ok(sp->checkpoint_local) != 0)) {
        spec_cleanup(sp);
        return ty_err_set(err, TY_EINVAL, "CheckpointConfig",
                          "ClientError: CheckpointConfig.S3Uri or LocalPath is invalid (LocalPath "
                          "must be a plain absolute path: segments of letters, digits and "
                          "'._-', none '.' or '..', not /opt/ml itself nor under /proc, /sys or "
                          "/dev)");
    }
    if (!sp->checkpoint_local[0])
        snprintf(sp->checkpoint_local, sizeof(sp->checkpoint_local), "/opt/ml/checkpoints");
    v = json_object_get(doc, "ProfilerConfig");
    if (spec_str(v, "S3OutputPath", sp->profiler_uri, sizeof(sp->profiler_uri)) < 0) {
        spec_cleanup(sp);
        return ty_err_set(err, TY_EINVAL, "ProfilerConfig.S3OutputPath",
                          "ClientError: ProfilerConfig.S3OutputPath is invalid");
    }
    if (json_is_true(json_object_get(v, "DisableProfiler")))
        sp->profiler_uri[0] = '\0';
    else if (json_is_object(v) && !sp->profiler_uri[0])
        snprintf(sp->profiler_uri, sizeof(sp->profiler_uri), "%s", sp->output_path);
    sp->network_isolation = json_is_true(json_object_get(doc, "EnableNetworkIsolation"));

    if (!(sp->hyperparameters = spec_strmap(json_object_get(doc, "HyperParameters")))) {
        spec_cleanup(sp);
        return ty_err_set(err, TY_EINVAL, "HyperParameters",
                          "ClientError: HyperParameters must map strings to strings");
    }
    if (!(sp->environment = spec_strmap(json_object_get(doc, "Environment")))) {
        spec_cleanup(sp);
        return ty_err_set(err, TY_EINVAL, "Environment",
                          "ClientError: Environment must map strings to strings");
    }

    v = json_object_get(doc, "InputDataConfig");
    if (v && !json_is_null(v) && !json_is_array(v)) {
        spec_cleanup(sp);
        return ty_err_set(err, TY_EINVAL, "InputDataConfig",
                          "ClientError: InputDataConfig is invalid");
    }
    sp->channels = json_is_array(v) ? json_incref(v) : json_array();
    for (size_t i = 0; sp->channels && i < json_array_size(sp->channels); i++) {
        json_t *ch = json_array_get(sp->channels, i);
        json_t *cn = json_object_get(ch, "ChannelName");
        const char *s = json_string_value(cn);
        if (!s || !s[0] || strlen(s) > 64 || strchr(s, '/') || strcmp(s, ".") == 0 ||
            strcmp(s, "..") == 0) {
            spec_cleanup(sp);
            return ty_err_set(err, TY_EINVAL, "InputDataConfig",
                              "ClientError: InputDataConfig channel %zu has no valid ChannelName",
                              i + 1);
        }
    }

    /* Stored at the top level by the server; AlgorithmSpecification keeps them too. */
    v = json_object_get(doc, "MetricDefinitions");
    if (!json_is_array(v))
        v = json_object_get(alg, "MetricDefinitions");
    sp->metric_defs = json_is_array(v) ? json_incref(v) : json_array();
    if (!sp->channels || !sp->metric_defs) {
        spec_cleanup(sp);
        return ty_err_set(err, TY_EINVAL, NULL, "InternalServerError: out of memory");
    }
    return 0;

bad_args:
    spec_cleanup(sp);
    return ty_err_set(err, TY_EINVAL, "AlgorithmSpecification",
                      "ClientError: ContainerEntrypoint and ContainerArguments must be lists of "
                      "at most %d strings",
                      SPEC_MAX_ARGS);
}
